//! `zot run`: references, consent, requirements, model catalog, simulator,
//! tools, sessions and output modes.
//!
//! The flow of one run (see [`runtime::run`]): resolve the reference ->
//! refuse unenforced permissions -> check requirements -> create the agent
//! data dir -> consent -> select the model -> system prompt and skills ->
//! session -> `entry.pre` -> turns. Dependencies on the package loader, the
//! risk gate and the supervisor all go through [`deps`].

pub mod consent;
pub mod deps;
pub mod events;
pub mod fsscope;
pub mod home;
pub mod message;
pub mod models;
pub mod perms;
pub mod prompt;
pub mod reference;
pub mod requirements;
pub mod runtime;
pub mod session;
pub mod sim;
pub mod term;
pub mod tools;
pub mod trust;

pub use runtime::{compile_policy, run, OutputMode, RunOptions, SessionChoice};

/// Errors of `zot run`. Messages are lowercase and name what failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("reference: {0}")]
    Reference(String),
    #[error("loading the agent")]
    Package(#[source] zot_package::PackageError),
    #[error("manifest: {0}")]
    Manifest(String),
    #[error("{0}")]
    Unenforced(String),
    #[error("requirement not met: {0}")]
    Requirement(String),
    #[error("zot home: {0}")]
    Home(String),
    #[error("consent: {0}")]
    Consent(String),
    #[error("model: {0}")]
    Model(String),
    #[error("session: {0}")]
    Session(String),
    #[error("sandbox: {0}")]
    Sandbox(String),
    #[error("entry.pre: {0}")]
    Pre(String),
    #[error("{0}")]
    Usage(String),
    #[error("signature: {0}")]
    Signature(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        RunError::Io {
            what: what.into(),
            source,
        }
    }
}

/// The zot version this runtime satisfies `runtime.min_zot` with.
pub const ZOT_VERSION: &str = env!("CARGO_PKG_VERSION");
