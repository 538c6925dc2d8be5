//! Scenario files: what the emulator serves, how fast, with what capacity and which faults.
//!
//! A scenario is TOML. Every field has a default, so a scenario names only what it changes.
//! The built-in scenarios live in `emulator/scenarios/` and are embedded in the binary.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use crate::faults::Fault;

/// A whole emulated world: credentials, regions, Bedrock models, SageMaker endpoints, faults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random draw (TTFT, text), so that a run is reproducible.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Multiplies every simulated delay: 1.0 is real time, 0.01 is a hundred times faster.
    #[serde(default = "one")]
    pub time_scale: f64,
    /// Access keys accepted, with their secrets; requests signed otherwise get a 403.
    #[serde(default = "default_credentials")]
    pub credentials: Vec<Credential>,
    /// Regions served, with the geographies whose profiles they serve.
    pub regions: Vec<RegionSpec>,
    /// Bedrock foundation models.
    #[serde(default)]
    pub models: Vec<ModelSpec>,
    /// SageMaker real-time endpoints.
    #[serde(default)]
    pub endpoints: Vec<EndpointSpec>,
    /// Faults active from the start or on a schedule.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Bedrock Intelligent Prompt Routing: routers invoked by their ARN as the model id.
    #[serde(default)]
    pub prompt_routers: Vec<PromptRouterSpec>,
    /// Application inference profiles, invoked by their ARN
    /// (`arn:aws:bedrock:{region}:{account}:application-inference-profile/{id}`) as the model id.
    #[serde(default)]
    pub application_profiles: Vec<ApplicationProfileSpec>,
    /// Bedrock guardrails, by id: words they block and PII they block or mask.
    #[serde(default)]
    pub guardrails: Vec<crate::guardrail::GuardrailSpec>,
}

/// An application inference profile: served, billed and throttled as the model or system
/// profile it wraps, in its region.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationProfileSpec {
    /// The id at the end of its ARN.
    pub id: String,
    /// The region it exists in; a request signed for another region is refused.
    pub region: String,
    /// What it wraps: a bare model id or a system profile id (`us.…`, `global.…`).
    pub model: String,
}

/// A prompt router: `arn:aws:bedrock:{region}:{account}:default-prompt-router/{name}` picks one
/// of two models per prompt.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRouterSpec {
    /// The router's name in its ARN, e.g. `anthropic.claude:1`.
    pub name: String,
    /// The cheaper and the stronger model (bare or profile ids of scenario models).
    pub models: [String; 2],
    /// The share of prompts (by a hash of the prompt) sent to the stronger model.
    #[serde(default = "half")]
    pub strong_share: f64,
}

fn half() -> f64 {
    0.5
}

/// An access key the emulator accepts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The access key id requests are signed with.
    pub access_key_id: String,
    /// Its secret, which SigV4 signatures are checked with.
    pub secret_access_key: String,
}

/// A model on Bedrock's OpenAI-compatible APIs: which APIs (`chat_completions`, `responses`)
/// bedrock-runtime's `/openai/v1` serves it by, and which bedrock-mantle does, under which id and
/// path prefix (`v1` or `openai/v1`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiSpec {
    #[serde(default)]
    pub runtime: Vec<String>,
    #[serde(default)]
    pub mantle: Vec<String>,
    /// Its id on bedrock-mantle (no `-1:0` suffix, never a profile), when mantle serves it.
    #[serde(default)]
    pub mantle_id: Option<String>,
    #[serde(default = "default_mantle_prefix")]
    pub mantle_prefix: String,
    /// The regions whose bedrock-mantle serves it; absent, the model's regions.
    #[serde(default)]
    pub mantle_regions: Option<Vec<String>>,
    /// bedrock-mantle's quota pool for it per region, input and output tokens per minute
    /// counted apart (no requests per minute, cache reads free); absent, the model's
    /// `tokens_per_minute` for each.
    #[serde(default)]
    pub mantle_quota: Option<ReservationSpec>,
    /// The endpoints (`runtime`, `mantle`) whose Responses API caches the model's prompts:
    /// implicitly by default, at the caller's breakpoints in explicit mode (GPT-5.6 and
    /// later). Elsewhere a body that asks for caching is refused.
    #[serde(default)]
    pub prompt_cache: Vec<String>,
}

