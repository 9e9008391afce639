//! Archive rules: every hostile archive here is built by the test itself and
//! must be refused (or have its dangerous entries ignored, never created).

mod util;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use util::*;
use zot_package::{
    extract_reader, extract_tar_gz_limited, inspect, open, open_with, unpack, validate_reader,
    ArchiveError, EntryKind, Limits, PackageError, SourceKind,
};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

/// Extract into a fresh dir and return the archive error.
fn extract_err(archive: &[u8], limits: &Limits) -> (ArchiveError, Vec<String>) {
    let t = tempfile::tempdir().unwrap();
    let dest = t.path().join("x");
    fs::create_dir(&dest).unwrap();
    let e = extract_reader(archive, &dest, limits).expect_err("archive must be refused");
    // validation-only mode agrees
    let e2 = validate_reader(archive, limits).expect_err("validation must refuse too");
    assert_eq!(
        std::mem::discriminant(&e),
        std::mem::discriminant(&e2),
        "{e} vs {e2}"
    );
    (e, listing(&dest))
}

fn open_archive_err(bytes: &[u8]) -> PackageError {
    let t = tempfile::tempdir().unwrap();
    let p = write(t.path(), "a.zot", bytes);
    open(&p).expect_err("must be refused")
}

fn small() -> Limits {
    Limits {
        compressed: 1 << 20,
        entry: 4096,
        total: 8192,
        metadata: 64 * 1024,
    }
}

#[test]
fn valid_archive_opens_into_private_temp_dir_removed_on_drop() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new()
        .manifest()
        .file("AGENT.md", b"hi")
        .dir("skills")
        .file("skills/a.md", b"x")
        .finish();
    let p = write(t.path(), "a.zot", &zst(&tar));
    let agent = open(&p).unwrap();
    assert_eq!(agent.kind, SourceKind::Archive);
    assert_eq!(agent.manifest.name, "test-agent");
    assert_eq!(
        agent.files,
        vec!["AGENT.md", "manifest.json", "skills/a.md"]
    );
    let expected = format!("sha256:{}", sha256_hex(&fs::read(&p).unwrap()));
    assert_eq!(agent.digest, expected);
    let mode = fs::metadata(&agent.root).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(
        fs::read_to_string(agent.root.join("AGENT.md")).unwrap(),
        "hi"
    );
    assert_eq!(agent.agent_md().unwrap().as_deref(), Some("hi"));
    let root = agent.root.clone();
    drop(agent);
    assert!(!root.exists(), "temp dir must be removed");
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

#[test]
fn rejects_parent_traversal() {
    for name in ["../evil", "a/../../evil", "skills/../../evil", ".."] {
        let tar = RawTar::new().manifest().file(name, b"pwned").finish();
        let (e, left) = extract_err(&zst(&tar), &Limits::DEFAULT);
        assert!(
            matches!(e, ArchiveError::ParentTraversal { .. }),
            "{name}: {e}"
        );
        assert!(!left.iter().any(|p| p.contains("evil")), "{left:?}");
    }
}

#[test]
fn rejects_absolute_paths() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("abs-evil");
    let tar = RawTar::new()
        .manifest()
        .file(target.to_str().unwrap(), b"pwned")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::AbsolutePath { .. }), "{e}");
    assert!(!target.exists());
}

#[test]
fn rejects_pax_path_traversal() {
    // The ustar name looks harmless; the PAX `path` record, which wins, does not.
    let tar = RawTar::new()
        .manifest()
        .pax("path", b"../../pax-evil")
        .file("harmless", b"pwned")
        .finish();
    let (e, left) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::ParentTraversal { .. }), "{e}");
    assert!(!left.contains(&"harmless".to_string()));
    let tar = RawTar::new()
        .manifest()
        .pax("path", b"/tmp/pax-abs-evil")
        .file("harmless", b"pwned")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::AbsolutePath { .. }), "{e}");
}

