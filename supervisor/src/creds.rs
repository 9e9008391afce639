//! Credentials named by the rules the tools follow, not by a list of
//! default paths alone: the files and directories environment variables
//! point to (`KUBECONFIG`, `GOOGLE_APPLICATION_CREDENTIALS`, `GNUPGHOME`,
//! ... and any variable whose name says it holds a credential file), the
//! stores of the built-in list moved where `XDG_CONFIG_HOME`,
//! `XDG_DATA_HOME`, `XDG_STATE_HOME` and `XDG_CACHE_HOME` move them, and
//! zot's own state and configuration (`$ZOT_HOME`, and every XDG place
//! zot may keep them), which no sandbox ever reads.
//!
//! Deny-read beats a grant: a credential inside a writable root (the
//! workspace is `$HOME`, or contains it) is denied all the same. The one
//! exception is a scope granted strictly inside one of zot's own
//! directories (an agent's data dir): it stays visible, and what lies
//! around it is denied.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use zot_policy::sandbox::{ReadScope, Rule, SandboxMode, SandboxPolicy};

/// Variables that name one credential file (or, for the `:`-list ones, a
/// list of them).
pub const FILE_VARS: &[&str] = &[
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GHA_CREDS_PATH",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_FEDERATED_TOKEN_FILE",
    "NETRC",
    "CURLOPT_NETRC_FILE",
    "PGPASSFILE",
    "PGSERVICEFILE",
    "PGSSLKEY",
    "MYSQL_TEST_LOGIN_FILE",
    "TF_CLI_CONFIG_FILE",
    "TERRAFORM_CONFIG",
    "NPM_CONFIG_USERCONFIG",
    "npm_config_userconfig",
    "YARN_RC_FILENAME",
    "BOTO_CONFIG",
    "BOTO_PATH",
    "S3CMD_CONFIG",
    "RCLONE_CONFIG",
    "DATABRICKS_CONFIG_FILE",
    "OCI_CLI_CONFIG_FILE",
    "OCI_CONFIG_FILE",
    "HCLOUD_CONFIG",
    "TALOSCONFIG",
    "HUB_CONFIG",
    "VAULT_CONFIG_PATH",
    "SOPS_AGE_KEY_FILE",
    "HF_TOKEN_PATH",
    "ANSIBLE_VAULT_PASSWORD_FILE",
    "KRB5CCNAME",
    "KRB5_KTNAME",
    "KRB5_CLIENT_KTNAME",
    "XAUTHORITY",
    "ICEAUTHORITY",
    "HELM_REGISTRY_CONFIG",
    "HELM_REPOSITORY_CONFIG",
    "DOCKER_AUTH_CONFIG",
    "REGISTRY_AUTH_FILE",
    "GIT_CREDENTIALS_FILE",
];

/// Variables holding a `:`-separated list of files.
pub const LIST_VARS: &[&str] = &["KUBECONFIG", "BOTO_PATH", "KUBE_CONFIG_PATHS"];

/// Variables that name a directory of credentials: denied whole.
pub const DIR_VARS: &[&str] = &[
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "GNUPGHOME",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "PASSWORD_STORE_DIR",
    "GH_CONFIG_DIR",
    "GLAB_CONFIG_DIR",
    "MINIKUBE_HOME",
    "TSH_HOME",
    "OP_CONFIG_DIR",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_DIR",
    "SSH_HOME",
    "VAULT_CACERT_DIR",
];

/// Variables that name a tool's home, with the credential files inside it
/// (the rest of the home holds what builds need: caches, plugins).
pub const HOME_VARS: &[(&str, &[&str])] = &[
    ("PULUMI_HOME", &["credentials.json"]),
    ("CARGO_HOME", &["credentials.toml", "credentials"]),
    ("GRADLE_USER_HOME", &["gradle.properties"]),
    ("HF_HOME", &["token", "stored_tokens"]),
    ("HUGGINGFACE_HUB_CACHE", &["token"]),
    ("GEM_HOME", &["credentials"]),
    ("COMPOSER_HOME", &["auth.json"]),
    ("NUGET_PACKAGES", &[]),
    ("FLY_CONFIG_DIR", &["config.yml"]),
    ("KAGGLE_CONFIG_DIR", &["kaggle.json"]),
    ("DOCTL_CONFIG", &[]),
];

