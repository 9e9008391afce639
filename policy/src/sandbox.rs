//! Sandbox modes and the [`SandboxPolicy`] they compile to. Pure data: no
//! syscalls here (path canonicalization is done by the caller and passed in).
//!
//! CONTRACT (shared by the sandbox core, the native/landlock backends and
//! `zot run`): the type names and fields below are relied upon by other
//! crates. Extend them; do not rename them without updating every user.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The three sandbox modes of `zot sandbox --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// What the sandboxed program may see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadScope {
    /// The whole disk, minus `deny_read`.
    FullDisk,
    /// Only these paths (platform dirs, `fs.read` scopes), each read-only,
    /// plus the write roots. Used for zotfile agents.
    Restricted { paths: Vec<PathBuf> },
}

/// Network policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPolicy {
    /// No network at all (own empty network namespace / seccomp denial of
    /// non-AF_UNIX sockets).
    Off,
    /// Host network.
    On,
    /// No route out but the filtering proxy, which allows what `allow`
    /// lists (`permissions.net.allow`, `zot sandbox --allow-host`).
    Proxied {
        allow: crate::net::AllowList,
        /// The private directory the proxy's socket is created in, once
        /// the run made it (`None` when only planning, e.g. `--explain`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        socket_dir: Option<PathBuf>,
    },
}

/// Environment policy: the launcher starts from an empty environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Variables copied from the caller's environment when present (the base
    /// set plus what the user or manifest allowed). Secrets never pass unless
    /// named here explicitly.
    pub keep: Vec<String>,
    /// Variables set to fixed values (e.g. `TMPDIR=/tmp`, `HOME`).
    pub set: Vec<(String, String)>,
}

/// Everything a backend needs to build the sandbox. All paths absolute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Working directory inside the sandbox.
    pub cwd: PathBuf,
    pub read: ReadScope,
    /// Writable roots (canonical), sorted by depth.
    pub write_roots: Vec<PathBuf>,
    /// Paths inside write roots that stay read-only, whether or not they
    /// exist yet (e.g. `<root>/.git/hooks`).
    pub protected: Vec<PathBuf>,
    /// Paths that must be unreadable (masked).
    pub deny_read: Vec<PathBuf>,
    pub network: NetworkPolicy,
    pub env: EnvPolicy,
    /// Resource limits (tmpfs sizes, processes, file size).
    #[serde(default)]
    pub limits: crate::limits::Limits,
    /// Why each deny-read and protected path is in the policy (for
    /// `--explain`); paths of the built-in lists may be absent here.
    #[serde(default)]
    pub origins: Vec<Origin>,
}

/// Where a deny-read or protected path comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub path: PathBuf,
    /// `deny-read` or `protected`.
    pub rule: String,
    /// e.g. `built-in list ($HOME)`, `config /home/u/.config/zot/config.toml`.
    pub from: String,
}

// ---------------------------------------------------------------------------
// Compilation of modes and agent manifests into a `SandboxPolicy`.
// ---------------------------------------------------------------------------

use std::path::Path;

/// Names inside every writable root (and nested repository) that stay
/// read-only, whether or not they exist yet.
pub const PROTECTED_NAMES: &[&str] = &[".git/hooks", ".git/config", ".zot", ".agents"];

/// Files of a git directory kept read-only in every repository inside a
/// writable root, also when missing (their creation is blocked): what git
/// reads as configuration (`config`, `info/`: excludes, attributes,
/// sparse-checkout) and what it runs (`hooks/`).
pub const GIT_DIR_PROTECTED: &[&str] = &["config", "hooks", "info"];

/// Files of a git directory kept read-only when they exist. Not blocked
/// when missing: an empty placeholder `commondir` makes git fail, and
/// `config.worktree` is read only when the (protected) `config` enables it,
/// a placeholder `objects/info/alternates` makes git warn on every command
/// (it names only where objects are read from, nothing git runs); a
/// `commondir` that appears during a run is renamed aside afterwards.
pub const GIT_DIR_PROTECTED_IF_PRESENT: &[&str] =
    &["config.worktree", "commondir", "objects/info/alternates"];

