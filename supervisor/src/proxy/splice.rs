//! Socket-to-socket copying without a trip through user memory: bytes are
//! `splice`d from the source socket into a pipe and from the pipe into the
//! destination.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Bytes moved by one `splice` at most: the pipe's capacity when it can be
/// raised to it (fewer wake-ups per megabyte), else the default 64 KiB.
pub(crate) const CHUNK: usize = 256 * 1024;

/// One direction's pipe: what was taken from the source and not yet given
/// to the destination.
pub(crate) struct SplicePipe {
    r: OwnedFd,
    w: OwnedFd,
    pending: usize,
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: plain syscall on descriptors the caller owns; null
        // offsets (sockets and pipes have none).
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl SplicePipe {
    pub(crate) fn new() -> io::Result<SplicePipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these, nothing else owns them.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Best effort: an unprivileged process may be held below this by
        // fs.pipe-max-size (the pipe then keeps its 64 KiB).
        // SAFETY: fcntl on a pipe this function owns.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        Ok(SplicePipe { r, w, pending: 0 })
    }

    /// Bytes in the pipe.
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    /// Take what `src` has (at most [`CHUNK`]); `Ok(0)` is its EOF,
    /// `WouldBlock` that it has nothing now. Call with the pipe empty (then
    /// `WouldBlock` can only be the source's).
    pub(crate) fn fill(&mut self, src: RawFd) -> io::Result<usize> {
        debug_assert_eq!(self.pending, 0);
        let n = splice(src, self.w.as_raw_fd(), CHUNK)?;
        self.pending += n;
        Ok(n)
    }

    /// Give `dst` what it takes of the pipe; `WouldBlock`: nothing now.
    pub(crate) fn drain(&mut self, dst: RawFd) -> io::Result<usize> {
        let n = splice(self.r.as_raw_fd(), dst, self.pending)?;
        self.pending -= n;
        Ok(n)
    }
}

/// Pipes not in use, for the next direction that has bytes to move: an
/// idle connection holds no pipe (and no descriptors beyond its sockets).
#[derive(Default)]
pub(crate) struct PipePool {
    free: Vec<SplicePipe>,
}

impl PipePool {
    /// Pipes kept for reuse at most.
    const KEEP: usize = 64;

    pub(crate) fn get(&mut self) -> io::Result<SplicePipe> {
        match self.free.pop() {
            Some(p) => Ok(p),
            None => SplicePipe::new(),
        }
    }

    /// Give back an empty pipe (one with bytes in it is closed instead).
    pub(crate) fn put(&mut self, p: SplicePipe) {
        if p.pending == 0 && self.free.len() < Self::KEEP {
            self.free.push(p);
        }
    }
}
