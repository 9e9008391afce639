//! The user's terminal: is there one, and y/N questions on it.

use std::io::{BufRead, Write};

/// True when stdin is a terminal (a human can answer questions).
pub fn stdin_is_tty() -> bool {
    // SAFETY: isatty only inspects the fd.
    unsafe { libc::isatty(0) == 1 }
}

/// Print `question [y/N] ` to stderr and read one line from stdin. Only
/// `y`/`yes` (any case) is a yes; EOF or anything else is a no.
pub fn ask_yes_no(question: &str) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            eprintln!();
            false
        }
        Ok(_) => matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"),
    }
}

/// Read one line from stdin after printing `prompt` to stderr; `None` at EOF.
pub fn read_line(prompt: &str) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}
