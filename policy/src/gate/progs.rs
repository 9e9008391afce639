//! Rules for the programs agents use most (build tools, package managers,
//! downloaders, network tools) and the rules that generalise to programs
//! the gate has never seen:
//!
//! - an option whose name or value says it takes a program, a script or a
//!   command line (`*exec*`, `*wrapper*`, `*askpass*`, `*shell*`,
//!   `*command*`, `*toolexec*`, `--python`, `-B`, `SYSTEM:`/`EXEC:`
//!   addresses, `--config KEY=VALUE` setting one) is not understood in
//!   allowlist mode, whatever the program;
//! - an argument that is itself a command line (a word naming a program
//!   followed by its arguments, or a string that parses as a shell
//!   command) is analysed as one, for the danger list;
//! - an argument that names a raw disk, or an output option that names a
//!   start-up or system file, is dangerous whatever the program.

use super::paths;
use super::rules::{self, basename};
use super::word::Word;
use super::{Ctx, Kind, Rules};

/// Words in an option's name (or a `KEY=` in its value) that say it takes
/// a program or a command line.
const EXEC_WORDS: &[&str] = &[
    "exec",
    "wrapper",
    "askpass",
    "shell",
    "command",
    "toolexec",
    "editor",
    "pager",
    "runner",
    "launcher",
    "interpreter",
];

/// Whole parts of an option's name (between `-`, `_`, `.`) that say the
/// same: `--cmd`, `--pre-script`, `--post-hook`.
const EXEC_PARTS: &[&str] = &["cmd", "script", "hook", "hooks", "program", "prog"];

fn says_exec(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    EXEC_WORDS
        .iter()
        .copied()
        .find(|w| n.contains(w))
        .or_else(|| {
            n.split(['-', '_', '.'])
                .find_map(|part| EXEC_PARTS.iter().copied().find(|p| *p == part))
        })
}

/// `SYSTEM:`, `EXEC:` (socat addresses and the like).
fn exec_address(t: &str) -> bool {
    let u = t.to_ascii_uppercase();
    ["SYSTEM:", "EXEC:", "SHELL:"]
        .iter()
        .any(|p| u.starts_with(p))
        || u.contains("!!SYSTEM:")
        || u.contains("!!EXEC:")
}

/// Why `words` (the arguments of a program the gate has no rules for)
/// may make it run another program, if they do.
pub(crate) fn exec_option(args: &[Word]) -> Option<String> {
    let mut prev_config = false;
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if prev_config {
            prev_config = false;
            if let Some((k, v)) = t.split_once('=') {
                if let Some(m) = says_exec(k).or_else(|| says_exec(v).filter(|_| v.contains('='))) {
                    return Some(format!("`--config {t}` sets a {m} program"));
                }
            }
        }
        if exec_address(t) {
            return Some(format!("`{t}` is an address that runs a program"));
        }
        if let Some(opt) = t.strip_prefix('-') {
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (opt, None),
            };
            let bare = name.trim_start_matches('-');
            if let Some(m) = says_exec(bare) {
                return Some(format!("option `{t}` takes a program or a command ({m})"));
            }
            if bare == "python" || t == "-B" || (t.starts_with("-B") && !t.starts_with("-B-")) {
                return Some(format!("option `{t}` names a program to run"));
            }
            if let Some(v) = value {
                let lv = v.to_ascii_lowercase();
                if lv.starts_with("exec") || lv.contains("exec=") || exec_address(v) {
                    return Some(format!("option `{t}` runs a program"));
                }
                if let Some((k, _)) = v.split_once('=') {
                    if let Some(m) = says_exec(k) {
                        return Some(format!("option `{t}` sets a {m} program"));
                    }
                }
            }
            if bare == "config" && value.is_none() {
                prev_config = true;
            }
            continue;
        }
        // `KEY=VALUE` operands (make variables, ssh `-o` values, ...).
        if let Some((k, _)) = t.split_once('=') {
            if !k.is_empty() && !k.contains('/') {
                if let Some(m) = says_exec(k) {
                    return Some(format!("`{t}` sets a {m} program"));
                }
            }
        }
    }
    None
}

/// Programs whose arguments are text, never a command they run.
fn text_args(base: &str) -> bool {
    matches!(
        base,
        "echo"
            | "printf"
            | "logger"
            | "notify-send"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ag"
            | "ack"
            | "jq"
            | "yq"
            | "man"
            | "help"
            | "whatis"
            | "apropos"
            | "type"
            | "which"
            | "whereis"
            | "test"
            | "["
            | "[["
            | "true"
            | "false"
            | ":"
            | "cd"
            | "pushd"
            | "popd"
            | "touch"
            | "mkdir"
            | "cat"
            | "ls"
            | "wc"
            | "head"
            | "tail"
            | "sort"
            | "uniq"
            | "cut"
            | "tr"
            | "diff"
            | "cmp"
            | "stat"
            | "file"
            | "basename"
            | "dirname"
            | "realpath"
            | "readlink"
            | "expr"
            | "seq"
            | "sleep"
            | "date"
            | "export"
            | "local"
            | "declare"
            | "typeset"
            | "readonly"
            | "unset"
            | "set"
            | "shopt"
            | "read"
            | "return"
            | "exit"
            | "alias"
    )
}

/// At most this many embedded strings are parsed per command line.
const MAX_EMBEDDED: usize = 256;

