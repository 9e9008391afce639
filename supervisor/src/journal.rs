//! The journal of what a zot process creates outside its state directory
//! (temporary directories, placeholder mount points for protected paths),
//! so that what a killed run left behind is removed by the next zot run.
//!
//! Layout: `<state>/journal/<pid>-<random>.jsonl`, one file per process,
//! held under an exclusive `flock` for the life of the process (the kernel
//! drops the lock when the process dies, however it dies). Each line is a
//! [`Line`]: `add` is written *before* the thing is created, `remove` after
//! it is gone. [`sweep`] takes every journal whose lock it can get (its
//! owner is dead), removes what is still recorded as added, and deletes
//! the journal. With nothing to do it costs one directory read.
//!
//! Placeholders may be shared by two live runs in one workspace: they are
//! created and released under `<state>/journal/.lock`, and a release leaves
//! the placeholder in place while another live journal still holds it.
//!
//! Nothing is ever removed that does not still look like what was created:
//! a temp dir must be a real directory (not a symlink) owned by this user,
//! a placeholder an empty regular file or an empty directory.
//!
//! A placeholder file is a hard link of a spare kept for its path in
//! `<state>/placeholders/` (where the file systems allow), not a new file:
//! making and freeing an inode at every launch is what a placeholder cost
//! (on ext4 without a journal each new inode also skips every recently
//! freed one, so launches in a row slowed each other down). A spare is
//! linked only while it is still what zot made (empty, 0444, this user's,
//! no other link); anything else is replaced by a fresh one. A spare only
//! ever appears at its own path, so a process that could write to it there
//! could write that path anyway.

use std::collections::{BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// zot's state directory: `$ZOT_HOME`, else `$XDG_STATE_HOME/zot`, else
/// `$HOME/.local/state/zot` (empty values skipped; a relative one is an
/// error naming the variable).
pub fn state_dir_from(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    let non_empty = |k: &str| get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let absolute = |var: &str, p: PathBuf| {
        if p.is_absolute() {
            Ok(p)
        } else {
            Err(format!(
                "{var} must be an absolute path, got {}",
                p.display()
            ))
        }
    };
    if let Some(p) = non_empty("ZOT_HOME") {
        return absolute("ZOT_HOME", p);
    }
    if let Some(p) = non_empty("XDG_STATE_HOME") {
        return absolute("XDG_STATE_HOME", p).map(|p| p.join("zot"));
    }
    if let Some(p) = non_empty("HOME") {
        return absolute("HOME", p).map(|p| p.join(".local/state/zot"));
    }
    Err("none of ZOT_HOME, XDG_STATE_HOME or HOME is set".into())
}

/// Directory of the journals, below the state directory.
pub const JOURNAL_DIR: &str = "journal";
const LOCK_FILE: &str = ".lock";
/// Spares of placeholder files, beside the journals (same state dir).
const SPARES_DIR: &str = "placeholders";
/// A spare unused (no placeholder linked: its ctime unchanged) this long
/// is removed when a new spare is made.
const SPARE_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);
const SUFFIX: &str = ".jsonl";

/// What a journal entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A directory tree zot made and removes whole (`remove_dir_all`).
    TempDir,
    /// An empty file made as a mount point for a missing protected path.
    PlaceholderFile,
    /// An empty directory made as a mount point for a missing protected path.
    PlaceholderDir,
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Line {
    Add { kind: Kind, path: PathBuf },
    Remove { path: PathBuf },
}

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {}: {what}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn errno_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(nix::Error) -> JournalError + 'a {
    move |e| JournalError::Io {
        what,
        path: path.to_path_buf(),
        source: io::Error::from(e),
    }
}

struct Inner {
    /// The journal file and its lock, made at the first entry.
    file: Option<(Flock<File>, PathBuf)>,
    dir: PathBuf,
    /// Entries added and not yet removed, in order.
    open: Vec<(Kind, PathBuf)>,
}

/// This process's journal. Cheap to clone. The journal file exists while
/// something is recorded and not yet undone: made at the first entry,
/// deleted when the last one is done. Dropped with entries still open, it
/// stays, unlocked, exactly as after a crash, for [`sweep`].
#[derive(Clone)]
pub struct Journal(Arc<Mutex<Inner>>);

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Journal").field("dir", &inner.dir).finish()
    }
}

