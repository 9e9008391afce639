//! Moving bytes both ways between the sandbox's connection and the
//! destination, counting them, with half-close passed on (one side's EOF
//! becomes a `shutdown(SHUT_WR)` of the other). The bytes go socket ->
//! pipe -> socket by `splice`: no copy through this process's memory, and
//! no buffer held per connection.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};

use std::cell::RefCell;
use tokio::io::{Interest, Ready};
use tokio::net::{TcpStream, UnixStream};

use super::splice::{PipePool, SplicePipe};

thread_local! {
    /// The proxy's runtime is one thread: its pipes are shared by every
    /// connection, taken while bytes are in flight.
    static POOL: RefCell<PipePool> = RefCell::new(PipePool::default());
}

fn take_pipe() -> io::Result<SplicePipe> {
    POOL.with(|p| p.borrow_mut().get())
}

fn give_pipe(pipe: SplicePipe) {
    POOL.with(|p| p.borrow_mut().put(pipe))
}

/// Bytes moved so far (read by the audit record when the connection ends,
/// however it ends).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub up: AtomicU64,
    pub down: AtomicU64,
}

/// What the relay needs of a tokio socket.
pub(crate) trait Socket: AsRawFd {
    fn ready(&self, interest: Interest) -> impl Future<Output = io::Result<Ready>>;
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
}

macro_rules! socket {
    ($t:ty) => {
        impl Socket for $t {
            fn ready(&self, interest: Interest) -> impl Future<Output = io::Result<Ready>> {
                <$t>::ready(self, interest)
            }
            fn try_io<R>(
                &self,
                interest: Interest,
                f: impl FnOnce() -> io::Result<R>,
            ) -> io::Result<R> {
                <$t>::try_io(self, interest, f)
            }
        }
    };
}
socket!(TcpStream);
socket!(UnixStream);

fn shutdown_write(s: &impl AsRawFd) {
    // SAFETY: shutdown on a descriptor the caller holds open.
    unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_WR) };
}

async fn pump<S: Socket, D: Socket>(src: &S, dst: &D, count: &AtomicU64) -> io::Result<()> {
    loop {
        src.ready(Interest::READABLE).await?;
        let mut pipe = take_pipe()?;
        let n = match src.try_io(Interest::READABLE, || pipe.fill(src.as_raw_fd())) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                give_pipe(pipe);
                continue;
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            give_pipe(pipe);
            // Half-close: the other side may still answer.
            shutdown_write(dst);
            return Ok(());
        }
        // A pipe with bytes in it is dropped (not given back) if this
        // future is.
        while pipe.pending() > 0 {
            dst.ready(Interest::WRITABLE).await?;
            match dst.try_io(Interest::WRITABLE, || pipe.drain(dst.as_raw_fd())) {
                Ok(k) => {
                    count.fetch_add(k as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        give_pipe(pipe);
    }
}

/// Relay until both directions have ended (or one failed).
pub(crate) async fn relay(
    client: &impl Socket,
    upstream: &TcpStream,
    counters: &Counters,
) -> io::Result<()> {
    tokio::try_join!(
        pump(client, upstream, &counters.up),
        pump(upstream, client, &counters.down)
    )
    .map(|_| ())
}