/// The arguments of a program the gate has no rules for, read as command
/// lines: a word that names a program (a wrapper or one on the danger
/// list) followed by its arguments, and every argument that parses as a
/// shell command. What is dangerous there is dangerous here (the program
/// may run it: `anything rm -rf ~`, `anything 'rm -rf ~'`).
pub(crate) fn embedded(ctx: &mut Ctx, base: &str, args: &[Word]) {
    if text_args(base) || args.is_empty() {
        return;
    }
    if ctx.embedded_depth >= super::walk::MAX_REPARSE {
        ctx.embedded_parses = MAX_EMBEDDED;
        ctx.unknown("too many arguments that are command lines to check, or nested too deeply");
        return;
    }
    let mut dangers: Vec<String> = Vec::new();
    let mut starts = 0;
    for (i, w) in args.iter().enumerate() {
        let Some(t) = w.value() else { continue };
        // `--cmd='rm -rf ~'`: the value.
        let t = match t.split_once('=') {
            Some((o, v)) if o.starts_with('-') => v,
            _ => t,
        };
        if t.starts_with('-') || t.is_empty() {
            continue;
        }
        let b = basename(t);
        // Inside a string already read as a command line, only strings
        // nested in it are read again (prose such as a commit title is
        // not taken for a program and its arguments).
        if starts < 4
            && ctx.embedded_depth == 0
            && t == w.text
            && rules::check_program_name(w).is_ok()
            && (super::wrappers::is_wrapper(b) || rules::on_danger_list(b))
        {
            starts += 1;
            dangers.extend(scratch(ctx, |s| {
                s.resolve(args[i..].to_vec(), Vec::new(), 0, false)
            }));
        }
        let shellish = t.contains([' ', ';', '|', '&', '\n']) && t.len() > 2;
        if shellish {
            if ctx.embedded_parses >= MAX_EMBEDDED {
                ctx.unknown(
                    "too many arguments that are command lines to check, or nested too deeply",
                );
                break;
            }
            ctx.embedded_parses += 1;
            let text = t.to_string();
            dangers.extend(scratch(ctx, |s| {
                super::walk::parse_and_walk(s, &text, &[], 0)
            }));
        }
    }
    for d in dangers {
        let d = d.strip_prefix("dangerous: ").unwrap_or(&d).to_string();
        ctx.danger(format!("`{base}` may run its arguments as a command: {d}"));
    }
}

/// Runs `f` on a scratch context (ask mode, the same parse budget) and
/// returns the dangers it found.
fn scratch(ctx: &mut Ctx, f: impl FnOnce(&mut Ctx)) -> Vec<String> {
    let budget = std::mem::replace(
        &mut ctx.budget,
        super::budget::Budget::new(super::budget::Limits::DEFAULT),
    );
    let mut s = Ctx {
        mode: super::GateMode::Ask,
        allow: &[],
        findings: Default::default(),
        functions: Vec::new(),
        commands: Vec::new(),
        code_text: None,
        cd_danger: ctx.cd_danger.clone(),
        evaluator: false,
        budget,
        env_splits: ctx.env_splits,
        embedded_depth: ctx.embedded_depth + 1,
        embedded_parses: ctx.embedded_parses,
        cwd: ctx.cwd.clone(),
        downloads: Vec::new(),
        redirect_seen: false,
    };
    f(&mut s);
    ctx.budget = std::mem::replace(
        &mut s.budget,
        super::budget::Budget::new(super::budget::Limits::DEFAULT),
    );
    ctx.embedded_parses = s.embedded_parses;
    if s.embedded_parses >= MAX_EMBEDDED {
        ctx.unknown("too many arguments that are command lines to check, or nested too deeply");
    }
    s.findings.of_kind(Kind::Danger)
}

/// Is `text` a raw disk (or a partition, an LVM or device-mapper volume)?
pub(crate) fn is_raw_disk(text: &str) -> bool {
    let n = paths::normalize(text);
    if n.relative {
        return false;
    }
    let p: Vec<&str> = n.parts.iter().map(|p| p.as_ref()).collect();
    match p.as_slice() {
        ["dev", "disk" | "mapper" | "block", _, ..] => true,
        ["dev", d, ..] => {
            [
                "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "md", "dm-", "nbd", "loop", "rbd", "zd",
                "mtd", "sr",
            ]
            .iter()
            .any(|p| d.starts_with(p))
                && !d.starts_with("mem")
        }
        _ => false,
    }
}

/// Programs that only read or report on a disk named in their arguments.
fn reads_disks(base: &str, args: &[Word]) -> bool {
    matches!(
        base,
        "lsblk"
            | "blkid"
            | "smartctl"
            | "udevadm"
            | "file"
            | "stat"
            | "ls"
            | "df"
            | "findmnt"
            | "dumpe2fs"
            | "xxd"
            | "hexdump"
            | "od"
            | "readlink"
            | "realpath"
            | "lsof"
            | "fuser"
            | "iostat"
            | "mount"
            | "umount"
            | "eject"
            | "partprobe"
            | "cat"
            | "head"
            | "strings"
            | "cmp"
            | "sha256sum"
            | "md5sum"
            | "b2sum"
            | "sha1sum"
            | "pv"
            | "echo"
            | "printf"
            | "test"
            | "["
            | "[["
    ) || (matches!(base, "fdisk" | "sfdisk" | "parted" | "gdisk" | "sgdisk")
        && args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-l" | "--list" | "-p" | "print")))
        || (base == "hdparm"
            && args
                .iter()
                .all(|w| !w.text.starts_with("--") || w.text == "--"))
        || (base == "blockdev"
            && args
                .iter()
                .all(|w| w.text.starts_with("--get") || !w.text.starts_with('-')))
        || (base == "tune2fs" && args.iter().any(|w| w.text == "-l"))
        || (base == "cryptsetup"
            && args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "status" | "luksDump" | "isLuks" | "open" | "luksOpen" | "close" | "luksClose"
                )
            }))
        || (base == "udisksctl"
            && args
                .iter()
                .any(|w| matches!(w.text.as_str(), "mount" | "unmount" | "info" | "status")))
        || matches!(base, "fsck" | "e2fsck" | "xfs_repair") && args.iter().any(|w| w.text == "-n")
}

