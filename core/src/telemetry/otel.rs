//! OpenTelemetry metrics: each call recorded into instruments made from the
//! [`super::catalog`], named after the GenAI semantic conventions' client instruments where
//! they name the measure (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.time_to_first_chunk`) and `laneway.*` otherwise. The Prometheus
//! text has the same metrics and labels, and a Python or Node application's meter gets the
//! same instruments from the [`super::host_meter`].
//!
//! Laneway depends on the OpenTelemetry API only; the application installs the SDK and its
//! exporter (OTLP, Prometheus, stdout) and hands Laneway a [`Meter`] with
//! [`RouterBuilder::opentelemetry_meter`](crate::RouterBuilder::opentelemetry_meter).

use opentelemetry::metrics::{AsyncInstrument, Counter, Histogram, Meter};

use std::sync::Arc;

use super::catalog::{CATALOG, Kind, MetricId};
use super::host_meter::Measurement;
use super::measure::Sink;

enum Instrument {
    Histogram(Histogram<f64>),
    Counter(Counter<f64>),
}

/// The instruments one router records into, one per catalog metric recorded as calls happen
/// (the observed ones are [`observe`]d).
pub(crate) struct OtelInstruments {
    by_id: Vec<(MetricId, Instrument)>,
}

impl OtelInstruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        let by_id = CATALOG
            .iter()
            .filter(|m| !m.is_observed())
            .map(|m| {
                let instrument = match m.kind {
                    Kind::Distribution => Instrument::Histogram(
                        meter
                            .f64_histogram(m.name)
                            .with_unit(m.unit.otel())
                            .with_description(m.help)
                            .with_boundaries(m.buckets().to_vec())
                            .build(),
                    ),
                    Kind::Counter => Instrument::Counter(
                        meter
                            .f64_counter(m.name)
                            .with_unit(m.unit.otel())
                            .with_description(m.help)
                            .build(),
                    ),
                    Kind::UpDown | Kind::Gauge => unreachable!("observed: see `observe`"),
                };
                (m.id, instrument)
            })
            .collect();
        Self { by_id }
    }
}

impl Sink for OtelInstruments {
    fn record_all(&self, batch: super::measure::Batch) {
        for (id, value, attrs) in batch {
            match self.by_id.iter().find(|(i, _)| *i == id).map(|(_, x)| x) {
                Some(Instrument::Histogram(h)) => h.record(value, &attrs),
                Some(Instrument::Counter(c)) => c.add(value, &attrs),
                None => {}
            }
        }
    }
}

/// How long one reading of the router's state serves a collection's callbacks.
const COLLECTION: std::time::Duration = std::time::Duration::from_millis(100);

/// Makes `meter`'s observable instruments of the catalog's observed metrics (gauges, the
/// shared state's counts), each reading `source` when the meter collects; `source` answers
/// `None` once the router is gone, and nothing is observed then. Routers that share one meter
/// (the same provider and scope) would observe the same series: give each its own.
pub(crate) fn observe(
    meter: &Meter,
    source: impl Fn() -> Option<Vec<Measurement>> + Send + Sync + 'static,
) {
    // One collection calls every instrument's callback in turn: the router's state is read
    // once for all of them, so that they agree.
    let last: std::sync::Mutex<Option<(std::time::Instant, Arc<Vec<Measurement>>)>> =
        std::sync::Mutex::new(None);
    let source = Arc::new(move || -> Arc<Vec<Measurement>> {
        let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
        let now = crate::time::now();
        match &*last {
            Some((at, values)) if now.duration_since(*at) < COLLECTION => Arc::clone(values),
            _ => {
                let values = Arc::new(source().unwrap_or_default());
                *last = Some((now, Arc::clone(&values)));
                values
            }
        }
    });
    for m in CATALOG.iter().filter(|m| m.is_observed()) {
        let source = Arc::clone(&source);
        let name = m.name;
        let callback = move |into: &dyn AsyncInstrument<f64>| {
            for x in source().iter() {
                if x.metric == name {
                    into.observe(x.value, &x.attributes);
                }
            }
        };
        match m.kind {
            Kind::UpDown => {
                meter
                    .f64_observable_up_down_counter(m.name)
                    .with_unit(m.unit.otel())
                    .with_description(m.help)
                    .with_callback(callback)
                    .build();
            }
            Kind::Counter => {
                meter
                    .f64_observable_counter(m.name)
                    .with_unit(m.unit.otel())
                    .with_description(m.help)
                    .with_callback(callback)
                    .build();
            }
            Kind::Gauge | Kind::Distribution => {
                meter
                    .f64_observable_gauge(m.name)
                    .with_unit(m.unit.otel())
                    .with_description(m.help)
                    .with_callback(callback)
                    .build();
            }
        }
    }
}

/// The trace's lines as OpenTelemetry log records on a logger of `provider` (`[record]`'s "an
/// OpenTelemetry log exporter": the app's logger provider and its exporter carry them): one
/// record per line, its event name `laneway.record.<line>` (`header`, `call`, `outcome`,
/// `load`), its body the line's JSON, as a file would hold it.
pub fn record_log_sink<P>(provider: &P) -> super::record::LineSink
where
    P: opentelemetry::logs::LoggerProvider,
    P::Logger: Send + 'static,
{
    use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
    let logger = provider.logger("laneway");
    Box::new(move |lines: &[super::record::Line]| {
        for line in lines {
            let kind = line.kind();
            let event = match line {
                super::record::Line::Header(_) => "laneway.record.header",
                super::record::Line::Call(_) => "laneway.record.call",
                super::record::Line::Outcome(_) => "laneway.record.outcome",
                super::record::Line::Load(_) => "laneway.record.load",
            };
            let Ok(json) = serde_json::to_string(line) else {
                continue;
            };
            let mut record = logger.create_log_record();
            record.set_event_name(event);
            record.set_severity_number(Severity::Info);
            record.set_severity_text("INFO");
            record.set_timestamp(std::time::SystemTime::now());
            record.set_body(AnyValue::from(json));
            record.add_attribute("laneway.record.line", kind);
            logger.emit(record);
        }
    })
}
