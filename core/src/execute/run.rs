//! Walking a plan: which attempt goes next, what a failure means, and the response at the end.

use super::attempt::InFlight;
use super::limits::{Bound, Limits};
use super::verdict::{self, RegionSign, Verdict};
use super::{Clock, Executor};
use crate::backend::Completion;
use crate::config::QuotaTerms;
use crate::plan::{Plan, tier};
use crate::state::Observations;
use crate::state::outlier::Evidence;
use crate::telemetry::record::TargetRef;
use crate::types::{Attempt, OverflowCause, Reason};
use crate::types::{Error, FailedAttempt, TimeLimit};
use crate::types::{GenerateRequest, ServiceTier};
use crate::types::{GenerateResponse, HedgeReport, RouteDecision, Timings};

/// One call's walk through its plan.
pub struct Run<'a> {
    exec: &'a Executor,
    request: &'a GenerateRequest,
    plan: Plan,
    /// The plan's attempts, best first; each retry round walks them again.
    attempts: Vec<Attempt>,
    /// Where the call may go when every attempt's target is full (the plan's overflow).
    overflow: Vec<Attempt>,
    /// Candidates of this round passed over because their targets were full, each with
    /// whether it was to be forced through its breaker: what the call waits for when nothing
    /// had room.
    full: Vec<(Attempt, bool)>,
    /// The last attempt was throttled: moving to a cool target with room is not charged.
    throttled_last: bool,
    /// The retry budget refused more tries, after a throttle: only cool targets are tried.
    only_cool: bool,
    /// Why the call gets no slot, once the queue has said so.
    overloaded: Option<crate::state::load::NoSlot>,
    /// How long the call has waited in line for slots.
    queued: std::time::Duration,
    /// The next of `attempts` in this round.
    next: usize,
    /// Retry rounds started so far.
    round: u32,
    sent_this_round: u32,
    /// The retry budget already paid for the next attempt (before the round's back-off).
    prepaid: bool,
    sent: u32,
    budget_exhausted: bool,
    /// The last hedge asked for found every candidate full (or leased elsewhere for now).
    hedge_blocked: bool,
    /// The call's deadline and its attempts' limits.
    pub limits: Limits,
    estimate: (u64, u64),
    /// The request's `max_tokens`, which Bedrock counts against the token quota.
    request_max_tokens: Option<u64>,
    /// The call's timing as the caller sees it (TTFT, gaps between deltas, total).
    pub clock: Clock,
    /// Every failed attempt so far, with its error.
    pub failed: Vec<(FailedAttempt, Error)>,
    /// Decisions made while executing (overflows, skipped targets), after the plan's.
    pub reasons: Vec<Reason>,
    /// The hedge sent, if one was.
    pub hedge: Option<HedgeReport>,
    /// Where the hedged first attempt and its hedge went (for the trace).
    pub hedge_targets: Option<[TargetRef; 2]>,
    /// The answering attempt's own first token, from its own start (for the trace).
    pub served_ttft: Option<std::time::Duration>,
    /// The tier the plan gave its first target (whose lane counts a failed call; built only
    /// when a call fails).
    first_tier: Option<crate::types::ServiceTier>,
    _in_flight: crate::telemetry::InFlightGuard<'a>,
}

impl<'a> Run<'a> {
    /// Starts walking `plan` for `request`: counts the call, sets its limits (allowing for the
    /// reasoning asked for) and starts its clock.
    pub fn new(exec: &'a Executor, request: &'a GenerateRequest, mut plan: Plan) -> Self {
        exec.state.record_call(crate::time::now());
        let first_tier = plan.attempts.first().and_then(|a| a.tier);
        let attempts = std::mem::take(&mut plan.attempts);
        let overflow = std::mem::take(&mut plan.overflow);
        let mut limits =
            Limits::for_call(&exec.config.routing, request, tokio::time::Instant::now());
        // A reasoning call may think (silently, where its reasoning is redacted) before its
        // first token: its limits allow for the reasoning it was asked for.
        let reasoned = request
            .reasoning
            .or_else(|| exec.config.slo_reasoning.get(&request.slo.class).copied())
            .filter(|_| attempts.iter().any(|a| a.shape.reasoning.is_some()));
        if let Some(r) = reasoned {
            limits = limits.with_reasoning(&exec.config.routing, request, r.expected_tokens());
        }
        Self {
            exec,
            request,
            plan,
            attempts,
            overflow,
            full: Vec::new(),
            throttled_last: false,
            only_cool: false,
            overloaded: None,
            queued: std::time::Duration::ZERO,
            next: 0,
            round: 0,
            sent_this_round: 0,
            prepaid: false,
            sent: 0,
            limits,
            budget_exhausted: false,
            hedge_blocked: false,
            estimate: tier::estimated_tokens(request, &exec.config),
            request_max_tokens: request.inference.max_tokens.map(|n| n.max(0) as u64),
            clock: Clock::start(),
            failed: Vec::new(),
            reasons: Vec::new(),
            hedge: None,
            hedge_targets: None,
            served_ttft: None,
            first_tier,
            _in_flight: exec.telemetry.start(),
        }
    }

