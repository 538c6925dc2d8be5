//! [`Router`] and [`RouterBuilder`]: the public entry point.

mod batch_lane;
mod lazy;
#[cfg(feature = "metrics-http")]
mod metrics_endpoint;

pub use batch_lane::BatchSession;
pub use lazy::LazyStream;
#[cfg(feature = "metrics-http")]
pub use metrics_endpoint::{Scrape, serve_prometheus, serve_scrapes};

use std::path::PathBuf;
use std::sync::Arc;

use aws_config::SdkConfig;

use crate::backend::{Backend, Backends, BedrockBackend, SagemakerBackend};
use crate::config::Config;
use crate::execute::{Executor, ResponseStream};
use crate::plan::Plan;
use crate::types::GenerateRequest;
use crate::types::GenerateResponse;
use crate::types::Result;
use crate::types::{Api, Provider};

/// Routes each call to the model variant, tier and target that meet its SLO at the lowest cost.
///
/// Cheap to clone: clones share clients and state.
///
/// ```no_run
/// # async fn run() -> laneway::Result<()> {
/// use laneway::{GenerateRequest, Router, SloClass};
/// let router = Router::builder().build().await?; // AWS credentials and regions from the environment
/// let answer = router
///     .generate(GenerateRequest::user("Hello!").family("nova").slo_class(SloClass::Interactive))
///     .await?;
/// println!("{} (via {} in {}, ${:.6})", answer.text(), answer.decision.target, answer.decision.region, answer.cost_usd);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Router {
    exec: Arc<Executor>,
}

impl Router {
    /// A builder, starting from the built-in configuration.
    pub fn builder() -> RouterBuilder {
        RouterBuilder::default()
    }

    /// A router from a TOML configuration file, with AWS settings from the environment.
    pub async fn from_config_file(path: impl Into<PathBuf>) -> Result<Self> {
        Self::builder().config_file(path).build().await
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.exec.config
    }

    /// Input tokens so far per family (or model), split into new, cache-written and cache-read,
    /// with the savings: how many of your input tokens are really new.
    pub fn cache_totals(&self) -> std::collections::BTreeMap<String, crate::state::CacheTotals> {
        self.exec.state.prefixes().cache_totals()
    }

    /// A stream that sends the request on its first [`LazyStream::next`](crate::LazyStream::next) and can be read
    /// through a shared reference (for bindings whose iterators ask one event at a time).
    pub fn lazy_stream(&self, request: GenerateRequest) -> crate::client::LazyStream {
        crate::client::LazyStream::new(self.clone(), request)
    }

    /// Everything measured so far: per lane latency percentiles, tokens, cost, errors, failovers
    /// and hedges; SLO attainment per class; calls in flight; cost per finished task.
    /// `router.metrics().prometheus()` gives the Prometheus text exposition.
    pub(crate) fn executor(&self) -> &Executor {
        &self.exec
    }

    /// What the router has measured so far: per lane, SLO attainment, task costs, the prompt
    /// cache, shared state and shadow mode (see [`crate::telemetry::MetricsSnapshot`]).
    pub fn metrics(&self) -> crate::telemetry::MetricsSnapshot {
        let mut snapshot = self.exec.telemetry.snapshot();
        self.add_state_figures(&mut snapshot);
        snapshot
    }

