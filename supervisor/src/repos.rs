//! Discovery of nested repositories inside writable roots (their `.git/hooks`
//! and `.git/config` are protected like the root's).

use std::path::{Path, PathBuf};

const SKIP: &[&str] = &[".git", "node_modules", "target", ".venv"];

/// Directories below `roots` (not the roots themselves) that contain a
/// `.git` entry, searched breadth-first without following symlinks, at most
/// `max_depth` levels deep and `max_dirs` directories in total.
pub fn find_nested_repos(roots: &[PathBuf], max_depth: usize, max_dirs: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> =
        roots.iter().map(|r| (r.clone(), 0)).collect();
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        seen += 1;
        if seen > max_dirs {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name();
            if name == ".git" && depth > 0 {
                found.push(dir.clone());
            }
            if ft.is_dir() && depth < max_depth && !SKIP.iter().any(|s| Path::new(s) == name) {
                queue.push_back((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_but_not_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b/.git")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        std::fs::write(root.join("c/.git"), "gitdir: x").unwrap();
        let found = find_nested_repos(std::slice::from_ref(&root), 6, 1000);
        assert_eq!(found, vec![root.join("a/b"), root.join("c")]);
    }
}
