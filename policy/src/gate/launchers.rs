//! Launchers: programs that run a command given in their arguments behind
//! a subcommand or an option (`uv run`, `rustup run`, `pyenv exec`,
//! `direnv exec`, `npm exec`, `pnpm exec`/`dlx`, `npx`, `cmake -E env`,
//! `hyperfine`, `tmux new-session`, `screen`, `dtach`, `eatmydata`,
//! `softlimit`, `envdir`). They are wrappers: the command they run is
//! evaluated too, and in allowlist mode it must itself be allowed. Options
//! the gate does not know make the launcher not understood.

use super::rules;
use super::word::Word;
use super::wrappers::{static_arg, wrap_at, Step};
use super::Ctx;

/// Is `base` a launcher?
pub(crate) fn is_launcher(base: &str) -> bool {
    matches!(
        base,
        "uv" | "uvx"
            | "rustup"
            | "pyenv"
            | "direnv"
            | "npm"
            | "pnpm"
            | "yarn"
            | "npx"
            | "pnpx"
            | "bunx"
            | "cmake"
            | "hyperfine"
            | "tmux"
            | "screen"
            | "dtach"
            | "eatmydata"
            | "softlimit"
            | "envdir"
    ) || table(base).is_some()
        || matches!(
            base,
            "nix-shell"
                | "nix"
                | "setuidgid"
                | "envuidgid"
                | "setlock"
                | "pgrphack"
                | "fghack"
                | "dotenv"
        )
}

/// Launchers of the same shape: `PROG [options] KEYWORD [options] [--] CMD...`.
struct Table {
    keywords: &'static [&'static str],
    /// Options (before or after the keyword) that take a value.
    values: &'static [&'static str],
    /// `--` must come before the command (the words before it are not one).
    needs_dashes: bool,
    /// Words between the keyword and the command (`nvm exec VERSION`).
    skip: usize,
}

fn table(base: &str) -> Option<Table> {
    let t = |keywords, values, needs_dashes, skip| {
        Some(Table {
            keywords,
            values,
            needs_dashes,
            skip,
        })
    };
    match base {
        "poetry" => t(
            &["run"],
            &["-C", "--directory", "-P", "--project"],
            false,
            0,
        ),
        "pipenv" => t(&["run"], &[], false, 0),
        "bundle" | "bundler" => t(&["exec"], &["--gemfile"], false, 0),
        "conda" | "mamba" | "micromamba" => t(
            &["run"],
            &["-n", "--name", "-p", "--prefix", "--cwd"],
            false,
            0,
        ),
        "pdm" | "hatch" | "rye" | "pixi" | "devbox" | "volta" | "pdm3" => t(
            &["run"],
            &[
                "-e",
                "--env",
                "--environment",
                "-p",
                "--project",
                "--manifest-path",
                "--node",
                "--npm",
                "--yarn",
                "-C",
                "--config",
            ],
            false,
            0,
        ),
        "mise" | "rtx" => t(&["exec", "x"], &["-C", "--cd", "-j", "--jobs"], true, 0),
        "asdf" => t(&["exec"], &[], false, 0),
        "nvm" => t(&["exec", "run"], &[], false, 1),
        "fnm" => t(&["exec"], &["--using"], false, 0),
        _ => None,
    }
}

/// `-x`/`--xx` options of a launcher, `values` the ones that take a value:
/// the index of the first word after them. Unknown options are errors.
fn launcher_opts(
    words: &[Word],
    from: usize,
    prog: &str,
    flags: &[&str],
    values: &[&str],
) -> Result<usize, String> {
    let mut i = from;
    while let Some(w) = words.get(i) {
        let t = static_arg(w, prog)?;
        if t == "--" {
            return Ok(i + 1);
        }
        if !t.starts_with('-') || t == "-" {
            return Ok(i);
        }
        let name = t.split('=').next().unwrap_or(t);
        if flags.contains(&name) {
            i += 1;
        } else if values.contains(&name) {
            i += if t.contains('=') { 1 } else { 2 };
        } else if !t.starts_with("--") && t.get(..2).is_some_and(|o| t.len() > 2 && values.contains(&o)) {
            i += 1; // `-pVALUE`
        } else {
            return Err(format!("`{prog}` option `{t}` is not one the gate knows"));
        }
    }
    Ok(i)
}

