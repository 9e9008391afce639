//! One test per manifest rule of the agent-package spec, each with an
//! accepted and a rejected input. Rejections must name the field path.

use zot_policy::agent_toml::{
    check_manifest, parse_manifest, parse_skill_front_matter, to_toml, Communication, FileEntry,
    Manifest, ManifestFormat,
};

const HEAD: &str = "schema_version = 1\nname = \"a\"\n";

fn ok(body: &str) -> Manifest {
    let text = format!("{HEAD}{body}");
    match parse_manifest(&text, ManifestFormat::Toml) {
        Ok(m) => m,
        Err(d) => panic!("expected valid:\n{text}\n---\n{d}"),
    }
}

/// Expect a failure whose diagnostics include `path` and `needle`.
fn bad(body: &str, path: &str, needle: &str) {
    bad_doc(&format!("{HEAD}{body}"), path, needle);
}

fn bad_doc(text: &str, path: &str, needle: &str) {
    let (_, d) = check_manifest(text, ManifestFormat::Toml);
    assert!(
        d.iter()
            .any(|x| x.path == path && x.message.contains(needle)),
        "expected `{path}: ...{needle}...` for\n{text}\n--- got:\n{d}"
    );
}

#[test]
fn schema_version() {
    assert_eq!(ok("").schema_version, Some(1));
    bad_doc(
        "schema_version = 2\nname = \"a\"",
        "schema_version",
        "unsupported schema_version 2",
    );
    bad_doc(
        "schema_version = \"1\"\nname = \"a\"",
        "schema_version",
        "expected the integer 1",
    );
    // Unversioned legacy definitions load.
    assert_eq!(
        parse_manifest("name = \"a\"", ManifestFormat::Toml)
            .unwrap()
            .schema_version,
        None
    );
}

#[test]
fn name_rules() {
    for good in ["a", "my-agent", "a1-b2", &"x".repeat(255)] {
        parse_manifest(
            &format!("schema_version = 1\nname = \"{good}\""),
            ManifestFormat::Toml,
        )
        .unwrap();
    }
    for badname in [
        "",
        "My-Agent",
        "-a",
        "a-",
        "a_b",
        "a.b",
        "a b",
        &"x".repeat(256),
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    ] {
        bad_doc(
            &format!("schema_version = 1\nname = \"{badname}\""),
            "name",
            "",
        );
    }
    bad_doc(
        "schema_version = 1",
        "name",
        "missing required field `name`",
    );
}

#[test]
fn unknown_fields_fail_with_suggestions() {
    bad("nmae = \"x\"\n", "nmae", "did you mean `name`");
    bad_doc(
        "schema_version = 1\nName = \"a\"",
        "Name",
        "keys are case-sensitive: did you mean `name`",
    );
    bad("\"$schema\" = \"x\"\n", "\"$schema\"", "`#:schema` comment");
    bad(
        "[model]\nprovider = \"p\"\nmodel = \"m\"\nextra = 1\n",
        "model.extra",
        "unknown field `extra`",
    );
}

#[test]
fn top_level_key_inside_a_table_gets_a_hint() {
    bad(
        "[model]\nprovider = \"openai\"\nmodel = \"m\"\nmax_iterations = 5\n",
        "model.max_iterations",
        "top-level field",
    );
    bad(
        "[network_access]\nallowed = []\ndescription = \"x\"\n",
        "network_access.description",
        "move `description` above",
    );
}

#[test]
fn schema_directive_is_a_comment() {
    ok("#:schema https://everruns.com/docs/schemas/agent/v1.json\n");
}

#[test]
fn instructions_rules() {
    assert_eq!(
        ok("instructions = \"hi\"\n").instructions.as_deref(),
        Some("hi")
    );
    assert_eq!(
        ok("instructions_file = \"prompts/main.md\"\n")
            .instructions_file
            .as_deref(),
        Some("prompts/main.md")
    );
    // Empty inline instructions may be combined with a file.
    ok("instructions = \"\"\ninstructions_file = \"p.md\"\n");
    bad(
        "instructions = \"hi\"\ninstructions_file = \"p.md\"\n",
        "instructions_file",
        "cannot be combined",
    );
    bad(
        "instructions_file = \"../p.md\"\n",
        "instructions_file",
        "traverses",
    );
    bad(
        "instructions_file = \"/etc/passwd\"\n",
        "instructions_file",
        "relative",
    );
    bad(
        "instructions_file = \".env\"\n",
        "instructions_file",
        "credential",
    );
    let big = "x".repeat(1024 * 1024 + 1);
    bad(
        &format!("instructions = \"{big}\"\n"),
        "instructions",
        "1 MiB",
    );
}

