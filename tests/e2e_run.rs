//! End-to-end tests of `zot run` with the offline `sim` model: tool
//! confinement, consent (on a real pty), requirements, GitHub references
//! served by a local HTTP server, sessions and the JSON event stream.
mod common;

use common::run::{events, fixture, of_type, s, sandbox_works, text, World};

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

// ------------------------------------------------------------ basics

#[test]
fn sim_rules_without_script() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let out = w.run(&["run", s(&agent), "-y", "--print", "hello there"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "echo: hello there\n");
    let out = w.run(&["run", s(&agent), "-y", "--print", "read: README.md"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "read: hello from the workspace\n");
    let out = w.run(&["run", s(&agent), "-y", "--print", "skill: inspect"]);
    assert!(
        text(&out.stdout).contains("`ls` the workspace"),
        "{}",
        text(&out.stdout)
    );
    // The agent data dir is created on every run.
    assert!(w.zot_home.join("agents/readonly-bash/data").is_dir());
}

#[test]
fn bash_none_is_denied_as_a_tool_error() {
    let w = World::new();
    let agent = w.agent(
        "nobash",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "none"}}}),
    );
    let out = w.run(&["run", s(&agent), "-y", "--print", "run: true"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("bash error: bash is not permitted"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn json_event_stream() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let script = w.script(
        "s.json",
        json!([
            {"text": "looking", "tool_calls": [
                {"name": "read", "arguments": {"path": "README.md"}},
                {"name": "read", "arguments": {"path": "/etc/shadow"}}
            ]},
            {"text": "all done"}
        ]),
    );
    let ev = w.run_script(&agent, &script, "go");
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "turn_start",
            "text_delta",
            "assistant_message",
            "usage",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "text_delta",
            "assistant_message",
            "usage",
            "turn_end",
            "done"
        ]
    );
    let results = of_type(&ev, "tool_result");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[0]["content"], "hello from the workspace\n");
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1]["content"]
        .as_str()
        .unwrap()
        .contains("outside the agent's fs.read scopes"));
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "all done");
    assert!(of_type(&ev, "usage")[0]["input_tokens"].as_u64().unwrap() > 0);
    let done = of_type(&ev, "done")[0];
    assert_eq!(
        (
            done["agent"].as_str(),
            done["model"].as_str(),
            done["exit_code"].as_u64()
        ),
        (Some("readonly-bash"), Some("sim"), Some(0))
    );
    // Errors are events too.
    let out = w.run(&["run", s(&agent), "-y", "--json", "--model", "gpt-5.5", "go"]);
    assert_eq!(out.status.code(), Some(1));
    let ev = events(&out);
    assert_eq!(ev.len(), 1);
    assert!(
        ev[0]["type"] == "error"
            && ev[0]["message"]
                .as_str()
                .unwrap()
                .contains("OPENAI_API_KEY is not set"),
        "{ev:?}"
    );
}

/// Bad `net.allow` / `env.read` entries are refused before anything runs
/// or is created, naming the field and the entry.
#[test]
fn bad_net_and_env_entries_are_refused() {
    let w = World::new();
    for (name, perms, field, entry) in [
        ("netty", json!({"net": {"allow": ["exa mple.com"]}}), "net.allow", "exa mple.com"),
        ("porty", json!({"net": {"allow": ["example.com:99999"]}}), "net.allow", "example.com:99999"),
        ("envy", json!({"env": {"read": ["1BAD"]}}), "env.read", "1BAD"),
        ("prefixy", json!({"env": {"read": ["A*"]}}), "env.read", "A*"),
    ] {
        let agent = w.agent(name, json!({ "permissions": perms }));
        let out = w.run(&["run", s(&agent), "-y", "--print", "hi"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains(field) && err.contains(entry), "{name}: {err}");
        assert!(out.stdout.is_empty());
        assert!(!w.zot_home.join("agents").join(name).exists(), "{name}: created state");
    }
}

#[test]
fn file_tools_refuse_symlink_escape_and_writes() {
    let w = World::new();
    std::os::unix::fs::symlink(w.home.join(".ssh/id_rsa"), w.ws.join("key")).unwrap();
    std::os::unix::fs::symlink(&w.home, w.ws.join("homelink")).unwrap();
    let agent = fixture("readonly-bash");
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [
            {"name": "read", "arguments": {"path": "key"}},
            {"name": "read", "arguments": {"path": "homelink/.ssh/id_rsa"}},
            {"name": "grep", "arguments": {"pattern": "FAKE"}},
            {"name": "write", "arguments": {"path": "new.txt", "content": "x"}},
            {"name": "edit", "arguments": {"path": "README.md", "old_string": "hello", "new_string": "bye"}}
        ]}, {"text": "continued"}]),
    );
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--json",
        "--sim-script",
        s(&script),
        "go",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), 5);
    for r in &results[..2] {
        assert_eq!(r["is_error"], true, "{r}");
    }
    assert_eq!(results[2]["content"], "no matches");
    assert!(results[3]["is_error"] == true && results[4]["is_error"] == true);
    assert!(!text(&out.stdout).contains("FAKE-PRIVATE-KEY"));
    assert!(!w.ws.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("README.md")).unwrap(),
        "hello from the workspace\n"
    );
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "continued");
}

#[test]
fn symlinked_scopes_that_leave_the_workspace_are_refused_at_launch() {
    let w = World::new();
    let elsewhere = w.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, w.ws.join("out")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, w.ws.join("src")).unwrap();
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [
            {"name": "write", "arguments": {"path": "out/pwned.txt", "content": "x"}},
            {"name": "bash", "arguments": {"command": "echo x > out/pwned2.txt"}}
        ]}, {"text": "done"}]),
    );
    for (field, scope) in [
        ("write", "out"),
        ("write", "${workspace}/out"),
        ("read", "src"),
        ("read", "${workspace}/src/sub"),
    ] {
        let agent = w.agent(
            "linky",
            json!({"permissions": {
                "fs": {field: [scope]},
                "bash": {"mode": "ask"}
            }}),
        );
        let out = w.run(&[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--sim-script",
            s(&script),
            "go",
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{scope}: {err}");
        assert!(
            err.contains(&format!("permissions.fs.{field}")) && err.contains(scope),
            "{scope}: {err}"
        );
        assert!(
            err.contains(&format!("resolves to {}", elsewhere.display())),
            "{err}"
        );
        assert!(
            of_type(&events(&out), "tool_result").is_empty(),
            "nothing may run"
        );
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(
        !w.zot_home.join("sessions").exists(),
        "refused before consent and before any session"
    );
}

// ------------------------------------------------------------ sandbox

#[test]
fn readonly_agent_bash_attacks_are_refused() {
    bash_attacks(World::new());
}

#[test]
fn readonly_agent_bash_attacks_are_refused_unprivileged() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Already unprivileged: the other test covers it.
        return;
    }
    let have = Command::new(common::SETPRIV)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::require("setpriv", have, "setpriv is not installed") {
        return;
    }
    let w = World::unprivileged();
    // The binary must be reachable for uid 65534.
    let probe = w.run(&["--version"]);
    if !common::require(
        "zot binary readable by uid 65534",
        probe.status.success(),
        &text(&probe.stderr),
    ) {
        return;
    }
    bash_attacks(w);
}