/// Short option clusters (`-dmS name`): `flags` and `values` are letters;
/// `on_value` sees each value.
fn cluster_opts(
    words: &[Word],
    from: usize,
    prog: &str,
    flags: &str,
    values: &str,
    mut on_value: impl FnMut(char, &str) -> Result<(), String>,
) -> Result<usize, String> {
    let mut i = from;
    while let Some(w) = words.get(i) {
        let t = static_arg(w, prog)?;
        if t == "--" {
            return Ok(i + 1);
        }
        if !t.starts_with('-') || t == "-" {
            return Ok(i);
        }
        let body: Vec<char> = t.chars().skip(1).collect();
        let mut next = i + 1;
        for (k, c) in body.iter().enumerate() {
            if values.contains(*c) {
                let v: String = body[k + 1..].iter().collect();
                let v = if v.is_empty() {
                    let v = words
                        .get(next)
                        .ok_or_else(|| format!("`{prog} -{c}` without its value"))?;
                    next += 1;
                    static_arg(v, prog)?.to_string()
                } else {
                    v
                };
                on_value(*c, &v)?;
                break;
            } else if !flags.contains(*c) {
                return Err(format!("`{prog}` option `-{c}` is not one the gate knows"));
            }
        }
        i = next;
    }
    Ok(i)
}

/// The words of a command given as several arguments, joined.
fn joined(words: &[Word], prog: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for w in words {
        out.push(static_arg(w, prog)?.to_string());
    }
    Ok(out.join(" "))
}

/// Key names `tmux send-keys` turns into keys (not text).
const TMUX_KEYS: &[&str] = &[
    "Enter", "C-m", "C-j", "KPEnter", "Escape", "Tab", "BTab", "Space", "BSpace", "C-c", "C-d",
    "C-l", "C-u", "Up", "Down", "Left", "Right",
];