#[test]
fn legacy_aliases_resolve_and_conflict() {
    let m = parse_manifest(
        "name = \"a\"\nsystem_prompt = \"p\"\ninitial_files = [\"x\"]\nharness_name = \"base\"\n[mcp_servers.s]\nuse = \"catalog:x\"\n",
        ManifestFormat::Toml,
    )
    .unwrap();
    assert_eq!(m.instructions.as_deref(), Some("p"));
    assert_eq!(m.files.as_ref().unwrap().len(), 1);
    assert_eq!(m.harness.as_deref(), Some("base"));
    assert!(m.mcp_servers.contains_key("s"));
    bad(
        "instructions = \"a\"\nsystem_prompt = \"b\"\n",
        "system_prompt",
        "legacy alias of `instructions`",
    );
    bad(
        "harness = \"a\"\nharness_name = \"b\"\n",
        "harness_name",
        "legacy alias",
    );
}

#[test]
fn legacy_ids_only_in_unversioned_files() {
    parse_manifest(
        "name = \"a\"\nid = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\"\n",
        ManifestFormat::Toml,
    )
    .unwrap();
    bad(
        "id = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\"\n",
        "id",
        "resource IDs",
    );
}

#[test]
fn files_forms() {
    let m = ok("files = [\"runbook.md\", \"data/**\", { source = \"fixtures\", path = \"data\" }, { source = \"t.md\", path = \"/workspace/r.md\", is_readonly = false }]\n");
    let files = m.files.unwrap();
    assert_eq!(
        files[0],
        FileEntry::Select {
            source: "runbook.md".into(),
            dest: None,
            readonly: true
        }
    );
    assert_eq!(
        files[2],
        FileEntry::Select {
            source: "fixtures".into(),
            dest: Some("data".into()),
            readonly: true
        }
    );
    assert_eq!(
        files[3],
        FileEntry::Select {
            source: "t.md".into(),
            dest: Some("r.md".into()),
            readonly: false
        }
    );
    assert_eq!(ok("files = []\n").files, Some(Vec::new()));
    assert_eq!(ok("").files, None);
    bad("files = [1]\n", "files[0]", "expected a path");
    bad("files = [{ path = \"x\" }]\n", "files[0]", "needs `source`");
    bad(
        "files = [{ source = \"x\", bogus = 1 }]\n",
        "files[0].bogus",
        "unknown field",
    );
    bad(
        "files = [{ source = \"x\", encoding = \"base64\" }]\n",
        "files[0].encoding",
        "only to inline",
    );
    bad("files = \"x\"\n", "files", "expected an array");
}

#[test]
fn file_sources_must_be_safe() {
    ok("files = [\".\", \"./a/b\"]\n");
    bad("files = [\"../x\"]\n", "files[0]", "traverses");
    bad("files = [\"/etc/passwd\"]\n", "files[0]", "relative");
    bad("files = [\"a//b\"]\n", "files[0]", "empty component");
    bad("files = [\"a\\\\b\"]\n", "files[0]", "backslash");
    bad("files = [\"[\"]\n", "files[0]", "invalid glob");
}

#[test]
fn credential_sources_named_explicitly_fail() {
    for src in [
        ".env",
        ".ssh/id_rsa",
        ".git",
        "config/.env.production",
        ".aws/credentials",
        "certs/server.key",
    ] {
        bad(&format!("files = [\"{src}\"]\n"), "files[0]", "credential");
    }
    bad(
        "files = [{ source = \".ssh\", path = \"keys\" }]\n",
        "files[0].source",
        "credential",
    );
}

