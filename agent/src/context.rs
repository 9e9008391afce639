//! Long conversations and the model's context window: token accounting,
//! the compaction plan (what is summarized, what is kept), the summary
//! request, and the tool-output budget.
//!
//! Accounting: the provider's reported usage of the last response (input
//! plus output tokens: the whole conversation up to that answer) plus an
//! estimate (4 bytes a token) of what came after it; never less than the
//! estimate of the whole conversation (a server that reports too little,
//! or nothing, does not make zot send more than fits).
//!
//! Compaction: everything but the most recent turns is summarized by a
//! separate request that offers no tools; the history becomes the summary
//! (one user message) and the recent turns. The cut is never between a
//! tool call and its result: the kept part starts at a user or assistant
//! message, so every kept result has its call. A conversation too large
//! for one summary request is summarized in parts, each part's summary
//! carried into the next.

use zot_policy::config::ContextSettings;

use crate::message::{Message, ToolCall};

/// The first line of the message a compaction leaves in place of what it
/// summarized.
pub const SUMMARY_HEADER: &str =
    "[zot: the earlier conversation was compacted; this is its summary]";

/// Tokens kept for the answer on top of the model's output limit.
const MARGIN: u64 = 1024;
/// The output limit assumed when the model's is unknown.
const DEFAULT_MAX_OUTPUT: u64 = 4096;
/// Default `keep_recent_tokens`.
const KEEP_RECENT: u64 = 20_000;
/// Default `tool_output_tokens` (16 KiB of text).
const TOOL_OUTPUT: u64 = 4096;
/// A message's share of the request besides its text (role, framing).
const PER_MESSAGE: u64 = 8;

/// The numbers one request is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The context window in effect (the catalog's or config's, or less
    /// when a server's refusal showed it is smaller); `None`: unknown.
    pub window: Option<u64>,
    /// Compact before a request passes `window - reserve`.
    pub reserve: u64,
    /// Tokens of recent turns a compaction keeps verbatim.
    pub keep_recent: u64,
    /// Most tokens of one tool result shown to the model.
    pub tool_output: u64,
    /// Longest summary asked for.
    pub summary: u64,
    /// `[context] auto_compact`.
    pub auto: bool,
}

impl Limits {
    /// The limits for a model with `window` and `max_output`, under the
    /// user's settings. Shares of a small window bound every default, so
    /// an 8,000-token model still has room for a summary and a turn.
    pub fn new(s: &ContextSettings, window: Option<u64>, max_output: Option<u64>) -> Limits {
        let quarter = window.map(|w| w / 4);
        let reserve = s.reserve_tokens.unwrap_or_else(|| {
            let r = max_output.unwrap_or(DEFAULT_MAX_OUTPUT) + MARGIN;
            quarter.map_or(r, |q| r.min(q))
        });
        let room = window.map(|w| w.saturating_sub(reserve));
        let keep_recent = s.keep_recent_tokens.unwrap_or(KEEP_RECENT);
        let keep_recent = room.map_or(keep_recent, |r| keep_recent.min(r / 3));
        let tool_output = s.tool_output_tokens.unwrap_or(TOOL_OUTPUT);
        let tool_output = quarter.map_or(tool_output, |q| tool_output.min(q.max(64)));
        let summary = window.map_or(4096, |w| (w / 8).clamp(256, 4096));
        Limits {
            window,
            reserve,
            keep_recent,
            tool_output,
            summary,
            auto: s.auto_compact.unwrap_or(true),
        }
    }

    /// Tokens a request may hold (`window - reserve`), when the window is
    /// known.
    pub fn threshold(&self) -> Option<u64> {
        self.window.map(|w| w.saturating_sub(self.reserve))
    }
}

/// Estimated tokens of a text.
pub fn text_tokens(s: &str) -> u64 {
    crate::message::estimate_tokens(s)
}

fn value_len(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 6,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(value_len).sum::<usize>() + 2 + a.len(),
        Value::Object(o) => {
            o.iter()
                .map(|(k, v)| k.len() + 4 + value_len(v))
                .sum::<usize>()
                + 2
        }
    }
}

fn call_tokens(c: &ToolCall) -> u64 {
    ((c.id.len() + c.name.len() + value_len(&c.arguments)) as u64).div_ceil(4) + PER_MESSAGE
}

