//! `zot debug sandbox --explain`: what a policy resolves to on this host,
//! without running anything: the backend and why the others were not
//! chosen, every mount in order, each Landlock rule with its rights, the
//! seccomp rules, the environment kept and the network policy.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zot_policy::sandbox::{NetworkPolicy, SandboxMode, SandboxPolicy};

use crate::resolve::{self, Backend};
use crate::{BackendChoice, EnforcementReport};

/// One Landlock rule: a path and the access rights granted beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockRule {
    pub path: PathBuf,
    pub rights: String,
}

/// The explanation (`--json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub mode: SandboxMode,
    /// `bwrap`, `native`, `landlock` or `none`.
    pub backend: String,
    /// Why better backends were not chosen, and what is not fully enforced.
    pub reasons: Vec<String>,
    /// Set when no backend can run the policy (the run would exit 125).
    pub error: Option<String>,
    /// What a run would enforce (Landlock/seccomp as requested; the real
    /// run reports what the kernel granted).
    pub enforced: Option<EnforcementReport>,
    pub working_directory: PathBuf,
    /// Namespaces the backend creates.
    pub namespaces: Vec<&'static str>,
    /// Every mount in order (empty for the landlock backend: no mounts).
    pub mounts: Vec<String>,
    pub landlock: Vec<LandlockRule>,
    /// Landlock scopes (IPC restrictions).
    pub landlock_scopes: Vec<&'static str>,
    pub seccomp: Vec<String>,
    /// Variable names passed from the caller's environment.
    pub env_kept: Vec<String>,
    /// Variables set to fixed values.
    pub env_set: Vec<(String, String)>,
    /// Patterns of the policy's keep list (e.g. `LC_*`).
    pub env_allowed: Vec<String>,
    pub network: String,
}

/// Explain `policy` under `choice` on this host. `zot_exe` is the launcher
/// bound into a bwrap sandbox (shown in the mount list).
pub fn explain(policy: &SandboxPolicy, choice: BackendChoice, zot_exe: &Path) -> Explanation {
    let env = crate::env::command_env(policy, std::env::vars_os());
    let env_for_spec = env.clone();
    let set: Vec<(String, String)> = policy.env.set.clone();
    let env_kept: Vec<String> = env
        .iter()
        .filter_map(|(k, _)| k.to_str().map(str::to_string))
        .filter(|k| !set.iter().any(|(s, _)| s == k))
        .collect();
    let network = match policy.network {
        NetworkPolicy::Off => "off: own empty network namespace (bwrap/native) and seccomp refuses non-AF_UNIX sockets",
        NetworkPolicy::On => "on: host network",
    }
    .to_string();
    let mut ex = Explanation {
        mode: policy.mode,
        backend: "none".into(),
        reasons: Vec::new(),
        error: None,
        enforced: None,
        working_directory: policy.cwd.clone(),
        namespaces: Vec::new(),
        mounts: Vec::new(),
        landlock: Vec::new(),
        landlock_scopes: Vec::new(),
        seccomp: Vec::new(),
        env_kept,
        env_set: set,
        env_allowed: policy.env.keep.clone(),
        network,
    };
    let resolved = match resolve::resolve(policy, choice, true) {
        Ok(r) => r,
        Err(e) => {
            ex.error = Some(chain(&e));
            return ex;
        }
    };
    ex.backend = resolved.backend.name().into();
    ex.reasons = resolved.report.backend_reasons();
    ex.enforced = Some(resolved.report.clone());
    let chosen = match choice {
        BackendChoice::Auto => format!(
            "backend: {} chosen (first backend of the auto order bwrap -> native -> landlock that works here)",
            resolved.backend.name()
        ),
        _ => format!("backend: {} (pinned with --backend)", resolved.backend.name()),
    };
    if resolved.backend != Backend::Unconfined {
        ex.reasons.insert(0, chosen);
    }
    if !resolved.ok_without_degraded() {
        ex.reasons.push(format!(
            "a run refuses this mode on {} unless --allow-degraded is given",
            ex.backend
        ));
    }
    let net_off = policy.network == NetworkPolicy::Off;
    ex.namespaces = match resolved.backend {
        Backend::Bwrap { .. } | Backend::Native => {
            let mut n = vec!["user", "mount", "pid", "ipc", "uts"];
            if net_off {
                n.push("net");
            }
            n
        }
        _ => Vec::new(),
    };
    match &resolved.backend {
        Backend::Unconfined => {
            ex.reasons
                .push("danger-full-access: no sandbox, no mounts, no Landlock, no seccomp".into());
            return ex;
        }
        Backend::Bwrap { path } => {
            let plan = crate::bwrap::plan(policy, zot_exe);
            ex.mounts.push(format!("(bwrap at {})", path.display()));
            ex.mounts.extend(bwrap_mount_lines(&plan.args));
        }
        Backend::Native => match zot_launcher::native::plan(policy) {
            Ok(ops) => ex.mounts = ops.iter().map(native_line).collect(),
            Err(e) => ex.error = Some(chain(&e)),
        },
        Backend::Landlock => {
            ex.reasons.push("landlock backend: no mount namespace; the host filesystem is filtered by Landlock only".into());
        }
    }
    let kind = match resolved.backend {
        Backend::Landlock => zot_launcher::BackendKind::Landlock,
        Backend::Native => zot_launcher::BackendKind::Native,
        _ => zot_launcher::BackendKind::Bwrap,
    };
    let req = crate::RunRequest::new(policy.clone(), vec!["CMD".into()]);
    let spec = crate::launch_spec(&req, kind, env_for_spec);
    ex.landlock = zot_launcher::landlock_rules::describe(&spec)
        .into_iter()
        .map(|(path, rights)| LandlockRule {
            path,
            rights: rights.to_string(),
        })
        .collect();
    ex.landlock_scopes = vec!["abstract unix sockets (ABI 6)", "signals (ABI 6)"];
    ex.seccomp = zot_launcher::seccomp::describe(&spec.seccomp);
    ex.seccomp
        .push("no_new_privs set; every capability dropped (bounding set first)".into());
    ex
}

