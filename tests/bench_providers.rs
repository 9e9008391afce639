//! The provider benchmark (run by `ci/bench-providers.sh`, ignored by the
//! test suite): `zot run` driving a tool loop against a local fake
//! OpenAI-compatible server that answers with zero delay.
//!
//! zot's own time per step is measured at the server: from the moment the
//! server finished writing response N to the moment request N+1 had
//! arrived. In that gap zot parses the response, runs the tool, records
//! the session, builds and sends the next request. With the `read` tool
//! nothing else runs in the gap, so it is zot's time. With `bash` the gap
//! also holds the sandboxed command, whose duration the tool result
//! reports (`duration_ms`, whole milliseconds) and is subtracted.
mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use common::fake_llm::{openai, run_measured_pid, FakeServer, Reply};
use common::run::{events, fixture, of_type, s, text, World};
use serde_json::json;

fn vm_rss_kib(pid: u32) -> Option<u64> {
    // VmRSS: resident now (VmHWM, the peak, comes from run_measured_pid).
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    st.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

struct Loop {
    /// The size of the last request (the whole conversation).
    last_body_kib: f64,
    gaps_ms: Vec<f64>,
    tool_ms: Vec<f64>,
    peak_rss_kib: u64,
    /// (request index, VmRSS KiB) sampled while zot ran.
    rss: Vec<(usize, u64)>,
}

/// Run `steps` model steps: each answer calls `tool` once, the last one
/// answers in text.
fn tool_loop(
    w: &World,
    agent: &std::path::Path,
    steps: usize,
    tool: (&str, serde_json::Value),
) -> Loop {
    let call = Reply::sse(openai::tool_calls(&[("call_1", tool.0, tool.1.clone())]));
    let done = Reply::sse(openai::text(&["done"]));
    let pid = Arc::new(AtomicU32::new(0));
    let rss = Arc::new(Mutex::new(Vec::new()));
    let (p, r) = (pid.clone(), rss.clone());
    let srv = FakeServer::start(move |_, i| {
        let pid = p.load(Ordering::SeqCst);
        if pid != 0 && (i + 1) % 50 == 0 {
            if let Some(kib) = vm_rss_kib(pid) {
                r.lock().unwrap().push((i + 1, kib));
            }
        }
        if i + 1 < steps {
            call.clone()
        } else {
            done.clone()
        }
    });
    let mut args = vec!["run", s(agent), "-y", "--json", "--model", "gpt-5", "go"];
    if std::env::var_os("BENCH_NO_SESSION").is_some() {
        args.push("--no-session");
    }
    let mut c = w.cmd(&args);
    c.env("OPENAI_API_KEY", "sk-bench-0000000000000000")
        .env("OPENAI_BASE_URL", srv.v1());
    let (out, peak) = run_measured_pid(c, |p| pid.store(p, Ordering::SeqCst));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let tool_ms: Vec<f64> = of_type(&ev, "tool_result")
        .iter()
        .map(|r| r["duration_ms"].as_f64().unwrap_or(0.0))
        .collect();
    let reqs = srv.requests();
    assert_eq!(reqs.len(), steps);
    let gaps_ms = (0..steps - 1)
        .map(|i| {
            let sent = srv.replied_at(i).expect("reply written");
            reqs[i + 1].at.duration_since(sent).as_secs_f64() * 1000.0
        })
        .collect();
    let rss = rss.lock().unwrap().clone();
    let last_body_kib = reqs.last().map_or(0, |r| r.body.len()) as f64 / 1024.0;
    Loop {
        last_body_kib,
        gaps_ms,
        tool_ms,
        peak_rss_kib: peak,
        rss,
    }
}

#[test]
#[ignore = "benchmark: ci/bench-providers.sh"]
fn bench_tool_loop_bash_50_steps() {
    let w = World::new();
    let agent = fixture("true-runner");
    let l = tool_loop(&w, &agent, 50, ("bash", json!({"command": "true"})));
    let own: Vec<f64> = l
        .gaps_ms
        .iter()
        .zip(&l.tool_ms)
        .map(|(g, t)| (g - t).max(0.0))
        .collect();
    println!(
        "bash loop, 50 steps: step gap p50 {:.2} ms p90 {:.2} ms; sandboxed command p50 {:.1} ms; zot's own time p50 {:.2} ms p90 {:.2} ms (duration_ms is whole ms: this overstates zot by < 1 ms); peak RSS {:.1} MiB",
        percentile(&l.gaps_ms, 0.5),
        percentile(&l.gaps_ms, 0.9),
        percentile(&l.tool_ms, 0.5),
        percentile(&own, 0.5),
        percentile(&own, 0.9),
        l.peak_rss_kib as f64 / 1024.0
    );
}

#[test]
#[ignore = "benchmark: ci/bench-providers.sh"]
fn bench_tool_loop_read_50_steps() {
    let w = World::new();
    let agent = fixture("readonly-bash");
    let l = tool_loop(&w, &agent, 50, ("read", json!({"path": "README.md"})));
    println!(
        "read loop, 50 steps: zot's own time per step p50 {:.2} ms p90 {:.2} ms max {:.2} ms; peak RSS {:.1} MiB",
        percentile(&l.gaps_ms, 0.5),
        percentile(&l.gaps_ms, 0.9),
        percentile(&l.gaps_ms, 1.0),
        l.peak_rss_kib as f64 / 1024.0
    );
}

#[test]
#[ignore = "benchmark: ci/bench-providers.sh"]
fn bench_session_500_steps_memory() {
    let w = World::new();
    let dir = w.root.join("long");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "schema_version = 1\nname = \"long\"\ninstructions = \"Read.\"\nmax_iterations = 500\nfiles = [\"notes.md\"]\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.md"), "a short note\n").unwrap();
    let l = tool_loop(&w, &dir, 500, ("read", json!({"path": "notes.md"})));
    let first = l.rss.first().copied().unwrap_or_default();
    let last = l.rss.last().copied().unwrap_or_default();
    let early: Vec<f64> = l.gaps_ms[..50].to_vec();
    let late: Vec<f64> = l.gaps_ms[l.gaps_ms.len() - 50..].to_vec();
    println!(
        "session, 500 steps: VmRSS {:.1} MiB at step {} -> {:.1} MiB at step {} ({:+.1} MiB; the last request, the whole conversation, is {:.0} KiB); peak RSS {:.1} MiB; step time p50 {:.2} ms (steps 1-50) -> {:.2} ms (last 50)",
        first.1 as f64 / 1024.0,
        first.0,
        last.1 as f64 / 1024.0,
        last.0,
        (last.1 as f64 - first.1 as f64) / 1024.0,
        l.last_body_kib,
        l.peak_rss_kib as f64 / 1024.0,
        percentile(&early, 0.5),
        percentile(&late, 0.5),
    );
    println!("  VmRSS samples (step, KiB): {:?}", l.rss);
    assert!(l.rss.len() >= 9, "rss samples: {:?}", l.rss);
}

