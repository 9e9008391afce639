//! One `zot run`: checks in the spec's order, then the conversation loop in
//! the chosen output mode.

use std::path::{Path, PathBuf};

use crate::consent::{self, Bypass};
use crate::deps::{self, AgentPolicyInput, AgentSpec, LoadedAgent, SandboxPolicy};
pub use crate::events::OutputMode;
use crate::events::{Event, Renderer};
use crate::home::{self, AgentHome};
use crate::message::{Message, ToolCall};
use crate::models;
use crate::perms::{self, Permissions};
pub use crate::session::SessionChoice;
use crate::session::{self, Record, Session};
use crate::sim::{Model, Simulator};
use crate::tools::{self, ToolEnv};
use crate::trust;
use crate::{prompt, reference, requirements, term, RunError, ZOT_VERSION};

/// Model steps (responses) allowed in one turn before it is cut off.
pub const MAX_STEPS: usize = 50;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub reference: String,
    pub prompt: Option<String>,
    pub yes: bool,
    pub model: Option<String>,
    pub sim_script: Option<PathBuf>,
    pub output: OutputMode,
    /// The workspace (default: the current directory).
    pub cwd: Option<PathBuf>,
    pub session: SessionChoice,
    /// Pin a sandbox backend for bash (`auto` when `None`).
    pub backend: Option<String>,
    /// Refuse an agent without a valid signature by a trusted key
    /// (`--require-signature`; the `require_signature` setting also turns
    /// this on).
    pub require_signature: bool,
}

/// Refuse permissions the runtime cannot enforce yet.
pub fn check_unenforced(spec: &AgentSpec) -> Result<(), RunError> {
    if !spec.net_allow.is_empty() {
        return Err(RunError::Unenforced(format!(
            "permissions.net.allow lists {}: network permissions are not enforced yet, so zot refuses to run this agent (use an empty list)",
            spec.net_allow.join(", ")
        )));
    }
    if !spec.env_read.is_empty() {
        return Err(RunError::Unenforced(format!(
            "permissions.env.read lists {}: environment permissions are not enforced yet, so zot refuses to run this agent (use an empty list)",
            spec.env_read.join(", ")
        )));
    }
    Ok(())
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
) -> Result<SandboxPolicy, String> {
    compile(perms, workspace, ah, read_only).map_err(|e| e.to_string())
}

fn compile(
    perms: &Permissions,
    workspace: &Path,
    ah: &AgentHome,
    read_only: &[PathBuf],
) -> Result<SandboxPolicy, RunError> {
    deps::agent_policy(&AgentPolicyInput {
        workspace: workspace.to_path_buf(),
        read: perms.fs_read.clone(),
        write: perms.fs_write.clone(),
        zot_home: ah.home.clone(),
        agent: ah.name.clone(),
        read_only: read_only.to_vec(),
    })
}

/// Load `reference` and compile the sandbox policy its bash would run under
/// in `workspace` (for `zot debug sandbox --explain`). Creates nothing.
pub fn compile_policy(reference: &str, workspace: &Path) -> Result<SandboxPolicy, RunError> {
    let here = std::env::current_dir().map_err(|e| RunError::io("current directory", e))?;
    let agent = reference::resolve(reference, &here)?;
    check_unenforced(&agent.spec)?;
    let ws = workspace
        .canonicalize()
        .map_err(|e| RunError::io(format!("workspace {}", workspace.display()), e))?;
    let ah = AgentHome::new(home::zot_home()?, &agent.spec.name);
    let perms = perms::expand(&agent.spec, &ws, &ah.data_dir())?;
    compile(&perms, &ws, &ah, &[])
}

fn warn(msg: &str) {
    eprintln!("zot: warning: {msg}");
}

