//! The one path normaliser, and the path rules built on it: which paths
//! are a system or home directory (recursive removal), a device, a system
//! file or a start-up file (writes).
//!
//! Paths are normalised lexically, as the kernel would resolve them if no
//! component were a symlink: `//`, `/./`, `a/../` collapse, `~`, `~user`,
//! `$HOME` and `${HOME}` become the home directory (modelled as
//! `/home/USER`, so `~/..` is `/home` and `~/../..` is `/`), and a relative
//! path that climbs three or more levels (`../../../etc`) is judged as if
//! it reached `/`, since the working directory is rarely deeper than that.

use std::borrow::Cow;

use super::word::Word;

/// Top-level directories whose recursive removal is on the danger list.
const SYSTEM_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "nix",
    "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "usr", "var",
];

/// Top-level directories whose files belong to the system: writing one
/// (truncating, appending) is on the danger list.
const SYSTEM_FILE_DIRS: &[&str] = &[
    "bin", "boot", "etc", "lib", "lib32", "lib64", "libx32", "nix", "opt", "root", "sbin", "snap",
    "srv", "sys", "usr", "var",
];

/// Files in a home directory that run code when a shell, ssh, git or the
/// desktop starts, or that grant access.
const HOME_START_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".xinitrc",
    ".xprofile",
    ".xsession",
    ".pam_environment",
    ".gitconfig",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".inputrc",
    ".vimrc",
    ".exrc",
];
/// Directories in a home directory whose files do the same.
const HOME_START_DIRS: &[&[&str]] = &[
    &[".ssh"],
    &[".gnupg"],
    &[".config", "autostart"],
    &[".config", "systemd"],
    &[".config", "fish"],
    &[".config", "git"],
    &[".local", "bin"],
    &["bin"],
];

/// A lexically normalised path (its components borrowed from the text when
/// it holds no `"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NormPath<'t> {
    /// Absolute (or judged as absolute) components. Home is
    /// `["home", HOME_USER]` for `~` (the user's own home) and
    /// `["home", user]` for `~user`.
    pub parts: Vec<Cow<'t, str>>,
    /// The path is relative: `parts` are relative to the working directory.
    pub relative: bool,
    /// A relative path that only climbs (`..`, `../..`): it names an
    /// ancestor of the working directory.
    pub only_up: bool,
    /// The path started at a home directory.
    pub from_home: bool,
}

/// Stands for the user's own name in `~`.
pub(crate) const HOME_USER: &str = "\u{0}self";

/// Normalises `text` (a word after quote removal, or the source text of a
/// word with expansions: `$HOME`, `"$HOME"/x`, `${HOME}` are understood).
pub(crate) fn normalize(text: &str) -> NormPath<'_> {
    if text.contains('"') {
        let unquoted = text.replace('"', "");
        let n = normalize_unquoted(&unquoted);
        return NormPath {
            parts: n
                .parts
                .into_iter()
                .map(|p| Cow::Owned(p.into_owned()))
                .collect(),
            ..n
        };
    }
    normalize_unquoted(text)
}

fn normalize_unquoted(t: &str) -> NormPath<'_> {
    let mut parts: Vec<Cow<'_, str>> = Vec::new();
    let mut relative = false;
    let mut from_home = false;
    let rest = if let Some(r) = ["$HOME", "${HOME}"].iter().find_map(|h| {
        t.strip_prefix(h)
            .filter(|r| r.is_empty() || r.starts_with('/'))
    }) {
        from_home = true;
        parts.extend([Cow::Borrowed("home"), Cow::Borrowed(HOME_USER)]);
        r
    } else if let Some(r) = t.strip_prefix('~') {
        let (user, r) = match r.find('/') {
            Some(i) => (&r[..i], &r[i..]),
            None => (r, ""),
        };
        from_home = true;
        if user.is_empty() || user == "+" || user == "-" {
            parts.extend([Cow::Borrowed("home"), Cow::Borrowed(HOME_USER)]);
        } else if user == "root" {
            parts.push(Cow::Borrowed("root"));
        } else {
            parts.extend([Cow::Borrowed("home"), Cow::Borrowed(user)]);
        }
        r
    } else if t.starts_with('/') {
        t
    } else {
        relative = true;
        t
    };
    let mut climbed = 0usize;
    for p in rest.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && relative {
                    climbed += 1;
                }
            }
            p => parts.push(Cow::Borrowed(p)),
        }
    }
    // `/proc/PID/root` (and `/proc/self/root`, `/proc/*/root`) is `/` seen
    // through that process.
    while !relative && parts.len() >= 3 && parts[0] == "proc" && parts[2] == "root" {
        parts.drain(..3);
    }
    let only_up = relative && climbed > 0 && parts.is_empty();
    if relative && climbed >= 3 {
        // Deep enough to reach `/` from most working directories.
        relative = false;
    }
    NormPath {
        parts,
        relative,
        only_up,
        from_home,
    }
}

