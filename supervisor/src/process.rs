//! Spawning, output, timeouts, signal forwarding and exit codes.
//!
//! The launcher (and bwrap) are started with `posix_spawn` (vfork speed; no
//! code runs between fork and exec in this possibly multi-threaded process).
//! The spec, status and bwrap info pipes are handed over as fds 3, 4 and 5.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use zot_launcher::{
    BackendKind, LandlockLevel, LandlockMode, LaunchSpec, LaunchStatus, SeccompSpec,
};
use zot_policy::sandbox::{NetworkPolicy, ReadScope};

use crate::resolve::{self, Backend};
use crate::{
    bwrap, env, Level, Output, RunOutcome, RunRequest, Stdin, SupervisorError, EXIT_TIMEOUT,
};

/// Fd numbers the launcher gets.
const SPEC_FD: RawFd = 3;
const STATUS_FD: RawFd = 4;
const INFO_FD: RawFd = 5;

/// Run a command confined by `req.policy`.
pub fn run(req: RunRequest) -> Result<RunOutcome, SupervisorError> {
    if req.argv.is_empty() {
        return Err(SupervisorError::EmptyCommand);
    }
    let start = Instant::now();
    let resolved = resolve::resolve(&req.policy, req.backend, req.allow_degraded)?;
    let mut report = resolved.report.clone();
    let env = env::command_env(&req.policy, std::env::vars_os());

    let (out_pipes, parent_out) = if matches!(req.output, Output::Inherit) {
        (None, None)
    } else {
        let (or, ow) = pipe()?;
        let (er, ew) = pipe()?;
        (Some((ow, ew)), Some((or, er)))
    };

    let mut placeholders = Vec::new();
    let mut status_read = None;
    let mut info_read = None;
    let spawned = match &resolved.backend {
        Backend::Unconfined => spawn_unconfined(&req, env, out_pipes),
        backend => {
            let exe = launcher_exe()?;
            let kind = match backend {
                Backend::Bwrap { .. } => BackendKind::Bwrap,
                Backend::Native => BackendKind::Native,
                _ => BackendKind::Landlock,
            };
            let spec = launch_spec(&req, kind, env);
            let (spec_r, status_r, status_w) = spec_pipes(&spec)?;
            status_read = Some(status_r);
            let mut launcher_args: Vec<OsString> = vec![
                zot_launcher::LAUNCH_ARG.into(),
                "--spec-fd".into(),
                SPEC_FD.to_string().into(),
                "--status-fd".into(),
                STATUS_FD.to_string().into(),
            ];
            match backend {
                Backend::Bwrap { path } => {
                    let plan = bwrap::plan(&req.policy, &exe);
                    placeholders = plan.placeholders;
                    let (ir, iw) = pipe()?;
                    info_read = Some(ir);
                    let mut argv: Vec<OsString> = vec![path.as_os_str().into()];
                    argv.extend(plan.args);
                    argv.extend(["--info-fd".into(), INFO_FD.to_string().into(), "--".into()]);
                    argv.push(bwrap::LAUNCHER_PATH.into());
                    argv.append(&mut launcher_args);
                    spawn_raw(
                        path,
                        &argv,
                        &[],
                        req.stdin,
                        out_pipes,
                        &[spec_r, status_w, iw],
                        false,
                    )
                }
                _ => {
                    let mut argv: Vec<OsString> = vec![exe.as_os_str().into()];
                    argv.append(&mut launcher_args);
                    // Exec through /proc/self/exe: our own binary even when
                    // its path is not visible here (zot run from inside
                    // another sandbox's private /tmp) or was replaced since.
                    let exe = PathBuf::from("/proc/self/exe");
                    // On the landlock backend the launcher must not be a
                    // process-group leader (its setsid() would fail with EPERM):
                    // spawn it as the leader of a new session instead.
                    let new_session = matches!(backend, Backend::Landlock);
                    spawn_raw(
                        &exe,
                        &argv,
                        &[],
                        req.stdin,
                        out_pipes,
                        &[spec_r, status_w],
                        new_session,
                    )
                }
            }
        }
    };
    let pid = match spawned {
        Ok(pid) => pid,
        Err(source) => {
            cleanup(&placeholders);
            let program = match resolved.backend {
                // What failed to start is bwrap or the launcher, not the command.
                Backend::Unconfined => PathBuf::from(&req.argv[0]),
                Backend::Bwrap { ref path } => path.clone(),
                _ => launcher_exe().unwrap_or_else(|_| "/proc/self/exe".into()),
            };
            if resolved.backend == Backend::Unconfined {
                // like a shell: not found / not executable are the command's codes
                let code = if source.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                return Ok(RunOutcome {
                    exit_code: code,
                    stdout: Vec::new(),
                    stderr: format!("zot: {}: {source}\n", program.display()).into_bytes(),
                    truncated: false,
                    timed_out: false,
                    duration: start.elapsed(),
                    report,
                });
            }
            return Err(SupervisorError::Spawn { program, source });
        }
    };
    let target = Arc::new(Target {
        direct: pid,
        wrapped: matches!(resolved.backend, Backend::Bwrap { .. }),
        sandbox_init: AtomicI32::new(0),
        info: Mutex::new(info_read.map(std::fs::File::from)),
    });

    let truncated = Arc::new(AtomicBool::new(false));
    let exited = Arc::new(AtomicBool::new(false));
    let pumps = parent_out.map(|(o, e)| {
        (
            pump(
                std::fs::File::from(o),
                req.output,
                false,
                truncated.clone(),
                exited.clone(),
            ),
            pump(
                std::fs::File::from(e),
                req.output,
                true,
                truncated.clone(),
                exited.clone(),
            ),
        )
    });

    let (status, timed_out) = supervise(
        pid,
        &target,
        req.timeout,
        req.kill_grace,
        req.forward_signals,
    );
    // The landlock backend has no PID namespace either: kill what is
    // left of the command's process group (its session leader was `pid`).
    if matches!(resolved.backend, Backend::Unconfined | Backend::Landlock) {
        // Reap the rest of the tree (the command's process group).
        let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
    }
    exited.store(true, Ordering::SeqCst);
    let (stdout, stderr) = match pumps {
        Some((o, e)) => (o.join().unwrap_or_default(), e.join().unwrap_or_default()),
        None => (Vec::new(), Vec::new()),
    };
    cleanup(&placeholders);
    let raw_code = status.map_err(SupervisorError::io("waiting for the sandbox"))?;

    if let Some(status_read) = status_read {
        let events = read_status(status_read);
        let ready = events.iter().find_map(|e| match e {
            LaunchStatus::Ready { landlock, seccomp } => Some((landlock.clone(), *seccomp)),
            _ => None,
        });
        let failed = events.iter().find_map(|e| match e {
            LaunchStatus::Failed { stage, message } => Some(format!("{stage}: {message}")),
            _ => None,
        });
        match (ready, failed) {
            (_, Some(message)) => {
                return Err(SupervisorError::Setup {
                    backend: report.backend.clone(),
                    message,
                    hint: None,
                });
            }
            (Some((landlock, seccomp)), None) => {
                report.landlock = match landlock.level {
                    LandlockLevel::Full => Level::Full,
                    LandlockLevel::Partial => Level::Partial,
                    LandlockLevel::None => Level::None,
                };
                if let Some(d) = landlock.detail {
                    if report.landlock != Level::Full {
                        report.reasons.push(format!("landlock: {d}"));
                    }
                }
                report.seccomp = if seccomp { Level::Full } else { Level::None };
            }
            (None, None) if !timed_out => {
                let tail = String::from_utf8_lossy(&stderr);
                let tail = tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                let hint = match resolved.backend {
                    Backend::Bwrap { .. } => Some(resolve::bwrap_failure_hint()),
                    _ => None,
                };
                let mut message = format!(
                    "{} exited with code {raw_code} before the launcher started",
                    report.backend
                );
                if !tail.is_empty() {
                    message.push_str(": ");
                    message.push_str(&tail);
                }
                return Err(SupervisorError::Setup {
                    backend: report.backend.clone(),
                    message,
                    hint,
                });
            }
            (None, None) => {}
        }
    }
    Ok(RunOutcome {
        exit_code: if timed_out { EXIT_TIMEOUT } else { raw_code },
        stdout,
        stderr,
        truncated: truncated.load(Ordering::SeqCst),
        timed_out,
        duration: start.elapsed(),
        report,
    })
}

