//! What the router measures while traffic flows: per lane (family, model, target, region, tier,
//! SLO class) latency histograms, tokens and cost, errors by kind, failovers and hedges; SLO
//! attainment per class; requests in flight; and cost per task and per successful task.
//!
//! Labels come from configuration and the plan only (never from prompt text), so their number
//! is bounded by the configured models, targets and regions. Read it with
//! [`Router::metrics`](crate::Router::metrics) (a [`MetricsSnapshot`]) or as Prometheus text
//! with [`MetricsSnapshot::prometheus`].
//!
//! Calls and attempts also run in `tracing` spans (`laneway.call`, `laneway.attempt`); with a
//! meter from [`RouterBuilder::opentelemetry_meter`](crate::RouterBuilder::opentelemetry_meter)
//! every call is also recorded into OpenTelemetry instruments (see [`otel`]); with the
//! `metrics-http` feature, [`serve_prometheus`](crate::serve_prometheus) answers scrapes.

pub mod catalog;
pub mod health;
pub mod host_log;
pub mod host_meter;
mod host_queue;
mod measure;
pub mod otel;
mod prometheus;
pub mod record;
pub use prometheus::observations;
pub mod shadow;
pub mod span;
pub mod trace_summary;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::types::ErrorKind;
use crate::types::GenerateResponse;
use crate::types::{ServiceTier, SloClass};

/// The labels of one lane of traffic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LaneKey {
    /// The provider sent to.
    pub provider: crate::types::Provider,
    /// The family, when the request named one.
    pub family: Option<String>,
    /// The configured model (the variant, for a family).
    pub model: String,
    /// The model id, profile id or endpoint name sent to.
    pub target: String,
    /// The region sent to.
    pub region: String,
    /// The Bedrock service tier: the one that served as the service says, else the one
    /// requested; `None` for targets without tiers (SageMaker).
    pub tier: Option<ServiceTier>,
    /// The SLO class of the calls.
    pub slo_class: SloClass,
}

/// A lane's labels, borrowed: how a call finds its lane without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaneRef<'a> {
    /// The provider sent to.
    pub provider: &'a crate::types::Provider,
    /// The family, when the request named one.
    pub family: Option<&'a str>,
    /// The configured model (the variant, for a family).
    pub model: &'a str,
    /// The model id, profile id or endpoint name sent to.
    pub target: &'a str,
    /// The region sent to.
    pub region: &'a str,
    /// The Bedrock service tier: the one that served as the service says, else the one
    /// requested; `None` for targets without tiers (SageMaker).
    pub tier: Option<ServiceTier>,
    /// The SLO class of the calls.
    pub slo_class: SloClass,
}

impl LaneKey {
    /// The same labels, borrowed.
    pub fn as_lane_ref(&self) -> LaneRef<'_> {
        LaneRef {
            provider: &self.provider,
            family: self.family.as_deref(),
            model: &self.model,
            target: &self.target,
            region: &self.region,
            tier: self.tier,
            slo_class: self.slo_class,
        }
    }
}

impl LaneRef<'_> {
    /// The same labels, owned.
    pub fn to_key(&self) -> LaneKey {
        LaneKey {
            provider: self.provider.clone(),
            family: self.family.map(str::to_string),
            model: self.model.to_string(),
            target: self.target.to_string(),
            region: self.region.to_string(),
            tier: self.tier,
            slo_class: self.slo_class,
        }
    }
}

/// Lanes by their labels, found from borrowed labels: a key is allocated only for a lane never
/// seen before.
#[derive(Default)]
struct Lanes {
    table: hashbrown::HashTable<(LaneKey, Lane)>,
}

impl Lanes {
    fn hash(lane: &LaneRef<'_>) -> u64 {
        use std::hash::BuildHasher;
        foldhash::fast::FixedState::with_seed(0x6c61_6e65).hash_one(lane)
    }

