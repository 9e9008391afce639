//! The one place where `zot run` meets the other crates: manifest loading
//! (`zot_package` / `zot_policy::zotfile`), the risk gate
//! (`zot_policy::gate`), the agent sandbox policy (`zot_policy::sandbox`) and
//! the supervisor. Everything else in this crate uses only the types here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::RunError;

/// `permissions.bash.mode`: the manifest model's own type.
pub use zot_policy::zotfile::BashMode;

/// What `zot run` needs from a manifest.
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub min_zot: Option<String>,
    pub model_requires: Vec<String>,
    pub min_context: Option<u64>,
    pub preferred: Vec<String>,
    /// An agent.toml `[model]` pin: `(provider, model)`.
    pub model_pin: Option<(String, String)>,
    pub fs_read: Vec<String>,
    pub fs_write: Vec<String>,
    pub bash_mode: BashMode,
    pub bash_allow: Vec<String>,
    pub net_allow: Vec<String>,
    pub env_read: Vec<String>,
    pub req_os: Vec<String>,
    pub req_bin: Vec<String>,
    pub entry_pre: Option<String>,
    pub default_prompt: Option<String>,
    /// Shown when the interactive mode starts (`entry.greeting`, agent.toml
    /// `intro_markdown`).
    pub greeting: Option<String>,
    pub replace_system_prompt: bool,
    /// Instructions given in the package itself (agent.toml); `None` for a
    /// zotfile, whose instructions are `AGENT.md`.
    pub instructions: Option<String>,
    /// Model steps allowed per turn (agent.toml `max_iterations`).
    pub max_steps: Option<u32>,
}

/// A loaded agent: its files on disk (a directory, or a private extraction
/// that lives as long as this value), manifest and artifact digest.
pub struct LoadedAgent {
    pub root: PathBuf,
    pub spec: AgentSpec,
    pub digest: String,
    /// Loader warnings (shown, never fatal).
    pub warnings: Vec<String>,
    /// Keeps an archive's extraction alive.
    pub _package: Option<zot_package::Agent>,
    /// Keeps a downloaded repository or an archive's extraction alive:
    /// journaled temp dirs, removed when this value is dropped (or by the
    /// next zot run when this process is killed).
    pub _scratch: Vec<zot_supervisor::journal::TempDir>,
    /// An agent.toml package: its session files are seeded into the
    /// workspace.
    pub toml: Option<zot_package::agent_toml::AgentPackage>,
    /// The publisher signature that verified, when the archive had one by
    /// a trusted key (see `trust`).
    pub signature: Option<zot_package::signature::Verified>,
    /// Where a registry agent was resolved to (`REGISTRY/REPO@DIGEST`):
    /// shown before consent and kept in the receipt.
    pub source: Option<String>,
}

impl LoadedAgent {
    /// Seed an agent.toml package's files and skills into `dir`, a session's
    /// file tree (only when `dir` does not exist yet: a resumed session
    /// keeps its tree). Returns the read-only seeds.
    pub fn seed(&self, dir: &Path) -> Result<Vec<PathBuf>, RunError> {
        let Some(pkg) = &self.toml else {
            return Ok(Vec::new());
        };
        let ro: Vec<PathBuf> = pkg
            .files
            .iter()
            .filter(|f| f.readonly)
            .map(|f| dir.join(&f.dest))
            .collect();
        if !dir.exists() {
            let tmp = dir.with_extension("seeding");
            let _ = std::fs::remove_dir_all(&tmp);
            crate::home::private_dir(&tmp)
                .map_err(|e| RunError::io(format!("session files {}", tmp.display()), e))?;
            pkg.seed_files(&tmp)
                .and_then(|_| pkg.seed_skills(&tmp))
                .and_then(|_| std::fs::rename(&tmp, dir))
                .map_err(|e| {
                    RunError::io(format!("seeding session files into {}", dir.display()), e)
                })?;
        }
        Ok(ro)
    }
}

