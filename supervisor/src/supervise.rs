//! Waiting for the sandbox while enforcing the timeout and forwarding
//! signals, and whom a signal or a kill reaches on each backend: always the
//! command's whole process group (or the whole PID namespace).

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use crate::Cancel;

/// Whom to signal, by how the sandbox was started.
pub(crate) enum Target {
    /// The command leads its own process group (unconfined, landlock).
    Group(i32),
    /// The sandbox's PID 1 (native, started without an exec): it forwards
    /// signals to the command's process group; killing it ends the PID
    /// namespace. It writes the command's code on `done` once the whole
    /// sandbox is reaped.
    Init { pid: i32, done: Option<OwnedFd> },
    /// The native launcher we exec'd: it forwards to PID 1, and PID 1 dies
    /// with it.
    Launcher(i32),
    /// bwrap; its PID 1 inside the sandbox comes on the info pipe.
    Bwrap {
        direct: i32,
        init: AtomicI32,
        info: Mutex<Option<std::fs::File>>,
    },
}

fn kill_raw(pid: i32, sig: Signal) -> bool {
    kill(Pid::from_raw(pid), sig).is_ok()
}

impl Target {
    /// The process we wait for.
    pub(crate) fn pid(&self) -> i32 {
        match self {
            Target::Group(p) | Target::Init { pid: p, .. } | Target::Launcher(p) => *p,
            Target::Bwrap { direct, .. } => *direct,
        }
    }

    /// bwrap's PID 1 inside the sandbox, as a host pid (from --info-fd).
    fn bwrap_init(&self) -> Option<i32> {
        let Target::Bwrap { init, info, .. } = self else {
            return None;
        };
        let known = init.load(Ordering::SeqCst);
        if known > 0 {
            return Some(known);
        }
        let mut guard = info.lock().ok()?;
        let f = guard.as_mut()?;
        let _ = nix::fcntl::fcntl(
            &*f,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
        let mut s = String::new();
        let _ = f.read_to_string(&mut s);
        let pid = parse_child_pid(&s)?;
        init.store(pid, Ordering::SeqCst);
        Some(pid)
    }

    /// Deliver `sig` to the command and everything in its process group.
    pub(crate) fn signal(&self, sig: Signal) {
        match self {
            Target::Group(p) => {
                if !kill_raw(-p, sig) {
                    kill_raw(*p, sig);
                }
            }
            Target::Init { pid: p, .. } | Target::Launcher(p) => {
                kill_raw(*p, sig);
            }
            Target::Bwrap { .. } => {
                // The command is the child of bwrap's PID 1 that leads its
                // own process group (the launcher called setsid); a helper
                // of the launcher (the socket-check hand-off, the proxy's
                // bridge) may be listed before it. Give it a moment to
                // get there (a signal during the start-up).
                let deadline = Instant::now() + Duration::from_millis(500);
                loop {
                    let leaders = self.bwrap_init().map(|init| {
                        std::fs::read_to_string(format!("/proc/{init}/task/{init}/children"))
                            .unwrap_or_default()
                            .split_whitespace()
                            .filter_map(|p| p.parse::<i32>().ok())
                            .filter(|&p| {
                                nix::unistd::getpgid(Some(Pid::from_raw(p))) == Ok(Pid::from_raw(p))
                            })
                            .collect::<Vec<i32>>()
                    });
                    match leaders {
                        Some(l) if !l.is_empty() => {
                            for pid in l {
                                kill_raw(-pid, sig);
                            }
                            return;
                        }
                        _ if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        // Not started or unknown: stop everything.
                        _ => return self.kill_all(),
                    }
                }
            }
        }
    }

    /// PID 1's report fd, if it gives one.
    fn done_fd(&self) -> Option<RawFd> {
        match self {
            Target::Init { done: Some(d), .. } => Some(d.as_raw_fd()),
            _ => None,
        }
    }

    /// SIGKILL the whole tree.
    pub(crate) fn kill_all(&self) {
        match self {
            Target::Group(p) | Target::Launcher(p) => {
                kill_raw(-p, Signal::SIGKILL);
                kill_raw(*p, Signal::SIGKILL);
            }
            // Killing a PID namespace's init kills every process in it.
            Target::Init { pid: p, .. } => {
                kill_raw(*p, Signal::SIGKILL);
            }
            Target::Bwrap { direct, .. } => {
                if let Some(init) = self.bwrap_init() {
                    kill_raw(init, Signal::SIGKILL);
                }
                kill_raw(-direct, Signal::SIGKILL);
                kill_raw(*direct, Signal::SIGKILL);
            }
        }
    }
}

fn parse_child_pid(info: &str) -> Option<i32> {
    let v: serde_json::Value = serde_json::from_str(info.trim()).ok()?;
    v.get("child-pid")?.as_i64().map(|p| p as i32)
}

/// Wait for the target while enforcing the timeout (TERM to the command's
/// group, then KILL of the whole tree after `grace`) and forwarding
/// signals. Single-threaded: polls a pidfd, woken by the exit, the deadline
/// or a signal.
pub(crate) fn supervise(
    target: &Target,
    timeout: Option<Duration>,
    grace: Duration,
    forward: bool,
    cancel: Option<&Cancel>,
) -> (std::io::Result<i32>, Stop) {
    reap_done();
    let pid = target.pid();
    let mut done = target.done_fd();
    if timeout.is_none() && !forward && cancel.is_none() {
        if let Some(code) = done.and_then(read_code) {
            reap_later(pid);
            return (Ok(code), Stop::Exit);
        }
        return (wait_pid(pid), Stop::Exit);
    }
    // The forwarding handlers were installed before the sandbox started
    // (see [`zot_process::signals::forward`]): a signal since then is pending here.
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    // SAFETY: a fresh fd we own (when >= 0).
    let pidfd = (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw) });
    let mut deadline = timeout.map(|t| Instant::now() + t);
    // Why we stopped the command (it has had SIGTERM or the signal of an
    // interrupt; at `deadline` it gets SIGKILL).
    let mut stop = Stop::Exit;
    // The cancel pipe stays readable once fired: watched until then.
    let mut watch_cancel = cancel;
    loop {
        if let Some(c) = watch_cancel {
            if let Some(sig) = fired(c) {
                watch_cancel = None;
                if stop == Stop::Exit {
                    stop = Stop::Cancel;
                    target.signal(Signal::try_from(sig).unwrap_or(Signal::SIGTERM));
                    deadline = Some(Instant::now() + grace);
                }
            }
        }
        let mut wait = Duration::from_millis(if forward { 100 } else { 1000 });
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        let (exited, reported) = match &pidfd {
            Some(fd) => {
                let mut pfds = [
                    libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: done.unwrap_or(-1),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: watch_cancel.map_or(-1, Cancel::wake_fd),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                // SAFETY: valid pollfds (a negative fd is ignored).
                let r = unsafe { libc::poll(pfds.as_mut_ptr(), 3, ms) };
                (r > 0 && pfds[0].revents != 0, r > 0 && pfds[1].revents != 0)
            }
            None => {
                // No pidfd (Linux < 5.3): poll with WNOHANG.
                std::thread::sleep(wait.min(Duration::from_millis(10)));
                let exited = matches!(
                    nix::sys::wait::waitid(
                        nix::sys::wait::Id::Pid(Pid::from_raw(pid)),
                        nix::sys::wait::WaitPidFlag::WEXITED
                            | nix::sys::wait::WaitPidFlag::WNOHANG
                            | nix::sys::wait::WaitPidFlag::WNOWAIT
                    ),
                    Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..))
                );
                (exited, false)
            }
        };
        if forward {
            for sig in zot_process::signals::take_forwarded() {
                target.signal(sig);
            }
        }
        if reported {
            match done.and_then(read_code) {
                // The whole sandbox is reaped: no need to wait for the
                // kernel to free its namespaces.
                Some(code) => {
                    reap_later(pid);
                    return (Ok(code), stop);
                }
                None => done = None, // it died without a report
            }
        }
        if exited {
            break;
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                if stop == Stop::Exit {
                    stop = Stop::Timeout;
                    target.signal(Signal::SIGTERM);
                    deadline = Some(Instant::now() + grace);
                } else {
                    target.kill_all();
                    deadline = None;
                }
            }
        }
    }
    (wait_pid(pid), stop)
}

