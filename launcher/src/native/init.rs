//! Entering the plan's namespaces: one `clone` makes the sandbox's PID 1
//! inside all of them at once (or, started ahead of its plan, inside the
//! user and pid namespaces, and PID 1 unshares the rest); it maps its own
//! uid and gid, brings loopback up, builds the view, then forks the command.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::plan::Namespace;
use crate::{ChildStdio, Forked, LaunchError, Prepared, StatusPipe, EXIT_SETUP};

use super::reaper::{self, exit_now, Forward};
use super::{mount, NativeError};

fn errno() -> io::Error {
    io::Error::last_os_error()
}

fn set_pdeathsig() -> Result<(), NativeError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(NativeError::sys("prctl(PR_SET_PDEATHSIG)")(errno()));
    }
    Ok(())
}

fn write_proc(path: &str, data: &str) -> Result<(), NativeError> {
    std::fs::write(path, data).map_err(NativeError::path("writing", Path::new(path)))
}

/// A step name for a failed `clone` into new namespaces, by errno.
fn clone_step(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::ENOSPC) => {
            "creating user namespaces (limit reached: raise user.max_user_namespaces)"
        }
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "creating user namespaces (denied: check kernel.apparmor_restrict_unprivileged_userns, kernel.unprivileged_userns_clone or the container's seccomp profile)"
        }
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            "creating user namespaces (kernel without CONFIG_USER_NS / namespace support)"
        }
        _ => "clone into new user, mount, pid, ipc, uts, cgroup and net namespaces",
    }
}

/// What PID 1 builds: the plan it is cloned with, or (cloned ahead of its
/// plan, into the user and pid namespaces only) the namespaces `flags` and
/// the view's first mounts `base`, which it makes itself while the caller
/// plans, and the rest of the view it then reads from the launch data
/// ([`AheadView`]).
pub(crate) enum View<'a> {
    Known(&'a Prepared),
    Ahead {
        flags: libc::c_int,
        base: &'a [crate::plan::MountOp],
    },
}

/// The view PID 1 cloned ahead of its plan reads first from the launch
/// data (a native-endian `u32` length, then this in JSON); the encoded
/// tail follows to EOF.
/// Borrowed from the plan when sent, owned when read.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct AheadView<'a> {
    /// The plan's namespaces: PID 1 refuses a plan whose namespaces are
    /// not the ones it made.
    pub flags: libc::c_int,
    /// The plan's mounts, all of them: PID 1 refuses a plan whose mounts
    /// do not begin with those it made ahead.
    pub mounts: std::borrow::Cow<'a, [crate::plan::MountOp]>,
    pub cwd: std::borrow::Cow<'a, Path>,
}

/// The namespaces a clone makes at once when PID 1 starts ahead of its
/// plan: the user namespace (whose capabilities make the rest) and the pid
/// namespace (only a clone makes its PID 1). The others cost most (a
/// network namespace alone about half a millisecond): PID 1 unshares them.
pub(crate) const AHEAD_CLONE: libc::c_int = libc::CLONE_NEWUSER | libc::CLONE_NEWPID;