/// 200 model steps against an 8,000-token window: the conversation is
/// compacted every few steps (each compaction one or two summary
/// requests, answered at once). zot's own time per step is measured as
/// above, over every request (summary requests included); memory must
/// stay flat, since only the kept history is held.
#[test]
#[ignore = "benchmark: ci/bench-providers.sh"]
fn bench_compaction_200_steps() {
    const STEPS: usize = 200;
    let w = World::new();
    std::fs::create_dir_all(&w.zot_home).unwrap();
    std::fs::write(
        w.zot_home.join("config.toml"),
        "[[models]]\nid = \"small\"\nprovider = \"openai\"\ncontext_window = 8000\n",
    )
    .unwrap();
    let dir = w.root.join("long");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "schema_version = 1\nname = \"long\"\ninstructions = \"Read.\"\nmax_iterations = 500\nfiles = [\"notes.md\"]\n",
    )
    .unwrap();
    let note: String = (0..50)
        .map(|i| {
            format!("note line {i}: some text of about eighty bytes, to be read again and again.\n")
        })
        .collect();
    std::fs::write(dir.join("notes.md"), note).unwrap();
    let call = Reply::sse(openai::tool_calls(&[(
        "call_1",
        "read",
        json!({"path": "notes.md"}),
    )]));
    let done = Reply::sse(openai::text(&["done"]));
    let summary = Reply::sse(openai::text(&[
        "## Goal\nread the notes\n## Progress\n- read notes.md many times\n## Critical context\n- none",
    ]));
    let steps = Arc::new(AtomicU32::new(0));
    let pid = Arc::new(AtomicU32::new(0));
    let rss = Arc::new(Mutex::new(Vec::new()));
    let (st, p, r) = (steps.clone(), pid.clone(), rss.clone());
    let srv = FakeServer::start(move |req, _| {
        let body: serde_json::Value = req.json();
        if body.get("tools").is_none() {
            return summary.clone();
        }
        let n = st.fetch_add(1, Ordering::SeqCst) as usize + 1;
        let pid = p.load(Ordering::SeqCst);
        if pid != 0 && n % 25 == 0 {
            if let Some(kib) = vm_rss_kib(pid) {
                r.lock().unwrap().push((n, kib));
            }
        }
        if n < STEPS {
            call.clone()
        } else {
            done.clone()
        }
    });
    let mut c = w.cmd(&["run", s(&dir), "-y", "--json", "--model", "small", "go"]);
    c.env("OPENAI_API_KEY", "sk-bench-0000000000000000")
        .env("OPENAI_BASE_URL", srv.v1());
    let (out, peak) = run_measured_pid(c, |p| pid.store(p, Ordering::SeqCst));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ev = events(&out);
    let compactions = of_type(&ev, "compaction").len();
    let reqs = srv.requests();
    let summaries = reqs
        .iter()
        .filter(|r| r.json().get("tools").is_none())
        .count();
    assert_eq!(reqs.len(), STEPS + summaries);
    assert!(compactions >= 10, "{compactions} compactions");
    let gaps: Vec<f64> = (0..reqs.len() - 1)
        .map(|i| {
            let sent = srv.replied_at(i).expect("reply written");
            reqs[i + 1].at.duration_since(sent).as_secs_f64() * 1000.0
        })
        .collect();
    let largest = reqs.iter().map(|r| r.body.len()).max().unwrap_or(0) as f64 / 1024.0;
    let rss = rss.lock().unwrap().clone();
    let first = rss.first().copied().unwrap_or_default();
    let last = rss.last().copied().unwrap_or_default();
    println!(
        "compaction loop, {STEPS} steps, 8,000-token window: {compactions} compactions ({summaries} summary requests); zot's own time per request p50 {:.2} ms p90 {:.2} ms max {:.2} ms; VmRSS {:.1} MiB at step {} -> {:.1} MiB at step {} ({:+.1} MiB); peak RSS {:.1} MiB; largest request {largest:.0} KiB",
        percentile(&gaps, 0.5),
        percentile(&gaps, 0.9),
        percentile(&gaps, 1.0),
        first.1 as f64 / 1024.0,
        first.0,
        last.1 as f64 / 1024.0,
        last.0,
        (last.1 as f64 - first.1 as f64) / 1024.0,
        peak as f64 / 1024.0,
    );
    println!("  compaction VmRSS samples (step, KiB): {rss:?}");
}
