//! `zot sandbox [OPTIONS] -- CMD [ARGS...]`: run a command confined by the
//! OS sandbox (see docs/sandbox.md). Exit codes: the command's own; 128+N
//! when killed by signal N; 124 timeout; 125 sandbox setup failure; 126/127.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use zot_policy::sandbox::{compile, SandboxMode, SandboxOptions, SandboxPolicy};
use zot_supervisor::{BackendChoice, Output, RunRequest, Stdin};

/// Exit code when the sandbox could not be set up.
pub const SETUP_FAILURE: u8 = 125;

/// One line of `zot --help` for this subcommand.
pub const ABOUT: &str = "Run a command confined by the OS sandbox";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// read-only, workspace-write or danger-full-access
    #[arg(long, default_value = "read-only")]
    pub mode: SandboxMode,
    /// Working directory of the command (writable in workspace-write);
    /// default: the current directory
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Another writable directory (workspace-write; repeatable)
    #[arg(long = "writable-root", value_name = "PATH")]
    pub writable_roots: Vec<PathBuf>,
    /// Keep this path read-only even inside a writable root (repeatable)
    #[arg(long = "read-only-path", value_name = "PATH")]
    pub read_only_paths: Vec<PathBuf>,
    /// Make this path unreadable (repeatable; adds to the default list)
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Allow the host network (workspace-write)
    #[arg(long)]
    pub net: bool,
    /// Pass this environment variable (or PREFIX*) through (repeatable)
    #[arg(long = "env-allow", value_name = "VAR")]
    pub env_allow: Vec<String>,
    /// Kill the command and everything it started after SECS seconds (exit 124)
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// auto, bwrap, native or landlock
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// Print what was enforced to stderr after the command
    #[arg(long)]
    pub report: bool,
    /// Run even when the mode cannot be fully enforced (and report it)
    #[arg(long)]
    pub allow_degraded: bool,
    /// Copy at most BYTES of stdout and of stderr; drop the rest
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
    /// Use the restricted-read view of a zotfile agent (platform dirs and
    /// --read-scope read-only, cwd and --writable-root read-write, HOME=/tmp)
    #[arg(long, hide = true)]
    pub agent_view: bool,
    /// With --agent-view: a read-only scope (repeatable)
    #[arg(
        long = "read-scope",
        value_name = "PATH",
        hide = true,
        requires = "agent_view"
    )]
    pub read_scopes: Vec<PathBuf>,
    /// Exec the zot binary as the launcher (as `zot run` does on the native
    /// and landlock backends; inside bwrap instead of the launcher image)
    /// rather than running its code in a forked child (tests, comparisons)
    #[arg(long, hide = true)]
    pub exec_launcher: bool,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `path` made absolute (against `base`) and canonical as far as it exists;
