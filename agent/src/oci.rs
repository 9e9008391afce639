//! Agents in OCI registries (docs/registries.md): references, the artifact
//! format, and a small distribution-API client (pull, push, referrers)
//! with the ecosystem's authentication.
//!
//! The artifact is an OCI 1.1 image manifest whose `artifactType` is
//! [`ARTIFACT_TYPE`], with the empty config and one layer holding the
//! `.zot` bytes exactly, so the layer digest is the archive's `sha256`.
//! A minisign signature is a second manifest ([`SIGNATURE_TYPE`]) whose
//! `subject` is the agent manifest: found through the referrers API, or
//! through the referrers tag schema (`sha256-<hex>`) on registries without
//! it.
//!
//! Transport: HTTPS, except plain HTTP for loopback registries and for
//! those with `insecure = true` in `[registries."HOST:PORT"]`. Credentials
//! come from the Docker config (`DOCKER_CONFIG`, else `~/.docker`):
//! `auths`, `credHelpers`, `credsStore`. They are used for the registry
//! requests of this process only: never written anywhere, never part of an
//! error message, never passed to a sandbox.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ui::Progress;
use crate::RunError;

/// `artifactType` of an agent manifest.
pub const ARTIFACT_TYPE: &str = "application/vnd.zot.agent.v1";
/// Media type of the layer holding the `.zot` bytes.
pub const LAYER_TYPE: &str = "application/vnd.zot.agent.layer.v1.tar+zstd";
/// `artifactType` of a signature manifest (its `subject` is the agent).
pub const SIGNATURE_TYPE: &str = "application/vnd.zot.agent.signature.v1";
/// Media type of the layer holding the `.minisig` file.
pub const SIGNATURE_LAYER_TYPE: &str = "application/vnd.zot.agent.signature.v1.minisig";
pub const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const EMPTY_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The empty config blob (`{}`) and its digest.
pub const EMPTY_BLOB: &[u8] = b"{}";
pub const EMPTY_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
/// Largest manifest or index read.
pub const MAX_MANIFEST: u64 = 4 << 20;
/// Largest token response read.
const MAX_TOKEN: u64 = 1 << 20;
/// Signature referrers looked at, at most.
const MAX_SIGNATURES: usize = 8;
/// Largest error body read (for its message).
const MAX_ERROR_BODY: u64 = 16 << 10;

pub const TITLE: &str = "org.opencontainers.image.title";
pub const VERSION: &str = "org.opencontainers.image.version";
pub const DESCRIPTION: &str = "org.opencontainers.image.description";
pub const SOURCE: &str = "org.opencontainers.image.source";
pub const LICENSES: &str = "org.opencontainers.image.licenses";

/// `REGISTRY/REPO[:TAG][@sha256:HEX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// `host[:port]` as written (Docker Hub is `registry-1.docker.io`).
    pub registry: String,
    pub repo: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl OciRef {
    /// What the manifest is fetched by: the digest when given, else the
    /// tag (default `latest`).
    pub fn target(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The reference pinned to `digest`.
    pub fn pinned(&self, digest: &str) -> String {
        format!("{}/{}@{digest}", self.registry, self.repo)
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.registry, self.repo)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Whether the first path part names a registry, as Docker decides: it
/// has a `.` or a `:`, or is `localhost`.
fn is_registry_part(p: &str) -> bool {
    p.contains('.') || p.contains(':') || p == "localhost"
}

/// Is `s` an OCI reference (`oci://...`, or a first part that names a
/// registry)? Decides the syntax only; [`parse`] validates it.
pub fn looks_like(s: &str) -> bool {
    if s.starts_with("oci://") {
        return true;
    }
    match s.split_once('/') {
        Some((first, rest)) => is_registry_part(first) && !rest.is_empty() && !s.contains("://"),
        None => false,
    }
}

fn path_component_ok(c: &str) -> bool {
    // [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(c))
    {
        return false;
    }
    // Separators: one '.', one or two '_', any run of '-', never mixed.
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

fn tag_ok(t: &str) -> bool {
    // [A-Za-z0-9_][A-Za-z0-9._-]{0,127}
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
}

/// Is `d` a `sha256:<64 lowercase hex>` digest?
pub fn digest_ok(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    })
}

/// Parse an OCI reference (see [`looks_like`]). `oci://` may name Docker
/// Hub implicitly (`oci://library/x`); a bare reference must name its
/// registry.
pub fn parse(s: &str) -> Result<OciRef, String> {
    let bad = |m: &str| format!("{s:?}: {m}");
    let (explicit, rest) = match s.strip_prefix("oci://") {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (name, digest) = match rest.split_once('@') {
        Some((n, d)) => {
            if !digest_ok(d) {
                return Err(bad("a digest is sha256: and 64 lowercase hex digits"));
            }
            (n, Some(d.to_string()))
        }
        None => (rest, None),
    };
    let (first, after) = name.split_once('/').unwrap_or(("", name));
    let (registry, path) = if !first.is_empty() && is_registry_part(first) {
        (first.to_string(), after)
    } else if explicit {
        ("registry-1.docker.io".to_string(), name)
    } else {
        return Err(bad("expected REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]"));
    };
    // Host names are case-insensitive: one spelling for config keys and
    // credentials.
    let registry = registry.to_ascii_lowercase();
    let registry = match registry.as_str() {
        "docker.io" | "index.docker.io" => "registry-1.docker.io".to_string(),
        _ => registry,
    };
    if !zot_policy::config::is_registry_host(&registry) {
        return Err(bad("the registry must be a lowercase HOST or HOST:PORT"));
    }
    let (repo, tag) = match path.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => {
            if !tag_ok(t) {
                return Err(bad(
                    "a tag is letters, digits, '_', '.', '-' (at most 128, not starting with '.' or '-')",
                ));
            }
            (r, Some(t.to_string()))
        }
        _ => (path, None),
    };
    if repo.is_empty() {
        return Err(bad("no repository after the registry"));
    }
    if repo.len() > 255 || !repo.split('/').all(path_component_ok) {
        return Err(bad(
            "repository parts are lowercase letters and digits separated by '.', '_', '__' or '-'",
        ));
    }
    let repo = if registry == "registry-1.docker.io" && !repo.contains('/') {
        format!("library/{repo}")
    } else {
        repo.to_string()
    };
    Ok(OciRef {
        registry,
        repo,
        tag,
        digest,
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// `sha256:<hex>` and size of the file at `p`.
pub fn sha256_file(p: &Path) -> Result<(String, u64), RunError> {
    let mut f = std::fs::File::open(p).map_err(|e| RunError::io(p.display().to_string(), e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut n = 0u64;
    loop {
        let k = f
            .read(&mut buf)
            .map_err(|e| RunError::io(p.display().to_string(), e))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((format!("sha256:{}", hex::encode(h.finalize())), n))
}

/// An OCI content descriptor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest (the fields zot reads and writes).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image index (referrers responses and the tag-schema fallback).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
}

fn empty_config() -> Descriptor {
    Descriptor {
        media_type: EMPTY_TYPE.into(),
        digest: EMPTY_DIGEST.into(),
        size: 2,
        artifact_type: None,
        data: Some("e30=".into()),
        annotations: BTreeMap::new(),
    }
}

/// The agent manifest for an archive of `size` bytes with `digest`.
pub fn agent_manifest(
    digest: &str,
    size: u64,
    file_title: &str,
    annotations: BTreeMap<String, String>,
) -> Manifest {
    let mut layer_ann = BTreeMap::new();
    layer_ann.insert(TITLE.to_string(), file_title.to_string());
    Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_TYPE.into()),
        artifact_type: Some(ARTIFACT_TYPE.into()),
        config: empty_config(),
        layers: vec![Descriptor {
            media_type: LAYER_TYPE.into(),
            digest: digest.into(),
            size,
            artifact_type: None,
            data: None,
            annotations: layer_ann,
        }],
        subject: None,
        annotations,
    }
}

/// Check that `m` is a zot agent manifest and return its layer.
pub fn agent_layer(m: &Manifest) -> Result<&Descriptor, String> {
    if let Some(t) = &m.media_type {
        if t != MANIFEST_TYPE {
            return Err(format!(
                "unsupported manifest media type {t:?} (expected {MANIFEST_TYPE})"
            ));
        }
    }
    if m.schema_version != 2 {
        return Err(format!("unsupported schemaVersion {}", m.schema_version));
    }
    let kind = m.artifact_type.as_deref().unwrap_or(&m.config.media_type);
    if kind != ARTIFACT_TYPE {
        return Err(format!(
            "not a zot agent: artifactType {kind:?} (expected {ARTIFACT_TYPE})"
        ));
    }
    let [layer] = m.layers.as_slice() else {
        return Err(format!(
            "a zot agent has exactly one layer, this manifest has {}",
            m.layers.len()
        ));
    };
    if layer.media_type != LAYER_TYPE {
        return Err(format!(
            "unsupported layer media type {:?} (expected {LAYER_TYPE})",
            layer.media_type
        ));
    }
    if !digest_ok(&layer.digest) {
        return Err(format!(
            "unsupported layer digest {:?} (sha256 only)",
            layer.digest
        ));
    }
    if layer.size > zot_package::MAX_COMPRESSED_SIZE {
        return Err(format!(
            "the layer is {} bytes, over the .zot limit of {}",
            layer.size,
            zot_package::MAX_COMPRESSED_SIZE
        ));
    }
    Ok(layer)
}

// ---------------------------------------------------------------------------
// Credentials.

/// Credentials for one registry.
#[derive(Clone)]
pub enum Creds {
    Basic {
        user: String,
        pass: String,
    },
    /// An identity token (OAuth2 refresh token) for the token endpoint.
    Identity(String),
}

impl std::fmt::Debug for Creds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Creds(<redacted>)")
    }
}

/// The Docker config directory: `DOCKER_CONFIG`, else `~/.docker`.
fn docker_config_path() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("config.json"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".docker/config.json"))
}

