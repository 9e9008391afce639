//! End-to-end tests of `zot run` against local fake model servers speaking
//! the OpenAI Chat Completions and Anthropic Messages wire formats: tool
//! loops through the sandbox, streaming split anywhere, retries, errors,
//! timeouts, cancellation, memory, keys, selection and the config file.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::fake_llm::{anthropic, openai, run_measured, FakeServer, Part, Reply};
use common::run::{events, fixture, of_type, s, sandbox_works, text, World};
use serde_json::{json, Value};

/// Key-shaped values: what a real key looks like, so a leak would show.
const OPENAI_KEY: &str =
    "sk-proj-Zq3vT8xK1mN4pR7sW0yB2cD5fG9hJ6kL3nP8qS1tV4wX7zA0bC3eF6gH9jK2mN5pQ8rS1tU4";
const ANTHROPIC_KEY: &str =
    "sk-ant-api03-Xy7Kp2Lm9Nq4Rs6Tv8Wx1Yz3Ab5Cd7Ef9Gh1Ij3Kl5Mn7Op9Qr1St3Uv5Wx7Yz9Ab1Cd3Ef5Gh7-Qw9ErAA";

fn openai_cmd(w: &World, srv: &FakeServer, args: &[&str]) -> Command {
    let mut c = w.cmd(args);
    c.env("OPENAI_API_KEY", OPENAI_KEY)
        .env("OPENAI_BASE_URL", srv.v1());
    c
}

fn anthropic_cmd(w: &World, srv: &FakeServer, args: &[&str]) -> Command {
    let mut c = w.cmd(args);
    c.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("ANTHROPIC_BASE_URL", &srv.base);
    c
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

fn ok_events(out: &Output) -> Vec<Value> {
    assert!(out.status.success(), "{}", text(&out.stderr));
    events(out)
}

fn config(w: &World, toml: &str) -> PathBuf {
    std::fs::create_dir_all(&w.zot_home).unwrap();
    let p = w.zot_home.join("config.toml");
    std::fs::write(&p, toml).unwrap();
    p
}

/// Every file under `dir`, concatenated (session files, side files).
fn all_files(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_files(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            out.push_str(&String::from_utf8_lossy(&b));
        }
    }
    out
}

