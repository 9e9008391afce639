//! Launch consent: the prompt, receipts keyed by artifact digest and by a
//! hash of the expanded permissions, and the non-interactive rules.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::deps::BashMode;
use crate::home::{private_dir, write_atomic, AgentHome};
use crate::perms::Permissions;
use crate::RunError;

/// Who is asking and for what.
pub struct Request<'a> {
    pub name: &'a str,
    pub version: Option<&'a str>,
    pub digest: &'a str,
    /// The verified publisher signature, when there is one.
    pub signer: Option<&'a str>,
    /// Where a registry reference resolved to (`REGISTRY/REPO@DIGEST`).
    pub source: Option<&'a str>,
    pub perms: &'a Permissions,
    /// The bundled extensions, one line each (they run inside the same
    /// sandbox; the digest covers their files).
    pub extensions: &'a [String],
}

/// How consent may be given without a prompt.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bypass {
    /// `-y` / `--yes`.
    pub yes: bool,
    /// `ZOT_AGENT_CONSENT=1`.
    pub env: bool,
}

/// How consent was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Receipt,
    Prompted,
    Bypassed,
}

#[derive(Serialize, Deserialize, Default)]
struct Receipt {
    digest: String,
    agent: String,
    /// The bundled extensions of the artifact approved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    extensions: Vec<String>,
    approvals: Vec<Approval>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Approval {
    permissions_hash: String,
    permissions: serde_json::Value,
    approved_at: u64,
}

/// The text shown before asking.
pub fn prompt_text(req: &Request) -> String {
    let list = |v: &[PathBuf]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let bash = match req.perms.bash() {
        BashMode::None => "none".to_string(),
        BashMode::Ask => {
            "ask (any command the risk gate allows; risky ones are asked about)".to_string()
        }
        BashMode::Allowlist => format!("allowlist: {}", req.perms.bash_allow.join(", ")),
    };
    let ident = match req.version {
        Some(v) => format!("{}@{v}", req.name),
        None => req.name.to_string(),
    };
    let mut text = format!(
        "Agent {ident} wants to run.\n\n  digest: {}\n  signed by: {}\n  fs read: {}\n  fs write: {}\n  bash: {bash}\n",
        req.digest,
        req.signer.unwrap_or("nobody (no signature by a trusted key was checked)"),
        list(&req.perms.fs_read),
        list(&req.perms.fs_write)
    );
    if let Some(src) = req.source {
        text = text.replacen(
            "\n  signed by: ",
            &format!("\n  from: {src}\n  signed by: "),
            1,
        );
    }
    let p = req.perms;
    // A scope inside a repository: git needs the repository's git
    // directory, which the sandbox shows read-only (with the whole
    // history, beyond the scopes).
    let mut shown: Vec<PathBuf> = Vec::new();
    for scope in p.fs_read.iter().chain(p.fs_write.iter()) {
        let Some(v) =
            zot_supervisor::planner::enclosing_repo(scope, &zot_supervisor::planner::RealFs)
        else {
            continue;
        };
        let outside = |g: &PathBuf| {
            !p.fs_read
                .iter()
                .chain(p.fs_write.iter())
                .any(|s| g.starts_with(s))
        };
        for g in v.git.into_iter().filter(outside) {
            if !shown.contains(&g) {
                shown.push(g);
            }
        }
    }
    if !shown.is_empty() {
        text.push_str(&format!(
            "  git read: {} (the repository enclosing a scope, read-only, so that git works there; its history and configuration are readable)\n",
            list(&shown)
        ));
    }
    if !p.net_allow.is_empty() {
        text.push_str(&format!(
            "  net: {} (through zot's filtering proxy; nothing else)\n",
            p.net_allow.join(", ")
        ));
    }
    if !p.env_read.is_empty() {
        text.push_str(&format!("  env read: {}\n", p.env_read.join(", ")));
    }
    if !p.env_withheld.is_empty() {
        text.push_str(&format!(
            "  env withheld: {} (zot's provider keys pass only when listed by name)\n",
            p.env_withheld.join(", ")
        ));
    }
    for e in req.extensions {
        text.push_str(&format!(
            "  extension: {e} (runs inside the same sandbox)\n"
        ));
    }
    text
}

fn receipt_path(home: &AgentHome, digest: &str) -> Result<PathBuf, RunError> {
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| RunError::Consent(format!("unexpected artifact digest {digest:?}")))?;
    Ok(home.consent_dir().join(format!("sha256-{hex}.json")))
}

