//! The zotfile manifest (`manifest.json`): model and validation.
//!
//! [`parse`] checks every rule of the manifest reference and reports all
//! problems at once, each naming its field path (`permissions.bash.allow`).
//! Unknown fields are warnings (forward compatibility), with a "did you mean"
//! hint when they look like a typo of a known field. Duplicate JSON keys are
//! errors: two parsers must never see two different manifests.
//!
//! Pure: nothing here touches the system.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::strict_json::StrictValue;
use crate::validate::{Dialect, Walker};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod extension;
#[cfg(test)]
mod tests;

/// The only format version this runtime understands.
pub const FORMAT_VERSION: u64 = 1;
/// The manifest's file name, at the package root.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The optional standing instructions, at the package root.
pub const AGENT_FILE: &str = "AGENT.md";

/// Go operating-system names accepted in `requirements.os`.
pub const GO_OS_NAMES: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// A model capability from `model.requires`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// Tool calling. Every catalog model is treated as tool-capable.
    Tools,
    /// Requires a model marked as supporting reasoning.
    Reasoning,
    /// Recognized, but no model qualifies yet: fails closed at selection.
    Vision,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Tools => "tools",
            Capability::Reasoning => "reasoning",
            Capability::Vision => "vision",
        }
    }
}

/// `permissions.bash.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BashMode {
    /// All bash tool calls are denied (the default).
    #[default]
    None,
    /// Bash is available after launch-time consent (never cached).
    Ask,
    /// Only the commands in `permissions.bash.allow`.
    Allowlist,
}

impl BashMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BashMode::None => "none",
            BashMode::Ask => "ask",
            BashMode::Allowlist => "allowlist",
        }
    }
}

