//! The single-threaded in-sandbox step: it executes a [`LaunchPlan`].
//!
//! Two ways in, one code path:
//! - **exec**: the supervisor (possibly multi-threaded) starts the `zot`
//!   binary again with [`LAUNCH_ARG`] (`zot __zot-launch --spec-fd N
//!   --status-fd M`) and writes a [`LaunchSpec`] (the plan, the command, its
//!   environment) as JSON on the spec pipe. Inside bwrap this is what bwrap
//!   runs.
//! - **fork**: a caller that is provably single-threaded ([`thread_count`]
//!   reads /proc and fails closed) calls [`fork_launch`] (landlock), which
//!   forks without re-executing anything, or [`fork_ahead`] (native), which
//!   clones PID 1 before the plan exists.
//!
//! Then, in order: the native backend's namespaces, mount view and PID 1
//! ([`native`]); `PR_SET_NO_NEW_PRIVS`, `PR_SET_PDEATHSIG(SIGKILL)` with a
//! parent re-check, a new session, every inherited fd close-on-exec, the
//! environment replaced, rlimits, all capabilities dropped, Landlock, SIGPIPE
//! and the signal mask reset, seccomp last; a status line on the status pipe
//! and `execve`. Exec failures exit 127 (not found) or 126.

use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use serde::{Deserialize, Serialize};

pub mod bridge;
pub mod landlock_rules;
pub mod native;
pub mod plan;
pub mod seccomp;
pub mod tail;

pub use landlock_rules::LandlockReport;
pub use plan::{BackendKind, LaunchPlan, Level};

/// First argument that turns the `zot` binary into the launcher.
pub const LAUNCH_ARG: &str = "__zot-launch";
/// With [`LAUNCH_ARG`]: the spec fd carries an encoded tail (what the
/// launcher image reads), not a JSON [`LaunchSpec`].
pub const TAIL_ARG: &str = "--tail";

/// The launcher image embedded in this binary (see [`tail`]): a static
/// executable without libc that runs the tail, reading the encoded tail on
/// fd 3 and reporting on fd 4. `None` when this build has none (the zot
/// binary then serves as launcher, with [`TAIL_ARG`]).
pub fn launcher_image() -> Option<&'static [u8]> {
    #[cfg(not(zot_no_launcher_image))]
    {
        Some(include_bytes!(concat!(
            env!("OUT_DIR"),
            "/zot-launcher-image"
        )))
    }
    #[cfg(zot_no_launcher_image)]
    {
        None
    }
}

/// Exit code when the sandbox could not be set up.
pub const EXIT_SETUP: i32 = 125;
/// Exit code when the command exists but cannot be executed.
pub const EXIT_CANNOT_EXEC: i32 = 126;
/// Exit code when the command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// What the supervisor sends on the spec pipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// Which backend started this launcher: `native` builds the namespaces
    /// and mounts of the plan, `bwrap` runs inside them, `landlock` has none.
    pub backend: BackendKind,
    pub plan: LaunchPlan,
    /// The command and its arguments; `argv[0]` is looked up in `PATH`.
    pub argv: Vec<OsString>,
    /// The values of the plan's `env.pass` variables, from the caller's
    /// environment (the launcher's own environment is empty).
    pub passed_env: Vec<(OsString, OsString)>,
    /// An inherited fd of the run's memory cgroup (see
    /// [`Prepared::join_cgroup`]).
    #[serde(default)]
    pub cgroup_fd: Option<RawFd>,
}

/// One line of JSON the launcher writes on the status pipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum LaunchStatus {
    /// Everything is in place; `execve` comes next.
    Ready {
        landlock: LandlockReport,
        seccomp: bool,
    },
    /// Setting up the sandbox failed at `stage`.
    Failed { stage: String, message: String },
    /// `execve` failed with `errno`.
    ExecFailed { errno: i32, message: String },
    /// The seccomp listener (and a netlink socket of the sandbox's network
    /// namespace) came with this line, as `SCM_RIGHTS`.
    Notify,
}