/// The key, and a distinctive fragment of it, are absent from `hay`.
fn assert_no_key(hay: &str, key: &str, what: &str) {
    assert!(!hay.contains(key), "{what} contains the key");
    assert!(
        !hay.contains(&key[12..40]),
        "{what} contains a fragment of the key"
    );
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or(t["name"].as_str())
                        .unwrap()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

// ------------------------------------------------------------ tool loops

#[test]
fn openai_tool_loop_runs_bash_in_the_sandbox() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let srv = FakeServer::script(vec![
        Reply::sse(openai::tool_calls(&[(
            "call_1",
            "bash",
            json!({"command": "cat README.md"}),
        )])),
        Reply::sse(openai::text(&["The README says: ", "hello"])),
    ]);
    let agent = fixture("readonly-bash");
    let out = run(openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "gpt-5",
            "what is in the readme?",
        ],
    ));
    let ev = ok_events(&out);
    let r = of_type(&ev, "tool_result");
    assert_eq!(r.len(), 1, "{ev:?}");
    assert_eq!(r[0]["exit_code"], 0, "{}", r[0]);
    assert!(r[0]["content"]
        .as_str()
        .unwrap()
        .contains("hello from the workspace"));
    let end = of_type(&ev, "turn_end");
    assert_eq!(end[0]["text"], "The README says: hello");
    // Usage per response, per turn and per session.
    let usage: Vec<u64> = of_type(&ev, "usage")
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(usage, [30, 12]);
    assert_eq!(
        end[0]["usage"],
        json!({"input_tokens": 42, "output_tokens": 16})
    );
    let done = of_type(&ev, "done")[0];
    assert_eq!(
        (done["model"].as_str(), done["provider"].as_str()),
        (Some("gpt-5"), Some("openai"))
    );
    assert_eq!(done["usage"]["output_tokens"], 16);

    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    let b0 = reqs[0].json();
    assert_eq!(b0["model"], "gpt-5");
    assert_eq!(b0["stream"], true);
    assert_eq!(b0["stream_options"], json!({"include_usage": true}));
    assert!(b0.get("reasoning_effort").is_none());
    // No fs.write scope: no write/edit tools are offered.
    assert_eq!(tool_names(&b0), ["read", "glob", "grep", "bash", "skill"]);
    assert_eq!(b0["tools"][3]["type"], "function");
    assert_eq!(
        b0["tools"][3]["function"]["parameters"]["required"],
        json!(["command"])
    );
    assert_eq!(b0["messages"][0]["role"], "system");
    assert_eq!(
        b0["messages"][1],
        json!({"role": "user", "content": "what is in the readme?"})
    );
    let m = &reqs[1].json()["messages"];
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(m[2]["tool_calls"][0]["type"], "function");
    let args: Value = serde_json::from_str(
        m[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"command": "cat README.md"}));
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], "call_1");
    assert!(m[3]["content"]
        .as_str()
        .unwrap()
        .contains("hello from the workspace"));

    // The session records the messages and the usage, never the key.
    let sessions = all_files(&w.zot_home.join("sessions"));
    assert!(sessions.contains(r#""type":"usage""#) && sessions.contains(r#""provider":"openai""#));
    assert_no_key(&sessions, OPENAI_KEY, "the session");
    assert_no_key(&text(&out.stdout), OPENAI_KEY, "--json output");
    assert_no_key(&text(&out.stderr), OPENAI_KEY, "stderr");
}

#[test]
fn anthropic_tool_loop_sends_thinking_back() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let mut first = vec![anthropic::start(40)];
    first.extend(anthropic::thinking_block(
        0,
        "I should read the README.",
        "c2lnbmF0dXJl==",
    ));
    first.extend(anthropic::text_block(1, &["Checking ", "the file."]));
    first.extend(anthropic::tool_block(
        2,
        "toolu_01",
        "bash",
        &json!({"command": "cat README.md"}),
    ));
    first.extend(anthropic::stop("tool_use", 55));
    let srv = FakeServer::script(vec![
        Reply::sse(anthropic::sse(&first)),
        Reply::sse(anthropic::text(&["It says hello."])),
    ]);
    let agent = fixture("readonly-bash");
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "claude-sonnet-4-5",
            "--reasoning",
            "medium",
            "go",
        ],
    ));
    let ev = ok_events(&out);
    assert_eq!(of_type(&ev, "tool_result")[0]["exit_code"], 0);
    assert_eq!(
        of_type(&ev, "thinking_delta")[0]["delta"],
        "I should read the README."
    );
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "It says hello.");
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(reqs[0].header("authorization").is_none());
    let b0 = reqs[0].json();
    assert_eq!(b0["model"], "claude-sonnet-4-5");
    assert_eq!(b0["stream"], true);
    assert_eq!(
        b0["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert!(b0["max_tokens"].as_u64().unwrap() > 8192);
    assert!(b0["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Workspace:"));
    assert_eq!(b0["tools"][3]["name"], "bash");
    assert_eq!(b0["tools"][3]["input_schema"]["type"], "object");
    let m = &reqs[1].json()["messages"];
    let a = &m[1]["content"];
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(
        a[0],
        json!({"type": "thinking", "thinking": "I should read the README.", "signature": "c2lnbmF0dXJl=="})
    );
    assert_eq!(a[1], json!({"type": "text", "text": "Checking the file."}));
    assert_eq!(
        a[2],
        json!({"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "cat README.md"}})
    );
    assert_eq!(m[2]["role"], "user");
    let r = &m[2]["content"][0];
    assert_eq!(
        (r["type"].as_str(), r["tool_use_id"].as_str()),
        (Some("tool_result"), Some("toolu_01"))
    );
    assert!(r["content"]
        .as_str()
        .unwrap()
        .contains("hello from the workspace"));
    let done = of_type(&ev, "done")[0];
    assert_eq!(done["usage"]["input_tokens"], 55);
    let sessions = all_files(&w.zot_home.join("sessions"));
    assert!(
        sessions.contains("c2lnbmF0dXJl=="),
        "thinking is kept for a resumed session"
    );
    assert_no_key(&sessions, ANTHROPIC_KEY, "the session");
    assert_no_key(&text(&out.stdout), ANTHROPIC_KEY, "--json output");
}

#[test]
fn parallel_tool_calls_are_all_answered_in_order() {
    let w = World::new();
    std::fs::write(w.ws.join("notes.md"), "second file\n").unwrap();
    let srv = FakeServer::script(vec![
        Reply::sse(openai::tool_calls(&[
            ("call_a", "read", json!({"path": "README.md"})),
            ("call_b", "glob", json!({"pattern": "*.md"})),
            ("call_c", "read", json!({"path": "notes.md"})),
        ])),
        Reply::sse(openai::text(&["done"])),
    ]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&fixture("readonly-bash")),
            "-y",
            "--json",
            "--model",
            "gpt-5",
            "go",
        ],
    ));
    let ev = ok_events(&out);
    let ids: Vec<&str> = of_type(&ev, "tool_result")
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c"]);
    let m = &srv.requests()[1].json()["messages"];
    assert_eq!(m[2]["tool_calls"].as_array().unwrap().len(), 3);
    let results: Vec<(&str, &str)> = (3..6)
        .map(|i| {
            (
                m[i]["tool_call_id"].as_str().unwrap(),
                m[i]["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results[0], ("call_a", "hello from the workspace\n"));
    assert!(results[1].1.contains("notes.md") && results[1].1.contains("README.md"));
    assert_eq!(results[2], ("call_c", "second file\n"));
    assert_eq!(m.as_array().unwrap().len(), 6);
}

#[test]
fn streams_split_at_every_byte_arrive_whole() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let text_ = "h\u{e9}llo w\u{f6}rld \u{1f389} \u{65e5}\u{672c}";
    // OpenAI: every byte its own TCP write, a tool call then the answer.
    let srv = FakeServer::script(vec![
        Reply::sse_in_pieces(
            &openai::tool_calls(&[("c1", "read", json!({"path": "README.md"}))]),
            1,
        ),
        Reply::sse_in_pieces(
            &openai::text(&["h\u{e9}llo w\u{f6}", "rld \u{1f389} \u{65e5}\u{672c}"]),
            1,
        ),
    ]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--stream", "--model", "gpt-5", "go"],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), text_);
    // Anthropic likewise, with CRLF line ends and keep-alive comments.
    let body = String::from_utf8(anthropic::text(&[
        "h\u{e9}llo w\u{f6}",
        "rld \u{1f389} \u{65e5}\u{672c}",
    ]))
    .unwrap()
    .replace('\n', "\r\n");
    let body = format!(": keep-alive\r\n\r\n{body}");
    let srv = FakeServer::script(vec![Reply::sse_in_pieces(body.as_bytes(), 1)]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-haiku-4-5",
            "go",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), text_);
}

#[test]
fn a_plain_json_answer_is_accepted_where_a_stream_was_asked() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let srv = FakeServer::script(vec![
        Reply::json(
            200,
            &json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "read", "arguments": "{\"path\":\"README.md\"}"}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}),
        ),
        Reply::json(
            200,
            &json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "plain answer"},
                "finish_reason": "stop"}]}),
        ),
    ]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--stream", "--model", "gpt-5", "go"],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "plain answer");
    let srv = FakeServer::script(vec![Reply::json(
        200,
        &json!({"id": "msg_1", "type": "message",
        "role": "assistant", "model": "m", "content": [{"type": "text", "text": "plain claude"}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}),
    )]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-haiku-4-5",
            "go",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "plain claude\n");
}

