//! Everruns `agent.toml` packages (spec: agent-package.md): load a folder or
//! a ZIP into an [`AgentPackage`] with every rule and limit checked and all
//! diagnostics collected; export the canonical folder or ZIP; convert to and
//! from zotfiles.
//!
//! ```no_run
//! let pkg = zot_package::agent_toml::load(std::path::Path::new("./my-agent"))
//!     .map_err(|d| d.to_string())?;
//! println!("{} with {} files", pkg.name, pkg.files.len());
//! # Ok::<(), String>(())
//! ```

mod collect;
pub mod convert;
mod source;
mod zip;

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zot_policy::agent_toml::paths::{is_credential_path, is_glob};
use zot_policy::agent_toml::{
    is_reserved_root_name, to_toml, FileEntry, DEFAULT_INSTRUCTIONS_FILE, MANIFEST_NAMES,
    MAX_PACKAGE_BYTES,
};
pub use zot_policy::agent_toml::{Diagnostic, Diagnostics, Manifest, ModelRef};

use collect::{Collector, SKILLS_ROOT};
use source::{FsSource, MemSource};

/// Capabilities `zot run` provides itself. Others need a host implementation.
pub const LOCAL_CAPABILITIES: [&str; 2] = ["skills", "session_file_system"];

/// Where a package was loaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageKind {
    Directory,
    Zip,
}

/// A runtime file seeded into a session's working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeFile {
    /// Relative destination (`/`-separated, normalized, no `..`).
    pub dest: String,
    pub bytes: Vec<u8>,
    /// Read-only seeds must stay read-only in the sandbox.
    pub readonly: bool,
}

/// A bundled skill (lands at `.agents/skills/<name>/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Files relative to the skill folder, sorted; includes `SKILL.md`.
    pub files: Vec<SkillFile>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

impl Skill {
    /// The `SKILL.md` text.
    pub fn skill_md(&self) -> &str {
        self.files
            .iter()
            .find(|f| f.path == "SKILL.md")
            .and_then(|f| std::str::from_utf8(&f.bytes).ok())
            .unwrap_or("")
    }
}

/// A loaded, fully validated agent.toml package, held in memory.
#[derive(Debug, Clone)]
pub struct AgentPackage {
    pub source: PathBuf,
    pub kind: PackageKind,
    /// `agent.toml`, `agent.yaml`, ...
    pub manifest_file: String,
    pub manifest: Manifest,
    pub name: String,
    /// Instructions (inline, `instructions_file`, `instructions.md` or the
    /// agent.md body); empty when none.
    pub instructions: String,
    /// Sorted by destination.
    pub files: Vec<RuntimeFile>,
    /// Sorted by name.
    pub skills: Vec<Skill>,
}

/// How `zot run` must treat a declared feature it cannot provide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsupportedAction {
    /// Refuse to run: "requires a host implementation".
    Refuse,
    /// Run without it and print the note.
    Ignore,
}

/// A declared feature that the local runtime does not implement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unsupported {
    /// Manifest field path, e.g. `mcpServers.docs`.
    pub path: String,
    pub message: String,
    pub action: UnsupportedAction,
}

/// What `zot inspect` / `zot validate` print about a package.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub format: &'static str,
    pub kind: PackageKind,
    pub source: PathBuf,
    pub manifest_file: String,
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
    pub instructions_bytes: usize,
    pub files: Vec<FileSummary>,
    pub skills: Vec<String>,
    pub capabilities: Vec<String>,
    pub unsupported: Vec<Unsupported>,
    /// `sha256:<hex>` of the canonical ZIP export.
    pub digest: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileSummary {
    pub path: String,
    pub size: u64,
    pub readonly: bool,
}

/// The outcome of [`validate`]: everything known even when invalid.
#[derive(Debug, Clone)]
pub struct Report {
    /// The manifest name, when one could be read.
    pub name: Option<String>,
    /// Runtime files collected.
    pub files: usize,
    pub diagnostics: Diagnostics,
    /// Present exactly when `diagnostics` is empty.
    pub package: Option<AgentPackage>,
}

impl Report {
    pub fn valid(&self) -> bool {
        self.diagnostics.is_empty() && self.package.is_some()
    }
}