/// Estimated tokens of one message as sent.
pub fn message_tokens(m: &Message) -> u64 {
    PER_MESSAGE
        + match m {
            Message::User { content } => text_tokens(content),
            Message::Assistant {
                content,
                tool_calls,
                thinking,
            } => {
                text_tokens(content)
                    + tool_calls.iter().map(call_tokens).sum::<u64>()
                    + thinking
                        .iter()
                        .map(|t| {
                            text_tokens(&t.text)
                                + text_tokens(&t.signature)
                                + t.redacted.as_deref().map_or(0, text_tokens)
                        })
                        .sum::<u64>()
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => text_tokens(content) + text_tokens(tool_call_id),
        }
}

/// Estimated tokens of the tool definitions sent with every request.
pub fn tools_tokens(tools: &[crate::tools::ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            ((t.name.len() + t.description.len() + value_len(&t.parameters)) as u64).div_ceil(4)
                + PER_MESSAGE
        })
        .sum()
}

/// What the conversation holds, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anchor {
    /// Messages in the history when the last response was recorded.
    pub len: usize,
    /// Its reported input + output tokens.
    pub tokens: u64,
}

/// Tokens of a request with `system`, `tools_est` and `history`: the last
/// reported usage (`anchor`) plus an estimate of the messages after it,
/// never below the estimate of everything.
pub fn conversation_tokens(
    system: &str,
    tools_est: u64,
    history: &[Message],
    anchor: Option<Anchor>,
) -> u64 {
    let est_all = text_tokens(system)
        + PER_MESSAGE
        + tools_est
        + history.iter().map(message_tokens).sum::<u64>();
    match anchor.filter(|a| a.len <= history.len() && a.tokens > 0) {
        Some(a) => {
            let after: u64 = history[a.len..].iter().map(message_tokens).sum();
            est_all.max(a.tokens + after)
        }
        None => est_all,
    }
}

/// Whether `m` is the summary a compaction left.
pub fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User { content } if content.starts_with(SUMMARY_HEADER))
}

/// Where to cut `history` for a compaction: `history[..cut]` is
/// summarized, `history[cut..]` kept. The kept part starts at a user or
/// assistant message (never at a tool result), is at most `keep_recent`
/// tokens unless its last turn alone is larger (a turn is never split),
/// and something other than an earlier summary is left to summarize.
/// `None`: nothing to compact.
pub fn cut_point(history: &[Message], keep_recent: u64) -> Option<usize> {
    let first_real = history.iter().position(|m| !is_summary(m))?;
    let boundary = |i: usize| !matches!(history[i], Message::Tool { .. });
    let mut kept = 0u64;
    let mut best: Option<usize> = None;
    for i in (first_real + 1..history.len()).rev() {
        kept += message_tokens(&history[i]);
        if !boundary(i) {
            continue;
        }
        if best.is_none() || kept <= keep_recent {
            best = Some(i);
        }
        if kept > keep_recent {
            break;
        }
    }
    best
}

/// Keep the head and tail of `s` within `max_tokens`, cut at line ends
/// where it can, with a `... N lines (M tokens) omitted ...` marker naming
/// where the whole text is (`full`). The second value says whether it cut.
pub fn head_tail(s: &str, max_tokens: u64, full: Option<&str>) -> (String, bool) {
    let max = (max_tokens as usize).saturating_mul(4);
    if s.len() <= max {
        return (s.to_string(), false);
    }
    let half = max / 2;
    let mut h = half;
    while !s.is_char_boundary(h) {
        h -= 1;
    }
    // Prefer a line end, when one is near.
    if let Some(nl) = s[..h].rfind('\n').filter(|&nl| nl >= h / 2) {
        h = nl + 1;
    }
    let mut t = s.len() - half;
    while !s.is_char_boundary(t) {
        t += 1;
    }
    if let Some(nl) = s[t..].find('\n').filter(|&nl| nl < half / 2) {
        t += nl + 1;
    }
    let t = t.max(h);
    let omitted = &s[h..t];
    let lines = omitted.matches('\n').count();
    let where_ = full
        .map(|p| {
            format!("; the whole output is in {p}: read it with the `read` tool and offset/limit")
        })
        .unwrap_or_default();
    (
        format!(
            "{}\n[... {lines} lines ({} tokens) omitted{where_} ...]\n{}",
            &s[..h],
            text_tokens(omitted),
            &s[t..]
        ),
        true,
    )
}

/// Cut the tool results of `kept` longer than `max_tokens` (head and
/// tail): a result kept by a compaction must fit the window as zot now
/// knows it, which may be smaller than when the result came.
pub fn cap_results(kept: &mut [Message], max_tokens: u64) {
    for m in kept {
        if let Message::Tool { content, .. } = m {
            if text_tokens(content) > max_tokens {
                *content = head_tail(content, max_tokens, None).0;
            }
        }
    }
}

