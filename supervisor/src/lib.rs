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
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use zot_launcher::plan::{Area, Gap, LaunchPlan, Namespace, NetworkPlan};
use zot_policy::sandbox::{SandboxMode, SandboxPolicy};

pub mod bwrap;
mod canon;
pub mod cgroup;
pub mod check;
pub mod creds;
pub mod explain;
pub mod gitconfig;
pub mod host;
pub mod index;
pub mod journal;
mod notify;
mod output;
pub mod planner;
mod process;
pub mod proxy;
pub mod repos;
pub mod resolve;
mod spawn;
mod supervise;

pub use process::{exec_unconfined, run};
pub use resolve::{prepare, Backend, Planned};
pub use zot_launcher::{BackendKind, Level};
pub use zot_process::Cancel;

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
    /// Given only to [`RunRequest::on_output`] as it comes, at most
    /// `max_bytes` per stream: neither kept nor copied (a long-lived
    /// command whose output the caller reads, e.g. a protocol on stdout).
    Forward { max_bytes: usize },
}

/// Which of the command's output streams a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutStream {
    Stdout,
    Stderr,
}

/// Called with each chunk of the command's output as it arrives (from the
/// threads that read the pipes), within the `max_bytes` of each stream,
/// whatever [`Output`] says is done with it as well.
#[derive(Clone)]
pub struct OutputSink(pub Arc<SinkFn>);

/// What an [`OutputSink`] calls.
pub type SinkFn = dyn Fn(OutStream, &[u8]) + Send + Sync;

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSink")
    }
}

/// The command's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    Inherit,
    Null,
    /// This open file descriptor of the caller (e.g. the read end of a
    /// pipe the caller writes to); it must stay open until the run has
    /// started. The caller keeps its own copy.
    Fd(std::os::fd::RawFd),
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
    /// Run the launcher's code in a forked child, without exec'ing the
    /// launcher, when this process is provably single-threaded at that
    /// moment (native and landlock backends; `zot sandbox`). Otherwise, and
    /// always when false, the launcher is exec'd.
    pub in_process: bool,
    /// bwrap runs this binary as the launcher instead of the launcher image,
    /// so that `/proc/self/exe` in the command names this binary (the
    /// check's attempt runner re-executes zot that way).
    pub zot_as_launcher: bool,
    /// With allowed hosts (a proxied network): where the proxy appends its
    /// JSONL audit records (they are in [`RunOutcome::proxy`] either way).
    pub proxy_log: Option<PathBuf>,
    /// Where the run records what it creates outside the state directory
    /// (the proxy's private directory), so that the next zot process removes
    /// what a killed run left. Without one, such directories are removed at
    /// the end of the run only.
    pub journal: Option<journal::Journal>,
    /// When this fires, the command gets the signal of an
    /// [`interrupt`](Cancel::interrupt) (SIGTERM for a plain cancel), then
    /// SIGKILL of the whole tree after `kill_grace`; the outcome says
    /// `cancelled`. One already fired means the command is not started.
    pub cancel: Option<Cancel>,
    /// Sees the output as it comes (see [`OutputSink`]).
    pub on_output: Option<OutputSink>,
    /// A session's workspace index (kept current from inotify events).
    /// Without one, the persisted index of the writable roots is validated
    /// at launch and again after the command.
    pub index: Option<Arc<index::live::Live>>,
}

impl RunRequest {
    /// A request with defaults: auto backend, no timeout, captured output
    /// (1 MiB per stream), stdin from /dev/null, no signal forwarding, the
    /// launcher exec'd.
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
            in_process: false,
            zot_as_launcher: false,
            proxy_log: None,
            journal: None,
            cancel: None,
            on_output: None,
            index: None,
        }
    }
}

