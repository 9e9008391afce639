//! Keys and signatures: every malformed field of a public key, secret key
//! and `.minisig` file is refused with an error naming it; signatures made
//! with `zot_package::sign` verify, and tampering in any part is refused.
//! (Interop with the real `minisign` tool: tests/e2e_sign.rs.)

mod util;

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use zot_package::signature::{
    self, keygen, signature_path, FormatError, KeySet, Protection, PublicKey, SecretKeyFile,
    Signature, SignatureError,
};

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .unwrap()
}

/// A packed agent archive in `dir`.
fn archive(dir: &Path, name: &str, version: &str) -> PathBuf {
    let src = dir.join(format!("src-{name}-{version}"));
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("manifest.json"),
        format!(r#"{{"zotfile": 1, "name": "{name}", "version": "{version}"}}"#),
    )
    .unwrap();
    fs::write(src.join("AGENT.md"), format!("# {name} {version}\n")).unwrap();
    let out = dir.join(format!("{name}-{version}.zot"));
    zot_package::pack(&src, Some(&out)).unwrap();
    out
}

struct Keys {
    secret: PathBuf,
    public: PathBuf,
}

fn new_keys(dir: &Path, name: &str) -> Keys {
    let secret = dir.join(name);
    let k = keygen(&secret, Protection::Unencrypted).unwrap();
    Keys {
        secret,
        public: k.public,
    }
}

fn sign(archive: &Path, keys: &Keys) -> PathBuf {
    let sk = SecretKeyFile::read(&keys.secret)
        .unwrap()
        .unlock(None)
        .unwrap();
    let out = signature_path(archive);
    zot_package::sign(archive, &out, &sk).unwrap();
    out
}

fn keyset(keys: &Keys) -> KeySet {
    KeySet::new(vec![PublicKey::read(&keys.public).unwrap()])
}

fn sig_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn parse_sig(lines: &[String]) -> Result<Signature, FormatError> {
    Signature::parse(&(lines.join("\n") + "\n"))
}

#[test]
fn sign_then_verify_round_trip_with_claims() {
    let d = tempfile::tempdir().unwrap();
    let a = archive(d.path(), "reviewer", "1.2.0");
    let k = new_keys(d.path(), "k");
    let sig = sign(&a, &k);
    let (summary, v) = zot_package::inspect_signed(&a, &sig, &keyset(&k)).unwrap();
    assert_eq!(v.digest, summary.digest);
    assert_eq!(v.claims.agent.as_deref(), Some("reviewer"));
    assert_eq!(v.claims.version.as_deref(), Some("1.2.0"));
    assert_eq!(v.claims.digest.as_deref(), Some(summary.digest.as_str()));
    assert_eq!(v.claims.file.as_deref(), Some("reviewer-1.2.0.zot"));
    assert!(
        v.trusted_comment.ends_with("\thashed"),
        "{}",
        v.trusted_comment
    );
    assert_eq!(v.key_file.as_deref(), Some(k.public.as_path()));
    let (agent, v2) = zot_package::open_signed(&a, &sig, &keyset(&k)).unwrap();
    assert_eq!(agent.digest, v2.digest);
    // The public key file has minisign's shape.
    let pk = fs::read_to_string(&k.public).unwrap();
    let id = PublicKey::read(&k.public).unwrap().id().to_string();
    assert!(pk.starts_with(&format!("untrusted comment: minisign public key {id}\n")));
    assert_eq!(id.len(), 16);
}

