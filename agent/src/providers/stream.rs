//! What the two wire-format parsers share: the incremental interface, the
//! framing decision (an event stream, or a plain JSON body from a server
//! that ignored `stream: true`), the size cap and tool-argument decoding.

use serde_json::Value;

use super::sse::{SseDecoder, SseEvent};
use crate::message::AssistantTurn;

/// Most bytes of model output (text, thinking and tool arguments) one
/// response may carry, and the longest event-stream line or JSON body:
/// beyond this the response is refused, so memory stays bounded.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// Streamed output, as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    Text(String),
    Thinking(String),
}

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The body ended before the response was complete (a cut stream).
    #[error("the response ended before it was complete ({0})")]
    Incomplete(String),
    /// Not the expected format.
    #[error("the response is not a valid {format} stream: {detail}")]
    Protocol {
        format: &'static str,
        detail: String,
    },
    /// An error the provider sent inside the stream.
    #[error("the provider reported {kind}: {message}")]
    Server {
        kind: String,
        message: String,
        retryable: bool,
    },
    #[error("the response is larger than {} MiB, zot stopped reading it", .0 >> 20)]
    TooLarge(usize),
}

/// An incremental response parser: bytes in (split anywhere), deltas out,
/// then the complete turn. The same bytes give the same turn (and the same
/// concatenated deltas) however they are split.
pub trait StreamParser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Delta>) -> Result<(), StreamError>;
    /// The response is complete (its end marker was read): nothing after
    /// it needs waiting for.
    fn is_complete(&self) -> bool;
    /// The body ended: the complete turn, or why it is not complete.
    fn finish(&mut self) -> Result<AssistantTurn, StreamError>;
}

enum State {
    /// Nothing but whitespace (or a BOM) seen yet.
    Undecided(Vec<u8>),
    Sse(SseDecoder),
    Json(Vec<u8>),
}

/// Decides between an event stream and a plain JSON body at the first
/// significant byte (`{` opens JSON; an event stream never starts with it).
pub struct Framing {
    state: State,
    format: &'static str,
}

impl Framing {
    pub fn new(format: &'static str) -> Self {
        Framing {
            state: State::Undecided(Vec::new()),
            format,
        }
    }

    /// Feed bytes: complete events are pushed to `events`, also when an
    /// error (a line over the cap) stops decoding after them.
    pub fn feed(&mut self, bytes: &[u8], events: &mut Vec<SseEvent>) -> Result<(), StreamError> {
        let mut rest: Option<Vec<u8>> = None;
        if let State::Undecided(pending) = &mut self.state {
            pending.extend_from_slice(bytes);
            let bom = "\u{feff}".as_bytes();
            let mut p: &[u8] = pending;
            loop {
                let before = p.len();
                p = p.trim_ascii_start();
                if let Some(r) = p.strip_prefix(bom) {
                    p = r;
                }
                if p.len() == before {
                    break;
                }
            }
            if p.is_empty() || bom.starts_with(p) {
                let keep = p.to_vec();
                *pending = keep;
                return Ok(());
            }
            let data = p.to_vec();
            if data[0] == b'{' {
                self.state = State::Json(Vec::new());
            } else {
                self.state = State::Sse(SseDecoder::new(MAX_RESPONSE_BYTES));
            }
            rest = Some(data);
        }
        let bytes = rest.as_deref().unwrap_or(bytes);
        match &mut self.state {
            State::Undecided(_) => unreachable!("decided above"),
            State::Sse(d) => d
                .feed(bytes, events)
                .map_err(|e| StreamError::TooLarge(e.0))?,
            State::Json(buf) => {
                if buf.len() + bytes.len() > MAX_RESPONSE_BYTES {
                    return Err(StreamError::TooLarge(MAX_RESPONSE_BYTES));
                }
                buf.extend_from_slice(bytes);
            }
        }
        Ok(())
    }

    /// The buffered JSON body, when the server sent one.
    pub fn json_body(&self) -> Option<&[u8]> {
        match &self.state {
            State::Json(b) => Some(b),
            _ => None,
        }
    }

