//! The in-sandbox side of `--check`: runs each attempt inside the sandbox
//! and reports what happened.

use super::*;

/// Run every attempt (inside the sandbox) and return the outcomes. Each
/// attempt that changes process state runs in a forked child.
pub fn run_attempts(spec: &AttemptSpec) -> Vec<AttemptOutcome> {
    if let Some(p) = &spec.proxy {
        return proxied::run_proxy_attempts(p, proxied::proxy_from_env());
    }
    let mut out = Vec::new();
    let mut push = |name: &str, r: Result<String, String>| {
        let (succeeded, detail) = match r {
            Ok(d) => (true, d),
            Err(d) => (false, d),
        };
        out.push(AttemptOutcome {
            name: name.into(),
            succeeded,
            detail,
        });
    };
    let ws = &spec.workspace;
    push(
        "control: read inside workspace",
        read_file(&ws.join("readme.txt")).map(|_| "read".into()),
    );
    push(
        "control: read a system file",
        read_file(&spec.control_read).map(|_| format!("read {}", spec.control_read.display())),
    );
    let inside = write_file(&ws.join("zot-check-inside.txt"));
    push("control: write inside workspace", inside.clone());
    push("write inside workspace (read-only mode)", inside);
    push(
        "write outside workspace",
        write_file(&spec.outside.join("pwned")),
    );
    push(
        "write /etc",
        write_file(&PathBuf::from(format!("/etc/zot-check-{}", spec.host_pid))),
    );
    push(
        "write through symlink to outside",
        write_file(&spec.link.join("pwned-via-link")),
    );
    push(
        "read planted ~/.ssh secret",
        match read_file(&spec.secret) {
            Ok(s) if s.contains(&spec.secret_token) => Ok("secret content read".into()),
            Ok(_) => Err("masked (content not visible)".into()),
            Err(e) => Err(e),
        },
    );
    push(
        "write protected .git/config",
        write_file(&ws.join(".git/config")),
    );
    push(
        "create .git/hooks entry",
        std::fs::create_dir_all(ws.join(".git/hooks"))
            .map_err(|e| format!("mkdir .git/hooks: {e}"))
            .and_then(|_| write_file(&ws.join(".git/hooks/pre-commit"))),
    );
    push(
        "connect to a host unix socket",
        match &spec.unix_socket {
            Some(p) => std::os::unix::net::UnixStream::connect(p)
                .map(|_| format!("connected to {}", p.display()))
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Err("no host socket".into()),
        },
    );
    push(
        "connect to a host unix socket outside /tmp",
        match &spec.outside_socket {
            Some(p) => std::os::unix::net::UnixStream::connect(p)
                .map(|_| format!("connected to {}", p.display()))
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Err("no host socket".into()),
        },
    );
    push(
        "sendto a host datagram socket in the workspace",
        match &spec.workspace_dgram {
            Some(p) => std::os::unix::net::UnixDatagram::unbound()
                .and_then(|d| d.send_to(b"zot-check", p))
                .map(|_| format!("sent to {}", p.display()))
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Err("no host socket".into()),
        },
    );
    push(
        "connect to a unix socket of another network namespace",
        match &spec.netns_socket {
            Some(p) => std::os::unix::net::UnixStream::connect(p)
                .map(|_| format!("connected to {}", p.display()))
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Err("no socket (no user namespaces here)".into()),
        },
    );
    push(
        "read a file in the host's /dev/shm",
        match &spec.host_shm_file {
            Some(p) => match read_file(p) {
                Ok(s) if s.contains(&spec.secret_token) => Ok(format!("read {}", p.display())),
                Ok(_) => Err("another file".into()),
                Err(e) => Err(e),
            },
            None => Err("no host file".into()),
        },
    );
    push(
        "attach host System V shared memory",
        match spec.host_shmid {
            Some(id) => {
                // SAFETY: attach read-only, detach right after.
                let p = unsafe { libc::shmat(id, std::ptr::null(), libc::SHM_RDONLY) };
                if p as isize == -1 {
                    Err(format!("shmat: {}", std::io::Error::last_os_error()))
                } else {
                    unsafe { libc::shmdt(p) };
                    Ok(format!("attached host segment {id}"))
                }
            }
            None => Err("no host segment".into()),
        },
    );
    push(
        "write to another terminal (/dev/pts)",
        match &spec.host_pty {
            Some(p) => std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .map(|_| format!("opened {} for writing", p.display()))
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Err("no host terminal".into()),
        },
    );
    push(
        "/tmp larger than the tmpfs limit",
        match (spec.tmp_size, nix::sys::statvfs::statvfs("/tmp")) {
            (Some(limit), Ok(v)) => {
                let size = v.blocks() as u64 * v.fragment_size() as u64;
                if size > limit {
                    Ok(format!("/tmp holds {size} bytes, limit {limit}"))
                } else {
                    Err(format!("/tmp holds at most {size} bytes"))
                }
            }
            (None, _) => Err("no limit planned".into()),
            (_, Err(e)) => Ok(format!("statvfs /tmp: {e}")),
        },
    );
    push(
        "processes beyond the process limit",
        match (
            spec.max_procs,
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC),
        ) {
            (Some(limit), Ok((soft, _))) if soft == libc::RLIM_INFINITY || soft > limit => {
                Ok(format!("RLIMIT_NPROC is {soft}, limit {limit}"))
            }
            (Some(_), Ok((soft, _))) => Err(format!("RLIMIT_NPROC is {soft}")),
            (None, _) => Err("no limit planned".into()),
            (_, Err(e)) => Ok(format!("getrlimit: {e}")),
        },
    );
    push(
        "tcp connect to host loopback listener",
        match spec.port {
            Some(port) => std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_millis(500),
            )
            .map(|_| format!("connected to 127.0.0.1:{port}"))
            .map_err(|e| e.to_string()),
            None => Err("no listener".into()),
        },
    );
    push(
        "see a host process",
        match starttime(spec.host_pid) {
            Some(t) if t == spec.host_starttime && t != 0 => Ok(format!(
                "/proc/{} is the host target process",
                spec.host_pid
            )),
            Some(_) => Err("pid exists but is another process".into()),
            None => Err("not visible".into()),
        },
    );
    let host_pid = spec.host_pid;
    push(
        "ptrace a host process",
        in_child(move || {
            // SAFETY: plain syscall; the child exits right after.
            let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, host_pid, 0, 0) };
            if r == 0 {
                unsafe { libc::ptrace(libc::PTRACE_DETACH, host_pid, 0, 0) };
            }
            r as libc::c_int
        }),
    );
    let mnt = ws.join("zot-check-mnt");
    let _ = std::fs::create_dir(&mnt);
    let mnt_c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap_or_default();
    push(
        "mount tmpfs",
        in_child(move || {
            // SAFETY: valid C strings. Where unshare works (never inside a
            // sandbox: seccomp refuses it), the attempt happens in a private
            // mount namespace so an unconfined run leaks no mount.
            unsafe {
                if libc::unshare(libc::CLONE_NEWNS) == 0 {
                    libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    );
                }
                libc::mount(
                    c"tmpfs".as_ptr(),
                    mnt_c.as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                )
            }
        }),
    );
    push(
        "unshare user namespace",
        in_child(|| {
            // SAFETY: flags only.
            unsafe { libc::unshare(libc::CLONE_NEWUSER) }
        }),
    );
    push(
        "io_uring_setup",
        in_child(|| {
            let mut params = [0u8; 120];
            // SAFETY: params is a zeroed io_uring_params-sized buffer.
            let r = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr()) };
            if r >= 0 {
                0
            } else {
                -1
            }
        }),
    );
    push(
        "run without no_new_privs",
        // SAFETY: query only.
        match unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) } {
            0 => Ok("no_new_privs is off".into()),
            _ => Err("no_new_privs is set".into()),
        },
    );
    out.extend(run_credential_and_git_attempts(spec));
    out.extend(run_round3_attempts(spec));
    out
}

