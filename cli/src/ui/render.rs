//! How run events look in each output mode: NDJSON for `--json`, the
//! final answer for `--print`, text as it streams for `--stream` and the
//! interactive mode (tool activity on stderr).

use std::io::Write;

use zot_agent::events::{Event, OutputMode};

/// Renders events for one output mode.
pub struct Renderer {
    mode: OutputMode,
    last_text: String,
}

impl Renderer {
    pub fn new(mode: OutputMode) -> Self {
        Renderer {
            mode,
            last_text: String::new(),
        }
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
            eprintln!(
                "zot: retrying in {} ({reason}; attempt {attempt} of {max_attempts})",
                zot_agent::providers::secs(std::time::Duration::from_millis(*delay_ms))
            );
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
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(self.last_text.as_bytes());
                    if !self.last_text.ends_with('\n') {
                        let _ = out.write_all(b"\n");
                    }
                    let _ = out.flush();
                }
                _ => {}
            },
            OutputMode::Stream | OutputMode::Interactive => match ev {
                Event::TextDelta { delta, .. } => {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(delta.as_bytes());
                    let _ = out.flush();
                }
                Event::AssistantMessage { text, .. }
                    if !text.is_empty() && !text.ends_with('\n') =>
                {
                    println!();
                }
                Event::ToolCall {
                    name, arguments, ..
                } => {
                    eprintln!("[{name}] {}", summarize_args(name, arguments));
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
                    eprintln!("[{name}] {status}{dur}: {}", truncate(first, 200));
                }
                _ => {}
            },
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
    a.get(key)
        .and_then(|v| v.as_str())
        .map(|s| truncate(s, 200))
        .unwrap_or_else(|| truncate(&a.to_string(), 200))
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
