//! What each event of a call records, into any [`Sink`]: the OpenTelemetry instruments of a
//! Rust application's meter ([`super::otel`]) or the host meter a Python or Node application's
//! meter is fed from ([`super::host_meter`]). Written once, so that every sink sees the same
//! metrics with the same attributes.

use opentelemetry::KeyValue;

use super::catalog::{self, MetricId};
use super::{CallSlo, LaneRef};
use crate::types::ErrorKind;
use crate::types::GenerateResponse;
use crate::types::SloClass;

/// Where measurements go: values of catalog metrics with their attributes.
pub(crate) trait Sink: Send + Sync {
    /// Records each `(id, value, attributes)` of one event of a call (a histogram's sample,
    /// a counter's delta), at once where the sink can: a host's queue takes its lock once.
    fn record_all(&self, batch: Batch);
}

/// The measurements of one event of a call.
pub(crate) type Batch = Vec<(MetricId, f64, Vec<KeyValue>)>;

/// Label values shared by reference, so that the dozen measurements of one call copy
/// pointers, not strings.
fn shared(k: &'static str, v: &str) -> KeyValue {
    KeyValue::new(
        k,
        opentelemetry::StringValue::from(std::sync::Arc::<str>::from(v)),
    )
}

fn lane_attributes(lane: LaneRef<'_>) -> Vec<KeyValue> {
    lane.labels().map(|(k, v)| shared(k, v)).collect()
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

impl dyn Sink + '_ {
    pub(crate) fn queue_left(&self, class: SloClass, waited: std::time::Duration) {
        let class = vec![KeyValue::new(catalog::SLO_CLASS, class.as_str())];
        self.record_all(vec![(MetricId::QueueWait, waited.as_secs_f64(), class)]);
    }

    /// An attempt at `target`; at its first, both outcomes' series start at zero, so that
    /// a rate sees the first failure.
    pub(crate) fn attempt(
        &self,
        target: &super::health::TargetFigures,
        outcome: Result<(), ErrorKind>,
        first: bool,
    ) {
        let attrs: Vec<KeyValue> = target.labels().map(|(k, v)| shared(k, v)).collect();
        let mut batch = Batch::with_capacity(3);
        for (name, this) in [("ok", outcome.is_ok()), ("failed", outcome.is_err())] {
            if this || first {
                let value = if this { 1.0 } else { 0.0 };
                let outcome = with(&attrs, catalog::ATTEMPT_OUTCOME, name);
                batch.push((MetricId::Attempts, value, outcome));
            }
        }
        if let Err(kind) = outcome {
            let kind = with(&attrs, catalog::ERROR_TYPE, kind.as_str());
            batch.push((MetricId::AttemptErrors, 1.0, kind));
        }
        self.record_all(batch);
    }

    /// A target's attempts, both outcomes, from zero (for instruments made after its first).
    pub(crate) fn attempts_start(&self, target: &super::health::TargetFigures) {
        let attrs: Vec<KeyValue> = target.labels().map(|(k, v)| shared(k, v)).collect();
        self.record_all(
            ["ok", "failed"]
                .into_iter()
                .map(|o| {
                    (
                        MetricId::Attempts,
                        0.0,
                        with(&attrs, catalog::ATTEMPT_OUTCOME, o),
                    )
                })
                .collect(),
        );
    }

    pub(crate) fn success(&self, lane: LaneRef<'_>, r: &GenerateResponse, escalated: bool) {
        let attrs = lane_attributes(lane);
        let t = &r.timings;
        let mut batch = Batch::with_capacity(12);
        let mut put = |id: MetricId, value: f64| batch.push((id, value, attrs.clone()));
        put(MetricId::Duration, t.total.as_secs_f64());
        if let Some(ttft) = t.ttft {
            put(MetricId::TimeToFirstChunk, ttft.as_secs_f64());
        }
        if let Some(itl) = t.inter_token {
            put(MetricId::InterTokenMean, itl.mean.as_secs_f64());
        }
        if let Some(rate) = t
            .output_tokens_per_second
            .filter(|v| super::rate_is_recorded(*v))
        {
            put(MetricId::OutputRate, rate);
        }
        put(MetricId::Requests, 1.0);
        put(MetricId::Cost, r.cost_usd);
        let failed = r.decision.failed_attempts.len();
        if failed > 0 {
            put(MetricId::Failovers, failed as f64);
        }
        if r.decision.hedge.is_some() {
            put(MetricId::Hedges, 1.0);
        }
        if escalated {
            put(MetricId::Escalations, 1.0);
        }
        let u = &r.usage;
        for (ty, n) in [
            ("input", u.total_input_tokens()),
            ("output", u.output_tokens),
        ] {
            let ty = with(&attrs, catalog::TOKEN_TYPE, ty);
            batch.push((MetricId::TokenUsage, f64::from(n), ty));
        }
        for (op, n) in [
            ("read", u.cache_read_tokens),
            ("write", u.cache_write_tokens),
        ] {
            if n > 0 {
                let op = with(&attrs, catalog::CACHE_OPERATION, op);
                batch.push((MetricId::CacheTokens, f64::from(n), op));
            }
        }
        self.record_all(batch);
    }

    pub(crate) fn failure(&self, lane: LaneRef<'_>, kind: ErrorKind) {
        let attrs = with(&lane_attributes(lane), catalog::ERROR_TYPE, kind.as_str());
        self.record_all(vec![(MetricId::Errors, 1.0, attrs)]);
    }

    pub(crate) fn slo(&self, slo: CallSlo<'_>, ttft_met: Option<bool>, deadline_met: Option<bool>) {
        let mut batch = Batch::new();
        for (target, met) in [("ttft", ttft_met), ("deadline", deadline_met)] {
            if let Some(met) = met {
                let attrs = vec![
                    KeyValue::new(catalog::SLO_CLASS, slo.class.as_str()),
                    KeyValue::new(catalog::SLO_TARGET, target),
                    KeyValue::new(catalog::SLO_MET, if met { "true" } else { "false" }),
                ];
                batch.push((MetricId::SloCalls, 1.0, attrs));
            }
        }
        if !batch.is_empty() {
            self.record_all(batch);
        }
    }

    /// A task closed: `outcome` is `successful`, `failed` or `abandoned`.
    pub(crate) fn task(&self, class: SloClass, outcome: &'static str, cost_usd: f64) {
        let class = KeyValue::new(catalog::SLO_CLASS, class.as_str());
        let outcome = vec![class.clone(), KeyValue::new(catalog::TASK_OUTCOME, outcome)];
        self.record_all(vec![
            (MetricId::Tasks, 1.0, outcome),
            (MetricId::TaskCost, cost_usd, vec![class]),
        ]);
    }
}