#[test]
fn rejects_gnu_long_name_traversal() {
    let long = format!("{}{}", "../".repeat(60), "gnu-evil");
    let tar = RawTar::new()
        .manifest()
        .gnu_longname(long.as_bytes())
        .file("short", b"pwned")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::ParentTraversal { .. }), "{e}");
    // A long but legitimate name is fine.
    let long_ok = format!("{}/file.txt", "d".repeat(150));
    let tar = RawTar::new()
        .manifest()
        .gnu_longname(long_ok.as_bytes())
        .file("short", b"ok")
        .finish();
    let t = tempfile::tempdir().unwrap();
    let ex = extract_reader(&zst(&tar)[..], t.path(), &Limits::DEFAULT).unwrap();
    assert!(ex.get(&long_ok).is_some());
    assert_eq!(fs::read(t.path().join(&long_ok)).unwrap(), b"ok");
}

#[test]
fn links_devices_and_fifos_are_never_created() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::write(&outside, "secret").unwrap();
    let mut raw = RawTar::new();
    raw.manifest()
        .symlink("sym", outside.to_str().unwrap())
        .hardlink("hard", outside.to_str().unwrap())
        .hardlink("hard2", "manifest.json")
        .raw(b"chardev", b'3', 0, 0o666, b"", b"")
        .raw(b"blockdev", b'4', 0, 0o666, b"", b"")
        .raw(b"fifo", b'6', 0, 0o666, b"", b"");
    let tar = raw.finish();
    let dest = t.path().join("dest");
    fs::create_dir(&dest).unwrap();
    let ex = extract_reader(&zst(&tar)[..], &dest, &Limits::DEFAULT).unwrap();
    assert_eq!(listing(&dest), vec!["manifest.json"]);
    for name in ["sym", "hard", "hard2", "chardev", "blockdev", "fifo"] {
        let e = ex.get(name).unwrap();
        assert_eq!(e.kind, EntryKind::Ignored, "{name}");
        assert!(
            fs::symlink_metadata(dest.join(name)).is_err(),
            "{name} was created"
        );
    }
    assert_eq!(fs::read_to_string(&outside).unwrap(), "secret");
    // open() reports them as warnings
    let p = write(t.path(), "a.zot", &zst(&tar));
    let agent = open(&p).unwrap();
    assert_eq!(agent.files, vec!["manifest.json"]);
    assert!(
        agent
            .warnings
            .iter()
            .any(|w| w.contains("symlink") && w.contains("sym")),
        "{:?}",
        agent.warnings
    );
}

#[test]
fn write_through_an_ignored_symlink_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let tar = RawTar::new()
        .manifest()
        .symlink("link", outside.to_str().unwrap())
        .file("link/pwned", b"x")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::FileDirConflict { .. }), "{e}");
    assert!(!outside.join("pwned").exists());
}

#[test]
fn setuid_setgid_and_odd_modes_are_normalized() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new()
        .manifest()
        .file_mode("suid", b"#!/bin/sh\n", 0o4755)
        .file_mode("sgid", b"x", 0o2644)
        .file_mode("world", b"x", 0o666)
        .file_mode("exec", b"x", 0o700)
        .finish();
    extract_reader(&zst(&tar)[..], t.path(), &Limits::DEFAULT).unwrap();
    let mode = |n: &str| fs::metadata(t.path().join(n)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o755);
    assert_eq!(mode("sgid"), 0o644);
    assert_eq!(mode("world"), 0o644);
    assert_eq!(mode("exec"), 0o755);
    assert_eq!(mode("manifest.json"), 0o644);
}

