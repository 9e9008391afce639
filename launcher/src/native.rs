//! The native backend: the launcher builds the sandbox itself, without an
//! external binary. Runs in the single-threaded launcher process.
//!
//! Process layout (each level sets `PR_SET_PDEATHSIG(SIGKILL)`):
//!
//! ```text
//! launcher (outer)       unshare(user|mnt|pid|ipc|uts[|net]), uid/gid map,
//!   |                    forwards signals, waits, exits with PID 1's code
//!   +- PID 1             builds the mount view, pivot_root, /proc; forwards
//!       |                signals, reaps until ECHILD, exits with the first
//!       |                child's status (128+N for signal N)
//!       +- final child   `enter` returns Ok(()) here: hardening + exec follow
//! ```
//!
//! The mount view is the same the bwrap backend builds: [`plan`] computes it
//! as a list of [`MountOp`]s (pure data, also shown by `--explain`), and the
//! PID 1 executes it under a staging root:
//! `tmpfs on /tmp -> pivot_root -> /oldroot (host) + /newroot (view)`.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use serde::Serialize;
use zot_policy::sandbox::{NetworkPolicy, ReadScope, SandboxPolicy};

/// Errors of the native backend; each names the step and path.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("native backend: {step}")]
    Sys {
        step: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("native backend: {step} {}", path.display())]
    Path {
        step: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("native backend: {0}")]
    Invalid(String),
}