/// A note of an [`EnforcementReport`]: why something is not full, or what
/// was accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Note {
    /// A better backend of the auto order could not be used here.
    BackendNotUsed {
        backend: BackendKind,
        reason: String,
    },
    /// The policy lets the command use the host network.
    HostNetwork,
    /// What the backend's plan cannot enforce (or a caveat).
    Gap { gap: Gap },
    /// The kernel enforced only part of the Landlock ruleset.
    Landlock { detail: String },
    /// The mode is not fully enforced and `--allow-degraded` accepted it.
    Degraded {
        mode: SandboxMode,
        backend: BackendKind,
    },
    /// Connects or sends to unix sockets the sandbox did not bind were
    /// refused (`ECONNREFUSED`).
    HostSocketsRefused { count: u64 },
    /// The supervisor could not check some of the sandbox's calls (they
    /// failed).
    SocketCheckFailed { detail: String },
    /// The repository scan of the writable roots hit its budget: git files
    /// of repositories it did not reach are not protected.
    ScanIncomplete { dirs: usize },
    /// A directory of the caller's `PATH` inside a writable root, kept
    /// read-only.
    PathReadOnly { path: PathBuf },
    /// A repository (or `commondir`) that appeared during the run, renamed
    /// aside (at once in a session, else after the run).
    Quarantined { from: PathBuf, to: PathBuf },
    /// The repository enclosing a scope or write root, hidden by the view,
    /// shown read-only so that git works there (see
    /// [`planner::repo_views`]).
    RepoShown {
        from: PathBuf,
        work_tree: PathBuf,
        shown: Vec<PathBuf>,
    },
    /// An executable that appeared during the run in a `PATH` directory
    /// that stays writable (a writable root, or `.`), renamed aside after it.
    ExecutableQuarantined { from: PathBuf, to: PathBuf },
    /// A directory inside a writable root that cannot be listed: kept
    /// read-only whole, since a repository inside it would be unseen.
    Unlistable { path: PathBuf },
    /// The persisted workspace index was not trusted and was rebuilt.
    IndexCacheDiscarded { reason: String },
    /// The session's index fell back from inotify events to validating
    /// the tree (queue overflow, watch limit).
    IndexFallback { reason: String },
}

impl From<index::IndexNote> for Note {
    fn from(n: index::IndexNote) -> Note {
        match n {
            index::IndexNote::CacheDiscarded { reason } => Note::IndexCacheDiscarded { reason },
            index::IndexNote::Fallback { reason } => Note::IndexFallback { reason },
        }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::BackendNotUsed { backend, reason } => {
                write!(f, "backend: {backend} not used: {reason}")
            }
            Note::HostNetwork => f.write_str("network: host network allowed by the policy"),
            Note::Gap { gap } => f.write_str(gap.describe()),
            Note::Landlock { detail } => write!(f, "landlock: {detail}"),
            Note::Degraded { mode, backend } => write!(
                f,
                "degraded: mode {mode} is not fully enforced on {backend} (--allow-degraded)"
            ),
            Note::HostSocketsRefused { count } => write!(
                f,
                "network: refused {count} connect/send call(s) to unix sockets the sandbox did not bind"
            ),
            Note::SocketCheckFailed { detail } => write!(f, "network: socket check failed: {detail}"),
            Note::ScanIncomplete { dirs } => write!(
                f,
                "git: the repository scan stopped after {dirs} directories; git files of repositories it did not reach are not protected"
            ),
            Note::PathReadOnly { path } => write!(
                f,
                "PATH: {} lies inside a writable root and is kept read-only",
                path.display()
            ),
            Note::Quarantined { from, to } => write!(
                f,
                "git: {} appeared during the run; renamed to {} (git on the host will not use it)",
                from.display(),
                to.display()
            ),
            Note::RepoShown {
                from,
                work_tree,
                shown,
            } => write!(
                f,
                "git: {} lies in the repository {}; shown read-only so that git works there: {} (its history and configuration are readable)",
                from.display(),
                work_tree.display(),
                shown
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Note::ExecutableQuarantined { from, to } => write!(
                f,
                "PATH: the executable {} appeared during the run in a directory of the caller's PATH; renamed to {} (a shell on the host will not run it)",
                from.display(),
                to.display()
            ),
            Note::Unlistable { path } => write!(
                f,
                "index: {} cannot be listed; kept read-only (a repository inside it would be unseen)",
                path.display()
            ),
            Note::IndexCacheDiscarded { reason } => {
                write!(f, "index: the persisted index was not used ({reason}); rebuilt")
            }
            Note::IndexFallback { reason } => write!(f, "index: {reason}"),
        }
    }
}

