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
    /// Allow connections to HOST[:PORT] only, through zot's filtering proxy
    /// (repeatable): HOST is a name, `*.name` (subdomains), an IP address or
    /// ADDRESS/PREFIX; without :PORT, ports 80 and 443. The command gets its
    /// own network namespace with only loopback and HTTP_PROXY, HTTPS_PROXY
    /// and ALL_PROXY pointing at the proxy; names resolving to loopback,
    /// link-local or private addresses are refused unless that address is
    /// listed.
    #[arg(
        long = "allow-host",
        value_name = "HOST[:PORT]",
        conflicts_with = "net"
    )]
    pub allow_hosts: Vec<String>,
    /// With --allow-host: append the proxy's decisions to FILE (JSON lines)
    #[arg(long = "proxy-log", value_name = "FILE", requires = "allow_hosts")]
    pub proxy_log: Option<PathBuf>,
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
    /// With --report: the report as one JSON object on stderr (stdout stays
    /// the command's): `report` (backend, mode, levels, notes),
    /// `exit_code`, `timed_out`, `truncated`, `duration_ms`
    #[arg(long, requires = "report")]
    pub json: bool,
    /// Run even when the mode cannot be fully enforced (and report it)
    #[arg(long)]
    pub allow_degraded: bool,
    /// Copy at most BYTES of stdout and of stderr; drop the rest
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
    /// Size of each private tmpfs (/tmp, /var/tmp, /run, /dev/shm), e.g.
    /// 512M or 2G [default: 512M, or `[sandbox] tmp_size` of the config file]
    #[arg(long, value_name = "SIZE", value_parser = parse_tmp_size)]
    pub tmp_size: Option<u64>,
    /// Most processes and threads the command may run at once [default:
    /// 1024, or `[sandbox] max_procs`]
    #[arg(long, value_name = "N", value_parser = parse_max_procs)]
    pub max_procs: Option<u64>,
    /// Largest file the command may write, e.g. 4G [default: 16G, or
    /// `[sandbox] max_file_size`]
    #[arg(long, value_name = "SIZE", value_parser = parse_tmp_size)]
    pub max_file_size: Option<u64>,
    /// Memory of all the command's processes together, e.g. 2G (a cgroup
    /// limit where the host has a usable controller; otherwise reported as
    /// not enforced) [default: 8G]
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<u64>,
    /// Files and directories each private tmpfs may hold [default: 65536]
    #[arg(long, value_name = "N", value_parser = parse_tmp_inodes)]
    pub tmp_inodes: Option<u64>,
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
    /// The command and its arguments: after the options, or after `--`
    /// (everything from the first word that is not an option is the
    /// command's, its own options included)
    #[arg(
        trailing_var_arg = true,
        required = true,
        num_args = 1..,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

fn parse_tmp_size(s: &str) -> Result<u64, String> {
    zot_policy::limits::parse_size(s).and_then(zot_policy::limits::check_tmp_size)
}

fn parse_tmp_inodes(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a number of inodes, got {s:?}"))
        .and_then(zot_policy::limits::check_tmp_inodes)
}

fn parse_memory(s: &str) -> Result<u64, String> {
    zot_policy::limits::parse_size(s).and_then(zot_policy::limits::check_memory)
}

fn parse_max_procs(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a number of processes, got {s:?}"))
        .and_then(zot_policy::limits::check_max_procs)
}

/// The config file, read once per command. A file this user cannot read
/// (HOME pointing at another user's home) is not theirs: as if absent. Any
/// other failure (a broken file) is an error.
pub fn load_config() -> anyhow::Result<zot_agent::config::Loaded> {
    match zot_agent::config::load() {
        Err(zot_agent::RunError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            Ok(zot_agent::config::Loaded::default())
        }
        r => Ok(r?),
    }
}

/// The limit flags of a command line (`None`: not given).
#[derive(Debug, Clone, Copy, Default)]
pub struct LimitFlags {
    pub tmp_size: Option<u64>,
    pub max_procs: Option<u64>,
    pub max_file_size: Option<u64>,
    pub memory: Option<u64>,
    pub tmp_inodes: Option<u64>,
}

