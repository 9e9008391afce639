//! Decoding (TOML, YAML, JSON, Markdown front matter) and a key walk over
//! the decoded document that validates every field and collects every
//! diagnostic with its path.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde_json::{Map, Value};

use super::model::*;
use super::paths::{check_agent_name, check_relative, is_credential_path, is_glob, normalize_dest};
use super::secrets::{
    check_public_url, is_credential_key, is_env_binding, is_id_key, looks_like_resource_id,
    looks_like_secret,
};
use super::{Diagnostics, ManifestFormat, MAX_CHANNELS, MAX_FILE_BYTES};
use crate::diagnostic::suggest;
use crate::skill::split_front_matter;
use crate::strict_json::StrictValue;
use crate::validate::{Dialect, Walker};

/// Top-level fields of a versioned manifest.
const TOP_KEYS: [&str; 24] = [
    "schema_version",
    "name",
    "display_name",
    "description",
    "instructions",
    "instructions_file",
    "tags",
    "model",
    "harness",
    "capabilities",
    "files",
    "skills",
    "mcpServers",
    "channels",
    "network_access",
    "max_iterations",
    "parallel_tool_calls",
    "communication",
    "tools",
    "intro_markdown",
    "short_description",
    "starters",
    "environments",
    "sandbox_policy",
];

/// Legacy input aliases and the canonical field each stands for.
const ALIASES: [(&str, &str); 4] = [
    ("system_prompt", "instructions"),
    ("initial_files", "files"),
    ("harness_name", "harness"),
    ("mcp_servers", "mcpServers"),
];

/// Platform resource-ID fields that unversioned legacy files may carry; they
/// are ignored there and rejected in versioned definitions.
const LEGACY_ID_KEYS: [&str; 7] = [
    "id",
    "agent_id",
    "organization_id",
    "org_id",
    "created_at",
    "updated_at",
    "version_id",
];

const MCP_KEYS: [&str; 16] = [
    "use",
    "type",
    "url",
    "command",
    "args",
    "headers",
    "env",
    "auth_mode",
    "actsAs",
    "deferred",
    "connectInChat",
    "oauth_provider_id",
    "tool_discovery",
    "tool_labels",
    "protocol_mode",
    "elicitation_policy",
];

const TOOL_KEYS: [&str; 8] = [
    "type",
    "name",
    "description",
    "parameters",
    "display_name",
    "icon",
    "category",
    "hints",
];

/// Parse and validate a manifest. Returns the manifest only when there is no
/// diagnostic.
pub fn parse_manifest(text: &str, format: ManifestFormat) -> Result<Manifest, Diagnostics> {
    let (m, d) = check_manifest(text, format);
    match m {
        Some(m) if d.is_empty() => Ok(m),
        _ => Err(d),
    }
}

/// Parse and validate a manifest, collecting every diagnostic. The manifest
/// is returned best-effort (invalid fields left at their defaults) whenever
/// the document decodes to a table, so callers can keep checking the
/// package and report everything at once.
pub fn check_manifest(text: &str, format: ManifestFormat) -> (Option<Manifest>, Diagnostics) {
    let mut p = P {
        w: Walker::default(),
        toml: format == ManifestFormat::Toml,
    };
    let m = match decode(text, format) {
        Ok((Value::Object(top), body)) => Some(p.manifest(&top, body)),
        Ok((doc, _)) => {
            p.w.err(
                "",
                format!(
                    "the manifest must be a table, found {}",
                    AgentDoc::kind(&doc)
                ),
            );
            None
        }
        Err(msg) => {
            p.w.err("", msg);
            None
        }
    };
    (m, Diagnostics(p.w.errors))
}

fn decode(text: &str, format: ManifestFormat) -> Result<(Value, Option<String>), String> {
    match format {
        ManifestFormat::Toml => {
            let table: toml::Table = toml::from_str(text)
                .map_err(|e| format!("invalid TOML: {}", e.to_string().trim()))?;
            let v =
                serde_json::to_value(table).map_err(|e| format!("unsupported TOML value: {e}"))?;
            Ok((v, None))
        }
        ManifestFormat::Yaml => {
            let v = serde_norway::from_str::<StrictValue>(text)
                .map(|s| s.0)
                .map_err(|e| format!("invalid YAML: {e}"))?;
            Ok((v, None))
        }
        ManifestFormat::Json => {
            let v = serde_json::from_str::<StrictValue>(text)
                .map(|s| s.0)
                .map_err(|e| format!("invalid JSON: {e}"))?;
            Ok((v, None))
        }
        ManifestFormat::Markdown => {
            let (yaml, body) = split_front_matter(text)
                .ok_or("agent.md needs YAML front matter between `---` lines")?;
            let v: Value = if yaml.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_norway::from_str::<StrictValue>(yaml)
                    .map(|s| s.0)
                    .map_err(|e| format!("invalid YAML front matter: {e}"))?
            };
            Ok((v, Some(body.trim().to_string())))
        }
    }
}

