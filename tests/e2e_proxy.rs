//! End-to-end tests of `zot sandbox --allow-host`: the command's only way out
//! is the filtering proxy. A server on the host's loopback plays the
//! outside world (the sandbox's loopback is its own); real clients (curl,
//! python3's urllib) run inside. On the native and bwrap backends (the
//! launcher starts the bridge on both), as root and as uid 65534. A bridge
//! that outlived the command would keep bwrap's PID 1 waiting: every run
//! here also shows that it does not.
#[path = "attacks/mod.rs"]
#[allow(unused_imports)]
mod attacks;
mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use attacks::{run_limited, text, Ctx};

fn curl_present() -> bool {
    common::require(
        "curl",
        Path::new("/usr/bin/curl").exists(),
        "curl is not installed (ci/setup.sh installs it)",
    )
}

/// `sh -c script` in workspace-write with `--allow-host` for each of
/// `hosts`, the proxy's log in the fixture, TMPDIR there too (where the
/// proxy's directory is made).
fn run(ctx: &Ctx, hosts: &[String], script: &str) -> (Output, String) {
    let log = ctx.outside.join("proxy.jsonl");
    let _ = std::fs::remove_file(&log);
    let tmp = ctx.outside.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    if ctx.unpriv {
        let _ = std::process::Command::new("chown")
            .args([
                "65534:65534",
                tmp.to_str().unwrap(),
                ctx.outside.to_str().unwrap(),
            ])
            .status();
    }
    let mut cmd = ctx.zot();
    cmd.env("TMPDIR", &tmp).args([
        "sandbox",
        "--backend",
        &ctx.backend,
        "--mode",
        "workspace-write",
        "--report",
    ]);
    for h in hosts {
        cmd.args(["--allow-host", h]);
    }
    cmd.arg("--proxy-log")
        .arg(&log)
        .args(["--", "/bin/sh", "-c", script]);
    let o = run_limited(cmd, Duration::from_secs(60));
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the proxy's directory is left behind: {left:?}"
    );
    (o, std::fs::read_to_string(&log).unwrap_or_default())
}

