//! `zot verify REF [--key PUB]... [--json]`: the archive loads safely, the
//! manifest and layout are valid and, with keys (`--key`, or trusted keys
//! in `$ZOT_HOME/trusted-keys/`), its minisign signature verifies.

use std::path::{Path, PathBuf};

use serde_json::json;
use zot_package::signature::{self, KeySet, PublicKey};

use super::inspect::{emit, load, Loaded};

/// Said on every verify without keys: the command name must not suggest
/// more than it does.
pub const NO_SIGNATURE: &str =
    "no signature was checked (no --key given and no trusted keys in $ZOT_HOME/trusted-keys/); the digest identifies the content, not its author";

/// Said when trusted keys exist but the reference is not a local archive.
pub const NOT_SIGNABLE: &str =
    "no signature was checked: only local .zot archives carry signatures (directories and agent.toml packages have no signed artifact; for GitHub references use `zot run --require-signature`)";

/// A local file that is not a ZIP: what `zot sign` signs.
fn is_local_archive(reference: &str) -> bool {
    let p = Path::new(reference);
    p.is_file() && !zot_package::agent_toml::is_zip_file(p)
}

#[derive(clap::Args)]
#[command(
    after_help = "With --key (or when $ZOT_HOME/trusted-keys/ holds *.pub keys) the archive must carry a valid minisign signature, ARCHIVE.minisig, by one of those keys: a missing, malformed or untrusted signature, or an archive that does not match it, is an error naming the file. Without keys no signature is checked, and zot says so."
)]
pub struct Args {
    /// A .zot archive (or an agent directory, an agent.toml package, or any
    /// reference `zot run` accepts; signatures are checked on local .zot
    /// archives only)
    pub reference: String,
    /// A public key to verify the signature with (repeatable; replaces the
    /// trusted keys)
    #[arg(long, short = 'k', value_name = "PUB")]
    pub key: Vec<PathBuf>,
    /// The signature file (default: ARCHIVE.minisig)
    #[arg(long, value_name = "FILE")]
    pub signature: Option<PathBuf>,
    /// Print the result as JSON on stdout (also on failure)
    #[arg(long)]
    pub json: bool,
}

fn keys(args: &Args) -> anyhow::Result<KeySet> {
    if !args.key.is_empty() {
        let keys = args
            .key
            .iter()
            .map(|p| PublicKey::read(p))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(KeySet::new(keys));
    }
    match zot_agent::home::zot_home() {
        Ok(home) => Ok(zot_agent::trust::trusted_keys(&home)?),
        Err(_) => Ok(KeySet::default()),
    }
}

fn fail_json(
    reference: &str,
    err: &anyhow::Error,
    checked: bool,
    note: &str,
) -> anyhow::Result<u8> {
    let out = json!({
        "ok": false,
        "source": reference,
        "error": format!("{err:#}"),
        "signature": if checked {
            json!({ "checked": true, "valid": false })
        } else {
            json!({ "checked": false, "note": note })
        },
    });
    emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    super::print_error(err);
    Ok(super::FAILURE)
}

