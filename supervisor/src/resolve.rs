//! Backend resolution: which backend runs a policy here, what it can
//! enforce, and why the better ones were not chosen.
//!
//! Fallback order with `--backend auto`: bwrap -> native -> landlock ->
//! refuse with a specific hint. `danger-full-access` needs no backend.
//!
//! The happy path is cheap: bwrap is found on PATH without running it, and
//! one forked child checks that user namespaces work (a setuid bwrap skips
//! even that). When a bwrap launch still fails before the launcher reports,
//! [`bwrap_failure_hint`] runs the full probes to say why.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
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

/// A backend that was considered and not chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Considered {
    pub backend: &'static str,
    pub reason: String,
}

/// A resolved backend and what it will enforce (the launcher's Landlock and
/// seccomp status is filled in after the run).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub backend: Backend,
    pub report: EnforcementReport,
    /// Better backends that were not chosen (also in `report.reasons`).
    pub considered: Vec<Considered>,
}

impl Resolved {
    /// The mode is enforced as defined: filesystem full, and the network
    /// cut off when the policy says so. (No PID namespace on the landlock
    /// backend is reported but does not make a mode unenforced.)
    pub fn ok_without_degraded(&self) -> bool {
        self.backend == Backend::Unconfined
            || (self.report.filesystem == Level::Full && self.report.network != Level::Partial)
    }
}

/// Whether the launcher's seccomp filter refuses unix-socket `connect` on
/// the landlock backend (hides host sockets without a mount namespace).
const LANDLOCK_DENIES_UNIX_CONNECT: bool = true;

