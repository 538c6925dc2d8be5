//! A configured model, by provider: a Bedrock model (regions, profiles, tiers, prompt cache,
//! reservation), a SageMaker model (endpoints, a fallback family) or one of your own providers
//! (regions), each with its price.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::openai::OpenAiConfig;
use super::reasoning::ReasoningConfig;
use super::{
    ApplicationProfile, ModelLatency, Price, PricingConfig, PromptCacheConfig, QuotaConfig,
    ReservationConfig,
};
use crate::types::{Api, ProfileScope, Provider, SamplingParameter, ServiceTier};

/// A Bedrock model as written in configuration (`provider = "bedrock"`): its keys and no other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockSpec {
    provider: Provider,
    /// Regions that serve it (in-region, and as sources of its profiles).
    #[serde(default)]
    regions: Vec<String>,
    /// Inference profiles that exist for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    profiles: Vec<ProfileScope>,
    /// Only profile ids are accepted on demand (newer Claude models).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    requires_profile: bool,
    /// The regions whose on-demand calls take the bare model id; absent, every region of
    /// `regions` (unless `requires_profile`). Elsewhere only its profiles are called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    in_region: Option<Vec<String>>,
    /// The service tiers it supports; a tier not listed is never sent.
    tiers: BTreeSet<ServiceTier>,
    /// Whether latency-optimized inference (`performanceConfig`) exists for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    latency_optimized: bool,
    /// Prompt-caching rules; absent means no caching (checkpoints are never sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt_cache: Option<PromptCacheConfig>,
    /// Reserved capacity; calls whose SLO maps to standard (or reserved) use it while it has
    /// room and overflow to standard after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reserved: Option<ReservationConfig>,
    /// On-demand quotas per region (in-region id and profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quota: Option<QuotaConfig>,
    /// Application inference profiles to send to instead of the model's own ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    application_profiles: Vec<ApplicationProfile>,
    /// Quota tokens one output token costs (5 for the Claude 4 family, else 1).
    output_burndown: u32,
    /// The model's largest answer, which Bedrock counts against the token quota for a request
    /// without `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    /// How it reasons and how its request spells it; absent, it does not reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningConfig>,
    /// Whether it takes structured output (`outputConfig.textFormat`, strict tools).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    structured_output: bool,
    /// Whether Converse serves it (default: yes; OpenAI's GPT-5.4 and 5.5 are served only by
    /// bedrock-mantle's OpenAI-compatible APIs).
    converse: bool,
    /// The OpenAI-compatible APIs that serve it, on bedrock-runtime and bedrock-mantle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    openai: Option<OpenAiConfig>,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    #[serde(default, skip_serializing_if = "ModelLatency::is_empty")]
    latency: ModelLatency,
    price: Price,
    /// The day Bedrock stops serving it (`YYYY-MM-DD`), when AWS has said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_of_life: Option<String>,
    /// The sampling parameters it refuses (`temperature`, `top_p`): sent without them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    refuses: BTreeSet<SamplingParameter>,
}

/// A SageMaker model as written in configuration (`provider = "sagemaker"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SagemakerSpec {
    provider: Provider,
    /// Endpoints serving it, in order of preference.
    #[serde(default)]
    endpoints: Vec<EndpointConfig>,
    /// A Bedrock family to fall back to when every endpoint fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fallback_family: Option<String>,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    #[serde(default, skip_serializing_if = "ModelLatency::is_empty")]
    latency: ModelLatency,
    price: Price,
}

/// A model of a provider of your own as written in configuration (any other `provider`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OtherSpec {
    provider: Provider,
    /// The id sent to the provider, when it is not the model's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_id: Option<String>,
    /// The regions (or any names) that serve it, one target each, in order.
    #[serde(default)]
    regions: Vec<String>,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    #[serde(default, skip_serializing_if = "ModelLatency::is_empty")]
    latency: ModelLatency,
    price: Price,
}

/// What each provider's models are, said after serde's "unknown field" for a key of another.
const BEDROCK_KEYS: &str = "a Bedrock model's key is its model id; only SageMaker models have endpoints and a fallback family";
const SAGEMAKER_KEYS: &str = "a SageMaker model is placed by its endpoints, which have no regions, profiles, service tiers, prompt cache or reservation";
const OTHER_KEYS: &str = "a model of your own provider has regions, a model_id and a price; the rest are Bedrock and SageMaker settings";