/// Run an agent. Returns the exit code.
pub fn run(opts: RunOptions) -> Result<u8, RunError> {
    let json = opts.output == OutputMode::Json;
    let r = run_inner(opts);
    if let (true, Err(e)) = (json, &r) {
        let mut chain = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            chain.push_str(&format!(": {s}"));
            src = s.source();
        }
        Renderer::new(OutputMode::Json).emit(&Event::Error { message: chain });
    }
    r
}

fn run_inner(opts: RunOptions) -> Result<u8, RunError> {
    let here = std::env::current_dir().map_err(|e| RunError::io("current directory", e))?;
    let workspace = workspace_of(opts.cwd.as_deref())?;
    let zot_home = home::zot_home()?;
    let required = opts.require_signature || trust::require_signature_setting(&zot_home)?;
    let keys = trust::trusted_keys(&zot_home)?;
    let mut sig_warnings = Vec::new();
    let agent = reference::resolve_checked(
        &opts.reference,
        &here,
        &reference::Signatures {
            keys: &keys,
            required,
        },
        &mut sig_warnings,
    )?;
    let spec = agent.spec.clone();
    for w in sig_warnings.iter().chain(&agent.warnings) {
        warn(w);
    }
    if let Some(v) = &agent.signature {
        eprintln!("zot: signature verified: {}", trust::signer_line(v));
    }
    check_unenforced(&spec)?;
    requirements::check(&spec, ZOT_VERSION)?;
    let ah = AgentHome::new(zot_home.clone(), &spec.name);
    let data = ah.data_dir();
    home::private_dir(&data)
        .map_err(|e| RunError::io(format!("agent data dir {}", data.display()), e))?;
    let interactive = term::stdin_is_tty();
    let bypass = Bypass {
        yes: opts.yes,
        env: std::env::var("ZOT_AGENT_CONSENT").is_ok_and(|v| v == "1"),
    };
    // An agent.toml package works in its own seeded file tree unless
    // --cwd names a workspace.
    let workspace = match (&agent.toml, &opts.cwd) {
        (Some(_), None) => data
            .canonicalize()
            .map_err(|e| RunError::io(format!("agent data dir {}", data.display()), e))?
            .join("files"),
        _ => workspace,
    };
    let perms = perms::expand(&spec, &workspace, &data)?;
    get_consent(&ah, &agent, &perms, bypass, interactive)?;
    let read_only = if opts.cwd.is_none() {
        agent.seed(&workspace)?
    } else {
        Vec::new()
    };

    if opts.sim_script.is_some() && opts.model.as_deref().is_some_and(|m| m != models::SIM) {
        return Err(RunError::Usage("--sim-script needs the sim model".into()));
    }
    let configured = std::env::var("ZOT_MODEL").ok().filter(|m| !m.is_empty());
    let explicit = opts
        .model
        .clone()
        .or_else(|| opts.sim_script.as_ref().map(|_| models::SIM.to_string()));
    let model_info = models::select(explicit.as_deref(), configured.as_deref(), &spec)?;
    let mut model: Box<dyn Model> = match &opts.sim_script {
        Some(p) => Box::new(Simulator::from_script(p)?),
        None => Box::new(Simulator::rules()),
    };

    let (system, skills, skill_warnings) = build_prompt(&agent, &workspace, &zot_home)?;
    for w in &skill_warnings {
        warn(w);
    }
    let loaded = session::open(
        &opts.session,
        &ah.sessions_dir(),
        &spec.name,
        &agent.digest,
        &workspace,
    )?;
    for w in &loaded.warnings {
        warn(w);
    }
    let policy = policy_for(&perms, &workspace, &ah, &read_only);
    let side_dir = loaded.session.as_ref().map(Session::side_dir);
    let env = ToolEnv {
        workspace: workspace.clone(),
        perms,
        policy,
        skills,
        interactive,
        side_dir,
        backend: opts.backend.clone(),
        zot_home: crate::perms::canonical_prefix(&ah.home),
        agent_data: crate::perms::canonical_prefix(&data),
        read_only,
    };
    let mut rt = Runtime {
        agent,
        ah,
        system,
        model: model.as_mut(),
        history: loaded.history,
        session: loaded.session,
        env,
        out: Renderer::new(opts.output),
        turn: 0,
        model_id: model_info.id,
        bypass,
    };
    rt.main(&opts)
}

