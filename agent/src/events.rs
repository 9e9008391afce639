//! Run events and the output modes that render them (the `zot` binary's
//! [`Ui`](crate::ui::Ui) does). The `--json` schema is documented in
//! docs/run.md: one JSON object a line, `type` first.

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
        /// The filtering proxy's decisions for this call's connections
        /// (`permissions.net.allow`): time, host, port, address, decision,
        /// rule, reason, bytes each way.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        network: Vec<serde_json::Value>,
    },
    Usage {
        turn: u32,
        #[serde(flatten)]
        usage: Usage,
        /// Tokens the conversation holds now: this response's reported
        /// input and output, or zot's estimate when that is more.
        context_tokens: u64,
        /// The context window in effect, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    /// The conversation was compacted: everything but the recent turns
    /// was replaced by a summary (written by a request offering no tools).
    Compaction {
        turn: u32,
        /// `threshold` (it would not have fit), `overflow` (the server
        /// refused it) or `manual` (`/compact`).
        reason: &'static str,
        tokens_before: u64,
        tokens_after: u64,
        /// Messages replaced by the summary, and kept after it.
        replaced: usize,
        kept: usize,
        /// Summary requests made (more than 1: summarized in parts).
        requests: u32,
        /// Their tokens (counted in the session's usage too).
        usage: Usage,
        #[serde(skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    TurnEnd {
        turn: u32,
        text: String,
        /// Tokens of the whole turn.
        usage: Usage,
    },
    /// Output of a command zot runs for the user (`entry.pre`'s `!CMD`),
    /// as it comes (`--json` only; the other modes copy it to stderr).
    CommandOutput {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The bytes, decoded leniently (an invalid sequence becomes U+FFFD).
        text: String,
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
