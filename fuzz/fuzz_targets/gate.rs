//! Fuzz the risk gate's parser and walker: `cargo +nightly fuzz run gate`.
//!
//! Properties (the same as policy/tests/gate_props.rs checks on stable):
//! no input panics or crashes; `none` mode always denies; allowlist mode
//! never allows a command unless every program it extracted, wrappers
//! included, is listed, and never allows newlines, backticks, `$(`, `<`, `>`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zot_policy::gate::{evaluate, Decision, GateMode};

const ALLOW: &[&str] = &["git", "ls", "grep", "cat", "echo", "wc", "sh", "env", "xargs", "find", "nice"];

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    let allow: Vec<String> = ALLOW.iter().map(|s| s.to_string()).collect();

    assert_eq!(evaluate(&input, GateMode::None, &allow).decision, Decision::Deny);
    let ask = evaluate(&input, GateMode::Ask, &allow);
    let v = evaluate(&input, GateMode::Allowlist, &allow);
    assert_eq!(ask.commands, v.commands, "modes disagree on the commands");
    if v.decision != Decision::Allow {
        return;
    }
    assert!(!v.commands.is_empty());
    for bad in ["\n", "`", "$(", "<", ">"] {
        assert!(!input.contains(bad), "allowed {bad:?} in {input:?}");
    }
    for c in &v.commands {
        for name in c.via.iter().chain(std::iter::once(&c.program)) {
            let base = name.rsplit('/').next().unwrap_or(name);
            assert!(name == "cd" || ALLOW.contains(&base), "allowed unlisted `{name}` in {input:?}");
        }
    }
});