// ------------------------------------------------------------ retries

#[test]
fn rate_limit_with_retry_after_then_success() {
    let w = World::new();
    let srv = FakeServer::script(vec![
        Reply::json(429, &json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}))
            .header("retry-after", "1"),
        Reply::sse(openai::text(&["made it"])),
    ]);
    let t0 = Instant::now();
    let out = run(openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&fixture("readonly-bash")),
            "-y",
            "--json",
            "--model",
            "gpt-5",
            "go",
        ],
    ));
    let ev = ok_events(&out);
    assert!(t0.elapsed() >= Duration::from_secs(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("zot: retrying in 1 s (429 rate limited; attempt 2 of 4)"),
        "{err}"
    );
    let r = of_type(&ev, "retry");
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0]["attempt"].as_u64(),
            r[0]["max_attempts"].as_u64(),
            r[0]["delay_ms"].as_u64(),
            r[0]["reason"].as_str()
        ),
        (Some(2), Some(4), Some(1000), Some("429 rate limited"))
    );
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "made it");
    assert_eq!(srv.requests().len(), 2);
}

#[test]
fn server_errors_back_off_then_succeed_and_give_up_after_max_attempts() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let srv = FakeServer::script(vec![
        Reply::json(
            500,
            &json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
        ),
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::sse(anthropic::text(&["third time"])),
    ]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "claude-haiku-4-5",
            "go",
        ],
    ));
    let ev = ok_events(&out);
    let reasons: Vec<&str> = of_type(&ev, "retry")
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["500 server error", "529 overloaded"]);
    let delays: Vec<u64> = of_type(&ev, "retry")
        .iter()
        .map(|r| r["delay_ms"].as_u64().unwrap())
        .collect();
    assert!(
        (375..=500).contains(&delays[0]) && (750..=1000).contains(&delays[1]),
        "{delays:?}"
    );
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "third time");
    // Never more than max_attempts.
    config(&w, "[http]\nmax_attempts = 2\n");
    let srv = FakeServer::start(|_, _| Reply::json(503, &json!({"error": {"message": "busy"}})));
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("gave up after 2 attempts: HTTP 503: busy"),
        "{err}"
    );
    assert_eq!(srv.requests().len(), 2);
}

