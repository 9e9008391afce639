//! Bundled extensions (`extensions/<dir>/extension.json`): programs of the
//! agent that add tools and commands and watch or intercept the run, over
//! the zot extension protocol ([`protocol`]).
//!
//! Each runs inside the agent's own sandbox: the policy its bash commands
//! get (filesystem scopes, deny list, network rules and proxy, seccomp,
//! resource limits), with the extension's directory readable as its
//! working directory and a private writable data directory
//! (`<agent data>/extensions/<name>`) added, and an environment cleared
//! to `HOME` (the sandbox's), `PATH`, `LANG`, `TERM`, `TZ`, `TMPDIR` plus
//! the manifest's `env.read`. A host that cannot enforce that policy
//! refuses the agent (the same rule as for bash); nothing is ever started
//! unconfined. What an extension asks for goes through the model's checks:
//! a rewritten tool call is checked (scopes, risk gate) after the rewrite,
//! a `submit` is a user turn, and its text is shown sanitised.

pub mod host;
pub mod protocol;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::deps::{LoadedAgent, SandboxPolicy};
use crate::message::ToolCall;
use crate::tools::{self, ToolOutput, ToolSpec};
use crate::RunError;
pub use host::{Host, Unasked};
pub use zot_package::BundledExtension;

/// Environment variables an extension keeps (besides `env.read`; `HOME`
/// and `TMPDIR` are set by the sandbox).
pub const ENV_KEEP: &[&str] = &["PATH", "LANG", "TERM", "TZ"];

/// The agent's bundled extensions (checked manifests), with warnings.
pub fn bundled(agent: &LoadedAgent) -> Result<(Vec<BundledExtension>, Vec<String>), RunError> {
    let Some(pkg) = &agent._package else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut warnings = Vec::new();
    let v = pkg.extensions(&mut warnings).map_err(RunError::Package)?;
    Ok((v, warnings))
}

/// Lines for the consent prompt and `inspect`: one per extension.
pub fn describe(exts: &[BundledExtension]) -> Vec<String> {
    exts.iter()
        .map(|e| {
            let m = &e.manifest;
            let mut s = format!("{} (extensions/{}): {}", m.name, e.dir, m.exec);
            for a in &m.args {
                s.push(' ');
                s.push_str(a);
            }
            if !m.enabled {
                s.push_str(" [disabled]");
            }
            if let Some(d) = m.description.as_deref().filter(|d| !d.is_empty()) {
                s.push_str(" - ");
                s.push_str(d);
            }
            s
        })
        .collect()
}

/// The private data directory of extension `name`.
pub fn data_dir(agent_data: &Path, name: &str) -> PathBuf {
    agent_data.join("extensions").join(name)
}

/// Make (or check) the private data directory of extension `name` under
/// `agent_data` (canonical) and return it. Refused when it, or
/// `extensions/`, is anything but a real directory there: the agent's own
/// commands may write in its data dir, and a symlink planted there must not
/// become a writable root of the extension's sandbox.
pub fn make_data_dir(agent_data: &Path, name: &str) -> Result<PathBuf, RunError> {
    let base = agent_data.join("extensions");
    let dir = base.join(name);
    for p in [&base, &dir] {
        if let Ok(m) = std::fs::symlink_metadata(p) {
            if !m.is_dir() {
                return Err(RunError::unenforced(format!(
                    "extension {name}: its data dir {} is not a directory (a symlink or a file there is refused)",
                    p.display()
                )));
            }
        }
    }
    crate::home::private_dir(&dir)
        .map_err(|err| RunError::io(format!("extension data dir {}", dir.display()), err))?;
    let real = dir
        .canonicalize()
        .map_err(|err| RunError::io(format!("extension data dir {}", dir.display()), err))?;
    if real != dir {
        return Err(RunError::unenforced(format!(
            "extension {name}: its data dir {} leads to {}: refused",
            dir.display(),
            real.display()
        )));
    }
    Ok(real)
}

