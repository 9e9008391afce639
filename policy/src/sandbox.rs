//! Sandbox modes and the [`SandboxPolicy`] they compile to. Pure data: no
//! syscalls here (path canonicalization is done by the caller and passed in).
//!
//! CONTRACT (shared by the sandbox core, the native/landlock backends and
//! `zot run`): the type names and fields below are relied upon by other
//! crates. Extend them; do not rename them without updating every user.

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
}

// ---------------------------------------------------------------------------
// Compilation of modes and agent manifests into a `SandboxPolicy`.
// ---------------------------------------------------------------------------

use std::path::Path;

/// Names inside every writable root (and nested repository) that stay
/// read-only, whether or not they exist yet.
pub const PROTECTED_NAMES: &[&str] = &[".git/hooks", ".git/config", ".zot", ".agents"];

/// Credential stores under `$HOME` that are unreadable in full-read modes.
pub const DEFAULT_DENY_READ_IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    // zot's own consent and credential stores
    ".config/zot",
    ".local/share/zot",
    ".local/state/zot",
];

/// Variables every confined command keeps (when set in the caller's
/// environment). A trailing `*` matches a prefix.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
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
    paths.sort_by(|a, b| depth(a).cmp(&depth(b)).then_with(|| a.cmp(b)));
    paths.dedup();
    paths
}

/// Protected paths for the given write roots and nested repositories.
fn protected_paths(roots: &[PathBuf], nested: &[PathBuf], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        out.extend(PROTECTED_NAMES.iter().map(|n| root.join(n)));
    }
    for repo in nested {
        if roots.iter().any(|r| repo.starts_with(r)) {
            out.push(repo.join(".git/hooks"));
            out.push(repo.join(".git/config"));
        }
    }
    out.extend(extra.iter().cloned());
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
    check_env_names(&opts.env_allow)?;

    let mut deny_read: Vec<PathBuf> = Vec::new();
    if let Some(home) = &opts.home {
        deny_read.extend(DEFAULT_DENY_READ_IN_HOME.iter().map(|d| home.join(d)));
    }
    deny_read.extend(opts.deny_read.iter().cloned());
    let deny_read = sorted_unique(deny_read);

    match mode {
        SandboxMode::ReadOnly => {
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
            })
        }
        SandboxMode::WorkspaceWrite => {
            let mut roots = vec![opts.cwd.clone()];
            roots.extend(opts.writable_roots.iter().cloned());
            let roots = normalize_roots(roots);
            let protected = protected_paths(&roots, &opts.nested_repos, &opts.read_only_paths);
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
    let protected = protected_paths(&write_roots, &opts.nested_repos, &[]);
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
            nested_repos: vec![],
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
