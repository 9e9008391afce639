//! Attacks on what git and the shell resolve on the host after a run (git's
//! configuration files and what they name, `PATH` lookups), placeholder
//! races between concurrent runs, and controls: git in a repository
//! subdirectory of restricted and `/tmp` views, toolchain and
//! `node_modules/.bin` use.
//!
//! Each attack first runs unconfined (`danger-full-access`) on a fresh
//! setup and must reach the host's git or shell there (a marker the
//! planted code writes), then confined on a new copy of the same setup,
//! where it must not.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::{
    chown_r, expect_blocked, expect_ok, is_root, make_open, q, run_limited, text, Ctx, NOBODY,
};

const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

/// The marker planted code writes when git or a shell on the host runs it.
fn marker(ctx: &Ctx) -> PathBuf {
    ctx.outside.join("host-ran-planted-code")
}

/// A shell command that writes the marker.
fn payload(ctx: &Ctx) -> String {
    format!("touch {}", q(&marker(ctx)))
}

/// git on the host (as the test user, the fake HOME), as a user would run
/// it after the run; `env` adds variables.
fn host_git(ctx: &Ctx, dir: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = Command::new("git");
    c.env_clear()
        .env("PATH", HOST_PATH)
        .env("HOME", &ctx.home)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    run_limited(c, Duration::from_secs(30))
}

/// Whether git on the host runs planted code in `dir` (status, then a
/// commit, which runs the hooks).
fn host_git_runs_code(ctx: &Ctx, dir: &Path, env: &[(&str, &Path)]) -> bool {
    let m = marker(ctx);
    let _ = std::fs::remove_file(&m);
    host_git(ctx, dir, env, &["status", "--short"]);
    host_git(
        ctx,
        dir,
        env,
        &["commit", "-q", "--allow-empty", "-m", "probe"],
    );
    let ran = m.exists();
    let _ = std::fs::remove_file(&m);
    ran
}

fn init_repo(ctx: &Ctx, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let o = host_git(ctx, dir, &[], &["init", "-q", "-b", "main"]);
    assert!(o.status.success(), "git init: {}", text(&o));
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    host_git(ctx, dir, &[], &["add", "a.txt"]);
    let o = host_git(ctx, dir, &[], &["commit", "-qm", "init"]);
    assert!(o.status.success(), "git commit: {}", text(&o));
}

fn git_config(ctx: &Ctx, dir: &Path, key: &str, value: &str) {
    let o = host_git(ctx, dir, &[], &["config", key, value]);
    assert!(o.status.success(), "git config {key}: {}", text(&o));
}

fn open_up(ctx: &Ctx) {
    make_open(&ctx.ws);
    make_open(&ctx.home);
    make_open(&ctx.outside);
    if ctx.unpriv && is_root() {
        chown_r(&ctx.ws, NOBODY);
        chown_r(&ctx.home, NOBODY);
        chown_r(&ctx.outside, NOBODY);
    }
}

/// A scenario in `<ws>/jail`: `setup` prepares it (and whatever of the
/// fake home it needs), `script` attacks from inside (printing ESCAPED
/// where a step it should not manage succeeds), `escaped` looks on the
/// host afterwards. Unconfined the attack must work; confined it must not.
struct Scenario<'a> {
    what: &'a str,
    setup: &'a dyn Fn(&Ctx, &Path),
    script: String,
    env: Vec<(&'a str, PathBuf)>,
    escaped: &'a dyn Fn(&Ctx, &Path) -> bool,
}

impl Scenario<'_> {
    fn fresh(&self, ctx: &Ctx) -> PathBuf {
        let dir = ctx.ws.join("jail");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(ctx.home.join(".gitconfig"));
        std::fs::create_dir_all(&dir).unwrap();
        (self.setup)(ctx, &dir);
        open_up(ctx);
        dir
    }

    fn run_in(&self, ctx: &Ctx, mode: &str) -> Output {
        let mut c = ctx.zot();
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.args(ctx.sandbox_args(mode))
            .args(["--cwd", "jail", "--", "/bin/sh", "-c", &self.script]);
        run_limited(c, Duration::from_secs(60))
    }

    fn check(&self, ctx: &Ctx) {
        let dir = self.fresh(ctx);
        let o = self.run_in(ctx, "danger-full-access");
        assert!(
            (self.escaped)(ctx, &dir),
            "[{}] the attack {} must work unconfined (else the test cannot fail):\n{}",
            ctx.backend,
            self.what,
            text(&o)
        );
        let dir = self.fresh(ctx);
        let o = self.run_in(ctx, "workspace-write");
        expect_blocked(ctx, self.what, &o);
        assert!(
            !(self.escaped)(ctx, &dir),
            "[{} {}] {}: the host ran what the sandbox planted:\n{}",
            ctx.backend,
            if ctx.unpriv { "unprivileged" } else { "root" },
            self.what,
            text(&o)
        );
    }
}