fn glob(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

fn is_home(parts: &[Cow<'_, str>]) -> bool {
    matches!(parts, [h, _] if h == "home") || matches!(parts, [r] if r == "root")
}

/// `/`, home, a home's parent, a top-level system directory, or a glob
/// directly in one of them (`/*`, `/usr/*`, `~/*`); also a relative path
/// that only climbs (`..`, `../..`). The danger list protects these from
/// recursive removal, `chmod -R` and the like.
pub(crate) fn is_dangerous_path(w: &Word) -> bool {
    let n = normalize(&w.text);
    if n.only_up {
        return true;
    }
    if n.relative {
        return false;
    }
    let p = &n.parts;
    let sys = |s: &str| SYSTEM_DIRS.contains(&s) || glob(s);
    match p.as_slice() {
        [] => true,
        [one] => sys(one),
        [one, two] => (sys(one) && glob(two)) || is_home(p),
        // Every user's files (`/home/*/.ssh`).
        [one, two, ..] if one == "home" && glob(two) => true,
        [one, _, three] if one == "home" => glob(three) || three == "." || three == "..",
        _ => false,
    }
}

/// A glob over a home or system directory (`~/*`, `/etc/*`): removing it
/// wipes the directory even without `-r`.
pub(crate) fn is_dangerous_glob(w: &Word) -> bool {
    w.multi && is_dangerous_path(w) && normalize(&w.text).parts.last().is_some_and(|l| glob(l))
}

/// Does `text` name a device that writing to would damage (a disk,
/// memory, the kernel's sysrq trigger)?
pub(crate) fn is_device_write_target(text: &str) -> bool {
    let n = normalize(text);
    if n.relative {
        return false;
    }
    let p: Vec<&str> = n.parts.iter().map(|p| p.as_ref()).collect();
    match p.as_slice() {
        ["dev", dev] => !matches!(
            *dev,
            "null"
                | "zero"
                | "full"
                | "random"
                | "urandom"
                | "tty"
                | "stdout"
                | "stderr"
                | "stdin"
                | "ptmx"
        ),
        ["dev", "fd" | "pts" | "shm", ..] => false,
        ["dev", ..] => true,
        ["proc", "sysrq-trigger"] => true,
        _ => false,
    }
}

/// Why writing `text` (truncating, appending, replacing) is dangerous: a
/// system file, a kernel setting, or a file in a home directory that runs
/// code at start-up or grants access (`~/.bashrc`, `~/.ssh/authorized_keys`).
pub(crate) fn write_target_danger(text: &str) -> Option<String> {
    if is_device_write_target(text) {
        return Some(format!("writes to device `{text}`"));
    }
    let n = normalize(text);
    if n.relative {
        return None;
    }
    let p: Vec<&str> = n.parts.iter().map(|p| p.as_ref()).collect();
    match p.as_slice() {
        ["proc", "self" | "thread-self", "fd", ..] => return None,
        ["proc", ..] | ["sys", ..] => return Some(format!("writes kernel state `{text}`")),
        ["var", "tmp", ..] => return None,
        _ => {}
    }
    let home_rest: Option<&[&str]> = match p.as_slice() {
        ["home", _, rest @ ..] => Some(rest),
        ["root", rest @ ..] => Some(rest),
        _ => None,
    };
    if let Some(rest) = home_rest {
        let start_file = matches!(rest, [f] if HOME_START_FILES.contains(f));
        let start_dir = HOME_START_DIRS
            .iter()
            .any(|d| rest.len() > d.len() && rest[..d.len()] == **d);
        if start_file || start_dir {
            return Some(format!(
                "writes `{text}`, a file that runs code at start-up or grants access"
            ));
        }
        return None;
    }
    if p.len() >= 2 && SYSTEM_FILE_DIRS.contains(&p[0]) {
        return Some(format!("writes the system file `{text}`"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Word {
        let mut w = Word::literal(s);
        w.multi = glob(s);
        w
    }

    #[test]
    fn home_and_root_forms_normalise() {
        for p in [
            "/",
            "//",
            "/./",
            "/usr/..",
            "~",
            "~/",
            "~/.",
            "~/./",
            "~/..",
            "~/../..",
            "$HOME",
            "\"$HOME\"/",
            "${HOME}/.",
            "/home",
            "/etc/",
            "/./etc",
            "//etc//",
            "~root",
            "~bob",
            "~/*",
            "/*",
            "/usr/*",
            "..",
            "../..",
            "../../../../../../etc",
            "../../../..",
            "/home/bob/",
            "/home/*",
        ] {
            assert!(is_dangerous_path(&w(p)), "{p}");
        }
        for p in [
            "./x",
            "x",
            "../build",
            "~/src/x",
            "/tmp/x",
            "/usr/local/src/x",
            "src/..",
        ] {
            assert!(!is_dangerous_path(&w(p)), "{p}");
        }
    }

    #[test]
    fn devices_and_start_files_are_write_targets() {
        for p in [
            "/dev/sda",
            "//dev/sda",
            "/./dev/sda",
            "/dev/../dev/nvme0n1",
            "/proc/sysrq-trigger",
        ] {
            assert!(is_device_write_target(p), "{p}");
        }
        for p in ["/dev/null", "/dev/fd/1", "/dev/stderr", "dev/sda"] {
            assert!(!is_device_write_target(p), "{p}");
        }
        for p in [
            "~/.ssh/authorized_keys",
            "~/./.bashrc",
            "$HOME/.profile",
            "/root/.ssh/config",
            "/home/bob/.zshrc",
            "/etc/passwd",
            "/./etc/hosts",
            "~/.config/autostart/x.desktop",
            "/proc/sys/kernel/sysrq",
        ] {
            assert!(write_target_danger(p).is_some(), "{p}");
        }
        for p in [
            "/tmp/x",
            "out.txt",
            "~/notes.txt",
            "/dev/null",
            "/var/tmp/x",
            "/proc/self/fd/2",
        ] {
            assert!(write_target_danger(p).is_none(), "{p}");
        }
    }
}