/// The policy extension `dir` (canonical) runs under: the agent's, plus
/// `dir` readable (its working directory) and `data` writable, and the
/// environment cut down to [`ENV_KEEP`] and `env_read`.
pub fn policy(base: &SandboxPolicy, dir: &Path, data: &Path, env_read: &[String]) -> SandboxPolicy {
    let mut p = base.clone();
    p.cwd = dir.to_path_buf();
    if let zot_policy::sandbox::ReadScope::Restricted { paths } = &mut p.read {
        if !paths.iter().any(|r| dir.starts_with(r)) {
            paths.push(dir.to_path_buf());
        }
    }
    if !p.write_roots.iter().any(|r| data.starts_with(r)) {
        p.write_roots.push(data.to_path_buf());
        p.write_roots.sort_by_key(|r| r.components().count());
    }
    p.env
        .keep
        .retain(|k| ENV_KEEP.contains(&k.as_str()) || env_read.contains(k));
    p
}

/// `argv` of an extension: `exec` resolved (relative to its directory
/// when it has a slash, through the sandbox's `PATH` when bare), then
/// `args`.
pub fn argv(
    dir: &Path,
    m: &zot_policy::zotfile::extension::ExtensionManifest,
) -> Result<Vec<String>, String> {
    use zot_policy::zotfile::extension::ExecKind;
    let exec = match m.exec_kind() {
        ExecKind::Path(n) | ExecKind::Absolute(n) => n.to_string(),
        ExecKind::Relative(r) => {
            let p = dir.join(r);
            let real = p.canonicalize().map_err(|e| format!("exec {r:?}: {e}"))?;
            if !real.starts_with(dir) {
                return Err(format!(
                    "exec {r:?}: leads outside the extension's directory"
                ));
            }
            real.to_string_lossy().into_owned()
        }
    };
    let mut v = vec![exec];
    v.extend(m.args.iter().cloned());
    Ok(v)
}

/// `/NAME ARGS` as an extension command's name and arguments (names of
/// the built-in commands are never extension commands).
pub fn command_line(line: &str) -> Option<(&str, &str)> {
    let body = line.trim().strip_prefix('/')?;
    let (name, args) = match body.find(char::is_whitespace) {
        Some(i) => (&body[..i], body[i..].trim()),
        None => (body, ""),
    };
    let builtin = crate::commands::COMMANDS
        .iter()
        .any(|(c, _, _)| c.strip_prefix('/') == Some(name))
        || name == "quit";
    (zot_policy::zotfile::extension::valid_name(name) && !builtin).then_some((name, args))
}

/// What the runtime passes when it starts the extensions.
pub struct Context<'a> {
    pub agent_root: &'a Path,
    /// The agent's data dir (canonical).
    pub agent_data: &'a Path,
    /// Where stderr logs go.
    pub log_dir: PathBuf,
    pub policy: &'a SandboxPolicy,
    pub env_read: &'a [String],
    pub backend: Option<&'a str>,
    pub provider: &'a str,
    pub model: &'a str,
    pub workspace: &'a Path,
}

/// The running extensions of a run.
#[derive(Default)]
pub struct Extensions {
    hosts: Vec<Host>,
    /// Built-in tool names: an extension tool of the same name is ignored.
    builtin: Vec<&'static str>,
    /// The definitions of the extensions' tools, made once: `(host, spec)`.
    specs: Vec<(usize, ToolSpec)>,
    /// What the model must be told (an extension that stopped).
    pub notices: Vec<String>,
    /// What the user must be shown (warnings, notifications), in order.
    pub messages: Vec<(bool, String)>,
    /// Text extensions submitted, to run as user turns.
    pub submits: Vec<String>,
}

