//! A trace folded into what advice needs, line by line, in memory bounded whatever the trace's
//! length: per class, its calls' usage where they were served, their attainment and their
//! failed attempts; per model, the recorded prompt prefixes as a prompt cache would have seen
//! them; the targets' unsampled load counters.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::record::{CallRecord, Line};

/// How long a prompt cache keeps a prefix after its last use (Bedrock's default TTL), ms.
pub const CACHE_TTL_MS: u64 = 5 * 60 * 1000;

/// Prefixes tracked at most at once; past it, new ones are counted as untracked.
const MAX_PREFIXES: usize = 200_000;

/// Every this many calls, prefixes unused for longer than the cache's TTL are forgotten: only
/// those a cache could still hold take memory.
const SWEEP_EVERY: u64 = 10_000;

/// Models whose tokens per minute are kept at most.
const MAX_MODELS: usize = 256;

/// Minutes of a model's tokens kept at most: 31 days.
const MAX_MINUTES: usize = 31 * 24 * 60;

/// Seconds of arrivals kept open for calls that end late.
const SECONDS_OPEN: u64 = 600;

/// Classes kept apart at most; the calls of any more are summed as [`OTHER_CLASSES`].
const MAX_CLASSES: usize = 64;

/// Where the calls of classes past the 64th go.
pub const OTHER_CLASSES: &str = "(other classes)";

/// Recorded calls whose class is kept for their later outcome, the oldest forgotten first.
const OUTCOME_WINDOW: usize = 20_000;

/// Recent first-token times kept per class for its quantiles.
const RESERVOIR: usize = 4096;

/// Where a group of calls was served: what their price depends on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ServedKey {
    /// The model that answered.
    pub model: String,
    /// The region the call was sent to.
    pub region: String,
    /// The tier that served (the tier sent where the service did not say).
    pub tier: Option<String>,
    /// The target's profile scope (`None`: the in-Region id).
    pub scope: Option<String>,
}

/// Token totals of a group of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Calls answered.
    pub calls: u64,
    /// Input tokens neither read from nor written to the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    pub cache_read_tokens: u64,
    /// Cache writes.
    pub cache_write_tokens: u64,
    /// What they cost as recorded, USD.
    pub cost_usd: f64,
}

impl UsageTotals {
    fn add(&mut self, c: &CallRecord) {
        self.calls += 1;
        self.input_tokens += u64::from(c.input_tokens);
        self.output_tokens += u64::from(c.output_tokens);
        self.cache_read_tokens += u64::from(c.cache_read_tokens);
        self.cache_write_tokens += u64::from(c.cache_write_tokens);
        self.cost_usd += c.cost_usd;
    }

    /// One call's mean usage.
    pub fn mean_usage(&self) -> crate::types::Usage {
        let per = |n: u64| u32::try_from(n / self.calls.max(1)).unwrap_or(u32::MAX);
        crate::types::Usage {
            input_tokens: per(self.input_tokens),
            output_tokens: per(self.output_tokens),
            cache_read_tokens: per(self.cache_read_tokens),
            cache_write_tokens: per(self.cache_write_tokens),
            ..crate::types::Usage::default()
        }
    }
}

/// One SLO class's recorded calls.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClassSummary {
    /// Calls recorded.
    pub calls: u64,
    /// Calls answered.
    pub ok: u64,
    /// Calls that had an objective (a TTFT target or a deadline).
    pub judged: u64,
    /// Of those, the calls that met it.
    pub met: u64,
    /// The TTFT target its calls carried most recently, milliseconds.
    pub ttft_target_ms: Option<u64>,
    /// Calls with no residency: a global profile is allowed for them.
    pub anywhere: u64,
    /// The geographies its calls' residency named (`geography:eu`), and region lists.
    pub residencies: BTreeSet<String>,
    /// Usage where it was served.
    pub served: BTreeMap<ServedKey, UsageTotals>,
    /// Failed attempts by error kind.
    pub failed_attempts: BTreeMap<String, u64>,
    /// Regions that answered its calls.
    pub regions: BTreeSet<String>,
    /// Arrivals per second of the last ten minutes (lines come as calls end, not in arrival
    /// order): older seconds are folded into `peak_second`.
    #[serde(skip)]
    recent_seconds: BTreeMap<u64, u64>,
    /// The most calls that arrived within one second.
    pub peak_second: u64,
    /// The first and last arrival (Unix ms).
    pub arrivals_ms: Option<(u64, u64)>,
    /// Calls that failed over to another target at least once.
    pub failed_over: u64,
    /// A sample of its first-token times, milliseconds.
    pub ttft_ms: Vec<f32>,
    /// Recorded calls reporting a successful task outcome, and those reporting a failure.
    pub outcomes: (u64, u64),
    #[serde(skip)]
    seen: u64,
}

