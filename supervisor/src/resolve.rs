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

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

use serde::Serialize;
use zot_launcher::plan::LaunchPlan;
use zot_policy::sandbox::{SandboxMode, SandboxPolicy};

use crate::planner::{self, RealFs};
use crate::{BackendChoice, BackendKind, EnforcementReport, Note, SupervisorError};

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
    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Unconfined => BackendKind::Unconfined,
            Backend::Bwrap { .. } => BackendKind::Bwrap,
            Backend::Native => BackendKind::Native,
            Backend::Landlock => BackendKind::Landlock,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// A backend that was considered and not chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Considered {
    pub backend: BackendKind,
    pub reason: String,
}

/// The backend chosen for a policy, and the better ones that were not.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub backend: Backend,
    pub considered: Vec<Considered>,
}

/// A policy resolved and planned for this host: the backend, the plan it
/// runs, and what a run will enforce.
#[derive(Debug, Clone)]
pub struct Planned {
    pub backend: Backend,
    /// Better backends that were not chosen (also in `report.notes`).
    pub considered: Vec<Considered>,
    pub plan: LaunchPlan,
    pub report: EnforcementReport,
    /// The workspace index at launch (confined write modes only): what
    /// the command created is told by it after the run.
    pub repos: Option<crate::index::Snapshot>,
    /// Where each deny-read and protected path comes from (`--explain`).
    pub origins: Vec<zot_policy::sandbox::Origin>,
    /// The executables, at launch, of the caller's `PATH` directories that
    /// must stay writable (a writable root, or `.`): what appears there
    /// is renamed aside after the run.
    pub path_watch: Vec<(PathBuf, crate::host::ExecSnapshot)>,
}

/// Resolve `policy` to a backend, plan it, and check that the mode is
/// fully enforced (or accept the downgrade with `allow_degraded`, noted in
/// the report). `env` is the caller's environment.
pub fn prepare(
    policy: &SandboxPolicy,
    choice: BackendChoice,
    allow_degraded: bool,
    env: &[(OsString, OsString)],
) -> Result<Planned, SupervisorError> {
    let resolved = resolve(policy, choice)?;
    prepare_resolved(resolved, policy, allow_degraded, env, None)
}

/// [`prepare`] for a backend already chosen by [`resolve`] (a run starts
/// its sandbox while it plans), with a session's workspace index (`None`:
/// the persisted index of the writable roots, validated).
pub fn prepare_resolved(
    resolved: Resolved,
    policy: &SandboxPolicy,
    allow_degraded: bool,
    env: &[(OsString, OsString)],
    index: Option<&std::sync::Arc<crate::index::live::Live>>,
) -> Result<Planned, SupervisorError> {
    crate::canon::scope(|| {
        let isolation = resolved.backend.kind().isolation();
        prepare_scoped(resolved, isolation, policy, allow_degraded, env, index)
    })
}

