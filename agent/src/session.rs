//! Agent-scoped JSONL sessions under `$ZOT_HOME/sessions/agents/<name>/`.
//!
//! One JSON record a line: a `header` first, then `message` records and,
//! after each model response, a `usage` record (tokens, model). Each
//! record is written on its own, so a crash of zot loses at most the record
//! being written; a torn last line is skipped on load with a warning (and
//! cut off before appending), never fatal. Records reach the disk
//! (`fdatasync`) on a background thread, off the model loop's critical
//! path, and [`Session::sync`] waits for them (at the end of every turn
//! and when the session is closed): a power loss can cost at most the
//! records of the turn in progress.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::home::private_dir;
use crate::message::{Message, Usage};
use crate::RunError;

/// The session's file tree (an agent.toml package's Agent Files), inside
/// its side directory.
pub const FILES_DIR: &str = "files";

/// The side directory of the session file `path` (`<id>.d`).
pub fn side_dir(path: &Path) -> PathBuf {
    path.with_extension("d")
}

/// The file tree of the session file `path`: `<id>.d/files`.
pub fn files_dir(path: &Path) -> PathBuf {
    side_dir(path).join(FILES_DIR)
}

/// Which session to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// A new session in the agent's session dir.
    #[default]
    New,
    /// The most recent session in the agent's session dir (new when none).
    Continue,
    /// A session by id (or unique id prefix) in the agent's session dir.
    Resume(String),
    /// A session file at this path (created when missing).
    Path(PathBuf),
    /// Record nothing.
    Off,
}

/// One line of a session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Header {
        version: u32,
        id: String,
        agent: String,
        digest: String,
        workspace: PathBuf,
        created: u64,
        /// The session this one was forked from (`/session fork`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    Message {
        message: Message,
    },
    /// Tokens of one model response.
    Usage {
        turn: u32,
        provider: String,
        model: String,
        #[serde(flatten)]
        usage: Usage,
        /// Tokens the conversation held after this response (see
        /// [`crate::context`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_tokens: Option<u64>,
    },
    /// A compaction: the history became `summary` followed by its last
    /// `kept` messages; the `replaced` messages before them (still in the
    /// records above) are no longer sent.
    Compaction {
        turn: u32,
        /// `threshold`, `overflow` or `manual` (`/compact`).
        reason: String,
        /// The message put in their place (the summary).
        summary: Message,
        replaced: usize,
        kept: usize,
        /// Kept tool results longer than this many tokens were cut to it
        /// (head and tail).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept_cap: Option<u64>,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The whole output of a tool call whose result the model saw cut
    /// (head and tail), saved in the session's side directory.
    Output {
        turn: u32,
        tool_call_id: String,
        path: PathBuf,
        bytes: u64,
    },
    /// The user cancelled turn `turn` (Ctrl-C): what follows its last
    /// record was never produced. Tool calls it left without a result got
    /// `not run` results before this record.
    Cancelled {
        turn: u32,
    },
    /// What the filtering proxy decided for the network connections of one
    /// bash tool call (`permissions.net.allow`): its audit records.
    Network {
        turn: u32,
        tool_call_id: String,
        records: Vec<serde_json::Value>,
    },
}

/// An open session file.
pub struct Session {
    pub id: String,
    pub path: PathBuf,
    file: File,
    syncer: Syncer,
}

/// Syncs the session file to disk in the background after appends.
struct Syncer {
    tx: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn new(file: &File) -> Syncer {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let thread = file.try_clone().ok().and_then(|f| {
            std::thread::Builder::new()
                .name("zot-session-sync".into())
                .spawn(move || {
                    while rx.recv().is_ok() {
                        // Coalesce the appends made meanwhile into one sync.
                        while rx.try_recv().is_ok() {}
                        // A failure here is seen by the next Session::sync.
                        let _ = f.sync_data();
                    }
                })
                .ok()
        });
        Syncer {
            tx: thread.as_ref().map(|_| tx),
            thread,
        }
    }

