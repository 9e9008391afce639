//! Which unix sockets the sandbox bound itself.
//!
//! The kernel's `sock_diag` interface lists the unix sockets of one network
//! namespace with the filesystem inode each is bound to (`UNIX_DIAG_VFS`).
//! The netlink socket the server asks through was created by the launcher
//! inside the sandbox's network namespace, so its answer holds exactly the
//! sockets bound in there: the sandbox's own. (`/proc/net/unix` shows the
//! socket's own inode, not the bound file's, so it cannot answer this.)
//!
//! With the host network (`--net`) that namespace is the host's: a socket
//! listed there counts as the sandbox's only when a process of the
//! sandbox's PID namespace holds it open (a host socket cannot get there:
//! passing it would need a connection the server refuses).
//!
//! A bound socket file keeps its socket for life (`bind` makes a new inode;
//! none is ever bound again), so an inode found once is remembered, pinned
//! by an open fd so that its number cannot be reused by another file.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};

use super::sys::errno;

/// One bound socket of the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bound {
    /// The socket's own inode (`socket:[N]` in `/proc/PID/fd`).
    pub sock_ino: u32,
    pub kind: u8,
    pub state: u8,
    /// The bound file: the kernel's `s_dev` and the inode (low 32 bits).
    pub vfs: Option<(u32, u32)>,
    /// The address as bound (abstract names start with NUL).
    pub name: Option<Vec<u8>>,
}

impl Bound {
    /// The socket `bind` made, not a connection `accept` returned (those
    /// show their listener's name and inode too).
    fn is_bound_one(&self) -> bool {
        const TCP_LISTEN: u8 = 10;
        self.kind == libc::SOCK_DGRAM as u8 || self.state == TCP_LISTEN
    }
}

/// The kernel's `dev_t` of a superblock (`MAJOR << 20 | MINOR`), from
/// `st_dev`.
pub(super) fn kernel_dev(st_dev: u64) -> u32 {
    let (major, minor) = (libc::major(st_dev), libc::minor(st_dev));
    (major << 20) | (minor & 0xf_ffff)
}

/// Every bound unix socket the netlink socket `diag`'s namespace has.
pub(super) fn dump(diag: &OwnedFd) -> Result<Vec<Bound>, i32> {
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const UDIAG_SHOW_NAME: u32 = 1;
    const UDIAG_SHOW_VFS: u32 = 2;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    // struct nlmsghdr + struct unix_diag_req.
    let mut req = [0u8; 40];
    req[0..4].copy_from_slice(&40u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes()); // seq
    req[16] = libc::AF_UNIX as u8;
    req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes()); // every state
    req[28..32].copy_from_slice(&(UDIAG_SHOW_NAME | UDIAG_SHOW_VFS).to_ne_bytes());
    // SAFETY: zeroed sockaddr_nl: the kernel.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: a valid buffer and address.
    let r = unsafe {
        libc::sendto(
            diag.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if r < 0 {
        return Err(errno());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receiving into our buffer.
        let n = unsafe { libc::recv(diag.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            match errno() {
                libc::EINTR => continue,
                e => return Err(e),
            }
        }
        let mut msg = &buf[..n as usize];
        if msg.is_empty() {
            return Err(libc::EIO);
        }
        while msg.len() >= 16 {
            let len = u32::from_ne_bytes(msg[0..4].try_into().unwrap()) as usize;
            let ty = u16::from_ne_bytes(msg[4..6].try_into().unwrap());
            if len < 16 || len > msg.len() {
                return Err(libc::EIO);
            }
            match ty {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let e = msg
                        .get(16..20)
                        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
                        .unwrap_or(-libc::EIO);
                    return Err(if e < 0 { -e } else { libc::EIO });
                }
                SOCK_DIAG_BY_FAMILY => {
                    if let Some(b) = parse_one(&msg[16..len]) {
                        out.push(b);
                    }
                }
                _ => {}
            }
            let step = (len + 3) & !3;
            msg = &msg[step.min(msg.len())..];
        }
    }
}

/// One `struct unix_diag_msg` and its attributes.
fn parse_one(m: &[u8]) -> Option<Bound> {
    const UNIX_DIAG_NAME: u16 = 0;
    const UNIX_DIAG_VFS: u16 = 1;
    if m.len() < 16 {
        return None;
    }
    let mut b = Bound {
        kind: m[1],
        state: m[2],
        sock_ino: u32::from_ne_bytes(m[4..8].try_into().ok()?),
        vfs: None,
        name: None,
    };
    let mut a = &m[16..];
    while a.len() >= 4 {
        let len = u16::from_ne_bytes([a[0], a[1]]) as usize;
        let ty = u16::from_ne_bytes([a[2], a[3]]);
        if len < 4 || len > a.len() {
            break;
        }
        let data = &a[4..len];
        match ty {
            UNIX_DIAG_VFS if data.len() >= 8 => {
                let ino = u32::from_ne_bytes(data[0..4].try_into().ok()?);
                let dev = u32::from_ne_bytes(data[4..8].try_into().ok()?);
                b.vfs = Some((dev, ino));
            }
            UNIX_DIAG_NAME => b.name = Some(data.to_vec()),
            _ => {}
        }
        a = &a[((len + 3) & !3).min(a.len())..];
    }
    (b.vfs.is_some() || b.name.is_some()).then_some(b)
}

/// Whether a process of the PID namespace `pidns` (its inode) holds the
/// socket with inode `sock_ino` open: a scan of `/proc`.
fn held_in(pidns: u64, sock_ino: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let want = format!("socket:[{sock_ino}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    for p in procs.flatten() {
        let name = p.file_name();
        if !name.to_string_lossy().bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let dir = p.path();
        match std::fs::metadata(dir.join("ns/pid")) {
            Ok(m) if m.ino() == pidns => {}
            _ => continue,
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == want.as_str()) {
                return true;
            }
        }
    }
    false
}

