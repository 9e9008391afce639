//! The danger list, the allowlist, and program-specific rules.

use super::grammars;
use super::opts::{self, Effect, Grammar, Parsed};
use super::paths;
use super::word::Word;
use super::{Ctx, ParsedCommand, Rules};

/// Directories whose programs may match the allowlist by their basename.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(crate) fn is_downloader(base: &str) -> bool {
    matches!(
        base,
        "curl"
            | "wget"
            | "wget2"
            | "fetch"
            | "aria2c"
            | "http"
            | "https"
            | "xh"
            | "lwp-request"
            | "lwp-download"
            | "GET"
            | "lynx"
            | "w3m"
            | "links"
            | "elinks"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "tftp"
            | "ftp"
            | "gh"
            | "httpie"
            | "curlie"
    )
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
pub(crate) fn runs_code_by_design(base: &str) -> bool {
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    (runs_code(base) && !super::wrappers::is_shell(base))
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

pub(crate) fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Environment variables whose value makes programs load or run other code.
pub(crate) fn is_dangerous_var(name: &str) -> bool {
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
pub(crate) fn is_code_var(name: &str) -> bool {
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
        if !super::vars::is_inert(base) {
            ctx.unknown(super::vars::not_inert_reason(name));
        }
    } else if let Some(why) = super::vars::runs_command(name, value) {
        ctx.danger(why);
    }
}

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

pub(crate) use super::paths::is_dangerous_path;

fn is_short_cluster(t: &str) -> bool {
    t.len() > 1 && t.starts_with('-') && !t.starts_with("--")
}

fn short_flag(args: &[Word], c: char) -> bool {
    args.iter()
        .take_while(|w| w.text != "--")
        .any(|w| is_short_cluster(&w.text) && w.text[1..].contains(c))
}

/// `--name`, `--name=...` or a unique getopt abbreviation of it (at least
/// `min` characters), before `--`.
fn long_flag(args: &[Word], name: &str, min: usize) -> bool {
    let bare = name.trim_start_matches('-');
    args.iter().take_while(|w| w.text != "--").any(|w| {
        let Some(long) = w.text.strip_prefix("--") else {
            return false;
        };
        let n = long.split('=').next().unwrap_or(long);
        n == bare || (n.len() >= min && bare.starts_with(n))
    })
}

/// Operands: words that are not options (all after `--`).
fn operands(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut ended = false;
    for w in args {
        if !ended && w.text == "--" {
            ended = true;
        } else if ended || !w.text.starts_with('-') || w.text == "-" {
            out.push(w);
        }
    }
    out
}

/// Danger list (every mode) and program rules for one resolved command.
/// Returns what the gate knows of the program's arguments.
pub(crate) fn check_command(ctx: &mut Ctx, words: &[Word], open: bool) -> Rules {
    let base = basename(&words[0].text).to_string();
    let args = &words[1..];
    danger(ctx, &base, args, open);
    if ctx.allowlist() {
        // `rg x {--pre=sh,y}` is `rg x --pre=sh y` to bash.
        if let Some(w) = args.iter().find(|w| w.multi && w.text.contains(['{', '}'])) {
            ctx.restrict(format!("brace expansion `{}`", w.text));
        }
    }
    super::progs::targets(ctx, &base, args);
    downloaded_code(ctx, &words[0].text, &base, args);
    let rules = program_rules(ctx, &base, args, open);
    if rules == Rules::None && !super::wrappers::is_wrapper(&base) && !base.starts_with('-') {
        if ctx.allowlist() {
            if let Some(why) = super::progs::exec_option(args) {
                ctx.unknown(format!("`{base}`: {why}"));
            }
        }
        super::progs::embedded(ctx, &base, args);
    }
    if rules == Rules::Grammar && ctx.allowlist() {
        if open {
            ctx.restrict(format!("`{base}` run by xargs gets options from stdin"));
        }
        // A file named `--checkpoint-action=exec=sh` turns `tar cf a.tar *`
        // into code execution.
        let before_end = args.iter().take_while(|w| w.text != "--");
        if let Some(w) = before_end.into_iter().find(|w| w.multi) {
            ctx.restrict(format!(
                "unquoted glob `{}` for `{base}` (file names could be options); quote it or put it after `--`",
                w.text
            ));
        }
    }
    if rules == Rules::RunsCode && ctx.allowlist() {
        let inert = matches!(
            args.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .as_slice(),
            ["--version" | "-V" | "--help" | "-h" | "-version"]
        );
        if !inert {
            ctx.restrict(format!(
                "`{base}` runs code or opens an interactive escape by design"
            ));
        }
    }
    rules
}

/// A downloader's output files are recorded; running one later in the
/// command (`curl -o x.sh URL && ./x.sh`, `wget URL; sh install.sh`) is
/// running downloaded code.
fn downloaded_code(ctx: &mut Ctx, prog: &str, base: &str, args: &[Word]) {
    let norm = |t: &str| t.trim_start_matches("./").to_string();
    if is_downloader(base) {
        let mut i = 0;
        let mut named = false;
        while i < args.len() {
            let t = args[i].text.as_str();
            let out = match t {
                "-o" | "--output" | "-O" | "--output-document"
                    if !(base == "curl" && t == "-O") =>
                {
                    i += 1;
                    args.get(i).map(|w| w.text.clone())
                }
                _ => t
                    .strip_prefix("--output=")
                    .or_else(|| t.strip_prefix("--output-document="))
                    .or_else(|| {
                        t.strip_prefix("-o")
                            .filter(|v| !v.is_empty() && !t.starts_with("--"))
                    })
                    .map(str::to_string),
            };
            if let Some(o) = out {
                named = true;
                if o != "-" {
                    ctx.downloads.push(norm(&o));
                }
            }
            i += 1;
        }
        if !named {
            // `curl -O URL`, `wget URL`: the URL's last path component.
            for w in args.iter().filter(|w| w.text.contains("://")) {
                if let Some(name) = w
                    .text
                    .split(['?', '#'])
                    .next()
                    .and_then(|u| u.rsplit('/').next())
                {
                    if !name.is_empty() && !name.contains(':') {
                        ctx.downloads.push(name.to_string());
                    }
                }
            }
        }
        return;
    }
    if ctx.downloads.is_empty() {
        return;
    }
    let runs_file = ctx
        .downloads
        .iter()
        .any(|d| norm(prog) == *d || basename(prog) == d && prog.contains('/'));
    let feeds_file = (runs_code(base) || runs_code_by_design(base))
        && args
            .iter()
            .any(|a| ctx.downloads.iter().any(|d| norm(&a.text) == *d));
    if runs_file || feeds_file {
        ctx.danger(format!(
            "`{prog}` runs a file downloaded earlier in the command"
        ));
    }
}

/// The danger list alone, for `words` (program first).
pub(crate) fn danger_of(ctx: &mut Ctx, words: &[Word]) {
    if let Some((prog, args)) = words.split_first() {
        danger(ctx, basename(&prog.text), args, false);
    }
}

/// `t` as seen from the directory of the last absolute `cd`, when it is
/// relative.
pub(crate) fn in_cwd(ctx: &Ctx, t: &str) -> String {
    match &ctx.cwd {
        Some(dir) if !t.starts_with('/') && !t.starts_with('~') && !t.starts_with('$') => {
            format!("{}/{}", dir.trim_end_matches('/'), t)
        }
        _ => t.to_string(),
    }
}

pub(crate) fn operands_of(args: &[Word]) -> Vec<&Word> {
    operands(args)
}

/// Programs with an entry in the danger list (by their name).
pub(crate) fn on_danger_list(base: &str) -> bool {
    matches!(
        base,
        "rm" | "unlink"
            | "shred"
            | "chmod"
            | "chown"
            | "chgrp"
            | "chattr"
            | "setfacl"
            | "mkswap"
            | "wipefs"
            | "blkdiscard"
            | "sfdisk"
            | "fdisk"
            | "cfdisk"
            | "parted"
            | "sgdisk"
            | "gdisk"
            | "mformat"
            | "sg_format"
            | "sg_sanitize"
            | "flashrom"
            | "killall5"
            | "cryptsetup"
            | "nvme"
            | "hdparm"
            | "badblocks"
            | "zpool"
            | "zfs"
            | "lvremove"
            | "vgremove"
            | "pvremove"
            | "dmsetup"
            | "mdadm"
            | "dd"
            | "cp"
            | "mv"
            | "install"
            | "ln"
            | "tee"
            | "truncate"
            | "touch"
            | "git"
            | "shutdown"
            | "reboot"
            | "halt"
            | "poweroff"
            | "kexec"
            | "init"
            | "telinit"
            | "systemctl"
            | "loginctl"
            | "kill"
            | "pkill"
            | "killall"
            | "sysctl"
            | "rsync"
            | "ip"
            | "iptables"
            | "ip6tables"
            | "nft"
            | "ebtables"
            | "ufw"
            | "firewall-cmd"
            | "ifconfig"
            | "route"
            | "find"
            | "fallocate"
            | "ddrescue"
            | "curl"
            | "wget"
            | "tar"
    ) || base.starts_with("mkfs")
        || base.starts_with("mke2fs")
        || base.starts_with("newfs")
}

fn danger(ctx: &mut Ctx, base: &str, args: &[Word], open: bool) {
    if base == "cd" {
        // `cd` alone goes home; `..`-only paths may climb to `/`.
        let target = operands(args).into_iter().next();
        let risky = match target {
            None => true,
            Some(w) => is_dangerous_path(w) || w.text.split('/').all(|p| p == ".." || p.is_empty()),
        };
        if risky {
            ctx.cd_danger = Some(target.map_or("~".to_string(), |w| w.text.clone()));
        }
        // Where relative paths now point (`cd /dev; ... > sda`).
        ctx.cwd = match target {
            Some(w) if w.is_static() && w.text.starts_with('/') => Some(w.text.clone()),
            Some(w) if w.is_static() && !w.text.starts_with('-') => ctx
                .cwd
                .take()
                .map(|c| format!("{}/{}", c.trim_end_matches('/'), w.text)),
            _ => None,
        };
    }
    if base == "hash"
        && args
            .iter()
            .any(|w| w.text.starts_with("-p") || w.text.starts_with('-') && w.text.contains('p'))
    {
        ctx.unknown("`hash -p` makes a command name run another program");
    }
    // `rm -rf {/,x}` is `rm -rf / x`: the checks below see one word.
    let checked = matches!(
        base,
        "rm" | "chmod"
            | "chown"
            | "chgrp"
            | "dd"
            | "cp"
            | "mv"
            | "tee"
            | "shred"
            | "install"
            | "truncate"
            | "ln"
            | "git"
            | "systemctl"
            | "rsync"
            | "kill"
    );
    if checked {
        if let Some(w) = args.iter().find(|w| w.multi && w.text.contains(['{', '}'])) {
            ctx.danger(format!(
                "brace expansion `{}` hides the real arguments of `{base}`",
                w.text
            ));
        }
    }
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "rm" | "unlink" | "shred" => {
            if long_flag(args, "--no-preserve-root", 6) {
                ctx.danger(format!("`{base} --no-preserve-root`"));
            }
            let recursive =
                short_flag(args, 'r') || short_flag(args, 'R') || long_flag(args, "--recursive", 4);
            for w in operands(args) {
                if paths::is_dangerous_glob(w) {
                    ctx.danger(format!(
                        "`{base}` of `{}` wipes a system or home directory",
                        w.text
                    ));
                }
            }
            if recursive && base == "rm" {
                if let Some(dir) = ctx.cd_danger.clone() {
                    if let Some(w) = operands(args)
                        .into_iter()
                        .find(|w| !w.text.starts_with('/'))
                    {
                        ctx.danger(format!("`rm -r` of `{}` after `cd {dir}`", w.text));
                    }
                }
                for w in operands(args) {
                    if is_dangerous_path(w) {
                        ctx.danger(format!("`rm -r` of `{}`", w.text));
                    } else if w.dynamic {
                        ctx.danger(format!(
                            "`rm -r` of `{}`, a path that depends on expansion",
                            w.text
                        ));
                    }
                }
                if open {
                    ctx.danger("`rm -r` of paths read from stdin");
                }
            }
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
            if short_flag(args, 'R') || long_flag(args, "--recursive", 3) {
                if let Some(w) = operands(args).into_iter().find(|w| is_dangerous_path(w)) {
                    ctx.danger(format!("recursive `{base}` of `{}`", w.text));
                }
            }
        }
        "mkswap" | "wipefs" | "blkdiscard" | "sfdisk" | "fdisk" | "cfdisk" | "parted"
        | "sgdisk" | "gdisk" | "mformat" | "sg_format" | "sg_sanitize" | "flashrom"
        | "killall5" => ctx.danger(format!(
            "`{base}` rewrites disks, firmware or every process"
        )),
        _ if base.starts_with("mkfs")
            || base.starts_with("mke2fs")
            || base.starts_with("newfs")
            || matches!(
                base,
                "mkdosfs"
                    | "mkexfatfs"
                    | "mkntfs"
                    | "mkudffs"
                    | "mkreiserfs"
                    | "mke4fs"
                    | "mkhfs"
                    | "mkjfs"
                    | "mkxfs"
            ) =>
        {
            ctx.danger(format!("`{base}` formats a filesystem"))
        }
        "cryptsetup" => {
            if operands(args).iter().any(|w| {
                matches!(
                    w.text.to_ascii_lowercase().as_str(),
                    "luksformat"
                        | "erase"
                        | "lukserase"
                        | "reencrypt"
                        | "luksremovekey"
                        | "lukskillslot"
                )
            }) {
                ctx.danger("`cryptsetup` destroys an encrypted volume's keys");
            }
        }
        "nvme" => {
            if operands(args)
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "format" | "sanitize" | "delete-ns"))
            {
                ctx.danger("`nvme` erases a disk");
            }
        }
        "hdparm" => {
            if args.iter().any(|w| {
                w.text.starts_with("--security-erase")
                    || w.text.starts_with("--trim-sector")
                    || w.text.starts_with("--write-sector")
                    || w.text.starts_with("--make-bad-sector")
                    || w.text == "--dco-restore"
            }) {
                ctx.danger("`hdparm` erases or damages a disk");
            }
        }
        "badblocks" if short_flag(args, 'w') => ctx.danger("`badblocks -w` overwrites a disk"),
        "zpool" | "zfs" | "lvremove" | "vgremove" | "pvremove" | "dmsetup" | "mdadm" => {
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "destroy" | "labelclear" | "remove" | "wipe_table" | "--zero-superblock"
                )
            }) || matches!(base, "lvremove" | "vgremove" | "pvremove")
            {
                ctx.danger(format!("`{base}` destroys storage"));
            }
        }
        "dd" => {
            for w in args {
                if let Some(target) = w.text.strip_prefix("of=") {
                    if let Some(why) = paths::write_target_danger(&in_cwd(ctx, target)) {
                        ctx.danger(format!("`dd` {why}"));
                    } else if w.dynamic {
                        ctx.danger(format!("`dd` output `{target}` depends on expansion"));
                    }
                }
            }
        }
        "cp" | "mv" | "install" | "ln" | "tee" | "truncate" | "touch" => {
            let ops = operands(args);
            // tee, truncate, touch write every operand; the others their
            // last one, or the directory of `-t`.
            let mut targets: Vec<&str> = match base {
                "tee" | "truncate" | "touch" => ops.iter().map(|w| w.text.as_str()).collect(),
                _ if ops.len() >= 2 => vec![ops[ops.len() - 1].text.as_str()],
                _ => vec![],
            };
            for (i, w) in args.iter().enumerate() {
                if w.text == "-t" || w.text == "--target-directory" {
                    if let Some(v) = args.get(i + 1) {
                        targets.push(&v.text);
                    }
                } else if let Some(v) = w.text.strip_prefix("--target-directory=") {
                    targets.push(v);
                }
            }
            for t in targets {
                let probe = in_cwd(ctx, t);
                // The target may be a directory: judge a file in it too.
                let inside = format!("{}/x", probe.trim_end_matches('/'));
                let why = paths::write_target_danger(&probe).or_else(|| {
                    (base != "tee" && base != "truncate" && base != "touch")
                        .then(|| paths::write_target_danger(&inside))
                        .flatten()
                });
                if let Some(why) = why {
                    ctx.danger(format!("`{base}` {why}"));
                }
            }
            if base == "mv" {
                if let Some(w) = ops.iter().rev().skip(1).find(|w| is_dangerous_path(w)) {
                    ctx.danger(format!(
                        "`mv` of `{}` moves a system or home directory",
                        w.text
                    ));
                }
            }
        }
        "git" => git_danger(ctx, args),
        "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" => {
            ctx.danger(format!("`{base}` stops the machine"))
        }
        "init" | "telinit" => {
            if operands(args)
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "0" | "1" | "6" | "s" | "S" | "q"))
            {
                ctx.danger(format!("`{base}` changes the runlevel (stops the machine)"));
            }
        }
        "systemctl" | "loginctl" => {
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "hybrid-sleep"
                        | "suspend-then-hibernate"
                        | "soft-reboot"
                        | "rescue"
                        | "emergency"
                        | "isolate"
                        | "default"
                        | "kill-session"
                        | "kill-user"
                        | "terminate-session"
                        | "terminate-user"
                )
            }) {
                ctx.danger(format!("`{base}` stops the machine or the user's sessions"));
            }
        }
        "kill" | "pkill" | "killall" => {
            // `kill -9 -1`, `kill -- -1`: every process; `kill 1`: init.
            let mut rest = args;
            if let Some(first) = rest.first() {
                let t = first.text.as_str();
                if t == "-s" || t == "-n" || t == "--signal" {
                    rest = rest.get(2..).unwrap_or(&[]);
                } else if t.starts_with('-') && t != "--" && t != "-1" {
                    rest = &rest[1..];
                } else if t == "-1" && rest.len() > 1 {
                    rest = &rest[1..]; // `-1` is SIGHUP when a pid follows
                }
            }
            if base == "kill" && rest.iter().any(|w| matches!(w.text.as_str(), "-1" | "1")) {
                ctx.danger("`kill` of every process (`-1`) or of init (`1`)");
            }
            if base != "kill"
                && args
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "init" | "systemd" | "." | "-1"))
            {
                ctx.danger(format!("`{base}` of init or of every process"));
            }
        }
        "ip" => {
            if let Some(why) = ip_change(args) {
                ctx.danger(why);
            }
        }
        "iptables" | "ip6tables" | "iptables-nft" | "iptables-legacy" | "ip6tables-nft"
        | "ebtables" | "arptables" | "iptables-restore" | "ip6tables-restore" | "nft" | "ufw"
        | "firewall-cmd" => {
            let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            let first_op = words
                .iter()
                .find(|w| !w.starts_with('-'))
                .copied()
                .unwrap_or("");
            let reads = match base {
                "nft" => {
                    matches!(first_op, "list" | "monitor" | "describe")
                        || words
                            .iter()
                            .all(|w| matches!(*w, "-v" | "--version" | "-h" | "--help"))
                }
                "ufw" => {
                    matches!(first_op, "status" | "show" | "version" | "app")
                        && !words.contains(&"update")
                }
                "firewall-cmd" => {
                    words.iter().all(|w| {
                        [
                            "--get",
                            "--query",
                            "--list",
                            "--state",
                            "--version",
                            "--help",
                            "--zone",
                            "--permanent",
                            "-h",
                            "-V",
                        ]
                        .iter()
                        .any(|p| w.starts_with(p))
                            || !w.starts_with('-')
                    }) && !words.is_empty()
                }
                _ if base.ends_with("-restore") => false,
                _ => {
                    let changes = words.iter().any(|w| {
                        let long = matches!(
                            *w,
                            "--append"
                                | "--delete"
                                | "--insert"
                                | "--replace"
                                | "--flush"
                                | "--zero"
                                | "--new-chain"
                                | "--new"
                                | "--delete-chain"
                                | "--policy"
                                | "--rename-chain"
                        );
                        let short = w.len() >= 2
                            && w.starts_with('-')
                            && !w.starts_with("--")
                            && w[1..].contains(['A', 'D', 'I', 'R', 'F', 'Z', 'N', 'X', 'P', 'E']);
                        long || short
                    });
                    let lists = words.iter().any(|w| {
                        matches!(
                            *w,
                            "--list" | "--list-rules" | "--version" | "-V" | "--help" | "-h"
                        ) || (w.starts_with('-')
                            && !w.starts_with("--")
                            && w[1..].contains(['L', 'S']))
                    });
                    lists && !changes
                }
            };
            if !reads {
                ctx.danger(format!("`{base}` changes the firewall"));
            }
        }
        "ifdown" | "ifup" | "ifconfig" if base != "ifconfig" || args.len() >= 2 => {
            ctx.danger("`ifconfig` changes a network interface")
        }
        "route"
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "add" | "del" | "delete" | "flush" | "change"
                )
            }) =>
        {
            ctx.danger("`route` changes the routing table")
        }
        "nmcli"
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "down" | "delete" | "modify" | "off" | "disconnect" | "reload"
                )
            }) =>
        {
            ctx.danger("`nmcli` changes the network configuration")
        }
        "tc" if args.iter().any(|w| {
            matches!(
                w.text.as_str(),
                "add" | "del" | "delete" | "change" | "replace"
            )
        }) =>
        {
            ctx.danger("`tc` changes network traffic control")
        }
        "sysctl" => {
            if short_flag(args, 'w')
                || short_flag(args, 'p')
                || operands(args).iter().any(|w| w.text.contains('='))
            {
                ctx.danger("`sysctl` changes kernel settings");
            }
        }
        "rsync" => {
            let deletes = args.iter().any(|w| w.text.starts_with("--del"));
            if let Some(dest) = operands(args).last() {
                if deletes && is_dangerous_path(dest) {
                    ctx.danger(format!("`rsync --delete` into `{}`", dest.text));
                }
                if let Some(why) = paths::write_target_danger(&dest.text) {
                    ctx.danger(format!("`rsync` {why}"));
                }
            }
        }
        _ if family == "su" || base == "runuser" => {}
        _ => {}
    }
}

