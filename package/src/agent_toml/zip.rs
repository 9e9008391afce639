//! ZIP import and export. Imports check every entry name with the package
//! path rules, refuse symlinks, other special entries, encryption, zip64,
//! duplicate names and an enclosing root folder, and enforce the size
//! limits on the bytes actually inflated (headers are not trusted).

use std::collections::BTreeSet;
use std::io::{Cursor, Read, Write};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};
use zot_policy::agent_toml::paths::is_credential_path;
use zot_policy::agent_toml::{Diagnostics, MANIFEST_NAMES, MAX_PACKAGE_BYTES};

use super::collect::{check_entry_path, human};
use super::source::{MemNode, MemSource};

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// Names from the central directory, read by hand: the `zip` crate keys
/// entries by name and silently keeps only one of duplicates.
fn central_names(bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    const CDH: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
    if bytes.len() < 22 {
        return Err("not a ZIP archive (too short)".into());
    }
    let lo = bytes.len().saturating_sub(22 + 65535);
    let pos = (lo..=bytes.len() - 22)
        .rev()
        .find(|&i| bytes[i..i + 4] == EOCD)
        .ok_or("not a ZIP archive (no end of central directory)")?;
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let u32_at = |i: usize| {
        u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize
    };
    let disk = u16_at(pos + 4);
    let count = u16_at(pos + 10);
    let size = u32_at(pos + 12);
    let offset = u32_at(pos + 16);
    if count == 0xffff || size == 0xffff_ffff || offset == 0xffff_ffff {
        return Err("zip64 archives are not supported (packages are at most 10 MiB)".into());
    }
    if disk != 0 {
        return Err("multi-disk archives are not supported".into());
    }
    let mut names = Vec::with_capacity(count.min(4096));
    let mut i = offset;
    for _ in 0..count {
        if i + 46 > bytes.len() || bytes[i..i + 4] != CDH {
            return Err("corrupt central directory".into());
        }
        let name_len = u16_at(i + 28);
        let extra_len = u16_at(i + 30);
        let comment_len = u16_at(i + 32);
        let end = i + 46 + name_len;
        if end > bytes.len() {
            return Err("corrupt central directory".into());
        }
        names.push(bytes[i + 46..end].to_vec());
        i = end + extra_len + comment_len;
    }
    Ok(names)
}

