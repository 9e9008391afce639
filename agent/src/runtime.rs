//! One `zot run`: checks in the spec's order, then the conversation loop in
//! the chosen output mode.

use std::path::{Path, PathBuf};

use crate::consent::{self, Bypass};
use crate::deps::{self, AgentPolicyInput, AgentSpec, LoadedAgent, SandboxPolicy};
use crate::events::Event;
pub use crate::events::OutputMode;
use crate::home::{self, AgentHome};
use crate::message::{Message, ToolCall, Usage};
use crate::models::{self, ProviderKind, Registry, Selection};
use crate::perms::{self, Permissions};
use crate::providers::sim::Simulator;
use crate::providers::{
    Cancel, Endpoint, Model, NetworkModel, ProviderError, ReasoningEffort, Secret, Timeouts,
};
pub use crate::session::SessionChoice;
use crate::session::{self, Record, Session};
use crate::tools::{self, ToolEnv};
use crate::trust;
use crate::ui::{self, Ui};
use crate::{config, prompt, reference, requirements, RunError, ZOT_VERSION};

mod compact;
mod repl;

/// Model steps (responses) allowed in one turn before it is cut off.
pub const MAX_STEPS: usize = 50;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub reference: String,
    pub prompt: Option<String>,
    pub yes: bool,
    /// `--model`.
    pub model: Option<String>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--reasoning`.
    pub reasoning: Option<ReasoningEffort>,
    /// `--tools`: narrows the tools the manifest allows.
    pub tools: Option<Vec<String>>,
    pub sim_script: Option<PathBuf>,
    pub output: OutputMode,
    /// The workspace (default: the current directory).
    pub cwd: Option<PathBuf>,
    pub session: SessionChoice,
    /// Pin a sandbox backend for bash (`auto` when `None`).
    pub backend: Option<String>,
    /// A handle to cancel the running turn (an interactive front end
    /// triggers it on Ctrl-C). Without one, zot itself turns SIGINT,
    /// SIGTERM and SIGHUP during a model request into
    /// [`RunError::Interrupted`] (exit 128+N), after cleaning up.
    pub cancel: Option<Cancel>,
    /// Refuse an agent without a valid signature by a trusted key
    /// (`--require-signature`; the `require_signature` setting also turns
    /// this on).
    pub require_signature: bool,
}

fn workspace_of(cwd: Option<&Path>) -> Result<PathBuf, RunError> {
    let here = std::env::current_dir().map_err(|e| RunError::io("current directory", e))?;
    let ws = match cwd {
        Some(p) => here.join(p),
        None => here,
    };
    ws.canonicalize()
        .map_err(|e| RunError::io(format!("workspace {}", ws.display()), e))
}

fn policy_for(
    perms: &Permissions,
    workspace: &Path,
    ah: &AgentHome,
    read_only: &[PathBuf],
    config: &zot_policy::config::Config,
) -> Result<SandboxPolicy, String> {
    compile(perms, workspace, ah, read_only, config).map_err(|e| ui::error_chain(&e))
}

fn compile(
    perms: &Permissions,
    workspace: &Path,
    ah: &AgentHome,
    read_only: &[PathBuf],
    config: &zot_policy::config::Config,
) -> Result<SandboxPolicy, RunError> {
    deps::agent_policy(&AgentPolicyInput {
        workspace: workspace.to_path_buf(),
        read: perms.fs_read.clone(),
        write: perms.fs_write.clone(),
        zot_home: ah.home.clone(),
        agent: ah.name.clone(),
        read_only: read_only.to_vec(),
        net_allow: perms.net_allow.clone(),
        env_read: perms.env_read.clone(),
        limits: config.sandbox.limits(),
    })
}

/// Load `reference` and compile the sandbox policy its bash would run under
/// in `workspace` (for `zot debug sandbox --explain`). Creates nothing.
pub fn compile_policy(reference: &str, workspace: &Path) -> Result<SandboxPolicy, RunError> {
    compile_policies(reference, workspace).map(|(p, _)| p)
}

/// [`compile_policy`], plus the policy each enabled bundled extension of
/// the agent runs under (see [`crate::ext::policy`]): `(name, policy)`.
/// Creates nothing.
#[allow(clippy::type_complexity)]
pub fn compile_policies(
    reference: &str,
    workspace: &Path,
) -> Result<(SandboxPolicy, Vec<(String, SandboxPolicy)>), RunError> {
    let here = std::env::current_dir().map_err(|e| RunError::io("current directory", e))?;
    let agent = reference::resolve(reference, &here)?;
    let ws = workspace
        .canonicalize()
        .map_err(|e| RunError::io(format!("workspace {}", workspace.display()), e))?;
    let ah = AgentHome::new(home::zot_home()?, &agent.spec.name);
    let cfg = config::load()?;
    let perms = perms::expand(&agent.spec, &ws, &ah.data_dir(), &cfg.config)?;
    let base = compile(&perms, &ws, &ah, &[], &cfg.config)?;
    let (list, _) = crate::ext::bundled(&agent)?;
    let data = perms::canonical_prefix(&ah.data_dir());
    let mut out = Vec::new();
    for e in list.iter().filter(|e| e.manifest.enabled) {
        let dir = perms::canonical_prefix(&agent.root.join("extensions").join(&e.dir));
        let ext_data = crate::ext::data_dir(&data, &e.manifest.name);
        out.push((
            e.manifest.name.clone(),
            crate::ext::policy(&base, &dir, &ext_data, &perms.env_read),
        ));
    }
    Ok((base, out))
}

/// Run an agent, talking to the user through `ui`. Returns the exit code;
/// a failure is also reported to `ui` as an [`Event::Error`] (with its
/// causes) before it is returned.
pub fn run(opts: RunOptions, ui: &mut dyn Ui) -> Result<u8, RunError> {
    let r = run_inner(opts, ui);
    if let Err(e) = &r {
        ui.event(&Event::Error {
            message: ui::error_chain(e),
        });
    }
    r
}

/// The model of a run, checked against the agent (before consent).
fn choose_model(
    opts: &RunOptions,
    spec: &AgentSpec,
    cfg: &config::Loaded,
) -> Result<Selection, RunError> {
    if opts.sim_script.is_some()
        && (opts.model.as_deref().is_some_and(|m| m != models::SIM)
            || opts.provider.as_deref().is_some_and(|p| p != models::SIM))
    {
        return Err(RunError::Usage("--sim-script needs the sim model".into()));
    }
    let reg = Registry::from_env(&cfg.config);
    let choice = models::Choice {
        model: opts
            .model
            .clone()
            .or_else(|| opts.sim_script.as_ref().map(|_| models::SIM.to_string())),
        provider: opts.provider.clone(),
        reasoning: opts.reasoning,
        env_model: std::env::var("ZOT_MODEL").ok(),
    };
    models::select(&reg, &choice, spec)
}

/// Connect the selected model. Reads the key from its variable; the key
/// stays in this process (never in the sandbox, sessions or output).
fn open_model(
    sel: &Selection,
    sim_script: Option<&Path>,
    signals: bool,
) -> Result<Box<dyn Model>, RunError> {
    let api = match sel.provider.kind {
        ProviderKind::Sim => {
            return Ok(match sim_script {
                Some(p) => Box::new(Simulator::from_script(p)?),
                None => Box::new(Simulator::rules()),
            })
        }
        ProviderKind::Net(api) => api,
    };
    let p = &sel.provider;
    let key = match &p.key_env {
        Some(var) => {
            let v = std::env::var(var).unwrap_or_default();
            let v = v.trim();
            if v.is_empty() {
                return Err(RunError::model(format!(
                    "{} ({}) is not available: {var} is not set",
                    sel.model.id, p.name
                )));
            }
            Some(Secret::new(v.to_string()))
        }
        None => None,
    };
    let mut headers = Vec::new();
    if p.name == "openai" {
        for (var, header) in [
            ("OPENAI_ORG_ID", "OpenAI-Organization"),
            ("OPENAI_PROJECT_ID", "OpenAI-Project"),
        ] {
            if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
                headers.push((header.to_string(), v.trim().to_string()));
            }
        }
    }
    if key.is_some() {
        harden_process();
    }
    let ep = Endpoint {
        api,
        base_url: p.base_url.clone().unwrap_or_default(),
        model: sel.model.id.clone(),
        key,
        key_env: p.key_env.clone(),
        headers,
        timeouts: Timeouts::from_settings(p.http),
        max_output_tokens: sel.model.max_output_tokens,
    };
    let m = NetworkModel::new(ep, signals).map_err(|e| provider_error(&p.name, e))?;
    Ok(Box::new(m))
}

/// This process holds an API key: make it non-dumpable, so no process of
/// the same user (a sandboxed command on a backend without a PID
/// namespace included) can ptrace it or read its memory or environment
/// through /proc. Children get the flag back when they exec.
fn harden_process() {
    // SAFETY: prctl with integer arguments only changes this process's flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

fn provider_error(provider: &str, e: ProviderError) -> RunError {
    match e {
        ProviderError::Cancelled => RunError::Cancelled,
        ProviderError::Interrupted(sig) => RunError::Interrupted(sig),
        source => RunError::Provider {
            provider: provider.to_string(),
            source,
        },
    }
}

/// `zot models`: the registry of this environment and config, and the
/// model an agent without requirements would get.
pub fn models_report() -> Result<models::Report, RunError> {
    let cfg = config::load()?;
    let reg = Registry::from_env(&cfg.config);
    let choice = models::Choice {
        env_model: std::env::var("ZOT_MODEL").ok(),
        ..Default::default()
    };
    let default = models::select(&reg, &choice, &AgentSpec::default()).ok();
    let (providers, models) = reg.report(default.as_ref());
    Ok(models::Report {
        config: cfg.path,
        config_exists: cfg.exists,
        providers,
        models,
    })
}

fn run_inner(opts: RunOptions, ui: &mut dyn Ui) -> Result<u8, RunError> {
    let here = std::env::current_dir().map_err(|e| RunError::io("current directory", e))?;
    let workspace = workspace_of(opts.cwd.as_deref())?;
    let zot_home = home::zot_home()?;
    let cfg = config::load()?;
    let required = opts.require_signature || cfg.config.trust.require_signature;
    let keys = trust::trusted_keys(&zot_home)?;
    let (cancel, signals) = match &opts.cancel {
        Some(c) => (c.clone(), false),
        None => (
            Cancel::new().map_err(|e| RunError::io("cancellation pipe", e))?,
            true,
        ),
    };
    let mut sig_warnings = Vec::new();
    let mut agent = reference::resolve_checked(
        &opts.reference,
        &here,
        &reference::Signatures {
            keys: &keys,
            required,
        },
        &mut sig_warnings,
        &mut |p| ui.progress(p),
        Some(&cancel),
    )?;
    if let Some(sig) = cancel.signal() {
        return Err(RunError::Interrupted(sig));
    }
    let spec = agent.spec.clone();
    for w in sig_warnings.iter().chain(&agent.warnings) {
        ui.warn(w);
    }
    if let Some(v) = &agent.signature {
        ui.note(&format!("signature verified: {}", trust::signer_line(v)));
    }
    if let Some(src) = &agent.source {
        ui.note(&format!("{} resolved to {src}", opts.reference));
    }
    requirements::check(&spec, ZOT_VERSION)?;
    // The model and the tools are settled before consent is asked and
    // before anything is created on disk.
    let selection = choose_model(&opts, &spec, &cfg)?;
    for n in &selection.notes {
        ui.warn(n);
    }
    let enabled = tools::enabled(&spec, opts.tools.as_deref()).map_err(RunError::Usage)?;
    let (ext_list, ext_warnings) = crate::ext::bundled(&agent)?;
    for w in &ext_warnings {
        ui.warn(w);
    }
    let model = open_model(&selection, opts.sim_script.as_deref(), signals)?;
    let ah = AgentHome::new(zot_home.clone(), &spec.name);
    let data = ah.data_dir();
    home::private_dir(&data)
        .map_err(|e| RunError::io(format!("agent data dir {}", data.display()), e))?;
    let interactive = ui.can_ask();
    let bypass = Bypass {
        yes: opts.yes,
        env: std::env::var("ZOT_AGENT_CONSENT").is_ok_and(|v| v == "1"),
    };
    let (session_path, session_notes) = session::plan(&opts.session, &ah.sessions_dir())?;
    for n in &session_notes {
        ui.warn(n);
    }
    // An agent.toml package works in the session's own file tree, a fresh
    // snapshot of its Agent Files (`<session>.d/files`, or a temp dir with
    // --no-session), unless --cwd names a workspace. Consent is given for
    // "the session's tree", so it is asked once, not at every session.
    let seeded = agent.toml.is_some() && opts.cwd.is_none();
    let perms = if seeded {
        let label = ah
            .sessions_dir()
            .join("<session>.d")
            .join(session::FILES_DIR);
        perms::expand(&spec, &label, &data, &cfg.config)?
    } else {
        perms::expand(&spec, &workspace, &data, &cfg.config)?
    };
    get_consent(&ah, &agent, &perms, &ext_list, bypass, ui)?;
    let (workspace, perms, read_only) = if seeded {
        let tree = match &session_path {
            Some(p) => session::files_dir(p),
            None => {
                let dir = deps::scratch_dir("zot-files-")?;
                let tree = dir.path().join(session::FILES_DIR);
                agent._scratch.push(dir);
                tree
            }
        };
        enter_tree(&agent, &tree, &data, &cfg.config)?
    } else {
        (workspace, perms, Vec::new())
    };

    let (system, skills, skill_warnings) = build_prompt(&agent, &workspace, &zot_home, &enabled)?;
    for w in &skill_warnings {
        ui.warn(w);
    }
    let loaded = session::open(
        session_path.as_deref(),
        &ah.sessions_dir(),
        &spec.name,
        &agent.digest,
        &workspace,
    )?;
    for w in &loaded.warnings {
        ui.warn(w);
    }
    let policy = policy_for(&perms, &workspace, &ah, &read_only, &cfg.config);
    let index = deps::start_index(&policy, &ah.home);
    // Whole tool outputs go to the session's side directory, or (no
    // session) to a journaled temp dir removed when the run ends.
    let side_dir = match loaded.session.as_ref() {
        Some(s) => Some(s.side_dir()),
        // (None when it cannot be made: outputs are then only cut.)
        None => deps::scratch_dir("zot-outputs-").ok().map(|dir| {
            let p = dir.path().to_path_buf();
            agent._scratch.push(dir);
            p
        }),
    };
    let env = ToolEnv {
        workspace: workspace.clone(),
        perms,
        policy,
        skills,
        interactive,
        side_dir,
        output_tokens: 0,
        backend: opts.backend.clone(),
        zot_home: crate::perms::canonical_prefix(&ah.home),
        agent_data: crate::perms::canonical_prefix(&data),
        session_files: seeded.then(|| workspace.clone()),
        read_only,
        refusals: tools::NAMES
            .iter()
            .filter_map(|n| tools::manifest_refusal(&spec, n).map(|why| (*n, why)))
            .collect(),
        tool_specs: enabled.iter().filter_map(|n| tools::spec(n)).collect(),
        enabled,
        cancel: Some(cancel.clone()),
        live_output: None,
        index,
    };
    let mut rt = Runtime {
        agent,
        ah,
        system,
        model,
        signals,
        config: cfg.config,
        history: loaded.history,
        session: loaded.session,
        env,
        ui,
        mode: opts.output,
        turn: 0,
        selection,
        bypass,
        cancel,
        session_usage: loaded.usage,
        last_turn: None,
        seeded,
        learned_window: None,
        anchor: None,
        ext: crate::ext::Extensions::default(),
        ext_list,
    };
    rt.main(&opts)
}

/// An agent.toml package's session file tree `tree`: seeded when new, then
/// its canonical path, the permissions expanded for it and its read-only
/// seeds.
fn enter_tree(
    agent: &LoadedAgent,
    tree: &Path,
    data: &Path,
    config: &zot_policy::config::Config,
) -> Result<(PathBuf, Permissions, Vec<PathBuf>), RunError> {
    let read_only = agent.seed(tree)?;
    let tree = tree
        .canonicalize()
        .map_err(|e| RunError::io(format!("session files {}", tree.display()), e))?;
    let perms = perms::expand(&agent.spec, &tree, data, config)?;
    Ok((tree, perms, read_only))
}

/// The system prompt and skills of a zotfile (AGENT.md, `skills/`) or an
/// agent.toml package (its instructions, `.agents/skills/` as seeded into
/// the workspace), plus the user's skills.
fn build_prompt(
    agent: &LoadedAgent,
    workspace: &Path,
    zot_home: &Path,
    tools: &[&str],
) -> Result<(String, Vec<prompt::Skill>, Vec<String>), RunError> {
    let spec = &agent.spec;
    if let Some(instructions) = &spec.instructions {
        let (skills, warnings) = prompt::discover_in(&[
            (workspace.join(".agents/skills"), "agent"),
            (zot_home.join("skills"), "user"),
        ]);
        let md = Some(instructions.clone()).filter(|s| !s.trim().is_empty());
        let system = prompt::compose(md, false, workspace, tools, &skills);
        return Ok((system, skills, warnings));
    }
    let (skills, warnings) = prompt::discover(&agent.root, zot_home);
    let system = prompt::system_prompt(
        &agent.root,
        spec.replace_system_prompt,
        workspace,
        tools,
        &skills,
    )?;
    Ok((system, skills, warnings))
}

fn get_consent(
    ah: &AgentHome,
    agent: &LoadedAgent,
    perms: &Permissions,
    exts: &[crate::ext::BundledExtension],
    bypass: Bypass,
    ui: &mut dyn Ui,
) -> Result<(), RunError> {
    let signer = agent.signature.as_ref().map(trust::signer_line);
    let extensions = crate::ext::describe(exts);
    let req = consent::Request {
        name: &agent.spec.name,
        version: agent.spec.version.as_deref(),
        digest: &agent.digest,
        signer: signer.as_deref(),
        source: agent.source.as_deref(),
        perms,
        extensions: &extensions,
    };
    let interactive = ui.can_ask();
    consent::obtain(ah, &req, bypass, interactive, &mut |text| {
        ui.confirm(text, "Allow?")
    })
    .map(|_| ())
}

struct Runtime<'u> {
    agent: LoadedAgent,
    ah: AgentHome,
    system: String,
    model: Box<dyn Model>,
    /// The model turns signals during a request into `Interrupted` itself
    /// (no `RunOptions::cancel` was given).
    signals: bool,
    config: zot_policy::config::Config,
    history: Vec<Message>,
    session: Option<Session>,
    env: ToolEnv,
    ui: &'u mut dyn Ui,
    mode: OutputMode,
    turn: u32,
    selection: Selection,
    bypass: Bypass,
    cancel: Cancel,
    session_usage: Usage,
    /// Tokens of the last finished turn.
    last_turn: Option<Usage>,
    /// An agent.toml package working in each session's own file tree.
    seeded: bool,
    /// The context window a server's refusal showed (smaller than the
    /// catalog's or config's, or the only one known).
    learned_window: Option<u64>,
    /// The reported tokens of the last response (see [`crate::context`]).
    anchor: Option<crate::context::Anchor>,
    /// The running bundled extensions (see [`crate::ext`]).
    ext: crate::ext::Extensions,
    ext_list: Vec<crate::ext::BundledExtension>,
}

impl Runtime<'_> {
    fn main(&mut self, opts: &RunOptions) -> Result<u8, RunError> {
        let r = self.main_inner(opts);
        self.ext.shutdown();
        r
    }

    fn main_inner(&mut self, opts: &RunOptions) -> Result<u8, RunError> {
        let non_interactive = opts.output != OutputMode::Interactive;
        self.start_extensions()?;
        if let Some(pre) = self.agent.spec.entry_pre.clone() {
            if let Some(cmd) = pre.strip_prefix('!') {
                let call = ToolCall {
                    id: "entry_pre".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({ "command": cmd }),
                };
                // Its output is shown as it comes when the front end can;
                // otherwise once it ends.
                self.env.live_output = self.ui.live_output();
                let live = self.env.live_output.is_some();
                let r = tools::execute(&self.env, &call, &mut *self.ui);
                self.env.live_output = None;
                if let Some(sig) = self.cancel.signal() {
                    return Err(RunError::Interrupted(sig));
                }
                if !live {
                    self.ui.command_output(r.content.trim_end());
                }
                if r.is_error {
                    if non_interactive {
                        return Err(RunError::Pre(format!(
                            "`{cmd}` failed: {}",
                            r.content.lines().next().unwrap_or("")
                        )));
                    }
                    self.ui.warn(&format!("entry.pre `{cmd}` failed"));
                }
            } else {
                self.run_turn(&pre)?;
            }
            // `pre` may have installed skills: discover them again; and
            // reload the extensions.
            self.refresh_prompt()?;
            self.start_extensions()?;
        }
        if non_interactive {
            let prompt = opts.prompt.clone().or_else(|| self.agent.spec.default_prompt.clone()).ok_or_else(|| {
                RunError::Usage("no prompt: pass one on the command line (the agent has no entry.default_prompt)".into())
            })?;
            self.run_turn(&prompt)?;
            self.poll_extensions();
            if !self.ext.submits.is_empty() {
                self.ui.warn(&format!(
                    "extensions submitted {} prompt(s); they run only in the interactive mode",
                    self.ext.submits.len()
                ));
                self.ext.submits.clear();
            }
        } else {
            self.repl(opts)?;
        }
        let session = self.session.as_ref().map(|s| s.id.clone());
        self.ui.event(&Event::Done {
            agent: self.agent.spec.name.clone(),
            model: self.selection.model.id.clone(),
            provider: self.selection.provider.name.clone(),
            session,
            exit_code: 0,
            usage: self.session_usage,
        });
        Ok(0)
    }

    /// (Re)start the bundled extensions inside the agent's sandbox. A host
    /// that cannot confine them refuses the run.
    fn start_extensions(&mut self) -> Result<(), RunError> {
        self.ext.shutdown();
        self.sync_extension_tools();
        if self.ext_list.iter().all(|e| !e.manifest.enabled) {
            return Ok(());
        }
        let policy = match &self.env.policy {
            Ok(p) => p.clone(),
            Err(e) => {
                return Err(RunError::unenforced(format!(
                    "the agent's extensions cannot run: {e}"
                )))
            }
        };
        let cx = crate::ext::Context {
            agent_root: &self.agent.root,
            agent_data: &self.env.agent_data,
            log_dir: self.ah.agent_dir().join("logs"),
            policy: &policy,
            env_read: &self.env.perms.env_read,
            backend: self.env.backend.as_deref(),
            provider: &self.selection.provider.name,
            model: &self.selection.model.id,
            workspace: &self.env.workspace,
        };
        self.ext = crate::ext::Extensions::start(&self.ext_list, &cx)?;
        self.sync_extension_tools();
        let session = self.session.as_ref().map(|s| s.id.clone());
        self.ext.event(
            "session_start",
            serde_json::json!({"agent": self.agent.spec.name, "session": session, "cwd": self.env.workspace}),
        );
        self.show_extension_messages();
        Ok(())
    }

    /// The model is offered the live extensions' tools.
    fn sync_extension_tools(&mut self) {
        self.env
            .tool_specs
            .retain(|s| tools::NAMES.contains(&s.name));
        self.env.tool_specs.extend(self.ext.tool_specs());
    }

    /// Take what the extensions sent; a stopped one's tools are withdrawn.
    fn poll_extensions(&mut self) {
        if self.ext.collect() {
            self.sync_extension_tools();
        }
        self.show_extension_messages();
    }

    /// Extension text, shown as notes and warnings (the front end
    /// sanitises them like model output).
    fn show_extension_messages(&mut self) {
        for (warn, m) in std::mem::take(&mut self.ext.messages) {
            if warn {
                self.ui.warn(&m);
            } else {
                self.ui.note(&m);
            }
        }
    }

    /// What the model must be told about extensions, once.
    fn ext_notices(&mut self) -> Option<String> {
        let n = std::mem::take(&mut self.ext.notices);
        (!n.is_empty()).then(|| {
            n.iter()
                .map(|n| format!("[zot: {n}]"))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// `/cd DIR`: re-expand `${workspace}` for the new directory; changed
    /// permissions need consent again.
    fn change_dir(&mut self, dir: &Path) -> Result<(), RunError> {
        let ws = self.env.workspace.join(dir);
        let ws = ws
            .canonicalize()
            .map_err(|e| RunError::io(format!("cd {}", ws.display()), e))?;
        if !ws.is_dir() {
            return Err(RunError::Usage(format!(
                "cd {}: not a directory",
                ws.display()
            )));
        }
        let perms = perms::expand(&self.agent.spec, &ws, &self.ah.data_dir(), &self.config)?;
        if perms != self.env.perms {
            get_consent(
                &self.ah,
                &self.agent,
                &perms,
                &self.ext_list,
                self.bypass,
                &mut *self.ui,
            )?;
        }
        self.env.policy = policy_for(&perms, &ws, &self.ah, &[], &self.config);
        self.env.index = deps::start_index(&self.env.policy, &self.ah.home);
        self.env.read_only.clear();
        self.env.perms = perms;
        self.env.workspace = ws.clone();
        self.refresh_prompt()?;
        self.start_extensions()?;
        self.ui.note(&format!("workspace is now {}", ws.display()));
        Ok(())
    }

    /// Rediscover skills and rebuild the system prompt.
    fn refresh_prompt(&mut self) -> Result<(), RunError> {
        let (system, skills, _) = build_prompt(
            &self.agent,
            &self.env.workspace,
            &self.ah.home,
            &self.env.enabled,
        )?;
        self.system = system;
        self.env.skills = skills;
        Ok(())
    }

    fn record(&mut self, m: Message) -> Result<(), RunError> {
        if let Some(s) = &mut self.session {
            s.append(&Record::Message { message: m.clone() })?;
        }
        self.history.push(m);
        Ok(())
    }

    fn record_usage(&mut self, turn: u32, usage: Usage, context: u64) -> Result<(), RunError> {
        self.session_usage += usage;
        if let Some(s) = &mut self.session {
            s.append(&Record::Usage {
                turn,
                provider: self.selection.provider.name.clone(),
                model: self.selection.model.id.clone(),
                usage,
                context_tokens: Some(context),
            })?;
        }
        Ok(())
    }

    /// Record an error result for each call of `calls` (the turn stopped
    /// before they ran), so the conversation stays consistent.
    fn abandon(&mut self, calls: &[ToolCall], why: &str) -> Result<(), RunError> {
        for c in calls {
            self.record(Message::Tool {
                tool_call_id: c.id.clone(),
                name: c.name.clone(),
                content: format!("not run: {why}"),
                is_error: true,
            })?;
        }
        Ok(())
    }

    /// Why the turn stops after its cancel handle fired: a signal that ends
    /// the run, or the user's Ctrl-C.
    fn stopped(&self) -> RunError {
        match self.cancel.signal() {
            Some(sig) => RunError::Interrupted(sig),
            None => RunError::Cancelled,
        }
    }

    /// One turn. A cancelled or interrupted one is recorded as such in the
    /// session (after `not run` results for the tool calls it left), so a
    /// resumed session is consistent.
    fn run_turn(&mut self, user: &str) -> Result<(), RunError> {
        self.cancel.reset();
        self.turn += 1;
        let turn = self.turn;
        let r = self.turn_inner(turn, user);
        if let Err(RunError::Cancelled | RunError::Interrupted(_)) = &r {
            if let Some(s) = &mut self.session {
                s.append(&Record::Cancelled { turn })?;
                s.sync()?;
            }
        }
        r
    }

    fn turn_inner(&mut self, turn: u32, user: &str) -> Result<(), RunError> {
        self.ui.event(&Event::TurnStart { turn });
        self.poll_extensions();
        let user = match self.ext_notices() {
            Some(n) => format!("{n}\n\n{user}"),
            None => user.to_string(),
        };
        self.ext.event(
            "turn_start",
            serde_json::json!({"turn": turn, "text": user}),
        );
        self.record(Message::User { content: user })?;
        let max_steps = self
            .agent
            .spec
            .max_steps
            .map(|n| n as usize)
            .unwrap_or(MAX_STEPS);
        let mut turn_usage = Usage::default();
        for _ in 0..max_steps {
            if self.cancel.is_cancelled() {
                return Err(self.stopped());
            }
            self.poll_extensions();
            // Compact first when the request would not fit; a refusal as
            // too long is compacted and sent again once.
            self.fit(turn)?;
            let mut t = self.ask(turn)?;
            if let Some(text) = self.ext.intercept_text(
                "assistant_message",
                &t.text,
                serde_json::json!({"turn": turn}),
            ) {
                t.text = text;
            }
            self.ui.event(&Event::AssistantMessage {
                turn,
                text: t.text.clone(),
                tool_calls: t.tool_calls.clone(),
            });
            self.ext.event(
                "assistant_message",
                serde_json::json!({"turn": turn, "text": t.text, "tool_calls": t.tool_calls}),
            );
            self.record(Message::Assistant {
                content: t.text.clone(),
                tool_calls: t.tool_calls.clone(),
                thinking: t.thinking.clone(),
            })?;
            self.anchor = Some(crate::context::Anchor {
                len: self.history.len(),
                tokens: t.usage.input_tokens + t.usage.output_tokens,
            });
            let context_tokens = self.context_tokens();
            self.ui.event(&Event::Usage {
                turn,
                usage: t.usage,
                context_tokens,
                context_window: self.limits().window,
            });
            self.record_usage(turn, t.usage, context_tokens)?;
            turn_usage += t.usage;
            if t.tool_calls.is_empty() {
                if let Some(s) = &mut self.session {
                    s.sync()?;
                }
                self.last_turn = Some(turn_usage);
                self.ext.event(
                    "turn_end",
                    serde_json::json!({"turn": turn, "text": t.text}),
                );
                self.ui.event(&Event::TurnEnd {
                    turn,
                    text: t.text,
                    usage: turn_usage,
                });
                return Ok(());
            }
            self.run_tools(turn, &t.tool_calls)?;
        }
        Err(RunError::model(format!(
            "turn {turn} did not finish within {max_steps} model steps"
        )))
    }
}
