//! End-to-end tests of `zot sandbox` with the bubblewrap backend: the full
//! attack suite (tests/attacks/mod.rs) as root and as an unprivileged user,
//! with the launcher image and with the zot binary as launcher, plus CLI
//! behaviour that does not depend on the backend.
mod common;
#[macro_use]
#[path = "attacks/mod.rs"]
mod attacks;

attack_tests!("bwrap");
attack_tests!("bwrap"; agent_view_restricted, planted_bwrap_ignored);

/// bwrap with the zot binary as the launcher inside (the fallback when the
/// launcher image cannot run; `/proc/self/exe` is zot then).
mod bwrap_exec {
    attack_tests!("bwrap/exec");
    attack_tests!("bwrap/exec"; agent_view_restricted);
}

mod cli {
    #[test]
    fn unknown_mode_is_a_usage_error() {
        let o = crate::common::zot()
            .args(["sandbox", "--mode", "bogus", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
    }

    #[test]
    fn danger_full_access_runs_unconfined() {
        let o = crate::common::zot()
            .args([
                "sandbox",
                "--mode",
                "danger-full-access",
                "--report",
                "--",
                "/bin/sh",
                "-c",
                "exit 4",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(4));
        assert!(String::from_utf8_lossy(&o.stderr).contains("backend none"));
    }

    #[test]
    fn escaped_writer_does_not_hang_capped_output() {
        // Unconfined: a setsid'd grandchild keeps the output pipe open.
        let start = std::time::Instant::now();
        let o = crate::common::zot()
            .args([
                "sandbox",
                "--mode",
                "danger-full-access",
                "--max-output",
                "100",
                "--",
            ])
            .args([
                "/bin/sh",
                "-c",
                "setsid /bin/sh -c 'sleep 5; echo late' & sleep 0.3; echo early",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "early\n");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(4),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn net_is_refused_in_read_only_mode() {
        let o = crate::common::zot()
            .args(["sandbox", "--net", "--", "true"])
            .output()
            .unwrap();
        // Options that contradict each other: a usage error.
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("--net"));
    }
}
