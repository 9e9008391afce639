//! The process's one handler for SIGINT, SIGTERM and SIGHUP, and the
//! scoped routes that decide what a signal does right now.
//!
//! Every route is a [`Route`] guard: while it lives, it is the innermost
//! route and a signal goes to it; when it is dropped, the route below it
//! (if any) takes over. With no route alive, the dispositions the process
//! had before the first route are back in place, so a signal outside any
//! route has its usual effect.
//!
//! | route | made by | a signal ... |
//! |---|---|---|
//! | forward | [`forward`] | is recorded for [`take_forwarded`] (the supervisor passes it into the sandbox) |
//! | interrupt | [`interrupt`] | interrupts a [`Cancel`] (the run stops, cleans up, exits 128+N) |
//! | wake | [`wake`] | is recorded for [`received`] and wakes a [`Cancel`]'s pipe (a model request in flight) |
//! | prompt | [`prompt`] | follows the interactive prompt's rules ([`PromptState`]) |
//!
//! The handler only reads atomics, stores atomics and calls
//! async-signal-safe functions (`write`, `tcsetattr`, `signal`, `raise`).

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::cancel::{Cancel, Inner};

/// The signals that routes handle.
pub const HANDLED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

const SLOTS: usize = 16;
const FREE: u8 = 0;
const FORWARD: u8 = 1;
const INTERRUPT: u8 = 2;
const WAKE: u8 = 3;
const PROMPT: u8 = 4;

#[allow(clippy::declare_interior_mutable_const)]
const NO_KIND: AtomicU8 = AtomicU8::new(FREE);
#[allow(clippy::declare_interior_mutable_const)]
const NO_CANCEL: AtomicPtr<Inner> = AtomicPtr::new(std::ptr::null_mut());

/// Each slot's route kind and the cancel handle it acts on (kept alive by
/// the slot's [`Route`]).
static KIND: [AtomicU8; SLOTS] = [NO_KIND; SLOTS];
static TARGET: [AtomicPtr<Inner>; SLOTS] = [NO_CANCEL; SLOTS];
/// One past the highest slot in use.
static TOP: AtomicUsize = AtomicUsize::new(0);
/// Handlers running right now (a route's drop waits for them).
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static FORWARDED: AtomicU64 = AtomicU64::new(0);
static WOKEN: AtomicU64 = AtomicU64::new(0);
static PROMPT_STATE: AtomicU8 = AtomicU8::new(PromptState::Plain as u8);
/// The terminal settings from before the prompt route touched them.
static TERMIOS: OnceLock<libc::termios> = OnceLock::new();

/// Slots in use and the dispositions from before the first route.
struct Table {
    used: [bool; SLOTS],
    saved: Vec<(Signal, SigAction)>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    used: [false; SLOTS],
    saved: Vec::new(),
});