impl Journal {
    /// This process's journal under `state_dir`. Creates nothing yet.
    pub fn new(state_dir: &Path) -> Journal {
        Journal(Arc::new(Mutex::new(Inner {
            file: None,
            dir: state_dir.join(JOURNAL_DIR),
            open: Vec::new(),
        })))
    }

    /// The journal file, once something was recorded.
    pub fn path(&self) -> Option<PathBuf> {
        self.lock().file.as_ref().map(|(_, p)| p.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record that `path` is about to be created. Call before creating it.
    pub fn add(&self, kind: Kind, path: &Path) -> Result<(), JournalError> {
        self.add_all(kind, std::slice::from_ref(&path.to_path_buf()))
    }

    /// [`Journal::add`] for each of `paths`, in one write.
    fn add_all(&self, kind: Kind, paths: &[PathBuf]) -> Result<(), JournalError> {
        let mut inner = self.lock();
        let lines: Vec<Line> = paths
            .iter()
            .map(|p| Line::Add {
                kind,
                path: p.clone(),
            })
            .collect();
        inner.write(&lines)?;
        inner.open.extend(paths.iter().map(|p| (kind, p.clone())));
        Ok(())
    }

    /// Record that `path` is gone. Call after removing it.
    pub fn done(&self, path: &Path) -> Result<(), JournalError> {
        self.done_all(std::slice::from_ref(&path.to_path_buf()))
    }

    /// [`Journal::done`] for each of `paths`, in one write. When nothing is
    /// left to undo the journal goes (unlinked while still locked) without
    /// that write; the next entry starts a new one.
    fn done_all(&self, paths: &[PathBuf]) -> Result<(), JournalError> {
        let mut inner = self.lock();
        for path in paths {
            if let Some(i) = inner.open.iter().rposition(|(_, p)| p == path) {
                inner.open.remove(i);
            }
        }
        if inner.open.is_empty() {
            if let Some((_, p)) = inner.file.take() {
                let _ = fs::remove_file(p);
            }
            return Ok(());
        }
        let lines: Vec<Line> = paths
            .iter()
            .map(|p| Line::Remove { path: p.clone() })
            .collect();
        inner.write(&lines)
    }

    /// The journal directory, made when missing, and locked against every
    /// other zot process's placeholder work.
    fn locked_dir(&self) -> Result<(PathBuf, Flock<File>), JournalError> {
        let dir = self.lock().dir.clone();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_err("creating the journal directory", &dir))?;
        let global = global_lock(&dir)?;
        Ok((dir, global))
    }

    /// Make a placeholder at `path` (an empty file, or an empty directory
    /// for [`Kind::PlaceholderDir`]), or share the one another live run
    /// made there. Held until [`Journal::release_placeholder`].
    pub fn acquire_placeholder(&self, kind: Kind, path: &Path) -> Result<(), JournalError> {
        self.acquire_placeholders(kind, &[path.to_path_buf()], &mut Vec::new())
    }

    /// [`Journal::acquire_placeholder`] for each of `paths`, under one hold
    /// of the global lock; each one made (or shared) is pushed on `held`.
    pub fn acquire_placeholders(
        &self,
        kind: Kind,
        paths: &[PathBuf],
        held: &mut Vec<PathBuf>,
    ) -> Result<(), JournalError> {
        if paths.is_empty() {
            return Ok(());
        }
        let (dir, _global) = self.locked_dir()?;
        let spares = spares_dir(&dir);
        self.add_all(kind, paths)?;
        for (i, path) in paths.iter().enumerate() {
            match create_placeholder(kind, path, &spares) {
                Ok(()) => {}
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists && is_placeholder(kind, path) => {}
                Err(e) => {
                    // This one and the rest were recorded, not made.
                    let _ = self.done_all(&paths[i..]);
                    return Err(io_err("creating placeholder", path)(e));
                }
            }
            held.push(path.clone());
        }
        Ok(())
    }

    /// Hold the placeholder another live run made at `path` (found there
    /// when this run was planned), or make it again when it vanished since
    /// (its last holder ended): true when this run now holds it, false
    /// when `path` is something else (not zot's to remove).
    pub fn share_placeholder(&self, path: &Path) -> Result<bool, JournalError> {
        let mut held = Vec::new();
        self.share_placeholders(&[path.to_path_buf()], &mut held)?;
        Ok(!held.is_empty())
    }

    /// [`Journal::share_placeholder`] for each of `paths`, under one hold
    /// of the global lock (the other runs' journals read once); each one
    /// this run now holds is pushed on `held`.
    pub fn share_placeholders(
        &self,
        paths: &[PathBuf],
        held: &mut Vec<PathBuf>,
    ) -> Result<(), JournalError> {
        if paths.is_empty() {
            return Ok(());
        }
        let kind = Kind::PlaceholderFile;
        let own = self.path().unwrap_or_default();
        let (dir, _global) = self.locked_dir()?;
        // An unreadable journal directory: nobody else's (not shared).
        let mut others: Option<HashSet<PathBuf>> = None;
        // What this run will hold: shared ones, and missing ones to make.
        let mut hold: Vec<PathBuf> = Vec::new();
        let mut make: Vec<bool> = Vec::new();
        for path in paths {
            let meta = fs::symlink_metadata(path).ok();
            let present = meta.is_some();
            if let Some(m) = &meta {
                let shared = looks_like(kind, m, path)
                    && others
                        .get_or_insert_with(|| held_by_others(&dir, &own).unwrap_or_default())
                        .contains(path);
                if !shared {
                    continue;
                }
            }
            hold.push(path.clone());
            make.push(!present);
        }
        self.add_all(kind, &hold)?;
        let spares = spares_dir(&dir);
        for (i, path) in hold.iter().enumerate() {
            if make[i] {
                if let Err(e) = create_placeholder(kind, path, &spares) {
                    // This one and the rest were recorded, not held.
                    let _ = self.done_all(&hold[i..]);
                    return Err(io_err("creating placeholder", path)(e));
                }
            }
            held.push(path.clone());
        }
        Ok(())
    }

    /// Give up this run's hold on the placeholder at `path`; it is removed
    /// unless another live run still holds it.
    pub fn release_placeholder(&self, path: &Path) -> Result<(), JournalError> {
        self.release_placeholders(&[path.to_path_buf()])
    }

    /// [`Journal::release_placeholder`] for each of `paths`, in reverse
    /// order, under one hold of the global lock (the other runs' journals
    /// read once). Every one is released; the first error is returned.
    pub fn release_placeholders(&self, paths: &[PathBuf]) -> Result<(), JournalError> {
        if paths.is_empty() {
            return Ok(());
        }
        let (dir, own) = {
            let inner = self.lock();
            let own = inner
                .file
                .as_ref()
                .map(|(_, p)| p.clone())
                .unwrap_or_default();
            (inner.dir.clone(), own)
        };
        let _global = global_lock(&dir)?;
        // Unreadable: every placeholder is kept (fail safe).
        let mut others: Option<Option<HashSet<PathBuf>>> = None;
        for path in paths.iter().rev() {
            let kind = self
                .lock()
                .open
                .iter()
                .rev()
                .find(|(_, p)| p == path)
                .map(|(k, _)| *k);
            if let Some(kind) = kind {
                let elsewhere = others
                    .get_or_insert_with(|| held_by_others(&dir, &own))
                    .as_ref()
                    .is_none_or(|set| set.contains(path));
                if !elsewhere {
                    remove_entry(kind, path);
                }
            }
        }
        self.done_all(paths)
    }

    /// Remove a temp dir recorded with [`Kind::TempDir`] and record it.
    pub fn remove_temp_dir(&self, path: &Path) -> Result<(), JournalError> {
        remove_entry(Kind::TempDir, path);
        self.done(path)
    }
}

/// The journal of this process: one per process, made on first use under
/// `state_dir` (later calls get the same journal whatever they pass).
pub fn for_process(state_dir: &Path) -> Journal {
    static PROCESS: std::sync::OnceLock<Journal> = std::sync::OnceLock::new();
    PROCESS.get_or_init(|| Journal::new(state_dir)).clone()
}

/// A private (0700) directory recorded in a journal before it was made,
/// removed with everything in it when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    journal: Journal,
}

