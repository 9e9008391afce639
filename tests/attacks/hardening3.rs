//! Attacks of the third hardening round: credentials named by the
//! environment and XDG, zot's own state, the file tools inside zot's own
//! process, kernel notification channels, resource limits, and the
//! landlock backend's controls (own sockets, /tmp).
//!
//! Each attack first runs unconfined (`danger-full-access`, or the host
//! itself) and must succeed there, then confined, where it must not; a
//! control next to it must keep working.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use super::{
    chown_r, expect_blocked, expect_ok, is_root, make_open, q, run_limited, text, Ctx, NOBODY,
    PYTHON,
};

/// `sh -c script` in the sandbox with variables added to zot's own
/// environment (the caller's, which names the credentials).
fn sh_env(ctx: &Ctx, mode: &str, env: &[(&str, String)], script: &str) -> Output {
    let mut cmd = ctx.zot();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(ctx.sandbox_args(mode))
        .args(["--", "/bin/sh", "-c", script]);
    run_limited(cmd, Duration::from_secs(30))
}

fn write_marker(p: &Path, marker: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    // A comment: valid in a config file zot reads too.
    std::fs::write(p, format!("# {marker}\n")).unwrap();
}

fn own_all(ctx: &Ctx, p: &Path) {
    make_open(p);
    if ctx.unpriv && is_root() {
        chown_r(p, NOBODY);
    }
}

/// A script that prints every file of `files` it can read, then BLOCKED.
fn cat_all(files: &[PathBuf]) -> String {
    let mut s = String::new();
    for f in files {
        s.push_str(&format!("cat {} 2>/dev/null; ", q(f)));
    }
    s.push_str("echo BLOCKED");
    s
}

fn assert_unconfined_reads(ctx: &Ctx, o: &Output, marker: &str, n: usize, what: &str) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.matches(marker).count(),
        n,
        "[{}] unconfined, {what} must be readable:\n{}",
        ctx.backend,
        text(o)
    );
}

fn assert_none_read(ctx: &Ctx, o: &Output, marker: &str, what: &str) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains(marker),
        "[{} unpriv={}] {what} readable:\n{}",
        ctx.backend,
        ctx.unpriv,
        text(o)
    );
    expect_blocked(ctx, what, o);
}

// ------------------------------------------------------------ class 1

