//! Reading and parsing `manifest.json`.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use zot_policy::zotfile::{self, Manifest, MANIFEST_FILE};

use crate::{PackageError, MAX_MANIFEST_SIZE};

pub(crate) fn parse_manifest(
    path: &Path,
    bytes: &[u8],
) -> Result<(Manifest, Vec<String>), PackageError> {
    let parsed = zotfile::parse(bytes).map_err(|source| PackageError::Manifest {
        path: path.to_path_buf(),
        source,
    })?;
    let warnings = parsed
        .warnings
        .iter()
        .map(|w| format!("{MANIFEST_FILE}: {w}"))
        .collect();
    Ok((parsed.manifest, warnings))
}

pub(crate) fn read_dir_manifest(root: &Path) -> Result<(Manifest, Vec<String>), PackageError> {
    let path = root.join(MANIFEST_FILE);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PackageError::MissingManifest {
                path: root.to_path_buf(),
            })
        }
        Err(e) => {
            return Err(PackageError::Io {
                action: "reading",
                path,
                source: e,
            })
        }
    };
    if meta.file_type().is_symlink() {
        return Err(PackageError::Symlink { path });
    }
    if !meta.is_file() {
        return Err(PackageError::NotRegular {
            path: root.to_path_buf(),
            entry: MANIFEST_FILE.into(),
        });
    }
    if meta.len() > MAX_MANIFEST_SIZE {
        return Err(PackageError::ManifestTooLarge {
            path,
            limit: MAX_MANIFEST_SIZE,
        });
    }
    let mut bytes = Vec::new();
    File::open(&path)
        .and_then(|f| f.take(MAX_MANIFEST_SIZE + 1).read_to_end(&mut bytes))
        .map_err(PackageError::io("reading", &path))?;
    if bytes.len() as u64 > MAX_MANIFEST_SIZE {
        return Err(PackageError::ManifestTooLarge {
            path,
            limit: MAX_MANIFEST_SIZE,
        });
    }
    parse_manifest(&path, &bytes)
}
