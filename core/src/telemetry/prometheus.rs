//! A [`MetricsSnapshot`]'s series, metric by metric from the [`catalog`](super::catalog): its
//! Prometheus text exposition, and the values of the observed metrics for a meter's
//! collection ([`observations`]).

use std::fmt::Write;

use opentelemetry::KeyValue;

use super::catalog::{self, CATALOG, Kind, Metric, MetricId, Scope, prometheus_label};
use super::host_meter::Measurement;
use super::{LaneKey, LaneSnapshot, MetricsSnapshot, Percentiles};

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A series' labels, keyed as the catalog keys them.
fn label_text<'v>(pairs: impl IntoIterator<Item = (&'static str, &'v str)>) -> Vec<KeyValue> {
    pairs
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v.to_string()))
        .collect()
}

/// Label pairs as Prometheus writes them, keys converted from the catalog's.
fn prometheus_labels(labels: &[KeyValue]) -> String {
    let mut out = String::new();
    for kv in labels {
        if !out.is_empty() {
            out.push(',');
        }
        let key = prometheus_label(kv.key.as_str());
        let _ = write!(out, "{key}=\"{}\"", escape(&kv.value.as_str()));
    }
    out
}

fn lane_labels(k: &LaneKey, extra: Option<(&'static str, &str)>) -> Vec<KeyValue> {
    label_text(k.labels().chain(extra))
}

/// One series' value.
enum Value {
    Summary(Percentiles),
    /// A summary without quantiles.
    Totals {
        sum: f64,
        count: u64,
    },
    Number(f64),
}

/// A metric's series in the snapshot, as (labels, value).
fn series(id: MetricId, s: &MetricsSnapshot) -> Vec<(Vec<KeyValue>, Value)> {
    let lanes = |f: &dyn Fn(&LaneSnapshot) -> Value| -> Vec<(Vec<KeyValue>, Value)> {
        s.lanes
            .iter()
            .map(|(k, l)| (lane_labels(k, None), f(l)))
            .collect()
    };
    let lanes_by = |key: &'static str, f: &dyn Fn(&LaneSnapshot) -> Vec<(String, f64)>| {
        let mut out = Vec::new();
        for (k, l) in &s.lanes {
            for (value, n) in f(l) {
                out.push((lane_labels(k, Some((key, &value))), Value::Number(n)));
            }
        }
        out
    };
    let number = |n: u64| Value::Number(n as f64);
    match id {
        MetricId::Duration => lanes(&|l| Value::Summary(l.latency_s)),
        MetricId::TimeToFirstChunk => lanes(&|l| Value::Summary(l.ttft_s)),
        MetricId::InterTokenMean => lanes(&|l| Value::Summary(l.inter_token_s)),
        MetricId::OutputRate => lanes(&|l| Value::Summary(l.output_tokens_per_second)),
        MetricId::Requests => lanes(&|l| number(l.requests)),
        MetricId::TokenUsage => {
            let mut out = Vec::new();
            for (k, l) in &s.lanes {
                let input = l.input_tokens + l.cache_read_tokens + l.cache_write_tokens;
                for (ty, sum) in [("input", input), ("output", l.output_tokens)] {
                    out.push((
                        lane_labels(k, Some((catalog::TOKEN_TYPE, ty))),
                        Value::Totals {
                            sum: sum as f64,
                            count: l.requests,
                        },
                    ));
                }
            }
            out
        }
        MetricId::CacheTokens => lanes_by(catalog::CACHE_OPERATION, &|l| {
            vec![
                ("read".into(), l.cache_read_tokens as f64),
                ("write".into(), l.cache_write_tokens as f64),
            ]
        }),
        MetricId::Cost => lanes(&|l| Value::Number(l.cost_usd)),
        MetricId::Errors => lanes_by(catalog::ERROR_TYPE, &|l| {
            l.errors
                .iter()
                .map(|(kind, n)| (kind.as_str().to_string(), *n as f64))
                .collect()
        }),
        MetricId::Failovers => lanes(&|l| number(l.failovers)),
        MetricId::Hedges => lanes(&|l| number(l.hedges)),
        MetricId::Escalations => lanes(&|l| number(l.escalations)),
        MetricId::SloCalls => {
            let mut out = Vec::new();
            for (class, a) in &s.slo {
                for (target, targeted, met) in [
                    ("ttft", a.ttft_targeted, a.ttft_met),
                    ("deadline", a.deadline_targeted, a.deadline_met),
                ] {
                    for (was_met, n) in [("true", met), ("false", targeted - met)] {
                        if targeted > 0 {
                            out.push((
                                label_text([
                                    (catalog::SLO_CLASS, class.as_str()),
                                    (catalog::SLO_TARGET, target),
                                    (catalog::SLO_MET, was_met),
                                ]),
                                number(n),
                            ));
                        }
                    }
                }
            }
            out
        }
        MetricId::Tasks => {
            let mut out = Vec::new();
            for (class, t) in &s.tasks_by_class {
                for (outcome, n) in [
                    ("successful", t.successful),
                    ("failed", t.tasks - t.successful - t.abandoned),
                    ("abandoned", t.abandoned),
                ] {
                    out.push((
                        label_text([
                            (catalog::SLO_CLASS, class.as_str()),
                            (catalog::TASK_OUTCOME, outcome),
                        ]),
                        number(n),
                    ));
                }
            }
            out
        }
        MetricId::TaskCost => s
            .tasks_by_class
            .iter()
            .map(|(class, t)| {
                (
                    label_text([(catalog::SLO_CLASS, class.as_str())]),
                    Value::Number(t.cost_usd),
                )
            })
            .collect(),
        MetricId::InFlight => vec![(Vec::new(), Value::Number(s.in_flight as f64))],
        MetricId::QueueDepth => s
            .queue
            .iter()
            .map(|(class, q)| {
                (
                    label_text([(catalog::SLO_CLASS, class.as_str())]),
                    Value::Number(q.depth as f64),
                )
            })
            .collect(),
        MetricId::QueueWait => s
            .queue
            .iter()
            .map(|(class, q)| {
                (
                    label_text([(catalog::SLO_CLASS, class.as_str())]),
                    Value::Summary(q.wait_s),
                )
            })
            .collect(),
        MetricId::Attempts => {
            let mut out = Vec::new();
            for t in &s.health.targets {
                let failed: u64 = t.attempt_errors.values().sum();
                for (outcome, n) in [("ok", t.attempts_ok), ("failed", failed)] {
                    let labels =
                        label_text(t.labels().chain([(catalog::ATTEMPT_OUTCOME, outcome)]));
                    out.push((labels, number(n)));
                }
            }
            out
        }
        MetricId::AttemptErrors => {
            let mut out = Vec::new();
            for t in &s.health.targets {
                for (kind, n) in &t.attempt_errors {
                    let labels =
                        label_text(t.labels().chain([(catalog::ERROR_TYPE, kind.as_str())]));
                    out.push((labels, number(*n)));
                }
            }
            out
        }
        MetricId::BreakerState => s
            .health
            .targets
            .iter()
            .map(|t| (label_text(t.labels()), number(t.breaker as u64)))
            .collect(),
        MetricId::RegionEjected => s
            .health
            .regions
            .iter()
            .map(|(region, r)| {
                let labels = label_text([("cloud.region", region.as_str())]);
                (labels, number(u64::from(r.ejected)))
            })
            .collect(),
        MetricId::RecordLines => s
            .record
            .iter()
            .map(|r| (Vec::new(), number(r.written)))
            .collect(),
        MetricId::RecordDropped => s
            .record
            .iter()
            .map(|r| (Vec::new(), number(r.dropped)))
            .collect(),
        MetricId::SharedDegraded => s
            .shared
            .iter()
            .map(|sh| (Vec::new(), number(u64::from(sh.degraded))))
            .collect(),
        MetricId::SharedDegradedEpisodes => s
            .shared
            .iter()
            .map(|sh| (Vec::new(), number(sh.degraded_episodes)))
            .collect(),
        MetricId::SharedFallbackAdmissions => s
            .shared
            .iter()
            .map(|sh| (Vec::new(), number(sh.fallback_admissions)))
            .collect(),
    }
}

