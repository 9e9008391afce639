//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The `zot` binary under test.
pub fn zot_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_zot"))
}

/// True when CI demands that every kernel-feature test really runs.
pub fn must_work() -> bool {
    std::env::var("ZOT_TEST_MUST_WORK").is_ok_and(|v| v == "1")
}

/// Call at the top of a test that needs a host feature. Returns false (and
/// prints why) when the test should be skipped; panics instead when
/// `ZOT_TEST_MUST_WORK=1`, so a skip can never hide a regression in CI.
pub fn require(feature: &str, available: bool, reason: &str) -> bool {
    if available {
        return true;
    }
    if must_work() {
        panic!("ZOT_TEST_MUST_WORK=1 but {feature} is unavailable: {reason}");
    }
    eprintln!("SKIP: {feature} unavailable: {reason}");
    false
}

pub mod fake_llm;
pub mod pty;
pub mod run;
