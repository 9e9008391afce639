//! The namespace probe: a forked child tries exactly what the native and
//! bwrap backends need and reports the first failing step through a pipe.

use std::fmt;

use serde::Serialize;

/// The step of the namespace probe that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NsStage {
    /// `unshare(CLONE_NEWUSER)`.
    Unshare,
    /// Writing `setgroups`, `uid_map`, `gid_map`.
    UidMap,
    /// `unshare` of mount, pid, net, ipc and uts namespaces.
    Namespaces,
    /// `mount(MS_REC|MS_PRIVATE)` on `/`.
    MakePrivate,
    /// `fork` of the probe itself.
    Fork,
    /// Mounting a fresh `/proc` in the new PID namespace.
    MountProc,
}

impl fmt::Display for NsStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NsStage::Unshare => "unshare(CLONE_NEWUSER)",
            NsStage::UidMap => "writing uid_map/gid_map",
            NsStage::Namespaces => "unshare of mount/pid/net/ipc/uts namespaces",
            NsStage::MakePrivate => "making mounts private",
            NsStage::Fork => "forking the probe",
            NsStage::MountProc => "mounting /proc",
        })
    }
}

/// Why user namespaces can't be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum UsernsError {
    /// ENOSPC: `user.max_user_namespaces` (here or in a parent) is exhausted or 0.
    #[error("user namespace limit reached (ENOSPC)")]
    LimitReached,
    /// EPERM/EACCES: a policy (AppArmor, sysctl, container seccomp) denies it.
    #[error("{stage} denied: {}", std::io::Error::from_raw_os_error(*errno))]
    Denied { stage: NsStage, errno: i32 },
    /// EINVAL/ENOSYS on unshare: the kernel lacks the feature.
    #[error("user namespaces not supported by the kernel")]
    NotSupported,
    /// Anything else.
    #[error("{stage} failed: {}", std::io::Error::from_raw_os_error(*errno))]
    Failed { stage: NsStage, errno: i32 },
}

fn classify(stage: NsStage, errno: i32) -> UsernsError {
    match (stage, errno) {
        (NsStage::Unshare | NsStage::Namespaces, libc::ENOSPC) => UsernsError::LimitReached,
        (_, libc::EPERM | libc::EACCES) => UsernsError::Denied { stage, errno },
        (NsStage::Unshare, libc::EINVAL | libc::ENOSYS) => UsernsError::NotSupported,
        _ => UsernsError::Failed { stage, errno },
    }
}

const STAGES: [NsStage; 6] = [
    NsStage::Unshare,
    NsStage::UidMap,
    NsStage::Namespaces,
    NsStage::MakePrivate,
    NsStage::Fork,
    NsStage::MountProc,
];

