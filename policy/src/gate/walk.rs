//! Walks the tree-sitter-bash syntax tree and finds every simple command.

use super::rules;
use super::syntax::{self, Field, Node, K};
use super::word::{decode, Word};
use super::Ctx;

/// Deeper syntax trees are not walked.
const MAX_DEPTH: usize = 256;
/// How many times a string may be parsed again (`sh -c 'sh -c ...'`).
pub(crate) const MAX_REPARSE: usize = 8;

/// The text handed to the parser: every non-ASCII character replaced by as
/// many `^` bytes as it has, so byte offsets stay the same and node text is
/// read from the original. Bash treats non-ASCII characters as ordinary word
/// characters (never blanks, operators or identifier letters), and so does
/// the grammar with `^`; it also keeps tree-sitter-bash 0.25's external scanner away from
/// `isdigit()` on code points above 255, which reads out of bounds and
/// crashes (found by the property test: `a {` followed by U+E0000).
fn ascii_shadow(src: &str) -> std::borrow::Cow<'_, str> {
    if src.is_ascii() {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = String::with_capacity(src.len());
    for c in src.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('^', c.len_utf8()));
        }
    }
    std::borrow::Cow::Owned(out)
}

fn parse(ctx: &Ctx, src: &str) -> Result<syntax::Syntax, syntax::Unparsed> {
    syntax::parse(&ascii_shadow(src), &ctx.budget)
}

/// Functions that call each other in a cycle (`a(){ b|b& }; b(){ a|a& }`)
/// are a fork bomb as much as one that calls itself.
pub(crate) fn check_recursion(ctx: &mut Ctx) {
    use std::collections::HashMap;
    if ctx.functions.len() < 2 {
        return;
    }
    let mut graph: HashMap<&str, Vec<&str>> = HashMap::new();
    for (name, calls) in &ctx.functions {
        graph
            .entry(name.as_str())
            .or_default()
            .extend(calls.iter().map(String::as_str));
    }
    // Iterative depth-first search for a cycle (0 new, 1 on stack, 2 done).
    let mut state: HashMap<&str, u8> = HashMap::new();
    let mut cycle: Option<String> = None;
    let names: Vec<&str> = graph.keys().copied().collect();
    'outer: for start in names {
        if state.get(start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        state.insert(start, 1);
        while let Some((node, idx)) = stack.pop() {
            let next = graph.get(node).and_then(|v| v.get(idx)).copied();
            match next {
                Some(n) => {
                    stack.push((node, idx + 1));
                    if !graph.contains_key(n) {
                        continue;
                    }
                    match state.get(n).copied().unwrap_or(0) {
                        0 => {
                            state.insert(n, 1);
                            stack.push((n, 0));
                        }
                        1 if n != node => {
                            cycle = Some(format!("{node}` and `{n}"));
                            break 'outer;
                        }
                        _ => {}
                    }
                }
                None => {
                    state.insert(node, 2);
                }
            }
        }
    }
    if let Some(c) = cycle {
        ctx.danger(format!(
            "functions `{c}` call each other (fork bomb pattern)"
        ));
    }
}

/// Checks on the raw text, before parsing.
pub(crate) fn check_text(ctx: &mut Ctx, src: &str) {
    if src.contains('\0') {
        ctx.unknown("the command contains a NUL byte");
    }
    if ctx.allowlist() {
        if src.contains('\n') || src.contains('\r') {
            ctx.restrict("newlines (only one command line is allowed)");
        }
        if src
            .chars()
            .any(|c| c.is_control() && c != '\t' && c != '\n' && c != '\r')
        {
            ctx.restrict("control characters");
        }
        // The spec's allowlist rejects these characters anywhere, even
        // quoted; so do we, on top of the syntax checks.
        if src.contains('`') {
            ctx.restrict("backticks");
        }
        if src.contains("$(") {
            ctx.restrict("command substitution `$(...)`");
        }
    }
}

/// Checks on the raw text after the walk: the spec's allowlist rejects `<`
/// and `>` anywhere, even quoted; a redirection the walker reported is not
/// reported again.
pub(crate) fn check_text_after(ctx: &mut Ctx, src: &str) {
    if ctx.allowlist() && !ctx.redirect_seen && (src.contains('<') || src.contains('>')) {
        ctx.restrict("`<` and `>` (redirection)");
    }
}

