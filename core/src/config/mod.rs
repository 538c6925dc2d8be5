//! Configuration: regions, models with their capabilities and prices, families, the SLO-class
//! to tier map, pricing multipliers and routing limits. Loaded from TOML over built-in defaults
//! and validated on load, with errors that name the field and the bad value.
//!
//! One job a file: [`Config`] and its small sections here; the sections of their own in
//! `routing.rs` (retries, time limits, hedging, the SLO-class tiers), `tiers.rs` (the declared
//! service tiers), `families.rs` (families
//! and their variant routers), `pricing.rs`, `geography.rs` (regions, geographies and the
//! questions asked of them), `shared.rs` (Redis), `model.rs` (models by provider),
//! `sections.rs` (breaker, budget, outlier, prices, reservations, batch); loading and merging
//! over `defaults.toml` in `load.rs`; the shape serde reads in `raw.rs`, which becomes a
//! [`Config`] only through validation (`validate.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod aliases;
mod families;
mod geography;
mod load;
mod model;
mod openai;
mod price_rows;
mod pricing;
mod priors;
mod raw;
mod reasoning;
mod record;
mod routing;
mod sections;
mod shared;
mod tiers;
mod validate;
pub use aliases::Alias;
pub use families::{FamilyConfig, VariantRouterConfig};
pub use geography::{GeographyConfig, RegionConfig};
pub use model::{BedrockModel, ModelConfig, OtherModel, QuotaTerms, SagemakerModel};
pub use model::{EndpointConfig, PayloadFormat};
pub use openai::{MantleConfig, MantlePrefix, OpenAiApi, OpenAiConfig};
pub use price_rows::{LongContextBand, PriceRow, PriceScope};
pub use pricing::PricingConfig;
pub use priors::{LatencyPrior, ModelLatency, PartialPrior, PriorsConfig};
pub use reasoning::{ReasoningConfig, ReasoningFormat, Refusal};
pub use record::RecordConfig;
pub use routing::{
    ClassTimeouts, ConcurrencyConfig, HedgeConfig, LearnedLimits, OverflowConfig, Reach,
    RetryConfig, RoutingConfig, SloTiers, TierPreference, TimeoutsConfig,
};
pub use sections::{
    ApplicationProfile, BatchConfig, BreakerConfig, BudgetConfig, CachePolicy, OutlierConfig,
    Price, QuotaConfig, ReservationConfig, ReservedPrice, ScopeMultipliers, TierMultipliers,
};
pub use shared::{LocalStateConfig, SharedConfig, redact_url};
pub use tiers::{TierConfig, builtin_tiers};

use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::types::{Api, CacheTtl, Geography, Residency, ServiceTier, SloClass};
use crate::types::{Error, Result};
pub use crate::types::{ProfileScope, Provider};

