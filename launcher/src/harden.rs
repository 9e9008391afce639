//! Process hardening steps of the launcher, in order.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal};

use crate::landlock_rules::{self, LandlockReport};
use crate::{seccomp, sys, LaunchError, LaunchSpec};

pub(crate) fn set_cloexec(fd: RawFd) -> nix::Result<()> {
    // SAFETY: fcntl on an integer fd has no memory-safety requirements.
    let r = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Errno::result(r).map(drop)
}

/// Number of threads of this process (from /proc/self/status; 1 when /proc
/// is not mounted yet, as the native backend's early stage may see).
pub(crate) fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Threads:")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(1)
}

/// Every step between entering the namespaces and `execve`.
pub(crate) fn harden(spec: &LaunchSpec) -> Result<(LandlockReport, bool), LaunchError> {
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
    // user's terminal (seccomp blocks it too).
    let me = nix::unistd::getpid();
    if nix::unistd::getsid(None).map_err(sys("getsid"))? != me {
        nix::unistd::setsid().map_err(sys("setsid"))?;
    }

    // 4. inherited fds: everything above 2 closes on exec.
    close_inherited_fds().map_err(sys("close fds"))?;

    // 5. the environment, exactly as the supervisor computed it.
    set_environment(spec)?;

    // 6. capabilities: bounding set, ambient, then the rest.
    drop_capabilities()?;

    // 7. Landlock.
    let landlock = landlock_rules::apply(spec)?;

    // 8. signals: Rust ignores SIGPIPE; children must get the default.
    reset_signals().map_err(sys("signals"))?;

    // 9. seccomp last.
    seccomp::install(&spec.seccomp)?;
    Ok((landlock, true))
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

fn set_environment(spec: &LaunchSpec) -> Result<(), LaunchError> {
    // Single-threaded here (checked before), so mutating the environment is sound.
    let old: Vec<_> = std::env::vars_os().map(|(k, _)| k).collect();
    for k in old {
        // SAFETY: the launcher is single-threaded (checked in `launch`).
        unsafe { std::env::remove_var(k) };
    }
    for (k, v) in &spec.env {
        if k.is_empty()
            || k.as_bytes().contains(&b'=')
            || k.as_bytes().contains(&0)
            || v.as_bytes().contains(&0)
        {
            return Err(LaunchError::Nul);
        }
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
    Ok(())
}

fn drop_capabilities() -> Result<(), LaunchError> {
    use caps::CapSet;
    caps::clear(None, CapSet::Ambient).map_err(LaunchError::Caps)?;
    let bounding = caps::read(None, CapSet::Bounding).map_err(LaunchError::Caps)?;
    let root = nix::unistd::geteuid().is_root() || nix::unistd::getuid().is_root();
    for cap in bounding {
        if let Err(e) = caps::drop(None, CapSet::Bounding, cap) {
            // Without CAP_SETPCAP the bounding set cannot shrink. For a
            // non-root uid that is harmless under no_new_privs (exec grants
            // nothing); for uid 0 it would hand the caps back: fail closed.
            if root {
                let _ = e;
                return Err(LaunchError::BoundingSet(cap.to_string()));
            }
        }
    }
    caps::clear(None, CapSet::Inheritable).map_err(LaunchError::Caps)?;
    caps::clear(None, CapSet::Effective).map_err(LaunchError::Caps)?;
    caps::clear(None, CapSet::Permitted).map_err(LaunchError::Caps)?;
    Ok(())
}

fn reset_signals() -> nix::Result<()> {
    let dfl = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for sig in [Signal::SIGPIPE, Signal::SIGXFSZ] {
        // SAFETY: installing SIG_DFL is always sound.
        unsafe { sigaction(sig, &dfl) }?;
    }
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
}

/// `execvp` the command with the current (clean) environment. Returns the
/// errno only when exec failed.
pub(crate) fn exec(spec: &LaunchSpec) -> Result<Errno, LaunchError> {
    let argv: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| LaunchError::Nul))
        .collect::<Result<_, _>>()?;
    let err = match nix::unistd::execvp(&argv[0], &argv) {
        Ok(never) => match never {},
        Err(e) => e,
    };
    Ok(err)
}
