//! minisign-compatible signatures of `.zot` archives.
//!
//! The formats are those of the `minisign` tool: Ed25519 keys, public key
//! files (`untrusted comment:` line, then base64 of `Ed` + key id + key),
//! and `.minisig` files (untrusted comment, base64 of `ED` + key id +
//! signature of the BLAKE2b-512 of the file, trusted comment, base64 of
//! the signature of signature + trusted comment). The cryptography is the
//! `minisign` crate's; this module parses every file strictly first (each
//! malformed field is an error naming it), then hands the checked text to
//! the crate.
//!
//! Only prehashed signatures are accepted (minisign's default since 0.11);
//! legacy ones would need the whole archive in memory.
//!
//! A signature made by `zot sign` carries the agent's name, version and
//! archive digest in its trusted comment (see [`Claims`]); the verifier
//! checks them against what it loaded. Signatures made by `minisign -S`
//! carry no claims and are checked on the bytes alone.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Suffix of a signature file: `agent.zot` is signed by `agent.zot.minisig`.
pub const SIGNATURE_SUFFIX: &str = ".minisig";
/// Suffix of a public key file written next to a secret key.
pub const PUBLIC_KEY_SUFFIX: &str = ".pub";
/// Largest accepted `.minisig` file.
pub const MAX_SIGNATURE_FILE: u64 = 64 * 1024;
/// Largest accepted public or secret key file.
pub const MAX_KEY_FILE: u64 = 8 * 1024;
/// Largest accepted trusted comment (bytes).
pub const MAX_TRUSTED_COMMENT: usize = 8 * 1024;

const UNTRUSTED_PREFIX: &str = "untrusted comment: ";
const TRUSTED_PREFIX: &str = "trusted comment: ";
const PK_ALG: &[u8; 2] = b"Ed";
const SIG_ALG_PREHASHED: &[u8; 2] = b"ED";
const SIG_ALG_LEGACY: &[u8; 2] = b"Ed";
const KDF_NONE: [u8; 2] = [0, 0];
const KDF_SCRYPT: &[u8; 2] = b"Sc";
const PUBLIC_KEY_LEN: usize = 2 + 8 + 32;
const SIGNATURE_LEN: usize = 2 + 8 + 64;
const GLOBAL_SIGNATURE_LEN: usize = 64;
const SECRET_KEY_LEN: usize = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32;

// ---------------------------------------------------------------- errors

/// Which part of a key or signature file is wrong. Messages name the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("file is empty")]
    Empty,
    #[error("file is not valid UTF-8 text")]
    NotUtf8,
    #[error("missing the {0} line")]
    MissingLine(&'static str),
    #[error("the {line} line must start with {expected:?}")]
    BadPrefix {
        line: &'static str,
        expected: &'static str,
    },
    #[error("the {0} is not valid base64")]
    Base64(&'static str),
    #[error("the {field} decodes to {found} bytes, expected {expected}")]
    Length {
        field: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("unsupported {field} algorithm {found:?} (expected {expected:?})")]
    Algorithm {
        field: &'static str,
        found: String,
        expected: &'static str,
    },
    #[error(
        "legacy (non-prehashed) signature: sign again with `zot sign` or minisign 0.11 or later"
    )]
    Legacy,
    #[error("the trusted comment is longer than {MAX_TRUSTED_COMMENT} bytes")]
    TrustedCommentTooLong,
    #[error("the trusted comment contains a control character")]
    TrustedCommentControl,
    #[error("the trusted comment starts or ends with blanks (minisign implementations disagree on those)")]
    TrustedCommentBlanks,
    #[error("unexpected text after the {0} line")]
    TrailingText(&'static str),
    #[error("refused by the minisign parser: {0}")]
    Rejected(String),
}

