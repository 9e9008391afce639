//! Executing the plan's mount view (native backend), in the PID 1 of the new
//! namespaces: make every mount private, pivot onto a staging tmpfs
//! (`/oldroot` = the host, `/newroot` = the view), run each [`MountOp`] in
//! order, then `pivot_root(".", ".")` into the view and detach what is
//! stacked on top of it (the staging tmpfs with the host tree under it): one
//! lazy unmount for both.
//!
//! Binds use the new mount API where the kernel has it (Linux 5.12+): one
//! `open_tree` clone, one recursive `mount_setattr` (read-only, nosuid,
//! nodev: locked flags are kept because nothing is cleared), one
//! `move_mount`. On ENOSYS they fall back to `MS_BIND|MS_REC` and a remount
//! of every submount found in `/proc/self/mountinfo`, like bubblewrap.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::plan::MountOp;

use super::NativeError;

const STAGE: &str = "/tmp";
const NEWROOT: &str = "/newroot";
const OLDROOT: &str = "/oldroot";

use crate::tail::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

/// `struct mount_attr` (size version 0).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// The kernel lacks the new mount API (set on the first ENOSYS).
static OLD_MOUNT_API: AtomicBool = AtomicBool::new(false);

fn errno() -> io::Error {
    io::Error::last_os_error()
}

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn in_root(root: &str, p: &Path) -> PathBuf {
    let rel = p.strip_prefix("/").unwrap_or(p);
    if rel.as_os_str().is_empty() {
        PathBuf::from(root)
    } else {
        Path::new(root).join(rel)
    }
}

/// A sandbox path as the error should name it.
fn shown(p: &Path) -> PathBuf {
    match p.strip_prefix(NEWROOT) {
        Ok(rel) => Path::new("/").join(rel),
        Err(_) => p.to_path_buf(),
    }
}

pub(super) fn mount_raw(
    src: Option<&Path>,
    dst: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let src_c = src.map(cpath).transpose()?;
    let dst_c = cpath(dst)?;
    let fs_c = fstype.map(|s| CString::new(s).expect("no NUL in fs type"));
    let data_c = data.map(|s| CString::new(s).expect("no NUL in mount data"));
    // SAFETY: valid C strings or NULL.
    let r = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            dst_c.as_ptr(),
            fs_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    if r != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

fn pivot_root(new: &Path, old: &Path) -> io::Result<()> {
    let n = cpath(new)?;
    let o = cpath(old)?;
    // SAFETY: valid C strings.
    if unsafe { libc::syscall(libc::SYS_pivot_root, n.as_ptr(), o.as_ptr()) } != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

fn umount_detach(p: &Path) -> io::Result<()> {
    let c = cpath(p)?;
    // SAFETY: a valid C string.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// Create `p` (a mount point) as a directory or an empty file, with parents.
/// An existing entry of the right kind is kept (a non-directory stands for
/// a file).
fn ensure_mountpoint(p: &Path, dir: bool) -> io::Result<()> {
    match p.symlink_metadata() {
        Ok(m) if m.is_dir() == dir => return Ok(()),
        Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        Err(_) => {}
    }
    if dir {
        std::fs::create_dir_all(p)
    } else {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .map(drop)
    }
}

/// Bind `src` at `dst` (recursively), `nosuid,nodev` everywhere, and
/// read-only everywhere unless `writable`.
fn bind_tree(src: &Path, dst: &Path, writable: bool) -> Result<(), NativeError> {
    let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if !writable {
        set |= MOUNT_ATTR_RDONLY;
    }
    if !OLD_MOUNT_API.load(Ordering::Relaxed) {
        match bind_tree_new_api(src, dst, set) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                OLD_MOUNT_API.store(true, Ordering::Relaxed)
            }
            Err(e) => {
                let name = shown(dst);
                return Err(NativeError::path("bind mounting", &name)(e));
            }
        }
    }
    let name = shown(dst);
    mount_raw(Some(src), dst, None, libc::MS_BIND | libc::MS_REC, None)
        .map_err(NativeError::path("bind mounting", &name))?;
    let mut add = libc::MS_NOSUID | libc::MS_NODEV;
    if !writable {
        add |= libc::MS_RDONLY;
    }
    remount_tree(dst, add)
}

fn bind_tree_new_api(src: &Path, dst: &Path, set: u64) -> io::Result<()> {
    let s = cpath(src)?;
    let d = cpath(dst)?;
    crate::tail::bind_tree(s.as_ptr().cast(), d.as_ptr().cast(), set)
        .map_err(io::Error::from_raw_os_error)
}

/// Remount `p` alone read-only, keeping its other flags.
fn remount_one_ro(p: &Path) -> Result<(), NativeError> {
    let name = shown(p);
    set_attr(p, MOUNT_ATTR_RDONLY, libc::MS_RDONLY)
        .map_err(NativeError::path("remounting read-only", &name))
}

/// Add `attr` (new API; `ms` with the old one) to the mount at `p` alone,
/// keeping its other flags.
fn set_attr(p: &Path, attr: u64, ms: libc::c_ulong) -> io::Result<()> {
    if !OLD_MOUNT_API.load(Ordering::Relaxed) {
        let c = cpath(p)?;
        let a = MountAttr {
            attr_set: attr,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: a valid C string and mount_attr of its size.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c.as_ptr(),
                0 as libc::c_uint,
                &a as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = errno();
        if e.raw_os_error() != Some(libc::ENOSYS) {
            return Err(e);
        }
        OLD_MOUNT_API.store(true, Ordering::Relaxed);
    }
    let flags = statvfs_flags(p)?;
    mount_raw(
        None,
        p,
        None,
        libc::MS_BIND | libc::MS_REMOUNT | flags | ms,
        None,
    )
}

/// The per-mount flags of the mount at `p` (to keep across a remount).
fn statvfs_flags(p: &Path) -> io::Result<libc::c_ulong> {
    let c = cpath(p)?;
    // SAFETY: zeroed plain struct filled by the kernel.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(errno());
    }
    let mut flags = 0;
    for (st_flag, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            flags |= ms;
        }
    }
    Ok(flags)
}

