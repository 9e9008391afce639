//! Loading a directory or an archive into an [`Agent`].

use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::agent::{file_list, file_list_tree, Agent, SourceKind};
use crate::checks::{archive_err, check_archive, check_compressed_size, load_dir};
use crate::digest::digest_entries;
use crate::extract::extract_reader;
use crate::manifest::read_dir_manifest;
use crate::{Limits, PackageError};

/// Load a directory or a `.zot` archive (zstd, or gzip fallback, sniffed
/// from the content, not the name). Archives are extracted into a fresh
/// private temp dir, removed when the returned [`Agent`] is dropped.
pub fn open(path: &Path) -> Result<Agent, PackageError> {
    open_with(path, &Limits::DEFAULT)
}

/// [`open`] with explicit limits.
pub fn open_with(path: &Path, limits: &Limits) -> Result<Agent, PackageError> {
    open_into(path, limits, None)
}

/// [`open_with`], extracting an archive into `dir`: an existing, empty,
/// private directory that the caller owns and removes (a directory agent
/// is read in place and `dir` stays empty).
pub fn open_in(path: &Path, limits: &Limits, dir: &Path) -> Result<Agent, PackageError> {
    open_into(path, limits, Some(dir))
}

fn open_into(path: &Path, limits: &Limits, into: Option<&Path>) -> Result<Agent, PackageError> {
    let meta = fs::metadata(path).map_err(PackageError::io("opening", path))?;
    if meta.is_dir() {
        let (root, entries) = load_dir(path, limits)?;
        let (manifest, mut warnings) = read_dir_manifest(&root)?;
        let digest = digest_entries(&entries)?;
        warnings.sort();
        let mut agent = Agent {
            root,
            source: path.to_path_buf(),
            kind: SourceKind::Directory,
            manifest,
            digest,
            files: file_list_tree(&entries),
            warnings,
            _temp: None,
        };
        let mut w = Vec::new();
        agent.extensions(&mut w)?;
        agent.warnings.extend(w);
        Ok(agent)
    } else if meta.is_file() {
        check_compressed_size(path, meta.len(), limits)?;
        let (root, temp) = match into {
            Some(d) => (d.to_path_buf(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("zot-agent-")
                    .tempdir()
                    .map_err(PackageError::io(
                        "creating a temporary directory in",
                        std::env::temp_dir(),
                    ))?;
                fs::set_permissions(t.path(), fs::Permissions::from_mode(0o700))
                    .map_err(PackageError::io("securing", t.path()))?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let file = File::open(path).map_err(PackageError::io("opening", path))?;
        let ex = extract_reader(file, &root, limits).map_err(|e| archive_err(path, e))?;
        let (manifest, warnings) = check_archive(path, &ex)?;
        let mut agent = Agent {
            root,
            source: path.to_path_buf(),
            kind: SourceKind::Archive,
            manifest,
            digest: ex.digest.clone(),
            files: file_list(&ex.entries),
            warnings,
            _temp: temp,
        };
        let mut w = Vec::new();
        agent.extensions(&mut w)?;
        agent.warnings.extend(w);
        Ok(agent)
    } else {
        Err(PackageError::NotAnAgent {
            path: path.to_path_buf(),
        })
    }
}
