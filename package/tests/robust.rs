//! Property and mutation tests: whatever the bytes, the loader never panics,
//! never writes outside its destination, and never creates anything but
//! regular files and directories.

mod util;

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use util::*;
use zot_package::{extract_reader, Limits};

/// Everything under `dir` is a regular file (mode 0644/0755) or directory.
fn only_plain(dir: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = fs::symlink_metadata(e.path()).unwrap();
        let ft = m.file_type();
        use std::os::unix::fs::PermissionsExt;
        if ft.is_dir() {
            only_plain(&e.path());
        } else {
            assert!(ft.is_file(), "{:?} is not a regular file", e.path());
            let mode = m.permissions().mode() & 0o7777;
            assert!(
                mode == 0o644 || mode == 0o755,
                "{:?} has mode {mode:o}",
                e.path()
            );
        }
    }
}

fn small() -> Limits {
    Limits {
        compressed: 1 << 20,
        entry: 1 << 16,
        total: 1 << 18,
        metadata: 1 << 16,
    }
}

#[test]
fn mutated_archives_never_escape_or_panic() {
    let t = tempfile::tempdir().unwrap();
    let mut raw = RawTar::new();
    raw.manifest()
        .file("AGENT.md", b"agent")
        .dir("skills")
        .file("skills/a.md", &[7u8; 3000])
        .symlink("link", "/etc/passwd")
        .file_mode("run.sh", b"#!/bin/sh\n", 0o4755);
    let tar = raw.finish();
    let mut x: u64 = 0x243F6A8885A308D3;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..300 {
        // Mutate the *uncompressed* tar (header fields, names, sizes), then
        // compress it, so the tar parser sees the damage.
        let mut m = tar.clone();
        for _ in 0..(1 + next() % 8) {
            let i = (next() as usize) % m.len();
            m[i] = match next() % 4 {
                0 => b'/',
                1 => b'.',
                2 => 0,
                _ => next() as u8,
            };
        }
        let bytes = if round % 5 == 0 { gz(&m) } else { zst(&m) };
        let dest = t.path().join(format!("d{round}"));
        fs::create_dir(&dest).unwrap();
        let _ = extract_reader(&bytes[..], &dest, &small());
        only_plain(&dest);
        fs::remove_dir_all(&dest).unwrap();
    }
    // Nothing appeared next to the destinations.
    assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any entry name either is refused or lands strictly inside the root.
    #[test]
    fn entry_names_stay_inside(name in proptest::collection::vec(
        prop_oneof![Just(b'/'), Just(b'.'), Just(b'a'), Just(b'\\'), any::<u8>()], 1..40)) {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("root");
        fs::create_dir(&dest).unwrap();
        let mut raw = RawTar::new();
        raw.manifest().raw(&name, b'0', 1, 0o644, b"", b"x");
        let bytes = zst(&raw.finish());
        if let Ok(ex) = extract_reader(&bytes[..], &dest, &Limits::DEFAULT) {
            for e in &ex.entries {
                prop_assert!(!e.path.starts_with('/'));
                prop_assert!(e.path.split('/').all(|c| !c.is_empty() && c != "." && c != ".."));
                let p = dest.join(&e.path);
                prop_assert!(p.canonicalize().unwrap().starts_with(dest.canonicalize().unwrap()));
            }
        }
        // Nothing was written next to the root.
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        prop_assert_eq!(names, vec![std::ffi::OsString::from("root")]);
        only_plain(&dest);
    }
}