/// The system prompt of a summary request.
pub const SUMMARY_SYSTEM: &str = "You summarize the conversation of a coding agent with its user, so the agent can go on from your summary alone: the conversation itself will be gone. You have no tools; answer with the summary only.\n\nUse exactly these sections, each a short list:\n## Goal\nWhat the user asked for, in their words where it matters.\n## Constraints\nRequirements, preferences and limits the user or the environment set.\n## Progress\nWhat was done, what was found (files read, commands run, results).\n## Decisions\nWhat was decided, and why.\n## Next steps\nWhat remains, in order.\n## Critical context\nEvery fact the rest of the work depends on, verbatim: exact values, names, paths, identifiers, numbers, error messages, and anything the user asked to remember.\n\nBe concise, but never drop a fact from Critical context.";

/// One message as transcript text for a summary request, capped at
/// `max_tokens` (head and tail).
pub fn transcript_entry(m: &Message, max_tokens: u64) -> String {
    let body = match m {
        Message::User { content } if is_summary(m) => {
            format!("[summary of an earlier part]\n{content}")
        }
        Message::User { content } => format!("[user]\n{content}"),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut s = String::from("[assistant]");
            if !content.is_empty() {
                s.push('\n');
                s.push_str(content);
            }
            for c in tool_calls {
                s.push_str(&format!("\n[tool call {} {}]", c.name, c.arguments));
            }
            s
        }
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => format!(
            "[tool result {name}{}]\n{content}",
            if *is_error { ", error" } else { "" }
        ),
    };
    head_tail(&body, max_tokens, None).0
}

