//! One module per subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> anyhow::Result<u8>` returning the process exit code.

pub mod completions;
pub mod convert;
pub mod debug;
pub mod debug_command;
pub mod debug_sandbox;
pub mod inspect;
pub mod models;
pub mod keygen;
pub mod pack;
pub mod password;
pub mod run;
pub mod sandbox;
pub mod sign;
pub mod unpack;
pub mod validate;
pub mod verify;

/// Generic failure.
pub const FAILURE: u8 = 1;
/// Usage error (bad command line), as clap uses.
pub const USAGE: u8 = 2;

/// Print `zot: <message>: <cause>: <cause>` to stderr.
pub fn print_error(err: &anyhow::Error) {
    eprintln!("zot: {err:#}");
}
