//! Wrapper programs: commands that run another command given in their
//! arguments. The gate finds the wrapped command and evaluates it too.

use super::rules;
use super::walk::{parse_and_walk, MAX_REPARSE};
use super::word::Word;
use super::{Ctx, ParsedCommand};

/// What a program does with its arguments.
pub(crate) enum Step {
    /// It runs no other command (or is no wrapper).
    Run,
    /// It runs `rest` as a command. `open`: more arguments come from stdin.
    Wrap { rest: Vec<Word>, open: bool },
    /// It runs a shell string.
    Shell(String),
    /// `find`: runs itself, plus one command per `-exec` group.
    Find(Vec<Vec<Word>>),
    /// The gate cannot tell what it runs.
    Unknown(String),
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "oksh",
];
const OTHER_SHELLS: &[&str] = &[
    "fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh", "rc", "es",
];

/// Programs that run other commands in ways the gate does not model.
const OPAQUE: &[&str] = &[
    "eval",
    "source",
    ".",
    "trap",
    "alias",
    "enable",
    "fc",
    "bind",
    "complete",
    "unshare",
    "nsenter",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "script",
    "parallel",
    "systemd-run",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "expect",
    "ssh-agent",
    "sg",
    "newgrp",
    "setpriv",
    "capsh",
    "prlimit",
    "cgexec",
    "numactl",
    "unbuffer",
    "rlwrap",
    "torsocks",
    "proxychains",
    "proxychains4",
    "faketime",
    "catchsegv",
    "dbus-launch",
    "dbus-run-session",
    "su",
    "runuser",
    "machinectl",
    "flatpak-spawn",
    "osascript",
    "entr",
    "inotifywait",
    "at",
    "batch",
    "crontab",
];

pub(crate) fn is_wrapper(base: &str) -> bool {
    SHELLS.contains(&base)
        || OPAQUE.contains(&base)
        || matches!(
            base,
            "env"
                | "sudo"
                | "doas"
                | "pkexec"
                | "nice"
                | "ionice"
                | "timeout"
                | "nohup"
                | "time"
                | "stdbuf"
                | "setsid"
                | "chrt"
                | "taskset"
                | "flock"
                | "command"
                | "exec"
                | "builtin"
                | "coproc"
                | "xargs"
                | "find"
                | "chroot"
                | "busybox"
                | "watch"
        )
}