#[test]
fn rejects_oversized_entry_at_the_default_limit() {
    // 64 MiB + 1 of real data, declared honestly.
    let size = zot_package::MAX_ENTRY_SIZE + 1;
    let mut enc = zstd::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(&RawTar::new().manifest().buf).unwrap();
    enc.write_all(&util::header(b"big", b'0', size, 0o644, b""))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        enc.write_all(&zeros).unwrap();
    }
    enc.write_all(&[0u8; 512]).unwrap();
    let bytes = enc.finish().unwrap();
    let (e, left) = extract_err(&bytes, &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::EntryTooLarge { .. }), "{e}");
    assert!(!left.contains(&"big".to_string()));
}

#[test]
fn rejects_lying_size_header_without_reading_it() {
    // Header claims 4 GiB, the data is tiny: refused before reading.
    let tar = RawTar::new()
        .manifest()
        .raw(b"liar", b'0', 1 << 32, 0o644, b"", b"tiny")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::EntryTooLarge { .. }), "{e}");
    // Header claims less than the data: the rest is parsed as a header and fails.
    let mut raw = RawTar::new();
    raw.manifest();
    raw.buf
        .extend_from_slice(&util::header(b"short", b'0', 10, 0o644, b""));
    raw.buf.extend_from_slice(&[b'A'; 2048]);
    let tar = raw.finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(
        matches!(e, ArchiveError::Corrupt(_) | ArchiveError::TrailingData),
        "{e}"
    );
    // Header claims more than the stream holds: truncated.
    let mut raw = RawTar::new();
    raw.manifest();
    raw.buf
        .extend_from_slice(&util::header(b"long", b'0', 4000, 0o644, b""));
    raw.buf.extend_from_slice(&[b'A'; 100]);
    let (e, _) = extract_err(&zst(&raw.buf), &Limits::DEFAULT);
    assert!(
        matches!(
            e,
            ArchiveError::TruncatedEntry { .. } | ArchiveError::Corrupt(_)
        ),
        "{e}"
    );
}

#[test]
fn rejects_oversized_total() {
    let chunk = vec![b'z'; 3000];
    let tar = RawTar::new()
        .manifest()
        .file("a", &chunk)
        .file("b", &chunk)
        .file("c", &chunk)
        .finish();
    let (e, left) = extract_err(&zst(&tar), &small());
    assert!(matches!(e, ArchiveError::TotalTooLarge { .. }), "{e}");
    assert!(!left.contains(&"c".to_string()));
}

#[test]
fn rejects_oversized_total_at_the_default_limit() {
    // Five honest 60 MiB entries = 300 MiB > 256 MiB.
    let mut enc = zstd::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(&RawTar::new().manifest().buf).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for i in 0..5 {
        enc.write_all(&util::header(
            format!("f{i}").as_bytes(),
            b'0',
            60 << 20,
            0o644,
            b"",
        ))
        .unwrap();
        for _ in 0..60 {
            enc.write_all(&zeros).unwrap();
        }
    }
    enc.write_all(&[0u8; 1024]).unwrap();
    let bytes = enc.finish().unwrap();
    let (e, _) = extract_err(&bytes, &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::TotalTooLarge { .. }), "{e}");
}

/// A reader producing `n` zero bytes without allocating them.
struct Zeros(u64);
impl Read for Zeros {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0 as usize);
        buf[..n].fill(0);
        self.0 -= n as u64;
        Ok(n)
    }
}

/// A bomb: a valid tar start, then `frames` copies of one compressed frame
/// of 16 MiB of zeros (concatenated frames/members are valid zstd/gzip).
fn bomb(gzip: bool, frames: usize) -> Vec<u8> {
    let head = RawTar::new().manifest().buf.clone();
    let zeros = vec![0u8; 16 << 20];
    let (mut out, frame) = if gzip {
        (gz(&head), gz(&zeros))
    } else {
        (zst(&head), zst(&zeros))
    };
    for _ in 0..frames {
        out.extend_from_slice(&frame);
    }
    out
}

