//! The `grep` tool: lines matching a regular expression, in a file or under
//! a directory of the `fs.read` scopes.

use super::*;

pub(super) fn grep(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = arg_str(a, "pattern")?;
    let re = regex::Regex::new(pattern).map_err(|e| fail(format!("grep pattern: {e}")))?;
    let filter = match a.get("glob").and_then(Value::as_str) {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| fail(format!("glob {g:?}: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let s = walk_base(env, a)?;
    let mut hits = Vec::new();
    let mut search = |name: String, data: &[u8]| {
        if data.contains(&0) {
            return true;
        }
        for (i, line) in String::from_utf8_lossy(data).lines().enumerate() {
            if re.is_match(line) {
                hits.push(format!("{name}:{}:{}", i + 1, line));
                if hits.len() >= 200 {
                    return false;
                }
            }
        }
        true
    };
    let single = fsscope::open_read(&s)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
    if let Some(mut f) = single {
        let data = read_capped(&mut f).map_err(|e| io_fail("grep", &s, e))?;
        search(s.full.display().to_string(), &data);
    } else {
        fsscope::walk(&s, |rel, fd| {
            if filter.as_ref().is_some_and(|g| !g.is_match(rel)) {
                return true;
            }
            if fsscope::fd_path(fd).is_none_or(|p| env.private(&p)) {
                return true;
            }
            let Ok(dup) = fd.try_clone() else { return true };
            let mut f = std::fs::File::from(dup);
            let Ok(data) = read_capped(&mut f) else {
                return true;
            };
            search(s.full.join(rel).display().to_string(), &data)
        })
        .map_err(|e| io_fail("grep", &s, e))?;
    }
    if hits.is_empty() {
        return Ok(ok("no matches"));
    }
    Ok(ok(cap(&hits.join("\n"), env.output_tokens, None).0))
}
