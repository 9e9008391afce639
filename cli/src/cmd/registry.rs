//! What the registry and installed-agent commands share: the zot home,
//! the config, the signature rules, progress bars.

use std::path::PathBuf;

use zot_agent::reference::Signatures;
use zot_package::signature::KeySet;

/// The state every registry command starts from.
pub struct Ctx {
    pub home: PathBuf,
    pub config: zot_policy::config::Config,
    pub keys: KeySet,
    /// `--require-signature` or `[trust] require_signature`.
    pub required: bool,
}

impl Ctx {
    pub fn load(require_signature: bool) -> anyhow::Result<Ctx> {
        let home = zot_agent::home::zot_home()?;
        let config = zot_agent::config::load()?.config;
        let keys = zot_agent::trust::trusted_keys(&home)?;
        let required = require_signature || config.trust.require_signature;
        Ok(Ctx {
            home,
            config,
            keys,
            required,
        })
    }

    pub fn sigs(&self) -> Signatures<'_> {
        Signatures {
            keys: &self.keys,
            required: self.required,
        }
    }
}

/// A progress sink drawing a byte bar on a terminal (stderr).
pub fn bar() -> impl FnMut(&zot_agent::ui::Progress) -> Result<(), zot_agent::RunError> {
    let mut slot: Option<crate::ui::progress::Bytes> = None;
    move |p| {
        crate::ui::progress::Bytes::follow(&mut slot, p);
        Ok(())
    }
}

/// The first 12 hex digits of a `sha256:` digest, for tables.
pub fn short(d: &str) -> String {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    format!("sha256:{}", &hex[..hex.len().min(12)])
}

/// Print the loader and signature warnings.
pub fn warn_all(w: &[String]) {
    for w in w {
        eprintln!("zot: warning: {w}");
    }
}

/// When `reference` is a registry reference (and no local path of that
/// name exists), pull it into a scratch dir (removed when the value is
/// dropped) and say what it resolved to on stderr.
pub fn pull_for_local(reference: &str) -> anyhow::Result<Option<zot_agent::store::Fetched>> {
    if !zot_agent::oci::looks_like(reference) || std::path::Path::new(reference).exists() {
        return Ok(None);
    }
    let config = zot_agent::config::load()?.config;
    let keys = zot_agent::trust::trusted_keys(&zot_agent::home::zot_home()?)?;
    let cwd = std::env::current_dir()?;
    let mut progress = bar();
    let f = zot_agent::store::fetch(reference, &cwd, &config, &keys, &mut progress)?;
    if let Some(d) = &f.manifest_digest {
        eprintln!(
            "zot: {reference} resolved to {}@{d}",
            f.source.split('@').next().unwrap_or(&f.source)
        );
    }
    Ok(Some(f))
}
