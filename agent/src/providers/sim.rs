//! The offline simulator model (`sim`): deterministic, no network.
//!
//! With a script (`--sim-script FILE`) it replays assistant turns in order:
//! either a JSON array of turns or `{"turns": [...]}`, each turn
//! `{"text": "...", "tool_calls": [{"name": "bash", "arguments": {...}}]}`.
//! When the script runs out it answers with an empty final message.
//!
//! Without a script it follows these rules on the latest message:
//! - after tool results: a final answer quoting each result
//!   (`<tool>: <content>` or `<tool> error: <content>`);
//! - a user message whose first line is `run: CMD` -> a `bash` call;
//!   `read: PATH` -> `read`; `write: PATH` with the following lines as the
//!   body -> `write`; `glob: PATTERN`, `grep: PATTERN`, `skill: NAME` -> those
//!   tools;
//! - anything else is echoed back as `echo: <message>`.

use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use super::{Cancel, Model, ModelEvent, ModelRequest, ProviderError};
use crate::message::{estimate_tokens, AssistantTurn, Message, ToolCall, Usage};
use crate::RunError;

#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Turns(Vec<ScriptTurn>),
    Object { turns: Vec<ScriptTurn> },
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ScriptTurn {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: serde_json::Value,
}

/// The simulator.
pub struct Simulator {
    script: Option<std::collections::VecDeque<ScriptTurn>>,
    calls: u64,
}

impl Simulator {
    /// The rule-based simulator.
    pub fn rules() -> Self {
        Simulator {
            script: None,
            calls: 0,
        }
    }

    /// A simulator replaying `path`.
    pub fn from_script(path: &Path) -> Result<Self, RunError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::io(format!("sim script {}", path.display()), e))?;
        let file: ScriptFile = serde_json::from_str(&text).map_err(|e| RunError::Model {
            what: format!("sim script {}", path.display()),
            source: Some(e.into()),
        })?;
        let turns = match file {
            ScriptFile::Turns(t) | ScriptFile::Object { turns: t } => t,
        };
        Ok(Simulator {
            script: Some(turns.into()),
            calls: 0,
        })
    }

    fn next_id(&mut self) -> String {
        self.calls += 1;
        format!("call_{}", self.calls)
    }
}

impl Model for Simulator {
    fn respond(
        &mut self,
        req: &ModelRequest,
        _cancel: &Cancel,
        sink: &mut dyn FnMut(ModelEvent),
    ) -> Result<AssistantTurn, ProviderError> {
        let messages = req.messages;
        let input: u64 = estimate_tokens(req.system)
            + messages
                .iter()
                .map(|m| match m {
                    Message::User { content }
                    | Message::Assistant { content, .. }
                    | Message::Tool { content, .. } => estimate_tokens(content),
                })
                .sum::<u64>();
        let mut turn = if self.script.is_some() {
            let next = self.script.as_mut().and_then(|s| s.pop_front());
            match next {
                None => AssistantTurn::default(),
                Some(t) => {
                    let calls = t
                        .tool_calls
                        .into_iter()
                        .map(|c| ToolCall {
                            id: c.id.unwrap_or_else(|| self.next_id()),
                            name: c.name,
                            arguments: c.arguments,
                        })
                        .collect();
                    AssistantTurn {
                        text: t.text,
                        tool_calls: calls,
                        ..Default::default()
                    }
                }
            }
        } else {
            self.rule_turn(messages)
        };
        turn.usage = Usage {
            input_tokens: input,
            output_tokens: estimate_tokens(&turn.text)
                + turn
                    .tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.arguments.to_string()))
                    .sum::<u64>(),
            ..Default::default()
        };
        if !turn.text.is_empty() {
            sink(ModelEvent::Text(&turn.text));
        }
        Ok(turn)
    }
}