/// Whether a process of the session `sid` holds the socket with inode
/// `sock_ino` open: the landlock backend's sandbox (no PID namespace) is
/// its leader's session, which no host process can join (and whose number
/// the supervisor keeps from reuse until the run ends: the leader is its
/// child). A command that leaves the session for its own loses its
/// sockets' connections (fails closed).
fn held_in_session(sid: i32, sock_ino: u32) -> bool {
    let want = format!("socket:[{sock_ino}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    for p in procs.flatten() {
        let name = p.file_name();
        if !name.to_string_lossy().bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let dir = p.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp session ...: after the last `)`.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if rest
            .split_whitespace()
            .nth(3)
            .and_then(|s| s.parse::<i32>().ok())
            != Some(sid)
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == want.as_str()) {
                return true;
            }
        }
    }
    false
}

/// The sandbox's own sockets: the check, and what it found before.
pub(super) struct Own {
    diag: OwnedFd,
    /// The network namespace is the host's (`--net`).
    shared_net: bool,
    /// The sandbox's PID namespace (its inode), for `shared_net`.
    pub pidns: Option<u64>,
    /// The sandbox's session, when it has no PID namespace of its own
    /// (landlock): its processes are that session's.
    pub session: Option<i32>,
    /// Own socket files found before, pinned.
    known: HashMap<(u64, u64), OwnedFd>,
    /// Host sockets the plan lets the sandbox reach (the filtering proxy's),
    /// pinned when the run started.
    allowed: HashMap<(u64, u64), OwnedFd>,
}

/// At most this many remembered inodes (then the memory starts over).
const KNOWN_MAX: usize = 4096;

impl Own {
    pub(super) fn new(diag: OwnedFd, shared_net: bool, allowed: Vec<OwnedFd>) -> Own {
        let allowed = allowed
            .into_iter()
            .filter_map(|f| {
                let st = super::sys::fstat(&f).ok()?;
                Some(((st.st_dev, st.st_ino), f))
            })
            .collect();
        Own {
            diag,
            shared_net,
            pidns: None,
            session: None,
            known: HashMap::new(),
            allowed,
        }
    }

    fn held(&self, b: &Bound) -> bool {
        if !self.shared_net {
            return true;
        }
        if !b.is_bound_one() {
            return false;
        }
        match self.session {
            Some(sid) => held_in_session(sid, b.sock_ino),
            None => self.pidns.is_some_and(|ns| held_in(ns, b.sock_ino)),
        }
    }

    /// Whether the socket file open as `file` (`st` its status) was bound
    /// by the sandbox.
    pub(super) fn path_is_own(&mut self, file: &OwnedFd, st: &libc::stat) -> Result<bool, i32> {
        let key = (st.st_dev, st.st_ino);
        if self.known.contains_key(&key) || self.allowed.contains_key(&key) {
            return Ok(true);
        }
        let want = (kernel_dev(st.st_dev), st.st_ino as u32);
        let own = dump(&self.diag)?
            .iter()
            .any(|b| b.vfs == Some(want) && self.held(b));
        if own {
            if self.known.len() >= KNOWN_MAX {
                self.known.clear();
            }
            if let Ok(pin) = file.try_clone() {
                self.known.insert(key, pin);
            }
        }
        Ok(own)
    }

    /// Whether the abstract name `name` (with its leading NUL) is bound by
    /// the sandbox. Only asked with the host network: an own network
    /// namespace has only the sandbox's abstract names.
    pub(super) fn abstract_is_own(&mut self, name: &[u8]) -> Result<bool, i32> {
        Ok(dump(&self.diag)?
            .iter()
            .any(|b| b.name.as_deref() == Some(name) && self.held(b)))
    }

    pub(super) fn shared_net(&self) -> bool {
        self.shared_net
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag() -> OwnedFd {
        use std::os::fd::FromRawFd;
        // SAFETY: a new socket or -1.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        assert!(fd >= 0);
        // SAFETY: fresh.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    /// The dump finds a socket bound here by its file's inode, and its
    /// abstract name; a socket file from another namespace would not be
    /// listed (the tests in tests/attacks cover that end to end).
    #[test]
    fn dump_lists_a_bound_socket_by_file_inode() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        let name = format!("zot-own-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let _a = std::os::unix::net::UnixDatagram::bind_addr(&addr).unwrap();
        let all = dump(&diag()).unwrap();
        let want = (kernel_dev(m.dev()), m.ino() as u32);
        assert!(
            all.iter().any(|b| b.vfs == Some(want) && b.state == 10),
            "{all:?}"
        );
        let mut abs = vec![0u8];
        abs.extend_from_slice(name.as_bytes());
        assert!(all.iter().any(|b| b.name.as_deref() == Some(&abs[..])));
    }
}
