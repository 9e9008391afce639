//! One sandboxed run: prepare (resolve + plan), start, stream and cap the
//! output, supervise (timeout, signals), clean up, and turn the launcher's
//! status into the report or a setup error.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use zot_launcher::LaunchStatus;

use crate::output::{pipe, pump};
use crate::resolve::{self, Backend};
use crate::spawn::{self, StartError};
use crate::supervise::{fired, supervise, Stop, Target};
use crate::{
    Level, Note, OutStream, Output, RunOutcome, RunRequest, SupervisorError, EXIT_TIMEOUT,
};

/// Run a command confined by `req.policy`.
pub fn run(req: RunRequest) -> Result<RunOutcome, SupervisorError> {
    // bwrap cannot skip a mount point that vanished: a host socket removed
    // between planning and bwrap's set-up makes it fail before anything of
    // the command ran. Plan again (a few times: a host that keeps making
    // and removing sockets can hit the window more than once).
    const ATTEMPTS: usize = 4;
    let mut attempt = 1;
    loop {
        let mut masks = Vec::new();
        let r = run_once(req.clone(), &mut masks);
        let retry = match &r {
            Err(SupervisorError::Setup {
                backend: crate::BackendKind::Bwrap,
                message,
                ..
            }) => masks.iter().any(|d| {
                std::fs::symlink_metadata(d).is_err() || message.contains(&*d.to_string_lossy())
            }),
            _ => false,
        };
        if !retry || attempt == ATTEMPTS {
            return r;
        }
        attempt += 1;
    }
}

fn run_once(mut req: RunRequest, masks: &mut Vec<PathBuf>) -> Result<RunOutcome, SupervisorError> {
    if req.argv.is_empty() {
        return Err(SupervisorError::EmptyCommand);
    }
    let start = Instant::now();
    let host_env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    // One preparation, proxy or not: the proxy's private directory is made
    // first (the plan names its socket), the proxy listens in it only
    // once the plan is known to run here.
    let proxy_dir = proxy_dir(&mut req)?;
    let index = req.index.clone();
    let resolved = resolve::resolve(&req.policy, req.backend)?;
    // The sandbox is started first, while the plan is made: bwrap loads,
    // the native backend's PID 1 makes its namespaces.
    let early = match &resolved.backend {
        Backend::Bwrap { .. } | Backend::Native => Early::start(&req, &resolved.backend)?,
        _ => None,
    };
    let mut planned = resolve::prepare_resolved(
        resolved,
        &req.policy,
        req.allow_degraded,
        &host_env,
        index.as_ref(),
    )?;
    let private_tmp = private_tmpdir(&req, &mut planned)?;
    let proxy = match proxy_dir {
        Some(dir) => Some(start_proxy(&req, dir)?),
        None => None,
    };
    *masks = planned
        .plan
        .mounts
        .iter()
        .filter_map(|m| match m {
            zot_launcher::plan::MountOp::MaskSocket { dst } => Some(dst.clone()),
            _ => None,
        })
        .collect();
    // The proxy's thread exists: the launcher is exec'd, never forked.
    debug_assert!(proxy.is_none() || zot_launcher::thread_count().map_or(true, |n| n > 1));
    let run = run_planned(&req, planned, host_env, start, early);
    drop(private_tmp);
    let records = proxy
        .map(|(p, dir)| {
            let records = p.stop();
            dir.remove();
            records
        })
        .unwrap_or_default();
    run.map(|mut o| {
        o.proxy = records;
        o
    })
}

/// Without a mount namespace (landlock) `/tmp` is the host's: the
/// command's `TMPDIR` is a private directory there (0700, this user's),
/// made for the run and removed whole after it.
fn private_tmpdir(
    req: &RunRequest,
    planned: &mut resolve::Planned,
) -> Result<Option<ProxyDir>, SupervisorError> {
    if planned.plan.isolation != zot_launcher::plan::Isolation::LandlockOnly
        || planned.plan.mode != zot_policy::sandbox::SandboxMode::WorkspaceWrite
    {
        return Ok(None);
    }
    let base = std::env::temp_dir();
    const PREFIX: &str = "zot-tmp-";
    // Journaled when the journal can be written (a killed run's directory
    // is swept by the next zot process), else removed when the run ends.
    let journaled = req
        .journal
        .as_ref()
        .and_then(|j| j.temp_dir(&base, PREFIX).ok());
    let dir = match journaled {
        Some(d) => ProxyDir::Journaled(d),
        None => ProxyDir::Plain(
            tempfile::Builder::new()
                .prefix(PREFIX)
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir_in(&base)
                .map_err(SupervisorError::io(format!(
                    "creating the run's private TMPDIR in {}",
                    base.display()
                )))?,
        ),
    };
    let env = &mut planned.plan.env;
    env.pass.retain(|p| p != "TMPDIR");
    env.set.retain(|v| v.name != "TMPDIR");
    env.set.push(zot_launcher::plan::EnvVar {
        name: "TMPDIR".into(),
        value: dir.path().to_string_lossy().into_owned(),
    });
    Ok(Some(dir))
}

