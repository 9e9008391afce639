//! `zot debug sandbox --explain`: what a policy resolves to on this host,
//! without running anything. The document carries the [`LaunchPlan`]
//! itself (the same value a run executes: byte-for-byte the same for the
//! bwrap and native backends), the backend and why the others were not
//! chosen, what a run would enforce, and for bwrap the arguments the plan
//! renders to.

use std::path::PathBuf;

use serde::Serialize;
use zot_launcher::plan::LaunchPlan;
use zot_policy::sandbox::{SandboxMode, SandboxPolicy};

use crate::resolve::{self, Backend};
use crate::{BackendChoice, BackendKind, EnforcementReport};

/// How the bwrap backend runs the plan.
#[derive(Debug, Clone, Serialize)]
pub struct BwrapInvocation {
    /// The trusted bwrap binary.
    pub path: PathBuf,
    /// The arguments rendered from the plan (before `--` and the launcher).
    pub args: Vec<String>,
    /// How many of the plan's mounts (the last ones) the launcher makes
    /// inside the view bwrap built, instead of bwrap.
    pub launcher_mounts: usize,
    /// The arguments with which bwrap alone builds the same view (`args`
    /// plus the launcher's mounts as bwrap options).
    pub view_args: Vec<String>,
}

/// The explanation (`--json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub mode: SandboxMode,
    pub backend: BackendKind,
    /// Why this backend, why better ones were not chosen, what is not fully
    /// enforced.
    pub reasons: Vec<String>,
    /// Set when no backend can run the policy (a run would exit 125).
    pub error: Option<String>,
    /// What a run would enforce (Landlock as requested; a real run reports
    /// what the kernel granted).
    pub enforced: Option<EnforcementReport>,
    /// The plan a run executes.
    pub plan: Option<LaunchPlan>,
    /// bwrap only.
    pub bwrap: Option<BwrapInvocation>,
    /// Where each deny-read and protected path comes from (built-in list of
    /// which home, the config file, the command line, the git scan, PATH).
    pub origins: Vec<zot_policy::sandbox::Origin>,
}

/// Explain `policy` under `choice` on this host.
pub fn explain(policy: &SandboxPolicy, choice: BackendChoice) -> Explanation {
    let env: Vec<_> = std::env::vars_os().collect();
    let mut ex = Explanation {
        mode: policy.mode,
        backend: BackendKind::Unconfined,
        reasons: Vec::new(),
        error: None,
        enforced: None,
        plan: None,
        bwrap: None,
        origins: Vec::new(),
    };
    let planned = match resolve::prepare(policy, choice, true, &env) {
        Ok(p) => p,
        Err(e) => {
            ex.error = Some(match e.hint() {
                Some(h) => format!("{}\nhint: {h}", zot_launcher::error_chain(&e)),
                None => zot_launcher::error_chain(&e),
            });
            return ex;
        }
    };
    ex.backend = planned.backend.kind();
    ex.origins = planned.origins.clone();
    ex.reasons = planned.report.backend_reasons();
    match &planned.backend {
        Backend::Unconfined => ex
            .reasons
            .push("danger-full-access: no sandbox, no mounts, no Landlock, no seccomp".into()),
        backend => {
            let chosen = match choice {
                BackendChoice::Auto => format!(
                    "backend: {} chosen (first backend of the auto order bwrap -> native -> landlock that works here)",
                    backend.name()
                ),
                _ => format!("backend: {} (pinned with --backend)", backend.name()),
            };
            ex.reasons.insert(0, chosen);
        }
    }
    if planned.backend == Backend::Landlock {
        ex.reasons.push(
            "landlock backend: no mount namespace; the host filesystem is filtered by Landlock only"
                .into(),
        );
    }
    if !planned.report.mode_enforced() {
        ex.reasons.push(format!(
            "a run refuses this mode on {} unless --allow-degraded is given",
            ex.backend
        ));
    }
    if let Backend::Bwrap { path } = &planned.backend {
        let strings = |v: Vec<std::ffi::OsString>| {
            v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
        };
        ex.bwrap = Some(BwrapInvocation {
            path: path.clone(),
            args: strings(crate::bwrap::render(&planned.plan)),
            launcher_mounts: planned.plan.mounts.len()
                - zot_launcher::tail_mounts_start(&planned.plan),
            view_args: strings(crate::bwrap::render_view(&planned.plan)),
        });
    }
    let mut enforced = planned.report;
    // Only the run knows what the kernel granted; the plan asks for this.
    enforced
        .notes
        .retain(|n| !matches!(n, crate::Note::Degraded { .. }));
    ex.enforced = Some(enforced);
    ex.plan = Some(planned.plan);
    ex
}
