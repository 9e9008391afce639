//! End-to-end tests of agents in OCI registries against a real registry:
//! Debian's `docker-registry` (the CNCF distribution server) on loopback,
//! with no auth, htpasswd basic auth, or a Bearer token endpoint served by
//! the test; interop with an independent client (the `oras` Python SDK).
//! See docs/registries.md.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::run::{s, text, World};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/oci")
        .join(name)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_port(port: u16) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "nothing listens on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn need_registry() -> bool {
    common::require(
        "docker-registry",
        have("docker-registry") && have("curl"),
        "Debian's docker-registry (and curl) are not installed (ci/setup.sh installs them)",
    )
}

/// A distribution server on 127.0.0.1 with its storage under `root`.
struct Registry {
    child: Option<Child>,
    port: u16,
    root: PathBuf,
    config: PathBuf,
}

impl Registry {
    /// `auth` is the config's `auth:` section (YAML, indented), or empty.
    fn start(root: &Path, auth: &str) -> Registry {
        let port = free_port();
        let root = root.join(format!("registry-{port}"));
        std::fs::create_dir_all(root.join("data")).unwrap();
        let config = root.join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}",
                root.join("data").display()
            ),
        )
        .unwrap();
        let mut r = Registry {
            child: None,
            port,
            root,
            config,
        };
        r.restart();
        r
    }

    fn restart(&mut self) {
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.root.join("log")).unwrap())
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_port(self.port);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The stored content of blob `digest`.
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.root
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// GET `url` with curl (no credentials): (status, body).
fn curl(url: &str, accept: &str) -> (u16, Vec<u8>) {
    let out = Command::new("curl")
        .args([
            "-s",
            "-H",
            &format!("Accept: {accept}"),
            "-w",
            "\n%{http_code}",
            url,
        ])
        .output()
        .unwrap();
    let mut body = out.stdout;
    let nl = body.iter().rposition(|&b| b == b'\n').unwrap();
    let code = String::from_utf8_lossy(&body[nl + 1..]).parse().unwrap();
    body.truncate(nl);
    (code, body)
}

fn sha256_hex(b: &[u8]) -> String {
    // sha256sum keeps the test free of a hashing dependency.
    let mut c = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin.take().unwrap().write_all(b).unwrap();
    let out = c.wait_with_output().unwrap();
    format!(
        "sha256:{}",
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap()
    )
}

