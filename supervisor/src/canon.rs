//! Canonical paths for one launch's planning.
//!
//! Planning canonicalises a few hundred paths (credential candidates, git
//! files, `PATH` entries), most of them under the same few directories;
//! `realpath` reads the link of every component of each (about 550
//! `readlink` calls per launch). Inside [`scope`] a path's parent is
//! resolved once and kept, and each path then costs one `lstat` of its
//! last component, remembered with the file types planning asks for. A
//! directory asked about many names (the home: about 60 credential stores,
//! most of them missing) is read once instead, and its entries answer: a
//! name that is not there does not exist, one that is and is not a symlink
//! is final; a symlink, or an entry whose type the file system does not
//! say, still costs its `lstat` (and a symlink the full walk). The memory lives
//! only as long as the scope: nothing is carried from one launch to the
//! next, when the tree may have changed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Names looked up in one directory before it is read whole.
const LIST_AFTER: u32 = 8;
/// A directory with more entries than this is not kept (its names are
/// looked up one by one).
const LIST_MAX: usize = 4096;

/// One directory's entries: `true` where the entry is known not to be a
/// symlink.
type Listing = HashMap<OsString, bool>;

/// Keyed by the path's bytes: hashing a `Path` parses its components,
/// which was most of the lookups' cost. (Two spellings of one path, `a//b`
/// and `a/b`, are two entries, each answered right.)
#[derive(Default)]
struct Memory {
    paths: HashMap<OsString, Option<PathBuf>>,
    /// File types asked for, symlinks not followed (`lstat`) and followed
    /// (`stat`); `None`: the call failed.
    lstats: HashMap<OsString, Option<std::fs::FileType>>,
    stats: HashMap<OsString, Option<std::fs::FileType>>,
    /// Per canonical directory: names asked so far, and its entries once
    /// read (`None`: unreadable or too large, not tried again).
    dirs: HashMap<OsString, (u32, Option<Option<Listing>>)>,
}

thread_local! {
    static CACHE: RefCell<Option<Memory>> = const { RefCell::new(None) };
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
            *c = Some(Memory::default());
        }
        outermost
    });
    let _reset = Reset(outermost);
    f()
}

/// `p` with every symlink resolved, like [`std::fs::canonicalize`]; `None`
/// when it does not exist.
pub(crate) fn canonicalize(p: &Path) -> Option<PathBuf> {
    let remembered = CACHE.with(|c| {
        c.borrow()
            .as_ref()
            .map(|m| m.paths.get(p.as_os_str()).cloned())
    });
    match remembered {
        // Outside a scope: the plain call.
        None => std::fs::canonicalize(p).ok(),
        Some(Some(known)) => known,
        Some(None) => {
            let found = resolve(p);
            CACHE.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    m.paths.insert(p.as_os_str().to_owned(), found.clone());
                }
            });
            found
        }
    }
}

/// The type of what `p` names (`follow`: symlinks followed), as
/// `symlink_metadata`/`metadata` say; remembered inside [`scope`]. Planning
/// asks about the same few paths many times (each `.git` and its parents
/// once per protection); the tree is taken as it was at the first answer,
/// which is what the plan is made from anyway.
pub(crate) fn file_type(p: &Path, follow: bool) -> Option<std::fs::FileType> {
    let ask = || {
        let m = if follow {
            std::fs::metadata(p)
        } else {
            std::fs::symlink_metadata(p)
        };
        m.ok().map(|m| m.file_type())
    };
    fn pick(m: &mut Memory, follow: bool) -> &mut HashMap<OsString, Option<std::fs::FileType>> {
        if follow {
            &mut m.stats
        } else {
            &mut m.lstats
        }
    }
    let remembered = CACHE.with(|c| {
        c.borrow_mut()
            .as_mut()
            .map(|m| pick(m, follow).get(p.as_os_str()).copied())
    });
    match remembered {
        None => ask(),
        Some(Some(known)) => known,
        Some(None) => {
            let found = ask();
            CACHE.with(|c| {
                if let Some(m) = c.borrow_mut().as_mut() {
                    pick(m, follow).insert(p.as_os_str().to_owned(), found);
                }
            });
            found
        }
    }
}

/// The parent resolved (and remembered), then the last component: an
/// existing name that is not a symlink (its `lstat` says so) is final.
fn resolve(p: &Path) -> Option<PathBuf> {
    let (Some(parent), Some(Component::Normal(name))) = (p.parent(), p.components().next_back())
    else {
        return std::fs::canonicalize(p).ok();
    };
    if !p.is_absolute() || parent.as_os_str().is_empty() {
        return std::fs::canonicalize(p).ok();
    }
    let dir = canonicalize(parent)?;
    let joined = dir.join(name);
    match listed(&dir, name.as_bytes()) {
        Some(None) => return None,
        Some(Some(true)) => return Some(joined),
        // A symlink, or a type not known: asked below.
        Some(Some(false)) | None => {}
    }
    // An `lstat` rather than a `readlink`: the answer is remembered, and
    // planning asks the type of most of these paths again.
    match file_type(&joined, false) {
        // Missing, or not reachable (realpath would fail as well).
        None => None,
        Some(t) if !t.is_symlink() => Some(joined),
        // A symlink: the full walk.
        Some(_) => std::fs::canonicalize(&joined).ok(),
    }
}