/// Wait for `pid` while enforcing the timeout (TERM, then KILL of the whole
/// tree after `grace`) and forwarding signals. Single-threaded: polls a
/// pidfd, woken by the child's exit, the deadline or a signal.
fn supervise(
    pid: i32,
    target: &Target,
    timeout: Option<Duration>,
    grace: Duration,
    forward: bool,
) -> (std::io::Result<i32>, bool) {
    if timeout.is_none() && !forward {
        return (wait_pid(pid), false);
    }
    let _handlers = forward.then(signals::Handlers::install);
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    // SAFETY: a fresh fd we own (when >= 0).
    let pidfd = (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw) });
    let mut deadline = timeout.map(|t| Instant::now() + t);
    let mut timed_out = false;
    loop {
        let mut wait = Duration::from_millis(if forward { 100 } else { 1000 });
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        let exited = match &pidfd {
            Some(fd) => {
                let mut pfd = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let r = unsafe {
                    libc::poll(&mut pfd, 1, wait.as_millis().min(i32::MAX as u128) as i32)
                };
                r > 0
            }
            None => {
                // No pidfd (Linux < 5.3): poll with WNOHANG.
                std::thread::sleep(wait.min(Duration::from_millis(10)));
                matches!(
                    nix::sys::wait::waitid(
                        nix::sys::wait::Id::Pid(Pid::from_raw(pid)),
                        nix::sys::wait::WaitPidFlag::WEXITED
                            | nix::sys::wait::WaitPidFlag::WNOHANG
                            | nix::sys::wait::WaitPidFlag::WNOWAIT
                    ),
                    Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..))
                )
            }
        };
        if forward {
            for sig in signals::take() {
                target.signal(sig);
            }
        }
        if exited {
            break;
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                if !timed_out {
                    timed_out = true;
                    target.signal(Signal::SIGTERM);
                    deadline = Some(Instant::now() + grace);
                } else {
                    target.kill_all();
                    deadline = None;
                }
            }
        }
    }
    (wait_pid(pid), timed_out)
}

