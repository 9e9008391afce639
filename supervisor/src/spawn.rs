//! Starting a planned sandbox.
//!
//! - bwrap: `posix_spawn` of bwrap before the plan is made, the plan
//!   rendered to arguments on a pipe ([`EarlyBwrap`]); it runs the launcher
//!   (the launcher image or this binary, through an inherited fd) inside.
//! - native and landlock, from a provably single-threaded process (`zot
//!   sandbox`): the launcher's code runs in a forked child, nothing is
//!   exec'd but the command ([`zot_launcher::fork_launch`]); native's PID 1
//!   is cloned before the plan is made ([`zot_launcher::fork_ahead`]).
//! - native and landlock otherwise (`zot run`, threads): `posix_spawn` of
//!   the launcher (vfork speed, no code of ours between fork and exec).
//! - unconfined: the command itself.
//!
//! The spec, status, launcher and bwrap info pipes are handed over as fds
//! 3, 4, 5 and 6, the run's cgroup (when it has one) after them: the
//! process that runs the tail joins it first ([`Prepared::join_cgroup`]).
//! bwrap's arguments come last, on a pipe ([`EarlyBwrap`]): bwrap is
//! started before the plan is made and loads meanwhile.

use std::ffi::{CString, OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicI32;
use std::sync::Mutex;

use zot_launcher::{BackendKind, ChildStdio, LaunchSpec, Prepared};

use crate::output::pipe;
use crate::resolve::{Backend, Planned};
use crate::supervise::Target;
use crate::{bwrap, RunRequest, Stdin, SupervisorError};

const SPEC_FD: RawFd = 3;
const STATUS_FD: RawFd = 4;
const EXE_FD: RawFd = 5;
const INFO_FD: RawFd = 6;

/// A started sandbox.
pub(crate) struct Started {
    pub target: Target,
    /// The read end of the launcher's status pipe (none when unconfined).
    pub status: Option<OwnedFd>,
    /// Held until the sandbox is gone (its PID 1 watches it).
    pub alive: Option<OwnedFd>,
}

/// Why a start failed.
pub(crate) enum StartError {
    /// The program could not be started at all.
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    Other(SupervisorError),
}

impl From<SupervisorError> for StartError {
    fn from(e: SupervisorError) -> Self {
        StartError::Other(e)
    }
}

/// The launcher's status channel: a pipe, or a socket pair when the plan
/// asks the supervisor about calls (the listener comes on it); ours, theirs.
fn status_channel(planned: &Planned) -> Result<(OwnedFd, OwnedFd), SupervisorError> {
    if zot_launcher::seccomp::notifies(&planned.plan.seccomp) {
        status_socket()
    } else {
        pipe()
    }
}

/// The status channel as a socket pair (ours, theirs): what a sandbox
/// started before its plan gets, since whether the plan's seccomp program
/// passes a listener on it is not known yet.
fn status_socket() -> Result<(OwnedFd, OwnedFd), SupervisorError> {
    crate::notify::status_socket().map_err(SupervisorError::io("creating the status socket"))
}

/// Whether the launcher's code may run in a child forked from this
/// process (nothing exec'd): asked for, this process provably
/// single-threaded, and stdin not an fd to pass on.
pub(crate) fn forks_in_process(req: &RunRequest) -> bool {
    req.in_process
        && !matches!(req.stdin, Stdin::Fd(_))
        && zot_launcher::thread_count().is_ok_and(|n| n == 1)
}

/// The forked child's streams: stdin from /dev/null or inherited, the
/// output pipes' write ends `out` (else inherited).
fn child_stdio(req: &RunRequest, out: &Option<(OwnedFd, OwnedFd)>) -> ChildStdio {
    ChildStdio {
        null_stdin: req.stdin == Stdin::Null,
        stdout: out.as_ref().map(|(o, _)| o.as_raw_fd()),
        stderr: out.as_ref().map(|(_, e)| e.as_raw_fd()),
    }
}

/// Start `planned` for `req`; `env` is the command's environment (from the
/// plan), `host_env` the caller's, `out` the write ends of the output pipes,
/// `cgroup` the file through which the command's first process joins the
/// run's cgroup.
pub(crate) fn start(
    req: &RunRequest,
    planned: &Planned,
    env: Vec<(OsString, OsString)>,
    host_env: &[(OsString, OsString)],
    out: Option<(OwnedFd, OwnedFd)>,
    cgroup: Option<BorrowedFd>,
    ahead: Option<Ahead>,
) -> Result<Started, StartError> {
    let kind = planned.backend.kind();
    // Forked: the cgroup fd the tail joins is inherited as it is (`None`:
    // the tail names none).
    let forked_prep = |cgroup: Option<BorrowedFd>| {
        Prepared::deferred(kind, planned.plan.clone(), &req.argv, &env)
            .map(|p| p.join_cgroup(cgroup.map(|fd| fd.as_raw_fd())))
            .map_err(SupervisorError::Prepare)
    };
    let early = match ahead {
        Some(Ahead::Bwrap(b)) => Some(b),
        Some(Ahead::Native { pid1, status }) => {
            // PID 1 gets the cgroup on the status socket; the command's
            // process joins it.
            let prep = forked_prep(None)?;
            let forked =
                pid1.launch(&prep, status.as_fd(), cgroup)
                    .map_err(|e| SupervisorError::Setup {
                        backend: kind,
                        message: zot_launcher::error_chain(&e),
                        hint: Some(crate::resolve::namespace_hint()),
                    })?;
            return Ok(Started {
                target: Target::Init {
                    pid: forked.pid,
                    done: forked.done,
                },
                status: Some(status),
                alive: forked.alive,
            });
        }
        None => None,
    };
    match &planned.backend {
        Backend::Unconfined => {
            let pid = spawn_unconfined(req, &planned.plan.cwd, env, out).map_err(|source| {
                StartError::Spawn {
                    program: PathBuf::from(&req.argv[0]),
                    source,
                }
            })?;
            Ok(Started {
                target: Target::Group(pid),
                status: None,
                alive: None,
            })
        }
        // (Native in this process was started ahead of its plan, above.)
        Backend::Landlock if forks_in_process(req) => {
            let prep = forked_prep(cgroup)?;
            let (status_r, status_w) = status_channel(planned)?;
            let forked =
                zot_launcher::fork_launch(&prep, child_stdio(req, &out), status_w.as_raw_fd())
                    .map_err(|e| SupervisorError::Setup {
                        backend: kind,
                        message: zot_launcher::error_chain(&e),
                        hint: None,
                    })?;
            drop(status_w);
            drop(out);
            Ok(Started {
                target: Target::Group(forked.pid),
                status: Some(status_r),
                alive: forked.alive,
            })
        }
        Backend::Bwrap { path } => {
            // Started before the plan was made (it waits for its
            // arguments), or now.
            let mut early = match early {
                Some(e) => e,
                None => EarlyBwrap::start(path, req, out, cgroup)?,
            };
            // One plan for bwrap's arguments and the launcher's tail: the
            // planned one, less the socket masks whose socket is gone.
            let plan = bwrap::without_vanished_sockets(&planned.plan)
                .unwrap_or_else(|| planned.plan.clone());
            let mut args = Vec::new();
            for a in bwrap::render(&plan) {
                args.extend_from_slice(a.as_bytes());
                args.push(0);
            }
            // bwrap reads them to EOF before it does anything else. One that
            // failed meanwhile closed the pipe: its exit says why.
            if let Some(w) = early.args.take() {
                let _ = std::fs::File::from(w).write_all(&args);
            }
            // The tail is compiled while bwrap sets up the view; the launcher
            // reads it on fd 3.
            let prep = Prepared::deferred(kind, plan, &req.argv, &env)
                .map(|p| p.join_cgroup(early.cgroup_fd))
                .and_then(|p| p.tail().map(|t| t.into_owned()));
            let tail = match prep {
                Ok(t) => t,
                // Dropping `early` kills and reaps bwrap.
                Err(e) => return Err(SupervisorError::Prepare(e).into()),
            };
            if let Some(w) = early.spec.take() {
                let _ = std::fs::File::from(w).write_all(&tail);
            }
            let (pid, status, info) = early.hand_over();
            Ok(Started {
                target: Target::Bwrap {
                    direct: pid,
                    init: AtomicI32::new(0),
                    info: Mutex::new(Some(std::fs::File::from(info))),
                },
                status: Some(status),
                alive: None,
            })
        }
        _ => {
            let (status_r, status_w) = status_channel(planned)?;
            // Handed over as fds 3, 4 and, with a cgroup, 5.
            let spec = LaunchSpec {
                backend: kind,
                plan: planned.plan.clone(),
                argv: req.argv.clone(),
                passed_env: host_env
                    .iter()
                    .filter(|(k, _)| planned.plan.env.pass.iter().any(|p| k == p.as_str()))
                    .cloned()
                    .collect(),
                cgroup_fd: cgroup.map(|_| SPEC_FD + 2),
            };
            let json = serde_json::to_vec(&spec).map_err(|e| SupervisorError::Io {
                what: "encoding the launch spec".into(),
                source: e.into(),
            })?;
            let mut keep = vec![spec_pipe(&json)?, status_w];
            handed(&mut keep, cgroup)?;
            let argv: Vec<OsString> = vec![
                "zot".into(),
                zot_launcher::LAUNCH_ARG.into(),
                "--spec-fd".into(),
                SPEC_FD.to_string().into(),
                "--status-fd".into(),
                STATUS_FD.to_string().into(),
            ];
            // Exec through /proc/self/exe: our own binary even when its path
            // is not visible here (zot run from inside another sandbox's
            // private /tmp) or was replaced since. On the landlock backend
            // the launcher must not be a process-group leader (its setsid()
            // would fail with EPERM): it leads a new session instead.
            let landlock = kind == BackendKind::Landlock;
            let pid = spawn_raw(
                Path::new("/proc/self/exe"),
                &argv,
                req.stdin,
                out,
                &keep,
                landlock,
            )
            .map_err(|source| StartError::Spawn {
                program: std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into()),
                source,
            })?;
            Ok(Started {
                target: if landlock {
                    Target::Group(pid)
                } else {
                    Target::Launcher(pid)
                },
                status: Some(status_r),
                alive: None,
            })
        }
    }
}