/// The proxy's private directory, removed when dropped.
enum ProxyDir {
    /// Recorded in the caller's journal before it was made: a killed run's
    /// directory is swept by the next zot process.
    Journaled(crate::journal::TempDir),
    Plain(tempfile::TempDir),
}

impl ProxyDir {
    fn path(&self) -> &std::path::Path {
        match self {
            ProxyDir::Journaled(d) => d.path(),
            ProxyDir::Plain(d) => d.path(),
        }
    }

    /// Remove it: the socket, then the empty directory (no walk of it).
    fn remove(self) {
        let _ = std::fs::remove_file(self.path().join(crate::planner::PROXY_SOCKET));
        match self {
            ProxyDir::Journaled(d) => drop(d),
            ProxyDir::Plain(d) => {
                let p = d.path().to_path_buf();
                if std::fs::remove_dir(&p).is_ok() {
                    let _ = d.keep();
                }
            }
        }
    }
}

/// With a proxied network: a private directory (0700, this user's), and
/// the policy pointing the plan at it.
fn proxy_dir(req: &mut RunRequest) -> Result<Option<ProxyDir>, SupervisorError> {
    let zot_policy::sandbox::NetworkPolicy::Proxied { socket_dir, .. } = &mut req.policy.network
    else {
        return Ok(None);
    };
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    const PREFIX: &str = "zot-proxy-";
    let dir = match &req.journal {
        Some(j) => ProxyDir::Journaled(
            j.temp_dir(&base, PREFIX)
                .map_err(SupervisorError::ProxyDir)?,
        ),
        None => ProxyDir::Plain(
            tempfile::Builder::new()
                .prefix(PREFIX)
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir_in(&base)
                .map_err(SupervisorError::io(format!(
                    "creating the proxy's directory in {}",
                    base.display()
                )))?,
        ),
    };
    let dir_path = dir
        .path()
        .canonicalize()
        .map_err(SupervisorError::io("resolving the proxy's directory"))?;
    *socket_dir = Some(dir_path);
    Ok(Some(dir))
}

/// The proxy, listening in its directory.
fn start_proxy(
    req: &RunRequest,
    dir: ProxyDir,
) -> Result<(crate::proxy::Proxy, ProxyDir), SupervisorError> {
    let zot_policy::sandbox::NetworkPolicy::Proxied {
        allow,
        socket_dir: Some(dir_path),
    } = &req.policy.network
    else {
        unreachable!("proxy_dir set the socket directory");
    };
    let mut cfg =
        crate::proxy::ProxyConfig::new(allow.clone(), dir_path.join(crate::planner::PROXY_SOCKET));
    cfg.audit_log = req.proxy_log.clone();
    let proxy = crate::proxy::Proxy::start(cfg).map_err(SupervisorError::Proxy)?;
    Ok((proxy, dir))
}

/// What a run makes before its sandbox starts: the output pipes, the
/// signal forwarding, the memory cgroup and, for bwrap, bwrap itself
/// (started ahead of the plan: see [`spawn::EarlyBwrap`]).
struct Early {
    /// The read ends of the output pipes (none when inherited).
    parent_out: Option<(OwnedFd, OwnedFd)>,
    /// The write ends, until the sandbox has them.
    out_pipes: Option<(OwnedFd, OwnedFd)>,
    forwarding: Option<zot_process::signals::Route>,
    /// Made with the sandbox started ahead; otherwise after the plan.
    memory: Option<Memory>,
    sandbox: Option<spawn::Ahead>,
}

