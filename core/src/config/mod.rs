//! Configuration: regions, models with their capabilities and prices, families, the SLO-class
//! to tier map, pricing multipliers and routing limits. Loaded from TOML over built-in defaults
//! and validated on load, with errors that name the field and the bad value.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod model;
mod openai;
mod reasoning;
mod sections;
pub use model::{BedrockModel, ModelConfig, OtherModel, QuotaTerms, SagemakerModel};
pub use openai::{MantleConfig, MantlePrefix, OpenAiApi, OpenAiConfig};
pub use reasoning::{ReasoningConfig, ReasoningFormat, Refusal};
pub use sections::{
    ApplicationProfile, BatchConfig, BreakerConfig, BudgetConfig, CachePolicy, OutlierConfig,
    Price, QuotaConfig, ReservationConfig, ScopeMultipliers, TierMultipliers,
};

use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::types::{CacheTtl, Geography, Residency, ServiceTier, SloClass};
use crate::types::{Error, Result};
pub use crate::types::{ProfileScope, Provider};

const DEFAULTS: &str = include_str!("../../defaults.toml");

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
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The directory of the file the configuration was read from: relative paths in it (a
    /// family router's model file) are resolved from here when the router is built.
    #[serde(skip)]
    pub base_dir: Option<std::path::PathBuf>,
    /// Whether the built-in models and families are included (only meaningful in a file).
    #[serde(default = "yes")]
    pub builtin_models: bool,
    /// The model or family a request gets when it names none.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Regions in order of preference: where calls start.
    pub regions: Vec<RegionConfig>,
    /// Geographies by name (`us`, `eu`, `apac`, `jp`, `au`, `ca`, `us-gov`, or your own): the
    /// regions each one's geographic inference profiles keep requests in.
    #[serde(default)]
    pub geographies: BTreeMap<Geography, GeographyConfig>,
    /// The service tier each SLO class asks for (`[slo_tiers]`).
    pub slo_tiers: SloTiers,
    /// Reasoning each SLO class asks of a model that reasons, when the request sets none
    /// (`[slo_reasoning] background = { effort = "medium" }`).
    #[serde(default)]
    pub slo_reasoning: BTreeMap<crate::types::SloClass, crate::types::Reasoning>,
    /// Price multipliers by tier and scope, SageMaker instance prices and the batch discount
    /// (`[pricing]`).
    pub pricing: PricingConfig,
    /// How calls are routed, retried, failed over and hedged (`[routing]`).
    pub routing: RoutingConfig,
    /// Model families by name (`[families.nova]`), for requests that name a family.
    #[serde(default)]
    pub families: BTreeMap<String, FamilyConfig>,
    /// Models by key (`[models."amazon.nova-lite-v1:0"]`): a Bedrock model's id, or the name a
    /// SageMaker model or a model of your own provider is called by.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// Settings of the AWS clients (`[aws]`).
    #[serde(default)]
    pub aws: AwsConfig,
    /// Automatic prompt-cache placement.
    #[serde(default)]
    pub prompt_cache: CachePolicy,
    /// State shared by every replica through Redis (reservations, breakers, prefix index);
    /// without it each process keeps its own.
    #[serde(default)]
    pub shared: Option<SharedConfig>,
    /// The batch lane: where jobs put their inputs and outputs, and under which role they run.
    #[serde(default)]
    pub batch: Option<BatchConfig>,
    /// Measurements.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
}

/// Measurements (`[telemetry]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// A task (`task_id`) none of whose calls was seen for this long is closed as abandoned,
    /// so that tasks never finished do not pile up (milliseconds; default 10 minutes).
    #[serde(
        default = "default_task_idle",
        with = "crate::types::units::serde_millis"
    )]
    pub task_idle: Duration,
}

fn default_task_idle() -> Duration {
    Duration::from_secs(600)
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            task_idle: default_task_idle(),
        }
    }
}

/// Where replicas share their state: a Redis server or cluster. Its `Debug` output hides the
/// URL's password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedConfig {
    /// `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS.
    pub redis_url: String,
    /// Prefix of every key, one per application sharing the server.
    #[serde(default = "default_key_prefix")]
    pub key_prefix: String,
    /// How many replicas share the reservation: while Redis is unreachable each admits only
    /// this share of it.
    #[serde(default = "one")]
    pub replicas: u32,
    /// Longest wait for Redis on a call's path before falling back to local state (ms).
    #[serde(
        default = "default_shared_timeout",
        with = "crate::types::units::serde_millis"
    )]
    pub timeout: Duration,
    /// How often breaker states are read from Redis (ms).
    #[serde(
        default = "default_sync_interval",
        with = "crate::types::units::serde_millis"
    )]
    pub sync_interval: Duration,
    /// A Redis Cluster (cluster-mode ElastiCache or MemoryDB, ElastiCache Serverless, Valkey in
    /// cluster mode): `redis_url` is any node or the configuration endpoint, and the client
    /// follows the cluster's slots (every key shares one slot: `{key_prefix}` is a hash tag).
    #[serde(default)]
    pub cluster: bool,
}

impl std::fmt::Debug for SharedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedConfig")
            .field("redis_url", &redact_url(&self.redis_url))
            .field("key_prefix", &self.key_prefix)
            .field("replicas", &self.replicas)
            .field("timeout", &self.timeout)
            .field("sync_interval", &self.sync_interval)
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// A URL with the password of its user information replaced by `***` (all of it, when it is
/// not `user:password`), for logs and error messages.
///
/// ```
/// use laneway::config::redact_url;
/// assert_eq!(redact_url("redis://app:s3cret@cache:6379/0"), "redis://app:***@cache:6379/0");
/// assert_eq!(redact_url("rediss://:s3cret@cache"), "rediss://:***@cache");
/// assert_eq!(redact_url("redis://cache:6379"), "redis://cache:6379");
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    let user = match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        None => "***".to_string(),
    };
    format!("{scheme}://{user}{}", &rest[at..])
}

fn default_key_prefix() -> String {
    "laneway".into()
}

fn default_shared_timeout() -> Duration {
    Duration::from_millis(50)
}

fn default_sync_interval() -> Duration {
    Duration::from_millis(200)
}

/// A region calls start in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionConfig {
    /// The region's name (`us-east-1`).
    pub name: String,
    /// A geography this region belongs to besides those whose `[geographies]` entry lists it
    /// (for a region the built-in table does not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geography: Option<Geography>,
}

/// A geography: the regions its geographic inference profiles keep requests in, which are
/// also the regions that may call them. A region may be in several (Tokyo is in `jp` and in
/// `apac`); a request whose residency names a geography stays in its regions and profiles
/// whose regions it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeographyConfig {
    /// Its regions: where its geographic profiles keep requests, and which may call them.
    pub regions: Vec<String>,
}

/// The tier each SLO class asks for (a model without that tier gets standard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloTiers {
    /// The tier `interactive` calls ask for (default `priority`).
    pub interactive: ServiceTier,
    /// The tier `standard` calls ask for (default `standard`).
    pub standard: ServiceTier,
    /// The tier `background` calls ask for (default `flex`).
    pub background: ServiceTier,
    /// The tier `batch` calls sent on line ask for (default `flex`).
    pub batch: ServiceTier,
}

impl SloTiers {
    /// The tier for a class.
    pub fn for_class(&self, class: SloClass) -> ServiceTier {
        match class {
            SloClass::Interactive => self.interactive,
            SloClass::Standard => self.standard,
            SloClass::Background => self.background,
            SloClass::Batch => self.batch,
        }
    }
}