fn standard_only() -> BTreeSet<ServiceTier> {
    [ServiceTier::STANDARD].into()
}

static STANDARD_ONLY: LazyLock<BTreeSet<ServiceTier>> = LazyLock::new(standard_only);

/// A model: who serves it, how, and what it costs. In configuration, a table with `provider =`
/// and that provider's keys:
///
/// ```
/// use laneway::config::ModelConfig;
/// let c = laneway::Config::from_toml_str(r#"
///     [models.house]
///     provider = "house"
///     regions = ["dc-1"]
///     price = { input_per_1k = 0.1, output_per_1k = 0.2 }
/// "#).unwrap();
/// assert!(matches!(c.models["house"], ModelConfig::Other(_)));
/// assert!(matches!(c.models["amazon.nova-lite-v1:0"], ModelConfig::Bedrock(_)));
/// assert!(laneway::Config::from_toml_str(
///     "[models.x]\nprovider = \"sagemaker\"\nregions = [\"us-east-1\"]\nprice = { input_per_1k = 0.1, output_per_1k = 0.2 }\n"
/// ).unwrap_err().to_string().contains("regions"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ModelConfig {
    /// A Bedrock model (`provider = "bedrock"`), keyed by its model id.
    Bedrock(Box<BedrockModel>),
    /// A model on SageMaker real-time endpoints (`provider = "sagemaker"`).
    Sagemaker(SagemakerModel),
    /// A model of a provider of your own (any other `provider`).
    Other(OtherModel),
}

/// A Bedrock model.
#[derive(Debug, Clone, PartialEq)]
pub struct BedrockModel {
    /// Regions that serve it (in-region, and as sources of its profiles).
    pub regions: Vec<String>,
    /// Inference profiles that exist for it.
    pub profiles: Vec<ProfileScope>,
    /// Only profile ids are accepted on demand (newer Claude models).
    pub requires_profile: bool,
    /// The regions whose on-demand calls take the bare model id; `None`: every region of
    /// `regions` (unless `requires_profile`).
    pub in_region: Option<Vec<String>>,
    /// The service tiers it supports; a tier not listed is never sent.
    pub tiers: BTreeSet<ServiceTier>,
    /// Whether latency-optimized inference (`performanceConfig`) exists for it.
    pub latency_optimized: bool,
    /// Prompt-caching rules; absent means no caching (checkpoints are never sent).
    pub prompt_cache: Option<PromptCacheConfig>,
    /// Reserved capacity: calls whose SLO maps to standard (or reserved) are sent reserved, and
    /// Bedrock overflows them to standard above it.
    pub reserved: Option<ReservationConfig>,
    /// On-demand quotas per region, which the router counts its admissions against.
    pub quota: Option<QuotaConfig>,
    /// Application inference profiles (cost-allocation tags): when listed, they are the model's
    /// targets, one per profile in its ARN's region, instead of its in-region id and system
    /// profiles; routing, cost and metrics treat them as the model (or the profile they wrap).
    pub application_profiles: Vec<ApplicationProfile>,
    /// Quota tokens one output token costs (5 for the Claude 4 family, else 1).
    pub output_burndown: u32,
    /// The model's largest answer: what Bedrock counts for a request without `max_tokens`.
    pub max_output_tokens: Option<u32>,
    /// How it reasons and how its request spells it; `None`: it does not reason. (Boxed: few
    /// models reason, and every model's configuration would grow by its size.)
    pub reasoning: Option<Box<ReasoningConfig>>,
    /// Whether it takes structured output (`outputConfig.textFormat`, strict tools).
    pub structured_output: bool,
    /// Whether Converse serves it.
    pub converse: bool,
    /// Its OpenAI-compatible APIs, if any. (Boxed: few models have them.)
    pub openai: Option<Box<OpenAiConfig>>,
    /// What it costs, in US dollars per 1,000 tokens (on-demand, standard tier).
    pub price: Price,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    pub latency: ModelLatency,
    /// The day Bedrock stops serving it (`YYYY-MM-DD`), when AWS has said: a router built
    /// after it warns that the model has ended.
    pub end_of_life: Option<String>,
    /// The sampling parameters it refuses (`refuses = ["temperature", "top_p"]`): a request
    /// that sets one is sent to it without, and the decision says so.
    pub refuses: BTreeSet<SamplingParameter>,
}

