//! Permission expansion: `${workspace}`, `${agent_data}` and relative paths
//! in `fs.read` / `fs.write` become absolute, canonical scope roots.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::deps::{AgentSpec, BashMode};
use crate::RunError;

/// The expanded permission set of one run (what consent is given for).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Permissions {
    pub fs_read: Vec<PathBuf>,
    pub fs_write: Vec<PathBuf>,
    pub bash_mode: &'static str,
    pub bash_allow: Vec<String>,
    /// `net.allow`, each rule in its normal form (what the proxy allows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub net_allow: Vec<String>,
    /// `env.read` expanded against zot's environment: the exact names the
    /// agent's commands receive (a `PREFIX_*` entry as the names it
    /// matched when consent was asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_read: Vec<String>,
    /// Present variables an `env.read` prefix matched that are zot's own
    /// provider keys: never passed (an exact entry passes one).
    #[serde(skip)]
    pub env_withheld: Vec<String>,
}

impl Permissions {
    /// SHA-256 of the canonical JSON form: consent receipts are keyed by it.
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).expect("permissions serialize");
        hex::encode(Sha256::digest(&json))
    }

    pub fn bash(&self) -> BashMode {
        match self.bash_mode {
            "ask" => BashMode::Ask,
            "allowlist" => BashMode::Allowlist,
            _ => BashMode::None,
        }
    }
}

