//! The command line itself: shell completions (generated and loaded by the
//! shells), `--json` results parsed, `zot debug command` without `--`.

mod common;

use std::process::Command;

use common::run::{s, text, World};
use serde_json::Value;

fn example() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/code-reviewer")
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert_eq!(t.lines().count(), 1, "one JSON line: {t}");
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("not JSON: {e}: {t}"))
}

#[test]
fn completions_are_valid_scripts_for_each_shell() {
    let w = World::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = w.run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = w.root.join(format!("zot.{shell}"));
        std::fs::write(&script, &out.stdout).unwrap();
        let t = text(&out.stdout);
        for sub in ["run", "pack", "completions", "debug"] {
            assert!(t.contains(sub), "{shell} script lacks {sub}");
        }
        // Parse it with the shell itself where that shell is installed
        // (bash always is).
        let Ok(path) = which::which(shell) else {
            assert_ne!(shell, "bash");
            eprintln!("SKIP: {shell} is not installed: its script is not parsed");
            continue;
        };
        let check = Command::new(path).arg("-n").arg(&script).output().unwrap();
        assert!(
            check.status.success(),
            "{shell} -n: {}",
            text(&check.stderr)
        );
    }
    // bash: load it and complete `zot r` and `zot run --mo`.
    let script = w.root.join("zot.bash");
    let complete = |words: &str, cword: usize| -> String {
        let prog = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; _zot zot; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            s(&script)
        );
        let out = Command::new("bash").arg("-c").arg(&prog).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let subs = complete("zot r", 1);
    assert!(subs.lines().any(|l| l == "run"), "{subs}");
    let opts = complete("zot run --mo", 2);
    assert!(opts.lines().any(|l| l == "--model"), "{opts}");
    // An unknown shell is a usage error.
    assert_eq!(w.run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn unpack_and_convert_report_json() {
    let w = World::new();
    let archive = w.root.join("reviewer.zot");
    let packed = json_of(&w.run(&["pack", s(&example()), s(&archive), "--json"]));
    let dir = w.root.join("unpacked");
    let v = json_of(&w.run(&["unpack", s(&archive), s(&dir), "--json"]));
    assert_eq!(v["digest"], packed["digest"]);
    assert_eq!(v["dir"], s(&dir));
    assert!(v["files"].as_u64().unwrap() >= 2, "{v}");
    assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");
    assert!(dir.join("manifest.json").is_file());
    // A refused unpack (the directory is not empty) is an error, not JSON.
    let out = w.run(&["unpack", s(&archive), s(&dir), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());

    let toml = w.root.join("reviewer-toml");
    let v = json_of(&w.run(&[
        "convert",
        s(&example()),
        "--to",
        "agent-toml",
        s(&toml),
        "--json",
    ]));
    assert_eq!(v["format"], "agent-toml");
    assert_eq!(v["out"], s(&toml));
    assert!(v["not_carried"].is_array(), "{v}");
    assert!(v.get("digest").is_none(), "{v}");
    assert!(toml.join("agent.toml").is_file());
    let back = w.root.join("back.zot");
    let v = json_of(&w.run(&["convert", s(&toml), "--to", "zotfile", s(&back), "--json"]));
    assert_eq!(v["format"], "zotfile");
    assert!(v["digest"].as_str().unwrap().starts_with("sha256:"), "{v}");
    assert!(back.is_file());
}

#[test]
fn debug_command_takes_the_command_without_dashes() {
    let w = World::new();
    let quoted = w.run(&["debug", "command", "--json", "rm -rf ~/"]);
    let dashed = w.run(&["debug", "command", "--json", "--", "rm -rf ~/"]);
    assert_eq!(quoted.status.code(), dashed.status.code());
    let (a, b) = (
        serde_json::from_slice::<Value>(&quoted.stdout).unwrap(),
        serde_json::from_slice::<Value>(&dashed.stdout).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a["decision"], "ask", "{a}");
    assert_eq!(
        a["commands"][0]["argv"],
        serde_json::json!(["rm", "-rf", "~/"])
    );
    // Options may follow the command; unquoted words are joined.
    let after = w.run(&["debug", "command", "ls", "src", "--json"]);
    let v: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(v["decision"], "allow", "{v}");
    // A word that looks like an option needs `--` (clap says so).
    let out = w.run(&["debug", "command", "rm", "-rf", "/"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--"), "{}", text(&out.stderr));
}
