//! Installed agents (docs/registries.md): verified `.zot` archives kept
//! content-addressed under `$ZOT_HOME/agents/.blobs/sha256/`, one record
//! per installed name in `$ZOT_HOME/agents/.installed/NAME.json`, and the
//! default agent of `zot run` in `$ZOT_HOME/agents/.default`. Names of
//! agents start with a letter or digit, so these never meet an agent's own
//! `$ZOT_HOME/agents/NAME/` data directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::deps::LoadedAgent;
use crate::home::{private_dir, write_atomic};
use crate::oci;
use crate::reference::Signatures;
use crate::ui::Progress;
use crate::RunError;

/// One installed agent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The installed name (`--name`, else the manifest's).
    pub name: String,
    /// The manifest's name.
    pub agent: String,
    #[serde(default)]
    pub version: Option<String>,
    /// `sha256:` of the `.zot` archive (an OCI layer digest).
    pub digest: String,
    /// The agent's content digest (consent receipts are keyed by it).
    pub content_digest: String,
    /// The OCI manifest digest, for registry sources.
    #[serde(default)]
    pub manifest_digest: Option<String>,
    /// The reference it was installed from (absolute path for local ones).
    pub source: String,
    /// Seconds since the epoch.
    pub installed_at: u64,
    /// The key id of the verified publisher signature, if any.
    #[serde(default)]
    pub signed_by: Option<String>,
}

impl Record {
    /// `name version`, or the name alone.
    pub fn display_version(&self) -> String {
        self.version.clone().unwrap_or_else(|| "-".into())
    }
}

fn agents_dir(home: &Path) -> PathBuf {
    home.join("agents")
}
fn records_dir(home: &Path) -> PathBuf {
    agents_dir(home).join(".installed")
}
fn blobs_dir(home: &Path) -> PathBuf {
    agents_dir(home).join(".blobs").join("sha256")
}
fn default_file(home: &Path) -> PathBuf {
    agents_dir(home).join(".default")
}

/// Where the archive with `digest` is kept.
pub fn blob_path(home: &Path, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    blobs_dir(home).join(format!("{hex}.zot"))
}

/// Check an installed name (the agent name rules).
pub fn check_name(name: &str) -> Result<(), RunError> {
    zot_policy::zotfile::validate_name(name).map_err(|e| RunError::Store {
        what: format!("name {name:?}"),
        source: Some(e.into()),
    })
}

/// The record of `name`, if installed.
pub fn get(home: &Path, name: &str) -> Result<Option<Record>, RunError> {
    if zot_policy::zotfile::validate_name(name).is_err() {
        return Ok(None);
    }
    let p = records_dir(home).join(format!("{name}.json"));
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunError::io(p.display().to_string(), e)),
    };
    let r: Record = serde_json::from_str(&text).map_err(|e| RunError::Store {
        what: p.display().to_string(),
        source: Some(e.into()),
    })?;
    if r.name != name || !oci::digest_ok(&r.digest) {
        return Err(RunError::store(format!(
            "{}: inconsistent record",
            p.display()
        )));
    }
    Ok(Some(r))
}