/// Everything that can go wrong with keys and signatures. Paths name the
/// file concerned.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: no signature (expected a minisign signature file here)", path.display())]
    Missing { path: PathBuf },
    #[error("{}: larger than the {limit}-byte limit", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}: malformed public key", path.display())]
    PublicKey {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error("{}: malformed secret key", path.display())]
    SecretKey {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error("{}: malformed signature", path.display())]
    Signature {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error("{}: signed by key {key_id}, which is not {}", path.display(), trusted_list(known))]
    UntrustedKey {
        path: PathBuf,
        key_id: KeyId,
        known: Vec<KeyId>,
    },
    #[error("{}: the signature does not match {} (tampered, or a signature for another file)", signature.display(), archive.display())]
    Invalid {
        archive: PathBuf,
        signature: PathBuf,
    },
    #[error("{}: the trusted comment's signature does not verify (the comment was altered)", path.display())]
    CommentInvalid { path: PathBuf },
    #[error("{}: the signature is valid but its trusted comment says {field} {claimed:?}, the archive has {actual:?}", path.display())]
    ClaimMismatch {
        path: PathBuf,
        field: &'static str,
        claimed: String,
        actual: String,
    },
    #[error("{}: changed while it was being read", path.display())]
    Changed { path: PathBuf },
    #[error("{}: the secret key is password-protected and no password was given", path.display())]
    PasswordNeeded { path: PathBuf },
    #[error("{}: wrong password for this secret key", path.display())]
    WrongPassword { path: PathBuf },
    #[error("{}: already exists (refusing to overwrite a key)", path.display())]
    Exists { path: PathBuf },
    #[error("{}: cannot {action}: {message}", path.display())]
    Crypto {
        path: PathBuf,
        action: &'static str,
        message: String,
    },
}

