//! Signed archives: loading one whose signature verifies, and signing one.

use std::fs;
use std::path::Path;

use zot_policy::zotfile::Manifest;

use crate::agent::Agent;
use crate::checks::check_compressed_size;
use crate::inspect::{inspect, Summary};
use crate::open::open;
use crate::{signature, Limits, PackageError};

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
