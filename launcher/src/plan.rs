//! The [`LaunchPlan`]: what a sandbox is, as data.
//!
//! One planner (the supervisor's) computes it from a `SandboxPolicy` and the
//! host; every backend consumes the same value: bwrap *renders* it to
//! arguments, the native launcher *executes* it, the landlock backend gets a
//! plan without namespaces or mounts whose [`LaunchPlan::unenforced`] list says
//! what that costs. `zot debug sandbox --explain --json` prints it as is, and
//! every `describe()` reads the same data the launcher applies.
//!
//! Paths are absolute and, unless said otherwise, the same inside the sandbox
//! and on the host (the view is built from binds of host paths onto
//! themselves).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zot_policy::sandbox::SandboxMode;

/// How much of one kind of confinement is (or was) enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    None,
    Partial,
    Full,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Partial => "partial",
            Level::None => "none",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// `danger-full-access`: nothing confines the command.
    #[serde(rename = "none")]
    Unconfined,
    /// System bubblewrap builds namespaces and mounts; the launcher hardens.
    Bwrap,
    /// The launcher builds namespaces and mounts itself.
    Native,
    /// No namespaces: Landlock and seccomp only.
    Landlock,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Unconfined => "none",
            BackendKind::Bwrap => "bwrap",
            BackendKind::Native => "native",
            BackendKind::Landlock => "landlock",
        }
    }

    /// The isolation this backend provides, i.e. which plan it runs.
    pub fn isolation(self) -> Isolation {
        match self {
            BackendKind::Unconfined => Isolation::None,
            BackendKind::Bwrap | BackendKind::Native => Isolation::Namespaces,
            BackendKind::Landlock => Isolation::LandlockOnly,
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What confines the command. The plan of the bwrap and native backends is
/// the same (`namespaces`); the landlock backend's has no namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Own namespaces and a view built by mounts (bwrap, native).
    Namespaces,
    /// Landlock and seccomp on the host's filesystem (landlock).
    LandlockOnly,
    /// Nothing (`danger-full-access`).
    None,
}

/// A Linux namespace the sandbox gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Namespace {
    User,
    Mount,
    Pid,
    Ipc,
    Uts,
    Cgroup,
    Net,
}

impl Namespace {
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::User => "user",
            Namespace::Mount => "mount",
            Namespace::Pid => "pid",
            Namespace::Ipc => "ipc",
            Namespace::Uts => "uts",
            Namespace::Cgroup => "cgroup",
            Namespace::Net => "net",
        }
    }

    /// The `CLONE_NEW*` flag.
    pub fn clone_flag(self) -> libc::c_int {
        match self {
            Namespace::User => libc::CLONE_NEWUSER,
            Namespace::Mount => libc::CLONE_NEWNS,
            Namespace::Pid => libc::CLONE_NEWPID,
            Namespace::Ipc => libc::CLONE_NEWIPC,
            Namespace::Uts => libc::CLONE_NEWUTS,
            Namespace::Cgroup => libc::CLONE_NEWCGROUP,
            Namespace::Net => libc::CLONE_NEWNET,
        }
    }
}

/// A file mode, serialized as an octal string (`"1777"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode(pub u32);

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:04o}", self.0))
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        u32::from_str_radix(&s, 8)
            .ok()
            .filter(|m| *m <= 0o7777)
            .map(Mode)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid octal mode {s:?}")))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04o}", self.0)
    }
}