/// Price multipliers by tier and for global profiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricingConfig {
    /// Each service tier's price as a multiple of the standard price (`[pricing.tiers]`); every
    /// tier needs one.
    pub tiers: BTreeMap<ServiceTier, f64>,
    /// Multipliers by the scope of the target that serves a call (in-Region id, geographic or
    /// global profile), for models whose price sets none (`[pricing.scopes]`).
    #[serde(default)]
    pub scopes: ScopeMultipliers,
    /// US dollars per hour of each SageMaker instance type: what a self-hosted model costs
    /// (`laneway bench` turns it into cost per request at the measured throughput).
    #[serde(default)]
    pub instance_hourly: BTreeMap<String, f64>,
    /// Batch inference costs this fraction of the on-demand (standard) price.
    #[serde(default = "half")]
    pub batch: f64,
}

fn half() -> f64 {
    0.5
}

impl Default for PricingConfig {
    fn default() -> Self {
        Self {
            tiers: BTreeMap::from([
                (ServiceTier::Priority, 1.75),
                (ServiceTier::Standard, 1.0),
                (ServiceTier::Flex, 0.5),
                (ServiceTier::Reserved, 1.0),
            ]),
            scopes: ScopeMultipliers {
                global: 0.9,
                ..ScopeMultipliers::default()
            },
            instance_hourly: BTreeMap::new(),
            batch: 0.5,
        }
    }
}

impl PricingConfig {
    /// The multiplier of a tier.
    pub fn tier_multiplier(&self, tier: ServiceTier) -> f64 {
        // Validation guarantees every tier a multiplier.
        self.tiers.get(&tier).copied().unwrap_or(1.0)
    }

    /// What a model's base price is multiplied by at `tier` (`None`: no tier, as SageMaker)
    /// on a target with `profile`: the model's own multipliers where it sets them, else these.
    ///
    /// ```
    /// use laneway::{Config, ProfileScope, ServiceTier};
    /// let config = Config::default();
    /// let opus = config.models["anthropic.claude-opus-4-6-v1"].price();
    /// let global = config.pricing.factor(opus, Some(ServiceTier::Standard), Some(&ProfileScope::Global));
    /// let geo = config.pricing.factor(opus, Some(ServiceTier::Standard), config.profile_scope("us").as_ref());
    /// assert!((geo / global - 1.1).abs() < 1e-3); // in-Region and geographic: 10% above global
    /// ```
    pub fn factor(
        &self,
        price: &Price,
        tier: Option<ServiceTier>,
        profile: Option<&ProfileScope>,
    ) -> f64 {
        let tier_factor = tier.map_or(1.0, |t| {
            price
                .tiers
                .get(t)
                .unwrap_or_else(|| self.tier_multiplier(t))
        });
        tier_factor * price.scopes.unwrap_or(self.scopes).of(profile)
    }
}

/// How calls are routed, retried, failed over and hedged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// Most targets one call plans (1 disables failover).
    pub max_attempts: u32,
    /// Per-target circuit breakers.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Region-level outlier detection: regions that stall or fail are ejected as a whole.
    #[serde(default)]
    pub outlier: OutlierConfig,
    /// The share of extra load retries, failovers and hedges may add.
    #[serde(default)]
    pub budget: BudgetConfig,
    /// Retrying the same target when no other is left.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Hedging: of interactive calls with a TTFT target, and of standard calls once their first
    /// target's first-token times are known.
    #[serde(default)]
    pub hedge: HedgeConfig,
    /// Time limits: connect, first token, idle gaps and the overall deadline.
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    /// Sends non-streamed calls as streams (ConverseStream, InvokeEndpointWithResponseStream;
    /// same price), so that the first-token and idle limits catch a stalled attempt and a
    /// broken one fails over unseen. `false` sends Converse / InvokeEndpoint, bounded only by
    /// the answer limit (for containers that cannot stream).
    #[serde(default = "yes")]
    pub stream_generate: bool,
    /// TTFT assumed for a target not measured yet, when ordering by latency (milliseconds).
    #[serde(
        default = "default_prior_ttft",
        with = "crate::types::units::serde_millis"
    )]
    pub prior_ttft: Duration,
    /// Output tokens assumed for a call without `max_tokens`, for reservations and deadlines.
    #[serde(default = "default_output_estimate")]
    pub default_output_tokens: u32,
    /// How long a minute lasts for the per-minute ledgers (reservations and quotas): 60 s;
    /// shorter only against an emulator whose time is scaled. Limits are per such minute.
    #[serde(
        default = "one_minute",
        alias = "reserved_window",
        with = "crate::types::units::serde_millis"
    )]
    pub minute: Duration,
}

/// Retrying after every candidate of a call has failed: rounds over the plan's targets again,
/// as long as the call's deadline and the retry budget allow (never a fixed count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// The base of the exponential back-off between rounds (milliseconds): round `n` waits a
    /// random time in `[0, min(backoff * 2^n, max_backoff)]` ("full jitter").
    #[serde(
        default = "default_backoff",
        with = "crate::types::units::serde_millis"
    )]
    pub backoff: Duration,
    /// The cap of one back-off (milliseconds).
    #[serde(
        default = "default_max_backoff",
        with = "crate::types::units::serde_millis"
    )]
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured (milliseconds). A service asking for longer is not
    /// waited for: the call fails over, or fails at once saying so.
    #[serde(
        default = "default_max_retry_after",
        with = "crate::types::units::serde_millis"
    )]
    pub max_retry_after: Duration,
}

fn default_backoff() -> Duration {
    Duration::from_millis(100)
}

fn default_max_backoff() -> Duration {
    Duration::from_secs(5)
}

fn default_max_retry_after() -> Duration {
    Duration::from_secs(20)
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            backoff: default_backoff(),
            max_backoff: default_max_backoff(),
            max_retry_after: default_max_retry_after(),
        }
    }
}

/// Time limits of calls and attempts (`[routing.timeouts]`). Every call ends by its deadline:
/// attempts, back-off waits and hedges included.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    /// Opening a connection to a service (milliseconds).
    #[serde(
        default = "default_connect",
        with = "crate::types::units::serde_millis"
    )]
    pub connect: Duration,
    /// With a request's `ttft_target`, an attempt's first-token limit is this multiple of it
    /// (at least `min_first_token`) instead of its class's `first_token`.
    #[serde(default = "default_ttft_multiple")]
    pub ttft_target_multiple: f64,
    /// The shortest first-token limit derived from a `ttft_target` (milliseconds).
    #[serde(
        default = "default_min_first_token",
        with = "crate::types::units::serde_millis"
    )]
    pub min_first_token: Duration,
    /// The slowest generation a non-streamed answer is allowed: its limit is the first-token
    /// limit plus its output tokens (`max_tokens`, or `routing.default_output_tokens`) at this
    /// rate.
    #[serde(default = "default_min_tokens_per_second")]
    pub min_tokens_per_second: f64,
    /// The slowest reasoning a reasoning call is allowed: its first-token limit, whole-answer
    /// limit and (unless the request sets one) deadline grow by its reasoning tokens (the
    /// budget, or what its effort stands for) at this rate, since a model may reason silently
    /// before its first token.
    #[serde(default = "default_reasoning_tokens_per_second")]
    pub reasoning_tokens_per_second: f64,
    /// First-token and idle limits learnt from each target's own latency
    /// (`[routing.timeouts.learned]`).
    #[serde(default)]
    pub learned: LearnedLimits,
    /// Limits of class `interactive` (default: first token and idle 10 s, deadline 30 s).
    #[serde(default = "ClassTimeouts::interactive")]
    pub interactive: ClassTimeouts,
    /// Limits of class `standard` (default: first token and idle 30 s, deadline 120 s).
    #[serde(default = "ClassTimeouts::standard")]
    pub standard: ClassTimeouts,
    /// Limits of class `background` (default: first token and idle 60 s, deadline 600 s).
    #[serde(default = "ClassTimeouts::background")]
    pub background: ClassTimeouts,
    /// Requests of class `batch` sent on line (a small or urgent submission goes to flex).
    #[serde(default = "ClassTimeouts::background")]
    pub batch: ClassTimeouts,
}

