//! The terminal side of `zot run`: the [`zot_agent::Ui`] the runtime talks
//! to. Events are rendered for the output mode (see [`render`]); in the
//! interactive mode input goes through the line editor ([`editor`]) when
//! the terminal allows it, and Ctrl-C cancels the running turn
//! ([`signals`]). Everything zot itself says goes to stderr; stdout carries
//! only the model's answers (or `--json` events).

use std::io::{BufRead, IsTerminal, Write};

use zot_agent::events::{Event, OutputMode};
use zot_agent::ui::Progress;
use zot_agent::{Cancel, Line, LineRequest, Ui};

pub mod editor;
pub mod progress;
pub mod render;
pub mod style;

use style::paint;
use zot_process::signals::{self, PromptState};

/// The `Ui` of one `zot run`.
pub struct TermUi {
    render: render::Renderer,
    stdin_tty: bool,
    /// The interactive mode's cancel handle (Ctrl-C during a turn).
    cancel: Option<Cancel>,
    editor: Option<editor::LineEditor>,
    /// The interactive prompt's signal route (while the `Ui` lives).
    route: Option<signals::Route>,
    /// The bar of the download in progress.
    bar: Option<progress::Bytes>,
}

impl TermUi {
    /// The `Ui` of a `--print`, `--stream` or `--json` run.
    pub fn new(mode: OutputMode) -> TermUi {
        TermUi {
            render: render::Renderer::new(mode),
            stdin_tty: std::io::stdin().is_terminal(),
            cancel: None,
            editor: None,
            route: None,
            bar: None,
        }
    }

    /// The `Ui` of the interactive mode: the line editor when the terminal
    /// allows it, and signal handling that turns Ctrl-C during a turn into
    /// `cancel`.
    pub fn interactive(cancel: &Cancel) -> TermUi {
        let mut ui = TermUi::new(OutputMode::Interactive);
        let color = ui.render.err_color();
        ui.editor = editor::usable().and_then(|b| editor::LineEditor::new(b, color));
        ui.cancel = Some(cancel.clone());
        // After the editor: rustyline sets a SIGINT handler of its own when
        // it is created, and ours must be the one in place.
        ui.route = Some(signals::prompt(cancel));
        ui
    }

    fn editor(&mut self) -> Option<&mut editor::LineEditor> {
        self.editor.as_mut()
    }

    fn color(&self) -> bool {
        self.render.err_color()
    }

    /// Before zot writes to or reads from the terminal.
    fn settle(&mut self) {
        self.render.fresh_line();
    }
}

impl Drop for TermUi {
    fn drop(&mut self) {
        self.render.quiet();
        if self.cancel.is_some() {
            signals::restore_terminal();
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

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

impl Ui for TermUi {
    fn event(&mut self, ev: &Event) {
        if let (Event::TurnStart { .. }, Some(_)) = (ev, &self.cancel) {
            // From here Ctrl-C cancels the turn.
            signals::set_prompt_state(PromptState::Busy);
        }
        self.render.emit(ev);
    }

    fn note(&mut self, msg: &str) {
        self.settle();
        eprintln!(
            "{}",
            paint(
                self.color(),
                style::DIM,
                &format!("zot: {}", style::sanitize(msg))
            )
        );
    }

    fn warn(&mut self, msg: &str) {
        self.settle();
        let c = self.color();
        // Extension text comes this way too: sanitised like model output.
        eprintln!(
            "{} {}",
            paint(c, style::WARN, "zot: warning:"),
            style::sanitize(msg)
        );
    }

    fn error(&mut self, err: &dyn std::error::Error) {
        self.settle();
        let c = self.color();
        let msg = zot_agent::ui::error_chain(err);
        let msg = if msg == "cancelled" {
            "cancelled (the prompt is back; the session records where the turn stopped)".into()
        } else {
            msg
        };
        eprintln!("{} {msg}", paint(c, style::ERROR, "zot:"));
    }

    fn command_output(&mut self, text: &str) {
        self.settle();
        eprintln!("{text}");
    }

    /// A slash command's answer (it may quote an extension's command
    /// descriptions): sanitised like model output.
    fn show(&mut self, text: &str) {
        self.settle();
        eprintln!("{}", style::sanitize(text));
    }

    /// `--json`: `command_output` events on stdout; otherwise the bytes,
    /// as they are, on stderr.
    fn live_output(&mut self) -> Option<zot_supervisor::OutputSink> {
        self.settle();
        let json = self.render.mode() == OutputMode::Json;
        Some(zot_supervisor::OutputSink(std::sync::Arc::new(
            move |stream, bytes: &[u8]| {
                if json {
                    let ev = Event::CommandOutput {
                        stream: match stream {
                            zot_supervisor::OutStream::Stdout => "stdout",
                            zot_supervisor::OutStream::Stderr => "stderr",
                        },
                        text: String::from_utf8_lossy(bytes).into_owned(),
                    };
                    let mut out = std::io::stdout().lock();
                    let _ = serde_json::to_writer(&mut out, &ev);
                    let _ = out.write_all(b"\n");
                    let _ = out.flush();
                } else {
                    let _ = std::io::stderr().lock().write_all(bytes);
                }
            },
        )))
    }

    fn progress(&mut self, p: &Progress<'_>) {
        self.render.quiet();
        progress::Bytes::follow(&mut self.bar, p);
    }

    fn greeting(&mut self, text: &str) {
        self.settle();
        let c = self.color();
        eprintln!("{}", paint(c, style::GREETING, &style::sanitize(text)));
    }

    fn can_ask(&self) -> bool {
        self.stdin_tty
    }

    /// `text`, then `question [y/N] `; only `y`/`yes` (any case) is a yes,
    /// EOF or anything else a no. Ctrl-C in the line editor is a no, and
    /// during a turn it cancels the turn too.
    fn confirm(&mut self, text: &str, question: &str) -> bool {
        self.settle();
        if !text.is_empty() {
            // It may quote the agent's own text (a command, an extension's
            // description): sanitised like model output.
            eprintln!("{}", style::sanitize(text));
        }
        let q = format!("{question} [y/N] ");
        if let Some(ed) = self.editor() {
            let before = signals::prompt_state();
            signals::set_prompt_state(PromptState::Editing);
            let r = ed.read(&q, None, None);
            signals::set_prompt_state(before);
            return match r {
                Line::Text(a) => is_yes(&a),
                Line::Interrupted => {
                    if let Some(c) = &self.cancel {
                        c.cancel();
                    }
                    false
                }
                Line::Eof => false,
            };
        }
        match plain_read_line(&q) {
            None => {
                eprintln!();
                false
            }
            Some(l) => is_yes(&l),
        }
    }

    fn read_line(&mut self, req: &LineRequest<'_>) -> Line {
        self.settle();
        let line = if let Some(ed) = self.editor() {
            signals::set_prompt_state(PromptState::Editing);
            ed.read(req.prompt, req.initial, req.history)
        } else {
            signals::set_prompt_state(PromptState::Plain);
            // No editor: the default can only be offered, Enter sends it.
            let prompt = match req.initial {
                Some(d) => format!("[Enter sends: {d}]\n{}", req.prompt),
                None => req.prompt.to_string(),
            };
            match plain_read_line(&prompt) {
                Some(l) if l.trim().is_empty() && req.initial.is_some() => {
                    Line::Text(req.initial.unwrap_or_default().to_string())
                }
                Some(l) => Line::Text(l),
                None => Line::Eof,
            }
        };
        if self.cancel.is_some() {
            signals::set_prompt_state(PromptState::Busy);
        }
        line
    }
}
