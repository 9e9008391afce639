//! End-to-end tests of the native and landlock backends, the fallback
//! order, and `zot debug sandbox --check / --explain`.
//!
//! The full attack suite (tests/attacks/mod.rs) runs against `native` (must
//! block everything) and the part Landlock claims against `landlock`.
//! Degraded hosts are simulated without touching the host: no bwrap on
//! PATH, and no user namespaces by running zot inside `unshare -Ur` after
//! writing 0 to that namespace's own `user.max_user_namespaces`.
mod common;
#[macro_use]
#[path = "attacks/mod.rs"]
mod attacks;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

attack_tests!("native");

/// The native backend as `zot run` starts it: the launcher exec'd.
mod native_exec {
    attack_tests!("native/exec");
}

mod landlock {
    attack_tests!("landlock";
        control_write_read_inside_cwd, control_read_os_release, read_only_mode_refuses_cwd_writes,
        write_outside_cwd, write_etc, write_bashrc, read_ssh_key, symlink_preplanted, symlink_fresh,
        hardlink_from_outside, tcp_loopback, unix_socket_host_abstract, host_process_ptrace_kill_environ,
        unix_socket_host_anywhere, landlock_host_ipc,
        parent_secret_env, mount_refused, nested_userns_refused, chroot_refused, io_uring_refused,
        no_new_privs_and_seccomp_on, tiocsti_injection, output_flood_capped,
        signal_forwarding, signals_reach_the_process_group, exit_code_mapping,
        a_signal_during_start_up_is_not_lost,
        creds_named_by_environment, creds_under_xdg, zot_state_unreadable,
        control_tmp_and_own_sockets, host_socket_in_tmp, fanotify_refused,
        memory_limit_or_reported,
    );

    /// The landlock backend as `zot run` starts it: the launcher exec'd.
    mod exec {
        attack_tests!("landlock/exec";
            control_write_read_inside_cwd, write_outside_cwd, write_etc, read_ssh_key,
            tcp_loopback, unix_socket_host_abstract, host_process_ptrace_kill_environ,
            parent_secret_env, mount_refused, nested_userns_refused, no_new_privs_and_seccomp_on,
            tiocsti_injection, signal_forwarding, signals_reach_the_process_group,
            a_signal_during_start_up_is_not_lost,
            exit_code_mapping, control_tmp_and_own_sockets, host_socket_in_tmp,
        );
    }
}

/// The agent's file tools run inside zot's own process (no backend).
mod file_tools {
    #[test]
    fn refuse_zot_itself_as_root() {
        crate::attacks::file_tools_refuse_zot_itself(false);
    }
    #[test]
    fn refuse_zot_itself_as_unprivileged() {
        crate::attacks::file_tools_refuse_zot_itself(true);
    }
}

// ------------------------------------------------------------------ helpers

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn userns_ok() -> bool {
    let p = zot_probes::host().userns();
    p.available && p.proc.available
}

fn landlock_ok() -> bool {
    zot_probes::host().landlock().available() && zot_probes::host().seccomp().available
}

fn unshare_bin() -> Option<&'static str> {
    ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// The zot binary, as root or as uid 65534 (from a copy any user can run).
fn zot(unpriv: bool) -> Command {
    let mut c = common::as_user(zot_for(unpriv), unpriv);
    c.stdin(Stdio::null());
    c
}

/// The zot binary uid 65534 (`unpriv`) or the test's user runs.
fn zot_for(unpriv: bool) -> PathBuf {
    if unpriv {
        attacks::shared_bin().to_path_buf()
    } else {
        common::zot_bin()
    }
}

/// `zot ARGS` inside a user namespace whose own max_user_namespaces is 0:
/// nested user namespaces (bwrap, native) then fail with ENOSPC.
fn zot_without_userns(unpriv: bool, args: &[&str], cwd: &Path, path_env: &str) -> Output {
    let script = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
    let mut c = common::as_user(unshare_bin().unwrap(), unpriv);
    c.args(["-U", "-r", "--", "/bin/sh", "-c", script, "sh"])
        .arg(zot_for(unpriv))
        .args(args)
        .current_dir(cwd)
        .env("PATH", path_env)
        .stdin(Stdio::null());
    attacks::run_limited(c, Duration::from_secs(60))
}

