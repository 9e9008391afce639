//! The context window in the loop: each request is checked against it
//! (compacting first when it would not fit), a refusal as too long is
//! compacted and sent again once, `/compact` compacts on demand; and a
//! step's tool calls run (read-only ones concurrently). The rules are in
//! [`crate::context`].

use super::{provider_error, Runtime};
use crate::context::{self, Limits};
use crate::events::{Event, OutputMode};
use crate::message::{AssistantTurn, Message, ToolCall, Usage};
use crate::providers::{Cancel, Model, ModelEvent, ModelRequest, ProviderError};
use crate::session::Record;
use crate::tools;
use crate::ui::Ui;
use crate::RunError;

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// The next request would pass `window - reserve`.
    Threshold,
    /// The server refused the request as too long.
    Overflow,
    /// `/compact`.
    Manual,
}

impl Why {
    fn as_str(self) -> &'static str {
        match self {
            Why::Threshold => "threshold",
            Why::Overflow => "overflow",
            Why::Manual => "manual",
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, Copy)]
pub(super) struct Compacted {
    pub before: u64,
    pub after: u64,
}

/// Summary requests one compaction may have refused as too long (each
/// refusal shrinks the window zot assumes) before it gives up.
const SUMMARY_REFUSALS: u32 = 3;
/// The part size when the window is unknown.
const UNKNOWN_WINDOW_PART: u64 = 64_000;

/// Tools that only read: several calls of them in one step run at once.
fn read_only(call: &ToolCall) -> bool {
    matches!(call.name.as_str(), "read" | "glob" | "grep")
}

/// Summarize `msgs` (in parts when they do not fit one request) with
/// requests offering no tools. Returns the summary and the requests made;
/// a refusal as too long comes back as the error with the size sent.
fn summarize(
    model: &mut dyn Model,
    cancel: &Cancel,
    ui: &mut dyn Ui,
    turn: u32,
    msgs: &[Message],
    l: &Limits,
    instructions: Option<&str>,
) -> Result<(String, u32, Usage), (ProviderError, u64)> {
    let fixed = context::text_tokens(context::SUMMARY_SYSTEM) + 2 * l.summary + 256;
    let part = match l.window {
        Some(w) => w.saturating_sub(l.reserve).saturating_sub(fixed).max(256),
        None => UNKNOWN_WINDOW_PART,
    };
    let parts = context::transcript_parts(msgs, part);
    let mut summary: Option<String> = None;
    let mut requests = 0;
    let mut usage = Usage::default();
    for (i, p) in parts.iter().enumerate() {
        let text = context::summary_request(
            summary.as_deref(),
            p,
            i + 1,
            parts.len(),
            instructions,
            l.summary,
        );
        let sent = context::text_tokens(context::SUMMARY_SYSTEM) + context::text_tokens(&text);
        let messages = [Message::User { content: text }];
        let req = ModelRequest {
            system: context::SUMMARY_SYSTEM,
            messages: &messages,
            tools: &[],
            reasoning: None,
            max_output_tokens: Some(l.summary * 2),
            stable_prefix: 0,
        };
        requests += 1;
        let t = model
            .respond(&req, cancel, &mut |ev| {
                if let ModelEvent::Retry(n) = ev {
                    ui.event(&Event::Retry {
                        turn,
                        attempt: n.attempt,
                        max_attempts: n.max_attempts,
                        delay_ms: n.delay.as_millis() as u64,
                        reason: n.reason.clone(),
                    })
                }
            })
            .map_err(|e| (e, sent))?;
        usage += t.usage;
        let s = t.text.trim();
        summary = Some(if s.is_empty() {
            // No summary (a model that answered with tool calls only):
            // an excerpt of the part (its head and tail) stands in, after
            // the earlier summary, so the run goes on.
            let mut e = summary.take().unwrap_or_default();
            e.push_str("\n[the model wrote no summary of what follows; an excerpt of it]\n");
            e.push_str(&context::head_tail(p, l.summary, None).0);
            context::head_tail(&e, l.summary * 2, None).0
        } else {
            // A runaway answer is cut: the summary must stay small.
            context::head_tail(s, l.summary * 2, None).0
        });
    }
    Ok((summary.unwrap_or_default(), requests, usage))
}