/// True when `path` looks like an agent.toml package: a folder with an
/// `agent.toml`/`agent.yaml`/`agent.yml`/`agent.json`/`agent.md` at its
/// root, or a ZIP file. Cheap: reads at most 4 bytes. Callers that also
/// accept zotfiles should check for `manifest.json` first.
pub fn detect(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => MANIFEST_NAMES
            .iter()
            .any(|(n, _)| fs::symlink_metadata(path.join(n)).is_ok_and(|m| m.is_file())),
        Ok(m) if m.is_file() => is_zip_file(path),
        _ => false,
    }
}

/// True when the file starts with a ZIP signature.
pub fn is_zip_file(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && (magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06")
}

/// Load and validate a package folder or ZIP.
pub fn load(path: &Path) -> Result<AgentPackage, Diagnostics> {
    let report = validate(path);
    match report.package {
        Some(p) if report.diagnostics.is_empty() => Ok(p),
        _ => Err(report.diagnostics),
    }
}

/// Validate a package folder or ZIP, collecting every diagnostic.
pub fn validate(path: &Path) -> Report {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return failed(format!("cannot open {}: {e}", path.display())),
    };
    if meta.file_type().is_symlink() {
        return failed(format!(
            "{} is a symlink; symlinks are not allowed",
            path.display()
        ));
    }
    if meta.is_dir() {
        let src = FsSource::new(path.to_path_buf());
        finish(path, PackageKind::Directory, Collector::new(&src))
    } else if meta.is_file() {
        if meta.len() > MAX_PACKAGE_BYTES {
            return failed(format!(
                "ZIP is larger than the 10 MiB package limit ({} bytes)",
                meta.len()
            ));
        }
        let mut bytes = Vec::new();
        if let Err(e) =
            fs::File::open(path).and_then(|f| f.take(MAX_PACKAGE_BYTES + 1).read_to_end(&mut bytes))
        {
            return failed(format!("cannot read {}: {e}", path.display()));
        }
        validate_zip_bytes(path, &bytes)
    } else {
        failed(format!(
            "{} is neither a folder nor a ZIP file",
            path.display()
        ))
    }
}

/// Validate a ZIP already in memory (`origin` is recorded as the source).
pub fn validate_zip_bytes(origin: &Path, bytes: &[u8]) -> Report {
    let src: MemSource = match zip::read_zip(bytes) {
        Ok(s) => s,
        Err(d) => {
            return Report {
                name: None,
                files: 0,
                diagnostics: d,
                package: None,
            }
        }
    };
    finish(origin, PackageKind::Zip, Collector::new(&src))
}

fn failed(msg: String) -> Report {
    let mut d = Diagnostics::new();
    d.push("", msg);
    Report {
        name: None,
        files: 0,
        diagnostics: d,
        package: None,
    }
}

fn finish(path: &Path, kind: PackageKind, c: Collector<'_>) -> Report {
    let (col, diags) = c.collect();
    let name = col
        .manifest
        .as_ref()
        .map(|m| m.name.clone())
        .filter(|n| !n.is_empty());
    let files = col.files.len();
    let package = match (col.manifest, col.manifest_file) {
        (Some(manifest), Some(manifest_file)) if diags.is_empty() => Some(AgentPackage {
            source: path.to_path_buf(),
            kind,
            manifest_file,
            name: manifest.name.clone(),
            manifest,
            instructions: col.instructions,
            files: col.files,
            skills: col.skills,
        }),
        _ => None,
    };
    Report {
        name,
        files,
        diagnostics: diags,
        package,
    }
}

impl AgentPackage {
    /// `[model]`, or `None`: `zot run` then uses the `sim` model.
    pub fn model(&self) -> Option<&ModelRef> {
        self.manifest.model.as_ref()
    }

    pub fn max_iterations(&self) -> Option<u32> {
        self.manifest.max_iterations
    }

    /// Declared capabilities plus `skills` when skills are bundled.
    pub fn capabilities(&self) -> Vec<String> {
        let mut caps: Vec<String> = self
            .manifest
            .capabilities
            .iter()
            .map(|c| c.name.clone())
            .collect();
        if !self.skills.is_empty() && !caps.iter().any(|c| c == "skills") {
            caps.push("skills".into());
        }
        caps
    }

