//! End-to-end tests of bundled extensions (`extensions/<x>/extension.json`):
//! the protocol with an extension in Python (tests/fixtures/ext/probe.py)
//! and one in Rust (cli/examples/ext_echo.rs), driven by the `sim` model;
//! and attacks from inside an extension on bwrap and native, as root and
//! as uid 65534, each next to its unconfined control.
mod common;

use common::pty::{Pty, CTRL_D};
use common::run::{events, of_type, s, sandbox_works, text, World};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn probe_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ext/probe.py")
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

/// An agent bundling the probe extension started with `mode`.
fn probe_agent(w: &World, name: &str, mode: &str, perms: Value) -> PathBuf {
    let dir = w.agent(name, json!({ "permissions": perms }));
    let ext = dir.join("extensions/probe");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::copy(probe_src(), ext.join("probe.py")).unwrap();
    std::fs::write(
        ext.join("extension.json"),
        json!({"name": "probe", "exec": "./probe.py", "args": [mode], "language": "python"})
            .to_string(),
    )
    .unwrap();
    dir
}

fn ws_perms() -> Value {
    json!({"fs": {"read": ["${workspace}"], "write": ["${workspace}"]}, "bash": {"mode": "ask"}})
}

/// Run `agent` with one model step making `calls`, then "done"; extra
/// arguments before the prompt. Returns the output.
fn run_calls(w: &World, agent: &Path, extra: &[&str], calls: Value) -> Output {
    let script = w.script(
        &format!("s{}.json", rand_suffix()),
        json!([{"text": "", "tool_calls": calls}, {"text": "done"}]),
    );
    let mut args = vec![
        "run",
        s(agent),
        "-y",
        "--json",
        "--no-session",
        "--sim-script",
        s(&script),
    ];
    args.extend_from_slice(extra);
    args.push("go");
    w.cmd(&args)
        .env("OPENAI_API_KEY", "sk-PROVIDER-SECRET-4242")
        .output()
        .unwrap()
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

/// The tool results' contents, in order.
fn results(out: &Output) -> Vec<(String, bool)> {
    let ev = events(out);
    of_type(&ev, "tool_result")
        .iter()
        .map(|r| {
            (
                r["content"].as_str().unwrap_or("").to_string(),
                r["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn probe(op: &str, mut args: Value) -> Value {
    args["op"] = json!(op);
    json!({"name": "probe", "arguments": args})
}

fn data_dir(w: &World, agent: &str, ext: &str) -> PathBuf {
    w.zot_home
        .join("agents")
        .join(agent)
        .join("data/extensions")
        .join(ext)
}

fn python_ok() -> bool {
    common::require(
        "python3",
        std::process::Command::new("python3")
            .arg("-c")
            .arg("1")
            .status()
            .is_ok_and(|s| s.success()),
        "python3 is not installed",
    )
}

/// The probe run directly on the host: the unconfined control of an attack.
fn direct(op: &str, args: Value, env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new("python3")
        .arg(probe_src())
        .args(["--direct", op, &args.to_string()])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    text(&out.stdout)
}

// ------------------------------------------------------------ the example

/// The example agent's Python extension answers the model's calls; its
/// workspace write lands, its data dir persists across runs, and
/// `zot inspect` lists it.
#[test]
fn example_todo_keeper() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = example("todo-keeper");
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([{"name": "todo_add", "arguments": {"text": "buy milk"}},
               {"name": "todo_export", "arguments": {}}]),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = results(&out);
    assert_eq!(r[0], ("added #1: buy milk".to_string(), false), "{r:?}");
    assert!(!r[1].1, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("TODO.md")).unwrap(),
        "# Todo\n\n- [ ] buy milk\n"
    );
    // A second run reads what the first left in the data dir.
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([{"name": "todo_list", "arguments": {}}]),
    );
    assert_eq!(results(&out)[0].0, "1. buy milk", "{}", text(&out.stderr));
    assert!(data_dir(&w, "todo-keeper", "todo")
        .join("todos.json")
        .is_file());
    let out = w.run(&["inspect", s(&agent)]);
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        o.contains("extensions") && o.contains("todo (extensions/todo): ./todo.py"),
        "{o}"
    );
    let out = w.run(&["inspect", s(&agent), "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["extensions"][0]["manifest"]["name"], "todo");
    // --explain shows the extension's own view.
    let out = w.run(&["debug", "sandbox", "--explain", s(&agent)]);
    let o = text(&out.stdout);
    assert!(out.status.success(), "{o} {}", text(&out.stderr));
    let ext = o
        .split("\nextension todo:")
        .nth(1)
        .unwrap_or_else(|| panic!("{o}"));
    let data = data_dir(&w, "todo-keeper", "todo");
    assert!(
        ext.contains(&format!("bind rw {}", data.display()))
            && ext.contains("working directory: ")
            && ext.contains("extensions/todo"),
        "{ext}"
    );
}

// ------------------------------------------------------------ attacks

/// Every attack from inside an extension, on `backend`, for world `w`.
fn attacks(w: &World, backend: &str) {
    let who = format!("{backend}{}", if w.nobody { " as 65534" } else { "" });
    std::fs::create_dir_all(&w.zot_home).unwrap();
    std::fs::write(
        w.zot_home.join("config.toml"),
        "[sandbox]\nmax_procs = 200\n",
    )
    .unwrap();
    if w.nobody {
        for p in [&w.zot_home, &w.zot_home.join("config.toml")] {
            std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
        }
    }
    let agent = probe_agent(w, "prober", "normal", ws_perms());
    let key = w.home.join(".ssh/id_rsa");
    let outside = w.root.join("outside.txt");
    // A host unix socket and a host TCP service, both answering.
    let sock = w.root.join("host.sock");
    let l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    if w.nobody {
        std::os::unix::fs::lchown(&sock, Some(65534), Some(65534)).unwrap();
    }
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut c = c;
            let _ = std::io::Write::write_all(&mut c, b"HOST-SOCKET-HELLO");
        }
    });
    // One where the extension can see it: its connect is still refused.
    let ws_sock = w.ws.join("inside.sock");
    let l2 = std::os::unix::net::UnixListener::bind(&ws_sock).unwrap();
    if w.nobody {
        std::os::unix::fs::lchown(&ws_sock, Some(65534), Some(65534)).unwrap();
    }
    std::thread::spawn(move || {
        for c in l2.incoming().flatten() {
            let mut c = c;
            let _ = std::io::Write::write_all(&mut c, b"HOST-SOCKET-HELLO");
        }
    });
    let port = common::origin("HOST-TCP-HELLO");
    let needle = "sk-PROVIDER-SECRET-4242";

    // Controls: every attack works unconfined.
    assert!(direct("read", json!({"path": key}), &[]).contains("FAKE-PRIVATE-KEY"));
    let ctl = w.root.join("control.txt");
    assert!(direct("write", json!({"path": ctl}), &[]).contains("WROTE"));
    assert!(direct("env", json!({}), &[("OPENAI_API_KEY", needle)]).contains(needle));
    assert!(direct(
        "proc_scan",
        json!({"needle": needle}),
        &[("OPENAI_API_KEY", needle)]
    )
    .starts_with("FOUND"));
    assert!(direct("unix", json!({"path": sock}), &[]).contains("HOST-SOCKET-HELLO"));
    assert!(direct("unix", json!({"path": ws_sock}), &[]).contains("HOST-SOCKET-HELLO"));
    assert!(
        direct("tcp", json!({"host": "127.0.0.1", "port": port}), &[]).contains("HOST-TCP-HELLO")
    );

    let out = run_calls(
        w,
        &agent,
        &["--backend", backend],
        json!([
            probe("read", json!({"path": key})),
            probe("write", json!({"path": outside, "content": "escaped"})),
            probe("env", json!({})),
            probe("proc_scan", json!({"needle": needle})),
            probe("unix", json!({"path": sock})),
            probe("tcp", json!({"host": "127.0.0.1", "port": port})),
            probe("spawn", json!({"argv": ["cat", key]})),
            probe("fork", json!({"n": 4000})),
            // Controls inside: the granted workspace write lands.
            probe(
                "write",
                json!({"path": w.ws.join("granted.txt"), "content": "ok"})
            ),
            probe("read", json!({"path": w.ws.join("README.md")})),
            probe("unix", json!({"path": ws_sock})),
            // A daemon left behind: it dies with the extension's sandbox.
            probe(
                "spawn",
                json!({"argv": ["sh", "-c", format!(
                    "(setsid sh -c 'while :; do echo x >> {}; sleep 0.1; done' >/dev/null 2>&1 &); echo started",
                    data_dir(w, "prober", "probe").join("tick").display()
                )]})
            ),
        ]),
    );
    assert!(out.status.success(), "{who}: {}", text(&out.stderr));
    let r = results(&out);
    assert_eq!(r.len(), 12, "{who}: {r:?} {}", text(&out.stderr));
    let all: String = r
        .iter()
        .map(|(c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !all.contains("FAKE-PRIVATE-KEY"),
        "{who}: read the key: {all}"
    );
    assert!(r[0].0.starts_with("ERR:"), "{who}: {}", r[0].0);
    assert!(
        r[1].0.starts_with("ERR:") && !outside.exists(),
        "{who}: {}",
        r[1].0
    );
    assert!(
        r[2].0.starts_with("ENV:") && !r[2].0.contains(needle),
        "{who}: {}",
        r[2].0
    );
    let env: Value = serde_json::from_str(r[2].0.strip_prefix("ENV:").unwrap()).unwrap();
    for k in env.as_object().unwrap().keys() {
        assert!(
            [
                "HOME",
                "PATH",
                "LANG",
                "TERM",
                "TZ",
                "TMPDIR",
                "LC_CTYPE",
                "GIT_DISCOVERY_ACROSS_FILESYSTEM"
            ]
            .contains(&k.as_str()),
            "{who}: variable {k} reached the extension: {env}"
        );
    }
    assert_eq!(r[3].0, "NOTFOUND", "{who}");
    assert!(r[4].0.starts_with("ERR:"), "{who}: host socket: {}", r[4].0);
    assert!(
        r[5].0.starts_with("ERR:"),
        "{who}: unlisted host: {}",
        r[5].0
    );
    assert!(
        r[6].0.starts_with("SPAWNED:") && !r[6].0.starts_with("SPAWNED:0"),
        "{who}: {}",
        r[6].0
    );
    let n: usize = r[7]
        .0
        .strip_prefix("BLOCKED:")
        .unwrap_or_else(|| panic!("{who}: fork loop not stopped: {}", r[7].0))
        .parse()
        .unwrap();
    assert!(n < 600, "{who}: {n} processes");
    assert_eq!(r[8].0, "WROTE", "{who}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("granted.txt")).unwrap(),
        "ok"
    );
    assert_eq!(r[9].0, "READ:hello from the workspace\n", "{who}");
    assert!(
        r[10].0.starts_with("ERR:"),
        "{who}: workspace socket: {}",
        r[10].0
    );
    assert_eq!(r[11].0, "SPAWNED:0:started\n", "{who}");
    let tick = data_dir(w, "prober", "probe").join("tick");
    std::thread::sleep(Duration::from_millis(300));
    let before = std::fs::metadata(&tick).unwrap().len();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        std::fs::metadata(&tick).unwrap().len(),
        before,
        "{who}: the daemon outlived the run"
    );
    // The data dir persists across runs.
    let starts = data_dir(w, "prober", "probe").join("starts");
    assert_eq!(std::fs::read_to_string(&starts).unwrap(), "x", "{who}");
    let out = run_calls(
        w,
        &agent,
        &["--backend", backend],
        json!([probe("read", json!({"path": starts}))]),
    );
    assert_eq!(
        results(&out)[0].0,
        "READ:xx",
        "{who}: {}",
        text(&out.stderr)
    );
}

