//! Signals in the interactive mode. While a turn runs, Ctrl-C (SIGINT)
//! cancels it through the run's [`Cancel`] handle and SIGTERM/SIGHUP
//! interrupt it (the run then ends with 128+N after cleaning up). At the
//! prompt the line editor reads Ctrl-C as a key; a SIGINT sent there by
//! `kill` is ignored, as shells do; SIGTERM/SIGHUP end zot at once, the
//! terminal's settings restored first. With plain input (no line editor)
//! signals at the prompt have their usual effect.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use zot_agent::Cancel;

/// What the process is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Reading a line with the editor (raw mode: Ctrl-C is a key).
    Editing = 0,
    /// Running a turn.
    Busy = 1,
    /// Reading a line plainly.
    Plain = 2,
}

static STATE: AtomicU8 = AtomicU8::new(State::Plain as u8);
static CANCEL: OnceLock<Cancel> = OnceLock::new();
/// The terminal settings from before the editor touched them.
static TERMIOS: OnceLock<libc::termios> = OnceLock::new();

pub fn set(s: State) {
    STATE.store(s as u8, Ordering::SeqCst);
}

/// Put the terminal's settings back as they were before [`install`].
pub fn restore_terminal() {
    if let Some(t) = TERMIOS.get() {
        // SAFETY: a valid termios saved by install().
        unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
    }
}

pub fn get() -> State {
    match STATE.load(Ordering::SeqCst) {
        0 => State::Editing,
        1 => State::Busy,
        _ => State::Plain,
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    let state = STATE.load(Ordering::SeqCst);
    if state == State::Busy as u8 {
        if let Some(c) = CANCEL.get() {
            if sig == libc::SIGINT {
                c.cancel();
            } else {
                c.interrupt(sig);
            }
            return;
        }
    }
    if state == State::Editing as u8 {
        if sig == libc::SIGINT {
            return;
        }
        if let Some(t) = TERMIOS.get() {
            // SAFETY: tcsetattr is async-signal-safe; `t` is a valid termios.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
        }
    }
    // The usual effect: default disposition, then the signal again.
    // SAFETY: signal(2) and raise(3) are async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Install the handlers for the rest of the process's life.
pub fn install(cancel: &Cancel) {
    let _ = CANCEL.set(cancel.clone());
    // SAFETY: tcgetattr writes into a zeroed termios we own; tcsetattr
    // reads a valid one.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) == 0 && TERMIOS.set(t).is_ok() {
            // Ctrl-C during a turn: no `^C` echoed into the spinner's line
            // (zot says what it did instead).
            t.c_lflag &= !libc::ECHOCTL;
            libc::tcsetattr(0, libc::TCSANOW, &t);
        }
    }
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only uses atomics and async-signal-safe calls.
        let _ = unsafe { sigaction(sig, &action) };
    }
}