/// The whole configuration of a router.
///
/// ```
/// let config = laneway::Config::from_toml_str(r#"
///     default_model = "claude"
///     [slo_tiers]
///     background = "standard"
/// "#).unwrap();
/// assert_eq!(config.default_model.as_deref(), Some("claude"));
/// assert!(config.models.contains_key("amazon.nova-lite-v1:0")); // built-in models stay
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct Config {
    /// The directory of the file the configuration was read from: relative paths in it (a
    /// family router's model file) are resolved from here when the router is built.
    #[serde(skip)]
    pub base_dir: Option<std::path::PathBuf>,
    /// Whether the built-in models and families are included (only meaningful in a file).
    pub builtin_models: bool,
    /// The model or family a request gets when it names none.
    pub default_model: Option<String>,
    /// Regions in order of preference: where calls start.
    pub regions: Vec<RegionConfig>,
    /// Geographies by name (`us`, `eu`, `apac`, `jp`, `au`, `ca`, `us-gov`, or your own): the
    /// regions each one's geographic inference profiles keep requests in.
    pub geographies: BTreeMap<Geography, GeographyConfig>,
    /// The service tiers this configuration declares, with their spellings per API
    /// (`[tiers.<name>]`): the built-in priority, standard, flex and reserved, and any other.
    pub tiers: BTreeMap<ServiceTier, TierConfig>,
    /// The service tiers each SLO class asks for, by preference (`[slo_tiers]`).
    pub slo_tiers: SloTiers,
    /// Reasoning each SLO class asks of a model that reasons, when the request sets none
    /// (`[slo_reasoning] background = { effort = "medium" }`).
    pub slo_reasoning: BTreeMap<crate::types::SloClass, crate::types::Reasoning>,
    /// Price multipliers by tier and scope, SageMaker instance prices and the batch discount
    /// (`[pricing]`).
    pub pricing: PricingConfig,
    /// How calls are routed, retried, failed over and hedged (`[routing]`).
    pub routing: RoutingConfig,
    /// Model families by name (`[families.nova]`), for requests that name a family.
    pub families: BTreeMap<String, FamilyConfig>,
    /// Other names a request may give a family or model (`[aliases] "gpt-4o" = { family =
    /// "claude" }`), for frameworks that spell or validate model names as another vendor's.
    pub aliases: BTreeMap<String, Alias>,
    /// Models by key (`[models."amazon.nova-lite-v1:0"]`): a Bedrock model's id, or the name a
    /// SageMaker model or a model of your own provider is called by.
    pub models: BTreeMap<String, ModelConfig>,
    /// Settings of the AWS clients (`[aws]`).
    pub aws: AwsConfig,
    /// Automatic prompt-cache placement.
    pub prompt_cache: CachePolicy,
    /// State shared by every replica through Redis (reservations, breakers, prefix index);
    /// without it each process keeps its own.
    pub shared: Option<SharedConfig>,
    /// The batch lane: where jobs put their inputs and outputs, and under which role they run.
    pub batch: Option<BatchConfig>,
    /// Where a process without `[shared]` keeps what it learnt of its targets between runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_state: Option<LocalStateConfig>,
    /// Calls recorded for a re-benchmark on your own traffic (`[record]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordConfig>,
    /// Measurements.
    pub telemetry: TelemetryConfig,
}

impl Default for Config {
    /// The built-in configuration (`defaults.toml`): known Bedrock models and families, three
    /// regions, and every section's defaults.
    fn default() -> Self {
        Self::builtin().clone()
    }
}

impl Config {
    /// A digest of the configuration (SHA-256 of its JSON form, hex): the same for the same
    /// settings, whatever file they came from.
    pub fn digest(&self) -> String {
        use sha2::Digest as _;
        let text = serde_json::to_vec(self).unwrap_or_default();
        sha2::Sha256::digest(&text)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The built-in configuration, read from `defaults.toml` once. The sections' `Default`
    /// impls are its sections: `defaults.toml` is the one place a default is written, so the
    /// deserialising of a configuration never calls them (that would ask for this while it is
    /// being built).
    pub(crate) fn builtin() -> &'static Config {
        static BUILTIN: std::sync::LazyLock<Config> = std::sync::LazyLock::new(|| {
            Config::from_toml_str("").expect("the built-in configuration is valid")
        });
        &BUILTIN
    }

    /// The models whose end of life (`end_of_life`) is on or before `today` (`YYYY-MM-DD`),
    /// with that day: a router built with them warns, and calls to them will fail.
    ///
    /// ```
    /// let c = laneway::Config::from_toml_str(
    ///     "[models.\"amazon.nova-lite-v1:0\"]\nend_of_life = \"2026-09-14\"\n",
    /// ).unwrap();
    /// assert_eq!(c.ended_models("2026-12-05"), [("amazon.nova-lite-v1:0", "2026-09-14")]);
    /// assert!(c.ended_models("2026-09-13").is_empty());
    /// ```
    pub fn ended_models(&self, today: &str) -> Vec<(&str, &str)> {
        self.models
            .iter()
            .filter_map(|(id, m)| match m {
                ModelConfig::Bedrock(b) => b
                    .end_of_life
                    .as_deref()
                    .filter(|day| *day <= today)
                    .map(|day| (id.as_str(), day)),
                _ => None,
            })
            .collect()
    }

    /// What an attempt of `model` at `tier` (`None`: a target without tiers) called by `api`
    /// is expected to take before its target has answered: the model's own `latency` figures
    /// over its tier's `[routing.priors]`.
    pub fn latency_prior(&self, model: &str, tier: Option<ServiceTier>, api: Api) -> LatencyPrior {
        priors::resolve(
            &self.routing.priors,
            self.models.get(model).map(ModelConfig::latency),
            tier,
            api,
        )
    }
}