/// Every installed agent, by name.
pub fn list(home: &Path) -> Result<Vec<Record>, RunError> {
    let dir = records_dir(home);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RunError::io(dir.display().to_string(), e)),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| RunError::io(dir.display().to_string(), e))?;
        let f = e.file_name().to_string_lossy().into_owned();
        if let Some(name) = f.strip_suffix(".json") {
            if let Some(r) = get(home, name)? {
                out.push(r);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The default agent's name (`zot use`).
pub fn default_name(home: &Path) -> Result<Option<String>, RunError> {
    match std::fs::read_to_string(default_file(home)) {
        Ok(t) => {
            let n = t.trim().to_string();
            Ok((!n.is_empty()).then_some(n))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunError::io("default agent", e)),
    }
}

/// Make `name` (installed) the default agent.
pub fn set_default(home: &Path, name: &str) -> Result<Record, RunError> {
    let r = get(home, name)?.ok_or_else(|| not_installed(name))?;
    private_dir(&agents_dir(home)).map_err(|e| RunError::io("agents dir", e))?;
    write_atomic(&default_file(home), format!("{name}\n").as_bytes())
        .map_err(|e| RunError::io("default agent", e))?;
    Ok(r)
}

fn not_installed(name: &str) -> RunError {
    RunError::store(format!(
        "{name:?} is not installed (`zot agents` lists what is)"
    ))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Store the verified archive of `agent` (at `archive`, with `sig`) as
/// `name`. The archive's digest is checked again as it is copied in.
pub fn add(
    home: &Path,
    name: &str,
    agent: &Checked,
    archive: &Path,
    sig: Option<&Path>,
    source: &str,
    manifest_digest: Option<&str>,
) -> Result<Record, RunError> {
    check_name(name)?;
    let blobs = blobs_dir(home);
    private_dir(&blobs).map_err(|e| RunError::io(blobs.display().to_string(), e))?;
    private_dir(&records_dir(home)).map_err(|e| RunError::io("installed records", e))?;
    let in_store = archive.parent().and_then(Path::parent) == Some(blobs.as_path());
    let digest = if in_store {
        move_in(archive, home, &agent.archive_digest)?
    } else {
        copy_in(archive, &blobs)?
    };
    if digest != agent.archive_digest {
        gc(home)?;
        return Err(RunError::store(format!(
            "{}: changed while it was installed",
            archive.display()
        )));
    }
    let dst = blob_path(home, &digest);
    let dst_sig = zot_package::signature::signature_path(&dst);
    match sig.filter(|s| s.is_file()) {
        Some(s) if agent.signature.is_some() => {
            let b = std::fs::read(s).map_err(|e| RunError::io(s.display().to_string(), e))?;
            write_atomic(&dst_sig, &b)
                .map_err(|e| RunError::io(dst_sig.display().to_string(), e))?;
        }
        _ => {}
    }
    let r = Record {
        name: name.to_string(),
        agent: agent.name.clone(),
        version: agent.version.clone(),
        digest,
        content_digest: agent.digest.clone(),
        manifest_digest: manifest_digest.map(Into::into),
        source: source.to_string(),
        installed_at: now(),
        signed_by: agent.signature.as_ref().map(|v| v.key_id.to_string()),
    };
    let p = records_dir(home).join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(&r).expect("record serializes");
    write_atomic(&p, format!("{text}\n").as_bytes())
        .map_err(|e| RunError::io(p.display().to_string(), e))?;
    gc(home)?;
    Ok(r)
}

/// Uninstall `name`: its record, its archive when no other name uses it,
/// and the default when it was this one. The agent's data, consent and
/// sessions are kept.
pub fn remove(home: &Path, name: &str) -> Result<Record, RunError> {
    let r = get(home, name)?.ok_or_else(|| not_installed(name))?;
    let p = records_dir(home).join(format!("{name}.json"));
    std::fs::remove_file(&p).map_err(|e| RunError::io(p.display().to_string(), e))?;
    if default_name(home)?.as_deref() == Some(name) {
        let _ = std::fs::remove_file(default_file(home));
    }
    gc(home)?;
    Ok(r)
}

/// Remove archives no record names.
fn gc(home: &Path) -> Result<(), RunError> {
    let used: std::collections::BTreeSet<PathBuf> = list(home)?
        .iter()
        .map(|r| blob_path(home, &r.digest))
        .collect();
    let dir = blobs_dir(home);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let p = e.path();
        let archive = match p
            .to_str()
            .and_then(|s| s.strip_suffix(zot_package::signature::SIGNATURE_SUFFIX))
        {
            Some(a) => PathBuf::from(a),
            None => p.clone(),
        };
        if !used.contains(&archive) {
            let _ = std::fs::remove_file(&p);
        }
    }
    Ok(())
}

/// Open installed agent `name` offline: its archive is checked against
/// the recorded digest, then loaded like any archive (signature included).
pub fn open(
    home: &Path,
    name: &str,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
) -> Result<LoadedAgent, RunError> {
    let r = get(home, name)?.ok_or_else(|| not_installed(name))?;
    let p = blob_path(home, &r.digest);
    let (d, _) = oci::sha256_file(&p)?;
    if d != r.digest {
        return Err(RunError::store(format!(
            "{name}: the stored archive {} does not match its recorded digest {} (reinstall it)",
            p.display(),
            r.digest
        )));
    }
    let sig = zot_package::signature::signature_path(&p);
    crate::trust::open_archive(&p, &sig, sigs.keys, sigs.required, warnings)
}

/// An archive fetched for installation, in a private scratch dir.
pub struct Fetched {
    pub archive: PathBuf,
    pub signature: Option<PathBuf>,
    pub manifest_digest: Option<String>,
    /// `sha256:` of the archive, when already checked (a pulled layer).
    pub archive_digest: Option<String>,
    /// The source as recorded (absolute for local paths).
    pub source: String,
    pub _scratch: zot_supervisor::journal::TempDir,
}

/// Fetch `reference` (an OCI reference, a directory, or a `.zot` file) as
/// an archive to install; a directory is packed.
pub fn fetch(
    reference: &str,
    cwd: &Path,
    config: &zot_policy::config::Config,
    keys: &zot_package::signature::KeySet,
    progress: &mut oci::Report<'_>,
) -> Result<Fetched, RunError> {
    // In the store's own directory when it can be made there: a pulled
    // archive is then renamed into place, not copied (its digest was
    // checked as it was written).
    let scratch = match crate::home::zot_home() {
        Ok(home) if private_dir(&blobs_dir(&home)).is_ok() => {
            zot_supervisor::journal::for_process(&home)
                .temp_dir(&blobs_dir(&home), ".fetch-")
                .map_err(|e| RunError::Journal(Box::new(e)))?
        }
        _ => crate::deps::scratch_dir("zot-install-")?,
    };
    if oci::looks_like(reference) && !cwd.join(reference).exists() {
        let r = oci::parse(reference).map_err(RunError::reference)?;
        let p = oci::pull(&r, config, scratch.path(), keys, progress)?;
        return Ok(Fetched {
            archive: p.archive,
            signature: p.signature,
            manifest_digest: Some(p.manifest_digest),
            archive_digest: Some(p.archive_digest),
            source: r.to_string(),
            _scratch: scratch,
        });
    }
    let path = cwd.join(reference);
    let meta = std::fs::metadata(&path).map_err(|e| {
        RunError::reference(format!(
            "{reference:?}: {e} (install takes REGISTRY/REPO[:TAG|@DIGEST], a directory or a .zot file)"
        ))
    })?;
    let abs = path.canonicalize().unwrap_or(path.clone());
    if meta.is_dir() {
        let out = scratch.path().join("agent.zot");
        zot_package::pack(&path, Some(&out)).map_err(RunError::Package)?;
        return Ok(Fetched {
            archive: out,
            signature: None,
            manifest_digest: None,
            archive_digest: None,
            source: abs.display().to_string(),
            _scratch: scratch,
        });
    }
    let out = scratch.path().join(
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".zot"))
            .unwrap_or_else(|| "agent.zot".into()),
    );
    std::fs::copy(&path, &out).map_err(|e| RunError::io(path.display().to_string(), e))?;
    let sig = zot_package::signature::signature_path(&path);
    let signature = if sig.is_file() {
        let dst = zot_package::signature::signature_path(&out);
        std::fs::copy(&sig, &dst).map_err(|e| RunError::io(sig.display().to_string(), e))?;
        Some(dst)
    } else {
        None
    };
    Ok(Fetched {
        archive: out,
        signature,
        manifest_digest: None,
        archive_digest: None,
        source: abs.display().to_string(),
        _scratch: scratch,
    })
}

