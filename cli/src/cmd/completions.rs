//! `zot completions SHELL`: a completion script for bash, zsh or fish
//! (clap_complete), written to stdout.

#[derive(clap::Args)]
#[command(after_help = "Install, for example:\n  \
    bash: zot completions bash > ~/.local/share/bash-completion/completions/zot\n  \
    zsh:  zot completions zsh > \"${fpath[1]}/_zot\"\n  \
    fish: zot completions fish > ~/.config/fish/completions/zot.fish")]
pub struct Args {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: Args, mut cmd: clap::Command) -> anyhow::Result<u8> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "zot", &mut out);
    super::inspect::emit(&String::from_utf8_lossy(&out))?;
    Ok(0)
}
