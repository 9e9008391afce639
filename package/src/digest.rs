//! Digests of agent directories: the sha256 of their canonical tar.

use std::io::{self, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::checks::load_dir;
use crate::{tree, Limits, PackageError};

/// `sha256:<hex>` of a directory's canonical uncompressed tar (the digest
/// `zot inspect DIR` prints). Validates the tree like [`open`](crate::open).
pub fn digest_dir(dir: &Path) -> Result<String, PackageError> {
    let (_, entries) = load_dir(dir, &Limits::DEFAULT)?;
    digest_entries(&entries)
}

pub(crate) fn digest_entries(entries: &[tree::TreeEntry]) -> Result<String, PackageError> {
    let w = HashWriter {
        inner: io::sink(),
        hasher: Sha256::new(),
        count: 0,
    };
    let w = tree::write_tar(entries, w, &mut |_| {})?;
    Ok(format!("sha256:{}", hex::encode(w.hasher.finalize())))
}

pub(crate) struct HashWriter<W> {
    pub(crate) inner: W,
    pub(crate) hasher: Sha256,
    pub(crate) count: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
