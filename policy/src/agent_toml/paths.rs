//! Path rules shared by the manifest validator and the folder/ZIP collectors:
//! safe relative paths, destination aliases, and the credential paths that
//! collection never reads.

/// Check a package-relative path (a source, an instructions file, a ZIP
/// entry, a destination after alias stripping). Returns it normalized: a
/// leading `./` and one trailing `/` are removed. `allow_root` accepts `.`
/// (returned as the empty string).
pub fn check_relative(raw: &str, allow_root: bool) -> Result<String, String> {
    if raw.is_empty() {
        return Err("path is empty".into());
    }
    if raw.chars().any(|c| c == '\0' || c.is_control()) {
        return Err("path contains a control character".into());
    }
    if raw.contains('\\') {
        return Err("path contains a backslash; use `/`".into());
    }
    if raw.starts_with('/') {
        return Err("path must be relative to the package root".into());
    }
    let mut s = raw;
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    let s = s.strip_suffix('/').unwrap_or(s);
    if s.is_empty() || s == "." {
        return if allow_root {
            Ok(String::new())
        } else {
            Err("path names the package root".into())
        };
    }
    for comp in s.split('/') {
        match comp {
            "" => return Err("path has an empty component (`//`)".into()),
            "." => return Err("path has a `.` component".into()),
            ".." => return Err("path traverses outside the package (`..`)".into()),
            _ => {}
        }
    }
    if let Some(first) = s.split('/').next() {
        let b = first.as_bytes();
        if b.len() == 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
            return Err("path starts with a drive letter".into());
        }
    }
    Ok(s.to_string())
}

/// Normalize a runtime destination: the `/` and `/workspace/` aliases are
/// accepted and stripped; the rest must be a safe relative file path.
pub fn normalize_dest(raw: &str) -> Result<String, String> {
    let stripped = if let Some(rest) = raw.strip_prefix("/workspace/") {
        rest
    } else if raw == "/workspace" {
        return Err("destination names the working-directory root".into());
    } else if let Some(rest) = raw.strip_prefix('/') {
        rest
    } else {
        raw
    };
    if stripped.starts_with('/') {
        return Err("destination has an empty component (`//`)".into());
    }
    check_relative(stripped, false)
}

/// True when a string is a glob pattern rather than a literal path.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Hidden directories and files that hold credentials or repository
/// internals. Folder and glob collection skip them; naming one explicitly is
/// an error.
const CREDENTIAL_NAMES: [&str; 22] = [
    ".ssh",
    ".git",
    ".aws",
    ".gnupg",
    ".gpg",
    ".kube",
    ".docker",
    ".azure",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".vault-token",
    ".terraformrc",
    ".dockercfg",
    ".s3cfg",
    ".boto",
    ".zot",
    ".password-store",
];

/// File names of private keys.
const KEY_FILE_PREFIXES: [&str; 4] = ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
/// Extensions of key and certificate bundles.
const KEY_EXTENSIONS: [&str; 6] = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];

/// True when one path component is a credential store.
pub fn is_credential_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(".env") || lower.ends_with(".env") {
        return true;
    }
    if CREDENTIAL_NAMES.contains(&lower.as_str()) {
        return true;
    }
    if KEY_FILE_PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return true;
    }
    KEY_EXTENSIONS.iter().any(|e| lower.ends_with(e))
}

/// True when any component of a relative path is a credential store, or the
/// path is inside `.config/gcloud` and similar credential folders.
pub fn is_credential_path(rel: &str) -> bool {
    let comps: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    if comps.iter().any(|c| is_credential_name(c)) {
        return true;
    }
    comps.windows(2).any(|w| {
        w[0] == ".config" && matches!(w[1], "gcloud" | "gh" | "hub" | "op" | "doctl" | "zot")
    })
}

/// True when `a` is a proper directory prefix of `b` (`a` = `x`, `b` = `x/y`).
pub fn is_parent_of(a: &str, b: &str) -> bool {
    b.len() > a.len() && b.starts_with(a) && b.as_bytes()[a.len()] == b'/'
}

/// Skill directory names: lowercase letters, digits and hyphens, 1-64.
pub fn check_skill_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("skill name must be 1-64 characters".into());
    }
    let ok = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid skill name `{name}`: use lowercase letters, digits and hyphens, starting and ending with a letter or digit"
        ))
    }
}

/// Agent names: 1-255 lowercase letters, digits or hyphens, starting and
/// ending with a letter or digit.
pub fn check_agent_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 255 {
        return Err("name must be 1-255 characters".into());
    }
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let ends = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let b = name.as_bytes();
    if !ok_chars || !ends(b[0]) || !ends(b[b.len() - 1]) {
        return Err(format!(
            "invalid name `{name}`: use lowercase letters, digits and hyphens, starting and ending with a letter or digit"
        ));
    }
    if super::secrets::looks_like_resource_id(name) {
        return Err(format!(
            "name `{name}` looks like a resource ID; use a stable name"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(check_relative("./a/b/", false).unwrap(), "a/b");
        assert_eq!(check_relative(".", true).unwrap(), "");
        assert!(check_relative(".", false).is_err());
        for bad in [
            "", "/etc", "a/../b", "..", "a//b", "a\\b", "C:/x", "a/./b", "a\0b",
        ] {
            assert!(check_relative(bad, true).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn destinations() {
        assert_eq!(normalize_dest("/workspace/a.txt").unwrap(), "a.txt");
        assert_eq!(normalize_dest("/a/b").unwrap(), "a/b");
        assert_eq!(normalize_dest("a").unwrap(), "a");
        for bad in ["/workspace", "/", "//x", "../x", "/workspace/../x"] {
            assert!(normalize_dest(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn credential_paths() {
        for p in [
            ".env",
            "x/.env.local",
            ".ssh/id_rsa",
            ".git/config",
            "a/.config/gcloud/x",
            "k/server.pem",
            "id_ed25519",
            "prod.env",
            ".envrc",
        ] {
            assert!(is_credential_path(p), "{p}");
        }
        for p in [
            "env",
            "docs/environment.md",
            ".agents/skills/x/SKILL.md",
            ".gitignore",
            "data/key.csv",
        ] {
            assert!(!is_credential_path(p), "{p}");
        }
    }
}
