//! Per repository: what git reads as configuration or runs
//! ([`control_files`], protected read-only by the plan), and the
//! quarantine of repositories a command created. Which repositories exist
//! is the workspace index's concern ([`crate::index`]).

use std::path::{Path, PathBuf};

use zot_policy::sandbox::{GIT_DIR_PROTECTED, GIT_DIR_PROTECTED_IF_PRESENT};

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
    std::fs::canonicalize(p).ok()
}

fn read_small(p: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut s = String::new();
    f.take(64 << 10).read_to_string(&mut s).ok()?;
    Some(s)
}

/// `core.hooksPath` of a git config file, if set (the last one wins).
pub fn hooks_path(config: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            let sect = l
                .trim_start_matches('[')
                .split([']', ' ', '"'])
                .next()
                .unwrap_or("");
            in_core = sect.eq_ignore_ascii_case("core");
            // `[core] hooksPath = x` on one line
            let rest = l.split_once(']').map(|(_, r)| r.trim()).unwrap_or("");
            if in_core && !rest.is_empty() {
                if let Some(v) = key_value(rest, "hookspath") {
                    found = Some(v);
                }
            }
            continue;
        }
        if in_core {
            if let Some(v) = key_value(l, "hookspath") {
                found = Some(v);
            }
        }
    }
    found
}

fn key_value(l: &str, key: &str) -> Option<String> {
    let (k, v) = l.split_once('=')?;
    if !k.trim().eq_ignore_ascii_case(key) {
        return None;
    }
    let v = v.split([';', '#']).next().unwrap_or("").trim();
    let v = v.trim_matches('"');
    (!v.is_empty()).then(|| v.to_string())
}

/// The files of one git directory to keep read-only: those of
/// [`GIT_DIR_PROTECTED`] (also when missing: blocked), those of
/// [`GIT_DIR_PROTECTED_IF_PRESENT`] that exist, the control files of its
/// linked worktrees and the git directories of its submodules.
fn git_dir_files(git_dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    for n in GIT_DIR_PROTECTED {
        out.push(git_dir.join(n));
    }
    for n in GIT_DIR_PROTECTED_IF_PRESENT {
        let p = git_dir.join(n);
        if std::fs::symlink_metadata(&p).is_ok() {
            out.push(p);
        }
    }
    if let Ok(rd) = std::fs::read_dir(git_dir.join("worktrees")) {
        for e in rd.flatten() {
            for n in ["gitdir", "commondir", "config.worktree", "locked"] {
                let p = e.path().join(n);
                if std::fs::symlink_metadata(&p).is_ok() {
                    out.push(p);
                }
            }
        }
    }
    if depth < 4 {
        submodules(&git_dir.join("modules"), out, depth);
    }
}

/// Submodule git directories below `modules/` (names may contain `/`).
fn submodules(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if p.join("HEAD").exists() || p.join("config").exists() {
            git_dir_files(&p, out, depth + 1);
        } else {
            submodules(&p, out, depth + 1);
        }
    }
}

/// Everything git reads as configuration or runs of one repository: the
/// git directory's files, the `gitdir:` pointer file, and the directory
/// named by `core.hooksPath` (of the repository's config or of the global
/// ones, `global_hooks`) when it exists.
pub fn control_files(
    r: &Repo,
    global_hooks: &[String],
    home: Option<&Path>,
    out: &mut Vec<PathBuf>,
) {
    // Where a relative hooksPath resolves: the work tree, or a bare
    // repository itself.
    let base = if r.bare {
        r.dot_git.as_path()
    } else {
        r.dot_git.parent().unwrap_or(Path::new("/"))
    };
    if !r.is_dir {
        out.push(r.dot_git.clone()); // the pointer file itself
    }
    let Some(g) = git_dir_of(r) else { return };
    git_dir_files(&g, out, 0);
    let mut hooks: Vec<String> = global_hooks.to_vec();
    for c in ["config", "config.worktree"] {
        if let Some(h) = read_small(&g.join(c)).and_then(|t| hooks_path(&t)) {
            hooks.push(h);
        }
    }
    for h in hooks {
        let p = match (h.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => base.join(&h),
        };
        if let Ok(c) = std::fs::canonicalize(&p) {
            if c.is_dir() {
                out.push(c);
            }
        }
    }
}

/// [`control_files`] of every repository, sorted and deduplicated.
pub fn protected(repos: &[Repo], global_configs: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let global_hooks: Vec<String> = global_configs
        .iter()
        .filter_map(|c| read_small(c).and_then(|t| hooks_path(&t)))
        .collect();
    let mut out = Vec::new();
    for r in repos {
        control_files(r, &global_hooks, home, &mut out);
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
        let p = protected(&s.repos(), &[], None);
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
        let p = protected(&repos, &[], None);
        assert!(p.contains(&bare.join("hooks")), "{p:?}");
        assert!(p.contains(&bare.join("config")), "{p:?}");
    }

    #[test]
    fn hooks_path_parsing() {
        assert_eq!(
            hooks_path("[core]\n  hooksPath = .husky\n"),
            Some(".husky".into())
        );
        assert_eq!(
            hooks_path("[Core]\nHOOKSPATH=\"x y\" ; c\n[user]\nhooksPath = no\n"),
            Some("x y".into())
        );
        assert_eq!(hooks_path("[user]\nhooksPath = no\n"), None);
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
