//! The conversation: what the model sees and what sessions record.

use serde::{Deserialize, Serialize};

/// One tool call requested by the model. `arguments` is the JSON object the
/// model sent; arguments that were not valid JSON are kept as the raw
/// string (and refused as a tool error, never executed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// A block of the model's reasoning. Anthropic's extended thinking must be
/// sent back unchanged (with its signature) alongside tool results; a
/// redacted block carries only its opaque `redacted` data.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Thinking {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// One conversation message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<Thinking>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Token usage (of one response, a turn or a session). `input_tokens`
/// counts every input token, cached ones included; `cached_input_tokens`
/// is the part read from the provider's prompt cache; `reasoning_tokens`
/// the part of `output_tokens` spent thinking (when the provider says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
    }
}

/// One model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub thinking: Vec<Thinking>,
    pub usage: Usage,
    /// Why the model stopped, in the provider's words (`stop`,
    /// `tool_calls`, `end_turn`, `max_tokens`, ...), when it said.
    pub stop_reason: Option<String>,
}

/// A rough token estimate (4 bytes a token), used by the simulator.
pub fn estimate_tokens(s: &str) -> u64 {
    (s.len() as u64).div_ceil(4)
}
