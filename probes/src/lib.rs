//! What this host can enforce: user namespaces, Landlock ABI, seccomp,
//! bubblewrap, /proc, WSL1, containers. Results are cached per process.
//!
//! [`host()`] returns a process-wide [`HostProbes`]. Each probe runs the
//! first time its accessor is called (so a launch that only needs bwrap does
//! not pay for the others) and is cached from then on. [`HostProbes::report`]
//! runs them all and returns a serializable [`HostReport`] (`--json`).
//!
//! Probes that change process state (namespaces, mounts) run in a forked
//! child that only makes raw syscalls before `_exit`, so they are safe to
//! call from a multi-threaded process and never affect the caller.

use std::ffi::CString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde::Serialize;

mod nsprobe;

pub use nsprobe::{NsStage, UsernsError};

/// Process-wide probe cache.
pub fn host() -> &'static HostProbes {
    static HOST: OnceLock<HostProbes> = OnceLock::new();
    HOST.get_or_init(HostProbes::default)
}

/// Lazily computed, cached probe results for this process.
#[derive(Default)]
pub struct HostProbes {
    userns: OnceLock<UsernsProbe>,
    userns_quick: OnceLock<Result<(), UsernsError>>,
    landlock: OnceLock<LandlockProbe>,
    seccomp: OnceLock<SeccompProbe>,
    bwrap: OnceLock<BwrapProbe>,
    wsl1: OnceLock<bool>,
    container: OnceLock<Option<String>>,
    kernel: OnceLock<String>,
}

impl HostProbes {
    /// Unprivileged user namespaces (plus mount/pid/net/ipc/uts inside
    /// them, uid mapping, private mounts, and a fresh /proc).
    pub fn userns(&self) -> &UsernsProbe {
        self.userns.get_or_init(probe_userns)
    }

    /// Cheap check (one fork, one `unshare(CLONE_NEWUSER)`): can this
    /// process create a user namespace at all? Does not prove that mounts
    /// or /proc work inside it ([`HostProbes::userns`] does).
    pub fn userns_quick(&self) -> Result<(), UsernsError> {
        *self.userns_quick.get_or_init(|| {
            if let Some(p) = self.userns.get() {
                return p.error.map_or(Ok(()), Err);
            }
            nsprobe::run_user_only()
        })
    }

    /// Landlock ABI version or why it is unavailable.
    pub fn landlock(&self) -> &LandlockProbe {
        self.landlock.get_or_init(probe_landlock)
    }

    /// Seccomp filter support.
    pub fn seccomp(&self) -> &SeccompProbe {
        self.seccomp.get_or_init(probe_seccomp)
    }

    /// System bubblewrap: found in a trusted `PATH` entry (absolute, outside
    /// the current directory, not writable by others), version, and whether
    /// it can actually create the namespaces we need (run once).
    pub fn bwrap(&self) -> &BwrapProbe {
        self.bwrap.get_or_init(|| {
            let cwd = std::env::current_dir().ok();
            let untrusted: Vec<PathBuf> = cwd.into_iter().collect();
            probe_bwrap(&path_candidates("bwrap"), &untrusted)
        })
    }

    /// `/proc` can be mounted fresh inside a new PID namespace (part of the
    /// user namespace probe).
    pub fn proc_mount(&self) -> &ProcProbe {
        &self.userns().proc
    }

    /// Running under WSL1 (no namespaces, no Landlock, no seccomp).
    pub fn wsl1(&self) -> bool {
        *self.wsl1.get_or_init(probe_wsl1)
    }

    /// The container runtime we appear to run in (`docker`, `podman`,
    /// `kubernetes`, `lxc`, ...), if any.
    pub fn container(&self) -> Option<&str> {
        self.container.get_or_init(probe_container).as_deref()
    }

    /// Kernel release (`uname -r`).
    pub fn kernel(&self) -> &str {
        self.kernel.get_or_init(|| {
            read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
        })
    }

