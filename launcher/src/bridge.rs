//! The bridge to the filtering proxy for std callers (the proxy's tests
//! and benchmark run it in a thread): the tail's own
//! [`bridge`](crate::tail::bridge), which the launcher starts in the
//! sandbox before the command, on a [`TcpListener`].

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use crate::tail::bridge::HANDOFF;

fn path_bytes(target: &Path) -> io::Result<&[u8]> {
    let b = target.as_os_str().as_bytes();
    if b.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    Ok(b)
}

/// Hand `client` to the proxy at `target`.
pub fn hand_off(client: &impl AsRawFd, target: &Path) -> io::Result<()> {
    crate::tail::bridge::hand_off(client.as_raw_fd(), path_bytes(target)?)
        .map_err(io::Error::from_raw_os_error)
}

/// Serve until `stop` (when given) becomes readable or the listener fails.
/// A connection that cannot be handed off (the proxy is gone) is closed.
pub fn serve(listener: TcpListener, target: &Path, stop: Option<RawFd>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    crate::tail::bridge::serve(listener.as_raw_fd(), path_bytes(target)?, stop.unwrap_or(-1))
        .map_err(io::Error::from_raw_os_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::net::UnixListener;

    use nix::sys::socket::MsgFlags;

    #[test]
    fn hands_the_connection_over() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s");
        let ul = UnixListener::bind(&sock).unwrap();
        let tl = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tl.local_addr().unwrap().port();
        let (r, w) = nix::unistd::pipe().unwrap();
        let s2 = sock.clone();
        let rfd = r.as_raw_fd();
        let t = std::thread::spawn(move || serve(tl, &s2, Some(rfd)));
        let proxy = std::thread::spawn(move || {
            let (u, _) = ul.accept().unwrap();
            let mut buf = [0u8; 1];
            let mut space = nix::cmsg_space!([RawFd; 1]);
            let mut iov = [io::IoSliceMut::new(&mut buf)];
            let msg = nix::sys::socket::recvmsg::<()>(
                u.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::empty(),
            )
            .unwrap();
            let mut got = None;
            for c in msg.cmsgs().unwrap() {
                if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
                    got = Some(fds[0]);
                }
            }
            assert_eq!(buf, [HANDOFF]);
            // SAFETY: the descriptor just received, ours now.
            let fd = unsafe { OwnedFd::from_raw_fd(got.unwrap()) };
            let mut s = TcpStream::from(fd);
            let mut all = Vec::new();
            s.read_to_end(&mut all).unwrap();
            all.reverse();
            s.write_all(&all).unwrap();
        });
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.write_all(b"abc").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"cba");
        proxy.join().unwrap();
        drop(w);
        t.join().unwrap().unwrap();
        drop(r);
    }
}