/// One line of /proc/self/mountinfo: mount point and per-mount flags.
#[derive(Debug, PartialEq, Eq)]
struct MountInfo {
    mountpoint: PathBuf,
    flags: libc::c_ulong,
}

fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let mp = it.nth(4)?;
            let opts = it.next()?;
            let mut flags = 0;
            for o in opts.split(',') {
                flags |= match o {
                    "ro" => libc::MS_RDONLY,
                    "nosuid" => libc::MS_NOSUID,
                    "nodev" => libc::MS_NODEV,
                    "noexec" => libc::MS_NOEXEC,
                    "noatime" => libc::MS_NOATIME,
                    "nodiratime" => libc::MS_NODIRATIME,
                    "relatime" => libc::MS_RELATIME,
                    "nosymfollow" => 256, // MS_NOSYMFOLLOW
                    _ => 0,
                };
            }
            Some(MountInfo {
                mountpoint: PathBuf::from(unescape_octal(mp)),
                flags,
            })
        })
        .collect()
}

fn unescape_octal(s: &str) -> std::ffi::OsString {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsStr::from_bytes(&out).to_os_string()
}

/// Old mount API: remount `top` and every mount below it with `add` set,
/// keeping each mount's own (possibly locked) flags. A mount point that
/// cannot even be reached (EACCES) is out of reach for the command too, and
/// one already read-only that refuses is tolerated (bubblewrap does the
/// same); anything else fails closed.
fn remount_tree(top: &Path, add: libc::c_ulong) -> Result<(), NativeError> {
    let info = Path::new("/oldroot/proc/self/mountinfo");
    let text = std::fs::read_to_string(info).map_err(NativeError::path("reading", info))?;
    // The host's /proc and /dev inside a bind of `/` are covered by the
    // view's own later on; they may refuse.
    let covered = [Path::new("/newroot/proc"), Path::new("/newroot/dev")];
    for m in parse_mountinfo(&text) {
        if !m.mountpoint.starts_with(top) {
            continue;
        }
        let keep = m.flags
            & !(libc::MS_RDONLY | libc::MS_RELATIME | libc::MS_NOATIME | libc::MS_NODIRATIME);
        let r = mount_raw(
            None,
            &m.mountpoint,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | keep | add,
            None,
        );
        if let Err(err) = r {
            let tolerated = covered
                .iter()
                .any(|c| m.mountpoint.starts_with(c) && top != *c)
                || matches!(err.raw_os_error(), Some(libc::ENOENT | libc::EACCES))
                || (m.flags & libc::MS_RDONLY != 0
                    && matches!(err.raw_os_error(), Some(libc::EPERM)));
            if !tolerated {
                return Err(NativeError::Path {
                    step: "remounting",
                    path: shown(&m.mountpoint),
                    source: err,
                });
            }
        }
    }
    Ok(())
}

