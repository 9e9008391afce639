//! Pure data and decisions: manifest models and validation, permission
//! expansion, sandbox modes compiled to a [`sandbox::SandboxPolicy`], and the
//! shell risk gate, the user config file. Nothing in this crate touches the
//! system.

pub mod agent_toml;
pub mod config;
pub mod diagnostic;
pub mod env;
pub mod gate;
pub mod net;
pub mod limits;
pub mod sandbox;
pub mod skill;
mod strict_json;
mod validate;
pub mod zotfile;

pub use diagnostic::suggest;
