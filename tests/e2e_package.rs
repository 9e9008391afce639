//! End-to-end: `zot pack / inspect / verify / unpack` through the real binary.
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zot(cwd: &Path, args: &[&str]) -> Output {
    common::zot()
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/code-reviewer")
}

/// A copy of the example agent in a temp dir.
fn copy_example(dst: &Path) {
    fn copy(src: &Path, dst: &Path) {
        fs::create_dir_all(dst).unwrap();
        for e in fs::read_dir(src).unwrap() {
            let e = e.unwrap();
            let to = dst.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to);
            } else {
                fs::copy(e.path(), &to).unwrap();
            }
        }
    }
    copy(&example(), dst);
}

#[test]
fn pack_inspect_verify_unpack_the_example() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("reviewer");
    copy_example(&src);

    // pack with the default output name, in the current directory
    let o = zot(t.path(), &["pack", "reviewer"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("wrote code-reviewer.zot"));
    let digest = lines
        .next()
        .unwrap()
        .strip_prefix("digest sha256:")
        .expect("digest line")
        .to_string();
    assert_eq!(digest.len(), 64);
    let archive = t.path().join("code-reviewer.zot");
    assert!(archive.is_file());

    // pack again: byte-identical
    let again = t.path().join("again.zot");
    let o = zot(t.path(), &["pack", "reviewer", again.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(fs::read(&archive).unwrap(), fs::read(&again).unwrap());

    // inspect the archive
    let o = zot(t.path(), &["inspect", "code-reviewer.zot"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("code-reviewer"), "{out}");
    assert!(out.contains("0.1.0"), "{out}");
    assert!(out.contains(&format!("sha256:{digest}")), "{out}");
    assert!(out.contains("fs read    ${workspace}"), "{out}");
    assert!(out.contains("bash       none"), "{out}");
    assert!(out.contains("skills/code-review/SKILL.md"), "{out}");

    // inspect --json
    let o = zot(t.path(), &["inspect", "--json", "code-reviewer.zot"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["manifest"]["name"], "code-reviewer");
    assert_eq!(v["digest"], format!("sha256:{digest}"));
    assert_eq!(v["kind"], "archive");
    assert_eq!(
        v["files"],
        serde_json::json!(["AGENT.md", "manifest.json", "skills/code-review/SKILL.md"])
    );
    assert_eq!(v["manifest"]["permissions"]["bash"]["mode"], "none");

    // inspect the directory: a different (canonical tar) digest
    let o = zot(t.path(), &["inspect", "--json", "reviewer"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "directory");
    assert_ne!(v["digest"], format!("sha256:{digest}"));

    // verify: plain statement that no signature is checked
    let o = zot(t.path(), &["verify", "code-reviewer.zot"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains(&format!("digest sha256:{digest}")), "{out}");
    assert!(out.contains("no signature was checked"), "{out}");
    let o = zot(t.path(), &["verify", "--json", "code-reviewer.zot"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["signature"]["checked"], false);
    assert_eq!(v["digest"], format!("sha256:{digest}"));

    // unpack, then the tree packs back to the same bytes
    let o = zot(t.path(), &["unpack", "code-reviewer.zot", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_eq!(
        fs::read(t.path().join("out/AGENT.md")).unwrap(),
        fs::read(src.join("AGENT.md")).unwrap()
    );
    let o = zot(t.path(), &["pack", "out", "repacked.zot"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        fs::read(&archive).unwrap(),
        fs::read(t.path().join("repacked.zot")).unwrap()
    );

    // unpack refuses a non-empty directory
    let o = zot(t.path(), &["unpack", "code-reviewer.zot", "out"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.starts_with("zot: ") && err.contains("not an empty directory"),
        "{err}"
    );
}

#[test]
fn failures_exit_1_with_the_cause_chain() {
    let t = tempfile::tempdir().unwrap();
    // garbage archive
    fs::write(t.path().join("junk.zot"), b"this is not an archive").unwrap();
    for cmd in ["inspect", "verify"] {
        let o = zot(t.path(), &[cmd, "junk.zot"]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert!(
            err.starts_with("zot: ") && err.contains("junk.zot") && err.contains("unknown format"),
            "{err}"
        );
    }
    let o = zot(t.path(), &["verify", "--json", "junk.zot"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains("unknown format"));

    // an invalid manifest lists every error with its field
    let bad = t.path().join("bad");
    fs::create_dir(&bad).unwrap();
    fs::write(
        bad.join("manifest.json"),
        r#"{"zotfile":1,"name":"Bad Name","model":{"requires":["tool_calling"]},"permissions":{"bash":{"mode":"allowlist","allow":[]}}}"#,
    )
    .unwrap();
    let o = zot(t.path(), &["pack", "bad", "bad.zot"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("name: "), "{err}");
    assert!(err.contains("model.requires: "), "{err}");
    assert!(err.contains("permissions.bash.allow: "), "{err}");
    assert!(!t.path().join("bad.zot").exists());
    let leftovers: Vec<_> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !leftovers
            .iter()
            .any(|n| n.to_string_lossy().contains(".tmp")),
        "{leftovers:?}"
    );

    // a symlink is named
    let src = t.path().join("linked");
    copy_example(&src);
    std::os::unix::fs::symlink("/etc/passwd", src.join("passwd")).unwrap();
    let o = zot(t.path(), &["pack", "linked"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("passwd") && err.contains("symlink"), "{err}");

    // missing path
    let o = zot(t.path(), &["inspect", "nope"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn hostile_archive_is_refused_by_every_command() {
    let has_zstd = Command::new("zstd")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::require(
        "zstd binary",
        has_zstd,
        "needed to build the test archive; ci/setup.sh installs it",
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // Build a traversal archive with raw headers (the tar crate refuses to).
    let mut tar = Vec::new();
    for (name, data) in [
        ("manifest.json", &br#"{"zotfile":1,"name":"x"}"#[..]),
        ("../escaped", b"pwned"),
    ] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
        h[136..148].copy_from_slice(b"00000000000\0");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        tar.extend_from_slice(&h);
        tar.extend_from_slice(data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let zst = zstd_compress(&tar);
    let work = t.path().join("work");
    fs::create_dir(&work).unwrap();
    fs::write(work.join("evil.zot"), zst).unwrap();
    for args in [
        &["inspect", "evil.zot"][..],
        &["verify", "evil.zot"],
        &["unpack", "evil.zot", "dest"],
    ] {
        let o = zot(&work, args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(err.contains(".."), "{args:?}: {err}");
    }
    assert!(!t.path().join("escaped").exists());
    assert!(!work.join("dest").exists());
}

fn zstd_compress(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("zstd")
        .args(["-q", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("zstd binary (installed by ci/setup.sh)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(data).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    o.stdout
}

#[test]
fn help_version_and_usage_errors() {
    let t = tempfile::tempdir().unwrap();
    let o = zot(t.path(), &["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.contains(env!("CARGO_PKG_VERSION")));
    for cmd in ["pack", "inspect", "verify", "unpack"] {
        let o = zot(t.path(), &[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}");
        assert!(text(&o).0.contains("Usage"), "{cmd}");
    }
    let o = zot(t.path(), &["inspect"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "missing argument is a usage error"
    );
    let o = zot(t.path(), &["verify", "--bogus", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let o = zot(t.path(), &["unpack", "only-one"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Serve one file at `path` over HTTP on 127.0.0.1 (a GitHub stand-in).
fn serve_one(path: String, body: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let first = String::from_utf8_lossy(&req)
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            let found = first.split(' ').nth(1) == Some(path.as_str());
            let _ = if found {
                write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .and_then(|()| c.write_all(&body))
            } else {
                c.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
            };
        }
    });
    base
}

#[test]
fn inspect_and_verify_a_github_reference() {
    let t = tempfile::tempdir().unwrap();
    copy_example(&t.path().join("repo/agents-abc123/code-reviewer"));
    let o = Command::new("tar")
        .args(["-czf", "../repo.tar.gz", "agents-abc123"])
        .current_dir(t.path().join("repo"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let base = serve_one(
        "/acme/agents/archive/HEAD.tar.gz".into(),
        fs::read(t.path().join("repo.tar.gz")).unwrap(),
    );
    let work = t.path().join("work");
    fs::create_dir(&work).unwrap();
    for args in [
        &["inspect", "acme/agents/code-reviewer"][..],
        &["verify", "https://github.com/acme/agents/code-reviewer"],
    ] {
        let o = common::zot()
            .args(args)
            .current_dir(&work)
            .env("ZOT_GITHUB_BASE", &base)
            .env("TMPDIR", t.path())
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(out.contains("code-reviewer"), "{out}");
        assert!(out.contains("sha256:"), "{out}");
    }
    // the downloaded tree is gone afterwards
    let left: Vec<_> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| !n.starts_with("zot-")), "{left:?}");
}

#[test]
fn pack_warns_about_unknown_manifest_fields() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a");
    copy_example(&src);
    let m = fs::read_to_string(src.join("manifest.json")).unwrap();
    fs::write(
        src.join("manifest.json"),
        m.replacen('{', "{\n  \"permisions\": {},", 1),
    )
    .unwrap();
    let o = zot(t.path(), &["pack", "a", "a.zot"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.starts_with("wrote a.zot\n"), "{out}");
    assert!(
        err.contains("zot: warning: manifest.json: permisions: unknown field"),
        "{err}"
    );
    assert!(err.contains("did you mean `permissions`"), "{err}");
}

#[test]
fn agent_toml_packages_through_pack_inspect_verify() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    fs::create_dir(&a).unwrap();
    fs::write(
        a.join("agent.toml"),
        "schema_version = 1\nname = \"tomly\"\ndescription = \"Checks things.\"\n",
    )
    .unwrap();
    let o = zot(t.path(), &["inspect", "a"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains("format       agent.toml") && out.contains("tomly"),
        "{out}"
    );
    let dir_digest = out
        .lines()
        .find_map(|l| l.strip_prefix("digest       "))
        .unwrap()
        .to_string();

    let o = zot(t.path(), &["pack", "a"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.starts_with("wrote tomly.zip\n"), "{out}");
    assert!(out.contains(&format!("digest {dir_digest}")), "{out}");

    let o = zot(t.path(), &["verify", "--json", "tomly.zip"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["format"], "agent.toml");
    assert_eq!(v["digest"], dir_digest.as_str());
    assert_eq!(v["signature"]["checked"], false);

    fs::write(
        a.join("agent.toml"),
        "schema_version = 1\nname = \"Bad Name\"\n",
    )
    .unwrap();
    let o = zot(t.path(), &["verify", "a"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("name: "), "{err}");
}

/// Every file below `dir`, relative, sorted (to prove a failed command
/// changed nothing).
fn tree_of(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn files_of(archive: &Path) -> Vec<String> {
    let o = common::zot()
        .args(["inspect", "--json"])
        .arg(archive)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn pack_into_a_directory_creates_missing_parents() {
    let t = tempfile::tempdir().unwrap();
    copy_example(&t.path().join("reviewer"));
    fs::create_dir(t.path().join("dist")).unwrap();

    // an existing directory, with and without a trailing slash
    for out in ["dist", "dist/"] {
        let o = zot(t.path(), &["pack", "reviewer", out]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
        assert!(t.path().join("dist/code-reviewer.zot").is_file());
        assert!(!t.path().join("dist/.zot").exists());
        fs::remove_file(t.path().join("dist/code-reviewer.zot")).unwrap();
    }
    // a directory that does not exist yet, named by a trailing slash
    let o = zot(t.path(), &["pack", "reviewer", "new/sub/"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        t.path().join("new/sub/code-reviewer.zot").is_file(),
        "{out}"
    );
    assert!(
        out.starts_with("wrote new/sub/code-reviewer.zot\n"),
        "{out}"
    );
    // a file in a missing directory
    let o = zot(t.path(), &["pack", "reviewer", "a/b/r.zot", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["out"], "a/b/r.zot");
    assert!(v["digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(v["files"].as_u64().unwrap() >= 2, "{v}");
    assert!(t.path().join("a/b/r.zot").is_file());
}

#[test]
fn pack_never_includes_git_and_refuses_credentials() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("reviewer");
    copy_example(&src);
    fs::create_dir_all(src.join(".git/hooks")).unwrap();
    fs::write(src.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir_all(src.join("skills/sub")).unwrap();
    fs::write(src.join("skills/sub/.git"), "gitdir: ../../.git\n").unwrap();

    // .git (a directory, and a gitdir file) is left out
    let o = zot(t.path(), &["pack", "reviewer", "clean.zot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let files = files_of(&t.path().join("clean.zot"));
    assert!(
        files.iter().all(|f| !f.split('/').any(|c| c == ".git")),
        "{files:?}"
    );
    assert!(files.contains(&"manifest.json".to_string()), "{files:?}");

    // credential-looking files are refused, every one named, nothing written
    fs::write(src.join(".env"), "TOKEN=x\n").unwrap();
    fs::create_dir_all(src.join("assets")).unwrap();
    fs::write(src.join("assets/id_ed25519"), "key").unwrap();
    fs::write(
        src.join("assets/notes.txt"),
        "hello\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let before = tree_of(t.path());
    let o = zot(t.path(), &["pack", "reviewer", "out/secret.zot"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for name in [".env", "assets/id_ed25519", "assets/notes.txt"] {
        assert!(err.contains(name), "{name} not named: {err}");
    }
    assert!(err.contains("--include-secrets"), "{err}");
    assert_eq!(tree_of(t.path()), before, "a refused pack changed the disk");

    // --include-secrets packs them
    let o = zot(
        t.path(),
        &["pack", "reviewer", "out/secret.zot", "--include-secrets"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let files = files_of(&t.path().join("out/secret.zot"));
    assert!(files.contains(&".env".to_string()), "{files:?}");
    assert!(files.contains(&"assets/notes.txt".to_string()), "{files:?}");
}

#[test]
fn inspect_shows_entry_fields() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("reviewer");
    copy_example(&src);
    let path = src.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    m["entry"]["pre"] = "!echo prepared".into();
    m["entry"]["default_prompt"] = "Review it".into();
    fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let o = zot(t.path(), &["inspect", "reviewer"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let pre = out
        .lines()
        .find(|l| l.starts_with("entry pre"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        pre.contains("!echo prepared") && pre.contains("bash command"),
        "{pre}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("entry default prompt") && l.ends_with("Review it")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("entry greeting")),
        "{out}"
    );
}

#[test]
fn validate_checks_bundled_skill_front_matter() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("reviewer");
    copy_example(&src);
    let o = zot(t.path(), &["validate", "reviewer"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).0);

    fs::create_dir_all(src.join("skills/broken")).unwrap();
    fs::write(src.join("skills/broken/SKILL.md"), "# no front matter\n").unwrap();
    fs::create_dir_all(src.join("skills/renamed")).unwrap();
    fs::write(
        src.join("skills/renamed/SKILL.md"),
        "---\nname: other\ndescription: d\n---\nbody\n",
    )
    .unwrap();
    fs::create_dir_all(src.join("skills/empty")).unwrap();
    fs::write(src.join("skills/empty/notes.md"), "x").unwrap();
    // the directory and its packed archive give the same diagnostics
    let o = zot(t.path(), &["pack", "reviewer", "r.zot"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    for target in ["reviewer", "r.zot"] {
        let o = zot(t.path(), &["validate", "--json", target]);
        assert_eq!(o.status.code(), Some(1), "{target}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["valid"], false);
        let diags: Vec<(String, String)> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["path"].as_str().unwrap().into(),
                    d["message"].as_str().unwrap().into(),
                )
            })
            .collect();
        let find = |p: &str| {
            diags
                .iter()
                .find(|d| d.0 == p)
                .unwrap_or_else(|| panic!("{p}: {diags:?}"))
        };
        assert!(find("skills/broken/SKILL.md").1.contains("front matter"));
        assert!(find("skills/renamed/SKILL.md")
            .1
            .contains("does not match the folder name"));
        assert!(find("skills/empty/SKILL.md").1.contains("missing"));
        assert_eq!(diags.len(), 3, "{diags:?}");
    }
}