impl TempDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = self.journal.remove_temp_dir(&self.path);
    }
}

impl Journal {
    /// Make `<parent>/<prefix><random>` (mode 0700), journaled first.
    pub fn temp_dir(&self, parent: &Path, prefix: &str) -> Result<TempDir, JournalError> {
        loop {
            let path = parent.join(format!("{prefix}{:012x}", random_u64() >> 16));
            self.add(Kind::TempDir, &path)?;
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return Ok(TempDir {
                        path,
                        journal: self.clone(),
                    })
                }
                Err(e) => {
                    // Nothing was made: the entry is void either way.
                    self.done(&path)?;
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(io_err("creating", &path)(e));
                    }
                }
            }
        }
    }
}

impl Inner {
    fn write(&mut self, lines: &[Line]) -> Result<(), JournalError> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut s = String::new();
        for line in lines {
            // A path that is not UTF-8 has no JSON string: refused, named,
            // before anything is written or created for it.
            let json = serde_json::to_string(line).map_err(|e| JournalError::Io {
                what: "recording a path that is not UTF-8 (not supported)",
                path: match line {
                    Line::Add { path, .. } | Line::Remove { path } => path.clone(),
                },
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            })?;
            s.push_str(&json);
            s.push('\n');
        }
        if self.file.is_none() {
            self.file = Some(create(&self.dir)?);
        }
        let (file, path) = self.file.as_mut().expect("just made");
        // One write(2), appended: a crash leaves at most a torn last line,
        // which the reader skips.
        file.write_all(s.as_bytes())
            .map_err(io_err("writing", path))
    }
}