#[test]
fn decompression_bomb_stops_at_the_limit() {
    // zstd: 32 GiB of zeros in under 5 MiB; gzip: 1 GiB in about 1 MiB.
    for (gzip, frames) in [(false, 2048), (true, 64)] {
        let bytes = bomb(gzip, frames);
        assert!(bytes.len() < 8 << 20, "{}", bytes.len());
        let start = std::time::Instant::now();
        let limit = zot_package::MAX_TOTAL_SIZE + zot_package::MAX_METADATA_SIZE;
        let t = tempfile::tempdir().unwrap();
        let e = extract_reader(&bytes[..], t.path(), &Limits::DEFAULT).unwrap_err();
        assert!(
            matches!(e, ArchiveError::StreamTooLarge { limit: l } if l == limit),
            "{e}"
        );
        assert_eq!(listing(t.path()), vec!["manifest.json"]);
        // It stopped at the limit: it did not read the whole input.
        let mut counted = Counting {
            inner: &bytes[..],
            n: 0,
        };
        let e = validate_reader(&mut counted, &Limits::DEFAULT).unwrap_err();
        assert!(matches!(e, ArchiveError::StreamTooLarge { .. }), "{e}");
        assert!(
            counted.n < bytes.len() as u64 / 2,
            "read {} of {}",
            counted.n,
            bytes.len()
        );
        eprintln!("bomb (gzip: {gzip}) refused in {:?}", start.elapsed());
    }
}

#[test]
fn decompressed_stream_is_capped_with_small_limits() {
    let mut enc = zstd::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(&RawTar::new().manifest().buf).unwrap();
    std::io::copy(&mut Zeros(10 << 20), &mut enc).unwrap();
    let bytes = enc.finish().unwrap();
    let limits = small();
    let mut src = Counting {
        inner: &bytes[..],
        n: 0,
    };
    let e = validate_reader(&mut src, &limits).unwrap_err();
    assert!(
        matches!(e, ArchiveError::StreamTooLarge { limit } if limit == limits.total + limits.metadata),
        "{e}"
    );
}

struct Counting<R> {
    inner: R,
    n: u64,
}
impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

#[test]
fn rejects_compressed_input_over_the_limit() {
    let tar = RawTar::new()
        .manifest()
        .file("noise", &pseudo_random(64 * 1024))
        .finish();
    let bytes = zst(&tar);
    let limits = Limits {
        compressed: 16 * 1024,
        ..Limits::DEFAULT
    };
    let mut src = Counting {
        inner: &bytes[..],
        n: 0,
    };
    let e = validate_reader(&mut src, &limits).unwrap_err();
    assert!(matches!(e, ArchiveError::CompressedTooLarge { .. }), "{e}");
    assert!(
        src.n <= limits.compressed + 1 + 8192,
        "read {} bytes",
        src.n
    );
    // open() refuses an over-limit file by its size, without reading it.
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("huge.zot");
    let f = fs::File::create(&p).unwrap();
    f.set_len(zot_package::MAX_COMPRESSED_SIZE + 1).unwrap();
    let e = open(&p).unwrap_err();
    assert!(e.to_string().contains("huge.zot"), "{e}");
    assert!(
        matches!(
            e,
            PackageError::Archive {
                source: ArchiveError::CompressedTooLarge { .. },
                ..
            }
        ),
        "{e}"
    );
}