impl OpenAiSpec {
    /// Whether bedrock-mantle in `region` serves the model (of `regions`).
    pub fn mantle_serves_in(&self, region: &str, regions: &[String]) -> bool {
        self.mantle_regions
            .as_deref()
            .unwrap_or(regions)
            .iter()
            .any(|r| r == region)
    }
}

fn default_mantle_prefix() -> String {
    "v1".into()
}

/// One region.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    /// The region's name, e.g. `us-east-1`.
    pub name: String,
    /// The geography whose profiles (`us.`, `jp.`, ...) this region serves.
    #[serde(default)]
    pub geography: Option<String>,
    /// More geographies it serves the profiles of (Tokyo: `jp` and `apac`).
    #[serde(default)]
    pub geographies: Vec<String>,
}

impl RegionSpec {
    /// Every geography whose profiles this region serves.
    pub fn all_geographies(&self) -> impl Iterator<Item = &str> {
        self.geography
            .iter()
            .chain(&self.geographies)
            .map(String::as_str)
    }
}

/// A Bedrock model and where and how it is served.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The bare model id, e.g. `amazon.nova-lite-v1:0`.
    pub id: String,
    /// Its prices as its model card lists them: each admitted call is billed at them
    /// ([`Counter::billed_usd`](crate::Counter::billed_usd)); unset, its calls are not billed.
    #[serde(default)]
    pub price: Option<crate::PriceSpec>,
    /// Regions where the model is served (bare id and profiles alike).
    pub regions: Vec<String>,
    /// Inference profile prefixes that exist for it: `global` or a region's geography (`us`,
    /// `eu`, `apac`, `jp`, ...).
    #[serde(default)]
    pub profiles: Vec<String>,
    /// When true the bare id is refused on demand (as for newer Claude models).
    #[serde(default)]
    pub profile_only: bool,
    /// The regions whose on-demand calls take the bare id; absent, all of `regions` (unless
    /// `profile_only`).
    #[serde(default)]
    pub in_region: Option<Vec<String>>,
    /// Service tiers accepted, as the wire spells them: `default`, `priority`, `flex`,
    /// `reserved`, `ultrafast` or any other; a request for a tier not listed is refused as
    /// Bedrock refuses it.
    #[serde(default = "default_tiers")]
    pub tiers: BTreeSet<String>,
    /// Whether `cachePoint` blocks are accepted.
    #[serde(default)]
    pub prompt_cache: bool,
    /// Tokens needed before a checkpoint for it to cache anything.
    #[serde(default = "default_cache_min_tokens")]
    pub cache_min_tokens: u32,
    /// Whether a checkpoint may sit in `toolConfig.tools` (Nova: no).
    #[serde(default = "yes")]
    pub cache_tools: bool,
    /// Whether a checkpoint may sit in a message carrying a `toolResult` (Nova: no).
    #[serde(default = "yes")]
    pub cache_after_tool_result: bool,
    /// Checkpoint TTLs accepted (`1h` only for Claude Haiku, Sonnet and Opus 4.5).
    #[serde(default = "default_cache_ttls")]
    pub cache_ttls: BTreeSet<String>,
    /// Most checkpoints a request may carry.
    #[serde(default = "default_max_cache_points")]
    pub max_cache_points: usize,
    /// Length of a natural answer in tokens, before `maxTokens` cuts it: `[min, max]`.
    #[serde(default = "default_answer_tokens")]
    pub answer_tokens: [u32; 2],
    /// Speed and capacity for every tier and region, unless an override says otherwise.
    #[serde(default)]
    pub performance: Performance,
    /// Per (region, tier) changes to `performance`.
    #[serde(default)]
    pub overrides: Vec<PerformanceOverride>,
    /// Reserved capacity for the `reserved` tier, per region and id; above it requests overflow
    /// to the on-demand tier and are answered `serviceTier: default`. Unset, a model that lists
    /// `reserved` serves it with its ordinary limits.
    #[serde(default)]
    pub reservation: Option<ReservationSpec>,
    /// Quota tokens one output token costs: 5 for the Claude 4 family (Sonnet 4, Opus 4 and
    /// later), 1 otherwise.
    #[serde(default = "one_u64")]
    pub output_burndown: u64,
    /// The model's largest answer: what admission counts for a request without `maxTokens`.
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// Latency-optimized inference (`performanceConfig.latency = optimized`): how it changes
    /// TTFT and speed. Unset, asking for it is a 400.
    #[serde(default)]
    pub latency_optimized: Option<LatencyOptimized>,
    /// How it reasons: Claude's `thinking` (`anthropic`, budget only), Claude 4.6's adaptive
    /// thinking as well (`anthropic_adaptive`), Nova 2's `reasoningConfig` (`nova`, its text
    /// answered as `[REDACTED]`), an effort word in `reasoning_effort` (`field`, gpt-oss, which
    /// always reasons), always (`always`, DeepSeek-R1). Unset, reasoning fields are a 400.
    #[serde(default)]
    pub reasoning: Option<ReasoningStyle>,
    /// Whether `outputConfig.textFormat` and strict tools are accepted.
    #[serde(default)]
    pub structured_output: bool,
    /// Where Bedrock's OpenAI-compatible APIs serve it; absent, they do not.
    #[serde(default)]
    pub openai: Option<OpenAiSpec>,
    /// Whether Converse (and InvokeModel) serve it; OpenAI's GPT-5.4 and 5.5 are served only on
    /// bedrock-mantle.
    #[serde(default = "yes")]
    pub converse: bool,
    /// Whether it refuses `temperature` and `top_p` (it samples as it chooses: Claude Opus 4.7).
    #[serde(default)]
    pub refuses_sampling: bool,
}