/// Files and directories that variables name, outside every default
/// place, `:`-lists, relative values, and variables named by what they
/// hold rather than listed.
pub fn creds_named_by_environment(ctx: &Ctx) {
    let m = "ENV-CREDENTIAL-MARKER";
    let c = ctx.outside.join("creds");
    let files: Vec<(&str, &str)> = vec![
        ("GOOGLE_APPLICATION_CREDENTIALS", "gcp/sa.json"),
        ("AWS_SHARED_CREDENTIALS_FILE", "aws/creds"),
        ("AWS_CONFIG_FILE", "aws/conf"),
        ("NETRC", "net/rc"),
        ("PGPASSFILE", "pg/pass"),
        ("TF_CLI_CONFIG_FILE", "tf/rc"),
        ("ACME_DEPLOY_TOKEN_FILE", "acme/token"),
        ("SERVICE_PRIVATE_KEY_PATH", "svc/key.pem"),
    ];
    let dirs: Vec<(&str, &str)> = vec![
        ("DOCKER_CONFIG", "docker/config.json"),
        ("DOCKER_CERT_PATH", "dcerts/key.pem"),
        ("GNUPGHOME", "gpg/private-keys-v1.d/k.key"),
        ("CLOUDSDK_CONFIG", "gcloud/credentials.db"),
        ("AZURE_CONFIG_DIR", "az/msal_token_cache.json"),
    ];
    let mut env: Vec<(&str, String)> = Vec::new();
    let mut targets = Vec::new();
    for (k, rel) in &files {
        let p = c.join(rel);
        write_marker(&p, m);
        env.push((k, p.display().to_string()));
        targets.push(p);
    }
    for (k, rel) in &dirs {
        let p = c.join(rel);
        write_marker(&p, m);
        let top = c.join(rel.split('/').next().unwrap());
        env.push((k, top.display().to_string()));
        targets.push(p);
    }
    // A relative value: against the working directory (the workspace, a
    // credential in it is denied all the same).
    let rel = ctx.ws.join("tokens/web-id");
    write_marker(&rel, m);
    env.push(("AWS_WEB_IDENTITY_TOKEN_FILE", "tokens/web-id".into()));
    targets.push(rel.clone());
    let pass = c.join("pulumi/passphrase");
    write_marker(&pass, m);
    env.push(("PULUMI_CONFIG_PASSPHRASE_FILE", pass.display().to_string()));
    targets.push(pass);
    // KUBECONFIG is a list.
    let (k1, k2) = (c.join("kube/a"), c.join("kube/b"));
    write_marker(&k1, m);
    write_marker(&k2, m);
    env.push(("KUBECONFIG", format!("{}:{}", k1.display(), k2.display())));
    targets.extend([k1, k2]);
    // Pulumi's home and Docker's TLS keys in the default places.
    for rel in [".pulumi/credentials.json", ".docker/key.pem"] {
        let p = ctx.home.join(rel);
        write_marker(&p, m);
        targets.push(p);
    }
    own_all(ctx, &ctx.outside);
    own_all(ctx, &ctx.home);
    own_all(ctx, &ctx.ws);
    let script = cat_all(&targets);
    let o = sh_env(ctx, "danger-full-access", &env, &script);
    assert_unconfined_reads(ctx, &o, m, targets.len(), "every named credential");
    for mode in ["workspace-write", "read-only"] {
        // Landlock cannot take a path out of a writable root (documented):
        // the workspace's credential is checked in read-only mode there.
        let script = if ctx.backend == "landlock" && mode == "workspace-write" {
            let outside: Vec<PathBuf> = targets.iter().filter(|t| **t != rel).cloned().collect();
            cat_all(&outside)
        } else {
            script.clone()
        };
        let o = sh_env(ctx, mode, &env, &script);
        assert_none_read(
            ctx,
            &o,
            m,
            &format!("a credential named by a variable ({mode})"),
        );
    }
    // Control: the rest of the directory around them stays readable.
    std::fs::write(c.join("public.txt"), "PUBLIC\n").unwrap();
    own_all(ctx, &c);
    let o = sh_env(
        ctx,
        "workspace-write",
        &env,
        &format!("cat {}", q(&c.join("public.txt"))),
    );
    expect_ok(ctx, "read a file next to the credentials", &o);
}

/// The built-in stores where XDG_CONFIG_HOME, XDG_DATA_HOME and
/// XDG_STATE_HOME move them.
pub fn creds_under_xdg(ctx: &Ctx) {
    let m = "XDG-CREDENTIAL-MARKER";
    let x = ctx.outside.join("xdg");
    let targets = vec![
        x.join("config/gh/hosts.yml"),
        x.join("config/gcloud/application_default_credentials.json"),
        x.join("config/git/credentials"),
        x.join("config/containers/auth.json"),
        x.join("data/keyrings/login.keyring"),
    ];
    for t in &targets {
        write_marker(t, m);
    }
    own_all(ctx, &ctx.outside);
    let env = vec![
        ("XDG_CONFIG_HOME", x.join("config").display().to_string()),
        ("XDG_DATA_HOME", x.join("data").display().to_string()),
        ("XDG_STATE_HOME", x.join("state").display().to_string()),
    ];
    let script = cat_all(&targets);
    let o = sh_env(ctx, "danger-full-access", &env, &script);
    assert_unconfined_reads(ctx, &o, m, targets.len(), "the XDG stores");
    let o = sh_env(ctx, "workspace-write", &env, &script);
    assert_none_read(ctx, &o, m, "a credential store under XDG");
}

