//! One running extension: its process (started by the supervisor inside
//! the agent's sandbox, see [`crate::deps::run_service`]), the thread that
//! turns its stdout into frames, the thread that writes frames to its
//! stdin, and the waits of the protocol (handshake, tool calls,
//! intercepts, shutdown).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::protocol::{self, Framer, FromExt};
use crate::deps::{self, SandboxPolicy, Service};
use crate::RunError;

/// How long the handshake may take (up to `ready`).
pub const READY_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a tool call may take.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an intercept may take.
pub const INTERCEPT_TIMEOUT: Duration = Duration::from_secs(5);
/// After `shutdown` and closing stdin: how long the extension has to exit
/// before TERM.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
/// Between TERM and KILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);
/// Bytes of stderr kept in an extension's log per run.
pub const LOG_CAP: u64 = 1 << 20;
/// Tools (and commands) one extension may register.
pub const MAX_REGISTERED: usize = 64;

/// What the reader thread passes on.
enum Incoming {
    Frame(FromExt),
    /// The stream is broken (oversized or malformed frame): the extension
    /// is ended.
    Broken(String),
    /// stdout closed: the process ended.
    Closed,
}

/// A tool an extension registered.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// A command an extension registered.
#[derive(Debug, Clone)]
pub struct CommandDef {
    pub name: String,
    pub description: String,
}

/// Something the extension sent without being asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Unasked {
    Notify { level: String, message: String },
    Submit(String),
}

/// How the extension is started.
pub struct Launch<'a> {
    /// The manifest's name.
    pub name: &'a str,
    pub argv: Vec<String>,
    pub policy: SandboxPolicy,
    pub backend: Option<&'a str>,
    /// Where its stderr goes (truncated at start).
    pub log: PathBuf,
    pub hello_ack: Value,
}

/// A running extension.
pub struct Host {
    pub name: String,
    pub tools: Vec<ToolDef>,
    pub commands: Vec<CommandDef>,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
    /// Problems with what it registered (shown as warnings).
    pub warnings: Vec<String>,
    out: Option<SyncSender<Vec<u8>>>,
    inbox: Receiver<Incoming>,
    service: Option<Service>,
    /// Why it stopped, once it has.
    pub dead: Option<String>,
    /// Its stop was reported to the user and the model.
    pub reported: bool,
    next_id: u64,
    pub unasked: Vec<Unasked>,
}

