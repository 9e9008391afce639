//! ZIP import/export: round trips are stable, and hostile archives built
//! here (traversal, symlinks, bombs with honest and lying headers,
//! duplicate names, an enclosing root folder, oversized files) are refused.

use std::io::{Cursor, Write};
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};
use zot_package::agent_toml::{load, validate_zip_bytes, AgentPackage, Diagnostics};

const MIB: usize = 1024 * 1024;
const MANIFEST: &[u8] = b"schema_version = 1\nname = \"z\"\nfiles = [\"data\"]\n";

fn opts() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        if name.ends_with('/') {
            w.add_directory(name.trim_end_matches('/'), opts()).unwrap();
        } else {
            w.start_file(*name, opts()).unwrap();
            w.write_all(bytes).unwrap();
        }
    }
    w.finish().unwrap().into_inner()
}

fn load_bytes(bytes: &[u8]) -> Result<AgentPackage, Diagnostics> {
    let r = validate_zip_bytes(Path::new("test.zip"), bytes);
    match r.package {
        Some(p) if r.diagnostics.is_empty() => Ok(p),
        _ => Err(r.diagnostics),
    }
}

fn rejected(bytes: &[u8], needle: &str) -> Diagnostics {
    match load_bytes(bytes) {
        Ok(_) => panic!("hostile ZIP was accepted (expected `{needle}`)"),
        Err(d) => {
            assert!(d.mentions(needle), "expected `{needle}`, got:\n{d}");
            d
        }
    }
}

fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len());
    let mut n = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            n += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    n
}

#[test]
fn valid_zip_loads() {
    let bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/", b""),
        ("data/a.csv", b"a,b"),
        ("instructions.md", b"hi"),
    ]);
    let p = load_bytes(&bytes).unwrap();
    assert_eq!(p.name, "z");
    assert_eq!(p.instructions, "hi");
    assert_eq!(p.files[0].dest, "data/a.csv");
}

#[test]
fn zip_file_on_disk_loads() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("agent.zip");
    std::fs::write(&path, zip_of(&[("agent.toml", MANIFEST), ("data/a", b"a")])).unwrap();
    assert!(zot_package::agent_toml::detect(&path));
    assert_eq!(load(&path).unwrap().files.len(), 1);
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/agent_toml")
        .join(name)
}

fn same(a: &AgentPackage, b: &AgentPackage) {
    assert_eq!(a.name, b.name);
    assert_eq!(a.instructions, b.instructions);
    assert_eq!(a.files, b.files);
    assert_eq!(a.skills, b.skills);
    assert_eq!(a.manifest.model, b.manifest.model);
    assert_eq!(a.manifest.max_iterations, b.manifest.max_iterations);
    assert_eq!(a.manifest.mcp_servers, b.manifest.mcp_servers);
    assert_eq!(a.manifest.channels, b.manifest.channels);
    assert_eq!(a.manifest.tools, b.manifest.tools);
    assert_eq!(a.manifest.starters, b.manifest.starters);
    assert_eq!(a.manifest.network_access, b.manifest.network_access);
}

#[test]
fn folder_zip_folder_round_trip_is_stable() {
    let examples = [
        "directory-contract",
        "mappings",
        "inline",
        "model-capabilities",
        "mcp-inline",
        "channels",
        "presentation",
        "tools",
        "yaml",
        "json",
        "markdown",
        "legacy",
        "legacy-aliases",
        "team-skills",
    ];
    for name in examples {
        let original = load(&fixture(name)).unwrap_or_else(|d| panic!("{name}: {d}"));
        let zip1 = original.to_zip_bytes().unwrap();
        let from_zip = load_bytes(&zip1)
            .unwrap_or_else(|d| panic!("{name} zip: {d}\n{}", original.canonical_manifest()));
        same(&original, &from_zip);
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("again");
        from_zip.write_dir(&out).unwrap();
        let again = load(&out).unwrap_or_else(|d| panic!("{name} dir: {d}"));
        same(&original, &again);
        assert_eq!(
            again.to_zip_bytes().unwrap(),
            zip1,
            "{name}: export is byte-stable"
        );
        assert_eq!(original.digest(), again.digest());
    }
}

