//! A session's index: built once in the background (from the persisted
//! copy, validated, or a walk), then kept current from inotify events, so
//! that a launch neither walks nor `statx`es the tree and what a command
//! created is known from the events.
//!
//! Every directory is watched for entries created, moved and removed. An
//! event re-reads only the directory it names ([`Tree::refresh`]). While a
//! command runs (the snapshot is armed) a repository that appears is
//! renamed aside at once, before a host git can use it. A queue overflow
//! falls back to one validated rescan; a watch limit reached makes every
//! launch validate instead; both are reported.

use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::tree::{self, Id, Repo, Tree};
use super::{AfterRun, IndexNote, SCAN_BUDGET};

fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// A session's index. Dropping it stops its thread.
#[derive(Debug)]
pub struct Live {
    roots: Vec<PathBuf>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    built: Condvar,
    stop: AtomicBool,
    armed: AtomicBool,
    /// Test hook: the next drain drops the queued events as an overflow
    /// of the kernel's queue would.
    overflow_next: AtomicBool,
}

#[derive(Debug)]
struct State {
    built: bool,
    tree: Tree,
    inotify: Option<Inotify>,
    wds: std::collections::HashMap<WatchDescriptor, u32>,
    /// The repositories as last seen: `(path, identity)`.
    known: HashSet<(PathBuf, Id)>,
    /// Renamed aside while a command ran.
    neutralised: Vec<(PathBuf, PathBuf)>,
    notes: Vec<IndexNote>,
    /// Events are not trusted (no inotify, or the watch limit reached):
    /// launches and after-run checks validate the tree instead.
    validate_always: bool,
    cache: Option<PathBuf>,
    /// Entries zot made for the running command (placeholders).
    keep: Vec<PathBuf>,
}