impl Early {
    fn new(req: &RunRequest) -> Result<Early, SupervisorError> {
        let (out_pipes, parent_out) = if matches!(req.output, Output::Inherit) {
            (None, None)
        } else {
            let (or, ow) = pipe()?;
            let (er, ew) = pipe()?;
            (Some((ow, ew)), Some((or, er)))
        };
        Ok(Early {
            parent_out,
            out_pipes,
            // Before the start: a signal while the sandbox starts is
            // forwarded once it runs, instead of killing this process.
            forwarding: req.forward_signals.then(zot_process::signals::forward),
            memory: None,
            sandbox: None,
        })
    }

    /// Everything, and the sandbox of `backend` started ahead of its plan:
    /// bwrap waiting for its arguments, or the native backend's PID 1 in
    /// the fork path (`zot sandbox`: single-threaded, no proxy). `None`
    /// when `backend` cannot start ahead for `req`.
    fn start(req: &RunRequest, backend: &Backend) -> Result<Option<Early>, SupervisorError> {
        // With a proxy, its thread is there by the start: exec'd instead.
        let native = *backend == Backend::Native
            && !matches!(
                req.policy.network,
                zot_policy::sandbox::NetworkPolicy::Proxied { .. }
            )
            && spawn::forks_in_process(req);
        if !native && !matches!(backend, Backend::Bwrap { .. }) {
            return Ok(None);
        }
        let mut early = Early::new(req)?;
        let out = early.out_pipes.take();
        // bwrap passes the cgroup's fd on to the launcher: made first. The
        // native PID 1 gets it later on the status socket: made after the
        // clone, while PID 1 makes its namespaces.
        let memory = matches!(backend, Backend::Bwrap { .. })
            .then(|| Memory::create(req.policy.limits.memory));
        early.sandbox = Some(match backend {
            Backend::Bwrap { path } => spawn::EarlyBwrap::start(
                path,
                req,
                out,
                memory
                    .as_ref()
                    .and_then(|m| m.join.as_ref())
                    .map(|fd| fd.as_fd()),
            )
            .map(spawn::Ahead::Bwrap)
            .map_err(|e| match e {
                StartError::Other(e) => e,
                StartError::Spawn { program, source } => SupervisorError::Spawn { program, source },
            })?,
            _ => spawn::Ahead::native(
                req,
                &crate::planner::namespaces(&req.policy, zot_launcher::plan::Isolation::Namespaces),
                &crate::planner::base_view(&req.policy, &crate::planner::RealFs),
                out,
            )?,
        });
        early.memory = Some(memory.unwrap_or_else(|| Memory::create(req.policy.limits.memory)));
        Ok(Some(early))
    }
}

/// The run's memory cgroup (held for the run), the fd through which its
/// first process joins it, and what the report says of it.
#[derive(Default)]
struct Memory {
    group: Option<crate::cgroup::Group>,
    join: Option<OwnedFd>,
    report: Option<String>,
}

impl Memory {
    fn create(limit: u64) -> Memory {
        let unenforced = |why: String| format!("none ({why}): memory not enforced");
        match crate::cgroup::Group::create(limit) {
            Ok(g) => match g.join_fd() {
                Ok(fd) => Memory {
                    report: Some(format!(
                        "memory {} ({})",
                        zot_policy::limits::format_size(g.limit()),
                        crate::cgroup::status()
                    )),
                    join: Some(fd),
                    group: Some(g),
                },
                // A container's cgroup files: the run goes on without the
                // limit, and says so.
                Err(why) => Memory {
                    report: Some(unenforced(why)),
                    join: None,
                    group: Some(g),
                },
            },
            Err(why) => Memory {
                report: Some(unenforced(why)),
                join: None,
                group: None,
            },
        }
    }
}

