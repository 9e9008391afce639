//! Run events and the output modes that render them. The `--json` schema is
//! documented in docs/run.md: one JSON object a line, `type` first.

use std::io::Write;

use serde::Serialize;

use crate::message::{ToolCall, Usage};

/// One event of a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    TurnStart {
        turn: u32,
    },
    TextDelta {
        turn: u32,
        delta: String,
    },
    /// Reasoning text as the model streams it (`--json` only).
    ThinkingDelta {
        turn: u32,
        delta: String,
    },
    /// A model request failed in a way another attempt may fix; zot waits
    /// `delay_ms`, then sends it again (nothing of it was shown yet).
    Retry {
        turn: u32,
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    AssistantMessage {
        turn: u32,
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolCall {
        turn: u32,
        id: String,
        name: String,
        arguments: serde_json::Value,
    },
    ToolResult {
        turn: u32,
        id: String,
        name: String,
        is_error: bool,
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        full_output: Option<String>,
    },
    Usage {
        turn: u32,
        #[serde(flatten)]
        usage: Usage,
    },
    TurnEnd {
        turn: u32,
        text: String,
        /// Tokens of the whole turn.
        usage: Usage,
    },
    Done {
        agent: String,
        model: String,
        provider: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        exit_code: u8,
        /// Tokens of the whole session (earlier runs of a resumed one
        /// included).
        usage: Usage,
    },
    Error {
        message: String,
    },
}

/// Output mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    #[default]
    Interactive,
    Print,
    Stream,
    Json,
}

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

    pub fn mode(&self) -> OutputMode {
        self.mode
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
                crate::providers::secs(std::time::Duration::from_millis(*delay_ms))
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