/// How a model reasons, and how its request asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningStyle {
    /// Claude's `thinking`, with a token budget only.
    Anthropic,
    /// Claude 4.6's `thinking`: adaptive as well as with a token budget.
    AnthropicAdaptive,
    /// Nova 2's `reasoningConfig`; the reasoning text is answered as `[REDACTED]`.
    Nova,
    /// The effort word in `reasoning_effort` (gpt-oss); it reasons at `medium` without it.
    Field,
    /// Always reasons (DeepSeek-R1); takes no reasoning fields.
    Always,
    /// OpenAI's GPT-5.x: `reasoning = { effort }` (none to max) on Converse, `reasoning.effort`
    /// or `reasoning_effort` on the OpenAI-compatible APIs; no reasoning without it.
    #[serde(rename = "openai")]
    OpenAi,
}

/// A reservation: input and output tokens per minute, counted apart.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationSpec {
    /// Input tokens per minute (of scenario time).
    pub input_tokens_per_minute: u64,
    /// Output tokens per minute (of scenario time).
    pub output_tokens_per_minute: u64,
}

/// What latency-optimized inference does to a model's speed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyOptimized {
    /// Multiplies time to first token (below 1: faster).
    pub ttft_factor: f64,
    /// Multiplies output tokens per second (above 1: faster).
    pub tokens_per_second_factor: f64,
}

/// A SageMaker endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// The endpoint's name, as requests address it.
    pub name: String,
    /// The region it is served in.
    pub region: String,
    /// The container's payload format.
    pub format: PayloadFormat,
    /// Inference components hosted on the endpoint; when non-empty the header is required.
    #[serde(default)]
    pub inference_components: Vec<String>,
    /// Length of a natural answer in tokens, before the request's maximum cuts it: `[min, max]`.
    #[serde(default = "default_answer_tokens")]
    pub answer_tokens: [u32; 2],
    /// Its speed and capacity.
    #[serde(default)]
    pub performance: Performance,
    /// Whether the endpoint serves InvokeEndpointWithResponseStream. `false`: as a server
    /// without the operation (a container without response streaming behind a proxy, moto),
    /// it answers 404 with an HTML page and no AWS error code; InvokeEndpoint works.
    #[serde(default = "streams_by_default")]
    pub streams: bool,
}

fn streams_by_default() -> bool {
    true
}

/// What a SageMaker container speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadFormat {
    /// Hugging Face Text Generation Inference: `inputs` / `parameters`, `data:` token lines.
    Tgi,
    /// OpenAI-compatible chat completions (vLLM, LMI, TGI Messages API).
    OpenaiChat,
}