fn trusted_list(known: &[KeyId]) -> String {
    if known.is_empty() {
        "a trusted key (no keys given)".to_string()
    } else {
        let ids: Vec<String> = known.iter().map(|k| k.to_string()).collect();
        format!("a trusted key ({})", ids.join(", "))
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SignatureError {
    let path = path.to_path_buf();
    move |source| SignatureError::Io {
        action,
        path,
        source,
    }
}

// ---------------------------------------------------------------- key ids

/// A minisign key id: 8 bytes, shown as 16 uppercase hex digits (the
/// little-endian number, as `minisign` prints it).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId([u8; 8]);

impl KeyId {
    pub fn bytes(&self) -> [u8; 8] {
        self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", u64::from_le_bytes(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl serde::Serialize for KeyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// ---------------------------------------------------------------- parsing

/// Split a key or signature file into lines: `\n` separated, one optional
/// `\r` before each `\n`, one optional final newline, nothing after the
/// expected lines but blank ones.
fn lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

fn check_trailing(rest: &[&str], last: &'static str) -> Result<(), FormatError> {
    if rest.iter().any(|l| !l.trim().is_empty()) {
        return Err(FormatError::TrailingText(last));
    }
    Ok(())
}

fn decode(field: &'static str, s: &str, expected: usize) -> Result<Vec<u8>, FormatError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|_| FormatError::Base64(field))?;
    if bytes.len() != expected {
        return Err(FormatError::Length {
            field,
            expected,
            found: bytes.len(),
        });
    }
    Ok(bytes)
}

fn alg_name(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn untrusted_line<'a>(lines: &[&'a str]) -> Result<&'a str, FormatError> {
    let first = *lines.first().ok_or(FormatError::Empty)?;
    if first.is_empty() && lines.len() == 1 {
        return Err(FormatError::Empty);
    }
    first
        .strip_prefix(UNTRUSTED_PREFIX)
        .ok_or(FormatError::BadPrefix {
            line: "untrusted comment",
            expected: UNTRUSTED_PREFIX,
        })
}

fn key_id(b: &[u8]) -> KeyId {
    let mut id = [0u8; 8];
    id.copy_from_slice(&b[..8]);
    KeyId(id)
}

/// A minisign public key.
#[derive(Clone)]
pub struct PublicKey {
    id: KeyId,
    key: minisign::PublicKey,
    base64: String,
    /// Where it was read from, when it came from a file.
    source: Option<PathBuf>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("id", &self.id)
            .field("source", &self.source)
            .finish()
    }
}

impl PublicKey {
    /// Parse the text of a public key file (as `minisign -G` writes it).
    pub fn parse(text: &str) -> Result<PublicKey, FormatError> {
        let ls = lines(text);
        untrusted_line(&ls)?;
        let b64 = *ls.get(1).ok_or(FormatError::MissingLine("public key"))?;
        check_trailing(&ls[2..], "public key")?;
        PublicKey::from_base64(b64)
    }

    /// Parse the base64 key alone (the second line of a key file, what
    /// `minisign -P` takes).
    pub fn from_base64(b64: &str) -> Result<PublicKey, FormatError> {
        let bytes = decode("public key", b64, PUBLIC_KEY_LEN)?;
        if &bytes[..2] != PK_ALG {
            return Err(FormatError::Algorithm {
                field: "public key",
                found: alg_name(&bytes[..2]),
                expected: "Ed",
            });
        }
        let b64 = b64.trim().to_string();
        let key = minisign::PublicKey::from_base64(&b64)
            .map_err(|e| FormatError::Rejected(e.to_string()))?;
        Ok(PublicKey {
            id: key_id(&bytes[2..10]),
            key,
            base64: b64,
            source: None,
        })
    }

    /// Read and parse a public key file.
    pub fn read(path: &Path) -> Result<PublicKey, SignatureError> {
        let text = read_text(path, MAX_KEY_FILE)?;
        let text = String::from_utf8(text).map_err(|_| SignatureError::PublicKey {
            path: path.to_path_buf(),
            source: FormatError::NotUtf8,
        })?;
        let mut pk = PublicKey::parse(&text).map_err(|source| SignatureError::PublicKey {
            path: path.to_path_buf(),
            source,
        })?;
        pk.source = Some(path.to_path_buf());
        Ok(pk)
    }

    pub fn id(&self) -> KeyId {
        self.id
    }

    /// The file the key was read from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The base64 line (`minisign -P` form).
    pub fn base64(&self) -> &str {
        &self.base64
    }

    /// The key file text, as `minisign -G` writes it.
    pub fn to_file_text(&self) -> String {
        format!(
            "{UNTRUSTED_PREFIX}minisign public key {}\n{}\n",
            self.id, self.base64
        )
    }
}

/// A parsed `.minisig` file.
#[derive(Clone)]
pub struct Signature {
    key_id: KeyId,
    trusted_comment: String,
    untrusted_comment: String,
    boxed: minisign::SignatureBox,
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signature")
            .field("key_id", &self.key_id)
            .field("trusted_comment", &self.trusted_comment)
            .finish()
    }
}

impl Signature {
    /// Parse the text of a `.minisig` file. Every field is checked before
    /// the `minisign` crate sees the text.
    pub fn parse(text: &str) -> Result<Signature, FormatError> {
        let ls = lines(text);
        let untrusted = untrusted_line(&ls)?;
        let sig_b64 = *ls.get(1).ok_or(FormatError::MissingLine("signature"))?;
        let sig = decode("signature", sig_b64, SIGNATURE_LEN)?;
        match <&[u8; 2]>::try_from(&sig[..2]).expect("two bytes") {
            a if a == SIG_ALG_PREHASHED => {}
            a if a == SIG_ALG_LEGACY => return Err(FormatError::Legacy),
            a => {
                return Err(FormatError::Algorithm {
                    field: "signature",
                    found: alg_name(a),
                    expected: "ED",
                })
            }
        }
        let trusted_line = *ls
            .get(2)
            .ok_or(FormatError::MissingLine("trusted comment"))?;
        let trusted = trusted_line
            .strip_prefix(TRUSTED_PREFIX)
            .ok_or(FormatError::BadPrefix {
                line: "trusted comment",
                expected: TRUSTED_PREFIX,
            })?;
        if trusted.len() > MAX_TRUSTED_COMMENT {
            return Err(FormatError::TrustedCommentTooLong);
        }
        if trusted.chars().any(|c| c.is_control() && c != '\t') {
            return Err(FormatError::TrustedCommentControl);
        }
        if trusted.trim() != trusted {
            return Err(FormatError::TrustedCommentBlanks);
        }
        let global_b64 = *ls
            .get(3)
            .ok_or(FormatError::MissingLine("trusted comment signature"))?;
        decode(
            "trusted comment signature",
            global_b64,
            GLOBAL_SIGNATURE_LEN,
        )?;
        check_trailing(&ls[4..], "trusted comment signature")?;
        // Checked text only: the crate's own parser sees four valid lines.
        let canonical = format!(
            "{UNTRUSTED_PREFIX}{untrusted}\n{}\n{TRUSTED_PREFIX}{trusted}\n{}\n",
            sig_b64.trim(),
            global_b64.trim()
        );
        let boxed = minisign::SignatureBox::from_string(&canonical)
            .map_err(|e| FormatError::Rejected(e.to_string()))?;
        Ok(Signature {
            key_id: key_id(&sig[2..10]),
            trusted_comment: trusted.to_string(),
            untrusted_comment: untrusted.to_string(),
            boxed,
        })
    }