/// Create a locked journal file in `dir` (made 0700 when missing).
fn create(dir: &Path) -> Result<(Flock<File>, PathBuf), JournalError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err("creating the journal directory", dir))?;
    // Made under a dot name, locked, then renamed: a sweep never sees a
    // journal that exists but is not locked yet.
    let name = format!("{}-{:016x}", std::process::id(), random_u64());
    let temp = dir.join(format!(".{name}.tmp"));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(&temp)
        .map_err(io_err("creating", &temp))?;
    let file = Flock::lock(file, FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| errno_err("locking", &temp)(e))?;
    let path = dir.join(format!("{name}{SUFFIX}"));
    fs::rename(&temp, &path).map_err(io_err("renaming", &temp))?;
    Ok((file, path))
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let (true, Some((_, path))) = (self.open.is_empty(), &self.file) {
            let _ = fs::remove_file(path);
        }
        // Otherwise the file stays, the lock goes with the fd, and the next
        // sweep removes what is left.
    }
}

/// What [`sweep`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Leftovers removed, with their kind.
    pub removed: Vec<(Kind, PathBuf)>,
    /// Journals of dead runs deleted.
    pub journals: usize,
}

/// Remove what dead runs recorded under `state_dir` and never removed.
/// Errors are not fatal to the caller: what cannot be cleaned now stays
/// for the next sweep.
pub fn sweep(state_dir: &Path) -> Swept {
    let dir = state_dir.join(JOURNAL_DIR);
    let mut out = Swept::default();
    let Ok(rd) = fs::read_dir(&dir) else {
        return out;
    };
    let candidates: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(SUFFIX))
        })
        .collect();
    if candidates.is_empty() {
        return out;
    }
    let Ok(_global) = global_lock(&dir) else {
        return out;
    };
    for path in candidates {
        let Ok(file) = File::open(&path) else {
            continue;
        };
        // Locked: its owner lives.
        let Ok(locked) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            continue;
        };
        let own = path.clone();
        for (kind, p) in outstanding(&locked) {
            let shared = kind != Kind::TempDir && held_elsewhere(&dir, &own, &p);
            if !shared && remove_entry(kind, &p) {
                out.removed.push((kind, p));
            }
        }
        if fs::remove_file(&path).is_ok() {
            out.journals += 1;
        }
    }
    out
}