fn run_planned(
    req: &RunRequest,
    planned: resolve::Planned,
    host_env: Vec<(OsString, OsString)>,
    start: Instant,
    early: Option<Early>,
) -> Result<RunOutcome, SupervisorError> {
    let mut report = planned.report.clone();
    let env = planned.plan.env.environment(|name| {
        host_env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    });

    let early = match early {
        Some(e) => e,
        None => Early::new(req)?,
    };
    let Early {
        parent_out,
        out_pipes,
        forwarding: _forwarding,
        memory,
        sandbox,
    } = early;
    if let Some(sig) = req.cancel.as_ref().and_then(fired) {
        return Ok(RunOutcome {
            exit_code: 128 + sig,
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            timed_out: false,
            cancelled: true,
            duration: start.elapsed(),
            report,
            proxy: Vec::new(),
            quarantined: Vec::new(),
        });
    }
    let placeholders = planned.plan.placeholders();
    let held = Placeholders::acquire(
        &host_env,
        &placeholders,
        &planned.plan.read_only_protections(),
    )
    .map_err(|e| SupervisorError::Setup {
        backend: report.backend,
        message: zot_launcher::error_chain(&e),
        hint: None,
    })?;
    let armed = planned.repos.as_ref().map(|i| i.arm(&placeholders));
    // The memory limit: the process that runs the tail joins the run's own
    // cgroup before it forks or execs anything.
    let memory = match memory {
        Some(m) => m,
        None if planned.backend != Backend::Unconfined => Memory::create(req.policy.limits.memory),
        None => Memory::default(),
    };
    if let Some(r) = &memory.report {
        report.limit_values.cgroup = r.clone();
    }
    let join = memory.join.as_ref().map(|fd| fd.as_fd());
    let started = spawn::start(req, &planned, env, &host_env, out_pipes, join, sandbox);
    // The group is held for the run; its join fd is the sandbox's now.
    let Memory {
        group: _group,
        join,
        ..
    } = memory;
    drop(join);
    let started = match started {
        Ok(s) => s,
        Err(err) => {
            drop(held);
            return match err {
                StartError::Other(e) => Err(e),
                // Like a shell: not found / not executable are the command's codes.
                StartError::Spawn { program, source } if planned.backend == Backend::Unconfined => {
                    let code = if source.kind() == std::io::ErrorKind::NotFound {
                        127
                    } else {
                        126
                    };
                    Ok(RunOutcome {
                        exit_code: code,
                        stdout: Vec::new(),
                        stderr: format!("zot: {}: {source}\n", program.display()).into_bytes(),
                        truncated: false,
                        timed_out: false,
                        cancelled: false,
                        duration: start.elapsed(),
                        report,
                        proxy: Vec::new(),
                        quarantined: Vec::new(),
                    })
                }
                // What failed to start is bwrap or the launcher, not the command.
                StartError::Spawn { program, source } => {
                    Err(SupervisorError::Spawn { program, source })
                }
            };
        }
    };

    // The launcher passes the listener on the status socket before the
    // command starts: served from now on.
    let mut started = started;
    let server = if zot_launcher::seccomp::notifies(&planned.plan.seccomp) {
        match started.status.take() {
            Some(status) => {
                let proxy: Vec<&std::path::Path> = planned
                    .plan
                    .network
                    .proxy()
                    .map(|(s, _)| s)
                    .into_iter()
                    .collect();
                // Without a PID namespace (landlock) the sandbox shares the
                // host's network namespace, and its processes are its
                // leader's session.
                let landlock =
                    planned.plan.isolation == zot_launcher::plan::Isolation::LandlockOnly;
                match crate::notify::Server::start(
                    status,
                    landlock || planned.plan.network == zot_launcher::plan::NetworkPlan::Host,
                    landlock.then(|| started.target.pid()),
                    &proxy,
                ) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        started.target.kill_all();
                        let _ = crate::supervise::wait_pid(started.target.pid());
                        drop(held);
                        return Err(SupervisorError::Io {
                            what: "starting the socket check thread".into(),
                            source: e,
                        });
                    }
                }
            }
            None => None,
        }
    } else {
        None
    };

    let truncated = Arc::new(AtomicBool::new(false));
    let exited = Arc::new(AtomicBool::new(false));
    let pumps = parent_out.map(|(o, e)| {
        (
            pump(
                std::fs::File::from(o),
                req.output,
                OutStream::Stdout,
                req.on_output.clone(),
                truncated.clone(),
                exited.clone(),
            ),
            pump(
                std::fs::File::from(e),
                req.output,
                OutStream::Stderr,
                req.on_output.clone(),
                truncated.clone(),
                exited.clone(),
            ),
        )
    });

    let (status, stop) = supervise(
        &started.target,
        req.timeout,
        req.kill_grace,
        req.forward_signals,
        req.cancel.as_ref(),
    );
    let timed_out = stop == Stop::Timeout;
    let cancelled = stop == Stop::Cancel;
    // Without a PID namespace, kill what is left of the command's process
    // group (it led the group).
    if let Target::Group(pid) = started.target {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-pid), nix::sys::signal::SIGKILL);
    }
    drop(started.alive);
    exited.store(true, Ordering::SeqCst);
    let (stdout, stderr) = match pumps {
        Some((o, e)) => (o.join().unwrap_or_default(), e.join().unwrap_or_default()),
        None => (Vec::new(), Vec::new()),
    };
    // A repository the command created (or moved into place) would run its
    // hooks and config on the host next: renamed aside, reported. The
    // index says which (a session's events, or the validated rescan).
    let mut quarantined = match &planned.repos {
        Some(before) => {
            let after = before.after_run();
            drop(armed);
            for n in after.notes {
                report.notes.push(Note::from(n));
            }
            let mut q = after.neutralised;
            q.extend(crate::repos::quarantine(
                &after.created,
                before,
                &placeholders,
            ));
            q
        }
        None => Vec::new(),
    };
    drop(held);
    for (from, to) in &quarantined {
        report.notes.push(Note::Quarantined {
            from: from.clone(),
            to: to.clone(),
        });
    }
    // An executable that appeared in a PATH directory that stays writable
    // would shadow a command in a shell on the host: renamed aside.
    for (from, to) in crate::host::quarantine_executables(&planned.path_watch) {
        report.notes.push(Note::ExecutableQuarantined {
            from: from.clone(),
            to: to.clone(),
        });
        quarantined.push((from, to));
    }
    let served = server.map(crate::notify::Server::finish);
    let raw_code = status.map_err(SupervisorError::io("waiting for the sandbox"))?;

    let events = match (&served, started.status) {
        (Some(s), _) => Some(parse_status(&s.status)),
        (None, Some(status_read)) => Some(read_status(status_read)),
        (None, None) => None,
    };
    if let Some(s) = &served {
        if s.refused > 0 {
            report
                .notes
                .push(Note::HostSocketsRefused { count: s.refused });
        }
        for e in &s.errors {
            report
                .notes
                .push(Note::SocketCheckFailed { detail: e.clone() });
        }
    }
    if let Some(events) = events {
        let ready = events.iter().find_map(|e| match e {
            LaunchStatus::Ready { landlock, seccomp } => Some((landlock.clone(), *seccomp)),
            _ => None,
        });
        let failed = events.iter().find_map(|e| match e {
            LaunchStatus::Failed { stage, message } => Some((stage.clone(), message.clone())),
            _ => None,
        });
        match (ready, failed) {
            (_, Some((stage, message))) => {
                let hint = (stage == "native namespaces").then(resolve::namespace_hint);
                return Err(SupervisorError::Setup {
                    backend: report.backend,
                    message: format!("{stage}: {message}"),
                    hint,
                });
            }
            (Some((landlock, seccomp)), None) => {
                report.landlock = landlock.level;
                if let Some(detail) = landlock.detail {
                    if report.landlock != Level::Full {
                        report.notes.push(Note::Landlock { detail });
                    }
                }
                report.seccomp = if seccomp { Level::Full } else { Level::None };
            }
            (None, None) if !timed_out && !cancelled => {
                let tail = String::from_utf8_lossy(&stderr);
                let tail = tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                let hint = match planned.backend {
                    Backend::Bwrap { .. } => Some(resolve::bwrap_failure_hint()),
                    Backend::Native => Some(resolve::namespace_hint()),
                    _ => None,
                };
                let mut message = format!(
                    "{} exited with code {raw_code} before the launcher started",
                    report.backend
                );
                if !tail.is_empty() {
                    message.push_str(": ");
                    message.push_str(&tail);
                }
                return Err(SupervisorError::Setup {
                    backend: report.backend,
                    message,
                    hint,
                });
            }
            (None, None) => {}
        }
    }
    Ok(RunOutcome {
        exit_code: if timed_out { EXIT_TIMEOUT } else { raw_code },
        stdout,
        stderr,
        truncated: truncated.load(Ordering::SeqCst),
        timed_out,
        cancelled,
        duration: start.elapsed(),
        report,
        proxy: Vec::new(),
        quarantined,
    })
}

