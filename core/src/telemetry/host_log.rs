//! Laneway's `tracing` events for a host that is not Rust (Python's `logging`, a Node logger):
//! a `tracing` layer keeps each event at or above the level the host asks for as a
//! [`LogRecord`] in a bounded buffer, and the host drains it on a thread of its own. No event
//! below the level costs more than an atomic load, and the runtime's threads never wait on the
//! host (a full buffer drops the record and counts it). A warning or error that repeats (the
//! same message with the same fields) within a minute is counted, not said again; the next
//! time it is said carries the count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

use super::host_queue::HostQueue;

/// How long a repeated warning is counted instead of said.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(60);

/// How many records wait for the host at most; past it a record is dropped and counted.
pub const CAPACITY: usize = 4096;

/// How many distinct warnings are tracked for repeats at most (past it, the tracking restarts).
const REPEATS_TRACKED: usize = 512;

/// A record's severity, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Something failed.
    Error = 1,
    /// Something is wrong and Laneway works around it (shared state degraded, a file unread).
    Warn = 2,
    /// A change of state worth knowing (Redis back).
    Info = 3,
    /// What routing did and why, in detail.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl LogLevel {
    fn of(level: &Level) -> Self {
        match *level {
            Level::ERROR => LogLevel::Error,
            Level::WARN => LogLevel::Warn,
            Level::INFO => LogLevel::Info,
            Level::DEBUG => LogLevel::Debug,
            Level::TRACE => LogLevel::Trace,
        }
    }

    /// The level of Python's `logging` number (`logging.WARNING` is 30): the most verbose
    /// level the number lets through; above 40 (`CRITICAL`, a disabled logger) none.
    ///
    /// ```
    /// use laneway::telemetry::host_log::LogLevel;
    /// assert_eq!(LogLevel::of_python(30), Some(LogLevel::Warn));
    /// assert_eq!(LogLevel::of_python(10), Some(LogLevel::Debug));
    /// assert_eq!(LogLevel::of_python(1), Some(LogLevel::Trace));
    /// assert_eq!(LogLevel::of_python(50), None);
    /// ```
    pub fn of_python(levelno: i64) -> Option<Self> {
        match levelno {
            i64::MIN..=5 => Some(LogLevel::Trace),
            6..=10 => Some(LogLevel::Debug),
            11..=20 => Some(LogLevel::Info),
            21..=30 => Some(LogLevel::Warn),
            31..=40 => Some(LogLevel::Error),
            _ => None,
        }
    }

    /// Python's `logging` number for it (`TRACE` is 5, below `DEBUG`).
    pub fn python_levelno(self) -> i64 {
        match self {
            LogLevel::Error => 40,
            LogLevel::Warn => 30,
            LogLevel::Info => 20,
            LogLevel::Debug => 10,
            LogLevel::Trace => 5,
        }
    }

    /// Its name: `error`, `warn`, `info`, `debug`, `trace`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    /// The level of a name (`warning` reads as `warn`).
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return None,
        })
    }
}

/// One event for the host: no prompt, answer or credential is ever logged by the core.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogRecord {
    /// Its severity.
    pub level: LogLevel,
    /// The logger it belongs to, dotted: `laneway.state.shared` for the core's
    /// `laneway::state::shared`.
    pub logger: String,
    /// The message.
    pub message: String,
    /// Its structured fields, by name, as text.
    pub fields: Vec<(String, String)>,
    /// How many times the same warning was counted, not said, since it was last said.
    pub repeated: u64,
}

/// The process's buffer of records for the host, and the level it lets through.
#[derive(Debug)]
pub struct HostLog {
    records: HostQueue<LogRecord>,
    /// The most verbose level kept, as `LogLevel as u8`; 0 keeps none.
    max_level: AtomicU8,
    repeats: Mutex<HashMap<(String, String), Repeat>>,
}

#[derive(Debug)]
struct Repeat {
    said_at: Instant,
    counted: u64,
}

static HOST_LOG: OnceLock<Option<Arc<HostLog>>> = OnceLock::new();

impl HostLog {
    /// The process's host log, installed as the global `tracing` subscriber the first time it
    /// is asked for (keeping warnings and errors until the host sets a level). `None` when
    /// another global subscriber was installed first: Laneway's events go there.
    pub fn install() -> Option<Arc<HostLog>> {
        HOST_LOG
            .get_or_init(|| {
                use tracing_subscriber::layer::SubscriberExt as _;
                let (layer, log) = HostLog::layer(LogLevel::Warn);
                let subscriber = tracing_subscriber::registry().with(layer);
                tracing::subscriber::set_global_default(subscriber)
                    .is_ok()
                    .then_some(log)
            })
            .clone()
    }

    fn new(level: LogLevel) -> Self {
        HostLog {
            records: HostQueue::new(CAPACITY),
            max_level: AtomicU8::new(level as u8),
            repeats: Mutex::new(HashMap::new()),
        }
    }

    /// A layer over a new host log, for a host that builds its own subscriber (and tests).
    pub fn layer(level: LogLevel) -> (HostLogLayer, Arc<HostLog>) {
        let log = Arc::new(HostLog::new(level));
        (HostLogLayer(Arc::clone(&log)), log)
    }

    /// Keeps records at `level` and above from now on; `None` keeps none.
    pub fn set_level(&self, level: Option<LogLevel>) {
        let new = level.map_or(0, |l| l as u8);
        if self.max_level.swap(new, Ordering::Relaxed) != new {
            // Callsites cache whether they are enabled: ask them again.
            tracing::callsite::rebuild_interest_cache();
        }
    }