    /// Run every probe and return an owned, serializable snapshot.
    pub fn report(&self) -> HostReport {
        HostReport {
            kernel: self.kernel().to_string(),
            userns: self.userns().clone(),
            landlock: self.landlock().clone(),
            seccomp: self.seccomp().clone(),
            bwrap: self.bwrap().clone(),
            wsl1: self.wsl1(),
            container: self.container().map(str::to_string),
        }
    }
}

impl Serialize for HostProbes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report().serialize(s)
    }
}

/// Everything the probes found, for `--json` and reports.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub kernel: String,
    pub userns: UsernsProbe,
    pub landlock: LandlockProbe,
    pub seccomp: SeccompProbe,
    pub bwrap: BwrapProbe,
    pub wsl1: bool,
    pub container: Option<String>,
}

/// Result of the user namespace probe.
#[derive(Debug, Clone, Serialize)]
pub struct UsernsProbe {
    /// A child could create user+mount+pid+net+ipc+uts namespaces, map its
    /// uid/gid and make its mounts private: the native backend can work.
    pub available: bool,
    /// Why not, when not.
    pub error: Option<UsernsError>,
    /// `kernel.apparmor_restrict_unprivileged_userns` (None: not present).
    pub apparmor_restrict_unprivileged_userns: Option<bool>,
    /// `kernel.unprivileged_userns_clone` (Debian/Ubuntu patch; None: absent).
    pub unprivileged_userns_clone: Option<bool>,
    /// `user.max_user_namespaces` (None: unreadable).
    pub max_user_namespaces: Option<u64>,
    /// Fresh `/proc` inside the new PID namespace.
    pub proc: ProcProbe,
    /// What the operator can do about it.
    pub hint: Option<String>,
}

/// Result of the `/proc` mount probe.
#[derive(Debug, Clone, Serialize)]
pub struct ProcProbe {
    pub available: bool,
    pub error: Option<String>,
    pub hint: Option<String>,
}

/// Why Landlock is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockError {
    /// ENOSYS: the kernel has no Landlock (older than 5.13 or built
    /// without `CONFIG_SECURITY_LANDLOCK`).
    NotImplemented,
    /// EOPNOTSUPP: built in but not enabled at boot (`lsm=`).
    NotEnabled,
    /// Another errno.
    Other(i32),
}

/// Result of the Landlock probe.
#[derive(Debug, Clone, Serialize)]
pub struct LandlockProbe {
    /// Highest ABI version the kernel supports (None: unavailable).
    pub abi: Option<u32>,
    pub error: Option<LandlockError>,
    pub hint: Option<String>,
}

impl LandlockProbe {
    pub fn available(&self) -> bool {
        self.abi.is_some()
    }
}

/// Result of the seccomp probe.
#[derive(Debug, Clone, Serialize)]
pub struct SeccompProbe {
    /// `SECCOMP_SET_MODE_FILTER` with `SECCOMP_RET_ERRNO` is available.
    pub available: bool,
    /// `Seccomp:` from /proc/self/status (0 none, 1 strict, 2 filter).
    pub current_mode: Option<u32>,
    pub error: Option<String>,
    pub hint: Option<String>,
    /// The supervisor can decide on calls of the sandbox itself: seccomp
    /// user notification, `pidfd_open`/`pidfd_getfd`, `openat2`, and a
    /// ptrace policy that lets it take the sandbox's sockets.
    pub user_notify: bool,
    /// What is missing for `user_notify`.
    pub user_notify_missing: Option<String>,
}

/// Result of the bubblewrap probe.
#[derive(Debug, Clone, Serialize)]
pub struct BwrapProbe {
    /// Trusted, canonical path of the bwrap binary found.
    pub path: Option<PathBuf>,
    /// `bwrap --version` output, e.g. `0.8.0`.
    pub version: Option<String>,
    /// A test run with our namespaces, `/proc` and `/dev` succeeded.
    pub works: bool,
    /// Candidates that exist but were refused, with the reason.
    pub rejected: Vec<RejectedCandidate>,
    pub error: Option<String>,
    pub hint: Option<String>,
}