/// `ip OBJECT VERB ...` that changes interfaces, addresses, routes,
/// rules or neighbours (iproute2 matches both by prefix).
fn ip_change(args: &[Word]) -> Option<String> {
    let mut words = args.iter().map(|w| w.text.as_str()).peekable();
    // Global options (`-4`, `-6`, `-n NS`, `-j`, `-d`, `-s`, ...).
    while let Some(w) = words.peek() {
        if !w.starts_with('-') {
            break;
        }
        let takes = matches!(
            *w,
            "-n" | "-netns" | "-f" | "-family" | "-l" | "-loops" | "-rc" | "-rcvbuf"
        );
        words.next();
        if takes {
            words.next();
        }
    }
    let object = words.next()?;
    let objects = [
        "link",
        "address",
        "addr",
        "route",
        "rule",
        "neighbour",
        "neighbor",
        "tunnel",
        "tuntap",
        "maddress",
        "mroute",
        "nexthop",
        "xfrm",
        "netconf",
        "vrf",
        "mptcp",
        "ioam",
        "token",
        "l2tp",
        "fou",
        "macsec",
        "tcp_metrics",
        "netns",
        "ntable",
        "sr",
        "stats",
        "monitor",
        "neigh",
        "r",
        "ro",
        "rou",
        "a",
        "ad",
        "l",
        "li",
        "lin",
        "n",
        "ne",
        "nei",
        "ru",
        "tu",
    ];
    if !objects.iter().any(|o| o.starts_with(object)) {
        return None;
    }
    let verb = words.next().unwrap_or("");
    if verb.is_empty() || verb.starts_with('-') {
        return None;
    }
    let is_link = "link".starts_with(object);
    let reads = [
        "show", "list", "lst", "get", "help", "ls", "monitor", "save", "showdump", "identify",
        "pids",
    ];
    if verb != "s" && reads.iter().any(|r| r.starts_with(verb)) {
        return None;
    }
    if verb == "s" && !is_link {
        return None; // `ip a s` is `addr show`; `ip l s` is `link set`.
    }
    let changes = [
        "add", "delete", "del", "set", "change", "chg", "replace", "flush", "append", "prepend",
        "restore", "attach", "detach", "exec",
    ];
    if changes.iter().any(|c| c.starts_with(verb)) {
        return Some(format!(
            "`ip {object} {verb}` changes the network configuration"
        ));
    }
    None
}

