//! The zot extension protocol, version 1: newline-delimited JSON objects
//! on the extension's stdin (host -> extension) and stdout (extension ->
//! host), each with a `type` and, where a reply is needed, an `id`.
//! Compatible with the reference runtime's protocol. See
//! `docs/extensions.md`.

use serde::Deserialize;
use serde_json::{json, Value};

/// The protocol version sent in `hello_ack`.
pub const PROTOCOL_VERSION: u64 = 1;
/// Largest frame, either way (without its newline).
pub const MAX_FRAME: usize = 4 << 20;

/// Events an extension may subscribe to (and intercept).
pub const EVENTS: &[&str] = &[
    "session_start",
    "turn_start",
    "turn_end",
    "tool_call",
    "assistant_message",
];

/// One part of a tool result.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        #[serde(default)]
        text: String,
    },
    Image {
        #[serde(default)]
        data: String,
        #[serde(default, alias = "mimeType")]
        mime_type: Option<String>,
    },
}

fn id_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(serde::de::Error::custom("id must be a string or a number")),
    }
}

/// A frame from the extension.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromExt {
    Hello {
        name: String,
        #[serde(default)]
        version: Option<String>,
        #[serde(default)]
        capabilities: Vec<String>,
    },
    RegisterTool {
        name: String,
        #[serde(default)]
        description: String,
        #[serde(default, alias = "parameters", alias = "input_schema")]
        schema: Option<Value>,
    },
    RegisterCommand {
        name: String,
        #[serde(default)]
        description: String,
    },
    Subscribe {
        #[serde(default)]
        events: Vec<String>,
        #[serde(default)]
        intercept: Vec<String>,
    },
    Ready,
    ToolResult {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default)]
        content: Vec<Content>,
        #[serde(default)]
        is_error: bool,
    },
    EventInterceptResponse {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default)]
        block: bool,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default)]
        modified_args: Option<Value>,
        #[serde(default)]
        replace_text: Option<String>,
    },
    CommandResponse {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default)]
        action: Option<String>,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        message: Option<String>,
    },
    Notify {
        #[serde(default)]
        level: Option<String>,
        #[serde(default)]
        message: String,
    },
    Submit {
        #[serde(default)]
        text: String,
    },
    ShutdownAck,
}

impl FromExt {
    /// The frame's `type`, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            FromExt::Hello { .. } => "hello",
            FromExt::RegisterTool { .. } => "register_tool",
            FromExt::RegisterCommand { .. } => "register_command",
            FromExt::Subscribe { .. } => "subscribe",
            FromExt::Ready => "ready",
            FromExt::ToolResult { .. } => "tool_result",
            FromExt::EventInterceptResponse { .. } => "event_intercept_response",
            FromExt::CommandResponse { .. } => "command_response",
            FromExt::Notify { .. } => "notify",
            FromExt::Submit { .. } => "submit",
            FromExt::ShutdownAck => "shutdown_ack",
        }
    }
}

/// Parse one frame (a line without its newline). The error says what is
/// wrong, with a short excerpt.
pub fn parse_frame(line: &[u8]) -> Result<FromExt, String> {
    let v: Value = serde_json::from_slice(line)
        .map_err(|e| format!("malformed frame (not JSON: {e}): {}", excerpt(line)))?;
    let Some(t) = v.get("type").and_then(Value::as_str) else {
        return Err(format!(
            "malformed frame (no string `type`): {}",
            excerpt(line)
        ));
    };
    let t = t.to_string();
    serde_json::from_value(v).map_err(|e| format!("malformed `{t}` frame: {e}"))
}

fn excerpt(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(&line[..line.len().min(120)]);
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() > 120 {
        format!("{s}...")
    } else {
        s
    }
}

/// Splits a byte stream into frames of at most [`MAX_FRAME`] bytes.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
}

impl Framer {
    /// Add `chunk`; returns the complete lines in it (empty lines skipped),
    /// or an error once a line is longer than [`MAX_FRAME`].
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            if self.buf.len() + i > MAX_FRAME {
                return Err(too_long());
            }
            self.buf.extend_from_slice(&rest[..i]);
            let mut line = std::mem::take(&mut self.buf);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                out.push(line);
            }
            rest = &rest[i + 1..];
        }
        if self.buf.len() + rest.len() > MAX_FRAME {
            return Err(too_long());
        }
        self.buf.extend_from_slice(rest);
        Ok(out)
    }

    /// Bytes of an unfinished line.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

fn too_long() -> String {
    format!("frame larger than {} MiB", MAX_FRAME >> 20)
}

/// `hello_ack`.
pub struct HelloAck<'a> {
    pub zot_version: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub cwd: &'a str,
    pub extension_dir: &'a str,
    pub data_dir: &'a str,
}

impl HelloAck<'_> {
    pub fn frame(&self) -> Value {
        json!({
            "type": "hello_ack",
            "protocol_version": PROTOCOL_VERSION,
            "zot_version": self.zot_version,
            "provider": self.provider,
            "model": self.model,
            "cwd": self.cwd,
            "extension_dir": self.extension_dir,
            "data_dir": self.data_dir,
        })
    }
}

/// A frame as one line (with its newline).
pub fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// The text of a tool result for the model: text parts joined, images
/// described.
pub fn content_text(content: &[Content]) -> String {
    let mut parts = Vec::new();
    for c in content {
        match c {
            Content::Text { text } => parts.push(text.clone()),
            Content::Image { data, mime_type } => parts.push(format!(
                "[image {} ({} bytes of base64) not shown]",
                mime_type.as_deref().unwrap_or("of unknown type"),
                data.len()
            )),
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_and_name_their_problem() {
        let f =
            parse_frame(br#"{"type":"hello","name":"x","version":"1","capabilities":["tools"]}"#)
                .unwrap();
        assert!(matches!(f, FromExt::Hello { ref name, .. } if name == "x"));
        let f = parse_frame(
            br#"{"type":"tool_result","id":7,"content":[{"type":"text","text":"hi"}]}"#,
        )
        .unwrap();
        assert_eq!(
            f,
            FromExt::ToolResult {
                id: "7".into(),
                content: vec![Content::Text { text: "hi".into() }],
                is_error: false
            }
        );
        assert!(parse_frame(b"nope").unwrap_err().contains("not JSON"));
        assert!(parse_frame(br#"{"x":1}"#)
            .unwrap_err()
            .contains("no string `type`"));
        assert!(parse_frame(br#"{"type":"warp"}"#)
            .unwrap_err()
            .contains("`warp`"));
        assert!(parse_frame(br#"{"type":"register_tool"}"#)
            .unwrap_err()
            .contains("register_tool"));
    }

    #[test]
    fn framer_splits_and_caps() {
        let mut f = Framer::default();
        assert_eq!(
            f.push(b"{\"a\":1}\n{\"b\"").unwrap(),
            vec![b"{\"a\":1}".to_vec()]
        );
        assert_eq!(f.push(b":2}\r\n\n").unwrap(), vec![b"{\"b\":2}".to_vec()]);
        let big = vec![b'x'; MAX_FRAME];
        assert!(f.push(&big).is_ok());
        assert!(f.push(b"x").unwrap_err().contains("4 MiB"));
        let mut f = Framer::default();
        let mut big = vec![b'x'; MAX_FRAME + 1];
        big.push(b'\n');
        assert!(f.push(&big).is_err());
    }
}