fn bit(sig: i32) -> u64 {
    if (0..64).contains(&sig) {
        1 << sig
    } else {
        0
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    RUNNING.fetch_add(1, Ordering::SeqCst);
    dispatch(sig);
    RUNNING.fetch_sub(1, Ordering::SeqCst);
}

fn dispatch(sig: i32) {
    let top = TOP.load(Ordering::SeqCst).min(SLOTS);
    for i in (0..top).rev() {
        let kind = KIND[i].load(Ordering::SeqCst);
        // SAFETY: a non-null pointer is the `Inner` of a `Cancel` that the
        // slot's live `Route` holds; its drop clears the slot and waits for
        // running handlers before releasing it.
        let target = unsafe { TARGET[i].load(Ordering::SeqCst).as_ref() };
        match kind {
            FREE => continue,
            FORWARD => FORWARDED.fetch_or(bit(sig), Ordering::SeqCst),
            INTERRUPT => {
                if let Some(c) = target {
                    c.interrupt(sig);
                }
                0
            }
            WAKE => {
                WOKEN.fetch_or(bit(sig), Ordering::SeqCst);
                if let Some(c) = target {
                    c.wake();
                }
                0
            }
            PROMPT => {
                prompt_signal(sig, target);
                0
            }
            _ => continue,
        };
        return;
    }
    usual_effect(sig);
}

/// What `sig` does without any route: the disposition from before the
/// first route (ignored stays ignored), else the default action.
fn usual_effect(sig: i32) {
    // SAFETY: async-signal-safe calls; the default action of these
    // signals ends the process.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn prompt_signal(sig: i32, target: Option<&Inner>) {
    let state = PROMPT_STATE.load(Ordering::SeqCst);
    if state == PromptState::Busy as u8 {
        if let Some(c) = target {
            if sig == libc::SIGINT {
                c.cancel();
            } else {
                c.interrupt(sig);
            }
            return;
        }
    }
    if state == PromptState::Editing as u8 {
        if sig == libc::SIGINT {
            // A SIGINT sent by `kill` at the prompt is ignored, as shells do
            // (the editor reads Ctrl-C as a key).
            return;
        }
        restore_terminal();
    }
    usual_effect(sig);
}

/// A live route; dropping it gives the signals back to the route below.
#[must_use = "the route ends when this guard is dropped"]
pub struct Route {
    slot: usize,
    /// Keeps the cancel handle the handler acts on alive.
    _cancel: Option<Cancel>,
}

fn push(kind: u8, cancel: Option<&Cancel>) -> Route {
    let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    // Above every live route: the newest is the innermost.
    let slot = t.used.iter().rposition(|&u| u).map_or(0, |i| i + 1);
    assert!(slot < SLOTS, "more than {SLOTS} nested signal routes");
    let first = !t.used.iter().any(|&u| u);
    t.used[slot] = true;
    let ptr = cancel.map_or(std::ptr::null_mut(), |c| {
        std::sync::Arc::as_ptr(&c.0) as *mut Inner
    });
    TARGET[slot].store(ptr, Ordering::SeqCst);
    KIND[slot].store(kind, Ordering::SeqCst);
    TOP.fetch_max(slot + 1, Ordering::SeqCst);
    if first {
        let action = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for sig in HANDLED {
            // SAFETY: the handler only uses atomics and async-signal-safe calls.
            if let Ok(prev) = unsafe { sigaction(sig, &action) } {
                t.saved.push((sig, prev));
            }
        }
    }
    Route {
        slot,
        _cancel: cancel.cloned(),
    }
}

impl Route {
    /// Keep this route for the rest of the process's life.
    pub fn forever(self) {
        std::mem::forget(self);
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        KIND[self.slot].store(FREE, Ordering::SeqCst);
        TARGET[self.slot].store(std::ptr::null_mut(), Ordering::SeqCst);
        t.used[self.slot] = false;
        let top = t.used.iter().rposition(|&u| u).map_or(0, |i| i + 1);
        TOP.store(top, Ordering::SeqCst);
        if top == 0 {
            for (sig, prev) in t.saved.drain(..) {
                // SAFETY: restoring the disposition from before the first route.
                let _ = unsafe { sigaction(sig, &prev) };
            }
        }
        // A handler that read the slot before it was cleared may still use
        // the cancel handle this guard releases.
        while RUNNING.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
    }
}

/// Record signals for [`take_forwarded`] (the supervisor forwards them to
/// the sandbox). Install it before the sandbox starts, so a signal during
/// its start-up is not lost.
pub fn forward() -> Route {
    FORWARDED.store(0, Ordering::SeqCst);
    push(FORWARD, None)
}

/// The signals recorded by a forward route since the last call.
pub fn take_forwarded() -> Vec<Signal> {
    let bits = FORWARDED.swap(0, Ordering::SeqCst);
    HANDLED
        .into_iter()
        .filter(|s| bits & bit(*s as i32) != 0)
        .collect()
}

/// A signal [`Cancel::interrupt`]s `cancel` instead of killing the
/// process, so that its work stops, what it created is removed, and it
/// exits 128+N itself.
pub fn interrupt(cancel: &Cancel) -> Route {
    push(INTERRUPT, Some(cancel))
}

/// A signal wakes `cancel`'s pipe (without cancelling it) and is recorded
/// for [`received`]: a model request in flight stops and says why.
pub fn wake(cancel: &Cancel) -> Route {
    WOKEN.store(0, Ordering::SeqCst);
    push(WAKE, Some(cancel))
}

/// The first signal received by a wake route since it was made.
pub fn received() -> Option<i32> {
    let bits = WOKEN.load(Ordering::SeqCst);
    HANDLED
        .into_iter()
        .map(|s| s as i32)
        .find(|s| bits & bit(*s) != 0)
}

/// What the interactive prompt is doing, for its route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PromptState {
    /// Reading a line with the editor (raw mode: Ctrl-C is a key). A SIGINT
    /// is ignored; SIGTERM/SIGHUP restore the terminal, then end zot.
    Editing = 0,
    /// Running a turn: SIGINT cancels it, SIGTERM/SIGHUP interrupt it.
    Busy = 1,
    /// Reading a line plainly: signals have their usual effect.
    Plain = 2,
}

/// The interactive prompt's route: what a signal does follows
/// [`set_prompt_state`]. Saves the terminal's settings (restored by
/// [`restore_terminal`]) and stops the terminal echoing `^C`.
pub fn prompt(cancel: &Cancel) -> Route {
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
    push(PROMPT, Some(cancel))
}

pub fn set_prompt_state(s: PromptState) {
    PROMPT_STATE.store(s as u8, Ordering::SeqCst);
}

pub fn prompt_state() -> PromptState {
    match PROMPT_STATE.load(Ordering::SeqCst) {
        0 => PromptState::Editing,
        1 => PromptState::Busy,
        _ => PromptState::Plain,
    }
}

/// Put the terminal's settings back as they were before [`prompt`].
/// Async-signal-safe.
pub fn restore_terminal() {
    if let Some(t) = TERMIOS.get() {
        // SAFETY: a valid termios saved by prompt().
        unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The routes are process-wide: one test walks through all of them.
    #[test]
    fn innermost_route_takes_the_signal() {
        // What SIGINT did before (ignored when started in the background
        // of a shell without job control).
        let disposition = || {
            // SAFETY: querying, not changing, the disposition.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old);
                old.sa_sigaction
            }
        };
        let before = disposition();
        let c = Cancel::new().unwrap();
        let outer = interrupt(&c);
        {
            let _fwd = forward();
            // SAFETY: raising a handled signal in our own process.
            unsafe { libc::raise(libc::SIGHUP) };
            assert_eq!(take_forwarded(), vec![Signal::SIGHUP]);
            assert!(!c.is_cancelled(), "the inner route took it");
            let w = Cancel::new().unwrap();
            {
                let _wake = wake(&w);
                unsafe { libc::raise(libc::SIGTERM) };
                assert_eq!(received(), Some(libc::SIGTERM));
                assert!(!w.is_cancelled(), "a wake does not cancel");
                assert!(crate::cancel::tests::readable(&w));
            }
            assert!(take_forwarded().is_empty());
        }
        unsafe { libc::raise(libc::SIGINT) };
        assert_eq!(c.signal(), Some(libc::SIGINT));
        drop(outer);
        // With no route, the disposition from before is back.
        assert_ne!(before, on_signal as *const () as usize);
        assert_eq!(disposition(), before);
    }
}