impl NativeError {
    fn sys(step: &'static str) -> impl FnOnce(io::Error) -> NativeError {
        move |source| NativeError::Sys { step, source }
    }
    fn path<'a>(step: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> NativeError + 'a {
        move |source| NativeError::Path {
            step,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Entry of the native backend, called by the launcher before hardening.
/// Returns `Ok(())` only in the final child, inside the namespaces, with the
/// root pivoted and the cwd set. The outer launcher and the PID 1 never
/// return: they exit with the sandboxed program's status.
pub fn enter(spec: &crate::LaunchSpec) -> Result<(), crate::LaunchError> {
    enter_policy(&spec.policy).map_err(|e| {
        let kind = match &e {
            NativeError::Sys { source, .. } | NativeError::Path { source, .. } => source.kind(),
            NativeError::Invalid(_) => io::ErrorKind::InvalidInput,
        };
        crate::LaunchError::Sys {
            stage: "native namespaces",
            source: io::Error::new(kind, e),
        }
    })
}

/// One step of the mount view, in sandbox paths (identical to host paths).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum MountOp {
    /// Recursive bind of a host path; read-only: every submount remounted
    /// read-only keeping its locked flags (nosuid, nodev, noexec, atime).
    Bind {
        src: PathBuf,
        dst: PathBuf,
        writable: bool,
    },
    /// A fresh tmpfs (`mode` octal), read-only when `writable` is false.
    Tmpfs {
        dst: PathBuf,
        mode: u32,
        writable: bool,
    },
    /// Minimal /dev: null zero full random urandom tty, fd links, devpts, shm.
    Dev { dst: PathBuf },
    /// Fresh procfs of the sandbox's PID namespace; /proc/sys, sysrq-trigger,
    /// irq, bus read-only.
    Proc { dst: PathBuf },
    /// `/dev/null` bound read-only over a file (deny-read of a file).
    MaskFile { dst: PathBuf },
    /// Empty read-only tmpfs with mode 000 over a directory (deny-read).
    MaskDir { dst: PathBuf },
    /// A protected path that does not exist yet: an empty file is created
    /// at its first missing component and `/dev/null` bound read-only over
    /// it, so it can't be created. The file is removed after the run.
    BlockCreate { dst: PathBuf, protected: PathBuf },
    /// Remount the (tmpfs) root of a restricted view read-only.
    RemountRootRo,
}

/// Host paths replaced by private tmpfs (host sockets live there).
const PRIVATE_DIRS: [(&str, u32); 3] = [("/tmp", 0o1777), ("/var/tmp", 0o1777), ("/run", 0o755)];

/// Compute the mount view of `policy`, in order. Reads the filesystem
/// (existence, file type, symlink targets), changes nothing.
pub fn plan(policy: &SandboxPolicy) -> Result<Vec<MountOp>, NativeError> {
    let mut ops = Vec::new();
    match &policy.read {
        ReadScope::FullDisk => ops.push(MountOp::Bind {
            src: "/".into(),
            dst: "/".into(),
            writable: false,
        }),
        ReadScope::Restricted { paths } => {
            ops.push(MountOp::Tmpfs {
                dst: "/".into(),
                mode: 0o755,
                writable: true,
            });
            // Like bwrap's --ro-bind: the source is resolved, the mount
            // point is the path as given (so /bin -> usr/bin stays /bin).
            let mut reads: Vec<(PathBuf, PathBuf)> = paths
                .iter()
                .filter(|p| !is_under_private(p))
                .filter_map(|p| std::fs::canonicalize(p).ok().map(|c| (c, p.clone())))
                .collect();
            reads.sort_by(|a, b| {
                let d = |p: &PathBuf| p.components().count();
                d(&a.1).cmp(&d(&b.1)).then_with(|| a.1.cmp(&b.1))
            });
            reads.dedup_by(|a, b| a.1 == b.1);
            for (src, dst) in reads {
                ops.push(MountOp::Bind {
                    src,
                    dst,
                    writable: false,
                });
            }
        }
    }
    for (dir, mode) in PRIVATE_DIRS {
        if Path::new(dir).is_dir() || matches!(policy.read, ReadScope::Restricted { .. }) {
            ops.push(MountOp::Tmpfs {
                dst: dir.into(),
                mode,
                writable: true,
            });
        }
    }
    ops.push(MountOp::Dev { dst: "/dev".into() });
    // Read scopes inside the private dirs are bound back read-only.
    if let ReadScope::Restricted { paths } = &policy.read {
        let mut hidden: Vec<PathBuf> = paths
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| is_under_private(p))
            .collect();
        sort_by_depth(&mut hidden);
        hidden.dedup();
        for p in hidden {
            ops.push(MountOp::Bind {
                src: p.clone(),
                dst: p,
                writable: false,
            });
        }
    }
    if policy.network == NetworkPolicy::On {
        // Name resolution often points into /run (systemd-resolved).
        for f in ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"] {
            if let Ok(t) = std::fs::canonicalize(f) {
                if is_under_private(&t) && t.is_file() {
                    ops.push(MountOp::Bind {
                        src: t.clone(),
                        dst: t,
                        writable: false,
                    });
                }
            }
        }
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for r in &policy.write_roots {
        let c =
            std::fs::canonicalize(r).map_err(NativeError::path("write root does not exist:", r))?;
        roots.push(c);
    }
    sort_by_depth(&mut roots);
    roots.dedup();
    // A read-only cwd inside a private dir (e.g. /tmp/x in read-only mode)
    // stays visible, read-only.
    if matches!(policy.read, ReadScope::FullDisk)
        && is_under_private(&policy.cwd)
        && !roots.iter().any(|r| policy.cwd.starts_with(r))
    {
        if let Ok(c) = std::fs::canonicalize(&policy.cwd) {
            ops.push(MountOp::Bind {
                src: c.clone(),
                dst: c,
                writable: false,
            });
        }
    }
    for r in &roots {
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
    for p in &policy.protected {
        let Some(root) = roots.iter().rev().find(|r| p.starts_with(r)) else {
            // Outside every write root nothing can write it: already read-only.
            continue;
        };
        if let Some(parent) = p.parent() {
            if parent.file_name() == Some(OsStr::new(".git"))
                && parent.starts_with(root)
                && parent.symlink_metadata().is_ok_and(|m| m.is_dir())
                && !pins.iter().any(|x| x == parent)
            {
                pins.push(parent.to_path_buf());
            }
        }
        let op = match protection_for(root, p) {
            Some(Protection::ReadOnly(at)) => {
                let c = std::fs::canonicalize(&at).unwrap_or(at);
                MountOp::Bind {
                    src: c.clone(),
                    dst: c,
                    writable: false,
                }
            }
            Some(Protection::Missing(at)) => MountOp::BlockCreate {
                dst: at,
                protected: p.clone(),
            },
            None => continue,
        };
        let dup = prots.iter().any(|o| match (o, &op) {
            (MountOp::Bind { dst: a, .. }, MountOp::Bind { dst: b, .. }) => a == b,
            (MountOp::BlockCreate { dst: a, .. }, MountOp::BlockCreate { dst: b, .. }) => a == b,
            _ => false,
        });
        if !dup {
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
    let depth_of = |o: &MountOp| match o {
        MountOp::Bind { dst, .. } | MountOp::BlockCreate { dst, .. } => dst.components().count(),
        _ => 0,
    };
    prots.sort_by_key(depth_of);
    ops.extend(prots);
    let mut denies: Vec<PathBuf> = policy.deny_read.clone();
    sort_by_depth(&mut denies);
    for p in &denies {
        let Ok(c) = std::fs::canonicalize(p) else {
            continue;
        };
        if is_under_private(&c) && !roots.iter().any(|r| c.starts_with(r)) {
            continue; // hidden by the private /tmp, /var/tmp or /run already
        }
        let Ok(meta) = std::fs::metadata(&c) else {
            continue;
        };
        if meta.is_dir() {
            ops.push(MountOp::MaskDir { dst: c });
        } else {
            ops.push(MountOp::MaskFile { dst: c });
        }
    }
    ops.push(MountOp::Proc {
        dst: "/proc".into(),
    });
    if matches!(policy.read, ReadScope::Restricted { .. }) {
        ops.push(MountOp::RemountRootRo);
    }
    Ok(ops)
}

fn is_under_private(p: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|(d, _)| p.starts_with(d))
}

fn sort_by_depth(v: &mut [PathBuf]) {
    v.sort_by(|a, b| {
        a.components()
            .count()
            .cmp(&b.components().count())
            .then_with(|| a.cmp(b))
    });
}

enum Protection {
    /// Bind this existing path read-only onto itself.
    ReadOnly(PathBuf),
    /// This component is missing: block its creation.
    Missing(PathBuf),
}

/// Where to block writes to `protected` inside `root` (same rule as the
/// bwrap backend): the first missing component, else a non-directory
/// ancestor (e.g. a `.git` file of a worktree), else the path itself.
fn protection_for(root: &Path, protected: &Path) -> Option<Protection> {
    let rel = protected.strip_prefix(root).ok()?;
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        if let Component::Normal(n) = comp {
            cur.push(n);
        } else {
            return None;
        }
        match cur.symlink_metadata() {
            Err(_) => return Some(Protection::Missing(cur)),
            Ok(m) if cur != protected && !m.is_dir() => return Some(Protection::ReadOnly(cur)),
            Ok(_) => {}
        }
    }
    Some(Protection::ReadOnly(cur))
}

// ------------------------------------------------------------ execution

static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = FORWARD_TO.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

const FORWARDED: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

fn install_forwarders(pid: libc::pid_t) {
    FORWARD_TO.store(pid, Ordering::Relaxed);
    for sig in FORWARDED {
        // SAFETY: installing a handler that only calls kill().
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = forward_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn reset_forwarders() {
    for sig in FORWARDED {
        // SAFETY: restoring the default disposition.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

fn cstr(p: &Path) -> Result<CString, NativeError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| NativeError::Invalid(format!("path contains NUL: {}", p.display())))
}

fn close_from(first: libc::c_uint, keep: Option<libc::c_int>) {
    // SAFETY: closing fds we own; no Rust object refers to them afterwards
    // (this process only waits and exits).
    unsafe {
        match keep {
            Some(k) if k as libc::c_uint >= first => {
                if k as libc::c_uint > first {
                    libc::syscall(libc::SYS_close_range, first, k as libc::c_uint - 1, 0);
                }
                libc::syscall(libc::SYS_close_range, k as libc::c_uint + 1, u32::MAX, 0);
            }
            _ => {
                libc::syscall(libc::SYS_close_range, first, u32::MAX, 0);
            }
        }
    }
}

fn wait_status(pid: libc::pid_t) -> i32 {
    let mut st = 0;
    loop {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            return decode_status(st);
        }
        if r < 0 && errno().raw_os_error() != Some(libc::EINTR) {
            return 125;
        }
    }
}

fn decode_status(st: libc::c_int) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        125
    }
}

fn exit_now(code: i32) -> ! {
    // SAFETY: terminate without running destructors or atexit handlers of
    // a forked copy.
    unsafe { libc::_exit(code) }
}

fn set_pdeathsig() -> Result<(), NativeError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(NativeError::sys("prctl(PR_SET_PDEATHSIG)")(errno()));
    }
    Ok(())
}