/// The request of the turn in progress, when `history[..cut]` holds it
/// (as a user message, or carried in an earlier summary).
fn current_request(history: &[Message], cut: usize) -> Option<String> {
    const MARK: &str = "\n\nThe user's current request, verbatim:\n";
    let u = history
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))?;
    if u >= cut {
        return None;
    }
    let Message::User { content } = &history[u] else {
        return None;
    };
    if context::is_summary(&history[u]) {
        return content.split_once(MARK).map(|(_, r)| r.to_string());
    }
    Some(content.clone())
}

impl Runtime<'_> {
    /// The limits of the current model (its window narrowed by what a
    /// refusal showed).
    pub(super) fn limits(&self) -> Limits {
        let w = match (self.selection.model.context_window, self.learned_window) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Limits::new(
            &self.config.context,
            w,
            self.selection.model.max_output_tokens,
        )
    }

    /// Tokens of the next request.
    pub(super) fn context_tokens(&self) -> u64 {
        context::conversation_tokens(
            &self.system,
            context::tools_tokens(&self.env.tool_specs),
            &self.history,
            self.anchor,
        )
    }

    /// Before a request: set the tool-output budget; compact when the
    /// request would pass `window - reserve`.
    pub(super) fn fit(&mut self, turn: u32) -> Result<(), RunError> {
        let l = self.limits();
        self.env.output_tokens = l.tool_output;
        let Some(threshold) = l.threshold().filter(|_| l.auto) else {
            return Ok(());
        };
        if self.context_tokens() <= threshold {
            return Ok(());
        }
        self.compact(turn, Why::Threshold, None).map(|_| ())
    }

    fn failed(&self, e: ProviderError) -> RunError {
        match e {
            ProviderError::Cancelled => self.stopped(),
            e => provider_error(&self.selection.provider.name, e),
        }
    }

    /// Send the conversation. Refused as too long: compact, send once
    /// more, then fail with [`RunError::Context`].
    pub(super) fn ask(&mut self, turn: u32) -> Result<AssistantTurn, RunError> {
        let sent = self.context_tokens();
        let (status, message) = match self.request(turn) {
            Err(ProviderError::ContextLength { status, message }) => (status, message),
            r => return r.map_err(|e| self.failed(e)),
        };
        self.learn(sent, &message);
        let refused = ProviderError::ContextLength { status, message };
        if !self.limits().auto {
            return Err(RunError::Context(format!(
                "{refused} (about {sent} tokens sent); automatic compaction is off ([context] auto_compact = false): /compact shortens it"
            )));
        }
        if self.compact(turn, Why::Overflow, None)?.is_none() {
            return Err(RunError::Context(format!(
                "{refused} (about {sent} tokens sent), and no earlier turn is left to compact"
            )));
        }
        let again = self.context_tokens();
        match self.request(turn) {
            Err(ProviderError::ContextLength { status, message }) => {
                self.learn(again, &message);
                let refused = ProviderError::ContextLength { status, message };
                Err(RunError::Context(format!(
                    "{refused}, even after compacting it (about {again} tokens sent)"
                )))
            }
            r => r.map_err(|e| self.failed(e)),
        }
    }

    /// One model request of the turn, streamed to the front end.
    fn request(&mut self, turn: u32) -> Result<AssistantTurn, ProviderError> {
        let json = self.mode == OutputMode::Json;
        let stable = usize::from(self.history.first().is_some_and(context::is_summary));
        let req = ModelRequest {
            system: &self.system,
            messages: &self.history,
            tools: &self.env.tool_specs,
            reasoning: self.selection.reasoning,
            max_output_tokens: self.selection.model.max_output_tokens,
            stable_prefix: stable,
        };
        let out = &mut *self.ui;
        self.model.respond(&req, &self.cancel, &mut |ev| match ev {
            ModelEvent::Text(d) => out.event(&Event::TextDelta {
                turn,
                delta: d.to_string(),
            }),
            ModelEvent::Thinking(d) if json => out.event(&Event::ThinkingDelta {
                turn,
                delta: d.to_string(),
            }),
            ModelEvent::Thinking(_) => {}
            ModelEvent::Retry(n) => out.event(&Event::Retry {
                turn,
                attempt: n.attempt,
                max_attempts: n.max_attempts,
                delay_ms: n.delay.as_millis() as u64,
                reason: n.reason.clone(),
            }),
        })
    }

    /// A request of about `sent` tokens was refused as too long: the
    /// window is smaller than zot assumed. The refusal's own figure is
    /// taken when it names one below what was sent; otherwise three
    /// quarters of what was sent.
    fn learn(&mut self, sent: u64, message: &str) {
        let named = context::window_in_refusal(message).filter(|&n| n < sent);
        let mut w = named.unwrap_or(sent * 3 / 4).max(1024);
        if let Some(cur) = self.limits().window {
            w = w.min(cur);
        }
        self.learned_window = Some(w);
        self.env.output_tokens = self.limits().tool_output;
    }

    /// Replace everything but the recent turns with a summary. `None`:
    /// nothing to compact. A failure (or Ctrl-C) leaves the conversation
    /// and the session as they were.
    pub(super) fn compact(
        &mut self,
        turn: u32,
        why: Why,
        instructions: Option<&str>,
    ) -> Result<Option<Compacted>, RunError> {
        let before = self.context_tokens();
        let mut refusals = 0;
        let (cut, summary, requests, usage, l) = loop {
            let l = self.limits();
            let Some(cut) = context::cut_point(&self.history, l.keep_recent) else {
                return Ok(None);
            };
            match summarize(
                &mut *self.model,
                &self.cancel,
                &mut *self.ui,
                turn,
                &self.history[..cut],
                &l,
                instructions,
            ) {
                Ok((s, n, u)) => break (cut, s, n, u, l),
                Err((ProviderError::ContextLength { message, .. }, sent))
                    if refusals < SUMMARY_REFUSALS =>
                {
                    // Smaller parts, for the window the refusal showed.
                    refusals += 1;
                    self.learn(sent, &message);
                }
                Err((ProviderError::ContextLength { status, message }, sent)) => {
                    return Err(RunError::Context(format!(
                        "the summary request (about {sent} tokens) was refused as too long (HTTP {status}: {message})"
                    )))
                }
                Err((e, _)) => return Err(self.failed(e)),
            }
        };
        let current = current_request(&self.history, cut);
        let msg = context::summary_message(&summary, current.as_deref(), l.summary);
        let kept = self.history.len() - cut;
        let mut recent = self.history[cut..].to_vec();
        context::cap_results(&mut recent, l.tool_output);
        let after = context::conversation_tokens(
            &self.system,
            context::tools_tokens(&self.env.tool_specs),
            &recent,
            None,
        ) + context::message_tokens(&msg);
        // The summary requests cost tokens too: the session counts them.
        self.record_usage(turn, usage, after)?;
        if let Some(s) = &mut self.session {
            s.append(&Record::Compaction {
                turn,
                reason: why.as_str().into(),
                summary: msg.clone(),
                replaced: cut,
                kept,
                kept_cap: Some(l.tool_output),
                tokens_before: before,
                tokens_after: after,
            })?;
        }
        self.history.clear();
        self.history.push(msg);
        self.history.extend(recent);
        self.anchor = None;
        self.ui.event(&Event::Compaction {
            turn,
            reason: why.as_str(),
            tokens_before: before,
            tokens_after: after,
            replaced: cut,
            kept,
            requests,
            usage,
            context_window: l.window,
        });
        Ok(Some(Compacted { before, after }))
    }

    /// `/compact [instructions]`.
    pub(super) fn manual_compact(&mut self, instructions: Option<&str>) -> Result<(), RunError> {
        self.cancel.reset();
        match self.compact(self.turn, Why::Manual, instructions) {
            Ok(Some(c)) => self.ui.note(&format!(
                "compacted the conversation: about {} -> {} tokens",
                c.before, c.after
            )),
            Ok(None) => self.ui.note("nothing to compact yet"),
            Err(RunError::Cancelled) => self
                .ui
                .note("compaction cancelled; the conversation is unchanged"),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Run a step's tool calls and record their results in the model's
    /// order. Consecutive read-only calls (`read`, `glob`, `grep`) run
    /// concurrently; the others (bash, writes) one at a time.
    pub(super) fn run_tools(&mut self, turn: u32, calls: &[ToolCall]) -> Result<(), RunError> {
        let mut i = 0;
        while i < calls.len() {
            if self.cancel.is_cancelled() {
                self.abandon(&calls[i..], "the turn was cancelled")?;
                return Err(self.stopped());
            }
            let n = if read_only(&calls[i]) {
                calls[i..].iter().take_while(|c| read_only(c)).count()
            } else {
                1
            };
            // Extensions may block or rewrite a call; the tool checks the
            // final arguments (scopes, risk gate) as usual.
            let mut batch: Vec<ToolCall> = calls[i..i + n].to_vec();
            let blocked: Vec<Option<String>> = batch
                .iter_mut()
                .map(|c| self.ext.intercept_tool_call(c).err())
                .collect();
            let batch = &batch[..];
            let announce = |rt: &mut Self, call: &ToolCall| {
                rt.ui.event(&Event::ToolCall {
                    turn,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                rt.ext.event(
                    "tool_call",
                    serde_json::json!({"turn": turn, "tool_call_id": call.id, "name": call.name, "args": call.arguments}),
                );
            };
            let refused = |why: &String| tools::ToolOutput {
                content: why.clone(),
                is_error: true,
                ..Default::default()
            };
            // Each call's event comes just before its result (front ends
            // show one call at a time): a batch's calls are announced once
            // they all ran.
            let results: Vec<tools::ToolOutput> = if n == 1 {
                announce(self, &batch[0]);
                vec![match &blocked[0] {
                    Some(why) => refused(why),
                    None => match self.ext.call_tool(&batch[0], Some(&self.cancel)) {
                        // Within this request's tool-output budget too.
                        Some(mut r) if self.env.output_tokens > 0 => {
                            r.content = tools::cap(&r.content, self.env.output_tokens, None).0;
                            r
                        }
                        Some(r) => r,
                        None => tools::execute(&self.env, &batch[0], &mut *self.ui),
                    },
                }]
            } else {
                let env = &self.env;
                std::thread::scope(|s| {
                    let hs: Vec<_> = batch
                        .iter()
                        .zip(&blocked)
                        .map(|(c, b)| {
                            s.spawn(move || match b {
                                Some(why) => refused(why),
                                None => tools::execute(env, c, &mut crate::ui::NullUi),
                            })
                        })
                        .collect();
                    hs.into_iter()
                        .map(|h| {
                            h.join().unwrap_or_else(|_| tools::ToolOutput {
                                content: "the tool failed unexpectedly".into(),
                                is_error: true,
                                ..Default::default()
                            })
                        })
                        .collect()
                })
            };
            for (call, r) in batch.iter().zip(results) {
                if n > 1 {
                    announce(self, call);
                }
                self.tool_done(turn, call, r)?;
            }
            i += n;
        }
        Ok(())
    }

    fn tool_done(
        &mut self,
        turn: u32,
        call: &ToolCall,
        mut r: tools::ToolOutput,
    ) -> Result<(), RunError> {
        // What the extensions said meanwhile (a crash, a notice) reaches
        // the model with this result.
        self.poll_extensions();
        if let Some(n) = self.ext_notices() {
            r.content.push_str(&format!("\n{n}"));
        }
        self.ui.event(&Event::ToolResult {
            turn,
            id: call.id.clone(),
            name: call.name.clone(),
            is_error: r.is_error,
            content: r.content.clone(),
            exit_code: r.exit_code,
            duration_ms: r.duration_ms,
            full_output: r.full_output.as_ref().map(|p| p.display().to_string()),
            network: r.network.clone(),
        });
        if let Some(s) = &mut self.session {
            if !r.network.is_empty() {
                s.append(&Record::Network {
                    turn,
                    tool_call_id: call.id.clone(),
                    records: r.network.clone(),
                })?;
            }
            if let Some(p) = &r.full_output {
                s.append(&Record::Output {
                    turn,
                    tool_call_id: call.id.clone(),
                    path: p.clone(),
                    bytes: std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
                })?;
            }
        }
        self.record(Message::Tool {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: r.content,
            is_error: r.is_error,
        })
    }
}
