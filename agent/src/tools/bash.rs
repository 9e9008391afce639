//! The `bash` tool: a command through the risk gate, then the OS sandbox;
//! a long output is cut to the budget and saved whole for `read`.

use super::*;

/// Save the whole output of call `call_id` for the model to read back:
/// a new 0600 file in the outputs directory of the session.
pub(super) fn save_output(env: &ToolEnv, call_id: &str, text: &str) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = env.side_dir.as_ref()?.join(OUTPUTS_DIR);
    let id: String = call_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    let id = if id.is_empty() {
        "call".to_string()
    } else {
        id
    };
    crate::home::private_dir(&dir).ok()?;
    for n in 0..100 {
        let name = if n == 0 {
            format!("{id}.txt")
        } else {
            format!("{id}-{n}.txt")
        };
        let p = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
        {
            Ok(mut f) => return f.write_all(text.as_bytes()).ok().map(|_| p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

pub(super) fn bash(
    env: &ToolEnv,
    a: &Value,
    call_id: &str,
    ui: &mut dyn Ui,
) -> Result<ToolOutput, ToolOutput> {
    let command = arg_str(a, "command")?;
    let mode = env.perms.bash();
    if mode == BashMode::None {
        return Err(fail(
            "bash is not permitted for this agent (permissions.bash.mode: none)",
        ));
    }
    let verdict = deps::gate(command, mode, &env.perms.bash_allow);
    let reasons = verdict.reasons.join("; ");
    match verdict.decision {
        GateDecision::Allow => {}
        GateDecision::Deny => return Err(fail(format!("refused by the risk gate: {reasons}"))),
        GateDecision::Ask => {
            if !env.interactive {
                return Err(fail(format!(
                    "the risk gate wants confirmation ({reasons}) and there is no terminal to ask on: refused"
                )));
            }
            if !ui.confirm(
                &format!("Agent wants to run: {command}\n  risk gate: {reasons}"),
                "Allow?",
            ) {
                return Err(fail("the user declined this command"));
            }
        }
    }
    let timeout = match a.get("timeout").and_then(Value::as_f64) {
        Some(t) if t > 0.0 => Duration::from_secs_f64(t).min(BASH_TIMEOUT_MAX),
        Some(_) => return Err(fail("timeout must be a positive number of seconds")),
        None => BASH_TIMEOUT,
    };
    let shell = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let argv = vec![shell.to_string(), "-c".to_string(), command.to_string()];
    let policy = env
        .policy
        .as_ref()
        .map_err(|e| fail(format!("could not run the command: {e}")))?;
    let out = deps::run_sandboxed(
        policy,
        &argv,
        &deps::RunLimits {
            timeout,
            max_bytes: BASH_CAPTURE,
            backend: env.backend.as_deref(),
            cancel: env.cancel.as_ref(),
            live_output: env.live_output.clone(),
            index: env.index.as_ref(),
        },
    )
    .map_err(|e| {
        fail(format!(
            "could not run the command: {}",
            crate::ui::error_chain(&e)
        ))
    })?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    if out.truncated {
        text.push_str(&format!("\n[output truncated at {} bytes]", BASH_CAPTURE));
    }
    // Repositories the command created are renamed aside (git on the host
    // would run their hooks): the model is told, so it does not retry.
    for n in out.report.notes.iter().filter(|n| {
        matches!(
            n,
            zot_supervisor::Note::Quarantined { .. }
                | zot_supervisor::Note::ScanIncomplete { .. }
                | zot_supervisor::Note::IndexFallback { .. }
        )
    }) {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[zot: {n}]"));
    }
    let budget = if env.output_tokens == 0 {
        MODEL_OUTPUT_TOKENS
    } else {
        env.output_tokens
    };
    let mut full_output = None;
    if crate::context::text_tokens(&text) > budget {
        full_output = save_output(env, call_id, &text);
    }
    let full_name = full_output.as_ref().map(|p| p.display().to_string());
    let (shown, _) = cap(&text, budget, full_name.as_deref());
    let ms = out.duration.as_millis() as u64;
    let status = if out.cancelled {
        format!("cancelled (exit code {})", out.exit_code)
    } else if out.timed_out {
        format!(
            "timed out after {} s (exit code {})",
            timeout.as_secs_f64(),
            out.exit_code
        )
    } else {
        format!("exit code {}", out.exit_code)
    };
    let mut content = format!("{status}, {ms} ms\n{shown}");
    // The model learns why a connection failed (a 403 alone says little).
    for r in out.proxy.iter().filter(|r| r.reason.is_some()) {
        content.push_str(&format!(
            "\n[network: {}:{} {}: {}]",
            r.host.as_deref().unwrap_or("?"),
            r.port.map_or("?".to_string(), |p| p.to_string()),
            serde_json::to_value(r.decision)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            r.reason.as_deref().unwrap_or("")
        ));
    }
    Ok(ToolOutput {
        content,
        is_error: out.exit_code != 0 || out.timed_out || out.cancelled,
        exit_code: Some(out.exit_code),
        duration_ms: Some(ms),
        full_output,
        network: out
            .proxy
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect(),
    })
}