/// A model on SageMaker real-time endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct SagemakerModel {
    /// Endpoints serving it, in order of preference.
    pub endpoints: Vec<EndpointConfig>,
    /// A Bedrock family to fall back to when every endpoint fails.
    pub fallback_family: Option<String>,
    /// What it costs, in US dollars per 1,000 tokens.
    pub price: Price,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    pub latency: ModelLatency,
}

/// A model of a provider of your own (its backend registered with
/// [`RouterBuilder::backend`](crate::RouterBuilder::backend)).
#[derive(Debug, Clone, PartialEq)]
pub struct OtherModel {
    /// The provider (its `provider` key), whose backend is registered under the same name.
    pub provider: Provider,
    /// The id sent to the provider, when it is not the model's key.
    pub model_id: Option<String>,
    /// The regions (or any names) that serve it, one target each, in order.
    pub regions: Vec<String>,
    /// What it costs, in US dollars per 1,000 tokens.
    pub price: Price,
    /// Expected latency before a target of it has answered, over `[routing.priors]`.
    pub latency: ModelLatency,
}

impl<'de> Deserialize<'de> for ModelConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let table = toml::Table::deserialize(d)?;
        let provider = match table.get("provider") {
            Some(v) => Provider::deserialize(v.clone()).map_err(D::Error::custom)?,
            None => return Err(D::Error::missing_field("provider")),
        };
        let value = toml::Value::Table(table);
        // Each provider's own keys and no other: a key of another provider's models is
        // serde's "unknown field" at the model's top level, said with what this provider's
        // models are. An error deeper in the model names its path within it.
        let keys_of = |whose: &'static str| {
            move |e: serde_path_to_error::Error<toml::de::Error>| {
                let path = e.path().to_string();
                let message = e.into_inner().message().to_string();
                let top_level = !path.contains(['.', '[']);
                D::Error::custom(if top_level && message.starts_with("unknown field") {
                    format!("{message} ({whose})")
                } else if path == "." {
                    message
                } else {
                    format!("{path}: {message}")
                })
            }
        };
        if matches!(provider.as_str(), "bedrock-openai" | "bedrock-mantle") {
            return Err(D::Error::custom(format!(
                "{:?} is one of Bedrock's APIs, not a provider of its own: write `provider = \"bedrock\"` and the model's `openai` table",
                provider.as_str()
            )));
        }
        match provider {
            Provider::Bedrock => serde_path_to_error::deserialize::<_, BedrockSpec>(value)
                .map(|spec| ModelConfig::Bedrock(Box::new(spec.into())))
                .map_err(keys_of(BEDROCK_KEYS)),
            Provider::Sagemaker => {
                let s = serde_path_to_error::deserialize::<_, SagemakerSpec>(value)
                    .map_err(keys_of(SAGEMAKER_KEYS))?;
                Ok(ModelConfig::Sagemaker(SagemakerModel {
                    endpoints: s.endpoints,
                    fallback_family: s.fallback_family,
                    latency: s.latency,
                    price: s.price,
                }))
            }
            _ => {
                let o = serde_path_to_error::deserialize::<_, OtherSpec>(value)
                    .map_err(keys_of(OTHER_KEYS))?;
                Ok(ModelConfig::Other(OtherModel {
                    provider: o.provider,
                    model_id: o.model_id,
                    regions: o.regions,
                    latency: o.latency,
                    price: o.price,
                }))
            }
        }
    }
}