/// The decoded manifest (TOML, YAML and JSON all decode to JSON values),
/// for the validator walker.
struct AgentDoc;

impl Dialect for AgentDoc {
    type Value = Value;
    const TABLE: &'static str = "a table";
    const BOOLEAN: &'static str = "a boolean";
    const QUOTE_KEYS: bool = true;

    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(n) if n.is_f64() => "a float",
            Value::Number(_) => "an integer",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(o) if o.contains_key(TOML_DATETIME) => "a date-time",
            Value::Object(_) => "a table",
        }
    }

    /// A TOML date-time decodes to a one-key table; it is not a table.
    fn table(v: &Value) -> Option<&Map<String, Value>> {
        v.as_object().filter(|o| !o.contains_key(TOML_DATETIME))
    }
}

/// The key a TOML date-time decodes to in JSON.
const TOML_DATETIME: &str = "$__toml_private_datetime";

struct P {
    w: Walker<AgentDoc>,
    /// TOML: free-form tables may swallow top-level keys written after
    /// their `[header]`.
    toml: bool,
}

/// Top-level fields distinctive enough that finding one at the top of a
/// free-form table (channel config, environments) means it was written
/// after that table's `[header]` by mistake.
const MISPLACEABLE: [&str; 18] = [
    "schema_version",
    "display_name",
    "instructions",
    "instructions_file",
    "harness",
    "capabilities",
    "files",
    "skills",
    "mcpServers",
    "channels",
    "network_access",
    "max_iterations",
    "parallel_tool_calls",
    "communication",
    "tools",
    "intro_markdown",
    "short_description",
    "starters",
];

impl P {
    fn string_table(&mut self, v: &Value, path: &str) -> Option<BTreeMap<String, String>> {
        let t = self.w.table(v, path)?;
        let mut out = BTreeMap::new();
        for (k, v) in t {
            if let Some(s) = self.w.string(v, &self.w.key(path, k)) {
                out.insert(k.clone(), s);
            }
        }
        Some(out)
    }

    /// An unknown key inside a table: name it, suggest a close key, and hint
    /// when a top-level field landed in a table after its `[header]`.
    fn unknown(&mut self, table_path: &str, key: &str, known: &[&str]) {
        let path = self.w.key(table_path, key);
        let mut msg = format!("unknown field `{key}`");
        if !table_path.is_empty()
            && (TOP_KEYS.contains(&key) || ALIASES.iter().any(|(a, _)| *a == key))
        {
            msg.push_str(&format!(
                " in `{table_path}`; `{key}` is a top-level field: in TOML, keys after a `[table]` header belong to that table, so move `{key}` above the first table"
            ));
        } else if key == "$schema" {
            msg.push_str("; the schema reference is a `#:schema` comment, not a field");
        } else if let Some(best) = suggest(key, known) {
            if best.eq_ignore_ascii_case(key) {
                msg.push_str(&format!(
                    "; keys are case-sensitive: did you mean `{best}`?"
                ));
            } else {
                msg.push_str(&format!("; did you mean `{best}`?"));
            }
        }
        self.w.err(&path, msg);
    }

    /// In TOML, flag top-level fields found at the top of a free-form table.
    fn misplaced(&mut self, t: &Map<String, Value>, table_path: &str) {
        if !self.toml {
            return;
        }
        for k in t.keys() {
            if MISPLACEABLE.contains(&k.as_str()) {
                self.w.err(
                    &self.w.key(table_path, k),
                    format!(
                        "`{k}` is a top-level field: in TOML, keys after a `[table]` header belong to that table, so move `{k}` above the first table"
                    ),
                );
            }
        }
    }