/// Clone the sandbox's PID 1 into the plan's namespaces. The caller must be
/// single-threaded. In the fork path `stdio` wires the child's streams.
pub(crate) fn spawn_pid1(
    view: View<'_>,
    status_fd: RawFd,
    stdio: Option<ChildStdio>,
    tail_pipe: Option<(OwnedFd, OwnedFd)>,
) -> Result<(Forked, Option<OwnedFd>), LaunchError> {
    let wrap = LaunchError::Native;
    let wanted = match &view {
        View::Known(prep) => prep.plan().clone_flags(),
        View::Ahead { flags, .. } => *flags,
    };
    let needed = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if wanted & needed != needed {
        return Err(LaunchError::Unsupported(
            "the native backend needs a plan with user, mount and pid namespaces",
        ));
    }
    // SAFETY: plain getters.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    // Liveness pipe: PID 1 sees POLLHUP when the caller is gone before its
    // pdeathsig is armed.
    let mut fds = [0; 2];
    // SAFETY: valid array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(wrap(NativeError::sys("pipe")(errno())));
    }
    // SAFETY: fresh fds we own.
    let (alive_rd, alive_wr) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Started without an exec (`stdio`): PID 1 reports the code on a pipe
    // before its exit tears the namespaces down, so the caller need not wait
    // for that.
    let done = match stdio {
        Some(_) => {
            let mut fds = [0; 2];
            // SAFETY: valid array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(wrap(NativeError::sys("pipe")(errno())));
            }
            // SAFETY: fresh fds we own.
            Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        }
        None => None,
    };
    let flags = match &view {
        View::Known(_) => wanted,
        View::Ahead { .. } => AHEAD_CLONE,
    } | libc::SIGCHLD;
    // Cloned ahead of its plan, PID 1 works while this process plans: on
    // another core. A new task starts on its parent's core, where it waits
    // for the planning parent to block (or preempts it). Both move it right
    // after the clone (whichever runs first); it gets every allowed core
    // back once it has read its view (the parent, which wrote it, has moved
    // it by then), before it starts anything.
    let spread_to = match &view {
        View::Ahead { .. } => crate::other_cores(),
        View::Known(_) => None,
    };
    let spread = spread_to.as_ref().map(|(all, _)| *all);
    // PID 1 starts with every signal blocked: until it catches them itself
    // a signal would run the caller's handler in PID 1's copy (and be lost
    // there); blocked, it waits for PID 1's own.
    let mask = reaper::block_all();
    // SAFETY: a fork-like clone (no new stack, no CLONE_VM) of a
    // single-threaded process; the child only runs `pid1` and exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0 as libc::c_ulong,
        )
    } as libc::pid_t;
    if pid == 0 {
        // Held until the command runs (see `pid1`), then passed on to it.
        reaper::hold_signals();
        if let Some((_, other)) = &spread_to {
            // SAFETY: our own affinity, from a mask we made.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), other) };
        }
    }
    if pid > 0 {
        if let Some((_, other)) = &spread_to {
            // SAFETY: our child's affinity, from a mask we made.
            unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), other) };
        }
    }
    reaper::set_mask(&mask);
    if pid < 0 {
        let e = errno();
        return Err(wrap(NativeError::sys(clone_step(&e))(e)));
    }
    let (tail_rx, tail_tx) = match tail_pipe {
        Some((rx, tx)) => (Some(rx), Some(tx)),
        None => (None, None),
    };
    if pid == 0 {
        drop(alive_wr);
        // Only the caller writes the launch data: EOF ends it.
        drop(tail_tx);
        let done_wr = done.map(|(r, w)| {
            drop(r);
            w
        });
        // SAFETY: our status fd (close-on-exec), owned by this child now.
        let mut status =
            StatusPipe((status_fd >= 0).then(|| unsafe { File::from_raw_fd(status_fd) }));
        let code = match pid1(
            view,
            spread,
            stdio,
            alive_rd,
            done_wr,
            tail_rx,
            &uid_map,
            &gid_map,
            &mut status,
        ) {
            Ok(code) => code,
            Err(e) => {
                status.fail(&wrap(e));
                EXIT_SETUP
            }
        };
        exit_now(code);
    }
    drop(alive_rd);
    drop(tail_rx);
    Ok((
        Forked {
            pid,
            alive: Some(alive_wr),
            done: done.map(|(r, _w)| r),
        },
        tail_tx,
    ))
}

/// The outer launcher (exec path): forward signals to PID 1, wait for it and
/// return its code.
pub(crate) fn outer_wait(forked: Forked) -> i32 {
    // Keep only stdio and the liveness pipe.
    let keep = forked.alive.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    close_from(3, keep);
    reaper::forward_to(Forward::Process(forked.pid));
    let code = reaper::wait_status(forked.pid);
    drop(forked.alive);
    code
}

