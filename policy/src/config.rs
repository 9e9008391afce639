//! zot's user configuration file (`config.toml`): its location rule, its
//! typed model and a strict validator. Pure: the caller reads the file and
//! passes the text; every finding is a [`Diagnostic`] naming the key path.
//!
//! Unknown keys are errors with a "did you mean" hint: a misspelt setting
//! that were silently ignored would leave the user believing it applies.
//! Every string value is also checked for literal credentials: zot never
//! reads keys from this file (`api_key_env` names the variable instead).
//!
//! Adding a section: list its name in [`SECTIONS`], add a field to
//! [`Config`], and a `section_*` function that walks the table with the
//! crate's validator walker (which records errors with their paths);
//! `Config::default()` must stay the behaviour of a missing file.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use toml::Value;

use crate::agent_toml::secrets::looks_like_secret;
use crate::diagnostic::{suggest, Diagnostic};
use crate::validate::{self, Dialect};

/// The file name inside the config directory.
pub const FILE_NAME: &str = "config.toml";

/// Top-level tables of the file.
pub const SECTIONS: &[&str] = &[
    "defaults",
    "http",
    "providers",
    "models",
    "trust",
    "sandbox",
    "context",
    "registries",
];

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI Chat Completions (any OpenAI-compatible server).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Api {
    pub const ALL: [Api; 2] = [Api::OpenAi, Api::Anthropic];

    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// The providers built into zot (besides the offline `sim`), each named
/// after its wire format.
pub const BUILTIN_PROVIDERS: [Api; 2] = Api::ALL;

/// The offline simulator's provider name: built in, no settings.
pub const SIM_PROVIDER: &str = "sim";

/// `--reasoning` / `defaults.reasoning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 3] = [
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    pub fn parse(s: &str) -> Option<ReasoningEffort> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ReasoningEffort::parse(s).ok_or_else(|| format!("expected low, medium or high, got {s:?}"))
    }
}

/// The whole file. `Config::default()` is what a missing file means.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub defaults: Defaults,
    /// Network settings for every provider (each provider may override).
    pub http: HttpSettings,
    /// `[providers.NAME]`: settings of a built-in provider, or a custom one.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[[models]]`: models the catalog does not know (or corrections).
    pub models: Vec<ModelEntry>,
    /// `[trust]`: what `zot run` requires of an agent's publisher.
    pub trust: Trust,
    /// `[sandbox]`: resource limits of every sandbox.
    pub sandbox: SandboxSettings,
    /// `[context]`: compaction of long conversations and tool-output budgets.
    pub context: ContextSettings,
    /// `[registries."HOST[:PORT]"]`: per-registry settings of OCI
    /// references (`zot install`, `zot publish`, `zot run REGISTRY/REPO`).
    pub registries: BTreeMap<String, RegistrySettings>,
}

/// One `[registries."HOST[:PORT]"]` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegistrySettings {
    /// Talk plain HTTP to this registry (loopback registries always may).
    pub insecure: bool,
}

/// `[context]`: when a conversation is compacted and how much of it is
/// kept. Settings left out take zot's defaults (relative to the model's
/// context window).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ContextSettings {
    /// Compact automatically before a request would not fit, and when the
    /// server says it did not (default true).
    pub auto_compact: Option<bool>,
    /// Tokens kept free for the model's answer: compaction starts when the
    /// conversation passes `window - reserve_tokens`.
    pub reserve_tokens: Option<u64>,
    /// Tokens of the most recent turns kept verbatim by a compaction.
    pub keep_recent_tokens: Option<u64>,
    /// Most tokens of one tool result shown to the model (head and tail).
    pub tool_output_tokens: Option<u64>,
}

/// The keys of `[context]`.
pub const CONTEXT_KEYS: &[&str] = &[
    "auto_compact",
    "reserve_tokens",
    "keep_recent_tokens",
    "tool_output_tokens",
];

/// `[sandbox]`: `tmp_size` (`"512M"` or bytes), `max_procs`,
/// `max_file_size` (command-line flags win), and `deny_read`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxSettings {
    pub tmp_size: Option<u64>,
    pub max_procs: Option<u64>,
    pub max_file_size: Option<u64>,
    /// `memory`: of all the sandbox's processes together (`--memory`).
    pub memory: Option<u64>,
    /// `tmp_inodes`: of each private tmpfs (`--tmp-inodes`).
    pub tmp_inodes: Option<u64>,
    /// `deny_read`: more paths unreadable in the full-read modes (absolute,
    /// or `~/...` for the caller's home), on top of the built-in list.
    pub deny_read: Vec<PathBuf>,
}