impl Host {
    /// Start the extension and run the handshake: `hello` (answered with
    /// `hello_ack`), registrations, `subscribe`, then `ready`, within
    /// [`READY_TIMEOUT`]. An error that is the sandbox's (no backend can
    /// confine it here) is [`RunError::Sandbox`]; any other failure is
    /// [`RunError::Usage`] carrying the reason.
    pub fn start(l: Launch<'_>) -> Result<Host, RunError> {
        // Bounded: an extension that writes faster than the run reads
        // waits (its stdout pipe fills), it does not grow zot's memory.
        let (tx_in, inbox) = mpsc::sync_channel::<Incoming>(64);
        let (tx_chunks, rx_chunks) = mpsc::sync_channel::<Vec<u8>>(16);
        let log = open_log(&l.log);
        let log = std::sync::Mutex::new((log, 0u64));
        let sink =
            zot_supervisor::OutputSink(std::sync::Arc::new(
                move |stream, bytes: &[u8]| match stream {
                    zot_supervisor::OutStream::Stdout => {
                        let _ = tx_chunks.send(bytes.to_vec());
                    }
                    zot_supervisor::OutStream::Stderr => {
                        if let Ok(mut g) = log.lock() {
                            let (f, n) = &mut *g;
                            if let Some(f) = f {
                                let room = LOG_CAP.saturating_sub(*n) as usize;
                                let take = bytes.len().min(room);
                                if take > 0 {
                                    let _ = f.write_all(&bytes[..take]);
                                }
                                *n += bytes.len() as u64;
                            }
                        }
                    }
                },
            ));
        // Frames from the chunks of stdout.
        let reader_tx = tx_in.clone();
        std::thread::Builder::new()
            .name("zot-ext-read".into())
            .spawn(move || {
                let mut framer = Framer::default();
                while let Ok(chunk) = rx_chunks.recv() {
                    match framer.push(&chunk) {
                        Ok(lines) => {
                            for line in lines {
                                match protocol::parse_frame(&line) {
                                    Ok(f) => {
                                        if reader_tx.send(Incoming::Frame(f)).is_err() {
                                            return;
                                        }
                                    }
                                    Err(e) => {
                                        let _ = reader_tx.send(Incoming::Broken(e));
                                        // Keep draining so the process never blocks.
                                        while rx_chunks.recv().is_ok() {}
                                        let _ = reader_tx.send(Incoming::Closed);
                                        return;
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            let _ = reader_tx.send(Incoming::Broken(e));
                            while rx_chunks.recv().is_ok() {}
                            let _ = reader_tx.send(Incoming::Closed);
                            return;
                        }
                    }
                }
                let _ = reader_tx.send(Incoming::Closed);
            })
            .map_err(|e| RunError::io("starting a thread", e))?;
        let service = deps::run_service(&l.policy, &l.argv, l.backend, sink, KILL_GRACE)?;
        // Frames to stdin, written by a thread of their own: a stuck
        // extension never blocks the run.
        let (out_tx, out_rx) = mpsc::sync_channel::<Vec<u8>>(256);
        let mut stdin = service
            .stdin
            .try_clone()
            .map_err(|e| RunError::io("stdin pipe", e))?;
        std::thread::Builder::new()
            .name("zot-ext-write".into())
            .spawn(move || {
                while let Ok(b) = out_rx.recv() {
                    if stdin.write_all(&b).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| RunError::io("starting a thread", e))?;
        let mut h = Host {
            name: l.name.to_string(),
            tools: Vec::new(),
            commands: Vec::new(),
            events: Vec::new(),
            intercepts: Vec::new(),
            warnings: Vec::new(),
            out: Some(out_tx),
            inbox,
            service: Some(service),
            dead: None,
            reported: false,
            next_id: 0,
            unasked: Vec::new(),
        };
        // Our copy of the write end: only the writer thread's stays.
        if let Some(s) = &mut h.service {
            let devnull =
                std::fs::File::open("/dev/null").map_err(|e| RunError::io("/dev/null", e))?;
            s.stdin = devnull;
        }
        drop(tx_in);
        match h.handshake(&l.hello_ack) {
            Ok(()) => Ok(h),
            Err(why) => {
                let log = l.log.display();
                match h.stop_outcome() {
                    // Not confined here: the caller refuses the agent.
                    Some(Err(e @ RunError::Sandbox(_))) => Err(e),
                    Some(Err(e)) => Err(RunError::Usage(format!(
                        "{why} ({})",
                        crate::ui::error_chain(&e)
                    ))),
                    Some(Ok(o)) if !o.cancelled => Err(RunError::Usage(format!(
                        "{why} (exit code {}; its stderr is in {log})",
                        o.exit_code
                    ))),
                    _ => Err(RunError::Usage(format!("{why} (its stderr is in {log})"))),
                }
            }
        }
    }

    fn send(&mut self, v: &Value) {
        let b = protocol::line(v);
        if b.len() > protocol::MAX_FRAME + 1 {
            return;
        }
        if let Some(tx) = &self.out {
            if tx.try_send(b).is_err() {
                self.fail("it does not read its input (its queue is full)".into());
            }
        }
    }

    fn handshake(&mut self, ack: &Value) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut hello = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = match self.inbox.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("no `ready` within {} s", READY_TIMEOUT.as_secs()))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("it exited during the handshake".into())
                }
            };
            let f = match m {
                Incoming::Frame(f) => f,
                Incoming::Broken(e) => return Err(e),
                Incoming::Closed => return Err("it exited during the handshake".into()),
            };
            if !hello {
                match f {
                    FromExt::Hello { .. } => {
                        hello = true;
                        self.send(ack);
                        continue;
                    }
                    other => {
                        return Err(format!(
                            "its first frame must be `hello`, got `{}`",
                            other.kind()
                        ))
                    }
                }
            }
            match f {
                FromExt::Ready => return Ok(()),
                FromExt::RegisterTool {
                    name,
                    description,
                    schema,
                } => self.register_tool(name, description, schema),
                FromExt::RegisterCommand { name, description } => {
                    if !zot_policy::zotfile::extension::valid_name(&name) {
                        self.warnings
                            .push(format!("command {name:?} ignored: not a valid name"));
                    } else if self.commands.len() >= MAX_REGISTERED {
                        self.warnings.push(format!(
                            "command {name:?} ignored: more than {MAX_REGISTERED} commands"
                        ));
                    } else if !self.commands.iter().any(|c| c.name == name) {
                        self.commands.push(CommandDef { name, description });
                    }
                }
                FromExt::Subscribe { events, intercept } => {
                    for e in events.iter().chain(&intercept) {
                        if !protocol::EVENTS.contains(&e.as_str()) {
                            self.warnings.push(format!("unknown event {e:?} ignored"));
                        }
                    }
                    self.events = events
                        .into_iter()
                        .filter(|e| protocol::EVENTS.contains(&e.as_str()))
                        .collect();
                    self.intercepts = intercept
                        .into_iter()
                        .filter(|e| protocol::EVENTS.contains(&e.as_str()))
                        .collect();
                }
                FromExt::Notify { level, message } => self.unasked.push(Unasked::Notify {
                    level: level.unwrap_or_else(|| "info".into()),
                    message,
                }),
                FromExt::Submit { text } => self.unasked.push(Unasked::Submit(text)),
                other => {
                    return Err(format!(
                        "unexpected `{}` frame during the handshake",
                        other.kind()
                    ))
                }
            }
        }
    }

