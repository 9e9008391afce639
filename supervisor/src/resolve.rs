//! Backend resolution: which backend runs a policy here, and what it can
//! enforce. First version (bwrap; native and landlock pinned by hand); the
//! native/landlock work extends it with probes and the fallback order.
//!
//! The happy path is cheap: no probe runs bwrap up front. When a bwrap
//! launch fails before the launcher reports, [`bwrap_failure_hint`] runs the
//! probes to say why.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use zot_policy::sandbox::{NetworkPolicy, SandboxMode, SandboxPolicy};

use crate::{BackendChoice, EnforcementReport, Level, SupervisorError};

/// The backend chosen for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// `danger-full-access`: no sandbox at all.
    Unconfined,
    /// System bubblewrap at this trusted path.
    Bwrap { path: PathBuf },
    /// The launcher's own namespaces.
    Native,
    /// Landlock + seccomp only.
    Landlock,
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Unconfined => "none",
            Backend::Bwrap { .. } => "bwrap",
            Backend::Native => "native",
            Backend::Landlock => "landlock",
        }
    }
}

/// A resolved backend and what it will enforce (the launcher's Landlock and
/// seccomp status is filled in after the run).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub backend: Backend,
    pub report: EnforcementReport,
}

fn report(backend: &Backend, policy: &SandboxPolicy) -> EnforcementReport {
    let confined = *backend != Backend::Unconfined;
    let network = match (policy.network.clone(), confined) {
        (NetworkPolicy::Off, true) => Level::Full,
        _ => Level::None,
    };
    let mut reasons = Vec::new();
    if policy.network == NetworkPolicy::On && confined {
        reasons.push("network: host network allowed by the policy".to_string());
    }
    let (filesystem, pid) = match backend {
        Backend::Unconfined => (Level::None, Level::None),
        Backend::Bwrap { .. } | Backend::Native => (Level::Full, Level::Full),
        Backend::Landlock => {
            reasons.push(
                "filesystem: landlock cannot keep protected paths read-only inside writable roots nor hide deny-read paths"
                    .to_string(),
            );
            reasons.push("pid: no pid namespace, host processes are visible".to_string());
            (Level::Partial, Level::None)
        }
    };
    EnforcementReport {
        backend: backend.name().to_string(),
        mode: policy.mode,
        filesystem,
        network,
        pid,
        seccomp: if confined { Level::Full } else { Level::None },
        landlock: if confined { Level::Full } else { Level::None },
        reasons,
    }
}

/// Roots a trusted helper binary must not live in.
fn untrusted_roots(policy: &SandboxPolicy) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = policy.write_roots.clone();
    roots.push(policy.cwd.clone());
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    roots
}

/// The first `bwrap` on PATH that is trustworthy: outside the workspace and
/// write roots (after resolving symlinks), a regular file, owned by root or
/// us, not writable by group or others. Does not run it.
pub fn find_bwrap(policy: &SandboxPolicy) -> Result<PathBuf, String> {
    let roots = untrusted_roots(policy);
    let mut refused = Vec::new();
    for cand in zot_probes::path_candidates("bwrap") {
        let Ok(real) = std::fs::canonicalize(&cand) else {
            continue;
        };
        match trust(&real, &roots) {
            Ok(()) => return Ok(real),
            Err(why) => refused.push(format!("{}: {why}", cand.display())),
        }
    }
    if refused.is_empty() {
        Err("bwrap not found on PATH".to_string())
    } else {
        Err(format!("no trusted bwrap on PATH ({})", refused.join("; ")))
    }
}

fn trust(path: &Path, roots: &[PathBuf]) -> Result<(), String> {
    if let Some(root) = roots
        .iter()
        .find(|r| r.as_os_str() != "/" && path.starts_with(r))
    {
        return Err(format!("lies inside {} (never trusted)", root.display()));
    }
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err("not an executable file".into());
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err("writable by group or others".into());
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid {
        return Err(format!("owned by uid {}", meta.uid()));
    }
    Ok(())
}

/// Pick the backend for `policy`.
pub fn resolve(
    policy: &SandboxPolicy,
    choice: BackendChoice,
    allow_degraded: bool,
) -> Result<Resolved, SupervisorError> {
    if policy.mode == SandboxMode::DangerFullAccess {
        let backend = Backend::Unconfined;
        return Ok(Resolved {
            report: report(&backend, policy),
            backend,
        });
    }
    let backend =
        match choice {
            BackendChoice::Auto | BackendChoice::Bwrap => match find_bwrap(policy) {
                Ok(path) => Backend::Bwrap { path },
                Err(reason) => return Err(SupervisorError::NoBackend {
                    mode: policy.mode,
                    reason,
                    hint:
                        "install bubblewrap (e.g. apt install bubblewrap), or pick --backend native"
                            .into(),
                }),
            },
            BackendChoice::Native => Backend::Native,
            BackendChoice::Landlock => Backend::Landlock,
        };
    let report = report(&backend, policy);
    if report.filesystem != Level::Full || report.pid != Level::Full {
        if !allow_degraded {
            return Err(SupervisorError::Degraded {
                backend: backend.name().to_string(),
                mode: policy.mode,
                reason: report.reasons.join("; "),
                hint: "use --allow-degraded to run anyway, or a host where bwrap or user namespaces work".into(),
            });
        }
    }
    Ok(Resolved { backend, report })
}

/// Explain a bwrap launch that failed before the launcher started: runs the
/// host probes (slow path only).
pub fn bwrap_failure_hint() -> String {
    let host = zot_probes::host();
    if let Some(hint) = host.userns().hint.clone() {
        return hint;
    }
    if let Some(hint) = host.bwrap().hint.clone() {
        return hint;
    }
    "run `zot debug sandbox --check` for a diagnosis".to_string()
}
