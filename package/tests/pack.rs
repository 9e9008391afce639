//! Packing: determinism, normalization, exclusions, refusals, atomicity.

mod util;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use util::*;
use zot_package::{digest_dir, inspect, open, pack, PackageError};

fn pack_bytes(dir: &Path, out: &Path) -> Vec<u8> {
    let o = pack(dir, Some(out)).unwrap();
    let bytes = fs::read(&o.out).unwrap();
    assert_eq!(o.size, bytes.len() as u64);
    bytes
}

fn entries(zot: &[u8]) -> Vec<(String, tar::EntryType, u32, u64, u64, u64)> {
    let raw = zstd::decode_all(zot).unwrap();
    let mut ar = tar::Archive::new(&raw[..]);
    ar.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                h.entry_type(),
                h.mode().unwrap(),
                h.mtime().unwrap(),
                h.uid().unwrap(),
                h.gid().unwrap(),
            )
        })
        .collect()
}

#[test]
fn headers_are_normalized_and_sorted() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    fs::set_permissions(src.join("AGENT.md"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::create_dir(src.join("Zeta")).unwrap();
    fs::write(src.join("skills-x"), "x").unwrap();
    std::os::unix::fs::chown(src.join("AGENT.md"), Some(1234), Some(5678)).ok();
    let zot = pack_bytes(&src, &t.path().join("out.zot"));
    let es = entries(&zot);
    // directories are stored with a trailing slash, as tar does
    let names: Vec<&str> = es.iter().map(|e| e.0.trim_end_matches('/')).collect();
    assert_eq!(
        names,
        [
            "AGENT.md",
            "Zeta",
            "manifest.json",
            "run.sh",
            "skills",
            "skills-x",
            "skills/review",
            "skills/review/SKILL.md"
        ]
    );
    assert!(es.iter().all(|e| e.1.is_dir() == e.0.ends_with('/')));
    let mut sorted = names.clone();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    // bytewise order of the stored paths (dirs compared without the slash)
    assert_eq!(names, sorted);
    for (name, typ, mode, mtime, uid, gid) in &es {
        assert_eq!((*mtime, *uid, *gid), (0, 0, 0), "{name}");
        let want = if typ.is_dir() || name == "run.sh" {
            0o755
        } else {
            0o644
        };
        assert_eq!(*mode, want, "{name}");
    }
    // user/group names are empty
    let raw = zstd::decode_all(&zot[..]).unwrap();
    let mut ar = tar::Archive::new(&raw[..]);
    for e in ar.entries().unwrap() {
        let e = e.unwrap();
        assert_eq!(e.header().username_bytes().unwrap_or_default(), b"");
        assert_eq!(e.header().groupname_bytes().unwrap_or_default(), b"");
    }
}

#[test]
fn same_tree_packs_byte_identically() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let a = pack_bytes(&src, &t.path().join("a.zot"));
    let b = pack_bytes(&src, &t.path().join("b.zot"));
    assert_eq!(a, b);
    let d1 = digest_dir(&src).unwrap();

    // touch: new mtimes
    for f in [
        "manifest.json",
        "AGENT.md",
        "skills/review/SKILL.md",
        "skills",
    ] {
        let file = fs::File::options().read(true).open(src.join(f)).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(86400))
            .unwrap();
    }
    assert_eq!(pack_bytes(&src, &t.path().join("c.zot")), a, "after touch");
    // chmod of a non-exec bit, and a umask-like difference (group write)
    fs::set_permissions(src.join("AGENT.md"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(src.join("manifest.json"), fs::Permissions::from_mode(0o664)).unwrap();
    fs::set_permissions(src.join("skills"), fs::Permissions::from_mode(0o775)).unwrap();
    assert_eq!(pack_bytes(&src, &t.path().join("d.zot")), a, "after chmod");
    // chown (we run as root in CI; elsewhere this is a no-op)
    let _ = std::os::unix::fs::chown(src.join("AGENT.md"), Some(4242), Some(4242));
    assert_eq!(pack_bytes(&src, &t.path().join("e.zot")), a, "after chown");
    assert_eq!(
        digest_dir(&src).unwrap(),
        d1,
        "directory digest is stable too"
    );

    // A recreated copy made with a different umask gives the same bytes.
    let copy = t.path().join("copy");
    let old = unsafe { libc::umask(0o077) };
    agent_dir(&copy);
    unsafe { libc::umask(old) };
    assert_eq!(
        pack_bytes(&copy, &t.path().join("f.zot")),
        a,
        "different umask"
    );

    // The exec bit is content: flipping it changes the archive.
    fs::set_permissions(src.join("AGENT.md"), fs::Permissions::from_mode(0o700)).unwrap();
    assert_ne!(
        pack_bytes(&src, &t.path().join("g.zot")),
        a,
        "exec bit kept"
    );
    // And so is a content change.
    fs::set_permissions(src.join("AGENT.md"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::write(src.join("AGENT.md"), "changed").unwrap();
    assert_ne!(pack_bytes(&src, &t.path().join("h.zot")), a);
    assert_ne!(digest_dir(&src).unwrap(), d1);
}

#[test]
fn pack_reports_digest_of_archive_and_roundtrips() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    // a long path and a binary file survive the round trip
    let long = format!("assets/{}/{}.bin", "d".repeat(120), "f".repeat(90));
    fs::create_dir_all(src.join(&long).parent().unwrap()).unwrap();
    let blob: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::write(src.join(&long), &blob).unwrap();
    let o = pack(&src, Some(&t.path().join("r.zot"))).unwrap();
    use sha2::Digest;
    let want = format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(fs::read(&o.out).unwrap()))
    );
    assert_eq!(o.digest, want);
    assert_eq!(o.files, 4);
    let agent = open(&o.out).unwrap();
    assert_eq!(agent.digest, o.digest);
    assert_eq!(fs::read(agent.root.join(&long)).unwrap(), blob);
    let dir_agent = open(&src).unwrap();
    assert_eq!(dir_agent.files, agent.files);
    assert_ne!(
        dir_agent.digest, agent.digest,
        "directory and archive digests differ by design"
    );
    // the directory digest is the sha256 of the uncompressed canonical tar
    let raw = zstd::decode_all(&fs::read(&o.out).unwrap()[..]).unwrap();
    assert_eq!(
        dir_agent.digest,
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&raw)))
    );
    assert_eq!(inspect(&src).unwrap().digest, dir_agent.digest);
}

