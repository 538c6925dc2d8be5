//! OpenTelemetry metrics: each call recorded into instruments made from the
//! [`super::catalog`], named after the GenAI semantic conventions where they name the
//! measure (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
//! `gen_ai.server.time_to_first_token`, `gen_ai.server.time_per_output_token`) and `laneway.*`
//! otherwise. The Prometheus text has the same metrics and labels.
//!
//! Laneway depends on the OpenTelemetry API only; the application installs the SDK and its
//! exporter (OTLP, Prometheus, stdout) and hands Laneway a [`Meter`] with
//! [`RouterBuilder::opentelemetry_meter`](crate::RouterBuilder::opentelemetry_meter).

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};

use super::catalog::{self, CATALOG, Kind, MetricId, Scope, Unit};
use super::{CallSlo, LaneRef};
use crate::types::ErrorKind;
use crate::types::GenerateResponse;
use crate::types::SloClass;

/// Bucket boundaries of the GenAI conventions for durations, in seconds.
const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Bucket boundaries of the GenAI conventions for time per output token, in seconds.
const PER_TOKEN_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Bucket boundaries of the GenAI conventions for token counts.
const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// Output tokens per second.
const RATE_BUCKETS: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0,
];

enum Instrument {
    Histogram(Histogram<f64>),
    Counter(Counter<f64>),
    UpDown(UpDownCounter<i64>),
}

/// The instruments one router records into, one per catalog metric (shared-state ones
/// excepted: they live in the snapshot).
pub(crate) struct OtelInstruments {
    by_id: Vec<(MetricId, Instrument)>,
}

fn lane_attributes(lane: LaneRef<'_>) -> Vec<KeyValue> {
    lane.labels()
        .map(|(k, v)| KeyValue::new(k, v.to_string()))
        .collect()
}

fn with(
    base: &[KeyValue],
    key: &'static str,
    value: impl Into<opentelemetry::Value>,
) -> Vec<KeyValue> {
    let mut v = Vec::with_capacity(base.len() + 1);
    v.extend_from_slice(base);
    v.push(KeyValue::new(key, value));
    v
}

