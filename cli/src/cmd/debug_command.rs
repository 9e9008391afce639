//! `zot debug command`: the risk gate's verdict on a shell command.

use anyhow::Context;
use zot_policy::gate::{self, GateMode, Verdict};

#[derive(clap::Args)]
pub struct Args {
    /// Bash permission mode to evaluate under
    #[arg(long, value_enum, default_value = "ask")]
    mode: ModeArg,
    /// Allowlisted programs (comma-separated; allowlist mode)
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    allow: Vec<String>,
    /// Print the verdict as JSON
    #[arg(long)]
    json: bool,
    /// The shell command string: one quoted argument (`'rm -rf ~'`), or
    /// words after `--` (needed when a word starts with `-`)
    #[arg(required = true, value_name = "COMMAND", num_args = 1..)]
    command: Vec<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    None,
    Ask,
    Allowlist,
}

impl From<ModeArg> for GateMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::None => GateMode::None,
            ModeArg::Ask => GateMode::Ask,
            ModeArg::Allowlist => GateMode::Allowlist,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let allow: Vec<String> = args
        .allow
        .iter()
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    // Several words after `--` are joined, like `sh -c "$*"` would see them.
    let command = args.command.join(" ");
    let verdict = gate::evaluate(&command, args.mode.into(), &allow);
    if args.json {
        let out = serde_json::to_string_pretty(&verdict).context("cannot serialize the verdict")?;
        println!("{out}");
    } else {
        print!("{}", render(&verdict));
    }
    Ok(verdict.decision.exit_code())
}

fn render(v: &Verdict) -> String {
    let mut out = format!("decision: {}\n", v.decision.as_str());
    if v.commands.is_empty() {
        out.push_str("commands: none\n");
    } else {
        out.push_str("commands:\n");
        for c in &v.commands {
            let argv: Vec<String> = c.argv.iter().map(|a| format!("{a:?}")).collect();
            out.push_str(&format!("  - {}  argv: [{}]", c.program, argv.join(", ")));
            if !c.via.is_empty() {
                out.push_str(&format!("  via: {}", c.via.join(" > ")));
            }
            out.push('\n');
        }
    }
    if v.reasons.is_empty() {
        out.push_str("reasons: none\n");
    } else {
        out.push_str("reasons:\n");
        for r in &v.reasons {
            out.push_str(&format!("  - {r}\n"));
        }
    }
    out
}
