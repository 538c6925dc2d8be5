//! Why the plan chose what it chose: one [`Reason`] per decision or rejected alternative.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use super::error::{LimitSource, TimeLimit};
use super::geography::ProfileScope;
use super::{GenerateRequest, ServiceTier, SloClass};

/// What a family's variant router does when its traffic is unlike the model's training data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariantFallback {
    /// The prompt-length rule, on the model's loss scale and the family's thresholds.
    #[default]
    Length,
    /// The family's default variant.
    DefaultVariant,
    /// No fallback: the model's scores decide whatever the novelty.
    None,
}

/// How production feedback changed a family router's choice in the prompt's difficulty band
/// (see `Router::feedback`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VariantAdaptation {
    /// The classifier's pick trails the strongest variant's success in this band by more than
    /// the quality-loss budget: a stronger variant serves.
    OverBudget {
        /// The classifier's pick, which the stronger variant replaced.
        from: String,
    },
    /// A cheaper variant than the classifier's pick stays within the budget in this band.
    WithinBudget {
        /// The classifier's pick, which the cheaper variant replaced.
        from: String,
    },
    /// One call in `explore_share` of the band tries another variant, so that the estimates
    /// keep up (a recovered variant is noticed, the strongest keeps a baseline).
    Explored {
        /// The classifier's pick, which the explored variant replaced for this call.
        from: String,
    },
}