/// A bwrap binary found but not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedCandidate {
    pub path: PathBuf,
    pub reason: String,
}

// ---------------------------------------------------------------- userns

fn probe_userns() -> UsernsProbe {
    let apparmor = read_bool("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    let clone = read_bool("/proc/sys/kernel/unprivileged_userns_clone");
    let max = read_trim("/proc/sys/user/max_user_namespaces").and_then(|s| s.parse().ok());
    let outcome = nsprobe::run();
    let (error, proc) = match outcome {
        Ok(proc_err) => (None, proc_err),
        Err(e) => (Some(e), None),
    };
    let proc = match (&error, proc) {
        (None, None) => ProcProbe {
            available: true,
            error: None,
            hint: None,
        },
        (Some(_), _) => ProcProbe {
            available: false,
            error: Some("user namespaces unavailable".into()),
            hint: None,
        },
        (None, Some(e)) => ProcProbe {
            available: false,
            error: Some(e.to_string()),
            hint: Some(
                "a fresh /proc cannot be mounted (usually parts of /proc are masked by a \
                 container runtime); run the container with an unmasked /proc or use \
                 the landlock backend"
                    .into(),
            ),
        },
    };
    let hint = error.as_ref().map(|e| userns_hint(e, apparmor, clone, max));
    UsernsProbe {
        available: error.is_none(),
        error,
        apparmor_restrict_unprivileged_userns: apparmor,
        unprivileged_userns_clone: clone,
        max_user_namespaces: max,
        proc,
        hint,
    }
}

fn userns_hint(
    err: &UsernsError,
    apparmor: Option<bool>,
    clone: Option<bool>,
    max: Option<u64>,
) -> String {
    use UsernsError::*;
    match err {
        LimitReached => match max {
            Some(0) => "user.max_user_namespaces is 0: set it above 0 \
                        (sysctl -w user.max_user_namespaces=15000)"
                .into(),
            _ => "the user namespace limit is reached (user.max_user_namespaces, also in a \
                  parent namespace); raise it or use the landlock backend"
                .into(),
        },
        Denied { stage, .. } => {
            if apparmor == Some(true) {
                "AppArmor restricts unprivileged user namespaces: set \
                 kernel.apparmor_restrict_unprivileged_userns=0 or install an AppArmor \
                 profile allowing userns for zot/bwrap"
                    .into()
            } else if clone == Some(false) {
                "unprivileged user namespaces are disabled: set \
                 kernel.unprivileged_userns_clone=1"
                    .into()
            } else {
                format!(
                    "{stage} was denied (a container runtime's seccomp profile or a security \
                     module forbids it); allow unshare/mount for zot or use the landlock backend"
                )
            }
        }
        NotSupported => "the kernel lacks user namespace support (CONFIG_USER_NS and \
                         CONFIG_*_NS); rebuild the kernel or use the landlock backend"
            .into(),
        Failed { stage, .. } => format!("{stage} failed; see the error"),
    }
}

/// A cheap check (sysctl reads only, no fork) for settings that certainly
/// forbid user namespaces to this process: returns the reason and the hint.
/// `None` does not prove they work ([`HostProbes::userns`] does).
pub fn userns_blocked_by_sysctl() -> Option<(String, String)> {
    // SAFETY: getter.
    let root = unsafe { libc::geteuid() } == 0;
    if read_trim("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some((
            "user.max_user_namespaces is 0".into(),
            userns_hint(&UsernsError::LimitReached, None, None, Some(0)),
        ));
    }
    if !root && read_bool("/proc/sys/kernel/unprivileged_userns_clone") == Some(false) {
        let d = UsernsError::Denied {
            stage: NsStage::Unshare,
            errno: libc::EPERM,
        };
        return Some((
            "kernel.unprivileged_userns_clone is 0".into(),
            userns_hint(&d, None, Some(false), None),
        ));
    }
    None
}