/// `printf` of a config snippet setting `core.fsmonitor` to the payload,
/// appended to `file`, printing ESCAPED-<file> when the write worked.
fn plant_fsmonitor(ctx: &Ctx, file: &str) -> String {
    format!(
        "mkdir -p \"$(dirname {file})\" 2>/dev/null; printf '[core]\\n\\tfsmonitor = \"{p}; false\"\\n' >> {file} 2>/dev/null && echo ESCAPED-{file}; ",
        p = payload(ctx).replace('\'', "'\\''")
    )
}

/// An executable script running the payload at `file`, ESCAPED-<file>
/// printed when the write worked (`quiet`: printed nothing either way).
fn plant_exec(ctx: &Ctx, file: &str, quiet: bool) -> String {
    let tag = if quiet {
        String::new()
    } else {
        format!(" && echo ESCAPED-{file}")
    };
    format!(
        "mkdir -p \"$(dirname {file})\" 2>/dev/null; printf '#!/bin/sh\\n{p}\\n' > {file} 2>/dev/null && chmod +x {file}{tag}; ",
        p = payload(ctx).replace('\'', "'\\''")
    )
}

/// Include targets of every kind: relative to the including file, behind
/// `includeIf` conditions (missing at launch), and a global config's
/// include naming a file in the workspace.
pub fn git_config_includes(ctx: &Ctx) {
    let setup = |ctx: &Ctx, d: &Path| {
        init_repo(ctx, d);
        std::fs::write(d.join("shared.cfg"), "[user]\n").unwrap();
        git_config(ctx, d, "include.path", "../shared.cfg");
        git_config(ctx, d, "includeIf.onbranch:main.path", "../cond.cfg");
        git_config(ctx, d, "includeIf.gitdir:/nowhere/.path", "../never.cfg");
        std::fs::write(
            ctx.home.join(".gitconfig"),
            format!(
                "[includeIf \"hasconfig:remote.*.url:https://x/**\"]\n\tpath = {}\n",
                d.join("global-inc.cfg").display()
            ),
        )
        .unwrap();
    };
    let mut script = String::new();
    for f in ["shared.cfg", "cond.cfg", "never.cfg", "global-inc.cfg"] {
        script.push_str(&plant_fsmonitor(ctx, f));
    }
    script.push_str("echo ok > plain.txt || exit 9; echo BLOCKED");
    Scenario {
        what: "plant fsmonitor in included config files",
        setup: &setup,
        script,
        env: vec![],
        escaped: &|ctx, d| {
            // A file changed is an escape even when this host's git would
            // not take its condition now.
            ["shared.cfg", "cond.cfg", "never.cfg", "global-inc.cfg"]
                .iter()
                .any(|f| std::fs::read_to_string(d.join(f)).is_ok_and(|t| t.contains("fsmonitor")))
                || host_git_runs_code(ctx, d, &[])
        },
    }
    .check(ctx);
}

/// `core.hooksPath` naming a directory that does not exist yet, set by the
/// repository's config and by the global config (an absolute path into
/// the workspace).
pub fn git_hooks_path_missing(ctx: &Ctx) {
    for global in [false, true] {
        let setup = move |ctx: &Ctx, d: &Path| {
            init_repo(ctx, d);
            if global {
                std::fs::write(
                    ctx.home.join(".gitconfig"),
                    format!("[core]\n\thooksPath = {}\n", d.join("ghooks").display()),
                )
                .unwrap();
            } else {
                git_config(ctx, d, "core.hooksPath", ".githooks");
            }
        };
        let dir = if global { "ghooks" } else { ".githooks" };
        let script = format!(
            "{} echo ok > plain.txt || exit 9; echo BLOCKED",
            plant_exec(ctx, &format!("{dir}/pre-commit"), false)
        );
        Scenario {
            what: if global {
                "create the global core.hooksPath directory in the workspace"
            } else {
                "create the missing core.hooksPath directory"
            },
            setup: &setup,
            script,
            env: vec![],
            escaped: &|ctx, d| host_git_runs_code(ctx, d, &[]),
        }
        .check(ctx);
    }
}

