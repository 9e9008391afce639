//! The tools: `read`, `write`, `edit`, `glob`, `grep`, `bash`, `skill`.
//! File tools are confined to the expanded `fs.read` / `fs.write` scopes
//! (see [`crate::fsscope`]); `bash` goes through the risk gate and then the
//! OS sandbox. A refusal is a tool error the model sees; the run goes on.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::deps::{self, BashMode, GateDecision, SandboxPolicy};
use crate::fsscope::{self, Scoped};
use crate::message::ToolCall;
use crate::perms::Permissions;
use crate::prompt::Skill;
use crate::ui::Ui;

/// Tool names, in the order shown to the model.
pub const NAMES: &[&str] = &["read", "write", "edit", "glob", "grep", "bash", "skill"];

/// A tool as offered to the model: its name, what it does, and the JSON
/// Schema of its arguments (what [`execute`] reads).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

fn schema(props: Value, required: &[&str]) -> Value {
    serde_json::json!({"type": "object", "properties": props, "required": required})
}

/// The definition of tool `name`.
pub fn spec(name: &str) -> Option<ToolSpec> {
    use serde_json::json;
    let (name, description, parameters) = match name {
        "read" => (
            "read",
            "Read a text file. Returns its lines; `offset` (1-based line) and `limit` select a range.",
            schema(
                json!({"path": {"type": "string", "description": "File path, absolute or relative to the workspace"},
                       "offset": {"type": "integer", "minimum": 1},
                       "limit": {"type": "integer", "minimum": 1}}),
                &["path"],
            ),
        ),
        "write" => (
            "write",
            "Create or overwrite a file with the given content.",
            schema(
                json!({"path": {"type": "string"}, "content": {"type": "string"}}),
                &["path", "content"],
            ),
        ),
        "edit" => (
            "edit",
            "Replace `old_string` with `new_string` in a file. `old_string` must occur exactly once unless `replace_all` is true.",
            schema(
                json!({"path": {"type": "string"}, "old_string": {"type": "string"},
                       "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}}),
                &["path", "old_string", "new_string"],
            ),
        ),
        "glob" => (
            "glob",
            "List files matching a glob pattern (e.g. `src/**/*.rs`) under `path` (default: the workspace).",
            schema(
                json!({"pattern": {"type": "string"}, "path": {"type": "string"}}),
                &["pattern"],
            ),
        ),
        "grep" => (
            "grep",
            "Search file contents for a regular expression under `path` (default: the workspace); `glob` filters file names. Returns file:line:text matches.",
            schema(
                json!({"pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}}),
                &["pattern"],
            ),
        ),
        "bash" => (
            "bash",
            "Run a shell command in the workspace, inside the sandbox the user granted. Returns the exit code and output. `timeout` is in seconds (default 120, at most 600).",
            schema(
                json!({"command": {"type": "string"}, "timeout": {"type": "number", "exclusiveMinimum": 0}}),
                &["command"],
            ),
        ),
        "skill" => (
            "skill",
            "Load the full instructions of a skill listed in the system prompt.",
            schema(json!({"name": {"type": "string"}}), &["name"]),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name,
        description,
        parameters,
    })
}

/// Why the agent's manifest does not allow tool `name`, or `None` when it
/// does: bash needs a bash mode other than `none`; the reading tools need
/// `fs.read` scopes, the writing tools `fs.write` scopes.
pub fn manifest_refusal(spec: &deps::AgentSpec, name: &str) -> Option<String> {
    match name {
        "bash" if spec.bash_mode == BashMode::None => {
            Some("bash is not permitted for this agent (permissions.bash.mode: none)".into())
        }
        "read" | "glob" | "grep" if spec.fs_read.is_empty() => Some(format!(
            "{name} is not permitted for this agent (permissions.fs.read is empty)"
        )),
        "write" | "edit" if spec.fs_write.is_empty() => Some(format!(
            "{name} is not permitted for this agent (permissions.fs.write is empty)"
        )),
        _ => None,
    }
}

/// The tools of one run: those the manifest allows, narrowed by
/// `requested` (`--tools`), which may not add any. Errors name the tool.
pub fn enabled(
    spec: &deps::AgentSpec,
    requested: Option<&[String]>,
) -> Result<Vec<&'static str>, String> {
    let allowed: Vec<&'static str> = NAMES
        .iter()
        .copied()
        .filter(|n| manifest_refusal(spec, n).is_none())
        .collect();
    let Some(req) = requested else {
        return Ok(allowed);
    };
    let mut out = Vec::new();
    for r in req {
        let Some(name) = NAMES.iter().copied().find(|n| n == r) else {
            let hint = zot_policy::suggest(r, NAMES)
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_else(|| format!("; tools: {}", NAMES.join(", ")));
            return Err(format!("--tools: unknown tool `{r}`{hint}"));
        };
        if let Some(why) = manifest_refusal(spec, name) {
            return Err(format!(
                "--tools can only narrow what the agent allows: {why}"
            ));
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out.sort_by_key(|n| NAMES.iter().position(|m| m == n));
    Ok(out)
}

/// Default bash timeout.
pub const BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest bash timeout a tool call may ask for.
pub const BASH_TIMEOUT_MAX: Duration = Duration::from_secs(600);
/// Output bytes captured from one bash command.
pub const BASH_CAPTURE: usize = 8 << 20;
/// Output bytes of one tool result shown to the model (head + tail).
pub const MODEL_OUTPUT: usize = 16 << 10;
const MAX_FILE: u64 = 10 << 20;

/// Everything the tools need.
pub struct ToolEnv {
    pub workspace: PathBuf,
    pub perms: Permissions,
    /// The bash sandbox policy, or why there is none.
    pub policy: Result<SandboxPolicy, String>,
    pub skills: Vec<Skill>,
    /// A human can answer questions on the terminal.
    pub interactive: bool,
    /// Where full tool outputs are saved (the session's side dir).
    pub side_dir: Option<PathBuf>,
    pub backend: Option<String>,
    /// zot's state directory (canonical): the file tools never touch it,
    /// except the agent's own data dir and this session's file tree (an
    /// agent.toml package's Agent Files) inside it.
    pub zot_home: PathBuf,
    pub agent_data: PathBuf,
    pub session_files: Option<PathBuf>,
    /// Files inside write scopes that stay read-only (agent.toml seeds).
    pub read_only: Vec<PathBuf>,
    /// The tools this run offers (see [`enabled`]); others are refused.
    pub enabled: Vec<&'static str>,
    /// Their definitions, as sent to the model.
    pub tool_specs: Vec<ToolSpec>,
    /// Stops a running command (TERM, then KILL) when it fires.
    pub cancel: Option<zot_supervisor::Cancel>,
    /// Sees a command's output as it comes (`entry.pre`'s, shown live).
    pub live_output: Option<zot_supervisor::OutputSink>,
    /// Why each tool the manifest forbids is forbidden.
    pub refusals: Vec<(&'static str, String)>,
    /// The workspace index of the policy's writable roots (see
    /// [`deps::start_index`]).
    pub index: Option<std::sync::Arc<zot_supervisor::index::live::Live>>,
}

impl ToolEnv {
    /// Whether a real (canonical) path is zot's private state.
    fn private(&self, p: &Path) -> bool {
        p.starts_with(&self.zot_home)
            && !p.starts_with(&self.agent_data)
            && !self
                .session_files
                .as_ref()
                .is_some_and(|f| p.starts_with(f))
    }

    /// Refuse writing a path the sandbox keeps read-only: the policy's
    /// protected paths (the same list the bash sandbox mounts read-only:
    /// `.git/hooks`, `.git/config`, `.zot`, `.agents`, git files of every
    /// repository found, PATH directories) and the git rules for any
    /// repository (`zot_policy::sandbox::git_control_file`).
    fn check_protected(&self, real: &Path, s: &Scoped) -> Result<(), ToolOutput> {
        if self.read_only.iter().any(|r| r == real) {
            return Err(fail(format!(
                "permission denied: {} is a read-only file of the agent package",
                s.full.display()
            )));
        }
        let host = self
            .policy
            .as_ref()
            .ok()
            .filter(|pol| pol.write_roots.iter().any(|r| real.starts_with(r)))
            .map(|pol| deps::host_protections(pol, self.index.as_ref()));
        let why = if let Some(p) = self
            .policy
            .as_ref()
            .ok()
            .and_then(|pol| pol.protected_at(real))
            .or_else(|| host.as_ref().and_then(|h| h.covers(real)))
        {
            Some(format!(
                "it is a protected path ({}) of the sandbox",
                p.display()
            ))
        } else if zot_policy::sandbox::git_control_file(real) {
            Some("git reads it as configuration or runs it (a repository's config, hooks or control files)".to_string())
        } else {
            None
        };
        match why {
            Some(why) => Err(fail(format!(
                "permission denied: {} stays read-only: {why}",
                s.full.display()
            ))),
            None => Ok(()),
        }
    }

    /// Refuse writing a read-only seed (checked on the opened file's real path).
    fn check_writable(&self, f: &std::fs::File, s: &Scoped) -> Result<(), ToolOutput> {
        use std::os::fd::AsRawFd;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).map_err(|e| {
            fail(format!(
                "{}: cannot tell where it leads: {e}",
                s.full.display()
            ))
        })?;
        if self.read_only.contains(&real) {
            return Err(fail(format!(
                "permission denied: {} is a read-only file of the agent package",
                s.full.display()
            )));
        }
        self.check_protected(&real, s)
    }

    /// Refuse an opened file whose real path is zot's private state.
    fn check_fd(&self, f: &std::fs::File, s: &Scoped) -> Result<(), ToolOutput> {
        use std::os::fd::AsRawFd;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).map_err(|e| {
            fail(format!(
                "{}: cannot tell where it leads: {e}",
                s.full.display()
            ))
        })?;
        if self.private(&real) {
            return Err(fail(format!(
                "permission denied: {} is zot's private state",
                s.full.display()
            )));
        }
        Ok(())
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    pub full_output: Option<PathBuf>,
    /// The proxy's audit records of a bash call with `net.allow`.
    pub network: Vec<serde_json::Value>,
}

fn fail(msg: impl Into<String>) -> ToolOutput {
    ToolOutput {
        content: msg.into(),
        is_error: true,
        ..Default::default()
    }
}

fn ok(msg: impl Into<String>) -> ToolOutput {
    ToolOutput {
        content: msg.into(),
        ..Default::default()
    }
}

fn arg_str<'a>(a: &'a Value, k: &str) -> Result<&'a str, ToolOutput> {
    a.get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| fail(format!("missing string argument {k:?}")))
}

/// Run one tool call. A tool this run does not offer, or arguments that
/// are not a JSON object (e.g. cut or malformed by the model), are refused
/// without running anything. Questions (a risk-gate `ask` verdict) go to
/// `ui`.
pub fn execute(env: &ToolEnv, call: &ToolCall, ui: &mut dyn Ui) -> ToolOutput {
    if NAMES.contains(&call.name.as_str()) && !env.enabled.contains(&call.name.as_str()) {
        return fail(
            env.refusals
                .iter()
                .find(|(n, _)| *n == call.name)
                .map(|(_, why)| why.clone())
                .unwrap_or_else(|| {
                    format!("tool `{}` is not enabled for this run (--tools)", call.name)
                }),
        );
    }
    let empty = Value::Object(Default::default());
    let a = match &call.arguments {
        Value::Object(_) => &call.arguments,
        Value::Null => &empty,
        Value::String(raw) => {
            return fail(format!(
                "the arguments of this `{}` call are not valid JSON, so it was not run: {}",
                call.name,
                crate::providers::stream::excerpt(raw)
            ))
        }
        other => {
            return fail(format!(
                "the arguments of this `{}` call must be a JSON object, got {other}",
                call.name
            ))
        }
    };
    let r = match call.name.as_str() {
        "read" => read(env, a),
        "write" => write(env, a),
        "edit" => edit(env, a),
        "glob" => glob(env, a),
        "grep" => grep(env, a),
        "bash" => bash(env, a, &call.id, ui),
        "skill" => arg_str(a, "name").map(|n| match crate::prompt::load_skill(&env.skills, n) {
            Ok(body) => ok(body),
            Err(e) => fail(e),
        }),
        other => Err(fail(format!(
            "unknown tool {other:?} (tools: {})",
            NAMES.join(", ")
        ))),
    };
    r.unwrap_or_else(|e| e)
}

fn scope_list(v: &[PathBuf]) -> String {
    if v.is_empty() {
        "none granted".into()
    } else {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn locate(env: &ToolEnv, raw: &str, write: bool) -> Result<Scoped, ToolOutput> {
    let (roots, field) = if write {
        (&env.perms.fs_write, "fs.write")
    } else {
        (&env.perms.fs_read, "fs.read")
    };
    let p = fsscope::normalize(&env.workspace, Path::new(raw))
        .ok_or_else(|| fail(format!("invalid path {raw:?}")))?;
    fsscope::locate(roots, &p).ok_or_else(|| {
        fail(format!(
            "permission denied: {} is outside the agent's {field} scopes ({})",
            p.display(),
            scope_list(roots)
        ))
    })
}

fn io_fail(what: &str, s: &Scoped, e: std::io::Error) -> ToolOutput {
    let hint = match e.raw_os_error() {
        Some(libc::EXDEV) | Some(libc::ELOOP) => " (a symlink leads outside the granted scope)",
        _ => "",
    };
    fail(format!("{what} {}: {e}{hint}", s.full.display()))
}

fn read_capped(f: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    f.take(MAX_FILE + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_FILE {
        return Err(std::io::Error::other("file is larger than 10 MiB"));
    }
    Ok(buf)
}

fn read(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let s = locate(env, arg_str(a, "path")?, false)?;
    let mut f = fsscope::open_read(&s).map_err(|e| io_fail("read", &s, e))?;
    env.check_fd(&f, &s)?;
    let data = read_capped(&mut f).map_err(|e| io_fail("read", &s, e))?;
    let text = String::from_utf8_lossy(&data);
    let offset = a.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
    let limit = a.get("limit").and_then(Value::as_u64).map(|l| l as usize);
    let lines: Vec<&str> = text
        .lines()
        .skip(offset - 1)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let mut out = lines.join("\n");
    if text.ends_with('\n') && limit.is_none() && !out.is_empty() {
        out.push('\n');
    }
    Ok(ok(cap(&out, MODEL_OUTPUT, None).0))
}

fn write(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let s = locate(env, arg_str(a, "path")?, true)?;
    let content = arg_str(a, "content")?;
    let canon = crate::perms::canonical_prefix(&s.full);
    if env.private(&canon) {
        return Err(fail(format!(
            "permission denied: {} is zot's private state",
            s.full.display()
        )));
    }
    // Before anything is created (the opened file is checked again).
    env.check_protected(&canon, &s)?;
    let mut f = fsscope::open_write(&s, false).map_err(|e| io_fail("write", &s, e))?;
    env.check_fd(&f, &s)?;
    env.check_writable(&f, &s)?;
    f.set_len(0).map_err(|e| io_fail("write", &s, e))?;
    f.write_all(content.as_bytes())
        .map_err(|e| io_fail("write", &s, e))?;
    Ok(ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        s.full.display()
    )))
}

fn edit(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let s = locate(env, arg_str(a, "path")?, true)?;
    let old = arg_str(a, "old_string")?;
    let new = arg_str(a, "new_string")?;
    let all = a
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old.is_empty() {
        return Err(fail("old_string must not be empty"));
    }
    let mut f = fsscope::open_read(&s).map_err(|e| io_fail("edit", &s, e))?;
    env.check_fd(&f, &s)?;
    let data = read_capped(&mut f).map_err(|e| io_fail("edit", &s, e))?;
    let text = String::from_utf8(data)
        .map_err(|_| fail(format!("edit {}: not UTF-8 text", s.full.display())))?;
    let n = text.matches(old).count();
    if n == 0 {
        return Err(fail(format!(
            "edit {}: old_string not found",
            s.full.display()
        )));
    }
    if n > 1 && !all {
        return Err(fail(format!(
            "edit {}: old_string occurs {n} times; make it unique or set replace_all",
            s.full.display()
        )));
    }
    let out = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    env.check_protected(&crate::perms::canonical_prefix(&s.full), &s)?;
    let mut f = fsscope::open_write(&s, false).map_err(|e| io_fail("edit", &s, e))?;
    env.check_fd(&f, &s)?;
    env.check_writable(&f, &s)?;
    f.set_len(0).map_err(|e| io_fail("edit", &s, e))?;
    f.write_all(out.as_bytes())
        .map_err(|e| io_fail("edit", &s, e))?;
    Ok(ok(format!(
        "replaced {} occurrence(s) in {}",
        if all { n } else { 1 },
        s.full.display()
    )))
}

fn walk_base(env: &ToolEnv, a: &Value) -> Result<Scoped, ToolOutput> {
    let base = a.get("path").and_then(Value::as_str).unwrap_or(".");
    locate(env, base, false)
}

fn glob(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = arg_str(a, "pattern")?;
    let m = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| fail(format!("glob pattern {pattern:?}: {e}")))?
        .compile_matcher();
    let s = walk_base(env, a)?;
    let mut found = Vec::new();
    fsscope::walk(&s, |rel, fd| {
        if fsscope::fd_path(fd).is_none_or(|p| env.private(&p)) {
            return true;
        }
        if m.is_match(rel) {
            found.push(s.full.join(rel).display().to_string());
        }
        found.len() < 1000
    })
    .map_err(|e| io_fail("glob", &s, e))?;
    found.sort();
    if found.is_empty() {
        return Ok(ok("no files match"));
    }
    Ok(ok(found.join("\n")))
}

fn grep(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = arg_str(a, "pattern")?;
    let re = regex::Regex::new(pattern).map_err(|e| fail(format!("grep pattern: {e}")))?;
    let filter = match a.get("glob").and_then(Value::as_str) {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| fail(format!("glob {g:?}: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let s = walk_base(env, a)?;
    let mut hits = Vec::new();
    let mut search = |name: String, data: &[u8]| {
        if data.contains(&0) {
            return true;
        }
        for (i, line) in String::from_utf8_lossy(data).lines().enumerate() {
            if re.is_match(line) {
                hits.push(format!("{name}:{}:{}", i + 1, line));
                if hits.len() >= 200 {
                    return false;
                }
            }
        }
        true
    };
    let single = fsscope::open_read(&s)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
    if let Some(mut f) = single {
        let data = read_capped(&mut f).map_err(|e| io_fail("grep", &s, e))?;
        search(s.full.display().to_string(), &data);
    } else {
        fsscope::walk(&s, |rel, fd| {
            if filter.as_ref().is_some_and(|g| !g.is_match(rel)) {
                return true;
            }
            if fsscope::fd_path(fd).is_none_or(|p| env.private(&p)) {
                return true;
            }
            let Ok(dup) = fd.try_clone() else { return true };
            let mut f = std::fs::File::from(dup);
            let Ok(data) = read_capped(&mut f) else {
                return true;
            };
            search(s.full.join(rel).display().to_string(), &data)
        })
        .map_err(|e| io_fail("grep", &s, e))?;
    }
    if hits.is_empty() {
        return Ok(ok("no matches"));
    }
    Ok(ok(cap(&hits.join("\n"), MODEL_OUTPUT, None).0))
}

/// Keep the head and tail of `s` when it is longer than `max`, noting what
/// was left out and where the full text is.
pub fn cap(s: &str, max: usize, full: Option<&Path>) -> (String, bool) {
    if s.len() <= max {
        return (s.to_string(), false);
    }
    let half = max / 2;
    let mut h = half;
    while !s.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = s.len() - half;
    while !s.is_char_boundary(t) {
        t += 1;
    }
    let where_ = full
        .map(|p| format!("; full output: {}", p.display()))
        .unwrap_or_default();
    (
        format!(
            "{}\n[... {} bytes omitted{where_} ...]\n{}",
            &s[..h],
            t - h,
            &s[t..]
        ),
        true,
    )
}

fn bash(
    env: &ToolEnv,
    a: &Value,
    call_id: &str,
    ui: &mut dyn Ui,
) -> Result<ToolOutput, ToolOutput> {
    let command = arg_str(a, "command")?;
    let mode = env.perms.bash();
    if mode == BashMode::None {
        return Err(fail(
            "bash is not permitted for this agent (permissions.bash.mode: none)",
        ));
    }
    let verdict = deps::gate(command, mode, &env.perms.bash_allow);
    let reasons = verdict.reasons.join("; ");
    match verdict.decision {
        GateDecision::Allow => {}
        GateDecision::Deny => return Err(fail(format!("refused by the risk gate: {reasons}"))),
        GateDecision::Ask => {
            if !env.interactive {
                return Err(fail(format!(
                    "the risk gate wants confirmation ({reasons}) and there is no terminal to ask on: refused"
                )));
            }
            if !ui.confirm(
                &format!("Agent wants to run: {command}\n  risk gate: {reasons}"),
                "Allow?",
            ) {
                return Err(fail("the user declined this command"));
            }
        }
    }
    let timeout = match a.get("timeout").and_then(Value::as_f64) {
        Some(t) if t > 0.0 => Duration::from_secs_f64(t).min(BASH_TIMEOUT_MAX),
        Some(_) => return Err(fail("timeout must be a positive number of seconds")),
        None => BASH_TIMEOUT,
    };
    let shell = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let argv = vec![shell.to_string(), "-c".to_string(), command.to_string()];
    let policy = env
        .policy
        .as_ref()
        .map_err(|e| fail(format!("could not run the command: {e}")))?;
    let out = deps::run_sandboxed(
        policy,
        &argv,
        &deps::RunLimits {
            timeout,
            max_bytes: BASH_CAPTURE,
            backend: env.backend.as_deref(),
            cancel: env.cancel.as_ref(),
            live_output: env.live_output.clone(),
            index: env.index.as_ref(),
        },
    )
    .map_err(|e| fail(format!("could not run the command: {}", crate::ui::error_chain(&e))))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    if out.truncated {
        text.push_str(&format!("\n[output truncated at {} bytes]", BASH_CAPTURE));
    }
    // Repositories the command created are renamed aside (git on the host
    // would run their hooks): the model is told, so it does not retry.
    for n in out.report.notes.iter().filter(|n| {
        matches!(
            n,
            zot_supervisor::Note::Quarantined { .. }
                | zot_supervisor::Note::ScanIncomplete { .. }
                | zot_supervisor::Note::IndexFallback { .. }
        )
    }) {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[zot: {n}]"));
    }
    let mut full_output = None;
    if text.len() > MODEL_OUTPUT {
        if let Some(dir) = &env.side_dir {
            let id: String = call_id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            let p = dir.join(format!("{}.txt", if id.is_empty() { "call" } else { &id }));
            if crate::home::private_dir(dir).is_ok() && std::fs::write(&p, &text).is_ok() {
                full_output = Some(p);
            }
        }
    }
    let (shown, _) = cap(&text, MODEL_OUTPUT, full_output.as_deref());
    let ms = out.duration.as_millis() as u64;
    let status = if out.cancelled {
        format!("cancelled (exit code {})", out.exit_code)
    } else if out.timed_out {
        format!(
            "timed out after {} s (exit code {})",
            timeout.as_secs_f64(),
            out.exit_code
        )
    } else {
        format!("exit code {}", out.exit_code)
    };
    let mut content = format!("{status}, {ms} ms\n{shown}");
    // The model learns why a connection failed (a 403 alone says little).
    for r in out.proxy.iter().filter(|r| r.reason.is_some()) {
        content.push_str(&format!(
            "\n[network: {}:{} {}: {}]",
            r.host.as_deref().unwrap_or("?"),
            r.port.map_or("?".to_string(), |p| p.to_string()),
            serde_json::to_value(r.decision).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            r.reason.as_deref().unwrap_or("")
        ));
    }
    Ok(ToolOutput {
        content,
        is_error: out.exit_code != 0 || out.timed_out || out.cancelled,
        exit_code: Some(out.exit_code),
        duration_ms: Some(ms),
        full_output,
        network: out
            .proxy
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(ws: &Path, read: Vec<PathBuf>, write: Vec<PathBuf>) -> ToolEnv {
        let perms = Permissions {
            fs_read: read,
            fs_write: write,
            bash_mode: "none",
            ..Default::default()
        };
        let policy = Err("no policy in unit tests".to_string());
        ToolEnv {
            workspace: ws.into(),
            perms,
            policy,
            skills: vec![],
            interactive: false,
            side_dir: None,
            backend: None,
            zot_home: ws.join("zot-home"),
            agent_data: ws.join("zot-home/agents/a/data"),
            session_files: None,
            read_only: vec![],
            enabled: NAMES.to_vec(),
            tool_specs: vec![],
            cancel: None,
            live_output: None,
            index: None,
            refusals: vec![(
                "bash",
                "bash is not permitted for this agent (permissions.bash.mode: none)".into(),
            )],
        }
    }

    fn run(e: &ToolEnv, c: &ToolCall) -> ToolOutput {
        execute(e, c, &mut crate::ui::NullUi)
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn file_tools_enforce_scopes() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.rs"), "fn main() {}\nlet x = 1;\n").unwrap();
        std::fs::write(base.join("secret"), "key").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), ws.join("src/link")).unwrap();
        let e = env(&ws, vec![ws.clone()], vec![ws.join("out")]);
        let r = run(&e, &call("read", json!({"path": "src/a.rs"})));
        assert!(!r.is_error && r.content.contains("fn main"), "{r:?}");
        for p in ["../secret", "src/link", "/etc/passwd"] {
            let r = run(&e, &call("read", json!({"path": p})));
            assert!(r.is_error, "{p}: {r:?}");
            assert!(!r.content.contains("key"));
        }
        let r = run(
            &e,
            &call("write", json!({"path": "src/a.rs", "content": "x"})),
        );
        assert!(r.is_error && r.content.contains("fs.write"), "{r:?}");
        let r = run(
            &e,
            &call("write", json!({"path": "out/r.txt", "content": "a b a"})),
        );
        assert!(!r.is_error, "{r:?}");
        let r = run(
            &e,
            &call(
                "edit",
                json!({"path": "out/r.txt", "old_string": "a", "new_string": "c"}),
            ),
        );
        assert!(r.is_error && r.content.contains("2 times"));
        let r = run(
            &e,
            &call(
                "edit",
                json!({"path": "out/r.txt", "old_string": "a", "new_string": "c", "replace_all": true}),
            ),
        );
        assert!(!r.is_error);
        assert_eq!(
            std::fs::read_to_string(ws.join("out/r.txt")).unwrap(),
            "c b c"
        );
        let r = run(&e, &call("glob", json!({"pattern": "**/*.rs"})));
        assert_eq!(r.content, ws.join("src/a.rs").display().to_string());
        let r = run(&e, &call("grep", json!({"pattern": "let x"})));
        assert!(r.content.ends_with("a.rs:2:let x = 1;"), "{r:?}");
        let r = run(&e, &call("grep", json!({"pattern": "key", "path": ".."})));
        assert!(r.is_error);
        let r = run(&e, &call("bash", json!({"command": "true"})));
        assert!(r.is_error && r.content.contains("mode: none"));
    }

    #[test]
    fn file_tools_refuse_what_the_sandbox_keeps_read_only() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(ws.join("vendor/lib/.git/info")).unwrap();
        std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
        std::fs::write(ws.join("ok.txt"), "a").unwrap();
        let mut e = env(&ws, vec![ws.clone()], vec![ws.clone()]);
        let mut pol =
            zot_policy::sandbox::agent_policy(&zot_policy::sandbox::AgentSandboxOptions {
                cwd: ws.clone(),
                write_scopes: vec![ws.clone()],
                exec_path: vec![ws.join(".venv/bin")],
                ..Default::default()
            })
            .unwrap();
        pol.protected.sort();
        e.policy = Ok(pol);
        for (name, args) in [
            (
                "write",
                json!({"path": ".git/hooks/pre-commit", "content": "evil"}),
            ),
            (
                "write",
                json!({"path": ".git/config", "content": "[core]\nhooksPath=x"}),
            ),
            (
                "edit",
                json!({"path": ".git/config", "old_string": "core", "new_string": "x"}),
            ),
            ("write", json!({"path": ".zot/agent.toml", "content": "x"})),
            ("write", json!({"path": ".agents/a.md", "content": "x"})),
            (
                "write",
                json!({"path": "vendor/lib/.git/info/attributes", "content": "x"}),
            ),
            (
                "write",
                json!({"path": "vendor/lib/.git/commondir", "content": "/x"}),
            ),
            (
                "write",
                json!({"path": "vendor/new/.git", "content": "gitdir: /x"}),
            ),
            (
                "write",
                json!({"path": ".venv/bin/git", "content": "#!/bin/sh"}),
            ),
        ] {
            let r = run(&e, &call(name, args.clone()));
            assert!(
                r.is_error && r.content.contains("stays read-only"),
                "{name} {args}: {r:?}"
            );
        }
        assert!(!ws.join(".git/hooks/pre-commit").exists());
        assert!(!ws.join(".venv/bin/git").exists());
        assert!(!ws.join(".zot").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            "[core]\n"
        );
        // the rest of the workspace (and of .git) stays writable
        let r = run(
            &e,
            &call("write", json!({"path": "ok.txt", "content": "b"})),
        );
        assert!(!r.is_error, "{r:?}");
        let r = run(
            &e,
            &call(
                "write",
                json!({"path": ".git/COMMIT_EDITMSG", "content": "m"}),
            ),
        );
        assert!(!r.is_error, "{r:?}");
    }

    #[test]
    fn zot_home_is_off_limits_even_inside_a_scope() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("zot-home/agents/a/data")).unwrap();
        std::fs::create_dir_all(ws.join("zot-home/agents/a/consents")).unwrap();
        std::fs::write(ws.join("zot-home/agents/a/consents/r.json"), "{}").unwrap();
        std::fs::write(ws.join("zot-home/agents/a/data/mine.txt"), "mine").unwrap();
        std::os::unix::fs::symlink("zot-home/agents/a/consents", ws.join("sneaky")).unwrap();
        let e = env(&ws, vec![ws.clone()], vec![ws.clone()]);
        for (name, args) in [
            ("read", json!({"path": "zot-home/agents/a/consents/r.json"})),
            ("read", json!({"path": "sneaky/r.json"})),
            (
                "write",
                json!({"path": "zot-home/agents/a/consents/forged.json", "content": "{}"}),
            ),
            (
                "write",
                json!({"path": "sneaky/forged2.json", "content": "{}"}),
            ),
            (
                "edit",
                json!({"path": "sneaky/r.json", "old_string": "{", "new_string": "["}),
            ),
        ] {
            let r = run(&e, &call(name, args.clone()));
            assert!(
                r.is_error && r.content.contains("private state"),
                "{name} {args}: {r:?}"
            );
        }
        assert!(!ws.join("zot-home/agents/a/consents/forged.json").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join("zot-home/agents/a/consents/r.json")).unwrap(),
            "{}"
        );
        let r = run(&e, &call("grep", json!({"pattern": "\\{"})));
        assert_eq!(r.content, "no matches", "{r:?}");
        let r = run(
            &e,
            &call("read", json!({"path": "zot-home/agents/a/data/mine.txt"})),
        );
        assert!(!r.is_error, "{r:?}");
    }

    #[test]
    fn capping_keeps_head_and_tail() {
        let s = format!("{}{}", "a".repeat(100), "z".repeat(100));
        let (c, t) = cap(&s, 50, Some(Path::new("/x")));
        assert!(
            t && c.starts_with("aaaa")
                && c.ends_with("zzzz")
                && c.contains("150 bytes omitted; full output: /x")
        );
    }
}
