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

/// Where measurements go: one value of a catalog metric with its attributes.
pub(crate) trait Sink: Send + Sync {
    /// Records `value` into metric `id` (a histogram's sample, a counter's or gauge's delta).
    fn record(&self, id: MetricId, value: f64, attrs: &[KeyValue]);
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

impl dyn Sink + '_ {
    pub(crate) fn queue_left(&self, class: SloClass, waited: std::time::Duration) {
        let class = [KeyValue::new(catalog::SLO_CLASS, class.as_str())];
        self.record(MetricId::QueueWait, waited.as_secs_f64(), &class);
    }

    /// An attempt at `target`; at its first, both outcomes' series start at zero, so that
    /// a rate sees the first failure.
    pub(crate) fn attempt(
        &self,
        target: &super::health::TargetFigures,
        outcome: Result<(), ErrorKind>,
        first: bool,
    ) {
        let attrs: Vec<KeyValue> = target
            .labels()
            .map(|(k, v)| KeyValue::new(k, v.to_string()))
            .collect();
        for (name, this) in [("ok", outcome.is_ok()), ("failed", outcome.is_err())] {
            if this || first {
                let value = if this { 1.0 } else { 0.0 };
                self.record(
                    MetricId::Attempts,
                    value,
                    &with(&attrs, catalog::ATTEMPT_OUTCOME, name),
                );
            }
        }
        if let Err(kind) = outcome {
            self.record(
                MetricId::AttemptErrors,
                1.0,
                &with(&attrs, catalog::ERROR_TYPE, kind.as_str()),
            );
        }
    }

    pub(crate) fn success(&self, lane: LaneRef<'_>, r: &GenerateResponse, escalated: bool) {
        let attrs = lane_attributes(lane);
        let t = &r.timings;
        self.record(MetricId::Duration, t.total.as_secs_f64(), &attrs);
        if let Some(ttft) = t.ttft {
            self.record(MetricId::TimeToFirstChunk, ttft.as_secs_f64(), &attrs);
        }
        if let Some(itl) = t.inter_token {
            self.record(MetricId::InterTokenMean, itl.mean.as_secs_f64(), &attrs);
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
