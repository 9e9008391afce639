//! Agent directories: the walk (regular files and directories only, names
//! checked the same way the loader checks archive entries; `.git` is left
//! out) and the canonical tar stream built from it.
//!
//! Canonical tar: entries sorted bytewise by path, directories included,
//! mtime 0, uid/gid 0, empty user/group names, mode 0755 for directories
//! and executables, 0644 otherwise. The same tree always gives the same
//! bytes, whatever its timestamps, owners or umask.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::PackageError;
use crate::Limits;

/// Left out of every walk, at any depth.
pub(crate) const GIT_DIR: &str = ".git";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeKind {
    Dir,
    File { size: u64, executable: bool },
}

#[derive(Debug, Clone)]
pub(crate) struct TreeEntry {
    /// `/`-separated path relative to the root.
    pub rel: String,
    pub abs: PathBuf,
    pub kind: TreeKind,
}

/// Walk `root` (not following symlinks). `exclude` (an absolute path under
/// the canonical root) is left out: the output archive when it lies inside.
pub(crate) fn walk(
    root: &Path,
    exclude: Option<&Path>,
    limits: &Limits,
) -> Result<Vec<TreeEntry>, PackageError> {
    let mut out = Vec::new();
    let mut total = 0u64;
    walk_into(root, "", exclude, limits, &mut total, &mut out)?;
    out.sort_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
    Ok(out)
}

fn check_component(path: &Path, name: &str) -> Result<(), PackageError> {
    let reason = if name.contains('\\') {
        "file name contains a backslash"
    } else if name.chars().any(|c| c.is_control()) {
        "file name contains a control character"
    } else if name.len() > 255 {
        "file name is longer than 255 bytes"
    } else {
        return Ok(());
    };
    Err(PackageError::BadName {
        path: path.to_path_buf(),
        reason,
    })
}

fn walk_into(
    dir: &Path,
    prefix: &str,
    exclude: Option<&Path>,
    limits: &Limits,
    total: &mut u64,
    out: &mut Vec<TreeEntry>,
) -> Result<(), PackageError> {
    let rd = fs::read_dir(dir).map_err(PackageError::io("reading directory", dir))?;
    for item in rd {
        let item = item.map_err(PackageError::io("reading directory", dir))?;
        let abs = item.path();
        if exclude.is_some_and(|x| x == abs) {
            continue;
        }
        let name = item.file_name();
        let Some(name) = name.to_str() else {
            return Err(PackageError::NonUtf8Name { path: abs });
        };
        // A repository's `.git` (directory or `gitdir:` file) is never part
        // of an agent: it holds history, hooks and often credentials.
        if name == GIT_DIR {
            continue;
        }
        check_component(&abs, name)?;
        let rel = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        };
        if rel.len() > 4096 {
            return Err(PackageError::BadName {
                path: abs,
                reason: "path longer than 4096 bytes",
            });
        }
        let meta = fs::symlink_metadata(&abs).map_err(PackageError::io("reading", &abs))?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            return Err(PackageError::Symlink { path: abs });
        } else if ft.is_dir() {
            out.push(TreeEntry {
                rel: rel.clone(),
                abs: abs.clone(),
                kind: TreeKind::Dir,
            });
            walk_into(&abs, &rel, exclude, limits, total, out)?;
        } else if ft.is_file() {
            let size = meta.len();
            if size > limits.entry {
                return Err(PackageError::FileTooLarge {
                    path: abs,
                    size,
                    limit: limits.entry,
                });
            }
            *total = total.saturating_add(size);
            if *total > limits.total {
                return Err(PackageError::TreeTooLarge {
                    path: dir.to_path_buf(),
                    limit: limits.total,
                });
            }
            let executable = meta.permissions().mode() & 0o111 != 0;
            out.push(TreeEntry {
                rel,
                abs,
                kind: TreeKind::File { size, executable },
            });
        } else {
            return Err(PackageError::SpecialFile { path: abs });
        }
    }
    Ok(())
}

/// Counts bytes read, so a file that shrank while packing is detected.
struct Counted<'p, R> {
    inner: R,
    n: u64,
    /// File bytes of the whole tree read before this file, and the sink.
    before: u64,
    progress: &'p mut dyn FnMut(u64),
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        (self.progress)(self.before + self.n);
        Ok(n)
    }
}

fn open_regular(path: &Path, size: u64) -> Result<File, PackageError> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(PackageError::io("opening", path))?;
    let meta = f.metadata().map_err(PackageError::io("reading", path))?;
    if !meta.is_file() || meta.len() != size {
        return Err(PackageError::Changed {
            path: path.to_path_buf(),
        });
    }
    Ok(f)
}

/// Write the canonical tar of `entries` to `out` and return `out`.
/// `progress` gets the file bytes read so far.
pub(crate) fn write_tar<W: Write>(
    entries: &[TreeEntry],
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<W, PackageError> {
    let mut builder = tar::Builder::new(out);
    let mut done = 0u64;
    let werr = PackageError::WriteArchive;
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        match e.kind {
            TreeKind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                builder
                    .append_data(&mut h, format!("{}/", e.rel), io::empty())
                    .map_err(werr)?;
            }
            TreeKind::File { size, executable } => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(if executable { 0o755 } else { 0o644 });
                h.set_size(size);
                let f = open_regular(&e.abs, size)?;
                let mut data = Counted {
                    inner: BufReader::with_capacity(256 * 1024, f.take(size)),
                    n: 0,
                    before: done,
                    progress: &mut *progress,
                };
                builder
                    .append_data(&mut h, &e.rel, &mut data)
                    .map_err(|source| PackageError::Io {
                        action: "packing",
                        path: e.abs.clone(),
                        source,
                    })?;
                if data.n != size {
                    return Err(PackageError::Changed {
                        path: e.abs.clone(),
                    });
                }
                done += size;
            }
        }
    }
    builder.into_inner().map_err(werr)
}
