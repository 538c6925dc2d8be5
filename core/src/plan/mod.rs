//! Planning: a pure function from a request and the configuration to an ordered list of
//! attempts, with the reason for every choice. No I/O, no clock, no awaits.
//!
//! The policies run in a fixed order: [`variant`] (which model) -> [`tier`] (which service tier)
//! -> [`targets`] (which regions, profiles or endpoints) -> [`prompt_cache`] (which checkpoints).

pub mod prompt_cache;
pub mod targets;
pub mod tier;
pub mod variant;

mod reason;

use serde::Serialize;

pub use reason::{Exclusion, Reason};

use crate::config::{Config, EndpointConfig, ModelConfig, ProfileScope, Provider};
use crate::error::Result;
use crate::request::{GenerateRequest, ServiceTier};

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
}

/// One target to try, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub target: Target,
    /// The Bedrock service tier; `None` for SageMaker.
    pub tier: Option<ServiceTier>,
    /// Ask for latency-optimized inference (`performanceConfig.latency = optimized`).
    pub latency_optimized: bool,
}

/// Where an attempt goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Bedrock {
        region: String,
        /// The id sent: the bare model id or an inference-profile id.
        model_id: String,
        /// The profile, when `model_id` is a profile id.
        profile: Option<ProfileScope>,
    },
    Sagemaker {
        region: String,
        endpoint: EndpointConfig,
    },
}

impl Target {
    /// The id sent: model id, profile id or endpoint name.
    pub fn id(&self) -> &str {
        match self {
            Target::Bedrock { model_id, .. } => model_id,
            Target::Sagemaker { endpoint, .. } => &endpoint.name,
        }
    }
    /// The region the request is signed for.
    pub fn region(&self) -> &str {
        match self {
            Target::Bedrock { region, .. } | Target::Sagemaker { region, .. } => region,
        }
    }
    /// The inference profile, for Bedrock profile targets.
    pub fn profile(&self) -> Option<ProfileScope> {
        match self {
            Target::Bedrock { profile, .. } => *profile,
            Target::Sagemaker { .. } => None,
        }
    }
}

/// Plans one call.
///
/// ```
/// use laneway::{plan, Config, GenerateRequest, SloClass, ServiceTier};
/// let config = Config::default();
/// let p = plan(&GenerateRequest::user("hi").family("nova").slo_class(SloClass::Interactive), &config).unwrap();
/// assert_eq!(p.model, "amazon.nova-lite-v1:0");
/// assert_eq!(p.attempts[0].tier, Some(ServiceTier::Priority));
/// assert_eq!(p.attempts[0].target.region(), "us-east-1");
/// ```
pub fn plan(request: &GenerateRequest, config: &Config) -> Result<Plan> {
    request.validate()?;
    let mut reasons = Vec::new();
    let chosen = variant::choose(request, config, &mut reasons)?;
    let model: &ModelConfig = &config.models[&chosen.model];
    let tier = tier::choose(request, &chosen.model, model, config, &mut reasons)?;
    let latency_optimized = tier::latency_optimized(request, model, &mut reasons);
    let targets = targets::enumerate(request, &chosen, model, config, &mut reasons)?;
    prompt_cache::check_pinned(request, &chosen.model, model, &mut reasons)?;
    Ok(Plan {
        provider: model.provider,
        attempts: targets
            .into_iter()
            .map(|target| Attempt {
                target,
                tier,
                latency_optimized,
            })
            .collect(),
        model: chosen.model,
        family: chosen.family,
        reasons,
    })
}
