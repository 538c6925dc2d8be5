//! Execution: walks a plan's attempts through breakers, reservations and the retry budget,
//! fails over or retries by the error's kind, hedges late first tokens, and feeds every outcome
//! back into the live state.

mod attempt;
mod clock;
mod exchange;
mod lazy;
pub mod limits;
mod run;
mod stream;

use std::sync::Arc;

use futures::StreamExt;

use crate::backend::{Backend, Backends, Call};
use crate::config::Config;
use crate::plan::{Plan, Planner};
use crate::state::State;
use crate::types::Attempt;
use crate::types::Checkpoint;
use crate::types::{Error, ErrorKind, Result, ServiceError, TimeLimit};
use crate::types::{GenerateRequest, SloClass};
use crate::types::{GenerateResponse, StreamEvent};

pub use attempt::backoff;
pub use clock::Clock;
pub use lazy::LazyStream;
pub use run::Run;
pub use stream::ResponseStream;

/// The configuration, the backends and the live state: everything a call needs.
pub struct Executor {
    /// The router's configuration.
    pub config: Config,
    /// The routing policies, with the configuration's model files loaded.
    pub planner: Planner,
    /// The backend of each provider.
    pub backends: Backends,
    /// The live state every outcome feeds: breakers, latencies, quotas, the retry budget, ...
    pub state: State,
    /// The router's measurements: per-lane latencies, tokens and cost, errors, SLO attainment.
    pub telemetry: crate::telemetry::Telemetry,
    /// The batch lane's calls to AWS, when the router has AWS settings.
    pub batch: Option<crate::backend::BedrockBatch>,
    /// Answers of requests diverted from batches to flex, as they come.
    pub(crate) diverted: crate::batch::DivertedAnswers,
    /// Set once the fleet's figures were first read (with `[shared]`): a new replica's first
    /// call waits for that read (within `[shared].timeout`).
    fleet_read: tokio::sync::OnceCell<()>,
    /// Set once the local state file was read (or found missing): only then may dropping
    /// the executor write it, so that a router whose build failed does not wipe it.
    local_state_read: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor with fresh state and the built-in policies; fails if a family router's
    /// model file cannot be loaded.
    pub fn new(config: Config, backends: Backends) -> Result<Self> {
        let planner = Planner::new(&config)?;
        Ok(Self::with_planner(config, planner, backends))
    }