impl From<BedrockSpec> for BedrockModel {
    fn from(s: BedrockSpec) -> Self {
        BedrockModel {
            regions: s.regions,
            profiles: s.profiles,
            requires_profile: s.requires_profile,
            in_region: s.in_region,
            tiers: s.tiers,
            latency_optimized: s.latency_optimized,
            prompt_cache: s.prompt_cache,
            reserved: s.reserved,
            quota: s.quota,
            application_profiles: s.application_profiles,
            output_burndown: s.output_burndown,
            max_output_tokens: s.max_output_tokens,
            reasoning: s.reasoning.map(Box::new),
            structured_output: s.structured_output,
            converse: s.converse,
            openai: s.openai.map(Box::new),
            latency: s.latency,
            price: s.price,
            end_of_life: s.end_of_life,
            refuses: s.refuses,
        }
    }
}

impl Serialize for ModelConfig {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            ModelConfig::Bedrock(b) => BedrockSpec {
                provider: Provider::Bedrock,
                regions: b.regions.clone(),
                profiles: b.profiles.clone(),
                requires_profile: b.requires_profile,
                in_region: b.in_region.clone(),
                tiers: b.tiers.clone(),
                latency_optimized: b.latency_optimized,
                prompt_cache: b.prompt_cache.clone(),
                reserved: b.reserved,
                quota: b.quota,
                application_profiles: b.application_profiles.clone(),
                output_burndown: b.output_burndown,
                max_output_tokens: b.max_output_tokens,
                reasoning: b.reasoning.as_deref().cloned(),
                structured_output: b.structured_output,
                converse: b.converse,
                openai: b.openai.as_deref().cloned(),
                latency: b.latency.clone(),
                price: b.price.clone(),
                end_of_life: b.end_of_life.clone(),
                refuses: b.refuses.clone(),
            }
            .serialize(ser),
            ModelConfig::Sagemaker(m) => SagemakerSpec {
                provider: Provider::Sagemaker,
                endpoints: m.endpoints.clone(),
                fallback_family: m.fallback_family.clone(),
                latency: m.latency.clone(),
                price: m.price.clone(),
            }
            .serialize(ser),
            ModelConfig::Other(o) => OtherSpec {
                provider: o.provider.clone(),
                model_id: o.model_id.clone(),
                regions: o.regions.clone(),
                latency: o.latency.clone(),
                price: o.price.clone(),
            }
            .serialize(ser),
        }
    }
}

impl ModelConfig {
    /// The API its targets are called by unless its `openai` table says otherwise: Converse
    /// for a Bedrock model, InvokeEndpoint for a SageMaker one, its backend's own for a model
    /// of your own provider.
    pub fn default_api(&self) -> Api {
        match self {
            ModelConfig::Bedrock(_) => Api::Converse,
            ModelConfig::Sagemaker(_) => Api::InvokeEndpoint,
            ModelConfig::Other(_) => Api::Own,
        }
    }

    /// The sampling parameters it refuses (none but for a Bedrock model that says so).
    pub fn refused_sampling(&self) -> &BTreeSet<SamplingParameter> {
        static NONE: BTreeSet<SamplingParameter> = BTreeSet::new();
        match self {
            ModelConfig::Bedrock(b) => &b.refuses,
            _ => &NONE,
        }
    }

    /// Who serves it.
    pub fn provider(&self) -> Provider {
        match self {
            ModelConfig::Bedrock(_) => Provider::Bedrock,
            ModelConfig::Sagemaker(_) => Provider::Sagemaker,
            ModelConfig::Other(o) => o.provider.clone(),
        }
    }

    /// Its own latency priors (its `latency` table).
    pub fn latency(&self) -> &ModelLatency {
        match self {
            ModelConfig::Bedrock(b) => &b.latency,
            ModelConfig::Sagemaker(s) => &s.latency,
            ModelConfig::Other(o) => &o.latency,
        }
    }

    /// What it costs per 1,000 tokens.
    pub fn price(&self) -> &Price {
        match self {
            ModelConfig::Bedrock(b) => &b.price,
            ModelConfig::Sagemaker(s) => &s.price,
            ModelConfig::Other(o) => &o.price,
        }
    }

    /// The regions that serve it (none for SageMaker, placed by its endpoints).
    pub fn regions(&self) -> &[String] {
        match self {
            ModelConfig::Bedrock(b) => &b.regions,
            ModelConfig::Other(o) => &o.regions,
            ModelConfig::Sagemaker(_) => &[],
        }
    }

