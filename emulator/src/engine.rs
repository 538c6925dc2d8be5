//! The simulation behind every wire protocol: which model or endpoint a request reaches, whether
//! capacity admits it, which faults hit it, what it answers and how fast.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Serialize;

use crate::faults::{Fault, FaultKind, FaultRegistry, Subject};
use crate::scenario::{EndpointSpec, ModelSpec, Performance, Scenario};
use crate::text;

/// The two services emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// Amazon Bedrock: bedrock-runtime (Converse, InvokeModel, `/openai/v1`), bedrock-mantle and
    /// batch jobs.
    Bedrock,
    /// SageMaker real-time endpoints.
    Sagemaker,
}

/// An error answered on the wire: the AWS error code, HTTP status and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// A `Retry-After` header to send, as is.
    pub retry_after: Option<String>,
    /// For a SageMaker ModelError: the container's own status and message
    /// (`OriginalStatusCode`, `OriginalMessage`).
    pub original: Option<(u16, String)>,
    /// Answered as a load balancer's HTML page rather than the service's JSON.
    pub html: bool,
}

impl ApiError {
    pub(crate) fn new(status: u16, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            retry_after: None,
            original: None,
            html: false,
        }
    }
    /// A `502 Bad Gateway` page from a load balancer in front of the service.
    pub(crate) fn html_bad_gateway() -> Self {
        Self {
            html: true,
            ..Self::new(
                502,
                "",
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n",
            )
        }
    }
    pub(crate) fn validation(service: Service, message: impl Into<String>) -> Self {
        match service {
            Service::Bedrock => Self::new(400, "ValidationException", message),
            Service::Sagemaker => Self::new(400, "ValidationError", message),
        }
    }
}

/// What the caller asked for, reduced to what the simulation needs.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub service: Service,
    pub operation: &'static str,
    pub region: String,
    /// The model id, profile id or endpoint name as sent.
    pub target: String,
    /// `default`, `priority`, `flex` or `reserved`; SageMaker requests are `default`.
    pub tier: String,
    /// `performanceConfig.latency = optimized` (or InvokeModel's
    /// `X-Amzn-Bedrock-PerformanceConfig-Latency: optimized`).
    pub latency_optimized: bool,
    pub input_tokens: u32,
    pub max_tokens: Option<u32>,
    /// A digest of the prompt, which fixes the answer's words and length.
    pub prompt_digest: u64,
    /// The request's `cachePoint` checkpoints, in prompt order.
    pub cache_points: Vec<crate::cache::CachePointAt>,
    /// The checkpoints are the Responses API's breakpoints, already checked by its rules
    /// (not Converse's); the model caches them though it takes no `cachePoint`.
    pub cache_checked: bool,
    /// The text of a final assistant message (a prefill), when the request ends with one:
    /// `prompt_digest` is then the digest of the prompt without it, and the answer goes on
    /// from the prefill if the prefill is the start of that prompt's answer.
    pub prefill: Option<String>,
    /// Converse's fields beyond the conversation (reasoning, structured output, ...), checked
    /// against the model that serves.
    pub extras: Option<std::sync::Arc<crate::converse_ext::Extras>>,
    /// The request's guardrail (`guardrailConfig`) and the text it evaluates.
    pub guard: Option<std::sync::Arc<crate::guardrail::GuardAsk>>,
    /// The answer's text, when the last user message asks for it verbatim (`Echo: ...`), so
    /// that a test can put given words in an answer.
    pub echo: Option<String>,
    /// For a call to bedrock-mantle: its quota pool's input and output tokens per minute,
    /// counted apart from bedrock-runtime's.
    pub mantle_quota: Option<[u64; 2]>,
}

impl Ask {
    /// The surface it came to, as faults name it: `bedrock` (Converse, InvokeModel),
    /// `bedrock-openai`, `bedrock-mantle` or `sagemaker`.
    pub(crate) fn surface(&self) -> &'static str {
        match self.service {
            Service::Sagemaker => "sagemaker",
            Service::Bedrock if self.mantle_quota.is_some() => "bedrock-mantle",
            Service::Bedrock
                if self.operation.starts_with("Responses")
                    || self.operation.starts_with("ChatCompletions") =>
            {
                "bedrock-openai"
            }
            Service::Bedrock => "bedrock",
        }
    }
}