/// Option names whose value is a file the program writes.
fn output_option(name: &str) -> bool {
    matches!(
        name,
        "-o" | "-O"
            | "--output"
            | "--output-document"
            | "--output-file"
            | "--outfile"
            | "--out"
            | "--log-file"
            | "--logfile"
            | "--dump-header"
            | "--cookie-jar"
            | "--trace"
            | "--trace-ascii"
            | "--libcurl"
            | "--etag-save"
            | "--stderr"
            | "--append-output"
            | "--export-json"
            | "--export-csv"
            | "--export-markdown"
            | "--save"
            | "--dest"
            | "--destination"
    )
}

/// Option names whose value is a directory the program writes into (or,
/// for test runners, removes and recreates).
fn output_dir_option(name: &str) -> bool {
    matches!(
        name,
        "--target-directory"
            | "--output-dir"
            | "--directory-prefix"
            | "--basetemp"
            | "--target-dir"
    )
}

/// Dangers by target, whatever the program: a raw disk in its arguments
/// (unless the program only reads it), an output option naming a device, a
/// system file or a start-up file, a test runner's temporary directory
/// that is home or a system directory (it is emptied first).
pub(crate) fn targets(ctx: &mut Ctx, base: &str, args: &[Word]) {
    if base == "dd" {
        return; // `of=` has its own rule; `if=` only reads.
    }
    let reads = reads_disks(base, args);
    // Every user's home through a glob (`/home/*/.ssh`).
    if let Some(w) = args.iter().find(|w| {
        w.multi && {
            let n = paths::normalize(&w.text);
            !n.relative
                && n.parts.len() >= 2
                && n.parts[0] == "home"
                && n.parts[1].contains(['*', '?', '['])
        }
    }) {
        ctx.danger(format!(
            "`{base}` reaches every user's home directory through `{}`",
            w.text
        ));
    }
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if !reads && is_raw_disk(t.split_once('=').map_or(t, |(_, v)| v)) {
            let input = t.starts_with("if=") || t.starts_with("--input");
            if !input {
                ctx.danger(format!(
                    "`{base}` is given the raw disk `{t}` (writes to it destroy the filesystem)"
                ));
            }
        }
        if t.starts_with('-') {
            let (name, attached) = match t.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (t, None),
            };
            let value = attached.or_else(|| args.get(i + 1).map(|v| v.text.clone()));
            if let Some(v) = value {
                let short_out = match base {
                    "curl" => matches!(name, "-D" | "-c"),
                    "wget" => matches!(name, "-a"),
                    "unzip" => false,
                    _ => false,
                };
                if (output_option(name) || short_out) && base != "tar" {
                    if let Some(why) = paths::write_target_danger(&v) {
                        ctx.danger(format!("`{base} {name}` {why}"));
                    }
                }
                let short_dir = match base {
                    "wget" => name == "-P",
                    "unzip" => name == "-d",
                    "cp" | "mv" | "install" | "ln" => name == "-t",
                    _ => false,
                };
                if output_dir_option(name) || short_dir {
                    let vw = Word::literal(v.clone());
                    if name == "--basetemp" && (rules::is_dangerous_path(&vw) || is_home_like(&v)) {
                        ctx.danger(format!(
                            "`{base} --basetemp {v}` empties that directory first"
                        ));
                    } else if let Some(why) = paths::write_target_danger(&format!("{v}/x")) {
                        ctx.danger(format!("`{base} {name}` {why}"));
                    }
                }
            }
        }
        i += 1;
    }
    // A start-up or key file (`~/.bashrc`, `~/.ssh/*`, `~/.config/autostart/*`)
    // named to a program that does not only read it: it may write it.
    if !reads_files(base) {
        if let Some(w) = args.iter().find(|w| {
            let t = w.text.as_str();
            let t = match t.split_once('=') {
                Some((o, v)) if o.starts_with('-') => v,
                _ => t,
            };
            paths::write_target_danger(t).is_some_and(|why| why.contains("start-up"))
        }) {
            ctx.danger(format!(
                "`{base}` is given `{}`, a file that runs code at start-up or grants access, and may write it",
                w.text
            ));
        }
    }
    if base == "ddrescue" {
        let ops: Vec<&Word> = args.iter().filter(|w| !w.text.starts_with('-')).collect();
        if let Some(out) = ops.get(1) {
            if let Some(why) = paths::write_target_danger(&out.text) {
                ctx.danger(format!("`ddrescue` {why}"));
            }
        }
    }
}

/// Programs that only read the files named to them (or whose writes the
/// danger list already judges by their own rules).
fn reads_files(base: &str) -> bool {
    matches!(
        base,
        "cat"
            | "less"
            | "more"
            | "head"
            | "tail"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ag"
            | "wc"
            | "diff"
            | "cmp"
            | "ls"
            | "stat"
            | "file"
            | "md5sum"
            | "sha1sum"
            | "sha256sum"
            | "sha512sum"
            | "b2sum"
            | "bat"
            | "batcat"
            | "test"
            | "["
            | "[["
            | "readlink"
            | "realpath"
            | "basename"
            | "dirname"
            | "echo"
            | "printf"
            | "sort"
            | "uniq"
            | "cut"
            | "xxd"
            | "hexdump"
            | "od"
            | "strings"
            | "jq"
            | "yq"
            | "nl"
            | "tac"
            | "column"
            | "du"
            | "df"
            | "tree"
            | "exa"
            | "eza"
            | "lsd"
            | "fd"
            | "fdfind"
            | "find"
            | "git"
            | "cp"
            | "mv"
            | "install"
            | "ln"
            | "tee"
            | "truncate"
            | "touch"
            | "dd"
            | "rsync"
            | "tar"
            | "sed"
            | "gsed"
            | "awk"
            | "gawk"
            | "mawk"
            | "zip"
            | "xargs"
            | "ssh-add"
            | "cd"
            | "pushd"
            | "source"
            | "."
            | "diff3"
            | "colordiff"
            | "delta"
            | "base64"
            | "gpg"
            | "ssh"
            | "rm"
            | "shred"
            | "unlink"
    )
}

fn is_home_like(v: &str) -> bool {
    let n = paths::normalize(v);
    !n.relative && n.from_home && n.parts.len() <= 2
}

