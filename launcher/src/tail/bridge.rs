//! The sandbox's end of the filtering proxy, in the tail: a TCP listener on
//! `127.0.0.1:PORT` inside the sandbox's network namespace that hands each
//! connection it accepts to the proxy whole. It connects to the proxy's
//! unix socket (bound into the sandbox), sends the accepted socket over it
//! (`SCM_RIGHTS`, with the one byte [`HANDOFF`]) and closes its copies: the
//! bytes then flow between the sandbox's client and the proxy directly.
//!
//! [`start`] runs after every hardening step of the tail and before `execve`,
//! in a process forked from the command's own: no capabilities,
//! `no_new_privs`, the command's rlimits, Landlock domain and seccomp
//! filter, nothing open but its listener and a pidfd of the command. It
//! leaves the command's process tree (a double fork: the sandbox's PID 1
//! reaps it, the command never sees it as a child) and its session (the
//! terminal's and the supervisor's group signals are for the command), and
//! exits when the command's process does. The listener exists before the
//! command starts: its first connection cannot race the bridge.
//!
//! The proxy checks what it receives (a TCP stream socket) and treats it as
//! any client: the descriptor carries nothing the sandbox could not reach.

use super::sys::{self, check, nr, syscall};
use super::{fail, Fail};

/// The byte sent with a handed-off socket.
pub const HANDOFF: u8 = 0;

fn sc(n: usize, a: usize, b: usize, c: usize, d: usize, e: usize) -> Result<usize, i32> {
    // SAFETY: every call site passes valid arguments for `n`.
    check(unsafe { syscall(n, a, b, c, d, e, 0) })
}

fn close(fd: usize) {
    let _ = sc(nr::CLOSE, fd, 0, 0, 0, 0);
}

/// `struct sockaddr_un` for a NUL-terminated `path`, and its length.
fn unix_addr(path: &[u8]) -> Result<([u8; 110], usize), i32> {
    let mut a = [0u8; 110];
    if path.len() > 107 {
        return Err(36); // ENAMETOOLONG
    }
    a[..2].copy_from_slice(&(sys::AF_UNIX as u16).to_ne_bytes());
    a[2..2 + path.len()].copy_from_slice(path);
    Ok((a, 2 + path.len() + 1))
}

/// Hand the connected socket `client` to the proxy listening at `path`
/// (without its NUL).
pub fn hand_off(client: i32, path: &[u8]) -> Result<(), i32> {
    let (addr, len) = unix_addr(path)?;
    let unix = sc(
        nr::SOCKET,
        sys::AF_UNIX,
        sys::SOCK_STREAM | sys::SOCK_CLOEXEC,
        0,
        0,
        0,
    )?;
    let r = (|| {
        sc(nr::CONNECT, unix, addr.as_ptr() as usize, len, 0, 0)?;
        let byte = [HANDOFF];
        let iov: [usize; 2] = [byte.as_ptr() as usize, 1];
        // struct cmsghdr (len, level, type) + one int, padded to 8.
        let mut control = [0u8; 24];
        control[..8].copy_from_slice(&20usize.to_ne_bytes());
        control[8..12].copy_from_slice(&sys::SOL_SOCKET.to_ne_bytes());
        control[12..16].copy_from_slice(&sys::SCM_RIGHTS.to_ne_bytes());
        control[16..20].copy_from_slice(&client.to_ne_bytes());
        // struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
        let msg: [usize; 7] = [
            0,
            0,
            iov.as_ptr() as usize,
            1,
            control.as_ptr() as usize,
            control.len(),
            0,
        ];
        loop {
            match sc(
                nr::SENDMSG,
                unix,
                msg.as_ptr() as usize,
                sys::MSG_NOSIGNAL,
                0,
                0,
            ) {
                Err(sys::EINTR) => continue,
                r => return r.map(drop),
            }
        }
    })();
    close(unix);
    r
}

/// Accept on the non-blocking `listener` and hand every connection off to
/// `path` (without its NUL) until `stop` (-1: never) becomes readable or
/// the listener fails. A connection that cannot be handed off (the proxy is
/// gone) is closed.
pub fn serve(listener: i32, path: &[u8], stop: i32) -> Result<(), i32> {
    // struct pollfd: fd, events, revents.
    #[repr(C)]
    struct PollFd(i32, i16, i16);
    loop {
        let mut fds = [PollFd(listener, sys::POLLIN, 0), PollFd(stop, sys::POLLIN, 0)];
        match sc(nr::PPOLL, fds.as_mut_ptr() as usize, 2, 0, 0, 8) {
            Ok(_) => {}
            Err(sys::EINTR) => continue,
            Err(e) => return Err(e),
        }
        if fds[1].2 != 0 {
            return Ok(());
        }
        if fds[0].2 & !sys::POLLIN != 0 {
            return Err(sys::EBADF);
        }
        loop {
            match sc(nr::ACCEPT4, listener as usize, 0, 0, sys::SOCK_CLOEXEC, 0) {
                Ok(fd) => {
                    let _ = hand_off(fd as i32, path);
                    close(fd);
                }
                Err(sys::EINTR) => {}
                // EAGAIN; out of descriptors, a connection reset before
                // accept: the listener itself is fine.
                Err(_) => break,
            }
        }
    }
}

/// Close every descriptor but `keep` (ascending).
fn close_all_but(keep: [usize; 2]) {
    let mut from = 0usize;
    for k in keep {
        if k > from {
            let _ = sc(nr::CLOSE_RANGE, from, k - 1, 0, 0, 0);
        }
        from = k + 1;
    }
    let _ = sc(nr::CLOSE_RANGE, from, u32::MAX as usize, 0, 0, 0);
}

