//! The `glob` tool: paths under a scope that match a pattern.

use super::*;

pub(super) fn glob(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = arg_str(a, "pattern")?;
    let m = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| fail(format!("glob pattern {pattern:?}: {e}")))?
        .compile_matcher();
    let s = walk_base(env, a)?;
    let mut found = Vec::new();
    fsscope::walk(&s, |rel, fd| {
        if fsscope::fd_path(fd).is_none_or(|p| env.private(&p)) {
            return true;
        }
        if m.is_match(rel) {
            found.push(s.full.join(rel).display().to_string());
        }
        found.len() < 1000
    })
    .map_err(|e| io_fail("glob", &s, e))?;
    found.sort();
    if found.is_empty() {
        return Ok(ok("no files match"));
    }
    Ok(ok(found.join("\n")))
}