fn degraded_ns_available(unpriv: bool) -> bool {
    if unpriv && !common::require("root", is_root(), "needs root to switch to uid 65534") {
        return false;
    }
    common::require(
        "unshare(1)",
        unshare_bin().is_some(),
        "util-linux unshare missing",
    ) && common::require(
        "user namespaces",
        userns_ok(),
        "cannot simulate a host without them from here",
    ) && common::require("landlock", landlock_ok(), "Landlock or seccomp unavailable")
}

fn open_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::Builder::new()
        .prefix("zot-be-")
        .tempdir_in(common::fixture_root())
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

fn text(o: &Output) -> String {
    attacks::text(o)
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", text(o)))
}

const SYS_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

// ------------------------------------------------------------------ fallback

/// No bwrap on PATH: auto picks native, and the report says why.
#[test]
fn auto_without_bwrap_picks_native_and_says_why() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    for unpriv in [false, true] {
        if unpriv && !is_root() {
            continue;
        }
        let d = open_dir();
        let o = attacks::run_limited(
            {
                let mut c = zot(unpriv);
                c.args([
                    "sandbox",
                    "--mode",
                    "workspace-write",
                    "--report",
                    "--",
                    "/bin/sh",
                    "-c",
                    "echo hi > f && /bin/cat f",
                ])
                .current_dir(d.path())
                .env_clear()
                .env("PATH", "/nonexistent-no-bwrap");
                c
            },
            Duration::from_secs(30),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "hi\n");
        assert!(err.contains("backend native"), "{}", text(&o));
        assert!(
            err.contains("bwrap not used: bwrap not found on PATH"),
            "{}",
            text(&o)
        );
    }
}

/// No user namespaces: auto picks landlock (bwrap and native say ENOSPC),
/// workspace-write refuses without --allow-degraded, read-only runs.
#[test]
fn auto_without_userns_picks_landlock_and_says_why() {
    for unpriv in [false, true] {
        if !degraded_ns_available(unpriv) {
            return;
        }
        let d = open_dir();
        let ro = zot_without_userns(
            unpriv,
            // read-only is fully enforced on landlock: no --allow-degraded
            &["sandbox", "--report", "--", "/bin/true"],
            d.path(),
            SYS_PATH,
        );
        let err = String::from_utf8_lossy(&ro.stderr);
        assert_eq!(ro.status.code(), Some(0), "{}", text(&ro));
        assert!(err.contains("backend landlock"), "{}", text(&ro));
        assert!(
            err.contains(
                "bwrap not used: user namespaces unavailable: user.max_user_namespaces is 0"
            ),
            "{}",
            text(&ro)
        );
        assert!(
            err.contains("native not used: user namespaces unavailable"),
            "{}",
            text(&ro)
        );
        assert!(err.contains("pid: none"), "{}", text(&ro));

        let ws = zot_without_userns(
            unpriv,
            &["sandbox", "--mode", "workspace-write", "--", "/bin/true"],
            d.path(),
            SYS_PATH,
        );
        let err = String::from_utf8_lossy(&ws.stderr);
        assert_eq!(ws.status.code(), Some(125), "{}", text(&ws));
        assert!(err.contains("--allow-degraded"), "{}", text(&ws));
        assert!(err.contains("protected paths"), "{}", text(&ws));

        let wsd = zot_without_userns(
            unpriv,
            &[
                "sandbox",
                "--mode",
                "workspace-write",
                "--allow-degraded",
                "--report",
                "--",
                "/bin/sh",
                "-c",
                "echo x > inside",
            ],
            d.path(),
            SYS_PATH,
        );
        let err = String::from_utf8_lossy(&wsd.stderr);
        assert_eq!(wsd.status.code(), Some(0), "{}", text(&wsd));
        assert!(err.contains("filesystem: partial"), "{}", text(&wsd));
        assert!(d.path().join("inside").exists());
    }
}

