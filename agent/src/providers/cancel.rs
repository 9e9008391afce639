//! Cancelling a model request: a [`Cancel`] handle anyone may trigger (an
//! interactive front end on Ctrl-C), and the [`SignalGuard`] that turns
//! SIGINT/SIGTERM/SIGHUP received while a request is in flight into the
//! same wake-up, so the request is dropped at once (its connection closed,
//! which makes the provider stop generating).
//!
//! Both wake the request through a self-pipe: [`Cancel::cancel`] and the
//! signal handler only store an atomic and `write(2)` one byte, which is
//! async-signal-safe.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

struct Inner {
    flag: AtomicBool,
    /// The signal that asked for the cancellation ([`Cancel::interrupt`]), 0 if none.
    signal: AtomicI32,
    read: OwnedFd,
    write: OwnedFd,
}

/// A cancellation handle (cheap to clone, `Send + Sync`). `cancel()`
/// aborts the turn it is given to: the in-flight model request at once,
/// otherwise at the next step. The runtime clears it when a turn starts.
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

    /// Cancel because signal `sig` asked the whole run to stop (SIGTERM,
    /// SIGHUP): the turn ends with [`RunError::Interrupted`] instead of
    /// [`RunError::Cancelled`], and so does the run. Async-signal-safe.
    ///
    /// [`RunError::Interrupted`]: crate::RunError::Interrupted
    /// [`RunError::Cancelled`]: crate::RunError::Cancelled
    pub fn interrupt(&self, sig: i32) {
        self.0.signal.store(sig, Ordering::SeqCst);
        self.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// The signal given to [`Cancel::interrupt`] since the last reset.
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.signal.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// Clear a past cancellation.
    pub fn reset(&self) {
        self.0.flag.store(false, Ordering::SeqCst);
        self.0.signal.store(0, Ordering::SeqCst);
        let mut buf = [0u8; 64];
        // SAFETY: reading into a local buffer from our non-blocking pipe.
        while unsafe { libc::read(self.0.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0
        {
        }
    }

    /// The pipe end that becomes readable on cancellation or a signal.
    pub(crate) fn wake_fd(&self) -> RawFd {
        self.0.read.as_raw_fd()
    }

    pub(crate) fn write_fd(&self) -> RawFd {
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
        assert!(c.is_cancelled() && readable(&c));
        assert_eq!(c.signal(), Some(libc::SIGTERM));
        c.reset();
        assert_eq!(c.signal(), None);
    }
}