/// Credential stores under `$HOME` the built-in list of the policy lacks.
pub const MORE_IN_HOME: &[&str] = &[
    ".pulumi/credentials.json",
    ".docker/key.pem",
    ".docker/cert.pem",
    ".docker/contexts",
    ".docker/machine",
    ".docker/tls",
    ".minikube/profiles",
    ".minikube/certs",
    ".minikube/ca.key",
    ".minikube/proxy-client-ca.key",
    ".tsh",
    ".config/helm/registry",
    ".config/ngrok",
    ".ngrok2",
    ".config/.wrangler",
    ".wrangler/config",
    ".local/share/com.vercel.cli",
    ".kaggle/kaggle.json",
    ".config/hcloud",
    ".cache/zot",
    ".local/share/keyrings",
    ".local/share/kwalletd",
    ".Xauthority",
    ".ICEauthority",
    ".config/age",
    ".age",
];

/// The words in a variable's name that say its value is a credential file
/// (the name split at `_`): `*_CREDENTIALS`, `*_TOKEN_FILE`, `*_KEY_FILE`,
/// `*_PASSWORD_FILE`, `*_SECRET_PATH`, `*KEYFILE` and the like.
fn name_says_secret(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    let words: Vec<&str> = up.split('_').filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    // Public certificate authorities: read by every TLS client.
    if words.iter().any(|w| {
        matches!(
            *w,
            "CA" | "CAINFO" | "CAPATH" | "CACERT" | "CACERTS" | "CAFILE" | "BUNDLE" | "ROOTS"
        )
    }) || up == "SSL_CERT_FILE"
        || up == "SSL_CERT_DIR"
        || up.ends_with("CA_CERTS")
    {
        return false;
    }
    let secretish = words.iter().any(|w| {
        matches!(
            *w,
            "CREDENTIAL"
                | "CREDENTIALS"
                | "CREDS"
                | "SECRET"
                | "SECRETS"
                | "PASSWORD"
                | "PASSWD"
                | "PASSFILE"
                | "PASS"
                | "PASSPHRASE"
                | "KEYFILE"
                | "KEYRING"
                | "KEYTAB"
                | "NETRC"
                | "KUBECONFIG"
                | "AUTHFILE"
                | "TOKENFILE"
                | "PRIVKEY"
        )
    });
    let pathish = words.iter().any(|w| {
        matches!(
            *w,
            "FILE" | "PATH" | "PATHS" | "DIR" | "HOME" | "LOCATION" | "FILES" | "CONFIG"
        )
    });
    // A key, token or authentication value: only a value that is a path
    // to something existing is ever denied, so the name alone may say it.
    let keyish = words.iter().any(|w| {
        matches!(
            *w,
            "TOKEN" | "TOKENS" | "KEY" | "KEYS" | "APIKEY" | "PRIVATE" | "AUTH" | "IDENTITY"
        )
    });
    secretish || keyish || (has("KUBE") && pathish) || (has("CERT") && pathish && up != "PIP_CERT")
}

/// A value as a path the tool would open: `~/` expanded, relative ones
/// against each of `cwds`, `FILE:`/`DIR:` prefixes (Kerberos) dropped.
fn value_paths(value: &OsStr, home: Option<&Path>, cwds: &[PathBuf]) -> Vec<PathBuf> {
    let b = value.as_bytes();
    let b = b
        .strip_prefix(b"FILE:")
        .or_else(|| b.strip_prefix(b"DIR:"))
        .unwrap_or(b);
    if b.is_empty() || b.contains(&0) || b.contains(&b'\n') {
        return Vec::new();
    }
    let v = Path::new(OsStr::from_bytes(b));
    if let Ok(rest) = v.strip_prefix("~") {
        return home.map(|h| vec![h.join(rest)]).unwrap_or_default();
    }
    if v.is_absolute() {
        return vec![v.to_path_buf()];
    }
    // Relative to the working directories, as the tool would open it
    // (only what exists there is ever denied: a token value names nothing).
    if b.len() > 512 {
        return Vec::new();
    }
    cwds.iter().map(|c| c.join(v)).collect()
}