/// A sandbox started before its plan was made (see [`EarlyBwrap`] and
/// [`zot_launcher::fork_ahead`]).
pub(crate) enum Ahead {
    Bwrap(EarlyBwrap),
    Native {
        pid1: zot_launcher::Ahead,
        /// The read end of the status socket.
        status: OwnedFd,
    },
}

impl Ahead {
    /// The native backend's PID 1, cloned now for a plan with `namespaces`
    /// whose mounts begin with `base`, in which `req` will run, with the
    /// output pipes' write ends `out`.
    /// Every fd of this process is inherited as it is; the run's cgroup
    /// follows on the status socket ([`zot_launcher::Ahead::launch`]).
    pub(crate) fn native(
        req: &RunRequest,
        namespaces: &[zot_launcher::plan::Namespace],
        base: &[zot_launcher::plan::MountOp],
        out: Option<(OwnedFd, OwnedFd)>,
    ) -> Result<Ahead, SupervisorError> {
        let (status_r, status_w) = status_socket()?;
        let pid1 = zot_launcher::fork_ahead(
            namespaces,
            base,
            child_stdio(req, &out),
            status_w.as_raw_fd(),
        )
        .map_err(|e| SupervisorError::Setup {
            backend: BackendKind::Native,
            message: zot_launcher::error_chain(&e),
            hint: Some(crate::resolve::namespace_hint()),
        })?;
        Ok(Ahead::Native {
            pid1,
            status: status_r,
        })
    }
}

