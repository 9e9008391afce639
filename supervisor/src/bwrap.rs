//! The bubblewrap command line for a policy. Pure except for `lstat` calls
//! on the paths involved (a protected path that does not exist yet is
//! blocked at its first missing component).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use zot_policy::sandbox::{NetworkPolicy, ReadScope, SandboxPolicy};

/// Where the launcher (the `zot` binary) is bound inside the sandbox.
pub const LAUNCHER_PATH: &str = "/run/.zot-launcher";

/// Host directories replaced by private empty ones (host sockets live there).
pub const PRIVATE_DIRS: &[&str] = &["/tmp", "/var/tmp", "/run"];

/// A bwrap invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BwrapPlan {
    /// Arguments before `--` (namespaces, mounts, cwd).
    pub args: Vec<OsString>,
    /// Empty files bwrap will create on the host as mount points for
    /// protected paths that do not exist yet; removed after the run.
    pub placeholders: Vec<PathBuf>,
}

impl BwrapPlan {
    fn push(&mut self, a: impl Into<OsString>) {
        self.args.push(a.into());
    }
    fn op(&mut self, op: &str, src: &Path, dest: &Path) {
        self.push(op);
        self.push(src.as_os_str());
        self.push(dest.as_os_str());
    }
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// Is `p` hidden by one of the private dirs (and not bound back by a write root)?
fn under_private(p: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|d| p.starts_with(d))
}

/// How to block writes at a protected path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// The path exists: bind it read-only onto itself.
    ReadOnly(PathBuf),
    /// A component is missing: bind /dev/null at the first missing one.
    Placeholder(PathBuf),
}

/// Where to block writes for `protected` inside `root`: the path itself if
/// it exists, a non-directory ancestor (e.g. a `.git` file), or the first
/// missing component.
pub fn protection_for(root: &Path, protected: &Path) -> Option<Protection> {
    let rel = protected.strip_prefix(root).ok()?;
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        match std::fs::symlink_metadata(&cur) {
            Err(_) => return Some(Protection::Placeholder(cur)),
            Ok(m) if cur != protected && !m.is_dir() => {
                // e.g. `.git` is a file (worktree) or a symlink: keep it as is.
                return Some(Protection::ReadOnly(cur));
            }
            Ok(_) => {}
        }
    }
    Some(Protection::ReadOnly(cur))
}

