//! The Anthropic Messages wire format (`POST {base}/v1/messages`).
//!
//! Streaming: named events whose data carries the same `type`:
//! `message_start` (the message with empty `content` and the input
//! usage), then per content block `content_block_start` (a `text`,
//! `tool_use`, `thinking` or `redacted_thinking` block), any number of
//! `content_block_delta` (`text_delta`, `input_json_delta` with
//! `partial_json`, `thinking_delta`, `signature_delta`, which replaces the
//! block's signature) and `content_block_stop`; then `message_delta`
//! (`stop_reason`, cumulative `usage.output_tokens`) and `message_stop`.
//! `ping` events may come at any time; `error` events report a failure
//! (e.g. `overloaded_error`); unknown event and block types are skipped,
//! as the API's versioning policy asks. A plain `message` JSON body is
//! accepted too.
//!
//! Thinking blocks (with their signatures) are sent back first in the
//! assistant message, as extended thinking with tool use requires.

use serde_json::{json, Map, Value};

use super::stream::{
    decode_arguments, excerpt, str_at, Budget, Delta, Framing, StreamError, StreamParser,
};
use super::{body_with_messages, repaired, ModelRequest};
use crate::message::{AssistantTurn, Message, Thinking, ToolCall, Usage};

const FORMAT: &str = "Anthropic messages";

/// The API version header value.
pub const API_VERSION: &str = "2023-06-01";

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
    Thinking(Thinking),
    Other,
}

#[derive(Default, Clone, Copy)]
struct RawUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

/// The incremental parser of a Messages response.
pub struct AnthropicStream {
    framing: Framing,
    started: bool,
    stopped: bool,
    blocks: Vec<Block>,
    stop_reason: Option<String>,
    usage: RawUsage,
    budget: Budget,
}

impl Default for AnthropicStream {
    fn default() -> Self {
        Self::new()
    }
}

impl AnthropicStream {
    pub fn new() -> Self {
        AnthropicStream {
            framing: Framing::new(FORMAT),
            started: false,
            stopped: false,
            blocks: Vec::new(),
            stop_reason: None,
            usage: RawUsage::default(),
            budget: Budget::default(),
        }
    }

    fn usage_update(&mut self, u: &Value) {
        let set = |slot: &mut u64, key: &str| {
            if let Some(n) = u.get(key).and_then(Value::as_u64) {
                *slot = n;
            }
        };
        set(&mut self.usage.input, "input_tokens");
        set(&mut self.usage.output, "output_tokens");
        set(&mut self.usage.cache_read, "cache_read_input_tokens");
        set(&mut self.usage.cache_write, "cache_creation_input_tokens");
    }

    fn block_of(&mut self, b: &Value, out: &mut Vec<Delta>) -> Result<Block, StreamError> {
        Ok(match str_at(b, "type") {
            Some("text") => {
                let t = str_at(b, "text").unwrap_or("").to_string();
                self.budget.take(t.len())?;
                if !t.is_empty() {
                    out.push(Delta::Text(t.clone()));
                }
                Block::Text(t)
            }
            Some("tool_use") => {
                let id = str_at(b, "id").unwrap_or("").to_string();
                let name = str_at(b, "name").unwrap_or("").to_string();
                let input = b.get("input").cloned().unwrap_or(json!({}));
                self.budget
                    .take(id.len() + name.len() + input.to_string().len())?;
                Block::Tool {
                    id,
                    name,
                    json: String::new(),
                    input,
                }
            }
            Some("thinking") => {
                let text = str_at(b, "thinking").unwrap_or("").to_string();
                let signature = str_at(b, "signature").unwrap_or("").to_string();
                self.budget.take(text.len() + signature.len())?;
                if !text.is_empty() {
                    out.push(Delta::Thinking(text.clone()));
                }
                Block::Thinking(Thinking {
                    text,
                    signature,
                    redacted: None,
                })
            }
            Some("redacted_thinking") => {
                let data = str_at(b, "data").unwrap_or("").to_string();
                self.budget.take(data.len())?;
                Block::Thinking(Thinking {
                    redacted: Some(data),
                    ..Default::default()
                })
            }
            _ => Block::Other,
        })
    }