/// `/proc/self/status`, read with room for all of it up front (/proc says
/// size 0: from an empty buffer, eight reads of growing size).
fn proc_self_status() -> Option<String> {
    use std::io::Read;
    let mut s = String::with_capacity(4096);
    std::fs::File::open("/proc/self/status")
        .and_then(|mut f| f.read_to_string(&mut s))
        .ok()?;
    Some(s)
}

/// Whether something this process cannot see without trying may refuse user
/// namespaces: a seccomp filter on this process (container runtimes,
/// another sandbox) or a parent user namespace with its own limits. When
/// false, [`userns_blocked_by_sysctl`] is the whole story.
pub fn userns_may_be_filtered() -> bool {
    let seccomp = proc_self_status()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))
                .map(|v| v.trim() != "0")
        })
        .unwrap_or(true);
    let initial_userns = read_trim("/proc/self/uid_map")
        .is_some_and(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]);
    seccomp || !initial_userns
}

// ---------------------------------------------------------------- landlock

fn probe_landlock() -> LandlockProbe {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: NULL attr with size 0 and the VERSION flag only queries.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret >= 0 {
        return LandlockProbe {
            abi: Some(ret as u32),
            error: None,
            hint: None,
        };
    }
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    landlock_from_errno(errno)
}

fn landlock_from_errno(errno: i32) -> LandlockProbe {
    let (error, hint) = match errno {
        libc::ENOSYS => (
            LandlockError::NotImplemented,
            "the kernel does not implement Landlock (needs Linux 5.13+ built with \
             CONFIG_SECURITY_LANDLOCK=y)"
                .to_string(),
        ),
        libc::EOPNOTSUPP => (
            LandlockError::NotEnabled,
            "Landlock is built in but disabled: add `landlock` to the `lsm=` kernel boot \
             parameter (or CONFIG_LSM)"
                .to_string(),
        ),
        e => (
            LandlockError::Other(e),
            format!("landlock_create_ruleset failed: errno {e}"),
        ),
    };
    LandlockProbe {
        abi: None,
        error: Some(error),
        hint: Some(hint),
    }
}

// ---------------------------------------------------------------- seccomp

fn probe_seccomp() -> SeccompProbe {
    let current_mode = proc_self_status().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Seccomp:"))
            .and_then(|v| v.trim().parse().ok())
    });
    const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: queries whether an action is available; reads `action` only.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    };
    if ret == 0 {
        let notify = probe_user_notify(current_mode);
        return SeccompProbe {
            available: true,
            current_mode,
            error: None,
            hint: None,
            user_notify: notify.is_ok(),
            user_notify_missing: notify.err(),
        };
    }
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let hint = match errno {
        libc::ENOSYS => "the kernel lacks the seccomp syscall (CONFIG_SECCOMP_FILTER)",
        libc::EINVAL => "the kernel lacks seccomp filters (CONFIG_SECCOMP_FILTER)",
        libc::EOPNOTSUPP => "SECCOMP_RET_ERRNO is not supported by this kernel",
        _ => "seccomp is unavailable",
    };
    SeccompProbe {
        available: false,
        current_mode,
        error: Some(std::io::Error::from_raw_os_error(errno).to_string()),
        hint: Some(hint.into()),
        user_notify: false,
        user_notify_missing: Some("no seccomp filters".into()),
    }
}

