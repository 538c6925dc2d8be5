//! Live state the planner reads and execution writes: per-target circuit breakers, latency
//! estimates and throttle scores, reserved-capacity ledgers, and the retry budget.
//!
//! The planner reads it through [`Observations`], at a time handed to it, so that planning stays
//! a pure function of its inputs; execution updates it as outcomes arrive.
//!
//! `State` is three owned parts, each a struct with its own fields and its Redis side under
//! `shared/`: [`Health`] (`health.rs`: breakers, latency, outliers; `known.rs`: what other
//! processes learnt, and `saved.rs`, its file between runs), [`Capacity`] (`capacity.rs`:
//! reservations, quotas and concurrency) and [`Prefixes`] (`prefixes.rs`: prefix memory and
//! cache totals); here, the parts together, the retry budget and the planner's [`Snapshot`].

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
pub use capacity::{Capacity, QuotaClaim, ReservationTicket};
use health::lookup;
pub use health::{Health, LearnedLatency};
pub use known::LatencySummary;
pub use latency::{AttemptSpeed, LatencyTrack, Observed};
pub use prefixes::{CacheTotals, Prefixes};

pub use ledger::{Ledger, Ticket};

use crate::config::Config;
use crate::plan::prompt_cache::{
    CharEstimate, DigestMemo, Digested, Prefix, PrefixDigest, PrefixStats, TokenCounter,
};
use crate::types::Checkpoint;
use crate::types::ServiceTier;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The router's live state, in process: its three parts, the retry budget, and the state
/// shared with other replicas when configured.
pub struct State {
    health: Health,
    capacity: Capacity,
    prefixes: Prefixes,
    budget: Mutex<RetryBudget>,
    /// State shared with other replicas, when configured.
    shared: Option<Arc<shared::Shared>>,
}

impl State {
    /// Fresh state for a configuration (its reservations, breaker and budget settings).
    pub fn new(config: &Config) -> Self {
        Self {
            health: Health::new(config),
            capacity: Capacity::new(config),
            prefixes: Prefixes::default(),
            budget: Mutex::new(RetryBudget::new(config.routing.budget)),
            shared: None,
        }
    }

    /// Targets' health: breakers, latency, outliers, what other processes knew.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// Capacity: reservations, quotas, each target's concurrency.
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    /// Prefix memory and cache totals.
    pub fn prefixes(&self) -> &Prefixes {
        &self.prefixes
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
        shared::spawn_sync(&shared, self.health.breaker.open_for * 10);
        self.capacity.share(&shared, config);
        self.health.shared = Some(Arc::clone(&shared));
        self.prefixes.shared = Some(Arc::clone(&shared));
        self.shared = Some(shared);
    }

    /// The shared state's health, when configured.
    pub fn shared_status(&self) -> Option<shared::SharedStatus> {
        self.shared.as_ref().map(|s| s.status())
    }

    /// Counts tokens with `counter` for cache placement (the default is [`CharEstimate`]).
    pub fn set_token_counter(&mut self, counter: Arc<dyn TokenCounter>) {
        self.prefixes.set_token_counter(counter);
    }

    /// Each target's breaker at `now` (as plans see it: the fleet's, else this process's) and
    /// each region's ejection, for the metrics; failed attempts are the telemetry's to add.
    pub fn health_figures(&self, now: Instant) -> crate::telemetry::health::HealthFigures {
        use crate::telemetry::health::{BreakerState, HealthFigures, RegionFigures, TargetFigures};
        let health = &self.health;
        let mut cells = Vec::new();
        {
            let targets = health.targets.read().unwrap_or_else(|p| p.into_inner());
            for (region, ids) in targets.iter() {
                for (id, tiers) in ids {
                    for tier in tiers.keys() {
                        cells.push((region.clone(), id.clone(), *tier));
                    }
                }
            }
        }
        let view = self.at(now);
        let targets = cells
            .into_iter()
            .map(|(region, target, tier)| {
                let breaker = match view.target(&region, &target, tier).breaker {
                    BreakerView::Closed | BreakerView::RegionEjected => BreakerState::Closed,
                    BreakerView::HalfOpen { .. } => BreakerState::HalfOpen,
                    BreakerView::Open => BreakerState::Open,
                };
                TargetFigures {
                    region,
                    target,
                    tier,
                    breaker,
                    ..TargetFigures::default()
                }
            })
            .collect();
        let regions = health
            .outliers
            .known()
            .into_iter()
            .map(|region| {
                let ejected = health.outliers.is_ejected(now, &region);
                (region, RegionFigures { ejected })
            })
            .collect();
        HealthFigures { targets, regions }
    }

