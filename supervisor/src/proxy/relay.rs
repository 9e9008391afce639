//! Moving bytes both ways between the sandbox's connection and the
//! destination, counting them, with half-close passed on (one side's EOF
//! becomes a `shutdown(SHUT_WR)` of the other).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A direction's buffer starts small (an idle connection holds little)
/// and doubles up to this while reads fill it.
const MAX_BUF: usize = 256 * 1024;
const MIN_BUF: usize = 8 * 1024;

/// Bytes moved so far (read by the audit record when the connection ends,
/// however it ends).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub up: AtomicU64,
    pub down: AtomicU64,
}

pub(crate) async fn pump<R, W>(mut r: R, mut w: W, count: &AtomicU64) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; MIN_BUF];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            // Half-close: the other side may still answer.
            let _ = w.shutdown().await;
            return Ok(());
        }
        w.write_all(&buf[..n]).await?;
        count.fetch_add(n as u64, Ordering::Relaxed);
        if n == buf.len() && buf.len() < MAX_BUF {
            buf = vec![0u8; buf.len() * 2];
        }
    }
}

/// Relay until both directions have ended (or one failed).
pub(crate) async fn relay<CR, CW, UR, UW>(
    client: (CR, CW),
    upstream: (UR, UW),
    counters: &Counters,
) -> io::Result<()>
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
{
    let (cr, cw) = client;
    let (ur, uw) = upstream;
    tokio::try_join!(pump(cr, uw, &counters.up), pump(ur, cw, &counters.down)).map(|_| ())
}