    /// Ask for a background sync; false when there is no syncer thread.
    fn poke(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(()).is_ok())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.file.sync_data();
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What loading a session produced.
pub struct Loaded {
    pub session: Option<Session>,
    pub history: Vec<Message>,
    /// Tokens used by the session so far.
    pub usage: Usage,
    pub warnings: Vec<String>,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn new_id() -> String {
    let mut b = [0u8; 4];
    let _ = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    format!("{:012}-{}", now(), hex::encode(b))
}

fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Where the session `choice` names lives (`None`: no session), and notes
/// for the user. Creates nothing: a new session's file is made by [`open`].
pub fn plan(
    choice: &SessionChoice,
    dir: &Path,
) -> Result<(Option<PathBuf>, Vec<String>), RunError> {
    let mut warnings = Vec::new();
    let path = match choice {
        SessionChoice::Off => return Ok((None, warnings)),
        SessionChoice::New => None,
        SessionChoice::Continue => {
            let latest = list(dir).into_iter().last();
            if latest.is_none() {
                warnings.push("no earlier session of this agent, starting a new one".into());
            }
            latest
        }
        SessionChoice::Resume(id) => {
            if !id_ok(id) {
                return Err(RunError::session(format!("invalid session id {id:?}")));
            }
            let all = list(dir);
            let exact = dir.join(format!("{id}.jsonl"));
            if all.contains(&exact) {
                Some(exact)
            } else {
                let m: Vec<_> = all
                    .into_iter()
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(id.as_str()))
                    })
                    .collect();
                match m.len() {
                    1 => Some(m[0].clone()),
                    0 => {
                        return Err(RunError::session(format!(
                            "no session {id} in {}",
                            dir.display()
                        )))
                    }
                    _ => {
                        return Err(RunError::session(format!(
                            "session id prefix {id} is ambiguous"
                        )))
                    }
                }
            }
        }
        SessionChoice::Path(p) => Some(p.clone()),
    };
    let path = path.unwrap_or_else(|| dir.join(format!("{}.jsonl", new_id())));
    Ok((Some(path), warnings))
}

/// Open (or create) the session file `path` planned by [`plan`] (`None`:
/// record nothing). A new file in the agent's session dir `dir` makes that
/// directory first.
pub fn open(
    path: Option<&Path>,
    dir: &Path,
    agent: &str,
    digest: &str,
    workspace: &Path,
) -> Result<Loaded, RunError> {
    let mut warnings = Vec::new();
    let Some(path) = path.map(Path::to_path_buf) else {
        return Ok(Loaded {
            session: None,
            history: Vec::new(),
            usage: Usage::default(),
            warnings,
        });
    };
    if !path.exists() && path.parent() == Some(dir) {
        private_dir(dir).map_err(|e| RunError::io(format!("session dir {}", dir.display()), e))?;
    }
    if path.exists() {
        let (session, history, usage, w) = load_existing(&path, agent)?;
        warnings.extend(w);
        return Ok(Loaded {
            session: Some(session),
            history,
            usage,
            warnings,
        });
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(RunError::session(format!(
                "directory {} does not exist",
                parent.display()
            )));
        }
    }
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| RunError::io(format!("session {}", path.display()), e))?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let mut s = Session {
        id: id.clone(),
        path,
        syncer: Syncer::new(&file),
        file,
    };
    s.append(&Record::Header {
        version: 1,
        id,
        agent: agent.into(),
        digest: digest.into(),
        workspace: workspace.into(),
        created: now(),
        parent: None,
    })?;
    Ok(Loaded {
        session: Some(s),
        history: Vec::new(),
        usage: Usage::default(),
        warnings,
    })
}

/// Session files in `dir`, oldest first (by modification time, then name).
pub fn list(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| {
            (
                std::fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH),
                p,
            )
        })
        .collect();
    v.sort();
    v.into_iter().map(|x| x.1).collect()
}

type Existing = (Session, Vec<Message>, Usage, Vec<String>);