/// The resource limits a run enforces (from its plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitValues {
    /// Bytes of each private tmpfs (`/tmp`, `/var/tmp`, `/run`, `/dev/shm`).
    pub tmpfs_size: Option<u64>,
    /// Processes and threads (`RLIMIT_NPROC` in the sandbox's user namespace).
    pub processes: Option<u64>,
    /// Largest file written (`RLIMIT_FSIZE`).
    pub file_size: Option<u64>,
    /// `RLIMIT_CORE` is 0.
    pub no_core_dumps: bool,
    /// cgroup v2 limits: what was applied, or why none.
    pub cgroup: String,
}

impl LimitValues {
    pub fn of(plan: &LaunchPlan) -> LimitValues {
        use zot_launcher::plan::{MountOp, RlimitResource};
        let rl = |r: RlimitResource| {
            plan.rlimits
                .iter()
                .find(|l| l.resource == r)
                .and_then(|l| l.hard)
        };
        LimitValues {
            tmpfs_size: plan.mounts.iter().find_map(|m| match m {
                MountOp::Tmpfs { dst, size, .. } if dst == std::path::Path::new("/tmp") => *size,
                _ => None,
            }),
            processes: rl(RlimitResource::Nproc),
            file_size: rl(RlimitResource::Fsize),
            no_core_dumps: rl(RlimitResource::Core) == Some(0),
            cgroup: if plan.isolation == zot_launcher::plan::Isolation::None {
                "none".into()
            } else {
                cgroup::status()
            },
        }
    }

    /// One line: `tmpfs 512 MiB each, 1024 processes, ...`.
    pub fn to_text(&self) -> String {
        use zot_policy::limits::format_size;
        let mut v = Vec::new();
        v.push(match self.tmpfs_size {
            Some(n) => format!("tmpfs {} each", format_size(n)),
            None => "tmpfs unlimited".into(),
        });
        v.push(match self.processes {
            Some(n) => format!("{n} processes"),
            None => "processes unlimited".into(),
        });
        v.push(match self.file_size {
            Some(n) => format!("files up to {}", format_size(n)),
            None => "file size unlimited".into(),
        });
        if self.no_core_dumps {
            v.push("no core dumps".into());
        }
        v.push(format!("cgroup: {}", self.cgroup));
        v.join(", ")
    }
}

/// What a run actually enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnforcementReport {
    pub backend: BackendKind,
    pub mode: SandboxMode,
    pub filesystem: Level,
    /// `full` when the network is cut off as the policy asks; `none` when
    /// the policy lets the command use the host network.
    pub network: Level,
    pub pid: Level,
    pub seccomp: Level,
    pub landlock: Level,
    /// The resource limits: `full` when the tmpfs sizes and the process
    /// limit apply (bwrap, native), `partial` without them (landlock).
    pub limits: Level,
    /// The limit values enforced.
    pub limit_values: LimitValues,
    /// Why something is not full, and every downgrade accepted.
    pub notes: Vec<Note>,
}

impl EnforcementReport {
    /// What a run of `plan` on `backend` will enforce (the launcher's
    /// Landlock outcome is filled in after the run).
    pub fn new(backend: BackendKind, plan: &LaunchPlan, skipped: Vec<Note>) -> EnforcementReport {
        let confined = backend != BackendKind::Unconfined;
        let level = |l: Level| if confined { l } else { Level::None };
        let mut notes = skipped;
        if confined && plan.network == NetworkPlan::Host {
            notes.push(Note::HostNetwork);
        }
        notes.extend(plan.unenforced.iter().map(|g| Note::Gap { gap: *g }));
        EnforcementReport {
            backend,
            mode: plan.mode,
            filesystem: level(plan.level(Area::Filesystem)),
            network: match plan.network {
                NetworkPlan::Off | NetworkPlan::Proxied { .. } => level(plan.level(Area::Network)),
                NetworkPlan::Host => Level::None,
            },
            pid: if plan.has(Namespace::Pid) {
                plan.level(Area::Pid)
            } else {
                Level::None
            },
            seccomp: level(if plan.seccomp.enabled {
                Level::Full
            } else {
                Level::None
            }),
            landlock: level(
                if plan.landlock.compat == zot_launcher::plan::LandlockCompat::Off {
                    Level::None
                } else {
                    Level::Full
                },
            ),
            limits: level(plan.level(Area::Limits)),
            limit_values: LimitValues::of(plan),
            notes,
        }
    }

