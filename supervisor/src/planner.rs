//! The planner: a [`SandboxPolicy`] and the host become a [`LaunchPlan`].
//! The one place that decides what a sandbox is; every backend consumes its
//! output (bwrap renders it, native executes it, landlock executes its
//! part). It only reads the host, through [`HostFs`] (so tests can plan
//! against a fake filesystem), and changes nothing.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use zot_launcher::plan::{
    ArgCmp, ArgOp, ArgWidth, EnvPlan, EnvVar, Gap, Isolation, LandlockAccess, LandlockCompat,
    LandlockPlan, LandlockRule, LandlockScope, LaunchPlan, Mode, MountOp, Namespace, NetworkPlan,
    Rlimit, RlimitResource, SeccompAction, SeccompPlan, SeccompRule,
};
use zot_policy::sandbox::{NetworkPolicy, ReadScope, SandboxMode, SandboxPolicy};

/// Host directories replaced by private empty ones (host sockets live
/// there), with their modes.
pub const PRIVATE_DIRS: [(&str, u32); 3] =
    [("/tmp", 0o1777), ("/var/tmp", 0o1777), ("/run", 0o755)];

/// What a path is on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dir,
    File,
    Symlink,
    Socket,
    Other,
}

/// The planner's view of the host filesystem.
pub trait HostFs {
    /// The entry itself (symlinks not followed).
    fn lstat(&self, p: &Path) -> Option<FileKind>;
    /// What the path leads to (symlinks followed).
    fn stat(&self, p: &Path) -> Option<FileKind>;
    fn canonicalize(&self, p: &Path) -> Option<PathBuf>;
    /// The entries of a directory, sorted.
    fn read_dir(&self, p: &Path) -> Vec<PathBuf>;
    /// The paths of the unix sockets bound on the host (its network
    /// namespace's `/proc/net/unix`), as bound: absolute or not.
    fn unix_sockets(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// The start of a small text file (a `.git` file's `gitdir:` line).
    fn read_head(&self, _p: &Path) -> Option<String> {
        None
    }
    /// Whether the sandbox's user could reach `p` at all (it has
    /// capabilities only over files of the uid and gid mapped into its user
    /// namespace, the caller's). A socket it cannot reach needs no mask, and
    /// bwrap, as that user, could not put one over it.
    fn sandbox_can_reach(&self, _p: &Path) -> bool {
        true
    }
    /// The caller's hard limit of `r` (`None`: unlimited).
    fn hard_limit(&self, _r: RlimitResource) -> Option<u64> {
        None
    }
    /// The kernel keeps a `pid_max` per PID namespace (Linux 6.14+).
    fn pid_max_per_namespace(&self) -> bool {
        false
    }
    /// The caller is uid 0 (exempt from `RLIMIT_NPROC`).
    fn caller_is_root(&self) -> bool {
        false
    }
    /// The supervisor can decide on the sandbox's `connect`/`sendto`/
    /// `sendmsg` itself (seccomp user notification and what it needs), or
    /// what is missing.
    fn user_notify(&self) -> Result<(), String> {
        Err("not probed".into())
    }
}

/// The real filesystem.
pub struct RealFs;

fn kind(t: std::fs::FileType) -> FileKind {
    if t.is_dir() {
        FileKind::Dir
    } else if t.is_file() {
        FileKind::File
    } else if t.is_symlink() {
        FileKind::Symlink
    } else if std::os::unix::fs::FileTypeExt::is_socket(&t) {
        FileKind::Socket
    } else {
        FileKind::Other
    }
}

impl HostFs for RealFs {
    fn lstat(&self, p: &Path) -> Option<FileKind> {
        crate::canon::file_type(p, false).map(kind)
    }
    fn stat(&self, p: &Path) -> Option<FileKind> {
        crate::canon::file_type(p, true).map(kind)
    }
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        crate::canon::canonicalize(p)
    }
    fn read_dir(&self, p: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
    fn read_head(&self, p: &Path) -> Option<String> {
        use std::io::Read;
        let mut b = Vec::new();
        std::fs::File::open(p)
            .ok()?
            .take(4096)
            .read_to_end(&mut b)
            .ok()?;
        String::from_utf8(b).ok()
    }
    fn unix_sockets(&self) -> Vec<PathBuf> {
        std::fs::read("/proc/net/unix")
            .map(|b| parse_proc_net_unix(&b))
            .unwrap_or_default()
    }
    fn sandbox_can_reach(&self, p: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid != 0 {
            // No capabilities: the planner's own lookups were the test.
            return true;
        }
        // uid 0 keeps its capabilities in the sandbox's user namespace only
        // over files both of whose owners are mapped (uid 0, the caller's
        // gid); any other directory is searched by its mode bits.
        p.ancestors().skip(1).all(|d| match std::fs::metadata(d) {
            Ok(m) if m.uid() == 0 && m.gid() == gid => true,
            Ok(m) if m.uid() == 0 => m.mode() & 0o100 != 0,
            Ok(m) if m.gid() == gid => m.mode() & 0o010 != 0,
            Ok(m) => m.mode() & 0o001 != 0,
            Err(_) => false,
        })
    }
    fn pid_max_per_namespace(&self) -> bool {
        kernel_at_least(6, 14)
    }
    fn caller_is_root(&self) -> bool {
        // SAFETY: no preconditions.
        unsafe { libc::geteuid() == 0 || libc::getuid() == 0 }
    }
    fn user_notify(&self) -> Result<(), String> {
        let p = zot_probes::host().seccomp();
        match &p.user_notify_missing {
            None if p.user_notify => Ok(()),
            Some(why) => Err(why.clone()),
            None => Err("seccomp filters are unavailable".into()),
        }
    }
    fn hard_limit(&self, r: RlimitResource) -> Option<u64> {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid rlimit out-pointer.
        if unsafe { libc::getrlimit(r.raw(), &mut l) } != 0 || l.rlim_max == libc::RLIM_INFINITY {
            return None;
        }
        Some(l.rlim_max)
    }
}

fn kernel_at_least(major: u32, minor: u32) -> bool {
    let Ok(u) = nix::sys::utsname::uname() else {
        return false;
    };
    let rel = u.release().to_string_lossy().into_owned();
    let mut it = rel
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (a, b) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// The PIDs the kernel never reuses after the first wrap (`RESERVED_PIDS`).
const RESERVED_PIDS: u64 = 300;

/// The pathname sockets of a `/proc/net/unix` listing (abstract names,
/// shown with a leading `@`, and unnamed sockets left out), deduplicated
/// (accepted connections repeat their listener's path).
pub fn parse_proc_net_unix(text: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut out: Vec<PathBuf> = Vec::new();
    for line in text.split(|b| *b == b'\n').skip(1) {
        // Num RefCount Protocol Flags Type St Inode Path: the path is what
        // follows the seventh field (it may hold spaces).
        let mut rest = line;
        let mut fields = 0;
        while fields < 7 {
            let start = rest.iter().position(|b| *b != b' ').unwrap_or(rest.len());
            rest = &rest[start..];
            let end = rest.iter().position(|b| *b == b' ').unwrap_or(rest.len());
            if end == 0 {
                break;
            }
            rest = &rest[end..];
            fields += 1;
        }
        if fields < 7 || rest.first() != Some(&b' ') {
            continue;
        }
        let path = &rest[1..];
        if path.is_empty() || path[0] == b'@' {
            continue;
        }
        out.push(PathBuf::from(std::ffi::OsStr::from_bytes(path)));
    }
    out.sort();
    out.dedup();
    out
}

/// Why a policy cannot be planned here.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("write root {} does not exist", path.display())]
    MissingWriteRoot { path: PathBuf },
    #[error("allowed hosts need the sandbox's own network namespace (the landlock backend has none: use the bwrap or native backend, or --net for the host network)")]
    ProxyNeedsNamespaces,
}

/// The repository git finds from a directory of the view by walking up
/// (its `.git` lies above the directory, or leads outside it): what of
/// it the view must show so that git works there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RepoView {
    /// The scope (or working directory) git starts from.
    pub from: PathBuf,
    /// The repository's top directory (holding `.git`).
    pub work_tree: PathBuf,
    /// What git reads of it: the `.git` entry, and where a `gitdir:` file
    /// and its `commondir` lead (canonical).
    pub git: Vec<PathBuf>,
}