fn prepare_scoped(
    resolved: Resolved,
    isolation: zot_launcher::plan::Isolation,
    policy: &SandboxPolicy,
    allow_degraded: bool,
    env: &[(OsString, OsString)],
    index: Option<&std::sync::Arc<crate::index::live::Live>>,
) -> Result<Planned, SupervisorError> {
    // Credentials by the rules the tools follow, and zot's own state.
    let policy = &if isolation == zot_launcher::plan::Isolation::None {
        policy.clone()
    } else {
        crate::creds::with_credentials(policy, env)
    };
    let (policy, repos, path_dirs, path_watch) =
        with_host_protections(policy, isolation, env, index);
    let policy = &policy;
    let mut plan = planner::plan(policy, isolation, env, &RealFs).map_err(SupervisorError::Plan)?;
    if isolation != zot_launcher::plan::Isolation::None && crate::cgroup::memory_usable().is_err() {
        plan.unenforced.push(zot_launcher::plan::Gap::NoMemoryLimit);
    }
    let skipped = resolved
        .considered
        .iter()
        .map(|c| Note::BackendNotUsed {
            backend: c.backend,
            reason: c.reason.clone(),
        })
        .collect();
    let mut report = EnforcementReport::new(resolved.backend.kind(), &plan, skipped);
    if isolation != zot_launcher::plan::Isolation::None && crate::cgroup::memory_usable().is_ok() {
        report.limit_values.cgroup = format!(
            "memory {} ({})",
            zot_policy::limits::format_size(policy.limits.memory),
            crate::cgroup::status()
        );
    }
    if !report.mode_enforced() {
        if !allow_degraded {
            let why: Vec<String> = plan
                .unenforced
                .iter()
                .filter(|g| g.level() != zot_launcher::Level::Full)
                .filter(|g| {
                    !matches!(
                        g.area(),
                        zot_launcher::plan::Area::Pid | zot_launcher::plan::Area::Limits
                    )
                })
                .map(|g| g.describe().to_string())
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
                backend: resolved.backend.kind(),
                mode: policy.mode,
                reason: why.join("; "),
                hint,
            });
        }
        report.notes.push(Note::Degraded {
            mode: policy.mode,
            backend: resolved.backend.kind(),
        });
    }
    if let Some(s) = &repos {
        if !s.complete {
            report.notes.push(Note::ScanIncomplete { dirs: s.dirs });
        }
        for path in &s.unlistable {
            report.notes.push(Note::Unlistable { path: path.clone() });
        }
        for n in &s.notes {
            report.notes.push(Note::from(n.clone()));
        }
    }
    if plan.isolation == zot_launcher::plan::Isolation::Namespaces {
        for v in planner::repo_views(policy, &plan.write_roots, &RealFs) {
            report.notes.push(Note::RepoShown {
                from: v.from,
                work_tree: v.work_tree,
                shown: v.git,
            });
        }
        for path in path_dirs {
            report.notes.push(Note::PathReadOnly { path });
        }
    }
    Ok(Planned {
        backend: resolved.backend,
        considered: resolved.considered,
        plan,
        report,
        repos,
        origins: policy.origins.clone(),
        path_watch,
    })
}

