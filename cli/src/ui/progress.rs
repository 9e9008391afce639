//! Progress on the terminal (indicatif, on stderr, drawn only when stderr
//! is a terminal): the spinner of the interactive mode and the bars of
//! long downloads and packing. Libraries report progress through callbacks;
//! only this module draws.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner with a message and the time since it started.
pub struct Spinner(ProgressBar);

impl Spinner {
    pub fn start(msg: &str, color: bool) -> Spinner {
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let template = if color {
            "{spinner:.cyan} {msg} {elapsed:.dim}"
        } else {
            "{spinner} {msg} {elapsed}"
        };
        if let Ok(s) = ProgressStyle::with_template(template) {
            pb.set_style(s.tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "));
        }
        pb.set_message(msg.to_string());
        pb.enable_steady_tick(Duration::from_millis(100));
        Spinner(pb)
    }

    /// Remove it from the screen.
    pub fn clear(self) {
        self.0.finish_and_clear();
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.0.finish_and_clear();
        }
    }
}

/// A byte-count bar (a total when known, else a spinner with the count).
pub struct Bytes(ProgressBar);

impl Bytes {
    pub fn start(what: &str, total: Option<u64>) -> Bytes {
        let pb = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        let color = super::style::color_for(&std::io::stderr());
        let template = match (total.is_some(), color) {
            (true, true) => {
                "{msg} [{bar:30.cyan/blue}] {bytes}/{total_bytes} {bytes_per_sec} {eta}"
            }
            (true, false) => "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            (false, true) => "{spinner:.cyan} {msg} {bytes} {bytes_per_sec}",
            (false, false) => "{spinner} {msg} {bytes} {bytes_per_sec}",
        };
        if let Ok(s) = ProgressStyle::with_template(template) {
            pb.set_style(s.progress_chars("=> "));
        }
        pb.set_message(what.to_string());
        Bytes(pb)
    }

    /// Draw `p` on the bar in `slot` (started at the first report,
    /// removed at the last).
    pub fn follow(slot: &mut Option<Bytes>, p: &zot_agent::ui::Progress<'_>) {
        if p.finished {
            *slot = None;
        } else {
            slot.get_or_insert_with(|| Bytes::start(p.what, p.total))
                .set(p.done, p.total);
        }
    }

    pub fn set(&self, done: u64, total: Option<u64>) {
        if let Some(t) = total {
            self.0.set_length(t);
        }
        self.0.set_position(done);
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
