//! Laneway's metrics for a host that is not Rust: the same measurements a Rust application's
//! OpenTelemetry meter gets ([`super::otel`]), kept in a bounded queue that the Python or
//! Node binding drains on a thread of its own into instruments it made on the application's
//! meter from the same catalog ([`instruments`]). Gauges are not queued: the host observes
//! them when its meter collects ([`crate::Router::observe`]), so a dropped measurement can never
//! leave one wrong.

use opentelemetry::KeyValue;

use super::catalog::{CATALOG, Kind, metric};
use super::host_queue::HostQueue;
use super::measure::Sink;

/// How many measurements wait for the host at most (about a thousand calls' worth); past it
/// a measurement is dropped and counted.
pub const CAPACITY: usize = 16_384;

/// One measurement for the host to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The instrument's name, as in the catalog.
    pub metric: &'static str,
    /// A histogram's sample, a counter's increment, or a gauge's value.
    pub value: f64,
    /// Its attributes (bounded: from the configuration and the plan, never from a call's text).
    pub attributes: Vec<KeyValue>,
}

impl Measurement {
    /// The attributes as text pairs, for a binding to convert.
    pub fn attribute_pairs(&self) -> impl Iterator<Item = (&str, String)> {
        self.attributes
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.as_str().into_owned()))
    }
}

/// A router's measurements waiting for the host.
#[derive(Debug)]
pub struct HostMeter {
    queue: HostQueue<Measurement>,
}

impl Default for HostMeter {
    fn default() -> Self {
        HostMeter {
            queue: HostQueue::new(CAPACITY),
        }
    }
}

impl HostMeter {
    /// Up to `max` measurements, oldest first, waiting at most `wait` for the first.
    pub fn drain(&self, max: usize, wait: std::time::Duration) -> Vec<Measurement> {
        self.queue.drain(max, wait)
    }

    /// Waits at most `wait` for a measurement, taking none; whether one is there.
    pub fn wait(&self, wait: std::time::Duration) -> bool {
        self.queue.wait(wait)
    }

    /// Measurements dropped because the host did not drain them in time.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }
}

impl Sink for HostMeter {
    fn record_all(&self, batch: super::measure::Batch) {
        let measurements = batch.into_iter().filter_map(|(id, value, attributes)| {
            let m = metric(id);
            (!m.is_observed()).then_some(Measurement {
                metric: m.name,
                value,
                attributes,
            })
        });
        self.queue.push_all(measurements);
    }
}

/// What a host makes one instrument from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InstrumentSpec {
    /// The instrument's name.
    pub name: &'static str,
    /// The metric's name in the Prometheus text (`router.prometheus()`).
    pub prometheus_name: String,
    /// `histogram` or `counter` (fed from [`HostMeter::drain`]), or `observable_gauge` and
    /// `observable_up_down_counter` (observed from [`crate::Router::observe`] at collection).
    pub kind: &'static str,
    /// Its unit, as OpenTelemetry writes it.
    pub unit: &'static str,
    /// Its description.
    pub description: &'static str,
    /// A histogram's bucket boundaries (the GenAI conventions' advice); empty otherwise.
    pub buckets: &'static [f64],
}

/// Every instrument a host makes: the whole catalog, each as the Rust side makes it.
pub fn instruments() -> Vec<InstrumentSpec> {
    CATALOG
        .iter()
        .map(|m| InstrumentSpec {
            name: m.name,
            prometheus_name: m.prometheus_name(),
            kind: match (m.kind, m.is_observed()) {
                (Kind::Distribution, _) => "histogram",
                (Kind::Counter, false) => "counter",
                (Kind::Counter, true) => "observable_counter",
                (Kind::UpDown, _) => "observable_up_down_counter",
                (Kind::Gauge, _) => "observable_gauge",
            },
            unit: m.unit.otel(),
            description: m.help,
            buckets: m.buckets(),
        })
        .collect()
}
