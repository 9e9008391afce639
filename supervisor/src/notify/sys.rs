//! The syscalls the notification server makes, as small safe wrappers:
//! the listener's ioctls, pidfds, the target's memory, `openat2`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The errno of the last failed call.
pub(super) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn fd_result(r: libc::c_long) -> Result<OwnedFd, i32> {
    if r < 0 {
        Err(errno())
    } else {
        // SAFETY: the kernel just returned this new fd to us.
        Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
    }
}

/// One stopped call, as `SECCOMP_IOCTL_NOTIF_RECV` reports it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Notif {
    pub id: u64,
    /// The calling thread, in our PID namespace.
    pub tid: i32,
    pub nr: i64,
    pub args: [u64; 6],
}

/// The kernel's sizes of the notification structures (they may grow).
fn notif_sizes() -> (usize, usize) {
    static SIZES: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *SIZES.get_or_init(|| {
        let mut s = libc::seccomp_notif_sizes {
            seccomp_notif: 0,
            seccomp_notif_resp: 0,
            seccomp_data: 0,
        };
        const SECCOMP_GET_NOTIF_SIZES: libc::c_uint = 3;
        // SAFETY: fills `s`.
        let r = unsafe { libc::syscall(libc::SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &mut s) };
        let ours = (
            std::mem::size_of::<libc::seccomp_notif>(),
            std::mem::size_of::<libc::seccomp_notif_resp>(),
        );
        if r != 0 {
            return ours;
        }
        (
            ours.0.max(s.seccomp_notif as usize),
            ours.1.max(s.seccomp_notif_resp as usize),
        )
    })
}

/// Receive one notification (`Err(ENOENT)`: the caller went away before).
pub(super) fn recv(listener: &OwnedFd) -> Result<Notif, i32> {
    let (size, _) = notif_sizes();
    // Zeroed, as the kernel requires; u64s for alignment.
    let mut buf = vec![0u64; size.div_ceil(8)];
    loop {
        // SAFETY: a zeroed buffer at least as large as the kernel's struct.
        let r = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                buf.as_mut_ptr(),
            )
        };
        if r == 0 {
            break;
        }
        match errno() {
            libc::EINTR => buf.iter_mut().for_each(|w| *w = 0),
            e => return Err(e),
        }
    }
    // SAFETY: the buffer starts with a struct seccomp_notif.
    let n = unsafe { &*(buf.as_ptr() as *const libc::seccomp_notif) };
    Ok(Notif {
        id: n.id,
        tid: n.pid as i32,
        nr: n.data.nr as i64,
        args: n.data.args,
    })
}

/// The answer to a notification: the call's return value or its errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reply {
    Val(i64),
    Err(i32),
}

/// Answer notification `id` (ENOENT when the caller is gone: ignored).
pub(super) fn send(listener: &OwnedFd, id: u64, reply: Reply) {
    let (_, size) = notif_sizes();
    let mut buf = vec![0u64; size.div_ceil(8)];
    // SAFETY: the buffer starts with a struct seccomp_notif_resp.
    let resp = unsafe { &mut *(buf.as_mut_ptr() as *mut libc::seccomp_notif_resp) };
    resp.id = id;
    match reply {
        Reply::Val(v) => resp.val = v,
        Reply::Err(e) => resp.error = -e,
    }
    loop {
        // SAFETY: a valid response buffer.
        let r = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                buf.as_mut_ptr(),
            )
        };
        if r == 0 || errno() != libc::EINTR {
            return;
        }
    }
}

/// Notification `id` is still pending: its caller is alive and blocked in
/// the call, so a pid or memory read since then was the caller's.
pub(super) fn id_valid(listener: &OwnedFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: reads the u64.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &mut id,
        ) == 0
    }
}

/// Wake the caller on the CPU that answers (Linux 6.6+; best effort).
pub(super) fn sync_wake_up(listener: &OwnedFd) {
    const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;
    // SAFETY: an integer argument.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
        )
    };
}

/// A pidfd of thread `tid` (its own fd table: `PIDFD_THREAD`, Linux 6.9),
/// or of its process before that.
pub(super) fn pidfd_open(tid: i32) -> Result<OwnedFd, i32> {
    static NO_THREAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;
    use std::sync::atomic::Ordering;
    if !NO_THREAD.load(Ordering::Relaxed) {
        // SAFETY: integer arguments; a new fd or -1.
        match fd_result(unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) }) {
            Err(libc::EINVAL) => NO_THREAD.store(true, Ordering::Relaxed),
            r => return r,
        }
    }
    let tgid = std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse::<i32>().ok())
        })
        .ok_or(libc::ESRCH)?;
    // SAFETY: as above.
    fd_result(unsafe { libc::syscall(libc::SYS_pidfd_open, tgid, 0) })
}

