//! Table-driven risk-gate corpus: policy/tests/gate_corpus.toml.

use serde::Deserialize;
use zot_policy::gate::{evaluate, Decision, GateMode, Verdict};

/// Allowlist used when a case gives none. `rm`, `dd`, `chmod` are listed on
/// purpose: danger-list commands are denied even when their program is.
pub const DEFAULT_ALLOW: &[&str] = &[
    "git", "ls", "grep", "rg", "cat", "wc", "head", "tail", "echo", "sed", "awk", "find", "xargs",
    "tar", "sort", "rm", "chmod", "chown", "dd", "cp", "nice", "timeout", "env", "mkfs",
    "shutdown",
];

#[derive(Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    cmd: String,
    ask: String,
    allowlist: String,
    allow: Option<Vec<String>>,
    programs: Option<Vec<String>>,
    via: Option<Vec<String>>,
    reason: Option<String>,
}

fn decision(s: &str) -> Decision {
    match s {
        "allow" => Decision::Allow,
        "ask" => Decision::Ask,
        "deny" => Decision::Deny,
        other => panic!("bad decision `{other}` in the corpus"),
    }
}

fn load() -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/gate_corpus.toml"
    ))
    .unwrap();
    match toml::from_str::<Corpus>(&text) {
        Ok(c) => c.case,
        Err(e) => panic!("corpus does not parse: {}", e.message()),
    }
}

fn show(v: &Verdict) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn corpus() {
    let cases = load();
    assert!(cases.len() >= 150, "corpus has only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let allow: Vec<String> = c
            .allow
            .clone()
            .unwrap_or_else(|| DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect());
        let ask = evaluate(&c.cmd, GateMode::Ask, &allow);
        let al = evaluate(&c.cmd, GateMode::Allowlist, &allow);
        let none = evaluate(&c.cmd, GateMode::None, &allow);
        if ask.decision != decision(&c.ask) {
            failures.push(format!(
                "{:?}: ask mode gave {}, want {}: {}",
                c.cmd,
                ask.decision.as_str(),
                c.ask,
                show(&ask)
            ));
        }
        if al.decision != decision(&c.allowlist) {
            failures.push(format!(
                "{:?}: allowlist mode gave {}, want {}: {}",
                c.cmd,
                al.decision.as_str(),
                c.allowlist,
                show(&al)
            ));
        }
        if none.decision != Decision::Deny {
            failures.push(format!("{:?}: none mode did not deny", c.cmd));
        }
        if ask.commands != al.commands {
            failures.push(format!("{:?}: commands differ between modes", c.cmd));
        }
        if let Some(want) = &c.programs {
            let got: Vec<&str> = al.commands.iter().map(|p| p.program.as_str()).collect();
            if got != *want {
                failures.push(format!("{:?}: programs {got:?}, want {want:?}", c.cmd));
            }
        }
        if let Some(want) = &c.via {
            let got = al
                .commands
                .last()
                .map(|p| p.via.clone())
                .unwrap_or_default();
            if got != *want {
                failures.push(format!("{:?}: via {got:?}, want {want:?}", c.cmd));
            }
        }
        if let Some(want) = &c.reason {
            if !ask
                .reasons
                .iter()
                .chain(al.reasons.iter())
                .any(|r| r.contains(want.as_str()))
            {
                failures.push(format!(
                    "{:?}: no reason contains {want:?}: {:?} / {:?}",
                    c.cmd, ask.reasons, al.reasons
                ));
            }
        }
        // Every decision other than allow carries a reason.
        for v in [&ask, &al, &none] {
            if v.decision != Decision::Allow && v.reasons.is_empty() {
                failures.push(format!(
                    "{:?}: {} without a reason",
                    c.cmd,
                    v.decision.as_str()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// 1 MB inputs: no crash (deep nesting included), bounded time, and never
/// allowed in allowlist mode when they hide a command that is not listed.
#[test]
fn megabyte_inputs_are_bounded() {
    let allow: Vec<String> = vec!["ls".into()];
    let cases: Vec<(String, bool)> = vec![
        // (input, may allowlist mode allow it?)
        (format!("{}rm x", "ls ; ".repeat(200_000)), false),
        ("(".repeat(1_000_000), false),
        ("$(".repeat(500_000), false),
        (format!("ls '{}'", "a".repeat(999_990)), true),
    ];
    for (input, may_allow) in cases {
        let t = std::time::Instant::now();
        let v = evaluate(&input, GateMode::Allowlist, &allow);
        let took = t.elapsed();
        assert!(
            took < std::time::Duration::from_secs(60),
            "{} bytes took {took:?}",
            input.len()
        );
        if !may_allow {
            assert_eq!(
                v.decision,
                Decision::Deny,
                "{} bytes: {:?}",
                input.len(),
                v.reasons
            );
        } else {
            assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
        }
        assert_ne!(
            evaluate(&input, GateMode::Ask, &allow).decision,
            Decision::Deny
        );
    }
    // Over the limit: refused without parsing.
    let huge = "ls ".repeat(400_000);
    let t = std::time::Instant::now();
    let v = evaluate(&huge, GateMode::Ask, &allow);
    assert_eq!(v.decision, Decision::Ask);
    assert!(
        v.reasons.iter().any(|r| r.contains("longer than")),
        "{:?}",
        v.reasons
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
}

/// Prints the verdicts of the commands in `ZOT_GATE_TRY` (one a line) in
/// both modes, with `ZOT_GATE_ALLOW` (comma-separated) as the allowlist:
/// `ZOT_GATE_TRY='git log' cargo test -p zot-policy --test gate_corpus try -- --ignored --nocapture`.
#[test]
#[ignore]
fn try_commands() {
    let Ok(text) = std::env::var("ZOT_GATE_TRY") else {
        return;
    };
    let allow: Vec<String> = match std::env::var("ZOT_GATE_ALLOW") {
        Ok(a) => a.split(',').map(str::to_string).collect(),
        Err(_) => DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect(),
    };
    for cmd in text.split('\n').filter(|l| !l.trim().is_empty()) {
        let cmd = cmd.replace("\\n", "\n").replace("\\t", "\t");
        for mode in [GateMode::Ask, GateMode::Allowlist] {
            let v = evaluate(&cmd, mode, &allow);
            println!(
                "{:?} {mode:?}: {} {:?}",
                cmd,
                v.decision.as_str(),
                v.reasons
            );
        }
    }
}

/// Inputs the fuzzers found (each once crashed the gate).
#[test]
fn fuzz_findings_do_not_crash() {
    let allow: Vec<String> = DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect();
    // A launcher option that starts with a multi-byte character
    // (`launcher_opts` sliced it at byte 2).
    let lossy = String::from_utf8_lossy(b"npm -\xd5\x8c\x9c\xfa\xaa\xaa\xaa\xaaUUUell=/tm").into_owned();
    for input in [lossy.as_str(), "npm -\u{e9}x exec ls", "uv -\u{e9}\u{e9} run ls"] {
        for mode in [GateMode::Ask, GateMode::Allowlist] {
            let _ = evaluate(input, mode, &allow);
        }
    }
}
