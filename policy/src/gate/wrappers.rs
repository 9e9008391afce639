//! Wrapper programs: commands that run another command given in their
//! arguments. The gate finds the wrapped command and evaluates it too.

use super::grammars;
use super::opts::{self, Grammar, Parsed};
use super::rules;
use super::walk::{parse_and_walk, MAX_REPARSE};
use super::word::Word;
use super::{Ctx, ParsedCommand, Rules};

/// What a program does with its arguments.
pub(crate) enum Step {
    /// It runs no other command (or is no wrapper).
    Run,
    /// It runs its words from `at` on as a command (no copy: a chain of
    /// wrappers is read in one pass). `open`: more arguments come from
    /// stdin.
    Wrap { at: usize, open: bool },
    /// It runs `rest`, words of its own making (`env -S`, `xargs` alone).
    Replace { rest: Vec<Word>, open: bool },
    /// It runs a shell string.
    Shell(String),
    /// It runs several shell strings (`hyperfine`, `tmux`).
    Shells(Vec<String>),
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
    "run0",
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "uname26",
    "perf",
    "mosh",
    "sshpass",
    "schroot",
    "systemd-nspawn",
    "lxc-attach",
    "lxc-execute",
    "chpst",
    "daemonize",
    "start-stop-daemon",
    "xvfb-run",
    "sem",
    "ifne",
    "chronic",
    "pee",
    "cpulimit",
    "trickle",
    "torify",
    "tsocks",
    "firejail",
    "nsjail",
    "minijail0",
    "ktrace",
    "dtruss",
    "sandbox-exec",
];

/// At most this many wrappers in a row (`nice nice ... cmd`, counting
/// those of enclosing `sh -c` strings): every command reports the
/// wrappers it is reached through, so deeper chains would make the
/// verdict grow with the square of the input.
pub(crate) const MAX_WRAPPERS: usize = 64;

/// At most this many `env -S` strings per command line (each is spliced
/// into a copy of the rest of the line).
const MAX_ENV_SPLITS: usize = 8;

/// Is `base` a shell the gate parses (`sh -c` strings)?
pub(crate) fn is_shell(base: &str) -> bool {
    SHELLS.contains(&base)
}

