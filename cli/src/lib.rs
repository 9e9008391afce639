//! The command line of zot, shared by its two binaries:
//!
//! - `zot` (`src/front.rs`): the front users run. `zot sandbox`, on the
//!   path of every confined command, runs in it; every other command is
//!   handed to the full binary beside it, with the same arguments.
//! - `zot-full` (`src/main.rs`): every command.
//!
//! Why two: a process's start costs in proportion to its image (the
//! relative relocations the loader applies, the pages they dirty), and
//! `zot sandbox` needs a quarter of the full image (a fifth of its
//! relocations). Measured figures are in
//! docs/sandbox.md.

pub mod cmd;
pub mod entry;
pub mod ui;
