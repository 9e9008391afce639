//! How a run talks to the user. Nothing in this crate prints or reads the
//! terminal: the runtime calls a [`Ui`], which the `zot` binary implements
//! (rendering events for the output mode, the line editor, colours,
//! progress). Tests drive the runtime with a scripted one.

use std::path::Path;

use crate::events::Event;

/// What one call to [`Ui::read_line`] asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct LineRequest<'a> {
    /// The prompt shown before the input.
    pub prompt: &'a str,
    /// Text put into the editor, editable, before the user types (the
    /// agent's `entry.default_prompt`); never sent without the user's Enter.
    pub initial: Option<&'a str>,
    /// Where the lines typed at this prompt are remembered across runs (the
    /// agent's history file), or `None` for one-off answers.
    pub history: Option<&'a Path>,
}

/// The result of [`Ui::read_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line (or several, for multi-line input), without its final newline.
    Text(String),
    /// The user pressed Ctrl-C: the input was dropped.
    Interrupted,
    /// End of input (Ctrl-D, a closed stdin).
    Eof,
}

/// Work that takes a while (a download), reported as it goes; the front
/// end may draw a bar. Reports of one piece of work share `what`; the last
/// has `finished` set.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub what: &'a str,
    /// Bytes done so far.
    pub done: u64,
    /// Bytes expected, when known.
    pub total: Option<u64>,
    pub finished: bool,
}

/// The user's side of a run.
pub trait Ui {
    /// Render one run event (see [`Event`]; the output mode decides how).
    fn event(&mut self, ev: &Event);
    /// Tell the user something (not a question, not a problem).
    fn note(&mut self, msg: &str);
    /// A problem that does not stop the run.
    fn warn(&mut self, msg: &str);
    /// An error that stopped an action, not the run (an interactive turn
    /// that failed, a `/cd` to a missing directory).
    fn error(&mut self, err: &dyn std::error::Error);
    /// Output of a command zot runs for the user rather than for the model
    /// (`entry.pre`'s `!CMD`).
    fn command_output(&mut self, text: &str);
    /// Where the output of such a command goes as it comes, if this front
    /// end shows it live (called from other threads; `None`: shown once the
    /// command ends, through [`Ui::command_output`]).
    fn live_output(&mut self) -> Option<zot_supervisor::OutputSink> {
        None
    }
    /// What a slash command answers (`/help`, `/usage`, `/session tree`).
    fn show(&mut self, text: &str) {
        self.command_output(text)
    }
    /// Progress of long work (see [`Progress`]); ignored by default.
    fn progress(&mut self, p: &Progress<'_>) {
        let _ = p;
    }
    /// The agent's `entry.greeting`, when the interactive mode starts.
    fn greeting(&mut self, text: &str) {
        self.command_output(text)
    }
    /// True when a human can answer questions (stdin is a terminal).
    fn can_ask(&self) -> bool;
    /// Show `text` (may be empty), then ask `question` with a yes/no answer.
    /// Only an explicit yes is true; no answer (EOF, no terminal) is false.
    fn confirm(&mut self, text: &str, question: &str) -> bool;
    /// Read one line of input.
    fn read_line(&mut self, req: &LineRequest<'_>) -> Line;
}

/// A [`Ui`] without a user: events and messages are dropped, every
/// question is answered no and input is at its end.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullUi;

impl Ui for NullUi {
    fn event(&mut self, _: &Event) {}
    fn note(&mut self, _: &str) {}
    fn warn(&mut self, _: &str) {}
    fn error(&mut self, _: &dyn std::error::Error) {}
    fn command_output(&mut self, _: &str) {}
    fn can_ask(&self) -> bool {
        false
    }
    fn confirm(&mut self, _: &str, _: &str) -> bool {
        false
    }
    fn read_line(&mut self, _: &LineRequest<'_>) -> Line {
        Line::Eof
    }
}

pub use zot_policy::diagnostic::error_chain;