    /// Its Bedrock inference profiles.
    pub fn profiles(&self) -> &[ProfileScope] {
        match self {
            ModelConfig::Bedrock(b) => &b.profiles,
            _ => &[],
        }
    }

    /// Whether Bedrock accepts only profile ids for it on demand, in every region.
    pub fn requires_profile(&self) -> bool {
        matches!(self, ModelConfig::Bedrock(b) if b.requires_profile)
    }

    /// Whether an on-demand call from `region` must name one of its profiles (its bare id is
    /// not served there).
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// let lite = &config.models["amazon.nova-lite-v1:0"];
    /// assert!(!lite.requires_profile_in("us-east-1"));
    /// assert!(lite.requires_profile_in("eu-west-1")); // a source of `eu.` only
    /// ```
    pub fn requires_profile_in(&self, region: &str) -> bool {
        match self {
            ModelConfig::Bedrock(b) => {
                b.requires_profile
                    || b.in_region
                        .as_ref()
                        .is_some_and(|r| !r.iter().any(|r| r == region))
            }
            _ => false,
        }
    }

    /// The service tiers it supports (standard only, for providers without tiers).
    pub fn tiers(&self) -> &BTreeSet<ServiceTier> {
        match self {
            ModelConfig::Bedrock(b) => &b.tiers,
            _ => &STANDARD_ONLY,
        }
    }

    /// Whether latency-optimized inference exists for it.
    pub fn latency_optimized(&self) -> bool {
        matches!(self, ModelConfig::Bedrock(b) if b.latency_optimized)
    }

    /// Its prompt-caching rules, if it caches.
    pub fn prompt_cache(&self) -> Option<&PromptCacheConfig> {
        match self {
            ModelConfig::Bedrock(b) => b.prompt_cache.as_ref(),
            _ => None,
        }
    }

    /// Its reservation, if any.
    pub fn reserved(&self) -> Option<&ReservationConfig> {
        match self {
            ModelConfig::Bedrock(b) => b.reserved.as_ref(),
            _ => None,
        }
    }

    /// The (requests, tokens) per minute quota of one of its bedrock-runtime targets (a profile
    /// or the in-region id), when configured.
    pub fn quota_limits(&self, profile: bool) -> Option<(u64, u64)> {
        match self {
            ModelConfig::Bedrock(b) => b.quota.as_ref()?.limits(profile),
            _ => None,
        }
    }

    /// The concurrent requests each of its targets takes, where configured
    /// (`quota.max_concurrency`).
    pub fn max_concurrency(&self) -> Option<u32> {
        match self {
            ModelConfig::Bedrock(b) => b.quota.as_ref()?.max_concurrency,
            _ => None,
        }
    }

    /// Whether any of its targets has an on-demand quota the router counts.
    pub fn has_quotas(&self) -> bool {
        self.quota_limits(false).is_some()
            || self.quota_limits(true).is_some()
            || self.openai().and_then(OpenAiConfig::mantle_quota).is_some()
    }

    /// The on-demand quota a call to `target` counts against, and how, when one is configured:
    /// bedrock-runtime's (Converse and `/openai/v1` alike) or bedrock-mantle's own pool.
    ///
    /// ```
    /// use laneway::{Target, Usage};
    /// let config = laneway::Config::from_toml_str(r#"
    ///     [models."openai.gpt-oss-120b-1:0".openai.mantle]
    ///     apis = ["responses"]
    ///     input_tokens_per_minute = 10000
    ///     output_tokens_per_minute = 2000
    /// "#).unwrap();
    /// let model = &config.models["openai.gpt-oss-120b-1:0"];
    /// let terms = model.quota_terms(&Target::mantle("us-east-1", "openai.gpt-oss-120b")).unwrap();
    /// assert_eq!(terms.limits, (10_000, 2_000));
    /// // Input and `max_tokens` count against input tokens at admission ...
    /// assert_eq!(terms.at_admission(300, Some(200), 1_000), (500, 1));
    /// // ... and cache reads do not count when it ends.
    /// let usage = Usage { input_tokens: 100, cache_read_tokens: 200, output_tokens: 50, ..Usage::default() };
    /// assert_eq!(terms.used(&usage), (100, 50));
    /// ```
    pub fn quota_terms(&self, target: &crate::types::Target) -> Option<QuotaTerms> {
        let ModelConfig::Bedrock(b) = self else {
            return None;
        };
        let max_output = b.max_output_tokens.map(u64::from);
        if target.api == Api::OpenAiMantle {
            return Some(QuotaTerms {
                limits: b.openai.as_ref()?.mantle_quota()?,
                pool: QuotaPool::Mantle,
                max_output,
            });
        }
        Some(QuotaTerms {
            limits: b.quota.as_ref()?.limits(target.profile.is_some())?,
            pool: QuotaPool::Runtime {
                burndown: u64::from(b.output_burndown),
            },
            max_output,
        })
    }

