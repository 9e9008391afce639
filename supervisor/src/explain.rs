//! `zot debug sandbox --explain`: what a policy resolves to on this host,
//! without running anything: the backend and why the others were not
//! chosen, every mount in order, each Landlock rule with its rights, the
//! seccomp rules, the environment kept and the network policy.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zot_policy::sandbox::{NetworkPolicy, ReadScope, SandboxMode, SandboxPolicy};

use crate::resolve::{self, Backend};
use crate::{BackendChoice, EnforcementReport};

/// One Landlock rule: a path and the access rights granted beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockRule {
    pub path: PathBuf,
    pub rights: Vec<&'static str>,
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
    ex.reasons = resolved
        .report
        .reasons
        .iter()
        .filter(|r| !r.starts_with("degraded:"))
        .cloned()
        .collect();
    ex.enforced = Some(resolved.report.clone());
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
        Backend::Landlock => LlKind::Landlock,
        _ => LlKind::Namespaced,
    };
    ex.landlock = landlock_rules(policy, kind);
    ex.landlock_scopes = vec!["abstract unix sockets (ABI 6)", "signals (ABI 6)"];
    ex.seccomp = seccomp_lines(net_off);
    ex
}

#[derive(PartialEq)]
enum LlKind {
    Namespaced,
    Landlock,
}

const READ: &[&str] = &["execute", "read_file", "read_dir"];
const DEV: &[&str] = &[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "truncate",
    "ioctl_dev",
];
const ALL: &[&str] = &[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];

/// The Landlock rules the launcher adds (see launcher/src/landlock_rules.rs
/// and the supervisor's launch spec).
fn landlock_rules(policy: &SandboxPolicy, kind: LlKind) -> Vec<LandlockRule> {
    let mut rules = Vec::new();
    let rule = |p: &str, r: &'static [&'static str]| LandlockRule {
        path: p.into(),
        rights: r.to_vec(),
    };
    match &policy.read {
        ReadScope::FullDisk => rules.push(rule("/", READ)),
        ReadScope::Restricted { paths } => {
            rules.extend(paths.iter().map(|p| LandlockRule {
                path: p.clone(),
                rights: READ.to_vec(),
            }));
            rules.push(rule("/proc", READ));
            rules.push(rule(crate::bwrap::LAUNCHER_PATH, READ));
        }
    }
    rules.push(rule("/dev", DEV));
    for r in &policy.write_roots {
        rules.push(LandlockRule {
            path: r.clone(),
            rights: ALL.to_vec(),
        });
    }
    if kind == LlKind::Namespaced {
        for p in ["/tmp", "/var/tmp", "/dev/shm"] {
            rules.push(rule(p, ALL));
        }
    }
    rules
}

fn seccomp_lines(net_off: bool) -> Vec<String> {
    let mut v = vec![
        "default: allow; the rules below return an error; architecture checked (other ABIs and x32 refused)".to_string(),
        "EPERM: ptrace, process_vm_readv, process_vm_writev".into(),
        "EPERM: mount, umount2, pivot_root, chroot, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr, setns".into(),
        "EPERM: unshare and clone with any namespace flag (user, mount, pid, net, ipc, uts, cgroup, time)".into(),
        "ENOSYS: clone3 (so the filterable clone is used)".into(),
        "EPERM: keyctl, add_key, request_key, bpf, perf_event_open, userfaultfd".into(),
        "EPERM: io_uring_setup, io_uring_enter, io_uring_register".into(),
        "EPERM: kexec_load, init_module, finit_module, delete_module, acct, swapon, swapoff, reboot".into(),
        "EPERM: ioctl TIOCSTI, TIOCLINUX (request compared as 32 bits)".into(),
    ];
    if net_off {
        v.push("EPERM: socket, socketpair for every family but AF_UNIX".into());
    }
    v.push("no_new_privs set; all capabilities dropped (bounding, ambient, effective, permitted, inheritable)".into());
    v
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

    #[test]
    fn landlock_backend_gets_no_private_tmp_rule() {
        let p = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            cwd: "/w".into(),
            read: ReadScope::FullDisk,
            write_roots: vec!["/w".into()],
            protected: vec![],
            deny_read: vec![],
            network: NetworkPolicy::Off,
            env: Default::default(),
        };
        let ll = landlock_rules(&p, LlKind::Landlock);
        assert!(!ll.iter().any(|r| r.path == Path::new("/tmp")));
        let ns = landlock_rules(&p, LlKind::Namespaced);
        assert!(ns.iter().any(|r| r.path == Path::new("/tmp")));
        assert!(ns
            .iter()
            .any(|r| r.path == Path::new("/w") && r.rights.contains(&"make_reg")));
    }
}
