//! Rendering a [`LaunchPlan`] to bubblewrap arguments: one option (or a
//! fixed group) per plan item, nothing decided here. The launcher is not
//! mounted into the view: bwrap runs it through an inherited file
//! descriptor (`/proc/self/fd/N`).

use std::ffi::OsString;

use zot_launcher::plan::{LaunchPlan, MountOp, Namespace};

fn unshare_flag(ns: Namespace) -> Option<&'static str> {
    match ns {
        Namespace::User => Some("--unshare-user"),
        // bwrap always makes a mount namespace.
        Namespace::Mount => None,
        Namespace::Pid => Some("--unshare-pid"),
        Namespace::Ipc => Some("--unshare-ipc"),
        Namespace::Uts => Some("--unshare-uts"),
        Namespace::Cgroup => Some("--unshare-cgroup"),
        Namespace::Net => Some("--unshare-net"),
    }
}

/// The bwrap arguments (before `--`) that build `plan`'s namespaces, view and
/// working directory, less the view's last mounts, which the launcher makes
/// inside it (see [`zot_launcher::tail_mounts_start`]).
pub fn render(plan: &LaunchPlan) -> Vec<OsString> {
    render_upto(plan, zot_launcher::tail_mounts_start(plan))
}

/// The arguments that make bubblewrap alone build the whole view: what
/// [`render`] gives bwrap plus what the launcher mounts (`--explain`
/// shows both; the launch benchmark runs plain bwrap with these).
pub fn render_view(plan: &LaunchPlan) -> Vec<OsString> {
    render_upto(plan, plan.mounts.len())
}

fn render_upto(plan: &LaunchPlan, upto: usize) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["--new-session".into(), "--die-with-parent".into()];
    a.extend(
        plan.namespaces
            .iter()
            .filter_map(|ns| unshare_flag(*ns))
            .map(OsString::from),
    );
    if plan.pid_max.is_some()
        || !zot_launcher::tmpfs_inode_limits(plan).is_empty()
        || upto < plan.mounts.len()
    {
        // For the launcher to write the PID namespace's pid_max, give each
        // tmpfs its inode limit (bwrap has no option for it) and make the
        // view's last mounts, then drop every capability, the bounding set
        // too.
        a.extend(
            ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
                .into_iter()
                .map(OsString::from),
        );
    }
    let mut push = |items: &[&std::ffi::OsStr]| a.extend(items.iter().map(|s| s.to_os_string()));
    for op in &plan.mounts[..upto] {
        match op {
            MountOp::Bind { src, dst, writable } => push(&[
                if *writable { "--bind" } else { "--ro-bind" }.as_ref(),
                src.as_os_str(),
                dst.as_os_str(),
            ]),
            MountOp::Tmpfs {
                dst,
                mode,
                size,
                writable,
                ..
            } => {
                let mode = mode.to_string();
                push(&["--perms".as_ref(), mode.as_ref()]);
                if let Some(size) = size {
                    let size = size.to_string();
                    push(&["--size".as_ref(), size.as_ref()]);
                }
                push(&["--tmpfs".as_ref(), dst.as_os_str()]);
                if !writable {
                    push(&["--remount-ro".as_ref(), dst.as_os_str()]);
                }
            }
            MountOp::Dev { dst } => push(&["--dev".as_ref(), dst.as_os_str()]),
            MountOp::Proc { dst } => push(&["--proc".as_ref(), dst.as_os_str()]),
            MountOp::MaskFile { dst }
            | MountOp::MaskSocket { dst }
            | MountOp::BlockCreate { dst, .. } => {
                push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), dst.as_os_str()])
            }
            MountOp::MaskDir { dst } => push(&[
                "--perms".as_ref(),
                "0000".as_ref(),
                "--size".as_ref(),
                "4096".as_ref(),
                "--tmpfs".as_ref(),
                dst.as_os_str(),
                "--remount-ro".as_ref(),
                dst.as_os_str(),
            ]),
            MountOp::RemountRo { dst } => push(&["--remount-ro".as_ref(), dst.as_os_str()]),
        }
    }
    push(&["--chdir".as_ref(), plan.cwd.as_os_str()]);
    a
}