/// A pathspec that names the whole tree or a directory of it: `.`, `:/`,
/// `*`, `src/`, a glob, a magic pathspec.
fn broad_pathspec(t: &str) -> bool {
    matches!(t, "." | "./" | ".." | ":/" | ":/:" | ":" | "/")
        || t.ends_with('/')
        || t.ends_with("/.")
        || t.contains(['*', '?', '['])
        || t.starts_with(":(")
        || t.starts_with(":/")
}

fn git_danger(ctx: &mut Ctx, args: &[Word]) {
    let global = opts::leading_options(&grammars::GIT, args);
    let Some(first) = global.first_operand else {
        return;
    };
    let Some(sub) = args.get(first).map(|w| w.text.as_str()) else {
        return;
    };
    let rest = &args[first + 1..];
    let Some(g) = grammars::git_sub(sub) else {
        return;
    };
    let p = opts::parse(g, rest);
    match sub {
        "push" => {
            // `--forc` is ambiguous to the gate's table; git may read it as
            // `--force`.
            let maybe_force = p.problems.iter().any(|pr| {
                matches!(pr, opts::Problem::Ambiguous(_, c) if c.iter().any(|o| o.name.starts_with("force")))
            });
            let force = maybe_force
                || p.has("force")
                || p.has("force-with-lease")
                || p.has("mirror")
                || p.operands.iter().any(|w| w.text.starts_with('+'));
            if force {
                ctx.danger("`git push --force` rewrites remote history");
            }
            if p.has("delete")
                || p.has("prune")
                || p.operands.iter().any(|w| {
                    w.text.starts_with(':') || w.text.contains(":") && w.text.starts_with("+:")
                })
            {
                ctx.danger("`git push --delete` (or `:branch`, `--prune`) deletes remote branches");
            }
        }
        "checkout"
            if !p.has("b") && !p.has("B") && !p.has("orphan") && !p.has("detach") && {
                // `git checkout -- .`, `git checkout .`, `git checkout REV -- src/`:
                // the work tree's changes under those paths are discarded.
                p.operands.iter().any(|w| broad_pathspec(&w.text)) || p.has("patch")
            } =>
        {
            ctx.danger(
                "`git checkout` of the work tree (or a directory) discards its uncommitted changes",
            )
        }
        "restore" if !p.has("staged") || p.has("worktree") => {
            if p.operands.iter().any(|w| broad_pathspec(&w.text)) || p.has("patch") {
                ctx.danger("`git restore` of the work tree (or a directory) discards its uncommitted changes")
            }
        }
        "switch" if p.has("discard-changes") => {
            ctx.danger("`git switch --discard-changes` discards uncommitted work")
        }
        "rm" if !p.has("cached")
            && p.operands
                .iter()
                .any(|w| matches!(w.text.as_str(), "." | "./" | ":/" | "*" | ":(top)")) =>
        {
            ctx.danger("`git rm` of the whole tree deletes the work tree's files")
        }
        "stash" if p.operands.first().is_some_and(|w| w.text == "drop") => {
            ctx.danger("`git stash drop` deletes a stash for good")
        }
        "reset" if p.has("hard") || p.has("merge") || p.has("keep") => {
            ctx.danger("`git reset --hard` discards uncommitted work")
        }
        "clean"
            if (p.has("force") || p.has("d") || p.has("x") || p.has("X")) && !p.has("dry-run") =>
        {
            ctx.danger("`git clean` deletes untracked files for good")
        }
        "checkout" | "restore" | "switch" if p.has("force") && sub != "restore" => {
            ctx.danger(format!("`git {sub} --force` discards uncommitted work"))
        }
        "stash" if p.operands.first().is_some_and(|w| w.text == "clear") => {
            ctx.danger("`git stash clear` drops every stash")
        }
        _ => {}
    }
}