/// Expand the manifest's scopes for `workspace` (absolute, canonical) and
/// `agent_data`.
pub fn expand(
    spec: &AgentSpec,
    workspace: &Path,
    agent_data: &Path,
    config: &zot_policy::config::Config,
) -> Result<Permissions, RunError> {
    let one = |field: &str, s: &String| {
        expand_one(s, workspace, agent_data)
            .map_err(|m| RunError::manifest(format!("{field}: {s:?}: {m}")))
    };
    let mut fs_read = spec
        .fs_read
        .iter()
        .map(|s| one("permissions.fs.read", s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fs_write = spec
        .fs_write
        .iter()
        .map(|s| one("permissions.fs.write", s))
        .collect::<Result<Vec<_>, _>>()?;
    fs_read.sort();
    fs_read.dedup();
    fs_write.sort();
    fs_write.dedup();
    let allow = zot_policy::net::AllowList::parse(&spec.net_allow).map_err(RunError::net_allow)?;
    let mut net_allow: Vec<String> = allow.rules().iter().map(|r| r.to_string()).collect();
    net_allow.sort();
    net_allow.dedup();
    let names = spec
        .env_read
        .iter()
        .map(|s| {
            zot_policy::env::EnvName::parse(s).map_err(|e| RunError::Manifest {
                what: format!("permissions.env.read: {s:?}"),
                source: Some(e.into()),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let keys = crate::models::provider_key_vars(config);
    let present: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    let env = zot_policy::env::expand(&names, present.iter().map(String::as_str), &|n| {
        keys.iter().any(|k| k == n)
    });
    Ok(Permissions {
        net_allow,
        env_read: env.pass,
        env_withheld: env.withheld,
        fs_read,
        fs_write,
        bash_mode: spec.bash_mode.as_str(),
        bash_allow: if spec.bash_mode == BashMode::Allowlist {
            spec.bash_allow.clone()
        } else {
            Vec::new()
        },
    })
}

fn expand_one(s: &str, workspace: &Path, agent_data: &Path) -> Result<PathBuf, String> {
    let (base, rest) = if let Some(r) = s.strip_prefix("${workspace}") {
        (workspace.to_path_buf(), r)
    } else if let Some(r) = s.strip_prefix("${agent_data}") {
        (agent_data.to_path_buf(), r)
    } else if s.starts_with('/') {
        (PathBuf::from("/"), s)
    } else {
        (workspace.to_path_buf(), s)
    };
    if rest.contains("${") {
        return Err("unknown variable (only ${workspace} and ${agent_data} exist)".into());
    }
    if s.starts_with('~') {
        return Err("'~' is not expanded; use an absolute path".into());
    }
    if !rest.is_empty() && !rest.starts_with('/') && base != Path::new("/") && s.starts_with("${") {
        return Err("a variable must be followed by '/' or nothing".into());
    }
    // Relative and variable scopes must stay beneath their base once
    // symlinks are resolved (`out -> /elsewhere` is not `${workspace}/out`).
    let beneath = (base != Path::new("/")).then(|| base.clone());
    let mut out = base;
    for c in Path::new(rest.trim_start_matches('/')).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => return Err("'..' is not allowed in a scope".into()),
            Component::RootDir | Component::Prefix(_) => {}
        }
    }
    if let Some(link) = dangling_link(&out) {
        return Err(format!(
            "{} is a symlink that points nowhere; a scope must be a real path",
            link.display()
        ));
    }
    let canonical = canonical_prefix(&out);
    if let Some(base) = beneath {
        let base_canonical = canonical_prefix(&base);
        if !canonical.starts_with(&base_canonical) {
            let var = if base == workspace {
                "${workspace}"
            } else {
                "${agent_data}"
            };
            return Err(format!(
                "resolves to {}, outside {var} ({}): a relative or {var} scope must stay beneath it (is a component a symlink?)",
                canonical.display(),
                base_canonical.display()
            ));
        }
    }
    Ok(canonical)
}

/// The first component of `p` that is a symlink whose target does not
/// resolve (canonicalization would silently keep its name).
fn dangling_link(p: &Path) -> Option<PathBuf> {
    let mut cur = PathBuf::new();
    for c in p.components() {
        cur.push(c);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() && cur.canonicalize().is_err() => return Some(cur),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Canonicalize the longest existing prefix of `p` and re-append the rest.
pub fn canonical_prefix(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let data = d.path().canonicalize().unwrap().join("data");
        let spec = AgentSpec {
            fs_read: vec![
                "${workspace}".into(),
                "src".into(),
                "${agent_data}".into(),
                "/etc/hostname".into(),
            ],
            fs_write: vec!["${agent_data}/out".into()],
            ..Default::default()
        };
        let p = expand(&spec, &ws, &data, &Default::default()).unwrap();
        assert!(p.fs_read.contains(&ws));
        assert!(p.fs_read.contains(&ws.join("src")));
        assert!(p.fs_read.contains(&data));
        assert_eq!(p.fs_write, vec![data.join("out")]);
        for bad in ["../x", "${home}", "~/.ssh", "${workspace}x", "src/../../x"] {
            let spec = AgentSpec {
                fs_read: vec![bad.into()],
                ..Default::default()
            };
            assert!(expand(&spec, &ws, &data, &Default::default()).is_err(), "{bad}");
        }
        let other = d.path().canonicalize().unwrap();
        let spec = AgentSpec {
            fs_read: vec!["${workspace}".into()],
            ..Default::default()
        };
        assert_ne!(
            expand(&spec, &ws, &data, &Default::default()).unwrap().hash(),
            expand(&spec, &other, &data, &Default::default()).unwrap().hash()
        );
    }

    /// Consent covers the hosts and the variables: a receipt for one set
    /// does not match another; without them the hash is what it was
    /// before they existed (old receipts stay valid).
    #[test]
    fn net_and_env_are_part_of_the_hash() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let base = AgentSpec {
            fs_read: vec!["${workspace}".into()],
            ..Default::default()
        };
        let plain = expand(&base, &ws, &ws, &Default::default()).unwrap();
        let old = serde_json::json!({
            "fs_read": [ws], "fs_write": [], "bash_mode": "none", "bash_allow": []
        });
        assert_eq!(serde_json::to_value(&plain).unwrap(), old);
        let net = |hosts: &[&str]| AgentSpec {
            net_allow: hosts.iter().map(|h| h.to_string()).collect(),
            ..base.clone()
        };
        let a = expand(&net(&["example.com", "a.example"]), &ws, &ws, &Default::default()).unwrap();
        let b = expand(&net(&["A.Example", "Example.COM", "example.com"]), &ws, &ws, &Default::default()).unwrap();
        let c = expand(&net(&["example.org"]), &ws, &ws, &Default::default()).unwrap();
        assert_eq!(a.hash(), b.hash(), "the same rules, written differently");
        assert_ne!(a.hash(), c.hash());
        assert_ne!(a.hash(), plain.hash());
        let env = AgentSpec {
            env_read: vec!["ZOT_PERMS_TEST_VAR".into()],
            ..base.clone()
        };
        let e = expand(&env, &ws, &ws, &Default::default()).unwrap();
        assert_eq!(e.env_read, ["ZOT_PERMS_TEST_VAR"]);
        assert_ne!(e.hash(), plain.hash());
        for (field, bad) in [("net.allow", "exa mple.com"), ("env.read", "1X")] {
            let spec = if field == "net.allow" { net(&[bad]) } else {
                AgentSpec { env_read: vec![bad.into()], ..base.clone() }
            };
            let err = expand(&spec, &ws, &ws, &Default::default()).unwrap_err().to_string();
            assert!(err.contains(field) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn symlinked_scopes_must_stay_beneath_their_base() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let data = root.join("data");
        let elsewhere = root.join("elsewhere");
        for p in [&ws, &data, &elsewhere] {
            std::fs::create_dir(p).unwrap();
        }
        std::os::unix::fs::symlink(&elsewhere, ws.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("src")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, data.join("x")).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), ws.join("dangling")).unwrap();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("inside")).unwrap();
        let expand_read = |s: &str| {
            expand(
                &AgentSpec {
                    fs_read: vec![s.into()],
                    ..Default::default()
                },
                &ws,
                &data,
                &Default::default(),
            )
        };
        let expand_write = |s: &str| {
            expand(
                &AgentSpec {
                    fs_write: vec![s.into()],
                    ..Default::default()
                },
                &ws,
                &data,
                &Default::default(),
            )
        };
        for (scope, points) in [
            ("out", elsewhere.display().to_string()),
            (
                "${workspace}/out/sub",
                elsewhere.join("sub").display().to_string(),
            ),
            ("${agent_data}/x", elsewhere.display().to_string()),
        ] {
            let e = expand_write(scope).unwrap_err().to_string();
            assert!(
                e.contains("permissions.fs.write") && e.contains(scope),
                "{e}"
            );
            assert!(e.contains(&format!("resolves to {points}")), "{e}");
        }
        let e = expand_read("src").unwrap_err().to_string();
        assert!(
            e.contains("permissions.fs.read") && e.contains("resolves to /etc"),
            "{e}"
        );
        let e = expand_read("dangling/new").unwrap_err().to_string();
        assert!(e.contains("points nowhere"), "{e}");
        // a symlink that stays inside resolves to its canonical target
        assert_eq!(
            expand_read("inside").unwrap().fs_read,
            vec![ws.join("real")]
        );
        // absolute scopes are the manifest's explicit choice
        assert_eq!(
            expand_read("/etc").unwrap().fs_read,
            vec![PathBuf::from("/etc")]
        );
    }
}