/// A validated zotfile manifest. Produced by [`parse`]; the serde derives
/// give the spec's JSON shape back (for `--json` output and conversions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub zotfile: u64,
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub runtime: Runtime,
    pub model: Model,
    pub permissions: Permissions,
    pub requirements: Requirements,
    pub entry: Entry,
    pub replace_system_prompt: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Runtime {
    /// Minimum zot version (semver). See [`check_min_zot`].
    pub min_zot: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Model {
    pub requires: Vec<Capability>,
    pub min_context: Option<u64>,
    /// Ordered model IDs: a preference, not a requirement.
    pub preferred: Vec<String>,
    /// Always `None` or empty after validation (non-empty is rejected).
    pub min_tier: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Permissions {
    pub fs: FsPermissions,
    pub bash: BashPermissions,
    pub net: NetPermissions,
    pub env: EnvPermissions,
}

/// Filesystem scopes; see [`FsScope`] for their syntax.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FsPermissions {
    pub read: Vec<String>,
    pub write: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BashPermissions {
    pub mode: BashMode,
    /// Command names; non-empty exactly when `mode` is `allowlist`.
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetPermissions {
    /// Allow rules ([`crate::net::HostRule`] syntax), as written.
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvPermissions {
    /// Variable names or `PREFIX_*` ([`crate::env::EnvName`]), as written.
    pub read: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Requirements {
    /// Go OS names (`linux`, `darwin`, `windows`, ...). Empty: any OS.
    pub os: Vec<String>,
    /// Commands that must be on `PATH`.
    pub bin: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    pub greeting: Option<String>,
    pub pre: Option<String>,
    pub default_prompt: Option<String>,
}

impl Manifest {
    /// The permission fields the runtime accepts in the model but cannot
    /// enforce yet, as field paths (`permissions.net.allow`). `zot run` must
    /// refuse a manifest for which this is non-empty.
    pub fn unenforced_permissions(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.permissions.net.allow.is_empty() {
            out.push("permissions.net.allow");
        }
        out
    }

    /// The parsed `permissions.net.allow` rules (validation has checked
    /// every entry).
    pub fn net_rules(&self) -> Result<crate::net::AllowList, crate::net::RuleError> {
        crate::net::AllowList::parse(&self.permissions.net.allow)
    }

    /// The parsed `permissions.env.read` entries.
    pub fn env_names(&self) -> Result<Vec<crate::env::EnvName>, crate::env::EnvNameError> {
        self.permissions.env.read.iter().map(|s| crate::env::EnvName::parse(s)).collect()
    }

    /// True when [`Manifest::unenforced_permissions`] is non-empty.
    pub fn uses_unenforced_permissions(&self) -> bool {
        !self.unenforced_permissions().is_empty()
    }

    /// `name@version`, or just the name when there is no version.
    pub fn display_id(&self) -> String {
        match self.version.as_deref() {
            Some(v) if !v.is_empty() => format!("{}@{}", self.name, v),
            _ => self.name.clone(),
        }
    }

    /// The filesystem read scopes, parsed (they were validated by [`parse`]).
    pub fn fs_read_scopes(&self) -> Vec<FsScope> {
        self.permissions
            .fs
            .read
            .iter()
            .filter_map(|s| FsScope::parse(s).ok())
            .collect()
    }

    /// The filesystem write scopes, parsed (they were validated by [`parse`]).
    pub fn fs_write_scopes(&self) -> Vec<FsScope> {
        self.permissions
            .fs
            .write
            .iter()
            .filter_map(|s| FsScope::parse(s).ok())
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Diagnostics

pub use crate::diagnostic::Diagnostic;

/// Every error found in a manifest (never just the first), plus warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostics {
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errors.as_slice() {
            [one] => write!(f, "invalid manifest: {one}"),
            many => {
                write!(f, "invalid manifest ({} errors)", many.len())?;
                for e in many {
                    write!(f, "\n  - {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Diagnostics {}

impl Diagnostics {
    /// True when some error is about `path` (exactly).
    pub fn has_error_at(&self, path: &str) -> bool {
        self.errors.iter().any(|e| e.path == path)
    }
}

/// A manifest that passed validation, with the warnings found on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub manifest: Manifest,
    pub warnings: Vec<Diagnostic>,
}

// ---------------------------------------------------------------------------
// Names, scopes, versions

/// Why a name is not a valid local agent name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {max} characters")]
    TooLong { max: usize },
    #[error("{0:?} is path-like; use a flat name such as `code-reviewer`")]
    PathLike(String),
    #[error(
        "registry-style `namespace/agent` names are not accepted locally yet; use a flat name"
    )]
    Namespaced,
    #[error("contains {0:?}; only lowercase a-z, 0-9, `.`, `-` and `_` are allowed")]
    BadChar(char),
    #[error("must start and end with a letter or digit, not {0:?}")]
    BadEdge(char),
}

/// Longest accepted agent name.
pub const MAX_NAME_LEN: usize = 128;

/// Check a local agent name: flat, lowercase `a-z 0-9 . - _`, starting and
/// ending with a letter or digit (so `.`, `..`, `.hidden`, `-x`, `x_` fail).
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong { max: MAX_NAME_LEN });
    }
    if name.chars().all(|c| c == '.') {
        return Err(NameError::PathLike(name.to_string()));
    }
    if name.contains('/') {
        if name.starts_with('/')
            || name.starts_with("./")
            || name.split('/').any(|p| p == ".." || p == ".")
        {
            return Err(NameError::PathLike(name.to_string()));
        }
        return Err(NameError::Namespaced);
    }
    if name.contains('\\') {
        return Err(NameError::PathLike(name.to_string()));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '.' | '-' | '_'))
    {
        return Err(NameError::BadChar(c));
    }
    let first = name.chars().next().unwrap_or('a');
    let last = name.chars().last().unwrap_or('a');
    for c in [first, last] {
        if !c.is_ascii_alphanumeric() {
            return Err(NameError::BadEdge(c));
        }
    }
    Ok(())
}

/// Where a filesystem scope is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeBase {
    /// `${workspace}` or a relative path (resolved beneath the workspace).
    Workspace,
    /// `${agent_data}`: `$ZOT_HOME/agents/<name>/data/`.
    AgentData,
    /// An absolute path.
    Root,
}

/// A parsed filesystem scope: a base plus a normalized relative path
/// (no `.`/`..`/empty components; empty means the base itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FsScope {
    pub base: ScopeBase,
    pub rel: String,
}

impl FsScope {
    /// Parse a scope: `${workspace}`, `${agent_data}`, either followed by
    /// `/sub/path`, a relative path (beneath the workspace) or an absolute
    /// path. `..` components, other variables, `~` and NUL are rejected.
    pub fn parse(s: &str) -> Result<FsScope, String> {
        if s.is_empty() {
            return Err("empty scope".into());
        }
        if s.contains('\0') {
            return Err("contains a NUL byte".into());
        }
        let (base, rest) = if let Some(rest) = s.strip_prefix("${") {
            let end = rest
                .find('}')
                .ok_or_else(|| format!("{s:?}: unterminated variable"))?;
            let var = &rest[..end];
            let after = &rest[end + 1..];
            let base = match var {
                "workspace" => ScopeBase::Workspace,
                "agent_data" => ScopeBase::AgentData,
                other => {
                    return Err(format!(
                        "{s:?}: unknown variable `${{{other}}}` (known: `${{workspace}}`, `${{agent_data}}`)"
                    ))
                }
            };
            if !after.is_empty() && !after.starts_with('/') {
                return Err(format!(
                    "{s:?}: a variable must be followed by `/` or nothing"
                ));
            }
            (base, after)
        } else if s.starts_with('/') {
            (ScopeBase::Root, s)
        } else if s == "~" || s.starts_with("~/") {
            return Err(format!(
                "{s:?}: `~` is not expanded; home directories are not scopes"
            ));
        } else {
            (ScopeBase::Workspace, s)
        };
        if rest.contains("${") {
            return Err(format!("{s:?}: variables are only allowed at the start"));
        }
        let mut parts = Vec::new();
        for comp in rest.split('/') {
            match comp {
                "" | "." => {}
                ".." => return Err(format!("{s:?}: `..` components are not allowed")),
                c => parts.push(c),
            }
        }
        Ok(FsScope {
            base,
            rel: parts.join("/"),
        })
    }

    /// Resolve against concrete directories (no filesystem access).
    pub fn resolve(&self, workspace: &Path, agent_data: &Path) -> PathBuf {
        let base = match self.base {
            ScopeBase::Workspace => workspace.to_path_buf(),
            ScopeBase::AgentData => agent_data.to_path_buf(),
            ScopeBase::Root => PathBuf::from("/"),
        };
        if self.rel.is_empty() {
            base
        } else {
            base.join(&self.rel)
        }
    }
}

/// Why an agent cannot run on this zot version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinZotError {
    #[error("this agent requires zot {required} or newer; this is zot {running}")]
    TooOld { required: String, running: String },
    #[error("this agent requires zot {required} or newer; an unversioned development build ({running:?}) cannot satisfy a minimum")]
    Unversioned { required: String, running: String },
    #[error("runtime.min_zot: {0:?} is not a semver version")]
    InvalidMinimum(String),
}

