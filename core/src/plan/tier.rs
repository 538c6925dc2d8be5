//! Which service tier: the SLO class's tier, or the request's, gated by what the model offers.

use crate::config::{Config, ModelConfig};
use crate::plan::observe::Observations;
use crate::types::{Attempt, OverflowCause, Reason};
use crate::types::{Error, Result};
use crate::types::{GenerateRequest, ServiceTier, SloClass};

/// The tier for this request on this model; `None` for SageMaker, which has no tiers.
///
/// A tier the SLO class asks for but the model lacks falls back to standard (or the model's
/// first tier); a tier the request forces but the model lacks is an error. Either way a tier
/// the model does not support is never returned.
pub(crate) fn choose(
    request: &GenerateRequest,
    model_id: &str,
    model: &ModelConfig,
    config: &Config,
    obs: &(impl Observations + ?Sized),
    reasons: &mut Vec<Reason>,
) -> Result<Option<ServiceTier>> {
    let tier = choose_capable(request, model_id, model, config, reasons)?;
    Ok(tier.map(|t| reserve_if_room(request, t, model_id, model, config, obs, reasons)))
}

/// Standard (or reserved) calls on a model with a reservation are sent at the reserved tier:
/// Bedrock serves them from the reservation while it has room and at standard above it. The
/// ledger's prediction is recorded (and counted against the on-demand quota when full); it
/// does not change the tier, since sending a call as reserved costs nothing when it overflows.
fn reserve_if_room(
    request: &GenerateRequest,
    tier: ServiceTier,
    model_id: &str,
    model: &ModelConfig,
    config: &Config,
    obs: &(impl Observations + ?Sized),
    reasons: &mut Vec<Reason>,
) -> ServiceTier {
    if request.tier.is_some()
        || !matches!(tier, ServiceTier::STANDARD | ServiceTier::RESERVED)
        || model.reserved().is_none()
    {
        return tier;
    }
    let (input, output) = estimated_tokens(request, config);
    match obs.reserved_room(model_id, input, output) {
        Some(false) => reasons.push(Reason::ReservedOverflow {
            model: model_id.into(),
            cause: OverflowCause::Full,
        }),
        _ => reasons.push(Reason::ReservedRoom {
            model: model_id.into(),
        }),
    }
    ServiceTier::RESERVED
}

/// The (input, output) tokens a call is expected to use, for reservations and deadlines.
pub(crate) fn estimated_tokens(request: &GenerateRequest, config: &Config) -> (u64, u64) {
    let output = request
        .inference
        .max_tokens
        .map_or(u64::from(config.routing.default_output_tokens), |n| {
            n.max(0) as u64
        });
    (request.estimated_input_tokens(), output)
}

/// A flex call whose first target is expected to miss the deadline goes at standard instead:
/// expected TTFT at flex plus expected generation time (output tokens over tokens/s) against
/// the deadline. Returns the new tier when it escalates.
pub(crate) fn escalate_for_deadline(
    request: &GenerateRequest,
    model: &ModelConfig,
    first: &Attempt,
    config: &Config,
    obs: &(impl Observations + ?Sized),
    reasons: &mut Vec<Reason>,
) -> Option<ServiceTier> {
    let deadline = request.slo.deadline?;
    if first.tier != Some(ServiceTier::FLEX) || !model.tiers().contains(&ServiceTier::STANDARD) {
        return None;
    }
    let view = obs.target(first.target.region(), first.target.id(), first.tier);
    let prior = config
        .routing
        .priors
        .of(model, first.tier, first.target.api);
    let (_, output) = estimated_tokens(request, config);
    let tokens_per_second = view
        .tokens_per_second
        .filter(|t| *t > 0.0)
        .unwrap_or(prior.tokens_per_second);
    let generation = crate::types::units::clamped_secs(output as f64 / tokens_per_second)
        .unwrap_or(crate::types::MAX_DURATION);
    let expected = view.ttft.unwrap_or(prior.ttft).saturating_add(generation);
    if expected <= deadline {
        return None;
    }
    reasons.push(Reason::DeadlineEscalation {
        from: ServiceTier::FLEX,
        to: ServiceTier::STANDARD,
        expected_ms: expected.as_millis() as u64,
        deadline_ms: deadline.as_millis() as u64,
    });
    Some(ServiceTier::STANDARD)
}

