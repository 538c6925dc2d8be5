//! What the planner reads of the live state: the [`Observations`] trait, which the router's
//! [`State`](crate::state::State) implements, and [`Fresh`], a state that has seen nothing.
//! Planning reads time from here too, so that it stays a pure function of its inputs.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::prompt_cache::{
    CharEstimate, DigestMemo, NoMemo, PrefixDigest, PrefixStats, TokenCounter,
};
use crate::types::{BreakerView, ServiceTier, SloClass};

/// What the planner may know about one (region, target id, tier).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TargetView {
    /// Its breaker as the planner sees it (closed, open, half-open, or its region ejected).
    pub breaker: BreakerView,
    /// Moving average of time to first token.
    pub ttft: Option<Duration>,
    /// Moving average of output tokens per second.
    pub tokens_per_second: Option<f64>,
    /// Throttles lately (decayed).
    pub throttle_score: f64,
}

impl TargetView {
    /// A target nothing is known about yet.
    pub const UNKNOWN: TargetView = TargetView {
        breaker: BreakerView::Closed,
        ttft: None,
        tokens_per_second: None,
        throttle_score: 0.0,
    };
}

/// A target's concurrency as the router sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Load {
    /// Attempts this router has in flight there, every lane.
    pub in_flight: u32,
    /// The most a call of the class asked about may have in flight there: configured, or
    /// learnt from throttles; `None` when not counted (reserved capacity).
    pub limit: Option<u32>,
    /// Lately it refused for capacity more often than it answered: a target throttling as
    /// such (a spent quota, a region throttling), not one at its concurrency.
    pub refusing: bool,
}

impl Load {
    /// Nothing in flight, nothing known.
    pub const IDLE: Load = Load {
        in_flight: 0,
        limit: None,
        refusing: false,
    };

    /// Whether one more attempt would exceed the limit.
    pub fn is_full(&self) -> bool {
        self.limit.is_some_and(|l| self.in_flight >= l)
    }

    /// The share of its limit in use; attempts in flight where the limit is unknown (so that
    /// targets of unknown capacity are loaded evenly).
    pub fn utilisation(&self) -> f64 {
        match self.limit {
            Some(l) => f64::from(self.in_flight) / f64::from(l.max(1)),
            None => f64::from(self.in_flight),
        }
    }
}

/// The live state as the planner reads it.
pub trait Observations {
    /// The time planning happens at.
    fn now(&self) -> Instant;
    /// What is known about a target at a tier (`None` for SageMaker).
    fn target(&self, region: &str, id: &str, tier: Option<ServiceTier>) -> TargetView;
    /// Whether a model's reservation has room for a call of this size; `None` when the model
    /// has no reservation.
    fn reserved_room(&self, model: &str, input_tokens: u64, output_tokens: u64) -> Option<bool>;
    /// Whether one more call booking `ask` (its two counts at admission, from
    /// [`QuotaTerms::at_admission`](crate::config::QuotaTerms::at_admission)) fits a target's
    /// per-minute quota `limits` now.
    fn quota_room(
        &self,
        _region: &str,
        _target: &str,
        _limits: (u64, u64),
        _ask: (u64, u64),
    ) -> bool {
        true
    }
    /// A target's attempts in flight and its concurrency for a call of `class` at `tier`
    /// (see `[routing.concurrency]`).
    fn load(&self, _region: &str, _id: &str, _tier: Option<ServiceTier>, _class: SloClass) -> Load {
        Load::IDLE
    }
    /// What was seen of a prompt prefix before, if anything.
    fn prefix(&self, _digest: &PrefixDigest) -> Option<PrefixStats> {
        None
    }
    /// How tokens are counted for cache placement.
    fn token_counter(&self) -> &dyn TokenCounter {
        &CharEstimate
    }
    /// Digests of prompt prefixes computed before.
    fn digest_memo(&self) -> &dyn DigestMemo {
        &NoMemo
    }
}

/// Observations of a router that has seen nothing: every target unknown, no reservations.
#[derive(Debug, Clone, Copy)]
pub struct Fresh(pub Instant);

impl Observations for Fresh {
    fn now(&self) -> Instant {
        self.0
    }
    fn target(&self, _: &str, _: &str, _: Option<ServiceTier>) -> TargetView {
        TargetView::UNKNOWN
    }
    fn reserved_room(&self, _: &str, _: u64, _: u64) -> Option<bool> {
        None
    }
}
