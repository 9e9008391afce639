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

/// An agent directory with `mib` MiB of incompressible data in assets/.
fn big_agent(w: &World, mib: usize) -> std::path::PathBuf {
    let dir = w.agent("bulky", serde_json::json!({}));
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..mib << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("assets/blob.bin"), data).unwrap();
    dir
}

#[test]
fn packing_a_large_tree_shows_progress_on_a_terminal_only() {
    use common::pty::Pty;
    let w = World::new();
    let dir = big_agent(&w, 24);
    let out = w.root.join("bulky.zot");
    let mut c = w.cmd(&["pack", s(&dir), s(&out)]);
    c.env("TERM", "xterm");
    let mut p = Pty::spawn(c);
    p.expect("packing");
    p.expect("digest sha256:");
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    assert!(p.transcript.contains("MiB"), "{:?}", p.transcript);
    // Not a terminal: no bar, the same result.
    std::fs::remove_file(&out).unwrap();
    let o = w
        .cmd(&["pack", s(&dir), s(&out)])
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}

#[test]
fn github_downloads_show_progress_on_a_terminal() {
    use common::fake_llm::{FakeServer, Part, Reply};
    use common::pty::Pty;
    let w = World::new();
    // A repository archive: one top directory holding the agent.
    let repo = w.root.join("repo-main");
    std::fs::create_dir_all(&repo).unwrap();
    let agent = w.agent("fetched", serde_json::json!({"description": "from afar"}));
    std::fs::copy(agent.join("manifest.json"), repo.join("manifest.json")).unwrap();
    let tgz = w.root.join("main.tar.gz");
    let st = Command::new("tar")
        .arg("czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&w.root)
        .arg("repo-main")
        .status()
        .unwrap();
    assert!(st.success());
    let bytes = std::fs::read(&tgz).unwrap();
    let srv = FakeServer::start(move |_, _| Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/gzip".into())],
        parts: vec![Part::Bytes(bytes.clone())],
        silent: false,
    });
    let mut c = w.cmd(&["inspect", "acme/repo"]);
    c.env("ZOT_GITHUB_BASE", &srv.base).env("TERM", "xterm");
    let mut p = Pty::spawn(c);
    p.expect("downloading 127.0.0.1");
    p.expect("from afar");
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    assert_eq!(srv.requests()[0].path, "/acme/repo/archive/HEAD.tar.gz");
}

/// Usage errors exit 2 in every subcommand, and `zot --help` lists the
/// exit codes.
#[test]
fn usage_errors_exit_2_and_help_lists_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("a");
    std::fs::create_dir(&agent).unwrap();
    std::fs::write(agent.join("manifest.json"), r#"{"zotfile":1,"name":"a"}"#).unwrap();
    let home = dir.path().join("home");
    let a = agent.to_str().unwrap();
    let out_dir = dir.path().join("out");
    let cases: Vec<Vec<&str>> = vec![
        vec!["sandbox", "--net", "--", "true"],
        vec!["sandbox", "--cwd", "/nonexistent-zot-dir", "true"],
        vec!["sandbox", "--bogus", "true"],
        vec!["sandbox"],
        vec!["run", a, "-y", "--print"],
        vec!["run", a, "-y", "--model", "no-such-model", "--print", "hi"],
        vec!["run", a, "-y", "--model", "gpt-5", "--sim-script", "x", "--print", "hi"],
        vec!["run", a, "-y", "--tools", "bogus", "--print", "hi"],
        vec!["convert", a, "--to", "zotfile", out_dir.to_str().unwrap()],
        vec!["debug", "sandbox"],
        vec!["debug", "command"],
    ];
    for args in cases {
        let o = common::zot()
            .args(&args)
            .env("HOME", &home)
            .env("ZOT_HOME", home.join("zot"))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{args:?}: no message");
    }
    assert!(!out_dir.exists(), "a usage error writes nothing");
    let o = common::zot().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for line in ["Exit codes:", "2        usage error", "128+N", "125 the sandbox"] {
        assert!(help.contains(line), "{line:?} missing from:\n{help}");
    }
    // The internal flag stays out of the usage line.
    let o = common::zot()
        .args(["debug", "sandbox", "--help"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("run-attempts"));
}

/// The front runs `zot sandbox` itself and hands every other command to
/// `zot-full` beside it (same arguments, same usage lines, same codes); a
/// front without it says what is missing, exits 1 and writes nothing.
#[test]
fn the_front_hands_other_commands_to_the_full_binary() {
    let w = World::new();
    let front = common::zot_bin();
    let full = front.with_file_name("zot-full");
    let both = |args: &[&str]| {
        let run = |bin: &std::path::Path| {
            Command::new(bin)
                .args(args)
                .env("HOME", &w.home)
                .env("ZOT_HOME", &w.zot_home)
                .output()
                .unwrap()
        };
        (run(&front), run(&full))
    };
    for args in [&["--version"][..], &["--help"], &["pack", "--bogus"], &["bogus"]] {
        let (a, b) = both(args);
        assert_eq!(a.status.code(), b.status.code(), "{args:?}");
        assert_eq!(text(&a.stdout), text(&b.stdout), "{args:?}");
        assert_eq!(text(&a.stderr), text(&b.stderr), "{args:?}");
        assert!(!a.stdout.is_empty() || !a.stderr.is_empty(), "{args:?}: silent");
    }
    // Alone, through a symlink too: `zot sandbox` still runs; the rest
    // fails closed, naming the missing binary.
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("zot");
    std::fs::copy(&front, &alone).unwrap();
    let link = dir.path().join("zot-link");
    std::os::unix::fs::symlink(&front, &link).unwrap();
    let out_dir = dir.path().join("out");
    let o = Command::new(&alone)
        .args(["unpack", "missing.zot", s(&out_dir)])
        .env("HOME", &w.home)
        .env("ZOT_HOME", &w.zot_home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("zot-full") && err.contains("hint:"), "{err}");
    assert!(!out_dir.exists(), "nothing written");
    let o = Command::new(&alone)
        .args(["sandbox", "--mode", "danger-full-access", "--", "echo", "ran"])
        .env("HOME", &w.home)
        .env("ZOT_HOME", &w.zot_home)
        .output()
        .unwrap();
    assert_eq!(text(&o.stdout).trim(), "ran", "{}", text(&o.stderr));
    let o = Command::new(&link).arg("--version").output().unwrap();
    assert!(o.status.success(), "through a symlink: {}", text(&o.stderr));
}

/// `zot sandbox CMD` without `--` (the command's own options stay its
/// own), and `--report --json` as one JSON object on stderr.
#[test]
fn sandbox_command_without_dashes_and_json_report() {
    let o = common::zot()
        .args(["sandbox", "--report", "--json", "sh", "-c", "echo out; exit 3"])
        .output()
        .unwrap();
    if !common::require(
        "a sandbox backend",
        o.status.code() == Some(3),
        &String::from_utf8_lossy(&o.stderr),
    ) {
        return;
    }
    assert_eq!(String::from_utf8_lossy(&o.stdout), "out\n");
    let err = String::from_utf8_lossy(&o.stderr);
    let v: Value = serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["report"]["mode"], "read-only");
    assert_eq!(v["report"]["filesystem"], "full");
    assert!(v["report"]["backend"].is_string() && v["duration_ms"].is_u64());
}