    /// Read and parse a `.minisig` file; a missing file is
    /// [`SignatureError::Missing`].
    pub fn read(path: &Path) -> Result<Signature, SignatureError> {
        let text = match read_text(path, MAX_SIGNATURE_FILE) {
            Err(SignatureError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(SignatureError::Missing {
                    path: path.to_path_buf(),
                })
            }
            r => r?,
        };
        let text = String::from_utf8(text).map_err(|_| SignatureError::Signature {
            path: path.to_path_buf(),
            source: FormatError::NotUtf8,
        })?;
        Signature::parse(&text).map_err(|source| SignatureError::Signature {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn key_id(&self) -> KeyId {
        self.key_id
    }

    /// The trusted comment (signed, but only meaningful once verified).
    pub fn trusted_comment(&self) -> &str {
        &self.trusted_comment
    }

    pub fn untrusted_comment(&self) -> &str {
        &self.untrusted_comment
    }
}

/// Read at most `limit` bytes of a regular file; more is an error.
fn read_text(path: &Path, limit: u64) -> Result<Vec<u8>, SignatureError> {
    let f = File::open(path).map_err(io_err("reading", path))?;
    let meta = f.metadata().map_err(io_err("reading", path))?;
    if !meta.is_file() {
        return Err(SignatureError::Io {
            action: "reading",
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
        });
    }
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(io_err("reading", path))?;
    if buf.len() as u64 > limit {
        return Err(SignatureError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(buf)
}

// ---------------------------------------------------------------- claims

/// What a trusted comment says, as `key:value` fields separated by tabs
/// (minisign's own form: `timestamp:<secs>\tfile:<name>\thashed`). `zot
/// sign` adds `agent:`, `version:` and `digest:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Claims {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl Claims {
    /// Read the fields zot knows from a trusted comment; other text is
    /// ignored (a comment written by hand or another tool is fine).
    pub fn parse(comment: &str) -> Claims {
        let mut c = Claims::default();
        for field in comment.split('\t') {
            let Some((k, v)) = field.split_once(':') else {
                continue;
            };
            let v = Some(v.to_string());
            match k {
                "timestamp" => c.timestamp = v.and_then(|v| v.parse().ok()),
                "file" => c.file = v,
                "agent" => c.agent = v,
                "version" => c.version = v,
                "digest" => c.digest = v,
                _ => {}
            }
        }
        c
    }

    /// The trusted comment `zot sign` writes.
    pub fn to_comment(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.timestamp {
            parts.push(format!("timestamp:{t}"));
        }
        for (k, v) in [
            ("file", &self.file),
            ("agent", &self.agent),
            ("version", &self.version),
            ("digest", &self.digest),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}:{}", clean_field(v)));
            }
        }
        parts.push("hashed".into());
        parts.join("\t")
    }
}

/// A field value fit for a one-line, tab-separated comment.
fn clean_field(v: &str) -> String {
    v.chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

// ---------------------------------------------------------------- verify

/// A set of public keys to verify against (`--key` files, or the trusted
/// keys directory).
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    keys: Vec<PublicKey>,
}

impl KeySet {
    pub fn new(keys: Vec<PublicKey>) -> KeySet {
        KeySet { keys }
    }

    /// Every `*.pub` file in `dir` (sorted by name); a missing directory is
    /// an empty set. A malformed key file is an error naming it: a broken
    /// trust store is never silently narrowed.
    pub fn read_dir(dir: &Path) -> Result<KeySet, SignatureError> {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(KeySet::default()),
            Err(e) => return Err(io_err("reading", dir)(e)),
        };
        let mut paths = Vec::new();
        for e in rd {
            let e = e.map_err(io_err("reading", dir))?;
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pub") {
                paths.push(p);
            }
        }
        paths.sort();
        let keys = paths
            .iter()
            .map(|p| PublicKey::read(p))
            .collect::<Result<_, _>>()?;
        Ok(KeySet { keys })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[PublicKey] {
        &self.keys
    }

    pub fn find(&self, id: KeyId) -> Option<&PublicKey> {
        self.keys.iter().find(|k| k.id == id)
    }

    pub fn ids(&self) -> Vec<KeyId> {
        self.keys.iter().map(|k| k.id).collect()
    }
}

/// A signature that verified.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verified {
    /// The `.minisig` file.
    pub signature: PathBuf,
    pub key_id: KeyId,
    /// The key file that verified it, when it came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    pub trusted_comment: String,
    pub claims: Claims,
    /// `sha256:<hex>` of exactly the bytes the signature covers: the
    /// loader's archive digest must equal it.
    pub digest: String,
}