/// An admitted request: the answer to give and its timeline. Holds its capacity slot until
/// dropped.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The bare model id or endpoint name that served.
    pub model: String,
    /// The tier that served, as the response reports it: the one asked for, or `default` for
    /// a reserved request above its reservation.
    pub served_tier: String,
    pub tokens: Vec<String>,
    /// True when `max_tokens` cut the natural answer short.
    pub truncated: bool,
    /// Input tokens processed anew (not read from or written to the cache).
    pub input_tokens: u32,
    /// What the prompt cache did.
    pub cache: crate::cache::CacheUse,
    pub ttft: Duration,
    pub token_interval: Duration,
    /// Tokens to deliver before the stream breaks, and the exception to break with.
    pub break_after: Option<(u32, Option<String>)>,
    /// For a prompt router: the ARN of the model it chose (`trace.promptRouter.invokedModelId`).
    pub invoked_model: Option<String>,
    /// A fault that acts on the wire once the answer is built ([`FaultKind::is_wire`]).
    pub wire_fault: Option<Fault>,
    /// A SageMaker container that streams JSON lines without `data:`.
    pub plain_json_lines: bool,
    /// For a request ending with a prefill: whether it was the start of this prompt's answer.
    pub continuation: Option<bool>,
    /// The first this many of `tokens` are reasoning, before the answer.
    pub reasoning_tokens: usize,
    /// The reasoning is answered as `[REDACTED]` (Nova 2), with no signature.
    pub reasoning_redacted: bool,
    /// The reasoning carries a signature (Claude's).
    pub reasoning_signed: bool,
    /// The native response fields the request asked for.
    pub response_fields: Option<serde_json::Value>,
    /// What the request's guardrail did.
    pub guardrail: crate::guardrail::Outcome,
    /// The citation the answer's text carries, when the request gave a citable source.
    pub citation: Option<serde_json::Value>,
    _slot: crate::quota::Slot,
}

impl Answer {
    /// The whole answer text (after any reasoning).
    pub(crate) fn text(&self) -> String {
        self.tokens[self.reasoning_tokens..].concat()
    }
    /// The reasoning's text as the response shows it, and its signature.
    pub(crate) fn reasoning(&self) -> Option<(String, Option<String>)> {
        if self.reasoning_tokens == 0 {
            return None;
        }
        if self.reasoning_redacted {
            return Some(("[REDACTED]".into(), None));
        }
        let text = self.tokens[..self.reasoning_tokens].concat();
        let signature = self
            .reasoning_signed
            .then(|| crate::converse_ext::signature(&text));
        Some((text, signature))
    }
    /// Tokens in the whole answer (none when a guardrail blocked the input: the model was not
    /// called).
    pub(crate) fn output_tokens(&self) -> u32 {
        if self.guardrail.input_blocked {
            return 0;
        }
        self.tokens.len() as u32
    }
    /// Input tokens reported (none when a guardrail blocked the input).
    pub(crate) fn reported_input_tokens(&self) -> u32 {
        if self.guardrail.input_blocked {
            0
        } else {
            self.input_tokens
        }
    }
}

/// What the emulator served, per (service, region, target, tier, operation).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counter {
    /// Requests decided: admitted or refused.
    pub requests: u64,
    /// Requests admitted and answered (a stream may still break).
    pub ok: u64,
    /// Refusals by AWS error code.
    pub errors: BTreeMap<String, u64>,
    /// Admitted streams a fault broke (`break_stream`) before their end.
    pub streams_broken: u64,
    /// Requests that continued this emulator's own answer from a prefill of its start.
    pub continued: u64,
    /// Requests whose prefill was not the start of the answer to their prompt: a client that
    /// continued from the wrong text (duplicated or lost some).
    pub continuation_mismatches: u64,
    /// Streams whose client went away before the end (a lost hedge, a cancelled call).
    pub cancelled: u64,
    /// Input tokens of admitted requests processed anew (not read from or written to the
    /// prompt cache).
    pub input_tokens: u64,
    /// Output tokens of admitted answers, reasoning included (none when a guardrail blocked the
    /// input).
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// What the admitted calls were billed at their model's card prices (`price` in the
    /// scenario), in picodollars; zero for a model without prices.
    pub billed_picodollars: u64,
}

impl Counter {
    /// What the admitted calls were billed, in US dollars.
    pub fn billed_usd(&self) -> f64 {
        self.billed_picodollars as f64 / 1e12
    }
}

/// One row of the counters.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CounterRow {
    /// The service called.
    pub service: Service,
    /// The region the request was signed for.
    pub region: String,
    /// The model id, profile id or endpoint name, as sent.
    pub target: String,
    /// The tier that served (`default`, `priority`, `flex`, `reserved`), or the one asked for
    /// when refused; SageMaker requests are `default`.
    pub tier: String,
    /// The API operation (`Converse`, `ConverseStream`, `InvokeModel`, `InvokeEndpoint`, ...).
    pub operation: String,
    /// What was served there (flattened into the row).
    #[serde(flatten)]
    pub counter: Counter,
}

type CounterKey = (Service, String, String, String, String);

/// Counters are kept per tier that served (the tier asked for, when refused).
fn counter_key(ask: &Ask, tier: &str) -> CounterKey {
    (
        ask.service,
        ask.region.clone(),
        ask.target.clone(),
        tier.to_string(),
        ask.operation.to_string(),
    )
}

/// The emulated world with its live state.
#[derive(Debug)]
pub(crate) struct Engine {
    pub scenario: Scenario,
    pub faults: FaultRegistry,
    cache: crate::cache::PromptCache,
    counters: Mutex<BTreeMap<CounterKey, Counter>>,
    quotas: crate::quota::Quotas,
    started: Instant,
    draws: AtomicU64,
    /// S3 objects (batch inputs and outputs).
    pub objects: crate::wire::s3::Objects,
    /// Batch inference jobs.
    pub jobs: crate::wire::batch::Jobs,
}

