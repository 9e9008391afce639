//! The single-threaded in-sandbox step, run by re-executing the `zot` binary
//! with [`LAUNCH_ARG`] as its first argument, before any thread exists.
//!
//! The supervisor passes a [`LaunchSpec`] as JSON over an inherited pipe
//! (`zot __zot-launch --spec-fd N --status-fd M`). The launcher then, in this
//! order: enters the native namespaces (native backend only), sets
//! `PR_SET_NO_NEW_PRIVS`, `PR_SET_PDEATHSIG(SIGKILL)` (re-checking the parent),
//! starts a new session, marks every inherited fd close-on-exec, replaces the
//! environment, drops all capabilities, applies Landlock, installs seccomp
//! last, resets SIGPIPE and the signal mask, reports its status on the status
//! pipe and calls `execve`. Exec failures exit 127 (not found) or 126.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use zot_policy::sandbox::SandboxPolicy;

pub mod bridge;
mod harden;
pub mod landlock_rules;
pub mod native;
pub mod seccomp;

pub use landlock_rules::{LandlockLevel, LandlockReport};

/// First argument that turns the `zot` binary into the launcher.
pub const LAUNCH_ARG: &str = "__zot-launch";

/// Exit code when the sandbox could not be set up.
pub const EXIT_SETUP: i32 = 125;
/// Exit code when the command exists but cannot be executed.
pub const EXIT_CANNOT_EXEC: i32 = 126;
/// Exit code when the command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Which backend started this launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// bubblewrap built the namespaces and mounts; the launcher hardens.
    Bwrap,
    /// The launcher builds namespaces and mounts itself (`native::enter`).
    Native,
    /// No namespaces: Landlock and seccomp only.
    Landlock,
}

/// How strictly Landlock is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockMode {
    /// Fail unless at least the ABI v1 filesystem rights are enforced.
    Required,
    /// Apply what the kernel supports and report it.
    BestEffort,
    /// Do not use Landlock.
    Off,
}

/// Seccomp options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompSpec {
    /// Deny `socket`/`socketpair` for every family but `AF_UNIX`.
    pub deny_network: bool,
    /// Deny `connect` and `sendto` with an address (reaching sockets the
    /// command did not create; for backends without a private /tmp and /run).
    /// `sendmsg` stays allowed (its address is behind a pointer).
    #[serde(default)]
    pub deny_unix_connect: bool,
}

/// Everything the launcher needs, passed by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub backend: BackendKind,
    /// The compiled policy (paths as seen inside the sandbox).
    pub policy: SandboxPolicy,
    /// The command and its arguments; `argv[0]` is looked up in `PATH`.
    pub argv: Vec<OsString>,
    /// The complete environment of the command (already filtered).
    pub env: Vec<(OsString, OsString)>,
    pub landlock: LandlockMode,
    /// Extra paths Landlock lets the command read (besides the policy's).
    pub landlock_read: Vec<PathBuf>,
    /// Extra paths Landlock lets the command write (e.g. the private /tmp).
    pub landlock_write: Vec<PathBuf>,
    /// Device paths that keep file and ioctl rights (e.g. /dev).
    pub landlock_dev: Vec<PathBuf>,
    pub seccomp: SeccompSpec,
}

/// One line of JSON the launcher writes on the status pipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum LaunchStatus {
    /// Everything is in place; `execve` comes next.
    Ready {
        landlock: LandlockReport,
        seccomp: bool,
    },
    /// Setting up the sandbox failed at `stage`.
    Failed { stage: String, message: String },
    /// `execve` failed with `errno`.
    ExecFailed { errno: i32, message: String },
}