/// The host's `/dev/null`, bound read-only (nosuid, nodev) over `p`.
fn dev_null_over(p: &Path) -> Result<(), NativeError> {
    bind_tree(&Path::new(OLDROOT).join("dev/null"), p, false)
}

/// What bubblewrap's `--dev` makes, on `d`.
fn build_dev(d: &Path, shown_dst: &Path) -> Result<(), NativeError> {
    let e = |step| NativeError::path(step, shown_dst);
    ensure_mountpoint(d, true).map_err(e("creating mount point"))?;
    mount_raw(
        Some(Path::new("tmpfs")),
        d,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755"),
    )
    .map_err(e("mounting tmpfs on"))?;
    for node in ["null", "zero", "full", "random", "urandom", "tty"] {
        let src = Path::new(OLDROOT).join("dev").join(node);
        let dst = d.join(node);
        ensure_mountpoint(&dst, false).map_err(e("creating device node in"))?;
        // Devices need a mount without nodev; nosuid like every bind.
        mount_raw(Some(&src), &dst, None, libc::MS_BIND, None)
            .map_err(e("binding a device into"))?;
        set_attr(&dst, MOUNT_ATTR_NOSUID, libc::MS_NOSUID)
            .map_err(e("making a device node nosuid in"))?;
    }
    for (name, target) in [
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("fd", "/proc/self/fd"),
        ("core", "/proc/kcore"),
    ] {
        std::os::unix::fs::symlink(target, d.join(name)).map_err(e("creating a symlink in"))?;
    }
    std::fs::create_dir(d.join("shm")).map_err(e("creating shm in"))?;
    let pts = d.join("pts");
    std::fs::create_dir(&pts).map_err(e("creating pts in"))?;
    mount_raw(
        Some(Path::new("devpts")),
        &pts,
        Some("devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .map_err(e("mounting devpts in"))?;
    std::os::unix::fs::symlink("pts/ptmx", d.join("ptmx")).map_err(e("creating a symlink in"))?;
    Ok(())
}

/// A fresh procfs on `d`, its dangerous corners read-only when writable
/// (what bubblewrap's `--proc` does).
fn build_proc(d: &Path, shown_dst: &Path) -> Result<(), NativeError> {
    ensure_mountpoint(d, true).map_err(NativeError::path("creating mount point", shown_dst))?;
    mount_raw(
        Some(Path::new("proc")),
        d,
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
    .map_err(NativeError::path("mounting a fresh /proc on", shown_dst))?;
    for sub in ["sys", "sysrq-trigger", "irq", "bus"] {
        let p = d.join(sub);
        let name = shown(&p);
        let c = cpath(&p).map_err(NativeError::path("covering", &name))?;
        // SAFETY: a valid C string.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            let e = errno();
            match e.raw_os_error() {
                // Already read-only or absent: nothing to cover.
                Some(libc::EACCES | libc::ENOENT | libc::EROFS) => continue,
                _ => return Err(NativeError::path("checking", &name)(e)),
            }
        }
        bind_tree(&p, &p, false)?;
    }
    Ok(())
}

fn apply(op: &MountOp) -> Result<(), NativeError> {
    let e = NativeError::path;
    match op {
        MountOp::Bind { src, dst, writable } => {
            let s = in_root(OLDROOT, src);
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, s.is_dir()).map_err(e("creating mount point", dst))?;
            bind_tree(&s, &d, *writable)?;
        }
        MountOp::Tmpfs {
            dst,
            mode,
            size,
            inodes,
            writable,
        } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, true).map_err(e("creating mount point", dst))?;
            let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
            if !writable {
                flags |= libc::MS_RDONLY;
            }
            let mut data = format!("mode={:o}", mode.0);
            if let Some(size) = size {
                data.push_str(&format!(",size={size}"));
            }
            if let Some(n) = inodes {
                data.push_str(&format!(",nr_inodes={n}"));
            }
            mount_raw(
                Some(Path::new("tmpfs")),
                &d,
                Some("tmpfs"),
                flags,
                Some(&data),
            )
            .map_err(e("mounting tmpfs on", dst))?;
        }
        MountOp::Dev { dst } => build_dev(&in_root(NEWROOT, dst), dst)?,
        MountOp::Proc { dst } => build_proc(&in_root(NEWROOT, dst), dst)?,
        MountOp::MaskFile { dst } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, false).map_err(e("masking", dst))?;
            dev_null_over(&d)?;
        }
        MountOp::MaskSocket { dst } => {
            let d = in_root(NEWROOT, dst);
            // Gone since the plan was made (or while mounting: host
            // processes remove and rename their sockets): nothing left to
            // connect to. In a directory this user namespace cannot enter
            // (another user's 0700 directory; the planner may run as root):
            // the command, with less privilege, cannot reach it either.
            match dev_null_over(&d) {
                Err(e) if e.not_found() && d.symlink_metadata().is_err() => {}
                Err(e) if e.permission_denied() => {}
                r => r?,
            }
        }
        MountOp::MaskDir { dst } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, true).map_err(e("masking", dst))?;
            mount_raw(
                Some(Path::new("tmpfs")),
                &d,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_RDONLY,
                Some("mode=0000,size=4096"),
            )
            .map_err(e("masking", dst))?;
        }
        MountOp::BlockCreate { dst, .. } => {
            let d = in_root(NEWROOT, dst);
            ensure_mountpoint(&d, false)
                .map_err(e("creating the placeholder for a protected path", dst))?;
            dev_null_over(&d)?;
        }
        MountOp::RemountRo { dst } => remount_one_ro(&in_root(NEWROOT, dst))?,
    }
    Ok(())
}