/// Files that command-valued keys name (fsmonitor, sshCommand, textconv,
/// filter and credential helpers, `!` aliases): existing or not.
pub fn git_command_keys(ctx: &Ctx) {
    let files = [
        "tools/fsmon.sh",
        "bin/ssh-wrap",
        "conv.sh",
        "scripts/clean.sh",
        "alias.sh",
        ".git/cred.sh",
    ];
    let setup = |ctx: &Ctx, d: &Path| {
        init_repo(ctx, d);
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::write(d.join("bin/ssh-wrap"), "#!/bin/sh\nexit 0\n").unwrap();
        git_config(ctx, d, "core.fsmonitor", "tools/fsmon.sh");
        git_config(ctx, d, "core.sshCommand", "./bin/ssh-wrap -F none");
        git_config(ctx, d, "diff.x.textconv", "sh ./conv.sh");
        git_config(ctx, d, "filter.f.clean", "scripts/clean.sh %f");
        git_config(ctx, d, "alias.y", "!sh alias.sh");
        git_config(
            ctx,
            d,
            "credential.helper",
            "!f() { .git/cred.sh \"$@\"; }; f",
        );
    };
    let mut script = String::new();
    for f in files {
        script.push_str(&plant_exec(ctx, f, false));
    }
    script.push_str("echo ok > plain.txt || exit 9; echo BLOCKED");
    Scenario {
        what: "plant the programs command-valued git keys name",
        setup: &setup,
        script,
        env: vec![],
        escaped: &|ctx, d| {
            files.iter().any(|f| {
                std::fs::read_to_string(d.join(f))
                    .is_ok_and(|t| t.contains("host-ran-planted-code"))
            }) || host_git_runs_code(ctx, d, &[])
        },
    }
    .check(ctx);
}

/// `extensions.worktreeConfig` makes git read `config.worktree`, missing
/// at launch.
pub fn git_worktree_config(ctx: &Ctx) {
    let setup = |ctx: &Ctx, d: &Path| {
        init_repo(ctx, d);
        git_config(ctx, d, "core.repositoryformatversion", "1");
        git_config(ctx, d, "extensions.worktreeConfig", "true");
    };
    let script = format!(
        "{} echo ok > .git/COMMIT_EDITMSG || exit 9; echo BLOCKED",
        plant_fsmonitor(ctx, ".git/config.worktree")
    );
    Scenario {
        what: "create config.worktree with extensions.worktreeConfig",
        setup: &setup,
        script,
        env: vec![],
        escaped: &|ctx, d| host_git_runs_code(ctx, d, &[]),
    }
    .check(ctx);
}

/// `GIT_CONFIG_GLOBAL` naming a file in the workspace that does not exist
/// yet, and a workspace that is `$HOME` (its `~/.gitconfig` missing).
pub fn git_global_config_in_workspace(ctx: &Ctx) {
    let jail = ctx.ws.join("jail");
    let setup = |ctx: &Ctx, d: &Path| init_repo(ctx, d);
    let global = jail.join("global.cfg");
    let script = format!(
        "{} echo ok > plain.txt || exit 9; echo BLOCKED",
        plant_fsmonitor(ctx, "global.cfg")
    );
    Scenario {
        what: "create the file GIT_CONFIG_GLOBAL names",
        setup: &setup,
        script,
        env: vec![("GIT_CONFIG_GLOBAL", global.clone())],
        escaped: &|ctx, d| {
            host_git_runs_code(ctx, d, &[("GIT_CONFIG_GLOBAL", &d.join("global.cfg"))])
        },
    }
    .check(ctx);
    // HOME is the workspace.
    let script = format!(
        "{} {} echo ok > plain.txt || exit 9; echo BLOCKED",
        plant_fsmonitor(ctx, ".gitconfig"),
        plant_fsmonitor(ctx, ".config/git/config")
    );
    Scenario {
        what: "create ~/.gitconfig when the workspace is $HOME",
        setup: &|ctx, d| init_repo(ctx, &d.join("r")),
        script,
        env: vec![("HOME", jail.clone())],
        escaped: &|ctx, d| {
            let m = marker(ctx);
            let _ = std::fs::remove_file(&m);
            host_git(ctx, &d.join("r"), &[("HOME", d)], &["status", "--short"]);
            m.exists()
        },
    }
    .check(ctx);
}

