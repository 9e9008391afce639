//! Agent references: a directory, a `.zot` file, a bare local name,
//! `owner/repo[/path]` shorthand (local first) and GitHub URLs (including
//! `/tree/<ref>/<path>`). GitHub references are downloaded as the
//! repository archive into a private temp dir removed when the run ends.
//! `ZOT_GITHUB_BASE` replaces `https://github.com` (tests serve archives
//! from a local HTTP server).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::deps::{self, LoadedAgent};
use crate::ui::Progress;
use crate::RunError;
use zot_supervisor::Cancel;

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    Local(PathBuf),
    GitHub {
        owner: String,
        repo: String,
        git_ref: String,
        path: String,
    },
    /// A `.zot` attached to a GitHub release:
    /// `https://github.com/OWNER/REPO/releases/download/TAG/FILE.zot`.
    /// Its signature is `FILE.zot.minisig` in the same release.
    GitHubRelease {
        owner: String,
        repo: String,
        tag: String,
        file: String,
    },
    /// An agent in an OCI registry (`REGISTRY/REPO[:TAG|@sha256:DIGEST]`,
    /// or `oci://...`); see [`crate::oci`].
    Oci(crate::oci::OciRef),
    /// An agent installed with `zot install` (a single name with no local
    /// directory or archive of that name); see [`crate::store`].
    Installed(String),
}

/// How [`resolve_checked`] treats publisher signatures.
pub struct Signatures<'a> {
    pub keys: &'a zot_package::signature::KeySet,
    /// `--require-signature` or the `require_signature` setting.
    pub required: bool,
}

/// Largest archive downloaded (the `.zot` compressed size limit).
pub const MAX_DOWNLOAD: u64 = 100 << 20;

fn part_ok(p: &str) -> bool {
    !p.is_empty()
        && p != "."
        && p != ".."
        && p.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

fn ref_err(s: &str, m: &str) -> RunError {
    RunError::reference(format!("{s:?}: {m}"))
}

/// Parse `s`, looking for local candidates relative to `cwd`.
pub fn parse(s: &str, cwd: &Path) -> Result<Reference, RunError> {
    if s.is_empty() {
        return Err(RunError::reference("empty reference"));
    }
    if let Some(rest) = s
        .strip_prefix("https://github.com/")
        .or_else(|| s.strip_prefix("http://github.com/"))
    {
        let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        if parts.len() < 2
            || parts
                .iter()
                .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(ref_err(
                s,
                "expected https://github.com/OWNER/REPO[/PATH] or .../tree/REF/PATH",
            ));
        }
        let gh_ok = |p: &str| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        if !parts.iter().all(|p| gh_ok(p)) {
            return Err(ref_err(s, "unsupported characters in the URL path"));
        }
        let repo = parts[1].trim_end_matches(".git");
        if parts.len() >= 3 && parts[2] == "releases" {
            return match parts.as_slice() {
                [owner, _, "releases", "download", tag, file] if file.ends_with(".zot") => {
                    Ok(Reference::GitHubRelease {
                        owner: owner.to_string(),
                        repo: repo.to_string(),
                        tag: tag.to_string(),
                        file: file.to_string(),
                    })
                }
                _ => Err(ref_err(
                    s,
                    "a release reference is https://github.com/OWNER/REPO/releases/download/TAG/FILE.zot",
                )),
            };
        }
        let (git_ref, path) = if parts.len() >= 4 && parts[2] == "tree" {
            (parts[3].to_string(), parts[4..].join("/"))
        } else if parts.len() == 3 && parts[2] == "tree" {
            return Err(ref_err(s, "a tree URL needs a branch or tag"));
        } else {
            ("HEAD".to_string(), parts[2..].join("/"))
        };
        if !git_ref
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(ref_err(s, "unsupported branch or tag name"));
        }
        return Ok(Reference::GitHub {
            owner: parts[0].to_string(),
            repo: repo.to_string(),
            git_ref,
            path,
        });
    }
    if s.starts_with("oci://") {
        return crate::oci::parse(s)
            .map(Reference::Oci)
            .map_err(RunError::reference);
    }
    if s.contains("://") {
        return Err(ref_err(
            s,
            "only GitHub URLs and oci:// references are supported",
        ));
    }
    let explicit_local = s.starts_with("./")
        || s.starts_with("../")
        || s.starts_with('/')
        || s.ends_with(".zot")
        || s == "."
        || s == "..";
    if explicit_local {
        return Ok(Reference::Local(cwd.join(s)));
    }
    let parts: Vec<&str> = s.split('/').collect();
    if parts.len() == 1 {
        for cand in [cwd.join(s), cwd.join(format!("{s}.zot"))] {
            if cand.exists() {
                return Ok(Reference::Local(cand));
            }
        }
        if let Ok(home) = crate::home::zot_home() {
            if crate::store::get(&home, s)?.is_some() {
                return Ok(Reference::Installed(s.to_string()));
            }
        }
        return Err(ref_err(
            s,
            &format!(
                "no local directory {s}/ or archive {s}.zot, and no installed agent of that name (`zot agents` lists them)"
            ),
        ));
    }
    if cwd.join(s).exists() {
        return Ok(Reference::Local(cwd.join(s)));
    }
    if crate::oci::looks_like(s) {
        return crate::oci::parse(s)
            .map(Reference::Oci)
            .map_err(RunError::reference);
    }
    if !parts.iter().all(|p| part_ok(p)) {
        return Err(ref_err(
            s,
            "GitHub shorthand parts must be lowercase letters, digits, '.', '-' or '_'",
        ));
    }
    Ok(Reference::GitHub {
        owner: parts[0].to_string(),
        repo: parts[1].to_string(),
        git_ref: "HEAD".into(),
        path: parts[2..].join("/"),
    })
}