fn write_proc(path: &str, data: &str) -> Result<(), NativeError> {
    std::fs::write(path, data).map_err(NativeError::path("writing", Path::new(path)))
}

/// Namespace flags the native backend unshares for `policy`.
pub fn unshare_flags(policy: &SandboxPolicy) -> libc::c_int {
    let mut f = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    if policy.network == NetworkPolicy::Off {
        f |= libc::CLONE_NEWNET;
    }
    f
}

/// The native backend on a policy (see [`enter`]).
pub fn enter_policy(policy: &SandboxPolicy) -> Result<(), NativeError> {
    // SAFETY: plain getters.
    let (uid, gid, outer_pid) = unsafe { (libc::getuid(), libc::getgid(), libc::getpid()) };
    // The outer launcher dies with the supervisor too (then PID 1 with it,
    // then the whole namespace).
    // SAFETY: getter.
    let parent = unsafe { libc::getppid() };
    set_pdeathsig()?;
    // SAFETY: getter.
    if unsafe { libc::getppid() } != parent {
        return Err(NativeError::Invalid(
            "the supervisor exited before the sandbox started".into(),
        ));
    }
    let ops = plan(policy)?;
    // SAFETY: unshare with flags only; fails with EINVAL if multi-threaded.
    if unsafe { libc::unshare(unshare_flags(policy)) } != 0 {
        let err = errno();
        let step = match err.raw_os_error() {
            Some(libc::ENOSPC) => "unshare of user namespaces (limit reached: raise user.max_user_namespaces)",
            Some(libc::EPERM) | Some(libc::EACCES) => "unshare of user namespaces (denied: check kernel.apparmor_restrict_unprivileged_userns, kernel.unprivileged_userns_clone or the container's seccomp profile)",
            Some(libc::EINVAL) | Some(libc::ENOSYS) => "unshare of user namespaces (kernel without CONFIG_USER_NS / namespace support)",
            _ => "unshare(user, mount, pid, ipc, uts, net namespaces)",
        };
        return Err(NativeError::sys(step)(err));
    }
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;

    // Liveness pipe: PID 1 sees POLLHUP when the outer launcher is gone.
    let mut fds = [0; 2];
    // SAFETY: valid array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(NativeError::sys("pipe")(errno()));
    }
    let (alive_rd, alive_wr) = (fds[0], fds[1]);
    // SAFETY: the launcher is single-threaded.
    let pid1 = unsafe { libc::fork() };
    if pid1 < 0 {
        return Err(NativeError::sys("fork of PID 1")(errno()));
    }
    if pid1 > 0 {
        // Outer launcher: keep only stdio and the liveness pipe.
        // SAFETY: our fd.
        unsafe { libc::close(alive_rd) };
        close_from(3, Some(alive_wr));
        install_forwarders(pid1);
        let code = wait_status(pid1);
        exit_now(code);
    }
    // PID 1 of the new PID namespace.
    // SAFETY: our fd.
    unsafe { libc::close(alive_wr) };
    set_pdeathsig()?;
    let mut pfd = libc::pollfd {
        fd: alive_rd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling our pipe without waiting.
    if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
        exit_now(125); // the outer launcher is already gone
    }
    // SAFETY: our fd.
    unsafe { libc::close(alive_rd) };
    let _ = outer_pid;
    let created = build_view(&ops)?;
    let cwd = &policy.cwd;
    if std::env::set_current_dir(cwd).is_err() {
        return Err(NativeError::Invalid(format!(
            "working directory {} is not visible in the sandbox",
            cwd.display()
        )));
    }
    // SAFETY: single-threaded.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(NativeError::sys("fork of the sandboxed process")(errno()));
    }
    if child == 0 {
        set_pdeathsig()?;
        // SAFETY: getter.
        if unsafe { libc::getppid() } != 1 {
            exit_now(125);
        }
        return Ok(());
    }
    close_from(3, None);
    install_forwarders(child);
    let code = reap(child);
    cleanup_created(&created);
    exit_now(code)
}

