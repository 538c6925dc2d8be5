//! The one catalog of what Laneway measures: each metric's name, unit, instrument, labels and
//! help. The Prometheus text and the OpenTelemetry instruments are both made from it, so they
//! cannot drift: a Prometheus name is the OpenTelemetry name with dots as underscores, its unit
//! as a suffix (`_seconds`, `_usd`) and `_total` on counters, as the OpenTelemetry-to-Prometheus
//! compatibility rules have it; a Prometheus label is the attribute key with dots as
//! underscores.
//!
//! ```
//! use laneway::telemetry::catalog::{metric, MetricId};
//! let m = metric(MetricId::Duration);
//! assert_eq!(m.name, "gen_ai.client.operation.duration");
//! assert_eq!(m.prometheus_name(), "gen_ai_client_operation_duration_seconds");
//! assert_eq!(metric(MetricId::Cost).prometheus_name(), "laneway_cost_usd_total");
//! ```

use std::borrow::Cow;

use super::{LaneKey, LaneRef};

/// Every metric, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MetricId {
    /// `gen_ai.client.operation.duration`: end-to-end duration of successful calls, in seconds.
    Duration,
    /// `gen_ai.client.operation.time_to_first_chunk`: time to the first output chunk of
    /// streams, in seconds.
    TimeToFirstChunk,
    /// `laneway.inter_token.mean`: mean gap between content chunks, per stream, in seconds.
    InterTokenMean,
    /// `laneway.output_tokens_per_second`: output tokens per second after the first token.
    OutputRate,
    /// `laneway.requests`: calls that succeeded.
    Requests,
    /// `gen_ai.client.token.usage`: tokens per successful call, input and output.
    TokenUsage,
    /// `laneway.cache.tokens`: input tokens read from and written to the prompt cache.
    CacheTokens,
    /// `laneway.cost`: cost of successful calls at the configured prices, in USD.
    Cost,
    /// `laneway.errors`: calls that failed, by error kind.
    Errors,
    /// `laneway.failovers`: failed attempts before a call succeeded.
    Failovers,
    /// `laneway.hedges`: successful calls that sent a hedge.
    Hedges,
    /// `laneway.escalations`: successful calls escalated to a faster tier for their deadline.
    Escalations,
    /// `laneway.slo.calls`: calls with a TTFT target or deadline, by whether they met it.
    SloCalls,
    /// `laneway.tasks`: tasks closed, by outcome (successful, failed or abandoned).
    Tasks,
    /// `laneway.task.cost`: cost of closed tasks, in USD.
    TaskCost,
    /// `laneway.requests.in_flight`: calls running now.
    InFlight,
    /// `laneway.queue.depth`: calls waiting in the client-side queue for a target's slot, per
    /// SLO class.
    QueueDepth,
    /// `laneway.queue.wait`: how long calls waited in the client-side queue, per SLO class, in
    /// seconds (those refused a slot included).
    QueueWait,
    /// `laneway.attempts`: attempts per target, by outcome (`ok` or `failed`; both start at
    /// zero with the target's first attempt).
    Attempts,
    /// `laneway.attempt.errors`: failed attempts per target, by error kind (throttles
    /// among them), failovers included.
    AttemptErrors,
    /// `laneway.breaker.state`: each target's breaker: 0 closed, 1 half open, 2 open.
    BreakerState,
    /// `laneway.region.ejected`: 1 while a region is ejected for stalling or failing.
    RegionEjected,
    /// `laneway.record.lines`: lines written to the trace (`[record]`).
    RecordLines,
    /// `laneway.record.dropped`: lines dropped because the trace's writer was behind.
    RecordDropped,
    /// `laneway.shared_state.degraded`: 1 while Redis is unreachable and local state decides.
    SharedDegraded,
    /// `laneway.shared_state.degraded_episodes`: times Redis became unreachable.
    SharedDegradedEpisodes,
    /// `laneway.shared_state.fallback_admissions`: reserved admissions decided locally while
    /// degraded.
    SharedFallbackAdmissions,
}

/// What a metric's values measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds.
    Seconds,
    /// US dollars.
    Usd,
    /// A count, in the UCUM annotation form the GenAI conventions use (`{token}`).
    Count(&'static str),
    /// Tokens per second.
    TokensPerSecond,
}

