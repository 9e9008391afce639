//! Builders for test archives, including hostile ones the `tar` crate
//! refuses to write (absolute paths, `..`, lying sizes, raw type flags).
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::Path;

pub const MANIFEST: &str = r#"{"zotfile": 1, "name": "test-agent", "version": "1.0.0"}"#;

/// A raw ustar writer with full control over every header field.
#[derive(Default)]
pub struct RawTar {
    pub buf: Vec<u8>,
}

fn octal(field: &mut [u8], v: u64) {
    let s = format!("{:0width$o}\0", v, width = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

pub fn header(name: &[u8], typ: u8, size: u64, mode: u32, link: &[u8]) -> [u8; 512] {
    let mut h = [0u8; 512];
    assert!(name.len() <= 100, "use a long-name helper");
    h[..name.len()].copy_from_slice(name);
    octal(&mut h[100..108], mode as u64);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[156] = typ;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

impl RawTar {
    pub fn new() -> Self {
        RawTar::default()
    }

    fn pad(&mut self) {
        while self.buf.len() % 512 != 0 {
            self.buf.push(0);
        }
    }

    /// An entry whose header size is `declared` but carries `data`.
    pub fn raw(
        &mut self,
        name: &[u8],
        typ: u8,
        declared: u64,
        mode: u32,
        link: &[u8],
        data: &[u8],
    ) -> &mut Self {
        self.buf
            .extend_from_slice(&header(name, typ, declared, mode, link));
        self.buf.extend_from_slice(data);
        self.pad();
        self
    }

    pub fn file(&mut self, name: &str, data: &[u8]) -> &mut Self {
        self.raw(name.as_bytes(), b'0', data.len() as u64, 0o644, b"", data)
    }

    pub fn file_mode(&mut self, name: &str, data: &[u8], mode: u32) -> &mut Self {
        self.raw(name.as_bytes(), b'0', data.len() as u64, mode, b"", data)
    }

    pub fn dir(&mut self, name: &str) -> &mut Self {
        self.raw(name.as_bytes(), b'5', 0, 0o755, b"", b"")
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> &mut Self {
        self.raw(name.as_bytes(), b'2', 0, 0o777, target.as_bytes(), b"")
    }

    pub fn hardlink(&mut self, name: &str, target: &str) -> &mut Self {
        self.raw(name.as_bytes(), b'1', 0, 0o644, target.as_bytes(), b"")
    }

    /// A PAX extended header (`x`) applying to the next entry.
    pub fn pax(&mut self, key: &str, value: &[u8]) -> &mut Self {
        let mut rec_body = Vec::new();
        rec_body.extend_from_slice(b" ");
        rec_body.extend_from_slice(key.as_bytes());
        rec_body.push(b'=');
        rec_body.extend_from_slice(value);
        rec_body.push(b'\n');
        // length prefix includes its own digits
        let mut len = rec_body.len() + 1;
        loop {
            let total = rec_body.len() + len.to_string().len();
            if total == len {
                break;
            }
            len = total;
        }
        let mut rec = len.to_string().into_bytes();
        rec.extend_from_slice(&rec_body);
        self.raw(
            b"PaxHeader",
            b'x',
            rec.len() as u64,
            0o644,
            b"",
            &rec.clone(),
        )
    }

    /// A GNU long-name entry (`L`) applying to the next entry.
    pub fn gnu_longname(&mut self, name: &[u8]) -> &mut Self {
        let mut data = name.to_vec();
        data.push(0);
        self.raw(b"././@LongLink", b'L', data.len() as u64, 0o644, b"", &data)
    }

    pub fn manifest(&mut self) -> &mut Self {
        self.file("manifest.json", MANIFEST.as_bytes())
    }

    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        out.extend_from_slice(&[0u8; 1024]);
        out
    }
}

pub fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

pub fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A minimal valid agent directory.
pub fn agent_dir(root: &Path) {
    fs::create_dir_all(root.join("skills/review")).unwrap();
    fs::write(root.join("manifest.json"), MANIFEST).unwrap();
    fs::write(root.join("AGENT.md"), "# Agent\nBe useful.\n").unwrap();
    fs::write(
        root.join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: d\n---\nbody\n",
    )
    .unwrap();
}

/// Everything under `dir`, as sorted relative paths.
pub fn listing(dir: &Path) -> Vec<String> {
    fn go(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                go(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        go(dir, dir, &mut out);
    }
    out.sort();
    out
}