/// The repository enclosing `dir` as git's discovery finds it (the
/// nearest `.git` at `dir` or above), with its git directories.
pub fn enclosing_repo(dir: &Path, fs: &dyn HostFs) -> Option<RepoView> {
    let top = dir
        .ancestors()
        .find(|a| fs.lstat(&a.join(".git")).is_some())?;
    let dot_git = top.join(".git");
    let mut git = vec![fs.canonicalize(&dot_git).unwrap_or_else(|| dot_git.clone())];
    let git_dir = match fs.stat(&dot_git) {
        Some(FileKind::Dir) => git[0].clone(),
        _ => {
            let text = fs.read_head(&dot_git)?;
            let t = text
                .lines()
                .next()?
                .strip_prefix("gitdir:")?
                .trim()
                .to_string();
            let g = fs.canonicalize(&top.join(t))?;
            git.push(g.clone());
            g
        }
    };
    if let Some(c) = fs
        .read_head(&git_dir.join("commondir"))
        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
        .filter(|t| !t.is_empty())
        .and_then(|t| fs.canonicalize(&git_dir.join(t)))
    {
        if !git.contains(&c) {
            git.push(c);
        }
    }
    Some(RepoView {
        from: dir.to_path_buf(),
        work_tree: top.to_path_buf(),
        git,
    })
}

