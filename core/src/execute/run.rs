//! Walking a plan: which attempt goes next, what a failure means, and the response at the end.

use std::time::Instant;

use super::attempt::{classify, InFlight, Verdict};
use super::{Clock, Executor};
use crate::backend::Completion;
use crate::error::{Error, FailedAttempt};
use crate::plan::{tier, Attempt, OverflowCause, Plan, Reason};
use crate::request::{GenerateRequest, ServiceTier};
use crate::response::{GenerateResponse, HedgeReport, RouteDecision, Timings};
use crate::state::Observations;

/// One call's walk through its plan.
pub struct Run<'a> {
    exec: &'a Executor,
    request: &'a GenerateRequest,
    plan: Plan,
    /// The plan's attempts not yet taken, best first.
    remaining: std::vec::IntoIter<Attempt>,
    retry: Option<Attempt>,
    same_target_retries: u32,
    sent: u32,
    budget_exhausted: bool,
    estimate: (u64, u64),
    pub clock: Clock,
    pub failed: Vec<(FailedAttempt, Error)>,
    /// Decisions made while executing (overflows, skipped targets), after the plan's.
    pub reasons: Vec<Reason>,
    pub hedge: Option<HedgeReport>,
    /// The lane of the plan's first target: where a failed call is counted.
    first_lane: Option<(crate::telemetry::LaneKey, crate::config::Provider)>,
    _in_flight: crate::telemetry::InFlightGuard<'a>,
}

impl<'a> Run<'a> {
    pub fn new(exec: &'a Executor, request: &'a GenerateRequest, mut plan: Plan) -> Self {
        exec.state.record_call(Instant::now());
        let first_lane = plan.attempts.first().map(|a| {
            let lane = crate::telemetry::LaneKey {
                family: plan.family.clone(),
                model: a.model.clone(),
                target: a.target.id().to_string(),
                region: a.target.region().to_string(),
                tier: a.tier,
                slo_class: request.slo.class,
            };
            (lane, a.target.provider())
        });
        let remaining = std::mem::take(&mut plan.attempts).into_iter();
        Self {
            exec,
            request,
            plan,
            remaining,
            retry: None,
            same_target_retries: 0,
            sent: 0,
            budget_exhausted: false,
            estimate: tier::estimated_tokens(request, &exec.config),
            clock: Clock::start(),
            failed: Vec::new(),
            reasons: Vec::new(),
            hedge: None,
            first_lane,
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

    /// Counts the call's final error in the telemetry; returns it.
    pub fn failed_with(&self, e: Error) -> Error {
        if let Some((lane, provider)) = &self.first_lane {
            self.exec.telemetry.record_failure(
                self.call_slo(),
                lane.clone(),
                *provider,
                e.kind(),
                self.clock.elapsed(),
            );
        }
        e
    }

    /// Whether a candidate remains after the ones taken.
    pub fn has_more(&self) -> bool {
        self.retry.is_some() || self.remaining.len() > 0
    }

    /// The plan's cache checkpoints, for attempts on the plan's model (a fallback model's rules
    /// may differ: it gets none).
    pub fn checkpoints_for(&self, attempt: &Attempt) -> Vec<crate::plan::prompt_cache::Checkpoint> {
        // A prompt router's choice may not cache: it gets none.
        let routed = crate::plan::prompt_router::parse_arn(attempt.target.id()).is_some();
        if attempt.model == self.plan.model && !routed {
            self.plan.cache.checkpoints.clone()
        } else {
            Vec::new()
        }
    }

    /// Attempts sent so far.
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// The next attempt to send, admitted through its breaker, its reservation and (after the
    /// first) the retry budget; `None` when there is none or the budget is spent.
    pub async fn next_attempt(&mut self) -> Option<InFlight<'a>> {
        let state = &self.exec.state;
        if let Some(attempt) = self.retry.take() {
            return self.admit(attempt, true).await;
        }
        while let Some(attempt) = self.remaining.next() {
            // Nothing sent and nothing else left: send even through an open breaker.
            let force = self.sent == 0 && self.remaining.len() == 0;
            let now = Instant::now();
            let peek = state.at(now);
            let view = peek.target(attempt.target.region(), attempt.target.id(), attempt.tier);
            if !force && view.breaker == crate::state::BreakerView::Open {
                self.reasons.push(Reason::TargetDemoted {
                    target: attempt.target.id().to_string(),
                    region: attempt.target.region().to_string(),
                    health: view.breaker,
                    throttle_score: (view.throttle_score * 100.0).round() / 100.0,
                });
                continue;
            }
            if let Some(f) = self.admit(attempt, force).await {
                return Some(f);
            }
            if self.budget_exhausted {
                return None;
            }
        }
        None
    }

    async fn admit(&mut self, attempt: Attempt, force: bool) -> Option<InFlight<'a>> {
        let state = &self.exec.state;
        let (inflight, overflowed) = InFlight::admit(state, attempt, self.estimate, force).await?;
        if self.sent > 0 && !state.spend_extra_attempt(Instant::now()) {
            self.budget_exhausted = true;
            return None; // dropping `inflight` frees what it took
        }
        if overflowed {
            self.reasons.push(Reason::ReservedOverflow {
                model: inflight.attempt.model.clone(),
                cause: OverflowCause::Full,
            });
        }
        self.sent += 1;
        Some(inflight)
    }

