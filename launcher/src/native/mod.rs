//! The native backend: the launcher builds the sandbox of a plan itself,
//! without an external binary. Runs in a single-threaded process.
//!
//! Process layout (each level sets `PR_SET_PDEATHSIG(SIGKILL)`):
//!
//! ```text
//! caller                 the supervisor (fork path) or the launcher it
//!   |                    exec'd (which then forwards signals and exits with
//!   |                    PID 1's code)
//!   +- PID 1             cloned straight into the plan's namespaces (or,
//!       |                ahead of the plan, into user+pid; it unshares the
//!       |                rest while the caller plans, then reads the view): maps
//!       |                its uid/gid, brings loopback up, builds the mount
//!       |                view ([`mount`]), forwards signals to the command's
//!       |                process group, reaps until ECHILD, exits with the
//!       |                first child's status (128+N for signal N)
//!       +- command       hardening, then `execve`
//! ```

use std::io;
use std::path::{Path, PathBuf};

mod init;
mod mount;
mod reaper;

pub(crate) use init::{outer_wait, spawn_pid1, AheadView, View, CGROUP_MESSAGE};
pub(crate) use reaper::exit_now;
pub(crate) use reaper::{block_all, hold_signals, set_mask};

/// Errors of the native backend; each names the step and path.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("native backend: {step}")]
    Sys {
        step: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("native backend: {step} {}", path.display())]
    Path {
        step: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("native backend: {0}")]
    Invalid(String),
}

impl NativeError {
    fn errno(&self) -> Option<i32> {
        match self {
            NativeError::Sys { source, .. } | NativeError::Path { source, .. } => {
                source.raw_os_error()
            }
            NativeError::Invalid(_) => None,
        }
    }

    /// The path (or a component of it) did not exist.
    pub(crate) fn not_found(&self) -> bool {
        self.errno() == Some(libc::ENOENT)
    }

    /// A component of the path could not be searched (EACCES, not EPERM).
    pub(crate) fn permission_denied(&self) -> bool {
        self.errno() == Some(libc::EACCES)
    }

    fn sys(step: &'static str) -> impl FnOnce(io::Error) -> NativeError {
        move |source| NativeError::Sys { step, source }
    }
    fn path<'a>(step: &'static str, path: &'a Path) -> impl Fn(io::Error) -> NativeError + 'a {
        move |source| NativeError::Path {
            step,
            path: path.to_path_buf(),
            source,
        }
    }
}