/// zot's own directories by the rules zot follows for each: its state
/// (`$ZOT_HOME`, else `$XDG_STATE_HOME/zot`, else `~/.local/state/zot`),
/// its configuration (`$XDG_CONFIG_HOME/zot`, `~/.config/zot`), data and
/// caches. Every candidate is listed, not only the one in use: a variable
/// set differently for the sandbox changes nothing.
pub fn zot_dirs(get: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let abs = |k: &str| {
        get(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    if let Some(h) = abs("ZOT_HOME") {
        add(h);
    }
    for (var, dflt) in [
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
    ] {
        if let Some(x) = abs(var) {
            add(x.join("zot"));
        }
        if let Some(h) = abs("HOME") {
            add(h.join(dflt).join("zot"));
        }
    }
    out
}

/// The homes whose stores are denied: `$HOME` and the invoking user's home
/// in the password database.
fn homes(get: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    if let Some(h) = get("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        v.push(h);
    }
    if let Some(dir) = crate::host::passwd_dir() {
        if dir.is_absolute() && !v.contains(&dir) {
            v.push(dir);
        }
    }
    v
}

/// Whether denying `p` would hide what the sandbox cannot work without:
/// `/`, a system directory, a home itself, or a directory holding a
/// writable root or the working directory.
fn too_wide(p: &Path, keep: &[PathBuf], homes: &[PathBuf]) -> bool {
    const SYSTEM: &[&str] = &[
        "/",
        "/usr",
        "/etc",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/opt",
        "/var",
        "/home",
        "/root",
        "/srv",
        "/tmp",
        "/dev",
        "/proc",
        "/sys",
        "/run",
        "/nix",
        "/usr/local",
        "/usr/bin",
        "/usr/lib",
    ];
    SYSTEM.iter().any(|s| p == Path::new(s))
        || homes.iter().any(|h| h == p)
        || keep.iter().any(|k| k.starts_with(p))
}

/// Every credential path of the caller's environment `env` (existing
/// ones, canonical), with where each comes from, for a sandbox whose
/// writable roots and working directory are `keep`.
pub fn credential_paths(
    env: &[(OsString, OsString)],
    keep: &[PathBuf],
    cwds: &[PathBuf],
) -> Vec<(PathBuf, String)> {
    let get = |k: &str| -> Option<OsString> {
        env.iter()
            .find(|(n, _)| n.as_bytes() == k.as_bytes())
            .map(|(_, v)| v.clone())
    };
    let homes = homes(&get);
    let home = homes.first().cloned();
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    let add = |p: PathBuf, from: String, out: &mut Vec<(PathBuf, String)>| {
        let Some(c) = crate::canon::canonicalize(&p) else {
            return;
        };
        if too_wide(&c, keep, &homes) || out.iter().any(|(q, _)| *q == c) {
            return;
        }
        out.push((c, from));
    };
    let named = |name: &str, value: &OsStr, out: &mut Vec<(PathBuf, String)>| {
        let list = LIST_VARS.contains(&name)
            || name.to_ascii_uppercase().ends_with("PATH") && value.as_bytes().contains(&b':');
        let parts: Vec<&[u8]> = if list {
            value.as_bytes().split(|b| *b == b':').collect()
        } else {
            vec![value.as_bytes()]
        };
        for part in parts {
            for p in value_paths(OsStr::from_bytes(part), home.as_deref(), cwds) {
                add(p, format!("${name}"), out);
            }
        }
    };
    for (k, v) in env {
        let Some(name) = k.to_str() else { continue };
        if FILE_VARS.contains(&name)
            || LIST_VARS.contains(&name)
            || DIR_VARS.contains(&name)
            || name_says_secret(name)
        {
            named(name, v, &mut out);
        }
    }
    for (var, files) in HOME_VARS {
        let Some(v) = get(var) else { continue };
        for base in value_paths(&v, home.as_deref(), cwds) {
            for f in *files {
                add(base.join(f), format!("${var}/{f}"), &mut out);
            }
        }
    }
    // The built-in list where XDG moves it, and the stores it lacks.
    let builtin = zot_policy::sandbox::DEFAULT_DENY_READ_IN_HOME
        .iter()
        .chain(MORE_IN_HOME.iter());
    for rel in builtin {
        for h in &homes {
            add(h.join(rel), "credential store ($HOME)".into(), &mut out);
        }
        for (var, prefix) in [
            ("XDG_CONFIG_HOME", ".config/"),
            ("XDG_DATA_HOME", ".local/share/"),
            ("XDG_STATE_HOME", ".local/state/"),
            ("XDG_CACHE_HOME", ".cache/"),
        ] {
            let Some(rest) = rel.strip_prefix(prefix) else {
                continue;
            };
            if let Some(base) = get(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
            {
                add(
                    base.join(rest),
                    format!("credential store (${var})"),
                    &mut out,
                );
            }
        }
    }
    // Stores XDG places outside the home-relative list.
    if let Some(rt) = get("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        add(
            rt.join("containers/auth.json"),
            "credential store ($XDG_RUNTIME_DIR)".into(),
            &mut out,
        );
    }
    out
}

/// Where in `dir` to deny so that `dir` is unreadable except the `grants`
/// strictly inside it: every sibling along the way to each grant.
fn around(dir: &Path, grants: &[PathBuf], out: &mut Vec<PathBuf>) {
    if grants.iter().any(|g| g == dir) {
        return;
    }
    if !grants.iter().any(|g| g.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kids: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    kids.sort();
    for k in kids {
        around(&k, grants, out);
    }
}

/// What of zot's own directories to deny for a sandbox granting `grants`
/// (read scopes and writable roots, canonical): each directory whole,
/// or, when a grant lies strictly inside it, all around the grant.
pub fn zot_denied(get: impl Fn(&str) -> Option<OsString>, grants: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in zot_dirs(get) {
        let Some(c) = crate::canon::canonicalize(&d) else {
            continue;
        };
        let inside: Vec<PathBuf> = grants
            .iter()
            .filter(|g| g.starts_with(&c) && **g != c)
            .cloned()
            .collect();
        around(&c, &inside, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// `policy` with the credentials of `env` and zot's own directories
/// added to its deny-read paths (every confined mode), with their origins
/// for `--explain`.
pub fn with_credentials(policy: &SandboxPolicy, env: &[(OsString, OsString)]) -> SandboxPolicy {
    if policy.mode == SandboxMode::DangerFullAccess {
        return policy.clone();
    }
    let canon = |p: &PathBuf| crate::canon::canonicalize(p).unwrap_or_else(|| p.clone());
    let mut keep: Vec<PathBuf> = policy.write_roots.iter().map(canon).collect();
    keep.push(canon(&policy.cwd));
    let mut grants = keep.clone();
    if let ReadScope::Restricted { paths } = &policy.read {
        grants.extend(paths.iter().map(canon));
    }
    let mut cwds = vec![canon(&policy.cwd)];
    if let Ok(c) = std::env::current_dir() {
        if !cwds.contains(&c) {
            cwds.push(c);
        }
    }
    let mut p = policy.clone();
    p.add_paths(Rule::DenyRead, credential_paths(env, &keep, &cwds));
    let get = |k: &str| -> Option<OsString> {
        env.iter()
            .find(|(n, _)| n.as_bytes() == k.as_bytes())
            .map(|(_, v)| v.clone())
    };
    p.add_paths(
        Rule::DenyRead,
        zot_denied(get, &grants)
            .into_iter()
            .map(|path| (path, "zot's own state and configuration".to_string())),
    );
    p.deny_read.sort();
    p.deny_read.dedup();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &[(&str, &Path)]) -> Vec<(OsString, OsString)> {
        v.iter()
            .map(|(k, p)| (OsString::from(k), p.as_os_str().to_os_string()))
            .collect()
    }

    #[test]
    fn names_that_say_secret() {
        for n in [
            "GOOGLE_APPLICATION_CREDENTIALS",
            "MY_TOKEN_FILE",
            "SERVICE_KEY_PATH",
            "DEPLOY_PRIVATE_KEY",
            "VAULT_PASSWORD_FILE",
            "X_CREDS",
            "FOO_KEYFILE",
            "KUBECONFIG",
            "ACME_SECRET_DIR",
            "PULUMI_CONFIG_PASSPHRASE_FILE",
            "KUBE_CONFIG_PATH",
            "AZURE_AUTH_LOCATION",
            "GIT_SSH_KEY",
            "AGE_IDENTITY",
            "DOCKER_CERT_PATH",
        ] {
            assert!(name_says_secret(n), "{n}");
        }
        for n in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO",
            "PATH",
            "HOME",
            "CURL_CA_BUNDLE",
            "PIP_CERT",
            "GIT_AUTHOR_NAME",
            "XDG_CONFIG_HOME",
            "KEYBOARD_LAYOUT",
        ] {
            assert!(!name_says_secret(n), "{n}");
        }
    }

    #[test]
    fn variables_lists_and_xdg_are_followed() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().canonicalize().unwrap();
        let ws = b.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let f = |rel: &str| {
            let p = b.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
            p
        };
        let sa = f("keys/sa.json");
        let k1 = f("k/one");
        let k2 = f("k/two");
        let gh = f("xdg/gh/hosts.yml");
        let ws_cred = f("ws/creds/token");
        let gnupg = b.join("gpg");
        std::fs::create_dir_all(&gnupg).unwrap();
        let mut e = env(&[
            ("GOOGLE_APPLICATION_CREDENTIALS", &sa),
            ("GNUPGHOME", &gnupg),
            ("XDG_CONFIG_HOME", &b.join("xdg")),
            ("HOME", &b.join("home")),
            ("MY_API_TOKEN_FILE", &ws_cred),
            ("SSL_CERT_FILE", &sa),
        ]);
        let list = format!("{}:{}", k1.display(), k2.display());
        e.push(("KUBECONFIG".into(), list.into()));
        // The workspace itself is never denied whole.
        e.push(("CLOUDSDK_CONFIG".into(), ws.clone().into()));
        let got: Vec<PathBuf> = credential_paths(&e, std::slice::from_ref(&ws), &[ws.clone()])
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        for want in [&sa, &k1, &k2, &gh, &gnupg, &ws_cred] {
            assert!(got.contains(want), "{} not in {got:?}", want.display());
        }
        assert!(!got.contains(&ws), "{got:?}");
    }

    #[test]
    fn zot_dirs_are_denied_around_a_grant_inside() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().canonicalize().unwrap();
        let z = b.join("zh");
        let data = z.join("agents/a/data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(z.join("agents/b")).unwrap();
        std::fs::create_dir_all(z.join("sessions")).unwrap();
        std::fs::write(z.join("agents/a/history"), "h").unwrap();
        let get = |k: &str| (k == "ZOT_HOME").then(|| z.clone().into_os_string());
        assert_eq!(zot_denied(get, &[]), vec![z.clone()]);
        let got = zot_denied(get, std::slice::from_ref(&data));
        assert!(got.contains(&z.join("sessions")), "{got:?}");
        assert!(got.contains(&z.join("agents/b")), "{got:?}");
        assert!(got.contains(&z.join("agents/a/history")), "{got:?}");
        assert!(!got.iter().any(|g| data.starts_with(g)), "{got:?}");
        // A grant holding zot's directory: denied all the same.
        assert_eq!(zot_denied(get, std::slice::from_ref(&b)), vec![z.clone()]);
    }
}
