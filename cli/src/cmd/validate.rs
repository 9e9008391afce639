//! `zot validate REF [--json]`: check an agent package (agent.toml folder or
//! ZIP, or a zotfile directory or .zot archive) and list every diagnostic.
//! Exit 0 when valid, 1 when not.

use std::path::{Path, PathBuf};

use serde::Serialize;
use zot_package::agent_toml;

#[derive(clap::Args)]
pub struct Args {
    /// An agent.toml folder or ZIP, or a zotfile directory or .zot archive
    pub reference: PathBuf,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Output {
    valid: bool,
    format: &'static str,
    name: Option<String>,
    files: usize,
    diagnostics: Vec<Diag>,
}

#[derive(Serialize)]
struct Diag {
    path: String,
    message: String,
}

/// True when `path` is a zotfile: a directory with `manifest.json`, or a
/// file that is not a ZIP (a .zot archive).
fn is_zotfile(path: &Path) -> bool {
    if path.is_dir() {
        path.join(zot_policy::zotfile::MANIFEST_FILE).exists()
    } else {
        !agent_toml::is_zip_file(path)
    }
}

fn one(format: &'static str, message: String) -> Output {
    Output {
        valid: false,
        format,
        name: None,
        files: 0,
        diagnostics: vec![Diag {
            path: String::new(),
            message,
        }],
    }
}

fn check(path: &Path) -> Output {
    // `zot validate pkg/agent.toml` (or manifest.json) means the package.
    let is_manifest = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        n == zot_policy::zotfile::MANIFEST_FILE
            || zot_policy::agent_toml::ManifestFormat::from_file_name(n).is_some()
    });
    if is_manifest && path.is_file() {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        return check(parent);
    }
    if std::fs::symlink_metadata(path).is_err() {
        return one("unknown", format!("{} does not exist", path.display()));
    }
    if path.is_dir() && !is_zotfile(path) && !agent_toml::detect(path) {
        return one(
            "unknown",
            "no manifest at the package root: expected manifest.json (zotfile) or one of agent.toml, agent.yaml, agent.yml, agent.json, agent.md".into(),
        );
    }
    if is_zotfile(path) {
        return match zot_package::open(path) {
            Ok(agent) => {
                let diagnostics: Vec<Diag> = agent
                    .skill_problems()
                    .into_iter()
                    .map(|d| Diag {
                        path: d.path,
                        message: d.message,
                    })
                    .collect();
                Output {
                    valid: diagnostics.is_empty(),
                    format: "zotfile",
                    name: Some(agent.manifest.name.clone()),
                    files: agent.files.len(),
                    diagnostics,
                }
            }
            Err(zot_package::PackageError::Manifest { source, .. }) => Output {
                valid: false,
                format: "zotfile",
                name: None,
                files: 0,
                diagnostics: source
                    .errors
                    .iter()
                    .map(|d| Diag {
                        path: if d.path.is_empty() {
                            "manifest.json".into()
                        } else {
                            format!("manifest.json: {}", d.path)
                        },
                        message: d.message.clone(),
                    })
                    .collect(),
            },
            Err(e) => one("zotfile", zot_policy::diagnostic::error_chain(&e)),
        };
    }
    let report = agent_toml::validate(path);
    Output {
        valid: report.valid(),
        format: "agent.toml",
        name: report.name.clone(),
        files: report.files,
        diagnostics: report
            .diagnostics
            .iter()
            .map(|d| Diag {
                path: d.path.clone(),
                message: d.message.clone(),
            })
            .collect(),
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let out = check(&args.reference);
    let text = if args.json {
        serde_json::to_string_pretty(&out)? + "\n"
    } else {
        let mut t = String::new();
        for d in &out.diagnostics {
            if d.path.is_empty() {
                t.push_str(&format!("{}\n", d.message));
            } else {
                t.push_str(&format!("{}: {}\n", d.path, d.message));
            }
        }
        let name = out.name.as_deref().unwrap_or("(unnamed)");
        if out.valid {
            t.push_str(&format!(
                "valid {} package {name} ({} files)\n",
                out.format, out.files
            ));
        } else {
            let n = out.diagnostics.len();
            t.push_str(&format!(
                "invalid {} package {name}: {n} problem{}\n",
                out.format,
                if n == 1 { "" } else { "s" }
            ));
        }
        t
    };
    super::inspect::emit(&text)?;
    Ok(if out.valid { 0 } else { super::FAILURE })
}