    fn get_or_insert(&mut self, lane: LaneRef<'_>) -> &mut Lane {
        let entry = self.table.entry(
            Self::hash(&lane),
            |(k, _)| k.as_lane_ref() == lane,
            |(k, _)| Self::hash(&k.as_lane_ref()),
        );
        &mut entry
            .or_insert_with(|| (lane.to_key(), Lane::new()))
            .into_mut()
            .1
    }

    fn iter(&self) -> impl Iterator<Item = &(LaneKey, Lane)> {
        self.table.iter()
    }
}

/// Percentiles of one measure, in seconds (or tokens/s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The mean.
    pub mean: f64,
}

/// One lane's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LaneSnapshot {
    /// Calls that succeeded.
    pub requests: u64,
    /// Time to the first token of streamed calls, in seconds.
    pub ttft_s: Percentiles,
    /// Mean gap between content deltas, per stream.
    pub inter_token_s: Percentiles,
    /// End-to-end duration of successful calls, failovers included, in seconds.
    pub latency_s: Percentiles,
    /// Output tokens per second after the first token, per successful call.
    pub output_tokens_per_second: Percentiles,
    /// Calls that ended in an error, by kind (the lane of their first planned target).
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Failed attempts before a success.
    pub failovers: u64,
    /// Successful calls that sent a hedge.
    pub hedges: u64,
    /// Successful calls escalated to a faster tier for their deadline.
    pub escalations: u64,
    /// Input tokens of successful calls processed anew (neither read from nor written to the
    /// cache).
    pub input_tokens: u64,
    /// Input tokens of successful calls read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens of successful calls written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Output tokens of successful calls.
    pub output_tokens: u64,
    /// Cost of successful calls at the configured prices, in USD.
    pub cost_usd: f64,
}

/// How often one SLO class met its targets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SloAttainment {
    /// Calls of the class, answered or failed.
    pub calls: u64,
    /// Calls with a TTFT target, and those that met it.
    pub ttft_targeted: u64,
    /// Calls with a TTFT target that met it (a whole answer meets it if all of it came in time).
    pub ttft_met: u64,
    /// Calls with a deadline, and those that met it.
    pub deadline_targeted: u64,
    /// Calls with a deadline that met it.
    pub deadline_met: u64,
}

/// Cost of finished tasks (calls sharing a `task_id`, closed by `finish_task`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TaskCosts {
    /// Tasks closed: finished by `finish_task` or abandoned.
    pub tasks: u64,
    /// Tasks `finish_task` closed as successful.
    pub successful: u64,
    /// Tasks never finished, closed after `telemetry.task_idle` without a call (counted in
    /// `tasks`, never as successful).
    pub abandoned: u64,
    /// What the closed tasks' calls cost, in USD.
    pub cost_usd: f64,
}

impl TaskCosts {
    /// Mean cost per task, per successful task (all tasks' cost over the successful ones).
    pub fn per_task(&self) -> Option<f64> {
        (self.tasks > 0).then(|| self.cost_usd / self.tasks as f64)
    }
    /// Mean cost per successful task: all tasks' cost over the successful ones; `None`
    /// before any task has succeeded.
    pub fn per_successful_task(&self) -> Option<f64> {
        (self.successful > 0).then(|| self.cost_usd / self.successful as f64)
    }
}

/// Everything measured so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricsSnapshot {
    /// Each lane's figures, in lane order.
    pub lanes: Vec<(LaneKey, LaneSnapshot)>,
    /// SLO attainment, per SLO class.
    pub slo: BTreeMap<SloClass, SloAttainment>,
    /// Tasks finished, overall and per SLO class of their calls.
    pub tasks: TaskCosts,
    /// Tasks finished, per SLO class (a task's class is the most urgent of its calls').
    pub tasks_by_class: BTreeMap<SloClass, TaskCosts>,
    /// Calls running now.
    pub in_flight: i64,
    /// The client-side queue, per SLO class: calls waiting now and how long calls waited.
    pub queue: BTreeMap<SloClass, QueueFigures>,
    /// The state shared through Redis, when configured: whether it is degraded to local state.
    pub shared: Option<SharedStatus>,
    /// Targets' breakers and failed attempts, and regions' ejections.
    pub health: health::HealthFigures,
    /// The trace of calls, with `[record]`: lines written and dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordFigures>,
    /// What the families in shadow mode would have done routed ([`shadow`]).
    #[serde(skip_serializing_if = "shadow::ShadowReport::is_empty")]
    pub shadow: shadow::ShadowReport,
}