/// `agent.zot` -> `agent.zot.minisig`.
pub fn signature_path(archive: &Path) -> PathBuf {
    let mut s = archive.as_os_str().to_owned();
    s.push(SIGNATURE_SUFFIX);
    PathBuf::from(s)
}

/// A reader that hashes what it yields (SHA-256), to bind what the
/// signature check read to what the loader reads.
struct Sha256Reader<R> {
    inner: R,
    hasher: Sha256,
    seeked: bool,
}

impl<R: Read> Read for Sha256Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: Seek> Seek for Sha256Reader<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seeked = true;
        self.inner.seek(pos)
    }
}

/// The crate wants `Seek` but only seeks to echo the data, which
/// verification never asks for.
struct NoSeek<R>(R);

impl<R: Read> Read for NoSeek<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<R> Seek for NoSeek<R> {
    fn seek(&mut self, _: SeekFrom) -> io::Result<u64> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "seek"))
    }
}

fn sha256_hex(h: Sha256) -> String {
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// Verify `signature` over the file at `archive` with one of `keys`. The
/// returned digest is of the bytes verified; the caller compares it with
/// the digest of what it loads (see `zot_package::inspect_signed`).
pub fn verify_file(
    archive: &Path,
    signature_file: &Path,
    signature: &Signature,
    keys: &KeySet,
) -> Result<Verified, SignatureError> {
    if keys.find(signature.key_id).is_none() {
        return Err(SignatureError::UntrustedKey {
            path: signature_file.to_path_buf(),
            key_id: signature.key_id,
            known: keys.ids(),
        });
    }
    let file = File::open(archive).map_err(io_err("reading", archive))?;
    verify_reader(
        io::BufReader::with_capacity(1 << 16, file),
        archive,
        signature_file,
        signature,
        keys,
    )
}

/// [`verify_file`] over bytes from a reader; `archive` only names them in
/// errors.
pub fn verify_reader<R: Read>(
    data: R,
    archive: &Path,
    signature_file: &Path,
    signature: &Signature,
    keys: &KeySet,
) -> Result<Verified, SignatureError> {
    let Some(pk) = keys.find(signature.key_id) else {
        return Err(SignatureError::UntrustedKey {
            path: signature_file.to_path_buf(),
            key_id: signature.key_id,
            known: keys.ids(),
        });
    };
    let mut reader = Sha256Reader {
        inner: NoSeek(data),
        hasher: Sha256::new(),
        seeked: false,
    };
    // One pass: the crate checks the data signature (over the BLAKE2b
    // prehash of what `reader` yields), then the trusted comment's.
    if let Err(e) = minisign::verify(&pk.key, &signature.boxed, &mut reader, true, false, false) {
        return Err(match e.kind() {
            minisign::ErrorKind::Io => SignatureError::Io {
                action: "reading",
                path: archive.to_path_buf(),
                source: io::Error::other(e.to_string()),
            },
            // The crate says which of the two signatures failed only in
            // its message; either way the archive is refused.
            _ if e.to_string().starts_with("Comment") => SignatureError::CommentInvalid {
                path: signature_file.to_path_buf(),
            },
            _ => SignatureError::Invalid {
                archive: archive.to_path_buf(),
                signature: signature_file.to_path_buf(),
            },
        });
    }
    if reader.seeked {
        return Err(SignatureError::Changed {
            path: archive.to_path_buf(),
        });
    }
    let digest = sha256_hex(reader.hasher);
    let claims = Claims::parse(&signature.trusted_comment);
    if let Some(d) = &claims.digest {
        if *d != digest {
            return Err(SignatureError::ClaimMismatch {
                path: signature_file.to_path_buf(),
                field: "digest",
                claimed: d.clone(),
                actual: digest,
            });
        }
    }
    Ok(Verified {
        signature: signature_file.to_path_buf(),
        key_id: signature.key_id,
        key_file: pk.source.clone(),
        trusted_comment: signature.trusted_comment.clone(),
        claims,
        digest,
    })
}

// ---------------------------------------------------------------- keys

/// How a new secret key is protected.
pub enum Protection {
    Password(String),
    Unencrypted,
}

/// What [`keygen`] wrote.
#[derive(Debug, Clone)]
pub struct Keygen {
    pub secret: PathBuf,
    pub public: PathBuf,
    pub key_id: KeyId,
    pub encrypted: bool,
}

/// `FILE` -> `FILE.pub`.
pub fn public_key_path(secret: &Path) -> PathBuf {
    let mut s = secret.as_os_str().to_owned();
    s.push(PUBLIC_KEY_SUFFIX);
    PathBuf::from(s)
}

/// Generate a key pair: the secret key in `secret` (mode 0600), the public
/// key in `secret.pub`. Refuses to overwrite either; on failure nothing is
/// left behind.
pub fn keygen(secret: &Path, protection: Protection) -> Result<Keygen, SignatureError> {
    let public = public_key_path(secret);
    for p in [secret, public.as_path()] {
        if fs::symlink_metadata(p).is_ok() {
            return Err(SignatureError::Exists {
                path: p.to_path_buf(),
            });
        }
    }
    let crypto = |e: minisign::PError| SignatureError::Crypto {
        path: secret.to_path_buf(),
        action: "generate a key",
        message: e.to_string(),
    };
    let encrypted = matches!(protection, Protection::Password(_));
    let kp = match protection {
        Protection::Password(pw) => minisign::KeyPair::generate_encrypted_keypair(Some(pw)),
        Protection::Unencrypted => minisign::KeyPair::generate_unencrypted_keypair(),
    }
    .map_err(crypto)?;
    let comment = if encrypted {
        "minisign encrypted secret key"
    } else {
        "minisign secret key (not password-protected)"
    };
    let sk_text = kp.sk.to_box(Some(comment)).map_err(crypto)?.into_string();
    let pk_b64 = kp.pk.to_base64();
    let pk = PublicKey::from_base64(&pk_b64).map_err(|e| SignatureError::Crypto {
        path: public.clone(),
        action: "encode the public key",
        message: e.to_string(),
    })?;

    write_new(secret, sk_text.as_bytes(), 0o600)?;
    if let Err(e) = write_new(&public, pk.to_file_text().as_bytes(), 0o644) {
        let _ = fs::remove_file(secret);
        return Err(e);
    }
    Ok(Keygen {
        secret: secret.to_path_buf(),
        public,
        key_id: pk.id,
        encrypted,
    })
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), SignatureError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                SignatureError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                io_err("creating", path)(e)
            }
        })?;
    let r = f
        .set_permissions(fs::Permissions::from_mode(mode))
        .and_then(|()| f.write_all(bytes))
        .and_then(|()| f.sync_all());
    if let Err(e) = r {
        let _ = fs::remove_file(path);
        return Err(io_err("writing", path)(e));
    }
    Ok(())
}

