//! `zot convert SRC --to zotfile|agent-toml OUT`: map a package between the
//! zotfile and agent.toml formats where fields have an equivalent, and list
//! every field that could not be carried. OUT is a new folder, or a `.zot`
//! (zotfile) / `.zip` (agent.toml) file. Nothing is written when the source
//! is invalid.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use zot_package::agent_toml::{self, convert};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// A zotfile (manifest.json + AGENT.md + skills/)
    Zotfile,
    /// An agent.toml package (canonical folder or ZIP)
    AgentToml,
}

#[derive(clap::Args)]
pub struct Args {
    /// The package to convert (agent.toml folder or ZIP, zotfile directory or .zot)
    pub source: PathBuf,
    /// Target format
    #[arg(long, value_enum)]
    pub to: Target,
    /// Output: a new folder, or a file ending in .zot (zotfile) or .zip (agent.toml)
    pub out: PathBuf,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Output<'a> {
    out: &'a Path,
    /// `zotfile` or `agent-toml`.
    format: &'static str,
    /// The archive's digest, when OUT is a `.zot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<&'a str>,
    /// Source fields the target format has no place for.
    not_carried: &'a [String],
}

fn is_agent_toml(path: &Path) -> bool {
    if path.is_dir() {
        !path.join(zot_policy::zotfile::MANIFEST_FILE).exists() && agent_toml::detect(path)
    } else {
        agent_toml::is_zip_file(path)
    }
}

fn ext_is(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

fn load_agent_toml(path: &Path) -> anyhow::Result<agent_toml::AgentPackage> {
    agent_toml::load(path)
        .map_err(|d| anyhow::anyhow!("{} is not a valid agent.toml package:\n{d}", path.display()))
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if std::fs::symlink_metadata(&args.out).is_ok() && !args.out.is_dir() {
        bail!("{} already exists", args.out.display());
    }
    let from_agent_toml = is_agent_toml(&args.source);
    let mut digest = None;
    let not_carried = match (from_agent_toml, args.to) {
        (true, Target::Zotfile) => {
            let pkg = load_agent_toml(&args.source)?;
            let conv = convert::to_zotfile(&pkg).map_err(anyhow::Error::msg)?;
            if ext_is(&args.out, "zot") {
                let tmp = tempfile::tempdir().context("creating a temporary directory")?;
                let dir = tmp.path().join(&pkg.name);
                agent_toml::write_tree(&conv.entries, &dir)
                    .with_context(|| format!("writing {}", dir.display()))?;
                let outcome = zot_package::pack(&dir, Some(&args.out))
                    .context("packing the converted zotfile")?;
                digest = Some(outcome.digest);
            } else {
                agent_toml::write_tree(&conv.entries, &args.out)
                    .with_context(|| format!("writing {}", args.out.display()))?;
                zot_package::inspect(&args.out).context("the converted zotfile does not load")?;
            }
            conv.not_carried
        }
        (false, Target::AgentToml) => {
            let (pkg, nc) = convert::from_zotfile(&args.source).map_err(anyhow::Error::msg)?;
            write_agent_toml(&pkg, &args.out)?;
            nc
        }
        (true, Target::AgentToml) => {
            // Canonical re-export (e.g. folder -> ZIP): nothing is lost.
            let pkg = load_agent_toml(&args.source)?;
            write_agent_toml(&pkg, &args.out)?;
            Vec::new()
        }
        (false, Target::Zotfile) => {
            eprintln!(
                "zot: {} is already a zotfile (nothing to convert; --to agent-toml converts it)",
                args.source.display()
            );
            return Ok(super::USAGE);
        }
    };
    if args.json {
        let o = Output {
            out: &args.out,
            format: match args.to {
                Target::Zotfile => "zotfile",
                Target::AgentToml => "agent-toml",
            },
            digest: digest.as_deref(),
            not_carried: &not_carried,
        };
        super::inspect::emit(&format!("{}\n", serde_json::to_string(&o)?))?;
        return Ok(0);
    }
    let target = match args.to {
        Target::Zotfile => "zotfile",
        Target::AgentToml => "agent.toml package",
    };
    let mut text = String::new();
    if let Some(d) = &digest {
        text.push_str(&format!("digest {d}\n"));
    }
    text.push_str(&format!("wrote {target} {}\n", args.out.display()));
    if not_carried.is_empty() {
        text.push_str("every field was carried\n");
    } else {
        text.push_str(&format!("not carried ({}):\n", not_carried.len()));
        for n in &not_carried {
            text.push_str(&format!("  - {n}\n"));
        }
    }
    super::inspect::emit(&text)?;
    Ok(0)
}

fn write_agent_toml(pkg: &agent_toml::AgentPackage, out: &Path) -> anyhow::Result<()> {
    if ext_is(out, "zip") {
        if out.exists() {
            bail!("{} already exists", out.display());
        }
        pkg.write_zip(out)
            .with_context(|| format!("writing {}", out.display()))?;
    } else {
        pkg.write_dir(out)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    agent_toml::load(out)
        .map_err(|d| anyhow::anyhow!("the converted package does not validate:\n{d}"))?;
    Ok(())
}