/// Load a session file of `agent`: its first record must be a header
/// naming that agent, or the file is refused (never appended to).
fn load_existing(path: &Path, agent: &str) -> Result<Existing, RunError> {
    let ioe = |e| RunError::io(format!("session {}", path.display()), e);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(ioe)?;
    let mut data = Vec::new();
    file.read_to_end(&mut data).map_err(ioe)?;
    let mut history = Vec::new();
    let mut usage = Usage::default();
    let mut warnings = Vec::new();
    let mut id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let mut good_end = 0usize;
    let mut pos = 0usize;
    let mut lineno = 0;
    let mut seen_header = false;
    while pos < data.len() {
        lineno += 1;
        let end = data[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| pos + i);
        let line = &data[pos..end.unwrap_or(data.len())];
        let next = end.map(|e| e + 1).unwrap_or(data.len());
        let is_last = next >= data.len();
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            pos = next;
            if end.is_some() {
                good_end = next;
            }
            continue;
        }
        let parsed = serde_json::from_slice::<Record>(line);
        if !seen_header {
            match &parsed {
                Ok(Record::Header { agent: owner, .. }) if owner == agent => seen_header = true,
                Ok(Record::Header { agent: owner, .. }) => {
                    return Err(RunError::session(format!(
                        "{} belongs to agent {owner:?}, not {agent:?}: refusing to use it",
                        path.display()
                    )))
                }
                _ => {
                    return Err(RunError::session(format!(
                        "{} does not start with a valid session header (line {lineno}): refusing to use it",
                        path.display()
                    )))
                }
            }
        }
        match parsed {
            Ok(_) if end.is_none() => {
                // Complete JSON without its newline: keep it, add the newline.
                let rec: Record = serde_json::from_slice(line).expect("parsed above");
                push(rec, &mut history, &mut usage, &mut id);
                file.seek(SeekFrom::End(0)).map_err(ioe)?;
                file.write_all(b"\n").map_err(ioe)?;
                good_end = data.len() + 1;
            }
            Ok(rec) => {
                push(rec, &mut history, &mut usage, &mut id);
                good_end = next;
            }
            Err(e) if is_last => {
                warnings.push(format!(
                    "session {}: skipped a torn last line ({lineno}: {e})",
                    path.display()
                ));
            }
            Err(e) => {
                return Err(RunError::Session {
                    what: format!("{} line {lineno} is corrupt", path.display()),
                    source: Some(e.into()),
                });
            }
        }
        pos = next;
    }
    if !seen_header {
        return Err(RunError::session(format!(
            "{} is empty, without a session header: refusing to use it",
            path.display()
        )));
    }
    if good_end < data.len() {
        file.set_len(good_end as u64).map_err(ioe)?;
    }
    drop(file);
    let file = OpenOptions::new().append(true).open(path).map_err(ioe)?;
    Ok((
        Session {
            id,
            path: path.to_path_buf(),
            syncer: Syncer::new(&file),
            file,
        },
        history,
        usage,
        warnings,
    ))
}

fn push(rec: Record, history: &mut Vec<Message>, usage: &mut Usage, id: &mut String) {
    match rec {
        Record::Header { id: i, .. } => *id = i,
        Record::Message { message } => history.push(message),
        Record::Usage { usage: u, .. } => *usage += u,
        Record::Compaction {
            summary,
            kept,
            kept_cap,
            ..
        } => {
            let from = history.len().saturating_sub(kept);
            history.drain(..from);
            if let Some(cap) = kept_cap {
                crate::context::cap_results(history, cap);
            }
            history.insert(0, summary);
        }
        Record::Cancelled { .. } | Record::Network { .. } | Record::Output { .. } => {}
    }
}

/// What `/sessions` and `/session tree` show of a session file.
#[derive(Debug, Clone)]
pub struct Summary {
    pub id: String,
    pub path: PathBuf,
    pub created: u64,
    /// Last modification (seconds since the epoch).
    pub modified: u64,
    pub parent: Option<String>,
    pub workspace: PathBuf,
    /// User messages in it.
    pub prompts: usize,
    /// The first user message, on one line.
    pub title: String,
}

/// Summaries of `agent`'s sessions in `dir`, oldest first. Files that are
/// not this agent's sessions are left out.
pub fn summaries(dir: &Path, agent: &str) -> Vec<Summary> {
    list(dir)
        .into_iter()
        .filter_map(|p| summary(&p, agent))
        .collect()
}