/// `zot ARGS` under `strace -f`, opens only: (exit ok, the trace). One
/// file per process (`-ff`), so that no call is split in two lines by
/// another process's (the sandbox's PID 1 works while zot plans).
fn traced(w: &World, args: &[&str]) -> (bool, String) {
    let dir = w.root.join("strace");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log");
    let out = Command::new("strace")
        .args(["-ff", "-qq", "-e", "trace=open,openat,openat2", "-o", s(&log)])
        .arg(common::zot_bin())
        .args(args)
        .current_dir(&w.ws)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &w.home)
        .env("ZOT_HOME", &w.zot_home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let trace = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect::<String>();
    (out.status.success(), trace)
}

/// One pipeline: the config file is opened once per `zot sandbox` and per
/// `zot run` (args -> config -> policy -> plan -> launch), and a run with
/// `--allow-host` opens no more directories than the same run without it
/// (one preparation, proxy or not).
#[test]
fn one_config_read_and_no_extra_directories_for_allow_host() {
    let have = Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success());
    if !common::require("strace", have, "strace is not installed (ci/setup.sh)") {
        return;
    }
    let w = World::new();
    std::fs::create_dir_all(&w.zot_home).unwrap();
    let config = w.zot_home.join("config.toml");
    std::fs::write(&config, "[sandbox]\nmax_procs = 512\n").unwrap();
    let opens_of_config =
        |trace: &str| trace.lines().filter(|l| l.contains(s(&config))).count();
    let sandbox = |extra: &[&str]| {
        let mut a = vec!["sandbox", "--mode", "workspace-write"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--", "/bin/true"]);
        traced(&w, &a)
    };
    let (ok, trace) = sandbox(&[]);
    if !common::require("a workspace-write sandbox", ok, &trace) {
        return;
    }
    assert_eq!(opens_of_config(&trace), 1, "zot sandbox:\n{trace}");
    let (ok, trace) = traced(
        &w,
        &["run", s(&common::run::fixture("true-runner")), "-y", "--no-session", "--print", "run: true"],
    );
    assert!(ok, "{trace}");
    assert_eq!(opens_of_config(&trace), 1, "zot run:\n{trace}");
    // Directories opened (successfully), once the persisted index is warm
    // (a directory changed within the index's own clock tick is re-read).
    std::thread::sleep(std::time::Duration::from_millis(50));
    sandbox(&[]);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let dirs = |trace: &str| {
        trace
            .lines()
            .filter(|l| l.contains("O_DIRECTORY") && !l.contains("= -1"))
            .count()
    };
    let (ok, plain) = sandbox(&[]);
    assert!(ok, "{plain}");
    let (ok, proxied) = sandbox(&["--allow-host", "example.com"]);
    assert!(ok, "{proxied}");
    assert_eq!(opens_of_config(&proxied), 1, "zot sandbox --allow-host:\n{proxied}");
    assert!(
        dirs(&proxied) <= dirs(&plain),
        "--allow-host opened {} directories, without it {}:\n{proxied}\n---\n{plain}",
        dirs(&proxied),
        dirs(&plain)
    );
}
