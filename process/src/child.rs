//! Forked children: fork a child that runs async-signal-safe code and
//! exits, wait for a pid, and the signal state a child resets before exec.

use std::io;

/// Signals whose disposition a child resets to the default before it
/// execs (Rust ignores SIGPIPE; zot handles or ignores the others).
pub const RESET_BEFORE_EXEC: [libc::c_int; 6] = [
    libc::SIGPIPE,
    libc::SIGXFSZ,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// In a forked child: the default disposition for [`RESET_BEFORE_EXEC`]
/// and an empty signal mask. Async-signal-safe.
pub fn reset_signals() {
    // SAFETY: sigaction/sigprocmask on local, initialised structures.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        for sig in RESET_BEFORE_EXEC {
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Exited(i32),
    Signaled(i32),
}

impl Status {
    fn from_raw(st: libc::c_int) -> Status {
        if libc::WIFSIGNALED(st) {
            Status::Signaled(libc::WTERMSIG(st))
        } else {
            Status::Exited(libc::WEXITSTATUS(st))
        }
    }

    /// The shell's code: the exit code, or 128+N for signal N.
    pub fn code(self) -> i32 {
        match self {
            Status::Exited(c) => c,
            Status::Signaled(s) => 128 + s,
        }
    }

    pub fn success(self) -> bool {
        self == Status::Exited(0)
    }
}

/// Wait for `pid` to end (retrying on EINTR; stops are not ends).
pub fn wait(pid: libc::pid_t) -> io::Result<Status> {
    loop {
        let mut st = 0;
        // SAFETY: waitpid writes the status into our local.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            return Ok(Status::from_raw(st));
        }
    }
}

/// A forked child. Dropping it without [`Child::wait`] kills it (SIGKILL)
/// and reaps it, so no child outlives its owner and no zombie is left.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Wait for the child to end by itself.
    pub fn wait(mut self) -> io::Result<Status> {
        self.reaped = true;
        wait(self.pid)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: our own child, not yet reaped (its pid is not reused).
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = wait(self.pid);
        }
    }
}

/// Fork a child that runs `f` and `_exit`s with what it returns (a panic
/// exits 127: the child never unwinds into the parent's code).
///
/// # Safety
/// In a multi-threaded process the child may only call async-signal-safe
/// functions: `f` must allocate nothing, take no lock and use only data
/// prepared before the call.
pub unsafe fn fork(f: impl FnOnce() -> libc::c_int) -> io::Result<Child> {
    // SAFETY: the caller upholds the after-fork rules for `f`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(127);
            // SAFETY: leave the child without running the parent's exit code.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(Child { pid, reaped: false }),
    }
}

/// In a forked child: die with the parent (SIGKILL), also when the parent
/// died before this call. Async-signal-safe.
pub fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: prctl and getppid take plain values.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_signals() {
        // SAFETY: the children only call _exit / raise.
        let c = unsafe { fork(|| 7) }.unwrap();
        assert_eq!(c.wait().unwrap(), Status::Exited(7));
        let c = unsafe {
            fork(|| {
                libc::raise(libc::SIGKILL);
                0
            })
        }
        .unwrap();
        let st = c.wait().unwrap();
        assert_eq!(st, Status::Signaled(libc::SIGKILL));
        assert_eq!(st.code(), 137);
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        // SAFETY: the child only calls pause.
        let c = unsafe {
            fork(|| loop {
                libc::pause();
            })
        }
        .unwrap();
        let pid = c.pid();
        drop(c);
        // SAFETY: probing a pid we reaped: ESRCH (or another process's pid
        // much later, not within this test).
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
    }
}
