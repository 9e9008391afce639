//! The world `zot run` tests run in: a private ZOT_HOME, a fake HOME with
//! an SSH key, a workspace; helpers to write agents and scripts, run zot
//! (optionally as uid 65534) and read its NDJSON events.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/run")
        .join(name)
}

/// A private world for one test: ZOT_HOME, a fake HOME with an SSH key, a
/// workspace.
pub struct World {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub zot_home: PathBuf,
    pub ws: PathBuf,
    /// Run zot as uid/gid 65534 (setpriv) instead of the test's user.
    pub nobody: bool,
}

impl World {
    pub fn new() -> World {
        // Not under /tmp: the sandbox gives commands a private /tmp.
        let dir = tempfile::tempdir_in(crate::common::fixture_root()).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "FAKE-PRIVATE-KEY-0123").unwrap();
        let zot_home = root.join("zot-home");
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("README.md"), "hello from the workspace\n").unwrap();
        World {
            _dir: dir,
            root,
            home,
            zot_home,
            ws,
            nobody: false,
        }
    }

    /// The same world, owned by and run as uid/gid 65534.
    pub fn unprivileged() -> World {
        let mut w = World::new();
        fn chown_all(p: &Path) {
            std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
            if p.is_dir() && !p.is_symlink() {
                for e in std::fs::read_dir(p).unwrap().flatten() {
                    chown_all(&e.path());
                }
            }
        }
        chown_all(&w.root);
        w.nobody = true;
        w
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = crate::common::as_user(crate::common::zot_bin(), self.nobody);
        c.args(args)
            .current_dir(&self.ws)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("ZOT_HOME", &self.zot_home)
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `zot run AGENT -y --json --sim-script SCRIPT PROMPT`: must succeed;
    /// returns the NDJSON events.
    pub fn run_script(&self, agent: &Path, script: &Path, prompt: &str) -> Vec<Value> {
        let out = self.run(&[
            "run",
            s(agent),
            "-y",
            "--json",
            "--sim-script",
            s(script),
            prompt,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        events(&out)
    }

    /// Write an agent directory with this manifest (name and zotfile added).
    pub fn agent(&self, name: &str, mut manifest: Value) -> PathBuf {
        let dir = self.root.join("agents").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        manifest["zotfile"] = json!(1);
        manifest["name"] = json!(name);
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_vec_pretty(&manifest).unwrap(),
        )
        .unwrap();
        dir
    }

    pub fn script(&self, name: &str, turns: Value) -> PathBuf {
        let p = self.root.join(name);
        std::fs::write(&p, turns.to_string()).unwrap();
        p
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Parse NDJSON stdout; every line must be a JSON object with a `type`.
pub fn events(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}"));
            assert!(v["type"].is_string(), "{l}");
            v
        })
        .collect()
}

pub fn of_type<'a>(ev: &'a [Value], t: &str) -> Vec<&'a Value> {
    ev.iter().filter(|e| e["type"] == t).collect()
}

/// Whether bash tool calls can run in the sandbox here (runs `true`).
pub fn sandbox_works(w: &World) -> bool {
    let out = w.run(&[
        "run",
        s(&fixture("true-runner")),
        "-y",
        "--no-session",
        "--json",
        "run: true",
    ]);
    let ev = events(&out);
    let r = of_type(&ev, "tool_result");
    let ok = r.len() == 1 && r[0]["is_error"] == false && r[0]["exit_code"] == 0;
    crate::common::require(
        "agent bash sandbox",
        ok,
        &format!("`run: true` did not succeed: {ev:?} {}", text(&out.stderr)),
    )
}
