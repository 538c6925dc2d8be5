//! Live state the planner reads and execution writes: per-target circuit breakers, latency
//! estimates and throttle scores, reserved-capacity ledgers, and the retry budget.
//!
//! The planner reads it through [`Observations`], at a time handed to it, so that planning stays
//! a pure function of its inputs; execution updates it as outcomes arrive.

pub mod breaker;
pub mod budget;
pub mod latency;
pub mod ledger;
pub mod outlier;
pub mod quota;
pub mod shared;

use foldhash::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

pub use crate::config::{BreakerConfig, BudgetConfig, ReservationConfig};
pub use crate::plan::observe::{Fresh, Observations, TargetView};
pub use crate::types::BreakerView;
pub use breaker::Breaker;
pub use budget::RetryBudget;
pub use latency::{AttemptSpeed, LatencyTrack};

/// What a target's time limits are learnt from: a quantile of its recent first-token times
/// (less what their input took to read) and of its streams' longest gaps, each with the number
/// of observations it is of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearnedLatency {
    /// The first-token quantile, net of input reading, and the samples it is of; `None`
    /// before the target has any.
    pub ttft: Option<(Duration, usize)>,
    /// The longest-gap quantile of the target's streams and the samples it is of; `None`
    /// before any stream has ended there.
    pub gap: Option<(Duration, usize)>,
}
pub use ledger::{Ledger, Ticket};

use crate::config::Config;
use crate::plan::prompt_cache::{
    CharEstimate, DigestMemo, Digested, Prefix, PrefixDigest, PrefixStats, TokenCounter,
};
use crate::types::Checkpoint;
use crate::types::{CacheTtl, ServiceTier};

#[derive(Debug, Default)]
struct TargetState {
    breaker: Breaker,
    latency: LatencyTrack,
    /// A SageMaker endpoint that refused to stream: sent whole from then on.
    refuses_streaming: bool,
}

/// Targets by region, then id, then tier: nested so that lookups by `&str` allocate nothing.
/// Each target has its own lock, so that calls to different targets never wait on each other;
/// the map's own lock is taken for writing only when a target is seen for the first time.
///
/// foldhash rather than SipHash: the keys come from configuration, not from callers, and these
/// maps are read for every candidate of every call.
type TargetMap = HashMap<String, HashMap<String, HashMap<Option<ServiceTier>, Mutex<TargetState>>>>;

fn lookup<'m>(
    map: &'m TargetMap,
    region: &str,
    id: &str,
    tier: Option<ServiceTier>,
) -> Option<&'m Mutex<TargetState>> {
    map.get(region)?.get(id)?.get(&tier)
}

fn insert(map: &mut TargetMap, region: &str, id: &str, tier: Option<ServiceTier>) {
    if !map.contains_key(region) {
        map.insert(region.to_string(), HashMap::default());
    }
    let ids = map.get_mut(region).expect("inserted above");
    if !ids.contains_key(id) {
        ids.insert(id.to_string(), HashMap::default());
    }
    ids.get_mut(id)
        .expect("inserted above")
        .entry(tier)
        .or_default();
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the state keeps of a prompt prefix.
#[derive(Debug, Clone)]
struct PrefixRecord {
    seen: u32,
    last: Instant,
    mean_gap_s: Option<f64>,
    /// (region, target id, expiry) of the cache entry it was last written to or read from.
    cached: Option<(String, String, Instant)>,
}

/// Input tokens of the calls of one family (or model, outside families), split by what the
/// prompt cache did with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CacheTotals {
    /// Calls counted.
    pub calls: u64,
    /// Input tokens processed anew.
    pub new_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Saved against the same calls uncached, in US dollars.
    pub savings_usd: f64,
}

impl CacheTotals {
    /// The share of input tokens that were new (neither read from nor written to the cache).
    pub fn new_share(&self) -> f64 {
        let all = self.new_tokens + self.cache_write_tokens + self.cache_read_tokens;
        if all == 0 {
            1.0
        } else {
            self.new_tokens as f64 / all as f64
        }
    }
}