/// Read a ZIP held in memory into a [`MemSource`], or report every problem.
pub(crate) fn read_zip(bytes: &[u8]) -> Result<MemSource, Diagnostics> {
    let mut d = Diagnostics::new();
    if bytes.len() as u64 > MAX_PACKAGE_BYTES {
        d.push(
            "",
            format!(
                "ZIP is larger than the {} package limit",
                human(MAX_PACKAGE_BYTES)
            ),
        );
        return Err(d);
    }
    let names = match central_names(bytes) {
        Ok(n) => n,
        Err(e) => {
            d.push("", e);
            return Err(d);
        }
    };
    let mut seen = BTreeSet::new();
    for raw in &names {
        let shown = String::from_utf8_lossy(raw).to_string();
        let key = shown.trim_end_matches('/').to_string();
        if !seen.insert(key) {
            d.push(&shown, "duplicate entry name in the ZIP");
        }
    }
    let mut archive = match ZipArchive::new(Cursor::new(bytes)) {
        Ok(a) => a,
        Err(e) => {
            d.push("", format!("invalid ZIP: {e}"));
            return Err(d);
        }
    };
    if archive.len() != names.len() {
        d.push("", "duplicate entry names in the ZIP");
    }
    if !d.is_empty() {
        return Err(d);
    }

    let mut src = MemSource::default();
    let mut inflated: u64 = 0;
    for (i, central_name) in names.iter().enumerate() {
        let mut entry = match archive.by_index(i) {
            Ok(e) => e,
            Err(e) => {
                d.push(
                    String::from_utf8_lossy(central_name).to_string(),
                    format!("cannot read entry: {e}"),
                );
                continue;
            }
        };
        let Ok(raw_name) = std::str::from_utf8(entry.name_raw()).map(str::to_string) else {
            d.push(
                String::from_utf8_lossy(central_name).to_string(),
                "entry name is not valid UTF-8",
            );
            continue;
        };
        let is_dir_name = raw_name.ends_with('/');
        let rel = match check_entry_path(&raw_name) {
            Ok(r) => r,
            Err(e) => {
                d.push(&raw_name, format!("unsafe entry name: {e}"));
                continue;
            }
        };
        if entry.encrypted() {
            d.push(&rel, "encrypted entries are not supported");
            continue;
        }
        let mode = entry.unix_mode().map(|m| m & S_IFMT).unwrap_or(0);
        match mode {
            S_IFLNK => {
                d.push(&rel, "symlink entries are not allowed");
                continue;
            }
            0 | S_IFREG | S_IFDIR => {}
            _ => {
                d.push(&rel, "special file entries are not allowed");
                continue;
            }
        }
        let is_dir = is_dir_name || mode == S_IFDIR;
        if is_credential_path(&rel) {
            continue; // never inflated
        }
        // Parents become directories; a file cannot also be a directory.
        let comps: Vec<&str> = rel.split('/').collect();
        for k in 1..comps.len() {
            let parent = comps[..k].join("/");
            if let Some(MemNode::File(_)) = src.nodes.get(&parent) {
                d.push(&rel, format!("`{parent}` is both a file and a folder"));
            }
            src.nodes.entry(parent).or_insert(MemNode::Dir);
        }
        if is_dir {
            match src.nodes.get(&rel) {
                Some(MemNode::File(_)) => d.push(&rel, "entry is both a file and a folder"),
                _ => {
                    src.nodes.insert(rel, MemNode::Dir);
                }
            }
            continue;
        }
        match src.nodes.get(&rel) {
            Some(MemNode::Dir) => {
                d.push(&rel, "entry is both a file and a folder");
                continue;
            }
            Some(MemNode::File(_)) => {
                d.push(
                    &rel,
                    "duplicate entry name in the ZIP (after normalization)",
                );
                continue;
            }
            None => {}
        }
        let remaining = MAX_PACKAGE_BYTES.saturating_sub(inflated);
        let mut buf = Vec::new();
        match (&mut entry).take(remaining + 1).read_to_end(&mut buf) {
            Ok(_) if buf.len() as u64 > remaining => {
                d.push(
                    &rel,
                    format!(
                        "ZIP content inflates beyond the {} package limit",
                        human(MAX_PACKAGE_BYTES)
                    ),
                );
                return Err(d);
            }
            Ok(_) => {
                inflated += buf.len() as u64;
                src.nodes.insert(rel, MemNode::File(buf));
            }
            Err(e) => d.push(&rel, format!("cannot inflate entry: {e}")),
        }
    }
    if !d.is_empty() {
        return Err(d);
    }

    // Contents must start at the agent root.
    let has_manifest = |prefix: &str| {
        MANIFEST_NAMES.iter().any(|(n, _)| {
            matches!(
                src.nodes.get(&format!("{prefix}{n}")),
                Some(MemNode::File(_))
            )
        })
    };
    if !has_manifest("") {
        let top: Vec<&String> = src
            .nodes
            .keys()
            .filter(|k| !k.contains('/') && k.as_str() != "__MACOSX")
            .collect();
        if top.len() == 1
            && matches!(src.nodes.get(top[0]), Some(MemNode::Dir))
            && has_manifest(&format!("{}/", top[0]))
        {
            d.push(
                top[0].as_str(),
                format!(
                    "ZIP contents must start at the agent root, not inside an enclosing `{}/` folder",
                    top[0]
                ),
            );
            return Err(d);
        }
    }
    Ok(src)
}

/// Write `(path, bytes)` entries as a deterministic ZIP: given order (the
/// caller sorts), fixed timestamps, mode 0644, deflate.
pub(crate) fn write_zip(entries: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::default())
        .unix_permissions(0o644);
    for (path, bytes) in entries {
        w.start_file(path.as_str(), opts)
            .map_err(std::io::Error::other)?;
        w.write_all(bytes)?;
    }
    let cursor = w.finish().map_err(std::io::Error::other)?;
    Ok(cursor.into_inner())
}
