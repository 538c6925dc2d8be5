//! Progress on stderr for the commands that read or replay traces.

use indicatif::{ProgressBar, ProgressStyle};

/// A counter of lines read, with their rate.
pub(crate) fn lines() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos} lines read ({per_sec}, {elapsed})")
            .expect("valid template"),
    );
    bar
}

/// A bar over `len` calls.
pub(crate) fn calls(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg:32!} [{bar:30}] {pos}/{len} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}