/// A call admitted against a reservation, to correct or release when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservationTicket {
    /// In this process's ledger (no shared state configured).
    Local(Ticket),
    /// In this process's share of the reservation, while Redis was unreachable.
    Fallback(Ticket),
    /// In the fleet's ledger in Redis.
    Shared(shared::SharedTicket),
}

/// How long a full shared reservation (or quota) is assumed full without asking Redis again.
const FULL_HINT: Duration = Duration::from_millis(100);

/// A request's admission against a target's on-demand quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaClaim {
    /// In this process's quota book.
    Local(quota::QuotaTicket),
    /// In the fleet's count in Redis.
    Shared(shared::SharedTicket),
}

/// The key of a target's quota in the fleet's state (and in the "found full" hints).
fn quota_key(region: &str, target: &str) -> String {
    format!("quota|{region}|{target}")
}

/// Requests and tokens in the fleet ledger's terms: ((requests, tokens), capacity). A limit
/// not set counts nothing against a capacity of one.
fn shared_quota_terms(limits: (u64, u64), counts: (u64, u64)) -> ((u64, u64), (u64, u64)) {
    let term = |limit: u64, n: u64| {
        if limit == u64::MAX {
            (0, 1)
        } else {
            (n, limit)
        }
    };
    let (r, rc) = term(limits.0, counts.0);
    let (t, tc) = term(limits.1, counts.1);
    ((r, t), (rc, tc))
}

/// The router's live state, in process.
pub struct State {
    cache_totals: Mutex<std::collections::BTreeMap<String, CacheTotals>>,
    breaker: BreakerConfig,
    prefixes: moka::sync::Cache<PrefixDigest, PrefixRecord>,
    digests: moka::sync::Cache<u128, Digested>,
    counter: std::sync::Arc<dyn TokenCounter>,
    targets: RwLock<TargetMap>,
    ledgers: Mutex<HashMap<String, Ledger>>,
    budget: Mutex<RetryBudget>,
    minute: Duration,
    /// State shared with other replicas, when configured.
    shared: Option<Arc<shared::Shared>>,
    /// Each replica's share of every reservation, used while Redis is unreachable.
    fallback_ledgers: Mutex<HashMap<String, Ledger>>,
    /// Reservations found full (by the service's served tier, or the fleet's ledger), and until
    /// when to assume they still are.
    full_until: Mutex<HashMap<String, Instant>>,
    /// What this router admitted against each target's on-demand quota.
    quotas: quota::QuotaBook,
    /// Prefixes recently looked up in Redis (found or not): not asked again for a while.
    prefix_lookups: moka::sync::Cache<PrefixDigest, ()>,
    /// Regions ejected for stalling or failing (`routing.outlier`).
    outliers: outlier::Outliers,
}

/// How long a prefix looked up in the shared index is not looked up again.
const PREFIX_LOOKUP_TTL: Duration = Duration::from_secs(2);

