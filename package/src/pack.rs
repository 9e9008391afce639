//! Packing a directory into a deterministic `.zot` archive.

use std::fs;
use std::io::BufWriter;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::agent::{file_list_tree, read_extensions};
use crate::checks::check_tree_layout;
use crate::digest::HashWriter;
use crate::manifest::read_dir_manifest;
use crate::secrets::credential_files;
use crate::{output, tree, Limits, PackageError};

/// zstd level used by [`pack`].
pub const ZSTD_LEVEL: i32 = 3;
/// zstd worker threads used by [`pack`]. Fixed, so the output never depends
/// on the machine (zstd's multithreaded output depends only on the
/// parameters, and a fixed count keeps that true across zstd versions).
pub const ZSTD_WORKERS: u32 = 2;

/// The result of [`pack`].
#[derive(Debug, Clone)]
pub struct PackOutcome {
    /// Where the archive was written.
    pub out: PathBuf,
    /// `sha256:<hex>` of the archive bytes.
    pub digest: String,
    pub size: u64,
    pub files: usize,
    /// Manifest warnings (unknown fields, ...), human-readable.
    pub warnings: Vec<String>,
}

/// How [`pack_with`] packs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackOptions {
    pub limits: Limits,
    /// Pack files that look like credentials (`.env`, private keys,
    /// credential stores) instead of refusing them.
    pub include_secrets: bool,
}

/// Pack `dir` into a deterministic `.zot` archive. `out` defaults to
/// `<manifest name>.zot` in the current directory; an existing directory or
/// a path ending in `/` receives `<manifest name>.zot`; `.zot` is appended
/// when missing; a missing parent directory is created. The archive is
/// written to a temp file next to `out` and renamed into place: a failed
/// pack leaves nothing behind. When `out` lies inside `dir` it is left out
/// of the archive; `.git` is never packed; files that look like credentials
/// are refused (see [`PackOptions::include_secrets`]).
pub fn pack(dir: &Path, out: Option<&Path>) -> Result<PackOutcome, PackageError> {
    pack_with(dir, out, &PackOptions::default())
}

/// [`pack`] with explicit options.
pub fn pack_with(
    dir: &Path,
    out: Option<&Path>,
    opts: &PackOptions,
) -> Result<PackOutcome, PackageError> {
    pack_with_progress(dir, out, opts, &mut |_, _| {})
}

/// [`pack_with`], reporting `(file bytes packed, file bytes in all)` to
/// `progress` as the archive is written.
pub fn pack_with_progress(
    dir: &Path,
    out: Option<&Path>,
    opts: &PackOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PackOutcome, PackageError> {
    let limits = &opts.limits;
    let meta = fs::metadata(dir).map_err(PackageError::io("opening", dir))?;
    if !meta.is_dir() {
        return Err(PackageError::NotAnAgent {
            path: dir.to_path_buf(),
        });
    }
    let root = dir
        .canonicalize()
        .map_err(PackageError::io("resolving", dir))?;
    let (manifest, warnings) = read_dir_manifest(&root)?;

    let out = output::Output::resolve(out, &manifest.name, "zot")?;
    let out_abs = out.abs.clone();
    let file_name = out_abs.file_name().unwrap_or_default().to_owned();
    let entries = tree::walk(&root, Some(&out_abs), limits)?;
    check_tree_layout(&root, &entries)?;
    read_extensions(&root, &file_list_tree(&entries), &mut Vec::new())?;
    if !opts.include_secrets {
        let secrets = credential_files(&entries)?;
        if !secrets.is_empty() {
            return Err(PackageError::Secrets {
                path: root,
                files: secrets,
            });
        }
    }

    let created = out.create_parents()?;
    let total: u64 = entries
        .iter()
        .map(|e| match e.kind {
            tree::TreeKind::File { size, .. } => size,
            tree::TreeKind::Dir => 0,
        })
        .sum();
    let mut report = |done: u64| progress(done, total);
    let (digest, size) = write_archive(&root, &entries, &out_abs, &file_name, limits, &mut report)?;
    created.keep();
    Ok(PackOutcome {
        out: out.path,
        digest,
        size,
        files: entries
            .iter()
            .filter(|e| matches!(e.kind, tree::TreeKind::File { .. }))
            .count(),
        warnings,
    })
}

/// Write the archive of `entries` to `out_abs` through a temp file in its
/// directory. Returns the digest and the compressed size.
fn write_archive(
    root: &Path,
    entries: &[tree::TreeEntry],
    out_abs: &Path,
    file_name: &std::ffi::OsStr,
    limits: &Limits,
    progress: &mut dyn FnMut(u64),
) -> Result<(String, u64), PackageError> {
    let parent = out_abs.parent().unwrap_or(Path::new("."));
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".tmp");
    let temp = tempfile::Builder::new()
        .prefix(&prefix)
        .tempfile_in(parent)
        .map_err(PackageError::io("creating a temporary file in", parent))?;
    let file = temp
        .as_file()
        .try_clone()
        .map_err(PackageError::io("writing", temp.path()))?;
    let sink = HashWriter {
        inner: BufWriter::with_capacity(1 << 20, file),
        hasher: Sha256::new(),
        count: 0,
    };
    let mut enc = zstd::stream::write::Encoder::new(sink, ZSTD_LEVEL)
        .map_err(PackageError::io("compressing", root))?;
    enc.include_checksum(true)
        .map_err(PackageError::io("compressing", root))?;
    enc.multithread(ZSTD_WORKERS)
        .map_err(PackageError::io("compressing", root))?;
    let enc = tree::write_tar(entries, enc, progress)?;
    let sink = enc.finish().map_err(PackageError::WriteArchive)?;
    let HashWriter {
        inner,
        hasher,
        count,
    } = sink;
    inner.into_inner().map_err(|e| PackageError::Io {
        action: "writing",
        path: temp.path().into(),
        source: e.into_error(),
    })?;
    if count > limits.compressed {
        return Err(PackageError::PackTooLarge {
            path: root.to_path_buf(),
            limit: limits.compressed,
        });
    }
    let f = temp.as_file();
    f.set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(PackageError::io("writing", temp.path()))?;
    f.sync_all()
        .map_err(PackageError::io("writing", temp.path()))?;
    temp.persist(out_abs).map_err(|e| PackageError::Io {
        action: "renaming into",
        path: out_abs.to_path_buf(),
        source: e.error,
    })?;
    Ok((format!("sha256:{}", hex::encode(hasher.finalize())), count))
}