#[test]
fn destinations_normalized_and_safe() {
    let m = ok("files = [{ source = \"a\", path = \"/x/y\" }, { source = \"b\", path = \"/workspace/z\" }]\n");
    let dests: Vec<_> = m
        .files
        .unwrap()
        .into_iter()
        .map(|f| match f {
            FileEntry::Select { dest, .. } => dest.unwrap(),
            FileEntry::Inline { dest, .. } => dest,
        })
        .collect();
    assert_eq!(dests, ["x/y", "z"]);
    bad(
        "files = [{ source = \"a\", path = \"../x\" }]\n",
        "files[0].path",
        "traverses",
    );
    bad(
        "files = [{ source = \"a\", path = \"/workspace/../x\" }]\n",
        "files[0].path",
        "traverses",
    );
    bad(
        "files = [{ source = \"a\", path = \"/workspace\" }]\n",
        "files[0].path",
        "root",
    );
    bad(
        "files = [{ source = \"a\", path = \"x/*.md\" }]\n",
        "files[0].path",
        "glob",
    );
}

#[test]
fn inline_files() {
    let m = ok("[[files]]\npath = \"n.md\"\ncontent = \"hi\"\n[[files]]\npath = \"b.bin\"\ncontent = \"AP8K\"\nencoding = \"base64\"\nis_readonly = true\n");
    let f = m.files.unwrap();
    assert_eq!(
        f[0],
        FileEntry::Inline {
            dest: "n.md".into(),
            content: b"hi".to_vec(),
            readonly: false,
            base64: false
        }
    );
    assert_eq!(
        f[1],
        FileEntry::Inline {
            dest: "b.bin".into(),
            content: vec![0, 255, 10],
            readonly: true,
            base64: true
        }
    );
    bad(
        "[[files]]\npath = \"b\"\ncontent = \"@@@\"\nencoding = \"base64\"\n",
        "files[0].content",
        "malformed base64",
    );
    bad(
        "[[files]]\npath = \"b\"\ncontent = \"x\"\nencoding = \"hex\"\n",
        "files[0].encoding",
        "unsupported value `hex`",
    );
    bad(
        "[[files]]\ncontent = \"x\"\n",
        "files[0].path",
        "missing required field `path`",
    );
    let big = "A".repeat(1024 * 1024 + 1);
    bad(
        &format!("[[files]]\npath = \"b\"\ncontent = \"{big}\"\n"),
        "files[0].content",
        "1 MiB",
    );
    // Both forms in one TOML document are a TOML error.
    let (_, d) = check_manifest(
        &format!("{HEAD}files = [\"a\"]\n[[files]]\npath = \"b\"\ncontent = \"x\"\n"),
        ManifestFormat::Toml,
    );
    assert!(d.mentions("invalid TOML"), "{d}");
}

#[test]
fn skills_field() {
    assert_eq!(
        ok("skills = [\"team-skills\"]\n").skills,
        Some(vec!["team-skills".to_string()])
    );
    bad("skills = [\"../x\"]\n", "skills[0]", "traverses");
    bad("skills = [\"s/*\"]\n", "skills[0]", "not globs");
    bad("skills = [1]\n", "skills[0]", "expected a string");
}

#[test]
fn skill_front_matter() {
    let fm =
        parse_skill_front_matter("---\nname: x\ndescription: d\nlicense: MIT\n---\nbody").unwrap();
    assert_eq!((fm.name.as_str(), fm.description.as_str()), ("x", "d"));
    assert!(parse_skill_front_matter("no front matter").is_err());
    assert!(parse_skill_front_matter("---\nname: x\n---\n")
        .unwrap_err()
        .contains("description"));
    assert!(parse_skill_front_matter("---\nname: [\n---\n")
        .unwrap_err()
        .contains("invalid YAML"));
}

#[test]
fn model_table() {
    let m = ok("[model]\nprovider = \"openai\"\nmodel = \"gpt\"\n")
        .model
        .unwrap();
    assert_eq!(m.provider, "openai");
    bad(
        "[model]\nprovider = \"\"\nmodel = \"m\"\n",
        "model.provider",
        "must not be empty",
    );
    bad(
        "[model]\nprovider = \"p\"\n",
        "model.model",
        "missing required field",
    );
    bad("model = \"gpt\"\n", "model", "expected a table");
}

