//! Planning: a pure function from a request and the configuration to an ordered list of
//! attempts, with the reason for every choice. No I/O, no clock reads (the time comes with the
//! [`Observations`]), no awaits.
//!
//! The policies run in a fixed order: [`variant`] (which model) -> [`tier`] (which service tier)
//! -> [`targets`] (which regions, profiles or endpoints) -> [`prompt_cache`] (which checkpoints).

pub mod prompt_cache;
pub mod prompt_router;
pub mod targets;
pub mod tier;
pub mod variant;

mod reason;

use serde::Serialize;

pub use reason::{Exclusion, OverflowCause, Reason};

use crate::config::{Config, ModelConfig, ProfileScope, Provider};
use crate::error::{Error, Result};
use crate::request::{GenerateRequest, ServiceTier};
use crate::state::Observations;

/// What `execute` will do for one call: attempts in order, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The configured model chosen (the variant, for a family).
    pub model: String,
    /// The family the request named, if any.
    pub family: Option<String>,
    pub provider: Provider,
    /// Targets to try, best first; a failure that allows failover moves to the next.
    pub attempts: Vec<Attempt>,
    /// Every choice made, and every alternative rejected, in order.
    pub reasons: Vec<Reason>,
    /// Prompt-cache checkpoints for the plan's model, and the request's prefixes.
    pub cache: prompt_cache::CachePlan,
}

/// One target to try, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// The configured model this attempt sends to (a fallback family's variant may differ from
    /// the plan's model).
    pub model: String,
    pub target: Target,
    /// The Bedrock service tier; `None` for SageMaker.
    pub tier: Option<ServiceTier>,
    /// Ask for latency-optimized inference (`performanceConfig.latency = optimized`).
    pub latency_optimized: bool,
}

/// Where an attempt goes: a provider, a region, and the id sent there.
///
/// ```
/// use laneway::{config::ProfileScope, Provider, Target};
/// let t = Target::bedrock("us-east-1", "us.amazon.nova-lite-v1:0", Some(ProfileScope::Us));
/// assert_eq!((t.id(), t.region(), t.provider()), ("us.amazon.nova-lite-v1:0", "us-east-1", &Provider::Bedrock));
/// let e = Target::sagemaker("us-west-2", "llama-tgi");
/// assert_eq!(e.profile(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The service that serves it.
    pub provider: Provider,
    /// The region the request is signed for (for your own providers, any name you give).
    pub region: String,
    /// The id sent: a Bedrock model or inference-profile id, a SageMaker endpoint name, or your
    /// provider's model id.
    pub id: String,
    /// The Bedrock inference profile, when `id` is a profile id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileScope>,
}

impl Target {
    /// A Bedrock model or inference profile in a region.
    pub fn bedrock(
        region: impl Into<String>,
        model_id: impl Into<String>,
        profile: Option<ProfileScope>,
    ) -> Self {
        Self {
            provider: Provider::Bedrock,
            region: region.into(),
            id: model_id.into(),
            profile,
        }
    }

    /// A SageMaker endpoint, by name, in its region.
    pub fn sagemaker(region: impl Into<String>, endpoint: impl Into<String>) -> Self {
        Self {
            provider: Provider::Sagemaker,
            region: region.into(),
            id: endpoint.into(),
            profile: None,
        }
    }

    /// The id sent: model id, profile id or endpoint name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The service that serves this target.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// The region the request is signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The inference profile, for Bedrock profile targets.
    pub fn profile(&self) -> Option<ProfileScope> {
        self.profile
    }
}

