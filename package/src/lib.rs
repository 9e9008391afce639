//! `.zot` packages: pack, inspect, verify, safe extraction, digests, and
//! agent.toml package loading (see [`agent_toml`]).
//!
//! A `.zot` file is a zstd-compressed canonical tar of an agent directory
//! (see [`pack`]). [`open`] loads a directory or an archive into an
//! [`Agent`]; archives go through the streaming loader in [`extract`] into a
//! fresh private temp dir that is removed when the `Agent` is dropped.
//!
//! Digests: a directory's is the sha256 of its canonical uncompressed tar;
//! an archive's is the sha256 of the archive bytes. They are not expected
//! to match each other.

pub mod agent_toml;
pub mod error;
pub mod extract;
pub mod output;
pub mod signature;
mod tree;

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zot_policy::zotfile::{self, Manifest, AGENT_FILE, MANIFEST_FILE};

pub use error::{ArchiveError, PackageError};
pub use extract::{
    extract_reader, extract_tar_gz_limited, validate_reader, EntryInfo, EntryKind, Extracted,
};

const MIB: u64 = 1024 * 1024;
/// Largest accepted compressed `.zot` file.
pub const MAX_COMPRESSED_SIZE: u64 = 100 * MIB;
/// Largest accepted single extracted entry.
pub const MAX_ENTRY_SIZE: u64 = 64 * MIB;
/// Largest accepted total of extracted content.
pub const MAX_TOTAL_SIZE: u64 = 256 * MIB;
/// Tar headers and padding allowed on top of [`MAX_TOTAL_SIZE`] in the
/// decompressed stream (bounds the entry count too).
pub const MAX_METADATA_SIZE: u64 = 32 * MIB;
/// Largest accepted `manifest.json`.
pub const MAX_MANIFEST_SIZE: u64 = MIB;
/// zstd level used by [`pack`].
pub const ZSTD_LEVEL: i32 = 3;
/// zstd worker threads used by [`pack`]. Fixed, so the output never depends
/// on the machine (zstd's multithreaded output depends only on the
/// parameters, and a fixed count keeps that true across zstd versions).
pub const ZSTD_WORKERS: u32 = 2;

/// Loader limits. [`Limits::DEFAULT`] holds the spec's values; smaller
/// ones are for tests and callers that want to be stricter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub compressed: u64,
    pub entry: u64,
    pub total: u64,
    pub metadata: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        compressed: MAX_COMPRESSED_SIZE,
        entry: MAX_ENTRY_SIZE,
        total: MAX_TOTAL_SIZE,
        metadata: MAX_METADATA_SIZE,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

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
    _temp: Option<tempfile::TempDir>,
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
fn read_extensions(
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

// ---------------------------------------------------------------------------

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

/// [`inspect`] of an archive whose signature (`signature`, normally
/// [`signature::signature_path`]) must verify with one of `keys`. The
/// digest of the bytes the signature covers must equal the digest of the
/// bytes inspected, and the trusted comment's agent name, version and
/// digest (when present, as `zot sign` writes them) must match.
pub fn inspect_signed(
    path: &Path,
    signature: &Path,
    keys: &signature::KeySet,
) -> Result<(Summary, signature::Verified), PackageError> {
    let verified = verify_signature(path, signature, keys)?;
    let summary = inspect(path)?;
    check_claims(path, &verified, &summary.manifest, &summary.digest)?;
    Ok((summary, verified))
}

/// [`open`] of an archive whose signature must verify (see
/// [`inspect_signed`]). What is extracted is bound to what was verified
/// by its digest: a file swapped in between is refused.
pub fn open_signed(
    path: &Path,
    signature: &Path,
    keys: &signature::KeySet,
) -> Result<(Agent, signature::Verified), PackageError> {
    let verified = verify_signature(path, signature, keys)?;
    let agent = open(path)?;
    check_claims(path, &verified, &agent.manifest, &agent.digest)?;
    Ok((agent, verified))
}

fn verify_signature(
    path: &Path,
    sig_path: &Path,
    keys: &signature::KeySet,
) -> Result<signature::Verified, PackageError> {
    let meta = fs::metadata(path).map_err(PackageError::io("opening", path))?;
    if meta.is_dir() {
        return Err(PackageError::UnsignableDirectory {
            path: path.to_path_buf(),
        });
    }
    check_compressed_size(path, meta.len(), &Limits::DEFAULT)?;
    let sig = signature::Signature::read(sig_path)?;
    Ok(signature::verify_file(path, sig_path, &sig, keys)?)
}

/// The checks [`open_signed`] makes after loading, for callers that load
/// through another path: `loaded_digest` (the digest of the bytes loaded)
/// must be the digest verified, and the trusted comment's agent and
/// version, when present, must be the manifest's.
pub fn check_claims(
    archive: &Path,
    v: &signature::Verified,
    manifest: &Manifest,
    loaded_digest: &str,
) -> Result<(), PackageError> {
    use signature::SignatureError as E;
    let mismatch = |field, claimed: &str, actual: &str| {
        PackageError::Signature(E::ClaimMismatch {
            path: v.signature.clone(),
            field,
            claimed: claimed.to_string(),
            actual: actual.to_string(),
        })
    };
    if v.digest != loaded_digest {
        // The file changed between the signature check and the load.
        return Err(PackageError::Signature(E::Changed {
            path: archive.to_path_buf(),
        }));
    }
    if let Some(name) = &v.claims.agent {
        if *name != manifest.name {
            return Err(mismatch("agent", name, &manifest.name));
        }
    }
    if let Some(version) = &v.claims.version {
        let actual = manifest.version.as_deref().unwrap_or("");
        if version != actual {
            return Err(mismatch("version", version, actual));
        }
    }
    Ok(())
}

/// Sign the archive at `path` with `key`: validates it like [`inspect`],
/// then writes `out` (normally [`signature::signature_path`]) with a
/// trusted comment carrying the agent's name, version and digest.
pub fn sign(
    path: &Path,
    out: &Path,
    key: &signature::SecretKey,
) -> Result<(Summary, signature::Verified), PackageError> {
    let meta = fs::metadata(path).map_err(PackageError::io("opening", path))?;
    if meta.is_dir() {
        return Err(PackageError::UnsignableDirectory {
            path: path.to_path_buf(),
        });
    }
    let summary = inspect(path)?;
    let claims = signature::Claims {
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs()),
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        agent: Some(summary.manifest.name.clone()),
        version: summary.manifest.version.clone().filter(|v| !v.is_empty()),
        digest: Some(summary.digest.clone()),
    };
    let v = signature::sign_file(path, out, key, &claims, &summary.digest)?;
    Ok((summary, v))
}