fn close_from(first: libc::c_uint, keep: Option<libc::c_int>) {
    // SAFETY: closing fds we own; no Rust object refers to them afterwards
    // (this process only waits and exits).
    unsafe {
        match keep {
            Some(k) if k as libc::c_uint >= first => {
                if k as libc::c_uint > first {
                    libc::syscall(libc::SYS_close_range, first, k as libc::c_uint - 1, 0);
                }
                libc::syscall(libc::SYS_close_range, k as libc::c_uint + 1, u32::MAX, 0);
            }
            _ => {
                libc::syscall(libc::SYS_close_range, first, u32::MAX, 0);
            }
        }
    }
}

/// `ip link set lo up` in the new network namespace (the kernel then gives
/// it 127.0.0.1 and ::1), as bubblewrap does.
fn loopback_up() -> Result<(), NativeError> {
    // SAFETY: a socket we close below; ifreq is plain data.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(NativeError::sys("socket for loopback setup")(errno()));
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let r = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) != 0 {
            Err(errno())
        } else {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) != 0 {
                Err(errno())
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        r.map_err(NativeError::sys("bringing loopback up"))
    }
}

/// The view a PID 1 cloned ahead of its plan reads first (see
/// [`AheadView`]).
fn read_view(rx: Option<&mut File>) -> Result<AheadView<'static>, NativeError> {
    use std::io::Read;
    let rx = rx.ok_or_else(|| NativeError::Invalid("no launch data from the caller".into()))?;
    let mut len = [0u8; 4];
    rx.read_exact(&mut len)
        .map_err(NativeError::sys("reading the launch data"))?;
    let len = u32::from_ne_bytes(len) as usize;
    if len > 64 << 20 {
        return Err(NativeError::Invalid(format!("launch data of {len} bytes")));
    }
    let mut json = vec![0u8; len];
    rx.read_exact(&mut json)
        .map_err(NativeError::sys("reading the launch data"))?;
    serde_json::from_slice(&json)
        .map_err(|e| NativeError::Invalid(format!("the launch data's view: {e}")))
}

/// The byte that carries the run's cgroup (or says there is none) to a
/// PID 1 made ahead, on the status socket.
pub(crate) const CGROUP_MESSAGE: u8 = b'c';

/// PID 1 made ahead: the run's cgroup, sent by the caller on the status
/// socket before the view (`None`: the run has none). The command's
/// process joins it first thing in the tail, as it joins one named there;
/// PID 1 stays out (it exits after the run, and would hold the group
/// until then). No message (the caller is gone) or another one fails.
fn receive_cgroup(status: &StatusPipe) -> Result<Option<OwnedFd>, NativeError> {
    use std::os::fd::AsRawFd;
    let fd =
        status.0.as_ref().map(|f| f.as_raw_fd()).ok_or_else(|| {
            NativeError::Invalid("no status socket to read the cgroup from".into())
        })?;
    let mut byte = [0u8; 1];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let failed = |e: nix::errno::Errno| NativeError::sys("receiving the run's cgroup")(e.into());
    let (bytes, mut got) = {
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let msg = loop {
            match nix::sys::socket::recvmsg::<()>(
                fd,
                &mut iov,
                Some(&mut space),
                nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                r => break r.map_err(failed)?,
            }
        };
        let mut got = Vec::new();
        for c in msg.cmsgs().map_err(failed)? {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: received just now, ours alone.
                got.extend(fds.into_iter().map(|f| unsafe { OwnedFd::from_raw_fd(f) }));
            }
        }
        (msg.bytes, got)
    };
    if bytes != 1 || byte[0] != CGROUP_MESSAGE || got.len() > 1 {
        return Err(NativeError::Invalid(
            "the caller sent no cgroup message".into(),
        ));
    }
    Ok(got.pop())
}