impl Ctx<'_> {
    /// Follow wrappers from `words` and record the command(s) that run.
    pub(crate) fn resolve(
        &mut self,
        mut words: Vec<Word>,
        mut via: Vec<String>,
        reparse: usize,
        mut open: bool,
    ) {
        // The first word of a simple command can be the bash keyword `time`
        // (only `-p` and `--` are its options); behind a wrapper, `time` is
        // the GNU program.
        let mut keyword_position = true;
        loop {
            let Some(prog) = words.first() else { return };
            if keyword_position && prog.value() == Some("time") {
                keyword_position = false;
                let mut i = 1;
                if words.get(i).and_then(|w| w.value()) == Some("-p") {
                    i += 1;
                }
                if words.get(i).and_then(|w| w.value()) == Some("--") {
                    i += 1;
                }
                if i >= words.len() {
                    self.push(&words, &via, open, true);
                    return;
                }
                rules::check_wrapper_listed(self, "time");
                via.push("time".to_string());
                words.drain(..i);
                continue;
            }
            keyword_position = false;
            if let Err(why) = rules::check_program_name(prog) {
                self.unknown(why);
                self.push(&words, &via, open, false);
                return;
            }
            let name = prog.text.clone();
            let base = rules::basename(&name).to_string();
            if open && is_wrapper(&base) {
                self.unknown(format!(
                    "`{base}` run by xargs gets its arguments from stdin"
                ));
                self.push(&words, &via, open, false);
                return;
            }
            match self.unwrap(&base, &words) {
                Step::Run => {
                    self.push(&words, &via, open, true);
                    return;
                }
                Step::Unknown(why) => {
                    self.unknown(why);
                    self.push(&words, &via, open, true);
                    return;
                }
                Step::Wrap { rest, open: more } => {
                    rules::check_wrapper_listed(self, &name);
                    via.push(name);
                    words = rest;
                    open |= more;
                }
                Step::Shell(script) => {
                    rules::check_wrapper_listed(self, &name);
                    via.push(name);
                    if reparse >= MAX_REPARSE {
                        self.unknown("shell strings nested too deeply");
                        return;
                    }
                    let before = self.commands.len();
                    if self.allowlist() {
                        super::walk::check_text(self, &script);
                    }
                    parse_and_walk(self, &script, &via, reparse + 1);
                    if self.commands.len() == before {
                        // An empty string still runs the shell.
                        self.commands.push(ParsedCommand {
                            program: via.pop().unwrap_or_default(),
                            argv: texts(&words),
                            via,
                        });
                    }
                    return;
                }
                Step::Find(groups) => {
                    self.push(&words, &via, open, true);
                    via.push(name);
                    for group in groups {
                        self.resolve(group, via.clone(), reparse, open);
                    }
                    return;
                }
            }
        }
    }

    fn push(&mut self, words: &[Word], via: &[String], open: bool, checks: bool) {
        if rules::evaluates_names(rules::basename(&words[0].text)) {
            self.evaluator = true;
        }
        let cmd = ParsedCommand {
            program: words[0].text.clone(),
            argv: texts(words),
            via: via.to_vec(),
        };
        if checks {
            rules::check_command(self, words, open);
        }
        rules::check_listed(self, &cmd);
        self.commands.push(cmd);
    }

    fn unwrap(&mut self, base: &str, words: &[Word]) -> Step {
        if SHELLS.contains(&base) {
            return shell(words);
        }
        if OTHER_SHELLS.contains(&base) {
            return Step::Unknown(format!(
                "`{base}` uses a shell syntax the gate does not parse"
            ));
        }
        if OPAQUE.contains(&base) {
            if matches!(base, "su" | "runuser") {
                self.danger(format!("privilege change (`{base}`)"));
            }
            return Step::Unknown(format!(
                "`{base}` runs commands in a way the gate does not model"
            ));
        }
        let r = match base {
            "env" => self.env(words),
            "sudo" => {
                self.danger("privilege escalation (`sudo`)");
                self.sudo(words)
            }
            "doas" => {
                self.danger("privilege escalation (`doas`)");
                options(words, "nL", "uC", &[], &[]).and_then(|(i, seen)| {
                    if seen.contains(&'s') {
                        return Err("`doas -s` runs a shell".into());
                    }
                    Ok(wrap_at(words, i))
                })
            }
            "pkexec" => {
                self.danger("privilege escalation (`pkexec`)");
                options(
                    words,
                    "",
                    "",
                    &["--disable-internal-agent", "--keep-cwd"],
                    &["--user"],
                )
                .map(|(i, _)| wrap_at(words, i))
            }
            "nice" => nice(words),
            "ionice" => options(
                words,
                "t",
                "cnpPu",
                &["--ignore"],
                &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            )
            .map(|(i, seen)| {
                if seen.iter().any(|c| "pPu".contains(*c)) {
                    Step::Run
                } else {
                    wrap_at(words, i)
                }
            }),
            "timeout" => options(
                words,
                "v",
                "sk",
                &["--foreground", "--preserve-status", "--verbose"],
                &["--signal", "--kill-after"],
            )
            .map(|(i, _)| {
                if i + 1 < words.len() {
                    wrap_at(words, i + 1)
                } else {
                    Step::Run
                }
            }),
            // A reserved word: no options (`coproc --` runs `--`).
            "coproc" => Ok(wrap_at(words, 1)),
            "nohup" | "builtin" => options(words, "", "", &[], &[]).map(|(i, _)| wrap_at(words, i)),
            "time" => options(
                words,
                "pvqa",
                "of",
                &["--portability", "--verbose", "--quiet", "--append"],
                &["--output", "--format"],
            )
            .map(|(i, seen)| {
                if seen.contains(&'o') {
                    self.restrict("`time -o` writes a file");
                }
                wrap_at(words, i)
            }),
            "stdbuf" => options(words, "", "ioe", &[], &["--input", "--output", "--error"])
                .map(|(i, _)| wrap_at(words, i)),
            "setsid" => options(words, "cfw", "", &["--ctty", "--fork", "--wait"], &[])
                .map(|(i, _)| wrap_at(words, i)),
            "chrt" => options(
                words,
                "abdefiorRvmp",
                "TPD",
                &[
                    "--all-tasks",
                    "--batch",
                    "--deadline",
                    "--ext",
                    "--fifo",
                    "--idle",
                    "--other",
                    "--rr",
                    "--reset-on-fork",
                    "--verbose",
                    "--max",
                    "--pid",
                ],
                &["--sched-runtime", "--sched-period", "--sched-deadline"],
            )
            .map(|(mut i, seen)| {
                if seen.contains(&'m') || seen.contains(&'p') {
                    return Step::Run;
                }
                if words
                    .get(i)
                    .and_then(|w| w.value())
                    .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                {
                    i += 1;
                }
                wrap_at(words, i)
            }),
            "taskset" => options(
                words,
                "acp",
                "",
                &["--all-tasks", "--cpu-list", "--pid"],
                &[],
            )
            .map(|(i, seen)| {
                if seen.contains(&'p') || i + 1 >= words.len() {
                    Step::Run
                } else {
                    wrap_at(words, i + 1)
                }
            }),
            "flock" => flock(words),
            "command" => options(words, "pvV", "", &[], &[]).map(|(i, seen)| {
                if seen.contains(&'v') || seen.contains(&'V') {
                    Step::Run
                } else {
                    wrap_at(words, i)
                }
            }),
            "exec" => options(words, "cl", "a", &[], &[]).map(|(i, _)| wrap_at(words, i)),
            "xargs" => xargs(words),
            "find" => self.find(words),
            "chroot" => options(
                words,
                "",
                "",
                &["--skip-chdir"],
                &["--userspec", "--groups"],
            )
            .and_then(|(i, _)| {
                if i + 1 < words.len() {
                    Ok(wrap_at(words, i + 1))
                } else {
                    Err("`chroot` without a command runs an interactive shell".into())
                }
            }),
            "busybox" => Ok(match words.get(1).and_then(|w| w.value()) {
                Some(v) if !v.starts_with('-') => wrap_at(words, 1),
                _ => Step::Run,
            }),
            "watch" => watch(words),
            _ => Ok(Step::Run),
        };
        r.unwrap_or_else(Step::Unknown)
    }

    fn env(&mut self, words: &[Word]) -> Result<Step, String> {
        let mut words = words.to_vec();
        let mut i = 1;
        let mut splits = 0;
        while i < words.len() {
            let w = static_arg(&words[i], "env")?.to_string();
            if w == "--" {
                i += 1;
                break;
            }
            if w == "-" {
                i += 1;
                continue;
            }
            let split = if let Some(long) = w.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                match name {
                    "ignore-environment"
                    | "null"
                    | "debug"
                    | "help"
                    | "version"
                    | "list-signal-handling"
                    | "default-signal"
                    | "ignore-signal"
                    | "block-signal" => {
                        i += 1;
                        None
                    }
                    "unset" | "chdir" | "split-string" => {
                        let v = match value {
                            Some(v) => {
                                i += 1;
                                v
                            }
                            None => {
                                let v = words.get(i + 1).ok_or("env option without its value")?;
                                let v = static_arg(v, "env")?.to_string();
                                i += 2;
                                v
                            }
                        };
                        (name == "split-string").then_some(v)
                    }
                    _ => return Err(format!("unknown `env` option `{w}`")),
                }
            } else if w.starts_with('-') {
                let mut split = None;
                let chars: Vec<char> = w.chars().skip(1).collect();
                let mut k = 0;
                i += 1;
                while k < chars.len() {
                    match chars[k] {
                        'i' | '0' | 'v' => k += 1,
                        c @ ('u' | 'C' | 'S') => {
                            let attached: String = chars[k + 1..].iter().collect();
                            let v = if attached.is_empty() {
                                let v = words.get(i).ok_or("env option without its value")?;
                                let v = static_arg(v, "env")?.to_string();
                                i += 1;
                                v
                            } else {
                                attached
                            };
                            if c == 'S' {
                                split = Some(v);
                            }
                            break;
                        }
                        _ => return Err(format!("unknown `env` option `{w}`")),
                    }
                }
                split
            } else {
                break;
            };
            if let Some(s) = split {
                splits += 1;
                if splits > 4 {
                    return Err("too many `env -S` strings".into());
                }
                let parts = split_env_string(&s)?;
                // Replace what was consumed by the split words, parse again.
                let tail = words.split_off(i);
                words.extend(parts);
                words.extend(tail);
            }
        }
        while let Some(w) = words.get(i) {
            let Some(v) = w.value() else { break };
            match v.split_once('=') {
                Some((name, _)) if rules::is_var_name(name) => {
                    rules::check_assignment(self, name);
                    i += 1;
                }
                _ => break,
            }
        }
        if i >= words.len() {
            return Ok(Step::Run);
        }
        Ok(Step::Wrap {
            rest: words[i..].to_vec(),
            open: false,
        })
    }

    fn sudo(&mut self, words: &[Word]) -> Result<Step, String> {
        let (i, seen) = options(
            words,
            "AbEHKklnPSVvBN",
            "CDghpRrtTUu",
            &[
                "--askpass",
                "--background",
                "--bell",
                "--preserve-env",
                "--set-home",
                "--remove-timestamp",
                "--reset-timestamp",
                "--list",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--validate",
                "--version",
                "--help",
            ],
            &[
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            ],
        )
        .map_err(|e| {
            if e.contains("-s") || e.contains("-i") || e.contains("-e") {
                "`sudo -s`/`-i`/`-e` runs a shell or an editor".to_string()
            } else {
                e
            }
        })?;
        if seen.iter().any(|c| "lvKkV".contains(*c)) && i >= words.len() {
            return Ok(Step::Run);
        }
        let mut i = i;
        while let Some(v) = words.get(i).and_then(|w| w.value()) {
            match v.split_once('=') {
                Some((name, _)) if rules::is_var_name(name) => {
                    rules::check_assignment(self, name);
                    i += 1;
                }
                _ => break,
            }
        }
        Ok(wrap_at(words, i))
    }

    fn find(&mut self, words: &[Word]) -> Result<Step, String> {
        let mut i = 1;
        // Leading options.
        while let Some(v) = words.get(i).and_then(|w| w.value()) {
            match v {
                "-H" | "-L" | "-P" => i += 1,
                "-D" => i += 2,
                _ if v.starts_with("-O") => i += 1,
                _ => break,
            }
        }
        let mut starts = Vec::new();
        while let Some(w) = words.get(i) {
            let t = w.text.as_str();
            if t.starts_with('-') || t == "(" || t == "!" || t == "," {
                break;
            }
            if w.dynamic {
                return Err("`find` start path depends on expansion".into());
            }
            starts.push(w.clone());
            i += 1;
        }
        let mut groups = Vec::new();
        let mut prev = "";
        while i < words.len() {
            let w = &words[i];
            if !w.is_static() {
                let pattern_operand = matches!(
                    prev,
                    "-name"
                        | "-iname"
                        | "-path"
                        | "-ipath"
                        | "-wholename"
                        | "-iwholename"
                        | "-regex"
                        | "-iregex"
                        | "-lname"
                        | "-ilname"
                );
                if w.dynamic || !pattern_operand {
                    return Err(format!(
                        "`find` expression word `{}` depends on expansion",
                        w.text
                    ));
                }
            }
            let t = w.text.as_str();
            match t {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let mut group = Vec::new();
                    let mut j = i + 1;
                    let mut closed = false;
                    while j < words.len() {
                        let v = words[j].value();
                        if v == Some(";")
                            || (v == Some("+")
                                && group.last().is_some_and(|g: &Word| g.text == "{}"))
                        {
                            closed = true;
                            break;
                        }
                        let mut g = words[j].clone();
                        if g.text.contains("{}") {
                            g.dynamic = true;
                        }
                        group.push(g);
                        j += 1;
                    }
                    if !closed {
                        return Err(format!("`find {t}` without `;` or `+`"));
                    }
                    if group.is_empty() {
                        return Err(format!("`find {t}` without a command"));
                    }
                    if group[0].dynamic {
                        return Err(format!("`find {t}` runs a program named by the file found"));
                    }
                    groups.push(group);
                    i = j + 1;
                    prev = ";";
                    continue;
                }
                "-delete" => {
                    self.restrict("`find -delete` deletes files");
                    if starts.iter().any(rules::is_dangerous_path) {
                        self.danger("`find -delete` over a system or home directory");
                    }
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    self.restrict(format!("`find {t}` writes a file"))
                }
                _ => {}
            }
            prev = t;
            i += 1;
        }
        Ok(if groups.is_empty() {
            Step::Run
        } else {
            Step::Find(groups)
        })
    }
}

fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|w| w.text.clone()).collect()
}

fn static_arg<'w>(w: &'w Word, prog: &str) -> Result<&'w str, String> {
    w.value()
        .ok_or_else(|| format!("argument `{}` of `{prog}` depends on expansion", w.text))
}

fn wrap_at(words: &[Word], i: usize) -> Step {
    if i >= words.len() {
        Step::Run
    } else {
        Step::Wrap {
            rest: words[i..].to_vec(),
            open: false,
        }
    }
}

/// Skips getopt-style options from `words[1..]`. `flags`: short options
/// without argument; `with_arg`: short options taking one; `long_flags`,
/// `long_arg`: the same for `--long` options. Returns the index of the
/// first operand and the short options seen (long ones by their first
/// letter after `--`, so `--pid` counts as `p`).
pub(crate) fn options(
    words: &[Word],
    flags: &str,
    with_arg: &str,
    long_flags: &[&str],
    long_arg: &[&str],
) -> Result<(usize, Vec<char>), String> {
    let prog = words
        .first()
        .map(|w| rules::basename(&w.text))
        .unwrap_or("");
    let mut seen = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let w = static_arg(&words[i], prog)?;
        if w == "--" {
            return Ok((i + 1, seen));
        }
        if w.starts_with("--") {
            let name = w.split_once('=').map_or(w, |(n, _)| n);
            if long_flags.contains(&name) {
                i += 1;
            } else if long_arg.contains(&name) {
                i += if w.contains('=') { 1 } else { 2 };
            } else {
                return Err(format!("unknown `{prog}` option `{w}`"));
            }
            if let Some(c) = name.chars().nth(2) {
                seen.push(c);
            }
            continue;
        }
        if w.len() > 1 && w.starts_with('-') {
            i += 1;
            for (k, c) in w.char_indices().skip(1) {
                seen.push(c);
                if with_arg.contains(c) {
                    if k + c.len_utf8() == w.len() {
                        match words.get(i) {
                            Some(v) => {
                                static_arg(v, prog)?;
                                i += 1;
                            }
                            None => return Err(format!("`{prog} -{c}` without its value")),
                        }
                    }
                    break;
                } else if !flags.contains(c) {
                    return Err(format!("unknown `{prog}` option `-{c}`"));
                }
            }
            continue;
        }
        break;
    }
    Ok((i.min(words.len()), seen))
}