fn report(backend: &Backend, policy: &SandboxPolicy) -> EnforcementReport {
    let confined = *backend != Backend::Unconfined;
    let net_off = policy.network == NetworkPolicy::Off;
    let mut network = if net_off && confined {
        Level::Full
    } else {
        Level::None
    };
    let mut reasons = Vec::new();
    if policy.network == NetworkPolicy::On && confined {
        reasons.push("network: host network allowed by the policy".to_string());
    }
    let (mut filesystem, pid) = match backend {
        Backend::Unconfined => (Level::None, Level::None),
        Backend::Bwrap { .. } | Backend::Native => (Level::Full, Level::Full),
        Backend::Landlock => {
            let mut fs = Level::Full;
            if policy.mode == SandboxMode::WorkspaceWrite {
                fs = Level::Partial;
                reasons.push(
                    "filesystem: landlock cannot keep protected paths (.git/hooks, .git/config, .zot, .agents) read-only inside writable roots"
                        .to_string(),
                );
            }
            if !policy.deny_read.is_empty() {
                reasons.push(
                    "filesystem: deny-read paths are carved out of the Landlock read rules (their parent directories cannot be listed)"
                        .to_string(),
                );
            }
            reasons.push(
                "pid: no pid namespace, host processes are visible (seccomp still blocks ptrace)"
                    .to_string(),
            );
            (fs, Level::None)
        }
    };
    if *backend == Backend::Landlock && (!LANDLOCK_DENIES_UNIX_CONNECT || !net_off) {
        reasons.push(
            "network: host unix sockets (docker, ssh-agent, dbus) stay reachable by path without a mount namespace"
                .to_string(),
        );
        if net_off {
            network = Level::Partial;
        } else {
            filesystem = filesystem.min_level(Level::Partial);
        }
    }
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

trait MinLevel {
    fn min_level(self, other: Level) -> Level;
}

impl MinLevel for Level {
    fn min_level(self, other: Level) -> Level {
        let rank = |l: Level| match l {
            Level::Full => 2,
            Level::Partial => 1,
            Level::None => 0,
        };
        if rank(self) <= rank(other) {
            self
        } else {
            other
        }
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
        match trust(&cand, &real, &roots) {
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

fn trust(cand: &Path, path: &Path, roots: &[PathBuf]) -> Result<(), String> {
    for p in [cand, path] {
        if let Some(root) = roots
            .iter()
            .find(|r| r.as_os_str() != "/" && p.starts_with(r))
        {
            return Err(format!("lies inside {} (never trusted)", root.display()));
        }
    }
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err("not an executable file".into());
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err("writable by group or others".into());
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid && !zot_probes::owned_outside_our_userns(meta.uid()) {
        return Err(format!("owned by uid {}", meta.uid()));
    }
    Ok(())
}

fn is_setuid_root(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.uid() == 0 && m.permissions().mode() & 0o4000 != 0)
}

/// Can user namespaces (with mount/pid/net/ipc/uts, uid mapping and a
/// fresh /proc) be created here? Err carries the reason and the hint.
fn namespaces_usable() -> Result<(), (String, String)> {
    let host = zot_probes::host();
    if host.wsl1() {
        return Err((
            "WSL1 has no Linux namespaces".into(),
            "use WSL2 (wsl --set-version <distro> 2)".into(),
        ));
    }
    let u = host.userns();
    if !u.available {
        let err = u
            .error
            .map(|e| e.to_string())
            .unwrap_or_else(|| "unknown error".into());
        return Err((
            format!("user namespaces unavailable: {err}"),
            u.hint.clone().unwrap_or_default(),
        ));
    }
    if !u.proc.available {
        return Err((
            format!(
                "cannot mount a fresh /proc: {}",
                u.proc.error.clone().unwrap_or_default()
            ),
            u.proc.hint.clone().unwrap_or_default(),
        ));
    }
    Ok(())
}

/// WSL1, the sysctls that certainly forbid user namespaces, then one
/// forked `unshare(CLONE_NEWUSER)`.
fn quick_namespaces_check() -> Result<(), (String, String)> {
    if zot_probes::host().wsl1() {
        return Err((
            "WSL1 has no Linux namespaces".into(),
            "use WSL2 (wsl --set-version <distro> 2)".into(),
        ));
    }
    if let Some((reason, hint)) = zot_probes::userns_blocked_by_sysctl() {
        return Err((format!("user namespaces unavailable: {reason}"), hint));
    }
    // One fork + unshare(CLONE_NEWUSER): catches container seccomp profiles
    // and limits exhausted further up, still far cheaper than a bwrap run.
    zot_probes::host().userns_quick().map_err(|e| {
        let p = zot_probes::host().userns();
        (
            format!("user namespaces unavailable: {e}"),
            p.hint.clone().unwrap_or_default(),
        )
    })
}

fn landlock_usable() -> Result<(), (String, String)> {
    let host = zot_probes::host();
    if host.wsl1() {
        return Err((
            "WSL1 has no Landlock".into(),
            "use WSL2 (wsl --set-version <distro> 2)".into(),
        ));
    }
    let l = host.landlock();
    if !l.available() {
        let err = match l.error {
            Some(zot_probes::LandlockError::NotImplemented) => {
                "not implemented by the kernel (ENOSYS)".to_string()
            }
            Some(zot_probes::LandlockError::NotEnabled) => {
                "disabled at boot (EOPNOTSUPP)".to_string()
            }
            Some(zot_probes::LandlockError::Other(e)) => format!("errno {e}"),
            None => "unavailable".into(),
        };
        return Err((
            format!("landlock {err}"),
            l.hint.clone().unwrap_or_default(),
        ));
    }
    let s = host.seccomp();
    if !s.available {
        return Err((
            format!(
                "seccomp filters unavailable: {}",
                s.error.clone().unwrap_or_default()
            ),
            s.hint.clone().unwrap_or_default(),
        ));
    }
    Ok(())
}

fn no_backend(policy: &SandboxPolicy, reason: String, hint: String) -> SupervisorError {
    SupervisorError::NoBackend {
        mode: policy.mode,
        reason,
        hint,
    }
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
            considered: Vec::new(),
        });
    }
    let mut considered: Vec<Considered> = Vec::new();
    let backend = match choice {
        BackendChoice::Bwrap => match find_bwrap(policy) {
            Ok(path) => Backend::Bwrap { path },
            Err(reason) => {
                return Err(no_backend(
                    policy,
                    reason,
                    "install bubblewrap (e.g. apt install bubblewrap), or use --backend auto"
                        .into(),
                ))
            }
        },
        // Pinned: only the cheap sysctl check up front (no fork); a failure at
        // launch is explained by the full probe afterwards.
        BackendChoice::Native => match quick_namespaces_check() {
            Ok(()) => Backend::Native,
            Err((reason, hint)) => {
                return Err(no_backend(
                    policy,
                    format!("native backend: {reason}"),
                    hint,
                ))
            }
        },
        BackendChoice::Landlock => match landlock_usable() {
            Ok(()) => Backend::Landlock,
            Err((reason, hint)) => {
                return Err(no_backend(
                    policy,
                    format!("landlock backend: {reason}"),
                    hint,
                ))
            }
        },
        BackendChoice::Auto => {
            let mut chosen = None;
            let mut hints = Vec::new();
            let ns = match find_bwrap(policy) {
                Ok(path) if is_setuid_root(&path) => {
                    chosen = Some(Backend::Bwrap { path });
                    None
                }
                Ok(path) => {
                    // Happy path: no fork, only the sysctls that certainly forbid it.
                    let ns = quick_namespaces_check();
                    match &ns {
                        Ok(()) => chosen = Some(Backend::Bwrap { path }),
                        Err((r, _)) => considered.push(Considered {
                            backend: "bwrap",
                            reason: r.clone(),
                        }),
                    }
                    Some(ns)
                }
                Err(reason) => {
                    considered.push(Considered {
                        backend: "bwrap",
                        reason,
                    });
                    None
                }
            };
            if chosen.is_none() {
                match ns.unwrap_or_else(namespaces_usable) {
                    Ok(()) => chosen = Some(Backend::Native),
                    Err((reason, hint)) => {
                        considered.push(Considered {
                            backend: "native",
                            reason,
                        });
                        hints.push(hint);
                    }
                }
            }
            if chosen.is_none() {
                match landlock_usable() {
                    Ok(()) => chosen = Some(Backend::Landlock),
                    Err((reason, hint)) => {
                        considered.push(Considered {
                            backend: "landlock",
                            reason,
                        });
                        hints.push(hint);
                    }
                }
            }
            match chosen {
                Some(b) => b,
                None => {
                    let reason = considered
                        .iter()
                        .map(|c| format!("{}: {}", c.backend, c.reason))
                        .collect::<Vec<_>>()
                        .join("; ");
                    hints.retain(|h| !h.is_empty());
                    hints.dedup();
                    return Err(no_backend(policy, reason, hints.join("; or ")));
                }
            }
        }
    };
    let mut report = report(&backend, policy);
    let mut reasons: Vec<String> = considered
        .iter()
        .map(|c| format!("backend: {} not used: {}", c.backend, c.reason))
        .collect();
    reasons.append(&mut report.reasons);
    report.reasons = reasons;
    let resolved = Resolved {
        backend,
        report,
        considered,
    };
    if !resolved.ok_without_degraded() && !allow_degraded {
        let r = &resolved.report;
        let why: Vec<&str> = r
            .reasons
            .iter()
            .filter(|s| s.starts_with("filesystem:") || s.starts_with("network:"))
            .map(String::as_str)
            .collect();
        let mut hint = "use --allow-degraded to run anyway".to_string();
        if let Err((_, h)) = namespaces_usable() {
            if !h.is_empty() {
                hint.push_str(&format!(
                    ", or enable user namespaces for the native/bwrap backend: {h}"
                ));
            }
        }
        return Err(SupervisorError::Degraded {
            backend: resolved.backend.name().to_string(),
            mode: policy.mode,
            reason: why.join("; "),
            hint,
        });
    }
    if allow_degraded && !resolved.ok_without_degraded() {
        let mut resolved = resolved;
        resolved.report.reasons.push(format!(
            "{} mode {} is not fully enforced on {} (--allow-degraded)",
            EnforcementReport::DEGRADED_NOTE,
            policy.mode,
            resolved.backend.name()
        ));
        return Ok(resolved);
    }
    Ok(resolved)
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

#[cfg(test)]
mod tests {
    use super::*;
    use zot_policy::sandbox::{EnvPolicy, ReadScope};

    fn policy(mode: SandboxMode) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            cwd: "/w".into(),
            read: ReadScope::FullDisk,
            write_roots: vec!["/w".into()],
            protected: vec![],
            deny_read: vec![],
            network: NetworkPolicy::Off,
            env: EnvPolicy::default(),
        }
    }

    #[test]
    fn danger_needs_no_backend() {
        let r = resolve(
            &policy(SandboxMode::DangerFullAccess),
            BackendChoice::Landlock,
            false,
        )
        .unwrap();
        assert_eq!(r.backend, Backend::Unconfined);
    }

    #[test]
    fn landlock_workspace_write_is_partial_and_refused_without_degraded() {
        let rep = report(&Backend::Landlock, &policy(SandboxMode::WorkspaceWrite));
        assert_eq!(rep.filesystem, Level::Partial);
        assert_eq!(rep.pid, Level::None);
        if zot_probes::host().landlock().available() && zot_probes::host().seccomp().available {
            let err = resolve(
                &policy(SandboxMode::WorkspaceWrite),
                BackendChoice::Landlock,
                false,
            )
            .unwrap_err();
            assert!(matches!(err, SupervisorError::Degraded { .. }), "{err}");
            let ok = resolve(
                &policy(SandboxMode::WorkspaceWrite),
                BackendChoice::Landlock,
                true,
            )
            .unwrap();
            assert!(ok.report.reasons.iter().any(|r| r.starts_with("degraded:")));
        }
    }

    #[test]
    fn native_report_is_full() {
        let rep = report(&Backend::Native, &policy(SandboxMode::WorkspaceWrite));
        assert_eq!(
            (rep.filesystem, rep.network, rep.pid),
            (Level::Full, Level::Full, Level::Full)
        );
    }

    #[test]
    fn bwrap_inside_workspace_is_never_trusted() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().join("bwrap");
        std::fs::write(&b, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = trust(&b, &b, &[d.path().to_path_buf()]).unwrap_err();
        assert!(err.contains("never trusted"), "{err}");
    }
}
