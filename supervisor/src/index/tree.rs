//! The directory tree below the writable roots: one node per directory
//! (device, inode, mtime, ctime, child directories, what git finds in it),
//! built by one walk and brought up to date by [`Tree::validate`], which
//! `statx`es every known directory and re-reads only those that changed.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// Directories a scan reads at most (then it stops and says so).
pub const SCAN_BUDGET: usize = 250_000;
/// Deeper than this the scan stops (one open directory per level).
pub const MAX_DEPTH: usize = 200;

/// A file's identity: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Id {
    pub dev: u64,
    pub ino: u64,
}

/// A timestamp as the kernel stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Stamp {
    pub sec: i64,
    pub nsec: u32,
}

impl Stamp {
    /// The coarse real-time clock: the one file timestamps are taken from,
    /// so that anything changed after this call has a timestamp not older
    /// than it.
    pub fn now_coarse() -> Stamp {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        Stamp {
            sec: ts.tv_sec,
            nsec: ts.tv_nsec as u32,
        }
    }
}

/// What `statx` says of one directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirStat {
    pub id: Id,
    pub mtime: Stamp,
    pub ctime: Stamp,
}

/// What git's discovery finds in a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A `.git` directory (its identity).
    DotGitDir(Id),
    /// A `.git` file (`gitdir:` pointer) or other non-directory `.git`.
    DotGitFile(Id),
    /// The directory is a bare repository (`HEAD`, `objects`, `refs`).
    Bare,
}

/// One directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: OsString,
    pub parent: u32,
    pub stat: DirStat,
    pub children: Vec<u32>,
    pub mark: Option<Mark>,
    /// The directory could not be listed: what is inside is unknown.
    pub unlistable: bool,
    /// A removed node (its slot is reused by nothing; skipped everywhere).
    pub dead: bool,
}

/// A repository found in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repo {
    /// The `.git` entry, or the bare repository's directory.
    pub dot_git: PathBuf,
    /// The identity of that entry.
    pub id: Id,
    /// True for a `.git` directory or a bare repository, false for a
    /// `gitdir:` file.
    pub is_dir: bool,
    pub bare: bool,
}

/// The tree below a set of roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// The roots (none inside another), each the first nodes in order.
    pub roots: Vec<PathBuf>,
    pub nodes: Vec<Node>,
    /// The coarse clock when the last walk or validation began: a
    /// directory with an mtime not older than this may have changed
    /// within the same clock tick, unseen (it is always re-read).
    pub taken: Stamp,
    /// False when the budget or the depth limit cut the walk short.
    pub complete: bool,
    /// Nodes that were given a mark or found unlistable (maybe since
    /// cleared or removed): [`Tree::repos`] and [`Tree::unlistable`] look
    /// only at these, not at every directory.
    pub flagged: Vec<u32>,
}

/// What [`Tree::validate`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validation {
    /// Directories `statx`ed.
    pub checked: usize,
    /// Directories re-read (changed, new, or racily recent).
    pub reread: usize,
    /// Directories appeared or went, or what git finds changed: the
    /// persisted copy is stale (else re-reading the same few directories
    /// next time costs less than writing it).
    pub structure_changed: bool,
}

impl Validation {
    /// Whether writing the persisted copy pays: the structure changed, or
    /// many directories were re-read (each would be again next time).
    pub fn worth_saving(&self) -> bool {
        self.structure_changed || self.reread > 64
    }
}

pub const NO_PARENT: u32 = u32::MAX;

/// `statx` of a path without following a final symlink. `None` when it
/// is missing or not a directory.
pub fn stat_dir(path: &CString) -> Option<DirStat> {
    stat_at(libc::AT_FDCWD, path, libc::AT_SYMLINK_NOFOLLOW)
        .filter(|(d, _)| *d)
        .map(|(_, s)| s)
}