    /// Reject nulls and literal credentials anywhere inside a free-form value.
    fn scan(&mut self, v: &Value, path: &str, depth: usize) {
        if depth > 32 {
            self.w.err(path, "value nests deeper than 32 levels");
            return;
        }
        match v {
            Value::Null => self.w.err(path, "null is not allowed (TOML has no null)"),
            Value::String(s) if looks_like_secret(s) => self.w.err(
                path,
                "looks like a literal credential; bind credentials at the destination or use a `${ENV_NAME}` binding",
            ),
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    self.scan(item, &self.w.index(path, i), depth + 1);
                }
            }
            Value::Object(o) => {
                for (k, item) in o {
                    self.scan(item, &self.w.key(path, k), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn manifest(&mut self, top: &Map<String, Value>, body: Option<String>) -> Manifest {
        let mut m = Manifest::default();
        let versioned = top.contains_key("schema_version");
        // Resolve legacy aliases first: a key and its alias together is an error.
        let mut fields: BTreeMap<&str, (&str, &Value)> = BTreeMap::new();
        for (k, v) in top {
            if let Some((alias, canon)) = ALIASES.iter().find(|(a, _)| *a == k.as_str()) {
                if top.contains_key(*canon) {
                    self.w.err(
                        alias,
                        format!("`{alias}` is a legacy alias of `{canon}`; give only one of them"),
                    );
                    continue;
                }
                fields.insert(canon, (alias, v));
            } else if TOP_KEYS.contains(&k.as_str()) {
                fields.insert(k.as_str(), (k.as_str(), v));
            } else if LEGACY_ID_KEYS.contains(&k.as_str()) {
                if versioned {
                    self.w.err(k, format!("unknown field `{k}`: versioned definitions do not carry platform resource IDs"));
                }
            } else {
                let mut known: Vec<&str> = TOP_KEYS.to_vec();
                known.extend(ALIASES.iter().map(|(a, _)| *a));
                self.unknown("", k, &known);
            }
        }

        if let Some((path, v)) = fields.get("schema_version") {
            match v.as_i64() {
                Some(1) => m.schema_version = Some(1),
                Some(n) => self.w.err(
                    path,
                    format!("unsupported schema_version {n}; only 1 is supported"),
                ),
                None => self.w.expected(path, "the integer 1", v),
            }
        }

        match fields.get("name") {
            Some((path, v)) => {
                if let Some(name) = self.w.string(v, path) {
                    if let Err(e) = check_agent_name(&name) {
                        self.w.err(path, e);
                    }
                    m.name = name;
                }
            }
            None => self.w.err("name", "missing required field `name`"),
        }

        for key in [
            "display_name",
            "description",
            "intro_markdown",
            "short_description",
        ] {
            if let Some((path, v)) = fields.get(key) {
                let s = self.w.string(v, path);
                match key {
                    "display_name" => m.display_name = s,
                    "description" => m.description = s,
                    "intro_markdown" => m.intro_markdown = s,
                    _ => m.short_description = s,
                }
            }
        }

        if let Some((path, v)) = fields.get("instructions") {
            if let Some(s) = self.w.string(v, path) {
                if s.len() as u64 > MAX_FILE_BYTES {
                    self.w.err(
                        path,
                        format!("instructions are {} bytes; the limit is 1 MiB", s.len()),
                    );
                }
                m.instructions = Some(s);
            }
        }
        if let Some(body) = body.filter(|b| !b.is_empty()) {
            if m.instructions
                .as_deref()
                .is_some_and(|s| !s.trim().is_empty())
            {
                self.w.err(
                    "instructions",
                    "agent.md has both a body and front-matter `instructions`; give only one",
                );
            } else if body.len() as u64 > MAX_FILE_BYTES {
                self.w.err(
                    "instructions",
                    format!("agent.md body is {} bytes; the limit is 1 MiB", body.len()),
                );
            } else {
                m.instructions = Some(body);
            }
        }
        if let Some((path, v)) = fields.get("instructions_file") {
            if let Some(s) = self.w.nonempty(v, path) {
                match check_relative(&s, false) {
                    Err(e) => self.w.err(path, e),
                    Ok(_) if is_credential_path(&s) => self
                        .w
                        .err(path, format!("refusing to read credential path `{s}`")),
                    Ok(rel) => {
                        if m.instructions
                            .as_deref()
                            .is_some_and(|s| !s.trim().is_empty())
                        {
                            self.w.err(path, "`instructions_file` cannot be combined with nonempty `instructions`");
                        }
                        m.instructions_file = Some(rel);
                    }
                }
            }
        }

        if let Some((path, v)) = fields.get("tags") {
            if let Some(tags) = self.w.strings(v, path) {
                let set: BTreeSet<String> = tags.into_iter().collect();
                if set.iter().any(|t| t.trim().is_empty()) {
                    self.w.err(path, "tags must not be empty strings");
                }
                m.tags = set.into_iter().collect();
            }
        }

        if let Some((path, v)) = fields.get("model") {
            m.model = self.model(v, path);
        }
        if let Some((path, v)) = fields.get("harness") {
            if let Some(h) = self.w.nonempty(v, path) {
                if h.chars().any(char::is_whitespace) {
                    self.w.err(path, "harness name must not contain whitespace");
                } else if looks_like_resource_id(&h) {
                    self.w
                        .err(path, "looks like a resource ID; use a named harness");
                }
                m.harness = Some(h);
            }
        }
        if let Some((path, v)) = fields.get("capabilities") {
            m.capabilities = self.capabilities(v, path);
        }
        if let Some((path, v)) = fields.get("files") {
            m.files = self.files(v, path);
        }
        if let Some((path, v)) = fields.get("skills") {
            if let Some(list) = self.w.strings(v, path) {
                let mut out = Vec::new();
                for (i, s) in list.iter().enumerate() {
                    let p = self.w.index(path, i);
                    match check_relative(s, true) {
                        Err(e) => self.w.err(&p, e),
                        Ok(_) if is_credential_path(s) => {
                            self.w.err(&p, format!("refusing credential path `{s}`"))
                        }
                        Ok(rel) if is_glob(&rel) => {
                            self.w.err(&p, "skill roots are directories, not globs")
                        }
                        Ok(rel) => out.push(rel),
                    }
                }
                m.skills = Some(out);
            }
        }
        if let Some((path, v)) = fields.get("mcpServers") {
            m.mcp_servers = self.mcp_servers(v, path);
        }
        if let Some((path, v)) = fields.get("channels") {
            m.channels = self.channels(v, path);
        }
        if let Some((path, v)) = fields.get("network_access") {
            m.network_access = self.network(v, path);
        }
        if let Some((path, v)) = fields.get("max_iterations") {
            m.max_iterations = self.w.int(v, path, 1, 1000).map(|n| n as u32);
        }
        if let Some((path, v)) = fields.get("parallel_tool_calls") {
            m.parallel_tool_calls = self.w.bool(v, path);
        }
        if let Some((path, v)) = fields.get("communication") {
            m.communication = match self
                .w
                .enumeration(v, path, &["direct", "explicit"])
                .as_deref()
            {
                Some("direct") => Some(Communication::Direct),
                Some("explicit") => Some(Communication::Explicit),
                _ => None,
            };
        }
        if let Some((path, v)) = fields.get("tools") {
            m.tools = self.tools(v, path);
        }
        if let Some((path, v)) = fields.get("starters") {
            m.starters = self.starters(v, path);
        }
        if let Some((path, v)) = fields.get("environments") {
            if let Some(t) = self.w.table(v, path) {
                self.scan(v, path, 0);
                self.misplaced(t, path);
                for (name, env) in t {
                    if let Value::Object(e) = env {
                        self.misplaced(e, &self.w.key(path, name));
                    }
                }
                m.environments = Some(t.clone());
            }
        }
        if let Some((path, v)) = fields.get("sandbox_policy") {
            self.scan(v, path, 0);
            m.sandbox_policy = Some((*v).clone());
        }
        m
    }

    fn model(&mut self, v: &Value, path: &str) -> Option<ModelRef> {
        let t = self.w.table(v, path)?;
        let (mut provider, mut model) = (None, None);
        for (k, v) in t {
            let p = self.w.key(path, k);
            match k.as_str() {
                "provider" => provider = self.w.nonempty(v, &p),
                "model" => model = self.w.nonempty(v, &p),
                _ => self.unknown(path, k, &["provider", "model"]),
            }
        }
        if !t.contains_key("provider") {
            self.w.err(
                &self.w.key(path, "provider"),
                "missing required field `provider`",
            );
        }
        if !t.contains_key("model") {
            self.w
                .err(&self.w.key(path, "model"), "missing required field `model`");
        }
        Some(ModelRef {
            provider: provider?,
            model: model?,
        })
    }

    fn capabilities(&mut self, v: &Value, path: &str) -> Vec<Capability> {
        let Some(items) = self.w.array(v, path, "an array") else {
            return Vec::new();
        };
        let mut out: Vec<Capability> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = self.w.index(path, i);
            let cap = match item {
                Value::String(s) => Some(Capability {
                    name: s.clone(),
                    config: None,
                }),
                Value::Object(t) => {
                    let mut name = None;
                    let mut config = Map::new();
                    for (k, v) in t {
                        let kp = self.w.key(&p, k);
                        match k.as_str() {
                            "ref" => name = self.w.string(v, &kp),
                            "config" => {
                                if let Some(c) = self.w.table(v, &kp) {
                                    self.scan(v, &kp, 0);
                                    config = c.clone();
                                }
                            }
                            _ => self.unknown(&p, k, &["ref", "config"]),
                        }
                    }
                    if !t.contains_key("ref") {
                        self.w
                            .err(&self.w.key(&p, "ref"), "missing required field `ref`");
                    }
                    name.map(|name| Capability {
                        name,
                        config: Some(config),
                    })
                }
                other => {
                    self.w
                        .expected(&p, "a capability name or a `{ ref, config }` table", other);
                    None
                }
            };
            let Some(cap) = cap else { continue };
            if cap.name.trim().is_empty() {
                self.w.err(&p, "capability name must not be empty");
            } else if looks_like_resource_id(&cap.name) {
                self.w.err(&p, format!("`{}` looks like an installed resource ID; declare a stable capability name", cap.name));
            } else if out.iter().any(|c| c.name == cap.name) {
                self.w
                    .err(&p, format!("duplicate capability `{}`", cap.name));
            } else {
                out.push(cap);
            }
        }
        out
    }

    fn files(&mut self, v: &Value, path: &str) -> Option<Vec<FileEntry>> {
        let items = self
            .w
            .array(v, path, "an array of paths, mappings or inline files")?;
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = self.w.index(path, i);
            match item {
                Value::String(s) => {
                    if let Some(source) = self.source(s, &p) {
                        out.push(FileEntry::Select {
                            source,
                            dest: None,
                            readonly: true,
                        });
                    }
                }
                Value::Object(t) if t.contains_key("content") => {
                    if let Some(f) = self.inline_file(t, &p) {
                        out.push(f);
                    }
                }
                Value::Object(t) if t.contains_key("source") => {
                    let mut source = None;
                    let mut dest = None;
                    let mut readonly = true;
                    for (k, v) in t {
                        let kp = self.w.key(&p, k);
                        match k.as_str() {
                            "source" => {
                                source = self.w.string(v, &kp).and_then(|s| self.source(&s, &kp))
                            }
                            "path" => dest = self.w.string(v, &kp).and_then(|s| self.dest(&s, &kp)),
                            "is_readonly" => readonly = self.w.bool(v, &kp).unwrap_or(true),
                            "encoding" => self.w.err(
                                &kp,
                                "`encoding` applies only to inline files with `content`",
                            ),
                            _ => self.unknown(&p, k, &["source", "path", "is_readonly"]),
                        }
                    }
                    if let Some(source) = source {
                        out.push(FileEntry::Select {
                            source,
                            dest,
                            readonly,
                        });
                    }
                }
                Value::Object(t) => {
                    for k in t.keys() {
                        if !["path", "is_readonly", "encoding"].contains(&k.as_str()) {
                            self.unknown(
                                &p,
                                k,
                                &["source", "path", "content", "encoding", "is_readonly"],
                            );
                        }
                    }
                    self.w.err(
                        &p,
                        "a file entry needs `source` (a mapping) or `content` (an inline file)",
                    );
                }
                other => self
                    .w
                    .expected(&p, "a path, a mapping or an inline file", other),
            }
        }
        Some(out)
    }

    fn source(&mut self, s: &str, path: &str) -> Option<String> {
        match check_relative(s, true) {
            Err(e) => {
                self.w.err(path, e);
                None
            }
            Ok(rel) if is_credential_path(&rel) => {
                self.w
                    .err(path, format!("refusing to package credential path `{s}`"));
                None
            }
            Ok(rel) => {
                if is_glob(&rel) {
                    if let Err(e) = globset::Glob::new(&rel) {
                        self.w.err(path, format!("invalid glob: {e}"));
                        return None;
                    }
                }
                Some(rel)
            }
        }
    }

    fn dest(&mut self, s: &str, path: &str) -> Option<String> {
        match normalize_dest(s) {
            Ok(d) if is_glob(&d) => {
                self.w.err(path, "a destination cannot be a glob");
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.w.err(path, e);
                None
            }
        }
    }

    fn inline_file(&mut self, t: &Map<String, Value>, p: &str) -> Option<FileEntry> {
        let mut dest = None;
        let mut content = None;
        let mut base64 = false;
        let mut readonly = false;
        for (k, v) in t {
            let kp = self.w.key(p, k);
            match k.as_str() {
                "path" => dest = self.w.string(v, &kp).and_then(|s| self.dest(&s, &kp)),
                "content" => content = self.w.string(v, &kp),
                "encoding" => {
                    base64 =
                        self.w.enumeration(v, &kp, &["text", "base64"]).as_deref() == Some("base64")
                }
                "is_readonly" => readonly = self.w.bool(v, &kp).unwrap_or(false),
                "source" => self
                    .w
                    .err(&kp, "an inline file has `content`, not `source`"),
                _ => self.unknown(p, k, &["path", "content", "encoding", "is_readonly"]),
            }
        }
        if !t.contains_key("path") {
            self.w
                .err(&self.w.key(p, "path"), "missing required field `path`");
        }
        let content = content?;
        let bytes = if base64 {
            match base64::engine::general_purpose::STANDARD.decode(content.trim()) {
                Ok(b) => b,
                Err(e) => {
                    self.w
                        .err(&self.w.key(p, "content"), format!("malformed base64: {e}"));
                    return None;
                }
            }
        } else {
            content.into_bytes()
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            self.w.err(
                &self.w.key(p, "content"),
                format!("inline file is {} bytes; the limit is 1 MiB", bytes.len()),
            );
        }
        Some(FileEntry::Inline {
            dest: dest?,
            content: bytes,
            readonly,
            base64,
        })
    }

    fn check_entry_name(&mut self, name: &str, path: &str) -> bool {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            self.w.err(
                path,
                format!("invalid name `{name}`: use 1-64 letters, digits, `-` or `_`"),
            );
        } else if looks_like_resource_id(name) {
            self.w.err(
                path,
                format!("`{name}` looks like a resource ID; use a stable name"),
            );
            return false;
        }
        ok
    }

