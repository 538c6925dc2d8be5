//! `[routing]`: attempts, retries, time limits and hedging; and `[slo_tiers]`, the tier each SLO class asks for.

use super::{
    BreakerConfig, BudgetConfig, Deserialize, Duration, OutlierConfig, Serialize, ServiceTier,
    SloClass,
};

/// How calls are routed, retried, failed over and hedged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Hedging: of interactive calls with a TTFT target, and of standard calls after their
    /// first target's usual first-token time (learnt, or its prior's before it is known).
    pub hedge: HedgeConfig,
    /// Time limits: connect, first token, idle gaps and the overall deadline.
    pub timeouts: TimeoutsConfig,
    /// Each target's concurrency (learnt from its throttles, or a model's
    /// `quota.max_concurrency`) and the queue of calls waiting for a slot.
    pub concurrency: ConcurrencyConfig,
    /// Where calls go when every planned target is at its concurrency.
    pub overflow: OverflowConfig,
    /// Sends non-streamed calls as streams (ConverseStream, InvokeEndpointWithResponseStream;
    /// same price), so that the first-token and idle limits catch a stalled attempt and a
    /// broken one fails over unseen. `false` sends Converse / InvokeEndpoint, bounded only by
    /// the answer limit (for containers that cannot stream).
    pub stream_generate: bool,
    /// What a target is expected to take before it has answered, by tier (a model's own
    /// `latency` table overrides them): a cold target's time limits, hedge delay and latency
    /// rank start from them.
    pub priors: super::PriorsConfig,
    /// Output tokens assumed for a call without `max_tokens`, for reservations and deadlines.
    pub default_output_tokens: u32,
    /// How long a minute lasts for the per-minute ledgers (reservations and quotas): 60 s;
    /// shorter only against an emulator whose time is scaled. Limits are per such minute.
    #[serde(with = "crate::types::units::serde_millis")]
    pub minute: Duration,
}

/// Each target's concurrency and the client-side queue (`[routing.concurrency]`).
///
/// Every attempt occupies a slot of its target (a region and id: the pool Bedrock counts
/// concurrent requests in) while it runs. A target's limit is its model's
/// `quota.max_concurrency` where configured (a ceiling), else it starts at `initial_limit` and
/// grows by one per success sent at it (TCP's slow start) until the target first throttles. A
/// throttle of an attempt sent with `n` in flight there sets the limit to `n - 1` (the first
/// lesson; later ones lower it by a tenth at most), and once the target has been quiet for
/// `probe_after`, each success sent at the limit raises it by `1 / limit`, as TCP's congestion
/// avoidance does (the additive increase, multiplicative decrease of Netflix's concurrency
/// limits). Flex attempts learn a limit of their own, over the same count, since Bedrock gives
/// flex a share of the target's pool. When every target a call may use is full, the call waits for a slot, in
/// order of class (interactive first) then deadline, never past its deadline.
///
/// ```
/// let c = laneway::Config::default();
/// assert!(c.routing.concurrency.learn && c.routing.concurrency.queue);
/// assert_eq!(c.routing.concurrency.background_share, 0.75);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyConfig {
    /// Learn each target's concurrency from its throttles (default: yes); off, limits stay
    /// where they start (configured, or `initial_limit`).
    pub learn: bool,
    /// Where the limit of a target without a configured one starts: it grows by one per
    /// success at it (doubling per round of calls) until the target first throttles.
    pub initial_limit: u32,
    /// After a throttle, a target's limit is held this long before successes raise it again
    /// (milliseconds): probing costs at most about one throttle per target per period.
    #[serde(with = "crate::types::units::serde_millis")]
    pub probe_after: Duration,
    /// A learnt limit is forgotten after this long without a throttle at its target
    /// (milliseconds): the next surge learns it again, so a target that grew is not held to
    /// yesterday's limit.
    #[serde(with = "crate::types::units::serde_millis")]
    pub forget_after: Duration,
    /// A target past this share of its limit is busy: among targets whose measure ranks alike,
    /// the least loaded busy one comes first (least-request balancing), while below it the
    /// class's objective keeps deciding, so that light traffic stays on the best target (its
    /// prompt cache warm, its latency learnt) and a burst spreads before anything fills (0 to
    /// 1; default 0.75).
    pub spread_above: f64,
    /// Calls of classes `background` and `batch` occupy at most this share of a target's
    /// limit (at least one slot), so interactive and standard calls arriving into a surge of
    /// work that can wait find room at once (0 to 1; default 0.75).
    pub background_share: f64,
    /// Queue calls when every target they may use is full (default: yes); off, such a call
    /// fails at once as `overloaded`.
    pub queue: bool,
}

