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
                    if n != b".git" {
                        stack.push((fd, rel));
                    }
                }
                libc::S_IFREG => {
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
