//! Model providers behind one trait: the offline simulator (`sim`), and
//! the network wire formats `openai` (Chat Completions, any compatible
//! server) and `anthropic` (Messages).
//!
//! The wire formats are split in two: pure parts (request bodies and the
//! incremental response parsers [`openai::OpenAiStream`] and
//! [`anthropic::AnthropicStream`], bytes in and events out) and the network
//! driver in `http` (timeouts, retries, cancellation), shared by both.

pub mod anthropic;
mod error;
mod http;
pub mod openai;
pub mod sim;
pub mod sse;
pub mod stream;

use std::borrow::Cow;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

pub use error::{secs, ProviderError, TimeoutPhase};
pub use http::Timeouts;
pub use zot_policy::config::{Api, ReasoningEffort};
pub use zot_process::Cancel;

use crate::message::{AssistantTurn, Message};
use crate::tools::ToolSpec;

/// What one model response is asked for.
pub struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    /// The tools offered (already narrowed to what this run allows).
    pub tools: &'a [ToolSpec],
    pub reasoning: Option<ReasoningEffort>,
    /// The model's output limit, when known.
    pub max_output_tokens: Option<u64>,
    /// Leading messages of `messages` that stay the same from request to
    /// request until the next compaction (the summary): a provider with
    /// prompt caching marks the end of this prefix, so the cache survives
    /// the turns that follow a compaction.
    pub stable_prefix: usize,
}

/// A retry about to happen.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// The attempt about to run (2 for the first retry).
    pub attempt: u32,
    pub max_attempts: u32,
    pub delay: Duration,
    /// A few words: `429 rate limited`, `stream cut`, ...
    pub reason: String,
}

/// What a model reports while it answers.
#[derive(Debug, Clone, Copy)]
pub enum ModelEvent<'a> {
    Text(&'a str),
    Thinking(&'a str),
    Retry(&'a RetryNotice),
}

/// A chat model: the next assistant turn for a conversation, streamed
/// through `sink` as it arrives.
pub trait Model {
    fn respond(
        &mut self,
        req: &ModelRequest,
        cancel: &Cancel,
        sink: &mut dyn FnMut(ModelEvent),
    ) -> Result<AssistantTurn, ProviderError>;
}

/// The conversation as the providers require it: every tool call answered.
/// A call without a result (a run stopped in the middle of a tool call, in
/// a resumed session) gets an error result, so the request stays valid.
pub fn repaired(messages: &[Message]) -> Cow<'_, [Message]> {
    let answered = |i: usize, id: &str| {
        messages[i + 1..]
            .iter()
            .take_while(|m| matches!(m, Message::Tool { .. }))
            .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == id))
    };
    let missing = messages.iter().enumerate().any(|(i, m)| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().any(|c| !answered(i, &c.id)),
        _ => false,
    });
    if !missing {
        return Cow::Borrowed(messages);
    }
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        out.push(m.clone());
        i += 1;
        if let Message::Assistant { tool_calls, .. } = m {
            let start = i - 1;
            while let Some(r @ Message::Tool { .. }) = messages.get(i) {
                out.push(r.clone());
                i += 1;
            }
            for c in tool_calls.iter().filter(|c| !answered(start, &c.id)) {
                out.push(Message::Tool {
                    tool_call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: "no result: the run stopped before this tool call finished".into(),
                    is_error: true,
                });
            }
        }
    }
    Cow::Owned(out)
}

/// `head` (a JSON object) with `"messages": [...]` added, each message
/// serialized as it is produced: the conversation is never held twice in
/// memory (a long session's request stays one buffer of its own size).
pub(crate) fn body_with_messages(
    head: &serde_json::Value,
    messages: impl Iterator<Item = serde_json::Value>,
) -> Vec<u8> {
    let mut out = serde_json::to_vec(head).expect("request head serializes");
    debug_assert_eq!(out.last(), Some(&b'}'));
    out.pop();
    if out.len() > 1 {
        out.push(b',');
    }
    out.extend_from_slice(b"\"messages\":[");
    for (i, m) in messages.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, &m).expect("message serializes");
    }
    out.extend_from_slice(b"]}");
    out
}

/// An API key. Its `Debug` prints nothing of it.
pub struct Secret(String);

