//! The few styles zot uses. Whether they are used at all is decided per
//! stream by [`color_for`]: `NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR=0`,
//! `TERM=dumb` and not-a-terminal (anstream's rules, the ones clap uses).

use anstyle::{AnsiColor, Style};

pub const PROMPT: Style = AnsiColor::Green.on_default().bold();
pub const DIM: Style = Style::new().dimmed();
pub const TOOL: Style = AnsiColor::Cyan.on_default();
pub const OK: Style = AnsiColor::Green.on_default();
pub const BAD: Style = AnsiColor::Red.on_default();
pub const WARN: Style = AnsiColor::Yellow.on_default().bold();
pub const ERROR: Style = AnsiColor::Red.on_default().bold();
pub const GREETING: Style = Style::new().bold();

/// Whether to colour what is written to `stream`.
pub fn color_for<S: anstream::stream::RawStream>(stream: &S) -> bool {
    !matches!(
        anstream::AutoStream::choice(stream),
        anstream::ColorChoice::Never
    )
}

/// `text` in `style` when `on`.
pub fn paint(on: bool, style: Style, text: &str) -> String {
    if on && !text.is_empty() {
        format!("{}{text}{}", style.render(), style.render_reset())
    } else {
        text.to_string()
    }
}

/// `text` made safe to write to a terminal: control characters (escape
/// sequences a model or a command could use to rewrite the screen, set
/// the title or the clipboard) are shown as `^X` / `<U+009B>`; newlines
/// and tabs stay.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}';
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !bad(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push((b'@' + c as u8) as char);
            }
            c => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(sanitize("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(sanitize("a\x1b]52;c;ZXZpbA==\x07b"), "a^[]52;c;ZXZpbA==^Gb");
        assert_eq!(sanitize("\r\u{9b}2J\u{7f}"), "^M<U+009B>2J^?");
    }
}
