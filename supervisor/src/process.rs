//! Spawning, output, timeouts, signal forwarding and exit codes.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zot_launcher::{
    BackendKind, LandlockLevel, LandlockMode, LaunchSpec, LaunchStatus, SeccompSpec,
};
use zot_policy::sandbox::{NetworkPolicy, ReadScope, SandboxPolicy};

use crate::resolve::{self, Backend};
use crate::{
    bwrap, env, EnforcementReport, Level, Output, RunOutcome, RunRequest, Stdin, SupervisorError,
    EXIT_TIMEOUT,
};

/// Run a command confined by `req.policy`.
pub fn run(req: RunRequest) -> Result<RunOutcome, SupervisorError> {
    if req.argv.is_empty() {
        return Err(SupervisorError::EmptyCommand);
    }
    let start = Instant::now();
    let resolved = resolve::resolve(&req.policy, req.backend, req.allow_degraded)?;
    let mut report = resolved.report.clone();
    let env = env::command_env(&req.policy, std::env::vars_os());

    let mut prepared = match &resolved.backend {
        Backend::Unconfined => {
            let mut cmd = Command::new(&req.argv[0]);
            cmd.args(&req.argv[1..])
                .current_dir(&req.policy.cwd)
                .env_clear()
                .envs(env.iter().cloned());
            Prepared {
                cmd,
                pipes: None,
                info: None,
                placeholders: Vec::new(),
                kind: Kind::Direct,
            }
        }
        Backend::Bwrap { path } => prepare_bwrap(&req, path, env)?,
        Backend::Native => prepare_direct(&req, BackendKind::Native, env)?,
        Backend::Landlock => prepare_direct(&req, BackendKind::Landlock, env)?,
    };
    // Nothing below prints: stdio per request.
    prepared.cmd.stdin(match req.stdin {
        Stdin::Inherit => Stdio::inherit(),
        Stdin::Null => Stdio::null(),
    });
    let piped = !matches!(req.output, Output::Inherit);
    if piped {
        prepared.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    prepared.cmd.process_group(0);

    let program = PathBuf::from(prepared.cmd.get_program());
    let spawned = prepared.cmd.spawn();
    // Close our copies of the child's pipe ends whatever happened.
    let pipes = prepared.pipes.take();
    let info_read = prepared.info.take();
    let mut child = match spawned {
        Ok(c) => c,
        Err(source) => {
            cleanup(&prepared.placeholders);
            if prepared.kind == Kind::Direct && resolved.backend == Backend::Unconfined {
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
    let status_reader = pipes.map(|p| {
        drop(p.child_ends);
        let mut status_read = std::fs::File::from(p.status_read);
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = status_read.read_to_end(&mut buf);
            buf
        })
    });
    let target = Arc::new(Target {
        direct: child.id() as i32,
        sandbox_init: AtomicI32::new(0),
        wrapped: prepared.kind == Kind::Bwrap,
    });
    let info_thread = info_read.map(|fd| {
        let target = target.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::fs::File::from(fd).read_to_string(&mut s);
            if let Some(pid) = parse_child_pid(&s) {
                target.sandbox_init.store(pid, Ordering::SeqCst);
            }
        })
    });

    let truncated = Arc::new(AtomicBool::new(false));
    let out_thread = child
        .stdout
        .take()
        .map(|s| pump(s, req.output, false, truncated.clone()));
    let err_thread = child
        .stderr
        .take()
        .map(|s| pump(s, req.output, true, truncated.clone()));

    let forwarder = req
        .forward_signals
        .then(|| signals::Forwarder::install(target.clone()));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let timed_out = Arc::new(AtomicBool::new(false));
    let timer = req.timeout.map(|limit| {
        let target = target.clone();
        let timed_out = timed_out.clone();
        let grace = req.kill_grace;
        std::thread::spawn(move || {
            if done_rx.recv_timeout(limit) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            timed_out.store(true, Ordering::SeqCst);
            target.signal(Signal::SIGTERM);
            if done_rx.recv_timeout(grace) == Err(mpsc::RecvTimeoutError::Timeout) {
                target.kill_all();
            }
        })
    });

    let status = wait(&mut child);
    let _ = done_tx.send(());
    if prepared.kind == Kind::Direct {
        // Reap the rest of the tree (the command's process group).
        let _ = kill(Pid::from_raw(-(child.id() as i32)), Signal::SIGKILL);
    }
    drop(forwarder);
    if let Some(t) = timer {
        let _ = t.join();
    }
    if let Some(t) = info_thread {
        let _ = t.join();
    }
    let stdout = out_thread
        .map(|t| t.join().unwrap_or_default())
        .unwrap_or_default();
    let stderr = err_thread
        .map(|t| t.join().unwrap_or_default())
        .unwrap_or_default();
    cleanup(&prepared.placeholders);
    let status = status.map_err(SupervisorError::io("waiting for the sandbox"))?;
    let raw_code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };

    if let Some(reader) = status_reader {
        let lines = reader.join().unwrap_or_default();
        let events: Vec<LaunchStatus> = lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
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
            (None, None) if !timed_out.load(Ordering::SeqCst) => {
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
                let message = if tail.is_empty() {
                    format!(
                        "{} exited with code {raw_code} before the launcher started",
                        report.backend
                    )
                } else {
                    format!(
                        "{} exited with code {raw_code} before the launcher started: {tail}",
                        report.backend
                    )
                };
                return Err(SupervisorError::Setup {
                    backend: report.backend.clone(),
                    message,
                    hint,
                });
            }
            (None, None) => {}
        }
    }
    let timed_out = timed_out.load(Ordering::SeqCst);
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