fn stat_at(fd: i32, path: &CString, flags: i32) -> Option<(bool, DirStat)> {
    // SAFETY: zeroed is a valid statx buffer.
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    let r = unsafe {
        libc::statx(
            fd,
            path.as_ptr(),
            flags | libc::AT_STATX_DONT_SYNC,
            libc::STATX_TYPE | libc::STATX_INO | libc::STATX_MTIME | libc::STATX_CTIME,
            &mut sx,
        )
    };
    if r != 0 {
        return None;
    }
    let is_dir = u32::from(sx.stx_mode) & libc::S_IFMT == libc::S_IFDIR;
    Some((
        is_dir,
        DirStat {
            id: Id {
                dev: libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
                ino: sx.stx_ino,
            },
            mtime: Stamp {
                sec: sx.stx_mtime.tv_sec,
                nsec: sx.stx_mtime.tv_nsec,
            },
            ctime: Stamp {
                sec: sx.stx_ctime.tv_sec,
                nsec: sx.stx_ctime.tv_nsec,
            },
        },
    ))
}

fn fstat(fd: i32) -> Option<DirStat> {
    stat_at(fd, &CString::default(), libc::AT_EMPTY_PATH).map(|(_, s)| s)
}

fn entry_id(dir: &Dir, name: &[u8]) -> Id {
    let c = CString::new(name).unwrap_or_default();
    stat_at(dir.as_fd().as_raw_fd(), &c, libc::AT_SYMLINK_NOFOLLOW)
        .map(|(_, s)| s.id)
        .unwrap_or(Id { dev: 0, ino: 0 })
}

/// The entries of one directory that matter.
struct Listing {
    subdirs: Vec<Vec<u8>>,
    mark: Option<Mark>,
}

fn list(dir: &mut Dir, path: &Path) -> Listing {
    let mut subdirs = Vec::new();
    let mut dot_git = None;
    let (mut head, mut objects, mut refs) = (false, false, false);
    let mut names: Vec<(Vec<u8>, Option<Type>)> = Vec::new();
    for entry in dir.iter().flatten() {
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        names.push((bytes.to_vec(), entry.file_type()));
    }
    for (bytes, t) in names {
        let is_dir = match t {
            Some(Type::Directory) => true,
            Some(_) => false,
            None => std::fs::symlink_metadata(path.join(OsStr::from_bytes(&bytes)))
                .is_ok_and(|m| m.is_dir()),
        };
        match bytes.as_slice() {
            b".git" => {
                let id = entry_id(dir, &bytes);
                dot_git = Some(if is_dir {
                    Mark::DotGitDir(id)
                } else {
                    Mark::DotGitFile(id)
                });
                continue;
            }
            b"HEAD" => head = true,
            b"objects" if is_dir => objects = true,
            b"refs" if is_dir => refs = true,
            _ => {}
        }
        if is_dir {
            subdirs.push(bytes);
        }
    }
    // git's discovery: a directory holding HEAD, objects/ and refs/ is a
    // (bare) repository; its hooks run on push. A `.git` inside it wins.
    let mark = dot_git.or((head && objects && refs).then_some(Mark::Bare));
    if mark == Some(Mark::Bare) {
        subdirs.clear(); // git's own files: not walked, like a `.git`
    }
    Listing { subdirs, mark }
}

struct Walk<'a> {
    tree: &'a mut Tree,
    budget: usize,
    read: usize,
    checked: usize,
    reread: usize,
    structure_changed: bool,
    /// A stat not older than this is re-read (racy timestamps).
    racy_from: Stamp,
    /// Known children of a re-read directory keep their subtree when their
    /// identity is unchanged (a session's event-driven refresh: changes
    /// below them come as events of their own).
    shallow: bool,
    /// Stats taken beforehand (in parallel) by node: `Some(None)` means
    /// gone or not a directory.
    pre: Vec<Option<Option<DirStat>>>,
}