/// PID 1's loop: reap everything; when the first child exits, kill the
/// rest of the namespace (no orphan outlives the sandbox), reap until
/// ECHILD, return the first child's status.
fn reap(first: libc::pid_t) -> i32 {
    let mut code = None;
    loop {
        let mut st = 0;
        // SAFETY: waiting for any child.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r < 0 {
            match errno().raw_os_error() {
                Some(libc::EINTR) => continue,
                _ => break, // ECHILD
            }
        }
        if r == first && code.is_none() {
            code = Some(decode_status(st));
            FORWARD_TO.store(0, Ordering::Relaxed);
            // SAFETY: as PID 1, -1 targets every other process in the namespace.
            unsafe { libc::kill(-1, libc::SIGKILL) };
        }
    }
    code.unwrap_or(125)
}

/// Remove the placeholder files made for not-yet-existing protected paths
/// (only when still empty regular files).
fn cleanup_created(created: &[PathBuf]) {
    for p in created.iter().rev() {
        let Ok(c) = cstr(p) else { continue };
        // SAFETY: detaching our own mount.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        if let Ok(m) = p.symlink_metadata() {
            if m.is_file() && m.len() == 0 {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

const STAGE: &str = "/tmp";
const NEWROOT: &str = "/newroot";
const OLDROOT: &str = "/oldroot";

fn in_root(root: &str, p: &Path) -> PathBuf {
    let rel = p.strip_prefix("/").unwrap_or(p);
    if rel.as_os_str().is_empty() {
        PathBuf::from(root)
    } else {
        Path::new(root).join(rel)
    }
}

fn mount_raw(
    src: Option<&Path>,
    dst: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let to_c =
        |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput);
    let src_c = src.map(to_c).transpose()?;
    let dst_c = to_c(dst)?;
    let fs_c = fstype.map(|s| CString::new(s).unwrap());
    let data_c = data.map(|s| CString::new(s).unwrap());
    // SAFETY: valid C strings or NULL.
    let r = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            dst_c.as_ptr(),
            fs_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    if r != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

fn pivot_root(new: &Path, old: &Path) -> io::Result<()> {
    let n = CString::new(new.as_os_str().as_bytes()).unwrap();
    let o = CString::new(old.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C strings.
    if unsafe { libc::syscall(libc::SYS_pivot_root, n.as_ptr(), o.as_ptr()) } != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// Create `p` (a mount point) as a directory or an empty file, with parents.
fn ensure_mountpoint(p: &Path, dir: bool) -> io::Result<()> {
    match p.symlink_metadata() {
        Ok(m) if m.is_dir() == dir || (!dir && !m.is_dir()) => return Ok(()),
        Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        Err(_) => {}
    }
    if dir {
        std::fs::create_dir_all(p)
    } else {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .map(drop)
    }
}

/// Build the view described by `ops` and pivot into it. Returns the
/// placeholder files created on the host for [`MountOp::BlockCreate`].
fn build_view(ops: &[MountOp]) -> Result<Vec<PathBuf>, NativeError> {
    let e = NativeError::path;
    mount_raw(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
    .map_err(e("making mounts private", Path::new("/")))?;
    let stage = Path::new(STAGE);
    mount_raw(
        Some(Path::new("tmpfs")),
        stage,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755"),
    )
    .map_err(e("mounting the staging tmpfs on", stage))?;
    let old_in_stage = stage.join(&OLDROOT[1..]);
    std::fs::create_dir(&old_in_stage).map_err(e("creating", &old_in_stage))?;
    std::fs::create_dir(stage.join(&NEWROOT[1..]))
        .map_err(e("creating", &stage.join(&NEWROOT[1..])))?;
    pivot_root(stage, &old_in_stage).map_err(e("pivot_root to the staging root", stage))?;
    std::env::set_current_dir("/").map_err(e("chdir", Path::new("/")))?;

    let mut created = Vec::new();
    for op in ops {
        apply(op, &mut created)?;
    }
    let old = Path::new(OLDROOT);
    let old_c = cstr(old)?;
    // SAFETY: detaching the host tree from our namespace.
    if unsafe { libc::umount2(old_c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(e("unmounting", old)(errno()));
    }
    std::env::set_current_dir(NEWROOT).map_err(e("chdir", Path::new(NEWROOT)))?;
    pivot_root(Path::new("."), Path::new(".")).map_err(e("pivot_root into", Path::new(NEWROOT)))?;
    let dot = CString::new(".").unwrap();
    // SAFETY: detaching the stacked staging root.
    if unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(e("unmounting the staging root", Path::new("/"))(errno()));
    }
    std::env::set_current_dir("/").map_err(e("chdir", Path::new("/")))?;
    Ok(created)
}

fn apply(op: &MountOp, created: &mut Vec<PathBuf>) -> Result<(), NativeError> {
    let e = NativeError::path;
    let nosuid_nodev = libc::MS_NOSUID | libc::MS_NODEV;
    match op {
        MountOp::Bind { src, dst, writable } => {
            let s = in_root(OLDROOT, src);
            let d = in_root(NEWROOT, dst);
            let is_dir = s.is_dir();
            ensure_mountpoint(&d, is_dir).map_err(e("creating mount point", dst))?;
            mount_raw(Some(&s), &d, None, libc::MS_BIND | libc::MS_REC, None)
                .map_err(e("bind mounting", dst))?;
            if !writable {
                remount_tree_ro(&d)?;
            }
        }
        MountOp::Tmpfs {
            dst,
            mode,
            writable,
        } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, true).map_err(e("creating mount point", dst))?;
            let mut flags = nosuid_nodev;
            if !writable {
                flags |= libc::MS_RDONLY;
            }
            mount_raw(
                Some(Path::new("tmpfs")),
                &d,
                Some("tmpfs"),
                flags,
                Some(&format!("mode={mode:o}")),
            )
            .map_err(e("mounting tmpfs on", dst))?;
        }
        MountOp::Dev { dst } => {
            build_dev(&in_root(NEWROOT, dst)).map_err(|(what, source)| NativeError::Path {
                step: what,
                path: dst.clone(),
                source,
            })?
        }
        MountOp::Proc { dst } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, true).map_err(e("creating mount point", dst))?;
            mount_raw(
                Some(Path::new("proc")),
                &d,
                Some("proc"),
                nosuid_nodev | libc::MS_NOEXEC,
                None,
            )
            .map_err(e("mounting a fresh /proc on", dst))?;
            for sub in ["sys", "sysrq-trigger", "irq", "bus"] {
                let p = d.join(sub);
                if p.symlink_metadata().is_err() {
                    continue;
                }
                mount_raw(Some(&p), &p, None, libc::MS_BIND | libc::MS_REC, None)
                    .map_err(e("bind mounting", &p))?;
                remount_tree_ro(&p)?;
            }
        }
        MountOp::MaskFile { dst } => {
            let d = in_root(NEWROOT, dst);
            if d.symlink_metadata().is_err() {
                return Ok(()); // not in the view (e.g. under the private /tmp): nothing to read
            }
            dev_null_over(&d, nosuid_nodev).map_err(e("masking", dst))?;
        }
        MountOp::MaskDir { dst } => {
            let d = in_root(NEWROOT, dst);
            if d.symlink_metadata().is_err() {
                return Ok(()); // not in the view: nothing to read
            }
            mount_raw(
                Some(Path::new("tmpfs")),
                &d,
                Some("tmpfs"),
                nosuid_nodev | libc::MS_NOEXEC | libc::MS_RDONLY,
                Some("mode=000,size=4k"),
            )
            .map_err(e("masking", dst))?;
        }
        MountOp::BlockCreate { dst, .. } => {
            let d = in_root(NEWROOT, dst);
            match ensure_mountpoint(&d, false) {
                Ok(()) => {}
                Err(err) => return Err(e("creating placeholder for protected path", dst)(err)),
            }
            created.push(dst.clone());
            dev_null_over(&d, nosuid_nodev).map_err(e("protecting", dst))?;
        }
        MountOp::RemountRootRo => {
            let d = Path::new(NEWROOT);
            remount_one_ro(d, nosuid_nodev).map_err(e("remounting read-only", Path::new("/")))?;
        }
    }
    Ok(())
}

/// Bind the host's `/dev/null` over `p` and make it read-only, noexec plus
/// `flags` (a masked file reads empty; a placeholder cannot be written).
fn dev_null_over(p: &Path, flags: libc::c_ulong) -> io::Result<()> {
    mount_raw(
        Some(Path::new("/oldroot/dev/null")),
        p,
        None,
        libc::MS_BIND,
        None,
    )?;
    remount_one_ro(p, flags | libc::MS_NOEXEC)
}

fn remount_one_ro(p: &Path, flags: libc::c_ulong) -> io::Result<()> {
    mount_raw(
        None,
        p,
        None,
        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags,
        None,
    )
}

/// One line of /proc/self/mountinfo: mount point and per-mount flags.
#[derive(Debug, PartialEq, Eq)]
struct MountInfo {
    mountpoint: PathBuf,
    flags: libc::c_ulong,
}

fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let mp = it.nth(4)?;
            let opts = it.next()?;
            let mut flags = 0;
            for o in opts.split(',') {
                flags |= match o {
                    "ro" => libc::MS_RDONLY,
                    "nosuid" => libc::MS_NOSUID,
                    "nodev" => libc::MS_NODEV,
                    "noexec" => libc::MS_NOEXEC,
                    "noatime" => libc::MS_NOATIME,
                    "nodiratime" => libc::MS_NODIRATIME,
                    "relatime" => libc::MS_RELATIME,
                    "nosymfollow" => 256, // MS_NOSYMFOLLOW
                    _ => 0,
                };
            }
            Some(MountInfo {
                mountpoint: PathBuf::from(unescape_octal(mp)),
                flags,
            })
        })
        .collect()
}