/// One step of the mount view, in order. Paths are sandbox paths; a bind's
/// `src` is a host path (canonical).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum MountOp {
    /// Recursive bind of `src` at `dst`, `nosuid,nodev` on every submount;
    /// read-only: every submount read-only (locked flags kept).
    Bind {
        src: PathBuf,
        dst: PathBuf,
        writable: bool,
    },
    /// A fresh tmpfs (`nosuid,nodev`), `size` bytes at most when given;
    /// read-only when `writable` is false.
    Tmpfs {
        dst: PathBuf,
        mode: Mode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// At most this many inodes (`nr_inodes`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inodes: Option<u64>,
        writable: bool,
    },
    /// A minimal `/dev` on a tmpfs (what bubblewrap's `--dev` makes): null,
    /// zero, full, random, urandom and tty bound from the host, `fd`,
    /// `stdin`, `stdout`, `stderr`, `core` and `ptmx` symlinks, a fresh devpts
    /// instance at `pts` and an empty `shm` directory.
    Dev { dst: PathBuf },
    /// A fresh procfs of the sandbox's PID namespace; `sys`,
    /// `sysrq-trigger`, `irq` and `bus` bound read-only over themselves.
    Proc { dst: PathBuf },
    /// The host's `/dev/null` bound read-only over a file (deny-read).
    MaskFile { dst: PathBuf },
    /// An empty read-only tmpfs of mode 0000 over a directory (deny-read).
    MaskDir { dst: PathBuf },
    /// The host's `/dev/null` bound read-only over a unix socket a host
    /// process had bound when the plan was made (`connect` and `sendto`
    /// to it fail with `ECONNREFUSED`).
    MaskSocket { dst: PathBuf },
    /// `protected` does not exist yet: an empty file is created on the host
    /// at its first missing component `dst` (inside a write root) and the
    /// host's `/dev/null` bound read-only over it, so nothing can be created
    /// there. The supervisor removes the file after the run.
    BlockCreate { dst: PathBuf, protected: PathBuf },
    /// Remount `dst` read-only (not recursive).
    RemountRo { dst: PathBuf },
}

impl MountOp {
    /// The sandbox path this step mounts on.
    pub fn dst(&self) -> &Path {
        match self {
            MountOp::Bind { dst, .. }
            | MountOp::Tmpfs { dst, .. }
            | MountOp::Dev { dst }
            | MountOp::Proc { dst }
            | MountOp::MaskFile { dst }
            | MountOp::MaskDir { dst }
            | MountOp::MaskSocket { dst }
            | MountOp::BlockCreate { dst, .. }
            | MountOp::RemountRo { dst } => dst,
        }
    }

    /// One line for `--explain`.
    pub fn describe(&self) -> String {
        match self {
            MountOp::Bind {
                src,
                dst,
                writable: false,
            } => format!(
                "ro-bind {}{} (every submount read-only, nosuid, nodev, locked flags kept)",
                src.display(),
                arrow(src, dst)
            ),
            MountOp::Bind {
                src,
                dst,
                writable: true,
            } => format!(
                "bind rw {}{} (nosuid, nodev)",
                src.display(),
                arrow(src, dst)
            ),
            MountOp::Tmpfs {
                dst,
                mode,
                size,
                inodes,
                writable,
            } => format!(
                "tmpfs {} (mode {mode}{}{}{})",
                dst.display(),
                size.map(|s| format!(", at most {s} bytes")).unwrap_or_default(),
                inodes
                    .map(|n| format!(", at most {n} inodes"))
                    .unwrap_or_default(),
                if *writable { "" } else { ", read-only" }
            ),
            MountOp::Dev { dst } => format!(
                "dev {} (tmpfs: null zero full random urandom tty from the host, devpts, shm directory)",
                dst.display()
            ),
            MountOp::Proc { dst } => format!(
                "proc {} (fresh, this PID namespace; sys, sysrq-trigger, irq, bus read-only)",
                dst.display()
            ),
            MountOp::MaskFile { dst } => {
                format!("deny-read {} (/dev/null, read-only)", dst.display())
            }
            MountOp::MaskDir { dst } => format!(
                "deny-read {} (empty read-only tmpfs, mode 0000)",
                dst.display()
            ),
            MountOp::MaskSocket { dst } => format!(
                "mask-socket {} (a host unix socket: /dev/null, read-only)",
                dst.display()
            ),
            MountOp::BlockCreate { dst, protected } => format!(
                "protect {} (missing: /dev/null read-only at {}, placeholder removed after the run)",
                protected.display(),
                dst.display()
            ),
            MountOp::RemountRo { dst } => format!("remount {} read-only", dst.display()),
        }
    }
}

