//! The safe archive loader: one streaming pass that hashes the compressed
//! bytes, decompresses (zstd, gzip fallback), walks the tar entries and
//! either materializes them in a fresh directory or only validates them.
//!
//! Every limit is enforced on bytes actually read, never on what a header
//! claims: a lying header or a decompression bomb stops at the limit.
//! Only regular files and directories are ever created, with modes 0644 or
//! 0755; every other entry type is recorded as ignored and never created.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::ArchiveError;
use crate::{Limits, MAX_MANIFEST_SIZE};

/// Compression detected from the first bytes of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Zstd,
    Gzip,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Gzip => "gzip",
        }
    }
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];

/// Sniff the compression from a stream's first bytes.
pub fn sniff(head: &[u8]) -> Option<Compression> {
    if head.starts_with(&ZSTD_MAGIC) {
        Some(Compression::Zstd)
    } else if head.starts_with(&GZIP_MAGIC) {
        Some(Compression::Gzip)
    } else {
        None
    }
}

/// What an entry became.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Directory,
    File,
    /// Symlink, hardlink, device, fifo, sparse, ...: never materialized.
    Ignored,
}

/// One archive entry after validation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntryInfo {
    /// Normalized relative path, `/`-separated, no leading `./`.
    pub path: String,
    pub kind: EntryKind,
    /// Content size (files only; 0 otherwise).
    pub size: u64,
    /// Mode 0755 when true, 0644 otherwise (files only).
    pub executable: bool,
    /// The tar type flag of an ignored entry (`symlink`, `hardlink`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_type: Option<&'static str>,
}

/// The result of a successful pass over an archive.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// Entries in archive order.
    pub entries: Vec<EntryInfo>,
    /// `sha256:<hex>` of the compressed bytes read.
    pub digest: String,
    pub compressed_size: u64,
    /// Sum of the regular files' sizes.
    pub total_size: u64,
    pub compression: Compression,
    /// `manifest.json` at the root, when present as a regular file and no
    /// larger than [`MAX_MANIFEST_SIZE`].
    pub manifest: Option<Vec<u8>>,
}

impl Extracted {
    pub fn get(&self, path: &str) -> Option<&EntryInfo> {
        self.entries.iter().find(|e| e.path == path)
    }
}

/// Extract an archive stream (zstd or gzip tar, sniffed) into `dest`, an
/// existing empty directory the caller created privately. Limits enforced
/// while streaming; nothing but regular files and directories is created.
/// On error, `dest` may hold a partial tree: the caller removes it.
pub fn extract_reader<R: Read>(
    reader: R,
    dest: &Path,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    run(
        reader,
        &mut DirSink {
            root: dest.to_path_buf(),
        },
        limits,
    )
}

/// Validate an archive stream without writing anything (for `verify` and
/// `inspect`): same checks as [`extract_reader`].
pub fn validate_reader<R: Read>(reader: R, limits: &Limits) -> Result<Extracted, ArchiveError> {
    run(reader, &mut NullSink, limits)
}

/// For downloaded tarballs (e.g. GitHub's `.tar.gz`): extract with the same
/// safety and limits. zstd is accepted too (the stream is sniffed).
pub fn extract_tar_gz_limited<R: Read>(
    reader: R,
    dest: &Path,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    extract_reader(reader, dest, limits)
}

// ---------------------------------------------------------------------------

trait Sink {
    fn dir(&mut self, rel: &str) -> io::Result<()>;
    /// Write exactly the bytes `data` yields; return how many.
    fn file(&mut self, rel: &str, executable: bool, data: &mut dyn Read) -> io::Result<u64>;
}

struct NullSink;

impl Sink for NullSink {
    fn dir(&mut self, _rel: &str) -> io::Result<()> {
        Ok(())
    }
    fn file(&mut self, _rel: &str, _executable: bool, data: &mut dyn Read) -> io::Result<u64> {
        io::copy(data, &mut io::sink())
    }
}

struct DirSink {
    root: PathBuf,
}

impl DirSink {
    fn mkdirs(&self, rel: &str) -> io::Result<()> {
        // The root is private and fresh and we never create symlinks, so
        // nothing on the way can redirect us outside it.
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(self.root.join(rel))
    }
}

impl Sink for DirSink {
    fn dir(&mut self, rel: &str) -> io::Result<()> {
        self.mkdirs(rel)
    }
    fn file(&mut self, rel: &str, executable: bool, data: &mut dyn Read) -> io::Result<u64> {
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.mkdirs(parent)?;
        }
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if executable { 0o755 } else { 0o644 })
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.root.join(rel))?;
        let n = io::copy(data, &mut f)?;
        f.flush()?;
        Ok(n)
    }
}

/// Counts and hashes what passes through; fails past `limit`.
pub(crate) struct HashCount<R> {
    inner: Cap<R>,
    hasher: Sha256,
}

impl<R: Read> HashCount<R> {
    pub(crate) fn new(inner: R, limit: u64) -> Self {
        HashCount {
            inner: Cap::new(inner, limit, "compressed size limit exceeded"),
            hasher: Sha256::new(),
        }
    }
}

