//! `zot debug sandbox --check`: the deployment gate. Probes the host,
//! resolves the backend for a mode, then runs real escape attempts under it
//! in a temporary workspace and says whether everything required was
//! enforced and every attempt refused.
//!
//! The attempts run inside the sandbox as one process: the `zot` binary
//! re-executed with a hidden argument ([`ATTEMPTS_ARG`]) that calls
//! [`run_attempts`] and prints one JSON array. Nothing here prints.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zot_policy::sandbox::{compile, NetworkPolicy, SandboxMode, SandboxOptions, SandboxPolicy};
use zot_probes::HostReport;

use crate::resolve::{self, Backend};

mod proxied;
use crate::{BackendChoice, BackendKind, Level, Output, RunRequest, Stdin, SupervisorError};

/// Hidden CLI arguments that turn `zot` into the attempt runner:
/// `zot debug sandbox --run-attempts <json AttemptSpec>`.
pub const ATTEMPTS_ARG: &str = "--run-attempts";

/// A confinement feature that can be required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    Fs,
    Net,
    Pid,
    Seccomp,
    Landlock,
    Limits,
}

impl Feature {
    pub const ALL: [Feature; 6] = [
        Feature::Fs,
        Feature::Net,
        Feature::Pid,
        Feature::Seccomp,
        Feature::Landlock,
        Feature::Limits,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Feature::Fs => "fs",
            Feature::Net => "net",
            Feature::Pid => "pid",
            Feature::Seccomp => "seccomp",
            Feature::Landlock => "landlock",
            Feature::Limits => "limits",
        }
    }
}

impl FromStr for Feature {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Feature::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown feature {s:?} (expected fs, net, pid, seccomp, landlock or limits)"
                )
            })
    }
}

/// What `--check` is asked to do.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub mode: SandboxMode,
    pub backend: BackendChoice,
    /// Features that must be fully enforced. Empty: what the mode defines
    /// (filesystem, network, seccomp).
    pub require: Vec<Feature>,
    /// The `zot` binary (the launcher re-executes itself, via
    /// `/proc/self/exe`, to run the attempts inside the sandbox).
    pub zot_exe: PathBuf,
}

/// One line of the check table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckLine {
    pub name: String,
    pub feature: Feature,
    /// `refused` (attack blocked), `ok` (control worked), `allowed` (attack
    /// succeeded: an escape), `failed` (control did not work),
    /// `not-enforced` (attack succeeded where the backend makes no claim and
    /// nothing requires it), `error` (the attempt could not run).
    pub result: String,
    pub detail: String,
}

/// The `--check` document (`--json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub host: HostReport,
    pub mode: SandboxMode,
    pub backend: BackendKind,
    /// Why this backend, and why each better one was not chosen.
    pub backend_reasons: Vec<String>,
    /// Level per feature: `fs`, `net`, `pid`, `seccomp`, `landlock`.
    pub enforced: std::collections::BTreeMap<String, crate::Level>,
    pub required: Vec<Feature>,
    /// Required features not fully enforced.
    pub missing: Vec<Feature>,
    pub checks: Vec<CheckLine>,
    pub ok: bool,
    pub duration_ms: u64,
}

