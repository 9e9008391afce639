//! Canonical TOML for a manifest: fixed key order, top-level keys before the
//! first table, sorted tags, relative destinations. The same manifest always
//! gives the same bytes.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::model::*;

/// The `#:schema` editor directive written at the top of exports.
pub const SCHEMA_DIRECTIVE: &str = "#:schema https://everruns.com/docs/schemas/agent/v1.json";

/// Render a manifest as canonical TOML.
pub fn to_toml(m: &Manifest) -> String {
    let mut groups: Vec<(&str, Value)> = Vec::new();
    groups.push(("schema_version", json!(m.schema_version.unwrap_or(1))));
    groups.push(("name", json!(m.name)));
    let opt = |s: &Option<String>| s.as_ref().map(|s| json!(s));
    let strings: [(&str, Option<Value>); 9] = [
        ("display_name", opt(&m.display_name)),
        ("description", opt(&m.description)),
        (
            "instructions",
            m.instructions
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| json!(s)),
        ),
        ("instructions_file", opt(&m.instructions_file)),
        ("harness", opt(&m.harness)),
        ("max_iterations", m.max_iterations.map(|n| json!(n))),
        (
            "parallel_tool_calls",
            m.parallel_tool_calls.map(|b| json!(b)),
        ),
        ("communication", m.communication.map(|c| json!(c.as_str()))),
        ("intro_markdown", opt(&m.intro_markdown)),
    ];
    for (k, v) in strings {
        if let Some(v) = v {
            groups.push((k, v));
        }
    }
    if let Some(s) = &m.short_description {
        groups.push(("short_description", json!(s)));
    }
    if !m.tags.is_empty() {
        let mut tags = m.tags.clone();
        tags.sort();
        tags.dedup();
        groups.push(("tags", json!(tags)));
    }
    if !m.capabilities.is_empty() {
        let caps: Vec<Value> = m
            .capabilities
            .iter()
            .map(|c| match &c.config {
                None => json!(c.name),
                Some(cfg) => json!({ "ref": c.name, "config": cfg }),
            })
            .collect();
        groups.push(("capabilities", Value::Array(caps)));
    }
    if let Some(files) = &m.files {
        groups.push((
            "files",
            Value::Array(files.iter().map(file_value).collect()),
        ));
    }
    if let Some(skills) = &m.skills {
        groups.push(("skills", json!(skills)));
    }
    if !m.starters.is_empty() {
        let starters: Vec<Value> = m
            .starters
            .iter()
            .map(|s| {
                let mut t = Map::new();
                t.insert("text".into(), json!(s.text));
                if let Some(icon) = &s.icon {
                    t.insert("icon".into(), json!(icon));
                }
                Value::Object(t)
            })
            .collect();
        groups.push(("starters", Value::Array(starters)));
    }
    if let Some(model) = &m.model {
        groups.push((
            "model",
            json!({ "provider": model.provider, "model": model.model }),
        ));
    }
    if let Some(n) = &m.network_access {
        let mut t = Map::new();
        t.insert("allowed".into(), json!(n.allowed));
        t.insert("blocked".into(), json!(n.blocked));
        groups.push(("network_access", Value::Object(t)));
    }
    if !m.mcp_servers.is_empty() {
        let t: Map<String, Value> = m
            .mcp_servers
            .iter()
            .map(|(k, s)| (k.clone(), Value::Object(s.raw.clone())))
            .collect();
        groups.push(("mcpServers", Value::Object(t)));
    }
    if !m.channels.is_empty() {
        let t: Map<String, Value> = m
            .channels
            .iter()
            .map(|(k, c)| (k.clone(), Value::Object(c.raw.clone())))
            .collect();
        groups.push(("channels", Value::Object(t)));
    }
    if !m.tools.is_empty() {
        groups.push((
            "tools",
            Value::Array(
                m.tools
                    .iter()
                    .map(|t| Value::Object(t.raw.clone()))
                    .collect(),
            ),
        ));
    }
    if let Some(env) = &m.environments {
        groups.push(("environments", Value::Object(env.clone())));
    }
    if let Some(sp) = &m.sandbox_policy {
        groups.push(("sandbox_policy", sp.clone()));
    }

    // Each group renders on its own; groups that open a `[table]` go last so
    // every top-level key stays above the first table header.
    let mut plain = String::new();
    let mut tables = String::new();
    for (k, v) in groups {
        let mut one = Map::new();
        one.insert(k.to_string(), v);
        let text = toml::to_string(&Value::Object(one))
            .unwrap_or_else(|e| format!("# {k}: cannot render: {e}\n"));
        if text.trim_start().starts_with('[') {
            if !tables.is_empty() {
                tables.push('\n');
            }
            tables.push_str(&text);
        } else {
            plain.push_str(&text);
        }
    }
    let mut out = format!("{SCHEMA_DIRECTIVE}\n{plain}");
    if !tables.is_empty() {
        out.push('\n');
        out.push_str(&tables);
    }
    out
}

fn file_value(f: &FileEntry) -> Value {
    match f {
        FileEntry::Select {
            source,
            dest: None,
            readonly: true,
        } => json!(source),
        FileEntry::Select {
            source,
            dest,
            readonly,
        } => {
            let mut t = Map::new();
            t.insert("source".into(), json!(source));
            if let Some(d) = dest {
                t.insert("path".into(), json!(d));
            }
            if !readonly {
                t.insert("is_readonly".into(), json!(false));
            }
            Value::Object(t)
        }
        FileEntry::Inline {
            dest,
            content,
            readonly,
            base64,
        } => {
            let mut t = Map::new();
            t.insert("path".into(), json!(dest));
            match std::str::from_utf8(content) {
                Ok(text) if !base64 => {
                    t.insert("content".into(), json!(text));
                }
                _ => {
                    t.insert(
                        "content".into(),
                        json!(base64::engine::general_purpose::STANDARD.encode(content)),
                    );
                    t.insert("encoding".into(), json!("base64"));
                }
            }
            if *readonly {
                t.insert("is_readonly".into(), json!(true));
            }
            Value::Object(t)
        }
    }
}