    /// The mode is enforced as defined: filesystem full, and the network
    /// cut off when the policy says so. (No PID namespace on the landlock
    /// backend is reported but does not make a mode unenforced.)
    pub fn mode_enforced(&self) -> bool {
        self.backend == BackendKind::Unconfined
            || (self.filesystem == Level::Full && self.network != Level::Partial)
    }

    /// Every note, rendered.
    pub fn reasons(&self) -> Vec<String> {
        self.notes.iter().map(ToString::to_string).collect()
    }

    /// The notes without the `--allow-degraded` one: why the backend was
    /// chosen and what it cannot enforce.
    pub fn backend_reasons(&self) -> Vec<String> {
        self.notes
            .iter()
            .filter(|n| !matches!(n, Note::Degraded { .. }))
            .map(ToString::to_string)
            .collect()
    }

    /// Human-readable multi-line form (what `--report` prints).
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "zot sandbox report: mode {} backend {}\n  filesystem: {}\n  network: {}\n  pid: {}\n  seccomp: {}\n  landlock: {}\n  limits: {} ({})\n",
            self.mode, self.backend, self.filesystem, self.network, self.pid, self.seccomp, self.landlock,
            self.limits, self.limit_values.to_text()
        );
        for r in self.reasons() {
            s.push_str("  note: ");
            s.push_str(&r);
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
    /// Stopped by [`RunRequest::cancel`] (or never started because it had
    /// fired).
    pub cancelled: bool,
    pub duration: Duration,
    pub report: EnforcementReport,
    /// The filtering proxy's decisions (a proxied network only).
    pub proxy: Vec<proxy::AuditRecord>,
    /// Repositories (or `commondir` files) created during the run and
    /// renamed aside after it: `(from, to)`.
    pub quarantined: Vec<(PathBuf, PathBuf)>,
}

/// Why a run could not start (all of these map to exit code 125).
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("empty command")]
    EmptyCommand,
    #[error("no sandbox backend can enforce mode {mode} here: {reason}")]
    NoBackend {
        mode: SandboxMode,
        reason: String,
        hint: String,
    },
    #[error("backend {backend} cannot fully enforce mode {mode}: {reason}")]
    Degraded {
        backend: BackendKind,
        mode: SandboxMode,
        reason: String,
        hint: String,
    },
    #[error("cannot plan the sandbox")]
    Plan(#[source] planner::PlanError),
    #[error("cannot start the network proxy")]
    Proxy(#[source] proxy::ProxyError),
    #[error("cannot make the network proxy's directory")]
    ProxyDir(#[source] journal::JournalError),
    #[error("cannot prepare the launch")]
    Prepare(#[source] zot_launcher::LaunchError),
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
    #[error("sandbox setup failed ({backend}): {message}")]
    Setup {
        backend: BackendKind,
        message: String,
        hint: Option<String>,
    },
}

impl SupervisorError {
    /// What the user can do about it, when zot knows (printed on a line of
    /// its own after the error).
    pub fn hint(&self) -> Option<&str> {
        match self {
            SupervisorError::NoBackend { hint, .. } | SupervisorError::Degraded { hint, .. } => {
                Some(hint)
            }
            SupervisorError::Setup { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// The process exit code for this error (DESIGN.md: 125).
    pub fn exit_code(&self) -> i32 {
        EXIT_SETUP
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SupervisorError {
        let what = what.into();
        move |source| SupervisorError::Io { what, source }
    }
}
