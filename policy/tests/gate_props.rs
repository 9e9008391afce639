//! Property tests for the risk gate: random input never panics, and
//! allowlist mode never allows a command whose programs are not all listed.
//! The `cargo fuzz` target in fuzz/ checks the same properties.

use proptest::prelude::*;
use zot_policy::gate::{evaluate, Decision, GateMode, Verdict};

fn allow_list() -> Vec<String> {
    [
        "git", "ls", "grep", "cat", "echo", "wc", "sh", "env", "xargs", "find", "nice",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The property the fuzz target also checks.
fn check_allowlist_sound(input: &str, allow: &[String], v: &Verdict) {
    if v.decision != Decision::Allow {
        return;
    }
    assert!(
        !v.commands.is_empty(),
        "allowed without commands: {input:?}"
    );
    assert!(!input.contains('\n'), "allowed a newline: {input:?}");
    assert!(!input.contains('`'), "allowed backticks: {input:?}");
    assert!(!input.contains("$("), "allowed a substitution: {input:?}");
    assert!(
        !input.contains('<') && !input.contains('>'),
        "allowed a redirection: {input:?}"
    );
    for c in &v.commands {
        for name in c.via.iter().chain(std::iter::once(&c.program)) {
            let base = name.rsplit('/').next().unwrap_or(name);
            assert!(
                name == "cd" || allow.iter().any(|a| a == base),
                "allowed `{name}` which is not listed: {input:?} -> {v:?}"
            );
        }
    }
}

/// Shell-ish tokens, so random strings exercise the grammar.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ls".to_string()),
        Just("git".to_string()),
        Just("rm".to_string()),
        Just("curl".to_string()),
        Just("sh".to_string()),
        Just("-c".to_string()),
        Just("env".to_string()),
        Just("nice".to_string()),
        Just("xargs".to_string()),
        Just("find".to_string()),
        Just("-exec".to_string()),
        Just("{}".to_string()),
        Just("\\;".to_string()),
        Just("sudo".to_string()),
        Just("X=1".to_string()),
        Just("PATH=/x".to_string()),
        Just("|".to_string()),
        Just("||".to_string()),
        Just("&&".to_string()),
        Just("&".to_string()),
        Just(";".to_string()),
        Just("\n".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("$".to_string()),
        Just("$(".to_string()),
        Just(")".to_string()),
        Just("(".to_string()),
        Just("`".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("<<".to_string()),
        Just("#".to_string()),
        Just("${IFS}".to_string()),
        Just("*".to_string()),
        Just("~".to_string()),
        Just("/".to_string()),
        Just("-rf".to_string()),
        Just("=".to_string()),
        Just("if".to_string()),
        Just("then".to_string()),
        Just("fi".to_string()),
        Just("for".to_string()),
        Just("do".to_string()),
        Just("done".to_string()),
        "[a-z]{1,6}",
        "\\PC{1,4}",
    ]
}

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec((token(), prop_oneof![Just(""), Just(" ")]), 0..24)
        .prop_map(|parts| parts.into_iter().map(|(t, s)| t + s).collect::<String>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(input in "\\PC{0,200}") {
        let allow = allow_list();
        for mode in [GateMode::None, GateMode::Ask, GateMode::Allowlist] {
            let v = evaluate(&input, mode, &allow);
            if mode == GateMode::Allowlist {
                check_allowlist_sound(&input, &allow, &v);
            }
            if mode == GateMode::None {
                prop_assert_eq!(v.decision, Decision::Deny);
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let input = String::from_utf8_lossy(&bytes);
        let allow = allow_list();
        let v = evaluate(&input, GateMode::Allowlist, &allow);
        check_allowlist_sound(&input, &allow, &v);
        evaluate(&input, GateMode::Ask, &allow);
    }

    #[test]
    fn shellish_allowlist_is_sound(input in shellish()) {
        let allow = allow_list();
        let v = evaluate(&input, GateMode::Allowlist, &allow);
        check_allowlist_sound(&input, &allow, &v);
        let a = evaluate(&input, GateMode::Ask, &allow);
        // Both modes see the same commands.
        prop_assert_eq!(a.commands, v.commands);
    }

    /// A dangerous command after any harmless prefix, behind any chain of
    /// wrappers, is never allowed in ask mode.
    #[test]
    fn danger_is_never_hidden(
        prefix in "[a-z ./-]{0,20}",
        sep in prop_oneof![Just(";"), Just("&&"), Just("||"), Just("|"), Just("&")],
        wrappers in prop::collection::vec(
            prop_oneof![
                Just("nice"), Just("env"), Just("timeout 5"), Just("nohup"), Just("command"),
                Just("env -i X=1"), Just("stdbuf -oL"), Just("setsid"), Just("ionice -c 3"), Just("exec"),
                Just("xargs"), Just("sudo"), Just("time"), Just("builtin"),
            ],
            0..4,
        ),
        danger in prop_oneof![
            Just("rm -rf /"), Just("rm -fr ~"), Just("'r'm -r -f /etc"), Just("mkfs.ext4 /dev/sda"),
            Just("dd if=/dev/zero of=/dev/sda"), Just("chmod -R 777 /"), Just("git push --force"),
            Just("r\\m -rf /usr"),
        ],
        in_shell in any::<bool>(),
    ) {
        let inner = if wrappers.is_empty() { danger.to_string() } else { format!("{} {danger}", wrappers.join(" ")) };
        let cmd = if in_shell { format!("{prefix} {sep} sh -c \"{inner}\"") } else { format!("{prefix} {sep} {inner}") };
        let v = evaluate(&cmd, GateMode::Ask, &[]);
        prop_assert_ne!(v.decision, Decision::Allow, "{} -> {:?}", cmd, v);
        let all: Vec<String> = ["rm", "mkfs.ext4", "dd", "chmod", "git", "sh", "nice", "env", "timeout", "nohup",
            "command", "stdbuf", "setsid", "ionice", "exec", "xargs", "sudo", "time", "builtin"]
            .iter().map(|s| s.to_string()).collect();
        let v = evaluate(&cmd, GateMode::Allowlist, &all);
        prop_assert_eq!(v.decision, Decision::Deny, "{} -> {:?}", cmd, v);
    }
}
