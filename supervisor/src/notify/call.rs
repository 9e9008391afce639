//! What the server does with each stopped call.
//!
//! The rule that keeps it race-free: everything the call uses is taken
//! once and then only the server's copy is used. The socket is the
//! caller's open file (`pidfd_getfd`), not its fd number (another thread
//! may `dup2` over it); the address, the data and the control messages are
//! read once from the caller's memory (another thread may rewrite them);
//! the call is then made here, on that socket, with those copies, and its
//! result is the answer. Nothing is ever let through with
//! `SECCOMP_USER_NOTIF_FLAG_CONTINUE`, which would make the kernel read the
//! caller's memory again.
//!
//! A unix socket address (`connect`, and `sendto`/`sendmsg` on a datagram
//! socket) is resolved in the sandbox's view (`/proc/TID/root`, relative
//! paths from `/proc/TID/cwd`, `openat2` with `RESOLVE_IN_ROOT` so absolute
//! symlinks stay inside), opened `O_PATH` and checked: a socket the sandbox
//! bound ([`super::own`]) is reached through `/proc/self/fd/N` of that very
//! file (no second lookup a rename could redirect, no 108-byte limit);
//! anything else fails with `ECONNREFUSED`, what a masked socket gives.
//! Abstract addresses live in the sandbox's own network namespace; with the
//! host network only the sandbox's own abstract names are reached.
//!
//! The server's threads have no capabilities (see
//! [`super::sys::drop_thread_capabilities`]): a call made here has no more
//! privilege than the caller's, which has none either. Landlock is not
//! applied here: a Landlock network rule of the sandbox would have to be
//! checked in this module too (the plan has none today).

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use super::own::Own;
use super::sys::{self, Reply};

/// Bytes of data one call copies at most; a stream socket then sends
/// part of it (a short count), a datagram that large fails as the kernel's
/// own limit would.
pub(super) const DATA_MAX: usize = 4 << 20;
/// Control message bytes at most (the kernel's `optmem_max` is smaller).
const CONTROL_MAX: usize = 64 << 10;
/// `UIO_MAXIOV`.
const IOV_MAX: u64 = 1024;
const SOCKADDR_MAX: i64 = 128;

/// The caller of one notification.
pub(super) struct Target {
    pub id: u64,
    pub tid: i32,
    pub pidfd: OwnedFd,
}

/// The caller's socket.
pub(super) struct Sock {
    pub fd: OwnedFd,
    pub domain: i32,
    pub kind: i32,
    pub nonblock: bool,
}

impl Sock {
    fn stream(&self) -> bool {
        self.kind == libc::SOCK_STREAM
    }
}

/// The address a call goes to, as the server passes it.
pub(super) enum Addr {
    /// None (`sendmsg` without one).
    None,
    /// The server's copy, passed as read.
    Raw(Vec<u8>),
    /// A unix socket file the sandbox bound, open `O_PATH`.
    File(OwnedFd),
}

impl Addr {
    /// The sockaddr bytes to pass.
    pub(super) fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Addr::None => None,
            Addr::Raw(v) => Some(v.clone()),
            Addr::File(f) => {
                let mut v = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
                v.extend_from_slice(format!("/proc/self/fd/{}", f.as_raw_fd()).as_bytes());
                v.push(0);
                Some(v)
            }
        }
    }
}

/// A message to send, every part copied.
pub(super) struct Msg {
    pub data: Vec<u8>,
    pub addr: Addr,
    pub control: Vec<u8>,
    /// The fds `control` passes, ours: held open until sent.
    #[allow(dead_code)]
    pub fds: Vec<OwnedFd>,
}

/// What the server knows across calls.
pub(super) struct State {
    pub own: Own,
    /// The sandbox's root directory (the same for every process of it:
    /// `chroot`, `pivot_root`, `setns` and new mount namespaces are
    /// refused by seccomp).
    root: Option<OwnedFd>,
    pub refused: u64,
    pub errors: Vec<String>,
}

impl State {
    pub(super) fn new(own: Own) -> State {
        State {
            own,
            root: None,
            refused: 0,
            errors: Vec::new(),
        }
    }

    /// An internal failure (reported once per kind in the run's notes).
    pub(super) fn error(&mut self, what: String) {
        if self.errors.len() < 8 && !self.errors.contains(&what) {
            self.errors.push(what);
        }
    }

