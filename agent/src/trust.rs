//! Publisher signatures for `zot run`: trusted keys in
//! `$ZOT_HOME/trusted-keys/*.pub` (`[trust] require_signature` in the config
//! file turns the requirement on), and the
//! check of an archive's `.minisig` before it is loaded.
//!
//! What is covered: a `.zot` archive (local, downloaded from a GitHub
//! release, or a `.zot` file inside a GitHub repository) with its
//! `ARCHIVE.minisig` next to it. Not covered: directories (local or in a
//! repository) and agent.toml packages have no signed artifact; under
//! `--require-signature` they are refused.

use std::path::{Path, PathBuf};

use zot_package::signature::{self, KeySet, SignatureError, Verified};

use crate::deps::{self, LoadedAgent};
use crate::RunError;

/// The trusted keys directory under a zot home.
pub const TRUSTED_KEYS_DIR: &str = "trusted-keys";

pub fn trusted_keys_dir(zot_home: &Path) -> PathBuf {
    zot_home.join(TRUSTED_KEYS_DIR)
}

/// Every `*.pub` key in `$ZOT_HOME/trusted-keys/` (none when it is absent).
pub fn trusted_keys(zot_home: &Path) -> Result<KeySet, RunError> {
    KeySet::read_dir(&trusted_keys_dir(zot_home)).map_err(sig_err)
}

fn sig_err(e: SignatureError) -> RunError {
    RunError::Package(zot_package::PackageError::Signature(e))
}

/// A signature that verified, as consent shows it.
pub fn signer_line(v: &Verified) -> String {
    let key = match &v.key_file {
        Some(f) => format!("key {} ({})", v.key_id, f.display()),
        None => format!("key {}", v.key_id),
    };
    format!("{key}; trusted comment: {}", v.trusted_comment)
}

/// Load the archive at `archive`, checking `sig` (normally
/// `ARCHIVE.minisig`) against the trusted keys first; what is loaded is
/// bound to what was verified by its digest. With `required`, a missing,
/// malformed, untrusted or invalid signature refuses the run. Without it,
/// a missing signature, a malformed one or one by a key that is not
/// trusted loads the archive unsigned (a warning says why), but a
/// signature by a trusted key that does not verify still refuses it: that
/// is tampering.
pub fn open_archive(
    archive: &Path,
    sig: &Path,
    keys: &KeySet,
    required: bool,
    warnings: &mut Vec<String>,
) -> Result<LoadedAgent, RunError> {
    let verified = if keys.is_empty() {
        if required {
            return Err(RunError::Signature(format!(
                "{}: a signature is required but no key is trusted (add publisher keys to {})",
                archive.display(),
                TRUSTED_KEYS_DIR_HINT
            )));
        }
        None
    } else {
        match signature::Signature::read(sig)
            .and_then(|s| signature::verify_file(archive, sig, &s, keys))
        {
            Ok(v) => Some(v),
            Err(e) if required => return Err(sig_err(e)),
            Err(SignatureError::Missing { .. }) => None,
            Err(
                e @ (SignatureError::UntrustedKey { .. }
                | SignatureError::Signature { .. }
                | SignatureError::TooLarge { .. }),
            ) => {
                warnings.push(format!("running unsigned: {}", error_chain(&e)));
                None
            }
            Err(e) => return Err(sig_err(e)),
        }
    };
    let mut agent = deps::open_agent(archive)?;
    if let Some(v) = &verified {
        let Some(pkg) = agent._package.as_ref() else {
            return Err(RunError::Signature(format!(
                "{}: only .zot archives can be signed",
                archive.display()
            )));
        };
        zot_package::check_claims(archive, v, &pkg.manifest, &agent.digest)
            .map_err(RunError::Package)?;
    }
    agent.signature = verified;
    Ok(agent)
}

/// Refuse a reference that has no signed artifact under
/// `--require-signature` (`what` says what it is).
pub fn refuse_unsignable(reference: &str, what: &str) -> RunError {
    RunError::Signature(format!(
        "{reference}: a signature is required, but {what} has no signed artifact (pack it into a .zot archive, sign it with `zot sign`, and run the archive)"
    ))
}

const TRUSTED_KEYS_DIR_HINT: &str = "$ZOT_HOME/trusted-keys/";

pub(crate) use crate::ui::error_chain;