impl SandboxSettings {
    /// The limits these settings give (defaults for what is not set).
    pub fn limits(&self) -> crate::limits::Limits {
        let d = crate::limits::Limits::default();
        crate::limits::Limits {
            tmp_size: self.tmp_size.unwrap_or(d.tmp_size),
            max_procs: self.max_procs.unwrap_or(d.max_procs),
            max_file_size: self.max_file_size.unwrap_or(d.max_file_size),
            memory: self.memory.unwrap_or(d.memory),
            tmp_inodes: self.tmp_inodes.unwrap_or(d.tmp_inodes),
        }
    }
}

/// `[trust]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trust {
    /// Refuse agents without a valid signature by a trusted key, as
    /// `zot run --require-signature` does.
    pub require_signature: bool,
}

/// `[defaults]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Applied to reasoning-capable models when `--reasoning` is not given.
    pub reasoning: Option<ReasoningEffort>,
}

/// Timeouts and retries (`[http]`, or inside a provider's table).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HttpSettings {
    pub connect_timeout: Option<Duration>,
    /// From sending the request to the response headers.
    pub first_byte_timeout: Option<Duration>,
    /// Longest silence inside a streamed response.
    pub idle_timeout: Option<Duration>,
    /// Attempts per model request, the first included.
    pub max_attempts: Option<u32>,
}

impl HttpSettings {
    /// `self` where set, else `fallback`.
    pub fn or(self, fallback: HttpSettings) -> HttpSettings {
        HttpSettings {
            connect_timeout: self.connect_timeout.or(fallback.connect_timeout),
            first_byte_timeout: self.first_byte_timeout.or(fallback.first_byte_timeout),
            idle_timeout: self.idle_timeout.or(fallback.idle_timeout),
            max_attempts: self.max_attempts.or(fallback.max_attempts),
        }
    }
}

/// `[providers.NAME]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderConfig {
    /// The wire format (required for a custom provider; a built-in one's
    /// is fixed).
    pub api: Option<Api>,
    /// Without a trailing slash.
    pub base_url: Option<String>,
    /// The environment variable holding the key; `Some("")`: the server
    /// needs no key.
    pub api_key_env: Option<String>,
    pub http: HttpSettings,
}

/// One `[[models]]` entry. Capabilities left out are unknown, and unknown
/// capabilities never satisfy a manifest's requirements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelEntry {
    pub id: String,
    pub provider: String,
    pub context_window: Option<u64>,
    pub reasoning: Option<bool>,
    pub vision: Option<bool>,
    pub max_output_tokens: Option<u64>,
}

/// Where the config file is: `$ZOT_HOME/config.toml` when `ZOT_HOME` is
/// set, else `$XDG_CONFIG_HOME/zot/config.toml`, else
/// `~/.config/zot/config.toml`. Relative (invalid) values are skipped, as
/// the XDG rules say; `None` when nothing gives an absolute directory.
pub fn path_from(get: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let abs = |k: &str| {
        get(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(h) = abs("ZOT_HOME") {
        return Some(h.join(FILE_NAME));
    }
    if let Some(x) = abs("XDG_CONFIG_HOME") {
        return Some(x.join("zot").join(FILE_NAME));
    }
    abs("HOME").map(|h| h.join(".config/zot").join(FILE_NAME))
}

/// Parse and validate the file's text. All findings are returned at once.
pub fn parse(text: &str) -> Result<Config, Vec<Diagnostic>> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        vec![Diagnostic {
            path: String::new(),
            message: format!("invalid TOML: {}", e.to_string().trim()),
        }]
    })?;
    let mut w = Walker::default();
    let mut cfg = Config::default();
    for (k, v) in &table {
        match k.as_str() {
            "defaults" => cfg.defaults = section_defaults(&mut w, v),
            "http" => {
                if let Some(t) = w.table(v, "http") {
                    cfg.http = http_settings(&mut w, t, "http", &[]);
                }
            }
            "providers" => cfg.providers = section_providers(&mut w, v),
            "models" => cfg.models = section_models(&mut w, v),
            "trust" => cfg.trust = section_trust(&mut w, v),
            "sandbox" => cfg.sandbox = section_sandbox(&mut w, v),
            "context" => cfg.context = section_context(&mut w, v),
            "registries" => cfg.registries = section_registries(&mut w, v),
            _ => w.unknown("", k, SECTIONS),
        }
    }
    cross_check(&mut w, &cfg);
    if w.errors.is_empty() {
        Ok(cfg)
    } else {
        Err(w.errors)
    }
}