fn arrow(src: &Path, dst: &Path) -> String {
    if src == dst {
        String::new()
    } else {
        format!(" -> {}", dst.display())
    }
}

/// How strictly Landlock is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockCompat {
    /// Fail unless at least the ABI v1 filesystem rights are enforced.
    Required,
    /// Apply what the kernel supports and report it.
    BestEffort,
    /// Do not use Landlock.
    Off,
}

/// The rights a Landlock rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockAccess {
    /// Execute, read files, list directories.
    Read,
    /// List directories only.
    ListDir,
    /// File rights (read, write, truncate, execute, device ioctls) and listing.
    Device,
    /// Every filesystem right.
    ReadWrite,
}

/// A Landlock scope (ABI 6): IPC the command may not direct outside its
/// Landlock domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockScope {
    /// Connecting to abstract unix sockets made outside the domain.
    AbstractUnixSocket,
    /// Sending signals to processes outside the domain.
    Signal,
}

impl LandlockScope {
    pub fn describe(self) -> &'static str {
        match self {
            LandlockScope::AbstractUnixSocket => {
                "abstract unix sockets created outside the sandbox: no connect (ABI 6)"
            }
            LandlockScope::Signal => "processes outside the sandbox: no signals (ABI 6)",
        }
    }
}

/// One Landlock rule, opened inside the sandbox (after the mounts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockRule {
    pub path: PathBuf,
    pub access: LandlockAccess,
    /// A missing path is an error (otherwise the rule is skipped).
    pub must_exist: bool,
}

/// The Landlock ruleset: every filesystem right is handled (denied unless a
/// rule grants it), plus the scopes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    pub compat: LandlockCompat,
    pub rules: Vec<LandlockRule>,
    pub scopes: Vec<LandlockScope>,
}

/// What a matching seccomp rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeccompAction {
    /// Fail with EPERM.
    Eperm,
    /// Fail with ENOSYS (libc falls back, e.g. `clone3` -> `clone`).
    Enosys,
    /// Kill the process.
    KillProcess,
    /// Stop the call and ask the supervisor (seccomp user notification):
    /// it performs the call itself on a copy of the arguments, or refuses
    /// it. The filter is installed with a listener the launcher passes to
    /// the supervisor before `execve`.
    Notify,
}

impl SeccompAction {
    pub fn as_str(self) -> &'static str {
        match self {
            SeccompAction::Eperm => "EPERM",
            SeccompAction::Enosys => "ENOSYS",
            SeccompAction::KillProcess => "kill",
            SeccompAction::Notify => "the supervisor decides",
        }
    }
}

/// Width of an argument comparison (the kernel passes 64 bits; some
/// arguments, like an ioctl request, are truncated to 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArgWidth {
    #[serde(rename = "32")]
    Bits32,
    #[serde(rename = "64")]
    Bits64,
}

/// A comparison of one syscall argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArgOp {
    Eq,
    Ne,
    /// `(arg & mask) == value`.
    MaskedEq {
        mask: u64,
    },
}

/// `arg<N> <op> value`, `name` saying what the value means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgCmp {
    pub arg: u8,
    pub width: ArgWidth,
    pub op: ArgOp,
    pub value: u64,
    pub name: String,
}

/// A seccomp rule: `action` for each of `syscalls`, always when `any_of` is
/// empty, else when at least one comparison holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompRule {
    pub syscalls: Vec<String>,
    pub action: SeccompAction,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub any_of: Vec<ArgCmp>,
}

/// The seccomp filter: a deny list (everything not named is allowed),
/// installed last, right before `execve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    /// Install nothing (`danger-full-access`).
    pub enabled: bool,
    /// Syscalls made with another architecture's calling convention.
    pub foreign_arch: SeccompAction,
    /// x86_64: syscall numbers with the x32 bit set (they would bypass rules
    /// keyed on the 64-bit numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x32: Option<SeccompAction>,
    pub rules: Vec<SeccompRule>,
}

/// One variable set to a fixed value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// The command's environment: it starts empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPlan {
    /// Names copied from the caller's environment (each was set there when
    /// the plan was made), sorted.
    pub pass: Vec<String>,
    /// Variables set to fixed values; they win over `pass`.
    pub set: Vec<EnvVar>,
}