/// Keys an `auths` entry may use for `registry`.
fn auth_keys(registry: &str) -> Vec<String> {
    let mut v = vec![
        registry.to_string(),
        format!("https://{registry}"),
        format!("http://{registry}"),
        format!("https://{registry}/v1/"),
        format!("https://{registry}/v2/"),
    ];
    if registry == "registry-1.docker.io" {
        v.extend(
            [
                "https://index.docker.io/v1/",
                "index.docker.io",
                "docker.io",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
    }
    v
}

/// Credentials for `registry` from the Docker config, if any.
pub fn credentials(registry: &str) -> Result<Option<Creds>, RunError> {
    let Some(path) = docker_config_path() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunError::io(format!("docker config {}", path.display()), e)),
    };
    let cfg: serde_json::Value = serde_json::from_str(&text).map_err(|e| RunError::Registry {
        what: format!("docker config {}: invalid JSON", path.display()),
        source: Some(e.into()),
    })?;
    let keys = auth_keys(registry);
    let helper_for = cfg
        .get("credHelpers")
        .and_then(|h| h.as_object())
        .and_then(|h| keys.iter().find_map(|k| h.get(k)))
        .and_then(|v| v.as_str());
    if let Some(helper) = helper_for {
        return helper_get(helper, registry);
    }
    if let Some(auths) = cfg.get("auths").and_then(|a| a.as_object()) {
        if let Some(e) = keys.iter().find_map(|k| auths.get(k)) {
            if let Some(t) = e.get("identitytoken").and_then(|t| t.as_str()) {
                if !t.is_empty() {
                    return Ok(Some(Creds::Identity(t.to_string())));
                }
            }
            if let Some(a) = e.get("auth").and_then(|a| a.as_str()) {
                if !a.is_empty() {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(a.trim())
                        .map_err(|_| {
                            RunError::registry(format!(
                                "docker config {}: the auth of {registry} is not base64",
                                path.display()
                            ))
                        })?;
                    let s = String::from_utf8(raw).unwrap_or_default();
                    let Some((u, p)) = s.split_once(':') else {
                        return Err(RunError::registry(format!(
                            "docker config {}: the auth of {registry} is not USER:PASSWORD",
                            path.display()
                        )));
                    };
                    return Ok(Some(Creds::Basic {
                        user: u.into(),
                        pass: p.into(),
                    }));
                }
            }
            if let (Some(u), Some(p)) = (
                e.get("username").and_then(|v| v.as_str()),
                e.get("password").and_then(|v| v.as_str()),
            ) {
                return Ok(Some(Creds::Basic {
                    user: u.into(),
                    pass: p.into(),
                }));
            }
        }
    }
    if let Some(store) = cfg.get("credsStore").and_then(|s| s.as_str()) {
        if !store.is_empty() {
            return helper_get(store, registry);
        }
    }
    Ok(None)
}