fn bash_attacks(w: World) {
    if !sandbox_works(&w) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = w.root.join("outside-secret.txt");
    std::fs::write(&outside, "OUTSIDE-SECRET").unwrap();
    std::os::unix::fs::symlink(&outside, w.ws.join("escape")).unwrap();
    if w.nobody {
        std::os::unix::fs::lchown(&outside, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::lchown(w.ws.join("escape"), Some(65534), Some(65534)).unwrap();
    }
    let key = w.home.join(".ssh/id_rsa");
    let cmds = [
        "ls".to_string(),
        "touch pwned.txt".to_string(),
        "mkdir pwned-dir".to_string(),
        format!("cat {}", key.display()),
        format!("ls {}", w.home.display()),
        format!("curl -sS --max-time 3 http://127.0.0.1:{port}/"),
        "cat escape".to_string(),
        format!("cat {}", outside.display()),
    ];
    let calls: Vec<Value> = cmds
        .iter()
        .map(|c| json!({"name": "bash", "arguments": {"command": c}}))
        .collect();
    let script = w.script(
        "attack.json",
        json!([{"text": "trying", "tool_calls": calls}, {"text": "still here"}]),
    );
    let agent = fixture("readonly-bash");
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--json",
        "--sim-script",
        s(&script),
        "attack",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), cmds.len());
    // The control: listing the workspace works inside the sandbox.
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .contains("README.md"));
    for (c, r) in cmds.iter().zip(&results).skip(1) {
        assert_eq!(r["is_error"], true, "{c}: {r}");
        assert_ne!(r["exit_code"], 0, "{c}: {r}");
    }
    let all = text(&out.stdout);
    assert!(!all.contains("FAKE-PRIVATE-KEY") && !all.contains("OUTSIDE-SECRET"));
    assert!(!w.ws.join("pwned.txt").exists() && !w.ws.join("pwned-dir").exists());
    assert!(
        listener.accept().is_err(),
        "the sandbox reached the host's loopback"
    );
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "still here");
}

#[test]
fn allowlist_gate_refuses_unlisted_commands() {
    let w = World::new();
    let agent = fixture("true-runner");
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [
            {"name": "bash", "arguments": {"command": "rm -rf /"}},
            {"name": "bash", "arguments": {"command": "true; cat /etc/passwd"}},
            {"name": "bash", "arguments": {"command": "true $(id)"}}
        ]}, {"text": "ok"}]),
    );
    let ev = w.run_script(&agent, &script, "x");
    for r in of_type(&ev, "tool_result") {
        assert_eq!(r["is_error"], true, "{r}");
        assert!(
            r.get("exit_code").is_none(),
            "the command must not have run: {r}"
        );
    }
}

#[test]
fn bash_timeout_and_capped_output() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = w.agent(
        "asker",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "allowlist", "allow": ["sleep", "seq"]}}}),
    );
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [
            {"name": "bash", "arguments": {"command": "sleep 30", "timeout": 1}},
            {"name": "bash", "arguments": {"command": "seq 1 100000"}}
        ]}, {"text": "ok"}]),
    );
    let t = std::time::Instant::now();
    let ev = w.run_script(&agent, &script, "x");
    assert!(t.elapsed().as_secs() < 20);
    let r = of_type(&ev, "tool_result");
    assert!(
        r[0]["is_error"] == true && r[0]["content"].as_str().unwrap().contains("timed out"),
        "{}",
        r[0]
    );
    let c = r[1]["content"].as_str().unwrap();
    assert!(
        c.len() < 20_000
            && c.contains("\n1\n")
            && c.contains("100000")
            && c.contains("tokens) omitted"),
        "{}",
        &c[..200]
    );
    let full = r[1]["full_output"].as_str().expect("full output saved");
    let saved = std::fs::read_to_string(full).unwrap();
    assert!(saved.contains("\n50000\n"));
    assert!(Path::new(full).starts_with(w.zot_home.join("sessions/agents/asker")));
}

// ------------------------------------------------------------ consent

/// Run zot with stdin and stderr on a new pty, type `input`, return
/// (exit code, everything written to the terminal, stdout).
fn run_pty(mut cmd: Command, input: &[u8]) -> (Option<i32>, String, String) {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    // SAFETY: openpty writes two fds.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: fresh fds we own.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // The Command keeps its copies of the slave open: drop it so the
    // master sees EIO once the child is gone.
    drop(cmd);
    drop(slave);
    let mut m = std::fs::File::from(master);
    let mut reader = m.try_clone().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break, // EIO once every slave fd is closed
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
        all
    });
    // Wait for the question before answering.
    std::thread::sleep(std::time::Duration::from_millis(300));
    m.write_all(input).unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let _ = m.as_raw_fd();
    let term = text(&out_thread.join().unwrap());
    (status.code(), term, stdout)
}