fn backend_ok(w: &World, backend: &str) -> bool {
    let out = w.run(&[
        "run",
        s(&common::run::fixture("true-runner")),
        "-y",
        "--no-session",
        "--json",
        "--backend",
        backend,
        "run: true",
    ]);
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    common::require(
        &format!("the {backend} backend"),
        r.len() == 1 && r[0]["exit_code"] == 0,
        &format!("{ev:?} {}", text(&out.stderr)),
    )
}

#[test]
fn attacks_from_an_extension_bwrap() {
    if !python_ok() {
        return;
    }
    for w in [World::new(), World::unprivileged()] {
        if backend_ok(&w, "bwrap") {
            attacks(&w, "bwrap");
        }
    }
}

#[test]
fn attacks_from_an_extension_native() {
    if !python_ok() {
        return;
    }
    for w in [World::new(), World::unprivileged()] {
        if backend_ok(&w, "native") {
            attacks(&w, "native");
        }
    }
}

// ------------------------------------------------------------ protocol

/// Handshake, registration (built-ins shadow), events, intercepts (block;
/// a rewrite is checked like the model's own call), notify sanitised,
/// and the shutdown sequence's `shutdown`.
#[test]
fn protocol_round_trip() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = probe_agent(&w, "proto", "normal", ws_perms());
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([
            probe("sleep", json!({"s": 0})),
            {"name": "bash", "arguments": {"command": "echo BLOCKME"}},
            {"name": "bash", "arguments": {"command": "echo fine"}},
            {"name": "read", "arguments": {"path": "REWRITE"}},
            {"name": "read", "arguments": {"path": "REWRITE", "to": "README.md"}},
            {"name": "bash", "arguments": {"command": "REWRITE"}},
            probe("flood", json!({"n": 3000})),
        ]),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = results(&out);
    assert_eq!(r[0], ("SLEPT".into(), false));
    assert_eq!(
        r[1],
        ("blocked by extension probe: no BLOCKME here".into(), true)
    );
    assert!(r[2].0.contains("fine") && !r[2].1, "{r:?}");
    assert!(
        r[3].1 && r[3].0.contains("outside the agent's fs.read scopes"),
        "{r:?}"
    );
    assert_eq!(r[4], ("hello from the workspace\n".into(), false));
    assert!(r[5].1 && r[5].0.contains("risk gate"), "{r:?}");
    // A flood of notifications while a call runs: all shown, in order.
    assert_eq!(r[6], ("FLOODED".into(), false));
    assert!(
        err.contains("extension probe: flood 0\n") && err.contains("extension probe: flood 2999\n")
    );
    // Built-ins shadow; extension text is shown sanitised.
    assert!(
        err.contains("tool `read` is shadowed by the built-in tool"),
        "{err}"
    );
    assert!(
        err.contains("probe ready ^[]0;pwned^G") && !err.contains('\x1b'),
        "{err}"
    );
    let log = std::fs::read_to_string(data_dir(&w, "proto", "probe").join("events.log")).unwrap();
    for want in [
        "hello_ack 1 sim",
        "event session_start",
        "event turn_start",
        "event assistant_message",
        "event tool_call",
        "event turn_end",
        "shutdown",
    ] {
        assert!(log.contains(want), "{want}: {log}");
    }
    // An assistant_message intercept replaces the recorded text.
    let script = w.script("replace.json", json!([{"text": "REPLACE ME"}]));
    let ev = w.run_script(&agent, &script, "go");
    assert_eq!(
        of_type(&ev, "turn_end")[0]["text"],
        "replaced by the extension"
    );
    // The stderr log of the extension is kept outside its reach.
    assert!(w.zot_home.join("agents/proto/logs/probe.log").is_file());
}