    fn root(&mut self, t: &Target, listener: &OwnedFd) -> Result<&OwnedFd, i32> {
        if self.root.is_none() {
            let r = sys::open_dir(&format!("/proc/{}/root", t.tid))?;
            if !sys::id_valid(listener, t.id) {
                return Err(libc::ESRCH);
            }
            self.root = Some(r);
        }
        Ok(self.root.as_ref().unwrap())
    }

    /// The caller's socket behind its fd `fd`.
    pub(super) fn socket(&mut self, t: &Target, fd: u64) -> Result<Sock, i32> {
        let fd = match sys::pidfd_getfd(&t.pidfd, fd as i32) {
            Ok(f) => f,
            Err(e @ (libc::EPERM | libc::EACCES)) => {
                self.error(format!(
                    "pidfd_getfd was refused ({}): the sandbox's connects fail",
                    std::io::Error::from_raw_os_error(e)
                ));
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let domain = sys::sockopt_int(&fd, libc::SO_DOMAIN)?;
        let kind = sys::sockopt_int(&fd, libc::SO_TYPE)?;
        let nonblock = sys::nonblocking(&fd);
        Ok(Sock {
            fd,
            domain,
            kind,
            nonblock,
        })
    }

    /// The address of a call on `sock`, checked; `raw` is the copy read.
    pub(super) fn address(
        &mut self,
        t: &Target,
        listener: &OwnedFd,
        sock: &Sock,
        raw: Vec<u8>,
        connecting: bool,
    ) -> Result<Addr, i32> {
        // Only unix sockets resolve a path. A stream socket refuses an
        // address on send, a seqpacket socket ignores it (the kernel never
        // looks it up); the family field of the copy is what the socket's
        // protocol reads.
        if sock.domain != libc::AF_UNIX
            || (!connecting && sock.kind != libc::SOCK_DGRAM)
            || raw.len() <= 2
            || u16::from_ne_bytes([raw[0], raw[1]]) != libc::AF_UNIX as u16
        {
            return Ok(Addr::Raw(raw));
        }
        let path = &raw[2..];
        if path[0] == 0 {
            if !self.own.shared_net() {
                return Ok(Addr::Raw(raw));
            }
            self.learn_pidns(t, listener)?;
            return match self.own.abstract_is_own(path) {
                Ok(true) => Ok(Addr::Raw(raw)),
                Ok(false) => self.refuse(),
                Err(e) => {
                    self.error(format!(
                        "sock_diag failed ({})",
                        std::io::Error::from_raw_os_error(e)
                    ));
                    self.refuse()
                }
            };
        }
        let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
        let file = self.resolve(t, listener, &path[..end])?;
        let st = sys::fstat(&file)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(libc::ECONNREFUSED);
        }
        if self.own.shared_net() {
            self.learn_pidns(t, listener)?;
        }
        match self.own.path_is_own(&file, &st) {
            Ok(true) => Ok(Addr::File(file)),
            Ok(false) => self.refuse(),
            Err(e) => {
                self.error(format!(
                    "sock_diag failed ({})",
                    std::io::Error::from_raw_os_error(e)
                ));
                self.refuse()
            }
        }
    }

    fn refuse<T>(&mut self) -> Result<T, i32> {
        self.refused += 1;
        Err(libc::ECONNREFUSED)
    }

    fn learn_pidns(&mut self, t: &Target, listener: &OwnedFd) -> Result<(), i32> {
        use std::os::unix::fs::MetadataExt;
        if self.own.pidns.is_none() {
            let ino = std::fs::metadata(format!("/proc/{}/ns/pid", t.tid))
                .map_err(|e| e.raw_os_error().unwrap_or(libc::ESRCH))?
                .ino();
            if !sys::id_valid(listener, t.id) {
                return Err(libc::ESRCH);
            }
            self.own.pidns = Some(ino);
        }
        Ok(())
    }

    /// Open `path` (`O_PATH`, the final symlink followed) as the caller
    /// sees it.
    fn resolve(&mut self, t: &Target, listener: &OwnedFd, path: &[u8]) -> Result<OwnedFd, i32> {
        let in_root = sys::RESOLVE_IN_ROOT | sys::RESOLVE_NO_MAGICLINKS;
        if path.first() == Some(&b'/') {
            let root = self.root(t, listener)?;
            return sys::open_path(root, path, in_root);
        }
        // The caller's if its call is still pending once all is read.
        let cwd = sys::open_dir(&format!("/proc/{}/cwd", t.tid))?;
        match sys::open_path(
            &cwd,
            path,
            sys::RESOLVE_BENEATH | sys::RESOLVE_NO_MAGICLINKS,
        ) {
            // `..` above the cwd or an absolute symlink: resolve the whole
            // path from the root, with the cwd's path as the caller sees it
            // (checked to be that same directory).
            Err(libc::EXDEV) => {
                let link = std::fs::read_link(format!("/proc/{}/cwd", t.tid))
                    .map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT))?;
                let link = link.as_os_str().as_bytes().to_vec();
                if link.first() != Some(&b'/') {
                    return Err(libc::ENOENT);
                }
                let root = self.root(t, listener)?;
                let same = sys::open_path(root, &link, sys::RESOLVE_IN_ROOT)
                    .and_then(|d| sys::fstat(&d))
                    .ok()
                    .zip(sys::fstat(&cwd).ok())
                    .is_some_and(|(a, b)| (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino));
                if !same {
                    return Err(libc::ENOENT);
                }
                let mut full = link;
                full.push(b'/');
                full.extend_from_slice(path);
                sys::open_path(root, &full, in_root)
            }
            r => r,
        }
    }

    /// A `struct msghdr` at `at` of the caller, every part copied (`data`
    /// at most `budget` bytes).
    pub(super) fn message(
        &mut self,
        t: &Target,
        listener: &OwnedFd,
        sock: &Sock,
        at: u64,
    ) -> Result<Msg, i32> {
        let h = sys::read_mem(t.tid, at, 56)?;
        let word = |o: usize| u64::from_ne_bytes(h[o..o + 8].try_into().unwrap());
        let (name, namelen) = (word(0), u32::from_ne_bytes(h[8..12].try_into().unwrap()));
        let (iov, iovlen) = (word(16), word(24));
        let (control, controllen) = (word(32), word(40));
        let namelen = namelen as i32 as i64;
        let addr = if name == 0 || namelen == 0 {
            Addr::None
        } else if namelen < 0 {
            return Err(libc::EINVAL);
        } else {
            let raw = sys::read_mem(t.tid, name, namelen.min(SOCKADDR_MAX) as usize)?;
            self.address(t, listener, sock, raw, false)?
        };
        if iovlen > IOV_MAX {
            return Err(libc::EMSGSIZE);
        }
        let vec = sys::read_mem(t.tid, iov, iovlen as usize * 16)?;
        let mut data = Vec::new();
        for v in vec.chunks_exact(16) {
            let base = u64::from_ne_bytes(v[0..8].try_into().unwrap());
            let len = u64::from_ne_bytes(v[8..16].try_into().unwrap());
            if len > isize::MAX as u64 {
                return Err(libc::EINVAL);
            }
            let take = (len as usize).min(DATA_MAX - data.len());
            data.extend_from_slice(&sys::read_mem(t.tid, base, take)?);
            if data.len() == DATA_MAX {
                break;
            }
        }
        let (control, fds) = if control == 0 || controllen == 0 {
            (Vec::new(), Vec::new())
        } else if controllen as usize > CONTROL_MAX {
            return Err(libc::ENOBUFS);
        } else {
            let c = sys::read_mem(t.tid, control, controllen as usize)?;
            self.control(t, c)?
        };
        Ok(Msg {
            data,
            addr,
            control,
            fds,
        })
    }

    /// Rewrite the caller's control messages for a send from here: the
    /// fds of `SCM_RIGHTS` become ours (the same open files), the
    /// credentials of `SCM_CREDENTIALS` this process's (the kernel checks
    /// them against the sender).
    fn control(&mut self, t: &Target, mut c: Vec<u8>) -> Result<(Vec<u8>, Vec<OwnedFd>), i32> {
        const HDR: usize = 16;
        let mut fds = Vec::new();
        let mut at = 0;
        while at + HDR <= c.len() {
            let len = u64::from_ne_bytes(c[at..at + 8].try_into().unwrap()) as usize;
            let level = i32::from_ne_bytes(c[at + 8..at + 12].try_into().unwrap());
            let kind = i32::from_ne_bytes(c[at + 12..at + 16].try_into().unwrap());
            if len < HDR || at + len > c.len() {
                return Err(libc::EINVAL);
            }
            if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
                for i in (at + HDR..at + len).step_by(4) {
                    if i + 4 > at + len {
                        break;
                    }
                    let theirs = i32::from_ne_bytes(c[i..i + 4].try_into().unwrap());
                    let ours = sys::pidfd_getfd(&t.pidfd, theirs)?;
                    c[i..i + 4].copy_from_slice(&ours.as_raw_fd().to_ne_bytes());
                    fds.push(ours);
                }
            } else if level == libc::SOL_SOCKET && kind == libc::SCM_CREDENTIALS && len >= HDR + 12
            {
                // SAFETY: plain getters.
                let (pid, uid, gid) = unsafe { (libc::getpid(), libc::geteuid(), libc::getegid()) };
                c[at + HDR..at + HDR + 4].copy_from_slice(&pid.to_ne_bytes());
                c[at + HDR + 4..at + HDR + 8].copy_from_slice(&uid.to_ne_bytes());
                c[at + HDR + 8..at + HDR + 12].copy_from_slice(&gid.to_ne_bytes());
            }
            at += (len + 7) & !7;
        }
        Ok((c, fds))
    }
}

