//! Extracting an archive into a directory, all or nothing.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::checks::{archive_err, check_archive, check_compressed_size};
use crate::extract::extract_reader;
use crate::inspect::{archive_summary, Summary};
use crate::{Limits, PackageError};

/// Extract `archive` into `dest` with the loader's safety and checks
/// (layout and manifest included). `dest` must not exist or be an empty
/// directory; extraction happens in a private sibling temp dir renamed into
/// place at the end, so a bad archive changes nothing.
pub fn unpack(archive: &Path, dest: &Path) -> Result<Summary, PackageError> {
    match fs::symlink_metadata(dest) {
        Ok(m) if m.is_dir() => {
            let mut rd = fs::read_dir(dest).map_err(PackageError::io("reading", dest))?;
            if rd.next().is_some() {
                return Err(PackageError::DestinationNotEmpty {
                    path: dest.to_path_buf(),
                });
            }
        }
        Ok(_) => {
            return Err(PackageError::DestinationNotEmpty {
                path: dest.to_path_buf(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(PackageError::Io {
                action: "reading",
                path: dest.to_path_buf(),
                source: e,
            })
        }
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let limits = Limits::DEFAULT;
    let meta = fs::metadata(archive).map_err(PackageError::io("opening", archive))?;
    if !meta.is_file() {
        return Err(PackageError::NotAnAgent {
            path: archive.to_path_buf(),
        });
    }
    check_compressed_size(archive, meta.len(), &limits)?;
    let temp = tempfile::Builder::new()
        .prefix(".zot-unpack-")
        .tempdir_in(&parent)
        .map_err(PackageError::io(
            "creating a temporary directory in",
            &parent,
        ))?;
    let file = File::open(archive).map_err(PackageError::io("opening", archive))?;
    let ex = extract_reader(file, temp.path(), &limits).map_err(|e| archive_err(archive, e))?;
    let (manifest, warnings) = check_archive(archive, &ex)?;
    fs::set_permissions(temp.path(), fs::Permissions::from_mode(0o755))
        .map_err(PackageError::io("writing", temp.path()))?;
    // rename(2) replaces an empty directory atomically.
    fs::rename(temp.path(), dest).map_err(PackageError::io("renaming into", dest))?;
    let _ = temp.keep();
    Ok(archive_summary(archive, ex, manifest, warnings))
}
