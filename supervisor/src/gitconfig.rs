//! What git resolves for one repository, read the way git reads it: the
//! configuration files of every level (system, global, the environment's
//! `GIT_CONFIG_*`, local, worktree), the files they include (`include.path`
//! and every `includeIf.<condition>.path`, whatever the condition: any of
//! them could hold), and what those files name that git runs: the hooks
//! directory (`core.hooksPath`, also when it does not exist yet), the
//! template directory, and every file a command-valued key names
//! (`core.fsmonitor`, `core.sshCommand`, `core.editor`, `diff.external`,
//! `*.textconv`, filter drivers, merge drivers, `credential.helper`,
//! `!`-aliases, ...).
//!
//! [`control_files`] is the one function that answers "what must stay
//! read-only so that git on the host runs nothing the sandbox wrote" for a
//! repository; the caller keeps what lies inside a writable root.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use zot_policy::sandbox::{GIT_DIR_PROTECTED, GIT_DIR_PROTECTED_IF_PRESENT};

/// git's own limit on nested includes.
const MAX_INCLUDE_DEPTH: usize = 10;
/// Configuration files larger than this are read only up to it.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// One configuration entry: `section[.subsection].name` with section and
/// name lowercased (as git compares them), the value (`None`: a bare key,
/// boolean true) and the file it came from (`None`: the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub section: String,
    pub subsection: Option<String>,
    pub name: String,
    pub value: Option<String>,
    pub file: Option<PathBuf>,
}

/// The configuration git reads for every repository of this user: the
/// system and global files (every candidate git may read, whatever the
/// variables say now: a later git on the host may not have them), the
/// environment's `GIT_CONFIG_COUNT`/`GIT_CONFIG_PARAMETERS` entries, and
/// everything they include.
#[derive(Debug, Clone, Default)]
pub struct HostGit {
    /// The user's homes (`~` in path values).
    pub homes: Vec<PathBuf>,
    /// Every configuration file read (or that git would read if it existed).
    pub files: Vec<PathBuf>,
    pub entries: Vec<Entry>,
    /// The repository `GIT_DIR` (and `GIT_WORK_TREE`) name, when set: git
    /// on the host uses it wherever it runs.
    pub env_repo: Option<(PathBuf, Option<PathBuf>)>,
}

fn var<'a>(env: &'a [(OsString, OsString)], k: &str) -> Option<&'a OsString> {
    env.iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

impl HostGit {
    /// Read the system, global and environment levels for `env`.
    pub fn from_env(env: &[(OsString, OsString)]) -> HostGit {
        let mut h = HostGit {
            homes: crate::host::homes(env),
            files: Vec::new(),
            entries: Vec::new(),
            env_repo: None,
        };
        let here = std::env::current_dir().ok();
        let abs = |k: &str| {
            let p = PathBuf::from(var(env, k)?);
            Some(if p.is_absolute() {
                p
            } else {
                here.as_ref()?.join(p)
            })
        };
        h.env_repo = abs("GIT_DIR").map(|g| (canonical_prefix(&g), abs("GIT_WORK_TREE")));
        for f in crate::host::git_global_configs(env) {
            let mut files = std::mem::take(&mut h.files);
            let mut entries = std::mem::take(&mut h.entries);
            read_file(&f, 0, &h.homes, &mut files, &mut entries);
            h.files = files;
            h.entries = entries;
        }
        let mut env_entries = env_config(env);
        for e in &mut env_entries {
            e.file = None;
        }
        let homes = h.homes.clone();
        for e in env_entries {
            let include = e.is_include();
            let value = e.value.clone();
            h.entries.push(e);
            if let (true, Some(v)) = (include, value) {
                // Relative include paths are an error on the command line.
                if let Some(t) = expand_path(&v, None, &homes) {
                    read_file(&t, 1, &homes, &mut h.files, &mut h.entries);
                }
            }
        }
        h
    }
}

impl Entry {
    fn is_include(&self) -> bool {
        self.name == "path"
            && (self.section == "include" && self.subsection.is_none()
                || self.section == "includeif" && self.subsection.is_some())
    }
}

