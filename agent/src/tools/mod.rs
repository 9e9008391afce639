//! The tools: `read`, `write`, `edit`, `glob`, `grep`, `bash` (one file
//! each) and `skill`; here what they share: specs, the environment, scopes,
//! the output budget and the dispatch.
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

mod bash;
mod edit;
mod glob;
mod grep;
mod read;
mod write;

use self::bash::bash;
#[cfg(test)]
use self::bash::save_output;
use self::edit::edit;
use self::glob::glob;
use self::grep::grep;
use self::read::read;
use self::write::write;

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
/// Tokens of one tool result shown to the model (head + tail) when the
/// run sets no budget ([`ToolEnv::output_tokens`]).
pub const MODEL_OUTPUT_TOKENS: u64 = 4096;
/// The subdirectory of the session's side directory holding whole tool
/// outputs the model saw cut.
pub const OUTPUTS_DIR: &str = "outputs";
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
    /// Where full tool outputs are saved (the session's side dir, in
    /// [`OUTPUTS_DIR`]); `read` may read them back.
    pub side_dir: Option<PathBuf>,
    /// Most tokens of one tool result shown to the model: the smaller of
    /// `[context] tool_output_tokens` and a share of the context window
    /// (see [`crate::context::Limits`]).
    pub output_tokens: u64,
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

fn walk_base(env: &ToolEnv, a: &Value) -> Result<Scoped, ToolOutput> {
    let base = a.get("path").and_then(Value::as_str).unwrap_or(".");
    locate(env, base, false)
}

/// Keep the head and tail of `s` when it is longer than `max_tokens`
/// (a zero budget: [`MODEL_OUTPUT_TOKENS`]), with a `... N lines (M
/// tokens) omitted ...` marker naming where the whole text is.
pub fn cap(s: &str, max_tokens: u64, full: Option<&str>) -> (String, bool) {
    let max = if max_tokens == 0 {
        MODEL_OUTPUT_TOKENS
    } else {
        max_tokens
    };
    crate::context::head_tail(s, max, full)
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
            output_tokens: 0,
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
        let s = format!("{}{}", "a".repeat(400), "z".repeat(400));
        let (c, t) = cap(&s, 50, Some("/x"));
        assert!(
            t && c.starts_with("aaaa")
                && c.ends_with("zzzz")
                && c.contains("0 lines (150 tokens) omitted; the whole output is in /x"),
            "{c}"
        );
    }

    #[test]
    fn saved_outputs_are_private_and_readable_back() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let mut e = env(&ws, vec![ws.clone()], vec![]);
        e.side_dir = Some(d.path().join("s.d"));
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let p = save_output(&e, "call/../1", &text).unwrap();
        assert_eq!(p.parent().unwrap(), d.path().join("s.d/outputs"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let r = run(
            &e,
            &call(
                "read",
                json!({"path": p.display().to_string(), "offset": 4001, "limit": 2}),
            ),
        );
        assert_eq!(r.content, "line 4000\nline 4001", "{r:?}");
        // Only that directory: the session file next to it stays private.
        std::fs::write(d.path().join("s.d/x.txt"), "no").unwrap();
        let r = run(
            &e,
            &call(
                "read",
                json!({"path": d.path().join("s.d/x.txt").display().to_string()}),
            ),
        );
        assert!(r.is_error, "{r:?}");
    }
}