impl Unit {
    /// The unit as OpenTelemetry writes it.
    pub fn otel(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Usd => "USD",
            Unit::Count(c) => c,
            Unit::TokensPerSecond => "{token}/s",
        }
    }

    fn prometheus_suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "_seconds",
            Unit::Usd => "_usd",
            Unit::Count(_) | Unit::TokensPerSecond => "",
        }
    }
}

/// How a metric is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A distribution: an OpenTelemetry histogram, a Prometheus summary (p50 / p90 / p99 of the
    /// router's own histograms where it keeps one, else only the sum and count).
    Distribution,
    /// A monotonic count or sum.
    Counter,
    /// A value now that adds up across processes (calls in flight): an OpenTelemetry
    /// up-down counter.
    UpDown,
    /// A value now that does not add up (a breaker's state): an OpenTelemetry gauge.
    Gauge,
}

/// Which series a metric has, and so which labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One per lane: [`LANE_LABELS`] plus the metric's own.
    Lane,
    /// One per SLO class: `laneway.slo_class` plus the metric's own.
    SloClass,
    /// One series.
    Router,
    /// One per target (`cloud.region`, `laneway.target`, `laneway.tier`) plus the metric's own.
    Target,
    /// One per region the configuration routes to (`cloud.region`).
    Region,
    /// One series, with `[record]` only; read from the snapshot.
    Record,
    /// One series, with shared state only; read from the snapshot
    /// ([`Router::metrics`](crate::Router::metrics)), so Prometheus text only.
    Shared,
}

/// One metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Which metric it is.
    pub id: MetricId,
    /// The OpenTelemetry name.
    pub name: &'static str,
    /// What its values measure.
    pub unit: Unit,
    /// How it is kept: distribution, counter or gauge.
    pub kind: Kind,
    /// Which series it has, and so which labels beyond its own.
    pub scope: Scope,
    /// Labels beyond the scope's.
    pub labels: &'static [&'static str],
    /// One line on what it measures: the Prometheus `# HELP` text and the OpenTelemetry
    /// instrument's description.
    pub help: &'static str,
}

impl Metric {
    /// The Prometheus name.
    pub fn prometheus_name(&self) -> String {
        let mut n = self.name.replace('.', "_");
        n.push_str(self.unit.prometheus_suffix());
        if self.kind == Kind::Counter {
            n.push_str("_total");
        }
        n
    }

    /// Whether its values are read from the router's state when a meter collects (gauges,
    /// and the shared state's counts), rather than recorded as calls happen.
    pub fn is_observed(&self) -> bool {
        matches!(self.kind, Kind::UpDown | Kind::Gauge)
            || matches!(self.scope, Scope::Shared | Scope::Record)
    }

    /// A distribution's bucket boundaries for an OpenTelemetry histogram: the GenAI
    /// conventions' advice where they give it; empty for counters and gauges.
    pub fn buckets(&self) -> &'static [f64] {
        match (self.kind, self.id, self.unit) {
            (Kind::Distribution, MetricId::InterTokenMean, _) => PER_TOKEN_BUCKETS,
            (Kind::Distribution, _, Unit::Seconds) => DURATION_BUCKETS,
            (Kind::Distribution, _, Unit::TokensPerSecond) => RATE_BUCKETS,
            (Kind::Distribution, _, _) => TOKEN_BUCKETS,
            _ => &[],
        }
    }

    /// Every label key the metric's series have (some only when set, as a lane's family).
    pub fn label_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        let scope: &[&str] = match self.scope {
            Scope::Lane => LANE_LABELS,
            Scope::SloClass => &[SLO_CLASS],
            Scope::Target => TARGET_LABELS,
            Scope::Region => &["cloud.region"],
            Scope::Router | Scope::Shared | Scope::Record => &[],
        };
        scope.iter().chain(self.labels).copied()
    }
}

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

/// A label key as Prometheus spells it.
pub fn prometheus_label(key: &str) -> Cow<'_, str> {
    if key.contains('.') {
        Cow::Owned(key.replace('.', "_"))
    } else {
        Cow::Borrowed(key)
    }
}