    /// How it reasons, if it does.
    pub fn reasoning(&self) -> Option<&ReasoningConfig> {
        match self {
            ModelConfig::Bedrock(b) => b.reasoning.as_deref(),
            _ => None,
        }
    }

    /// Whether it takes structured output and strict tools.
    pub fn structured_output(&self) -> bool {
        matches!(self, ModelConfig::Bedrock(b) if b.structured_output)
    }

    /// Whether Converse serves it (Bedrock models unless `converse = false`).
    pub fn converse(&self) -> bool {
        matches!(self, ModelConfig::Bedrock(b) if b.converse)
    }

    /// Its OpenAI-compatible APIs (Bedrock), if any.
    pub fn openai(&self) -> Option<&OpenAiConfig> {
        match self {
            ModelConfig::Bedrock(b) => b.openai.as_deref(),
            _ => None,
        }
    }

    /// Whether a broken stream of it can be continued from the delivered text sent as the
    /// assistant's prefill: not for models with OpenAI-compatible APIs (those APIs take no
    /// prefill, and OpenAI's models do not continue an assistant turn on Converse either).
    pub fn continues_a_prefill(&self) -> bool {
        self.openai().is_none()
    }

    /// Its application inference profiles (Bedrock), which replace its own ids as targets.
    pub fn application_profiles(&self) -> &[ApplicationProfile] {
        match self {
            ModelConfig::Bedrock(b) => &b.application_profiles,
            _ => &[],
        }
    }

    /// Its SageMaker endpoints, in order of preference.
    pub fn endpoints(&self) -> &[EndpointConfig] {
        match self {
            ModelConfig::Sagemaker(s) => &s.endpoints,
            _ => &[],
        }
    }

    /// Whether it is sold in service tiers, has cross-region profiles and a batch lane:
    /// Bedrock's models are; a SageMaker endpoint or another provider's model is not.
    pub fn is_managed(&self) -> bool {
        matches!(self, ModelConfig::Bedrock(_))
    }

    /// Who hosts it, for a message: "a Bedrock model", "a SageMaker model", or "served by"
    /// its provider.
    pub fn hosting(&self) -> String {
        match self {
            ModelConfig::Bedrock(_) => "a Bedrock model".to_string(),
            ModelConfig::Sagemaker(_) => "a SageMaker model".to_string(),
            ModelConfig::Other(o) => format!("served by {}", o.provider),
        }
    }

    /// Whether its endpoint `id` in `region` streams, as configured (`None`: not said, or no
    /// such endpoint).
    pub fn streams_at(&self, id: &str, region: &str) -> Option<bool> {
        self.endpoints()
            .iter()
            .find(|e| e.name == id && e.region == region)
            .and_then(|e| e.streams)
    }

    /// Whether access to it is granted per region, so that a refusal in one region refuses
    /// its other ids and profiles there too (Bedrock's model access); not so for a SageMaker
    /// endpoint, whose access is its own (IAM on the endpoint).
    pub fn access_is_regional(&self) -> bool {
        !matches!(self, ModelConfig::Sagemaker(_))
    }

    /// The Bedrock family a SageMaker model falls back to.
    pub fn fallback_family(&self) -> Option<&String> {
        match self {
            ModelConfig::Sagemaker(s) => s.fallback_family.as_ref(),
            _ => None,
        }
    }

    /// The id sent to a provider of your own, when it is not the model's key.
    pub fn model_id(&self) -> Option<&str> {
        match self {
            ModelConfig::Other(o) => o.model_id.as_deref(),
            _ => None,
        }
    }
}

