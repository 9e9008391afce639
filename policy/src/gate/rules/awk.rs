//! awk: programs that run commands or write files.

use super::programs::apply;
use crate::gate::grammars;
use crate::gate::opts::{self, Effect};
use crate::gate::paths;
use crate::gate::word::Word;
use crate::gate::{Ctx, Rules};

pub(super) fn awk_rules(ctx: &mut Ctx, base: &str, args: &[Word]) -> Rules {
    let p = apply(ctx, &grammars::AWK, base, args);
    for v in p.values("W") {
        for item in v.text.split(',') {
            let name = item.split('=').next().unwrap_or(item);
            match opts::match_long(&grammars::MAWK_W, name) {
                opts::LongMatch::Found { opt, .. } if opt.effect == Effect::Exec => {
                    ctx.risky(format!("`{base} -W {item}` runs a program file"))
                }
                opts::LongMatch::Found { .. } => {}
                _ => ctx.restrict(format!(
                    "`{base} -W {item}` is not an option the gate knows"
                )),
            }
        }
    }
    let sandbox = p.has("sandbox");
    let mut programs: Vec<&Word> = p.values("source").collect();
    if programs.is_empty() && !p.has("file") && !p.has("exec") {
        programs.extend(p.operands.first());
    }
    if sandbox {
        return Rules::Grammar;
    }
    for prog in programs {
        let text = prog.text.as_str();
        if prog.dynamic {
            ctx.risky(format!(
                "the `{base}` program `{text}` depends on expansion"
            ));
            continue;
        }
        if text.contains("system")
            || text.contains('|')
            || text.contains("@load")
            || text.contains("@include")
            || awk_indirect_call(text)
        {
            ctx.risky(format!(
                "`{base}` program runs commands (`system`, pipes, indirect calls or extensions)"
            ));
        }
        if let Some(target) = awk_output_redirect(text) {
            ctx.restrict(format!("`{base}` program writes files (`print >`)"));
            if let Some(why) = target.as_deref().and_then(paths::write_target_danger) {
                ctx.danger(format!("`{base}` program {why}"));
            }
        }
    }
    Rules::Grammar
}

/// gawk's indirect function calls (`@f()`), which can call `system`.
fn awk_indirect_call(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'@'
            && b.get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_')
    })
}

/// `print ... > file` / `printf ... >> file` outside parentheses: Some,
/// with the target when it is a string literal.
fn awk_output_redirect(text: &str) -> Option<Option<String>> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("print") {
        let mut j = i + pos + 5;
        let mut depth = 0i32;
        while j < bytes.len() {
            match bytes[j] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b'>' if depth <= 0 => {
                    let rest = text[j..].trim_start_matches('>').trim_start();
                    let target = rest
                        .strip_prefix('"')
                        .and_then(|r| r.split_once('"'))
                        .map(|(t, _)| t.to_string());
                    return Some(target);
                }
                b';' | b'}' | b'\n' if depth <= 0 => break,
                _ => {}
            }
            j += 1;
        }
        i = j.min(bytes.len());
        if i >= bytes.len() {
            break;
        }
    }
    None
}