/// The Rust extension: handshake and a tool call.
#[test]
fn rust_extension() {
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let bin = common::zot_bin()
        .parent()
        .unwrap()
        .join("examples/ext_echo");
    if !bin.exists() {
        let st = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "zot", "--example", "ext_echo"])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let agent = w.agent("rusty", json!({"permissions": ws_perms()}));
    let ext = agent.join("extensions/echo");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::copy(&bin, ext.join("ext_echo")).unwrap();
    std::fs::write(
        ext.join("extension.json"),
        r#"{"name": "echo", "exec": "./ext_echo", "language": "rust"}"#,
    )
    .unwrap();
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([{"name": "echo", "arguments": {"text": "hi there"}}]),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(results(&out)[0], ("echo: hi there".into(), false));
}

/// Extensions are reloaded after `entry.pre`.
#[test]
fn reloaded_after_pre() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = probe_agent(&w, "prey", "normal", ws_perms());
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(agent.join("manifest.json")).unwrap()).unwrap();
    m["entry"] = json!({"pre": "!true"});
    std::fs::write(agent.join("manifest.json"), m.to_string()).unwrap();
    let out = run_calls(&w, &agent, &[], json!([probe("sleep", json!({"s": 0}))]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(results(&out)[0].0, "SLEPT");
    let starts = data_dir(&w, "prey", "probe").join("starts");
    assert_eq!(std::fs::read_to_string(starts).unwrap(), "xx");
}

/// A broken extension ends with a clear error: no `ready` in 3 s, a first
/// frame that is not `hello`, an oversized or malformed frame, a crash
/// (its tools are removed and the model is told).
#[test]
fn broken_extensions_end_with_a_clear_error() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let t = Instant::now();
    let agent = probe_agent(&w, "noready", "noready", ws_perms());
    let out = run_calls(&w, &agent, &[], json!([probe("sleep", json!({"s": 0}))]));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("extension probe: not started: no `ready` within 3 s"),
        "{err}"
    );
    assert!(t.elapsed() >= Duration::from_secs(3));
    assert!(
        results(&out)[0].0.contains("unknown tool"),
        "{:?}",
        results(&out)
    );

    let agent = probe_agent(&w, "nohello", "nohello", ws_perms());
    let out = run_calls(&w, &agent, &[], json!([]));
    let err = text(&out.stderr);
    assert!(
        err.contains("its first frame must be `hello`, got `ready`"),
        "{err}"
    );

    for (mode, want) in [
        ("oversize", "frame larger than 4 MiB"),
        ("malformed", "malformed frame (not JSON"),
        ("crash", "exited with code 3"),
    ] {
        let agent = probe_agent(&w, mode, mode, ws_perms());
        let out = run_calls(
            &w,
            &agent,
            &[],
            json!([
                probe("sleep", json!({"s": 0})),
                probe("sleep", json!({"s": 0}))
            ]),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{mode}: {err}");
        let r = results(&out);
        assert!(
            r[0].1
                && r[0].0.contains("extension probe stopped")
                && r[0].0.contains(want)
                && r[0].0.contains("no longer available: probe"),
            "{mode}: {r:?}"
        );
        assert!(r[1].1 && r[1].0.contains("not available"), "{mode}: {r:?}");
        assert!(err.contains("extension probe stopped"), "{mode}: {err}");
        // The model is offered the tool no more.
        let ev = events(&out);
        assert_eq!(of_type(&ev, "turn_end").len(), 1);
    }
}