/// Build the view described by `ops` and pivot into it (cwd: `/`).
/// The first step of a view: this mount namespace's mounts made private,
/// a staging tmpfs made the root, the host tree under [`OLDROOT`], the view
/// to be built at [`NEWROOT`].
pub(super) fn stage() -> Result<(), NativeError> {
    let e = NativeError::path;
    mount_raw(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
    .map_err(e("making mounts private", Path::new("/")))?;
    let stage = Path::new(STAGE);
    mount_raw(
        Some(Path::new("tmpfs")),
        stage,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755"),
    )
    .map_err(e("mounting the staging tmpfs on", stage))?;
    let old_in_stage = stage.join(&OLDROOT[1..]);
    let new_in_stage = stage.join(&NEWROOT[1..]);
    std::fs::create_dir(&old_in_stage).map_err(e("creating", &old_in_stage))?;
    std::fs::create_dir(&new_in_stage).map_err(e("creating", &new_in_stage))?;
    pivot_root(stage, &old_in_stage).map_err(e("pivot_root to the staging root", stage))?;
    std::env::set_current_dir("/").map_err(e("chdir", Path::new("/")))
}

/// The view's mounts, in order, after [`stage`].
pub(super) fn apply_all(ops: &[MountOp]) -> Result<(), NativeError> {
    ops.iter().try_for_each(apply)
}

/// The last step: the view becomes the root and the host tree is gone.
pub(super) fn enter() -> Result<(), NativeError> {
    let e = NativeError::path;
    std::env::set_current_dir(NEWROOT).map_err(e("chdir", Path::new(NEWROOT)))?;
    pivot_root(Path::new("."), Path::new(".")).map_err(e("pivot_root into", Path::new(NEWROOT)))?;
    // The staging root, with the host tree under /oldroot, is stacked on
    // top of the view: one lazy unmount detaches both.
    umount_detach(Path::new(".")).map_err(e("unmounting the host tree", Path::new("/")))?;
    std::env::set_current_dir("/").map_err(e("chdir", Path::new("/")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_parsing_keeps_locked_flags() {
        let t =
            "36 35 98:0 /mnt1 /mnt\\040x rw,nosuid,noexec,relatime shared:1 - ext3 /dev/root rw\n\
                 37 35 98:0 / /ro ro,nodev - ext3 /dev/root rw\n";
        let m = parse_mountinfo(t);
        assert_eq!(m[0].mountpoint, PathBuf::from("/mnt x"));
        assert_eq!(
            m[0].flags,
            libc::MS_NOSUID | libc::MS_NOEXEC | libc::MS_RELATIME
        );
        assert_eq!(m[1].flags, libc::MS_RDONLY | libc::MS_NODEV);
    }

    #[test]
    fn sandbox_paths_map_into_roots() {
        assert_eq!(in_root(NEWROOT, Path::new("/")), PathBuf::from("/newroot"));
        assert_eq!(
            in_root(OLDROOT, Path::new("/etc/x")),
            PathBuf::from("/oldroot/etc/x")
        );
        assert_eq!(shown(Path::new("/newroot/a/b")), PathBuf::from("/a/b"));
    }
}