/// Check `runtime.min_zot` against the running version (semver). An empty
/// or absent minimum always passes; an unparsable running version (a
/// development build) never satisfies a non-empty minimum.
pub fn check_min_zot(manifest: &Manifest, running_version: &str) -> Result<(), MinZotError> {
    let Some(required) = manifest
        .runtime
        .min_zot
        .as_deref()
        .filter(|s| !s.is_empty())
    else {
        return Ok(());
    };
    let min = semver::Version::parse(required)
        .map_err(|_| MinZotError::InvalidMinimum(required.to_string()))?;
    let running = match semver::Version::parse(running_version) {
        Ok(v) => v,
        Err(_) => {
            return Err(MinZotError::Unversioned {
                required: required.into(),
                running: running_version.into(),
            })
        }
    };
    if running < min {
        return Err(MinZotError::TooOld {
            required: required.into(),
            running: running_version.into(),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Parsing

/// Parse and validate `manifest.json` bytes. All errors are collected.
pub fn parse(bytes: &[u8]) -> Result<Parsed, Diagnostics> {
    let mut cx = Cx::default();
    let value = match strict_json(bytes) {
        Ok(v) => v,
        Err(msg) => {
            cx.err("", msg);
            return Err(cx.into_diagnostics());
        }
    };
    let Value::Object(top) = value else {
        cx.err(
            "",
            format!(
                "expected a JSON object at the top level, found {}",
                ManifestJson::kind(&value)
            ),
        );
        return Err(cx.into_diagnostics());
    };
    let manifest = check_manifest(&mut cx, &top);
    if cx.errors.is_empty() {
        Ok(Parsed {
            manifest,
            warnings: cx.warnings,
        })
    } else {
        Err(cx.into_diagnostics())
    }
}

const TOP_KEYS: &[&str] = &[
    "zotfile",
    "name",
    "version",
    "description",
    "license",
    "runtime",
    "model",
    "permissions",
    "requirements",
    "entry",
    "replace_system_prompt",
];

fn check_manifest(cx: &mut Cx, top: &Map<String, Value>) -> Manifest {
    cx.unknown_keys(top, TOP_KEYS, "");
    let mut m = Manifest::default();

    match given(top, "zotfile") {
        None => cx.err("zotfile", "required; set it to 1"),
        Some(v) => match v.as_u64() {
            Some(FORMAT_VERSION) => m.zotfile = FORMAT_VERSION,
            Some(n) => cx.err(
                "zotfile",
                format!("unsupported format version {n}; this zot understands 1"),
            ),
            None => cx.expected("zotfile", "the integer 1", v),
        },
    }

    match given(top, "name") {
        None => cx.err("name", "required"),
        Some(Value::String(s)) => match validate_name(s) {
            Ok(()) => m.name = s.clone(),
            Err(e) => cx.err("name", e.to_string()),
        },
        Some(v) => cx.expected("name", "a string", v),
    }

    m.version = cx.opt_string(top, "version", "version");
    if let Some(v) = &m.version {
        if !v.is_empty() && semver::Version::parse(v).is_err() {
            cx.warn(
                "version",
                format!("{v:?} is not a semver version (recommended, not required)"),
            );
        }
    }
    m.description = cx.opt_string(top, "description", "description");
    m.license = cx.opt_string(top, "license", "license");

    if let Some(rt) = cx.opt_object(top, "runtime", "runtime") {
        cx.unknown_keys(rt, &["min_zot"], "runtime");
        m.runtime.min_zot = cx.opt_string(rt, "min_zot", "runtime.min_zot");
        if let Some(v) = m.runtime.min_zot.as_deref().filter(|v| !v.is_empty()) {
            if semver::Version::parse(v).is_err() {
                cx.err(
                    "runtime.min_zot",
                    format!("{v:?} is not a semver version (like \"0.3.0\")"),
                );
            }
        }
    }

    if let Some(model) = cx.opt_object(top, "model", "model") {
        check_model(cx, model, &mut m.model);
    }
    if let Some(perms) = cx.opt_object(top, "permissions", "permissions") {
        check_permissions(cx, perms, &mut m.permissions);
    }
    if let Some(req) = cx.opt_object(top, "requirements", "requirements") {
        cx.unknown_keys(req, &["os", "bin"], "requirements");
        m.requirements.os = cx.string_list(req, "os", "requirements.os", check_os);
        m.requirements.bin = cx.string_list(req, "bin", "requirements.bin", check_command_name);
    }
    if let Some(entry) = cx.opt_object(top, "entry", "entry") {
        cx.unknown_keys(entry, &["greeting", "pre", "default_prompt"], "entry");
        m.entry.greeting = cx.opt_string(entry, "greeting", "entry.greeting");
        m.entry.pre = cx.opt_string(entry, "pre", "entry.pre");
        m.entry.default_prompt = cx.opt_string(entry, "default_prompt", "entry.default_prompt");
    }
    if let Some(v) = given(top, "replace_system_prompt") {
        m.replace_system_prompt = cx.bool(v, "replace_system_prompt").unwrap_or_default();
    }
    m
}

fn check_model(cx: &mut Cx, model: &Map<String, Value>, out: &mut Model) {
    cx.unknown_keys(
        model,
        &["requires", "min_context", "preferred", "min_tier"],
        "model",
    );
    let caps = cx.string_list(model, "requires", "model.requires", |s| match s {
        "tools" | "reasoning" | "vision" => Ok(()),
        "tool_calling" | "tool-calling" | "tool_use" | "function_calling" => {
            Err(format!("{s:?} is not a capability; use \"tools\""))
        }
        other => Err(format!(
            "unknown capability {other:?} (known: tools, reasoning, vision)"
        )),
    });
    let mut seen = BTreeSet::new();
    for c in caps {
        let cap = match c.as_str() {
            "tools" => Capability::Tools,
            "reasoning" => Capability::Reasoning,
            _ => Capability::Vision,
        };
        if seen.insert(cap) {
            out.requires.push(cap);
        }
    }
    if let Some(v) = given(model, "min_context") {
        match v.as_u64() {
            Some(n) => out.min_context = Some(n),
            None => cx.expected("model.min_context", "a non-negative integer", v),
        }
    }
    out.preferred = cx.string_list(model, "preferred", "model.preferred", |s| {
        if s.trim().is_empty() {
            Err("empty model id".into())
        } else {
            Ok(())
        }
    });
    out.min_tier = cx.opt_string(model, "min_tier", "model.min_tier");
    if let Some(t) = out.min_tier.as_deref().filter(|t| !t.is_empty()) {
        cx.err(
            "model.min_tier",
            format!(
                "{t:?}: tiers are not supported by the local runtime; leave it empty or omit it"
            ),
        );
    }
}

fn check_permissions(cx: &mut Cx, perms: &Map<String, Value>, out: &mut Permissions) {
    cx.unknown_keys(perms, &["fs", "bash", "net", "env"], "permissions");
    if let Some(fs) = cx.opt_object(perms, "fs", "permissions.fs") {
        cx.unknown_keys(fs, &["read", "write"], "permissions.fs");
        out.fs.read = cx.string_list(fs, "read", "permissions.fs.read", |s| {
            FsScope::parse(s).map(|_| ())
        });
        out.fs.write = cx.string_list(fs, "write", "permissions.fs.write", |s| {
            FsScope::parse(s).map(|_| ())
        });
    }
    if let Some(bash) = cx.opt_object(perms, "bash", "permissions.bash") {
        cx.unknown_keys(bash, &["mode", "allow"], "permissions.bash");
        let mode = cx.opt_string(bash, "mode", "permissions.bash.mode");
        let mut mode_ok = true;
        out.bash.mode = match mode.as_deref() {
            None | Some("none") => BashMode::None,
            Some("ask") => BashMode::Ask,
            Some("allowlist") => BashMode::Allowlist,
            Some(other) => {
                mode_ok = false;
                cx.err(
                    "permissions.bash.mode",
                    format!("unknown mode {other:?} (known: none, ask, allowlist)"),
                );
                BashMode::None
            }
        };
        let present = matches!(bash.get("allow"), Some(v) if !v.is_null());
        out.bash.allow =
            cx.string_list(bash, "allow", "permissions.bash.allow", check_command_name);
        if out.bash.mode == BashMode::Allowlist
            && out.bash.allow.is_empty()
            && !cx.has_error_under("permissions.bash.allow")
        {
            cx.err(
                "permissions.bash.allow",
                "mode \"allowlist\" needs at least one command",
            );
        }
        if mode_ok && out.bash.mode != BashMode::Allowlist && present && !out.bash.allow.is_empty()
        {
            cx.warn(
                "permissions.bash.allow",
                format!(
                    "ignored: only used when mode is \"allowlist\" (mode is {:?})",
                    out.bash.mode.as_str()
                ),
            );
        }
    }
    if let Some(net) = cx.opt_object(perms, "net", "permissions.net") {
        cx.unknown_keys(net, &["allow"], "permissions.net");
        out.net.allow = cx.string_list(net, "allow", "permissions.net.allow", check_host);
    }
    if let Some(env) = cx.opt_object(perms, "env", "permissions.env") {
        cx.unknown_keys(env, &["read"], "permissions.env");
        out.env.read = cx.string_list(env, "read", "permissions.env.read", check_env_name);
    }
}

fn check_os(s: &str) -> Result<(), String> {
    if GO_OS_NAMES.contains(&s) {
        return Ok(());
    }
    let hint = match s.to_ascii_lowercase().as_str() {
        "macos" | "osx" | "mac" | "macosx" | "darwin" => " (did you mean \"darwin\"?)",
        "win" | "win32" | "win64" | "windows" => " (did you mean \"windows\"?)",
        "linux" | "gnu/linux" => " (did you mean \"linux\"?)",
        _ => "",
    };
    Err(format!(
        "unknown operating system {s:?}{hint}; use Go OS names such as linux, darwin, windows"
    ))
}

/// A bare command name: what `bash.allow` and `requirements.bin` hold.
fn check_command_name(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("empty command name".into());
    }
    if s.contains('/') {
        let base = s.rsplit('/').next().unwrap_or("");
        return Err(format!(
            "{s:?}: use the bare command name{}",
            if base.is_empty() {
                String::new()
            } else {
                format!(" ({base:?})")
            }
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+' | '@' | ':')))
    {
        return Err(format!("{s:?}: {c:?} is not allowed in a command name"));
    }
    if s == "." || s == ".." {
        return Err(format!("{s:?} is not a command name"));
    }
    Ok(())
}

/// One `permissions.net.allow` entry: the rule syntax of [`crate::net`].
fn check_host(s: &str) -> Result<(), String> {
    s.parse::<crate::net::HostRule>()
        .map(|_| ())
        .map_err(|e| format!("{s:?}: {e}"))
}

/// One `permissions.env.read` entry: a variable name, or `PREFIX_*` (see
/// [`crate::env::EnvName`]).
fn check_env_name(s: &str) -> Result<(), String> {
    crate::env::EnvName::parse(s)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The manifest's JSON values, for the validator walker. Paths name keys
/// as they are written (no quoting).
struct ManifestJson;

impl Dialect for ManifestJson {
    type Value = Value;
    const TABLE: &'static str = "an object";
    const BOOLEAN: &'static str = "true or false";
    const QUOTE_KEYS: bool = false;

    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(n) if n.is_f64() => "a fractional number",
            Value::Number(n) if n.is_i64() && n.as_i64().is_some_and(|i| i < 0) => {
                "a negative number"
            }
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// The value of `key`; a `null` is the same as leaving the key out.
fn given<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

type Cx = Walker<ManifestJson>;

/// The manifest's own rules, on top of the walker's.
impl Cx {
    fn into_diagnostics(self) -> Diagnostics {
        Diagnostics {
            errors: self.errors,
            warnings: self.warnings,
        }
    }

    fn unknown_keys(&mut self, map: &Map<String, Value>, known: &[&str], path: &str) {
        for key in map.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let best = known
                .iter()
                .map(|k| (strsim::damerau_levenshtein(key, k), *k))
                .filter(|(d, k)| *d <= 2 && *d < k.len().max(2))
                .min();
            let hint = match best {
                Some((_, k)) => format!("unknown field, ignored (did you mean `{k}`?)"),
                None => "unknown field, ignored".to_string(),
            };
            self.warn(&self.key(path, key), hint);
        }
    }

    fn opt_string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        self.string(given(map, key)?, path)
    }

    fn opt_object<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<&'a Map<String, Value>> {
        self.table(given(map, key)?, path)
    }

    /// An optional array of strings; each item checked by `check`. Invalid
    /// items are reported (with their index) and left out.
    fn string_list(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        path: &str,
        check: impl Fn(&str) -> Result<(), String>,
    ) -> Vec<String> {
        let Some(items) = given(map, key).and_then(|v| self.array(v, path, "an array of strings"))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => match check(s) {
                    Ok(()) => {
                        if !out.contains(s) {
                            out.push(s.clone());
                        }
                    }
                    Err(msg) => self.err(path, format!("item {i}: {msg}")),
                },
                v => self.err(
                    path,
                    format!(
                        "item {i}: expected a string, found {}",
                        ManifestJson::kind(v)
                    ),
                ),
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Strict JSON: like serde_json::Value, but duplicate object keys are errors.

fn strict_json(bytes: &[u8]) -> Result<Value, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not valid UTF-8: {e}"))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let v = StrictValue::deserialize(&mut de).map_err(|e| format!("not valid JSON: {e}"))?;
    de.end().map_err(|e| format!("not valid JSON: {e}"))?;
    Ok(v.0)
}
