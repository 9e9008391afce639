//! The allowlist: program names the gate can name exactly, and whether
//! a program is listed.

use crate::gate::word::Word;
use crate::gate::{Ctx, ParsedCommand};

/// Directories whose programs may match the allowlist by their basename.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Is `prog` something the gate can name exactly?
pub(crate) fn check_program_name(prog: &Word) -> Result<(), String> {
    if prog.dynamic {
        return Err(format!("program name `{}` depends on expansion", prog.text));
    }
    let t = prog.text.as_str();
    if prog.pattern && t != "[" {
        return Err(format!(
            "program name `{t}` contains glob, brace or tilde characters"
        ));
    }
    if t.is_empty() {
        return Err("empty program name".into());
    }
    if !t.is_ascii() {
        return Err(format!(
            "program name `{t}` contains non-ASCII characters (look-alike letters?)"
        ));
    }
    if let Some(c) = t
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._+-/@:%,[".contains(*c)))
    {
        return Err(format!(
            "program name `{}` contains `{}`",
            t.escape_debug(),
            c.escape_debug()
        ));
    }
    Ok(())
}

/// May `name` run in allowlist mode?
fn listed(allow: &[String], name: &str) -> Result<(), String> {
    if name == "cd" {
        return Ok(());
    }
    let base = if name.contains('/') {
        let (dir, base) = name.rsplit_once('/').unwrap_or(("", name));
        let dir = if dir.is_empty() { "/" } else { dir };
        if !SYSTEM_BIN_DIRS.contains(&dir) {
            return Err(format!(
                "`{name}` is not a plain program name or a program in a system bin directory"
            ));
        }
        base
    } else {
        name
    };
    if allow.iter().any(|a| a == base) {
        Ok(())
    } else {
        Err(format!("`{base}` is not in the allowlist"))
    }
}

pub(crate) fn check_wrapper_listed(ctx: &mut Ctx, name: &str) {
    if ctx.allowlist() {
        if let Err(e) = listed(ctx.allow, name) {
            ctx.restrict(e);
        }
    }
}

pub(crate) fn check_listed(ctx: &mut Ctx, cmd: &ParsedCommand) {
    if ctx.allowlist() {
        if let Err(e) = listed(ctx.allow, &cmd.program) {
            ctx.restrict(e);
        }
    }
}