fn load(path: &std::path::Path) -> Receipt {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Obtain consent: a matching receipt (never for `bash: ask`), `-y` or
/// `ZOT_AGENT_CONSENT=1`, else a y/N prompt when `interactive`, else refuse.
/// `ask` shows the prompt text and returns the answer.
pub fn obtain(
    home: &AgentHome,
    req: &Request,
    bypass: Bypass,
    interactive: bool,
    ask: &mut dyn FnMut(&str) -> bool,
) -> Result<Outcome, RunError> {
    let path = receipt_path(home, req.digest)?;
    let hash = req.perms.hash();
    let cacheable = req.perms.bash() != BashMode::Ask;
    if cacheable {
        let r = load(&path);
        if r.digest == req.digest && r.approvals.iter().any(|a| a.permissions_hash == hash) {
            return Ok(Outcome::Receipt);
        }
    }
    if bypass.yes || bypass.env {
        return Ok(Outcome::Bypassed);
    }
    if !interactive {
        return Err(RunError::Consent(format!(
            "agent {} needs consent and there is no terminal to ask on; inspect it, then pass -y/--yes or set ZOT_AGENT_CONSENT=1",
            req.name
        )));
    }
    if !ask(&prompt_text(req)) {
        return Err(RunError::Consent(format!(
            "declined for agent {}",
            req.name
        )));
    }
    if cacheable {
        let dir = home.consent_dir();
        private_dir(&dir).map_err(|e| RunError::io(format!("consent dir {}", dir.display()), e))?;
        let mut r = load(&path);
        if r.digest != req.digest {
            r = Receipt {
                digest: req.digest.to_string(),
                agent: req.name.to_string(),
                extensions: req.extensions.to_vec(),
                approvals: Vec::new(),
            };
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        r.approvals.retain(|a| a.permissions_hash != hash);
        r.approvals.push(Approval {
            permissions_hash: hash,
            permissions: serde_json::to_value(req.perms).unwrap_or_default(),
            approved_at: now,
        });
        let bytes = serde_json::to_vec_pretty(&r).expect("receipt serializes");
        write_atomic(&path, &bytes)
            .map_err(|e| RunError::io(format!("consent receipt {}", path.display()), e))?;
    }
    Ok(Outcome::Prompted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(read: &str, mode: &'static str) -> Permissions {
        Permissions {
            fs_read: vec![PathBuf::from(read)],
            fs_write: vec![],
            bash_mode: mode,
            ..Default::default()
        }
    }

    #[test]
    fn the_prompt_names_hosts_and_variables() {
        let p = Permissions {
            net_allow: vec!["api.example.com".into()],
            env_read: vec!["GITHUB_TOKEN".into()],
            env_withheld: vec!["OPENAI_API_KEY".into()],
            ..perms("/w", "none")
        };
        let text = prompt_text(&Request {
            name: "a",
            version: None,
            digest: "sha256:00",
            signer: None,
            source: None,
            perms: &p,
            extensions: &[],
        });
        assert!(text.contains("net: api.example.com"), "{text}");
        assert!(text.contains("env read: GITHUB_TOKEN"), "{text}");
        assert!(text.contains("env withheld: OPENAI_API_KEY"), "{text}");
        let none = prompt_text(&Request {
            name: "a",
            version: None,
            digest: "sha256:00",
            signer: None,
            source: None,
            perms: &perms("/w", "none"),
            extensions: &[],
        });
        assert!(!none.contains("net:") && !none.contains("env"), "{none}");
        let from = prompt_text(&Request {
            name: "a",
            version: None,
            digest: "sha256:00",
            signer: None,
            source: Some("reg.example/a@sha256:11"),
            perms: &perms("/w", "none"),
            extensions: &[],
        });
        assert!(
            from.contains("  digest: sha256:00\n  from: reg.example/a@sha256:11\n  signed by:"),
            "{from}"
        );
    }

    #[test]
    fn the_prompt_names_an_enclosing_repository() {
        let d = tempfile::tempdir().unwrap();
        let repo = std::fs::canonicalize(d.path()).unwrap().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let p = perms(repo.join("sub").to_str().unwrap(), "none");
        let text = prompt_text(&Request {
            name: "a",
            version: None,
            digest: "sha256:00",
            signer: None,
            source: None,
            perms: &p,
            extensions: &[],
        });
        assert!(
            text.contains(&format!("git read: {}", repo.join(".git").display())),
            "{text}"
        );
        // A scope holding the repository shows nothing more.
        let p = perms(repo.to_str().unwrap(), "none");
        let text = prompt_text(&Request {
            name: "a",
            version: None,
            digest: "sha256:00",
            signer: None,
            source: None,
            perms: &p,
            extensions: &[],
        });
        assert!(!text.contains("git read"), "{text}");
    }

    #[test]
    fn receipts() {
        let d = tempfile::tempdir().unwrap();
        let home = AgentHome::new(d.path().to_path_buf(), "a");
        let digest = format!("sha256:{}", "ab".repeat(32));
        let p1 = perms("/w1", "none");
        let req = Request {
            name: "a",
            version: Some("1"),
            digest: &digest,
            signer: None,
            source: None,
            perms: &p1,
            extensions: &[],
        };
        let mut asked = 0;
        let mut yes = |_: &str| {
            asked += 1;
            true
        };
        assert_eq!(
            obtain(&home, &req, Bypass::default(), true, &mut yes).unwrap(),
            Outcome::Prompted
        );
        assert_eq!(
            obtain(&home, &req, Bypass::default(), false, &mut yes).unwrap(),
            Outcome::Receipt
        );
        let p2 = perms("/w2", "none");
        let req2 = Request { perms: &p2, ..req };
        assert!(obtain(&home, &req2, Bypass::default(), false, &mut yes).is_err());
        let pa = perms("/w1", "ask");
        let reqa = Request {
            perms: &pa,
            extensions: &[],
            name: "a",
            version: None,
            digest: &digest,
            signer: None,
            source: None,
        };
        assert_eq!(
            obtain(&home, &reqa, Bypass::default(), true, &mut yes).unwrap(),
            Outcome::Prompted
        );
        assert_eq!(
            obtain(&home, &reqa, Bypass::default(), true, &mut yes).unwrap(),
            Outcome::Prompted
        );
        assert_eq!(asked, 3);
        let mut no = |_: &str| false;
        assert!(obtain(&home, &req2, Bypass::default(), true, &mut no).is_err());
        assert_eq!(
            obtain(
                &home,
                &req2,
                Bypass {
                    yes: true,
                    env: false
                },
                false,
                &mut no
            )
            .unwrap(),
            Outcome::Bypassed
        );
        let bad = Request {
            digest: "sha256:../../x",
            signer: None,
            ..req
        };
        assert!(obtain(
            &home,
            &bad,
            Bypass {
                yes: true,
                env: false
            },
            false,
            &mut no
        )
        .is_err());
    }
}