impl Live {
    /// Start building the index of `roots` in the background (`state`:
    /// zot's state directory, for the persisted copy).
    pub fn start(roots: &[PathBuf], state: Option<&Path>) -> Arc<Live> {
        let tops = tree::top_roots(roots);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                built: false,
                tree: Tree::empty(&tops),
                inotify: None,
                wds: Default::default(),
                known: HashSet::new(),
                neutralised: Vec::new(),
                notes: Vec::new(),
                validate_always: false,
                keep: Vec::new(),
                cache: state.map(|s| super::cache::path_for(s, &tops)),
            }),
            built: Condvar::new(),
            stop: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            overflow_next: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("zot-index".into())
            .spawn(move || {
                s.build();
                s.serve();
            })
            .ok();
        if thread.is_none() {
            // No thread: built on first use, validated at every launch.
            let mut st = shared.lock();
            st.validate_always = true;
            st.notes.push(IndexNote::Fallback {
                reason: "the index thread could not start".into(),
            });
        }
        Arc::new(Live {
            roots: tops,
            shared,
            thread: Mutex::new(thread),
        })
    }

    /// Wait for the first build, apply the queued events, and return what
    /// a launch needs: the repositories, unlistable directories, whether
    /// the walk was complete, the directory count, a mark for
    /// [`Live::after_run`], and notes.
    pub(crate) fn current(&self) -> LiveView {
        let mut st = self.shared.wait_built();
        self.shared.drain(&mut st);
        if st.validate_always {
            self.shared.resync(&mut st, None);
        }
        LiveView {
            roots: st.tree.roots.clone(),
            repos: st.tree.repos(),
            unlistable: st.tree.unlistable(),
            complete: st.tree.complete,
            dirs: if st.tree.complete { 0 } else { st.tree.dirs() },
            since: Since {
                neutralised: st.neutralised.len(),
                notes: st.notes.len(),
            },
            notes: st.notes.clone(),
        }
    }

    /// A command starts (`Some`: entries zot made for it, never renamed)
    /// or ended (`None`).
    pub(crate) fn arm(&self, keep: Option<&[PathBuf]>) {
        let mut st = self.shared.lock();
        // What happened before the start is not the command's.
        self.shared.drain(&mut st);
        st.keep = keep.map(<[_]>::to_vec).unwrap_or_default();
        self.shared.armed.store(keep.is_some(), Ordering::SeqCst);
    }

    /// After a command: apply every queued event (the command is gone, so
    /// all of its changes are queued), then what appeared since `before`.
    pub(crate) fn after_run(&self, before: &[Repo], since: Since) -> AfterRun {
        let mut st = self.shared.wait_built();
        self.shared.drain(&mut st);
        if st.validate_always {
            self.shared.resync(&mut st, None);
        }
        let (n0, notes0) = (since.neutralised, since.notes);
        let neutralised: Vec<(PathBuf, PathBuf)> = st
            .neutralised
            .get(n0..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        let gone: HashSet<&Path> = neutralised.iter().map(|(f, _)| f.as_path()).collect();
        let created = super::new_repos(before, &st.tree.repos())
            .into_iter()
            .filter(|r| !gone.contains(r.dot_git.as_path()))
            .collect();
        AfterRun {
            created,
            neutralised,
            notes: st
                .notes
                .get(notes0..)
                .map(<[_]>::to_vec)
                .unwrap_or_default(),
        }
    }

    /// Test hook: treat the next batch of events as lost to a queue
    /// overflow (the kernel's `max_queued_events` is not settable without
    /// privileges).
    #[doc(hidden)]
    pub fn inject_overflow(&self) {
        self.shared.overflow_next.store(true, Ordering::SeqCst);
    }

    /// The roots it indexes (none inside another).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Wait for the first build (tests, benchmarks).
    pub fn wait_built(&self) {
        drop(self.shared.wait_built());
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

/// What a launch takes from the session's index.
pub(crate) struct LiveView {
    pub roots: Vec<PathBuf>,
    pub repos: Vec<Repo>,
    pub unlistable: Vec<PathBuf>,
    pub complete: bool,
    pub dirs: usize,
    pub since: Since,
    pub notes: Vec<IndexNote>,
}

/// Where a launch's view of the session's lists ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Since {
    neutralised: usize,
    notes: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_built(&self) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        while !st.built {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            st = self
                .built
                .wait_timeout(st, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        st
    }

    /// The first build: inotify set up, the persisted copy loaded and
    /// validated (or a walk), every directory watched, then validated
    /// once more (what changed before its watch existed is re-read).
    fn build(&self) {
        let mut st = self.lock();
        let tops = st.tree.roots.clone();
        let mut tree = match st.cache.as_deref().map(|p| super::cache::load(p, &tops)) {
            Some(Ok(mut t)) => {
                t.validate(SCAN_BUDGET);
                t
            }
            other => {
                if let Some(Err(e)) = other {
                    if e.worth_noting() {
                        st.notes.push(IndexNote::CacheDiscarded {
                            reason: e.to_string(),
                        });
                    }
                }
                Tree::scan(&tops, SCAN_BUDGET)
            }
        };
        match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC) {
            Ok(i) => st.inotify = Some(i),
            Err(e) => {
                st.validate_always = true;
                st.notes.push(IndexNote::Fallback {
                    reason: format!("inotify unavailable ({e})"),
                });
            }
        }
        std::mem::swap(&mut st.tree, &mut tree);
        let all = 0..st.tree.nodes.len() as u32;
        self.watch(&mut st, all);
        if !st.validate_always {
            let before = st.tree.nodes.len() as u32;
            st.tree.validate_keeping_indexes(SCAN_BUDGET);
            let added = before..st.tree.nodes.len() as u32;
            self.watch(&mut st, added);
        }
        if st.tree.complete {
            if let Some(p) = st.cache.clone() {
                let _ = super::cache::save(&p, &st.tree);
            }
        }
        st.known = st
            .tree
            .repos()
            .into_iter()
            .map(|r| (r.dot_git, r.id))
            .collect();
        st.built = true;
        drop(st);
        self.built.notify_all();
    }

    /// Watch the live nodes of `range`; re-read those added after the
    /// first build (an entry made between the read and the watch).
    fn watch(&self, st: &mut State, range: std::ops::Range<u32>) {
        if st.validate_always || st.inotify.is_none() {
            return;
        }
        let mut pending: Vec<u32> = range.collect();
        while let Some(i) = pending.pop() {
            if st.tree.nodes[i as usize].dead || st.tree.nodes[i as usize].unlistable {
                continue;
            }
            let p = st.tree.path(i);
            let added = st
                .inotify
                .as_ref()
                .map(|ino| ino.add_watch(&p, watch_mask()));
            match added {
                Some(Ok(wd)) => {
                    st.wds.insert(wd, i);
                    if st.built {
                        let more = st.tree.refresh(i, SCAN_BUDGET);
                        pending.extend(more);
                    }
                }
                Some(Err(Errno::ENOSPC)) => {
                    st.validate_always = true;
                    st.notes.push(IndexNote::Fallback {
                        reason: "the inotify watch limit was reached".into(),
                    });
                    return;
                }
                // Gone meanwhile: its parent's event says so.
                Some(Err(_)) | None => {}
            }
        }
    }

    /// Read and apply every queued event.
    fn drain(&self, st: &mut State) {
        if st.validate_always {
            return;
        }
        loop {
            let events = match st.inotify.as_ref().map(Inotify::read_events) {
                Some(Ok(ev)) => ev,
                Some(Err(Errno::EINTR)) => continue,
                _ => break, // EAGAIN: nothing queued
            };
            if events.is_empty() {
                break;
            }
            let overflow = self.overflow_next.swap(false, Ordering::SeqCst)
                || events
                    .iter()
                    .any(|e| e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW));
            if overflow {
                self.resync(st, Some("the inotify queue overflowed"));
                continue;
            }
            let mut dirty: Vec<u32> = Vec::new();
            for e in &events {
                if e.mask.contains(AddWatchFlags::IN_IGNORED) {
                    st.wds.remove(&e.wd);
                    continue;
                }
                let Some(&i) = st.wds.get(&e.wd) else {
                    continue;
                };
                if e.mask
                    .intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF)
                {
                    // Its parent's event re-reads the parent.
                    let parent = st.tree.nodes[i as usize].parent;
                    dirty.push(if parent == tree::NO_PARENT { i } else { parent });
                    continue;
                }
                dirty.push(i);
            }
            dirty.sort_unstable();
            dirty.dedup();
            for i in dirty {
                if st.tree.nodes[i as usize].dead {
                    continue;
                }
                let added = st.tree.refresh(i, SCAN_BUDGET);
                self.watch(st, added);
            }
            self.sweep(st);
        }
    }

    /// Events were lost: validate the whole tree once, watch what is new.
    fn resync(&self, st: &mut State, why: Option<&str>) {
        if let Some(why) = why {
            st.notes.push(IndexNote::Fallback {
                reason: format!("{why}: the tree was validated instead"),
            });
            // What is queued is stale now.
            if let Some(ino) = st.inotify.as_ref() {
                while let Ok(ev) = ino.read_events() {
                    if ev.is_empty() {
                        break;
                    }
                }
            }
        }
        let before = st.tree.nodes.len() as u32;
        st.tree.validate_keeping_indexes(SCAN_BUDGET);
        let added = before..st.tree.nodes.len() as u32;
        self.watch(st, added);
        self.sweep(st);
    }

    /// Compare the repositories with the known ones: while a command runs,
    /// a new one is renamed aside at once.
    fn sweep(&self, st: &mut State) {
        let now: Vec<Repo> = st.tree.repos();
        let armed = self.armed.load(Ordering::SeqCst);
        let mut fresh = Vec::new();
        for r in &now {
            if !st.known.contains(&(r.dot_git.clone(), r.id)) {
                fresh.push(r.clone());
            }
        }
        st.known = now.into_iter().map(|r| (r.dot_git, r.id)).collect();
        if !armed {
            return;
        }
        for r in fresh {
            if st.keep.contains(&r.dot_git) {
                continue;
            }
            if let Some(q) = crate::repos::aside(&r.dot_git) {
                st.known.remove(&(r.dot_git.clone(), r.id));
                st.neutralised.push(q);
                // The parent changed: re-read it (the event comes too).
                if let Some(i) = r.dot_git.parent().and_then(|p| st.tree.find(p)) {
                    let added = st.tree.refresh(i, SCAN_BUDGET);
                    self.watch(st, added);
                }
            }
        }
    }

    /// Wait for events and apply them, until stopped.
    fn serve(&self) {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let fd = {
                let st = self.lock();
                match st.inotify.as_ref() {
                    Some(i) if !st.validate_always => i.as_fd().as_raw_fd(),
                    _ => return,
                }
            };
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the descriptor lives as long as
            // `self` (closed only when the state is dropped).
            let r = unsafe { libc::poll(&mut pfd, 1, 100) };
            if r > 0 {
                let mut st = self.lock();
                self.drain(&mut st);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn wait_until(mut f: impl FnMut() -> bool) -> bool {
        for _ in 0..400 {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(r.join("old/.git/hooks")).unwrap();
        for i in 0..20 {
            fs::create_dir_all(r.join(format!("tree/d{i}/e"))).unwrap();
        }
        (t, r)
    }

    #[test]
    fn a_repository_made_while_armed_is_renamed_aside_at_once() {
        let (_t, r) = ws();
        let live = Live::start(std::slice::from_ref(&r), None);
        let snap = super::super::Snapshot::live(&live);
        assert_eq!(snap.repos.len(), 1);
        let armed = snap.arm(&[]);
        // May fail half-way: the index renames `.git` as soon as it sees it.
        let _ = fs::create_dir_all(r.join("tree/d3/e/new/.git/hooks"));
        assert!(r.join("tree/d3/e/new").is_dir());
        // Seen by the index's thread while the "command" still runs.
        assert!(
            wait_until(|| !r.join("tree/d3/e/new/.git").exists()),
            "not neutralised while running"
        );
        let after = snap.after_run();
        drop(armed);
        assert_eq!(after.neutralised.len(), 1, "{after:?}");
        assert_eq!(after.neutralised[0].0, r.join("tree/d3/e/new/.git"));
        assert!(after.created.is_empty(), "{after:?}");
    }

    #[test]
    fn renamed_parent_and_moved_in_repositories_are_new() {
        let (_t, r) = ws();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("m/.git/hooks")).unwrap();
        let live = Live::start(std::slice::from_ref(&r), None);
        let snap = super::super::Snapshot::live(&live);
        // Not armed: found by the after-run check from the events.
        fs::rename(r.join("old"), r.join("old.orig")).unwrap();
        fs::create_dir_all(r.join("old/.git")).unwrap();
        fs::rename(outside.path().join("m"), r.join("tree/d1/m")).unwrap();
        let after = snap.after_run();
        let created: Vec<PathBuf> = after.created.iter().map(|x| x.dot_git.clone()).collect();
        for want in [
            r.join("old/.git"),
            r.join("old.orig/.git"),
            r.join("tree/d1/m/.git"),
        ] {
            assert!(created.contains(&want), "{want:?} not in {created:?}");
        }
    }

    #[test]
    fn an_overflow_falls_back_and_still_protects() {
        let (_t, r) = ws();
        let live = Live::start(std::slice::from_ref(&r), None);
        let snap = super::super::Snapshot::live(&live);
        live.inject_overflow();
        fs::create_dir_all(r.join("tree/d9/e/x/.git")).unwrap();
        let after = snap.after_run();
        let created: Vec<PathBuf> = after.created.iter().map(|x| x.dot_git.clone()).collect();
        assert_eq!(created, vec![r.join("tree/d9/e/x/.git")]);
        assert!(
            after.notes.iter().any(
                |n| matches!(n, IndexNote::Fallback { reason } if reason.contains("overflow"))
            ),
            "{after:?}"
        );
        // Events keep working after the resync.
        fs::create_dir_all(r.join("tree/d9/e/y/.git")).unwrap();
        let snap2 = super::super::Snapshot::live(&live);
        assert!(snap2
            .repos
            .iter()
            .any(|x| x.dot_git == r.join("tree/d9/e/y/.git")));
    }
}