impl Simulator {
    fn rule_turn(&mut self, messages: &[Message]) -> AssistantTurn {
        // Results of the latest tool calls -> a final answer quoting them.
        let trailing: Vec<&Message> = messages
            .iter()
            .rev()
            .take_while(|m| matches!(m, Message::Tool { .. }))
            .collect();
        if !trailing.is_empty() {
            let text = trailing
                .iter()
                .rev()
                .map(|m| match m {
                    Message::Tool {
                        name,
                        content,
                        is_error: true,
                        ..
                    } => format!("{name} error: {content}"),
                    Message::Tool { name, content, .. } => format!("{name}: {content}"),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            return AssistantTurn {
                text,
                ..Default::default()
            };
        }
        let last = messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        });
        let Some(msg) = last else {
            return AssistantTurn::default();
        };
        let (first, rest) = match msg.split_once('\n') {
            Some((a, b)) => (a, Some(b)),
            None => (msg, None),
        };
        let call = |name: &str, arguments: serde_json::Value| (name.to_string(), arguments);
        let parsed = if let Some(cmd) = first.strip_prefix("run:") {
            let mut cmd = cmd.trim().to_string();
            if let Some(r) = rest {
                cmd = format!("{cmd}\n{r}");
            }
            Some(call("bash", json!({ "command": cmd })))
        } else if let Some(p) = first.strip_prefix("read:") {
            Some(call("read", json!({ "path": p.trim() })))
        } else if let Some(p) = first.strip_prefix("write:") {
            Some(call(
                "write",
                json!({ "path": p.trim(), "content": rest.unwrap_or("") }),
            ))
        } else if let Some(p) = first.strip_prefix("glob:") {
            Some(call("glob", json!({ "pattern": p.trim() })))
        } else if let Some(p) = first.strip_prefix("grep:") {
            Some(call("grep", json!({ "pattern": p.trim() })))
        } else if let Some(p) = first.strip_prefix("skill:") {
            Some(call("skill", json!({ "name": p.trim() })))
        } else {
            None
        };
        match parsed {
            Some((name, arguments)) => {
                let id = self.next_id();
                AssistantTurn {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id,
                        name,
                        arguments,
                    }],
                    ..Default::default()
                }
            }
            None => AssistantTurn {
                text: format!("echo: {msg}"),
                ..Default::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One response to `messages`, no tools.
    fn reply(s: &mut Simulator, messages: &[Message]) -> AssistantTurn {
        let req = ModelRequest {
            system: "",
            messages,
            tools: &[],
            reasoning: None,
            max_output_tokens: None,
            stable_prefix: 0,
        };
        s.respond(&req, &Cancel::new().unwrap(), &mut |_| {})
            .unwrap()
    }

    fn user(s: &str) -> Message {
        Message::User { content: s.into() }
    }

    #[test]
    fn rules() {
        let mut s = Simulator::rules();
        let t = reply(&mut s, &[user("hello")]);
        assert_eq!(t.text, "echo: hello");
        let t = reply(&mut s, &[user("run: ls -l")]);
        assert_eq!(t.tool_calls[0].name, "bash");
        assert_eq!(t.tool_calls[0].arguments["command"], "ls -l");
        let t = reply(&mut s, &[user("write: a.txt\nline1\nline2")]);
        assert_eq!(t.tool_calls[0].arguments["content"], "line1\nline2");
        let msgs = vec![
            user("read: x"),
            Message::Assistant {
                content: String::new(),
                tool_calls: t.tool_calls.clone(),
                thinking: vec![],
            },
            Message::Tool {
                tool_call_id: "call_1".into(),
                name: "read".into(),
                content: "denied".into(),
                is_error: true,
            },
        ];
        let t = reply(&mut s, &msgs);
        assert_eq!(t.text, "read error: denied");
        assert!(t.tool_calls.is_empty());
    }

    #[test]
    fn script_replay() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        std::fs::write(&p, r#"[{"text":"a","tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},{"text":"b"}]"#).unwrap();
        let mut s = Simulator::from_script(&p).unwrap();
        let t = reply(&mut s, &[]);
        assert_eq!(
            (t.text.as_str(), t.tool_calls[0].id.as_str()),
            ("a", "call_1")
        );
        assert_eq!(reply(&mut s, &[]).text, "b");
        assert_eq!(reply(&mut s, &[]).text, "");
        std::fs::write(&p, r#"{"turns":[{"txt":"a"}]}"#).unwrap();
        assert!(Simulator::from_script(&p).is_err());
    }
}