/// Whether the agent's file tools must refuse writing `real` (canonical)
/// by the git rules alone, whatever repository it belongs to: a `.git`
/// entry itself (a new repository or a `gitdir:` pointer), or, inside a
/// `.git` directory, a file of [`GIT_DIR_PROTECTED`] or
/// [`GIT_DIR_PROTECTED_IF_PRESENT`], a submodule's `config` or `hooks/`
/// (`modules/...`), or a linked worktree's control files.
pub fn git_control_file(real: &Path) -> bool {
    let comps: Vec<&std::ffi::OsStr> = real.iter().collect();
    let Some(i) = comps.iter().rposition(|c| *c == ".git") else {
        return false;
    };
    let rest: Vec<&str> = comps[i + 1..].iter().filter_map(|c| c.to_str()).collect();
    if rest.len() != comps.len() - i - 1 {
        return true; // not UTF-8: refuse
    }
    git_dir_rel_protected(&rest)
}

fn git_dir_rel_protected(rest: &[&str]) -> bool {
    if rest.is_empty() {
        return true; // `.git` itself
    }
    let joined = rest.join("/");
    let hit = |names: &[&str]| {
        names
            .iter()
            .any(|n| joined == *n || joined.starts_with(&format!("{n}/")))
    };
    if hit(GIT_DIR_PROTECTED) || hit(GIT_DIR_PROTECTED_IF_PRESENT) {
        return true;
    }
    match rest[0] {
        // worktrees/<id>/{gitdir,commondir,config.worktree,locked}
        "worktrees" => {
            rest.len() == 3
                && matches!(
                    rest[2],
                    "gitdir" | "commondir" | "config.worktree" | "locked"
                )
        }
        // modules/<name...>/<git dir file>: any suffix that is protected
        "modules" => {
            (2..rest.len()).any(|k| git_dir_rel_protected(&rest[k..]) && !rest[k..].is_empty())
        }
        _ => false,
    }
}

/// Credential stores under `$HOME` that are unreadable in full-read modes
/// (the home of `$HOME` and the invoking user's home of the password
/// database both).
pub const DEFAULT_DENY_READ_IN_HOME: &[&str] = &[
    // keys and agents
    ".ssh",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".config/sops",
    // cloud and cluster credentials
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".oci",
    ".config/doctl",
    ".config/hcloud",
    ".s3cfg",
    ".boto",
    ".config/rclone/rclone.conf",
    ".databrickscfg",
    ".fly",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".terraformrc",
    ".config/op",
    ".op",
    // registries, forges, package managers
    ".docker/config.json",
    ".config/containers/auth.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".config/glab-cli",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".nuget/NuGet/NuGet.Config",
    ".config/configstore",
    ".pgpass",
    ".my.cnf",
    // AI tools' tokens
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot",
    ".cache/huggingface/token",
    ".huggingface/token",
    // browser profiles (cookie stores, saved logins)
    ".mozilla",
    ".thunderbird",
    "snap/firefox/common/.mozilla",
    ".var/app/org.mozilla.firefox",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    "snap/chromium/common/chromium",
    // zot's own consent and credential stores
    ".config/zot",
    ".local/share/zot",
    ".local/state/zot",
];

/// System files unreadable in full-read modes (masked where they exist).
pub const DEFAULT_DENY_READ_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
];

/// The locale variables of POSIX and glibc: the only `LANG`/`LC_` names
/// passed, and only with a well-formed value ([`env_value_ok`]).
pub const LOCALE_ENV: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
];

