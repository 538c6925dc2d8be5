//! One attempt's bookkeeping: breaker admission, reserved-capacity tickets, and what its
//! outcome teaches the live state. Dropping an unsettled attempt (cancellation, a lost hedge)
//! frees its probe slot and its reservation.

use std::time::{Duration, Instant};

use super::verdict::{RegionSign, Verdict};
use crate::config::QuotaTerms;
use crate::state::QuotaClaim;
use crate::state::{ReservationTicket, State};
use crate::types::Attempt;
use crate::types::ServiceTier;
use crate::types::{Error, ErrorKind};
use crate::types::{Timings, Usage};

/// The `tracing` span of one attempt: its model, target, region and tier.
pub(super) fn span(attempt: &Attempt) -> tracing::Span {
    tracing::info_span!(
        "laneway.attempt",
        model = %attempt.model,
        target = attempt.target.id(),
        region = attempt.target.region(),
        tier = attempt.tier.map(|t| t.as_str()).unwrap_or(""),
    )
}

/// The back-off before retry round `round` (0 for the first after the plan's own): a random
/// wait in `[0, min(base * 2^round, cap)]`, "full jitter", so that callers who failed together
/// do not retry together.
pub fn backoff(base: Duration, cap: Duration, round: u32) -> Duration {
    let ceiling = base
        .checked_mul(1u32.checked_shl(round).unwrap_or(u32::MAX))
        .unwrap_or(cap)
        .min(cap);
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rand::Rng::gen_range(&mut rand::thread_rng(), 0..=nanos))
}

/// An attempt in flight.
pub struct InFlight<'a> {
    state: &'a State,
    pub attempt: Attempt,
    ticket: Option<ReservationTicket>,
    /// Whether it holds one of its breaker's probe slots (only then may it free one).
    probe: bool,
    settled: bool,
    /// When the attempt was admitted (on the call's clock, tokio's): its own TTFT counts from
    /// here, not from the call's start.
    started: tokio::time::Instant,
    /// Its admission against the target's on-demand quota, the quota's limits and the
    /// model's output burndown.
    quota: Option<(QuotaClaim, QuotaTerms)>,
    /// The time limit that ended it, if one did (its length and source go in the decision).
    pub fired: Option<super::limits::Bound>,
    /// When its own first event arrived (a stream's): its TTFT, whatever came before it.
    pub first_event: Option<tokio::time::Instant>,
    /// Its own time limits, once asked for (`Run::attempt_limits`).
    pub limits: Option<super::limits::AttemptLimits>,
    /// Sent whole rather than streamed (a SageMaker endpoint that does not stream), and why.
    pub sent_whole: Option<crate::types::WholeWhy>,
    /// Its answer came whole (sent whole for any reason): when it came is not a first token's
    /// time, nor its events' spacing a stream's, so neither is learnt from.
    pub answered_whole: bool,
    /// Its slot on the target's concurrency (none for reserved capacity), given back when it
    /// ends.
    pub(super) slot: Option<crate::state::load::Slot<'a>>,
}

/// What an attempt's end did to its region (for the decision).
pub(super) type RegionVerdict = Option<crate::state::outlier::Ejection>;

impl<'a> InFlight<'a> {
    /// Admits the attempt through its breaker (`None`: the breaker is open and `force` is off)
    /// and, on the reserved tier, books its estimate in the reservation's ledger when the
    /// ledger has room (the tier stays reserved either way: Bedrock decides the overflow).
    pub async fn admit(
        state: &'a State,
        attempt: Attempt,
        estimate: (u64, u64),
        force: bool,
    ) -> Option<Self> {
        let now = crate::time::now();
        let (region, id, tier) = (attempt.target.region(), attempt.target.id(), attempt.tier);
        let verdict = state.health().admit(now, region, id, tier);
        if verdict == Some(false) && tier != Some(ServiceTier::RESERVED) {
            // The common case, without a wait: a closed breaker, no reservation.
            return Some(Self::admitted(state, attempt, None, false));
        }
        // A probe (which, with shared state, needs the fleet's lease) or the reserved tier may
        // wait on Redis: boxed, so that every call's future does not carry that size.
        Box::pin(Self::admit_waiting(
            state, attempt, estimate, force, verdict, now,
        ))
        .await
    }