/// Program rules for the programs agents use most. None: not one of them.
pub(crate) fn program_rules(ctx: &mut Ctx, base: &str, args: &[Word]) -> Option<Rules> {
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let r = match family {
        "cargo" => cargo(ctx, args),
        "go" => go(ctx, args),
        "gcc" | "cc" | "clang" | "g++" | "c++" | "clang++" | "cpp" | "gfortran" | "tcc" => {
            cc(ctx, base, args)
        }
        "make" | "gmake" => make(ctx, base, args),
        "cmake" => cmake(ctx, args),
        "npm" | "pnpm" | "yarn" => node_pm(ctx, base, args),
        "pip" => pip(ctx, base, args),
        "uv" => uv(ctx, args),
        "pytest" | "py.test" => pytest(ctx, base, args),
        "wget" => wget(ctx, args),
        "curl" => curl(ctx, args),
        "ssh" => ssh(ctx, args),
        "sqlite" => sqlite(ctx, base, args),
        "socat" => socat(ctx, args),
        "nc" | "ncat" | "netcat" => netcat(ctx, base, args),
        "just" => just(ctx, args),
        _ => return None,
    };
    Some(r)
}

fn risky_all(ctx: &mut Ctx, base: &str, args: &[Word]) {
    if let Some(why) = exec_option(args) {
        ctx.risky(format!("`{base}`: {why}"));
    }
}

fn opt_value<'a>(args: &'a [Word], i: usize) -> Option<&'a str> {
    let t = args[i].text.as_str();
    match t.split_once('=') {
        Some((_, v)) if t.starts_with("--") => Some(v),
        _ => args.get(i + 1).map(|w| w.text.as_str()),
    }
}

fn has_opt(args: &[Word], names: &[&str]) -> Option<usize> {
    args.iter().take_while(|w| w.text != "--").position(|w| {
        let t = w.text.as_str();
        names.iter().any(|n| {
            t == *n
                || (n.starts_with("--") && t.strip_prefix(*n).is_some_and(|r| r.starts_with('=')))
                || (n.len() == 2
                    && !n.starts_with("--")
                    && t.starts_with(n)
                    && t.len() > 2
                    && !t.starts_with("--"))
        })
    })
}

const CARGO_SUBS: &[&str] = &[
    "build",
    "b",
    "check",
    "c",
    "clean",
    "doc",
    "d",
    "new",
    "init",
    "add",
    "remove",
    "rm",
    "run",
    "r",
    "test",
    "t",
    "bench",
    "update",
    "search",
    "publish",
    "install",
    "uninstall",
    "fmt",
    "clippy",
    "tree",
    "metadata",
    "fetch",
    "fix",
    "generate-lockfile",
    "locate-project",
    "login",
    "logout",
    "owner",
    "package",
    "pkgid",
    "read-manifest",
    "report",
    "rustc",
    "rustdoc",
    "vendor",
    "verify-project",
    "version",
    "yank",
    "help",
    "info",
    "miri",
    "nextest",
    "llvm-cov",
    "audit",
    "deny",
    "expand",
    "udeps",
    "outdated",
    "machete",
    "hack",
    "insta",
];

fn cargo(ctx: &mut Ctx, args: &[Word]) -> Rules {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--config" || t.starts_with("--config=") {
            cargo_config(ctx, opt_value(args, i).unwrap_or(""));
            i += if t.contains('=') { 1 } else { 2 };
            continue;
        }
        if t.starts_with('+') || t.starts_with('-') {
            // `-Z flag`, `-C dir` take a value.
            if matches!(t, "-Z" | "-C" | "--color" | "--manifest-path") {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    if let Some(sub) = args.get(i).and_then(|w| w.value()) {
        if !CARGO_SUBS.contains(&sub) {
            ctx.restrict(format!(
                "`cargo {sub}` is not a cargo command the gate knows (cargo runs the program `cargo-{sub}` for it)"
            ));
        }
        let rest = &args[i + 1..];
        if let Some(why) = exec_option(rest) {
            ctx.risky(format!("`cargo {sub}`: {why}"));
        }
        if matches!(sub, "rustc" | "rustdoc") {
            if let Some(w) = rest.iter().skip_while(|w| w.text != "--").find(|w| {
                let l = w.text.to_ascii_lowercase();
                l.contains("linker")
                    || l.contains("runtool")
                    || l.contains("codegen-backend")
                    || l.contains("plugin")
            }) {
                ctx.risky(format!(
                    "`cargo {sub} -- {}` names a program for rustc to run",
                    w.text
                ));
            }
        }
        for (k, w) in rest.iter().enumerate().take_while(|(_, w)| w.text != "--") {
            if w.text == "--config" || w.text.starts_with("--config=") {
                cargo_config(ctx, opt_value(rest, k).unwrap_or(""));
            }
        }
    }
    Rules::Grammar
}

/// `cargo --config KEY=VALUE` (or a file): only keys that set no program.
fn cargo_config(ctx: &mut Ctx, v: &str) {
    let key = v.split('=').next().unwrap_or("").trim();
    let safe = v.contains('=')
        && (key.starts_with("term.")
            || key == "build.jobs"
            || key == "build.incremental"
            || key.starts_with("net.")
            || (key.starts_with("profile.")
                && !key.contains("rustflags")
                && !key.contains("build-override")));
    if !safe {
        ctx.risky(format!("`cargo --config {v}` can set a program cargo runs (wrapper, runner, linker) or read a file the gate cannot see"));
    }
}

fn go(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.trim_start_matches('-');
        let name = t.split('=').next().unwrap_or(t);
        if !w.text.starts_with('-') {
            continue;
        }
        match name {
            "toolexec" | "exec" | "vettool" => ctx.risky(format!("`go {}` runs a program", w.text)),
            "ldflags" => {
                let v = match w.text.split_once('=') {
                    Some((_, v)) => v,
                    None => args.get(i + 1).map_or("", |w| w.text.as_str()),
                };
                if v.contains("extld") || v.contains("-linkmode") || v.contains("tmpdir") {
                    ctx.risky(format!("`go -ldflags {v}` names a linker to run"));
                }
            }
            "overlay" | "modfile" | "pgo" => {}
            _ => {}
        }
    }
    let ops: Vec<&str> = args
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .collect();
    if ops.first() == Some(&"env") && args.iter().any(|w| w.text == "-w") {
        for kv in ops.iter().skip(1) {
            let k = kv.split('=').next().unwrap_or(kv);
            if !super::vars::is_inert(k) {
                ctx.risky(format!(
                    "`go env -w {kv}` changes settings that choose programs go runs"
                ));
            }
        }
    }
    if let Some(why) = exec_option(args) {
        ctx.risky(format!("`go`: {why}"));
    }
    Rules::Grammar
}