/// Resolve and load a reference. Signatures are not looked at (for
/// `inspect` and `--explain`; `zot run` uses [`resolve_checked`]).
pub fn resolve(s: &str, cwd: &Path) -> Result<LoadedAgent, RunError> {
    let none = zot_package::signature::KeySet::default();
    let sigs = Signatures {
        keys: &none,
        required: false,
    };
    resolve_checked(s, cwd, &sigs, &mut Vec::new(), &mut |_| {}, None)
}

/// Resolve and load a reference, checking the publisher signature of a
/// `.zot` archive (`ARCHIVE.minisig` next to it, locally, in the
/// repository or in the release) against `sigs.keys`; see
/// [`crate::trust::open_archive`]. Under `sigs.required`, references with
/// no signed artifact (directories, agent.toml packages) are refused.
/// Reasons a signature was not used go to `warnings`.
///
/// Downloads report their progress to `progress` and stop when `cancel`
/// fires ([`RunError::Interrupted`] for a signal, else
/// [`RunError::Cancelled`]); what they wrote is removed.
pub fn resolve_checked(
    s: &str,
    cwd: &Path,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
    progress: &mut dyn FnMut(&Progress),
    cancel: Option<&Cancel>,
) -> Result<LoadedAgent, RunError> {
    let mut progress = |p: &Progress| -> Result<(), RunError> {
        progress(p);
        match cancel {
            Some(c) if c.is_cancelled() => Err(c
                .signal()
                .map_or(RunError::Cancelled, RunError::Interrupted)),
            _ => Ok(()),
        }
    };
    let progress = &mut progress;
    match parse(s, cwd)? {
        Reference::Local(p) => open_local(s, &p, sigs, warnings),
        Reference::GitHub {
            owner,
            repo,
            git_ref,
            path,
        } => fetch_github(s, &owner, &repo, &git_ref, &path, sigs, warnings, progress),
        Reference::GitHubRelease {
            owner,
            repo,
            tag,
            file,
        } => fetch_release(&owner, &repo, &tag, &file, sigs, warnings, progress),
        Reference::Oci(r) => fetch_oci(&r, sigs, warnings, progress),
        Reference::Installed(name) => {
            crate::store::open(&crate::home::zot_home()?, &name, sigs, warnings)
        }
    }
}