impl EnvPlan {
    /// The complete environment: the `pass` variables `lookup` knows, then
    /// `set`; sorted by name.
    pub fn environment(
        &self,
        mut lookup: impl FnMut(&str) -> Option<OsString>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = self
            .pass
            .iter()
            .filter(|n| !self.set.iter().any(|s| &s.name == *n))
            .filter_map(|n| lookup(n).map(|v| (OsString::from(n), v)))
            .collect();
        out.extend(
            self.set
                .iter()
                .map(|v| (OsString::from(&v.name), OsString::from(&v.value))),
        );
        out.sort();
        out
    }
}

/// The network the command gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NetworkPlan {
    /// No route out: an own network namespace with only loopback (up), or,
    /// without namespaces, seccomp refusing every socket but `AF_UNIX`.
    Off,
    /// The host's network.
    Host,
    /// An own network namespace with only loopback, whose one way out is
    /// the supervisor's filtering proxy: its unix socket (in a private host
    /// directory, bound into the sandbox at the same path: the one host
    /// socket the sandbox can reach) and, on `127.0.0.1:port`, a bridge
    /// that PID 1 starts, which hands each connection to the proxy. The
    /// proxy variables point at the bridge; there is no DNS server.
    Proxied {
        socket: PathBuf,
        port: u16,
        /// The rules the proxy applies.
        allow: zot_policy::net::AllowList,
    },
}

impl NetworkPlan {
    /// The proxy's socket, when the network is proxied.
    pub fn proxy(&self) -> Option<(&Path, u16)> {
        match self {
            NetworkPlan::Proxied { socket, port, .. } => Some((socket, *port)),
            _ => None,
        }
    }
}

/// A resource limit set before `execve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RlimitResource {
    /// Core dump size (`RLIMIT_CORE`).
    Core,
    /// File size (`RLIMIT_FSIZE`).
    Fsize,
    /// Processes of the user (`RLIMIT_NPROC`).
    Nproc,
    /// Open files (`RLIMIT_NOFILE`).
    Nofile,
    /// Address space (`RLIMIT_AS`).
    As,
}

impl RlimitResource {
    pub fn raw(self) -> libc::__rlimit_resource_t {
        match self {
            RlimitResource::Core => libc::RLIMIT_CORE,
            RlimitResource::Fsize => libc::RLIMIT_FSIZE,
            RlimitResource::Nproc => libc::RLIMIT_NPROC,
            RlimitResource::Nofile => libc::RLIMIT_NOFILE,
            RlimitResource::As => libc::RLIMIT_AS,
        }
    }
}

/// `setrlimit(resource, soft, hard)`; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rlimit {
    pub resource: RlimitResource,
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// Where confinement falls short of the mode, as planned for the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gap {
    /// Without mounts, protected paths inside writable roots stay writable.
    ProtectedPathsWritable,
    /// Without mounts, deny-read paths are carved out of the Landlock read
    /// rules: enforced, but their parent directories cannot be listed.
    DenyReadCarved,
    /// No PID namespace: host processes are visible.
    NoPidNamespace,
    /// Without a private /tmp and /run, and with the network on, host unix
    /// sockets can be connected to by path.
    HostUnixSockets,
    /// Without a user namespace the process limit would count every
    /// process of the user on the host (and not apply to root): not set.
    NoProcessLimit,
    /// uid 0 is exempt from `RLIMIT_NPROC` and the kernel (before 6.14)
    /// has no per-namespace `pid_max`: no process limit.
    NoProcessLimitForRoot,
    /// Without a mount namespace the private tmpfs (and its size limit)
    /// does not exist: writes go where Landlock allows them.
    NoTmpfsLimit,
    /// The kernel (or the host's ptrace policy) does not let the supervisor
    /// check `connect`/`sendto`/`sendmsg` (seccomp user notification,
    /// `pidfd_getfd`, `openat2`): host sockets bound before the launch are
    /// masked, but one a host process binds later in a visible directory,
    /// or one bound in another network namespace, stays reachable.
    HostSocketsAfterLaunch,
    /// Without a mount namespace `/tmp`, `/var/tmp` and `/dev/shm` are the
    /// host's: writable (ordinary programs need them) and shared with the
    /// host; `TMPDIR` is a private directory made for the run.
    TmpSharedWithHost,
    /// No cgroup controller this process may use (a delegated cgroup v2
    /// subtree, or the v1 memory controller as root): no memory limit.
    NoMemoryLimit,
}