/// bwrap started before its plan is known: it loads (exec, dynamic
/// linking, its own start) while the supervisor plans, then blocks reading
/// its arguments (`--args`, read to EOF before it does anything else).
/// [`start`] writes them, then the launcher's tail. Dropped before that,
/// bwrap is killed and reaped; a bwrap that reads a cut-off argument list
/// (this process died while writing it) runs a launcher that gets no tail
/// and refuses to start anything.
pub(crate) struct EarlyBwrap {
    pid: libc::pid_t,
    /// The write end of bwrap's `--args` pipe.
    args: Option<OwnedFd>,
    /// The write end of the launcher's spec pipe (the encoded tail).
    spec: Option<OwnedFd>,
    /// The read end of the status socket.
    status: Option<OwnedFd>,
    /// The read end of bwrap's `--info-fd` pipe.
    info: Option<OwnedFd>,
    /// The run's cgroup fd, as numbered in bwrap and the launcher.
    cgroup_fd: Option<RawFd>,
}

impl EarlyBwrap {
    /// Start bwrap (`path`) for `req`, with the output pipes' write ends
    /// `out` and the run's cgroup. The status channel is a socket (see
    /// [`status_socket`]).
    pub(crate) fn start(
        path: &Path,
        req: &RunRequest,
        out: Option<(OwnedFd, OwnedFd)>,
        cgroup: Option<BorrowedFd>,
    ) -> Result<EarlyBwrap, StartError> {
        let (spec_r, spec_w) = pipe()?;
        let (status_r, status_w) = status_socket()?;
        let image = launcher_image(req.zot_as_launcher)?;
        let (info_r, info_w) = pipe()?;
        let (args_r, args_w) = pipe()?;
        let mut keep = vec![spec_r, status_w, image, info_w];
        let cgroup_fd = handed(&mut keep, cgroup)?;
        keep.push(args_r);
        let args_fd = SPEC_FD + keep.len() as RawFd - 1;
        let argv: Vec<OsString> = vec![
            path.as_os_str().into(),
            "--args".into(),
            args_fd.to_string().into(),
            "--info-fd".into(),
            INFO_FD.to_string().into(),
            "--".into(),
            format!("/proc/self/fd/{EXE_FD}").into(),
            zot_launcher::LAUNCH_ARG.into(),
            zot_launcher::TAIL_ARG.into(),
            "--spec-fd".into(),
            SPEC_FD.to_string().into(),
            "--status-fd".into(),
            STATUS_FD.to_string().into(),
        ];
        // A single-threaded caller with nothing but SIGPIPE ignored
        // (zot sandbox) skips posix_spawn's reset of every signal.
        let pid = if req.in_process && zot_launcher::thread_count().is_ok_and(|n| n == 1) {
            spawn_known_signals(path, &argv, req.stdin, out, &keep)
        } else {
            spawn_raw(path, &argv, req.stdin, out, &keep, false)
        }
        .map_err(|source| StartError::Spawn {
            program: path.to_path_buf(),
            source,
        })?;
        Ok(EarlyBwrap {
            pid,
            args: Some(args_w),
            spec: Some(spec_w),
            status: Some(status_r),
            info: Some(info_r),
            cgroup_fd,
        })
    }