/// Label key of a call's SLO class.
pub const SLO_CLASS: &str = "laneway.slo_class";
/// Label key of a token count's type: `input` or `output`.
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
/// Label key of a cache token count's operation: `read` or `write`.
pub const CACHE_OPERATION: &str = "laneway.cache.operation";
/// Label key of a failed call's error kind.
pub const ERROR_TYPE: &str = "error.type";
/// Label key of an attempt's outcome: `ok` or `failed`.
pub const ATTEMPT_OUTCOME: &str = "laneway.attempt.outcome";
/// Label key of the SLO target a call was held to: `ttft` or `deadline`.
pub const SLO_TARGET: &str = "laneway.slo.target";
/// Label key of whether a call met its SLO target: `true` or `false`.
pub const SLO_MET: &str = "laneway.slo.met";
/// Label key of a closed task's outcome: `successful`, `failed` or `abandoned`.
pub const TASK_OUTCOME: &str = "laneway.task.outcome";

/// The labels of a target; `laneway.tier` only when its breaker is kept per tier.
pub const TARGET_LABELS: &[&str] = &["cloud.region", "laneway.target", "laneway.tier"];

/// The labels of a lane; `laneway.family` and `laneway.tier` only when the lane has one.
pub const LANE_LABELS: &[&str] = &[
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "cloud.region",
    "laneway.target",
    SLO_CLASS,
    "laneway.family",
    "laneway.tier",
];

impl LaneKey {
    /// The lane's labels, keyed as [`LANE_LABELS`], without those it has no value for.
    pub fn labels(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.as_lane_ref().labels()
    }
}

impl<'a> LaneRef<'a> {
    /// The lane's labels, keyed as [`LANE_LABELS`], without those it has no value for.
    pub fn labels(self) -> impl Iterator<Item = (&'static str, &'a str)> {
        [
            ("gen_ai.operation.name", Some("chat")),
            ("gen_ai.provider.name", Some(self.provider.system())),
            ("gen_ai.request.model", Some(self.model)),
            ("cloud.region", Some(self.region)),
            ("laneway.target", Some(self.target)),
            (SLO_CLASS, Some(self.slo_class.as_str())),
            ("laneway.family", self.family),
            ("laneway.tier", self.tier.map(|t| t.as_str())),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
    }
}

const fn m(
    id: MetricId,
    name: &'static str,
    unit: Unit,
    kind: Kind,
    scope: Scope,
    labels: &'static [&'static str],
    help: &'static str,
) -> Metric {
    Metric {
        id,
        name,
        unit,
        kind,
        scope,
        labels,
        help,
    }
}

use Kind::{Counter, Distribution, Gauge, UpDown};
use MetricId as M;
use Scope::{Lane, Record, Region, Router, Shared, SloClass, Target};

