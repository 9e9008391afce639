//! Cancelling work in flight: a [`Cancel`] handle anyone may trigger (an
//! interactive front end on Ctrl-C, a signal route of
//! [`crate::signals`]), which a sandboxed run, a model request or a
//! download watches through [`Cancel::wake_fd`].
//!
//! Triggering only stores atomics and `write(2)`s one byte to a self-pipe,
//! which is async-signal-safe.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

pub(crate) struct Inner {
    flag: AtomicBool,
    /// The signal that asked for the cancellation ([`Cancel::interrupt`]), 0 if none.
    signal: AtomicI32,
    read: OwnedFd,
    write: OwnedFd,
}

impl Inner {
    /// Async-signal-safe.
    pub(crate) fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        wake(self.write.as_raw_fd());
    }

    /// Async-signal-safe.
    pub(crate) fn interrupt(&self, sig: i32) {
        let _ = self
            .signal
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        self.cancel();
    }

    /// Wake the watcher without cancelling. Async-signal-safe.
    pub(crate) fn wake(&self) {
        wake(self.write.as_raw_fd());
    }
}

/// A cancellation handle (cheap to clone, `Send + Sync`). `cancel()`
/// aborts the work it is given to: an in-flight model request or sandboxed
/// command at once (the command gets SIGTERM, then SIGKILL), otherwise at
/// the next step. An agent runtime clears a cancellation when a turn
/// starts; an interrupt ([`Cancel::interrupt`]) is never cleared.
#[derive(Clone)]
pub struct Cancel(pub(crate) Arc<Inner>);

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

    /// Request cancellation. Async-signal-safe.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Cancel because signal `sig` asked the whole process to stop: a
    /// sandboxed command gets `sig` (then SIGKILL after the grace time), an
    /// agent run ends with 128+`sig`. The first signal wins.
    /// Async-signal-safe.
    pub fn interrupt(&self, sig: i32) {
        self.0.interrupt(sig);
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
        self.drain();
    }

    /// Empty the wake pipe (a wake-up that was not a cancellation).
    pub(crate) fn drain(&self) {
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
}

fn wake(fd: RawFd) {
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a static buffer is
        // async-signal-safe; a full pipe (EAGAIN) already wakes the reader.
        unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn readable(c: &Cancel) -> bool {
        let mut p = libc::pollfd {
            fd: c.wake_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn cancel_wakes_and_resets() {
        let c = Cancel::new().unwrap();
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