fn native_line(op: &zot_launcher::native::MountOp) -> String {
    use zot_launcher::native::MountOp::*;
    match op {
        Bind {
            src,
            dst,
            writable: false,
        } if src == dst => {
            format!(
                "ro-bind {} (every submount read-only, locked flags kept)",
                dst.display()
            )
        }
        Bind {
            src,
            dst,
            writable: false,
        } => format!("ro-bind {} -> {}", src.display(), dst.display()),
        Bind {
            src,
            dst,
            writable: true,
        } if src == dst => format!("bind rw {}", dst.display()),
        Bind {
            src,
            dst,
            writable: true,
        } => format!("bind rw {} -> {}", src.display(), dst.display()),
        Tmpfs {
            dst,
            mode,
            writable,
        } => format!(
            "tmpfs {} (mode {mode:o}{})",
            dst.display(),
            if *writable { "" } else { ", read-only" }
        ),
        Dev { dst } => format!(
            "minimal dev {} (null zero full random urandom tty, devpts, shm; read-only tmpfs)",
            dst.display()
        ),
        Proc { dst } => format!(
            "proc {} (fresh, this PID namespace; sys, sysrq-trigger, irq, bus read-only)",
            dst.display()
        ),
        MaskFile { dst } => format!("deny-read {} (/dev/null, read-only, nodev)", dst.display()),
        MaskDir { dst } => format!(
            "deny-read {} (empty read-only tmpfs, mode 000)",
            dst.display()
        ),
        BlockCreate { dst, protected } => format!(
            "protect {} (missing: /dev/null read-only at {}, placeholder removed after the run)",
            protected.display(),
            dst.display()
        ),
        RemountRootRo => "remount / read-only".into(),
    }
}

/// bwrap's mount options, one line each, in order.
fn bwrap_mount_lines(args: &[OsString]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    let s = |i: usize| {
        args.get(i)
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    while i < args.len() {
        let a = s(i);
        let two = [
            "--bind",
            "--ro-bind",
            "--dev-bind",
            "--bind-try",
            "--ro-bind-try",
            "--dev-bind-try",
            "--symlink",
        ];
        let one = [
            "--tmpfs",
            "--dev",
            "--proc",
            "--remount-ro",
            "--dir",
            "--mqueue",
        ];
        if two.contains(&a.as_str()) {
            out.push(format!(
                "{} {} -> {}",
                a.trim_start_matches("--"),
                s(i + 1),
                s(i + 2)
            ));
            i += 3;
        } else if one.contains(&a.as_str()) {
            out.push(format!("{} {}", a.trim_start_matches("--"), s(i + 1)));
            i += 2;
        } else if [
            "--perms",
            "--size",
            "--chdir",
            "--setenv",
            "--uid",
            "--gid",
            "--hostname",
            "--info-fd",
        ]
        .contains(&a.as_str())
        {
            if a == "--perms" || a == "--size" {
                out.push(format!("{} {}", a.trim_start_matches("--"), s(i + 1)));
            }
            i += if a == "--setenv" { 3 } else { 2 };
        } else {
            i += 1;
        }
    }
    out
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bwrap_lines_follow_args() {
        let args: Vec<OsString> = [
            "--unshare-user",
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
            "--bind",
            "/w",
            "/w",
            "--proc",
            "/proc",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert_eq!(
            bwrap_mount_lines(&args),
            vec![
                "ro-bind / -> /",
                "tmpfs /tmp",
                "bind /w -> /w",
                "proc /proc"
            ]
        );
    }
}
