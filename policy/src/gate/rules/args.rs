//! Reading a command's arguments without a grammar: flags and operands.

use crate::gate::word::Word;

pub(super) fn is_short_cluster(t: &str) -> bool {
    t.len() > 1 && t.starts_with('-') && !t.starts_with("--")
}

pub(super) fn short_flag(args: &[Word], c: char) -> bool {
    args.iter()
        .take_while(|w| w.text != "--")
        .any(|w| is_short_cluster(&w.text) && w.text[1..].contains(c))
}

/// `--name`, `--name=...` or a unique getopt abbreviation of it (at least
/// `min` characters), before `--`.
pub(super) fn long_flag(args: &[Word], name: &str, min: usize) -> bool {
    let bare = name.trim_start_matches('-');
    args.iter().take_while(|w| w.text != "--").any(|w| {
        let Some(long) = w.text.strip_prefix("--") else {
            return false;
        };
        let n = long.split('=').next().unwrap_or(long);
        n == bare || (n.len() >= min && bare.starts_with(n))
    })
}

/// Operands: words that are not options (all after `--`).
pub(super) fn operands(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut ended = false;
    for w in args {
        if !ended && w.text == "--" {
            ended = true;
        } else if ended || !w.text.starts_with('-') || w.text == "-" {
            out.push(w);
        }
    }
    out
}

pub(crate) fn operands_of(args: &[Word]) -> Vec<&Word> {
    operands(args)
}