/// What [`verify`] found: the archive is a valid agent, and its signature
/// verified when there is one by a trusted key.
#[derive(Debug)]
pub struct Checked {
    pub name: String,
    pub version: Option<String>,
    /// The agent's content digest.
    pub digest: String,
    /// `sha256:` of the archive file.
    pub archive_digest: String,
    pub signature: Option<zot_package::signature::Verified>,
    pub warnings: Vec<String>,
}

/// Verify a fetched archive as `zot run` would, without extracting it:
/// the loader's checks (streamed), and the signature rules of
/// [`crate::trust::open_archive`] (required: a valid signature by a
/// trusted key; otherwise a trusted key's signature that fails is
/// tampering, and a missing or untrusted one loads unsigned with a
/// warning). An installed agent is checked again, in full, at each run.
pub fn verify(
    f: &Fetched,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
) -> Result<Checked, RunError> {
    use zot_package::signature::{self, SignatureError};
    let shown = match &f.manifest_digest {
        Some(d) => format!("{}@{d}", f.source.split('@').next().unwrap_or(&f.source)),
        None => f.source.clone(),
    };
    let file = f
        .archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sig = f
        .signature
        .clone()
        .unwrap_or_else(|| signature::signature_path(&f.archive));
    // Errors name the source, not the scratch copy.
    let named = |m: String| {
        m.replace(&sig.display().to_string(), &format!("{file}.minisig"))
            .replace(&f.archive.display().to_string(), &file)
    };
    let pkg_err = |e: zot_package::PackageError| {
        RunError::Signature(format!("{shown}: {}", named(crate::ui::error_chain(&e))))
    };
    if sigs.required && f.signature.is_none() {
        return Err(RunError::Signature(format!(
            "{shown}: a signature is required, but it has none{}",
            if f.manifest_digest.is_some() {
                " in the registry (publish it with `zot publish --key`)"
            } else {
                " (ARCHIVE.minisig next to it)"
            }
        )));
    }
    if sigs.required && sigs.keys.is_empty() {
        return Err(RunError::Signature(format!(
            "{shown}: a signature is required but no key is trusted (add publisher keys to $ZOT_HOME/trusted-keys/)"
        )));
    }
    let verified = if sigs.keys.is_empty() {
        None
    } else {
        match signature::Signature::read(&sig)
            .and_then(|s| signature::verify_file(&f.archive, &sig, &s, sigs.keys))
        {
            Ok(v) => Some(v),
            Err(e) if sigs.required => {
                return Err(pkg_err(zot_package::PackageError::Signature(e)))
            }
            Err(SignatureError::Missing { .. }) => None,
            Err(
                e @ (SignatureError::UntrustedKey { .. }
                | SignatureError::Signature { .. }
                | SignatureError::TooLarge { .. }),
            ) => {
                warnings.push(format!(
                    "installing unsigned: {}",
                    named(crate::ui::error_chain(&e))
                ));
                None
            }
            Err(e) => return Err(pkg_err(zot_package::PackageError::Signature(e))),
        }
    };
    let summary = zot_package::inspect(&f.archive).map_err(|e| {
        RunError::reference(format!("{shown}: {}", named(crate::ui::error_chain(&e))))
    })?;
    if summary.kind != zot_package::SourceKind::Archive {
        return Err(RunError::store(format!("{shown}: not a .zot archive")));
    }
    if let Some(v) = &verified {
        zot_package::check_claims(&f.archive, v, &summary.manifest, &summary.digest)
            .map_err(pkg_err)?;
    }
    let archive_digest = match &f.archive_digest {
        Some(d) => d.clone(),
        None => oci::sha256_file(&f.archive)?.0,
    };
    Ok(Checked {
        name: summary.manifest.name.clone(),
        version: summary.manifest.version.clone().filter(|v| !v.is_empty()),
        digest: summary.digest.clone(),
        archive_digest,
        signature: verified,
        warnings: summary.warnings,
    })
}

