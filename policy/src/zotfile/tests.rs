//! Conformance tests: one or more per rule of the manifest reference.

use super::*;
use serde_json::json;

fn base() -> Value {
    json!({ "zotfile": 1, "name": "code-reviewer" })
}

/// `base()` with `ptr` (a `/`-separated JSON pointer) set to `v`.
fn with(ptr: &str, v: Value) -> Vec<u8> {
    let mut m = base();
    let mut cur = &mut m;
    let parts: Vec<&str> = ptr.split('/').collect();
    for p in &parts[..parts.len() - 1] {
        cur = cur
            .as_object_mut()
            .unwrap()
            .entry(p.to_string())
            .or_insert_with(|| json!({}));
    }
    cur.as_object_mut()
        .unwrap()
        .insert(parts[parts.len() - 1].to_string(), v);
    serde_json::to_vec(&m).unwrap()
}

fn ok(bytes: &[u8]) -> Parsed {
    match parse(bytes) {
        Ok(p) => p,
        Err(d) => panic!(
            "expected valid, got: {d}\n{}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

fn err(bytes: &[u8]) -> Diagnostics {
    match parse(bytes) {
        Ok(p) => panic!(
            "expected invalid, got {:?}\n{}",
            p.manifest,
            String::from_utf8_lossy(bytes)
        ),
        Err(d) => d,
    }
}

fn err_at(bytes: &[u8], path: &str) -> String {
    let d = err(bytes);
    let e = d
        .errors
        .iter()
        .find(|e| e.path == path)
        .unwrap_or_else(|| panic!("no error at {path}: {d}"));
    e.message.clone()
}

const SPEC_REFERENCE: &str = r#"{
  "zotfile": 1,
  "name": "code-reviewer",
  "version": "0.1.0",
  "description": "Reviews a repository and reports actionable findings.",
  "license": "MIT",
  "runtime": { "min_zot": "0.2.76" },
  "model": {
    "requires": ["tools", "reasoning"],
    "min_context": 64000,
    "preferred": ["claude-opus-4-5", "gpt-5.5"],
    "min_tier": ""
  },
  "permissions": {
    "fs": { "read": ["${workspace}", "${agent_data}"], "write": ["${agent_data}"] },
    "bash": { "mode": "allowlist", "allow": ["git", "go"] },
    "net": { "allow": [] },
    "env": { "read": [] }
  },
  "requirements": { "bin": ["git", "go"], "os": ["darwin", "linux"] },
  "entry": { "greeting": "What should I review?", "default_prompt": null },
  "replace_system_prompt": false
}"#;

#[test]
fn spec_reference_manifest_parses_fully() {
    let p = ok(SPEC_REFERENCE.as_bytes());
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let m = p.manifest;
    assert_eq!(m.zotfile, 1);
    assert_eq!(m.name, "code-reviewer");
    assert_eq!(m.version.as_deref(), Some("0.1.0"));
    assert_eq!(m.license.as_deref(), Some("MIT"));
    assert_eq!(m.runtime.min_zot.as_deref(), Some("0.2.76"));
    assert_eq!(
        m.model.requires,
        vec![Capability::Tools, Capability::Reasoning]
    );
    assert_eq!(m.model.min_context, Some(64000));
    assert_eq!(m.model.preferred, vec!["claude-opus-4-5", "gpt-5.5"]);
    assert_eq!(m.permissions.fs.read, vec!["${workspace}", "${agent_data}"]);
    assert_eq!(m.permissions.fs.write, vec!["${agent_data}"]);
    assert_eq!(m.permissions.bash.mode, BashMode::Allowlist);
    assert_eq!(m.permissions.bash.allow, vec!["git", "go"]);
    assert_eq!(m.requirements.os, vec!["darwin", "linux"]);
    assert_eq!(m.requirements.bin, vec!["git", "go"]);
    assert_eq!(m.entry.greeting.as_deref(), Some("What should I review?"));
    assert_eq!(m.entry.default_prompt, None);
    assert!(!m.replace_system_prompt);
    assert!(!m.uses_unenforced_permissions());
    assert_eq!(m.display_id(), "code-reviewer@0.1.0");
}

#[test]
fn serialized_manifest_parses_back_identically() {
    let m = ok(SPEC_REFERENCE.as_bytes()).manifest;
    let again = ok(&serde_json::to_vec(&m).unwrap()).manifest;
    assert_eq!(m, again);
}

#[test]
fn minimal_manifest_defaults() {
    let m = ok(&serde_json::to_vec(&base()).unwrap()).manifest;
    assert_eq!(m.permissions.bash.mode, BashMode::None);
    assert!(m.permissions.fs.read.is_empty() && m.permissions.fs.write.is_empty());
    assert!(!m.replace_system_prompt);
    assert_eq!(m.display_id(), "code-reviewer");
}

// --- zotfile ---------------------------------------------------------------

#[test]
fn zotfile_must_be_1() {
    assert!(err_at(br#"{"name":"a"}"#, "zotfile").contains("required"));
    assert!(err_at(&with("zotfile", json!(2)), "zotfile").contains("unsupported format version 2"));
    err_at(&with("zotfile", json!("1")), "zotfile");
    err_at(&with("zotfile", json!(1.5)), "zotfile");
    err_at(&with("zotfile", json!(0)), "zotfile");
    ok(&with("zotfile", json!(1)));
}

// --- name ------------------------------------------------------------------

#[test]
fn name_accepts_flat_lowercase() {
    for n in [
        "code-reviewer",
        "repo_onboarder",
        "acme.audit",
        "a",
        "x1",
        "0day",
        "a.b-c_d9",
    ] {
        assert_eq!(validate_name(n), Ok(()), "{n}");
        ok(&with("name", json!(n)));
    }
}

#[test]
fn name_rejects_bad_names() {
    for n in [
        "",
        "Code",
        "code reviewer",
        "acme/agent",
        "../x",
        "..",
        ".",
        "./a",
        "/abs",
        "a\\b",
        "-x",
        "x-",
        ".x",
        "x.",
        "_x",
        "x_",
        "é",
        "a:b",
        "a\0",
    ] {
        assert!(validate_name(n).is_err(), "{n:?} accepted");
        err_at(&with("name", json!(n)), "name");
    }
    assert!(validate_name(&"a".repeat(MAX_NAME_LEN + 1)).is_err());
    assert!(validate_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
    assert_eq!(validate_name("acme/agent"), Err(NameError::Namespaced));
    assert!(matches!(validate_name(".."), Err(NameError::PathLike(_))));
    err_at(br#"{"zotfile":1}"#, "name");
    err_at(&with("name", json!(7)), "name");
}

// --- version, description, license -----------------------------------------

#[test]
fn version_is_not_validated_but_warns_when_not_semver() {
    let p = ok(&with("version", json!("banana")));
    assert_eq!(p.manifest.version.as_deref(), Some("banana"));
    assert!(p.warnings.iter().any(|w| w.path == "version"));
    assert!(ok(&with("version", json!("1.2.3-rc.1")))
        .warnings
        .is_empty());
    err_at(&with("version", json!(1)), "version");
    err_at(&with("description", json!(["x"])), "description");
    err_at(&with("license", json!(true)), "license");
}

// --- runtime.min_zot -------------------------------------------------------

#[test]
fn min_zot_must_be_semver() {
    ok(&with("runtime/min_zot", json!("0.2.76")));
    ok(&with("runtime/min_zot", json!("")));
    for bad in ["banana", "0.2", "v0.2.76", ">=0.2.0"] {
        err_at(&with("runtime/min_zot", json!(bad)), "runtime.min_zot");
    }
    err_at(&with("runtime", json!("0.2.76")), "runtime");
}

#[test]
fn min_zot_compares_as_semver() {
    let m = |v: &str| ok(&with("runtime/min_zot", json!(v))).manifest;
    assert_eq!(check_min_zot(&m("0.2.76"), "0.3.0"), Ok(()));
    assert_eq!(check_min_zot(&m("0.3.0"), "0.3.0"), Ok(()));
    // semver, not string order: 0.10.0 > 0.9.0
    assert!(matches!(
        check_min_zot(&m("0.10.0"), "0.9.0"),
        Err(MinZotError::TooOld { .. })
    ));
    assert!(matches!(
        check_min_zot(&m("0.3.1"), "0.3.0"),
        Err(MinZotError::TooOld { .. })
    ));
    // a pre-release is older than its release
    assert!(matches!(
        check_min_zot(&m("0.3.0"), "0.3.0-dev"),
        Err(MinZotError::TooOld { .. })
    ));
    // unversioned development builds cannot satisfy a non-empty minimum
    assert!(matches!(
        check_min_zot(&m("0.1.0"), ""),
        Err(MinZotError::Unversioned { .. })
    ));
    assert!(matches!(
        check_min_zot(&m("0.1.0"), "dev"),
        Err(MinZotError::Unversioned { .. })
    ));
    // ... but no minimum is always fine
    assert_eq!(check_min_zot(&m(""), "dev"), Ok(()));
    assert_eq!(
        check_min_zot(&ok(&with("name", json!("a"))).manifest, ""),
        Ok(())
    );
}

// --- model -----------------------------------------------------------------

#[test]
fn model_requires_known_capabilities() {
    let m = ok(&with(
        "model/requires",
        json!(["tools", "reasoning", "vision", "tools"]),
    ))
    .manifest;
    assert_eq!(
        m.model.requires,
        vec![Capability::Tools, Capability::Reasoning, Capability::Vision]
    );
    let msg = err_at(
        &with("model/requires", json!(["tool_calling"])),
        "model.requires",
    );
    assert!(msg.contains("use \"tools\""), "{msg}");
    let msg = err_at(
        &with("model/requires", json!(["telepathy"])),
        "model.requires",
    );
    assert!(msg.contains("unknown capability"), "{msg}");
    err_at(&with("model/requires", json!("tools")), "model.requires");
    err_at(&with("model/requires", json!([1])), "model.requires");
}

#[test]
fn model_min_context_preferred_min_tier() {
    assert_eq!(
        ok(&with("model/min_context", json!(64000)))
            .manifest
            .model
            .min_context,
        Some(64000)
    );
    for bad in [json!(-1), json!("64000"), json!(1.5)] {
        err_at(&with("model/min_context", bad), "model.min_context");
    }
    assert_eq!(
        ok(&with("model/preferred", json!(["a", "b"])))
            .manifest
            .model
            .preferred,
        vec!["a", "b"]
    );
    err_at(&with("model/preferred", json!([""])), "model.preferred");
    ok(&with("model/min_tier", json!("")));
    ok(&with("model/min_tier", Value::Null));
    let msg = err_at(&with("model/min_tier", json!("pro")), "model.min_tier");
    assert!(msg.contains("not supported"), "{msg}");
}

// --- permissions.fs ----------------------------------------------------------

#[test]
fn fs_scopes_accept_variables_relative_and_absolute() {
    let m = ok(&with(
        "permissions/fs",
        json!({ "read": ["${workspace}", "src", "go.mod", "./docs/", "${workspace}/lib", "/usr/share/dict"], "write": ["${agent_data}", "${agent_data}/cache"] }),
    ))
    .manifest;
    let ws = Path::new("/w");
    let ad = Path::new("/d");
    let read: Vec<PathBuf> = m
        .fs_read_scopes()
        .iter()
        .map(|s| s.resolve(ws, ad))
        .collect();
    assert_eq!(
        read,
        [
            "/w",
            "/w/src",
            "/w/go.mod",
            "/w/docs",
            "/w/lib",
            "/usr/share/dict"
        ]
        .map(PathBuf::from)
        .to_vec()
    );
    let write: Vec<PathBuf> = m
        .fs_write_scopes()
        .iter()
        .map(|s| s.resolve(ws, ad))
        .collect();
    assert_eq!(write, ["/d", "/d/cache"].map(PathBuf::from).to_vec());
}

#[test]
fn fs_scopes_reject_escapes_and_unknown_variables() {
    for bad in [
        "",
        "..",
        "../etc",
        "src/../../etc",
        "${workspace}/..",
        "${home}",
        "${workspace",
        "${workspace}x",
        "a/${workspace}",
        "~/.ssh",
        "~",
    ] {
        let msg = err_at(
            &with("permissions/fs/read", json!([bad])),
            "permissions.fs.read",
        );
        assert!(msg.starts_with("item 0:"), "{msg}");
        err_at(
            &with("permissions/fs/write", json!([bad])),
            "permissions.fs.write",
        );
    }
    err_at(
        &with("permissions/fs/read", json!("${workspace}")),
        "permissions.fs.read",
    );
    err_at(&with("permissions/fs", json!([])), "permissions.fs");
}

// --- permissions.bash ----------------------------------------------------------

#[test]
fn bash_modes() {
    assert_eq!(
        ok(&with("permissions/bash", json!({"mode": "none"})))
            .manifest
            .permissions
            .bash
            .mode,
        BashMode::None
    );
    assert_eq!(
        ok(&with("permissions/bash", json!({"mode": "ask"})))
            .manifest
            .permissions
            .bash
            .mode,
        BashMode::Ask
    );
    assert_eq!(
        ok(&with("permissions/bash", json!({})))
            .manifest
            .permissions
            .bash
            .mode,
        BashMode::None
    );
    let m = ok(&with(
        "permissions/bash",
        json!({"mode": "allowlist", "allow": ["git", "go", "grep"]}),
    ))
    .manifest;
    assert_eq!(m.permissions.bash.allow, vec!["git", "go", "grep"]);
    let msg = err_at(
        &with("permissions/bash", json!({"mode": "yolo"})),
        "permissions.bash.mode",
    );
    assert!(msg.contains("none, ask, allowlist"), "{msg}");
    err_at(
        &with("permissions/bash", json!({"mode": "Ask"})),
        "permissions.bash.mode",
    );
}

#[test]
fn bash_empty_allowlist_is_invalid() {
    let msg = err_at(
        &with(
            "permissions/bash",
            json!({"mode": "allowlist", "allow": []}),
        ),
        "permissions.bash.allow",
    );
    assert!(msg.contains("at least one"), "{msg}");
    err_at(
        &with("permissions/bash", json!({"mode": "allowlist"})),
        "permissions.bash.allow",
    );
}

#[test]
fn bash_allow_entries_are_command_names() {
    for bad in [
        "/usr/bin/git",
        "git status",
        "rm;ls",
        "$(id)",
        "",
        "a|b",
        "..",
    ] {
        err_at(
            &with(
                "permissions/bash",
                json!({"mode": "allowlist", "allow": [bad]}),
            ),
            "permissions.bash.allow",
        );
    }
    let msg = err_at(
        &with(
            "permissions/bash",
            json!({"mode": "allowlist", "allow": ["/usr/bin/git"]}),
        ),
        "permissions.bash.allow",
    );
    assert!(msg.contains("\"git\""), "{msg}");
    ok(&with(
        "permissions/bash",
        json!({"mode": "allowlist", "allow": ["g++", "python3.12", "clang-format"]}),
    ));
}

#[test]
fn bash_allow_without_allowlist_mode_warns() {
    let p = ok(&with(
        "permissions/bash",
        json!({"mode": "none", "allow": ["git"]}),
    ));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.path == "permissions.bash.allow"),
        "{:?}",
        p.warnings
    );
}

// --- permissions.net / env -----------------------------------------------------

#[test]
fn net_is_flagged_unenforced_env_is_not() {
    let p = ok(&with(
        "permissions",
        json!({"net": {"allow": []}, "env": {"read": []}}),
    ));
    assert!(!p.manifest.uses_unenforced_permissions());
    let m = ok(&with(
        "permissions",
        json!({"net": {"allow": ["api.github.com", "example.com:443"]}}),
    ))
    .manifest;
    assert_eq!(m.unenforced_permissions(), vec!["permissions.net.allow"]);
    let m = ok(&with(
        "permissions",
        json!({"env": {"read": ["GITHUB_TOKEN"]}}),
    ))
    .manifest;
    assert!(m.unenforced_permissions().is_empty());
    let m = ok(&with(
        "permissions",
        json!({"env": {"read": ["GITHUB_TOKEN", "MYAPP_*"]}}),
    ))
    .manifest;
    assert_eq!(m.env_names().unwrap().len(), 2);
    for bad in ["MYAPP*", "*", "_*", "A_B*C"] {
        err_at(
            &with("permissions", json!({"env": {"read": [bad]}})),
            "permissions.env.read",
        );
    }
    let m = ok(&with(
        "permissions",
        json!({"net": {"allow": ["*.example.com", "[::1]:8080", "10.0.0.0/8", "Bücher.example"]}}),
    ))
    .manifest;
    assert_eq!(
        m.net_rules().unwrap().to_string(),
        "*.example.com, [::1]:8080, 10.0.0.0/8, xn--bcher-kva.example"
    );
    for bad in ["*", "example.com:0", "a*.example.com", "10.1.0.0/8", "127.1", "https://example.com"] {
        err_at(
            &with("permissions", json!({"net": {"allow": [bad]}})),
            "permissions.net.allow",
        );
    }
    err_at(
        &with("permissions", json!({"env": {"read": ["1BAD"]}})),
        "permissions.env.read",
    );
    err_at(
        &with("permissions", json!({"env": {"read": ["A-B"]}})),
        "permissions.env.read",
    );
    err_at(
        &with("permissions", json!({"net": {"allow": ["http://x/y"]}})),
        "permissions.net.allow",
    );
    err_at(
        &with("permissions", json!({"net": {"allow": [""]}})),
        "permissions.net.allow",
    );
}

// --- requirements ----------------------------------------------------------------

#[test]
fn requirements_os_uses_go_names() {
    let m = ok(&with(
        "requirements/os",
        json!(["darwin", "linux", "windows", "freebsd"]),
    ))
    .manifest;
    assert_eq!(m.requirements.os.len(), 4);
    let msg = err_at(
        &with("requirements/os", json!(["macos"])),
        "requirements.os",
    );
    assert!(msg.contains("darwin"), "{msg}");
    err_at(
        &with("requirements/os", json!(["Linux"])),
        "requirements.os",
    );
    err_at(&with("requirements/os", json!("linux")), "requirements.os");
}

#[test]
fn requirements_bin_are_command_names() {
    assert_eq!(
        ok(&with("requirements/bin", json!(["git", "python3"])))
            .manifest
            .requirements
            .bin,
        vec!["git", "python3"]
    );
    err_at(
        &with("requirements/bin", json!(["/usr/bin/git"])),
        "requirements.bin",
    );
    err_at(
        &with("requirements/bin", json!(["git status"])),
        "requirements.bin",
    );
}

// --- entry, replace_system_prompt ----------------------------------------------

#[test]
fn entry_fields() {
    let m = ok(&with(
        "entry",
        json!({"greeting": "hi", "pre": "!npx -y skills add x", "default_prompt": "Review"}),
    ))
    .manifest;
    assert_eq!(m.entry.greeting.as_deref(), Some("hi"));
    assert_eq!(m.entry.pre.as_deref(), Some("!npx -y skills add x"));
    assert_eq!(m.entry.default_prompt.as_deref(), Some("Review"));
    assert_eq!(
        ok(&with("entry", json!({"default_prompt": null})))
            .manifest
            .entry
            .default_prompt,
        None
    );
    err_at(
        &with("entry", json!({"default_prompt": 3})),
        "entry.default_prompt",
    );
    err_at(&with("entry", json!({"pre": ["a"]})), "entry.pre");
    err_at(&with("entry", json!({"greeting": false})), "entry.greeting");
}

#[test]
fn replace_system_prompt_is_a_bool() {
    assert!(
        ok(&with("replace_system_prompt", json!(true)))
            .manifest
            .replace_system_prompt
    );
    err_at(
        &with("replace_system_prompt", json!("yes")),
        "replace_system_prompt",
    );
}

// --- unknown fields, all errors at once, JSON shape ----------------------------

#[test]
fn unknown_fields_warn_with_did_you_mean() {
    let p = ok(&with("permisions", json!({})));
    let w = p
        .warnings
        .iter()
        .find(|w| w.path == "permisions")
        .expect("warning");
    assert!(
        w.message.contains("did you mean `permissions`"),
        "{}",
        w.message
    );
    let p = ok(&with("x-publisher", json!("acme")));
    let w = p
        .warnings
        .iter()
        .find(|w| w.path == "x-publisher")
        .expect("warning");
    assert!(!w.message.contains("did you mean"), "{}", w.message);
    let p = ok(&with("permissions/bash/alow", json!(["git"])));
    let w = p
        .warnings
        .iter()
        .find(|w| w.path == "permissions.bash.alow")
        .expect("nested warning");
    assert!(w.message.contains("`allow`"), "{}", w.message);
}

#[test]
fn all_errors_are_reported_at_once() {
    let bytes = serde_json::to_vec(&json!({
        "zotfile": 2,
        "name": "Bad Name",
        "model": { "requires": ["tool_calling"], "min_tier": "gold" },
        "permissions": { "bash": { "mode": "allowlist", "allow": [] }, "fs": { "read": ["../x"] } },
        "requirements": { "os": ["macos"] },
        "replace_system_prompt": 1
    }))
    .unwrap();
    let d = err(&bytes);
    let paths: BTreeSet<&str> = d.errors.iter().map(|e| e.path.as_str()).collect();
    for p in [
        "zotfile",
        "name",
        "model.requires",
        "model.min_tier",
        "permissions.bash.allow",
        "permissions.fs.read",
        "requirements.os",
        "replace_system_prompt",
    ] {
        assert!(paths.contains(p), "missing {p} in {d}");
    }
    let text = d.to_string();
    assert!(text.contains("permissions.bash.allow: "), "{text}");
    assert!(text.starts_with("invalid manifest (8 errors)"), "{text}");
}

#[test]
fn json_shape_errors() {
    assert!(err(b"").to_string().contains("not valid JSON"));
    assert!(err(b"{\"zotfile\":1,")
        .to_string()
        .contains("not valid JSON"));
    assert!(err(b"[1]").to_string().contains("top level"));
    assert!(err(b"\xff\xfe").to_string().contains("UTF-8"));
    assert!(err(b"{\"zotfile\":1,\"name\":\"a\"} trailing")
        .to_string()
        .contains("not valid JSON"));
    // a UTF-8 byte-order mark is tolerated
    ok(b"\xEF\xBB\xBF{\"zotfile\":1,\"name\":\"a\"}");
}

#[test]
fn duplicate_keys_are_rejected() {
    let d = err(br#"{"zotfile":1,"name":"a","permissions":{"bash":{"mode":"none","mode":"ask"}}}"#);
    assert!(d.to_string().contains("duplicate key `mode`"), "{d}");
    err(br#"{"zotfile":1,"name":"a","name":"b"}"#);
}
