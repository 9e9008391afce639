//! Canonical paths for one launch's planning.
//!
//! Planning canonicalises a few hundred paths (credential candidates, git
//! files, `PATH` entries), most of them under the same few directories;
//! `realpath` reads the link of every component of each (about 550
//! `readlink` calls per launch). Inside [`scope`] a path's parent is
//! resolved once and kept, and each path then costs one `readlink` of its
//! last component. The memory lives only as long as the scope: nothing is
//! carried from one launch to the next, when the tree may have changed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

thread_local! {
    static CACHE: RefCell<Option<HashMap<PathBuf, Option<PathBuf>>>> = const { RefCell::new(None) };
}

/// Run `f` with canonical paths remembered on this thread until it returns.
pub(crate) fn scope<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if self.0 {
                CACHE.with(|c| *c.borrow_mut() = None);
            }
        }
    }
    let outermost = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let outermost = c.is_none();
        if outermost {
            *c = Some(HashMap::new());
        }
        outermost
    });
    let _reset = Reset(outermost);
    f()
}

/// `p` with every symlink resolved, like [`std::fs::canonicalize`]; `None`
/// when it does not exist.
pub(crate) fn canonicalize(p: &Path) -> Option<PathBuf> {
    let remembered = CACHE.with(|c| c.borrow().as_ref().map(|m| m.get(p).cloned()));
    match remembered {
        // Outside a scope: the plain call.
        None => std::fs::canonicalize(p).ok(),
        Some(Some(known)) => known,
        Some(None) => {
            let found = resolve(p);
            CACHE.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    m.insert(p.to_path_buf(), found.clone());
                }
            });
            found
        }
    }
}

/// The parent resolved (and remembered), then the last component: an
/// existing name that is not a symlink (`readlink` says EINVAL) is final.
fn resolve(p: &Path) -> Option<PathBuf> {
    let (Some(parent), Some(Component::Normal(name))) = (p.parent(), p.components().next_back())
    else {
        return std::fs::canonicalize(p).ok();
    };
    if !p.is_absolute() || parent.as_os_str().is_empty() {
        return std::fs::canonicalize(p).ok();
    }
    let joined = canonicalize(parent)?.join(name);
    match std::fs::read_link(&joined) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Some(joined),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => None,
        // A symlink (or an error to let realpath report): the full walk.
        _ => std::fs::canonicalize(&joined).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a scope the answers are realpath's, for existing and missing
    /// paths, through symlinked parents, dot-dot and a symlinked leaf.
    #[test]
    fn scoped_answers_are_realpaths() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::fs::write(root.join("real/sub/f"), "").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("sub/f", root.join("real/lf")).unwrap();
        std::os::unix::fs::symlink("missing", root.join("real/dangling")).unwrap();
        let cases = [
            root.join("real/sub/f"),
            root.join("link/sub/f"),
            root.join("link/lf"),
            root.join("link/sub/../sub/f"),
            root.join("link/dangling"),
            root.join("link/missing/x"),
            root.join("real/sub/f/below-a-file"),
            root.join("link"),
            PathBuf::from("/"),
        ];
        scope(|| {
            for c in &cases {
                assert_eq!(
                    canonicalize(c),
                    std::fs::canonicalize(c).ok(),
                    "{}",
                    c.display()
                );
                // Twice: the remembered answer.
                assert_eq!(
                    canonicalize(c),
                    std::fs::canonicalize(c).ok(),
                    "{}",
                    c.display()
                );
            }
        });
        CACHE.with(|c| assert!(c.borrow().is_none()));
    }

    /// A change after the scope is seen by the next one.
    #[test]
    fn nothing_outlives_the_scope() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::create_dir(root.join("b")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("l")).unwrap();
        scope(|| assert_eq!(canonicalize(&root.join("l")), Some(root.join("a"))));
        std::fs::remove_file(root.join("l")).unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("l")).unwrap();
        scope(|| assert_eq!(canonicalize(&root.join("l")), Some(root.join("b"))));
    }
}