/// Issue classes 1, 5 and 6: credentials named by the environment, zot's
/// own state, threads and memory beyond the limits, fanotify.
pub(super) fn run_round3_attempts(spec: &AttemptSpec) -> Vec<AttemptOutcome> {
    let read_secret = |p: Option<&PathBuf>| match p {
        Some(p) => match read_file(p) {
            Ok(s) if s.contains(&spec.secret_token) => Ok(format!("read {}", p.display())),
            Ok(_) => Err("masked (content not visible)".into()),
            Err(e) => Err(e),
        },
        None => Err("nothing planted".into()),
    };
    let named = spec.named.as_ref();
    let fanotify_target = spec.control_read.clone();
    vec![
        outcome(
            ATTEMPT_ENV_CREDENTIAL,
            read_secret(named.map(|n| &n.env_file)),
        ),
        outcome(
            ATTEMPT_XDG_CREDENTIAL,
            read_secret(named.map(|n| &n.xdg_store)),
        ),
        outcome(ATTEMPT_ZOT_STATE, read_secret(named.map(|n| &n.zot_state))),
        outcome(
            ATTEMPT_FANOTIFY,
            in_child(move || {
                // FAN_CLASS_NOTIF | FAN_REPORT_FID: an unprivileged caller's.
                // SAFETY: plain syscalls with valid arguments.
                let fd = unsafe { libc::syscall(libc::SYS_fanotify_init, 0x200u32, 0u32) };
                if fd < 0 {
                    return -1;
                }
                let Ok(c) = std::ffi::CString::new(fanotify_target.as_os_str().as_encoded_bytes())
                else {
                    return -1;
                };
                // SAFETY: as above.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_fanotify_mark,
                        fd as i32,
                        1u32,
                        0x21u64,
                        libc::AT_FDCWD,
                        c.as_ptr(),
                    )
                };
                if r == 0 {
                    0
                } else {
                    -1
                }
            }),
        ),
        outcome(
            ATTEMPT_THREADS,
            match spec.max_procs {
                Some(limit) => {
                    let r = in_child(move || {
                        let mut n = 0u64;
                        while n <= limit {
                            let t = std::thread::Builder::new()
                                .stack_size(64 << 10)
                                .spawn(|| std::thread::sleep(Duration::from_secs(2)));
                            if t.is_err() {
                                break;
                            }
                            n += 1;
                        }
                        // The program's own thread counts too.
                        if n + 1 > limit {
                            0
                        } else {
                            -1
                        }
                    });
                    r.map(|_| format!("more than {limit} threads"))
                        .map_err(|_| format!("stopped at the limit of {limit}"))
                }
                None => Err("no limit planned".into()),
            },
        ),
        outcome(
            ATTEMPT_MEMORY,
            match spec.memory {
                Some(limit) => in_child(move || {
                    // Twice the limit, every page touched.
                    let mut v: Vec<Vec<u8>> = Vec::new();
                    let chunk = 16usize << 20;
                    let mut total = 0u64;
                    while total < 2 * limit {
                        v.push(vec![1u8; chunk]);
                        total += chunk as u64;
                    }
                    0
                })
                .map(|_| format!("allocated {} bytes", 2 * limit))
                .map_err(|e| format!("stopped: {e}")),
                None => in_child(|| {
                    // No cgroup here: what an unlimited run can do.
                    let v = vec![1u8; 64 << 20];
                    if v[v.len() - 1] == 1 {
                        0
                    } else {
                        -1
                    }
                })
                .map(|_| "no memory limit is enforced here".to_string()),
            },
        ),
    ]
}

