//! What the planner reads of the live state: the [`Observations`] trait, which the router's
//! [`State`](crate::state::State) implements, and [`Fresh`], a state that has seen nothing.
//! Planning reads time from here too, so that it stays a pure function of its inputs.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::prompt_cache::{
    CharEstimate, DigestMemo, NoMemo, PrefixDigest, PrefixStats, TokenCounter,
};
use crate::types::{BreakerView, ServiceTier};

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