    /// True when nothing at all was received.
    pub fn is_empty(&self) -> bool {
        matches!(&self.state, State::Undecided(_))
    }

    pub fn protocol(&self, detail: impl Into<String>) -> StreamError {
        StreamError::Protocol {
            format: self.format,
            detail: detail.into(),
        }
    }
}

/// Counts model output against [`MAX_RESPONSE_BYTES`].
#[derive(Default)]
pub struct Budget(usize);

impl Budget {
    pub fn take(&mut self, n: usize) -> Result<(), StreamError> {
        self.0 += n;
        if self.0 > MAX_RESPONSE_BYTES {
            return Err(StreamError::TooLarge(MAX_RESPONSE_BYTES));
        }
        Ok(())
    }
}

/// Tool arguments as the model streamed them: a JSON value when they
/// parse (empty means `{}`), else the raw text, which the runtime refuses
/// to execute.
pub fn decode_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// A short, single-line excerpt of untrusted text for an error message.
pub fn excerpt(s: &str) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if s.chars().count() > 200 {
        format!("{one}...")
    } else {
        one
    }
}

/// `v[key]` as a string, when it is one.
pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `v[key]` as a u64 (0 when absent or not a number).
pub fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Feed `chunks` to `p`: the concatenated text and thinking deltas, and
/// the result. (The unit tests and the fuzz targets check with it that the
/// result does not depend on how the bytes are split.)
pub fn feed_all(
    p: &mut dyn StreamParser,
    chunks: &[&[u8]],
) -> (String, String, Result<AssistantTurn, StreamError>) {
    let (mut text, mut thinking) = (String::new(), String::new());
    let mut out = Vec::new();
    for c in chunks {
        let r = p.feed(c, &mut out);
        for d in out.drain(..) {
            match d {
                Delta::Text(t) => text.push_str(&t),
                Delta::Thinking(t) => thinking.push_str(&t),
            }
        }
        if let Err(e) = r {
            return (text, thinking, Err(e));
        }
        if p.is_complete() {
            break;
        }
    }
    (text, thinking, p.finish())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Chunking invariance, shared by the two parsers' tests.
    use super::*;

    fn run(
        p: &mut dyn StreamParser,
        chunks: &[&[u8]],
    ) -> (String, String, Result<AssistantTurn, StreamError>) {
        feed_all(p, chunks)
    }

    /// The result of `bytes` fed whole equals the result split at every
    /// byte boundary, and one byte at a time.
    pub fn assert_split_invariant(
        make: &dyn Fn() -> Box<dyn StreamParser>,
        bytes: &[u8],
    ) -> Result<AssistantTurn, StreamError> {
        let whole = run(make().as_mut(), &[bytes]);
        if let Ok(t) = &whole.2 {
            // A plain JSON body streams nothing: its text comes at the end.
            if !whole.0.is_empty() {
                assert_eq!(whole.0, t.text, "deltas add up to the text");
            }
        }
        for i in 0..=bytes.len() {
            let split = run(make().as_mut(), &[&bytes[..i], &bytes[i..]]);
            assert_eq!(split, whole, "split at {i}");
        }
        let ones: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(make().as_mut(), &ones), whole, "byte by byte");
        whole.2
    }

    /// `bytes` cut at the (sorted, deduplicated) positions `cuts`.
    pub fn cut<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut out = Vec::new();
        let mut prev = 0;
        for c in at.into_iter().chain(std::iter::once(bytes.len())) {
            out.push(&bytes[prev..c]);
            prev = c;
        }
        out
    }

    /// Whole and cut at `cuts`: the same, complete turn.
    pub fn same_when_cut(make: &dyn Fn() -> Box<dyn StreamParser>, bytes: &[u8], cuts: &[usize]) {
        let whole = run(make().as_mut(), &[bytes]);
        assert!(whole.2.is_ok(), "{:?}", whole.2);
        assert_eq!(
            run(make().as_mut(), &cut(bytes, cuts)),
            whole,
            "cut at {cuts:?}"
        );
    }
}
