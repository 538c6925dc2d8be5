//! Planning: a pure function from a request and the configuration to an ordered list of
//! attempts, with the reason for every choice. No I/O, no clock reads (the time comes with the
//! [`Observations`]), no awaits.
//!
//! A [`Planner`] runs [`Policy`]s over a [`Draft`] in order; the built-in ones are
//! [`policy::VariantPolicy`] (which model), [`policy::TierPolicy`] (which service tier),
//! [`policy::CheckpointPolicy`] (which prompt-cache checkpoints) and [`policy::TargetPolicy`]
//! (which regions, profiles or endpoints, in which order, with step-ups and fallbacks). Add
//! your own after them, or replace one by name, as tower stacks layers.

pub(crate) mod cache_aware;
pub mod catalog;
pub mod feedback;
pub mod observe;
mod overflow;
pub mod policy;
pub mod prompt_cache;
pub mod prompt_router;
pub(crate) mod shape;
pub(crate) mod targets;
pub(crate) mod tier;
pub(crate) mod variant;

use std::sync::Arc;

use serde::Serialize;

pub use crate::types::{Attempt, CacheChange, Exclusion, OverflowCause, Reason, Target};
pub use catalog::Catalog;
pub use observe::{Fresh, Load, Observations, TargetView};
pub use policy::{Draft, Planner, Policy};
pub use variant::ChosenModel;

use crate::config::{Config, ModelConfig};
use crate::types::GenerateRequest;
use crate::types::Provider;
use crate::types::Result;

/// What `execute` will do for one call: attempts in order, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The configured model chosen (the variant, for a family).
    pub model: Arc<str>,
    /// The family the request named, if any.
    pub family: Option<Arc<str>>,
    /// Who serves the chosen model (Bedrock, SageMaker, a provider of your own).
    pub provider: Provider,
    /// Targets to try, best first; a failure that allows failover moves to the next.
    pub attempts: Vec<Attempt>,
    /// Where the call may go instead when every attempt's target is at its concurrency, best
    /// first (`[routing.overflow]`): the model's other targets, then a stronger variant.
    pub overflow: Vec<Attempt>,
    /// Every choice made, and every alternative rejected, in order.
    pub reasons: Vec<Reason>,
    /// Prompt-cache checkpoints for the plan's model, and the request's prefixes.
    pub cache: prompt_cache::CachePlan,
}

/// Plans one call from the request, the configuration and the live state at one instant, with
/// the built-in policies. A router builds its [`Planner`] once; this reads the configuration's
/// model files on every call, so it is for one-off plans and tests.
///
/// ```
/// use laneway::{plan, state::Fresh, Config, GenerateRequest, SloClass, ServiceTier};
/// let config = Config::default();
/// let now = laneway::time::now();
/// let p = plan(&GenerateRequest::user("hi").family("claude").slo_class(SloClass::Interactive), &config, &Fresh(now)).unwrap();
/// assert!(config.families["claude"].variants.iter().any(|v| **v == *p.model)); // the classifier's pick
/// assert_eq!(p.attempts[0].tier, Some(ServiceTier::PRIORITY));
/// assert_eq!(p.attempts[0].target.region(), "us-east-1");
/// ```
pub fn plan(request: &GenerateRequest, config: &Config, obs: &impl Observations) -> Result<Plan> {
    Planner::new(config)?.plan(request, config, obs)
}

/// The attempt on a family's prompt router, unless the residency rules it out: a router may
/// invoke cross-region profiles, so it is allowed under a geography that holds its region and
/// never under a list of regions.
fn prompt_router_attempt(
    arn: &str,
    request: &GenerateRequest,
    model: &Arc<str>,
    config: &Config,
    model_attempts: &[Attempt],
    reasons: &mut Vec<Reason>,
) -> Option<Attempt> {
    let (region, _) = prompt_router::parse_arn(arn)?;
    let target = Target::bedrock(region, arn, None);
    let allowed = match &request.residency {
        None => true,
        Some(r @ crate::types::Residency::Geography(_)) => config.keeps_within(&target, r),
        Some(crate::types::Residency::Regions(_)) => false,
    };
    if !allowed {
        reasons.push(Reason::TargetExcluded {
            target: target.id,
            region: target.region,
            why: Exclusion::Residency,
        });
        return None;
    }
    Some(Attempt {
        model: Arc::clone(model),
        target,
        // The tier the plan chose for the model, as its own attempts carry it.
        tier: model_attempts.first().and_then(|a| a.tier),
        latency_optimized: false,
        shape: Default::default(),
    })
}

/// What every step of planning one request reads: the request, the configuration, its
/// catalog and the live state.
#[derive(Clone, Copy)]
pub(crate) struct Inputs<'a> {
    pub(crate) request: &'a GenerateRequest,
    pub(crate) config: &'a Config,
    pub(crate) catalog: &'a Catalog,
    pub(crate) obs: &'a dyn Observations,
}

/// The ordered attempts on one model: its tier, then its targets.
fn attempts_for(
    inputs: Inputs<'_>,
    chosen: &variant::ChosenModel,
    model: &ModelConfig,
    affinity: Option<&(String, String)>,
    reasons: &mut Vec<Reason>,
) -> Result<Vec<Attempt>> {
    let Inputs {
        request,
        config,
        obs,
        ..
    } = inputs;
    let tier = tier::choose(request, &chosen.model, model, config, obs, reasons)?;
    let latency_optimized = tier::latency_optimized(request, model, reasons);
    Ok(attempts_at(
        inputs,
        chosen,
        model,
        (tier, latency_optimized),
        affinity,
        reasons,
    ))
}

/// The ordered attempts on one model at a tier chosen already.
fn attempts_at(
    inputs: Inputs<'_>,
    chosen: &variant::ChosenModel,
    model: &ModelConfig,
    (tier, latency_optimized): (Option<crate::types::ServiceTier>, bool),
    affinity: Option<&(String, String)>,
    reasons: &mut Vec<Reason>,
) -> Vec<Attempt> {
    let mut ordered = targets::enumerate(inputs, chosen, model, tier, reasons);
    if let Some(cached_at) = affinity {
        targets::prefer_cached(&mut ordered, cached_at, inputs, model, tier, reasons);
    }
    ordered
        .into_iter()
        .map(|target| Attempt {
            model: Arc::clone(&chosen.model),
            target,
            tier,
            latency_optimized,
            shape: Default::default(),
        })
        .collect()
}