impl<R: Read> Read for HashCount<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Counts what passes through and fails once more than `limit` bytes came,
/// never reading more than one byte past the limit (a lying header or a
/// bomb stops there).
struct Cap<R> {
    inner: R,
    count: u64,
    limit: u64,
    exceeded: bool,
    what: &'static str,
}

impl<R> Cap<R> {
    fn new(inner: R, limit: u64, what: &'static str) -> Self {
        Cap {
            inner,
            count: 0,
            limit,
            exceeded: false,
            what,
        }
    }
}

impl<R: Read> Read for Cap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = (self.limit - self.count.min(self.limit)).saturating_add(1);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.count += n as u64;
        if self.count > self.limit {
            self.exceeded = true;
            return Err(io::Error::other(self.what));
        }
        Ok(n)
    }
}

/// A reader that first yields `head`, then `rest` (for sniffing).
struct Prefixed<'a, R> {
    head: &'a [u8],
    rest: R,
}

impl<R: Read> Read for Prefixed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.head.is_empty() {
            let n = self.head.len().min(buf.len());
            buf[..n].copy_from_slice(&self.head[..n]);
            self.head = &self.head[n..];
            return Ok(n);
        }
        self.rest.read(buf)
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn run<R: Read>(
    reader: R,
    sink: &mut dyn Sink,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    let mut src = HashCount::new(reader, limits.compressed);
    let result = run_inner(&mut src, sink, limits);
    let result = match result {
        Err(_) if src.inner.exceeded => Err(ArchiveError::CompressedTooLarge {
            limit: limits.compressed,
        }),
        other => other,
    };
    let mut ex = result?;
    ex.compressed_size = src.inner.count;
    ex.digest = format!("sha256:{}", hex::encode(src.hasher.finalize()));
    Ok(ex)
}

fn run_inner<R: Read>(
    src: &mut HashCount<R>,
    sink: &mut dyn Sink,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    let mut head = [0u8; 4];
    let n = read_full(src, &mut head).map_err(ArchiveError::Corrupt)?;
    let head = &head[..n];
    let compression = sniff(head).ok_or(ArchiveError::UnknownFormat)?;
    let stream_limit = limits.total.saturating_add(limits.metadata);
    let raw = Prefixed {
        head,
        rest: &mut *src,
    };
    let decoder: Box<dyn Read + '_> = match compression {
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::new(raw).map_err(ArchiveError::Corrupt)?)
        }
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(raw))),
    };
    let mut cap = Cap::new(decoder, stream_limit, "decompressed size limit exceeded");
    let res = walk_tar(&mut cap, sink, limits);
    let res = match res {
        Err(_) if cap.exceeded => Err(ArchiveError::StreamTooLarge {
            limit: stream_limit,
        }),
        other => other,
    };
    let mut ex = res?;
    // Drain: the rest of the decompressed stream must be zero padding, and
    // reading to the end checks the compression frame (checksum, truncation).
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match cap.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if buf[..n].iter().any(|&b| b != 0) {
                    return Err(ArchiveError::TrailingData);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                if cap.exceeded {
                    return Err(ArchiveError::StreamTooLarge {
                        limit: stream_limit,
                    });
                }
                return Err(ArchiveError::Corrupt(e));
            }
        }
    }
    drop(cap);
    // The decoder stopped at the end of its input; make sure the hash saw
    // every byte of it.
    io::copy(src, &mut io::sink()).map_err(ArchiveError::Corrupt)?;
    ex.compression = compression;
    Ok(ex)
}