/// `plan` without the socket masks whose socket is gone since planning
/// (bwrap would try to create a file there and fail; the native backend
/// skips them alike). `None` when every one is still there.
pub fn without_vanished_sockets(plan: &LaunchPlan) -> Option<LaunchPlan> {
    let gone = |m: &MountOp| matches!(m, MountOp::MaskSocket { dst } if std::fs::symlink_metadata(dst).is_err());
    if !plan.mounts.iter().any(gone) {
        return None;
    }
    let mut p = plan.clone();
    p.mounts.retain(|m| !gone(m));
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use zot_launcher::plan::*;
    use zot_policy::sandbox::SandboxMode;

    fn has(a: &[OsString], seq: &[&str]) -> bool {
        a.windows(seq.len())
            .any(|w| w.iter().zip(seq).all(|(x, y)| x == y))
    }

    #[test]
    fn every_op_renders_in_order() {
        let mut plan = plan_with(vec![
            MountOp::Bind {
                src: "/".into(),
                dst: "/".into(),
                writable: false,
            },
            MountOp::Tmpfs {
                dst: "/tmp".into(),
                mode: Mode(0o1777),
                size: Some(1 << 20),
                inodes: None,
                writable: true,
            },
            MountOp::Dev { dst: "/dev".into() },
            MountOp::Proc {
                dst: "/proc".into(),
            },
            MountOp::Bind {
                src: "/w".into(),
                dst: "/w".into(),
                writable: true,
            },
            MountOp::BlockCreate {
                dst: "/w/.zot".into(),
                protected: "/w/.zot".into(),
            },
            MountOp::MaskDir {
                dst: "/home/.ssh".into(),
            },
            MountOp::RemountRo { dst: "/".into() },
        ]);
        plan.namespaces = vec![
            Namespace::User,
            Namespace::Mount,
            Namespace::Pid,
            Namespace::Net,
        ];
        let a = render_view(&plan);
        assert!(has(
            &a,
            &[
                "--unshare-user",
                "--unshare-pid",
                "--unshare-net",
                "--ro-bind",
                "/",
                "/"
            ]
        ));
        assert!(has(
            &a,
            &["--perms", "1777", "--size", "1048576", "--tmpfs", "/tmp"]
        ));
        assert!(has(
            &a,
            &["--dev", "/dev", "--proc", "/proc", "--bind", "/w", "/w"]
        ));
        assert!(has(&a, &["--ro-bind", "/dev/null", "/w/.zot"]));
        assert!(has(
            &a,
            &[
                "--perms",
                "0000",
                "--size",
                "4096",
                "--tmpfs",
                "/home/.ssh",
                "--remount-ro",
                "/home/.ssh"
            ]
        ));
        assert!(has(&a, &["--remount-ro", "/", "--chdir", "/w"]));
        assert_eq!(a.last(), Some(&OsString::from(PathBuf::from("/w"))));
    }

    fn plan_with(mounts: Vec<MountOp>) -> LaunchPlan {
        LaunchPlan {
            mode: SandboxMode::WorkspaceWrite,
            isolation: Isolation::Namespaces,
            namespaces: vec![Namespace::User, Namespace::Mount],
            cwd: "/w".into(),
            write_roots: vec!["/w".into()],
            protected: vec![],
            mounts,
            landlock: LandlockPlan {
                compat: LandlockCompat::Off,
                rules: vec![],
                scopes: vec![],
            },
            seccomp: SeccompPlan {
                enabled: false,
                foreign_arch: SeccompAction::KillProcess,
                x32: None,
                rules: vec![],
            },
            env: EnvPlan {
                pass: vec![],
                set: vec![],
            },
            network: NetworkPlan::Off,
            rlimits: vec![],
            pid_max: None,
            unenforced: vec![],
        }
    }

    fn bind(p: &str, writable: bool) -> MountOp {
        MountOp::Bind {
            src: p.into(),
            dst: p.into(),
            writable,
        }
    }

    /// The launcher makes the view's last mounts (protections under the
    /// write roots, masks); bwrap makes everything up to the write roots and
    /// any bind it alone can make (a source outside the roots), and gives
    /// the launcher the capability to mount.
    #[test]
    fn the_launcher_takes_the_last_mounts() {
        if !zot_launcher::new_mount_api() {
            assert!(
                std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
                "no new mount API here (Linux 5.12+), and ZOT_TEST_MUST_WORK is set"
            );
            eprintln!("SKIP: no new mount API here (Linux 5.12+): bwrap makes every mount");
            return;
        }
        let head = vec![
            bind("/", false),
            MountOp::Dev { dst: "/dev".into() },
            MountOp::Proc {
                dst: "/proc".into(),
            },
            bind("/w", true),
        ];
        let tail = vec![
            bind("/w/.git", true),
            bind("/w/.git/config", false),
            MountOp::BlockCreate {
                dst: "/w/.git/info".into(),
                protected: "/w/.git/info".into(),
            },
            MountOp::MaskDir {
                dst: "/home/u/.ssh".into(),
            },
            MountOp::MaskSocket {
                dst: "/run/a.sock".into(),
            },
        ];
        let plan = plan_with(head.iter().chain(&tail).cloned().collect());
        assert_eq!(zot_launcher::tail_mounts_start(&plan), head.len());
        let a = render(&plan);
        assert!(has(&a, &["--bind", "/w", "/w", "--chdir", "/w"]), "{a:?}");
        assert!(has(&a, &["--cap-add", "CAP_SYS_ADMIN"]));
        assert!(!a
            .iter()
            .any(|x| x == "/w/.git/config" || x == "/home/u/.ssh"));
        let v = render_view(&plan);
        assert!(has(&v, &["--bind", "/w/.git", "/w/.git"]));
        assert!(has(&v, &["--ro-bind", "/w/.git/config", "/w/.git/config"]));
        assert!(has(&v, &["--ro-bind", "/dev/null", "/w/.git/info"]));

        // A protection whose source resolves outside the write roots (not
        // in the view at its own path): it and what precedes it go to bwrap.
        let mut mounts = head.clone();
        mounts.push(bind("/w/.git", true));
        mounts.push(MountOp::Bind {
            src: "/elsewhere/config".into(),
            dst: "/w/.git/config".into(),
            writable: false,
        });
        mounts.push(MountOp::MaskDir {
            dst: "/home/u/.ssh".into(),
        });
        let plan = plan_with(mounts);
        assert_eq!(zot_launcher::tail_mounts_start(&plan), head.len() + 2);
        let a = render(&plan);
        assert!(has(
            &a,
            &["--ro-bind", "/elsewhere/config", "/w/.git/config"]
        ));
        assert!(!a.iter().any(|x| x == "/home/u/.ssh"));

        // Nothing after the roots: no launcher mounts, no extra capability.
        let plan = plan_with(head.clone());
        assert_eq!(zot_launcher::tail_mounts_start(&plan), head.len());
        assert!(!has(&render(&plan), &["--cap-add", "CAP_SYS_ADMIN"]));
    }
}