impl OtelInstruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        let by_id = CATALOG
            .iter()
            .filter(|m| m.scope != Scope::Shared)
            .map(|m| {
                let instrument = match m.kind {
                    Kind::Distribution => {
                        let buckets = match (m.id, m.unit) {
                            (MetricId::TimePerOutputToken, _) => PER_TOKEN_BUCKETS,
                            (_, Unit::Seconds) => DURATION_BUCKETS,
                            (_, Unit::TokensPerSecond) => RATE_BUCKETS,
                            _ => TOKEN_BUCKETS,
                        };
                        Instrument::Histogram(
                            meter
                                .f64_histogram(m.name)
                                .with_unit(m.unit.otel())
                                .with_description(m.help)
                                .with_boundaries(buckets.to_vec())
                                .build(),
                        )
                    }
                    Kind::Counter => Instrument::Counter(
                        meter
                            .f64_counter(m.name)
                            .with_unit(m.unit.otel())
                            .with_description(m.help)
                            .build(),
                    ),
                    Kind::Gauge => Instrument::UpDown(
                        meter
                            .i64_up_down_counter(m.name)
                            .with_unit(m.unit.otel())
                            .with_description(m.help)
                            .build(),
                    ),
                };
                (m.id, instrument)
            })
            .collect();
        Self { by_id }
    }

    fn record(&self, id: MetricId, value: f64, attrs: &[KeyValue]) {
        match self.by_id.iter().find(|(i, _)| *i == id).map(|(_, x)| x) {
            Some(Instrument::Histogram(h)) => h.record(value, attrs),
            Some(Instrument::Counter(c)) => c.add(value, attrs),
            Some(Instrument::UpDown(c)) => c.add(value as i64, attrs),
            None => {}
        }
    }

    pub(crate) fn call_started(&self) {
        self.record(MetricId::InFlight, 1.0, &[]);
    }

    pub(crate) fn call_ended(&self) {
        self.record(MetricId::InFlight, -1.0, &[]);
    }

    pub(crate) fn queue_joined(&self, class: SloClass) {
        let class = [KeyValue::new(catalog::SLO_CLASS, class.as_str())];
        self.record(MetricId::QueueDepth, 1.0, &class);
    }

    pub(crate) fn queue_left(&self, class: SloClass, waited: std::time::Duration) {
        let class = [KeyValue::new(catalog::SLO_CLASS, class.as_str())];
        self.record(MetricId::QueueDepth, -1.0, &class);
        self.record(MetricId::QueueWait, waited.as_secs_f64(), &class);
    }

    pub(crate) fn success(&self, lane: LaneRef<'_>, r: &GenerateResponse, escalated: bool) {
        let attrs = lane_attributes(lane);
        let t = &r.timings;
        self.record(MetricId::Duration, t.total.as_secs_f64(), &attrs);
        if let Some(ttft) = t.ttft {
            self.record(MetricId::TimeToFirstToken, ttft.as_secs_f64(), &attrs);
        }
        if let Some(itl) = t.inter_token {
            self.record(MetricId::TimePerOutputToken, itl.mean.as_secs_f64(), &attrs);
        }
        if let Some(rate) = t
            .output_tokens_per_second
            .filter(|v| super::rate_is_recorded(*v))
        {
            self.record(MetricId::OutputRate, rate, &attrs);
        }
        self.record(MetricId::Requests, 1.0, &attrs);
        let u = &r.usage;
        for (ty, n) in [
            ("input", u.total_input_tokens()),
            ("output", u.output_tokens),
        ] {
            self.record(
                MetricId::TokenUsage,
                f64::from(n),
                &with(&attrs, catalog::TOKEN_TYPE, ty),
            );
        }
        for (op, n) in [
            ("read", u.cache_read_tokens),
            ("write", u.cache_write_tokens),
        ] {
            if n > 0 {
                self.record(
                    MetricId::CacheTokens,
                    f64::from(n),
                    &with(&attrs, catalog::CACHE_OPERATION, op),
                );
            }
        }
        self.record(MetricId::Cost, r.cost_usd, &attrs);
        let failed = r.decision.failed_attempts.len();
        if failed > 0 {
            self.record(MetricId::Failovers, failed as f64, &attrs);
        }
        if r.decision.hedge.is_some() {
            self.record(MetricId::Hedges, 1.0, &attrs);
        }
        if escalated {
            self.record(MetricId::Escalations, 1.0, &attrs);
        }
    }

    pub(crate) fn failure(&self, lane: LaneRef<'_>, kind: ErrorKind) {
        let attrs = with(&lane_attributes(lane), catalog::ERROR_TYPE, kind.as_str());
        self.record(MetricId::Errors, 1.0, &attrs);
    }

    pub(crate) fn slo(&self, slo: CallSlo<'_>, ttft_met: Option<bool>, deadline_met: Option<bool>) {
        for (target, met) in [("ttft", ttft_met), ("deadline", deadline_met)] {
            if let Some(met) = met {
                self.record(
                    MetricId::SloCalls,
                    1.0,
                    &[
                        KeyValue::new(catalog::SLO_CLASS, slo.class.as_str()),
                        KeyValue::new(catalog::SLO_TARGET, target),
                        KeyValue::new(catalog::SLO_MET, if met { "true" } else { "false" }),
                    ],
                );
            }
        }
    }

    /// A task closed: `outcome` is `successful`, `failed` or `abandoned`.
    pub(crate) fn task(&self, class: SloClass, outcome: &'static str, cost_usd: f64) {
        let class = KeyValue::new(catalog::SLO_CLASS, class.as_str());
        self.record(
            MetricId::Tasks,
            1.0,
            &[class.clone(), KeyValue::new(catalog::TASK_OUTCOME, outcome)],
        );
        self.record(MetricId::TaskCost, cost_usd, &[class]);
    }
}