/// Pinning a backend the host can't give fails with exit 125 and a hint
/// naming the knob.
#[test]
fn pinned_native_without_userns_refuses_with_hint() {
    if !degraded_ns_available(false) {
        return;
    }
    let d = open_dir();
    let o = zot_without_userns(
        false,
        &["sandbox", "--backend", "native", "--", "/bin/true"],
        d.path(),
        SYS_PATH,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(err.contains("max_user_namespaces"), "{}", text(&o));
}

// ------------------------------------------------------------------ --check

fn check(unpriv: bool, backend: &str, extra: &[&str]) -> Output {
    let d = open_dir();
    let mut c = zot(unpriv);
    c.args([
        "debug",
        "sandbox",
        "--check",
        "--json",
        "--backend",
        backend,
    ])
    .args(extra)
    .current_dir(d.path())
    .env("HOME", d.path());
    attacks::run_limited(c, Duration::from_secs(60))
}

fn assert_check_shape(v: &serde_json::Value) {
    for k in ["host", "mode", "backend", "enforced", "checks", "ok"] {
        assert!(v.get(k).is_some(), "missing {k} in {v}");
    }
    for c in v["checks"].as_array().unwrap() {
        assert!(c["name"].is_string() && c["result"].is_string(), "{c}");
    }
}

/// Attempts every run of `--check` must list (workspace-write): the
/// default deny list of both homes, a nested repository's git files, the
/// filtering proxy.
const CREDENTIAL_GIT_PROXY_ATTEMPTS: [&str; 9] = [
    "read ~/.git-credentials (default deny list, $HOME)",
    "read ~/.config/gh/hosts.yml (default deny list, the password database's home)",
    "control: write a file in a nested repository",
    "write .git/config of a nested repository",
    "create .git/hooks/pre-commit in a nested repository",
    "control: request an allowed host through the proxy",
    "request an unlisted host through the proxy",
    "tcp connect to an allowed host without the proxy",
    "request a loopback address behind an allowed name",
];

/// Attempts of the third hardening round (credentials named by the
/// environment and XDG, zot's own state, threads, memory, fanotify).
const ROUND3_ATTEMPTS: [&str; 6] = [
    "read a credential file named by $GOOGLE_APPLICATION_CREDENTIALS",
    "read ~/.config/gh/hosts.yml moved by $XDG_CONFIG_HOME",
    "read a session in zot's own state ($ZOT_HOME)",
    "threads beyond the process limit",
    "memory beyond the memory limit",
    "fanotify_init (watch other processes' accesses to a host file)",
];

/// A passing check on a mount backend: every control worked, every attack
/// was refused (none is left unclaimed), the new attempts are there and
/// the proxy's refusals carry its reasons.
fn assert_check_refused_everything(o: &Output, backend: &str) {
    let v = json(o);
    assert_check_shape(&v);
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    assert_eq!(v["backend"], backend);
    assert_eq!(v["ok"], true);
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.len() >= 15, "{v}");
    for c in checks {
        let name = c["name"].as_str().unwrap();
        let want = if name.starts_with("control:") {
            "ok"
        } else {
            "refused"
        };
        // Memory needs a cgroup controller this user may use: reported.
        if name == "memory beyond the memory limit" && c["result"] == "not-enforced" {
            continue;
        }
        assert_eq!(c["result"], want, "{name}: {c}");
    }
    let detail = |n: &str| {
        checks
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no attempt {n:?} in {v}"))["detail"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for n in CREDENTIAL_GIT_PROXY_ATTEMPTS.iter().chain(ROUND3_ATTEMPTS.iter()) {
        detail(n);
    }
    let unlisted = detail("request an unlisted host through the proxy");
    assert!(
        unlisted.contains("HTTP 403") && unlisted.contains("is not in the sandbox's allowed hosts"),
        "{unlisted}"
    );
    let private = detail("request a loopback address behind an allowed name");
    assert!(
        private.contains("HTTP 403") && private.contains("loopback"),
        "{private}"
    );
    for f in ["fs", "net", "pid", "seccomp"] {
        assert_eq!(v["enforced"][f], "full", "{f}: {v}");
    }
}

