//! The `write` tool: a whole file in the `fs.write` scopes.

use super::*;

pub(super) fn write(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let s = locate(env, arg_str(a, "path")?, true)?;
    let content = arg_str(a, "content")?;
    let canon = crate::perms::canonical_prefix(&s.full);
    if env.private(&canon) {
        return Err(fail(format!(
            "permission denied: {} is zot's private state",
            s.full.display()
        )));
    }
    // Before anything is created (the opened file is checked again).
    env.check_protected(&canon, &s)?;
    let mut f = fsscope::open_write(&s, false).map_err(|e| io_fail("write", &s, e))?;
    env.check_fd(&f, &s)?;
    env.check_writable(&f, &s)?;
    f.set_len(0).map_err(|e| io_fail("write", &s, e))?;
    f.write_all(content.as_bytes())
        .map_err(|e| io_fail("write", &s, e))?;
    Ok(ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        s.full.display()
    )))
}
