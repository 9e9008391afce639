//! The tail of every launch: the steps between the sandbox's namespaces and
//! `execve`, on every backend. `no_std` and allocation-free, so that the
//! same code runs in two images:
//!
//! - in-process, in the forked child of the native and landlock backends
//!   (and in `zot __zot-launch`);
//! - the launcher image: a static binary of a few KiB, without libc, that
//!   zot embeds and bwrap runs inside the sandbox, so a bwrap launch does not
//!   start the zot binary a second time.
//!
//! In order: `PR_SET_NO_NEW_PRIVS`, `PR_SET_PDEATHSIG(SIGKILL)` with a
//! parent re-check, a new session, every inherited fd above 2 close-on-exec,
//! rlimits, every capability dropped, Landlock (best effort beyond ABI 1, or
//! required), the signals a caller may handle reset and an empty mask,
//! seccomp last; with a proxied network the bridge to the proxy (see
//! [`bridge`]); a status line and `execvpe` (PATH from the command's
//! environment, `/bin/sh` for a script without a shebang, like glibc).
//!
//! Everything the tail needs comes compiled in one buffer (see
//! [`encode`](self::encode)): argv, the environment, rlimits, the Landlock
//! rights per rule and per kernel ABI, the seccomp BPF program, the
//! bridge's port and the proxy's socket.

pub mod bridge;
pub mod out;
pub mod sys;

#[cfg(not(zot_stub))]
pub mod encode;

use out::Buf;
use sys::{check, nr, syscall};

/// First bytes of an encoded tail.
pub const MAGIC: &[u8; 8] = b"ZOTTAIL1";
/// Start a new session (the command leads its process group).
pub const FLAG_NEW_SESSION: u32 = 1;
/// The seccomp program asks the supervisor about some calls: install it
/// with a listener and pass that to the supervisor (see [`install_notify`]).
pub const FLAG_NOTIFY: u32 = 2;
/// The line that comes with the listener on the status socket.
pub const NOTIFY_LINE: &[u8] = b"{\"event\":\"notify\"}\n";
/// Landlock not requested.
pub const LANDLOCK_OFF: u32 = 0;
/// Landlock applied as far as the kernel supports it, reported.
#[cfg_attr(zot_stub, allow(dead_code))]
pub const LANDLOCK_BEST_EFFORT: u32 = 1;
/// At least the ABI 1 rights, or the launch fails.
pub const LANDLOCK_REQUIRED: u32 = 2;
/// Exit codes.
pub const EXIT_SETUP: i32 = 125;
pub const EXIT_CANNOT_EXEC: i32 = 126;
pub const EXIT_NOT_FOUND: i32 = 127;

/// A step that failed: what, where, why.
pub struct Fail {
    pub stage: &'static str,
    pub what: &'static str,
    pub path: Option<*const u8>,
    pub errno: i32,
}

fn fail(stage: &'static str, what: &'static str, errno: i32) -> Fail {
    Fail {
        stage,
        what,
        path: None,
        errno,
    }
}

/// A NUL-terminated string in the buffer, without its NUL.
///
/// # Safety
/// `p` points to a NUL-terminated string that outlives the result.
unsafe fn cstr<'a>(p: *const u8) -> &'a [u8] {
    let mut n = 0;
    while *p.add(n) != 0 {
        n += 1;
    }
    core::slice::from_raw_parts(p, n)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

const BAD_SPEC: Fail = Fail {
    stage: "spec",
    what: "malformed launch data",
    path: None,
    errno: sys::EINVAL,
};

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let end = self.pos.checked_add(n).ok_or(BAD_SPEC)?;
        let s = self.b.get(self.pos..end).ok_or(BAD_SPEC)?;
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, Fail> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, Fail> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    fn align8(&mut self) -> Result<(), Fail> {
        let pad = (8 - self.pos % 8) % 8;
        self.take(pad).map(drop)
    }
    /// `u32 len`, then `len` bytes ending in the only NUL: the string's
    /// bytes, without the NUL.
    fn cstring_bytes(&mut self) -> Result<&'a [u8], Fail> {
        let n = self.u32()? as usize;
        let s = self.take(n)?;
        match s.iter().position(|b| *b == 0) {
            Some(i) if i + 1 == n => Ok(&s[..i]),
            _ => Err(BAD_SPEC),
        }
    }
    /// [`Reader::cstring_bytes`], as the string's address in the buffer
    /// (its NUL follows).
    fn cstring(&mut self) -> Result<*const u8, Fail> {
        self.cstring_bytes().map(<[u8]>::as_ptr)
    }
}

/// A string array: `u32 count`, padding, `count + 2` pointer slots (one spare
/// in front, a NULL at the end) filled here, then the strings. Returns the
/// address of the first real slot.
fn string_array(r: &mut Reader, base: *mut u8) -> Result<(*mut usize, usize), Fail> {
    let count = r.u32()? as usize;
    r.align8()?;
    let slots_at = r.pos;
    let slots = count.checked_add(2).ok_or(BAD_SPEC)?;
    r.take(slots.checked_mul(8).ok_or(BAD_SPEC)?)?;
    // SAFETY: the slots lie inside the buffer (just checked), 8-aligned
    // relative to an 8-aligned base.
    let slot = unsafe { base.add(slots_at) as *mut usize };
    for i in 0..count {
        let p = r.cstring()?;
        // SAFETY: slot i+1 is inside the reserved slots.
        unsafe { slot.add(1 + i).write_unaligned(p as usize) };
    }
    // SAFETY: as above.
    unsafe {
        slot.write_unaligned(0);
        slot.add(1 + count).write_unaligned(0);
        Ok((slot.add(1), count))
    }
}