/// What the command's process needs, prepared by PID 1 before the clone,
/// and what it leaves PID 1.
struct CommandStart {
    tail: Vec<u8>,
    status_fd: libc::c_int,
    /// A seccomp listener and the diagnostics socket, for PID 1 to send
    /// once the command has exec'd (`-1`: none).
    notify: [libc::c_int; 2],
    /// The run's cgroup, received after the tail was encoded: the tail
    /// joins it (and closes it) first (`-1`: none, or named in the tail).
    cgroup: libc::c_int,
}

/// The command's process: a vfork-like child (shared memory and fd
/// table, PID 1 waits until it execs) that runs only the tail, which makes
/// raw syscalls and touches nothing but its own buffer and stack. No
/// page-table copy. Its exec gives the command a table of its own, without
/// what the tail left close-on-exec (everything but stdio).
extern "C" fn command_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the CommandStart PID 1 keeps alive while suspended.
    let start = unsafe { &mut *(arg as *mut CommandStart) };
    // SAFETY: prctl/getppid with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::getppid() != 1
        {
            libc::_exit(EXIT_SETUP);
        }
    }
    crate::tail::run_with(
        &mut start.tail,
        start.status_fd,
        Some(&mut start.notify),
        start.cgroup,
    )
}

/// Start the command's process (see [`command_main`]); when the tail made
/// a seccomp listener, send it to the supervisor once the command runs.
fn spawn_command(
    tail: Vec<u8>,
    cgroup: Option<OwnedFd>,
    status: &StatusPipe,
) -> Result<libc::pid_t, NativeError> {
    use std::os::fd::{AsRawFd, IntoRawFd};
    let mut start = CommandStart {
        tail,
        status_fd: status.0.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1),
        notify: [-1, -1],
        // The tail closes it, in the fd table it shares with this process.
        cgroup: cgroup.map_or(-1, |fd| fd.into_raw_fd()),
    };
    // The tail's own stack: its buffers plus headroom.
    let mut stack = vec![0u8; 256 * 1024];
    // SAFETY: the top of our buffer, 16-aligned.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) };
    let top = (top as usize & !15) as *mut libc::c_void;
    // SAFETY: CLONE_VM|CLONE_VFORK: this process is suspended until the
    // child execs or exits, so `start` and `stack` outlive its use of them.
    // CLONE_FILES: what the tail opens (the listener) is in this table
    // too, and stays here when the exec gives the command its own.
    let pid = unsafe {
        libc::clone(
            command_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD,
            &mut start as *mut CommandStart as *mut libc::c_void,
        )
    };
    if pid < 0 {
        return Err(NativeError::sys("starting the sandboxed process")(errno()));
    }
    drop(stack);
    if start.notify[0] >= 0 {
        // A notified call the command makes meanwhile waits in the queue.
        // Not sent: the command must not run unchecked or stuck.
        if let Err(e) = crate::tail::send_listener(start.status_fd, start.notify) {
            // SAFETY: our child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(NativeError::sys(
                "passing the notification listener to the supervisor",
            )(io::Error::from_raw_os_error(e)));
        }
    }
    Ok(pid)
}