impl ClassSummary {
    /// The recorded cost of the class's answered calls, USD.
    pub fn cost_usd(&self) -> f64 {
        self.served.values().map(|u| u.cost_usd).sum()
    }

    /// The share of judged calls that met their objective (`None`: none judged).
    pub fn attainment(&self) -> Option<f64> {
        (self.judged > 0).then(|| self.met as f64 / self.judged as f64)
    }

    /// The most calls that arrived within one second.
    pub fn busiest_second(&self) -> u64 {
        self.recent_seconds
            .values()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.peak_second)
    }

    /// The busiest second's arrivals against the mean second's over the class's span: about 1
    /// is steady; a burst of several times the mean rate is well above it (judge it with
    /// [`busiest_second`](Self::busiest_second): one call in a quiet second is no burst).
    pub fn peak_to_mean(&self) -> f64 {
        let Some((first, last)) = self.arrivals_ms else {
            return 1.0;
        };
        let seconds = ((last - first) / 1000 + 1) as f64;
        let mean = self.calls as f64 / seconds;
        if mean > 0.0 {
            self.busiest_second() as f64 / mean
        } else {
            1.0
        }
    }

    /// A quantile of the sampled first-token times (`q` in 0..=1).
    pub fn ttft_quantile(&self, q: f64) -> Option<f64> {
        let mut v = self.ttft_ms.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f32::total_cmp);
        let i = ((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        Some(f64::from(v[i]))
    }

    fn add(&mut self, c: &CallRecord) {
        self.calls += 1;
        if c.error.is_none() {
            self.ok += 1;
        }
        if c.ttft_target_ms.is_some() {
            self.ttft_target_ms = c.ttft_target_ms;
        }
        if let Some(met) = met_objective(c) {
            self.judged += 1;
            self.met += u64::from(met);
        }
        match &c.residency {
            None => self.anywhere += 1,
            Some(r) => {
                if self.residencies.len() < 64 {
                    self.residencies.insert(r.clone());
                }
            }
        }
        if c.error.is_none()
            && let (Some(model), Some(region)) = (&c.model, &c.region)
        {
            let key = ServedKey {
                model: model.clone(),
                region: region.clone(),
                tier: c.served_tier.clone().or_else(|| c.tier.clone()),
                scope: c.scope.clone().filter(|s| s != "in_region"),
            };
            if self.served.len() < 4096 || self.served.contains_key(&key) {
                self.served.entry(key).or_default().add(c);
            }
            if self.regions.len() < 256 {
                self.regions.insert(region.clone());
            }
        }
        for a in &c.attempts {
            *self.failed_attempts.entry(a.kind.clone()).or_default() += 1;
        }
        if !c.attempts.is_empty() {
            self.failed_over += 1;
        }
        self.arrivals_ms = Some(match self.arrivals_ms {
            None => (c.at_ms, c.at_ms),
            Some((f, l)) => (f.min(c.at_ms), l.max(c.at_ms)),
        });
        let second = c.at_ms / 1000;
        *self.recent_seconds.entry(second).or_default() += 1;
        // A call ends within its deadline: a second ten minutes behind the latest is complete.
        while let Some((&oldest, &count)) = self.recent_seconds.first_key_value() {
            if oldest + SECONDS_OPEN >= second && self.recent_seconds.len() <= SECONDS_OPEN as usize
            {
                break;
            }
            self.peak_second = self.peak_second.max(count);
            self.recent_seconds.pop_first();
        }
        if let Some(t) = c.ttft_ms {
            // Reservoir sampling with a fixed stride, reproducible: every call until full,
            // then each slot replaced in turn by every k-th call.
            self.seen += 1;
            if self.ttft_ms.len() < RESERVOIR {
                self.ttft_ms.push(t as f32);
            } else {
                let stride = self.seen / RESERVOIR as u64;
                if stride > 0 && self.seen.is_multiple_of(stride) {
                    let slot = (self.seen / stride) as usize % RESERVOIR;
                    self.ttft_ms[slot] = t as f32;
                }
            }
        }
    }
}

/// Whether a call met its objective: its TTFT target when it streamed and had one, else its
/// deadline; a failed call met none. `None`: it had no objective.
pub fn met_objective(c: &CallRecord) -> Option<bool> {
    if c.ttft_target_ms.is_none() && c.deadline_ms.is_none() {
        return None;
    }
    if c.error.is_some() {
        return Some(false);
    }
    let ttft_ok = match (c.ttft_target_ms, c.ttft_ms) {
        (Some(target), Some(ttft)) => ttft <= target as f64,
        _ => true,
    };
    let deadline_ok = c.deadline_ms.is_none_or(|d| c.total_ms <= d as f64);
    Some(ttft_ok && deadline_ok)
}