/// The `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` and
/// `GIT_CONFIG_PARAMETERS` entries of `env`.
fn env_config(env: &[(OsString, OsString)]) -> Vec<Entry> {
    let mut out = Vec::new();
    let get = |k: &str| var(env, k).and_then(|v| v.to_str()).map(str::to_string);
    if let Some(n) = get("GIT_CONFIG_COUNT").and_then(|n| n.trim().parse::<usize>().ok()) {
        for i in 0..n.min(10_000) {
            let (Some(k), v) = (
                get(&format!("GIT_CONFIG_KEY_{i}")),
                get(&format!("GIT_CONFIG_VALUE_{i}")),
            ) else {
                continue;
            };
            if let Some(e) = entry_from_key(&k, v) {
                out.push(e);
            }
        }
    }
    if let Some(p) = get("GIT_CONFIG_PARAMETERS") {
        for (k, v) in parse_parameters(&p) {
            if let Some(e) = entry_from_key(&k, v) {
                out.push(e);
            }
        }
    }
    out
}

/// `'key'='value' 'key2' ...` (git's sq-quoted list; also `key=value`).
fn parse_parameters(s: &str) -> Vec<(String, Option<String>)> {
    let mut words: Vec<(String, bool)> = Vec::new(); // (text, ends with '=')
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(d) = chars.next() {
                    cur.push(d);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push((std::mem::take(&mut cur), false));
                    in_word = false;
                }
            }
            '=' if in_word && chars.peek() == Some(&'\'') => {
                words.push((std::mem::take(&mut cur), true));
                in_word = false;
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push((cur, false));
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some((w, eq)) = it.next() {
        if eq {
            let v = it.next().map(|(v, _)| v);
            out.push((w, v));
        } else if let Some((k, v)) = w.split_once('=') {
            out.push((k.to_string(), Some(v.to_string())));
        } else {
            out.push((w, None));
        }
    }
    out
}

fn entry_from_key(key: &str, value: Option<String>) -> Option<Entry> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((s, n)) => (Some(s.to_string()), n),
        None => (None, rest),
    };
    Some(Entry {
        section: section.to_ascii_lowercase(),
        subsection: sub,
        name: name.to_ascii_lowercase(),
        value,
        file: None,
    })
}

fn read_text(p: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut b = Vec::new();
    f.take(MAX_CONFIG_BYTES).read_to_end(&mut b).ok()?;
    Some(String::from_utf8_lossy(&b).into_owned())
}

/// Read `path` (recorded in `files` whether or not it exists) and, in
/// order, what it includes.
fn read_file(
    path: &Path,
    depth: usize,
    homes: &[PathBuf],
    files: &mut Vec<PathBuf>,
    entries: &mut Vec<Entry>,
) {
    if depth > MAX_INCLUDE_DEPTH {
        return;
    }
    let path = lexical(path);
    let seen = files.contains(&path);
    if !seen {
        files.push(path.clone());
    }
    if seen && depth > 0 {
        return; // an include cycle: git stops at its depth limit
    }
    let Some(text) = read_text(&path) else {
        return;
    };
    let base = path.parent().map(Path::to_path_buf);
    for (section, sub, name, value) in parse(&text) {
        let e = Entry {
            section,
            subsection: sub,
            name,
            value,
            file: Some(path.clone()),
        };
        let include = e.is_include();
        let v = e.value.clone();
        entries.push(e);
        if let (true, Some(v)) = (include, v) {
            if let Some(t) = expand_path(&v, base.as_deref(), homes) {
                read_file(&t, depth + 1, homes, files, entries);
            }
        }
    }
}

/// A path-valued setting as git expands it: `~/` and `~user/` to a home,
/// `%(prefix)/` to git's prefix, a relative path against `base` (none:
/// not resolvable).
fn expand_path(v: &str, base: Option<&Path>, homes: &[PathBuf]) -> Option<PathBuf> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    if let Some(rest) = v.strip_prefix("%(prefix)/") {
        return Some(Path::new("/usr").join(rest));
    }
    if let Some(rest) = v.strip_prefix('~') {
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let home = if user.is_empty() {
            homes.first().cloned()?
        } else {
            nix::unistd::User::from_name(user).ok().flatten()?.dir
        };
        return Some(home.join(tail));
    }
    let p = Path::new(v);
    if p.is_absolute() {
        Some(p.to_path_buf())
    } else {
        base.map(|b| b.join(p))
    }
}