/// The trace's lines so far (`[record]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RecordFigures {
    /// Lines written.
    pub written: u64,
    /// Lines dropped because the writer was behind.
    pub dropped: u64,
}

/// The client-side queue of one SLO class: calls that found every target they may use at its
/// concurrency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct QueueFigures {
    /// Calls waiting for a slot now.
    pub depth: i64,
    /// How long calls waited (those refused a slot included), in seconds.
    pub wait_s: Percentiles,
}

/// How the shared state is doing, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SharedStatus {
    /// Redis is unreachable now: local state with a per-replica share of reservations.
    pub degraded: bool,
    /// Times Redis became unreachable since start.
    pub degraded_episodes: u64,
    /// Reserved admissions decided locally while degraded.
    pub fallback_admissions: u64,
    /// Reserved admissions against the fleet's ledger, and how many of them waited for a Redis
    /// round trip (the rest came from this replica's lease).
    pub admissions: u64,
    /// Of `admissions`, those that waited for a Redis round trip.
    pub waited_admissions: u64,
    /// Values read from Redis that were not what Laneway writes (skipped, not trusted).
    pub malformed_values: u64,
    /// Completed reads of the fleet's breakers.
    pub breaker_syncs: u64,
    /// Completed writes of where prompt prefixes were cached.
    pub prefixes_published: u64,
    /// Completed writes of this replica's targets' latency, and of its ejected regions.
    pub latency_published: u64,
    /// Completed reads of the fleet's targets' latency and ejected regions.
    pub fleet_reads: u64,
    /// Leases of targets' slots asked of Redis (on a call's path when a replica's block ran
    /// out, else by the renewal task).
    pub lease_round_trips: u64,
    /// Of `lease_round_trips`, those a call waited for.
    pub lease_waits: u64,
}

struct Lane {
    ttft_us: Histogram<u64>,
    itl_us: Histogram<u64>,
    latency_us: Histogram<u64>,
    tps: Histogram<u64>,
    counts: LaneSnapshot,
}

impl Lane {
    fn new() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds");
        Self {
            ttft_us: h(),
            itl_us: h(),
            latency_us: h(),
            tps: Histogram::new_with_bounds(1, 1_000_000, 2).expect("valid bounds"),
            counts: LaneSnapshot::default(),
        }
    }
}

fn us(d: Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

/// Whether an output rate is recorded: both exports take the same ones.
pub(crate) fn rate_is_recorded(tokens_per_second: f64) -> bool {
    tokens_per_second.is_finite() && tokens_per_second > 0.0
}

fn percentiles(h: &Histogram<u64>, scale: f64) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        count: h.len(),
        p50: h.value_at_quantile(0.5) as f64 * scale,
        p90: h.value_at_quantile(0.9) as f64 * scale,
        p99: h.value_at_quantile(0.99) as f64 * scale,
        mean: h.mean() * scale,
    }
}

struct OpenTask {
    cost_usd: f64,
    /// The ids of its calls that were answered (at most [`TASK_CALLS_KEPT`]), for feedback.
    calls: Vec<String>,
    class: SloClass,
    /// When a call last named it.
    seen: Instant,
}

/// How many answered calls' ids a task keeps for feedback when it finishes; beyond that, the
/// first ones stand for the task.
pub const TASK_CALLS_KEPT: usize = 256;

/// Tasks not finished yet, and when they were last swept for abandoned ones.
struct OpenTasks {
    tasks: HashMap<String, OpenTask>,
    idle: Duration,
    swept: Instant,
}

