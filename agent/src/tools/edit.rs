//! The `edit` tool: one exact replacement in a file in the `fs.write` scopes.

use super::*;

pub(super) fn edit(env: &ToolEnv, a: &Value) -> Result<ToolOutput, ToolOutput> {
    let s = locate(env, arg_str(a, "path")?, true)?;
    let old = arg_str(a, "old_string")?;
    let new = arg_str(a, "new_string")?;
    let all = a
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old.is_empty() {
        return Err(fail("old_string must not be empty"));
    }
    let mut f = fsscope::open_read(&s).map_err(|e| io_fail("edit", &s, e))?;
    env.check_fd(&f, &s)?;
    let data = read_capped(&mut f).map_err(|e| io_fail("edit", &s, e))?;
    let text = String::from_utf8(data)
        .map_err(|_| fail(format!("edit {}: not UTF-8 text", s.full.display())))?;
    let n = text.matches(old).count();
    if n == 0 {
        return Err(fail(format!(
            "edit {}: old_string not found",
            s.full.display()
        )));
    }
    if n > 1 && !all {
        return Err(fail(format!(
            "edit {}: old_string occurs {n} times; make it unique or set replace_all",
            s.full.display()
        )));
    }
    let out = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    env.check_protected(&crate::perms::canonical_prefix(&s.full), &s)?;
    let mut f = fsscope::open_write(&s, false).map_err(|e| io_fail("edit", &s, e))?;
    env.check_fd(&f, &s)?;
    env.check_writable(&f, &s)?;
    f.set_len(0).map_err(|e| io_fail("edit", &s, e))?;
    f.write_all(out.as_bytes())
        .map_err(|e| io_fail("edit", &s, e))?;
    Ok(ok(format!(
        "replaced {} occurrence(s) in {}",
        if all { n } else { 1 },
        s.full.display()
    )))
}