    /// A view at `now` for the planner.
    pub fn at(&self, now: Instant) -> Snapshot<'_> {
        Snapshot { state: self, now }
    }

    /// A call started (it adds to the retry budget).
    pub fn record_call(&self, now: Instant) {
        locked(&self.budget).record_call(now);
    }

    /// Takes one retry, failover or hedge from the budget, if it has one.
    pub fn spend_extra_attempt(&self, now: Instant) -> bool {
        locked(&self.budget).try_spend(now)
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
        let health = &self.state.health;
        let ejected = health
            .outliers
            .is_ejected(self.now, region)
            .then_some(BreakerView::RegionEjected);
        let targets = health.targets.read().unwrap_or_else(|p| p.into_inner());
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
                .unwrap_or_else(|| t.breaker.view(self.now, &health.breaker)),
            ttft: t.latency.ttft(),
            tokens_per_second: t.latency.tokens_per_second(),
            throttle_score: t.latency.throttle_score(self.now),
        }
    }

    fn reserved_room(&self, model: &str, input: u64, output: u64) -> Option<bool> {
        // A recent overflow reported by the service, or (shared) a recent "full" from the
        // fleet's ledger.
        let capacity = &self.state.capacity;
        let full = capacity
            .full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .is_some_and(|until| *until > self.now);
        if self.state.shared.is_some() {
            // The fleet's ledger decides at admission.
            return capacity
                .ledgers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(model)
                .then_some(!full);
        }
        let mut ledgers = capacity.ledgers.lock().unwrap_or_else(|p| p.into_inner());
        ledgers
            .get_mut(model)
            .map(|l| !full && l.has_room(self.now, input, output))
    }

    fn quota_room(&self, region: &str, target: &str, limits: (u64, u64), ask: (u64, u64)) -> bool {
        if self.state.shared.is_some() {
            // The fleet's count decides at admission; a recent "full" spares the round trip.
            return self
                .state
                .capacity
                .full_until
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&quota_key(region, target))
                .is_none_or(|until| *until <= self.now);
        }
        self.state
            .capacity
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
        self.state
            .capacity
            .headroom
            .load(self.now, region, id, tier, class)
    }

    fn prefix(&self, digest: &PrefixDigest) -> Option<PrefixStats> {
        let r = self.state.prefixes.records.get(digest)?;
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
        self.state.prefixes.counter.as_ref()
    }

    fn digest_memo(&self) -> &dyn DigestMemo {
        &self.state.prefixes
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("breaker", &self.health.breaker)
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
        state.health().record_success(
            region,
            id,
            Some(ServiceTier::RESERVED),
            Some(ServiceTier::STANDARD),
            &AttemptSpeed {
                ttft: Some(Duration::from_millis(300)),
                ..AttemptSpeed::default()
            },
        );
        let view = |tier| state.at(now).target(region, id, Some(tier));
        assert!(view(ServiceTier::STANDARD).ttft.is_some());
        assert!(view(ServiceTier::RESERVED).ttft.is_none());
        assert!(
            state
                .health()
                .ttft_quantile(region, id, Some(ServiceTier::RESERVED), 1.0)
                .is_some()
        );
        assert!(
            state
                .health()
                .ttft_quantile(region, id, Some(ServiceTier::STANDARD), 1.0)
                .is_none()
        );

        // Bedrock overflowed a call: the reservation is taken as full for a twelfth of the
        // minute, then asked again.
        assert_eq!(state.at(now).reserved_room(SONNET, 10, 10), Some(true));
        state.capacity().reservation_overflowed(now, SONNET, None);
        assert_eq!(state.at(now).reserved_room(SONNET, 10, 10), Some(false));
        let later = now + Duration::from_secs(6);
        assert_eq!(state.at(later).reserved_room(SONNET, 10, 10), Some(true));

        // Bedrock served a call the ledger had no ticket for: it is booked.
        state
            .capacity()
            .reservation_served(later, SONNET, None, 900, 90);
        assert_eq!(
            state.capacity().reservation_used(later, SONNET),
            Some((900, 90))
        );
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
