//! `zot verify REF [--json]`: the archive loads safely, the manifest and
//! layout are valid. No signature is checked (zot has none yet).

use serde_json::json;

use super::inspect::{emit, load, Loaded};

/// Said on every verify: the command name must not suggest more than it does.
pub const NO_SIGNATURE: &str =
    "no signature was checked: zot does not verify publisher signatures yet; the digest identifies the content, not its author";

#[derive(clap::Args)]
pub struct Args {
    /// A .zot archive (or an agent directory, an agent.toml package, or any
    /// reference `zot run` accepts)
    pub reference: String,
    /// Print the result as JSON on stdout (also on failure)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let loaded = match load(&args.reference) {
        Ok(l) => l,
        Err(err) if args.json => {
            let out = json!({
                "ok": false,
                "source": args.reference,
                "error": format!("{err:#}"),
                "signature": { "checked": false, "note": NO_SIGNATURE },
            });
            emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            super::print_error(&err);
            return Ok(super::FAILURE);
        }
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
                    "signature": { "checked": false, "note": NO_SIGNATURE },
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
                    "ok: {} {what}; manifest and layout are valid ({} files)\ndigest {}\nnote: {NO_SIGNATURE}\n",
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
                    "signature": { "checked": false, "note": NO_SIGNATURE },
                });
                emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
            } else {
                emit(&format!(
                    "verified agent.toml package {}\ndigest {}\nnote: {NO_SIGNATURE}\n",
                    s.name, s.digest
                ))?;
            }
        }
    }
    Ok(0)
}
