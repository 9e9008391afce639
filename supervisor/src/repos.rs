//! Per repository: what git reads as configuration or runs
//! ([`control_files`], protected read-only by the plan), and the
//! quarantine of repositories a command created. Which repositories exist
//! is the workspace index's concern ([`crate::index`]).

use std::path::{Path, PathBuf};

use crate::index::{Repo, Snapshot};

/// The git directory of a repository: the `.git` directory (or the bare
/// repository) itself, or where a `gitdir:` file points when it resolves.
pub fn git_dir_of(r: &Repo) -> Option<PathBuf> {
    if r.is_dir {
        Some(r.dot_git.clone())
    } else {
        gitdir_pointer(&r.dot_git)
    }
}

/// Where a `gitdir: <path>` file points (relative to its directory).
fn gitdir_pointer(file: &Path) -> Option<PathBuf> {
    let text = read_small(file)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    let p = Path::new(target);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        file.parent()?.join(p)
    };
    // Also where it does not exist yet: what git would use once made
    // there is protected (blocked) like an existing one.
    Some(crate::gitconfig::canonical_prefix(&p))
}

fn read_small(p: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut s = String::new();
    f.take(64 << 10).read_to_string(&mut s).ok()?;
    Some(s)
}

/// Everything git reads as configuration or runs of one repository: the
/// `gitdir:` pointer file, and what [`crate::gitconfig::control_files`]
/// resolves for its git directory.
pub fn control_files(r: &Repo, host: &crate::gitconfig::HostGit, out: &mut Vec<PathBuf>) {
    if !r.is_dir {
        out.push(r.dot_git.clone()); // the pointer file itself
    }
    let Some(g) = git_dir_of(r) else { return };
    // A bare repository has no work tree: relative hook paths resolve
    // against the git directory itself.
    let work_tree = (!r.bare).then(|| r.dot_git.parent().unwrap_or(Path::new("/")));
    out.extend(crate::gitconfig::control_files(&g, work_tree, host));
}

