//! The line editor of the interactive mode (rustyline): history, multi-line
//! input (Alt-Enter, or a line ending in `\`), completion and hints for the
//! slash commands, a coloured prompt. Used only when the terminal can be
//! drawn on: stdin a terminal, and stdout the same kind of terminal (or
//! `/dev/tty` being the terminal stdin is); otherwise input is read plainly.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Behavior, Cmd, Config, Editor, EventHandler, KeyCode, KeyEvent, Modifiers};
use zot_agent::commands::COMMANDS;
use zot_agent::Line;

/// Lines kept in a history file.
const HISTORY_SIZE: usize = 1000;

/// Which terminal the editor draws on, if any.
pub fn usable() -> Option<Behavior> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    if std::io::stdout().is_terminal() {
        return Some(Behavior::Stdio);
    }
    // stdout is redirected: draw on /dev/tty, but only when it is the
    // terminal stdin reads from (not some other controlling terminal).
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let a = nix::sys::stat::fstat(stdin.as_fd()).ok()?;
    let b = nix::sys::stat::fstat(tty.as_fd()).ok()?;
    (a.st_rdev == b.st_rdev).then_some(Behavior::PreferTerm)
}

struct Helper {
    color: bool,
}

impl rustyline::Helper for Helper {}

/// The command names a line starting with `/` may complete to.
fn candidates(prefix: &str) -> impl Iterator<Item = &'static str> + '_ {
    COMMANDS
        .iter()
        .map(|c| c.0)
        .chain(["/quit"])
        .filter(move |n| n.starts_with(prefix))
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        if !head.starts_with('/') || head.contains(char::is_whitespace) {
            if let Some(rest) = head.strip_prefix("/session ") {
                let v = ["fork", "tree"]
                    .iter()
                    .filter(|w| w.starts_with(rest.trim_start()))
                    .map(|w| Pair {
                        display: w.to_string(),
                        replacement: format!("{w} "),
                    })
                    .collect();
                return Ok((pos - rest.trim_start().len(), v));
            }
            return Ok((pos, Vec::new()));
        }
        let v = candidates(head)
            .map(|n| Pair {
                display: n.to_string(),
                replacement: format!("{n} "),
            })
            .collect();
        Ok((0, v))
    }
}

impl Hinter for Helper {
    type Hint = String;

    /// The rest of the only command a `/prefix` at the end of the line
    /// can be.
    fn hint(&self, line: &str, pos: usize, _: &rustyline::Context<'_>) -> Option<String> {
        if pos != line.len() || line.len() < 2 || !line.starts_with('/') || line.contains(' ') {
            return None;
        }
        let mut c = candidates(line);
        match (c.next(), c.next()) {
            (Some(one), None) if one.len() > line.len() => Some(one[line.len()..].to_string()),
            _ => None,
        }
    }
}

impl Highlighter for Helper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _: bool) -> Cow<'b, str> {
        if !self.color {
            return Cow::Borrowed(prompt);
        }
        let s = super::style::PROMPT;
        Cow::Owned(format!("{}{prompt}{}", s.render(), s.render_reset()))
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if !self.color {
            return Cow::Borrowed(hint);
        }
        let s = super::style::DIM;
        Cow::Owned(format!("{}{hint}{}", s.render(), s.render_reset()))
    }

    fn highlight_char(&self, _: &str, _: usize, _: CmdKind) -> bool {
        false
    }
}

impl Validator for Helper {
    /// A line ending in `\` continues on the next one.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

/// The editor, with the history file it was loaded from.
pub struct LineEditor {
    ed: Editor<Helper, DefaultHistory>,
    history: Option<PathBuf>,
}

impl LineEditor {
    pub fn new(behavior: Behavior, color: bool) -> Option<LineEditor> {
        let config = Config::builder()
            .behavior(behavior)
            .max_history_size(HISTORY_SIZE)
            .ok()?
            .history_ignore_dups(true)
            .ok()?
            .history_ignore_space(true)
            .auto_add_history(false)
            .color_mode(if color {
                rustyline::ColorMode::Forced
            } else {
                rustyline::ColorMode::Disabled
            })
            .build();
        let mut ed = Editor::with_config(config).ok()?;
        ed.set_helper(Some(Helper { color }));
        ed.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        Some(LineEditor { ed, history: None })
    }

    /// Use the history in `path` (loaded once; a missing file is empty).
    fn use_history(&mut self, path: Option<&Path>) {
        if path.is_none() || self.history.as_deref() == path {
            return;
        }
        let path = path.expect("checked");
        let _ = self.ed.history_mut().clear();
        if path.exists() {
            let _ = self.ed.load_history(path);
        }
        self.history = Some(path.to_path_buf());
    }

    /// Read one line. `history`: where accepted lines are remembered (the
    /// file is private, 0600); `None` reads without recording it.
    pub fn read(&mut self, prompt: &str, initial: Option<&str>, history: Option<&Path>) -> Line {
        self.use_history(history);
        let r = match initial {
            Some(init) => self.ed.readline_with_initial(prompt, (init, "")),
            None => self.ed.readline(prompt),
        };
        match r {
            Ok(text) => {
                // A `\` before a line break only asked for the break.
                let text = text.replace("\\\n", "\n");
                if let (Some(path), false) = (history, text.trim().is_empty()) {
                    if matches!(self.ed.add_history_entry(text.as_str()), Ok(true)) {
                        save(&mut self.ed, path);
                    }
                }
                Line::Text(text)
            }
            Err(ReadlineError::Interrupted) => Line::Interrupted,
            Err(_) => Line::Eof,
        }
    }
}

/// Append the newest entry to the history file, created private.
fn save(ed: &mut Editor<Helper, DefaultHistory>, path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    if !path.exists() {
        if let Some(dir) = path.parent() {
            let _ = zot_agent::home::private_dir(dir);
        }
        let _ = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(path);
    }
    let _ = ed.append_history(path);
}
