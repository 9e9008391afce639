//! Conversion between agent.toml packages and zotfiles, where a field has an
//! equivalent: instructions <-> `AGENT.md`, skills <-> `skills/`,
//! `network_access.allowed` (`https://HOST/**`) <-> `permissions.net.allow`,
//! `intro_markdown` <-> `entry.greeting`, `model` -> `model.preferred`.
//! Every field that cannot be carried is listed, never dropped silently.
//! Nothing is widened: URL patterns narrower than a whole host are left out.

use std::path::Path;

use zot_policy::agent_toml::paths::check_agent_name;
use zot_policy::agent_toml::{Manifest, NetworkAccess};
use zot_policy::zotfile;

use super::collect::Collector;
use super::source::FsSource;
use super::{AgentPackage, PackageKind};

/// The files of the converted package and what could not be carried.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// `(path, bytes)`, sorted.
    pub entries: Vec<(String, Vec<u8>)>,
    /// `field: reason` for each field that was not carried.
    pub not_carried: Vec<String>,
}

/// Host of an `https://HOST/**` pattern (the only form a zotfile host
/// allowance expresses without widening it).
fn pattern_host(pattern: &str) -> Option<&str> {
    let host = pattern.strip_prefix("https://")?.strip_suffix("/**")?;
    let body = host.strip_prefix("*.").unwrap_or(host);
    let ok = !body.is_empty()
        && body.contains('.')
        && body
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    ok.then_some(host)
}