pub(crate) fn is_wrapper(base: &str) -> bool {
    base == "ip" || SHELLS.contains(&base)
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
        || super::launchers::is_launcher(base)
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
        // The command being resolved is `words[start..]`: a wrapper moves
        // `start` past itself.
        let mut start = 0;
        // The first word of a simple command can be the bash keyword `time`
        // (only `-p` and `--` are its options); behind a wrapper, `time` is
        // the GNU program.
        let mut keyword_position = true;
        loop {
            let cmd = &words[start..];
            let Some(prog) = cmd.first() else { return };
            if keyword_position && prog.value() == Some("time") {
                keyword_position = false;
                let mut i = 1;
                if cmd.get(i).and_then(|w| w.value()) == Some("-p") {
                    i += 1;
                }
                if cmd.get(i).and_then(|w| w.value()) == Some("--") {
                    i += 1;
                }
                if i >= cmd.len() {
                    self.push(tail(words, start), &via, open, true);
                    return;
                }
                rules::check_wrapper_listed(self, "time");
                via.push("time".to_string());
                start += i;
                continue;
            }
            keyword_position = false;
            if let Err(why) = rules::check_program_name(prog) {
                self.unknown(why);
                self.push(tail(words, start), &via, open, false);
                return;
            }
            let name = prog.text.clone();
            let base = rules::basename(&name).to_string();
            if open && is_wrapper(&base) {
                self.unknown(format!(
                    "`{base}` run by xargs gets its arguments from stdin"
                ));
                self.push(tail(words, start), &via, open, false);
                return;
            }
            let step = self.unwrap(&base, cmd);
            if via.len() >= MAX_WRAPPERS
                && matches!(step, Step::Wrap { .. } | Step::Replace { .. } | Step::Shell(_) | Step::Shells(_) | Step::Find(_))
            {
                self.unknown(format!("more than {MAX_WRAPPERS} wrappers in a row"));
                self.push(tail(words, start), &via, open, false);
                return;
            }
            match step {
                Step::Run => {
                    let r = if base == "find" { Rules::Grammar } else { Rules::None };
                    self.push_as(tail(words, start), &via, open, true, r);
                    return;
                }
                Step::Unknown(why) => {
                    self.unknown(why);
                    self.push(tail(words, start), &via, open, true);
                    return;
                }
                Step::Wrap { at, open: more } => {
                    rules::check_wrapper_listed(self, &name);
                    via.push(name);
                    start += at;
                    open |= more;
                }
                Step::Replace { rest, open: more } => {
                    rules::check_wrapper_listed(self, &name);
                    via.push(name);
                    words = rest;
                    start = 0;
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
                    if self.allowlist() {
                        super::walk::check_text_after(self, &script);
                    }
                    if self.commands.len() == before {
                        // An empty string still runs the shell.
                        self.commands.push(ParsedCommand {
                            program: via.pop().unwrap_or_default(),
                            argv: texts(tail(words, start)),
                            via,
                            rules: Rules::Wrapper,
                        });
                    }
                    return;
                }
                Step::Shells(scripts) => {
                    rules::check_wrapper_listed(self, &name);
                    // The launcher itself runs too.
                    self.push_as(tail(words.clone(), start), &via, open, false, Rules::Wrapper);
                    via.push(name);
                    if reparse >= MAX_REPARSE {
                        self.unknown("shell strings nested too deeply");
                        return;
                    }
                    for script in scripts {
                        if self.allowlist() {
                            super::walk::check_text(self, &script);
                        }
                        parse_and_walk(self, &script, &via, reparse + 1);
                        if self.allowlist() {
                            super::walk::check_text_after(self, &script);
                        }
                    }
                    return;
                }
                Step::Find(groups) => {
                    self.push_as(tail(words, start), &via, open, true, Rules::Grammar);
                    via.push(name);
                    for group in groups {
                        self.resolve(group, via.clone(), reparse, open);
                    }
                    return;
                }
            }
        }
    }

    fn push(&mut self, words: Vec<Word>, via: &[String], open: bool, checks: bool) {
        self.push_as(words, via, open, checks, Rules::None)
    }

    fn push_as(
        &mut self,
        words: Vec<Word>,
        via: &[String],
        open: bool,
        checks: bool,
        rules: Rules,
    ) {
        let base = rules::basename(&words[0].text);
        if rules::evaluates_names(base) {
            self.evaluator = true;
        }
        let mut rules = rules;
        if checks {
            let found = rules::check_command(self, &words, open);
            if rules == Rules::None {
                rules = found;
            }
        }
        if rules == Rules::None && is_wrapper(base) {
            rules = Rules::Wrapper;
        }
        let cmd = ParsedCommand {
            program: words[0].text.clone(),
            argv: texts(words),
            via: via.to_vec(),
            rules,
        };
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
                wrapper_opts(words, &grammars::DOAS).and_then(|(i, p)| {
                    if p.has("s") {
                        return Err("`doas -s` runs a shell".into());
                    }
                    Ok(wrap_at(words, i))
                })
            }
            "pkexec" => {
                self.danger("privilege escalation (`pkexec`)");
                wrapper_opts(words, &grammars::PKEXEC).map(|(i, _)| wrap_at(words, i))
            }
            "nice" => nice(words),
            "ionice" => wrapper_opts(words, &grammars::IONICE).map(|(i, p)| {
                if p.has("pid") || p.has("pgid") || p.has("uid") {
                    Step::Run
                } else {
                    wrap_at(words, i)
                }
            }),
            "timeout" => wrapper_opts(words, &grammars::TIMEOUT).map(|(i, _)| {
                // The duration, then the command.
                if i + 1 < words.len() {
                    wrap_at(words, i + 1)
                } else {
                    Step::Run
                }
            }),
            // A reserved word: no options (`coproc --` runs `--`).
            "coproc" => Ok(wrap_at(words, 1)),
            "nohup" => wrapper_opts(words, &grammars::NOHUP).map(|(i, _)| wrap_at(words, i)),
            "builtin" => wrapper_opts(words, &grammars::BUILTIN).map(|(i, _)| wrap_at(words, i)),
            "time" => wrapper_opts(words, &grammars::GNU_TIME).map(|(i, p)| {
                if p.has("output") {
                    self.restrict("`time -o` writes a file");
                    if let Some(why) = p
                        .values("output")
                        .find_map(|v| super::paths::write_target_danger(&v.text))
                    {
                        self.danger(format!("`time -o` {why}"));
                    }
                }
                wrap_at(words, i)
            }),
            "stdbuf" => wrapper_opts(words, &grammars::STDBUF).map(|(i, _)| wrap_at(words, i)),
            "setsid" => wrapper_opts(words, &grammars::SETSID).map(|(i, _)| wrap_at(words, i)),
            "chrt" => wrapper_opts(words, &grammars::CHRT).map(|(mut i, p)| {
                if p.has("max") || p.has("pid") {
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
            "taskset" => wrapper_opts(words, &grammars::TASKSET).map(|(i, p)| {
                if p.has("pid") || i + 1 >= words.len() {
                    Step::Run
                } else {
                    wrap_at(words, i + 1)
                }
            }),
            "flock" => flock(words),
            "command" => wrapper_opts(words, &grammars::COMMAND).map(|(i, p)| {
                if p.has("v") || p.has("V") {
                    Step::Run
                } else {
                    wrap_at(words, i)
                }
            }),
            "exec" => wrapper_opts(words, &grammars::EXEC).map(|(i, _)| wrap_at(words, i)),
            "xargs" => xargs(words),
            "find" => self.find(words),
            "chroot" => wrapper_opts(words, &grammars::CHROOT).and_then(|(i, _)| {
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
            "sudo-rs" => {
                self.danger("privilege escalation (`sudo-rs`)");
                self.sudo(words)
            }
            b if super::launchers::is_launcher(b) => self.launcher(b, words),
            "ip" => {
                // `ip netns exec NS CMD`, `ip vrf exec VRF CMD`, `ip -batch F`.
                if words.iter().any(|w| {
                    matches!(w.text.as_str(), "exec" | "-b" | "-batch" | "-force") || w.dynamic
                }) {
                    Err("`ip ... exec` runs commands in a way the gate does not model".into())
                } else {
                    Ok(Step::Run)
                }
            }
            _ => Ok(Step::Run),
        };
        r.unwrap_or_else(Step::Unknown)
    }

    fn env(&mut self, words: &[Word]) -> Result<Step, String> {
        // Copied only when an `-S` string is spliced in.
        let mut words = std::borrow::Cow::Borrowed(words);
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
                // GNU env accepts unique abbreviations (`--unse`, `--split`).
                let name = match opts::match_long(&grammars::ENV, name) {
                    opts::LongMatch::Found { opt, .. } => opt.name,
                    opts::LongMatch::Ambiguous(_) => {
                        return Err(format!("ambiguous `env` option `{w}`"))
                    }
                    opts::LongMatch::Unknown => return Err(format!("unknown `env` option `{w}`")),
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
                self.env_splits += 1;
                if splits > 4 || self.env_splits > MAX_ENV_SPLITS {
                    return Err("too many `env -S` strings".into());
                }
                let parts = split_env_string(&s)?;
                // Replace what was consumed by the split words, parse again.
                let owned = words.to_mut();
                let tail = owned.split_off(i);
                owned.extend(parts);
                owned.extend(tail);
            }
        }
        while let Some(w) = words.get(i) {
            let Some(v) = w.value() else { break };
            match v.split_once('=') {
                Some((name, value)) if rules::is_var_name(name) => {
                    rules::check_assignment(self, name, Some(value));
                    i += 1;
                }
                _ => break,
            }
        }
        if i >= words.len() {
            return Ok(Step::Run);
        }
        Ok(match words {
            std::borrow::Cow::Borrowed(_) => Step::Wrap { at: i, open: false },
            std::borrow::Cow::Owned(mut w) => Step::Replace {
                rest: w.split_off(i),
                open: false,
            },
        })
    }

    fn sudo(&mut self, words: &[Word]) -> Result<Step, String> {
        let (i, p) = wrapper_opts(words, &grammars::SUDO)?;
        if p.has("shell") || p.has("login") || p.has("edit") {
            return Err("`sudo -s`/`-i`/`-e` runs a shell or an editor".to_string());
        }
        let info = p.has("list") || p.has("validate") || p.has("version") || p.has("remove-timestamp") || p.has("reset-timestamp");
        if info && i >= words.len() {
            return Ok(Step::Run);
        }
        let mut i = i;
        while let Some(v) = words.get(i).and_then(|w| w.value()) {
            match v.split_once('=') {
                Some((name, value)) if rules::is_var_name(name) => {
                    rules::check_assignment(self, name, Some(value));
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
                    self.restrict(format!("`find {t}` writes a file"));
                    if let Some(why) = words
                        .get(i + 1)
                        .and_then(|w| super::paths::write_target_danger(&w.text))
                    {
                        self.danger(format!("`find {t}` {why}"));
                    }
                }
                _ => {}
            }
            // The primaries GNU find knows, with how many values each takes.
            let arity = find_primary_arity(t);
            match arity {
                Some(n) if n > 0 => {
                    // Values are never primaries (`-name -delete` is a name).
                    prev = t;
                    i += 1;
                    for _ in 1..n {
                        i += 1;
                    }
                    if i < words.len() && n >= 1 {
                        let v = &words[i];
                        if !v.is_static()
                            && !matches!(
                                prev,
                                "-name" | "-iname" | "-path" | "-ipath" | "-wholename"
                                    | "-iwholename" | "-regex" | "-iregex" | "-lname" | "-ilname"
                            )
                        {
                            return Err(format!(
                                "`find` expression word `{}` depends on expansion",
                                v.text
                            ));
                        }
                        i += 1;
                    }
                    continue;
                }
                Some(_) => {}
                None if t.starts_with('-') || !matches!(t, "(" | ")" | "!" | ",") => {
                    if t.starts_with('-') {
                        self.restrict(format!("`find` primary `{t}` is not one the gate knows"));
                    } else {
                        self.restrict(format!("`find` expression word `{t}` is not a primary or operator"));
                    }
                }
                None => {}
            }
            prev = t;
            i += 1;
        }
        // `find ~ -exec rm {} +`: a destructive command over every file of a
        // home or system directory.
        if starts.iter().any(|w| rules::is_dangerous_path(w) || super::paths::normalize(&w.text).from_home) {
            if let Some(g) = groups.iter().find(|g| {
                g.first().is_some_and(|p| {
                    matches!(
                        rules::basename(&p.text),
                        "rm" | "shred" | "unlink" | "truncate" | "mv" | "chmod" | "chown" | "chgrp"
                            | "dd" | "wipe" | "srm" | "chattr" | "setfacl"
                    ) || (rules::basename(&p.text) == "sed" && g.iter().any(|w| w.text.starts_with("-i")))
                        || (rules::basename(&p.text) == "perl" && g.iter().any(|w| w.text.starts_with("-i") || w.text.starts_with("-pi")))
                })
            }) {
                let shown: Vec<&str> = g.iter().map(|w| w.text.as_str()).collect();
                self.danger(format!(
                    "`find {} -exec {}` changes or removes every file there",
                    starts.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
                    shown.join(" ")
                ));
            }
        }
        Ok(if groups.is_empty() {
            Step::Run
        } else {
            Step::Find(groups)
        })
    }
}

/// GNU find's options, tests and actions (not `-exec` and friends), with
/// the number of values each takes.
fn find_primary_arity(t: &str) -> Option<usize> {
    let one = [
        "-maxdepth", "-mindepth", "-regextype", "-files0-from", "-amin", "-anewer", "-atime",
        "-cmin", "-cnewer", "-ctime", "-fstype", "-gid", "-group", "-ilname", "-iname", "-inum",
        "-ipath", "-iregex", "-iwholename", "-links", "-lname", "-mmin", "-mtime", "-name",
        "-newer", "-path", "-perm", "-regex", "-samefile", "-size", "-type", "-uid", "-used",
        "-user", "-wholename", "-xtype", "-context", "-printf", "-fprint", "-fprint0", "-fls",
    ];
    let none = [
        "-depth", "-d", "-mount", "-xdev", "-noleaf", "-ignore_readdir_race",
        "-noignore_readdir_race", "-warn", "-nowarn", "-daystart", "-follow", "-empty",
        "-executable", "-false", "-true", "-nogroup", "-nouser", "-readable", "-writable",
        "-print", "-print0", "-ls", "-prune", "-quit", "-delete", "-not", "-a", "-and", "-o",
        "-or", "(", ")", "!", ",", "-help", "--help", "-version", "--version",
    ];
    if one.contains(&t) {
        Some(1)
    } else if t == "-fprintf" {
        Some(2)
    } else if none.contains(&t) {
        Some(0)
    } else if t.len() == 9 && t.starts_with("-newer") {
        // -newerXY REF
        Some(1)
    } else {
        None
    }
}

/// `words[start..]`, owned.
fn tail(mut words: Vec<Word>, start: usize) -> Vec<Word> {
    words.drain(..start);
    words
}

fn texts(words: Vec<Word>) -> Vec<String> {
    words.into_iter().map(|w| w.text).collect()
}

pub(crate) fn static_arg<'w>(w: &'w Word, prog: &str) -> Result<&'w str, String> {
    w.value()
        .ok_or_else(|| format!("argument `{}` of `{prog}` depends on expansion", w.text))
}

