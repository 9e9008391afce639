//! Fuzz the minisign signature, public key and secret key parsers and
//! signature verification: `cargo fuzz run minisign`.
//!
//! The first byte picks the parser. Properties: no input panics (the
//! strict parser stands in front of the `minisign` crate, which indexes
//! some fields without checking their length); a signature that parses is
//! verified against a fixed key and message, and only a signature of that
//! message by that key can verify; what parses prints back to text that
//! parses to the same thing.
#![no_main]

use std::io::Cursor;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zot_package::signature::{Claims, KeySet, PublicKey, SecretKeyFile, Signature};

/// The key that signed `fuzz/corpus/minisign/*-sig` (made with `minisign -G -W`).
const PUBLIC_KEY: &str = "untrusted comment: minisign public key 48570369E1B81BAC
RWSsG7jhaQNXSEE19s9O8QJIhSwa1CoWUICJLIHogAm6uW2UrCYYe2t9
";
const MESSAGE: &[u8] = b"zot fuzz data\n";

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match sel % 4 {
        0 => {
            let Ok(sig) = Signature::parse(text) else {
                return;
            };
            let keys = KeySet::new(vec![PublicKey::parse(PUBLIC_KEY).unwrap()]);
            let name = Path::new("message");
            let sig_name = Path::new("message.minisig");
            if let Ok(v) = zot_package::signature::verify_reader(Cursor::new(MESSAGE), name, sig_name, &sig, &keys) {
                assert_eq!(v.trusted_comment, sig.trusted_comment());
                // The same signature over other bytes never verifies.
                assert!(zot_package::signature::verify_reader(
                    Cursor::new(b"zot fuzz datA\n"),
                    name,
                    sig_name,
                    &sig,
                    &keys
                )
                .is_err());
            }
            let _ = Claims::parse(sig.trusted_comment());
        }
        1 => {
            let Ok(pk) = PublicKey::parse(text) else {
                return;
            };
            let again = PublicKey::parse(&pk.to_file_text()).expect("printed key parses");
            assert_eq!(again.id(), pk.id());
            assert_eq!(again.base64(), pk.base64());
        }
        2 => {
            let Ok(sk) = SecretKeyFile::parse(Path::new("key"), text.to_string()) else {
                return;
            };
            // Encrypted keys run scrypt with the file's own cost
            // parameters: not a parser, and slow by design.
            if !sk.encrypted() {
                let _ = sk.unlock(None);
            }
        }
        _ => {
            let c = Claims::parse(text);
            let back = Claims::parse(&c.to_comment());
            assert_eq!(back.agent.is_some(), c.agent.is_some());
            assert_eq!(back.digest.is_some(), c.digest.is_some());
        }
    }
});
