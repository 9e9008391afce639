//! End-to-end tests of `zot keygen`, `zot sign` and `zot verify --key`,
//! with interop against the real `minisign` command both ways: what zot
//! signs, `minisign -V` verifies; what `minisign -S` signs, zot verifies;
//! keys go both ways too. Tampering of every kind is refused by both.
//! (`zot run --require-signature`: tests/e2e_run.rs.)
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    zot_home: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir_in(common::fixture_root()).unwrap();
        let root = dir.path().canonicalize().unwrap();
        World {
            zot_home: root.join("zot-home"),
            root,
            _dir: dir,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = common::zot();
        c.args(args)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.root)
            .env("ZOT_HOME", &self.zot_home)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "zot {args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Pack a small agent into `NAME.zot`.
    fn archive(&self, name: &str, version: &str) -> PathBuf {
        let src = self.root.join(format!("src-{name}-{version}"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            src.join("manifest.json"),
            format!(r#"{{"zotfile":1,"name":"{name}","version":"{version}"}}"#),
        )
        .unwrap();
        std::fs::write(src.join("AGENT.md"), "# agent\n").unwrap();
        let out = self.root.join(format!("{name}-{version}.zot"));
        self.ok(&["pack", s(&src), s(&out)]);
        out
    }

    fn minisign(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut c = Command::new("minisign")
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn have_minisign() -> bool {
    common::require(
        "minisign",
        Command::new("minisign")
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success()),
        "the `minisign` command is missing (Debian package minisign; ci/setup.sh installs it)",
    )
}

/// `zot verify` must fail (exit 1) with an error naming `file`.
fn refused(w: &World, args: &[&str], file: &Path, why: &str) {
    let out = w.run(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{why}: {args:?}: {err}");
    assert!(
        err.contains(s(file)),
        "{why}: error does not name {file:?}: {err}"
    );
}

#[test]
fn zot_signatures_verify_with_minisign_and_back() {
    if !have_minisign() {
        return;
    }
    let w = World::new();
    let a = w.archive("reviewer", "1.0.0");
    let key = w.root.join("zot.key");
    // A password-protected zot key, used by zot and by minisign.
    let out = w
        .cmd(&["keygen", s(&key)])
        .env("ZOT_SIGNING_PASSWORD", "correct horse")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(password-protected)"));
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = w
        .cmd(&["sign", s(&a), "--key", s(&key)])
        .env("ZOT_SIGNING_PASSWORD", "correct horse")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sig = PathBuf::from(format!("{}.minisig", s(&a)));
    let pubkey = w.root.join("zot.key.pub");
    let v = w.minisign(&["-V", "-p", s(&pubkey), "-m", s(&a)], "");
    assert!(v.status.success(), "minisign -V: {}", text(&v.stderr));
    let shown = text(&v.stdout) + &text(&v.stderr);
    assert!(
        shown.contains("agent:reviewer\tversion:1.0.0\tdigest:sha256:"),
        "{shown}"
    );
    // zot verifies it too and shows the signer.
    let out = w.ok(&["verify", s(&a), "--key", s(&pubkey)]);
    assert!(
        out.contains("signature") && out.contains("verified"),
        "{out}"
    );
    // minisign signs with the zot key (password on stdin)...
    let m = w.minisign(
        &[
            "-S",
            "-s",
            s(&key),
            "-m",
            s(&a),
            "-x",
            "by-minisign.minisig",
        ],
        "correct horse\n",
    );
    assert!(m.status.success(), "minisign -S: {}", text(&m.stderr));
    // ...and zot verifies that.
    w.ok(&[
        "verify",
        s(&a),
        "--key",
        s(&pubkey),
        "--signature",
        "by-minisign.minisig",
    ]);
    // minisign refuses a tampered archive as zot does: the tests below are
    // not vacuous.
    let t = w.root.join("tampered.zot");
    let mut bytes = std::fs::read(&a).unwrap();
    let n = bytes.len();
    bytes[n - 5] ^= 0x40;
    std::fs::write(&t, bytes).unwrap();
    std::fs::copy(&sig, w.root.join("tampered.zot.minisig")).unwrap();
    let v = w.minisign(&["-V", "-p", s(&pubkey), "-m", s(&t)], "");
    assert!(!v.status.success());
    refused(&w, &["verify", s(&t), "--key", s(&pubkey)], &t, "tampered");
}

#[test]
fn minisign_signatures_and_keys_verify_with_zot() {
    if !have_minisign() {
        return;
    }
    let w = World::new();
    let a = w.archive("reviewer", "2.0.0");
    // An unencrypted minisign key pair and a minisign signature.
    let g = w.minisign(&["-G", "-W", "-p", "m.pub", "-s", "m.key", "-f"], "");
    assert!(g.status.success(), "{}", text(&g.stderr));
    let m = w.minisign(&["-S", "-s", "m.key", "-m", s(&a)], "");
    assert!(m.status.success(), "{}", text(&m.stderr));
    let out = w.ok(&["verify", s(&a), "--key", "m.pub", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["signature"]["checked"], true);
    assert_eq!(v["signature"]["valid"], true);
    assert!(v["signature"]["trusted_comment"]
        .as_str()
        .unwrap()
        .contains("file:reviewer-2.0.0.zot"));
    // Trusted keys: no --key needed, and then a signature is required.
    let trusted = w.zot_home.join("trusted-keys");
    std::fs::create_dir_all(&trusted).unwrap();
    std::fs::copy(w.root.join("m.pub"), trusted.join("publisher.pub")).unwrap();
    let out = w.ok(&["verify", s(&a)]);
    assert!(out.contains("publisher.pub"), "{out}");
    // A directory has no signature: validated, and zot says why nothing
    // was checked (with an explicit --key it is an error, below).
    let out = w.ok(&["verify", s(&w.root.join("src-reviewer-2.0.0"))]);
    assert!(
        out.contains("only local .zot archives carry signatures"),
        "{out}"
    );
    let unsigned = w.archive("reviewer", "2.0.1");
    refused(
        &w,
        &["verify", s(&unsigned)],
        &PathBuf::from(format!("{}.minisig", s(&unsigned))),
        "unsigned with trusted keys",
    );

    // A minisign password-protected key (minisign's own scrypt limits)
    // signs with `zot sign`, and minisign verifies the result.
    let g = w.minisign(&["-G", "-p", "e.pub", "-s", "e.key", "-f"], "pw-1\npw-1\n");
    assert!(g.status.success(), "{}", text(&g.stderr));
    let out = w
        .cmd(&["sign", s(&unsigned), "--key", "e.key"])
        .env("ZOT_SIGNING_PASSWORD", "pw-1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = w.minisign(&["-V", "-p", "e.pub", "-m", s(&unsigned)], "");
    assert!(v.status.success(), "{}", text(&v.stderr));
    // Wrong password, no password without a terminal: refused, naming the key.
    let key = w.root.join("e.key");
    let out = w
        .cmd(&["sign", s(&unsigned), "--key", "e.key"])
        .env("ZOT_SIGNING_PASSWORD", "nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("wrong password"),
        "{}",
        text(&out.stderr)
    );
    refused(
        &w,
        &["sign", s(&unsigned), "--key", "e.key"],
        &PathBuf::from("e.key"),
        "encrypted key, no password",
    );
    let _ = key;
}

#[test]
fn every_kind_of_bad_signature_is_refused_naming_the_file() {
    if !have_minisign() {
        return;
    }
    let w = World::new();
    let a = w.archive("reviewer", "1.0.0");
    let other = w.archive("reviewer", "1.0.1");
    let g = w.minisign(&["-G", "-W", "-p", "a.pub", "-s", "a.key", "-f"], "");
    assert!(g.status.success());
    let g = w.minisign(&["-G", "-W", "-p", "b.pub", "-s", "b.key", "-f"], "");
    assert!(g.status.success());
    w.ok(&["sign", s(&a), "--key", "a.key"]);
    let sig = PathBuf::from(format!("{}.minisig", s(&a)));
    w.ok(&["verify", s(&a), "--key", "a.pub"]);

    // Wrong key.
    refused(&w, &["verify", s(&a), "--key", "b.pub"], &sig, "wrong key");
    // A signature for another file.
    refused(
        &w,
        &[
            "verify",
            s(&other),
            "--key",
            "a.pub",
            "--signature",
            s(&sig),
        ],
        &other,
        "another file's signature",
    );
    // Truncated signature: cut inside the global signature, and after
    // the first line.
    let full = std::fs::read_to_string(&sig).unwrap();
    for (i, cut) in [full.len() - 20, full.find('\n').unwrap() + 1]
        .into_iter()
        .enumerate()
    {
        let p = w.root.join(format!("cut{i}.minisig"));
        std::fs::write(&p, &full[..cut]).unwrap();
        let m = w.minisign(&["-V", "-p", "a.pub", "-m", s(&a), "-x", s(&p)], "");
        assert!(
            !m.status.success(),
            "minisign accepted a truncated signature"
        );
        refused(
            &w,
            &["verify", s(&a), "--key", "a.pub", "--signature", s(&p)],
            &p,
            "truncated",
        );
    }
    // Tampered archive (appended byte, flipped byte).
    let t = w.root.join("t.zot");
    let mut bytes = std::fs::read(&a).unwrap();
    bytes.push(0);
    std::fs::write(&t, &bytes).unwrap();
    refused(
        &w,
        &["verify", s(&t), "--key", "a.pub", "--signature", s(&sig)],
        &t,
        "appended byte",
    );
    // Missing signature.
    refused(
        &w,
        &["verify", s(&other), "--key", "a.pub"],
        &PathBuf::from(format!("{}.minisig", s(&other))),
        "missing",
    );
    // Malformed public key.
    std::fs::write(w.root.join("bad.pub"), "untrusted comment: x\nRWQ=\n").unwrap();
    refused(
        &w,
        &["verify", s(&a), "--key", "bad.pub"],
        &PathBuf::from("bad.pub"),
        "malformed key",
    );
    // --json reports the failure too.
    let out = w.run(&["verify", s(&a), "--key", "b.pub", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["signature"]["valid"], false);
    // A directory has nothing to sign.
    let out = w.run(&[
        "verify",
        s(&w.root.join("src-reviewer-1.0.0")),
        "--key",
        "a.pub",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no artifact to sign"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn verify_without_keys_says_no_signature_was_checked() {
    let w = World::new();
    let a = w.archive("reviewer", "1.0.0");
    let out = w.ok(&["verify", s(&a)]);
    assert!(out.contains("no signature was checked"), "{out}");
    let out = w.run(&["verify", s(&a), "--signature", "x.minisig"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn keygen_password_sources_and_overwrite() {
    let w = World::new();
    // No terminal, no password: unencrypted, and zot says so.
    let out = w.run(&["keygen", "plain.key"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("NOT password-protected"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("NOT password-protected"));
    // Refuses to overwrite the secret or the public key.
    let before = std::fs::read(w.root.join("plain.key")).unwrap();
    let out = w.run(&["keygen", "plain.key", "--unencrypted"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(w.root.join("plain.key")).unwrap(), before);
    std::fs::write(w.root.join("lone.key.pub"), "x").unwrap();
    assert_eq!(w.run(&["keygen", "lone.key"]).status.code(), Some(1));
    assert!(!w.root.join("lone.key").exists());
    // --unencrypted contradicts a password: usage error, nothing written.
    let out = w
        .cmd(&["keygen", "c.key", "--unencrypted"])
        .env("ZOT_SIGNING_PASSWORD", "x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!w.root.join("c.key").exists());
    // An empty ZOT_SIGNING_PASSWORD is refused.
    let out = w
        .cmd(&["keygen", "d.key"])
        .env("ZOT_SIGNING_PASSWORD", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!w.root.join("d.key").exists());
}

#[test]
fn keygen_and_sign_prompt_for_the_password_on_a_terminal() {
    // `script` gives zot a pseudo-terminal and types the passwords.
    let have_script = Command::new("script").arg("--version").output().is_ok();
    if !common::require("script", have_script, "util-linux `script` is missing") {
        return;
    }
    let w = World::new();
    let a = w.archive("reviewer", "1.0.0");
    let zot = common::zot_bin();
    let typed = |cmd: String, lines: &[&str]| -> Output {
        use std::io::Write;
        let mut c = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(&w.root)
            .env("ZOT_HOME", &w.zot_home)
            .env_remove("ZOT_SIGNING_PASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = c.stdin.take().unwrap();
        for l in lines {
            std::thread::sleep(std::time::Duration::from_millis(400));
            stdin.write_all(format!("{l}\n").as_bytes()).unwrap();
        }
        drop(stdin);
        c.wait_with_output().unwrap()
    };
    let out = typed(
        format!("{} keygen t.key", zot.display()),
        &["s3cret", "s3cret"],
    );
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("Password"), "{shown}");
    assert!(shown.contains("(password-protected)"), "{shown}");
    let out = typed(
        format!("{} sign {} --key t.key", zot.display(), s(&a)),
        &["s3cret"],
    );
    assert!(out.status.success(), "{}", text(&out.stdout));
    w.ok(&["verify", s(&a), "--key", "t.key.pub"]);
    // Mismatched passwords write nothing.
    let out = typed(format!("{} keygen u.key", zot.display()), &["a", "b"]);
    assert!(!out.status.success());
    assert!(!w.root.join("u.key").exists());
}