    /// An executor with fresh state and these policies.
    pub fn with_planner(config: Config, planner: Planner, backends: Backends) -> Self {
        let state = State::new(&config);
        state.know_regions(planner.catalog().regions());
        let telemetry = crate::telemetry::Telemetry::default();
        telemetry.set_task_idle(config.telemetry.task_idle);
        Self {
            config,
            planner,
            backends,
            state,
            telemetry,
            batch: None,
            diverted: Default::default(),
            fleet_read: tokio::sync::OnceCell::new(),
            local_state_read: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Plans a call against the live state now.
    pub fn plan(&self, request: &GenerateRequest) -> Result<Plan> {
        self.planner
            .plan(request, &self.config, &self.state.at(crate::time::now()))
    }

    /// Plans a call that will be sent, and tells the policies so ([`Planner::committed`]); with
    /// shared state, first learns where other replicas cached its prompt prefixes (one Redis
    /// round trip, only for prefixes this replica has not cached or asked about lately), so
    /// cache affinity works across the fleet.
    pub async fn plan_shared(&self, request: &GenerateRequest) -> Result<Plan> {
        if self.state.is_shared() {
            // A new replica plans its first call with what the fleet knows (ejected regions,
            // its targets' latency), not as if nothing were known.
            self.fleet_read.get_or_init(|| self.read_fleet()).await;
        }
        let mut plan = self.plan(request)?;
        if self.state.is_shared()
            && !plan.cache.prefixes.is_empty()
            && self
                .state
                .import_shared_prefixes(crate::time::now(), &plan.cache.prefixes)
                .await
        {
            plan = self.plan(request)?;
        }
        self.planner.committed(&plan);
        Ok(plan)
    }

    /// The backend for an attempt, and the call to send it.
    fn call<'a>(
        &'a self,
        request: &'a GenerateRequest,
        attempt: &'a Attempt,
        checkpoints: &'a [Checkpoint],
    ) -> Result<(&'a dyn Backend, Call<'a>)> {
        let provider = &attempt.target.provider;
        let backend = self.backends.get(provider).ok_or_else(|| {
            Error::config(
                "backends",
                format!("no backend is registered for provider {provider:?}"),
            )
        })?;
        let model = self.config.models.get(&*attempt.model).ok_or_else(|| {
            Error::config(
                "models",
                format!("{:?} is not a configured model", attempt.model),
            )
        })?;
        Ok((
            backend,
            Call {
                request,
                attempt,
                model,
                checkpoints,
            },
        ))
    }

    /// Whether a call may be hedged, with somewhere to hedge to: interactive with a TTFT
    /// target; or, with `routing.hedge.standard`, interactive or standard without one (after
    /// its first target's learnt quantile, or before it is known after its prior: see
    /// `stream::hedge_delay`).
    fn hedges(&self, request: &GenerateRequest, plan: &Plan) -> bool {
        let hedge = &self.config.routing.hedge;
        let class = request.slo.class;
        let eligible = match request.slo.ttft_target {
            Some(_) => class == SloClass::Interactive,
            None => hedge.standard && matches!(class, SloClass::Interactive | SloClass::Standard),
        };
        hedge.enabled && eligible && plan.attempts.len() > 1
    }

    /// Sends the request down the plan's attempts until one answers.
    pub async fn generate(
        self: &Arc<Self>,
        request: &GenerateRequest,
        plan: Plan,
    ) -> Result<GenerateResponse> {
        // A hedge races first tokens, which only a stream shows: an interactive call with a
        // TTFT target is streamed for it; standard calls hedge only when streamed anyway.
        let hedged = self.hedges(request, &plan);
        let races = request.slo.ttft_target.is_some() && hedged;
        let streams = self.config.routing.stream_generate || races;
        if streams || hedged {
            // First tokens and gaps between events show a stalled attempt long before a whole
            // answer would be due (and a hedge with a TTFT target races first tokens, which
            // only a stream shows). Sent whole, a hedged call hedges when its answer is later
            // than expected.
            let delivery = if streams {
                stream::Delivery::Whole
            } else {
                stream::Delivery::Answer
            };
            let mut events = stream::run(Arc::clone(self), request.clone(), plan, delivery);
            while let Some(event) = events.next().await {
                if let StreamEvent::Completed(done) = event? {
                    return Ok(*done);
                }
            }
            // The stream ends with its answer or an error; should it not, name the target the
            // plan would try first (planned again here, off the path every call takes).
            let (target, region) = self
                .plan(request)
                .ok()
                .and_then(|p| p.attempts.into_iter().next())
                .map(|a| (a.target.id.to_string(), a.target.region.to_string()))
                .unwrap_or_default();
            return Err(Error::from(ServiceError::new(
                ErrorKind::Transport,
                "the stream ended without a response",
                target,
                region,
            )));
        }
        let mut run = Run::new(self, request, plan);
        loop {
            let Some(mut inflight) = run.next_attempt().await else {
                let e = run.exhausted();
                return Err(run.failed_with(e));
            };
            let checkpoints = run.checkpoints_for(&inflight.attempt);
            let answer = run.attempt_limits(&mut inflight).answer;
            let bound = run.bound_from(TimeLimit::Answer, answer);
            let result = match self.call(request, &inflight.attempt, &checkpoints) {
                Ok((backend, call)) => bound
                    .run(crate::telemetry::span::within(
                        attempt::span(&inflight.attempt),
                        backend.generate(call),
                    ))
                    .await
                    .unwrap_or_else(|fired| Err(inflight.timed_out(fired))),
                Err(e) => Err(e),
            };
            match result {
                Ok(done) => {
                    let timings = run.clock.finish(done.usage.output_tokens);
                    let response = run.respond(&inflight.attempt, done, timings);
                    let served = response.decision.served_tier.or(response.decision.tier);
                    inflight.succeed(&response.usage, &response.timings, served, None);
                    return Ok(response);
                }
                Err(e) => {
                    // Boxed: failures are rare, and every call's future would carry its size.
                    if let Err(stop) = Box::pin(run.after_failure(inflight, e)).await {
                        return Err(run.failed_with(stop));
                    }
                }
            }
        }
    }

    /// Streams the request down the plan's attempts; see [`ResponseStream`].
    pub fn stream(self: Arc<Self>, request: GenerateRequest, plan: Plan) -> ResponseStream {
        stream::run(self, request, plan, stream::Delivery::Events)
    }
}
