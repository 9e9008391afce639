//! `zot pack [DIR] [OUT]`: deterministic `.zot` archive of an agent directory.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Agent directory (default: the current directory)
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output archive (default: <manifest name>.zot; `.zot` is appended when missing)
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
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
