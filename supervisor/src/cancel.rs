//! Cancelling work in flight: a [`Cancel`] handle anyone may trigger (an
//! interactive front end on Ctrl-C, a signal handler), which a sandboxed
//! run ([`crate::RunRequest::cancel`]), a model request or a download
//! watches; [`Cancel::on_signals`] turns SIGINT/SIGTERM/SIGHUP into an
//! interrupt of the whole process's work, and the [`SignalGuard`] turns
//! them into a wake-up only while one model request is in flight.
//!
//! All of them wake the watcher through a self-pipe: [`Cancel::cancel`] and
//! the signal handlers only store atomics and `write(2)` one byte, which
//! is async-signal-safe.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

struct Inner {
    flag: AtomicBool,
    /// The signal that asked for the cancellation ([`Cancel::interrupt`]), 0 if none.
    signal: AtomicI32,
    read: OwnedFd,
    write: OwnedFd,
}

/// A cancellation handle (cheap to clone, `Send + Sync`). `cancel()`
/// aborts the work it is given to: an in-flight model request or sandboxed
/// command at once (the command gets SIGTERM, then SIGKILL), otherwise at
/// the next step. An agent runtime clears a cancellation when a turn
/// starts; an interrupt ([`Cancel::interrupt`]) is never cleared.
#[derive(Clone)]
pub struct Cancel(Arc<Inner>);

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cancel({})", self.is_cancelled())
    }
}

impl Cancel {
    pub fn new() -> std::io::Result<Cancel> {
        let (read, write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)
                .map_err(std::io::Error::from)?;
        Ok(Cancel(Arc::new(Inner {
            flag: AtomicBool::new(false),
            signal: AtomicI32::new(0),
            read,
            write,
        })))
    }

    /// Request cancellation. Async-signal-safe: may be called from a signal
    /// handler.
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        wake(self.0.write.as_raw_fd());
    }

    /// Cancel because signal `sig` asked the whole process to stop: a
    /// sandboxed command gets `sig` (then SIGKILL after the grace time), an
    /// agent run ends with 128+`sig`. The first signal wins.
    /// Async-signal-safe.
    pub fn interrupt(&self, sig: i32) {
        let _ = self
            .0
            .signal
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        self.cancel();
    }

    /// For the rest of the process's life, SIGINT, SIGTERM and SIGHUP
    /// [`interrupt`](Cancel::interrupt) this handle instead of killing the
    /// process, so that its work stops, what it created is removed, and it
    /// exits 128+N itself. Only one handle per process is connected (the
    /// first one given).
    pub fn on_signals(&self) {
        let _ = ON_SIGNALS.set(self.clone());
        let action = SigAction::new(
            SigHandler::Handler(interrupt_on_signal),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for sig in HANDLED {
            // SAFETY: the handler only uses atomics and write(2).
            let _ = unsafe { sigaction(sig, &action) };
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// The signal given to [`Cancel::interrupt`] since the last reset.
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.signal.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// Clear a past cancellation. An interrupt stays: the signal asked the
    /// whole process to stop, not one turn.
    pub fn reset(&self) {
        if self.signal().is_some() {
            return;
        }
        self.0.flag.store(false, Ordering::SeqCst);
        let mut buf = [0u8; 64];
        // SAFETY: reading into a local buffer from our non-blocking pipe.
        while unsafe { libc::read(self.0.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0
        {
        }
    }

    /// The pipe end that becomes readable on cancellation or a signal
    /// (it stays readable until [`Cancel::reset`]).
    pub fn wake_fd(&self) -> RawFd {
        self.0.read.as_raw_fd()
    }

    fn write_fd(&self) -> RawFd {
        self.0.write.as_raw_fd()
    }
}

fn wake(fd: RawFd) {
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a static buffer is
        // async-signal-safe; a full pipe (EAGAIN) already wakes the reader.
        unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
    }
}

static ON_SIGNALS: OnceLock<Cancel> = OnceLock::new();

extern "C" fn interrupt_on_signal(sig: libc::c_int) {
    if let Some(c) = ON_SIGNALS.get() {
        c.interrupt(sig);
    }
}

static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static PENDING: AtomicU64 = AtomicU64::new(0);
const HANDLED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    wake(WAKE_FD.load(Ordering::SeqCst));
}

/// While alive, SIGINT/SIGTERM/SIGHUP wake `cancel`'s request instead of
/// killing the process; the previous dispositions come back on drop (so a
/// signal outside a model request keeps its usual effect).
pub struct SignalGuard {
    old: Vec<(Signal, SigAction)>,
}

impl SignalGuard {
    pub fn install(cancel: &Cancel) -> SignalGuard {
        PENDING.store(0, Ordering::SeqCst);
        WAKE_FD.store(cancel.write_fd(), Ordering::SeqCst);
        let action = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        let mut old = Vec::new();
        for sig in HANDLED {
            // SAFETY: the handler only touches atomics and write(2).
            if let Ok(prev) = unsafe { sigaction(sig, &action) } {
                old.push((sig, prev));
            }
        }
        SignalGuard { old }
    }

    /// The first signal received while installed, if any.
    pub fn received() -> Option<i32> {
        let bits = PENDING.load(Ordering::SeqCst);
        HANDLED
            .into_iter()
            .map(|s| s as i32)
            .find(|s| bits & (1 << s) != 0)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in self.old.drain(..) {
            // SAFETY: restoring the previous disposition.
            let _ = unsafe { sigaction(sig, &prev) };
        }
        WAKE_FD.store(-1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_wakes_and_resets() {
        let c = Cancel::new().unwrap();
        let readable = |c: &Cancel| {
            let mut p = libc::pollfd {
                fd: c.wake_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, 0) == 1 }
        };
        assert!(!c.is_cancelled() && !readable(&c));
        c.clone().cancel();
        assert!(c.is_cancelled() && readable(&c));
        c.reset();
        assert!(!c.is_cancelled() && !readable(&c));
        assert_eq!(c.signal(), None);
        c.interrupt(libc::SIGTERM);
        c.interrupt(libc::SIGINT);
        assert!(c.is_cancelled() && readable(&c));
        assert_eq!(c.signal(), Some(libc::SIGTERM), "the first signal wins");
        c.reset();
        assert!(
            c.is_cancelled() && readable(&c),
            "an interrupt is never cleared"
        );
        assert_eq!(c.signal(), Some(libc::SIGTERM));
    }
}