enum Served<'a> {
    Model(&'a ModelSpec),
    Endpoint(&'a EndpointSpec),
}

/// Bedrock's checks of a request against the model that serves it: its extensions (reasoning,
/// structured output, fields), the tier, cache points and latency-optimized inference; what
/// they admit.
fn check_model_request(
    ask: &Ask,
    m: &ModelSpec,
) -> Result<crate::converse_ext::Admitted, ApiError> {
    let admitted = match &ask.extras {
        Some(x) => crate::converse_ext::check(x, m, ask.max_tokens)
            .map_err(|message| ApiError::validation(ask.service, message))?,
        None => crate::converse_ext::Admitted::default(),
    };
    // Batch records are not a request tier: every model in the scenario takes them.
    if ask.tier != "batch" && !m.tiers.contains(&ask.tier) {
        // Bedrock's words, as projects calling it have recorded them (Nova Lite at flex,
        // Sonnet 5 at flex, Claude 4.5 at priority: docs/research/catalog.md, 7b).
        return Err(ApiError::validation(
            ask.service,
            "The provided service tier is not supported for this model.",
        ));
    }
    if !ask.cache_points.is_empty() && !ask.cache_checked {
        if !m.prompt_cache {
            return Err(ApiError::validation(
                ask.service,
                format!("Prompt caching is not supported for model {}.", m.id),
            ));
        }
        let rules = crate::cache::CacheRules {
            tools: m.cache_tools,
            after_tool_result: m.cache_after_tool_result,
            ttls: &m.cache_ttls,
            max_points: m.max_cache_points,
        };
        crate::cache::check_placement(&ask.cache_points, rules)
            .map_err(|message| ApiError::validation(ask.service, message))?;
    }
    if ask.latency_optimized && m.latency_optimized.is_none() {
        return Err(ApiError::validation(
            ask.service,
            format!(
                "Latency-optimized inference is not supported for model {}.",
                m.id
            ),
        ));
    }
    Ok(admitted)
}

/// The served model's or endpoint's name, its performance for this ask (latency-optimized
/// where asked) and its range of answer lengths.
fn served_as<'s>(ask: &Ask, served: &Served<'s>) -> (&'s str, Performance, [u32; 2]) {
    match served {
        Served::Model(m) => {
            let mut performance = m.performance_for(&ask.region, &ask.tier, &ask.target);
            if let (Some(l), true) = (&m.latency_optimized, ask.latency_optimized) {
                performance.ttft_median_ms *= l.ttft_factor;
                performance.ttft_p99_ms *= l.ttft_factor;
                for q in &mut performance.ttft_quantiles {
                    q[1] *= l.ttft_factor;
                }
                performance.tokens_per_second *= l.tokens_per_second_factor;
            }
            (m.id.as_str(), performance, m.answer_tokens)
        }
        Served::Endpoint(e) => (e.name.as_str(), e.performance.clone(), e.answer_tokens),
    }
}

/// How long an answer is: its structured text's chunks (when a schema asks for JSON), its
/// natural length, the reasoning before it, and the answer as `max_tokens` cuts it.
struct AnswerSize {
    structured: Option<Vec<String>>,
    natural: u32,
    reasoning: u32,
    answer: u32,
}

impl AnswerSize {
    fn of(ask: &Ask, admitted: &crate::converse_ext::Admitted, answer_range: [u32; 2]) -> Self {
        let structured = admitted.schema.as_ref().map(|schema| {
            let json = crate::converse_ext::conforming(schema, ask.prompt_digest).to_string();
            text::chunks(&json, 4)
        });
        let natural = match &structured {
            Some(chunks) => chunks.len() as u32,
            None => text::natural_length(ask.prompt_digest, answer_range),
        };
        // Reasoning comes first and counts against max_tokens, as output.
        let reasoning = admitted.reasoning.map_or(0, |most| {
            text::natural_length(
                ask.prompt_digest.rotate_left(29),
                [most / 4, most].map(|m| m.max(1)),
            )
        });
        let reasoning = ask.max_tokens.map_or(reasoning, |m| reasoning.min(m));
        let room = ask.max_tokens.map(|m| m - reasoning);
        Self {
            structured,
            natural,
            reasoning,
            answer: room.map_or(natural, |m| natural.min(m)),
        }
    }
}

/// The answer's tokens, reasoning first: the structured text, the echo or generated words,
/// past a continuation's prefill; a guardrail's intervention replacing them. Also the
/// reasoning tokens kept, whether the prefill was the answer's start, and the guardrail's
/// outcome.
fn answer_tokens(
    ask: &Ask,
    size: &AnswerSize,
    guardrail: Option<(
        &crate::guardrail::GuardrailSpec,
        &std::sync::Arc<crate::guardrail::GuardAsk>,
    )>,
) -> (Vec<String>, u32, Option<bool>, crate::guardrail::Outcome) {
    let n = size.answer;
    let mut tokens = match size.structured.clone() {
        Some(mut chunks) => {
            chunks.truncate(n as usize);
            chunks
        }
        None => match &ask.echo {
            Some(echo) => {
                let mut words: Vec<String> = echo.split_inclusive(' ').map(String::from).collect();
                words.truncate(n as usize);
                words
            }
            None => text::tokens(ask.prompt_digest, n),
        },
    };
    let mut continuation = None;
    if let Some(prefill) = &ask.prefill {
        let k = continued_from(&tokens, prefill);
        if let Some(k) = k {
            tokens.drain(..k);
        }
        continuation = Some(k.is_some());
    }
    let mut reasoning = size.reasoning;
    let mut guard_outcome = crate::guardrail::Outcome::default();
    if let Some((spec, g)) = guardrail {
        let (blocked, found) = crate::guardrail::check_input(spec, g);
        match blocked {
            Some(outcome) => {
                tokens = text::chunks(&spec.blocked_input_message, 6);
                reasoning = 0;
                guard_outcome = outcome;
            }
            None => {
                let (replaced, outcome) =
                    crate::guardrail::check_output(spec, g, &tokens.concat(), found);
                if let Some(text) = replaced {
                    tokens = text.split_inclusive(' ').map(String::from).collect();
                }
                guard_outcome = outcome;
            }
        }
    }
    if reasoning > 0 {
        let mut all = text::tokens(ask.prompt_digest.rotate_left(29) ^ 0x5EA5, reasoning);
        all.append(&mut tokens);
        tokens = all;
    }
    (tokens, reasoning, continuation, guard_outcome)
}