/// Why the launcher could not set up the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("bad launcher arguments: {0}")]
    Usage(String),
    #[error("cannot read the launch spec")]
    ReadSpec(#[source] std::io::Error),
    #[error("invalid launch spec")]
    ParseSpec(#[source] serde_json::Error),
    #[error("the launcher is not single-threaded ({0} threads)")]
    Threaded(usize),
    #[error("{0}")]
    Unsupported(&'static str),
    #[error("{stage} failed")]
    Sys {
        stage: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the parent exited before the sandbox was ready")]
    ParentGone,
    #[error("landlock")]
    Landlock(#[source] landlock::RulesetError),
    #[error("landlock is required but not enforced: {0}")]
    LandlockNotEnforced(String),
    #[error("landlock: cannot open {path:?}")]
    LandlockOpen {
        path: PathBuf,
        #[source]
        source: landlock::PathFdError,
    },
    #[error("landlock rule for {path:?}")]
    LandlockPath {
        path: PathBuf,
        #[source]
        source: landlock::RulesetError,
    },
    #[error("seccomp filter")]
    Seccomp(#[source] seccompiler::Error),
    #[error("seccomp filter compilation")]
    SeccompCompile(#[source] seccompiler::BackendError),
    #[error("capabilities")]
    Caps(#[source] caps::errors::CapsError),
    #[error("cannot drop capability {0} from the bounding set while running as uid 0")]
    BoundingSet(String),
    #[error("argument or environment contains a NUL byte")]
    Nul,
    #[error("empty command")]
    EmptyCommand,
}

impl LaunchError {
    /// A short name of the step that failed, for the status pipe.
    pub fn stage(&self) -> &'static str {
        match self {
            LaunchError::Usage(_) | LaunchError::ReadSpec(_) | LaunchError::ParseSpec(_) => "spec",
            LaunchError::Threaded(_) => "threads",
            LaunchError::Unsupported(_) => "backend",
            LaunchError::Sys { stage, .. } => stage,
            LaunchError::ParentGone => "pdeathsig",
            LaunchError::Landlock(_)
            | LaunchError::LandlockNotEnforced(_)
            | LaunchError::LandlockPath { .. }
            | LaunchError::LandlockOpen { .. } => "landlock",
            LaunchError::Seccomp(_) | LaunchError::SeccompCompile(_) => "seccomp",
            LaunchError::Caps(_) | LaunchError::BoundingSet(_) => "capabilities",
            LaunchError::Nul | LaunchError::EmptyCommand => "command",
        }
    }
}

pub(crate) fn sys(stage: &'static str) -> impl FnOnce(nix::Error) -> LaunchError {
    move |e| LaunchError::Sys {
        stage,
        source: std::io::Error::from(e),
    }
}

/// Format an error with its chain of causes.
fn chain(err: &dyn std::error::Error) -> String {
    let mut s = err.to_string();
    let mut cur = err.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

struct StatusPipe(Option<std::fs::File>);

impl StatusPipe {
    fn send(&mut self, status: &LaunchStatus) {
        if let Some(f) = self.0.as_mut() {
            if let Ok(mut line) = serde_json::to_vec(status) {
                line.push(b'\n');
                let _ = f.write_all(&line);
            }
        }
    }
}

fn parse_fd(args: &[OsString], name: &str) -> Result<Option<RawFd>, LaunchError> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    let v = args
        .get(i + 1)
        .and_then(|v| v.to_str())
        .and_then(|v| v.parse::<RawFd>().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| {
            LaunchError::Usage(format!("{name} needs a file descriptor number above 2"))
        })?;
    Ok(Some(v))
}

/// Entry point of the launcher; never returns.
pub fn main_from_args() -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    let mut status = StatusPipe(None);
    let code = match launch(&args, &mut status) {
        Ok(never) => match never {},
        Err(LaunchFailure::Setup(err)) => {
            let message = chain(&err);
            // With a status pipe the supervisor reports it (once).
            if status.0.is_none() {
                eprintln!("zot: sandbox setup failed: {message}");
            }
            status.send(&LaunchStatus::Failed {
                stage: err.stage().to_string(),
                message,
            });
            EXIT_SETUP
        }
        Err(LaunchFailure::Exec { program, errno }) => {
            let err = std::io::Error::from_raw_os_error(errno as i32);
            let message = format!("{}: {}", program.to_string_lossy(), err);
            status.send(&LaunchStatus::ExecFailed {
                errno: errno as i32,
                message: message.clone(),
            });
            if errno == nix::errno::Errno::ENOENT {
                eprintln!("zot: {}: command not found", program.to_string_lossy());
                EXIT_NOT_FOUND
            } else {
                eprintln!("zot: cannot execute {message}");
                EXIT_CANNOT_EXEC
            }
        }
    };
    std::process::exit(code)
}

enum Never {}

enum LaunchFailure {
    Setup(LaunchError),
    Exec {
        program: OsString,
        errno: nix::errno::Errno,
    },
}

impl From<LaunchError> for LaunchFailure {
    fn from(e: LaunchError) -> Self {
        LaunchFailure::Setup(e)
    }
}

fn launch(args: &[OsString], status: &mut StatusPipe) -> Result<Never, LaunchFailure> {
    // The status pipe first, so every later failure can be reported.
    if let Some(fd) = parse_fd(args, "--status-fd")? {
        harden::set_cloexec(fd).map_err(sys("status fd"))?;
        // SAFETY: the supervisor passed us this fd and nothing else owns it.
        status.0 = Some(unsafe { std::fs::File::from_raw_fd(fd) });
    }
    let spec_fd = parse_fd(args, "--spec-fd")?
        .ok_or_else(|| LaunchError::Usage("missing --spec-fd".into()))?;
    // SAFETY: as above; the file is dropped (closed) after reading.
    let mut spec_file = unsafe { std::fs::File::from_raw_fd(spec_fd) };
    let mut buf = Vec::new();
    spec_file
        .read_to_end(&mut buf)
        .map_err(LaunchError::ReadSpec)?;
    drop(spec_file);
    let spec: LaunchSpec = serde_json::from_slice(&buf).map_err(LaunchError::ParseSpec)?;

    let threads = harden::thread_count();
    if threads != 1 {
        return Err(LaunchError::Threaded(threads).into());
    }
    if spec.argv.is_empty() {
        return Err(LaunchError::EmptyCommand.into());
    }
    match spec.backend {
        BackendKind::Native => native::enter(&spec)?,
        // bwrap and the native stage set the cwd themselves.
        BackendKind::Landlock => nix::unistd::chdir(&spec.policy.cwd).map_err(sys("chdir"))?,
        BackendKind::Bwrap => {}
    }
    let (landlock, seccomp) = harden::harden(&spec)?;
    status.send(&LaunchStatus::Ready { landlock, seccomp });
    let program = spec.argv[0].clone();
    let errno = harden::exec(&spec)?;
    Err(LaunchFailure::Exec { program, errno })
}
