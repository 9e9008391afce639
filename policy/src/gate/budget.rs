//! Bounds on parsing: what the gate does with a command that tree-sitter-bash
//! cannot parse in reasonable time and memory.
//!
//! tree-sitter-bash 0.25 is linear on ordinary input, but not on all input
//! (measured with `cargo bench -p zot-policy --bench gate sweep`):
//!
//! - A long pipeline keeps every stage on the parse stack (about 3 KB of
//!   memory per stage), and a syntax error while it is open sends error
//!   recovery through the whole stack for each token: time *and memory*
//!   grow with the square of the stages (8,000 stages: about 1.5 s and
//!   650 MiB; 32,000 stages make tree-sitter abort the process when an
//!   allocation fails; 1 MiB of them takes the host's memory).
//! - After many other syntax errors (`)))`, `$[$[`, `a=(a=(`, an unclosed
//!   `case` followed by anything, ...) the external scanner re-reads the
//!   rest of the input for each token: time grows with the square of the
//!   input (memory does not).
//! - Deeply nested unclosed `${` make error recovery quadratic in time.
//! - Dense input is linear but slow: 1 MiB of `a;` takes over a second.
//!
//! So every parse runs under bounds, and a command over any of them is *not
//! understood* (ask in ask mode, deny in allowlist mode), never allowed:
//!
//! 1. before parsing, a count on the raw bytes: at most [`MAX_PIPES`] `|`
//!    that can be pipe operators. Quoted and here-document `|` count too
//!    (the count cannot tell them apart without parsing): that only makes
//!    more commands not understood;
//! 2. while parsing, a deterministic bound on the work: [`MAX_PARSE_STEPS`]
//!    parse actions (tree-sitter reports progress every 100) and
//!    [`MAX_LEXED_BYTES`] bytes read by the lexer (re-reads included);
//! 3. a time budget as the backstop, [`PARSE_TIME`] of CPU time of the
//!    calling thread for all parses of one command (`sh -c` strings are
//!    parsed again, under the same budget). CPU time, not wall time: on a
//!    loaded machine the parse waits for a core, and a wall-clock budget
//!    would refuse ordinary large commands there (measured: 512 KiB of
//!    ordinary commands, 55 ms of CPU, took 450 ms of wall time at a load
//!    of 10).
//!
//! 1 and 2 give the same verdict on every machine. 3 is the only thing that
//! can differ between machines (by their speed, not their load), and only
//! for commands that take about [`PARSE_TIME`] to parse: every such input
//! we found is over one of the other bounds or has a syntax error (not
//! understood either way).

use std::cell::Cell;
use std::time::{Duration, Instant};

/// At most this many `|` that can be pipe operators (every `|` except the
/// two of a `||`), counted on the raw bytes before parsing. A broken
/// pipeline of this many stages parses in about 0.15 s of CPU and 70 MiB
/// (1,024: 45 ms; the growth is quadratic); the largest shell scripts of a
/// Debian system have 156, the corpus's largest command 3.
pub const MAX_PIPES: usize = 2048;

/// At most this many tree-sitter parse actions (counted in hundreds, as
/// tree-sitter reports progress). Ordinary shell scripts take about 0.6
/// actions per byte: 500,000 is about 850 KB of script.
pub const MAX_PARSE_STEPS: u64 = 500_000;

/// At most this many bytes read by tree-sitter's lexer, re-reads included
/// (counted in chunks of [`CHUNK`] bytes). Ordinary input is read one to
/// three times; error recovery that re-reads the rest of the input for
/// each token reaches this quickly.
pub const MAX_LEXED_BYTES: u64 = 8 << 20;

/// CPU time all parses of one command may take together. Debug
/// builds compile tree-sitter without optimisation (about 3x slower): they
/// get four times as long.
pub const PARSE_TIME: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(1600)
} else {
    Duration::from_millis(400)
};

/// The lexer is handed the input in chunks of this many bytes; each chunk
/// it asks for counts in full towards [`MAX_LEXED_BYTES`].
pub(crate) const CHUNK: usize = 256;

/// The bounds one `evaluate()` works under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub pipes: usize,
    pub steps: u64,
    pub lexed: u64,
    /// `None`: no time budget (tests of the deterministic bounds).
    pub time: Option<Duration>,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        pipes: MAX_PIPES,
        steps: MAX_PARSE_STEPS,
        lexed: MAX_LEXED_BYTES,
        time: Some(PARSE_TIME),
    };
}

/// Which bound a command is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// A pipeline of more `|` than [`Limits::pipes`] (the count found).
    Pipes(usize),
    Steps,
    Lexed,
    Time,
}