/// `p` with `.` and `..` removed lexically.
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// `p` canonical as far as it exists, the missing rest appended: where
/// the path leads once its missing components are made.
pub fn canonical_prefix(p: &Path) -> PathBuf {
    let p = lexical(p);
    let mut existing = p.clone();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Some(c) = crate::canon::canonicalize(&existing) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return p,
        }
    }
}

/// The entries of a configuration file: `(section, subsection, name,
/// value)`, section and name lowercased. Follows git's syntax: `#`/`;`
/// comments, `[section "sub"]` and the old `[section.sub]`, a key on the
/// header's line, quoted values with escapes, `\` line continuations.
pub fn parse(text: &str) -> Vec<(String, Option<String>, String, Option<String>)> {
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let mut section = String::new();
    let mut sub: Option<String> = None;
    let n = b.len();
    while i < n {
        let c = b[i];
        if c == '\n' || c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '#' || c == ';' {
            while i < n && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '[' {
            i += 1;
            let mut name = String::new();
            while i < n && (b[i].is_alphanumeric() || b[i] == '-' || b[i] == '.') {
                name.push(b[i]);
                i += 1;
            }
            sub = None;
            while i < n && (b[i] == ' ' || b[i] == '\t') {
                i += 1;
            }
            if i < n && b[i] == '"' {
                i += 1;
                let mut s = String::new();
                while i < n && b[i] != '"' && b[i] != '\n' {
                    if b[i] == '\\' && i + 1 < n {
                        i += 1;
                    }
                    s.push(b[i]);
                    i += 1;
                }
                i += 1; // the closing quote
                sub = Some(s);
            }
            while i < n && b[i] != ']' && b[i] != '\n' {
                i += 1;
            }
            if i < n && b[i] == ']' {
                i += 1;
            }
            match name.split_once('.') {
                Some((s, rest)) if sub.is_none() => {
                    section = s.to_ascii_lowercase();
                    sub = Some(rest.to_ascii_lowercase());
                }
                _ => section = name.to_ascii_lowercase(),
            }
            continue;
        }
        if !c.is_alphabetic() {
            // Not a key: git rejects the file; skip the line.
            while i < n && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let mut name = String::new();
        while i < n && (b[i].is_alphanumeric() || b[i] == '-') {
            name.push(b[i].to_ascii_lowercase());
            i += 1;
        }
        while i < n && (b[i] == ' ' || b[i] == '\t') {
            i += 1;
        }
        let value = if i < n && b[i] == '=' {
            i += 1;
            let (v, next) = parse_value(&b, i);
            i = next;
            Some(v)
        } else {
            None
        };
        if !section.is_empty() {
            out.push((section.clone(), sub.clone(), name, value));
        }
    }
    out
}

/// A value from `b[i..]` up to its end of line: the value and where the
/// next line starts.
fn parse_value(b: &[char], mut i: usize) -> (String, usize) {
    let n = b.len();
    let mut v = String::new();
    let mut quoted = false;
    // Length of `v` up to its last character that was quoted or not
    // whitespace (trailing unquoted whitespace is dropped).
    let mut keep = 0;
    while i < n && (b[i] == ' ' || b[i] == '\t') {
        i += 1;
    }
    while i < n {
        let c = b[i];
        match c {
            '\n' if !quoted => break,
            '\n' => break, // an unterminated quote: git rejects it
            '"' => {
                quoted = !quoted;
                keep = v.len();
            }
            '#' | ';' if !quoted => {
                while i < n && b[i] != '\n' {
                    i += 1;
                }
                break;
            }
            '\\' if i + 1 < n => {
                i += 1;
                match b[i] {
                    '\n' => {}
                    '\r' if i + 1 < n && b[i + 1] == '\n' => i += 1,
                    'n' => v.push('\n'),
                    't' => v.push('\t'),
                    'b' => {
                        v.pop();
                    }
                    other => v.push(other),
                }
                keep = v.len();
            }
            c if c.is_whitespace() && !quoted => v.push(c),
            c => {
                v.push(c);
                keep = v.len();
            }
        }
        i += 1;
    }
    v.truncate(keep);
    (v, i)
}

/// What a key is to git, for what it names on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyUse {
    /// A directory git runs hooks from (`core.hooksPath`).
    HooksDir,
    /// A path git copies into new repositories (`init.templateDir`).
    Template,
    /// A command line git runs (through a shell when it has metacharacters).
    Command,
    Other,
}

fn key_use(e: &Entry) -> KeyUse {
    let (s, sub, n) = (e.section.as_str(), e.subsection.as_deref(), e.name.as_str());
    match (s, sub, n) {
        ("core", None, "hookspath") => KeyUse::HooksDir,
        ("init", None, "templatedir") => KeyUse::Template,
        (
            "core",
            None,
            "fsmonitor" | "sshcommand" | "editor" | "pager" | "askpass" | "gitproxy",
        )
        | ("sequence", None, "editor")
        | ("diff", None, "external")
        | ("diff", Some(_), "command" | "textconv")
        | ("difftool" | "mergetool", Some(_), "cmd" | "path")
        | ("merge", Some(_), "driver")
        | ("filter", Some(_), "clean" | "smudge" | "process")
        | ("credential", _, "helper")
        | ("gpg", _, "program")
        | ("uploadpack", None, "packobjectshook")
        | ("remote", Some(_), "uploadpack" | "receivepack" | "vcs")
        | ("pager", Some(_) | None, _)
        | ("alias", _, _)
        | ("web", None, "browser")
        | ("browser" | "man", Some(_), "cmd" | "path")
        | ("sendemail", _, "smtpserver" | "tocmd" | "cccmd" | "headercmd" | "sendmailcmd") => {
            KeyUse::Command
        }
        // A boolean-looking fsmonitor or a pager section key is still a
        // command: handled above. Any key whose name says it runs
        // something.
        (_, _, n) if n.ends_with("cmd") || n.ends_with("command") || n == "program" => {
            KeyUse::Command
        }
        _ => KeyUse::Other,
    }
}

/// The shell words and operators of a command line (quotes removed; a
/// quoted word keeps its text as one word).
fn shell_tokens(v: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = v.chars();
    let flush = |cur: &mut String, in_word: &mut bool, out: &mut Vec<(String, bool)>| {
        if *in_word {
            out.push((std::mem::take(cur), false));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        d => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            ';' | '|' | '&' | '(' | ')' | '{' | '}' | '<' | '>' | '`' | '\n' => {
                flush(&mut cur, &mut in_word, &mut out);
                out.push((c.to_string(), true));
            }
            c if c.is_whitespace() => flush(&mut cur, &mut in_word, &mut out),
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    flush(&mut cur, &mut in_word, &mut out);
    out
}

/// Words after which the next word is a command again.
const COMMAND_PREFIXES: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "time", "exec", "command", "env",
    "nohup", "sudo", "xargs", "builtin",
];

/// The files a command line (as git runs it: through `sh -c` from the work
/// tree's top, or the git directory's for a bare repository) may read or
/// run: a program named with a `/`, and each argument that names a file
/// relative to `bases` (with a `/` or a `.` in it, or existing there) or
/// an absolute or `~` path. A program without a `/` is looked up on
/// `PATH` (the `PATH` rules cover that); options, variables, patterns and
/// URLs are no files. A quoted argument holding a command (`sh -c '...'`)
/// is read as one.
fn command_paths(
    v: &str,
    bases: &[&Path],
    homes: &[PathBuf],
    out: &mut Vec<PathBuf>,
    depth: usize,
) {
    let v = v.trim_start().strip_prefix('!').unwrap_or(v);
    let mut command_position = true;
    let mut redirect = false;
    for (tok, op) in shell_tokens(v) {
        if op {
            match tok.as_str() {
                "<" | ">" => redirect = true,
                _ => command_position = true,
            }
            continue;
        }
        let w = tok.as_str();
        let is_command = command_position && !redirect;
        let is_redirect = std::mem::take(&mut redirect);
        if is_command && w.contains('=') && !w.contains('/') {
            continue; // an assignment before the command
        }
        command_position = is_command && COMMAND_PREFIXES.contains(&w);
        if w.is_empty() || w == "." || w == ".." || w.starts_with('-') || w.contains("://") {
            continue;
        }
        if depth < 3 && w.contains(|c: char| c.is_whitespace() || ";|&".contains(c)) {
            command_paths(w, bases, homes, out, depth + 1);
            continue;
        }
        if w.contains(|c: char| "%$@*?[]`=".contains(c)) {
            continue;
        }
        if w.starts_with('~') || w.starts_with('/') {
            out.extend(expand_path(w, None, homes));
            continue;
        }
        for b in bases {
            let p = b.join(w);
            let file_like = w.contains('/') || (!is_command && w.contains('.')) || is_redirect;
            if file_like || std::fs::symlink_metadata(&p).is_ok() {
                out.push(p);
            }
        }
    }
}

/// The git directory a linked worktree or submodule shares its
/// configuration and hooks with (`<git_dir>/commondir`), if any.
pub fn common_dir(git_dir: &Path) -> Option<PathBuf> {
    let p = git_dir.join("commondir");
    // Most git directories have none: a remembered answer saves the open.
    if crate::canon::file_type(&p, false).is_none() {
        return None;
    }
    let t = read_text(&p)?;
    let t = t.lines().next()?.trim();
    if t.is_empty() {
        return None;
    }
    let p = Path::new(t);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        git_dir.join(p)
    };
    crate::canon::canonicalize(&p)
}

fn truthy(v: Option<&str>) -> bool {
    match v {
        None => true,
        Some(v) => {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "true" | "yes" | "on" | "1"
            ) || v.trim().parse::<i64>().is_ok_and(|n| n != 0)
        }
    }
}