impl Ctx<'_> {
    pub(crate) fn launcher(&mut self, base: &str, words: &[Word]) -> Result<Step, String> {
        let first = words.get(1).and_then(|w| w.value()).unwrap_or("");
        match base {
            "uv" => {
                let i = launcher_opts(
                    words,
                    1,
                    "uv",
                    &[
                        "-q",
                        "--quiet",
                        "-v",
                        "--verbose",
                        "--offline",
                        "--no-cache",
                        "-n",
                        "--native-tls",
                        "--no-progress",
                        "--preview",
                        "--no-config",
                        "--managed-python",
                        "--no-managed-python",
                        "--no-python-downloads",
                    ],
                    &[
                        "--directory",
                        "--project",
                        "--color",
                        "--cache-dir",
                        "--config-file",
                    ],
                )?;
                match (
                    words.get(i).and_then(|w| w.value()),
                    words.get(i + 1).and_then(|w| w.value()),
                ) {
                    (Some("run"), _) => self.uv_run(words, i + 1),
                    (Some("tool"), Some("run")) => self.uv_run(words, i + 2),
                    _ => Ok(Step::Run),
                }
            }
            "uvx" => self.uv_run(words, 1),
            "rustup" => {
                let i = launcher_opts(
                    words,
                    1,
                    "rustup",
                    &["-v", "--verbose", "-q", "--quiet"],
                    &[],
                )?;
                if words.get(i).and_then(|w| w.value()) != Some("run") {
                    return Ok(Step::Run);
                }
                let j = launcher_opts(words, i + 1, "rustup run", &["--install"], &[])?;
                // The toolchain, then the command.
                if j + 1 >= words.len() {
                    return Err("`rustup run` without a command".into());
                }
                Ok(wrap_at(words, j + 1))
            }
            "pyenv" if first == "exec" => {
                if words.len() < 3 {
                    return Err("`pyenv exec` without a command".into());
                }
                Ok(wrap_at(words, 2))
            }
            "direnv" if first == "exec" => {
                if words.len() < 4 {
                    return Err("`direnv exec` without a command".into());
                }
                Ok(wrap_at(words, 3))
            }
            "pyenv" | "direnv" => Ok(Step::Run),
            "npm" => {
                let i = launcher_opts(
                    words,
                    1,
                    "npm",
                    &[
                        "-g", "--global", "-s", "--silent", "-q", "--quiet", "--yes", "-y", "--no",
                    ],
                    &["-w", "--workspace", "--prefix", "-C"],
                )
                .unwrap_or(usize::MAX);
                match words.get(i).and_then(|w| w.value()) {
                    Some("exec" | "x") => self.npx(words, i + 1, "npm exec"),
                    Some("explore") => {
                        let dash = words.iter().position(|w| w.text == "--");
                        match dash {
                            Some(d) if d + 1 < words.len() => {
                                Ok(Step::Shell(joined(&words[d + 1..], "npm explore")?))
                            }
                            _ => Err("`npm explore` runs an interactive shell".into()),
                        }
                    }
                    _ => Ok(Step::Run),
                }
            }
            "pnpm" => {
                let i = launcher_opts(
                    words,
                    1,
                    "pnpm",
                    &[
                        "-r",
                        "--recursive",
                        "-w",
                        "--workspace-root",
                        "-s",
                        "--silent",
                        "--parallel",
                        "--stream",
                        "--aggregate-output",
                        "--if-present",
                        "--no-bail",
                    ],
                    &[
                        "-C",
                        "--dir",
                        "--filter",
                        "-F",
                        "--reporter",
                        "--workspace-concurrency",
                    ],
                )
                .unwrap_or(usize::MAX);
                match words.get(i).and_then(|w| w.value()) {
                    Some("exec") => self.npx(words, i + 1, "pnpm exec"),
                    Some("dlx") => self.npx(words, i + 1, "pnpm dlx"),
                    _ => Ok(Step::Run),
                }
            }
            "yarn" => match first {
                "dlx" | "exec" => self.npx(words, 2, "yarn"),
                _ => Ok(Step::Run),
            },
            "npx" | "pnpx" | "bunx" => self.npx(words, 1, base),
            "cmake" => {
                if first != "-E" {
                    return Ok(Step::Run);
                }
                match words.get(2).and_then(|w| w.value()) {
                    Some("env") => {
                        let mut i = 3;
                        while let Some(w) = words.get(i) {
                            let t = static_arg(w, "cmake -E env")?;
                            if t == "--" {
                                i += 1;
                                break;
                            }
                            if t.starts_with("--modify") {
                                return Err("`cmake -E env --modify` changes variables the gate does not model".into());
                            }
                            if t.starts_with("--unset=") {
                                i += 1;
                            } else if let Some((n, v)) = t.split_once('=') {
                                if !rules::is_var_name(n) {
                                    break;
                                }
                                rules::check_assignment(self, n, Some(v));
                                i += 1;
                            } else {
                                break;
                            }
                        }
                        if i >= words.len() {
                            return Ok(Step::Run);
                        }
                        Ok(wrap_at(words, i))
                    }
                    Some("time") => Ok(wrap_at(words, 3)),
                    Some("chdir") => Ok(wrap_at(words, 4)),
                    _ => Ok(Step::Run),
                }
            }
            "hyperfine" => hyperfine(words),
            "tmux" => self.tmux(words),
            "screen" => self.screen(words),
            "dtach" => {
                match first {
                    "-a" | "-p" => return Ok(Step::Run),
                    "-c" | "-A" | "-n" | "-N" => {}
                    _ => return Err(format!("`dtach {first}` is not a mode the gate knows")),
                }
                let i = cluster_opts(words, 3, "dtach", "Ez", "er", |_, _| Ok(()))?;
                Ok(wrap_at(words, i))
            }
            "eatmydata" => {
                let i = if first == "--" { 2 } else { 1 };
                Ok(wrap_at(words, i))
            }
            "softlimit" => {
                let i = cluster_opts(words, 1, "softlimit", "", "acdfolmprst", |_, _| Ok(()))?;
                Ok(wrap_at(words, i))
            }
            b if table(b).is_some() => self.table_launcher(b, words),
            "nix-shell" => {
                // `--run STRING` / `--command STRING`; otherwise an
                // interactive shell (nothing the gate sees runs).
                for (i, w) in words.iter().enumerate() {
                    let t = w.text.as_str();
                    if matches!(t, "--run" | "--command") {
                        let v = words
                            .get(i + 1)
                            .ok_or("`nix-shell --run` without a command")?;
                        return Ok(Step::Shell(static_arg(v, "nix-shell")?.to_string()));
                    }
                }
                Ok(Step::Run)
            }
            "nix" => {
                if matches!(first, "run") {
                    return Err(
                        "`nix run` runs a program from a package the gate cannot see".into(),
                    );
                }
                match words
                    .iter()
                    .position(|w| matches!(w.text.as_str(), "-c" | "--command"))
                {
                    Some(i) if matches!(first, "develop" | "shell") => {
                        if i + 1 >= words.len() {
                            return Err("`nix -c` without a command".into());
                        }
                        Ok(wrap_at(words, i + 1))
                    }
                    _ => Ok(Step::Run),
                }
            }
            "setuidgid" | "envuidgid" => {
                if words.len() < 3 {
                    return Err(format!("`{base}` without a command"));
                }
                Ok(wrap_at(words, 2))
            }
            "setlock" => {
                let i = cluster_opts(words, 1, "setlock", "nNxX", "", |_, _| Ok(()))?;
                Ok(wrap_at(words, i + 1))
            }
            "pgrphack" | "fghack" => Ok(wrap_at(words, 1)),
            "dotenv" => {
                if self.allowlist() {
                    self.unknown("`dotenv` sets variables from a file the gate cannot read");
                }
                match words.iter().position(|w| w.text == "--") {
                    Some(i) => Ok(wrap_at(words, i + 1)),
                    None => Err("`dotenv` without `--` before its command".into()),
                }
            }
            "envdir" => {
                if self.allowlist() {
                    self.unknown("`envdir` sets variables from files the gate cannot read");
                }
                if words.len() < 3 {
                    return Err("`envdir` without a command".into());
                }
                Ok(wrap_at(words, 2))
            }
            _ => Ok(Step::Run),
        }
    }

    /// A launcher of [`table`]: other subcommands run nothing the gate
    /// follows (the program's own rules apply).
    fn table_launcher(&mut self, base: &str, words: &[Word]) -> Result<Step, String> {
        let Some(t) = table(base) else {
            return Ok(Step::Run);
        };
        let mut i = 1;
        // Options before the keyword.
        while let Some(w) = words.get(i) {
            let v = static_arg(w, base)?;
            if !v.starts_with('-') {
                break;
            }
            let name = v.split('=').next().unwrap_or(v);
            i += if t.values.contains(&name) && !v.contains('=') {
                2
            } else {
                1
            };
        }
        let Some(kw) = words.get(i).and_then(|w| w.value()) else {
            return Ok(Step::Run);
        };
        if !t.keywords.contains(&kw) {
            // `poetry --opt VALUE run CMD` with an option the gate does not
            // know: where the command starts cannot be told.
            if words[i..].iter().any(|w| t.keywords.contains(&w.text.as_str())) {
                return Err(format!(
                    "`{base}` options the gate does not know before `{}`",
                    t.keywords[0]
                ));
            }
            return Ok(Step::Run);
        }
        i += 1;
        if t.needs_dashes {
            return match words[i..].iter().position(|w| w.text == "--") {
                Some(d) => Ok(wrap_at(words, i + d + 1)),
                None => Err(format!("`{base} {kw}` without `--` before its command")),
            };
        }
        while let Some(w) = words.get(i) {
            let v = static_arg(w, base)?;
            if v == "--" {
                i += 1;
                break;
            }
            if !v.starts_with('-') {
                break;
            }
            let name = v.split('=').next().unwrap_or(v);
            if t.values.contains(&name) {
                i += if v.contains('=') { 1 } else { 2 };
            } else if name.starts_with("--") || v.len() == 2 {
                // An option the gate does not know may take a value: the
                // command cannot be told apart from it.
                return Err(format!(
                    "`{base} {kw}` option `{v}` is not one the gate knows"
                ));
            } else {
                return Err(format!(
                    "`{base} {kw}` option `{v}` is not one the gate knows"
                ));
            }
        }
        i += t.skip;
        if i >= words.len() {
            return Err(format!("`{base} {kw}` without a command"));
        }
        Ok(wrap_at(words, i))
    }

    fn uv_run(&mut self, words: &[Word], from: usize) -> Result<Step, String> {
        let mut i = from;
        let flags = [
            "--frozen",
            "--locked",
            "--no-sync",
            "--isolated",
            "--no-project",
            "--all-extras",
            "--no-dev",
            "--dev",
            "--active",
            "--exact",
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--offline",
            "--no-cache",
            "--all-packages",
            "--no-default-groups",
            "--all-groups",
            "--refresh",
            "--upgrade",
            "-U",
            "--no-env-file",
            "--no-editable",
            "--compile-bytecode",
        ];
        let values = [
            "--with",
            "-w",
            "--with-editable",
            "--with-requirements",
            "--package",
            "--extra",
            "--group",
            "--only-group",
            "--no-group",
            "--index",
            "--index-url",
            "--extra-index-url",
            "--directory",
            "--project",
            "--from",
            "--color",
            "-p",
            "--python",
            "--cache-dir",
            "--no-extra",
            "--prerelease",
            "--resolution",
        ];
        while let Some(w) = words.get(i) {
            let t = static_arg(w, "uv run")?;
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            let name = t.split('=').next().unwrap_or(t);
            if matches!(name, "-m" | "--module" | "-s" | "--script" | "--gui-script") {
                return Err(format!("`uv run {t}` runs Python code the gate cannot see"));
            }
            if name == "--env-file" {
                return Err("`uv run --env-file` sets variables the gate cannot see".into());
            }
            if flags.contains(&name) {
                i += 1;
            } else if values.contains(&name) {
                let v = if t.contains('=') {
                    i += 1;
                    t.split_once('=')
                        .map(|(_, v)| v.to_string())
                        .unwrap_or_default()
                } else {
                    i += 2;
                    words
                        .get(i - 1)
                        .and_then(|w| w.value())
                        .unwrap_or("")
                        .to_string()
                };
                if matches!(name, "-p" | "--python") && (v.contains('/') || v.is_empty()) {
                    return Err(format!(
                        "`uv run {name} {v}` runs the interpreter at that path"
                    ));
                }
            } else {
                return Err(format!("`uv run` option `{t}` is not one the gate knows"));
            }
        }
        if i >= words.len() {
            return Err("`uv run` without a command starts an interactive Python".into());
        }
        Ok(wrap_at(words, i))
    }

    /// `npx [options] CMD ...`, `npm exec`, `pnpm dlx`, `yarn dlx`.
    fn npx(&mut self, words: &[Word], from: usize, prog: &str) -> Result<Step, String> {
        let mut i = from;
        while let Some(w) = words.get(i) {
            let t = static_arg(w, prog)?;
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            let name = t.split('=').next().unwrap_or(t);
            match name {
                "-c" | "--call" => {
                    let v = if t.contains('=') {
                        t.split_once('=')
                            .map(|(_, v)| v.to_string())
                            .unwrap_or_default()
                    } else {
                        let v = words
                            .get(i + 1)
                            .ok_or_else(|| format!("`{prog} {t}` without a command string"))?;
                        static_arg(v, prog)?.to_string()
                    };
                    return Ok(Step::Shell(v));
                }
                "-y" | "--yes" | "--no" | "-q" | "--quiet" | "--ignore-existing" | "-s"
                | "--silent" => i += 1,
                "-p" | "--package" | "-w" | "--workspace" => {
                    i += if t.contains('=') { 1 } else { 2 }
                }
                _ => return Err(format!("`{prog}` option `{t}` is not one the gate knows")),
            }
        }
        if i >= words.len() {
            return Err(format!("`{prog}` without a command"));
        }
        Ok(wrap_at(words, i))
    }

    fn tmux(&mut self, words: &[Word]) -> Result<Step, String> {
        let mut shells: Vec<String> = Vec::new();
        let mut i = cluster_opts(words, 1, "tmux", "2CDlNuvV", "cfLST", |c, v| {
            match c {
                'c' => shells.push(v.to_string()),
                'f' => return Err("`tmux -f` reads a configuration that runs commands".into()),
                _ => {}
            }
            Ok(())
        })?;
        while i < words.len() {
            let end = words[i..]
                .iter()
                .position(|w| w.text == ";")
                .map_or(words.len(), |p| i + p);
            let cmd = &words[i..end];
            i = end + 1;
            let Some(name) = cmd.first() else { continue };
            let name = static_arg(name, "tmux")?;
            let (flags, values) = match name {
                "new-session" | "new" => ("AdDEPX", "cefFnstxy"),
                "new-window" | "neww" => ("abdkPS", "cefFnt"),
                "split-window" | "splitw" => ("bdfhIvPZ", "celtFp"),
                "respawn-pane" | "respawnp" | "respawn-window" | "respawnw" => ("k", "cet"),
                "run-shell" | "run" => ("bCE", "cdt"),
                "display-popup" | "popup" => ("BCEkN", "bcdehsStTwxy"),
                "pipe-pane" | "pipep" => ("IOo", "t"),
                "send-keys" | "send" => ("FHKlMRX", "Nt"),
                "ls" | "list-sessions" | "kill-session" | "kill-server" | "attach"
                | "attach-session" | "a" | "at" | "has-session" | "has" | "capture-pane"
                | "capturep" | "list-windows" | "lsw" | "list-panes" | "lsp" | "select-window"
                | "selectw" | "select-pane" | "selectp" | "rename-session" | "rename"
                | "rename-window" | "renamew" | "detach" | "detach-client" | "kill-window"
                | "killw" | "kill-pane" | "killp" | "resize-pane" | "resizep" | "wait-for"
                | "wait" | "display-message" | "display" | "list-clients" | "lsc"
                | "show-options" | "show" | "info" | "start-server" | "start" => continue,
                other => {
                    return Err(format!(
                        "`tmux {other}` is not a tmux command the gate knows"
                    ))
                }
            };
            let mut env_vars: Vec<(String, String)> = Vec::new();
            let j = cluster_opts(cmd, 1, "tmux", flags, values, |c, v| {
                if c == 'e' {
                    if let Some((n, val)) = v.split_once('=') {
                        env_vars.push((n.to_string(), val.to_string()));
                    }
                }
                Ok(())
            })?;
            for (n, v) in env_vars {
                rules::check_assignment(self, &n, Some(&v));
            }
            let rest = &cmd[j.min(cmd.len())..];
            if rest.is_empty() {
                continue;
            }
            if matches!(name, "send-keys" | "send") {
                let text: Vec<Word> = rest
                    .iter()
                    .filter(|w| !TMUX_KEYS.contains(&w.text.as_str()))
                    .cloned()
                    .collect();
                shells.push(joined(&text, "tmux send-keys")?);
            } else {
                shells.push(joined(rest, "tmux")?);
            }
        }
        Ok(if shells.is_empty() {
            Step::Run
        } else {
            Step::Shells(shells)
        })
    }

    fn screen(&mut self, words: &[Word]) -> Result<Step, String> {
        // Listing, attaching, detaching: no new command.
        if words.iter().skip(1).any(|w| {
            matches!(
                w.text.as_str(),
                "-ls"
                    | "-list"
                    | "-wipe"
                    | "-r"
                    | "-R"
                    | "-RR"
                    | "-x"
                    | "-d"
                    | "-D"
                    | "-Q"
                    | "-v"
                    | "-version"
                    | "-h"
                    | "-help"
                    | "--help"
                    | "--version"
            )
        }) && !words.iter().any(|w| {
            w.text.starts_with('-') && w.text.contains(['m', 'X']) && !w.text.starts_with("--")
        }) {
            return Ok(Step::Run);
        }
        let mut command_at: Option<usize> = None;
        let mut i = 1;
        // Options, with `-X CMD ARGS...` ending them.
        while let Some(w) = words.get(i) {
            let t = static_arg(w, "screen")?;
            if !t.starts_with('-') || t == "-" {
                break;
            }
            if t == "--" {
                i += 1;
                break;
            }
            let body: Vec<char> = t.chars().skip(1).collect();
            let mut next = i + 1;
            for (k, c) in body.iter().enumerate() {
                match c {
                    'X' => {
                        command_at = Some(next);
                        break;
                    }
                    'c' => {
                        return Err("`screen -c` reads a configuration that runs commands".into())
                    }
                    's' => return Err("`screen -s` sets the shell screen runs".into()),
                    'e' | 'h' | 'p' | 'S' | 't' | 'T' => {
                        if k + 1 == body.len() {
                            next += 1;
                        }
                        break;
                    }
                    'a' | 'A' | 'd' | 'D' | 'f' | 'F' | 'i' | 'L' | 'l' | 'm' | 'O' | 'q' | 'r'
                    | 'R' | 'U' | 'x' | 'w' | 'n' => {}
                    _ => return Err(format!("`screen` option `-{c}` is not one the gate knows")),
                }
            }
            if command_at.is_some() {
                break;
            }
            i = next;
        }
        if let Some(x) = command_at {
            let cmd = words.get(x).and_then(|w| w.value()).unwrap_or("");
            let rest = &words[(x + 1).min(words.len())..];
            return match cmd {
                "stuff" => Ok(Step::Shells(vec![joined(rest, "screen -X stuff")?
                    .replace("\\n", "\n")
                    .replace("^M", "\n")])),
                "exec" | "screen" => Ok(Step::Shells(vec![joined(rest, "screen -X")?])),
                "quit" | "kill" | "detach" | "hardcopy" | "title" | "select" | "windows"
                | "sessionname" | "log" | "logfile" | "info" | "next" | "prev" | "other" => {
                    Ok(Step::Run)
                }
                other => Err(format!(
                    "`screen -X {other}` is not a screen command the gate knows"
                )),
            };
        }
        Ok(wrap_at(words, i))
    }
}