/// Wait for `pid`; its exit code, or 128+N when killed by signal N.
fn wait_pid(pid: i32) -> std::io::Result<i32> {
    loop {
        match waitpid(Pid::from_raw(pid), None) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(128 + sig as i32),
            Ok(_) => continue,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The status lines the launcher wrote. Read after the sandbox exited, so
/// every writer is gone; non-blocking in case a copy of the pipe survived.
fn read_status(fd: OwnedFd) -> Vec<LaunchStatus> {
    let _ = nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    );
    let mut f = std::fs::File::from(fd);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = f.read(&mut chunk) {
        if n == 0 || buf.len() > 1 << 20 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    buf.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

fn parse_child_pid(info: &str) -> Option<i32> {
    let v: serde_json::Value = serde_json::from_str(info.trim()).ok()?;
    v.get("child-pid")?.as_i64().map(|p| p as i32)
}

/// Remove the empty placeholder files bwrap created as mount points.
fn cleanup(placeholders: &[PathBuf]) {
    for p in placeholders.iter().rev() {
        if let Ok(m) = std::fs::symlink_metadata(p) {
            if m.is_file() && m.len() == 0 {
                let _ = std::fs::remove_file(p);
            } else if m.is_dir() {
                let _ = std::fs::remove_dir(p);
            }
        }
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SupervisorError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| SupervisorError::Io {
        what: "creating a pipe".into(),
        source: e.into(),
    })
}

fn launcher_exe() -> Result<PathBuf, SupervisorError> {
    std::env::current_exe().map_err(SupervisorError::CurrentExe)
}

/// The spec pipe (already written and closed on our side) and the status pipe.
fn spec_pipes(spec: &LaunchSpec) -> Result<(OwnedFd, OwnedFd, OwnedFd), SupervisorError> {
    let (spec_read, spec_write) = pipe()?;
    let (status_read, status_write) = pipe()?;
    let json = serde_json::to_vec(spec).map_err(|e| SupervisorError::Io {
        what: "encoding the launch spec".into(),
        source: e.into(),
    })?;
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
    Ok((spec_read, status_read, status_write))
}

fn spawn_unconfined(
    req: &RunRequest,
    env: Vec<(OsString, OsString)>,
    out: Option<(OwnedFd, OwnedFd)>,
) -> std::io::Result<i32> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&req.argv[0]);
    cmd.args(&req.argv[1..])
        .current_dir(&req.policy.cwd)
        .env_clear()
        .envs(env)
        .process_group(0);
    cmd.stdin(match req.stdin {
        Stdin::Inherit => Stdio::inherit(),
        Stdin::Null => Stdio::null(),
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

/// `posix_spawn` `program` in a new process group with the default signal
/// dispositions and an empty mask; `keep[i]` becomes fd 3+i in the child
/// (our copies stay close-on-exec, so concurrent spawns never inherit them).
fn spawn_raw(
    program: &Path,
    argv: &[OsString],
    env: &[(OsString, OsString)],
    stdin: Stdin,
    out: Option<(OwnedFd, OwnedFd)>,
    keep: &[OwnedFd],
    new_session: bool, // POSIX_SPAWN_SETSID instead of a new process group
) -> std::io::Result<i32> {
    let prog = cstring(program.as_os_str())?;
    let args: Vec<CString> = argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?;
    let envs: Vec<CString> = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(OsStr::from_bytes(&kv))
        })
        .collect::<Result<_, _>>()?;
    let mut argp: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr() as *mut _).collect();
    argp.push(std::ptr::null_mut());
    let mut envp: Vec<*mut libc::c_char> = envs.iter().map(|a| a.as_ptr() as *mut _).collect();
    envp.push(std::ptr::null_mut());
    // Move the fds to keep above every target number first, so the dup2s
    // below cannot clobber each other.
    let high: Vec<OwnedFd> = keep
        .iter()
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
        .collect::<Result<_, _>>()?;
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
        for s in [
            libc::SIGPIPE,
            libc::SIGXFSZ,
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
        ] {
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

/// Whom to signal.
struct Target {
    /// The process we spawned (bwrap, the launcher, or the command).
    direct: i32,
    wrapped: bool,
    /// bwrap's PID 1 inside the sandbox, as a host pid (from --info-fd).
    sandbox_init: AtomicI32,
    info: Mutex<Option<std::fs::File>>,
}

impl Target {
    fn init_pid(&self) -> Option<i32> {
        let known = self.sandbox_init.load(Ordering::SeqCst);
        if known > 0 {
            return Some(known);
        }
        let mut guard = self.info.lock().ok()?;
        let f = guard.as_mut()?;
        let _ = nix::fcntl::fcntl(
            &*f,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
        let mut s = String::new();
        let _ = f.read_to_string(&mut s);
        let pid = parse_child_pid(&s)?;
        self.sandbox_init.store(pid, Ordering::SeqCst);
        Some(pid)
    }

    /// The sandboxed command's host pid, when bwrap runs it under its init.
    fn command_pid(&self) -> Option<i32> {
        let init = self.init_pid()?;
        let children =
            std::fs::read_to_string(format!("/proc/{init}/task/{init}/children")).ok()?;
        children.split_whitespace().next()?.parse().ok()
    }

    /// Deliver `sig` to the command (and its process group).
    fn signal(&self, sig: Signal) {
        if !self.wrapped {
            let _ = kill(Pid::from_raw(self.direct), sig);
            return;
        }
        match self.command_pid() {
            Some(pid) => {
                let _ = kill(Pid::from_raw(-pid), sig);
                let _ = kill(Pid::from_raw(pid), sig);
            }
            // Not started yet or unknown: stop everything.
            None => self.kill_all(),
        }
    }

    /// SIGKILL the whole tree.
    fn kill_all(&self) {
        if let Some(init) = self.init_pid() {
            // Killing the PID namespace's init kills every process in it.
            let _ = kill(Pid::from_raw(init), Signal::SIGKILL);
        }
        let _ = kill(Pid::from_raw(-self.direct), Signal::SIGKILL);
        let _ = kill(Pid::from_raw(self.direct), Signal::SIGKILL);
    }
}

/// The launch spec a run of `req` on `backend` gets (also shown by
/// `zot debug sandbox --explain`). `env` is the command's final environment
/// (see [`crate::command_env`]).
pub fn launch_spec(
    req: &RunRequest,
    backend: BackendKind,
    env: Vec<(OsString, OsString)>,
) -> LaunchSpec {
    let restricted = matches!(req.policy.read, ReadScope::Restricted { .. });
    let private_tmp = backend != BackendKind::Landlock;
    LaunchSpec {
        backend,
        policy: req.policy.clone(),
        argv: req.argv.clone(),
        env,
        landlock: if backend == BackendKind::Landlock {
            LandlockMode::Required
        } else {
            LandlockMode::BestEffort
        },
        landlock_read: if restricted {
            vec!["/proc".into(), bwrap::LAUNCHER_PATH.into()]
        } else {
            Vec::new()
        },
        landlock_write: if private_tmp {
            vec!["/tmp".into(), "/var/tmp".into(), "/dev/shm".into()]
        } else {
            Vec::new()
        },
        landlock_dev: vec!["/dev".into()],
        seccomp: SeccompSpec {
            deny_network: req.policy.network == NetworkPolicy::Off,
            // Without a private /tmp and /run, host sockets stay reachable by path.
            deny_unix_connect: backend == BackendKind::Landlock
                && req.policy.network == NetworkPolicy::Off,
        },
    }
}

/// Copy or collect one output stream, never blocking the writer.
fn pump(
    src: std::fs::File,
    output: Output,
    is_err: bool,
    truncated: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let (max, capture) = match output {
            Output::Capture { max_bytes } => (max_bytes, true),
            Output::Stream { max_bytes } => (max_bytes, false),
            Output::Inherit => (usize::MAX, false),
        };
        let mut src = src;
        let mut kept = Vec::new();
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        // Once the sandbox has exited, a process that escaped the tree (no
        // PID namespace on the landlock backend, or danger-full-access) may
        // still hold the pipe: stop reading shortly after.
        let mut exit_seen: Option<Instant> = None;
        loop {
            if exited.load(Ordering::SeqCst) {
                let t = *exit_seen.get_or_insert_with(Instant::now);
                if t.elapsed() > Duration::from_millis(500) {
                    break;
                }
            }
            let mut pfd = libc::pollfd {
                fd: src.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, 100) } == 0 {
                continue;
            }
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let room = max.saturating_sub(total);
            let take = n.min(room);
            if take < n {
                truncated.store(true, Ordering::SeqCst);
            }
            if take > 0 {
                if capture {
                    kept.extend_from_slice(&buf[..take]);
                } else if is_err {
                    let _ = std::io::stderr().write_all(&buf[..take]);
                } else {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&buf[..take]);
                    let _ = out.flush();
                }
            }
            total = total.saturating_add(n);
        }
        kept
    })
}