#[test]
fn check_passes_on_native_and_every_attempt_is_refused() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    for unpriv in [false, true] {
        if unpriv && !is_root() {
            continue;
        }
        assert_check_refused_everything(&check(unpriv, "native", &[]), "native");
    }
}

#[test]
fn check_on_bwrap_passes() {
    if !common::require(
        "bwrap",
        attacks::bwrap_works(),
        "bubblewrap missing or broken",
    ) {
        return;
    }
    for unpriv in [false, true] {
        if unpriv && !is_root() {
            continue;
        }
        let o = check(
            unpriv,
            "bwrap",
            &["--require", "fs,net,pid,seccomp,landlock"],
        );
        assert_check_refused_everything(&o, "bwrap");
    }
}

/// In read-only mode the nested repository's plain file is an attack too,
/// and the proxy attempts run the same way.
#[test]
fn check_read_only_on_native_refuses_the_nested_repository_write() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    let o = check(false, "native", &["--mode", "read-only"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    let checks = v["checks"].as_array().unwrap();
    let result = |n: &str| {
        checks
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no attempt {n:?} in {v}"))["result"]
            .clone()
    };
    assert_eq!(
        result("write a file in a nested repository (read-only mode)"),
        "refused"
    );
    assert_eq!(
        result("control: request an allowed host through the proxy"),
        "ok"
    );
}

/// `--check` exits non-zero when a required feature is missing: inside the
/// degraded namespace only landlock works, which has no pid isolation.
#[test]
fn check_fails_when_a_required_feature_is_missing() {
    if !degraded_ns_available(false) {
        return;
    }
    let d = open_dir();
    let o = zot_without_userns(
        false,
        &[
            "debug",
            "sandbox",
            "--check",
            "--json",
            "--mode",
            "read-only",
            "--require",
            "fs,pid",
        ],
        d.path(),
        SYS_PATH,
    );
    let v = json(&o);
    assert_check_shape(&v);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(v["backend"], "landlock");
    assert_eq!(v["ok"], false);
    assert!(
        v["missing"].as_array().unwrap().iter().any(|m| m == "pid"),
        "{v}"
    );
    assert_eq!(v["host"]["userns"]["error"]["kind"], "limit-reached", "{v}");
    // the attempts Landlock claims were still refused
    for c in v["checks"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        if [
            "write outside workspace",
            "write /etc",
            "tcp connect to host loopback listener",
            "mount tmpfs",
        ]
        .contains(&name)
        {
            assert_eq!(c["result"], "refused", "{name}: {c}");
        }
    }
    // workspace-write on landlock is not fully enforced: the gate says no.
    let o = zot_without_userns(
        false,
        &["debug", "sandbox", "--check", "--json"],
        d.path(),
        SYS_PATH,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["enforced"]["fs"], "partial", "{v}");
    // A plan without the git protections: the nested repository's attacks
    // really get through, and the gate counts them.
    let result = |n: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no attempt {n:?} in {v}"))["result"]
            .clone()
    };
    for n in [
        "write .git/config of a nested repository",
        "create .git/hooks/pre-commit in a nested repository",
    ] {
        assert_eq!(result(n), "allowed", "{n}: {v}");
    }
    assert_eq!(
        result("control: write a file in a nested repository"),
        "ok",
        "{v}"
    );
}