/// Speed and capacity of one (region, model, tier).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Performance {
    /// Median time to first token, milliseconds.
    pub ttft_median_ms: f64,
    /// 99th percentile time to first token, milliseconds (a log-normal is fitted to both).
    pub ttft_p99_ms: f64,
    /// An empirical distribution of the time to first token instead of the log-normal:
    /// `[quantile, milliseconds]` pairs, quantiles rising from 0 to 1, drawn from by
    /// interpolating between them (what `laneway twin fit` writes where a log-normal does not
    /// fit). Empty: the log-normal of the median and p99.
    pub ttft_quantiles: Vec<[f64; 2]>,
    /// Output tokens per second once generation starts.
    pub tokens_per_second: f64,
    /// Requests served at once; one more is throttled.
    pub max_concurrency: u32,
    /// Quota: requests per minute (of scenario time); beyond it requests are throttled.
    pub requests_per_minute: u64,
    /// Quota: tokens per minute (of scenario time), counted as Bedrock counts them (see
    /// `quota`); beyond it requests are throttled with "Too many tokens".
    pub tokens_per_minute: u64,
}

impl Default for Performance {
    fn default() -> Self {
        Self {
            ttft_median_ms: 300.0,
            ttft_p99_ms: 900.0,
            ttft_quantiles: Vec::new(),
            tokens_per_second: 120.0,
            max_concurrency: 64,
            requests_per_minute: 1_000_000,
            tokens_per_minute: 2_000_000,
        }
    }
}

/// Changes to a model's performance in one region and/or tier.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerformanceOverride {
    /// Only in this region; unset: every region.
    pub region: Option<String>,
    /// Only at this tier (`default`, `priority`, `flex`, `reserved`); unset: every tier.
    pub tier: Option<String>,
    /// Only for requests naming this id (an inference profile's, say `us.amazon.nova-lite-v1:0`,
    /// or the bare id); unset: every id of the model.
    #[serde(default)]
    pub target: Option<String>,
    /// Median time to first token, milliseconds; unset: unchanged.
    pub ttft_median_ms: Option<f64>,
    /// 99th percentile time to first token, milliseconds; unset: unchanged.
    pub ttft_p99_ms: Option<f64>,
    /// An empirical first-token distribution (see [`Performance::ttft_quantiles`]); unset:
    /// unchanged.
    #[serde(default)]
    pub ttft_quantiles: Option<Vec<[f64; 2]>>,
    /// Output tokens per second once generation starts; unset: unchanged.
    pub tokens_per_second: Option<f64>,
    /// Requests served at once; unset: unchanged.
    pub max_concurrency: Option<u32>,
    /// Quota: requests per minute (of scenario time); unset: unchanged.
    pub requests_per_minute: Option<u64>,
    /// Quota: tokens per minute (of scenario time); unset: unchanged.
    pub tokens_per_minute: Option<u64>,
}

/// Errors reading a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario file could not be read.
    #[error("cannot read scenario file {path}: {source}")]
    Io {
        /// The path, as given.
        path: String,
        /// Why reading it failed.
        source: std::io::Error,
    },
    /// The text is not TOML, or not a scenario's (an unknown key, a wrong type).
    #[error("scenario is not valid TOML for the emulator: {0}")]
    Parse(#[from] toml::de::Error),
    /// The scenario parsed but does not hold together (an unknown region, a bad range, ...).
    #[error("invalid scenario: {0}")]
    Invalid(String),
    /// No built-in scenario has this name: the name asked for, and the built-ins' names.
    #[error("no built-in scenario named {0:?} (built-ins: {1})")]
    UnknownBuiltin(String, String),
}

const STARTUP: &str = include_str!("../scenarios/startup.toml");

/// Built-in scenarios: name, TOML text, time scale applied on top.
const BUILTINS: &[(&str, &str, Option<f64>)] =
    &[("startup", STARTUP, None), ("fast", STARTUP, Some(0.01))];

/// The TOML text of a built-in scenario (its time scale aside), by name.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, text, _)| *text)
}

