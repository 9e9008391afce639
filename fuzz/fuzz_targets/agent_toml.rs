//! Fuzz agent.toml / agent.yaml / agent.json / agent.md manifest parsing
//! and validation, and SKILL.md front matter: `cargo fuzz run agent_toml`.
//!
//! The first byte picks the format. Properties: no input panics; a
//! manifest that validates renders (as `zot convert` does) to canonical
//! TOML that validates again into the same manifest (with
//! `schema_version` made explicit).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zot_policy::agent_toml::{self, ManifestFormat};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = match sel % 5 {
        0 => ManifestFormat::Toml,
        1 => ManifestFormat::Yaml,
        2 => ManifestFormat::Json,
        3 => ManifestFormat::Markdown,
        _ => {
            let _ = agent_toml::parse_skill_front_matter(text);
            return;
        }
    };
    let (_, _) = agent_toml::check_manifest(text, format);
    let Ok(mut m) = agent_toml::parse_manifest(text, format) else {
        return;
    };
    // The canonical form always states the schema version.
    m.schema_version.get_or_insert(1);
    let toml = agent_toml::to_toml(&m);
    match agent_toml::parse_manifest(&toml, ManifestFormat::Toml) {
        Ok(back) => assert_eq!(back, m, "canonical TOML changed the manifest:\n{toml}"),
        Err(d) => panic!("canonical TOML of a valid manifest is invalid: {d:?}\n{toml}"),
    }
});