    fn event(&mut self, v: &Value, out: &mut Vec<Delta>) -> Result<(), StreamError> {
        let ty = str_at(v, "type").unwrap_or("");
        if ty == "error" {
            return Err(server_error(v.get("error").unwrap_or(v)));
        }
        if ty == "ping" || self.stopped {
            return Ok(());
        }
        if ty != "message_start" && !self.started && ty.starts_with("content_block") {
            return Err(self.framing.protocol(format!("{ty} before message_start")));
        }
        match ty {
            "message_start" => {
                self.started = true;
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    self.usage_update(u);
                }
            }
            "content_block_start" => {
                let index = self.index(v)?;
                if index != self.blocks.len() {
                    return Err(self.framing.protocol(format!(
                        "content block {index} started after {} blocks",
                        self.blocks.len()
                    )));
                }
                if self.blocks.len() >= 256 {
                    return Err(self.framing.protocol("more than 256 content blocks"));
                }
                let b = v.get("content_block").cloned().unwrap_or(Value::Null);
                let block = self.block_of(&b, out)?;
                self.blocks.push(block);
            }
            "content_block_delta" => {
                let index = self.index(v)?;
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                let dtype = str_at(&delta, "type").unwrap_or("");
                let piece = match dtype {
                    "text_delta" => str_at(&delta, "text"),
                    "input_json_delta" => str_at(&delta, "partial_json"),
                    "thinking_delta" => str_at(&delta, "thinking"),
                    "signature_delta" => str_at(&delta, "signature"),
                    _ => None,
                }
                .unwrap_or("");
                self.budget.take(piece.len())?;
                let Some(block) = self.blocks.get_mut(index) else {
                    return Err(self.framing.protocol(format!(
                        "delta for content block {index}, which never started"
                    )));
                };
                match (dtype, block) {
                    ("text_delta", Block::Text(t)) => {
                        t.push_str(piece);
                        if !piece.is_empty() {
                            out.push(Delta::Text(piece.to_string()));
                        }
                    }
                    ("input_json_delta", Block::Tool { json, .. }) => json.push_str(piece),
                    ("thinking_delta", Block::Thinking(th)) => {
                        th.text.push_str(piece);
                        if !piece.is_empty() {
                            out.push(Delta::Thinking(piece.to_string()));
                        }
                    }
                    ("signature_delta", Block::Thinking(th)) => th.signature = piece.to_string(),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v.get("delta").and_then(|d| str_at(d, "stop_reason")) {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    self.usage_update(u);
                }
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    fn index(&self, v: &Value) -> Result<usize, StreamError> {
        v.get("index")
            .and_then(Value::as_u64)
            .map(|i| i as usize)
            .ok_or_else(|| {
                self.framing
                    .protocol("a content block event without an index")
            })
    }

    fn turn(&mut self) -> Result<AssistantTurn, StreamError> {
        let mut t = AssistantTurn {
            stop_reason: self.stop_reason.take(),
            ..Default::default()
        };
        for b in std::mem::take(&mut self.blocks) {
            match b {
                Block::Text(s) => t.text.push_str(&s),
                Block::Tool {
                    id,
                    name,
                    json,
                    input,
                } => {
                    if id.is_empty() || name.is_empty() {
                        return Err(self.framing.protocol("a tool_use block without id or name"));
                    }
                    let arguments = if json.is_empty() {
                        input
                    } else {
                        decode_arguments(&json)
                    };
                    t.tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Thinking(th) => t.thinking.push(th),
                Block::Other => {}
            }
        }
        let u = self.usage;
        t.usage = Usage {
            input_tokens: u.input + u.cache_read + u.cache_write,
            output_tokens: u.output,
            cached_input_tokens: u.cache_read,
            reasoning_tokens: 0,
        };
        Ok(t)
    }

    /// A plain (non-streamed) `message` body.
    fn whole(&mut self, body: &[u8]) -> Result<AssistantTurn, StreamError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            self.framing
                .protocol(format!("the JSON body does not parse: {e}"))
        })?;
        if str_at(&v, "type") == Some("error") {
            return Err(server_error(v.get("error").unwrap_or(&v)));
        }
        let content = v.get("content").and_then(Value::as_array).ok_or_else(|| {
            self.framing
                .protocol("the JSON body has no `content` array")
        })?;
        let mut ignored = Vec::new();
        for b in content {
            let block = self.block_of(b, &mut ignored)?;
            self.blocks.push(block);
        }
        self.stop_reason = str_at(&v, "stop_reason").map(str::to_string);
        if let Some(u) = v.get("usage") {
            self.usage_update(u);
        }
        self.turn()
    }
}

impl StreamParser for AnthropicStream {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Delta>) -> Result<(), StreamError> {
        if self.stopped {
            // Nothing after message_stop matters, however the bytes are split.
            return Ok(());
        }
        let mut events = Vec::new();
        let framed = self.framing.feed(bytes, &mut events);
        for ev in events {
            if self.stopped {
                return Ok(());
            }
            let v: Value = serde_json::from_str(&ev.data).map_err(|e| {
                self.framing.protocol(format!(
                    "event data is not JSON ({e}): {}",
                    excerpt(&ev.data)
                ))
            })?;
            if ev.event.as_deref() == Some("error") {
                return Err(server_error(v.get("error").unwrap_or(&v)));
            }
            self.event(&v, out)?;
        }
        if self.stopped {
            return Ok(());
        }
        framed
    }

