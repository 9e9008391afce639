//! Folder collection rules and limits, each accepted and rejected: one
//! manifest, file selection forms, destinations, credential paths,
//! symlinks, skills, legacy folders, and the size/count/nesting limits.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use zot_package::agent_toml::{load, validate, AgentPackage, Diagnostics};

const MIB: usize = 1024 * 1024;

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

/// A package folder with `agent.toml` = header + `body`, plus files.
fn pkg(body: &str, files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "agent.toml",
        format!("schema_version = 1\nname = \"t\"\n{body}").as_bytes(),
    );
    for (rel, bytes) in files {
        put(t.path(), rel, bytes);
    }
    t
}

fn ok(t: &tempfile::TempDir) -> AgentPackage {
    load(t.path()).unwrap_or_else(|d| panic!("expected valid, got:\n{d}"))
}

fn err(t: &tempfile::TempDir) -> Diagnostics {
    match load(t.path()) {
        Ok(p) => panic!(
            "expected invalid, loaded {:?}",
            p.files.iter().map(|f| &f.dest).collect::<Vec<_>>()
        ),
        Err(d) => d,
    }
}

fn assert_diag(d: &Diagnostics, path: &str, needle: &str) {
    assert!(
        d.iter()
            .any(|x| x.path == path && x.message.contains(needle)),
        "expected `{path}: ...{needle}...`, got:\n{d}"
    );
}

fn dests(p: &AgentPackage) -> Vec<String> {
    p.files.iter().map(|f| f.dest.clone()).collect()
}

#[test]
fn exactly_one_manifest() {
    let t = pkg("", &[]);
    ok(&t);
    put(t.path(), "agent.yaml", b"schema_version: 1\nname: t\n");
    assert!(err(&t).mentions("more than one manifest"));
    let empty = tempfile::tempdir().unwrap();
    assert!(err(&empty).mentions("no manifest at the package root"));
    // Nested manifests are not a root manifest.
    let nested = tempfile::tempdir().unwrap();
    put(
        nested.path(),
        "sub/agent.toml",
        b"schema_version = 1\nname = \"t\"\n",
    );
    assert!(err(&nested).mentions("no manifest"));
}

#[test]
fn manifest_symlink_fails() {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "real.toml", b"schema_version = 1\nname = \"t\"\n");
    symlink(t.path().join("real.toml"), t.path().join("agent.toml")).unwrap();
    assert_diag(&err(&t), "agent.toml", "symlink");
}

#[test]
fn instructions_sources() {
    assert_eq!(
        ok(&pkg("", &[("instructions.md", b"from file")])).instructions,
        "from file"
    );
    assert_eq!(
        ok(&pkg(
            "instructions = \"inline\"\n",
            &[("instructions.md", b"ignored")]
        ))
        .instructions,
        "inline"
    );
    assert_eq!(
        ok(&pkg(
            "instructions_file = \"p/x.md\"\n",
            &[("p/x.md", b"chosen")]
        ))
        .instructions,
        "chosen"
    );
    assert_diag(
        &err(&pkg("instructions_file = \"p/x.md\"\n", &[])),
        "instructions_file",
        "does not exist",
    );
    let big = vec![b'x'; MIB + 1];
    assert_diag(
        &err(&pkg("", &[("instructions.md", &big)])),
        "instructions.md",
        "1 MiB",
    );
    ok(&pkg("", &[("instructions.md", &vec![b'x'; MIB])]));
    assert_diag(
        &err(&pkg("", &[("instructions.md", &[0xff, 0xfe])])),
        "instructions.md",
        "UTF-8",
    );
    // Instructions never become session files unless selected.
    assert!(ok(&pkg("", &[("instructions.md", b"i")])).files.is_empty());
    assert_eq!(
        dests(&ok(&pkg(
            "files = [\"instructions.md\"]\n",
            &[("instructions.md", b"i")]
        ))),
        ["instructions.md"]
    );
}