fn unescape_octal(s: &str) -> std::ffi::OsString {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsStr::from_bytes(&out).to_os_string()
}

/// Remount `top` and every mount below it read-only, keeping each mount's
/// locked flags. Mounts under the staging /newroot/{proc,dev} are covered
/// later and may refuse (EACCES/EPERM): those are tolerated; anywhere else
/// a refusal is an error (fail closed).
fn remount_tree_ro(top: &Path) -> Result<(), NativeError> {
    let text = std::fs::read_to_string("/oldroot/proc/self/mountinfo").map_err(
        NativeError::path("reading", Path::new("/oldroot/proc/self/mountinfo")),
    )?;
    let covered = [Path::new("/newroot/proc"), Path::new("/newroot/dev")];
    for m in parse_mountinfo(&text) {
        if !m.mountpoint.starts_with(top) {
            continue;
        }
        let keep = m.flags
            & !(libc::MS_RDONLY | libc::MS_RELATIME | libc::MS_NOATIME | libc::MS_NODIRATIME);
        match remount_one_ro(&m.mountpoint, keep) {
            Ok(()) => {}
            Err(err) => {
                let tolerated = covered
                    .iter()
                    .any(|c| m.mountpoint.starts_with(c) && top != *c)
                    || matches!(err.raw_os_error(), Some(libc::ENOENT))
                    // Like bwrap: a mount point we cannot even reach (EACCES
                    // on the lookup) is out of reach for the command too.
                    || matches!(err.raw_os_error(), Some(libc::EACCES))
                    || (m.flags & libc::MS_RDONLY != 0
                        && matches!(err.raw_os_error(), Some(libc::EPERM | libc::EACCES)));
                if !tolerated {
                    return Err(NativeError::Path {
                        step: "remounting read-only",
                        path: m
                            .mountpoint
                            .strip_prefix(NEWROOT)
                            .map(|p| Path::new("/").join(p))
                            .unwrap_or(m.mountpoint.clone()),
                        source: err,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Minimal /dev on a fresh tmpfs.
fn build_dev(d: &Path) -> Result<(), (&'static str, io::Error)> {
    ensure_mountpoint(d, true).map_err(|e| ("creating mount point", e))?;
    mount_raw(
        Some(Path::new("tmpfs")),
        d,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755"),
    )
    .map_err(|e| ("mounting tmpfs on", e))?;
    for node in ["null", "zero", "full", "random", "urandom", "tty"] {
        let src = Path::new(OLDROOT).join("dev").join(node);
        if src.symlink_metadata().is_err() {
            continue;
        }
        let dst = d.join(node);
        ensure_mountpoint(&dst, false).map_err(|e| ("creating device node in", e))?;
        mount_raw(Some(&src), &dst, None, libc::MS_BIND, None)
            .map_err(|e| ("binding device into", e))?;
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
        ("core", "/proc/kcore"),
    ] {
        std::os::unix::fs::symlink(target, d.join(name)).map_err(|e| ("creating symlink in", e))?;
    }
    let pts = d.join("pts");
    std::fs::create_dir(&pts).map_err(|e| ("creating", e))?;
    mount_raw(
        Some(Path::new("devpts")),
        &pts,
        Some("devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .map_err(|e| ("mounting devpts in", e))?;
    let shm = d.join("shm");
    std::fs::create_dir(&shm).map_err(|e| ("creating", e))?;
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| ("chmod", e))?;
    mount_raw(
        Some(Path::new("tmpfs")),
        &shm,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=1777"),
    )
    .map_err(|e| ("mounting tmpfs on /dev/shm in", e))?;
    remount_one_ro(d, libc::MS_NOSUID | libc::MS_NOEXEC)
        .map_err(|e| ("remounting read-only", e))?;
    Ok(())
}

/// Used by the outer/PID 1 after failures that can't be returned.
#[allow(dead_code)]
fn die(code: i32) -> ! {
    reset_forwarders();
    exit_now(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_policy::sandbox::{EnvPolicy, SandboxMode};

    fn policy(ws: &Path) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            cwd: ws.to_path_buf(),
            read: ReadScope::FullDisk,
            write_roots: vec![ws.to_path_buf()],
            protected: vec![
                ws.join(".git/hooks"),
                ws.join(".git/config"),
                ws.join(".zot"),
            ],
            deny_read: vec![ws.join("secret"), ws.join("secretdir")],
            network: NetworkPolicy::Off,
            env: EnvPolicy::default(),
        }
    }

    #[test]
    fn plan_orders_view() {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::write(ws.join("secret"), "x").unwrap();
        std::fs::create_dir(ws.join("secretdir")).unwrap();
        let ops = plan(&policy(&ws)).unwrap();
        assert_eq!(
            ops[0],
            MountOp::Bind {
                src: "/".into(),
                dst: "/".into(),
                writable: false
            }
        );
        let pos = |pred: &dyn Fn(&MountOp) -> bool| ops.iter().position(|o| pred(o)).unwrap();
        let tmp = pos(&|o| matches!(o, MountOp::Tmpfs { dst, .. } if dst == Path::new("/tmp")));
        let wr = pos(&|o| matches!(o, MountOp::Bind { dst, writable: true, .. } if *dst == ws));
        let cfg = pos(
            &|o| matches!(o, MountOp::Bind { dst, writable: false, .. } if *dst == ws.join(".git/config")),
        );
        let hooks = pos(
            &|o| matches!(o, MountOp::BlockCreate { dst, .. } if *dst == ws.join(".git/hooks")),
        );
        let zot =
            pos(&|o| matches!(o, MountOp::BlockCreate { dst, .. } if *dst == ws.join(".zot")));
        let mf = pos(&|o| matches!(o, MountOp::MaskFile { dst } if *dst == ws.join("secret")));
        let md = pos(&|o| matches!(o, MountOp::MaskDir { dst } if *dst == ws.join("secretdir")));
        let proc_ = pos(&|o| matches!(o, MountOp::Proc { .. }));
        assert!(tmp < wr && wr < cfg && cfg < mf && hooks < mf && zot < md && md < proc_);
        assert_eq!(proc_, ops.len() - 1);
    }

    #[test]
    fn plan_blocks_first_missing_component_only() {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        let ops = plan(&policy(&ws)).unwrap();
        let blocks: Vec<_> = ops
            .iter()
            .filter_map(|o| match o {
                MountOp::BlockCreate { dst, .. } => Some(dst.clone()),
                _ => None,
            })
            .collect();
        // .git missing: one block on .git covers hooks and config.
        assert_eq!(blocks, vec![ws.join(".git"), ws.join(".zot")]);
    }

    #[test]
    fn plan_rejects_missing_write_root() {
        let ws = tempfile::tempdir().unwrap();
        let mut p = policy(ws.path());
        p.write_roots.push(ws.path().join("nope"));
        let err = plan(&p).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn write_roots_sorted_by_depth() {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        let mut p = policy(&ws);
        p.write_roots = vec![ws.join("a/b"), ws.clone(), ws.join("a")];
        let ops = plan(&p).unwrap();
        let roots: Vec<_> = ops
            .iter()
            .filter_map(|o| match o {
                MountOp::Bind {
                    dst,
                    writable: true,
                    ..
                } => Some(dst.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(roots, vec![ws.clone(), ws.join("a"), ws.join("a/b")]);
    }

    #[test]
    fn mountinfo_parsing_keeps_locked_flags() {
        let t =
            "36 35 98:0 /mnt1 /mnt\\040x rw,nosuid,noexec,relatime shared:1 - ext3 /dev/root rw\n\
                 37 35 98:0 / /ro ro,nodev - ext3 /dev/root rw\n";
        let m = parse_mountinfo(t);
        assert_eq!(m[0].mountpoint, PathBuf::from("/mnt x"));
        assert_eq!(
            m[0].flags,
            libc::MS_NOSUID | libc::MS_NOEXEC | libc::MS_RELATIME
        );
        assert_eq!(m[1].flags, libc::MS_RDONLY | libc::MS_NODEV);
    }

    #[test]
    fn protection_rules() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        assert!(
            matches!(protection_for(r, &r.join("a/b")), Some(Protection::Missing(p)) if p == r.join("a"))
        );
        std::fs::write(r.join("f"), "gitdir: x").unwrap();
        assert!(
            matches!(protection_for(r, &r.join("f/hooks")), Some(Protection::ReadOnly(p)) if p == r.join("f"))
        );
        std::fs::create_dir(r.join("d")).unwrap();
        assert!(
            matches!(protection_for(r, &r.join("d")), Some(Protection::ReadOnly(p)) if p == r.join("d"))
        );
    }
}