/// The namespace and mount arguments for `policy`, with `launcher` bound at
/// [`LAUNCHER_PATH`].
pub fn plan(policy: &SandboxPolicy, launcher: &Path) -> BwrapPlan {
    let mut p = BwrapPlan::default();
    for a in [
        "--new-session",
        "--die-with-parent",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ] {
        p.push(a);
    }
    if policy.network == NetworkPolicy::Off {
        p.push("--unshare-net");
    }
    // The base view.
    match &policy.read {
        ReadScope::FullDisk => p.op("--ro-bind", Path::new("/"), Path::new("/")),
        ReadScope::Restricted { paths } => {
            let mut paths: Vec<&PathBuf> = paths
                .iter()
                .filter(|x| exists(x) && !under_private(x))
                .collect();
            paths.sort_by_key(|x| depth(x));
            for path in paths {
                p.op("--ro-bind", path, path);
            }
        }
    }
    p.push("--dev");
    p.push("/dev");
    p.push("--proc");
    p.push("/proc");
    for d in PRIVATE_DIRS {
        let d = Path::new(d);
        if matches!(policy.read, ReadScope::Restricted { .. }) || exists(d) {
            p.push("--tmpfs");
            p.push(d.as_os_str());
        }
    }
    // Restricted read scopes inside the private dirs go on top of them.
    if let ReadScope::Restricted { paths } = &policy.read {
        let mut paths: Vec<&PathBuf> = paths
            .iter()
            .filter(|x| exists(x) && under_private(x))
            .collect();
        paths.sort_by_key(|x| depth(x));
        for path in paths {
            p.op("--ro-bind", path, path);
        }
    }
    // Name resolution when the network is on: resolv.conf often points into /run.
    if policy.network == NetworkPolicy::On {
        if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf") {
            if under_private(&target) {
                p.op("--ro-bind", &target, &target);
            }
        }
    }
    // Write roots, shallowest first.
    let mut roots: Vec<&PathBuf> = policy.write_roots.iter().collect();
    roots.sort_by_key(|x| depth(x));
    // A read-only cwd inside a hidden dir (e.g. /tmp/x in read-only mode)
    // stays visible, read-only.
    if matches!(policy.read, ReadScope::FullDisk)
        && under_private(&policy.cwd)
        && !roots.iter().any(|r| policy.cwd.starts_with(r))
    {
        p.op("--ro-bind", &policy.cwd, &policy.cwd);
    }
    for root in &roots {
        p.op("--bind", root, root);
    }
    // Protected paths: pin `.git` directories (a mount point cannot be renamed
    // away), then bind read-only or block at the first missing component.
    let mut pins: Vec<PathBuf> = Vec::new();
    let mut prots: Vec<Protection> = Vec::new();
    for prot in &policy.protected {
        let Some(root) = roots
            .iter()
            .filter(|r| prot.starts_with(r))
            .max_by_key(|r| depth(r))
        else {
            continue;
        };
        if let Some(parent) = prot.parent() {
            if parent.file_name() == Some(".git".as_ref())
                && parent.starts_with(root)
                && std::fs::symlink_metadata(parent).is_ok_and(|m| m.is_dir())
                && !pins.contains(&parent.to_path_buf())
            {
                pins.push(parent.to_path_buf());
            }
        }
        if let Some(x) = protection_for(root, prot) {
            if !prots.contains(&x) {
                prots.push(x);
            }
        }
    }
    pins.sort_by_key(|x| depth(x));
    for pin in &pins {
        p.op("--bind", pin, pin);
    }
    let key = |x: &Protection| match x {
        Protection::ReadOnly(a) | Protection::Placeholder(a) => depth(a),
    };
    prots.sort_by_key(key);
    for prot in prots {
        match prot {
            Protection::ReadOnly(path) => p.op("--ro-bind", &path, &path),
            Protection::Placeholder(path) => {
                p.op("--ro-bind", Path::new("/dev/null"), &path);
                p.placeholders.push(path);
            }
        }
    }
    // Deny-read: directories become empty read-only tmpfs, files /dev/null.
    let mut denies: Vec<&PathBuf> = policy.deny_read.iter().collect();
    denies.sort_by_key(|x| depth(x));
    for d in denies {
        let Ok(meta) = std::fs::metadata(d) else {
            continue;
        };
        if under_private(d) && !roots.iter().any(|r| d.starts_with(r)) {
            continue;
        }
        if let ReadScope::Restricted { paths } = &policy.read {
            let visible = paths
                .iter()
                .chain(policy.write_roots.iter())
                .any(|v| d.starts_with(v));
            if !visible {
                continue;
            }
        }
        if meta.is_dir() {
            p.push("--tmpfs");
            p.push(d.as_os_str());
            p.push("--remount-ro");
            p.push(d.as_os_str());
        } else {
            p.op("--ro-bind", Path::new("/dev/null"), d);
        }
    }
    p.op("--ro-bind", launcher, Path::new(LAUNCHER_PATH));
    if matches!(policy.read, ReadScope::Restricted { .. }) {
        p.push("--remount-ro");
        p.push("/");
    }
    p.push("--chdir");
    p.push(policy.cwd.as_os_str());
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_policy::sandbox::{compile, SandboxMode, SandboxOptions};

    fn args(p: &BwrapPlan) -> Vec<String> {
        p.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn has(a: &[String], seq: &[&str]) -> bool {
        a.windows(seq.len())
            .any(|w| w.iter().zip(seq).all(|(x, y)| x == y))
    }

    #[test]
    fn workspace_write_binds_roots_protects_and_hides() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let opts = SandboxOptions {
            cwd: root.clone(),
            home: Some(home.clone()),
            ..Default::default()
        };
        let pol = compile(SandboxMode::WorkspaceWrite, &opts).unwrap();
        let plan = plan(&pol, Path::new("/usr/bin/zot"));
        let a = args(&plan);
        let r = root.to_string_lossy().into_owned();
        assert!(has(&a, &["--unshare-net"]));
        assert!(has(&a, &["--ro-bind", "/", "/"]));
        assert!(has(&a, &["--tmpfs", "/tmp"]));
        assert!(has(&a, &["--bind", &r, &r]));
        let git = format!("{r}/.git");
        assert!(has(&a, &["--bind", &git, &git]), "{a:?}");
        let hooks = format!("{r}/.git/hooks");
        assert!(has(&a, &["--ro-bind", &hooks, &hooks]));
        // missing .git/config, .zot, .agents get /dev/null placeholders
        for missing in [".git/config", ".zot", ".agents"] {
            let m = format!("{r}/{missing}");
            assert!(has(&a, &["--ro-bind", "/dev/null", &m]), "{missing}: {a:?}");
        }
        assert_eq!(plan.placeholders.len(), 3);
        let ssh = home.join(".ssh").to_string_lossy().into_owned();
        assert!(has(&a, &["--tmpfs", &ssh, "--remount-ro", &ssh]));
        // the write root bind comes after the private /tmp (the root may be under /tmp)
        let tmp = a.iter().position(|x| x == "/tmp").unwrap();
        let bind = a.iter().position(|x| x == &r).unwrap();
        assert!(tmp < bind);
        assert!(has(&a, &["--chdir", &r]));
    }

    #[test]
    fn restricted_view_binds_only_scopes() {
        let t = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(t.path()).unwrap();
        let opts = zot_policy::sandbox::AgentSandboxOptions {
            cwd: ws.clone(),
            read_scopes: vec![],
            write_scopes: vec![ws.clone()],
            ..Default::default()
        };
        let pol = zot_policy::sandbox::agent_policy(&opts).unwrap();
        let a = args(&plan(&pol, Path::new("/zot")));
        assert!(!has(&a, &["--ro-bind", "/", "/"]));
        assert!(has(&a, &["--ro-bind", "/usr", "/usr"]));
        assert!(has(&a, &["--ro-bind", "/etc", "/etc"]));
        assert!(has(&a, &["--ro-bind", "/dev/null", "/etc/shadow"]));
        let w = ws.to_string_lossy().into_owned();
        assert!(has(&a, &["--bind", &w, &w]));
        assert!(has(&a, &["--remount-ro", "/"]));
        // the workspace (under /tmp here) is bound after the private /tmp
        let tmp = a.iter().position(|x| x == "/tmp").unwrap();
        let bind = a.iter().position(|x| x == &w).unwrap();
        assert!(tmp < bind);
    }

    #[test]
    fn network_on_keeps_net_namespace() {
        let opts = SandboxOptions {
            cwd: "/".into(),
            network: true,
            ..Default::default()
        };
        let pol = compile(SandboxMode::WorkspaceWrite, &opts).unwrap();
        assert!(!args(&plan(&pol, Path::new("/zot"))).contains(&"--unshare-net".to_string()));
    }

    #[test]
    fn first_missing_component_is_blocked() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        assert_eq!(
            protection_for(root, &root.join(".git/hooks")),
            Some(Protection::Placeholder(root.join(".git")))
        );
        std::fs::write(root.join(".git"), "gitdir: elsewhere").unwrap();
        assert_eq!(
            protection_for(root, &root.join(".git/hooks")),
            Some(Protection::ReadOnly(root.join(".git")))
        );
    }
}