/// A compiler option that runs or loads another program.
fn cc_bad(t: &str, prev_x: &str) -> bool {
    t == "-wrapper"
        || t.starts_with("-B")
        || t.starts_with("-fplugin")
        || t.starts_with("-specs")
        || t.starts_with("--specs")
        || t.starts_with("--ld-path")
        || t.starts_with("--gcc-toolchain")
        || t.starts_with("-ccc-")
        || (t.starts_with("-fuse-ld=") && t.contains('/'))
        || t.starts_with('@')
        || (t.starts_with("-Wl,") && t.contains("plugin"))
        || (prev_x == "-Xclang" && matches!(t, "-load" | "-plugin" | "-add-plugin"))
        || (prev_x == "-Xlinker" && t.contains("plugin"))
}

fn cc(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    let mut prev_x = "";
    for w in args {
        let t = w.text.as_str();
        let bad = cc_bad(t, prev_x);
        if bad {
            ctx.risky(format!("`{base} {t}` runs or loads another program"));
        }
        prev_x = t;
    }
    Rules::Grammar
}

fn make(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if t == "-E" || t.starts_with("--eval") || (t.starts_with("-E") && t.len() > 2) {
            ctx.risky(format!("`{base} {t}` evaluates make code (`$(shell ...)`)"));
        }
        let file = if t == "-f" || t == "--file" || t == "--makefile" {
            args.get(i + 1).map(|v| v.text.as_str())
        } else if let Some(v) = t
            .strip_prefix("-f")
            .filter(|v| !v.is_empty() && !t.starts_with("--"))
        {
            Some(v)
        } else {
            t.strip_prefix("--file=")
                .or_else(|| t.strip_prefix("--makefile="))
        };
        if let Some(f) = file {
            if f == "-" || f.starts_with("/dev/") || f.starts_with("/proc/") {
                ctx.risky(format!("`{base} -f {f}` reads its makefile from stdin"));
            }
        }
        if let Some((k, v)) = t.split_once('=') {
            let k = k.trim_end_matches([':', '+', '?', '!']);
            let key_like = !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
            if !t.starts_with('-') && key_like {
                // A program variable may name a program that is itself
                // allowed (`CC=clang`), never a path (`CC=/tmp/x`).
                let prog = v.split_whitespace().next().unwrap_or("");
                let named_ok = !prog.is_empty()
                    && !prog.contains('/')
                    && (!ctx.allowlist() || ctx.allow.iter().any(|a| a == prog));
                if let Some(m) =
                    says_exec(k).filter(|_| !k.ends_with("FLAGS") || k.contains("SHELL"))
                {
                    ctx.risky(format!("`{base} {t}` sets the {m} make runs recipes with"));
                } else if (MAKE_PROGRAM_VARS.contains(&k)
                    || ["_CMD", "PROG", "WRAPPER", "LAUNCHER"]
                        .iter()
                        .any(|m| k.contains(m)))
                    && !named_ok
                {
                    ctx.risky(format!("`{base} {t}` names a program make runs"));
                } else if k.ends_with("FLAGS")
                    && (v.split_whitespace().any(|f| cc_bad(f, ""))
                        || exec_option(&[Word::literal(v)]).is_some())
                {
                    ctx.risky(format!(
                        "`{base} {t}` passes an option that runs another program"
                    ));
                } else if k == "MAKEFLAGS" || k == "MFLAGS" {
                    if v.contains("-E") || v.contains("eval") {
                        ctx.risky(format!("`{base} {t}` evaluates make code"));
                    }
                }
            }
        }
    }
    Rules::Grammar
}

/// Make variables that name a program (GNU make's built-in rules run them).
const MAKE_PROGRAM_VARS: &[&str] = &[
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "FC",
    "F77",
    "PC",
    "CO",
    "GET",
    "LEX",
    "YACC",
    "LINT",
    "M2C",
    "MAKEINFO",
    "TEX",
    "TEXI2DVI",
    "WEAVE",
    "CWEAVE",
    "TANGLE",
    "CTANGLE",
    "RM",
    "RANLIB",
    "STRIP",
    "OBJCOPY",
    "OBJDUMP",
    "NM",
    "INSTALL",
    "MAKE",
    "PYTHON",
    "PERL",
    "GO",
    "CARGO",
    "RUSTC",
    "NVCC",
    "MKDIR",
    "CP",
    "MV",
    "SED",
    "AWK",
    "LN",
    "PKG_CONFIG",
    "DOXYGEN",
    "CCACHE",
];

/// `cmake -E` tools that run no other program.
const CMAKE_TOOLS: &[&str] = &[
    "capabilities",
    "cat",
    "compare_files",
    "copy",
    "copy_directory",
    "copy_directory_if_different",
    "copy_if_different",
    "echo",
    "echo_append",
    "environment",
    "false",
    "make_directory",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "remove",
    "remove_directory",
    "rename",
    "rm",
    "sleep",
    "tar",
    "touch",
    "touch_nocreate",
    "create_symlink",
    "create_hardlink",
    "true",
    "server",
    "delete_regv",
    "write_regv",
    "error_color",
];

