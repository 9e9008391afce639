//! How run events look in each output mode: NDJSON for `--json`, the
//! final answer for `--print`, text as it streams for `--stream` (tool
//! activity on stderr), and the interactive mode: the answer streams to
//! stdout, each tool call is one line on stderr (`bash: git status … exit
//! 0, 12 ms · 3 lines`, its output folded), a spinner while the model has
//! not answered yet. Text written to a terminal is sanitized (see
//! [`style::sanitize`]); colours follow [`style::color_for`].

use std::io::{IsTerminal, Write};
use std::time::Duration;

use zot_agent::events::{Event, OutputMode};

use super::progress::Spinner;
use super::style::{self, paint};

/// Renders events for one output mode.
pub struct Renderer {
    mode: OutputMode,
    last_text: String,
    /// stdout / stderr are terminals.
    out_tty: bool,
    err_tty: bool,
    /// Colour on stderr.
    err_color: bool,
    /// The interactive mode's spinner (waiting for the model, a tool).
    spinner: Option<Spinner>,
    /// The tool call in progress: its one-line summary.
    tool_line: Option<String>,
    /// The last byte written to stdout was a newline (or nothing was).
    out_at_bol: bool,
}

impl Renderer {
    pub fn mode(&self) -> OutputMode {
        self.mode
    }

    pub fn new(mode: OutputMode) -> Self {
        let (out, err) = (std::io::stdout(), std::io::stderr());
        Renderer {
            mode,
            last_text: String::new(),
            out_tty: out.is_terminal(),
            err_tty: err.is_terminal(),
            err_color: style::color_for(&err),
            spinner: None,
            tool_line: None,
            out_at_bol: true,
        }
    }

    pub fn err_color(&self) -> bool {
        self.err_color
    }