impl Config {
    /// Every provider name the file makes known: `sim`, the built-in ones,
    /// then the custom ones.
    pub fn provider_names(&self) -> Vec<&str> {
        let mut v = vec![SIM_PROVIDER];
        v.extend(BUILTIN_PROVIDERS.iter().map(|a| a.as_str()));
        for k in self.providers.keys() {
            if !v.contains(&k.as_str()) {
                v.push(k);
            }
        }
        v
    }
}

const PROVIDER_KEYS: &[&str] = &[
    "api",
    "base_url",
    "api_key_env",
    "connect_timeout",
    "first_byte_timeout",
    "idle_timeout",
    "max_attempts",
];
const HTTP_KEYS: &[&str] = &[
    "connect_timeout",
    "first_byte_timeout",
    "idle_timeout",
    "max_attempts",
];
const MODEL_KEYS: &[&str] = &[
    "id",
    "provider",
    "context_window",
    "reasoning",
    "vision",
    "max_output_tokens",
];
/// Longest timeout accepted (one hour).
const MAX_TIMEOUT_SECS: f64 = 3600.0;
/// Most attempts per request accepted.
pub const MAX_ATTEMPTS_LIMIT: u32 = 10;

fn section_trust(w: &mut Walker, v: &Value) -> Trust {
    let mut t = Trust::default();
    let Some(table) = w.table(v, "trust") else {
        return t;
    };
    for (k, v) in table {
        match k.as_str() {
            "require_signature" => {
                t.require_signature = w.bool(v, &w.key("trust", k)).unwrap_or(false)
            }
            _ => w.unknown("trust", k, &["require_signature"]),
        }
    }
    t
}

fn section_context(w: &mut Walker, v: &Value) -> ContextSettings {
    let mut c = ContextSettings::default();
    let Some(table) = w.table(v, "context") else {
        return c;
    };
    for (k, v) in table {
        let p = w.key("context", k);
        let tokens = |w: &mut Walker| w.int(v, &p, 1, 1 << 40).map(|n| n as u64);
        match k.as_str() {
            "auto_compact" => c.auto_compact = w.bool(v, &p),
            "reserve_tokens" => c.reserve_tokens = tokens(w),
            "keep_recent_tokens" => c.keep_recent_tokens = tokens(w),
            "tool_output_tokens" => c.tool_output_tokens = tokens(w),
            _ => w.unknown("context", k, CONTEXT_KEYS),
        }
    }
    c
}

/// `[registries."HOST[:PORT]"]`: the key is a registry host as OCI
/// references name it (lowercase letters, digits, `.`, `-`, an optional
/// `:PORT`).
fn section_registries(w: &mut Walker, v: &Value) -> BTreeMap<String, RegistrySettings> {
    let mut out = BTreeMap::new();
    let Some(table) = w.table(v, "registries") else {
        return out;
    };
    for (host, v) in table {
        let path = w.key("registries", host);
        if !is_registry_host(host) {
            w.err(
                &path,
                "not a registry host (expected HOST or HOST:PORT, e.g. \"registry.example.com\" or \"localhost:5000\")",
            );
            continue;
        }
        let Some(t) = w.table(v, &path) else {
            continue;
        };
        let mut r = RegistrySettings::default();
        for (k, v) in t {
            match k.as_str() {
                "insecure" => r.insecure = w.bool(v, &w.key(&path, k)).unwrap_or(false),
                _ => w.unknown(&path, k, &["insecure"]),
            }
        }
        out.insert(host.clone(), r);
    }
    out
}

/// `HOST[:PORT]` as an OCI reference's registry part: a DNS name or IPv4
/// address of lowercase letters, digits, `.` and `-`, or a bracketed IPv6
/// address, then an optional decimal port.
pub fn is_registry_host(s: &str) -> bool {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((h, after)) = rest.split_once(']') else {
            return false;
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            p => match p.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return false,
            },
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let host_ok = s.starts_with('[')
        || (!host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            }));
    let port_ok = port.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|n| n > 0)
    });
    host_ok && port_ok
}