fn receipts(w: &World, agent: &str) -> Vec<PathBuf> {
    std::fs::read_dir(w.zot_home.join("agents").join(agent).join("consents"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn consent_on_a_pty_yes_no_eof_and_receipts() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let agent = w.agent(
        "consenting",
        json!({"version": "1.2.3", "permissions": {"fs": {"read": ["${workspace}"], "write": ["${agent_data}"]}}}),
    );
    let args = ["run", s(&agent), "--print", "hi"];
    // Non-interactive without -y: refused, naming both ways.
    let out = w.run(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("--yes") && err.contains("ZOT_AGENT_CONSENT=1"),
        "{err}"
    );
    // n and EOF decline (exit 1) and store nothing.
    for input in [&b"n\n"[..], &b"\x04"[..]] {
        let (code, term, stdout) = run_pty(w.cmd(&args), input);
        assert_eq!(code, Some(1), "{term}");
        assert!(
            term.contains("Agent consenting@1.2.3 wants to run."),
            "{term}"
        );
        assert!(
            term.contains(&format!("fs read: {}", w.ws.display())),
            "{term}"
        );
        assert!(
            term.contains("fs write: ") && term.contains("agents/consenting/data"),
            "{term}"
        );
        assert!(
            term.contains("bash: none") && term.contains("[y/N]"),
            "{term}"
        );
        assert!(stdout.is_empty());
        assert!(receipts(&w, "consenting").is_empty());
    }
    // y runs and writes a private receipt.
    let (code, term, stdout) = run_pty(w.cmd(&args), b"y\n");
    assert_eq!(code, Some(0), "{term}");
    assert_eq!(stdout, "echo: hi\n");
    let r = receipts(&w, "consenting");
    assert_eq!(r.len(), 1);
    assert_eq!(
        std::fs::metadata(&r[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(r[0].parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    // The receipt is reused without a terminal.
    let out = w.run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Another workspace expands to other permissions: consent again.
    let other = w.root.join("other-ws");
    std::fs::create_dir(&other).unwrap();
    let mut c = w.cmd(&args);
    c.current_dir(&other);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("consent"));
    // A changed artifact (new digest) needs consent again too.
    std::fs::write(agent.join("AGENT.md"), "changed").unwrap();
    assert_eq!(w.run(&args).status.code(), Some(1));
    // ZOT_AGENT_CONSENT=1 skips the prompt.
    let out = w.cmd(&args).env("ZOT_AGENT_CONSENT", "1").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn ask_mode_consent_is_never_cached() {
    let w = World::new();
    let agent = w.agent(
        "asking",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "ask"}}}),
    );
    let args = ["run", s(&agent), "--print", "hi"];
    for _ in 0..2 {
        let (code, term, stdout) = run_pty(w.cmd(&args), b"y\n");
        assert_eq!(code, Some(0), "{term}");
        assert!(term.contains("bash: ask"), "{term}");
        assert_eq!(stdout, "echo: hi\n");
    }
    assert!(receipts(&w, "asking").is_empty());
    assert_eq!(w.run(&args).status.code(), Some(1));
}

#[test]
fn ask_verdicts_are_refused_without_a_terminal() {
    let w = World::new();
    let agent = w.agent(
        "asking2",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "ask"}}}),
    );
    let out = w.run(&["run", s(&agent), "-y", "--json", "run: rm -rf ~/"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    assert_eq!(r[0]["is_error"], true);
    assert!(r[0].get("exit_code").is_none(), "{}", r[0]);
    assert!(
        r[0]["content"]
            .as_str()
            .unwrap()
            .contains("no terminal to ask on"),
        "{}",
        r[0]
    );
}

// ------------------------------------------------------------ requirements

#[test]
fn requirement_failures_come_before_consent() {
    let w = World::new();
    for (name, m, needle) in [
        ("newer", json!({"runtime": {"min_zot": "99.0.0"}}), "99.0.0"),
        (
            "elsewhere",
            json!({"requirements": {"os": ["plan9"]}}),
            "requirements.os",
        ),
        (
            "needsbin",
            json!({"requirements": {"bin": ["zot-no-such-binary"]}}),
            "zot-no-such-binary",
        ),
    ] {
        let agent = w.agent(name, m);
        let out = w.run(&["run", s(&agent), "--print", "hi"]);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(
            err.contains(needle) && !err.contains("consent"),
            "{name}: {err}"
        );
        assert!(!w.zot_home.join("agents").join(name).exists());
    }
    // Model compatibility too: no consent is asked for an agent no
    // available model can run, and nothing is created.
    let agent = w.agent("thinker", json!({"model": {"requires": ["reasoning"]}}));
    let out = w.run(&["run", s(&agent), "--print", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("reasoning")
            && err.contains("ANTHROPIC_API_KEY is not set")
            && !err.contains("consent"),
        "{err}"
    );
    assert!(!w.zot_home.join("agents/thinker").exists());
    let out = w.run(&["run", s(&agent), "--print", "--model", "sim", "hi"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("sim (sim) does not satisfy") && !err.contains("consent"),
        "{err}"
    );
    assert!(!w.zot_home.join("agents/thinker").exists());
}

// ------------------------------------------------------------ references

/// Serve `files` (URL path -> bytes) over HTTP on 127.0.0.1 until dropped.
fn serve(files: Vec<(String, Vec<u8>)>) -> (String, std::sync::mpsc::Receiver<String>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let line = text(&req).lines().next().unwrap_or("").to_string();
            let path = line.split(' ').nth(1).unwrap_or("").to_string();
            let _ = tx.send(path.clone());
            match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => {
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = c.write_all(body);
                }
                None => {
                    let _ = c.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        }
    });
    (base, rx)
}

#[test]
fn github_references_from_a_local_server() {
    let w = World::new();
    // A repository archive like GitHub's: one top-level directory.
    let repo = w.root.join("src/agents-0123abc");
    let sub = repo.join("reviewers/go");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("manifest.json"),
        r#"{"zotfile":1,"name":"go-reviewer","permissions":{"fs":{"read":["${workspace}"]}}}"#,
    )
    .unwrap();
    std::fs::write(
        repo.join("manifest.json"),
        r#"{"zotfile":1,"name":"root-agent"}"#,
    )
    .unwrap();
    let tgz = w.root.join("a.tar.gz");
    let st = Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(w.root.join("src"))
        .arg("agents-0123abc")
        .status()
        .unwrap();
    assert!(st.success());
    let bytes = std::fs::read(&tgz).unwrap();
    let (base, hits) = serve(vec![
        ("/acme/agents/archive/HEAD.tar.gz".into(), bytes.clone()),
        ("/acme/agents/archive/v1.tar.gz".into(), bytes),
    ]);
    let tmp = w.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (reference, name) in [
        ("acme/agents/reviewers/go", "go-reviewer"),
        ("acme/agents", "root-agent"),
        (
            "https://github.com/acme/agents/tree/v1/reviewers/go",
            "go-reviewer",
        ),
        ("https://github.com/acme/agents/reviewers/go", "go-reviewer"),
    ] {
        let out = w
            .cmd(&["run", reference, "-y", "--json", "read: README.md"])
            .env("ZOT_GITHUB_BASE", &base)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        assert!(out.status.success(), "{reference}: {}", text(&out.stderr));
        let ev = events(&out);
        assert_eq!(of_type(&ev, "done")[0]["agent"], name, "{reference}");
    }
    let paths: Vec<String> = hits.try_iter().collect();
    assert!(
        paths.contains(&"/acme/agents/archive/v1.tar.gz".to_string()),
        "{paths:?}"
    );
    // Missing agent directory and missing repository: clear errors.
    let out = w
        .cmd(&["run", "acme/agents/nope", "-y", "--print", "x"])
        .env("ZOT_GITHUB_BASE", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no agent"),
        "{}",
        text(&out.stderr)
    );
    let out = w
        .cmd(&["run", "acme/missing", "-y", "--print", "x"])
        .env("ZOT_GITHUB_BASE", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("404"), "{}", text(&out.stderr));
    // The downloads were removed.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// ------------------------------------------------------------ sessions

fn session_id(out: &Output) -> String {
    let ev = events(out);
    of_type(&ev, "done")[0]["session"]
        .as_str()
        .expect("session id")
        .to_string()
}

#[test]
fn sessions_continue_resume_and_torn_line() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let a = s(&agent);
    let first = w.run(&["run", a, "-y", "--json", "first message"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let id1 = session_id(&first);
    let second = w.run(&["run", a, "-y", "--json", "other session"]);
    let id2 = session_id(&second);
    assert_ne!(id1, id2);
    let dir = w.zot_home.join("sessions/agents/readonly-bash");
    let file1 = dir.join(format!("{id1}.jsonl"));
    assert!(file1.is_file());
    // --continue picks the most recent (the second).
    let out = w.run(&["run", a, "-y", "--json", "--continue", "third"]);
    assert_eq!(session_id(&out), id2);
    // --resume ID goes back to the first, with its history.
    let out = w.run(&["run", a, "-y", "--json", "--resume", &id1, "fourth"]);
    assert_eq!(session_id(&out), id1);
    let body = std::fs::read_to_string(&file1).unwrap();
    assert!(body.contains("first message") && body.contains("fourth") && !body.contains("third"));
    // A torn last line: skipped with a warning, then cut off before appending.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file1)
        .unwrap();
    f.write_all(br#"{"type":"message","message":{"role":"user","content":"tor"#)
        .unwrap();
    drop(f);
    let out = w.run(&["run", a, "-y", "--json", "--session", s(&file1), "fifth"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("torn last line"),
        "{}",
        text(&out.stderr)
    );
    for line in std::fs::read_to_string(&file1).unwrap().lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
    }
    // --no-session records nothing; unknown ids are errors.
    let before = std::fs::read_dir(&dir).unwrap().count();
    assert!(w
        .run(&["run", a, "-y", "--print", "--no-session", "x"])
        .status
        .success());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
    assert_eq!(
        w.run(&["run", a, "-y", "--print", "--resume", "nope", "x"])
            .status
            .code(),
        Some(1)
    );
    // Another agent's session file, or one without a header, is refused
    // and left as it was.
    let other = w.agent("other-agent", json!({}));
    let before = std::fs::read(&file1).unwrap();
    let out = w.run(&[
        "run",
        s(&other),
        "-y",
        "--print",
        "--session",
        s(&file1),
        "x",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("belongs to agent \"readonly-bash\""), "{err}");
    assert_eq!(std::fs::read(&file1).unwrap(), before);
    let headless = w.root.join("headless.jsonl");
    std::fs::write(&headless, br#"{"type":"header","version":1,"id":"#).unwrap();
    let out = w.run(&["run", a, "-y", "--print", "--session", s(&headless), "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("valid session header"),
        "{}",
        text(&out.stderr)
    );
}

// ------------------------------------------------------------ entry

#[test]
fn entry_pre_and_default_prompt() {
    let w = World::new();
    let agent = w.agent(
        "greeter",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}}, "entry": {"pre": "warm up", "default_prompt": "read: README.md"}}),
    );
    let out = w.run(&["run", s(&agent), "-y", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let ends: Vec<&str> = of_type(&ev, "turn_end")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["echo: warm up", "read: hello from the workspace\n"]);
    // A failing `!cmd` pre aborts a non-interactive run (bash none: denied).
    let agent = w.agent("prefail", json!({"entry": {"pre": "!true"}}));
    let out = w.run(&["run", s(&agent), "-y", "--print", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("entry.pre"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    // No prompt and no default_prompt: a clear usage error.
    let agent = w.agent("noprompt", json!({}));
    let out = w.run(&["run", s(&agent), "-y", "--print"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no prompt"));
}

#[test]
fn ask_verdicts_prompt_on_a_terminal() {
    let w = World::new();
    let agent = w.agent(
        "asker3",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "ask"}}}),
    );
    let args = [
        "run",
        s(&agent),
        "--no-session",
        "--print",
        "run: eval true",
    ];
    // Consent yes, command no: refused, never run.
    let (code, term, stdout) = run_pty(w.cmd(&args), b"y\nn\n");
    assert_eq!(code, Some(0), "{term}");
    assert!(term.contains("Agent wants to run: eval true"), "{term}");
    assert_eq!(stdout, "bash error: the user declined this command\n");
    if !sandbox_works(&w) {
        return;
    }
    // Consent yes, command yes: it runs in the sandbox.
    let (code, term, stdout) = run_pty(w.cmd(&args), b"y\ny\n");
    assert_eq!(code, Some(0), "{term}");
    assert!(stdout.starts_with("bash: exit code 0"), "{stdout}");
}

#[test]
fn interactive_repl_with_cd_and_exit() {
    let w = World::new();
    let sub = w.ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("only-here.txt"), "in sub\n").unwrap();
    let agent = fixture("readonly-bash");
    let input = b"hello\nread: only-here.txt\n/cd sub\nread: only-here.txt\n/exit\nnot sent\n";
    let (code, term, stdout) = run_pty(w.cmd(&["run", s(&agent), "-y"]), input);
    assert_eq!(code, Some(0), "{term}");
    assert!(stdout.contains("echo: hello\n"), "{stdout}");
    assert!(stdout.contains("read error: read "), "{stdout}");
    assert!(stdout.contains("read: in sub\n"), "{stdout}");
    assert!(!stdout.contains("not sent"));
    assert!(
        term.contains(&format!("workspace is now {}", sub.display())),
        "{term}"
    );
}

#[test]
fn bash_cannot_forge_consent_or_read_sessions_inside_a_writable_scope() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    // zot's state lives inside the workspace the agent may write.
    let zh = w.ws.join("state");
    let agent = w.agent(
        "writer",
        json!({"permissions": {"fs": {"read": ["${workspace}"], "write": ["${workspace}"]},
               "bash": {"mode": "allowlist", "allow": ["touch", "mkdir", "ls", "cat"]}}}),
    );
    // An earlier session of another agent.
    std::fs::create_dir_all(zh.join("sessions/agents/other")).unwrap();
    std::fs::write(
        zh.join("sessions/agents/other/s.jsonl"),
        "PRIVATE-TRANSCRIPT",
    )
    .unwrap();
    let cmds = [
        "touch ok.txt".to_string(),
        format!("mkdir -p {}/agents/evil/consents", zh.display()),
        format!("touch {}/agents/writer/consents/forged.json", zh.display()),
        format!("cat {}/sessions/agents/other/s.jsonl", zh.display()),
    ];
    let calls: Vec<Value> = cmds
        .iter()
        .map(|c| json!({"name": "bash", "arguments": {"command": c}}))
        .collect();
    let script = w.script("s.json", json!([{"tool_calls": calls}, {"text": "end"}]));
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--no-session",
            "--json",
            "--sim-script",
            s(&script),
            "go",
        ])
        .env("ZOT_HOME", &zh)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    assert_eq!(r[0]["is_error"], false, "{}", r[0]);
    assert!(w.ws.join("ok.txt").exists());
    for (c, r) in cmds.iter().zip(&r).skip(1) {
        assert_eq!(r["is_error"], true, "{c}: {r}");
    }
    assert!(
        !zh.join("agents/evil").exists() && !zh.join("agents/writer/consents/forged.json").exists()
    );
    assert!(!text(&out.stdout).contains("PRIVATE-TRANSCRIPT"));
}

