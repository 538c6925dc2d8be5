//! The sections of the configuration that the live state, the planner and the batch lane act
//! on: breakers, the retry budget, reservations, prompt-cache placement and the batch lane.
//! Data only: the modules that act on them import them from here.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::types::{ProfileScope, ServiceTier};

/// When a breaker opens and how it recovers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failures (of kinds that fail over) that open the breaker.
    pub failure_threshold: u32,
    /// How long an open breaker keeps traffic away before probing.
    #[serde(with = "crate::types::units::serde_millis")]
    pub open_for: Duration,
    /// Requests let through at once while half-open.
    pub half_open_probes: u32,
    /// How long a target that refused access (AccessDeniedException: a model not enabled in
    /// that region) is kept away from at once, before one probe asks again.
    #[serde(with = "crate::types::units::serde_millis")]
    pub access_denied_for: Duration,
}

/// Region-level outlier detection (`[routing.outlier]`), as Envoy's for hosts: a region whose
/// attempts stall, reset, time out or meet server errors `consecutive_failures` times in a row
/// (with no success between) is ejected as a whole, every model, profile and tier called
/// there, for `base_ejection` times the number of its ejections in a row (at most
/// `max_ejection`); never more than `max_ejected_share` of the regions the router has called
/// (at least one of two or more, never all). Throttles, refused access and bad requests do not
/// count: they say nothing of the region's health.
///
/// ```
/// let c = laneway::Config::from_toml_str("[routing.outlier]\nconsecutive_failures = 5\n").unwrap();
/// assert_eq!(c.routing.outlier.consecutive_failures, 5);
/// assert!(c.routing.outlier.enabled);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierConfig {
    /// Whether regions are ejected at all (default: yes).
    pub enabled: bool,
    /// Failures in a row that eject a region.
    pub consecutive_failures: u32,
    /// The first ejection's length (milliseconds); each ejection in a row lasts one more.
    #[serde(with = "crate::types::units::serde_millis")]
    pub base_ejection: Duration,
    /// The longest ejection (milliseconds); a region that stayed in this long since its last
    /// ejection starts again from `base_ejection`.
    #[serde(with = "crate::types::units::serde_millis")]
    pub max_ejection: Duration,
    /// The largest share of regions ejected at once (0 to 1).
    pub max_ejected_share: f64,
}

/// How much extra load retries, failovers and hedges may add.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Extra attempts allowed per call, on average over the window (0.2 = 20% more load).
    pub ratio: f64,
    /// Extra attempts allowed per second however low the traffic, so that a quiet service can
    /// still fail over and retry (a minimum over the window, not added to `ratio`).
    pub min_per_second: f64,
    /// The window over which calls and extra attempts are counted.
    #[serde(with = "crate::types::units::serde_millis")]
    pub window: Duration,
}

/// A model's reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationConfig {
    /// Reserved input tokens per minute (cache writes count toward it).
    pub input_tokens_per_minute: u64,
    /// Reserved output tokens per minute.
    pub output_tokens_per_minute: u64,
}

/// A Bedrock model's on-demand quotas, per region: `On-demand InvokeModel tokens (requests)
/// per minute` for its in-region id and `Cross-Region InvokeModel tokens (requests) per
/// minute` for its inference profiles, as Service Quotas lists them for your account. A limit
/// left out is not tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaConfig {
    /// Tokens per minute for its in-region id; `None`: not tracked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    /// Requests per minute for its in-region id; `None`: not tracked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    /// Tokens per minute for its inference profiles; `None`: not tracked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_tokens_per_minute: Option<u64>,
    /// Requests per minute for its inference profiles; `None`: not tracked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_requests_per_minute: Option<u64>,
    /// Concurrent requests each of its targets (a region's in-region id or profile) takes:
    /// the router keeps its attempts within it from the first call, and queues beyond it.
    /// `None`: learnt from the targets' throttles (`[routing.concurrency]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
}

impl QuotaConfig {
    /// The (requests, tokens) per minute of one target: its profile's quota or the in-region
    /// one; `None` when neither limit is set for it.
    pub fn limits(&self, profile: bool) -> Option<(u64, u64)> {
        let (rpm, tpm) = if profile {
            (
                self.profile_requests_per_minute,
                self.profile_tokens_per_minute,
            )
        } else {
            (self.requests_per_minute, self.tokens_per_minute)
        };
        (rpm.is_some() || tpm.is_some()).then(|| (rpm.unwrap_or(u64::MAX), tpm.unwrap_or(u64::MAX)))
    }
}