/// Inside the degraded namespace, `read-only` is fully enforced on the
/// landlock backend: the gate passes and every attempt is refused, except
/// the host-PID one, which the report marks as not enforced.
#[test]
fn check_read_only_passes_on_landlock_without_userns() {
    for unpriv in [false, true] {
        if !degraded_ns_available(unpriv) {
            return;
        }
        let d = open_dir();
        let o = zot_without_userns(
            unpriv,
            &[
                "debug",
                "sandbox",
                "--check",
                "--json",
                "--mode",
                "read-only",
            ],
            d.path(),
            SYS_PATH,
        );
        let v = json(&o);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(v["backend"], "landlock");
        assert_eq!(v["enforced"]["fs"], "full", "{v}");
        assert_eq!(v["enforced"]["net"], "full", "{v}");
        assert_eq!(v["enforced"]["pid"], "none", "{v}");
        for c in v["checks"].as_array().unwrap() {
            let name = c["name"].as_str().unwrap();
            let want = match name {
                // No network namespace: zot refuses allowed hosts there.
                "control: request an allowed host through the proxy"
                | "request an unlisted host through the proxy"
                | "tcp connect to an allowed host without the proxy"
                | "request a loopback address behind an allowed name" => "not-enforced",
                n if n.starts_with("control:") => "ok",
                "see a host process" => "not-enforced",
                // No private tmpfs, no per-sandbox process limit there.
                "/tmp larger than the tmpfs limit"
                | "processes beyond the process limit"
                | "threads beyond the process limit" => "not-enforced",
                // Inside `unshare -Ur` no cgroup controller is usable.
                "memory beyond the memory limit" if c["result"] == "not-enforced" => {
                    "not-enforced"
                }
                _ => "refused",
            };
            assert_eq!(c["result"], want, "{name}: {c}");
        }
    }
}

#[test]
fn check_with_unknown_feature_is_a_usage_error() {
    let o = common::zot()
        .args(["debug", "sandbox", "--check", "--require", "disk"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

// ------------------------------------------------------------------ --explain

#[test]
fn explain_native_lists_mounts_rules_env_network() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    let d = open_dir();
    // A repository root (its git files are protected wherever it lies).
    std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
    let o = common::zot()
        .args([
            "debug",
            "sandbox",
            "--explain",
            "--json",
            "--mode",
            "workspace-write",
            "--backend",
            "native",
        ])
        .current_dir(d.path())
        .env("ZOT_SECRET_TOKEN", "x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["backend"], "native");
    let plan = &v["plan"];
    let mounts = plan["mounts"].as_array().unwrap();
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        mounts
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("{mounts:#?}"))
    };
    assert_eq!(mounts[0]["op"], "bind");
    assert_eq!(mounts[0]["dst"], "/");
    assert_eq!(mounts[0]["writable"], false);
    let ws = std::fs::canonicalize(d.path()).unwrap();
    let w = ws.to_str().unwrap();
    let rw = at(&|m| m["op"] == "bind" && m["dst"] == w && m["writable"] == true);
    let git = at(&|m| {
        m["dst"]
            .as_str()
            .is_some_and(|p| p.starts_with(&format!("{w}/.git")))
    });
    let tmp = at(&|m| m["op"] == "tmpfs" && m["dst"] == "/tmp");
    let proc_ = at(&|m| m["op"] == "proc");
    assert!(tmp < proc_ && proc_ < rw && rw < git, "{mounts:#?}");
    let rules = plan["landlock"]["rules"].as_array().unwrap();
    assert!(rules
        .iter()
        .any(|r| r["path"] == w && r["access"] == "read-write"));
    assert!(plan["seccomp"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "ptrace")));
    let pass = plan["env"]["pass"].as_array().unwrap();
    assert!(!pass.iter().any(|e| e == "ZOT_SECRET_TOKEN"), "{v}");
    assert_eq!(plan["network"]["kind"], "off");
    assert_eq!(plan["namespaces"].as_array().unwrap().len(), 7);
    assert!(v["bwrap"].is_null());
    // The human form is rendered from the same plan.
    let o = common::zot()
        .args([
            "debug",
            "sandbox",
            "--explain",
            "--mode",
            "workspace-write",
            "--backend",
            "native",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("bind rw {w} (nosuid, nodev)")),
        "{out}"
    );
    assert!(
        out.contains("/: read-dir") || out.contains("/: execute"),
        "{out}"
    );
    assert!(out.contains("ptrace"), "{out}");
}