    /// Stop the spinner (before anything else is written to the terminal).
    pub fn quiet(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.clear();
        }
    }

    fn spin(&mut self, msg: &str) {
        self.quiet();
        if self.mode == OutputMode::Interactive && self.err_tty {
            self.spinner = Some(Spinner::start(msg, self.err_color));
        }
    }

    /// Make sure the next thing shown starts on a fresh line.
    pub fn fresh_line(&mut self) {
        self.quiet();
        if !self.out_at_bol {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            self.out_at_bol = true;
        }
    }

    fn write_out(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let text = if self.out_tty {
            style::sanitize(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.out_at_bol = text.ends_with('\n');
    }

    /// Render one event.
    pub fn emit(&mut self, ev: &Event) {
        if let Event::Retry {
            attempt,
            max_attempts,
            delay_ms,
            reason,
            ..
        } = ev
        {
            self.fresh_line();
            let msg = format!(
                "zot: retrying in {} ({reason}; attempt {attempt} of {max_attempts})",
                zot_agent::providers::secs(Duration::from_millis(*delay_ms))
            );
            eprintln!("{}", paint(self.err_color, style::WARN, &msg));
            if self.mode == OutputMode::Interactive {
                self.spin("waiting for the model");
            }
        }
        if let (
            Event::Compaction {
                reason,
                tokens_before,
                tokens_after,
                ..
            },
            false,
        ) = (ev, self.mode == OutputMode::Json)
        {
            self.fresh_line();
            let msg = format!(
                "zot: compacted the conversation ({reason}): about {tokens_before} -> {tokens_after} tokens"
            );
            eprintln!("{}", paint(self.err_color, style::WARN, &msg));
        }
        match self.mode {
            OutputMode::Json => {
                let mut out = std::io::stdout().lock();
                let _ = serde_json::to_writer(&mut out, ev);
                let _ = out.write_all(b"\n");
                let _ = out.flush();
            }
            OutputMode::Print => match ev {
                Event::TurnEnd { text, .. } => self.last_text = text.clone(),
                Event::Done { .. } => {
                    let text = std::mem::take(&mut self.last_text);
                    self.write_out(&text);
                    if !text.ends_with('\n') {
                        self.write_out("\n");
                    }
                }
                _ => {}
            },
            OutputMode::Stream => match ev {
                Event::TextDelta { delta, .. } => self.write_out(delta),
                Event::AssistantMessage { text, .. }
                    if !text.is_empty() && !text.ends_with('\n') =>
                {
                    self.write_out("\n");
                }
                Event::ToolCall {
                    name, arguments, ..
                } => {
                    eprintln!("[{name}] {}", self.clean(&summarize_args(name, arguments)));
                }
                Event::ToolResult {
                    name,
                    is_error,
                    content,
                    exit_code,
                    duration_ms,
                    ..
                } => {
                    let status = match (is_error, exit_code) {
                        (_, Some(c)) => format!("exit {c}"),
                        (true, None) => "error".into(),
                        (false, None) => "ok".into(),
                    };
                    let dur = duration_ms.map(|d| format!(", {d} ms")).unwrap_or_default();
                    let first = content.lines().next().unwrap_or("");
                    eprintln!(
                        "[{name}] {status}{dur}: {}",
                        self.clean(&truncate(first, 200))
                    );
                }
                _ => {}
            },
            OutputMode::Interactive => self.interactive(ev),
        }
    }

    /// `text` as it may be written to stderr.
    fn clean(&self, text: &str) -> String {
        if self.err_tty {
            style::sanitize(text).into_owned()
        } else {
            text.to_string()
        }
    }

    fn interactive(&mut self, ev: &Event) {
        match ev {
            Event::TurnStart { .. } => self.spin("thinking"),
            Event::TextDelta { delta, .. } => {
                self.quiet();
                self.write_out(delta);
            }
            Event::AssistantMessage { .. } => self.fresh_line(),
            Event::ToolCall {
                name, arguments, ..
            } => {
                self.fresh_line();
                let line = format!("{name}: {}", self.clean(&summarize_args(name, arguments)));
                self.spin(&line);
                self.tool_line = Some(line);
            }
            Event::ToolResult {
                name,
                is_error,
                content,
                exit_code,
                duration_ms,
                full_output,
                ..
            } => {
                self.quiet();
                let c = self.err_color;
                let head = self.tool_line.take().unwrap_or_else(|| name.clone());
                let (name_part, rest) = match head.split_once(": ") {
                    Some((n, r)) => (n.to_string(), format!(": {r}")),
                    None => (head.clone(), String::new()),
                };
                // A bash result starts with its status line; the output
                // follows it.
                let output = match exit_code {
                    Some(_) => content.split_once('\n').map(|x| x.1).unwrap_or(""),
                    None => content.as_str(),
                };
                let status = match (exit_code, duration_ms) {
                    (Some(code), Some(ms)) => format!("exit {code}, {ms} ms"),
                    (Some(code), None) => format!("exit {code}"),
                    (None, _) if *is_error => "error".into(),
                    (None, _) => "ok".into(),
                };
                let status = paint(c, if *is_error { style::BAD } else { style::OK }, &status);
                let lines = output.lines().count();
                let fold = match (lines, full_output) {
                    (0, _) => String::new(),
                    (n, Some(p)) => format!(" · {n} lines (all in {p})"),
                    (1, None) => " · 1 line".into(),
                    (n, None) => format!(" · {n} lines"),
                };
                eprintln!(
                    "{}{} {} {status}{}",
                    paint(c, style::TOOL, &name_part),
                    rest,
                    paint(c, style::DIM, "…"),
                    paint(c, style::DIM, &fold)
                );
                if *is_error {
                    if let Some(first) = output.lines().find(|l| !l.trim().is_empty()) {
                        eprintln!(
                            "  {}",
                            paint(c, style::BAD, &self.clean(&truncate(first, 200)))
                        );
                    }
                }
                self.spin("thinking");
            }
            Event::TurnEnd { .. } => self.fresh_line(),
            _ => {}
        }
    }
}

fn summarize_args(name: &str, a: &serde_json::Value) -> String {
    let key = match name {
        "bash" => "command",
        "glob" | "grep" => "pattern",
        "skill" => "name",
        _ => "path",
    };
    let s = a
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| a.to_string());
    // One line: a multi-line command shows its first line.
    match s.split_once('\n') {
        Some((first, _)) => truncate(&format!("{first} …"), 200),
        None => truncate(&s, 200),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}
