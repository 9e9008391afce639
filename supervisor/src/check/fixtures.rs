//! The host fixtures of `--check`: planted credentials, repositories, a
//! host socket and a victim process the attempts aim at, removed on drop.

use super::*;

/// A listening socket bound in a new user and network namespace by a
/// forked child, which reports each connection it accepts on a pipe.
pub(super) struct NetnsSocket {
    pub(super) path: PathBuf,
    pub(super) _child: zot_process::child::Child,
    pub(super) reports: std::os::fd::OwnedFd,
}

impl NetnsSocket {
    pub(super) fn create(dir: &Path) -> Option<NetnsSocket> {
        use std::ffi::CString;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::ffi::OsStrExt;
        let path = dir.join("netns.sock");
        // Everything the child needs, before the fork.
        // SAFETY: zeroed plain data.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() >= addr.sun_path.len() {
            return None;
        }
        for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        let cpath = CString::new(bytes).ok()?;
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let maps = [
            (c"/proc/self/setgroups", "deny".to_string()),
            (c"/proc/self/uid_map", format!("{uid} {uid} 1")),
            (c"/proc/self/gid_map", format!("{gid} {gid} 1")),
        ];
        let mut fds = [0; 2];
        // SAFETY: a valid array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: fresh fds we own.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child makes raw syscalls on data prepared above and
        // never returns.
        let child = unsafe {
            zot_process::child::fork(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                    libc::_exit(1);
                }
                for (p, data) in &maps {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY);
                    if fd < 0 || libc::write(fd, data.as_ptr().cast(), data.len()) < 0 {
                        libc::_exit(2);
                    }
                    libc::close(fd);
                }
                let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                if s < 0
                    || libc::bind(s, (&addr as *const libc::sockaddr_un).cast(), len) != 0
                    || libc::listen(s, 8) != 0
                {
                    libc::_exit(3);
                }
                libc::chmod(cpath.as_ptr(), 0o777);
                libc::write(w.as_raw_fd(), b"R".as_ptr().cast(), 1);
                loop {
                    let c = libc::accept(s, std::ptr::null_mut(), std::ptr::null_mut());
                    if c >= 0 {
                        libc::write(w.as_raw_fd(), b"C".as_ptr().cast(), 1);
                        libc::close(c);
                    }
                }
            })
        }
        .ok()?;
        drop(w);
        let n = NetnsSocket {
            path,
            _child: child,
            reports: r,
        };
        let mut p = libc::pollfd {
            fd: n.reports.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut b = [0u8; 1];
        // SAFETY: our pollfd and buffer.
        let ready = unsafe {
            libc::poll(&mut p, 1, 5000) == 1
                && libc::read(n.reports.as_raw_fd(), b.as_mut_ptr().cast(), 1) == 1
        };
        (ready && b[0] == b'R').then_some(n)
    }

    pub(super) fn was_reached(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: self.reports.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: our pollfd; a short wait for a connection in flight.
        unsafe { libc::poll(&mut p, 1, 100) == 1 && p.revents & libc::POLLIN != 0 }
    }
}

impl Drop for NetnsSocket {
    fn drop(&mut self) {
        // The child is killed and reaped when `_child` is dropped.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Host objects the attempts aim at; removed when dropped.
pub(super) struct HostBits {
    pub(super) netns: Option<NetnsSocket>,
    pub(super) stream: Option<(PathBuf, std::os::unix::net::UnixListener)>,
    pub(super) dgram: Option<(PathBuf, std::os::unix::net::UnixDatagram)>,
    pub(super) shm_file: Option<PathBuf>,
    pub(super) shmid: Option<i32>,
    /// Path, master and slave fds.
    pub(super) pty: Option<(PathBuf, std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
}

impl HostBits {
    /// Whatever can be made here (a missing one fails its attempt as
    /// "not available", which counts as refused: nothing was reached).
    pub(super) fn create(f: &Fixture) -> HostBits {
        use std::os::fd::{FromRawFd, OwnedFd};
        use std::os::unix::fs::PermissionsExt;
        let open = |p: &Path| {
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777));
        };
        let stream = {
            let p = f.outside.join("host.sock");
            std::os::unix::net::UnixListener::bind(&p).ok().map(|l| {
                l.set_nonblocking(true).ok();
                open(&p);
                (p, l)
            })
        };
        let dgram = {
            let p = f.workspace.join("host-dgram.sock");
            std::os::unix::net::UnixDatagram::bind(&p).ok().map(|d| {
                d.set_nonblocking(true).ok();
                open(&p);
                (p, d)
            })
        };
        let shm_file = {
            let p = PathBuf::from(format!("/dev/shm/zot-check-{}", std::process::id()));
            std::fs::write(&p, &f.token).ok().map(|_| p)
        };
        // SAFETY: plain syscall.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o666) };
        let shmid = (id >= 0).then_some(id);
        let pty = {
            let (mut m, mut sl) = (-1, -1);
            // SAFETY: out-pointers to ints; no name/termios/winsize.
            let r = unsafe {
                libc::openpty(
                    &mut m,
                    &mut sl,
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    std::ptr::null(),
                )
            };
            if r == 0 {
                // SAFETY: fresh fds we own.
                let (m, sl) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(sl)) };
                std::fs::read_link(format!(
                    "/proc/self/fd/{}",
                    std::os::fd::AsRawFd::as_raw_fd(&sl)
                ))
                .ok()
                .map(|p| (p, m, sl))
            } else {
                None
            }
        };
        HostBits {
            netns: NetnsSocket::create(&f.workspace),
            stream,
            dgram,
            shm_file,
            shmid,
            pty,
        }
    }
}