/// One decision of a plan, or one alternative it rejected.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The request named this model.
    ModelRequested {
        /// The model, by its configured name.
        model: Arc<str>,
    },
    /// The request named an inference-profile id, which pins that profile.
    ProfilePinned {
        /// The pinned profile's scope (its id's prefix, e.g. `us` or `global`).
        profile: ProfileScope,
    },
    /// The request named no model; the configuration's default applied.
    DefaultModel {
        /// The configuration's `default_model`: a model or a family.
        name: String,
    },
    /// The request named an alias (`[aliases]`) of a family or model.
    Aliased {
        /// The name the request gave.
        alias: String,
        /// The family or model it names.
        to: String,
    },
    /// The family's default variant was used.
    FamilyDefaultVariant {
        /// The family the request named.
        family: String,
        /// Its default variant (or the request's minimum, when that is stronger).
        variant: String,
    },
    /// The classifier scored the cheaper variants: each one's expected quality loss against
    /// the strongest, and its threshold; the cheapest within its threshold (and not below the
    /// request's minimum) was chosen.
    VariantScored {
        /// The family the request named.
        family: String,
        /// (variant, expected loss, threshold), cheapest first. Under the prompt-length
        /// fallback the loss is the length rule's, on the model's loss scale.
        scores: Vec<(String, f32, f32)>,
        /// The variant chosen (in shadow mode, the default variant that serves).
        chosen: String,
        /// The request's minimum variant, if it set one.
        min_variant: Option<String>,
        /// The prompt's novelty: the calibrated probability that it is of a kind the model was
        /// not trained on (`None` when the model records no calibration).
        novelty: Option<f32>,
        /// The family's recent traffic is novel (mean novelty over the router's window above
        /// its threshold), so this rule chose instead of the model's scores.
        fallback: Option<VariantFallback>,
        /// The kind of work the prompt asks for, by its cue words (`general`, `code`, `math`,
        /// `writing`, `explain`, `extract`).
        kind: &'static str,
        /// The prompt's difficulty band (0 easiest), by the cheapest variant's expected loss
        /// against the bands of the model's training prompts. Feedback is kept per kind and
        /// band.
        band: u8,
        /// What feedback changed, if anything: `chosen` is then the adapted variant.
        adapted: Option<VariantAdaptation>,
    },
    /// A stronger variant than the quality pick costs less for this request, its recurring
    /// prompt prefix read from the cache (the pick cannot cache a prefix that long, or charges
    /// more for it): `from` the pick, `to` the variant sent, with each one's estimated cost in
    /// US dollars.
    VariantForCache {
        /// The family the request named.
        family: String,
        /// The quality pick.
        from: String,
        /// The stronger variant sent instead.
        to: String,
        /// The pick's estimated cost for this request, in US dollars.
        from_usd: f64,
        /// The sent variant's estimated cost for this request, in US dollars.
        to_usd: f64,
    },
    /// If the chosen variant cannot serve, the plan steps up to this stronger one.
    VariantStepUp {
        /// The chosen variant.
        from: String,
        /// The stronger variant whose attempts follow its own.
        to: String,
    },
    /// The family's router is in shadow mode (`router.shadow = true`): `served`, the default
    /// variant (or the request's minimum), serves, while routing would have chosen
    /// `would_choose` (`VariantScored` says why). The answered call is recorded in the
    /// router's shadow figures ([`crate::telemetry::shadow`]).
    VariantShadow {
        /// The family in shadow mode.
        family: String,
        /// The variant that serves.
        served: String,
        /// The variant routing would have chosen.
        would_choose: String,
    },
    /// The family's Bedrock prompt router goes first; it picks the model.
    PromptRouter {
        /// The prompt router's ARN.
        arn: String,
    },
    /// The SLO class mapped to this tier.
    TierFromSlo {
        /// The request's SLO class.
        class: SloClass,
        /// The tier the configuration maps it to.
        tier: ServiceTier,
    },
    /// The request forced this tier.
    TierRequested {
        /// The tier the request set.
        tier: ServiceTier,
    },
    /// The model does not offer the wanted tier; another was chosen.
    TierUnsupported {
        /// The tier the SLO class maps to.
        wanted: ServiceTier,
        /// The tier chosen instead: standard, else the first the model offers.
        chosen: ServiceTier,
        /// The model, by its configured name.
        model: Arc<str>,
    },
    /// Latency-optimized inference was asked for, for an interactive call.
    LatencyOptimized,
    /// A candidate target was left out.
    TargetExcluded {
        /// The model, profile or endpoint id.
        target: Arc<str>,
        /// The target's region.
        region: Arc<str>,
        /// Why it was left out.
        why: Exclusion,
    },
    /// The first target, and how many others follow it for failover.
    TargetsOrdered {
        /// The first target's model, profile or endpoint id.
        first: Arc<str>,
        /// The first target's region.
        region: Arc<str>,
        /// How many attempts follow the first.
        fallbacks: usize,
    },
    /// The request carries its own cache checkpoints, which fit the model's rules.
    CachePointsPinned {
        /// How many of the request's checkpoints fit the rules.
        count: usize,
    },
    /// The call goes to the reserved tier, and the ledger expects the reservation to serve it.
    ReservedRoom {
        /// The model, by its configured name.
        model: Arc<str>,
    },
    /// The call is expected to be served, or was served, at standard above the reservation:
    /// Bedrock overflows reserved requests on the server, and the response's `serviceTier` says
    /// which tier served.
    ReservedOverflow {
        /// The model, by its configured name.
        model: Arc<str>,
        /// Whether the overflow is expected (planning) or happened (Bedrock said so).
        cause: OverflowCause,
    },
    /// A target was moved back for its health.
    TargetDemoted {
        /// The model, profile or endpoint id.
        target: Arc<str>,
        /// The target's region.
        region: Arc<str>,
        /// Its breaker's state.
        health: BreakerView,
        /// Its recent throttles, decayed with a ten-second half-life (to two decimals).
        throttle_score: f64,
    },
    /// A target's on-demand quota (as this router counted its own admissions) has no room for
    /// the call's `tokens` (input plus `max_tokens` times the burndown rate): it was moved
    /// after the targets that have room, or skipped at admission.
    QuotaFull {
        /// The model, profile or endpoint id.
        target: Arc<str>,
        /// The target's region.
        region: Arc<str>,
        /// The tokens the call would count against the quota.
        tokens: u64,
    },
    /// Targets were ordered by this objective after health.
    TargetsOrderedBy {
        /// What they were ordered by: latency for interactive calls, else cost.
        objective: Objective,
    },
    /// Flex would likely miss the deadline: the call was escalated.
    DeadlineEscalation {
        /// The tier that would miss the deadline (flex).
        from: ServiceTier,
        /// The tier the call was escalated to.
        to: ServiceTier,
        /// How long the call was expected to take at `from`, in milliseconds.
        expected_ms: u64,
        /// The request's deadline (`slo.deadline`), in milliseconds.
        deadline_ms: u64,
    },
    /// After the model's own targets, a Bedrock family's.
    FallbackFamily {
        /// The fallback family.
        family: String,
        /// Its default variant, whose targets follow.
        variant: String,
    },
    /// Checkpoints placed where expected reuse pays; `tokens` before the last one.
    CachePointsPlaced {
        /// How many checkpoints were placed.
        count: usize,
        /// Estimated tokens before the last checkpoint.
        tokens: u32,
    },
    /// The request's own checkpoints were changed to fit the model's rules.
    CachePointsChanged {
        /// How many checkpoints were removed (0 when one was only changed).
        removed: usize,
        /// What was changed, and why.
        why: CacheChange,
    },
    /// The request opted out of automatic checkpoints.
    CacheOptOut,
    /// The target holding the cached prefix was preferred (`won`), or not, and why.
    CacheAffinity {
        /// The model, profile or endpoint id of the target holding the prefix.
        target: Arc<str>,
        /// That target's region.
        region: Arc<str>,
        /// Whether it was moved first.
        won: bool,
        /// Why it was, or was not.
        why: AffinityOutcome,
    },
    /// A time limit ended an attempt (it was cancelled on the wire and counted against its
    /// target's breaker), or the call.
    TimeLimitHit {
        /// Which limit fired.
        limit: TimeLimit,
        /// The model, profile or endpoint id of the attempt it ended.
        target: Arc<str>,
        /// That attempt's region.
        region: Arc<str>,
        /// How long the attempt had run, in milliseconds.
        after_ms: u64,
        /// The limit's length, in milliseconds.
        limit_ms: u64,
        /// How that length was derived: the class's, or learnt from the target's latency.
        source: LimitSource,
    },
    /// A region's attempts stalled or failed `failures` times in a row: the whole region (every
    /// model, profile and tier called there) is ejected for `for_ms` (`routing.outlier`).
    RegionEjected {
        /// The region ejected.
        region: Arc<str>,
        /// How many stalls or failures in a row ejected it.
        failures: u32,
        /// How long it is ejected for, in milliseconds.
        for_ms: u64,
    },
    /// A SageMaker endpoint was sent the call whole (InvokeEndpoint, under the whole-answer
    /// limit) rather than as a stream: configured so (`streams = false`), or it had refused to
    /// stream.
    SentWhole {
        /// The endpoint's name.
        target: Arc<str>,
        /// The endpoint's region.
        region: Arc<str>,
        /// Why it is not streamed.
        why: WholeWhy,
    },
    /// A target had as many of this router's attempts in flight as its concurrency allows
    /// (`[routing.concurrency]`): moved after the targets with room, or passed over at
    /// admission.
    TargetFull {
        /// The model, profile or endpoint id.
        target: Arc<str>,
        /// The target's region.
        region: Arc<str>,
        /// This router's attempts in flight there.
        in_flight: u32,
        /// The most it takes at once, for this call's class: configured or learnt.
        limit: u32,
    },
    /// Every planned target was full: the attempt went to an overflow candidate
    /// (`[routing.overflow]`), one of the model's other targets or a stronger variant.
    Overflowed {
        /// The configured model sent to (the plan's, or the stronger variant).
        model: Arc<str>,
        /// The model, profile or endpoint id.
        target: Arc<str>,
        /// The target's region.
        region: Arc<str>,
    },
    /// Every target the call may use was full: it waited in the client-side queue for a slot.
    Queued {
        /// How long it waited.
        waited_ms: u64,
        /// Calls ahead of it for the same targets when it joined the line.
        ahead: u32,
    },
    /// A throttled attempt moved to a target with room, which has not throttled since its last
    /// success: moving load to capacity that takes it is not a retry, and the retry budget was
    /// not charged.
    FailoverUncharged {
        /// The model, profile or endpoint id moved to.
        target: Arc<str>,
        /// Its region.
        region: Arc<str>,
    },
    /// Every candidate had failed: another round over the plan's targets after a back-off.
    RetryRound {
        /// 1 for the first round after the plan's.
        round: u32,
        /// The wait before it (jittered back-off, or the service's Retry-After).
        wait_ms: u64,
    },
    /// A service asked to wait longer than Laneway waits (`routing.retry.max_retry_after`) or
    /// than the call's deadline allows: it was not waited for.
    RetryAfterRefused {
        /// The model, profile or endpoint id of the target that asked.
        target: Arc<str>,
        /// That target's region.
        region: Arc<str>,
        /// How long it asked to wait (`Retry-After`), in milliseconds.
        retry_after_ms: u64,
        /// The most that could be waited: the cap, or the time left before the deadline.
        allowed_ms: u64,
    },
    /// The request's reasoning, as this model's request spells it (its native fields).
    ReasoningMapped {
        /// The model, by its configured name.
        model: Arc<str>,
        /// The native fields sent, as JSON (or that the model always reasons and gets none).
        sent: String,
    },
    /// This model gets no reasoning: it does not reason, or refuses what the request sets
    /// beside it (a failover or a class default; the request's own model refuses the call).
    ReasoningDropped {
        /// The model, by its configured name.
        model: Arc<str>,
        /// Why it gets none.
        why: String,
    },
    /// The conversation's reasoning blocks are left out for this model: they were made by a
    /// model that spells reasoning otherwise, and this one would refuse them.
    ReasoningHistoryDropped {
        /// The model, by its configured name.
        model: Arc<str>,
    },
    /// The request's model-specific fields are not sent to this model: they were written for
    /// another.
    ModelFieldsDropped {
        /// The model, by its configured name.
        model: Arc<str>,
        /// The model the fields name (or "the request's model", when they name none).
        written_for: String,
    },
    /// A field of the request has no spelling in this API of the model (Bedrock's
    /// OpenAI-compatible APIs carry no request metadata, latency-optimized inference or
    /// cache checkpoints): its attempts there go without it.
    NotSentTo {
        /// The model, by its configured name.
        model: Arc<str>,
        /// The API that lacks it (`openai-runtime` or `openai-mantle`).
        api: super::target::Api,
        /// What goes unsent: `metadata`, `latency_optimized` or `cache checkpoints`.
        field: &'static str,
    },
    /// A broken stream of this model is not continued from what was delivered: its APIs
    /// take no assistant prefill to continue from, so the stream ends interrupted instead.
    ContinuationRefused {
        /// The model, by its configured name.
        model: Arc<str>,
    },
    /// A field of an `openai`-shaped request that the call went without, and why.
    FieldNotHonoured {
        /// The field's path in the request body, e.g. `reasoning.summary`.
        field: String,
        /// Why the call went without it.
        why: String,
    },
}

