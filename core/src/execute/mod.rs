//! Execution: walks a plan's attempts through breakers, reservations and the retry budget,
//! fails over or retries by the error's kind, hedges late first tokens, and feeds every outcome
//! back into the live state.

mod assembly;
mod attempt;
mod clock;
mod exchange;
pub mod limits;
mod open;
mod record;
mod response_stream;
mod run;
mod verdict;
mod walk;

use std::sync::Arc;

use futures::StreamExt;

use crate::backend::Backends;
use crate::config::Config;
use crate::plan::{Plan, Planner};
use crate::state::State;
use crate::types::{Error, ErrorKind, Result, ServiceError};
use crate::types::{GenerateRequest, SloClass};
use crate::types::{GenerateResponse, StreamEvent};
use walk::Delivery;

pub use attempt::backoff;
pub use clock::Clock;
pub use response_stream::ResponseStream;
/// One call's walk through its plan: internal to the executor.
#[deprecated(
    since = "0.9.0",
    note = "internal to the executor; it leaves the public API in the next release"
)]
pub type Run<'a> = run::Run<'a>;

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
    /// The calls' recorder, with `[record]` (set once the router is built).
    pub(crate) recorder: std::sync::OnceLock<crate::telemetry::record::Recorder>,
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
        state.health().know_regions(planner.catalog().regions());
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
            recorder: std::sync::OnceLock::new(),
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
                .prefixes()
                .import_shared_prefixes(crate::time::now(), &plan.cache.prefixes)
                .await
        {
            plan = self.plan(request)?;
        }
        self.planner.committed(&plan);
        Ok(plan)
    }

    /// Whether a call may be hedged, with somewhere to hedge to: interactive with a TTFT
    /// target; or, with `routing.hedge.standard`, interactive or standard without one (after
    /// its first target's learnt quantile, or before it is known after its prior: see
    /// `open::hedge_delay`).
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
    ///
    /// Each attempt is streamed (`routing.stream_generate`, the default): first tokens and
    /// gaps between events show a stalled attempt long before a whole answer would be due,
    /// and a hedge with a TTFT target races first tokens, which only a stream shows. Sent
    /// whole, a hedged call hedges when its answer is later than expected.
    pub async fn generate(
        self: &Arc<Self>,
        request: &GenerateRequest,
        plan: Plan,
    ) -> Result<GenerateResponse> {
        let races = request.slo.ttft_target.is_some() && self.hedges(request, &plan);
        let send_whole = !(self.config.routing.stream_generate || races);
        let mut events = walk::walk(
            Arc::clone(self),
            request.clone(),
            plan,
            Delivery::Answer,
            send_whole,
        );
        while let Some(event) = events.next().await {
            if let StreamEvent::Completed(done) = event? {
                return Ok(*done);
            }
        }
        // The walk ends with its answer or an error; should it not, name the target the plan
        // would try first (planned again here, off the path every call takes).
        let (target, region) = self
            .plan(request)
            .ok()
            .and_then(|p| p.attempts.into_iter().next())
            .map(|a| (a.target.id.to_string(), a.target.region.to_string()))
            .unwrap_or_default();
        Err(Error::from(ServiceError::new(
            ErrorKind::Transport,
            "the stream ended without a response",
            target,
            region,
        )))
    }

    /// Streams the request down the plan's attempts; see [`ResponseStream`].
    pub fn stream(self: Arc<Self>, request: GenerateRequest, plan: Plan) -> ResponseStream {
        walk::walk(self, request, plan, Delivery::Events, false)
    }
}