/// A secret key file, read but not yet decrypted.
#[derive(Debug)]
pub struct SecretKeyFile {
    path: PathBuf,
    text: String,
    encrypted: bool,
}

impl SecretKeyFile {
    /// Read and check a secret key file (`zot keygen` or `minisign -G`).
    pub fn read(path: &Path) -> Result<SecretKeyFile, SignatureError> {
        let bytes = read_text(path, MAX_KEY_FILE)?;
        let bad = |source| SignatureError::SecretKey {
            path: path.to_path_buf(),
            source,
        };
        let text = String::from_utf8(bytes).map_err(|_| bad(FormatError::NotUtf8))?;
        SecretKeyFile::parse(path, text).map_err(bad)
    }

    /// Check the text of a secret key file; `path` names it later.
    pub fn parse(path: &Path, text: String) -> Result<SecretKeyFile, FormatError> {
        let ls = lines(&text);
        untrusted_line(&ls)?;
        let b64 = *ls.get(1).ok_or(FormatError::MissingLine("secret key"))?;
        check_trailing(&ls[2..], "secret key")?;
        let raw = decode("secret key", b64, SECRET_KEY_LEN)?;
        if &raw[..2] != PK_ALG {
            return Err(FormatError::Algorithm {
                field: "secret key",
                found: alg_name(&raw[..2]),
                expected: "Ed",
            });
        }
        let encrypted = match [raw[2], raw[3]] {
            KDF_NONE => false,
            k if &k == KDF_SCRYPT => true,
            k => {
                return Err(FormatError::Algorithm {
                    field: "secret key encryption",
                    found: alg_name(&k),
                    expected: "Sc",
                })
            }
        };
        Ok(SecretKeyFile {
            path: path.to_path_buf(),
            text,
            encrypted,
        })
    }