#[test]
fn harness_field() {
    assert_eq!(
        ok("harness = \"bashkit-worker\"\n").harness.as_deref(),
        Some("bashkit-worker")
    );
    bad("harness = \"\"\n", "harness", "must not be empty");
    bad("harness = 3\n", "harness", "expected a string");
}

#[test]
fn capabilities() {
    let m = ok("capabilities = [\"current_time\", { ref = \"session_file_system\", config = {} }, { ref = \"x\" }]\n");
    assert_eq!(m.capabilities.len(), 3);
    assert!(
        m.capabilities[2].config.as_ref().unwrap().is_empty(),
        "config defaults to {{}}"
    );
    bad(
        "capabilities = [\"a\", \"a\"]\n",
        "capabilities[1]",
        "duplicate capability `a`",
    );
    bad(
        "capabilities = [\"a\", { ref = \"a\" }]\n",
        "capabilities[1]",
        "duplicate",
    );
    bad(
        "capabilities = [{ config = {} }]\n",
        "capabilities[0].ref",
        "missing required field `ref`",
    );
    bad(
        "capabilities = [{ ref = \"a\", config = 1 }]\n",
        "capabilities[0].config",
        "expected a table",
    );
    bad(
        "capabilities = [{ ref = \"a\", cfg = {} }]\n",
        "capabilities[0].cfg",
        "unknown field",
    );
    bad(
        "capabilities = [\"mcp_01hx5k2m3n4p5q6r7s8t9v\"]\n",
        "capabilities[0]",
        "resource ID",
    );
    bad(
        "capabilities = [{ ref = \"a\", config = { token = \"ghp_ABCDEFGHIJKLMNOPQRSTUVWX\" } }]\n",
        "capabilities[0].config.token",
        "literal credential",
    );
}

#[test]
fn mcp_catalog_use() {
    ok("[mcpServers.issues]\nuse = \"catalog:linear\"\nactsAs = \"user\"\n");
    bad(
        "[mcpServers.issues]\nuse = \"linear\"\n",
        "mcpServers.issues.use",
        "catalog:<name>",
    );
    bad(
        "[mcpServers.issues]\nuse = \"catalog:linear\"\ntype = \"http\"\n",
        "mcpServers.issues.type",
        "cannot be combined with `use`",
    );
    bad(
        "[mcpServers.issues]\nuse = \"catalog:linear\"\nurl = \"https://example.com\"\n",
        "mcpServers.issues.url",
        "cannot be combined",
    );
}

#[test]
fn mcp_inline_http_and_stdio() {
    ok("[mcpServers.docs]\ntype = \"http\"\nurl = \"https://example.com/mcp\"\n");
    ok("[mcpServers.docs]\nurl = \"https://example.com/mcp\"\n"); // type defaults to http
    ok("[mcpServers.local]\ntype = \"stdio\"\ncommand = \"python3\"\nargs = [\"-m\", \"srv\"]\nurl = \"ignored\"\n");
    bad(
        "[mcpServers.docs]\ntype = \"http\"\n",
        "mcpServers.docs.url",
        "needs `url`",
    );
    bad(
        "[mcpServers.local]\ntype = \"stdio\"\n",
        "mcpServers.local.command",
        "nonempty `command`",
    );
    bad(
        "[mcpServers.local]\ntype = \"stdio\"\ncommand = \" \"\n",
        "mcpServers.local.command",
        "nonempty",
    );
    bad(
        "[mcpServers.x]\ntype = \"sse\"\nurl = \"https://example.com\"\n",
        "mcpServers.x.type",
        "unsupported value `sse`",
    );
    bad(
        "[mcpServers.x]\nurl = \"https://example.com\"\ncommand = \"x\"\n",
        "mcpServers.x.command",
        "only to stdio",
    );
    bad(
        "[mcpServers.x]\ntype = \"stdio\"\ncommand = \"x\"\nheaders = {}\n",
        "mcpServers.x.headers",
        "only to http",
    );
    bad(
        "[mcpServers.x]\nurl = \"https://example.com\"\nbogus = 1\n",
        "mcpServers.x.bogus",
        "unknown field",
    );
    bad(
        "[mcpServers.\"bad name\"]\nurl = \"https://example.com\"\n",
        "mcpServers.\"bad name\"",
        "invalid name",
    );
}