/// The limits of a sandbox: the flags, else the config file's `[sandbox]`,
/// else the defaults.
pub fn limits(
    config: &zot_agent::config::Loaded,
    flags: &LimitFlags,
) -> zot_policy::limits::Limits {
    let base = config.config.sandbox.limits();
    zot_policy::limits::Limits {
        tmp_size: flags.tmp_size.unwrap_or(base.tmp_size),
        max_procs: flags.max_procs.unwrap_or(base.max_procs),
        max_file_size: flags.max_file_size.unwrap_or(base.max_file_size),
        memory: flags.memory.unwrap_or(base.memory),
        tmp_inodes: flags.tmp_inodes.unwrap_or(base.tmp_inodes),
    }
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
/// The network of `--allow-host HOST...` (none given: `None`); a usage
/// error names the bad entry.
pub fn proxied_network(
    mode: SandboxMode,
    hosts: &[String],
) -> Result<Option<zot_policy::sandbox::NetworkPolicy>, String> {
    if hosts.is_empty() {
        return Ok(None);
    }
    if mode == SandboxMode::DangerFullAccess {
        return Err(
            "--allow-host does not apply to danger-full-access (it has the host network)".into(),
        );
    }
    let allow =
        zot_policy::net::AllowList::parse(hosts).map_err(|e| format!("--allow-host {e}"))?;
    Ok(Some(zot_policy::sandbox::NetworkPolicy::Proxied {
        allow,
        socket_dir: None,
    }))
}

#[allow(clippy::too_many_arguments)]
pub fn policy_from_args(
    loaded: &zot_agent::config::Loaded,
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
    // The homes and the config's deny-read list serve the deny-read list,
    // which danger-full-access does not have: not resolved there.
    let danger = mode == SandboxMode::DangerFullAccess;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && !danger)
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    // Also the password database's home: a caller with HOME unset or
    // pointing elsewhere keeps the protection of their real home.
    let user_home = (!danger)
        .then(zot_supervisor::host::passwd_home)
        .flatten()
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    let mut config_deny = Vec::new();
    for p in loaded.config.sandbox.deny_read.iter().filter(|_| !danger) {
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
        config_file: loaded.path.clone().filter(|_| loaded.exists),
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
    // The one agent-policy builder `zot run` uses: zot's own state is
    // protected here exactly as for a real agent (no agent of this name
    // exists, so every installed agent's directory is out of reach).
    let input = zot_agent::deps::AgentPolicyInput {
        workspace: cwd,
        read: read_scopes,
        write: write_scopes,
        zot_home: zot_agent::home::zot_home()?,
        agent: String::new(),
        read_only: Vec::new(),
        net_allow: Vec::new(),
        env_read: args.env_allow.clone(),
        limits: Default::default(),
    };
    let mut policy = zot_agent::deps::agent_policy(&input)?;
    if args.net {
        policy.network = zot_policy::sandbox::NetworkPolicy::On;
    }
    Ok(policy)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // args -> config (read once) -> policy -> plan -> launch
    let config = load_config();
    let policy = if args.agent_view {
        agent_view(&args)
    } else {
        config
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e:#}"))
            .and_then(|config| {
                policy_from_args(
                    config,
                    args.mode,
                    args.cwd.as_deref(),
                    &args.writable_roots,
                    &args.read_only_paths,
                    &args.deny_read,
                    args.net,
                    &args.env_allow,
                )
            })
    };
    let policy = policy.and_then(|mut p| {
        let config = config.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        p.limits = limits(
            config,
            &LimitFlags {
                tmp_size: args.tmp_size,
                max_procs: args.max_procs,
                max_file_size: args.max_file_size,
                memory: args.memory,
                tmp_inodes: args.tmp_inodes,
            },
        );
        Ok(p)
    });
    let mut policy = match policy {
        Ok(p) => p,
        // Options that contradict each other (`--net` in read-only) or name
        // missing paths are the command line's fault, not the sandbox's.
        Err(e) if !args.agent_view => {
            eprintln!("zot: {e:#}");
            return Ok(super::USAGE);
        }
        Err(e) => {
            eprintln!("zot: sandbox setup failed: {e:#}");
            return Ok(SETUP_FAILURE);
        }
    };
    match proxied_network(policy.mode, &args.allow_hosts) {
        Ok(Some(n)) => policy.network = n,
        Ok(None) => {}
        Err(e) => {
            eprintln!("zot: {e}");
            return Ok(super::USAGE);
        }
    }
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
        proxy_log: args.proxy_log.clone(),
        // The proxy's directory is journaled: a killed run's is swept by the
        // next zot process.
        journal: zot_agent::home::zot_home()
            .ok()
            .map(|h| zot_supervisor::journal::for_process(&h)),
        cancel: None,
        on_output: None,
        index: None,
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
                super::print_error(&anyhow::Error::from(e));
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
                    "zot: warning: {} appeared during the run (git or a shell on the host would use it); renamed to {}",
                    from.display(),
                    to.display()
                );
            }
            if args.json {
                let mut v = serde_json::json!({
                    "report": outcome.report,
                    "exit_code": outcome.exit_code,
                    "timed_out": outcome.timed_out,
                    "truncated": outcome.truncated,
                    "duration_ms": outcome.duration.as_millis() as u64,
                });
                if !args.allow_hosts.is_empty() {
                    v["proxy"] = serde_json::json!(outcome.proxy);
                }
                if !outcome.quarantined.is_empty() {
                    v["quarantined"] = serde_json::json!(outcome
                        .quarantined
                        .iter()
                        .map(|(from, to)| serde_json::json!({"from": from, "to": to}))
                        .collect::<Vec<_>>());
                }
                eprintln!("{v}");
            } else if args.report {
                eprint!("{}", outcome.report.to_text());
                if !args.allow_hosts.is_empty() {
                    eprint!("{}", proxy_summary(&outcome.proxy));
                }
            }
            Ok(outcome.exit_code.clamp(0, 255) as u8)
        }
        Err(e) => {
            super::print_error(&anyhow::Error::from(e));
            Ok(SETUP_FAILURE)
        }
    }
}

/// The proxy's decisions, per destination, for `--report`.
fn proxy_summary(records: &[zot_supervisor::proxy::AuditRecord]) -> String {
    use zot_supervisor::proxy::{audit::summarize, Decision};
    let s = summarize(records);
    let mut out = format!(
        "proxy: {} allowed, {} refused; {} bytes sent, {} received\n",
        s.allowed, s.denied, s.bytes_up, s.bytes_down
    );
    for l in &s.lines {
        let what = match l.decision {
            Decision::Allow => "allowed",
            Decision::Deny => "refused",
        };
        out.push_str(&format!(
            "  {what} {} x{} (up {} B, down {} B): {}\n",
            l.destination,
            l.connections,
            l.bytes_up,
            l.bytes_down,
            l.why.join("; ")
        ));
    }
    out
}
