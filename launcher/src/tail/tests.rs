//! The tail, run for real in forked children: in-process and as the
//! launcher image.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::plan::{LandlockAccess, LandlockCompat, LandlockPlan, LandlockRule, LandlockScope};
use crate::LaunchStatus;

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: valid array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh fds.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn cs(v: &[&str]) -> Vec<CString> {
    v.iter().map(|s| CString::new(*s).unwrap()).collect()
}

fn landlock_plan(compat: LandlockCompat) -> LandlockPlan {
    LandlockPlan {
        compat,
        rules: vec![
            LandlockRule {
                path: "/".into(),
                access: LandlockAccess::Read,
                must_exist: true,
            },
            LandlockRule {
                path: "/dev".into(),
                access: LandlockAccess::Device,
                must_exist: false,
            },
        ],
        scopes: vec![LandlockScope::Signal],
    }
}

/// Run `spec` in a forked child, in-process (`image`: false) or as the
/// embedded launcher image: its stdout, the status lines, the exit code.
fn run(spec: Vec<u8>, image: bool) -> (String, Vec<LaunchStatus>, i32) {
    let (out_r, out_w) = pipe();
    let (st_r, st_w) = pipe();
    let (spec_r, spec_w) = pipe();
    let image_fd = image.then(|| {
        let img = crate::launcher_image().expect("this build has a launcher image");
        let fd = unsafe { libc::memfd_create(c"t".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        std::io::Write::write_all(&mut f, img).unwrap();
        f
    });
    let path = image_fd
        .as_ref()
        .map(|f| CString::new(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap());
    let mut buf = spec.clone();
    // SAFETY: the child only dups fds, runs the tail (raw syscalls) or execs.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        unsafe {
            libc::dup2(out_w.as_raw_fd(), 1);
            if let Some(p) = &path {
                // Above 4 first: a dup2 onto itself keeps close-on-exec, and
                // one may already be the other's target.
                let (sp, st) = (
                    libc::fcntl(spec_r.as_raw_fd(), libc::F_DUPFD, 10),
                    libc::fcntl(st_w.as_raw_fd(), libc::F_DUPFD, 10),
                );
                libc::dup2(sp, 3);
                libc::dup2(st, 4);
                let argv = [p.as_ptr(), std::ptr::null()];
                let envp = [std::ptr::null()];
                libc::execve(p.as_ptr(), argv.as_ptr(), envp.as_ptr());
                libc::_exit(99);
            }
            let code = super::run(&mut buf, st_w.as_raw_fd());
            libc::_exit(code);
        }
    }
    drop(out_w);
    drop(st_w);
    drop(spec_r);
    let mut w = std::fs::File::from(spec_w);
    // In-process runs never read it (the pipe may be closed already).
    let _ = std::io::Write::write_all(&mut w, &spec);
    drop(w);
    let mut out = String::new();
    std::fs::File::from(out_r).read_to_string(&mut out).unwrap();
    let mut st = String::new();
    std::fs::File::from(st_r).read_to_string(&mut st).unwrap();
    let mut status = 0;
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let lines = st
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    (out, lines, libc::WEXITSTATUS(status))
}

fn spec(argv: &[&str], compat: LandlockCompat) -> Vec<u8> {
    spec_with_bridge(argv, compat, None)
}

fn spec_with_bridge(
    argv: &[&str],
    compat: LandlockCompat,
    bridge: Option<(&std::path::Path, u16)>,
) -> Vec<u8> {
    let plan = crate::plan::SeccompPlan {
        enabled: true,
        foreign_arch: crate::plan::SeccompAction::KillProcess,
        x32: cfg!(target_arch = "x86_64").then_some(crate::plan::SeccompAction::Enosys),
        rules: vec![crate::plan::SeccompRule {
            syscalls: vec!["ptrace".into()],
            action: crate::plan::SeccompAction::Eperm,
            any_of: vec![],
        }],
    };
    let bpf: Vec<_> = crate::seccomp::compile(&plan)
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    super::encode::encode(
        &cs(argv),
        &cs(&["PATH=/usr/bin:/bin", "GREETING=hi there"]),
        true,
        false,
        &[crate::plan::Rlimit {
            resource: crate::plan::RlimitResource::Core,
            soft: Some(0),
            hard: Some(0),
        }],
        None,
        &landlock_plan(compat),
        &bpf,
        bridge,
        &[],
        None,
        &[],
    )
}

const PROBE: &str = "echo \"$GREETING\"; grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd):' /proc/self/status | tr -s '\\t\\n' ' '; ulimit -c";

fn check_hardened(out: &str, status: &[LaunchStatus], code: i32) {
    assert_eq!(code, 0, "{out} {status:?}");
    assert!(out.starts_with("hi there\n"), "{out}");
    for want in [
        "NoNewPrivs: 1",
        "Seccomp: 2",
        "CapEff: 0000000000000000",
        "CapBnd: 0000000000000000",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(out.trim_end().ends_with(" 0"), "core limit: {out}");
    assert!(
        matches!(status, [LaunchStatus::Ready { seccomp: true, .. }]),
        "{status:?}"
    );
}

#[test]
fn in_process_tail_hardens_and_execs_through_path() {
    let (out, status, code) = run(
        spec(&["sh", "-c", PROBE], LandlockCompat::BestEffort),
        false,
    );
    check_hardened(&out, &status, code);
}

#[test]
fn launcher_image_runs_the_same_tail() {
    if crate::launcher_image().is_none() {
        // CI sets ZOT_TEST_MUST_WORK=1: a skip there is a failure.
        assert!(
            std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
            "this build has no launcher image"
        );
        eprintln!("SKIP: this build has no launcher image");
        return;
    }
    let (out, status, code) = run(spec(&["sh", "-c", PROBE], LandlockCompat::BestEffort), true);
    check_hardened(&out, &status, code);
}

#[test]
fn missing_command_and_script_without_shebang() {
    for image in [false, crate::launcher_image().is_some()] {
        let (_, status, code) = run(spec(&["no-such-zot-command"], LandlockCompat::Off), image);
        assert_eq!(code, 127);
        assert!(
            matches!(
                &status[..],
                [
                    LaunchStatus::Ready { .. },
                    LaunchStatus::ExecFailed { errno: 2, .. }
                ]
            ),
            "{status:?}"
        );
        // A file without #! is run by /bin/sh, as execvp does.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script");
        std::fs::write(&script, "echo from-script\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (out, _, code) = run(
            spec(&[script.to_str().unwrap()], LandlockCompat::Off),
            image,
        );
        assert_eq!((out.as_str(), code), ("from-script\n", 0));
    }
}

/// A cut-off tail, or none at all (what the launcher of a bwrap started
/// ahead of its plan reads when the supervisor died before writing it),
/// runs nothing.
#[test]
fn malformed_spec_fails_closed() {
    let mut s = spec(&["true"], LandlockCompat::Off);
    s.truncate(s.len() - 3);
    for s in [s, Vec::new()] {
        for image in [false, crate::launcher_image().is_some()] {
            let (out, status, code) = run(s.clone(), image);
            assert_eq!((out.as_str(), code), ("", 125));
            assert!(
                matches!(&status[..], [LaunchStatus::Failed { stage, .. }] if stage == "spec"),
                "{status:?}"
            );
        }
    }
}

#[test]
fn required_landlock_rule_on_a_missing_path_fails() {
    let mut plan = landlock_plan(LandlockCompat::Required);
    plan.rules.push(LandlockRule {
        path: "/nonexistent-zot-path".into(),
        access: LandlockAccess::ReadWrite,
        must_exist: true,
    });
    let s = super::encode::encode(
        &cs(&["true"]),
        &[],
        true,
        false,
        &[],
        None,
        &plan,
        &[],
        None,
        &[],
        None,
        &[],
    );
    let (_, status, code) = run(s, false);
    assert_eq!(code, 125);
    assert!(
        matches!(&status[..], [LaunchStatus::Failed { stage, message }]
            if stage == "landlock" && message.contains("/nonexistent-zot-path")),
        "{status:?}"
    );
}

/// A rule on a file gets file rights; what no rule covers is refused.
#[test]
fn landlock_rules_on_files_and_directories() {
    if !std::path::Path::new("/etc/passwd").is_file() {
        return;
    }
    let read = |p: &str| LandlockRule {
        path: p.into(),
        access: LandlockAccess::Read,
        must_exist: false,
    };
    let plan = LandlockPlan {
        compat: LandlockCompat::BestEffort,
        rules: [
            "/usr",
            "/bin",
            "/lib",
            "/lib64",
            "/etc/ld.so.cache",
            "/etc/passwd",
        ]
        .into_iter()
        .map(read)
        .collect(),
        scopes: vec![],
    };
    let prog =
        "cat /etc/passwd | head -c1 >&2 && echo file-ok; cat /etc/hostname 2>&1 | head -c0; \
                if cat /etc/hostname >&2 2>&-; then echo ESCAPED; else echo other-denied; fi";
    let s = super::encode::encode(
        &cs(&["/bin/sh", "-c", prog]),
        &cs(&["PATH=/usr/bin:/bin"]),
        true,
        false,
        &[],
        None,
        &plan,
        &[],
        None,
        &[],
        None,
        &[],
    );
    for image in [false, crate::launcher_image().is_some()] {
        let (out, status, code) = run(s.clone(), image);
        assert_eq!(code, 0, "{out} {status:?}");
        if matches!(status[..], [LaunchStatus::Ready { ref landlock, .. }] if landlock.level == crate::Level::None)
        {
            assert!(
                std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
                "Landlock not enforced here: {status:?}"
            );
            eprintln!("SKIP: Landlock not enforced here: {status:?}");
            return;
        }
        assert!(
            out.contains("file-ok") && out.contains("other-denied"),
            "{out}"
        );
    }
}

/// With a notify rule, the tail installs the filter with a listener and a
/// helper passes it (with a netlink socket) on the status socket before
/// `execve`; the command then runs under the filter (its `connect`, with
/// the listener closed here, fails with ENOSYS, the kernel's answer without
/// a listener). In-process and as the launcher image.
#[test]
fn notify_listener_comes_on_the_status_socket() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        assert!(
            std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
            "/usr/bin/python3 missing"
        );
        eprintln!("SKIP: /usr/bin/python3 missing");
        return;
    }
    assert!(crate::seccomp::notifies(&notify_plan()));
    let bpf: Vec<_> = crate::seccomp::compile(&notify_plan())
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    let prog = "import socket, errno\ntry:\n socket.socket(socket.AF_UNIX).connect('/nonexistent')\nexcept OSError as e:\n print(errno.errorcode[e.errno])\n";
    let s = super::encode::encode(
        &cs(&["/usr/bin/python3", "-c", prog]),
        &cs(&["PATH=/usr/bin:/bin"]),
        true,
        true,
        &[],
        None,
        &landlock_plan(LandlockCompat::Off),
        &bpf,
        None,
        &[],
        None,
        &[],
    );
    for image in [false, crate::launcher_image().is_some()] {
        let mut sv = [0; 2];
        // SAFETY: a valid array.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                sv.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0);
        // SAFETY: fresh fds.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
        let (out_r, out_w) = pipe();
        let (spec_r, spec_w) = pipe();
        let image_fd = image.then(|| {
            let img = crate::launcher_image().unwrap();
            // SAFETY: a new fd or -1.
            let fd = unsafe { libc::memfd_create(c"t".as_ptr(), libc::MFD_CLOEXEC) };
            assert!(fd >= 0);
            // SAFETY: fresh fd.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            std::io::Write::write_all(&mut f, img).unwrap();
            f
        });
        let path = image_fd
            .as_ref()
            .map(|f| CString::new(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap());
        let mut buf = s.clone();
        // SAFETY: the child only dups fds, runs the tail or execs.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe {
                libc::dup2(out_w.as_raw_fd(), 1);
                if let Some(p) = &path {
                    // Above 4 first: a dup2 onto itself keeps close-on-exec.
                    let (sp, st) = (
                        libc::fcntl(spec_r.as_raw_fd(), libc::F_DUPFD, 10),
                        libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD, 10),
                    );
                    libc::dup2(sp, 3);
                    libc::dup2(st, 4);
                    let argv = [p.as_ptr(), std::ptr::null()];
                    let envp = [std::ptr::null()];
                    libc::execve(p.as_ptr(), argv.as_ptr(), envp.as_ptr());
                    libc::_exit(99);
                }
                let code = super::run(&mut buf, theirs.as_raw_fd());
                libc::_exit(code);
            }
        }
        drop((out_w, theirs, spec_r));
        let _ = std::io::Write::write_all(&mut std::fs::File::from(spec_w), &s);
        // The first message: the line and two fds.
        let mut line = [0u8; 64];
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: line.as_mut_ptr().cast(),
            iov_len: super::NOTIFY_LINE.len(),
        };
        // SAFETY: zeroed, pointed at our buffers.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        h.msg_control = control.as_mut_ptr().cast();
        h.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: receiving into our buffers.
        let n = unsafe { libc::recvmsg(ours.as_raw_fd(), &mut h, libc::MSG_CMSG_CLOEXEC) };
        assert_eq!(n as usize, super::NOTIFY_LINE.len(), "image {image}");
        assert_eq!(&line[..n as usize], super::NOTIFY_LINE);
        // SAFETY: the control buffer the kernel filled.
        let fds: Vec<OwnedFd> = unsafe {
            let c = libc::CMSG_FIRSTHDR(&h);
            assert!(!c.is_null());
            assert_eq!((*c).cmsg_type, libc::SCM_RIGHTS);
            let data = libc::CMSG_DATA(c) as *const i32;
            (0..2)
                .map(|i| OwnedFd::from_raw_fd(data.add(i).read_unaligned()))
                .collect()
        };
        // A seccomp listener: an unknown notification id is ENOENT.
        let mut id = 12345u64;
        // SAFETY: ioctl with a u64 argument.
        let r = unsafe {
            libc::ioctl(
                fds[0].as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &mut id,
            )
        };
        assert_eq!(
            (r, std::io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::ENOENT))
        );
        drop(fds);
        let mut out = String::new();
        std::fs::File::from(out_r).read_to_string(&mut out).unwrap();
        let mut rest = String::new();
        let _ = std::fs::File::from(ours).read_to_string(&mut rest);
        let mut status = 0;
        // SAFETY: our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(libc::WEXITSTATUS(status), 0, "{out} {rest}");
        assert_eq!(out.trim(), "ENOSYS", "image {image}: {rest}");
        assert!(rest.contains("\"event\":\"ready\""), "{rest}");
    }
}