    fn admitted(
        state: &'a State,
        attempt: Attempt,
        ticket: Option<ReservationTicket>,
        probe: bool,
    ) -> Self {
        Self {
            state,
            attempt,
            ticket,
            probe,
            settled: false,
            started: tokio::time::Instant::now(),
            quota: None,
            fired: None,
            first_event: None,
            limits: None,
            sent_whole: None,
            answered_whole: false,
            slot: None,
        }
    }

    /// The error of this attempt ended by `bound` (remembered for the decision).
    pub fn timed_out(&mut self, bound: super::limits::Bound) -> crate::types::Error {
        self.fired = Some(bound);
        crate::types::Error::timed_out(
            bound.limit,
            bound.length,
            self.attempt.target.id(),
            self.attempt.target.region(),
        )
    }

    /// A reserved attempt the reservation's ledger had no room for: Bedrock is expected to
    /// serve it at standard.
    pub fn expects_overflow(&self) -> bool {
        self.attempt.tier == Some(ServiceTier::RESERVED) && self.ticket.is_none()
    }

    /// Books the attempt against its target's on-demand quota: `ask` as the service counts it
    /// at admission, on `terms`. `false` when it does not fit (unless `force`): the attempt is
    /// then not to be sent.
    pub async fn claim_quota(&mut self, terms: QuotaTerms, ask: (u64, u64), force: bool) -> bool {
        let t = &self.attempt.target;
        match self
            .state
            .capacity()
            .admit_quota(
                crate::time::now(),
                t.region(),
                t.id(),
                terms.limits,
                ask,
                force,
            )
            .await
        {
            Some(claim) => {
                self.quota = Some((claim, terms));
                true
            }
            None => false,
        }
    }

    async fn admit_waiting(
        state: &'a State,
        attempt: Attempt,
        estimate: (u64, u64),
        force: bool,
        verdict: Option<bool>,
        now: Instant,
    ) -> Option<Self> {
        let (region, id, tier) = (attempt.target.region(), attempt.target.id(), attempt.tier);
        let probe = verdict == Some(true);
        let admitted = match verdict {
            // A probe: with shared state, only the replica holding the fleet's lease sends it.
            Some(true) => {
                let leased = state.health().take_probe_lease(region, id, tier).await;
                if !leased {
                    state.health().release_probe(region, id, tier);
                }
                leased
            }
            Some(false) => true,
            None => false,
        };
        if !admitted && !force {
            return None;
        }
        let mut ticket = None;
        if attempt.tier == Some(ServiceTier::RESERVED) {
            ticket = state
                .capacity()
                .reserve_call(now, &attempt.model, estimate.0, estimate.1)
                .await;
        }
        // A forced attempt through an open breaker holds no probe slot.
        let probe = probe && admitted;
        Some(Self::admitted(state, attempt, ticket, probe))
    }

    /// How long ago the attempt was admitted.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Its own first event's time, from its own start (not the call's: no wait in line, no
    /// earlier attempt); `None` before one came.
    pub fn own_ttft(&self) -> Option<Duration> {
        self.first_event
            .map(|at| at.saturating_duration_since(self.started))
    }