/// Split `msgs` into transcript parts of at most `part_tokens` each (a
/// message larger than that alone is cut to fit).
pub fn transcript_parts(msgs: &[Message], part_tokens: u64) -> Vec<String> {
    let part_tokens = part_tokens.max(64);
    let mut parts = Vec::new();
    let mut cur = String::new();
    for m in msgs {
        let e = transcript_entry(m, part_tokens.saturating_sub(16));
        if !cur.is_empty() && text_tokens(&cur) + text_tokens(&e) + 1 > part_tokens {
            parts.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push_str("\n\n");
        }
        cur.push_str(&e);
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// The user message of one summary request.
pub fn summary_request(
    previous: Option<&str>,
    part: &str,
    part_no: usize,
    parts: usize,
    instructions: Option<&str>,
    max_tokens: u64,
) -> String {
    let mut s = String::new();
    if let Some(p) = previous {
        s.push_str("The summary of the conversation before this part:\n<summary>\n");
        s.push_str(p);
        s.push_str("\n</summary>\n\n");
    }
    if parts > 1 {
        s.push_str(&format!(
            "The conversation continues (part {part_no} of {parts}):\n"
        ));
    } else {
        s.push_str("The conversation:\n");
    }
    s.push_str("<conversation>\n");
    s.push_str(part);
    s.push_str("\n</conversation>\n\n");
    s.push_str(&format!(
        "Write the summary of everything above{}, in at most about {max_tokens} tokens, with the sections Goal, Constraints, Progress, Decisions, Next steps and Critical context.",
        if previous.is_some() { ", the earlier summary included" } else { "" }
    ));
    if let Some(i) = instructions.filter(|i| !i.trim().is_empty()) {
        s.push_str("\nThe user's instructions for this summary: ");
        s.push_str(i.trim());
    }
    s
}

/// The message that replaces the summarized part: the summary and, when
/// the cut fell inside a turn, that turn's request verbatim (capped).
pub fn summary_message(summary: &str, current_request: Option<&str>, cap: u64) -> Message {
    let mut content = format!("{SUMMARY_HEADER}\n\n{}", summary.trim());
    if let Some(r) = current_request {
        content.push_str("\n\nThe user's current request, verbatim:\n");
        content.push_str(&head_tail(r, cap, None).0);
    }
    Message::User { content }
}

/// The largest context window a refusal's message names (`maximum context
/// length is 8192 tokens`, `prompt is too long: 9000 tokens > 8000
/// maximum`, `context size (8192 tokens)`), when it names one.
pub fn window_in_refusal(message: &str) -> Option<u64> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(?i)(?:maximum context length is|context (?:size|window|length)(?: is| of)?[ (:]*|> *)([0-9][0-9,_]*)|([0-9][0-9,_]*) *(?:tokens? *)?maximum",
        )
        .expect("valid regex")
    });
    re.captures_iter(message)
        .filter_map(|c| c.get(1).or(c.get(2)))
        .filter_map(|m| m.as_str().replace([',', '_'], "").parse::<u64>().ok())
        .filter(|n| *n >= 256)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(s: &str) -> Message {
        Message::User { content: s.into() }
    }
    fn call(id: &str) -> Message {
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: json!({"path": "x"}),
            }],
            thinking: vec![],
        }
    }
    fn result(id: &str, n: usize) -> Message {
        Message::Tool {
            tool_call_id: id.into(),
            name: "read".into(),
            content: "x".repeat(n),
            is_error: false,
        }
    }

    #[test]
    fn limits_scale_with_the_window() {
        let d = ContextSettings::default();
        let l = Limits::new(&d, Some(8000), None);
        assert_eq!((l.reserve, l.threshold()), (2000, Some(6000)));
        assert_eq!(
            (l.keep_recent, l.tool_output, l.summary),
            (2000, 2000, 1000)
        );
        let l = Limits::new(&d, Some(200_000), Some(64_000));
        assert_eq!(l.reserve, 50_000);
        assert_eq!((l.keep_recent, l.tool_output), (20_000, 4096));
        let l = Limits::new(&d, None, None);
        assert_eq!((l.threshold(), l.tool_output), (None, 4096));
        let s = ContextSettings {
            reserve_tokens: Some(100),
            keep_recent_tokens: Some(50),
            tool_output_tokens: Some(10_000),
            auto_compact: Some(false),
        };
        let l = Limits::new(&s, Some(8000), Some(4000));
        assert_eq!(
            (l.reserve, l.keep_recent, l.tool_output, l.auto),
            (100, 50, 2000, false)
        );
    }

    #[test]
    fn the_cut_never_splits_a_call_from_its_result() {
        let h = vec![
            user("go"),
            call("a"),
            result("a", 4000),
            call("b"),
            result("b", 4000),
            call("c"),
            result("c", 400),
        ];
        // Room for the last call and result only.
        assert_eq!(cut_point(&h, 200), Some(5));
        // The last turn is kept even when it alone is over the budget.
        assert_eq!(cut_point(&h, 10), Some(5));
        // Room for two: still cut at an assistant message.
        assert_eq!(cut_point(&h, 1200), Some(3));
        for keep in [0, 10, 100, 1000, 2000, 5000, 100_000] {
            if let Some(c) = cut_point(&h, keep) {
                assert!(!matches!(h[c], Message::Tool { .. }), "{keep}: {c}");
                assert!(c >= 1);
            }
        }
        // A summary alone before the last turn: nothing to compact.
        let s = summary_message("facts", None, 100);
        assert_eq!(cut_point(&[s.clone(), call("a"), result("a", 10)], 0), None);
        assert_eq!(cut_point(&[user("only")], 0), None);
        assert_eq!(
            cut_point(&[s, user("x"), call("a"), result("a", 10)], 0),
            Some(2)
        );
    }

    #[test]
    fn accounting_uses_reported_usage_but_never_less_than_the_estimate() {
        let h = vec![user("hello"), call("a"), result("a", 4000)];
        let est = conversation_tokens("sys", 0, &h, None);
        assert!(est > 1000 && est < 1100, "{est}");
        let a = Anchor {
            len: 2,
            tokens: 5000,
        };
        assert_eq!(
            conversation_tokens("sys", 0, &h, Some(a)),
            5000 + message_tokens(&h[2])
        );
        let low = Anchor { len: 2, tokens: 39 };
        assert_eq!(conversation_tokens("sys", 0, &h, Some(low)), est);
    }

    #[test]
    fn head_tail_marker() {
        let s: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (c, cut) = head_tail(&s, 100, Some("/s/out.txt"));
        assert!(
            cut && c.starts_with("line 0\n") && c.ends_with("line 999\n"),
            "{c}"
        );
        assert!(
            c.contains("lines (")
                && c.contains("tokens) omitted; the whole output is in /s/out.txt")
        );
        assert!(text_tokens(&c) < 160, "{}", text_tokens(&c));
        assert_eq!(head_tail("short", 100, None), ("short".into(), false));
    }

    #[test]
    fn kept_results_are_cut_to_the_budget() {
        let mut kept = vec![call("a"), result("a", 40_000), user(&"u".repeat(40_000))];
        cap_results(&mut kept, 1000);
        assert!(message_tokens(&kept[1]) < 1100);
        assert_eq!(message_tokens(&kept[2]), 10_008);
    }

    #[test]
    fn parts_fit() {
        let msgs: Vec<Message> = (0..20).map(|i| result(&i.to_string(), 2000)).collect();
        let parts = transcript_parts(&msgs, 1200);
        assert!(parts.len() >= 10);
        assert!(parts.iter().all(|p| text_tokens(p) <= 1200));
        let big = transcript_parts(&[result("x", 2_000_000)], 1000);
        assert_eq!(big.len(), 1);
        assert!(text_tokens(&big[0]) <= 1100);
    }

    #[test]
    fn windows_named_in_refusals() {
        assert_eq!(window_in_refusal("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."), Some(8192));
        assert_eq!(
            window_in_refusal("prompt is too long: 9000 tokens > 8000 maximum"),
            Some(8000)
        );
        assert_eq!(
            window_in_refusal("the request exceeds the available context size (8,192 tokens)"),
            Some(8192)
        );
        assert_eq!(window_in_refusal("request entity too large"), None);
    }
}
