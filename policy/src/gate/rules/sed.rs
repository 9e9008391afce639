//! sed: in-place edits, and scripts that run commands or write files.

use super::programs::apply;
use crate::gate::grammars;
use crate::gate::paths;
use crate::gate::word::Word;
use crate::gate::{Ctx, Rules};

pub(super) fn sed_rules(ctx: &mut Ctx, args: &[Word]) -> Rules {
    let p = apply(ctx, &grammars::SED, "sed", args);
    let mut scripts: Vec<&Word> = p.values("expression").collect();
    let from_file = p.has("file");
    let mut files: &[Word] = &p.operands;
    if scripts.is_empty() && !from_file {
        if let Some((s, f)) = p.operands.split_first() {
            scripts.push(s);
            files = f;
        }
    }
    if p.has("in-place") {
        ctx.restrict("`sed -i` writes files");
        for f in files {
            if let Some(why) = paths::write_target_danger(&f.text) {
                ctx.danger(format!("`sed -i` {why}"));
            }
        }
    }
    let sandbox = p.has("sandbox");
    for s in scripts {
        if s.dynamic {
            ctx.risky(format!(
                "the `sed` script `{}` depends on expansion",
                s.text
            ));
            continue;
        }
        match sed_script_issues(&s.text) {
            Err(e) => {
                if ctx.allowlist() {
                    ctx.restrict(format!("`sed` script {e}"));
                } else if !sandbox && s.text.contains(['e', 'w', 'W']) {
                    ctx.unknown(format!("`sed` script {e}"));
                }
            }
            Ok(issues) if !sandbox => {
                for i in issues {
                    match i {
                        SedIssue::Exec(what) => {
                            ctx.risky(format!("`sed` script uses {what}, which runs commands"))
                        }
                        SedIssue::Write(target) => {
                            ctx.restrict(format!("`sed` script writes the file `{target}`"));
                            if let Some(why) = paths::write_target_danger(&target) {
                                ctx.danger(format!("`sed` script {why}"));
                            }
                        }
                    }
                }
            }
            Ok(_) => {}
        }
    }
    Rules::Grammar
}

/// What a sed script does beyond editing its input.
#[derive(Debug, PartialEq, Eq)]
enum SedIssue {
    /// `e`, `s///e`: runs a command.
    Exec(&'static str),
    /// `w`, `W`, `s///w`: writes this file.
    Write(String),
}

/// Scans a GNU sed script command by command, as GNU sed reads it: the
/// commands that run programs or write files, or Err when the script is
/// not understood.
fn sed_script_issues(script: &str) -> Result<Vec<SedIssue>, String> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut issues = Vec::new();
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
        b[start..*i].iter().collect::<String>().trim().to_string()
    };
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == ' ' || b[*i] == '\t') {
            *i += 1;
        }
    };
    // Reads a delimited part starting after the delimiter; returns index after the closing one.
    let delimited = |mut i: usize, delim: char| -> Result<usize, String> {
        while i < b.len() {
            if b[i] == '\\' {
                i += 2;
                continue;
            }
            if b[i] == delim {
                return Ok(i + 1);
            }
            if b[i] == '\n' && delim != '\n' {
                return Err("has an unterminated expression".into());
            }
            i += 1;
        }
        Err("has an unterminated expression".into())
    };
    let address = |i: &mut usize| -> Result<(), String> {
        if *i >= b.len() {
            return Ok(());
        }
        match b[*i] {
            '0'..='9' => {
                while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == '~') {
                    *i += 1;
                }
            }
            '$' => *i += 1,
            '/' => {
                *i = delimited(*i + 1, '/')?;
                while *i < b.len() && (b[*i] == 'I' || b[*i] == 'M') {
                    *i += 1;
                }
            }
            '\\' => {
                let d = *b.get(*i + 1).ok_or("ends after `\\`")?;
                *i = delimited(*i + 2, d)?;
                while *i < b.len() && (b[*i] == 'I' || b[*i] == 'M') {
                    *i += 1;
                }
            }
            '+' | '~' => {
                *i += 1;
                while *i < b.len() && b[*i].is_ascii_digit() {
                    *i += 1;
                }
            }
            _ => {}
        }
        Ok(())
    };
    let to_eol = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
    };
    let to_sep = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' && b[*i] != ';' && b[*i] != '}' {
            *i += 1;
        }
    };
    while i < b.len() {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == '#' {
            to_eol(&mut i);
            continue;
        }
        address(&mut i)?;
        skip_ws(&mut i);
        if i < b.len() && b[i] == ',' {
            i += 1;
            skip_ws(&mut i);
            address(&mut i)?;
            skip_ws(&mut i);
        }
        while i < b.len() && b[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        let Some(&cmd) = b.get(i) else {
            return Err("ends after an address".into());
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            's' => {
                let d = *b.get(i).ok_or("has an unterminated `s` command")?;
                if d == '\n' || d == '\\' {
                    return Err("has an `s` command with a bad delimiter".into());
                }
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
                while i < b.len() {
                    match b[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            issues.push(SedIssue::Exec("the `e` flag of `s`"));
                            i += 1;
                        }
                        'w' => {
                            i += 1;
                            issues.push(SedIssue::Write(rest_of_line(&mut i)));
                        }
                        _ => break,
                    }
                }
            }
            'y' => {
                let d = *b.get(i).ok_or("has an unterminated `y` command")?;
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line, with `\`-newline continuation.
                while i < b.len() && b[i] != '\n' {
                    if b[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            'r' | 'R' => to_eol(&mut i),
            'b' | 't' | 'T' | ':' | 'v' => to_sep(&mut i),
            'q' | 'Q' | 'l' | 'L' => {
                skip_ws(&mut i);
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'e' => {
                issues.push(SedIssue::Exec("the `e` command"));
                to_eol(&mut i);
            }
            'w' | 'W' => issues.push(SedIssue::Write(rest_of_line(&mut i))),
            c => {
                return Err(format!(
                    "uses the command `{c}`, which the gate does not know"
                ))
            }
        }
    }
    Ok(issues)
}