#[test]
fn exact_directory_and_glob_selection() {
    let files: &[(&str, &[u8])] = &[
        ("runbook.md", b"r"),
        ("notes.md", b"n"),
        ("data/a.csv", b"a"),
        ("data/deep/b.csv", b"b"),
        ("src/main.py", b"m"),
    ];
    assert_eq!(
        dests(&ok(&pkg("files = [\"runbook.md\"]\n", files))),
        ["runbook.md"]
    );
    assert_eq!(
        dests(&ok(&pkg("files = [\"data\"]\n", files))),
        ["data/a.csv", "data/deep/b.csv"]
    );
    assert_eq!(
        dests(&ok(&pkg("files = [\"data/**\"]\n", files))),
        ["data/a.csv", "data/deep/b.csv"]
    );
    assert_eq!(
        dests(&ok(&pkg("files = [\"*.md\"]\n", files))),
        ["notes.md", "runbook.md"],
        "`*` stays in one folder"
    );
    assert_eq!(
        dests(&ok(&pkg("files = [\"**/*.csv\"]\n", files))),
        ["data/a.csv", "data/deep/b.csv"]
    );
    assert_eq!(
        dests(&ok(&pkg("files = [\"data/*\"]\n", files))),
        ["data/a.csv", "data/deep/b.csv"],
        "a matched folder brings its files"
    );
    let all = dests(&ok(&pkg("files = [\".\"]\n", files)));
    assert!(
        all.contains(&"agent.toml".to_string()) && all.contains(&"src/main.py".to_string()),
        "{all:?}"
    );
    assert!(ok(&pkg("files = []\n", files)).files.is_empty());
    assert!(
        ok(&pkg("", files)).files.is_empty(),
        "nothing is included unless selected"
    );
}

#[test]
fn every_source_must_match() {
    let t = pkg(
        "files = [\"missing.md\", \"empty\", \"*.nope\", \"ok.md\"]\n",
        &[("ok.md", b"x")],
    );
    fs::create_dir(t.path().join("empty")).unwrap();
    let d = err(&t);
    assert_diag(&d, "files[0]", "matches no file");
    assert_diag(&d, "files[1]", "matches no file");
    assert_diag(&d, "files[2]", "matches no file");
    assert_eq!(d.len(), 3, "{d}");
}

#[test]
fn mappings_and_readonly_defaults() {
    let p = ok(&pkg(
        "files = [{ source = \"fixtures\", path = \"data\" }, { source = \"t/r.md\", path = \"/workspace/reports/current.md\", is_readonly = false }, { source = \"x.md\", path = \"/y.md\" }]\n",
        &[("fixtures/a.csv", b"a"), ("fixtures/s/b.csv", b"b"), ("t/r.md", b"r"), ("x.md", b"x")],
    ));
    assert_eq!(
        dests(&p),
        ["data/a.csv", "data/s/b.csv", "reports/current.md", "y.md"]
    );
    let ro: Vec<bool> = p.files.iter().map(|f| f.readonly).collect();
    assert_eq!(ro, [true, true, false, true]);
    let inline = ok(&pkg("[[files]]\npath = \"/workspace/n.md\"\ncontent = \"c\"\n[[files]]\npath = \"/r.md\"\ncontent = \"c\"\nis_readonly = true\n", &[]));
    assert_eq!(dests(&inline), ["n.md", "r.md"]);
    assert_eq!(
        inline.files.iter().map(|f| f.readonly).collect::<Vec<_>>(),
        [false, true]
    );
}

#[test]
fn glob_with_destination_is_exact_for_each_match() {
    ok(&pkg(
        "files = [{ source = \"*.md\", path = \"one.md\" }]\n",
        &[("a.md", b"a")],
    ));
    let d = err(&pkg(
        "files = [{ source = \"*.md\", path = \"one.md\" }]\n",
        &[("a.md", b"a"), ("b.md", b"b")],
    ));
    assert!(d.mentions("destinations must be unique"), "{d}");
}

