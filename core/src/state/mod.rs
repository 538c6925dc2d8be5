//! Live state the planner reads and execution writes: per-target circuit breakers, latency
//! estimates and throttle scores, reserved-capacity ledgers, and the retry budget.
//!
//! The planner reads it through [`Observations`], at a time handed to it, so that planning stays
//! a pure function of its inputs; execution updates it as outcomes arrive.
//!
//! One concern a file, each an `impl State` block with its Redis side in `shared.rs`:
//! `health.rs` (breakers, latency, outliers), `capacity.rs` (reservations and quotas),
//! `prefixes.rs` (prefix memory and cache totals), `known.rs` (what other processes learnt,
//! and `saved.rs`, its file between runs); here, the state itself, the retry budget's
//! two calls and the planner's [`Snapshot`].

pub mod breaker;
pub mod budget;
mod capacity;
mod health;
pub mod known;
pub mod latency;
pub mod ledger;
pub mod load;
pub mod outlier;
mod prefixes;
pub mod quota;
pub mod saved;
pub mod shared;

use foldhash::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

pub use crate::config::{BreakerConfig, BudgetConfig, ReservationConfig};
pub use crate::plan::observe::{Fresh, Load, Observations, TargetView};
pub use crate::types::BreakerView;
pub use breaker::Breaker;
pub use budget::RetryBudget;
use capacity::quota_key;
pub use capacity::{QuotaClaim, ReservationTicket};
pub use health::LearnedLatency;
use health::{TargetMap, lookup};
pub use known::LatencySummary;
pub use latency::{AttemptSpeed, LatencyTrack, Observed};
pub use prefixes::CacheTotals;
use prefixes::{PREFIX_LOOKUP_TTL, PrefixRecord};

pub use ledger::{Ledger, Ticket};

use crate::config::Config;
use crate::plan::prompt_cache::{
    CharEstimate, DigestMemo, Digested, Prefix, PrefixDigest, PrefixStats, TokenCounter,
};
use crate::types::Checkpoint;
use crate::types::{CacheTtl, ServiceTier};

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
    /// Targets' latency as other processes knew it (the fleet, or this process's last run).
    known: known::Known,
    /// The providers that have answered this router: its credentials are good there.
    answered_by: RwLock<Vec<crate::types::Provider>>,
    /// Each target's attempts in flight against its concurrency, and calls waiting for a slot.
    headroom: Arc<load::Headroom>,
    /// How long after a throttle a learnt limit is held before it grows again.
    probe_after: Duration,
}

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
            known: known::Known::default(),
            answered_by: RwLock::default(),
            headroom: Arc::new(load::Headroom::new(config.routing.concurrency)),
            probe_after: config.routing.concurrency.probe_after,
        }
    }

    /// Each target's attempts in flight against its concurrency, and the calls waiting for a
    /// slot.
    pub fn headroom(&self) -> &load::Headroom {
        &self.headroom
    }

    /// Whether state is shared with other replicas.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The state shared with other replicas, when configured.
    pub fn shared(&self) -> Option<&Arc<shared::Shared>> {
        self.shared.as_ref()
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
        self.headroom.share_with_fleet(shared.replicas);
        spawn_lease_renewal(&self.headroom, &shared, self.probe_after);
        self.shared = Some(shared);
    }

    /// Leases slots of a target from the fleet (with shared state: one Redis round trip,
    /// within `shared.timeout`; unanswered, this replica takes its share of its own limit).
    pub async fn lease_slots(&self, region: &str, id: &str, ask: shared::LeaseAsk) {
        let Some(sh) = &self.shared else {
            return;
        };
        let answer = if sh.usable() {
            sh.lease_slots(region, id, ask, self.probe_after, true)
                .await
        } else {
            None
        };
        self.headroom.leased(
            crate::time::now(),
            (region, id),
            ask,
            answer,
            sh.sync_interval,
        );
    }

    /// A throttle taught a target's limit: with shared state, the fleet learns it too.
    pub fn teach_limit(&self, region: &str, id: &str, lesson: shared::Lesson) {
        if let Some(sh) = &self.shared {
            sh.teach_limit(region, id, lesson);
        }
    }

    /// The shared state's health, when configured.
    pub fn shared_status(&self) -> Option<shared::SharedStatus> {
        self.shared.as_ref().map(|s| s.status())
    }

    /// Counts tokens with `counter` for cache placement (the default is [`CharEstimate`]).
    pub fn set_token_counter(&mut self, counter: std::sync::Arc<dyn TokenCounter>) {
        self.counter = counter;
    }

    /// A view at `now` for the planner.
    pub fn at(&self, now: Instant) -> Snapshot<'_> {
        Snapshot { state: self, now }
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

/// Renews (or gives back) this replica's leases of targets' slots every `sync_interval`, off
/// the calls' path, while the router lives.
fn spawn_lease_renewal(
    headroom: &Arc<load::Headroom>,
    shared: &Arc<shared::Shared>,
    probe_after: Duration,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (headroom, shared) = (Arc::downgrade(headroom), Arc::downgrade(shared));
    let every = shared
        .upgrade()
        .map_or(Duration::from_secs(1), |s| s.sync_interval);
    handle.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (Some(headroom), Some(shared)) = (headroom.upgrade(), shared.upgrade()) else {
                return;
            };
            if !shared.usable() {
                continue;
            }
            for (region, id, ask) in headroom.renewals(crate::time::now()) {
                let answer = shared
                    .lease_slots(&region, &id, ask, probe_after, false)
                    .await;
                headroom.leased(crate::time::now(), (&region, &id), ask, answer, every);
            }
        }
    });
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

    fn load(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        class: crate::types::SloClass,
    ) -> Load {
        self.state.headroom.load(self.now, region, id, tier, class)
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
        assert!(
            state
                .ttft_quantile(region, id, Some(ServiceTier::Reserved), 1.0)
                .is_some()
        );
        assert!(
            state
                .ttft_quantile(region, id, Some(ServiceTier::Standard), 1.0)
                .is_none()
        );

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