/// Plans one call from the request, the configuration and the live state at one instant.
///
/// ```
/// use laneway::{plan, state::Fresh, Config, GenerateRequest, SloClass, ServiceTier};
/// let config = Config::default();
/// let now = std::time::Instant::now();
/// let p = plan(&GenerateRequest::user("hi").family("nova").slo_class(SloClass::Interactive), &config, &Fresh(now)).unwrap();
/// assert_eq!(p.model, "amazon.nova-lite-v1:0");
/// assert_eq!(p.attempts[0].tier, Some(ServiceTier::Priority));
/// assert_eq!(p.attempts[0].target.region(), "us-east-1");
/// ```
pub fn plan(request: &GenerateRequest, config: &Config, obs: &impl Observations) -> Result<Plan> {
    request.validate()?;
    let mut reasons = Vec::new();
    let chosen = variant::choose(request, config, &mut reasons)?;
    let model: &ModelConfig = &config.models[&chosen.model];
    let survey = prompt_cache::survey(request, model, obs.token_counter(), obs);
    let mut attempts = attempts_for(
        request,
        &chosen,
        model,
        config,
        obs,
        survey.affinity.as_ref(),
        &mut reasons,
    )?;
    if let Some(first) = attempts.first() {
        if let Some(tier) =
            tier::escalate_for_deadline(request, model, first, config, obs, &mut reasons)
        {
            for a in &mut attempts {
                a.tier = Some(tier);
            }
        }
    }
    if let Some(arn) = &chosen.prompt_router {
        if let Some(router) =
            prompt_router_attempt(arn, request, &chosen.model, config, &attempts, &mut reasons)
        {
            attempts.insert(0, router);
        }
    }
    let limit = config.routing.max_attempts as usize;
    // A stronger variant of the family, if the chosen one cannot serve: never a weaker one.
    let step_up = match &chosen.step_up {
        Some(stronger) => {
            let stronger_model = variant::ChosenModel {
                model: stronger.clone(),
                family: chosen.family.clone(),
                pinned_profile: None,
                step_up: None,
                prompt_router: None,
            };
            let mut no_reasons = Vec::new();
            let attempts = attempts_for(
                request,
                &stronger_model,
                &config.models[stronger],
                config,
                obs,
                None,
                &mut no_reasons,
            )
            .unwrap_or_default();
            if !attempts.is_empty() {
                reasons.push(Reason::VariantStepUp {
                    from: chosen.model.clone(),
                    to: stronger.clone(),
                });
            }
            attempts
        }
        None => Vec::new(),
    };
    let fallback = match &model.fallback_family {
        Some(family) => {
            let family_cfg = &config.families[family];
            let variant = family_cfg.default_variant().to_string();
            reasons.push(Reason::FallbackFamily {
                family: family.clone(),
                variant: variant.clone(),
            });
            let fallback_model = variant::ChosenModel {
                model: variant,
                family: Some(family.clone()),
                pinned_profile: None,
                step_up: None,
                prompt_router: None,
            };
            let fb = &config.models[&fallback_model.model];
            // A fallback whose own tier is impossible (a forced SageMaker-only tier) is skipped.
            let mut no_reasons = Vec::new();
            attempts_for(
                request,
                &fallback_model,
                fb,
                config,
                obs,
                None,
                &mut no_reasons,
            )
            .unwrap_or_default()
        }
        None => Vec::new(),
    };
    // Keep room for one step-up attempt and one fallback attempt within the limit.
    let reserved = usize::from(!step_up.is_empty()) + usize::from(!fallback.is_empty());
    let primary_limit = limit.saturating_sub(reserved).max(1);
    for a in attempts.iter().skip(primary_limit) {
        reasons.push(Reason::TargetExcluded {
            target: a.target.id().to_string(),
            region: a.target.region().to_string(),
            why: Exclusion::AttemptLimit,
        });
    }
    attempts.truncate(primary_limit);
    let room = limit.saturating_sub(attempts.len());
    let step_up_room = if fallback.is_empty() {
        room
    } else {
        room.saturating_sub(1).max(1)
    };
    attempts.extend(step_up.into_iter().take(step_up_room));
    let room = limit.saturating_sub(attempts.len());
    attempts.extend(fallback.into_iter().take(room));
    if attempts.is_empty() {
        return Err(Error::invalid(
            "residency",
            format!(
                "no target of {} satisfies the request's residency {:?}",
                chosen.model, request.residency
            ),
        ));
    }
    reasons.push(Reason::TargetsOrdered {
        first: attempts[0].target.id().to_string(),
        region: attempts[0].target.region().to_string(),
        fallbacks: attempts.len() - 1,
    });
    let cache = prompt_cache::place(
        request,
        &chosen.model,
        model,
        config,
        obs,
        survey,
        &mut reasons,
    );
    Ok(Plan {
        provider: model.provider.clone(),
        attempts,
        model: chosen.model,
        family: chosen.family,
        reasons,
        cache,
    })
}

/// The attempt on a family's prompt router, unless the residency rules it out: a router may
/// invoke cross-region profiles, so it is allowed under a geography that holds its region and
/// never under a list of regions.
fn prompt_router_attempt(
    arn: &str,
    request: &GenerateRequest,
    model: &str,
    config: &Config,
    model_attempts: &[Attempt],
    reasons: &mut Vec<Reason>,
) -> Option<Attempt> {
    let (region, _) = prompt_router::parse_arn(arn)?;
    let target = Target::bedrock(region, arn, None);
    let allowed = match &request.residency {
        None => true,
        Some(r @ crate::request::Residency::Geography(_)) => targets::allowed(&target, r, config),
        Some(crate::request::Residency::Regions(_)) => false,
    };
    if !allowed {
        reasons.push(Reason::TargetExcluded {
            target: arn.to_string(),
            region: region.to_string(),
            why: Exclusion::Residency,
        });
        return None;
    }
    Some(Attempt {
        model: model.to_string(),
        target,
        // The tier the plan chose for the model, as its own attempts carry it.
        tier: model_attempts.first().and_then(|a| a.tier),
        latency_optimized: false,
    })
}

/// The ordered attempts on one model: its tier, then its targets.
fn attempts_for(
    request: &GenerateRequest,
    chosen: &variant::ChosenModel,
    model: &ModelConfig,
    config: &Config,
    obs: &impl Observations,
    affinity: Option<&(String, String)>,
    reasons: &mut Vec<Reason>,
) -> Result<Vec<Attempt>> {
    let tier = tier::choose(request, &chosen.model, model, config, obs, reasons)?;
    let latency_optimized = tier::latency_optimized(request, model, reasons);
    let mut ordered = targets::enumerate(request, chosen, model, tier, config, obs, reasons);
    if let Some(cached_at) = affinity {
        targets::prefer_cached(&mut ordered, cached_at, request, tier, config, obs, reasons);
    }
    Ok(ordered
        .into_iter()
        .map(|target| Attempt {
            model: chosen.model.clone(),
            target,
            tier,
            latency_optimized,
        })
        .collect())
}