// ------------------------------------------------------------ agent.toml

#[test]
fn agent_toml_package_runs_in_its_seeded_files() {
    let w = World::new();
    let agent = fixture("toml-agent");
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [
            {"name": "read", "arguments": {"path": "notes.md"}},
            {"name": "write", "arguments": {"path": "notes.md", "content": "overwritten"}},
            {"name": "edit", "arguments": {"path": "drafts/today.md", "old_string": "draft", "new_string": "final"}},
            {"name": "skill", "arguments": {"name": "summarize"}},
            {"name": "bash", "arguments": {"command": "true"}},
            {"name": "read", "arguments": {"path": s(&w.ws.join("README.md"))}}
        ]}, {"text": "noted"}]),
    );
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--json",
        "--sim-script",
        s(&script),
        "go",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = session_id(&out);
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    let errs: Vec<bool> = r.iter().map(|r| r["is_error"] == true).collect();
    assert_eq!(errs, [false, true, false, false, true, true], "{r:?}");
    assert_eq!(r[0]["content"], "seeded notes, read-only\n");
    assert!(r[1]["content"]
        .as_str()
        .unwrap()
        .contains("read-only file of the agent package"));
    assert!(r[3]["content"].as_str().unwrap().contains("three bullets"));
    // The files live in the session's own tree.
    let sessions = w.zot_home.join("sessions/agents/toml-notes");
    let files = sessions.join(format!("{first}.d/files"));
    assert_eq!(
        std::fs::read_to_string(files.join("notes.md")).unwrap(),
        "seeded notes, read-only\n"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("drafts/today.md")).unwrap(),
        "final\n"
    );
    assert!(!w.zot_home.join("agents/toml-notes/data/files").exists());
    // A new session gets a fresh snapshot; --resume gets its own tree back.
    let out = w.run(&["run", s(&agent), "-y", "--print", "read: drafts/today.md"]);
    assert_eq!(text(&out.stdout), "read: draft\n", "{}", text(&out.stderr));
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--resume",
        &first,
        "read: drafts/today.md",
    ]);
    assert_eq!(text(&out.stdout), "read: final\n", "{}", text(&out.stderr));
    // --no-session: a fresh tree, gone afterwards.
    let tmp = w.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--no-session",
            "read: drafts/today.md",
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "read: draft\n", "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // A new version of the package: new sessions see its files, the old
    // session keeps the tree it had.
    let v2 = w.root.join("toml-v2");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(
        v2.join("agent.toml"),
        std::fs::read_to_string(agent.join("agent.toml"))
            .unwrap()
            .replace("content = \"draft\\n\"", "content = \"draft v2\\n\""),
    )
    .unwrap();
    let out = w.run(&["run", s(&v2), "-y", "--print", "read: drafts/today.md"]);
    assert_eq!(
        text(&out.stdout),
        "read: draft v2\n",
        "{}",
        text(&out.stderr)
    );
    let out = w.run(&[
        "run",
        s(&v2),
        "-y",
        "--print",
        "--resume",
        &first,
        "read: drafts/today.md",
    ]);
    assert_eq!(text(&out.stdout), "read: final\n", "{}", text(&out.stderr));
    // A zotfile agent of the same name works in its workspace, not in a
    // session tree of the agent.toml package.
    let zf = w.agent(
        "toml-notes",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}}}),
    );
    let out = w.run(&["run", s(&zf), "-y", "--print", "read: drafts/today.md"]);
    assert!(
        text(&out.stdout).contains("No such file"),
        "{}",
        text(&out.stdout)
    );
    let out = w.run(&["run", s(&zf), "-y", "--print", "read: README.md"]);
    assert!(
        text(&out.stdout).contains("hello from the workspace"),
        "{}",
        text(&out.stdout)
    );
    // Fields this host cannot honour refuse the run.
    let dir = w.root.join("mcp-agent");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "schema_version = 1\nname = \"mcp-user\"\ninstructions = \"x\"\n\n[mcpServers.docs]\nurl = \"https://example.com/mcp\"\n",
    )
    .unwrap();
    let out = w.run(&["run", s(&dir), "-y", "--print", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("mcpServers.docs"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn packed_archive_and_stream_mode() {
    let w = World::new();
    let zot = w.root.join("reviewer.zot");
    let out = w.run(&["pack", s(&fixture("readonly-bash")), s(&zot)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = w.run(&["run", s(&zot), "-y", "--stream", "read: README.md"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "read: hello from the workspace\n");
    assert!(
        text(&out.stderr).contains("[read] README.md"),
        "{}",
        text(&out.stderr)
    );
    // The archive has its own digest: consent given to the directory does
    // not cover it.
    let (code, term, _) = run_pty(
        w.cmd(&["run", s(&fixture("readonly-bash")), "--print", "x"]),
        b"y\n",
    );
    assert_eq!(code, Some(0), "{term}");
    assert!(w
        .run(&["run", s(&fixture("readonly-bash")), "--print", "x"])
        .status
        .success());
    assert_eq!(
        w.run(&["run", s(&zot), "--print", "x"]).status.code(),
        Some(1)
    );
}

// ------------------------------------------------------------ signatures

/// `zot keygen` (unencrypted) in the world's root; returns (secret, public).
fn signing_key(w: &World, name: &str) -> (PathBuf, PathBuf) {
    let secret = w.root.join(name);
    let out = w.run(&["keygen", s(&secret), "--unencrypted"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let public = PathBuf::from(format!("{}.pub", s(&secret)));
    (secret, public)
}

fn trust(w: &World, public: &Path) {
    let dir = w.zot_home.join("trusted-keys");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(public, dir.join(public.file_name().unwrap())).unwrap();
}

fn key_id(public: &Path) -> String {
    let t = std::fs::read_to_string(public).unwrap();
    t.lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn require_signature_end_to_end() {
    let w = World::new();
    let zot = w.root.join("reviewer.zot");
    assert!(w
        .run(&["pack", s(&fixture("readonly-bash")), s(&zot)])
        .status
        .success());
    let sig = PathBuf::from(format!("{}.minisig", s(&zot)));
    let (secret, public) = signing_key(&w, "publisher.key");
    let (other_secret, _) = signing_key(&w, "other.key");
    let run_req = |extra: &[&str]| {
        let mut a = vec!["run", s(&zot), "-y", "--stream"];
        a.extend_from_slice(extra);
        a.push("read: README.md");
        w.run(&a)
    };

    // Unsigned: refused, naming the signature file it looked for.
    assert!(w
        .run(&["sign", s(&zot), "--key", s(&secret)])
        .status
        .success());
    std::fs::rename(&sig, w.root.join("saved.minisig")).unwrap();
    trust(&w, &public);
    let out = run_req(&["--require-signature"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(s(&sig)), "{}", text(&out.stderr));
    assert!(text(&out.stdout).is_empty());

    // Signed by the trusted key: runs, and says by whom.
    std::fs::rename(w.root.join("saved.minisig"), &sig).unwrap();
    let out = run_req(&["--require-signature"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "read: hello from the workspace\n");
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("signature verified: key {}", key_id(&public))),
        "{err}"
    );
    assert!(err.contains("agent:readonly-bash"), "{err}");

    // Consent shows the signer.
    let (code, term, _) = run_pty(w.cmd(&["run", s(&zot), "--print", "x"]), b"y\n");
    assert_eq!(code, Some(0), "{term}");
    assert!(
        term.contains(&format!("signed by: key {}", key_id(&public))),
        "{term}"
    );

    // Signed by a key that is not trusted: refused under the flag, runs
    // unsigned (with a warning) without it.
    assert!(w
        .run(&["sign", s(&zot), "--key", s(&other_secret)])
        .status
        .success());
    let out = run_req(&["--require-signature"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("not a trusted key") && err.contains(s(&sig)),
        "{err}"
    );
    let out = run_req(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("running unsigned"),
        "{}",
        text(&out.stderr)
    );

    // The config setting requires it too; a bad value is an error.
    let config = w.zot_home.join("config.toml");
    std::fs::write(&config, "[trust]\nrequire_signature = true\n").unwrap();
    let out = run_req(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not a trusted key"));
    std::fs::write(&config, "[trust]\nrequire_signature = \"yes\"\n").unwrap();
    let out = run_req(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("require_signature"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_file(&config).unwrap();

    // Tampered after signing by a trusted key: refused even without the flag.
    assert!(w
        .run(&["sign", s(&zot), "--key", s(&secret)])
        .status
        .success());
    let mut bytes = std::fs::read(&zot).unwrap();
    bytes.push(0);
    std::fs::write(&zot, bytes).unwrap();
    let out = run_req(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("does not match"),
        "{}",
        text(&out.stderr)
    );

    // A directory has no signed artifact.
    let out = w.run(&[
        "run",
        s(&fixture("readonly-bash")),
        "-y",
        "--require-signature",
        "--print",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no signed artifact"),
        "{}",
        text(&out.stderr)
    );

    // No trusted key at all: refused with a hint.
    std::fs::remove_dir_all(w.zot_home.join("trusted-keys")).unwrap();
    let out = run_req(&["--require-signature"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("trusted-keys"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn signed_archives_from_github_releases_and_repositories() {
    let w = World::new();
    let zot = w.root.join("reviewer.zot");
    assert!(w
        .run(&["pack", s(&fixture("readonly-bash")), s(&zot)])
        .status
        .success());
    let (secret, public) = signing_key(&w, "publisher.key");
    assert!(w
        .run(&["sign", s(&zot), "--key", s(&secret)])
        .status
        .success());
    trust(&w, &public);
    let archive = std::fs::read(&zot).unwrap();
    let sig = std::fs::read(format!("{}.minisig", s(&zot))).unwrap();
    // A repository holding the signed archive and an agent directory.
    let repo = w.root.join("src/agents-0123abc");
    std::fs::create_dir_all(repo.join("dist")).unwrap();
    std::fs::create_dir_all(repo.join("dir-agent")).unwrap();
    std::fs::write(repo.join("dist/reviewer.zot"), &archive).unwrap();
    std::fs::write(repo.join("dist/reviewer.zot.minisig"), &sig).unwrap();
    std::fs::write(repo.join("dist/unsigned.zot"), &archive).unwrap();
    std::fs::write(
        repo.join("dir-agent/manifest.json"),
        r#"{"zotfile":1,"name":"dir-agent","permissions":{"fs":{"read":["${workspace}"]}}}"#,
    )
    .unwrap();
    let tgz = w.root.join("a.tar.gz");
    assert!(Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(w.root.join("src"))
        .arg("agents-0123abc")
        .status()
        .unwrap()
        .success());
    let (base, _) = serve(vec![
        (
            "/acme/agents/archive/HEAD.tar.gz".into(),
            std::fs::read(&tgz).unwrap(),
        ),
        (
            "/acme/agents/releases/download/v1/reviewer.zot".into(),
            archive.clone(),
        ),
        (
            "/acme/agents/releases/download/v1/reviewer.zot.minisig".into(),
            sig,
        ),
        ("/acme/agents/releases/download/v1/bare.zot".into(), archive),
    ]);
    let run = |reference: &str| {
        w.cmd(&[
            "run",
            reference,
            "-y",
            "--require-signature",
            "--stream",
            "read: README.md",
        ])
        .env("ZOT_GITHUB_BASE", &base)
        .output()
        .unwrap()
    };
    for ok in [
        "https://github.com/acme/agents/releases/download/v1/reviewer.zot",
        // A name ending in .zot is a local path: a repository's archive
        // is named by URL.
        "https://github.com/acme/agents/tree/HEAD/dist/reviewer.zot",
    ] {
        let out = run(ok);
        assert!(out.status.success(), "{ok}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "read: hello from the workspace\n");
        assert!(text(&out.stderr).contains("signature verified"), "{ok}");
    }
    for (bad, why) in [
        (
            "https://github.com/acme/agents/releases/download/v1/bare.zot",
            "bare.zot.minisig",
        ),
        (
            "https://github.com/acme/agents/dist/unsigned.zot",
            "unsigned.zot.minisig",
        ),
        ("acme/agents/dir-agent", "no signed artifact"),
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(
            text(&out.stderr).contains(why),
            "{bad}: {}",
            text(&out.stderr)
        );
    }
    // Without the flag the unsigned release runs.
    let out = w
        .cmd(&[
            "run",
            "https://github.com/acme/agents/releases/download/v1/bare.zot",
            "-y",
            "--print",
            "read: README.md",
        ])
        .env("ZOT_GITHUB_BASE", &base)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Entries of `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The agent `name` three ways: a directory, a packed `.zot`, and the
/// GitHub repository `acme/NAME` (its archive served locally: the base URL
/// for `ZOT_GITHUB_BASE`).
fn three_ways(w: &World, name: &str, manifest: Value) -> (PathBuf, PathBuf, String) {
    let src = w.agent(name, manifest);
    let archive = w.root.join(format!("{name}.zot"));
    let out = w.run(&["pack", s(&src), s(&archive)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let top = format!("{name}-0123");
    let repo = w.root.join("src").join(&top);
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::copy(src.join("manifest.json"), repo.join("manifest.json")).unwrap();
    let tgz = w.root.join(format!("{name}.tar.gz"));
    assert!(Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(w.root.join("src"))
        .arg(&top)
        .status()
        .unwrap()
        .success());
    let (base, _hits) = serve(vec![(
        format!("/acme/{name}/archive/HEAD.tar.gz"),
        std::fs::read(&tgz).unwrap(),
    )]);
    (src, archive, base)
}

#[test]
fn a_killed_runs_temp_dirs_are_removed_by_the_next_invocation() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let (_src, archive, base) = three_ways(
        &w,
        "sleeper",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "allowlist", "allow": ["sleep"]}}}),
    );
    let script = w.script(
        "s.json",
        json!([{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]}, {"text": "done"}]),
    );
    let tmp = w.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (reference, prefix) in [(s(&archive), "zot-agent-"), ("acme/sleeper", "zot-github-")] {
        let mut child = w
            .cmd(&[
                "run",
                reference,
                "-y",
                "--json",
                "--sim-script",
                s(&script),
                "go",
            ])
            .env("ZOT_GITHUB_BASE", &base)
            .env("TMPDIR", &tmp)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the bash tool call is under way.
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let started = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("\"tool_call\""));
        assert!(started, "{reference}: no tool call");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let left = named(&tmp, prefix);
        assert_eq!(left.len(), 1, "{reference}: {left:?}");
        child.kill().unwrap(); // SIGKILL: no clean-up code runs
        child.wait().unwrap();
        assert!(left[0].exists(), "only the next invocation cleans up");
        // Any zot command sweeps what the dead run journaled.
        let out = w.cmd(&["models"]).env("TMPDIR", &tmp).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            named(&tmp, prefix).is_empty(),
            "{reference}: {:?}",
            named(&tmp, prefix)
        );
        let journals: Vec<PathBuf> = named(&w.zot_home.join("journal"), "")
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        assert!(journals.is_empty(), "{journals:?}");
    }
    // A run that ends normally leaves no journal and no temp dir.
    let out = w
        .cmd(&["run", s(&archive), "-y", "--print", "hi"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(named(&tmp, "zot-").is_empty());
    assert!(named(&w.zot_home.join("journal"), "")
        .iter()
        .all(|p| p.extension().is_none_or(|x| x != "jsonl")));
}

// ------------------------------------------------------------ signals

/// Every entry below `dir` (relative paths), for before/after comparisons.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out.sort();
    out
}

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap()
}

/// A real signal while `zot run` works (a bash tool call, `entry.pre`)
/// reaches the command in the sandbox; zot removes what it created
/// (placeholders in the workspace, the extraction dir of a `.zot`, the
/// download of a GitHub reference) and exits 128+N. For a directory, a
/// `.zot` and a GitHub reference, in a plain workspace and in a
/// subdirectory of a git repository (where git must keep working).
#[test]
fn signals_stop_the_run_forward_to_the_sandbox_and_clean_up() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let perms = json!({"fs": {"read": ["${workspace}"], "write": ["${workspace}"]}, "bash": {"mode": "allowlist", "allow": ["sleep"]}});
    let (src, archive, base) = three_ways(&w, "napper", json!({ "permissions": perms }));
    let pre = w.agent(
        "prenapper",
        json!({"permissions": perms, "entry": {"pre": "!sleep 41.8"}}),
    );
    let script = w.script(
        "nap.json",
        json!([{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 41.7"}}]}, {"text": "done"}]),
    );
    // A plain workspace, and a subdirectory of a repository with a commit.
    let plain = w.root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("notes.txt"), "n\n").unwrap();
    let checkout = w.root.join("checkout");
    std::fs::create_dir_all(checkout.join("sub")).unwrap();
    std::fs::write(checkout.join("sub/a.txt"), "a\n").unwrap();
    assert!(git(&checkout, &["init", "-q"]).status.success());
    assert!(git(&checkout, &["add", "."]).status.success());
    assert!(git(&checkout, &["commit", "-qm", "one"]).status.success());
    let nested = checkout.join("sub");
    let tmp = w.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    let refs: [(&str, &str, &[&str]); 4] = [
        (s(&src), "", &["sleep", "41.7"]),
        (s(&archive), "zot-agent-", &["sleep", "41.7"]),
        ("acme/napper", "zot-github-", &["sleep", "41.7"]),
        (s(&pre), "", &["sleep", "41.8"]),
    ];
    let signals = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];
    let mut n = 0;
    for ws in [&plain, &nested] {
        for (reference, prefix, sleeper) in refs {
            let sig = signals[n % signals.len()];
            n += 1;
            let what = format!("{reference} in {} with signal {sig}", ws.display());
            let before = tree(ws);
            let mut child = w
                .cmd(&[
                    "run",
                    reference,
                    "-y",
                    "--json",
                    "--no-session",
                    "--sim-script",
                    s(&script),
                    "go",
                ])
                .current_dir(ws)
                .env("ZOT_GITHUB_BASE", &base)
                .env("TMPDIR", &tmp)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Wait until the command runs in the sandbox.
            let t0 = std::time::Instant::now();
            while common::processes(sleeper).is_empty() {
                assert!(
                    t0.elapsed() < std::time::Duration::from_secs(20),
                    "{what}: the command never started"
                );
                assert!(child.try_wait().unwrap().is_none(), "{what}: zot ended early");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if !prefix.is_empty() {
                assert_eq!(named(&tmp, prefix).len(), 1, "{what}");
            }
            // SAFETY: signalling our child.
            unsafe { libc::kill(child.id() as i32, sig) };
            let t1 = std::time::Instant::now();
            let status = child.wait().unwrap();
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            assert_eq!(status.code(), Some(128 + sig), "{what}: {err}");
            assert!(
                t1.elapsed() < std::time::Duration::from_secs(5),
                "{what}: took {:?}",
                t1.elapsed()
            );
            // The sandboxed command is gone (it got the signal).
            let t2 = std::time::Instant::now();
            while !common::processes(sleeper).is_empty() {
                assert!(
                    t2.elapsed() < std::time::Duration::from_secs(3),
                    "{what}: the command outlived zot"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert_eq!(tree(ws), before, "{what}: the workspace changed");
            assert!(named(&tmp, "zot-").is_empty(), "{what}: {:?}", named(&tmp, "zot-"));
            if ws == &nested {
                let st = git(ws, &["status", "--porcelain"]);
                assert!(st.status.success(), "{what}: {}", text(&st.stderr));
                assert!(st.stdout.is_empty(), "{what}: {}", text(&st.stdout));
            }
        }
    }
}

/// `entry.pre`'s output streams as it comes: on stderr as text, as
/// `command_output` events with `--json`; the first line arrives well
/// before the command ends.
#[test]
fn entry_pre_output_streams_live() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = w.agent(
        "streamer",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "allowlist", "allow": ["echo", "sleep"]}},
               "entry": {"pre": "!echo first; sleep 2; echo second"}}),
    );
    for json_mode in [false, true] {
        let mode = if json_mode { "--json" } else { "--print" };
        let mut child = w
            .cmd(&["run", s(&agent), "-y", "--no-session", mode, "hi"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stream: Box<dyn Read + Send> = if json_mode {
            Box::new(child.stdout.take().unwrap())
        } else {
            Box::new(child.stderr.take().unwrap())
        };
        let mut seen: Vec<(String, std::time::Instant)> = Vec::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stream)).map_while(Result::ok) {
            let t = std::time::Instant::now();
            let piece = if json_mode {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["type"] != "command_output" {
                    continue;
                }
                assert_eq!(v["stream"], "stdout", "{line}");
                v["text"].as_str().unwrap().to_string()
            } else {
                line
            };
            for word in ["first", "second"] {
                if piece.contains(word) {
                    seen.push((word.to_string(), t));
                }
            }
        }
        let status = child.wait().unwrap();
        assert!(status.success(), "{mode}");
        let words: Vec<&str> = seen.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(words, ["first", "second"], "{mode}: each once, in order");
        let gap = seen[1].1 - seen[0].1;
        assert!(
            gap > std::time::Duration::from_millis(1500),
            "{mode}: the first line came only {gap:?} before the second"
        );
    }
}

// ------------------------------------------------------------ net and env

/// `permissions.net.allow` and `permissions.env.read` are enforced by
/// `zot run`: the listed host answers through the proxy, an unlisted one
/// is refused with the reason (the model sees it, `--json` and the session
/// record the decisions); exactly the listed variables reach the command,
/// a prefix never passes zot's provider keys.
fn net_and_env(w: World) {
    if !sandbox_works(&w) {
        return;
    }
    if !common::require(
        "curl",
        Path::new("/usr/bin/curl").exists(),
        "ci/setup.sh installs it",
    ) {
        return;
    }
    let port = common::origin("hello from the origin");
    let agent = w.agent(
        "fetcher",
        json!({"permissions": {
            "fs": {"read": ["${workspace}"]},
            "bash": {"mode": "allowlist", "allow": ["curl", "env"]},
            "net": {"allow": [format!("127.0.0.1:{port}")]},
            "env": {"read": ["ZOT_SEEN", "MYAPP_*", "OPENAI_*"]}}}),
    );
    let script = w.script(
        "fetch.json",
        json!([
            {"tool_calls": [
                {"name": "bash", "arguments": {"command": format!("curl -sS -m 10 http://127.0.0.1:{port}/x")}},
                {"name": "bash", "arguments": {"command": format!("curl -sS -m 10 -o /dev/null -w 'code=%{{http_code}}' http://127.0.0.2:{port}/x")}},
                {"name": "bash", "arguments": {"command": "env"}}]},
            {"text": "done"}]),
    );
    let out = w
        .cmd(&["run", s(&agent), "-y", "--json", "--sim-script", s(&script), "go"])
        .env("ZOT_SEEN", "seen-value")
        .env("ZOT_UNSEEN", "unseen-value")
        .env("MYAPP_A", "a-value")
        .env("OPENAI_API_KEY", "sk-test-secret-0000")
        .env("OPENAI_ORG_ID", "org-0000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), 3, "{ev:?}");
    let content = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    // The listed host, through the proxy.
    assert!(content(0).contains("hello from the origin"), "{}", content(0));
    let net0 = results[0]["network"].as_array().unwrap();
    assert!(
        net0.iter().any(|r| r["decision"] == "allow" && r["port"] == port),
        "{net0:?}"
    );
    // Another loopback address: refused, and the model is told why.
    assert!(content(1).contains("code=403"), "{}", content(1));
    assert!(content(1).contains("[network: 127.0.0.2"), "{}", content(1));
    let net1 = results[1]["network"].as_array().unwrap();
    assert!(
        net1.iter().any(|r| r["decision"] != "allow" && r["reason"].is_string()),
        "{net1:?}"
    );
    // Exactly the listed variables.
    let env = content(2);
    assert!(env.contains("ZOT_SEEN=seen-value"), "{env}");
    assert!(env.contains("MYAPP_A=a-value"), "{env}");
    assert!(env.contains("OPENAI_ORG_ID=org-0000"), "{env}");
    assert!(!env.contains("ZOT_UNSEEN"), "{env}");
    assert!(!env.contains("sk-test-secret"), "{env}");
    // The session records the decisions.
    let sessions = w.zot_home.join("sessions/agents/fetcher");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let recs = std::fs::read_to_string(file).unwrap();
    assert_eq!(
        recs.lines().filter(|l| l.contains("\"type\":\"network\"")).count(),
        2,
        "{recs}"
    );
    assert!(!recs.contains("sk-test-secret"));
}

#[test]
fn net_allow_and_env_read_are_enforced() {
    net_and_env(World::new());
}

#[test]
fn net_allow_and_env_read_are_enforced_unprivileged() {
    net_and_env(World::unprivileged());
}

// ------------------------------------------------------ workspace index

fn chown_tree(p: &Path) {
    std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
    if p.is_dir() && !p.is_symlink() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            chown_tree(&e.path());
        }
    }
}

/// Host git with hooks, as a user would run it after the session. Its
/// discovery stops at `ceiling` (the test's world): never the repository
/// the tests themselves run in.
fn host_git(ceiling: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap()
}

/// A session's workspace index: a repository created by call k (made in
/// place, at the path of a renamed parent, or moved in from outside the
/// workspace) is renamed aside before call k+1 runs, and a hook planted in
/// it never runs for a host git, during or after the session.
fn index_session(w: World) {
    if !sandbox_works(&w) {
        return;
    }
    let marker = w.root.join("HOST-RAN-A-HOOK");
    let hook = format!("#!/bin/sh\ntouch '{}'\n", marker.display());
    std::fs::write(w.ws.join("hook.sh"), &hook).unwrap();
    // The attack works without zot: a hook planted in a new repository
    // runs for the host's git.
    let ctl = w.root.join("control");
    std::fs::create_dir_all(&ctl).unwrap();
    assert!(host_git(&w.root, &ctl, &["init", "-q", "."]).status.success());
    std::fs::copy(w.ws.join("hook.sh"), ctl.join(".git/hooks/post-commit")).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(ctl.join(".git/hooks/post-commit")).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(
        ctl.join(".git/hooks/post-commit"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    host_git(&w.root, &ctl, &["commit", "-q", "--allow-empty", "-m", "x"]);
    assert!(marker.exists(), "control: the planted hook did not run unconfined");
    std::fs::remove_file(&marker).unwrap();

    std::fs::create_dir_all(w.ws.join("vendor/lib")).unwrap();
    assert!(host_git(&w.root, &w.ws.join("vendor/lib"), &["init", "-q", "."]).status.success());
    if w.nobody {
        chown_tree(&w.ws);
    }
    let agent = w.agent(
        "indexer",
        json!({
            "permissions": {
                "fs": {"read": ["${workspace}"], "write": ["${workspace}"]},
                "bash": {"mode": "allowlist", "allow": ["git", "mkdir", "mv", "ls", "cp", "chmod"]}
            }
        }),
    );
    let cmds = [
        "mkdir -p made/.git/hooks && cp hook.sh made/.git/hooks/post-commit && chmod +x made/.git/hooks/post-commit",
        "ls -a made",
        "mv vendor/lib vendor/lib.orig",
        "mkdir -p vendor/lib/.git/hooks",
        "ls -a vendor/lib",
        // Each call has its own private /tmp: made there, moved in.
        "git init -q /tmp/m && mv /tmp/m moved",
        "ls -a moved",
        "cp hook.sh made/.git/hooks/pre-commit",
    ];
    let turns: Vec<Value> = cmds
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]}))
        .chain([json!({"text": "done"})])
        .collect();
    let script = w.script("index.json", Value::Array(turns));
    let ev = w.run_script(&agent, &script, "go");
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), cmds.len(), "{ev:?}");
    let content = |i: usize| results[i]["content"].as_str().unwrap_or("").to_string();
    let lines = |i: usize| -> Vec<String> { content(i).lines().map(str::to_string).collect() };
    // Call k made a repository; call k+1 no longer finds it in place.
    for (made, listing) in [(0, 1), (3, 4), (5, 6)] {
        assert!(
            !lines(listing).iter().any(|l| l == ".git"),
            "call {made}'s repository still in place at call {listing}: {}",
            content(listing)
        );
        assert!(
            lines(listing).iter().any(|l| l.starts_with(".git.zot-quarantine-")),
            "call {listing}: {}",
            content(listing)
        );
    }
    assert!(
        results.iter().any(|r| r["content"].as_str().unwrap_or("").contains("zot-quarantine")),
        "no call was told: {results:?}"
    );
    // The renamed parent kept its own repository.
    assert!(w.ws.join("vendor/lib.orig").is_dir());
    // Nothing git could use is left, and the host's git runs no hook.
    for d in ["made", "vendor/lib", "moved"] {
        assert!(!w.ws.join(d).join(".git").exists(), "{d}/.git survived");
        let o = host_git(&w.root, &w.ws.join(d), &["commit", "-q", "--allow-empty", "-m", "x"]);
        assert!(!o.status.success(), "{d}: still a repository for git");
    }
    assert!(!marker.exists(), "a hook planted during the session ran on the host");
}

#[test]
fn index_session_repositories_are_handled_call_by_call() {
    index_session(World::new());
}

#[test]
fn index_session_repositories_are_handled_call_by_call_unprivileged() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let w = World::unprivileged();
    let probe = w.run(&["--version"]);
    if !common::require(
        "zot binary readable by uid 65534",
        probe.status.success(),
        &text(&probe.stderr),
    ) {
        return;
    }
    index_session(w);
}
