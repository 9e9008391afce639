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
    let canon = |p: PathBuf| crate::canon::canonicalize(&p).unwrap_or(p);
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

/// The real uid's home directory of the password database, as it stands
/// there (looked up once per process: each lookup reads the NSS
/// configuration and the database).
pub fn passwd_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let uid = nix::unistd::getuid();
        files_first()
            .then(|| std::fs::read("/etc/passwd").ok())
            .flatten()
            .and_then(|db| passwd_file_dir(&db, uid.as_raw()))
            .or_else(|| {
                nix::unistd::User::from_uid(uid)
                    .ok()
                    .flatten()
                    .map(|u| u.dir)
            })
    })
    .clone()
}

/// Whether the C library asks `/etc/passwd` first: then an entry found
/// there is the answer it gives too, read without its lookup (which tries
/// the name service cache daemon's socket twice and parses the whole NSS
/// configuration on every process start).
fn files_first() -> bool {
    std::fs::read("/etc/nsswitch.conf").is_ok_and(|c| nsswitch_files_first(&c))
}

/// `passwd:` of an `nsswitch.conf` names `files` first (every such line,
/// whichever the C library takes).
fn nsswitch_files_first(conf: &[u8]) -> bool {
    let conf = String::from_utf8_lossy(conf);
    let mut lines = conf
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix("passwd:"))
        .peekable();
    lines.peek().is_some()
        && lines.all(|sources| sources.split_whitespace().next() == Some("files"))
}

/// The home directory of `uid` in a `passwd` file (`name:pw:uid:gid:gecos:
/// dir:shell`); `None` if it has no such entry, or an entry of the old
/// `+`/`-` compat syntax comes first (the C library's reading is then
/// asked).
fn passwd_file_dir(db: &[u8], uid: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let uid = uid.to_string();
    for line in db.split(|&b| b == b'\n') {
        if line.starts_with(b"+") || line.starts_with(b"-") {
            return None;
        }
        let f: Vec<&[u8]> = line.split(|&b| b == b':').collect();
        if f.len() == 7 && f[2] == uid.as_bytes() {
            return Some(PathBuf::from(std::ffi::OsStr::from_bytes(f[5])));
        }
    }
    None
}

/// [`passwd_dir`] when it is a home (absolute, not `/`).
pub fn passwd_home() -> Option<PathBuf> {
    passwd_dir().filter(|d| d.is_absolute() && d != Path::new("/"))
}

