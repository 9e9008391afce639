//! Race-free file access beneath permission scopes.
//!
//! A path is matched to a scope root lexically (after making it absolute and
//! resolving `.`/`..` textually), then opened with
//! `openat2(root_fd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the
//! kernel resolves every component beneath the root, so a symlink (or a
//! `..`, or a rename racing with us) can never lead outside it. There is no
//! check-then-open window.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Make `p` absolute against `base` and resolve `.` and `..` textually.
/// Returns `None` when `..` climbs above `/`.
pub fn normalize(base: &Path, p: &Path) -> Option<PathBuf> {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// A path matched to a scope: the root and the path relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scoped {
    pub root: PathBuf,
    pub rel: PathBuf,
    pub full: PathBuf,
}

/// Find the deepest scope root containing `path` (absolute, normalized).
/// When no root matches lexically, the path's existing prefix is
/// canonicalized and matched again (the open itself stays beneath the root).
pub fn locate(roots: &[PathBuf], path: &Path) -> Option<Scoped> {
    let try_match = |p: &Path| {
        roots
            .iter()
            .filter(|r| p.starts_with(r))
            .max_by_key(|r| r.components().count())
            .map(|r| Scoped {
                root: r.clone(),
                rel: p.strip_prefix(r).unwrap().to_path_buf(),
                full: p.to_path_buf(),
            })
    };
    try_match(path).or_else(|| try_match(&crate::perms::canonical_prefix(path)))
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

fn openat2(dirfd: RawFd, rel: &Path, flags: i32, mode: u32, resolve: u64) -> io::Result<OwnedFd> {
    let path = cstr(if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    })?;
    // SAFETY: open_how is plain data; all-zero is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 {
        mode as u64
    } else {
        0
    };
    how.resolve = resolve;
    // SAFETY: valid pointers for the duration of the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

const BENEATH: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

// ------------------------------------------------------------ zot's own

/// Filesystems that are the kernel's view of processes and devices: in
/// zot's process, `/proc/self`, `/proc/thread-self`, `/proc/<zot's pid>`
/// (and `/dev/fd`, which leads there) are zot itself, its memory and its
/// environment (provider keys). The file tools never open a file on them,
/// whatever the path that led there.
const PSEUDO_FS: &[i64] = &[
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7363_6673, // securityfs
    0x2762_4ba0, // cgroup (v1)
    0x6367_7270, // cgroup2
    0xcafe_4a11, // bpf
    0x7472_6163, // tracefs
    0x6265_6570, // configfs
    0xde5e_81e4, // efivarfs
];

fn pseudo_fs(fd: RawFd) -> bool {
    // SAFETY: fstatfs into a zeroed struct on a valid fd.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(fd, &mut st) } < 0 {
        return true; // cannot tell: refused
    }
    PSEUDO_FS.contains(&(st.f_type as i64))
}

/// zot's own files by device and inode, whatever their name: a hard link
/// made elsewhere (in a workspace) to a session, a receipt or a key is
/// still zot's file. Built from zot's directories (see
/// [`zot_supervisor::creds::zot_dirs`]) and rebuilt when a hard-linked
/// file is not found in a set older than a second (zot adds files as it
/// runs).
pub struct OwnFiles {
    built: std::time::Instant,
    devs: Vec<u64>,
    files: std::collections::HashSet<(u64, u64)>,
}

