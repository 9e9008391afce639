//! A loaded agent: its files, bundled extensions and skills.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use zot_policy::zotfile::{Manifest, AGENT_FILE};

use crate::extract::{EntryInfo, EntryKind};
use crate::{tree, PackageError};

/// Where an agent came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Directory,
    Archive,
}

/// A loaded, validated agent whose files are on disk under `root`.
#[derive(Debug)]
pub struct Agent {
    /// The source directory (canonical), or the private extraction dir
    /// (mode 0700, removed when this `Agent` is dropped).
    pub root: PathBuf,
    /// The path the agent was opened from.
    pub source: PathBuf,
    pub kind: SourceKind,
    pub manifest: Manifest,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Regular files, sorted, `/`-separated relative paths.
    pub files: Vec<String>,
    /// Manifest warnings and ignored archive entries, human-readable.
    pub warnings: Vec<String>,
    pub(crate) _temp: Option<tempfile::TempDir>,
}

impl Agent {
    /// `AGENT.md`'s contents, when present.
    pub fn agent_md(&self) -> io::Result<Option<String>> {
        match fs::read_to_string(self.root.join(AGENT_FILE)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A bundled extension: its directory under `extensions/` and its
/// checked `extension.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BundledExtension {
    /// `<dir>` of `extensions/<dir>/extension.json`.
    pub dir: String,
    pub manifest: zot_policy::zotfile::extension::ExtensionManifest,
}

impl Agent {
    /// The bundled extensions (`extensions/<dir>/extension.json`), sorted
    /// by directory, each manifest checked (see
    /// [`zot_policy::zotfile::extension::parse`]); two with one name are
    /// refused. Warnings (unknown fields) are added to `warnings`.
    pub fn extensions(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<BundledExtension>, PackageError> {
        read_extensions(&self.root, &self.files, warnings)
    }
}

/// The bundled extensions of the files `files` under `root` (see
/// [`Agent::extensions`]).
pub(crate) fn read_extensions(
    root: &Path,
    files: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<BundledExtension>, PackageError> {
    {
        use zot_policy::zotfile::extension as ext;
        let mut out: Vec<BundledExtension> = Vec::new();
        for f in files {
            let Some(dir) = ext::manifest_dir(f) else {
                continue;
            };
            let bad = |message: String| PackageError::InvalidExtension {
                entry: f.clone(),
                message,
            };
            let bytes = fs::read(root.join(f)).map_err(|e| bad(format!("cannot read: {e}")))?;
            let (manifest, w) = ext::parse(&bytes).map_err(bad)?;
            warnings.extend(w.into_iter().map(|w| format!("{f}: {w}")));
            if let Some(other) = out.iter().find(|e| e.manifest.name == manifest.name) {
                return Err(bad(format!(
                    "name: {:?} is also the name of extensions/{}",
                    manifest.name, other.dir
                )));
            }
            out.push(BundledExtension {
                dir: dir.to_string(),
                manifest,
            });
        }
        out.sort_by(|a, b| a.dir.cmp(&b.dir));
        Ok(out)
    }
}

/// Directory of bundled skills in a zotfile agent.
pub const SKILLS_DIR: &str = "skills";

impl Agent {
    /// Problems with the bundled skills (`skills/<name>/SKILL.md`): front
    /// matter missing or invalid, or a `name` that differs from the folder.
    /// Each is named by the file's path in the package.
    pub fn skill_problems(&self) -> Vec<zot_policy::zotfile::Diagnostic> {
        use zot_policy::skill::parse_skill_front_matter;
        let mut out = Vec::new();
        let mut dirs: Vec<&str> = self
            .files
            .iter()
            .filter_map(|f| f.strip_prefix(SKILLS_DIR)?.strip_prefix('/'))
            .filter_map(|rest| rest.split_once('/').map(|(dir, _)| dir))
            .collect();
        dirs.dedup();
        for dir in dirs {
            let rel = format!("{SKILLS_DIR}/{dir}/SKILL.md");
            let problem = if !self.files.contains(&rel) {
                Some("missing SKILL.md".to_string())
            } else {
                match fs::read_to_string(self.root.join(&rel)) {
                    Err(e) => Some(format!("cannot read: {e}")),
                    Ok(text) => match parse_skill_front_matter(&text) {
                        Err(e) => Some(e),
                        Ok(fm) if fm.name != dir => Some(format!(
                            "front matter name `{}` does not match the folder name `{dir}`",
                            fm.name
                        )),
                        Ok(_) => None,
                    },
                }
            };
            if let Some(message) = problem {
                out.push(zot_policy::zotfile::Diagnostic { path: rel, message });
            }
        }
        out
    }
}

pub(crate) fn file_list_tree(entries: &[tree::TreeEntry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| matches!(e.kind, tree::TreeKind::File { .. }))
        .map(|e| e.rel.clone())
        .collect()
}

pub(crate) fn file_list(entries: &[EntryInfo]) -> Vec<String> {
    let mut v: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| e.path.clone())
        .collect();
    v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    v
}