fn shell(words: &[Word]) -> Step {
    let prog = rules::basename(&words[0].text).to_string();
    let mut i = 1;
    let mut command_mode = false;
    while i < words.len() {
        let Some(w) = words[i].value() else {
            return Step::Unknown(format!(
                "argument `{}` of `{prog}` depends on expansion",
                words[i].text
            ));
        };
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            match long {
                "norc" | "noprofile" | "login" | "posix" | "restricted" | "verbose"
                | "noediting" | "debugger" | "help" | "version" | "dump-strings"
                | "dump-po-strings" | "pretty-print" => i += 1,
                "rcfile" | "init-file" => i += 2,
                _ => return Step::Unknown(format!("unknown `{prog}` option `{w}`")),
            }
            continue;
        }
        if w.len() > 1 && (w.starts_with('-') || w.starts_with('+')) {
            let mut takes = 0;
            for c in w.chars().skip(1) {
                match c {
                    'c' => command_mode = true,
                    'o' | 'O' => takes += 1,
                    's' => return Step::Unknown(format!("`{prog} -s` reads commands from stdin")),
                    'a' | 'b' | 'e' | 'f' | 'h' | 'i' | 'k' | 'l' | 'm' | 'n' | 'p' | 'r' | 't'
                    | 'u' | 'v' | 'x' | 'B' | 'C' | 'E' | 'H' | 'P' | 'T' => {}
                    _ => return Step::Unknown(format!("unknown `{prog}` option `{w}`")),
                }
            }
            i += 1 + takes;
            continue;
        }
        break;
    }
    if command_mode {
        return match words.get(i) {
            Some(w) => match w.value() {
                Some(script) => Step::Shell(script.to_string()),
                None => Step::Unknown(format!("the `{prog} -c` string depends on expansion")),
            },
            None => Step::Unknown(format!("`{prog} -c` without a command string")),
        };
    }
    match words.get(i) {
        Some(w) => Step::Unknown(format!(
            "`{prog}` runs the script file `{}`, which the gate cannot inspect",
            w.text
        )),
        None => Step::Unknown(format!("`{prog}` reads commands from stdin")),
    }
}