/// The part of the confinement a [`Gap`] weakens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    Filesystem,
    Network,
    Pid,
    Limits,
}

impl Gap {
    pub fn area(self) -> Area {
        match self {
            Gap::ProtectedPathsWritable | Gap::DenyReadCarved => Area::Filesystem,
            Gap::NoPidNamespace => Area::Pid,
            Gap::HostUnixSockets | Gap::HostSocketsAfterLaunch => Area::Filesystem,
            Gap::TmpSharedWithHost => Area::Filesystem,
            Gap::NoProcessLimit
            | Gap::NoTmpfsLimit
            | Gap::NoProcessLimitForRoot
            | Gap::NoMemoryLimit => Area::Limits,
        }
    }

    /// How much of its area is left (a caveat leaves it full).
    pub fn level(self) -> Level {
        match self {
            Gap::ProtectedPathsWritable | Gap::HostUnixSockets => Level::Partial,
            // What bwrap and native guaranteed before the supervisor could
            // check connects: reported, not a downgrade of the mode.
            Gap::DenyReadCarved | Gap::HostSocketsAfterLaunch => Level::Full,
            Gap::NoPidNamespace => Level::None,
            Gap::NoProcessLimit | Gap::NoTmpfsLimit | Gap::NoProcessLimitForRoot => Level::Partial,
            // Reported: a limit the host offers no controller for.
            Gap::NoMemoryLimit => Level::Full,
            Gap::TmpSharedWithHost => Level::Partial,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Gap::ProtectedPathsWritable => {
                "filesystem: landlock cannot keep protected paths (.git/hooks, .git/config, .zot, .agents) read-only inside writable roots"
            }
            Gap::DenyReadCarved => {
                "filesystem: deny-read paths are carved out of the Landlock read rules (their parent directories cannot be listed)"
            }
            Gap::NoPidNamespace => {
                "pid: no pid namespace, host processes and their command lines (/proc/PID/cmdline) are visible (seccomp still blocks ptrace, Landlock scoping signals)"
            }
            Gap::NoProcessLimit => {
                "limits: no user namespace, so no per-sandbox process limit (RLIMIT_NPROC would count the user's host processes)"
            }
            Gap::NoProcessLimitForRoot => {
                "limits: uid 0 is exempt from RLIMIT_NPROC and this kernel (before 6.14) has no per-namespace pid_max: no process limit"
            }
            Gap::NoTmpfsLimit => {
                "limits: no private tmpfs, so no size limit on temporary files (the file size rlimit still applies)"
            }
            Gap::HostUnixSockets => {
                "network: host unix sockets (docker, ssh-agent, dbus) stay reachable by path without a mount namespace"
            }
            Gap::TmpSharedWithHost => {
                "filesystem: no mount namespace, so /tmp, /var/tmp and /dev/shm are the host's, writable and shared with the host (TMPDIR is a private directory of the run)"
            }
            Gap::NoMemoryLimit => {
                "limits: memory is not enforced: no cgroup controller usable here (a delegated cgroup v2 subtree, or the v1 memory controller as root)"
            }
            Gap::HostSocketsAfterLaunch => {
                "network: the supervisor cannot check connect/sendto/sendmsg here (seccomp user notification, pidfd_getfd or openat2 missing, see `zot debug sandbox --check`): host unix sockets bound after the launch in a visible directory, or in another network namespace, stay reachable"
            }
        }
    }
}

