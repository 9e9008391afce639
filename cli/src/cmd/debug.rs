use clap::Subcommand;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: DebugCommand,
}

#[derive(Subcommand)]
enum DebugCommand {
    /// Check (--check) or explain (--explain) the sandbox on this host
    Sandbox(super::debug_sandbox::Args),
    /// Show the risk gate's verdict for a shell command
    Command(super::debug_command::Args),
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        DebugCommand::Sandbox(a) => super::debug_sandbox::run(a),
        DebugCommand::Command(a) => super::debug_command::run(a),
    }
}