/// Program-specific rules (both modes: options that run code ask in ask
/// mode; allowlist mode also denies what is unknown).
fn program_rules(ctx: &mut Ctx, base: &str, args: &[Word], _open: bool) -> Rules {
    match base {
        "git" => git_rules(ctx, args),
        "tar" => tar_rules(ctx, args),
        "sed" | "gsed" => sed_rules(ctx, args),
        "awk" | "gawk" | "mawk" | "nawk" | "original-awk" => awk_rules(ctx, base, args),
        "sort" => generic(ctx, &grammars::SORT, "sort", args),
        "rg" => generic(ctx, &grammars::RG, "rg", args),
        "fd" | "fdfind" => generic(ctx, &grammars::FD, base, args),
        "split" => generic(ctx, &grammars::SPLIT, "split", args),
        "zip" => {
            if let Some(w) = args.iter().find(|w| w.text.starts_with("-TT")) {
                ctx.risky(format!(
                    "`zip {}` sets the program that tests the archive",
                    w.text
                ));
            }
            let args: Vec<Word> = args
                .iter()
                .filter(|w| !w.text.starts_with("-TT"))
                .cloned()
                .collect();
            generic(ctx, &grammars::ZIP, "zip", &args)
        }
        "rsync" => {
            let p = apply(ctx, &grammars::RSYNC, "rsync", args);
            if let Some(w) = p.operands.iter().find(|w| remote_spec(&w.text)) {
                ctx.risky(format!(
                    "`rsync` to or from `{}` runs a remote shell (ssh, with its configuration)",
                    w.text
                ));
            }
            Rules::Grammar
        }
        "let" => {
            if let Some(w) = args.iter().find(|w| w.dynamic && w.text.contains('[')) {
                ctx.unknown(format!(
                    "`let {}` evaluates a subscript that depends on an expansion",
                    w.text
                ));
            }
            Rules::Builtin
        }
        "printf" => {
            let mut i = 0;
            while let Some(w) = args.get(i) {
                if w.text == "-v" {
                    if let Some(v) = args.get(i + 1) {
                        if v.dynamic {
                            ctx.unknown(format!(
                                "`printf -v {}` assigns to a name that depends on an expansion",
                                v.text
                            ));
                        }
                        check_assignment(ctx, &v.text, None);
                    }
                    i += 2;
                } else if let Some(v) = w.text.strip_prefix("-v") {
                    check_assignment(ctx, v, None);
                    i += 1;
                } else {
                    break;
                }
            }
            Rules::Builtin
        }
        "read" | "mapfile" | "readarray" | "getopts" => {
            // The names these builtins assign.
            let mut names: Vec<&str> = Vec::new();
            let mut i = 0;
            let with_value = |c: char| match base {
                "read" => "adinNptu".contains(c),
                "getopts" => false,
                _ => "dnOsuCc".contains(c),
            };
            while let Some(w) = args.get(i) {
                let t = w.text.as_str();
                if t == "--" {
                    i += 1;
                    break;
                }
                if !is_short_cluster(t) {
                    break;
                }
                let last = t.chars().last().unwrap_or(' ');
                if t.contains('C') && base != "read" && base != "getopts" {
                    ctx.risky(format!("`{base} -C` runs a callback"));
                }
                if last == 'a' && base == "read" {
                    if let Some(v) = args.get(i + 1) {
                        names.push(&v.text);
                    }
                }
                i += if with_value(last) { 2 } else { 1 };
            }
            let ops: Vec<&str> = args[i.min(args.len())..]
                .iter()
                .map(|w| w.text.as_str())
                .collect();
            match base {
                "read" => names.extend(ops),
                "getopts" => names.extend(ops.get(1)),
                _ => names.extend(ops.last()),
            }
            for n in names {
                check_assignment(ctx, n, None);
            }
            Rules::Builtin
        }
        "vi" | "vim" | "nvim" | "view" | "vimdiff" | "gvim" | "ex" | "rvim" => {
            if let Some(w) = args.iter().find(|w| {
                w.text.starts_with('+')
                    || matches!(w.text.as_str(), "-c" | "--cmd" | "-S" | "-s" | "-W" | "-w")
            }) {
                ctx.risky(format!("`{base} {}` runs editor commands", w.text));
            }
            Rules::RunsCode
        }
        "ed" | "red" => {
            ctx.unknown(format!(
                "`{base}` reads commands from stdin (`!` runs programs)"
            ));
            Rules::RunsCode
        }
        _ if super::progs::program_rules(ctx, base, args).is_some() => Rules::Grammar,
        _ if runs_code_by_design(base) => Rules::RunsCode,
        _ => Rules::None,
    }
}

