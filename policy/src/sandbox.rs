//! Sandbox modes and the [`SandboxPolicy`] they compile to. Pure data: no
//! syscalls here (path canonicalization is done by the caller and passed in).
//!
//! CONTRACT (shared by the sandbox core, the native/landlock backends and
//! `zot run`): the type names and fields below are relied upon by other
//! crates. Extend them; do not rename them without updating every user.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The three sandbox modes of `zot sandbox --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// What the sandboxed program may see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadScope {
    /// The whole disk, minus `deny_read`.
    FullDisk,
    /// Only these paths (platform dirs, `fs.read` scopes), each read-only,
    /// plus the write roots. Used for zotfile agents.
    Restricted { paths: Vec<PathBuf> },
}

/// Network policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPolicy {
    /// No network at all (own empty network namespace / seccomp denial of
    /// non-AF_UNIX sockets).
    Off,
    /// Host network.
    On,
}

/// Environment policy: the launcher starts from an empty environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Variables copied from the caller's environment when present (the base
    /// set plus what the user or manifest allowed). Secrets never pass unless
    /// named here explicitly.
    pub keep: Vec<String>,
    /// Variables set to fixed values (e.g. `TMPDIR=/tmp`, `HOME`).
    pub set: Vec<(String, String)>,
}

/// Everything a backend needs to build the sandbox. All paths absolute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Working directory inside the sandbox.
    pub cwd: PathBuf,
    pub read: ReadScope,
    /// Writable roots (canonical), sorted by depth.
    pub write_roots: Vec<PathBuf>,
    /// Paths inside write roots that stay read-only, whether or not they
    /// exist yet (e.g. `<root>/.git/hooks`).
    pub protected: Vec<PathBuf>,
    /// Paths that must be unreadable (masked).
    pub deny_read: Vec<PathBuf>,
    pub network: NetworkPolicy,
    pub env: EnvPolicy,
}