/// Everything of one repository that git reads as configuration or runs,
/// canonical as far as it exists: the git directory's control files (also
/// of the common directory of a linked worktree), every configuration
/// file git reads for it (local, worktree, included, and the host's), the
/// hooks directory `core.hooksPath` names (at any level; relative to the
/// work tree, or to the git directory of a bare repository), the template
/// directory, and each file a command-valued key names. Paths that do not
/// exist are listed when git would read or run them once made (the
/// caller blocks their creation); the caller keeps those inside writable
/// roots. `work_tree` is `None` for a bare repository.
pub fn control_files(git_dir: &Path, work_tree: Option<&Path>, host: &HostGit) -> Vec<PathBuf> {
    let mut out = Vec::new();
    git_dir_files(git_dir, &mut out, 0);
    let common = common_dir(git_dir);
    if let Some(c) = &common {
        git_dir_files(c, &mut out, 0);
    }
    let config_dir = common.as_deref().unwrap_or(git_dir);
    let mut files = Vec::new();
    let mut entries = Vec::new();
    read_file(
        &config_dir.join("config"),
        0,
        &host.homes,
        &mut files,
        &mut entries,
    );
    let worktree_config = entries.iter().chain(host.entries.iter()).any(|e| {
        e.section == "extensions" && e.name == "worktreeconfig" && truthy(e.value.as_deref())
    });
    for d in [Some(git_dir), common.as_deref()].into_iter().flatten() {
        let wc = d.join("config.worktree");
        if worktree_config || crate::canon::file_type(&wc, false).is_some() {
            read_file(&wc, 0, &host.homes, &mut files, &mut entries);
        }
    }
    out.extend(files);
    out.extend(host.files.iter().cloned());
    // Relative hook and command paths: git runs them from the work tree's
    // top (a bare repository: its git directory).
    let mut bases: Vec<&Path> = Vec::new();
    if let Some(w) = work_tree {
        bases.push(w);
    }
    bases.push(git_dir);
    for e in entries.iter().chain(host.entries.iter()) {
        let Some(v) = e.value.as_deref() else {
            continue;
        };
        match key_use(e) {
            KeyUse::HooksDir => {
                if v.starts_with('~') || v.starts_with('/') || v.starts_with("%(") {
                    out.extend(expand_path(v, None, &host.homes));
                } else if !v.trim().is_empty() {
                    match work_tree {
                        Some(w) => out.push(w.join(v.trim())),
                        None => out.push(git_dir.join(v.trim())),
                    }
                }
            }
            KeyUse::Template => {
                let base = e.file.as_deref().and_then(Path::parent);
                out.extend(expand_path(v, base, &host.homes));
            }
            KeyUse::Command => command_paths(v, &bases, &host.homes, &mut out, 0),
            KeyUse::Other => {}
        }
    }
    let mut out: Vec<PathBuf> = out.iter().map(|p| canonical_prefix(p)).collect();
    out.sort();
    out.dedup();
    out
}