/// PID 1, right after `clone`: returns the exit code to leave with.
#[allow(clippy::too_many_arguments)]
fn pid1(
    view: View<'_>,
    cores: Option<libc::cpu_set_t>,
    stdio: Option<ChildStdio>,
    alive_rd: OwnedFd,
    done: Option<OwnedFd>,
    tail_rx: Option<OwnedFd>,
    uid_map: &str,
    gid_map: &str,
    status: &mut StatusPipe,
) -> Result<i32, NativeError> {
    use std::os::fd::AsRawFd;
    set_pdeathsig()?;
    let mut pfd = libc::pollfd {
        fd: alive_rd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling our pipe without waiting.
    if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
        exit_now(EXIT_SETUP); // the caller is already gone
    }
    drop(alive_rd);
    if let Some(stdio) = stdio {
        stdio
            .apply()
            .map_err(NativeError::sys("setting up stdio"))?;
        // Own process group: the terminal's signals reach the supervisor,
        // which forwards them once.
        // SAFETY: plain syscall.
        unsafe { libc::setpgid(0, 0) };
    }
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", uid_map)?;
    write_proc("/proc/self/gid_map", gid_map)?;
    // Not dumpable: started without an exec, PID 1 holds a copy of the
    // caller's memory and environment; the command (same uid) must not read
    // them through /proc/1 (Landlock's ptrace scoping also stops it where
    // the kernel has Landlock). After the maps: they are written through
    // /proc/self, which a non-dumpable process no longer owns.
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(NativeError::sys("prctl(PR_SET_DUMPABLE)")(errno()));
    }
    let mut rx = tail_rx.map(File::from);
    let known = match &view {
        View::Known(prep) => Some(*prep),
        View::Ahead { .. } => None,
    };
    let ahead;
    let mut cgroup = None;
    let (mounts, cwd) = match view {
        View::Known(prep) => {
            let plan = prep.plan();
            if plan.has(Namespace::Net) {
                loopback_up()?;
            }
            mount::stage()?;
            (&plan.mounts[..], plan.cwd.as_path())
        }
        View::Ahead { flags, base } => {
            // SAFETY: plain syscall; this process is single-threaded.
            if unsafe { libc::unshare(flags & !AHEAD_CLONE) } != 0 {
                let e = errno();
                return Err(NativeError::sys(clone_step(&e))(e));
            }
            if flags & libc::CLONE_NEWNET != 0 {
                loopback_up()?;
            }
            mount::stage()?;
            mount::apply_all(base)?;
            // Then the plan's view: everything above ran while the caller
            // planned.
            ahead = read_view(rx.as_mut())?;
            cgroup = receive_cgroup(status)?;
            if let Some(all) = &cores {
                // SAFETY: our own affinity, from the caller's mask.
                if unsafe {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), all)
                } != 0
                {
                    return Err(NativeError::sys("restoring the cpu affinity")(errno()));
                }
            }
            if ahead.flags != flags {
                return Err(NativeError::Invalid(format!(
                    "the plan's namespaces ({:#x}) are not those made ahead of it ({flags:#x})",
                    ahead.flags
                )));
            }
            if !ahead.mounts.starts_with(base) {
                return Err(NativeError::Invalid(
                    "the plan's mounts do not begin with those made ahead of it".into(),
                ));
            }
            (&ahead.mounts[base.len()..], &*ahead.cwd)
        }
    };
    mount::apply_all(mounts)?;
    mount::enter()?;
    if std::env::set_current_dir(cwd).is_err() {
        return Err(NativeError::Invalid(format!(
            "working directory {} is not visible in the sandbox",
            cwd.display()
        )));
    }
    // With a proxied network the tail starts the bridge, under the
    // command's own restrictions.
    let tail = match rx {
        // Compiled by the caller meanwhile.
        Some(mut rx) => {
            let mut t = Vec::new();
            std::io::Read::read_to_end(&mut rx, &mut t)
                .map_err(NativeError::sys("reading the launch data"))?;
            if t.is_empty() {
                return Err(NativeError::Invalid(
                    "no launch data from the caller".into(),
                ));
            }
            t
        }
        None => match known {
            Some(prep) => prep
                .tail()
                .map_err(|e| NativeError::Invalid(crate::error_chain(&e)))?
                .into_owned(),
            None => {
                return Err(NativeError::Invalid(
                    "no launch data from the caller".into(),
                ))
            }
        },
    };
    let child = spawn_command(tail, cgroup, status)?;
    // What came during the start-up first.
    reaper::forward_to(Forward::Group(child));
    // PID 1 keeps no stream of the command open (a reader sees EOF when the
    // command's tree is gone), only its report pipe.
    close_from(0, done.as_ref().map(|d| d.as_raw_fd()));
    let code = reaper::reap(child);
    if let Some(done) = done {
        // Everything in the namespace is reaped: the caller may go on while
        // this exit frees the namespaces.
        let mut f = File::from(done);
        let _ = std::io::Write::write_all(&mut f, &code.to_ne_bytes());
    }
    Ok(code)
}
