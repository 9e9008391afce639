//! `zot update [NAME...] [-y]`: re-resolve the tags installed agents came
//! from and replace them by what the tags name now (see
//! docs/registries.md).

use std::io::{BufRead, IsTerminal, Write};

use zot_agent::{oci, store};

use super::registry::{self, Ctx};

#[derive(clap::Args)]
pub struct Args {
    /// Installed names (default: every installed agent)
    pub names: Vec<String>,
    /// Replace without asking
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Refuse a new version unless its signature verifies with a trusted key
    #[arg(long)]
    pub require_signature: bool,
}

fn ask(question: &str) -> bool {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes")
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let ctx = Ctx::load(a.require_signature)?;
    let records = if a.names.is_empty() {
        store::list(&ctx.home)?
    } else {
        let mut v = Vec::new();
        for n in &a.names {
            v.push(store::get(&ctx.home, n)?.ok_or_else(|| {
                anyhow::anyhow!("{n:?} is not installed (`zot agents` lists what is)")
            })?);
        }
        v
    };
    let cwd = std::env::current_dir()?;
    let mut failed = 0;
    for old in records {
        let n = &old.name;
        let Ok(r) = oci::parse(&old.source) else {
            println!(
                "{n}: installed from {}, not a registry (reinstall it with zot install)",
                old.source
            );
            continue;
        };
        if r.digest.is_some() {
            println!("{n}: pinned to a digest ({})", old.source);
            continue;
        }
        let result = (|| -> anyhow::Result<bool> {
            let now = oci::resolve_digest(&r, &ctx.config)?;
            if Some(now.as_str()) == old.manifest_digest.as_deref() {
                println!("{n}: up to date ({} {})", old.display_version(), now);
                return Ok(false);
            }
            // Pin what was resolved: the tag is read once.
            let pinned = r.pinned(&now);
            let mut progress = registry::bar();
            let fetched = store::fetch(&pinned, &cwd, &ctx.config, &ctx.keys, &mut progress)?;
            let mut warnings = Vec::new();
            let agent = store::verify(&fetched, &ctx.sigs(), &mut warnings).map_err(|e| {
                anyhow::Error::from(e).context(format!(
                    "{n}: the new version was refused; {} is kept",
                    old.display_version()
                ))
            })?;
            registry::warn_all(&warnings);
            println!(
                "{n}: {} ({}) -> {} ({})",
                old.display_version(),
                old.manifest_digest.as_deref().unwrap_or(&old.digest),
                agent.version.as_deref().unwrap_or("-"),
                now
            );
            if let Some(v) = &agent.signature {
                println!("  signature verified: {}", zot_agent::trust::signer_line(v));
            }
            if !a.yes && !ask(&format!("replace {n}?")) {
                println!(
                    "{n}: kept {} (run with -y to replace without asking)",
                    old.display_version()
                );
                return Ok(false);
            }
            store::add(
                &ctx.home,
                n,
                &agent,
                &fetched.archive,
                fetched.signature.as_deref(),
                &old.source,
                Some(&now),
            )?;
            println!("{n}: updated");
            Ok(true)
        })();
        if let Err(e) = result {
            super::print_error(&e);
            failed += 1;
        }
    }
    Ok(if failed > 0 { super::FAILURE } else { 0 })
}