/// An application inference profile: an ARN a team creates over a model or a system profile
/// to carry cost-allocation tags, billed and throttled as what it wraps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationProfile {
    /// `arn:aws:bedrock:{region}:{account}:application-inference-profile/{id}`.
    pub arn: String,
    /// The system profile it wraps (`us`, `eu`, `apac`, `global`), when it wraps one rather
    /// than the in-region model: its residency and price follow that profile.
    #[serde(default)]
    pub wraps: Option<ProfileScope>,
}

impl ApplicationProfile {
    /// The region in its ARN.
    ///
    /// ```
    /// let p = laneway::config::ApplicationProfile {
    ///     arn: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3".into(),
    ///     wraps: None,
    /// };
    /// assert_eq!(p.region(), Some("us-east-1"));
    /// ```
    pub fn region(&self) -> Option<&str> {
        let arn = crate::types::Arn::parse_bedrock(&self.arn)?;
        let id = arn.resource_id("application-inference-profile")?;
        (!arn.account.is_empty() && !id.contains('/')).then_some(arn.region)
    }
}

/// How placement behaves; `[prompt_cache]` in configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePolicy {
    /// Automatic placement on (requests may still opt out, or pin their own).
    pub enabled: bool,
    /// Share above a model's minimum that an estimated prefix must reach.
    pub margin: f64,
    /// Reads expected of a prefix not seen yet when the call has a `task_id`.
    pub task_reuse_prior: f64,
}

/// `[batch]`: where and how batch jobs run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// The S3 bucket for job inputs and outputs.
    pub bucket: String,
    /// Key prefix under the bucket.
    pub prefix: String,
    /// The IAM service role the jobs run under.
    pub role_arn: String,
    /// Most records in one job; larger submissions are split.
    pub max_records_per_job: usize,
    /// Fewest records a job may have (the service's minimum).
    pub min_records: usize,
    /// How often `wait_batch` asks for the jobs' status (ms).
    #[serde(with = "crate::types::units::serde_millis")]
    pub poll_interval: Duration,
    /// How long a batch may take; a request with a sooner deadline goes to flex (ms).
    #[serde(with = "crate::types::units::serde_millis")]
    pub turnaround: Duration,
}

/// Per-model prices in US dollars per 1,000 tokens, at the standard tier in-region, and the
/// explicit prices AWS lists for it where they are known (`rows`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens neither read from nor written to the cache.
    pub input_per_1k: f64,
    /// Output tokens.
    pub output_per_1k: f64,
    /// Reading cached input; defaults to the input price (no discount) when not configured.
    #[serde(default)]
    pub cache_read_per_1k: Option<f64>,
    /// Writing input to the cache with the default 5-minute TTL; defaults to the input price
    /// (no premium).
    #[serde(default)]
    pub cache_write_per_1k: Option<f64>,
    /// Writing input to the cache with the 1-hour TTL; defaults to twice the input price.
    #[serde(default)]
    pub cache_write_1h_per_1k: Option<f64>,
    /// This model's multipliers by the scope of the target that serves it, replacing
    /// `[pricing.scopes]` for it (Claude 4.5 and later: in-Region and geographic profiles cost
    /// 10% more than the global profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<ScopeMultipliers>,
    /// This model's multipliers by service tier, each over `[pricing.tiers]`'s.
    #[serde(default, skip_serializing_if = "TierMultipliers::is_empty")]
    pub tiers: TierMultipliers,
    /// The base price's long-context band, when the model has one (scaled by the tier and
    /// scope multipliers, as the base price is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<super::price_rows::LongContextBand>,
    /// Explicit prices by region, scope and tier (`[[models."id".price.rows]]`), over the
    /// base price and its multipliers where one matches a call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<super::price_rows::PriceRow>,
    /// Your discount on this model (private pricing), a fraction of every price: over
    /// `[pricing] discount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discount: Option<f64>,
    /// The model's name in AWS's price list ("Nova 2.0 Lite"), where its id without vendor,
    /// date and version does not say it (`laneway catalog prices` matches names exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_name: Option<String>,
    /// What a month of reserved capacity costs (the reserved tier is sold as tokens per
    /// minute for a 1- or 3-month term, at a fixed price per 1,000 TPM): what `advise` weighs
    /// a reservation's break-even utilisation against. Unset, reservations are not assessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<ReservedPrice>,
}