    /// bwrap's pid, the status socket and the info pipe, now the run's.
    fn hand_over(mut self) -> (libc::pid_t, OwnedFd, OwnedFd) {
        let pid = std::mem::replace(&mut self.pid, 0);
        match (self.status.take(), self.info.take()) {
            (Some(s), Some(i)) => (pid, s, i),
            _ => unreachable!("handed over once"),
        }
    }
}

impl Drop for EarlyBwrap {
    fn drop(&mut self) {
        if self.pid > 0 {
            // Blocked on its arguments, or on its way with them: not the
            // run's any more.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid),
                nix::sys::signal::SIGKILL,
            );
            let _ = crate::supervise::wait_pid(self.pid);
        }
    }
}

/// What bwrap runs as the launcher: a sealed memfd holding the launcher
/// image (made once per process), or this binary when asked (`zot`), when
/// the build has no image, or when the host forbids executable memfds
/// (`vm.memfd_noexec=2`).
fn launcher_image(zot: bool) -> Result<OwnedFd, SupervisorError> {
    static IMAGE: std::sync::OnceLock<Option<OwnedFd>> = std::sync::OnceLock::new();
    let image = if zot {
        &None
    } else {
        IMAGE.get_or_init(|| zot_launcher::launcher_image().and_then(image_memfd))
    };
    match image {
        Some(fd) => fd
            .try_clone()
            .map_err(SupervisorError::io("duplicating the launcher image fd")),
        None => {
            let f = std::fs::File::open("/proc/self/exe").map_err(SupervisorError::CurrentExe)?;
            Ok(OwnedFd::from(f))
        }
    }
}