#[test]
fn destinations_unique() {
    // The same file selected twice is merged.
    assert_eq!(
        dests(&ok(&pkg(
            "files = [\"data\", \"data/**\", \"data/a\"]\n",
            &[("data/a", b"a")]
        ))),
        ["data/a"]
    );
    let d = err(&pkg(
        "files = [\"a.md\", { source = \"b.md\", path = \"a.md\" }]\n",
        &[("a.md", b"a"), ("b.md", b"b")],
    ));
    assert_diag(&d, "files[1]", "also produced by files[0]");
    let d = err(&pkg(
        "files = [\"a.md\", { source = \"a.md\", is_readonly = false }]\n",
        &[("a.md", b"a")],
    ));
    assert!(d.mentions("unique"), "{d}");
}

#[test]
fn no_parent_child_collisions() {
    let d = err(&pkg(
        "files = [\"d/x\", { path = \"d\", content = \"file\" }]\n",
        &[("d/x", b"x")],
    ));
    assert!(d.mentions("collides with the file `d`"), "{d}");
    ok(&pkg(
        "files = [\"d/x\", { path = \"dx\", content = \"file\" }]\n",
        &[("d/x", b"x")],
    ));
}

#[test]
fn credential_paths_skipped_in_folders_and_globs() {
    let t = pkg(
        "files = [\".\"]\n",
        &[
            ("ok.txt", b"ok"),
            (".env", b"SECRET=1"),
            ("cfg/.env.local", b"SECRET=1"),
            (".ssh/id_ed25519", b"key"),
            (".git/config", b"[core]"),
            (".aws/credentials", b"x"),
            ("certs/server.pem", b"x"),
            (".config/gcloud/creds.json", b"x"),
        ],
    );
    let got = dests(&ok(&t));
    assert_eq!(got, ["agent.toml", "ok.txt"]);
    let g = pkg(
        "files = [\"**\"]\n",
        &[("ok.txt", b"ok"), ("a/.env", b"S"), (".git/HEAD", b"h")],
    );
    assert_eq!(dests(&ok(&g)), ["agent.toml", "ok.txt"]);
}

#[test]
fn hidden_credential_files_are_never_read() {
    // FIFOs block a reader forever and are rejected when stat'ed as
    // entries: if collection touched them, the load would hang or fail.
    let t = pkg(
        "files = [\"data\", \"**/*.txt\"]\n",
        &[("data/ok.txt", b"ok")],
    );
    for fifo in [".env", "data/.env", "data/.ssh", ".git"] {
        let p = t.path().join(fifo);
        nix_mkfifo(&p);
    }
    // Also a credential symlink pointing somewhere secret: skipped, not followed.
    symlink("/etc/shadow", t.path().join("data/.netrc")).unwrap();
    assert_eq!(dests(&ok(&t)), ["data/ok.txt"]);
}

fn nix_mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        p.display()
    );
}

#[test]
fn explicit_credential_sources_fail() {
    for src in [".env", ".ssh", "cfg/.env.local", ".git/config"] {
        let t = pkg(
            &format!("files = [\"{src}\"]\n"),
            &[
                (".env", b"x"),
                (".ssh/id_rsa", b"x"),
                ("cfg/.env.local", b"x"),
                (".git/config", b"x"),
            ],
        );
        assert!(err(&t).mentions("credential"), "{src}");
    }
}

#[test]
fn symlinks_fail() {
    let t = pkg(
        "files = [\"data\"]\n",
        &[("data/a", b"a"), ("outside", b"o")],
    );
    symlink(t.path().join("outside"), t.path().join("data/link")).unwrap();
    assert_diag(&err(&t), "data/link", "symlinks are not allowed");

    let t = pkg("files = [\"link.md\"]\n", &[("real.md", b"r")]);
    symlink("real.md", t.path().join("link.md")).unwrap();
    assert!(err(&t).mentions("symlink"));

    // A symlinked parent folder is never traversed.
    let outside = tempfile::tempdir().unwrap();
    put(outside.path(), "secret.txt", b"s");
    let t = pkg("files = [\"dir/secret.txt\"]\n", &[]);
    symlink(outside.path(), t.path().join("dir")).unwrap();
    assert!(err(&t).mentions("symlink"));

    let t = pkg("", &[]);
    symlink("/etc/passwd", t.path().join("instructions.md")).unwrap();
    assert!(err(&t).mentions("symlink"));
}

