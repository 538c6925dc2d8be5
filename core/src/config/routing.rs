//! `[routing]`: attempts, retries, time limits and hedging; and `[slo_tiers]`, the tier each SLO class asks for.

use super::*;

/// How calls are routed, retried, failed over and hedged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// Most targets one call plans (1 disables failover).
    pub max_attempts: u32,
    /// Per-target circuit breakers.
    pub breaker: BreakerConfig,
    /// Region-level outlier detection: regions that stall or fail are ejected as a whole.
    pub outlier: OutlierConfig,
    /// The share of extra load retries, failovers and hedges may add.
    pub budget: BudgetConfig,
    /// Retrying the same target when no other is left.
    pub retry: RetryConfig,
    /// Hedging: of interactive calls with a TTFT target, and of standard calls once their first
    /// target's first-token times are known.
    pub hedge: HedgeConfig,
    /// Time limits: connect, first token, idle gaps and the overall deadline.
    pub timeouts: TimeoutsConfig,
    /// Sends non-streamed calls as streams (ConverseStream, InvokeEndpointWithResponseStream;
    /// same price), so that the first-token and idle limits catch a stalled attempt and a
    /// broken one fails over unseen. `false` sends Converse / InvokeEndpoint, bounded only by
    /// the answer limit (for containers that cannot stream).
    pub stream_generate: bool,
    /// TTFT assumed for a target not measured yet, when ordering by latency (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub prior_ttft: Duration,
    /// Output tokens assumed for a call without `max_tokens`, for reservations and deadlines.
    pub default_output_tokens: u32,
    /// How long a minute lasts for the per-minute ledgers (reservations and quotas): 60 s;
    /// shorter only against an emulator whose time is scaled. Limits are per such minute.
    #[serde(with = "crate::types::units::serde_millis")]
    pub minute: Duration,
}

/// Retrying after every candidate of a call has failed: rounds over the plan's targets again,
/// as long as the call's deadline and the retry budget allow (never a fixed count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// The base of the exponential back-off between rounds (milliseconds): round `n` waits a
    /// random time in `[0, min(backoff * 2^n, max_backoff)]` ("full jitter").
    #[serde(with = "crate::types::units::serde_millis")]
    pub backoff: Duration,
    /// The cap of one back-off (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured (milliseconds). A service asking for longer is not
    /// waited for: the call fails over, or fails at once saying so.
    #[serde(with = "crate::types::units::serde_millis")]
    pub max_retry_after: Duration,
}

/// Time limits of calls and attempts (`[routing.timeouts]`). Every call ends by its deadline:
/// attempts, back-off waits and hedges included.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    /// Opening a connection to a service (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub connect: Duration,
    /// With a request's `ttft_target`, an attempt's first-token limit is this multiple of it
    /// (at least `min_first_token`) instead of its class's `first_token`.
    pub ttft_target_multiple: f64,
    /// The shortest first-token limit derived from a `ttft_target` (milliseconds).
    #[serde(with = "crate::types::units::serde_millis")]
    pub min_first_token: Duration,
    /// The slowest generation a non-streamed answer is allowed: its limit is the first-token
    /// limit plus its output tokens (`max_tokens`, or `routing.default_output_tokens`) at this
    /// rate.
    pub min_tokens_per_second: f64,
    /// The slowest reasoning a reasoning call is allowed: its first-token limit, whole-answer
    /// limit and (unless the request sets one) deadline grow by its reasoning tokens (the
    /// budget, or what its effort stands for) at this rate, since a model may reason silently
    /// before its first token.
    pub reasoning_tokens_per_second: f64,
    /// First-token and idle limits learnt from each target's own latency
    /// (`[routing.timeouts.learned]`).
    pub learned: LearnedLimits,
    /// Limits of class `interactive` (default: first token and idle 10 s, deadline 30 s).
    pub interactive: ClassTimeouts,
    /// Limits of class `standard` (default: first token and idle 30 s, deadline 120 s).
    pub standard: ClassTimeouts,
    /// Limits of class `background` (default: first token and idle 60 s, deadline 600 s).
    pub background: ClassTimeouts,
    /// Requests of class `batch` sent on line (a small or urgent submission goes to flex).
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