fn image_memfd(image: &[u8]) -> Option<OwnedFd> {
    const MFD_EXEC: libc::c_uint = 0x10;
    let name = c"zot-launcher";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a valid name; returns a new fd or -1.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | MFD_EXEC) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // Before Linux 6.3 there is no MFD_EXEC: memfds are executable.
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return None;
    }
    // SAFETY: a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut f = std::fs::File::from(fd);
    f.write_all(image).ok()?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on our fd.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return None;
    }
    Some(OwnedFd::from(f))
}

/// The read end of the spec pipe, `data` written (by a thread when it is
/// larger than a pipe holds) and the write end closed.
fn spec_pipe(data: &[u8]) -> Result<OwnedFd, SupervisorError> {
    let (spec_read, spec_write) = pipe()?;
    let json = data.to_vec();
    let mut w = std::fs::File::from(spec_write);
    if json.len() <= 60_000 {
        w.write_all(&json)
            .map_err(SupervisorError::io("writing the launch spec"))?;
        drop(w);
    } else {
        std::thread::spawn(move || {
            let _ = w.write_all(&json);
        });
    }
    Ok(spec_read)
}

/// Add the run's cgroup fd to the fds handed over (numbered from 3 in
/// order); its number in the child.
fn handed(
    keep: &mut Vec<OwnedFd>,
    cgroup: Option<BorrowedFd>,
) -> Result<Option<RawFd>, SupervisorError> {
    let Some(fd) = cgroup else {
        return Ok(None);
    };
    let fd = fd
        .try_clone_to_owned()
        .map_err(SupervisorError::io("duplicating the cgroup fd"))?;
    keep.push(fd);
    Ok(Some(SPEC_FD + keep.len() as RawFd - 1))
}

fn spawn_unconfined(
    req: &RunRequest,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    out: Option<(OwnedFd, OwnedFd)>,
) -> std::io::Result<i32> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&req.argv[0]);
    cmd.args(&req.argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .process_group(0);
    cmd.stdin(match req.stdin {
        Stdin::Inherit => Stdio::inherit(),
        Stdin::Null => Stdio::null(),
        // SAFETY: the caller keeps `fd` open until the run has started;
        // we duplicate it.
        Stdin::Fd(fd) => Stdio::from(unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?),
    });
    if let Some((o, e)) = out {
        cmd.stdout(Stdio::from(o)).stderr(Stdio::from(e));
    }
    // The child is reaped by pid (waitpid); dropping `Child` does not wait.
    Ok(cmd.spawn()?.id() as i32)
}

fn cstring(s: &OsStr) -> std::io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL byte in argument"))
}

/// Arguments of [`spawn_child`], in the parent's memory (the child shares it
/// until it execs).
struct SpawnArgs {
    prog: *const libc::c_char,
    argv: *const *const libc::c_char,
    stdin_null: bool,
    /// Dup'd to fd 0 when not -1.
    stdin_fd: libc::c_int,
    out: [libc::c_int; 2],
    keep: Vec<libc::c_int>,
    /// The child's errno when it could not exec.
    error: libc::c_int,
}