/// Why [`supervise`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The command ended by itself (or by a forwarded signal).
    Exit,
    Timeout,
    Cancel,
}

/// The signal a fired `cancel` stands for (SIGTERM for a plain cancel),
/// `None` while it has not fired.
pub(crate) fn fired(cancel: &Cancel) -> Option<i32> {
    cancel
        .is_cancelled()
        .then(|| cancel.signal().unwrap_or(libc::SIGTERM))
}

/// The 4-byte code PID 1 writes on its report pipe (blocks until it does
/// or dies: EOF, None).
fn read_code(fd: RawFd) -> Option<i32> {
    let mut b = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // SAFETY: reading into our buffer.
        let r = unsafe { libc::read(fd, b[got..].as_mut_ptr().cast(), 4 - got) };
        match r {
            n if n > 0 => got += n as usize,
            0 => return None,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
    Some(i32::from_ne_bytes(b))
}

/// PIDs 1 that reported their command's code and are still freeing their
/// namespaces: reaped by a later [`supervise`] (a session's next command)
/// once they are gone, or by init when this process exits first.
static REAP: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Reap `pid` without waiting for it here (PID 1 freeing its namespaces):
/// no thread is started for it; until then it is a zombie, which holds no
/// namespace (a process leaves them before its exit status is kept).
fn reap_later(pid: i32) {
    REAP.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

/// Reap what [`reap_later`] left and has exited since; keep the rest.
fn reap_done() {
    let mut pending = REAP.lock().unwrap_or_else(|e| e.into_inner());
    pending.retain(|&pid| {
        let mut status = 0;
        // SAFETY: waitpid on our own child, without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        r == 0
    });
}

/// Wait for `pid`; its exit code, or 128+N when killed by signal N.
pub(crate) fn wait_pid(pid: i32) -> std::io::Result<i32> {
    zot_process::child::wait(pid).map(zot_process::child::Status::code)
}
