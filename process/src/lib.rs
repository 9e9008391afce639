//! Process plumbing shared by zot's crates, so that each piece exists once:
//!
//! - [`signals`]: the one SIGINT/SIGTERM/SIGHUP handler of the process and
//!   the scoped routes that say what a signal does right now (forward it
//!   into a sandbox, interrupt the run, wake a model request, or the
//!   interactive prompt's rules).
//! - [`Cancel`]: a cancellation handle that anyone may trigger and that
//!   sandboxed runs, model requests and downloads watch.
//! - [`child`]: fork a child that runs async-signal-safe code, wait for a
//!   pid (EINTR-safe, 128+N for a signal), and the signal dispositions a
//!   child resets before it execs.
//!
//! The PID-1 forwarder inside the sandbox stays in the launcher: it runs
//! after the namespaces are made, without this crate's state.

pub mod cancel;
pub mod child;
pub mod signals;

pub use cancel::Cancel;