/// Entries of a journal added and not removed, in order.
fn outstanding(file: &File) -> Vec<(Kind, PathBuf)> {
    let mut open: Vec<(Kind, PathBuf)> = Vec::new();
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Add { kind, path }) => open.push((kind, path)),
            Ok(Line::Remove { path }) => {
                if let Some(i) = open.iter().rposition(|(_, p)| *p == path) {
                    open.remove(i);
                }
            }
            Err(_) => {} // a torn last line
        }
    }
    open
}

/// Whether a live journal other than `own` holds `path` (an unreadable
/// directory: yes, fail safe).
fn held_elsewhere(dir: &Path, own: &Path, path: &Path) -> bool {
    held_by_others(dir, own).is_none_or(|set| set.contains(path))
}

/// Every path the live journals other than `own` hold (`None`: the
/// directory cannot be read).
fn held_by_others(dir: &Path, own: &Path) -> Option<HashSet<PathBuf>> {
    let rd = fs::read_dir(dir).ok()?;
    let mut out = HashSet::new();
    for e in rd.flatten() {
        let p = e.path();
        if p == own
            || !p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(SUFFIX))
        {
            continue;
        }
        let Ok(file) = File::open(&p) else { continue };
        // A journal we can lock belongs to a dead run (the sweep's business).
        let file = match Flock::lock(file, FlockArg::LockSharedNonblock) {
            Ok(_dead) => continue,
            Err((file, _)) => file,
        };
        out.extend(outstanding(&file).into_iter().map(|(_, q)| q));
    }
    Some(out)
}

fn global_lock(dir: &Path) -> Result<Flock<File>, JournalError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(&path)
        .map_err(io_err("opening", &path))?;
    Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| errno_err("locking", &path)(e))
}

/// Make the empty placeholder of `kind` at `path`, which must not exist:
/// a directory (0755), or a file no one may write (0444): a link of the
/// path's spare in `spares`, or a new file where no link can be made
/// (another file system, or one without hard links).
fn create_placeholder(kind: Kind, path: &Path, spares: &Path) -> io::Result<()> {
    if kind == Kind::PlaceholderDir {
        return fs::DirBuilder::new().mode(0o755).create(path);
    }
    if let Some(spare) = spare_for(spares, path) {
        match fs::hard_link(&spare, path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
            Err(_) => {}
        }
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(path)
        .map(drop)
}

fn spares_dir(journal_dir: &Path) -> PathBuf {
    journal_dir.parent().unwrap_or(journal_dir).join(SPARES_DIR)
}

/// The spare's name for `path`: 128 bits of its SHA-256.
fn spare_name(path: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    hex::encode(&sha2::Sha256::digest(path.as_os_str().as_bytes())[..16])
}

/// Whether `m` is a spare as zot made it and nothing else uses: empty,
/// mode 0444, this user's, one link.
fn is_spare(m: &fs::Metadata) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    m.file_type().is_file()
        && m.len() == 0
        && m.mode() & 0o7777 == 0o444
        && m.uid() == me
        && m.nlink() == 1
}

/// The spare of `path` in `spares`, made when missing and replaced when
/// it is not [`is_spare`] any more. `None`: none can be had (the caller
/// makes a new file).
fn spare_for(spares: &Path, path: &Path) -> Option<PathBuf> {
    let spare = spares.join(spare_name(path));
    match fs::symlink_metadata(&spare) {
        Ok(m) if is_spare(&m) => return Some(spare),
        Ok(_) => fs::remove_file(&spare).ok()?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(spares)
        .ok()?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&spare)
        .ok()?;
    prune_spares(spares);
    Some(spare)
}