#[test]
fn auth_failures_name_the_key_variable_and_are_not_retried() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    // OpenAI's real message echoes part of the key: it must not be shown.
    let masked = format!("Incorrect API key provided: {}****{}. You can find your API key at https://platform.openai.com/account/api-keys.", &OPENAI_KEY[..10], &OPENAI_KEY[OPENAI_KEY.len() - 4..]);
    let srv = FakeServer::script(vec![Reply::json(
        401,
        &json!({"error": {"message": masked, "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
    )]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--json", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("zot:"))
            .collect::<Vec<_>>(),
        ["zot: openai: the key in OPENAI_API_KEY was rejected (HTTP 401); check OPENAI_API_KEY"]
    );
    assert!(!err.contains(&OPENAI_KEY[..10]) && !text(&out.stdout).contains(&OPENAI_KEY[..10]));
    assert_eq!(srv.requests().len(), 1);
    let srv = FakeServer::script(vec![Reply::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-opus-4-5",
            "go",
        ],
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("the key in ANTHROPIC_API_KEY was rejected (HTTP 401)"),
        "{}",
        text(&out.stderr)
    );
    // An evil server echoing the whole key in another error: redacted.
    let srv = FakeServer::script(vec![Reply::json(
        400,
        &json!({"error": {"message": format!("bad request from key {OPENAI_KEY}")}}),
    )]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--json", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("[redacted]"),
        "{}",
        text(&out.stderr)
    );
    assert_no_key(&text(&out.stderr), OPENAI_KEY, "stderr");
    assert_no_key(&text(&out.stdout), OPENAI_KEY, "--json output");
}

#[test]
fn not_found_and_context_length_errors_say_what_is_wrong() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let srv = FakeServer::script(vec![Reply::json(
        404,
        &json!({"error": {"message": "The model `gpt-nope` does not exist or you do not have access to it.", "type": "invalid_request_error", "code": "model_not_found"}}),
    )]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--provider",
            "openai",
            "--model",
            "gpt-nope",
            "go",
        ],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("openai: model `gpt-nope` was not found (HTTP 404"),
        "{err}"
    );
    let srv = FakeServer::script(vec![Reply::json(404, &json!({"detail": "Not Found"}))]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("/v1/chat/completions answered HTTP 404") && err.contains("base URL"),
        "{err}"
    );
    let srv = FakeServer::script(vec![Reply::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
    )]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-opus-4-5",
            "go",
        ],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("longer than the model's context window") && err.contains("210000 tokens"),
        "{err}"
    );
}

// ------------------------------------------------------------ broken streams

#[test]
fn a_stream_cut_before_anything_was_shown_is_retried() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let full = openai::tool_calls(&[("call_1", "read", json!({"path": "README.md"}))]);
    // Cut in the middle of the tool call's arguments: nothing shown, nothing run.
    let srv = FakeServer::script(vec![
        Reply::sse_parts(vec![
            Part::Bytes(full[..full.len() / 2].to_vec()),
            Part::Cut,
        ]),
        Reply::sse(openai::text(&["recovered"])),
    ]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--json", "--model", "gpt-5", "go"],
    ));
    let ev = ok_events(&out);
    assert!(
        of_type(&ev, "tool_call").is_empty(),
        "a half tool call never runs"
    );
    assert_eq!(of_type(&ev, "retry").len(), 1);
    assert_eq!(of_type(&ev, "turn_end")[0]["text"], "recovered");
}

#[test]
fn a_stream_cut_after_text_was_shown_is_a_clear_error() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let mut chunks = vec![openai::chunk(json!({"content": "partial ans"}), None)];
    chunks.push(openai::chunk(
        json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"touch pw"}}]}),
        None,
    ));
    let mut body = Vec::new();
    for c in &chunks {
        body.extend_from_slice(format!("data: {c}\n\n").as_bytes());
    }
    // A clean end of the body, but no finish_reason and no [DONE].
    let srv = FakeServer::script(vec![Reply::sse(body.clone())]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--json", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let ev = events(&out);
    assert!(
        of_type(&ev, "tool_call").is_empty() && of_type(&ev, "retry").is_empty(),
        "{ev:?}"
    );
    let msg = of_type(&ev, "error")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("ended before it was complete"), "{msg}");
    assert_eq!(srv.requests().len(), 1);
    // A broken connection after text: the same, never a panic.
    let srv = FakeServer::script(vec![Reply::sse_parts(vec![Part::Bytes(body), Part::Cut])]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("zot: openai: ") && !err.contains("panicked"),
        "{err}"
    );
    assert!(!w.ws.join("pw").exists());
}