#[test]
fn output_inside_the_directory_is_excluded() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let out = src.join("agent.zot");
    let a = pack_bytes(&src, &out);
    let b = pack_bytes(&src, &out);
    assert_eq!(a, b, "the previous output must not be packed into the next");
    assert!(!entries(&a).iter().any(|e| e.0.contains(".zot")));
    // no temp files left behind in the directory
    assert_eq!(
        listing(&src).iter().filter(|p| p.contains("zot")).count(),
        1,
        "{:?}",
        listing(&src)
    );
}

#[test]
fn default_output_name_and_suffix() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let o = pack(&src, Some(&t.path().join("noext"))).unwrap();
    assert_eq!(o.out, t.path().join("noext.zot"));
    assert!(o.out.exists());
    // default: <name>.zot in the current directory (tested via the CLI too)
}

fn assert_nothing_written(dir: &Path, before: &[String]) {
    assert_eq!(
        listing(dir),
        before,
        "a failed pack must leave nothing behind"
    );
}

#[test]
fn symlinks_fail_naming_the_path() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    std::os::unix::fs::symlink("/etc/passwd", src.join("skills/review/passwd")).unwrap();
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    assert!(matches!(e, PackageError::Symlink { .. }), "{e}");
    assert!(e.to_string().contains("skills/review/passwd"), "{e}");
    assert_nothing_written(t.path(), &before);
    assert!(open(&src).is_err(), "open refuses symlinks too");
}

