//! One module per subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> anyhow::Result<u8>` returning the process exit code.

pub mod agents;
pub mod completions;
pub mod convert;
pub mod debug;
pub mod debug_command;
pub mod debug_sandbox;
pub mod inspect;
pub mod install;
pub mod keygen;
pub mod models;
pub mod pack;
pub mod password;
pub mod publish;
pub mod registry;
pub mod remove;
pub mod run;
pub mod sandbox;
pub mod sign;
pub mod unpack;
pub mod update;
pub mod use_agent;
pub mod validate;
pub mod verify;

/// Generic failure.
pub const FAILURE: u8 = 1;
/// Usage error (bad command line), as clap uses.
pub const USAGE: u8 = 2;

/// Print `zot: <message>: <cause>: <cause>` to stderr, then the hint of
/// the first error in the chain that has one, on a line of its own.
pub fn print_error(err: &anyhow::Error) {
    eprintln!("zot: {err:#}");
    let hint = err.chain().find_map(|e| {
        e.downcast_ref::<zot_supervisor::SupervisorError>()
            .and_then(|e| e.hint())
            .or_else(|| {
                e.downcast_ref::<zot_agent::RunError>()
                    .and_then(|e| e.hint())
            })
    });
    if let Some(h) = hint {
        eprintln!("hint: {h}");
    }
}

/// Remove what killed zot runs left outside the state dir (temp dirs,
/// placeholders), as their journals record. One directory read when there
/// is nothing to do; never fatal.
pub fn sweep_leftovers() {
    if let Ok(home) = zot_agent::home::zot_home() {
        zot_supervisor::journal::sweep(&home);
    }
}