/// Why the launcher could not set up the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("bad launcher arguments: {0}")]
    Usage(String),
    #[error("cannot read the launch spec")]
    ReadSpec(#[source] std::io::Error),
    #[error("invalid launch spec")]
    ParseSpec(#[source] serde_json::Error),
    #[error("the launch spec passes {0:?}, which the plan does not pass")]
    EnvNotInPlan(OsString),
    #[error("the launcher is not single-threaded ({0} threads)")]
    Threaded(usize),
    #[error("cannot count this process's threads (/proc/self/status)")]
    ThreadCount(#[source] std::io::Error),
    #[error("{0}")]
    Unsupported(&'static str),
    #[error("{stage} failed")]
    Sys {
        stage: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("native namespaces")]
    Native(#[source] native::NativeError),
    #[error("seccomp filter compilation")]
    SeccompCompile(#[source] seccompiler::BackendError),
    #[error("seccomp: unknown syscall {0:?} on this architecture")]
    UnknownSyscall(String),
    #[error("argument or environment contains a NUL byte")]
    Nul,
    #[error("empty command")]
    EmptyCommand,
}

impl LaunchError {
    /// A short name of the step that failed, for the status pipe.
    pub fn stage(&self) -> &'static str {
        match self {
            LaunchError::Usage(_)
            | LaunchError::ReadSpec(_)
            | LaunchError::ParseSpec(_)
            | LaunchError::EnvNotInPlan(_) => "spec",
            LaunchError::Threaded(_) | LaunchError::ThreadCount(_) => "threads",
            LaunchError::Unsupported(_) => "backend",
            LaunchError::Sys { stage, .. } => stage,
            LaunchError::Native(_) => "native namespaces",
            LaunchError::SeccompCompile(_) | LaunchError::UnknownSyscall(_) => "seccomp",
            LaunchError::Nul | LaunchError::EmptyCommand => "command",
        }
    }
}

pub(crate) fn sys(stage: &'static str) -> impl FnOnce(nix::Error) -> LaunchError {
    move |e| LaunchError::Sys {
        stage,
        source: std::io::Error::from(e),
    }
}

pub use zot_policy::diagnostic::error_chain;

pub(crate) fn set_cloexec(fd: RawFd) -> nix::Result<()> {
    // SAFETY: fcntl on an integer fd has no memory-safety requirements.
    let r = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    nix::errno::Errno::result(r).map(drop)
}

/// The number of threads of this process, from `/proc/self/status`. An
/// unreadable or unparsable file is an error: nothing may assume it is
/// single-threaded then.
pub fn thread_count() -> std::io::Result<usize> {
    // Room for the whole file up front: /proc says size 0, and reading it
    // from an empty buffer takes eight reads of growing size.
    let mut status = String::with_capacity(4096);
    std::fs::File::open("/proc/self/status")?.read_to_string(&mut status)?;
    parse_threads(&status)
}

fn parse_threads(status: &str) -> std::io::Result<usize> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no Threads: line in /proc/self/status",
            )
        })
}

fn require_single_threaded() -> Result<(), LaunchError> {
    match thread_count().map_err(LaunchError::ThreadCount)? {
        1 => Ok(()),
        n => Err(LaunchError::Threaded(n)),
    }
}

/// The write end of the status pipe (or nothing).
pub(crate) struct StatusPipe(Option<std::fs::File>);

impl StatusPipe {
    pub(crate) fn send(&mut self, status: &LaunchStatus) {
        if let Some(f) = self.0.as_mut() {
            if let Ok(mut line) = serde_json::to_vec(status) {
                line.push(b'\n');
                let _ = f.write_all(&line);
            }
        }
    }

    fn fail(&mut self, err: &LaunchError) {
        self.send(&LaunchStatus::Failed {
            stage: err.stage().to_string(),
            message: error_chain(err),
        });
    }
}

/// A launch, ready to run: everything that allocates or can fail on bad
/// input is done here, before any fork; the tail's part is encoded once.
pub struct Prepared {
    backend: BackendKind,
    plan: LaunchPlan,
    argv: Vec<CString>,
    env: Vec<CString>,
    /// The encoded tail; `None` until compiled (see [`Prepared::deferred`]).
    tail: Option<Vec<u8>>,
    /// See [`Prepared::join_cgroup`].
    cgroup_fd: Option<RawFd>,
}