#[test]
fn mcp_enums() {
    ok("[mcpServers.x]\nurl = \"https://example.com\"\nauth_mode = \"oauth\"\nactsAs = \"user_or_service\"\ndeferred = true\nconnectInChat = \"never\"\noauth_provider_id = \"github\"\ntool_discovery = false\ntool_labels = { search = \"read_only\", create = \"changes\" }\nprotocol_mode = \"2025-06-18\"\nelicitation_policy = \"url_and_form\"\n");
    let base = "[mcpServers.x]\nurl = \"https://example.com\"\n";
    for (line, path) in [
        ("auth_mode = \"basic\"", "auth_mode"),
        ("actsAs = \"admin\"", "actsAs"),
        ("connectInChat = \"always\"", "connectInChat"),
        ("protocol_mode = \"2024-01-01\"", "protocol_mode"),
        ("elicitation_policy = \"form\"", "elicitation_policy"),
    ] {
        bad(
            &format!("{base}{line}\n"),
            &format!("mcpServers.x.{path}"),
            "unsupported value",
        );
    }
    bad(
        &format!("{base}deferred = \"yes\"\n"),
        "mcpServers.x.deferred",
        "expected a boolean",
    );
    bad(
        &format!("{base}tool_labels = {{ a = \"safe\" }}\n"),
        "mcpServers.x.tool_labels.a",
        "unsupported label",
    );
    bad(
        &format!("{base}oauth_provider_id = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\"\n"),
        "mcpServers.x.oauth_provider_id",
        "resource IDs",
    );
}

#[test]
fn mcp_credentials_need_env_bindings() {
    ok("[mcpServers.docs]\nurl = \"https://example.com/mcp\"\n[mcpServers.docs.headers]\nAuthorization = \"${DOCS_AUTHORIZATION}\"\nX-Api-Key = \"Bearer ${K}\"\nAccept = \"application/json\"\n");
    ok("[mcpServers.l]\ntype = \"stdio\"\ncommand = \"srv\"\nenv = { API_KEY = \"${API_KEY}\", LOG_LEVEL = \"debug\" }\n");
    bad("[mcpServers.docs]\nurl = \"https://example.com/mcp\"\n[mcpServers.docs.headers]\nAuthorization = \"Bearer abc123def456\"\n", "mcpServers.docs.headers.Authorization", "`${ENV_NAME}` binding");
    bad(
        "[mcpServers.docs]\nurl = \"https://example.com/mcp\"\nheaders = { X-Api-Key = \"k\" }\n",
        "mcpServers.docs.headers.X-Api-Key",
        "binding",
    );
    bad("[mcpServers.l]\ntype = \"stdio\"\ncommand = \"srv\"\nenv = { GITHUB_TOKEN = \"ghp_ABCDEFGHIJKLMNOPQRSTUVWX\" }\n", "mcpServers.l.env.GITHUB_TOKEN", "binding");
    // A secret-looking value under an innocent name is still a literal credential.
    bad("[mcpServers.l]\ntype = \"stdio\"\ncommand = \"srv\"\nenv = { X = \"sk-abcdefghijklmnopqrstuv\" }\n", "mcpServers.l.env.X", "binding");
    bad("[mcpServers.l]\ntype = \"stdio\"\ncommand = \"srv\"\nargs = [\"--token\", \"ghp_ABCDEFGHIJKLMNOPQRSTUVWX\"]\n", "mcpServers.l.args[1]", "literal credential");
}

#[test]
fn mcp_urls_must_be_safe_and_public() {
    for url in [
        "http://localhost:8080/mcp",
        "https://user:pass@example.com/mcp",
        "http://192.168.1.10/mcp",
        "http://169.254.169.254/",
        "file:///etc/passwd",
        "https://example.com/mcp?token=abcdef123456",
    ] {
        bad(
            &format!("[mcpServers.x]\nurl = \"{url}\"\n"),
            "mcpServers.x.url",
            "",
        );
    }
}