/// What the supervisor needs to decide on the sandbox's `connect` and
/// `sendmsg` calls itself; the first thing missing, if any. Cheap: a few
/// syscalls with harmless arguments, and one forked child only when this
/// process already runs under a seccomp filter (a listener of an outer
/// sandbox makes a second one fail with EBUSY).
fn probe_user_notify(current_mode: Option<u32>) -> Result<(), String> {
    const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: reads `action` only.
    if unsafe { libc::syscall(libc::SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0u32, &action) } != 0 {
        return Err("the kernel lacks seccomp user notification (Linux 5.0)".into());
    }
    // SAFETY: pidfd_open of this process; the fd is closed below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as libc::c_int;
    if pidfd < 0 {
        return Err(format!(
            "pidfd_open failed (Linux 5.3): {}",
            std::io::Error::from_raw_os_error(errno())
        ));
    }
    // SAFETY: duplicates our own pidfd into this process.
    let dup = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, pidfd, 0) } as libc::c_int;
    let getfd_err = errno();
    // SAFETY: closing fds we own.
    unsafe {
        if dup >= 0 {
            libc::close(dup);
        }
        libc::close(pidfd);
    }
    if dup < 0 {
        return Err(format!(
            "pidfd_getfd failed (Linux 5.6): {}",
            std::io::Error::from_raw_os_error(getfd_err)
        ));
    }
    // struct open_how { flags, mode, resolve }.
    let how: [u64; 3] = [libc::O_PATH as u64 | libc::O_CLOEXEC as u64, 0, 0];
    // SAFETY: a valid path and open_how of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            how.as_ptr(),
            std::mem::size_of_val(&how),
        )
    } as libc::c_int;
    if fd < 0 {
        return Err(format!(
            "openat2 failed (Linux 5.6): {}",
            std::io::Error::from_raw_os_error(errno())
        ));
    }
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    if read_trim("/proc/sys/kernel/yama/ptrace_scope").as_deref() == Some("3") {
        return Err(
            "kernel.yama.ptrace_scope is 3: the supervisor may not take the sandbox's sockets (pidfd_getfd)"
                .into(),
        );
    }
    if current_mode == Some(2) {
        nsprobe::listener_filter().map_err(|e| {
            format!("a seccomp filter with a listener cannot be installed here: {e}")
        })?;
    }
    Ok(())
}

// ---------------------------------------------------------------- bwrap

/// `name` in every absolute `PATH` entry, in order.
pub fn path_candidates(name: &str) -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .collect()
}

/// Why no trusted helper binary was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedHelper {
    pub name: String,
    /// Candidates that exist but were refused, with the reason.
    pub rejected: Vec<RejectedCandidate>,
}

impl std::fmt::Display for UntrustedHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.rejected.is_empty() {
            write!(f, "{} not found on PATH", self.name)
        } else {
            let why: Vec<String> = self
                .rejected
                .iter()
                .map(|r| format!("{}: {}", r.path.display(), r.reason))
                .collect();
            write!(f, "no trusted {} on PATH ({})", self.name, why.join("; "))
        }
    }
}

/// The first trusted `name` among the absolute `PATH` entries (see
/// [`trusted_binary`]), canonical. Does not run it.
pub fn find_trusted(name: &str, untrusted_roots: &[PathBuf]) -> Result<PathBuf, UntrustedHelper> {
    find_trusted_in(name, &path_candidates(name), untrusted_roots)
}

fn find_trusted_in(
    name: &str,
    candidates: &[PathBuf],
    untrusted_roots: &[PathBuf],
) -> Result<PathBuf, UntrustedHelper> {
    match scan_candidates(candidates, untrusted_roots) {
        (Some(p), _) => Ok(p),
        (None, rejected) => Err(UntrustedHelper {
            name: name.to_string(),
            rejected,
        }),
    }
}

/// The first trusted candidate, and the ones refused before it.
fn scan_candidates(
    candidates: &[PathBuf],
    untrusted_roots: &[PathBuf],
) -> (Option<PathBuf>, Vec<RejectedCandidate>) {
    let roots: Vec<PathBuf> = untrusted_roots
        .iter()
        .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
        .collect();
    let mut rejected = Vec::new();
    for cand in candidates {
        if std::fs::symlink_metadata(cand).is_err() {
            continue;
        }
        match trusted_binary(cand, &roots) {
            Ok(p) => return (Some(p), rejected),
            Err(reason) => rejected.push(RejectedCandidate {
                path: cand.clone(),
                reason,
            }),
        }
    }
    (None, rejected)
}