/// `docker-credential-NAME get` with the registry on stdin.
fn helper_get(name: &str, registry: &str) -> Result<Option<Creds>, RunError> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(RunError::registry(format!(
            "credential helper name {name:?} is not a plain name"
        )));
    }
    let prog = format!("docker-credential-{name}");
    let mut child = match std::process::Command::new(&prog)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Err(RunError::Registry {
                what: format!("credential helper {prog} for {registry}"),
                source: Some(e.into()),
            })
        }
    };
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(registry.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| RunError::Registry {
        what: format!("credential helper {prog}"),
        source: Some(e.into()),
    })?;
    if !out.status.success() {
        // "credentials not found" is a helper's normal answer.
        return Ok(None);
    }
    #[derive(Deserialize)]
    struct Answer {
        #[serde(rename = "Username", default)]
        username: String,
        #[serde(rename = "Secret", default)]
        secret: String,
    }
    let a: Answer = serde_json::from_slice(&out.stdout).map_err(|_| {
        RunError::registry(format!("credential helper {prog}: its answer is not JSON"))
    })?;
    if a.secret.is_empty() {
        return Ok(None);
    }
    if a.username == "<token>" {
        return Ok(Some(Creds::Identity(a.secret)));
    }
    Ok(Some(Creds::Basic {
        user: a.username,
        pass: a.secret,
    }))
}

// ---------------------------------------------------------------------------
// The client.

/// What downloads and uploads report to; an error stops them.
pub type Report<'a> = dyn FnMut(&Progress) -> Result<(), RunError> + 'a;

