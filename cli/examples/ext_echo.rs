//! A zot extension in Rust (protocol version 1): one `echo` tool that
//! returns its `text` argument, and an `/echo` command. Build with
//! `cargo build --example ext_echo` and point an `extension.json`'s `exec`
//! at the binary (copied into the extension's directory).

use std::io::{BufRead, Write};

use serde_json::{json, Value};

fn send(out: &mut impl Write, v: Value) {
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    send(
        &mut out,
        json!({"type": "hello", "name": "echo", "version": "1.0.0", "capabilities": ["tools"]}),
    );
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match msg["type"].as_str().unwrap_or("") {
            "hello_ack" => {
                send(
                    &mut out,
                    json!({"type": "register_tool", "name": "echo",
                           "description": "Return `text` as it is.",
                           "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
                );
                send(
                    &mut out,
                    json!({"type": "register_command", "name": "echo", "description": "echo the arguments"}),
                );
                send(&mut out, json!({"type": "ready"}));
            }
            "tool_call" => {
                let text = msg["args"]["text"].as_str().unwrap_or("").to_string();
                send(
                    &mut out,
                    json!({"type": "tool_result", "id": msg["id"],
                           "content": [{"type": "text", "text": format!("echo: {text}")}],
                           "is_error": false}),
                );
            }
            "command_invoked" => send(
                &mut out,
                json!({"type": "command_response", "id": msg["id"], "action": "show",
                       "text": msg["args"]}),
            ),
            "shutdown" => {
                send(&mut out, json!({"type": "shutdown_ack"}));
                break;
            }
            _ => {}
        }
    }
}
