//! Git repositories inside the writable roots: found by a scan of every
//! directory below them (any depth; bounded by a directory budget), and what
//! git reads as configuration or runs of each one (protected read-only by
//! the plan). The same scan after the command ends finds repositories the
//! command created (or moved into place), which [`quarantine`] renames aside.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::dir::{Dir, Type};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// Directories a scan reads at most (then it stops and says so).
pub const SCAN_BUDGET: usize = 250_000;
/// Deeper than this the scan stops (one open directory per level).
const MAX_DEPTH: usize = 200;

/// One repository: a `.git` entry (directory, or a `gitdir:` file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The `.git` entry.
    pub dot_git: PathBuf,
    /// The repository directory git uses (`.git` itself, or where the
    /// `gitdir:` file points), when it resolves.
    pub git_dir: Option<PathBuf>,
    /// `<git_dir>/commondir` existed at the scan.
    pub had_commondir: bool,
}

/// The result of a scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    pub repos: Vec<Repo>,
    /// Directories read.
    pub dirs: usize,
    /// False when the budget or the depth limit cut the scan short.
    pub complete: bool,
}

struct Walker {
    budget: usize,
    dirs: usize,
    complete: bool,
    found: Vec<(PathBuf, bool)>,
}

impl Walker {
    fn walk(&mut self, mut dir: Dir, path: &Path, depth: usize) {
        self.dirs += 1;
        let mut subdirs: Vec<Vec<u8>> = Vec::new();
        for entry in dir.iter().flatten() {
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            if bytes == b".git" {
                let is_dir = is_dir_entry_raw(path, entry.file_type());
                self.found.push((path.join(".git"), is_dir));
                continue;
            }
            if entry.file_type() == Some(Type::Directory)
                || (entry.file_type().is_none()
                    && std::fs::symlink_metadata(path.join(OsStr::from_bytes(bytes)))
                        .is_ok_and(|m| m.is_dir()))
            {
                subdirs.push(bytes.to_vec());
            }
        }
        if depth >= MAX_DEPTH && !subdirs.is_empty() {
            self.complete = false;
            return;
        }
        for name in subdirs {
            if self.dirs >= self.budget {
                self.complete = false;
                return;
            }
            let Ok(child) = Dir::openat(
                dir.as_fd(),
                name.as_slice(),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) else {
                continue; // unreadable (or replaced meanwhile): nothing to protect there
            };
            self.walk(child, &path.join(OsStr::from_bytes(&name)), depth + 1);
        }
    }
}

fn is_dir_entry_raw(path: &Path, t: Option<Type>) -> bool {
    match t {
        Some(Type::Directory) => true,
        Some(_) => false,
        None => std::fs::symlink_metadata(path.join(".git")).is_ok_and(|m| m.is_dir()),
    }
}