/// The work all parses of one command have done, against [`Limits`].
pub(crate) struct Budget {
    limits: Limits,
    /// The clock's reading at which the time is spent.
    deadline: Option<Duration>,
    /// Calls since the clock was last read.
    ticks: Cell<u32>,
    steps: Cell<u64>,
    lexed: Cell<u64>,
    /// The first bound a parse went over; later parses are not attempted.
    spent: Cell<Option<Exceeded>>,
}

impl Budget {
    /// Starts the clock.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            deadline: limits.time.map(|t| clock().saturating_add(t)),
            ticks: Cell::new(0),
            steps: Cell::new(0),
            lexed: Cell::new(0),
            spent: Cell::new(None),
        }
    }

    /// May `src` be parsed? Not when an earlier parse went over a bound,
    /// nor when it has too many `|`.
    pub fn admit(&self, src: &str) -> Result<(), Exceeded> {
        if let Some(e) = self.spent.get() {
            return Err(e);
        }
        let pipes = pipes(src.as_bytes());
        if pipes > self.limits.pipes {
            // Not `spent`: other (shorter) strings may still be parsed.
            return Err(Exceeded::Pipes(pipes));
        }
        Ok(())
    }

    /// The bound the last parse went over, if any.
    pub fn spent(&self) -> Option<Exceeded> {
        self.spent.get()
    }

    /// The lexer asks for `bytes` more bytes: false once the lexing bound or
    /// the time is spent. (tree-sitter checks progress only every 100 parse
    /// actions, and after some syntax errors each action re-reads the rest
    /// of the input: the lexer is the one place that can be stopped in
    /// between.)
    pub fn lex(&self, bytes: usize) -> bool {
        if self.spent.get().is_some() {
            return false;
        }
        self.lexed.set(self.lexed.get().saturating_add(bytes as u64));
        let over = if self.lexed.get() > self.limits.lexed {
            Some(Exceeded::Lexed)
        } else if self.late() {
            Some(Exceeded::Time)
        } else {
            None
        };
        self.spend(over)
    }

    /// tree-sitter's progress callback (every 100 parse actions): true
    /// cancels the parse.
    pub fn progress(&self) -> bool {
        if self.spent.get().is_some() {
            return true;
        }
        self.steps.set(self.steps.get().saturating_add(100));
        let over = if self.steps.get() > self.limits.steps {
            Some(Exceeded::Steps)
        } else if self.late() {
            Some(Exceeded::Time)
        } else {
            None
        };
        !self.spend(over)
    }

    /// Is the time spent? The clock is read on every 8th call (about 2 KiB
    /// lexed or 800 parse actions, a few microseconds of work): on Linux
    /// it is a system call.
    fn late(&self) -> bool {
        let Some(deadline) = self.deadline else {
            return false;
        };
        let t = self.ticks.get();
        self.ticks.set(t.wrapping_add(1));
        if self.limits.time == Some(Duration::ZERO) {
            return true;
        }
        t % 8 == 0 && clock() >= deadline
    }

    /// Records the first bound gone over; true if there is none.
    fn spend(&self, over: Option<Exceeded>) -> bool {
        if over.is_some() && self.spent.get().is_none() {
            self.spent.set(over);
        }
        over.is_none()
    }

    /// The reason a command over `e` is not understood (after "not
    /// understood: ").
    pub fn reason(&self, e: Exceeded) -> String {
        const TOO: &str = "the command is too complex to check";
        match e {
            Exceeded::Pipes(n) => format!(
                "{TOO}: a pipeline of it has {n} `|`, more than the {} the gate parses (a long pipeline makes the parser's time and memory grow with the square of its length; counted before parsing)",
                self.limits.pipes
            ),
            Exceeded::Steps => format!(
                "{TOO}: parsing it takes more than {} steps",
                self.limits.steps
            ),
            Exceeded::Lexed => format!(
                "{TOO}: the parser reads more than {} MiB of it (error recovery re-reads the input)",
                self.limits.lexed >> 20
            ),
            Exceeded::Time => format!(
                "{TOO} within the time limit ({} ms of CPU time)",
                self.limits.time.unwrap_or_default().as_millis()
            ),
        }
    }
}