impl Prepared {
    /// Check and compile `plan` for a run of `argv` with the environment
    /// `env` (the plan's `env.environment(..)`).
    pub fn new(
        backend: BackendKind,
        plan: LaunchPlan,
        argv: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<Prepared, LaunchError> {
        let mut p = Prepared::deferred(backend, plan, argv, env)?;
        p.tail = Some(p.encode_tail()?);
        Ok(p)
    }

    /// Check the command and environment now; compile the tail (the
    /// seccomp program, the encoding) only when needed. [`Ahead::launch`]
    /// compiles it after sending PID 1 the view, while PID 1 builds it.
    pub fn deferred(
        backend: BackendKind,
        plan: LaunchPlan,
        argv: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<Prepared, LaunchError> {
        if argv.is_empty() {
            return Err(LaunchError::EmptyCommand);
        }
        let argv: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()).map_err(|_| LaunchError::Nul))
            .collect::<Result<_, _>>()?;
        let env: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                if k.is_empty() || k.as_bytes().contains(&b'=') {
                    return Err(LaunchError::Nul);
                }
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).map_err(|_| LaunchError::Nul)
            })
            .collect::<Result<_, _>>()?;
        Ok(Prepared {
            backend,
            plan,
            argv,
            env,
            tail: None,
            cgroup_fd: None,
        })
    }

    /// The process that runs the tail joins the run's memory cgroup
    /// first, through `fd` (open for writing on the cgroup's `tasks` file,
    /// or `cgroup.procs` on cgroup v2): it writes `0`, its own thread,
    /// while it is single-threaded and before it forks or execs anything,
    /// so the command and all it starts are born inside. (A thread moving
    /// itself skips cgroup v1's global lock, whose RCU grace period costs
    /// 7-30 ms; the fd is opened by the supervisor, whose credentials the
    /// kernel checks.) A tail compiled before is compiled again.
    pub fn join_cgroup(mut self, fd: Option<RawFd>) -> Prepared {
        self.cgroup_fd = fd;
        self.tail = None;
        self
    }

    fn encode_tail(&self) -> Result<Vec<u8>, LaunchError> {
        // The native backend mounts its tmpfs with their inode limits (and
        // landlock has none): only bubblewrap's need the remount.
        let (remounts, mounts) = match self.backend {
            BackendKind::Bwrap => (
                tmpfs_inode_limits(&self.plan),
                &self.plan.mounts[tail_mounts_start(&self.plan)..],
            ),
            _ => (Vec::new(), &[][..]),
        };
        let seccomp: Vec<seccompiler::sock_filter> = seccomp::compile(&self.plan.seccomp)?
            .into_iter()
            .flatten()
            .collect();
        Ok(tail::encode::encode(
            &self.argv,
            &self.env,
            true,
            seccomp::notifies(&self.plan.seccomp),
            &self.plan.rlimits,
            self.plan.pid_max,
            &self.plan.landlock,
            &seccomp,
            self.plan.network.proxy(),
            &remounts,
            self.cgroup_fd,
            mounts,
        ))
    }

    /// The encoded tail (what the launcher image reads on its spec fd),
    /// compiled now if it was deferred.
    pub fn tail(&self) -> Result<std::borrow::Cow<'_, [u8]>, LaunchError> {
        match &self.tail {
            Some(t) => Ok(std::borrow::Cow::Borrowed(t)),
            None => self.encode_tail().map(std::borrow::Cow::Owned),
        }
    }

    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The launcher's part of a spec received on the spec pipe: the plan's
    /// environment built from the values passed (only names the plan passes).
    fn from_spec(spec: LaunchSpec) -> Result<Prepared, LaunchError> {
        let plan = spec.plan;
        if let Some((k, _)) = spec
            .passed_env
            .iter()
            .find(|(k, _)| !plan.env.pass.iter().any(|p| k == p.as_str()))
        {
            return Err(LaunchError::EnvNotInPlan(k.clone()));
        }
        let env = plan.env.environment(|name| {
            spec.passed_env
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        });
        let mut p =
            Prepared::deferred(spec.backend, plan, &spec.argv, &env)?.join_cgroup(spec.cgroup_fd);
        p.tail = Some(p.encode_tail()?);
        Ok(p)
    }
}