/// The decoded tail: pointers into the buffer.
struct Tail<'a> {
    flags: u32,
    /// The run's cgroup (`tasks` or `cgroup.procs`), to join first; -1: none.
    cgroup_fd: i32,
    argv: *mut usize,
    envp: *const usize,
    envc: usize,
    rlimits: &'a [u8],
    nrlimits: usize,
    pid_max: u64,
    landlock: &'a [u8],
    seccomp: &'a [u8],
    /// The bridge's port (0: no bridge) and the proxy's socket.
    bridge_port: u16,
    bridge_socket: &'a [u8],
    /// Tmpfs remounts (`u64 flags`, mount point, data), and how many.
    remounts: &'a [u8],
    nremounts: usize,
    /// The view's last mounts, made here (see [`MOUNT_BIND`]), and how many.
    mounts: &'a [u8],
    nmounts: usize,
}

/// The kinds of the mounts the tail makes on top of bubblewrap's view (the
/// view's last part: a mount per protected path, deny-read mask and host
/// socket, which bubblewrap would make one by one, each with a full read
/// of the mount table). Each is `u32 kind, u64 attr, src, dst, data, u32
/// optional` (strings with their NUL, empty when unused).
///
/// A recursive bind of `src` (a path of the view) onto `dst`: `open_tree`
/// clone, `mount_setattr(attr)` on the whole tree (only flags added, so
/// locked ones stay), `move_mount`.
pub const MOUNT_BIND: u32 = 1;
/// A tmpfs on `dst`: `attr` the `MS_*` flags, `data` its options.
pub const MOUNT_TMPFS: u32 = 2;
/// `attr` (`MOUNT_ATTR_*`) added to the mount at `dst` alone.
pub const MOUNT_SETATTR: u32 = 3;
pub const MOUNT_ATTR_RDONLY: u64 = 1;
pub const MOUNT_ATTR_NOSUID: u64 = 2;
pub const MOUNT_ATTR_NODEV: u64 = 4;

fn decode(buf: &mut [u8]) -> Result<Tail<'_>, Fail> {
    if buf.as_ptr() as usize % 8 != 0 {
        return Err(BAD_SPEC);
    }
    let base = buf.as_mut_ptr();
    // SAFETY: the reader only reads; the pointer slots it skips are written
    // through `base` and never read as bytes.
    let bytes: &[u8] = unsafe { core::slice::from_raw_parts(base, buf.len()) };
    let mut r = Reader { b: bytes, pos: 0 };
    if r.take(8)? != MAGIC {
        return Err(BAD_SPEC);
    }
    let flags = r.u32()?;
    let cgroup_fd = r.u32()? as i32;
    let (argv, argc) = string_array(&mut r, base)?;
    if argc == 0 {
        return Err(fail("command", "empty command", sys::EINVAL));
    }
    let (envp, envc) = string_array(&mut r, base)?;
    let nrlimits = r.u32()? as usize;
    let rlimits = r.take(nrlimits.checked_mul(20).ok_or(BAD_SPEC)?)?;
    let pid_max = r.u64()?;
    let landlock_len = r.u32()? as usize;
    let landlock = r.take(landlock_len)?;
    let ninsn = r.u32()? as usize;
    let seccomp = r.take(ninsn.checked_mul(8).ok_or(BAD_SPEC)?)?;
    let port = r.u32()?;
    let bridge_port = u16::try_from(port).map_err(|_| BAD_SPEC)?;
    let bridge_socket = if bridge_port != 0 {
        r.cstring_bytes()?
    } else {
        &[]
    };
    let nremounts = r.u32()? as usize;
    let remounts_start = r.pos;
    for _ in 0..nremounts {
        r.u64()?;
        r.cstring()?;
        r.cstring()?;
        r.cstring()?;
    }
    let remounts = &bytes[remounts_start..r.pos];
    let nmounts = r.u32()? as usize;
    let mounts_start = r.pos;
    for _ in 0..nmounts {
        r.u32()?;
        r.u64()?;
        r.cstring()?;
        r.cstring()?;
        r.cstring()?;
        r.u32()?;
    }
    let mounts = &bytes[mounts_start..r.pos];
    if r.pos != bytes.len() {
        return Err(BAD_SPEC);
    }
    Ok(Tail {
        flags,
        cgroup_fd,
        argv,
        envp,
        envc,
        rlimits,
        nrlimits,
        pid_max,
        landlock,
        seccomp,
        bridge_port,
        bridge_socket,
        remounts,
        nremounts,
        mounts,
        nmounts,
    })
}

fn sc(n: usize, a: usize, b: usize, c: usize, d: usize, e: usize) -> Result<usize, i32> {
    // SAFETY: every call site passes valid arguments for `n`.
    check(unsafe { syscall(n, a, b, c, d, e, 0) })
}