/// The value of a test on literals: `[ 1 ]`, `[ 1 -eq 0 ]`, `[[ a == a ]]`,
/// `test 2 -gt 1`, `(( 3 ))`.
fn simple_test(c: &str) -> Option<bool> {
    let inner = c
        .strip_prefix("[[ ")
        .and_then(|r| r.strip_suffix(" ]]"))
        .or_else(|| c.strip_prefix("[ ").and_then(|r| r.strip_suffix(" ]")))
        .or_else(|| c.strip_prefix("test "))
        .or_else(|| c.strip_prefix("((").and_then(|r| r.strip_suffix("))")));
    let inner = inner?.trim();
    if inner.contains(['$', '`', '(', '\\']) {
        return None;
    }
    let t: Vec<&str> = inner.split_whitespace().collect();
    let num = |s: &str| s.trim_matches(['"', '\'']).parse::<i64>().ok();
    let lit = |s: &'static str| s;
    let _ = lit;
    match t.as_slice() {
        [one] => Some(if c.starts_with("((") {
            num(one)? != 0
        } else {
            !one.trim_matches(['"', '\'']).is_empty()
        }),
        [a, op, b] => {
            let (x, y) = (a.trim_matches(['"', '\'']), b.trim_matches(['"', '\'']));
            Some(match *op {
                "=" | "==" => x == y,
                "!=" => x != y,
                "-eq" => num(x)? == num(y)?,
                "-ne" => num(x)? != num(y)?,
                "-lt" | "<" => num(x)? < num(y)?,
                "-gt" | ">" => num(x)? > num(y)?,
                "-le" | "<=" => num(x)? <= num(y)?,
                "-ge" | ">=" => num(x)? >= num(y)?,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Does `node` hold a command run in the background (`&`)?
fn has_background(node: Node, depth: usize) -> bool {
    if depth > 64 {
        return true;
    }
    node.children().any(|c| {
        (!c.is_named() && c.kind() == K::Amp)
            || (c.child_count() > 0 && has_background(c, depth + 1))
    })
}

/// Is the condition of a `while` (or, with `until`, of an `until`) loop
/// always true (false): `:`, `true`, `[ 1 ]`, `((1))`, `sleep 1`, ...?
fn endless_condition(cond: &str, until: bool) -> bool {
    let c: String = cond
        .trim()
        .trim_end_matches([';', '\n', ' ', '\t'])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let (negated, c) = match c.strip_prefix("! ") {
        Some(rest) => (true, rest.to_string()),
        None => (false, c),
    };
    if let Some(v) = simple_test(&c) {
        let v = v != negated;
        return if until { !v } else { v };
    }
    let truthy = matches!(
        c.as_str(),
        ":" | "true"
            | "/bin/true"
            | "/usr/bin/true"
            | "[ 1 ]"
            | "[ 1 = 1 ]"
            | "[ 1 -eq 1 ]"
            | "((1))"
            | "(( 1 ))"
            | "test 1"
            | "[[ 1 ]]"
            | "[ x ]"
            | "[ true ]"
            | "builtin true"
            | "command true"
            | "let 1"
            | "[[ 1 -eq 1 ]]"
            | "[ : ]"
    ) || c.starts_with("sleep ");
    let falsy = matches!(
        c.as_str(),
        "false"
            | "/bin/false"
            | "/usr/bin/false"
            | "((0))"
            | "(( 0 ))"
            | "[ ]"
            | "[ \"\" ]"
            | "test"
            | "[[ 0 -eq 1 ]]"
            | "[ 0 -eq 1 ]"
            | "[ 1 = 0 ]"
    );
    if until {
        (falsy && !negated) || (truthy && negated)
    } else {
        (truthy && !negated) || (falsy && negated)
    }
}

/// Parse `src` and walk it. `via` are the wrappers the string was reached
/// through (for `sh -c STRING`), `reparse` how deep such strings nest.
pub(crate) fn parse_and_walk(ctx: &mut Ctx, src: &str, via: &[String], reparse: usize) {
    let tree = match parse(ctx, src) {
        Ok(tree) => tree,
        Err(syntax::Unparsed::Exceeded(e)) => {
            let why = ctx.budget.reason(e);
            ctx.unknown(why);
            return;
        }
        Err(syntax::Unparsed::GaveUp) => {
            ctx.unknown("the parser gave up on the command");
            return;
        }
    };
    if tree.has_error() {
        ctx.unknown("the command does not parse as shell (syntax error or unbalanced quotes)");
    }
    check_coverage(ctx, &tree, src);
    let root = tree.root();
    let mut w = Walker {
        ctx,
        src,
        via,
        reparse,
        restricted: Vec::new(),
    };
    w.walk(root, 0);
}

/// Every byte between tokens must be a blank or a `\`-newline. The grammar
/// also skips `\` + space as if it were a blank, where bash makes it part of
/// a word (`\ sh` runs a program named " sh"): such text is not understood.
fn check_coverage(ctx: &mut Ctx, tree: &syntax::Syntax, src: &str) {
    let bytes = src.as_bytes();
    let mut prev = 0usize;
    // A gap may hold blanks and `\`-newlines; a gap of only `\`-newlines
    // joins its neighbours into one word for bash (`ca\<newline>t` is `cat`).
    let gap_ok = |from: usize, to: usize| -> bool {
        let mut i = from;
        let mut blank = false;
        while i < to.min(bytes.len()) {
            match bytes[i] {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    blank = true;
                    i += 1
                }
                b'\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
                b'\\' if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') => {
                    i += 3
                }
                _ => return false,
            }
        }
        blank || from >= to
    };
    let mut ok = true;
    // Pre-order: the order a cursor walk visits the nodes, so leaves come
    // in source order.
    for node in tree.preorder() {
        let kind = node.kind();
        match kind {
            K::Expansion if node.text(src).ends_with("@P}") => {
                ctx.evaluator = true;
                ctx.unknown(
                    "`${x@P}` expands the value as a prompt, running any substitution in it",
                );
            }
            K::Subscript if arithmetic_subscript(node, src) => {
                ctx.evaluator = true;
                ctx.unknown(format!(
                    "the array subscript `{}` depends on an expansion and is evaluated as arithmetic (a value such as `a[$(cmd)]` runs `cmd`)",
                    node.text(src)
                ));
            }
            K::ArithmeticExpansion
            | K::CStyleForStatement
            | K::Subscript
            | K::TestCommand
            | K::Expansion => ctx.evaluator = true,
            K::CompoundStatement
                if node
                    .first_child()
                    .is_some_and(|c| c.kind() == K::DoubleParen) =>
            {
                ctx.evaluator = true
            }
            K::Word | K::RawString | K::StringContent | K::AnsiCString | K::HeredocContent
                if ctx.code_text.is_none() =>
            {
                let raw = node.text(src);
                let text = if raw.contains('\\') {
                    std::borrow::Cow::Owned(raw.replace('\\', ""))
                } else {
                    std::borrow::Cow::Borrowed(raw)
                };
                // A literal `$` can be joined with `(cmd)` at run time
                // (`a='$'; b="${a}(id)"`) and then evaluated.
                // (Not in here-document text: a lone `$` there is data fed
                // to a command, and `$a` in an unquoted one is an expansion.)
                let quoted_dollar =
                    kind != K::Word && kind != K::HeredocContent && text.contains('$')
                        || raw.contains("\\$")
                        || (kind == K::AnsiCString
                            && ["\\x24", "\\044", "\\u0024", "\\U00000024"]
                                .iter()
                                .any(|e| raw.contains(e)));
                if text.contains("$(") || text.contains('`') || quoted_dollar {
                    ctx.code_text = Some(text.chars().take(60).collect());
                }
            }
            // tree-sitter-bash 0.25 reads the body of a `<<-` here-document
            // whose lines start with tabs as one leaf: its substitutions
            // (which bash runs when the delimiter is unquoted) are not seen.
            K::HeredocBody
                if node.child_count() == 0
                    && {
                        let t = node.text(src);
                        t.contains("$(") || t.contains('`') || t.contains("${") || t.contains("$[")
                    }
                    && !heredoc_quoted(node, src) =>
            {
                ctx.unknown(
                    "a here-document whose substitutions the parser did not read (`<<-` with tab-indented lines)",
                );
            }
            // tree-sitter-bash reads the pattern of `${v#...}`, `${v%...}`,
            // `${v,,...}` as one leaf: a substitution there is invisible.
            K::Regex
                if node.parent().is_some_and(|p| p.kind() == K::Expansion) && {
                    let t = node.text(src);
                    t.contains("$(") || t.contains('`') || t.contains("${")
                } =>
            {
                ctx.unknown(
                    "a command or parameter substitution inside a parameter-expansion pattern",
                );
            }
            _ => {}
        }
        // `x2>&1` is a word `x2` and `>&1` to bash, and `2>&1` after a
        // word with no blank is no descriptor either.
        if kind == K::FileRedirect
            && node.start_byte() == prev
            && prev > 0
            && bytes[prev - 1].is_ascii_digit()
        {
            ok = false;
            break;
        }
        if kind == K::FileDescriptor {
            let t = node.text(src);
            let braced = t.starts_with('{') && t.ends_with('}');
            if !(braced || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))) {
                ok = false;
                break;
            }
        }
        if matches!(kind, K::SimpleExpansion | K::Concatenation) && !contiguous(node) {
            ok = false;
            break;
        }
        if node.child_count() == 0 {
            let r = node.byte_range();
            // An operator or quote token holding other text (the grammar
            // once read `" "` as `"` plus ` "`).
            if !node.is_named()
                && !node.is_missing()
                && src.get(r.clone()).is_some_and(|t| t != node.name())
            {
                ok = false;
                break;
            }
            if r.start > prev && !gap_ok(prev, r.start) {
                ok = false;
                break;
            }
            // An unquoted word never holds an unescaped blank; when the
            // grammar's does (`x\n\;`), it read past a command's end.
            if kind == K::Word
                && has_unescaped_blank(&bytes[r.start.min(bytes.len())..r.end.min(bytes.len())])
            {
                ok = false;
                break;
            }
            prev = prev.max(r.end);
        }
    }
    if ok && !gap_ok(prev, bytes.len()) {
        ok = false;
    }
    if !ok {
        ctx.unknown(
            "the parser's words differ from bash's (escaped blank or newline inside a word)",
        );
    }
}

/// A subscript with an expansion in its index (`a[$i]`) inside arithmetic
/// (`(( ))`, `$(( ))`, `for (( ))`, `[[ -eq ]]`): bash expands `$i`, then
/// evaluates the result, so `i='$(cmd)'` runs `cmd`.
fn arithmetic_subscript(node: Node, src: &str) -> bool {
    let text = node.text(src);
    let Some((_, index)) = text.split_once('[') else {
        return false;
    };
    if !index.contains('$') && !index.contains('`') {
        return false;
    }
    let mut up = node.parent();
    let mut n = 0;
    while let Some(p) = up {
        match p.kind() {
            K::ArithmeticExpansion | K::CStyleForStatement | K::TestCommand => return true,
            K::CompoundStatement if p.first_child().is_some_and(|c| c.kind() == K::DoubleParen) => {
                return true
            }
            K::Command | K::Program | K::List | K::Pipeline => return false,
            _ => {}
        }
        n += 1;
        if n > 64 {
            return true;
        }
        up = p.parent();
    }
    false
}

/// Is the delimiter of the here-document `body` belongs to quoted (its
/// text is then literal)?
fn heredoc_quoted(body: Node, src: &str) -> bool {
    body.parent()
        .and_then(|r| r.children().find(|c| c.kind() == K::HeredocStart))
        .is_some_and(|s| s.text(src).contains(['\'', '"', '\\']))
}

fn has_unescaped_newline(gap: &[u8]) -> bool {
    let mut i = 0;
    while i < gap.len() {
        match gap[i] {
            b'\\' => i += 2,
            b'\n' => return true,
            _ => i += 1,
        }
    }
    false
}

/// Do the children of `node` cover it without gaps?
fn contiguous(node: Node) -> bool {
    let mut at = node.start_byte();
    for child in node.children() {
        if child.start_byte() != at {
            return false;
        }
        at = child.end_byte();
    }
    at == node.end_byte()
}

fn has_unescaped_blank(word: &[u8]) -> bool {
    let mut i = 0;
    while i < word.len() {
        match word[i] {
            b'\\' => i += 2,
            b' ' | b'\t' | b'\n' | b'\r' => return true,
            _ => i += 1,
        }
    }
    false
}

/// Is the byte right after `node` a blank (or the end)?
fn blank_after(node: Node, src: &str) -> bool {
    match src.as_bytes().get(node.end_byte()) {
        None => true,
        Some(b) => b.is_ascii_whitespace(),
    }
}

struct Walker<'c, 'a, 's, 'v> {
    ctx: &'c mut Ctx<'a>,
    src: &'s str,
    via: &'v [String],
    reparse: usize,
    /// Kinds already reported as outside allowlist mode's grammar: the
    /// reason depends on the kind alone, so it is recorded once.
    restricted: Vec<&'static str>,
}

/// Named node kinds walked through without special handling.
const CONTAINERS: &[K] = &[
    K::Program,
    K::List,
    K::CompoundStatement,
    K::DoGroup,
    K::IfStatement,
    K::ElifClause,
    K::ElseClause,
    K::WhileStatement,
    K::ForStatement,
    K::CStyleForStatement,
    K::CaseStatement,
    K::CaseItem,
    K::NegatedCommand,
    K::Subshell,
    K::CommandName,
    K::Concatenation,
    K::String,
    K::TranslatedString,
    K::Array,
    K::BinaryExpression,
    K::UnaryExpression,
    K::PostfixExpression,
    K::TernaryExpression,
    K::ParenthesizedExpression,
    K::Subscript,
    K::BraceExpression,
    K::Number,
    K::HeredocBody,
    K::VariableAssignments,
    K::Error,
];

/// Leaf kinds that run nothing.
const LEAVES: &[K] = &[
    K::Word,
    K::RawString,
    K::AnsiCString,
    K::StringContent,
    K::VariableName,
    K::SpecialVariableName,
    K::FileDescriptor,
    K::HeredocStart,
    K::HeredocContent,
    K::HeredocEnd,
    K::ExtglobPattern,
    K::Regex,
    K::TestOperator,
    K::Comment,
];

/// Named kinds that allowlist mode accepts; everything else is restricted.
const ALLOWLIST_KINDS: &[K] = &[
    K::Program,
    K::List,
    K::Pipeline,
    K::Command,
    K::CommandName,
    K::Word,
    K::String,
    K::StringContent,
    K::RawString,
    K::Concatenation,
    K::Number,
    K::VariableAssignment,
    K::VariableName,
    K::NegatedCommand,
];

fn describe(kind: &str) -> String {
    match kind {
        "command_substitution" => "command substitution `$(...)`".into(),
        "process_substitution" => "process substitution `<(...)`/`>(...)`".into(),
        "simple_expansion" | "expansion" => "parameter expansion `$...`".into(),
        "arithmetic_expansion" => "arithmetic expansion `$((...))`".into(),
        "file_redirect" => "redirection (`<`, `>`, `>>`)".into(),
        "heredoc_redirect" => "here-documents".into(),
        "herestring_redirect" => "here-strings `<<<`".into(),
        "redirected_statement" => "redirection (`<`, `>`, `>>`)".into(),
        "subshell" => "subshells `( )`".into(),
        "compound_statement" => "command groups `{ }` and `(( ))`".into(),
        "function_definition" => "function definitions".into(),
        "comment" => "comments".into(),
        "ansi_c_string" => "`$'...'` strings".into(),
        "test_command" => "`[[ ]]` tests".into(),
        other => format!("`{}`", other.replace('_', " ")),
    }
}

impl Walker<'_, '_, '_, '_> {
    fn text(&self, node: Node) -> &str {
        node.text(self.src)
    }

    fn walk_children(&mut self, node: Node, depth: usize) {
        let in_case = node.kind() == K::CaseItem;
        for child in node.children() {
            if !in_case
                && !child.is_named()
                && matches!(child.kind(), K::DoubleSemi | K::SemiAmp | K::DoubleSemiAmp)
            {
                self.ctx
                    .unknown(format!("`{}` outside `case`", child.name()));
            }
            self.walk(child, depth + 1);
        }
    }

    fn walk(&mut self, node: Node, depth: usize) {
        if depth > MAX_DEPTH {
            self.ctx
                .unknown(format!("nesting deeper than {MAX_DEPTH} levels"));
            return;
        }
        if node.is_missing() {
            self.ctx.unknown(format!("missing `{}`", node.name()));
            return;
        }
        let kind = node.kind();
        if !node.is_named() {
            match kind {
                K::Amp => self.ctx.restrict("background jobs `&`"),
                K::PipeAmp => self.ctx.restrict("`|&` pipes"),
                K::Backtick => self.ctx.restrict("backticks"),
                _ => {}
            }
            return;
        }
        if self.ctx.allowlist()
            && !ALLOWLIST_KINDS.contains(&kind)
            && kind != K::Error
            && !self.restricted.contains(&node.name())
        {
            self.restricted.push(node.name());
            if matches!(
                kind,
                K::FileRedirect
                    | K::RedirectedStatement
                    | K::HeredocRedirect
                    | K::HerestringRedirect
                    | K::ProcessSubstitution
            ) {
                self.ctx.redirect_seen = true;
            }
            self.ctx.restrict(describe(node.name()));
        }
        // Bash only reads `{`, `!` and `[[` as keywords when a blank follows
        // (`{}` and `!x` are programs); the grammar does not check that.
        if matches!(
            kind,
            K::CompoundStatement | K::NegatedCommand | K::TestCommand
        ) {
            if let Some(first) = node.first_child() {
                if matches!(
                    first.kind(),
                    K::Brace | K::Bang | K::DoubleBracket | K::Bracket
                ) && !blank_after(first, self.src)
                {
                    self.ctx
                        .unknown(format!("`{}` not followed by a blank", first.name()));
                }
            }
        }
        match kind {
            K::Command => self.command(node, depth),
            K::Pipeline => self.pipeline(node, depth),
            K::RedirectedStatement => {
                let before = self.ctx.commands.len();
                self.walk_children(node, depth);
                // `curl URL > x.sh`: the file holds downloaded content.
                if self.ctx.commands[before..]
                    .iter()
                    .any(|c| rules::is_downloader(rules::basename(&c.program)))
                {
                    for r in node.children().filter(|c| c.kind() == K::FileRedirect) {
                        for d in r.children().filter(|c| c.field() == Field::Destination) {
                            let t = decode(d, self.src).text;
                            self.ctx
                                .downloads
                                .push(t.trim_start_matches("./").to_string());
                        }
                    }
                }
            }
            K::FileRedirect => self.redirect(node, depth),
            K::HeredocRedirect | K::HerestringRedirect => {
                // Words after `<<END` or after the `<<<` word are arguments
                // of the command to bash; the grammar files them here.
                let extra = if kind == K::HeredocRedirect {
                    node.child_by_field(Field::Argument).is_some()
                } else {
                    node.named_children()
                        .filter(|c| c.kind() != K::FileDescriptor)
                        .count()
                        > 1
                };
                if extra {
                    self.ctx
                        .unknown("words after a here-document or here-string");
                }
                self.walk_children(node, depth)
            }
            K::FunctionDefinition => self.function(node, depth),
            K::WhileStatement | K::CStyleForStatement => {
                self.fork_loop(node);
                self.walk_children(node, depth)
            }
            K::VariableAssignment => self.assignment(node, depth),
            K::DeclarationCommand | K::UnsetCommand => self.declaration(node, depth),
            K::TestCommand => {
                // `[[ -v "a[$x]" ]]` evaluates the subscript.
                let t = self.text(node);
                if let Some(after) = t.split_once("-v ").map(|(_, a)| a) {
                    if after.contains('[') && (after.contains('$') || after.contains('`')) {
                        self.ctx.unknown(
                            "`[[ -v ]]` of a subscript that depends on an expansion (evaluated as arithmetic)",
                        );
                    }
                }
                let open = node
                    .first_child()
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_default();
                self.record_builtin(node, &open);
                self.walk_children(node, depth);
            }
            K::CommandSubstitution
            | K::ProcessSubstitution
            | K::ArithmeticExpansion
            | K::Expansion
            | K::SimpleExpansion => self.walk_children(node, depth),
            k if CONTAINERS.contains(&k) => self.walk_children(node, depth),
            k if LEAVES.contains(&k) => {}
            _ => {
                self.ctx
                    .unknown(format!("shell construct `{}`", node.name()));
                self.walk_children(node, depth);
            }
        }
    }

    fn command(&mut self, node: Node, depth: usize) {
        let mut words: Vec<Word> = Vec::with_capacity(node.child_count());
        let mut last_word_end: Option<usize> = None;
        let mut last_end: Option<usize> = None;
        let mut seen_redirect = false;
        let mut last_redirect_end: Option<usize> = None;
        for child in node.children() {
            let field = child.field();
            // `<<<$x\;` and `2>$((1))cmd` are one word to bash: the target.
            if matches!(field, Field::Name | Field::Argument)
                && last_redirect_end == Some(child.start_byte())
            {
                self.ctx.unknown("a word glued to a redirection target");
            }
            match field {
                Field::Name => {
                    let mut inner = child.named_children();
                    match (inner.next(), inner.next()) {
                        (Some(one), None) => words.push(decode(one, self.src)),
                        _ => words.push(Word {
                            text: self.text(child).to_string(),
                            dynamic: true,
                            pattern: false,
                            multi: false,
                        }),
                    }
                }
                Field::Argument => {
                    // `time <<<x cmd`: to bash, `cmd` is the command.
                    if seen_redirect && words.first().is_some_and(|w| w.text == "time") {
                        self.ctx.unknown("`time` followed by a redirection");
                    }
                    words.push(decode(child, self.src))
                }
                Field::Redirect => {
                    seen_redirect = true;
                    last_redirect_end = Some(child.end_byte());
                }
                _ => {}
            }
            // A newline ends a command for bash; the grammar sometimes
            // reads on (`git <newline> \<newline> ${x:-curl}`).
            if let Some(end) = last_end {
                let gap = &self.src.as_bytes()[end.min(child.start_byte())..child.start_byte()];
                if has_unescaped_newline(gap) {
                    self.ctx.unknown("a command that continues over a newline");
                }
            }
            last_end = Some(child.end_byte());
            // Bash separates words by blanks; the grammar sometimes
            // splits one word in two (`$'a'\{`).
            let wordish = matches!(field, Field::Name | Field::Argument)
                || child.kind() == K::VariableAssignment;
            if wordish {
                if let Some(prev) = last_word_end {
                    if prev == child.start_byte() {
                        self.ctx.unknown("two words with no blank between them");
                    }
                }
                last_word_end = Some(child.end_byte());
            } else {
                last_word_end = None;
            }
        }
        // Commands inside substitutions run first.
        let before = self.ctx.commands.len();
        for child in node.children() {
            self.walk(child, depth + 1);
        }
        let nested_download = self.ctx.commands[before..]
            .iter()
            .any(|c| rules::is_downloader(rules::basename(&c.program)));
        let first = self.ctx.commands.len();
        if words.is_empty() {
            return;
        }
        self.ctx
            .resolve(words, self.via.to_vec(), self.reparse, false);
        if nested_download
            && self.ctx.commands[first..]
                .iter()
                .any(|c| rules::runs_code(rules::basename(&c.program)))
        {
            self.ctx.danger("downloaded content is run as code");
        }
    }

    fn pipeline(&mut self, node: Node, depth: usize) {
        let mut stages: Vec<std::ops::Range<usize>> = Vec::new();
        for child in node.children() {
            let before = self.ctx.commands.len();
            self.walk(child, depth + 1);
            if child.is_named() {
                stages.push(before..self.ctx.commands.len());
            }
        }
        let mut downloaded = false;
        for stage in stages {
            let cmds = &self.ctx.commands[stage];
            if downloaded && cmds.iter().any(rules::reads_code) {
                self.ctx
                    .danger("downloaded content is piped into a shell or interpreter");
                break;
            }
            downloaded |= cmds
                .iter()
                .any(|c| rules::is_downloader(rules::basename(&c.program)));
        }
    }

    fn redirect(&mut self, node: Node, depth: usize) {
        let mut op = "";
        let mut destinations = 0;
        for child in node.children() {
            if child.field() == Field::Destination {
                destinations += 1;
            } else if !child.is_named() && op.is_empty() {
                op = child.name();
            }
        }
        if destinations > 1 {
            self.ctx.unknown("words after a redirection target");
        }
        let writes = matches!(op, ">" | ">>" | ">|" | "&>" | "&>>" | "<>" | ">&" | "&>|");
        if writes {
            for dest in node.children().filter(|c| c.field() == Field::Destination) {
                let w = decode(dest, self.src);
                let target = rules::in_cwd(self.ctx, &w.text);
                if let Some(why) = super::paths::write_target_danger(&target) {
                    self.ctx.danger(format!("a redirection {why}"));
                }
            }
        }
        self.walk_children(node, depth);
    }

    /// `while :; do CMD & done` and its variants: an endless loop that
    /// starts a background job each time round (and never waits).
    fn fork_loop(&mut self, node: Node) {
        let Some(body) = node.children().find(|c| c.kind() == K::DoGroup) else {
            return;
        };
        let endless = if node.kind() == K::CStyleForStatement {
            let t = self.text(node);
            let header = t
                .split_once("((")
                .and_then(|(_, r)| r.split_once("))"))
                .map(|(h, _)| h)
                .unwrap_or("");
            let cond = header.split(';').nth(1).unwrap_or("x").trim();
            cond.is_empty() || cond == "1" || cond == "true"
        } else {
            let until = node.first_child().is_some_and(|k| self.text(k) == "until");
            let start = node.first_child().map_or(0, |k| k.end_byte());
            let cond = self.src.get(start..body.start_byte()).unwrap_or("");
            let cond = cond.trim().strip_suffix("do").unwrap_or(cond);
            endless_condition(cond, until)
        };
        if !endless || !has_background(body, 0) {
            return;
        }
        let waits = self
            .text(body)
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == "wait");
        if !waits {
            self.ctx.danger(
                "an endless loop starts a background job each time round (fork bomb pattern)",
            );
        }
    }

    fn function(&mut self, node: Node, depth: usize) {
        let name = node
            .child_by_field(Field::Name)
            .map(|n| self.text(n).to_string());
        let before = self.ctx.commands.len();
        self.walk_children(node, depth);
        if name.as_deref() == Some("command_not_found_handle") {
            self.ctx.unknown(
                "`command_not_found_handle` runs for every program name that is not found",
            );
        }
        if let Some(name) = name {
            let calls: Vec<String> = self.ctx.commands[before..]
                .iter()
                .map(|c| c.program.clone())
                .collect();
            if calls.contains(&name) {
                self.ctx.danger(format!(
                    "function `{name}` calls itself (fork bomb pattern)"
                ));
            }
            self.ctx.functions.push((name, calls));
        }
    }

    fn assignment(&mut self, node: Node, depth: usize) {
        if let Some(name) = node.child_by_field(Field::Name) {
            let ident = match name.kind() {
                K::Subscript => name
                    .child_by_field(Field::Name)
                    .map(|n| self.text(n))
                    .unwrap_or(""),
                _ => self.text(name),
            };
            // `*a=x` is a command word to bash, not an assignment.
            if !rules::is_var_name(ident) {
                self.ctx.unknown(format!(
                    "`{}` is not a valid variable name",
                    self.text(name)
                ));
            }
            let name_id = name.start_byte();
            let name = self.text(name).to_string();
            let value = node
                .named_children()
                .find(|c| c.start_byte() != name_id)
                .map(|v| decode(v, self.src));
            let value = match &value {
                Some(w) => w.value(),
                None => Some(""),
            };
            rules::check_assignment(self.ctx, &name, value);
        }
        self.walk_children(node, depth);
    }

    fn declaration(&mut self, node: Node, depth: usize) {
        let keyword = node
            .first_child()
            .map(|n| self.text(n).to_string())
            .unwrap_or_default();
        // `declare -i n=$x` evaluates the value as arithmetic.
        let integer = node.named_children().any(|c| {
            c.kind() == K::Word && {
                let t = self.text(c);
                t.starts_with('-') && t.contains('i')
            }
        });
        if integer
            && node.named_children().any(|c| {
                c.kind() == K::VariableAssignment && {
                    let t = self.text(c);
                    t.split_once('=')
                        .is_some_and(|(_, v)| v.contains('$') || v.contains('`'))
                }
            })
        {
            self.ctx.unknown(format!(
                "`{keyword} -i` evaluates a value that depends on an expansion as arithmetic"
            ));
        }
        self.record_builtin(node, &keyword);
        self.walk_children(node, depth);
    }

    /// Records a builtin that the grammar does not parse as a command.
    fn record_builtin(&mut self, node: Node, program: &str) {
        if rules::evaluates_names(program) {
            self.ctx.evaluator = true;
        }
        let mut argv = vec![program.to_string()];
        for child in node.named_children() {
            argv.push(decode(child, self.src).text);
        }
        let cmd = super::ParsedCommand {
            program: program.to_string(),
            argv,
            via: self.via.to_vec(),
            rules: super::Rules::Builtin,
        };
        rules::check_listed(self.ctx, &cmd);
        self.ctx.commands.push(cmd);
    }
}
