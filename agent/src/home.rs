//! Where zot keeps state: `$ZOT_HOME`, else `$XDG_STATE_HOME/zot`, else
//! `~/.local/state/zot`; per-agent data, consent and session directories.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::RunError;

/// Resolve zot's state directory from the environment.
pub fn zot_home() -> Result<PathBuf, RunError> {
    zot_home_from(|k| std::env::var_os(k))
}

/// Same as [`zot_home`], with the environment passed in (for tests). The
/// rule itself is [`zot_supervisor::journal::state_dir_from`] (the
/// supervisor journals placeholders there).
pub fn zot_home_from(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, RunError> {
    zot_supervisor::journal::state_dir_from(get).map_err(RunError::Home)
}

/// The per-agent layout under a zot home.
#[derive(Debug, Clone)]
pub struct AgentHome {
    pub home: PathBuf,
    pub name: String,
}

impl AgentHome {
    pub fn new(home: PathBuf, name: &str) -> Self {
        AgentHome {
            home,
            name: name.to_string(),
        }
    }
    pub fn agent_dir(&self) -> PathBuf {
        self.home.join("agents").join(&self.name)
    }
    pub fn data_dir(&self) -> PathBuf {
        self.agent_dir().join("data")
    }
    pub fn consent_dir(&self) -> PathBuf {
        self.agent_dir().join("consents")
    }
    /// The interactive mode's input history (lines typed at the prompt).
    pub fn history_file(&self) -> PathBuf {
        self.agent_dir().join("history")
    }
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions").join("agents").join(&self.name)
    }
}

/// Create `dir` and missing parents, the leaf with mode 0700 (existing
/// directories made by zot are tightened to 0700 too).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Write `bytes` to `path` atomically: a 0600 temp file in the same
/// directory, fsync, rename over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("path has no parent"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k| {
            v.iter()
                .find(|(a, _)| a == k)
                .map(|(_, b)| OsString::from(b))
        }
    }

    #[test]
    fn resolution_order() {
        let e = env(&[("ZOT_HOME", "/z"), ("XDG_STATE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(zot_home_from(e).unwrap(), PathBuf::from("/z"));
        let e = env(&[("ZOT_HOME", ""), ("XDG_STATE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(zot_home_from(e).unwrap(), PathBuf::from("/x/zot"));
        let e = env(&[("HOME", "/h")]);
        assert_eq!(
            zot_home_from(e).unwrap(),
            PathBuf::from("/h/.local/state/zot")
        );
        assert!(zot_home_from(env(&[])).is_err());
        assert!(zot_home_from(env(&[("ZOT_HOME", "rel")])).is_err());
    }

    #[test]
    fn atomic_write_is_private() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c/r.json");
        private_dir(p.parent().unwrap()).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(p.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
    }
}