fn cmake(ctx: &mut Ctx, args: &[Word]) -> Rules {
    if args.first().is_some_and(|w| w.text == "-E") {
        let tool = args.get(1).map(|w| w.text.as_str()).unwrap_or("");
        if !CMAKE_TOOLS.contains(&tool) {
            ctx.restrict(format!(
                "`cmake -E {tool}` is not a cmake tool the gate knows"
            ));
        }
        if matches!(tool, "rm" | "remove" | "remove_directory") {
            let mut words = vec![Word::literal("rm"), Word::literal("-r")];
            words.extend(
                args[2..]
                    .iter()
                    .filter(|w| !w.text.starts_with('-'))
                    .cloned(),
            );
            rules::danger_of(ctx, &words);
        }
        if matches!(
            tool,
            "copy" | "copy_if_different" | "rename" | "create_symlink" | "create_hardlink"
        ) {
            if let Some(last) = args.last() {
                if let Some(why) = paths::write_target_danger(&last.text) {
                    ctx.danger(format!("`cmake -E {tool}` {why}"));
                }
            }
        }
        return Rules::Grammar;
    }
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if matches!(t, "-P" | "-C" | "--toolchain") || t.starts_with("--toolchain=") {
            ctx.risky(format!(
                "`cmake {t}` runs a cmake script the gate cannot see"
            ));
        }
        let def = if t == "-D" {
            args.get(i + 1).map(|v| v.text.as_str())
        } else {
            t.strip_prefix("-D")
        };
        if let Some(d) = def {
            let name = d.split(['=', ':']).next().unwrap_or(d).to_ascii_uppercase();
            let value = d.split_once('=').map_or("", |(_, v)| v);
            if [
                "LAUNCHER",
                "TOOLCHAIN",
                "INCLUDE",
                "OVERRIDE",
                "EMULATOR",
                "WRAPPER",
                "COMMAND",
                "SHELL",
                "EXEC",
                "CLANG_TIDY",
                "CPPCHECK",
                "CPPLINT",
                "IWYU",
                "LINKER",
                "_PROGRAM",
                "_EXECUTABLE",
            ]
            .iter()
            .any(|m| name.contains(m))
                || (name.contains("COMPILER")
                    && (value.contains('/')
                        || (ctx.allowlist()
                            && !value.is_empty()
                            && !ctx.allow.iter().any(|a| a == value))))
                || (name.ends_with("FLAGS") && value.split_whitespace().any(|f| cc_bad(f, "")))
            {
                ctx.risky(format!(
                    "`cmake -D{d}` names a program or script cmake runs"
                ));
            }
        }
        i += 1;
    }
    Rules::Grammar
}

fn node_pm(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let name = t.trim_start_matches('-').split('=').next().unwrap_or("");
        if t.starts_with("--")
            && matches!(
                name,
                "script-shell"
                    | "shell"
                    | "node-options"
                    | "git"
                    | "editor"
                    | "browser"
                    | "viewer"
                    | "onload-script"
                    | "init-module"
                    | "call"
                    | "userconfig"
                    | "globalconfig"
            )
        {
            ctx.risky(format!(
                "`{base} {t}` names a program, a script or a config file"
            ));
        }
        let _ = i;
    }
    let ops: Vec<&str> = args
        .iter()
        .take_while(|w| w.text != "--")
        .filter(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .collect();
    match ops.as_slice() {
        ["config" | "c", "set", key, ..] | ["set", key, ..] => {
            let k = key.split('=').next().unwrap_or(key).to_ascii_lowercase();
            if !matches!(
                k.as_str(),
                "registry"
                    | "save-exact"
                    | "fund"
                    | "audit"
                    | "progress"
                    | "color"
                    | "loglevel"
                    | "init-author-name"
                    | "init-license"
            ) {
                ctx.risky(format!(
                    "`{base} config set {key}` can set a program {base} runs"
                ));
            }
        }
        ["exec" | "x" | "dlx" | "explore", ..] => {
            // Reached only when the launcher's options were not understood.
            ctx.unknown(format!(
                "`{base} {}` with options the gate does not know runs a command",
                ops[0]
            ));
        }
        ["edit", ..]
        | ["docs", ..]
        | ["bugs", ..]
        | ["repo", ..]
        | ["node", ..]
        | ["create", ..]
        | ["init", _, ..] => {
            ctx.risky(format!(
                "`{base} {}` runs a program the gate does not check",
                ops[0]
            ));
        }
        _ => {}
    }
    if let Some(why) = exec_option(args) {
        ctx.risky(format!("`{base}`: {why}"));
    }
    Rules::Grammar
}

fn pip(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    if let Some(k) = has_opt(args, &["--python"]) {
        ctx.risky(format!(
            "`{base} --python {}` runs another interpreter",
            opt_value(args, k).unwrap_or("")
        ));
    }
    let ops: Vec<&str> = args
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .collect();
    if let ["config", "set" | "edit", ..] = ops.as_slice() {
        ctx.risky(format!("`{base} config` can set a program pip runs"));
    }
    if let Some(w) = args
        .iter()
        .find(|w| w.text == "--editor" || w.text.starts_with("--editor="))
    {
        ctx.risky(format!("`{base} {}` runs an editor", w.text));
    }
    risky_all(
        ctx,
        base,
        &args
            .iter()
            .filter(|w| !w.text.starts_with("--python"))
            .cloned()
            .collect::<Vec<_>>(),
    );
    Rules::Grammar
}

