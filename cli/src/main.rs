//! `zot-full`: every command of zot (the `zot` front hands it all but
//! `zot sandbox`): parses the command line, calls the library crates,
//! prints. Exit codes: see docs/sandbox.md (0, 1 failure, 2 usage, 124
//! timeout, 125 sandbox setup failure, 126/127, 128+N).

#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code))]

use clap::{Parser, Subcommand};

use zot::cmd;
use zot::entry::finish;

#[derive(Parser)]
#[command(
    name = "zot",
    // Usage lines say `zot` whichever binary runs (the front or zot-full).
    bin_name = "zot",
    version,
    about = "Pack AI agents into verifiable .zot files and run them confined by the kernel",
    long_about = None,
    propagate_version = true,
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The exit codes the subcommands share (docs/zotfiles.md, docs/run.md and
/// docs/sandbox.md have each command's).
const EXIT_CODES: &str = "\
Exit codes:
  0        success
  1        failure (an invalid package, a failed check, a refused run)
  2        usage error (bad arguments, options that contradict each other)
  128+N    stopped by signal N (130 Ctrl-C, 143 SIGTERM)
zot sandbox: the command's own code, 124 timeout, 125 the sandbox could
  not be set up, 126/127 the command could not be executed / was not found.
zot debug command: 0 allow, 1 deny, 3 ask.";

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
    #[command(about = cmd::sandbox::ABOUT)]
    Sandbox(cmd::sandbox::Args),
    /// Run an agent
    Run(cmd::run::Args),
    /// Push an agent (directory or .zot) to an OCI registry
    Publish(cmd::publish::Args),
    /// Verify an agent and keep it in the local store
    Install(cmd::install::Args),
    /// List installed agents
    Agents(cmd::agents::Args),
    /// Re-resolve installed agents' tags and replace them by newer versions
    Update(cmd::update::Args),
    /// Uninstall agents
    Remove(cmd::remove::Args),
    /// Set the default agent of `zot run` with no reference
    Use(cmd::use_agent::Args),
    /// List providers and models, and which are available (keys set)
    Models(cmd::models::Args),
    /// Operator tools: sandbox checks and explanations, risk-gate verdicts
    Debug(cmd::debug::Args),
    /// Print a shell completion script (bash, zsh, fish)
    Completions(cmd::completions::Args),
}

/// `zot-full`: the process entry (`zot sandbox` runs as in the front).
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    zot::entry::start(run)
}

fn run() -> u8 {
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
        Command::Publish(a) => cmd::publish::run(a),
        Command::Install(a) => cmd::install::run(a),
        Command::Agents(a) => cmd::agents::run(a),
        Command::Update(a) => cmd::update::run(a),
        Command::Remove(a) => cmd::remove::run(a),
        Command::Use(a) => cmd::use_agent::run(a),
        Command::Models(a) => cmd::models::run(a),
        Command::Debug(a) => cmd::debug::run(a),
        Command::Completions(a) => {
            cmd::completions::run(a, <Cli as clap::CommandFactory>::command())
        }
    };
    finish(result)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The fast `zot sandbox` parser says what the full one says.
    #[test]
    fn sandbox_parser_matches_the_full_one() {
        let mut full = super::Cli::command();
        let mut fast = zot::entry::SandboxCli::command();
        let a = full
            .find_subcommand_mut("sandbox")
            .unwrap()
            .render_long_help();
        let b = fast
            .find_subcommand_mut("sandbox")
            .unwrap()
            .render_long_help();
        assert_eq!(a.to_string(), b.to_string());
        let err = |c: clap::Command| {
            c.try_get_matches_from(["zot", "sandbox", "--bogus"])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(super::Cli::command()),
            err(zot::entry::SandboxCli::command())
        );
    }
}