pub(crate) fn wrap_at(words: &[Word], i: usize) -> Step {
    if i >= words.len() {
        Step::Run
    } else {
        Step::Wrap { at: i, open: false }
    }
}

/// Reads a wrapper's options with its grammar (the one table of wrapper
/// options, in `grammars`): the index of its first operand (the command,
/// or the value before it), and the options. Unknown options, ambiguous
/// abbreviations, missing values and words that depend on expansion in
/// option position are errors: the gate cannot tell what would run.
pub(crate) fn wrapper_opts<'g>(
    words: &[Word],
    g: &'g Grammar,
) -> Result<(usize, Parsed<'g>), String> {
    wrapper_opts_from(words, 1, g)
}

/// [`wrapper_opts`] with the options starting at `words[from]`.
fn wrapper_opts_from<'g>(
    words: &[Word],
    from: usize,
    g: &'g Grammar,
) -> Result<(usize, Parsed<'g>), String> {
    let args = words.get(from..).unwrap_or_default();
    let p = opts::leading_options(g, args);
    if let Some(prob) = p.problems.first() {
        return Err(prob.describe(g.prog));
    }
    let first = p.first_operand.map_or(words.len(), |i| i + from);
    // Option words and their values must be static.
    for w in words.get(from..first.min(words.len())).unwrap_or_default() {
        static_arg(w, g.prog)?;
    }
    // So must the word after them (the command, or the value before it):
    // `timeout {-s,KILL} 5 cmd` is `timeout -s KILL 5 cmd` to bash.
    if let Some(w) = words.get(first) {
        static_arg(w, g.prog)?;
    }
    Ok((first, p))
}