    /// Books a failed attempt without deciding what follows (a hedge's loser).
    pub fn record_failed(&mut self, inflight: InFlight<'a>, err: Error) {
        let a = inflight.attempt.clone();
        inflight.fail(&err);
        self.failed
            .push((err.as_failed_attempt(a.target.id(), a.target.region()), err));
    }

    /// Books a failed attempt and decides: `Ok` to go on with the next attempt (after waiting,
    /// for a retry of the same target), `Err` with the error to return.
    pub async fn after_failure(&mut self, inflight: InFlight<'a>, err: Error) -> Result<(), Error> {
        let attempt = inflight.attempt.clone();
        if attempt.tier == Some(ServiceTier::Reserved) && err.kind() == crate::ErrorKind::Throttled
        {
            // As Bedrock does for reservations: the overflow goes to standard, same target.
            self.reasons.push(Reason::ReservedOverflow {
                model: attempt.model.clone(),
                cause: OverflowCause::Throttled,
            });
            self.record_failed(inflight, err);
            self.retry = Some(Attempt {
                tier: Some(ServiceTier::Standard),
                ..attempt
            });
            return Ok(());
        }
        let retry = self.exec.config.routing.retry;
        let verdict = classify(
            &err,
            self.has_more(),
            self.same_target_retries,
            retry.max_same_target,
            retry.backoff,
        );
        let fails_over = err.fails_over();
        self.record_failed(inflight, err);
        match verdict {
            Verdict::FailOver => Ok(()),
            Verdict::RetrySame { after } => {
                let late = self
                    .request
                    .slo
                    .deadline
                    .is_some_and(|d| self.clock.elapsed() + after > d);
                if late {
                    return Err(self.exhausted());
                }
                tokio::time::sleep(after).await;
                self.same_target_retries += 1;
                self.retry = Some(attempt);
                Ok(())
            }
            Verdict::FailNow if fails_over => Err(self.exhausted()),
            Verdict::FailNow => Err(self.failed.pop().expect("just recorded").1),
        }
    }

    /// The error once nothing more will be tried.
    ///
    /// When every failure came from one target (tried, perhaps retried), that target's last
    /// error is returned as is; otherwise [`Error::AllTargetsFailed`] lists every attempt.
    pub fn exhausted(&mut self) -> Error {
        let mut failed = std::mem::take(&mut self.failed);
        let one_target = failed
            .windows(2)
            .all(|w| (&w[0].0.target, &w[0].0.region) == (&w[1].0.target, &w[1].0.region));
        if !failed.is_empty() && one_target && !self.budget_exhausted {
            return failed.pop().expect("not empty").1;
        }
        Error::AllTargetsFailed {
            attempts: failed.into_iter().map(|(f, _)| f).collect(),
            budget_exhausted: self.budget_exhausted,
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
            Some((id, profile)) => (id, profile),
            None => (attempt.model.as_str(), attempt.target.profile()),
        };
        let model = &config.models[priced_id];
        let served = done.served_tier.or(attempt.tier);
        let cost_usd = crate::cost::call_cost(
            &model.price,
            &config.pricing,
            &done.usage,
            served,
            priced_profile,
        );
        let uncached = crate::response::Usage {
            input_tokens: done.usage.total_input_tokens(),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            ..done.usage
        };
        let uncached_cost = crate::cost::call_cost(
            &model.price,
            &config.pricing,
            &uncached,
            served,
            priced_profile,
        );
        if attempt.model == self.plan.model && !self.plan.cache.prefixes.is_empty() {
            let cache = &mut self.plan.cache;
            let state = &self.exec.state;
            state.record_prefixes(
                Instant::now(),
                &cache.prefixes,
                &cache.checkpoints,
                attempt.target.region(),
                attempt.target.id(),
            );
            state.remember_digests(std::mem::take(&mut cache.learned));
        }
        let family = if attempt.model == self.plan.model {
            self.plan.family.clone()
        } else {
            config
                .families
                .iter()
                .find(|(_, f)| f.variants.contains(&attempt.model))
                .map(|(n, _)| n.clone())
        };
        self.exec.state.record_cache_use(
            family.as_deref().unwrap_or(&attempt.model),
            &done.usage,
            uncached_cost - cost_usd,
        );
        let mut reasons = std::mem::take(&mut self.plan.reasons);
        reasons.append(&mut self.reasons);
        let response = GenerateResponse {
            content: done.content,
            stop_reason: done.stop_reason,
            usage: done.usage,
            timings,
            decision: RouteDecision {
                provider: model.provider,
                model: priced_id.to_string(),
                family,
                target: attempt.target.id().to_string(),
                region: attempt.target.region().to_string(),
                endpoint: match &attempt.target {
                    crate::plan::Target::Sagemaker { endpoint, .. } => Some(endpoint.name.clone()),
                    crate::plan::Target::Bedrock { .. } => None,
                },
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
        response
    }
}