/// `host:path`, `user@host:path`, `host::module`, `rsync://`: the remote
/// side of an rsync or scp transfer.
fn remote_spec(t: &str) -> bool {
    if t.starts_with("rsync://") {
        return false;
    }
    match t.find(':') {
        Some(i) => !t[..i].contains('/') && i > 0,
        None => false,
    }
}

/// Reads `args` with `g` and records what the grammar says: options that
/// run code (`!x`) ask in ask mode and are denied in allowlist mode;
/// options that write files (`!w`) are denied in allowlist mode, and on
/// the danger list when the file is a system or start-up file; unknown
/// options and ambiguous abbreviations are denied in allowlist mode (an
/// ambiguous one that could be an exec option also asks).
fn apply<'g>(ctx: &mut Ctx, g: &'g Grammar, what: &str, args: &[Word]) -> Parsed<'g> {
    let p = opts::parse(g, args);
    record(ctx, &p, what);
    p
}

fn record(ctx: &mut Ctx, p: &Parsed, what: &str) {
    for prob in &p.problems {
        if let Some(o) = prob.maybe_effect() {
            ctx.risky(format!(
                "{}; one of them, `--{}`, runs a program or writes a file",
                prob.describe(what),
                o.name
            ));
        } else {
            ctx.restrict(prob.describe(what));
        }
    }
    for h in &p.hits {
        if h.negated {
            continue;
        }
        let shown = if h.written.trim_start_matches('-').split('=').next() == Some(h.opt.name) {
            format!("`{what} {}`", h.written)
        } else {
            format!("`{what} {}` (`--{}`)", h.written, h.opt.name)
        };
        match h.opt.effect {
            Effect::Safe => {}
            Effect::Exec => ctx.risky(format!("{shown} runs a program or code")),
            Effect::Write => {
                ctx.restrict(format!("{shown} writes a file"));
                if let Some(why) = h
                    .value
                    .as_ref()
                    .and_then(|v| paths::write_target_danger(&v.text))
                {
                    ctx.danger(format!("{shown} {why}"));
                }
            }
        }
    }
}

