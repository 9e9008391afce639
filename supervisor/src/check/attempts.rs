//! The attempt catalog of `--check`: what each mode must refuse, and the
//! wire types between the check and its in-sandbox runner.

use super::*;

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
pub(super) struct Attempt {
    pub(super) name: &'static str,
    pub(super) feature: Feature,
    /// Only mount-based backends (bwrap, native) enforce it.
    pub(super) needs_mounts: bool,
    /// A control: must succeed (ws-write only for writes inside the workspace).
    pub(super) control: bool,
}

pub(super) fn attempts(mode: SandboxMode) -> Vec<Attempt> {
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
pub(super) fn credential_and_git_attempts(mode: SandboxMode) -> Vec<Attempt> {
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
pub(super) const ATTEMPT_GIT_INCLUDE: &str =
    "write a config file a nested repository includes (include.path)";

pub(super) const ATTEMPT_GIT_HOOKS_PATH: &str =
    "create a hook in the missing core.hooksPath directory of a nested repository";

pub(super) const ATTEMPT_GIT_FSMONITOR: &str =
    "create the missing core.fsmonitor program of a nested repository";

/// Names, relative to the nested repository, of what its config names.
pub(super) const GIT_INCLUDE_FILE: &str = "zot-check-include.cfg";

pub(super) const GIT_HOOKS_DIR: &str = "zot-check-hooks";

pub(super) const GIT_FSMONITOR: &str = "tools/zot-check-fsmonitor";

/// Issue classes 1, 5 and 6 of the third hardening round.
pub(super) const ATTEMPT_FANOTIFY: &str =
    "fanotify_init (watch other processes' accesses to a host file)";

pub(super) const ATTEMPT_THREADS: &str = "threads beyond the process limit";

pub(super) const ATTEMPT_MEMORY: &str = "memory beyond the memory limit";

pub(super) const ATTEMPT_ENV_CREDENTIAL: &str =
    "read a credential file named by $GOOGLE_APPLICATION_CREDENTIALS";

pub(super) const ATTEMPT_XDG_CREDENTIAL: &str =
    "read ~/.config/gh/hosts.yml moved by $XDG_CONFIG_HOME";

pub(super) const ATTEMPT_ZOT_STATE: &str = "read a session in zot's own state ($ZOT_HOME)";

/// The memory limit of the check's run (where a cgroup enforces one).
pub(super) const CHECK_MEMORY: u64 = 256 << 20;

pub(super) const ATTEMPT_HOME_CREDENTIAL: &str =
    "read ~/.git-credentials (default deny list, $HOME)";

pub(super) const ATTEMPT_USER_HOME_CREDENTIAL: &str =
    "read ~/.config/gh/hosts.yml (default deny list, the password database's home)";
