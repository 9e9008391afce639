//! The `agent.toml` package manifest (spec: agent-package.md): model,
//! parsing of every accepted encoding (TOML, YAML, JSON, Markdown with YAML
//! front matter), and validation of every field rule. Validation collects all
//! diagnostics instead of stopping at the first one.
//!
//! This module is pure: it never touches the file system. Folder and ZIP
//! collection (files, skills, limits on bytes read) live in
//! `zot_package::agent_toml`, which uses the path and credential rules
//! exported here.

mod emit;
mod model;
mod parse;
pub mod paths;
pub mod secrets;

pub use crate::skill::{parse_skill_front_matter, SkillFrontMatter};
pub use emit::to_toml;
pub use model::*;
pub use parse::{check_manifest, parse_manifest};

use std::fmt;

/// Package size limit: all bytes read for one package.
pub const MAX_PACKAGE_BYTES: u64 = 10 * 1024 * 1024;
/// Runtime files (the `files` selection) in one package.
pub const MAX_RUNTIME_FILES: usize = 100;
/// One asset, one runtime file, or the instructions.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Total decoded runtime file content.
pub const MAX_TOTAL_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// Channel descriptions.
pub const MAX_CHANNELS: usize = 32;
/// Folder nesting levels below the package root.
pub const MAX_NESTING: usize = 32;
/// Directory entries visited while collecting one package.
pub const MAX_VISITED: usize = 1024;

/// Manifest file names accepted at a package root, with their encoding.
pub const MANIFEST_NAMES: [(&str, ManifestFormat); 5] = [
    ("agent.toml", ManifestFormat::Toml),
    ("agent.yaml", ManifestFormat::Yaml),
    ("agent.yml", ManifestFormat::Yaml),
    ("agent.json", ManifestFormat::Json),
    ("agent.md", ManifestFormat::Markdown),
];

/// File name read for instructions when neither `instructions` nor
/// `instructions_file` is given.
pub const DEFAULT_INSTRUCTIONS_FILE: &str = "instructions.md";

/// Names that an export never writes as runtime files (they would be read
/// back as authoring metadata): the manifests and the default instructions.
pub fn is_reserved_root_name(dest: &str) -> bool {
    dest == DEFAULT_INSTRUCTIONS_FILE || MANIFEST_NAMES.iter().any(|(n, _)| *n == dest)
}

/// The encoding of a manifest file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestFormat {
    Toml,
    Yaml,
    Json,
    /// Markdown with YAML front matter; the body becomes the instructions.
    Markdown,
}

impl ManifestFormat {
    /// The format for a manifest file name, if it is one.
    pub fn from_file_name(name: &str) -> Option<Self> {
        MANIFEST_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }
}

pub use crate::diagnostic::Diagnostic;

/// All findings of one validation run, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a finding.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Diagnostic {
            path: path.into(),
            message: message.into(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// True when some finding's path or message contains `needle`.
    pub fn mentions(&self, needle: &str) -> bool {
        self.0
            .iter()
            .any(|d| d.path.contains(needle) || d.message.contains(needle))
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