fn shell(words: &[Word]) -> Step {
    let prog = rules::basename(&words[0].text).to_string();
    let mut i = 1;
    let mut command_mode = false;
    let (mut norc, mut noprofile, mut login, mut interactive) = (false, false, false, false);
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
                "norc" => {
                    norc = true;
                    i += 1
                }
                "noprofile" => {
                    noprofile = true;
                    i += 1
                }
                "login" => {
                    login = true;
                    i += 1
                }
                "posix" | "restricted" | "verbose" | "noediting" | "debugger" | "help"
                | "version" | "dump-strings" | "dump-po-strings" | "pretty-print" => i += 1,
                "rcfile" | "init-file" => {
                    return Step::Unknown(format!(
                        "`{prog} --{long}` runs a start-up file the gate cannot inspect"
                    ))
                }
                _ => return Step::Unknown(format!("unknown `{prog}` option `{w}`")),
            }
            continue;
        }
        if w.len() > 1 && (w.starts_with('-') || w.starts_with('+')) {
            let mut takes = 0;
            for c in w.chars().skip(1) {
                match c {
                    'c' => command_mode = true,
                    'i' => interactive = true,
                    'l' => login = true,
                    'o' | 'O' => takes += 1,
                    's' => return Step::Unknown(format!("`{prog} -s` reads commands from stdin")),
                    'a' | 'b' | 'e' | 'f' | 'h' | 'k' | 'm' | 'n' | 'p' | 'r' | 't'
                    | 'u' | 'v' | 'x' | 'B' | 'C' | 'E' | 'H' | 'P' | 'T' => {}
                    _ => return Step::Unknown(format!("unknown `{prog}` option `{w}`")),
                }
            }
            i += 1 + takes;
            continue;
        }
        break;
    }
    // Interactive shells read ~/.bashrc (and `$ENV`), login shells
    // ~/.profile and friends: code the gate cannot see.
    // (Login shells read ~/.profile and /etc/profile: writes to those are on
    // the danger list, so `bash -lc` is followed like `bash -c`.)
    let _ = (login, noprofile);
    if interactive && !norc {
        return Step::Unknown(format!(
            "`{prog} -i` runs ~/.bashrc first and expands history and aliases: the gate cannot tell what runs"
        ));
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
    // `nice -5 cmd` and `nice --5 cmd` are the historical adjustment forms.
    let mut from = 1;
    if let Some(v) = words.get(1).and_then(|w| w.value()) {
        let digits = v.trim_start_matches('-');
        if v.starts_with('-') && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            from = 2;
        }
    }
    wrapper_opts_from(words, from, &grammars::NICE).map(|(i, _)| wrap_at(words, i))
}

