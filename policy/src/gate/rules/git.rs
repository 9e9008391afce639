//! git: what discards work or rewrites history (danger list), and the
//! options, settings and subcommands that run programs.

use super::programs::{apply, record};
use crate::gate::grammars;
use crate::gate::opts::{self, Parsed};
use crate::gate::word::Word;
use crate::gate::{Ctx, Rules};

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

pub(super) fn git_danger(ctx: &mut Ctx, args: &[Word]) {
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

pub(super) fn git_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
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