fn nice(words: &[Word]) -> Result<Step, String> {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let v = static_arg(w, "nice")?;
        if v == "--" {
            i += 1;
            break;
        } else if v == "-n" || v == "--adjustment" {
            i += 2;
        } else if (v.starts_with("-n") && v.len() > 2) || v.starts_with("--adjustment=") {
            i += 1;
        } else if v.len() > 1
            && v.starts_with('-')
            && v[1..]
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
        {
            i += 1;
        } else if v.starts_with('-') && v.len() > 1 {
            return Err(format!("unknown `nice` option `{v}`"));
        } else {
            break;
        }
    }
    Ok(wrap_at(words, i))
}

fn flock(words: &[Word]) -> Result<Step, String> {
    let mut i = 1;
    let mut script = None;
    let mut operands = Vec::new();
    while i < words.len() {
        let v = static_arg(&words[i], "flock")?;
        if !operands.is_empty()
            && script.is_none()
            && v != "-c"
            && v != "--command"
            && !v.starts_with("--command=")
        {
            // First operand seen and no -c: the rest is the command.
            break;
        }
        match v {
            "--" => {
                i += 1;
                break;
            }
            "-c" | "--command" => {
                let s = words
                    .get(i + 1)
                    .ok_or("`flock -c` without a command string")?;
                script = Some(static_arg(s, "flock")?.to_string());
                i += 2;
            }
            "-w" | "--timeout" | "--wait" | "-E" | "--conflict-exit-code" => i += 2,
            _ if v.starts_with("--command=") => {
                script = Some(v["--command=".len()..].to_string());
                i += 1;
            }
            _ if v.starts_with("--") => {
                let name = v.split_once('=').map_or(v, |(n, _)| n);
                if !matches!(
                    name,
                    "--shared"
                        | "--exclusive"
                        | "--unlock"
                        | "--nonblock"
                        | "--nb"
                        | "--close"
                        | "--no-fork"
                        | "--verbose"
                        | "--timeout"
                        | "--wait"
                        | "--conflict-exit-code"
                        | "--fcntl"
                ) {
                    return Err(format!("unknown `flock` option `{v}`"));
                }
                i += 1;
            }
            _ if v.len() > 1 && v.starts_with('-') => {
                for c in v.chars().skip(1) {
                    if !"sxeunoFw0123456789E".contains(c) {
                        return Err(format!("unknown `flock` option `{v}`"));
                    }
                }
                i += 1;
            }
            _ => {
                operands.push(i);
                i += 1;
            }
        }
    }
    if let Some(s) = script {
        return Ok(Step::Shell(s));
    }
    Ok(wrap_at(words, i))
}