fn pseudo_random(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E3779B97F4A7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn rejects_truncated_and_garbage_input() {
    let tar = RawTar::new()
        .manifest()
        .file("AGENT.md", &pseudo_random(20000))
        .finish();
    let good = zst(&tar);
    for cut in [good.len() / 2, good.len() - 1, 5] {
        let (e, _) = extract_err(&good[..cut], &Limits::DEFAULT);
        assert!(
            matches!(
                e,
                ArchiveError::Corrupt(_) | ArchiveError::TruncatedEntry { .. }
            ),
            "cut {cut}: {e}"
        );
    }
    let gzd = gz(&tar);
    let (e, _) = extract_err(&gzd[..gzd.len() - 4], &Limits::DEFAULT);
    assert!(
        matches!(
            e,
            ArchiveError::Corrupt(_) | ArchiveError::TruncatedEntry { .. }
        ),
        "{e}"
    );
    // Garbage, empty, an uncompressed tar, zstd magic + garbage.
    let (e, _) = extract_err(&pseudo_random(4096), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::UnknownFormat), "{e}");
    let (e, _) = extract_err(b"", &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::UnknownFormat), "{e}");
    let (e, _) = extract_err(&tar, &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::UnknownFormat), "{e}");
    let mut bad = vec![0x28, 0xB5, 0x2F, 0xFD];
    bad.extend(pseudo_random(1000));
    let (e, _) = extract_err(&bad, &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::Corrupt(_)), "{e}");
    // Garbage appended after a valid zstd frame.
    let mut tail = good.clone();
    tail.extend_from_slice(b"garbage after the frame");
    let (e, _) = extract_err(&tail, &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::Corrupt(_)), "{e}");
    // A flipped byte in the compressed data (frame checksum / structure).
    let mut enc = zstd::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    enc.write_all(&tar).unwrap();
    let mut flipped = enc.finish().unwrap();
    let i = flipped.len() / 2;
    flipped[i] ^= 0xFF;
    assert!(validate_reader(&flipped[..], &Limits::DEFAULT).is_err());
}

#[test]
fn rejects_nonzero_data_after_the_tar_end() {
    let mut tar = RawTar::new().manifest().finish();
    tar.extend_from_slice(&[b'X'; 512]);
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::TrailingData), "{e}");
}

#[test]
fn gzip_is_accepted_as_fallback() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new().manifest().file("AGENT.md", b"gz").finish();
    let p = write(t.path(), "old.zot", &gz(&tar));
    let agent = open(&p).unwrap();
    assert_eq!(agent.manifest.name, "test-agent");
    assert_eq!(agent.agent_md().unwrap().as_deref(), Some("gz"));
    let s = inspect(&p).unwrap();
    assert_eq!(s.compression, Some("gzip"));
    // extract_tar_gz_limited (GitHub tarballs): top-level dir, pax global header.
    let tar = RawTar::new()
        .raw(b"pax_global_header", b'g', 0, 0o644, b"", b"")
        .dir("owner-repo-abc123/")
        .file("owner-repo-abc123/agent/manifest.json", MANIFEST.as_bytes())
        .symlink("owner-repo-abc123/agent/link", "/etc/passwd")
        .finish();
    let dest = t.path().join("gh");
    fs::create_dir(&dest).unwrap();
    let ex = extract_tar_gz_limited(&gz(&tar)[..], &dest, &Limits::DEFAULT).unwrap();
    assert!(ex.get("owner-repo-abc123/agent/manifest.json").is_some());
    assert!(fs::symlink_metadata(dest.join("owner-repo-abc123/agent/link")).is_err());
    let agent = open(&dest.join("owner-repo-abc123/agent")).unwrap();
    assert_eq!(agent.kind, SourceKind::Directory);
}

#[test]
fn dot_slash_prefixes_are_normalized() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new()
        .dir("./")
        .file("./manifest.json", MANIFEST.as_bytes())
        .dir("./skills/")
        .file("./skills/./x.md", b"x")
        .file(".//AGENT.md", b"a")
        .finish();
    let p = write(t.path(), "a.zot", &zst(&tar));
    let agent = open(&p).unwrap();
    assert_eq!(
        agent.files,
        vec!["AGENT.md", "manifest.json", "skills/x.md"]
    );
}