/// The vfork child of [`spawn_known_signals`]: only async-signal-safe
/// calls, no allocation; reports a failure in `error` and exits.
extern "C" fn spawn_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's SpawnArgs, alive while it is suspended.
    let a = unsafe { &mut *(arg as *mut SpawnArgs) };
    // SAFETY: plain syscalls on fds and signal numbers.
    unsafe {
        let fail = |a: &mut SpawnArgs| -> libc::c_int {
            a.error = *libc::__errno_location();
            libc::_exit(127)
        };
        if libc::setpgid(0, 0) != 0 {
            return fail(a);
        }
        if a.stdin_null {
            let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
            if fd < 0 || libc::dup2(fd, 0) < 0 {
                return fail(a);
            }
        }
        if a.stdin_fd >= 0 && libc::dup2(a.stdin_fd, 0) < 0 {
            return fail(a);
        }
        for (i, target) in [1, 2].into_iter().enumerate() {
            if a.out[i] >= 0 && libc::dup2(a.out[i], target) < 0 {
                return fail(a);
            }
        }
        for (i, fd) in a.keep.iter().enumerate() {
            if libc::dup2(*fd, SPEC_FD + i as RawFd) < 0 {
                return fail(a);
            }
        }
        zot_process::child::reset_signals();
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        libc::execve(a.prog, a.argv, envp.as_ptr());
        fail(a)
    }
}

/// What [`spawn_raw`] does, for a single-threaded caller whose only
/// non-default signal disposition is an ignored SIGPIPE: a vfork-like clone
/// that resets just the signals the command may see ignored and execs,
/// instead of glibc's reset of every signal handler (two syscalls each).
/// Copies of `keep` numbered above every fd a child sets up (close-on-exec
/// copies: the child dup2s them to their targets), so that the dup2s cannot
/// clobber each other.
fn above_targets(keep: &[OwnedFd]) -> std::io::Result<Vec<OwnedFd>> {
    keep.iter()
        .map(|fd| {
            // SAFETY: F_DUPFD_CLOEXEC returns a new fd we own.
            let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 64) };
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                // SAFETY: r is a fresh fd.
                Ok(unsafe { OwnedFd::from_raw_fd(r) })
            }
        })
        .collect()
}

fn spawn_known_signals(
    program: &Path,
    argv: &[OsString],
    stdin: Stdin,
    out: Option<(OwnedFd, OwnedFd)>,
    keep: &[OwnedFd],
) -> std::io::Result<i32> {
    let prog = cstring(program.as_os_str())?;
    let args: Vec<CString> = argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?;
    let mut argp: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argp.push(std::ptr::null());
    let high = above_targets(keep)?;
    let mut a = SpawnArgs {
        prog: prog.as_ptr(),
        argv: argp.as_ptr(),
        stdin_null: stdin == Stdin::Null,
        stdin_fd: match stdin {
            Stdin::Fd(fd) => fd,
            _ => -1,
        },
        out: match &out {
            Some((o, e)) => [o.as_raw_fd(), e.as_raw_fd()],
            None => [-1, -1],
        },
        keep: high.iter().map(|f| f.as_raw_fd()).collect(),
        error: 0,
    };
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the top of our buffer, 16-aligned.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) };
    let top = (top as usize & !15) as *mut libc::c_void;
    // Signals stay blocked until the child has reset its dispositions.
    // SAFETY: plain signal-mask calls; CLONE_VM|CLONE_VFORK: we are
    // suspended until the child execs or exits, so everything it reads
    // outlives its use.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            spawn_child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut a as *mut SpawnArgs as *mut libc::c_void,
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    drop(stack);
    drop(high);
    drop(out);
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if a.error != 0 {
        let _ = crate::supervise::wait_pid(pid);
        return Err(std::io::Error::from_raw_os_error(a.error));
    }
    Ok(pid)
}