/// The enclosing repositories a sandbox's view would hide, and what of
/// each it shows read-only (see [`RepoView`]): in a restricted view (an
/// agent's scopes), the git directories of the repository around each
/// read scope, write root and the working directory that lie outside
/// every scope; in a full-disk view, the repository around a write root or
/// working directory inside a directory the sandbox replaces (`/tmp`,
/// `/var/tmp`), shown whole (the mode lets it be read anyway). Git then
/// works in a repository subdirectory as on the host (writing to the
/// repository outside the write roots stays refused).
pub fn repo_views(policy: &SandboxPolicy, roots: &[PathBuf], fs: &dyn HostFs) -> Vec<RepoView> {
    if policy.mode == SandboxMode::DangerFullAccess {
        return Vec::new();
    }
    let canon = |p: &Path| fs.canonicalize(p).unwrap_or_else(|| p.to_path_buf());
    let mut starts: Vec<PathBuf> = roots.to_vec();
    starts.push(canon(&policy.cwd));
    let visible: Vec<PathBuf> = match &policy.read {
        ReadScope::Restricted { paths } => {
            starts.extend(paths.iter().map(|p| canon(p)));
            paths
                .iter()
                .map(|p| canon(p))
                .chain(roots.iter().cloned())
                .collect()
        }
        ReadScope::FullDisk => roots.to_vec(),
    };
    let restricted = matches!(policy.read, ReadScope::Restricted { .. });
    let shown = |p: &Path| visible.iter().any(|v| p.starts_with(v));
    let mut out: Vec<RepoView> = Vec::new();
    for s in starts {
        if !restricted && !under_private(&s) {
            continue;
        }
        let Some(mut v) = enclosing_repo(&s, fs) else {
            continue;
        };
        if restricted {
            v.git.retain(|g| !shown(g));
        } else {
            let wt = v.work_tree.clone();
            v.git
                .retain(|g| under_private(g) && !g.starts_with(&wt) && !shown(g));
            if !shown(&wt) && under_private(&wt) {
                v.git.insert(0, wt);
            }
        }
        if !v.git.is_empty() && !out.iter().any(|o| o.git == v.git) {
            out.push(v);
        }
    }
    out
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

fn sort_by_depth(v: &mut [PathBuf]) {
    v.sort_by(|a, b| depth(a).cmp(&depth(b)).then_with(|| a.cmp(b)));
}

/// Under one of the private dirs (hidden unless bound back).
fn under_private(p: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|(d, _)| p.starts_with(d))
}

/// The namespaces the plan of `policy` on `isolation` gets, known before
/// the plan (the native backend makes them while it plans).
pub fn namespaces(policy: &SandboxPolicy, isolation: Isolation) -> Vec<Namespace> {
    if policy.mode == SandboxMode::DangerFullAccess {
        return Vec::new();
    }
    match isolation {
        Isolation::Namespaces => {
            let mut n = vec![
                Namespace::User,
                Namespace::Mount,
                Namespace::Pid,
                Namespace::Ipc,
                Namespace::Uts,
                Namespace::Cgroup,
            ];
            // The host's network is the plan's only for `NetworkPolicy::On`.
            if policy.network != NetworkPolicy::On {
                n.push(Namespace::Net);
            }
            n
        }
        _ => Vec::new(),
    }
}

/// Plan `policy` for a backend of `isolation`. `env` is the caller's
/// environment (only the names the policy passes end up in the plan).
pub fn plan(
    policy: &SandboxPolicy,
    isolation: Isolation,
    env: &[(OsString, OsString)],
    fs: &dyn HostFs,
) -> Result<LaunchPlan, PlanError> {
    let unconfined = policy.mode == SandboxMode::DangerFullAccess || isolation == Isolation::None;
    let env = env_plan(policy, env, unconfined);
    if unconfined {
        return Ok(LaunchPlan {
            mode: policy.mode,
            isolation: Isolation::None,
            namespaces: Vec::new(),
            cwd: policy.cwd.clone(),
            write_roots: vec![PathBuf::from("/")],
            protected: Vec::new(),
            mounts: Vec::new(),
            landlock: LandlockPlan {
                compat: LandlockCompat::Off,
                rules: Vec::new(),
                scopes: Vec::new(),
            },
            seccomp: SeccompPlan {
                enabled: false,
                foreign_arch: SeccompAction::KillProcess,
                x32: None,
                rules: Vec::new(),
            },
            env,
            network: NetworkPlan::Host,
            rlimits: Vec::new(),
            pid_max: None,
            unenforced: Vec::new(),
        });
    }
    let mut roots = Vec::new();
    for r in &policy.write_roots {
        let c = fs
            .canonicalize(r)
            .ok_or_else(|| PlanError::MissingWriteRoot { path: r.clone() })?;
        if !roots.contains(&c) {
            roots.push(c);
        }
    }
    sort_by_depth(&mut roots);
    let mut protected = policy.protected.clone();
    sort_by_depth(&mut protected);
    protected.dedup();
    let network = match &policy.network {
        NetworkPolicy::Off => NetworkPlan::Off,
        NetworkPolicy::On => NetworkPlan::Host,
        NetworkPolicy::Proxied { allow, socket_dir } => {
            if isolation != Isolation::Namespaces {
                return Err(PlanError::ProxyNeedsNamespaces);
            }
            NetworkPlan::Proxied {
                socket: socket_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(PROXY_DIR_PLACEHOLDER))
                    .join(PROXY_SOCKET),
                port: PROXY_PORT,
                allow: allow.clone(),
            }
        }
    };
    let namespaces = namespaces(policy, isolation);
    // The supervisor decides on every connect and addressed send (host
    // sockets bound after the launch or in other network namespaces too);
    // without that, host sockets the view shows are masked.
    // On landlock too: there the host's sockets are reachable by path,
    // and only the supervisor can tell the command's own from them.
    let notify = matches!(isolation, Isolation::Namespaces | Isolation::LandlockOnly)
        && fs.user_notify().is_ok();
    let views = match isolation {
        Isolation::Namespaces => repo_views(policy, &roots, fs),
        _ => Vec::new(),
    };
    let mut mounts = match isolation {
        Isolation::Namespaces => mount_view(policy, &roots, &protected, &views, !notify, fs),
        _ => Vec::new(),
    };
    if let Some((socket, _)) = network.proxy() {
        // The proxy's directory, last: over the private /tmp or /run it may
        // lie in. The one host socket the sandbox reaches.
        let dir = socket.parent().unwrap_or(Path::new("/")).to_path_buf();
        mounts.push(ro_bind(dir.clone(), dir));
    }
    let mut env = env;
    if !views.is_empty() {
        // The view's directories between a scope and the repository's top
        // are its own (a tmpfs), not the host's filesystem: git's
        // discovery walks across them as it would on the host.
        env.set.retain(|v| v.name != GIT_ACROSS_FS);
        env.pass.retain(|p| p != GIT_ACROSS_FS);
        env.set.push(EnvVar {
            name: GIT_ACROSS_FS.into(),
            value: "1".into(),
        });
    }
    if let Some((_, port)) = network.proxy() {
        proxy_env(&mut env, port);
    }
    let mut unenforced = Vec::new();
    if isolation == Isolation::LandlockOnly {
        if policy.mode == SandboxMode::WorkspaceWrite && !protected.is_empty() {
            unenforced.push(Gap::ProtectedPathsWritable);
        }
        if matches!(policy.read, ReadScope::FullDisk) && !policy.deny_read.is_empty() {
            unenforced.push(Gap::DenyReadCarved);
        }
        unenforced.push(Gap::NoPidNamespace);
        if network == NetworkPlan::Host && !notify {
            unenforced.push(Gap::HostUnixSockets);
        }
        if policy.mode == SandboxMode::WorkspaceWrite {
            unenforced.push(Gap::TmpSharedWithHost);
        }
        unenforced.push(Gap::NoProcessLimit);
        unenforced.push(Gap::NoTmpfsLimit);
    }
    let rlimits = rlimits_plan(policy, isolation, fs);
    // pid_max, with the PID counter started above RESERVED_PIDS by the
    // launcher, bounds the processes and threads created after it to
    // pid_max - RESERVED_PIDS: the command's own process and those make
    // max_procs exactly.
    let pid_max = (isolation == Isolation::Namespaces && fs.pid_max_per_namespace())
        .then_some(policy.limits.max_procs - 1 + RESERVED_PIDS);
    if isolation == Isolation::Namespaces && pid_max.is_none() && fs.caller_is_root() {
        unenforced.push(Gap::NoProcessLimitForRoot);
    }
    if isolation == Isolation::Namespaces && !notify {
        unenforced.push(Gap::HostSocketsAfterLaunch);
    }
    Ok(LaunchPlan {
        mode: policy.mode,
        isolation,
        namespaces,
        cwd: policy.cwd.clone(),
        landlock: landlock_plan(policy, isolation, &roots, &views, fs),
        seccomp: seccomp_plan(&network, isolation, notify),
        write_roots: roots,
        protected,
        mounts,
        env,
        network,
        rlimits,
        pid_max,
        unenforced,
    })
}

