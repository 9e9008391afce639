//! `zot pack [DIR] [OUT]`: deterministic `.zot` archive of an agent directory.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Agent directory (default: the current directory); an agent.toml
    /// folder packs to its canonical ZIP instead
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output archive (default: <manifest name>.zot; `.zot` is appended when missing)
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if super::inspect::is_agent_toml(&args.dir) {
        return pack_agent_toml(&args);
    }
    let outcome = zot_package::pack(&args.dir, args.out.as_deref())
        .with_context(|| format!("packing {}", args.dir.display()))?;
    for w in &outcome.warnings {
        eprintln!("zot: warning: {w}");
    }
    super::inspect::emit(&format!(
        "wrote {}\ndigest {}\n",
        outcome.out.display(),
        outcome.digest
    ))?;
    Ok(0)
}

/// An agent.toml folder packs to its canonical, deterministic ZIP.
fn pack_agent_toml(args: &Args) -> anyhow::Result<u8> {
    use zot_package::agent_toml;
    let pkg = agent_toml::load(&args.dir).map_err(|d| {
        anyhow::Error::new(d).context(format!("invalid agent.toml package {}", args.dir.display()))
    })?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.zip", pkg.name)));
    pkg.write_zip(&out)
        .with_context(|| format!("writing {}", out.display()))?;
    super::inspect::emit(&format!(
        "wrote {}\ndigest {}\n",
        out.display(),
        pkg.digest()
    ))?;
    Ok(0)
}