    /// The changes the calls recorded since the router started support, ranked by projected
    /// monthly saving with their risk and evidence (`laneway advise` over a live router; see
    /// [`crate::advice`]). The calls are those `[record]` samples, folded in memory as they
    /// are written (a `path` is not needed); without `[record]` this is a configuration error.
    ///
    /// ```no_run
    /// # async fn f() -> laneway::Result<()> {
    /// let config = laneway::Config::from_toml_str("[record]\nsample = 0.1\n")?;
    /// let router = laneway::Router::builder().config(config).build().await?;
    /// // ... a day of calls ...
    /// for change in router.advice()?.changes {
    ///     println!("{}: ${:.0} a month, risk {:?}", change.action, change.monthly_saving_usd, change.risk);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn advice(&self) -> Result<crate::advice::Advice> {
        Ok(self
            .recorder()?
            .with_summary(|s| crate::advice::advise(s, &self.exec.config)))
    }

    /// `[record]`'s lines as JSON for a host that is not Rust, which drains them into the
    /// app's OpenTelemetry logs (the Python and Node bindings' `record_logs`); a
    /// configuration error without `[record]`.
    pub fn record_lines(&self) -> Result<Arc<crate::telemetry::record::HostLines>> {
        Ok(self.recorder()?.host_lines())
    }

    /// Waits, at most `timeout`, until every `[record]` line of the calls finished so far is
    /// written (to the file, the summary `advice` reads and the app's logs' queue); whether
    /// they all were. Without `[record]`, true at once. For a process about to exit.
    pub fn flush_record(&self, timeout: std::time::Duration) -> bool {
        self.exec.recorder.get().is_none_or(|r| r.flush(timeout))
    }

    fn recorder(&self) -> Result<&crate::telemetry::record::Recorder> {
        self.exec.recorder.get().ok_or_else(|| {
            crate::types::Error::config(
                "record",
                "this reads the calls [record] samples: add a [record] table (its path is optional)",
            )
        })
    }

    fn add_state_figures(&self, snapshot: &mut crate::telemetry::MetricsSnapshot) {
        snapshot.shared = self.exec.state.shared_status();
        snapshot.record = self
            .exec
            .recorder
            .get()
            .map(|r| crate::telemetry::RecordFigures {
                written: r.written(),
                dropped: r.dropped(),
            });
        snapshot.health = self.exec.state.health_figures(crate::time::now());
        self.exec
            .telemetry
            .add_attempts(&mut snapshot.health.targets);
    }

    /// The values of the metrics a meter observes when it collects, now: calls in flight, the
    /// queue's depth per class, targets' breakers, regions' ejections and shared state's
    /// health ([`Metric::is_observed`](crate::telemetry::catalog::Metric::is_observed)).
    pub fn observe(&self) -> Vec<crate::telemetry::host_meter::Measurement> {
        let mut levels = self.exec.telemetry.levels();
        self.add_state_figures(&mut levels);
        crate::telemetry::observations(&levels)
    }

    /// The measurements of this router's calls for a Python or Node meter, kept from the first
    /// time this is asked (see [`crate::telemetry::host_meter`]).
    pub fn host_meter(&self) -> Arc<crate::telemetry::host_meter::HostMeter> {
        self.exec.telemetry.host_meter()
    }

    /// Queues again, for the host meter, the zeros each target's attempts start from: for the
    /// instruments of a meter the host moved to after traffic began
    /// ([`Telemetry::restart_host_series`](crate::telemetry::Telemetry::restart_host_series)).
    pub fn restart_host_series(&self) {
        self.exec.telemetry.restart_host_series();
    }

    /// Closes a task (the calls that carried its `task_id`): its cost joins the per-task and
    /// per-successful-task figures, and its outcome is feedback ([`Router::feedback`]) on each
    /// of its answered calls that a family's router chose. Returns false if no finished call
    /// named the task.
    pub fn finish_task(&self, task_id: &str, success: bool) -> bool {
        let Some(calls) = self.exec.telemetry.finish_task(task_id, success) else {
            return false;
        };
        for id in calls {
            if let Some(recorder) = self.exec.recorder.get() {
                recorder.outcome(&id, success, "task");
            }
            // Calls of models asked for by name teach no router: not an error for a task.
            if let Ok(call) = crate::types::CallRef::parse(&id)
                && call.cell.is_some()
            {
                self.shadow_feedback(&call, success);
                let _ = self.exec.planner.feedback(&call, success);
            }
        }
        true
    }

    /// Says whether a call's answer was good (by your evaluation, a user's rating, a test
    /// passing): its family's router updates the success estimate of the variant that served,
    /// in the prompt's difficulty band, and moves later prompts of that band to a cheaper or
    /// stronger variant within the family's `quality_loss_budget` (README "Learning from
    /// production"). `call_id` is the response's `decision.call_id`.
    ///
    /// An error says why the outcome cannot be used: a malformed id, or a call no family
    /// router chose (a model asked for by name, a family without a router).
    ///
    /// ```no_run
    /// # async fn run(router: laneway::Router) -> laneway::Result<()> {
    /// use laneway::GenerateRequest;
    /// let answer = router.generate(GenerateRequest::user("Summarise this ticket: ...")).await?;
    /// let good = !answer.text().is_empty(); // your evaluation here
    /// router.feedback(&answer.decision.call_id, good)?;
    /// # Ok(()) }
    /// ```
    pub fn feedback(&self, call_id: &str, good: bool) -> Result<()> {
        crate::failpoint::check("feedback");
        let call = crate::types::CallRef::parse(call_id)?;
        if let Some(recorder) = self.exec.recorder.get() {
            recorder.outcome(call_id, good, "feedback");
        }
        self.exec.planner.feedback(&call, good)?;
        self.shadow_feedback(&call, good);
        Ok(())
    }

    /// Feedback on a call of a family in shadow mode joins its cell's shadow figures.
    fn shadow_feedback(&self, call: &crate::types::CallRef<'_>, good: bool) {
        if let (Some(family), Some(cell)) = (call.family, call.cell) {
            self.exec.telemetry.shadow.feedback(family, cell, good);
        }
    }

    /// What the families in shadow mode (`router = { shadow = true }`) would have done
    /// routed: per family and cell, the calls, the variant routing would have chosen, the cost
    /// served and the cost routed (the served tokens at the would-be variant's prices), and the
    /// feedback on the served calls. Also in [`Router::metrics`]; `laneway router report`
    /// prints it.
    ///
    /// ```no_run
    /// # fn show(router: laneway::Router) {
    /// for (family, f) in &router.shadow_report().families {
    ///     println!("{family}: {} calls, routing would save {:.0}%", f.calls, f.saving() * 100.0);
    /// }
    /// # }
    /// ```
    pub fn shadow_report(&self) -> crate::telemetry::shadow::ShadowReport {
        self.exec.telemetry.shadow.report()
    }

    /// What the family routers have learned from feedback: per family, each cell (task kind
    /// and difficulty band) that has outcomes, with each variant's decayed outcomes and each
    /// cheaper variant's verdict.
    ///
    /// ```no_run
    /// # fn show(router: laneway::Router) {
    /// for cell in router.feedback_report().get("nova").into_iter().flatten() {
    ///     println!("{} band {}: {:?}", cell.kind, cell.band, cell.outcomes.verdicts);
    /// }
    /// # }
    /// ```
    pub fn feedback_report(&self) -> crate::plan::feedback::FeedbackReport {
        self.exec.planner.feedback_report()
    }

    /// What the router would do for this request now, without sending it.
    pub fn plan(&self, request: &GenerateRequest) -> Result<Plan> {
        crate::failpoint::check("plan");
        self.exec.plan(request)
    }

    /// Sends a request and waits for the whole answer.
    ///
    /// Fails over to the next planned target on throttling, outages and transient errors; a
    /// request the service refuses as invalid is not retried.
    pub async fn generate(&self, request: GenerateRequest) -> Result<GenerateResponse> {
        crate::failpoint::check("generate");
        let plan = self.exec.plan_shared(&request).await?;
        let span = call_span("generate", &request, &plan);
        crate::telemetry::span::within(span, self.exec.generate(&request, plan)).await
    }

    /// Sends a request and streams the answer.
    ///
    /// Planning errors (a malformed request, an unknown model) come back at once; errors of the
    /// call come as the stream's last item. Until the first event reaches the caller, a failed
    /// attempt fails over; after it, the error is [`Error::StreamInterrupted`](crate::Error)
    /// with how much was delivered.
    ///
    /// ```no_run
    /// # async fn run(router: laneway::Router) -> laneway::Result<()> {
    /// use futures::StreamExt;
    /// use laneway::{GenerateRequest, StreamEvent};
    /// let mut events = router.stream(GenerateRequest::user("Tell me a story")).await?;
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         StreamEvent::TextDelta { text, .. } => print!("{text}"),
    ///         StreamEvent::Completed(done) => println!("\n{:?}", done.timings.ttft),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn stream(&self, request: GenerateRequest) -> Result<ResponseStream> {
        let plan = self.exec.plan_shared(&request).await?;
        let span = call_span("stream", &request, &plan);
        Ok(Arc::clone(&self.exec)
            .stream(request, plan)
            .instrumented(span))
    }
}

