//! Reading the user config file. Its location rule, format and validation
//! are `zot_policy::config` (shared with every crate that needs a setting);
//! this module only reads the file.

use std::path::{Path, PathBuf};

use zot_policy::config::{self, Config};

use crate::RunError;

/// Largest config file read.
const MAX_BYTES: u64 = 1 << 20;

/// The config in effect.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Where it is looked for (`None`: no directory could be determined).
    pub path: Option<PathBuf>,
    /// Whether that file exists (a missing file is the default config).
    pub exists: bool,
    pub config: Config,
}

/// Load the config file from where the environment says it is.
pub fn load() -> Result<Loaded, RunError> {
    load_path(config::path_from(|k| std::env::var_os(k)))
}

/// Load the config at `path` (missing: defaults).
pub fn load_path(path: Option<PathBuf>) -> Result<Loaded, RunError> {
    let Some(p) = path else {
        return Ok(Loaded::default());
    };
    let text = match read(&p) {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Ok(Loaded {
                path: Some(p),
                exists: false,
                config: Config::default(),
            })
        }
        Err(e) => return Err(e),
    };
    let config = config::parse(&text).map_err(|diags| RunError::Config {
        path: p.clone(),
        message: diags
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    })?;
    Ok(Loaded {
        path: Some(p),
        exists: true,
        config,
    })
}

fn read(p: &Path) -> Result<Option<String>, RunError> {
    use std::io::Read;
    let f = match std::fs::File::open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunError::io(format!("config {}", p.display()), e)),
    };
    let mut bytes = Vec::new();
    f.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| RunError::io(format!("config {}", p.display()), e))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(RunError::Config {
            path: p.to_path_buf(),
            message: "larger than 1 MiB".into(),
        });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| RunError::Config {
            path: p.to_path_buf(),
            message: "not UTF-8 text".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_bad_and_good() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.toml");
        let l = load_path(Some(p.clone())).unwrap();
        assert!(!l.exists && l.config == Config::default());
        std::fs::write(&p, "[defaults]\nprovder = \"openai\"\n").unwrap();
        let e = load_path(Some(p.clone())).unwrap_err().to_string();
        assert!(
            e.contains(&p.display().to_string())
                && e.contains("defaults.provder")
                && e.contains("did you mean `provider`"),
            "{e}"
        );
        std::fs::write(&p, "[defaults]\nprovider = \"anthropic\"\n").unwrap();
        let l = load_path(Some(p)).unwrap();
        assert_eq!(l.config.defaults.provider.as_deref(), Some("anthropic"));
    }
}
