//! Option grammars: the one long-option matcher and the one table format
//! the gate uses for every program whose options it knows (the programs
//! with rules and the wrappers).
//!
//! A grammar is written as a compact spec string, parsed once:
//!
//! ```text
//! "n|max-count= s|no-patch oneline output=!w upload-pack=!x decorate?"
//! ```
//!
//! Each entry names an option by its short letter and/or long names
//! (separated by `|`; one character is a short option, more is a long
//! one), then its arity: nothing (a flag), `=` (takes a value: attached,
//! `--opt=v`, or the next word) or `?` (an optional value, attached or
//! `--opt=v` only, as getopt's `::`). A trailing `!x` marks an option that
//! runs a program or code, `!w` one that writes a file that is not the
//! command's obvious target.
//!
//! How a long option is matched depends on the program's parser, given by
//! [`Abbrev`]: GNU getopt_long and argp accept any unique prefix (several
//! prefixes of one option's aliases are one option; an exact name always
//! wins); git's parse-options does too and adds `--no-NAME` negations;
//! clap (rg, fd) and hand-written parsers match names exactly.

use super::word::Word;

/// How long option names are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abbrev {
    /// Exact names only.
    Exact,
    /// GNU getopt_long / argp: exact, else a unique prefix.
    Getopt,
    /// git parse-options: as getopt, plus `--no-NAME` (and its prefixes).
    Git,
}

/// How many values an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    Flag,
    Value,
    /// Only attached (`-dX`) or after `=` (`--opt=X`).
    Optional,
}

/// What an option does beyond the program's ordinary work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    Safe,
    /// Runs a program or code.
    Exec,
    /// Writes a file other than the command's obvious target.
    Write,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OptDef {
    /// Canonical name: the first long name, else the short letter.
    pub name: &'static str,
    pub shorts: Vec<char>,
    pub longs: Vec<&'static str>,
    pub arity: Arity,
    pub effect: Effect,
}

/// The options of one program (or one git subcommand).
#[derive(Debug)]
pub(crate) struct Grammar {
    pub prog: &'static str,
    pub opts: Vec<OptDef>,
    pub abbrev: Abbrev,
    /// Options may follow operands (GNU getopt permutes, argp in order,
    /// git parse-options); otherwise the first operand ends the options.
    pub permute: bool,
    /// `-NUM` is an option (`git log -5`, `head -20`).
    pub numeric: bool,
}

impl Grammar {
    /// Builds a grammar from a spec string (see the module docs). Panics on
    /// a malformed spec: specs are constants, checked by the unit tests.
    pub fn new(prog: &'static str, abbrev: Abbrev, permute: bool, spec: &'static str) -> Grammar {
        let mut opts = Vec::new();
        for entry in spec.split_whitespace() {
            let (entry, effect) = match entry.rsplit_once('!') {
                Some((e, "x")) => (e, Effect::Exec),
                Some((e, "w")) => (e, Effect::Write),
                Some(_) => panic!("bad effect in `{entry}` ({prog})"),
                None => (entry, Effect::Safe),
            };
            let (names, arity) = if let Some(n) = entry.strip_suffix('=') {
                (n, Arity::Value)
            } else if let Some(n) = entry.strip_suffix('?') {
                (n, Arity::Optional)
            } else {
                (entry, Arity::Flag)
            };
            let mut shorts = Vec::new();
            let mut longs = Vec::new();
            for n in names.split('|') {
                assert!(!n.is_empty(), "empty option name in `{entry}` ({prog})");
                if n.chars().count() == 1 {
                    shorts.push(n.chars().next().unwrap_or('?'));
                } else {
                    longs.push(n);
                }
            }
            let name = longs.first().copied().unwrap_or_else(|| {
                let i = names.find(|c: char| c != '|').unwrap_or(0);
                &names[i..i + 1]
            });
            opts.push(OptDef {
                name,
                shorts,
                longs,
                arity,
                effect,
            });
        }
        Grammar {
            prog,
            opts,
            abbrev,
            permute,
            numeric: false,
        }
    }

    pub fn numeric(mut self) -> Grammar {
        self.numeric = true;
        self
    }

    fn short(&self, c: char) -> Option<&OptDef> {
        self.opts.iter().find(|o| o.shorts.contains(&c))
    }
}

/// The result of matching one long option name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LongMatch<'g> {
    Found {
        opt: &'g OptDef,
        negated: bool,
    },
    Unknown,
    /// Several options share the prefix: their canonical names.
    Ambiguous(Vec<&'g OptDef>),
}

