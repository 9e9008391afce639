//! `zot run`: references, consent, requirements, model catalog, simulator,
//! tools, sessions and output modes.
//!
//! The flow of one run (see [`runtime::run`]): resolve the reference ->
//! refuse unenforced permissions -> check requirements -> load the config
//! and select the model (before consent: a model that cannot run the agent
//! is known before the user is asked) -> create the agent data dir ->
//! consent -> system prompt and skills -> session -> `entry.pre` -> turns.
//! Dependencies on the package loader, the risk gate and the supervisor
//! all go through [`deps`]; models go through [`providers`].

pub mod commands;
pub mod config;
pub mod consent;
pub mod context;
pub mod deps;
pub mod events;
pub mod ext;
pub mod fsscope;
pub mod home;
pub mod message;
pub mod models;
pub mod oci;
pub mod perms;
pub mod prompt;
pub mod providers;
pub mod reference;
pub mod requirements;
pub mod runtime;
pub mod session;
pub mod store;
pub mod tools;
pub mod trust;
pub mod ui;

pub use providers::Cancel;
pub use runtime::{
    compile_policies, compile_policy, models_report, run, OutputMode, RunOptions, SessionChoice,
};
pub use ui::{Line, LineRequest, NullUi, Ui};

/// Errors of `zot run`. Messages are lowercase and name what failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A reference that does not resolve to an agent, with the error under
    /// it when there is one (a download, an archive).
    #[error("reference: {what}")]
    Reference {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    #[error("loading the agent")]
    Package(#[source] zot_package::PackageError),
    /// The agent's manifest cannot be used as it is (`what` says where),
    /// with the error under it when a value does not parse.
    #[error("manifest: {what}")]
    Manifest {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    /// The agent asks for what zot cannot enforce here, with the error
    /// that showed it when there is one (an extension's sandbox failed).
    #[error("{what}")]
    Unenforced {
        what: String,
        #[source]
        source: Option<Box<RunError>>,
    },
    #[error("requirement not met: {0}")]
    Requirement(String),
    #[error("zot home: {0}")]
    Home(String),
    #[error("consent: {0}")]
    Consent(String),
    /// No model can run the agent, or one failed it, with the error under
    /// it when there is one (a simulator script that does not parse).
    #[error("model: {what}")]
    Model {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    #[error("config {}: {message}", .path.display())]
    Config {
        path: std::path::PathBuf,
        message: String,
    },
    /// A model request failed.
    #[error("{provider}")]
    Provider {
        provider: String,
        #[source]
        source: providers::ProviderError,
    },
    /// A signal (SIGINT, SIGTERM, SIGHUP) arrived during a model request.
    #[error("interrupted by {}", signal_name(*.0))]
    Interrupted(i32),
    /// The turn was cancelled through its [`Cancel`] handle.
    #[error("cancelled")]
    Cancelled,
    /// A session that cannot be used, with the error under it when there
    /// is one (a line that does not parse).
    #[error("session: {what}")]
    Session {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    /// The conversation does not fit the model's context window, even
    /// after compacting it (or compaction is off).
    #[error("context window: {0}")]
    Context(String),
    /// The supervisor could not run a command (hint: [`RunError::hint`]).
    #[error("sandbox")]
    Sandbox(#[source] zot_supervisor::SupervisorError),
    /// The agent's permissions do not compile to a sandbox policy.
    #[error("sandbox policy")]
    Policy(#[source] zot_policy::sandbox::PolicyError),
    #[error("entry.pre: {0}")]
    Pre(String),
    #[error("{0}")]
    Usage(String),
    #[error("recording what zot creates")]
    Journal(#[source] Box<zot_supervisor::journal::JournalError>),
    #[error("signature: {0}")]
    Signature(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// An OCI registry request or artifact failed (the message names the
    /// registry, never a credential), with the error under it when there is
    /// one. The error of sending a request stays in the message: it is
    /// scrubbed of anything that looks like a credential first.
    #[error("registry: {what}")]
    Registry {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    /// The local store of installed agents, with the error under it when
    /// there is one (a name or a record that does not parse).
    #[error("installed agents: {what}")]
    Store {
        what: String,
        #[source]
        source: Option<Cause>,
    },
}

/// The error under a [`RunError`] whose message says what it was about
/// ([`ui::error_chain`] prints it after that message).
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Http(#[from] ureq::Error),
    #[error(transparent)]
    Archive(#[from] zot_package::ArchiveError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Version(#[from] semver::Error),
    #[error(transparent)]
    AgentToml(#[from] zot_package::agent_toml::Diagnostics),
    #[error(transparent)]
    Host(#[from] zot_policy::net::HostError),
    #[error(transparent)]
    EnvName(#[from] zot_policy::env::EnvNameError),
    #[error(transparent)]
    Name(#[from] zot_policy::zotfile::NameError),
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}

impl RunError {
    /// The exit code `zot run` ends with for this error: 128+N for a
    /// signal, 2 for a usage error, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Interrupted(sig) => (128 + *sig).clamp(0, 255) as u8,
            RunError::Usage(_) => 2,
            _ => 1,
        }
    }

    /// What the user can do about it, when zot knows.
    pub fn hint(&self) -> Option<&str> {
        match self {
            RunError::Sandbox(e) => e.hint(),
            RunError::Context(_) => Some(
                "start a new session (/clear), choose a model with a larger window, or set [context] in the config (docs/run.md)",
            ),
            _ => None,
        }
    }

    /// A reference error of our own wording, with no error under it.
    pub(crate) fn reference(what: impl Into<String>) -> Self {
        RunError::Reference {
            what: what.into(),
            source: None,
        }
    }

    /// A manifest error of our own wording, with no error under it.
    pub(crate) fn manifest(what: impl Into<String>) -> Self {
        RunError::Manifest {
            what: what.into(),
            source: None,
        }
    }

    /// `permissions.net.allow` does not parse: the entry, then why.
    pub(crate) fn net_allow(e: zot_policy::net::RuleError) -> Self {
        RunError::Manifest {
            what: format!("permissions.net.allow: {:?}", e.entry),
            source: Some(e.source.into()),
        }
    }

    /// An unenforced-permission error of our own wording, with no error
    /// under it.
    pub(crate) fn unenforced(what: impl Into<String>) -> Self {
        RunError::Unenforced {
            what: what.into(),
            source: None,
        }
    }

    /// A model error of our own wording, with no error under it.
    pub(crate) fn model(what: impl Into<String>) -> Self {
        RunError::Model {
            what: what.into(),
            source: None,
        }
    }

    /// A session error of our own wording, with no error under it.
    pub(crate) fn session(what: impl Into<String>) -> Self {
        RunError::Session {
            what: what.into(),
            source: None,
        }
    }

    /// A registry error of our own wording, with no error under it.
    pub(crate) fn registry(what: impl Into<String>) -> Self {
        RunError::Registry {
            what: what.into(),
            source: None,
        }
    }

    /// A store error of our own wording, with no error under it.
    pub(crate) fn store(what: impl Into<String>) -> Self {
        RunError::Store {
            what: what.into(),
            source: None,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        RunError::Io {
            what: what.into(),
            source,
        }
    }
}

/// The zot version this runtime satisfies `runtime.min_zot` with.
pub const ZOT_VERSION: &str = env!("CARGO_PKG_VERSION");