impl Default for OpenTasks {
    fn default() -> Self {
        Self {
            tasks: HashMap::new(),
            idle: crate::config::TelemetryConfig::default().task_idle,
            swept: crate::time::now(),
        }
    }
}

/// The router's measurements.
#[derive(Default)]
pub struct Telemetry {
    lanes: Mutex<Lanes>,
    slo: Mutex<BTreeMap<SloClass, SloAttainment>>,
    open_tasks: Mutex<OpenTasks>,
    finished: Mutex<(TaskCosts, BTreeMap<SloClass, TaskCosts>)>,
    in_flight: AtomicI64,
    /// Per class: calls waiting now, and their waits in microseconds.
    queue: Mutex<BTreeMap<SloClass, (i64, Histogram<u64>)>>,
    attempts: Mutex<health::Attempts>,
    otel: Option<otel::OtelInstruments>,
    /// The measurements a Python or Node meter is fed from, once the host asks for them.
    host: OnceLock<Arc<host_meter::HostMeter>>,
    /// Families in shadow mode: what routing would have done.
    pub(crate) shadow: shadow::ShadowLedger,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the caller asked of one call, for SLO attainment and task costs.
#[derive(Debug, Clone, Copy)]
pub struct CallSlo<'a> {
    /// The call's SLO class.
    pub class: SloClass,
    /// The time to first token the caller wants; `None` for no target.
    pub ttft_target: Option<Duration>,
    /// When the whole answer must be complete, from the call's start; `None` for no deadline.
    pub deadline: Option<Duration>,
    /// The task the call's cost adds to; `None` when it belongs to none.
    pub task_id: Option<&'a str>,
}

impl Telemetry {
    /// Also records every call into these OpenTelemetry instruments.
    pub fn set_meter(&mut self, meter: &opentelemetry::metrics::Meter) {
        self.otel = Some(otel::OtelInstruments::new(meter));
    }

    /// The measurements for a Python or Node meter: kept from the first time this is asked,
    /// for the host to drain.
    pub fn host_meter(&self) -> Arc<host_meter::HostMeter> {
        let mut created = false;
        let meter = Arc::clone(self.host.get_or_init(|| {
            created = true;
            Default::default()
        }));
        if created {
            self.restart_host_series();
        }
        meter
    }

    /// Sends the host meter, if any, the zeros each target's attempts start from (as at its
    /// first attempt), for instruments the host made after traffic began: a rate of them then
    /// sees the first failure.
    pub fn restart_host_series(&self) {
        let Some(host) = self.host.get() else {
            return;
        };
        let targets = lock(&self.attempts).targets();
        for (region, target, tier) in targets {
            let figures = health::TargetFigures {
                region,
                target,
                tier,
                ..Default::default()
            };
            (&**host as &dyn measure::Sink).attempts_start(&figures);
        }
    }

    /// Where each measurement goes: the Rust meter's instruments, the host's queue.
    fn sinks(&self) -> impl Iterator<Item = &dyn measure::Sink> {
        let otel = self.otel.iter().map(|o| o as &dyn measure::Sink);
        let host = self.host.get().map(|h| &**h as &dyn measure::Sink);
        otel.chain(host)
    }