#[test]
fn garbage_and_html_are_protocol_errors() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let srv = FakeServer::script(vec![Reply::sse(
        b"data: {\"choices\": [{broken\n\n".to_vec(),
    )]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("not a valid OpenAI chat completions stream"),
        "{err}"
    );
    assert_eq!(srv.requests().len(), 1, "garbage is not retried");
    let srv = FakeServer::script(vec![Reply {
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        ..Reply::sse(b"<html><body>LM Studio</body></html>".to_vec())
    }]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("did not answer with an event stream (content type text/html"),
        "{err}"
    );
    let srv = FakeServer::script(vec![Reply::sse(anthropic::sse(&[
        anthropic::start(1),
        json!({"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}),
    ]))]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-opus-4-5",
            "go",
        ],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("not a valid Anthropic messages stream") && err.contains("never started"),
        "{err}"
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    config(
        &w,
        "[http]\nfirst_byte_timeout = 1\nidle_timeout = 1\nmax_attempts = 2\n",
    );
    let srv = FakeServer::start(|_, _| Reply::silent());
    let t0 = Instant::now();
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("gave up after 2 attempts: no response within 1 s (first-byte timeout)"),
        "{err}"
    );
    assert!(err.contains("retrying in"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(srv.requests().len(), 2);
    // Headers and some text, then silence: the idle timeout (text was
    // shown, so no retry).
    let srv = FakeServer::script(vec![Reply::sse_parts(vec![
        Part::Bytes(
            format!(
                "data: {}\n\n",
                openai::chunk(json!({"content": "thinking..."}), None)
            )
            .into_bytes(),
        ),
        Part::Hang,
    ])]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&agent), "-y", "--print", "--model", "gpt-5", "go"],
    ));
    let err = text(&out.stderr);
    assert!(
        err.contains("the response stalled for 1 s (idle timeout)"),
        "{err}"
    );
    assert_eq!(srv.requests().len(), 1);
    // Per-provider settings override [http].
    config(&w, "[http]\nfirst_byte_timeout = 30\n[providers.anthropic]\nfirst_byte_timeout = 0.5\nmax_attempts = 1\n");
    let srv = FakeServer::start(|_, _| Reply::silent());
    let t0 = Instant::now();
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--model",
            "claude-opus-4-5",
            "go",
        ],
    ));
    assert!(
        text(&out.stderr).contains("no response within 0.5 s"),
        "{}",
        text(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_huge_streamed_answer_keeps_memory_flat() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    // 64 KiB of events repeated 1280 times: 80 MiB of answer.
    let mut piece = String::new();
    let delta = format!(
        "data: {}\n\n",
        openai::chunk(json!({"content": "x".repeat(900)}), None)
    );
    while piece.len() < 64 << 10 {
        piece.push_str(&delta);
    }
    let srv = FakeServer::script(vec![Reply::sse_parts(vec![Part::Repeat(
        piece.into_bytes(),
        1280,
    )])]);
    let mut c = openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--print",
            "--no-session",
            "--model",
            "gpt-5",
            "go",
        ],
    );
    c.stdin(std::process::Stdio::null());
    let (out, rss_kib) = run_measured(c);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("larger than 4 MiB"), "{err}");
    assert!(
        rss_kib < 48 << 10,
        "peak RSS {rss_kib} KiB for an 80 MiB stream"
    );
    // A large answer within the cap streams through, also bounded.
    let body = openai::text(&vec!["y".repeat(1000).as_str(); 3000]);
    let srv = FakeServer::script(vec![Reply::sse_in_pieces(&body, 16 << 10)]);
    let mut c = openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--stream",
            "--no-session",
            "--model",
            "gpt-5",
            "go",
        ],
    );
    c.stdin(std::process::Stdio::null());
    let (out, rss_big) = run_measured(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout.len(), 3_000_001);
    assert!(
        rss_big < 64 << 10,
        "peak RSS {rss_big} KiB for a 3 MB answer"
    );
    eprintln!(
        "peak RSS: {rss_kib} KiB (80 MiB stream, stopped at 4 MiB), {rss_big} KiB (3 MB answer)"
    );
}

// ------------------------------------------------------------ keys

/// A bash agent whose commands print their environment and every
/// process environment they can read.
fn env_probe(w: &World) -> PathBuf {
    w.agent(
        "envprobe",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}, "bash": {"mode": "ask"}}}),
    )
}

const PROBE: &str = "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n'; echo probe-done";