/// Why the request's own cache checkpoints were changed to fit the model's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CacheChange {
    /// The model has no prompt cache: every checkpoint was removed.
    NoCache,
    /// The model has no such TTL: the checkpoint got the model's shortest instead.
    TtlUnsupported {
        /// The TTL the request asked for.
        ttl: super::CacheTtl,
    },
    /// The model does not cache tool definitions.
    NoToolCache,
    /// The model rejects a checkpoint in a message that carries a tool result (Nova).
    AfterToolResult,
    /// The model takes checkpoints only in the caller's input, not after a block of its own
    /// turn (GPT on the Responses API).
    AfterModelTurn,
    /// The prefix before the checkpoint is longer than the model caches.
    PrefixTooLong {
        /// Estimated tokens before the checkpoint.
        tokens: u32,
        /// The most tokens the model caches.
        max_tokens: u32,
    },
    /// Several checkpoints at one place.
    Duplicate,
    /// More checkpoints than a request may carry.
    TooMany {
        /// The most checkpoints a request may carry (the model's, within Laneway's own).
        max: usize,
    },
}

impl fmt::Display for CacheChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheChange::NoCache => f.write_str("the model does not support prompt caching"),
            CacheChange::TtlUnsupported { ttl } => {
                write!(
                    f,
                    "the model has no {} TTL: its shortest instead",
                    ttl.as_str()
                )
            }
            CacheChange::NoToolCache => f.write_str("the model does not cache tool definitions"),
            CacheChange::AfterToolResult => {
                f.write_str("the model rejects a checkpoint in a message with a tool result")
            }
            CacheChange::AfterModelTurn => f.write_str(
                "the model takes checkpoints only in the caller's input, not in its own turn",
            ),
            CacheChange::PrefixTooLong { tokens, max_tokens } => {
                write!(
                    f,
                    "prefix of {tokens} tokens exceeds the {max_tokens} cacheable"
                )
            }
            CacheChange::Duplicate => f.write_str("several checkpoints at one place"),
            CacheChange::TooMany { max } => write!(f, "at most {max} checkpoints"),
        }
    }
}

