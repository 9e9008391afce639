//! Describing a directory or an archive without extracting it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use zot_policy::zotfile::Manifest;

use crate::agent::{file_list, SourceKind};
use crate::checks::{archive_err, check_archive, check_compressed_size, load_dir};
use crate::digest::digest_entries;
use crate::extract::{validate_reader, EntryInfo, EntryKind, Extracted};
use crate::manifest::read_dir_manifest;
use crate::{tree, Limits, PackageError};

/// What [`inspect`] (and `zot verify`) learned, without materializing
/// anything.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub source: PathBuf,
    pub kind: SourceKind,
    pub manifest: Manifest,
    pub digest: String,
    /// Every entry (directories, files, ignored entries), sorted by path.
    pub entries: Vec<EntryInfo>,
    /// Regular files only, sorted.
    pub files: Vec<String>,
    pub warnings: Vec<String>,
    /// Sum of the files' sizes.
    pub total_size: u64,
    /// Archive size on disk (archives only).
    pub compressed_size: Option<u64>,
    /// `zstd` or `gzip` (archives only).
    pub compression: Option<&'static str>,
}

/// Validate a directory or archive and describe it, without extracting
/// anything to disk (archives are checked while streaming).
pub fn inspect(path: &Path) -> Result<Summary, PackageError> {
    inspect_with(path, &Limits::DEFAULT)
}

/// [`inspect`] with explicit limits.
pub fn inspect_with(path: &Path, limits: &Limits) -> Result<Summary, PackageError> {
    let meta = fs::metadata(path).map_err(PackageError::io("opening", path))?;
    if meta.is_dir() {
        let (root, entries) = load_dir(path, limits)?;
        let (manifest, mut warnings) = read_dir_manifest(&root)?;
        let digest = digest_entries(&entries)?;
        warnings.sort();
        let infos: Vec<EntryInfo> = entries
            .iter()
            .map(|e| match e.kind {
                tree::TreeKind::Dir => EntryInfo {
                    path: e.rel.clone(),
                    kind: EntryKind::Directory,
                    size: 0,
                    executable: false,
                    ignored_type: None,
                },
                tree::TreeKind::File { size, executable } => EntryInfo {
                    path: e.rel.clone(),
                    kind: EntryKind::File,
                    size,
                    executable,
                    ignored_type: None,
                },
            })
            .collect();
        Ok(Summary {
            source: path.to_path_buf(),
            kind: SourceKind::Directory,
            manifest,
            digest,
            files: file_list(&infos),
            total_size: infos.iter().map(|e| e.size).sum(),
            entries: infos,
            warnings,
            compressed_size: None,
            compression: None,
        })
    } else if meta.is_file() {
        check_compressed_size(path, meta.len(), limits)?;
        let file = File::open(path).map_err(PackageError::io("opening", path))?;
        let ex = validate_reader(file, limits).map_err(|e| archive_err(path, e))?;
        let (manifest, warnings) = check_archive(path, &ex)?;
        Ok(archive_summary(path, ex, manifest, warnings))
    } else {
        Err(PackageError::NotAnAgent {
            path: path.to_path_buf(),
        })
    }
}

/// The summary of a validated (or extracted) archive, entries sorted bytewise.
pub(crate) fn archive_summary(
    path: &Path,
    ex: Extracted,
    manifest: Manifest,
    warnings: Vec<String>,
) -> Summary {
    let mut entries = ex.entries;
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Summary {
        source: path.to_path_buf(),
        kind: SourceKind::Archive,
        manifest,
        digest: ex.digest,
        files: file_list(&entries),
        entries,
        warnings,
        total_size: ex.total_size,
        compressed_size: Some(ex.compressed_size),
        compression: Some(ex.compression.name()),
    }
}