fn key_stays_out_of_the_sandbox(w: World) {
    if !sandbox_works(&w) {
        return;
    }
    let agent = env_probe(&w);
    for backend in ["bwrap", "native", "landlock"] {
        for (key, is_openai) in [(OPENAI_KEY, true), (ANTHROPIC_KEY, false)] {
            let srv = FakeServer::script(vec![
                // The probe, and a file tool (it must work in a process
                // that made itself non-dumpable, also as uid 65534).
                if is_openai {
                    Reply::sse(openai::tool_calls(&[
                        ("call_1", "bash", json!({"command": PROBE})),
                        ("call_2", "read", json!({"path": "README.md"})),
                    ]))
                } else {
                    let mut e = vec![anthropic::start(3)];
                    e.extend(anthropic::tool_block(
                        0,
                        "toolu_1",
                        "bash",
                        &json!({"command": PROBE}),
                    ));
                    e.extend(anthropic::tool_block(
                        1,
                        "toolu_2",
                        "read",
                        &json!({"path": "README.md"}),
                    ));
                    e.extend(anthropic::stop("tool_use", 3));
                    Reply::sse(anthropic::sse(&e))
                },
                if is_openai {
                    Reply::sse(openai::text(&["ok"]))
                } else {
                    Reply::sse(anthropic::text(&["ok"]))
                },
            ]);
            let args = [
                "run",
                s(&agent),
                "-y",
                "--json",
                "--backend",
                backend,
                "--model",
                if is_openai {
                    "gpt-5"
                } else {
                    "claude-haiku-4-5"
                },
                "go",
            ];
            let mut c = if is_openai {
                openai_cmd(&w, &srv, &args)
            } else {
                anthropic_cmd(&w, &srv, &args)
            };
            c.env("ZOT_CANARY", "visible-to-zot");
            let out = run(c);
            let ev = ok_events(&out);
            let r = of_type(&ev, "tool_result");
            assert_eq!(r[1]["content"], "hello from the workspace\n", "{}", r[1]);
            let content = r[0]["content"].as_str().unwrap_or("").to_string();
            let ran = r[0]["exit_code"] == 0 && content.contains("probe-done");
            if !common::require(&format!("the {backend} backend"), ran, &content) {
                continue;
            }
            assert!(
                content.contains("PATH="),
                "{backend}: env printed nothing: {content}"
            );
            assert!(
                !content.contains("ZOT_CANARY"),
                "{backend}: zot's environment leaked: {content}"
            );
            assert_no_key(
                &content,
                key,
                &format!("the sandboxed command's view ({backend})"),
            );
            assert_no_key(&text(&out.stdout), key, "--json output");
            assert_no_key(&text(&out.stderr), key, "stderr");
            assert_no_key(
                &srv.requests()[1]
                    .raw()
                    .replace(&format!("Bearer {key}"), "")
                    .replace(&format!("x-api-key: {key}"), ""),
                key,
                "the tool result sent to the model",
            );
        }
    }
    assert_no_key(&all_files(&w.zot_home), OPENAI_KEY, "zot's state directory");
    assert_no_key(
        &all_files(&w.zot_home),
        ANTHROPIC_KEY,
        "zot's state directory",
    );
}

#[test]
fn api_keys_never_reach_the_sandbox_sessions_or_output() {
    key_stays_out_of_the_sandbox(World::new());
}

#[test]
fn api_keys_never_reach_the_sandbox_unprivileged() {
    if !common::require(
        "uid 65534",
        nix_is_root(),
        "the test runs as a non-root user",
    ) {
        return;
    }
    key_stays_out_of_the_sandbox(World::unprivileged());
}

fn nix_is_root() -> bool {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() == 0 }
}

// ------------------------------------------------------------ Ctrl-C

fn wait_for_request(srv: &FakeServer, n: usize) {
    let t0 = Instant::now();
    while srv.requests().len() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no request reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_during_a_request_exits_130_and_cleans_up() {
    let w = World::new();
    // A packed agent: its extraction dir must be removed on the way out.
    let archive = w.root.join("reader.zot");
    let out = w.run(&["pack", s(&fixture("readonly-bash")), s(&archive)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tmp = w.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (sig, code, mode) in [
        (libc::SIGINT, 130, "--print"),
        (libc::SIGTERM, 143, "--json"),
        (libc::SIGINT, 130, "--json"),
    ] {
        let srv = FakeServer::start(|_, _| Reply::silent());
        let mut c = openai_cmd(
            &w,
            &srv,
            &["run", s(&archive), "-y", mode, "--model", "gpt-5", "go"],
        );
        c.env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().unwrap();
        wait_for_request(&srv, 1);
        assert!(
            std::fs::read_dir(&tmp).unwrap().next().is_some(),
            "the archive is extracted under TMPDIR"
        );
        let t0 = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        if mode == "--json" {
            let ev = events(&out);
            assert!(
                ev.last().unwrap()["message"]
                    .as_str()
                    .unwrap()
                    .contains("interrupted by SIG"),
                "{ev:?}"
            );
        } else {
            assert!(
                text(&out.stderr).contains("interrupted by SIGINT"),
                "{}",
                text(&out.stderr)
            );
        }
    }
    // During a retry's backoff sleep too.
    let srv = FakeServer::start(|_, _| {
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "30")
    });
    let mut c = openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&fixture("readonly-bash")),
            "-y",
            "--print",
            "--model",
            "gpt-5",
            "go",
        ],
    );
    c.stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    wait_for_request(&srv, 1);
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(srv.requests().len(), 1);
}

