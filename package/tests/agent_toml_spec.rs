//! Every example of the agent-package spec loads (fixtures under
//! tests/fixtures/agent_toml), with the documented defaults.

use std::path::PathBuf;

use zot_package::agent_toml::{load, AgentPackage, UnsupportedAction};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/agent_toml")
        .join(name)
}

fn ok(name: &str) -> AgentPackage {
    match load(&fixture(name)) {
        Ok(p) => p,
        Err(d) => panic!("fixture {name} failed:\n{d}"),
    }
}

fn file<'a>(p: &'a AgentPackage, dest: &str) -> &'a zot_package::agent_toml::RuntimeFile {
    p.files
        .iter()
        .find(|f| f.dest == dest)
        .unwrap_or_else(|| panic!("no runtime file {dest}: {:?}", dests(p)))
}

fn dests(p: &AgentPackage) -> Vec<&str> {
    p.files.iter().map(|f| f.dest.as_str()).collect()
}

#[test]
fn minimal_reads_instructions_md() {
    let p = ok("minimal");
    assert_eq!(p.name, "my-agent");
    assert_eq!(
        p.instructions.trim(),
        "Help the user with clear, accurate answers."
    );
    assert!(
        p.files.is_empty(),
        "instructions.md must not become a session file"
    );
    assert!(p.model().is_none());
}

#[test]
fn self_contained_inline_instructions() {
    let p = ok("self-contained");
    assert_eq!(
        p.instructions,
        "Help the user with clear, accurate answers."
    );
}

#[test]
fn instructions_file_is_read() {
    assert_eq!(
        ok("instructions-file").instructions.trim(),
        "Answer from the prompts folder."
    );
}

#[test]
fn directory_contract_selects_only_declared_files() {
    let p = ok("directory-contract");
    assert_eq!(dests(&p), ["data/example.csv", "runbook.md"]);
    assert!(
        p.files.iter().all(|f| f.readonly),
        "source-selected files default to read-only"
    );
    assert_eq!(p.skills.len(), 1);
    let s = &p.skills[0];
    assert_eq!(s.name, "investigate");
    let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["SKILL.md", "references/checklist.md", "scripts/check.py"]
    );
    assert!(
        p.capabilities().contains(&"skills".to_string()),
        "discovery adds the skills capability"
    );
}

#[test]
fn mappings_rewrite_destinations() {
    let p = ok("mappings");
    assert_eq!(dests(&p), ["data/a.csv", "reports/current.md"]);
    assert!(file(&p, "data/a.csv").readonly);
    assert!(!file(&p, "reports/current.md").readonly);
}

#[test]
fn inline_files_decode_and_default_writable() {
    let p = ok("inline");
    let notes = file(&p, "notes.md");
    assert_eq!(notes.bytes, b"Review notes go here.");
    assert!(!notes.readonly);
    let bin = file(&p, "data/sample.bin");
    assert_eq!(bin.bytes, [0x00, 0xff, 0x0a]);
    assert!(!bin.readonly, "inline files default to writable");
}

#[test]
fn model_and_capabilities() {
    let p = ok("model-capabilities");
    let m = p.model().unwrap();
    assert_eq!(
        (m.provider.as_str(), m.model.as_str()),
        ("openai", "your-enabled-model")
    );
    assert_eq!(p.capabilities(), ["current_time", "session_file_system"]);
    let refused: Vec<_> = p
        .unsupported()
        .into_iter()
        .filter(|u| u.action == UnsupportedAction::Refuse)
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].message.contains("current_time")
            && refused[0]
                .message
                .contains("requires a host implementation")
    );
}

#[test]
fn mcp_examples() {
    let p = ok("mcp-catalog");
    assert_eq!(p.manifest.mcp_servers.len(), 1);
    let p = ok("mcp-inline");
    assert_eq!(p.manifest.mcp_servers.len(), 2);
    let u = p.unsupported();
    assert!(u
        .iter()
        .any(|u| u.path == "mcpServers.docs" && u.action == UnsupportedAction::Refuse));
}

#[test]
fn channel_example_is_ignored_locally() {
    let p = ok("channels");
    assert_eq!(p.manifest.channels["chat"].kind, "ag_ui");
    let u = p.unsupported();
    assert!(u
        .iter()
        .any(|u| u.path == "channels" && u.action == UnsupportedAction::Ignore));
    assert!(u.iter().all(|u| u.action == UnsupportedAction::Ignore));
}

#[test]
fn presentation_and_network() {
    let p = ok("presentation");
    assert_eq!(p.manifest.starters[0].icon.as_deref(), Some("search"));
    let n = p.manifest.network_access.as_ref().unwrap();
    assert_eq!(n.allowed, ["https://everruns.com/docs/**"]);
    assert_eq!(n.blocked, ["https://example.com/private/**"]);
}

#[test]
fn skill_examples() {
    assert_eq!(
        ok("skill-example").skills[0].description,
        "Investigate an issue using the bundled runbook and checklist."
    );
    assert_eq!(ok("team-skills").skills[0].name, "triage");
}

#[test]
fn client_side_tool() {
    let p = ok("tools");
    assert_eq!(p.manifest.tools[0].name, "lookup_ticket");
    assert!(p
        .unsupported()
        .iter()
        .any(|u| u.path == "tools[0]" && u.action == UnsupportedAction::Refuse));
}

#[test]
fn alternative_encodings() {
    let y = ok("yaml");
    assert_eq!(y.max_iterations(), Some(20));
    assert_eq!(dests(&y), ["runbook.md"]);
    assert_eq!(y.manifest_file, "agent.yaml");
    let j = ok("json");
    assert_eq!(j.manifest.parallel_tool_calls, Some(true));
    let m = ok("markdown");
    assert_eq!(
        m.instructions,
        "Help the user with clear, accurate answers."
    );
    assert_eq!(
        m.manifest.description.as_deref(),
        Some("Markdown manifest.")
    );
}

#[test]
fn legacy_markdown_and_folders() {
    let p = ok("legacy");
    assert_eq!(p.name, "legacy-agent");
    assert_eq!(p.instructions, "Legacy body becomes the instructions.");
    assert_eq!(p.manifest.harness.as_deref(), Some("worker-base"));
    assert_eq!(
        dests(&p),
        ["data/seed.txt"],
        "legacy files/ maps to the runtime root"
    );
    assert_eq!(
        p.skills[0].name, "old",
        "legacy skills/ maps to .agents/skills/"
    );
    assert!(p.manifest.mcp_servers.contains_key("issues"));
}

#[test]
fn legacy_aliases() {
    let p = ok("legacy-aliases");
    assert_eq!(p.instructions, "From the legacy alias.");
    assert_eq!(dests(&p), ["seed.txt"]);
    assert_eq!(p.manifest.harness.as_deref(), Some("conversation"));
    assert!(p.manifest.mcp_servers.contains_key("docs"));
}

#[test]
fn example_incident_desk_loads_and_runs_locally() {
    let p = match load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/incident-desk"))
    {
        Ok(p) => p,
        Err(d) => panic!("{d}"),
    };
    assert_eq!(p.name, "incident-desk");
    assert!(p
        .unsupported()
        .iter()
        .all(|u| u.action == UnsupportedAction::Ignore));
}