/// Whether `value` may be passed for `name`. Locale variables must look
/// like a locale name (`C`, `POSIX`, `en_US.UTF-8`, `de_DE@euro`; for
/// `LANGUAGE` a `:`-separated list): no paths (glibc loads a locale named
/// by a path), no control characters, at most 64 bytes. Other variables
/// pass as they are.
pub fn env_value_ok(name: &str, value: &str) -> bool {
    if !LOCALE_ENV.contains(&name) {
        return true;
    }
    let one = |v: &str| {
        !v.is_empty()
            && v.len() <= 64
            && !v.starts_with(['.', '-', '@'])
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'@' | b'+'))
    };
    if value.is_empty() {
        return true; // unset in effect
    }
    if name == "LANGUAGE" {
        value.len() <= 256 && value.split(':').all(one)
    } else {
        one(value)
    }
}

/// Variables every confined command keeps (when set in the caller's
/// environment). A trailing `*` matches a prefix.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "USER",
    "LOGNAME",
];

/// Platform directories readable by zotfile agents.
pub const PLATFORM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Secrets under the platform directories that agents never see.
pub const PLATFORM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
];

/// Options of `zot sandbox` (or any caller) before compilation. Every path
/// must be absolute and already canonicalized by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxOptions {
    /// Working directory; writable in `workspace-write`.
    pub cwd: PathBuf,
    /// The caller's home directory, for the default deny-read list.
    pub home: Option<PathBuf>,
    /// `--writable-root` (workspace-write only).
    pub writable_roots: Vec<PathBuf>,
    /// `--read-only-path`: stay read-only even inside a writable root.
    pub read_only_paths: Vec<PathBuf>,
    /// `--deny-read`: masked in addition to the default list.
    pub deny_read: Vec<PathBuf>,
    /// `--net`: host network (workspace-write only; read-only never has it).
    pub network: bool,
    /// `--env-allow`: variable names (or `PREFIX*`) kept besides the base set.
    pub env_allow: Vec<String>,
    /// Directories inside the writable roots that hold a nested repository
    /// (`<dir>/.git`), discovered by the caller.
    pub nested_repos: Vec<PathBuf>,
    /// The invoking user's home from the password database, when it differs
    /// from `home` (or `home` is unset): its credential stores are denied
    /// too.
    pub user_home: Option<PathBuf>,
    /// `[sandbox] deny_read` of the config file (`~/` already expanded),
    /// with the file's path for `--explain`.
    pub config_deny_read: Vec<PathBuf>,
    pub config_file: Option<PathBuf>,
    /// What git reads as configuration or runs, of every repository inside
    /// the writable roots (from the caller's scan: `repos::scan`).
    pub git_protected: Vec<PathBuf>,
    /// The directories of the caller's `PATH` (canonical): those inside a
    /// writable root stay read-only (a planted `git` there would run on
    /// the host next).
    pub exec_path: Vec<PathBuf>,
}

/// Options for the restricted-read view of a zotfile agent's commands. Every
/// path must be absolute and canonical.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSandboxOptions {
    /// Working directory; must lie inside a read or write scope.
    pub cwd: PathBuf,
    /// `fs.read` scopes: read-only.
    pub read_scopes: Vec<PathBuf>,
    /// `fs.write` scopes: read-write.
    pub write_scopes: Vec<PathBuf>,
    /// `permissions.env.read`: variables kept besides the base set.
    pub env_read: Vec<String>,
    /// Network on (`permissions.net.allow` lists hosts).
    pub network: bool,
    /// Directories inside the write scopes that hold a nested repository.
    pub nested_repos: Vec<PathBuf>,
    /// Git files of every repository inside the write scopes (see
    /// [`SandboxOptions::git_protected`]).
    pub git_protected: Vec<PathBuf>,
    /// The caller's `PATH` directories (see [`SandboxOptions::exec_path`]).
    pub exec_path: Vec<PathBuf>,
}