impl Walk<'_> {
    /// Read the directory at `path` into node `idx` (already holding its
    /// name and parent), then walk its subdirectories: known ones are
    /// validated, new ones read.
    fn fill(&mut self, idx: u32, path: &mut Vec<u8>, depth: usize) {
        if self.read >= self.budget {
            self.tree.complete = false;
            return;
        }
        let p = Path::new(OsStr::from_bytes(path)).to_path_buf();
        let mut dir = match Dir::open(
            p.as_path(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(d) => d,
            Err(e) => {
                self.structure_changed = true;
                let stat = stat_dir(&CString::new(path.clone()).unwrap_or_default());
                let children = std::mem::take(&mut self.tree.nodes[idx as usize].children);
                for c in children {
                    self.tree.kill(c);
                }
                let n = &mut self.tree.nodes[idx as usize];
                n.mark = None;
                match stat {
                    // Gone, or replaced by a non-directory: nothing there.
                    None => n.dead = true,
                    Some(s) => {
                        n.stat = s;
                        // Any other failure (EACCES: a directory that can
                        // be written and entered but not listed) hides
                        // what is inside: the caller fails closed.
                        n.unlistable = !matches!(e, Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP);
                        n.dead = !n.unlistable;
                        if n.unlistable {
                            self.tree.flagged.push(idx);
                        }
                    }
                }
                return;
            }
        };
        self.read += 1;
        let stat = fstat(dir.as_fd().as_raw_fd()).unwrap_or_default();
        let listing = list(&mut dir, &p);
        drop(dir);
        let old: HashMap<OsString, u32> = self.tree.nodes[idx as usize]
            .children
            .iter()
            .map(|c| (self.tree.nodes[*c as usize].name.clone(), *c))
            .collect();
        {
            let n = &mut self.tree.nodes[idx as usize];
            n.stat = stat;
            if n.mark != listing.mark || n.unlistable {
                self.structure_changed = true;
            }
            let flag = listing.mark.is_some() && n.mark.is_none();
            n.mark = listing.mark;
            n.unlistable = false;
            if flag {
                self.tree.flagged.push(idx);
            }
            n.children.clear();
        }
        if depth >= MAX_DEPTH && !listing.subdirs.is_empty() {
            self.tree.complete = false;
            for c in old.values() {
                self.tree.kill(*c);
            }
            return;
        }
        let mut children = Vec::with_capacity(listing.subdirs.len());
        let mut kept = std::collections::HashSet::new();
        for name in listing.subdirs {
            let os = OsString::from_vec(name);
            let len = path.len();
            path.push(b'/');
            path.extend_from_slice(os.as_bytes());
            match old.get(&os) {
                Some(&c) => {
                    kept.insert(c);
                    children.push(c);
                    if self.shallow {
                        let now = stat_dir(&CString::new(path.clone()).unwrap_or_default());
                        let n = &self.tree.nodes[c as usize];
                        if now.map(|s| s.id) != Some(n.stat.id) || n.unlistable {
                            self.fill(c, path, depth + 1);
                        }
                    } else {
                        self.check(c, path, depth + 1);
                    }
                }
                None => {
                    self.structure_changed = true;
                    let c = self.tree.push(os, idx);
                    children.push(c);
                    self.fill(c, path, depth + 1);
                }
            }
            path.truncate(len);
        }
        for c in old.values() {
            if !kept.contains(c) {
                self.structure_changed = true;
                self.tree.kill(*c);
            }
        }
        children.retain(|c| !self.tree.nodes[*c as usize].dead);
        self.tree.nodes[idx as usize].children = children;
    }

    /// Validate a known node with one `statx`: re-read it when its
    /// identity or timestamps changed (or are racily recent), else only
    /// validate its known children.
    fn check(&mut self, idx: u32, path: &mut Vec<u8>, depth: usize) {
        self.checked += 1;
        let now = match self.pre.get(idx as usize) {
            Some(Some(s)) => *s,
            _ => stat_dir(&CString::new(path.clone()).unwrap_or_default()),
        };
        let n = &self.tree.nodes[idx as usize];
        let Some(s) = now else {
            // Gone, or no longer a directory (its parent changed too).
            self.structure_changed = true;
            self.tree.kill(idx);
            return;
        };
        let same = s == n.stat && s.mtime < self.racy_from && s.ctime < self.racy_from;
        if !same || n.unlistable {
            self.reread += 1;
            self.fill(idx, path, depth);
            return;
        }
        let children = self.tree.nodes[idx as usize].children.clone();
        for &ch in &children {
            let len = path.len();
            path.push(b'/');
            path.extend_from_slice(self.tree.nodes[ch as usize].name.as_bytes());
            self.check(ch, path, depth + 1);
            path.truncate(len);
        }
        if children.iter().any(|c| self.tree.nodes[*c as usize].dead) {
            let nodes = &self.tree.nodes;
            let alive: Vec<u32> = children
                .into_iter()
                .filter(|c| !nodes[*c as usize].dead)
                .collect();
            self.tree.nodes[idx as usize].children = alive;
        }
    }
}

