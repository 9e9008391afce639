//! The shell risk gate: parses a shell command string with a real bash
//! grammar (tree-sitter-bash), extracts every simple command that would run,
//! sees through wrapper programs (`env`, `nice`, `timeout`, `sh -c`, `find
//! -exec`, `xargs`, ...), and decides whether it may run (`allow`), needs a
//! human (`ask`), or must not run (`deny`), with reasons.
//!
//! Pure: no filesystem, no environment; the one thing it reads is the
//! thread's CPU clock, for the parse budget ([`PARSE_TIME`]).
//! Anything the walker does not fully understand, including a command too
//! complex to parse within the bounds of [`budget`], is `ask` in ask mode
//! and `deny` in allowlist mode, never `allow`.

mod budget;
mod grammars;
mod launchers;
mod opts;
mod paths;
mod rules;
mod progs;
mod vars;
mod syntax;
mod walk;
mod word;
mod wrappers;

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};

use serde::{Deserialize, Serialize};

pub use budget::{MAX_LEXED_BYTES, MAX_PARSE_STEPS, MAX_PIPES, PARSE_TIME};

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
            other => Err(format!(
                "unknown bash mode `{other}` (expected none, ask or allowlist)"
            )),
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
    /// Program name after quote removal, as written (may be a path). When
    /// the name depends on an expansion, its source text.
    pub program: String,
    /// Full argv after quote removal; `argv[0]` is the program. Words whose
    /// value depends on an expansion keep their source text.
    pub argv: Vec<String>,
    /// Wrapper programs this command was reached through, outermost first.
    pub via: Vec<String>,
    /// What the gate knows of this program's options (see [`Rules`]).
    #[serde(default)]
    pub rules: Rules,
}

/// How much the gate knows about a program's arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rules {
    /// No rules: in allowlist mode the program is allowed by its name alone
    /// (the spec's basename semantics).
    #[default]
    None,
    /// An option grammar: in allowlist mode only known, safe options and
    /// subcommands pass.
    Grammar,
    /// A wrapper or shell whose options the gate parses to find the
    /// command it runs.
    Wrapper,
    /// Runs code or opens an interactive escape by design (interpreters,
    /// editors, pagers, `ssh`, `make`): denied in allowlist mode unless
    /// inert (`--version`, `--help`).
    RunsCode,
    /// A shell builtin or keyword.
    Builtin,
}

/// The gate's verdict on one command string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub commands: Vec<ParsedCommand>,
}

/// Inputs longer than this are not parsed.
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// What a finding does to the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The gate cannot tell what would run: ask / deny.
    Unknown,
    /// On the danger list: ask / deny.
    Danger,
    /// Outside what allowlist mode permits (only recorded in that mode).
    Restricted,
}

/// Evaluation state shared by the walker, the wrapper table and the rules.
pub(crate) struct Ctx<'a> {
    pub mode: GateMode,
    pub allow: &'a [String],
    /// Each distinct reason once, with the order it was first found in,
    /// de-duplicated in constant time.
    findings: Findings,
    pub commands: Vec<ParsedCommand>,
    /// Literal text that holds `$(` or a backtick (first one seen).
    pub code_text: Option<String>,
    /// Something that evaluates text as arithmetic or a variable name
    /// (`$((..))`, `[[ ]]`, subscripts, `let`, `printf -v`, `read`, ...),
    /// where a literal `a[$(cmd)]` runs `cmd`.
    pub evaluator: bool,
    /// A `cd` to `/`, home or a system directory was seen (relative paths
    /// after it may point there).
    pub cd_danger: Option<String>,
    /// Functions defined, with the programs their bodies call (for
    /// recursion through several functions: `a(){ b|b& }; b(){ a|a& }`).
    pub functions: Vec<(String, Vec<String>)>,
    /// The bounds every parse of this command runs under.
    pub budget: budget::Budget,
    /// `env -S` strings split so far.
    pub env_splits: usize,
    /// Above 0 while the arguments of a program are analysed as a command
    /// line (`anything rm -rf ~`): that analysis does not nest.
    pub embedded_depth: usize,
    /// Arguments parsed as command lines so far.
    pub embedded_parses: usize,
    /// The directory of the last `cd` to an absolute path (relative
    /// write targets after it are judged there: `cd /dev; ... > sda`).
    pub cwd: Option<String>,
    /// Files a downloader wrote (`curl -o f`, `wget -O f`, `curl ... > f`):
    /// running one later is running downloaded code.
    pub downloads: Vec<String>,
    /// A redirection was reported in allowlist mode (so the raw-text check
    /// of `<`/`>` does not report it a second time).
    pub redirect_seen: bool,
}

