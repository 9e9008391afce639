//! The parse bounds (policy/src/gate/budget.rs): inputs on which
//! tree-sitter-bash's time or memory grows faster than the input, or that
//! are too large to parse in time, are not understood (deny in allowlist
//! mode, ask in ask mode) with a reason naming the bound, and are answered
//! quickly. Ordinary commands are not affected, not even right after such
//! an input.

use std::time::{Duration, Instant};

use zot_policy::gate::{evaluate, Decision, GateMode, MAX_PIPES};

fn allow() -> Vec<String> {
    ["a", "git", "nice", "env", "sh", "echo", "cat"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

const TOO_COMPLEX: &str = "not understood: the command is too complex to check";

/// `src` is not understood in both modes, with a reason that starts with
/// `reason`, and the gate still allows `git status` afterwards (a
/// cancelled parse leaves the thread's parser usable).
fn refused(name: &str, src: &str, reason: &str) {
    let allow = allow();
    for (mode, decision) in [
        (GateMode::Allowlist, Decision::Deny),
        (GateMode::Ask, Decision::Ask),
    ] {
        let t = Instant::now();
        let v = evaluate(src, mode, &allow);
        let took = t.elapsed();
        assert_eq!(v.decision, decision, "{name} ({mode:?}): {:?}", v.reasons);
        assert!(
            v.reasons.iter().any(|r| r.starts_with(reason)),
            "{name} ({mode:?}): no reason starting with {reason:?} in {:?}",
            v.reasons
        );
        // Bounded: the parse budget is 400 ms (1.6 s in debug builds).
        assert!(took < Duration::from_secs(20), "{name} ({mode:?}) took {took:?}");
        let after = evaluate("git status", mode, &allow);
        assert_eq!(after.decision, Decision::Allow, "{name}: {:?}", after.reasons);
    }
}

fn fill(unit: &str, n: usize) -> String {
    unit.repeat(n / unit.len())
}

#[test]
fn long_pipelines_are_refused_before_parsing() {
    let over = MAX_PIPES + 1;
    let exact = format!(
        "{TOO_COMPLEX}: a pipeline of it has {over} `|`, more than the {MAX_PIPES} the gate parses"
    );
    // A broken pipeline: tree-sitter's time and memory grow with the square
    // of its stages (1 MiB of them took the host's memory).
    refused("broken pipeline", &"a|".repeat(over), &exact);
    refused("1 MiB broken pipeline", &fill("a|", 1 << 20), TOO_COMPLEX);
    refused("`|&` stages", &"a|&".repeat(over), &exact);
    refused("broken pipeline then `)`", &format!("{}a )", "a|".repeat(over)), &exact);
    refused("pipeline in an unclosed group", &format!("{{ {}a", "a|".repeat(over)), &exact);
    refused("well-formed pipeline", &format!("{}a", "a|".repeat(over)), &exact);
    // Counted on the raw bytes, per pipeline, quote-aware: quoted `|` are
    // text, but a newline ends a quote for the count (a line with an odd
    // quote hides nothing), and each `$( )` counts its own.
    let v = evaluate(&format!("echo '{}'", "|".repeat(over)), GateMode::Allowlist, &allow());
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    refused("bars after an odd quote's line", &format!("echo 'x\n{}a", "a|".repeat(over)), &exact);
    refused("bars in a substitution in quotes", &format!("echo \"$({}a)\"", "a|".repeat(over)), &exact);
    refused("bars after `$'\\''`", &format!("echo $'\\'' {}a", "a|".repeat(over)), &exact);
    // Pipelines are counted one by one: many short ones are fine.
    let v = evaluate(&"a|a|a; ".repeat(over), GateMode::Allowlist, &allow());
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    // Also in a string parsed again: `$'\x7c'` is a `|` only there.
    let inner = format!("sh -c $'{}a'", "a\\x7c".repeat(over));
    refused("pipes of an `sh -c` string", &inner, &exact);
}

#[test]
fn the_pipe_bound_is_exact_and_spares_or_lists() {
    let allow = allow();
    // At the bound: parsed, and allowed (every stage is listed).
    let at = format!("{}a", "a|".repeat(MAX_PIPES));
    let v = evaluate(&at, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    assert_eq!(v.commands.len(), MAX_PIPES + 1);
    // `||` is a list operator: not counted.
    let ors = "a||a ; ".repeat(2 * MAX_PIPES);
    let v = evaluate(&ors, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
}

#[test]
fn error_recovery_that_rereads_the_input_is_cut() {
    // After each of these syntax errors tree-sitter-bash's scanner reads
    // the rest of the input again: time grows with its square.
    for (name, src) in [
        ("`)))`", fill(")", 64 << 10)),
        ("unclosed `case` and commands", format!("case x in {}", fill("a;", 64 << 10))),
        ("`$[$[`", fill("$[", 64 << 10)),
        ("`a=(a=(`", fill("a=(", 64 << 10)),
        ("`<<<<<<`", fill("<<<", 64 << 10)),
        ("`[[ ( [[ (`", fill("[[ (", 64 << 10)),
    ] {
        refused(name, &src, TOO_COMPLEX);
    }
}

#[test]
fn dense_and_deep_inputs_are_cut() {
    for (name, src) in [
        ("1 MiB of `a;`", fill("a;", 1 << 20)),
        ("1 MiB of `$a`", fill("$a", 1 << 20)),
        ("1 MiB of `(`", fill("(", 1 << 20)),
        ("1 MiB of `{ `", fill("{ ", 1 << 20)),
        ("1 MiB of short quoted words", fill("'a' \"b\" ", 1 << 20)),
        ("1 MiB of here-documents", fill("cat <<E\nx\nE\n", 1 << 20)),
        // Quadratic in time only: cut by the clock.
        ("32 KiB of unclosed `${`", fill("${", 32 << 10)),
    ] {
        refused(name, &src, TOO_COMPLEX);
    }
}

#[test]
fn wrapper_chains_are_bounded() {
    let allow = allow();
    // Each wrapper used to read the rest of the line again.
    let at = format!("{}a", "nice ".repeat(64));
    let v = evaluate(&at, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    assert_eq!(v.commands[0].via.len(), 64);
    let over = format!("{}a", "nice ".repeat(65));
    refused("65 wrappers", &over, "not understood: more than 64 wrappers in a row");
    refused(
        "20,000 wrappers",
        &format!("{}a", "nice ".repeat(20_000)),
        "not understood: more than 64 wrappers in a row",
    );
    // Counted across `sh -c` strings.
    let nested = format!("{}sh -c '{}a'", "nice ".repeat(40), "nice ".repeat(40));
    refused("wrappers across sh -c", &nested, "not understood: more than 64 wrappers in a row");
    // `env -S` strings are spliced into a copy of the line: at most 8.
    let splits = |n: usize| format!("{}a", "env -Snice ".repeat(n));
    let v = evaluate(&splits(8), GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    refused("9 env -S", &splits(9), "not understood: too many `env -S` strings");
}

#[test]
fn ordinary_large_input_is_still_understood() {
    let allow = allow();
    // 100 KB of ordinary commands (the size tests/e2e_gate.rs runs through
    // the CLI) and one 1 MB quoted word: well under every bound.
    let unit = "git status ; echo done && cat f ; git log --oneline -5 ; cat a | a ; ";
    let cmds = unit.repeat(100_000 / unit.len());
    let v = evaluate(&cmds, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    let word = format!("echo '{}'", "a|".repeat(499_990));
    let v = evaluate(&word, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "quoted `|` are text: {:?}", v.reasons);
    // A 300 KB script of short pipelines (4,500 of them): analysed.
    let unit = "git log --oneline | grep fix | cat ; echo done\n";
    let script = unit.repeat(300_000 / unit.len());
    let v = evaluate(&script, GateMode::Ask, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
    let word = format!("echo '{}'", "a".repeat(999_990));
    let v = evaluate(&word, GateMode::Allowlist, &allow);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
}

/// One shape at two sizes: inside the bounds it gets the verdict of what
/// it is, with that reason; at 1 MiB (or past the pipe bound) it is not
/// understood because it is too complex, in both modes.
#[test]
fn each_pathological_shape_has_a_decision_and_its_reason() {
    use Decision::{Allow, Ask, Deny};
    let allow = allow();
    let mib = 1 << 20;
    let nest = |head: &str, open: &str, mid: &str, close: &str, k: usize| {
        format!("{head}{}{mid}{}", open.repeat(k), close.repeat(k))
    };
    // (shape, input, ask mode, allowlist mode, the reason of each mode that
    // does not allow it; "" = none checked)
    let cases: Vec<(&str, String, Decision, Decision, &str)> = vec![
        ("`;` chain, 16 KB", fill("a;", 16 << 10), Allow, Allow, ""),
        ("`;` chain, 1 MiB", fill("a;", mib - 1), Ask, Deny, TOO_COMPLEX),
        (
            "broken pipeline, 500 stages",
            "a|".repeat(500),
            Ask,
            Deny,
            "not understood: the command does not parse as shell",
        ),
        ("broken pipeline past the bound", "a|".repeat(MAX_PIPES + 1), Ask, Deny, TOO_COMPLEX),
        ("broken pipeline, 1 MiB", fill("a|", mib), Ask, Deny, TOO_COMPLEX),
        ("`$( )` 100 deep", nest("echo ", "$(a ", "", ")", 100), Allow, Deny, "not allowed: command substitution"),
        ("`$( )` 300 deep", nest("echo ", "$(a ", "", ")", 300), Ask, Deny, "not understood: nesting deeper than 256 levels"),
        ("`$( )` closed, 1 MiB", nest("echo ", "$(a ", "", ")", (mib - 6) / 5), Ask, Deny, TOO_COMPLEX),
        ("`$(` unclosed, 16 KB", fill("$(", 16 << 10), Ask, Deny, "not understood: the command does not parse as shell"),
        ("`$(` unclosed, 1 MiB", fill("$(", mib), Ask, Deny, TOO_COMPLEX),
        ("subshells 100 deep", nest("", "( ", "a", " )", 100), Allow, Deny, "not allowed: subshells"),
        ("subshells 300 deep", nest("", "( ", "a", " )", 300), Ask, Deny, "not understood: nesting deeper than 256 levels"),
        ("subshells closed, 1 MiB", nest("", "( ", "a", " )", (mib - 1) / 4), Ask, Deny, TOO_COMPLEX),
        ("`(` unclosed, 1 MiB", fill("(", mib), Ask, Deny, TOO_COMPLEX),
        ("here-documents, 16 KB", fill("cat <<E\nx\nE\n", 16 << 10), Allow, Deny, ""),
        ("here-documents, 1 MiB", fill("cat <<E\nx\nE\n", mib), Ask, Deny, TOO_COMPLEX),
        ("one long word, 1 MB", format!("echo {}", "a".repeat(mib - 16)), Allow, Allow, ""),
        ("one long quoted word, 1 MB", format!("echo '{}'", "a b".repeat((mib - 16) / 3)), Allow, Allow, ""),
        ("4,000 redirections", format!("a{}", " >b".repeat(4_000)), Allow, Deny, ""),
        ("redirections, 1 MiB", format!("a{}", " >b".repeat((mib - 1) / 3)), Ask, Deny, TOO_COMPLEX),
    ];
    for (name, src, ask, allowlist, reason) in cases {
        assert!(src.len() <= mib, "{name}: {} bytes", src.len());
        for (mode, want) in [(GateMode::Ask, ask), (GateMode::Allowlist, allowlist)] {
            let v = evaluate(&src, mode, &allow);
            assert_eq!(v.decision, want, "{name} ({mode:?}): {:?}", v.reasons);
            if !reason.is_empty() && want != Allow {
                assert!(
                    v.reasons.iter().any(|r| r.starts_with(reason)),
                    "{name} ({mode:?}): no reason starting with {reason:?} in {:?}",
                    v.reasons
                );
            }
            if want == Allow {
                assert!(v.reasons.is_empty(), "{name}: {:?}", v.reasons);
            }
        }
        // In allowlist mode a shape inside the bounds is denied for what it
        // is (a redirection, a newline), never for being too complex.
        if reason != TOO_COMPLEX {
            let v = evaluate(&src, GateMode::Allowlist, &allow);
            assert!(
                !v.reasons.iter().any(|r| r.starts_with(TOO_COMPLEX)),
                "{name}: {:?}",
                v.reasons
            );
        }
    }
}
