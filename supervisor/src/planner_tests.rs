//! Planner tests against a fake filesystem, and plan snapshots per mode and
//! view (`supervisor/src/snapshots/*.json`; `ZOT_UPDATE_SNAPSHOTS=1`
//! rewrites them, review the diff).

use std::collections::BTreeMap;

use zot_policy::sandbox::{agent_policy, compile, AgentSandboxOptions, SandboxOptions};

use super::*;

#[derive(Debug, Clone)]
enum Entry {
    Dir,
    File,
    Link(PathBuf),
}

/// A filesystem made of a list of entries (parents are implied dirs).
#[derive(Default)]
struct FakeFs(BTreeMap<PathBuf, Entry>);

impl FakeFs {
    fn new(entries: &[(&str, &str)]) -> FakeFs {
        let mut fs = FakeFs::default();
        fs.0.insert("/".into(), Entry::Dir);
        for (path, what) in entries {
            let e = match *what {
                "dir" => Entry::Dir,
                "file" => Entry::File,
                t => Entry::Link(
                    t.strip_prefix("-> ")
                        .expect("dir, file or -> target")
                        .into(),
                ),
            };
            let p = PathBuf::from(path);
            for a in p.ancestors().skip(1) {
                fs.0.entry(a.to_path_buf()).or_insert(Entry::Dir);
            }
            fs.0.insert(p, e);
        }
        fs
    }

    /// Resolve every component, following links (relative to their dir).
    fn resolve(&self, p: &Path, depth: usize) -> Option<PathBuf> {
        if depth > 20 {
            return None;
        }
        let mut cur = PathBuf::from("/");
        for comp in p.components() {
            match comp {
                Component::RootDir => {}
                Component::ParentDir => {
                    cur.pop();
                }
                Component::CurDir => {}
                Component::Normal(n) => {
                    cur.push(n);
                    if let Entry::Link(t) = self.0.get(&cur)? {
                        let base = cur.parent().unwrap().to_path_buf();
                        cur = self.resolve(&base.join(t), depth + 1)?;
                    }
                }
                Component::Prefix(_) => return None,
            }
        }
        Some(cur)
    }
}

impl HostFs for FakeFs {
    fn lstat(&self, p: &Path) -> Option<FileKind> {
        let Some(parent) = p.parent() else {
            return Some(FileKind::Dir); // the root
        };
        let parent = self.resolve(parent, 0)?;
        let full = parent.join(p.file_name()?);
        self.0.get(&full).map(|e| match e {
            Entry::Dir => FileKind::Dir,
            Entry::File => FileKind::File,
            Entry::Link(_) => FileKind::Symlink,
        })
    }
    fn stat(&self, p: &Path) -> Option<FileKind> {
        let c = self.resolve(p, 0)?;
        self.0.get(&c).map(|e| match e {
            Entry::Dir => FileKind::Dir,
            Entry::File => FileKind::File,
            Entry::Link(_) => FileKind::Other,
        })
    }
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        self.resolve(p, 0)
    }
    fn read_dir(&self, p: &Path) -> Vec<PathBuf> {
        self.0
            .keys()
            .filter(|k| k.parent() == Some(p) && k.as_path() != p)
            .cloned()
            .collect()
    }
    fn user_notify(&self) -> Result<(), String> {
        Ok(())
    }
}

fn host() -> FakeFs {
    FakeFs::new(&[
        ("/usr/bin", "dir"),
        ("/usr/sbin", "dir"),
        ("/usr/lib", "dir"),
        ("/usr/lib64", "dir"),
        ("/bin", "-> usr/bin"),
        ("/sbin", "-> usr/sbin"),
        ("/lib", "-> usr/lib"),
        ("/lib64", "-> usr/lib64"),
        ("/etc/passwd", "file"),
        ("/etc/shadow", "file"),
        ("/etc/ssh", "dir"),
        ("/etc/hosts", "file"),
        ("/etc/nsswitch.conf", "file"),
        (
            "/etc/resolv.conf",
            "-> ../run/systemd/resolve/stub-resolv.conf",
        ),
        ("/run/systemd/resolve/stub-resolv.conf", "file"),
        ("/tmp", "dir"),
        ("/var/tmp", "dir"),
        ("/dev/null", "file"),
        ("/proc", "dir"),
        ("/home/u/.ssh/id_ed25519", "file"),
        ("/home/u/.docker/config.json", "file"),
        ("/home/u/proj/.git/hooks", "dir"),
        ("/home/u/proj/.git/config", "file"),
        ("/home/u/proj/src/main.rs", "file"),
        ("/home/u/proj/vendor/lib/.git", "file"),
        ("/data/ref/doc.md", "file"),
    ])
}