/// `PATH` entries that resolve into the workspace: relative ones, an empty
/// component (the current directory), ones missing at launch. A shell on
/// the host with the same `PATH` must not run what the sandbox planted.
pub fn path_lookups_planted(ctx: &Ctx) {
    let jail = ctx.ws.join("jail");
    let path = format!(
        "bin:node_modules/.bin:./tools:{}::{HOST_PATH}",
        jail.join(".local/bin").display()
    );
    let setup = |_: &Ctx, d: &Path| {
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("node_modules")).unwrap();
    };
    let mut script = String::new();
    for dir in ["bin", "node_modules/.bin", "tools", ".local/bin"] {
        script.push_str(&plant_exec(ctx, &format!("{dir}/ls"), false));
    }
    // The working directory itself stays writable: what is planted there
    // is renamed aside after the run.
    script.push_str(&plant_exec(ctx, "./ls", true));
    script.push_str(&plant_exec(ctx, "./cat", true));
    script.push_str("echo ok > node_modules/pkg.txt || exit 9; echo BLOCKED");
    let p2 = path.clone();
    Scenario {
        what: "plant an executable where PATH lookups on the host find it",
        setup: &setup,
        script,
        env: vec![("PATH", PathBuf::from(&path))],
        escaped: &move |ctx, d| {
            let m = marker(ctx);
            let _ = std::fs::remove_file(&m);
            let mut c = Command::new("/bin/sh");
            c.env_clear()
                .env("PATH", &p2)
                .env("HOME", &ctx.home)
                .args([
                    "-c",
                    "ls >/dev/null 2>&1; cat </dev/null >/dev/null 2>&1; true",
                ])
                .current_dir(d);
            run_limited(c, Duration::from_secs(30));
            m.exists()
        },
    }
    .check(ctx);
}