/// A recorded prefix as a model's prompt cache would have seen it.
#[derive(Debug, Clone)]
struct PrefixUse {
    tokens: u32,
    /// When it was last sent (Unix ms).
    last_ms: u64,
    /// The class that sent it first.
    class: String,
    /// Whether the router placed a checkpoint at it.
    checkpointed: bool,
    /// Whether it was sent again within the TTL.
    reused: bool,
}

/// What a prompt cache would have done with one model's recorded prefixes that the router did
/// not checkpoint: reads within the TTL, writes otherwise, in tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheOpportunity {
    /// Calls that would have read a cached prefix.
    pub reads: u64,
    /// Tokens they would have read.
    pub read_tokens: u64,
    /// Calls that would have written one (its first use, or after the TTL).
    pub writes: u64,
    /// Tokens they would have written.
    pub write_tokens: u64,
    /// Distinct prefixes seen more than once.
    pub shared_prefixes: u64,
}

/// A target in the load lines: region, target id, tier.
pub type LoadKey = (String, String, Option<String>);

/// A target's cumulative attempts: answered, failed.
pub type LoadCount = (u64, u64);

/// A whole trace (or the live router's recent calls), folded.
#[derive(Debug, Clone, Default)]
pub struct TraceSummary {
    /// Header lines read (one per file).
    pub files: u64,
    /// The configurations in force, by digest.
    pub config_digests: BTreeSet<String>,
    /// The smallest share of calls sampled among the files (1 when no header said).
    pub sample: Option<f64>,
    /// The first and last call's arrival (Unix ms).
    pub span_ms: Option<(u64, u64)>,
    /// Calls recorded.
    pub calls: u64,
    /// Outcome lines read.
    pub outcomes: u64,
    /// Per SLO class.
    pub classes: BTreeMap<String, ClassSummary>,
    /// Per model, per minute (Unix minutes): tokens answered, input (with cache writes, as a
    /// reservation counts them) and output, for sizing a reservation.
    pub model_minutes: BTreeMap<String, BTreeMap<u64, (u64, u64)>>,
    /// Per (model, class): the cache the recorded prefixes offered where no checkpoint was set.
    pub cache: BTreeMap<(String, String), CacheOpportunity>,
    /// Per target: the first and last load counters seen.
    pub loads: BTreeMap<LoadKey, (LoadCount, LoadCount)>,
    /// Prefixes not tracked because the bound was reached.
    pub untracked_prefixes: u64,
    prefixes: HashMap<(String, String), PrefixUse>,
    classes_of_calls: HashMap<String, String>,
    calls_in_order: std::collections::VecDeque<String>,
    /// Outcome lines whose call was not recorded, or was forgotten.
    pub unmatched_outcomes: u64,
}

impl TraceSummary {
    /// An empty summary.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one line in.
    pub fn add(&mut self, line: &Line) {
        match line {
            Line::Header(h) => {
                self.files += 1;
                if self.config_digests.len() < 64 {
                    self.config_digests.insert(h.config_digest.clone());
                }
                self.sample = Some(self.sample.map_or(h.sample, |s| s.min(h.sample)));
            }
            Line::Call(c) => self.add_call(c),
            Line::Outcome(o) => {
                self.outcomes += 1;
                let Some(class) = self.classes_of_calls.get(&o.call_id) else {
                    self.unmatched_outcomes += 1;
                    return;
                };
                if let Some(s) = self.classes.get_mut(class) {
                    if o.success {
                        s.outcomes.0 += 1;
                    } else {
                        s.outcomes.1 += 1;
                    }
                }
            }
            Line::Load(load) => {
                for t in &load.targets {
                    let failed: u64 = t.failed.values().sum();
                    let key = (t.region.clone(), t.target.clone(), t.tier.clone());
                    if self.loads.len() < 4096 || self.loads.contains_key(&key) {
                        let entry = self
                            .loads
                            .entry(key)
                            .or_insert(((t.ok, failed), (t.ok, failed)));
                        entry.1 = (t.ok, failed);
                    }
                }
            }
        }
    }

