//! The command's output: pipes, and pumps that copy or collect a stream
//! (capped) without ever blocking the writer.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{OutStream, Output, OutputSink, SupervisorError};

pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd), SupervisorError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| SupervisorError::Io {
        what: "creating a pipe".into(),
        source: e.into(),
    })
}

/// Copy or collect one output stream, never blocking the writer.
pub(crate) fn pump(
    src: std::fs::File,
    output: Output,
    stream: OutStream,
    sink: Option<OutputSink>,
    truncated: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let (max, capture) = match output {
            Output::Capture { max_bytes } => (max_bytes, true),
            Output::Stream { max_bytes } => (max_bytes, false),
            Output::Forward { max_bytes } => (max_bytes, false),
            Output::Inherit => (usize::MAX, false),
        };
        let mut src = src;
        let mut kept = Vec::new();
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        // Once the sandbox has exited, a process that escaped the tree (no
        // PID namespace on the landlock backend, or danger-full-access) may
        // still hold the pipe: stop reading shortly after.
        let mut exit_seen: Option<Instant> = None;
        loop {
            if exited.load(Ordering::SeqCst) {
                let t = *exit_seen.get_or_insert_with(Instant::now);
                if t.elapsed() > Duration::from_millis(500) {
                    break;
                }
            }
            let mut pfd = libc::pollfd {
                fd: src.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, 100) } == 0 {
                continue;
            }
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let room = max.saturating_sub(total);
            let take = n.min(room);
            if take < n {
                truncated.store(true, Ordering::SeqCst);
            }
            if take > 0 {
                if let Some(OutputSink(f)) = &sink {
                    f(stream, &buf[..take]);
                }
                if capture {
                    kept.extend_from_slice(&buf[..take]);
                } else if matches!(output, Output::Forward { .. }) {
                } else if stream == OutStream::Stderr {
                    let _ = std::io::stderr().write_all(&buf[..take]);
                } else {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&buf[..take]);
                    let _ = out.flush();
                }
            }
            total = total.saturating_add(n);
        }
        kept
    })
}