#[test]
fn tampered_archive_wrong_key_other_file_truncated_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let a = archive(d.path(), "reviewer", "1.0.0");
    let other = archive(d.path(), "reviewer", "1.0.1");
    let k = new_keys(d.path(), "k");
    let k2 = new_keys(d.path(), "k2");
    let sig = sign(&a, &k);

    // Wrong key: the error names the signature file and both key ids.
    let e = zot_package::inspect_signed(&a, &sig, &keyset(&k2)).unwrap_err();
    let msg = format!("{:#}", anyhow_chain(&e));
    assert!(msg.contains(&sig.display().to_string()), "{msg}");
    assert!(msg.contains("not a trusted key"), "{msg}");

    // A signature for another file.
    let e = zot_package::inspect_signed(&other, &sig, &keyset(&k)).unwrap_err();
    let msg = anyhow_chain(&e);
    assert!(msg.contains("does not match"), "{msg}");
    assert!(msg.contains(&other.display().to_string()), "{msg}");

    // Tampered archive (one byte flipped in the middle).
    let mut bytes = fs::read(&a).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let t = d.path().join("tampered.zot");
    fs::write(&t, &bytes).unwrap();
    let e = zot_package::inspect_signed(&t, &sig, &keyset(&k)).unwrap_err();
    assert!(anyhow_chain(&e).contains("does not match"), "{e}");

    // Truncated signature files: every prefix of the file is refused.
    let text = fs::read_to_string(&sig).unwrap();
    for cut in [0, 10, 40, text.len() / 2, text.len() - 30, text.len() - 2] {
        let p = d.path().join(format!("cut{cut}.minisig"));
        fs::write(&p, &text[..cut]).unwrap();
        let e = zot_package::inspect_signed(&a, &p, &keyset(&k)).unwrap_err();
        let msg = anyhow_chain(&e);
        assert!(msg.contains(&p.display().to_string()), "cut {cut}: {msg}");
    }

    // Missing signature.
    let e = zot_package::inspect_signed(&other, &signature_path(&other), &keyset(&k)).unwrap_err();
    assert!(anyhow_chain(&e).contains("no signature"), "{e}");

    // Altered trusted comment (still well-formed).
    let mut ls = sig_lines(&sig);
    ls[2] = ls[2].replace("agent:reviewer", "agent:reviewex");
    let p = d.path().join("comment.minisig");
    fs::write(&p, ls.join("\n") + "\n").unwrap();
    let e = zot_package::inspect_signed(&a, &p, &keyset(&k)).unwrap_err();
    assert!(anyhow_chain(&e).contains("trusted comment"), "{e}");

    // A directory has nothing to sign.
    let e = zot_package::inspect_signed(d.path(), &sig, &keyset(&k)).unwrap_err();
    assert!(matches!(
        e,
        zot_package::PackageError::UnsignableDirectory { .. }
    ));
}

use zot_policy::diagnostic::error_chain as anyhow_chain;

#[test]
fn claims_must_match_the_archive() {
    // A valid signature whose trusted comment names another agent (signed
    // that way by the key holder) is still refused.
    let d = tempfile::tempdir().unwrap();
    let a = archive(d.path(), "reviewer", "1.0.0");
    let k = new_keys(d.path(), "k");
    let sk = SecretKeyFile::read(&k.secret)
        .unwrap()
        .unlock(None)
        .unwrap();
    let digest = zot_package::inspect(&a).unwrap().digest;
    for (claims, field) in [
        (
            signature::Claims {
                agent: Some("other".into()),
                ..Default::default()
            },
            "agent",
        ),
        (
            signature::Claims {
                version: Some("9.9.9".into()),
                ..Default::default()
            },
            "version",
        ),
        (
            signature::Claims {
                digest: Some(format!("sha256:{}", "0".repeat(64))),
                ..Default::default()
            },
            "digest",
        ),
    ] {
        let out = d.path().join(format!("{field}.minisig"));
        signature::sign_file(&a, &out, &sk, &claims, &digest).unwrap();
        let e = zot_package::inspect_signed(&a, &out, &keyset(&k)).unwrap_err();
        let msg = anyhow_chain(&e);
        assert!(msg.contains(&format!("says {field}")), "{msg}");
    }
    // No claims at all (a plain minisign comment) is fine.
    let out = d.path().join("plain.minisig");
    signature::sign_file(
        &a,
        &out,
        &sk,
        &signature::Claims {
            timestamp: Some(1),
            file: Some("x".into()),
            ..Default::default()
        },
        &digest,
    )
    .unwrap();
    zot_package::inspect_signed(&a, &out, &keyset(&k)).unwrap();
    // The expected digest guards against a file changing while signed.
    let e = signature::sign_file(&a, &out, &sk, &Default::default(), "sha256:00").unwrap_err();
    assert!(matches!(e, SignatureError::Changed { .. }));
}