/// Lets git's repository discovery cross mount points.
const GIT_ACROSS_FS: &str = "GIT_DISCOVERY_ACROSS_FILESYSTEM";

/// The port of the bridge on the sandbox's loopback.
pub const PROXY_PORT: u16 = 3128;
/// The socket's name in its directory.
pub const PROXY_SOCKET: &str = "proxy.sock";
/// Where the socket's directory is shown before a run made it.
pub const PROXY_DIR_PLACEHOLDER: &str = "/tmp/zot-proxy-XXXXXX";

/// The proxy variables: every common spelling points at the bridge;
/// `NO_PROXY` is emptied (nothing goes around the proxy: there is no other
/// route).
fn proxy_env(env: &mut EnvPlan, port: u16) {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let vars = [
        ("HTTP_PROXY", &http),
        ("http_proxy", &http),
        ("HTTPS_PROXY", &http),
        ("https_proxy", &http),
        ("ALL_PROXY", &socks),
        ("all_proxy", &socks),
        ("NO_PROXY", &String::new()),
        ("no_proxy", &String::new()),
    ];
    for (name, value) in vars {
        env.pass.retain(|p| p != name);
        env.set.retain(|v| v.name != name);
        env.set.push(EnvVar {
            name: name.to_string(),
            value: value.clone(),
        });
    }
}

/// The rlimits: no core dumps, the file size, and (in an own user
/// namespace, where the kernel counts only the sandbox's processes) the
/// process count. Never above the caller's hard limit (raising it needs a
/// privilege the sandbox does not have).
fn rlimits_plan(policy: &SandboxPolicy, isolation: Isolation, fs: &dyn HostFs) -> Vec<Rlimit> {
    let capped = |r: RlimitResource, want: u64| {
        let v = fs.hard_limit(r).map_or(want, |h| h.min(want));
        Rlimit {
            resource: r,
            soft: Some(v),
            hard: Some(v),
        }
    };
    let mut v = vec![
        Rlimit {
            resource: RlimitResource::Core,
            soft: Some(0),
            hard: Some(0),
        },
        capped(RlimitResource::Fsize, policy.limits.max_file_size),
    ];
    if isolation == Isolation::Namespaces {
        v.push(capped(RlimitResource::Nproc, policy.limits.max_procs));
    }
    v
}

