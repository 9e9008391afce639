//! Signal forwarding, waiting and reaping for the native backend's outer
//! launcher and its PID 1.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// Where forwarded signals go: a pid, or (negative) a process group with
/// the pid as fallback.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);
static FORWARD_GROUP: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = FORWARD_TO.load(Ordering::Relaxed);
    if pid <= 0 {
        return;
    }
    // SAFETY: kill is async-signal-safe.
    unsafe {
        // The command leads its own process group (it called setsid): reach
        // everything it started; before that, the process itself.
        if FORWARD_GROUP.load(Ordering::Relaxed) == 0 || libc::kill(-pid, sig) != 0 {
            libc::kill(pid, sig);
        }
    }
}

/// Signals passed on to the sandbox.
const FORWARDED: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// Whom forwarded signals reach.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Forward {
    /// This process only (the next forwarder down the chain).
    Process(libc::pid_t),
    /// This process's group (the command's session), falling back to it.
    Group(libc::pid_t),
}

pub(crate) fn install_forwarders(to: Forward) {
    let (pid, group) = match to {
        Forward::Process(p) => (p, 0),
        Forward::Group(p) => (p, 1),
    };
    FORWARD_GROUP.store(group, Ordering::Relaxed);
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

fn stop_forwarding() {
    FORWARD_TO.store(0, Ordering::Relaxed);
}

pub(crate) fn decode_status(st: libc::c_int) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        125
    }
}

/// Wait for our child `pid`: its exit code, 128+N for signal N.
pub(crate) fn wait_status(pid: libc::pid_t) -> i32 {
    let mut st = 0;
    loop {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            return decode_status(st);
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 125;
        }
    }
}

/// PID 1's loop: reap everything; when the first child exits, kill the rest
/// of the namespace (no orphan outlives the sandbox), reap until ECHILD,
/// return the first child's status.
pub(crate) fn reap(first: libc::pid_t) -> i32 {
    let mut code = None;
    loop {
        let mut st = 0;
        // SAFETY: waiting for any child.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r < 0 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                _ => break, // ECHILD
            }
        }
        if r == first && code.is_none() {
            code = Some(decode_status(st));
            stop_forwarding();
            // SAFETY: as PID 1, -1 targets every other process in the namespace.
            unsafe { libc::kill(-1, libc::SIGKILL) };
        }
    }
    code.unwrap_or(125)
}

/// Terminate at once, without destructors or atexit handlers (a forked copy
/// of the caller must not flush or free the caller's state).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(code) }
}