/// [`control_files`] of every repository, sorted and deduplicated.
pub fn protected(repos: &[Repo], host: &crate::gitconfig::HostGit) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for r in repos {
        control_files(r, host, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// What [`quarantine`] renamed: `(from, to)`.
pub type Quarantined = Vec<(PathBuf, PathBuf)>;

/// After a run: the repositories the command created (`created`, from
/// the index: made, moved into place, or replaced), and every `commondir`
/// that appeared in a git directory of `before`, renamed aside to
/// `<name>.zot-quarantine-<unix time>` so that git on the host does not use
/// them. `keep` are entries zot itself made (placeholders).
pub fn quarantine(created: &[Repo], before: &Snapshot, keep: &[PathBuf]) -> Quarantined {
    let mut out = Vec::new();
    for r in created {
        if keep.contains(&r.dot_git) {
            continue;
        }
        if let Some(q) = aside(&r.dot_git) {
            out.push(q);
        }
    }
    for r in &before.repos {
        let Some(g) = git_dir_of(r) else { continue };
        if before.had_commondir.contains(&g) {
            continue;
        }
        let c = g.join("commondir");
        if before.roots.iter().any(|root| c.starts_with(root))
            && std::fs::symlink_metadata(&c).is_ok()
        {
            if let Some(q) = aside(&c) {
                out.push(q);
            }
        }
    }
    out
}

/// Rename `p` to `<name>.zot-quarantine-<unix time>` (a free name).
pub fn aside(p: &Path) -> Option<(PathBuf, PathBuf)> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = p
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    for n in 0..100 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!(".{n}")
        };
        let to = p.with_file_name(format!("{name}.zot-quarantine-{stamp}{suffix}"));
        if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        return std::fs::rename(p, &to).ok().map(|()| (p.to_path_buf(), to));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Snapshot, Tree, SCAN_BUDGET};
    use std::fs;

    #[test]
    fn any_depth_and_every_git_file() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let deep = root.join("a/b/c/d/e/f/g/h/i/j/k/node_modules/x");
        fs::create_dir_all(deep.join(".git/hooks")).unwrap();
        fs::create_dir_all(deep.join(".git/objects/info")).unwrap();
        fs::write(deep.join(".git/objects/info/alternates"), "/x\n").unwrap();
        fs::write(deep.join(".git/config"), "[core]\n\thooksPath = .husky\n").unwrap();
        fs::create_dir_all(deep.join(".husky")).unwrap();
        fs::create_dir_all(deep.join(".git/worktrees/wt")).unwrap();
        fs::write(deep.join(".git/worktrees/wt/gitdir"), "/x/.git\n").unwrap();
        fs::create_dir_all(deep.join(".git/modules/sub/hooks")).unwrap();
        fs::write(deep.join(".git/modules/sub/HEAD"), "ref: x\n").unwrap();
        // a submodule checkout: a gitdir pointer into the parent's modules
        fs::create_dir_all(deep.join("sub")).unwrap();
        fs::write(deep.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let s = Tree::scan(std::slice::from_ref(&root), SCAN_BUDGET);
        assert!(s.complete);
        assert_eq!(s.repos().len(), 2, "{s:?}");
        let p = protected(&s.repos(), &crate::gitconfig::HostGit::default());
        let g = deep.join(".git");
        for want in [
            g.join("config"),
            g.join("hooks"),
            g.join("info"),
            g.join("objects/info/alternates"),
            g.join("worktrees/wt/gitdir"),
            g.join("modules/sub/config"),
            g.join("modules/sub/hooks"),
            deep.join("sub/.git"),
            deep.join(".husky"),
        ] {
            assert!(p.contains(&want), "{want:?} not in {p:?}");
        }
        assert!(
            !p.contains(&g.join("commondir")),
            "missing commondir is not blocked"
        );
    }

    #[test]
    fn bare_repositories_are_protected() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let bare = root.join("remotes/x.git");
        for d in ["objects", "refs/heads", "hooks"] {
            fs::create_dir_all(bare.join(d)).unwrap();
        }
        fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(bare.join("config"), "[core]\n\tbare = true\n").unwrap();
        let s = Tree::scan(std::slice::from_ref(&root), SCAN_BUDGET);
        let repos = s.repos();
        assert_eq!(repos.len(), 1, "{repos:?}");
        assert!(repos[0].bare);
        let p = protected(&repos, &crate::gitconfig::HostGit::default());
        assert!(p.contains(&bare.join("hooks")), "{p:?}");
        assert!(p.contains(&bare.join("config")), "{p:?}");
    }

    #[test]
    fn a_gitdir_pointer_to_a_missing_directory_blocks_it() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(root.join("wt")).unwrap();
        fs::write(root.join("wt/.git"), "gitdir: ../store/r.git\n").unwrap();
        let s = Tree::scan(std::slice::from_ref(&root), SCAN_BUDGET);
        let p = protected(&s.repos(), &crate::gitconfig::HostGit::default());
        for want in [
            root.join("wt/.git"),
            root.join("store/r.git/hooks"),
            root.join("store/r.git/config"),
        ] {
            assert!(p.contains(&want), "{want:?} not in {p:?}");
        }
    }

    #[test]
    fn new_repos_are_quarantined() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(root.join("old/.git")).unwrap();
        fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        let before = Snapshot::one_shot(std::slice::from_ref(&root), None, SCAN_BUDGET);
        fs::create_dir_all(root.join("new/deep/.git/hooks")).unwrap();
        // moved into place by renaming a parent
        fs::rename(root.join("old"), root.join("moved")).unwrap();
        fs::write(root.join("moved/.git/commondir"), "/elsewhere\n").unwrap();
        // a renamed parent and a new repository at the old path
        fs::rename(root.join("vendor/lib"), root.join("vendor/lib.orig")).unwrap();
        fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        let ph = root.join("ph");
        fs::create_dir_all(&ph).unwrap();
        fs::write(ph.join(".git"), "").unwrap();
        let after = before.after_run();
        let q = quarantine(&after.created, &before, &[ph.join(".git")]);
        let from: Vec<&PathBuf> = q.iter().map(|(f, _)| f).collect();
        assert!(from.contains(&&root.join("new/deep/.git")), "{q:?}");
        assert!(from.contains(&&root.join("moved/.git")), "{q:?}");
        assert!(from.contains(&&root.join("vendor/lib/.git")), "{q:?}");
        assert!(!root.join("new/deep/.git").exists());
        assert!(ph.join(".git").exists());
    }
}