/// Everything a sandbox is. Serializable: the launcher receives it on its
/// spec pipe, `--explain --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPlan {
    pub mode: SandboxMode,
    pub isolation: Isolation,
    /// Namespaces to create (bwrap: `--unshare-*`; native: `clone` flags).
    pub namespaces: Vec<Namespace>,
    /// The command's working directory (visible in the view).
    pub cwd: PathBuf,
    /// The write roots (canonical): writable in the view, and the only
    /// places Landlock lets the command write besides private temp dirs.
    pub write_roots: Vec<PathBuf>,
    /// Paths inside the write roots that stay read-only, also when they do
    /// not exist yet (the agent's file tools apply the same list).
    pub protected: Vec<PathBuf>,
    /// The mount view, in order (empty without a mount namespace).
    pub mounts: Vec<MountOp>,
    pub landlock: LandlockPlan,
    pub seccomp: SeccompPlan,
    pub env: EnvPlan,
    pub network: NetworkPlan,
    pub rlimits: Vec<Rlimit>,
    /// The PID namespace's `pid_max`, written before the capabilities are
    /// dropped (bwrap: `--cap-add CAP_SYS_ADMIN,CAP_SETPCAP` for that).
    /// Bounds the processes of uid 0 too, which `RLIMIT_NPROC` exempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_max: Option<u64>,
    /// What this plan cannot enforce for the mode (and caveats).
    pub unenforced: Vec<Gap>,
}

impl LaunchPlan {
    pub fn has(&self, ns: Namespace) -> bool {
        self.namespaces.contains(&ns)
    }

    /// The `CLONE_NEW*` flags of [`LaunchPlan::namespaces`].
    pub fn clone_flags(&self) -> libc::c_int {
        self.namespaces.iter().fold(0, |f, ns| f | ns.clone_flag())
    }

    /// Host files the view creates as mount points for protected paths that
    /// do not exist yet (to remove after the run).
    pub fn placeholders(&self) -> Vec<PathBuf> {
        self.mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::BlockCreate { dst, .. } => Some(dst.clone()),
                _ => None,
            })
            .collect()
    }

    /// Paths inside the write roots that the view binds read-only onto
    /// themselves (protected paths as they were found when planning; one
    /// may be a placeholder another run made).
    pub fn read_only_protections(&self) -> Vec<PathBuf> {
        self.mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::Bind {
                    src,
                    dst,
                    writable: false,
                } if src == dst
                    && self
                        .write_roots
                        .iter()
                        .any(|r| dst.starts_with(r) && dst != r) =>
                {
                    Some(dst.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The level of `area` this plan leaves (lowest of its gaps).
    pub fn level(&self, area: Area) -> Level {
        self.unenforced
            .iter()
            .filter(|g| g.area() == area)
            .map(|g| g.level())
            .min()
            .unwrap_or(Level::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_is_octal_text() {
        let j = serde_json::to_string(&Mode(0o1777)).unwrap();
        assert_eq!(j, "\"1777\"");
        assert_eq!(
            serde_json::from_str::<Mode>("\"0755\"").unwrap(),
            Mode(0o755)
        );
        assert!(serde_json::from_str::<Mode>("\"9\"").is_err());
        assert!(serde_json::from_str::<Mode>("\"77777\"").is_err());
    }

    #[test]
    fn env_set_wins_and_missing_pass_is_dropped() {
        let env = EnvPlan {
            pass: vec!["HOME".into(), "PATH".into(), "TERM".into()],
            set: vec![EnvVar {
                name: "HOME".into(),
                value: "/tmp".into(),
            }],
        };
        let got = env.environment(|n| match n {
            "PATH" => Some("/bin".into()),
            "HOME" => Some("/root".into()),
            _ => None,
        });
        assert_eq!(
            got,
            vec![
                ("HOME".into(), "/tmp".into()),
                ("PATH".into(), "/bin".into())
            ]
        );
    }

    #[test]
    fn gaps_lower_their_area() {
        let g = [Gap::DenyReadCarved, Gap::ProtectedPathsWritable];
        assert_eq!(g.iter().map(|g| g.level()).min(), Some(Level::Partial));
        assert!(Level::None < Level::Partial && Level::Partial < Level::Full);
    }
}