impl State {
    /// Fresh state for a configuration (its reservations, breaker and budget settings).
    pub fn new(config: &Config) -> Self {
        let ledgers = config
            .models
            .iter()
            .filter_map(|(id, m)| {
                m.reserved()
                    .map(|r| (id.clone(), Ledger::new(*r, config.routing.minute)))
            })
            .collect();
        Self {
            breaker: config.routing.breaker,
            // An hour idle is the longest cache TTL: older prefixes cannot be read any more.
            prefixes: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            digests: moka::sync::Cache::builder()
                .max_capacity(50_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            counter: std::sync::Arc::new(CharEstimate),
            cache_totals: Mutex::default(),
            targets: RwLock::default(),
            ledgers: Mutex::new(ledgers),
            budget: Mutex::new(RetryBudget::new(config.routing.budget)),
            minute: config.routing.minute,
            shared: None,
            fallback_ledgers: Mutex::default(),
            full_until: Mutex::default(),
            quotas: quota::QuotaBook::new(config.routing.minute),
            prefix_lookups: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(PREFIX_LOOKUP_TTL)
                .build(),
            outliers: outlier::Outliers::new(config.routing.outlier),
        }
    }

    /// Whether state is shared with other replicas.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Learns from the fleet where these prefixes are cached, for those this replica has no
    /// live cache entry for and has not asked about lately. `true` if anything was learned
    /// (the plan should be made again).
    pub async fn import_shared_prefixes(&self, now: Instant, prefixes: &[Prefix]) -> bool {
        let Some(sh) = &self.shared else {
            return false;
        };
        if !sh.usable() {
            return false;
        }
        let unknown: Vec<PrefixDigest> = prefixes
            .iter()
            .map(|p| p.digest)
            .filter(|d| {
                let cached_here = self
                    .prefixes
                    .get(d)
                    .and_then(|r| r.cached)
                    .is_some_and(|(_, _, exp)| exp > now);
                !cached_here && !self.prefix_lookups.contains_key(d)
            })
            .collect();
        if unknown.is_empty() {
            return false;
        }
        for d in &unknown {
            self.prefix_lookups.insert(*d, ());
        }
        let digests: Vec<[u8; 32]> = unknown.iter().map(|d| d.0).collect();
        // Boxed: a Redis round trip's future is large, and only calls with shared state
        // should carry it.
        let Some(found) = Box::pin(sh.lookup_prefixes(&digests)).await else {
            return false;
        };
        let now_ms = shared::unix_ms();
        let mut learned = false;
        for (digest, at) in unknown.iter().zip(found) {
            let Some((region, target, expires)) = at else {
                continue;
            };
            let left = Duration::from_millis(expires.saturating_sub(now_ms));
            let mut r = self.prefixes.get(digest).unwrap_or(PrefixRecord {
                seen: 0,
                last: now,
                mean_gap_s: None,
                cached: None,
            });
            r.cached = Some((region, target, now + left));
            self.prefixes.insert(*digest, r);
            learned = true;
        }
        learned
    }

    /// Shares reservations and breakers with other replicas through `shared`; while it is
    /// unreachable each replica admits `1 / replicas` of every reservation.
    pub fn set_shared(&mut self, shared: Arc<shared::Shared>, config: &Config) {
        let replicas = u64::from(shared.replicas.max(1));
        let fallback = config
            .models
            .iter()
            .filter_map(|(id, m)| {
                let r = m.reserved()?;
                let share = ReservationConfig {
                    input_tokens_per_minute: r.input_tokens_per_minute / replicas,
                    output_tokens_per_minute: r.output_tokens_per_minute / replicas,
                };
                Some((id.clone(), Ledger::new(share, self.minute)))
            })
            .collect();
        self.fallback_ledgers = Mutex::new(fallback);
        shared::spawn_sync(&shared, self.breaker.open_for * 10);
        self.shared = Some(shared);
    }

    /// The shared state's health, when configured.
    pub fn shared_status(&self) -> Option<shared::SharedStatus> {
        self.shared.as_ref().map(|s| s.status())
    }

    /// Counts tokens with `counter` for cache placement (the default is [`CharEstimate`]).
    pub fn set_token_counter(&mut self, counter: std::sync::Arc<dyn TokenCounter>) {
        self.counter = counter;
    }

    /// A request's prefixes arrived at `now`; those at `checkpoints` are now cached at the target
    /// (written or read) with their TTLs.
    pub fn record_prefixes(
        &self,
        now: Instant,
        prefixes: &[Prefix],
        checkpoints: &[Checkpoint],
        region: &str,
        target: &str,
    ) {
        let mut published = Vec::new();
        for p in prefixes {
            let mut r = self.prefixes.get(&p.digest).unwrap_or(PrefixRecord {
                seen: 0,
                last: now,
                mean_gap_s: None,
                cached: None,
            });
            if r.seen > 0 {
                let gap = now.saturating_duration_since(r.last).as_secs_f64();
                r.mean_gap_s = Some(r.mean_gap_s.map_or(gap, |m| m + 0.3 * (gap - m)));
            }
            r.seen += 1;
            r.last = now;
            if let Some(c) = checkpoints.iter().find(|c| c.at == p.at) {
                let ttl = match c.ttl {
                    CacheTtl::FiveMinutes => Duration::from_secs(300),
                    CacheTtl::OneHour => Duration::from_secs(3600),
                };
                r.cached = Some((region.to_string(), target.to_string(), now + ttl));
                if self.shared.is_some() {
                    let expires = shared::unix_ms() + ttl.as_millis() as u64;
                    published.push((
                        p.digest.0,
                        (region.to_string(), target.to_string(), expires),
                    ));
                }
            }
            self.prefixes.insert(p.digest, r);
        }
        if let Some(sh) = &self.shared {
            sh.publish_prefixes(published);
        }
    }

    /// Adds a completed call to its family's cache totals.
    pub fn record_cache_use(&self, family: &str, usage: &crate::types::Usage, savings_usd: f64) {
        let mut totals = self.cache_totals.lock().unwrap_or_else(|p| p.into_inner());
        if !totals.contains_key(family) {
            totals.insert(family.to_string(), CacheTotals::default());
        }
        let t = totals.get_mut(family).expect("inserted above");
        t.calls += 1;
        t.new_tokens += u64::from(usage.input_tokens);
        t.cache_write_tokens += u64::from(usage.cache_write_tokens);
        t.cache_read_tokens += u64::from(usage.cache_read_tokens);
        t.savings_usd += savings_usd;
    }

    /// Cache totals per family (or model, for calls outside families).
    pub fn cache_totals(&self) -> std::collections::BTreeMap<String, CacheTotals> {
        self.cache_totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Remembers digests computed for a request, so that its prefixes are not digested again.
    pub fn remember_digests(&self, learned: Vec<(u128, Digested)>) {
        for (key, d) in learned {
            self.digests.insert(key, d);
        }
    }

    /// A view at `now` for the planner.
    pub fn at(&self, now: Instant) -> Snapshot<'_> {
        Snapshot { state: self, now }
    }

    fn with_target<R>(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        f: impl FnOnce(&mut TargetState) -> R,
    ) -> R {
        {
            let targets = self.targets.read().unwrap_or_else(|p| p.into_inner());
            if let Some(t) = lookup(&targets, region, id, tier) {
                let mut t = locked(t);
                return f(&mut t);
            }
        }
        let mut targets = self.targets.write().unwrap_or_else(|p| p.into_inner());
        insert(&mut targets, region, id, tier);
        let mut t = locked(lookup(&targets, region, id, tier).expect("inserted above"));
        let out = f(&mut t);
        drop(t);
        out
    }

    /// Admits an attempt through the target's breaker: `Some(is_probe)`, or `None` if open.
    pub fn admit(
        &self,
        now: Instant,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
    ) -> Option<bool> {
        let config = self.breaker;
        if let Some(sh) = &self.shared {
            match sh.remote_breaker(&shared::target_key(region, id, tier)) {
                Some(shared::RemoteBreaker::Open) => return None,
                // Another replica's breaker ran out: a probe, if this call gets the lease.
                Some(shared::RemoteBreaker::Probing) => {
                    return self
                        .with_target(region, id, tier, |t| t.breaker.admit(now, &config))
                        .map(|_| true)
                }
                // The fleet has no open breaker here. If this replica's own breaker is probing
                // and another replica's probe closed the target, it closes too; if the entry is
                // just missing (Redis restarted empty), it keeps to its own probe.
                None if sh.usable() => {
                    let closed = sh.take_closed_by_fleet(&shared::target_key(region, id, tier));
                    return self.with_target(region, id, tier, |t| {
                        if closed
                            && matches!(t.breaker.view(now, &config), BreakerView::HalfOpen { .. })
                        {
                            t.breaker.on_success();
                        }
                        t.breaker.admit(now, &config)
                    });
                }
                None => {}
            }
        }
        self.with_target(region, id, tier, |t| t.breaker.admit(now, &config))
    }

    /// Whether a probe of this target may go: with shared state, only the replica holding the
    /// fleet-wide lease probes (for the breaker's open period); without, always.
    pub async fn take_probe_lease(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
    ) -> bool {
        match &self.shared {
            Some(sh) => {
                // Boxed, as every Redis call on a call's path: only shared state pays its size.
                Box::pin(
                    sh.take_probe_lease(
                        &shared::target_key(region, id, tier),
                        self.breaker.open_for,
                    ),
                )
                .await
            }
            None => true,
        }
    }

    /// An attempt sent at `tier` succeeded, served at `served` (the tier the response
    /// reported), with the speed it showed: the breaker of what was sent closes; the samples
    /// of the learnt limits and hedge delay are the sent tier's (the next attempt sent so meets
    /// them), the moving averages the served tier's.
    pub fn record_success(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        served: Option<ServiceTier>,
        speed: &AttemptSpeed,
    ) {
        if let Some(sh) = &self.shared {
            sh.publish_closed(shared::target_key(region, id, tier));
        }
        self.with_target(region, id, tier, |t| {
            t.breaker.on_success();
            t.latency.clear_throttles();
            t.latency.record_samples(speed);
            if served == tier {
                t.latency.record_averages(speed);
            }
        });
        if served != tier {
            self.with_target(region, id, served, |t| t.latency.record_averages(speed));
        }
        self.outliers.record_success(region);
    }

    /// An attempt was cut by its learnt `limit` after `waited` (the learnt part of the limit):
    /// the window its limits are learnt from takes that in, so a target that slowed down gets
    /// a longer limit next time instead of being cut for good.
    pub fn record_cut(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        limit: crate::types::TimeLimit,
        waited: Duration,
    ) {
        use crate::types::TimeLimit as L;
        self.with_target(region, id, tier, |t| match limit {
            L::FirstToken | L::Answer => t.latency.record_first_token_cut(waited),
            L::Idle => t.latency.record_longest_gap(waited),
            L::Deadline => {}
        });
    }

    /// Admits a call booking `ask` (its two counts) against a target's per-minute quota `limits`:
    /// the fleet's count through Redis when shared state is configured and reachable, else
    /// this process's. `None` when it does not fit (unless `force`d: the last candidate goes
    /// anyway, and counts).
    pub async fn admit_quota(
        &self,
        now: Instant,
        region: &str,
        target: &str,
        limits: (u64, u64),
        ask: (u64, u64),
        force: bool,
    ) -> Option<QuotaClaim> {
        if let Some(sh) = self.shared.as_ref().filter(|sh| sh.usable()) {
            let key = quota_key(region, target);
            let (counted, capacity) = shared_quota_terms(limits, ask);
            match Box::pin(sh.reserve(&key, self.minute, capacity, counted.0, counted.1)).await {
                Some(Some(t)) => return Some(QuotaClaim::Shared(t)),
                Some(None) => {
                    self.full_until
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(key, now + FULL_HINT);
                    if !force {
                        return None;
                    }
                }
                None => sh.note_fallback(),
            }
        }
        self.quotas
            .admit(now, region, target, limits, ask, force)
            .map(QuotaClaim::Local)
    }

    /// Settles a quota admission on what the request used (nothing, when it was refused).
    pub fn settle_quota(
        &self,
        region: &str,
        target: &str,
        limits: (u64, u64),
        claim: QuotaClaim,
        used: (u64, u64),
    ) {
        match claim {
            QuotaClaim::Local(t) => self.quotas.settle(region, target, t, used),
            QuotaClaim::Shared(t) => {
                if let Some(sh) = &self.shared {
                    let (used, _) = shared_quota_terms(limits, used);
                    sh.settle(&quota_key(region, target), t, used.0, used.1);
                }
            }
        }
    }

    /// The service served a reserved call from the reservation: the ledger books its actual
    /// usage (also when the ledger had expected it to overflow) and forgets a "full" mark.
    pub fn reservation_served(
        &self,
        now: Instant,
        model: &str,
        ticket: Option<ReservationTicket>,
        input: u64,
        output: u64,
    ) {
        self.full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(model);
        match ticket {
            Some(t) => self.correct_call(model, t, input, output),
            None if self.shared.is_none() => {
                if let Some(l) = self
                    .ledgers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_mut(model)
                {
                    l.record(now, input, output);
                }
            }
            // The fleet's ledger books what its replicas admitted; a call it refused and the
            // service served anyway only shows that the ledger was pessimistic.
            None => {}
        }
    }

    /// The service served a reserved call at standard: the reservation was full, whatever the
    /// ledger thought. Its estimate is released and the reservation is taken as full for a
    /// twelfth of the window (5 s of a minute), after which the next call finds out again.
    pub fn reservation_overflowed(
        &self,
        now: Instant,
        model: &str,
        ticket: Option<ReservationTicket>,
    ) {
        if let Some(t) = ticket {
            self.correct_call(model, t, 0, 0);
        }
        self.full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_string(), now + self.minute / 12);
    }