/// The one long-option matcher: `name` is what follows `--` (without any
/// `=value`).
pub(crate) fn match_long<'g>(g: &'g Grammar, name: &str) -> LongMatch<'g> {
    // An exact name always wins.
    for o in &g.opts {
        if o.longs.contains(&name) {
            return LongMatch::Found {
                opt: o,
                negated: false,
            };
        }
    }
    let negated_name = match g.abbrev {
        Abbrev::Git => name.strip_prefix("no-"),
        _ => None,
    };
    if let Some(n) = negated_name {
        for o in &g.opts {
            if o.longs.contains(&n) {
                return LongMatch::Found {
                    opt: o,
                    negated: true,
                };
            }
        }
    }
    if g.abbrev == Abbrev::Exact || name.is_empty() {
        return LongMatch::Unknown;
    }
    let mut found: Vec<(&OptDef, bool)> = Vec::new();
    for o in &g.opts {
        if o.longs.iter().any(|l| l.starts_with(name)) {
            found.push((o, false));
        } else if g.abbrev == Abbrev::Git {
            // `--no-ver` abbreviates `--no-verify`: git tries the negated
            // form of every option (and the positive one of `no-` options).
            let neg = o
                .longs
                .iter()
                .any(|l| format!("no-{l}").starts_with(name) && name.len() > 3);
            let pos = o
                .longs
                .iter()
                .any(|l| l.strip_prefix("no-").is_some_and(|p| p.starts_with(name)));
            if neg || pos {
                found.push((o, neg));
            }
        }
    }
    match found.as_slice() {
        [] => LongMatch::Unknown,
        [(o, neg)] => LongMatch::Found {
            opt: o,
            negated: *neg,
        },
        many => LongMatch::Ambiguous(many.iter().map(|(o, _)| *o).collect()),
    }
}

/// One option found on a command line.
#[derive(Debug)]
pub(crate) struct Hit<'g> {
    pub opt: &'g OptDef,
    /// As written (`--upload-pa=x`, `-u`).
    pub written: String,
    pub value: Option<Word>,
    pub negated: bool,
}

/// A word the grammar does not accept.
#[derive(Debug)]
pub(crate) enum Problem<'g> {
    Unknown(String),
    Ambiguous(String, Vec<&'g OptDef>),
    MissingValue(String),
    /// A flag given a value (`--quiet=x`): the program rejects it.
    UnexpectedValue(String),
}

impl Problem<'_> {
    pub fn describe(&self, prog: &str) -> String {
        match self {
            Problem::Unknown(w) => format!("`{prog}` option `{w}` is not one the gate knows"),
            Problem::Ambiguous(w, c) => {
                let names: Vec<String> = c.iter().map(|o| format!("--{}", o.name)).collect();
                format!(
                    "`{prog}` option `{w}` is an ambiguous abbreviation ({})",
                    names.join(", ")
                )
            }
            Problem::MissingValue(w) => format!("`{prog}` option `{w}` without its value"),
            Problem::UnexpectedValue(w) => {
                format!("`{prog}` option `{w}` takes no value")
            }
        }
    }

    /// Could the program's own parser read this as an option that runs a
    /// program or writes a file?
    pub fn maybe_effect(&self) -> Option<&OptDef> {
        match self {
            Problem::Ambiguous(_, c) => c.iter().copied().find(|o| o.effect != Effect::Safe),
            _ => None,
        }
    }
}

/// A command line read with a grammar.
#[derive(Debug, Default)]
pub(crate) struct Parsed<'g> {
    pub hits: Vec<Hit<'g>>,
    pub operands: Vec<Word>,
    pub problems: Vec<Problem<'g>>,
    /// Index in the input of the first operand (before permutation).
    pub first_operand: Option<usize>,
}

impl<'g> Parsed<'g> {
    pub fn has(&self, name: &str) -> bool {
        self.hits.iter().any(|h| h.opt.name == name && !h.negated)
    }

    pub fn values(&self, name: &str) -> impl Iterator<Item = &Word> + '_ {
        let name = name.to_string();
        self.hits
            .iter()
            .filter(move |h| h.opt.name == name && !h.negated)
            .filter_map(|h| h.value.as_ref())
    }
}

/// Reads `args` (the words after the program name) with `g`. With
/// `stop_at_operand`, the first operand ends the options whatever the
/// grammar says (a wrapper's command).
pub(crate) fn parse<'g>(g: &'g Grammar, args: &[Word]) -> Parsed<'g> {
    parse_with(g, args, !g.permute)
}

pub(crate) fn parse_with<'g>(g: &'g Grammar, args: &[Word], stop_at_operand: bool) -> Parsed<'g> {
    read(g, args, stop_at_operand, true)
}

/// The options before the first operand, and where that operand is;
/// `operands` stays empty. For a wrapper (its operands are the command it
/// runs: reading them would make a chain of wrappers read the rest of
/// the line once per wrapper) and git's global options.
pub(crate) fn leading_options<'g>(g: &'g Grammar, args: &[Word]) -> Parsed<'g> {
    read(g, args, true, false)
}