// ------------------------------------------------------------ selection, flags

#[test]
fn models_command_lists_availability_and_why() {
    let w = World::new();
    config(
        &w,
        r#"
[providers.local]
api = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = ""

[[models]]
id = "qwen3-coder"
provider = "local"
context_window = 65536
reasoning = true
"#,
    );
    let mut c = w.cmd(&["models"]);
    c.env("OPENAI_API_KEY", OPENAI_KEY);
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let line = |start: &str| {
        t.lines()
            .rev()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("{start}: {t}"))
            .to_string()
    };
    assert!(line("openai ").ends_with("available"), "{t}");
    assert!(
        line("anthropic ").contains("unavailable: ANTHROPIC_API_KEY is not set"),
        "{t}"
    );
    assert!(
        line("local ").contains("none needed") && line("local ").ends_with("available"),
        "{t}"
    );
    assert!(
        line("qwen3-coder ").contains("65536") && line("qwen3-coder ").contains("yes"),
        "{t}"
    );
    assert!(line("sim ").ends_with("(default)"), "{t}");
    assert!(
        line("claude-opus-4-5 ").contains("ANTHROPIC_API_KEY is not set"),
        "{t}"
    );
    assert_no_key(&t, OPENAI_KEY, "zot models");
    let out = run({
        let mut c = w.cmd(&["models", "--json"]);
        c.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY);
        c
    });
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["config"],
        w.zot_home.join("config.toml").display().to_string()
    );
    assert_eq!(v["config_exists"], true);
    let m = v["models"].as_array().unwrap();
    let find = |id: &str| m.iter().find(|x| x["id"] == id).unwrap().clone();
    assert_eq!(find("claude-haiku-4-5")["available"], true);
    assert_eq!(find("gpt-5")["reason"], "OPENAI_API_KEY is not set");
    assert_eq!(find("qwen3-coder")["source"], "config");
    assert_eq!(find("sim")["default"], true);
    assert_no_key(&text(&out.stdout), ANTHROPIC_KEY, "zot models --json");
}

#[test]
fn config_errors_name_the_file_and_the_field() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let p = config(&w, "[defaults\nprovider = \"openai\"\n");
    for args in [
        vec!["models"],
        vec!["run", s(&agent), "-y", "--print", "hi"],
    ] {
        let out = w.run(&args);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("config {}", p.display())) && err.contains("invalid TOML"),
            "{err}"
        );
    }
    config(&w, "[defaults]\nprovider = \"opneai\"\n\n[providers.openai]\nbase_url = \"http://h/v1\"\napi_key = \"x\"\n");
    let out = w.run(&["run", s(&agent), "-y", "--print", "hi"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("defaults.provider: unknown provider `opneai`; did you mean `openai`?"),
        "{err}"
    );
    assert!(
        err.contains("providers.openai.api_key: unknown key `api_key`; zot never reads keys"),
        "{err}"
    );
    assert!(
        !w.zot_home.join("agents").exists(),
        "nothing is created on a config error"
    );
}

