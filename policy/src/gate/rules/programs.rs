//! Program-specific rules, and applying an option grammar to arguments.

use super::args::is_short_cluster;
use super::assign::check_assignment;
use super::awk::awk_rules;
use super::classify::runs_code_by_design;
use super::git::git_rules;
use super::sed::sed_rules;
use super::tar::tar_rules;
use crate::gate::grammars;
use crate::gate::opts::{self, Effect, Grammar, Parsed};
use crate::gate::paths;
use crate::gate::word::Word;
use crate::gate::{progs, Ctx, Rules};

/// Program-specific rules (both modes: options that run code ask in ask
/// mode; allowlist mode also denies what is unknown).
pub(super) fn program_rules(ctx: &mut Ctx, base: &str, args: &[Word], _open: bool) -> Rules {
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
        _ if progs::program_rules(ctx, base, args).is_some() => Rules::Grammar,
        _ if runs_code_by_design(base) => Rules::RunsCode,
        _ => Rules::None,
    }
}

/// `host:path`, `user@host:path`, `host::module`, `rsync://`: the remote
/// side of an rsync or scp transfer.
pub(super) fn remote_spec(t: &str) -> bool {
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
pub(super) fn apply<'g>(ctx: &mut Ctx, g: &'g Grammar, what: &str, args: &[Word]) -> Parsed<'g> {
    let p = opts::parse(g, args);
    record(ctx, &p, what);
    p
}

pub(super) fn record(ctx: &mut Ctx, p: &Parsed, what: &str) {
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