/// Whether the target holding a cached prefix went first, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AffinityOutcome {
    /// Healthy and expected within the SLO: it went first.
    Preferred,
    /// Its expected TTFT misses the request's TTFT target.
    TooSlow,
    /// Its breaker or throttle score demoted it.
    Unhealthy,
}

impl fmt::Display for AffinityOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AffinityOutcome::Preferred => "healthy and within the SLO",
            AffinityOutcome::TooSlow => "its expected TTFT misses the TTFT target",
            AffinityOutcome::Unhealthy => "unhealthy",
        })
    }
}

/// Why a call was (or is expected to be) served at standard above its reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OverflowCause {
    /// Planning: the ledger has no room for the estimated tokens, so Bedrock is expected to
    /// serve the call at standard (it is still sent as reserved: room may have come back).
    Full,
    /// Bedrock served the reserved call at standard (the response's `serviceTier`).
    Served,
}

/// Why a candidate target was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Exclusion {
    /// It could process the request outside the allowed residency.
    Residency,
    /// The model accepts only inference-profile ids on demand.
    ProfileRequired,
    /// The request pinned another profile.
    OtherProfilePinned,
    /// Beyond `routing.max_attempts`.
    AttemptLimit,
    /// The model takes no structured output (or strict tools), which the request asks for.
    NoStructuredOutput,
    /// The request's guardrail cannot be applied there: not a Bedrock target, or a region
    /// other than the one its ARN names.
    NoGuardrail,
    /// The request has what this API of the model cannot carry (a document, audio or
    /// video on Bedrock's OpenAI-compatible APIs; stop sequences where only Responses serves).
    NotCarried,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::ModelRequested { model } => write!(f, "model {model} requested"),
            Reason::ProfilePinned { profile } => write!(
                f,
                "{} inference profile pinned by the request",
                profile.prefix()
            ),
            Reason::DefaultModel { name } => write!(f, "no model named: default {name}"),
            Reason::Aliased { alias, to } => write!(f, "{alias} is an alias of {to}"),
            Reason::FamilyDefaultVariant { family, variant } => {
                write!(f, "family {family}: default variant {variant}")
            }
            Reason::VariantScored {
                family,
                scores,
                chosen,
                min_variant,
                novelty,
                fallback,
                kind,
                band,
                adapted,
            } => {
                write!(f, "family {family}: {kind}, band {band}; ")?;
                if let Some(n) = novelty {
                    write!(f, "novelty {n:.2}; ")?;
                }
                match fallback {
                    Some(VariantFallback::Length) => {
                        write!(f, "novel traffic: by prompt length; ")?
                    }
                    Some(VariantFallback::DefaultVariant) => {
                        write!(f, "novel traffic: default variant; ")?
                    }
                    Some(VariantFallback::None) | None => {}
                }
                for (v, loss, t) in scores {
                    write!(f, "{v} loss {loss:.3} (threshold {t:.3}); ")?;
                }
                if let Some(m) = min_variant {
                    write!(f, "minimum {m}; ")?;
                }
                match adapted {
                    Some(VariantAdaptation::OverBudget { from }) => {
                        write!(f, "{from} over the quality-loss budget here; ")?
                    }
                    Some(VariantAdaptation::WithinBudget { from }) => write!(
                        f,
                        "cheaper than {from} within the quality-loss budget here; "
                    )?,
                    Some(VariantAdaptation::Explored { from }) => {
                        write!(f, "exploring instead of {from}; ")?
                    }
                    None => {}
                }
                write!(f, "chose {chosen}")
            }
            Reason::VariantForCache {
                family,
                from,
                to,
                from_usd,
                to_usd,
            } => write!(
                f,
                "family {family}: {to} costs less with its cached prefix (${to_usd:.6} against ${from_usd:.6} on {from})"
            ),
            Reason::VariantShadow {
                family,
                served,
                would_choose,
            } => write!(
                f,
                "family {family} in shadow mode: {served} serves, routing would choose {would_choose}"
            ),
            Reason::VariantStepUp { from, to } => {
                write!(f, "{from} unavailable -> step up to {to}")
            }
            Reason::PromptRouter { arn } => write!(f, "Bedrock prompt router {arn} first"),
            Reason::TierFromSlo { class, tier } => write!(f, "SLO class {class} -> tier {tier}"),
            Reason::TierRequested { tier } => write!(f, "tier {tier} requested"),
            Reason::TierUnsupported {
                wanted,
                chosen,
                model,
            } => {
                write!(f, "{model} does not offer tier {wanted}: {chosen} instead")
            }
            Reason::LatencyOptimized => {
                write!(f, "latency-optimized inference for an interactive call")
            }
            Reason::TargetExcluded {
                target,
                region,
                why,
            } => {
                let why = match why {
                    Exclusion::Residency => "outside the allowed residency",
                    Exclusion::ProfileRequired => "the model needs an inference profile",
                    Exclusion::OtherProfilePinned => "another profile is pinned",
                    Exclusion::AttemptLimit => "beyond routing.max_attempts",
                    Exclusion::NoStructuredOutput => "the model takes no structured output",
                    Exclusion::NoGuardrail => "the request's guardrail cannot be applied there",
                    Exclusion::NotCarried => "the API cannot carry part of the request",
                };
                write!(f, "{target} in {region} excluded: {why}")
            }
            Reason::TargetsOrdered {
                first,
                region,
                fallbacks,
            } => {
                write!(f, "{first} in {region} first, {fallbacks} fallback(s)")
            }
            Reason::CachePointsPinned { count } => {
                write!(f, "{count} cache checkpoint(s) pinned by the request")
            }
            Reason::ReservedRoom { model } => {
                write!(f, "{model}: reservation has room -> reserved tier")
            }
            Reason::ReservedOverflow { model, cause } => match cause {
                OverflowCause::Full => write!(
                    f,
                    "{model}: reservation expected full -> Bedrock overflows it to standard"
                ),
                OverflowCause::Served => write!(
                    f,
                    "{model}: Bedrock served the reserved call at standard (reservation full)"
                ),
            },
            Reason::TargetDemoted {
                target,
                region,
                health,
                throttle_score,
            } => {
                write!(
                    f,
                    "{target} in {region} demoted: breaker {health:?}, throttle score {throttle_score}"
                )
            }
            Reason::QuotaFull {
                target,
                region,
                tokens,
            } => {
                write!(
                    f,
                    "{target} in {region}: quota has no room for {tokens} tokens this minute -> moved back"
                )
            }
            Reason::TargetsOrderedBy { objective } => {
                write!(f, "targets ordered by health, then {objective:?}")
            }
            Reason::DeadlineEscalation {
                from,
                to,
                expected_ms,
                deadline_ms,
            } => write!(
                f,
                "tier {from} expected to take {expected_ms} ms against a {deadline_ms} ms deadline: escalated to {to}"
            ),
            Reason::FallbackFamily { family, variant } => {
                write!(f, "fallback to family {family}: {variant}")
            }
            Reason::CachePointsPlaced { count, tokens } => {
                write!(
                    f,
                    "{count} cache checkpoint(s) placed, {tokens} tokens before the last"
                )
            }
            Reason::CachePointsChanged { removed, why } => {
                write!(f, "{removed} cache checkpoint(s) changed: {why}")
            }
            Reason::CacheOptOut => write!(f, "automatic cache checkpoints off for this request"),
            Reason::CacheAffinity {
                target,
                region,
                won,
                why,
            } => {
                write!(
                    f,
                    "cached prefix in {target} at {region}: {} ({why})",
                    if *won { "preferred" } else { "not preferred" }
                )
            }
            Reason::TimeLimitHit {
                limit,
                target,
                region,
                after_ms,
                limit_ms,
                source,
            } => {
                write!(
                    f,
                    "{target} in {region}: {limit} limit ({limit_ms} ms, {}) reached after {after_ms} ms, attempt cancelled",
                    source_text(source)
                )
            }
            Reason::RegionEjected {
                region,
                failures,
                for_ms,
            } => write!(
                f,
                "{region}: {failures} stalls or failures in a row, every target there ejected for {for_ms} ms"
            ),
            Reason::SentWhole {
                target,
                region,
                why,
            } => {
                let why = match why {
                    WholeWhy::Configured => "configured not to stream",
                    WholeWhy::Refused => "it refused to stream (remembered)",
                };
                write!(
                    f,
                    "{target} in {region}: sent whole (InvokeEndpoint): {why}"
                )
            }
            Reason::TargetFull {
                target,
                region,
                in_flight,
                limit,
            } => write!(
                f,
                "{target} in {region} full ({in_flight} in flight, limit {limit}) -> moved back"
            ),
            Reason::Overflowed {
                model,
                target,
                region,
            } => write!(
                f,
                "every planned target full: overflowed to {model} at {target} in {region}"
            ),
            Reason::Queued { waited_ms, ahead } => write!(
                f,
                "every allowed target full: queued {waited_ms} ms behind {ahead} calls"
            ),
            Reason::FailoverUncharged { target, region } => write!(
                f,
                "throttled: moved to {target} in {region}, which has room (retry budget not charged)"
            ),
            Reason::RetryRound { round, wait_ms } => {
                write!(
                    f,
                    "every candidate failed: retry round {round} after {wait_ms} ms"
                )
            }
            Reason::RetryAfterRefused {
                target,
                region,
                retry_after_ms,
                allowed_ms,
            } => write!(
                f,
                "{target} in {region} asked to retry after {retry_after_ms} ms, more than the {allowed_ms} ms allowed: not waited for"
            ),
            Reason::ReasoningMapped { model, sent } => write!(f, "reasoning for {model}: {sent}"),
            Reason::ReasoningDropped { model, why } => write!(f, "no reasoning for {model}: {why}"),
            Reason::ReasoningHistoryDropped { model } => {
                write!(f, "earlier reasoning blocks left out for {model}")
            }
            Reason::ModelFieldsDropped { model, written_for } => {
                write!(
                    f,
                    "model fields written for {written_for} not sent to {model}"
                )
            }
            Reason::NotSentTo { model, api, field } => {
                write!(
                    f,
                    "{field} not sent to {model} by {api}: that API has no such field"
                )
            }
            Reason::FieldNotHonoured { field, why } => write!(f, "{field} not honoured: {why}"),
            Reason::ContinuationRefused { model } => {
                write!(
                    f,
                    "a broken stream of {model} is not continued: its APIs take no prefill to continue from"
                )
            }
        }
    }
}

