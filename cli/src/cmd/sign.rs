//! `zot sign ARCHIVE --key FILE`: write `ARCHIVE.minisig`.

use std::path::PathBuf;

use serde_json::json;
use zot_package::signature::{self, SecretKeyFile};

use super::inspect::emit;
use super::password;

#[derive(clap::Args)]
#[command(after_help = "\
The signature is minisign's (prehashed Ed25519): `minisign -V -p KEY.pub -m \
ARCHIVE` verifies it too. Its trusted comment carries the agent's name, \
version and archive digest, which `zot verify` and `zot run` check against \
the archive. A password-protected key's password comes from \
ZOT_SIGNING_PASSWORD, else it is asked on the terminal.")]
pub struct Args {
    /// The .zot archive to sign (it is validated first)
    pub archive: PathBuf,
    /// The secret key (from `zot keygen` or `minisign -G`)
    #[arg(long, short = 'k', value_name = "FILE")]
    pub key: PathBuf,
    /// Where to write the signature (default: ARCHIVE.minisig)
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// Read and unlock the secret key at `path` (its password from
/// ZOT_SIGNING_PASSWORD, else asked on the terminal).
pub fn unlock_key(path: &std::path::Path) -> anyhow::Result<signature::SecretKey> {
    let file = SecretKeyFile::read(path)?;
    let pw = if file.encrypted() {
        match password::from_env()? {
            Some(pw) => Some(pw),
            None if password::on_terminal() => Some(rpassword::prompt_password(format!(
                "Password for {}: ",
                path.display()
            ))?),
            None => anyhow::bail!(
                "{}: the secret key is password-protected: set {} or run on a terminal",
                path.display(),
                password::ENV
            ),
        }
    } else {
        None
    };
    Ok(file.unlock(pw)?)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let key = unlock_key(&args.key)?;
    let out = args
        .output
        .unwrap_or_else(|| signature::signature_path(&args.archive));
    let (summary, v) = zot_package::sign(&args.archive, &out, &key)?;
    if args.json {
        let o = json!({
            "ok": true,
            "archive": args.archive,
            "signature": v.signature,
            "key_id": v.key_id,
            "name": summary.manifest.name,
            "version": summary.manifest.version,
            "digest": summary.digest,
            "trusted_comment": v.trusted_comment,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&o)?))?;
    } else {
        emit(&format!(
            "signed {} ({}) with key {}\nwrote {}\n",
            summary.manifest.display_id(),
            summary.digest,
            v.key_id,
            v.signature.display()
        ))?;
    }
    Ok(0)
}
