//! Builds the launcher image (`stub/main.rs` + `src/tail/`): a static
//! binary without libc, compiled with the same `rustc` for the same target
//! and embedded in the crate (`OUT_DIR/zot-launcher-image`). When it cannot
//! be built here (an architecture without the tail's syscall layer, a
//! linker that refuses), the crate is built with `zot_no_launcher_image`
//! and the zot binary itself serves as the launcher: same code, slower
//! start.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(zot_stub)");
    println!("cargo:rustc-check-cfg=cfg(zot_no_launcher_image)");
    println!("cargo:rerun-if-changed=stub/main.rs");
    println!("cargo:rerun-if-changed=src/tail");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let out = PathBuf::from(env("OUT_DIR")).join("zot-launcher-image");
    let supported = env("CARGO_CFG_TARGET_OS") == "linux"
        && ["x86_64", "aarch64", "riscv64"].contains(&env("CARGO_CFG_TARGET_ARCH").as_str());
    if !supported {
        println!("cargo:rustc-cfg=zot_no_launcher_image");
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--edition=2021",
        "--crate-type=bin",
        "--crate-name=zot_launcher_image",
        "--cfg=zot_stub",
        "-Copt-level=s",
        "-Cpanic=abort",
        "-Ccodegen-units=1",
        "-Cdebuginfo=0",
        "-Cstrip=symbols",
        "-Crelocation-model=static",
        "-Ctarget-feature=+crt-static",
        "-Clink-arg=-nostartfiles",
        "-Clink-arg=-nostdlib",
        "-Clink-arg=-static",
        "-Clink-arg=-Wl,--gc-sections",
        "-Clink-arg=-Wl,--build-id=none",
        "--target",
    ])
    .arg(env("TARGET"))
    .arg("-o")
    .arg(&out)
    .arg("stub/main.rs");
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        cmd.arg(format!("-Clinker={linker}"));
    }
    match cmd.output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "cargo:warning=launcher image not built (the zot binary will serve as launcher): {}",
                String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("")
            );
            println!("cargo:rustc-cfg=zot_no_launcher_image");
        }
        Err(e) => {
            println!("cargo:warning=launcher image not built: {e}");
            println!("cargo:rustc-cfg=zot_no_launcher_image");
        }
    }
}
