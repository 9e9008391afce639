//! The `zot` binary: parses the command line, calls the library crates,
//! prints. Exit codes: see docs/sandbox.md (0, 1 failure, 2 usage, 124
//! timeout, 125 sandbox setup failure, 126/127, 128+N).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod ui;

#[derive(Parser)]
#[command(
    name = "zot",
    version,
    about = "Pack AI agents into verifiable .zot files and run them confined by the kernel",
    long_about = None,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Pack an agent directory into a deterministic .zot archive
    Pack(cmd::pack::Args),
    /// Show an agent's identity, permissions and files without running it
    Inspect(cmd::inspect::Args),
    /// Check that an archive loads safely, its manifest is valid and (with
    /// keys) its signature verifies
    Verify(cmd::verify::Args),
    /// Generate a minisign key pair for signing archives
    Keygen(cmd::keygen::Args),
    /// Sign a .zot archive (writes ARCHIVE.minisig)
    Sign(cmd::sign::Args),
    /// Safely extract a .zot archive into an empty directory
    Unpack(cmd::unpack::Args),
    /// Validate an agent package (zotfile or agent.toml) and list diagnostics
    Validate(cmd::validate::Args),
    /// Convert between the zotfile and agent.toml package formats
    Convert(cmd::convert::Args),
    /// Run a command confined by the OS sandbox
    Sandbox(cmd::sandbox::Args),
    /// Run an agent
    Run(cmd::run::Args),
    /// List providers and models, and which are available (keys set)
    Models(cmd::models::Args),
    /// Operator tools: sandbox checks and explanations, risk-gate verdicts
    Debug(cmd::debug::Args),
    /// Print a shell completion script (bash, zsh, fish)
    Completions(cmd::completions::Args),
}

fn main() -> ExitCode {
    // The launcher must run before anything else (no threads, no runtime).
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(zot_launcher::LAUNCH_ARG))
    {
        zot_launcher::main_from_args();
    }
    let cli = Cli::parse();
    cmd::sweep_leftovers();
    let result = match cli.command {
        Command::Pack(a) => cmd::pack::run(a),
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Keygen(a) => cmd::keygen::run(a),
        Command::Sign(a) => cmd::sign::run(a),
        Command::Unpack(a) => cmd::unpack::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::Sandbox(a) => cmd::sandbox::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Models(a) => cmd::models::run(a),
        Command::Debug(a) => cmd::debug::run(a),
        Command::Completions(a) => cmd::completions::run(a, <Cli as clap::CommandFactory>::command()),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            cmd::print_error(&err);
            ExitCode::from(cmd::FAILURE)
        }
    }
}