    /// The attempt succeeded at `served` (the tier the response reports, else the one sent),
    /// its own stream's longest gap between deltas `longest_gap`. The target is credited with
    /// its own TTFT (from its own start to its own first event, whatever came before); the
    /// reservation's ledger learns what the service did with the call.
    pub fn succeed(
        mut self,
        usage: &Usage,
        timings: &Timings,
        served: Option<ServiceTier>,
        longest_gap: Option<Duration>,
    ) {
        let a = &self.attempt;
        if let Some(slot) = &self.slot {
            slot.served(crate::time::now());
        }
        self.state.health().record_answered(&a.target);
        // A whole answer says nothing of first tokens, gaps or generation speed.
        let streamed = !self.answered_whole;
        self.state.health().record_success(
            a.target.region(),
            a.target.id(),
            a.tier,
            served,
            &crate::state::AttemptSpeed {
                ttft: self
                    .first_event
                    .filter(|_| streamed)
                    .map(|at| at.saturating_duration_since(self.started)),
                tokens_per_second: timings.output_tokens_per_second.filter(|_| streamed),
                longest_gap: longest_gap.filter(|_| streamed),
                // Input read anew: a cache read costs its first token next to nothing.
                input_tokens: usage.input_tokens.saturating_add(usage.cache_write_tokens),
            },
        );
        if let Some((claim, terms)) = self.quota.take() {
            self.state.capacity().settle_quota(
                a.target.region(),
                a.target.id(),
                terms.limits,
                claim,
                terms.used(usage),
            );
        }
        if a.tier == Some(ServiceTier::RESERVED) {
            let input = u64::from(usage.total_input_tokens());
            let output = u64::from(usage.output_tokens);
            let ticket = self.ticket.take();
            if served == Some(ServiceTier::RESERVED) {
                self.state.capacity().reservation_served(
                    crate::time::now(),
                    &a.model,
                    ticket,
                    input,
                    output,
                );
            } else {
                self.state
                    .capacity()
                    .reservation_overflowed(crate::time::now(), &a.model, ticket);
            }
        }
        self.settled = true;
    }