/// agent.toml -> zotfile folder entries (`manifest.json`, `AGENT.md`,
/// `skills/<name>/...`).
pub fn to_zotfile(pkg: &AgentPackage) -> Result<Conversion, String> {
    let m = &pkg.manifest;
    let mut nc: Vec<String> = Vec::new();
    let mut z = zotfile::Manifest {
        zotfile: zotfile::FORMAT_VERSION,
        name: pkg.name.clone(),
        ..Default::default()
    };
    z.description = m.description.clone();
    if let Some(model) = &m.model {
        z.model.preferred = vec![model.model.clone()];
        nc.push(format!(
            "model.provider: `{}` has no zotfile equivalent (model.preferred names a model only)",
            model.provider
        ));
    }
    if let Some(net) = &m.network_access {
        if net.allowed.is_empty() {
            nc.push("network_access: an empty `allowed` list means unrestricted; the zotfile allows no network".into());
        }
        for (i, pat) in net.allowed.iter().enumerate() {
            match pattern_host(pat) {
                Some(h) => z.permissions.net.allow.push(h.to_string()),
                None => nc.push(format!(
                    "network_access.allowed[{i}]: `{pat}` is narrower than a host; only `https://HOST/**` carries to permissions.net.allow"
                )),
            }
        }
        for (i, pat) in net.blocked.iter().enumerate() {
            nc.push(format!(
                "network_access.blocked[{i}]: `{pat}`: zotfiles have no block list"
            ));
        }
    }
    z.entry.greeting = m.intro_markdown.clone();

    let simple: [(&str, bool); 9] = [
        ("display_name", m.display_name.is_some()),
        ("tags", !m.tags.is_empty()),
        ("harness", m.harness.is_some()),
        ("max_iterations", m.max_iterations.is_some()),
        ("parallel_tool_calls", m.parallel_tool_calls.is_some()),
        ("communication", m.communication.is_some()),
        ("short_description", m.short_description.is_some()),
        ("starters", !m.starters.is_empty()),
        ("environments", m.environments.is_some()),
    ];
    for (field, present) in simple {
        if present {
            nc.push(format!("{field}: no zotfile equivalent"));
        }
    }
    if m.sandbox_policy.is_some() {
        nc.push("sandbox_policy: no zotfile equivalent".into());
    }
    for (i, c) in m.capabilities.iter().enumerate() {
        nc.push(format!(
            "capabilities[{i}]: `{}`: no zotfile equivalent",
            c.name
        ));
    }
    for name in m.mcp_servers.keys() {
        nc.push(format!(
            "mcpServers.{name}: MCP servers have no zotfile equivalent"
        ));
    }
    for name in m.channels.keys() {
        nc.push(format!(
            "channels.{name}: channels have no zotfile equivalent"
        ));
    }
    for (i, t) in m.tools.iter().enumerate() {
        nc.push(format!(
            "tools[{i}]: `{}`: client-side tools have no zotfile equivalent",
            t.name
        ));
    }
    for f in &pkg.files {
        nc.push(format!(
            "files: `{}`: zotfiles have no session seed files",
            f.dest
        ));
    }
    nc.push("permissions: none granted (agent.toml has no filesystem or bash permissions); edit manifest.json to grant access".into());

    let mut value =
        serde_json::to_value(&z).map_err(|e| format!("cannot render manifest.json: {e}"))?;
    prune(&mut value);
    let json = serde_json::to_string_pretty(&value)
        .map_err(|e| format!("cannot render manifest.json: {e}"))?
        + "\n";
    if let Err(d) = zotfile::parse(json.as_bytes()) {
        return Err(format!(
            "the converted manifest is not a valid zotfile: {d}"
        ));
    }
    let mut entries = vec![("manifest.json".to_string(), json.into_bytes())];
    if !pkg.instructions.is_empty() {
        entries.push((
            zotfile::AGENT_FILE.to_string(),
            pkg.instructions.clone().into_bytes(),
        ));
    }
    for s in &pkg.skills {
        for f in &s.files {
            entries.push((format!("skills/{}/{}", s.name, f.path), f.bytes.clone()));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Conversion {
        entries,
        not_carried: nc,
    })
}

/// zotfile folder or `.zot` archive -> agent.toml package (in memory; write
/// it with [`AgentPackage::write_dir`] or [`AgentPackage::write_zip`]).
pub fn from_zotfile(path: &Path) -> Result<(AgentPackage, Vec<String>), String> {
    let agent = crate::open(path).map_err(|e| zot_policy::diagnostic::error_chain(&e))?;
    let z = &agent.manifest;
    let mut nc: Vec<String> = Vec::new();

    let name: String = z
        .name
        .chars()
        .map(|c| if c == '.' || c == '_' { '-' } else { c })
        .collect();
    check_agent_name(&name)
        .map_err(|e| format!("name `{}` cannot become an agent.toml name: {e}", z.name))?;
    if name != z.name {
        nc.push(format!(
            "name: `{}` became `{name}` (agent.toml names allow only lowercase letters, digits and hyphens)",
            z.name
        ));
    }
    let instructions = agent
        .agent_md()
        .map_err(|e| format!("cannot read AGENT.md: {e}"))?
        .unwrap_or_default();

    let mut m = Manifest {
        schema_version: Some(1),
        name: name.clone(),
        description: z.description.clone(),
        intro_markdown: z.entry.greeting.clone(),
        files: Some(Vec::new()),
        ..Default::default()
    };
    if !z.permissions.net.allow.is_empty() {
        m.network_access = Some(NetworkAccess {
            allowed: z
                .permissions
                .net
                .allow
                .iter()
                .map(|h| format!("https://{h}/**"))
                .collect(),
            blocked: Vec::new(),
        });
    }

    let mut push = |cond: bool, field: &str| {
        if cond {
            nc.push(format!("{field}: no agent.toml equivalent"));
        }
    };
    push(z.version.is_some(), "version");
    push(z.license.is_some(), "license");
    push(z.runtime.min_zot.is_some(), "runtime.min_zot");
    push(!z.model.requires.is_empty(), "model.requires");
    push(z.model.min_context.is_some(), "model.min_context");
    push(
        !z.model.preferred.is_empty(),
        "model.preferred (agent.toml pins a provider/model pair)",
    );
    push(!z.permissions.fs.read.is_empty(), "permissions.fs.read");
    push(!z.permissions.fs.write.is_empty(), "permissions.fs.write");
    push(
        z.permissions.bash.mode != zotfile::BashMode::None,
        "permissions.bash",
    );
    push(!z.permissions.env.read.is_empty(), "permissions.env.read");
    push(!z.requirements.os.is_empty(), "requirements.os");
    push(!z.requirements.bin.is_empty(), "requirements.bin");
    push(z.entry.pre.is_some(), "entry.pre");
    push(z.entry.default_prompt.is_some(), "entry.default_prompt");
    push(z.replace_system_prompt, "replace_system_prompt");

    // Skills: `skills/<name>/` with the same rules as agent.toml skills.
    let has_skills = agent.files.iter().any(|f| f.starts_with("skills/"));
    if has_skills {
        m.skills = Some(vec!["skills".to_string()]);
    }
    let src = FsSource::new(agent.root.clone());
    let mut c = Collector::new(&src);
    let skills = c.skills(&m);
    if !c.d.is_empty() {
        return Err(format!("skills cannot be carried:\n{}", c.d));
    }
    for f in &agent.files {
        let known =
            f == zotfile::MANIFEST_FILE || f == zotfile::AGENT_FILE || f.starts_with("skills/");
        if !known {
            nc.push(format!(
                "{f}: zotfile files other than AGENT.md and skills/ are not carried"
            ));
        }
    }
    m.skills = None;
    let pkg = AgentPackage {
        source: path.to_path_buf(),
        kind: PackageKind::Directory,
        manifest_file: "agent.toml".into(),
        name,
        manifest: m,
        instructions,
        files: Vec::new(),
        skills,
    };
    Ok((pkg, nc))
}

/// Drop nulls, `false`, empty arrays and empty tables (the zotfile
/// defaults), keeping the required top-level fields.
fn prune(v: &mut serde_json::Value) {
    use serde_json::Value;
    if let Value::Object(map) = v {
        for child in map.values_mut() {
            prune(child);
        }
        map.retain(|k, child| {
            k == "zotfile"
                || k == "name"
                || !matches!(child, Value::Null | Value::Bool(false))
                    && !matches!(child, Value::Array(a) if a.is_empty())
                    && !matches!(child, Value::Object(o) if o.is_empty())
        });
    }
}
