//! Execution: walks a plan's attempts, fails over on errors whose kind allows it, and turns
//! backend answers into responses with timings, decision and cost.

mod clock;
mod stream;

use std::sync::Arc;

use crate::backend::{Backend, Call, Completion};
use crate::config::Config;
use crate::cost;
use crate::error::{Error, FailedAttempt, Result};
use crate::plan::{Attempt, Plan, Target};
use crate::request::GenerateRequest;
use crate::response::{GenerateResponse, RouteDecision, Timings};

pub use clock::Clock;
pub use stream::ResponseStream;

/// The configuration and the backends: everything `execute` needs.
pub struct Executor {
    pub config: Config,
    pub bedrock: Box<dyn Backend>,
    pub sagemaker: Box<dyn Backend>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Executor {
    fn backend(&self, target: &Target) -> &dyn Backend {
        match target {
            Target::Bedrock { .. } => self.bedrock.as_ref(),
            Target::Sagemaker { .. } => self.sagemaker.as_ref(),
        }
    }

    /// Sends the request down the plan's attempts until one answers.
    pub async fn generate(
        &self,
        request: &GenerateRequest,
        plan: Plan,
    ) -> Result<GenerateResponse> {
        let clock = Clock::start();
        let mut failed = Vec::new();
        for attempt in &plan.attempts {
            let call = Call { request, attempt };
            match self.backend(&attempt.target).generate(call).await {
                Ok(done) => {
                    let timings = clock.finish(done.usage.output_tokens);
                    return Ok(self.respond(&plan, attempt, done, timings, failed));
                }
                Err(e) if e.fails_over() => {
                    tracing::debug!(target = attempt.target.id(), region = attempt.target.region(), kind = %e.kind(), "attempt failed; failing over");
                    failed.push((
                        e.as_failed_attempt(attempt.target.id(), attempt.target.region()),
                        e,
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        Err(exhausted(failed))
    }

    /// Streams the request down the plan's attempts; see [`ResponseStream`].
    pub fn stream(self: Arc<Self>, request: GenerateRequest, plan: Plan) -> ResponseStream {
        stream::run(self, request, plan)
    }

    /// Builds the response of a successful attempt.
    pub(crate) fn respond(
        &self,
        plan: &Plan,
        attempt: &Attempt,
        done: Completion,
        timings: Timings,
        failed: Vec<(FailedAttempt, Error)>,
    ) -> GenerateResponse {
        let model = &self.config.models[&plan.model];
        let cost_usd = cost::call_cost(
            &model.price,
            &self.config.pricing,
            &done.usage,
            done.served_tier.or(attempt.tier),
            attempt.target.profile(),
        );
        GenerateResponse {
            content: done.content,
            stop_reason: done.stop_reason,
            usage: done.usage,
            timings,
            decision: RouteDecision {
                provider: plan.provider,
                model: plan.model.clone(),
                family: plan.family.clone(),
                target: attempt.target.id().to_string(),
                region: attempt.target.region().to_string(),
                endpoint: match &attempt.target {
                    Target::Sagemaker { endpoint, .. } => Some(endpoint.name.clone()),
                    Target::Bedrock { .. } => None,
                },
                tier: attempt.tier,
                served_tier: done.served_tier,
                reasons: plan.reasons.clone(),
                failed_attempts: failed.into_iter().map(|(f, _)| f).collect(),
            },
            cost_usd,
        }
    }
}

/// The error once every attempt failed over: the error itself when there was one attempt,
/// else [`Error::AllTargetsFailed`] with each.
fn exhausted(mut failed: Vec<(FailedAttempt, Error)>) -> Error {
    if failed.len() == 1 {
        return failed.pop().expect("one element").1;
    }
    Error::AllTargetsFailed {
        attempts: failed.into_iter().map(|(f, _)| f).collect(),
    }
}