impl Engine {
    pub(crate) fn new(scenario: Scenario) -> Self {
        let faults = FaultRegistry::default();
        // A scenario's schedule is in its own time: at a time scale of 0.1, a fault from its
        // 60th second on starts 6 seconds after the emulator does. (Faults added at run time
        // are scheduled in real time.)
        let scale = |ms: Option<u64>| ms.map(|v| (v as f64 * scenario.time_scale).round() as u64);
        for f in &scenario.faults {
            faults.add(Fault {
                start_ms: scale(f.start_ms),
                end_ms: scale(f.end_ms),
                ..f.clone()
            });
        }
        let minute = Duration::from_secs(60).mul_f64(scenario.time_scale);
        Self {
            scenario,
            faults,
            cache: crate::cache::PromptCache::default(),
            counters: Mutex::default(),
            quotas: crate::quota::Quotas::new(minute),
            started: Instant::now(),
            draws: AtomicU64::new(0),
            objects: Default::default(),
            jobs: Default::default(),
        }
    }

    /// Scales a simulated duration by the scenario's time scale.
    pub(crate) fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.scenario.time_scale)
    }

    /// Decides a request: refused with an AWS error, or admitted with its answer.
    pub(crate) fn admit(&self, ask: &Ask) -> Result<Answer, ApiError> {
        let result = self.admit_inner(ask);
        let tier = result
            .as_ref()
            .map_or(ask.tier.as_str(), |a| &a.served_tier);
        let mut counters = self.counters.lock().expect("counters lock");
        let c = counters.entry(counter_key(ask, tier)).or_default();
        c.requests += 1;
        match &result {
            Ok(a) => {
                c.ok += 1;
                match a.continuation {
                    Some(true) => c.continued += 1,
                    Some(false) => c.continuation_mismatches += 1,
                    None => {}
                }
                c.input_tokens += u64::from(a.input_tokens);
                c.output_tokens += u64::from(a.output_tokens());
                c.cache_read_tokens += u64::from(a.cache.read);
                c.cache_write_tokens += u64::from(a.cache.write);
                let price = self.scenario.models.iter().find(|m| m.id == a.model);
                if let Some(price) = price.and_then(|m| m.price.as_ref()) {
                    c.billed_picodollars += crate::bill::picodollars(price.bill(
                        &ask.target,
                        &a.served_tier,
                        a.input_tokens,
                        a.output_tokens(),
                        &a.cache,
                    ));
                }
            }
            Err(e) => *c.errors.entry(e.code.clone()).or_default() += 1,
        }
        result
    }

    /// A fault on a control-plane call (the batch jobs' Create/Get/Stop): faults with
    /// `tier = "control"` match them, filtered by region and by model or operation name.
    pub(crate) fn control_refusal(
        &self,
        region: &str,
        operation: &str,
        model: &str,
    ) -> Option<ApiError> {
        let hits = self.faults.take_matching(
            &Subject {
                region,
                model,
                target: operation,
                tier: "control",
                surface: "bedrock",
            },
            self.started.elapsed(),
        );
        hits.iter().find_map(|f| refusal(Service::Bedrock, f))
    }

    /// Records that a stream was broken by a fault after it was admitted at `served_tier`.
    pub(crate) fn record_broken_stream(&self, ask: &Ask, served_tier: &str) {
        self.update_counter(ask, served_tier, |c| c.streams_broken += 1);
    }

    /// Records that a stream's client went away before its end.
    pub(crate) fn record_cancelled(&self, ask: &Ask, served_tier: &str) {
        self.update_counter(ask, served_tier, |c| c.cancelled += 1);
    }

    fn update_counter(&self, ask: &Ask, tier: &str, f: impl FnOnce(&mut Counter)) {
        let mut counters = self.counters.lock().expect("counters lock");
        if let Some(c) = counters.get_mut(&counter_key(ask, tier)) {
            f(c);
        }
    }

    /// Everything served so far.
    pub(crate) fn counters(&self) -> Vec<CounterRow> {
        self.counters
            .lock()
            .expect("counters lock")
            .iter()
            .map(
                |((service, region, target, tier, operation), counter)| CounterRow {
                    service: *service,
                    region: region.clone(),
                    target: target.clone(),
                    tier: tier.clone(),
                    operation: operation.clone(),
                    counter: counter.clone(),
                },
            )
            .collect()
    }

    /// Forgets the counters.
    pub(crate) fn reset_counters(&self) {
        self.counters.lock().expect("counters lock").clear();
    }

    fn admit_inner(&self, ask: &Ask) -> Result<Answer, ApiError> {
        // An application inference profile is served, billed and throttled as what it wraps.
        let wrapped;
        let ask = match self.application_profile(ask)? {
            Some(model) => {
                wrapped = Ask {
                    target: model,
                    ..ask.clone()
                };
                &wrapped
            }
            None => ask,
        };
        let (served, invoked_model) = self.route(ask)?;
        let guardrail = match &ask.guard {
            Some(g) if !g.identifier.is_empty() => Some((
                crate::guardrail::find(&self.scenario.guardrails, g, &ask.region)
                    .map_err(|m| ApiError::validation(ask.service, m))?,
                g,
            )),
            _ => None,
        };
        let admitted = match served {
            Served::Model(m) => check_model_request(ask, m)?,
            Served::Endpoint(_) => crate::converse_ext::Admitted::default(),
        };
        let (name, performance, answer_range) = served_as(ask, &served);
        let hits = self.faults.take_matching(
            &Subject {
                region: &ask.region,
                model: name,
                target: &ask.target,
                tier: &ask.tier,
                surface: ask.surface(),
            },
            self.started.elapsed(),
        );
        if let Some(err) = hits.iter().find_map(|f| refusal(ask.service, f)) {
            return Err(err);
        }
        let size = AnswerSize::of(ask, &admitted, answer_range);

        let (reservation, burndown, max_output) = match served {
            Served::Model(m) => (
                m.reservation.as_ref(),
                m.output_burndown,
                m.max_output_tokens,
            ),
            Served::Endpoint(_) => (None, 1, answer_range[1]),
        };
        let demand = crate::quota::Demand {
            region: &ask.region,
            target: &ask.target,
            model: name,
            tier: &ask.tier,
            performance: &performance,
            reservation,
            input_tokens: u64::from(ask.input_tokens),
            max_output_tokens: u64::from(ask.max_tokens.unwrap_or(max_output)),
            output_burndown: burndown,
            mantle: ask.mantle_quota,
        };
        let mut slot = self.quotas.admit(&demand)?;
        let served_tier = match slot.served {
            crate::quota::Served::Overflow => "default".to_string(),
            _ => ask.tier.clone(),
        };
        let cache = match served {
            Served::Model(m)
                if (m.prompt_cache || ask.cache_checked) && !ask.cache_points.is_empty() =>
            {
                self.cache.apply(
                    &ask.region,
                    &m.id,
                    &ask.cache_points,
                    m.cache_min_tokens,
                    self.scenario.time_scale,
                )
            }
            _ => crate::cache::CacheUse::default(),
        };
        let new_input = ask.input_tokens.saturating_sub(cache.read + cache.write);
        slot.settle_on(
            &demand,
            u64::from(new_input),
            u64::from(cache.write),
            u64::from(size.reasoning + size.answer),
        );
        let (ttft, break_after) = self.first_token(ask, &performance, &cache, &hits);
        let (tokens, reasoning, continuation, guard_outcome) = answer_tokens(ask, &size, guardrail);
        Ok(Answer {
            reasoning_tokens: reasoning as usize,
            reasoning_redacted: admitted.redacted,
            reasoning_signed: admitted.signed,
            response_fields: admitted.response_fields,
            guardrail: guard_outcome,
            citation: admitted.citation,
            model: name.to_string(),
            served_tier,
            tokens,
            truncated: size.answer < size.natural,
            input_tokens: new_input,
            cache,
            ttft,
            token_interval: self
                .scaled(Duration::from_secs_f64(1.0 / performance.tokens_per_second)),
            break_after,
            invoked_model,
            wire_fault: hits.iter().find(|f| f.kind.is_wire()).cloned(),
            plain_json_lines: hits.iter().any(|f| f.kind == FaultKind::PlainJsonLines),
            continuation,
            _slot: slot,
        })
    }

    /// What serves the ask in its region (a prompt router's pick, with the ARN Bedrock reports
    /// as the invoked model), or Bedrock's refusal: a region the scenario does not serve, an
    /// unknown id.
    fn route(&self, ask: &Ask) -> Result<(Served<'_>, Option<String>), ApiError> {
        if self.scenario.region(&ask.region).is_none() {
            return Err(ApiError::new(
                403,
                "UnrecognizedClientException",
                format!(
                    "The region {} is not served by this emulator scenario.",
                    ask.region
                ),
            ));
        }
        let Some(chosen) = self.prompt_router_choice(ask)? else {
            return Ok((self.resolve(ask)?, None));
        };
        let routed = Ask {
            target: chosen.clone(),
            ..ask.clone()
        };
        let served = self.resolve(&routed)?;
        let arn = if self.scenario.split_profile(&chosen).0.is_some() {
            format!(
                "arn:aws:bedrock:{}:000000000000:inference-profile/{chosen}",
                ask.region
            )
        } else {
            format!("arn:aws:bedrock:{}::foundation-model/{chosen}", ask.region)
        };
        Ok((served, Some(arn)))
    }

    /// The first token's delay: drawn from the performance, less the prefill the cache saves,
    /// plus a `slow_first_token` fault's delay; and where a `break_stream` fault breaks it.
    fn first_token(
        &self,
        ask: &Ask,
        performance: &Performance,
        cache: &crate::cache::CacheUse,
        hits: &[Fault],
    ) -> (Duration, Option<(u32, Option<String>)>) {
        let mut ttft = self.draw_ttft(performance, ask.prompt_digest);
        // Prefill is skipped for the cached share of the input.
        let cached_share = f64::from(cache.read) / f64::from(ask.input_tokens.max(1));
        ttft = ttft.mul_f64((1.0 - 0.85 * cached_share.min(1.0)).max(0.05));
        let mut break_after = None;
        for f in hits {
            match f.kind {
                FaultKind::SlowFirstToken => {
                    // Not time-scaled: a test wants exactly this delay.
                    ttft += Duration::from_millis(f.delay_ms.unwrap_or(1000));
                }
                FaultKind::BreakStream => {
                    break_after = Some((f.after_tokens.unwrap_or(0), f.exception.clone()));
                }
                _ => {}
            }
        }
        (ttft, break_after)
    }

    /// For an application inference profile's ARN: the model or system profile id it wraps;
    /// `None` for other ids.
    fn application_profile(&self, ask: &Ask) -> Result<Option<String>, ApiError> {
        let Some(rest) = ask.target.strip_prefix("arn:aws:bedrock:") else {
            return Ok(None);
        };
        let mut parts = rest.splitn(3, ':');
        let (region, resource) = match (parts.next(), parts.next(), parts.next()) {
            (Some(r), Some(_), Some(res)) => (r, res),
            _ => return Ok(None),
        };
        let Some(id) = resource.strip_prefix("application-inference-profile/") else {
            return Ok(None);
        };
        let invalid =
            || ApiError::validation(ask.service, "The provided model identifier is invalid.");
        let profile = self
            .scenario
            .application_profiles
            .iter()
            .find(|p| p.id == id && p.region == region)
            .ok_or_else(invalid)?;
        if region != ask.region {
            return Err(invalid());
        }
        Ok(Some(profile.model.clone()))
    }

    /// For a prompt-router ARN: the model id it picks for this prompt; `None` for other ids.
    fn prompt_router_choice(&self, ask: &Ask) -> Result<Option<String>, ApiError> {
        let Some(rest) = ask.target.strip_prefix("arn:aws:bedrock:") else {
            return Ok(None);
        };
        let invalid = |why: &str| {
            ApiError::validation(
                ask.service,
                format!("The provided model identifier is invalid: {why}."),
            )
        };
        // {region}:{account}:{resource}
        let mut parts = rest.splitn(3, ':');
        let (region, _account, resource) = match (parts.next(), parts.next(), parts.next()) {
            (Some(r), Some(a), Some(res)) => (r, a, res),
            _ => return Err(invalid("malformed ARN")),
        };
        let Some(name) = resource
            .strip_prefix("default-prompt-router/")
            .or_else(|| resource.strip_prefix("prompt-router/"))
        else {
            return Err(invalid("not a prompt router ARN"));
        };
        if region != ask.region {
            return Err(invalid(
                "the ARN's region is not the region the request was sent to",
            ));
        }
        let router = self
            .scenario
            .prompt_routers
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| invalid("no such prompt router"))?;
        let strong = (ask.prompt_digest % 10_000) as f64 / 10_000.0 < router.strong_share;
        Ok(Some(router.models[usize::from(strong)].clone()))
    }

    fn resolve(&self, ask: &Ask) -> Result<Served<'_>, ApiError> {
        match ask.service {
            Service::Sagemaker => self
                .scenario
                .endpoints
                .iter()
                .find(|e| e.name == ask.target && e.region == ask.region)
                .map(Served::Endpoint)
                .ok_or_else(|| {
                    ApiError::validation(
                        ask.service,
                        format!("Endpoint {} of account 000000000000 not found.", ask.target),
                    )
                }),
            Service::Bedrock => {
                let invalid = || {
                    ApiError::validation(ask.service, "The provided model identifier is invalid.")
                };
                let region = self.scenario.region(&ask.region).ok_or_else(invalid)?;
                let (prefix, bare) = self.scenario.split_profile(&ask.target);
                let model = self
                    .scenario
                    .models
                    .iter()
                    .find(|m| m.id == bare && m.regions.contains(&ask.region))
                    .ok_or_else(invalid)?;
                match prefix {
                    // Batch jobs name the base model: only on-demand calls need the profile;
                    // bedrock-mantle serves bare ids only.
                    None if !model.serves_bare_in(&ask.region)
                        && ask.tier != "batch"
                        && ask.mantle_quota.is_none() =>
                    {
                        Err(ApiError::validation(
                            ask.service,
                            format!(
                                "Invocation of model ID {} with on-demand throughput isn't supported. \
                             Retry your request with the ID or ARN of an inference profile that contains this model.",
                                model.id
                            ),
                        ))
                    }
                    None => Ok(Served::Model(model)),
                    Some(p)
                        if model.profiles.iter().any(|x| x == p)
                            && (p == "global" || region.all_geographies().any(|g| g == p)) =>
                    {
                        Ok(Served::Model(model))
                    }
                    Some(_) => Err(invalid()),
                }
            }
        }
    }

    fn draw_ttft(&self, perf: &Performance, prompt_digest: u64) -> Duration {
        let draw = self.draws.fetch_add(1, Ordering::Relaxed);
        let mut rng =
            ChaCha8Rng::seed_from_u64(self.scenario.seed ^ prompt_digest.rotate_left(17) ^ draw);
        if perf.ttft_quantiles.len() >= 2 {
            let ms = from_quantiles(&perf.ttft_quantiles, rand::Rng::r#gen::<f64>(&mut rng));
            return self.scaled(Duration::from_secs_f64(ms / 1000.0));
        }
        let median = perf.ttft_median_ms.max(0.001);
        // p99 of a log-normal is median * exp(2.326 sigma).
        let sigma = ((perf.ttft_p99_ms.max(median) / median).ln() / 2.326).max(1e-6);
        let ms = LogNormal::new(median.ln(), sigma)
            .map(|d| d.sample(&mut rng))
            .unwrap_or(median);
        self.scaled(Duration::from_secs_f64(ms / 1000.0))
    }
}