/// Parameters of the in-sandbox attempt runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptSpec {
    pub workspace: PathBuf,
    pub outside: PathBuf,
    pub secret: PathBuf,
    pub secret_token: String,
    pub link: PathBuf,
    pub control_read: PathBuf,
    pub port: Option<u16>,
    /// A host unix socket under the host's /tmp (hidden by the sandbox).
    #[serde(default)]
    pub unix_socket: Option<PathBuf>,
    pub host_pid: i32,
    pub host_starttime: u64,
    /// A host stream socket outside the private dirs (next to the workspace).
    #[serde(default)]
    pub outside_socket: Option<PathBuf>,
    /// A host datagram socket inside the workspace.
    #[serde(default)]
    pub workspace_dgram: Option<PathBuf>,
    /// A host file in the host's /dev/shm and its content.
    #[serde(default)]
    pub host_shm_file: Option<PathBuf>,
    /// A host System V shared memory segment.
    #[serde(default)]
    pub host_shmid: Option<i32>,
    /// A host pseudo-terminal (another terminal's /dev/pts/N).
    #[serde(default)]
    pub host_pty: Option<PathBuf>,
    /// The planned tmpfs size and process limit.
    #[serde(default)]
    pub tmp_size: Option<u64>,
    #[serde(default)]
    pub max_procs: Option<u64>,
    /// A stream socket in the workspace bound inside another network
    /// namespace before the launch (as a container would): not in the
    /// host's /proc/net/unix, so not masked; only the supervisor's check of
    /// each connect refuses it.
    #[serde(default)]
    pub netns_socket: Option<PathBuf>,
    /// Credential files planted where the default deny list must mask
    /// them: in `$HOME` and in the password database's home.
    #[serde(default)]
    pub credentials: Option<CredentialSpec>,
    /// A repository nested three levels down in the workspace.
    #[serde(default)]
    pub nested_repo: Option<PathBuf>,
    /// Credentials named by the environment and zot's own state (issue
    /// class 1): files the check's environment names, outside every
    /// default place.
    #[serde(default)]
    pub named: Option<NamedSpec>,
    /// The memory limit of the run, when a cgroup enforces it.
    #[serde(default)]
    pub memory: Option<u64>,
    /// Set for the second run, under a proxied network: the runner makes
    /// only the proxy attempts.
    #[serde(default)]
    pub proxy: Option<ProxySpec>,
}

/// Files named by the environment the check's sandbox is prepared with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NamedSpec {
    /// `$GOOGLE_APPLICATION_CREDENTIALS`.
    pub env_file: PathBuf,
    /// `$XDG_CONFIG_HOME/gh/hosts.yml`.
    pub xdg_store: PathBuf,
    /// A session file in `$ZOT_HOME`.
    pub zot_state: PathBuf,
}

/// The planted credential files of the check's two fake homes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CredentialSpec {
    /// `<$HOME>/.git-credentials`.
    pub home: PathBuf,
    /// `<password-db home>/.config/gh/hosts.yml`.
    pub user_home: PathBuf,
}

/// What the proxy attempts aim at: the check's own loopback origin on the
/// host, behind a proxy that allows `allowed` and `private` only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProxySpec {
    /// `http://127.0.0.1:P/...`: listed, must work through the proxy.
    pub allowed_url: String,
    /// `http://127.0.0.2:P/...`: a host not listed.
    pub unlisted_url: String,
    /// `http://localhost:Q/...`: a listed name that resolves to loopback,
    /// whose address is not listed.
    pub private_url: String,
    /// `127.0.0.1:P` on the host, reached without the proxy.
    pub direct: std::net::SocketAddr,
    /// What the origin answers with.
    pub token: String,
}

/// One attempt's raw outcome, as the runner prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptOutcome {
    pub name: String,
    /// The operation succeeded.
    pub succeeded: bool,
    pub detail: String,
}

/// Static description of an attempt.
struct Attempt {
    name: &'static str,
    feature: Feature,
    /// Only mount-based backends (bwrap, native) enforce it.
    needs_mounts: bool,
    /// A control: must succeed (ws-write only for writes inside the workspace).
    control: bool,
}