/// The CPU time this thread has used (Linux: `CLOCK_THREAD_CPUTIME_ID`);
/// where that clock cannot be read, the time since the first call.
fn clock() -> Duration {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// The most `|` that can be pipe operators in one pipeline of `src`
/// (`|` and `|&`; not the two of a `||`, a list operator), counted on the
/// raw bytes before parsing, quote-aware: a `|` in `'...'`, `"..."` or
/// `$'...'` is text, a `;`, `&`, `&&`, `||` or newline ends a pipeline (a
/// newline right after a `|` does not), and each `$( )` or backtick
/// substitution counts its own pipelines, with the pipeline around it
/// going on after it. When in doubt it counts more: a newline ends any
/// quote (a line with an unbalanced quote does not hide the pipes of the
/// next), so text the parser reads differently can only make more
/// commands not understood, never let a long pipeline through.
pub(crate) fn pipes(src: &[u8]) -> usize {
    #[derive(Clone, Copy, PartialEq)]
    enum C {
        /// Top level or inside `$( )` (with its open parentheses).
        Code(u32),
        Backtick,
        Single,
        DollarSingle,
        Double,
    }
    // Each open context with its pipeline's count so far.
    let mut stack: Vec<(C, usize)> = vec![(C::Code(0), 0)];
    let mut max = 0usize;
    let mut last_sig = 0u8; // last non-blank byte in code
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        let top = stack.len() - 1;
        let (ctx, _) = stack[top];
        if b == b'\n' {
            let quoted = !matches!(ctx, C::Code(_) | C::Backtick);
            if quoted {
                // Keep counting as if the quote had ended.
                let (_, n) = stack[top];
                stack.truncate(top.max(1));
                let t = stack.len() - 1;
                stack[t].1 = stack[t].1.max(n);
            } else if last_sig != b'|' {
                stack[top].1 = 0;
            }
            i += 1;
            continue;
        }
        match ctx {
            C::Single => {
                if b == b'\'' {
                    stack.pop();
                }
                i += 1;
            }
            C::DollarSingle => {
                match b {
                    b'\\' => i += 1,
                    b'\'' => {
                        stack.pop();
                    }
                    _ => {}
                }
                i += 1;
            }
            C::Double => {
                match b {
                    b'\\' => i += 1,
                    b'"' => {
                        stack.pop();
                    }
                    b'`' => stack.push((C::Backtick, 0)),
                    b'$' if src.get(i + 1) == Some(&b'(') => {
                        stack.push((C::Code(0), 0));
                        i += 1;
                    }
                    _ => {}
                }
                i += 1;
            }
            C::Code(_) | C::Backtick => {
                match b {
                    b'\\' => {
                        i += 2;
                        last_sig = b'\\';
                        continue;
                    }
                    b'\'' => stack.push((C::Single, 0)),
                    b'"' => stack.push((C::Double, 0)),
                    b'$' if src.get(i + 1) == Some(&b'\'') => {
                        stack.push((C::DollarSingle, 0));
                        i += 1;
                    }
                    b'$' if src.get(i + 1) == Some(&b'(') => {
                        stack.push((C::Code(0), 0));
                        i += 1;
                    }
                    b'`' if ctx == C::Backtick => {
                        stack.pop();
                    }
                    b'`' => stack.push((C::Backtick, 0)),
                    b'(' => {
                        if let C::Code(d) = ctx {
                            stack[top].0 = C::Code(d + 1);
                        }
                    }
                    b')' => match ctx {
                        C::Code(0) if top > 0 => {
                            stack.pop();
                        }
                        C::Code(d) if d > 0 => stack[top].0 = C::Code(d - 1),
                        _ => {}
                    },
                    b'|' => {
                        if src.get(i + 1) == Some(&b'|') {
                            // `||` ends the pipeline; `|||` is `||` then `|`.
                            stack[top].1 = 0;
                            i += 2;
                            last_sig = b'o';
                            continue;
                        }
                        stack[top].1 += 1;
                        max = max.max(stack[top].1);
                    }
                    b';' | b'&' => {
                        // `|&` is a pipe (counted at its `|`); `&>` a redirection.
                        if !(b == b'&' && (last_sig == b'|' || src.get(i + 1) == Some(&b'>')))
                            && !(b == b'&' && i > 0 && matches!(src[i - 1], b'>' | b'<'))
                        {
                            stack[top].1 = 0;
                        }
                    }
                    _ => {}
                }
                if !b.is_ascii_whitespace() {
                    last_sig = b;
                }
                i += 1;
            }
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{evaluate_with, Decision, GateMode};

    /// The reasons of `src` in allowlist mode under `limits`.
    fn reasons(src: &str, limits: Limits) -> Vec<String> {
        let v = evaluate_with(src, GateMode::Allowlist, &["a".to_string()], limits);
        assert_eq!(v.decision, Decision::Deny, "{src:.40}: {:?}", v.reasons);
        v.reasons
    }

    const NO_CLOCK: Limits = Limits {
        time: None,
        ..Limits::DEFAULT
    };

    #[test]
    fn each_bound_names_itself() {
        let r = reasons(&"a;".repeat(2_000), Limits { steps: 1_000, ..NO_CLOCK });
        assert_eq!(
            r,
            ["not understood: the command is too complex to check: parsing it takes more than 1000 steps"]
        );
        let r = reasons(&")".repeat(4_096), Limits { lexed: 1 << 20, ..NO_CLOCK });
        assert_eq!(
            r,
            ["not understood: the command is too complex to check: the parser reads more than 1 MiB of it (error recovery re-reads the input)"]
        );
        let r = reasons("a;a", Limits { time: Some(Duration::ZERO), ..Limits::DEFAULT });
        assert_eq!(
            r,
            ["not understood: the command is too complex to check within the time limit (0 ms of CPU time)"]
        );
        let r = reasons("a|a|a", Limits { pipes: 1, ..NO_CLOCK });
        assert_eq!(r.len(), 1);
        assert!(r[0].starts_with("not understood: the command is too complex to check: a pipeline of it has 2 `|`, more than the 1"));
    }

    #[test]
    fn the_bounds_hold_for_all_parses_of_a_command() {
        // The outer line parses within 1000 steps, the `sh -c` string does
        // not: only the string is not understood, and the budget is spent.
        let inner = "a;".repeat(2_000);
        let src = format!("a; sh -c '{inner}'; a");
        let v = evaluate_with(
            &src,
            GateMode::Ask,
            &[],
            Limits { steps: 1_000, ..NO_CLOCK },
        );
        assert_eq!(v.decision, Decision::Ask);
        assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
        assert!(v.reasons[0].contains("more than 1000 steps"));
        let programs: Vec<&str> = v.commands.iter().map(|c| c.program.as_str()).collect();
        assert_eq!(programs, ["a", "sh", "a"]);
        // Without the bound the string is walked.
        let v = evaluate_with(&src, GateMode::Ask, &[], NO_CLOCK);
        assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
        assert_eq!(v.commands.len(), 2_002);
    }

    #[test]
    fn pipes_are_counted_but_or_lists_are_not() {
        for (src, n) in [
            ("", 0),
            ("a", 0),
            ("a|b", 1),
            ("a|&b", 1),
            ("a||b", 0),
            ("a|||b", 1),
            ("a||||b", 0),
            ("|", 1),
            ("||", 0),
            ("a|b||c|d", 1),
            ("a|b|c; d|e", 2),
            ("a|b|c\nd|e", 2),
            ("a|b|\nc|d", 3),
            ("echo '|' \"|\" $'\\'|' x", 0),
            ("echo \"$(a|b|c)\" | d", 2),
            ("a | $(b; c|d) | e", 2),
            ("\\|a|b", 1),
            ("echo 'x\n|a|b|c", 3),
            ("case x in a|b) ;; esac", 1),
        ] {
            assert_eq!(pipes(src.as_bytes()), n, "{src:?}");
        }
    }

    #[test]
    fn a_bound_once_spent_stops_later_parses() {
        let b = Budget::new(Limits {
            steps: 150,
            time: None,
            ..Limits::DEFAULT
        });
        assert_eq!(b.admit("a"), Ok(()));
        assert!(!b.progress());
        assert!(b.progress());
        assert_eq!(b.spent(), Some(Exceeded::Steps));
        assert_eq!(b.admit("a"), Err(Exceeded::Steps));
    }

    #[test]
    fn too_many_pipes_refuse_that_string_only() {
        let b = Budget::new(Limits {
            pipes: 2,
            ..Limits::DEFAULT
        });
        assert_eq!(b.admit("a|b|c"), Ok(()));
        assert_eq!(b.admit("a|b|c|d"), Err(Exceeded::Pipes(3)));
        assert_eq!(b.admit("a|b"), Ok(()));
        assert!(b.reason(Exceeded::Pipes(3)).contains("has 3 `|`, more than the 2"));
    }

    #[test]
    fn lexing_and_time_are_bounded() {
        let b = Budget::new(Limits {
            lexed: 1000,
            time: None,
            ..Limits::DEFAULT
        });
        assert!(b.lex(1000));
        assert!(!b.progress());
        assert!(!b.lex(1));
        assert_eq!(b.spent(), Some(Exceeded::Lexed));
        assert!(b.progress(), "a spent budget cancels");
        assert!(!b.lex(1), "and reads nothing more");

        let b = Budget::new(Limits {
            time: Some(Duration::ZERO),
            ..Limits::DEFAULT
        });
        assert!(!b.lex(1));
        assert_eq!(b.spent(), Some(Exceeded::Time));
        assert_eq!(
            b.reason(Exceeded::Time),
            "the command is too complex to check within the time limit (0 ms of CPU time)"
        );
    }
}
