//! What kind of program a command runs: its name, and whether it runs
//! code (a shell, an interpreter, an editor) or evaluates names.

use crate::gate::wrappers;
use crate::gate::ParsedCommand;

pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Does this command run code it reads from stdin (a shell, an
/// interpreter, `make -f -`, `awk -f -`, a database shell)?
pub(crate) fn reads_code(cmd: &ParsedCommand) -> bool {
    let base = basename(&cmd.program);
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let stdin_file = |names: &[&str]| {
        cmd.argv.windows(2).any(|w| {
            names.contains(&w[0].as_str())
                && matches!(
                    w[1].as_str(),
                    "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0"
                )
        }) || cmd.argv.iter().any(|a| {
            names.iter().any(|n| {
                n.starts_with("--")
                    && a.strip_prefix(n)
                        .is_some_and(|v| matches!(v, "=-" | "=/dev/stdin"))
            }) || (a.starts_with("-f") && matches!(&a[2..], "-" | "/dev/stdin"))
        })
    };
    runs_code(base)
        || matches!(
            family,
            "tclsh"
                | "wish"
                | "expect"
                | "sqlite"
                | "irb"
                | "jshell"
                | "ghci"
                | "swipl"
                | "guile"
                | "racket"
                | "sbcl"
                | "R"
                | "Rscript"
                | "julia"
                | "gdb"
                | "octave"
                | "m4"
                | "dc"
                | "bc"
                | "ed"
                | "ex"
                | "vim"
                | "nvim"
        )
        || (matches!(family, "make" | "gmake" | "bmake")
            && stdin_file(&["-f", "--file", "--makefile"]))
        || (matches!(family, "awk" | "gawk" | "mawk" | "nawk" | "sed" | "gsed")
            && stdin_file(&["-f", "--file"]))
        || (family == "cmake" && stdin_file(&["-P"]))
        || cmd.argv.iter().skip(1).any(|a| {
            matches!(a.as_str(), "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
                && runs_code_by_design(base)
        })
}

/// Shells and interpreters that run code read from stdin or a string
/// (`python3.12` is `python`, `perl5.36` is `perl`).
pub(crate) fn runs_code(base: &str) -> bool {
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        family,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "mksh"
            | "ash"
            | "yash"
            | "fish"
            | "csh"
            | "tcsh"
            | "python"
            | "pypy"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "php"
            | "lua"
            | "luajit"
            | "tclsh"
            | "wish"
            | "Rscript"
            | "julia"
            | "pwsh"
            | "osascript"
            | "eval"
            | "source"
            | "."
    ) || base == "."
}

/// Programs that run code or open an interactive escape by design:
/// interpreters, editors, pagers, remote shells, build tools and package
/// managers' script runners. Allowlist mode denies them (even listed)
/// unless their use is inert (`--version`, `--help`).
pub(super) fn runs_code_by_design(base: &str) -> bool {
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    (runs_code(base) && !wrappers::is_shell(base))
        || matches!(
            family,
            "irb"
                | "ghci"
                | "racket"
                | "guile"
                | "sbcl"
                | "ocaml"
                | "erl"
                | "elixir"
                | "iex"
                | "jshell"
                | "groovy"
                | "scala"
                | "octave"
                | "gnuplot"
                | "R"
                | "vi"
                | "vim"
                | "nvim"
                | "view"
                | "vimdiff"
                | "gvim"
                | "ex"
                | "rvim"
                | "emacs"
                | "emacsclient"
                | "nano"
                | "pico"
                | "micro"
                | "joe"
                | "jed"
                | "mcedit"
                | "kak"
                | "hx"
                | "helix"
                | "ed"
                | "red"
                | "less"
                | "more"
                | "most"
                | "pg"
                | "man"
                | "info"
                | "w3m"
                | "lynx"
                | "links"
                | "elinks"
                | "ssh"
                | "scp"
                | "sftp"
                | "mosh"
                | "telnet"
                | "make"
                | "gmake"
                | "bmake"
                | "cmake"
                | "ninja"
                | "npm"
                | "npx"
                | "yarn"
                | "pnpm"
                | "pnpx"
                | "bunx"
                | "pipx"
                | "uvx"
                | "sqlite"
                | "mysql"
                | "mariadb"
                | "psql"
                | "dc"
                | "m"
                | "xdg-open"
                | "sensible-editor"
                | "sensible-pager"
                | "sensible-browser"
                | "x-www-browser"
                | "editor"
                | "pager"
        )
}

/// Builtins that evaluate arguments as arithmetic or variable names (where
/// `a[$(cmd)]` runs `cmd`).
pub(crate) fn evaluates_names(base: &str) -> bool {
    matches!(
        base,
        "let"
            | "declare"
            | "typeset"
            | "local"
            | "export"
            | "readonly"
            | "printf"
            | "read"
            | "test"
            | "["
            | "[["
            | "unset"
            | "mapfile"
            | "readarray"
            | "getopts"
            | "wait"
            | "shift"
            | "return"
            | "exit"
            | "ulimit"
            | "kill"
            | "fc"
            | "history"
            | "source"
            | "."
            | "eval"
            | "set"
            | "shopt"
    )
}