fn uv(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if t == "-p"
            || t == "--python"
            || t.starts_with("--python=")
            || (t.starts_with("-p") && t.len() > 2 && !t.starts_with("--"))
        {
            let v = if t.len() > 2 && t.starts_with("-p") && !t.starts_with("--") {
                &t[2..]
            } else {
                opt_value(args, i).unwrap_or("")
            };
            let version = !v.contains('/') && !v.is_empty();
            if !version {
                ctx.risky(format!("`uv {t} {v}` runs the interpreter at that path"));
            }
        }
        if t == "--env-file" || t.starts_with("--env-file=") {
            ctx.risky("`uv --env-file` sets variables the gate cannot see");
        }
    }
    let rest: Vec<Word> = args
        .iter()
        .filter(|w| !w.text.starts_with("--python") && !w.text.starts_with("-p"))
        .cloned()
        .collect();
    risky_all(ctx, "uv", &rest);
    Rules::Grammar
}

fn pytest(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let plugin = if t == "-p" {
            args.get(i + 1).map(|v| v.text.as_str())
        } else {
            t.strip_prefix("-p")
                .filter(|v| !v.is_empty() && !t.starts_with("--"))
        };
        if let Some(p) = plugin {
            if !p.starts_with("no:") {
                ctx.risky(format!("`{base} -p {p}` loads a plugin (code)"));
            }
        }
        if matches!(t, "-c" | "--config-file") || t.starts_with("--config-file=") {
            ctx.risky(format!(
                "`{base} {t}` reads a configuration (`addopts`, plugins) the gate cannot see"
            ));
        }
        if t.starts_with("--pdbcls") {
            ctx.risky(format!("`{base} {t}` loads a debugger class (code)"));
        }
        let ini = if t == "-o" || t == "--override-ini" {
            args.get(i + 1).map(|v| v.text.as_str())
        } else {
            t.strip_prefix("--override-ini=")
                .or_else(|| t.strip_prefix("-o").filter(|v| !v.is_empty()))
        };
        if let Some(kv) = ini {
            let k = kv.split('=').next().unwrap_or(kv).trim();
            if matches!(
                k,
                "addopts" | "required_plugins" | "python_files" | "pythonpath" | "cache_dir"
            ) {
                ctx.risky(format!("`{base} -o {kv}` changes which code pytest loads"));
            }
        }
    }
    risky_all(ctx, base, args);
    Rules::Grammar
}

fn wget(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        let exec = if t == "-e" || t == "--execute" {
            args.get(i + 1).map(|v| v.text.as_str())
        } else {
            t.strip_prefix("--execute=").or_else(|| {
                t.strip_prefix("-e")
                    .filter(|v| !v.is_empty() && !t.starts_with("--"))
            })
        };
        if let Some(e) = exec {
            if !matches!(e.replace(' ', "").as_str(), "robots=off" | "robots=on") {
                ctx.risky(format!("`wget -e {e}` runs a wgetrc command"));
            }
        }
        if t == "--config" || t.starts_with("--config=") {
            ctx.risky("`wget --config` reads settings the gate cannot see");
        }
    }
    risky_all(ctx, "wget", args);
    Rules::Grammar
}

fn curl(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for w in args {
        let t = w.text.as_str();
        if t == "-K"
            || t.starts_with("--config")
            || (t.starts_with("-K") && !t.starts_with("--"))
            || (is_short(t) && t[1..].contains('K'))
        {
            ctx.risky(format!("`curl {t}` reads options the gate cannot see"));
        }
    }
    risky_all(ctx, "curl", args);
    Rules::Grammar
}

fn is_short(t: &str) -> bool {
    t.len() > 1 && t.starts_with('-') && !t.starts_with("--")
}

/// ssh options that take a value.
const SSH_VALUES: &str = "BbcDEeFIiJLlmOoPpQRSWw";

fn ssh(ctx: &mut Ctx, args: &[Word]) -> Rules {
    let mut i = 0;
    let mut host: Option<usize> = None;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            host = Some(i + 1);
            break;
        }
        if !t.starts_with('-') || t == "-" {
            host = Some(i);
            break;
        }
        let mut k = 1;
        let b = t.as_bytes();
        let mut next = 1;
        while k < b.len() {
            let c = b[k] as char;
            if SSH_VALUES.contains(c) {
                let v = if k + 1 < b.len() {
                    t[k + 1..].to_string()
                } else {
                    next = 2;
                    args.get(i + 1).map(|v| v.text.clone()).unwrap_or_default()
                };
                ssh_option(ctx, c, &v);
                break;
            } else if !"46AaCfGgKkMNnqsTtVvXxYy".contains(c) {
                ctx.restrict(format!("`ssh` option `-{c}` is not one the gate knows"));
            }
            k += 1;
        }
        i += next;
    }
    let Some(h) = host.filter(|h| *h < args.len()) else {
        if !args.iter().any(|w| w.text == "-V") {
            ctx.restrict("`ssh` without a host");
        }
        return Rules::Grammar;
    };
    let remote: Vec<&str> = args[h + 1..].iter().map(|w| w.text.as_str()).collect();
    if remote.is_empty() {
        if !args[..h].iter().any(|w| w.text.contains('N')) {
            ctx.restrict("`ssh` without a remote command opens an interactive shell");
        }
    } else {
        // The remote command: a shell command line on the other host.
        let line = remote.join(" ");
        embedded_line(ctx, "ssh", &line);
    }
    Rules::Grammar
}

fn ssh_option(ctx: &mut Ctx, c: char, v: &str) {
    match c {
        'o' => {
            let key = v
                .split(['=', ' ', '\t'])
                .next()
                .unwrap_or(v)
                .to_ascii_lowercase();
            if matches!(
                key.as_str(),
                "proxycommand"
                    | "localcommand"
                    | "permitlocalcommand"
                    | "knownhostscommand"
                    | "match"
                    | "include"
                    | "proxyusefdpass"
                    | "securitykeyprovider"
                    | "pkcs11provider"
                    | "remotecommand"
                    | "identityagent"
                    | "controlpath"
                    | "userknownhostsfile"
                    | "globalknownhostsfile"
                    | "sendenv"
                    | "setenv"
            ) || key.contains("command")
            {
                ctx.risky(format!(
                    "`ssh -o {v}` runs a local program or reads a file the gate cannot see"
                ));
            }
        }
        'F' => ctx.risky(format!(
            "`ssh -F {v}` reads a configuration that can run programs"
        )),
        'I' => ctx.risky(format!("`ssh -I {v}` loads a library")),
        'E' => {
            if let Some(why) = paths::write_target_danger(v) {
                ctx.danger(format!("`ssh -E` {why}"));
            }
        }
        _ => {}
    }
}