mod signals {
    //! Process-wide SIGINT/SIGTERM/SIGHUP handlers (installed for the run's
    //! duration) that only record the signal; the supervising loop forwards.

    use std::sync::atomic::{AtomicU64, Ordering};

    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

    static PENDING: AtomicU64 = AtomicU64::new(0);
    const FORWARDED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

    extern "C" fn on_signal(sig: libc::c_int) {
        PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    }

    /// Signals received since the last call.
    pub(super) fn take() -> Vec<Signal> {
        let bits = PENDING.swap(0, Ordering::SeqCst);
        FORWARDED
            .into_iter()
            .filter(|s| bits & (1 << *s as i32) != 0)
            .collect()
    }

    pub(super) struct Handlers {
        old: Vec<(Signal, SigAction)>,
    }

    impl Handlers {
        pub(super) fn install() -> Handlers {
            // No SA_RESTART: a signal interrupts the wait so it is forwarded at once.
            let action = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::empty(),
                SigSet::empty(),
            );
            let mut old = Vec::new();
            for sig in FORWARDED {
                // SAFETY: the handler only touches an atomic.
                if let Ok(prev) = unsafe { sigaction(sig, &action) } {
                    old.push((sig, prev));
                }
            }
            Handlers { old }
        }
    }

    impl Drop for Handlers {
        fn drop(&mut self) {
            for (sig, prev) in self.old.drain(..) {
                // SAFETY: restoring the previous disposition.
                let _ = unsafe { sigaction(sig, &prev) };
            }
        }
    }
}
