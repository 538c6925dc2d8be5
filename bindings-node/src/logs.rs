//! Laneway's logs into a Node logger: a thread drains the core's host log and hands each batch
//! (JSON) to an unreferenced thread-safe function, so that logging never keeps the process
//! alive and the runtime's threads never wait on JavaScript. Conversion only; `index.js` picks
//! the logger.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use laneway::telemetry::host_log::{HostLog, LogLevel};

/// What receives each batch of records: a JSON array of `{level, logger, message, fields,
/// repeated}`. Weak: it does not keep the event loop alive.
pub type LogSink = ThreadsafeFunction<String, (), String, napi::Status, false, true>;

static STARTED: AtomicBool = AtomicBool::new(false);

/// Starts the thread that hands the core's records to `sink`, once per process; false when
/// Laneway's logs go to another `tracing` subscriber of the process (or it already started).
#[napi]
pub fn start_logs(sink: LogSink) -> bool {
    let Some(log) = HostLog::install() else {
        return false;
    };
    if STARTED.swap(true, Ordering::SeqCst) {
        return false;
    }
    std::thread::Builder::new()
        .name("laneway-logs".into())
        .spawn(move || {
            loop {
                let records = log.drain(256, Duration::from_millis(500));
                if records.is_empty() {
                    continue;
                }
                if let Ok(json) = serde_json::to_string(&records) {
                    sink.call(json, ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        })
        .is_ok()
}

/// Keeps the core's records at `level` (`error`, `warn`, `info`, `debug`, `trace`) and above;
/// `off` (or an unknown word) keeps none.
#[napi]
pub fn set_log_level(level: String) {
    if let Some(log) = HostLog::install() {
        log.set_level(LogLevel::named(&level));
    }
}

/// Records the core dropped because they were not drained in time.
#[napi]
pub fn log_dropped() -> i64 {
    HostLog::install().map_or(0, |log| i64::try_from(log.dropped()).unwrap_or(i64::MAX))
}
