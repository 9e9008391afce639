//! Variable assignments: which names make the shell, the loader or a
//! program run code.

use crate::gate::{vars, Ctx};

pub(crate) fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Environment variables whose value makes programs load or run other code.
fn is_dangerous_var(name: &str) -> bool {
    // Array subscripts (`a[$(cmd)]=`) are arithmetic: never harmless.
    let name = name.split('[').next().unwrap_or(name);
    const EXACT: &[&str] = &[
        "PATH",
        "IFS",
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "PS1",
        "PS2",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "CDPATH",
        "GLOBIGNORE",
        "HOME",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "LESSOPEN",
        "LESSCLOSE",
        "RIPGREP_CONFIG_PATH",
        "TAR_OPTIONS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GCONV_PATH",
        "NODE_OPTIONS",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "ZDOTDIR",
        "SHELL",
        "AWKPATH",
        "AWKLIBPATH",
        "TMPDIR",
        "HOSTALIASES",
        "RESOLV_HOST_CONF",
        "LOCPATH",
        "NLSPATH",
        "MALLOC_CHECK_",
        "GREP_OPTIONS",
        "EXINIT",
        "VIMINIT",
        "MYVIMRC",
        "INPUTRC",
        "TERMINFO",
        "TERMCAP",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "GIT_",
        "BASH_FUNC_",
        "PYTHON",
        "PERL",
        "RUBY",
        "XDG_",
        "LUA_",
        "NPM_CONFIG_",
    ];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Variables whose value the shell itself (or the dynamic loader) runs
/// or loads as code: dangerous in every mode.
fn is_code_var(name: &str) -> bool {
    let name = name.split('[').next().unwrap_or(name);
    matches!(
        name,
        "BASH_ENV"
            | "ENV"
            | "PS0"
            | "PS1"
            | "PS2"
            | "PS3"
            | "PS4"
            | "PROMPT_COMMAND"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "BASH_LOADABLES_PATH"
            | "LD_PRELOAD"
            | "LD_AUDIT"
            | "LD_LIBRARY_PATH"
            | "GCONV_PATH"
            | "BASH_CMDS"
            | "BASH_ALIASES"
    ) || name.starts_with("BASH_FUNC_")
}

/// An assignment of `name` (to `value`, None when it depends on an
/// expansion): in every mode, variables the shell or the loader runs as
/// code; in allowlist mode, every variable that is not known to be inert;
/// in ask mode, variables that make a program run another program.
pub(crate) fn check_assignment(ctx: &mut Ctx, name: &str, value: Option<&str>) {
    if is_code_var(name) {
        ctx.risky(format!(
            "assignment to `{name}` makes the shell or the loader run code"
        ));
    } else if ctx.allowlist() {
        let base = name.split('[').next().unwrap_or(name);
        if is_dangerous_var(name) {
            ctx.restrict(format!("assignment to `{name}` can change which code runs"));
        }
        if !vars::is_inert(base) {
            ctx.unknown(vars::not_inert_reason(name));
        }
    } else if let Some(why) = vars::runs_command(name, value) {
        ctx.danger(why);
    }
}