fn zot(w: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = w.cmd(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn fails(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "unexpected success\nstdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stderr)
}

/// The `digest sha256:...` line `zot publish` prints.
fn published_digest(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("digest "))
        .unwrap_or_else(|| panic!("no digest line in {out}"))
        .trim()
        .to_string()
}

fn greeter(w: &World, name: &str, version: &str) -> PathBuf {
    w.agent(
        name,
        json!({
            "version": version,
            "description": "Says what it is told",
            "permissions": {"fs": {"read": ["${workspace}"], "write": []}, "bash": {"mode": "none"}},
            "entry": {"default_prompt": "hello from the default"}
        }),
    )
}

/// `zot run REF -y --print --no-session PROMPT`, non-interactive.
fn run_ref(w: &World, r: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", r, "-y", "--print", "--no-session"];
    args.extend_from_slice(extra);
    args.push("hi there");
    zot(w, &args, env)
}

fn installed(w: &World) -> Vec<Value> {
    let out = ok(&zot(w, &["agents", "--json"], &[]));
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Nothing installed and no archive kept.
fn store_is_empty(w: &World) {
    assert!(installed(w).is_empty());
    let blobs = w.zot_home.join("agents/.blobs/sha256");
    let n = std::fs::read_dir(&blobs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(n, 0, "archives left in {}", blobs.display());
}

#[test]
fn publish_then_run_by_tag_and_by_digest() {
    if !need_registry() {
        return;
    }
    let w = World::new();
    let reg = Registry::start(&w.root, "");
    let agent = greeter(&w, "greeter", "1.0.0");
    let r = format!("{}/acme/greeter:v1", reg.host());
    let out = ok(&zot(&w, &["publish", s(&agent), &r], &[]));
    let digest = published_digest(&out);

    // The artifact: OCI 1.1 manifest, empty config, one layer that is the
    // .zot byte for byte (the local pack is deterministic).
    let local = w.root.join("local.zot");
    ok(&zot(&w, &["pack", s(&agent), s(&local)], &[]));
    let zot_bytes = std::fs::read(&local).unwrap();
    let (code, body) = curl(
        &format!("http://{}/v2/acme/greeter/manifests/v1", reg.host()),
        "application/vnd.oci.image.manifest.v1+json",
    );
    assert_eq!(code, 200);
    assert_eq!(
        sha256_hex(&body),
        digest,
        "printed digest is the manifest's"
    );
    let m: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(m["schemaVersion"], 2);
    assert_eq!(m["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(m["artifactType"], "application/vnd.zot.agent.v1");
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    assert_eq!(m["config"]["size"], 2);
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.zot.agent.layer.v1.tar+zstd"
    );
    assert_eq!(layers[0]["digest"], json!(sha256_hex(&zot_bytes)));
    assert_eq!(layers[0]["size"], json!(zot_bytes.len()));
    assert_eq!(
        layers[0]["annotations"]["org.opencontainers.image.title"],
        "greeter-1.0.0.zot"
    );
    let ann = &m["annotations"];
    assert_eq!(ann["org.opencontainers.image.title"], "greeter");
    assert_eq!(ann["org.opencontainers.image.version"], "1.0.0");
    assert_eq!(
        ann["org.opencontainers.image.description"],
        "Says what it is told"
    );

    // Run by tag (the tag is resolved once; the digest is shown), by
    // digest, and through oci://.
    let o = run_ref(&w, &r, &[], &[]);
    assert!(ok(&o).contains("echo: hi there"));
    assert!(
        text(&o.stderr).contains(&format!("acme/greeter@{digest}")),
        "{}",
        text(&o.stderr)
    );
    let by_digest = format!("{}/acme/greeter@{digest}", reg.host());
    assert!(ok(&run_ref(&w, &by_digest, &[], &[])).contains("echo: hi there"));
    let oci = format!("oci://{by_digest}");
    assert!(ok(&run_ref(&w, &oci, &[], &[])).contains("echo: hi there"));
    let i = ok(&zot(&w, &["inspect", &r], &[]));
    assert!(i.contains("greeter") && i.contains("1.0.0"), "{i}");

    // A digest the registry does not have, a tag it does not have.
    let absent = format!("{}/acme/greeter@sha256:{}", reg.host(), "0".repeat(64));
    assert!(fails(&run_ref(&w, &absent, &[], &[])).contains("not found"));
    let absent = format!("{}/acme/greeter:nope", reg.host());
    assert!(fails(&run_ref(&w, &absent, &[], &[])).contains("not found"));

    // Malformed references fail before any request.
    for (bad, says) in [
        (format!("{}/Acme/greeter", reg.host()), "repository parts"),
        (format!("{}/acme/greeter@sha256:abc", reg.host()), "digest"),
        (format!("{}/acme/greeter:-x", reg.host()), "tag"),
    ] {
        let e = fails(&run_ref(&w, &bad, &[], &[]));
        assert!(e.contains(says), "{bad}: {e}");
    }

    // Publishing again sends no blob twice.
    let o = ok(&zot(&w, &["publish", s(&agent), &r, "--json"], &[]));
    let v: Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["digest"], json!(digest));
    assert_eq!(v["blobs_skipped"], 2);
    // A .zot publishes the same artifact as its directory.
    let o = ok(&zot(&w, &["publish", s(&local), &r], &[]));
    assert_eq!(published_digest(&o), digest);
    // Publishing to a digest is refused.
    let e = fails(&zot(&w, &["publish", s(&agent), &by_digest], &[]));
    assert!(e.contains("not a digest"), "{e}");
}

fn need_oras() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import oras.client"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    common::require(
        "the oras Python SDK",
        ok,
        "python3 cannot import oras (ci/setup.sh installs it with pip)",
    )
}

fn oras(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(fixture("oras_client.py"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn oras_interop_both_ways_and_foreign_artifacts_refused() {
    if !need_registry() || !need_oras() {
        return;
    }
    let w = World::new();
    let reg = Registry::start(&w.root, "");
    let h = reg.host();
    let agent = greeter(&w, "greeter", "1.0.0");
    let local = w.root.join("local.zot");
    ok(&zot(&w, &["pack", s(&agent), s(&local)], &[]));

    // zot pushes, oras pulls the .zot byte for byte.
    ok(&zot(
        &w,
        &["publish", s(&agent), &format!("{h}/zot/greeter:v1")],
        &[],
    ));
    let outdir = w.root.join("oras-out");
    let o = oras(&["pull", &h, &format!("{h}/zot/greeter:v1"), s(&outdir)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let pulled = outdir.join("greeter-1.0.0.zot");
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(&local).unwrap()
    );

    // oras pushes with zot's media types, zot runs it.
    let src = w.root.join("oras-src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&local, src.join("greeter.zot")).unwrap();
    let o = oras(&[
        "push",
        &h,
        &format!("{h}/oras/greeter:v1"),
        s(&src.join("greeter.zot")),
        "application/vnd.zot.agent.layer.v1.tar+zstd",
        "application/vnd.zot.agent.v1",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = ok(&run_ref(&w, &format!("{h}/oras/greeter:v1"), &[], &[]));
    assert!(out.contains("echo: hi there"), "{out}");

    // Another artifact type, another layer type: refused, nothing kept.
    for (repo, layer, config, says) in [
        (
            "other/kind",
            "application/vnd.zot.agent.layer.v1.tar+zstd",
            "application/vnd.example.thing.v1",
            "not a zot agent",
        ),
        (
            "other/layer",
            "application/octet-stream",
            "application/vnd.zot.agent.v1",
            "unsupported layer media type",
        ),
    ] {
        let o = oras(&[
            "push",
            &h,
            &format!("{h}/{repo}:v1"),
            s(&src.join("greeter.zot")),
            layer,
            config,
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let e = fails(&run_ref(&w, &format!("{h}/{repo}:v1"), &[], &[]));
        assert!(e.contains(says), "{repo}: {e}");
        let e = fails(&zot(&w, &["install", &format!("{h}/{repo}:v1")], &[]));
        assert!(e.contains(says), "{repo}: {e}");
        store_is_empty(&w);
    }

    // A layer that is not a valid .zot: the loader refuses it.
    let junk = src.join("junk.zot");
    std::fs::write(&junk, b"this is not a zstd tar").unwrap();
    let o = oras(&[
        "push",
        &h,
        &format!("{h}/oras/junk:v1"),
        s(&junk),
        "application/vnd.zot.agent.layer.v1.tar+zstd",
        "application/vnd.zot.agent.v1",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    fails(&run_ref(&w, &format!("{h}/oras/junk:v1"), &[], &[]));
    fails(&zot(&w, &["install", &format!("{h}/oras/junk:v1")], &[]));
    store_is_empty(&w);
}

#[test]
fn tampered_blob_is_refused_and_nothing_is_installed() {
    if !need_registry() {
        return;
    }
    let w = World::new();
    let reg = Registry::start(&w.root, "");
    let agent = greeter(&w, "greeter", "1.0.0");
    let r = format!("{}/acme/greeter:v1", reg.host());
    let o = ok(&zot(&w, &["publish", s(&agent), &r, "--json"], &[]));
    let v: Value = serde_json::from_str(&o).unwrap();
    let layer = v["archive_digest"].as_str().unwrap().to_string();
    // Control: it runs as published.
    ok(&run_ref(&w, &r, &[], &[]));
    // The registry's storage is changed under it (same size).
    let blob = reg.blob_file(&layer);
    let mut bytes = std::fs::read(&blob).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&blob, &bytes).unwrap();
    for o in [
        run_ref(&w, &r, &[], &[]),
        zot(&w, &["install", &r], &[]),
        zot(&w, &["inspect", &r], &[]),
    ] {
        let e = fails(&o);
        assert!(e.contains("does not match its digest"), "{e}");
    }
    store_is_empty(&w);
}

fn keygen(w: &World, name: &str) -> PathBuf {
    let key = w.root.join(name);
    ok(&zot(&w, &["keygen", "--unencrypted", s(&key)], &[]));
    key
}

fn trust(w: &World, key: &Path) {
    let dir = w.zot_home.join("trusted-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let pubkey = PathBuf::from(format!("{}.pub", key.display()));
    std::fs::copy(&pubkey, dir.join(pubkey.file_name().unwrap())).unwrap();
}

#[test]
fn signatures_travel_as_referrers() {
    if !need_registry() {
        return;
    }
    let w = World::new();
    let reg = Registry::start(&w.root, "");
    let h = reg.host();
    let key = keygen(&w, "publisher");
    trust(&w, &key);
    let agent = greeter(&w, "greeter", "1.0.0");

    // Signed with --key: the signature is a referrer (this registry has
    // no referrers API, so through the tag schema).
    let signed = format!("{h}/acme/signed:v1");
    let o = ok(&zot(
        &w,
        &["publish", s(&agent), &signed, "--key", s(&key)],
        &[],
    ));
    let digest = published_digest(&o);
    assert!(
        o.contains("signature sha256:") && o.contains("tag schema"),
        "{o}"
    );
    let fallback = digest.replace(':', "-");
    let (code, body) = curl(
        &format!("http://{h}/v2/acme/signed/manifests/{fallback}"),
        "application/vnd.oci.image.index.v1+json",
    );
    assert_eq!(code, 200);
    let index: Value = serde_json::from_slice(&body).unwrap();
    let refs = index["manifests"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        refs[0]["artifactType"],
        "application/vnd.zot.agent.signature.v1"
    );
    let sig_digest = refs[0]["digest"].as_str().unwrap();
    let (_, sm) = curl(
        &format!("http://{h}/v2/acme/signed/manifests/{sig_digest}"),
        "application/vnd.oci.image.manifest.v1+json",
    );
    let sm: Value = serde_json::from_slice(&sm).unwrap();
    assert_eq!(sm["subject"]["digest"], json!(digest));

    // verify and unpack take registry references too.
    let v = ok(&zot(&w, &["verify", &signed, "--json"], &[]));
    let v: Value = serde_json::from_str(&v).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["signature"]["checked"], true, "{v}");
    let dest = w.root.join("unpacked");
    ok(&zot(&w, &["unpack", &signed, s(&dest)], &[]));
    assert!(dest.join("manifest.json").is_file());
    let o = run_ref(&w, &signed, &["--require-signature"], &[]);
    assert!(ok(&o).contains("echo: hi there"));
    assert!(
        text(&o.stderr).contains("signature verified"),
        "{}",
        text(&o.stderr)
    );

    // Unsigned: runs without the requirement, refused with it (run and
    // install alike).
    let unsigned = format!("{h}/acme/unsigned:v1");
    ok(&zot(&w, &["publish", s(&agent), &unsigned], &[]));
    ok(&run_ref(&w, &unsigned, &[], &[]));
    let e = fails(&run_ref(&w, &unsigned, &["--require-signature"], &[]));
    assert!(e.contains("a signature is required"), "{e}");
    let e = fails(&zot(
        &w,
        &["install", &unsigned, "--require-signature"],
        &[],
    ));
    assert!(e.contains("a signature is required"), "{e}");
    store_is_empty(&w);

    // A .zot with its .minisig next to it publishes both.
    let local = w.root.join("greeter.zot");
    ok(&zot(&w, &["pack", s(&agent), s(&local)], &[]));
    ok(&zot(&w, &["sign", s(&local), "--key", s(&key)], &[]));
    let file = format!("{h}/acme/file:v1");
    let o = ok(&zot(&w, &["publish", s(&local), &file], &[]));
    assert!(o.contains("signature sha256:"), "{o}");
    ok(&run_ref(&w, &file, &["--require-signature"], &[]));
    let o = ok(&zot(&w, &["install", &file, "--require-signature"], &[]));
    assert!(o.contains("signature verified"), "{o}");
    ok(&run_ref(&w, "greeter", &["--require-signature"], &[]));

    // Signed by a key that is not trusted: refused under the requirement.
    let other = keygen(&w, "stranger");
    let stranger = format!("{h}/acme/stranger:v1");
    ok(&zot(
        &w,
        &["publish", s(&agent), &stranger, "--key", s(&other)],
        &[],
    ));
    fails(&run_ref(&w, &stranger, &["--require-signature"], &[]));
    // The publisher's signature added next to the stranger's: the one by a
    // trusted key is used, whichever is listed first.
    ok(&zot(
        &w,
        &["publish", s(&agent), &stranger, "--key", s(&key)],
        &[],
    ));
    let o = run_ref(&w, &stranger, &["--require-signature"], &[]);
    ok(&o);
    assert!(
        text(&o.stderr).contains("signature verified"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn install_run_offline_update_and_remove() {
    if !need_registry() {
        return;
    }
    let w = World::new();
    let mut reg = Registry::start(&w.root, "");
    let h = reg.host();
    let agent = greeter(&w, "greeter", "1.0.0");
    let r = format!("{h}/acme/greeter:stable");
    let d1 = published_digest(&ok(&zot(&w, &["publish", s(&agent), &r], &[])));
    let o = ok(&zot(&w, &["install", &r], &[]));
    assert!(
        o.contains("installed greeter 1.0.0") && o.contains(&d1),
        "{o}"
    );
    let list = installed(&w);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], "greeter");
    assert_eq!(list[0]["version"], "1.0.0");
    assert_eq!(list[0]["manifest_digest"], json!(d1));
    assert_eq!(list[0]["source"], json!(r));
    let table = ok(&zot(&w, &["agents"], &[]));
    assert!(
        table.contains("greeter") && table.contains("1.0.0") && table.contains(&r),
        "{table}"
    );

    // Offline: the registry is gone, the installed agent runs.
    reg.stop();
    assert!(ok(&run_ref(&w, "greeter", &[], &[])).contains("echo: hi there"));
    fails(&run_ref(&w, &r, &[], &[]));
    // `zot use` makes it the default of `zot run` with no reference.
    let e = fails(&zot(&w, &["run", "-y", "--print", "--no-session"], &[]));
    assert!(e.contains("no default agent"), "{e}");
    fails(&zot(&w, &["use", "absent"], &[]));
    ok(&zot(&w, &["use", "greeter"], &[]));
    let out = ok(&zot(&w, &["run", "-y", "--print", "--no-session"], &[]));
    assert!(out.contains("echo: hello from the default"), "{out}");
    let v = installed(&w);
    assert_eq!(v[0]["default"], true);

    // A new version at the same tag.
    reg.restart();
    let up = ok(&zot(&w, &["update"], &[]));
    assert!(up.contains("up to date"), "{up}");
    let agent2 = greeter(&w, "greeter", "2.0.0");
    assert_eq!(agent, agent2);
    let d2 = published_digest(&ok(&zot(&w, &["publish", s(&agent2), &r], &[])));
    assert_ne!(d1, d2);
    // No terminal and no -y: shown, not replaced.
    let o = ok(&zot(&w, &["update", "greeter"], &[]));
    assert!(o.contains(&format!("1.0.0 ({d1}) -> 2.0.0 ({d2})")), "{o}");
    assert!(o.contains("kept"), "{o}");
    assert_eq!(installed(&w)[0]["version"], "1.0.0");
    // A new version that fails a required signature: the old one stays.
    let o = zot(&w, &["update", "-y", "--require-signature"], &[]);
    let e = fails(&o);
    assert!(e.contains("is kept") && e.contains("signature"), "{e}");
    assert_eq!(installed(&w)[0]["version"], "1.0.0");
    // -y replaces.
    let o = ok(&zot(&w, &["update", "-y"], &[]));
    assert!(
        o.contains(&format!("1.0.0 ({d1}) -> 2.0.0 ({d2})")) && o.contains("updated"),
        "{o}"
    );
    let v = installed(&w);
    assert_eq!(v[0]["version"], "2.0.0");
    assert_eq!(v[0]["manifest_digest"], json!(d2));
    // On a terminal, update asks: no keeps, yes replaces.
    greeter(&w, "greeter", "3.0.0");
    let d3 = published_digest(&ok(&zot(&w, &["publish", s(&agent), &r], &[])));
    for (answer, then) in [("n", "kept 2.0.0"), ("y", "greeter: updated")] {
        let mut p = common::pty::Pty::spawn(w.cmd(&["update", "greeter"]));
        p.expect(&format!("2.0.0 ({d2}) -> 3.0.0 ({d3})"));
        p.at_prompt("replace greeter? [y/N]", &format!("{answer}\r"));
        p.expect(then);
        let (_, code) = p.finish();
        assert_eq!(code, Some(0));
    }
    assert_eq!(installed(&w)[0]["version"], "3.0.0");
    reg.stop();
    assert!(ok(&run_ref(&w, "greeter", &[], &[])).contains("echo: hi there"));

    // Local sources install too, under another name.
    let o = ok(&zot(&w, &["install", s(&agent), "--name", "mine"], &[]));
    assert!(o.contains("installed mine 3.0.0"), "{o}");
    let e = fails(&zot(&w, &["install", s(&agent), "--name", "Bad/Name"], &[]));
    assert!(e.contains("name"), "{e}");
    // A stored archive changed on disk is refused.
    let rec = installed(&w);
    let mine = rec.iter().find(|r| r["name"] == "mine").unwrap();
    let hex = mine["digest"]
        .as_str()
        .unwrap()
        .strip_prefix("sha256:")
        .unwrap();
    let blob = w.zot_home.join(format!("agents/.blobs/sha256/{hex}.zot"));
    let good = std::fs::read(&blob).unwrap();
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    std::fs::write(&blob, &bad).unwrap();
    let e = fails(&run_ref(&w, "mine", &[], &[]));
    assert!(e.contains("does not match its recorded digest"), "{e}");
    std::fs::write(&blob, &good).unwrap();

    // Remove.
    fails(&zot(&w, &["remove", "absent"], &[]));
    let o = ok(&zot(&w, &["remove", "greeter", "mine"], &[]));
    assert!(o.contains("removed greeter 3.0.0"), "{o}");
    store_is_empty(&w);
    let e = fails(&run_ref(&w, "greeter", &[], &[]));
    assert!(e.contains("no installed agent"), "{e}");
    fails(&zot(&w, &["run", "-y", "--print", "--no-session"], &[]));
}

/// Basic credentials in a Docker config and a credential helper; nothing
/// of them lands in zot's output or under its home.
#[test]
fn basic_auth_from_docker_config_and_credential_helpers() {
    if !need_registry()
        || !common::require(
            "htpasswd",
            have("htpasswd"),
            "apache2-utils is not installed",
        )
    {
        return;
    }
    let w = World::new();
    let htp = w.root.join("htpasswd");
    let o = Command::new("htpasswd")
        .args(["-Bbc", s(&htp), "alice", "s3cret-pass"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reg = Registry::start(
        &w.root,
        &format!(
            "auth:\n  htpasswd:\n    realm: zot-test\n    path: {}\n",
            htp.display()
        ),
    );
    let h = reg.host();
    let agent = greeter(&w, "greeter", "1.0.0");
    let r = format!("{h}/acme/greeter:v1");
    // No credentials: a clear refusal.
    let e = fails(&zot(&w, &["publish", s(&agent), &r], &[]));
    assert!(e.contains("no credentials") && e.contains(&h), "{e}");
    let e = fails(&run_ref(&w, &r, &[], &[]));
    assert!(e.contains("no credentials"), "{e}");

    // DOCKER_CONFIG with `auths`.
    use base64_free::encode;
    let dc = w.root.join("docker");
    std::fs::create_dir_all(&dc).unwrap();
    std::fs::write(
        dc.join("config.json"),
        json!({"auths": {&h: {"auth": encode("alice:s3cret-pass")}}}).to_string(),
    )
    .unwrap();
    let env = [("DOCKER_CONFIG", s(&dc))];
    let p = zot(&w, &["publish", s(&agent), &r], &env);
    ok(&p);
    let run = zot(&w, &["run", &r, "-y", "--print", "hi there"], &env);
    assert!(ok(&run).contains("echo: hi there"));
    ok(&zot(&w, &["install", &r], &env));
    // ~/.docker/config.json when DOCKER_CONFIG is unset.
    std::fs::create_dir_all(w.home.join(".docker")).unwrap();
    std::fs::copy(dc.join("config.json"), w.home.join(".docker/config.json")).unwrap();
    ok(&run_ref(&w, &r, &[], &[]));
    std::fs::remove_file(w.home.join(".docker/config.json")).unwrap();

    // A credential helper (credsStore), found on PATH.
    let bin = w.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-zottest");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\n[ \"$host\" = \"{h}\" ] || {{ echo 'credentials not found'; exit 1; }}\necho '{{\"ServerURL\":\"{h}\",\"Username\":\"alice\",\"Secret\":\"s3cret-pass\"}}'\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hc = w.root.join("docker-helper");
    std::fs::create_dir_all(&hc).unwrap();
    std::fs::write(
        hc.join("config.json"),
        json!({"credsStore": "zottest"}).to_string(),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let helper_env = [("DOCKER_CONFIG", s(&hc)), ("PATH", path.as_str())];
    assert!(ok(&run_ref(&w, &r, &[], &helper_env)).contains("echo: hi there"));
    // credHelpers names a helper per registry.
    std::fs::write(
        hc.join("config.json"),
        json!({"credHelpers": {&h: "zottest"}}).to_string(),
    )
    .unwrap();
    ok(&run_ref(&w, &r, &[], &helper_env));

    // Wrong password: refused, said so.
    std::fs::write(
        dc.join("config.json"),
        json!({"auths": {&h: {"auth": encode("alice:wrong")}}}).to_string(),
    )
    .unwrap();
    let e = fails(&run_ref(&w, &r, &[], &env));
    assert!(e.contains("access denied with the credentials"), "{e}");

    // The secret is in no output and in no file zot keeps (sessions,
    // records, receipts).
    for o in [&p, &run] {
        assert!(!text(&o.stdout).contains("s3cret") && !text(&o.stderr).contains("s3cret"));
        assert!(!text(&o.stderr).contains(&encode("alice:s3cret-pass")));
    }
    let grep = Command::new("grep")
        .args([
            "-r",
            "-l",
            "-e",
            "s3cret",
            "-e",
            &encode("alice:s3cret-pass"),
            s(&w.zot_home),
        ])
        .output()
        .unwrap();
    assert!(grep.stdout.is_empty(), "{}", text(&grep.stdout));
}

/// The Bearer challenge of GHCR and Docker Hub: the registry's token auth
/// with a token endpoint served by the test (anonymous pull tokens, and
/// push tokens for Basic credentials).
#[test]
fn bearer_token_challenge_anonymous_and_with_credentials() {
    if !need_registry() || !common::require("openssl", have("openssl"), "openssl is not installed")
    {
        return;
    }
    let w = World::new();
    let dir = w.root.join("token");
    std::fs::create_dir_all(&dir).unwrap();
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    let o = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "2", "-subj", "/CN=zot-test-token"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tport = free_port();
    let log = dir.join("log");
    let mut token = Command::new("python3")
        .arg(fixture("token_server.py"))
        .args([
            &tport.to_string(),
            s(&key),
            s(&cert),
            "zot-test",
            "zot-test-issuer",
            "alice:t0ken-pass",
            s(&log),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _token = Kill(&mut token);
    wait_port(tport);
    let reg = Registry::start(
        &w.root,
        &format!(
            "auth:\n  token:\n    realm: http://127.0.0.1:{tport}/token\n    service: zot-test\n    issuer: zot-test-issuer\n    rootcertbundle: {}\n",
            cert.display()
        ),
    );
    let h = reg.host();
    let agent = greeter(&w, "greeter", "1.0.0");
    let r = format!("{h}/acme/greeter:v1");
    // Anonymous tokens pull only: the push is refused.
    let e = fails(&zot(&w, &["publish", s(&agent), &r], &[]));
    assert!(e.contains("no credentials"), "{e}");
    // With credentials, a push token.
    let dc = w.root.join("docker");
    std::fs::create_dir_all(&dc).unwrap();
    std::fs::write(
        dc.join("config.json"),
        json!({"auths": {&h: {"username": "alice", "password": "t0ken-pass"}}}).to_string(),
    )
    .unwrap();
    ok(&zot(
        &w,
        &["publish", s(&agent), &r],
        &[("DOCKER_CONFIG", s(&dc))],
    ));
    // Anonymous pull (no Docker config at all).
    assert!(ok(&run_ref(&w, &r, &[], &[])).contains("echo: hi there"));
    let l = std::fs::read_to_string(&log).unwrap();
    assert!(l.contains("alice repository:acme/greeter:pull,push"), "{l}");
    assert!(l.contains("anonymous repository:acme/greeter:pull"), "{l}");
    // Credentials the token endpoint refuses.
    std::fs::write(
        dc.join("config.json"),
        json!({"auths": {&h: {"username": "alice", "password": "nope"}}}).to_string(),
    )
    .unwrap();
    let e = fails(&run_ref(&w, &r, &[], &[("DOCKER_CONFIG", s(&dc))]));
    assert!(e.contains("credentials were refused"), "{e}");
}

/// A name other than `localhost` that the hosts file maps to a loopback
/// address (the registry is spoken to by name, so it is not a loopback
/// registry to zot).
fn loopback_alias() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts.lines().find_map(|l| {
        let l = l.split('#').next()?;
        let mut f = l.split_whitespace();
        let addr = f.next()?;
        if !addr.starts_with("127.") {
            return None;
        }
        f.find(|n| {
            *n != "localhost"
                && !n.contains("localhost")
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b))
        })
        .map(String::from)
    })
}

#[test]
fn plain_http_only_for_loopback_or_registries_marked_insecure_in_config() {
    if !need_registry() {
        return;
    }
    // Not a kernel feature: a host without such a name skips this test
    // even under ZOT_TEST_MUST_WORK (the CI machines have one).
    let Some(alias) = loopback_alias() else {
        eprintln!("skipped: /etc/hosts maps no name but localhost to 127.0.0.0/8");
        return;
    };
    let w = World::new();
    let reg = Registry::start(&w.root, "");
    let agent = greeter(&w, "greeter", "1.0.0");
    let named = format!("{alias}:{}", reg.port);
    let r = format!("{named}/acme/greeter:v1");
    // Not loopback by its name, not in the config: HTTPS, which this
    // plain-HTTP registry does not speak.
    fails(&zot(&w, &["publish", s(&agent), &r], &[]));
    let (code, _) = curl(
        &format!("http://{}/v2/acme/greeter/tags/list", reg.host()),
        "*/*",
    );
    assert_eq!(code, 404, "nothing was pushed");
    // What zot speaks there is TLS, and it checks the certificate: a
    // self-signed one is refused.
    if common::require("openssl", have("openssl"), "openssl is not installed") {
        let (key, cert) = (w.root.join("tls-key.pem"), w.root.join("tls-cert.pem"));
        let o = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .args(["-days", "2", "-subj", &format!("/CN={alias}")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let tls_port = free_port();
        let mut tls = Command::new("openssl")
            .args([
                "s_server",
                "-quiet",
                "-www",
                "-accept",
                &tls_port.to_string(),
                "-cert",
            ])
            .arg(&cert)
            .arg("-key")
            .arg(&key)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_port(tls_port);
        let e = fails(&run_ref(
            &w,
            &format!("{alias}:{tls_port}/acme/greeter:v1"),
            &[],
            &[],
        ));
        let _ = tls.kill();
        let _ = tls.wait();
        assert!(e.contains("certificate"), "{e}");
    }
    // The config file zot reads ($ZOT_HOME/config.toml) marks it insecure.
    std::fs::create_dir_all(&w.zot_home).unwrap();
    let cfg = w.zot_home.join("config.toml");
    std::fs::write(&cfg, format!("[registries.\"{named}\"]\ninsecure = true\n")).unwrap();
    let d = published_digest(&ok(&zot(&w, &["publish", s(&agent), &r], &[])));
    assert!(ok(&run_ref(&w, &r, &[], &[])).contains("echo: hi there"));
    ok(&zot(
        &w,
        &["install", &format!("{named}/acme/greeter@{d}")],
        &[],
    ));
    // Another registry is not covered by that entry.
    let other = format!("{alias}:{}/acme/greeter:v1", free_port());
    fails(&run_ref(&w, &other, &[], &[]));
    // A malformed entry is an error naming it.
    std::fs::write(
        &cfg,
        format!("[registries.\"{named}\"]\ninsecure = \"yes\"\n"),
    )
    .unwrap();
    let e = fails(&run_ref(&w, &r, &[], &[]));
    assert!(
        e.contains(&format!("registries.\"{named}\".insecure")),
        "{e}"
    );
    std::fs::write(&cfg, "[registries.\"Not A Host\"]\ninsecure = true\n").unwrap();
    let e = fails(&zot(&w, &["publish", s(&agent), &r], &[]));
    assert!(e.contains("not a registry host"), "{e}");
}

/// Base64 for the test's Docker configs (no dependency).
mod base64_free {
    pub fn encode(s: &str) -> String {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b = s.as_bytes();
        let mut out = String::new();
        for c in b.chunks(3) {
            let n = (c[0] as u32) << 16
                | (*c.get(1).unwrap_or(&0) as u32) << 8
                | *c.get(2).unwrap_or(&0) as u32;
            for i in 0..4 {
                if i <= c.len() {
                    out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}
