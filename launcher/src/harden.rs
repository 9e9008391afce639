//! The last steps before `execve`, the same on every backend, in order.

use std::os::fd::RawFd;

use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal};

use crate::landlock_rules::{self, LandlockReport};
use crate::{
    seccomp, sys, LaunchError, LaunchStatus, Prepared, StatusPipe, EXIT_CANNOT_EXEC,
    EXIT_NOT_FOUND, EXIT_SETUP,
};

pub(crate) fn set_cloexec(fd: RawFd) -> nix::Result<()> {
    // SAFETY: fcntl on an integer fd has no memory-safety requirements.
    let r = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Errno::result(r).map(drop)
}

/// Harden this process as `prep`'s plan says, report on `status` and
/// `execve` the command. Returns only on failure, with the exit code (125
/// setup, 126 cannot execute, 127 not found), after reporting it.
pub(crate) fn harden_and_exec(prep: &Prepared, status: &mut StatusPipe) -> i32 {
    let landlock = match harden(prep) {
        Ok(l) => l,
        Err(e) => {
            status.fail(&e);
            return EXIT_SETUP;
        }
    };
    status.send(&LaunchStatus::Ready {
        landlock,
        seccomp: prep.plan.seccomp.enabled,
    });
    let errno = exec(prep);
    let program = String::from_utf8_lossy(prep.argv[0].as_bytes()).into_owned();
    let err = std::io::Error::from_raw_os_error(errno as i32);
    let message = format!("{program}: {err}");
    status.send(&LaunchStatus::ExecFailed {
        errno: errno as i32,
        message: message.clone(),
    });
    if errno == Errno::ENOENT {
        eprintln!("zot: {program}: command not found");
        EXIT_NOT_FOUND
    } else {
        eprintln!("zot: cannot execute {message}");
        EXIT_CANNOT_EXEC
    }
}

/// Every step between entering the namespaces and `execve`.
fn harden(prep: &Prepared) -> Result<LandlockReport, LaunchError> {
    let plan = &prep.plan;
    // 1. no_new_privs: no setuid/file-capability gains across exec.
    // SAFETY: prctl with integer arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    Errno::result(r).map_err(sys("no_new_privs"))?;

    // 2. die with the parent, then make sure the parent did not die first.
    let parent = nix::unistd::getppid();
    // SAFETY: prctl with integer arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    Errno::result(r).map_err(sys("pdeathsig"))?;
    if nix::unistd::getppid() != parent {
        return Err(LaunchError::ParentGone);
    }

    // 3. own session: no controlling terminal, so TIOCSTI cannot reach the
    // user's terminal (seccomp blocks it too); the command leads its group.
    let me = nix::unistd::getpid();
    if nix::unistd::getsid(None).map_err(sys("getsid"))? != me {
        nix::unistd::setsid().map_err(sys("setsid"))?;
    }

    // 4. inherited fds: everything above 2 closes on exec.
    close_inherited_fds().map_err(sys("close fds"))?;

    // 5. resource limits (before the capabilities go: no raise needs them,
    // but a hard limit is then final).
    for l in &plan.rlimits {
        let lim = libc::rlimit {
            rlim_cur: l.soft.unwrap_or(libc::RLIM_INFINITY),
            rlim_max: l.hard.unwrap_or(libc::RLIM_INFINITY),
        };
        // SAFETY: a valid rlimit struct.
        let r = unsafe { libc::setrlimit(l.resource.raw(), &lim) };
        Errno::result(r).map_err(sys("setrlimit"))?;
    }

    // 6. capabilities: bounding set, ambient, then the rest.
    drop_capabilities()?;

    // 7. Landlock.
    let landlock = landlock_rules::apply(&plan.landlock)?;

    // 8. signals: defaults and an empty mask for the command.
    reset_signals().map_err(sys("signals"))?;

    // 9. seccomp last (compiled before any fork).
    seccomp::install(&prep.seccomp)?;
    Ok(landlock)
}

fn close_inherited_fds() -> nix::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with CLOEXEC only changes fd flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let err = Errno::last();
    if err != Errno::ENOSYS && err != Errno::EINVAL {
        return Err(err);
    }
    // Fallback: walk /proc/self/fd.
    let fds: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map_err(|_| Errno::ENOENT)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        let _ = set_cloexec(fd);
    }
    Ok(())
}

/// Drop every capability: ambient, the bounding set (each index until the
/// kernel says EINVAL), then effective, permitted and inheritable at once.
/// Two syscalls plus one per capability.
fn drop_capabilities() -> Result<(), LaunchError> {
    // SAFETY: prctl/capset with integer arguments and valid structs.
    unsafe {
        // EINVAL: a kernel without ambient capabilities (< 4.3) has none.
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0
            && Errno::last() != Errno::EINVAL
        {
            return Err(sys("capabilities")(Errno::last()));
        }
        let root = libc::geteuid() == 0 || libc::getuid() == 0;
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 {
                continue;
            }
            match Errno::last() {
                Errno::EINVAL => break, // past the kernel's last capability
                // Without CAP_SETPCAP the bounding set cannot shrink. For a
                // non-root uid that is harmless under no_new_privs (exec
                // grants nothing); for uid 0 it would hand the caps back:
                // fail closed.
                Errno::EPERM if !root => continue,
                _ => return Err(LaunchError::BoundingSet(capability_name(cap))),
            }
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
        let mut hdr = Header {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut hdr as *mut Header, data.as_ptr()) != 0 {
            return Err(sys("capabilities")(Errno::last()));
        }
    }
    Ok(())
}

fn capability_name(index: i32) -> String {
    caps::all()
        .into_iter()
        .find(|c| i32::from(c.index()) == index)
        .map(|c| c.to_string())
        .unwrap_or_else(|| format!("capability {index}"))
}

/// Default dispositions for the signals a caller may ignore or handle
/// (Rust ignores SIGPIPE; a forked child inherits the caller's handlers
/// until exec, ignored ones even past it), and an empty mask.
fn reset_signals() -> nix::Result<()> {
    let dfl = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for sig in [
        Signal::SIGPIPE,
        Signal::SIGXFSZ,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        // SAFETY: installing SIG_DFL is always sound.
        unsafe { sigaction(sig, &dfl) }?;
    }
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
}

/// `execvpe` the command with the plan's environment, searching the
/// command's `PATH` (glibc's default path when it has none). Returns the
/// errno only when exec failed.
fn exec(prep: &Prepared) -> Errno {
    use std::os::unix::ffi::OsStrExt;
    let path = prep
        .env
        .iter()
        .find_map(|kv| kv.to_bytes().strip_prefix(b"PATH="));
    // SAFETY: PATH only steers execvpe's search; this process is
    // single-threaded here (checked before the fork or exec that led here).
    unsafe {
        match path {
            Some(p) => std::env::set_var("PATH", std::ffi::OsStr::from_bytes(p)),
            None => std::env::remove_var("PATH"),
        }
    }
    match nix::unistd::execvpe(&prep.argv[0], &prep.argv, &prep.env) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}