fn choose_capable(
    request: &GenerateRequest,
    model_id: &str,
    model: &ModelConfig,
    config: &Config,
    reasons: &mut Vec<Reason>,
) -> Result<Option<ServiceTier>> {
    if !model.is_managed() {
        if let Some(t) = request.tier {
            return Err(Error::invalid(
                "tier",
                format!(
                    "{model_id} is {}, which has no service tier {t}",
                    model.hosting()
                ),
            ));
        }
        return Ok(None);
    }
    if let Some(t) = request.tier {
        if !offers(model, t) {
            return Err(Error::invalid(
                "tier",
                format!(
                    "{model_id} does not offer tier {t} (configured: {})",
                    list(model)
                ),
            ));
        }
        reasons.push(Reason::TierRequested { tier: t });
        return Ok(Some(t));
    }
    let preferred = config.slo_tiers.for_class(request.slo.class);
    let wanted = *preferred.first().unwrap_or(&ServiceTier::STANDARD);
    reasons.push(Reason::TierFromSlo {
        class: request.slo.class,
        tier: wanted,
    });
    // The class's tiers by preference, then standard, then whichever the model takes.
    let chosen = preferred
        .iter()
        .copied()
        .chain(std::iter::once(ServiceTier::STANDARD))
        .chain(model.tiers().iter().copied())
        .find(|t| offers(model, *t))
        .ok_or_else(|| {
            Error::config(
                format!("models.\"{model_id}\".tiers"),
                "no usable tier: `reserved` needs a reservation",
            )
        })?;
    if chosen != wanted {
        reasons.push(Reason::TierUnsupported {
            wanted,
            chosen,
            model: model_id.into(),
        });
    }
    Ok(Some(chosen))
}

/// Whether to ask for latency-optimized inference: interactive calls on models that offer it.
pub(crate) fn latency_optimized(
    request: &GenerateRequest,
    model: &ModelConfig,
    reasons: &mut Vec<Reason>,
) -> bool {
    let on = model.latency_optimized() && request.slo.class == SloClass::Interactive;
    if on {
        reasons.push(Reason::LatencyOptimized);
    }
    on
}

/// Whether the model takes this tier: listed, and for `reserved` backed by a reservation.
fn offers(model: &ModelConfig, tier: ServiceTier) -> bool {
    model.tiers().contains(&tier) && (tier != ServiceTier::RESERVED || model.reserved().is_some())
}

fn list(model: &ModelConfig) -> String {
    model
        .tiers()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier_of(req: GenerateRequest, model: &str) -> Result<Option<ServiceTier>> {
        let c = Config::default();
        choose(
            &req,
            model,
            &c.models[model],
            &c,
            &crate::plan::observe::Fresh(crate::time::now()),
            &mut Vec::new(),
        )
    }

    #[test]
    fn slo_classes_map_to_tiers() {
        let lite = "amazon.nova-lite-v1:0";
        let t = |class| tier_of(GenerateRequest::user("x").slo_class(class), lite).unwrap();
        assert_eq!(t(SloClass::Interactive), Some(ServiceTier::PRIORITY));
        assert_eq!(t(SloClass::Standard), Some(ServiceTier::STANDARD));
        assert_eq!(t(SloClass::Background), Some(ServiceTier::FLEX));
    }

    #[test]
    fn unsupported_slo_tier_falls_back_and_says_so() {
        let c = Config::default();
        let micro = "amazon.nova-micro-v1:0";
        let mut reasons = Vec::new();
        let req = GenerateRequest::user("x").slo_class(SloClass::Interactive);
        let t = choose(
            &req,
            micro,
            &c.models[micro],
            &c,
            &crate::plan::observe::Fresh(crate::time::now()),
            &mut reasons,
        )
        .unwrap();
        assert_eq!(t, Some(ServiceTier::STANDARD));
        assert!(matches!(
            reasons.last(),
            Some(Reason::TierUnsupported {
                wanted: ServiceTier::PRIORITY,
                ..
            })
        ));
    }

    #[test]
    fn forced_unsupported_tier_is_an_error() {
        let e = tier_of(
            GenerateRequest::user("x").tier(ServiceTier::PRIORITY),
            "amazon.nova-micro-v1:0",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("does not offer tier priority"),
            "{e}"
        );
    }
}