/// Whether `host` (without port) is a loopback name or address.
pub fn is_loopback(registry: &str) -> bool {
    let host = if let Some(r) = registry.strip_prefix('[') {
        r.split(']').next().unwrap_or("")
    } else {
        registry.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

/// A client for one repository of one registry.
pub struct Client {
    http: ureq::Agent,
    base: String,
    pub reference: OciRef,
    creds: Option<Creds>,
    /// `Authorization` header value in use (a bearer token or basic).
    auth: Option<String>,
    push: bool,
    insecure: bool,
}

/// Attempts of an idempotent request (GET, HEAD) on a connection error or
/// a 5xx/429 answer.
const ATTEMPTS: u32 = 3;

fn reg_err(r: &OciRef, m: impl std::fmt::Display) -> RunError {
    RunError::registry(format!("{}: {m}", r.registry))
}

impl Client {
    /// A client for `r`'s repository; `push` asks for push rights.
    /// `config` gives `[registries]` (plain HTTP where `insecure`).
    pub fn new(
        r: &OciRef,
        config: &zot_policy::config::Config,
        push: bool,
    ) -> Result<Client, RunError> {
        let insecure = config
            .registries
            .get(&r.registry)
            .is_some_and(|s| s.insecure);
        let plain = insecure || is_loopback(&r.registry);
        let scheme = if plain { "http" } else { "https" };
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            .timeout_recv_response(Some(Duration::from_secs(120)))
            .timeout_recv_body(Some(Duration::from_secs(1800)))
            .timeout_send_body(Some(Duration::from_secs(1800)))
            .max_redirects(5)
            .user_agent(format!("zot/{}", crate::ZOT_VERSION))
            // The system's trust store, as the model providers use.
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .build()
            .new_agent();
        Ok(Client {
            http,
            base: format!("{scheme}://{}", r.registry),
            reference: r.clone(),
            creds: credentials(&r.registry)?,
            auth: None,
            push,
            insecure: plain,
        })
    }

    fn url(&self, tail: &str) -> String {
        format!("{}/v2/{}/{tail}", self.base, self.reference.repo)
    }

    fn err(&self, m: impl std::fmt::Display) -> RunError {
        reg_err(&self.reference, m)
    }

    /// [`Client::err`] for `what`, with the error under it.
    fn caused(&self, what: impl std::fmt::Display, source: impl Into<crate::Cause>) -> RunError {
        RunError::Registry {
            what: format!("{}: {what}", self.reference.registry),
            source: Some(source.into()),
        }
    }

    /// Send one request, answering an auth challenge once. `make` builds
    /// the request (it is called again after authenticating).
    fn send(
        &mut self,
        what: &str,
        idempotent: bool,
        make: &mut dyn FnMut(
            &ureq::Agent,
            Option<&str>,
        ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<ureq::http::Response<ureq::Body>, RunError> {
        let mut challenged = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let resp = match make(&self.http, self.auth.as_deref()) {
                Ok(r) => r,
                Err(e) if idempotent && attempt < ATTEMPTS => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(300 * attempt as u64));
                    continue;
                }
                Err(e) => return Err(self.err(format!("{what}: {}", scrub(&e.to_string())))),
            };
            let status = resp.status().as_u16();
            if status == 401 && !challenged {
                challenged = true;
                let challenge = resp
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                self.authenticate(&challenge, what)?;
                continue;
            }
            if idempotent && (status >= 500 || status == 429) && attempt < ATTEMPTS {
                std::thread::sleep(Duration::from_millis(500 * attempt as u64));
                continue;
            }
            return Ok(resp);
        }
    }

    /// Answer a `WWW-Authenticate` challenge: Basic with the configured
    /// credentials, or a Bearer token from the challenge's realm
    /// (anonymous when there are no credentials).
    fn authenticate(&mut self, challenge: &str, what: &str) -> Result<(), RunError> {
        let (scheme, params) = parse_challenge(challenge);
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => match &self.creds {
                Some(Creds::Basic { user, pass }) => {
                    let v = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                    self.auth = Some(format!("Basic {v}"));
                    Ok(())
                }
                _ => Err(self.err(format!(
                    "{what}: authentication required and no credentials for {} (run `docker login {}`, or add them to the Docker config)",
                    self.reference.registry, self.reference.registry
                ))),
            },
            "bearer" => {
                let realm = params.get("realm").cloned().ok_or_else(|| {
                    self.err(format!("{what}: a Bearer challenge without a realm"))
                })?;
                let token = self.fetch_token(&realm, &params)?;
                self.auth = Some(format!("Bearer {token}"));
                Ok(())
            }
            _ => Err(self.err(format!(
                "{what}: 401 Unauthorized with an unsupported challenge {:?}",
                scheme
            ))),
        }
    }

    fn fetch_token(
        &self,
        realm: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<String, RunError> {
        // The realm gets the credentials: HTTPS, or plain HTTP only where
        // the registry itself may be spoken to in plain HTTP.
        let realm_host = realm
            .strip_prefix("https://")
            .or_else(|| realm.strip_prefix("http://"))
            .map(|r| r.split('/').next().unwrap_or(""))
            .ok_or_else(|| self.err(format!("token realm {realm:?} is not an HTTP(S) URL")))?;
        if realm.starts_with("http://") && !(self.insecure || is_loopback(realm_host)) {
            return Err(self.err(format!(
                "token realm {realm} is plain HTTP (refused: credentials would travel in the clear)"
            )));
        }
        let mut scopes = vec![format!(
            "repository:{}:{}",
            self.reference.repo,
            if self.push { "pull,push" } else { "pull" }
        )];
        if let Some(s) = params.get("scope") {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let mut req = self.http.get(realm);
        if let Some(s) = params.get("service") {
            req = req.query("service", s);
        }
        for s in &scopes {
            req = req.query("scope", s);
        }
        match &self.creds {
            Some(Creds::Basic { user, pass }) => {
                let v = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                req = req.header("Authorization", format!("Basic {v}"));
            }
            Some(Creds::Identity(t)) => {
                // OAuth2 refresh-token grant, as Docker does.
                let mut form = vec![
                    ("grant_type", "refresh_token".to_string()),
                    ("refresh_token", t.clone()),
                    ("client_id", "zot".to_string()),
                    ("scope", scopes.join(" ")),
                ];
                if let Some(s) = params.get("service") {
                    form.push(("service", s.clone()));
                }
                let resp = self
                    .http
                    .post(realm)
                    .send_form(form.iter().map(|(k, v)| (*k, v.as_str())))
                    .map_err(|e| self.err(format!("token request: {}", scrub(&e.to_string()))))?;
                return self.token_from(resp, realm);
            }
            None => {}
        }
        let resp = req
            .call()
            .map_err(|e| self.err(format!("token request: {}", scrub(&e.to_string()))))?;
        self.token_from(resp, realm)
    }

    fn token_from(
        &self,
        mut resp: ureq::http::Response<ureq::Body>,
        realm: &str,
    ) -> Result<String, RunError> {
        let status = resp.status().as_u16();
        let realm_shown = realm.split('?').next().unwrap_or(realm);
        if status == 401 || status == 403 {
            return Err(self.err(format!(
                "token request to {realm_shown}: {status} (the credentials were refused{})",
                if self.creds.is_none() {
                    "; none were configured"
                } else {
                    ""
                }
            )));
        }
        if status != 200 {
            return Err(self.err(format!("token request to {realm_shown}: HTTP {status}")));
        }
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_TOKEN)
            .read_to_vec()
            .map_err(|e| self.caused("token response", e))?;
        #[derive(Deserialize)]
        struct Tok {
            token: Option<String>,
            access_token: Option<String>,
        }
        let t: Tok = serde_json::from_slice(&body)
            .map_err(|_| self.err(format!("token response from {realm_shown} is not JSON")))?;
        t.token
            .or(t.access_token)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| self.err(format!("token response from {realm_shown} has no token")))
    }

    fn fail(&self, what: &str, mut resp: ureq::http::Response<ureq::Body>) -> RunError {
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY)
            .read_to_vec()
            .unwrap_or_default();
        // The distribution spec's {"errors":[{"code","message"}]}.
        let detail = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                let errs = v.get("errors")?.as_array()?;
                Some(
                    errs.iter()
                        .map(|e| {
                            format!(
                                "{} {}",
                                e.get("code").and_then(|c| c.as_str()).unwrap_or(""),
                                e.get("message").and_then(|c| c.as_str()).unwrap_or("")
                            )
                            .trim()
                            .to_string()
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            })
            .filter(|s| !s.is_empty());
        let hint = match (status, self.creds.is_some()) {
            (401 | 403, true) => " (access denied with the credentials of the Docker config)".to_string(),
            (401 | 403, false) => format!(
                " (access denied: no credentials for {} in the Docker config; `docker login {}` adds them)",
                self.reference.registry, self.reference.registry
            ),
            (404, _) => " (not found)".to_string(),
            _ => String::new(),
        };
        self.err(format!(
            "{what}: HTTP {status}{hint}{}",
            detail.map(|d| format!(": {d}")).unwrap_or_default()
        ))
    }

    /// Fetch the manifest for `target` (a tag or digest); returns its
    /// bytes, checked against `target` when it is a digest, and digest.
    pub fn get_manifest(
        &mut self,
        target: &str,
        accept: &str,
    ) -> Result<Option<(Vec<u8>, String)>, RunError> {
        let url = self.url(&format!("manifests/{target}"));
        let what = format!("manifest {}:{target}", self.reference.repo);
        let accept = accept.to_string();
        let mut resp = self.send(&what, true, &mut |h, auth| {
            let mut r = h.get(&url).header("Accept", &accept);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.call()
        })?;
        if resp.status().as_u16() == 404 {
            return Ok(None);
        }
        if resp.status().as_u16() != 200 {
            return Err(self.fail(&what, resp));
        }
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(MAX_MANIFEST)
            .read_to_vec()
            .map_err(|e| {
                self.err(format!(
                    "{what}: {e} (a manifest is at most {MAX_MANIFEST} bytes)"
                ))
            })?;
        let digest = sha256(&bytes);
        if digest_ok(target) && digest != target {
            return Err(self.err(format!(
                "{what}: the registry answered a manifest whose digest is {digest}"
            )));
        }
        Ok(Some((bytes, digest)))
    }

    /// Resolve the reference to its agent manifest: `(manifest, digest,
    /// raw bytes)`.
    pub fn resolve(&mut self) -> Result<(Manifest, String, Vec<u8>), RunError> {
        let target = self.reference.target().to_string();
        let (bytes, digest) = self
            .get_manifest(&target, &format!("{MANIFEST_TYPE}, {INDEX_TYPE};q=0.5"))?
            .ok_or_else(|| self.err(format!("{}: not found", self.reference)))?;
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
            self.caused(format!("{}: not an OCI image manifest", self.reference), e)
        })?;
        agent_layer(&m).map_err(|e| self.err(format!("{}: {e}", self.reference)))?;
        Ok((m, digest, bytes))
    }

    /// Download blob `d` into `out` (at most `d.size` bytes), checking its
    /// digest and size. `out` is removed when the check fails.
    pub fn get_blob(
        &mut self,
        d: &Descriptor,
        out: &Path,
        progress: &mut Report<'_>,
    ) -> Result<(), RunError> {
        let r = self.get_blob_inner(d, out, progress);
        if r.is_err() {
            let _ = std::fs::remove_file(out);
        }
        r
    }

    fn get_blob_inner(
        &mut self,
        d: &Descriptor,
        out: &Path,
        progress: &mut Report<'_>,
    ) -> Result<(), RunError> {
        let url = self.url(&format!("blobs/{}", d.digest));
        let what = format!("blob {}", d.digest);
        let mut resp = self.send(&what, true, &mut |h, auth| {
            let mut r = h.get(&url);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.call()
        })?;
        if resp.status().as_u16() != 200 {
            return Err(self.fail(&what, resp));
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(out)
            .map_err(|e| RunError::io(out.display().to_string(), e))?;
        let mut reader = resp.body_mut().with_config().limit(d.size + 1).reader();
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 256 << 10];
        let mut n = 0u64;
        let label = format!(
            "pulling {}/{}",
            self.reference.registry, self.reference.repo
        );
        loop {
            let k = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.caused(&what, e)),
            };
            n += k as u64;
            if n > d.size {
                return Err(self.err(format!(
                    "{what}: larger than the {} bytes its descriptor says",
                    d.size
                )));
            }
            h.update(&buf[..k]);
            f.write_all(&buf[..k])
                .map_err(|e| RunError::io(out.display().to_string(), e))?;
            progress(&Progress {
                what: &label,
                done: n,
                total: Some(d.size),
                finished: false,
            })?;
        }
        progress(&Progress {
            what: &label,
            done: n,
            total: Some(d.size),
            finished: true,
        })?;
        let got = format!("sha256:{}", hex::encode(h.finalize()));
        if n != d.size || got != d.digest {
            return Err(self.err(format!(
                "{what}: the content does not match its digest (got {got}, {n} bytes): refused"
            )));
        }
        Ok(())
    }

    /// Whether the registry has blob `digest`.
    pub fn has_blob(&mut self, digest: &str) -> Result<bool, RunError> {
        let url = self.url(&format!("blobs/{digest}"));
        let what = format!("blob {digest}");
        let resp = self.send(&what, true, &mut |h, auth| {
            let mut r = h.head(&url);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.call()
        })?;
        match resp.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(self.fail(&what, resp)),
        }
    }

    /// Upload a blob (skipped when the registry has it): a POST for an
    /// upload session, then one monolithic PUT of the whole content.
    pub fn put_blob(
        &mut self,
        digest: &str,
        size: u64,
        open: &mut dyn FnMut() -> std::io::Result<Box<dyn Read + Send>>,
        progress: &mut Report<'_>,
    ) -> Result<bool, RunError> {
        if self.has_blob(digest)? {
            return Ok(false);
        }
        let url = self.url("blobs/uploads/");
        let what = format!("upload of {digest}");
        let resp = self.send(&what, false, &mut |h, auth| {
            let mut r = h.post(&url).header("Content-Length", "0");
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.send_empty()
        })?;
        if resp.status().as_u16() != 202 {
            return Err(self.fail(&what, resp));
        }
        let loc = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| self.err(format!("{what}: no Location for the upload")))?
            .to_string();
        let loc = self.absolute(&loc)?;
        let sep = if loc.contains('?') { '&' } else { '?' };
        let put_url = format!("{loc}{sep}digest={digest}");
        let label = format!(
            "pushing {}/{}",
            self.reference.registry, self.reference.repo
        );
        let mut sent = 0u64;
        let auth = self.auth.clone();
        let body = open().map_err(|e| RunError::io(format!("reading {digest}"), e))?;
        let mut counting = Counting {
            inner: body,
            sent: &mut sent,
            total: size,
            label: &label,
            progress,
            stopped: None,
        };
        let mut r = self
            .http
            .put(&put_url)
            .header("Content-Type", "application/octet-stream")
            .header("Content-Length", size.to_string());
        if let Some(a) = &auth {
            r = r.header("Authorization", a);
        }
        let result = r.send(ureq::SendBody::from_reader(&mut counting));
        if let Some(e) = counting.stopped.take() {
            return Err(e);
        }
        let _ = (counting.progress)(&Progress {
            what: &label,
            done: size,
            total: Some(size),
            finished: true,
        });
        let resp = result.map_err(|e| self.err(format!("{what}: {}", scrub(&e.to_string()))))?;
        if resp.status().as_u16() != 201 {
            return Err(self.fail(&what, resp));
        }
        Ok(true)
    }

    fn absolute(&self, loc: &str) -> Result<String, RunError> {
        if loc.starts_with('/') {
            return Ok(format!("{}{loc}", self.base));
        }
        if let Some(rest) = loc
            .strip_prefix("https://")
            .or_else(|| loc.strip_prefix("http://"))
        {
            // An upload on another host (a storage front end) gets the
            // content, never our credentials: ureq sends the headers we
            // set, so refuse a foreign host rather than leak them.
            let host = rest.split('/').next().unwrap_or("");
            if host != self.reference.registry {
                return Err(self.err(format!(
                    "upload location on another host {host} is not supported"
                )));
            }
            return Ok(loc.to_string());
        }
        Err(self.err(format!("upload location {loc:?} is not a URL")))
    }

    /// PUT a manifest under `target` (a tag or its digest). Returns the
    /// manifest digest and whether the registry reported `OCI-Subject`
    /// (it supports the referrers API).
    pub fn put_manifest(
        &mut self,
        target: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<(String, bool), RunError> {
        let url = self.url(&format!("manifests/{target}"));
        let what = format!("manifest {}:{target}", self.reference.repo);
        let ct = media_type.to_string();
        let resp = self.send(&what, false, &mut |h, auth| {
            let mut r = h.put(&url).header("Content-Type", &ct);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.send(bytes)
        })?;
        if resp.status().as_u16() != 201 {
            return Err(self.fail(&what, resp));
        }
        let subject = resp.headers().get("oci-subject").is_some();
        Ok((sha256(bytes), subject))
    }

    /// The referrers of `digest` with `artifact_type`: the referrers API,
    /// else the tag schema (`sha256-<hex>`).
    pub fn referrers(
        &mut self,
        digest: &str,
        artifact_type: &str,
    ) -> Result<Vec<Descriptor>, RunError> {
        let url = self.url(&format!("referrers/{digest}"));
        let what = format!("referrers of {digest}");
        let at = artifact_type.to_string();
        let mut resp = self.send(&what, true, &mut |h, auth| {
            let mut r = h
                .get(&url)
                .query("artifactType", &at)
                .header("Accept", INDEX_TYPE);
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r.call()
        })?;
        let index: Option<Index> = match resp.status().as_u16() {
            200 => {
                let b = resp
                    .body_mut()
                    .with_config()
                    .limit(MAX_MANIFEST)
                    .read_to_vec()
                    .map_err(|e| self.caused(&what, e))?;
                Some(
                    serde_json::from_slice(&b)
                        .map_err(|e| self.caused(format!("{what}: not an index"), e))?,
                )
            }
            404 | 400 | 405 => None,
            _ => return Err(self.fail(&what, resp)),
        };
        let index = match index {
            Some(i) => i,
            None => match self.get_manifest(&fallback_tag(digest), INDEX_TYPE)? {
                Some((b, _)) => serde_json::from_slice(&b)
                    .map_err(|e| self.caused(format!("{what} (tag schema): not an index"), e))?,
                None => return Ok(Vec::new()),
            },
        };
        Ok(index
            .manifests
            .into_iter()
            .filter(|d| d.artifact_type.as_deref() == Some(artifact_type))
            .collect())
    }

    /// Record `referrer` in the tag-schema index of `subject` (for
    /// registries without the referrers API).
    pub fn add_fallback_referrer(
        &mut self,
        subject: &str,
        referrer: Descriptor,
    ) -> Result<(), RunError> {
        let tag = fallback_tag(subject);
        let mut index = match self.get_manifest(&tag, INDEX_TYPE)? {
            Some((b, _)) => serde_json::from_slice::<Index>(&b)
                .map_err(|e| self.caused(format!("referrers tag {tag}: not an index"), e))?,
            None => Index {
                schema_version: 2,
                media_type: Some(INDEX_TYPE.into()),
                manifests: Vec::new(),
            },
        };
        index.manifests.retain(|d| d.digest != referrer.digest);
        index.manifests.push(referrer);
        index.media_type = Some(INDEX_TYPE.into());
        let bytes = serde_json::to_vec(&index).expect("index serializes");
        self.put_manifest(&tag, INDEX_TYPE, &bytes)?;
        Ok(())
    }
}