    /// The regions the router may call: at most `routing.outlier.max_ejected_share` of them
    /// are ejected at once.
    pub fn know_regions<'r>(&self, regions: impl IntoIterator<Item = &'r str>) {
        self.outliers.know_regions(regions);
    }

    /// An attempt in `region` stalled, reset, timed out or met a server error, or had no first
    /// token at its hedge delay: it counts toward ejecting the region (`routing.outlier`).
    pub fn record_regional_failure(
        &self,
        now: Instant,
        region: &str,
        evidence: outlier::Evidence,
    ) -> Option<outlier::Ejection> {
        self.outliers.record_failure(now, region, evidence)
    }

    /// An attempt failed in a way that counts against the target.
    pub fn record_failure(
        &self,
        now: Instant,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        throttled: bool,
    ) {
        let config = self.breaker;
        let opened = self.with_target(region, id, tier, |t| {
            let before = t.breaker.view(now, &config);
            t.breaker.on_failure(now, &config);
            if throttled {
                t.latency.record_throttle(now);
            }
            before != BreakerView::Open && t.breaker.view(now, &config) == BreakerView::Open
        });
        if let Some(sh) = &self.shared {
            let key = shared::target_key(region, id, tier);
            // A failed probe of the fleet's breaker opens it again for everyone.
            if opened || sh.remote_breaker(&key).is_some() {
                sh.publish_open(key, config.open_for);
            }
        }
    }

    /// A target refused access (a model not enabled in its region): its breaker opens at once
    /// for `routing.breaker.access_denied_for`, fleet-wide with shared state.
    pub fn record_refusal(&self, now: Instant, region: &str, id: &str, tier: Option<ServiceTier>) {
        let length = self.breaker.access_denied_for;
        self.with_target(region, id, tier, |t| t.breaker.open_for(now, length));
        if let Some(sh) = &self.shared {
            sh.publish_open(shared::target_key(region, id, tier), length);
        }
    }

    /// An attempt ended without a verdict on the target (cancelled): a probe slot is freed.
    pub fn release_probe(&self, region: &str, id: &str, tier: Option<ServiceTier>) {
        self.with_target(region, id, tier, |t| t.breaker.release_probe());
    }

    /// Admits a call against a model's reservation: the fleet's through Redis when shared
    /// state is configured and reachable, else this process's (its share, when Redis is down).
    pub async fn reserve_call(
        &self,
        now: Instant,
        model: &str,
        input: u64,
        output: u64,
    ) -> Option<ReservationTicket> {
        let Some(sh) = &self.shared else {
            return self
                .reserve(now, model, input, output)
                .map(ReservationTicket::Local);
        };
        let capacity = self
            .ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)?
            .capacity();
        if sh.usable() {
            match Box::pin(sh.reserve(model, self.minute, capacity, input, output)).await {
                Some(Some(t)) => return Some(ReservationTicket::Shared(t)),
                Some(None) => {
                    self.full_until
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(model.to_string(), now + FULL_HINT);
                    return None;
                }
                None => {}
            }
        }
        sh.note_fallback();
        self.fallback_ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)?
            .admit(now, input, output)
            .map(ReservationTicket::Fallback)
    }

    /// Replaces a reservation's estimate with actual usage.
    pub fn correct_call(&self, model: &str, ticket: ReservationTicket, input: u64, output: u64) {
        match ticket {
            ReservationTicket::Local(t) => self.correct_reservation(model, t, input, output),
            ReservationTicket::Fallback(t) => {
                if let Some(l) = self
                    .fallback_ledgers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_mut(model)
                {
                    l.correct(t, input, output);
                }
            }
            ReservationTicket::Shared(t) => {
                if let Some(sh) = &self.shared {
                    sh.settle(model, t, input, output);
                }
            }
        }
    }

    /// Admits a call against a model's reservation in this process's ledger.
    pub fn reserve(&self, now: Instant, model: &str, input: u64, output: u64) -> Option<Ticket> {
        self.ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)?
            .admit(now, input, output)
    }

    /// Corrects a reservation with actual usage.
    pub fn correct_reservation(&self, model: &str, ticket: Ticket, input: u64, output: u64) {
        if let Some(l) = self
            .ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)
        {
            l.correct(ticket, input, output);
        }
    }

    /// Releases a reservation the service did not serve.
    pub fn release_reservation(&self, model: &str, ticket: Ticket) {
        self.correct_reservation(model, ticket, 0, 0);
    }

    /// Tokens admitted against a model's reservation in the current window.
    pub fn reservation_used(&self, now: Instant, model: &str) -> Option<(u64, u64)> {
        self.ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)
            .map(|l| l.used(now))
    }

    /// What a target's time limits at `tier` are learnt from: the `q` quantile of its recent
    /// first-token times, net of their input at `prefill_tokens_per_second`, and of its
    /// streams' longest gaps, each with its count.
    pub fn learned_latency(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        q: f64,
        prefill_tokens_per_second: f64,
    ) -> LearnedLatency {
        self.with_target(region, id, tier, |t| LearnedLatency {
            ttft: t.latency.first_token_quantile(q, prefill_tokens_per_second),
            gap: t.latency.gap_quantile(q),
        })
    }

    /// A SageMaker endpoint refused to stream: its calls are sent whole from now on.
    pub fn record_refuses_streaming(&self, region: &str, endpoint: &str) {
        self.with_target(region, endpoint, None, |t| t.refuses_streaming = true);
    }

    /// Whether a SageMaker endpoint has refused to stream.
    pub fn refuses_streaming(&self, region: &str, endpoint: &str) -> bool {
        let targets = self.targets.read().unwrap_or_else(|p| p.into_inner());
        lookup(&targets, region, endpoint, None).is_some_and(|t| locked(t).refuses_streaming)
    }

    /// A quantile of a target's recent first-token times (attempts cut by a limit left out),
    /// and how many it is of, if any were seen.
    pub fn ttft_quantile(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        q: f64,
    ) -> Option<(Duration, usize)> {
        self.with_target(region, id, tier, |t| t.latency.ttft_quantile(q))
    }

    /// A call started (it adds to the retry budget).
    pub fn record_call(&self, now: Instant) {
        self.budget
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record_call(now);
    }

    /// Takes one retry, failover or hedge from the budget, if it has one.
    pub fn spend_extra_attempt(&self, now: Instant) -> bool {
        self.budget
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_spend(now)
    }
}