impl OwnFiles {
    /// The files under `dirs` now (at most 200,000 entries).
    pub fn scan(dirs: &[PathBuf]) -> OwnFiles {
        use std::os::unix::fs::MetadataExt;
        let mut own = OwnFiles {
            built: std::time::Instant::now(),
            devs: Vec::new(),
            files: Default::default(),
        };
        let mut budget = 200_000usize;
        let mut stack: Vec<PathBuf> = Vec::new();
        for d in dirs {
            if let Ok(m) = std::fs::symlink_metadata(d) {
                if !own.devs.contains(&m.dev()) {
                    own.devs.push(m.dev());
                }
                stack.push(d.clone());
            }
        }
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                budget = budget.saturating_sub(1);
                if budget == 0 {
                    return own;
                }
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    if !own.devs.contains(&m.dev()) {
                        own.devs.push(m.dev());
                    }
                    stack.push(e.path());
                } else if m.is_file() {
                    own.files.insert((m.dev(), m.ino()));
                }
            }
        }
        own
    }

    /// Whether the file of `st` is one of these.
    pub fn contains(&self, st: &libc::stat) -> bool {
        self.files.contains(&(st.st_dev, st.st_ino))
    }
}

/// zot's directories by the rules zot follows (its state, configuration,
/// data and caches, every candidate), from this process's environment.
pub fn zot_dirs() -> Vec<PathBuf> {
    zot_supervisor::creds::zot_dirs(|k| std::env::var_os(k))
        .into_iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect()
}

/// zot's directories other than its state directory (the tools' own
/// rules cover that one, with the agent's data inside it), refreshed each
/// second.
fn other_zot_dirs() -> Vec<PathBuf> {
    use std::sync::Mutex;
    static DIRS: Mutex<Option<(std::time::Instant, Vec<PathBuf>)>> = Mutex::new(None);
    let mut g = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, v)) = g.as_ref() {
        if t.elapsed() < std::time::Duration::from_secs(1) {
            return v.clone();
        }
    }
    let state = zot_supervisor::journal::state_dir_from(|k| std::env::var_os(k))
        .ok()
        .map(|s| std::fs::canonicalize(&s).unwrap_or(s));
    let v: Vec<PathBuf> = zot_dirs()
        .into_iter()
        .filter(|d| {
            state
                .as_ref()
                .is_none_or(|s| !d.starts_with(s) && !s.starts_with(d))
        })
        .collect();
    *g = Some((std::time::Instant::now(), v.clone()));
    v
}

/// Whether `st` is one of zot's own files reached by another name: only a
/// file with more than one link can be (one name is zot's).
fn own_file(st: &libc::stat) -> bool {
    use std::sync::Mutex;
    static OWN: Mutex<Option<OwnFiles>> = Mutex::new(None);
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_nlink < 2 {
        return false;
    }
    let mut g = OWN.lock().unwrap_or_else(|e| e.into_inner());
    let fresh = |g: &mut Option<OwnFiles>| {
        let o = OwnFiles::scan(&zot_dirs());
        let hit = o.contains(st);
        *g = Some(o);
        hit
    };
    match g.as_ref() {
        None => fresh(&mut g),
        Some(o) if o.contains(st) => true,
        Some(o) if !o.devs.contains(&st.st_dev) => false,
        Some(o) if o.built.elapsed() < std::time::Duration::from_secs(1) => false,
        Some(_) => fresh(&mut g),
    }
}

/// Why the file tools refuse the open file `fd`, if they do: a file of
/// the kernel's process and device views (`/proc`, `/sys`, ...), or one of
/// zot's own files by device and inode (a hard link to it).
pub fn refusal(fd: RawFd) -> Option<&'static str> {
    if pseudo_fs(fd) {
        return Some("it is on a kernel filesystem (/proc, /sys): zot's own process and the host's are not the tools' to read or write");
    }
    // SAFETY: fstat on a valid fd into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Some("it cannot be examined");
    }
    if let Some(real) = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .filter(|r| r.is_absolute())
    {
        if other_zot_dirs().iter().any(|d| real.starts_with(d)) {
            return Some("it is zot's own configuration, data or cache");
        }
    }
    if own_file(&st) {
        return Some(
            "it is one of zot's own files (a session, receipt, key or cache) under another name",
        );
    }
    None
}

fn check_refusal(fd: &OwnedFd) -> io::Result<()> {
    match refusal(fd.as_raw_fd()) {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("permission denied: {why}"),
        )),
        None => Ok(()),
    }
}