#[test]
fn provider_model_reasoning_and_tools_flags() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    // --reasoning needs a reasoning model: an error before consent.
    let out = run(openai_cmd(
        &w,
        &FakeServer::script(vec![]),
        &[
            "run",
            s(&agent),
            "--print",
            "--model",
            "gpt-4.1",
            "--reasoning",
            "high",
            "hi",
        ],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("gpt-4.1 (openai) does not satisfy")
            && err.contains("does not support reasoning (--reasoning)")
            && !err.contains("consent"),
        "{err}"
    );
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--reasoning",
        "max",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--model",
        "sim",
        "--reasoning",
        "low",
        "hi",
    ]);
    assert!(
        text(&out.stderr).contains("does not support reasoning"),
        "{}",
        text(&out.stderr)
    );
    // --tools: unknown names and tools the manifest forbids are usage errors.
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--tools",
        "read,bsh",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown tool `bsh`; did you mean `bash`?"),
        "{}",
        text(&out.stderr)
    );
    let out = w.run(&["run", s(&agent), "-y", "--print", "--tools", "write", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("can only narrow")
            && text(&out.stderr).contains("fs.write is empty"),
        "{}",
        text(&out.stderr)
    );
    // --tools narrows what the model is offered and what runs.
    let srv = FakeServer::script(vec![
        Reply::sse(openai::tool_calls(&[(
            "c1",
            "glob",
            json!({"pattern": "*"}),
        )])),
        Reply::sse(openai::text(&["ok"])),
    ]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--model",
            "gpt-5",
            "--reasoning",
            "low",
            "--tools",
            "read,skill",
            "go",
        ],
    ));
    let ev = ok_events(&out);
    let b0 = srv.requests()[0].json();
    assert_eq!(tool_names(&b0), ["read", "skill"]);
    assert_eq!(b0["reasoning_effort"], "low");
    assert!(b0["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Tools: read, skill"));
    let r = of_type(&ev, "tool_result")[0];
    assert_eq!(r["is_error"], true);
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("not enabled for this run (--tools)"),
        "{r}"
    );
    // --provider alone picks that provider's first compatible model.
    let srv = FakeServer::script(vec![Reply::sse(anthropic::text(&["hi from claude"]))]);
    let out = run(anthropic_cmd(
        &w,
        &srv,
        &[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--provider",
            "anthropic",
            "hi",
        ],
    ));
    let ev = ok_events(&out);
    assert_eq!(of_type(&ev, "done")[0]["model"], "claude-sonnet-4-5");
    // --sim-script only with sim.
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--provider",
        "openai",
        "--sim-script",
        "/dev/null",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn config_defaults_custom_providers_and_unlisted_models() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let srv = FakeServer::script(vec![
        Reply::sse(openai::text(&["local answer"])),
        Reply::sse(openai::text(&["unlisted answer"])),
    ]);
    config(
        &w,
        &format!(
            r#"
[defaults]
provider = "local"
model = "qwen3-coder"
reasoning = "high"

[providers.local]
api = "openai"
base_url = "{}"
api_key_env = ""

[[models]]
id = "qwen3-coder"
provider = "local"
context_window = 65536
reasoning = true
"#,
            srv.v1()
        ),
    );
    let out = w.run(&["run", s(&agent), "-y", "--json", "go"]);
    let ev = ok_events(&out);
    let done = of_type(&ev, "done")[0];
    assert_eq!(
        (done["provider"].as_str(), done["model"].as_str()),
        (Some("local"), Some("qwen3-coder"))
    );
    let r0 = &srv.requests()[0];
    assert!(
        r0.header("authorization").is_none(),
        "a provider without a key sends none"
    );
    assert_eq!(r0.json()["reasoning_effort"], "high");
    // An id nobody lists is accepted for the provider, capabilities unknown.
    let out = w.run(&[
        "run",
        s(&agent),
        "-y",
        "--print",
        "--model",
        "llama3.3",
        "go",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "unlisted answer\n");
    assert!(srv.requests()[1].json().get("reasoning_effort").is_none());
    // ...but unknown capabilities never satisfy requirements.
    let needs = w.agent(
        "needs-context",
        json!({"permissions": {"fs": {"read": ["${workspace}"]}}, "model": {"min_context": 8000}}),
    );
    let out = w.run(&[
        "run",
        s(&needs),
        "-y",
        "--print",
        "--model",
        "llama3.3",
        "go",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("context window is unknown"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_agent_toml_model_pin_is_honoured() {
    let w = World::new();
    let dir = w.root.join("pinned");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "schema_version = 1\nname = \"pinned\"\ninstructions = \"Be brief.\"\n\n[model]\nprovider = \"openai\"\nmodel = \"gpt-pinned\"\n",
    )
    .unwrap();
    let out = w.run(&["run", s(&dir), "-y", "--print", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("the agent pins openai/gpt-pinned")
            && err.contains("OPENAI_API_KEY is not set"),
        "{err}"
    );
    let srv = FakeServer::script(vec![Reply::sse(openai::text(&["pinned answer"]))]);
    let out = run(openai_cmd(
        &w,
        &srv,
        &["run", s(&dir), "-y", "--print", "hi"],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "pinned answer\n");
    assert_eq!(srv.requests()[0].json()["model"], "gpt-pinned");
    // An explicit --model overrides the pin, with a note.
    let out = w.run(&["run", s(&dir), "-y", "--print", "--model", "sim", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("overrides the model the agent pins (openai/gpt-pinned)"));
}