/// Every repository inside `roots` (the roots' own `.git` included),
/// reading at most `budget` directories, never following symlinks and never
/// entering a `.git`.
pub fn scan(roots: &[PathBuf], budget: usize) -> Scan {
    let mut w = Walker {
        budget,
        dirs: 0,
        complete: true,
        found: Vec::new(),
    };
    let mut roots = roots.to_vec();
    roots.sort();
    roots.dedup();
    // A root inside another is scanned with it.
    let tops: Vec<&PathBuf> = roots
        .iter()
        .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
        .collect();
    for r in tops {
        if let Ok(d) = Dir::open(
            r.as_path(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            w.walk(d, r, 0);
        }
    }
    let repos = w
        .found
        .into_iter()
        .map(|(dot_git, is_dir)| {
            let git_dir = if is_dir {
                Some(dot_git.clone())
            } else {
                gitdir_pointer(&dot_git)
            };
            let had_commondir = git_dir
                .as_ref()
                .is_some_and(|g| std::fs::symlink_metadata(g.join("commondir")).is_ok());
            Repo {
                dot_git,
                git_dir,
                had_commondir,
            }
        })
        .collect();
    Scan {
        repos,
        dirs: w.dirs,
        complete: w.complete,
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

impl Scan {
    /// Everything git reads as configuration or runs, for every repository
    /// found: the `gitdir:` pointer files and what
    /// [`crate::gitconfig::control_files`] resolves for its git directory.
    pub fn protected(&self, host: &crate::gitconfig::HostGit) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for r in &self.repos {
            let work_tree = r.dot_git.parent().unwrap_or(Path::new("/"));
            match &r.git_dir {
                Some(g) if *g == r.dot_git => {}
                _ => out.push(r.dot_git.clone()), // the pointer file itself
            }
            let Some(g) = &r.git_dir else { continue };
            out.extend(crate::gitconfig::control_files(g, Some(work_tree), host));
        }
        out.sort();
        out.dedup();
        out
    }

    fn dot_gits(&self) -> impl Iterator<Item = &Path> {
        self.repos.iter().map(|r| r.dot_git.as_path())
    }
}

/// What [`quarantine`] renamed: `(from, to)`.
pub type Quarantined = Vec<(PathBuf, PathBuf)>;

/// After a run: every `.git` inside `roots` that `before` did not list
/// (created during the run, or moved into place by renaming a parent), and
/// every `commondir` that appeared in a git directory of `before`, renamed
/// aside to `<name>.zot-quarantine-<unix time>` so that git on the host
/// does not use it. `keep` are entries zot itself made (placeholders).
pub fn quarantine(roots: &[PathBuf], before: &Scan, keep: &[PathBuf]) -> Quarantined {
    let after = scan(roots, SCAN_BUDGET);
    let known: std::collections::HashSet<&Path> = before.dot_gits().collect();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut out = Vec::new();
    let mut aside = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        let to = p.with_file_name(format!("{name}.zot-quarantine-{stamp}"));
        if std::fs::rename(p, &to).is_ok() {
            out.push((p.to_path_buf(), to));
        }
    };
    for r in &after.repos {
        if known.contains(r.dot_git.as_path()) || keep.contains(&r.dot_git) {
            continue;
        }
        aside(&r.dot_git);
    }
    for r in &before.repos {
        if let (Some(g), false) = (&r.git_dir, r.had_commondir) {
            let c = g.join("commondir");
            if roots.iter().any(|root| c.starts_with(root)) && std::fs::symlink_metadata(&c).is_ok()
            {
                aside(&c);
            }
        }
    }
    out
}

/// Directories below `roots` (not the roots themselves) that contain a
/// `.git` entry (kept for callers that only need the repository list).
pub fn find_nested_repos(roots: &[PathBuf], _max_depth: usize, max_dirs: usize) -> Vec<PathBuf> {
    let s = scan(roots, max_dirs);
    let mut v: Vec<PathBuf> = s
        .repos
        .iter()
        .filter_map(|r| r.dot_git.parent().map(Path::to_path_buf))
        .filter(|d| !roots.contains(d))
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn finds_nested_but_not_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("a/b/.git")).unwrap();
        fs::create_dir_all(root.join("c")).unwrap();
        fs::write(root.join("c/.git"), "gitdir: x").unwrap();
        let found = find_nested_repos(std::slice::from_ref(&root), 6, 1000);
        assert_eq!(found, vec![root.join("a/b"), root.join("c")]);
    }

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
        let s = scan(std::slice::from_ref(&root), SCAN_BUDGET);
        assert!(s.complete);
        assert_eq!(s.repos.len(), 2, "{s:?}");
        let p = s.protected(&crate::gitconfig::HostGit::default());
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
    fn a_gitdir_pointer_to_a_missing_directory_blocks_it() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(root.join("wt")).unwrap();
        fs::write(root.join("wt/.git"), "gitdir: ../store/r.git\n").unwrap();
        let s = scan(std::slice::from_ref(&root), SCAN_BUDGET);
        let p = s.protected(&crate::gitconfig::HostGit::default());
        for want in [
            root.join("wt/.git"),
            root.join("store/r.git/hooks"),
            root.join("store/r.git/config"),
        ] {
            assert!(p.contains(&want), "{want:?} not in {p:?}");
        }
    }

    #[test]
    fn the_budget_is_reported() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..20 {
            fs::create_dir_all(t.path().join(format!("d{i}/e"))).unwrap();
        }
        let s = scan(&[t.path().to_path_buf()], 5);
        assert!(!s.complete);
        assert!(s.dirs <= 5);
    }

    #[test]
    fn new_repos_are_quarantined() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(root.join("old/.git")).unwrap();
        let before = scan(std::slice::from_ref(&root), SCAN_BUDGET);
        fs::create_dir_all(root.join("new/deep/.git/hooks")).unwrap();
        // moved into place by renaming a parent
        fs::rename(root.join("old"), root.join("moved")).unwrap();
        fs::write(root.join("moved/.git/commondir"), "/elsewhere\n").unwrap();
        let ph = root.join("ph");
        fs::create_dir_all(&ph).unwrap();
        fs::write(ph.join(".git"), "").unwrap();
        let q = quarantine(std::slice::from_ref(&root), &before, &[ph.join(".git")]);
        let from: Vec<&PathBuf> = q.iter().map(|(f, _)| f).collect();
        assert!(from.contains(&&root.join("new/deep/.git")), "{q:?}");
        assert!(from.contains(&&root.join("moved/.git")), "{q:?}");
        assert!(!root.join("new/deep/.git").exists());
        assert!(ph.join(".git").exists());
    }
}