fn generic(ctx: &mut Ctx, g: &Grammar, what: &str, args: &[Word]) -> Rules {
    apply(ctx, g, what, args);
    Rules::Grammar
}

/// `git -c KEY=VALUE` keys that are plain settings (no program, path,
/// URL rewrite or trust decision).
fn git_key_safe(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let exact = [
        "user.name",
        "user.email",
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.abbrev",
        "init.defaultbranch",
        "color.ui",
        "column.ui",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "merge.ff",
        "fetch.prune",
        "log.date",
        "log.decorate",
        "diff.renames",
        "status.short",
        "advice.detachedhead",
        "commit.gpgsign",
        "tag.gpgsign",
        "rebase.autostash",
        "core.filemode",
    ];
    let gpg_off = (k == "commit.gpgsign" || k == "tag.gpgsign") && !key.contains('=');
    exact.contains(&k.as_str()) && !gpg_off
        || k.starts_with("color.") && !k.contains("cmd")
        || k.starts_with("advice.")
}

fn git_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
    let global = opts::leading_options(&grammars::GIT, args);
    for prob in &global.problems {
        ctx.restrict(prob.describe("git"));
    }
    for h in &global.hits {
        match h.opt.name {
            "c" => {
                let kv = h.value.as_ref().map(|w| w.text.clone()).unwrap_or_default();
                let (key, value) = kv.split_once('=').unwrap_or((&kv, "true"));
                let off = (key.eq_ignore_ascii_case("commit.gpgsign")
                    || key.eq_ignore_ascii_case("tag.gpgsign"))
                    && value == "false";
                let safe = if key.to_ascii_lowercase().ends_with("gpgsign") {
                    off
                } else {
                    git_key_safe(key)
                };
                if !safe {
                    ctx.risky(format!(
                        "`git -c {key}` sets an option that can run programs"
                    ));
                }
            }
            "config-env" => ctx.risky("`git --config-env` sets options that can run programs"),
            "exec-path" if h.value.is_some() => {
                ctx.risky("`git --exec-path` changes where git finds its programs")
            }
            "exec-path" => {}
            "git-dir" => {
                ctx.risky("`git --git-dir` can point at a repository whose config runs programs")
            }
            _ => {
                let one = Parsed {
                    hits: vec![opts::Hit {
                        opt: h.opt,
                        written: h.written.clone(),
                        value: h.value.clone(),
                        negated: h.negated,
                    }],
                    ..Default::default()
                };
                record(ctx, &one, "git");
            }
        }
    }
    let Some(first) = global.first_operand else {
        return Rules::Grammar;
    };
    let Some(sub_word) = args.get(first) else {
        return Rules::Grammar;
    };
    let sub = sub_word.text.as_str();
    let rest = &args[first + 1..];
    for w in rest {
        if w.text.starts_with("ext::") || w.text.starts_with("fd::") {
            ctx.risky("`ext::` remote URLs run programs");
        }
    }
    if matches!(
        sub,
        "difftool"
            | "mergetool"
            | "filter-branch"
            | "filter-repo"
            | "instaweb"
            | "send-email"
            | "daemon"
            | "credential"
            | "web--browse"
            | "submodule--helper"
            | "upload-pack"
            | "receive-pack"
            | "upload-archive"
            | "shell"
            | "remote-ext"
            | "remote-fd"
            | "p4"
            | "svn"
            | "cvsimport"
            | "cvsserver"
            | "archimport"
            | "quiltimport"
            | "jump"
            | "alias"
    ) || sub.starts_with("credential-")
    {
        ctx.risky(format!("`git {sub}` runs other programs"));
        return Rules::Grammar;
    }
    let Some(g) = grammars::git_sub(sub) else {
        ctx.restrict(format!(
            "`git {sub}` is not a subcommand the gate has reviewed (or an alias)"
        ));
        return Rules::Grammar;
    };
    let what = format!("git {sub}");
    let p = apply(ctx, g, &what, rest);
    let action = p.operands.first().map(|w| w.text.as_str()).unwrap_or("");
    if grammars::git_sub_action_exec(sub, action) {
        ctx.risky(format!("`git {sub} {action}` runs a program"));
    }
    match sub {
        "config" => {
            let reads = p.has("get")
                || p.has("get-all")
                || p.has("get-regexp")
                || p.has("get-urlmatch")
                || p.has("list")
                || matches!(action, "get" | "list")
                || (p.operands.len() == 1 && !action.is_empty());
            if !reads {
                let key = if matches!(
                    action,
                    "set" | "unset" | "edit" | "rename-section" | "remove-section"
                ) {
                    p.operands.get(1).map(|w| w.text.as_str()).unwrap_or("")
                } else {
                    action
                };
                if !git_key_safe(key) {
                    ctx.risky(format!(
                        "`git config {key}` sets an option that can run programs"
                    ));
                } else {
                    ctx.restrict("`git config` that is not a read");
                }
            }
        }
        "commit" if ctx.allowlist() => {
            let message = p.has("message")
                || p.has("file")
                || p.has("reuse-message")
                || p.has("fixup")
                || p.has("no-edit")
                || p.hits.iter().any(|h| h.opt.name == "edit" && h.negated);
            if !message {
                ctx.restrict("`git commit` without `-m`/`-F`/`--no-edit` opens an editor");
            }
        }
        "tag" if ctx.allowlist() && p.has("annotate") && !p.has("message") && !p.has("file") => {
            ctx.restrict("`git tag -a` without `-m` opens an editor");
        }
        "merge" | "pull" | "cherry-pick" | "revert" if ctx.allowlist() => {
            // These open an editor for the message unless told not to.
            let no_edit = p.hits.iter().any(|h| h.opt.name == "edit" && h.negated)
                || p.has("ff-only")
                || p.has("abort")
                || p.has("quit")
                || p.has("no-commit")
                || p.has("n");
            if matches!(sub, "revert" | "merge") && !no_edit && !p.has("m") && !p.has("message") {
                ctx.restrict(format!("`git {sub}` without `--no-edit` opens an editor"));
            }
        }
        _ => {}
    }
    Rules::Grammar
}

