//! The command's environment: the caller's variables the policy keeps, then
//! the fixed ones it sets.

use std::ffi::OsString;

use zot_policy::sandbox::{SandboxMode, SandboxPolicy};

/// The complete environment of a sandboxed command, computed from `host`
/// (normally `std::env::vars_os()`).
pub fn command_env(
    policy: &SandboxPolicy,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let full = policy.mode == SandboxMode::DangerFullAccess;
    let mut out: Vec<(OsString, OsString)> = host
        .into_iter()
        .filter(|(k, _)| {
            full || k
                .to_str()
                .is_some_and(|k| policy.env.keeps(k) && !policy.env.set.iter().any(|(s, _)| s == k))
        })
        .collect();
    if !full {
        out.extend(
            policy
                .env
                .set
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_policy::sandbox::{compile, SandboxOptions};

    #[test]
    fn secrets_do_not_pass_unless_allowed() {
        let opts = SandboxOptions {
            cwd: "/w".into(),
            env_allow: vec!["MY_TOKEN".into()],
            ..Default::default()
        };
        let pol = compile(SandboxMode::WorkspaceWrite, &opts).unwrap();
        let host = [
            ("PATH", "/bin"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("MY_TOKEN", "t"),
            ("OTHER_TOKEN", "o"),
            ("TMPDIR", "/host"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = command_env(&pol, host);
        let keys: Vec<_> = env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(keys, vec!["MY_TOKEN=t", "PATH=/bin", "TMPDIR=/tmp"]);
    }
}
