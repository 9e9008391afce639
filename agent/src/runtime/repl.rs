//! The interactive mode: read a line, run it as a turn or a slash command
//! (see [`crate::commands`]), until `/exit` or the end of input. Ctrl-C
//! during a turn cancels it (the front end triggers the run's [`Cancel`]
//! handle); the prompt comes back.
//!
//! [`Cancel`]: crate::Cancel

use std::path::Path;

use super::{open_model, RunOptions, Runtime};
use crate::commands::{self, Command, Input};
use crate::message::Usage;
use crate::models::{self, Registry};
use crate::session::{self, Session, SessionChoice};
use crate::ui::{Line, LineRequest};
use crate::RunError;

/// Prompts extensions may submit between two lines of the user.
const MAX_SUBMITS: usize = 8;

/// Sessions `/sessions` lists (the most recent ones).
const LISTED_SESSIONS: usize = 20;

/// What the loop does after a command.
enum Next {
    Continue,
    Exit,
}

impl Runtime<'_> {
    /// The read-run loop. `opts.prompt` (from the command line) runs first;
    /// without one the agent's `entry.default_prompt` is put into the first
    /// line, editable, not sent.
    pub(super) fn repl(&mut self, opts: &RunOptions) -> Result<(), RunError> {
        if let Some(g) = self.agent.spec.greeting.clone() {
            self.ui.greeting(&g);
        }
        self.ui.note(&format!(
            "agent {} (model {} from {}); /help lists commands, Ctrl-D quits",
            self.agent.spec.name, self.selection.model.id, self.selection.provider.name
        ));
        let mut initial = match &opts.prompt {
            Some(p) => {
                self.interactive_turn(p)?;
                None
            }
            None => self.agent.spec.default_prompt.clone(),
        };
        let history = self.ah.history_file();
        let prompt = format!("{}> ", self.agent.spec.name);
        loop {
            self.run_submits()?;
            let line = self.ui.read_line(&LineRequest {
                prompt: &prompt,
                initial: initial.take().as_deref(),
                history: Some(&history),
            });
            let line = match line {
                Line::Text(l) => l,
                Line::Interrupted => continue,
                Line::Eof => break,
            };
            if let Some((name, args)) = crate::ext::command_line(&line) {
                if self.ext.commands().iter().any(|(n, _, _)| n == name) {
                    self.ext_command(name, args)?;
                    continue;
                }
            }
            match commands::parse(&line) {
                Input::Empty => {}
                Input::Prompt(text) => self.interactive_turn(&text)?,
                Input::Invalid(msg) => self.ui.warn(&msg),
                Input::Command(c) => match self.command(c, opts) {
                    Ok(Next::Continue) => {}
                    Ok(Next::Exit) => break,
                    Err(e @ RunError::Interrupted(_)) => return Err(e),
                    Err(e) => self.ui.error(&e),
                },
            }
        }
        Ok(())
    }

    /// Run what extensions submitted as user turns (at most
    /// [`MAX_SUBMITS`] between two lines of the user).
    fn run_submits(&mut self) -> Result<(), RunError> {
        let mut n = 0;
        loop {
            self.poll_extensions();
            if self.ext.submits.is_empty() {
                return Ok(());
            }
            let text = self.ext.submits.remove(0);
            n += 1;
            if n > MAX_SUBMITS {
                let dropped = self.ext.submits.len() + 1;
                self.ext.submits.clear();
                self.ui.warn(&format!(
                    "extensions submitted more than {MAX_SUBMITS} prompts in a row; {dropped} dropped"
                ));
                return Ok(());
            }
            self.interactive_turn(&text)?;
        }
    }

    /// `/NAME ARGS` of an extension: `command_invoked`, then what its
    /// `command_response` asks (`submit` runs its text as a user turn;
    /// other text is shown).
    fn ext_command(&mut self, name: &str, args: &str) -> Result<(), RunError> {
        match self.ext.invoke(name, args) {
            None => {}
            Some(Err(why)) => self.ui.warn(&format!("/{name}: {why}")),
            Some(Ok(reply)) => match (reply.action.as_str(), reply.text) {
                ("submit" | "prompt", Some(t)) if !t.trim().is_empty() => {
                    self.interactive_turn(&t)?
                }
                (_, Some(t)) if !t.is_empty() => self.ui.note(&format!("/{name}: {t}")),
                _ => {}
            },
        }
        self.poll_extensions();
        Ok(())
    }

    /// A turn whose failure is shown, not fatal (a signal that ends the run
    /// is).
    fn interactive_turn(&mut self, text: &str) -> Result<(), RunError> {
        match self.run_turn(text) {
            Ok(()) => Ok(()),
            Err(e @ RunError::Interrupted(_)) => Err(e),
            Err(e) => {
                self.ui.error(&e);
                Ok(())
            }
        }
    }

    fn command(&mut self, c: Command, opts: &RunOptions) -> Result<Next, RunError> {
        match c {
            Command::Help => {
                let mut h = commands::help();
                let ext = self.ext.commands();
                if !ext.is_empty() {
                    h.push_str("Commands of the agent's extensions:\n");
                    for (name, what, from) in ext {
                        h.push_str(&format!("  /{name:<21} {what} ({from})\n"));
                    }
                }
                self.ui.show(&h)
            }
            Command::Exit => return Ok(Next::Exit),
            Command::Cd(dir) => self.change_dir(Path::new(&dir))?,
            Command::Model(None) => self.show_models(),
            Command::Model(Some(id)) => self.switch_model(&id, opts)?,
            Command::Usage => self.show_usage(),
            Command::Compact(i) => self.manual_compact(i.as_deref())?,
            Command::Clear => self.clear()?,
            Command::Sessions(id) => self.pick_session(id)?,
            Command::SessionFork => self.fork()?,
            Command::SessionTree => self.tree(),
        }
        Ok(Next::Continue)
    }

    fn show_models(&mut self) {
        let reg = Registry::from_env(&self.config);
        let (_, rows) = reg.report(None);
        let mut s = format!(
            "model: {} from {}{}\n",
            self.selection.model.id,
            self.selection.provider.name,
            self.selection
                .reasoning
                .map(|r| format!(", reasoning {}", r.as_str()))
                .unwrap_or_default()
        );
        let usable: Vec<String> = rows
            .iter()
            .filter(|r| r.available)
            .filter(|r| {
                models::incompatibility(
                    &r.model,
                    &self.agent.spec,
                    self.selection.reasoning.is_some(),
                )
                .is_none()
            })
            .map(|r| format!("{} ({})", r.model.id, r.model.provider))
            .collect();
        if usable.is_empty() {
            s.push_str("no other model that meets the agent's requirements is available");
        } else {
            s.push_str(&format!(
                "available for this agent: {}\n/model ID switches (`zot models` says why others are not)",
                usable.join(", ")
            ));
        }
        self.ui.show(&s);
    }

    /// `/model ID`: the same selection rules as `--model` (the agent's
    /// requirements, the key), then the model is opened before it replaces
    /// the current one; a failure leaves the current one in place.
    fn switch_model(&mut self, id: &str, opts: &RunOptions) -> Result<(), RunError> {
        let reg = Registry::from_env(&self.config);
        let choice = models::Choice {
            model: Some(id.to_string()),
            provider: None,
            reasoning: opts.reasoning,
            env_model: None,
        };
        let sel = models::select(&reg, &choice, &self.agent.spec)?;
        let model = open_model(&sel, opts.sim_script.as_deref(), self.signals)?;
        for n in &sel.notes {
            self.ui.warn(n);
        }
        self.model = model;
        self.selection = sel;
        self.learned_window = None;
        self.anchor = None;
        self.ui.note(&format!(
            "model is now {} from {}",
            self.selection.model.id, self.selection.provider.name
        ));
        Ok(())
    }

    fn show_usage(&mut self) {
        let line = |u: &Usage| {
            let mut s = format!("{} input tokens", u.input_tokens);
            if u.cached_input_tokens > 0 {
                s.push_str(&format!(" ({} cached)", u.cached_input_tokens));
            }
            s.push_str(&format!(", {} output tokens", u.output_tokens));
            if u.reasoning_tokens > 0 {
                s.push_str(&format!(" ({} reasoning)", u.reasoning_tokens));
            }
            s
        };
        let mut s = match &self.session {
            Some(sess) => format!("session {}: {}", sess.id, line(&self.session_usage)),
            None => format!("this run: {}", line(&self.session_usage)),
        };
        if let Some(t) = &self.last_turn {
            s.push_str(&format!("\nlast turn: {}", line(t)));
        }
        let l = self.limits();
        let now = self.context_tokens();
        match (l.window, l.threshold()) {
            (Some(w), Some(t)) => s.push_str(&format!(
                "\ncontext: about {now} of {w} tokens ({}%); compaction {}",
                now * 100 / w.max(1),
                if l.auto {
                    format!("at {t} tokens")
                } else {
                    "is off".into()
                }
            )),
            _ => s.push_str(&format!(
                "\ncontext: about {now} tokens (the model's window is unknown)"
            )),
        }
        let compacted = self.history.first().is_some_and(crate::context::is_summary);
        if compacted {
            s.push_str(" · compacted earlier");
        }
        s.push_str(&format!(
            "\nmodel {}; tool results are cut at {} tokens",
            self.selection.model.id, l.tool_output
        ));
        self.ui.show(&s);
    }

    /// Continue in `loaded` (another session, a fork, a new one). An
    /// agent.toml package moves to that session's file tree (seeded when
    /// new; a fork's starts as a copy of `from`, its parent's).
    fn switch_session(
        &mut self,
        loaded: session::Loaded,
        from: Option<&Path>,
    ) -> Result<(), RunError> {
        if let (true, Some(s)) = (self.seeded, &loaded.session) {
            let tree = session::files_dir(&s.path);
            if let Some(parent) = from.filter(|p| p.is_dir() && !tree.exists()) {
                copy_tree(parent, &tree).map_err(|e| {
                    RunError::io(
                        format!("copying the session files into {}", tree.display()),
                        e,
                    )
                })?;
            }
            let (tree, perms, read_only) =
                super::enter_tree(&self.agent, &tree, &self.ah.data_dir(), &self.config)?;
            self.env.policy = super::policy_for(&perms, &tree, &self.ah, &read_only, &self.config);
            self.env.index = crate::deps::start_index(&self.env.policy, &self.ah.home);
            self.env.perms = perms;
            self.env.read_only = read_only;
            self.env.session_files = Some(tree.clone());
            self.env.workspace = tree;
            self.refresh_prompt()?;
        }
        for w in &loaded.warnings {
            self.ui.warn(w);
        }
        self.history = loaded.history;
        self.anchor = None;
        self.session_usage = loaded.usage;
        self.last_turn = None;
        self.env.side_dir = loaded.session.as_ref().map(Session::side_dir);
        // The old session is synced and closed as it is dropped.
        self.session = loaded.session;
        Ok(())
    }

    fn open_session(&mut self, choice: &SessionChoice) -> Result<session::Loaded, RunError> {
        let dir = self.ah.sessions_dir();
        let (path, notes) = session::plan(choice, &dir)?;
        for n in &notes {
            self.ui.warn(n);
        }
        session::open(
            path.as_deref(),
            &dir,
            &self.agent.spec.name,
            &self.agent.digest,
            &self.env.workspace,
        )
    }

    /// `/clear`: a new, empty session (nothing is deleted).
    fn clear(&mut self) -> Result<(), RunError> {
        let old = self.session.as_ref().map(|s| s.id.clone());
        if old.is_none() {
            self.history.clear();
            self.anchor = None;
            self.last_turn = None;
            self.ui
                .note("conversation cleared (no session is recorded: --no-session)");
            return Ok(());
        }
        let loaded = self.open_session(&SessionChoice::New)?;
        self.switch_session(loaded, None)?;
        let new = self.session.as_ref().map(|s| s.id.as_str()).unwrap_or("");
        self.ui.note(&format!(
            "new session {new}; the previous one, {}, stays (/sessions resumes it)",
            old.unwrap_or_default()
        ));
        Ok(())
    }

    /// `/sessions [ID]`: resume ID, or list the recent sessions and ask
    /// which one.
    fn pick_session(&mut self, id: Option<String>) -> Result<(), RunError> {
        let id = match id {
            Some(id) => id,
            None => {
                let all = session::summaries(&self.ah.sessions_dir(), &self.agent.spec.name);
                if all.is_empty() {
                    self.ui.show("no sessions of this agent yet");
                    return Ok(());
                }
                let current = self.session.as_ref().map(|s| s.id.clone());
                let recent: Vec<&session::Summary> =
                    all.iter().rev().take(LISTED_SESSIONS).collect();
                let now = now();
                let mut s = String::new();
                for (i, x) in recent.iter().enumerate() {
                    let mark = if Some(&x.id) == current.as_ref() {
                        "  (current)"
                    } else {
                        ""
                    };
                    s.push_str(&format!(
                        "{:>3}  {}  {}{}\n",
                        i + 1,
                        describe(x, now),
                        title(x),
                        mark
                    ));
                }
                if all.len() > recent.len() {
                    s.push_str(&format!(
                        "     ({} older not shown: /sessions ID resumes any)\n",
                        all.len() - recent.len()
                    ));
                }
                self.ui.show(s.trim_end());
                let answer = match self.ui.read_line(&LineRequest {
                    prompt: "resume which? (number or id, Enter cancels) ",
                    ..Default::default()
                }) {
                    Line::Text(t) => t.trim().to_string(),
                    Line::Interrupted | Line::Eof => String::new(),
                };
                if answer.is_empty() {
                    return Ok(());
                }
                match answer.parse::<usize>() {
                    Ok(n) if (1..=recent.len()).contains(&n) => recent[n - 1].id.clone(),
                    Ok(n) => {
                        return Err(RunError::Usage(format!(
                            "no session number {n} (1 to {})",
                            recent.len()
                        )))
                    }
                    Err(_) => answer,
                }
            }
        };
        if self.session.as_ref().is_some_and(|s| s.id == id) {
            self.ui.note(&format!("already in session {id}"));
            return Ok(());
        }
        let loaded = self.open_session(&SessionChoice::Resume(id))?;
        self.switch_session(loaded, None)?;
        let (sid, n) = (
            self.session
                .as_ref()
                .map(|s| s.id.clone())
                .unwrap_or_default(),
            self.history.len(),
        );
        self.ui
            .note(&format!("resumed session {sid} ({n} messages)"));
        Ok(())
    }

    /// `/session fork`: continue in a copy of this session.
    fn fork(&mut self) -> Result<(), RunError> {
        let dir = self.ah.sessions_dir();
        let Some(cur) = self.session.as_mut() else {
            return Err(RunError::session(
                "no session to fork (this run records none: --no-session)",
            ));
        };
        let parent = cur.id.clone();
        let parent_files = session::files_dir(&cur.path);
        let loaded = cur.fork(
            &dir,
            &self.agent.spec.name,
            &self.agent.digest,
            &self.env.workspace,
        )?;
        self.switch_session(loaded, Some(&parent_files))?;
        let id = self
            .session
            .as_ref()
            .map(|s| s.id.clone())
            .unwrap_or_default();
        self.ui.note(&format!(
            "forked session {parent} into {id}; continuing in {id} (/sessions {parent} goes back)"
        ));
        Ok(())
    }

    /// `/session tree`: the agent's sessions with their forks below them.
    fn tree(&mut self) {
        let all = session::summaries(&self.ah.sessions_dir(), &self.agent.spec.name);
        if all.is_empty() {
            self.ui.show("no sessions of this agent yet");
            return;
        }
        let current = self.session.as_ref().map(|s| s.id.clone());
        let text = render_tree(&all, current.as_deref(), now());
        self.ui.show(text.trim_end());
    }
}