/// How a call counts against one target's on-demand quota: two counts per sliding minute and
/// their limits (from [`ModelConfig::quota_terms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaTerms {
    /// The per-minute limits of the two counts: (requests, tokens) on bedrock-runtime, (input
    /// tokens, output tokens) on bedrock-mantle. `u64::MAX`: not limited.
    pub limits: (u64, u64),
    pool: QuotaPool,
    max_output: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuotaPool {
    /// One request, and input plus output times the burndown rate in one token count.
    Runtime { burndown: u64 },
    /// Input tokens and output tokens apart; no request count.
    Mantle,
}

impl QuotaTerms {
    /// The two counts a call books at admission: its input and `max_tokens` (the model's
    /// maximum without it, else `default_output`) as the service counts them. On mantle the
    /// output count books one token, so that a full output quota refuses more calls; output
    /// is counted as generated.
    pub fn at_admission(
        &self,
        input: u64,
        max_tokens: Option<u64>,
        default_output: u64,
    ) -> (u64, u64) {
        let output = max_tokens.or(self.max_output).unwrap_or(default_output);
        match self.pool {
            QuotaPool::Runtime { burndown } => (1, input + output * burndown),
            QuotaPool::Mantle => (input + output, 1),
        }
    }

    /// The two counts a finished call used: on bedrock-runtime input, cache writes and output
    /// times the burndown rate; on mantle input and cache writes (cache reads are free), and
    /// output.
    pub fn used(&self, usage: &crate::types::Usage) -> (u64, u64) {
        let input = u64::from(usage.input_tokens) + u64::from(usage.cache_write_tokens);
        let output = u64::from(usage.output_tokens);
        match self.pool {
            QuotaPool::Runtime { burndown } => (1, input + output * burndown),
            QuotaPool::Mantle => (input, output),
        }
    }

    /// The tokens of an admission, for the decision.
    pub fn tokens(&self, counts: (u64, u64)) -> u64 {
        match self.pool {
            QuotaPool::Runtime { .. } => counts.1,
            QuotaPool::Mantle => counts.0,
        }
    }
}

/// A SageMaker real-time endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// The endpoint's name.
    pub name: String,
    /// The region the endpoint is in.
    pub region: String,
    /// The container's payload format.
    pub format: PayloadFormat,
    /// The inference component to invoke (`InferenceComponentName`), for an endpoint that hosts
    /// its models as inference components.
    #[serde(default)]
    pub inference_component: Option<String>,
    /// The model to invoke on a multi-model endpoint (`TargetModel`); sent with non-streamed
    /// calls only, since InvokeEndpointWithResponseStream has no such parameter.
    #[serde(default)]
    pub target_model: Option<String>,
    /// The production variant to send calls to (`TargetVariant`); `None`: SageMaker picks by
    /// the variants' weights.
    #[serde(default)]
    pub target_variant: Option<String>,
    /// The instance type behind the endpoint (`ml.g5.xlarge`), priced by
    /// `pricing.instance_hourly`.
    #[serde(default)]
    pub instance_type: Option<String>,
    /// How many instances serve the endpoint.
    pub instance_count: u32,
    /// Whether its container streams (InvokeEndpointWithResponseStream). `false`: every call
    /// is sent whole (InvokeEndpoint) under the whole-answer limit. Unset: streamed until the
    /// endpoint refuses to stream (a 404 for the operation, as a server without it answers),
    /// then sent whole from then on (remembered for the router's life).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<bool>,
}

impl EndpointConfig {
    /// US dollars per hour of this endpoint's instances, when its instance type is priced.
    pub fn hourly_usd(&self, pricing: &PricingConfig) -> Option<f64> {
        let t = self.instance_type.as_ref()?;
        Some(pricing.instance_hourly.get(t)? * f64::from(self.instance_count))
    }
}

/// SageMaker container payload formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadFormat {
    /// Text Generation Inference: `inputs` / `parameters`, `data:` token lines.
    Tgi,
    /// OpenAI-compatible chat completions (vLLM, LMI, TGI Messages API).
    OpenaiChat,
}
