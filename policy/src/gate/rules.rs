//! The danger list, the allowlist, and program-specific rules.

use super::word::Word;
use super::{Ctx, ParsedCommand};

/// Directories whose programs may match the allowlist by their basename.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Top-level directories whose recursive removal is on the danger list.
const SYSTEM_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "nix",
    "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "usr", "var",
];

pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(crate) fn is_downloader(base: &str) -> bool {
    matches!(
        base,
        "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" | "xh" | "lwp-request" | "GET"
    )
}

/// Shells and interpreters that run code read from stdin or a string.
pub(crate) fn runs_code(base: &str) -> bool {
    matches!(
        base,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "mksh"
            | "ash"
            | "fish"
            | "csh"
            | "tcsh"
            | "python"
            | "python2"
            | "python3"
            | "perl"
            | "ruby"
            | "node"
            | "php"
            | "lua"
            | "eval"
            | "source"
            | "."
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

pub(crate) fn check_assignment(ctx: &mut Ctx, name: &str) {
    if ctx.allowlist() && is_dangerous_var(name) {
        ctx.restrict(format!("assignment to `{name}` can change which code runs"));
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

/// Does `text` name a device that writing to would damage (a disk, memory)?
pub(crate) fn is_device_write_target(text: &str) -> bool {
    let Some(dev) = text.strip_prefix("/dev/") else {
        return false;
    };
    let harmless = [
        "null", "zero", "full", "random", "urandom", "tty", "stdout", "stderr", "stdin", "ptmx",
    ];
    !(harmless.contains(&dev)
        || dev.starts_with("fd/")
        || dev.starts_with("pts/")
        || dev.starts_with("shm/"))
}

/// `/`, `~`, `$HOME` or a top-level system directory (also as glob).
pub(crate) fn is_dangerous_path(w: &Word) -> bool {
    let unquoted = w.text.replace('"', "");
    let t = unquoted.as_str();
    let home_forms = ["~", "$HOME", "${HOME}"];
    for h in home_forms {
        if let Some(rest) = t.strip_prefix(h) {
            let rest = rest.trim_start_matches('/');
            if rest.is_empty() || rest == "*" || rest == ".*" || rest == "." {
                return true;
            }
        }
    }
    // `~user`, `~user/`, `~user/*`: another user's home.
    if w.pattern && t.starts_with('~') {
        let (user, rest) = t[1..].split_once('/').unwrap_or((&t[1..], ""));
        if user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && matches!(rest, "" | "*" | ".*" | ".")
        {
            return true;
        }
    }
    if !t.starts_with('/') {
        return false;
    }
    let mut parts: Vec<&str> = Vec::new();
    for p in t.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let glob = |p: &str| p.contains(['*', '?', '[']);
    match parts.as_slice() {
        [] => true,
        [one] => SYSTEM_DIRS.contains(one) || glob(one),
        [one, two] => (SYSTEM_DIRS.contains(one) || glob(one)) && glob(two),
        _ => false,
    }
}

fn short_flag(args: &[Word], c: char) -> bool {
    args.iter().any(|w| {
        let t = w.text.as_str();
        t.len() > 1 && t.starts_with('-') && !t.starts_with("--") && t[1..].contains(c)
    })
}

fn long_flag(args: &[Word], name: &str) -> bool {
    args.iter().any(|w| {
        w.text == name
            || w.text
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with('='))
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

/// Danger list (every mode) and allowlist rules for one resolved command.
pub(crate) fn check_command(ctx: &mut Ctx, words: &[Word], open: bool) {
    let base = basename(&words[0].text).to_string();
    let args = &words[1..];
    danger(ctx, &base, args, open);
    if ctx.allowlist() {
        allowlist_rules(ctx, &base, args, open);
    }
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
            | "git"
            | "systemctl"
    );
    if checked {
        if let Some(w) = args.iter().find(|w| w.multi && w.text.contains(['{', '}'])) {
            ctx.danger(format!(
                "brace expansion `{}` hides the real arguments of `{base}`",
                w.text
            ));
        }
    }
    match base {
        "rm" => {
            if long_flag(args, "--no-preserve-root") {
                ctx.danger("`rm --no-preserve-root`");
            }
            let recursive =
                short_flag(args, 'r') || short_flag(args, 'R') || long_flag(args, "--recursive");
            if recursive {
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
        "chmod" | "chown" | "chgrp" => {
            if short_flag(args, 'R') || long_flag(args, "--recursive") {
                if let Some(w) = operands(args).into_iter().find(|w| is_dangerous_path(w)) {
                    ctx.danger(format!("recursive `{base}` of `{}`", w.text));
                }
            }
        }
        "mkswap" | "wipefs" | "mke2fs" | "blkdiscard" | "sfdisk" | "fdisk" | "parted"
        | "sgdisk" => ctx.danger(format!("`{base}` rewrites disks or filesystems")),
        b if b.starts_with("mkfs") => ctx.danger(format!("`{base}` formats a filesystem")),
        "dd" => {
            for w in args {
                if let Some(target) = w.text.strip_prefix("of=") {
                    if is_device_write_target(target) {
                        ctx.danger(format!("`dd` writes to device `{target}`"));
                    } else if w.dynamic {
                        ctx.danger(format!("`dd` output `{target}` depends on expansion"));
                    }
                }
            }
        }
        "cp" | "mv" | "tee" | "shred" | "install" | "truncate" | "cat" | "pv" => {
            if base != "cat" && base != "pv" {
                if let Some(w) = operands(args)
                    .into_iter()
                    .find(|w| is_device_write_target(&w.text))
                {
                    ctx.danger(format!("`{base}` writes to device `{}`", w.text));
                }
            }
        }
        "git" => {
            if let Some((sub, rest)) = git_subcommand(args) {
                if sub == "push" {
                    let force = long_flag(rest, "--force")
                        || long_flag(rest, "--force-with-lease")
                        || long_flag(rest, "--mirror")
                        || short_flag(rest, 'f')
                        || rest.iter().any(|w| w.text.starts_with('+'));
                    if force {
                        ctx.danger("`git push --force` rewrites remote history");
                    }
                }
            }
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            ctx.danger(format!("`{base}` stops the machine"))
        }
        "systemctl" => {
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "poweroff" | "reboot" | "halt" | "kexec" | "suspend" | "hibernate"
                )
            }) {
                ctx.danger("`systemctl` stops the machine");
            }
        }
        _ => {}
    }
}

/// Splits `git [global options] SUBCOMMAND ARGS`.
fn git_subcommand(args: &[Word]) -> Option<(&str, &[Word])> {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if !t.starts_with('-') {
            return Some((t, &args[i + 1..]));
        }
        // Global options taking a separate value.
        if matches!(
            t,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--config-env"
                | "--super-prefix"
                | "--list-cmds"
        ) {
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// Programs whose options can make them run programs or write files; when
/// xargs adds unknown arguments from stdin, they are not allowed.
const RULED: &[&str] = &[
    "git", "rg", "awk", "gawk", "mawk", "nawk", "busybox", "sed", "tar", "find", "sort", "time",
];

fn allowlist_rules(ctx: &mut Ctx, base: &str, args: &[Word], open: bool) {
    if open && RULED.contains(&base) {
        ctx.restrict(format!("`{base}` run by xargs gets options from stdin"));
    }
    // `rg x {--pre=sh,y}` and `tar cf a.tar *` (with a file named
    // `--checkpoint-action=exec=sh`) smuggle options past the rules below.
    if let Some(w) = args.iter().find(|w| w.multi && w.text.contains(['{', '}'])) {
        ctx.restrict(format!("brace expansion `{}`", w.text));
    }
    if RULED.contains(&base) {
        let before_end = args.iter().take_while(|w| w.text != "--");
        if let Some(w) = before_end.into_iter().find(|w| w.multi) {
            ctx.restrict(format!(
                "unquoted glob `{}` for `{base}` (file names could be options); quote it or put it after `--`",
                w.text
            ));
        }
    }
    match base {
        "git" => git_rules(ctx, args),
        "rg" => {
            if long_flag(args, "--pre") {
                ctx.restrict("`rg --pre` runs a program on every file");
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => awk_rules(ctx, base, args),
        "sed" => sed_rules(ctx, args),
        "tar" => tar_rules(ctx, args),
        "sort" => {
            if short_flag(args, 'o')
                || long_flag(args, "--output")
                || long_flag(args, "--compress-program")
            {
                ctx.restrict("`sort -o`/`--compress-program` writes a file or runs a program");
            }
        }
        _ => {}
    }
}

fn git_rules(ctx: &mut Ctx, args: &[Word]) {
    // Global options.
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if !t.starts_with('-') {
            break;
        }
        if t == "-c" || t.starts_with("-c") || t.starts_with("--config-env") {
            ctx.restrict("`git -c`/`--config-env` can set options that run programs");
        }
        if t.starts_with("--exec-path") {
            ctx.restrict("`git --exec-path` changes where git finds its programs");
        }
        if t == "--git-dir" || t.starts_with("--git-dir=") {
            ctx.restrict("`git --git-dir` can point at a repository whose config runs programs");
        }
        i += if matches!(
            t,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
        ) {
            2
        } else {
            1
        };
    }
    let Some(sub) = args.get(i).map(|w| w.text.as_str()) else {
        return;
    };
    let rest = &args[i + 1..];
    for w in rest {
        let t = w.text.as_str();
        for bad in [
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "--output",
            "--extcmd",
            "--open-files-in-pager",
            "--config",
        ] {
            if t == bad || t.strip_prefix(bad).is_some_and(|r| r.starts_with('=')) {
                ctx.restrict(format!("`git {sub} {bad}` runs a program or writes a file"));
            }
        }
        if t.starts_with("ext::") || t.contains("::") && t.starts_with("fd::") {
            ctx.restrict("`ext::` remote URLs run programs");
        }
    }
    let short = |c: char| short_flag(rest, c);
    match sub {
        "clone" | "fetch" | "ls-remote" | "pull" | "archive" if short('u') => {
            ctx.restrict(format!("`git {sub} -u` sets a program to run"))
        }
        "rebase" if short('x') => ctx.restrict("`git rebase -x` runs a program"),
        "grep" if short('O') => ctx.restrict("`git grep -O` runs a pager"),
        "difftool" | "mergetool" | "filter-branch" | "instaweb" | "send-email" | "daemon"
        | "credential" | "web--browse" => ctx.restrict(format!("`git {sub}` runs other programs")),
        "bisect" if rest.first().is_some_and(|w| w.text == "run") => {
            ctx.restrict("`git bisect run` runs a program")
        }
        "submodule" if rest.iter().any(|w| w.text == "foreach") => {
            ctx.restrict("`git submodule foreach` runs a program")
        }
        "config" => {
            let reads = rest.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "--get"
                        | "--get-all"
                        | "--get-regexp"
                        | "--list"
                        | "-l"
                        | "get"
                        | "list"
                        | "--get-urlmatch"
                )
            });
            if !reads {
                ctx.restrict("`git config` that is not a read can set options that run programs");
            }
        }
        "alias" => ctx.restrict("`git alias` defines commands"),
        _ => {}
    }
}

fn awk_rules(ctx: &mut Ctx, base: &str, args: &[Word]) {
    let mut program: Option<&str> = None;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let takes_value = matches!(
            t,
            "-F" | "-v"
                | "-f"
                | "-e"
                | "-i"
                | "-l"
                | "-E"
                | "-W"
                | "--source"
                | "--file"
                | "--include"
                | "--load"
                | "--exec"
                | "--field-separator"
                | "--assign"
        );
        let flag = t.trim_start_matches('-');
        let letter = flag.chars().next().unwrap_or(' ');
        if t.starts_with("--") {
            let name = flag.split('=').next().unwrap_or(flag);
            if matches!(
                name,
                "file"
                    | "include"
                    | "load"
                    | "exec"
                    | "dump-variables"
                    | "pretty-print"
                    | "profile"
                    | "debug"
            ) {
                ctx.restrict(format!("`{base} --{name}` loads or writes files"));
            }
            if name == "source" {
                program = args
                    .get(i + 1)
                    .map(|w| w.text.as_str())
                    .or(flag.split_once('=').map(|(_, v)| v));
            }
        } else {
            match letter {
                'f' | 'i' | 'l' | 'E' | 'o' | 'p' | 'd' | 'W' => {
                    ctx.restrict(format!("`{base} -{letter}` loads or writes files"));
                }
                'e' => program = args.get(i + 1).map(|w| w.text.as_str()),
                'F' | 'v' => {}
                _ => {}
            }
        }
        i += if takes_value && !t.contains('=') {
            2
        } else {
            1
        };
    }
    let text = match program {
        Some(p) => Some(p),
        None => args.get(i).map(|w| w.text.as_str()),
    };
    let Some(text) = text else { return };
    if text.contains("system")
        || text.contains('|')
        || text.contains("@load")
        || text.contains("@include")
    {
        ctx.restrict(format!(
            "`{base}` program runs commands (`system`, pipes or extensions)"
        ));
    }
    if awk_output_redirect(text) {
        ctx.restrict(format!("`{base}` program writes files (`print >`)"));
    }
}

/// `print ... > file` / `printf ... >> file` outside parentheses.
fn awk_output_redirect(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("print") {
        let mut j = i + pos + 5;
        let mut depth = 0i32;
        while j < bytes.len() {
            match bytes[j] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b'>' if depth <= 0 => return true,
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
    false
}

fn sed_rules(ctx: &mut Ctx, args: &[Word]) {
    let mut scripts: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut operands_start = None;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            operands_start = Some(i + 1);
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match name {
                "expression" => match value {
                    Some(v) => scripts.push(v),
                    None => {
                        if let Some(w) = args.get(i + 1) {
                            scripts.push(&w.text);
                        }
                        i += 1;
                    }
                },
                "file" => ctx.restrict("`sed -f` runs a script file the gate cannot inspect"),
                "in-place" => ctx.restrict("`sed -i` writes files"),
                "line-length" if value.is_none() => i += 1,
                "quiet" | "silent" | "regexp-extended" | "separate" | "unbuffered"
                | "null-data" | "posix" | "debug" | "sandbox" | "follow-symlinks" | "binary"
                | "line-length" | "help" | "version" => {}
                _ => ctx.restrict(format!("unknown `sed` option `{t}`")),
            }
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let rest: Vec<char> = t.chars().skip(1).collect();
            let mut k = 0;
            while k < rest.len() {
                match rest[k] {
                    'n' | 'E' | 'r' | 's' | 'u' | 'z' | 'b' => k += 1,
                    'e' => {
                        let attached = &t[1 + k + 1..];
                        if attached.is_empty() {
                            if let Some(w) = args.get(i + 1) {
                                scripts.push(&w.text);
                            }
                            i += 1;
                        } else {
                            scripts.push(attached);
                        }
                        break;
                    }
                    'f' => {
                        ctx.restrict("`sed -f` runs a script file the gate cannot inspect");
                        break;
                    }
                    'i' => {
                        ctx.restrict("`sed -i` writes files");
                        break;
                    }
                    'l' => {
                        if k + 1 == rest.len() {
                            i += 1;
                        }
                        break;
                    }
                    c => {
                        ctx.restrict(format!("unknown `sed` option `-{c}`"));
                        break;
                    }
                }
            }
            i += 1;
            continue;
        }
        operands_start = Some(i);
        break;
    }
    if scripts.is_empty() {
        if let Some(w) = operands_start.and_then(|s| args.get(s)) {
            scripts.push(&w.text);
        }
    }
    for s in scripts {
        if let Err(e) = sed_script_safe(s) {
            ctx.restrict(format!("`sed` script {e}"));
        }
    }
}

/// Scans a GNU sed script; Err when it can run commands (`e`, `s///e`),
/// write files (`w`, `W`, `s///w`) or is not understood.
pub(crate) fn sed_script_safe(script: &str) -> Result<(), String> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
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
                        'e' => return Err("uses the `e` flag, which runs commands".into()),
                        'w' => return Err("uses the `w` flag, which writes a file".into()),
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
            'e' => return Err("uses the `e` command, which runs commands".into()),
            'w' | 'W' => return Err("uses the `w` command, which writes a file".into()),
            c => {
                return Err(format!(
                    "uses the command `{c}`, which the gate does not know"
                ))
            }
        }
    }
    Ok(())
}

fn tar_rules(ctx: &mut Ctx, args: &[Word]) {
    for (n, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        for bad in [
            "--to-command",
            "--use-compress-program",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "--rmt-command",
            "--rsh-command",
            "--index-file",
        ] {
            if t == bad || t.strip_prefix(bad).is_some_and(|r| r.starts_with('=')) {
                ctx.restrict(format!("`tar {bad}` runs a program or writes a file"));
            }
        }
        let old_style = n == 0 && !t.starts_with('-');
        let short = t.starts_with('-') && !t.starts_with("--");
        if (short || old_style) && (t.contains('I') || t.contains('F')) {
            ctx.restrict("`tar -I`/`-F` runs a program");
        }
        if ((short || old_style) && t.contains('x')) || t == "--extract" || t == "--get" {
            ctx.restrict("`tar` extraction writes files");
        }
    }
}