    /// A call started; the guard counts it in flight until dropped.
    pub fn start(&self) -> InFlightGuard<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlightGuard(self)
    }

    /// An attempt at a target answered (`Ok`) or failed with a kind (`Err`), whatever the call
    /// did next.
    pub fn record_attempt(
        &self,
        region: &str,
        target: &str,
        tier: Option<ServiceTier>,
        outcome: std::result::Result<(), ErrorKind>,
    ) {
        let first = lock(&self.attempts).add(region, target, tier, outcome);
        let figures = health::TargetFigures {
            region: region.to_string(),
            target: target.to_string(),
            tier,
            ..Default::default()
        };
        for o in self.sinks() {
            o.attempt(&figures, outcome, first);
        }
    }

    /// Every target's attempts so far (all calls), for the trace's load lines.
    pub fn target_loads(&self) -> Vec<record::TargetLoad> {
        lock(&self.attempts).loads()
    }

    /// Adds the attempts counted here to the targets' figures taken from the state.
    pub fn add_attempts(&self, targets: &mut Vec<health::TargetFigures>) {
        lock(&self.attempts).merge_into(targets);
    }

    /// The figures a meter observes when it collects (calls in flight, the queue's depth), and
    /// nothing of the lanes: cheap enough for every collection.
    pub fn levels(&self) -> MetricsSnapshot {
        let waiting = lock(&self.queue);
        // Every class, so that a queue's depth is a series (at 0) before anything waits.
        let queue = SloClass::ALL
            .into_iter()
            .map(|class| {
                let figures = QueueFigures {
                    depth: waiting.get(&class).map_or(0, |(depth, _)| *depth),
                    wait_s: Percentiles::default(),
                };
                (class, figures)
            })
            .collect();
        drop(waiting);
        MetricsSnapshot {
            in_flight: self.in_flight.load(Ordering::Relaxed),
            queue,
            ..MetricsSnapshot::default()
        }
    }

    /// A call of `class` joins the client-side queue; it leaves when the guard drops (given a
    /// slot, refused one, or cancelled), and its wait is recorded then.
    pub fn queue_joined(&self, class: SloClass) -> QueueGuard<'_> {
        lock(&self.queue)
            .entry(class)
            .or_insert_with(|| (0, wait_histogram()))
            .0 += 1;
        QueueGuard {
            telemetry: self,
            class,
            joined: tokio::time::Instant::now(),
        }
    }

    /// A call succeeded.
    pub fn record_success(&self, slo: CallSlo<'_>, r: &GenerateResponse) {
        let d = &r.decision;
        let key = LaneRef {
            provider: &d.provider,
            family: d.family.as_deref(),
            model: &d.model,
            target: &d.target,
            region: &d.region,
            tier: d.served_tier.or(d.tier),
            slo_class: slo.class,
        };
        self.record_attempt(&d.region, &d.target, d.tier, Ok(()));
        let escalated = d
            .reasons
            .iter()
            .any(|x| matches!(x, crate::types::Reason::DeadlineEscalation { .. }));
        for o in self.sinks() {
            o.success(key, r, escalated);
        }
        {
            let mut lanes = lock(&self.lanes);
            let lane = lanes.get_or_insert(key);
            let t = &r.timings;
            // Saturating: a value beyond a histogram's bounds (an instant answer's rate, an
            // hour-long call) counts at the bound, as OpenTelemetry counts it, not dropped.
            if let Some(ttft) = t.ttft {
                lane.ttft_us.saturating_record(us(ttft));
            }
            if let Some(itl) = t.inter_token {
                lane.itl_us.saturating_record(us(itl.mean));
            }
            lane.latency_us.saturating_record(us(t.total));
            if let Some(tps) = t.output_tokens_per_second.filter(|v| rate_is_recorded(*v)) {
                lane.tps.saturating_record((tps as u64).max(1));
            }
            let c = &mut lane.counts;
            c.requests += 1;
            c.failovers += d.failed_attempts.len() as u64;
            c.hedges += u64::from(d.hedge.is_some());
            c.escalations += u64::from(escalated);
            c.input_tokens += u64::from(r.usage.input_tokens);
            c.cache_read_tokens += u64::from(r.usage.cache_read_tokens);
            c.cache_write_tokens += u64::from(r.usage.cache_write_tokens);
            c.output_tokens += u64::from(r.usage.output_tokens);
            c.cost_usd += r.cost_usd;
        }
        let ttft_met = match (slo.ttft_target, r.timings.ttft) {
            (Some(target), Some(ttft)) => Some(ttft <= target),
            // A whole answer has no first token of its own: it met the target if it all came in time.
            (Some(target), None) => Some(r.timings.total <= target),
            _ => None,
        };
        self.record_slo(slo, ttft_met, slo.deadline.map(|d| r.timings.total <= d));
        self.add_to_task(slo, r.cost_usd, Some(&r.decision.call_id));
    }

    /// Adds a call's cost to its task; the task's class is the most urgent of its calls'.
    fn add_to_task(&self, slo: CallSlo<'_>, cost_usd: f64, call_id: Option<&str>) {
        if let Some(task) = slo.task_id {
            let now = crate::time::now();
            let mut open = lock(&self.open_tasks);
            let t = open
                .tasks
                .entry(task.to_string())
                .or_insert_with(|| OpenTask {
                    cost_usd: 0.0,
                    calls: Vec::new(),
                    class: slo.class,
                    seen: now,
                });
            t.cost_usd += cost_usd;
            if let Some(id) = call_id.filter(|_| t.calls.len() < TASK_CALLS_KEPT) {
                t.calls.push(id.to_string());
            }
            t.class = t.class.min(slo.class);
            t.seen = now;
            self.sweep_abandoned(&mut open, now);
        }
    }

    /// How long a task may go without a call before it is closed as abandoned.
    pub fn set_task_idle(&self, idle: Duration) {
        lock(&self.open_tasks).idle = idle;
    }

    /// Closes the tasks idle for longer than the limit, as abandoned; at most once per eighth
    /// of the limit, so that the sweep's cost spreads thin over calls.
    fn sweep_abandoned(&self, open: &mut OpenTasks, now: Instant) {
        if now.saturating_duration_since(open.swept) < open.idle / 8 {
            return;
        }
        open.swept = now;
        let idle = open.idle;
        let mut abandoned = Vec::new();
        open.tasks.retain(|_, t| {
            let keep = now.saturating_duration_since(t.seen) < idle;
            if !keep {
                abandoned.push((t.class, t.cost_usd));
            }
            keep
        });
        if abandoned.is_empty() {
            return;
        }
        let mut finished = lock(&self.finished);
        let (all, by_class) = &mut *finished;
        for (class, cost_usd) in abandoned {
            for o in self.sinks() {
                o.task(class, "abandoned", cost_usd);
            }
            for t in [&mut *all, by_class.entry(class).or_default()] {
                t.tasks += 1;
                t.abandoned += 1;
                t.cost_usd += cost_usd;
            }
        }
    }

    /// Closes, as of `now`, the tasks idle for longer than the limit.
    pub(crate) fn expire_tasks(&self, now: Instant) {
        let mut open = lock(&self.open_tasks);
        self.sweep_abandoned(&mut open, now);
    }

    /// Tasks open now (named by a call, neither finished nor abandoned yet).
    pub fn open_tasks(&self) -> usize {
        lock(&self.open_tasks).tasks.len()
    }

    /// A call failed after trying `lane` first (its plan's first target).
    pub fn record_failure(&self, slo: CallSlo<'_>, lane: LaneRef<'_>, kind: ErrorKind) {
        for o in self.sinks() {
            o.failure(lane, kind);
        }
        *lock(&self.lanes)
            .get_or_insert(lane)
            .counts
            .errors
            .entry(kind)
            .or_default() += 1;
        self.record_slo(
            slo,
            slo.ttft_target.map(|_| false),
            slo.deadline.map(|_| false),
        );
        // A task whose calls all failed still counts: as a task, at no cost.
        self.add_to_task(slo, 0.0, None);
    }

    fn record_slo(&self, slo: CallSlo<'_>, ttft_met: Option<bool>, deadline_met: Option<bool>) {
        for o in self.sinks() {
            o.slo(slo, ttft_met, deadline_met);
        }
        let mut all = lock(&self.slo);
        let a = all.entry(slo.class).or_default();
        a.calls += 1;
        if let Some(met) = ttft_met {
            a.ttft_targeted += 1;
            a.ttft_met += u64::from(met);
        }
        if let Some(met) = deadline_met {
            a.deadline_targeted += 1;
            a.deadline_met += u64::from(met);
        }
    }

    /// Closes a task: its calls' cost joins the per-task figures. The ids of its answered
    /// calls, or `None` if no call named it.
    pub fn finish_task(&self, task_id: &str, success: bool) -> Option<Vec<String>> {
        let task = lock(&self.open_tasks).tasks.remove(task_id)?;
        for o in self.sinks() {
            let outcome = if success { "successful" } else { "failed" };
            o.task(task.class, outcome, task.cost_usd);
        }
        let mut finished = lock(&self.finished);
        let (all, by_class) = &mut *finished;
        for t in [all, by_class.entry(task.class).or_default()] {
            t.tasks += 1;
            t.successful += u64::from(success);
            t.cost_usd += task.cost_usd;
        }
        Some(task.calls)
    }

    /// Everything measured so far.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.expire_tasks(crate::time::now());
        let mut lanes: Vec<(LaneKey, LaneSnapshot)> = lock(&self.lanes)
            .iter()
            .map(|(k, l)| {
                let mut s = l.counts.clone();
                s.ttft_s = percentiles(&l.ttft_us, 1e-6);
                s.inter_token_s = percentiles(&l.itl_us, 1e-6);
                s.latency_s = percentiles(&l.latency_us, 1e-6);
                s.output_tokens_per_second = percentiles(&l.tps, 1.0);
                (k.clone(), s)
            })
            .collect();
        lanes.sort_by(|a, b| a.0.cmp(&b.0));
        let finished = lock(&self.finished).clone();
        let waiting = lock(&self.queue);
        // Every class, so that a queue's depth is a series (at 0) before anything waits.
        let queue = SloClass::ALL
            .into_iter()
            .map(|class| {
                let figures =
                    waiting
                        .get(&class)
                        .map_or_else(QueueFigures::default, |(depth, waits)| QueueFigures {
                            depth: *depth,
                            wait_s: percentiles(waits, 1e-6),
                        });
                (class, figures)
            })
            .collect();
        drop(waiting);
        MetricsSnapshot {
            queue,
            lanes,
            slo: lock(&self.slo).clone(),
            tasks: finished.0,
            tasks_by_class: finished.1,
            in_flight: self.in_flight.load(Ordering::Relaxed),
            shared: None,
            health: health::HealthFigures::default(),
            record: None,
            shadow: self.shadow.report(),
        }
    }
}