/// Controls: a toolchain build, node_modules/.bin tools and git in a
/// repository keep working with such a PATH.
pub fn control_toolchain_and_node_bin(ctx: &Ctx) {
    let jail = ctx.ws.join("jail");
    std::fs::create_dir_all(jail.join("node_modules/.bin")).unwrap();
    std::fs::write(
        jail.join("node_modules/.bin/hello"),
        "#!/bin/sh\necho hello-from-bin\n",
    )
    .unwrap();
    std::fs::write(jail.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(jail.join("Makefile"), "app: main.c\n\tcc -o app main.c\n").unwrap();
    init_repo(ctx, &jail.join("proj"));
    open_up(ctx);
    std::fs::set_permissions(
        jail.join("node_modules/.bin/hello"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("node_modules/.bin:.:{HOST_PATH}");
    let g = "git -c user.email=t@t -c user.name=t";
    let script = format!(
        "hello && node_modules/.bin/hello && make -s app && ./app && mkdir -p node_modules/dep && echo x > node_modules/dep/index.js \
         && cd proj && {g} status --short && echo b > b.txt && {g} add b.txt && {g} commit -qm two && {g} log --oneline | wc -l"
    );
    let mut c = ctx.zot();
    c.env("PATH", &path)
        .args(ctx.sandbox_args("workspace-write"))
        .args(["--cwd", "jail", "--", "/bin/sh", "-c", &script]);
    let o = run_limited(c, Duration::from_secs(60));
    expect_ok(
        ctx,
        "toolchain build, node_modules/.bin and git with a relative PATH",
        &o,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("hello-from-bin") && out.contains('2'),
        "{}",
        text(&o)
    );
}

/// Placeholders shared by concurrent runs with staggered ends: while the
/// first run cleans up, the later ones stay protected, and the last one
/// out removes them.
pub fn placeholder_races(ctx: &Ctx) {
    // `.git/hooks`, `.agents` and `.zot` missing: placeholders.
    std::fs::remove_dir_all(ctx.ws.join(".git/hooks")).unwrap();
    let attack = "for p in .agents .zot .git/hooks; do rm -rf $p 2>/dev/null; mkdir $p 2>/dev/null && echo ESCAPED-mkdir-$p; \
                  echo evil > $p/pre-commit 2>/dev/null && echo ESCAPED-$p; done; echo ok > plain-$$ || exit 9; echo BLOCKED";
    // Unconfined the same steps work.
    let o = ctx.sh("danger-full-access", &[], attack);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ESCAPED-.agents"),
        "{}",
        text(&o)
    );
    for p in [".agents", ".zot", ".git/hooks"] {
        let _ = std::fs::remove_dir_all(ctx.ws.join(p));
    }
    for runs in [2usize, 3] {
        let mut children = Vec::new();
        for i in 0..runs {
            // Run i attacks after run i-1 has ended (staggered by 1.5 s).
            let delay = 1.0 + 1.5 * i as f64;
            let script = if i == 0 {
                format!("sleep {delay}; echo BLOCKED")
            } else {
                format!("sleep {delay}; {attack}")
            };
            let mut c = ctx.zot();
            c.args(ctx.sandbox_args("workspace-write"))
                .args(["--", "/bin/sh", "-c", &script])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            children.push(c.spawn().unwrap());
            // The next run starts once this one's placeholders exist.
            let t0 = std::time::Instant::now();
            while !ctx.ws.join(".agents").exists() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        for (i, c) in children.into_iter().enumerate() {
            let o = c.wait_with_output().unwrap();
            expect_blocked(ctx, &format!("run {i} of {runs} concurrent runs"), &o);
        }
        for p in [".agents", ".zot", ".git/hooks"] {
            assert!(
                !ctx.ws.join(p).exists(),
                "{p} left after {runs} concurrent runs (attack or placeholder not removed)"
            );
        }
    }
}

/// git works in a repository subdirectory of a restricted view (`fs.read`
/// / `fs.write` scopes inside a repository): its git directory is shown
/// read-only, nothing else of the repository.
pub fn views_enclosing_repository(ctx: &Ctx) {
    let proj = ctx.ws.join("proj");
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::create_dir_all(proj.join("docs")).unwrap();
    std::fs::write(proj.join("sub/s.txt"), "s\n").unwrap();
    std::fs::write(proj.join("docs/d.txt"), "d\n").unwrap();
    std::fs::write(proj.join("secret.txt"), "outside-the-scopes\n").unwrap();
    init_repo(ctx, &proj);
    host_git(ctx, &proj, &[], &["add", "."]);
    host_git(ctx, &proj, &[], &["commit", "-qm", "two"]);
    open_up(ctx);
    let script = format!(
        "git log --oneline | wc -l && git rev-parse --show-toplevel && git -C {docs} log --oneline -1 >/dev/null || exit 9; \
         cat ../secret.txt 2>/dev/null && echo ESCAPED-worktree; echo x >> ../.git/config 2>/dev/null && echo ESCAPED-config; \
         mkdir ../.git/hooks/x 2>/dev/null && echo ESCAPED-hooks; echo BLOCKED",
        docs = q(&proj.join("docs"))
    );
    let mut c = ctx.zot();
    c.arg("sandbox")
        .args(ctx.backend_args())
        .args(["--agent-view", "--cwd", "proj/sub", "--read-scope"])
        .arg(proj.join("docs"))
        .args(["--report", "--", "/bin/sh", "-c", &script]);
    let o = run_limited(c, Duration::from_secs(30));
    expect_blocked(ctx, "git in a repository subdirectory of an agent view", &o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines().next() == Some("2") && out.contains(&proj.display().to_string()),
        "git does not see the repository:\n{}",
        text(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("shown read-only so that git works there"),
        "the report does not say the git directory is shown:\n{}",
        text(&o)
    );
}

/// A workspace in a repository under /tmp (which the sandbox replaces):
/// git works there as on the host.
pub fn views_repository_under_tmp(ctx: &Ctx) {
    let base = tempfile::Builder::new()
        .prefix("zot-attack-tmp-")
        .tempdir_in("/tmp")
        .unwrap();
    let repo = base.path().join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/s.txt"), "s\n").unwrap();
    init_repo(ctx, &repo);
    host_git(ctx, &repo, &[], &["add", "."]);
    host_git(ctx, &repo, &[], &["commit", "-qm", "two"]);
    make_open(base.path());
    if ctx.unpriv && is_root() {
        chown_r(base.path(), NOBODY);
    }
    for mode in ["workspace-write", "read-only"] {
        let mut c = ctx.zot();
        c.current_dir(repo.join("sub"))
            .args(ctx.sandbox_args(mode))
            .args([
                "--",
                "/bin/sh",
                "-c",
                "git status --short >/dev/null && git log --oneline | wc -l && git rev-parse --show-toplevel",
            ]);
        let o = run_limited(c, Duration::from_secs(30));
        expect_ok(
            ctx,
            &format!("git in a repository subdirectory under /tmp ({mode})"),
            &o,
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains('2'),
            "{}",
            text(&o)
        );
    }
}