/// The one trust rule for a helper binary zot runs outside the sandbox
/// (bubblewrap): `cand` must be absolute and, after resolving symlinks, lie
/// outside every root in `untrusted_roots` (the workspace and write roots; `/`
/// is ignored, it would distrust everything), be a regular executable file not
/// writable by group or others, owned by root or the current user, in a
/// directory that is not world-writable without the sticky bit. Returns the
/// canonical path.
pub fn trusted_binary(cand: &Path, untrusted_roots: &[PathBuf]) -> Result<PathBuf, String> {
    if !cand.is_absolute() {
        return Err("relative path".into());
    }
    let canon = std::fs::canonicalize(cand).map_err(|e| format!("cannot resolve: {e}"))?;
    for resolved in [cand, canon.as_path()] {
        if let Some(r) = untrusted_roots
            .iter()
            .find(|r| r.as_os_str() != "/" && resolved.starts_with(r))
        {
            return Err(format!(
                "inside untrusted directory {} (the workspace or a writable root)",
                r.display()
            ));
        }
    }
    let meta = std::fs::metadata(&canon).map_err(|e| format!("cannot stat: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mode = meta.permissions().mode();
    if mode & 0o111 == 0 {
        return Err("not executable".into());
    }
    if mode & 0o022 != 0 {
        return Err("writable by group or others".into());
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != 0 && meta.uid() != euid && !owned_outside_our_userns(meta.uid()) {
        return Err(format!("owned by uid {}", meta.uid()));
    }
    if let Some(dir) = canon.parent() {
        if let Ok(dm) = std::fs::metadata(dir) {
            let m = dm.permissions().mode();
            if m & 0o002 != 0 && m & 0o1000 == 0 {
                return Err(format!("directory {} is world-writable", dir.display()));
            }
        }
    }
    Ok(canon)
}

/// Probe bubblewrap among `candidates` (the first one [`trusted_binary`]
/// accepts wins) and check that it can create the namespaces we need.
pub fn probe_bwrap(candidates: &[PathBuf], untrusted_roots: &[PathBuf]) -> BwrapProbe {
    let (found, rejected) = scan_candidates(candidates, untrusted_roots);
    let Some(path) = found else {
        let error = if rejected.is_empty() {
            "bwrap not found on PATH".to_string()
        } else {
            "no trusted bwrap found (candidates were refused)".to_string()
        };
        return BwrapProbe {
            path: None,
            version: None,
            works: false,
            rejected,
            error: Some(error),
            hint: Some(
                "install bubblewrap from the distribution (e.g. apt install bubblewrap)".into(),
            ),
        };
    };
    let version = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            let s = String::from_utf8_lossy(&o.stdout);
            s.trim().trim_start_matches("bubblewrap").trim().to_string()
        });
    let run = Command::new(&path)
        .args([
            "--new-session",
            "--die-with-parent",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--",
        ])
        .arg(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let (works, error) = match run {
        Ok(o) if o.status.success() => (true, None),
        Ok(o) => {
            let msg = String::from_utf8_lossy(&o.stderr).trim().to_string();
            (false, Some(format!("bwrap test run failed: {msg}")))
        }
        Err(e) => (false, Some(format!("bwrap test run could not start: {e}"))),
    };
    let hint = (!works).then(|| {
        "bwrap cannot create user namespaces here (see the user namespace probe); \
         the native backend has the same needs, the landlock backend does not"
            .to_string()
    });
    BwrapProbe {
        path: Some(path),
        version,
        works,
        rejected,
        error,
        hint,
    }
}

/// In a non-initial user namespace, files of users that are not mapped
/// (e.g. the host's root) show the overflow uid; nobody in this namespace
/// can be that owner, so such a file is as trustworthy as a root-owned one.
pub fn owned_outside_our_userns(uid: u32) -> bool {
    let overflow = read_trim("/proc/sys/kernel/overflowuid").and_then(|s| s.parse::<u32>().ok());
    let initial = read_trim("/proc/self/uid_map")
        .map(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
        .unwrap_or(true);
    !initial && overflow == Some(uid)
}

// ---------------------------------------------------------------- misc

fn probe_wsl1() -> bool {
    is_wsl1_release(&read_trim("/proc/sys/kernel/osrelease").unwrap_or_default())
}

/// WSL1 kernels report e.g. "4.4.0-19041-Microsoft"; WSL2
/// "5.15.90.1-microsoft-standard-WSL2".
fn is_wsl1_release(rel: &str) -> bool {
    rel.contains("Microsoft") && !rel.to_ascii_lowercase().contains("wsl2")
}

fn probe_container() -> Option<String> {
    if let Some(c) = read_trim("/run/systemd/container").filter(|s| !s.is_empty()) {
        return Some(c);
    }
    if Path::new("/.dockerenv").exists() {
        return Some("docker".into());
    }
    if Path::new("/run/.containerenv").exists() {
        return Some("podman".into());
    }
    if let Ok(env) = std::fs::read("/proc/1/environ") {
        for var in env.split(|b| *b == 0) {
            if let Some(v) = var.strip_prefix(b"container=") {
                return Some(String::from_utf8_lossy(v).into_owned());
            }
        }
    }
    let cg = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    for (needle, name) in [
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("lxc", "lxc"),
        ("libpod", "podman"),
    ] {
        if cg.contains(needle) {
            return Some(name.into());
        }
    }
    None
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_bool(path: &str) -> Option<bool> {
    read_trim(path)
        .and_then(|s| s.parse::<u64>().ok())
        .map(|v| v != 0)
}

pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s).expect("no NUL in probe strings")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wsl1_is_told_from_wsl2() {
        assert!(is_wsl1_release("4.4.0-19041-Microsoft"));
        assert!(!is_wsl1_release("5.15.90.1-microsoft-standard-WSL2"));
        assert!(!is_wsl1_release("6.18.0-generic"));
    }

    #[test]
    fn quick_probe_agrees_with_the_full_probe() {
        let full = probe_userns();
        let quick = nsprobe::run_user_only();
        if full.available {
            assert_eq!(quick, Ok(()));
        }
        if let Err(e) = quick {
            assert!(!full.available, "{e}");
        }
    }

    #[test]
    fn sysctl_precheck_agrees_with_the_fork_probe() {
        // When the cheap check says "blocked", the real probe must fail too.
        if userns_blocked_by_sysctl().is_some() {
            assert!(!probe_userns().available);
        }
    }

    #[test]
    fn landlock_errno_hints_differ() {
        let a = landlock_from_errno(libc::ENOSYS);
        let b = landlock_from_errno(libc::EOPNOTSUPP);
        assert_eq!(a.error, Some(LandlockError::NotImplemented));
        assert_eq!(b.error, Some(LandlockError::NotEnabled));
        assert!(b.hint.unwrap().contains("lsm="));
        assert!(a.hint.unwrap().contains("CONFIG_SECURITY_LANDLOCK"));
    }

    #[test]
    fn userns_hints_name_the_knob() {
        let h = userns_hint(&UsernsError::LimitReached, None, None, Some(0));
        assert!(h.contains("user.max_user_namespaces"), "{h}");
        let d = UsernsError::Denied {
            stage: NsStage::Unshare,
            errno: libc::EPERM,
        };
        let h = userns_hint(&d, Some(true), None, Some(100));
        assert!(h.contains("apparmor_restrict_unprivileged_userns"), "{h}");
        let h = userns_hint(&d, None, Some(false), Some(100));
        assert!(h.contains("unprivileged_userns_clone"), "{h}");
    }

    #[test]
    fn host_is_cached_and_serializes() {
        let a = host() as *const HostProbes;
        let b = host() as *const HostProbes;
        assert_eq!(a, b);
        let first = host().userns() as *const UsernsProbe;
        assert_eq!(first, host().userns() as *const UsernsProbe);
        let v = serde_json::to_value(host()).unwrap();
        for key in [
            "kernel",
            "userns",
            "landlock",
            "seccomp",
            "bwrap",
            "wsl1",
            "container",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
    }

    #[test]
    fn bwrap_in_untrusted_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = probe_bwrap(std::slice::from_ref(&fake), &[dir.path().to_path_buf()]);
        assert!(p.path.is_none());
        assert!(!p.works);
        assert_eq!(p.rejected.len(), 1);
        assert!(
            p.rejected[0].reason.contains("untrusted"),
            "{:?}",
            p.rejected
        );
    }

    #[test]
    fn bwrap_in_a_world_writable_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = find_trusted_in("bwrap", std::slice::from_ref(&fake), &[]).unwrap_err();
        assert!(err.rejected[0].reason.contains("world-writable"), "{err}");
        // The sticky bit (like /tmp) makes the directory acceptable.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(
            find_trusted_in("bwrap", std::slice::from_ref(&fake), &[]).unwrap(),
            std::fs::canonicalize(&fake).unwrap()
        );
        // A root of `/` distrusts nothing; the workspace does.
        assert!(trusted_binary(&fake, &[PathBuf::from("/")]).is_ok());
        assert!(trusted_binary(&fake, &[dir.path().to_path_buf()]).is_err());
    }

    #[test]
    fn bwrap_writable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o777)).unwrap();
        let p = probe_bwrap(&[fake], &[]);
        assert!(p.path.is_none());
        assert!(
            p.rejected[0].reason.contains("writable"),
            "{:?}",
            p.rejected
        );
    }

    #[test]
    fn bwrap_symlink_into_untrusted_root_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let real = ws.path().join("bwrap");
        std::fs::write(&real, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = other.path().join("bwrap");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let p = probe_bwrap(&[link], &[ws.path().to_path_buf()]);
        assert!(p.path.is_none(), "{p:?}");
    }

    #[test]
    fn missing_bwrap_has_hint() {
        let dir = tempfile::tempdir().unwrap();
        let p = probe_bwrap(&[dir.path().join("bwrap")], &[]);
        assert!(p.path.is_none());
        assert!(p.hint.unwrap().contains("bubblewrap"));
    }

    #[test]
    fn system_bwrap_probe_matches_reality() {
        // Whatever the probe says must agree with running bwrap ourselves.
        let p = probe_bwrap(&path_candidates("bwrap"), &[]);
        if let Some(path) = &p.path {
            assert!(p.version.is_some(), "{p:?}");
            let ok = Command::new(path)
                .args([
                    "--unshare-user",
                    "--unshare-pid",
                    "--ro-bind",
                    "/",
                    "/",
                    "--proc",
                    "/proc",
                    "--dev",
                    "/dev",
                    "--",
                ])
                .arg(path)
                .arg("--version")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            assert_eq!(ok, p.works, "{p:?}");
        }
    }

    #[test]
    fn userns_probe_matches_unshare() {
        let p = probe_userns();
        // Cross-check with util-linux unshare when present.
        if let Ok(o) = Command::new("unshare")
            .args([
                "-U",
                "-r",
                "-m",
                "-p",
                "-n",
                "-i",
                "-u",
                "-f",
                "--mount-proc",
                "true",
            ])
            .output()
        {
            if o.status.code().is_some() {
                assert_eq!(
                    o.status.success(),
                    p.available && p.proc.available,
                    "{p:?} {o:?}"
                );
            }
        }
        assert_eq!(p.available, p.error.is_none());
        assert_eq!(p.available, p.hint.is_none());
    }

    #[test]
    fn seccomp_and_landlock_probes_are_consistent() {
        let s = probe_seccomp();
        assert_eq!(s.available, s.error.is_none());
        let l = probe_landlock();
        assert_eq!(l.abi.is_some(), l.error.is_none());
    }
}
