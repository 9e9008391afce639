//! One resolved command: the danger list, then its program's rules.

use super::classify::basename;
use super::danger::danger;
use super::download::downloaded_code;
use super::programs::program_rules;
use crate::gate::word::Word;
use crate::gate::{progs, wrappers, Ctx, Rules};

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
    progs::targets(ctx, &base, args);
    downloaded_code(ctx, &words[0].text, &base, args);
    let rules = program_rules(ctx, &base, args, open);
    if rules == Rules::None && !wrappers::is_wrapper(&base) && !base.starts_with('-') {
        if ctx.allowlist() {
            if let Some(why) = progs::exec_option(args) {
                ctx.unknown(format!("`{base}`: {why}"));
            }
        }
        progs::embedded(ctx, &base, args);
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