/// Rename `src` (fetched into a scratch dir inside the store, its
/// `digest` already checked) into place: synced, mode 0600.
fn move_in(src: &Path, home: &Path, digest: &str) -> Result<String, RunError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e| RunError::io(src.display().to_string(), e);
    let f = std::fs::File::open(src).map_err(io)?;
    f.sync_all().map_err(io)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    let dst = blob_path(home, digest);
    std::fs::rename(src, &dst).map_err(|e| RunError::io(dst.display().to_string(), e))?;
    Ok(digest.to_string())
}

/// Copy `src` into `dir` as `<hex>.zot` in one pass (hashing as it
/// copies; a temp file renamed into place). Returns the digest.
fn copy_in(src: &Path, dir: &Path) -> Result<String, RunError> {
    use sha2::Digest;
    use std::io::{Read, Write};
    let io = |e| RunError::io(src.display().to_string(), e);
    let mut input = std::fs::File::open(src).map_err(io)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(|e| RunError::io(dir.display().to_string(), e))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        tmp.write_all(&buf[..n])
            .map_err(|e| RunError::io(dir.display().to_string(), e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| RunError::io(dir.display().to_string(), e))?;
    let digest = format!("sha256:{}", hex::encode(h.finalize()));
    let hex = digest.trim_start_matches("sha256:");
    let dst = dir.join(format!("{hex}.zot"));
    tmp.persist(&dst)
        .map_err(|e| RunError::io(dst.display().to_string(), e.error))?;
    Ok(digest)
}

/// Progress sink that ignores everything.
pub fn quiet(_: &Progress) -> Result<(), RunError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_gc() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        assert!(list(home).unwrap().is_empty());
        assert!(get(home, "x").unwrap().is_none());
        assert!(get(home, "../x").unwrap().is_none());
        private_dir(&records_dir(home)).unwrap();
        private_dir(&blobs_dir(home)).unwrap();
        let digest = oci::sha256(b"zot");
        std::fs::write(blob_path(home, &digest), b"zot").unwrap();
        std::fs::write(blob_path(home, &oci::sha256(b"old")), b"old").unwrap();
        let r = Record {
            name: "rev".into(),
            agent: "rev".into(),
            version: Some("1.0.0".into()),
            digest: digest.clone(),
            content_digest: digest.clone(),
            manifest_digest: None,
            source: "/x".into(),
            installed_at: 1,
            signed_by: None,
        };
        write_atomic(
            &records_dir(home).join("rev.json"),
            serde_json::to_string(&r).unwrap().as_bytes(),
        )
        .unwrap();
        assert_eq!(list(home).unwrap(), vec![r.clone()]);
        set_default(home, "rev").unwrap();
        assert_eq!(default_name(home).unwrap().as_deref(), Some("rev"));
        assert!(set_default(home, "other").is_err());
        gc(home).unwrap();
        assert!(blob_path(home, &digest).exists());
        assert!(!blob_path(home, &oci::sha256(b"old")).exists());
        remove(home, "rev").unwrap();
        assert!(default_name(home).unwrap().is_none());
        assert!(!blob_path(home, &digest).exists());
        assert!(remove(home, "rev").is_err());
    }
}