#[test]
fn rejects_duplicates() {
    for (a, b) in [
        ("manifest.json", "manifest.json"),
        ("./AGENT.md", "AGENT.md"),
        ("x", "./x/"),
    ] {
        let mut raw = RawTar::new();
        raw.manifest();
        if a != "manifest.json" {
            raw.file(a, b"1");
        } else {
            raw.file("manifest.json", MANIFEST.as_bytes());
        }
        if b.ends_with('/') {
            raw.dir(b);
        } else {
            raw.file(b, b"2");
        }
        let (e, _) = extract_err(&zst(&raw.finish()), &Limits::DEFAULT);
        assert!(matches!(e, ArchiveError::Duplicate { .. }), "{a} {b}: {e}");
    }
    // A symlink duplicating a file name is a duplicate too.
    let tar = RawTar::new()
        .manifest()
        .file("a", b"1")
        .symlink("a", "/etc/passwd")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::Duplicate { .. }), "{e}");
}

#[test]
fn rejects_file_directory_conflicts() {
    let tar = RawTar::new()
        .manifest()
        .file("a", b"1")
        .file("a/b", b"2")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::FileDirConflict { .. }), "{e}");
    let tar = RawTar::new()
        .manifest()
        .file("a/b", b"2")
        .file("a", b"1")
        .finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::FileDirConflict { .. }), "{e}");
}

#[test]
fn rejects_non_utf8_and_odd_names() {
    let mut raw = RawTar::new();
    raw.manifest()
        .raw(b"bad\xff\xfename", b'0', 1, 0o644, b"", b"x");
    let (e, _) = extract_err(&zst(&raw.finish()), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::NonUtf8Name { .. }), "{e}");
    let tar = RawTar::new().manifest().file("a\\..\\b", b"x").finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::BadPath { .. }), "{e}");
    let tar = RawTar::new().manifest().file("new\nline", b"x").finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::BadPath { .. }), "{e}");
    // A regular file named like the root.
    let tar = RawTar::new().manifest().file("./", b"x").finish();
    let (e, _) = extract_err(&zst(&tar), &Limits::DEFAULT);
    assert!(matches!(e, ArchiveError::BadPath { .. }), "{e}");
}

