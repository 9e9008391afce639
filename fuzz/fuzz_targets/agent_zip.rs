//! Fuzz the agent.toml ZIP importer (`zot run package.zip`, `zot convert`):
//! `cargo fuzz run agent_zip`.
//!
//! Properties: no input panics or exhausts memory (the importer's own
//! limits hold); a package that loads exports entries that stay inside the
//! package (relative, no `..`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zot_package::agent_toml;

fuzz_target!(|data: &[u8]| {
    let report = agent_toml::validate_zip_bytes(Path::new("fuzz.zip"), data);
    let Some(pkg) = report.package else {
        return;
    };
    assert!(report.diagnostics.is_empty());
    let _ = pkg.summary();
    for (name, _) in pkg.export_entries() {
        assert!(!name.is_empty() && !name.starts_with('/'), "export entry {name:?}");
        assert!(name.split('/').all(|p| p != ".." && !p.is_empty()), "export entry {name:?}");
    }
    let _ = pkg.canonical_manifest();
});