fn wait_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds")
}

/// A call waiting in the client-side queue, counted while it lives.
pub struct QueueGuard<'a> {
    telemetry: &'a Telemetry,
    class: SloClass,
    joined: tokio::time::Instant,
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        let waited = self.joined.elapsed();
        if let Some((depth, waits)) = lock(&self.telemetry.queue).get_mut(&self.class) {
            *depth -= 1;
            let _ = waits.record(us(waited));
        }
        for o in self.telemetry.sinks() {
            o.queue_left(self.class, waited);
        }
    }
}

/// Counts a call in flight while it lives.
pub struct InFlightGuard<'a>(&'a Telemetry);

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest-rank percentile of sorted samples: the reference the histograms must match.
    fn nearest_rank(sorted: &[u64], q: f64) -> f64 {
        let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1] as f64
    }

    fn check(samples: &[u64]) {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 2).unwrap();
        for &s in samples {
            h.record(s).unwrap();
        }
        let p = percentiles(&h, 1.0);
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        assert_eq!(p.count, samples.len() as u64);
        for (got, q) in [(p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99)] {
            let want = nearest_rank(&sorted, q);
            // Two significant digits: every value within 1% of the sample it stands for.
            assert!(
                (got - want).abs() <= want * 0.01,
                "q{q}: histogram {got}, reference {want}"
            );
        }
        let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64;
        assert!((p.mean - mean).abs() <= mean * 0.01, "{} vs {mean}", p.mean);
    }

    #[test]
    fn percentiles_match_a_reference_computation() {
        check(&(1..=1000).collect::<Vec<_>>());
        // Skewed like latencies: most fast, a long tail (deterministic pseudo-random).
        let mut x = 0x2545F4914F6CDD1Du64;
        let skewed: Vec<u64> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x % 10_000) as f64 / 10_000.0;
                (50_000.0 * (-(1.0 - u).ln()).powf(2.0)) as u64 + 1_000
            })
            .collect();
        check(&skewed);
        check(&[250_000]);
    }

    fn call(class: SloClass, task: &str) -> CallSlo<'_> {
        CallSlo {
            class,
            ttft_target: None,
            deadline: None,
            task_id: Some(task),
        }
    }

    #[test]
    fn tasks_never_finished_are_closed_as_abandoned_after_the_idle_limit() {
        let t = Telemetry::default();
        t.set_task_idle(Duration::from_secs(60));
        t.add_to_task(call(SloClass::Standard, "left-open"), 0.5, None);
        t.add_to_task(call(SloClass::Interactive, "finished"), 0.25, None);
        assert!(t.finish_task("finished", true).is_some());
        assert_eq!(t.open_tasks(), 1);
        t.expire_tasks(crate::time::now() + Duration::from_secs(30));
        assert_eq!(t.open_tasks(), 1, "not idle long enough yet");
        t.expire_tasks(crate::time::now() + Duration::from_secs(61));
        assert_eq!(t.open_tasks(), 0);
        let m = t.snapshot();
        assert_eq!(
            (m.tasks.tasks, m.tasks.successful, m.tasks.abandoned),
            (2, 1, 1)
        );
        assert_eq!(m.tasks.cost_usd, 0.75);
        assert_eq!(m.tasks_by_class[&SloClass::Standard].abandoned, 1);
        assert!(
            t.finish_task("left-open", true).is_none(),
            "an abandoned task is closed already"
        );
    }

    #[test]
    fn task_costs_sum_exactly_and_keep_the_most_urgent_class() {
        let t = Telemetry::default();
        // Binary fractions: the sums are exact.
        t.add_to_task(call(SloClass::Background, "a"), 0.25, Some("call-1"));
        t.add_to_task(call(SloClass::Background, "a"), 0.125, Some("call-2"));
        t.add_to_task(call(SloClass::Interactive, "b"), 0.5, None);
        t.add_to_task(call(SloClass::Background, "b"), 0.0625, None);
        let lane = LaneKey {
            provider: crate::types::Provider::Bedrock,
            family: None,
            model: "m".into(),
            target: "m".into(),
            region: "r".into(),
            tier: None,
            slo_class: SloClass::Standard,
        };
        t.record_failure(
            call(SloClass::Standard, "c"),
            lane.as_lane_ref(),
            ErrorKind::Throttled,
        );
        assert_eq!(
            t.finish_task("a", true),
            Some(vec!["call-1".into(), "call-2".into()])
        );
        assert!(t.finish_task("b", true).is_some());
        assert_eq!(
            t.finish_task("c", false),
            Some(Vec::new()),
            "failed calls leave no ids"
        );
        assert_eq!(t.open_tasks(), 0);
        assert!(t.finish_task("a", true).is_none(), "a task closes once");
        let m = t.snapshot();
        assert_eq!((m.tasks.tasks, m.tasks.successful), (3, 2));
        assert_eq!(m.tasks.cost_usd, 0.9375);
        assert_eq!(m.tasks.per_successful_task(), Some(0.46875));
        assert_eq!(m.tasks_by_class[&SloClass::Background].cost_usd, 0.375);
        assert_eq!(m.tasks_by_class[&SloClass::Interactive].cost_usd, 0.5625);
        let failed_only = m.tasks_by_class[&SloClass::Standard];
        assert_eq!(
            (
                failed_only.tasks,
                failed_only.successful,
                failed_only.cost_usd
            ),
            (1, 0, 0.0)
        );
    }

    #[test]
    fn an_empty_lane_reports_zeros() {
        let h = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
        assert_eq!(percentiles(&h, 1.0), Percentiles::default());
    }
}