/// Pull an agent from an OCI registry into a scratch dir (the tag is
/// resolved once; the layer is checked against its digest) and load it
/// with its signature referrer, if any.
fn fetch_oci(
    r: &crate::oci::OciRef,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
    progress: &mut Report<'_>,
) -> Result<LoadedAgent, RunError> {
    let cfg = crate::config::load()?;
    let tmp = deps::scratch_dir("zot-oci-")?;
    let pulled = crate::oci::pull(r, &cfg.config, tmp.path(), sigs.keys, progress)?;
    let pinned = r.pinned(&pulled.manifest_digest);
    if sigs.required && pulled.signature.is_none() {
        return Err(RunError::Signature(format!(
            "{pinned}: a signature is required, but the registry has no signature for it (publish it with `zot publish --key`)"
        )));
    }
    let sig = zot_package::signature::signature_path(&pulled.archive);
    let file = pulled
        .archive
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut agent =
        crate::trust::open_archive(&pulled.archive, &sig, sigs.keys, sigs.required, warnings)
            .map_err(|e| match e {
                // Name the reference, not the temp copy.
                RunError::Package(p) => RunError::Signature(format!(
                    "{pinned}: {}",
                    crate::trust::error_chain(&p)
                        .replace(&sig.display().to_string(), &format!("{file}.minisig"))
                        .replace(&pulled.archive.display().to_string(), &file)
                )),
                e => e,
            })?;
    agent.source = Some(pinned);
    agent._scratch.push(tmp);
    Ok(agent)
}

fn open_local(
    reference: &str,
    p: &Path,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
) -> Result<LoadedAgent, RunError> {
    let is_zot = p.is_file() && !zot_package::agent_toml::is_zip_file(p);
    if !is_zot {
        if sigs.required {
            let what = if p.is_dir() {
                "a directory"
            } else {
                "an agent.toml package"
            };
            if p.exists() {
                return Err(crate::trust::refuse_unsignable(reference, what));
            }
        }
        return deps::open_agent(p);
    }
    let sig = zot_package::signature::signature_path(p);
    crate::trust::open_archive(p, &sig, sigs.keys, sigs.required, warnings)
}

fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .new_agent()
}

/// Why a download did not finish.
enum FetchError {
    /// The request or the reading of `url` failed.
    Failed { url: String, source: crate::Cause },
    /// The run was cancelled or interrupted while it ran.
    Stopped(RunError),
}

impl FetchError {
    /// The error of the run, for a download for `what`.
    fn into_run(self, what: &str) -> RunError {
        match self {
            FetchError::Failed { url, source } => RunError::Reference {
                what: format!("{what}: download {url}"),
                source: Some(source),
            },
            FetchError::Stopped(e) => e,
        }
    }
}

/// What [`resolve_checked`]'s downloads report to: the front end's
/// progress, and whether to go on.
type Report<'a> = dyn FnMut(&Progress) -> Result<(), RunError> + 'a;