#[test]
fn malformed_signature_fields() {
    let d = tempfile::tempdir().unwrap();
    let a = archive(d.path(), "reviewer", "1.0.0");
    let k = new_keys(d.path(), "k");
    let good = sig_lines(&sign(&a, &k));
    assert!(parse_sig(&good).is_ok());
    let sig = unb64(&good[1]);
    let global = unb64(&good[3]);

    let with = |i: usize, v: String| {
        let mut l = good.clone();
        l[i] = v;
        l
    };
    let cases: Vec<(Vec<String>, FormatError)> = vec![
        (vec![], FormatError::Empty),
        (good[..1].to_vec(), FormatError::MissingLine("signature")),
        (
            good[..2].to_vec(),
            FormatError::MissingLine("trusted comment"),
        ),
        (
            good[..3].to_vec(),
            FormatError::MissingLine("trusted comment signature"),
        ),
        (
            with(0, "comment: x".into()),
            FormatError::BadPrefix {
                line: "untrusted comment",
                expected: "untrusted comment: ",
            },
        ),
        (with(1, "!!!!".into()), FormatError::Base64("signature")),
        (
            with(1, b64(&sig[..73])),
            FormatError::Length {
                field: "signature",
                expected: 74,
                found: 73,
            },
        ),
        (
            with(1, b64(&[b"XY".as_slice(), &sig[2..]].concat())),
            FormatError::Algorithm {
                field: "signature",
                found: "XY".into(),
                expected: "ED",
            },
        ),
        (
            with(1, b64(&[b"Ed".as_slice(), &sig[2..]].concat())),
            FormatError::Legacy,
        ),
        (
            with(2, "trusted: x".into()),
            FormatError::BadPrefix {
                line: "trusted comment",
                expected: "trusted comment: ",
            },
        ),
        (
            with(2, format!("trusted comment: {}", "x".repeat(9000))),
            FormatError::TrustedCommentTooLong,
        ),
        (
            with(2, "trusted comment: a\u{1b}[2Jb".into()),
            FormatError::TrustedCommentControl,
        ),
        (
            with(2, "trusted comment: x ".into()),
            FormatError::TrustedCommentBlanks,
        ),
        (
            with(3, "%%%%".into()),
            FormatError::Base64("trusted comment signature"),
        ),
        // The `minisign` crate indexes this one without checking its
        // length: the strict parser must stop it first.
        (
            with(3, b64(&global[..10])),
            FormatError::Length {
                field: "trusted comment signature",
                expected: 64,
                found: 10,
            },
        ),
        (
            with(3, String::new()),
            FormatError::Length {
                field: "trusted comment signature",
                expected: 64,
                found: 0,
            },
        ),
        (
            [good.clone(), vec!["extra".into()]].concat(),
            FormatError::TrailingText("trusted comment signature"),
        ),
    ];
    for (lines, want) in cases {
        assert_eq!(parse_sig(&lines).unwrap_err(), want, "{lines:?}");
    }
    // CRLF line ends and blank trailing lines are fine.
    assert!(Signature::parse(&(good.join("\r\n") + "\r\n\n")).is_ok());
    // Not UTF-8, too large.
    let p = d.path().join("bin.minisig");
    fs::write(&p, b"untrusted comment: \xff\n").unwrap();
    assert!(matches!(
        Signature::read(&p).unwrap_err(),
        SignatureError::Signature {
            source: FormatError::NotUtf8,
            ..
        }
    ));
    fs::write(&p, vec![b'a'; 70_000]).unwrap();
    assert!(matches!(
        Signature::read(&p).unwrap_err(),
        SignatureError::TooLarge { .. }
    ));
}

#[test]
fn malformed_public_key_fields() {
    let d = tempfile::tempdir().unwrap();
    let k = new_keys(d.path(), "k");
    let text = fs::read_to_string(&k.public).unwrap();
    let good: Vec<&str> = text.lines().collect();
    let raw = unb64(good[1]);
    let key = |l1: String| format!("{}\n{l1}\n", good[0]);
    let cases = vec![
        (String::new(), FormatError::Empty),
        (
            format!("{}\n", good[0]),
            FormatError::MissingLine("public key"),
        ),
        (
            format!("minisign public key\n{}\n", good[1]),
            FormatError::BadPrefix {
                line: "untrusted comment",
                expected: "untrusted comment: ",
            },
        ),
        (key("not base64!".into()), FormatError::Base64("public key")),
        (
            key(b64(&raw[..41])),
            FormatError::Length {
                field: "public key",
                expected: 42,
                found: 41,
            },
        ),
        (
            key(b64(&[raw.clone(), vec![0]].concat())),
            FormatError::Length {
                field: "public key",
                expected: 42,
                found: 43,
            },
        ),
        (
            key(b64(&[b"ED".as_slice(), &raw[2..]].concat())),
            FormatError::Algorithm {
                field: "public key",
                found: "ED".into(),
                expected: "Ed",
            },
        ),
        (
            format!("{text}more\n"),
            FormatError::TrailingText("public key"),
        ),
    ];
    for (t, want) in cases {
        assert_eq!(PublicKey::parse(&t).unwrap_err(), want, "{t:?}");
    }
    assert!(PublicKey::parse(&text).is_ok());
    assert!(PublicKey::from_base64(good[1]).is_ok());
}