impl Ctx<'_> {
    pub fn unknown(&mut self, why: impl Into<String>) {
        self.add(Kind::Unknown, "not understood: ", why.into());
    }

    pub fn danger(&mut self, why: impl Into<String>) {
        self.add(Kind::Danger, "dangerous: ", why.into());
    }

    /// Only recorded in allowlist mode.
    pub fn restrict(&mut self, why: impl Into<String>) {
        if self.mode == GateMode::Allowlist {
            self.add(Kind::Restricted, "not allowed: ", why.into());
        }
    }

    /// Something that runs code or writes outside the command's obvious
    /// target: asks in ask mode, denied in allowlist mode.
    pub fn risky(&mut self, why: impl Into<String>) {
        match self.mode {
            GateMode::Allowlist => self.restrict(why),
            _ => self.danger(why),
        }
    }

    pub fn allowlist(&self) -> bool {
        self.mode == GateMode::Allowlist
    }

    /// Records the reason `prefix` + `why` unless it is already recorded.
    fn add(&mut self, kind: Kind, prefix: &str, why: String) {
        let mut text = why;
        text.insert_str(0, prefix);
        self.findings.add(kind, text);
    }
}

/// Distinct reasons with the order each was first found in. A reason is
/// hashed once, with std's randomly keyed hasher (crafted reasons cannot
/// be made to collide); the map keeps that hash, so growing it does not
/// hash every reason again.
#[derive(Default)]
struct Findings {
    keys: RandomState,
    map: HashMap<Reason, (usize, Kind), BuildHasherDefault<KeptHash>>,
}

impl Findings {
    fn add(&mut self, kind: Kind, text: String) {
        let reason = Reason {
            hash: self.keys.hash_one(&text),
            text,
        };
        let next = self.map.len();
        self.map.entry(reason).or_insert((next, kind));
    }

    /// The reasons of one kind, in the order they were first found.
    fn of_kind(&self, kind: Kind) -> Vec<String> {
        let mut all: Vec<(usize, &str)> = self
            .map
            .iter()
            .filter(|(_, (_, k))| *k == kind)
            .map(|(reason, (order, _))| (*order, reason.text.as_str()))
            .collect();
        all.sort_unstable_by_key(|(order, _)| *order);
        all.into_iter().map(|(_, text)| text.to_string()).collect()
    }

    /// The reasons, in the order they were first found.
    fn into_reasons(self) -> Vec<String> {
        let mut all: Vec<(usize, String)> = self
            .map
            .into_iter()
            .map(|(reason, (order, _))| (order, reason.text))
            .collect();
        all.sort_unstable_by_key(|(order, _)| *order);
        all.into_iter().map(|(_, text)| text).collect()
    }
}

/// A reason and its hash. Equal reasons have equal hashes; different
/// ones are told apart by their text.
struct Reason {
    hash: u64,
    text: String,
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.text == other.text
    }
}

impl Eq for Reason {}

impl Hash for Reason {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The hasher of [`Findings`]' map: a [`Reason`]'s hash, as it is.
#[derive(Default)]
struct KeptHash(u64);

impl Hasher for KeptHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (by `Reason`); fold anything else in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
}

/// Evaluate `command` under `mode`; `allow` is the allowlist (used in
/// allowlist mode only).
pub fn evaluate(command: &str, mode: GateMode, allow: &[String]) -> Verdict {
    evaluate_with(command, mode, allow, budget::Limits::DEFAULT)
}

/// [`evaluate`] under other parse bounds (tests).
pub(crate) fn evaluate_with(
    command: &str,
    mode: GateMode,
    allow: &[String],
    limits: budget::Limits,
) -> Verdict {
    let mut ctx = Ctx {
        mode,
        allow,
        findings: Findings::default(),
        functions: Vec::new(),
        commands: Vec::new(),
        code_text: None,
        cd_danger: None,
        evaluator: false,
        budget: budget::Budget::new(limits),
        env_splits: 0,
        embedded_depth: 0,
        embedded_parses: 0,
        cwd: None,
        downloads: Vec::new(),
        redirect_seen: false,
    };
    let empty = command.trim().is_empty();
    if command.len() > MAX_INPUT_BYTES {
        ctx.unknown(format!("command is longer than {MAX_INPUT_BYTES} bytes"));
    } else if !empty {
        walk::check_text(&mut ctx, command);
        walk::parse_and_walk(&mut ctx, command, &[], 0);
        walk::check_text_after(&mut ctx, command);
        walk::check_recursion(&mut ctx);
        if ctx.evaluator {
            if let Some(text) = ctx.code_text.take() {
                ctx.unknown(format!(
                    "the text `{text}` runs a command if the shell evaluates it (arithmetic, array subscripts, variable names)"
                ));
            }
        }
    }
    let Ctx {
        findings, commands, ..
    } = ctx;
    let mut reasons: Vec<String> = Vec::new();
    let decision = match mode {
        GateMode::None => {
            reasons.push("bash is disabled (mode none)".into());
            Decision::Deny
        }
        _ if empty => {
            reasons.push("empty command".into());
            Decision::Deny
        }
        GateMode::Ask => {
            reasons.extend(findings.into_reasons());
            if reasons.is_empty() {
                Decision::Allow
            } else {
                Decision::Ask
            }
        }
        GateMode::Allowlist => {
            if allow.is_empty() {
                reasons.push("the allowlist is empty".into());
            }
            reasons.extend(findings.into_reasons());
            if commands.is_empty() && reasons.is_empty() {
                reasons.push("no command to run".into());
            }
            if reasons.is_empty() {
                Decision::Allow
            } else {
                Decision::Deny
            }
        }
    };
    Verdict {
        decision,
        reasons,
        commands,
    }
}
