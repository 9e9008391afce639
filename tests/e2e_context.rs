//! End-to-end tests of long sessions against fake model servers with a
//! small context window, in both wire formats: compaction before a request
//! would not fit, recovery when the server refuses a request as too long
//! (the window unknown or claimed larger than it is), the summary request
//! (no tools) replacing the history, a fact of the first turn surviving
//! compactions, a 2 MB tool output, a compacted session resumed, Ctrl-C
//! during a compaction, and parallel read calls.
//!
//! The fake model reads twelve files one `cat` at a time (the next one
//! after the highest `cat fNN.txt` its request mentions), then answers with
//! the secret its request holds. It summarizes a conversation by listing
//! the files read and every secret in the request. It measures a request
//! as its body's bytes / 4.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::fake_llm::{anthropic, openai, FakeServer, Reply};
use common::run::{events, fixture, of_type, s, sandbox_works, text, World};
use serde_json::{json, Value};

const WINDOW: u64 = 8000;
const SECRET: &str = "SECRET-5e1f0a2b";
const FILES: usize = 12;
/// The 2 MB file.
const BIG: usize = 6;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Wire {
    OpenAi,
    Anthropic,
}

/// How the server answers a request over its window.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Over {
    /// Answers anyway (the test asserts none was sent).
    Record,
    /// The wire format's own "too long" error (HTTP 400).
    Refuse,
    /// HTTP 413, a proxy's answer with no figure.
    TooLarge,
}

#[derive(Default)]
struct Seen {
    /// (request index, tokens) of every request over the window.
    over: Vec<(usize, u64)>,
    refused: usize,
    /// Indexes of summary requests (no tools offered).
    summaries: Vec<usize>,
}

fn tokens_of(body: &[u8]) -> u64 {
    body.len() as u64 / 4
}

fn highest_cat(raw: &str) -> usize {
    raw.match_indices("cat f")
        .filter_map(|(i, _)| {
            let rest = raw.get(i + 5..i + 11)?;
            rest.ends_with(".txt")
                .then(|| rest[..2].parse::<usize>().ok())
                .flatten()
        })
        .max()
        .unwrap_or(0)
}