/// `posix_spawn` `program` with an empty environment in a new process group
/// (or session) with the default signal dispositions and an empty mask;
/// `keep[i]` becomes fd 3+i in the child (our copies stay close-on-exec, so
/// concurrent spawns never inherit them).
fn spawn_raw(
    program: &Path,
    argv: &[OsString],
    stdin: Stdin,
    out: Option<(OwnedFd, OwnedFd)>,
    keep: &[OwnedFd],
    new_session: bool,
) -> std::io::Result<i32> {
    let prog = cstring(program.as_os_str())?;
    let args: Vec<CString> = argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?;
    let mut argp: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr() as *mut _).collect();
    argp.push(std::ptr::null_mut());
    let envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
    let high = above_targets(keep)?;
    let devnull = c"/dev/null";
    // SAFETY: plain libc calls on zero-initialised structs we destroy below;
    // every pointer passed outlives the posix_spawn call.
    unsafe {
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawnattr_init(&mut attr);
        let mut rc = 0;
        if stdin == Stdin::Null {
            rc |= libc::posix_spawn_file_actions_addopen(
                &mut fa,
                0,
                devnull.as_ptr(),
                libc::O_RDONLY,
                0,
            );
        }
        if let Stdin::Fd(fd) = stdin {
            rc |= libc::posix_spawn_file_actions_adddup2(&mut fa, fd, 0);
        }
        if let Some((o, e)) = &out {
            rc |= libc::posix_spawn_file_actions_adddup2(&mut fa, o.as_raw_fd(), 1);
            rc |= libc::posix_spawn_file_actions_adddup2(&mut fa, e.as_raw_fd(), 2);
        }
        for (i, fd) in high.iter().enumerate() {
            rc |= libc::posix_spawn_file_actions_adddup2(
                &mut fa,
                fd.as_raw_fd(),
                SPEC_FD + i as RawFd,
            );
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let mut defaults: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut defaults);
        for s in zot_process::child::RESET_BEFORE_EXEC {
            libc::sigaddset(&mut defaults, s);
        }
        rc |= libc::posix_spawnattr_setsigmask(&mut attr, &empty);
        rc |= libc::posix_spawnattr_setsigdefault(&mut attr, &defaults);
        rc |= libc::posix_spawnattr_setpgroup(&mut attr, 0);
        // A session leader is also the leader of its own process group.
        let group_flag = if new_session {
            libc::POSIX_SPAWN_SETSID as i32
        } else {
            libc::POSIX_SPAWN_SETPGROUP
        };
        rc |= libc::posix_spawnattr_setflags(
            &mut attr,
            (group_flag | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as _,
        );
        let mut pid: libc::pid_t = 0;
        let result = if rc != 0 {
            libc::EINVAL
        } else {
            libc::posix_spawn(
                &mut pid,
                prog.as_ptr(),
                &fa,
                &attr,
                argp.as_ptr(),
                envp.as_ptr(),
            )
        };
        libc::posix_spawn_file_actions_destroy(&mut fa);
        libc::posix_spawnattr_destroy(&mut attr);
        drop(high);
        drop(out);
        if result != 0 {
            return Err(std::io::Error::from_raw_os_error(result));
        }
        Ok(pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_policy::sandbox::{compile, SandboxMode, SandboxOptions};

    /// bwrap started ahead of a plan that never comes (planning failed, the
    /// run was cancelled) is killed and reaped, not left waiting for its
    /// arguments (or reading a cut-off list when this process exits).
    #[test]
    fn bwrap_started_ahead_is_killed_and_reaped_when_dropped() {
        let d = tempfile::tempdir().unwrap();
        let policy = compile(
            SandboxMode::WorkspaceWrite,
            &SandboxOptions {
                cwd: d.path().to_path_buf(),
                ..Default::default()
            },
        )
        .unwrap();
        let Ok(path) = crate::resolve::find_bwrap(&policy) else {
            assert!(
                std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
                "bwrap is not installed, and ZOT_TEST_MUST_WORK is set"
            );
            eprintln!("SKIP: bwrap is not installed");
            return;
        };
        let req = RunRequest::new(policy, vec!["/bin/true".into()]);
        let early = match EarlyBwrap::start(&path, &req, None, None) {
            Ok(e) => e,
            Err(StartError::Spawn { source, .. }) => panic!("{source}"),
            Err(StartError::Other(e)) => panic!("{e}"),
        };
        let pid = early.pid;
        // Alive, waiting for its arguments.
        // SAFETY: signal 0 only checks the pid.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0);
        drop(early);
        // Reaped (a zombie would still answer signal 0).
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH)
        );
    }
}