/// The state at one instant, as the planner reads it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    state: &'a State,
    now: Instant,
}

impl Observations for Snapshot<'_> {
    fn now(&self) -> Instant {
        self.now
    }

    fn target(&self, region: &str, id: &str, tier: Option<ServiceTier>) -> TargetView {
        let remote = self
            .state
            .shared
            .as_ref()
            .and_then(|sh| sh.remote_breaker(&shared::target_key(region, id, tier)))
            .map(|r| match r {
                shared::RemoteBreaker::Open => BreakerView::Open,
                shared::RemoteBreaker::Probing => BreakerView::HalfOpen {
                    probe_available: true,
                },
            });
        let ejected = self
            .state
            .outliers
            .is_ejected(self.now, region)
            .then_some(BreakerView::RegionEjected);
        let targets = self.state.targets.read().unwrap_or_else(|p| p.into_inner());
        let Some(cell) = lookup(&targets, region, id, tier) else {
            return TargetView {
                breaker: ejected.or(remote).unwrap_or(BreakerView::Closed),
                ..TargetView::UNKNOWN
            };
        };
        let t = locked(cell);
        TargetView {
            breaker: ejected
                .or(remote)
                .unwrap_or_else(|| t.breaker.view(self.now, &self.state.breaker)),
            ttft: t.latency.ttft(),
            tokens_per_second: t.latency.tokens_per_second(),
            throttle_score: t.latency.throttle_score(self.now),
        }
    }

    fn reserved_room(&self, model: &str, input: u64, output: u64) -> Option<bool> {
        // A recent overflow reported by the service, or (shared) a recent "full" from the
        // fleet's ledger.
        let full = self
            .state
            .full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .is_some_and(|until| *until > self.now);
        if self.state.shared.is_some() {
            // The fleet's ledger decides at admission.
            return self
                .state
                .ledgers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(model)
                .then_some(!full);
        }
        let mut ledgers = self.state.ledgers.lock().unwrap_or_else(|p| p.into_inner());
        ledgers
            .get_mut(model)
            .map(|l| !full && l.has_room(self.now, input, output))
    }

    fn quota_room(&self, region: &str, target: &str, limits: (u64, u64), ask: (u64, u64)) -> bool {
        if self.state.shared.is_some() {
            // The fleet's count decides at admission; a recent "full" spares the round trip.
            return self
                .state
                .full_until
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&quota_key(region, target))
                .is_none_or(|until| *until <= self.now);
        }
        self.state
            .quotas
            .has_room(self.now, region, target, limits, ask)
    }

    fn prefix(&self, digest: &PrefixDigest) -> Option<PrefixStats> {
        let r = self.state.prefixes.get(digest)?;
        Some(PrefixStats {
            seen: r.seen,
            since_last: self.now.saturating_duration_since(r.last),
            mean_gap: r.mean_gap_s.map(Duration::from_secs_f64),
            cached_in: r
                .cached
                .filter(|(_, _, exp)| *exp > self.now)
                .map(|(region, target, _)| (region, target)),
        })
    }

    fn token_counter(&self) -> &dyn TokenCounter {
        self.state.counter.as_ref()
    }

    fn digest_memo(&self) -> &dyn DigestMemo {
        self.state
    }
}