impl Extensions {
    /// Start every enabled extension of `list`, in order. A host that
    /// cannot confine one is an error (the agent is refused); an extension
    /// that fails its handshake is left out with a warning.
    pub fn start(list: &[BundledExtension], cx: &Context<'_>) -> Result<Extensions, RunError> {
        let mut me = Extensions::default();
        me.builtin = tools::NAMES.to_vec();
        for e in list {
            let m = &e.manifest;
            if !m.enabled {
                continue;
            }
            let dir = cx.agent_root.join("extensions").join(&e.dir);
            let dir = dir
                .canonicalize()
                .map_err(|err| RunError::io(format!("extension {}", dir.display()), err))?;
            let argv = match argv(&dir, m) {
                Ok(a) => a,
                Err(why) => {
                    me.messages
                        .push((true, format!("extension {}: not started: {why}", m.name)));
                    continue;
                }
            };
            let data = make_data_dir(cx.agent_data, &m.name)?;
            let pol = policy(cx.policy, &dir, &data, cx.env_read);
            let ack = protocol::HelloAck {
                zot_version: crate::ZOT_VERSION,
                provider: cx.provider,
                model: cx.model,
                cwd: &cx.workspace.to_string_lossy(),
                extension_dir: &dir.to_string_lossy(),
                data_dir: &data.to_string_lossy(),
            }
            .frame();
            let started = Host::start(host::Launch {
                name: &m.name,
                argv,
                policy: pol,
                backend: cx.backend,
                log: cx.log_dir.join(format!("{}.log", m.name)),
                hello_ack: ack,
            });
            let mut h = match started {
                Ok(h) => h,
                Err(e @ RunError::Sandbox(_)) => {
                    return Err(RunError::Unenforced {
                        what: format!("extension {} cannot be confined here", m.name),
                        source: Some(Box::new(e)),
                    })
                }
                Err(RunError::Usage(why)) => {
                    me.messages
                        .push((true, format!("extension {}: not started: {why}", m.name)));
                    continue;
                }
                Err(e) => return Err(e),
            };
            for w in std::mem::take(&mut h.warnings) {
                me.messages
                    .push((true, format!("extension {}: {w}", m.name)));
            }
            me.hosts.push(h);
        }
        // Tools: built-ins shadow extension tools; the first extension to
        // register a name keeps it.
        let mut seen: Vec<String> = Vec::new();
        for h in &mut me.hosts {
            let mut keep = Vec::new();
            for t in std::mem::take(&mut h.tools) {
                if me.builtin.contains(&t.name.as_str()) {
                    me.messages.push((
                        true,
                        format!(
                            "extension {}: tool `{}` is shadowed by the built-in tool",
                            h.name, t.name
                        ),
                    ));
                } else if seen.contains(&t.name) {
                    me.messages.push((
                        true,
                        format!(
                            "extension {}: tool `{}` is already registered by another extension",
                            h.name, t.name
                        ),
                    ));
                } else {
                    seen.push(t.name.clone());
                    keep.push(t);
                }
            }
            h.tools = keep;
        }
        let mut specs = Vec::new();
        for (i, h) in me.hosts.iter().enumerate() {
            for t in &h.tools {
                specs.push((
                    i,
                    ToolSpec {
                        name: leak(&t.name),
                        description: leak(&t.description),
                        parameters: t.schema.clone(),
                    },
                ));
            }
        }
        me.specs = specs;
        me.collect();
        Ok(me)
    }

    /// Names of the running extensions.
    pub fn names(&self) -> Vec<String> {
        self.hosts
            .iter()
            .filter(|h| h.dead.is_none())
            .map(|h| h.name.clone())
            .collect()
    }

    /// The tool definitions of the live extensions, to offer the model
    /// (their strings are made `'static` once per registration: a bounded
    /// number per run).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.specs
            .iter()
            .filter(|(i, _)| self.hosts[*i].dead.is_none())
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// Tool names offered by live extensions.
    pub fn tool_names(&self) -> Vec<String> {
        self.hosts
            .iter()
            .filter(|h| h.dead.is_none())
            .flat_map(|h| h.tools.iter().map(|t| t.name.clone()))
            .collect()
    }

    /// Commands of live extensions: `(name, description, extension)`.
    pub fn commands(&self) -> Vec<(String, String, String)> {
        self.hosts
            .iter()
            .filter(|h| h.dead.is_none())
            .flat_map(|h| {
                h.commands
                    .iter()
                    .map(|c| (c.name.clone(), c.description.clone(), h.name.clone()))
            })
            .collect()
    }

