//! The sandbox's end of the filtering proxy: a TCP listener on
//! `127.0.0.1:PORT` inside the sandbox's network namespace, each of whose
//! connections is forwarded to the proxy's unix socket (bound into the
//! sandbox). One thread, one `poll` loop, two fixed buffers per connection:
//! it can run in the sandbox's PID 1 without threads and without an
//! allocation per read.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

const BUF: usize = 64 * 1024;

/// One direction: bytes read from one side, not yet written to the other.
struct Pipe {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The reading side reached EOF.
    eof: bool,
    /// EOF passed on (`shutdown(SHUT_WR)` of the writing side).
    closed: bool,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe {
            buf: vec![0u8; BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            closed: false,
        }
    }

    fn pending(&self) -> bool {
        self.start < self.end
    }

    fn wants_read(&self) -> bool {
        !self.eof && !self.pending()
    }

    /// Read once from `r`. `Ok(false)`: nothing to do now.
    fn fill(&mut self, r: &mut impl Read) -> io::Result<()> {
        match r.read(&mut self.buf) {
            Ok(0) => {
                self.eof = true;
                Ok(())
            }
            Ok(n) => {
                self.start = 0;
                self.end = n;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn flush(&mut self, w: &mut impl Write) -> io::Result<()> {
        while self.pending() {
            match w.write(&self.buf[self.start..self.end]) {
                Ok(n) => self.start += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.closed
    }
}

struct Conn {
    tcp: TcpStream,
    unix: UnixStream,
    /// tcp -> unix
    up: Pipe,
    /// unix -> tcp
    down: Pipe,
}

impl Conn {
    /// Move what can be moved; `Err` ends the connection. A direction
    /// that fails ends alone: a proxy that answered and closed before
    /// reading everything still has its answer delivered.
    fn step(&mut self, tcp_ev: i16, unix_ev: i16) -> io::Result<()> {
        if tcp_ev & libc::POLLNVAL != 0 || unix_ev & libc::POLLNVAL != 0 {
            return Err(io::Error::other("socket closed"));
        }
        let readable = libc::POLLIN | libc::POLLHUP | libc::POLLERR;
        if tcp_ev & readable != 0 && self.up.wants_read() && self.up.fill(&mut self.tcp).is_err() {
            self.up.eof = true;
        }
        if unix_ev & readable != 0
            && self.down.wants_read()
            && self.down.fill(&mut self.unix).is_err()
        {
            self.down.eof = true;
        }
        // POLLHUP with the reading side exhausted: that socket is shut both
        // ways, nothing more can be written to it (and poll would report
        // the hang-up again and again).
        if tcp_ev & libc::POLLHUP != 0 && self.up.eof {
            return Err(io::Error::other("client hung up"));
        }
        let proxy_gone = unix_ev & libc::POLLHUP != 0 && self.down.eof;
        if proxy_gone || self.up.flush(&mut self.unix).is_err() {
            // The proxy stopped reading: drop what the client sends.
            self.up.start = self.up.end;
            self.up.eof = true;
            let _ = self.tcp.shutdown(Shutdown::Read);
        }
        // The client is gone: nothing left to do.
        self.down.flush(&mut self.tcp)?;
        if self.up.eof && !self.up.pending() && !self.up.closed {
            let _ = self.unix.shutdown(Shutdown::Write);
            self.up.closed = true;
        }
        if self.down.eof && !self.down.pending() && !self.down.closed {
            let _ = self.tcp.shutdown(Shutdown::Write);
            self.down.closed = true;
        }
        Ok(())
    }

    fn events(p: &Pipe, q: &Pipe) -> i16 {
        // `p` reads from this socket, `q` writes to it.
        let mut ev = 0;
        if p.wants_read() {
            ev |= libc::POLLIN;
        }
        if q.pending() {
            ev |= libc::POLLOUT;
        }
        ev
    }
}

fn pollfd(fd: RawFd, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Serve until `stop` (when given) becomes readable or the listener fails.
/// Each accepted connection is connected to `target`; one that cannot be
/// is closed at once. `SIGPIPE` is ignored from here on (a peer that went
/// away is an error on that connection, not the end of the process).
pub fn serve(listener: TcpListener, target: &Path, stop: Option<RawFd>) -> io::Result<()> {
    // SAFETY: setting a signal's disposition to SIG_IGN.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    listener.set_nonblocking(true)?;
    let mut conns: Vec<Conn> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    loop {
        fds.clear();
        fds.push(pollfd(listener.as_raw_fd(), libc::POLLIN));
        fds.push(pollfd(stop.unwrap_or(-1), libc::POLLIN));
        for c in &conns {
            fds.push(pollfd(c.tcp.as_raw_fd(), Conn::events(&c.up, &c.down)));
            fds.push(pollfd(c.unix.as_raw_fd(), Conn::events(&c.down, &c.up)));
        }
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
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
        let mut keep = Vec::with_capacity(conns.len());
        for (i, mut c) in conns.drain(..).enumerate() {
            let (t, u) = (fds[2 + 2 * i].revents, fds[3 + 2 * i].revents);
            if t == 0 && u == 0 {
                keep.push(c);
                continue;
            }
            if c.step(t, u).is_ok() && !(c.up.done() && c.down.done()) {
                keep.push(c);
            }
        }
        conns = keep;
        if fds[0].revents & libc::POLLIN != 0 {
            loop {
                match listener.accept() {
                    Ok((tcp, _)) => {
                        let Ok(unix) = UnixStream::connect(target) else {
                            continue;
                        };
                        if tcp.set_nonblocking(true).is_err() || unix.set_nonblocking(true).is_err()
                        {
                            continue;
                        }
                        let _ = tcp.set_nodelay(true);
                        conns.push(Conn {
                            tcp,
                            unix,
                            up: Pipe::new(),
                            down: Pipe::new(),
                        });
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn forwards_both_ways_with_half_close() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s");
        let ul = UnixListener::bind(&sock).unwrap();
        let tl = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tl.local_addr().unwrap().port();
        let (r, w) = nix::unistd::pipe().unwrap();
        let s2 = sock.clone();
        let rfd = r.as_raw_fd();
        let t = std::thread::spawn(move || serve(tl, &s2, Some(rfd)));
        let echo = std::thread::spawn(move || {
            let (mut s, _) = ul.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got.reverse();
            s.write_all(&got).unwrap();
        });
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        c.write_all(&data).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        let mut want = data.clone();
        want.reverse();
        assert_eq!(back, want);
        echo.join().unwrap();
        drop(w);
        t.join().unwrap().unwrap();
        drop(r);
    }
}