/// Why a SageMaker endpoint is sent calls whole ([`Reason::SentWhole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WholeWhy {
    /// Its configuration says `streams = false`.
    Configured,
    /// InvokeEndpointWithResponseStream was refused (the operation is not served there).
    Refused,
}

/// What the planner sees of a breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerView {
    /// Healthy: traffic goes as planned.
    Closed,
    /// Open until its timer runs out: traffic goes elsewhere.
    Open,
    /// Its whole region is ejected (`routing.outlier`): traffic goes elsewhere.
    RegionEjected,
    /// Probing: a request may go if a probe slot is free.
    HalfOpen {
        /// Whether a probe slot is free now.
        probe_available: bool,
    },
}

/// What a call's targets are ordered by, after health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Lowest expected time to first token (interactive calls).
    Latency,
    /// Lowest price, then configured order (everything else).
    Cost,
}

impl Objective {
    /// The objective of a request's SLO class.
    pub fn of(request: &GenerateRequest) -> Self {
        if request.slo.class == SloClass::Interactive {
            Objective::Latency
        } else {
            Objective::Cost
        }
    }
}

fn source_text(source: &LimitSource) -> String {
    match source {
        LimitSource::Class => "the class's".into(),
        LimitSource::Deadline => "the call's deadline".into(),
        LimitSource::Learned {
            quantile,
            observed_ms,
            factor,
            samples,
        } => format!(
            "learnt: p{:.0} of {samples} observations {observed_ms} ms x {factor}",
            quantile * 100.0
        ),
        LimitSource::Prior {
            prior_ms,
            observed_ms: Some(observed),
            samples,
            factor,
        } => format!(
            "prior {prior_ms} ms blended with {samples} observations ({observed} ms) x {factor}"
        ),
        LimitSource::Prior {
            prior_ms, factor, ..
        } => format!("prior {prior_ms} ms x {factor}"),
    }
}
