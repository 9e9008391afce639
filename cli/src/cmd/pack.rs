//! `zot pack [DIR] [OUT]`: deterministic `.zot` archive of an agent directory.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Agent directory (default: the current directory); an agent.toml
    /// folder packs to its canonical ZIP instead
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output archive (default: <manifest name>.zot; `.zot` is appended when
    /// missing). An existing directory, or a path ending in `/`, receives
    /// <manifest name>.zot; missing parent directories are created
    pub out: Option<PathBuf>,
    /// Pack files that look like credentials (.env, private keys, credential
    /// stores) instead of refusing them
    #[arg(long)]
    pub include_secrets: bool,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Output<'a> {
    out: &'a std::path::Path,
    digest: &'a str,
    format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<usize>,
    warnings: &'a [String],
}

fn report(args: &Args, o: &Output) -> anyhow::Result<u8> {
    if args.json {
        super::inspect::emit(&format!("{}\n", serde_json::to_string(o)?))?;
    } else {
        for w in o.warnings {
            eprintln!("zot: warning: {w}");
        }
        super::inspect::emit(&format!("wrote {}\ndigest {}\n", o.out.display(), o.digest))?;
    }
    Ok(0)
}

/// Trees with at least this many bytes of files get a progress bar.
const PROGRESS_FROM: u64 = 16 << 20;

pub fn run(args: Args) -> anyhow::Result<u8> {
    if super::inspect::is_agent_toml(&args.dir) {
        return pack_agent_toml(&args);
    }
    let opts = zot_package::PackOptions {
        include_secrets: args.include_secrets,
        ..Default::default()
    };
    // A bar for trees large enough to take a moment (drawn only on a
    // terminal).
    let mut bar: Option<crate::ui::progress::Bytes> = None;
    let outcome = zot_package::pack_with_progress(
        &args.dir,
        args.out.as_deref(),
        &opts,
        &mut |done, total| {
            if total >= PROGRESS_FROM {
                bar.get_or_insert_with(|| {
                    crate::ui::progress::Bytes::start("packing", Some(total))
                })
                .set(done, Some(total));
            }
        },
    )
    .with_context(|| format!("packing {}", args.dir.display()))?;
    drop(bar);
    report(
        &args,
        &Output {
            out: &outcome.out,
            digest: &outcome.digest,
            format: "zotfile",
            size: Some(outcome.size),
            files: Some(outcome.files),
            warnings: &outcome.warnings,
        },
    )
}

/// An agent.toml folder packs to its canonical, deterministic ZIP.
fn pack_agent_toml(args: &Args) -> anyhow::Result<u8> {
    use zot_package::agent_toml;
    let pkg = agent_toml::load(&args.dir).map_err(|d| {
        anyhow::Error::new(d).context(format!("invalid agent.toml package {}", args.dir.display()))
    })?;
    let out = zot_package::output::Output::resolve(args.out.as_deref(), &pkg.name, "zip")?;
    let created = out.create_parents()?;
    pkg.write_zip(&out.abs)
        .with_context(|| format!("writing {}", out.path.display()))?;
    created.keep();
    report(
        args,
        &Output {
            out: &out.path,
            digest: &pkg.digest(),
            format: "agent.toml",
            size: None,
            files: None,
            warnings: &[],
        },
    )
}