/// The kernel has the new mount API (`open_tree`, `move_mount`,
/// `mount_setattr`: Linux 5.12+) and nothing (a container's seccomp
/// profile) refuses it. Asked once.
pub fn new_mount_api() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        // An fd that is not one: EBADF (or EINVAL) where the call exists.
        // SAFETY: no pointer is dereferenced for a bad fd.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                -1,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH,
                std::ptr::null::<u8>(),
                0usize,
            )
        };
        let e = std::io::Error::last_os_error().raw_os_error();
        r == 0 || !matches!(e, Some(libc::ENOSYS | libc::EPERM))
    })
}

/// Where the bwrap backend's launcher takes over the plan's mounts: from
/// this index on, the tail makes them inside the view bubblewrap built (see
/// [`tail::MOUNT_BIND`]); before it, bubblewrap does. The tail's part is the
/// longest run at the end that it can make from inside the view: binds of
/// a path under a write root onto itself (pins and protected paths),
/// `/dev/null` over a path, mask directories, read-only remounts. Those are
/// a mount per protected path, deny-read mask and host socket, which
/// bubblewrap makes one by one, each after reading the whole mount table
/// again (about 0.5 ms apiece with a few dozen mounts). `mounts.len()`
/// (bubblewrap makes all) when the kernel lacks the new mount API.
pub fn tail_mounts_start(plan: &plan::LaunchPlan) -> usize {
    use plan::MountOp;
    let n = plan.mounts.len();
    if !new_mount_api() {
        return n;
    }
    let in_view = |op: &MountOp| match op {
        MountOp::Bind { src, dst, .. } => {
            src == dst
                && plan
                    .write_roots
                    .iter()
                    .any(|r| dst != r && dst.starts_with(r))
        }
        other => tail::encode::tail_mount(other).is_some(),
    };
    plan.mounts
        .iter()
        .rposition(|op| !in_view(op))
        .map_or(0, |i| i + 1)
}

/// The inode limits of the plan's tmpfs mounts, as the launcher applies
/// them again before dropping its capabilities (a remount: bubblewrap has
/// no option for `nr_inodes`): the mount point, the remount flags that keep
/// the mount as the view left it, the remount's data, and the data of a
/// fresh tmpfs that may replace it (empty when something is mounted inside
/// it or it is read-only: then only the remount is possible).
///
/// An unprivileged caller's bubblewrap keeps its mounts in a user
/// namespace above the sandbox's, where the launcher cannot remount them;
/// it then mounts the fresh tmpfs in a mount namespace of its own.
pub fn tmpfs_inode_limits(
    plan: &plan::LaunchPlan,
) -> Vec<(std::path::PathBuf, u64, String, String)> {
    use plan::MountOp;
    const MS_RDONLY: u64 = 1;
    const MS_NOSUID: u64 = 2;
    const MS_NODEV: u64 = 4;
    const MS_REMOUNT: u64 = 32;
    let mut out: Vec<(std::path::PathBuf, u64, String, String)> = Vec::new();
    for (i, m) in plan.mounts.iter().enumerate() {
        let MountOp::Tmpfs {
            dst,
            inodes: Some(n),
            writable,
            mode,
            size,
        } = m
        else {
            continue;
        };
        // The state the view leaves it in: covered by a later mount on the
        // same point (skipped), remounted read-only later, or as made.
        if plan.mounts[i + 1..]
            .iter()
            .any(|o| o.dst() == dst.as_path() && !matches!(o, MountOp::RemountRo { .. }))
        {
            continue;
        }
        let ro = !writable
            || plan.mounts[i + 1..]
                .iter()
                .any(|o| matches!(o, MountOp::RemountRo { dst: d } if d == dst));
        let flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | if ro { MS_RDONLY } else { 0 };
        let covers = plan.mounts[i + 1..]
            .iter()
            .any(|o| o.dst() != dst.as_path() && o.dst().starts_with(dst));
        let fresh = if ro || covers || dst.as_path() == std::path::Path::new("/") {
            String::new()
        } else {
            let mut d = format!("mode={:o},nr_inodes={n}", mode.0);
            if let Some(s) = size {
                d.push_str(&format!(",size={s}"));
            }
            d
        };
        out.push((dst.clone(), flags, format!("nr_inodes={n}"), fresh));
    }
    out
}