fn xargs(words: &[Word]) -> Result<Step, String> {
    let mut i = 1;
    while i < words.len() {
        let v = static_arg(&words[i], "xargs")?;
        if v == "--" {
            i += 1;
            break;
        }
        if let Some(long) = v.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            match name {
                "null" | "interactive" | "no-run-if-empty" | "verbose" | "exit" | "show-limits"
                | "open-tty" | "eof" | "replace" | "max-lines" => i += 1,
                "arg-file" | "delimiter" | "max-args" | "max-procs" | "max-chars"
                | "process-slot-var" => i += if long.contains('=') { 1 } else { 2 },
                _ => return Err(format!("unknown `xargs` option `{v}`")),
            }
            continue;
        }
        if v.len() > 1 && v.starts_with('-') {
            i += 1;
            for (k, c) in v.char_indices().skip(1) {
                match c {
                    '0' | 'o' | 'p' | 'r' | 't' | 'x' => {}
                    'e' | 'i' | 'l' => break,
                    'a' | 'd' | 'E' | 'I' | 'L' | 'n' | 'P' | 's' => {
                        if k + 1 == v.len() {
                            static_arg(
                                words
                                    .get(i)
                                    .ok_or(format!("`xargs -{c}` without its value"))?,
                                "xargs",
                            )?;
                            i += 1;
                        }
                        break;
                    }
                    _ => return Err(format!("unknown `xargs` option `-{c}`")),
                }
            }
            continue;
        }
        break;
    }
    let rest = if i >= words.len() {
        vec![Word::literal("echo")]
    } else {
        words[i..].to_vec()
    };
    Ok(Step::Wrap { rest, open: true })
}