/// An intercept that does not answer in 5 s lets the call go on; an
/// extension that ignores `shutdown` and TERM is killed (2 s, then TERM,
/// KILL after 1 s) and leaves no process.
#[test]
fn intercept_and_shutdown_timeouts() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = probe_agent(&w, "slowi", "slowintercept", ws_perms());
    let t = Instant::now();
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([{"name": "read", "arguments": {"path": "README.md"}}]),
    );
    let err = text(&out.stderr);
    assert!(t.elapsed() >= Duration::from_secs(5));
    assert!(
        err.contains("no answer to the tool_call intercept within 5 s"),
        "{err}"
    );
    assert_eq!(
        results(&out)[0],
        ("hello from the workspace\n".into(), false)
    );

    let agent = probe_agent(&w, "stubborn", "stubborn", ws_perms());
    let t = Instant::now();
    let out = run_calls(&w, &agent, &[], json!([probe("sleep", json!({"s": 0}))]));
    let took = t.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(12),
        "{took:?}"
    );
    let script = agent.join("extensions/probe/probe.py");
    let left: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&*script.to_string_lossy()))
        })
        .collect();
    assert!(left.is_empty(), "extension processes left: {left:?}");
}

/// An invalid `extension.json` refuses the agent, naming the file and the
/// field, before anything is created.
#[test]
fn invalid_extension_manifest_is_refused() {
    let w = World::new();
    let agent = probe_agent(&w, "badext", "normal", ws_perms());
    std::fs::write(
        agent.join("extensions/probe/extension.json"),
        r#"{"name": "probe", "exec": "../../outside"}"#,
    )
    .unwrap();
    let out = w.run(&["run", s(&agent), "-y", "--print", "hi"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("extensions/probe/extension.json") && err.contains("exec"),
        "{err}"
    );
    assert!(!w.zot_home.join("agents/badext").exists());
    let out = w.run(&["validate", s(&agent)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("exec"), "{}", text(&out.stdout));
}

/// A backend that cannot enforce the agent's policy refuses the agent
/// with the reason; the extension never runs unconfined.
#[test]
fn unconfinable_host_refuses_the_agent() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    let agent = probe_agent(&w, "noland", "normal", ws_perms());
    let out = run_calls(
        &w,
        &agent,
        &["--backend", "landlock"],
        json!([probe("sleep", json!({"s": 0}))]),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("extension probe cannot be confined here") && err.contains("landlock"),
        "{err}"
    );
    assert!(of_type(&events(&out), "tool_result").is_empty());
    assert!(!data_dir(&w, "noland", "probe").join("starts").exists());
}

/// The interactive mode: `/help` lists an extension's command, typing it
/// sends `command_invoked` and shows the response (sanitised); a `submit`
/// runs as a user turn.
#[test]
fn interactive_commands_and_submit() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let agent = probe_agent(&w, "talker", "normal", ws_perms());
    let script = w.script(
        "talk.json",
        json!([
            {"text": "", "tool_calls": [probe("submit", json!({"text": "from the extension"}))]},
            {"text": "first done"},
            {"text": "answered the submission"}
        ]),
    );
    let mut c = w.cmd(&["run", s(&agent), "-y", "--sim-script", s(&script)]);
    c.env("TERM", "xterm-256color");
    let mut p = Pty::spawn(c);
    p.expect("Ctrl-D quits");
    p.line("/help");
    p.expect("/probe-cmd");
    p.expect("a test command ^[[2J");
    p.line("/probe-cmd some args");
    p.expect("probe-cmd got some args");
    p.line("go");
    p.expect("first done");
    p.expect("answered the submission");
    // `/cd` changes the policy: the extensions are started again in it.
    std::fs::create_dir(w.ws.join("sub")).unwrap();
    p.line("/cd sub");
    p.expect("workspace is now");
    p.at_prompt("talker> ", CTRL_D);
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    let starts = data_dir(&w, "talker", "probe").join("starts");
    assert_eq!(std::fs::read_to_string(starts).unwrap(), "xx");
}