/// zot's own state and configuration: `$ZOT_HOME`, the XDG state,
/// config, data and cache dirs, whichever is in use.
pub fn zot_state_unreadable(ctx: &Ctx) {
    let m = "ZOT-STATE-MARKER";
    let z = ctx.outside.join("zot-home");
    let x = ctx.outside.join("xdg2");
    let targets = vec![
        z.join("sessions/agents/a/s1.jsonl"),
        z.join("agents/a/consents/receipt.json"),
        z.join("keys/trusted.pub"),
        z.join("config.toml"),
        x.join("state/zot/journal/x.jsonl"),
        x.join("config/zot/config.toml"),
        x.join("cache/zot/index/cache.bin"),
        ctx.home.join(".local/state/zot/sessions/s.jsonl"),
        ctx.home.join(".config/zot/config.toml"),
        ctx.home.join(".cache/zot/x"),
    ];
    for t in &targets {
        write_marker(t, m);
    }
    own_all(ctx, &ctx.outside);
    own_all(ctx, &ctx.home);
    let env = vec![
        ("ZOT_HOME", z.display().to_string()),
        ("XDG_STATE_HOME", x.join("state").display().to_string()),
        ("XDG_CONFIG_HOME", x.join("config").display().to_string()),
        ("XDG_CACHE_HOME", x.join("cache").display().to_string()),
    ];
    let script = format!(
        "ls {} 2>/dev/null; {}",
        q(&z.join("sessions/agents/a")),
        cat_all(&targets)
    );
    let o = sh_env(ctx, "danger-full-access", &env, &script);
    assert_unconfined_reads(ctx, &o, m, targets.len(), "zot's state");
    for mode in ["workspace-write", "read-only"] {
        let o = sh_env(ctx, mode, &env, &script);
        assert_none_read(ctx, &o, m, &format!("zot's own state ({mode})"));
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("s1.jsonl"),
            "{}",
            text(&o)
        );
    }
    // Without ZOT_HOME and XDG: the defaults under HOME.
    let o = sh_env(ctx, "workspace-write", &[], &cat_all(&targets[7..]));
    assert_none_read(ctx, &o, m, "zot's own state (defaults)");
}

/// The workspace is `$HOME`: a credential in it is still denied (deny-read
/// beats the grant); everything else in it stays writable.
pub fn creds_inside_workspace_home(ctx: &Ctx) {
    let m = "HOME-WS-MARKER";
    let ws = &ctx.ws;
    let targets = vec![
        ws.join(".ssh/id_ed25519"),
        ws.join(".aws/credentials"),
        ws.join(".config/gh/hosts.yml"),
        ws.join(".local/state/zot/sessions/s.jsonl"),
        ws.join("proj/.kube/config"),
    ];
    for t in &targets {
        write_marker(t, m);
    }
    own_all(ctx, ws);
    let env = vec![
        ("HOME", ws.display().to_string()),
        (
            "KUBECONFIG",
            ws.join("proj/.kube/config").display().to_string(),
        ),
    ];
    let script = cat_all(&targets);
    let o = sh_env(ctx, "danger-full-access", &env, &script);
    assert_unconfined_reads(ctx, &o, m, targets.len(), "credentials in the workspace");
    let o = sh_env(ctx, "workspace-write", &env, &script);
    assert_none_read(ctx, &o, m, "a credential inside a workspace that is $HOME");
    let o = sh_env(
        ctx,
        "workspace-write",
        &env,
        "echo ok > made.txt && cat made.txt readme.txt && mkdir -p proj/src && echo x > proj/src/a",
    );
    expect_ok(ctx, "write in a workspace that is $HOME", &o);
    assert!(ws.join("proj/src/a").exists());
}

// ------------------------------------------------------------ class 7

