//! `zot`, the front (see the crate's documentation): runs `zot sandbox`
//! itself and hands every other command to `zot-full`, the binary beside
//! it, with the same arguments.

#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code))]

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

/// The full binary's file name, in the front's own directory.
const FULL: &str = "zot-full";

#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    zot::entry::start(exec_full)
}

/// Become `zot-full` (same arguments, same `argv[0]`, so usage lines still
/// say `zot`). Found through `/proc/self/exe`: beside the real file even
/// when `zot` was run through a symlink. Returns only on failure.
fn exec_full() -> u8 {
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| OsString::from("zot"));
    let full = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(FULL),
        Err(e) => {
            eprintln!("zot: cannot find this executable's directory (to run {FULL}): {e}");
            return zot::cmd::FAILURE;
        }
    };
    let err = std::process::Command::new(&full)
        .arg0(arg0)
        .args(args)
        .exec();
    eprintln!(
        "zot: cannot run {}: {err}\n\
         hint: zot's commands other than `zot sandbox` are in {FULL}; install it beside zot \
         (cargo install installs both)",
        full.display()
    );
    zot::cmd::FAILURE
}