/// `net.allow` and `env.read` apply to an extension as to the agent's bash:
/// the listed host answers through the proxy, an unlisted one is refused;
/// exactly the listed variables arrive, never a provider key.
#[test]
fn net_allow_and_env_read_apply_to_extensions() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    let port = common::origin("hello from the origin");
    let agent = probe_agent(
        &w,
        "netter",
        "normal",
        json!({"fs": {"read": ["${workspace}"]}, "bash": {"mode": "none"},
               "net": {"allow": [format!("127.0.0.1:{port}")]},
               "env": {"read": ["MYAPP_*", "OPENAI_*"]}}),
    );
    let script = w.script(
        "net.json",
        json!([{"text": "", "tool_calls": [
            probe("http", json!({"url": format!("http://127.0.0.1:{port}/x")})),
            probe("http", json!({"url": format!("http://127.0.0.2:{port}/x")})),
            probe("env", json!({}))]}, {"text": "done"}]),
    );
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--no-session",
            "--sim-script",
            s(&script),
            "go",
        ])
        .env("MYAPP_A", "a-value")
        .env("ZOT_UNSEEN", "unseen")
        .env("OPENAI_API_KEY", "sk-PROVIDER-SECRET-4242")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = results(&out);
    assert_eq!(r[0].0, "HTTP:200:hello from the origin", "{r:?}");
    assert!(
        r[1].0.starts_with("HTTP:403") || r[1].0.starts_with("ERR:"),
        "{r:?}"
    );
    assert!(r[2].0.contains("\"MYAPP_A\": \"a-value\""), "{}", r[2].0);
    assert!(r[2].0.contains("HTTP_PROXY"), "{}", r[2].0);
    assert!(
        !r[2].0.contains("ZOT_UNSEEN") && !r[2].0.contains("sk-PROVIDER"),
        "{}",
        r[2].0
    );
}