fn notify_plan() -> crate::plan::SeccompPlan {
    crate::plan::SeccompPlan {
        enabled: true,
        foreign_arch: crate::plan::SeccompAction::KillProcess,
        x32: cfg!(target_arch = "x86_64").then_some(crate::plan::SeccompAction::Enosys),
        rules: vec![crate::plan::SeccompRule {
            syscalls: vec!["connect".into()],
            action: crate::plan::SeccompAction::Notify,
            any_of: vec![],
        }],
    }
}

/// The bridge the tail starts: the command's connection to 127.0.0.1:PORT
/// arrives at the proxy's socket, handed off by a process that has the
/// command's restrictions (no_new_privs, seccomp, Landlock, no
/// capabilities), is not the command's child, holds nothing else open and
/// is gone once the command exits.
#[test]
fn the_bridge_hands_connections_over_under_the_commands_restrictions() {
    use std::io::Write;
    use std::os::unix::net::UnixListener;
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_err()
    {
        assert!(
            std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
            "python3 is needed"
        );
        eprintln!("SKIP: python3 is needed");
        return;
    }
    for image in [false, crate::launcher_image().is_some()] {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("proxy.sock");
        let ul = UnixListener::bind(&sock).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = format!(
            "import socket,os; s=socket.create_connection(('127.0.0.1',{port})); \
             s.sendall(b'hi %d' % os.getpid()); print(s.recv(100).decode())"
        );
        let spec = spec_with_bridge(
            &["python3", "-c", &client],
            LandlockCompat::BestEffort,
            Some((&sock, port)),
        );
        let proxy = std::thread::spawn(move || {
            let (u, _) = ul.accept().unwrap();
            let cred = nix::sys::socket::getsockopt(&u, nix::sys::socket::sockopt::PeerCredentials)
                .unwrap();
            let bridge = cred.pid();
            let status = std::fs::read_to_string(format!("/proc/{bridge}/status")).unwrap();
            let fds: Vec<String> = std::fs::read_dir(format!("/proc/{bridge}/fd"))
                .unwrap()
                .map(|e| {
                    std::fs::read_link(e.unwrap().path())
                        .unwrap()
                        .display()
                        .to_string()
                })
                .collect();
            let mut b = [0u8; 1];
            let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
            let mut iov = [std::io::IoSliceMut::new(&mut b)];
            let msg = nix::sys::socket::recvmsg::<()>(
                u.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                nix::sys::socket::MsgFlags::empty(),
            )
            .unwrap();
            let fd = msg
                .cmsgs()
                .unwrap()
                .find_map(|c| match c {
                    nix::sys::socket::ControlMessageOwned::ScmRights(f) => Some(f[0]),
                    _ => None,
                })
                .unwrap();
            assert_eq!(b, [super::bridge::HANDOFF]);
            // SAFETY: the descriptor just received.
            let mut tcp = std::net::TcpStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
            let mut got = [0u8; 64];
            let n = tcp.read(&mut got).unwrap();
            let got = String::from_utf8_lossy(&got[..n]).to_string();
            tcp.write_all(b"proxied").unwrap();
            (bridge, status, fds, got)
        });
        let (out, st, code) = run(spec, image);
        let (bridge, status, fds, got) = proxy.join().unwrap();
        assert_eq!(code, 0, "{out} {st:?}");
        assert_eq!(out.trim(), "proxied", "image {image}");
        let command: i32 = got.strip_prefix("hi ").unwrap().parse().unwrap();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        assert_eq!(field("NoNewPrivs:"), "1", "{status}");
        assert_eq!(field("Seccomp:"), "2", "{status}");
        assert_eq!(field("CapEff:"), "0000000000000000", "{status}");
        assert_eq!(field("CapBnd:"), "0000000000000000", "{status}");
        assert_ne!(field("PPid:"), command.to_string(), "{status}");
        assert_ne!(bridge as i32, command);
        // The listener, the command's pidfd (and, while handing off, the
        // accepted connection and the one to the proxy): nothing of the
        // command's (no stdout, no status pipe).
        assert!(
            fds.iter()
                .filter(|l| l.as_str() == "anon_inode:[pidfd]")
                .count()
                == 1
                && fds
                    .iter()
                    .all(|l| l.starts_with("socket:") || l == "anon_inode:[pidfd]"),
            "{fds:?}"
        );
        // It exits with the command (PID 1 of the test's namespace reaps it).
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            std::fs::read_to_string(format!("/proc/{bridge}/status"))
                .map(|s| s.contains("State:\tZ"))
                .unwrap_or(true)
        });
        assert!(gone, "the bridge outlived the command");
    }
}