impl Drop for HostBits {
    fn drop(&mut self) {
        for p in [
            &self.stream.as_ref().map(|s| s.0.clone()),
            &self.dgram.as_ref().map(|s| s.0.clone()),
            &self.shm_file,
        ]
        .into_iter()
        .flatten()
        {
            let _ = std::fs::remove_file(p);
        }
        if let Some(id) = self.shmid {
            // SAFETY: our segment.
            unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
}

/// The temporary workspace, outside dir and fake home of a check.
pub(super) struct Fixture {
    pub(super) _root: tempfile::TempDir,
    pub(super) workspace: PathBuf,
    pub(super) outside: PathBuf,
    pub(super) home: PathBuf,
    /// The second fake home: the password database's (`user_home`).
    pub(super) user_home: PathBuf,
    /// `<workspace>/vendor/lib/dep`, a repository.
    pub(super) nested_repo: PathBuf,
    pub(super) token: String,
    pub(super) etc_probe: PathBuf,
    /// A throwaway host process the attempts try to see and ptrace. Never
    /// the check process itself: if an attempt escaped, a successful
    /// PTRACE_SEIZE of our own process could leave it stopped.
    pub(super) target: Target,
}

/// A child that only sleeps in `pause()` until killed (and reaped) on drop.
pub(super) struct Target(pub(super) zot_process::child::Child);

impl Target {
    pub(super) fn spawn() -> std::io::Result<Target> {
        // SAFETY: the child calls only async-signal-safe functions (prctl,
        // pause), so forking a multi-threaded process is sound.
        let child = unsafe {
            zot_process::child::fork(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                loop {
                    libc::pause();
                }
            })
        }?;
        Ok(Target(child))
    }

    pub(super) fn id(&self) -> u32 {
        self.0.pid() as u32
    }
}

impl Fixture {
    pub(super) fn create() -> Result<Fixture, SupervisorError> {
        // Prefer a place the sandbox does not replace (unlike /tmp), so the
        // masks and binds are really exercised.
        let base = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| {
                h.is_absolute()
                    && !["/tmp", "/var/tmp", "/run"]
                        .iter()
                        .any(|d| h.starts_with(d))
            })
            .map(|h| h.join(".cache"))
            .filter(|c| std::fs::create_dir_all(c).is_ok() && tempfile::tempdir_in(c).is_ok());
        let root = match base {
            Some(b) => tempfile::Builder::new().prefix("zot-check-").tempdir_in(b),
            None => tempfile::Builder::new().prefix("zot-check-").tempdir(),
        }
        .map_err(SupervisorError::io("creating the check workspace"))?;
        let r = std::fs::canonicalize(root.path())
            .map_err(SupervisorError::io("resolving the check workspace"))?;
        let workspace = r.join("ws");
        let outside = r.join("outside");
        let home = r.join("home");
        let token = format!(
            "zot-check-secret-{}-{}",
            std::process::id(),
            r.display().to_string().len()
        );
        let io = SupervisorError::io;
        std::fs::create_dir_all(workspace.join(".git"))
            .map_err(io("creating the check workspace"))?;
        std::fs::write(workspace.join(".git/config"), "[core]\n")
            .map_err(io("planting .git/config"))?;
        std::fs::write(workspace.join("readme.txt"), "hello\n")
            .map_err(io("planting a workspace file"))?;
        std::fs::create_dir_all(&outside).map_err(io("creating the outside dir"))?;
        std::fs::create_dir_all(home.join(".ssh")).map_err(io("creating the fake home"))?;
        std::fs::write(home.join(".ssh/id_ed25519"), &token)
            .map_err(io("planting the fake secret"))?;
        std::os::unix::fs::symlink(&outside, workspace.join("link"))
            .map_err(io("planting the symlink"))?;
        let (user_home, nested_repo) = plant_credentials_and_repo(&r, &home, &workspace, &token)?;
        for rel in [
            "keys/service-account.json",
            "xdg/gh/hosts.yml",
            "zot-home/sessions/s.jsonl",
        ] {
            let p = r.join(rel);
            std::fs::create_dir_all(p.parent().unwrap_or(&r))
                .and_then(|_| std::fs::write(&p, &token))
                .map_err(io("planting a credential named by the environment"))?;
        }
        let etc_probe = PathBuf::from(format!("/etc/zot-check-{}", std::process::id()));
        let target = Target::spawn().map_err(io("starting the host target process"))?;
        Ok(Fixture {
            _root: root,
            workspace,
            outside,
            home,
            user_home,
            nested_repo,
            token,
            etc_probe,
            target,
        })
    }

