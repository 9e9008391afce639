//! What the supervisor reads of the invoking user and environment: the
//! homes to protect, the `PATH` directories, git's global config files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn var<'a>(env: &'a [(OsString, OsString)], k: &str) -> Option<&'a OsString> {
    env.iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// The homes of the invoking user: `$HOME` (when absolute), then the home
/// of the real uid in the password database (when different). Canonical
/// where they exist.
pub fn homes(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    let mut out = Vec::new();
    if let Some(h) = var(env, "HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
    {
        out.push(canon(h));
    }
    if let Some(h) = passwd_home() {
        let h = canon(h);
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// The real uid's home directory of the password database.
pub fn passwd_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .filter(|d| d.is_absolute() && d != Path::new("/"))
}

/// The directories of the caller's `PATH` (absolute entries, canonical)
/// that lie inside one of `roots`.
pub fn exec_path_dirs(env: &[(OsString, OsString)], roots: &[PathBuf]) -> Vec<PathBuf> {
    // Nothing writable (read-only, danger-full-access): nothing to protect,
    // and no PATH entry to resolve.
    if roots.is_empty() {
        return Vec::new();
    }
    let Some(path) = var(env, "PATH") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in std::env::split_paths(path) {
        if !d.is_absolute() {
            continue;
        }
        let Ok(c) = std::fs::canonicalize(&d) else {
            continue;
        };
        if roots.iter().any(|r| c.starts_with(r)) && c.is_dir() && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// git's global configuration files (`core.hooksPath` may be set there).
pub fn git_global_configs(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = var(env, "GIT_CONFIG_GLOBAL") {
        out.push(PathBuf::from(p));
    }
    for h in homes(env) {
        out.push(h.join(".gitconfig"));
        out.push(h.join(".config/git/config"));
    }
    if let Some(x) = var(env, "XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        out.push(x.join("git/config"));
    }
    out.push(PathBuf::from("/etc/gitconfig"));
    out
}