/// Normalize an entry name: UTF-8, relative, no `..`, leading `./` and
/// `.`/empty components dropped. `Ok(None)` for the root itself.
pub(crate) fn normalize_name(raw: &[u8]) -> Result<Option<String>, ArchiveError> {
    let lossy = || String::from_utf8_lossy(raw).into_owned();
    let s = std::str::from_utf8(raw).map_err(|_| ArchiveError::NonUtf8Name { entry: lossy() })?;
    if s.starts_with('/') {
        return Err(ArchiveError::AbsolutePath { entry: s.into() });
    }
    if s.contains('\0') {
        return Err(ArchiveError::BadPath {
            entry: s.into(),
            reason: "contains a NUL byte",
        });
    }
    if s.contains('\\') {
        return Err(ArchiveError::BadPath {
            entry: s.into(),
            reason: "contains a backslash",
        });
    }
    if s.len() > 4096 {
        return Err(ArchiveError::BadPath {
            entry: lossy().chars().take(64).collect(),
            reason: "path longer than 4096 bytes",
        });
    }
    let mut parts = Vec::new();
    for comp in s.split('/') {
        match comp {
            "" | "." => {}
            ".." => return Err(ArchiveError::ParentTraversal { entry: s.into() }),
            c if c.len() > 255 => {
                return Err(ArchiveError::BadPath {
                    entry: s.into(),
                    reason: "a path component is longer than 255 bytes",
                })
            }
            c if c.chars().any(|ch| ch.is_control()) => {
                return Err(ArchiveError::BadPath {
                    entry: s.into(),
                    reason: "contains a control character",
                })
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        Ok(None)
    } else {
        Ok(Some(parts.join("/")))
    }
}

fn type_name(t: tar::EntryType) -> &'static str {
    match t {
        tar::EntryType::Symlink => "symlink",
        tar::EntryType::Link => "hardlink",
        tar::EntryType::Char => "character device",
        tar::EntryType::Block => "block device",
        tar::EntryType::Fifo => "fifo",
        tar::EntryType::Continuous => "contiguous file",
        tar::EntryType::GNUSparse => "sparse file",
        _ => "unsupported entry",
    }
}

fn walk_tar<R: Read>(
    stream: R,
    sink: &mut dyn Sink,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    let mut archive = tar::Archive::new(stream);
    let mut entries_out = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    // Paths known to be directories (explicit or implied) and files.
    let mut dirs: BTreeSet<String> = BTreeSet::new();
    let mut files: BTreeMap<String, ()> = BTreeMap::new();
    let mut total: u64 = 0;
    let mut manifest = None;

    let iter = archive.entries().map_err(ArchiveError::Corrupt)?;
    for entry in iter {
        let mut entry = entry.map_err(ArchiveError::Corrupt)?;
        let etype = entry.header().entry_type();
        if matches!(etype, tar::EntryType::XGlobalHeader) {
            continue; // metadata only (e.g. GitHub's commit id)
        }
        let raw = entry.path_bytes().into_owned();
        let name = normalize_name(&raw)?;
        let Some(name) = name else {
            if etype.is_dir() {
                continue; // `./` itself
            }
            return Err(ArchiveError::BadPath {
                entry: String::from_utf8_lossy(&raw).into(),
                reason: "names the archive root",
            });
        };
        if !seen.insert(name.clone()) {
            return Err(ArchiveError::Duplicate { entry: name });
        }
        let size = entry.size();
        if size > limits.entry {
            return Err(ArchiveError::EntryTooLarge {
                entry: name,
                size,
                limit: limits.entry,
            });
        }
        total = total.saturating_add(size);
        if total > limits.total {
            return Err(ArchiveError::TotalTooLarge {
                entry: name,
                limit: limits.total,
            });
        }
        let kind = if etype.is_file() {
            EntryKind::File
        } else if etype.is_dir() {
            EntryKind::Directory
        } else {
            EntryKind::Ignored
        };
        // File/directory conflicts, for every entry kind (fail closed).
        if kind == EntryKind::Directory {
            if files.contains_key(&name) {
                return Err(ArchiveError::FileDirConflict { entry: name });
            }
        } else if dirs.contains(&name) {
            return Err(ArchiveError::FileDirConflict { entry: name });
        }
        let mut parent = name.as_str();
        while let Some((p, _)) = parent.rsplit_once('/') {
            if files.contains_key(p) {
                return Err(ArchiveError::FileDirConflict { entry: name });
            }
            dirs.insert(p.to_string());
            parent = p;
        }
        let executable = entry
            .header()
            .mode()
            .map(|m| m & 0o111 != 0)
            .unwrap_or(false);
        match kind {
            EntryKind::Directory => {
                dirs.insert(name.clone());
                sink.dir(&name).map_err(|source| ArchiveError::Write {
                    entry: name.clone(),
                    source,
                })?;
            }
            EntryKind::File => {
                files.insert(name.clone(), ());
                let written =
                    if name == zot_policy::zotfile::MANIFEST_FILE && size <= MAX_MANIFEST_SIZE {
                        let mut buf = Vec::with_capacity(size as usize);
                        entry.read_to_end(&mut buf).map_err(ArchiveError::Corrupt)?;
                        let n = sink.file(&name, executable, &mut buf.as_slice()).map_err(
                            |source| ArchiveError::Write {
                                entry: name.clone(),
                                source,
                            },
                        )?;
                        manifest = Some(buf);
                        n
                    } else {
                        sink.file(&name, executable, &mut entry).map_err(|source| {
                            if matches!(
                                source.kind(),
                                io::ErrorKind::Other
                                    | io::ErrorKind::InvalidData
                                    | io::ErrorKind::UnexpectedEof
                            ) {
                                ArchiveError::Corrupt(source)
                            } else {
                                ArchiveError::Write {
                                    entry: name.clone(),
                                    source,
                                }
                            }
                        })?
                    };
                if written != size {
                    return Err(ArchiveError::TruncatedEntry { entry: name });
                }
            }
            EntryKind::Ignored => {
                // Never materialized; its data (if any) is skipped by tar.
                files.insert(name.clone(), ());
            }
        }
        entries_out.push(EntryInfo {
            ignored_type: (kind == EntryKind::Ignored).then(|| type_name(etype)),
            path: name,
            kind,
            size: if kind == EntryKind::File { size } else { 0 },
            executable: kind == EntryKind::File && executable,
        });
    }
    let total_size = entries_out.iter().map(|e| e.size).sum();
    Ok(Extracted {
        entries: entries_out,
        digest: String::new(),
        compressed_size: 0,
        total_size,
        compression: Compression::Zstd,
        manifest,
    })
}
