//! The interactive `zot run` on a real pseudo-terminal: the line editor
//! (typing, history, multi-line, the pre-filled default prompt, Ctrl-C,
//! Ctrl-D), slash commands that never reach the model, sessions (pick,
//! fork, tree), Ctrl-C cancelling a turn, colour on and off.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::fake_llm::{FakeServer, Reply};
use common::pty::{has_sgr, Pty, ALT_ENTER, CTRL_C, CTRL_D, UP};
use common::run::{s, text, World};
use serde_json::{json, Value};

/// `zot run AGENT -y` (plus `extra`) on a pty; TERM set so the editor and
/// colours may be used.
fn repl(w: &World, agent: &Path, extra: &[&str], env: &[(&str, &str)]) -> Pty {
    let mut args = vec!["run", s(agent), "-y"];
    args.extend_from_slice(extra);
    let mut c: Command = w.cmd(&args);
    c.env("TERM", "xterm-256color");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut p = Pty::spawn(c);
    p.expect("Ctrl-D quits");
    p
}

fn reader(w: &World, name: &str, entry: Value) -> std::path::PathBuf {
    w.agent(
        name,
        json!({"permissions": {"fs": {"read": ["${workspace}"]}}, "entry": entry}),
    )
}

fn session_files(w: &World, agent: &str) -> Vec<std::path::PathBuf> {
    let dir = w.zot_home.join("sessions/agents").join(agent);
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn records(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn typing_history_multiline_and_ctrl_d() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let agent = reader(
        &w,
        "typist",
        json!({"greeting": "Hi, I read files.", "default_prompt": "say hi"}),
    );
    let mut p = repl(&w, &agent, &[], &[]);
    assert!(
        p.transcript.contains("Hi, I read files."),
        "{}",
        p.transcript
    );
    // default_prompt is in the editor, editable, not sent: add to it.
    p.expect("say hi");
    p.line(" there");
    p.expect("echo: say hi there");
    // A line, then Up recalls it.
    p.line("first line");
    p.expect("echo: first line");
    p.send(UP);
    p.expect("first line");
    p.line("");
    p.expect("echo: first line");
    // Multi-line: a trailing backslash, and Alt-Enter.
    p.line("one\\");
    p.line("two");
    p.expect("echo: one\r\ntwo");
    // Keys typed before the editor reads are the terminal's (cooked mode).
    p.at_prompt("typist> ", "alpha");
    p.send(ALT_ENTER);
    p.line("beta");
    p.expect("echo: alpha\r\nbeta");
    // Ctrl-C clears the line: nothing of it is sent.
    p.at_prompt("typist> ", "garbage");
    p.expect("garbage");
    p.send(CTRL_C);
    p.expect("typist> ");
    p.line("clean");
    p.expect("echo: clean");
    // Ctrl-D at an empty prompt ends the run with 0.
    p.at_prompt("typist> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    assert!(!p.transcript.contains("echo: garbage"), "{}", p.transcript);
    // The history is the agent's, private, and there on the next run.
    let hist = w.zot_home.join("agents/typist/history");
    assert_eq!(
        std::fs::metadata(&hist).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let saved = std::fs::read_to_string(&hist).unwrap();
    assert!(
        saved.contains("first line") && !saved.contains("garbage"),
        "{saved}"
    );
    let mut p = repl(&w, &agent, &[], &[]);
    p.expect("say hi");
    // Clear the pre-filled text, then recall the last line of the last run.
    p.send("\x15");
    p.send(UP);
    p.expect("clean");
    p.line("");
    p.expect("echo: clean");
    p.line("/exit");
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
}

#[test]
fn slash_commands_are_never_sent_to_the_model() {
    let w = World::new();
    let agent = reader(&w, "commander", json!({}));
    let mut p = repl(&w, &agent, &[], &[]);
    p.line("/help");
    p.expect("Commands (never sent to the model)");
    p.expect("/session fork|tree");
    p.line("/usage");
    p.expect("input tokens");
    p.line("/model");
    p.expect("model: sim from sim");
    p.line("/model no-such-model");
    p.expect("no-such-model");
    p.line("/hlep");
    p.expect("unknown command /hlep; did you mean /help?");
    p.line("/frobnicate now");
    p.expect("unknown command /frobnicate");
    // A path is a prompt, and // sends a leading slash.
    p.line("/etc/hosts is odd");
    p.expect("echo: /etc/hosts is odd");
    p.line("//help");
    p.expect("echo: /help");
    p.line("/quit");
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    let t = &p.transcript;
    for word in ["echo: /hlep", "echo: /frob", "echo: /usage", "echo: /model"] {
        assert!(!t.contains(word), "{word} reached the model:\n{t}");
    }
    // The session holds only what went to the model.
    let files = session_files(&w, "commander");
    assert_eq!(files.len(), 1);
    let users: Vec<String> = records(&files[0])
        .iter()
        .filter(|r| r["type"] == "message" && r["message"]["role"] == "user")
        .map(|r| r["message"]["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["/etc/hosts is odd", "/help"]);
}

#[test]
fn sessions_pick_fork_tree_and_clear() {
    let w = World::new();
    let agent = reader(&w, "sessioner", json!({}));
    let mut p = repl(&w, &agent, &[], &[]);
    p.line("in the first session");
    p.expect("echo: in the first session");
    p.line("/session fork");
    p.expect("forked session ");
    p.expect("continuing in ");
    p.line("only in the fork");
    p.expect("echo: only in the fork");
    // (The tree's branches are not ASCII: rexpect reads bytes as chars.)
    p.line("/session tree");
    p.expect("2 prompts");
    p.expect("(current)");
    p.line("/clear");
    p.expect("new session ");
    p.line("/usage");
    p.expect("0 input tokens");
    // Pick the first session (the oldest: last in the most-recent-first list).
    p.line("/sessions");
    p.expect("resume which?");
    p.line("3");
    p.expect("resumed session ");
    p.line("back in the first");
    p.expect("echo: back in the first");
    p.at_prompt("sessioner> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);

    let files = session_files(&w, "sessioner");
    assert_eq!(files.len(), 3, "{files:?}");
    let all: Vec<Vec<Value>> = files.iter().map(|f| records(f)).collect();
    let users = |recs: &[Value]| -> Vec<String> {
        recs.iter()
            .filter(|r| r["type"] == "message" && r["message"]["role"] == "user")
            .map(|r| r["message"]["content"].as_str().unwrap().to_string())
            .collect()
    };
    let original = all
        .iter()
        .find(|r| r[0].get("parent").is_none() && !users(r).is_empty())
        .expect("the original session");
    assert_eq!(
        users(original),
        ["in the first session", "back in the first"]
    );
    let fork = all
        .iter()
        .find(|r| r[0].get("parent").is_some())
        .expect("the fork");
    assert_eq!(fork[0]["parent"], original[0]["id"]);
    assert_eq!(users(fork), ["in the first session", "only in the fork"]);
    let cleared = all.iter().find(|r| users(r).is_empty()).expect("/clear's");
    assert_eq!(cleared.len(), 1, "only a header: {cleared:?}");
}

#[test]
fn ctrl_c_cancels_a_model_request_and_the_prompt_comes_back() {
    let w = World::new();
    let agent = reader(&w, "waiter", json!({}));
    // The first request never gets an answer; the second does.
    let srv = FakeServer::start(|_, i| {
        if i == 0 {
            Reply::silent()
        } else {
            Reply::sse(common::fake_llm::openai::text(&["after ", "cancel"]))
        }
    });
    let v1 = srv.v1();
    let mut p = repl(
        &w,
        &agent,
        &["--model", "gpt-5"],
        &[("OPENAI_API_KEY", "sk-test-0000"), ("OPENAI_BASE_URL", &v1)],
    );
    p.line("wait forever");
    let t0 = Instant::now();
    while srv.requests().is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(10), "no request");
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    p.send(CTRL_C);
    p.expect("cancelled");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    p.expect("waiter> ");
    p.line("again");
    p.expect("after cancel");
    p.at_prompt("waiter> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    // The session says where the turn stopped, and goes on consistently.
    let files = session_files(&w, "waiter");
    let recs = records(&files[0]);
    let kinds: Vec<String> = recs
        .iter()
        .map(|r| match r["type"].as_str().unwrap() {
            "message" => r["message"]["role"].as_str().unwrap().to_string(),
            t => t.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        ["header", "user", "cancelled", "user", "assistant", "usage"],
        "{recs:?}"
    );
}

#[test]
fn ctrl_c_stops_a_running_command_in_the_sandbox() {
    let w = World::new();
    if !common::run::sandbox_works(&w) {
        return;
    }
    let agent = w.agent(
        "napper",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "allowlist", "allow": ["sleep"]}}}),
    );
    let script = w.script(
        "nap.json",
        json!([{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 42.3"}}]}, {"text": "unreachable"}, {"text": "after the nap"}]),
    );
    let mut p = repl(&w, &agent, &["--sim-script", s(&script)], &[]);
    p.line("nap");
    let t0 = Instant::now();
    while common::processes(&["sleep", "42.3"]).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    p.send(CTRL_C);
    p.expect("cancelled");
    // The command got TERM (then KILL): it is gone, and so is the turn.
    while !common::processes(&["sleep", "42.3"]).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(5), "the command outlived the cancel");
        std::thread::sleep(Duration::from_millis(20));
    }
    p.at_prompt("napper> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
}

#[test]
fn colour_follows_no_color_and_the_terminal() {
    let w = World::new();
    let agent = reader(&w, "painter", json!({}));
    // On a terminal: the prompt and zot's notes are coloured.
    let mut p = repl(&w, &agent, &[], &[]);
    p.line("/frob");
    p.expect("unknown command");
    p.at_prompt("painter> ", CTRL_D);
    p.finish();
    assert!(has_sgr(&p.transcript), "{:?}", p.transcript);
    // NO_COLOR: none at all, on the same terminal.
    let mut p = repl(&w, &agent, &[], &[("NO_COLOR", "1")]);
    p.line("/frob");
    p.expect("unknown command");
    p.at_prompt("painter> ", CTRL_D);
    p.finish();
    assert!(!has_sgr(&p.transcript), "{:?}", p.transcript);
    // Not a terminal: no colour; CLICOLOR_FORCE=1 forces it; NO_COLOR wins
    // (on the warning that there is no session to continue).
    let agent = reader(&w, "painter2", json!({}));
    let args = ["run", s(&agent), "-y", "--print", "--continue", "hi"];
    let n = std::cell::Cell::new(0);
    let warn = |env: &[(&str, &str)]| {
        let mut c = w.cmd(&args);
        // A new zot home each time: nothing to continue.
        n.set(n.get() + 1);
        c.env("TERM", "xterm-256color")
            .env("ZOT_HOME", w.root.join(format!("home-{}", n.get())));
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "echo: hi\n");
        text(&out.stderr)
    };
    let plain = warn(&[]);
    assert!(
        plain.contains("zot: warning:") && !has_sgr(&plain),
        "{plain:?}"
    );
    let forced = warn(&[("CLICOLOR_FORCE", "1")]);
    assert!(has_sgr(&forced), "{forced:?}");
    let both = warn(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!has_sgr(&both), "{both:?}");
}

#[test]
fn model_text_cannot_send_escape_sequences_to_the_terminal() {
    let w = World::new();
    let agent = reader(&w, "escaper", json!({}));
    let script = w.script(
        "evil.json",
        json!([{"text": "title\u{1b}]0;pwned\u{7}clip\u{1b}]52;c;ZXZpbA==\u{7} done"}]),
    );
    let mut p = repl(
        &w,
        &agent,
        &["--sim-script", s(&script)],
        &[("NO_COLOR", "1")],
    );
    p.line("go");
    p.expect("done");
    p.at_prompt("escaper> ", CTRL_D);
    p.finish();
    assert!(
        p.transcript.contains("title^[]0;pwned^Gclip"),
        "{:?}",
        p.transcript
    );
    assert!(!p.transcript.contains("\u{1b}]"), "{:?}", p.transcript);
}

#[test]
fn an_agent_toml_fork_keeps_its_files_and_clear_starts_fresh() {
    let w = World::new();
    let agent = common::run::fixture("toml-agent");
    let mut p = repl(&w, &agent, &[], &[("NO_COLOR", "1")]);
    p.line("write: drafts/mine.md\\");
    p.line("written in the parent");
    p.expect("write: wrote ");
    p.line("/session fork");
    p.expect("continuing in ");
    p.line("read: drafts/mine.md");
    p.expect("read: written in the parent");
    p.line("/clear");
    p.expect("new session ");
    p.line("read: drafts/mine.md");
    p.expect("read error: ");
    // The seeded files are there in the new session's tree.
    p.line("read: notes.md");
    p.expect("read: seeded notes, read-only");
    p.at_prompt("toml-notes> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    // Three sessions, each with its own tree.
    let trees: Vec<_> = session_files(&w, "toml-notes")
        .iter()
        .map(|f| f.with_extension("d").join("files/drafts/mine.md"))
        .collect();
    assert_eq!(trees.len(), 3);
    assert_eq!(trees.iter().filter(|t| t.is_file()).count(), 2, "{trees:?}");
}