fn section_sandbox(w: &mut Walker, v: &Value) -> SandboxSettings {
    use crate::limits::{
        check_max_procs, check_memory, check_tmp_inodes, check_tmp_size, parse_size,
    };
    let mut s = SandboxSettings::default();
    let Some(table) = w.table(v, "sandbox") else {
        return s;
    };
    let size = |w: &mut Walker, v: &Value, p: &str| -> Option<u64> {
        let r = match v {
            Value::Integer(n) if *n >= 0 => Ok(*n as u64),
            Value::String(t) => parse_size(t),
            other => {
                w.expected(p, "a size such as \"512M\" or a number of bytes", other);
                return None;
            }
        };
        r.map_err(|e| w.err(p, e)).ok()
    };
    for (k, v) in table {
        let p = w.key("sandbox", k);
        match k.as_str() {
            "tmp_size" => {
                s.tmp_size =
                    size(w, v, &p).and_then(|n| check_tmp_size(n).map_err(|e| w.err(&p, e)).ok())
            }
            "max_file_size" => {
                s.max_file_size =
                    size(w, v, &p).and_then(|n| check_tmp_size(n).map_err(|e| w.err(&p, e)).ok())
            }
            "memory" => {
                s.memory =
                    size(w, v, &p).and_then(|n| check_memory(n).map_err(|e| w.err(&p, e)).ok())
            }
            "tmp_inodes" => {
                s.tmp_inodes = w
                    .int(v, &p, 1, i64::MAX)
                    .and_then(|n| check_tmp_inodes(n as u64).map_err(|e| w.err(&p, e)).ok())
            }
            "max_procs" => {
                s.max_procs = w
                    .int(v, &p, 1, 1 << 22)
                    .and_then(|n| check_max_procs(n as u64).map_err(|e| w.err(&p, e)).ok())
            }
            "deny_read" => {
                let Some(items) = w.array(v, &p, "an array of paths") else {
                    continue;
                };
                for (i, item) in items.iter().enumerate() {
                    let ip = w.index(&p, i);
                    let Some(text) = w.string(item, &ip) else {
                        continue;
                    };
                    let path = PathBuf::from(&text);
                    let home_rel = text == "~" || text.starts_with("~/");
                    let dotted = path.components().any(|c| {
                        matches!(
                            c,
                            std::path::Component::CurDir | std::path::Component::ParentDir
                        )
                    });
                    if !(path.is_absolute() || home_rel) {
                        w.err(
                            &ip,
                            format!("`{text}` is not absolute (write `/...` or `~/...`)"),
                        );
                    } else if dotted {
                        w.err(&ip, format!("`{text}` contains `.` or `..` components"));
                    } else {
                        s.deny_read.push(path);
                    }
                }
            }
            _ => w.unknown(
                "sandbox",
                k,
                &[
                    "tmp_size",
                    "max_procs",
                    "max_file_size",
                    "memory",
                    "tmp_inodes",
                    "deny_read",
                ],
            ),
        }
    }
    s
}

fn section_defaults(w: &mut Walker, v: &Value) -> Defaults {
    let mut d = Defaults::default();
    let Some(t) = w.table(v, "defaults") else {
        return d;
    };
    for (k, v) in t {
        let p = w.key("defaults", k);
        match k.as_str() {
            "provider" => d.provider = w.name(v, &p),
            "model" => d.model = w.nonempty(v, &p),
            "reasoning" => {
                let names = ReasoningEffort::ALL.map(ReasoningEffort::as_str);
                d.reasoning = w
                    .enumeration(v, &p, &names)
                    .and_then(|s| ReasoningEffort::parse(&s))
            }
            _ => w.unknown("defaults", k, &["provider", "model", "reasoning"]),
        }
    }
    d
}

fn http_settings(w: &mut Walker, t: &toml::Table, path: &str, extra_keys: &[&str]) -> HttpSettings {
    let mut h = HttpSettings::default();
    for (k, v) in t {
        let p = w.key(path, k);
        match k.as_str() {
            "connect_timeout" => h.connect_timeout = w.seconds(v, &p),
            "first_byte_timeout" => h.first_byte_timeout = w.seconds(v, &p),
            "idle_timeout" => h.idle_timeout = w.seconds(v, &p),
            "max_attempts" => {
                h.max_attempts = w.int(v, &p, 1, MAX_ATTEMPTS_LIMIT as i64).map(|n| n as u32)
            }
            k if extra_keys.contains(&k) => {}
            _ if extra_keys.is_empty() => w.unknown(path, k, HTTP_KEYS),
            _ => w.unknown(path, k, PROVIDER_KEYS),
        }
    }
    h
}

