//! End-to-end: `zot validate` and `zot convert` on agent.toml packages and
//! zotfiles, through the real binary.
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::zot_output;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn validate_valid_agent_toml_json() {
    let o = zot_output(&[
        "validate",
        "--json",
        s(&repo().join("examples/incident-desk")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["name"], "incident-desk");
    assert_eq!(v["files"], 3);
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 0);
}

#[test]
fn validate_invalid_lists_every_diagnostic_and_exits_1() {
    let t = tempfile::tempdir().unwrap();
    fs::write(
        t.path().join("agent.toml"),
        "schema_version = 1\nname = \"bad-agent\"\nfiles = [\"missing.md\"]\n[model]\nprovider = \"p\"\nmodel = \"m\"\nmax_iterations = 5\n[mcpServers.docs]\nurl = \"http://localhost/mcp\"\n",
    )
    .unwrap();
    let o = zot_output(&["validate", "--json", s(t.path())]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["name"], "bad-agent");
    let paths: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    for p in ["model.max_iterations", "mcpServers.docs.url", "files[0]"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
    // Text mode prints `path: message` lines.
    let o = zot_output(&["validate", s(t.path())]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("model.max_iterations: unknown field `max_iterations` in `model`"),
        "{text}"
    );
    assert!(
        text.contains("invalid agent.toml package bad-agent: 3 problems"),
        "{text}"
    );
}

#[test]
fn validate_zip_and_zotfile() {
    let t = tempfile::tempdir().unwrap();
    let zip = t.path().join("desk.zip");
    let o = zot_output(&[
        "convert",
        s(&repo().join("examples/incident-desk")),
        "--to",
        "agent-toml",
        s(&zip),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    let o = zot_output(&["validate", "--json", s(&zip)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["files"],
        3
    );

    let o = zot_output(&[
        "validate",
        "--json",
        s(&repo().join("examples/code-reviewer")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["format"], "zotfile");

    let bad = t.path().join("badzot");
    fs::create_dir(&bad).unwrap();
    fs::write(
        bad.join("manifest.json"),
        r#"{"zotfile": 2, "name": "Bad Name"}"#,
    )
    .unwrap();
    let o = zot_output(&["validate", "--json", s(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert!(v["diagnostics"].as_array().unwrap().len() >= 2, "{v}");

    let empty = t.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let o = zot_output(&["validate", s(&empty)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("no manifest"));
}

#[test]
fn convert_agent_toml_to_zotfile_and_back_is_stable() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs::create_dir_all(src.join(".agents/skills/check")).unwrap();
    fs::write(
        src.join("agent.toml"),
        "schema_version = 1\nname = \"round-trip\"\ndescription = \"Checks things.\"\nintro_markdown = \"Hello.\"\n[network_access]\nallowed = [\"https://example.com/**\"]\n",
    )
    .unwrap();
    fs::write(src.join("instructions.md"), "Check everything twice.\n").unwrap();
    fs::write(
        src.join(".agents/skills/check/SKILL.md"),
        "---\nname: check\ndescription: Checks.\n---\nDo it.\n",
    )
    .unwrap();

    let z = t.path().join("z");
    let o = zot_output(&["convert", s(&src), "--to", "zotfile", s(&z)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(z.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["name"], "round-trip");
    assert_eq!(manifest["permissions"]["net"]["allow"][0], "example.com");
    assert_eq!(
        fs::read_to_string(z.join("AGENT.md")).unwrap(),
        "Check everything twice.\n"
    );
    assert!(z.join("skills/check/SKILL.md").is_file());

    let back = t.path().join("back");
    let o = zot_output(&["convert", s(&z), "--to", "agent-toml", s(&back)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout(&o).contains("every field was carried"),
        "{}",
        stdout(&o)
    );

    // Canonical forms of the original and the round-tripped package match.
    let canon = t.path().join("canon");
    assert_eq!(
        zot_output(&["convert", s(&src), "--to", "agent-toml", s(&canon)])
            .status
            .code(),
        Some(0)
    );
    for f in [
        "agent.toml",
        "instructions.md",
        ".agents/skills/check/SKILL.md",
    ] {
        assert_eq!(
            fs::read(canon.join(f)).unwrap(),
            fs::read(back.join(f)).unwrap(),
            "{f}"
        );
    }
    // And converting again gives the same zotfile.
    let z2 = t.path().join("z2");
    assert_eq!(
        zot_output(&["convert", s(&back), "--to", "zotfile", s(&z2)])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        fs::read(z.join("manifest.json")).unwrap(),
        fs::read(z2.join("manifest.json")).unwrap()
    );
}

#[test]
fn convert_lists_fields_not_carried() {
    let t = tempfile::tempdir().unwrap();
    let z = t.path().join("z");
    let o = zot_output(&[
        "convert",
        s(&repo().join("tests/fixtures/agent_toml/mcp-inline")),
        "--to",
        "zotfile",
        s(&z),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(
        text.contains("mcpServers.docs") && text.contains("mcpServers.local"),
        "{text}"
    );

    let o = zot_output(&[
        "convert",
        s(&repo().join("examples/code-reviewer")),
        "--to",
        "agent-toml",
        s(&t.path().join("a")),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&o);
    assert!(text.contains("not carried"), "{text}");
    assert!(text.contains("permissions.fs.read"), "{text}");
}

#[test]
fn convert_refuses_invalid_sources_and_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(
        src.join("agent.toml"),
        "schema_version = 1\nname = \"x\"\nfiles = [\".env\"]\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let o = zot_output(&["convert", s(&src), "--to", "zotfile", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("credential"));
    assert!(!out.exists());
    let o = zot_output(&["convert", s(&src), "--to", "yaml", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "bad --to is a usage error");
}

#[test]
fn convert_to_a_packed_zot() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("desk.zot");
    let o = zot_output(&[
        "convert",
        s(&repo().join("examples/incident-desk")),
        "--to",
        "zotfile",
        s(&out),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout(&o).contains("digest sha256:"));
    let o = zot_output(&["validate", "--json", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["name"].as_str()),
        (Some("zotfile"), Some("incident-desk"))
    );
    // Back from the archive.
    let back = t.path().join("back");
    let o = zot_output(&["convert", s(&out), "--to", "agent-toml", s(&back)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(back.join(".agents/skills/investigate/SKILL.md").is_file());
}

#[test]
fn validate_accepts_the_manifest_path() {
    let o = zot_output(&[
        "validate",
        s(&repo().join("examples/incident-desk/agent.toml")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("valid agent.toml package incident-desk"));
}