/// the missing rest is appended as given (after rejecting `..`).
pub fn canonical_lenient(path: &Path, base: &Path) -> anyhow::Result<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    if let Ok(c) = std::fs::canonicalize(&abs) {
        return Ok(c);
    }
    let mut existing = abs.clone();
    let mut rest: Vec<OsString> = Vec::new();
    while !existing.exists() {
        let name = existing.file_name().map(|n| n.to_os_string());
        match (name, existing.parent()) {
            (Some(n), Some(parent)) => {
                if n == ".." || n == "." {
                    anyhow::bail!("path {} contains `..` in its missing part", abs.display());
                }
                rest.push(n);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = std::fs::canonicalize(&existing)
        .with_context(|| format!("cannot resolve {}", existing.display()))?;
    for n in rest.into_iter().rev() {
        out.push(n);
    }
    Ok(out)
}

/// Compile the command line's sandbox options into a policy (canonicalizes
/// paths, finds nested repositories in the writable roots).
pub fn policy_from_args(
    mode: SandboxMode,
    cwd: Option<&Path>,
    writable_roots: &[PathBuf],
    read_only_paths: &[PathBuf],
    deny_read: &[PathBuf],
    net: bool,
    env_allow: &[String],
) -> anyhow::Result<SandboxPolicy> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = cwd.map(|c| here.join(c)).unwrap_or_else(|| here.clone());
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let roots = writable_roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(here.join(r))
                .with_context(|| format!("--writable-root {}", r.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let read_only = read_only_paths
        .iter()
        .map(|p| canonical_lenient(p, &here))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let deny = deny_read
        .iter()
        .map(|p| canonical_lenient(p, &here))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    // Also the password database's home: a caller with HOME unset or
    // pointing elsewhere keeps the protection of their real home.
    let user_home =
        zot_supervisor::host::passwd_home().map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    // A config file this user cannot read (HOME pointing at another
    // user's home) is not theirs: as if absent.
    let loaded = match zot_agent::config::load() {
        Err(zot_agent::RunError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            zot_agent::config::Loaded::default()
        }
        r => r?,
    };
    let mut config_deny = Vec::new();
    for p in &loaded.config.sandbox.deny_read {
        let s = p.to_string_lossy();
        let full = match s.strip_prefix('~') {
            Some(rest) => match home.as_ref().or(user_home.as_ref()) {
                Some(h) => h.join(rest.trim_start_matches('/')),
                None => anyhow::bail!(
                    "config sandbox.deny_read: {s}: no home directory to expand `~` with"
                ),
            },
            None => p.clone(),
        };
        config_deny.push(canonical_lenient(&full, &here)?);
    }
    // The git files of every repository in the writable roots are added by
    // the supervisor's launch-time scan (zot_supervisor::repos).
    let opts = SandboxOptions {
        cwd,
        home,
        writable_roots: roots,
        read_only_paths: read_only,
        deny_read: deny,
        network: net,
        env_allow: env_allow.to_vec(),
        nested_repos: Vec::new(),
        user_home,
        config_deny_read: config_deny,
        config_file: loaded.path.filter(|_| loaded.exists),
        git_protected: Vec::new(),
        exec_path: Vec::new(),
    };
    Ok(compile(mode, &opts)?)
}

/// The agent view for `--agent-view` (what `zot run` builds from a manifest).
fn agent_view(args: &Args) -> anyhow::Result<SandboxPolicy> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = args
        .cwd
        .as_ref()
        .map(|c| here.join(c))
        .unwrap_or_else(|| here.clone());
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let canon = |p: &PathBuf, what: &str| {
        std::fs::canonicalize(here.join(p)).with_context(|| format!("{what} {}", p.display()))
    };
    let mut write_scopes = vec![cwd.clone()];
    for r in &args.writable_roots {
        write_scopes.push(canon(r, "--writable-root")?);
    }
    let read_scopes = args
        .read_scopes
        .iter()
        .map(|r| canon(r, "--read-scope"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let opts = zot_policy::sandbox::AgentSandboxOptions {
        cwd,
        read_scopes,
        write_scopes,
        env_read: args.env_allow.clone(),
        network: args.net,
        ..Default::default()
    };
    Ok(zot_policy::sandbox::agent_policy(&opts)?)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let policy = if args.agent_view {
        agent_view(&args)
    } else {
        policy_from_args(
            args.mode,
            args.cwd.as_deref(),
            &args.writable_roots,
            &args.read_only_paths,
            &args.deny_read,
            args.net,
            &args.env_allow,
        )
    };
    let policy = match policy {
        Ok(p) => p,
        Err(e) => {
            eprintln!("zot: sandbox setup failed: {e:#}");
            return Ok(SETUP_FAILURE);
        }
    };
    let timeout = match args.timeout {
        Some(s) if !(s.is_finite() && s > 0.0) => {
            eprintln!("zot: --timeout must be a positive number of seconds");
            return Ok(super::USAGE);
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let req = RunRequest {
        policy,
        argv: args.command,
        backend: args.backend,
        allow_degraded: args.allow_degraded,
        timeout,
        kill_grace: Duration::from_secs(2),
        output: match args.max_output {
            Some(max_bytes) => Output::Stream { max_bytes },
            None => Output::Inherit,
        },
        stdin: Stdin::Inherit,
        forward_signals: true,
        // zot sandbox is single-threaded: the launcher's code runs in a
        // forked child, no second start of this binary.
        in_process: !args.exec_launcher,
        zot_as_launcher: args.exec_launcher,
    };
    // Unconfined and unsupervised: become the command (like `env`).
    if req.policy.mode == SandboxMode::DangerFullAccess
        && req.timeout.is_none()
        && args.max_output.is_none()
        && !args.report
    {
        let err = zot_supervisor::exec_unconfined(&req);
        return Ok(match err {
            zot_supervisor::SupervisorError::Spawn { program, source } => {
                eprintln!("zot: {}: {source}", program.display());
                if source.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                }
            }
            e => {
                eprintln!("zot: {:#}", anyhow::Error::from(e));
                SETUP_FAILURE
            }
        });
    }
    match zot_supervisor::run(req) {
        Ok(outcome) => {
            if outcome.truncated {
                eprintln!(
                    "zot: output truncated at {} bytes per stream",
                    args.max_output.unwrap_or(0)
                );
            }
            if outcome.timed_out {
                eprintln!("zot: timed out; the command and its children were killed");
            }
            for (from, to) in &outcome.quarantined {
                eprintln!(
                    "zot: warning: {} appeared during the run (git would use it on the host); renamed to {}",
                    from.display(),
                    to.display()
                );
            }
            if args.report {
                eprint!("{}", outcome.report.to_text());
            }
            Ok(outcome.exit_code.clamp(0, 255) as u8)
        }
        Err(e) => {
            eprintln!("zot: {:#}", anyhow::Error::from(e));
            Ok(SETUP_FAILURE)
        }
    }
}