/// Load an agent.toml package (folder or ZIP) as an agent. Fields this
/// host cannot honour refuse the run; ignorable ones become warnings.
pub fn open_agent_toml(path: &Path) -> Result<LoadedAgent, RunError> {
    use zot_package::agent_toml::{self as at, UnsupportedAction};
    let pkg = at::load(path).map_err(|d| RunError::Manifest {
        what: path.display().to_string(),
        source: Some(d.into()),
    })?;
    let mut warnings = Vec::new();
    let mut refused = Vec::new();
    for u in pkg.unsupported() {
        match u.action {
            UnsupportedAction::Refuse => refused.push(format!("{}: {}", u.path, u.message)),
            _ => warnings.push(format!("{}: {}", u.path, u.message)),
        }
    }
    if !refused.is_empty() {
        return Err(RunError::unenforced(format!(
            "agent.toml package {}: {}",
            pkg.name,
            refused.join("; ")
        )));
    }
    let root = path
        .canonicalize()
        .map_err(|e| RunError::io(path.display().to_string(), e))?;
    let spec = AgentSpec {
        name: pkg.name.clone(),
        description: pkg.manifest.description.clone(),
        model_pin: pkg.model().map(|m| (m.provider.clone(), m.model.clone())),
        fs_read: vec!["${workspace}".into()],
        fs_write: vec!["${workspace}".into()],
        instructions: Some(pkg.instructions.clone()),
        max_steps: pkg.max_iterations(),
        greeting: pkg
            .manifest
            .intro_markdown
            .clone()
            .filter(|s| !s.trim().is_empty()),
        ..Default::default()
    };
    Ok(LoadedAgent {
        root,
        spec,
        digest: pkg.digest(),
        warnings,
        _package: None,
        _scratch: Vec::new(),
        toml: Some(pkg),
        signature: None,
        source: None,
    })
}

fn spec_of(m: &zot_policy::zotfile::Manifest) -> AgentSpec {
    AgentSpec {
        name: m.name.clone(),
        version: m.version.clone().filter(|v| !v.is_empty()),
        description: m.description.clone(),
        min_zot: m.runtime.min_zot.clone().filter(|v| !v.is_empty()),
        model_requires: m
            .model
            .requires
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        min_context: m.model.min_context,
        preferred: m.model.preferred.clone(),
        model_pin: None,
        fs_read: m.permissions.fs.read.clone(),
        fs_write: m.permissions.fs.write.clone(),
        bash_mode: m.permissions.bash.mode,
        bash_allow: m.permissions.bash.allow.clone(),
        net_allow: m.permissions.net.allow.clone(),
        env_read: m.permissions.env.read.clone(),
        req_os: m.requirements.os.clone(),
        req_bin: m.requirements.bin.clone(),
        entry_pre: m.entry.pre.clone().filter(|s| !s.is_empty()),
        default_prompt: m.entry.default_prompt.clone().filter(|s| !s.is_empty()),
        greeting: m.entry.greeting.clone().filter(|s| !s.trim().is_empty()),
        replace_system_prompt: m.replace_system_prompt,
        instructions: None,
        max_steps: None,
    }
}

/// Load an agent from a local directory or `.zot` archive (validated by
/// the package loader).
pub fn open_agent(path: &Path) -> Result<LoadedAgent, RunError> {
    if !path.join("manifest.json").exists() && zot_package::agent_toml::detect(path) {
        return open_agent_toml(path);
    }
    let mut scratch = Vec::new();
    let pkg = if path.is_file() {
        let dir = scratch_dir("zot-agent-")?;
        let pkg = zot_package::open_in(path, &zot_package::Limits::DEFAULT, dir.path())
            .map_err(RunError::Package)?;
        scratch.push(dir);
        pkg
    } else {
        zot_package::open(path).map_err(RunError::Package)?
    };
    Ok(LoadedAgent {
        root: pkg.root.clone(),
        spec: spec_of(&pkg.manifest),
        digest: pkg.digest.clone(),
        warnings: pkg.warnings.clone(),
        _package: Some(pkg),
        _scratch: scratch,
        toml: None,
        signature: None,
        source: None,
    })
}

/// A private temp dir in `$TMPDIR`, journaled under zot's state dir before
/// it is made, so a killed run's leftovers are removed by the next zot run.
pub fn scratch_dir(prefix: &str) -> Result<zot_supervisor::journal::TempDir, RunError> {
    let home = crate::home::zot_home()?;
    zot_supervisor::journal::for_process(&home)
        .temp_dir(&std::env::temp_dir(), prefix)
        .map_err(|e| RunError::Journal(Box::new(e)))
}