/// The caller's open file behind its fd `fd` (the same open file
/// description, not a second open).
pub(super) fn pidfd_getfd(pidfd: &OwnedFd, fd: i32) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments; a new fd (close-on-exec) or -1.
    fd_result(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) })
}

/// Send signal `sig` to the pidfd's thread (or process).
pub(super) fn pidfd_signal(pidfd: &OwnedFd, sig: i32) {
    // SAFETY: integer arguments, no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
}

/// Copy `len` bytes at `addr` of thread `tid` (once: the copy is what the
/// call uses). EFAULT when any of it is not readable.
pub(super) fn read_mem(tid: i32, addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut out = vec![0u8; len];
    if len == 0 {
        return Ok(out);
    }
    if addr == 0 {
        return Err(libc::EFAULT);
    }
    let mut done = 0;
    while done < len {
        let local = libc::iovec {
            iov_base: out[done..].as_mut_ptr().cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (addr as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: `local` is our buffer; the remote side is only read.
        let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(libc::EFAULT),
            _ => match errno() {
                libc::EFAULT | libc::EIO => return Err(libc::EFAULT),
                e => return Err(e),
            },
        }
    }
    Ok(out)
}

/// Write `data` at `addr` of thread `tid` (results the call returns in
/// user memory, as `sendmmsg`'s `msg_len`).
pub(super) fn write_mem(tid: i32, addr: u64, data: &[u8]) -> Result<(), i32> {
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: only the remote side is written.
    let n = unsafe { libc::process_vm_writev(tid, &local, 1, &remote, 1, 0) };
    if n == data.len() as isize {
        Ok(())
    } else {
        Err(libc::EFAULT)
    }
}

pub(super) const RESOLVE_BENEATH: u64 = 0x08;
pub(super) const RESOLVE_IN_ROOT: u64 = 0x10;
pub(super) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;

/// `openat2(dir, path, O_PATH | O_CLOEXEC, resolve)`: the final symlink
/// followed, as `connect` does.
pub(super) fn open_path(dir: &OwnedFd, path: &[u8], resolve: u64) -> Result<OwnedFd, i32> {
    let c = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    let how: [u64; 3] = [(libc::O_PATH | libc::O_CLOEXEC) as u64, 0, resolve];
    loop {
        // SAFETY: a valid path and open_how of the size passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                c.as_ptr(),
                how.as_ptr(),
                std::mem::size_of_val(&how),
            )
        };
        match fd_result(r) {
            // The kernel asks to retry when a rename raced the lookup.
            Err(libc::EAGAIN) | Err(libc::EINTR) => continue,
            r => return r,
        }
    }
}

/// A directory of our own `/proc` (`/proc/TID/root`, `/proc/TID/cwd`).
pub(super) fn open_dir(path: &str) -> Result<OwnedFd, i32> {
    let c = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid path; a new fd or -1.
    let r = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    fd_result(r as libc::c_long)
}

pub(super) fn fstat(fd: &OwnedFd) -> Result<libc::stat, i32> {
    // SAFETY: fills the struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(errno());
    }
    Ok(st)
}

/// An int-valued `SOL_SOCKET` option of `fd`, or the errno.
pub(crate) fn sockopt_int(fd: &OwnedFd, opt: libc::c_int) -> Result<i32, i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an int out-parameter of the size passed.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        Err(errno())
    } else {
        Ok(v)
    }
}

/// The file's status flags (`O_NONBLOCK`), shared with the caller.
pub(super) fn nonblocking(fd: &OwnedFd) -> bool {
    // SAFETY: F_GETFL has no pointer arguments.
    let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    fl >= 0 && fl & libc::O_NONBLOCK != 0
}

/// Drop every capability of the calling thread (the others keep theirs):
/// what the server does on the sandbox's behalf then needs no more
/// privilege than the sandbox has. The sandbox's user namespace is ours,
/// so `pidfd_getfd` and `/proc/TID` still work.
pub(super) fn drop_thread_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    let header = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let data = [0u32; 6];
    // SAFETY: capset of the calling thread with valid structs.
    unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
}
