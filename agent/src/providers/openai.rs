//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`),
//! spoken by OpenAI and by every OpenAI-compatible server (vLLM,
//! llama.cpp's server, Ollama, LM Studio, LiteLLM, OpenRouter).
//!
//! Streaming: `data:` events each carry a `chat.completion.chunk`; text in
//! `choices[0].delta.content`; tool calls in `choices[0].delta.tool_calls`,
//! keyed by `index`, with `id` and `function.name` in the first piece and
//! `function.arguments` split over any number of pieces; `finish_reason`
//! on the last choice chunk; with `stream_options.include_usage` a final
//! chunk with empty `choices` and the `usage`; then `data: [DONE]`. An
//! `error` object in a chunk is a failure. Some compatible servers also
//! stream `reasoning_content` (or `reasoning`); it is shown as thinking and
//! not sent back. A server that answers with a plain `chat.completion`
//! JSON body instead of a stream is accepted too.

use serde_json::{json, Map, Value};

use super::stream::{
    decode_arguments, excerpt, str_at, u64_at, Budget, Delta, Framing, StreamError, StreamParser,
};
use super::{body_with_messages, repaired, ModelRequest};
use crate::message::{AssistantTurn, Message, ToolCall, Usage};

const FORMAT: &str = "OpenAI chat completions";

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The incremental parser of a Chat Completions response.
pub struct OpenAiStream {
    framing: Framing,
    text: String,
    thinking: String,
    calls: Vec<(u64, PartialCall)>,
    finish_reason: Option<String>,
    done: bool,
    usage: Usage,
    budget: Budget,
}

impl Default for OpenAiStream {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenAiStream {
    pub fn new() -> Self {
        OpenAiStream {
            framing: Framing::new(FORMAT),
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            finish_reason: None,
            done: false,
            usage: Usage::default(),
            budget: Budget::default(),
        }
    }

    fn chunk(&mut self, v: &Value, out: &mut Vec<Delta>) -> Result<(), StreamError> {
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(server_error(e));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_of(u);
        }
        let Some(choices) = v.get("choices") else {
            return Ok(());
        };
        let choices = choices
            .as_array()
            .ok_or_else(|| self.framing.protocol("`choices` is not an array"))?;
        // zot asks for one choice; any other index is ignored.
        let Some(choice) = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            for key in ["content", "refusal"] {
                if let Some(t) = str_at(delta, key).filter(|t| !t.is_empty()) {
                    self.budget.take(t.len())?;
                    self.text.push_str(t);
                    out.push(Delta::Text(t.to_string()));
                }
            }
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = str_at(delta, key).filter(|t| !t.is_empty()) {
                    self.budget.take(t.len())?;
                    self.thinking.push_str(t);
                    out.push(Delta::Thinking(t.to_string()));
                }
            }
            if let Some(tc) = delta.get("tool_calls").filter(|t| !t.is_null()) {
                let tc = tc
                    .as_array()
                    .ok_or_else(|| self.framing.protocol("`tool_calls` is not an array"))?;
                for (pos, piece) in tc.iter().enumerate() {
                    self.tool_piece(pos, piece)?;
                }
            }
        }
        if let Some(r) = str_at(choice, "finish_reason") {
            self.finish_reason = Some(r.to_string());
        }
        Ok(())
    }

    fn tool_piece(&mut self, pos: usize, piece: &Value) -> Result<(), StreamError> {
        if !piece.is_object() {
            return Err(self.framing.protocol("a tool call piece is not an object"));
        }
        let index = piece
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(pos as u64);
        let at = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                if self.calls.len() >= 128 {
                    return Err(self.framing.protocol("more than 128 tool calls"));
                }
                self.calls.push((index, PartialCall::default()));
                self.calls.len() - 1
            }
        };
        let f = piece.get("function");
        let id = str_at(piece, "id");
        let name = f.and_then(|f| str_at(f, "name"));
        let args = f.and_then(|f| str_at(f, "arguments"));
        let n = id.map_or(0, str::len) + name.map_or(0, str::len) + args.map_or(0, str::len);
        self.budget.take(n)?;
        let call = &mut self.calls[at].1;
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            if call.id.is_empty() {
                call.id = id.to_string();
            }
        }
        if let Some(name) = name.filter(|n| *n != call.name) {
            // The name comes whole in the first piece; a server repeating
            // it on every piece repeats the same name.
            call.name.push_str(name);
        }
        if let Some(a) = args {
            call.arguments.push_str(a);
        }
        Ok(())
    }

    fn turn(&mut self) -> Result<AssistantTurn, StreamError> {
        let mut tool_calls = Vec::new();
        for (index, c) in std::mem::take(&mut self.calls) {
            if c.name.is_empty() {
                return Err(self
                    .framing
                    .protocol(format!("tool call {index} has no function name")));
            }
            tool_calls.push(ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{index}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: decode_arguments(&c.arguments),
            });
        }
        let thinking = if self.thinking.is_empty() {
            Vec::new()
        } else {
            vec![crate::message::Thinking {
                text: std::mem::take(&mut self.thinking),
                ..Default::default()
            }]
        };
        Ok(AssistantTurn {
            text: std::mem::take(&mut self.text),
            tool_calls,
            thinking,
            usage: self.usage,
            stop_reason: self.finish_reason.take(),
        })
    }

    /// A plain (non-streamed) `chat.completion` body.
    fn whole(&mut self, body: &[u8]) -> Result<AssistantTurn, StreamError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            self.framing
                .protocol(format!("the JSON body does not parse: {e}"))
        })?;
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(server_error(e));
        }
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| self.framing.protocol("the JSON body has no `choices`"))?;
        let msg = choice
            .get("message")
            .ok_or_else(|| self.framing.protocol("the choice has no `message`"))?;
        let mut ignored = Vec::new();
        let mut as_delta = msg.clone();
        if let Some(calls) = as_delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, c) in calls.iter_mut().enumerate() {
                if let Some(o) = c.as_object_mut() {
                    o.entry("index").or_insert(json!(i));
                }
            }
        }
        let chunk = json!({
            "choices": [{"index": 0, "delta": as_delta, "finish_reason": choice.get("finish_reason")}],
            "usage": v.get("usage"),
        });
        self.chunk(&chunk, &mut ignored)?;
        self.turn()
    }
}