/// What git on the host reads or runs inside `roots`, with where each
/// comes from: the files [`control_files`] resolves for every repository
/// of `repos` (and their `gitdir:` pointer files), for the repository
/// `GIT_DIR` names, and the host's own configuration files (also without
/// any repository: one made later reads them).
pub fn protected_in(
    repos: &[crate::index::Repo],
    host: &HostGit,
    roots: &[PathBuf],
) -> Vec<(PathBuf, &'static str)> {
    // A write root itself (or what holds one) cannot be read-only without
    // the whole root: such a name (`core.hooksPath = .`) is left out.
    let inside = |x: &Path| {
        roots.iter().any(|r| x.starts_with(r)) && !roots.iter().any(|r| r.starts_with(x))
    };
    let mut out: Vec<(PathBuf, &'static str)> = Vec::new();
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut push = |p: PathBuf, from: &'static str| {
        if inside(&p) && seen.insert(p.clone()) {
            out.push((p, from));
        }
    };
    for g in crate::repos::protected(repos, host) {
        push(g, "git: read as configuration or run by git");
    }
    if let Some((g, w)) = &host.env_repo {
        for f in control_files(g, w.as_deref(), host) {
            push(f, "git: read as configuration or run by git (GIT_DIR)");
        }
    }
    for f in &host.files {
        push(
            canonical_prefix(f),
            "git: a configuration file of the host's git",
        );
    }
    out
}