fn secrets(raw: &str) -> Vec<String> {
    let mut v: Vec<String> = raw
        .match_indices("SECRET-")
        .filter_map(|(i, _)| {
            let hex = raw.get(i + 7..i + 15)?;
            hex.bytes()
                .all(|b| b.is_ascii_hexdigit())
                .then(|| format!("SECRET-{hex}"))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn text_reply(wire: Wire, t: &str, input: u64) -> Reply {
    match wire {
        Wire::OpenAi => Reply::sse(openai::sse(&[
            openai::chunk(json!({"role": "assistant", "content": ""}), None),
            openai::chunk(json!({"content": t}), None),
            openai::chunk(json!({}), Some("stop")),
            openai::usage(input, 40),
        ])),
        Wire::Anthropic => {
            let mut e = vec![anthropic::start(input)];
            e.extend(anthropic::text_block(0, &[t]));
            e.extend(anthropic::stop("end_turn", 40));
            Reply::sse(anthropic::sse(&e))
        }
    }
}

fn calls_reply(wire: Wire, calls: &[(&str, &str, Value)], input: u64) -> Reply {
    match wire {
        Wire::OpenAi => {
            let mut c = vec![openai::chunk(
                json!({"role": "assistant", "content": null}),
                None,
            )];
            for (i, (id, name, args)) in calls.iter().enumerate() {
                c.push(openai::chunk(
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}),
                    None,
                ));
            }
            c.push(openai::chunk(json!({}), Some("tool_calls")));
            c.push(openai::usage(input, 20));
            Reply::sse(openai::sse(&c))
        }
        Wire::Anthropic => {
            let mut e = vec![anthropic::start(input)];
            for (i, (id, name, args)) in calls.iter().enumerate() {
                e.extend(anthropic::tool_block(i, id, name, args));
            }
            e.extend(anthropic::stop("tool_use", 20));
            Reply::sse(anthropic::sse(&e))
        }
    }
}

fn refusal(wire: Wire, over: Over, tokens: u64) -> Reply {
    match (over, wire) {
        (Over::TooLarge, _) => Reply::json(
            413,
            &json!({"error": {"message": "request entity too large", "type": "proxy"}}),
        ),
        (_, Wire::OpenAi) => Reply::json(
            400,
            &json!({"error": {"message": format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        ),
        (_, Wire::Anthropic) => Reply::json(
            400,
            &json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {WINDOW} maximum")}}),
        ),
    }
}

fn has_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// How the fake model answers summary requests.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Summ {
    Answer,
    /// Never answers the first one.
    Hang,
    /// Answers with a tool call and no text.
    ToolCall,
}

/// The fake model of the twelve-file task.
fn reader_server(wire: Wire, over: Over, summ: Summ) -> (FakeServer, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let st = seen.clone();
    let srv = FakeServer::start(move |req, i| {
        let tokens = tokens_of(&req.body);
        let raw = String::from_utf8_lossy(&req.body).into_owned();
        let body = req.json();
        let mut st = st.lock().unwrap();
        if tokens > WINDOW {
            if over != Over::Record {
                st.refused += 1;
                return refusal(wire, over, tokens);
            }
            st.over.push((i, tokens));
        }
        if !has_tools(&body) {
            st.summaries.push(i);
            if summ == Summ::Hang && st.summaries.len() == 1 {
                return Reply::silent();
            }
            if summ == Summ::ToolCall {
                return calls_reply(wire, &[("c", "bash", json!({"command": "true"}))], tokens);
            }
            let n = highest_cat(&raw);
            let files: Vec<String> = (1..=n).map(|k| format!("`cat f{k:02}.txt`")).collect();
            let summary = format!(
                "## Goal\nRead the twelve files one at a time, then say the secret.\n## Constraints\n- one cat at a time\n## Progress\n- ran {}\n## Decisions\n- none\n## Next steps\n- read the next file\n## Critical context\n- secrets: {}",
                files.join(", "),
                secrets(&raw).join(", ")
            );
            return text_reply(wire, &summary, tokens);
        }
        let n = highest_cat(&raw);
        if n < FILES {
            let id = format!("call_{:02}_{i}", n + 1);
            let cmd = format!("cat f{:02}.txt", n + 1);
            return calls_reply(wire, &[(&id, "bash", json!({"command": cmd}))], tokens);
        }
        let found = secrets(&raw);
        let answer = match found.first() {
            Some(sec) => format!("All {FILES} files read. The secret is {sec}."),
            None => "All files read; I found no secret.".into(),
        };
        text_reply(wire, &answer, tokens)
    });
    (srv, seen)
}

/// A file of about 1,750 tokens (7,000 bytes); the first holds the
/// secret, file BIG is 2 MB.
fn write_files(ws: &Path) {
    for n in 1..=FILES {
        let mut t = String::new();
        let size = if n == BIG { 2 << 20 } else { 7000 };
        let mut k = 0;
        while t.len() < size {
            k += 1;
            t.push_str(&format!(
                "f{n:02} line {k}: the quick brown fox jumps over the lazy dog, again and again.\n"
            ));
            if n == 1 && k == 40 {
                t.push_str(&format!("Remember this: the secret is {SECRET}.\n"));
            }
        }
        std::fs::write(ws.join(format!("f{n:02}.txt")), t).unwrap();
    }
}

fn config(w: &World, wire: Wire, window: Option<u64>) {
    std::fs::create_dir_all(&w.zot_home).unwrap();
    let provider = match wire {
        Wire::OpenAi => "openai",
        Wire::Anthropic => "anthropic",
    };
    let mut c = format!("[[models]]\nid = \"small\"\nprovider = \"{provider}\"\n");
    if let Some(win) = window {
        c.push_str(&format!("context_window = {win}\n"));
    }
    std::fs::write(w.zot_home.join("config.toml"), c).unwrap();
}

fn cmd(w: &World, wire: Wire, srv: &FakeServer, args: &[&str]) -> Command {
    let mut c = w.cmd(args);
    match wire {
        Wire::OpenAi => c
            .env("OPENAI_API_KEY", "sk-test-0000000000000000")
            .env("OPENAI_BASE_URL", srv.v1()),
        Wire::Anthropic => c
            .env("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")
            .env("ANTHROPIC_BASE_URL", &srv.base),
    };
    c
}

const PROMPT: &str = "Read f01.txt through f12.txt, one file per command, then tell me the secret.";

fn run_reader(w: &World, wire: Wire, srv: &FakeServer, extra: &[&str]) -> Output {
    let agent = fixture("readonly-bash");
    let mut args = vec!["run", s(&agent), "-y", "--json", "--model", "small"];
    args.extend_from_slice(extra);
    args.push(PROMPT);
    cmd(w, wire, srv, &args).output().unwrap()
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(session_files(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

fn records(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The checks every finished twelve-file run must pass.
fn assert_finished(out: &Output, srv: &FakeServer) -> Vec<Value> {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(out);
    let end = of_type(&ev, "turn_end");
    let answer = end.last().unwrap()["text"].as_str().unwrap();
    assert!(answer.contains(SECRET), "{answer}");
    // All twelve files read, one cat each, in order.
    let cats: Vec<String> = of_type(&ev, "tool_call")
        .iter()
        .map(|c| c["arguments"]["command"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = (1..=FILES).map(|n| format!("cat f{n:02}.txt")).collect();
    assert_eq!(cats, want);
    let results = of_type(&ev, "tool_result");
    assert!(results.iter().all(|r| r["exit_code"] == 0), "{results:?}");
    // The secret came through a summary: the final request no longer
    // holds the first file.
    let reqs = srv.requests();
    let last = String::from_utf8_lossy(&reqs.last().unwrap().body).into_owned();
    assert!(
        !last.contains("f01 line 40:"),
        "the first file was never compacted"
    );
    ev
}

fn summary_requests(srv: &FakeServer) -> Vec<Value> {
    srv.requests()
        .iter()
        .map(|r| r.json())
        .filter(|b| !has_tools(b))
        .collect()
}

/// The window known: compaction keeps every request within it.
fn window_known(wire: Wire) {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, wire, Some(WINDOW));
    let (srv, seen) = reader_server(wire, Over::Record, Summ::Answer);
    let out = run_reader(&w, wire, &srv, &[]);
    let ev = assert_finished(&out, &srv);
    let seen = seen.lock().unwrap();
    assert!(
        seen.over.is_empty(),
        "requests over the window: {:?}",
        seen.over
    );
    let largest = srv.requests().iter().map(|r| tokens_of(&r.body)).max();
    eprintln!(
        "{wire:?}: {} requests, the largest {largest:?} tokens, {} summary requests",
        srv.requests().len(),
        seen.summaries.len()
    );
    // A fact of the first turn survived at least two compactions.
    let comp = of_type(&ev, "compaction");
    assert!(comp.len() >= 2, "{comp:?}");
    assert!(comp.iter().all(|c| c["reason"] == "threshold"), "{comp:?}");
    assert!(comp
        .iter()
        .all(|c| c["tokens_after"].as_u64() < c["tokens_before"].as_u64()));
    // Summary requests offer no tools and carry the conversation as text.
    let sums = summary_requests(&srv);
    assert!(sums.len() >= comp.len());
    for b in &sums {
        assert!(b.get("tools").is_none(), "{b}");
        let raw = b.to_string();
        assert!(raw.contains("Critical context"), "{raw:.300}");
    }
    // After a compaction the history is: system, the summary, recent turns
    // (starting at an assistant message or a user one, never a result).
    let reqs = srv.requests();
    let after = &reqs[seen.summaries.last().unwrap() + 1];
    let b = after.json();
    let (msgs, first) = match wire {
        Wire::OpenAi => {
            assert_eq!(b["messages"][0]["role"], "system");
            (b["messages"].as_array().unwrap().clone(), 1)
        }
        Wire::Anthropic => (b["messages"].as_array().unwrap().clone(), 0),
    };
    let summary = msgs[first].to_string();
    assert!(
        summary.contains("the earlier conversation was compacted") && summary.contains(SECRET),
        "{summary:.400}"
    );
    assert!(
        !summary.contains("f01 line 40:"),
        "the summary message is not the summary"
    );
    if wire == Wire::OpenAi {
        assert_ne!(msgs[first + 1]["role"], "tool", "{:?}", msgs[first + 1]);
    } else {
        // Prompt caching: the summary is a cache breakpoint.
        assert!(summary.contains("cache_control"), "{summary:.400}");
    }
    // The 2 MB output: head and tail within the budget, the whole of it
    // saved (0600) in the session directory, recorded in the session.
    let big = of_type(&ev, "tool_result")[BIG - 1];
    let content = big["content"].as_str().unwrap();
    assert!(content.len() < 10_000, "{}", content.len());
    assert!(content.contains(&format!("f{BIG:02} line 1:")) && content.contains("tokens) omitted"));
    let full = PathBuf::from(big["full_output"].as_str().unwrap());
    assert!(content.contains(&full.display().to_string()));
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(&full).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    assert!(m.len() >= 2 << 20);
    let sess = session_files(&w.zot_home.join("sessions"));
    assert_eq!(sess.len(), 1);
    assert!(
        full.starts_with(sess[0].with_extension("d")),
        "{}",
        full.display()
    );
    let recs = records(&sess[0]);
    assert!(recs.iter().any(|r| r["type"] == "output"));
    let comps: Vec<&Value> = recs.iter().filter(|r| r["type"] == "compaction").collect();
    assert_eq!(comps.len(), comp.len());
    // Usage events carry the context accounting.
    let u = of_type(&ev, "usage");
    assert!(u
        .iter()
        .all(|u| u["context_window"] == WINDOW && u["context_tokens"].as_u64() < Some(WINDOW)));
}

#[test]
fn openai_window_known_compacts_before_it_is_full() {
    window_known(Wire::OpenAi);
}

#[test]
fn anthropic_window_known_compacts_before_it_is_full() {
    window_known(Wire::Anthropic);
}

/// The window claimed larger than it is (or unknown): the server's
/// refusals are recovered by compacting and sending again.
fn refused(wire: Wire, window: Option<u64>, over: Over) {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, wire, window);
    let (srv, seen) = reader_server(wire, over, Summ::Answer);
    let out = run_reader(&w, wire, &srv, &["--no-session"]);
    let ev = assert_finished(&out, &srv);
    let seen = seen.lock().unwrap();
    assert!(seen.refused >= 1, "the server never refused");
    let comp = of_type(&ev, "compaction");
    assert!(comp.iter().any(|c| c["reason"] == "overflow"), "{comp:?}");
    // zot learnt the window: few refusals, not one a step.
    assert!(seen.refused <= 4, "{} refusals", seen.refused);
    eprintln!(
        "{wire:?} {window:?} {over:?}: {} requests, {} refused, {} compactions",
        srv.requests().len(),
        seen.refused,
        comp.len()
    );
}

#[test]
fn openai_window_claimed_too_large_recovers_from_refusals() {
    refused(Wire::OpenAi, Some(32_000), Over::Refuse);
}

#[test]
fn anthropic_window_claimed_too_large_recovers_from_refusals() {
    refused(Wire::Anthropic, Some(32_000), Over::Refuse);
}

#[test]
fn openai_window_unknown_recovers_from_413() {
    refused(Wire::OpenAi, None, Over::TooLarge);
}

#[test]
fn anthropic_window_unknown_recovers_from_refusals() {
    refused(Wire::Anthropic, None, Over::Refuse);
}

/// A refusal that compaction cannot fix ends the run with a clear error.
#[test]
fn a_refusal_with_nothing_to_compact_is_a_clear_error() {
    let w = World::new();
    config(&w, Wire::OpenAi, None);
    let srv = FakeServer::start(|req, _| refusal(Wire::OpenAi, Over::Refuse, tokens_of(&req.body)));
    let agent = fixture("readonly-bash");
    let out = cmd(
        &w,
        Wire::OpenAi,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--no-session",
            "--model",
            "small",
            "hi",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let ev = events(&out);
    let e = of_type(&ev, "error");
    let m = e[0]["message"].as_str().unwrap();
    assert!(
        m.contains("longer than the model's context window") && m.contains("no earlier turn"),
        "{m}"
    );
}

/// A compacted session resumed: its history starts at the summary.
#[test]
fn a_compacted_session_resumes_from_its_summary() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, Wire::OpenAi, Some(WINDOW));
    let (srv, _) = reader_server(Wire::OpenAi, Over::Record, Summ::Answer);
    let out = run_reader(&w, Wire::OpenAi, &srv, &[]);
    assert_finished(&out, &srv);
    let sess = session_files(&w.zot_home.join("sessions"));
    let id = sess[0].file_stem().unwrap().to_str().unwrap().to_string();
    let srv2 = FakeServer::start(|req, _| {
        let raw = String::from_utf8_lossy(&req.body).into_owned();
        let found = secrets(&raw);
        text_reply(
            Wire::OpenAi,
            &format!(
                "It was {}.",
                found.first().map_or("unknown", |s| s.as_str())
            ),
            tokens_of(&req.body),
        )
    });
    let agent = fixture("readonly-bash");
    let out = cmd(
        &w,
        Wire::OpenAi,
        &srv2,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "small",
            "--resume",
            &id,
            "What was the secret?",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    assert!(of_type(&ev, "turn_end")[0]["text"]
        .as_str()
        .unwrap()
        .contains(SECRET));
    let b = srv2.requests()[0].json();
    let m = b["messages"].as_array().unwrap();
    assert!(
        m[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("[zot: the earlier conversation was compacted"),
        "{}",
        m[1]
    );
    let raw = b.to_string();
    assert!(!raw.contains("f01 line 40:"));
    assert_eq!(m.last().unwrap()["content"], "What was the secret?");
    assert!(tokens_of(&srv2.requests()[0].body) < WINDOW);
}

/// Ctrl-C (SIGINT) during a compaction: the run stops, and the session is
/// as it was before the compaction (resumable, uncompacted).
#[test]
fn an_interrupt_during_compaction_leaves_the_session_as_it_was() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, Wire::Anthropic, Some(WINDOW));
    let (srv, seen) = reader_server(Wire::Anthropic, Over::Record, Summ::Hang);
    let agent = fixture("readonly-bash");
    let mut c = cmd(
        &w,
        Wire::Anthropic,
        &srv,
        &["run", s(&agent), "-y", "--json", "--model", "small", PROMPT],
    );
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let t0 = Instant::now();
    while seen.lock().unwrap().summaries.is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no summary request");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sess = session_files(&w.zot_home.join("sessions"));
    let before: Vec<Value> = records(&sess[0]);
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let after = records(&sess[0]);
    assert!(after.iter().all(|r| r["type"] != "compaction"));
    let msgs = |v: &[Value]| v.iter().filter(|r| r["type"] == "message").count();
    assert_eq!(msgs(&after), msgs(&before));
    // Resumed, the conversation is the uncompacted one: the first file is
    // still in it (the next request is a summary request again).
    let (srv2, _) = reader_server(Wire::Anthropic, Over::Record, Summ::Answer);
    let id = sess[0].file_stem().unwrap().to_str().unwrap().to_string();
    let out = cmd(
        &w,
        Wire::Anthropic,
        &srv2,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "small",
            "--resume",
            &id,
            "go on",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = String::from_utf8_lossy(&srv2.requests()[0].body).into_owned();
    assert!(first.contains("f01 line 40:"), "{first:.300}");
    assert!(of_type(&events(&out), "turn_end")[0]["text"]
        .as_str()
        .unwrap()
        .contains(SECRET));
}

/// Several read-only calls in one step run concurrently; their results go
/// back in the order the model gave them.
fn parallel_reads(wire: Wire) {
    let w = World::new();
    write_files(&w.ws);
    config(&w, wire, Some(WINDOW));
    let calls = vec![
        ("r1", "read", json!({"path": "f02.txt", "limit": 1})),
        (
            "r2",
            "grep",
            json!({"pattern": "secret is", "path": "f01.txt"}),
        ),
        ("r3", "read", json!({"path": "f03.txt", "limit": 1})),
        ("r4", "glob", json!({"pattern": "f1*.txt"})),
    ];
    let srv = FakeServer::script(vec![
        calls_reply(wire, &calls, 100),
        text_reply(wire, "done", 200),
    ]);
    let agent = fixture("readonly-bash");
    let out = cmd(
        &w,
        wire,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--no-session",
            "--model",
            "small",
            "look",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let ids: Vec<&str> = of_type(&ev, "tool_result")
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2", "r3", "r4"]);
    let r = of_type(&ev, "tool_result");
    assert!(r[0]["content"].as_str().unwrap().starts_with("f02 line 1:"));
    assert!(r[1]["content"].as_str().unwrap().contains(SECRET));
    assert!(r[2]["content"].as_str().unwrap().starts_with("f03 line 1:"));
    assert!(r[3]["content"].as_str().unwrap().contains("f12.txt"));
    let b = srv.requests()[1].json();
    let raw = b["messages"].to_string();
    let pos: Vec<usize> = ["f02 line 1:", SECRET, "f03 line 1:", "f12.txt"]
        .iter()
        .map(|k| raw.find(k).unwrap())
        .collect();
    assert!(pos.windows(2).all(|p| p[0] < p[1]), "{pos:?}");
}

#[test]
fn openai_parallel_read_calls() {
    parallel_reads(Wire::OpenAi);
}

#[test]
fn anthropic_parallel_read_calls() {
    parallel_reads(Wire::Anthropic);
}

/// `[context] auto_compact = false`: no compaction; the refusal is a
/// clear error naming the setting.
#[test]
fn auto_compact_off_fails_clearly() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, Wire::OpenAi, Some(32_000));
    let mut c = std::fs::read_to_string(w.zot_home.join("config.toml")).unwrap();
    c.push_str("[context]\nauto_compact = false\n");
    std::fs::write(w.zot_home.join("config.toml"), c).unwrap();
    let (srv, _) = reader_server(Wire::OpenAi, Over::Refuse, Summ::Answer);
    let out = run_reader(&w, Wire::OpenAi, &srv, &["--no-session"]);
    assert_eq!(out.status.code(), Some(1));
    let ev = events(&out);
    assert!(of_type(&ev, "compaction").is_empty());
    let m = of_type(&ev, "error")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.contains("auto_compact = false"), "{m}");
}

/// `/usage` shows how full the window is; `/compact INSTRUCTIONS` compacts
/// on demand (the instructions reach the summary request); Ctrl-C during
/// `/compact` cancels it and leaves the conversation as it was.
#[test]
fn repl_usage_and_compact() {
    use common::pty::{Pty, CTRL_C, CTRL_D};
    let w = World::new();
    config(&w, Wire::OpenAi, Some(WINDOW));
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let h = hang.clone();
    let srv = FakeServer::start(move |req, _| {
        let body = req.json();
        let t = tokens_of(&req.body);
        if !has_tools(&body) {
            if h.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return Reply::silent();
            }
            return text_reply(
                Wire::OpenAi,
                "## Goal\nchat\n## Critical context\n- the word is teal",
                t,
            );
        }
        text_reply(
            Wire::OpenAi,
            &format!(
                "noted ({} messages)",
                body["messages"].as_array().unwrap().len()
            ),
            t,
        )
    });
    let agent = fixture("readonly-bash");
    let mut c = cmd(
        &w,
        Wire::OpenAi,
        &srv,
        &["run", s(&agent), "-y", "--model", "small"],
    );
    c.env("TERM", "xterm-256color");
    let mut p = Pty::spawn(c);
    p.expect("Ctrl-D quits");
    p.line("remember the word teal");
    p.expect("noted (2 messages)");
    p.line("and the number 7");
    p.expect("noted (4 messages)");
    p.line("/usage");
    p.expect("context: about ");
    p.expect(&format!(" of {WINDOW} tokens"));
    // Ctrl-C while the summary request hangs.
    p.line("/compact");
    let t0 = Instant::now();
    while srv.requests().len() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(10), "no summary request");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    p.send(CTRL_C);
    p.expect("compaction cancelled; the conversation is unchanged");
    p.line("/compact keep the word");
    p.expect("compacted the conversation: about ");
    p.line("go on");
    // Everything fits keep_recent_tokens but the first prompt: the system
    // prompt, the summary, the first answer, the last turn, the new prompt.
    p.expect("noted (6 messages)");
    p.line("/usage");
    p.expect("compacted earlier");
    p.send(CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0));
    let reqs = srv.requests();
    let sums: Vec<Value> = reqs
        .iter()
        .map(|r| r.json())
        .filter(|b| !has_tools(b))
        .collect();
    assert_eq!(sums.len(), 2);
    let last = sums[1].to_string();
    assert!(
        last.contains("keep the word") && last.contains("remember the word teal"),
        "{last:.500}"
    );
    assert!(sums[1].get("tools").is_none());
    let after = reqs.last().unwrap().json();
    let m = after["messages"].as_array().unwrap();
    assert!(m[1]["content"]
        .as_str()
        .unwrap()
        .contains("the word is teal"));
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[3]["content"], "and the number 7");
}

/// `--print`: the answer on stdout, a line per compaction on stderr.
#[test]
fn print_mode_reports_compactions_on_stderr() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, Wire::Anthropic, Some(WINDOW));
    let (srv, _) = reader_server(Wire::Anthropic, Over::Record, Summ::Answer);
    let agent = fixture("readonly-bash");
    let out = cmd(
        &w,
        Wire::Anthropic,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--no-session",
            "--model",
            "small",
            PROMPT,
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(SECRET));
    let err = text(&out.stderr);
    assert!(
        err.lines()
            .filter(|l| l.starts_with("zot: compacted the conversation (threshold): about "))
            .count()
            >= 2,
        "{err}"
    );
}

/// A model that answers the summary request with a tool call and no text:
/// an excerpt stands in for the summary and the run goes on.
#[test]
fn a_summary_request_answered_without_text_still_compacts() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    write_files(&w.ws);
    config(&w, Wire::OpenAi, Some(WINDOW));
    let (srv, seen) = reader_server(Wire::OpenAi, Over::Record, Summ::ToolCall);
    let out = run_reader(&w, Wire::OpenAi, &srv, &["--no-session"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "tool_call").len(), FILES);
    assert!(of_type(&ev, "compaction").len() >= 2);
    assert!(seen.lock().unwrap().over.is_empty());
}
