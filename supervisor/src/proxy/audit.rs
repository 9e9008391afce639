//! The proxy's audit log: one JSON object per line for every decision
//! (a connection allowed, with the bytes it moved each way once it closed;
//! a request refused, with the reason), and the summary `zot sandbox
//! --report` prints.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// How the client reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// An absolute-URI request (`GET http://host/ HTTP/1.1`).
    Http,
    /// An HTTP `CONNECT host:port` tunnel.
    Connect,
    /// A SOCKS5 `CONNECT`.
    Socks5,
    /// Not recognised (malformed, SOCKS4, ...).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Deny,
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the request was decided (RFC 3339, UTC).
    pub time: String,
    pub proto: Proto,
    /// The host as requested, normalised (IDNA ASCII, lower-case); `None`
    /// when the request named none that parses.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// The address connected to (`ip:port`), once one was.
    pub address: Option<String>,
    pub decision: Decision,
    /// The allow rule that matched.
    pub rule: Option<String>,
    /// Why it was refused, or why an allowed connection failed.
    pub reason: Option<String>,
    /// Bytes sent from the sandbox to the destination.
    pub bytes_up: u64,
    /// Bytes sent from the destination to the sandbox.
    pub bytes_down: u64,
    /// From the decision to the end of the connection.
    pub duration_ms: u64,
}

pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Where records go: the log file (appended, one `write` per line) and a
/// queue the caller drains ([`super::Proxy::take_records`]).
pub(crate) struct Audit {
    file: Option<Mutex<File>>,
    queue: Mutex<Vec<AuditRecord>>,
    /// A write to the log failed: the proxy refuses everything after it.
    broken: AtomicBool,
}

impl Audit {
    pub(crate) fn new(file: Option<File>) -> Audit {
        Audit {
            file: file.map(Mutex::new),
            queue: Mutex::new(Vec::new()),
            broken: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    pub(crate) fn write(&self, rec: AuditRecord) {
        if let Some(f) = &self.file {
            let mut line = serde_json::to_vec(&rec).expect("audit record serializes");
            line.push(b'\n');
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            if f.write_all(&line).is_err() {
                self.broken.store(true, Ordering::Relaxed);
            }
        }
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rec);
    }

    pub(crate) fn take(&self) -> Vec<AuditRecord> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Why an audit log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading audit log {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("audit log {path}, line {line}: not an audit record")]
    Record {
        path: String,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// Read every record of a log (empty lines skipped).
pub fn read_log(path: &Path) -> Result<Vec<AuditRecord>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.display().to_string(),
        source,
    };
    let f = std::io::BufReader::new(File::open(path).map_err(io)?);
    let mut out = Vec::new();
    for (i, line) in f.lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line).map_err(|source| ReadError::Record {
                path: path.display().to_string(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(out)
}

/// The records of one destination and decision, added up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SummaryLine {
    /// `host:port` as requested (`?` when the request named no host).
    pub destination: String,
    pub decision: Decision,
    pub connections: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// The distinct rules that allowed it, or reasons it was refused.
    pub why: Vec<String>,
}

/// What a log says, per destination: allowed ones first, then refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub allowed: u64,
    pub denied: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub lines: Vec<SummaryLine>,
}

pub fn summarize(records: &[AuditRecord]) -> Summary {
    let mut by: BTreeMap<(Decision, String), SummaryLine> = BTreeMap::new();
    let mut s = Summary::default();
    for r in records {
        let destination = match (&r.host, r.port) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.clone(),
            _ => "?".to_string(),
        };
        match r.decision {
            Decision::Allow => s.allowed += 1,
            Decision::Deny => s.denied += 1,
        }
        s.bytes_up += r.bytes_up;
        s.bytes_down += r.bytes_down;
        let line = by
            .entry((r.decision, destination.clone()))
            .or_insert_with(|| SummaryLine {
                destination,
                decision: r.decision,
                connections: 0,
                bytes_up: 0,
                bytes_down: 0,
                why: Vec::new(),
            });
        line.connections += 1;
        line.bytes_up += r.bytes_up;
        line.bytes_down += r.bytes_down;
        let why = match r.decision {
            Decision::Allow => r.rule.clone(),
            Decision::Deny => r.reason.clone(),
        };
        if let Some(w) = why {
            if !line.why.contains(&w) {
                line.why.push(w);
            }
        }
    }
    s.lines = by.into_values().collect();
    s
}