/// The agent's file tools run in zot's own process: `/proc/self`,
/// `/proc/thread-self`, `/proc/<zot's pid>`, `/dev/fd`, and a hard link
/// to one of zot's own files are refused; the workspace stays readable.
pub fn file_tools_refuse_zot_itself(unpriv: bool) {
    use crate::common::run::{events, of_type, s, World};
    use serde_json::json;
    if unpriv && !is_root() {
        eprintln!("SKIP: the unprivileged variant needs root to switch user");
        return;
    }
    let w = if unpriv {
        World::unprivileged()
    } else {
        World::new()
    };
    let agent = w.agent(
        "reader",
        json!({"permissions": {"fs": {"read": ["/"], "write": ["${workspace}"]}, "bash": {"mode": "none"}}}),
    );
    // A first run makes a session file; a hard link to it goes in the
    // workspace (as a command of an earlier run, or another program, could).
    let script = w.script("first.json", json!([{"text": "hi"}]));
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--sim-script",
            s(&script),
            "first",
        ])
        .env("ZOT_TEST_PROVIDER_KEY", "PROVIDER-KEY-MARKER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut session = None;
    let mut stack = vec![w.zot_home.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("first"))
            {
                session = Some(p);
            }
        }
    }
    let session = session.expect("the first run's session file");
    let link = w.ws.join("notes.jsonl");
    std::fs::hard_link(&session, &link).unwrap();
    // Unconfined: the link is the session.
    assert!(std::fs::read_to_string(&link).unwrap().contains("first"));
    std::fs::write(w.ws.join("a.txt"), "A-CONTENT\n").unwrap();
    std::fs::hard_link(w.ws.join("a.txt"), w.ws.join("b.txt")).unwrap();
    let calls = json!([
        {"text": "x", "tool_calls": [
            {"name": "read", "arguments": {"path": "/proc/self/environ"}},
            {"name": "read", "arguments": {"path": "/proc/thread-self/environ"}},
            {"name": "read", "arguments": {"path": "/proc/self/cmdline"}},
            {"name": "read", "arguments": {"path": "/dev/fd/0"}},
            {"name": "read", "arguments": {"path": "/dev/stdin"}},
            {"name": "read", "arguments": {"path": "/proc/self/root/proc/self/environ"}},
            {"name": "read", "arguments": {"path": "notes.jsonl"}},
            {"name": "grep", "arguments": {"pattern": "PROVIDER-KEY-MARKER|first", "path": "/proc/self"}},
            {"name": "grep", "arguments": {"pattern": "PROVIDER-KEY-MARKER|\"first\"", "path": "."}},
            {"name": "glob", "arguments": {"pattern": "*/environ", "path": "/proc/self/task"}},
            {"name": "write", "arguments": {"path": "/proc/self/comm", "content": "evil"}},
            {"name": "read", "arguments": {"path": "a.txt"}},
            {"name": "read", "arguments": {"path": "b.txt"}}
        ]},
        {"text": "done"}
    ]);
    let script = w.script("attack.json", calls);
    let out = w
        .cmd(&[
            "run",
            s(&agent),
            "-y",
            "--json",
            "--sim-script",
            s(&script),
            "go",
        ])
        .env("ZOT_TEST_PROVIDER_KEY", "PROVIDER-KEY-MARKER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    assert_eq!(r.len(), 13, "{ev:?}");
    for (i, res) in r.iter().enumerate().take(11) {
        let c = res["content"].as_str().unwrap_or_default();
        assert!(
            !c.contains("PROVIDER-KEY-MARKER")
                && !c.contains("\"first\"")
                && !c.contains("--sim-script"),
            "tool call {i} read zot itself: {res}"
        );
        if i < 7 || i == 10 {
            assert_eq!(
                res["is_error"], true,
                "tool call {i} must be refused: {res}"
            );
        }
    }
    // Controls: the workspace's files, hard-linked ones too.
    for res in &r[11..] {
        assert_eq!(res["is_error"], false, "{res}");
        assert_eq!(res["content"], "A-CONTENT\n", "{res}");
    }
    // The host's own view: the environment really holds the key.
    assert!(std::fs::read_to_string("/proc/self/environ").is_ok());
}

// ------------------------------------------------------------ class 8

/// Control: what ordinary programs do with temp dirs and their own
/// sockets works on every backend (landlock included): files and unix
/// sockets in `/tmp`, `$TMPDIR` and the workspace, `/dev/shm`, `mktemp`.
pub fn control_tmp_and_own_sockets(ctx: &Ctx) {
    let prog = r#"
import os, socket, tempfile, threading
tmp = os.environ.get('TMPDIR', '/tmp')
for d in ['/tmp', tmp, os.getcwd()]:
    p = os.path.join(d, 'own-%d.sock' % os.getpid())
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
    c = socket.socket(socket.AF_UNIX); c.connect(p)
    a, _ = s.accept(); c.sendall(b'ping'); assert a.recv(4) == b'ping'
    u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); q = p + '.d'; u.bind(q)
    v = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); v.sendto(b'dg', q); assert u.recv(2) == b'dg'
    for x in (s, c, a, u, v): x.close()
    os.unlink(p); os.unlink(q)
l, r = socket.socketpair(); l.sendall(b'x'); assert r.recv(1) == b'x'
with tempfile.NamedTemporaryFile() as f:
    f.write(b'x'); f.flush()
with open('/dev/shm/zot-own-%d' % os.getpid(), 'w') as f:
    f.write('x')
os.unlink('/dev/shm/zot-own-%d' % os.getpid())
open('/tmp/zot-own-file-%d' % os.getpid(), 'w').write('x')
os.unlink('/tmp/zot-own-file-%d' % os.getpid())
print('OK')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_ok(ctx, "temp dirs and own unix sockets", &o);
    let o = ctx.sh(
        "workspace-write",
        &[],
        "f=$(mktemp) && echo x > \"$f\" && cat \"$f\" && rm \"$f\" && d=$(mktemp -d) && touch \"$d/a\" && rm -r \"$d\"",
    );
    expect_ok(ctx, "mktemp", &o);
}