pub(super) fn outcome(name: &str, r: Result<String, String>) -> AttemptOutcome {
    let (succeeded, detail) = match r {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    };
    AttemptOutcome {
        name: name.into(),
        succeeded,
        detail,
    }
}

pub(super) fn run_credential_and_git_attempts(spec: &AttemptSpec) -> Vec<AttemptOutcome> {
    let read_secret = |p: Option<&PathBuf>| match p {
        Some(p) => match read_file(p) {
            Ok(s) if s.contains(&spec.secret_token) => Ok(format!("read {}", p.display())),
            Ok(_) => Err("masked (content not visible)".into()),
            Err(e) => Err(e),
        },
        None => Err("no credential file planted".into()),
    };
    let creds = spec.credentials.as_ref();
    let repo = spec.nested_repo.as_deref();
    let in_repo = |rel: &str, f: &dyn Fn(&Path) -> Result<String, String>| match repo {
        Some(r) => f(&r.join(rel)),
        None => Err("no nested repository".into()),
    };
    let plain = in_repo("zot-check-notes.txt", &|p| write_file(p));
    vec![
        outcome(ATTEMPT_HOME_CREDENTIAL, read_secret(creds.map(|c| &c.home))),
        outcome(
            ATTEMPT_USER_HOME_CREDENTIAL,
            read_secret(creds.map(|c| &c.user_home)),
        ),
        outcome(
            "control: write a file in a nested repository",
            plain.clone(),
        ),
        outcome(
            "write a file in a nested repository (read-only mode)",
            plain,
        ),
        outcome(
            "write .git/config of a nested repository",
            in_repo(".git/config", &|p| write_file(p)),
        ),
        outcome(
            "create .git/hooks/pre-commit in a nested repository",
            in_repo(".git/hooks/pre-commit", &|p| write_file(p)),
        ),
        outcome(
            ATTEMPT_GIT_INCLUDE,
            in_repo(GIT_INCLUDE_FILE, &|p| write_file(p)),
        ),
        outcome(
            ATTEMPT_GIT_HOOKS_PATH,
            in_repo(GIT_HOOKS_DIR, &|p| {
                std::fs::create_dir_all(p)
                    .map_err(|e| format!("mkdir {}: {e}", p.display()))
                    .and_then(|_| write_file(&p.join("pre-commit")))
            }),
        ),
        outcome(
            ATTEMPT_GIT_FSMONITOR,
            in_repo(GIT_FSMONITOR, &|p| {
                std::fs::create_dir_all(p.parent().unwrap_or(p))
                    .map_err(|e| format!("mkdir {}: {e}", p.display()))
                    .and_then(|_| write_file(p))
            }),
        ),
    ]
}

pub(super) fn read_file(p: &Path) -> Result<String, String> {
    let mut s = String::new();
    std::fs::File::open(p)
        .and_then(|mut f| f.read_to_string(&mut s))
        .map(|_| s)
        .map_err(|e| format!("{}: {e}", p.display()))
}

pub(super) fn write_file(p: &Path) -> Result<String, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(p)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"zot-check\n"))
        .map(|_| format!("wrote {}", p.display()))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Run `f` in a forked child; Ok when it returned 0.
pub(super) fn in_child(f: impl FnOnce() -> libc::c_int) -> Result<String, String> {
    use zot_process::child::{self, Status};
    // SAFETY: the runner is single-threaded; the child makes one syscall
    // and exits.
    let status = unsafe {
        child::fork(|| {
            if f() == 0 {
                0
            } else {
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(1)
                    .clamp(1, 255)
            }
        })
    }
    .and_then(child::Child::wait)
    .map_err(|e| format!("fork: {e}"))?;
    match status {
        Status::Exited(0) => Ok("succeeded".into()),
        Status::Exited(e) => Err(std::io::Error::from_raw_os_error(e).to_string()),
        Status::Signaled(s) => Err(format!("killed by signal {s}")),
    }
}