#[test]
fn channels() {
    let m = ok("[channels.chat]\ntype = \"ag_ui\"\nenabled = true\n[channels.chat.config]\ntool_visibility = \"generic\"\nrate_limit_per_minute = 30\n");
    assert!(m.channels["chat"].enabled);
    assert!(
        !ok("[channels.c]\ntype = \"slack\"\n").channels["c"].enabled,
        "enabled defaults to false"
    );
    bad(
        "[channels.c]\ntype = \"irc\"\n",
        "channels.c.type",
        "unsupported value `irc`",
    );
    bad(
        "[channels.c]\nenabled = true\n",
        "channels.c.type",
        "missing required field `type`",
    );
    bad(
        "[channels.c]\ntype = \"slack\"\nid = \"C123\"\n",
        "channels.c.id",
        "unknown field",
    );
    bad(
        "[channels.c]\ntype = \"slack\"\nconfig = { bot_token = \"${SLACK}\" }\n",
        "channels.c.config.bot_token",
        "credentials",
    );
    bad(
        "[channels.c]\ntype = \"slack\"\nconfig = { channel_id = \"C0123\" }\n",
        "channels.c.config.channel_id",
        "IDs",
    );
    bad(
        "[channels.c]\ntype = \"slack\"\nconfig = { nested = { signing_secret = \"x\" } }\n",
        "channels.c.config.nested.signing_secret",
        "credentials",
    );
    bad("[channels.c]\ntype = \"slack\"\nconfig = { target = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\" }\n", "channels.c.config.target", "IDs");
    bad(
        "[channels.c]\ntype = \"webhook\"\nconfig = { header = \"Bearer abcdefgh12345\" }\n",
        "channels.c.config.header",
        "literal credential",
    );
}

#[test]
fn at_most_32_channels() {
    let many = |n: usize| {
        (0..n)
            .map(|i| format!("[channels.c{i}]\ntype = \"api\"\n"))
            .collect::<String>()
    };
    assert_eq!(ok(&many(32)).channels.len(), 32);
    bad(&many(33), "channels", "limit is 32");
}

#[test]
fn network_access() {
    let m = ok("[network_access]\nallowed = [\"https://everruns.com/docs/**\"]\nblocked = []\n");
    assert_eq!(m.network_access.unwrap().allowed.len(), 1);
    bad(
        "[network_access]\nallowed = [\"https://u:p@example.com/**\"]\n",
        "network_access.allowed[0]",
        "credentials",
    );
    bad(
        "[network_access]\nallowed = \"x\"\n",
        "network_access.allowed",
        "expected an array",
    );
    bad(
        "[network_access]\ndenied = []\n",
        "network_access.denied",
        "unknown field",
    );
}

#[test]
fn max_iterations_range() {
    assert_eq!(ok("max_iterations = 1\n").max_iterations, Some(1));
    assert_eq!(ok("max_iterations = 1000\n").max_iterations, Some(1000));
    bad(
        "max_iterations = 0\n",
        "max_iterations",
        "between 1 and 1000",
    );
    bad(
        "max_iterations = 1001\n",
        "max_iterations",
        "between 1 and 1000",
    );
    bad(
        "max_iterations = 2.5\n",
        "max_iterations",
        "expected an integer",
    );
}

#[test]
fn parallel_tool_calls_and_communication() {
    assert_eq!(
        ok("parallel_tool_calls = false\n").parallel_tool_calls,
        Some(false)
    );
    bad(
        "parallel_tool_calls = \"no\"\n",
        "parallel_tool_calls",
        "expected a boolean",
    );
    assert_eq!(
        ok("communication = \"explicit\"\n").communication,
        Some(Communication::Explicit)
    );
    assert_eq!(
        ok("communication = \"direct\"\n").communication,
        Some(Communication::Direct)
    );
    bad(
        "communication = \"loud\"\n",
        "communication",
        "unsupported value",
    );
}