/// The Landlock outcome for the status line.
#[derive(Clone, Copy)]
enum Lock {
    Full,
    Partial(u64),
    None(&'static str, i32),
}

fn landlock(mut r: Reader) -> Result<Lock, Fail> {
    let compat = r.u32()?;
    if compat == LANDLOCK_OFF {
        return Ok(Lock::None("not requested", 0));
    }
    let requested = r.u64()?;
    let scopes = r.u64()?;
    let nabi = r.u32()? as usize;
    let mut supported_by_abi = [0u64; 16];
    if nabi == 0 || nabi > supported_by_abi.len() {
        return Err(BAD_SPEC);
    }
    for s in supported_by_abi.iter_mut().take(nabi) {
        *s = r.u64()?;
    }
    let abi = match sc(
        nr::LANDLOCK_CREATE_RULESET,
        0,
        0,
        sys::LANDLOCK_CREATE_RULESET_VERSION,
        0,
        0,
    ) {
        Ok(v) if v >= 1 => v,
        Ok(_) | Err(sys::ENOSYS) | Err(sys::EOPNOTSUPP) => {
            let e = match sc(nr::LANDLOCK_CREATE_RULESET, 0, 0, 1, 0, 0) {
                Err(e) => e,
                Ok(_) => sys::ENOSYS,
            };
            if compat == LANDLOCK_REQUIRED {
                return Err(fail(
                    "landlock",
                    "landlock is required but the kernel does not enforce it",
                    e,
                ));
            }
            return Ok(Lock::None("not supported by the kernel", e));
        }
        Err(e) => return Err(fail("landlock", "landlock_create_ruleset (version)", e)),
    };
    let handled = requested & supported_by_abi[abi.min(nabi) - 1];
    let scoped = if abi >= 6 { scopes } else { 0 };
    let attr: [u64; 3] = [handled, 0, scoped];
    let size = if abi >= 6 {
        24
    } else if abi >= 4 {
        16
    } else {
        8
    };
    let ruleset = sc(
        nr::LANDLOCK_CREATE_RULESET,
        attr.as_ptr() as usize,
        size,
        0,
        0,
        0,
    )
    .map_err(|e| fail("landlock", "landlock_create_ruleset", e))?;
    let nrules = r.u32()?;
    for _ in 0..nrules {
        let dir_access = r.u64()?;
        let file_access = r.u64()?;
        let must_exist = r.u32()? != 0;
        let path = r.cstring()?;
        let fd = match sc(
            nr::OPENAT,
            sys::AT_FDCWD as usize,
            path as usize,
            sys::O_PATH | sys::O_CLOEXEC,
            0,
            0,
        ) {
            Ok(fd) => fd,
            Err(_) if !must_exist => continue,
            Err(e) => {
                return Err(Fail {
                    stage: "landlock",
                    what: "cannot open",
                    path: Some(path),
                    errno: e,
                })
            }
        };
        // Directory rights first (most rules name directories); a file
        // refuses them with EINVAL and gets the file rights instead.
        let add = |access: u64| -> Result<(), i32> {
            if access == 0 {
                return Ok(());
            }
            // struct landlock_path_beneath_attr is packed: u64 then i32.
            let mut attr = [0u8; 12];
            attr[..8].copy_from_slice(&access.to_le_bytes());
            attr[8..].copy_from_slice(&(fd as i32).to_le_bytes());
            sc(
                nr::LANDLOCK_ADD_RULE,
                ruleset,
                sys::LANDLOCK_RULE_PATH_BENEATH,
                attr.as_ptr() as usize,
                0,
                0,
            )
            .map(drop)
        };
        let r = match add(dir_access & handled) {
            Err(sys::EINVAL) if file_access != dir_access => add(file_access & handled),
            r => r,
        };
        if let Err(e) = r {
            return Err(Fail {
                stage: "landlock",
                what: "landlock rule for",
                path: Some(path),
                errno: e,
            });
        }
        let _ = sc(nr::CLOSE, fd, 0, 0, 0, 0);
    }
    sc(nr::LANDLOCK_RESTRICT_SELF, ruleset, 0, 0, 0, 0)
        .map_err(|e| fail("landlock", "landlock_restrict_self", e))?;
    let _ = sc(nr::CLOSE, ruleset, 0, 0, 0, 0);
    Ok(if handled == requested && scoped == scopes {
        Lock::Full
    } else {
        Lock::Partial(abi as u64)
    })
}

fn drop_capabilities() -> Result<(), Fail> {
    let stage = "capabilities";
    if let Err(e) = sc(
        nr::PRCTL,
        sys::PR_CAP_AMBIENT,
        sys::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    ) {
        // A kernel without ambient capabilities (< 4.3) has none.
        if e != sys::EINVAL {
            return Err(fail(stage, "clearing the ambient set", e));
        }
    }
    // _LINUX_CAPABILITY_VERSION_3, this process.
    let header: [u32; 2] = [0x2008_0522, 0];
    let mut have = [0u32; 6];
    sc(
        nr::CAPGET,
        header.as_ptr() as usize,
        have.as_mut_ptr() as usize,
        0,
        0,
        0,
    )
    .map_err(|e| fail(stage, "capget", e))?;
    const CAP_SETPCAP: usize = 8;
    if have[0] & (1 << CAP_SETPCAP) != 0 {
        // Drop the bounding set, index by index, to the kernel's last.
        for cap in 0..64usize {
            match sc(nr::PRCTL, sys::PR_CAPBSET_DROP, cap, 0, 0, 0) {
                Ok(_) => {}
                Err(sys::EINVAL) => break,
                Err(e) => {
                    return Err(fail(
                        stage,
                        "cannot drop a capability from the bounding set",
                        e,
                    ))
                }
            }
        }
    } else {
        // It cannot shrink: harmless when empty, or for a non-root uid under
        // no_new_privs (exec grants nothing); for uid 0 a capability left
        // there would come back with exec: fail closed.
        let root =
            sc(nr::GETUID, 0, 0, 0, 0, 0) == Ok(0) || sc(nr::GETEUID, 0, 0, 0, 0, 0) == Ok(0);
        if root {
            for cap in 0..64usize {
                match sc(nr::PRCTL, sys::PR_CAPBSET_READ, cap, 0, 0, 0) {
                    Ok(0) => {}
                    Err(sys::EINVAL) => break,
                    _ => {
                        return Err(fail(
                            stage,
                            "cannot drop a capability from the bounding set",
                            sys::EPERM,
                        ))
                    }
                }
            }
        }
    }
    // Every set empty.
    let data = [0u32; 6];
    sc(
        nr::CAPSET,
        header.as_ptr() as usize,
        data.as_ptr() as usize,
        0,
        0,
        0,
    )
    .map_err(|e| fail(stage, "capset", e))?;
    Ok(())
}

fn close_inherited_fds() -> Result<(), Fail> {
    match sc(
        nr::CLOSE_RANGE,
        3,
        u32::MAX as usize,
        sys::CLOSE_RANGE_CLOEXEC,
        0,
        0,
    ) {
        Ok(_) => return Ok(()),
        Err(sys::ENOSYS) | Err(sys::EINVAL) => {}
        Err(e) => return Err(fail("close fds", "close_range", e)),
    }
    // Older kernels: every fd up to the limit.
    let mut lim = [0u64; 2];
    let max = match sc(
        nr::PRLIMIT64,
        0,
        sys::RLIMIT_NOFILE,
        0,
        lim.as_mut_ptr() as usize,
        0,
    ) {
        Ok(_) => lim[0].min(1 << 20) as usize,
        Err(_) => 1 << 16,
    };
    for fd in 3..max {
        match sc(nr::FCNTL, fd, sys::F_SETFD, sys::FD_CLOEXEC, 0, 0) {
            Ok(_) | Err(sys::EBADF) => {}
            Err(e) => return Err(fail("close fds", "fcntl(FD_CLOEXEC)", e)),
        }
    }
    Ok(())
}

/// `RESERVED_PIDS`: once the PID counter passed it, PIDs are allocated
/// from it up to `pid_max` (cyclically), never below.
const RESERVED_PIDS: u64 = 300;

/// The PID namespace's `pid_max` is `n`, and its PID counter starts above
/// `RESERVED_PIDS`: every later process or thread takes a PID in
/// `[RESERVED_PIDS, n)`, so at most `n - RESERVED_PIDS` of them exist at
/// once, uid 0 included (which `RLIMIT_NPROC` exempts).
fn set_pid_max(n: u64) -> Result<(), Fail> {
    write_proc_number(
        c"/proc/sys/kernel/pid_max",
        "writing /proc/sys/kernel/pid_max",
        n,
    )?;
    match write_proc_number(
        c"/proc/sys/kernel/ns_last_pid",
        "writing /proc/sys/kernel/ns_last_pid",
        RESERVED_PIDS,
    ) {
        // An unprivileged caller's bubblewrap may not move the counter;
        // RLIMIT_NPROC binds every uid but 0 exactly.
        Err(f) if f.errno == sys::EPERM && sc(nr::GETUID, 0, 0, 0, 0, 0) != Ok(0) => Ok(()),
        r => r,
    }
}

fn write_proc_number(path: &core::ffi::CStr, what: &'static str, n: u64) -> Result<(), Fail> {
    let stage = "process limit";
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let fd = sc(
        nr::OPENAT,
        sys::AT_FDCWD as usize,
        path.as_ptr() as usize,
        sys::O_WRONLY | sys::O_CLOEXEC,
        0,
        0,
    )
    .map_err(|e| fail(stage, what, e))?;
    let w = sc(
        nr::WRITE,
        fd,
        digits[i..].as_ptr() as usize,
        digits.len() - i,
        0,
        0,
    );
    let _ = sc(nr::CLOSE, fd, 0, 0, 0, 0);
    w.map_err(|e| fail(stage, what, e))?;
    Ok(())
}

/// The helper's fds (see [`notify_helper`]).
#[derive(Clone, Copy)]
struct HelperArgs {
    rx: usize,
    status_fd: i32,
    diag: usize,
}

/// Send the listener and the diagnostics socket (`fds`) to the
/// supervisor on the status socket, with [`NOTIFY_LINE`] (`SCM_RIGHTS`).
pub(crate) fn send_listener(status_fd: i32, fds: [i32; 2]) -> Result<(), i32> {
    // struct cmsghdr (len, level, type) and two ints: CMSG_SPACE(8) = 24.
    let mut control = [0u64; 3];
    control[0] = 24;
    control[1] = (sys::SOL_SOCKET as u32 as u64) | ((sys::SCM_RIGHTS as u32 as u64) << 32);
    control[2] = (fds[0] as u32 as u64) | ((fds[1] as u32 as u64) << 32);
    let iov: [usize; 2] = [NOTIFY_LINE.as_ptr() as usize, NOTIFY_LINE.len()];
    // struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
    let msg: [usize; 7] = [
        0,
        0,
        iov.as_ptr() as usize,
        1,
        control.as_ptr() as usize,
        24,
        0,
    ];
    loop {
        match sc(
            nr::SENDMSG,
            status_fd as usize,
            msg.as_ptr() as usize,
            sys::MSG_NOSIGNAL,
            0,
            0,
        ) {
            Ok(n) if n == NOTIFY_LINE.len() => return Ok(()),
            Ok(_) => return Err(sys::EPIPE),
            Err(sys::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// What the helper of [`install_notify`] runs: wait for the listener's
/// number, send it with the diagnostics socket to the supervisor on the
/// status socket, exit (0 once sent).
extern "C" fn notify_helper(args: usize) -> ! {
    // SAFETY: `install_notify` passes a `HelperArgs` it keeps alive until
    // this helper has exited (it waits for it).
    let HelperArgs { rx, status_fd, diag } = unsafe { *(args as *const HelperArgs) };
    // It dies with the tail, which it would otherwise wait for forever.
    let _ = sc(nr::PRCTL, sys::PR_SET_PDEATHSIG, sys::SIGKILL, 0, 0, 0);
    let mut b = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match sc(nr::READ, rx, b[got..].as_mut_ptr() as usize, 4 - got, 0, 0) {
            Ok(0) => sys::exit(1),
            Ok(n) => got += n,
            Err(sys::EINTR) => {}
            Err(_) => sys::exit(1),
        }
    }
    match send_listener(status_fd, [i32::from_le_bytes(b), diag as i32]) {
        Ok(()) => sys::exit(0),
        Err(_) => sys::exit(1),
    }
}

/// Install `prog` with a listener. A kernel without WAIT_KILLABLE_RECV
/// (before 5.19) refuses the flag: then a signal may interrupt a call the
/// supervisor already performs.
fn new_listener(prog: &[usize; 2]) -> Result<usize, i32> {
    let mut installed = Err(sys::EINVAL);
    for flags in [
        sys::SECCOMP_FILTER_FLAG_NEW_LISTENER | sys::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
        sys::SECCOMP_FILTER_FLAG_NEW_LISTENER,
    ] {
        installed = sc(
            nr::SECCOMP,
            sys::SECCOMP_SET_MODE_FILTER,
            flags,
            prog.as_ptr() as usize,
            0,
            0,
        );
        if installed != Err(sys::EINVAL) {
            break;
        }
    }
    installed
}

/// Install the seccomp program `prog` with a listener (the calls it stops
/// wait for the supervisor) and hand the listener to the supervisor.
///
/// The calls the program stops include `sendmsg`, so the tail cannot send
/// the listener itself once the filter is on. A helper cloned before (not
/// filtered, sharing this process's fd table) sends it, with a netlink
/// socket of the sandbox's network namespace (the supervisor's view of the
/// sockets bound in there), as `SCM_RIGHTS` on the status socket; the tail
/// waits for the helper and fails closed unless it sent both. With
/// `handoff` (the native backend's PID 1 shares this fd table) no helper
/// is started: both are left open, their numbers in `handoff`, for PID 1
/// to send after the exec.
fn install_notify(
    prog: &[usize; 2],
    status_fd: i32,
    handoff: Option<&mut [i32; 2]>,
) -> Result<(), Fail> {
    let stage = "seccomp";
    if status_fd < 0 {
        return Err(fail(
            stage,
            "user notification needs the supervisor's status socket",
            sys::EINVAL,
        ));
    }
    let diag = sc(
        nr::SOCKET,
        sys::AF_NETLINK,
        sys::SOCK_RAW | sys::SOCK_CLOEXEC,
        sys::NETLINK_SOCK_DIAG,
        0,
        0,
    )
    .map_err(|e| fail(stage, "socket(AF_NETLINK, NETLINK_SOCK_DIAG)", e))?;
    const LISTENER_CALL: &str =
        "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER)";
    // The native backend's PID 1 shares this fd table and sends both once
    // the command has exec'd: no messenger needed.
    if let Some(out) = handoff {
        return match new_listener(prog) {
            Ok(listener) => {
                *out = [listener as i32, diag as i32];
                Ok(())
            }
            Err(e) => {
                let _ = sc(nr::CLOSE, diag, 0, 0, 0, 0);
                Err(fail(stage, LISTENER_CALL, e))
            }
        };
    }
    let mut p = [0i32; 2];
    sc(nr::PIPE2, p.as_mut_ptr() as usize, sys::O_CLOEXEC, 0, 0, 0)
        .map_err(|e| fail(stage, "pipe2", e))?;
    let (rx, tx) = (p[0] as usize, p[1] as usize);
    let close_all = |fds: &[usize]| {
        for fd in fds {
            let _ = sc(nr::CLOSE, *fd, 0, 0, 0, 0);
        }
    };
    // A helper sharing the fd table (it sees the listener once made) and
    // the memory (no page table copied: in-process, that is zot's whole
    // map), on a stack of its own in this frame.
    let args = HelperArgs { rx, status_fd, diag };
    let mut stack = [0u8; 16 * 1024];
    // SAFETY: the helper makes raw syscalls only, and this function waits
    // for it below (on every path) before `stack` and `args` go.
    let helper = match unsafe {
        sys::clone_on(
            sys::CLONE_VM | sys::CLONE_FILES | sys::SIGCHLD,
            &mut stack,
            notify_helper,
            &args as *const HelperArgs as usize,
        )
    } {
        Ok(pid) => pid,
        Err(e) => {
            close_all(&[rx, tx, diag]);
            return Err(fail(stage, "starting the listener's messenger", e));
        }
    };
    let installed = new_listener(prog);
    if let Ok(listener) = installed {
        sys::write_all(tx as i32, &(listener as i32).to_le_bytes());
    }
    // The helper sees EOF if nothing was written.
    let _ = sc(nr::CLOSE, tx, 0, 0, 0, 0);
    let mut wstatus = 0i32;
    let waited = loop {
        match sc(
            nr::WAIT4,
            helper,
            &mut wstatus as *mut i32 as usize,
            0,
            0,
            0,
        ) {
            Err(sys::EINTR) => {}
            r => break r,
        }
    };
    close_all(&[rx, diag]);
    let listener = installed.map_err(|e| fail(stage, LISTENER_CALL, e))?;
    let _ = sc(nr::CLOSE, listener, 0, 0, 0, 0);
    // Exited (low 7 bits 0) with code 0.
    if waited.is_err() || wstatus & 0xffff != 0 {
        return Err(fail(
            stage,
            "could not pass the notification listener to the supervisor",
            sys::EPIPE,
        ));
    }
    Ok(())
}

/// An unprivileged caller's bubblewrap keeps its mounts in a user
/// namespace above the sandbox's (it switches to the caller's uid in a
/// nested one): the tail mounts in a mount namespace of the sandbox's user
/// namespace, made once. Every mount copied into it is locked to it (the
/// command can neither unmount nor clear a flag of one).
fn own_mount_ns(own_ns: &mut bool, stage: &'static str) -> Result<(), Fail> {
    if !*own_ns {
        sc(nr::UNSHARE, sys::CLONE_NEWNS, 0, 0, 0, 0)
            .map_err(|e| fail(stage, "unshare(CLONE_NEWNS)", e))?;
        *own_ns = true;
    }
    Ok(())
}

/// A recursive bind of the tree at `src` onto `dst` (NUL-terminated paths)
/// with the new mount API: `open_tree` clone, `attr` (`MOUNT_ATTR_*`)
/// added on the whole tree in one `mount_setattr` (only flags added, so
/// locked ones stay), `move_mount`. The errno on failure.
pub fn bind_tree(src: *const u8, dst: *const u8, attr: u64) -> Result<(), i32> {
    let empty = b"\0".as_ptr() as usize;
    let at_fdcwd = sys::AT_FDCWD as usize;
    let fd = sc(
        nr::OPEN_TREE,
        at_fdcwd,
        src as usize,
        sys::OPEN_TREE_CLONE | sys::O_CLOEXEC | sys::AT_RECURSIVE,
        0,
        0,
    )?;
    // struct mount_attr: attr_set, attr_clr, propagation, userns_fd.
    let ma: [u64; 4] = [attr, 0, 0, 0];
    let r = sc(
        nr::MOUNT_SETATTR,
        fd,
        empty,
        sys::AT_EMPTY_PATH | sys::AT_RECURSIVE,
        ma.as_ptr() as usize,
        core::mem::size_of_val(&ma),
    )
    .and_then(|_| {
        sc(
            nr::MOVE_MOUNT,
            fd,
            empty,
            at_fdcwd,
            dst as usize,
            sys::MOVE_MOUNT_F_EMPTY_PATH,
        )
    });
    let _ = sc(nr::CLOSE, fd, 0, 0, 0, 0);
    r.map(drop)
}

/// One of the view's last mounts (see [`MOUNT_BIND`]).
fn view_mount(
    kind: u32,
    attr: u64,
    src: *const u8,
    dst: *const u8,
    data: *const u8,
) -> Result<(), i32> {
    let at_fdcwd = sys::AT_FDCWD as usize;
    match kind {
        MOUNT_BIND => bind_tree(src, dst, attr),
        MOUNT_TMPFS => sc(
            nr::MOUNT,
            c"tmpfs".as_ptr() as usize,
            dst as usize,
            c"tmpfs".as_ptr() as usize,
            attr as usize,
            data as usize,
        )
        .map(drop),
        MOUNT_SETATTR => {
            let ma: [u64; 4] = [attr, 0, 0, 0];
            sc(
                nr::MOUNT_SETATTR,
                at_fdcwd,
                dst as usize,
                0,
                ma.as_ptr() as usize,
                core::mem::size_of_val(&ma),
            )
            .map(drop)
        }
        _ => Err(sys::EINVAL),
    }
}

/// The view's last mounts, in order. An optional one (a host socket's
/// mask) whose mount point is gone or out of the sandbox user's reach is
/// skipped: nothing is left there to connect to.
fn view_mounts(t: &Tail, own_ns: &mut bool) -> Result<(), Fail> {
    let mut r = Reader {
        b: t.mounts,
        pos: 0,
    };
    for _ in 0..t.nmounts {
        let kind = r.u32()?;
        let attr = r.u64()?;
        let src = r.cstring()?;
        let dst = r.cstring()?;
        let data = r.cstring()?;
        let optional = r.u32()? != 0;
        let mut res = view_mount(kind, attr, src, dst, data);
        if res == Err(sys::EPERM) && !*own_ns && sc(nr::GETUID, 0, 0, 0, 0, 0) != Ok(0) {
            own_mount_ns(own_ns, "mounts")?;
            res = view_mount(kind, attr, src, dst, data);
        }
        match res {
            Ok(()) => {}
            Err(sys::ENOENT | sys::EACCES) if optional => {}
            Err(errno) => {
                return Err(Fail {
                    stage: "mounts",
                    what: match kind {
                        MOUNT_BIND => "bind mounting",
                        MOUNT_TMPFS => "mounting a tmpfs on",
                        _ => "remounting read-only",
                    },
                    path: Some(dst),
                    errno,
                })
            }
        }
    }
    Ok(())
}

fn harden(t: &Tail, status_fd: i32, handoff: Option<&mut [i32; 2]>) -> Result<Lock, Fail> {
    // 0. into the run's cgroup, before anything is forked: this thread
    // alone (`0`), which is the whole process here.
    if t.cgroup_fd >= 0 {
        let fd = t.cgroup_fd as usize;
        let me = b"0";
        sc(nr::WRITE, fd, me.as_ptr() as usize, me.len(), 0, 0)
            .map_err(|e| fail("cgroup", "joining the run's memory cgroup", e))?;
        sc(nr::CLOSE, fd, 0, 0, 0, 0).map_err(|e| fail("cgroup", "close", e))?;
    }
    // 1. no_new_privs: no setuid/file-capability gains across exec.
    sc(nr::PRCTL, sys::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        .map_err(|e| fail("no_new_privs", "prctl(PR_SET_NO_NEW_PRIVS)", e))?;
    // 2. die with the parent, then make sure the parent did not die first.
    let parent = sc(nr::GETPPID, 0, 0, 0, 0, 0).unwrap_or(0);
    sc(nr::PRCTL, sys::PR_SET_PDEATHSIG, sys::SIGKILL, 0, 0, 0)
        .map_err(|e| fail("pdeathsig", "prctl(PR_SET_PDEATHSIG)", e))?;
    if sc(nr::GETPPID, 0, 0, 0, 0, 0).unwrap_or(0) != parent {
        return Err(fail(
            "pdeathsig",
            "the parent exited before the sandbox was ready",
            sys::ENOENT,
        ));
    }
    // 3. own session: no controlling terminal (TIOCSTI), and the command
    // leads the process group every signal of the supervisor reaches.
    if t.flags & FLAG_NEW_SESSION != 0 {
        let me = sc(nr::GETPID, 0, 0, 0, 0, 0).unwrap_or(0);
        if sc(nr::GETSID, 0, 0, 0, 0, 0) != Ok(me) {
            sc(nr::SETSID, 0, 0, 0, 0, 0).map_err(|e| fail("setsid", "setsid", e))?;
        }
    }
    // 4. inherited fds: everything above 2 closes on exec.
    close_inherited_fds()?;
    // 5. resource limits (while the capabilities to lower hard ones exist).
    let mut rl = Reader {
        b: t.rlimits,
        pos: 0,
    };
    for _ in 0..t.nrlimits {
        let resource = rl.u32()? as usize;
        let lim = [rl.u64()?, rl.u64()?];
        sc(nr::PRLIMIT64, 0, resource, lim.as_ptr() as usize, 0, 0)
            .map_err(|e| fail("setrlimit", "prlimit64", e))?;
    }
    // The PID namespace's pid_max (Linux 6.14+, needs CAP_SYS_ADMIN in the
    // sandbox's user namespace): the process limit that binds uid 0 too.
    if t.pid_max != 0 {
        set_pid_max(t.pid_max)?;
    }
    // Each tmpfs's inode limit (bubblewrap cannot set one).
    let mut rm = Reader {
        b: t.remounts,
        pos: 0,
    };
    let mut own_ns = false;
    for _ in 0..t.nremounts {
        let flags = rm.u64()? as usize;
        let dst = rm.cstring()?;
        let data = rm.cstring()?;
        let fresh = rm.cstring()?;
        match sc(nr::MOUNT, 0, dst as usize, 0, flags, data as usize) {
            Ok(_) => {}
            // An unprivileged caller's bubblewrap keeps its mounts in a user
            // namespace above the sandbox's (it switches to the caller's
            // uid in a nested one): no remount there. A fresh tmpfs with
            // the limit goes over an empty one instead, in a mount
            // namespace of the sandbox's user namespace (made once).
            Err(sys::EPERM) if sc(nr::GETUID, 0, 0, 0, 0, 0) != Ok(0) => {
                // SAFETY: a NUL-terminated string in the tail.
                if unsafe { *fresh } == 0 {
                    continue;
                }
                own_mount_ns(&mut own_ns, "tmpfs limits")?;
                sc(
                    nr::MOUNT,
                    c"tmpfs".as_ptr() as usize,
                    dst as usize,
                    c"tmpfs".as_ptr() as usize,
                    sys::MS_NOSUID | sys::MS_NODEV,
                    fresh as usize,
                )
                .map_err(|e| fail("tmpfs limits", "mounting a tmpfs with nr_inodes", e))?;
            }
            Err(e) => return Err(fail("tmpfs limits", "remounting a tmpfs with nr_inodes", e)),
        }
    }
    // The view's last mounts, on top of everything bubblewrap made.
    view_mounts(t, &mut own_ns)?;
    // 6. capabilities.
    drop_capabilities()?;
    // 7. Landlock.
    let lock = landlock(Reader {
        b: t.landlock,
        pos: 0,
    })?;
    // 8. signals: defaults (Rust ignores SIGPIPE; a forked child inherits
    // handlers until exec, ignored signals even past it), empty mask.
    let dfl = [0u64; 4];
    for sig in [13usize, 25, 2, 15, 1, 3] {
        sc(nr::RT_SIGACTION, sig, dfl.as_ptr() as usize, 0, 8, 0)
            .map_err(|e| fail("signals", "rt_sigaction", e))?;
    }
    let empty = 0u64;
    sc(
        nr::RT_SIGPROCMASK,
        sys::SIG_SETMASK,
        &empty as *const u64 as usize,
        0,
        8,
        0,
    )
    .map_err(|e| fail("signals", "rt_sigprocmask", e))?;
    // 9. seccomp last.
    if !t.seccomp.is_empty() {
        // struct sock_fprog: u16 len, then a pointer (8-aligned).
        let prog: [usize; 2] = [t.seccomp.len() / 8, t.seccomp.as_ptr() as usize];
        if t.flags & FLAG_NOTIFY != 0 {
            // The bridge would ask the supervisor about its own connect to
            // the proxy; and, forked from here, its memory is not one the
            // supervisor may read on native (PID 1's, not dumpable). It
            // starts now and installs the same program without the
            // supervisor's part (what it had before this check existed).
            if t.bridge_port != 0 {
                bridge::start(t.bridge_port, t.bridge_socket, Some(t.seccomp))?;
            }
            install_notify(&prog, status_fd, handoff)?;
            return Ok(lock);
        }
        sc(
            nr::SECCOMP,
            sys::SECCOMP_SET_MODE_FILTER,
            0,
            prog.as_ptr() as usize,
            0,
            0,
        )
        .map_err(|e| fail("seccomp", "seccomp(SECCOMP_SET_MODE_FILTER)", e))?;
    }
    Ok(lock)
}

fn status_failed(status_fd: i32, f: &Fail) -> Buf {
    let mut msg = Buf::new();
    msg.str(f.what);
    if let Some(p) = f.path {
        // SAFETY: paths come NUL-terminated from the buffer.
        msg.str(" ").push(unsafe { cstr(p) });
    }
    msg.str(": ");
    out::errno(&mut msg, f.errno);
    if status_fd >= 0 {
        let mut line = Buf::new();
        line.str("{\"event\":\"failed\",\"stage\":\"")
            .json_str(f.stage.as_bytes())
            .str("\",\"message\":\"")
            .json_str(msg.as_bytes())
            .str("\"}\n");
        sys::write_all(status_fd, line.as_bytes());
    }
    msg
}

fn status_ready(status_fd: i32, lock: Lock, seccomp: bool) {
    if status_fd < 0 {
        return;
    }
    let mut line = Buf::new();
    line.str("{\"event\":\"ready\",\"landlock\":{\"level\":\"");
    match lock {
        Lock::Full => line.str("full\",\"detail\":null"),
        Lock::Partial(abi) => line
            .str("partial\",\"detail\":\"the kernel's Landlock ABI ")
            .num(abi)
            .str(" lacks rights or scopes asked for\""),
        Lock::None(why, e) => {
            line.str("none\",\"detail\":\"").str(why);
            if e != 0 {
                line.str(": ");
                out::errno(&mut line, e);
            }
            line.str("\"")
        }
    };
    line.str("},\"seccomp\":")
        .str(if seccomp { "true" } else { "false" })
        .str("}\n");
    sys::write_all(status_fd, line.as_bytes());
}

/// `execve` one path.
fn execve(path: *const u8, argv: *const usize, envp: *const usize) -> i32 {
    match sc(
        nr::EXECVE,
        path as usize,
        argv as usize,
        envp as usize,
        0,
        0,
    ) {
        Ok(_) => sys::EINVAL, // execve does not return on success
        Err(e) => e,
    }
}

/// A file the kernel refused as not executable: run it with `/bin/sh`, as
/// glibc's execvpe does (argv[-1] is the spare slot).
fn exec_script(t: &Tail, path: *const u8) -> i32 {
    // SAFETY: the spare slot in front of argv and argv[0] are ours.
    unsafe {
        let orig = t.argv.read_unaligned();
        t.argv.sub(1).write_unaligned(c"/bin/sh".as_ptr() as usize);
        t.argv.write_unaligned(path as usize);
        let e = execve(c"/bin/sh".as_ptr().cast(), t.argv.sub(1), t.envp);
        t.argv.write_unaligned(orig);
        e
    }
}

/// `execvpe`: argv[0] with a slash directly, else each `PATH` entry of the
/// command's environment (glibc's `/bin:/usr/bin` without one). Returns the
/// errno when nothing could be executed.
fn exec(t: &Tail) -> i32 {
    // SAFETY: argv[0] is a valid string pointer (argc >= 1).
    let name = unsafe { cstr(t.argv.read_unaligned() as *const u8) };
    if name.contains(&b'/') {
        let e = execve(name.as_ptr(), t.argv, t.envp);
        return if e == sys::ENOEXEC {
            exec_script(t, name.as_ptr())
        } else {
            e
        };
    }
    let mut path: &[u8] = b"/bin:/usr/bin";
    for i in 0..t.envc {
        // SAFETY: envp[i] is a valid string pointer.
        let kv = unsafe { cstr(t.envp.add(i).read_unaligned() as *const u8) };
        if let Some(v) = kv.strip_prefix(b"PATH=") {
            path = v;
        }
    }
    let mut seen_eacces = false;
    let mut last = sys::ENOENT;
    let mut buf = [0u8; 4096];
    for dir in path.split(|b| *b == b':') {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let len = dir.len() + 1 + name.len();
        if len + 1 > buf.len() {
            last = 36; // ENAMETOOLONG
            continue;
        }
        buf[..dir.len()].copy_from_slice(dir);
        buf[dir.len()] = b'/';
        buf[dir.len() + 1..len].copy_from_slice(name);
        buf[len] = 0;
        let e = match execve(buf.as_ptr(), t.argv, t.envp) {
            sys::ENOEXEC => exec_script(t, buf.as_ptr()),
            e => e,
        };
        match e {
            sys::EACCES => seen_eacces = true,
            // Not here: try the next entry.
            sys::ENOENT | 20 | 116 | 19 | 110 => {} // ENOTDIR ESTALE ENODEV ETIMEDOUT
            e => return e,
        }
        last = e;
    }
    if seen_eacces {
        sys::EACCES
    } else {
        last
    }
}

/// Run the tail encoded in `buf` (8-aligned; its pointer slots are filled
/// in), reporting on `status_fd` (-1: none). Does not return when the
/// command starts; otherwise returns the exit code (125 setup, 126 cannot
/// execute, 127 not found) after reporting why.
pub fn run(buf: &mut [u8], status_fd: i32) -> i32 {
    run_with(buf, status_fd, None, -1)
}

/// [`run`], for a caller that shares this process's fd table and memory
/// and is suspended until the exec (the native backend's PID 1): a
/// seccomp listener is not sent from here but left open, its number and
/// the diagnostics socket's in `handoff`, for the caller to send with
/// [`send_listener`] once the command runs. `cgroup` (`-1`: none): the
/// run's cgroup fd the caller received after the tail was encoded, joined
/// in its place (a tail that names one of its own is refused).
pub(crate) fn run_with(
    buf: &mut [u8],
    status_fd: i32,
    handoff: Option<&mut [i32; 2]>,
    cgroup: i32,
) -> i32 {
    let t = match decode(buf).and_then(|mut t| {
        if cgroup >= 0 {
            if t.cgroup_fd >= 0 {
                return Err(fail("cgroup", "a second cgroup for the tail", sys::EINVAL));
            }
            t.cgroup_fd = cgroup;
        }
        Ok(t)
    }) {
        Ok(t) => t,
        Err(f) => {
            let msg = status_failed(status_fd, &f);
            if status_fd < 0 {
                let mut line = Buf::new();
                line.str("zot: sandbox setup failed: ")
                    .push(msg.as_bytes())
                    .str("\n");
                sys::write_all(2, line.as_bytes());
            }
            return EXIT_SETUP;
        }
    };
    let lock = match harden(&t, status_fd, handoff).and_then(|l| {
        // (With the supervisor's check, harden started it already.)
        if t.bridge_port != 0 && t.flags & FLAG_NOTIFY == 0 {
            bridge::start(t.bridge_port, t.bridge_socket, None)?;
        }
        Ok(l)
    }) {
        Ok(l) => l,
        Err(f) => {
            let msg = status_failed(status_fd, &f);
            if status_fd < 0 {
                let mut line = Buf::new();
                line.str("zot: sandbox setup failed: ")
                    .push(msg.as_bytes())
                    .str("\n");
                sys::write_all(2, line.as_bytes());
            }
            return EXIT_SETUP;
        }
    };
    status_ready(status_fd, lock, !t.seccomp.is_empty());
    let e = exec(&t);
    // SAFETY: argv[0] is a valid string pointer.
    let name = unsafe { cstr(t.argv.read_unaligned() as *const u8) };
    if status_fd >= 0 {
        let mut msg = Buf::new();
        msg.push(name).str(": ");
        out::errno(&mut msg, e);
        let mut line = Buf::new();
        line.str("{\"event\":\"exec-failed\",\"errno\":")
            .int(i64::from(e))
            .str(",\"message\":\"")
            .json_str(msg.as_bytes())
            .str("\"}\n");
        sys::write_all(status_fd, line.as_bytes());
    }
    let mut line = Buf::new();
    if e == sys::ENOENT {
        line.str("zot: ").push(name).str(": command not found\n");
        sys::write_all(2, line.as_bytes());
        EXIT_NOT_FOUND
    } else {
        line.str("zot: cannot execute ").push(name).str(": ");
        out::errno(&mut line, e);
        line.str("\n");
        sys::write_all(2, line.as_bytes());
        EXIT_CANNOT_EXEC
    }
}

#[cfg(all(test, not(zot_stub)))]
mod tests;