/// The monthly price of reserved capacity, per 1,000 tokens per minute, input and output
/// reserved apart (cache writes count toward the input).
///
/// ```
/// let c = laneway::Config::from_toml_str(r#"
///     [models."amazon.nova-lite-v1:0".price.reserved]
///     input_per_1k_tpm_month = 2.5
///     output_per_1k_tpm_month = 10.0
/// "#).unwrap();
/// let r = c.models["amazon.nova-lite-v1:0"].price().reserved.unwrap();
/// assert_eq!(r.input_per_1k_tpm_month, 2.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservedPrice {
    /// A month of 1,000 input tokens per minute, USD.
    pub input_per_1k_tpm_month: f64,
    /// A month of 1,000 output tokens per minute, USD.
    pub output_per_1k_tpm_month: f64,
}

/// Price multipliers by the scope of the target that serves a call: the model's in-Region id,
/// a geographic inference profile (`us.`, `jp.`, ...) or the global one. A key left out of
/// `[pricing.scopes]` keeps `defaults.toml`'s; one left out of a model's `price.scopes` is 1
/// (`[templates.model_price_scopes]`).
///
/// ```
/// let config = laneway::Config::from_toml_str("[pricing.scopes]\nglobal = 0.9\n").unwrap();
/// assert_eq!((config.pricing.scopes.in_region, config.pricing.scopes.global), (1.0, 0.9));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeMultipliers {
    /// Targets that call the model's in-Region id.
    pub in_region: f64,
    /// Geographic inference profiles (`us.`, `jp.`, ...).
    pub geographic: f64,
    /// The global inference profile.
    pub global: f64,
}

impl Default for ScopeMultipliers {
    /// Every scope at the price as it is (the identity, not a default of the configuration:
    /// `[pricing.scopes]` is in `defaults.toml`).
    fn default() -> Self {
        Self {
            in_region: 1.0,
            geographic: 1.0,
            global: 1.0,
        }
    }
}

impl ScopeMultipliers {
    /// The multiplier of a target with this profile (`None`: the in-Region id).
    pub fn of(&self, profile: Option<&ProfileScope>) -> f64 {
        match profile {
            None => self.in_region,
            Some(ProfileScope::Geographic(_)) => self.geographic,
            Some(ProfileScope::Global) => self.global,
        }
    }

    pub(crate) fn entries(&self) -> [(&'static str, f64); 3] {
        [
            ("in_region", self.in_region),
            ("geographic", self.geographic),
            ("global", self.global),
        ]
    }
}

/// One model's tier multipliers, by tier (`price.tiers = { flex = 0.6 }`); a tier left out
/// takes `[pricing.tiers]`'s.
///
/// ```
/// use laneway::{config::TierMultipliers, ServiceTier};
/// let own: TierMultipliers = toml::from_str("flex = 0.6").unwrap();
/// assert_eq!(own.get(ServiceTier::FLEX), Some(0.6));
/// assert_eq!(own.get(ServiceTier::PRIORITY), None);
/// assert_eq!(TierMultipliers::default().with(ServiceTier::FLEX, 0.6), own);
/// assert!(toml::from_str::<TierMultipliers>("turbo = 2.0").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TierMultipliers(BTreeMap<ServiceTier, f64>);

impl TierMultipliers {
    /// The multiplier this model sets for `tier`, if any.
    pub fn get(&self, tier: ServiceTier) -> Option<f64> {
        self.0.get(&tier).copied()
    }

    /// These multipliers with `tier`'s set to `multiplier`.
    pub fn with(mut self, tier: ServiceTier, multiplier: f64) -> Self {
        self.0.insert(tier, multiplier);
        self
    }

    /// The tiers this model sets, with their multipliers.
    pub fn iter(&self) -> impl Iterator<Item = (ServiceTier, f64)> + '_ {
        self.0.iter().map(|(t, m)| (*t, *m))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