    fn is_complete(&self) -> bool {
        self.stopped
    }

    fn finish(&mut self) -> Result<AssistantTurn, StreamError> {
        if let Some(body) = self.framing.json_body() {
            let body = body.to_vec();
            return self.whole(&body);
        }
        if self.framing.is_empty() {
            return Err(StreamError::Incomplete("the body was empty".into()));
        }
        if !self.stopped {
            return Err(StreamError::Incomplete("no message_stop".into()));
        }
        self.turn()
    }
}

fn server_error(e: &Value) -> StreamError {
    let kind = str_at(e, "type").unwrap_or("an error").to_string();
    let message = str_at(e, "message")
        .map(excerpt)
        .unwrap_or_else(|| "an error occurred during streaming".into());
    let retryable = matches!(
        kind.as_str(),
        "overloaded_error" | "api_error" | "rate_limit_error"
    );
    StreamError::Server {
        kind,
        message,
        retryable,
    }
}

/// Thinking budget for a reasoning effort (the API's minimum is 1024).
pub fn thinking_budget(r: zot_policy::config::ReasoningEffort) -> u64 {
    use zot_policy::config::ReasoningEffort as R;
    match r {
        R::Low => 2048,
        R::Medium => 8192,
        R::High => 24576,
    }
}

/// Output tokens asked for when no reasoning budget applies.
pub const DEFAULT_MAX_TOKENS: u64 = 16384;

fn with_cache(mut block: Value) -> Value {
    block["cache_control"] = json!({"type": "ephemeral"});
    block
}

