//! Error types: a small tree, lowercase messages, sources kept in `#[source]`.

use std::io;
use std::path::PathBuf;

use zot_policy::zotfile::Diagnostics;

/// Why an archive stream was refused. Entry paths are the (lossy) names as
/// stored in the archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("not a .zot archive: unknown format (expected zstd, or gzip for old archives)")]
    UnknownFormat,
    #[error("archive is larger than the {limit}-byte limit for compressed archives")]
    CompressedTooLarge { limit: u64 },
    #[error("entry {entry:?} is {size} bytes, over the {limit}-byte limit per entry")]
    EntryTooLarge {
        entry: String,
        size: u64,
        limit: u64,
    },
    #[error("entry {entry:?} takes the extracted total over the {limit}-byte limit")]
    TotalTooLarge { entry: String, limit: u64 },
    #[error("decompressed stream exceeds {limit} bytes (decompression bomb or too much metadata)")]
    StreamTooLarge { limit: u64 },
    #[error("entry {entry:?} has an absolute path")]
    AbsolutePath { entry: String },
    #[error("entry {entry:?} has a `..` component")]
    ParentTraversal { entry: String },
    #[error("entry {entry:?}: {reason}")]
    BadPath { entry: String, reason: &'static str },
    #[error("entry name {entry:?} is not valid UTF-8")]
    NonUtf8Name { entry: String },
    #[error("duplicate entry {entry:?}")]
    Duplicate { entry: String },
    #[error("entry {entry:?} is both a file and a directory")]
    FileDirConflict { entry: String },
    #[error("entry {entry:?} is shorter than its header says (truncated archive)")]
    TruncatedEntry { entry: String },
    #[error("non-zero data after the end of the tar archive")]
    TrailingData,
    #[error("archive is corrupt or truncated")]
    Corrupt(#[source] io::Error),
    #[error("extracting {entry:?}")]
    Write {
        entry: String,
        #[source]
        source: io::Error,
    },
}

/// Everything that can go wrong loading, packing or unpacking an agent.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("writing the archive")]
    WriteArchive(#[source] io::Error),
    #[error("{}", path.display())]
    Archive {
        path: PathBuf,
        #[source]
        source: ArchiveError,
    },
    #[error("{}", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: Diagnostics,
    },
    #[error("{}: not a directory or a .zot archive", path.display())]
    NotAnAgent { path: PathBuf },
    #[error("no manifest.json at the root of {}", path.display())]
    MissingManifest { path: PathBuf },
    #[error("{}: manifest.json is larger than {limit} bytes", path.display())]
    ManifestTooLarge { path: PathBuf, limit: u64 },
    #[error("{entry} in {} is not a regular file", path.display())]
    NotRegular { path: PathBuf, entry: String },
    #[error("{}: symlinks are not supported in agent packages", path.display())]
    Symlink { path: PathBuf },
    #[error("{}: special files (devices, fifos, sockets) are not supported in agent packages", path.display())]
    SpecialFile { path: PathBuf },
    #[error("{}: file name is not valid UTF-8", path.display())]
    NonUtf8Name { path: PathBuf },
    #[error("{}: {reason}", path.display())]
    BadName { path: PathBuf, reason: &'static str },
    /// A bundled extension's `extension.json` is invalid (`message` names
    /// the field).
    #[error("{entry}: {message}")]
    InvalidExtension { entry: String, message: String },
    #[error("{}: {size} bytes, over the {limit}-byte limit per entry", path.display())]
    FileTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{}: contents total more than the {limit}-byte limit", path.display())]
    TreeTooLarge { path: PathBuf, limit: u64 },
    #[error("{}: the packed archive would be larger than the {limit}-byte limit", path.display())]
    PackTooLarge { path: PathBuf, limit: u64 },
    #[error("{}: file changed while packing", path.display())]
    Changed { path: PathBuf },
    #[error("{}: refusing to pack files that look like credentials: {} (pass --include-secrets to pack them anyway)", path.display(), files.join(", "))]
    Secrets { path: PathBuf, files: Vec<String> },
    #[error("{}: destination is not an empty directory", path.display())]
    DestinationNotEmpty { path: PathBuf },
    #[error("signature check failed")]
    Signature(#[from] crate::signature::SignatureError),
    #[error("{}: a directory has no artifact to sign: pack it into a .zot archive and sign that", path.display())]
    UnsignableDirectory { path: PathBuf },
}

impl PackageError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> PackageError {
        let path = path.into();
        move |source| PackageError::Io {
            action,
            path,
            source,
        }
    }
}