impl Scenario {
    /// Parses a scenario from TOML text and validates it.
    ///
    /// ```
    /// let s = laneway_emulator::Scenario::from_toml(r#"
    ///     [[regions]]
    ///     name = "us-east-1"
    ///     geography = "us"
    /// "#).unwrap();
    /// assert_eq!(s.regions.len(), 1);
    /// ```
    pub fn from_toml(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// A built-in scenario by name: `startup` (the demo's world, real-time speeds) or `fast`
    /// (the same world, a hundred times faster, for tests).
    pub fn builtin(name: &str) -> Result<Self, ScenarioError> {
        let (_, text, time_scale) =
            BUILTINS
                .iter()
                .find(|(n, _, _)| *n == name)
                .ok_or_else(|| {
                    let names: Vec<_> = BUILTINS.iter().map(|(n, _, _)| *n).collect();
                    ScenarioError::UnknownBuiltin(name.to_string(), names.join(", "))
                })?;
        let mut scenario = Self::from_toml(text)?;
        if let Some(scale) = time_scale {
            scenario.time_scale = *scale;
        }
        Ok(scenario)
    }

    /// A built-in name, or else a path to a TOML file.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if BUILTINS.iter().any(|(n, _, _)| *n == name_or_path) {
            return Self::builtin(name_or_path);
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: name_or_path.to_string(),
            source,
        })?;
        Self::from_toml(&text)
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        let invalid = |m: String| Err(ScenarioError::Invalid(m));
        if !(self.time_scale > 0.0 && self.time_scale.is_finite()) {
            return invalid(format!("time_scale must be > 0, got {}", self.time_scale));
        }
        if self.regions.is_empty() {
            return invalid("at least one region is needed".into());
        }
        if let Some(f) = self
            .faults
            .iter()
            .find(|f| f.probability.is_some_and(|p| !(0.0..=1.0).contains(&p)))
        {
            return invalid(format!(
                "a fault's probability must be within 0 and 1, got {:?} ({:?})",
                f.probability, f.kind
            ));
        }
        for r in &self.regions {
            let well_formed = |g: &str| {
                !g.is_empty()
                    && g != "global"
                    && g.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            };
            if let Some(g) = r.all_geographies().find(|g| !well_formed(g)) {
                return invalid(format!(
                    "regions.{}: {g:?} is not a geography name (lowercase letters, digits and hyphens; not `global`)",
                    r.name
                ));
            }
        }
        let known_region = |r: &str| self.regions.iter().any(|x| x.name == r);
        for m in &self.models {
            for r in &m.regions {
                if !known_region(r) {
                    return invalid(format!("models.{}: unknown region {r:?}", m.id));
                }
            }
            for p in &m.profiles {
                if !self.is_profile_prefix(p) {
                    return invalid(format!(
                        "models.{}: unknown profile prefix {p:?} (`global` or a region's geography)",
                        m.id
                    ));
                }
            }
            if let Some(r) = m
                .in_region
                .iter()
                .flatten()
                .find(|r| !m.regions.contains(r))
            {
                return invalid(format!(
                    "models.{}: in_region names {r:?}, which is not among its regions",
                    m.id
                ));
            }
            // A tier is any name the service spells (`default`, `priority`, `flex`,
            // `reserved`, `ultrafast`, or a later one), as the wire carries it.
            for t in &m.tiers {
                let well_formed = t.starts_with(|c: char| c.is_ascii_lowercase())
                    && t.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                if !well_formed || t == "batch" {
                    return invalid(format!("models.{}: tier {t:?} is not a tier's name", m.id));
                }
            }
            if m.answer_tokens[0] == 0 || m.answer_tokens[0] > m.answer_tokens[1] {
                return invalid(format!(
                    "models.{}: answer_tokens must be 1 <= min <= max",
                    m.id
                ));
            }
            m.performance.validate(&m.id)?;
            if let Some(o) = m
                .overrides
                .iter()
                .find(|o| !o.ttft_quantiles.as_deref().is_none_or(quantiles_valid))
            {
                return invalid(format!(
                    "models.{}: an override's ttft_quantiles must rise from quantile 0 to 1 over milliseconds >= 0, got {:?}",
                    m.id, o.ttft_quantiles
                ));
            }
            if let Some(Err(m)) = m
                .price
                .as_ref()
                .map(|p| p.validate(&format!("models.{}", m.id)))
            {
                return invalid(m);
            }
            if m.output_burndown == 0 || m.max_output_tokens == 0 {
                return invalid(format!(
                    "models.{}: output_burndown and max_output_tokens must be >= 1",
                    m.id
                ));
            }
            if m.reservation.is_some() && !m.tiers.contains("reserved") {
                return invalid(format!(
                    "models.{}: a reservation needs \"reserved\" among the tiers",
                    m.id
                ));
            }
            if let Some(l) = &m.latency_optimized
                && !(l.ttft_factor > 0.0 && l.tokens_per_second_factor > 0.0)
            {
                return invalid(format!(
                    "models.{}: latency_optimized factors must be > 0",
                    m.id
                ));
            }
        }
        for r in &self.prompt_routers {
            for id in &r.models {
                let (_, bare) = self.split_profile(id);
                if !self.models.iter().any(|m| m.id == bare) {
                    return invalid(format!("prompt_routers.{}: unknown model {id:?}", r.name));
                }
            }
            if !(0.0..=1.0).contains(&r.strong_share) {
                return invalid(format!(
                    "prompt_routers.{}: strong_share must be in 0..=1",
                    r.name
                ));
            }
        }
        for a in &self.application_profiles {
            if !known_region(&a.region) {
                return invalid(format!(
                    "application_profiles.{}: unknown region {:?}",
                    a.id, a.region
                ));
            }
            let (_, bare) = self.split_profile(&a.model);
            if !self.models.iter().any(|m| m.id == bare) {
                return invalid(format!(
                    "application_profiles.{}: unknown model {:?}",
                    a.id, a.model
                ));
            }
        }
        for e in &self.endpoints {
            if !known_region(&e.region) {
                return invalid(format!(
                    "endpoints.{}: unknown region {:?}",
                    e.name, e.region
                ));
            }
            e.performance.validate(&e.name)?;
        }
        Ok(())
    }

    /// The region of this name, if the scenario serves it.
    pub fn region(&self, name: &str) -> Option<&RegionSpec> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// Whether `prefix` starts a profile id here: `global`, or a geography of a region.
    pub fn is_profile_prefix(&self, prefix: &str) -> bool {
        prefix == "global"
            || self
                .regions
                .iter()
                .any(|r| r.all_geographies().any(|g| g == prefix))
    }

    /// A model or profile id as its profile prefix (if any) and bare model id.
    pub fn split_profile<'a>(&self, id: &'a str) -> (Option<&'a str>, &'a str) {
        match id.split_once('.') {
            Some((p, rest)) if self.is_profile_prefix(p) => (Some(p), rest),
            _ => (None, id),
        }
    }
}