fn attempts(mode: SandboxMode) -> Vec<Attempt> {
    let ws_write = mode == SandboxMode::WorkspaceWrite;
    let a = |name, feature, needs_mounts, control| Attempt {
        name,
        feature,
        needs_mounts,
        control,
    };
    let mut v = vec![
        a("control: read inside workspace", Feature::Fs, false, true),
        a("control: read a system file", Feature::Fs, false, true),
        a(
            if ws_write {
                "control: write inside workspace"
            } else {
                "write inside workspace (read-only mode)"
            },
            Feature::Fs,
            false,
            ws_write,
        ),
        a("write outside workspace", Feature::Fs, false, false),
        a("write /etc", Feature::Fs, false, false),
        a(
            "write through symlink to outside",
            Feature::Fs,
            false,
            false,
        ),
        a("read planted ~/.ssh secret", Feature::Fs, true, false),
        a("write protected .git/config", Feature::Fs, true, false),
        a("create .git/hooks entry", Feature::Fs, true, false),
        a("connect to a host unix socket", Feature::Net, false, false),
        a(
            "connect to a host unix socket outside /tmp",
            Feature::Net,
            false,
            false,
        ),
        a(
            "sendto a host datagram socket in the workspace",
            Feature::Net,
            false,
            false,
        ),
        a(
            "connect to a unix socket of another network namespace",
            Feature::Net,
            true,
            false,
        ),
        // Without a mount namespace workspace-write shares the host's
        // /dev/shm (reported), as ordinary programs need it.
        a(
            "read a file in the host's /dev/shm",
            Feature::Fs,
            ws_write,
            false,
        ),
        a(
            "attach host System V shared memory",
            Feature::Fs,
            false,
            false,
        ),
        a(
            "write to another terminal (/dev/pts)",
            Feature::Fs,
            false,
            false,
        ),
        a(
            "/tmp larger than the tmpfs limit",
            Feature::Limits,
            true,
            false,
        ),
        a(
            "processes beyond the process limit",
            Feature::Limits,
            true,
            false,
        ),
        a(
            "tcp connect to host loopback listener",
            Feature::Net,
            false,
            false,
        ),
        a("see a host process", Feature::Pid, true, false),
        a("ptrace a host process", Feature::Seccomp, false, false),
        a("mount tmpfs", Feature::Seccomp, false, false),
        a("unshare user namespace", Feature::Seccomp, false, false),
        a("io_uring_setup", Feature::Seccomp, false, false),
        a(ATTEMPT_FANOTIFY, Feature::Seccomp, false, false),
        a("run without no_new_privs", Feature::Seccomp, false, false),
        a(ATTEMPT_THREADS, Feature::Limits, true, false),
        a(ATTEMPT_MEMORY, Feature::Limits, false, false),
        a(ATTEMPT_ENV_CREDENTIAL, Feature::Fs, false, false),
        a(ATTEMPT_XDG_CREDENTIAL, Feature::Fs, false, false),
        a(ATTEMPT_ZOT_STATE, Feature::Fs, false, false),
    ];
    v.extend(credential_and_git_attempts(mode));
    v
}

/// The default deny list of both homes and the git files of a nested
/// repository (issue classes 2 and 3): only the mount backends claim them.
fn credential_and_git_attempts(mode: SandboxMode) -> Vec<Attempt> {
    let ws_write = mode == SandboxMode::WorkspaceWrite;
    let a = |name, control| Attempt {
        name,
        feature: Feature::Fs,
        needs_mounts: true,
        control,
    };
    vec![
        a(ATTEMPT_HOME_CREDENTIAL, false),
        a(ATTEMPT_USER_HOME_CREDENTIAL, false),
        a(
            if ws_write {
                "control: write a file in a nested repository"
            } else {
                "write a file in a nested repository (read-only mode)"
            },
            ws_write,
        ),
        a("write .git/config of a nested repository", false),
        a("create .git/hooks/pre-commit in a nested repository", false),
        a(ATTEMPT_GIT_INCLUDE, false),
        a(ATTEMPT_GIT_HOOKS_PATH, false),
        a(ATTEMPT_GIT_FSMONITOR, false),
    ]
}

/// Git's own resolution (issue class 2): what the nested repository's
/// config includes, its `core.hooksPath` directory (missing at launch) and
/// its `core.fsmonitor` program (missing at launch).
const ATTEMPT_GIT_INCLUDE: &str = "write a config file a nested repository includes (include.path)";
const ATTEMPT_GIT_HOOKS_PATH: &str =
    "create a hook in the missing core.hooksPath directory of a nested repository";
const ATTEMPT_GIT_FSMONITOR: &str =
    "create the missing core.fsmonitor program of a nested repository";
/// Names, relative to the nested repository, of what its config names.
const GIT_INCLUDE_FILE: &str = "zot-check-include.cfg";
const GIT_HOOKS_DIR: &str = "zot-check-hooks";
const GIT_FSMONITOR: &str = "tools/zot-check-fsmonitor";

/// Issue classes 1, 5 and 6 of the third hardening round.
const ATTEMPT_FANOTIFY: &str = "fanotify_init (watch other processes' accesses to a host file)";
const ATTEMPT_THREADS: &str = "threads beyond the process limit";
const ATTEMPT_MEMORY: &str = "memory beyond the memory limit";
const ATTEMPT_ENV_CREDENTIAL: &str =
    "read a credential file named by $GOOGLE_APPLICATION_CREDENTIALS";