impl StreamParser for OpenAiStream {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Delta>) -> Result<(), StreamError> {
        if self.done {
            // Nothing after [DONE] matters, however the bytes are split.
            return Ok(());
        }
        let mut events = Vec::new();
        let framed = self.framing.feed(bytes, &mut events);
        for ev in events {
            if self.done {
                return Ok(());
            }
            let data = ev.data.trim();
            if data == "[DONE]" {
                self.done = true;
                continue;
            }
            let v: Value = serde_json::from_str(data).map_err(|e| {
                self.framing
                    .protocol(format!("event data is not JSON ({e}): {}", excerpt(data)))
            })?;
            if ev.event.as_deref() == Some("error") {
                return Err(server_error(v.get("error").unwrap_or(&v)));
            }
            self.chunk(&v, out)?;
        }
        if self.done {
            return Ok(());
        }
        framed
    }

    fn is_complete(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<AssistantTurn, StreamError> {
        if let Some(body) = self.framing.json_body() {
            let body = body.to_vec();
            return self.whole(&body);
        }
        if self.framing.is_empty() {
            return Err(StreamError::Incomplete("the body was empty".into()));
        }
        if !self.done && self.finish_reason.is_none() {
            return Err(StreamError::Incomplete(
                "no finish_reason and no [DONE]".into(),
            ));
        }
        self.turn()
    }
}

fn usage_of(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_at(u, "prompt_tokens"),
        output_tokens: u64_at(u, "completion_tokens"),
        cached_input_tokens: u
            .get("prompt_tokens_details")
            .map_or(0, |d| u64_at(d, "cached_tokens")),
        reasoning_tokens: u
            .get("completion_tokens_details")
            .map_or(0, |d| u64_at(d, "reasoning_tokens")),
    }
}

fn server_error(e: &Value) -> StreamError {
    let message = str_at(e, "message")
        .map(excerpt)
        .or_else(|| e.as_str().map(excerpt))
        .unwrap_or_else(|| "an error occurred during streaming".into());
    let kind = str_at(e, "code")
        .or_else(|| str_at(e, "type"))
        .unwrap_or("an error")
        .to_string();
    let retryable = matches!(
        kind.as_str(),
        "server_error" | "rate_limit_exceeded" | "overloaded" | "service_unavailable"
    );
    StreamError::Server {
        kind,
        message,
        retryable,
    }
}

fn message(m: &Message) -> Value {
    match m {
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut o = Map::new();
            o.insert("role".into(), json!("assistant"));
            o.insert(
                "content".into(),
                if content.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!(content)
                },
            );
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        let args = match &c.arguments {
                            Value::String(raw) => raw.clone(),
                            Value::Null => "{}".into(),
                            v => v.to_string(),
                        };
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": args}})
                    })
                    .collect();
                o.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(o)
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// The request body (JSON bytes). Tool definitions become `function`
/// tools; the conversation becomes `system`, `user`, `assistant` (with
/// `tool_calls`, arguments as the JSON text the model wrote) and `tool`
/// messages.
pub fn request_body(model: &str, req: &ModelRequest) -> Vec<u8> {
    let mut head = json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        head["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
    }
    if let Some(r) = req.reasoning {
        head["reasoning_effort"] = json!(r.as_str());
    }
    let conversation = repaired(req.messages);
    let system = std::iter::once(json!({"role": "system", "content": req.system}));
    body_with_messages(&head, system.chain(conversation.iter().map(message)))
}

/// The `(kind, message)` of an error response body (`{"error": {...}}`),
/// when it has that shape.
pub fn error_body(body: &[u8]) -> Option<(String, String)> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    let message = str_at(e, "message")
        .map(str::to_string)
        .or_else(|| e.as_str().map(str::to_string))?;
    let kind = str_at(e, "code")
        .or_else(|| str_at(e, "type"))
        .unwrap_or("")
        .to_string();
    Some((kind, message))
}