/// Each section's `Default` is its value in `defaults.toml`, the one place defaults are written.
macro_rules! default_from_builtin {
    ($($section:ty => $($field:ident).+;)*) => {$(
        impl Default for $section {
            #[doc = concat!("`", stringify!($($field).+), "` of `defaults.toml`.")]
            fn default() -> Self {
                Config::builtin().$($field).+.clone()
            }
        }
    )*};
}

default_from_builtin! {
    RoutingConfig => routing;
    RetryConfig => routing.retry;
    TimeoutsConfig => routing.timeouts;
    LearnedLimits => routing.timeouts.learned;
    HedgeConfig => routing.hedge;
    BreakerConfig => routing.breaker;
    OutlierConfig => routing.outlier;
    BudgetConfig => routing.budget;
    ConcurrencyConfig => routing.concurrency;
    OverflowConfig => routing.overflow;
    PriorsConfig => routing.priors;
    CachePolicy => prompt_cache;
    TelemetryConfig => telemetry;
}

/// Settings of the AWS clients.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsConfig {
    /// Sends every call to this URL instead of AWS (the emulator, say). bedrock-mantle's calls
    /// go to its `/mantle` path unless `mantle_endpoint_url` says otherwise.
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// Sends bedrock-mantle's calls to this URL instead of `https://bedrock-mantle.{region}.api.aws`
    /// (a VPC endpoint, a proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mantle_endpoint_url: Option<String>,
}

/// Measurements (`[telemetry]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// A task (`task_id`) none of whose calls was seen for this long is closed as abandoned,
    /// so that tasks never finished do not pile up (milliseconds; default 10 minutes).
    #[serde(with = "crate::types::units::serde_millis")]
    pub task_idle: Duration,
}

/// A model's prompt-caching rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptCacheConfig {
    /// Tokens needed before a checkpoint for it to cache anything.
    pub min_tokens: u32,
    /// TTLs it supports.
    pub ttls: BTreeSet<CacheTtl>,
    /// Whether checkpoints in the tool list are allowed.
    #[serde(default)]
    pub tools: bool,
    /// Whether a checkpoint may sit in a message that carries a tool result (Nova: no, "extraneous
    /// key \[cachePoint\] is not permitted").
    pub after_tool_result: bool,
    /// Most checkpoints a request may carry.
    pub max_checkpoints: usize,
    /// Most tokens it caches, if limited.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Whether a checkpoint may follow a block of the model's own turn (an assistant
    /// message). The Responses API takes breakpoints only on the caller's input (`input_text`,
    /// `input_image`, `input_file`): no.
    pub after_model_turn: bool,
    /// The APIs that carry its checkpoints (default: Converse's `cachePoint`). GPT-5.6 and
    /// later take explicit breakpoints on the Responses API of the endpoints listed here
    /// (`openai-runtime`, `openai-mantle`): Laneway sends them in explicit mode, so that the
    /// service writes no implicit breakpoint at the newest message every turn. An attempt by
    /// another API is sent none.
    pub apis: BTreeSet<Api>,
}

/// The region and router name of a prompt-router ARN
/// (`arn:aws:bedrock:{region}:{account}:default-prompt-router/{name}` or `.../prompt-router/{id}`).
///
/// ```
/// use laneway::config::parse_prompt_router_arn as parse_arn;
/// let arn = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1";
/// assert_eq!(parse_arn(arn), Some(("us-east-1", "anthropic.claude:1")));
/// assert_eq!(parse_arn("amazon.nova-lite-v1:0"), None);
/// // Every partition, as `laneway::types::Arn` reads them.
/// let china = "arn:aws-cn:bedrock:cn-north-1:123456789012:prompt-router/abc";
/// assert_eq!(parse_arn(china), Some(("cn-north-1", "abc")));
/// ```
pub fn parse_prompt_router_arn(arn: &str) -> Option<(&str, &str)> {
    let arn = crate::types::Arn::parse_bedrock(arn)?;
    let name = arn
        .resource_id("default-prompt-router")
        .or_else(|| arn.resource_id("prompt-router"))?;
    Some((arn.region, name))
}