fn assistant(content: &str, tool_calls: &[ToolCall], thinking: &[Thinking]) -> Option<Value> {
    let mut blocks = Vec::new();
    for th in thinking {
        if let Some(data) = &th.redacted {
            blocks.push(json!({"type": "redacted_thinking", "data": data}));
        } else if !th.signature.is_empty() {
            blocks
                .push(json!({"type": "thinking", "thinking": th.text, "signature": th.signature}));
        }
    }
    if !content.trim().is_empty() {
        blocks.push(json!({"type": "text", "text": content}));
    }
    for c in tool_calls {
        let input = if c.arguments.is_object() {
            c.arguments.clone()
        } else {
            json!({})
        };
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    (!blocks.is_empty()).then(|| json!({"role": "assistant", "content": blocks}))
}

fn tool_result(tool_call_id: &str, content: &str, is_error: bool) -> Value {
    let mut r = Map::new();
    r.insert("type".into(), json!("tool_result"));
    r.insert("tool_use_id".into(), json!(tool_call_id));
    if !content.is_empty() {
        r.insert("content".into(), json!(content));
    }
    if is_error {
        r.insert("is_error".into(), json!(true));
    }
    Value::Object(r)
}

/// The Messages API messages, one at a time: runs of tool results become
/// one user message; empty assistant messages are left out.
fn messages(conv: &[Message]) -> impl Iterator<Item = Value> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || loop {
        let m = conv.get(i)?;
        i += 1;
        match m {
            Message::User { content } => {
                return Some(
                    json!({"role": "user", "content": [{"type": "text", "text": content}]}),
                )
            }
            Message::Assistant {
                content,
                tool_calls,
                thinking,
            } => {
                if let Some(v) = assistant(content, tool_calls, thinking) {
                    return Some(v);
                }
            }
            Message::Tool { .. } => {
                let mut results = Vec::new();
                let mut at = i - 1;
                while let Some(Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    ..
                }) = conv.get(at)
                {
                    results.push(tool_result(tool_call_id, content, *is_error));
                    at += 1;
                }
                i = at;
                return Some(json!({"role": "user", "content": results}));
            }
        }
    })
}

/// The request body (JSON bytes). The system prompt and the end of the
/// conversation are marked for prompt caching (each step of a tool loop
/// resends them).
pub fn request_body(model: &str, req: &ModelRequest) -> Vec<u8> {
    let budget = req.reasoning.map(thinking_budget);
    let mut max_tokens = DEFAULT_MAX_TOKENS + budget.unwrap_or(0);
    if let Some(cap) = req.max_output_tokens {
        max_tokens = max_tokens.min(cap);
    }
    let mut head = json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": [with_cache(json!({"type": "text", "text": req.system}))],
        "stream": true,
    });
    if !req.tools.is_empty() {
        head["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    if let Some(b) = budget {
        // The budget must stay below max_tokens.
        let b = b.min(max_tokens.saturating_sub(1024)).max(1024);
        head["thinking"] = json!({"type": "enabled", "budget_tokens": b});
    }
    let conversation = repaired(req.messages);
    // The summary heading a compacted conversation is marked too: the
    // cached prefix (tools, system, summary) then serves every request
    // until the next compaction.
    let mut stable =
        req.stable_prefix > 0 && matches!(conversation.first(), Some(Message::User { .. }));
    let mut it = messages(&conversation).peekable();
    let marked = std::iter::from_fn(move || {
        let mut m = it.next()?;
        if std::mem::take(&mut stable) || it.peek().is_none() {
            if let Some(last) = m["content"].as_array_mut().and_then(|c| c.last_mut()) {
                *last = with_cache(last.take());
            }
        }
        Some(m)
    });
    body_with_messages(&head, marked)
}