/// The system prompt and skills of a zotfile (AGENT.md, `skills/`) or an
/// agent.toml package (its instructions, `.agents/skills/` as seeded into
/// the workspace), plus the user's skills.
fn build_prompt(
    agent: &LoadedAgent,
    workspace: &Path,
    zot_home: &Path,
) -> Result<(String, Vec<prompt::Skill>, Vec<String>), RunError> {
    let spec = &agent.spec;
    if let Some(instructions) = &spec.instructions {
        let (skills, warnings) = prompt::discover_in(&[
            (workspace.join(".agents/skills"), "agent"),
            (zot_home.join("skills"), "user"),
        ]);
        let md = Some(instructions.clone()).filter(|s| !s.trim().is_empty());
        let system = prompt::compose(md, false, workspace, tools::NAMES, &skills);
        return Ok((system, skills, warnings));
    }
    let (skills, warnings) = prompt::discover(&agent.root, zot_home);
    let system = prompt::system_prompt(
        &agent.root,
        spec.replace_system_prompt,
        workspace,
        tools::NAMES,
        &skills,
    )?;
    Ok((system, skills, warnings))
}

fn get_consent(
    ah: &AgentHome,
    agent: &LoadedAgent,
    perms: &Permissions,
    bypass: Bypass,
    interactive: bool,
) -> Result<(), RunError> {
    let signer = agent.signature.as_ref().map(trust::signer_line);
    let req = consent::Request {
        name: &agent.spec.name,
        version: agent.spec.version.as_deref(),
        digest: &agent.digest,
        signer: signer.as_deref(),
        perms,
    };
    consent::obtain(ah, &req, bypass, interactive, &mut |text| {
        eprintln!("{text}");
        term::ask_yes_no("Allow?")
    })
    .map(|_| ())
}

struct Runtime<'m> {
    agent: LoadedAgent,
    ah: AgentHome,
    system: String,
    model: &'m mut dyn Model,
    history: Vec<Message>,
    session: Option<Session>,
    env: ToolEnv,
    out: Renderer,
    turn: u32,
    model_id: &'static str,
    bypass: Bypass,
}