fn watch(words: &[Word]) -> Result<Step, String> {
    let (i, seen) = options(
        words,
        "dtbegcxprwf",
        "nq",
        &[
            "--differences",
            "--no-title",
            "--beep",
            "--errexit",
            "--chgexit",
            "--color",
            "--no-color",
            "--exec",
            "--precise",
            "--no-wrap",
            "--no-linewrap",
            "--follow",
        ],
        &["--interval", "--equexit"],
    )?;
    if i >= words.len() {
        return Ok(Step::Run);
    }
    if seen.contains(&'x') || words[1..i].iter().any(|w| w.value() == Some("--exec")) {
        return Ok(wrap_at(words, i));
    }
    let mut joined = Vec::new();
    for w in &words[i..] {
        joined.push(static_arg(w, "watch")?.to_string());
    }
    Ok(Step::Shell(joined.join(" ")))
}

/// `env -S STRING`: only plain words and simple quotes are modelled.
fn split_env_string(s: &str) -> Result<Vec<Word>, String> {
    if s.contains(['$', '\\', '#']) {
        return Err("`env -S` string with escapes, variables or comments".into());
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(Word::literal(std::mem::take(&mut cur)));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("`env -S` string with an unbalanced quote".into());
    }
    if in_word {
        out.push(Word::literal(cur));
    }
    Ok(out)
}