/// A command line given as text to a program that runs it (remotely or
/// locally): its dangers are the program's.
pub(crate) fn embedded_line(ctx: &mut Ctx, base: &str, line: &str) {
    if ctx.embedded_parses >= MAX_EMBEDDED || ctx.embedded_depth >= super::walk::MAX_REPARSE {
        // Also reported by every enclosing scratch context.
        ctx.embedded_parses = MAX_EMBEDDED;
        ctx.unknown("too many arguments that are command lines to check, or nested too deeply");
        return;
    }
    ctx.embedded_parses += 1;
    let text = line.to_string();
    let found = scratch(ctx, |s| super::walk::parse_and_walk(s, &text, &[], 0));
    for d in found {
        let d = d.strip_prefix("dangerous: ").unwrap_or(&d).to_string();
        ctx.danger(format!("`{base}` runs the command line `{line}`: {d}"));
    }
}

fn sqlite(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    // Dot-commands that only show things are fine; the others run
    // programs (`.shell`, `.system`), write files (`.output`, `.save`) or
    // read commands from a file (`.read`).
    const SHOWS: &[&str] = &[
        ".tables",
        ".table",
        ".schema",
        ".indexes",
        ".indices",
        ".headers",
        ".header",
        ".mode",
        ".dump",
        ".databases",
        ".help",
        ".show",
        ".stats",
        ".timer",
        ".width",
        ".nullvalue",
        ".separator",
        ".print",
        ".changes",
        ".eqp",
        ".explain",
        ".fullschema",
        ".dbinfo",
        ".lint",
        ".version",
        ".limit",
        ".bail",
        ".echo",
        ".quit",
        ".exit",
    ];
    let dot = args.iter().find(|w| {
        w.text.split(['\n', ';']).any(|line| {
            let l = line.trim_start();
            l.starts_with('.')
                && l.len() > 1
                && !l.starts_with("./")
                && !l.starts_with("../")
                && !SHOWS.contains(&l.split_whitespace().next().unwrap_or(""))
        })
    });
    if let Some(w) = dot {
        ctx.risky(format!("`{base}` dot-command `{}` (`.shell`, `.system`, `.output` run programs or write files)", w.text));
    } else if args
        .iter()
        .any(|w| matches!(w.text.as_str(), "-cmd" | "--cmd" | "-init" | "--init"))
    {
        ctx.risky(format!("`{base} -cmd`/`-init` runs dot-commands"));
    } else if rules::operands_of(args).len() < 2 {
        ctx.unknown(format!(
            "`{base}` reads commands from stdin (`.shell` runs programs)"
        ));
    }
    for w in args {
        let l = w.text.to_ascii_lowercase();
        if [
            "load_extension",
            "writefile",
            "edit(",
            "fts3_tokenizer",
            ".load",
            ".shell",
            ".system",
        ]
        .iter()
        .any(|k| l.contains(k))
            || l.contains("\n.")
            || l.contains(";.")
            || l.contains("; .")
        {
            ctx.risky(format!(
                "`{base}` SQL `{}` loads code, runs a program or writes a file",
                w.text
            ));
        }
        if l.contains("attach") || l.contains("vacuum into") || l.contains("backup") {
            ctx.restrict(format!(
                "`{base}` SQL `{}` writes another database file",
                w.text
            ));
        }
    }
    Rules::Grammar
}

fn socat(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for w in args {
        let t = w.text.as_str();
        let u = t.to_ascii_uppercase();
        if let Some(i) = ["EXEC:", "SYSTEM:"]
            .iter()
            .find_map(|p| u.find(p).map(|i| i + p.len()))
        {
            ctx.risky(format!("`socat {t}` runs a program"));
            let cmd = t[i..].split(',').next().unwrap_or("");
            embedded_line(ctx, "socat", cmd);
        }
        for p in ["OPEN:", "CREATE:", "GOPEN:", "CREAT:"] {
            if let Some(rest) = u.strip_prefix(p) {
                let path = &t[t.len() - rest.len()..];
                let path = path.split(',').next().unwrap_or(path);
                if let Some(why) = paths::write_target_danger(path) {
                    ctx.danger(format!("`socat` {why}"));
                }
                if is_raw_disk(path) {
                    ctx.danger(format!("`socat` writes the raw disk `{path}`"));
                }
            }
        }
    }
    risky_all(ctx, "socat", args);
    Rules::Grammar
}

fn netcat(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    for w in args {
        let t = w.text.as_str();
        let exec = matches!(t, "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec")
            || t.starts_with("--exec=")
            || t.starts_with("--sh-exec=")
            || t.starts_with("--lua-exec=")
            || (is_short(t) && t[1..].contains(['e', 'c']));
        if exec {
            ctx.risky(format!("`{base} {t}` runs a program for the connection"));
        }
    }
    risky_all(ctx, base, args);
    Rules::Grammar
}

fn just(ctx: &mut Ctx, args: &[Word]) -> Rules {
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let name = t.split('=').next().unwrap_or(t);
        if matches!(
            name,
            "--shell"
                | "--shell-arg"
                | "--shell-command"
                | "--command"
                | "-c"
                | "--chooser"
                | "--choose"
                | "--edit"
                | "-e"
                | "--dotenv-path"
                | "--dotenv-filename"
                | "-E"
                | "--justfile"
                | "-f"
                | "--global-justfile"
                | "-g"
        ) {
            ctx.risky(format!(
                "`just {t}` runs a program or reads recipes the gate cannot see"
            ));
        }
    }
    Rules::Grammar
}