fn section_providers(w: &mut Walker, v: &Value) -> BTreeMap<String, ProviderConfig> {
    let mut out = BTreeMap::new();
    let Some(t) = w.table(v, "providers") else {
        return out;
    };
    for (name, v) in t {
        let path = w.key("providers", name);
        if !valid_name(name) {
            w.err(
                &path,
                "a provider name uses lowercase letters, digits, `-` and `_`, starting with a letter",
            );
            continue;
        }
        if name == SIM_PROVIDER {
            w.err(
                &path,
                "the `sim` provider is built in and takes no settings",
            );
            continue;
        }
        let Some(t) = w.table(v, &path) else { continue };
        let mut pc = ProviderConfig {
            http: http_settings(w, t, &path, &["api", "base_url", "api_key_env"]),
            ..Default::default()
        };
        for (k, v) in t {
            let p = w.key(&path, k);
            match k.as_str() {
                "api" => {
                    pc.api = w.string(v, &p).and_then(|s| {
                        let a = Api::parse(&s);
                        if a.is_none() {
                            w.err(
                                &p,
                                format!(
                                    "unsupported value `{s}`; expected `openai` or `anthropic`"
                                ),
                            );
                        }
                        a
                    })
                }
                "base_url" => pc.base_url = w.url(v, &p),
                "api_key_env" => pc.api_key_env = w.env_name(v, &p),
                _ => {}
            }
        }
        let builtin = Api::parse(name);
        match (builtin, pc.api) {
            (Some(b), Some(a)) if a != b => w.err(
                &w.key(&path, "api"),
                format!("the built-in `{name}` provider speaks `{}`; name a custom provider to use `{}`", b.as_str(), a.as_str()),
            ),
            (Some(b), _) => pc.api = Some(b),
            (None, None) if !w.has_error_under(&w.key(&path, "api")) => w.err(
                &w.key(&path, "api"),
                "required for a custom provider: `openai` or `anthropic`",
            ),
            _ => {}
        }
        if builtin.is_none() {
            if pc.base_url.is_none() && !w.has_error_under(&w.key(&path, "base_url")) {
                w.err(&w.key(&path, "base_url"), "required for a custom provider");
            }
            if pc.api_key_env.is_none() && !w.has_error_under(&w.key(&path, "api_key_env")) {
                w.err(
                    &w.key(&path, "api_key_env"),
                    "required for a custom provider: the variable holding its key, or \"\" when the server needs none",
                );
            }
        }
        out.insert(name.clone(), pc);
    }
    out
}

fn section_models(w: &mut Walker, v: &Value) -> Vec<ModelEntry> {
    let mut out = Vec::new();
    let Some(items) = w.array(v, "models", "an array of tables (`[[models]]`)") else {
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        let path = w.index("models", i);
        let Some(t) = w.table(item, &path) else {
            continue;
        };
        let mut m = ModelEntry::default();
        let (mut id, mut provider) = (None, None);
        for (k, v) in t {
            let p = w.key(&path, k);
            match k.as_str() {
                "id" => id = w.nonempty(v, &p),
                "provider" => provider = w.name(v, &p),
                "context_window" => m.context_window = w.int(v, &p, 1, i64::MAX).map(|n| n as u64),
                "max_output_tokens" => {
                    m.max_output_tokens = w.int(v, &p, 1, i64::MAX).map(|n| n as u64)
                }
                "reasoning" => m.reasoning = w.bool(v, &p),
                "vision" => m.vision = w.bool(v, &p),
                _ => w.unknown(&path, k, MODEL_KEYS),
            }
        }
        for (field, val) in [("id", &id), ("provider", &provider)] {
            if val.is_none() && !w.has_error_under(&w.key(&path, field)) {
                w.err(&w.key(&path, field), "required");
            }
        }
        if let (Some(id), Some(provider)) = (id, provider) {
            m.id = id;
            m.provider = provider;
            out.push(m);
        }
    }
    out
}

fn cross_check(w: &mut Walker, cfg: &Config) {
    let names = cfg.provider_names();
    let check = |w: &mut Walker, name: &str, path: &str| {
        if !names.contains(&name) {
            let mut msg = format!("unknown provider `{name}`");
            if let Some(s) = suggest(name, &names) {
                msg.push_str(&format!("; did you mean `{s}`?"));
            } else {
                msg.push_str(&format!(
                    "; known: {} (add a `[providers.{name}]` table for a custom one)",
                    names.join(", ")
                ));
            }
            w.err(path, msg);
        }
    };
    if let Some(p) = &cfg.defaults.provider {
        check(w, p, "defaults.provider");
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, m) in cfg.models.iter().enumerate() {
        let entry = w.index("models", i);
        let path = w.key(&entry, "provider");
        if m.provider == SIM_PROVIDER {
            w.err(&path, "the `sim` provider has one model, `sim`");
            continue;
        }
        check(w, &m.provider, &path);
        if seen.contains(&(m.provider.as_str(), m.id.as_str())) {
            w.err(
                &w.key(&entry, "id"),
                format!("`{}` is declared twice for provider `{}`", m.id, m.provider),
            );
        }
        seen.push((&m.provider, &m.id));
    }
}

