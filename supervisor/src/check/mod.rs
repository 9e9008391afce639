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

mod attempts;
mod fixtures;
mod proxied;
mod runner;

use crate::{BackendChoice, BackendKind, Level, Output, RunRequest, Stdin, SupervisorError};
use attempts::*;
pub use attempts::{AttemptOutcome, AttemptSpec, CredentialSpec, NamedSpec, ProxySpec};
use fixtures::*;
pub use runner::run_attempts;
use runner::*;

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
            if let Some(hint) = e.hint() {
                report.backend_reasons.push(format!("hint: {hint}"));
            }
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

// ------------------------------------------------------------ the runner

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