fn env_plan(policy: &SandboxPolicy, env: &[(OsString, OsString)], all: bool) -> EnvPlan {
    let set: Vec<EnvVar> = if all {
        Vec::new()
    } else {
        policy
            .env
            .set
            .iter()
            .map(|(name, value)| EnvVar {
                name: name.clone(),
                value: value.clone(),
            })
            .collect()
    };
    // A locale variable whose value is not a locale name (a path, control
    // characters) is dropped: its name alone goes in the plan, the value is
    // read again at launch, so it is checked here on the same environment.
    let mut pass: Vec<String> = env
        .iter()
        .filter_map(|(k, v)| Some((k.to_str()?, v)))
        .filter(|(k, v)| {
            all || (policy.env.keeps(k)
                && !set.iter().any(|s| s.name == *k)
                && v.to_str()
                    .is_some_and(|v| zot_policy::sandbox::env_value_ok(k, v)))
        })
        .map(|(k, _)| k.to_string())
        .collect();
    pass.sort();
    pass.dedup();
    EnvPlan { pass, set }
}

/// Where writes to `protected` inside `root` are blocked.
enum Protection {
    /// This existing path is bound read-only onto itself.
    ReadOnly(PathBuf),
    /// This component is missing: block its creation.
    Missing(PathBuf),
}

/// The first missing component of `protected` below `root`, else a
/// non-directory ancestor (e.g. the `.git` file of a worktree), else the
/// path itself.
fn protection_for(root: &Path, protected: &Path, fs: &dyn HostFs) -> Option<Protection> {
    let rel = protected.strip_prefix(root).ok()?;
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        match comp {
            Component::Normal(n) => cur.push(n),
            _ => return None,
        }
        match fs.lstat(&cur) {
            None => return Some(Protection::Missing(cur)),
            Some(k) if cur != protected && k != FileKind::Dir => {
                return Some(Protection::ReadOnly(cur))
            }
            Some(_) => {}
        }
    }
    Some(Protection::ReadOnly(cur))
}

/// Whether a directory above `dot_git`'s directory holds a `.git` (the
/// place is inside a git work tree).
fn in_work_tree(dot_git: &Path, fs: &dyn HostFs) -> bool {
    let Some(dir) = dot_git.parent() else {
        return false;
    };
    dir.ancestors()
        .skip(1)
        .any(|a| fs.lstat(&a.join(".git")).is_some())
}

fn ro_bind(src: PathBuf, dst: PathBuf) -> MountOp {
    MountOp::Bind {
        src,
        dst,
        writable: false,
    }
}

/// The mount view (bwrap and native), in order.
/// The mounts every view of `policy` begins with: the root (the host's,
/// read-only, or a tmpfs with the read scopes), the private directories,
/// `/dev` and `/proc`. They depend on the policy's read scope and limits
/// only, not on what the host scans find, so the native backend's PID 1
/// makes them while the supervisor plans the rest
/// ([`zot_launcher::fork_ahead`]); the plan's mounts begin with them.
pub fn base_view(policy: &SandboxPolicy, fs: &dyn HostFs) -> Vec<MountOp> {
    base_and_reads(policy, fs).0
}

/// [`base_view`], and the read scopes of a restricted view: the source
/// resolved, the mount point as given (so /bin -> usr/bin stays /bin),
/// shallowest first.
fn base_and_reads(
    policy: &SandboxPolicy,
    fs: &dyn HostFs,
) -> (Vec<MountOp>, Vec<(PathBuf, PathBuf)>) {
    let restricted = matches!(policy.read, ReadScope::Restricted { .. });
    let mut ops = Vec::new();
    let mut reads: Vec<(PathBuf, PathBuf)> = Vec::new();
    match &policy.read {
        ReadScope::FullDisk => ops.push(ro_bind("/".into(), "/".into())),
        ReadScope::Restricted { paths } => {
            ops.push(MountOp::Tmpfs {
                dst: "/".into(),
                mode: Mode(0o755),
                size: Some(policy.limits.tmp_size),
                inodes: Some(policy.limits.tmp_inodes),
                writable: true,
            });
            reads = paths
                .iter()
                .filter_map(|p| fs.canonicalize(p).map(|c| (c, p.clone())))
                .collect();
            reads.sort_by(|a, b| depth(&a.1).cmp(&depth(&b.1)).then_with(|| a.1.cmp(&b.1)));
            reads.dedup_by(|a, b| a.1 == b.1);
            for (src, dst) in reads.iter().filter(|(_, d)| !under_private(d)) {
                ops.push(ro_bind(src.clone(), dst.clone()));
            }
        }
    }
    for (dir, mode) in PRIVATE_DIRS {
        if restricted || fs.lstat(Path::new(dir)) == Some(FileKind::Dir) {
            ops.push(MountOp::Tmpfs {
                dst: dir.into(),
                mode: Mode(mode),
                size: Some(policy.limits.tmp_size),
                inodes: Some(policy.limits.tmp_inodes),
                writable: true,
            });
        }
    }
    ops.push(MountOp::Dev { dst: "/dev".into() });
    ops.push(MountOp::Tmpfs {
        dst: "/dev/shm".into(),
        mode: Mode(0o1777),
        size: Some(policy.limits.tmp_size),
        inodes: Some(policy.limits.tmp_inodes),
        writable: true,
    });
    ops.push(MountOp::RemountRo { dst: "/dev".into() });
    ops.push(MountOp::Proc {
        dst: "/proc".into(),
    });
    (ops, reads)
}