/// What `dir`'s entries say of `name`, once the directory was asked about
/// [`LIST_AFTER`] names: `Some(None)` not there, `Some(Some(final))` there
/// (`final`: known not to be a symlink); `None` when not read.
fn listed(dir: &Path, name: &[u8]) -> Option<Option<bool>> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let dirs = &mut c.as_mut()?.dirs;
        if !dirs.contains_key(dir.as_os_str()) {
            dirs.insert(dir.as_os_str().to_owned(), Default::default());
        }
        let (asked, listing) = dirs.get_mut(dir.as_os_str())?;
        *asked += 1;
        if listing.is_none() && *asked >= LIST_AFTER {
            *listing = Some(read_listing(dir));
        }
        let entries = listing.as_ref()?.as_ref()?;
        Some(entries.get(std::ffi::OsStr::from_bytes(name)).copied())
    })
}

/// `dir`'s entries with whether each is known not to be a symlink (from
/// the directory entry's type, no `lstat`); `None` when it cannot be read
/// (a home of mode 0711) or has more than [`LIST_MAX`] entries.
fn read_listing(dir: &Path) -> Option<Listing> {
    use nix::dir::{Dir, Type};
    use nix::fcntl::OFlag;
    let mut d = Dir::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()?;
    let mut out = Listing::new();
    for e in d.iter() {
        let e = e.ok()?;
        let name = e.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if out.len() == LIST_MAX {
            return None;
        }
        let known_final = matches!(e.file_type(), Some(t) if t != Type::Symlink);
        out.insert(std::ffi::OsStr::from_bytes(name).to_os_string(), known_final);
    }
    Some(out)
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

    /// A directory asked about many names is read once: the answers stay
    /// realpath's (missing names, files, directories, symlinks to each,
    /// dangling ones, paths below a file), and the listing then knows
    /// which names are absent, final, or symlinks still to be read.
    #[test]
    fn a_directory_read_once_answers_as_realpath() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join("d/sub")).unwrap();
        std::fs::write(home.join("f"), "").unwrap();
        std::os::unix::fs::symlink(home.join("d"), home.join("ld")).unwrap();
        std::os::unix::fs::symlink("f", home.join("lf")).unwrap();
        std::os::unix::fs::symlink("nowhere", home.join("dangling")).unwrap();
        let mut cases: Vec<PathBuf> = (0..LIST_AFTER + 4)
            .map(|i| home.join(format!(".missing-{i}")))
            .collect();
        for n in ["d", "f", "ld", "lf", "dangling", "d/sub", "ld/sub", "f/below", "ld/../f"] {
            cases.push(home.join(n));
        }
        scope(|| {
            for c in &cases {
                assert_eq!(canonicalize(c), std::fs::canonicalize(c).ok(), "{}", c.display());
            }
            // Read by now, and it knows which names are final.
            assert_eq!(listed(&home, b"f"), Some(Some(true)));
            assert_eq!(listed(&home, b"lf"), Some(Some(false)));
            assert_eq!(listed(&home, b".missing-0"), Some(None));
        });
        // A missing directory is not listed; its names are still answered.
        scope(|| {
            let gone = root.join("gone");
            for i in 0..LIST_AFTER + 2 {
                assert_eq!(canonicalize(&gone.join(format!("x{i}"))), None);
            }
            assert_eq!(listed(&gone, b"x"), None);
        });
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

    /// File types: `lstat` and `stat` answers as the calls give them, each
    /// asked once in a scope (the first answer holds until it ends), asked
    /// afresh in the next scope and outside any.
    #[test]
    fn file_types_are_asked_once_per_scope() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink(root.join("d"), root.join("l")).unwrap();
        let kinds = |p: &Path| {
            let k = |f: Option<std::fs::FileType>| {
                f.map(|f| (f.is_dir(), f.is_file(), f.is_symlink()))
            };
            (k(file_type(p, false)), k(file_type(p, true)))
        };
        let dir = Some((true, false, false));
        let link = Some((false, false, true));
        scope(|| {
            assert_eq!(kinds(&root.join("l")), (link, dir));
            assert_eq!(kinds(&root.join("d")), (dir, dir));
            assert_eq!(kinds(&root.join("none")), (None, None));
            // Changed under the scope: the first answers hold.
            std::fs::remove_file(root.join("l")).unwrap();
            std::fs::write(root.join("none"), "").unwrap();
            assert_eq!(kinds(&root.join("l")), (link, dir));
            assert_eq!(kinds(&root.join("none")), (None, None));
        });
        let file = Some((false, true, false));
        scope(|| {
            assert_eq!(kinds(&root.join("l")), (None, None));
            assert_eq!(kinds(&root.join("none")), (file, file));
        });
        std::fs::remove_file(root.join("none")).unwrap();
        assert_eq!(kinds(&root.join("none")), (None, None));
    }
}
