//! Which service tier: the SLO class's tier, or the request's, gated by what the model offers.

use crate::config::{Config, ModelConfig, Provider};
use crate::error::{Error, Result};
use crate::plan::Reason;
use crate::request::{GenerateRequest, ServiceTier, SloClass};

/// The tier for this request on this model; `None` for SageMaker, which has no tiers.
///
/// A tier the SLO class asks for but the model lacks falls back to standard (or the model's
/// first tier); a tier the request forces but the model lacks is an error. Either way a tier
/// the model does not support is never returned.
pub fn choose(
    request: &GenerateRequest,
    model_id: &str,
    model: &ModelConfig,
    config: &Config,
    reasons: &mut Vec<Reason>,
) -> Result<Option<ServiceTier>> {
    if model.provider == Provider::Sagemaker {
        if let Some(t) = request.tier {
            return Err(Error::invalid(
                "tier",
                format!("{model_id} is a SageMaker model, which has no service tier {t}"),
            ));
        }
        return Ok(None);
    }
    if let Some(t) = request.tier {
        if !model.tiers.contains(&t) {
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
    let wanted = config.slo_tiers.for_class(request.slo.class);
    reasons.push(Reason::TierFromSlo {
        class: request.slo.class,
        tier: wanted,
    });
    if model.tiers.contains(&wanted) {
        return Ok(Some(wanted));
    }
    let chosen = if model.tiers.contains(&ServiceTier::Standard) {
        ServiceTier::Standard
    } else {
        *model
            .tiers
            .iter()
            .next()
            .expect("validated: a Bedrock model has at least one tier")
    };
    reasons.push(Reason::TierUnsupported {
        wanted,
        chosen,
        model: model_id.to_string(),
    });
    Ok(Some(chosen))
}

/// Whether to ask for latency-optimized inference: interactive calls on models that offer it.
pub fn latency_optimized(
    request: &GenerateRequest,
    model: &ModelConfig,
    reasons: &mut Vec<Reason>,
) -> bool {
    let on = model.provider == Provider::Bedrock
        && model.latency_optimized
        && request.slo.class == SloClass::Interactive;
    if on {
        reasons.push(Reason::LatencyOptimized);
    }
    on
}

fn list(model: &ModelConfig) -> String {
    model
        .tiers
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
        choose(&req, model, &c.models[model], &c, &mut Vec::new())
    }

    #[test]
    fn slo_classes_map_to_tiers() {
        let lite = "amazon.nova-lite-v1:0";
        let t = |class| tier_of(GenerateRequest::user("x").slo_class(class), lite).unwrap();
        assert_eq!(t(SloClass::Interactive), Some(ServiceTier::Priority));
        assert_eq!(t(SloClass::Standard), Some(ServiceTier::Standard));
        assert_eq!(t(SloClass::Background), Some(ServiceTier::Flex));
    }

    #[test]
    fn unsupported_slo_tier_falls_back_and_says_so() {
        let c = Config::default();
        let micro = "amazon.nova-micro-v1:0";
        let mut reasons = Vec::new();
        let req = GenerateRequest::user("x").slo_class(SloClass::Interactive);
        let t = choose(&req, micro, &c.models[micro], &c, &mut reasons).unwrap();
        assert_eq!(t, Some(ServiceTier::Standard));
        assert!(matches!(
            reasons.last(),
            Some(Reason::TierUnsupported {
                wanted: ServiceTier::Priority,
                ..
            })
        ));
    }

    #[test]
    fn forced_unsupported_tier_is_an_error() {
        let e = tier_of(
            GenerateRequest::user("x").tier(ServiceTier::Priority),
            "amazon.nova-micro-v1:0",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("does not offer tier priority"),
            "{e}"
        );
    }
}
