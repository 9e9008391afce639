//! Files that look like credentials, refused by [`pack`](crate::pack).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::{tree, PackageError};

/// Bytes of each file read to look for a private key.
const SNIFF_BYTES: u64 = 8 * 1024;

/// Files of the tree that look like credentials: by name (the same rule
/// agent.toml packages use) or by a PEM private key near their start.
pub(crate) fn credential_files(entries: &[tree::TreeEntry]) -> Result<Vec<String>, PackageError> {
    use zot_policy::agent_toml::paths::is_credential_path;
    let mut found = Vec::new();
    for e in entries {
        if !matches!(e.kind, tree::TreeKind::File { .. }) {
            continue;
        }
        if is_credential_path(&e.rel) || holds_private_key(&e.abs)? {
            found.push(e.rel.clone());
        }
    }
    Ok(found)
}

fn holds_private_key(path: &Path) -> Result<bool, PackageError> {
    let f = File::open(path).map_err(PackageError::io("reading", path))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES as usize);
    f.take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(PackageError::io("reading", path))?;
    let text = String::from_utf8_lossy(&head);
    Ok(text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----"))
}