/// `--explain --json` prints the plan itself, and it is the same for the
/// bwrap and native backends (byte for byte), for each mode, allowed hosts
/// (the launcher starts the proxy's bridge on both) and an agent.
#[test]
fn explain_plan_is_the_same_for_bwrap_and_native() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them")
        || !common::require(
            "bwrap",
            attacks::bwrap_works(),
            "bubblewrap missing or unusable",
        )
    {
        return;
    }
    let d = open_dir();
    std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
    std::fs::write(d.path().join(".git/config"), "[core]\n").unwrap();
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/code-reviewer");
    let views: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["--mode".into(), "read-only".into()],
        vec!["--mode".into(), "workspace-write".into()],
        vec![
            "--mode".into(),
            "workspace-write".into(),
            "--allow-host".into(),
            "example.com".into(),
            "--allow-host".into(),
            "[::1]:8080".into(),
        ],
        vec![agent.into_os_string()],
    ];
    for view in views {
        let plan_of = |backend: &str| {
            let o = common::zot()
                .args([
                    "debug",
                    "sandbox",
                    "--explain",
                    "--json",
                    "--backend",
                    backend,
                ])
                .args(&view)
                .current_dir(d.path())
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let v = json(&o);
            assert_eq!(v["backend"], backend);
            serde_json::to_string(&v["plan"]).unwrap()
        };
        let (b, n) = (plan_of("bwrap"), plan_of("native"));
        assert!(b.len() > 100 && b.contains("\"mounts\""), "{b}");
        if view.iter().any(|a| a == "--allow-host") {
            assert!(b.contains("\"proxied\"") && b.contains("example.com"), "{b}");
        }
        assert_eq!(b, n, "{view:?}");
    }
}

/// The mounts a sandbox sees, from inside: mount point, filesystem type
/// and the per-mount flags that matter, without mounts a later mount hides.
fn visible_mounts(mountinfo: &str) -> Vec<String> {
    let rows: Vec<(String, String)> = mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-")?;
            let mut flags: Vec<&str> = f[5]
                .split(',')
                .filter(|o| ["ro", "rw", "nosuid", "nodev", "noexec"].contains(o))
                .collect();
            flags.sort();
            Some((
                f[4].to_string(),
                format!("{} {} {}", f[4], f.get(sep + 1)?, flags.join(",")),
            ))
        })
        .collect();
    rows.iter()
        .enumerate()
        .filter(|(i, (mp, _))| {
            // Hidden when a later mount sits on it or on one of its parents.
            !rows[i + 1..]
                .iter()
                .any(|(later, _)| Path::new(mp).starts_with(later))
        })
        // Host sockets other tests bind meanwhile are masked in one run and
        // not the other (the masks themselves are compared by the planner
        // tests and the socket attacks).
        .filter(|(_, (mp, _))| !mp.ends_with(".sock"))
        .map(|(_, (_, row))| row.clone())
        .collect()
}

/// The bwrap argv rendered from a plan and the native execution of the same
/// plan give the same view: every visible mount, its type and flags, in
/// order, for each mode and the agent view, as root and as uid 65534.
#[test]
fn bwrap_and_native_build_the_same_view() {
    for unpriv in [false, true] {
        let Some(ctx) = attacks::Ctx::new("native", unpriv) else {
            return;
        };
        if !common::require(
            "bwrap",
            attacks::bwrap_works(),
            "bubblewrap missing or unusable",
        ) {
            return;
        }
        std::fs::create_dir_all(ctx.ws.join("vendor/lib/.git")).unwrap();
        for d in ["vendor", "vendor/lib", "vendor/lib/.git"] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(ctx.ws.join(d), std::fs::Permissions::from_mode(0o777))
                .unwrap();
        }
        let views: [&[&str]; 4] = [
            &["--mode", "read-only"],
            &["--mode", "workspace-write"],
            &["--mode", "workspace-write", "--net"],
            &[
                "--agent-view",
                "--read-scope",
                ctx.outside.to_str().unwrap(),
            ],
        ];
        for view in views {
            let view_of = |backend: &str| {
                let mut c = ctx.zot();
                c.args(["sandbox", "--backend", backend]).args(view).args([
                    "--",
                    "/bin/cat",
                    "/proc/self/mountinfo",
                ]);
                let o = attacks::run_limited(c, Duration::from_secs(30));
                assert_eq!(o.status.code(), Some(0), "{backend} {view:?}: {}", text(&o));
                visible_mounts(&String::from_utf8_lossy(&o.stdout))
            };
            let (mut b, mut n) = (view_of("bwrap"), view_of("native"));
            assert!(b.len() > 8, "{b:#?}");
            // The same mounts; their order in mountinfo differs where an
            // unprivileged caller's bubblewrap gets its inode-limited tmpfs
            // from the launcher (mounted last).
            b.sort();
            n.sort();
            assert_eq!(b, n, "{view:?} (unprivileged: {unpriv})");
        }
    }
}