fn env() -> Vec<(OsString, OsString)> {
    [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/u"),
        ("LANG", "C.UTF-8"),
        ("TERM", "xterm"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("MY_TOKEN", "t"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect()
}

fn opts() -> SandboxOptions {
    SandboxOptions {
        cwd: "/home/u/proj".into(),
        home: Some("/home/u".into()),
        nested_repos: vec!["/home/u/proj/vendor/lib".into()],
        ..Default::default()
    }
}

fn agent() -> SandboxPolicy {
    agent_policy(&AgentSandboxOptions {
        cwd: "/home/u/proj".into(),
        read_scopes: vec!["/data/ref".into()],
        write_scopes: vec!["/home/u/proj".into()],
        env_read: vec!["MY_TOKEN".into()],
        network: false,
        ..Default::default()
    })
    .unwrap()
}

fn plan_of(policy: &SandboxPolicy, isolation: Isolation) -> LaunchPlan {
    plan(policy, isolation, &env(), &host()).unwrap()
}

/// Compare `plan` with its snapshot file.
fn snapshot(name: &str, plan: &LaunchPlan) {
    let got = serde_json::to_string_pretty(plan).unwrap() + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/snapshots")
        .join(format!("{name}.json"));
    if std::env::var_os("ZOT_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with ZOT_UPDATE_SNAPSHOTS=1)", path.display()));
    if got != want {
        panic!(
            "plan {name} differs from {} (ZOT_UPDATE_SNAPSHOTS=1 rewrites it):\n{got}",
            path.display()
        );
    }
    // What the launcher receives is what was planned.
    let back: LaunchPlan = serde_json::from_str(&want).unwrap();
    assert_eq!(&back, plan);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn snapshots_per_mode_and_view() {
    let ws = compile(SandboxMode::WorkspaceWrite, &opts()).unwrap();
    snapshot("workspace-write", &plan_of(&ws, Isolation::Namespaces));
    snapshot(
        "workspace-write.landlock",
        &plan_of(&ws, Isolation::LandlockOnly),
    );
    let mut net = opts();
    net.network = true;
    net.env_allow = vec!["MY_TOKEN".into()];
    let net = compile(SandboxMode::WorkspaceWrite, &net).unwrap();
    snapshot("workspace-write.net", &plan_of(&net, Isolation::Namespaces));
    let ro = compile(SandboxMode::ReadOnly, &opts()).unwrap();
    snapshot("read-only", &plan_of(&ro, Isolation::Namespaces));
    snapshot("read-only.landlock", &plan_of(&ro, Isolation::LandlockOnly));
    snapshot("agent", &plan_of(&agent(), Isolation::Namespaces));
    let danger = compile(SandboxMode::DangerFullAccess, &opts()).unwrap();
    snapshot("danger-full-access", &plan_of(&danger, Isolation::None));
}

fn position(plan: &LaunchPlan, pred: impl Fn(&MountOp) -> bool) -> usize {
    plan.mounts
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("{:#?}", plan.mounts))
}

#[test]
fn workspace_view_order() {
    let p = plan_of(
        &compile(SandboxMode::WorkspaceWrite, &opts()).unwrap(),
        Isolation::Namespaces,
    );
    let ws = Path::new("/home/u/proj");
    assert_eq!(p.mounts[0], ro_bind("/".into(), "/".into()));
    let tmp = position(
        &p,
        |o| matches!(o, MountOp::Tmpfs { dst, .. } if dst == Path::new("/tmp")),
    );
    let root = position(
        &p,
        |o| matches!(o, MountOp::Bind { dst, writable: true, .. } if dst == ws),
    );
    let pin = position(
        &p,
        |o| matches!(o, MountOp::Bind { dst, writable: true, .. } if *dst == ws.join(".git")),
    );
    let cfg = position(
        &p,
        |o| matches!(o, MountOp::Bind { dst, writable: false, .. } if *dst == ws.join(".git/config")),
    );
    let zot = position(
        &p,
        |o| matches!(o, MountOp::BlockCreate { dst, .. } if *dst == ws.join(".zot")),
    );
    let ssh = position(
        &p,
        |o| matches!(o, MountOp::MaskDir { dst } if dst == Path::new("/home/u/.ssh")),
    );
    let docker = position(
        &p,
        |o| matches!(o, MountOp::MaskFile { dst } if dst == Path::new("/home/u/.docker/config.json")),
    );
    // Shallowest first: pins, then protections (.zot before .git/config),
    // then masks.
    assert!(tmp < root && root < pin && pin < zot && zot < cfg && cfg < ssh && ssh < docker);
    // The nested repo's `.git` is a file (worktree): bound read-only as is.
    position(
        &p,
        |o| matches!(o, MountOp::Bind { dst, writable: false, .. } if *dst == ws.join("vendor/lib/.git")),
    );
    // Missing deny-read entries (~/.aws ...) are not mounted at all.
    assert!(!p.mounts.iter().any(|o| o.dst().starts_with("/home/u/.aws")));
    assert_eq!(p.placeholders(), vec![ws.join(".agents"), ws.join(".zot")]);
}

#[test]
fn missing_git_is_blocked_at_its_first_component() {
    let fs = FakeFs::new(&[("/w", "dir")]);
    let pol = compile(
        SandboxMode::WorkspaceWrite,
        &SandboxOptions {
            cwd: "/w".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let p = plan(&pol, Isolation::Namespaces, &[], &fs).unwrap();
    assert_eq!(
        p.placeholders(),
        vec![
            PathBuf::from("/w/.agents"),
            "/w/.zot".into(),
            "/w/.git".into()
        ]
    );
}

#[test]
fn no_git_placeholder_inside_a_work_tree() {
    // The workspace is a subdirectory of a repository: a `.git` placeholder
    // there would break every git command; the others stay.
    let fs = FakeFs::new(&[("/r", "dir"), ("/r/.git", "dir"), ("/r/w", "dir")]);
    let pol = compile(
        SandboxMode::WorkspaceWrite,
        &SandboxOptions {
            cwd: "/r/w".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let p = plan(&pol, Isolation::Namespaces, &[], &fs).unwrap();
    assert_eq!(
        p.placeholders(),
        vec![PathBuf::from("/r/w/.agents"), "/r/w/.zot".into()]
    );
}

#[test]
fn malformed_locale_values_are_not_passed() {
    let pol = compile(SandboxMode::ReadOnly, &opts()).unwrap();
    let env: Vec<(OsString, OsString)> = [
        ("LANG", "en_US.UTF-8"),
        ("LC_ALL", "/tmp/evil"),
        ("LC_FOO", "C"),
        ("LANGUAGE", "de:en_GB"),
        ("LC_TIME", "C\nX"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    let p = plan(&pol, Isolation::Namespaces, &env, &host()).unwrap();
    assert_eq!(p.env.pass, vec!["LANG".to_string(), "LANGUAGE".into()]);
}

#[test]
fn missing_write_root_is_an_error() {
    let fs = FakeFs::new(&[("/w", "dir")]);
    let mut pol = compile(
        SandboxMode::WorkspaceWrite,
        &SandboxOptions {
            cwd: "/w".into(),
            ..Default::default()
        },
    )
    .unwrap();
    pol.write_roots.push("/nope".into());
    let err = plan(&pol, Isolation::Namespaces, &[], &fs).unwrap_err();
    assert!(err.to_string().contains("/nope"), "{err}");
}

#[test]
fn network_on_binds_name_resolution_back_and_keeps_the_net_namespace_out() {
    let mut o = opts();
    o.network = true;
    let p = plan_of(
        &compile(SandboxMode::WorkspaceWrite, &o).unwrap(),
        Isolation::Namespaces,
    );
    assert!(!p.has(Namespace::Net));
    let stub = PathBuf::from("/run/systemd/resolve/stub-resolv.conf");
    assert!(p.mounts.contains(&ro_bind(stub.clone(), stub)));
    // hosts and nsswitch.conf are not under /run: nothing to bind back.
    assert!(!p.mounts.iter().any(|o| o.dst() == Path::new("/etc/hosts")));
    assert!(!p
        .seccomp
        .rules
        .iter()
        .any(|r| r.syscalls.contains(&"socket".to_string())));
}

/// The native backend makes a plan's namespaces before the plan exists
/// (PID 1 starts while the supervisor plans): what it makes from the policy
/// alone is what the plan of every mode and network then has. PID 1 refuses
/// a plan with other namespaces; this keeps them from ever differing.
#[test]
fn the_namespaces_made_ahead_are_the_plans() {
    for mode in [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess,
    ] {
        for network in [false, true] {
            let mut o = opts();
            o.network = network && mode != SandboxMode::ReadOnly;
            let mut policies = vec![compile(mode, &o).unwrap()];
            if mode == SandboxMode::WorkspaceWrite {
                let mut proxied = compile(mode, &o).unwrap();
                proxied.network = zot_policy::sandbox::NetworkPolicy::Proxied {
                    allow: zot_policy::net::AllowList::parse(&["example.com"]).unwrap(),
                    socket_dir: Some("/run/user/1000/zot-proxy".into()),
                };
                policies.push(proxied);
            }
            for policy in policies {
                for isolation in [Isolation::Namespaces, Isolation::LandlockOnly] {
                    let Ok(p) = plan(&policy, isolation, &env(), &host()) else {
                        continue;
                    };
                    assert_eq!(
                        p.namespaces,
                        namespaces(&policy, isolation),
                        "{mode:?}, network {:?}, {isolation:?}",
                        policy.network
                    );
                }
            }
        }
    }
    // And the network namespace is there unless the host's network is the plan's.
    let mut policy = compile(SandboxMode::WorkspaceWrite, &opts()).unwrap();
    assert!(namespaces(&policy, Isolation::Namespaces).contains(&Namespace::Net));
    policy.network = zot_policy::sandbox::NetworkPolicy::On;
    let on = namespaces(&policy, Isolation::Namespaces);
    assert!(!on.contains(&Namespace::Net) && on.contains(&Namespace::User));
}

#[test]
fn the_mounts_made_ahead_begin_the_plans() {
    // The base is made from the caller's policy before the host scans; the
    // plan from the policy they extend (credentials, zot's own state,
    // protected paths). Every view begins with the base, and the base is
    // more than the root alone (else nothing is made ahead).
    let mut deny = opts();
    deny.deny_read = vec!["/home/u/.docker".into()];
    let env_with_paths: Vec<(OsString, OsString)> = env()
        .into_iter()
        .chain([(
            OsString::from("GOOGLE_APPLICATION_CREDENTIALS"),
            OsString::from("/home/u/.config/gcloud/key.json"),
        )])
        .collect();
    let mut policies = vec![agent()];
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        for o in [opts(), deny.clone()] {
            for network in [false, true] {
                let mut o = o.clone();
                o.network = network && mode != SandboxMode::ReadOnly;
                policies.push(compile(mode, &o).unwrap());
            }
        }
    }
    let fs = host();
    for policy in policies {
        let base = base_view(&policy, &fs);
        assert!(base.len() >= 4, "{base:#?}");
        assert!(matches!(base.last(), Some(MountOp::Proc { .. })), "{base:#?}");
        let mut extended = crate::creds::with_credentials(&policy, &env_with_paths);
        extended.protected.push("/home/u/proj/.envrc".into());
        let p = plan(&extended, Isolation::Namespaces, &env_with_paths, &fs).unwrap();
        assert!(
            p.mounts.starts_with(&base),
            "{:?} {:?}: {:#?} does not begin with {base:#?}",
            policy.mode,
            policy.read,
            p.mounts
        );
        assert!(p.mounts.len() > base.len());
    }
}

#[test]
fn restricted_view_binds_resolved_sources_at_the_given_paths() {
    let p = plan_of(&agent(), Isolation::Namespaces);
    assert_eq!(
        p.mounts[0],
        MountOp::Tmpfs {
            dst: "/".into(),
            mode: Mode(0o755),
            size: Some(512 << 20),
            inodes: Some(65536),
            writable: true
        }
    );
    assert!(p
        .mounts
        .contains(&ro_bind("/usr/bin".into(), "/bin".into())));
    assert!(p
        .mounts
        .contains(&ro_bind("/data/ref".into(), "/data/ref".into())));
    // Nothing of $HOME but the workspace.
    assert!(!p
        .mounts
        .iter()
        .any(|o| o.dst().starts_with("/home") && !o.dst().starts_with("/home/u/proj")));
    // /etc/shadow is masked; /etc/gshadow (absent here) is not mounted.
    assert!(p.mounts.contains(&MountOp::MaskFile {
        dst: "/etc/shadow".into()
    }));
    assert!(!p
        .mounts
        .iter()
        .any(|o| o.dst() == Path::new("/etc/gshadow")));
    assert_eq!(
        p.mounts.last(),
        Some(&MountOp::RemountRo { dst: "/".into() })
    );
    // Listing directories is allowed in a view made of mounts only.
    assert!(p.landlock.rules.contains(&LandlockRule {
        path: "/".into(),
        access: LandlockAccess::ListDir,
        must_exist: false
    }));
    assert_eq!(p.env.pass, vec!["LANG", "MY_TOKEN", "PATH", "TERM"]);
}

#[test]
fn a_deny_path_is_masked_everywhere_the_view_shows_it() {
    let fs = FakeFs::new(&[
        ("/usr/lib/secret", "file"),
        ("/lib", "-> usr/lib"),
        ("/w", "dir"),
    ]);
    let mut pol = agent_policy(&AgentSandboxOptions {
        cwd: "/w".into(),
        write_scopes: vec!["/w".into()],
        ..Default::default()
    })
    .unwrap();
    pol.deny_read.push("/usr/lib/secret".into());
    let p = plan(&pol, Isolation::Namespaces, &[], &fs).unwrap();
    for at in ["/usr/lib/secret", "/lib/secret"] {
        assert!(
            p.mounts.contains(&MountOp::MaskFile { dst: at.into() }),
            "{at}: {:#?}",
            p.mounts
        );
    }
}

#[test]
fn a_deny_path_inside_a_denied_directory_is_not_masked_again() {
    // zot's state inside the workspace: denied whole, and its sessions
    // denied by the agent's own rules too.
    let fs = FakeFs::new(&[("/w/state/sessions/s.jsonl", "file")]);
    let mut pol = agent_policy(&AgentSandboxOptions {
        cwd: "/w".into(),
        write_scopes: vec!["/w".into()],
        ..Default::default()
    })
    .unwrap();
    pol.deny_read.push("/w/state/sessions".into());
    pol.deny_read.push("/w/state".into());
    let p = plan(&pol, Isolation::Namespaces, &[], &fs).unwrap();
    assert!(p.mounts.contains(&MountOp::MaskDir {
        dst: "/w/state".into()
    }));
    assert!(
        !p.mounts
            .iter()
            .any(|m| m.dst() == Path::new("/w/state/sessions")),
        "{:#?}",
        p.mounts
    );
}

#[test]
fn landlock_only_plan_has_no_mounts_and_says_what_it_misses() {
    let ws = compile(SandboxMode::WorkspaceWrite, &opts()).unwrap();
    let p = plan_of(&ws, Isolation::LandlockOnly);
    assert!(p.mounts.is_empty() && p.namespaces.is_empty());
    assert_eq!(
        p.unenforced,
        vec![
            Gap::ProtectedPathsWritable,
            Gap::DenyReadCarved,
            Gap::NoPidNamespace,
            Gap::TmpSharedWithHost,
            Gap::NoProcessLimit,
            Gap::NoTmpfsLimit,
        ]
    );
    // The host's temp dirs are writable (shared, reported).
    for t in ["/tmp", "/var/tmp", "/dev/shm"] {
        assert!(p
            .landlock
            .rules
            .iter()
            .any(|r| r.path == Path::new(t) && r.access == LandlockAccess::ReadWrite));
    }
    // Only chosen host device nodes; SysV IPC refused (no IPC namespace).
    assert!(p
        .landlock
        .rules
        .iter()
        .any(|r| r.path == Path::new("/dev") && r.access == LandlockAccess::ListDir));
    assert!(!p
        .landlock
        .rules
        .iter()
        .any(|r| r.path.starts_with("/dev/pts")
            || (r.path == Path::new("/") && r.access == LandlockAccess::Read)));
    assert!(p
        .seccomp
        .rules
        .iter()
        .any(|r| r.syscalls.contains(&"shmat".to_string()) && r.action == SeccompAction::Eperm));
    assert!(!p
        .rlimits
        .iter()
        .any(|l| l.resource == RlimitResource::Nproc));
    assert_eq!(p.landlock.compat, LandlockCompat::Required);
    // Carved read rules: no rule covers the denied paths or their ancestors.
    for r in &p.landlock.rules {
        assert!(
            !Path::new("/home/u/.ssh").starts_with(&r.path) || r.access != LandlockAccess::Read,
            "{r:?}"
        );
    }
    assert!(p.landlock.rules.iter().any(|r| r.path == Path::new("/usr")));
    assert!(p
        .seccomp
        .rules
        .iter()
        .any(|r| r.syscalls.contains(&"connect".to_string()) && r.action == SeccompAction::Notify));
    let ro = compile(SandboxMode::ReadOnly, &opts()).unwrap();
    assert_eq!(
        plan_of(&ro, Isolation::LandlockOnly).level(zot_launcher::plan::Area::Filesystem),
        zot_launcher::Level::Full
    );
}

#[test]
fn env_passes_only_what_the_policy_keeps() {
    let mut o = opts();
    o.env_allow = vec!["MY_TOKEN".into()];
    let p = plan_of(
        &compile(SandboxMode::WorkspaceWrite, &o).unwrap(),
        Isolation::Namespaces,
    );
    assert_eq!(p.env.pass, vec!["HOME", "LANG", "MY_TOKEN", "PATH", "TERM"]);
    assert_eq!(
        p.env.set,
        vec![EnvVar {
            name: "TMPDIR".into(),
            value: "/tmp".into()
        }]
    );
    let danger = plan_of(
        &compile(SandboxMode::DangerFullAccess, &opts()).unwrap(),
        Isolation::None,
    );
    assert!(danger
        .env
        .pass
        .contains(&"AWS_SECRET_ACCESS_KEY".to_string()));
}

#[test]
fn the_plan_seccomp_rules_compile_here() {
    let p = plan_of(
        &compile(SandboxMode::WorkspaceWrite, &opts()).unwrap(),
        Isolation::LandlockOnly,
    );
    assert!(!zot_launcher::seccomp::compile(&p.seccomp)
        .unwrap()
        .is_empty());
}

/// The fake host with sockets bound by host processes.
struct Socks(FakeFs, Vec<PathBuf>);

impl HostFs for Socks {
    fn lstat(&self, p: &Path) -> Option<FileKind> {
        if self.1.iter().any(|s| s == p) {
            return Some(FileKind::Socket);
        }
        self.0.lstat(p)
    }
    fn stat(&self, p: &Path) -> Option<FileKind> {
        self.0.stat(p)
    }
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        self.0.canonicalize(p)
    }
    fn read_dir(&self, p: &Path) -> Vec<PathBuf> {
        self.0.read_dir(p)
    }
    fn unix_sockets(&self) -> Vec<PathBuf> {
        let mut v = self.1.clone();
        v.push("relative.sock".into());
        v.push("/home/u/gone.sock".into());
        v
    }
    fn hard_limit(&self, r: RlimitResource) -> Option<u64> {
        (r == RlimitResource::Nproc).then_some(100)
    }
    fn pid_max_per_namespace(&self) -> bool {
        true
    }
}

#[test]
fn host_sockets_visible_in_the_view_are_masked() {
    let socks: Vec<PathBuf> = [
        "/home/u/.docker/run/docker.sock",
        "/home/u/proj/sub/app.sock",
        "/tmp/hidden.sock",
        "/home/u/.ssh/agent.sock",
        "/data/ref/x.sock",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut fs = host();
    for s in &socks {
        for a in s.ancestors().skip(1) {
            fs.0.entry(a.to_path_buf()).or_insert(Entry::Dir);
        }
        fs.0.insert(s.clone(), Entry::File);
    }
    let fs = Socks(fs, socks);
    let masked = |p: &LaunchPlan| -> Vec<PathBuf> {
        p.mounts
            .iter()
            .filter_map(|m| match m {
                MountOp::MaskSocket { dst } => Some(dst.clone()),
                _ => None,
            })
            .collect()
    };
    let ws = compile(SandboxMode::WorkspaceWrite, &opts()).unwrap();
    let p = plan(&ws, Isolation::Namespaces, &[], &fs).unwrap();
    // The private /tmp hides one, the deny-read ~/.ssh another; a relative
    // or vanished path is skipped.
    assert_eq!(
        masked(&p),
        vec![
            PathBuf::from("/data/ref/x.sock"),
            "/home/u/.docker/run/docker.sock".into(),
            "/home/u/proj/sub/app.sock".into(),
        ]
    );
    // After the write root's bind (or it would cover the mask).
    let pos = |d: &str| {
        p.mounts
            .iter()
            .position(|m| m.dst() == Path::new(d))
            .unwrap()
    };
    assert!(pos("/home/u/proj/sub/app.sock") > pos("/home/u/proj"));
    // The agent view shows only its scopes.
    let p = plan(&agent(), Isolation::Namespaces, &[], &fs).unwrap();
    assert_eq!(
        masked(&p),
        vec![
            PathBuf::from("/data/ref/x.sock"),
            "/home/u/proj/sub/app.sock".into()
        ]
    );
    // Limits: sizes on every tmpfs, rlimits capped at the hard limit, pid_max.
    assert!(p.mounts.iter().all(|m| match m {
        MountOp::Tmpfs { size, .. } => *size == Some(512 << 20),
        _ => true,
    }));
    let nproc = p
        .rlimits
        .iter()
        .find(|l| l.resource == RlimitResource::Nproc)
        .unwrap();
    assert_eq!((nproc.soft, nproc.hard), (Some(100), Some(100)));
    assert!(p
        .rlimits
        .iter()
        .any(|l| l.resource == RlimitResource::Core && l.hard == Some(0)));
    assert_eq!(p.pid_max, Some(1024 - 1 + 300));
    let mut small = agent();
    small.limits.tmp_size = 8 << 20;
    small.limits.max_procs = 50;
    let p = plan(&small, Isolation::Namespaces, &[], &fs).unwrap();
    assert!(p.mounts.iter().any(|m| matches!(m, MountOp::Tmpfs { dst, size: Some(s), .. } if dst == Path::new("/tmp") && *s == 8 << 20)));
    assert_eq!(p.pid_max, Some(349));
}

#[test]
fn proc_net_unix_paths() {
    let t = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
0000000000000000: 00000002 00000000 00010000 0001 01 1234 /run/a.sock\n\
0000000000000000: 00000002 00000000 00010000 0001 01 1235 @abstract\n\
0000000000000000: 00000002 00000000 00000000 0002 01 1236\n\
0000000000000000: 00000003 00000000 00000000 0001 03 1237 /home/u/with space.sock\n\
0000000000000000: 00000003 00000000 00000000 0001 03 1238 /run/a.sock\n";
    assert_eq!(
        parse_proc_net_unix(t),
        vec![
            PathBuf::from("/home/u/with space.sock"),
            "/run/a.sock".into()
        ]
    );
}

/// The sockets of [`Socks`], on a host where the supervisor checks every
/// connect: nothing to mask.
struct SocksChecked(Socks);

impl HostFs for SocksChecked {
    fn lstat(&self, p: &Path) -> Option<FileKind> {
        self.0.lstat(p)
    }
    fn stat(&self, p: &Path) -> Option<FileKind> {
        self.0.stat(p)
    }
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        self.0.canonicalize(p)
    }
    fn read_dir(&self, p: &Path) -> Vec<PathBuf> {
        self.0.read_dir(p)
    }
    fn unix_sockets(&self) -> Vec<PathBuf> {
        self.0.unix_sockets()
    }
    fn user_notify(&self) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn checked_connects_replace_socket_masks() {
    let sock = PathBuf::from("/home/u/proj/sub/app.sock");
    let mut fs = host();
    for a in sock.ancestors().skip(1) {
        fs.0.entry(a.to_path_buf()).or_insert(Entry::Dir);
    }
    fs.0.insert(sock.clone(), Entry::File);
    let fs = Socks(fs, vec![sock.clone()]);
    let ws = compile(SandboxMode::WorkspaceWrite, &opts()).unwrap();
    let unchecked = plan(&ws, Isolation::Namespaces, &[], &fs).unwrap();
    assert!(unchecked
        .mounts
        .iter()
        .any(|m| matches!(m, MountOp::MaskSocket { dst } if *dst == sock)));
    assert!(unchecked.unenforced.contains(&Gap::HostSocketsAfterLaunch));
    assert!(!zot_launcher::seccomp::notifies(&unchecked.seccomp));
    let checked = plan(&ws, Isolation::Namespaces, &[], &SocksChecked(fs)).unwrap();
    assert!(!checked
        .mounts
        .iter()
        .any(|m| matches!(m, MountOp::MaskSocket { .. })));
    assert!(!checked.unenforced.contains(&Gap::HostSocketsAfterLaunch));
    assert!(zot_launcher::seccomp::notifies(&checked.seccomp));
}

#[test]
fn an_enclosing_repository_is_shown_read_only() {
    // An agent's scope in a repository subdirectory: the repository's git
    // directory is bound read-only, with a Landlock read rule; nothing else
    // of the work tree.
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join(".git/objects")).unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    let opts = zot_policy::sandbox::AgentSandboxOptions {
        cwd: repo.join("sub"),
        read_scopes: vec![repo.join("sub")],
        ..Default::default()
    };
    let policy = zot_policy::sandbox::agent_policy(&opts).unwrap();
    let p = plan(&policy, Isolation::Namespaces, &[], &RealFs).unwrap();
    let g = repo.join(".git");
    assert!(
        p.mounts.iter().any(
            |m| matches!(m, MountOp::Bind { src, dst, writable: false } if *src == g && *dst == g)
        ),
        "{:?}",
        p.mounts
    );
    assert!(!p.mounts.iter().any(|m| m.dst() == repo.as_path()));
    assert!(p.landlock.rules.iter().any(|r| r.path == g));
    assert!(p
        .env
        .set
        .iter()
        .any(|v| v.name == "GIT_DISCOVERY_ACROSS_FILESYSTEM"));
    // Outside any repository: nothing added.
    let opts = zot_policy::sandbox::AgentSandboxOptions {
        cwd: root.clone(),
        read_scopes: vec![root.clone()],
        ..Default::default()
    };
    let policy = zot_policy::sandbox::agent_policy(&opts).unwrap();
    assert!(repo_views(&policy, &[], &RealFs).is_empty());
}
