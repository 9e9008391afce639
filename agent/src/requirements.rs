//! Runtime and host requirements, checked before consent.

use crate::deps::AgentSpec;
use crate::RunError;

/// The Go-style name of this OS (`linux`, `darwin`, `windows`, ...).
pub fn go_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    }
}

/// Check `runtime.min_zot`, `requirements.os` and `requirements.bin`.
pub fn check(spec: &AgentSpec, zot_version: &str) -> Result<(), RunError> {
    if let Some(min) = &spec.min_zot {
        let min_v = semver::Version::parse(min).map_err(|e| RunError::Manifest {
            what: format!("runtime.min_zot: {min:?}"),
            source: Some(e.into()),
        })?;
        let have = semver::Version::parse(zot_version).map_err(|_| {
            RunError::Requirement(format!(
                "runtime.min_zot: this is an unversioned build, {min} is required"
            ))
        })?;
        if have < min_v {
            return Err(RunError::Requirement(format!(
                "runtime.min_zot: the agent needs zot {min} or newer, this is {have}"
            )));
        }
    }
    if !spec.req_os.is_empty() && !spec.req_os.iter().any(|o| o == go_os()) {
        return Err(RunError::Requirement(format!(
            "requirements.os: the agent runs on {}, this is {}",
            spec.req_os.join(", "),
            go_os()
        )));
    }
    let missing: Vec<&str> = spec
        .req_bin
        .iter()
        .filter(|b| which::which(b).is_err())
        .map(|s| s.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(RunError::Requirement(format!(
            "requirements.bin: not found on PATH: {}",
            missing.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        let mut s = AgentSpec {
            min_zot: Some("0.2.0".into()),
            ..Default::default()
        };
        assert!(check(&s, "0.3.0").is_ok());
        s.min_zot = Some("9.0.0".into());
        assert!(check(&s, "0.3.0")
            .unwrap_err()
            .to_string()
            .contains("9.0.0"));
        s.min_zot = None;
        s.req_os = vec!["plan9".into()];
        assert!(check(&s, "0.3.0")
            .unwrap_err()
            .to_string()
            .contains("requirements.os"));
        s.req_os = vec![go_os().into()];
        s.req_bin = vec!["sh".into(), "no-such-binary-zot".into()];
        let e = check(&s, "0.3.0").unwrap_err().to_string();
        assert!(
            e.contains("no-such-binary-zot") && !e.contains("sh,"),
            "{e}"
        );
    }
}