#[test]
fn explain_without_bwrap_says_why_and_danger_needs_no_backend() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    let d = open_dir();
    let o = common::zot()
        .args(["debug", "sandbox", "--explain"])
        .current_dir(d.path())
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.contains("backend native"), "{out}");
    assert!(
        out.contains("bwrap not used: bwrap not found on PATH"),
        "{out}"
    );
    let o = common::zot()
        .args([
            "debug",
            "sandbox",
            "--explain",
            "--mode",
            "danger-full-access",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("backend none"),
        "{}",
        text(&o)
    );
}

/// Pids of processes whose argv is exactly `sleep <marker>`.
fn sleepers(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
        if args.len() == 2 && args[0].ends_with(b"sleep") && args[1] == marker.as_bytes() {
            out.push(pid);
        }
    }
    out
}

/// Killing the supervisor with SIGKILL takes the whole native sandbox down
/// (pdeathsig on the outer launcher and PID 1; PID 1's death empties the
/// namespace).
#[test]
fn native_sandbox_dies_with_a_killed_supervisor() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    let d = open_dir();
    let marker = format!(
        "{}.{}",
        40 + std::process::id() % 50,
        std::process::id() % 997
    );
    let mut child = common::zot()
        .args([
            "sandbox",
            "--backend",
            "native",
            "--",
            "/bin/sleep",
            &marker,
        ])
        .current_dir(d.path())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while sleepers(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sandboxed sleep never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let start = std::time::Instant::now();
    while !sleepers(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the sandbox survived its supervisor: {:?}",
            sleepers(&marker)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `--explain REF`: an agent's restricted view on the native backend: only
/// platform dirs and the workspace are mounted, nothing from $HOME.
#[test]
fn explain_agent_reference_on_native() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them") {
        return;
    }
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/code-reviewer");
    let d = open_dir();
    let o = common::zot()
        .args([
            "debug",
            "sandbox",
            "--explain",
            "--json",
            "--backend",
            "native",
        ])
        .arg(&agent)
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["backend"], "native");
    let mounts = v["plan"]["mounts"].as_array().unwrap();
    assert_eq!(mounts[0]["op"], "tmpfs", "{mounts:#?}");
    assert_eq!(mounts[0]["dst"], "/", "{mounts:#?}");
    assert!(
        mounts
            .iter()
            .any(|m| m["op"] == "bind" && m["dst"] == "/usr"),
        "{mounts:#?}"
    );
    let ws = std::fs::canonicalize(d.path()).unwrap();
    assert!(
        mounts.iter().any(|m| m["dst"] == ws.to_str().unwrap()),
        "{mounts:#?}"
    );
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) {
        if home != Path::new("/") && !ws.starts_with(&home) {
            let h = home.to_string_lossy().into_owned();
            assert!(
                !mounts
                    .iter()
                    .any(|m| m["dst"].as_str().is_some_and(|d| d.starts_with(&h))),
                "{mounts:#?}"
            );
        }
    }
    let last = mounts.last().unwrap();
    assert_eq!(
        (last["op"].as_str(), last["dst"].as_str()),
        (Some("remount-ro"), Some("/"))
    );
}