    /// The attempt failed with `err`, judged `verdict`; what that did to its region, if
    /// anything.
    pub(super) fn fail(mut self, err: &Error, verdict: &Verdict) -> RegionVerdict {
        let a = &self.attempt;
        let now = crate::time::now();
        if let Some(b) = self.fired
            && b.source.is_estimate()
        {
            let waited = match b.limit {
                crate::types::TimeLimit::Idle => b.length,
                _ => self.limits.map_or(b.length, |l| l.first_token_learnt),
            };
            self.state.health().record_cut(
                a.target.region(),
                a.target.id(),
                a.tier,
                b.limit,
                waited,
            );
        }
        let ejection = if verdict.region == RegionSign::Unhealthy {
            self.state.health().record_regional_failure(
                now,
                a.target.region(),
                crate::state::outlier::Evidence::Failed,
            )
        } else {
            None
        };
        if let Some(slot) = &self.slot
            && err.kind() == ErrorKind::Throttled
            && let Some(limit) = slot.throttled(now)
        {
            self.state
                .capacity()
                .teach_limit(a.target.region(), a.target.id(), limit);
        }
        if let Some((claim, terms)) = self.quota.take()
            && err.kind() == ErrorKind::Throttled
        {
            // Refused: the service counted nothing.
            self.state.capacity().settle_quota(
                a.target.region(),
                a.target.id(),
                terms.limits,
                claim,
                (0, 0),
            );
        }
        if verdict.access_refused {
            self.state
                .health()
                .record_refusal(now, a.target.region(), a.target.id(), a.tier);
        } else if err.kind() == ErrorKind::Throttled
            && self.slot.as_ref().is_some_and(|s| s.others_in_flight() > 0)
        {
            // Full, not failing: it serves others meanwhile, and the throttle taught its limit;
            // the breaker stays as it was. (Refusing with nothing else in flight, it counts
            // against the breaker as any failure does.)
            self.state
                .health()
                .record_throttle(now, a.target.region(), a.target.id(), a.tier);
            if self.probe {
                self.state
                    .health()
                    .release_probe(a.target.region(), a.target.id(), a.tier);
            }
        } else if verdict.fails_over {
            let throttled = err.kind() == ErrorKind::Throttled;
            self.state.health().record_failure(
                now,
                a.target.region(),
                a.target.id(),
                a.tier,
                throttled,
            );
        } else if self.probe {
            self.state
                .health()
                .release_probe(a.target.region(), a.target.id(), a.tier);
        }
        if let Some(t) = self.ticket.take() {
            self.state.capacity().correct_call(&a.model, t, 0, 0);
        }
        self.settled = true;
        ejection
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let a = &self.attempt;
        if self.probe {
            self.state
                .health()
                .release_probe(a.target.region(), a.target.id(), a.tier);
        }
        if let Some(t) = self.ticket.take() {
            self.state.capacity().correct_call(&a.model, t, 0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first attempt of a plain request's plan, and its (region, target id, tier).
    fn first_attempt(
        config: &crate::config::Config,
    ) -> (Attempt, (String, String, Option<ServiceTier>)) {
        let plan = crate::plan(
            &crate::types::GenerateRequest::user("hi"),
            config,
            &crate::state::Fresh(crate::time::now()),
        )
        .unwrap();
        let attempt = plan.attempts[0].clone();
        let key = (
            attempt.target.region().to_string(),
            attempt.target.id().to_string(),
            attempt.tier,
        );
        (attempt, key)
    }

    #[tokio::test]
    async fn a_target_is_credited_with_its_own_ttft_not_the_calls() {
        let config = crate::config::Config::default();
        let state = State::new(&config);
        let (attempt, (region, id, tier)) = first_attempt(&config);
        let mut inflight = InFlight::admit(&state, attempt, (10, 10), false)
            .await
            .unwrap();
        // The call's first token came 5.1 s into it (earlier attempts failed, or an earlier
        // attempt's stream broke and this one continued it); this attempt's own first event
        // came 100 ms after it was sent.
        inflight.first_event = Some(inflight.started + Duration::from_millis(100));
        let timings = Timings {
            ttft: Some(Duration::from_millis(5_100)),
            ..Timings::default()
        };
        inflight.succeed(&Usage::default(), &timings, tier, None);
        let (recorded, _) = state
            .health()
            .ttft_quantile(&region, &id, tier, 1.0)
            .unwrap();
        assert_eq!(recorded, Duration::from_millis(100));
    }

    #[tokio::test]
    async fn only_a_probe_frees_a_probe_slot() {
        let mut config = crate::config::Config::default();
        config.routing.breaker.failure_threshold = 1;
        config.routing.breaker.open_for = Duration::ZERO;
        config.routing.breaker.half_open_probes = 1;
        let state = State::new(&config);
        let (attempt, (region, id, tier)) = first_attempt(&config);
        let probe_free = || {
            use crate::state::Observations;
            state
                .at(crate::time::now())
                .target(&region, &id, tier)
                .breaker
                == crate::types::BreakerView::HalfOpen {
                    probe_available: true,
                }
        };
        state
            .health()
            .record_failure(crate::time::now(), &region, &id, tier, false);
        let probe = InFlight::admit(&state, attempt.clone(), (1, 1), false)
            .await
            .unwrap();
        assert!(!probe_free(), "the one slot is taken");
        assert!(
            InFlight::admit(&state, attempt.clone(), (1, 1), false)
                .await
                .is_none()
        );
        // Forced through (the last candidate): it holds no slot, so cancelling it frees none.
        let forced = InFlight::admit(&state, attempt, (1, 1), true)
            .await
            .unwrap();
        drop(forced);
        assert!(
            !probe_free(),
            "a cancelled non-probe freed the probe's slot"
        );
        drop(probe);
        assert!(probe_free(), "a cancelled probe frees its slot");
    }

    #[test]
    fn backoff_is_jittered_below_an_exponential_cap() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(5);
        let mut seen = std::collections::BTreeSet::new();
        for round in 0..40 {
            let ceiling = (base * 2u32.saturating_pow(round.min(20))).min(cap);
            for _ in 0..20 {
                let w = backoff(base, cap, round);
                assert!(w <= ceiling, "round {round}: {w:?} > {ceiling:?}");
                seen.insert(w);
            }
        }
        // Full jitter: the waits spread out rather than repeating one value.
        assert!(seen.len() > 700, "{}", seen.len());
    }
}
