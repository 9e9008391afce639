//! `zot verify REF [--json]`: the archive loads safely, the manifest and
//! layout are valid. No signature is checked (zot has none yet).

use serde_json::json;

/// Said on every verify: the command name must not suggest more than it does.
pub const NO_SIGNATURE: &str =
    "no signature was checked: zot does not verify publisher signatures yet; the digest identifies the content, not its author";

#[derive(clap::Args)]
pub struct Args {
    /// A .zot archive (or an agent directory, or any reference `zot run` accepts)
    pub reference: String,
    /// Print the result as JSON on stdout (also on failure)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match super::inspect::load(&args.reference) {
        Ok(s) => {
            if args.json {
                let out = json!({
                    "ok": true,
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
                    "signature": { "checked": false, "note": NO_SIGNATURE },
                });
                super::inspect::emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            } else {
                for w in &s.warnings {
                    eprintln!("zot: warning: {w}");
                }
                let what = match s.kind {
                    zot_package::SourceKind::Archive => "archive loads safely",
                    zot_package::SourceKind::Directory => "directory is a valid agent",
                };
                super::inspect::emit(&format!(
                    "ok: {} {what}; manifest and layout are valid ({} files)\ndigest {}\nnote: {NO_SIGNATURE}\n",
                    s.manifest.display_id(),
                    s.files.len(),
                    s.digest
                ))?;
            }
            Ok(0)
        }
        Err(err) if args.json => {
            let out = json!({
                "ok": false,
                "source": args.reference,
                "error": format!("{err:#}"),
                "signature": { "checked": false, "note": NO_SIGNATURE },
            });
            super::inspect::emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            super::print_error(&err);
            Ok(super::FAILURE)
        }
        Err(e) => Err(e.context(format!("verifying {}", args.reference))),
    }
}