impl Performance {
    fn validate(&self, owner: &str) -> Result<(), ScenarioError> {
        let ok = self.ttft_median_ms >= 0.0
            && self.ttft_p99_ms >= self.ttft_median_ms
            && self.tokens_per_second > 0.0
            && self.max_concurrency > 0
            && self.requests_per_minute > 0
            && self.tokens_per_minute > 0
            && quantiles_valid(&self.ttft_quantiles);
        if ok {
            Ok(())
        } else {
            Err(ScenarioError::Invalid(format!(
                "{owner}: performance needs 0 <= ttft_median_ms <= ttft_p99_ms, ttft_quantiles rising \
                 from quantile 0 to 1 over milliseconds >= 0, tokens_per_second > 0, \
                 max_concurrency > 0, requests_per_minute > 0 and tokens_per_minute > 0; got {self:?}"
            )))
        }
    }
}

/// A quantile table rises in both columns, from quantile 0 to 1, over times of at least 0 ms.
fn quantiles_valid(table: &[[f64; 2]]) -> bool {
    table.is_empty()
        || (table.len() >= 2
            && table[0][0] == 0.0
            && table[table.len() - 1][0] == 1.0
            && table
                .iter()
                .all(|[q, ms]| q.is_finite() && ms.is_finite() && *ms >= 0.0)
            && table
                .windows(2)
                .all(|w| w[1][0] > w[0][0] && w[1][1] >= w[0][1]))
}

impl ModelSpec {
    /// Whether an on-demand call in `region` may name the bare id.
    pub fn serves_bare_in(&self, region: &str) -> bool {
        !self.profile_only
            && self
                .in_region
                .as_ref()
                .is_none_or(|r| r.iter().any(|r| r == region))
    }