fn summary(path: &Path, agent: &str) -> Option<Summary> {
    let data = std::fs::read(path).ok()?;
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut lines = data.split(|&b| b == b'\n');
    let Ok(Record::Header {
        id,
        agent: owner,
        workspace,
        created,
        parent,
        ..
    }) = serde_json::from_slice::<Record>(lines.next()?)
    else {
        return None;
    };
    if owner != agent {
        return None;
    }
    let mut prompts = 0;
    let mut title = String::new();
    for line in lines {
        if let Ok(Record::Message {
            message: Message::User { content },
        }) = serde_json::from_slice::<Record>(line)
        {
            if prompts == 0 {
                title = content.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            prompts += 1;
        }
    }
    Some(Summary {
        id,
        path: path.to_path_buf(),
        created,
        modified,
        parent,
        workspace,
        prompts,
        title,
    })
}

impl Session {
    /// Start a new session in `dir` with a copy of this one's records (a
    /// fork: both go on separately from here). Its header names this one as
    /// its parent.
    pub fn fork(
        &mut self,
        dir: &Path,
        agent: &str,
        digest: &str,
        workspace: &Path,
    ) -> Result<Loaded, RunError> {
        self.sync()?;
        let data = std::fs::read(&self.path)
            .map_err(|e| RunError::io(format!("session {}", self.path.display()), e))?;
        let body = match data.iter().position(|&b| b == b'\n') {
            Some(i) => &data[i + 1..],
            None => &[][..],
        };
        private_dir(dir).map_err(|e| RunError::io(format!("session dir {}", dir.display()), e))?;
        let id = new_id();
        let path = dir.join(format!("{id}.jsonl"));
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| RunError::io(format!("session {}", path.display()), e))?;
        let mut head = serde_json::to_vec(&Record::Header {
            version: 1,
            id,
            agent: agent.into(),
            digest: digest.into(),
            workspace: workspace.into(),
            created: now(),
            parent: Some(self.id.clone()),
        })
        .expect("record serializes");
        head.push(b'\n');
        file.write_all(&head)
            .and_then(|_| file.write_all(body))
            .and_then(|_| file.sync_data())
            .map_err(|e| RunError::io(format!("session {}", path.display()), e))?;
        drop(file);
        let (session, history, usage, warnings) = load_existing(&path, agent)?;
        Ok(Loaded {
            session: Some(session),
            history,
            usage,
            warnings,
        })
    }

    /// Append one record (written to the file at once; synced to disk in
    /// the background).
    pub fn append(&mut self, rec: &Record) -> Result<(), RunError> {
        let mut line = serde_json::to_vec(rec).expect("record serializes");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.flush())
            .map_err(|e| RunError::io(format!("session {}", self.path.display()), e))?;
        if !self.syncer.poke() {
            return self.sync();
        }
        Ok(())
    }

    /// Wait until every record appended so far is on disk.
    pub fn sync(&mut self) -> Result<(), RunError> {
        self.file
            .sync_data()
            .map_err(|e| RunError::io(format!("session {}", self.path.display()), e))
    }

    /// Directory for this session's side files (full tool outputs).
    pub fn side_dir(&self) -> PathBuf {
        side_dir(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compaction_record_replaces_the_history_on_load() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let mut l = open(Some(&p), d.path(), "a", "sha256:x", d.path()).unwrap();
        let s = l.session.as_mut().unwrap();
        let user = |c: &str| Message::User { content: c.into() };
        for c in ["one", "two", "three", "four"] {
            s.append(&Record::Message { message: user(c) }).unwrap();
        }
        s.append(&Record::Compaction {
            turn: 1,
            reason: "manual".into(),
            summary: user("summary"),
            replaced: 3,
            kept: 1,
            kept_cap: None,
            tokens_before: 100,
            tokens_after: 10,
        })
        .unwrap();
        s.append(&Record::Message { message: user("five") }).unwrap();
        drop(l);
        let l = open(Some(&p), d.path(), "a", "sha256:x", d.path()).unwrap();
        assert_eq!(l.history, vec![user("summary"), user("four"), user("five")]);
    }

    fn open_choice(
        choice: &SessionChoice,
        dir: &Path,
        agent: &str,
        digest: &str,
        ws: &Path,
    ) -> Result<Loaded, RunError> {
        let (path, mut warnings) = plan(choice, dir)?;
        let mut l = open(path.as_deref(), dir, agent, digest, ws)?;
        warnings.append(&mut l.warnings);
        l.warnings = warnings;
        Ok(l)
    }

    #[test]
    fn continue_resume_torn() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("s");
        let mut l =
            open_choice(&SessionChoice::New, &dir, "a", "sha256:x", Path::new("/w")).unwrap();
        let s = l.session.as_mut().unwrap();
        s.append(&Record::Message {
            message: Message::User {
                content: "hi".into(),
            },
        })
        .unwrap();
        let id = s.id.clone();
        let path = s.path.clone();
        drop(l);
        let l = open_choice(&SessionChoice::Continue, &dir, "a", "", Path::new("/w")).unwrap();
        assert_eq!(l.history.len(), 1);
        assert_eq!(l.session.as_ref().unwrap().id, id);
        // Torn last line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"message","message":{"role":"user","cont"#)
            .unwrap();
        drop(f);
        let mut l = open_choice(
            &SessionChoice::Resume(id[..6].to_string()),
            &dir,
            "a",
            "",
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(l.history.len(), 1);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        l.session
            .as_mut()
            .unwrap()
            .append(&Record::Message {
                message: Message::User {
                    content: "again".into(),
                },
            })
            .unwrap();
        drop(l);
        let l = open_choice(
            &SessionChoice::Path(path.clone()),
            &dir,
            "a",
            "",
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(l.history.len(), 2);
        assert!(l.warnings.is_empty());
        // A corrupt middle line is an error.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("garbage\n{text}")).unwrap();
        assert!(open_choice(&SessionChoice::Path(path), &dir, "a", "", Path::new("/w")).is_err());
        assert!(open_choice(
            &SessionChoice::Resume("../x".into()),
            &dir,
            "a",
            "",
            Path::new("/w")
        )
        .is_err());
    }

    #[test]
    fn fork_copies_the_records_and_names_its_parent() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("s");
        let mut l =
            open_choice(&SessionChoice::New, &dir, "a", "sha256:x", Path::new("/w")).unwrap();
        let s = l.session.as_mut().unwrap();
        for rec in [
            Record::Message {
                message: Message::User {
                    content: "first  prompt\nwith lines".into(),
                },
            },
            Record::Usage {
                turn: 1,
                provider: "sim".into(),
                model: "sim".into(),
                usage: Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                    ..Default::default()
                },
                context_tokens: None,
            },
            Record::Cancelled { turn: 1 },
        ] {
            s.append(&rec).unwrap();
        }
        let parent = s.id.clone();
        let f = s.fork(&dir, "a", "sha256:x", Path::new("/w")).unwrap();
        let fork = f.session.as_ref().unwrap();
        assert_ne!(fork.id, parent);
        assert_eq!(f.history.len(), 1);
        assert_eq!(f.usage.input_tokens, 7);
        drop(f);
        drop(l);
        let all = summaries(&dir, "a");
        assert_eq!(all.len(), 2);
        let child = all.iter().find(|x| x.parent.is_some()).unwrap();
        assert_eq!(child.parent.as_deref(), Some(parent.as_str()));
        assert_eq!(child.prompts, 1);
        assert_eq!(child.title, "first prompt with lines");
        // Another agent's sessions are not listed.
        assert!(summaries(&dir, "b").is_empty());
    }

    #[test]
    fn a_session_must_start_with_the_agents_header() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("s");
        let l = open_choice(&SessionChoice::New, &dir, "a", "sha256:x", Path::new("/w")).unwrap();
        let path = l.session.as_ref().unwrap().path.clone();
        drop(l);
        let before = std::fs::read(&path).unwrap();
        let e = open_choice(
            &SessionChoice::Path(path.clone()),
            &dir,
            "b",
            "",
            Path::new("/w"),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("belongs to agent \"a\", not \"b\""), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "refused means untouched"
        );

        let cases: [(&str, &[u8], &str); 4] = [
            (
                "torn-header",
                br#"{"type":"header","version":1,"id":"x","ag"#,
                "valid session header",
            ),
            (
                "no-header",
                b"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
                "valid session header",
            ),
            ("not-json", b"hello\n", "valid session header"),
            ("empty", b"", "without a session header"),
        ];
        for (name, bytes, why) in cases {
            let p = d.path().join(format!("{name}.jsonl"));
            std::fs::write(&p, bytes).unwrap();
            let e = open_choice(
                &SessionChoice::Path(p.clone()),
                &dir,
                "a",
                "",
                Path::new("/w"),
            )
            .err()
            .unwrap_or_else(|| panic!("{name} accepted"))
            .to_string();
            assert!(e.contains(why), "{name}: {e}");
            assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name} was modified");
        }
    }
}