impl DigestMemo for State {
    fn digested(&self, key: u128) -> Option<Digested> {
        self.digests.get(&key)
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("breaker", &self.breaker)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

    #[test]
    fn the_served_tier_teaches_latency_and_the_reservation() {
        let config = Config::from_toml_str(&format!(
            "[models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = 1000, output_tokens_per_minute = 100 }}\n"
        ))
        .unwrap();
        let state = State::new(&config);
        let now = crate::time::now();
        let (region, id) = ("us-east-1", "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        // Sent reserved, served standard: the moving averages are standard's, the samples of
        // the learnt limits and hedge delay reserved's (what the next call sent reserved meets).
        state.record_success(
            region,
            id,
            Some(ServiceTier::Reserved),
            Some(ServiceTier::Standard),
            &AttemptSpeed {
                ttft: Some(Duration::from_millis(300)),
                ..AttemptSpeed::default()
            },
        );
        let view = |tier| state.at(now).target(region, id, Some(tier));
        assert!(view(ServiceTier::Standard).ttft.is_some());
        assert!(view(ServiceTier::Reserved).ttft.is_none());
        assert!(state
            .ttft_quantile(region, id, Some(ServiceTier::Reserved), 1.0)
            .is_some());
        assert!(state
            .ttft_quantile(region, id, Some(ServiceTier::Standard), 1.0)
            .is_none());

        // Bedrock overflowed a call: the reservation is taken as full for a twelfth of the
        // minute, then asked again.
        assert_eq!(state.at(now).reserved_room(SONNET, 10, 10), Some(true));
        state.reservation_overflowed(now, SONNET, None);
        assert_eq!(state.at(now).reserved_room(SONNET, 10, 10), Some(false));
        let later = now + Duration::from_secs(6);
        assert_eq!(state.at(later).reserved_room(SONNET, 10, 10), Some(true));

        // Bedrock served a call the ledger had no ticket for: it is booked.
        state.reservation_served(later, SONNET, None, 900, 90);
        assert_eq!(state.reservation_used(later, SONNET), Some((900, 90)));
        assert_eq!(state.at(later).reserved_room(SONNET, 200, 20), Some(false));
    }

    #[test]
    fn a_quota_with_nothing_admitted_has_room_within_its_limits() {
        let state = State::new(&Config::default());
        let obs = state.at(crate::time::now());
        assert!(obs.quota_room("us-east-1", "m", (u64::MAX, 1000), (1, 1000)));
        assert!(!obs.quota_room("us-east-1", "m", (u64::MAX, 1000), (1, 1001)));
        assert!(!obs.quota_room("us-east-1", "m", (500, 1000), (501, 1)));
    }
}
