//! The shell risk gate: parses a shell command string, sees through wrapper
//! programs, and decides whether it may run (`allow`), needs a human
//! (`ask`), or must not run (`deny`), with reasons.
//!
//! Pure: no syscalls, no filesystem, no environment.

use serde::{Deserialize, Serialize};

/// `permissions.bash.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// Every command is denied.
    None,
    /// Commands run unless dangerous or not understood (then: ask).
    Ask,
    /// Only listed programs, in simple pipelines, may run.
    Allowlist,
}

impl std::str::FromStr for GateMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(GateMode::None),
            "ask" => Ok(GateMode::Ask),
            "allowlist" => Ok(GateMode::Allowlist),
            other => Err(format!("unknown bash mode `{other}` (expected none, ask or allowlist)")),
        }
    }
}

/// The gate's answer. Ordered: `Allow < Ask < Deny`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    /// Exit code of `zot debug command`: 0 allow, 1 deny, 3 ask.
    pub fn exit_code(self) -> u8 {
        match self {
            Decision::Allow => 0,
            Decision::Deny => 1,
            Decision::Ask => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// One simple command that would execute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedCommand {
    /// Program name after quote removal (as written, may be a path).
    pub program: String,
    /// Full argv after quote removal, `argv[0]` is the program.
    pub argv: Vec<String>,
    /// Wrapper programs this command was reached through, outermost first.
    pub via: Vec<String>,
}

/// The gate's verdict on one command string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub commands: Vec<ParsedCommand>,
}

/// Evaluate `command` under `mode`; `allow` is the allowlist (used in
/// allowlist mode only).
pub fn evaluate(command: &str, mode: GateMode, allow: &[String]) -> Verdict {
    let _ = (command, allow);
    let _ = mode;
    Verdict {
        decision: Decision::Deny,
        reasons: vec!["risk gate not implemented yet".into()],
        commands: Vec::new(),
    }
}
