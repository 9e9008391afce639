//! The terminal side of `zot run`: the [`zot_agent::Ui`] the runtime talks
//! to. Events are rendered for the output mode (see [`render`]); questions
//! and input are read from stdin.

use std::io::{BufRead, IsTerminal, Write};

use zot_agent::events::{Event, OutputMode};
use zot_agent::{Line, LineRequest, Ui};

pub mod render;

/// The `Ui` of one `zot run`.
pub struct TermUi {
    render: render::Renderer,
    stdin_tty: bool,
}

impl TermUi {
    pub fn new(mode: OutputMode) -> TermUi {
        TermUi {
            render: render::Renderer::new(mode),
            stdin_tty: std::io::stdin().is_terminal(),
        }
    }
}

/// Print `prompt` to stderr and read one line from stdin; `None` at EOF.
fn plain_read_line(prompt: &str) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

impl Ui for TermUi {
    fn event(&mut self, ev: &Event) {
        self.render.emit(ev);
    }

    fn note(&mut self, msg: &str) {
        eprintln!("zot: {msg}");
    }

    fn warn(&mut self, msg: &str) {
        eprintln!("zot: warning: {msg}");
    }

    fn error(&mut self, err: &dyn std::error::Error) {
        eprintln!("zot: {err}");
    }

    fn command_output(&mut self, text: &str) {
        eprintln!("{text}");
    }

    fn can_ask(&self) -> bool {
        self.stdin_tty
    }

    /// `text`, then `question [y/N] ` on stderr; only `y`/`yes` (any case)
    /// is a yes, EOF or anything else a no.
    fn confirm(&mut self, text: &str, question: &str) -> bool {
        if !text.is_empty() {
            eprintln!("{text}");
        }
        match plain_read_line(&format!("{question} [y/N] ")) {
            None => {
                eprintln!();
                false
            }
            Some(l) => matches!(l.trim().to_ascii_lowercase().as_str(), "y" | "yes"),
        }
    }

    fn read_line(&mut self, req: &LineRequest<'_>) -> Line {
        match plain_read_line(req.prompt) {
            Some(l) => Line::Text(l),
            None => Line::Eof,
        }
    }
}