/// `hyperfine [options] CMD...`: every command (and `--prepare`,
/// `--setup`, `--conclude`, `--cleanup`, `--reference`) is a shell string.
fn hyperfine(words: &[Word]) -> Result<Step, String> {
    let mut shells = Vec::new();
    let mut i = 1;
    let takes_shell = [
        "-p",
        "--prepare",
        "-s",
        "--setup",
        "-C",
        "--conclude",
        "-c",
        "--cleanup",
        "--reference",
    ];
    let values = [
        "-w",
        "--warmup",
        "-m",
        "--min-runs",
        "-M",
        "--max-runs",
        "-r",
        "--runs",
        "-n",
        "--command-name",
        "--style",
        "--sort",
        "-u",
        "--time-unit",
        "--export-asciidoc",
        "--export-csv",
        "--export-json",
        "--export-markdown",
        "--export-orgmode",
        "--output",
        "--input",
        "-D",
        "--parameter-step-size",
    ];
    while let Some(w) = words.get(i) {
        let t = static_arg(w, "hyperfine")?;
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') {
            shells.push(t.to_string());
            i += 1;
            continue;
        }
        let (name, attached) = match t.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (t, None),
        };
        let mut value = || -> Result<String, String> {
            match &attached {
                Some(v) => Ok(v.clone()),
                None => {
                    i += 1;
                    let v = words
                        .get(i)
                        .ok_or_else(|| format!("`hyperfine {t}` without its value"))?;
                    Ok(static_arg(v, "hyperfine")?.to_string())
                }
            }
        };
        if takes_shell.contains(&name) {
            shells.push(value()?);
        } else if name == "-S" || name == "--shell" {
            let v = value()?;
            if v != "none" {
                return Err(format!(
                    "`hyperfine --shell {v}` runs the commands with another program"
                ));
            }
        } else if values.contains(&name) {
            value()?;
        } else if name == "-P" || name == "--parameter-scan" {
            value()?;
            i += 2;
        } else if name == "-L" || name == "--parameter-list" {
            value()?;
            i += 1;
        } else if !matches!(
            name,
            "-N" | "-i"
                | "--ignore-failure"
                | "--show-output"
                | "--help"
                | "-h"
                | "--version"
                | "-V"
        ) {
            return Err(format!(
                "`hyperfine` option `{t}` is not one the gate knows"
            ));
        }
        i += 1;
    }
    for w in words.get(i..).unwrap_or_default() {
        shells.push(static_arg(w, "hyperfine")?.to_string());
    }
    Ok(if shells.is_empty() {
        Step::Run
    } else {
        Step::Shells(shells)
    })
}