/// Time limits learnt per target (`[routing.timeouts.learned]`): once a target (a region, id
/// and tier sent) has answered `min_samples` times, an attempt on it waits for its first token
/// at most `factor` times the `quantile` of its recent first-token times, each less the time
/// its new input took at `prefill_tokens_per_second`, plus the attempt's own input at that rate
/// (and a reasoning call's allowance); and between a stream's text or reasoning deltas at most
/// `factor` times that quantile of its streams' longest gaps. Never less than `floor`, never
/// more than the class's limit (the ceiling). A target that stalls then costs about a second,
/// not the class's ceiling. An attempt cut by a learnt limit counts as an observation at that
/// limit, so a target that really slowed down is given `factor` times longer after a few cuts
/// and is measured again, not cut for good. Tool input streams at its model's own pace: while
/// a tool-use block is open, the class's idle limit applies.
///
/// ```
/// let c = laneway::Config::from_toml_str("[routing.timeouts.learned]\nenabled = true\nfactor = 4.0\n").unwrap();
/// assert_eq!(c.routing.timeouts.learned.factor, 4.0);
/// assert!(c.routing.timeouts.learned.enabled);
/// assert!(laneway::Config::default().routing.timeouts.learned.enabled);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnedLimits {
    /// Whether limits are learnt per target at all (default: yes); off, the class's limits
    /// apply.
    pub enabled: bool,
    /// The quantile of the recent observations (0 to 1).
    pub quantile: f64,
    /// The limit is this multiple of the quantile (at least 1).
    pub factor: f64,
    /// The shortest learnt limit (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub floor: Duration,
    /// Observations of a target before its own limits apply (the class's until then).
    pub min_samples: u32,
    /// How fast a target is assumed to read new input before its first token (a conservative
    /// rate): observations are net of it, and each attempt's limit adds its input at it.
    pub prefill_tokens_per_second: f64,
}

impl Default for LearnedLimits {
    fn default() -> Self {
        Self {
            enabled: true,
            quantile: 0.99,
            factor: 3.0,
            floor: Duration::from_secs(1),
            min_samples: 20,
            prefill_tokens_per_second: 5000.0,
        }
    }
}

/// The time limits of one SLO class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassTimeouts {
    /// An attempt's first token (a streamed attempt) or first byte (milliseconds), when the
    /// request has no `ttft_target`.
    #[serde(with = "crate::types::units::serde_millis")]
    pub first_token: Duration,
    /// The longest gap between two events of a stream (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub idle: Duration,
    /// The whole call, every attempt and wait included, when the request has no
    /// `slo.deadline` (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub deadline: Duration,
}

impl ClassTimeouts {
    const fn secs(first_token: u64, idle: u64, deadline: u64) -> Self {
        Self {
            first_token: Duration::from_secs(first_token),
            idle: Duration::from_secs(idle),
            deadline: Duration::from_secs(deadline),
        }
    }
    fn interactive() -> Self {
        Self::secs(10, 10, 30)
    }
    fn standard() -> Self {
        Self::secs(30, 30, 120)
    }
    fn background() -> Self {
        Self::secs(60, 60, 600)
    }
}

fn default_connect() -> Duration {
    Duration::from_secs(3)
}

fn default_ttft_multiple() -> f64 {
    4.0
}

fn default_min_first_token() -> Duration {
    Duration::from_secs(1)
}

fn default_min_tokens_per_second() -> f64 {
    10.0
}

fn default_reasoning_tokens_per_second() -> f64 {
    50.0
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        Self {
            connect: default_connect(),
            ttft_target_multiple: default_ttft_multiple(),
            min_first_token: default_min_first_token(),
            min_tokens_per_second: default_min_tokens_per_second(),
            reasoning_tokens_per_second: default_reasoning_tokens_per_second(),
            learned: LearnedLimits::default(),
            interactive: ClassTimeouts::interactive(),
            standard: ClassTimeouts::standard(),
            background: ClassTimeouts::background(),
            batch: ClassTimeouts::background(),
        }
    }
}

impl TimeoutsConfig {
    /// The limits of one SLO class.
    pub fn for_class(&self, class: SloClass) -> &ClassTimeouts {
        match class {
            SloClass::Interactive => &self.interactive,
            SloClass::Standard => &self.standard,
            SloClass::Background => &self.background,
            SloClass::Batch => &self.batch,
        }
    }
}

/// Hedging: a second attempt when the first token is late.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HedgeConfig {
    /// Whether calls are hedged at all (default: yes).
    pub enabled: bool,
    /// The quantile of the first target's recent TTFTs after which an interactive call's
    /// hedge is sent (at most its TTFT target).
    pub quantile: f64,
    /// Never hedge sooner than this (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub min_delay: Duration,
    /// Hedge standard calls too: after `standard_quantile` of the first target's recent
    /// first-token times, once `routing.timeouts.learned.min_samples` of them are known, as
    /// gRPC hedges after a delay and "The Tail at Scale" after the 95th percentile. Each hedge
    /// is an extra attempt: the retry budget bounds them.
    pub standard: bool,
    /// The quantile of the first target's recent first-token times after which a call without
    /// a TTFT target is hedged (0 to 1; default 0.95).
    pub standard_quantile: f64,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            quantile: 0.9,
            min_delay: Duration::from_millis(50),
            standard: true,
            standard_quantile: 0.95,
        }
    }
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

/// An ordered list of variants of one model family, cheapest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyConfig {
    /// The variants' model keys, cheapest and weakest first (the last is the strongest).
    pub variants: Vec<String>,
    /// The variant used when nothing else decides; the strongest when unset.
    #[serde(default)]
    pub default_variant: Option<String>,
    /// Picks the variant per request with the complexity classifier; without it, requests
    /// get `default_variant`.
    #[serde(default)]
    pub router: Option<VariantRouterConfig>,
    /// Sends the family's requests to this Bedrock prompt router (Intelligent Prompt Routing,
    /// `arn:aws:bedrock:{region}:{account}:default-prompt-router/{name}`), which picks the
    /// model itself; the response reports which. If the router fails, the default variant's own
    /// targets follow. Exclusive with `router`.
    #[serde(default)]
    pub prompt_router: Option<String>,
}