/// The value at quantile `u` of an empirical table of `[quantile, value]` rows (rising from 0
/// to 1): linear between the rows around it.
fn from_quantiles(table: &[[f64; 2]], u: f64) -> f64 {
    let i = table
        .partition_point(|r| r[0] < u)
        .clamp(1, table.len() - 1);
    let ([q0, v0], [q1, v1]) = (table[i - 1], table[i]);
    if q1 > q0 {
        v0 + (v1 - v0) * ((u - q0) / (q1 - q0)).clamp(0.0, 1.0)
    } else {
        v1
    }
}

/// How many of `tokens` a prefill holds, when it is exactly their start (the client trims
/// white space at its end, as Bedrock requires).
fn continued_from(tokens: &[String], prefill: &str) -> Option<usize> {
    let mut text = String::new();
    if prefill.is_empty() {
        return Some(0);
    }
    for (k, t) in tokens.iter().enumerate() {
        text.push_str(t);
        if text.trim_end() == prefill {
            return Some(k + 1);
        }
        if text.len() > prefill.len() + t.len() {
            return None;
        }
    }
    None
}

fn refusal(service: Service, fault: &Fault) -> Option<ApiError> {
    let (status, bedrock, sagemaker, message) = match fault.kind {
        FaultKind::Outage => (
            503,
            "ServiceUnavailableException",
            "ServiceUnavailable",
            "Service is unavailable. Try again later.",
        ),
        FaultKind::Throttle => (
            429,
            "ThrottlingException",
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        FaultKind::ModelNotReady => (
            429,
            "ModelNotReadyException",
            "ModelNotReadyException",
            "Model is not ready for inference. Try again later.",
        ),
        FaultKind::InternalError => (
            500,
            "InternalServerException",
            "InternalFailure",
            "An internal server error occurred. Retry your request.",
        ),
        FaultKind::AccessDenied => (
            403,
            "AccessDeniedException",
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        FaultKind::ExpiredToken => (
            403,
            "ExpiredTokenException",
            "ExpiredTokenException",
            "The security token included in the request is expired",
        ),
        FaultKind::RegionNotEnabled => (
            403,
            "UnrecognizedClientException",
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ),
        FaultKind::HtmlError => return Some(ApiError::html_bad_gateway()),
        FaultKind::RetryAfter => {
            let mut e = ApiError::new(
                429,
                "ThrottlingException",
                "Too many requests, please wait before trying again.",
            );
            e.retry_after = Some(fault.retry_after.clone().unwrap_or_else(|| "1".into()));
            return Some(e);
        }
        FaultKind::ContainerOverloaded => {
            if service != Service::Sagemaker {
                return None;
            }
            let original = fault.status.unwrap_or(503);
            let original_message = if original == 429 {
                "Too Many Requests: the model server is overloaded"
            } else {
                "Service Unavailable: the model server is overloaded"
            };
            let mut e = ApiError::new(
                424,
                "ModelError",
                format!(
                    "Received server error ({original}) from primary with message \"{original_message}\". See https://us-east-1.console.aws.amazon.com/cloudwatch/home for more information."
                ),
            );
            e.original = Some((original, original_message.to_string()));
            return Some(e);
        }
        FaultKind::BreakStream
        | FaultKind::SlowFirstToken
        | FaultKind::PlainJsonLines
        | FaultKind::Stall
        | FaultKind::StallAfterHeaders
        | FaultKind::StallMidStream
        | FaultKind::Trickle
        | FaultKind::Reset
        | FaultKind::Truncate
        | FaultKind::MalformedJson
        | FaultKind::BadFrame => return None,
    };
    let code = match service {
        Service::Bedrock => bedrock,
        Service::Sagemaker => sagemaker,
    };
    Some(ApiError::new(status, code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        Engine::new(Scenario::builtin("fast").unwrap())
    }

    fn ask(target: &str, region: &str, tier: &str) -> Ask {
        Ask {
            service: Service::Bedrock,
            operation: "Converse",
            region: region.into(),
            target: target.into(),
            tier: tier.into(),
            input_tokens: 10,
            max_tokens: Some(20),
            prompt_digest: 42,
            cache_points: Vec::new(),
            cache_checked: false,
            prefill: None,
            extras: None,
            guard: None,
            echo: None,
            latency_optimized: false,
            mantle_quota: None,
        }
    }

    #[test]
    fn bare_ids_profiles_and_geographies() {
        let e = engine();
        assert!(
            e.admit(&ask("amazon.nova-lite-v1:0", "us-east-1", "default"))
                .is_ok()
        );
        assert!(
            e.admit(&ask("us.amazon.nova-lite-v1:0", "us-west-2", "default"))
                .is_ok()
        );
        assert!(
            e.admit(&ask("eu.amazon.nova-lite-v1:0", "us-east-1", "default"))
                .is_err()
        );
        assert!(
            e.admit(&ask(
                "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "eu-west-1",
                "default"
            ))
            .is_ok()
        );
        let err = e
            .admit(&ask(
                "anthropic.claude-sonnet-4-5-20250929-v1:0",
                "us-east-1",
                "default",
            ))
            .unwrap_err();
        assert_eq!(err.code, "ValidationException");
    }

    #[test]
    fn unsupported_tier_is_a_400() {
        let err = engine()
            .admit(&ask("amazon.nova-micro-v1:0", "us-east-1", "priority"))
            .unwrap_err();
        assert_eq!(
            (err.status, err.code.as_str()),
            (400, "ValidationException")
        );
    }

    #[test]
    fn max_tokens_cuts_the_answer() {
        let a = engine()
            .admit(&ask("amazon.nova-lite-v1:0", "us-east-1", "default"))
            .unwrap();
        assert_eq!(a.tokens.len(), 20);
        assert!(a.truncated);
    }

    #[test]
    fn concurrency_beyond_capacity_is_throttled_and_slots_are_released() {
        let e = engine();
        let limit = e.scenario.endpoints[0].performance.max_concurrency;
        let mut a = ask("laneway-demo-llm", "us-east-1", "default");
        a.service = Service::Sagemaker;
        let held: Vec<_> = (0..limit).map(|_| e.admit(&a).unwrap()).collect();
        assert_eq!(e.admit(&a).unwrap_err().code, "ThrottlingException");
        drop(held);
        assert!(e.admit(&a).is_ok());
    }

    #[test]
    fn latency_optimized_answers_start_sooner_and_run_faster() {
        let e = engine();
        let mut standard = ask("amazon.nova-pro-v1:0", "us-east-1", "default");
        standard.max_tokens = Some(5);
        let optimized = Ask {
            latency_optimized: true,
            ..standard.clone()
        };
        let total = |a: &Ask| -> (Duration, Duration) {
            (0..200)
                .map(|_| e.admit(a).unwrap())
                .fold((Duration::ZERO, Duration::ZERO), |(t, i), ans| {
                    (t + ans.ttft, i + ans.token_interval)
                })
        };
        let (ttft_std, interval_std) = total(&standard);
        let (ttft_opt, interval_opt) = total(&optimized);
        // The scenario's factors: 0.6 on TTFT, 1.4 on tokens per second.
        let ratio = ttft_opt.as_secs_f64() / ttft_std.as_secs_f64();
        assert!((0.45..0.8).contains(&ratio), "TTFT ratio {ratio}");
        assert!(interval_opt < interval_std);
        let micro = ask("amazon.nova-micro-v1:0", "us-east-1", "default");
        let err = e
            .admit(&Ask {
                latency_optimized: true,
                ..micro
            })
            .unwrap_err();
        assert_eq!(err.status, 400);
    }

    #[test]
    fn faults_refuse_and_are_counted() {
        let e = engine();
        e.faults.add(
            Fault::new(FaultKind::Outage)
                .for_region("us-east-1")
                .times(1),
        );
        let a = ask("amazon.nova-lite-v1:0", "us-east-1", "default");
        assert_eq!(e.admit(&a).unwrap_err().code, "ServiceUnavailableException");
        assert!(e.admit(&a).is_ok());
        let rows = e.counters();
        assert_eq!(rows[0].counter.requests, 2);
        assert_eq!(rows[0].counter.errors["ServiceUnavailableException"], 1);
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    #[test]
    fn checkpoints_to_a_model_without_caching_are_a_400() {
        let mut scenario = Scenario::builtin("fast").unwrap();
        scenario.models[0].prompt_cache = false;
        let model = scenario.models[0].id.clone();
        let e = Engine::new(scenario);
        let body = serde_json::json!({ "system": [{ "text": "x" }, { "cachePoint": { "type": "default" } }] });
        let ask = Ask {
            service: Service::Bedrock,
            operation: "Converse",
            region: "us-east-1".into(),
            target: model,
            tier: "default".into(),
            input_tokens: 10,
            max_tokens: Some(5),
            prompt_digest: 1,
            cache_points: crate::cache::cache_points(&body),
            cache_checked: false,
            prefill: None,
            extras: None,
            guard: None,
            echo: None,
            latency_optimized: false,
            mantle_quota: None,
        };
        let err = e.admit(&ask).unwrap_err();
        assert_eq!(
            (err.status, err.code.as_str()),
            (400, "ValidationException")
        );
    }
}