/// The child's standard streams in [`fork_launch`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ChildStdio {
    /// Read stdin from /dev/null (else inherit).
    pub null_stdin: bool,
    /// Duplicated onto fd 1 and 2 (else inherited).
    pub stdout: Option<RawFd>,
    pub stderr: Option<RawFd>,
}

impl ChildStdio {
    /// In the child, right after fork: dup2 only.
    fn apply(&self) -> std::io::Result<()> {
        // SAFETY: dup2/open on fds of this (forked, single-threaded) process.
        unsafe {
            if self.null_stdin {
                let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                if fd < 0 || libc::dup2(fd, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if fd != 0 {
                    libc::close(fd);
                }
            }
            for (fd, target) in [(self.stdout, 1), (self.stderr, 2)] {
                if let Some(fd) = fd {
                    if libc::dup2(fd, target) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
        }
        Ok(())
    }
}

/// A sandbox started by [`fork_launch`].
#[derive(Debug)]
pub struct Forked {
    /// The child: the sandbox's PID 1 (native) or the command (landlock).
    pub pid: libc::pid_t,
    /// Held until the sandbox is gone: its PID 1 checks that the parent is
    /// alive through this pipe.
    pub alive: Option<std::os::fd::OwnedFd>,
    /// Native: PID 1 writes the command's exit code here (4 bytes, native
    /// endian) once every process of the sandbox is reaped, before its own
    /// exit tears the namespaces down. EOF without a code: it died.
    pub done: Option<std::os::fd::OwnedFd>,
}

/// This process's allowed cores, and the same less the one it runs on
/// (`None` with a single allowed core): a process started to work while
/// this one goes on is moved to the others, lest it wait for this one to
/// block on the core it started on.
pub(crate) fn other_cores() -> Option<(libc::cpu_set_t, libc::cpu_set_t)> {
    // SAFETY: plain data filled by the kernel; CPU_* on our own sets.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut all) != 0 {
            return None;
        }
        let here = libc::sched_getcpu();
        if here < 0 || libc::CPU_COUNT(&all) < 2 {
            return None;
        }
        let mut other = all;
        libc::CPU_CLR(here as usize, &mut other);
        (libc::CPU_COUNT(&other) > 0).then_some((all, other))
    }
}

/// The native sandbox's PID 1, cloned before its plan was made (see
/// [`fork_ahead`]): it makes its namespaces and the view's first mounts
/// while the caller plans, then waits for [`Ahead::launch`]. Dropped
/// unlaunched, it is killed and reaped.
pub struct Ahead {
    forked: Option<Forked>,
    /// The write end of the launch data.
    data: Option<std::os::fd::OwnedFd>,
    flags: libc::c_int,
    /// The mounts PID 1 made ahead: the plan's must begin with them.
    base: Vec<plan::MountOp>,
}

/// [`fork_launch`] of the native backend started before the plan exists:
/// PID 1 is cloned now into a new user and pid namespace and unshares the
/// rest of `namespaces` itself and stages the view with the mounts `base`,
/// on the other core while this process plans; the rest of the plan's view
/// and the tail follow with [`Ahead::launch`]. `namespaces` must be those
/// the plan will have and `base` the beginning of its mounts (it is refused
/// otherwise). Refuses unless this process is provably single-threaded.
pub fn fork_ahead(
    namespaces: &[plan::Namespace],
    base: &[plan::MountOp],
    stdio: ChildStdio,
    status_fd: RawFd,
) -> Result<Ahead, LaunchError> {
    require_single_threaded()?;
    let flags = namespaces.iter().fold(0, |f, ns| f | ns.clone_flag());
    let (forked, data) = native::spawn_pid1(
        native::View::Ahead { flags, base },
        status_fd,
        Some(stdio),
        Some(cloexec_pipe()?),
    )?;
    Ok(Ahead {
        forked: Some(forked),
        data,
        flags,
        base: base.to_vec(),
    })
}

impl Ahead {
    /// Run `prep` (a native plan with the namespaces given to
    /// [`fork_ahead`]) in the PID 1 started ahead: its view first, then
    /// the tail, compiled while PID 1 builds the view. `status` is this
    /// process's end of the status socket given to [`fork_ahead`]; on it,
    /// PID 1 gets `cgroup` (made after it started), which the command's
    /// process joins first thing, as it joins one named with
    /// [`Prepared::join_cgroup`] (`prep` must not name one).
    pub fn launch(
        mut self,
        prep: &Prepared,
        status: std::os::fd::BorrowedFd<'_>,
        cgroup: Option<std::os::fd::BorrowedFd<'_>>,
    ) -> Result<Forked, LaunchError> {
        use std::os::fd::AsRawFd;
        let plan = prep.plan();
        if prep.cgroup_fd.is_some() {
            return Err(LaunchError::Unsupported(
                "a cgroup joined by the tail of a PID 1 made ahead",
            ));
        }
        fits_ahead(prep, self.flags, &self.base)?;
        let view = serde_json::to_vec(&native::AheadView {
            flags: self.flags,
            mounts: std::borrow::Cow::Borrowed(&plan.mounts),
            cwd: std::borrow::Cow::Borrowed(&plan.cwd),
        })
        .map_err(|e| LaunchError::Native(native::NativeError::Invalid(e.to_string())))?;
        // The cgroup first (PID 1 reads it after the view): one byte, with
        // the fd or without. PID 1 that failed meanwhile closed its end
        // (and its status says why).
        let fds: Vec<RawFd> = cgroup.iter().map(|fd| fd.as_raw_fd()).collect();
        let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
        let _ = nix::sys::socket::sendmsg::<()>(
            status.as_raw_fd(),
            &[std::io::IoSlice::new(&[native::CGROUP_MESSAGE])],
            if fds.is_empty() { &[] } else { &cmsg },
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
            None,
        );
        let mut data = self.data.take().map(std::fs::File::from);
        if let Some(w) = data.as_mut() {
            let mut head = (view.len() as u32).to_ne_bytes().to_vec();
            head.extend_from_slice(&view);
            let _ = w.write_all(&head);
        }
        let tail = prep.encode_tail()?;
        if let Some(w) = data.as_mut() {
            let _ = w.write_all(&tail);
        }
        drop(data);
        Ok(self.forked.take().expect("launched once"))
    }
}

/// Whether `prep` is a plan for the PID 1 made ahead with the namespaces
/// `flags` and the mounts `base`.
fn fits_ahead(
    prep: &Prepared,
    flags: libc::c_int,
    base: &[plan::MountOp],
) -> Result<(), LaunchError> {
    let plan = prep.plan();
    if prep.backend != BackendKind::Native || plan.clone_flags() != flags {
        return Err(LaunchError::Unsupported(
            "a plan for other namespaces than those made ahead of it",
        ));
    }
    if !plan.mounts.starts_with(base) {
        return Err(LaunchError::Unsupported(
            "a plan whose mounts do not begin with those made ahead of it",
        ));
    }
    Ok(())
}

impl Drop for Ahead {
    fn drop(&mut self) {
        if let Some(f) = self.forked.take() {
            // SAFETY: our child, reaped here.
            unsafe {
                libc::kill(f.pid, libc::SIGKILL);
                libc::waitpid(f.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Start `prep` in a child of this process without re-executing anything:
/// the landlock backend's command (the native backend's PID 1 is started
/// with [`fork_ahead`]). Refuses unless this process is provably
/// single-threaded (no sandbox work after fork in a multi-threaded process).
/// `status_fd` (close-on-exec) receives the launcher's status lines; the
/// caller closes its copy afterwards.
pub fn fork_launch(
    prep: &Prepared,
    stdio: ChildStdio,
    status_fd: RawFd,
) -> Result<Forked, LaunchError> {
    require_single_threaded()?;
    match prep.backend {
        BackendKind::Landlock => {
            // The child starts with every signal blocked: the caller's
            // handlers must not run in its copy. The tail sets the usual
            // dispositions, then unblocks them (one that came meanwhile
            // then has its default effect) just before the exec.
            let mask = native::block_all();
            // SAFETY: this process is single-threaded (checked above).
            let pid = unsafe { libc::fork() };
            if pid != 0 {
                native::set_mask(&mask);
            }
            if pid < 0 {
                return Err(sys("fork")(nix::Error::last()));
            }
            if pid == 0 {
                let mut status = StatusPipe(Some(unsafe { std::fs::File::from_raw_fd(status_fd) }));
                if let Err(e) = stdio.apply() {
                    status.fail(&LaunchError::Sys {
                        stage: "stdio",
                        source: e,
                    });
                    native::exit_now(EXIT_SETUP);
                }
                // Lead a new session (and process group) so the supervisor
                // reaches everything the command starts.
                // SAFETY: plain syscall in the child.
                unsafe { libc::setsid() };
                let code = run_landlock(prep, &mut status);
                native::exit_now(code)
            }
            Ok(Forked {
                pid,
                alive: None,
                done: None,
            })
        }
        BackendKind::Native => Err(LaunchError::Unsupported(
            "the native backend starts without an exec through fork_ahead",
        )),
        BackendKind::Bwrap | BackendKind::Unconfined => Err(LaunchError::Unsupported(
            "only the native and landlock backends start without an exec",
        )),
    }
}

fn run_landlock(prep: &Prepared, status: &mut StatusPipe) -> i32 {
    if let Err(e) = nix::unistd::chdir(&prep.plan.cwd) {
        status.fail(&sys("chdir")(e));
        return EXIT_SETUP;
    }
    run_tail(prep, status)
}

/// The tail, in this process: harden and exec the command. Returns the exit
/// code only when that failed (after reporting it).
pub(crate) fn run_tail(prep: &Prepared, status: &mut StatusPipe) -> i32 {
    use std::os::fd::AsRawFd;
    let mut buf = match prep.tail() {
        Ok(t) => t.into_owned(),
        Err(e) => {
            status.fail(&e);
            return EXIT_SETUP;
        }
    };
    let status_fd = status.0.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
    tail::run(&mut buf, status_fd)
}

fn cloexec_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), LaunchError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(sys("pipe"))
}

fn parse_fd(args: &[OsString], name: &str) -> Result<Option<RawFd>, LaunchError> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    let v = args
        .get(i + 1)
        .and_then(|v| v.to_str())
        .and_then(|v| v.parse::<RawFd>().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| {
            LaunchError::Usage(format!("{name} needs a file descriptor number above 2"))
        })?;
    Ok(Some(v))
}

/// Entry point of the launcher (`zot __zot-launch ...`); never returns.
pub fn main_from_args() -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    let mut status = StatusPipe(None);
    let code = match launch(&args, &mut status) {
        Ok(code) => code,
        Err(err) => {
            // With a status pipe the supervisor reports it (once).
            if status.0.is_none() {
                eprintln!("zot: sandbox setup failed: {}", error_chain(&err));
            }
            status.fail(&err);
            EXIT_SETUP
        }
    };
    std::process::exit(code)
}

fn launch(args: &[OsString], status: &mut StatusPipe) -> Result<i32, LaunchError> {
    // The status pipe first, so every later failure can be reported.
    if let Some(fd) = parse_fd(args, "--status-fd")? {
        set_cloexec(fd).map_err(sys("status fd"))?;
        // SAFETY: the supervisor passed us this fd and nothing else owns it.
        status.0 = Some(unsafe { std::fs::File::from_raw_fd(fd) });
    }
    let spec_fd = parse_fd(args, "--spec-fd")?
        .ok_or_else(|| LaunchError::Usage("missing --spec-fd".into()))?;
    // SAFETY: as above; the file is dropped (closed) after reading.
    let mut spec_file = unsafe { std::fs::File::from_raw_fd(spec_fd) };
    let mut buf = Vec::new();
    spec_file
        .read_to_end(&mut buf)
        .map_err(LaunchError::ReadSpec)?;
    drop(spec_file);
    if args.iter().any(|a| a == TAIL_ARG) {
        // What the launcher image would do, in this binary (inside bwrap).
        require_single_threaded()?;
        use std::os::fd::AsRawFd;
        let status_fd = status.0.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        return Ok(tail::run(&mut buf, status_fd));
    }
    let spec: LaunchSpec = serde_json::from_slice(&buf).map_err(LaunchError::ParseSpec)?;
    require_single_threaded()?;
    let prep = Prepared::from_spec(spec)?;
    match prep.backend {
        BackendKind::Native => {
            let status_fd = status
                .0
                .as_ref()
                .map(std::os::fd::AsRawFd::as_raw_fd)
                .unwrap_or(-1);
            // A signal from now on reaches PID 1 once it is there.
            native::hold_signals();
            let (forked, _) =
                native::spawn_pid1(native::View::Known(&prep), status_fd, None, None)?;
            Ok(native::outer_wait(forked))
        }
        // bwrap set the cwd (--chdir) and built the view.
        BackendKind::Bwrap => Ok(run_tail(&prep, status)),
        BackendKind::Landlock => Ok(run_landlock(&prep, status)),
        BackendKind::Unconfined => Err(LaunchError::Unsupported(
            "danger-full-access has no launcher",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_count_fails_closed() {
        assert_eq!(parse_threads("Name:\tzot\nThreads:\t3\n").unwrap(), 3);
        assert!(parse_threads("Name:\tzot\n").is_err());
        assert!(parse_threads("Threads:\tmany\n").is_err());
        assert!(thread_count().unwrap() >= 1);
    }

    /// A plan is run by a PID 1 made ahead only if that PID 1 made its
    /// namespaces and the beginning of its mounts.
    #[test]
    fn a_plan_runs_ahead_only_where_it_was_begun() {
        let plan: LaunchPlan = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../supervisor/src/snapshots/workspace-write.json"
        )))
        .unwrap();
        let (flags, mounts) = (plan.clone_flags(), plan.mounts.clone());
        let prep = Prepared::new(BackendKind::Native, plan, &["true".into()], &[]).unwrap();
        assert!(fits_ahead(&prep, flags, &mounts[..4]).is_ok());
        assert!(fits_ahead(&prep, flags, &mounts).is_ok());
        assert!(fits_ahead(&prep, flags, &[]).is_ok());
        // Other mounts first, one mount more than the plan, other namespaces.
        assert!(fits_ahead(&prep, flags, &mounts[1..4]).is_err());
        let mut more = mounts.clone();
        more.push(plan::MountOp::Proc {
            dst: "/proc".into(),
        });
        assert!(fits_ahead(&prep, flags, &more).is_err());
        assert!(fits_ahead(&prep, flags & !libc::CLONE_NEWNET, &mounts[..4]).is_err());
        let bwrap = Prepared::new(
            BackendKind::Bwrap,
            prep.plan().clone(),
            &["true".into()],
            &[],
        )
        .unwrap();
        assert!(fits_ahead(&bwrap, flags, &mounts[..4]).is_err());
    }

    /// With a second thread alive, nothing forks to do sandbox work.
    #[test]
    fn fork_launch_refuses_a_multi_threaded_caller() {
        let plan: LaunchPlan = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../supervisor/src/snapshots/read-only.landlock.json"
        )))
        .unwrap();
        let prep = Prepared::new(BackendKind::Landlock, plan, &["true".into()], &[]).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || rx.recv());
        let err = fork_launch(&prep, ChildStdio::default(), -1).unwrap_err();
        assert!(matches!(err, LaunchError::Threaded(n) if n >= 2), "{err}");
        tx.send(()).unwrap();
        t.join().unwrap().unwrap();
    }
}