fn mount_view(
    policy: &SandboxPolicy,
    roots: &[PathBuf],
    protected: &[PathBuf],
    views: &[RepoView],
    mask_sockets: bool,
    fs: &dyn HostFs,
) -> Vec<MountOp> {
    let restricted = matches!(policy.read, ReadScope::Restricted { .. });
    let (mut ops, reads) = base_and_reads(policy, fs);
    // Read scopes inside the private dirs go on top of them.
    for (src, dst) in reads.iter().filter(|(_, d)| under_private(d)) {
        ops.push(ro_bind(src.clone(), dst.clone()));
    }
    // Name resolution with the network on: resolv.conf and friends often
    // point into /run (systemd-resolved).
    if policy.network == NetworkPolicy::On {
        for f in ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"] {
            if let Some(t) = fs.canonicalize(Path::new(f)) {
                if under_private(&t) && fs.stat(&t) == Some(FileKind::File) {
                    ops.push(ro_bind(t.clone(), t));
                }
            }
        }
    }
    // A read-only cwd inside a private dir (e.g. /tmp/x in read-only mode)
    // stays visible, read-only.
    let hidden_cwd = (!restricted
        && under_private(&policy.cwd)
        && !roots.iter().any(|r| policy.cwd.starts_with(r)))
    .then(|| fs.canonicalize(&policy.cwd))
    .flatten();
    if let Some(c) = &hidden_cwd {
        ops.push(ro_bind(c.clone(), c.clone()));
    }
    // The enclosing repositories the view would hide (see `repo_views`),
    // read-only, shallowest first, under the write roots.
    let mut repo_shown: Vec<PathBuf> = views.iter().flat_map(|v| v.git.iter().cloned()).collect();
    sort_by_depth(&mut repo_shown);
    repo_shown.dedup();
    for g in &repo_shown {
        ops.push(ro_bind(g.clone(), g.clone()));
    }
    for r in roots {
        ops.push(MountOp::Bind {
            src: r.clone(),
            dst: r.clone(),
            writable: true,
        });
    }
    // Protected paths: pin each `.git` directory holding one (a mount point
    // cannot be renamed away), then bind read-only or block at the first
    // missing component, shallowest first.
    let mut pins: Vec<PathBuf> = Vec::new();
    let mut prots: Vec<MountOp> = Vec::new();
    for p in protected {
        let Some(root) = roots.iter().rev().find(|r| p.starts_with(r)) else {
            // Outside every write root nothing can write it: already read-only.
            continue;
        };
        if let Some(parent) = p.parent() {
            if parent.file_name() == Some(".git".as_ref())
                && parent.starts_with(root)
                && fs.lstat(parent) == Some(FileKind::Dir)
                && !pins.iter().any(|x| x == parent)
            {
                pins.push(parent.to_path_buf());
            }
        }
        let op = match protection_for(root, p, fs) {
            Some(Protection::ReadOnly(at)) => {
                let c = fs.canonicalize(&at).unwrap_or(at);
                ro_bind(c.clone(), c)
            }
            // A `.git` placeholder inside an existing work tree would make
            // every git command there fail (on the host and in the
            // sandbox): not made; a repository created there is
            // quarantined after the run instead.
            Some(Protection::Missing(at))
                if at.file_name() == Some(".git".as_ref()) && in_work_tree(&at, fs) =>
            {
                continue
            }
            Some(Protection::Missing(at)) => MountOp::BlockCreate {
                dst: at,
                protected: p.clone(),
            },
            None => continue,
        };
        if !prots.iter().any(|o| o.dst() == op.dst()) {
            prots.push(op);
        }
    }
    sort_by_depth(&mut pins);
    for pin in pins {
        ops.push(MountOp::Bind {
            src: pin.clone(),
            dst: pin,
            writable: true,
        });
    }
    prots.sort_by_key(|o| depth(o.dst()));
    ops.extend(prots);
    // Deny-read: wherever the path shows in the view.
    let mut denies: Vec<PathBuf> = policy
        .deny_read
        .iter()
        .filter_map(|p| fs.canonicalize(p))
        .collect();
    sort_by_depth(&mut denies);
    denies.dedup();
    // What the view shows under a private dir: write roots, read scopes and
    // the read-only cwd bound back on top of it.
    let bound_back = |a: &Path| {
        roots.iter().any(|r| a.starts_with(r))
            || reads
                .iter()
                .any(|(_, d)| under_private(d) && a.starts_with(d))
            || hidden_cwd.as_ref().is_some_and(|c| a.starts_with(c))
            || repo_shown.iter().any(|g| a.starts_with(g))
    };
    let mut masks: Vec<PathBuf> = Vec::new();
    for c in &denies {
        for a in view_paths(c, restricted, &reads, roots) {
            // Hidden already: by a private dir, or inside a denied directory
            // (shallower, masked first; nothing could be mounted in it).
            if (under_private(&a) && !bound_back(&a)) || masks.iter().any(|m| a.starts_with(m)) {
                continue;
            }
            masks.push(a.clone());
            ops.push(match fs.stat(c) {
                Some(FileKind::Dir) => MountOp::MaskDir { dst: a },
                _ => MountOp::MaskFile { dst: a },
            });
        }
    }
    // Host unix sockets wherever the view shows them (a read-only mount
    // does not stop `connect`): /dev/null over each. Not when the
    // supervisor checks every connect: it refuses them wherever and
    // whenever they were bound, and a mask could only fail the launch (a
    // socket removed, or in a directory the sandbox's user cannot enter,
    // between planning and mounting).
    let listed = if mask_sockets {
        fs.unix_sockets()
    } else {
        Vec::new()
    };
    let mut socks: Vec<PathBuf> = listed
        .into_iter()
        .filter(|p| p.is_absolute())
        .filter_map(|p| fs.canonicalize(&p))
        .filter(|c| fs.lstat(c) == Some(FileKind::Socket) && fs.sandbox_can_reach(c))
        // The filtering proxy's socket: the one host socket the sandbox
        // reaches (its directory is bound in after the view).
        .filter(|c| match &policy.network {
            NetworkPolicy::Proxied {
                socket_dir: Some(d),
                ..
            } => !c.starts_with(d),
            _ => true,
        })
        .collect();
    socks.sort();
    socks.dedup();
    for c in socks {
        for a in view_paths(&c, restricted, &reads, roots) {
            let hidden = (under_private(&a) && !bound_back(&a))
                || a.starts_with("/dev")
                || a.starts_with("/proc")
                || masks.iter().any(|m| a.starts_with(m));
            if !hidden {
                masks.push(a.clone());
                ops.push(MountOp::MaskSocket { dst: a });
            }
        }
    }
    if restricted {
        ops.push(MountOp::RemountRo { dst: "/".into() });
    }
    ops
}