#[test]
fn reserved_and_hidden_destinations_are_inlined_on_export() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("agent.toml"),
        "schema_version = 1\nname = \"r\"\nfiles = [\"instructions.md\", { path = \"agent.toml\", content = \"not the manifest\" }, { path = \".env\", content = \"X=1\" }, { path = \".agents/skills/fake/SKILL.md\", content = \"x\" }]\n",
    )
    .unwrap();
    std::fs::write(t.path().join("instructions.md"), "be brief").unwrap();
    let p = load(t.path()).unwrap();
    assert_eq!(p.files.len(), 4);
    let entries: Vec<String> = p.export_entries().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        entries,
        ["agent.toml", "instructions.md"],
        "runtime files with reserved names are stored inline"
    );
    let back = load_bytes(&p.to_zip_bytes().unwrap()).unwrap();
    same(&p, &back);
    assert!(back.skills.is_empty());
}

#[test]
fn traversal_entries_rejected() {
    for bad in [
        "../evil.txt",
        "data/../../evil",
        "/etc/cron.d/x",
        "a//b",
        "./../x",
    ] {
        let bytes = zip_of(&[("agent.toml", MANIFEST), ("data/a", b"a"), (bad, b"evil")]);
        rejected(&bytes, "unsafe entry name");
    }
    // Backslash separators, patched in after writing.
    let mut bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/a", b"a"),
        ("..Xevil", b"e"),
    ]);
    assert!(replace_all(&mut bytes, b"..Xevil", b"..\\evil") >= 2);
    rejected(&bytes, "unsafe entry name");
}

#[test]
fn symlink_entries_rejected() {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("agent.toml", opts()).unwrap();
    w.write_all(MANIFEST).unwrap();
    w.add_symlink("data/passwd", "/etc/passwd", opts()).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    rejected(&bytes, "symlink entries are not allowed");
}

#[test]
fn bomb_with_honest_headers_rejected() {
    let zeros = vec![0u8; 11 * MIB];
    let bytes = zip_of(&[("agent.toml", MANIFEST), ("data/bomb", &zeros)]);
    assert!(
        bytes.len() < 100 * 1024,
        "a real bomb: {} bytes compressed",
        bytes.len()
    );
    rejected(&bytes, "inflates beyond");
}

#[test]
fn bomb_with_lying_headers_rejected() {
    let zeros = vec![0u8; 11 * MIB];
    let mut bytes = zip_of(&[("agent.toml", MANIFEST), ("data/bomb", &zeros)]);
    // Claim 16 bytes uncompressed in the local and central headers.
    let real = (11 * MIB as u32).to_le_bytes();
    assert_eq!(replace_all(&mut bytes, &real, &16u32.to_le_bytes()), 2);
    assert!(
        load_bytes(&bytes).is_err(),
        "sizes are enforced on inflated bytes, not headers"
    );
}

#[test]
fn many_small_entries_over_the_package_limit_rejected() {
    let mib = vec![7u8; MIB];
    let names: Vec<String> = (0..11).map(|i| format!("junk/{i}")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("agent.toml", MANIFEST), ("data/a", b"a")];
    entries.extend(names.iter().map(|n| (n.as_str(), &mib[..])));
    rejected(&zip_of(&entries), "10 MiB");
}

#[test]
fn duplicate_names_rejected() {
    let mut bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/a", b"a"),
        ("agent.tomZ", b"schema_version = 1\nname = \"evil\"\n"),
    ]);
    assert_eq!(replace_all(&mut bytes, b"agent.tomZ", b"agent.toml"), 2);
    rejected(&bytes, "duplicate entry name");
    // Names equal after normalization.
    let bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/a", b"a"),
        ("./data/a", b"evil"),
    ]);
    rejected(&bytes, "duplicate entry name");
    // A file and a folder of the same name.
    let bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/a", b"a"),
        ("data/a/b", b"b"),
    ]);
    rejected(&bytes, "both a file and a folder");
}

#[test]
fn nested_root_folder_rejected() {
    let bytes = zip_of(&[
        ("my-agent/", b""),
        ("my-agent/agent.toml", MANIFEST),
        ("my-agent/data/a", b"a"),
    ]);
    rejected(&bytes, "enclosing `my-agent/` folder");
}