/// Replace this process with the command of a `danger-full-access` request
/// (nothing confines it, so nothing needs supervising: no timeout, no
/// capped output, no report): the plan's environment and working
/// directory, then `execvp`. Returns only on failure; a command that cannot
/// be found or executed is [`SupervisorError::Spawn`] (exit 127 / 126).
pub fn exec_unconfined(req: &RunRequest) -> SupervisorError {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    if req.argv.is_empty() {
        return SupervisorError::EmptyCommand;
    }
    let host_env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let planned = match resolve::prepare(&req.policy, req.backend, req.allow_degraded, &host_env) {
        Ok(p) if p.backend == Backend::Unconfined => p,
        Ok(p) => {
            return SupervisorError::Setup {
                backend: p.backend.kind(),
                message: "only danger-full-access runs without a supervisor".into(),
                hint: None,
            }
        }
        Err(e) => return e,
    };
    let program = PathBuf::from(&req.argv[0]);
    let spawn_err = |source| SupervisorError::Spawn {
        program: program.clone(),
        source,
    };
    let nul = || spawn_err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    let Ok(argv) = req
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
    else {
        return nul();
    };
    let env = planned.plan.env.environment(|name| {
        host_env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    });
    let Ok(envp) = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv)
        })
        .collect::<Result<Vec<_>, _>>()
    else {
        return nul();
    };
    if let Err(e) = std::env::set_current_dir(&planned.plan.cwd) {
        return SupervisorError::Io {
            what: format!("cannot change to {}", planned.plan.cwd.display()),
            source: e,
        };
    }
    // The command gets the default SIGPIPE (this process ignores it).
    // SAFETY: resetting a disposition before exec.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let err = match nix::unistd::execvpe(&argv[0], &argv, &envp) {
        Ok(never) => match never {},
        Err(e) => std::io::Error::from(e),
    };
    // SAFETY: as above, back to this process's own disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    spawn_err(err)
}