/// `sha256:<hex>` of a directory's canonical uncompressed tar (the digest
/// `zot inspect DIR` prints). Validates the tree like [`open`].
pub fn digest_dir(dir: &Path) -> Result<String, PackageError> {
    let (_, entries) = load_dir(dir, &Limits::DEFAULT)?;
    digest_entries(&entries)
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

/// Bytes of each file read to look for a private key.
const SNIFF_BYTES: u64 = 8 * 1024;

/// Files of the tree that look like credentials: by name (the same rule
/// agent.toml packages use) or by a PEM private key near their start.
fn credential_files(entries: &[tree::TreeEntry]) -> Result<Vec<String>, PackageError> {
    use zot_policy::agent_toml::paths::is_credential_path;
    let mut found = Vec::new();
    for e in entries {
        if !matches!(e.kind, tree::TreeKind::File { .. }) {
            continue;
        }
        if is_credential_path(&e.rel) || holds_private_key(&e.abs)? {
            found.push(e.rel.clone());
        }
    }
    Ok(found)
}

fn holds_private_key(path: &Path) -> Result<bool, PackageError> {
    let f = File::open(path).map_err(PackageError::io("reading", path))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES as usize);
    f.take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(PackageError::io("reading", path))?;
    let text = String::from_utf8_lossy(&head);
    Ok(text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----"))
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

// ---------------------------------------------------------------------------

fn archive_err(path: &Path, source: ArchiveError) -> PackageError {
    PackageError::Archive {
        path: path.to_path_buf(),
        source,
    }
}

fn load_dir(path: &Path, limits: &Limits) -> Result<(PathBuf, Vec<tree::TreeEntry>), PackageError> {
    let root = path
        .canonicalize()
        .map_err(PackageError::io("resolving", path))?;
    let entries = tree::walk(&root, None, limits)?;
    check_tree_layout(&root, &entries)?;
    Ok((root, entries))
}

fn digest_entries(entries: &[tree::TreeEntry]) -> Result<String, PackageError> {
    let w = HashWriter {
        inner: io::sink(),
        hasher: Sha256::new(),
        count: 0,
    };
    let w = tree::write_tar(entries, w, &mut |_| {})?;
    Ok(format!("sha256:{}", hex::encode(w.hasher.finalize())))
}

fn file_list_tree(entries: &[tree::TreeEntry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| matches!(e.kind, tree::TreeKind::File { .. }))
        .map(|e| e.rel.clone())
        .collect()
}

fn file_list(entries: &[EntryInfo]) -> Vec<String> {
    let mut v: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| e.path.clone())
        .collect();
    v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    v
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

fn check_tree_layout(root: &Path, entries: &[tree::TreeEntry]) -> Result<(), PackageError> {
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

fn parse_manifest(path: &Path, bytes: &[u8]) -> Result<(Manifest, Vec<String>), PackageError> {
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

fn read_dir_manifest(root: &Path) -> Result<(Manifest, Vec<String>), PackageError> {
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

/// Layout + manifest checks on a streamed archive.
/// Refuse an archive file larger than the compressed limit before reading it.
fn check_compressed_size(path: &Path, len: u64, limits: &Limits) -> Result<(), PackageError> {
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

/// The summary of a validated (or extracted) archive, entries sorted bytewise.
fn archive_summary(
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

fn check_archive(path: &Path, ex: &Extracted) -> Result<(Manifest, Vec<String>), PackageError> {
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

struct HashWriter<W> {
    inner: W,
    hasher: Sha256,
    count: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
