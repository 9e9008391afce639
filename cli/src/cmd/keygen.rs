//! `zot keygen FILE`: a minisign key pair for `zot sign`.

use std::path::PathBuf;

use serde_json::json;
use zot_package::signature::{self, Protection};

use super::inspect::emit;
use super::password;

#[derive(clap::Args)]
#[command(after_help = "\
The secret key is password-protected: the password comes from \
ZOT_SIGNING_PASSWORD when set, else it is asked on the terminal. With no \
terminal and no ZOT_SIGNING_PASSWORD the key is written unencrypted, and \
zot says so. The files are in minisign's format: `minisign -S -s FILE` \
signs with the key, `minisign -V -p FILE.pub` verifies.\n\n\
Trust the key on the machines that run your agents by copying FILE.pub \
into $ZOT_HOME/trusted-keys/.")]
pub struct Args {
    /// Where to write the secret key (mode 0600); the public key goes to
    /// FILE.pub. Existing files are never overwritten.
    pub file: PathBuf,
    /// Write the secret key without a password (for automation that
    /// cannot keep one; anyone who reads the file can sign)
    #[arg(long)]
    pub unencrypted: bool,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let env = password::from_env()?;
    let (protection, note) = if args.unencrypted {
        if env.is_some() {
            eprintln!("zot: --unencrypted contradicts ZOT_SIGNING_PASSWORD: unset one of them");
            return Ok(super::USAGE);
        }
        (
            Protection::Unencrypted,
            Some("the secret key is not password-protected (--unencrypted)"),
        )
    } else if let Some(pw) = env {
        (Protection::Password(pw), None)
    } else if password::on_terminal() {
        let pw = rpassword::prompt_password("Password for the new secret key: ")?;
        if pw.is_empty() {
            anyhow::bail!("empty password (use --unencrypted for a key without one)");
        }
        let again = rpassword::prompt_password("Password (again): ")?;
        if pw != again {
            anyhow::bail!("the passwords do not match; nothing was written");
        }
        (Protection::Password(pw), None)
    } else {
        (
            Protection::Unencrypted,
            Some(
                "no terminal and no ZOT_SIGNING_PASSWORD: the secret key is NOT password-protected",
            ),
        )
    };
    let k = signature::keygen(&args.file, protection)?;
    if let Some(n) = note {
        eprintln!("zot: warning: {n}");
    }
    if args.json {
        let out = json!({
            "secret_key": k.secret,
            "public_key": k.public,
            "key_id": k.key_id,
            "encrypted": k.encrypted,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        emit(&format!(
            "wrote secret key {} ({})\nwrote public key {}\nkey id {}\ntrust it where agents run: copy {} into $ZOT_HOME/trusted-keys/\n",
            k.secret.display(),
            if k.encrypted { "password-protected" } else { "NOT password-protected" },
            k.public.display(),
            k.key_id,
            k.public.display(),
        ))?;
    }
    Ok(0)
}
