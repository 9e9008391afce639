//! The `read` tool: a file in the `fs.read` scopes (or a saved whole output of
//! this session), numbered lines, within the tool-output budget.

use super::*;

/// The saved whole output `raw` names, when it is one (a regular file
/// directly in this session's outputs directory, which zot alone writes).
pub(super) fn saved_output(env: &ToolEnv, raw: &str) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = env.side_dir.as_ref()?.join(OUTPUTS_DIR);
    let p = Path::new(raw);
    let name = p.file_name()?;
    if p.parent()? != dir || !name.to_str()?.ends_with(".txt") {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(name))
        .ok()?;
    f.metadata().ok().filter(|m| m.is_file())?;
    Some(f)
}

pub(super) fn read(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let raw = arg_str(a, "path")?;
    let (data, full) = match saved_output(env, raw) {
        Some(mut f) => (
            read_capped(&mut f).map_err(|e| fail(format!("read {raw}: {e}")))?,
            raw.to_string(),
        ),
        None => {
            let s = locate(env, raw, false)?;
            let mut f = fsscope::open_read(&s).map_err(|e| io_fail("read", &s, e))?;
            env.check_fd(&f, &s)?;
            let data = read_capped(&mut f).map_err(|e| io_fail("read", &s, e))?;
            (data, s.full.display().to_string())
        }
    };
    let text = String::from_utf8_lossy(&data);
    let offset = a.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
    let limit = a.get("limit").and_then(Value::as_u64).map(|l| l as usize);
    let lines: Vec<&str> = text
        .lines()
        .skip(offset - 1)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let mut out = lines.join("\n");
    if text.ends_with('\n') && limit.is_none() && !out.is_empty() {
        out.push('\n');
    }
    Ok(ok(cap(&out, env.output_tokens, Some(&full)).0))
}