fn read<'g>(g: &'g Grammar, args: &[Word], stop_at_operand: bool, operands: bool) -> Parsed<'g> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if ended || t == "-" || !t.starts_with('-') || w.dynamic {
            if out.first_operand.is_none() {
                out.first_operand = Some(i);
            }
            if !operands {
                break;
            }
            out.operands.push(w.clone());
            i += 1;
            if stop_at_operand {
                ended = true;
            }
            continue;
        }
        if t == "--" {
            ended = true;
            i += 1;
            if out.first_operand.is_none() {
                out.first_operand = Some(i);
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match match_long(g, name) {
                LongMatch::Found { opt, negated } => {
                    let mut hit = Hit {
                        opt,
                        written: t.to_string(),
                        value: None,
                        negated,
                    };
                    match (opt.arity, attached) {
                        _ if negated => {
                            if attached.is_some() {
                                out.problems.push(Problem::UnexpectedValue(t.to_string()));
                            }
                        }
                        (Arity::Flag, Some(_)) => {
                            out.problems.push(Problem::UnexpectedValue(t.to_string()))
                        }
                        (Arity::Flag, None) | (Arity::Optional, None) => {}
                        (_, Some(v)) => hit.value = Some(Word::literal(v)),
                        (Arity::Value, None) => match args.get(i + 1) {
                            Some(v) => {
                                hit.value = Some(v.clone());
                                i += 1;
                            }
                            None => out.problems.push(Problem::MissingValue(t.to_string())),
                        },
                    }
                    out.hits.push(hit);
                }
                LongMatch::Unknown => out.problems.push(Problem::Unknown(t.to_string())),
                LongMatch::Ambiguous(c) => out.problems.push(Problem::Ambiguous(t.to_string(), c)),
            }
            i += 1;
            continue;
        }
        // A short cluster.
        let body = &t[1..];
        if g.numeric && body.bytes().all(|b| b.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut consumed_next = false;
        for (k, c) in body.char_indices() {
            let Some(opt) = g.short(c) else {
                out.problems.push(Problem::Unknown(format!("-{c}")));
                break;
            };
            let rest = &body[k + c.len_utf8()..];
            let mut hit = Hit {
                opt,
                written: format!("-{c}"),
                value: None,
                negated: false,
            };
            match opt.arity {
                Arity::Flag => {
                    out.hits.push(hit);
                    continue;
                }
                Arity::Optional => {
                    if !rest.is_empty() {
                        hit.value = Some(Word::literal(rest));
                    }
                }
                Arity::Value => {
                    if !rest.is_empty() {
                        hit.value = Some(Word::literal(rest));
                    } else {
                        match args.get(i + 1) {
                            Some(v) => {
                                hit.value = Some(v.clone());
                                consumed_next = true;
                            }
                            None => out.problems.push(Problem::MissingValue(format!("-{c}"))),
                        }
                    }
                }
            }
            out.hits.push(hit);
            break;
        }
        i += if consumed_next { 2 } else { 1 };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn getopt_prefixes_resolve_like_getopt_long() {
        let g = Grammar::new(
            "tar",
            Abbrev::Getopt,
            true,
            "checkpoint? checkpoint-action=!x to-command=!x t|list v|verbose",
        );
        // Exact wins over a longer option it is a prefix of.
        assert!(matches!(
            match_long(&g, "checkpoint"),
            LongMatch::Found { opt, .. } if opt.name == "checkpoint"
        ));
        assert!(matches!(
            match_long(&g, "checkpoint-act"),
            LongMatch::Found { opt, .. } if opt.name == "checkpoint-action"
        ));
        assert!(matches!(match_long(&g, "check"), LongMatch::Ambiguous(_)));
        assert!(matches!(
            match_long(&g, "to"),
            LongMatch::Found { opt, .. } if opt.name == "to-command"
        ));
        assert_eq!(match_long(&g, "bogus"), LongMatch::Unknown);
    }

    #[test]
    fn git_matches_negations_and_their_prefixes() {
        let g = Grammar::new("git commit", Abbrev::Git, true, "verify m|message= amend");
        assert!(matches!(
            match_long(&g, "no-verify"),
            LongMatch::Found { opt, negated: true } if opt.name == "verify"
        ));
        assert!(matches!(
            match_long(&g, "no-ver"),
            LongMatch::Found { opt, negated: true } if opt.name == "verify"
        ));
        assert!(matches!(
            match_long(&g, "mess"),
            LongMatch::Found { opt, .. } if opt.name == "message"
        ));
    }

    #[test]
    fn exact_grammars_take_no_prefix() {
        let g = Grammar::new("rg", Abbrev::Exact, true, "pre=!x n|line-number");
        assert_eq!(match_long(&g, "pr"), LongMatch::Unknown);
    }

    #[test]
    fn clusters_values_and_permutation() {
        let g = Grammar::new(
            "sed",
            Abbrev::Getopt,
            true,
            "n|quiet e|expression= i|in-place?!w",
        );
        let p = parse(&g, &words("s/a/b/ file -ne p -i.bak"));
        assert_eq!(p.operands.len(), 2);
        assert!(p.has("quiet") && p.has("in-place"));
        assert_eq!(p.values("expression").next().unwrap().text, "p");
        assert_eq!(p.values("in-place").next().unwrap().text, ".bak");
        let p = parse(&g, &words("--exp=p -- -i"));
        assert_eq!(p.values("expression").next().unwrap().text, "p");
        assert_eq!(p.operands[0].text, "-i");
        let g = Grammar::new("xargs", Abbrev::Getopt, false, "n|max-args= 0|null");
        let p = parse(&g, &words("-0n1 grep -n x"));
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.operands.len(), 3);
        assert_eq!(p.first_operand, Some(1));
    }
}