/// Remove spares no placeholder used for [`SPARE_MAX_AGE`] (a link made or
/// removed changes the spare's ctime). Run when a spare is made, which is
/// when a path is protected for the first time; once per process (a first
/// launch in a workspace makes a dozen).
fn prune_spares(spares: &Path) {
    static PRUNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if PRUNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let Ok(rd) = fs::read_dir(spares) else { return };
    let now = std::time::SystemTime::now();
    for e in rd.flatten() {
        let Ok(m) = e.metadata() else { continue };
        let changed =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(m.ctime().max(0) as u64);
        let old = now
            .duration_since(changed)
            .is_ok_and(|age| age > SPARE_MAX_AGE);
        if old && is_spare(&m) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Whether `path` still looks like a placeholder of `kind`.
fn is_placeholder(kind: Kind, path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| looks_like(kind, &m, path))
}

/// [`is_placeholder`] with `path`'s metadata `m` at hand.
fn looks_like(kind: Kind, m: &fs::Metadata, path: &Path) -> bool {
    // SAFETY: geteuid has no preconditions.
    let mine = m.uid() == unsafe { libc::geteuid() };
    match kind {
        Kind::PlaceholderFile => mine && m.file_type().is_file() && m.len() == 0,
        Kind::PlaceholderDir => {
            mine && m.file_type().is_dir()
                && fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
        }
        Kind::TempDir => mine && m.file_type().is_dir(),
    }
}

/// Remove `path` if it still looks like what was created. True when removed.
fn remove_entry(kind: Kind, path: &Path) -> bool {
    if !is_placeholder(kind, path) {
        return false;
    }
    match kind {
        // An emptied directory needs no open to go.
        Kind::TempDir => fs::remove_dir(path).is_ok() || fs::remove_dir_all(path).is_ok(),
        Kind::PlaceholderFile => fs::remove_file(path).is_ok(),
        Kind::PlaceholderDir => fs::remove_dir(path).is_ok(),
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most b.len() bytes into b.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == b.len() as isize {
        u64::from_ne_bytes(b)
    } else {
        // Uniqueness only needs pid + time; create_new catches a clash.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }
}

/// Journals under `state_dir`, for diagnostics and tests.
pub fn journals(state_dir: &Path) -> BTreeSet<PathBuf> {
    fs::read_dir(state_dir.join(JOURNAL_DIR))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(SUFFIX))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_leaves_no_journal() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let j = Journal::new(state.path());
        let t = ws.path().join("zot-agent-x");
        j.add(Kind::TempDir, &t).unwrap();
        fs::create_dir(&t).unwrap();
        fs::write(t.join("f"), "x").unwrap();
        let ph = ws.path().join(".zot");
        j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        assert!(ph.is_file());
        assert_eq!(journals(state.path()).len(), 1);
        j.remove_temp_dir(&t).unwrap();
        j.release_placeholder(&ph).unwrap();
        assert!(!t.exists() && !ph.exists());
        drop(j);
        assert!(journals(state.path()).is_empty());
    }

    /// A placeholder at a path that is not UTF-8 (a workspace named so) is
    /// refused with an error naming it, not a panic, and nothing is made.
    #[test]
    fn a_path_that_is_not_utf8_is_an_error() {
        use std::os::unix::ffi::OsStrExt;
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let dir = ws.path().join(std::ffi::OsStr::from_bytes(b"ws-\xff"));
        fs::create_dir(&dir).unwrap();
        let j = Journal::new(state.path());
        let ph = dir.join(".zot");
        let err = j
            .acquire_placeholder(Kind::PlaceholderFile, &ph)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not UTF-8") && err.contains("ws-"), "{err}");
        assert!(!ph.exists());
        assert!(journals(state.path()).is_empty());
    }

    /// A state dir, a workspace, its `.zot` placeholder path, that path's
    /// spare and a journal.
    fn spare_case() -> (
        tempfile::TempDir,
        tempfile::TempDir,
        PathBuf,
        PathBuf,
        Journal,
    ) {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ph = ws.path().join(".zot");
        let spare = state.path().join(SPARES_DIR).join(spare_name(&ph));
        let j = Journal::new(state.path());
        (state, ws, ph, spare, j)
    }

    /// A placeholder file is a link of its path's spare (no inode made or
    /// freed per launch), removed as before, and the spare is linked again
    /// next time; another path has its own spare.
    #[test]
    fn placeholder_files_are_links_of_their_spares() {
        let (_state, ws, ph, spare, j) = spare_case();
        j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        let (p, s) = (fs::metadata(&ph).unwrap(), fs::metadata(&spare).unwrap());
        assert_eq!((p.dev(), p.ino()), (s.dev(), s.ino()));
        assert_eq!((p.nlink(), p.len(), p.mode() & 0o7777), (2, 0, 0o444));
        j.release_placeholder(&ph).unwrap();
        assert!(!ph.exists());
        assert_eq!(fs::metadata(&spare).unwrap().nlink(), 1);
        j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        assert_eq!(fs::metadata(&ph).unwrap().ino(), s.ino());
        let other = ws.path().join(".agents");
        j.acquire_placeholder(Kind::PlaceholderFile, &other)
            .unwrap();
        assert_ne!(fs::metadata(&other).unwrap().ino(), s.ino());
        j.release_placeholders(&[ph.clone(), other.clone()])
            .unwrap();
        assert!(!ph.exists() && !other.exists());
    }

    /// A spare that is not what zot made (written to, made writable,
    /// linked elsewhere) is never linked: the placeholder is a fresh,
    /// empty file and the spare is replaced.
    #[test]
    fn a_changed_spare_is_replaced_not_linked() {
        use std::os::unix::fs::PermissionsExt;
        let (_state, ws, ph, spare, j) = spare_case();
        let tamper: [&dyn Fn(); 3] = [
            &|| {
                fs::set_permissions(&spare, fs::Permissions::from_mode(0o644)).unwrap();
                fs::write(&spare, "[core]\nfsmonitor = evil\n").unwrap();
                fs::set_permissions(&spare, fs::Permissions::from_mode(0o444)).unwrap();
            },
            &|| fs::set_permissions(&spare, fs::Permissions::from_mode(0o644)).unwrap(),
            &|| fs::hard_link(&spare, ws.path().join("elsewhere")).unwrap(),
        ];
        for (k, t) in tamper.iter().enumerate() {
            j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
            j.release_placeholder(&ph).unwrap();
            t();
            j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
            // Not the changed spare (a freed inode's number may come back:
            // what it holds and its links tell them apart).
            let m = fs::metadata(&ph).unwrap();
            assert_eq!((m.len(), m.mode() & 0o7777), (0, 0o444), "case {k}");
            if let Ok(e) = fs::metadata(ws.path().join("elsewhere")) {
                assert_ne!(e.ino(), m.ino(), "case {k}: the changed spare was linked");
            }
            // Linked from the fresh spare that replaced it.
            let s = fs::metadata(&spare).unwrap();
            assert_eq!((s.ino(), s.len(), s.nlink()), (m.ino(), 0, 2), "case {k}");
            j.release_placeholder(&ph).unwrap();
            let _ = fs::remove_file(ws.path().join("elsewhere"));
        }
    }

    /// Where no link can be made (the path on another file system than the
    /// state directory), the placeholder is a new empty file, as before.
    #[test]
    fn a_placeholder_on_another_file_system_is_a_new_file() {
        let state = tempfile::tempdir().unwrap();
        let shm = Path::new("/dev/shm");
        let ws = tempfile::tempdir_in(shm).unwrap();
        let other_fs =
            fs::metadata(state.path()).unwrap().dev() != fs::metadata(ws.path()).unwrap().dev();
        let ph = ws.path().join(".zot");
        let j = Journal::new(state.path());
        j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        let m = fs::metadata(&ph).unwrap();
        assert_eq!((m.len(), m.mode() & 0o7777), (0, 0o444));
        if other_fs {
            assert_eq!(m.nlink(), 1);
        }
        j.release_placeholder(&ph).unwrap();
        assert!(!ph.exists());
    }

    #[test]
    fn a_dead_runs_leftovers_are_swept() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let j = Journal::new(state.path());
        let t = ws.path().join("zot-github-y");
        j.add(Kind::TempDir, &t).unwrap();
        fs::create_dir_all(t.join("a/b")).unwrap();
        let ph = ws.path().join(".agents");
        j.acquire_placeholder(Kind::PlaceholderDir, &ph).unwrap();
        let kept = ws.path().join("kept");
        j.add(Kind::TempDir, &kept).unwrap();
        fs::create_dir(&kept).unwrap();
        j.remove_temp_dir(&kept).unwrap();
        fs::create_dir(&kept).unwrap(); // re-created by someone else later

        // while the run lives, a sweep touches nothing
        assert_eq!(sweep(state.path()), Swept::default());
        assert!(t.exists() && ph.exists());

        drop(j);
        let s = sweep(state.path());
        assert_eq!(s.journals, 1);
        assert_eq!(
            s.removed,
            vec![
                (Kind::TempDir, t.clone()),
                (Kind::PlaceholderDir, ph.clone())
            ]
        );
        assert!(!t.exists() && !ph.exists() && kept.exists());
        assert!(journals(state.path()).is_empty());
        assert_eq!(sweep(state.path()), Swept::default());
    }

    #[test]
    fn a_shared_placeholder_outlives_one_holder() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ph = ws.path().join(".zot");
        let a = Journal::new(state.path());
        let b = Journal::new(state.path());
        a.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        b.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        a.release_placeholder(&ph).unwrap();
        assert!(ph.exists(), "b still relies on it");
        // a dead holder's sweep does not take it from a live one either
        let c = Journal::new(state.path());
        c.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        drop(c);
        sweep(state.path());
        assert!(ph.exists(), "b still relies on it");
        b.release_placeholder(&ph).unwrap();
        assert!(!ph.exists());
    }

    #[test]
    fn only_what_still_looks_created_is_removed() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let j = Journal::new(state.path());
        // a placeholder the command wrote into (not empty any more) stays
        let ph = ws.path().join(".zot");
        j.acquire_placeholder(Kind::PlaceholderFile, &ph).unwrap();
        fs::set_permissions(&ph, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        fs::write(&ph, "user data").unwrap();
        // a temp dir replaced by a symlink stays (and its target too)
        let target = ws.path().join("target");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("precious"), "x").unwrap();
        let t = ws.path().join("zot-agent-z");
        j.add(Kind::TempDir, &t).unwrap();
        std::os::unix::fs::symlink(&target, &t).unwrap();
        drop(j);
        let s = sweep(state.path());
        assert!(s.removed.is_empty(), "{s:?}");
        assert_eq!(fs::read_to_string(&ph).unwrap(), "user data");
        assert!(target.join("precious").exists());
        // an existing real file is never adopted as a placeholder
        let j = Journal::new(state.path());
        let e = j
            .acquire_placeholder(Kind::PlaceholderFile, &ph)
            .unwrap_err();
        assert!(e.to_string().contains("creating placeholder"), "{e}");
        drop(j);
        assert!(journals(state.path()).is_empty());
    }

    #[test]
    fn journaled_temp_dirs() {
        let state = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let j = Journal::new(state.path());
        let a = j.temp_dir(tmp.path(), "zot-agent-").unwrap();
        let m = fs::metadata(a.path()).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777,
            0o700
        );
        fs::write(a.path().join("f"), "x").unwrap();
        let kept = a.path().to_path_buf();
        let b = j.temp_dir(tmp.path(), "zot-github-").unwrap();
        assert_ne!(a.path(), b.path());
        drop(a);
        assert!(!kept.exists());
        // a dead process's temp dir is swept
        let left = b.path().to_path_buf();
        // As if the process died: its journal closes, the guard never runs.
        // SAFETY: the journal is moved out once and `b` is forgotten, so it
        // is dropped exactly once.
        let journal = unsafe { std::ptr::read(&b.journal) };
        std::mem::forget(b);
        drop(journal);
        drop(j);
        assert!(left.exists());
        assert_eq!(
            sweep(state.path()).removed,
            vec![(Kind::TempDir, left.clone())]
        );
        assert!(!left.exists());
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let j = Journal::new(state.path());
        let t = ws.path().join("zot-agent-t");
        j.add(Kind::TempDir, &t).unwrap();
        fs::create_dir(&t).unwrap();
        let jp = j.path().unwrap();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&jp).unwrap();
        f.write_all(b"{\"op\":\"remove\",\"pa").unwrap();
        let s = sweep(state.path());
        assert_eq!(s.removed, vec![(Kind::TempDir, t.clone())]);
    }
}
