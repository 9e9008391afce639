//! Shell words after quote removal, as far as the gate can know them.

use super::syntax::{Node, K};

/// One shell word. `text` is the value after quote removal when the word is
/// fully known, otherwise its source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    pub text: String,
    /// Depends on an expansion (`$x`, `$(..)`, `$((..))`, ...): value unknown.
    pub dynamic: bool,
    /// Unquoted glob, brace or tilde characters: the shell may turn it into
    /// other or several words.
    pub pattern: bool,
    /// Unquoted glob or brace expansion: may become several words, and
    /// words taken from file names (which can look like options).
    pub multi: bool,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            dynamic: false,
            pattern: false,
            multi: false,
        }
    }

    /// Known exactly: one word whose value is `text`.
    pub fn is_static(&self) -> bool {
        !self.dynamic && !self.pattern
    }

    /// The static value, if known.
    pub fn value(&self) -> Option<&str> {
        self.is_static().then_some(self.text.as_str())
    }
}

/// Decode an argument-position node into a [`Word`].
pub(crate) fn decode(node: Node, src: &str) -> Word {
    let raw = node.text(src);
    if !on_char_boundaries(node, src) {
        return Word {
            text: String::from_utf8_lossy(&src.as_bytes()[node.byte_range()]).into_owned(),
            dynamic: true,
            pattern: false,
            multi: false,
        };
    }
    let mut acc = Acc::default();
    acc.part(node, src, true);
    // `{a,b}` and `{1..3}` expand to several words; `{}` stays literal.
    let brace = acc.open_brace && acc.close_brace && acc.brace_sep;
    let pattern = acc.pattern || brace;
    let multi = acc.glob || brace;
    if acc.dynamic {
        Word {
            text: raw.to_string(),
            dynamic: true,
            pattern,
            multi,
        }
    } else {
        Word {
            text: acc.text,
            dynamic: false,
            pattern,
            multi,
        }
    }
}

/// The parser saw a shadow of the text (see `walk::ascii_shadow`); a node
/// that splits a character is not understood.
fn on_char_boundaries(node: Node, src: &str) -> bool {
    let r = node.byte_range();
    r.end <= src.len() && src.is_char_boundary(r.start) && src.is_char_boundary(r.end)
}

#[derive(Default)]
struct Acc {
    text: String,
    dynamic: bool,
    pattern: bool,
    open_brace: bool,
    close_brace: bool,
    brace_sep: bool,
    glob: bool,
}

impl Acc {
    fn part(&mut self, node: Node, src: &str, first: bool) {
        if !on_char_boundaries(node, src) {
            self.dynamic = true;
            return;
        }
        let raw = node.text(src);
        match node.kind() {
            K::Word => self.unquoted(raw, first),
            K::Number if node.child_count() == 0 => self.unquoted(raw, first),
            K::RawString => match raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
                Some(inner) => self.text.push_str(inner),
                None => self.dynamic = true,
            },
            K::AnsiCString => match raw.strip_prefix("$'").and_then(|r| r.strip_suffix('\'')) {
                Some(inner) => match decode_ansi_c(inner) {
                    Some(s) => self.text.push_str(&s),
                    None => self.dynamic = true,
                },
                None => self.dynamic = true,
            },
            K::String => self.double_quoted(node, src),
            K::TranslatedString => {
                let mut strings = node.named_children();
                match (strings.next(), strings.next()) {
                    (Some(s), None) if s.kind() == K::String => self.double_quoted(s, src),
                    _ => self.dynamic = true,
                }
            }
            K::Concatenation => {
                let mut first_part = first;
                for child in node.children() {
                    self.part(child, src, first_part);
                    first_part = false;
                }
            }
            _ => self.dynamic = true,
        }
    }

    fn unquoted(&mut self, raw: &str, first: bool) {
        self.text.reserve(raw.len());
        let mut chars = raw.chars().peekable();
        let mut at_start = first;
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('\n') | None => {}
                    Some(n) => self.text.push(n),
                },
                '*' | '?' | '[' | ']' | '(' | ')' => {
                    self.pattern = true;
                    self.glob = true;
                    self.text.push(c);
                }
                '~' if at_start => {
                    self.pattern = true;
                    self.text.push(c);
                }
                '{' => {
                    self.open_brace = true;
                    self.text.push(c);
                }
                '}' => {
                    self.close_brace = true;
                    self.text.push(c);
                }
                ',' => {
                    self.brace_sep = true;
                    self.text.push(c);
                }
                '.' if chars.peek() == Some(&'.') => {
                    self.brace_sep = true;
                    self.text.push(c);
                }
                '$' | '`' => {
                    // The grammar should have made an expansion node; if it
                    // did not, the value is not known.
                    self.dynamic = true;
                    self.text.push(c);
                }
                _ => self.text.push(c),
            }
            at_start = false;
        }
    }

    fn double_quoted(&mut self, node: Node, src: &str) {
        for child in node.children() {
            match child.kind() {
                K::DoubleQuote if !child.is_named() => {}
                K::StringContent => {
                    let raw = child.text(src);
                    self.text.reserve(raw.len());
                    let mut chars = raw.chars();
                    while let Some(c) = chars.next() {
                        if c == '\\' {
                            match chars.next() {
                                Some('\n') => {}
                                Some(n @ ('$' | '`' | '"' | '\\')) => self.text.push(n),
                                Some(n) => {
                                    self.text.push('\\');
                                    self.text.push(n);
                                }
                                None => self.text.push('\\'),
                            }
                        } else {
                            if c == '$' || c == '`' {
                                self.dynamic = true;
                            }
                            self.text.push(c);
                        }
                    }
                }
                _ => self.dynamic = true,
            }
        }
    }
}

/// Decode the inside of `$'...'`. `None` for escapes we do not model.
fn decode_ansi_c(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff)?);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}