fn write_metric(out: &mut String, m: &Metric, rows: &[(Vec<KeyValue>, Value)], extra: &[KeyValue]) {
    let name = m.prometheus_name();
    let ty = match m.kind {
        Kind::Distribution => "summary",
        Kind::Counter => "counter",
        Kind::UpDown | Kind::Gauge => "gauge",
    };
    let _ = writeln!(out, "# HELP {name} {}", m.help);
    let _ = writeln!(out, "# TYPE {name} {ty}");
    let braces = |l: &str| {
        if l.is_empty() {
            String::new()
        } else {
            format!("{{{l}}}")
        }
    };
    for (labels, v) in rows {
        let labels: Vec<KeyValue> = labels.iter().chain(extra).cloned().collect();
        let l = &prometheus_labels(&labels);
        match v {
            Value::Summary(p) if p.count == 0 => {}
            Value::Summary(p) => {
                let sep = if l.is_empty() { "" } else { "," };
                for (q, v) in [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)] {
                    let _ = writeln!(out, "{name}{{{l}{sep}quantile=\"{q}\"}} {v}");
                }
                let _ = writeln!(out, "{name}_sum{} {}", braces(l), p.mean * p.count as f64);
                let _ = writeln!(out, "{name}_count{} {}", braces(l), p.count);
            }
            Value::Totals { count: 0, .. } => {}
            Value::Totals { sum, count } => {
                let _ = writeln!(out, "{name}_sum{} {sum}", braces(l));
                let _ = writeln!(out, "{name}_count{} {count}", braces(l));
            }
            Value::Number(n) => {
                let _ = writeln!(out, "{name}{} {n}", braces(l));
            }
        }
    }
}

impl MetricsSnapshot {
    /// The snapshot in the Prometheus text format (version 0.0.4): every metric of the
    /// [`super::catalog`] (shared-state ones with `[shared]` only).
    pub fn prometheus(&self) -> String {
        self.prometheus_labelled(&[])
    }

    /// [`prometheus`](Self::prometheus) with `labels` added to every series (keys as the
    /// catalog writes them: `laneway.bench.candidate` is `laneway_bench_candidate`), to tell
    /// apart the routers one endpoint serves in turn.
    pub fn prometheus_labelled(&self, labels: &[(&'static str, &str)]) -> String {
        let extra = label_text(labels.iter().copied());
        let mut out = String::new();
        for m in CATALOG {
            if m.scope == Scope::Shared && self.shared.is_none()
                || m.scope == Scope::Record && self.record.is_none()
            {
                continue;
            }
            write_metric(&mut out, m, &series(m.id, self), &extra);
        }
        out
    }
}

/// The observed metrics' values in `s` (the catalog's
/// [`is_observed`](super::catalog::Metric::is_observed) ones), as measurements.
pub fn observations(s: &MetricsSnapshot) -> Vec<Measurement> {
    let mut out = Vec::new();
    for m in CATALOG.iter().filter(|m| m.is_observed()) {
        for (attributes, value) in series(m.id, s) {
            if let Value::Number(value) = value {
                out.push(Measurement {
                    metric: m.name,
                    value,
                    attributes,
                });
            }
        }
    }
    out
}
