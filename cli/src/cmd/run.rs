//! `zot run REF [PROMPT...]`: run an agent (see docs/run.md and
//! docs/providers.md).

use std::path::PathBuf;

use anyhow::Context;
use zot_agent::{OutputMode, RunOptions, SessionChoice};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("output").args(["print", "stream", "json"])))]
#[command(group(clap::ArgGroup::new("sess").args(["continue_", "resume", "session", "no_session"])))]
pub struct Args {
    /// The agent: a directory, a .zot file, a local or installed name,
    /// REGISTRY/REPO[:TAG|@DIGEST], owner/repo[/path] or a GitHub URL
    /// (default: the agent set by `zot use`)
    pub reference: Option<String>,
    /// The prompt (words are joined with spaces); default: the agent's
    /// entry.default_prompt
    pub prompt: Vec<String>,
    /// Consent to the agent's permissions without asking (also
    /// ZOT_AGENT_CONSENT=1)
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Print only the final answer
    #[arg(short = 'p', long)]
    pub print: bool,
    /// Stream the answer to stdout, tool activity to stderr
    #[arg(long)]
    pub stream: bool,
    /// Print NDJSON events (schema in docs/run.md)
    #[arg(long)]
    pub json: bool,
    /// Model id (default: the configured default, else the agent's
    /// preference, else a compatible available model; `zot models` lists them)
    #[arg(long)]
    pub model: Option<String>,
    /// Provider: sim, openai, anthropic, or one from the config file
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Reasoning effort (OpenAI reasoning_effort, Anthropic extended
    /// thinking); the model must support reasoning
    #[arg(long, value_name = "EFFORT", value_parser = ["low", "medium", "high"])]
    pub reasoning: Option<String>,
    /// Offer only these tools (comma-separated; can only narrow what the
    /// agent allows): read, write, edit, glob, grep, bash, skill
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Replay this JSON script with the sim model
    #[arg(long, value_name = "FILE")]
    pub sim_script: Option<PathBuf>,
    /// Workspace directory (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Continue the agent's most recent session
    #[arg(short = 'c', long = "continue")]
    pub continue_: bool,
    /// Resume the agent's session with this id
    #[arg(short = 'r', long, value_name = "ID")]
    pub resume: Option<String>,
    /// Use this session file
    #[arg(long, value_name = "PATH")]
    pub session: Option<PathBuf>,
    /// Do not record a session
    #[arg(long)]
    pub no_session: bool,
    /// Sandbox backend for bash: auto, bwrap, native, landlock
    #[arg(long, value_name = "B", value_parser = parse_backend)]
    pub backend: Option<String>,
    /// Refuse the agent unless it is a .zot archive with a valid signature
    /// (ARCHIVE.minisig) by a key in $ZOT_HOME/trusted-keys/ (also
    /// `[trust] require_signature = true` in the config file)
    #[arg(long)]
    pub require_signature: bool,
}

fn parse_backend(s: &str) -> Result<String, String> {
    s.parse::<zot_supervisor::BackendChoice>()
        .map(|_| s.to_string())
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let output = if a.print {
        OutputMode::Print
    } else if a.stream {
        OutputMode::Stream
    } else if a.json {
        OutputMode::Json
    } else {
        OutputMode::Interactive
    };
    let session = if a.no_session {
        SessionChoice::Off
    } else if a.continue_ {
        SessionChoice::Continue
    } else if let Some(id) = a.resume {
        SessionChoice::Resume(id)
    } else if let Some(p) = a.session {
        SessionChoice::Path(p)
    } else {
        SessionChoice::New
    };
    let reference = match a.reference {
        Some(r) => r,
        None => {
            let home = zot_agent::home::zot_home()?;
            match zot_agent::store::default_name(&home)? {
                Some(n) => n,
                None => {
                    super::print_error(&anyhow::anyhow!(
                        "no agent given and no default agent (zot use NAME sets one)"
                    ));
                    return Ok(super::USAGE);
                }
            }
        }
    };
    let opts = RunOptions {
        reference,
        prompt: if a.prompt.is_empty() {
            None
        } else {
            Some(a.prompt.join(" "))
        },
        yes: a.yes,
        model: a.model,
        provider: a.provider,
        reasoning: a
            .reasoning
            .as_deref()
            .and_then(zot_agent::providers::ReasoningEffort::parse),
        tools: a.tools.map(|t| {
            t.into_iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        }),
        sim_script: a.sim_script,
        output,
        cwd: a.cwd,
        session,
        backend: a.backend,
        cancel: None,
        require_signature: a.require_signature,
    };
    let mut opts = opts;
    let cancel = zot_agent::Cancel::new().context("cancellation pipe")?;
    opts.cancel = Some(cancel.clone());
    let mut ui = if output == OutputMode::Interactive {
        // Ctrl-C cancels the running turn, not zot.
        crate::ui::TermUi::interactive(&cancel)
    } else {
        // SIGINT/SIGTERM/SIGHUP at any point (a download, the model
        // request, a command in the sandbox, which gets the signal) stop
        // the run; zot removes what it created and exits 128+N.
        zot_process::signals::interrupt(&cancel).forever();
        crate::ui::TermUi::new(output)
    };
    match zot_agent::run(opts, &mut ui) {
        Ok(code) => Ok(code),
        Err(e) => {
            let code = e.exit_code();
            super::print_error(&anyhow::Error::from(e));
            Ok(code)
        }
    }
}