    fn register_tool(&mut self, name: String, description: String, schema: Option<Value>) {
        // What the providers accept as a function name.
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            self.warnings.push(format!(
                "tool {name:?} ignored: a tool name is 1 to 64 of A-Z a-z 0-9 _ -"
            ));
            return;
        }
        if self.tools.len() >= MAX_REGISTERED {
            self.warnings.push(format!(
                "tool {name:?} ignored: more than {MAX_REGISTERED} tools"
            ));
            return;
        }
        let schema = match schema {
            // Providers want an object schema: `type` defaults to it.
            Some(Value::Object(mut m)) => {
                match m.get("type") {
                    None => {
                        m.insert("type".into(), json!("object"));
                    }
                    Some(t) if t == "object" => {}
                    Some(_) => {
                        self.warnings.push(format!(
                            "tool {name:?} ignored: its schema's type is not \"object\""
                        ));
                        return;
                    }
                }
                Value::Object(m)
            }
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(_) => {
                self.warnings.push(format!(
                    "tool {name:?} ignored: its schema is not an object"
                ));
                return;
            }
        };
        if self.tools.iter().any(|t| t.name == name) {
            return;
        }
        self.tools.push(ToolDef {
            name,
            description,
            schema,
        });
    }

    /// Mark it dead (once) and stop it.
    fn fail(&mut self, why: String) {
        if self.dead.is_none() {
            self.dead = Some(why);
        }
        self.out = None;
        if let Some(s) = &self.service {
            s.cancel.cancel();
        }
    }

    /// Stop it at once (TERM, KILL after the grace) and return the
    /// supervisor's error, if starting it failed.
    fn stop_now(&mut self) -> Option<RunError> {
        match self.stop_outcome()? {
            Err(e) => Some(e),
            Ok(_) => None,
        }
    }

    /// Stop it at once (TERM, KILL after the grace): its outcome.
    fn stop_outcome(&mut self) -> Option<Result<zot_supervisor::RunOutcome, RunError>> {
        self.out = None;
        let s = self.service.take()?;
        s.cancel.cancel();
        // What it still writes is read (and dropped) until it is gone: the
        // supervisor's output threads must never wait on a full queue.
        while !s.done.is_finished() {
            let _ = self.inbox.recv_timeout(Duration::from_millis(20));
        }
        s.done.join().ok()
    }

    /// The exit of a process that ended: its code, or the supervisor's
    /// error.
    fn exit_reason(&mut self) -> String {
        let Some(s) = self.service.take() else {
            return "it stopped".into();
        };
        // stdout closed: the process is gone or going.
        let deadline = Instant::now() + Duration::from_millis(1500);
        while !s.done.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !s.done.is_finished() {
            s.cancel.cancel();
        }
        match s.done.join() {
            Ok(Ok(o)) if o.exit_code > 128 && o.exit_code < 160 => {
                format!("it was killed by signal {}", o.exit_code - 128)
            }
            Ok(Ok(o)) => format!("it exited with code {}", o.exit_code),
            Ok(Err(e)) => format!("it could not run: {}", crate::ui::error_chain(&e)),
            Err(_) => "it stopped".into(),
        }
    }

    /// Handle a frame that came while not waiting for it.
    fn take(&mut self, m: Incoming) {
        match m {
            Incoming::Frame(FromExt::Notify { level, message }) => {
                self.unasked.push(Unasked::Notify {
                    level: level.unwrap_or_else(|| "info".into()),
                    message,
                })
            }
            Incoming::Frame(FromExt::Submit { text }) => self.unasked.push(Unasked::Submit(text)),
            Incoming::Frame(FromExt::RegisterTool { .. } | FromExt::RegisterCommand { .. }) => {
                self.warnings.push(
                    "registrations after `ready` are ignored (restart the run to load them)".into(),
                )
            }
            // Late replies (after a timeout) and acks are dropped.
            Incoming::Frame(_) => {}
            Incoming::Broken(e) => {
                self.fail(e);
                let _ = self.stop_now();
            }
            Incoming::Closed => {
                let why = self.exit_reason();
                self.out = None;
                if self.dead.is_none() {
                    self.dead = Some(why);
                }
            }
        }
    }

    /// Take what arrived without blocking. Returns true when it is alive.
    pub fn poll(&mut self) -> bool {
        while self.dead.is_none() {
            match self.inbox.try_recv() {
                Ok(m) => self.take(m),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.take(Incoming::Closed);
                }
            }
        }
        self.dead.is_none()
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    /// Send a request and wait up to `timeout` for the reply `pick`
    /// recognises; `cancel` stops the wait. `Err` says why there is none.
    fn request<T>(
        &mut self,
        frame: Value,
        timeout: Duration,
        cancel: Option<&zot_supervisor::Cancel>,
        mut pick: impl FnMut(&FromExt) -> Option<T>,
    ) -> Result<T, Wait> {
        if !self.poll() {
            return Err(Wait::Dead);
        }
        self.send(&frame);
        let deadline = Instant::now() + timeout;
        loop {
            if self.dead.is_some() {
                return Err(Wait::Dead);
            }
            if cancel.is_some_and(|c| c.is_cancelled()) {
                return Err(Wait::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Wait::Timeout);
            }
            match self
                .inbox
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(Incoming::Frame(f)) => match pick(&f) {
                    Some(t) => return Ok(t),
                    None => self.take(Incoming::Frame(f)),
                },
                Ok(m) => self.take(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.take(Incoming::Closed),
            }
        }
    }

    /// `tool_call`: the result's text and error flag.
    pub fn call_tool(
        &mut self,
        name: &str,
        args: &Value,
        cancel: Option<&zot_supervisor::Cancel>,
    ) -> Result<(String, bool), Wait> {
        let id = self.id("t");
        let frame = json!({"type": "tool_call", "id": id, "name": name, "args": args});
        self.request(frame, TOOL_TIMEOUT, cancel, |f| match f {
            FromExt::ToolResult {
                id: rid,
                content,
                is_error,
            } if *rid == id => Some((protocol::content_text(content), *is_error)),
            _ => None,
        })
    }

    /// `event_intercept`: the extension's answer.
    pub fn intercept(&mut self, event: &str, payload: &Value) -> Result<Intercept, Wait> {
        let id = self.id("i");
        let mut frame = json!({"type": "event_intercept", "id": id, "event": event});
        merge(&mut frame, payload);
        self.request(frame, INTERCEPT_TIMEOUT, None, |f| match f {
            FromExt::EventInterceptResponse {
                id: rid,
                block,
                reason,
                modified_args,
                replace_text,
            } if *rid == id => Some(Intercept {
                block: *block,
                reason: reason.clone(),
                modified_args: modified_args.clone(),
                replace_text: replace_text.clone(),
            }),
            _ => None,
        })
    }

    /// `command_invoked`: the response's action and text.
    pub fn invoke(&mut self, name: &str, args: &str) -> Result<CommandReply, Wait> {
        let id = self.id("c");
        let frame = json!({"type": "command_invoked", "id": id, "name": name, "args": args});
        self.request(frame, TOOL_TIMEOUT, None, |f| match f {
            FromExt::CommandResponse {
                id: rid,
                action,
                text,
                message,
            } if *rid == id => Some(CommandReply {
                action: action.clone().unwrap_or_default(),
                text: text.clone().or_else(|| message.clone()),
            }),
            _ => None,
        })
    }

    /// `event`, without waiting.
    pub fn event(&mut self, event: &str, payload: &Value) {
        if !self.poll() {
            return;
        }
        let mut frame = json!({"type": "event", "event": event});
        merge(&mut frame, payload);
        self.send(&frame);
    }

    /// The shutdown sequence: `shutdown`, stdin closed, up to
    /// [`SHUTDOWN_WAIT`] for it to exit, then TERM, KILL after
    /// [`KILL_GRACE`].
    pub fn shutdown(&mut self) {
        if self.dead.is_none() {
            self.send(&json!({"type": "shutdown"}));
        }
        self.out = None; // the writer thread ends: stdin is closed
        let Some(s) = self.service.take() else {
            return;
        };
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while !s.done.is_finished() && Instant::now() < deadline {
            // shutdown_ack and late frames are dropped.
            let _ = self.inbox.recv_timeout(Duration::from_millis(20));
        }
        if !s.done.is_finished() {
            s.cancel.cancel();
        }
        while !s.done.is_finished() {
            let _ = self.inbox.recv_timeout(Duration::from_millis(20));
        }
        let _ = s.done.join();
        if self.dead.is_none() {
            self.dead = Some("it was shut down".into());
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.service.is_some() {
            self.shutdown();
        }
    }
}

