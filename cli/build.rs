//! How the `zot` binary is linked, for a fast start: every sandboxed
//! command starts this binary (the supervisor), so its start-up is part of
//! every launch.
//!
//! - Position-independent, as the toolchain builds it: zot parses untrusted
//!   input (archives, model responses, command output), so its own code
//!   keeps address randomization. A fixed-address build (`ZOT_NO_PIE=1`)
//!   saves ~0.3 ms per start (19k load-time relocations, ~85 pages of
//!   `.data.rel.ro`); it exists to measure that, not to ship.
//! - The unwinder linked statically (libgcc_eh, as static Rust builds do)
//!   instead of loading libgcc_s.so at each start (whose constructor queries
//!   CPUID, a trap to the hypervisor in a VM). Only when the C compiler's
//!   libgcc_eh.a is found; `ZOT_LIBGCC_S=1` keeps the shared one.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=ZOT_NO_PIE");
    println!("cargo:rerun-if-env-changed=ZOT_LIBGCC_S");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if env("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    if env("ZOT_NO_PIE") == "1" {
        println!("cargo:rustc-link-arg-bin=zot=-no-pie");
    }
    // The host compiler's libgcc_eh.a: not when cross-compiling.
    if env("ZOT_LIBGCC_S") != "1"
        && env("CARGO_CFG_TARGET_ENV") == "gnu"
        && env("TARGET") == env("HOST")
    {
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let libgcc = std::process::Command::new(cc)
            .arg("-print-libgcc-file-name")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        if let Some(dir) = libgcc.as_deref().and_then(|p| p.parent()) {
            if dir.join("libgcc_eh.a").is_file() {
                println!("cargo:rustc-link-search=native={}", dir.display());
                println!("cargo:rustc-link-lib=static=gcc_eh");
            }
        }
    }
}