impl std::fmt::Debug for RouterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials stay out of Debug output.
        f.debug_struct("RouterBuilder")
            .field("config", &self.config.is_some())
            .field("config_file", &self.config_file)
            .field("endpoint_url", &self.endpoint_url)
            .field("token_counter", &self.token_counter)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Router`].
#[derive(Default)]
pub struct RouterBuilder {
    config: Option<Config>,
    config_file: Option<PathBuf>,
    endpoint_url: Option<String>,
    credentials: Option<(String, String)>,
    bedrock_api_key: Option<String>,
    sdk_config: Option<SdkConfig>,
    backends: Backends,
    /// Policies to add (`None`) or to replace the one of that name.
    policies: Vec<(Option<String>, Arc<dyn crate::plan::Policy>)>,
    token_counter: Option<std::sync::Arc<dyn crate::plan::prompt_cache::TokenCounter>>,
    meter: Option<opentelemetry::metrics::Meter>,
    /// Where `[record]`'s lines go besides its file.
    record_sinks: Vec<crate::telemetry::record::LineSink>,
}

impl RouterBuilder {
    /// Uses this configuration instead of the built-in one.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Loads the configuration from a TOML file at build time.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self
    }

    /// Sends every call to this URL (the emulator, a VPC endpoint) instead of AWS's.
    pub fn endpoint_url(mut self, url: impl Into<String>) -> Self {
        self.endpoint_url = Some(url.into());
        self
    }

    /// Signs with these static credentials instead of the default chain.
    pub fn static_credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> Self {
        self.credentials = Some((access_key_id.into(), secret_access_key.into()));
        self
    }

    /// Authenticates calls to Bedrock's OpenAI-compatible endpoints with this Bedrock API key
    /// (a bearer token) instead of SigV4; without it, `AWS_BEARER_TOKEN_BEDROCK` when set.
    /// Converse and SageMaker calls are signed as before.
    pub fn bedrock_api_key(mut self, key: impl Into<String>) -> Self {
        self.bedrock_api_key = Some(key.into());
        self
    }

    /// Uses an SDK configuration you loaded yourself. Laneway still turns the SDK's retries off:
    /// the router is the only retry loop.
    pub fn sdk_config(mut self, sdk_config: SdkConfig) -> Self {
        self.sdk_config = Some(sdk_config);
        self
    }

    /// Sends calls to models of `provider` through `backend`: a provider of your own (a
    /// model's `provider = "name"` in the configuration), or a replacement for the built-in
    /// Bedrock or SageMaker backend. Every model's provider needs a backend when the router is
    /// built.
    ///
    /// ```
    /// # async fn f() -> laneway::Result<()> {
    /// use std::sync::Arc;
    /// use laneway::backend::MemoryBackend;
    /// use laneway::{Config, GenerateRequest, Provider, Router};
    /// let config = Config::from_toml_str(r#"
    ///     builtin_models = false
    ///     default_model = "echo-1"
    ///     [models.echo-1]
    ///     provider = "echo"
    ///     regions = ["local"]
    ///     price = { input_per_1k = 0.0, output_per_1k = 0.001 }
    /// "#)?;
    /// let router = Router::builder()
    ///     .config(config)
    ///     .backend(Provider::named("echo"), Arc::new(MemoryBackend::echo()))
    ///     .build()
    ///     .await?;
    /// let answer = router.generate(GenerateRequest::user("hello there")).await?;
    /// assert_eq!(answer.text(), "hello there");
    /// # Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(f()).unwrap();
    /// ```
    pub fn backend(mut self, provider: Provider, backend: Arc<dyn Backend>) -> Self {
        self.backends.insert(provider, backend);
        self
    }

    /// Sends calls to `provider`'s models called by `api` through `backend`: a replacement
    /// for one of Bedrock's built-in backends other than Converse's (its OpenAI-compatible
    /// APIs').
    pub fn api_backend(mut self, provider: Provider, api: Api, backend: Arc<dyn Backend>) -> Self {
        self.backends.insert_for_api(provider, api, backend);
        self
    }

    /// Adds a routing policy after the built-in ones (variant, tier, checkpoints, targets):
    /// it sees every plan and may reorder, remove or add attempts, or change what earlier
    /// policies decided. `cargo run -p laneway --example custom_policy` shows one.
    pub fn policy(mut self, policy: Arc<dyn crate::plan::Policy>) -> Self {
        self.policies.push((None, policy));
        self
    }

    /// Replaces the routing policy of this name (`variant`, `tier`, `checkpoints`, `targets`)
    /// with yours; building fails if there is none of that name.
    pub fn replace_policy(
        mut self,
        name: impl Into<String>,
        policy: Arc<dyn crate::plan::Policy>,
    ) -> Self {
        self.policies.push((Some(name.into()), policy));
        self
    }

    /// Counts tokens with this counter (an exact tokenizer, say) when placing prompt-cache
    /// checkpoints; the default is [`CharEstimate`](crate::CharEstimate).
    pub fn token_counter(
        mut self,
        counter: std::sync::Arc<dyn crate::plan::prompt_cache::TokenCounter>,
    ) -> Self {
        self.token_counter = Some(counter);
        self
    }

    /// Also records every call into OpenTelemetry instruments made from this meter, named after
    /// the GenAI semantic conventions (see [`telemetry::otel`](crate::telemetry::otel)). The
    /// application owns the SDK and its exporter.
    ///
    /// ```no_run
    /// # async fn f(meter: opentelemetry::metrics::Meter) -> laneway::Result<()> {
    /// let router = laneway::Router::builder().opentelemetry_meter(meter).build().await?;
    /// # Ok(()) }
    /// ```
    pub fn opentelemetry_meter(mut self, meter: opentelemetry::metrics::Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// Sends `[record]`'s lines to the app's OpenTelemetry logs as well (or instead, without a
    /// `path`): one log record per line, event name `laneway.record.call` and so on, its body
    /// the line's JSON (see [`telemetry::otel::record_log_sink`](crate::telemetry::otel::record_log_sink)).
    /// Without `[record]` in the configuration nothing is recorded.
    ///
    /// ```no_run
    /// # async fn f(provider: opentelemetry_sdk::logs::SdkLoggerProvider) -> laneway::Result<()> {
    /// let config = laneway::Config::from_toml_str("[record]\nsample = 0.1\n")?;
    /// let router = laneway::Router::builder().config(config).record_logs(&provider).build().await?;
    /// # Ok(()) }
    /// ```
    pub fn record_logs<P>(self, provider: &P) -> Self
    where
        P: opentelemetry::logs::LoggerProvider,
        P::Logger: Send + 'static,
    {
        self.record_to(crate::telemetry::otel::record_log_sink(provider))
    }

    /// Sends `[record]`'s lines to `sink` as well, a batch at a time on the recorder's thread
    /// (each file's header first).
    pub fn record_to(
        mut self,
        sink: impl FnMut(&[crate::telemetry::record::Line]) + Send + 'static,
    ) -> Self {
        self.record_sinks.push(Box::new(sink));
        self
    }

    /// Loads the configuration and AWS settings and builds the clients.
    ///
    /// The AWS settings (the default credential chain, profile files) are loaded before this
    /// returns; [`RouterBuilder::build_deferred`] builds without waiting for them.
    pub async fn build(self) -> Result<Router> {
        let config = self.load_config()?;
        let settings = self.sdk_settings(&config);
        let sdk = crate::backend::aws::SdkSource::ready(
            crate::backend::aws::sdk_config(
                settings.given,
                settings.credentials,
                &settings.loader_region,
                settings.connect_timeout,
                settings.endpoint_url,
            )
            .await,
        );
        self.assemble(config, sdk)
    }

    /// Builds the router without waiting for anything: the configuration is loaded and
    /// checked now (its errors come back here), and the AWS settings load at the first call
    /// that needs them, once for all of its clients. Planning needs none of them. For a caller
    /// that must not block, such as an event loop (the Node binding's constructor).
    ///
    /// With `[shared]`, call it in a tokio runtime's context (`Handle::enter`, or any code a
    /// runtime runs): the Redis client is made there, and connects at its first command.
    ///
    /// ```
    /// let router = laneway::Router::builder()
    ///     .endpoint_url("http://127.0.0.1:4010")
    ///     .build_deferred()
    ///     .unwrap();
    /// let plan = router.plan(&laneway::GenerateRequest::user("hi").family("nova")).unwrap();
    /// assert!(!plan.attempts.is_empty());
    /// ```
    pub fn build_deferred(self) -> Result<Router> {
        let config = self.load_config()?;
        let sdk = crate::backend::aws::SdkSource::deferred(self.sdk_settings(&config));
        self.assemble(config, sdk)
    }

    fn load_config(&self) -> Result<Config> {
        match (&self.config, &self.config_file) {
            (Some(c), _) => {
                c.validate()?;
                Ok(c.clone())
            }
            (None, Some(path)) => Config::from_file(path),
            (None, None) => Ok(Config::default()),
        }
    }

    fn sdk_settings(&self, config: &Config) -> crate::backend::aws::SdkSettings {
        crate::backend::aws::SdkSettings {
            given: self.sdk_config.clone(),
            credentials: self.credentials.clone(),
            loader_region: config.regions[0].name.clone(),
            connect_timeout: config.routing.timeouts.connect,
            endpoint_url: self
                .endpoint_url
                .clone()
                .or_else(|| config.aws.endpoint_url.clone()),
        }
    }

    /// The router over `config`, its built-in backends made from `sdk` now if it is loaded,
    /// else at their first call.
    fn assemble(
        mut self,
        config: Config,
        sdk: Arc<crate::backend::aws::SdkSource>,
    ) -> Result<Router> {
        warn_of_ended_models(&config);
        let regions: Vec<String> = config.regions.iter().map(|r| r.name.clone()).collect();
        let mut backends = self.backends;
        let builtin = builtin_backends(&config, &regions, self.bedrock_api_key);
        for (provider, api, make) in builtin {
            if backends.contains_api(&provider, api) {
                continue;
            }
            let backend: Arc<dyn Backend> = match sdk.loaded() {
                Some(ready) => make(ready),
                None => Arc::new(crate::backend::aws::Deferred::new(Arc::clone(&sdk), make)),
            };
            backends.insert_for_api(provider, api, backend);
        }
        if let Some((id, m)) = config
            .models
            .iter()
            .find(|(_, m)| !backends.contains(&m.provider()))
        {
            return Err(crate::types::Error::config(
                format!("models.\"{id}\".provider"),
                format!(
                    "no backend is registered for provider {:?}: register one with RouterBuilder::backend",
                    m.provider().as_str()
                ),
            ));
        }
        let mut planner = crate::plan::Planner::new(&config)?;
        for (replaces, policy) in self.policies {
            planner = match replaces {
                Some(name) => planner.replace_policy(&name, policy)?,
                None => planner.with_policy(policy),
            };
        }
        let mut exec = Executor::with_planner(config.clone(), planner, backends);
        if let Some(counter) = self.token_counter {
            exec.state.set_token_counter(counter);
        }
        exec.batch = Some(crate::backend::BedrockBatch::from_source(sdk));
        if let Some(meter) = &self.meter {
            exec.telemetry.set_meter(meter);
        }
        if let Some(shared) = &config.shared {
            let shared = crate::state::shared::Shared::new(shared).map_err(|e| {
                // The client's message may quote the URL: never its password.
                let message = e.to_string().replace(
                    &shared.redis_url,
                    &crate::config::redact_url(&shared.redis_url),
                );
                crate::types::Error::config("shared.redis_url", message)
            })?;
            exec.state.set_shared(Arc::new(shared), &config);
        }
        // A fresh process starts from what its own last run learnt of its targets (and a new
        // replica from the fleet's figures, read before its first call: `plan_shared`).
        exec.restore_local_state();
        let exec = Arc::new(exec);
        if let Some(record) = &exec.config.record {
            let weak = Arc::downgrade(&exec);
            let loads = Box::new(move || {
                let exec = weak.upgrade()?;
                let mut loads = exec.telemetry.target_loads();
                let (now, headroom) = (crate::time::now(), exec.state.capacity().headroom());
                for t in &mut loads {
                    let tier = t.tier.as_deref().and_then(crate::types::ServiceTier::named);
                    let load = headroom.load(
                        now,
                        &t.region,
                        &t.target,
                        tier,
                        crate::types::SloClass::Standard,
                    );
                    (t.in_flight, t.limit) = (load.in_flight, load.limit);
                }
                Some(loads)
            });
            let recorder = crate::telemetry::record::Recorder::start(
                record,
                exec.config.digest(),
                loads,
                std::mem::take(&mut self.record_sinks),
            )
            .map_err(|e| {
                let path = record.path.as_deref().unwrap_or(std::path::Path::new(""));
                crate::types::Error::config("record.path", format!("{}: {e}", path.display()))
            })?;
            let _ = exec.recorder.set(recorder);
        }
        exec.spawn_exchange();
        let router = Router { exec };
        if let Some(meter) = &self.meter {
            let weak = Arc::downgrade(&router.exec);
            crate::telemetry::otel::observe(meter, move || {
                weak.upgrade().map(|exec| Router { exec }.observe())
            });
        }
        Ok(router)
    }
}

