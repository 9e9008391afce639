//! Chooses a backend from policy + probes, spawns the launcher, streams and
//! caps output, enforces timeouts, forwards signals, reports what was enforced.
//!
//! ```no_run
//! # use zot_supervisor::*;
//! # fn f(policy: zot_policy::sandbox::SandboxPolicy) -> Result<(), SupervisorError> {
//! let outcome = run(RunRequest::new(policy, vec!["/bin/true".into()]))?;
//! assert_eq!(outcome.exit_code, 0);
//! # Ok(()) }
//! ```

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use zot_policy::sandbox::{SandboxMode, SandboxPolicy};

pub mod bwrap;
pub mod check;
mod env;
pub mod explain;
pub mod journal;
mod process;
pub mod proxy;
mod repos;
pub mod resolve;

pub use env::command_env;
pub use process::{launch_spec, run};
pub use repos::find_nested_repos;
pub use resolve::{Backend, Resolved};

/// Exit code of a run that timed out.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code when the sandbox could not be set up.
pub const EXIT_SETUP: i32 = 125;

/// Which backend the caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendChoice {
    /// The best available: bwrap, then native, then landlock.
    #[default]
    Auto,
    Bwrap,
    Native,
    Landlock,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "bwrap" => Ok(BackendChoice::Bwrap),
            "native" => Ok(BackendChoice::Native),
            "landlock" => Ok(BackendChoice::Landlock),
            other => Err(format!(
                "unknown backend {other:?} (expected auto, bwrap, native or landlock)"
            )),
        }
    }
}

/// What happens to the command's stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The command writes to the caller's stdout/stderr directly.
    Inherit,
    /// Collected into [`RunOutcome`], at most `max_bytes` per stream; the
    /// rest is read and dropped (the command never blocks on a full pipe).
    Capture { max_bytes: usize },
    /// Copied to the caller's stdout/stderr as it comes, at most `max_bytes`
    /// per stream; the rest is dropped.
    Stream { max_bytes: usize },
}

/// The command's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    Inherit,
    Null,
}

/// One sandboxed run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub policy: SandboxPolicy,
    pub argv: Vec<OsString>,
    pub backend: BackendChoice,
    /// Run even when the mode cannot be fully enforced (the report says so).
    pub allow_degraded: bool,
    /// Kill the whole process tree after this long (TERM, then KILL).
    pub timeout: Option<Duration>,
    /// Time between TERM and KILL on timeout.
    pub kill_grace: Duration,
    pub output: Output,
    pub stdin: Stdin,
    /// Forward SIGINT/SIGTERM/SIGHUP received by this process into the
    /// sandbox (installs process-wide handlers for the run's duration).
    pub forward_signals: bool,
}

impl RunRequest {
    /// A request with defaults: auto backend, no timeout, captured output
    /// (1 MiB per stream), stdin from /dev/null, no signal forwarding.
    pub fn new(policy: SandboxPolicy, argv: Vec<OsString>) -> Self {
        RunRequest {
            policy,
            argv,
            backend: BackendChoice::Auto,
            allow_degraded: false,
            timeout: None,
            kill_grace: Duration::from_secs(2),
            output: Output::Capture { max_bytes: 1 << 20 },
            stdin: Stdin::Null,
            forward_signals: false,
        }
    }
}

/// How much of one kind of confinement was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Full,
    Partial,
    None,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Full => "full",
            Level::Partial => "partial",
            Level::None => "none",
        })
    }
}

/// What a run actually enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnforcementReport {
    /// `bwrap`, `native`, `landlock` or `none`.
    pub backend: String,
    pub mode: SandboxMode,
    pub filesystem: Level,
    /// `full` when the network is cut off as the policy asks; `none` when
    /// the policy lets the command use the host network.
    pub network: Level,
    pub pid: Level,
    pub seccomp: Level,
    pub landlock: Level,
    /// Why something is not full, and every downgrade accepted.
    pub reasons: Vec<String>,
}

impl EnforcementReport {
    /// Prefix of the note added when a downgrade was accepted with
    /// `--allow-degraded`.
    pub const DEGRADED_NOTE: &'static str = "degraded:";

    /// The reasons without the `--allow-degraded` note: why the backend was
    /// chosen and what it cannot enforce.
    pub fn backend_reasons(&self) -> Vec<String> {
        self.reasons
            .iter()
            .filter(|r| !r.starts_with(Self::DEGRADED_NOTE))
            .cloned()
            .collect()
    }

    /// Human-readable multi-line form (what `--report` prints).
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "zot sandbox report: mode {} backend {}\n  filesystem: {}\n  network: {}\n  pid: {}\n  seccomp: {}\n  landlock: {}\n",
            self.mode, self.backend, self.filesystem, self.network, self.pid, self.seccomp, self.landlock
        );
        for r in &self.reasons {
            s.push_str("  note: ");
            s.push_str(r);
            s.push('\n');
        }
        s
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The command's code; 128+N when killed by signal N; 124 on timeout;
    /// 126/127 when it could not be executed / found.
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Output was cut at `max_bytes`.
    pub truncated: bool,
    pub timed_out: bool,
    pub duration: Duration,
    pub report: EnforcementReport,
}

/// Why a run could not start (all of these map to exit code 125).
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("empty command")]
    EmptyCommand,
    #[error("no sandbox backend can enforce mode {mode} here: {reason}\nhint: {hint}")]
    NoBackend {
        mode: SandboxMode,
        reason: String,
        hint: String,
    },
    #[error("backend {backend} cannot fully enforce mode {mode}: {reason}\nhint: {hint}")]
    Degraded {
        backend: String,
        mode: SandboxMode,
        reason: String,
        hint: String,
    },
    #[error("cannot find the zot executable to use as launcher")]
    CurrentExe(#[source] std::io::Error),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {program:?}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("sandbox setup failed ({backend}): {message}{}", hint.as_deref().map(|h| format!("\nhint: {h}")).unwrap_or_default())]
    Setup {
        backend: String,
        message: String,
        hint: Option<String>,
    },
}

impl SupervisorError {
    /// The process exit code for this error (DESIGN.md: 125).
    pub fn exit_code(&self) -> i32 {
        EXIT_SETUP
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SupervisorError {
        let what = what.into();
        move |source| SupervisorError::Io { what, source }
    }
}