    /// The performance in force for a region, tier and the id a request named, overrides
    /// applied in order.
    pub fn performance_for(&self, region: &str, tier: &str, target: &str) -> Performance {
        let mut p = self.performance.clone();
        for o in &self.overrides {
            let region_ok = o.region.as_deref().is_none_or(|r| r == region);
            let tier_ok = o.tier.as_deref().is_none_or(|t| t == tier);
            let target_ok = o.target.as_deref().is_none_or(|t| t == target);
            if region_ok && tier_ok && target_ok {
                if let Some(v) = &o.ttft_quantiles {
                    p.ttft_quantiles.clone_from(v);
                }
                if let Some(v) = o.ttft_median_ms {
                    p.ttft_median_ms = v;
                }
                if let Some(v) = o.ttft_p99_ms {
                    p.ttft_p99_ms = v;
                }
                if let Some(v) = o.tokens_per_second {
                    p.tokens_per_second = v;
                }
                if let Some(v) = o.max_concurrency {
                    p.max_concurrency = v;
                }
                if let Some(v) = o.requests_per_minute {
                    p.requests_per_minute = v;
                }
                if let Some(v) = o.tokens_per_minute {
                    p.tokens_per_minute = v;
                }
            }
        }
        p
    }
}

fn yes() -> bool {
    true
}
fn default_cache_ttls() -> BTreeSet<String> {
    ["5m".to_string()].into()
}
fn default_max_cache_points() -> usize {
    4
}
fn one_u64() -> u64 {
    1
}
fn default_max_output_tokens() -> u32 {
    4096
}

fn default_cache_min_tokens() -> u32 {
    1024
}

fn default_seed() -> u64 {
    7
}
fn one() -> f64 {
    1.0
}
fn default_credentials() -> Vec<Credential> {
    vec![Credential {
        access_key_id: crate::TEST_ACCESS_KEY_ID.into(),
        secret_access_key: crate::TEST_SECRET_ACCESS_KEY.into(),
    }]
}
fn default_tiers() -> BTreeSet<String> {
    ["default".to_string()].into()
}
fn default_answer_tokens() -> [u32; 2] {
    [40, 400]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_validate() {
        for (name, _, _) in BUILTINS {
            let s = Scenario::builtin(name).unwrap();
            assert_eq!(
                s.regions[..3]
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>(),
                ["us-east-1", "us-west-2", "eu-west-1"],
                "{name}"
            );
            let tokyo = s.region("ap-northeast-1").unwrap();
            assert_eq!(tokyo.all_geographies().collect::<Vec<_>>(), ["jp", "apac"]);
            assert_eq!(
                s.split_profile("jp.anthropic.claude-sonnet-4-6"),
                (Some("jp"), "anthropic.claude-sonnet-4-6")
            );
            assert_eq!(
                s.split_profile("amazon.nova-lite-v1:0"),
                (None, "amazon.nova-lite-v1:0")
            );
            assert!(s.models.iter().any(|m| m.id == "amazon.nova-micro-v1:0"));
            assert!(s.endpoints.iter().any(|e| e.name == "laneway-demo-llm"));
        }
    }

    #[test]
    fn unknown_region_is_named() {
        let err = Scenario::from_toml(
            r#"
            [[regions]]
            name = "us-east-1"
            geography = "us"
            [[models]]
            id = "m"
            regions = ["mars-1"]
            "#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("mars-1"), "{err}");
    }

    #[test]
    fn overrides_apply_to_matching_region_and_tier_only() {
        let s = Scenario::from_toml(
            r#"
            [[regions]]
            name = "us-east-1"
            geography = "us"
            [[models]]
            id = "m"
            regions = ["us-east-1"]
            performance = { ttft_median_ms = 100.0, ttft_p99_ms = 200.0 }
            overrides = [{ tier = "priority", ttft_median_ms = 50.0 }]
            "#,
        )
        .unwrap();
        let m = &s.models[0];
        assert_eq!(
            m.performance_for("us-east-1", "priority", "amazon.nova-lite-v1:0")
                .ttft_median_ms,
            50.0
        );
        assert_eq!(
            m.performance_for("us-east-1", "default", "amazon.nova-lite-v1:0")
                .ttft_median_ms,
            100.0
        );
    }

    #[test]
    fn unknown_builtin_lists_the_known_ones() {
        let err = Scenario::builtin("nope").unwrap_err().to_string();
        assert!(err.contains("startup"), "{err}");
    }
}