#[test]
fn special_files_fail_naming_the_path() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let fifo = src.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    assert!(matches!(e, PackageError::SpecialFile { .. }), "{e}");
    assert!(e.to_string().contains("pipe"), "{e}");
    assert_nothing_written(t.path(), &before);
}

#[test]
fn bundled_extensions_are_checked() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    fs::create_dir_all(src.join("extensions/lint")).unwrap();
    fs::write(src.join("extensions/lint/extension.json"), "{}").unwrap();
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    assert!(matches!(e, PackageError::InvalidExtension { .. }), "{e}");
    assert!(
        e.to_string().contains("extensions/lint/extension.json") && e.to_string().contains("name: required"),
        "{e}"
    );
    assert_nothing_written(t.path(), &before);
    fs::write(
        src.join("extensions/lint/extension.json"),
        r#"{"name":"lint","exec":"./lint.py"}"#,
    )
    .unwrap();
    pack(&src, Some(&t.path().join("x.zot"))).unwrap();
}

#[test]
fn invalid_or_missing_manifest_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    fs::write(
        src.join("manifest.json"),
        r#"{"zotfile": 1, "name": "Bad", "permissions": {"bash": {"mode": "allowlist"}}}"#,
    )
    .unwrap();
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    let chain = zot_policy::diagnostic::error_chain(&e);
    assert!(
        chain.contains("name: ") && chain.contains("permissions.bash.allow: "),
        "{chain}"
    );
    assert_nothing_written(t.path(), &before);
    fs::remove_file(src.join("manifest.json")).unwrap();
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    assert!(matches!(e, PackageError::MissingManifest { .. }), "{e}");
    assert_nothing_written(t.path(), &before);
}

#[test]
fn non_utf8_and_backslash_names_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    fs::write(src.join(std::ffi::OsStr::from_bytes(b"bad\xff")), "x").unwrap();
    assert!(matches!(
        pack(&src, Some(&t.path().join("x.zot"))).unwrap_err(),
        PackageError::NonUtf8Name { .. }
    ));
    let src2 = t.path().join("src2");
    agent_dir(&src2);
    fs::write(src2.join("a\\b"), "x").unwrap();
    assert!(matches!(
        pack(&src2, Some(&t.path().join("x.zot"))).unwrap_err(),
        PackageError::BadName { .. }
    ));
}

#[test]
fn oversized_files_are_refused_before_writing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let f = fs::File::create(src.join("huge.bin")).unwrap();
    f.set_len(zot_package::MAX_ENTRY_SIZE + 1).unwrap(); // sparse: no real disk use
    let before = listing(t.path());
    let e = pack(&src, Some(&t.path().join("x.zot"))).unwrap_err();
    assert!(matches!(e, PackageError::FileTooLarge { .. }), "{e}");
    assert_nothing_written(t.path(), &before);
}

#[test]
fn packed_archive_is_a_standard_zstd_tar() {
    // Interoperability: the system's tar and zstd read what we write.
    let Ok(zstd_bin) = which_bin("zstd") else {
        assert!(
            std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
            "ZOT_TEST_MUST_WORK=1 but the zstd binary is missing (ci/setup.sh installs it)"
        );
        eprintln!("SKIP: zstd binary unavailable");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    agent_dir(&src);
    let o = pack(&src, Some(&t.path().join("i.zot"))).unwrap();
    let out = std::process::Command::new(zstd_bin)
        .arg("-t")
        .arg(&o.out)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut f = fs::File::open(&o.out).unwrap();
    let mut head = [0u8; 4];
    f.read_exact(&mut head).unwrap();
    assert_eq!(head, [0x28, 0xB5, 0x2F, 0xFD]);
}

fn which_bin(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
        .ok_or(())
}