/// The referrers tag schema's tag for `digest`.
pub fn fallback_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// Remove anything that looks like a credential from a transport error.
fn scrub(s: &str) -> String {
    // ureq errors name URLs; ours never carry userinfo, but be sure.
    s.split_whitespace()
        .map(|w| {
            if let Some((scheme, rest)) = w.split_once("://") {
                if let Some((_, host)) = rest.split_once('@') {
                    return format!("{scheme}://{host}");
                }
            }
            w.to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `Bearer realm="...",service="...",scope="..."` into its scheme and
/// parameters.
fn parse_challenge(h: &str) -> (String, BTreeMap<String, String>) {
    let h = h.trim();
    let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
    let mut params = BTreeMap::new();
    let mut s = rest.trim();
    while !s.is_empty() {
        let Some((k, after)) = s.split_once('=') else {
            break;
        };
        let k = k.trim().trim_start_matches(',').trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (v, tail) = if let Some(q) = after.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            (v, &q[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.insert(k, v);
        s = tail.trim_start().trim_start_matches(',').trim_start();
    }
    (scheme.to_string(), params)
}

/// A reader that reports upload progress.
struct Counting<'a, 'b> {
    inner: Box<dyn Read + Send>,
    sent: &'a mut u64,
    total: u64,
    label: &'a str,
    progress: &'a mut Report<'b>,
    stopped: Option<RunError>,
}

impl Read for Counting<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        *self.sent += n as u64;
        if let Err(e) = (self.progress)(&Progress {
            what: self.label,
            done: *self.sent,
            total: Some(self.total),
            finished: false,
        }) {
            self.stopped = Some(e);
            return Err(std::io::Error::other("stopped"));
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------------------
// Pull and push.

/// A pulled agent: the archive (and signature, when the registry has one)
/// in a directory the caller owns.
pub struct Pulled {
    pub archive: PathBuf,
    /// `ARCHIVE.minisig`, written when a signature referrer was found.
    pub signature: Option<PathBuf>,
    /// The agent manifest's digest.
    pub manifest_digest: String,
    /// The archive's `sha256` (the layer digest).
    pub archive_digest: String,
    pub manifest: Manifest,
}

/// Pull `r` into `dir`: the manifest (by digest, or the tag resolved once),
/// the layer (checked against its digest), and the first signature
/// referrer.
pub fn pull(
    r: &OciRef,
    config: &zot_policy::config::Config,
    dir: &Path,
    keys: &zot_package::signature::KeySet,
    progress: &mut Report<'_>,
) -> Result<Pulled, RunError> {
    let mut c = Client::new(r, config, false)?;
    let (m, mdigest, _) = c.resolve()?;
    let layer = agent_layer(&m).map_err(|e| reg_err(r, e))?.clone();
    let title = layer
        .annotations
        .get(TITLE)
        .filter(|t| {
            t.ends_with(".zot")
                && !t.starts_with('.')
                && t.len() <= 200
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
        .cloned()
        .unwrap_or_else(|| "agent.zot".into());
    let archive = dir.join(&title);
    c.get_blob(&layer, &archive, progress)?;
    // Signature referrers: the first by a trusted key, else the first
    // (whose key the loader then reports as untrusted). At most
    // MAX_SIGNATURES are looked at.
    let mut candidates: Vec<Vec<u8>> = Vec::new();
    for d in c.referrers(&mdigest, SIGNATURE_TYPE)? {
        if candidates.len() >= MAX_SIGNATURES {
            break;
        }
        if !digest_ok(&d.digest) || d.size > MAX_MANIFEST {
            continue;
        }
        let Some((b, _)) = c.get_manifest(&d.digest, MANIFEST_TYPE)? else {
            continue;
        };
        let Ok(sm) = serde_json::from_slice::<Manifest>(&b) else {
            continue;
        };
        if sm.subject.as_ref().map(|s| s.digest.as_str()) != Some(mdigest.as_str()) {
            continue;
        }
        let Some(l) = sm
            .layers
            .iter()
            .find(|l| l.media_type == SIGNATURE_LAYER_TYPE)
        else {
            continue;
        };
        if l.size > zot_package::signature::MAX_SIGNATURE_FILE || !digest_ok(&l.digest) {
            continue;
        }
        let tmp = dir.join(format!(".sig-{}", candidates.len()));
        c.get_blob(l, &tmp, &mut |_| Ok(()))?;
        let bytes = std::fs::read(&tmp).map_err(|e| RunError::io(tmp.display().to_string(), e))?;
        let _ = std::fs::remove_file(&tmp);
        candidates.push(bytes);
    }
    let trusted = candidates.iter().position(|b| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|t| zot_package::signature::Signature::parse(t).ok())
            .is_some_and(|sig| keys.find(sig.key_id()).is_some())
    });
    let signature = match trusted.or((!candidates.is_empty()).then_some(0)) {
        Some(i) => {
            let p = zot_package::signature::signature_path(&archive);
            std::fs::write(&p, &candidates[i])
                .map_err(|e| RunError::io(p.display().to_string(), e))?;
            Some(p)
        }
        None => None,
    };
    Ok(Pulled {
        archive,
        signature,
        manifest_digest: mdigest,
        archive_digest: layer.digest.clone(),
        manifest: m,
    })
}

/// What [`push`] did.
pub struct Pushed {
    pub manifest_digest: String,
    pub archive_digest: String,
    pub size: u64,
    /// The signature manifest's digest, when one was pushed.
    pub signature_digest: Option<String>,
    /// Whether the signature went to the tag schema (no referrers API).
    pub signature_fallback: bool,
    pub blobs_skipped: usize,
}

/// Push the archive at `archive` (and `signature`) as `r`. `annotations`
/// go on the manifest; `file_title` names the layer.
pub fn push(
    r: &OciRef,
    config: &zot_policy::config::Config,
    archive: &Path,
    signature: Option<&Path>,
    file_title: &str,
    annotations: BTreeMap<String, String>,
    progress: &mut Report<'_>,
) -> Result<Pushed, RunError> {
    if r.digest.is_some() {
        return Err(RunError::reference(format!(
            "{r}: publish to a tag (REGISTRY/REPO[:TAG]), not a digest"
        )));
    }
    let (digest, size) = sha256_file(archive)?;
    let mut c = Client::new(r, config, true)?;
    let mut skipped = 0;
    let a = archive.to_path_buf();
    if !c.put_blob(
        &digest,
        size,
        &mut || Ok(Box::new(std::fs::File::open(&a)?) as Box<dyn Read + Send>),
        progress,
    )? {
        skipped += 1;
    }
    if !c.put_blob(
        EMPTY_DIGEST,
        2,
        &mut || Ok(Box::new(std::io::Cursor::new(EMPTY_BLOB)) as Box<dyn Read + Send>),
        &mut |_| Ok(()),
    )? {
        skipped += 1;
    }
    let m = agent_manifest(&digest, size, file_title, annotations);
    let bytes = serde_json::to_vec(&m).expect("manifest serializes");
    let tag = r.tag.clone().unwrap_or_else(|| "latest".into());
    let (mdigest, _) = c.put_manifest(&tag, MANIFEST_TYPE, &bytes)?;
    let mut signature_digest = None;
    let mut signature_fallback = false;
    if let Some(sig) = signature {
        let sbytes = std::fs::read(sig).map_err(|e| RunError::io(sig.display().to_string(), e))?;
        let sd = sha256(&sbytes);
        let sb = sbytes.clone();
        c.put_blob(
            &sd,
            sbytes.len() as u64,
            &mut || Ok(Box::new(std::io::Cursor::new(sb.clone())) as Box<dyn Read + Send>),
            &mut |_| Ok(()),
        )?;
        let mut ann = BTreeMap::new();
        ann.insert(
            TITLE.to_string(),
            format!("{file_title}{}", zot_package::signature::SIGNATURE_SUFFIX),
        );
        let sm = Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_TYPE.into()),
            artifact_type: Some(SIGNATURE_TYPE.into()),
            config: empty_config(),
            layers: vec![Descriptor {
                media_type: SIGNATURE_LAYER_TYPE.into(),
                digest: sd,
                size: sbytes.len() as u64,
                artifact_type: None,
                data: None,
                annotations: ann,
            }],
            subject: Some(Descriptor {
                media_type: MANIFEST_TYPE.into(),
                digest: mdigest.clone(),
                size: bytes.len() as u64,
                artifact_type: None,
                data: None,
                annotations: BTreeMap::new(),
            }),
            annotations: BTreeMap::new(),
        };
        let sm_bytes = serde_json::to_vec(&sm).expect("manifest serializes");
        let smd = sha256(&sm_bytes);
        let (_, subject_ok) = c.put_manifest(&smd, MANIFEST_TYPE, &sm_bytes)?;
        if !subject_ok {
            c.add_fallback_referrer(
                &mdigest,
                Descriptor {
                    media_type: MANIFEST_TYPE.into(),
                    digest: smd.clone(),
                    size: sm_bytes.len() as u64,
                    artifact_type: Some(SIGNATURE_TYPE.into()),
                    data: None,
                    annotations: BTreeMap::new(),
                },
            )?;
            signature_fallback = true;
        }
        signature_digest = Some(smd);
    }
    Ok(Pushed {
        manifest_digest: mdigest,
        archive_digest: digest,
        size,
        signature_digest,
        signature_fallback,
        blobs_skipped: skipped,
    })
}

/// Resolve `r`'s tag to its manifest digest without pulling the layer
/// (for `zot update`).
pub fn resolve_digest(r: &OciRef, config: &zot_policy::config::Config) -> Result<String, RunError> {
    let mut c = Client::new(r, config, false)?;
    let (_, d, _) = c.resolve()?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(reg: &str, repo: &str, tag: Option<&str>, d: Option<&str>) -> OciRef {
        OciRef {
            registry: reg.into(),
            repo: repo.into(),
            tag: tag.map(Into::into),
            digest: d.map(Into::into),
        }
    }

    #[test]
    fn references() {
        let d = format!("sha256:{}", "a".repeat(64));
        assert!(looks_like("ghcr.io/acme/rev"));
        assert!(looks_like("localhost/acme"));
        assert!(looks_like("127.0.0.1:5000/acme:v1"));
        assert!(looks_like("oci://acme/rev"));
        assert!(!looks_like("acme/rev"));
        assert!(!looks_like("acme/rev/go"));
        assert!(!looks_like("ghcr.io"));
        assert!(!looks_like("https://github.com/a/b"));
        assert_eq!(
            parse("ghcr.io/acme/rev").unwrap(),
            r("ghcr.io", "acme/rev", None, None)
        );
        assert_eq!(
            parse("localhost:5000/a/b:v1.2").unwrap(),
            r("localhost:5000", "a/b", Some("v1.2"), None)
        );
        assert_eq!(
            parse(&format!("oci://reg.example/a@{d}")).unwrap(),
            r("reg.example", "a", None, Some(&d))
        );
        assert_eq!(
            parse(&format!("reg.example/a:t@{d}")).unwrap(),
            r("reg.example", "a", Some("t"), Some(&d))
        );
        assert_eq!(
            parse("oci://rev").unwrap(),
            r("registry-1.docker.io", "library/rev", None, None)
        );
        assert_eq!(
            parse("docker.io/acme/rev:1").unwrap(),
            r("registry-1.docker.io", "acme/rev", Some("1"), None)
        );
        for bad in [
            "ghcr.io/",
            "ghcr.io/Acme/rev",
            "ghcr.io/acme/../rev",
            "ghcr.io/acme//rev",
            "ghcr.io/acme/rev:",
            "ghcr.io/acme/rev:-x",
            "ghcr.io/acme/rev@sha256:abc",
            "ghcr.io/acme/rev@md5:aaaa",
            "reg:99999/a",
            "ghcr.io/a_-b",
            "acme/rev",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("ghcr.io/a/b:x").unwrap().target(), "x");
        assert_eq!(parse("GHCR.io/a/b").unwrap().registry, "ghcr.io");
        assert_eq!(parse("ghcr.io/a/b").unwrap().target(), "latest");
    }

    #[test]
    fn challenges() {
        let (s, p) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="reg.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(s, "Bearer");
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "reg.example");
        assert_eq!(p["scope"], "repository:a/b:pull,push");
        let (s, p) = parse_challenge(r#"Basic realm="Registry Realm""#);
        assert_eq!(s, "Basic");
        assert_eq!(p["realm"], "Registry Realm");
    }

    #[test]
    fn manifests_are_checked() {
        let d = format!("sha256:{}", "b".repeat(64));
        let m = agent_manifest(&d, 10, "x-1.zot", BTreeMap::new());
        assert!(agent_layer(&m).is_ok());
        let mut bad = m.clone();
        bad.artifact_type = Some("application/vnd.other".into());
        assert!(agent_layer(&bad).unwrap_err().contains("not a zot agent"));
        let mut bad = m.clone();
        bad.layers[0].media_type = "application/octet-stream".into();
        assert!(agent_layer(&bad).is_err());
        let mut bad = m.clone();
        bad.layers.push(bad.layers[0].clone());
        assert!(agent_layer(&bad).is_err());
        let mut bad = m.clone();
        bad.layers[0].size = zot_package::MAX_COMPRESSED_SIZE + 1;
        assert!(agent_layer(&bad).is_err());
        let mut bad = m;
        bad.media_type = Some("application/vnd.docker.distribution.manifest.v2+json".into());
        assert!(agent_layer(&bad).is_err());
        assert_eq!(sha256(EMPTY_BLOB), EMPTY_DIGEST);
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("10.0.0.1:5000"));
        assert!(!is_loopback("ghcr.io"));
    }

    /// A registry with the referrers API (the distribution server the e2e
    /// tests run has none): in memory, one repository, one request per
    /// connection.
    fn fake_registry() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use std::collections::HashMap;
        use std::io::{BufRead, BufReader};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut blobs: HashMap<String, Vec<u8>> = HashMap::new();
            let mut manifests: HashMap<String, Vec<u8>> = HashMap::new();
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let mut parts = line.split_whitespace();
                let (method, target) = (
                    parts.next().unwrap_or("").to_string(),
                    parts.next().unwrap_or("").to_string(),
                );
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    if h == "\r\n" || h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0u8; len];
                r.read_exact(&mut body).unwrap();
                log2.lock().unwrap().push(format!("{method} {target}"));
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let mut extra = String::new();
                let (status, out): (u16, Vec<u8>) = match (method.as_str(), path) {
                    ("HEAD", p) if p.starts_with("/v2/r/blobs/") => {
                        let d = &p["/v2/r/blobs/".len()..];
                        (if blobs.contains_key(d) { 200 } else { 404 }, Vec::new())
                    }
                    ("GET", p) if p.starts_with("/v2/r/blobs/") => {
                        match blobs.get(&p["/v2/r/blobs/".len()..]) {
                            Some(b) => (200, b.clone()),
                            None => (404, Vec::new()),
                        }
                    }
                    ("POST", "/v2/r/blobs/uploads/") => {
                        extra = "Location: /v2/r/blobs/uploads/u1\r\n".into();
                        (202, Vec::new())
                    }
                    ("PUT", "/v2/r/blobs/uploads/u1") => {
                        let d = query.strip_prefix("digest=").unwrap().to_string();
                        assert_eq!(sha256(&body), d);
                        blobs.insert(d, body);
                        (201, Vec::new())
                    }
                    ("PUT", p) if p.starts_with("/v2/r/manifests/") => {
                        let d = sha256(&body);
                        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                        if let Some(sub) = v["subject"]["digest"].as_str() {
                            extra = format!("OCI-Subject: {sub}\r\n");
                        }
                        manifests.insert(p["/v2/r/manifests/".len()..].to_string(), body.clone());
                        manifests.insert(d, body);
                        (201, Vec::new())
                    }
                    ("GET", p) if p.starts_with("/v2/r/manifests/") => {
                        match manifests.get(&p["/v2/r/manifests/".len()..]) {
                            Some(b) => (200, b.clone()),
                            None => (404, Vec::new()),
                        }
                    }
                    ("GET", p) if p.starts_with("/v2/r/referrers/") => {
                        let subject = &p["/v2/r/referrers/".len()..];
                        let mut seen = std::collections::BTreeSet::new();
                        let list: Vec<serde_json::Value> = manifests
                            .values()
                            .filter_map(|b| {
                                let v: serde_json::Value = serde_json::from_slice(b).ok()?;
                                (v["subject"]["digest"] == subject && seen.insert(sha256(b))).then(
                                    || {
                                        serde_json::json!({
                                            "mediaType": MANIFEST_TYPE,
                                            "digest": sha256(b),
                                            "size": b.len(),
                                            "artifactType": v["artifactType"],
                                        })
                                    },
                                )
                            })
                            .collect();
                        let idx = serde_json::json!({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": list});
                        (200, serde_json::to_vec(&idx).unwrap())
                    }
                    _ => (404, Vec::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
                    out.len()
                );
                let _ = s.write_all(head.as_bytes());
                if method != "HEAD" {
                    let _ = s.write_all(&out);
                }
            }
        });
        (port, log)
    }

    #[test]
    fn signatures_through_the_referrers_api() {
        let (port, log) = fake_registry();
        let d = tempfile::tempdir().unwrap();
        let archive = d.path().join("a-1.zot");
        std::fs::write(&archive, b"archive bytes").unwrap();
        let sig = d.path().join("a-1.zot.minisig");
        std::fs::write(&sig, b"signature bytes").unwrap();
        let r = parse(&format!("127.0.0.1:{port}/r:v1")).unwrap();
        let cfg = zot_policy::config::Config::default();
        let p = push(
            &r,
            &cfg,
            &archive,
            Some(&sig),
            "a-1.zot",
            BTreeMap::new(),
            &mut |_| Ok(()),
        )
        .unwrap();
        assert!(p.signature_digest.is_some());
        assert!(!p.signature_fallback, "the registry answered OCI-Subject");
        assert!(
            !log.lock().unwrap().iter().any(|l| l.contains("sha256-")),
            "no tag-schema index is written: {:?}",
            log.lock().unwrap()
        );
        let out = tempfile::tempdir().unwrap();
        let none = zot_package::signature::KeySet::default();
        let pulled = pull(&r, &cfg, out.path(), &none, &mut |_| Ok(())).unwrap();
        assert_eq!(pulled.manifest_digest, p.manifest_digest);
        assert_eq!(std::fs::read(&pulled.archive).unwrap(), b"archive bytes");
        let s = pulled.signature.expect("found through the referrers API");
        assert_eq!(std::fs::read(s).unwrap(), b"signature bytes");
        assert!(log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("GET /v2/r/referrers/")));
    }

    #[test]
    fn a_manifest_over_the_limit_is_refused() {
        let (port, _) = fake_registry();
        let r = parse(&format!("127.0.0.1:{port}/r:big")).unwrap();
        let cfg = zot_policy::config::Config::default();
        let mut c = Client::new(&r, &cfg, true).unwrap();
        let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_MANIFEST as usize));
        c.put_manifest("big", MANIFEST_TYPE, big.as_bytes())
            .unwrap();
        let out = tempfile::tempdir().unwrap();
        let none = zot_package::signature::KeySet::default();
        let e = pull(&r, &cfg, out.path(), &none, &mut |_| Ok(()))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("a manifest is at most"), "{e}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }
}