/// Run the probe. `Ok(None)`: everything works. `Ok(Some(e))`: namespaces
/// work but `/proc` can't be mounted. `Err(e)`: namespaces don't work.
pub(crate) fn run() -> Result<Option<UsernsError>, UsernsError> {
    // Everything the child needs is prepared before fork (no allocation after).
    // SAFETY: plain getters.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let p_setgroups = crate::cstring("/proc/self/setgroups");
    let p_uid = crate::cstring("/proc/self/uid_map");
    let p_gid = crate::cstring("/proc/self/gid_map");
    let p_root = crate::cstring("/");
    let p_proc = crate::cstring("/proc");
    let s_proc = crate::cstring("proc");

    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(UsernsError::Failed {
            stage: NsStage::Fork,
            errno: errno(),
        });
    }
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the child only makes async-signal-safe syscalls and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = errno();
        // SAFETY: closing our own fds.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return Err(UsernsError::Failed {
            stage: NsStage::Fork,
            errno: e,
        });
    }
    if pid == 0 {
        // SAFETY: child side; raw syscalls on pre-built buffers only.
        unsafe {
            libc::close(rd);
            let report = |stage: u32, err: i32| -> ! {
                let mut buf = [0u8; 8];
                buf[..4].copy_from_slice(&stage.to_ne_bytes());
                buf[4..].copy_from_slice(&err.to_ne_bytes());
                libc::write(wr, buf.as_ptr().cast(), 8);
                libc::_exit(0)
            };
            let write_file = |path: &std::ffi::CStr, data: &[u8]| -> bool {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return false;
                }
                let n = libc::write(fd, data.as_ptr().cast(), data.len());
                let e = *libc::__errno_location();
                libc::close(fd);
                *libc::__errno_location() = e;
                n == data.len() as isize
            };
            let err = || *libc::__errno_location();
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                report(1, err());
            }
            if !write_file(&p_setgroups, b"deny")
                || !write_file(&p_uid, uid_map.as_bytes())
                || !write_file(&p_gid, gid_map.as_bytes())
            {
                report(2, err());
            }
            let flags = libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS;
            if libc::unshare(flags) != 0 {
                report(3, err());
            }
            if libc::mount(
                std::ptr::null(),
                p_root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                report(4, err());
            }
            let inner = libc::fork();
            if inner < 0 {
                report(5, err());
            }
            if inner == 0 {
                if libc::mount(
                    s_proc.as_ptr(),
                    p_proc.as_ptr(),
                    s_proc.as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0
                {
                    report(6, err());
                }
                report(0, 0);
            }
            let mut st = 0;
            libc::waitpid(inner, &mut st, 0);
            libc::_exit(0)
        }
    }
    // SAFETY: parent side: close the write end, read the child's verdict.
    unsafe { libc::close(wr) };
    let mut buf = [0u8; 8];
    let mut got = 0usize;
    while got < 8 {
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(rd, buf[got..].as_mut_ptr().cast(), 8 - got) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    // SAFETY: our fd.
    unsafe { libc::close(rd) };
    let _ = zot_process::child::wait(pid);
    if got < 8 {
        return Err(UsernsError::Failed {
            stage: NsStage::Fork,
            errno: 0,
        });
    }
    let stage = u32::from_ne_bytes(buf[..4].try_into().unwrap());
    let err = i32::from_ne_bytes(buf[4..].try_into().unwrap());
    match stage {
        0 => Ok(None),
        6 => Ok(Some(classify(NsStage::MountProc, err))),
        n => Err(classify(STAGES[(n as usize - 1).min(5)], err)),
    }
}

/// The cheapest real check: a forked child calls `unshare(CLONE_NEWUSER)`
/// and exits with the errno (0 on success). Catches container seccomp
/// profiles (EPERM), exhausted limits anywhere up the chain (ENOSPC) and
/// kernels without user namespaces, without building anything.
pub(crate) fn run_user_only() -> Result<(), UsernsError> {
    use zot_process::child::{self, Status};
    // SAFETY: the child makes one raw syscall and exits.
    let status = unsafe {
        child::fork(|| {
            if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                0
            } else {
                (*libc::__errno_location()).clamp(1, 255)
            }
        })
    }
    .and_then(child::Child::wait)
    .map_err(|e| UsernsError::Failed {
        stage: NsStage::Fork,
        errno: e.raw_os_error().unwrap_or(0),
    })?;
    match status {
        Status::Exited(0) => Ok(()),
        Status::Exited(e) => Err(classify(NsStage::Unshare, e)),
        Status::Signaled(_) => Err(UsernsError::Failed {
            stage: NsStage::Fork,
            errno: 0,
        }),
    }
}

/// A forked child installs a one-instruction seccomp filter (allow) with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER` and exits with the errno (0: it
/// worked). An outer filter with a listener makes it fail with EBUSY.
pub(crate) fn listener_filter() -> Result<(), std::io::Error> {
    let allow = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: allow.as_ptr() as *mut libc::sock_filter,
    };
    use zot_process::child::{self, Status};
    // SAFETY: the child makes raw syscalls on data prepared before the fork.
    let status = unsafe {
        child::fork(|| {
            let failed = libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &prog,
                ) < 0;
            let code = if failed { *libc::__errno_location() } else { 0 };
            code.clamp(0, 255)
        })
    }
    .and_then(child::Child::wait)?;
    match status {
        Status::Exited(0) => Ok(()),
        Status::Exited(e) => Err(std::io::Error::from_raw_os_error(e)),
        Status::Signaled(_) => Err(std::io::Error::other("the probe died")),
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_tells_errnos_apart() {
        assert_eq!(
            classify(NsStage::Unshare, libc::ENOSPC),
            UsernsError::LimitReached
        );
        assert_eq!(
            classify(NsStage::Unshare, libc::EINVAL),
            UsernsError::NotSupported
        );
        assert!(matches!(
            classify(NsStage::MakePrivate, libc::EPERM),
            UsernsError::Denied { .. }
        ));
        assert!(matches!(
            classify(NsStage::UidMap, libc::EIO),
            UsernsError::Failed { .. }
        ));
    }
}