#[test]
fn tools() {
    let t = "[[tools]]\ntype = \"client_side\"\nname = \"lookup\"\ndescription = \"d\"\nparameters = { type = \"object\", properties = { id = { type = \"string\" } }, required = [\"id\"] }\n";
    assert_eq!(ok(t).tools[0].name, "lookup");
    bad(
        &t.replace("client_side", "server_side"),
        "tools[0].type",
        "only `client_side`",
    );
    bad(
        &t.replace("type = \"object\"", "type = \"array\""),
        "tools[0].parameters.type",
        "type = \"object\"",
    );
    bad(
        &t.replace("required = [\"id\"]", "required = [\"nope\"]"),
        "tools[0].parameters.required",
        "not in `properties`",
    );
    bad(
        &t.replace("name = \"lookup\"\n", ""),
        "tools[0].name",
        "missing required field",
    );
    bad(
        &t.replace("description = \"d\"\n", ""),
        "tools[0].description",
        "missing required field",
    );
    bad(&format!("{t}{t}"), "tools[1].name", "duplicate tool");
    bad(
        &t.replace("name = \"lookup\"", "name = \"bad name\""),
        "tools[0].name",
        "invalid tool name",
    );
    bad(
        &format!("{t}handler = \"x\"\n"),
        "tools[0].handler",
        "unknown field",
    );
}

#[test]
fn presentation_fields() {
    let m = ok("display_name = \"D\"\ndescription = \"d\"\ntags = [\"b\", \"a\", \"b\"]\nintro_markdown = \"hi\"\nshort_description = \"s\"\nstarters = [{ text = \"go\", icon = \"search\" }]\n[environments.prod]\nregion = \"eu\"\n");
    assert_eq!(m.tags, ["a", "b"], "tags are a set: order does not matter");
    assert_eq!(m.starters[0].text, "go");
    bad(
        "starters = [{ icon = \"x\" }]\n",
        "starters[0].text",
        "missing required field",
    );
    bad(
        "starters = [{ text = \"x\", color = \"red\" }]\n",
        "starters[0].color",
        "unknown field",
    );
    bad("display_name = 1\n", "display_name", "expected a string");
    bad("tags = [1]\n", "tags[0]", "expected a string");
    bad(
        "[environments.prod]\napi_key = \"sk-abcdefghijklmnopqrstuv\"\n",
        "environments.prod.api_key",
        "literal credential",
    );
}

#[test]
fn diagnostics_are_all_collected() {
    let (_, d) = check_manifest(
        "schema_version = 3\nname = \"Bad\"\nmax_iterations = 0\nbogus = 1\n",
        ManifestFormat::Toml,
    );
    assert_eq!(d.len(), 4, "{d}");
}

#[test]
fn yaml_json_markdown_encodings() {
    let y = parse_manifest(
        "schema_version: 1\nname: a\nmax_iterations: 3\n",
        ManifestFormat::Yaml,
    )
    .unwrap();
    assert_eq!(y.max_iterations, Some(3));
    let j = parse_manifest(
        "{\"schema_version\": 1, \"name\": \"a\"}",
        ManifestFormat::Json,
    )
    .unwrap();
    assert_eq!(j.name, "a");
    let md = parse_manifest("---\nname: a\n---\nBody text.\n", ManifestFormat::Markdown).unwrap();
    assert_eq!(md.instructions.as_deref(), Some("Body text."));
    assert!(
        check_manifest("# no front matter", ManifestFormat::Markdown)
            .1
            .mentions("front matter")
    );
    assert!(check_manifest(
        "---\nname: a\ninstructions: x\n---\nbody",
        ManifestFormat::Markdown
    )
    .1
    .mentions("both a body"));
    assert!(
        check_manifest("name: a\nextra: null\n", ManifestFormat::Yaml)
            .1
            .mentions("unknown field `extra`")
    );
    assert!(
        check_manifest("{\"name\": \"a\", \"tags\": null}", ManifestFormat::Json)
            .1
            .mentions("expected an array")
    );
    assert!(check_manifest("[1, 2]", ManifestFormat::Json)
        .1
        .mentions("must be a table"));
}