/// Known directories from which [`prestat`] uses threads.
const PARALLEL_FROM: usize = 2048;

/// `statx` of every live known directory, in parallel (one thread per
/// core, at most 4): the subtrees are split among the threads; below each
/// subtree's top a directory is named relative to its parent's `O_PATH`
/// descriptor (one lookup per name instead of a walk of the full path).
fn prestat(tree: &Tree) -> Vec<Option<Option<DirStat>>> {
    let mut out: Vec<Option<Option<DirStat>>> = vec![None; tree.nodes.len()];
    // Tasks: subtrees, split breadth first until there are enough.
    // A small tree is quicker alone than the threads cost to start.
    let threads = if tree.nodes.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    };
    let mut tasks: Vec<u32> = (0..tree.roots.len() as u32)
        .filter(|r| tree.nodes[*r as usize].stat != DirStat::default())
        .collect();
    let mut heads: Vec<u32> = Vec::new();
    while !tasks.is_empty() && tasks.len() < threads * 16 {
        let mut next = Vec::new();
        for t in tasks {
            let n = &tree.nodes[t as usize];
            if n.children.is_empty() || n.dead || n.unlistable {
                next.push(t);
                continue;
            }
            heads.push(t);
            next.extend(
                n.children
                    .iter()
                    .copied()
                    .filter(|c| !tree.nodes[*c as usize].dead),
            );
        }
        if next
            .iter()
            .all(|t| tree.nodes[*t as usize].children.is_empty())
        {
            tasks = next;
            break;
        }
        tasks = next;
    }
    // The split points themselves: by full path.
    for h in &heads {
        let c = CString::new(tree.path(*h).into_os_string().into_vec()).unwrap_or_default();
        out[*h as usize] = Some(stat_dir(&c));
    }
    let chunks: Vec<Vec<u32>> = {
        let mut v: Vec<Vec<u32>> = vec![Vec::new(); threads.max(1)];
        for (i, t) in tasks.into_iter().enumerate() {
            v[i % threads.max(1)].push(t);
        }
        v
    };
    let results: Vec<Vec<(u32, Option<DirStat>)>> = if threads <= 1 {
        chunks.iter().map(|c| stat_tasks(tree, c)).collect()
    } else {
        std::thread::scope(|sc| {
            let hs: Vec<_> = chunks
                .iter()
                .map(|c| sc.spawn(move || stat_tasks(tree, c)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    for r in results {
        for (i, s) in r {
            out[i as usize] = Some(s);
        }
    }
    out
}

fn stat_tasks(tree: &Tree, tasks: &[u32]) -> Vec<(u32, Option<DirStat>)> {
    let mut out = Vec::new();
    for &t in tasks {
        let c = CString::new(tree.path(t).into_os_string().into_vec()).unwrap_or_default();
        stat_below(tree, t, libc::AT_FDCWD, &c, &mut out);
    }
    out
}

/// Stat node `idx` (named `name` relative to `dirfd`), then its known
/// children relative to it.
fn stat_below(
    tree: &Tree,
    idx: u32,
    dirfd: i32,
    name: &CString,
    out: &mut Vec<(u32, Option<DirStat>)>,
) {
    let n = &tree.nodes[idx as usize];
    if n.children.is_empty() || n.unlistable {
        out.push((
            idx,
            stat_at(dirfd, name, libc::AT_SYMLINK_NOFOLLOW)
                .filter(|(d, _)| *d)
                .map(|(_, s)| s),
        ));
        return;
    }
    // SAFETY: a valid C string; the descriptor is closed below.
    let fd = unsafe {
        libc::openat(
            dirfd,
            name.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        out.push((idx, None)); // gone, or not a directory any more
        return;
    }
    // The directory opened is the one whose children are named below.
    let s = fstat(fd);
    out.push((idx, s));
    if s.is_some_and(|s| s.id == n.stat.id) {
        for &c in &n.children {
            let cn = &tree.nodes[c as usize];
            if cn.dead {
                continue;
            }
            let cname = CString::new(cn.name.as_bytes()).unwrap_or_default();
            stat_below(tree, c, fd, &cname, out);
        }
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
}

/// Keep only the roots that are not inside another root.
pub fn top_roots(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = roots.to_vec();
    roots.sort();
    roots.dedup();
    roots
        .iter()
        .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
        .cloned()
        .collect()
}

impl Tree {
    /// An empty tree of `roots` (nothing read yet).
    pub fn empty(roots: &[PathBuf]) -> Tree {
        let roots = top_roots(roots);
        let nodes = roots
            .iter()
            .map(|r| Node {
                name: r.as_os_str().to_owned(),
                parent: NO_PARENT,
                stat: DirStat::default(),
                children: Vec::new(),
                mark: None,
                unlistable: false,
                dead: false,
            })
            .collect();
        Tree {
            roots,
            nodes,
            taken: Stamp::default(),
            complete: true,
            flagged: Vec::new(),
        }
    }

    /// Walk every directory below `roots` (at most `budget` read).
    pub fn scan(roots: &[PathBuf], budget: usize) -> Tree {
        let mut t = Tree::empty(roots);
        t.validate(budget);
        t
    }

    fn push(&mut self, name: OsString, parent: u32) -> u32 {
        self.nodes.push(Node {
            name,
            parent,
            stat: DirStat::default(),
            children: Vec::new(),
            mark: None,
            unlistable: false,
            dead: false,
        });
        (self.nodes.len() - 1) as u32
    }

    /// Mark a node and everything below it removed.
    pub fn kill(&mut self, idx: u32) {
        let mut stack = vec![idx];
        while let Some(i) = stack.pop() {
            let n = &mut self.nodes[i as usize];
            n.dead = true;
            stack.extend(std::mem::take(&mut n.children));
        }
    }

    /// Bring the tree up to date: one `statx` per known directory; changed,
    /// new and racily recent directories are read (at most `budget` in
    /// all). A root that was never read is read.
    pub fn validate(&mut self, budget: usize) -> Validation {
        let v = self.validate_keeping_indexes(budget);
        if self.nodes.iter().filter(|n| n.dead).count() > self.nodes.len() / 2 + 64 {
            self.compact();
        }
        v
    }

    /// [`Tree::validate`] without compacting: node indexes stay valid.
    pub fn validate_keeping_indexes(&mut self, budget: usize) -> Validation {
        let racy_from = self.taken;
        let taken = Stamp::now_coarse();
        self.complete = true;
        let mut w = Walk {
            tree: self,
            budget,
            read: 0,
            checked: 0,
            reread: 0,
            structure_changed: false,
            racy_from,
            shallow: false,
            pre: Vec::new(),
        };
        w.pre = prestat(w.tree);
        for r in 0..w.tree.roots.len() {
            let mut path = w.tree.roots[r].as_os_str().as_bytes().to_vec();
            w.tree.nodes[r].dead = false;
            if w.tree.nodes[r].stat == DirStat::default() {
                w.fill(r as u32, &mut path, 0);
            } else {
                w.check(r as u32, &mut path, 0);
            }
        }
        let v = Validation {
            checked: w.checked,
            reread: w.reread,
            structure_changed: w.structure_changed,
        };
        self.taken = taken;
        v
    }

    /// Re-read one directory (a session's inotify event named it): its
    /// entries and mark; new or replaced subdirectories are walked, known
    /// ones keep their subtree. Returns the nodes added (to be watched).
    pub fn refresh(&mut self, idx: u32, budget: usize) -> std::ops::Range<u32> {
        let first = self.nodes.len() as u32;
        if self.nodes[idx as usize].dead {
            return first..first;
        }
        let depth = {
            let mut d = 0;
            let mut i = self.nodes[idx as usize].parent;
            while i != NO_PARENT {
                d += 1;
                i = self.nodes[i as usize].parent;
            }
            d
        };
        let mut path = self.path(idx).into_os_string().into_vec();
        let mut w = Walk {
            tree: self,
            budget,
            read: 0,
            checked: 0,
            reread: 0,
            structure_changed: false,
            racy_from: Stamp::default(),
            shallow: true,
            pre: Vec::new(),
        };
        w.fill(idx, &mut path, depth);
        first..self.nodes.len() as u32
    }

    /// The path of a node.
    pub fn path(&self, idx: u32) -> PathBuf {
        let mut parts = Vec::new();
        let mut i = idx;
        while i != NO_PARENT {
            let n = &self.nodes[i as usize];
            parts.push(n.name.as_os_str());
            i = n.parent;
        }
        let mut p = PathBuf::new();
        for part in parts.into_iter().rev() {
            p.push(part);
        }
        p
    }

    /// Live nodes in depth-first order from the roots: `(index, depth)`.
    pub fn walk_order(&self) -> Vec<(u32, usize)> {
        // The roots first (they keep indexes 0..roots), then each one's
        // directories depth first.
        let mut out: Vec<(u32, usize)> = (0..self.roots.len() as u32).map(|r| (r, 0)).collect();
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for r in (0..self.roots.len()).rev() {
            for c in self.nodes[r].children.iter().rev() {
                stack.push((*c, 1));
            }
        }
        while let Some((i, d)) = stack.pop() {
            let n = &self.nodes[i as usize];
            if n.dead {
                continue;
            }
            out.push((i, d));
            for c in n.children.iter().rev() {
                stack.push((*c, d + 1));
            }
        }
        out
    }

    /// Drop removed nodes (indexes change).
    pub fn compact(&mut self) {
        let order = self.walk_order();
        let mut map = vec![NO_PARENT; self.nodes.len()];
        for (new, (old, _)) in order.iter().enumerate() {
            map[*old as usize] = new as u32;
        }
        let mut nodes = Vec::with_capacity(order.len());
        for (old, _) in &order {
            let mut n = self.nodes[*old as usize].clone();
            if n.parent != NO_PARENT {
                n.parent = map[n.parent as usize];
            }
            n.children = n
                .children
                .iter()
                .map(|c| map[*c as usize])
                .filter(|c| *c != NO_PARENT)
                .collect();
            nodes.push(n);
        }
        self.nodes = nodes;
        self.reflag();
    }

    /// Rebuild [`Tree::flagged`] from the nodes.
    pub fn reflag(&mut self) {
        self.flagged = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.dead && (n.mark.is_some() || n.unlistable))
            .map(|(i, _)| i as u32)
            .collect();
    }

    fn flagged_live(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.flagged.clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Every repository in the tree.
    pub fn repos(&self) -> Vec<Repo> {
        let mut out = Vec::new();
        for i in self.flagged_live() {
            let n = &self.nodes[i as usize];
            if n.dead {
                continue;
            }
            let Some(m) = n.mark else { continue };
            let dir = self.path(i);
            out.push(match m {
                Mark::DotGitDir(id) => Repo {
                    dot_git: dir.join(".git"),
                    id,
                    is_dir: true,
                    bare: false,
                },
                Mark::DotGitFile(id) => Repo {
                    dot_git: dir.join(".git"),
                    id,
                    is_dir: false,
                    bare: false,
                },
                Mark::Bare => Repo {
                    dot_git: dir,
                    id: n.stat.id,
                    is_dir: true,
                    bare: true,
                },
            });
        }
        out.sort_by(|a, b| a.dot_git.cmp(&b.dot_git));
        out
    }

    /// Directories that could not be listed.
    pub fn unlistable(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self
            .flagged_live()
            .into_iter()
            .filter(|i| self.nodes[*i as usize].unlistable && !self.nodes[*i as usize].dead)
            .map(|i| self.path(i))
            .collect();
        v.sort();
        v
    }

    /// Live directories.
    pub fn dirs(&self) -> usize {
        self.nodes.iter().filter(|n| !n.dead).count()
    }

    /// The node of a path inside the tree, if known.
    pub fn find(&self, path: &Path) -> Option<u32> {
        let (r, root) = self
            .roots
            .iter()
            .enumerate()
            .find(|(_, r)| path.starts_with(r))?;
        let rest = path.strip_prefix(root).ok()?;
        let mut i = r as u32;
        for comp in rest.components() {
            let name = comp.as_os_str();
            i = *self.nodes[i as usize].children.iter().find(|c| {
                self.nodes[**c as usize].name == name && !self.nodes[**c as usize].dead
            })?;
        }
        Some(i)
    }
}

/// Repositories of `after` that `before` did not have at the same path
/// with the same identity: created, moved into place, or replaced (a
/// renamed parent and a new `.git` at the old path is a new repository).
pub fn new_repos(before: &[Repo], after: &[Repo]) -> Vec<Repo> {
    let known: std::collections::HashSet<(&Path, Id)> =
        before.iter().map(|r| (r.dot_git.as_path(), r.id)).collect();
    after
        .iter()
        .filter(|r| !known.contains(&(r.dot_git.as_path(), r.id)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = fs::canonicalize(t.path()).unwrap();
        (t, r)
    }

    fn paths(t: &Tree) -> Vec<PathBuf> {
        t.repos().into_iter().map(|r| r.dot_git).collect()
    }

    #[test]
    fn finds_repositories_at_any_depth_and_bare_ones() {
        let (_t, r) = root();
        fs::create_dir_all(r.join(".git")).unwrap();
        fs::create_dir_all(r.join("a/b/c/d/e/.git/hooks")).unwrap();
        fs::create_dir_all(r.join("sub")).unwrap();
        fs::write(r.join("sub/.git"), "gitdir: ../.git\n").unwrap();
        let bare = r.join("remotes/x.git");
        fs::create_dir_all(bare.join("objects")).unwrap();
        fs::create_dir_all(bare.join("refs")).unwrap();
        fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        // HEAD + objects without refs: not a repository
        fs::create_dir_all(r.join("almost/objects")).unwrap();
        fs::write(r.join("almost/HEAD"), "x").unwrap();
        let t = Tree::scan(std::slice::from_ref(&r), SCAN_BUDGET);
        assert!(t.complete);
        assert_eq!(
            paths(&t),
            vec![
                r.join(".git"),
                r.join("a/b/c/d/e/.git"),
                bare.clone(),
                r.join("sub/.git")
            ]
        );
        let b = t.repos().into_iter().find(|x| x.bare).unwrap();
        assert_eq!(b.dot_git, bare);
    }

    #[test]
    fn validation_rereads_only_what_changed() {
        let (_t, r) = root();
        for i in 0..30 {
            fs::create_dir_all(r.join(format!("d{i}/e/f"))).unwrap();
        }
        let mut t = Tree::scan(std::slice::from_ref(&r), SCAN_BUDGET);
        // Older than the scan's clock: not racy any more.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let v = t.validate(SCAN_BUDGET);
        // The first validation re-reads what the scan saw in its own tick.
        assert_eq!(v.checked, 91);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let v = t.validate(SCAN_BUDGET);
        assert_eq!(
            (v.checked, v.reread),
            (91, 0),
            "nothing changed: nothing read"
        );
        fs::create_dir_all(r.join("d7/e/f/new/.git")).unwrap();
        let v = t.validate(SCAN_BUDGET);
        assert!(v.reread >= 1 && v.reread <= 3, "{v:?}");
        assert_eq!(paths(&t), vec![r.join("d7/e/f/new/.git")]);
    }

    #[test]
    fn identity_not_path() {
        let (_t, r) = root();
        fs::create_dir_all(r.join("vendor/lib/.git")).unwrap();
        let mut t = Tree::scan(std::slice::from_ref(&r), SCAN_BUDGET);
        let before = t.repos();
        fs::rename(r.join("vendor/lib"), r.join("vendor/lib.orig")).unwrap();
        fs::create_dir_all(r.join("vendor/lib/.git")).unwrap();
        t.validate(SCAN_BUDGET);
        let new = new_repos(&before, &t.repos());
        let new: Vec<&Path> = new.iter().map(|r| r.dot_git.as_path()).collect();
        assert!(
            new.contains(&r.join("vendor/lib/.git").as_path()),
            "{new:?}"
        );
    }

    #[test]
    fn racy_directories_are_reread() {
        let (_t, r) = root();
        fs::create_dir_all(r.join("a")).unwrap();
        let mut t = Tree::scan(std::slice::from_ref(&r), SCAN_BUDGET);
        // Same clock tick as the scan, maybe: must still be seen.
        fs::create_dir_all(r.join("a/.git")).unwrap();
        t.validate(SCAN_BUDGET);
        assert_eq!(paths(&t), vec![r.join("a/.git")]);
    }

    #[test]
    fn the_budget_and_depth_are_reported() {
        let (_t, r) = root();
        for i in 0..20 {
            fs::create_dir_all(r.join(format!("d{i}/e"))).unwrap();
        }
        let t = Tree::scan(std::slice::from_ref(&r), 5);
        assert!(!t.complete);
        let mut deep = r.join("deep");
        for i in 0..(MAX_DEPTH + 2) {
            deep.push(format!("{}", i % 10));
        }
        fs::create_dir_all(&deep).unwrap();
        let t = Tree::scan(&[r.join("deep")], SCAN_BUDGET);
        assert!(!t.complete);
    }

    #[test]
    fn unlistable_directories_are_reported() {
        use std::os::unix::fs::PermissionsExt;
        let (_t, r) = root();
        let hidden = r.join("wx");
        fs::create_dir_all(hidden.join("repo/.git/hooks")).unwrap();
        fs::set_permissions(&hidden, fs::Permissions::from_mode(0o333)).unwrap();
        // Root reads any directory: then nothing is hidden.
        let listable = fs::read_dir(&hidden).is_ok();
        let t = Tree::scan(std::slice::from_ref(&r), SCAN_BUDGET);
        fs::set_permissions(&hidden, fs::Permissions::from_mode(0o755)).unwrap();
        if listable {
            assert_eq!(paths(&t), vec![hidden.join("repo/.git")]);
        } else {
            assert_eq!(t.unlistable(), vec![hidden.clone()]);
            assert!(paths(&t).is_empty());
        }
    }
}