/// The status lines the launcher wrote. Read after the sandbox exited, so
/// every writer is gone; non-blocking in case a copy of the pipe survived.
fn read_status(fd: OwnedFd) -> Vec<LaunchStatus> {
    let _ = nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    );
    let mut f = std::fs::File::from(fd);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = f.read(&mut chunk) {
        if n == 0 || buf.len() > 1 << 20 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    parse_status(&buf)
}

fn parse_status(buf: &[u8]) -> Vec<LaunchStatus> {
    buf.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// The placeholders (empty files, mount points for missing protected
/// paths) of one run: made before the sandbox starts, journaled under
/// zot's state directory (so a run killed with SIGKILL leaves them to the
/// next zot invocation's sweep), shared with other live runs that need the
/// same one, and released when dropped.
struct Placeholders {
    journal: Option<crate::journal::Journal>,
    held: Vec<PathBuf>,
}

impl Placeholders {
    /// Make (or share) the placeholders at `paths`, and share each of
    /// `read_only` that is a placeholder another live run holds (the plan
    /// binds it read-only as it found it): held by this run too, it stays
    /// until the last run using it ends. One that vanished since planning
    /// (its last holder ended meanwhile) is made again.
    fn acquire(
        env: &[(OsString, OsString)],
        paths: &[PathBuf],
        read_only: &[PathBuf],
    ) -> Result<Placeholders, crate::journal::JournalError> {
        let mut out = Placeholders {
            journal: None,
            held: paths.to_vec(),
        };
        if paths.is_empty() && read_only.is_empty() {
            return Ok(out);
        }
        let state = crate::journal::state_dir_from(|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        });
        let Ok(state) = state else {
            // No state directory: the backend makes the mount points and
            // they are removed after the run (not after a SIGKILL).
            return Ok(out);
        };
        let journal = crate::journal::for_process(&state);
        out.held.clear();
        out.journal = Some(journal.clone());
        journal.acquire_placeholders(
            crate::journal::Kind::PlaceholderFile,
            paths,
            &mut out.held,
        )?;
        journal.share_placeholders(read_only, &mut out.held)?;
        Ok(out)
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        match &self.journal {
            Some(j) => {
                let _ = j.release_placeholders(&self.held);
            }
            None => {
                for p in self.held.iter().rev() {
                    if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() == 0) {
                        let _ = std::fs::remove_file(p);
                    }
                }
            }
        }
    }
}
