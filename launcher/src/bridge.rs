//! The sandbox's end of the filtering proxy: a TCP listener on
//! `127.0.0.1:PORT` inside the sandbox's network namespace. Each connection
//! it accepts is handed to the proxy whole: the bridge connects to the
//! proxy's unix socket (bound into the sandbox), sends the accepted socket
//! over it (`SCM_RIGHTS`, with the one byte [`HANDOFF`]) and closes its
//! copies. The bytes then flow between the sandbox's client and the proxy
//! directly; the bridge holds no connection and copies nothing. One
//! thread, no allocation per connection: it can run in the sandbox's PID 1.
//!
//! The proxy checks what it receives (a TCP stream socket) and treats it as
//! it treats any client: the descriptor carries nothing the sandbox could
//! not reach itself.

use std::io::{self, ErrorKind, IoSlice};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

/// The byte sent with a handed-off socket.
pub const HANDOFF: u8 = 0;

/// Hand `client` to the proxy at `target`.
pub fn hand_off(client: &impl AsRawFd, target: &Path) -> io::Result<()> {
    let unix = UnixStream::connect(target)?;
    let fds = [client.as_raw_fd()];
    let iov = [IoSlice::new(&[HANDOFF])];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    sendmsg::<()>(unix.as_raw_fd(), &iov, &cmsg, MsgFlags::MSG_NOSIGNAL, None)
        .map_err(io::Error::from)?;
    Ok(())
}

/// Serve until `stop` (when given) becomes readable or the listener fails.
/// A connection that cannot be handed off (the proxy is gone) is closed.
pub fn serve(listener: TcpListener, target: &Path, stop: Option<RawFd>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut fds = [
        libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[1].revents != 0 {
            return Ok(());
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(io::Error::other("the bridge's listener failed"));
        }
        loop {
            match listener.accept() {
                Ok((tcp, _)) => {
                    let _ = hand_off(&tcp, target);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Out of descriptors, a connection reset before accept:
                // the listener itself is fine.
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::net::UnixListener;

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