#[test]
fn canonical_toml_round_trips() {
    let src = "schema_version = 1\nname = \"a\"\ndescription = \"d\"\ntags = [\"x\"]\nmax_iterations = 9\ncapabilities = [\"c\", { ref = \"r\", config = { k = 1 } }]\nfiles = [\"f\", { source = \"s\", path = \"p\", is_readonly = false }, { path = \"i\", content = \"AP8K\", encoding = \"base64\" }]\nstarters = [{ text = \"t\" }]\n[model]\nprovider = \"p\"\nmodel = \"m\"\n[mcpServers.docs]\nurl = \"https://example.com/mcp\"\n[channels.c]\ntype = \"api\"\n[network_access]\nallowed = [\"https://example.com/**\"]\n";
    let m = parse_manifest(src, ManifestFormat::Toml).unwrap();
    let text = to_toml(&m);
    let again =
        parse_manifest(&text, ManifestFormat::Toml).unwrap_or_else(|d| panic!("{text}\n{d}"));
    assert_eq!(again, m, "{text}");
    assert_eq!(to_toml(&again), text, "canonical output is stable");
    assert!(text.starts_with("#:schema "));
}

#[test]
fn top_level_key_swallowed_by_a_free_form_table_is_flagged() {
    // The spec's channel example ends with `[channels.chat.config]`: a key
    // added below it lands in the config.
    bad(
        "[channels.chat]\ntype = \"ag_ui\"\n[channels.chat.config]\ntool_visibility = \"generic\"\nmax_iterations = 10\n",
        "channels.chat.config.max_iterations",
        "top-level field",
    );
    bad(
        "[environments.prod]\nregion = \"eu\"\nstarters = []\n",
        "environments.prod.starters",
        "move `starters` above",
    );
    // YAML has no such ambiguity, and ordinary config keys pass.
    parse_manifest(
        "schema_version: 1\nname: a\nchannels:\n  c:\n    type: api\n    config:\n      files: 3\n",
        ManifestFormat::Yaml,
    )
    .unwrap();
    ok("[channels.chat]\ntype = \"ag_ui\"\n[channels.chat.config]\nname = \"x\"\n");
}

#[test]
fn duplicate_keys_fail_in_every_encoding() {
    assert!(
        check_manifest("name = \"a\"\nname = \"b\"\n", ManifestFormat::Toml)
            .1
            .mentions("invalid TOML")
    );
    assert!(check_manifest("name: a\nname: b\n", ManifestFormat::Yaml)
        .1
        .mentions("duplicate key `name`"));
    assert!(
        check_manifest("{\"name\": \"a\", \"name\": \"b\"}", ManifestFormat::Json)
            .1
            .mentions("duplicate key `name`")
    );
    assert!(
        check_manifest("---\nname: a\nname: b\n---\n", ManifestFormat::Markdown)
            .1
            .mentions("duplicate key")
    );
    assert!(
        parse_skill_front_matter("---\nname: a\nname: b\ndescription: d\n---\n")
            .unwrap_err()
            .contains("duplicate key")
    );
    // Nested tables too.
    assert!(check_manifest(
        "{\"name\": \"a\", \"model\": {\"model\": \"x\", \"model\": \"y\", \"provider\": \"p\"}}",
        ManifestFormat::Json
    )
    .1
    .mentions("duplicate key `model`"));
}

#[test]
fn accepted_paths_never_escape() {
    use zot_policy::agent_toml::paths::{check_relative, normalize_dest};
    // Random short strings over the characters that matter for paths.
    let alphabet = ['a', 'b', '/', '.', '\\', '*', ':', ' ', 'w'];
    let mut x: u64 = 0x853c49e6748fea9b;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut prefixes = vec![
        String::new(),
        "/".into(),
        "/workspace/".into(),
        "./".into(),
        "../".into(),
    ];
    prefixes.push("/workspace".into());
    for _ in 0..50_000 {
        let len = (next() % 10) as usize;
        let body: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let raw = format!(
            "{}{body}",
            prefixes[(next() % prefixes.len() as u64) as usize]
        );
        for out in [check_relative(&raw, true), normalize_dest(&raw)]
            .into_iter()
            .flatten()
        {
            assert!(!out.starts_with('/'), "{raw:?} -> {out:?}");
            assert!(!out.contains('\\'), "{raw:?} -> {out:?}");
            assert!(
                out.split('/').all(|c| c != ".." && c != "."),
                "{raw:?} -> {out:?}"
            );
            assert!(!out.contains("//"), "{raw:?} -> {out:?}");
        }
    }
}