    /// Whether a password is needed to [`unlock`](Self::unlock) it.
    pub fn encrypted(&self) -> bool {
        self.encrypted
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The decoded key bytes (checked by [`parse`](Self::parse)).
    fn raw(&self) -> Vec<u8> {
        let ls = lines(&self.text);
        decode("secret key", ls[1], SECRET_KEY_LEN).expect("checked when parsed")
    }

    fn zero_checksum(&self) -> bool {
        self.raw()[SECRET_KEY_LEN - 32..].iter().all(|b| *b == 0)
    }

    /// Decrypt (when encrypted) into a key that can sign.
    pub fn unlock(self, password: Option<String>) -> Result<SecretKey, SignatureError> {
        let boxed = minisign::SecretKeyBox::from_string(&self.text).map_err(|e| {
            SignatureError::Crypto {
                path: self.path.clone(),
                action: "read the secret key",
                message: e.to_string(),
            }
        })?;
        let sk = if self.encrypted {
            let Some(pw) = password else {
                return Err(SignatureError::PasswordNeeded { path: self.path });
            };
            match boxed.into_secret_key(Some(pw)) {
                Ok(sk) => sk,
                Err(e) if matches!(e.kind(), minisign::ErrorKind::Verify) => {
                    return Err(SignatureError::WrongPassword { path: self.path })
                }
                Err(e) => {
                    return Err(SignatureError::Crypto {
                        path: self.path,
                        action: "decrypt the secret key",
                        message: e.to_string(),
                    })
                }
            }
        } else {
            match boxed.into_unencrypted_secret_key() {
                Ok(sk) => sk,
                // `minisign -G -W` leaves the checksum of an unencrypted
                // key zeroed (the crate insists on it): the key itself is
                // read as is. A nonzero checksum that does not match is a
                // corrupted key.
                Err(_) if self.zero_checksum() => {
                    let raw = self.raw();
                    minisign::SecretKey::from_bytes(&raw).map_err(|e| SignatureError::Crypto {
                        path: self.path.clone(),
                        action: "read the secret key",
                        message: e.to_string(),
                    })?
                }
                Err(e) => {
                    return Err(SignatureError::Crypto {
                        path: self.path.clone(),
                        action: "read the secret key",
                        message: e.to_string(),
                    })
                }
            }
        };
        let pk = minisign::PublicKey::from_secret_key(&sk).map_err(|e| SignatureError::Crypto {
            path: self.path.clone(),
            action: "read the secret key",
            message: e.to_string(),
        })?;
        Ok(SecretKey {
            path: self.path,
            key_id: key_id(sk.keynum()),
            sk,
            pk,
        })
    }
}

/// A decrypted secret key.
pub struct SecretKey {
    path: PathBuf,
    key_id: KeyId,
    sk: minisign::SecretKey,
    pk: minisign::PublicKey,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key material.
        f.debug_struct("SecretKey")
            .field("path", &self.path)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SecretKey {
    pub fn key_id(&self) -> KeyId {
        self.key_id
    }
}

/// Sign the file at `archive` with the trusted comment `claims`; the
/// signature is written to `out` (replaced atomically). `expected_digest`
/// is the digest of the archive the claims describe: if the bytes signed
/// hash differently (the file changed meanwhile) nothing is written.
pub fn sign_file(
    archive: &Path,
    out: &Path,
    key: &SecretKey,
    claims: &Claims,
    expected_digest: &str,
) -> Result<Verified, SignatureError> {
    let file = File::open(archive).map_err(io_err("reading", archive))?;
    let mut reader = Sha256Reader {
        inner: io::BufReader::with_capacity(1 << 16, file),
        hasher: Sha256::new(),
        seeked: false,
    };
    let comment = claims.to_comment();
    let untrusted = format!("signature from zot secret key {}", key.key_id);
    let boxed = minisign::sign(
        Some(&key.pk),
        &key.sk,
        &mut reader,
        Some(&comment),
        Some(&untrusted),
    )
    .map_err(|e| match e.kind() {
        minisign::ErrorKind::Io => SignatureError::Io {
            action: "reading",
            path: archive.to_path_buf(),
            source: io::Error::other(e.to_string()),
        },
        _ => SignatureError::Crypto {
            path: key.path.clone(),
            action: "sign",
            message: e.to_string(),
        },
    })?;
    let digest = sha256_hex(reader.hasher);
    if digest != expected_digest {
        return Err(SignatureError::Changed {
            path: archive.to_path_buf(),
        });
    }
    let text = boxed.into_string();
    // Re-parse what we wrote: the strict parser must accept it.
    let parsed = Signature::parse(&text).map_err(|source| SignatureError::Signature {
        path: out.to_path_buf(),
        source,
    })?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".zot-minisig-")
        .tempfile_in(&parent)
        .map_err(io_err("creating a temporary file in", &parent))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| {
            tmp.as_file()
                .set_permissions(fs::Permissions::from_mode(0o644))
        })
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io_err("writing", out))?;
    tmp.persist(out).map_err(|e| SignatureError::Io {
        action: "renaming into",
        path: out.to_path_buf(),
        source: e.error,
    })?;
    Ok(Verified {
        signature: out.to_path_buf(),
        key_id: key.key_id,
        key_file: None,
        trusted_comment: parsed.trusted_comment,
        claims: claims.clone(),
        digest,
    })
}