    fn owner(&self, tool: &str) -> Option<usize> {
        self.hosts
            .iter()
            .position(|h| h.tools.iter().any(|t| t.name == tool))
    }

    /// Whether `name` is an extension's tool (live or stopped).
    pub fn owns_tool(&self, name: &str) -> bool {
        self.owner(name).is_some()
    }

    /// Gather what the extensions sent and notice the ones that stopped.
    /// Returns true when an extension stopped (its tools are gone).
    pub fn collect(&mut self) -> bool {
        let mut stopped = false;
        for h in &mut self.hosts {
            h.poll();
            for u in std::mem::take(&mut h.unasked) {
                match u {
                    Unasked::Notify { level, message } => {
                        let warn = matches!(level.as_str(), "warn" | "warning" | "error");
                        let message = shorten(&message, MAX_NOTIFY);
                        self.messages
                            .push((warn, format!("extension {}: {message}", h.name)));
                    }
                    Unasked::Submit(t) if !t.trim().is_empty() => self.submits.push(t),
                    Unasked::Submit(_) => {}
                }
            }
            for w in std::mem::take(&mut h.warnings) {
                self.messages
                    .push((true, format!("extension {}: {w}", h.name)));
            }
            if !h.reported {
                if let Some(why) = &h.dead {
                    h.reported = true;
                    stopped = true;
                    let tools: Vec<&str> = h.tools.iter().map(|t| t.name.as_str()).collect();
                    let what = if tools.is_empty() {
                        String::new()
                    } else {
                        format!("; its tools are no longer available: {}", tools.join(", "))
                    };
                    self.messages
                        .push((true, format!("extension {} stopped: {why}", h.name)));
                    self.notices
                        .push(format!("extension {} stopped ({why}){what}", h.name));
                }
            }
        }
        stopped
    }

    /// Send `event` to the extensions subscribed to it.
    pub fn event(&mut self, event: &str, payload: Value) {
        for h in &mut self.hosts {
            if h.dead.is_none() && h.events.iter().any(|e| e == event) {
                h.event(event, &payload);
            }
        }
    }

    /// Whether any live extension intercepts `event`.
    pub fn intercepts(&self, event: &str) -> bool {
        self.hosts
            .iter()
            .any(|h| h.dead.is_none() && h.intercepts.iter().any(|e| e == event))
    }