    /// Declared features the local runtime does not implement: `Refuse`
    /// ones must stop `zot run`, `Ignore` ones are printed as notes.
    pub fn unsupported(&self) -> Vec<Unsupported> {
        let m = &self.manifest;
        let mut out = Vec::new();
        let refuse = |path: String, what: &str| Unsupported {
            path,
            message: format!("{what} requires a host implementation"),
            action: UnsupportedAction::Refuse,
        };
        for name in m.mcp_servers.keys() {
            out.push(refuse(
                format!("mcpServers.{name}"),
                &format!("MCP server `{name}`"),
            ));
        }
        for (i, t) in m.tools.iter().enumerate() {
            out.push(refuse(
                format!("tools[{i}]"),
                &format!("client-side tool `{}`", t.name),
            ));
        }
        for (i, c) in m.capabilities.iter().enumerate() {
            if !LOCAL_CAPABILITIES.contains(&c.name.as_str()) {
                out.push(refuse(
                    format!("capabilities[{i}]"),
                    &format!("capability `{}`", c.name),
                ));
            }
        }
        if m.sandbox_policy.is_some() {
            out.push(refuse(
                "sandbox_policy".into(),
                "the Platform sandbox policy",
            ));
        }
        if m.communication == Some(zot_policy::agent_toml::Communication::Explicit) {
            out.push(refuse(
                "communication".into(),
                "explicit communication (`send_message`)",
            ));
        }
        if !m.channels.is_empty() {
            out.push(Unsupported {
                path: "channels".into(),
                message: format!(
                    "{} channel(s) declared; channels are ignored for local runs",
                    m.channels.len()
                ),
                action: UnsupportedAction::Ignore,
            });
        }
        if let Some(h) = m.harness.as_deref() {
            out.push(Unsupported {
                path: "harness".into(),
                message: format!("harness `{h}` is not bound locally; zot's own agent loop runs"),
                action: UnsupportedAction::Ignore,
            });
        }
        if m.network_access.is_some() {
            out.push(Unsupported {
                path: "network_access".into(),
                message: "network_access is descriptive; local runs keep the sandbox network off"
                    .into(),
                action: UnsupportedAction::Ignore,
            });
        }
        if m.environments.is_some() {
            out.push(Unsupported {
                path: "environments".into(),
                message: "Platform environments are ignored for local runs".into(),
                action: UnsupportedAction::Ignore,
            });
        }
        out
    }

