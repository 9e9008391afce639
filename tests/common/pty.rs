//! Driving the real binary on a pseudo-terminal (rexpect): the child gets
//! a new session with the pty as its controlling terminal and as
//! stdin/stdout/stderr, as in a terminal emulator. Every byte it writes is
//! kept, so tests can look at escape sequences (colours) as well as text.

use std::process::{Command, Stdio};
use std::time::Duration;

use rexpect::session::PtySession;

/// How long one expectation waits.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub struct Pty {
    pub session: PtySession,
    /// Everything read from the terminal so far.
    pub transcript: String,
}

/// Control keys.
pub const CTRL_C: &str = "\x03";
pub const CTRL_D: &str = "\x04";
pub const UP: &str = "\x1b[A";
pub const ALT_ENTER: &str = "\x1b\r";

impl Pty {
    /// Start `cmd` on a new 120x40 terminal. `cmd` is run with exactly the
    /// environment it sets (as [`World::cmd`](super::run::World::cmd)'s
    /// commands do, from a cleared one), through `sh`, which sets the
    /// terminal's size first.
    pub fn spawn(cmd: Command) -> Pty {
        let mut sh = Command::new("/bin/sh");
        sh.arg("-c")
            .arg("stty rows 40 cols 120 && exec \"$0\" \"$@\"")
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .env_clear()
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                sh.env(k, v);
            }
        }
        if let Some(d) = cmd.get_current_dir() {
            sh.current_dir(d);
        }
        let session = rexpect::session::spawn_command(sh, Some(TIMEOUT.as_millis() as u64))
            .expect("spawn on a pty");
        Pty {
            session,
            transcript: String::new(),
        }
    }

    /// Wait for `needle`; returns what came before it (since the last
    /// expectation). Panics with the transcript when it does not come.
    pub fn expect(&mut self, needle: &str) -> String {
        match self.session.exp_string(needle) {
            Ok(before) => {
                self.transcript.push_str(&before);
                self.transcript.push_str(needle);
                before
            }
            Err(e) => panic!(
                "waiting for {needle:?}: {e}\n--- transcript ---\n{}",
                self.transcript
            ),
        }
    }

    /// Type `s` (no newline added).
    pub fn send(&mut self, s: &str) {
        self.session.send(s).expect("write to the pty");
        self.session.flush().expect("flush the pty");
    }

    /// Type `s` and Enter.
    pub fn line(&mut self, s: &str) {
        self.send(&format!("{s}\r"));
    }

    /// Wait for `prompt` (the line editor is reading: control keys now
    /// reach it rather than the terminal's cooked mode), then send `key`.
    pub fn at_prompt(&mut self, prompt: &str, key: &str) {
        self.expect(prompt);
        self.send(key);
    }

    /// Wait for the program to end: everything it still wrote, and its
    /// exit code (`None`: killed by a signal). A program that does not end
    /// within [`TIMEOUT`] is killed and the test fails.
    pub fn finish(&mut self) -> (String, Option<i32>) {
        let rest = match self.session.exp_eof() {
            Ok(rest) => rest,
            Err(e) => {
                let _ = self
                    .session
                    .process
                    .signal(nix::sys::signal::Signal::SIGKILL);
                panic!(
                    "the program did not end: {e}\n--- transcript ---\n{}",
                    self.transcript
                );
            }
        };
        self.transcript.push_str(&rest);
        let status = self.session.process.wait().expect("wait");
        let code = match status {
            nix::sys::wait::WaitStatus::Exited(_, c) => Some(c),
            _ => None,
        };
        (rest, code)
    }
}

/// True when `s` has an SGR (colour/style) escape sequence.
pub fn has_sgr(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == 0x1b && b.get(i + 1) == Some(&b'[') && {
            let mut j = i + 2;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b';') {
                j += 1;
            }
            j > i + 2 && b.get(j) == Some(&b'm')
        }
    })
}