fn tar_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
    // Old-style first argument (`tar xzf a.tgz`): letters are short
    // options, values taken from the next words in order.
    let mut words: Vec<Word> = Vec::new();
    let mut rest = args;
    if let Some(first) = args.first() {
        let t = first.text.as_str();
        if !t.starts_with('-') && !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()) {
            let mut k = 1;
            for c in t.chars() {
                words.push(Word::literal(format!("-{c}")));
                let takes = grammars::TAR
                    .opts
                    .iter()
                    .any(|o| o.shorts.contains(&c) && o.arity == opts::Arity::Value);
                if takes {
                    if let Some(v) = args.get(k) {
                        words.push(v.clone());
                        k += 1;
                    }
                }
            }
            rest = &args[k.min(args.len())..];
        }
    }
    words.extend(rest.iter().cloned());
    let p = apply(ctx, &grammars::TAR, "tar", &words);
    let extract = p.has("extract");
    if !p.has("force-local") {
        if let Some(f) = p.values("file").find(|v| remote_spec(&v.text)) {
            ctx.risky(format!(
                "`tar -f {}` is a remote archive: tar runs a remote shell for it",
                f.text
            ));
        }
    }
    if extract {
        if let Some(d) = p.values("directory").find(|d| {
            is_dangerous_path(d) || paths::write_target_danger(&format!("{}/x", d.text)).is_some()
        }) {
            ctx.danger(format!("`tar` extracts into `{}`", d.text));
        }
    }
    Rules::Grammar
}

fn sed_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
    let p = apply(ctx, &grammars::SED, "sed", args);
    let mut scripts: Vec<&Word> = p.values("expression").collect();
    let from_file = p.has("file");
    let mut files: &[Word] = &p.operands;
    if scripts.is_empty() && !from_file {
        if let Some((s, f)) = p.operands.split_first() {
            scripts.push(s);
            files = f;
        }
    }
    if p.has("in-place") {
        ctx.restrict("`sed -i` writes files");
        for f in files {
            if let Some(why) = paths::write_target_danger(&f.text) {
                ctx.danger(format!("`sed -i` {why}"));
            }
        }
    }
    let sandbox = p.has("sandbox");
    for s in scripts {
        if s.dynamic {
            ctx.risky(format!(
                "the `sed` script `{}` depends on expansion",
                s.text
            ));
            continue;
        }
        match sed_script_issues(&s.text) {
            Err(e) => {
                if ctx.allowlist() {
                    ctx.restrict(format!("`sed` script {e}"));
                } else if !sandbox && s.text.contains(['e', 'w', 'W']) {
                    ctx.unknown(format!("`sed` script {e}"));
                }
            }
            Ok(issues) if !sandbox => {
                for i in issues {
                    match i {
                        SedIssue::Exec(what) => {
                            ctx.risky(format!("`sed` script uses {what}, which runs commands"))
                        }
                        SedIssue::Write(target) => {
                            ctx.restrict(format!("`sed` script writes the file `{target}`"));
                            if let Some(why) = paths::write_target_danger(&target) {
                                ctx.danger(format!("`sed` script {why}"));
                            }
                        }
                    }
                }
            }
            Ok(_) => {}
        }
    }
    Rules::Grammar
}