/// The directories of the caller's `PATH` as the shell resolves them: an
/// absolute entry as it is, a relative one (`.`, `bin`, `node_modules/.bin`)
/// and an empty component (the current directory) against each of `cwds`
/// (the directory the command starts in, and the caller's own). Canonical
/// as far as they exist, missing ones included (they can be made later).
pub fn exec_path_entries(env: &[(OsString, OsString)], cwds: &[PathBuf]) -> Vec<PathBuf> {
    let Some(path) = var(env, "PATH") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in std::env::split_paths(path) {
        // bash expands a leading `~/` of an entry when it searches.
        let tilde = d
            .to_str()
            .and_then(|t| t.strip_prefix("~/"))
            .map(str::to_string);
        let candidates: Vec<PathBuf> = if d.is_absolute() {
            vec![d]
        } else if let Some(rest) = tilde {
            homes(env).iter().map(|h| h.join(&rest)).collect()
        } else {
            cwds.iter().map(|c| c.join(&d)).collect()
        };
        for c in candidates {
            let c = crate::gitconfig::canonical_prefix(&c);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The `PATH` directories (see [`exec_path_entries`]) inside one of
/// `roots` that can be kept read-only: not a root itself, nor a directory
/// holding a root or one of `cwds` (those stay writable; see
/// [`exec_path_watched`]). Missing ones are included: their creation is
/// blocked.
pub fn exec_path_dirs(
    env: &[(OsString, OsString)],
    roots: &[PathBuf],
    cwds: &[PathBuf],
) -> Vec<PathBuf> {
    // Nothing writable (read-only, danger-full-access): nothing to protect,
    // and no PATH entry to resolve.
    if roots.is_empty() {
        return Vec::new();
    }
    exec_path_entries(env, cwds)
        .into_iter()
        .filter(|c| roots.iter().any(|r| c.starts_with(r)))
        .filter(|c| !holds_writable(c, roots, cwds))
        .filter(|c| std::fs::metadata(c).map_or(true, |m| m.is_dir()))
        .collect()
}

fn holds_writable(c: &Path, roots: &[PathBuf], cwds: &[PathBuf]) -> bool {
    roots.iter().chain(cwds.iter()).any(|r| r.starts_with(c))
}

/// The `PATH` directories inside `roots` that must stay writable (a root,
/// or a directory holding a root or one of `cwds`, e.g. `.`): an
/// executable that appears there during the run is renamed aside after it
/// ([`quarantine_executables`]).
pub fn exec_path_watched(
    env: &[(OsString, OsString)],
    roots: &[PathBuf],
    cwds: &[PathBuf],
) -> Vec<PathBuf> {
    if roots.is_empty() {
        return Vec::new();
    }
    exec_path_entries(env, cwds)
        .into_iter()
        .filter(|c| roots.iter().any(|r| c.starts_with(r)) && holds_writable(c, roots, cwds))
        .collect()
}

/// The executables of a directory at one moment: name, and what tells a
/// replaced or changed file apart.
pub type ExecSnapshot = Vec<(OsString, (u64, u64, i64, i64, u32))>;

fn executables(dir: &Path) -> ExecSnapshot {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        // A symlink counts: it may lead to an executable.
        let exec = m.file_type().is_symlink() || (m.is_file() && m.mode() & 0o111 != 0);
        if exec {
            out.push((
                e.file_name(),
                (m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.mode()),
            ));
        }
    }
    out.sort();
    out
}

/// Snapshots of `dirs` at launch, for [`quarantine_executables`].
pub fn snapshot_executables(dirs: &[PathBuf]) -> Vec<(PathBuf, ExecSnapshot)> {
    dirs.iter().map(|d| (d.clone(), executables(d))).collect()
}

/// After a run: every executable (or symlink) in a watched `PATH`
/// directory that is new or changed since `before`, renamed aside to
/// `<name>.zot-quarantine-<unix time>` (not executable any more) so that
/// a shell on the host does not run it instead of a command.
pub fn quarantine_executables(before: &[(PathBuf, ExecSnapshot)]) -> Vec<(PathBuf, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut out = Vec::new();
    for (dir, snap) in before {
        for (name, id) in executables(dir) {
            if snap.iter().any(|(n, i)| *n == name && *i == id) {
                continue;
            }
            let from = dir.join(&name);
            let mut to_name = name.clone();
            to_name.push(format!(".zot-quarantine-{stamp}"));
            let to = dir.join(to_name);
            if std::fs::rename(&from, &to).is_ok() {
                if let Ok(m) = std::fs::symlink_metadata(&to) {
                    if m.is_file() {
                        let _ = std::fs::set_permissions(
                            &to,
                            std::fs::Permissions::from_mode(m.permissions().mode() & !0o111),
                        );
                    }
                }
                out.push((from, to));
            }
        }
    }
    out
}

/// git's system and global configuration files: every candidate git may
/// read (`GIT_CONFIG_SYSTEM` and `/etc/gitconfig`; `GIT_CONFIG_GLOBAL`,
/// `$XDG_CONFIG_HOME/git/config`, `~/.config/git/config` and
/// `~/.gitconfig` of each home), whatever `GIT_CONFIG_NOSYSTEM` says now:
/// a later git on the host may run without these variables.
pub fn git_global_configs(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let abs = |k: &str| var(env, k).map(PathBuf::from).filter(|p| p.is_absolute());
    out.extend(abs("GIT_CONFIG_SYSTEM"));
    out.push(PathBuf::from("/etc/gitconfig"));
    out.extend(abs("GIT_CONFIG_GLOBAL"));
    if let Some(x) = abs("XDG_CONFIG_HOME") {
        out.push(x.join("git/config"));
    }
    for h in homes(env) {
        out.push(h.join(".config/git/config"));
        out.push(h.join(".gitconfig"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwd_read_directly_only_where_the_c_library_reads_it_first() {
        use super::{nsswitch_files_first as first, passwd_file_dir as dir};
        assert!(first(b"# x\npasswd:         files systemd\ngroup: files\n"));
        assert!(first(b"passwd: files"));
        assert!(!first(b"passwd: sss files\n"));
        assert!(!first(b"passwd: compat\n"));
        assert!(!first(b"group: files\n"));
        assert!(!first(b"passwd: files\npasswd: ldap files\n"));
        assert!(!first(b"passwd: ldap\npasswd: files\n"));
        assert!(!first(b"#passwd: files\n"));
        let db = b"root:x:0:0:root:/root:/bin/bash\nu:x:1000:1000:U,,,:/home/u:/bin/sh\nbad:line\n";
        assert_eq!(dir(db, 1000), Some("/home/u".into()));
        assert_eq!(dir(db, 0), Some("/root".into()));
        assert_eq!(dir(db, 1001), None);
        // A uid that only starts like another, and the compat syntax.
        assert_eq!(dir(b"a:x:10000:1:a:/a:/s\n", 1000), None);
        assert_eq!(dir(b"+@admins:::::\nu:x:1000:1:u:/home/u:/s\n", 1000), None);
    }

    use super::*;
    use std::fs;

    fn env(path: &str, home: &Path) -> Vec<(OsString, OsString)> {
        vec![
            ("PATH".into(), path.into()),
            ("HOME".into(), home.as_os_str().to_os_string()),
        ]
    }

    #[test]
    fn path_entries_resolve_like_a_shell() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let ws = root.join("ws");
        let host_cwd = root.join("ws/sub");
        fs::create_dir_all(ws.join("bin")).unwrap();
        fs::create_dir_all(&host_cwd).unwrap();
        let home = ws.clone();
        let e = env("bin:./tools/../x:~/.local/bin::/usr/bin:/nowhere", &home);
        let roots = vec![ws.clone()];
        let cwds = vec![ws.clone(), host_cwd.clone()];
        let ro = exec_path_dirs(&e, &roots, &cwds);
        for want in [
            ws.join("bin"),
            ws.join("x"),
            ws.join(".local/bin"),
            host_cwd.join("bin"),
            host_cwd.join("x"),
        ] {
            assert!(ro.contains(&want), "{want:?} not in {ro:?}");
        }
        // The roots and the working directories stay writable: watched.
        assert!(!ro.contains(&ws) && !ro.contains(&host_cwd), "{ro:?}");
        assert_eq!(
            exec_path_watched(&e, &roots, &cwds),
            vec![ws.clone(), host_cwd]
        );
        assert!(exec_path_dirs(&e, &[], &cwds).is_empty());
    }

    #[test]
    fn executables_planted_in_a_watched_dir_are_renamed_aside() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().to_path_buf();
        let exe = |p: &Path| {
            fs::write(p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe(&d.join("kept"));
        fs::write(d.join("data.txt"), "x").unwrap();
        let before = snapshot_executables(std::slice::from_ref(&d));
        exe(&d.join("ls"));
        fs::write(d.join("notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/bin/true", d.join("cat")).unwrap();
        let q = quarantine_executables(&before);
        let from: Vec<&PathBuf> = q.iter().map(|(f, _)| f).collect();
        assert_eq!(from.len(), 2, "{q:?}");
        assert!(from.contains(&&d.join("ls")) && from.contains(&&d.join("cat")));
        assert!(d.join("kept").exists() && d.join("notes.txt").exists());
        assert!(!d.join("ls").exists());
        let (_, to) = q.iter().find(|(f, _)| *f == d.join("ls")).unwrap();
        assert_eq!(fs::metadata(to).unwrap().permissions().mode() & 0o111, 0);
    }
}