#[test]
fn oversized_zip_rejected_before_reading_entries() {
    let mut noise = Vec::with_capacity(10 * MIB + 4096);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    while noise.len() < 10 * MIB + 4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("agent.toml", opts()).unwrap();
    w.write_all(MANIFEST).unwrap();
    w.start_file(
        "data/noise",
        SimpleFileOptions::default().compression_method(CompressionMethod::Stored),
    )
    .unwrap();
    w.write_all(&noise).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    rejected(&bytes, "larger than the 10 MiB package limit");
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("big.zip");
    std::fs::write(&path, &bytes).unwrap();
    assert!(load(&path).unwrap_err().mentions("10 MiB"));
}

#[test]
fn credential_entries_are_never_inflated() {
    let secret = vec![b'S'; 4096];
    let mut bytes = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/a", b"a"),
        ("data/.env", &secret),
        (".git/config", &secret),
    ]);
    // Corrupt the compressed data of both credential entries: inflating
    // them would fail (bad stream or CRC), so a successful load proves
    // they were skipped unread.
    for name in [&b"data/.env"[..], &b".git/config"[..]] {
        let pos = bytes.windows(name.len()).position(|w| w == name).unwrap();
        let data = pos + name.len();
        for b in &mut bytes[data..data + 8] {
            *b ^= 0xff;
        }
    }
    let p = load_bytes(&bytes).unwrap();
    assert_eq!(
        p.files.iter().map(|f| f.dest.as_str()).collect::<Vec<_>>(),
        ["data/a"]
    );
    // Corrupting an ordinary entry the same way is detected, so the test can fail.
    let mut bytes = zip_of(&[("agent.toml", MANIFEST), ("data/a", &secret)]);
    let pos = bytes.windows(6).position(|w| w == b"data/a").unwrap() + 6;
    for b in &mut bytes[pos..pos + 8] {
        *b ^= 0xff;
    }
    assert!(load_bytes(&bytes).is_err());
}

#[test]
fn explicit_credential_source_in_zip_fails() {
    let bytes = zip_of(&[
        (
            "agent.toml",
            b"schema_version = 1\nname = \"z\"\nfiles = [\".env\"]\n",
        ),
        (".env", b"X=1"),
    ]);
    rejected(&bytes, "credential");
}

#[test]
fn not_a_zip() {
    rejected(
        b"this is not a zip file at all, just text",
        "not a ZIP archive",
    );
}

#[test]
fn zip_rules_match_folder_rules() {
    // Missing sources and skills problems are reported like for folders.
    let bytes = zip_of(&[
        (
            "agent.toml",
            b"schema_version = 1\nname = \"z\"\nfiles = [\"nope\"]\n",
        ),
        (
            ".agents/skills/x/SKILL.md",
            b"---\nname: y\ndescription: d\n---\n",
        ),
    ]);
    let d = rejected(&bytes, "matches no file");
    assert!(d.mentions("does not match the folder name"), "{d}");
}

#[test]
fn runtime_file_named_like_the_skills_folder_round_trips() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("agent.toml"), "schema_version = 1\nname = \"r\"\nfiles = [{ path = \".agents\", content = \"a file\" }, { path = \"instructions.md/x\", content = \"y\" }]\n").unwrap();
    std::fs::create_dir_all(t.path().join(".agents/skills/s")).unwrap();
    std::fs::write(
        t.path().join(".agents/skills/s/SKILL.md"),
        "---\nname: s\ndescription: d\n---\n",
    )
    .unwrap();
    std::fs::write(t.path().join("instructions.md"), "i").unwrap();
    let p = load(t.path()).unwrap();
    let back = load_bytes(&p.to_zip_bytes().unwrap()).unwrap_or_else(|d| panic!("{d}"));
    same(&p, &back);
}

#[test]
fn mutated_archives_never_panic() {
    // A cheap fuzz pass: flip bytes of a valid archive (headers, names,
    // sizes, data) and load each result. Any outcome but a panic is fine.
    let base = zip_of(&[
        ("agent.toml", MANIFEST),
        ("data/", b""),
        ("data/a.csv", b"a,b\n1,2\n"),
        (
            ".agents/skills/s/SKILL.md",
            b"---\nname: s\ndescription: d\n---\n",
        ),
    ]);
    let mut x: u64 = 0x2545f4914f6cdd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut accepted = 0;
    for _ in 0..3000 {
        let mut b = base.clone();
        for _ in 0..(1 + next() % 4) {
            let i = (next() as usize) % b.len();
            b[i] = next() as u8;
        }
        if load_bytes(&b).is_ok() {
            accepted += 1;
        }
    }
    assert!(
        accepted < 3000,
        "mutations must be able to break the archive"
    );
}