/// `flock [options] FILE CMD...`, `flock [options] FILE -c STRING`,
/// `flock [options] FD` (util-linux: options stop at the first operand).
fn flock(words: &[Word]) -> Result<Step, String> {
    let (i, p) = wrapper_opts(words, &grammars::FLOCK)?;
    if let Some(s) = p.values("command").next() {
        return Ok(Step::Shell(static_arg(s, "flock")?.to_string()));
    }
    // words[i] is the lock file (or descriptor).
    let Some(_lock) = words.get(i) else {
        return Ok(Step::Run);
    };
    match words.get(i + 1).and_then(|w| w.value()) {
        Some("-c" | "--command") => {
            let s = words
                .get(i + 2)
                .ok_or("`flock -c` without a command string")?;
            Ok(Step::Shell(static_arg(s, "flock")?.to_string()))
        }
        Some(v) if v.starts_with("--command=") => {
            Ok(Step::Shell(v["--command=".len()..].to_string()))
        }
        _ => Ok(wrap_at(words, i + 1)),
    }
}

fn xargs(words: &[Word]) -> Result<Step, String> {
    let (i, _) = wrapper_opts(words, &grammars::XARGS)?;
    Ok(if i >= words.len() {
        Step::Replace {
            rest: vec![Word::literal("echo")],
            open: true,
        }
    } else {
        Step::Wrap { at: i, open: true }
    })
}

fn watch(words: &[Word]) -> Result<Step, String> {
    let (i, p) = wrapper_opts(words, &grammars::WATCH)?;
    if i >= words.len() {
        return Ok(Step::Run);
    }
    if p.has("exec") {
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
