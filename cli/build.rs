//! Link the `zot` binary at a fixed address (not position-independent).
//!
//! Every sandboxed command starts this binary at least once (the
//! supervisor) and inside bubblewrap twice (the launcher): a PIE build spends
//! ~0.3 ms per start on 19k load-time relocations, faulting in and copying
//! ~85 pages of `.data.rel.ro`. The fixed-address build has none; the stack,
//! heap, shared libraries and mmaps stay randomized. Set `ZOT_PIE=1` when
//! building to keep a PIE binary instead.
fn main() {
    println!("cargo:rerun-if-env-changed=ZOT_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let pie = std::env::var("ZOT_PIE").is_ok_and(|v| v == "1");
    if os == "linux" && !pie {
        println!("cargo:rustc-link-arg-bin=zot=-no-pie");
    }
}