/// A host program's unix socket in `/tmp` (shared with the host on
/// landlock) is not reachable, with the network off or on.
pub fn host_socket_in_tmp(ctx: &Ctx) {
    // One path per call: the suites of every backend run this at once.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let path = PathBuf::from(format!(
        "/tmp/zot-h3-host-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    l.set_nonblocking(true).unwrap();
    let prog = format!(
        r#"
import socket
for kind in (socket.SOCK_STREAM,):
    c = socket.socket(socket.AF_UNIX, kind)
    try:
        c.connect({p:?}); c.sendall(b'hi'); print('ESCAPED')
    except OSError as e:
        print('refused', e)
print('BLOCKED')
"#,
        p = path.display().to_string()
    );
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("danger-full-access"))
        .args(["--", PYTHON, "-c", &prog]);
    let o = run_limited(cmd, Duration::from_secs(30));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ESCAPED"),
        "unconfined, the host socket must be reachable:\n{}",
        text(&o)
    );
    for extra in [&[][..], &["--net"][..]] {
        let o = ctx.py("workspace-write", extra, &prog);
        expect_blocked(
            ctx,
            &format!("connect to a host socket in /tmp {extra:?}"),
            &o,
        );
    }
    drop(l);
    let _ = std::fs::remove_file(&path);
}

// ------------------------------------------------------------ class 6

/// fanotify marks on a readable host file report other processes'
/// accesses to it: `fanotify_init` is refused.
pub fn fanotify_refused(ctx: &Ctx) {
    let (init, mark) = if cfg!(target_arch = "aarch64") {
        (262, 263)
    } else {
        (300, 301)
    };
    let watched = ctx.outside.join("victim");
    let prog = format!(
        r#"
import ctypes, os, select, sys
libc = ctypes.CDLL(None, use_errno=True)
# FAN_CLASS_NOTIF | FAN_REPORT_FID: what an unprivileged caller may ask.
fd = libc.syscall({init}, 0x200, os.O_RDONLY)
if fd < 0:
    print('fanotify_init refused', ctypes.get_errno()); print('BLOCKED'); sys.exit(0)
r = libc.syscall({mark}, fd, 1, ctypes.c_uint64(0x21), ctypes.c_int(-100), {path:?}.encode())
if r < 0:
    print('fanotify_mark refused', ctypes.get_errno()); print('BLOCKED'); sys.exit(0)
ready, _, _ = select.select([fd], [], [], 4)
print('ESCAPED: saw a host access' if ready else 'no event'); print('BLOCKED')
"#,
        path = watched.display().to_string()
    );
    // The host keeps reading the file while the program watches.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let w2 = watched.clone();
    let reader = std::thread::spawn(move || {
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = std::fs::read(&w2);
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("danger-full-access"))
        .args(["--", PYTHON, "-c", &prog]);
    let un = run_limited(cmd, Duration::from_secs(30));
    let confined: Vec<Output> = ["workspace-write", "read-only"]
        .iter()
        .map(|m| ctx.py(m, &[], &prog))
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert!(
        String::from_utf8_lossy(&un.stdout).contains("ESCAPED"),
        "unconfined, fanotify must see the host's access:\n{}",
        text(&un)
    );
    for o in &confined {
        expect_blocked(ctx, "fanotify on a readable host file", o);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("fanotify_init refused"),
            "{}",
            text(o)
        );
    }
}

// ------------------------------------------------------------ class 5