    /// `event_intercept` of a tool call, in extension order: one may block
    /// it (the reason is returned) or rewrite its arguments (the next sees
    /// the rewrite; the tool checks the final arguments). An extension
    /// that does not answer in time leaves the call as it is.
    pub fn intercept_tool_call(&mut self, call: &mut ToolCall) -> Result<(), String> {
        for i in 0..self.hosts.len() {
            let h = &mut self.hosts[i];
            if h.dead.is_some() || !h.intercepts.iter().any(|e| e == "tool_call") {
                continue;
            }
            let payload =
                json!({"tool_call_id": call.id, "name": call.name, "args": call.arguments});
            match h.intercept("tool_call", &payload) {
                Ok(r) if r.block => {
                    return Err(format!(
                        "blocked by extension {}: {}",
                        h.name,
                        r.reason.unwrap_or_else(|| "no reason given".into())
                    ))
                }
                Ok(r) => {
                    if let Some(a) = r.modified_args {
                        call.arguments = a;
                    }
                }
                Err(host::Wait::Timeout) => self.messages.push((
                    true,
                    format!(
                        "extension {}: no answer to the tool_call intercept within {} s; the call goes on unchanged",
                        h.name,
                        host::INTERCEPT_TIMEOUT.as_secs()
                    ),
                )),
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// `event_intercept` of an assistant message: the text an extension
    /// replaced it with, if any.
    pub fn intercept_text(&mut self, event: &str, text: &str, extra: Value) -> Option<String> {
        let mut out: Option<String> = None;
        for h in &mut self.hosts {
            if h.dead.is_some() || !h.intercepts.iter().any(|e| e == event) {
                continue;
            }
            let mut payload = json!({"text": out.as_deref().unwrap_or(text)});
            if let (Value::Object(p), Value::Object(x)) = (&mut payload, &extra) {
                for (k, v) in x {
                    p.insert(k.clone(), v.clone());
                }
            }
            if let Ok(r) = h.intercept(event, &payload) {
                if let Some(t) = r.replace_text {
                    out = Some(t);
                }
            }
        }
        out
    }

    /// Run an extension's tool. `None` when no extension registered it.
    pub fn call_tool(
        &mut self,
        call: &ToolCall,
        cancel: Option<&zot_supervisor::Cancel>,
    ) -> Option<ToolOutput> {
        let i = self.owner(&call.name)?;
        let started = std::time::Instant::now();
        let h = &mut self.hosts[i];
        let args = match &call.arguments {
            Value::Null => json!({}),
            v => v.clone(),
        };
        let too_large =
            serde_json::to_vec(&args).map_or(0, |v| v.len()) + 1024 > protocol::MAX_FRAME;
        let (content, is_error) = if too_large {
            (
                format!(
                    "the arguments are too large for extension {} (frames are at most {} MiB)",
                    h.name,
                    protocol::MAX_FRAME >> 20
                ),
                true,
            )
        } else if h.dead.is_some() {
            (
                format!(
                    "tool `{}` is not available: extension {} stopped ({})",
                    call.name,
                    h.name,
                    h.dead.clone().unwrap_or_default()
                ),
                true,
            )
        } else {
            match h.call_tool(&call.name, &args, cancel) {
                Ok((text, err)) => (text, err),
                Err(host::Wait::Timeout) => (
                    format!(
                        "extension {} did not answer within {} s",
                        h.name,
                        host::TOOL_TIMEOUT.as_secs()
                    ),
                    true,
                ),
                Err(host::Wait::Cancelled) => ("cancelled".into(), true),
                Err(host::Wait::Dead) => {
                    self.collect();
                    let h = &self.hosts[i];
                    let names: Vec<&str> = h.tools.iter().map(|t| t.name.as_str()).collect();
                    // The model is told here: no separate notice.
                    self.notices
                        .retain(|n| !n.starts_with(&format!("extension {} stopped", h.name)));
                    (
                        format!(
                            "extension {} stopped ({}); its tools are no longer available: {}",
                            h.name,
                            h.dead.clone().unwrap_or_default(),
                            names.join(", ")
                        ),
                        true,
                    )
                }
            }
        };
        let (content, _) = tools::cap(&content, tools::MODEL_OUTPUT_TOKENS, None);
        Some(ToolOutput {
            content,
            is_error,
            duration_ms: Some(started.elapsed().as_millis() as u64),
            ..Default::default()
        })
    }

    /// Run extension command `name` (`/name args`). `None` when no live
    /// extension registered it.
    pub fn invoke(&mut self, name: &str, args: &str) -> Option<Result<host::CommandReply, String>> {
        let h = self
            .hosts
            .iter_mut()
            .find(|h| h.dead.is_none() && h.commands.iter().any(|c| c.name == name))?;
        Some(h.invoke(name, args).map_err(|w| match w {
            host::Wait::Timeout => format!("extension {} did not answer", h.name),
            _ => format!("extension {} stopped", h.name),
        }))
    }

    /// The shutdown sequence for every extension (see [`Host::shutdown`]),
    /// all at once.
    pub fn shutdown(&mut self) {
        self.specs.clear();
        let hosts = std::mem::take(&mut self.hosts);
        let handles: Vec<_> = hosts
            .into_iter()
            .map(|mut h| std::thread::spawn(move || h.shutdown()))
            .collect();
        for t in handles {
            let _ = t.join();
        }
    }
}

impl Drop for Extensions {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Bytes of a notification shown.
const MAX_NOTIFY: usize = 4096;

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... [{} bytes more]", &s[..end], s.len() - end)
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}