impl Secret {
    pub fn new(s: String) -> Secret {
        Secret(s)
    }
    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Everything needed to talk to one model over the network.
#[derive(Debug)]
pub struct Endpoint {
    pub api: Api,
    /// Without a trailing slash (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`).
    pub base_url: String,
    pub model: String,
    /// `None`: the server needs no key.
    pub key: Option<Secret>,
    /// The variable the key came from (named in errors).
    pub key_env: Option<String>,
    /// Extra headers (e.g. `OpenAI-Organization`).
    pub headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
    pub max_output_tokens: Option<u64>,
}

/// A model behind the `openai` or `anthropic` wire format.
pub struct NetworkModel {
    http: http::Http,
    api: Api,
    url: String,
    headers: HeaderMap,
    model: String,
    key_env: Option<String>,
    secret: Option<Secret>,
    /// Handle SIGINT/SIGTERM/SIGHUP during a request (as an interruption).
    signals: bool,
}

impl NetworkModel {
    pub fn new(ep: Endpoint, signals: bool) -> Result<NetworkModel, ProviderError> {
        let url = match ep.api {
            Api::OpenAi => format!("{}/chat/completions", ep.base_url),
            Api::Anthropic => format!("{}/v1/messages", ep.base_url),
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let bad_key = || {
            ProviderError::Setup(format!(
                "the key in {} is not a valid header value",
                ep.key_env.as_deref().unwrap_or("the key variable")
            ))
        };
        match ep.api {
            Api::OpenAi => {
                if let Some(k) = &ep.key {
                    let mut v = HeaderValue::from_str(&format!("Bearer {}", k.expose()))
                        .map_err(|_| bad_key())?;
                    v.set_sensitive(true);
                    headers.insert(reqwest::header::AUTHORIZATION, v);
                }
            }
            Api::Anthropic => {
                if let Some(k) = &ep.key {
                    let mut v = HeaderValue::from_str(k.expose()).map_err(|_| bad_key())?;
                    v.set_sensitive(true);
                    headers.insert("x-api-key", v);
                }
                headers.insert(
                    "anthropic-version",
                    HeaderValue::from_static(anthropic::API_VERSION),
                );
            }
        }
        for (k, v) in &ep.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| ProviderError::Setup(format!("invalid header name {k:?}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| ProviderError::Setup(format!("invalid value for header {k}")))?;
            headers.insert(name, value);
        }
        let http = http::Http::new(&ep.base_url, ep.timeouts)?;
        Ok(NetworkModel {
            http,
            api: ep.api,
            url,
            headers,
            model: ep.model,
            key_env: ep.key_env,
            secret: ep.key,
            signals,
        })
    }

    fn classify(&self, status: u16, body: &[u8]) -> ProviderError {
        let parsed = match self.api {
            Api::OpenAi => openai::error_body(body),
            Api::Anthropic => anthropic::error_body(body),
        };
        let (kind, message) =
            parsed.unwrap_or_else(|| (String::new(), String::from_utf8_lossy(body).into_owned()));
        let mut message = stream::excerpt(message.trim());
        if message.is_empty() {
            message = "no message".into();
        }
        let lower = message.to_ascii_lowercase();
        match status {
            401 | 403 => ProviderError::Auth {
                status,
                key_env: self.key_env.clone().filter(|k| !k.is_empty()),
                model: self.model.clone(),
            },
            404 if kind.contains("model") || lower.contains("model") => {
                ProviderError::ModelNotFound {
                    model: self.model.clone(),
                    detail: message,
                }
            }
            404 => ProviderError::NotFound {
                url: self.url.clone(),
                detail: message,
            },
            // Any server's "payload too large": the conversation is.
            413 => ProviderError::ContextLength { status, message },
            400 | 422 if is_context_error(&kind, &lower) => {
                ProviderError::ContextLength { status, message }
            }
            _ => ProviderError::Http {
                status,
                kind,
                message,
                retry_after: None,
                should_retry: None,
            },
        }
    }
}

fn is_context_error(kind: &str, lower: &str) -> bool {
    let too_long = lower.contains("too long") || lower.contains("exceed");
    kind == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || (too_long
            && ["prompt", "input", "context", "token", "request", "message"]
                .iter()
                .any(|w| lower.contains(w)))
        || [
            "context length",
            "context_length",
            "context window",
            "maximum context",
            "prompt is too long",
            "too many tokens",
            "input is too long",
            "context size",
            "token limit",
        ]
        .iter()
        .any(|p| lower.contains(p))
}

impl Model for NetworkModel {
    fn respond(
        &mut self,
        req: &ModelRequest,
        cancel: &Cancel,
        sink: &mut dyn FnMut(ModelEvent),
    ) -> Result<AssistantTurn, ProviderError> {
        let (body, parser): (Vec<u8>, &dyn Fn() -> Box<dyn stream::StreamParser>) = match self.api {
            Api::OpenAi => (openai::request_body(&self.model, req), &|| {
                Box::new(openai::OpenAiStream::new())
            }),
            Api::Anthropic => (anthropic::request_body(&self.model, req), &|| {
                Box::new(anthropic::AnthropicStream::new())
            }),
        };
        let classify = |status: u16, body: &[u8]| self.classify(status, body);
        let call = http::Call {
            url: &self.url,
            headers: &self.headers,
            body: body.into(),
            parser,
            classify: &classify,
        };
        let r = self.http.call(call, cancel, self.signals, sink);
        r.map_err(|e| match &self.secret {
            Some(s) => e.redact(s.expose()),
            None => e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn cancel_aborts_a_request_in_flight_and_closes_its_connection() {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", l.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            // Read the request, never answer, report when the client hangs up.
            while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            let _ = tx.send(std::time::Instant::now());
        });
        let ep = Endpoint {
            api: Api::OpenAi,
            base_url: base,
            model: "m".into(),
            key: None,
            key_env: None,
            headers: vec![],
            timeouts: Timeouts::DEFAULT,
            max_output_tokens: None,
        };
        let mut m = NetworkModel::new(ep, false).unwrap();
        let cancel = Cancel::new().unwrap();
        let c2 = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c2.cancel();
        });
        let req = ModelRequest {
            system: "s",
            messages: &[Message::User {
                content: "hi".into(),
            }],
            tools: &[],
            reasoning: None,
            max_output_tokens: None,
            stable_prefix: 0,
        };
        let t0 = std::time::Instant::now();
        let r = m.respond(&req, &cancel, &mut |_| {});
        assert!(matches!(r, Err(ProviderError::Cancelled)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        let closed = rx
            .recv_timeout(Duration::from_secs(2))
            .expect("connection closed");
        assert!(closed.duration_since(t0) < Duration::from_secs(2));
        // A cancelled handle refuses the next request until reset.
        assert!(matches!(
            m.respond(&req, &cancel, &mut |_| {}),
            Err(ProviderError::Cancelled)
        ));
    }

    #[test]
    fn context_refusals_are_recognised() {
        for (kind, msg) in [
            ("context_length_exceeded", "anything"),
            (
                "invalid_request_error",
                "prompt is too long: 9000 tokens > 8000 maximum",
            ),
            ("", "This model's maximum context length is 8192 tokens"),
            (
                "exceed_context_size_error",
                "the request exceeds the available context size",
            ),
            ("", "Input too long for the model"),
            ("", "prompt too long"),
        ] {
            assert!(is_context_error(kind, &msg.to_ascii_lowercase()), "{msg}");
        }
        for (kind, msg) in [
            ("invalid_request_error", "messages: field required"),
            ("", "temperature must be at most 2"),
        ] {
            assert!(!is_context_error(kind, msg), "{msg}");
        }
    }

    #[test]
    fn unanswered_tool_calls_get_error_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
        };
        let msgs = vec![
            Message::User {
                content: "a".into(),
            },
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("1"), call("2")],
                thinking: vec![],
            },
            Message::Tool {
                tool_call_id: "1".into(),
                name: "bash".into(),
                content: "ok".into(),
                is_error: false,
            },
            Message::User {
                content: "b".into(),
            },
        ];
        let r = repaired(&msgs);
        assert_eq!(r.len(), 5);
        assert!(
            matches!(&r[3], Message::Tool { tool_call_id, is_error: true, .. } if tool_call_id == "2")
        );
        assert!(matches!(&r[4], Message::User { .. }));
        assert!(matches!(repaired(&r), Cow::Borrowed(_)));
    }
}