fn listed_host_over_http_connect_and_socks5(backend: &str, unpriv: bool) {
    let Some(ctx) = Ctx::new(backend, unpriv) else {
        return;
    };
    if !curl_present() {
        return;
    }
    let port = common::origin("hello-from-outside");
    let url = format!("http://127.0.0.1:{port}/");
    let script = format!(
        "set -e
         echo http: $(curl -sS -m 10 {url})
         echo connect: $(curl -sS -m 10 -p {url})
         echo socks: $(curl -sS -m 10 -x \"$ALL_PROXY\" {url})
         echo python: $(python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\"{url}\").read().decode())')
         echo no_proxy: $(NO_PROXY=127.0.0.1 curl -sS -m 10 {url})"
    );
    let (o, log) = run(&ctx, &[format!("127.0.0.1:{port}")], &script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for what in ["http:", "connect:", "socks:", "python:"] {
        assert!(
            out.contains(&format!("{what} hello-from-outside")),
            "{what}\n{}",
            text(&o)
        );
    }
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 4, "{log}");
    for proto in ["http", "connect", "socks5"] {
        assert!(
            lines.iter().any(|r| r["proto"] == proto
                && r["decision"] == "allow"
                && r["address"] == format!("127.0.0.1:{port}")
                && r["bytes_down"].as_u64().unwrap() > 0),
            "{proto}: {log}"
        );
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("allowed 127.0.0.1:{port}")), "{err}");
}

fn unlisted_direct_and_private_refused(backend: &str, unpriv: bool) {
    let Some(ctx) = Ctx::new(backend, unpriv) else {
        return;
    };
    if !curl_present() {
        return;
    }
    let port = common::origin("secret");
    let script = format!(
        "curl -sS -m 10 -i http://127.0.0.1:{other}/ | grep -i '^x-zot-proxy-reason' || echo NO-403
         curl -sS -m 10 -i http://localhost:{port}/ | grep -i '^x-zot-proxy-reason' || echo NO-403
         curl -sS -m 10 -i http://169.254.169.254/latest/meta-data/ | grep -i '^x-zot-proxy-reason' || echo NO-403
         if curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/ 2>/dev/null | grep -q secret; then echo DIRECT-ESCAPED; else echo DIRECT-BLOCKED; fi
         python3 -c 'import socket
try:
    socket.create_connection((\"93.184.216.34\", 80), timeout=3); print(\"RAW-ESCAPED\")
except OSError as e: print(\"RAW-BLOCKED\", e)'
         if getent hosts example.com >/dev/null 2>&1; then echo DNS-WORKS; else echo NO-DNS; fi",
        other = port.wrapping_add(1).max(1),
    );
    let (o, log) = run(&ctx, &[format!("localhost:{port}")], &script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        out.contains(&format!(
            "127.0.0.1:{} is not in the sandbox's allowed hosts",
            port.wrapping_add(1).max(1)
        )),
        "{}",
        text(&o)
    );
    assert!(
        out.contains("127.0.0.1 is loopback (127.0.0.0/8), not listed"),
        "{}",
        text(&o)
    );
    assert!(
        out.contains("169.254.169.254:80 is not in the sandbox's allowed hosts"),
        "{}",
        text(&o)
    );
    assert!(!out.contains("NO-403"), "{}", text(&o));
    assert!(
        out.contains("DIRECT-BLOCKED") && out.contains("RAW-BLOCKED"),
        "{}",
        text(&o)
    );
    assert!(out.contains("NO-DNS"), "{}", text(&o));
    assert!(!out.contains("secret"), "{}", text(&o));
    assert_eq!(
        log.lines().filter(|l| l.contains("\"deny\"")).count(),
        3,
        "{log}"
    );

    // Listing the address lets the name through.
    let (o, _) = run(
        &ctx,
        &[format!("localhost:{port}"), format!("127.0.0.1:{port}")],
        &format!("curl -sS -m 10 http://localhost:{port}/"),
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "secret", "{}", text(&o));
}

#[test]
fn listed_host_native_root() {
    listed_host_over_http_connect_and_socks5("native", false)
}
#[test]
fn listed_host_native_unprivileged() {
    listed_host_over_http_connect_and_socks5("native", true)
}
#[test]
fn listed_host_bwrap_root() {
    listed_host_over_http_connect_and_socks5("bwrap", false)
}
#[test]
fn listed_host_bwrap_unprivileged() {
    listed_host_over_http_connect_and_socks5("bwrap", true)
}
#[test]
fn refusals_native_root() {
    unlisted_direct_and_private_refused("native", false)
}
#[test]
fn refusals_native_unprivileged() {
    unlisted_direct_and_private_refused("native", true)
}
#[test]
fn refusals_bwrap_root() {
    unlisted_direct_and_private_refused("bwrap", false)
}
#[test]
fn refusals_bwrap_unprivileged() {
    unlisted_direct_and_private_refused("bwrap", true)
}

/// A `zot sandbox --allow-host` killed with SIGKILL cannot remove the
/// proxy's directory; it was journaled, and the next zot command removes
/// it (its socket with it).
fn killed_run_leaves_nothing_after_the_next_command(backend: &str, unpriv: bool) {
    let Some(ctx) = Ctx::new(backend, unpriv) else {
        return;
    };
    let tmp = ctx.outside.join("tmp-killed");
    std::fs::create_dir_all(&tmp).unwrap();
    if ctx.unpriv {
        let _ = std::process::Command::new("chown")
            .args(["65534:65534", tmp.to_str().unwrap()])
            .status();
    }
    let mut cmd = ctx.zot();
    cmd.env("TMPDIR", &tmp)
        .args(["sandbox", "--backend", backend, "--allow-host", "127.0.0.1:1"])
        .args(["--", "sleep", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let entries = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect()
    };
    let mut made = Vec::new();
    for _ in 0..200 {
        made = entries();
        if made.iter().any(|d| d.join("proxy.sock").exists()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        made.iter().any(|d| d.join("proxy.sock").exists()),
        "the proxy never started: {made:?}"
    );
    // Let the sandbox start, then kill zot outright.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!entries().is_empty(), "a SIGKILLed zot cannot clean up");
    let mut next = ctx.zot();
    next.env("TMPDIR", &tmp).args(["sandbox", "--backend", backend, "--", "true"]);
    let o = run_limited(next, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(entries().is_empty(), "left behind: {:?}", entries());
}

#[test]
fn killed_run_is_swept_native_root() {
    killed_run_leaves_nothing_after_the_next_command("native", false)
}
#[test]
fn killed_run_is_swept_native_unprivileged() {
    killed_run_leaves_nothing_after_the_next_command("native", true)
}
#[test]
fn killed_run_is_swept_bwrap_root() {
    killed_run_leaves_nothing_after_the_next_command("bwrap", false)
}
#[test]
fn killed_run_is_swept_bwrap_unprivileged() {
    killed_run_leaves_nothing_after_the_next_command("bwrap", true)
}

#[test]
fn bad_rules_and_backends_without_the_bridge_are_refused() {
    let o = common::zot()
        .args([
            "sandbox",
            "--allow-host",
            "http://example.com/",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("this is a URL"),
        "{}",
        text(&o)
    );
    let o = common::zot()
        .args([
            "sandbox",
            "--net",
            "--allow-host",
            "example.com",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    for backend in ["landlock"] {
        let o = common::zot()
            .args([
                "sandbox",
                "--backend",
                backend,
                "--allow-host",
                "example.com",
                "--",
                "true",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{backend}: {}", text(&o));
    }
}