#[test]
fn runtime_file_count_limit() {
    let names: Vec<String> = (0..101).map(|i| format!("d/f{i:03}")).collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    ok(&pkg("files = [\"d\"]\n", &files[..100]));
    assert!(err(&pkg("files = [\"d\"]\n", &files)).mentions("the limit is 100"));
}

#[test]
fn per_file_limit() {
    ok(&pkg("files = [\"big\"]\n", &[("big", &vec![0u8; MIB])]));
    assert_diag(
        &err(&pkg("files = [\"big\"]\n", &[("big", &vec![0u8; MIB + 1])])),
        "files[0]",
        "1 MiB",
    );
}

#[test]
fn total_decoded_limit() {
    let chunk = vec![0u8; MIB];
    let five: Vec<(String, &[u8])> = (0..5).map(|i| (format!("d/{i}"), &chunk[..])).collect();
    let f5: Vec<(&str, &[u8])> = five.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    ok(&pkg("files = [\"d\"]\n", &f5));
    // Five files from disk plus one inline byte goes over 5 MiB.
    let t = pkg(
        "files = [\"d\", { path = \"extra\", content = \"x\" }]\n",
        &f5,
    );
    assert!(err(&t).mentions("the limit is 5 MiB"));
}

#[test]
fn package_size_limit() {
    // 5 MiB of runtime files + 6 MiB of skill assets > 10 MiB.
    let chunk = vec![0u8; MIB];
    let mut files: Vec<(String, &[u8])> = (0..5).map(|i| (format!("d/{i}"), &chunk[..])).collect();
    files.push((
        ".agents/skills/s/SKILL.md".into(),
        b"---\nname: s\ndescription: d\n---\n",
    ));
    for i in 0..6 {
        files.push((format!(".agents/skills/s/assets/{i}"), &chunk[..]));
    }
    let f: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    assert!(err(&pkg("files = [\"d\"]\n", &f)).mentions("10 MiB"));
    ok(&pkg("files = [\"d\"]\n", &f[..10]));
}

#[test]
fn nesting_limit() {
    let deep31 = (0..31)
        .map(|i| format!("n{i}"))
        .collect::<Vec<_>>()
        .join("/");
    ok(&pkg(
        "files = [\"n0\"]\n",
        &[(&format!("{deep31}/f"), b"x")],
    ));
    let deep33 = (0..33)
        .map(|i| format!("n{i}"))
        .collect::<Vec<_>>()
        .join("/");
    assert!(err(&pkg(
        "files = [\"n0\"]\n",
        &[(&format!("{deep33}/f"), b"x")]
    ))
    .mentions("nesting deeper than 32"));
}

#[test]
fn visited_entries_limit() {
    let t = pkg("files = [\"*.md\"]\n", &[("a.md", b"a")]);
    for i in 0..1000 {
        put(t.path(), &format!("junk/{i}"), b"");
    }
    ok(&t);
    for i in 1000..1100 {
        put(t.path(), &format!("junk/{i}"), b"");
    }
    assert!(err(&t).mentions("more than 1024 entries"));
}

fn skill(name: &str, fm_name: &str) -> (String, Vec<u8>) {
    (
        format!(".agents/skills/{name}/SKILL.md"),
        format!("---\nname: {fm_name}\ndescription: d\n---\nbody\n").into_bytes(),
    )
}

#[test]
fn skills_discovery_and_rules() {
    let (p, b) = skill("good", "good");
    let t = pkg(
        "",
        &[
            (&p, &b),
            (".agents/skills/good/refs/a.md", b"a"),
            (".agents/skills/good/.env", b"S"),
            (".agents/skills/README.md", b"loose file"),
        ],
    );
    let s = &ok(&t).skills[0];
    assert_eq!(
        s.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        ["SKILL.md", "refs/a.md"]
    );

    let (p, b) = skill("good", "other");
    assert!(err(&pkg("", &[(&p, &b)])).mentions("does not match the folder name"));
    assert!(err(&pkg("", &[(".agents/skills/x/notes.md", b"n")]))
        .mentions("incomplete skill: missing SKILL.md"));
    assert!(err(&pkg(
        "",
        &[(".agents/skills/x/SKILL.md", b"no front matter")]
    ))
    .mentions("front matter"));
    assert!(err(&pkg(
        "",
        &[(".agents/skills/x/SKILL.md", b"---\nname: x\n---\n")]
    ))
    .mentions("description"));
    let (p, b) = skill("Bad_Name", "Bad_Name");
    assert!(err(&pkg("", &[(&p, &b)])).mentions("invalid skill name"));
}

