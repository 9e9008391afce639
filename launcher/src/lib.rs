//! The single-threaded in-sandbox step, run by re-executing the `zot` binary
//! with [`LAUNCH_ARG`] as its first argument, before any thread exists.

/// First argument that turns the `zot` binary into the launcher.
pub const LAUNCH_ARG: &str = "__zot-launch";

/// Entry point of the launcher; never returns.
pub fn main_from_args() -> ! {
    eprintln!("zot: launcher not implemented");
    std::process::exit(125)
}