    /// The canonical export as `(path, bytes)`, sorted: `agent.toml`,
    /// `instructions.md` when there are instructions, runtime files at their
    /// destinations (reserved, hidden, credential-like or glob-like
    /// destinations inline in the manifest), skills under `.agents/skills/`.
    pub fn export_entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut m = self.manifest.clone();
        m.schema_version = Some(1);
        m.instructions = None;
        m.instructions_file = None;
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        if !self.instructions.is_empty() {
            entries.push((
                DEFAULT_INSTRUCTIONS_FILE.to_string(),
                self.instructions.clone().into_bytes(),
            ));
        }
        let mut decls = Vec::new();
        for f in &self.files {
            let first = f.dest.split('/').next().unwrap_or("");
            let inline = is_reserved_root_name(first)
                || first == ".agents"
                || first == "skills"
                || is_credential_path(&f.dest)
                || is_glob(&f.dest);
            if inline {
                decls.push(FileEntry::Inline {
                    dest: f.dest.clone(),
                    content: f.bytes.clone(),
                    readonly: f.readonly,
                    base64: std::str::from_utf8(&f.bytes).is_err(),
                });
            } else {
                decls.push(FileEntry::Select {
                    source: f.dest.clone(),
                    dest: None,
                    readonly: f.readonly,
                });
                entries.push((f.dest.clone(), f.bytes.clone()));
            }
        }
        m.files = Some(decls);
        m.skills = Some(if self.skills.is_empty() {
            Vec::new()
        } else {
            vec![SKILLS_ROOT.to_string()]
        });
        for s in &self.skills {
            for f in &s.files {
                entries.push((
                    format!("{SKILLS_ROOT}/{}/{}", s.name, f.path),
                    f.bytes.clone(),
                ));
            }
        }
        entries.push(("agent.toml".to_string(), to_toml(&m).into_bytes()));
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    /// The canonical manifest text of [`AgentPackage::export_entries`].
    pub fn canonical_manifest(&self) -> String {
        self.export_entries()
            .into_iter()
            .find(|(p, _)| p == "agent.toml")
            .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The canonical export as deterministic ZIP bytes.
    pub fn to_zip_bytes(&self) -> io::Result<Vec<u8>> {
        zip::write_zip(&self.export_entries())
    }

    /// `sha256:<hex>` of [`AgentPackage::to_zip_bytes`]: stable across
    /// folder and ZIP forms of the same package.
    pub fn digest(&self) -> String {
        let bytes = self.to_zip_bytes().unwrap_or_default();
        format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
    }

    /// Write the canonical ZIP to `out` (temp file + rename: a failure
    /// leaves nothing behind).
    pub fn write_zip(&self, out: &Path) -> io::Result<()> {
        let bytes = self.to_zip_bytes()?;
        write_file_atomic(out, &bytes)
    }

    /// Write the canonical folder to `out`, which must not exist or be an
    /// empty folder.
    pub fn write_dir(&self, out: &Path) -> io::Result<()> {
        write_tree(&self.export_entries(), out)
    }

    pub fn summary(&self) -> Summary {
        Summary {
            format: "agent.toml",
            kind: self.kind,
            source: self.source.clone(),
            manifest_file: self.manifest_file.clone(),
            name: self.name.clone(),
            display_name: self.manifest.display_name.clone(),
            description: self.manifest.description.clone(),
            model: self.model().map(|m| format!("{}/{}", m.provider, m.model)),
            max_iterations: self.max_iterations(),
            instructions_bytes: self.instructions.len(),
            files: self
                .files
                .iter()
                .map(|f| FileSummary {
                    path: f.dest.clone(),
                    size: f.bytes.len() as u64,
                    readonly: f.readonly,
                })
                .collect(),
            skills: self.skills.iter().map(|s| s.name.clone()).collect(),
            capabilities: self.capabilities(),
            unsupported: self.unsupported(),
            digest: self.digest(),
        }
    }

    /// Seed a session directory: every runtime file at its destination,
    /// read-only seeds with mode 0444 (the sandbox must still mount them
    /// read-only: file modes do not stop an owner). `dir` must exist.
    pub fn seed_files(&self, dir: &Path) -> io::Result<()> {
        for f in &self.files {
            let target = dir.join(&f.dest);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(&target, &f.bytes)?;
            let mode = if f.readonly { 0o444 } else { 0o644 };
            fs::set_permissions(&target, fs::Permissions::from_mode(mode))?;
        }
        Ok(())
    }
}

impl AgentPackage {
    /// Write the bundled skills under `dir/.agents/skills/<name>/`, where
    /// skill discovery finds them. `dir` must exist.
    pub fn seed_skills(&self, dir: &Path) -> io::Result<()> {
        for s in &self.skills {
            for f in &s.files {
                let target = dir.join(SKILLS_ROOT).join(&s.name).join(&f.path);
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent)?;
                }
                fs::write(&target, &f.bytes)?;
            }
        }
        Ok(())
    }
}

/// Write `bytes` to `out` through a sibling temp file renamed into place.
pub(crate) fn write_file_atomic(out: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".zot-export-")
        .tempfile_in(&parent)?;
    io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    tmp.persist(out).map_err(|e| e.error)?;
    Ok(())
}

/// Write `(path, bytes)` entries as a new folder `out` (must not exist or
/// be empty), built in a sibling temp folder and renamed into place.
pub fn write_tree(entries: &[(String, Vec<u8>)], out: &Path) -> io::Result<()> {
    match fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => {
            if fs::read_dir(out)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is not empty", out.display()),
                ));
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", out.display()),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".zot-export-")
        .tempdir_in(&parent)?;
    for (path, bytes) in entries {
        // Entries come from validated packages; check again before writing.
        if zot_policy::agent_toml::paths::check_relative(path, false).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unsafe path {path:?}"),
            ));
        }
        let target = tmp.path().join(path);
        if let Some(p) = target.parent() {
            fs::create_dir_all(p)?;
        }
        fs::write(&target, bytes)?;
    }
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755))?;
    fs::rename(tmp.path(), out)?;
    let _ = tmp.keep();
    Ok(())
}
