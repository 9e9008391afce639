//! tar: remote archives and extraction into system directories.

use super::programs::{apply, remote_spec};
use crate::gate::grammars;
use crate::gate::opts;
use crate::gate::paths::{self, is_dangerous_path};
use crate::gate::word::Word;
use crate::gate::{Ctx, Rules};

pub(super) fn tar_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
    // Old-style first argument (`tar xzf a.tgz`): letters are short
    // options, values taken from the next words in order.
    let mut words: Vec<Word> = Vec::new();
    let mut rest = args;
    if let Some(first) = args.first() {
        let t = first.text.as_str();
        if !t.starts_with('-') && !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()) {
            let mut k = 1;
            for c in t.chars() {
                words.push(Word::literal(format!("-{c}")));
                let takes = grammars::TAR
                    .opts
                    .iter()
                    .any(|o| o.shorts.contains(&c) && o.arity == opts::Arity::Value);
                if takes {
                    if let Some(v) = args.get(k) {
                        words.push(v.clone());
                        k += 1;
                    }
                }
            }
            rest = &args[k.min(args.len())..];
        }
    }
    words.extend(rest.iter().cloned());
    let p = apply(ctx, &grammars::TAR, "tar", &words);
    let extract = p.has("extract");
    if !p.has("force-local") {
        if let Some(f) = p.values("file").find(|v| remote_spec(&v.text)) {
            ctx.risky(format!(
                "`tar -f {}` is a remote archive: tar runs a remote shell for it",
                f.text
            ));
        }
    }
    if extract {
        if let Some(d) = p.values("directory").find(|d| {
            is_dangerous_path(d) || paths::write_target_danger(&format!("{}/x", d.text)).is_some()
        }) {
            ctx.danger(format!("`tar` extracts into `{}`", d.text));
        }
    }
    Rules::Grammar
}
