//! `[record]`: calls recorded for a re-benchmark on your own traffic.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Calls recorded to a file (`[record]`, off unless the table is there): a sampled share of
/// them, one JSON line each, for `laneway twin fit`, `bench --trace` and `advise` to work from
/// (see [`crate::telemetry::record`]). No prompt or answer text unless `include_text`; the
/// shared prompt prefixes are kept as keyed digests only.
///
/// ```
/// let c = laneway::Config::from_toml_str("[record]\npath = \"/tmp/laneway-trace.jsonl\"\nsample = 0.1\n").unwrap();
/// let r = c.record.unwrap();
/// assert_eq!(r.sample, 0.1);
/// assert_eq!(r.max_bytes, 100_000_000);
/// assert_eq!(r.key_env, "LANEWAY_RECORD_KEY");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordConfig {
    /// The file the lines go to (created, with its directory). None: the calls are kept in
    /// memory only, folded for `Router::advice` (and for the app's OpenTelemetry logs, where
    /// the router has a logger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<std::path::PathBuf>,
    /// The share of calls recorded, from 0 to 1 (default 1: every call).
    pub sample: f64,
    /// Past this size (bytes; default 100 MB) the file is rotated: it becomes `path.1`, the
    /// one before `path.2`, and so on.
    pub max_bytes: u64,
    /// How many rotated files are kept (default 5).
    pub keep: u32,
    /// The environment variable that holds this deployment's key for the prefixes' digests
    /// (default `LANEWAY_RECORD_KEY`). Without it a random key is drawn per process: digests
    /// then match within one process's files only.
    pub key_env: String,
    /// Also record each call's prompt and answer text (default false).
    pub include_text: bool,
    /// Lines waiting for the writer at most (default 10,000); past it a call's line is dropped
    /// and counted, never waited for.
    pub queue: usize,
    /// How often the targets' load counters (every call, not only the sampled) are written
    /// (milliseconds; default 10 s).
    #[serde(with = "crate::types::units::serde_millis")]
    pub load_every: Duration,
}
