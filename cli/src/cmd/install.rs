//! `zot install REF|DIR|FILE [--name N]`: verify an agent and keep it in
//! the local store (see docs/registries.md).

use serde_json::json;
use zot_agent::store;

use super::registry::{self, Ctx};

#[derive(clap::Args)]
pub struct Args {
    /// REGISTRY/REPO[:TAG|@sha256:DIGEST], an agent directory or a .zot
    pub reference: String,
    /// Install under this name (default: the agent's manifest name)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Refuse the agent unless its signature verifies with a trusted key
    #[arg(long)]
    pub require_signature: bool,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    if let Some(n) = &a.name {
        store::check_name(n)?;
    }
    let ctx = Ctx::load(a.require_signature)?;
    let cwd = std::env::current_dir()?;
    let mut progress = registry::bar();
    let fetched = store::fetch(&a.reference, &cwd, &ctx.config, &ctx.keys, &mut progress)?;
    let mut warnings = Vec::new();
    let agent = store::verify(&fetched, &ctx.sigs(), &mut warnings)?;
    registry::warn_all(&warnings);
    registry::warn_all(&agent.warnings);
    let name = a.name.clone().unwrap_or_else(|| agent.name.clone());
    let old = store::get(&ctx.home, &name)?;
    let r = store::add(
        &ctx.home,
        &name,
        &agent,
        &fetched.archive,
        fetched.signature.as_deref(),
        &fetched.source,
        fetched.manifest_digest.as_deref(),
    )?;
    if a.json {
        let o = json!({ "ok": true, "installed": r, "replaced": old });
        super::inspect::emit(&format!("{}\n", serde_json::to_string_pretty(&o)?))?;
        return Ok(0);
    }
    let mut out = String::new();
    if let Some(v) = &agent.signature {
        out.push_str(&format!(
            "signature verified: {}\n",
            zot_agent::trust::signer_line(v)
        ));
    }
    let shown = r.manifest_digest.as_deref().unwrap_or(&r.digest);
    match old {
        Some(o) if o.digest == r.digest => out.push_str(&format!(
            "{name} {} ({shown}) is already installed\n",
            r.display_version()
        )),
        Some(o) => out.push_str(&format!(
            "replaced {name} {} ({}) with {} ({shown})\n",
            o.display_version(),
            o.manifest_digest.as_deref().unwrap_or(&o.digest),
            r.display_version()
        )),
        None => out.push_str(&format!(
            "installed {name} {} ({shown}) from {}\n",
            r.display_version(),
            r.source
        )),
    }
    out.push_str(&format!("run it with: zot run {name}\n"));
    super::inspect::emit(&out)?;
    Ok(0)
}
