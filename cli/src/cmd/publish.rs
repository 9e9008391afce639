//! `zot publish SRC REF`: push an agent to an OCI registry (see
//! docs/registries.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;
use zot_agent::oci;

#[derive(clap::Args)]
#[command(after_help = "\
SRC is an agent directory (packed first) or a .zot archive. REF is \
REGISTRY/REPO[:TAG] (default tag: latest). The archive is pushed as one \
layer of an OCI 1.1 artifact (artifactType application/vnd.zot.agent.v1); \
blobs the registry has are not sent again. A signature (SRC.minisig next to \
a .zot, or made with --key) is pushed as a referrer of the manifest. \
Credentials come from the Docker config (docker login).")]
pub struct Args {
    /// An agent directory or a .zot archive
    pub src: PathBuf,
    /// Where to push: REGISTRY/REPO[:TAG]
    pub reference: String,
    /// Sign the archive with this secret key and push the signature
    #[arg(long, short = 'k', value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The source repository URL (annotation org.opencontainers.image.source)
    #[arg(long, value_name = "URL")]
    pub source: Option<String>,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let r = oci::parse(&a.reference).map_err(|e| anyhow::anyhow!("reference {e}"))?;
    let config = zot_agent::config::load()?.config;
    let scratch = tempfile::Builder::new()
        .prefix("zot-publish-")
        .tempdir()
        .context("creating a temporary directory")?;
    let meta = std::fs::metadata(&a.src).with_context(|| format!("{}", a.src.display()))?;
    let (archive, mut sig) = if meta.is_dir() {
        let out = scratch.path().join("agent.zot");
        zot_package::pack(&a.src, Some(&out))
            .with_context(|| format!("packing {}", a.src.display()))?;
        (out, None)
    } else {
        let s = zot_package::signature::signature_path(&a.src);
        (a.src.clone(), s.is_file().then_some(s))
    };
    let summary = zot_package::inspect(&archive)
        .with_context(|| format!("{} is not a valid .zot archive", a.src.display()))?;
    let m = &summary.manifest;
    let version = m.version.clone().filter(|v| !v.is_empty());
    let title = match &version {
        Some(v) => format!("{}-{v}.zot", m.name),
        None => format!("{}.zot", m.name),
    };
    // A packed directory is signed under its published file name.
    let archive = if meta.is_dir() {
        let named = scratch.path().join(&title);
        std::fs::rename(&archive, &named).context("naming the packed archive")?;
        named
    } else {
        archive
    };
    if let Some(k) = &a.key {
        let key = super::sign::unlock_key(k)?;
        let out = scratch.path().join(format!("{title}.minisig"));
        zot_package::sign(&archive, &out, &key)
            .with_context(|| format!("signing {}", a.src.display()))?;
        sig = Some(out);
    }
    if let Some(s) = &sig {
        zot_package::signature::Signature::read(s)
            .with_context(|| format!("signature {}", s.display()))?;
    }

    let mut ann = BTreeMap::new();
    ann.insert(oci::TITLE.to_string(), m.name.clone());
    if let Some(v) = &version {
        ann.insert(oci::VERSION.to_string(), v.clone());
    }
    if let Some(d) = m.description.clone().filter(|d| !d.is_empty()) {
        ann.insert(oci::DESCRIPTION.to_string(), d);
    }
    if let Some(l) = m.license.clone().filter(|l| !l.is_empty()) {
        ann.insert(oci::LICENSES.to_string(), l);
    }
    if let Some(s) = a.source.clone().filter(|s| !s.is_empty()) {
        ann.insert(oci::SOURCE.to_string(), s);
    }
    let mut progress = super::registry::bar();
    let p = oci::push(
        &r,
        &config,
        &archive,
        sig.as_deref(),
        &title,
        ann,
        &mut progress,
    )?;
    let pinned = r.pinned(&p.manifest_digest);
    if a.json {
        let o = json!({
            "ok": true,
            "reference": r.to_string(),
            "pinned": pinned,
            "digest": p.manifest_digest,
            "archive_digest": p.archive_digest,
            "size": p.size,
            "name": m.name,
            "version": version,
            "signature": p.signature_digest,
            "signature_fallback": p.signature_fallback,
            "blobs_skipped": p.blobs_skipped,
        });
        super::inspect::emit(&format!("{}\n", serde_json::to_string_pretty(&o)?))?;
    } else {
        let mut out = format!(
            "pushed {} {} to {r}\ndigest {}\n",
            m.name,
            version.as_deref().unwrap_or(""),
            p.manifest_digest
        )
        .replace("  ", " ");
        if let Some(s) = &p.signature_digest {
            out.push_str(&format!(
                "signature {s}{}\n",
                if p.signature_fallback {
                    " (referrers tag schema)"
                } else {
                    ""
                }
            ));
        }
        out.push_str(&format!("run it with: zot run {pinned}\n"));
        super::inspect::emit(&out)?;
    }
    Ok(0)
}
