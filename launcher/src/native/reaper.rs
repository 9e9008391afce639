//! Signal forwarding, waiting and reaping for the native backend's outer
//! launcher and its PID 1.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Where forwarded signals go: a pid, or (negative) a process group with
/// the pid as fallback. 0: not known yet, signals are held in `HELD`.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);
static FORWARD_GROUP: AtomicI32 = AtomicI32::new(0);
/// Signals that came while there was nobody to forward them to (one bit
/// each): passed on once there is.
static HELD: AtomicU64 = AtomicU64::new(0);

/// Pass `sig` on to `pid` (its group, see [`Forward`]). Async-signal-safe.
fn deliver(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill is async-signal-safe.
    unsafe {
        // The command leads its own process group (it called setsid): reach
        // everything it started; before that, the process itself.
        if FORWARD_GROUP.load(Ordering::SeqCst) == 0 || libc::kill(-pid, sig) != 0 {
            libc::kill(pid, sig);
        }
    }
}

/// Pass on what [`HELD`] holds, each signal once: whoever swaps a bit out
/// delivers it.
fn deliver_held(pid: libc::pid_t) {
    let bits = HELD.swap(0, Ordering::SeqCst);
    for sig in FORWARDED {
        if bits & (1 << sig) != 0 {
            deliver(pid, sig);
        }
    }
}

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = FORWARD_TO.load(Ordering::SeqCst);
    if pid > 0 {
        return deliver(pid, sig);
    }
    HELD.fetch_or(1 << sig, Ordering::SeqCst);
    // The target may have been set since the load above, after its own
    // look at HELD: then nobody else would pass this one on.
    let pid = FORWARD_TO.load(Ordering::SeqCst);
    if pid > 0 {
        deliver_held(pid);
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

/// Catch the forwarded signals and hold them until [`forward_to`] names
/// where they go. What a copy of this process (a fork) held before is
/// dropped: the process it was copied from passes it on.
pub(crate) fn hold_signals() {
    FORWARD_TO.store(0, Ordering::SeqCst);
    HELD.store(0, Ordering::SeqCst);
    for sig in FORWARDED {
        // SAFETY: installing a handler that only uses atomics and kill().
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = forward_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// From now on forwarded signals go to `to`, the held ones first. The
/// handlers are those of [`hold_signals`], which must have run.
pub(crate) fn forward_to(to: Forward) {
    let (pid, group) = match to {
        Forward::Process(p) => (p, 0),
        Forward::Group(p) => (p, 1),
    };
    FORWARD_GROUP.store(group, Ordering::SeqCst);
    FORWARD_TO.store(pid, Ordering::SeqCst);
    deliver_held(pid);
}

/// Block every signal in the calling thread; the previous mask is
/// returned for [`set_mask`]. Around a fork: the child starts with them
/// blocked, so none reaches a handler it inherited and must not run
/// (its parent's) before it installs its own.
pub(crate) fn block_all() -> libc::sigset_t {
    // SAFETY: plain sigset operations on local values.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Put back the mask [`block_all`] returned.
pub(crate) fn set_mask(mask: &libc::sigset_t) {
    // SAFETY: a mask read by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
}

fn stop_forwarding() {
    FORWARD_TO.store(-1, Ordering::SeqCst);
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