/// Why options could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("{field}: path {path:?} is not absolute")]
    NotAbsolute { field: &'static str, path: PathBuf },
    #[error("{field}: path {path:?} contains `.` or `..` components (pass a canonical path)")]
    NotCanonical { field: &'static str, path: PathBuf },
    #[error("env allow entry {name:?} is not a valid variable name")]
    InvalidEnvName { name: String },
    #[error("{field} is not allowed in mode {mode}")]
    NotInMode {
        field: &'static str,
        mode: &'static str,
    },
    #[error("working directory {cwd:?} is outside every read and write scope")]
    CwdNotInScope { cwd: PathBuf },
}

impl SandboxPolicy {
    /// The protected path that covers `real` (a canonical path: the path
    /// itself or one of its ancestors is protected), if any. The agent's
    /// file tools refuse these exactly as the sandbox's mounts do.
    pub fn protected_at(&self, real: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .find(|p| real.starts_with(p))
            .map(PathBuf::as_path)
    }

    /// Where `path` (a deny-read or protected entry) comes from, if known.
    pub fn origin(&self, path: &Path) -> Option<&Origin> {
        self.origins.iter().find(|o| o.path == path)
    }

    /// Add `paths` (each with where it comes from) to the deny-read or the
    /// protected list, each path once, and its origin unless one is known.
    /// (Sets, not scans of the lists: a launch adds hundreds.)
    pub fn add_paths(&mut self, rule: Rule, paths: impl IntoIterator<Item = (PathBuf, String)>) {
        let list = match rule {
            Rule::DenyRead => &mut self.deny_read,
            Rule::Protected => &mut self.protected,
        };
        let mut listed: HashSet<PathBuf> = list.iter().cloned().collect();
        let mut explained: HashSet<PathBuf> = self.origins.iter().map(|o| o.path.clone()).collect();
        for (path, from) in paths {
            if listed.insert(path.clone()) {
                list.push(path.clone());
            }
            if explained.insert(path.clone()) {
                self.origins.push(Origin {
                    path,
                    rule: rule.name().into(),
                    from,
                });
            }
        }
    }
}

/// The lists [`SandboxPolicy::add_paths`] adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    DenyRead,
    Protected,
}

impl Rule {
    /// As [`Origin::rule`] names it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::DenyRead => "deny-read",
            Rule::Protected => "protected",
        }
    }
}

impl SandboxMode {
    /// The kebab-case name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "danger-full-access" => Ok(SandboxMode::DangerFullAccess),
            other => Err(format!(
                "unknown sandbox mode {other:?} (expected read-only, workspace-write or danger-full-access)"
            )),
        }
    }
}

impl EnvPolicy {
    /// Whether `name` is kept by this policy (exact name or `PREFIX*`).
    pub fn keeps(&self, name: &str) -> bool {
        self.keep.iter().any(|k| env_pattern_matches(k, name))
    }
}

/// `PREFIX*` matches by prefix, anything else matches exactly.
pub fn env_pattern_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

