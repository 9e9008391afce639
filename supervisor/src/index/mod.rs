//! The workspace index: the one place that knows the tree below the
//! writable roots. Which repositories exist at any depth (a `.git` entry or
//! a bare repository, identified by device and inode, not by path), which
//! directories could not be listed, and whether the walk was complete.
//! What each repository's git reads or runs is [`crate::repos`]' concern.
//!
//! Two ways to keep it current:
//! - one-shot launches load the copy persisted under `$ZOT_HOME/cache/`
//!   ([`cache`]), validate it with one `statx` per directory and re-read
//!   only the directories that changed; after the command the same
//!   validation says what the command created;
//! - a session ([`live::Live`]) builds it once in the background and keeps
//!   it current from inotify events, neutralising a repository that
//!   appears while a command runs at once.

pub mod cache;
pub mod live;
pub mod tree;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use tree::{new_repos, Id, Repo, Tree, MAX_DEPTH, SCAN_BUDGET};

/// Something about the index the report should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexNote {
    /// The persisted copy was not used (and was rebuilt).
    CacheDiscarded { reason: String },
    /// The inotify queue overflowed or the watch limit was reached: what
    /// commands create is found by the validated rescan instead.
    Fallback { reason: String },
}

/// The index as a launch saw it: the repositories to protect, and how to
/// tell afterwards what the command created.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub roots: Vec<PathBuf>,
    pub repos: Vec<Repo>,
    /// Directories that could not be listed (protected whole: what is
    /// inside is unknown).
    pub unlistable: Vec<PathBuf>,
    /// False when the scan budget or depth limit cut the walk short.
    pub complete: bool,
    /// Directories known (counted for the report of an incomplete walk
    /// only: 0 when complete).
    pub dirs: usize,
    /// Git directories of `repos` that had a `commondir` at launch.
    pub had_commondir: HashSet<PathBuf>,
    pub notes: Vec<IndexNote>,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    /// The tree at launch and where it is persisted.
    OneShot {
        /// Taken by [`Snapshot::after_run`] (shared by clones).
        tree: Arc<std::sync::Mutex<Option<Box<Tree>>>>,
        cache: Option<PathBuf>,
    },
    /// A session's index and its event generation at launch.
    Live {
        live: Arc<live::Live>,
        since: live::Since,
    },
}

impl Snapshot {
    fn from_parts(
        source: Source,
        roots: Vec<PathBuf>,
        repos: Vec<Repo>,
        unlistable: Vec<PathBuf>,
        complete: bool,
        dirs: usize,
        notes: Vec<IndexNote>,
    ) -> Snapshot {
        let had_commondir = repos
            .iter()
            .filter_map(crate::repos::git_dir_of)
            .filter(|g| std::fs::symlink_metadata(g.join("commondir")).is_ok())
            .collect();
        Snapshot {
            roots,
            repos,
            unlistable,
            complete,
            dirs,
            had_commondir,
            notes,
            source,
        }
    }

    /// The index of `roots` for a one-shot launch: the persisted copy of
    /// the state directory `state`, validated (or a fresh walk), written
    /// back when anything was re-read.
    pub fn one_shot(roots: &[PathBuf], state: Option<&Path>, budget: usize) -> Snapshot {
        let tops = tree::top_roots(roots);
        let path = state.map(|s| cache::path_for(s, &tops));
        let mut notes = Vec::new();
        let (tree, changed) = match path.as_deref().map(|p| cache::load(p, &tops)) {
            Some(Ok(mut t)) => {
                let v = t.validate(budget);
                (t, v.worth_saving())
            }
            other => {
                if let Some(Err(e)) = other {
                    if e.worth_noting() {
                        notes.push(IndexNote::CacheDiscarded {
                            reason: e.to_string(),
                        });
                    }
                }
                (Tree::scan(&tops, budget), true)
            }
        };
        if changed && tree.complete {
            if let Some(p) = &path {
                // Best effort: a cache that cannot be written costs the
                // next launch a walk, nothing else.
                let _ = cache::save(p, &tree);
            }
        }
        let (roots, repos, unlistable) = (tree.roots.clone(), tree.repos(), tree.unlistable());
        // The count is for the report of an incomplete walk only.
        let complete = tree.complete;
        let dirs = if complete { 0 } else { tree.dirs() };
        Snapshot::from_parts(
            Source::OneShot {
                tree: Arc::new(std::sync::Mutex::new(Some(Box::new(tree)))),
                cache: path,
            },
            roots,
            repos,
            unlistable,
            complete,
            dirs,
            notes,
        )
    }

    /// The index of a session, as it is now (waits for the first build).
    pub fn live(live: &Arc<live::Live>) -> Snapshot {
        let v = live.current();
        Snapshot::from_parts(
            Source::Live {
                live: live.clone(),
                since: v.since,
            },
            v.roots,
            v.repos,
            v.unlistable,
            v.complete,
            v.dirs,
            v.notes,
        )
    }

    /// After the command: the repositories it created, moved into place or
    /// replaced (from the session's events, or the validated rescan of a
    /// one-shot launch; never a second full walk), and notes on how that
    /// was known. Those a session already neutralised while the command
    /// ran are in the second list, with where they were moved.
    pub fn after_run(&self) -> AfterRun {
        match &self.source {
            Source::OneShot { tree, cache: path } => {
                let taken = tree.lock().ok().and_then(|mut t| t.take());
                // Asked twice: the second time walks (nothing to compare
                // against is never an answer).
                let mut t = match taken {
                    Some(t) => *t,
                    None => Tree::empty(&self.roots),
                };
                let v = t.validate(SCAN_BUDGET);
                if t.complete && v.worth_saving() {
                    if let Some(p) = path {
                        let _ = cache::save(p, &t);
                    }
                }
                AfterRun {
                    created: new_repos(&self.repos, &t.repos()),
                    neutralised: Vec::new(),
                    notes: Vec::new(),
                }
            }
            Source::Live { live, since } => live.after_run(&self.repos, *since),
        }
    }

    /// The command is starting: in a session, a repository that appears
    /// from now on is renamed aside at once (except `keep`, entries zot
    /// made for the run), until the guard is dropped.
    pub fn arm(&self, keep: &[PathBuf]) -> Armed<'_> {
        if let Source::Live { live, .. } = &self.source {
            live.arm(Some(keep));
        }
        Armed(self)
    }
}

/// A running command's watch (see [`Snapshot::arm`]).
#[must_use]
pub struct Armed<'a>(&'a Snapshot);

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if let Source::Live { live, .. } = &self.0.source {
            live.arm(None);
        }
    }
}

/// What [`Snapshot::after_run`] found.
#[derive(Debug, Clone, Default)]
pub struct AfterRun {
    pub created: Vec<Repo>,
    /// Renamed aside while the command ran: `(from, to)`.
    pub neutralised: Vec<(PathBuf, PathBuf)>,
    pub notes: Vec<IndexNote>,
}
