//! The validated manifest. Legacy aliases are already resolved here
//! (`system_prompt` -> `instructions`, `initial_files` -> `files`,
//! `harness_name` -> `harness`, `mcp_servers` -> `mcp_servers`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A validated `agent.toml` manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// `1`, or `None` for an unversioned legacy definition.
    pub schema_version: Option<i64>,
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// Inline instructions (or the body of a Markdown manifest).
    pub instructions: Option<String>,
    /// Package-relative instructions source.
    pub instructions_file: Option<String>,
    pub tags: Vec<String>,
    pub model: Option<ModelRef>,
    pub harness: Option<String>,
    pub capabilities: Vec<Capability>,
    /// `None` when the key is absent (legacy `files/` discovery applies).
    pub files: Option<Vec<FileEntry>>,
    /// `None` when absent: `.agents/skills/` (or legacy `skills/`) is discovered.
    pub skills: Option<Vec<String>>,
    pub mcp_servers: BTreeMap<String, McpServer>,
    pub channels: BTreeMap<String, Channel>,
    pub network_access: Option<NetworkAccess>,
    pub max_iterations: Option<u32>,
    pub parallel_tool_calls: Option<bool>,
    pub communication: Option<Communication>,
    pub tools: Vec<Tool>,
    pub intro_markdown: Option<String>,
    pub short_description: Option<String>,
    pub starters: Vec<Starter>,
    pub environments: Option<Map<String, Value>>,
    /// Platform sandbox policy: kept, but no local host binds it.
    pub sandbox_policy: Option<Value>,
}

/// `[model]`: a provider/model name pair resolved by the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

/// A capability: a stable name, optionally with a configuration object.
#[derive(Debug, Clone, PartialEq)]
pub struct Capability {
    pub name: String,
    /// `Some` when written as `{ ref, config }` (config defaults to `{}`).
    pub config: Option<Map<String, Value>>,
}

/// One `files` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEntry {
    /// A source file, directory or glob, optionally mapped elsewhere.
    Select {
        /// Safe relative source (`.` selects the root).
        source: String,
        /// Normalized destination (aliases stripped), if mapped.
        dest: Option<String>,
        /// Default `true`.
        readonly: bool,
    },
    /// Inline content.
    Inline {
        /// Normalized destination.
        dest: String,
        /// Decoded bytes.
        content: Vec<u8>,
        /// Default `false`.
        readonly: bool,
        /// Written as `encoding = "base64"`.
        base64: bool,
    },
}

/// How an MCP server is provided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpKind {
    /// `use = "catalog:<name>"`.
    Catalog(String),
    Http {
        url: String,
    },
    Stdio {
        command: String,
        args: Vec<String>,
    },
}

/// A named MCP server declaration; `raw` holds the validated table as written.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub kind: McpKind,
    pub raw: Map<String, Value>,
}

/// A named channel description.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub kind: String,
    pub enabled: bool,
    pub raw: Map<String, Value>,
}

/// `[network_access]`: URL patterns; `blocked` wins; empty `allowed` means
/// no allowlist restriction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkAccess {
    pub allowed: Vec<String>,
    pub blocked: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Communication {
    Direct,
    Explicit,
}

impl Communication {
    pub fn as_str(self) -> &'static str {
        match self {
            Communication::Direct => "direct",
            Communication::Explicit => "explicit",
        }
    }
}

/// A client-side tool declaration; `raw` holds the validated table.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub raw: Map<String, Value>,
}

/// A Platform conversation starter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    pub text: String,
    pub icon: Option<String>,
}

/// Channel transports the spec knows.
pub const CHANNEL_TYPES: [&str; 8] = [
    "ag_ui",
    "public_chat",
    "slack",
    "fcp",
    "a2a",
    "api",
    "schedule",
    "webhook",
];

/// Harness names the framework recognizes (others need a host binding).
pub const KNOWN_HARNESSES: [&str; 5] = [
    "base",
    "conversation",
    "worker",
    "bashkit-worker",
    "worker-base",
];