const ATTEMPT_XDG_CREDENTIAL: &str = "read ~/.config/gh/hosts.yml moved by $XDG_CONFIG_HOME";
const ATTEMPT_ZOT_STATE: &str = "read a session in zot's own state ($ZOT_HOME)";
/// The memory limit of the check's run (where a cgroup enforces one).
const CHECK_MEMORY: u64 = 256 << 20;

const ATTEMPT_HOME_CREDENTIAL: &str = "read ~/.git-credentials (default deny list, $HOME)";
const ATTEMPT_USER_HOME_CREDENTIAL: &str =
    "read ~/.config/gh/hosts.yml (default deny list, the password database's home)";

/// Run the check. Errors only for local failures (temp dirs, listener);
/// a backend that can't run is a failed report, not an error.
pub fn check(req: &CheckRequest) -> Result<CheckReport, SupervisorError> {
    let start = Instant::now();
    let host = zot_probes::host().report();
    let required: Vec<Feature> = if req.require.is_empty() {
        vec![Feature::Fs, Feature::Net, Feature::Seccomp]
    } else {
        let mut r = req.require.clone();
        r.sort();
        r.dedup();
        r
    };
    let fixture = Fixture::create()?;
    let mut policy = fixture.policy(req.mode)?;
    // Credentials named by the environment, and zot's own state, as a
    // caller's environment would name them.
    let named_env = fixture.named_env();
    policy = crate::creds::with_credentials(&policy, &named_env);
    let memory_enforced = crate::cgroup::memory_usable().is_ok();
    policy.limits.memory = CHECK_MEMORY;
    let mut report = CheckReport {
        host,
        mode: req.mode,
        backend: BackendKind::Unconfined,
        backend_reasons: Vec::new(),
        enforced: Default::default(),
        required: required.clone(),
        missing: Vec::new(),
        checks: Vec::new(),
        ok: false,
        duration_ms: 0,
    };
    let env: Vec<_> = std::env::vars_os().collect();
    let resolved = match resolve::prepare(&policy, req.backend, true, &env) {
        Ok(r) => r,
        Err(e) => {
            report.backend_reasons.push(zot_launcher::error_chain(&e));
            report.missing = required;
            report.duration_ms = start.elapsed().as_millis() as u64;
            return Ok(report);
        }
    };
    report.backend = resolved.backend.kind();
    report.backend_reasons = resolved.report.backend_reasons();
    fill_enforced(&mut report, &resolved.report);
    if resolved.backend == Backend::Unconfined {
        report
            .backend_reasons
            .push("danger-full-access confines nothing: no attempt was run".into());
        for f in Feature::ALL {
            report.enforced.insert(f.as_str().into(), Level::None);
        }
        report.missing = required;
        report.duration_ms = start.elapsed().as_millis() as u64;
        return Ok(report);
    }

    let listener = TcpListener::bind("127.0.0.1:0").map_err(SupervisorError::io(
        "binding a loopback listener for the check",
    ))?;
    listener.set_nonblocking(true).ok();
    let port = listener.local_addr().ok().map(|a| a.port());
    // A host unix socket where host daemons keep theirs (the host /tmp).
    let sock_dir = tempfile::Builder::new()
        .prefix("zot-check-sock-")
        .tempdir()
        .map_err(SupervisorError::io("creating the socket dir for the check"))?;
    let sock_path = sock_dir.path().join("host.sock");
    let unix_listener = std::os::unix::net::UnixListener::bind(&sock_path).map_err(
        SupervisorError::io("binding a host unix socket for the check"),
    )?;
    unix_listener.set_nonblocking(true).ok();
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(sock_dir.path(), std::fs::Permissions::from_mode(0o755));
        let _ = std::fs::set_permissions(&sock_path, std::fs::Permissions::from_mode(0o777));
    }
    let mut spec = fixture.attempt_spec(port);
    spec.unix_socket = Some(sock_path.clone());
    let host = HostBits::create(&fixture);
    spec.outside_socket = host.stream.as_ref().map(|(p, _)| p.clone());
    spec.workspace_dgram = host.dgram.as_ref().map(|(p, _)| p.clone());
    spec.netns_socket = host.netns.as_ref().map(|n| n.path.clone());
    spec.host_shm_file = host.shm_file.clone();
    spec.host_shmid = host.shmid;
    spec.host_pty = host.pty.as_ref().map(|(p, _, _)| p.clone());
    spec.tmp_size = Some(policy.limits.tmp_size);
    spec.max_procs = Some(policy.limits.max_procs);
    spec.memory = memory_enforced.then_some(CHECK_MEMORY);
    let json = serde_json::to_string(&spec).map_err(|e| SupervisorError::Io {
        what: "encoding the attempt spec".into(),
        source: e.into(),
    })?;
    let run = attempt_run(&resolved.backend, policy.clone(), json);
    let outcome = match crate::run(run) {
        Ok(o) => o,
        Err(e) => {
            report.backend_reasons.push(format!(
                "the sandbox could not start: {}",
                zot_launcher::error_chain(&e)
            ));
            report.missing = required;
            report.duration_ms = start.elapsed().as_millis() as u64;
            return Ok(report);
        }
    };
    // Drain whatever reached the listener (nothing should).
    let leaked = listener.accept().is_ok();
    let unix_leaked = unix_listener.accept().is_ok();
    let outside_leaked = host
        .stream
        .as_ref()
        .is_some_and(|(_, l)| l.accept().is_ok());
    let dgram_leaked = host.dgram.as_ref().is_some_and(|(_, d)| {
        let mut b = [0u8; 16];
        d.recv(&mut b).is_ok()
    });
    let netns_leaked = host.netns.as_ref().is_some_and(NetnsSocket::was_reached);
    let e = &outcome.report;
    // Without the supervisor's check of connects (old kernels), a socket
    // bound after the launch or in another namespace is reachable: what
    // the report's note says, not a failure of the check.
    let late_sockets_unchecked = e.notes.iter().any(|n| {
        matches!(
            n,
            crate::Note::Gap {
                gap: zot_launcher::plan::Gap::HostSocketsAfterLaunch
            }
        )
    });
    // uid 0 on a kernel without a PID namespace's own pid_max: no limit
    // binds it (the report says so).
    let root_unlimited = e.notes.iter().any(|n| {
        matches!(
            n,
            crate::Note::Gap {
                gap: zot_launcher::plan::Gap::NoProcessLimitForRoot
            }
        )
    });
    // The check always runs (allow_degraded); `missing` says what is not full.
    report.backend_reasons = e.backend_reasons();
    fill_enforced(&mut report, e);
    let level_of = |f: Feature| {
        report
            .enforced
            .get(f.as_str())
            .copied()
            .unwrap_or(Level::None)
    };
    report.missing = required
        .iter()
        .copied()
        .filter(|f| level_of(*f) != Level::Full)
        .collect();

    let outcomes: Vec<AttemptOutcome> = match serde_json::from_slice(&outcome.stdout) {
        Ok(v) => v,
        Err(_) => {
            let err = String::from_utf8_lossy(&outcome.stderr);
            report.checks.push(CheckLine {
                name: "attempt runner".into(),
                feature: Feature::Fs,
                result: "error".into(),
                detail: format!(
                    "exit code {}; {}",
                    outcome.exit_code,
                    err.lines().last().unwrap_or("no output")
                ),
            });
            report.duration_ms = start.elapsed().as_millis() as u64;
            return Ok(report);
        }
    };
    let mounts = matches!(resolved.backend, Backend::Bwrap { .. } | Backend::Native);
    let mut all_fine = true;
    for a in attempts(req.mode) {
        let Some(o) = outcomes.iter().find(|o| o.name == a.name) else {
            all_fine = false;
            report.checks.push(CheckLine {
                name: a.name.into(),
                feature: a.feature,
                result: "error".into(),
                detail: "no result from the runner".into(),
            });
            continue;
        };
        let mut succeeded = o.succeeded;
        let mut detail = o.detail.clone();
        if a.name == "connect to a host unix socket" && unix_leaked {
            succeeded = true;
            detail.push_str(" (the host socket saw a connection)");
        }
        if a.name == "connect to a host unix socket outside /tmp" && outside_leaked {
            succeeded = true;
            detail.push_str(" (the host socket saw a connection)");
        }
        if a.name == "sendto a host datagram socket in the workspace" && dgram_leaked {
            succeeded = true;
            detail.push_str(" (the host socket received a datagram)");
        }
        let netns_attempt = a.name == "connect to a unix socket of another network namespace";
        if netns_attempt && netns_leaked {
            succeeded = true;
            detail.push_str(" (the socket saw a connection)");
        }
        if a.feature == Feature::Net && a.name.starts_with("tcp") && leaked {
            succeeded = true;
            detail.push_str(" (the listener saw a connection)");
        }
        let result = if a.control {
            if succeeded {
                "ok"
            } else {
                "failed"
            }
        } else if !succeeded {
            "refused"
        } else if required.contains(&a.feature) && level_of(a.feature) != Level::Full {
            "allowed" // required but not enforced: counts against ok
        } else if (a.needs_mounts && !mounts)
            || level_of(a.feature) == Level::None
            || (netns_attempt && late_sockets_unchecked)
            || (a.name == ATTEMPT_MEMORY && !memory_enforced)
            || (a.name == ATTEMPT_THREADS && root_unlimited)
        {
            "not-enforced"
        } else {
            "allowed"
        };
        if matches!(result, "failed" | "allowed" | "error") {
            all_fine = false;
        }
        report.checks.push(CheckLine {
            name: a.name.into(),
            feature: a.feature,
            result: result.into(),
            detail,
        });
    }
    for l in proxied::proxy_lines(&resolved.backend, &policy, &fixture) {
        if matches!(l.result.as_str(), "failed" | "allowed" | "error") {
            all_fine = false;
        }
        report.checks.push(l);
    }
    if policy.network == NetworkPolicy::On {
        report.backend_reasons.push("network: on by policy".into());
    }
    report.ok = all_fine && report.missing.is_empty();
    report.duration_ms = start.elapsed().as_millis() as u64;
    Ok(report)
}