fn wait(child: &mut Child) -> std::io::Result<std::process::ExitStatus> {
    loop {
        match child.wait() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// We spawned the command or the launcher itself.
    Direct,
    /// bwrap sits between us and the launcher.
    Bwrap,
}

struct Pipes {
    status_read: OwnedFd,
    /// Ends the child inherits; dropped in the parent after spawn.
    child_ends: Vec<OwnedFd>,
}

struct Prepared {
    cmd: Command,
    pipes: Option<Pipes>,
    info: Option<OwnedFd>,
    placeholders: Vec<PathBuf>,
    kind: Kind,
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

/// Create the spec and status pipes, write the spec, and make `cmd` inherit
/// the child ends (the launcher marks them close-on-exec again).
fn attach_spec(
    cmd: &mut Command,
    spec: &LaunchSpec,
) -> Result<(Pipes, Vec<OsString>), SupervisorError> {
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
    let fds: Vec<RawFd> = vec![spec_read.as_raw_fd(), status_write.as_raw_fd()];
    inherit_fds(cmd, fds);
    let args = vec![
        OsString::from(zot_launcher::LAUNCH_ARG),
        "--spec-fd".into(),
        spec_read.as_raw_fd().to_string().into(),
        "--status-fd".into(),
        status_write.as_raw_fd().to_string().into(),
    ];
    Ok((
        Pipes {
            status_read,
            child_ends: vec![spec_read, status_write],
        },
        args,
    ))
}

fn inherit_fds(cmd: &mut Command, fds: Vec<RawFd>) {
    // SAFETY: only fcntl (async-signal-safe) runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

fn prepare_bwrap(
    req: &RunRequest,
    bwrap_path: &std::path::Path,
    env: Vec<(OsString, OsString)>,
) -> Result<Prepared, SupervisorError> {
    let exe = launcher_exe()?;
    let plan = bwrap::plan(&req.policy, &exe);
    let spec = launch_spec(req, BackendKind::Bwrap, env);
    let mut cmd = Command::new(bwrap_path);
    cmd.env_clear();
    let (info_read, info_write) = pipe()?;
    let (pipes, launcher_args) = attach_spec(&mut cmd, &spec)?;
    cmd.args(&plan.args);
    cmd.arg("--info-fd").arg(info_write.as_raw_fd().to_string());
    cmd.arg("--").arg(bwrap::LAUNCHER_PATH).args(launcher_args);
    // The info fd must be inherited too; chain a second pre_exec.
    inherit_fds(&mut cmd, vec![info_write.as_raw_fd()]);
    let mut pipes = pipes;
    pipes.child_ends.push(info_write);
    Ok(Prepared {
        cmd,
        pipes: Some(pipes),
        info: Some(info_read),
        placeholders: plan.placeholders,
        kind: Kind::Bwrap,
    })
}

fn prepare_direct(
    req: &RunRequest,
    kind: BackendKind,
    env: Vec<(OsString, OsString)>,
) -> Result<Prepared, SupervisorError> {
    let exe = launcher_exe()?;
    let spec = launch_spec(req, kind, env);
    let mut cmd = Command::new(&exe);
    cmd.env_clear();
    if kind == BackendKind::Landlock {
        cmd.current_dir(&req.policy.cwd);
    }
    let (pipes, launcher_args) = attach_spec(&mut cmd, &spec)?;
    cmd.args(launcher_args);
    Ok(Prepared {
        cmd,
        pipes: Some(pipes),
        info: None,
        placeholders: Vec::new(),
        kind: Kind::Direct,
    })
}

/// Whom to signal.
struct Target {
    /// The process we spawned (bwrap, the launcher, or the command).
    direct: i32,
    /// bwrap's PID 1 inside the sandbox, as a host pid (from --info-fd).
    sandbox_init: AtomicI32,
    wrapped: bool,
}

impl Target {
    /// The sandboxed command's host pid, when bwrap runs it under its init.
    fn command_pid(&self) -> Option<i32> {
        let init = self.sandbox_init.load(Ordering::SeqCst);
        if init <= 0 {
            return None;
        }
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
        let init = self.sandbox_init.load(Ordering::SeqCst);
        if init > 0 {
            // Killing the PID namespace's init kills every process in it.
            let _ = kill(Pid::from_raw(init), Signal::SIGKILL);
        }
        let _ = kill(Pid::from_raw(-self.direct), Signal::SIGKILL);
        let _ = kill(Pid::from_raw(self.direct), Signal::SIGKILL);
    }
}

/// Copy or collect one output stream, never blocking the writer.
fn pump(
    mut src: impl Read + Send + 'static,
    output: Output,
    is_err: bool,
    truncated: Arc<AtomicBool>,
) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let (max, capture) = match output {
            Output::Capture { max_bytes } => (max_bytes, true),
            Output::Stream { max_bytes } => (max_bytes, false),
            Output::Inherit => (usize::MAX, false),
        };
        let mut kept = Vec::new();
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
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
    //! Process-wide SIGINT/SIGTERM/SIGHUP forwarding through a self-pipe.

    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::Arc;

    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

    use super::Target;

    static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
    const FORWARDED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

    extern "C" fn on_signal(sig: libc::c_int) {
        let fd = WRITE_FD.load(Ordering::SeqCst);
        if fd >= 0 {
            let b = sig as u8;
            // SAFETY: write(2) is async-signal-safe.
            unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
        }
    }

    pub(super) struct Forwarder {
        old: Vec<(Signal, SigAction)>,
        write: Option<OwnedFd>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Forwarder {
        pub(super) fn install(target: Arc<Target>) -> Forwarder {
            let Ok((read, write)) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) else {
                return Forwarder {
                    old: Vec::new(),
                    write: None,
                    thread: None,
                };
            };
            WRITE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
            let action = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::SA_RESTART,
                SigSet::empty(),
            );
            let mut old = Vec::new();
            for sig in FORWARDED {
                // SAFETY: the handler only calls write(2).
                if let Ok(prev) = unsafe { sigaction(sig, &action) } {
                    old.push((sig, prev));
                }
            }
            let thread = std::thread::spawn(move || {
                let mut f = std::fs::File::from(read);
                let mut b = [0u8; 1];
                use std::io::Read;
                while let Ok(1) = f.read(&mut b) {
                    if b[0] == 0 {
                        break;
                    }
                    if let Ok(sig) = Signal::try_from(b[0] as i32) {
                        target.signal(sig);
                    }
                }
            });
            Forwarder {
                old,
                write: Some(write),
                thread: Some(thread),
            }
        }
    }

    impl Drop for Forwarder {
        fn drop(&mut self) {
            for (sig, prev) in self.old.drain(..) {
                // SAFETY: restoring the previous disposition.
                let _ = unsafe { sigaction(sig, &prev) };
            }
            WRITE_FD.store(-1, Ordering::SeqCst);
            if let Some(w) = self.write.take() {
                let _ = nix::unistd::write(&w, &[0u8]);
            }
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

#[allow(dead_code)]
fn _assert_policy(_: &SandboxPolicy, _: &EnforcementReport) {}