/// GET `url` (at most `limit` bytes); `Ok(None)` on 404. The bytes
/// received are reported to `progress` as they come; an error from it
/// stops the download.
fn download(
    agent: &ureq::Agent,
    url: &str,
    limit: u64,
    progress: &mut Report<'_>,
) -> Result<Option<Vec<u8>>, FetchError> {
    use std::io::Read;
    let mut resp = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(404)) => return Ok(None),
        Err(e) => {
            return Err(FetchError::Failed {
                url: url.into(),
                source: e.into(),
            })
        }
    };
    let total = resp.body().content_length();
    let what = format!("downloading {}", url.split("://").nth(1).unwrap_or(url));
    let mut reader = resp.body_mut().with_config().limit(limit).reader();
    let mut data = Vec::with_capacity(total.unwrap_or(0).min(limit) as usize);
    let mut buf = vec![0u8; 64 * 1024];
    let result = loop {
        match reader.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                data.extend_from_slice(&buf[..n]);
                let go_on = progress(&Progress {
                    what: &what,
                    done: data.len() as u64,
                    total,
                    finished: false,
                });
                if let Err(e) = go_on {
                    break Err(FetchError::Stopped(e));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                break Err(FetchError::Failed {
                    url: url.into(),
                    source: e.into(),
                })
            }
        }
    };
    let end = progress(&Progress {
        what: &what,
        done: data.len() as u64,
        total,
        finished: true,
    });
    result?;
    end.map_err(FetchError::Stopped)?;
    Ok(Some(data))
}

/// The base URL GitHub references are fetched from.
fn github_base() -> String {
    std::env::var("ZOT_GITHUB_BASE")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "https://github.com".into())
        .trim_end_matches('/')
        .to_string()
}

fn fetch_release(
    owner: &str,
    repo: &str,
    tag: &str,
    file: &str,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
    progress: &mut Report<'_>,
) -> Result<LoadedAgent, RunError> {
    let url = format!(
        "{}/{owner}/{repo}/releases/download/{tag}/{file}",
        github_base()
    );
    let release = format!("github release {owner}/{repo} {tag}");
    let err = |m: String| RunError::reference(format!("{release}: {m}"));
    let http = http_agent();
    let bytes = download(&http, &url, MAX_DOWNLOAD, progress)
        .map_err(|e| e.into_run(&release))?
        .ok_or_else(|| err(format!("download {url}: 404 Not Found")))?;
    let sig_url = format!("{url}{}", zot_package::signature::SIGNATURE_SUFFIX);
    let sig = download(
        &http,
        &sig_url,
        zot_package::signature::MAX_SIGNATURE_FILE,
        &mut |_| Ok(()),
    )
    .map_err(|e| e.into_run(&release))?;
    let tmp = deps::scratch_dir("zot-github-")?;
    let local = tmp.path().join(file);
    std::fs::write(&local, &bytes).map_err(|e| RunError::io(local.display().to_string(), e))?;
    let local_sig = zot_package::signature::signature_path(&local);
    if let Some(sig) = sig {
        std::fs::write(&local_sig, &sig)
            .map_err(|e| RunError::io(local_sig.display().to_string(), e))?;
    }
    let mut agent =
        crate::trust::open_archive(&local, &local_sig, sigs.keys, sigs.required, warnings)
            .map_err(|e| match e {
                // Name the URLs, not the temp copies.
                RunError::Package(p) => RunError::Signature(format!(
                    "{url}: {}",
                    crate::trust::error_chain(&p).replace(&local.display().to_string(), file)
                )),
                e => e,
            })?;
    agent._scratch.push(tmp);
    Ok(agent)
}

/// The archive URL for a GitHub repository at `git_ref`.
pub fn archive_url(owner: &str, repo: &str, git_ref: &str) -> String {
    format!("{}/{owner}/{repo}/archive/{git_ref}.tar.gz", github_base())
}