/// On the landlock backend (no PID namespace) a timeout still kills the
/// command's whole process group; only a process that left the session on
/// purpose (setsid) can outlive it, which is why the report says `pid: none`.
#[test]
fn landlock_timeout_kills_the_process_group() {
    if !common::require("landlock", landlock_ok(), "Landlock or seccomp unavailable") {
        return;
    }
    let d = open_dir();
    let marker = format!(
        "{}.{}",
        90 + std::process::id() % 50,
        std::process::id() % 991
    );
    let script = format!("sleep {marker} & sleep {marker}");
    let mut c = common::zot();
    c.args([
        "sandbox",
        "--backend",
        "landlock",
        "--timeout",
        "1",
        "--report",
        "--",
        "/bin/sh",
        "-c",
        &script,
    ])
    .current_dir(d.path());
    let o = attacks::run_limited(c, Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(124), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("pid: none"),
        "{}",
        text(&o)
    );
    let start = std::time::Instant::now();
    while !sleepers(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "the process group survived: {:?}",
            sleepers(&marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A pinned backend the host cannot give: the gate fails (exit 1) and says why.
#[test]
fn check_with_an_unavailable_pinned_backend_fails_and_says_why() {
    let d = open_dir();
    let o = common::zot()
        .args([
            "debug",
            "sandbox",
            "--check",
            "--json",
            "--backend",
            "bwrap",
        ])
        .current_dir(d.path())
        .env("HOME", d.path())
        .env("PATH", "/nonexistent-no-bwrap")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_check_shape(&v);
    assert_eq!(v["ok"], false);
    assert_eq!(v["backend"], "none");
    let reasons = v["backend_reasons"].to_string();
    assert!(reasons.contains("bwrap not found on PATH"), "{reasons}");
    assert!(reasons.contains("install bubblewrap"), "{reasons}");
}

/// A container-like host: user namespaces denied by a seccomp filter (EPERM,
/// as Docker's default profile does) while the sysctls look fine. Simulated
/// by running zot inside zot's own native sandbox: auto must still fall back
/// to landlock and say why.
#[test]
fn auto_inside_a_seccomp_sandbox_falls_back_to_landlock() {
    if !common::require("user namespaces", userns_ok(), "native backend needs them")
        || !common::require("landlock", landlock_ok(), "Landlock or seccomp unavailable")
    {
        return;
    }
    let d = open_dir();
    let o = common::zot()
        .args([
            "sandbox",
            "--backend",
            "native",
            "--",
            "/proc/self/exe",
            "sandbox",
            "--report",
            "--",
            "/bin/echo",
            "inner-ok",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "inner-ok\n");
    assert!(err.contains("backend landlock"), "{}", text(&o));
    assert!(
        err.contains("bwrap not used: user namespaces unavailable: unshare(CLONE_NEWUSER) denied"),
        "{}",
        text(&o)
    );
    assert!(err.contains("filesystem: full"), "{}", text(&o));
}

/// The cores a process may run on, as /proc/PID/status lists them.
fn cores_of(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

/// The sandbox starts before its plan is made, on another core than the
/// planning supervisor (bwrap loads, the native PID 1 makes its
/// namespaces). The command still gets exactly the caller's cores: every
/// allowed one, and no more than a caller limited to one has.
#[test]
fn the_command_gets_the_callers_cores() {
    let own = cores_of(&std::fs::read_to_string("/proc/self/status").unwrap());
    assert!(!own.is_empty());
    let taskset = ["/usr/bin/taskset", "/bin/taskset"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    for backend in ["native", "bwrap"] {
        for unpriv in [false, true] {
            if !attacks::available(backend, unpriv) {
                continue;
            }
            let d = open_dir();
            let run = |pin: Option<&str>| {
                let mut c = match (pin, taskset) {
                    (Some(cpu), Some(t)) => {
                        let mut c = common::as_user(t, unpriv);
                        c.args(["-c", cpu]).arg(zot_for(unpriv));
                        c
                    }
                    _ => zot(unpriv),
                };
                let o = c
                    .args(["sandbox", "--backend", backend, "--mode", "workspace-write"])
                    .args(["--", "/bin/cat", "/proc/self/status"])
                    .current_dir(d.path())
                    .env("HOME", d.path())
                    .env("ZOT_HOME", d.path().join("zot-home"))
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{backend}: {}", text(&o));
                cores_of(&String::from_utf8_lossy(&o.stdout))
            };
            assert_eq!(run(None), own, "{backend}, unprivileged {unpriv}");
            if let Some(first) = taskset.and_then(|_| own.split([',', '-']).next()) {
                assert_eq!(run(Some(first)), first, "{backend} pinned, unprivileged {unpriv}");
            }
        }
    }
}
