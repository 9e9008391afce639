//! Fuzz zotfile `manifest.json` parsing and validation:
//! `ci/fuzz.sh` or `cargo fuzz run zotfile`.
//!
//! Properties: no input panics; a manifest that validates serializes (the
//! spec's JSON shape) to bytes that validate again into the same manifest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zot_policy::zotfile;

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = zotfile::parse(data) else {
        return;
    };
    let m = &parsed.manifest;
    let _ = m.display_id();
    let _ = m.unenforced_permissions();
    let _ = m.fs_read_scopes();
    let _ = m.fs_write_scopes();
    let again = serde_json::to_vec(m).expect("a manifest serializes");
    match zotfile::parse(&again) {
        Ok(p) => assert_eq!(&p.manifest, m, "round trip changed the manifest"),
        Err(d) => panic!(
            "a valid manifest serialized to an invalid one: {d:?}\n{}",
            String::from_utf8_lossy(&again)
        ),
    }
});