fn fetch_github(
    reference: &str,
    owner: &str,
    repo: &str,
    git_ref: &str,
    path: &str,
    sigs: &Signatures,
    warnings: &mut Vec<String>,
    progress: &mut Report<'_>,
) -> Result<LoadedAgent, RunError> {
    let url = archive_url(owner, repo, git_ref);
    let what = format!(
        "github {owner}/{repo}{}{path}",
        if path.is_empty() { "" } else { "/" }
    );
    let err = |m: String| RunError::reference(format!("{what}: {m}"));
    let bytes = download(&http_agent(), &url, MAX_DOWNLOAD, progress)
        .map_err(|e| e.into_run(&what))?
        .ok_or_else(|| err(format!("download {url}: 404 Not Found")))?;
    let tmp = deps::scratch_dir("zot-github-")?;
    let top = deps::extract_github_archive(&bytes, tmp.path())?;
    let dir = if path.is_empty() { top } else { top.join(path) };
    // A `.zot` committed to the repository, signed by the `.minisig` next
    // to it.
    if path.ends_with(".zot") && dir.is_file() {
        let sig = zot_package::signature::signature_path(&dir);
        let mut agent = crate::trust::open_archive(&dir, &sig, sigs.keys, sigs.required, warnings)?;
        agent._scratch.push(tmp);
        return Ok(agent);
    }
    if sigs.required {
        return Err(crate::trust::refuse_unsignable(
            reference,
            "a repository directory",
        ));
    }
    if !dir.join("manifest.json").is_file() {
        return Err(err(format!(
            "no agent (manifest.json) at {}",
            if path.is_empty() {
                "the repository root"
            } else {
                path
            }
        )));
    }
    let mut agent = deps::open_agent(&dir)?;
    agent._scratch.push(tmp);
    Ok(agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gh(o: &str, r: &str, g: &str, p: &str) -> Reference {
        Reference::GitHub {
            owner: o.into(),
            repo: r.into(),
            git_ref: g.into(),
            path: p.into(),
        }
    }

    #[test]
    fn parsing() {
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path();
        std::fs::create_dir(cwd.join("mine")).unwrap();
        std::fs::create_dir_all(cwd.join("acme/local")).unwrap();
        assert_eq!(
            parse("mine", cwd).unwrap(),
            Reference::Local(cwd.join("mine"))
        );
        assert!(parse("absent", cwd).is_err());
        assert_eq!(
            parse("x.zot", cwd).unwrap(),
            Reference::Local(cwd.join("x.zot"))
        );
        assert_eq!(
            parse("./y", cwd).unwrap(),
            Reference::Local(cwd.join("./y"))
        );
        assert_eq!(
            parse("acme/local", cwd).unwrap(),
            Reference::Local(cwd.join("acme/local"))
        );
        assert_eq!(
            parse("acme/agents", cwd).unwrap(),
            gh("acme", "agents", "HEAD", "")
        );
        assert_eq!(
            parse("acme/agents/rev/go", cwd).unwrap(),
            gh("acme", "agents", "HEAD", "rev/go")
        );
        assert!(parse("Acme/agents", cwd).is_err());
        assert!(parse("acme/../x", cwd).is_err());
        assert_eq!(
            parse("https://github.com/acme/agents/reviewer", cwd).unwrap(),
            gh("acme", "agents", "HEAD", "reviewer")
        );
        assert_eq!(
            parse("https://github.com/acme/agents/tree/v1.2/a/b", cwd).unwrap(),
            gh("acme", "agents", "v1.2", "a/b")
        );
        assert!(parse("https://github.com/acme/agents/tree/main/../x", cwd).is_err());
        assert!(parse("https://example.com/a/b", cwd).is_err());
        assert!(parse("https://github.com/a/b?x=1", cwd).is_err());
        assert!(parse("https://github.com/a/b%2F..", cwd).is_err());
        assert_eq!(
            parse(
                "https://github.com/acme/agents/releases/download/v1.2/rev.zot",
                cwd
            )
            .unwrap(),
            Reference::GitHubRelease {
                owner: "acme".into(),
                repo: "agents".into(),
                tag: "v1.2".into(),
                file: "rev.zot".into(),
            }
        );
        for bad in [
            "https://github.com/acme/agents/releases",
            "https://github.com/acme/agents/releases/download/v1/rev.tar.gz",
            "https://github.com/acme/agents/releases/download/v1/a/rev.zot",
            "https://github.com/acme/agents/releases/tag/v1",
        ] {
            assert!(parse(bad, cwd).is_err(), "{bad}");
        }
    }
}
