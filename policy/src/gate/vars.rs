//! Environment variables: which ones are known to be inert (allowlist mode
//! lets only those be set before a command), and which ones make an allowed
//! program run another program (ask mode asks about those).
//!
//! The rule generalises by the name: programs read variables named after
//! what they do with them (`RUSTC_WRAPPER`, `GIT_SSH_COMMAND`,
//! `RSYNC_CONNECT_PROG`, `PIP_PYTHON`, `GOFLAGS`, `PYTEST_ADDOPTS`, ...),
//! and a variable the gate does not know is not trusted in allowlist mode.

/// Variables that change only how a program formats, logs or localises
/// its output, or how many threads it uses: never which code runs.
const INERT: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "CI",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_TEST_THREADS",
    "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK",
    "COLUMNS",
    "LINES",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "GOOS",
    "GOARCH",
    "GOMAXPROCS",
    "GOGC",
    "CGO_ENABLED",
    "NODE_ENV",
    "DEBIAN_FRONTEND",
    "SOURCE_DATE_EPOCH",
    "GREP_COLOR",
    "GREP_COLORS",
    "LS_COLORS",
    "TIME_STYLE",
    "QUOTING_STYLE",
    "POSIXLY_CORRECT",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "RAYON_NUM_THREADS",
    "OMP_NUM_THREADS",
    "TERM_PROGRAM",
];

/// Parts of a name that say the variable names a program, a command line,
/// a hook or options (which can name a program: `GOFLAGS=-toolexec=x`).
const MARKERS: &[&str] = &[
    "WRAPPER", "FLAGS", "COMMAND", "PROG", "SHELL", "EDITOR", "PAGER", "ASKPASS", "PYTHON", "OPTS",
    "HOOK",
];

/// May `name` be set before a command in allowlist mode?
pub(crate) fn is_inert(name: &str) -> bool {
    INERT.contains(&name) || (name.starts_with("LC_") && name.len() > 3 && is_plain(name))
}

fn is_plain(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// The marker in `name` that says it makes a program run another one.
pub(crate) fn marker(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    MARKERS.iter().copied().find(|m| match *m {
        // `*_PROGRESS*` is no program.
        "PROG" => upper
            .match_indices("PROG")
            .any(|(i, _)| !upper[i..].starts_with("PROGRESS")),
        m => upper.contains(m),
    })
}

/// Allowlist mode: why assigning `name` before a command is not understood.
pub(crate) fn not_inert_reason(name: &str) -> String {
    match marker(name) {
        Some(m) => format!(
            "assignment to `{name}`: a variable named `{m}` makes programs run other programs (allowlist mode sets only inert variables such as LANG, LC_*, TZ, TERM, NO_COLOR, CI, RUST_LOG)"
        ),
        None => format!(
            "assignment to `{name}`, which is not a variable the gate knows to be inert (allowlist mode sets only LANG, LC_*, TZ, TERM, NO_COLOR, CI, RUST_LOG and the like)"
        ),
    }
}

/// Ask mode: does setting `name` to `value` make an allowed program run a
/// command? `value` is None when it depends on an expansion.
pub(crate) fn runs_command(name: &str, value: Option<&str>) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let base = upper.split('[').next().unwrap_or(&upper);
    const GIT: &[&str] = &[
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_SSH",
        "GIT_EXTERNAL_DIFF",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_DIR",
        "GIT_PROXY_COMMAND",
    ];
    const EXACT: &[&str] = &[
        "VISUAL",
        "EDITOR",
        "PAGER",
        "MANPAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
        "SHELL",
        "TAR_OPTIONS",
        "RIPGREP_CONFIG_PATH",
        "NODE_OPTIONS",
        "JAVA_TOOL_OPTIONS",
        "PIP_CONFIG_FILE",
        "FCEDIT",
        "PERL5OPT",
        "RUBYOPT",
        "_JAVA_OPTIONS",
        "LESSKEY",
        "LESSKEYIN",
        "CARGO_HOME",
        "RUSTUP_TOOLCHAIN",
        "GOTOOLCHAIN",
    ];
    if GIT.contains(&base)
        || base.starts_with("GIT_CONFIG_KEY_")
        || base.starts_with("GIT_CONFIG_VALUE_")
        || EXACT.contains(&base)
    {
        return Some(format!(
            "setting `{name}` makes programs run other programs"
        ));
    }
    let names_program = [
        "WRAPPER",
        "COMMAND",
        "EDITOR",
        "PAGER",
        "ASKPASS",
        "HOOK",
        "RUNNER",
        "LAUNCHER",
        "_RSH",
        "_SHELL",
        "_PYTHON",
        "_INTERPRETER",
        "_LINKER",
    ]
    .iter()
    .any(|m| base.contains(m))
        || (marker(base) == Some("PROG"));
    if names_program {
        return Some(format!(
            "setting `{name}` names a program for another program to run"
        ));
    }
    // less runs `!` commands given as `+` start-up commands.
    if base == "LESS" && value.is_none_or(|v| v.contains('+') || v.contains('!')) {
        return Some(format!(
            "`{name}` gives less start-up commands, which can run programs"
        ));
    }
    // Option variables: ask when the options name a program.
    let options = ["FLAGS", "OPTS", "OPTIONS", "ARGS"]
        .iter()
        .any(|m| base.ends_with(m));
    if options {
        let says = match value {
            None => true,
            Some(v) => {
                let v = v.to_ascii_lowercase();
                [
                    "exec", "wrapper", "askpass", "shell", "command", "linker", "runner",
                    "--python", "-p ", "plugin", "-fplugin", "-specs", "load",
                ]
                .iter()
                .any(|w| v.contains(w))
                    || value.is_some_and(|v| v.split_whitespace().any(|w| w.starts_with("-B")))
            }
        };
        if says {
            return Some(format!(
                "`{name}` passes options that make a program run another program"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_names_and_markers() {
        for n in [
            "LANG",
            "LC_ALL",
            "LC_MESSAGES",
            "TZ",
            "NO_COLOR",
            "RUST_LOG",
        ] {
            assert!(is_inert(n), "{n}");
        }
        for n in [
            "RUSTC_WRAPPER",
            "GOFLAGS",
            "PIP_PYTHON",
            "LC_",
            "LC_a",
            "FOO",
            "PATH",
        ] {
            assert!(!is_inert(n), "{n}");
        }
        assert_eq!(marker("RSYNC_CONNECT_PROG"), Some("PROG"));
        assert_eq!(marker("CARGO_TERM_PROGRESS_WHEN"), None);
        assert_eq!(marker("GIT_SSH_COMMAND"), Some("COMMAND"));
        assert!(runs_command("GIT_CONFIG_KEY_0", Some("core.pager")).is_some());
        assert!(runs_command("GOFLAGS", Some("-toolexec=x")).is_some());
        assert!(runs_command("CFLAGS", Some("-O2 -g")).is_none());
        assert!(runs_command("LANG", Some("C")).is_none());
    }
}