/// Warns of every configured model past its end of life on Bedrock: its calls will fail.
fn warn_of_ended_models(config: &Config) {
    // Today, as the calendar day AWS's end-of-life dates name (UTC).
    let now = aws_smithy_types::DateTime::from(std::time::SystemTime::now());
    let Ok(stamp) = now.fmt(aws_smithy_types::date_time::Format::DateTime) else {
        return;
    };
    for (model, day) in config.ended_models(&stamp[..stamp.len().min(10)]) {
        tracing::warn!(
            model,
            end_of_life = day,
            "{model} reached its end of life on Bedrock on {day}: calls to it will fail; configure a model still sold"
        );
    }
}

use crate::backend::aws::MakeBackend;

/// How each built-in AWS backend is made from the AWS settings: Bedrock's Converse, its
/// OpenAI-compatible endpoints (bedrock-runtime's `/openai/v1` at the settings' endpoint URL,
/// mantle at its `/mantle` unless configured) and SageMaker.
fn builtin_backends(
    config: &Config,
    regions: &[String],
    api_key: Option<String>,
) -> Vec<(Provider, Api, MakeBackend)> {
    use crate::backend::openai::{Endpoint, OpenAiBackend, OpenAiSettings};
    let bedrock_regions = regions.to_vec();
    let sagemaker_regions = regions.to_vec();
    let mut made: Vec<(Provider, Api, MakeBackend)> = vec![(
        Provider::Bedrock,
        Api::Converse,
        Box::new(move |sdk: &SdkConfig| -> Arc<dyn Backend> {
            Arc::new(BedrockBackend::new(
                sdk,
                bedrock_regions.iter().map(String::as_str),
            ))
        }),
    )];
    for endpoint in [Endpoint::Runtime, Endpoint::Mantle] {
        let mantle_url = config.aws.mantle_endpoint_url.clone();
        let api_key = api_key.clone();
        let connect_timeout = config.routing.timeouts.connect;
        made.push((
            Provider::Bedrock,
            endpoint.api(),
            Box::new(move |sdk: &SdkConfig| -> Arc<dyn Backend> {
                // The SDK configuration's endpoint URL (the builder's, the file's, or the
                // caller's own SdkConfig's) serves bedrock-runtime; mantle is its `/mantle`.
                let runtime_url = sdk.endpoint_url().map(str::to_string);
                let url = match endpoint {
                    Endpoint::Runtime => runtime_url,
                    Endpoint::Mantle => mantle_url.clone().or_else(|| {
                        runtime_url.map(|u| format!("{}/mantle", u.trim_end_matches('/')))
                    }),
                };
                let settings = OpenAiSettings {
                    api_key: api_key.clone(),
                    endpoint_url: url,
                    connect_timeout: Some(connect_timeout),
                };
                Arc::new(OpenAiBackend::new(endpoint, sdk, settings))
            }),
        ));
    }
    made.push((
        Provider::Sagemaker,
        Api::InvokeEndpoint,
        Box::new(move |sdk: &SdkConfig| -> Arc<dyn Backend> {
            Arc::new(SagemakerBackend::new(
                sdk,
                sagemaker_regions.iter().map(String::as_str),
            ))
        }),
    ));
    made
}

/// The `tracing` span of one call: what was planned, never the prompt.
fn call_span(operation: &'static str, request: &GenerateRequest, plan: &Plan) -> tracing::Span {
    let first = plan.attempts.first();
    tracing::info_span!(
        "laneway.call",
        gen_ai.operation.name = operation,
        gen_ai.request.model = %plan.model,
        family = plan.family.as_deref().unwrap_or(""),
        slo_class = %request.slo.class,
        target = first.map(|a| a.target.id()).unwrap_or(""),
        region = first.map(|a| a.target.region()).unwrap_or(""),
        attempts_planned = plan.attempts.len(),
    )
}
