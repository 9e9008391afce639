//! `zot unpack ARCHIVE DIR`: extraction with the loader's safety.

use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// The .zot archive, or an agent in a registry
    /// (REGISTRY/REPO[:TAG|@sha256:DIGEST])
    pub archive: PathBuf,
    /// Destination: must not exist, or be an empty directory
    pub dir: PathBuf,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Output<'a> {
    archive: &'a std::path::Path,
    dir: &'a std::path::Path,
    digest: &'a str,
    files: usize,
    warnings: &'a [String],
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let pulled = super::registry::pull_for_local(&args.archive.to_string_lossy())?;
    let src = pulled
        .as_ref()
        .map_or(args.archive.clone(), |p| p.archive.clone());
    let s = zot_package::unpack(&src, &args.dir)
        .with_context(|| format!("unpacking {}", args.archive.display()))?;
    if args.json {
        let o = Output {
            archive: &args.archive,
            dir: &args.dir,
            digest: &s.digest,
            files: s.files.len(),
            warnings: &s.warnings,
        };
        super::inspect::emit(&format!("{}\n", serde_json::to_string(&o)?))?;
        return Ok(0);
    }
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