fn verify_signed(args: &Args, keys: &KeySet) -> anyhow::Result<u8> {
    let path = Path::new(&args.reference);
    let r = (|| -> anyhow::Result<_> {
        if !path.exists() {
            anyhow::bail!(
                "{}: signatures are checked on local .zot archives only (download the archive and its .minisig, or use `zot run --require-signature`)",
                args.reference
            );
        }
        if path.is_file() && zot_package::agent_toml::is_zip_file(path) {
            anyhow::bail!(
                "{}: agent.toml packages are not signed by zot (only .zot archives are)",
                args.reference
            );
        }
        let sig = args
            .signature
            .clone()
            .unwrap_or_else(|| signature::signature_path(path));
        Ok(zot_package::inspect_signed(path, &sig, keys)?)
    })();
    let (s, v) = match r {
        Ok(x) => x,
        Err(e) if args.json => return fail_json(&args.reference, &e, true, ""),
        Err(e) => return Err(e.context(format!("verifying {}", args.reference))),
    };
    if args.json {
        let out = json!({
            "ok": true,
            "format": "zotfile",
            "source": s.source,
            "kind": s.kind,
            "name": s.manifest.name,
            "version": s.manifest.version,
            "digest": s.digest,
            "files": s.files.len(),
            "total_size": s.total_size,
            "compressed_size": s.compressed_size,
            "compression": s.compression,
            "warnings": s.warnings,
            "signature": {
                "checked": true,
                "valid": true,
                "file": v.signature,
                "key_id": v.key_id,
                "key_file": v.key_file,
                "trusted_comment": v.trusted_comment,
                "claims": v.claims,
            },
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        for w in &s.warnings {
            eprintln!("zot: warning: {w}");
        }
        let key = match &v.key_file {
            Some(f) => format!("key {} ({})", v.key_id, f.display()),
            None => format!("key {}", v.key_id),
        };
        emit(&format!(
            "ok: {} archive loads safely; manifest and layout are valid ({} files)\ndigest {}\nsignature {} verified: {key}\ntrusted comment: {}\n",
            s.manifest.display_id(),
            s.files.len(),
            s.digest,
            v.signature.display(),
            v.trusted_comment
        ))?;
    }
    Ok(0)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // A registry reference is pulled first (the layer checked against its
    // digest, the signature referrer beside it), then verified as the
    // local archive it is.
    let mut args = args;
    let _pulled = match super::registry::pull_for_local(&args.reference)? {
        Some(p) => {
            if args.signature.is_none() {
                args.signature = p.signature.clone();
            }
            args.reference = p.archive.display().to_string();
            Some(p)
        }
        None => None,
    };
    let keys = match keys(&args) {
        Ok(k) => k,
        Err(e) if args.json => return fail_json(&args.reference, &e, true, ""),
        Err(e) => return Err(e),
    };
    // Explicit keys always mean "check the signature"; trusted keys do for
    // local archives (a directory is still validated, and says why no
    // signature was checked).
    let note = if keys.is_empty() {
        NO_SIGNATURE
    } else if !args.key.is_empty() || is_local_archive(&args.reference) {
        return verify_signed(&args, &keys);
    } else {
        NOT_SIGNABLE
    };
    if args.signature.is_some() {
        eprintln!(
            "zot: --signature needs a key: give --key PUB or trust keys in $ZOT_HOME/trusted-keys/"
        );
        return Ok(super::USAGE);
    }
    let loaded = match load(&args.reference) {
        Ok(l) => l,
        Err(err) if args.json => return fail_json(&args.reference, &err, false, note),
        Err(e) => return Err(e.context(format!("verifying {}", args.reference))),
    };
    match loaded {
        Loaded::Zotfile(s) => {
            if args.json {
                let out = json!({
                    "ok": true,
                    "format": "zotfile",
                    "source": s.source,
                    "kind": s.kind,
                    "name": s.manifest.name,
                    "version": s.manifest.version,
                    "digest": s.digest,
                    "files": s.files.len(),
                    "total_size": s.total_size,
                    "compressed_size": s.compressed_size,
                    "compression": s.compression,
                    "warnings": s.warnings,
                    "signature": { "checked": false, "note": note },
                });
                emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            } else {
                for w in &s.warnings {
                    eprintln!("zot: warning: {w}");
                }
                let what = match s.kind {
                    zot_package::SourceKind::Archive => "archive loads safely",
                    zot_package::SourceKind::Directory => "directory is a valid agent",
                };
                emit(&format!(
                    "ok: {} {what}; manifest and layout are valid ({} files)\ndigest {}\nnote: {note}\n",
                    s.manifest.display_id(),
                    s.files.len(),
                    s.digest
                ))?;
            }
        }
        Loaded::AgentToml(s) => {
            if args.json {
                let out = json!({
                    "ok": true,
                    "format": "agent.toml",
                    "source": s.source,
                    "kind": s.kind,
                    "name": s.name,
                    "digest": s.digest,
                    "files": s.files.len(),
                    "unsupported": s.unsupported,
                    "signature": { "checked": false, "note": note },
                });
                emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            } else {
                emit(&format!(
                    "verified agent.toml package {}\ndigest {}\nnote: {note}\n",
                    s.name, s.digest
                ))?;
            }
        }
    }
    Ok(0)
}
