//! Progress on stderr for the commands that read or replay traces, and the one reader of
//! trace files they share.

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

/// Reads trace files in order as one stream, handing each line to `each`, with a progress
/// line on stderr; names the first bad lines of each file by number and says how many were
/// skipped. Returns that count.
pub(crate) fn read_traces(
    paths: &[std::path::PathBuf],
    mut each: impl FnMut(laneway::telemetry::record::Line),
) -> anyhow::Result<u64> {
    use anyhow::Context as _;
    let progress = lines();
    let mut bad = 0;
    for path in paths {
        let mut reader = laneway::telemetry::record::TraceReader::open(path)
            .with_context(|| format!("reading {}", path.display()))?;
        for line in reader.by_ref() {
            progress.inc(1);
            each(line);
        }
        bad += reader.bad_count;
        for b in reader.bad.iter().take(5) {
            eprintln!("{}:{}: skipped: {}", path.display(), b.number, b.reason);
        }
    }
    progress.finish_and_clear();
    if bad > 0 {
        eprintln!("{bad} bad lines skipped");
    }
    Ok(bad)
}
