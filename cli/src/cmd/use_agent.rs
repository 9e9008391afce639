//! `zot use NAME`: the default agent of `zot run` with no reference.

use zot_agent::store;

#[derive(clap::Args)]
pub struct Args {
    /// An installed name (`zot agents` lists them)
    pub name: String,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let home = zot_agent::home::zot_home()?;
    let r = store::set_default(&home, &a.name)?;
    super::inspect::emit(&format!(
        "default agent: {} {} (zot run with no reference runs it)\n",
        r.name,
        r.display_version()
    ))?;
    Ok(0)
}