/// How a family's variant is picked per request: the classifier's expected quality loss of
/// each cheaper variant against the strongest, and the thresholds it must stay within.
///
/// At most one of `threshold`, `thresholds` and `max_strong_share` is given. With none, the
/// thresholds are the model's own, chosen on held-out data so that the quality it measured
/// lost there is within `quality_loss_budget`
/// ([`Classifier::share_for_quality_loss`](crate::classifier::Classifier::share_for_quality_loss)):
///
/// ```toml
/// [families.nova]
/// variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
/// router = { model = "builtin" }                         # within quality_loss_budget (0.05)
/// # router = { model = "builtin", max_strong_share = 0.3 }  # or: a share to the strongest
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantRouterConfig {
    /// `builtin` (trained on RouteLLM's MMLU and GSM8K data) or a model file from
    /// `laneway router train` (relative to the configuration file).
    #[serde(default = "builtin_classifier")]
    pub model: String,
    /// One loss threshold for every cheaper variant.
    #[serde(default)]
    pub threshold: Option<f32>,
    /// A threshold per cheaper variant, cheapest first (`variants.len() - 1` of them).
    #[serde(default)]
    pub thresholds: Option<Vec<f32>>,
    /// Thresholds set so that about this share (0..=1) of the model's training prompts would go
    /// to the strongest variant, and the rest split evenly between the cheaper ones.
    #[serde(default)]
    pub max_strong_share: Option<f64>,
    /// What decides when the family's traffic is unlike the model's training data: `length`
    /// (the prompt-length rule on the same thresholds; the default), `default_variant`, or
    /// `none` (the model's scores regardless).
    #[serde(default)]
    pub fallback: crate::types::VariantFallback,
    /// The mean novelty (0..=1) above which the fallback decides; by default the model's
    /// own, chosen on held-out sources
    /// ([`ModelInfo::novelty_threshold`](crate::classifier::ModelInfo::novelty_threshold)),
    /// else 0.5.
    #[serde(default)]
    pub novelty_threshold: Option<f32>,
    /// How many recent prompts the mean novelty spans (an exponential moving average; 1
    /// decides per prompt).
    #[serde(default = "default_novelty_window")]
    pub novelty_window: u32,
    /// How much lower (0..=1) the share of good answers may be than always the strongest
    /// variant's: with no threshold given, the model's held-out measurements set the
    /// thresholds within it; in a difficulty band, feedback moves the band's prompts up when a
    /// cheaper variant's success rate falls further below the strongest's, and a cheaper
    /// variant this close to the strongest takes the band's prompts even above its threshold.
    #[serde(default = "default_quality_loss_budget")]
    pub quality_loss_budget: f32,
    /// The share of a band's calls (0..=0.5) that try another variant once feedback has
    /// arrived, so that the estimates keep up; 0 turns exploration off.
    #[serde(default = "default_explore_share")]
    pub explore_share: f32,
    /// After how many outcomes in a band an old outcome weighs half (at least 1): the
    /// estimates follow a variant that changes.
    #[serde(default = "default_feedback_half_life")]
    pub feedback_half_life: u32,
    /// Shadow mode: serve the family's default variant, and record per cell what routing
    /// would have chosen, the cost it would have saved and the feedback that arrives
    /// (`Router::shadow_report`, `laneway router report`), to see routing's saving and risk
    /// on your own traffic before turning it on.
    #[serde(default)]
    pub shadow: bool,
}

fn default_quality_loss_budget() -> f32 {
    0.05
}

fn default_explore_share() -> f32 {
    0.05
}

fn default_feedback_half_life() -> u32 {
    100
}

fn default_novelty_window() -> u32 {
    50
}

fn builtin_classifier() -> String {
    "builtin".into()
}