/// The `(type, message)` of an error response body
/// (`{"type": "error", "error": {"type": ..., "message": ...}}`).
pub fn error_body(body: &[u8]) -> Option<(String, String)> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    Some((
        str_at(e, "type").unwrap_or("").to_string(),
        str_at(e, "message")?.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::stream::testing::{assert_split_invariant, same_when_cut};
    use super::*;

    fn sse(events: &[Value]) -> Vec<u8> {
        let mut s = String::new();
        for e in events {
            s.push_str(&format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap()
            ));
        }
        s.into_bytes()
    }

    fn make() -> Box<dyn StreamParser> {
        Box::new(AnthropicStream::new())
    }

    fn start() -> Value {
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 20, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}}})
    }

    fn full_body() -> Vec<u8> {
        sse(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me th\u{ef}nk"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "I'll check \u{1f4c1}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"l"}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "s\"}"}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "glob", "input": {}}}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ])
    }

    proptest::proptest! {
        #[test]
        fn any_cuts_give_the_same_turn(cuts in proptest::collection::vec(0usize..8192, 0..24)) {
            let body = full_body();
            same_when_cut(&make, &body, &cuts);
            let cr = String::from_utf8(body).unwrap().replace('\n', "\r");
            same_when_cut(&make, cr.as_bytes(), &cuts);
        }
    }

    #[test]
    fn thinking_text_and_tools_split_anywhere() {
        let body = full_body();
        let t = assert_split_invariant(&make, &body).unwrap();
        assert_eq!(t.text, "I'll check \u{1f4c1}");
        assert_eq!(t.thinking.len(), 2);
        assert_eq!(t.thinking[0].text, "Let me th\u{ef}nk");
        assert_eq!(t.thinking[0].signature, "EqQBCgIYAhIM");
        assert_eq!(t.thinking[1].redacted.as_deref(), Some("opaque"));
        assert_eq!(t.tool_calls[0].arguments, json!({"command": "ls"}));
        assert_eq!(t.tool_calls[1].arguments, json!({}));
        assert_eq!(t.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(t.usage.input_tokens, 125);
        assert_eq!(t.usage.cached_input_tokens, 100);
        assert_eq!(t.usage.output_tokens, 42);
    }

    #[test]
    fn errors_cuts_and_plain_json() {
        let body = sse(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        ]);
        let r = assert_split_invariant(&make, &body);
        assert!(matches!(r, Err(StreamError::Incomplete(_))), "{r:?}");
        let r = assert_split_invariant(
            &make,
            b"event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
        );
        assert!(
            matches!(&r, Err(StreamError::Server { retryable: true, kind, .. }) if kind == "overloaded_error"),
            "{r:?}"
        );
        let r = assert_split_invariant(
            &make,
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n",
        );
        assert!(matches!(r, Err(StreamError::Protocol { .. })), "{r:?}");
        let whole = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "done"}, {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"path": "a"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}});
        let t = assert_split_invariant(&make, whole.to_string().as_bytes()).unwrap();
        assert_eq!(t.text, "done");
        assert_eq!(t.tool_calls[0].arguments, json!({"path": "a"}));
        // An unknown event type and block type are skipped.
        let body = sse(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "s", "name": "web"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            json!({"type": "future_event"}),
            json!({"type": "message_stop"}),
        ]);
        assert!(assert_split_invariant(&make, &body)
            .unwrap()
            .tool_calls
            .is_empty());
    }

    #[test]
    fn request_shape_sends_thinking_back() {
        let msgs = vec![
            Message::User {
                content: "go".into(),
            },
            Message::Assistant {
                content: "ok".into(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                }],
                thinking: vec![Thinking {
                    text: "hmm".into(),
                    signature: "sig".into(),
                    redacted: None,
                }],
            },
            Message::Tool {
                tool_call_id: "toolu_1".into(),
                name: "bash".into(),
                content: "a.txt".into(),
                is_error: true,
            },
        ];
        let req = ModelRequest {
            system: "sys",
            messages: &msgs,
            tools: &[],
            reasoning: Some(zot_policy::config::ReasoningEffort::Medium),
            max_output_tokens: Some(64000),
            stable_prefix: 0,
        };
        let b: Value = serde_json::from_slice(&request_body("claude-sonnet-4-5", &req)).unwrap();
        assert_eq!(b["max_tokens"], 16384 + 8192);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        let a = &b["messages"][1]["content"];
        assert_eq!(
            a[0],
            json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})
        );
        assert_eq!(a[1]["type"], "text");
        assert_eq!(a[2]["type"], "tool_use");
        let r = &b["messages"][2];
        assert_eq!(r["role"], "user");
        assert_eq!(r["content"][0]["type"], "tool_result");
        assert_eq!(r["content"][0]["is_error"], true);
        assert_eq!(r["content"][0]["cache_control"]["type"], "ephemeral");
        assert!(b.get("tools").is_none());
    }
}
