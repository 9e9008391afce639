//! Fuzz the `.zot` archive loader (zstd or gzip tar, sniffed, streamed
//! into its limits): `cargo fuzz run archive`.
//!
//! Small limits so that bombs and lying headers hit them quickly.
//! Properties: no input panics; validation and extraction agree on the
//! entries and the digest; what extraction creates is only directories and
//! regular files below the destination, within the limits.
#![no_main]

use std::fs;
use std::io::Cursor;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zot_package::{extract_reader, validate_reader, Limits};

const LIMITS: Limits = Limits {
    compressed: 1 << 20,
    entry: 64 << 10,
    total: 256 << 10,
    metadata: 64 << 10,
};

fn walk(dir: &Path, total: &mut u64) {
    for e in fs::read_dir(dir).expect("read extracted dir") {
        let e = e.unwrap();
        let m = fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            walk(&e.path(), total);
        } else {
            assert!(m.is_file(), "extraction created {:?} ({:?})", e.path(), m.file_type());
            assert!(m.len() <= LIMITS.entry, "entry over the limit");
            assert!(m.mode() & 0o7022 == 0, "mode {:o}", m.mode());
            *total += m.len();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let checked = validate_reader(Cursor::new(data), &LIMITS);
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("x");
    fs::create_dir(&dest).unwrap();
    let extracted = extract_reader(Cursor::new(data), &dest, &LIMITS);
    match (&checked, &extracted) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.entries, b.entries);
            assert_eq!(a.digest, b.digest);
            assert!(a.total_size <= LIMITS.total);
            let mut total = 0;
            walk(&dest, &mut total);
            assert_eq!(total, b.total_size, "bytes on disk differ from the total");
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "validation and extraction disagree: {:?} vs {:?}",
            checked.as_ref().map(|e| e.entries.len()),
            extracted.as_ref().map(|e| e.entries.len())
        ),
    }
    // Nothing next to the destination.
    let names: Vec<_> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("x")]);
});