    /// The most verbose level kept, if any.
    pub fn level(&self) -> Option<LogLevel> {
        match self.max_level.load(Ordering::Relaxed) {
            1 => Some(LogLevel::Error),
            2 => Some(LogLevel::Warn),
            3 => Some(LogLevel::Info),
            4 => Some(LogLevel::Debug),
            5 => Some(LogLevel::Trace),
            _ => None,
        }
    }

    /// Records dropped because the host did not drain them in time.
    pub fn dropped(&self) -> u64 {
        self.records.dropped()
    }

    /// Waits at most `wait` for a record to be kept, taking none; whether one is there.
    pub fn wait(&self, wait: Duration) -> bool {
        self.records.wait(wait)
    }

    /// Up to `max` records, oldest first, waiting at most `wait` for the first. The host calls
    /// this on a thread of its own (Python: with the GIL released).
    pub fn drain(&self, max: usize, wait: Duration) -> Vec<LogRecord> {
        self.records.drain(max, wait)
    }

    fn enabled(&self, level: &Level) -> bool {
        LogLevel::of(level) as u8 <= self.max_level.load(Ordering::Relaxed)
    }

    fn keep(&self, mut record: LogRecord) {
        if record.level <= LogLevel::Warn {
            let mut repeats = self.repeats.lock().unwrap_or_else(|e| e.into_inner());
            // The same warning about the same thing: a breaker opening on another target is
            // another warning.
            let about: String = record
                .fields
                .iter()
                .map(|(k, v)| format!("{k}={v};"))
                .collect();
            let key = (record.logger.clone(), format!("{}|{about}", record.message));
            let now = crate::time::now();
            match repeats.get_mut(&key) {
                Some(r) if now.duration_since(r.said_at) < REPEAT_WINDOW => {
                    r.counted += 1;
                    return;
                }
                Some(r) => {
                    record.repeated = std::mem::take(&mut r.counted);
                    r.said_at = now;
                }
                None => {
                    if repeats.len() >= REPEATS_TRACKED {
                        repeats.clear();
                    }
                    repeats.insert(
                        key,
                        Repeat {
                            said_at: now,
                            counted: 0,
                        },
                    );
                }
            }
        }
        self.records.push(record);
    }
}

/// The `tracing` layer that fills a [`HostLog`].
#[derive(Debug)]
pub struct HostLogLayer(Arc<HostLog>);

impl<S: Subscriber> Layer<S> for HostLogLayer {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        // The level can change at any time: ask `enabled` each time.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        // Only Laneway's events: no span is recorded (a record carries its event's fields),
        // and other crates' events are the host's own business.
        metadata.is_event()
            && metadata.target().starts_with("laneway")
            && self.0.enabled(metadata.level())
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if !self.0.enabled(meta.level()) || !meta.target().starts_with("laneway") {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields.message.unwrap_or_default();
        self.0.keep(LogRecord {
            level: LogLevel::of(meta.level()),
            logger: meta.target().replace("::", "."),
            message: message
                .strip_prefix("laneway: ")
                .map(str::to_string)
                .unwrap_or(message),
            fields: fields.others,
            repeated: 0,
        });
    }
}

#[derive(Default)]
struct Fields {
    message: Option<String>,
    others: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, format!("{value:?}"));
    }
}

impl Fields {
    fn put(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.message = Some(value);
        } else {
            self.others.push((field.name().to_string(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    fn with_log<T>(level: LogLevel, f: impl FnOnce() -> T) -> (T, Arc<HostLog>) {
        let (layer, log) = HostLog::layer(level);
        let subscriber = tracing_subscriber::registry().with(layer);
        (tracing::subscriber::with_default(subscriber, f), log)
    }

    #[test]
    fn events_at_the_level_are_kept_with_their_fields_and_module_logger() {
        let ((), log) = with_log(LogLevel::Info, || {
            tracing::warn!(error = "refused", "laneway: shared state unusable");
            tracing::info!(region = "us-east-1", "region back");
            tracing::debug!("too verbose");
        });
        let records = log.drain(10, Duration::ZERO);
        assert_eq!(records.len(), 2, "{records:?}");
        assert_eq!(records[0].level, LogLevel::Warn);
        assert_eq!(records[0].message, "shared state unusable");
        assert_eq!(records[0].logger, module_path!().replace("::", "."));
        assert_eq!(
            records[0].fields,
            [("error".to_string(), "refused".to_string())]
        );
        assert_eq!(records[1].fields[0].1, "us-east-1");
    }

    #[test]
    fn a_repeated_warning_is_counted_and_other_crates_are_not_kept() {
        let ((), log) = with_log(LogLevel::Warn, || {
            for _ in 0..5 {
                tracing::warn!(attempt = 1, "laneway: shared state unusable");
            }
            tracing::warn!(target: "hyper", "not ours");
        });
        let records = log.drain(10, Duration::ZERO);
        assert_eq!(records.len(), 1, "{records:?}");
        let repeats = log.repeats.lock().unwrap();
        assert_eq!(repeats.values().next().unwrap().counted, 4);
    }

    #[test]
    fn a_full_buffer_drops_and_counts_and_no_level_keeps_nothing() {
        let ((), log) = with_log(LogLevel::Info, || {
            for i in 0..CAPACITY + 10 {
                tracing::info!(i, "laneway: step");
            }
        });
        assert_eq!(log.dropped(), 10);
        assert_eq!(log.drain(usize::MAX, Duration::ZERO).len(), CAPACITY);
        log.set_level(None);
        assert_eq!(log.level(), None);
        let (layer, log) = HostLog::layer(LogLevel::Warn);
        log.set_level(None);
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            tracing::error!("laneway: failed")
        });
        assert!(log.drain(10, Duration::ZERO).is_empty());
    }
}