    fn call_slo(&self) -> crate::telemetry::CallSlo<'a> {
        let r = self.request;
        crate::telemetry::CallSlo {
            class: r.slo.class,
            ttft_target: r.slo.ttft_target,
            deadline: r.slo.deadline,
            task_id: r.task_id.as_deref(),
        }
    }

    /// Counts the call's final error in the telemetry (and the trace); returns it.
    pub fn failed_with(&self, e: Error) -> Error {
        if let Some(recorder) = self.exec.recorder.get() {
            let attempts = match &e {
                Error::AllTargetsFailed { attempts, .. } | Error::Overloaded { attempts, .. } => {
                    attempts.clone()
                }
                _ => self.failed.iter().map(|(f, _)| f.clone()).collect(),
            };
            let ended = super::record::Ended {
                request: self.request,
                plan: &self.plan,
                elapsed: self.clock.elapsed(),
                scope: None,
                hedge_targets: self.hedge_targets.as_ref(),
                served_ttft: None,
                outcome: Err((&e, attempts)),
            };
            if let Some(line) = super::record::call(recorder, ended) {
                recorder.push_call(line);
            }
        }
        if let Some(a) = self.attempts.first() {
            let lane = crate::telemetry::LaneRef {
                provider: &a.target.provider,
                family: self.plan.family.as_deref(),
                model: &a.model,
                target: a.target.id(),
                region: a.target.region(),
                tier: self.first_tier,
                slo_class: self.request.slo.class,
            };
            self.exec
                .telemetry
                .record_failure(self.call_slo(), lane, e.kind());
        }
        e
    }

    /// Whether a candidate remains in this round after the ones taken.
    pub fn has_more(&self) -> bool {
        self.next < self.attempts.len()
    }

    /// The bound of a wait that `limit` (of `length`) limits from now.
    pub fn bound(&self, limit: TimeLimit, length: std::time::Duration) -> Bound {
        self.limits
            .bound(tokio::time::Instant::now(), limit, length)
    }

    /// The bound of a wait that `limit` of an attempt's own limits (`length` with its source)
    /// limits from now.
    pub fn bound_from(
        &self,
        limit: TimeLimit,
        length: (std::time::Duration, crate::types::LimitSource),
    ) -> Bound {
        self.limits
            .bound_from(tokio::time::Instant::now(), limit, length)
    }

    /// An attempt's own first-token and idle limits: learnt from its target's latency at its
    /// tier (`[routing.timeouts.learned]`), its model's prior until the target has shown
    /// enough (`[routing.priors]`), and the call's estimated input; or the class's. Derived
    /// once per attempt, when first asked.
    pub fn attempt_limits(&self, inflight: &mut InFlight<'_>) -> super::limits::AttemptLimits {
        if let Some(l) = inflight.limits {
            return l;
        }
        let learned = &self.exec.config.routing.timeouts.learned;
        let attempt = &inflight.attempt;
        let observed = if learned.enabled {
            self.exec.state.health().learned_latency(
                attempt.target.region(),
                attempt.target.id(),
                attempt.tier,
                learned.quantile,
                learned.prefill_tokens_per_second,
            )
        } else {
            crate::state::LearnedLatency::default()
        };
        let expected = self.expected(attempt);
        *inflight.limits.insert(self.limits.for_attempt(
            learned,
            observed,
            Some(expected),
            self.estimate.0,
        ))
    }

    /// When `attempt`'s first event is due at the latest before its target has shown enough of
    /// its own, and how many observations that counts as: what another process knew of the
    /// target (the fleet's figures, or this process's last run) with the observations they
    /// are of; else its model's prior: `ttft_p99`, this call's input at the prefill rate and
    /// its reasoning allowance, and (sent `whole`) its output at the prior's speed.
    pub fn expected_first_event(
        &self,
        attempt: &Attempt,
        whole: bool,
    ) -> (std::time::Duration, u32) {
        let config = &self.exec.config;
        let prior = config.latency_prior(&attempt.model, attempt.tier, attempt.target.api);
        let input = self.estimate.0;
        let generation = self.generation(attempt, whole);
        let learned = &config.routing.timeouts.learned;
        let t = &attempt.target;
        if let Some(known) =
            self.exec
                .state
                .health()
                .known_latency(t.region(), t.id(), attempt.tier)
            && let Some(hedge_ms) = known.hedge_ms
        {
            let weight = known.samples.clamp(1, learned.min_samples.max(1));
            return (
                std::time::Duration::from_millis(hedge_ms).saturating_add(generation),
                weight,
            );
        }
        let first = prior
            .ttft_p99
            .saturating_add(crate::state::latency::prefill_time(
                input,
                learned.prefill_tokens_per_second,
            ))
            .saturating_add(self.limits.reasoning_allowance())
            .saturating_add(generation);
        (first, config.routing.priors.weight)
    }

    /// How long `attempt`'s answer takes to generate when it comes `whole` (zero streamed: its
    /// first event comes before it): the call's output at the target's observed speed, else
    /// its prior's.
    pub fn generation(&self, attempt: &Attempt, whole: bool) -> std::time::Duration {
        if !whole {
            return std::time::Duration::ZERO;
        }
        let t = &attempt.target;
        let speed = self
            .exec
            .state
            .at(crate::time::now())
            .target(t.region(), t.id(), attempt.tier)
            .tokens_per_second
            .filter(|s| *s > 0.0)
            .unwrap_or_else(|| {
                let config = &self.exec.config;
                config
                    .latency_prior(&attempt.model, attempt.tier, t.api)
                    .tokens_per_second
            });
        crate::types::units::clamped_secs(self.estimate.1 as f64 / speed)
            .unwrap_or(crate::types::MAX_DURATION)
    }

    /// What `attempt`'s target is expected to take before it has shown enough of its own: what
    /// another process knew of it (the fleet's figures with `[shared]`, or this process's
    /// last run with `[local_state]`), counting as the observations they are of (at most
    /// `min_samples`); else its model's prior at its tier and API.
    pub fn expected(&self, attempt: &Attempt) -> super::limits::Expected {
        let config = &self.exec.config;
        let prior = config.latency_prior(&attempt.model, attempt.tier, attempt.target.api);
        let t = &attempt.target;
        let min_samples = config.routing.timeouts.learned.min_samples.max(1);
        match self
            .exec
            .state
            .health()
            .known_latency(t.region(), t.id(), attempt.tier)
        {
            Some(known) if known.samples > 0 => super::limits::Expected {
                ttft: std::time::Duration::from_millis(known.first_token_ms),
                gap: known
                    .gap_ms
                    .map_or(prior.gap_p99, std::time::Duration::from_millis),
                weight: known.samples.min(min_samples),
            },
            _ => super::limits::Expected {
                ttft: prior.ttft_p99,
                gap: prior.gap_p99,
                weight: config.routing.priors.weight,
            },
        }
    }

    /// The first attempt, in `region`, has no first token at its hedge delay (its target's
    /// usual worst): a suspicion that counts toward ejecting the region, counted when the hedge
    /// goes so that attempts stalling together reach the run before any of their calls ends;
    /// it ejects only once [`Run::hedge_answered_first`] or a failure confirms it. A success
    /// in the region (the late attempt's own included) resets the count.
    pub fn first_token_late(&mut self, region: &str) {
        self.judge_region(region, Evidence::Late);
    }

    /// The hedge of a late first attempt in `region` produced a token first: the suspicion
    /// [`Run::first_token_late`] counted is confirmed.
    pub fn hedge_answered_first(&mut self, region: &str) {
        self.judge_region(region, Evidence::LateConfirmed);
    }

    fn judge_region(&mut self, region: &str, evidence: Evidence) {
        let verdict =
            self.exec
                .state
                .health()
                .record_regional_failure(crate::time::now(), region, evidence);
        self.note_region(region, verdict);
    }

    /// Says in the decision that `region` was ejected, when it was.
    fn note_region(&mut self, region: &str, verdict: super::attempt::RegionVerdict) {
        if let Some(crate::state::outlier::Ejection::Ejected { length, failures }) = verdict {
            self.reasons.push(Reason::RegionEjected {
                region: region.into(),
                failures,
                for_ms: millis(length),
            });
        }
    }

    /// The plan's cache checkpoints, for attempts on the plan's model by an API that carries
    /// them (a fallback model's rules may differ, and another API spells none: they get none).
    pub fn checkpoints_for(&self, attempt: &Attempt) -> Vec<crate::types::Checkpoint> {
        // A prompt router's choice may not cache: it gets none.
        let routed = crate::plan::prompt_router::parse_arn(attempt.target.id()).is_some();
        let carried = self
            .exec
            .config
            .models
            .get(&*attempt.model)
            .and_then(|m| m.prompt_cache())
            .is_some_and(|rules| rules.apis.contains(&attempt.target.api));
        if attempt.model == self.plan.model && !routed && carried {
            self.plan.cache.checkpoints.clone()
        } else {
            Vec::new()
        }
    }

    /// Attempts sent so far.
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// The next attempt to send, admitted through its target's concurrency, its breaker, its
    /// reservation and (after the first) the retry budget; when every target the call may use
    /// is full, after waiting in line for a slot. `None` when there is none, the budget is
    /// spent, the deadline has passed or no slot can come in time.
    pub async fn next_attempt(&mut self) -> Option<InFlight<'a>> {
        self.next_attempt_waiting(true).await
    }

    /// The next attempt to send now, without waiting in line (a hedge: the call is already
    /// being served). `None` when none has room now: the round's candidates stay to be walked
    /// again (by a later hedge, or the call's next attempt).
    pub async fn next_attempt_now(&mut self) -> Option<InFlight<'a>> {
        let (at, round, said) = (self.next, self.round, self.reasons.len());
        let retried = std::mem::replace(&mut self.hedge_blocked, false);
        let next = self.next_attempt_waiting(false).await;
        if next.is_none() && self.round == round {
            self.next = at;
            if retried {
                // Asked again while its first attempt is silent: what the walk said (full
                // targets, demoted ones) the first ask said already.
                self.reasons.truncate(said);
            }
        }
        next
    }

    /// After [`Run::next_attempt_now`] found no candidate with room: whether one may have room
    /// later (candidates were full, not spent or refused by the budget).
    pub fn may_hedge_later(&self) -> bool {
        self.hedge_blocked
            && self.limits.remaining(tokio::time::Instant::now()) > std::time::Duration::ZERO
    }

    async fn next_attempt_waiting(&mut self, may_wait: bool) -> Option<InFlight<'a>> {
        loop {
            if self.limits.remaining(tokio::time::Instant::now()).is_zero() {
                self.note_on_last_failure("the call's deadline passed before another try");
                return None;
            }
            if let Some(f) = self.next_in_round().await {
                return Some(f);
            }
            if self.budget_exhausted {
                if !self.only_cool_targets_left() {
                    return None;
                }
                continue;
            }
            if !self.full.is_empty() {
                if !may_wait {
                    self.full.clear();
                    self.hedge_blocked = !self.budget_exhausted;
                    return None;
                }
                if let Some(f) = self.wait_for_slot().await {
                    return Some(f);
                }
                if self.overloaded.is_some() {
                    return None;
                }
                if self.budget_exhausted && !self.only_cool_targets_left() {
                    return None;
                }
                // Given a slot its breaker, quota or the budget then refused (or now only
                // cool targets may be tried): the round's candidates again.
                self.next = 0;
                continue;
            }
            // The round's other candidates are kept away (open breakers, an ejected region)
            // after some were sent and failed: another round, as after its last one failed.
            if self.sent_this_round == 0 {
                return None;
            }
            if !self.next_round(None).await && !self.only_cool_targets_left() {
                return None;
            }
            // Another round began, or only cool targets remain: walked from the first.
        }
    }

    /// The retry budget refused another try: a call whose last attempt was throttled may still
    /// move to a target that is serving (answering more than refusing), free, waiting for its
    /// slot if it is full; the refusing ones are left alone. `false` when no candidate is
    /// serving (or the call fell back to them already): the call ends.
    fn only_cool_targets_left(&mut self) -> bool {
        if !self.throttled_last || self.only_cool {
            return false;
        }
        if !self
            .attempts
            .iter()
            .chain(&self.overflow)
            .any(|a| self.serving(a))
        {
            return false;
        }
        self.only_cool = true;
        self.budget_exhausted = false;
        self.next = 0;
        self.full.clear();
        true
    }

    /// Whether `attempt`'s target is serving: answering lately, more than refusing.
    fn serving(&self, attempt: &Attempt) -> bool {
        let t = &attempt.target;
        self.exec
            .state
            .capacity()
            .headroom()
            .is_serving(crate::time::now(), t.region(), t.id())
    }

    /// Whether the call may try `attempt`'s target now: after falling back to serving targets,
    /// only those; one refusing for capacity as such only while the call has no other target
    /// to wait for instead (none full so far this round).
    fn may_try(&self, attempt: &Attempt) -> bool {
        if self.only_cool {
            return self.serving(attempt);
        }
        if self.full.is_empty() {
            return true;
        }
        let t = &attempt.target;
        !self
            .exec
            .state
            .capacity()
            .headroom()
            .load(
                crate::time::now(),
                t.region(),
                t.id(),
                attempt.tier,
                self.request.slo.class,
            )
            .refusing
    }

    /// The next candidate of this round that is admitted, if any; when every one left was
    /// full, the first overflow candidate with room.
    async fn next_in_round(&mut self) -> Option<InFlight<'a>> {
        while self.next < self.attempts.len() {
            let attempt = self.attempts[self.next].clone();
            self.next += 1;
            if !self.may_try(&attempt) {
                continue;
            }
            // Nothing sent in this round and nothing else left: send even through an open
            // breaker (the retry budget bounds how often).
            let force = self.sent_this_round == 0 && self.next == self.attempts.len();
            let view = self.view_of(&attempt);
            if !force && kept_away(&view) {
                if self.round == 0 {
                    self.reasons.push(Reason::TargetDemoted {
                        target: attempt.target.id.clone(),
                        region: attempt.target.region.clone(),
                        health: view.breaker,
                        throttle_score: (view.throttle_score * 100.0).round() / 100.0,
                    });
                }
                continue;
            }
            if let Some(f) = self.admit(attempt, force, None).await {
                return Some(f);
            }
            if self.budget_exhausted {
                return None;
            }
        }
        if self.full.is_empty() && !self.only_cool {
            return None;
        }
        // Every candidate left was full (or is refusing, after a throttle): overflow, where the
        // plan allows it.
        for attempt in self.overflow.clone() {
            // Overflow is for load: never into an open breaker or an ejected region.
            if !self.may_try(&attempt) || kept_away(&self.view_of(&attempt)) {
                continue;
            }
            let (model, target, region) = (
                attempt.model.clone(),
                attempt.target.id.clone(),
                attempt.target.region.clone(),
            );
            if let Some(f) = self.admit(attempt, false, None).await {
                self.reasons.push(Reason::Overflowed {
                    model,
                    target,
                    region,
                });
                return Some(f);
            }
            if self.budget_exhausted {
                return None;
            }
        }
        None
    }

    /// The attempt's target as the live state sees it now.
    fn view_of(&self, attempt: &Attempt) -> crate::state::TargetView {
        let peek = self.exec.state.at(crate::time::now());
        peek.target(attempt.target.region(), attempt.target.id(), attempt.tier)
    }

    /// What the call's concurrency asks of an attempt's target.
    fn slot_ask<'r>(&self, a: &'r Attempt) -> crate::state::load::SlotAsk<'r> {
        crate::state::load::SlotAsk {
            region: a.target.region(),
            id: a.target.id(),
            tier: a.tier,
            configured: self
                .exec
                .config
                .models
                .get(&*a.model)
                .and_then(crate::config::ModelConfig::max_concurrency),
        }
    }

    /// Waits in line for a slot on one of the targets this round found full, then admits the
    /// attempt on it; `None` with [`Run::overloaded`] set when no slot can come in time.
    async fn wait_for_slot(&mut self) -> Option<InFlight<'a>> {
        let full = std::mem::take(&mut self.full);
        let asks: Vec<_> = full.iter().map(|(a, _)| self.slot_ask(a)).collect();
        // How long an attempt is expected to hold a slot before any was measured.
        let prior_hold = full.first().map_or(std::time::Duration::ZERO, |(a, _)| {
            let config = &self.exec.config;
            config.latency_prior(&a.model, a.tier, a.target.api).ttft
        });
        let started = tokio::time::Instant::now();
        let in_line = self.exec.telemetry.queue_joined(self.request.slo.class);
        let waited = self
            .exec
            .state
            .capacity()
            .headroom()
            .wait_for_slot(
                &asks,
                self.request.slo.class,
                self.limits.deadline(),
                prior_hold,
            )
            .await;
        drop(in_line);
        let wait = started.elapsed();
        self.queued += wait;
        match waited {
            Ok(granted) => {
                self.reasons.push(Reason::Queued {
                    waited_ms: millis(wait),
                    ahead: granted.ahead,
                });
                let (attempt, force) = full[granted.index].clone();
                let overflowed = !self
                    .attempts
                    .iter()
                    .any(|a| a.model == attempt.model && a.target == attempt.target);
                let (model, target, region) = (
                    attempt.model.clone(),
                    attempt.target.id.clone(),
                    attempt.target.region.clone(),
                );
                let admitted = self.admit(attempt, force, Some(granted.slot)).await;
                if admitted.is_some() && overflowed {
                    self.reasons.push(Reason::Overflowed {
                        model,
                        target,
                        region,
                    });
                }
                admitted
            }
            Err(no) => {
                self.overloaded = Some(no);
                None
            }
        }
    }

    async fn admit(
        &mut self,
        attempt: Attempt,
        force: bool,
        granted: Option<crate::state::load::Slot<'a>>,
    ) -> Option<InFlight<'a>> {
        let state = &self.exec.state;
        let slot = match granted {
            Some(slot) => Some(slot),
            None => match self.take_slot(&attempt).await {
                Ok(slot) => slot,
                Err(load) => {
                    self.note_full(&attempt, load);
                    self.full.push((attempt, force));
                    return None;
                }
            },
        };
        let mut inflight = InFlight::admit(state, attempt, self.estimate, force).await?;
        inflight.slot = slot;
        if !self.claim_quota(&mut inflight, force).await {
            let a = &inflight.attempt;
            self.reasons.push(Reason::QuotaFull {
                target: a.target.id.clone(),
                region: a.target.region.clone(),
                tokens: self
                    .quota_ask(a)
                    .map_or(0, |(terms, ask)| terms.tokens(ask)),
            });
            return None; // dropping `inflight` frees what it took
        }
        if self.sent > 0 && !std::mem::take(&mut self.prepaid) {
            let t = &inflight.attempt.target;
            if self.throttled_last
                && state
                    .capacity()
                    .headroom()
                    .is_serving(crate::time::now(), t.region(), t.id())
            {
                // Load moving to capacity that has room: not a retry.
                self.reasons.push(Reason::FailoverUncharged {
                    target: t.id.clone(),
                    region: t.region.clone(),
                });
            } else if !state.spend_extra_attempt(crate::time::now()) {
                self.budget_exhausted = true;
                return None; // dropping `inflight` frees what it took
            }
        }
        let expected = |r: &Reason| {
            matches!(
                r,
                Reason::ReservedOverflow {
                    cause: OverflowCause::Full,
                    ..
                }
            )
        };
        if inflight.expects_overflow()
            && !self.plan.reasons.iter().chain(&self.reasons).any(expected)
        {
            // The fleet's ledger (or this one's, since planning) is full.
            self.reasons.push(Reason::ReservedOverflow {
                model: inflight.attempt.model.clone(),
                cause: OverflowCause::Full,
            });
        }
        self.throttled_last = false;
        self.sent += 1;
        self.sent_this_round += 1;
        Some(inflight)
    }

    /// A slot on the attempt's target, if it has room; with shared state, when only this
    /// replica's lease of it is spent, after leasing a block more from the fleet (one Redis
    /// round trip, at most one per block of admissions; none while the fleet lately had
    /// nothing more to give).
    async fn take_slot(
        &self,
        attempt: &Attempt,
    ) -> Result<Option<crate::state::load::Slot<'a>>, crate::state::Load> {
        let state = &self.exec.state;
        let (ask, class) = (self.slot_ask(attempt), self.request.slo.class);
        let refused = match state
            .capacity()
            .headroom()
            .try_occupy(crate::time::now(), ask, class)
        {
            Ok(slot) => return Ok(slot),
            Err(load) => load,
        };
        let Some(lease) = state
            .capacity()
            .headroom()
            .lease_wanted(crate::time::now(), ask, class)
        else {
            return Err(refused);
        };
        // Boxed: a lease is a rare wait, and every call's future would carry its size.
        Box::pin(state.capacity().lease_slots(ask.region, ask.id, lease)).await;
        state
            .capacity()
            .headroom()
            .try_occupy(crate::time::now(), ask, class)
    }

    /// Says in the decision that a target was full at admission, unless it is said already.
    fn note_full(&mut self, attempt: &Attempt, load: crate::state::Load) {
        let said = self.plan.reasons.iter().chain(&self.reasons).any(|r| {
            matches!(r, Reason::TargetFull { target, region, .. }
                if *target == attempt.target.id && *region == attempt.target.region)
        });
        if !said {
            self.reasons.push(Reason::TargetFull {
                target: attempt.target.id.clone(),
                region: attempt.target.region.clone(),
                in_flight: load.in_flight,
                limit: load.limit.unwrap_or(load.in_flight),
            });
        }
    }

    /// Whether a broken stream of `attempt`'s model may go on from its delivered text as a
    /// prefill (`Reason::ContinuationRefused` in the plan says when not).
    pub(super) fn continues_a_prefill(&self, attempt: &Attempt) -> bool {
        self.exec
            .config
            .models
            .get(&*attempt.model)
            .is_none_or(crate::config::ModelConfig::continues_a_prefill)
    }

    /// The quota an attempt's target counts it against, and what it books at admission, when
    /// its model has a quota there.
    fn quota_ask(&self, a: &Attempt) -> Option<(QuotaTerms, (u64, u64))> {
        let config = &self.exec.config;
        let terms = config.models.get(&*a.model)?.quota_terms(&a.target)?;
        let ask = terms.at_admission(
            self.estimate.0,
            self.request_max_tokens,
            u64::from(config.routing.default_output_tokens),
        );
        Some((terms, ask))
    }

    /// Books an attempt against its target's quota; `false` when the quota has no room for it
    /// (and it is not forced). A reserved attempt the reservation is expected to serve does
    /// not count against the on-demand quota.
    async fn claim_quota(&self, inflight: &mut InFlight<'a>, force: bool) -> bool {
        let a = &inflight.attempt;
        if a.tier == Some(ServiceTier::RESERVED) && !inflight.expects_overflow() {
            return true;
        }
        let Some((terms, ask)) = self.quota_ask(a) else {
            return true;
        };
        inflight.claim_quota(terms, ask, force).await
    }

    /// A model refused access in a region is refused for every id called there (its bare id
    /// and the profiles invoked from it, at every tier): its other candidate targets in the
    /// region are kept away too, rather than each asked once.
    fn refused_in_region(&self, refused: &Attempt) {
        let now = crate::time::now();
        let config = &self.exec.config;
        if !config
            .models
            .get(&*refused.model)
            .is_some_and(|m| m.access_is_regional())
        {
            return;
        }
        let Some(candidates) = self.exec.planner.catalog().candidates(&refused.model) else {
            return;
        };
        let state = &self.exec.state;
        // The tiers its attempts may be sent at (each has a breaker of its own): no more, so
        // that a refusal publishes few entries to a fleet's Redis.
        let mut tiers: Vec<Option<ServiceTier>> = match self.exec.config.models.get(&*refused.model)
        {
            Some(m) => m.tiers().iter().copied().map(Some).collect(),
            None => Vec::new(),
        };
        if !tiers.contains(&refused.tier) {
            tiers.push(refused.tier);
        }
        for c in candidates
            .iter()
            .filter(|c| c.target.region == refused.target.region)
        {
            for &tier in &tiers {
                if c.target.id != refused.target.id || tier != refused.tier {
                    state
                        .health()
                        .record_refusal(now, c.target.region(), c.target.id(), tier);
                }
            }
        }
    }

    /// Books a failed attempt without deciding what follows (a hedge's loser).
    pub fn record_failed(&mut self, inflight: InFlight<'a>, err: Error) {
        let verdict = verdict::judge(&self.exec.state, &inflight.attempt, &err);
        self.record_judged(inflight, err, &verdict);
    }

    /// Books a failed attempt judged `verdict`.
    fn record_judged(&mut self, inflight: InFlight<'a>, err: Error, verdict: &Verdict) {
        let a = inflight.attempt.clone();
        if let Some(limit) = verdict.time_limit {
            let after_ms = u64::try_from(inflight.elapsed().as_millis()).unwrap_or(u64::MAX);
            let (limit_ms, source) = match inflight.fired {
                Some(b) if b.limit == limit => (
                    u64::try_from(b.length.as_millis()).unwrap_or(u64::MAX),
                    b.source,
                ),
                _ => (after_ms, crate::types::LimitSource::Class),
            };
            self.reasons.push(Reason::TimeLimitHit {
                limit,
                target: a.target.id.clone(),
                region: a.target.region.clone(),
                after_ms,
                limit_ms,
                source,
            });
        }
        let ejection = inflight.fail(&err, verdict);
        self.note_region(a.target.region(), ejection);
        self.exec.telemetry.record_attempt(
            a.target.region(),
            a.target.id(),
            a.tier,
            Err(err.kind()),
        );
        self.failed.push((err.as_failed_attempt(&a), err));
    }

    /// Books a failed attempt and decides: `Ok` to go on with the next attempt (after a
    /// back-off, when a new round over the plan's targets starts), `Err` with the error to
    /// return.
    pub async fn after_failure(&mut self, inflight: InFlight<'a>, err: Error) -> Result<(), Error> {
        let attempt = inflight.attempt.clone();
        let verdict = verdict::judge(&self.exec.state, &attempt, &err);
        let retry_after = match &err {
            Error::Service(e) => e.retry_after,
            _ => None,
        };
        if verdict.region != RegionSign::Healthy {
            self.defer_region(attempt.target.region());
        }
        if verdict.access_refused {
            self.refused_in_region(&attempt);
        }
        self.throttled_last = err.kind() == crate::types::ErrorKind::Throttled;
        self.record_judged(inflight, err, &verdict);
        if !verdict.fails_over {
            return Err(self.failed.pop().expect("just recorded").1);
        }
        // Candidates left, or full ones to wait for: no new round (and no back-off) yet.
        if self.has_more() || !self.full.is_empty() {
            return Ok(());
        }
        if self.failed.iter().all(|(_, e)| verdict::refused(e)) {
            // Every target refused access or the credentials: another round would be refused
            // the same.
            return Err(self.exhausted());
        }
        if self.next_round(retry_after.map(|r| (r, attempt))).await || self.only_cool_targets_left()
        {
            Ok(())
        } else {
            Err(self.exhausted())
        }
    }

    /// Every candidate of this round failed (the last one asking to retry after a while, for
    /// `retry_after`): waits out a back-off (or that Retry-After) and starts another round, if
    /// the deadline and the retry budget allow; `false` (the last failure says why) if not.
    async fn next_round(&mut self, retry_after: Option<(std::time::Duration, Attempt)>) -> bool {
        let retry = self.exec.config.routing.retry;
        let left = self.limits.remaining(tokio::time::Instant::now());
        let mut wait = super::attempt::backoff(retry.backoff, retry.max_backoff, self.round);
        if let Some((asked, last)) = retry_after {
            let allowed = retry.max_retry_after.min(left);
            if asked > allowed {
                self.reasons.push(Reason::RetryAfterRefused {
                    target: last.target.id.clone(),
                    region: last.target.region.clone(),
                    retry_after_ms: millis(asked),
                    allowed_ms: millis(allowed),
                });
                let why = if asked > retry.max_retry_after {
                    format!(
                        "the service asked to retry after {} ms, beyond routing.retry.max_retry_after ({} ms)",
                        asked.as_millis(),
                        retry.max_retry_after.as_millis()
                    )
                } else {
                    format!(
                        "the service asked to retry after {} ms; the call's deadline is {} ms away",
                        asked.as_millis(),
                        left.as_millis()
                    )
                };
                self.note_on_last_failure(&why);
                return false;
            }
            wait = wait.max(asked);
        }
        // The timer rounds a sleep up to its next millisecond: a wait that close to the deadline
        // would leave no time to send anything.
        if wait + TIMER_TICK >= left {
            let why = format!(
                "no time for another round before the call's deadline ({} ms left)",
                left.as_millis()
            );
            self.note_on_last_failure(&why);
            return false;
        }
        // The budget is paid before the wait: a call that may not retry fails now, not later.
        if !self.exec.state.spend_extra_attempt(crate::time::now()) {
            self.budget_exhausted = true;
            return false;
        }
        self.prepaid = true;
        self.round += 1;
        self.reasons.push(Reason::RetryRound {
            round: self.round,
            wait_ms: millis(wait),
        });
        tokio::time::sleep(wait).await;
        // Health changed while this call failed: the new round walks a fresh plan, which may
        // reach targets the first one left out (beyond `max_attempts`, behind open breakers).
        if let Ok(fresh) = self.exec.plan(self.request)
            && fresh.model == self.plan.model
            && !fresh.attempts.is_empty()
        {
            self.attempts = fresh.attempts;
        }
        self.next = 0;
        self.sent_this_round = 0;
        self.full.clear();
        true
    }

    /// Moves this round's remaining targets in `region` behind the others: a region that
    /// stalled, reset, was down or throttled for one target is likely so for its other targets
    /// (the bare model id and a profile are served by the same regional endpoint).
    pub fn defer_region(&mut self, region: &str) {
        self.attempts[self.next..].sort_by_key(|a| a.target.region() == region);
    }

    /// Adds why nothing more was tried to the last failure's message.
    fn note_on_last_failure(&mut self, why: &str) {
        if let Some((attempt, err)) = self.failed.last_mut() {
            attempt.message = format!("{} ({why})", attempt.message);
            if let Error::Service(e) = err {
                e.message = format!("{} ({why})", e.message);
            }
        }
    }

    /// The error once nothing more will be tried.
    ///
    /// When the plan had one target (tried, perhaps retried), that target's last error is
    /// returned as is; otherwise [`Error::AllTargetsFailed`] lists every attempt.
    pub fn exhausted(&mut self) -> Error {
        let mut failed = std::mem::take(&mut self.failed);
        if let Some(no) = self.overloaded.take() {
            return self.overload_error(no, failed.into_iter().map(|(f, _)| f).collect());
        }
        // Only a plan of one target (retried, perhaps) keeps that target's own error; where
        // others were planned but skipped (open breakers, no budget), the call lists them all.
        let one_target = self.attempts.len() <= 1
            && failed
                .windows(2)
                .all(|w| (&w[0].0.target, &w[0].0.region) == (&w[1].0.target, &w[1].0.region));
        if !failed.is_empty() && one_target && !self.budget_exhausted {
            // The deadline cutting the last try short says less than what the target answered
            // before it: that answer is the error, and the deadline goes into its message.
            let deadline = TimeLimit::Deadline.code();
            let last_answer = failed.iter().rposition(|(f, _)| f.code != deadline);
            return match last_answer {
                Some(i) if i + 1 < failed.len() => {
                    let mut err = failed.swap_remove(i).1;
                    if let Error::Service(e) = &mut err {
                        e.message = format!(
                            "{} (then the call's deadline passed during another try)",
                            e.message
                        );
                    }
                    err
                }
                _ => failed.pop().expect("not empty").1,
            };
        }
        Error::AllTargetsFailed {
            attempts: failed.into_iter().map(|(f, _)| f).collect(),
            budget_exhausted: self.budget_exhausted,
        }
    }

    /// The `overloaded` error of a call the queue could give no slot.
    fn overload_error(
        &self,
        no: crate::state::load::NoSlot,
        attempts: Vec<FailedAttempt>,
    ) -> Error {
        use crate::state::load::NoSlot;
        let (needed, allowed, ahead) = match no {
            NoSlot::WouldMissDeadline {
                needed,
                left,
                ahead,
            } => (needed, left, ahead),
            NoSlot::DeadlinePassed {
                waited,
                left,
                ahead,
            } => (waited.max(left), left, ahead),
            NoSlot::QueueOff => (std::time::Duration::ZERO, std::time::Duration::ZERO, 0),
        };
        Error::Overloaded {
            class: self.request.slo.class,
            needed_ms: millis(needed),
            allowed_ms: millis(allowed),
            waited_ms: millis(self.queued),
            ahead,
            attempts,
        }
    }

    /// The response of a successful attempt.
    pub fn respond(
        &mut self,
        attempt: &Attempt,
        done: Completion,
        timings: Timings,
    ) -> GenerateResponse {
        let config = &self.exec.config;
        // A prompt router is priced as the model it invoked, when that model is configured.
        let invoked = done
            .invoked_model
            .as_deref()
            .and_then(|id| crate::plan::prompt_router::configured_model(config, id));
        let (priced_id, priced_profile) = match invoked {
            Some((id, ref profile)) => (id, profile.as_ref()),
            None => (&*attempt.model, attempt.target.profile()),
        };
        let model = &config.models[priced_id];
        let served = done.served_tier.or(attempt.tier);
        if attempt.tier == Some(ServiceTier::RESERVED) && served != attempt.tier {
            self.reasons.push(Reason::ReservedOverflow {
                model: attempt.model.clone(),
                cause: OverflowCause::Served,
            });
        }
        let where_served = crate::cost::Served {
            region: Some(attempt.target.region()),
            tier: served,
            profile: priced_profile,
        };
        let cost_usd =
            crate::cost::cost_of_call(model.price(), &config.pricing, &done.usage, where_served);
        let uncached = crate::types::Usage {
            input_tokens: done.usage.total_input_tokens(),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            ..done.usage
        };
        let uncached_cost =
            crate::cost::cost_of_call(model.price(), &config.pricing, &uncached, where_served);
        let family = self.family_of(attempt);
        self.remember_cache_use(
            attempt,
            family.as_deref(),
            &done.usage,
            uncached_cost - cost_usd,
        );
        let mut reasons = std::mem::take(&mut self.plan.reasons);
        reasons.append(&mut self.reasons);
        let cell = reasons.iter().find_map(|r| match r {
            Reason::VariantScored {
                family: f,
                kind,
                band,
                ..
            } if Some(f) == family.as_ref() => Some((*kind, *band)),
            _ => None,
        });
        let shadow = reasons.iter().find_map(|r| match r {
            Reason::VariantShadow {
                family: f,
                would_choose,
                ..
            } if Some(f) == family.as_ref() => Some(would_choose.as_str()),
            _ => None,
        });
        if let (Some(family), Some((kind, band)), Some(would_choose)) =
            (family.as_deref(), cell, shadow)
        {
            // The served call's own tokens at the would-be variant's prices.
            let would_usd = config.models.get(would_choose).map_or(cost_usd, |m| {
                crate::cost::cost_of_call(m.price(), &config.pricing, &done.usage, where_served)
            });
            self.exec
                .telemetry
                .shadow
                .answered(&crate::telemetry::shadow::ShadowCall {
                    family,
                    kind,
                    band,
                    served: priced_id,
                    would_choose,
                    served_usd: cost_usd,
                    would_usd,
                });
        }
        let call_id = crate::types::CallRef {
            family: family.as_deref(),
            model: priced_id,
            cell,
        }
        .new_id();
        let response = GenerateResponse {
            model_response_fields: done.model_response_fields,
            guardrail_trace: done.guardrail_trace,
            content: done.content,
            stop_reason: done.stop_reason,
            usage: done.usage,
            timings,
            decision: RouteDecision {
                call_id,
                provider: attempt.target.provider.clone(),
                api: attempt.target.api,
                model: priced_id.to_string(),
                family,
                target: attempt.target.id().to_string(),
                region: attempt.target.region().to_string(),
                endpoint: (!model.endpoints().is_empty()).then(|| attempt.target.id.to_string()),
                tier: attempt.tier,
                served_tier: done.served_tier,
                invoked_model: done.invoked_model,
                reasons,
                failed_attempts: std::mem::take(&mut self.failed)
                    .into_iter()
                    .map(|(f, _)| f)
                    .collect(),
                attempts_sent: self.sent,
                hedge: self.hedge.take(),
            },
            cost_usd,
            cache_savings_usd: uncached_cost - cost_usd,
        };
        self.exec
            .telemetry
            .record_success(self.call_slo(), &response);
        if let Some(recorder) = self.exec.recorder.get() {
            let ended = super::record::Ended {
                request: self.request,
                plan: &self.plan,
                elapsed: self.clock.elapsed(),
                scope: Some(attempt.target.profile().map_or("in_region", |p| p.prefix())),
                hedge_targets: self.hedge_targets.as_ref(),
                served_ttft: self.served_ttft,
                outcome: Ok(&response),
            };
            if let Some(line) = super::record::call(recorder, ended) {
                recorder.push_call(line);
            }
        }
        response
    }

    /// The family a served attempt's model belongs to: the plan's, or the first family that
    /// lists a fallback model.
    fn family_of(&self, attempt: &Attempt) -> Option<String> {
        if attempt.model == self.plan.model {
            return self.plan.family.as_deref().map(String::from);
        }
        self.exec
            .config
            .families
            .iter()
            .find(|(_, f)| f.variants.iter().any(|v| **v == *attempt.model))
            .map(|(n, _)| n.clone())
    }

    /// What a served call teaches prompt caching: where its prefixes are now cached (for the
    /// plan's model), and the cache use and savings of its family (or model).
    fn remember_cache_use(
        &mut self,
        attempt: &Attempt,
        family: Option<&str>,
        usage: &crate::types::Usage,
        savings_usd: f64,
    ) {
        let state = &self.exec.state;
        if attempt.model == self.plan.model && !self.plan.cache.prefixes.is_empty() {
            let cache = &mut self.plan.cache;
            state.prefixes().record_prefixes(
                crate::time::now(),
                &cache.prefixes,
                &cache.checkpoints,
                attempt.target.region(),
                attempt.target.id(),
            );
            state
                .prefixes()
                .remember_digests(std::mem::take(&mut cache.learned));
        }
        state
            .prefixes()
            .record_cache_use(family.unwrap_or(&attempt.model), usage, savings_usd);
    }
}

/// The timer's resolution.
const TIMER_TICK: std::time::Duration = std::time::Duration::from_millis(1);

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether a target is kept away from: its breaker open, or its region ejected.
fn kept_away(view: &crate::state::TargetView) -> bool {
    matches!(
        view.breaker,
        crate::types::BreakerView::Open | crate::types::BreakerView::RegionEjected
    )
}