    fn mcp_servers(&mut self, v: &Value, path: &str) -> BTreeMap<String, McpServer> {
        let mut out = BTreeMap::new();
        let Some(t) = self.w.table(v, path) else {
            return out;
        };
        for (name, server) in t {
            let p = self.w.key(path, name);
            if !self.check_entry_name(name, &p) {
                continue;
            }
            if let Some(s) = self.mcp_server(server, &p) {
                out.insert(name.clone(), s);
            }
        }
        out
    }

    fn mcp_server(&mut self, v: &Value, p: &str) -> Option<McpServer> {
        let t = self.w.table(v, p)?;
        let known = MCP_KEYS;
        let before = self.w.errors.len();
        for (k, v) in t {
            let kp = self.w.key(p, k);
            match k.as_str() {
                "use" | "type" | "url" | "command" => {
                    self.w.string(v, &kp);
                }
                "args" => {
                    if let Some(args) = self.w.strings(v, &kp) {
                        for (i, a) in args.iter().enumerate() {
                            if looks_like_secret(a) {
                                self.w.err(
                                    &self.w.index(&kp, i),
                                    "looks like a literal credential; use a `${ENV_NAME}` binding",
                                );
                            }
                        }
                    }
                }
                "headers" | "env" => {
                    if let Some(map) = self.string_table(v, &kp) {
                        for (name, value) in map {
                            let vp = self.w.key(&kp, &name);
                            let what = if k == "headers" {
                                "header"
                            } else {
                                "environment value"
                            };
                            if (is_credential_key(&name) || looks_like_secret(&value))
                                && !is_env_binding(&value)
                            {
                                self.w.err(&vp, format!("credential-bearing {what} `{name}` must be a `${{ENV_NAME}}` binding, not a literal"));
                            }
                        }
                    }
                }
                "auth_mode" => {
                    self.w.enumeration(v, &kp, &["none", "api_key", "oauth"]);
                }
                "actsAs" => {
                    self.w
                        .enumeration(v, &kp, &["none", "user", "service", "user_or_service"]);
                }
                "connectInChat" => {
                    self.w.enumeration(v, &kp, &["ask", "never"]);
                }
                "protocol_mode" => {
                    self.w
                        .enumeration(v, &kp, &["auto", "2025-03-26", "2025-06-18", "2026-07-28"]);
                }
                "elicitation_policy" => {
                    self.w.enumeration(v, &kp, &["url", "url_and_form", "none"]);
                }
                "deferred" | "tool_discovery" => {
                    self.w.bool(v, &kp);
                }
                "oauth_provider_id" => {
                    if let Some(s) = self.w.nonempty(v, &kp) {
                        if looks_like_resource_id(&s) {
                            self.w.err(
                                &kp,
                                "installed MCP resource IDs are not portable; name the provider",
                            );
                        }
                    }
                }
                "tool_labels" => {
                    if let Some(map) = self.string_table(v, &kp) {
                        for (tool, label) in map {
                            if label != "read_only" && label != "changes" {
                                self.w.err(&self.w.key(&kp, &tool), format!("unsupported label `{label}`; expected `read_only` or `changes`"));
                            }
                        }
                    }
                }
                _ => self.unknown(p, k, &known),
            }
        }
        let s = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
        let kind = if let Some(u) = s("use") {
            for k in ["type", "url", "command", "args", "headers", "env"] {
                if t.contains_key(k) {
                    self.w.err(&self.w.key(p, k), format!("`{k}` cannot be combined with `use`; the catalog server supplies transport and authentication"));
                }
            }
            match u.strip_prefix("catalog:") {
                Some(name)
                    if !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) =>
                {
                    if looks_like_resource_id(name) {
                        self.w.err(
                            &self.w.key(p, "use"),
                            "catalog references name a server, not a resource ID",
                        );
                    }
                    McpKind::Catalog(name.to_string())
                }
                _ => {
                    self.w.err(
                        &self.w.key(p, "use"),
                        format!("expected `catalog:<name>`, found `{u}`"),
                    );
                    return None;
                }
            }
        } else {
            let ty = match t.get("type") {
                None => "http".to_string(),
                Some(v) => self
                    .w
                    .enumeration(v, &self.w.key(p, "type"), &["http", "stdio"])?,
            };
            if ty == "http" {
                for k in ["command", "args", "env"] {
                    if t.contains_key(k) {
                        self.w.err(
                            &self.w.key(p, k),
                            format!("`{k}` applies only to stdio servers"),
                        );
                    }
                }
                let Some(url) = s("url") else {
                    if !t.contains_key("url") {
                        self.w
                            .err(&self.w.key(p, "url"), "an http server needs `url`");
                    }
                    return None;
                };
                if let Err(e) = check_public_url(&url) {
                    self.w.err(&self.w.key(p, "url"), e);
                }
                McpKind::Http { url }
            } else {
                if t.contains_key("headers") {
                    self.w.err(
                        &self.w.key(p, "headers"),
                        "`headers` applies only to http servers",
                    );
                }
                let command = s("command").unwrap_or_default();
                if command.trim().is_empty() {
                    self.w.err(
                        &self.w.key(p, "command"),
                        "a stdio server needs a nonempty `command`",
                    );
                }
                let args = t
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                McpKind::Stdio { command, args }
            }
        };
        (self.w.errors.len() == before).then(|| McpServer {
            kind,
            raw: t.clone(),
        })
    }

    fn channels(&mut self, v: &Value, path: &str) -> BTreeMap<String, Channel> {
        let mut out = BTreeMap::new();
        let Some(t) = self.w.table(v, path) else {
            return out;
        };
        if t.len() > MAX_CHANNELS {
            self.w.err(
                path,
                format!("{} channels declared; the limit is {MAX_CHANNELS}", t.len()),
            );
        }
        for (name, ch) in t {
            let p = self.w.key(path, name);
            if !self.check_entry_name(name, &p) {
                continue;
            }
            let Some(ct) = self.w.table(ch, &p) else {
                continue;
            };
            let mut kind = None;
            let mut enabled = false;
            for (k, v) in ct {
                let kp = self.w.key(&p, k);
                match k.as_str() {
                    "type" => kind = self.w.enumeration(v, &kp, &CHANNEL_TYPES),
                    "enabled" => enabled = self.w.bool(v, &kp).unwrap_or(false),
                    "config" => {
                        if let Some(t) = self.w.table(v, &kp) {
                            self.misplaced(t, &kp);
                            self.channel_config(v, &kp, 0);
                        }
                    }
                    _ => self.unknown(&p, k, &["type", "enabled", "config"]),
                }
            }
            if !ct.contains_key("type") {
                self.w
                    .err(&self.w.key(&p, "type"), "missing required field `type`");
            }
            if let Some(kind) = kind {
                out.insert(
                    name.clone(),
                    Channel {
                        kind,
                        enabled,
                        raw: ct.clone(),
                    },
                );
            }
        }
        out
    }

    /// Channel config is declarative: no credentials, no destination IDs.
    fn channel_config(&mut self, v: &Value, path: &str, depth: usize) {
        if depth > 32 {
            self.w.err(path, "value nests deeper than 32 levels");
            return;
        }
        match v {
            Value::Object(o) => {
                for (k, item) in o {
                    let kp = self.w.key(path, k);
                    if is_credential_key(k) {
                        self.w.err(
                            &kp,
                            "channel config cannot carry credentials; bind them at the destination",
                        );
                    } else if is_id_key(k) {
                        self.w.err(
                            &kp,
                            "channel config cannot carry destination or resource IDs",
                        );
                    } else {
                        self.channel_config(item, &kp, depth + 1);
                    }
                }
            }
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    self.channel_config(item, &self.w.index(path, i), depth + 1);
                }
            }
            Value::String(s) if looks_like_resource_id(s) => self.w.err(
                path,
                "channel config cannot carry destination or resource IDs",
            ),
            other => self.scan(other, path, depth),
        }
    }

    fn network(&mut self, v: &Value, path: &str) -> Option<NetworkAccess> {
        let t = self.w.table(v, path)?;
        let mut n = NetworkAccess::default();
        for (k, v) in t {
            let kp = self.w.key(path, k);
            match k.as_str() {
                "allowed" | "blocked" => {
                    let Some(list) = self.w.strings(v, &kp) else {
                        continue;
                    };
                    for (i, pat) in list.iter().enumerate() {
                        let ip = self.w.index(&kp, i);
                        let authority = pat.split_once("://").map(|(_, r)| r).unwrap_or(pat);
                        let authority = authority.split(['/', '?', '#']).next().unwrap_or("");
                        if pat.trim().is_empty() || pat.chars().any(char::is_whitespace) {
                            self.w
                                .err(&ip, "URL pattern must be nonempty without whitespace");
                        } else if authority.contains('@') || looks_like_secret(pat) {
                            self.w.err(&ip, "URL pattern embeds credentials");
                        }
                    }
                    if k == "allowed" {
                        n.allowed = list;
                    } else {
                        n.blocked = list;
                    }
                }
                _ => self.unknown(path, k, &["allowed", "blocked"]),
            }
        }
        Some(n)
    }

    fn tools(&mut self, v: &Value, path: &str) -> Vec<Tool> {
        let Some(items) = self.w.array(v, path, "an array of tool tables") else {
            return Vec::new();
        };
        let mut out: Vec<Tool> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = self.w.index(path, i);
            let Some(t) = self.w.table(item, &p) else {
                continue;
            };
            let before = self.w.errors.len();
            let mut name = None;
            for (k, v) in t {
                let kp = self.w.key(&p, k);
                match k.as_str() {
                    "type" => {
                        if let Some(ty) = self.w.string(v, &kp) {
                            if ty != "client_side" {
                                self.w.err(&kp, format!("unsupported tool type `{ty}`; only `client_side` tools can be declared (built-in tools are selected through capabilities)"));
                            }
                        }
                    }
                    "name" => {
                        name = self.w.nonempty(v, &kp);
                        if let Some(n) = &name {
                            if n.len() > 64
                                || !n
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                            {
                                self.w.err(&kp, format!("invalid tool name `{n}`: use 1-64 letters, digits, `_` or `-`"));
                            }
                        }
                    }
                    "description" => {
                        self.w.nonempty(v, &kp);
                    }
                    "display_name" | "icon" | "category" => {
                        self.w.string(v, &kp);
                    }
                    "hints" => {
                        if self.w.table(v, &kp).is_some() {
                            self.scan(v, &kp, 0);
                        }
                    }
                    "parameters" => self.json_schema_object(v, &kp),
                    _ => self.unknown(&p, k, &TOOL_KEYS),
                }
            }
            for req in ["type", "name", "description", "parameters"] {
                if !t.contains_key(req) {
                    self.w.err(
                        &self.w.key(&p, req),
                        format!("missing required field `{req}`"),
                    );
                }
            }
            if let Some(n) = name {
                if out.iter().any(|t| t.name == n) {
                    self.w
                        .err(&self.w.key(&p, "name"), format!("duplicate tool `{n}`"));
                } else if self.w.errors.len() == before {
                    out.push(Tool {
                        name: n,
                        raw: t.clone(),
                    });
                }
            }
        }
        out
    }

    fn json_schema_object(&mut self, v: &Value, path: &str) {
        let Some(t) = self.w.table(v, path) else {
            return;
        };
        self.scan(v, path, 0);
        match t.get("type") {
            Some(Value::String(s)) if s == "object" => {}
            Some(other) => self.w.err(
                &self.w.key(path, "type"),
                format!(
                    "tool parameters must be a JSON Schema with `type = \"object\"`, found {other}"
                ),
            ),
            None => self.w.err(
                &self.w.key(path, "type"),
                "tool parameters must be a JSON Schema with `type = \"object\"`",
            ),
        }
        if let Some(props) = t.get("properties") {
            if let Some(props) = self.w.table(props, &self.w.key(path, "properties")) {
                for (k, schema) in props {
                    if !schema.is_object() && !schema.is_boolean() {
                        self.w.err(
                            &self.w.key(&self.w.key(path, "properties"), k),
                            "property schema must be a table",
                        );
                    }
                }
            }
        }
        if let Some(req) = t.get("required") {
            if let Some(list) = self.w.strings(req, &self.w.key(path, "required")) {
                let props = t.get("properties").and_then(Value::as_object);
                for r in list {
                    if !props.is_some_and(|p| p.contains_key(&r)) {
                        self.w.err(
                            &self.w.key(path, "required"),
                            format!("required property `{r}` is not in `properties`"),
                        );
                    }
                }
            }
        }
    }

    fn starters(&mut self, v: &Value, path: &str) -> Vec<Starter> {
        let Some(items) = self.w.array(v, path, "an array of tables") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = self.w.index(path, i);
            let Some(t) = self.w.table(item, &p) else {
                continue;
            };
            let mut text = None;
            let mut icon = None;
            for (k, v) in t {
                let kp = self.w.key(&p, k);
                match k.as_str() {
                    "text" => text = self.w.nonempty(v, &kp),
                    "icon" => icon = self.w.string(v, &kp),
                    _ => self.unknown(&p, k, &["text", "icon"]),
                }
            }
            if !t.contains_key("text") {
                self.w
                    .err(&self.w.key(&p, "text"), "missing required field `text`");
            }
            if let Some(text) = text {
                out.push(Starter { text, icon });
            }
        }
        out
    }
}