fn check_path(field: &'static str, path: &Path) -> Result<(), PolicyError> {
    if !path.is_absolute() {
        return Err(PolicyError::NotAbsolute {
            field,
            path: path.to_path_buf(),
        });
    }
    use std::path::Component;
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(PolicyError::NotCanonical {
            field,
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

fn check_paths(field: &'static str, paths: &[PathBuf]) -> Result<(), PolicyError> {
    paths.iter().try_for_each(|p| check_path(field, p))
}

fn check_env_names(names: &[String]) -> Result<(), PolicyError> {
    for name in names {
        let bare = name.strip_suffix('*').unwrap_or(name);
        let valid = !bare.is_empty()
            && !bare.starts_with(|c: char| c.is_ascii_digit())
            && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(PolicyError::InvalidEnvName { name: name.clone() });
        }
    }
    Ok(())
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// Sort by depth (then name) and drop duplicates and paths already covered by
/// a shallower entry of the same list.
fn normalize_roots(mut roots: Vec<PathBuf>) -> Vec<PathBuf> {
    roots.sort_by(|a, b| depth(a).cmp(&depth(b)).then_with(|| a.cmp(b)));
    let mut out: Vec<PathBuf> = Vec::new();
    for r in roots {
        if !out.iter().any(|o| r.starts_with(o)) {
            out.push(r);
        }
    }
    out
}

fn sorted_unique(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort_by_cached_key(|p| (depth(p), p.clone()));
    paths.dedup();
    paths
}

/// Protected paths for the given write roots and nested repositories, with
/// the origins of the scanned git files and `PATH` directories.
fn protected_paths(
    roots: &[PathBuf],
    nested: &[PathBuf],
    extra: &[PathBuf],
    git: &[PathBuf],
    exec_path: &[PathBuf],
    origins: &mut Vec<Origin>,
) -> Vec<PathBuf> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let mut out = Vec::new();
    for root in roots {
        out.extend(PROTECTED_NAMES.iter().map(|n| root.join(n)));
    }
    for repo in nested {
        if inside(repo) {
            out.push(repo.join(".git/hooks"));
            out.push(repo.join(".git/config"));
        }
    }
    out.extend(extra.iter().cloned());
    for g in git.iter().filter(|g| inside(g)) {
        out.push(g.clone());
        origins.push(Origin {
            path: g.clone(),
            rule: "protected".into(),
            from: "git: read as configuration or run by git".into(),
        });
    }
    for d in exec_path.iter().filter(|d| inside(d)) {
        out.push(d.clone());
        origins.push(Origin {
            path: d.clone(),
            rule: "protected".into(),
            from: "PATH: a directory of the caller's PATH inside a writable root".into(),
        });
    }
    sorted_unique(out)
}

/// The built-in deny-read list for these homes, the system secrets, the
/// config file's additions and `extra`, with their origins.
fn deny_read_paths(
    homes: &[(&Path, &'static str)],
    config: &[PathBuf],
    config_file: Option<&Path>,
    extra: &[PathBuf],
    origins: &mut Vec<Origin>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |p: PathBuf, from: String, origins: &mut Vec<Origin>| {
        if seen.insert(p.clone()) {
            origins.push(Origin {
                path: p.clone(),
                rule: "deny-read".into(),
                from,
            });
            out.push(p);
        }
    };
    for (home, which) in homes {
        for d in DEFAULT_DENY_READ_IN_HOME {
            add(home.join(d), format!("built-in list ({which})"), origins);
        }
    }
    for d in DEFAULT_DENY_READ_SYSTEM {
        add(PathBuf::from(d), "built-in list (system)".into(), origins);
    }
    let cfg = config_file
        .map(|f| format!("config {}", f.display()))
        .unwrap_or_else(|| "config".into());
    for p in config {
        add(p.clone(), cfg.clone(), origins);
    }
    for p in extra {
        add(p.clone(), "--deny-read".into(), origins);
    }
    sorted_unique(out)
}

fn env_policy(extra: &[String], home: Option<String>) -> EnvPolicy {
    let mut keep: Vec<String> = BASE_ENV.iter().map(|s| s.to_string()).collect();
    for e in extra {
        if !keep.contains(e) {
            keep.push(e.clone());
        }
    }
    let mut set = vec![("TMPDIR".to_string(), "/tmp".to_string())];
    if let Some(home) = home {
        keep.retain(|k| k != "HOME");
        set.push(("HOME".to_string(), home));
    }
    EnvPolicy { keep, set }
}

/// Compile a sandbox mode and its options into a [`SandboxPolicy`].
pub fn compile(mode: SandboxMode, opts: &SandboxOptions) -> Result<SandboxPolicy, PolicyError> {
    check_path("cwd", &opts.cwd)?;
    if let Some(home) = &opts.home {
        check_path("home", home)?;
    }
    check_paths("writable root", &opts.writable_roots)?;
    check_paths("read-only path", &opts.read_only_paths)?;
    check_paths("deny-read path", &opts.deny_read)?;
    check_paths("nested repository", &opts.nested_repos)?;
    if let Some(home) = &opts.user_home {
        check_path("user home", home)?;
    }
    check_paths("config sandbox.deny_read", &opts.config_deny_read)?;
    check_paths("git file", &opts.git_protected)?;
    check_paths("PATH directory", &opts.exec_path)?;
    check_env_names(&opts.env_allow)?;

    let mut origins = Vec::new();
    let mut homes: Vec<(&Path, &'static str)> = Vec::new();
    if let Some(home) = &opts.home {
        homes.push((home, "$HOME"));
    }
    if let Some(home) = opts
        .user_home
        .as_deref()
        .filter(|h| opts.home.as_deref() != Some(*h))
    {
        homes.push((home, "the user's home in the password database"));
    }
    // Not for danger-full-access, which enforces none of it.
    let deny = |origins: &mut Vec<Origin>| {
        deny_read_paths(
            &homes,
            &opts.config_deny_read,
            opts.config_file.as_deref(),
            &opts.deny_read,
            origins,
        )
    };

    match mode {
        SandboxMode::ReadOnly => {
            let deny_read = deny(&mut origins);
            if !opts.writable_roots.is_empty() {
                return Err(PolicyError::NotInMode {
                    field: "--writable-root",
                    mode: mode.as_str(),
                });
            }
            if opts.network {
                return Err(PolicyError::NotInMode {
                    field: "--net",
                    mode: mode.as_str(),
                });
            }
            Ok(SandboxPolicy {
                mode,
                cwd: opts.cwd.clone(),
                read: ReadScope::FullDisk,
                write_roots: Vec::new(),
                protected: sorted_unique(opts.read_only_paths.clone()),
                deny_read,
                network: NetworkPolicy::Off,
                env: env_policy(&opts.env_allow, None),
                limits: Default::default(),
                origins,
            })
        }
        SandboxMode::WorkspaceWrite => {
            let deny_read = deny(&mut origins);
            let mut roots = vec![opts.cwd.clone()];
            roots.extend(opts.writable_roots.iter().cloned());
            let roots = normalize_roots(roots);
            let protected = protected_paths(
                &roots,
                &opts.nested_repos,
                &opts.read_only_paths,
                &opts.git_protected,
                &opts.exec_path,
                &mut origins,
            );
            Ok(SandboxPolicy {
                mode,
                cwd: opts.cwd.clone(),
                read: ReadScope::FullDisk,
                write_roots: roots,
                protected,
                deny_read,
                network: if opts.network {
                    NetworkPolicy::On
                } else {
                    NetworkPolicy::Off
                },
                env: env_policy(&opts.env_allow, None),
                limits: Default::default(),
                origins,
            })
        }
        SandboxMode::DangerFullAccess => Ok(SandboxPolicy {
            mode,
            cwd: opts.cwd.clone(),
            read: ReadScope::FullDisk,
            write_roots: vec![PathBuf::from("/")],
            protected: Vec::new(),
            deny_read: Vec::new(),
            network: NetworkPolicy::On,
            env: EnvPolicy {
                keep: vec!["*".to_string()],
                set: Vec::new(),
            },
            limits: Default::default(),
            origins: Vec::new(),
        }),
    }
}

/// The restricted-read view for a zotfile agent's commands: platform
/// directories (minus secrets) and `fs.read` scopes read-only, `fs.write`
/// scopes read-write, private `/tmp`, no `$HOME` (HOME=/tmp), network only when
/// asked, environment scrubbed to the base set plus `env_read`.
pub fn agent_policy(opts: &AgentSandboxOptions) -> Result<SandboxPolicy, PolicyError> {
    check_path("cwd", &opts.cwd)?;
    check_paths("fs.read scope", &opts.read_scopes)?;
    check_paths("fs.write scope", &opts.write_scopes)?;
    check_paths("nested repository", &opts.nested_repos)?;
    check_paths("git file", &opts.git_protected)?;
    check_paths("PATH directory", &opts.exec_path)?;
    check_env_names(&opts.env_read)?;

    let write_roots = normalize_roots(opts.write_scopes.clone());
    let in_scope = write_roots
        .iter()
        .chain(opts.read_scopes.iter())
        .any(|s| opts.cwd.starts_with(s));
    if !in_scope {
        return Err(PolicyError::CwdNotInScope {
            cwd: opts.cwd.clone(),
        });
    }
    let mut read: Vec<PathBuf> = PLATFORM_DIRS.iter().map(PathBuf::from).collect();
    read.extend(opts.read_scopes.iter().cloned());
    let read = sorted_unique(read);
    let mut origins = Vec::new();
    let protected = protected_paths(
        &write_roots,
        &opts.nested_repos,
        &[],
        &opts.git_protected,
        &opts.exec_path,
        &mut origins,
    );
    let mode = if write_roots.is_empty() {
        SandboxMode::ReadOnly
    } else {
        SandboxMode::WorkspaceWrite
    };
    Ok(SandboxPolicy {
        mode,
        cwd: opts.cwd.clone(),
        read: ReadScope::Restricted { paths: read },
        write_roots,
        protected,
        deny_read: PLATFORM_SECRETS.iter().map(PathBuf::from).collect(),
        network: if opts.network {
            NetworkPolicy::On
        } else {
            NetworkPolicy::Off
        },
        env: env_policy(&opts.env_read, Some("/tmp".to_string())),
        limits: Default::default(),
        origins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn opts() -> SandboxOptions {
        SandboxOptions {
            cwd: p("/w/proj"),
            home: Some(p("/home/u")),
            ..Default::default()
        }
    }

    #[test]
    fn read_only_has_no_write_roots_and_no_network() {
        let pol = compile(SandboxMode::ReadOnly, &opts()).unwrap();
        assert!(pol.write_roots.is_empty());
        assert_eq!(pol.network, NetworkPolicy::Off);
        assert_eq!(pol.read, ReadScope::FullDisk);
        assert!(pol.deny_read.contains(&p("/home/u/.ssh")));
        assert!(pol.deny_read.contains(&p("/home/u/.docker/config.json")));
    }

    #[test]
    fn read_only_refuses_write_roots_and_net() {
        let mut o = opts();
        o.network = true;
        assert!(matches!(
            compile(SandboxMode::ReadOnly, &o),
            Err(PolicyError::NotInMode { field: "--net", .. })
        ));
        let mut o = opts();
        o.writable_roots.push(p("/x"));
        assert!(matches!(
            compile(SandboxMode::ReadOnly, &o),
            Err(PolicyError::NotInMode { .. })
        ));
    }

    #[test]
    fn workspace_write_protects_git_and_zot_in_every_root_and_nested_repo() {
        let mut o = opts();
        o.writable_roots = vec![p("/data"), p("/w/proj/sub")];
        o.nested_repos = vec![p("/w/proj/vendor/lib"), p("/elsewhere/repo")];
        o.read_only_paths = vec![p("/w/proj/secret.txt")];
        let pol = compile(SandboxMode::WorkspaceWrite, &o).unwrap();
        // /w/proj/sub is covered by /w/proj
        assert_eq!(pol.write_roots, vec![p("/data"), p("/w/proj")]);
        for root in ["/data", "/w/proj"] {
            for name in PROTECTED_NAMES {
                assert!(pol.protected.contains(&p(root).join(name)), "{root}/{name}");
            }
        }
        assert!(pol.protected.contains(&p("/w/proj/vendor/lib/.git/hooks")));
        assert!(pol.protected.contains(&p("/w/proj/vendor/lib/.git/config")));
        assert!(!pol.protected.iter().any(|x| x.starts_with("/elsewhere")));
        assert!(pol.protected.contains(&p("/w/proj/secret.txt")));
        assert_eq!(pol.network, NetworkPolicy::Off);
    }

    #[test]
    fn write_roots_sorted_by_depth() {
        let mut o = opts();
        o.cwd = p("/a/b/c");
        o.writable_roots = vec![p("/z"), p("/a/b/c/d"), p("/q/r")];
        let pol = compile(SandboxMode::WorkspaceWrite, &o).unwrap();
        assert_eq!(pol.write_roots, vec![p("/z"), p("/q/r"), p("/a/b/c")]);
    }

    #[test]
    fn relative_and_dotted_paths_are_rejected() {
        let mut o = opts();
        o.writable_roots = vec![p("rel")];
        assert_eq!(
            compile(SandboxMode::WorkspaceWrite, &o),
            Err(PolicyError::NotAbsolute {
                field: "writable root",
                path: p("rel")
            })
        );
        let mut o = opts();
        o.deny_read = vec![p("/a/../etc")];
        assert!(matches!(
            compile(SandboxMode::WorkspaceWrite, &o),
            Err(PolicyError::NotCanonical { .. })
        ));
    }

    #[test]
    fn env_keeps_base_and_allowed_but_not_secrets() {
        let mut o = opts();
        o.env_allow = vec!["MY_API_KEY".into(), "CARGO_*".into()];
        let pol = compile(SandboxMode::WorkspaceWrite, &o).unwrap();
        assert!(pol.env.keeps("PATH"));
        assert!(pol.env.keeps("LC_ALL"));
        assert!(pol.env.keeps("MY_API_KEY"));
        assert!(pol.env.keeps("CARGO_HOME"));
        assert!(!pol.env.keeps("OTHER_API_KEY"));
        assert!(!pol.env.keeps("AWS_SECRET_ACCESS_KEY"));
        assert!(!pol.env.keeps("GITHUB_TOKEN"));
        assert!(pol.env.set.contains(&("TMPDIR".into(), "/tmp".into())));
    }

    #[test]
    fn bad_env_names_are_rejected() {
        for bad in ["", "A=B", "1X", "*", "A B"] {
            let mut o = opts();
            o.env_allow = vec![bad.into()];
            assert!(
                matches!(
                    compile(SandboxMode::ReadOnly, &o),
                    Err(PolicyError::InvalidEnvName { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn danger_full_access_is_unconfined() {
        let pol = compile(SandboxMode::DangerFullAccess, &opts()).unwrap();
        assert_eq!(pol.write_roots, vec![p("/")]);
        assert_eq!(pol.network, NetworkPolicy::On);
        assert!(pol.env.keeps("ANYTHING_TOKEN"));
    }

    #[test]
    fn agent_policy_is_restricted() {
        let o = AgentSandboxOptions {
            cwd: p("/w/proj"),
            read_scopes: vec![p("/data/ref")],
            write_scopes: vec![p("/w/proj")],
            env_read: vec!["OPENAI_BASE_URL".into()],
            network: false,
            ..Default::default()
        };
        let pol = agent_policy(&o).unwrap();
        let ReadScope::Restricted { paths } = &pol.read else {
            panic!("not restricted")
        };
        assert!(
            paths.contains(&p("/usr"))
                && paths.contains(&p("/etc"))
                && paths.contains(&p("/data/ref"))
        );
        assert!(!paths
            .iter()
            .any(|x| x.starts_with("/home") || x.starts_with("/root")));
        assert_eq!(pol.write_roots, vec![p("/w/proj")]);
        assert!(pol.protected.contains(&p("/w/proj/.git/hooks")));
        assert!(pol.deny_read.contains(&p("/etc/shadow")));
        assert_eq!(pol.network, NetworkPolicy::Off);
        assert!(pol.env.keeps("OPENAI_BASE_URL"));
        assert!(!pol.env.keeps("HOME"));
        assert!(pol.env.set.contains(&("HOME".into(), "/tmp".into())));
        assert_eq!(pol.mode, SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn agent_policy_requires_cwd_in_scope() {
        let o = AgentSandboxOptions {
            cwd: p("/w/proj"),
            read_scopes: vec![p("/data")],
            ..Default::default()
        };
        assert_eq!(
            agent_policy(&o),
            Err(PolicyError::CwdNotInScope { cwd: p("/w/proj") })
        );
        let o = AgentSandboxOptions {
            cwd: p("/data/x"),
            read_scopes: vec![p("/data")],
            ..Default::default()
        };
        assert_eq!(agent_policy(&o).unwrap().mode, SandboxMode::ReadOnly);
    }
}