/// Where a call may overflow when its planned targets are full (`[routing.overflow]`): the
/// model's other targets beyond `routing.max_attempts` (profiles before farther regions), then
/// a stronger variant of its family whose price is within `max_price_ratio` of the planned
/// model's. A call with a residency stays within it; without one, each class's `reach` says
/// how far it may go.
///
/// ```
/// use laneway::config::Reach;
/// let c = laneway::Config::default();
/// assert_eq!(c.routing.overflow.interactive, Reach::Geography);
/// assert_eq!(c.routing.overflow.standard, Reach::Anywhere);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverflowConfig {
    /// Whether calls overflow at all beyond their planned targets (default: yes).
    pub enabled: bool,
    /// A stronger variant takes overflow only while its price (input plus output per 1,000
    /// tokens) is at most this multiple of the planned model's (default 4: Nova Lite for Micro,
    /// never Pro at about 23 times Micro's).
    pub max_price_ratio: f64,
    /// How far calls of class `interactive` without a residency may overflow.
    pub interactive: Reach,
    /// How far calls of class `standard` without a residency may overflow.
    pub standard: Reach,
    /// How far calls of class `background` without a residency may overflow.
    pub background: Reach,
    /// How far calls of class `batch` sent on line without a residency may overflow.
    pub batch: Reach,
}

impl OverflowConfig {
    /// How far a class may overflow without a residency.
    pub fn reach(&self, class: SloClass) -> Reach {
        match class {
            SloClass::Interactive => self.interactive,
            SloClass::Standard => self.standard,
            SloClass::Background => self.background,
            SloClass::Batch => self.batch,
        }
    }
}

/// How far a call without a residency may overflow (`[routing.overflow]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Only to regions in a geography of its first planned target's region (`us` for
    /// us-east-1): no farther than a geographic profile would take it.
    Geography,
    /// To any region the router's configuration lets the model use.
    Anywhere,
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
    /// first-token times once `routing.timeouts.learned.min_samples` of them are known, and
    /// before that after its prior's `ttft_p99` (`[routing.priors]`, or the fleet's figures)
    /// blended with what it has shown, as gRPC hedges after a configured delay and "The Tail
    /// at Scale" after the 95th percentile. Each hedge is an extra attempt: the retry budget
    /// bounds them.
    pub standard: bool,
    /// The quantile of the first target's recent first-token times after which a call without
    /// a TTFT target is hedged (0 to 1; default 0.95).
    pub standard_quantile: f64,
}

/// The tiers each SLO class asks for, by preference (`[slo_tiers]`): a call is sent at the
/// first tier of its class's list that its model takes, and at standard (or the model's first
/// tier) when it takes none of them. A class names one tier (`background = "flex"`) or a list
/// (`interactive = ["ultrafast", "priority"]`).
///
/// ```
/// use laneway::{Config, ServiceTier, SloClass};
/// let c = Config::from_toml_str("[slo_tiers]\ninteractive = [\"priority\", \"standard\"]").unwrap();
/// assert_eq!(c.slo_tiers.for_class(SloClass::Interactive), [ServiceTier::PRIORITY, ServiceTier::STANDARD]);
/// assert_eq!(c.slo_tiers.for_class(SloClass::Background), [ServiceTier::FLEX]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloTiers {
    /// The tiers `interactive` calls ask for (default `priority`).
    pub interactive: TierPreference,
    /// The tiers `standard` calls ask for (default `standard`).
    pub standard: TierPreference,
    /// The tiers `background` calls ask for (default `flex`).
    pub background: TierPreference,
    /// The tiers `batch` calls sent on line ask for (default `flex`).
    pub batch: TierPreference,
}

impl SloTiers {
    /// The tiers a class asks for, most preferred first.
    pub fn for_class(&self, class: SloClass) -> &[ServiceTier] {
        match class {
            SloClass::Interactive => &self.interactive.0,
            SloClass::Standard => &self.standard.0,
            SloClass::Background => &self.background.0,
            SloClass::Batch => &self.batch.0,
        }
    }

    /// Each class with its tiers.
    pub fn classes(&self) -> impl Iterator<Item = (SloClass, &[ServiceTier])> {
        SloClass::ALL.into_iter().map(|c| (c, self.for_class(c)))
    }
}

/// One SLO class's tiers, most preferred first: a tier's name or a non-empty list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierPreference(Vec<ServiceTier>);

impl TierPreference {
    /// A preference for these tiers, in order.
    pub fn new(tiers: impl IntoIterator<Item = ServiceTier>) -> Self {
        TierPreference(tiers.into_iter().collect())
    }

    /// The tiers, most preferred first.
    pub fn tiers(&self) -> &[ServiceTier] {
        &self.0
    }
}

impl From<ServiceTier> for TierPreference {
    fn from(tier: ServiceTier) -> Self {
        TierPreference(vec![tier])
    }
}

impl Serialize for TierPreference {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TierPreference {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OneOrMany;
        impl<'de> serde::de::Visitor<'de> for OneOrMany {
            type Value = Vec<ServiceTier>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a service tier's name or a list of them")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
                name.parse().map(|t| vec![t]).map_err(E::custom)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut tiers = Vec::new();
                while let Some(tier) = seq.next_element()? {
                    tiers.push(tier);
                }
                Ok(tiers)
            }
        }
        let tiers = d.deserialize_any(OneOrMany)?;
        if tiers.is_empty() {
            return Err(serde::de::Error::custom(
                "a class's tiers: a tier's name or a non-empty list of them",
            ));
        }
        Ok(TierPreference(tiers))
    }
}