fn valid_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_')
        && s.len() <= 64
}

/// The config file's TOML values, for the validator walker.
struct ConfigToml;

impl Dialect for ConfigToml {
    type Value = Value;
    const TABLE: &'static str = "a table";
    const BOOLEAN: &'static str = "true or false";
    const QUOTE_KEYS: bool = true;

    fn kind(v: &Value) -> &'static str {
        match v {
            Value::String(_) => "a string",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime(_) => "a date-time",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }

    /// zot never reads keys from its config file.
    fn refuse_string(s: &str) -> Option<&'static str> {
        looks_like_secret(s).then_some(
            "this looks like a literal credential: zot never reads keys from its config file (name the variable that holds it with `api_key_env`)",
        )
    }
}

/// Sections of the file walk it with this; new sections should too.
type Walker = validate::Walker<ConfigToml>;

/// The config file's own value rules, on top of the walker's.
impl Walker {
    /// An unknown key in the table at `table_path`, with a close known key
    /// when there is one. Keys that would hold a secret get the rule.
    fn unknown(&mut self, table_path: &str, key: &str, known: &[&str]) {
        let mut msg = format!("unknown key `{key}`");
        let lower = key.to_ascii_lowercase();
        if ["api_key", "key", "token", "secret", "password", "apikey"]
            .iter()
            .any(|s| lower == *s || lower.ends_with(&format!("_{s}")))
        {
            msg.push_str(
                "; zot never reads keys from its config file: put the key in an environment variable and name the variable with `api_key_env`",
            );
        } else if let Some(best) = suggest(key, known) {
            msg.push_str(&format!("; did you mean `{best}`?"));
        } else if !known.is_empty() {
            let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            msg.push_str(&format!("; expected one of {}", list.join(", ")));
        }
        self.err(&self.key(table_path, key), msg);
    }

    /// A provider name (lowercase letters, digits, `-`, `_`).
    fn name(&mut self, v: &Value, path: &str) -> Option<String> {
        let s = self.nonempty(v, path)?;
        if !valid_name(&s) {
            self.err(
                path,
                format!("`{s}` is not a provider name (lowercase letters, digits, `-` and `_`)"),
            );
            return None;
        }
        Some(s)
    }

    /// A positive number of seconds (integer or float), at most an hour.
    fn seconds(&mut self, v: &Value, path: &str) -> Option<Duration> {
        let s = match v {
            Value::Integer(n) => *n as f64,
            Value::Float(f) => *f,
            other => {
                self.expected(path, "a number of seconds", other);
                return None;
            }
        };
        if !(s > 0.0 && s <= MAX_TIMEOUT_SECS) {
            self.err(
                path,
                format!("must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds, found {s}"),
            );
            return None;
        }
        Some(Duration::from_secs_f64(s))
    }

    /// An `http://` or `https://` base URL without query or fragment;
    /// returned without a trailing slash.
    fn url(&mut self, v: &Value, path: &str) -> Option<String> {
        let s = self.nonempty(v, path)?;
        match check_base_url(&s) {
            Ok(u) => Some(u),
            Err(m) => {
                self.err(path, m);
                None
            }
        }
    }

    /// An environment variable name, or `""` (no key needed).
    fn env_name(&mut self, v: &Value, path: &str) -> Option<String> {
        let s = self.string(v, path)?;
        if s.is_empty() || is_env_name(&s) {
            return Some(s);
        }
        self.err(
            path,
            format!("`{s}` is not an environment variable name (letters, digits and `_`, not starting with a digit)"),
        );
        None
    }
}