/// Open the scope root itself (a directory, or the parent of a file scope).
/// Returns the fd and the path to open beneath it.
fn open_root(s: &Scoped) -> io::Result<(OwnedFd, PathBuf, u64)> {
    let root_c = cstr(&s.root)?;
    // SAFETY: plain open of a path we own the string of.
    let fd = unsafe { libc::open(root_c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: new fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let meta = nix::sys::stat::fstat(&fd).map_err(io::Error::from)?;
    if meta.st_mode & libc::S_IFMT == libc::S_IFDIR {
        return Ok((fd, s.rel.clone(), BENEATH));
    }
    // A file scope: only the file itself, opened from its parent without
    // following any symlink.
    if !s.rel.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let parent = s.root.parent().unwrap_or(Path::new("/"));
    let name = s.root.file_name().map(PathBuf::from).unwrap_or_default();
    let pc = cstr(parent)?;
    // SAFETY: as above.
    let pfd = unsafe {
        libc::open(
            pc.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if pfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: new fd.
    Ok((
        unsafe { OwnedFd::from_raw_fd(pfd) },
        name,
        BENEATH | libc::RESOLVE_NO_SYMLINKS,
    ))
}

/// Only regular files are opened (a FIFO or device would block or never
/// end); `O_NONBLOCK`, used to open them safely, is cleared again.
fn regular(fd: OwnedFd) -> io::Result<(File, libc::stat)> {
    // SAFETY: fstat on a valid fd into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::other("not a regular file"));
    }
    // SAFETY: fcntl flag changes on a valid fd.
    unsafe {
        let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
    }
    Ok((File::from(fd), st))
}

/// Open `s` read-only beneath its root (regular files only).
pub fn open_read(s: &Scoped) -> io::Result<File> {
    let (root, rel, res) = open_root(s)?;
    let fd = openat2(
        root.as_raw_fd(),
        &rel,
        libc::O_RDONLY | libc::O_NONBLOCK,
        0,
        res,
    )?;
    check_refusal(&fd)?;
    regular(fd).map(|(f, _)| f)
}

/// Open `s` for writing beneath its root (create/truncate), creating missing
/// parent directories beneath the root too.
pub fn open_write(s: &Scoped, truncate: bool) -> io::Result<File> {
    if !s.rel.as_os_str().is_empty() && std::fs::symlink_metadata(&s.root).is_err() {
        // A granted directory scope that does not exist yet.
        std::fs::create_dir_all(&s.root)?;
    }
    let (root, rel, res) = open_root(s)?;
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut cur = PathBuf::new();
        for c in parent.components() {
            cur.push(c);
            match openat2(
                root.as_raw_fd(),
                &cur,
                libc::O_PATH | libc::O_DIRECTORY,
                0,
                res,
            ) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let (dirfd, name) = match cur.parent().filter(|p| !p.as_os_str().is_empty()) {
                        Some(pp) => (
                            openat2(
                                root.as_raw_fd(),
                                pp,
                                libc::O_PATH | libc::O_DIRECTORY,
                                0,
                                res,
                            )?,
                            cur.file_name().unwrap(),
                        ),
                        None => (
                            openat2(
                                root.as_raw_fd(),
                                Path::new("."),
                                libc::O_PATH | libc::O_DIRECTORY,
                                0,
                                res,
                            )?,
                            cur.as_os_str(),
                        ),
                    };
                    let n = cstr(Path::new(name))?;
                    // SAFETY: dirfd is valid, n is a single component.
                    if unsafe { libc::mkdirat(dirfd.as_raw_fd(), n.as_ptr(), 0o755) } < 0 {
                        let e = io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::EEXIST) {
                            return Err(e);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    let fd = openat2(
        root.as_raw_fd(),
        &rel,
        libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK,
        0o644,
        res,
    )?;
    check_refusal(&fd)?;
    let (f, st) = regular(fd)?;
    if st.st_nlink > 1 {
        // Another name (maybe outside the scope) shares this inode.
        return Err(io::Error::other(
            "the file has other hard links; refusing to write through them",
        ));
    }
    if truncate {
        f.set_len(0)?;
    }
    Ok(f)
}

/// The real path of an open fd (from `/proc/self/fd`).
pub fn fd_path(fd: &OwnedFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// Walk the directory `s` beneath its root without following symlinks,
/// calling `visit(rel_path, file)` for each regular file. Stops when `visit`
/// returns false. `.git` directories are skipped.
pub fn walk(s: &Scoped, mut visit: impl FnMut(&Path, &OwnedFd) -> bool) -> io::Result<()> {
    let (root, rel, res) = open_root(s)?;
    let start = openat2(
        root.as_raw_fd(),
        &rel,
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
        res,
    )?;
    if pseudo_fs(start.as_raw_fd()) {
        check_refusal(&start)?;
    }
    let mut stack: Vec<(OwnedFd, PathBuf)> = vec![(start, PathBuf::new())];
    let mut budget = 100_000usize;
    while let Some((dfd, prefix)) = stack.pop() {
        let dir = nix::dir::Dir::from_fd(dfd).map_err(io::Error::from)?;
        let dir_fd = dir.as_raw_fd();
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut dir = dir;
        for e in dir.iter() {
            let e = e.map_err(io::Error::from)?;
            let n = e.file_name().to_bytes().to_vec();
            if n == b"." || n == b".." {
                continue;
            }
            names.push(n);
        }
        names.sort();
        for n in names {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                return Ok(());
            }
            let name = PathBuf::from(std::ffi::OsStr::from_bytes(&n));
            let child = openat2(
                dir_fd,
                &name,
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                0,
                BENEATH | libc::RESOLVE_NO_SYMLINKS,
            );
            let Ok(fd) = child else { continue };
            let Ok(st) = nix::sys::stat::fstat(&fd) else {
                continue;
            };
            let rel = prefix.join(&name);
            match st.st_mode & libc::S_IFMT {
                libc::S_IFDIR => {
                    if n != b".git" && !pseudo_fs(fd.as_raw_fd()) {
                        stack.push((fd, rel));
                    }
                }
                libc::S_IFREG => {
                    if refusal(fd.as_raw_fd()).is_some() {
                        continue;
                    }
                    if !visit(&rel, &fd) {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn scoped(root: &Path, p: &Path) -> Scoped {
        locate(&[root.to_path_buf()], &normalize(root, p).unwrap()).unwrap()
    }

    #[test]
    fn symlinks_cannot_escape() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(base.join("secret"), "s3cret").unwrap();
        std::fs::write(ws.join("ok.txt"), "fine").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), ws.join("abs")).unwrap();
        std::os::unix::fs::symlink("../secret", ws.join("rel")).unwrap();
        std::os::unix::fs::symlink("ok.txt", ws.join("inside")).unwrap();
        std::os::unix::fs::symlink(&base, ws.join("dirlink")).unwrap();
        let mut s = String::new();
        open_read(&scoped(&ws, Path::new("ok.txt")))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "fine");
        s.clear();
        open_read(&scoped(&ws, Path::new("inside")))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "fine");
        for bad in ["abs", "rel", "dirlink/secret"] {
            assert!(open_read(&scoped(&ws, Path::new(bad))).is_err(), "{bad}");
            assert!(
                open_write(&scoped(&ws, Path::new(bad)), true).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(base.join("secret")).unwrap(),
            "s3cret"
        );
        assert!(locate(
            std::slice::from_ref(&ws),
            &normalize(&ws, Path::new("../secret")).unwrap()
        )
        .is_none());
        let mut f = open_write(&scoped(&ws, Path::new("new/deep/f.txt")), true).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.join("new/deep/f.txt")).unwrap(),
            "x"
        );
        assert!(open_write(&scoped(&ws, Path::new("dirlink/newdir/f")), true).is_err());
        assert!(!base.join("newdir").exists());
        let mut seen = Vec::new();
        walk(&scoped(&ws, Path::new("")), |p, _| {
            seen.push(p.to_path_buf());
            true
        })
        .unwrap();
        seen.sort();
        assert_eq!(
            seen,
            vec![PathBuf::from("new/deep/f.txt"), PathBuf::from("ok.txt")]
        );
    }

    #[test]
    fn file_scope_is_exact() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::write(base.join("go.mod"), "m").unwrap();
        std::fs::write(base.join("other"), "o").unwrap();
        let roots = vec![base.join("go.mod")];
        let s = locate(&roots, &base.join("go.mod")).unwrap();
        assert!(open_read(&s).is_ok());
        assert!(locate(&roots, &base.join("other")).is_none());
        std::fs::remove_file(base.join("go.mod")).unwrap();
        std::os::unix::fs::symlink("other", base.join("go.mod")).unwrap();
        assert!(open_read(&s).is_err());
    }

    #[test]
    fn zot_itself_is_refused() {
        use std::os::unix::fs::MetadataExt;
        let root = PathBuf::from("/");
        let pid = std::process::id();
        for p in [
            "/proc/self/environ".to_string(),
            "/proc/thread-self/environ".to_string(),
            format!("/proc/{pid}/environ"),
            format!("/proc/{pid}/cmdline"),
            "/dev/fd/0".to_string(),
            "/dev/stdin".to_string(),
        ] {
            let s = locate(std::slice::from_ref(&root), Path::new(&p)).unwrap();
            assert!(open_read(&s).is_err(), "{p}");
            assert!(open_write(&s, false).is_err(), "{p}");
        }
        // The same through a scope that is /proc itself, and a walk.
        let procs = vec![PathBuf::from("/proc/self")];
        let s = locate(&procs, Path::new("/proc/self/environ")).unwrap();
        let e = open_read(&s).unwrap_err();
        assert!(e.to_string().contains("kernel filesystem"), "{e}");
        let mut n = 0;
        let _ = walk(&locate(&procs, Path::new("/proc/self")).unwrap(), |_, _| {
            n += 1;
            true
        });
        assert_eq!(n, 0);
        // zot's own files by device and inode.
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let z = base.join("zh/sessions");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("s.jsonl"), "secret").unwrap();
        std::fs::create_dir_all(base.join("ws")).unwrap();
        std::fs::hard_link(z.join("s.jsonl"), base.join("ws/x")).unwrap();
        let own = OwnFiles::scan(&[base.join("zh")]);
        let m = std::fs::metadata(base.join("ws/x")).unwrap();
        // SAFETY: plain data.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_dev = m.dev();
        st.st_ino = m.ino();
        assert!(own.contains(&st));
        std::fs::write(base.join("ws/y"), "mine").unwrap();
        st.st_ino = std::fs::metadata(base.join("ws/y")).unwrap().ino();
        assert!(!own.contains(&st));
    }

    #[test]
    fn special_files_and_hard_links() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir(&ws).unwrap();
        nix::unistd::mkfifo(
            &ws.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert!(open_read(&scoped(&ws, Path::new("fifo"))).is_err());
        assert!(open_write(&scoped(&ws, Path::new("fifo")), true).is_err());
        std::fs::write(base.join("outside"), "keep").unwrap();
        std::fs::hard_link(base.join("outside"), ws.join("hl")).unwrap();
        assert!(open_write(&scoped(&ws, Path::new("hl")), true).is_err());
        assert_eq!(
            std::fs::read_to_string(base.join("outside")).unwrap(),
            "keep"
        );
        assert!(open_read(&scoped(&ws, Path::new(""))).is_err());
    }
}