/// Every metric, in exposition order.
#[rustfmt::skip]
pub const CATALOG: &[Metric] = &[
    m(M::Duration, "gen_ai.client.operation.duration", Unit::Seconds, Distribution, Lane, &[],
        "End-to-end duration of successful calls, failovers included."),
    m(M::TimeToFirstChunk, "gen_ai.client.operation.time_to_first_chunk", Unit::Seconds, Distribution, Lane, &[],
        "Time to the first output token of streamed calls."),
    m(M::InterTokenMean, "laneway.inter_token.mean", Unit::Seconds, Distribution, Lane, &[],
        "Mean gap between content chunks of each streamed call."),
    m(M::OutputRate, "laneway.output_tokens_per_second", Unit::TokensPerSecond, Distribution, Lane, &[],
        "Output tokens per second after the first token."),
    m(M::Requests, "laneway.requests", Unit::Count("{request}"), Counter, Lane, &[],
        "Calls that succeeded."),
    m(M::TokenUsage, "gen_ai.client.token.usage", Unit::Count("{token}"), Distribution, Lane, &[TOKEN_TYPE],
        "Tokens per successful call: input (all of it, cached or not) and output."),
    m(M::CacheTokens, "laneway.cache.tokens", Unit::Count("{token}"), Counter, Lane, &[CACHE_OPERATION],
        "Input tokens read from and written to the prompt cache."),
    m(M::Cost, "laneway.cost", Unit::Usd, Counter, Lane, &[],
        "Cost of successful calls at the configured prices."),
    m(M::Errors, "laneway.errors", Unit::Count("{request}"), Counter, Lane, &[ERROR_TYPE],
        "Calls that failed, by error kind, in the lane of their first planned target."),
    m(M::Failovers, "laneway.failovers", Unit::Count("{attempt}"), Counter, Lane, &[],
        "Failed attempts before a call succeeded."),
    m(M::Hedges, "laneway.hedges", Unit::Count("{request}"), Counter, Lane, &[],
        "Successful calls that sent a hedge."),
    m(M::Escalations, "laneway.escalations", Unit::Count("{request}"), Counter, Lane, &[],
        "Successful calls escalated to a faster tier for their deadline."),
    m(M::SloCalls, "laneway.slo.calls", Unit::Count("{request}"), Counter, SloClass, &[SLO_TARGET, SLO_MET],
        "Calls with a TTFT target or deadline, by whether they met it."),
    m(M::Tasks, "laneway.tasks", Unit::Count("{task}"), Counter, SloClass, &[TASK_OUTCOME],
        "Tasks closed: successful or failed by finish_task, abandoned after telemetry.task_idle."),
    m(M::TaskCost, "laneway.task.cost", Unit::Usd, Counter, SloClass, &[],
        "Cost of closed tasks."),
    m(M::InFlight, "laneway.requests.in_flight", Unit::Count("{request}"), UpDown, Router, &[],
        "Calls running now (the client-side queue)."),
    m(M::QueueDepth, "laneway.queue.depth", Unit::Count("{request}"), UpDown, SloClass, &[],
        "Calls waiting in the client-side queue for a slot on a target at its concurrency."),
    m(M::QueueWait, "laneway.queue.wait", Unit::Seconds, Distribution, SloClass, &[],
        "How long calls waited in the client-side queue (those refused a slot included)."),
    m(M::Attempts, "laneway.attempts", Unit::Count("{attempt}"), Counter, Target, &[ATTEMPT_OUTCOME],
        "Attempts per target, by outcome: ok or failed (both from the target's first attempt on)."),
    m(M::AttemptErrors, "laneway.attempt.errors", Unit::Count("{attempt}"), Counter, Target, &[ERROR_TYPE],
        "Failed attempts per target, by error kind (throttled among them), failovers included."),
    m(M::BreakerState, "laneway.breaker.state", Unit::Count("{state}"), Gauge, Target, &[],
        "Each target's breaker: 0 closed, 1 half open (probing), 2 open (skipped)."),
    m(M::RegionEjected, "laneway.region.ejected", Unit::Count("{region}"), Gauge, Region, &[],
        "1 while a region is ejected for stalling or failing: calls go to other regions."),
    m(M::RecordLines, "laneway.record.lines", Unit::Count("{line}"), Counter, Record, &[],
        "Lines written to the trace of calls ([record])."),
    m(M::RecordDropped, "laneway.record.dropped", Unit::Count("{line}"), Counter, Record, &[],
        "Lines dropped because the trace's writer was behind (never waited for)."),
    m(M::SharedDegraded, "laneway.shared_state.degraded", Unit::Count("{state}"), Gauge, Shared, &[],
        "1 while Redis is unreachable and local state decides."),
    m(M::SharedDegradedEpisodes, "laneway.shared_state.degraded_episodes", Unit::Count("{episode}"), Counter, Shared, &[],
        "Times Redis became unreachable."),
    m(M::SharedFallbackAdmissions, "laneway.shared_state.fallback_admissions", Unit::Count("{request}"), Counter, Shared, &[],
        "Reserved admissions decided locally while degraded."),
];

/// The catalog entry of a metric.
pub fn metric(id: MetricId) -> &'static Metric {
    CATALOG
        .iter()
        .find(|m| m.id == id)
        .expect("every MetricId is in the catalog")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_unique() {
        for (i, a) in CATALOG.iter().enumerate() {
            for b in &CATALOG[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.prometheus_name(), b.prometheus_name());
            }
        }
    }

    #[test]
    fn prometheus_names_follow_the_compatibility_rules() {
        assert_eq!(
            metric(M::TimeToFirstChunk).prometheus_name(),
            "gen_ai_client_operation_time_to_first_chunk_seconds"
        );
        assert_eq!(
            metric(M::TokenUsage).prometheus_name(),
            "gen_ai_client_token_usage"
        );
        assert_eq!(
            metric(M::InFlight).prometheus_name(),
            "laneway_requests_in_flight"
        );
        assert_eq!(prometheus_label("cloud.region"), "cloud_region");
    }
}