/// True for a portable environment variable name.
pub fn is_env_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Check a provider base URL (from the config or an `*_BASE_URL`
/// variable): `http(s)://host[:port][/path]`, no credentials, query or
/// fragment. Returns it without trailing slashes.
pub fn check_base_url(s: &str) -> Result<String, String> {
    let s = s.trim();
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| format!("`{s}` is not an http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        return Err(format!("`{s}` has no host"));
    }
    if host.contains('@') {
        return Err(format!(
            "`{s}` carries credentials: put the key in the variable `api_key_env` names"
        ));
    }
    if s.contains('?') || s.contains('#') {
        return Err(format!("`{s}` must not have a query or fragment"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{s}` contains whitespace"));
    }
    Ok(s.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_deny_read() {
        let c = parse("[sandbox]\ndeny_read = [\"~/notes\", \"/srv/keys\"]\n").unwrap();
        assert_eq!(
            c.sandbox.deny_read,
            vec![PathBuf::from("~/notes"), PathBuf::from("/srv/keys")]
        );
        let e = parse("[sandbox]\ndeny_read = [\"rel\", \"/a/../b\"]\nnope = 1\n").unwrap_err();
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert!(paths.contains(&"sandbox.deny_read[0]"), "{e:?}");
        assert!(paths.contains(&"sandbox.deny_read[1]"), "{e:?}");
        assert!(paths.contains(&"sandbox.nope"), "{e:?}");
    }

    #[test]
    fn context_section() {
        let c = parse("[context]\nauto_compact = false\nreserve_tokens = 2000\nkeep_recent_tokens = 3000\ntool_output_tokens = 500\n").unwrap();
        assert_eq!(
            c.context,
            ContextSettings {
                auto_compact: Some(false),
                reserve_tokens: Some(2000),
                keep_recent_tokens: Some(3000),
                tool_output_tokens: Some(500),
            }
        );
        let e = errors("[context]\nauto_compact = 1\nreserve_tokens = 0\nkeep_recent = 5\n");
        let all = e.join("\n");
        assert!(all.contains("context.auto_compact"), "{all}");
        assert!(all.contains("context.reserve_tokens"), "{all}");
        assert!(all.contains("did you mean `keep_recent_tokens`"), "{all}");
    }

    fn errors(text: &str) -> Vec<String> {
        parse(text)
            .unwrap_err()
            .into_iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn sandbox_section() {
        let c = parse("[sandbox]\ntmp_size = \"1G\"\nmax_procs = 2048\nmax_file_size = 1048576\n")
            .unwrap();
        assert_eq!(c.sandbox.tmp_size, Some(1 << 30));
        assert_eq!(c.sandbox.limits().max_procs, 2048);
        assert_eq!(c.sandbox.limits().max_file_size, 1 << 20);
        assert_eq!(
            Config::default().sandbox.limits(),
            crate::limits::Limits::default()
        );
        let e = parse("[sandbox]\ntmp_size = \"12X\"\nmax_procs = 3\nmax_proc = 1\n").unwrap_err();
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert!(paths.contains(&"sandbox.tmp_size"), "{e:?}");
        assert!(paths.contains(&"sandbox.max_procs"), "{e:?}");
        assert!(paths.contains(&"sandbox.max_proc"), "{e:?}");
        let c = parse("[sandbox]\nmemory = \"2G\"\ntmp_inodes = 4096\n").unwrap();
        assert_eq!(c.sandbox.limits().memory, 2 << 30);
        assert_eq!(c.sandbox.limits().tmp_inodes, 4096);
        for bad in [
            "memory = \"1K\"",
            "memory = true",
            "tmp_inodes = 0",
            "tmp_inodes = \"many\"",
        ] {
            let e = parse(&format!("[sandbox]\n{bad}\n")).unwrap_err();
            assert!(
                e.iter().any(|d| d.path.starts_with("sandbox.")),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn full_file() {
        let c = parse(
            r#"
[defaults]
provider = "ollama"
model = "qwen3:32b"
reasoning = "high"

[http]
connect_timeout = 5
idle_timeout = 2.5

[providers.openai]
base_url = "https://proxy.example/v1/"

[providers.ollama]
api = "openai"
base_url = "http://localhost:11434/v1"
api_key_env = ""
first_byte_timeout = 600
max_attempts = 2

[[models]]
id = "qwen3:32b"
provider = "ollama"
context_window = 32768
reasoning = true
"#,
        )
        .unwrap();
        assert_eq!(c.defaults.reasoning, Some(ReasoningEffort::High));
        assert_eq!(c.http.connect_timeout, Some(Duration::from_secs(5)));
        assert_eq!(c.http.idle_timeout, Some(Duration::from_millis(2500)));
        let o = &c.providers["openai"];
        assert_eq!(o.api, Some(Api::OpenAi));
        assert_eq!(o.base_url.as_deref(), Some("https://proxy.example/v1"));
        let l = &c.providers["ollama"];
        assert_eq!(l.api_key_env.as_deref(), Some(""));
        assert_eq!(l.http.max_attempts, Some(2));
        assert_eq!(
            l.http.or(c.http).connect_timeout,
            Some(Duration::from_secs(5))
        );
        assert_eq!(c.models[0].context_window, Some(32768));
        assert_eq!(c.models[0].vision, None);
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn errors_name_the_key() {
        let e = errors("[defaults]\nprovider = \"opneai\"\n");
        assert_eq!(
            e,
            ["defaults.provider: unknown provider `opneai`; did you mean `openai`?"]
        );
        let e = errors("[providers.openai]\nbase_ur = \"http://x\"\n");
        assert!(
            e[0].starts_with("providers.openai.base_ur: unknown key")
                && e[0].contains("did you mean `base_url`"),
            "{e:?}"
        );
        let e = errors("[providers.openai]\napi_key = \"abc\"\n");
        assert!(e[0].contains("never reads keys"), "{e:?}");
        let e = errors(
            "[providers.openai]\napi_key_env = \"sk-proj-abcdefghijklmnopqrstuvwxyz0123\"\n",
        );
        assert!(e[0].contains("literal credential"), "{e:?}");
        let e = errors("[providers.x]\nbase_url = \"ftp://h\"\n");
        assert!(
            e.iter()
                .any(|m| m.starts_with("providers.x.base_url: `ftp://h` is not")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|m| m.starts_with("providers.x.api: required")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.starts_with("providers.x.api_key_env: required")),
            "{e:?}"
        );
        let e = errors("[providers.anthropic]\napi = \"openai\"\n");
        assert!(e[0].contains("built-in `anthropic` provider"), "{e:?}");
        let e = errors("[providers.sim]\n");
        assert!(e[0].contains("takes no settings"), "{e:?}");
        let e = errors("[http]\nidle_timeout = 0\nmax_attempts = 99\n");
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errors("[[models]]\nprovider = \"openai\"\ncontext = 5\n");
        assert!(e.iter().any(|m| m == "models[0].id: required"), "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.contains("did you mean `context_window`")),
            "{e:?}"
        );
        let e = errors("[[models]]\nid = \"a\"\nprovider = \"openai\"\n[[models]]\nid = \"a\"\nprovider = \"openai\"\n");
        assert!(e[0].contains("declared twice"), "{e:?}");
        let e = errors("[model]\n");
        assert!(
            e[0].starts_with("model: unknown key") && e[0].contains("did you mean `models`"),
            "{e:?}"
        );
        let e = errors("defaults = 3\n");
        assert!(e[0].contains("expected a table"), "{e:?}");
        let e = errors("[defaults\n");
        assert!(e[0].starts_with("invalid TOML"), "{e:?}");
        let e = errors("[providers.openai]\nbase_url = \"https://u:p@h/v1\"\n");
        assert!(e[0].contains("credentials"), "{e:?}");
    }

    #[test]
    fn trust_section() {
        assert!(!parse("").unwrap().trust.require_signature);
        let c = parse("[registries.\"localhost:5000\"]\ninsecure = true\n").unwrap();
        assert!(c.registries["localhost:5000"].insecure);
        for bad in [
            "[registries.\"Bad Host\"]\ninsecure = true\n",
            "[registries.\"h:99999\"]\ninsecure = true\n",
            "[registries.\"h:5000\"]\ninsecur = true\n",
            "[registries.\"h:5000\"]\ninsecure = \"yes\"\n",
            "[registries]\nh = 1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(
            parse("[trust]\nrequire_signature = true\n")
                .unwrap()
                .trust
                .require_signature
        );
        let e = errors("[trust]\nrequire_signature = \"yes\"\n");
        assert!(
            e.iter().any(|d| d.starts_with("trust.require_signature")),
            "{e:?}"
        );
        let e = errors("[trust]\nrequire_signatures = true\n");
        assert!(
            e.iter()
                .any(|d| d.contains("did you mean") && d.contains("require_signature")),
            "{e:?}"
        );
        let e = errors("require_signature = true\n");
        assert!(e.iter().any(|d| d.contains("require_signature")), "{e:?}");
    }

    #[test]
    fn location() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(a, _)| *a == k)
                    .map(|(_, b)| OsString::from(b))
            }
        };
        assert_eq!(
            path_from(env(&[("ZOT_HOME", "/z"), ("HOME", "/h")])),
            Some(PathBuf::from("/z/config.toml"))
        );
        assert_eq!(
            path_from(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/zot/config.toml"))
        );
        assert_eq!(
            path_from(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/zot/config.toml"))
        );
        assert_eq!(path_from(env(&[])), None);
    }
}
