//! The checks a directory or an archive passes to be an agent: its size,
//! its layout, its manifest.

use std::path::{Path, PathBuf};

use zot_policy::zotfile::{Manifest, AGENT_FILE, MANIFEST_FILE};

use crate::extract::{EntryKind, Extracted};
use crate::manifest::parse_manifest;
use crate::{tree, ArchiveError, Limits, PackageError, MAX_MANIFEST_SIZE};

pub(crate) fn archive_err(path: &Path, source: ArchiveError) -> PackageError {
    PackageError::Archive {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuse an archive file larger than the compressed limit before reading it.
pub(crate) fn check_compressed_size(
    path: &Path,
    len: u64,
    limits: &Limits,
) -> Result<(), PackageError> {
    if len > limits.compressed {
        return Err(archive_err(
            path,
            ArchiveError::CompressedTooLarge {
                limit: limits.compressed,
            },
        ));
    }
    Ok(())
}

pub(crate) fn load_dir(
    path: &Path,
    limits: &Limits,
) -> Result<(PathBuf, Vec<tree::TreeEntry>), PackageError> {
    let root = path
        .canonicalize()
        .map_err(PackageError::io("resolving", path))?;
    let entries = tree::walk(&root, None, limits)?;
    check_tree_layout(&root, &entries)?;
    Ok((root, entries))
}

/// Layout rules shared by directories and archives.
fn check_layout<'a>(
    source: &Path,
    entries: impl Iterator<Item = (&'a str, EntryKind)>,
) -> Result<(), PackageError> {
    let mut manifest_ok = false;
    for (path, kind) in entries {
        if path == MANIFEST_FILE || path == AGENT_FILE {
            if kind != EntryKind::File {
                return Err(PackageError::NotRegular {
                    path: source.to_path_buf(),
                    entry: path.to_string(),
                });
            }
            manifest_ok |= path == MANIFEST_FILE;
        }
    }
    if !manifest_ok {
        return Err(PackageError::MissingManifest {
            path: source.to_path_buf(),
        });
    }
    Ok(())
}

pub(crate) fn check_tree_layout(
    root: &Path,
    entries: &[tree::TreeEntry],
) -> Result<(), PackageError> {
    check_layout(
        root,
        entries.iter().map(|e| {
            (
                e.rel.as_str(),
                if matches!(e.kind, tree::TreeKind::Dir) {
                    EntryKind::Directory
                } else {
                    EntryKind::File
                },
            )
        }),
    )
}

/// Layout + manifest checks on a streamed archive.
pub(crate) fn check_archive(
    path: &Path,
    ex: &Extracted,
) -> Result<(Manifest, Vec<String>), PackageError> {
    check_layout(path, ex.entries.iter().map(|e| (e.path.as_str(), e.kind)))?;
    let Some(bytes) = ex.manifest.as_deref() else {
        return Err(PackageError::ManifestTooLarge {
            path: path.join(MANIFEST_FILE),
            limit: MAX_MANIFEST_SIZE,
        });
    };
    let (manifest, mut warnings) = parse_manifest(&path.join(MANIFEST_FILE), bytes)?;
    for e in &ex.entries {
        if let Some(t) = e.ignored_type {
            warnings.push(format!(
                "ignored {t} entry {:?} (only regular files and directories are extracted)",
                e.path
            ));
        }
    }
    Ok((manifest, warnings))
}