/// `fork()`: 0 in the child, its pid in the parent.
fn fork() -> Result<usize, i32> {
    // clone(SIGCHLD) with no other flag, no new stack: a plain fork.
    sc(nr::CLONE, sys::SIGCHLD, 0, 0, 0, 0)
}

/// The seccomp program `prog` with every `SECCOMP_RET_USER_NOTIF` made
/// `SECCOMP_RET_ALLOW`, installed on this process.
fn install_without_notify(prog: &[u8]) -> Result<(), i32> {
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const USER_NOTIF: u32 = 0x7fc0_0000;
    const MAX: usize = 4096; // BPF_MAXINSNS
    let n = prog.len() / 8;
    if n == 0 || n > MAX {
        return Err(sys::EINVAL);
    }
    let mut copy = [0u64; MAX];
    for (i, ins) in prog.chunks_exact(8).enumerate() {
        let code = u16::from_le_bytes([ins[0], ins[1]]);
        let k = u32::from_le_bytes([ins[4], ins[5], ins[6], ins[7]]);
        let mut b = [0u8; 8];
        b.copy_from_slice(ins);
        if code == RET_K && k == USER_NOTIF {
            b[4..8].copy_from_slice(&0x7fff_0000u32.to_le_bytes()); // ALLOW
        }
        copy[i] = u64::from_le_bytes(b);
    }
    let fprog: [usize; 2] = [n, copy.as_ptr() as usize];
    sc(
        nr::SECCOMP,
        sys::SECCOMP_SET_MODE_FILTER,
        0,
        fprog.as_ptr() as usize,
        0,
        0,
    )
    .map(drop)
}

/// Listen on `127.0.0.1:port` and start the bridge to the proxy at `path`
/// in a process of its own (see the module's text).
/// Returns once it runs; the caller then execs the command. `filter`: the
/// command's seccomp program, when the bridge is started before it is
/// installed (the bridge installs it without the supervisor's part).
pub fn start(port: u16, path: &[u8], filter: Option<&[u8]>) -> Result<(), Fail> {
    let stage = "proxy bridge";
    unix_addr(path).map_err(|e| fail(stage, "the proxy's socket path", e))?;
    let listener = sc(
        nr::SOCKET,
        sys::AF_INET,
        sys::SOCK_STREAM | sys::SOCK_NONBLOCK | sys::SOCK_CLOEXEC,
        0,
        0,
        0,
    )
    .map_err(|e| fail(stage, "socket", e))?;
    // struct sockaddr_in: family, port (big-endian), 127.0.0.1, padding.
    let mut sin = [0u8; 16];
    sin[..2].copy_from_slice(&(sys::AF_INET as u16).to_ne_bytes());
    sin[2..4].copy_from_slice(&port.to_be_bytes());
    sin[4..8].copy_from_slice(&[127, 0, 0, 1]);
    let r = sc(nr::BIND, listener, sin.as_ptr() as usize, sin.len(), 0, 0)
        .map_err(|e| fail(stage, "listening on the bridge's port (bind)", e))
        .and_then(|_| {
            sc(nr::LISTEN, listener, 4096, 0, 0, 0)
                .map_err(|e| fail(stage, "listening on the bridge's port", e))
        })
        .and_then(|_| {
            let me = sc(nr::GETPID, 0, 0, 0, 0, 0).unwrap_or(0);
            // Close-on-exec by the kernel's rule for pidfds.
            sc(nr::PIDFD_OPEN, me, 0, 0, 0, 0)
                .map_err(|e| fail(stage, "pidfd_open (the bridge needs Linux 5.3)", e))
        });
    let pidfd = match r {
        Ok(fd) => fd,
        Err(f) => {
            close(listener);
            return Err(f);
        }
    };
    let first = match fork() {
        Ok(pid) => pid,
        Err(e) => {
            close(listener);
            close(pidfd);
            return Err(fail(stage, "fork", e));
        }
    };
    if first == 0 {
        // The intermediate process: fork the bridge and leave, so that the
        // bridge is the sandbox's PID 1's to reap (its exit code says
        // whether the bridge's filter is on).
        if let Some(prog) = filter {
            if install_without_notify(prog).is_err() {
                sys::exit(1);
            }
        }
        match fork() {
            Ok(0) => {}
            Ok(_) => sys::exit(0),
            Err(_) => sys::exit(1),
        }
        let _ = sc(nr::SETSID, 0, 0, 0, 0, 0);
        let (a, b) = if listener < pidfd {
            (listener, pidfd)
        } else {
            (pidfd, listener)
        };
        close_all_but([a, b]);
        let code = match serve(listener as i32, path, pidfd as i32) {
            Ok(()) => 0,
            Err(_) => 1,
        };
        sys::exit(code);
    }
    close(listener);
    close(pidfd);
    let mut status = 0i32;
    loop {
        match sc(
            nr::WAIT4,
            first,
            &mut status as *mut i32 as usize,
            0,
            0,
            0,
        ) {
            Err(sys::EINTR) => continue,
            Ok(_) => break,
            Err(e) => return Err(fail(stage, "wait4", e)),
        }
    }
    // exited with 0: the bridge was forked.
    if status != 0 {
        return Err(fail(stage, "starting the bridge process", sys::EAGAIN));
    }
    Ok(())
}