fn awk_rules(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    let p = apply(ctx, &grammars::AWK, base, args);
    for v in p.values("W") {
        for item in v.text.split(',') {
            let name = item.split('=').next().unwrap_or(item);
            match opts::match_long(&grammars::MAWK_W, name) {
                opts::LongMatch::Found { opt, .. } if opt.effect == Effect::Exec => {
                    ctx.risky(format!("`{base} -W {item}` runs a program file"))
                }
                opts::LongMatch::Found { .. } => {}
                _ => ctx.restrict(format!(
                    "`{base} -W {item}` is not an option the gate knows"
                )),
            }
        }
    }
    let sandbox = p.has("sandbox");
    let mut programs: Vec<&Word> = p.values("source").collect();
    if programs.is_empty() && !p.has("file") && !p.has("exec") {
        programs.extend(p.operands.first());
    }
    if sandbox {
        return Rules::Grammar;
    }
    for prog in programs {
        let text = prog.text.as_str();
        if prog.dynamic {
            ctx.risky(format!(
                "the `{base}` program `{text}` depends on expansion"
            ));
            continue;
        }
        if text.contains("system")
            || text.contains('|')
            || text.contains("@load")
            || text.contains("@include")
            || awk_indirect_call(text)
        {
            ctx.risky(format!(
                "`{base}` program runs commands (`system`, pipes, indirect calls or extensions)"
            ));
        }
        if let Some(target) = awk_output_redirect(text) {
            ctx.restrict(format!("`{base}` program writes files (`print >`)"));
            if let Some(why) = target.as_deref().and_then(paths::write_target_danger) {
                ctx.danger(format!("`{base}` program {why}"));
            }
        }
    }
    Rules::Grammar
}

/// gawk's indirect function calls (`@f()`), which can call `system`.
fn awk_indirect_call(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'@'
            && b.get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_')
    })
}

/// `print ... > file` / `printf ... >> file` outside parentheses: Some,
/// with the target when it is a string literal.
fn awk_output_redirect(text: &str) -> Option<Option<String>> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("print") {
        let mut j = i + pos + 5;
        let mut depth = 0i32;
        while j < bytes.len() {
            match bytes[j] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b'>' if depth <= 0 => {
                    let rest = text[j..].trim_start_matches('>').trim_start();
                    let target = rest
                        .strip_prefix('"')
                        .and_then(|r| r.split_once('"'))
                        .map(|(t, _)| t.to_string());
                    return Some(target);
                }
                b';' | b'}' | b'\n' if depth <= 0 => break,
                _ => {}
            }
            j += 1;
        }
        i = j.min(bytes.len());
        if i >= bytes.len() {
            break;
        }
    }
    None
}

/// What a sed script does beyond editing its input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SedIssue {
    /// `e`, `s///e`: runs a command.
    Exec(&'static str),
    /// `w`, `W`, `s///w`: writes this file.
    Write(String),
}

/// Scans a GNU sed script command by command, as GNU sed reads it: the
/// commands that run programs or write files, or Err when the script is
/// not understood.
pub(crate) fn sed_script_issues(script: &str) -> Result<Vec<SedIssue>, String> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut issues = Vec::new();
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
        b[start..*i].iter().collect::<String>().trim().to_string()
    };
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == ' ' || b[*i] == '\t') {
            *i += 1;
        }
    };
    // Reads a delimited part starting after the delimiter; returns index after the closing one.
    let delimited = |mut i: usize, delim: char| -> Result<usize, String> {
        while i < b.len() {
            if b[i] == '\\' {
                i += 2;
                continue;
            }
            if b[i] == delim {
                return Ok(i + 1);
            }
            if b[i] == '\n' && delim != '\n' {
                return Err("has an unterminated expression".into());
            }
            i += 1;
        }
        Err("has an unterminated expression".into())
    };
    let address = |i: &mut usize| -> Result<(), String> {
        if *i >= b.len() {
            return Ok(());
        }
        match b[*i] {
            '0'..='9' => {
                while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == '~') {
                    *i += 1;
                }
            }
            '$' => *i += 1,
            '/' => {
                *i = delimited(*i + 1, '/')?;
                while *i < b.len() && (b[*i] == 'I' || b[*i] == 'M') {
                    *i += 1;
                }
            }
            '\\' => {
                let d = *b.get(*i + 1).ok_or("ends after `\\`")?;
                *i = delimited(*i + 2, d)?;
                while *i < b.len() && (b[*i] == 'I' || b[*i] == 'M') {
                    *i += 1;
                }
            }
            '+' | '~' => {
                *i += 1;
                while *i < b.len() && b[*i].is_ascii_digit() {
                    *i += 1;
                }
            }
            _ => {}
        }
        Ok(())
    };
    let to_eol = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
    };
    let to_sep = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' && b[*i] != ';' && b[*i] != '}' {
            *i += 1;
        }
    };
    while i < b.len() {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == '#' {
            to_eol(&mut i);
            continue;
        }
        address(&mut i)?;
        skip_ws(&mut i);
        if i < b.len() && b[i] == ',' {
            i += 1;
            skip_ws(&mut i);
            address(&mut i)?;
            skip_ws(&mut i);
        }
        while i < b.len() && b[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        let Some(&cmd) = b.get(i) else {
            return Err("ends after an address".into());
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            's' => {
                let d = *b.get(i).ok_or("has an unterminated `s` command")?;
                if d == '\n' || d == '\\' {
                    return Err("has an `s` command with a bad delimiter".into());
                }
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
                while i < b.len() {
                    match b[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            issues.push(SedIssue::Exec("the `e` flag of `s`"));
                            i += 1;
                        }
                        'w' => {
                            i += 1;
                            issues.push(SedIssue::Write(rest_of_line(&mut i)));
                        }
                        _ => break,
                    }
                }
            }
            'y' => {
                let d = *b.get(i).ok_or("has an unterminated `y` command")?;
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line, with `\`-newline continuation.
                while i < b.len() && b[i] != '\n' {
                    if b[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            'r' | 'R' => to_eol(&mut i),
            'b' | 't' | 'T' | ':' | 'v' => to_sep(&mut i),
            'q' | 'Q' | 'l' | 'L' => {
                skip_ws(&mut i);
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'e' => {
                issues.push(SedIssue::Exec("the `e` command"));
                to_eol(&mut i);
            }
            'w' | 'W' => issues.push(SedIssue::Write(rest_of_line(&mut i))),
            c => {
                return Err(format!(
                    "uses the command `{c}`, which the gate does not know"
                ))
            }
        }
    }
    Ok(issues)
}