/// Where the host path `c` shows in the view: itself in a full-disk view;
/// through every read scope whose source holds it and in the write roots in
/// a restricted one.
fn view_paths(
    c: &Path,
    restricted: bool,
    reads: &[(PathBuf, PathBuf)],
    roots: &[PathBuf],
) -> Vec<PathBuf> {
    if !restricted {
        return vec![c.to_path_buf()];
    }
    let mut at = Vec::new();
    for (src, dst) in reads {
        if let Ok(rel) = c.strip_prefix(src) {
            at.push(if rel.as_os_str().is_empty() {
                dst.clone()
            } else {
                dst.join(rel)
            });
        }
    }
    if roots.iter().any(|r| c.starts_with(r)) {
        at.push(c.to_path_buf());
    }
    at
}

/// The read rules of the landlock backend for a full-disk view with
/// deny-read paths: every sibling along the way to each denied path. The
/// ancestors themselves get no rule (so listing `/` or `$HOME` fails there:
/// the price of hiding without mounts).
fn carve(dir: &Path, denied: &[PathBuf], fs: &dyn HostFs, out: &mut Vec<PathBuf>) {
    if denied.iter().any(|d| d == dir) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    if fs.lstat(dir) != Some(FileKind::Dir) {
        return;
    }
    for child in fs.read_dir(dir) {
        carve(&child, denied, fs, out);
    }
}

fn rule(path: impl Into<PathBuf>, access: LandlockAccess, must_exist: bool) -> LandlockRule {
    LandlockRule {
        path: path.into(),
        access,
        must_exist,
    }
}

/// The host device nodes the landlock backend grants (no /dev/shm, no
/// /dev/pts: those are shared with the host there).
pub const HOST_DEV_NODES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    // A new pty pair (its slave reached by TIOCGPTPEER, not by path).
    "/dev/ptmx",
];

/// System V IPC: without an own IPC namespace its objects are the host's.
const SYSV_IPC: &[&str] = &[
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
];

fn landlock_plan(
    policy: &SandboxPolicy,
    isolation: Isolation,
    roots: &[PathBuf],
    views: &[RepoView],
    fs: &dyn HostFs,
) -> LandlockPlan {
    let mounts = isolation == Isolation::Namespaces;
    let mut rules = Vec::new();
    match &policy.read {
        ReadScope::Restricted { paths } => {
            rules.extend(paths.iter().map(|p| rule(p, LandlockAccess::Read, false)));
            for g in views.iter().flat_map(|v| v.git.iter()) {
                rules.push(rule(g, LandlockAccess::Read, false));
            }
            rules.push(rule("/proc", LandlockAccess::Read, false));
            // In a view built by mounts only allowed paths exist, so listing
            // directories is harmless; on the host it is not.
            if mounts {
                rules.push(rule("/", LandlockAccess::ListDir, false));
            }
        }
        ReadScope::FullDisk if !mounts => {
            // The host's /dev is carved out too: only the device nodes
            // below are granted (not /dev/shm, other terminals' /dev/pts).
            let mut denied: Vec<PathBuf> = policy
                .deny_read
                .iter()
                .filter_map(|p| fs.canonicalize(p))
                .collect();
            denied.push(PathBuf::from("/dev"));
            let mut out = Vec::new();
            carve(Path::new("/"), &denied, fs, &mut out);
            rules.extend(
                out.into_iter()
                    .map(|p| rule(p, LandlockAccess::Read, false)),
            );
        }
        ReadScope::FullDisk => rules.push(rule("/", LandlockAccess::Read, false)),
    }
    if mounts {
        // The view's own minimal /dev (its shm is a private tmpfs).
        rules.push(rule("/dev", LandlockAccess::Device, false));
    } else {
        rules.push(rule("/dev", LandlockAccess::ListDir, false));
        rules.extend(
            HOST_DEV_NODES
                .iter()
                .map(|d| rule(*d, LandlockAccess::Device, false)),
        );
    }
    rules.extend(
        roots
            .iter()
            .map(|r| rule(r, LandlockAccess::ReadWrite, true)),
    );
    // The private temp dirs of the view; without mounts the host's, which
    // ordinary programs cannot work without (reported as shared, and
    // TMPDIR is a private directory of the run).
    if mounts || policy.mode == SandboxMode::WorkspaceWrite {
        for p in ["/tmp", "/var/tmp", "/dev/shm"] {
            rules.push(rule(p, LandlockAccess::ReadWrite, false));
        }
    }
    LandlockPlan {
        compat: if mounts {
            LandlockCompat::BestEffort
        } else {
            LandlockCompat::Required
        },
        rules,
        scopes: vec![LandlockScope::AbstractUnixSocket, LandlockScope::Signal],
    }
}