/// The directories a command's `PATH` lookups start from: the command's
/// working directory and the caller's own (a relative `PATH` entry or an
/// empty component resolves against either, in the sandbox or on the
/// host).
pub fn path_cwds(policy: &SandboxPolicy) -> Vec<PathBuf> {
    let mut v = vec![crate::canon::canonicalize(&policy.cwd).unwrap_or_else(|| policy.cwd.clone())];
    if let Ok(c) = std::env::current_dir() {
        let c = crate::canon::canonicalize(&c).unwrap_or(c);
        if !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

/// What only the host can tell about the writable roots: the git files of
/// every repository inside them (from the workspace index), the
/// directories the index could not list (read-only whole: what is inside
/// is unknown), and the directories of the caller's `PATH` inside them.
/// The launch protects them; the agent's file tools refuse them.
#[derive(Debug, Clone)]
pub struct HostProtections {
    /// Each path and why it is protected.
    pub paths: Vec<(PathBuf, &'static str)>,
    /// The index as this launch saw it.
    pub snapshot: crate::index::Snapshot,
    /// The `PATH` directories among `paths` (for the report).
    pub path_dirs: Vec<PathBuf>,
}

impl HostProtections {
    /// Whether `real` (a canonical path) is, or is inside, one of them.
    pub fn covers(&self, real: &std::path::Path) -> Option<&std::path::Path> {
        self.paths
            .iter()
            .find(|(p, _)| real.starts_with(p))
            .map(|(p, _)| p.as_path())
    }
}

/// The [`HostProtections`] of `write_roots`, from a session's `index`, or
/// else from the persisted index (validated).
///
/// Git files are resolved the way git reads its configuration (see
/// [`crate::gitconfig`]); `PATH` entries the way a shell looks them up
/// from each of `cwds` (see [`path_cwds`]).
pub fn host_protections(
    write_roots: &[PathBuf],
    env: &[(OsString, OsString)],
    index: Option<&std::sync::Arc<crate::index::live::Live>>,
    cwds: &[PathBuf],
) -> HostProtections {
    let roots: Vec<PathBuf> = write_roots
        .iter()
        .map(|r| crate::canon::canonicalize(r).unwrap_or_else(|| r.clone()))
        .collect();
    let write_roots = roots.as_slice();
    let tops = crate::index::tree::top_roots(write_roots);
    let snapshot = match index.filter(|l| l.roots() == tops.as_slice()) {
        Some(live) => crate::index::Snapshot::live(live),
        None => {
            let state = crate::journal::state_dir_from(|k| {
                env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
            })
            .ok();
            crate::index::Snapshot::one_shot(&tops, state.as_deref(), crate::index::SCAN_BUDGET)
        }
    };
    let host = crate::gitconfig::HostGit::from_env(env);
    let mut paths: Vec<(PathBuf, &'static str)> =
        crate::gitconfig::protected_in(&snapshot.repos, &host, write_roots);
    for d in &snapshot.unlistable {
        paths.push((
            d.clone(),
            "index: a directory that cannot be listed (what is inside is unknown)",
        ));
    }
    let path_dirs = crate::host::exec_path_dirs(env, write_roots, cwds);
    for d in path_dirs.iter().cloned() {
        paths.push((
            d,
            "PATH: a directory of the caller's PATH inside a writable root",
        ));
    }
    HostProtections {
        paths,
        snapshot,
        path_dirs,
    }
}

/// The policy plus its [`HostProtections`] (confined write modes only).
fn with_host_protections(
    policy: &SandboxPolicy,
    isolation: zot_launcher::plan::Isolation,
    env: &[(OsString, OsString)],
    index: Option<&std::sync::Arc<crate::index::live::Live>>,
) -> (
    SandboxPolicy,
    Option<crate::index::Snapshot>,
    Vec<PathBuf>,
    Vec<(PathBuf, crate::host::ExecSnapshot)>,
) {
    use zot_launcher::plan::Isolation;
    if policy.mode == SandboxMode::DangerFullAccess
        || isolation == Isolation::None
        || policy.write_roots.is_empty()
    {
        return (policy.clone(), None, Vec::new(), Vec::new());
    }
    let mut p = policy.clone();
    let cwds = path_cwds(policy);
    let host = host_protections(&p.write_roots, env, index, &cwds);
    let roots: Vec<PathBuf> = p
        .write_roots
        .iter()
        .map(|r| crate::canon::canonicalize(r).unwrap_or_else(|| r.clone()))
        .collect();
    let watched = crate::host::exec_path_watched(env, &roots, &cwds);
    let path_watch = crate::host::snapshot_executables(&watched);
    p.add_paths(
        zot_policy::sandbox::Rule::Protected,
        host.paths.into_iter().map(|(path, from)| (path, from.into())),
    );
    (p, Some(host.snapshot), host.path_dirs, path_watch)
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

/// The first `bwrap` on PATH that the probes' trust rule accepts for this
/// policy (outside the workspace and write roots). Does not run it.
pub fn find_bwrap(policy: &SandboxPolicy) -> Result<PathBuf, String> {
    zot_probes::find_trusted("bwrap", &untrusted_roots(policy)).map_err(|e| e.to_string())
}

fn is_setuid_root(path: &std::path::Path) -> bool {
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
    // In the initial user namespace without a seccomp filter the sysctls
    // say it all. Elsewhere (containers, another sandbox) one fork +
    // unshare(CLONE_NEWUSER) catches seccomp profiles and limits exhausted
    // further up, still far cheaper than a failed bwrap run.
    if !zot_probes::userns_may_be_filtered() {
        return Ok(());
    }
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

/// Pick the backend for `policy` (no plan yet: see [`prepare`]).
pub fn resolve(policy: &SandboxPolicy, choice: BackendChoice) -> Result<Resolved, SupervisorError> {
    if policy.mode == SandboxMode::DangerFullAccess {
        return Ok(Resolved {
            backend: Backend::Unconfined,
            considered: Vec::new(),
        });
    }
    let mut considered: Vec<Considered> = Vec::new();
    let skip = |considered: &mut Vec<Considered>, backend, reason: String| {
        considered.push(Considered { backend, reason })
    };
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
        // Pinned: only the cheap checks up front; a failure at launch is
        // explained by the full probe afterwards.
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
                    let ns = quick_namespaces_check();
                    match &ns {
                        Ok(()) => chosen = Some(Backend::Bwrap { path }),
                        Err((r, _)) => skip(&mut considered, BackendKind::Bwrap, r.clone()),
                    }
                    Some(ns)
                }
                Err(reason) => {
                    skip(&mut considered, BackendKind::Bwrap, reason);
                    None
                }
            };
            if chosen.is_none() {
                match ns.unwrap_or_else(namespaces_usable) {
                    Ok(()) => chosen = Some(Backend::Native),
                    Err((reason, hint)) => {
                        skip(&mut considered, BackendKind::Native, reason);
                        hints.push(hint);
                    }
                }
            }
            if chosen.is_none() {
                match landlock_usable() {
                    Ok(()) => chosen = Some(Backend::Landlock),
                    Err((reason, hint)) => {
                        skip(&mut considered, BackendKind::Landlock, reason);
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
    Ok(Resolved {
        backend,
        considered,
    })
}

/// Explain a native launch that failed to create its namespaces: runs the
/// host probes (slow path only).
pub fn namespace_hint() -> String {
    match namespaces_usable() {
        Err((_, hint)) if !hint.is_empty() => hint,
        _ => "run `zot debug sandbox --check` for a diagnosis".to_string(),
    }
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
    use zot_policy::sandbox::{EnvPolicy, NetworkPolicy, ReadScope};

    fn policy(mode: SandboxMode, ws: &std::path::Path) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            cwd: ws.into(),
            read: ReadScope::FullDisk,
            write_roots: vec![ws.into()],
            protected: vec![ws.join(".git/hooks")],
            deny_read: vec![],
            network: NetworkPolicy::Off,
            env: EnvPolicy::default(),
            limits: Default::default(),
            origins: vec![],
        }
    }

    #[test]
    fn danger_needs_no_backend() {
        let ws = tempfile::tempdir().unwrap();
        let r = prepare(
            &policy(SandboxMode::DangerFullAccess, ws.path()),
            BackendChoice::Landlock,
            false,
            &[],
        )
        .unwrap();
        assert_eq!(r.backend, Backend::Unconfined);
        assert_eq!(r.report.filesystem, zot_launcher::Level::None);
    }

    #[test]
    fn landlock_workspace_write_is_partial_and_refused_without_degraded() {
        if !(zot_probes::host().landlock().available() && zot_probes::host().seccomp().available) {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        let pol = policy(SandboxMode::WorkspaceWrite, ws.path());
        let err = prepare(&pol, BackendChoice::Landlock, false, &[]).unwrap_err();
        assert!(matches!(err, SupervisorError::Degraded { .. }), "{err}");
        let ok = prepare(&pol, BackendChoice::Landlock, true, &[]).unwrap();
        assert_eq!(ok.report.filesystem, zot_launcher::Level::Partial);
        assert_eq!(ok.report.pid, zot_launcher::Level::None);
        assert!(ok
            .report
            .notes
            .iter()
            .any(|n| matches!(n, Note::Degraded { .. })));
        assert!(!ok
            .report
            .backend_reasons()
            .iter()
            .any(|r| r.starts_with("degraded")));
    }

    #[test]
    fn native_report_is_full() {
        let ws = tempfile::tempdir().unwrap();
        let pol = policy(SandboxMode::WorkspaceWrite, ws.path());
        let plan = planner::plan(
            &pol,
            zot_launcher::plan::Isolation::Namespaces,
            &[],
            &RealFs,
        )
        .unwrap();
        let rep = EnforcementReport::new(BackendKind::Native, &plan, vec![]);
        assert_eq!(
            (rep.filesystem, rep.network, rep.pid),
            (
                zot_launcher::Level::Full,
                zot_launcher::Level::Full,
                zot_launcher::Level::Full
            )
        );
    }

    #[test]
    fn bwrap_inside_workspace_is_never_trusted() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().join("bwrap");
        std::fs::write(&b, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = zot_probes::trusted_binary(&b, &[d.path().to_path_buf()]).unwrap_err();
        assert!(err.contains("untrusted"), "{err}");
    }
}
