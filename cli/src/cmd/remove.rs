//! `zot remove NAME...`: uninstall agents.

use zot_agent::store;

#[derive(clap::Args)]
pub struct Args {
    /// Installed names (`zot agents` lists them)
    #[arg(required = true)]
    pub names: Vec<String>,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let home = zot_agent::home::zot_home()?;
    for n in &a.names {
        if store::get(&home, n)?.is_none() {
            anyhow::bail!("{n:?} is not installed (`zot agents` lists what is)");
        }
    }
    for n in &a.names {
        let r = store::remove(&home, n)?;
        super::inspect::emit(&format!(
            "removed {n} {} ({})\n",
            r.display_version(),
            r.manifest_digest.as_deref().unwrap_or(&r.digest)
        ))?;
    }
    eprintln!("zot: the agents' data, consents and sessions in the zot home are kept");
    Ok(0)
}
