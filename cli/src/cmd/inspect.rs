//! `zot inspect REF [--json]`: identity, digest, permissions and files of a
//! directory or archive, without running (or extracting) anything.

use std::path::{Path, PathBuf};

use anyhow::Context;
use zot_agent::reference::{self, Reference};
use zot_package::agent_toml;
use zot_policy::zotfile::{BashMode, Manifest};

#[derive(clap::Args)]
pub struct Args {
    /// An agent directory, .zot archive, local name, or GitHub reference
    /// (owner/repo[/path] or https://github.com/...), resolved like `zot run`
    pub reference: String,
    /// Print everything as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// The declared permissions, one `(label, value)` per line.
pub fn permission_lines(m: &Manifest) -> Vec<(&'static str, String)> {
    let p = &m.permissions;
    let bash = match p.bash.mode {
        BashMode::None => "none".to_string(),
        BashMode::Ask => "ask (approved at launch)".to_string(),
        BashMode::Allowlist => format!("allowlist: {}", p.bash.allow.join(", ")),
    };
    let mut net = list(&p.net.allow);
    if !p.net.allow.is_empty() {
        net.push_str(" (through zot's filtering proxy)");
    }
    let mut env = list(&p.env.read);
    if p.env.read.iter().any(|e| e.ends_with('*')) {
        env.push_str(" (a prefix is expanded against the environment when consent is asked)");
    }
    vec![
        ("fs read", list(&p.fs.read)),
        ("fs write", list(&p.fs.write)),
        ("bash", bash),
        ("net", net),
        ("env", env),
    ]
}

/// Write `text` to stdout; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// What a reference turned out to be.
pub enum Loaded {
    Zotfile(zot_package::Summary),
    /// An Everruns agent.toml package (folder or ZIP).
    AgentToml(agent_toml::Summary),
}

/// A local agent.toml package: no `manifest.json` (a zotfile wins), and an
/// agent manifest at the root or a ZIP file.
pub fn is_agent_toml(path: &Path) -> bool {
    !path.join(zot_policy::zotfile::MANIFEST_FILE).exists() && agent_toml::detect(path)
}

fn load_local(path: &Path) -> anyhow::Result<Loaded> {
    if is_agent_toml(path) {
        let pkg = agent_toml::load(path).map_err(|d| {
            anyhow::Error::new(d).context(format!("invalid agent.toml package {}", path.display()))
        })?;
        return Ok(Loaded::AgentToml(pkg.summary()));
    }
    Ok(Loaded::Zotfile(zot_package::inspect(path)?))
}

/// Resolve `reference` the way `zot run` does and summarize it without
/// running anything. An existing local path always wins (no network).
/// GitHub references are downloaded into a temp dir removed on return.
pub fn load(reference: &str) -> anyhow::Result<Loaded> {
    let path = Path::new(reference);
    if path.exists() {
        return load_local(path);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    match reference::parse(reference, &cwd)? {
        Reference::Local(p) => load_local(&p),
        Reference::GitHub { .. }
        | Reference::GitHubRelease { .. }
        | Reference::Oci(_)
        | Reference::Installed(_) => {
            let keys = zot_package::signature::KeySet::default();
            let sigs = reference::Signatures {
                keys: &keys,
                required: false,
            };
            let mut bar = None;
            let loaded = reference::resolve_checked(
                reference,
                &cwd,
                &sigs,
                &mut Vec::new(),
                &mut |p| crate::ui::progress::Bytes::follow(&mut bar, p),
                None,
            )?;
            // A downloaded archive is described as the archive (its own
            // digest), a repository directory as the directory.
            let local = match &loaded._package {
                Some(p) if p.kind == zot_package::SourceKind::Archive => p.source.clone(),
                _ => loaded.root.clone(),
            };
            Ok(match load_local(&local)? {
                Loaded::Zotfile(mut s) => {
                    s.source = PathBuf::from(reference);
                    Loaded::Zotfile(s)
                }
                Loaded::AgentToml(mut s) => {
                    s.source = PathBuf::from(reference);
                    Loaded::AgentToml(s)
                }
            })
        }
    }
}

fn print_agent_toml(s: &agent_toml::Summary, json: bool) -> anyhow::Result<u8> {
    use std::fmt::Write;
    if json {
        emit(&format!("{}\n", serde_json::to_string_pretty(s)?))?;
        return Ok(0);
    }
    let mut o = String::new();
    let kind = match s.kind {
        agent_toml::PackageKind::Directory => "directory",
        agent_toml::PackageKind::Zip => "zip",
    };
    writeln!(o, "format       agent.toml ({}, {kind})", s.manifest_file)?;
    writeln!(o, "name         {}", s.name)?;
    if let Some(d) = &s.display_name {
        writeln!(o, "display name {d}")?;
    }
    writeln!(
        o,
        "description  {}",
        s.description.as_deref().unwrap_or("-")
    )?;
    writeln!(o, "source       {}", s.source.display())?;
    writeln!(o, "digest       {}", s.digest)?;
    writeln!(
        o,
        "model        {}",
        s.model.as_deref().unwrap_or("- (offline simulator)")
    )?;
    if let Some(n) = s.max_iterations {
        writeln!(o, "max iterations {n}")?;
    }
    writeln!(o, "capabilities {}", list(&s.capabilities))?;
    writeln!(o, "skills       {}", list(&s.skills))?;
    for u in &s.unsupported {
        let action = match u.action {
            agent_toml::UnsupportedAction::Refuse => "zot run refuses",
            agent_toml::UnsupportedAction::Ignore => "ignored",
        };
        writeln!(o, "unsupported  {}: {} ({action})", u.path, u.message)?;
    }
    writeln!(o, "files ({})", s.files.len())?;
    for f in &s.files {
        let ro = if f.readonly { ", read-only" } else { "" };
        writeln!(o, "  {} ({} bytes{ro})", f.path, f.size)?;
    }
    emit(&o)?;
    Ok(0)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    use std::fmt::Write;
    let s = match load(&args.reference).with_context(|| format!("inspecting {}", args.reference))? {
        Loaded::Zotfile(s) => s,
        Loaded::AgentToml(s) => return print_agent_toml(&s, args.json),
    };
    let extensions = bundled_extensions(&s)?;
    if args.json {
        let mut v = serde_json::to_value(&s)?;
        if let (Some(obj), false) = (v.as_object_mut(), extensions.is_empty()) {
            obj.insert("extensions".into(), serde_json::to_value(&extensions)?);
        }
        emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        return Ok(0);
    }
    for w in &s.warnings {
        eprintln!("zot: warning: {w}");
    }
    let mut o = String::new();
    let m = &s.manifest;
    writeln!(o, "name         {}", m.name)?;
    writeln!(o, "version      {}", m.version.as_deref().unwrap_or("-"))?;
    writeln!(
        o,
        "description  {}",
        m.description.as_deref().unwrap_or("-")
    )?;
    if let Some(l) = &m.license {
        writeln!(o, "license      {l}")?;
    }
    let kind = match s.kind {
        zot_package::SourceKind::Directory => "directory".to_string(),
        zot_package::SourceKind::Archive => {
            format!(
                "archive, {}, {} bytes",
                s.compression.unwrap_or("?"),
                s.compressed_size.unwrap_or(0)
            )
        }
    };
    writeln!(o, "source       {} ({kind})", s.source.display())?;
    writeln!(o, "digest       {}", s.digest)?;
    if let Some(v) = m.runtime.min_zot.as_deref().filter(|v| !v.is_empty()) {
        writeln!(o, "min zot      {v}")?;
    }
    let mut model = Vec::new();
    if !m.model.requires.is_empty() {
        model.push(format!(
            "requires {}",
            m.model
                .requires
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(c) = m.model.min_context {
        model.push(format!("min context {c}"));
    }
    if !m.model.preferred.is_empty() {
        model.push(format!("preferred {}", m.model.preferred.join(", ")));
    }
    if !model.is_empty() {
        writeln!(o, "model        {}", model.join("; "))?;
    }
    if !m.requirements.os.is_empty() || !m.requirements.bin.is_empty() {
        writeln!(
            o,
            "requires     os: {}; bin: {}",
            list(&m.requirements.os),
            list(&m.requirements.bin)
        )?;
    }
    writeln!(o, "permissions")?;
    for (label, value) in permission_lines(m) {
        writeln!(o, "  {label:<10} {value}")?;
    }
    let e = &m.entry;
    for (label, value) in [
        ("greeting", &e.greeting),
        ("pre", &e.pre),
        ("default prompt", &e.default_prompt),
    ] {
        if let Some(v) = value {
            let note = if label == "pre" && v.starts_with('!') {
                "   (runs as a bash command when the agent starts)"
            } else {
                ""
            };
            writeln!(o, "entry {label:<14} {v}{note}")?;
        }
    }
    if m.replace_system_prompt {
        writeln!(o, "AGENT.md replaces the system prompt")?;
    }
    if !extensions.is_empty() {
        writeln!(
            o,
            "extensions   (each runs inside the agent's sandbox, with its permissions)"
        )?;
        for l in zot_agent::ext::describe(&extensions) {
            writeln!(o, "  {}", crate::ui::style::sanitize(&l))?;
        }
    }
    writeln!(o, "files ({}, {} bytes)", s.files.len(), s.total_size)?;
    for f in &s.files {
        writeln!(o, "  {f}")?;
    }
    emit(&o)?;
    Ok(0)
}

/// The bundled extensions of a zotfile agent, their manifests checked (an
/// archive is opened into a private temp dir for that, only when it has
/// some).
fn bundled_extensions(
    s: &zot_package::Summary,
) -> anyhow::Result<Vec<zot_package::BundledExtension>> {
    if !s
        .files
        .iter()
        .any(|f| zot_policy::zotfile::extension::manifest_dir(f).is_some())
    {
        return Ok(Vec::new());
    }
    let agent = zot_package::open(&s.source)?;
    Ok(agent.extensions(&mut Vec::new())?)
}