/// The files of one git directory to keep read-only: those of
/// [`GIT_DIR_PROTECTED`] (also when missing: blocked), those of
/// [`GIT_DIR_PROTECTED_IF_PRESENT`] that exist, the control files of its
/// linked worktrees and the git directories of its submodules.
fn git_dir_files(git_dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    for n in GIT_DIR_PROTECTED {
        out.push(git_dir.join(n));
    }
    for n in GIT_DIR_PROTECTED_IF_PRESENT {
        let p = git_dir.join(n);
        // Remembered for the launch: the planner asks again.
        if crate::canon::file_type(&p, false).is_some() {
            out.push(p);
        }
    }
    if let Ok(rd) = std::fs::read_dir(git_dir.join("worktrees")) {
        for e in rd.flatten() {
            for n in ["gitdir", "commondir", "config.worktree", "locked"] {
                let p = e.path().join(n);
                if std::fs::symlink_metadata(&p).is_ok() {
                    out.push(p);
                }
            }
        }
    }
    if depth < 4 {
        submodules(&git_dir.join("modules"), out, depth);
    }
}

/// Submodule git directories below `modules/` (names may contain `/`).
fn submodules(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if p.join("HEAD").exists() || p.join("config").exists() {
            git_dir_files(&p, out, depth + 1);
        } else {
            submodules(&p, out, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn kv(text: &str) -> Vec<(String, Option<String>)> {
        parse(text)
            .into_iter()
            .map(|(s, sub, n, v)| {
                let k = match sub {
                    Some(sub) => format!("{s}.{sub}.{n}"),
                    None => format!("{s}.{n}"),
                };
                (k, v)
            })
            .collect()
    }

    #[test]
    fn parses_like_git() {
        let t = "# c\n[core]\n\thooksPath = .husky ; comment\n[Core] HooksPath=\"x y\" # c\n\
                 [includeIf \"gitdir:~/w/\"]\n path = ../a.cfg\n[alias]\n st = !sh \\\n  ./s.sh\n\
                 [filter.lfs]\n clean = x\n[user]\n bare\n name = \"a\\\"b\"  \n";
        assert_eq!(
            kv(t),
            vec![
                ("core.hookspath".into(), Some(".husky".into())),
                ("core.hookspath".into(), Some("x y".into())),
                ("includeif.gitdir:~/w/.path".into(), Some("../a.cfg".into())),
                ("alias.st".into(), Some("!sh   ./s.sh".into())),
                ("filter.lfs.clean".into(), Some("x".into())),
                ("user.bare".into(), None),
                ("user.name".into(), Some("a\"b".into())),
            ]
        );
    }

    #[test]
    fn environment_parameters() {
        assert_eq!(
            parse_parameters("'core.fsmonitor'='/w/x' 'include.path'='/w/i' 'a.b'"),
            vec![
                ("core.fsmonitor".into(), Some("/w/x".into())),
                ("include.path".into(), Some("/w/i".into())),
                ("a.b".into(), None),
            ]
        );
    }

    #[test]
    fn follows_includes_and_names_what_runs() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let home = root.join("home");
        let ws = root.join("ws");
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(ws.join("tools")).unwrap();
        fs::write(ws.join("tools/fsmon"), "").unwrap();
        fs::write(
            ws.join(".git/config"),
            "[include]\n path = ../shared.cfg\n[includeIf \"onbranch:x\"]\n path = ~/cond.cfg\n\
             [extensions]\n worktreeConfig = true\n",
        )
        .unwrap();
        fs::write(
            ws.join("shared.cfg"),
            "[core]\n fsmonitor = tools/fsmon\n[include]\n path = nested/deep.cfg\n",
        )
        .unwrap();
        fs::write(
            home.join("cond.cfg"),
            "[diff \"x\"]\n textconv = sh ./conv/t.sh\n",
        )
        .unwrap();
        let host = HostGit {
            homes: vec![home.clone()],
            files: vec![home.join(".gitconfig")],
            entries: vec![Entry {
                section: "core".into(),
                subsection: None,
                name: "hookspath".into(),
                value: Some("not-yet/hooks".into()),
                file: Some(home.join(".gitconfig")),
            }],
            env_repo: None,
        };
        let p = control_files(&ws.join(".git"), Some(&ws), &host);
        for want in [
            ws.join(".git/config"),
            ws.join(".git/hooks"),
            ws.join(".git/config.worktree"),
            ws.join("shared.cfg"),
            ws.join("nested/deep.cfg"),
            home.join("cond.cfg"),
            home.join(".gitconfig"),
            ws.join("tools/fsmon"),
            ws.join("conv/t.sh"),
            ws.join("not-yet/hooks"),
        ] {
            assert!(p.contains(&want), "{want:?} not in {p:?}");
        }
        // `sh` is no file of the work tree
        assert!(!p.contains(&ws.join("sh")), "{p:?}");
    }

    #[test]
    fn command_words_that_name_files() {
        let w = Path::new("/w");
        let mut out = Vec::new();
        for v in [
            "!sh alias.sh",
            "git-lfs filter-process",
            "git-lfs clean -- %f",
            "!f() { .git/cred.sh \"$@\"; }; f",
            "cache --timeout=3600",
            "FOO=1 ./run.sh < in.txt",
            "sh -c 'python3 hook.py --x'",
            "vim",
            "https://example.com/x",
        ] {
            command_paths(v, &[w], &[], &mut out, 0);
        }
        let want: Vec<PathBuf> = ["alias.sh", ".git/cred.sh", "./run.sh", "in.txt", "hook.py"]
            .iter()
            .map(|n| w.join(n))
            .collect();
        assert_eq!(out, want);
    }

    #[test]
    fn a_bare_repository_runs_hooks_from_its_git_dir() {
        let t = tempfile::tempdir().unwrap();
        let g = fs::canonicalize(t.path()).unwrap().join("r.git");
        fs::create_dir_all(&g).unwrap();
        fs::write(g.join("config"), "[core]\n bare = true\n hooksPath = h\n").unwrap();
        let p = control_files(&g, None, &HostGit::default());
        assert!(
            p.contains(&g.join("h")) && p.contains(&g.join("hooks")),
            "{p:?}"
        );
    }

    #[test]
    fn a_linked_worktree_shares_the_common_dir() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let common = root.join("main/.git");
        let wt = common.join("worktrees/w");
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join("commondir"), "../..\n").unwrap();
        fs::write(common.join("config"), "[core]\n sshCommand = ./ssh-wrap\n").unwrap();
        let p = control_files(&wt, Some(&root.join("w")), &HostGit::default());
        for want in [
            common.join("config"),
            common.join("hooks"),
            wt.join("commondir"),
            root.join("w/ssh-wrap"),
        ] {
            assert!(p.contains(&want), "{want:?} not in {p:?}");
        }
    }
}