/// Why a request has no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Dead,
    Timeout,
    Cancelled,
}

/// An `event_intercept_response`.
#[derive(Debug, Clone, Default)]
pub struct Intercept {
    pub block: bool,
    pub reason: Option<String>,
    pub modified_args: Option<Value>,
    pub replace_text: Option<String>,
}

/// A `command_response`.
#[derive(Debug, Clone)]
pub struct CommandReply {
    pub action: String,
    pub text: Option<String>,
}

fn merge(frame: &mut Value, payload: &Value) {
    if let (Value::Object(f), Value::Object(p)) = (frame, payload) {
        for (k, v) in p {
            f.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

fn open_log(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        crate::home::private_dir(dir).ok()?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host without a process: what it sends, and a feed of what it
    /// receives.
    fn fake() -> (Host, Receiver<Vec<u8>>, mpsc::Sender<Incoming>) {
        let (tx, inbox) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::sync_channel(16);
        let h = Host {
            name: "fake".into(),
            tools: Vec::new(),
            commands: Vec::new(),
            events: Vec::new(),
            intercepts: Vec::new(),
            warnings: Vec::new(),
            out: Some(out_tx),
            inbox,
            service: None,
            dead: None,
            reported: false,
            next_id: 0,
            unasked: Vec::new(),
        };
        (h, out_rx, tx)
    }

    fn frame(s: &str) -> Incoming {
        Incoming::Frame(protocol::parse_frame(s.as_bytes()).unwrap())
    }

    #[test]
    fn a_request_waits_for_its_own_reply() {
        let (mut h, out, feed) = fake();
        let t = std::thread::spawn(move || {
            let sent: Value = serde_json::from_slice(&out.recv().unwrap()).unwrap();
            assert_eq!(sent["type"], "tool_call");
            let id = sent["id"].as_str().unwrap().to_string();
            feed.send(frame(r#"{"type":"notify","level":"warn","message":"m"}"#))
                .unwrap();
            // A late reply to an earlier call is dropped.
            feed.send(frame(
                r#"{"type":"tool_result","id":"t0","content":[{"type":"text","text":"old"}]}"#,
            ))
            .unwrap();
            feed.send(frame(&format!(
                r#"{{"type":"tool_result","id":"{id}","content":[{{"type":"text","text":"new"}}],"is_error":true}}"#
            )))
            .unwrap();
            (feed, out)
        });
        let r = h.call_tool("x", &json!({}), None);
        assert_eq!(r, Ok(("new".to_string(), true)));
        assert_eq!(
            h.unasked,
            vec![Unasked::Notify {
                level: "warn".into(),
                message: "m".into()
            }]
        );
        let (feed, _out) = t.join().unwrap();
        // No reply in time: a timeout, the extension stays.
        let r = h.request(
            json!({"type": "tool_call", "id": "t9"}),
            Duration::from_millis(150),
            None,
            |_| Some(()),
        );
        assert_eq!(r, Err(Wait::Timeout));
        assert!(h.dead.is_none());
        // A broken stream ends it with the reason.
        feed.send(Incoming::Broken("frame larger than 4 MiB".into()))
            .unwrap();
        let r = h.call_tool("x", &json!({}), None);
        assert_eq!(r, Err(Wait::Dead));
        assert_eq!(h.dead.as_deref(), Some("frame larger than 4 MiB"));
    }

    #[test]
    fn a_closed_stream_is_a_stopped_extension() {
        let (mut h, _out, feed) = fake();
        feed.send(Incoming::Closed).unwrap();
        assert!(!h.poll());
        assert!(h.dead.is_some());
        assert_eq!(
            h.intercept("tool_call", &json!({})).unwrap_err(),
            Wait::Dead
        );
    }
}