impl FamilyConfig {
    /// The variant used when nothing else decides.
    pub fn default_variant(&self) -> &str {
        self.default_variant
            .as_deref()
            .or(self.variants.last().map(String::as_str))
            .unwrap_or_default()
    }
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
    /// key [cachePoint] is not permitted").
    #[serde(default = "yes")]
    pub after_tool_result: bool,
    /// Most checkpoints a request may carry.
    #[serde(default = "four")]
    pub max_checkpoints: usize,
    /// Most tokens it caches, if limited.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

fn four() -> usize {
    4
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
    #[serde(default = "one")]
    pub instance_count: u32,
    /// Whether its container streams (InvokeEndpointWithResponseStream). `false`: every call
    /// is sent whole (InvokeEndpoint) under the whole-answer limit. Unset: streamed until the
    /// endpoint refuses to stream (a 404 for the operation, as a server without it answers),
    /// then sent whole from then on (remembered for the router's life).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<bool>,
}

fn one() -> u32 {
    1
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

impl Default for Config {
    /// The built-in configuration: known Bedrock models and families, three regions.
    fn default() -> Self {
        Self::from_toml_str("").expect("the built-in configuration is valid")
    }
}

impl Config {
    /// Parses TOML over the built-in defaults: tables merge key by key, other values replace.
    /// With `builtin_models = false` the built-in models and families are left out.
    pub fn from_toml_str(text: &str) -> Result<Self> {
        Self::from_toml_str_unloaded(text)
    }

    fn from_toml_str_unloaded(text: &str) -> Result<Self> {
        let user: toml::Table = toml::from_str(text).map_err(|e| {
            Error::config(
                "<toml>",
                e.message().to_string() + &location(text, e.span()),
            )
        })?;
        Self::over_defaults(user)
    }

    /// The configuration's TOML layout as a JSON object (what a Python dict or a JavaScript
    /// object gives), over the built-in defaults as [`Config::from_toml_str`] does. JSON has no
    /// dates and TOML no null: a null is an error naming its key.
    ///
    /// ```
    /// let table = serde_json::json!({ "routing": { "max_attempts": 2 } });
    /// let config = laneway::Config::from_json(table.as_object().unwrap()).unwrap();
    /// assert_eq!(config.routing.max_attempts, 2);
    /// ```
    pub fn from_json(table: &serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        let user = table
            .iter()
            .map(|(k, v)| Ok((k.clone(), toml_of(v, k)?)))
            .collect::<Result<toml::Table>>()?;
        Self::over_defaults(user)
    }

    fn over_defaults(mut user: toml::Table) -> Result<Self> {
        let mut merged: toml::Table = toml::from_str(DEFAULTS).expect("defaults.toml parses");
        if user.get("builtin_models").and_then(toml::Value::as_bool) == Some(false) {
            merged.remove("models");
            merged.remove("families");
            merged.remove("default_model");
        }
        replace_family_routing(&mut merged, &mut user);
        merge(&mut merged, user);
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
                let path = e.path().to_string();
                Error::config(
                    if path == "." { "<root>".into() } else { path },
                    e.into_inner().message().to_string(),
                )
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Reads a TOML file (see [`Config::from_toml_str`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config(path.display().to_string(), format!("cannot read: {e}")))?;
        let mut config = Self::from_toml_str_unloaded(&text).map_err(|e| match e {
            Error::Config { field, reason } if field == "<toml>" => {
                Error::config(path.display().to_string(), reason)
            }
            other => other,
        })?;
        config.base_dir = path.parent().map(Path::to_path_buf);
        Ok(config)
    }

    /// Whether calls may start in `region` (it is under `[[regions]]`).
    pub fn is_configured_region(&self, region: &str) -> bool {
        self.regions.iter().any(|r| r.name == region)
    }

    /// Whether `region` is configured or in a geography: a name a model may list.
    pub fn is_known_region(&self, region: &str) -> bool {
        self.is_configured_region(region)
            || self
                .geographies
                .values()
                .any(|g| g.regions.iter().any(|r| r == region))
    }

    /// Whether `region` belongs to `geography` (by its `[geographies]` entry or its own
    /// `[[regions]]` entry).
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// let jp = laneway::Geography::new("jp").unwrap();
    /// let apac = laneway::Geography::new("apac").unwrap();
    /// assert!(config.in_geography("ap-northeast-1", &jp) && config.in_geography("ap-northeast-1", &apac));
    /// assert!(!config.in_geography("us-east-1", &jp));
    /// ```
    pub fn in_geography(&self, region: &str, geography: &Geography) -> bool {
        self.geographies
            .get(geography)
            .is_some_and(|g| g.regions.iter().any(|r| r == region))
            || self
                .regions
                .iter()
                .any(|r| r.name == region && r.geography.as_ref() == Some(geography))
    }

    /// Whether every region of `inner` is in `outer`: a profile of `inner` keeps a request
    /// within `outer` (`jp` within `apac`).
    pub fn geography_within(&self, inner: &Geography, outer: &Geography) -> bool {
        if inner == outer {
            return true;
        }
        let mut regions = self.geography_regions(inner).peekable();
        regions.peek().is_some() && regions.all(|r| self.in_geography(r, outer))
    }

    /// Whether `target` keeps a request within `residency`: under a geography, a region of it
    /// and no profile, or a geographic profile whose regions it holds (`jp.` keeps a request
    /// within `apac`, `global.` keeps none); under a list of regions, one of them and no
    /// profile.
    ///
    /// ```
    /// use laneway::{Geography, Residency, Target};
    /// let config = laneway::Config::default();
    /// let eu = Residency::Geography(Geography::new("eu").unwrap());
    /// let frankfurt = Target::bedrock("eu-central-1", "amazon.nova-lite-v1:0", None);
    /// let virginia = Target::bedrock("us-east-1", "amazon.nova-lite-v1:0", None);
    /// assert!(config.keeps_within(&frankfurt, &eu));
    /// assert!(!config.keeps_within(&virginia, &eu));
    /// ```
    pub fn keeps_within(&self, target: &crate::types::Target, residency: &Residency) -> bool {
        match residency {
            Residency::Geography(g) => {
                self.in_geography(target.region(), g)
                    && match target.profile() {
                        None => true,
                        Some(p) => p
                            .geography()
                            .is_some_and(|inner| self.geography_within(inner, g)),
                    }
            }
            Residency::Regions(list) => {
                target.profile().is_none() && list.iter().any(|r| r == target.region())
            }
        }
    }

    /// The regions of a geography.
    pub fn geography_regions<'a>(&'a self, g: &'a Geography) -> impl Iterator<Item = &'a str> {
        let listed = self.geographies.get(g).map(|c| c.regions.as_slice());
        listed.into_iter().flatten().map(String::as_str).chain(
            self.regions
                .iter()
                .filter(move |r| r.geography.as_ref() == Some(g))
                .map(|r| r.name.as_str()),
        )
    }

    /// Whether a geography of this name is configured (under `[geographies]` or by a region).
    pub fn is_known_geography(&self, g: &Geography) -> bool {
        self.geographies.contains_key(g)
            || self.regions.iter().any(|r| r.geography.as_ref() == Some(g))
    }

    /// The profile scope an id prefix names: `global` or a configured geography.
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// assert_eq!(config.profile_scope("global"), Some(laneway::ProfileScope::Global));
    /// assert_eq!(config.profile_scope("jp").unwrap().prefix(), "jp");
    /// assert_eq!(config.profile_scope("anthropic"), None);
    /// ```
    pub fn profile_scope(&self, prefix: &str) -> Option<ProfileScope> {
        match prefix.parse::<ProfileScope>().ok()? {
            ProfileScope::Global => Some(ProfileScope::Global),
            ProfileScope::Geographic(g) => self
                .is_known_geography(&g)
                .then_some(ProfileScope::Geographic(g)),
        }
    }

    /// The configured geographies' names, comma-separated (for error messages).
    pub(crate) fn known_geographies(&self) -> String {
        let mut names: BTreeSet<&str> = self.geographies.keys().map(Geography::as_str).collect();
        names.extend(
            self.regions
                .iter()
                .filter_map(|r| r.geography.as_ref().map(Geography::as_str)),
        );
        names.into_iter().collect::<Vec<_>>().join(", ")
    }

    /// Checks that every reference resolves and every value is in range.
    pub fn validate(&self) -> Result<()> {
        if self.regions.is_empty() {
            return Err(Error::config("regions", "at least one region is needed"));
        }
        let mut seen = BTreeSet::new();
        for (i, r) in self.regions.iter().enumerate() {
            if !seen.insert(&r.name) {
                return Err(Error::config(
                    format!("regions[{i}].name"),
                    format!("region {:?} is listed twice", r.name),
                ));
            }
        }
        for (name, g) in &self.geographies {
            if g.regions.is_empty() {
                return Err(Error::config(
                    format!("geographies.{name}.regions"),
                    "a geography needs at least one region",
                ));
            }
        }
        self.validate_routing()?;
        if let Some(b) = &self.batch {
            if b.min_records == 0 || b.max_records_per_job < b.min_records {
                return Err(Error::config(
                    "batch.max_records_per_job",
                    format!(
                        "{} records at most a job, at least {} (min_records): a job must be able to hold its minimum, and a minimum of at least 1",
                        b.max_records_per_job, b.min_records
                    ),
                ));
            }
        }
        if let Some(sh) = &self.shared {
            if !(sh.redis_url.starts_with("redis://")
                || sh.redis_url.starts_with("rediss://")
                || sh.redis_url.starts_with("redis+unix://")
                || sh.redis_url.starts_with("unix://"))
            {
                return Err(Error::config(
                    "shared.redis_url",
                    format!(
                        "{:?} is not a redis:// or rediss:// URL",
                        redact_url(&sh.redis_url)
                    ),
                ));
            }
            if sh.key_prefix.is_empty() || sh.key_prefix.contains(['{', '}']) {
                return Err(Error::config(
                    "shared.key_prefix",
                    "must be non-empty and without braces (they are Redis Cluster hash tags)",
                ));
            }
            if sh.replicas == 0 {
                return Err(Error::config("shared.replicas", "must be at least 1"));
            }
            if sh.timeout.is_zero() || sh.sync_interval.is_zero() {
                return Err(Error::config(
                    "shared.timeout",
                    "timeout and sync_interval must be > 0 ms",
                ));
            }
        }
        let p = &self.pricing;
        if let Some(t) = ServiceTier::ALL.iter().find(|t| !p.tiers.contains_key(t)) {
            return Err(Error::config(
                format!("pricing.tiers.{t}"),
                "every service tier needs a price multiplier",
            ));
        }
        let tiers = p.tiers.iter().map(|(t, v)| (format!("tiers.{t}"), *v));
        let scopes = p.scopes.entries().map(|(k, v)| (format!("scopes.{k}"), v));
        for (name, v) in tiers.chain(scopes).chain([("batch".to_string(), p.batch)]) {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(
                    format!("pricing.{name}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        for (t, v) in &p.instance_hourly {
            if !(v.is_finite() && *v >= 0.0) {
                return Err(Error::config(
                    format!("pricing.instance_hourly.{t:?}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        for (id, m) in &self.models {
            self.validate_model(id, m)?;
        }
        for (name, f) in &self.families {
            let field = |k: &str| format!("families.{name}.{k}");
            if f.variants.is_empty() {
                return Err(Error::config(
                    field("variants"),
                    "must list at least one model",
                ));
            }
            for v in &f.variants {
                if !self.models.contains_key(v) {
                    return Err(Error::config(
                        field("variants"),
                        format!("unknown model {v:?}"),
                    ));
                }
            }
            if let Some(d) = &f.default_variant {
                if !f.variants.contains(d) {
                    return Err(Error::config(
                        field("default_variant"),
                        format!("{d:?} is not one of the family's variants"),
                    ));
                }
            }
            if self.models.contains_key(name) {
                return Err(Error::config(
                    format!("families.{name}"),
                    "a family and a model share this name",
                ));
            }
            if let Some(r) = &f.router {
                validate_router(r, f.variants.len(), &field("router"))?;
            }
            if let Some(arn) = &f.prompt_router {
                let Some((region, _)) = parse_prompt_router_arn(arn) else {
                    return Err(Error::config(
                        field("prompt_router"),
                        format!("{arn:?} is not a prompt router ARN (arn:aws:bedrock:REGION:ACCOUNT:default-prompt-router/NAME)"),
                    ));
                };
                if !self.is_configured_region(region) {
                    return Err(Error::config(
                        field("prompt_router"),
                        format!("region {region:?} of the ARN is not a configured region"),
                    ));
                }
                if f.router.is_some() {
                    return Err(Error::config(
                        field("prompt_router"),
                        "a family routes either with Laneway's classifier (router) or with a Bedrock prompt router, not both",
                    ));
                }
            }
        }
        if let Some(d) = &self.default_model {
            if !self.families.contains_key(d) && !self.models.contains_key(d) {
                return Err(Error::config(
                    "default_model",
                    format!("{d:?} is neither a configured family nor a model"),
                ));
            }
        }
        for (field, url) in [
            ("aws.endpoint_url", &self.aws.endpoint_url),
            ("aws.mantle_endpoint_url", &self.aws.mantle_endpoint_url),
        ] {
            if let Some(url) = url {
                let host = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"))
                    .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
                if host.is_none_or(str::is_empty) {
                    return Err(Error::config(
                        field,
                        format!("must be an http:// or https:// URL with a host, got {url:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_routing(&self) -> Result<()> {
        let r = &self.routing;
        let number = |field: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::config(
                    field,
                    format!("must be a finite number >= 0, got {v}"),
                ))
            }
        };
        if r.max_attempts == 0 {
            return Err(Error::config(
                "routing.max_attempts",
                "must be at least 1, got 0",
            ));
        }
        if r.breaker.failure_threshold == 0 {
            return Err(Error::config(
                "routing.breaker.failure_threshold",
                "must be at least 1, got 0",
            ));
        }
        let o = &r.outlier;
        if o.consecutive_failures == 0 {
            return Err(Error::config(
                "routing.outlier.consecutive_failures",
                "must be at least 1, got 0",
            ));
        }
        if !(0.0..=1.0).contains(&o.max_ejected_share) {
            return Err(Error::config(
                "routing.outlier.max_ejected_share",
                format!("must be between 0 and 1, got {}", o.max_ejected_share),
            ));
        }
        if o.base_ejection.is_zero() || o.max_ejection < o.base_ejection {
            return Err(Error::config(
                "routing.outlier.max_ejection",
                "base_ejection must be longer than 0 ms and max_ejection at least as long",
            ));
        }
        if !(0.0..=1.0).contains(&r.hedge.standard_quantile) {
            return Err(Error::config(
                "routing.hedge.standard_quantile",
                format!("must be between 0 and 1, got {}", r.hedge.standard_quantile),
            ));
        }
        number("routing.budget.ratio", r.budget.ratio)?;
        number("routing.budget.min_per_second", r.budget.min_per_second)?;
        if r.budget.window.is_zero() {
            return Err(Error::config(
                "routing.budget.window",
                "must be longer than 0 ms",
            ));
        }
        if !(0.0..=1.0).contains(&r.hedge.quantile) {
            return Err(Error::config(
                "routing.hedge.quantile",
                format!("must be between 0 and 1, got {}", r.hedge.quantile),
            ));
        }
        self.validate_timeouts()?;
        if r.minute.is_zero() {
            return Err(Error::config("routing.minute", "must be longer than 0 ms"));
        }
        number("prompt_cache.margin", self.prompt_cache.margin)?;
        number(
            "prompt_cache.task_reuse_prior",
            self.prompt_cache.task_reuse_prior,
        )
    }

    fn validate_timeouts(&self) -> Result<()> {
        let r = &self.routing;
        let t = &r.timeouts;
        let positive = |field: &str, d: Duration| {
            if d.is_zero() {
                Err(Error::config(field, "must be longer than 0 ms"))
            } else {
                Ok(())
            }
        };
        positive("routing.timeouts.connect", t.connect)?;
        for (class, c) in [
            ("interactive", &t.interactive),
            ("standard", &t.standard),
            ("background", &t.background),
            ("batch", &t.batch),
        ] {
            positive(
                &format!("routing.timeouts.{class}.first_token"),
                c.first_token,
            )?;
            positive(&format!("routing.timeouts.{class}.idle"), c.idle)?;
            positive(&format!("routing.timeouts.{class}.deadline"), c.deadline)?;
        }
        for (field, v) in [
            (
                "routing.timeouts.ttft_target_multiple",
                t.ttft_target_multiple,
            ),
            (
                "routing.timeouts.min_tokens_per_second",
                t.min_tokens_per_second,
            ),
            (
                "routing.timeouts.reasoning_tokens_per_second",
                t.reasoning_tokens_per_second,
            ),
            ("routing.timeouts.learned.factor", t.learned.factor),
            (
                "routing.timeouts.learned.prefill_tokens_per_second",
                t.learned.prefill_tokens_per_second,
            ),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::config(
                    field,
                    format!("must be a finite number > 0, got {v}"),
                ));
            }
        }
        let learned = &t.learned;
        if !(learned.quantile > 0.0 && learned.quantile <= 1.0) {
            return Err(Error::config(
                "routing.timeouts.learned.quantile",
                format!("must be in (0, 1], got {}", learned.quantile),
            ));
        }
        if learned.factor < 1.0 {
            return Err(Error::config(
                "routing.timeouts.learned.factor",
                format!("must be at least 1, got {}", learned.factor),
            ));
        }
        positive("routing.timeouts.learned.floor", learned.floor)?;
        if learned.min_samples == 0 {
            return Err(Error::config(
                "routing.timeouts.learned.min_samples",
                "must be at least 1",
            ));
        }
        if r.retry.max_backoff < r.retry.backoff {
            return Err(Error::config(
                "routing.retry.max_backoff",
                format!(
                    "must be at least routing.retry.backoff ({} ms), got {} ms",
                    r.retry.backoff.as_millis(),
                    r.retry.max_backoff.as_millis()
                ),
            ));
        }
        Ok(())
    }

    fn validate_model(&self, id: &str, m: &ModelConfig) -> Result<()> {
        let field = |k: &str| format!("models.\"{id}\".{k}");
        let price = m.price();
        for (k, v) in [
            ("input_per_1k", Some(price.input_per_1k)),
            ("output_per_1k", Some(price.output_per_1k)),
            ("cache_read_per_1k", price.cache_read_per_1k),
            ("cache_write_per_1k", price.cache_write_per_1k),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(Error::config(
                        field(&format!("price.{k}")),
                        format!("must be a finite number >= 0, got {v}"),
                    ));
                }
            }
        }
        let own = price.scopes.map(|s| s.entries()).into_iter().flatten();
        let own = own.map(|(k, v)| (format!("scopes.{k}"), Some(v))).chain(
            ServiceTier::ALL
                .iter()
                .map(|&t| (format!("tiers.{t}"), price.tiers.get(t))),
        );
        for (k, v) in own {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(Error::config(
                    field(&format!("price.{k}")),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        match m {
            ModelConfig::Bedrock(b) => self.validate_bedrock(b, &field),
            ModelConfig::Sagemaker(s) => self.validate_sagemaker(s, &field),
            ModelConfig::Other(o) => {
                if o.regions.is_empty() {
                    return Err(Error::config(
                        field("regions"),
                        format!(
                            "a model of provider {:?} needs at least one region (any name)",
                            o.provider.as_str()
                        ),
                    ));
                }
                Ok(())
            }
        }
    }

    fn validate_bedrock(&self, m: &BedrockModel, field: &dyn Fn(&str) -> String) -> Result<()> {
        if m.regions.is_empty() {
            return Err(Error::config(
                field("regions"),
                "a Bedrock model needs at least one region",
            ));
        }
        if let Some(r) = m.regions.iter().find(|r| !self.is_known_region(r)) {
            return Err(Error::config(
                field("regions"),
                format!("region {r:?} is neither under [[regions]] nor in a [geographies] entry"),
            ));
        }
        for (i, p) in m.profiles.iter().enumerate() {
            if let Some(g) = p.geography().filter(|g| !self.is_known_geography(g)) {
                return Err(Error::config(
                    field(&format!("profiles[{i}]")),
                    format!(
                        "{g:?} is not a configured geography (configured: {}; add it under [geographies])",
                        self.known_geographies()
                    ),
                ));
            }
        }
        if m.tiers.is_empty() {
            return Err(Error::config(
                field("tiers"),
                "must list at least one service tier",
            ));
        }
        if let Some(r) = m
            .in_region
            .iter()
            .flatten()
            .find(|r| !m.regions.contains(r))
        {
            return Err(Error::config(
                field("in_region"),
                format!("region {r:?} is not among the model's regions"),
            ));
        }
        if m.requires_profile && m.profiles.is_empty() {
            return Err(Error::config(
                field("requires_profile"),
                "is true but the model lists no profiles",
            ));
        }
        if m.reserved.is_some() && !m.tiers.contains(&ServiceTier::Reserved) {
            return Err(Error::config(
                field("reserved"),
                "the model has a reservation but `reserved` is not among its tiers",
            ));
        }
        for (i, p) in m.application_profiles.iter().enumerate() {
            let at = field(&format!("application_profiles[{i}].arn"));
            match p.region() {
                None => {
                    return Err(Error::config(
                        at,
                        format!(
                            "{:?} is not an application inference profile ARN \
                             (arn:aws:bedrock:REGION:ACCOUNT:application-inference-profile/ID)",
                            p.arn
                        ),
                    ))
                }
                Some(r) if !self.is_configured_region(r) => {
                    return Err(Error::config(
                        at,
                        format!("region {r:?} is not among the configured regions"),
                    ))
                }
                Some(_) => {}
            }
        }
        if m.prompt_cache.as_ref().is_some_and(|c| c.ttls.is_empty()) {
            return Err(Error::config(
                field("prompt_cache.ttls"),
                "must list at least one TTL",
            ));
        }
        Ok(())
    }

    fn validate_sagemaker(&self, m: &SagemakerModel, field: &dyn Fn(&str) -> String) -> Result<()> {
        if m.endpoints.is_empty() {
            return Err(Error::config(
                field("endpoints"),
                "a SageMaker model needs at least one endpoint",
            ));
        }
        for (i, e) in m.endpoints.iter().enumerate() {
            let at = |k: &str| field(&format!("endpoints[{i}].{k}"));
            if e.name.is_empty() {
                return Err(Error::config(at("name"), "must not be empty"));
            }
            if !self.is_configured_region(&e.region) {
                return Err(Error::config(
                    at("region"),
                    format!("region {:?} is not among the configured regions", e.region),
                ));
            }
            if e.instance_count == 0 {
                return Err(Error::config(at("instance_count"), "must be at least 1"));
            }
            if let Some(t) = &e.instance_type {
                if !self.pricing.instance_hourly.contains_key(t) {
                    return Err(Error::config(
                        at("instance_type"),
                        format!("{t:?} has no price: add it under [pricing.instance_hourly]"),
                    ));
                }
            }
        }
        if let Some(f) = &m.fallback_family {
            let bedrock_family = self.families.get(f).is_some_and(|fam| {
                fam.variants
                    .iter()
                    .all(|v| matches!(self.models.get(v), Some(ModelConfig::Bedrock(_))))
            });
            if !bedrock_family {
                return Err(Error::config(
                    field("fallback_family"),
                    format!("{f:?} is not a configured family of Bedrock models"),
                ));
            }
        }
        Ok(())
    }
}

fn validate_router(r: &VariantRouterConfig, variants: usize, field: &str) -> Result<()> {
    let given = [
        r.threshold.is_some(),
        r.thresholds.is_some(),
        r.max_strong_share.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given > 1 {
        return Err(Error::config(
            field,
            "give at most one of threshold, thresholds and max_strong_share",
        ));
    }
    if variants < 2 {
        return Err(Error::config(
            field,
            "routing needs a family of two variants or more",
        ));
    }
    if let Some(t) = r
        .novelty_threshold
        .filter(|t| !(t.is_finite() && (0.0..=1.0).contains(t)))
    {
        return Err(Error::config(
            format!("{field}.novelty_threshold"),
            format!("{t} is outside 0..=1"),
        ));
    }
    if r.novelty_window == 0 {
        return Err(Error::config(
            format!("{field}.novelty_window"),
            "the window spans at least one prompt",
        ));
    }
    for (name, value, range) in [
        ("quality_loss_budget", r.quality_loss_budget, 0.0..=1.0),
        ("explore_share", r.explore_share, 0.0..=0.5),
    ] {
        if !(value.is_finite() && range.contains(&value)) {
            return Err(Error::config(
                format!("{field}.{name}"),
                format!("{value} is outside {}..={}", range.start(), range.end()),
            ));
        }
    }
    if r.feedback_half_life == 0 {
        return Err(Error::config(
            format!("{field}.feedback_half_life"),
            "the half-life spans at least one outcome",
        ));
    }
    let in_range = |t: f32| t.is_finite() && (-1.0..=1.0).contains(&t);
    if let Some(t) = r.threshold {
        if !in_range(t) {
            return Err(Error::config(
                format!("{field}.threshold"),
                format!("{t} is outside -1..=1"),
            ));
        }
    }
    if let Some(ts) = &r.thresholds {
        if ts.len() != variants - 1 {
            return Err(Error::config(
                format!("{field}.thresholds"),
                format!(
                    "{} thresholds for {} cheaper variants",
                    ts.len(),
                    variants - 1
                ),
            ));
        }
        if let Some(t) = ts.iter().find(|t| !in_range(**t)) {
            return Err(Error::config(
                format!("{field}.thresholds"),
                format!("{t} is outside -1..=1"),
            ));
        }
    }
    if let Some(s) = r.max_strong_share {
        if !(0.0..=1.0).contains(&s) {
            return Err(Error::config(
                format!("{field}.max_strong_share"),
                format!("{s} is outside 0..=1"),
            ));
        }
    }
    Ok(())
}

/// A JSON value as TOML; `path` names it in the error for a null.
fn toml_of(value: &serde_json::Value, path: &str) -> Result<toml::Value> {
    use serde_json::Value as J;
    Ok(match value {
        J::Null => {
            return Err(Error::config(
                path,
                "null is not a value (leave the key out for its default)",
            ))
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| toml_of(v, &format!("{path}[{i}]")))
                .collect::<Result<_>>()?,
        ),
        J::Object(map) => toml::Value::Table(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), toml_of(v, &format!("{path}.{k}"))?)))
                .collect::<Result<_>>()?,
        ),
    })
}

/// A family's routing is replaced whole, not merged key by key: a user's `router` (or
/// `prompt_router`) drops the default's `router` and `prompt_router`, since merging
/// `{ threshold = 0.2 }` into a default `{ max_strong_share = 0.3 }` would give a router with
/// both, and a prompt router is exclusive with a classifier. `router = false` turns a default
/// router off.
fn replace_family_routing(defaults: &mut toml::Table, user: &mut toml::Table) {
    let Some(toml::Value::Table(user_families)) = user.get_mut("families") else {
        return;
    };
    for (name, family) in user_families.iter_mut() {
        let toml::Value::Table(family) = family else {
            continue;
        };
        if !family.contains_key("router") && !family.contains_key("prompt_router") {
            continue;
        }
        if let Some(toml::Value::Table(default)) = defaults
            .get_mut("families")
            .and_then(|f| f.get_mut(name.as_str()))
        {
            default.remove("router");
            default.remove("prompt_router");
        }
        if family.get("router") == Some(&toml::Value::Boolean(false)) {
            family.remove("router");
        }
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(s) => {
            let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

fn default_prior_ttft() -> Duration {
    Duration::from_secs(1)
}

fn default_output_estimate() -> u32 {
    512
}

fn one_minute() -> Duration {
    Duration::from_secs(60)
}

fn yes() -> bool {
    true
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config_error(text: &str) -> (String, String) {
        match Config::from_toml_str(text).unwrap_err() {
            Error::Config { field, reason } => (field, reason),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_load_and_validate() {
        let c = Config::default();
        assert_eq!(c.families["nova"].variants.len(), 3);
        assert_eq!(c.slo_tiers.interactive, ServiceTier::Priority);
        assert!(c.models["anthropic.claude-sonnet-4-5-20250929-v1:0"].requires_profile());
    }

    #[test]
    fn malformed_toml_gives_the_line() {
        let (field, reason) = config_error("default_model = \n");
        assert_eq!(field, "<toml>");
        assert!(reason.contains("line 1"), "{reason}");
    }

    #[test]
    fn wrong_types_name_the_path() {
        let (field, reason) = config_error("[routing]\nmax_attempts = \"three\"\n");
        assert_eq!(field, "routing.max_attempts");
        assert!(
            reason.contains("three") || reason.contains("integer"),
            "{reason}"
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let (field, reason) = config_error("[routing]\nmax_attempt = 2\n");
        assert!(field.starts_with("routing"), "{field}");
        assert!(reason.contains("max_attempt"), "{reason}");
    }

    #[test]
    fn contradictions_are_named() {
        let (field, reason) = config_error(
            "[models.\"x\"]\nprovider = \"bedrock\"\nregions = [\"us-east-1\"]\nrequires_profile = true\nprice = { input_per_1k = 1.0, output_per_1k = 1.0 }\n",
        );
        assert_eq!(field, "models.\"x\".requires_profile");
        assert!(reason.contains("no profiles"), "{reason}");

        let (field, reason) =
            config_error("[families.nova]\ndefault_variant = \"amazon.nova-lite-v2:0\"\n");
        assert_eq!(field, "families.nova.default_variant");
        assert!(reason.contains("amazon.nova-lite-v2:0"), "{reason}");

        let (field, _) =
            config_error("[models.\"amazon.nova-lite-v1:0\".price]\ninput_per_1k = -1.0\n");
        assert_eq!(field, "models.\"amazon.nova-lite-v1:0\".price.input_per_1k");

        let (field, reason) =
            config_error("[models.\"amazon.nova-lite-v1:0\"]\nregions = [\"mars-north-1\"]\n");
        assert_eq!(field, "models.\"amazon.nova-lite-v1:0\".regions");
        assert!(reason.contains("mars-north-1"), "{reason}");

        let (field, _) = config_error("default_model = \"nope\"\n");
        assert_eq!(field, "default_model");

        let (field, _) = config_error("[routing]\nmax_attempts = 0\n");
        assert_eq!(field, "routing.max_attempts");
    }

    #[test]
    fn routing_and_cache_policy_values_are_checked() {
        let (field, _) =
            config_error("[routing.budget]\nratio = -1.0\nmin_per_second = 1.0\nwindow = 1000.0\n");
        assert_eq!(field, "routing.budget.ratio");
        let (field, _) =
            config_error("[routing.hedge]\nenabled = true\nquantile = 1.5\nmin_delay = 10.0\n");
        assert_eq!(field, "routing.hedge.quantile");
        let (field, _) =
            config_error("[prompt_cache]\nenabled = true\nmargin = -0.1\ntask_reuse_prior = 1.0\n");
        assert_eq!(field, "prompt_cache.margin");
        let (field, reason) = config_error(
            "[models.m]\nprovider = \"sagemaker\"\nfallback_family = \"nope\"\nendpoints = [{ name = \"e\", region = \"us-east-1\", format = \"tgi\" }]\nprice = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        );
        assert_eq!(field, "models.\"m\".fallback_family");
        assert!(reason.contains("nope"), "{reason}");
    }

    #[test]
    fn self_hosted_instances_are_priced_by_the_hour() {
        let endpoint = |extra: &str| {
            format!("[models.m]\nprovider = \"sagemaker\"\nendpoints = [{{ name = \"e\", region = \"us-east-1\", format = \"tgi\"{extra} }}]\nprice = {{ input_per_1k = 0.1, output_per_1k = 0.2 }}\n")
        };
        let c = Config::from_toml_str(&endpoint(
            ", instance_type = \"ml.g5.12xlarge\", instance_count = 2",
        ))
        .unwrap();
        let e = &c.models["m"].endpoints()[0];
        assert_eq!(e.hourly_usd(&c.pricing), Some(2.0 * 7.09));
        let (field, reason) = config_error(&endpoint(", instance_type = \"ml.x9.huge\""));
        assert_eq!(field, "models.\"m\".endpoints[0].instance_type");
        assert!(reason.contains("instance_hourly"), "{reason}");
        let (field, _) = config_error(&endpoint(", instance_count = 0"));
        assert_eq!(field, "models.\"m\".endpoints[0].instance_count");
        let (field, _) = config_error("[pricing.instance_hourly]\n\"ml.g5.xlarge\" = -1.0\n");
        assert!(field.starts_with("pricing.instance_hourly"), "{field}");
    }

    #[test]
    fn the_redis_password_never_shows() {
        let secret = "s3cret-Pa55";
        let c = Config::from_toml_str(&format!(
            "[shared]\nredis_url = \"redis://app:{secret}@127.0.0.1:6379/0\"\n"
        ))
        .unwrap();
        let debug = format!("{c:?} {c:#?}");
        assert!(!debug.contains(secret), "{debug}");
        assert!(debug.contains("redis://app:***@127.0.0.1:6379/0"));
        let (_, why) = config_error(&format!(
            "[shared]\nredis_url = \"http://:{secret}@127.0.0.1:6379\"\n"
        ));
        assert!(!why.contains(secret), "{why}");
        assert!(why.contains("http://:***@127.0.0.1:6379"), "{why}");
    }

    #[test]
    fn builtin_models_can_be_left_out() {
        let c = Config::from_toml_str(
            "builtin_models = false\n[models.m]\nprovider = \"sagemaker\"\nendpoints = [{ name = \"e\", region = \"us-east-1\", format = \"tgi\" }]\nprice = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        )
        .unwrap();
        assert_eq!(c.models.len(), 1);
        assert!(c.families.is_empty());
        assert!(c.default_model.is_none());
    }
}