/// The process limit counts threads, and is exact for uid 0 too (its PID
/// namespace's counter starts above the reserved PIDs).
pub fn process_limit_counts_threads_exactly(ctx: &Ctx) {
    let prog = r#"
import threading, os, time
ev = threading.Event(); ts = []
try:
    while len(ts) < 120:
        t = threading.Thread(target=ev.wait); t.start(); ts.append(t)
except Exception:
    pass
print('threads', len(ts))
ev.set()
for t in ts: t.join()
pids = []
try:
    while len(pids) < 120:
        pid = os.fork()
        if pid == 0:
            time.sleep(5); os._exit(0)
        pids.append(pid)
except OSError:
    pass
print('forks', len(pids))
for p in pids: os.kill(p, 9)
"#;
    let count = |o: &Output, what: &str| -> usize {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix(what)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {what} count:\n{}", text(o)))
    };
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("danger-full-access"))
        .args(["--", PYTHON, "-c", prog]);
    let o = run_limited(cmd, Duration::from_secs(60));
    assert!(count(&o, "threads ") >= 100, "{}", text(&o));
    let o = ctx.py("workspace-write", &["--max-procs", "64"], prog);
    expect_ok(ctx, "threads and processes up to the limit", &o);
    for what in ["threads ", "forks "] {
        let n = count(&o, what);
        // The program itself is one of the 64; the control: it gets close.
        assert!(
            (48..=63).contains(&n),
            "[{} {}] {what}{n} with --max-procs 64:\n{}",
            ctx.backend,
            ctx.unpriv,
            text(&o)
        );
    }
}

/// Memory: where a cgroup controller is usable (root on a v1 host, a
/// delegated v2 subtree) `--memory` binds all the command's processes
/// together; elsewhere the report says it is not enforced.
pub fn memory_limit_or_reported(ctx: &Ctx) {
    let prog = r#"
import os
# Two processes of 60 MiB each: over the 100 MiB of the group together.
pid = os.fork()
x = [bytearray(1 << 20) for _ in range(60)]
for b in x: b[0] = 1
if pid == 0:
    import time; time.sleep(0.3); os._exit(0)
y = [bytearray(1 << 20) for _ in range(60)]
os.waitpid(pid, 0)
print('ESCAPED: 120 MiB in use')
"#;
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("danger-full-access"))
        .args(["--", PYTHON, "-c", prog]);
    let o = run_limited(cmd, Duration::from_secs(60));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ESCAPED"),
        "unconfined the program runs:\n{}",
        text(&o)
    );
    let o = ctx.py("workspace-write", &["--memory", "100M", "--report"], prog);
    let err = String::from_utf8_lossy(&o.stderr);
    let enforced = err.contains("cgroup: memory 100 MiB");
    let usable = is_root() && !ctx.unpriv && Path::new("/sys/fs/cgroup/memory").is_dir();
    if enforced {
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("ESCAPED") && o.status.code() != Some(0),
            "[{} {}] the memory limit did not bind:\n{}",
            ctx.backend,
            ctx.unpriv,
            text(&o)
        );
        // Control: within the limit the same program works.
        let o = ctx.py("workspace-write", &["--memory", "1G"], prog);
        expect_ok(ctx, "memory within the limit", &o);
    } else {
        assert!(
            !usable,
            "a v1 memory controller as root must be used:\n{}",
            text(&o)
        );
        assert!(err.contains("memory not enforced"), "{}", text(&o));
    }
}

/// Each private tmpfs has an inode limit, not only a size: empty files
/// cannot fill the kernel's memory.
pub fn tmpfs_inode_limit(ctx: &Ctx) {
    let prog = r#"
import os
n = 0
for d in ['/tmp', '/dev/shm']:
    k = 0
    try:
        while k < 1000:
            open(os.path.join(d, 'e%d' % k), 'w').close(); k += 1
    except OSError as e:
        pass
    print(d, k)
"#;
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("danger-full-access")).args([
        "--",
        PYTHON,
        "-c",
        &prog
            .replace("/tmp", ctx.outside.join("many").to_str().unwrap())
            .replace("'/dev/shm'", ""),
    ]);
    std::fs::create_dir_all(ctx.outside.join("many")).unwrap();
    own_all(ctx, &ctx.outside);
    let o = run_limited(cmd, Duration::from_secs(60));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(" 1000"),
        "unconfined, 1000 empty files fit:\n{}",
        text(&o)
    );
    let o = ctx.py("workspace-write", &["--tmp-inodes", "300"], prog);
    expect_ok(ctx, "fill the tmpfs with empty files", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    for d in ["/tmp", "/dev/shm"] {
        let n: usize = out
            .lines()
            .find_map(|l| l.strip_prefix(d)?.trim().parse().ok())
            .unwrap_or(9999);
        assert!(
            (250..=300).contains(&n),
            "[{} {}] {d}: {n} files with --tmp-inodes 300:\n{}",
            ctx.backend,
            ctx.unpriv,
            text(&o)
        );
    }
}