/// Copy the directories and regular files of `from` into `to` (a new
/// directory, private); anything else (symlinks, devices) is left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::home::private_dir(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let t = e.file_type()?;
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if t.is_file() {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `3 min ago`, `2 h ago`, `5 d ago`.
fn ago(then: u64, now: u64) -> String {
    let d = now.saturating_sub(then);
    match d {
        0..=59 => "just now".into(),
        60..=3599 => format!("{} min ago", d / 60),
        3600..=86_399 => format!("{} h ago", d / 3600),
        _ => format!("{} d ago", d / 86_400),
    }
}

fn describe(x: &session::Summary, now: u64) -> String {
    format!(
        "{}  {:>10}  {:>2} prompt{}",
        x.id,
        ago(x.modified, now),
        x.prompts,
        if x.prompts == 1 { " " } else { "s" }
    )
}

fn title(x: &session::Summary) -> String {
    if x.title.is_empty() {
        return "(empty)".into();
    }
    let mut t: String = x.title.chars().take(60).collect();
    if t.len() < x.title.len() {
        t.push('…');
    }
    format!("\"{t}\"")
}

/// Sessions as a tree: roots (no parent, or a parent that is gone) in
/// creation order, each fork below its parent.
fn render_tree(all: &[session::Summary], current: Option<&str>, now: u64) -> String {
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    let children = |id: Option<&str>| -> Vec<&session::Summary> {
        let mut v: Vec<&session::Summary> = all
            .iter()
            .filter(|s| match (id, s.parent.as_deref()) {
                (None, None) => true,
                (None, Some(p)) => !ids.contains(&p),
                (Some(id), Some(p)) => p == id,
                (Some(_), None) => false,
            })
            .collect();
        v.sort_by_key(|s| (s.created, s.id.clone()));
        v
    };
    fn walk<'a>(
        node: &'a session::Summary,
        prefix: &str,
        last: bool,
        root: bool,
        out: &mut String,
        ctx: &dyn Fn(Option<&str>) -> Vec<&'a session::Summary>,
        current: Option<&str>,
        now: u64,
        depth: usize,
    ) {
        let branch = if root {
            ""
        } else if last {
            "└─ "
        } else {
            "├─ "
        };
        let mark = if Some(node.id.as_str()) == current {
            "  (current)"
        } else {
            ""
        };
        out.push_str(&format!(
            "{prefix}{branch}{}  {}{mark}\n",
            describe(node, now),
            title(node)
        ));
        if depth > 64 {
            return;
        }
        let kids = ctx(Some(&node.id));
        let next = if root {
            prefix.to_string()
        } else if last {
            format!("{prefix}   ")
        } else {
            format!("{prefix}│  ")
        };
        for (i, k) in kids.iter().enumerate() {
            walk(
                k,
                &next,
                i + 1 == kids.len(),
                false,
                out,
                ctx,
                current,
                now,
                depth + 1,
            );
        }
    }
    let mut out = String::new();
    for r in children(None) {
        walk(r, "", true, true, &mut out, &children, current, now, 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn s(id: &str, parent: Option<&str>, created: u64) -> session::Summary {
        session::Summary {
            id: id.into(),
            path: PathBuf::new(),
            created,
            modified: created,
            parent: parent.map(Into::into),
            workspace: PathBuf::new(),
            prompts: 1,
            title: format!("about {id}"),
        }
    }

    #[test]
    fn tree_shape() {
        let all = [
            s("a", None, 1),
            s("b", Some("a"), 2),
            s("c", Some("b"), 3),
            s("d", Some("a"), 4),
            s("e", Some("gone"), 5),
        ];
        let t = render_tree(&all, Some("c"), 100);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert!(lines[0].starts_with("a "), "{t}");
        assert!(lines[1].starts_with("├─ b "), "{t}");
        assert!(
            lines[2].starts_with("│  └─ c ") && lines[2].ends_with("(current)"),
            "{t}"
        );
        assert!(lines[3].starts_with("└─ d "), "{t}");
        assert!(lines[4].starts_with("e "), "{t}");
        assert_eq!(ago(0, 30), "just now");
        assert_eq!(ago(0, 7200), "2 h ago");
    }
}