#[test]
fn explicit_skill_roots() {
    let t = pkg(
        "skills = [\"team\"]\n",
        &[("team/a/SKILL.md", b"---\nname: a\ndescription: d\n---\n")],
    );
    assert_eq!(ok(&t).skills[0].name, "a");
    assert_diag(
        &err(&pkg("skills = [\"nope\"]\n", &[])),
        "skills[0]",
        "does not exist",
    );
    // Explicit roots replace discovery.
    let (p, b) = skill("auto", "auto");
    assert!(ok(&pkg("skills = []\n", &[(&p, &b)])).skills.is_empty());
}

#[test]
fn legacy_folders() {
    let t = pkg("", &[("files/a.txt", b"a"), ("files/d/b.txt", b"b")]);
    assert_eq!(dests(&ok(&t)), ["a.txt", "d/b.txt"]);
    assert!(
        ok(&pkg("files = []\n", &[("files/a.txt", b"a")]))
            .files
            .is_empty(),
        "files = [] disables legacy discovery"
    );
    let legacy = pkg(
        "",
        &[(
            "skills/old/SKILL.md",
            b"---\nname: old\ndescription: d\n---\n",
        )],
    );
    assert_eq!(ok(&legacy).skills[0].name, "old");
    let (p, b) = skill("new", "new");
    let both = pkg(
        "",
        &[
            (
                "skills/old/SKILL.md",
                b"---\nname: old\ndescription: d\n---\n",
            ),
            (&p, &b),
        ],
    );
    assert!(err(&both).mentions("choose one"));
    let chosen = pkg(
        "skills = [\".agents/skills\"]\n",
        &[
            (
                "skills/old/SKILL.md",
                b"---\nname: old\ndescription: d\n---\n",
            ),
            (&p, &b),
        ],
    );
    assert_eq!(ok(&chosen).skills[0].name, "new");
}

#[test]
fn all_diagnostics_collected_at_once() {
    let t = pkg(
        "bogus = 1\nfiles = [\"missing\", \".env\"]\nmax_iterations = 0\n",
        &[(".agents/skills/x/a.md", b"a")],
    );
    let r = validate(t.path());
    assert!(!r.valid());
    assert_eq!(r.name.as_deref(), Some("t"));
    assert!(r.diagnostics.len() >= 5, "{}", r.diagnostics);
}

#[test]
fn bad_input_changes_nothing_on_disk() {
    let t = pkg("files = [\"missing\"]\n", &[("a", b"a")]);
    let before: Vec<_> = walk(t.path());
    let _ = load(t.path());
    assert_eq!(walk(t.path()), before);
}

fn walk(p: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        v.push(e.file_name().to_string_lossy().into_owned());
        if e.file_type().unwrap().is_dir() {
            v.extend(walk(&e.path()));
        }
    }
    v.sort();
    v
}

#[test]
fn seeding_a_session_directory() {
    use std::os::unix::fs::PermissionsExt;
    let (sp, sb) = skill("s", "s");
    let p = ok(&pkg(
        "files = [\"r.md\", { path = \"d/w.md\", content = \"w\" }]\n",
        &[("r.md", b"r"), (&sp, &sb)],
    ));
    let out = tempfile::tempdir().unwrap();
    p.seed_files(out.path()).unwrap();
    p.seed_skills(out.path()).unwrap();
    let mode = |rel: &str| {
        fs::metadata(out.path().join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("r.md"), 0o444);
    assert_eq!(mode("d/w.md"), 0o644);
    assert_eq!(fs::read(out.path().join("d/w.md")).unwrap(), b"w");
    assert!(out.path().join(".agents/skills/s/SKILL.md").is_file());
}