#[test]
fn malformed_secret_keys_and_passwords() {
    let d = tempfile::tempdir().unwrap();
    let secret = d.path().join("enc");
    let g = keygen(&secret, Protection::Password("correct horse".into())).unwrap();
    assert!(g.encrypted);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Refuses to overwrite either file, and leaves both untouched.
    let before = fs::read(&secret).unwrap();
    assert!(matches!(
        keygen(&secret, Protection::Unencrypted).unwrap_err(),
        SignatureError::Exists { .. }
    ));
    assert_eq!(fs::read(&secret).unwrap(), before);
    let lone = d.path().join("lone");
    fs::write(d.path().join("lone.pub"), "x").unwrap();
    assert!(matches!(
        keygen(&lone, Protection::Unencrypted).unwrap_err(),
        SignatureError::Exists { .. }
    ));
    assert!(!lone.exists());

    let f = SecretKeyFile::read(&secret).unwrap();
    assert!(f.encrypted());
    assert!(matches!(
        SecretKeyFile::read(&secret)
            .unwrap()
            .unlock(None)
            .unwrap_err(),
        SignatureError::PasswordNeeded { .. }
    ));
    assert!(matches!(
        SecretKeyFile::read(&secret)
            .unwrap()
            .unlock(Some("wrong".into()))
            .unwrap_err(),
        SignatureError::WrongPassword { .. }
    ));
    let sk = SecretKeyFile::read(&secret)
        .unwrap()
        .unlock(Some("correct horse".into()))
        .unwrap();
    assert_eq!(sk.key_id(), g.key_id);

    // Malformed secret key files.
    let text = fs::read_to_string(&secret).unwrap();
    let ls: Vec<&str> = text.lines().collect();
    let raw = unb64(ls[1]);
    let p = d.path().join("bad");
    let check = |t: String, want: FormatError| {
        fs::write(&p, t).unwrap();
        match SecretKeyFile::read(&p) {
            Err(SignatureError::SecretKey { source, path }) => {
                assert_eq!(source, want);
                assert_eq!(path, p);
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted"),
        }
    };
    check(String::new(), FormatError::Empty);
    check(
        format!("{}\n", ls[0]),
        FormatError::MissingLine("secret key"),
    );
    check(
        format!("{}\n@@\n", ls[0]),
        FormatError::Base64("secret key"),
    );
    check(
        format!("{}\n{}\n", ls[0], b64(&raw[..100])),
        FormatError::Length {
            field: "secret key",
            expected: 158,
            found: 100,
        },
    );
    let mut r = raw.clone();
    r[2..4].copy_from_slice(b"Xx");
    check(
        format!("{}\n{}\n", ls[0], b64(&r)),
        FormatError::Algorithm {
            field: "secret key encryption",
            found: "Xx".into(),
            expected: "Sc",
        },
    );
    let mut r = raw.clone();
    r[0..2].copy_from_slice(b"ED");
    check(
        format!("{}\n{}\n", ls[0], b64(&r)),
        FormatError::Algorithm {
            field: "secret key",
            found: "ED".into(),
            expected: "Ed",
        },
    );
}

#[test]
fn trusted_key_directory() {
    let d = tempfile::tempdir().unwrap();
    assert!(KeySet::read_dir(&d.path().join("absent"))
        .unwrap()
        .is_empty());
    let dir = d.path().join("trusted-keys");
    fs::create_dir(&dir).unwrap();
    let k1 = new_keys(d.path(), "a");
    let k2 = new_keys(d.path(), "b");
    fs::copy(&k1.public, dir.join("a.pub")).unwrap();
    fs::copy(&k2.public, dir.join("b.pub")).unwrap();
    fs::write(dir.join("README"), "not a key").unwrap();
    let set = KeySet::read_dir(&dir).unwrap();
    assert_eq!(set.keys().len(), 2);
    // A broken key file is an error naming it, not a smaller trust set.
    fs::write(dir.join("c.pub"), "garbage\n").unwrap();
    let e = KeySet::read_dir(&dir).unwrap_err();
    assert!(e.to_string().contains("c.pub"), "{e}");
}

#[test]
fn unencrypted_keys_with_minisigns_zero_checksum() {
    // `minisign -G -W` writes unencrypted keys with a zeroed checksum; a
    // nonzero checksum that does not match is a corrupted key.
    let d = tempfile::tempdir().unwrap();
    let k = new_keys(d.path(), "k");
    let text = fs::read_to_string(&k.secret).unwrap();
    let ls: Vec<&str> = text.lines().collect();
    let raw = unb64(ls[1]);
    let n = raw.len();
    let a = archive(d.path(), "reviewer", "1.0.0");
    let mut zeroed = raw.clone();
    zeroed[n - 32..].fill(0);
    let p = d.path().join("zeroed");
    fs::write(&p, format!("{}\n{}\n", ls[0], b64(&zeroed))).unwrap();
    let sk = SecretKeyFile::read(&p).unwrap().unlock(None).unwrap();
    let out = d.path().join("z.minisig");
    zot_package::sign(&a, &out, &sk).unwrap();
    zot_package::inspect_signed(&a, &out, &keyset(&k)).unwrap();
    let mut bad = raw.clone();
    bad[n - 1] ^= 1;
    fs::write(&p, format!("{}\n{}\n", ls[0], b64(&bad))).unwrap();
    let e = SecretKeyFile::read(&p).unwrap().unlock(None).unwrap_err();
    assert!(e.to_string().contains("cannot read the secret key"), "{e}");
}