impl Runtime<'_> {
    fn main(&mut self, opts: &RunOptions) -> Result<u8, RunError> {
        let non_interactive = opts.output != OutputMode::Interactive;
        if let Some(pre) = self.agent.spec.entry_pre.clone() {
            if let Some(cmd) = pre.strip_prefix('!') {
                let call = ToolCall {
                    id: "entry_pre".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({ "command": cmd }),
                };
                let r = tools::execute(&self.env, &call);
                eprintln!("{}", r.content.trim_end());
                if r.is_error {
                    if non_interactive {
                        return Err(RunError::Pre(format!(
                            "`{cmd}` failed: {}",
                            r.content.lines().next().unwrap_or("")
                        )));
                    }
                    warn(&format!("entry.pre `{cmd}` failed"));
                }
            } else {
                self.run_turn(&pre)?;
            }
            // `pre` may have installed skills: discover them again.
            self.refresh_prompt()?;
        }
        if non_interactive {
            let prompt = opts.prompt.clone().or_else(|| self.agent.spec.default_prompt.clone()).ok_or_else(|| {
                RunError::Usage("no prompt: pass one on the command line (the agent has no entry.default_prompt)".into())
            })?;
            self.run_turn(&prompt)?;
        } else {
            if let Some(p) = &opts.prompt {
                self.run_turn(p)?;
            }
            self.repl(opts.prompt.is_none())?;
        }
        let session = self.session.as_ref().map(|s| s.id.clone());
        self.out.emit(&Event::Done {
            agent: self.agent.spec.name.clone(),
            model: self.model_id.into(),
            session,
            exit_code: 0,
        });
        Ok(0)
    }

    fn repl(&mut self, offer_default: bool) -> Result<(), RunError> {
        let mut default = if offer_default {
            self.agent.spec.default_prompt.clone()
        } else {
            None
        };
        eprintln!(
            "zot: agent {} (model {}); /cd DIR changes the workspace, /exit quits",
            self.agent.spec.name, self.model_id
        );
        loop {
            let prompt = match &default {
                Some(d) => format!("[Enter sends: {d}]\n> "),
                None => "> ".to_string(),
            };
            let Some(line) = term::read_line(&prompt) else {
                break;
            };
            let line = match (line.trim().is_empty(), default.take()) {
                (true, Some(d)) => d,
                (true, None) => continue,
                (false, _) => line,
            };
            let t = line.trim();
            if t == "/exit" || t == "/quit" {
                break;
            }
            if let Some(dir) = t.strip_prefix("/cd ") {
                if let Err(e) = self.change_dir(Path::new(dir.trim())) {
                    eprintln!("zot: {e}");
                }
                continue;
            }
            if let Err(e) = self.run_turn(&line) {
                eprintln!("zot: {e}");
            }
        }
        Ok(())
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
        let perms = perms::expand(&self.agent.spec, &ws, &self.ah.data_dir())?;
        if perms != self.env.perms {
            get_consent(
                &self.ah,
                &self.agent,
                &perms,
                self.bypass,
                self.env.interactive,
            )?;
        }
        self.env.policy = policy_for(&perms, &ws, &self.ah, &[]);
        self.env.read_only.clear();
        self.env.perms = perms;
        self.env.workspace = ws.clone();
        self.refresh_prompt()?;
        eprintln!("zot: workspace is now {}", ws.display());
        Ok(())
    }

    /// Rediscover skills and rebuild the system prompt.
    fn refresh_prompt(&mut self) -> Result<(), RunError> {
        let (system, skills, _) = build_prompt(&self.agent, &self.env.workspace, &self.ah.home)?;
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

    fn run_turn(&mut self, user: &str) -> Result<(), RunError> {
        self.turn += 1;
        let turn = self.turn;
        self.out.emit(&Event::TurnStart { turn });
        self.record(Message::User {
            content: user.to_string(),
        })?;
        let max_steps = self
            .agent
            .spec
            .max_steps
            .map(|n| n as usize)
            .unwrap_or(MAX_STEPS);
        for _ in 0..max_steps {
            let t = self.model.respond(&self.system, &self.history)?;
            if !t.text.is_empty() {
                self.out.emit(&Event::TextDelta {
                    turn,
                    delta: t.text.clone(),
                });
            }
            self.out.emit(&Event::AssistantMessage {
                turn,
                text: t.text.clone(),
                tool_calls: t.tool_calls.clone(),
            });
            self.out.emit(&Event::Usage {
                turn,
                usage: t.usage,
            });
            self.record(Message::Assistant {
                content: t.text.clone(),
                tool_calls: t.tool_calls.clone(),
            })?;
            if t.tool_calls.is_empty() {
                self.out.emit(&Event::TurnEnd { turn, text: t.text });
                return Ok(());
            }
            for call in t.tool_calls {
                self.out.emit(&Event::ToolCall {
                    turn,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                let r = tools::execute(&self.env, &call);
                self.out.emit(&Event::ToolResult {
                    turn,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    is_error: r.is_error,
                    content: r.content.clone(),
                    exit_code: r.exit_code,
                    duration_ms: r.duration_ms,
                    full_output: r.full_output.as_ref().map(|p| p.display().to_string()),
                });
                self.record(Message::Tool {
                    tool_call_id: call.id,
                    name: call.name,
                    content: r.content,
                    is_error: r.is_error,
                })?;
            }
        }
        Err(RunError::Model(format!(
            "turn {turn} did not finish within {max_steps} model steps"
        )))
    }
}