    fn add_call(&mut self, c: &CallRecord) {
        self.calls += 1;
        self.span_ms = Some(match self.span_ms {
            None => (c.at_ms, c.at_ms),
            Some((f, l)) => (f.min(c.at_ms), l.max(c.at_ms)),
        });
        // A trace names its classes: a hostile one cannot make this map grow without bound.
        let class = if self.classes.len() < MAX_CLASSES || self.classes.contains_key(&c.class) {
            c.class.clone()
        } else {
            OTHER_CLASSES.to_string()
        };
        self.classes.entry(class).or_default().add(c);
        if let Some(id) = &c.call_id {
            if self.calls_in_order.len() >= OUTCOME_WINDOW
                && let Some(old) = self.calls_in_order.pop_front()
            {
                self.classes_of_calls.remove(&old);
            }
            if self
                .classes_of_calls
                .insert(id.clone(), c.class.clone())
                .is_none()
            {
                self.calls_in_order.push_back(id.clone());
            }
        }
        if let Some(model) = c.model.as_deref().filter(|_| c.error.is_none()) {
            self.add_prefixes(model, c);
            if self.model_minutes.len() < MAX_MODELS || self.model_minutes.contains_key(model) {
                let minutes = self.model_minutes.entry(model.to_string()).or_default();
                let minute = c.at_ms / 60_000;
                if minutes.len() < MAX_MINUTES || minutes.contains_key(&minute) {
                    let tokens = minutes.entry(minute).or_default();
                    tokens.0 += u64::from(c.input_tokens) + u64::from(c.cache_write_tokens);
                    tokens.1 += u64::from(c.output_tokens);
                }
            }
        }
        if self.calls.is_multiple_of(SWEEP_EVERY) {
            let now = c.at_ms;
            self.prefixes
                .retain(|_, u| now.saturating_sub(u.last_ms) <= CACHE_TTL_MS);
        }
    }

    /// The longest recorded prefix of a call that the router did not checkpoint, as a cache
    /// would have seen it had a checkpoint been there: read within the TTL of its last use,
    /// else written.
    fn add_prefixes(&mut self, model: &str, c: &CallRecord) {
        if c.prefixes.iter().any(|p| p.checkpoint) {
            // The router cached this call already; a read or write is in its usage.
            for p in c.prefixes.iter().filter(|p| p.checkpoint) {
                if let Some(u) = self
                    .prefixes
                    .get_mut(&(model.to_string(), p.digest.clone()))
                {
                    u.checkpointed = true;
                }
            }
            return;
        }
        let Some(p) = c.prefixes.iter().max_by_key(|p| p.tokens) else {
            return;
        };
        let key = (model.to_string(), p.digest.clone());
        if self.prefixes.len() >= MAX_PREFIXES && !self.prefixes.contains_key(&key) {
            let now = c.at_ms;
            self.prefixes
                .retain(|_, u| now.saturating_sub(u.last_ms) <= CACHE_TTL_MS);
            if self.prefixes.len() >= MAX_PREFIXES {
                self.untracked_prefixes += 1;
                return;
            }
        }
        let class = c.class.clone();
        match self.prefixes.get_mut(&key) {
            Some(u) if !u.checkpointed => {
                let op = self
                    .cache
                    .entry((model.to_string(), u.class.clone()))
                    .or_default();
                if c.at_ms.saturating_sub(u.last_ms) <= CACHE_TTL_MS {
                    if !u.reused {
                        u.reused = true;
                        op.shared_prefixes += 1;
                    }
                    op.reads += 1;
                    op.read_tokens += u64::from(u.tokens);
                } else {
                    op.writes += 1;
                    op.write_tokens += u64::from(u.tokens);
                }
                u.last_ms = u.last_ms.max(c.at_ms);
            }
            Some(_) => {}
            None => {
                let op = self
                    .cache
                    .entry((model.to_string(), class.clone()))
                    .or_default();
                op.writes += 1;
                op.write_tokens += u64::from(p.tokens);
                self.prefixes.insert(
                    key,
                    PrefixUse {
                        tokens: p.tokens,
                        last_ms: c.at_ms,
                        class,
                        checkpointed: false,
                        reused: false,
                    },
                );
            }
        }
    }

    /// Takes the times of a trace recorded against an emulator running at `time_scale` back to
    /// its scenario's: the classes' TTFT targets and first tokens divided by it.
    pub fn to_scenario_time(&mut self, time_scale: f64) {
        if !(time_scale > 0.0 && time_scale < 1.0) {
            return;
        }
        for class in self.classes.values_mut() {
            class.ttft_target_ms = class
                .ttft_target_ms
                .map(|t| (t as f64 / time_scale).round() as u64);
            for t in &mut class.ttft_ms {
                *t = (f64::from(*t) / time_scale) as f32;
            }
        }
    }

    /// The recorded period, milliseconds (at least one minute, so that rates stay finite).
    pub fn period_ms(&self) -> u64 {
        self.span_ms
            .map_or(0, |(f, l)| l.saturating_sub(f))
            .max(60_000)
    }

    /// What one recorded call stands for: the inverse of the sampled share.
    pub fn weight(&self) -> f64 {
        match self.sample {
            Some(s) if s > 0.0 => 1.0 / s,
            _ => 1.0,
        }
    }

    /// Multiplies a total over the recorded calls into a month (30 days) of all calls.
    pub fn monthly(&self, total: f64) -> f64 {
        total * self.weight() * (30.0 * 24.0 * 3_600_000.0) / self.period_ms() as f64
    }
}