    pub(super) fn policy(&self, mode: SandboxMode) -> Result<SandboxPolicy, SupervisorError> {
        let opts = SandboxOptions {
            cwd: self.workspace.clone(),
            home: Some(self.home.clone()),
            user_home: Some(self.user_home.clone()),
            ..Default::default()
        };
        let mut p = compile(mode, &opts).map_err(|e| SupervisorError::Io {
            what: "compiling the check policy".into(),
            source: std::io::Error::other(e),
        })?;
        let ssh = self.home.join(".ssh");
        if !p.deny_read.contains(&ssh) && mode != SandboxMode::DangerFullAccess {
            p.deny_read.push(ssh);
        }
        Ok(p)
    }

    /// An environment naming credentials outside every default place and
    /// zot's own state (planted by [`plant_named`]).
    pub(super) fn named_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let n = self.named();
        let root = self.outside.parent().unwrap_or(&self.outside).to_path_buf();
        vec![
            (
                "GOOGLE_APPLICATION_CREDENTIALS".into(),
                n.env_file.into_os_string(),
            ),
            ("XDG_CONFIG_HOME".into(), root.join("xdg").into_os_string()),
            ("ZOT_HOME".into(), root.join("zot-home").into_os_string()),
            ("HOME".into(), self.home.clone().into_os_string()),
        ]
    }

    pub(super) fn named(&self) -> NamedSpec {
        let root = self.outside.parent().unwrap_or(&self.outside).to_path_buf();
        NamedSpec {
            env_file: root.join("keys/service-account.json"),
            xdg_store: root.join("xdg/gh/hosts.yml"),
            zot_state: root.join("zot-home/sessions/s.jsonl"),
        }
    }

    pub(super) fn attempt_spec(&self, port: Option<u16>) -> AttemptSpec {
        let control_read = ["/etc/os-release", "/etc/passwd", "/etc/hostname"]
            .iter()
            .map(PathBuf::from)
            .find(|p| std::fs::File::open(p).is_ok())
            .unwrap_or_else(|| PathBuf::from("/etc/passwd"));
        AttemptSpec {
            workspace: self.workspace.clone(),
            outside: self.outside.clone(),
            secret: self.home.join(".ssh/id_ed25519"),
            secret_token: self.token.clone(),
            link: self.workspace.join("link"),
            control_read,
            port,
            unix_socket: None,
            host_pid: self.target.id() as i32,
            host_starttime: starttime(self.target.id() as i32).unwrap_or(0),
            outside_socket: None,
            workspace_dgram: None,
            host_shm_file: None,
            host_shmid: None,
            host_pty: None,
            tmp_size: None,
            max_procs: None,
            netns_socket: None,
            credentials: Some(CredentialSpec {
                home: self.home.join(".git-credentials"),
                user_home: self.user_home.join(".config/gh/hosts.yml"),
            }),
            nested_repo: Some(self.nested_repo.clone()),
            named: Some(self.named()),
            memory: None,
            proxy: None,
        }
    }
}

/// Plants the fake credential files of both homes (entries of the default
/// deny list, never added to the policy by the check) and a repository
/// three levels down in the workspace. Returns the password database's
/// fake home and the repository's directory.
pub(super) fn plant_credentials_and_repo(
    root: &Path,
    home: &Path,
    workspace: &Path,
    token: &str,
) -> Result<(PathBuf, PathBuf), SupervisorError> {
    let io = SupervisorError::io;
    let user_home = root.join("user-home");
    std::fs::create_dir_all(user_home.join(".config/gh"))
        .map_err(io("creating the second fake home"))?;
    std::fs::write(
        home.join(".git-credentials"),
        format!("https://zot:{token}@example.invalid\n"),
    )
    .map_err(io("planting the fake ~/.git-credentials"))?;
    std::fs::write(
        user_home.join(".config/gh/hosts.yml"),
        format!("example.invalid:\n    oauth_token: {token}\n"),
    )
    .map_err(io("planting the fake ~/.config/gh/hosts.yml"))?;
    let repo = workspace.join("vendor/lib/dep");
    std::fs::create_dir_all(repo.join(".git/hooks"))
        .map_err(io("creating the nested repository"))?;
    std::fs::write(
        repo.join(".git/config"),
        format!(
            "[core]\n\thooksPath = {GIT_HOOKS_DIR}\n\tfsmonitor = {GIT_FSMONITOR}\n[include]\n\tpath = ../{GIT_INCLUDE_FILE}\n"
        ),
    )
    .map_err(io("planting the nested repository's .git/config"))?;
    std::fs::write(repo.join(GIT_INCLUDE_FILE), "[user]\n")
        .map_err(io("planting the nested repository's included config"))?;
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n")
        .map_err(io("planting the nested repository's HEAD"))?;
    Ok((user_home, repo))
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // Only present if an attack escaped; never leave it behind.
        let _ = std::fs::remove_file(&self.etc_probe);
    }
}

pub(super) fn starttime(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}
