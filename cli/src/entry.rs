//! The process start both binaries share, and `zot sandbox` as both run it.

use clap::{Parser, Subcommand};

use crate::cmd;

/// The process entry, without std's runtime start: every sandboxed command
/// starts zot, and that start-up (the main thread's stack guard read from
/// /proc/self/maps, its signal stack) is work no command needs. What of it
/// matters is done here: closed standard fds reopened on /dev/null,
/// SIGPIPE ignored, a panic exiting 101; stdout flushed at the end.
///
/// `zot sandbox ...` runs here; everything else is `rest`'s.
pub fn start(rest: fn() -> u8) -> libc::c_int {
    // The launcher must run before anything else (no threads, no runtime).
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(zot_launcher::LAUNCH_ARG))
    {
        zot_launcher::main_from_args();
    }
    // SAFETY: fcntl/open/signal with constant arguments at process start.
    unsafe {
        for fd in 0..3 {
            if libc::fcntl(fd, libc::F_GETFD) == -1 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let run = || {
        if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("sandbox")) {
            sandbox()
        } else {
            rest()
        }
    };
    let code = std::panic::catch_unwind(run).unwrap_or(101);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    libc::c_int::from(code)
}

/// `zot sandbox ...` alone: the same definitions as the full command line
/// (so the same help, errors and version), without building every other
/// subcommand's parser.
#[derive(Parser)]
#[command(name = "zot", bin_name = "zot", version, propagate_version = true)]
pub struct SandboxCli {
    #[command(subcommand)]
    pub command: SandboxOnly,
}

#[derive(Subcommand)]
pub enum SandboxOnly {
    #[command(about = cmd::sandbox::ABOUT)]
    Sandbox(cmd::sandbox::Args),
}

fn sandbox() -> u8 {
    let SandboxOnly::Sandbox(a) = SandboxCli::parse().command;
    // What a killed run left (one directory read when nothing did).
    cmd::sweep_leftovers();
    finish(cmd::sandbox::run(a))
}

/// A command's result as its exit code (an error printed).
pub fn finish(result: anyhow::Result<u8>) -> u8 {
    match result {
        Ok(code) => code,
        Err(err) => {
            cmd::print_error(&err);
            cmd::FAILURE
        }
    }
}