/// The consent prompt lists the bundled extensions (their text sanitised);
/// the receipt covers the extension's files: changing one asks again.
#[test]
fn consent_lists_extensions_and_covers_their_files() {
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    // (bash `ask` consent is never cached: none here.)
    let agent = probe_agent(
        &w,
        "consented",
        "normal",
        json!({"fs": {"read": ["${workspace}"]}, "bash": {"mode": "none"}}),
    );
    std::fs::write(
        agent.join("extensions/probe/extension.json"),
        json!({"name": "probe", "exec": "./probe.py", "args": ["normal"],
               "description": "probes \u{1b}]0;pwned\u{7}"})
        .to_string(),
    )
    .unwrap();
    let args = ["run", s(&agent), "--no-session", "--print", "hi"];
    let mut p = Pty::spawn(w.cmd(&args));
    p.expect("extension: probe (extensions/probe): ./probe.py normal - probes ^[]0;pwned^G");
    p.expect("Allow?");
    p.line("y");
    let (_, code) = p.finish();
    assert_eq!(code, Some(0), "{}", p.transcript);
    assert!(!p.transcript.contains("\u{1b}]0;pwned"), "{}", p.transcript);
    // The receipt names the extensions of the artifact approved.
    let receipts: Vec<_> = std::fs::read_dir(w.zot_home.join("agents/consented/consents"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        receipts.len() == 1 && receipts[0].contains("probe (extensions/probe): ./probe.py normal"),
        "{receipts:?}"
    );
    // The receipt: no question now.
    let out = w.run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A changed extension file is another artifact: consent again.
    let py = agent.join("extensions/probe/probe.py");
    let mut src = std::fs::read_to_string(&py).unwrap();
    src.push_str("\n# changed\n");
    std::fs::write(&py, src).unwrap();
    let out = w.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--yes"), "{}", text(&out.stderr));
}

/// A symlink planted in the agent's data dir (its own commands may write
/// there) never becomes the extension's writable data dir.
#[test]
fn planted_data_dir_symlink_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    if !python_ok() {
        return;
    }
    let w = World::new();
    let agent = probe_agent(&w, "planted", "normal", ws_perms());
    let data = data_dir(&w, "planted", "probe");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    let ssh = w.home.join(".ssh");
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&ssh, &data).unwrap();
    let out = run_calls(
        &w,
        &agent,
        &[],
        json!([probe("write", json!({"path": ssh.join("authorized_keys")}))]),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a directory"), "{err}");
    assert!(!ssh.join("authorized_keys").exists());
    assert_eq!(
        std::fs::metadata(&ssh).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

/// Against a network model (an OpenAI-compatible fake server) holding a
/// real-looking key: the extension's tool is offered and answers; from
/// inside it neither the key (environment, `/proc`) nor a credential in
/// HOME is reachable.
#[test]
fn network_model_calls_an_extension_tool() {
    use common::fake_llm::{openai, FakeServer, Reply};
    if !python_ok() {
        return;
    }
    let w = World::new();
    if !sandbox_works(&w) {
        return;
    }
    const KEY: &str = "sk-proj-Zq3vT8xK1mN4pR7sW0yB2cD5fG9hJ6kL3nP8qS1tV4wX7zA0bC3eF6gH9";
    let srv = FakeServer::script(vec![
        Reply::sse(openai::tool_calls(&[
            ("c1", "probe", json!({"op": "env"})),
            ("c2", "probe", json!({"op": "proc_scan", "needle": KEY})),
            (
                "c3",
                "probe",
                json!({"op": "read", "path": w.home.join(".ssh/id_rsa")}),
            ),
            ("c4", "probe", json!({"op": "sleep", "s": 0})),
        ])),
        Reply::sse(openai::text(&["done"])),
    ]);
    let agent = probe_agent(&w, "netmodel", "normal", ws_perms());
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--no-session",
            "--model",
            "gpt-5",
            "go",
        ])
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", srv.v1())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = results(&out);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(
        r[0].0.starts_with("ENV:") && !r[0].0.contains(KEY),
        "{}",
        r[0].0
    );
    assert_eq!(r[1].0, "NOTFOUND");
    assert!(
        r[2].0.starts_with("ERR:") && !r[2].0.contains("FAKE-PRIVATE-KEY"),
        "{}",
        r[2].0
    );
    assert_eq!(r[3], ("SLEPT".into(), false));
    // The tool was offered to the model, the shadowed one was not doubled.
    let req = srv.requests()[0].json();
    let names: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"probe"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "read").count(),
        1,
        "{names:?}"
    );
}
