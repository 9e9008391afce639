//! `zot unpack ARCHIVE DIR`: extraction with the loader's safety.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// The .zot archive
    pub archive: PathBuf,
    /// Destination: must not exist, or be an empty directory
    pub dir: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let s = zot_package::unpack(&args.archive, &args.dir)
        .with_context(|| format!("unpacking {}", args.archive.display()))?;
    for w in &s.warnings {
        eprintln!("zot: warning: {w}");
    }
    super::inspect::emit(&format!(
        "unpacked {} files into {}\ndigest {}\n",
        s.files.len(),
        args.dir.display(),
        s.digest
    ))?;
    Ok(0)
}