#[cfg(test)]
mod tests {
    use super::super::stream::testing::{assert_split_invariant, same_when_cut};
    use super::*;

    fn sse(chunks: &[Value]) -> Vec<u8> {
        let mut s = String::new();
        for c in chunks {
            s.push_str(&format!("data: {c}\n\n"));
        }
        s.push_str("data: [DONE]\n\n");
        s.into_bytes()
    }

    fn chunk(delta: Value, finish: Option<&str>) -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    }

    fn make() -> Box<dyn StreamParser> {
        Box::new(OpenAiStream::new())
    }

    fn parallel_calls_body() -> Vec<u8> {
        sse(&[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Looking h\u{e9}re \u{1f50d}"}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                         "function": {"name": "bash", "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                         "function": {"name": "read", "arguments": "{\"path\":"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\": \"ls \u{e9}\"}"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": " \"a.txt\"}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                             "prompt_tokens_details": {"cached_tokens": 4},
                             "completion_tokens_details": {"reasoning_tokens": 2}}}),
        ])
    }

    proptest::proptest! {
        #[test]
        fn any_cuts_give_the_same_turn(cuts in proptest::collection::vec(0usize..4096, 0..24)) {
            let body = parallel_calls_body();
            same_when_cut(&make, &body, &cuts);
            let crlf = String::from_utf8(body).unwrap().replace('\n', "\r\n");
            same_when_cut(&make, crlf.as_bytes(), &cuts);
        }
    }

    #[test]
    fn text_and_parallel_tool_calls_split_anywhere() {
        let body = parallel_calls_body();
        let t = assert_split_invariant(&make, &body).unwrap();
        assert_eq!(t.text, "Looking h\u{e9}re \u{1f50d}");
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].id, "call_a");
        assert_eq!(t.tool_calls[0].arguments, json!({"command": "ls \u{e9}"}));
        assert_eq!(t.tool_calls[1].arguments, json!({"path": "a.txt"}));
        assert_eq!(t.stop_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            t.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                cached_input_tokens: 4,
                reasoning_tokens: 2
            }
        );
    }

    #[test]
    fn cut_garbage_errors_and_plain_json() {
        let full = sse(&[
            chunk(json!({"content": "hi"}), None),
            chunk(json!({}), Some("stop")),
        ]);
        // Cut before finish_reason: incomplete, however it is cut.
        let cut = &full[..full.len() - 40];
        let r = assert_split_invariant(&make, cut);
        assert!(matches!(r, Err(StreamError::Incomplete(_))), "{r:?}");
        // Ends after finish_reason without [DONE]: complete.
        let no_done = &full[..full.len() - "data: [DONE]\n\n".len()];
        assert_eq!(assert_split_invariant(&make, no_done).unwrap().text, "hi");
        let r = assert_split_invariant(&make, b"data: {not json\n\n");
        assert!(matches!(r, Err(StreamError::Protocol { .. })), "{r:?}");
        let r = assert_split_invariant(&make, b"<html>502 Bad Gateway</html>");
        assert!(matches!(r, Err(StreamError::Incomplete(_))), "{r:?}");
        let r = assert_split_invariant(
            &make,
            br#"data: {"error": {"message": "overloaded", "type": "server_error"}}

"#,
        );
        assert!(
            matches!(
                &r,
                Err(StreamError::Server {
                    retryable: true,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = assert_split_invariant(&make, b": keep-alive\n\n: ping\n\n");
        assert!(matches!(r, Err(StreamError::Incomplete(_))), "{r:?}");
        let whole = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let body = format!("\n{whole}\n");
        let t = assert_split_invariant(&make, body.as_bytes()).unwrap();
        assert_eq!(t.tool_calls[0].arguments, json!({"command": "true"}));
        assert_eq!(t.usage.input_tokens, 3);
        // Invalid arguments are kept raw (never executed).
        let bad = sse(&[
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "bash", "arguments": "{\"comm"}}]}),
                None,
            ),
            chunk(json!({}), Some("length")),
        ]);
        let t = assert_split_invariant(&make, &bad).unwrap();
        assert_eq!(t.tool_calls[0].arguments, json!("{\"comm"));
    }

    #[test]
    fn request_shape() {
        use crate::tools::ToolSpec;
        let tools = [ToolSpec {
            name: "bash",
            description: "run",
            parameters: json!({"type": "object"}),
        }];
        let msgs = vec![
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                }],
                thinking: vec![],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                content: "ok".into(),
                is_error: false,
            },
        ];
        let req = ModelRequest {
            system: "sys",
            messages: &msgs,
            tools: &tools,
            reasoning: Some(policy_reasoning()),
            max_output_tokens: None,
            stable_prefix: 0,
        };
        let b: Value = serde_json::from_slice(&request_body("gpt-5", &req)).unwrap();
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["reasoning_effort"], "high");
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"command\":\"ls\"}"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        );
        assert_eq!(b["tools"][0]["function"]["name"], "bash");
    }

    fn policy_reasoning() -> zot_policy::config::ReasoningEffort {
        zot_policy::config::ReasoningEffort::High
    }
}