/// Syscalls refused with EPERM whatever their arguments.
const DENIED: &[&str] = &[
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    // Marks on readable host files would report other processes' accesses
    // (inotify on them, and page-cache residency, are accepted residuals:
    // docs/sandbox.md).
    "fanotify_init",
    "fanotify_mark",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
];

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn cmp(arg: u8, width: ArgWidth, op: ArgOp, value: u64, name: &str) -> ArgCmp {
    ArgCmp {
        arg,
        width,
        op,
        value,
        name: name.into(),
    }
}

fn seccomp_plan(network: &NetworkPlan, isolation: Isolation, notify: bool) -> SeccompPlan {
    let ns_flags: Vec<ArgCmp> = [
        (libc::CLONE_NEWNS as u64, "CLONE_NEWNS"),
        (libc::CLONE_NEWCGROUP as u64, "CLONE_NEWCGROUP"),
        (libc::CLONE_NEWUTS as u64, "CLONE_NEWUTS"),
        (libc::CLONE_NEWIPC as u64, "CLONE_NEWIPC"),
        (libc::CLONE_NEWUSER as u64, "CLONE_NEWUSER"),
        (libc::CLONE_NEWPID as u64, "CLONE_NEWPID"),
        (libc::CLONE_NEWNET as u64, "CLONE_NEWNET"),
        (0x80, "CLONE_NEWTIME"),
    ]
    .into_iter()
    .map(|(f, n)| cmp(0, ArgWidth::Bits64, ArgOp::MaskedEq { mask: f }, f, n))
    .collect();
    #[allow(clippy::unnecessary_cast)] // the libc type differs between targets
    let ioctls = vec![
        cmp(
            1,
            ArgWidth::Bits32,
            ArgOp::Eq,
            libc::TIOCSTI as u64,
            "TIOCSTI",
        ),
        cmp(
            1,
            ArgWidth::Bits32,
            ArgOp::Eq,
            libc::TIOCLINUX as u64,
            "TIOCLINUX",
        ),
    ];
    let mut rules = vec![
        SeccompRule {
            syscalls: names(DENIED),
            action: SeccompAction::Eperm,
            any_of: Vec::new(),
        },
        SeccompRule {
            syscalls: names(&["unshare", "clone"]),
            action: SeccompAction::Eperm,
            any_of: ns_flags,
        },
        // Terminal input injection and console control.
        SeccompRule {
            syscalls: names(&["ioctl"]),
            action: SeccompAction::Eperm,
            any_of: ioctls,
        },
        // libc falls back to the filterable clone.
        SeccompRule {
            syscalls: names(&["clone3"]),
            action: SeccompAction::Enosys,
            any_of: Vec::new(),
        },
    ];
    if isolation == Isolation::LandlockOnly {
        rules.push(SeccompRule {
            syscalls: names(SYSV_IPC),
            action: SeccompAction::Eperm,
            any_of: Vec::new(),
        });
    }
    if *network == NetworkPlan::Off {
        rules.push(SeccompRule {
            syscalls: names(&["socket", "socketpair"]),
            action: SeccompAction::Eperm,
            any_of: vec![cmp(
                0,
                ArgWidth::Bits32,
                ArgOp::Ne,
                libc::AF_UNIX as u64,
                "AF_UNIX",
            )],
        });
        if isolation == Isolation::LandlockOnly && !notify {
            // Without a private /tmp and /run, host sockets are reachable by
            // path, and no supervisor tells the command's own apart: refuse
            // reaching any socket (`sendmsg` stays allowed: its address is
            // behind a pointer).
            rules.push(SeccompRule {
                syscalls: names(&["connect"]),
                action: SeccompAction::Eperm,
                any_of: Vec::new(),
            });
            rules.push(SeccompRule {
                syscalls: names(&["sendto"]),
                action: SeccompAction::Eperm,
                any_of: vec![cmp(4, ArgWidth::Bits64, ArgOp::Ne, 0, "NULL (an address)")],
            });
        }
    }
    if notify {
        // The supervisor performs these itself on a copy of the arguments
        // (supervisor/src/notify): a unix socket is reached only when the
        // sandbox bound it. `sendmsg`'s address is behind a pointer, so
        // every `sendmsg` and `sendmmsg` is asked about; `sendto` only with
        // an address (`send` is `sendto` without one).
        rules.push(SeccompRule {
            syscalls: names(&["connect", "sendmsg", "sendmmsg"]),
            action: SeccompAction::Notify,
            any_of: Vec::new(),
        });
        rules.push(SeccompRule {
            syscalls: names(&["sendto"]),
            action: SeccompAction::Notify,
            any_of: vec![cmp(4, ArgWidth::Bits64, ArgOp::Ne, 0, "NULL (an address)")],
        });
    }
    SeccompPlan {
        enabled: true,
        foreign_arch: SeccompAction::KillProcess,
        x32: cfg!(target_arch = "x86_64").then_some(SeccompAction::Enosys),
        rules,
    }
}

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