/// `connect(sock, addr)` here.
pub(super) fn connect(sock: &OwnedFd, addr: &Addr) -> Reply {
    let a = addr.bytes().unwrap_or_default();
    loop {
        // SAFETY: a buffer of the length passed.
        let r = unsafe { libc::connect(sock.as_raw_fd(), a.as_ptr().cast(), a.len() as u32) };
        if r == 0 {
            return Reply::Val(0);
        }
        match sys::errno() {
            // Interrupted here, not in the caller: the kernel goes on with
            // the connect, and asking again says how it went.
            libc::EINTR => continue,
            e => return Reply::Err(e),
        }
    }
}

/// `sendmsg(sock, msg, flags)` here, from `skip` bytes of the data on.
pub(super) fn send(sock: &OwnedFd, m: &Msg, skip: usize, flags: i32) -> Result<usize, i32> {
    let name = m.addr.bytes();
    let data = &m.data[skip.min(m.data.len())..];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: zeroed msghdr, filled with our buffers below.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(n) = &name {
        h.msg_name = n.as_ptr() as *mut libc::c_void;
        h.msg_namelen = n.len() as u32;
    }
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    if skip == 0 && !m.control.is_empty() {
        h.msg_control = m.control.as_ptr() as *mut libc::c_void;
        h.msg_controllen = m.control.len() as _;
    }
    loop {
        // SAFETY: every pointer refers to our buffers, alive for the call.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &h, flags | libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(r as usize);
        }
        match sys::errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Send `m` as a blocking call would: until everything is sent (stream)
/// or once (datagram); `sent` bytes went already.
pub(super) fn send_blocking(sock: &Sock, m: &Msg, mut sent: usize, flags: i32) -> Reply {
    let flags = flags & !libc::MSG_DONTWAIT;
    loop {
        match send(&sock.fd, m, sent, flags) {
            Ok(n) => {
                sent += n;
                if !sock.stream() || sent >= m.data.len() || n == 0 {
                    return Reply::Val(sent as i64);
                }
            }
            Err(_) if sent > 0 => return Reply::Val(sent as i64),
            Err(e) => return Reply::Err(e),
        }
    }
}

/// What a first, non-blocking attempt of a send left to do.
pub(super) enum Sent {
    Done(Reply),
    /// Blocking semantics: the rest must wait (`sent` bytes went).
    Block(usize),
}

/// Try `m` without blocking; `blocking` is whether the caller's call would
/// block (a blocking fd, no `MSG_DONTWAIT`).
pub(super) fn send_now(sock: &Sock, m: &Msg, flags: i32, blocking: bool) -> Sent {
    match send(&sock.fd, m, 0, flags | libc::MSG_DONTWAIT) {
        Ok(n) if blocking && sock.stream() && n < m.data.len() => Sent::Block(n),
        Ok(n) => Sent::Done(Reply::Val(n as i64)),
        Err(libc::EAGAIN) if blocking => Sent::Block(0),
        Err(e) => Sent::Done(Reply::Err(e)),
    }
}

/// A broken stream raises SIGPIPE in the sender unless it asked not to:
/// the caller gets it, as from its own call.
pub(super) fn sigpipe(t: &Target, reply: Reply, flags: i32) {
    if reply == Reply::Err(libc::EPIPE) && flags & libc::MSG_NOSIGNAL == 0 {
        sys::pidfd_signal(&t.pidfd, libc::SIGPIPE);
    }
}