/// A listening socket bound in a new user and network namespace by a
/// forked child, which reports each connection it accepts on a pipe.
struct NetnsSocket {
    path: PathBuf,
    _child: zot_process::child::Child,
    reports: std::os::fd::OwnedFd,
}

impl NetnsSocket {
    fn create(dir: &Path) -> Option<NetnsSocket> {
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

    fn was_reached(&self) -> bool {
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

/// The request that runs the attempt runner (the `zot` binary with
/// [`ATTEMPTS_ARG`] and the encoded spec) under `policy` on `backend`.
fn attempt_run(backend: &Backend, policy: SandboxPolicy, json: String) -> RunRequest {
    let mut run = RunRequest::new(
        policy,
        vec![
            // The launcher is the zot binary; its path may be hidden inside
            // the sandbox (e.g. under the private /tmp), /proc/self/exe is not.
            "/proc/self/exe".into(),
            "debug".into(),
            "sandbox".into(),
            ATTEMPTS_ARG.into(),
            json.into(),
        ],
    );
    run.backend = match backend {
        Backend::Bwrap { .. } => BackendChoice::Bwrap,
        Backend::Native => BackendChoice::Native,
        _ => BackendChoice::Landlock,
    };
    run.allow_degraded = true;
    run.in_process = true;
    run.zot_as_launcher = true;
    run.timeout = Some(Duration::from_secs(20));
    run.output = Output::Capture { max_bytes: 1 << 20 };
    run.stdin = Stdin::Null;
    run
}

/// Host objects the attempts aim at; removed when dropped.
struct HostBits {
    netns: Option<NetnsSocket>,
    stream: Option<(PathBuf, std::os::unix::net::UnixListener)>,
    dgram: Option<(PathBuf, std::os::unix::net::UnixDatagram)>,
    shm_file: Option<PathBuf>,
    shmid: Option<i32>,
    /// Path, master and slave fds.
    pty: Option<(PathBuf, std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
}

impl HostBits {
    /// Whatever can be made here (a missing one fails its attempt as
    /// "not available", which counts as refused: nothing was reached).
    fn create(f: &Fixture) -> HostBits {
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

fn fill_enforced(report: &mut CheckReport, e: &crate::EnforcementReport) {
    for (f, level) in [
        (Feature::Fs, e.filesystem),
        (Feature::Net, e.network),
        (Feature::Pid, e.pid),
        (Feature::Seccomp, e.seccomp),
        (Feature::Landlock, e.landlock),
        (Feature::Limits, e.limits),
    ] {
        report.enforced.insert(f.as_str().into(), level);
    }
}

/// The temporary workspace, outside dir and fake home of a check.
struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    /// The second fake home: the password database's (`user_home`).
    user_home: PathBuf,
    /// `<workspace>/vendor/lib/dep`, a repository.
    nested_repo: PathBuf,
    token: String,
    etc_probe: PathBuf,
    /// A throwaway host process the attempts try to see and ptrace. Never
    /// the check process itself: if an attempt escaped, a successful
    /// PTRACE_SEIZE of our own process could leave it stopped.
    target: Target,
}

/// A child that only sleeps in `pause()` until killed (and reaped) on drop.
struct Target(zot_process::child::Child);

impl Target {
    fn spawn() -> std::io::Result<Target> {
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

    fn id(&self) -> u32 {
        self.0.pid() as u32
    }
}

impl Fixture {
    fn create() -> Result<Fixture, SupervisorError> {
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

    fn policy(&self, mode: SandboxMode) -> Result<SandboxPolicy, SupervisorError> {
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
    fn named_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
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

    fn named(&self) -> NamedSpec {
        let root = self.outside.parent().unwrap_or(&self.outside).to_path_buf();
        NamedSpec {
            env_file: root.join("keys/service-account.json"),
            xdg_store: root.join("xdg/gh/hosts.yml"),
            zot_state: root.join("zot-home/sessions/s.jsonl"),
        }
    }

    fn attempt_spec(&self, port: Option<u16>) -> AttemptSpec {
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
fn plant_credentials_and_repo(
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

fn starttime(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

// ------------------------------------------------------------ the runner

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
fn run_round3_attempts(spec: &AttemptSpec) -> Vec<AttemptOutcome> {
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

fn outcome(name: &str, r: Result<String, String>) -> AttemptOutcome {
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

fn run_credential_and_git_attempts(spec: &AttemptSpec) -> Vec<AttemptOutcome> {
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

fn read_file(p: &Path) -> Result<String, String> {
    let mut s = String::new();
    std::fs::File::open(p)
        .and_then(|mut f| f.read_to_string(&mut s))
        .map(|_| s)
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn write_file(p: &Path) -> Result<String, String> {
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
fn in_child(f: impl FnOnce() -> libc::c_int) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_parse() {
        assert_eq!("fs".parse::<Feature>().unwrap(), Feature::Fs);
        assert!("disk".parse::<Feature>().unwrap_err().contains("fs, net"));
    }

    #[test]
    fn runner_outside_a_sandbox_reports_escapes() {
        // Unconfined, the runner must see its own attacks succeed: proves
        // the attempts can fail (no hard-coded answers).
        let f = Fixture::create().unwrap();
        let spec = f.attempt_spec(None);
        let out = run_attempts(&spec);
        let get = |n: &str| out.iter().find(|o| o.name == n).unwrap().succeeded;
        assert!(get("control: read inside workspace"));
        assert!(get("control: write inside workspace"));
        assert!(get("write outside workspace"));
        assert!(get("write through symlink to outside"));
        assert!(get("read planted ~/.ssh secret"));
        assert!(get("write protected .git/config"));
        assert!(get("see a host process"));
        assert!(get(ATTEMPT_HOME_CREDENTIAL));
        assert!(get(ATTEMPT_USER_HOME_CREDENTIAL));
        assert!(get("control: write a file in a nested repository"));
        assert!(get("write .git/config of a nested repository"));
        assert!(get("create .git/hooks/pre-commit in a nested repository"));
        assert!(get(ATTEMPT_GIT_INCLUDE));
        assert!(get(ATTEMPT_GIT_HOOKS_PATH));
        assert!(get(ATTEMPT_GIT_FSMONITOR));
        assert!(!get("tcp connect to host loopback listener")); // no listener given
                                                                // every attempt of the table has a runner result
        for a in attempts(SandboxMode::WorkspaceWrite)
            .iter()
            .chain(attempts(SandboxMode::ReadOnly).iter())
        {
            assert!(out.iter().any(|o| o.name == a.name), "{}", a.name);
        }
    }
}