/// Extract a GitHub repository `.tar.gz` archive into `dest` (an empty
/// private directory) with the package extraction limits; returns the
/// repository's top-level directory inside `dest`.
pub fn extract_github_archive(bytes: &[u8], dest: &Path) -> Result<PathBuf, RunError> {
    let limits = &zot_package::Limits::DEFAULT;
    zot_package::extract_tar_gz_limited(bytes, dest, limits).map_err(|e| RunError::Reference {
        what: "github archive".into(),
        source: Some(e.into()),
    })?;
    let tops: Vec<PathBuf> = std::fs::read_dir(dest)
        .map_err(|e| RunError::io("github archive", e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    match tops.as_slice() {
        [one] if one.is_dir() => Ok(one.clone()),
        _ => Err(RunError::reference(
            "github archive: expected one top-level directory",
        )),
    }
}

// ------------------------------------------------------------------ gate

pub use zot_policy::gate::{Decision as GateDecision, Verdict as GateVerdict};

/// The risk gate's verdict on a shell command for a bash mode.
pub fn gate(command: &str, mode: BashMode, allow: &[String]) -> GateVerdict {
    use zot_policy::gate as g;
    let m = match mode {
        BashMode::None => g::GateMode::None,
        BashMode::Ask => g::GateMode::Ask,
        BashMode::Allowlist => g::GateMode::Allowlist,
    };
    g::evaluate(command, m, allow)
}

// --------------------------------------------------------------- sandbox

pub use zot_policy::sandbox::SandboxPolicy;

/// Inputs of the agent sandbox policy (all paths absolute and canonical
/// where they exist).
#[derive(Debug, Clone)]
pub struct AgentPolicyInput {
    pub workspace: PathBuf,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// zot's state directory: never writable by the agent's commands
    /// (consent receipts live there) and its sessions and other agents'
    /// files are unreadable, even when a scope covers it.
    pub zot_home: PathBuf,
    /// This agent's name (its own data dir stays as granted).
    pub agent: String,
    /// Files inside write scopes that stay read-only (agent.toml seeds).
    pub read_only: Vec<PathBuf>,
    /// `net.allow` rules: the commands reach these hosts through the
    /// filtering proxy, nothing else (empty: no network).
    pub net_allow: Vec<String>,
    /// Exact variable names passed into the commands' environment.
    pub env_read: Vec<String>,
    /// The config file's `[sandbox]` limits.
    pub limits: zot_policy::limits::Limits,
}

/// Compile the restricted-read policy an agent's bash runs under. The
/// command's working directory is the workspace when a scope covers it,
/// else the first write scope, else the first read scope.
pub fn agent_policy(input: &AgentPolicyInput) -> Result<SandboxPolicy, RunError> {
    let in_scope = |p: &Path| {
        input
            .read
            .iter()
            .chain(input.write.iter())
            .any(|r| p.starts_with(r))
    };
    let cwd = if in_scope(&input.workspace) {
        input.workspace.clone()
    } else if let Some(w) = input.write.first().or(input.read.first()) {
        w.clone()
    } else {
        return Err(RunError::manifest(
            "the agent has no filesystem scope to run commands in (fs.read and fs.write are empty)",
        ));
    };
    // What git reads or runs in the repositories of the write scopes, and
    // the caller's PATH directories inside them, are the workspace index's
    // (see `start_index`): added at each launch, checked by the file tools.
    let opts = zot_policy::sandbox::AgentSandboxOptions {
        cwd,
        read_scopes: input.read.clone(),
        write_scopes: input.write.clone(),
        env_read: input.env_read.clone(),
        network: false,
        ..Default::default()
    };
    let mut policy =
        zot_policy::sandbox::agent_policy(&opts).map_err(RunError::Policy)?;
    if !input.net_allow.is_empty() {
        let allow =
            zot_policy::net::AllowList::parse(&input.net_allow).map_err(RunError::net_allow)?;
        policy.network = zot_policy::sandbox::NetworkPolicy::Proxied {
            allow,
            socket_dir: None,
        };
    }
    policy.limits = input.limits.clone();
    let home = crate::perms::canonical_prefix(&input.zot_home);
    policy.protected.extend(input.read_only.iter().cloned());
    if input.write.iter().any(|r| home.starts_with(r)) {
        policy.protected.push(home.clone());
    }
    if in_scope(&home) || in_scope(&home.join("agents")) || in_scope(&home.join("sessions")) {
        policy.deny_read.push(home.join("sessions"));
        let own = home.join("agents").join(&input.agent);
        policy.deny_read.push(own.join("consents"));
        if let Ok(rd) = std::fs::read_dir(home.join("agents")) {
            policy
                .deny_read
                .extend(rd.flatten().map(|e| e.path()).filter(|p| *p != own));
        }
    }
    policy.protected.sort();
    policy.protected.dedup();
    policy.deny_read.sort();
    policy.deny_read.dedup();
    Ok(policy)
}

/// How [`run_sandboxed`] runs a command.
pub struct RunLimits<'a> {
    /// The whole tree is killed after this long (TERM, then KILL).
    pub timeout: Duration,
    /// Output kept per stream.
    pub max_bytes: usize,
    /// `--backend`, when given.
    pub backend: Option<&'a str>,
    /// Stops the command (its signal, then KILL) when it fires.
    pub cancel: Option<&'a zot_supervisor::Cancel>,
    /// Sees the output as it comes.
    pub live_output: Option<zot_supervisor::OutputSink>,
    /// The session's workspace index.
    pub index: Option<&'a std::sync::Arc<zot_supervisor::index::live::Live>>,
}

/// Run `argv` under `policy` with the supervisor: output captured, stdin
/// from /dev/null, the whole tree killed on timeout or cancellation. A host
/// that cannot fully enforce the policy is an error (never a silent
/// downgrade).
pub fn run_sandboxed(
    policy: &SandboxPolicy,
    argv: &[String],
    limits: &RunLimits<'_>,
) -> Result<zot_supervisor::RunOutcome, RunError> {
    use zot_supervisor as sv;
    let mut req = sv::RunRequest::new(policy.clone(), argv.iter().map(Into::into).collect());
    if let Some(b) = limits.backend {
        req.backend = b.parse().map_err(RunError::Usage)?;
    }
    req.timeout = Some(limits.timeout);
    req.output = sv::Output::Capture {
        max_bytes: limits.max_bytes,
    };
    req.stdin = sv::Stdin::Null;
    req.cancel = limits.cancel.cloned();
    // What the run creates outside the state dir (the proxy's directory)
    // is journaled, so a killed run's is swept by the next zot command.
    req.journal = crate::home::zot_home()
        .ok()
        .map(|h| zot_supervisor::journal::for_process(&h));
    req.on_output = limits.live_output.clone();
    req.index = limits.index.cloned();
    sv::run(req).map_err(RunError::Sandbox)
}

/// The session's workspace index of `policy`'s writable roots, built in
/// the background from now on (while the first model request is in
/// flight) and kept current from inotify events. `None` without writable
/// roots.
pub fn start_index(
    policy: &Result<SandboxPolicy, String>,
    zot_home: &Path,
) -> Option<std::sync::Arc<zot_supervisor::index::live::Live>> {
    let p = policy.as_ref().ok()?;
    if p.write_roots.is_empty() || p.mode == zot_policy::sandbox::SandboxMode::DangerFullAccess {
        return None;
    }
    Some(zot_supervisor::index::live::Live::start(
        &p.write_roots,
        Some(zot_home),
    ))
}

/// What the host adds to `policy`'s protected paths (git files of every
/// repository in the writable roots, unlistable directories, `PATH`
/// directories), from the session's index: the same list each launch adds.
pub fn host_protections(
    policy: &SandboxPolicy,
    index: Option<&std::sync::Arc<zot_supervisor::index::live::Live>>,
) -> zot_supervisor::resolve::HostProtections {
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    zot_supervisor::resolve::host_protections(
        &policy.write_roots,
        &env,
        index,
        &zot_supervisor::resolve::path_cwds(policy),
    )
}

/// A long-lived command started by [`run_service`].
pub struct Service {
    /// The write end of the command's stdin (dropping it closes stdin).
    pub stdin: std::fs::File,
    /// Fires TERM, then KILL after the grace (the supervisor's cancel).
    pub cancel: zot_supervisor::Cancel,
    /// Ends with the command: its outcome, or why it could not start.
    pub done: std::thread::JoinHandle<Result<zot_supervisor::RunOutcome, RunError>>,
}

/// Start `argv` under `policy` with the supervisor, as [`run_sandboxed`]
/// does (same backends, same refusal of a host that cannot enforce the
/// policy), but long-lived: stdin is a pipe the caller writes to, stdout
/// and stderr go to `sink` as they come (nothing is kept), no timeout;
/// `kill_grace` between TERM and KILL when cancelled.
pub fn run_service(
    policy: &SandboxPolicy,
    argv: &[String],
    backend: Option<&str>,
    sink: zot_supervisor::OutputSink,
    kill_grace: Duration,
) -> Result<Service, RunError> {
    use std::os::fd::AsRawFd;
    use zot_supervisor as sv;
    let mut req = sv::RunRequest::new(policy.clone(), argv.iter().map(Into::into).collect());
    if let Some(b) = backend {
        req.backend = b.parse().map_err(RunError::Usage)?;
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| RunError::io("creating a pipe", e.into()))?;
    let cancel = sv::Cancel::new().map_err(|e| RunError::io("cancellation pipe", e))?;
    req.stdin = sv::Stdin::Fd(r.as_raw_fd());
    req.output = sv::Output::Forward {
        max_bytes: usize::MAX,
    };
    req.on_output = Some(sink);
    req.timeout = None;
    req.kill_grace = kill_grace;
    req.cancel = Some(cancel.clone());
    req.journal = crate::home::zot_home()
        .ok()
        .map(|h| zot_supervisor::journal::for_process(&h));
    let done = std::thread::Builder::new()
        .name("zot-service".into())
        .spawn(move || {
            // The read end stays open until the run ends (the supervisor
            // duplicates it into the command when it starts).
            let _r = r;
            sv::run(req).map_err(RunError::Sandbox)
        })
        .map_err(|e| RunError::io("starting a thread", e))?;
    Ok(Service {
        stdin: std::fs::File::from(w),
        cancel,
        done,
    })
}