#[test]
fn layout_rules() {
    // manifest.json must be at the root.
    let tar = RawTar::new()
        .file("sub/manifest.json", MANIFEST.as_bytes())
        .finish();
    assert!(matches!(
        open_archive_err(&zst(&tar)),
        PackageError::MissingManifest { .. }
    ));
    // ... and a regular file.
    let tar = RawTar::new().dir("manifest.json").finish();
    assert!(matches!(
        open_archive_err(&zst(&tar)),
        PackageError::NotRegular { .. }
    ));
    let tar = RawTar::new()
        .symlink("manifest.json", "/etc/passwd")
        .finish();
    assert!(matches!(
        open_archive_err(&zst(&tar)),
        PackageError::NotRegular { .. }
    ));
    // AGENT.md, when present, is a regular file.
    let tar = RawTar::new()
        .manifest()
        .symlink("AGENT.md", "/etc/shadow")
        .finish();
    let e = open_archive_err(&zst(&tar));
    assert!(
        matches!(&e, PackageError::NotRegular { entry, .. } if entry == "AGENT.md"),
        "{e}"
    );
    let tar = RawTar::new().manifest().dir("AGENT.md").finish();
    assert!(matches!(
        open_archive_err(&zst(&tar)),
        PackageError::NotRegular { .. }
    ));
    // A bundled extension's manifest is checked; an invalid one is refused
    // naming the file and the field.
    let tar = RawTar::new()
        .manifest()
        .dir("extensions/lint")
        .file("extensions/lint/extension.json", b"{}")
        .finish();
    let e = open_archive_err(&zst(&tar));
    assert!(
        matches!(&e, PackageError::InvalidExtension { entry, message } if entry == "extensions/lint/extension.json" && message.contains("name: required")),
        "{e}"
    );
    let tar = RawTar::new()
        .manifest()
        .dir("extensions/lint")
        .file("extensions/lint/extension.json", br#"{"name":"lint","exec":"./lint.py"}"#)
        .finish();
    let t = tempfile::tempdir().unwrap();
    let a = open(&write(t.path(), "a.zot", &zst(&tar))).unwrap();
    let ext = a.extensions(&mut Vec::new()).unwrap();
    assert_eq!((ext[0].dir.as_str(), ext[0].manifest.exec.as_str()), ("lint", "./lint.py"));
    // Other files under extensions/ are just files.
    let tar = RawTar::new()
        .manifest()
        .file("extensions/README.md", b"x")
        .finish();
    let t = tempfile::tempdir().unwrap();
    open(&write(t.path(), "a.zot", &zst(&tar))).unwrap();
    // An invalid manifest names the field.
    let tar = RawTar::new()
        .file("manifest.json", br#"{"zotfile":1,"name":"Bad Name"}"#)
        .finish();
    let e = open_archive_err(&zst(&tar));
    let msg = format!("{:#}", anyhow_chain(&e));
    assert!(msg.contains("name: "), "{msg}");
}

use zot_policy::diagnostic::error_chain as anyhow_chain;

#[test]
fn unpack_is_all_or_nothing() {
    let t = tempfile::tempdir().unwrap();
    // A hostile archive: valid files first, then traversal.
    let tar = RawTar::new()
        .manifest()
        .file("AGENT.md", b"a")
        .file("../evil", b"x")
        .finish();
    let p = write(t.path(), "bad.zot", &zst(&tar));
    let dest = t.path().join("dest");
    fs::create_dir(&dest).unwrap();
    let before = listing(t.path());
    assert!(unpack(&p, &dest).is_err());
    assert_eq!(
        listing(t.path()),
        before,
        "a failed unpack must leave nothing behind"
    );
    // Missing destination, same.
    let missing = t.path().join("missing");
    assert!(unpack(&p, &missing).is_err());
    assert!(!missing.exists());
    assert_eq!(listing(t.path()), before);
    // A good archive into the empty dir.
    let tar = RawTar::new().manifest().file("AGENT.md", b"a").finish();
    let good = write(t.path(), "good.zot", &zst(&tar));
    let s = unpack(&good, &dest).unwrap();
    assert_eq!(s.files, vec!["AGENT.md", "manifest.json"]);
    assert_eq!(fs::read(dest.join("AGENT.md")).unwrap(), b"a");
    assert_eq!(
        fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // Non-empty destination is refused and untouched.
    let e = unpack(&good, &dest).unwrap_err();
    assert!(matches!(e, PackageError::DestinationNotEmpty { .. }), "{e}");
    // A file as destination is refused.
    let e = unpack(&good, &good).unwrap_err();
    assert!(matches!(e, PackageError::DestinationNotEmpty { .. }), "{e}");
}

#[test]
fn inspect_does_not_extract_and_agrees_with_open() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new()
        .manifest()
        .file("AGENT.md", b"a")
        .dir("s")
        .file("s/x", b"y")
        .finish();
    let p = write(t.path(), "a.zot", &zst(&tar));
    let s = inspect(&p).unwrap();
    let a = open(&p).unwrap();
    assert_eq!(s.digest, a.digest);
    assert_eq!(s.files, a.files);
    assert_eq!(s.manifest, a.manifest);
    assert_eq!(s.kind, SourceKind::Archive);
    assert_eq!(s.compression, Some("zstd"));
}

#[test]
fn open_with_small_limits_refuses_big_entries() {
    let t = tempfile::tempdir().unwrap();
    let tar = RawTar::new()
        .manifest()
        .file("big", &vec![1u8; 5000])
        .finish();
    let p = write(t.path(), "a.zot", &zst(&tar));
    let e = open_with(&p, &small()).unwrap_err();
    assert!(
        matches!(
            e,
            PackageError::Archive {
                source: ArchiveError::EntryTooLarge { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(open(&p).is_ok());
}
