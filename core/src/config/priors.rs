//! Latency priors: what a target is expected to take before it has answered
//! (`[routing.priors]`, by service tier, and a model's own `latency` table), so that a cold
//! router's time limits and hedge delay start from what the model normally takes instead of
//! its class's ceiling.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::types::{Api, ServiceTier};

/// What an attempt on a target is expected to take, before the target has shown it.
///
/// ```
/// use laneway::types::{Api, ServiceTier};
/// let c = laneway::Config::default();
/// let flex = c.latency_prior("amazon.nova-lite-v1:0", Some(ServiceTier::FLEX), Api::Converse);
/// let standard = c.latency_prior("amazon.nova-lite-v1:0", None, Api::Converse);
/// assert!(flex.ttft_p99 > standard.ttft_p99);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyPrior {
    /// The median time to the first token, a short prompt's (milliseconds): ranks targets
    /// not measured yet when a call asks for the fastest.
    #[serde(with = "crate::types::units::serde_millis")]
    pub ttft: Duration,
    /// A high quantile (the 99th percentile) of the time to the first token (milliseconds): a
    /// cold target's first-token limit is `routing.timeouts.learned.factor` times it, and a
    /// cold call's hedge goes after it.
    #[serde(with = "crate::types::units::serde_millis")]
    pub ttft_p99: Duration,
    /// A high quantile of a stream's longest gap between two deltas (milliseconds): a cold
    /// target's idle limit is `factor` times it.
    #[serde(with = "crate::types::units::serde_millis")]
    pub gap_p99: Duration,
    /// The median output speed, tokens per second: when a whole (not streamed) answer is due.
    pub tokens_per_second: f64,
}

impl LatencyPrior {
    /// What is assumed of a tier no prior describes: `defaults.toml`'s standard figures.
    /// Validation gives every declared tier a prior, so only a configuration built by hand
    /// without one meets it.
    pub const UNKNOWN: LatencyPrior = LatencyPrior {
        ttft: Duration::from_millis(800),
        ttft_p99: Duration::from_millis(2500),
        gap_p99: Duration::from_millis(1200),
        tokens_per_second: 50.0,
    };
}

/// A model's own priors for one tier: each value it leaves out is its tier's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialPrior {
    /// See [`LatencyPrior::ttft`] (milliseconds).
    #[serde(
        default,
        with = "crate::types::units::serde_opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttft: Option<Duration>,
    /// See [`LatencyPrior::ttft_p99`] (milliseconds).
    #[serde(
        default,
        with = "crate::types::units::serde_opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttft_p99: Option<Duration>,
    /// See [`LatencyPrior::gap_p99`] (milliseconds).
    #[serde(
        default,
        with = "crate::types::units::serde_opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub gap_p99: Option<Duration>,
    /// See [`LatencyPrior::tokens_per_second`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
}

impl PartialPrior {
    /// These figures, given against `from` (a tier's prior), as they would read against `to`
    /// (another tier's): each scaled by the ratio of the two tiers' figures.
    fn scaled(&self, from: LatencyPrior, to: LatencyPrior) -> PartialPrior {
        let time = |d: Option<Duration>, f: Duration, t: Duration| {
            d.and_then(|d| {
                let ratio = t.as_secs_f64() / f.as_secs_f64().max(1e-3);
                crate::types::units::clamped_secs(d.as_secs_f64() * ratio)
            })
        };
        PartialPrior {
            ttft: time(self.ttft, from.ttft, to.ttft),
            ttft_p99: time(self.ttft_p99, from.ttft_p99, to.ttft_p99),
            gap_p99: time(self.gap_p99, from.gap_p99, to.gap_p99),
            tokens_per_second: self
                .tokens_per_second
                .map(|t| t * to.tokens_per_second / from.tokens_per_second.max(1e-9)),
        }
    }

    /// `base` with the values this one sets. A median set without its 99th percentile scales
    /// `base`'s percentile by the same ratio: a model twice as fast as its tier's median is
    /// expected to be twice as fast at the tail too.
    pub fn over(&self, base: LatencyPrior) -> LatencyPrior {
        let scaled_p99 = self.ttft.map(|ttft| {
            let ratio = ttft.as_secs_f64() / base.ttft.as_secs_f64().max(1e-3);
            crate::types::units::clamped_secs(base.ttft_p99.as_secs_f64() * ratio)
                .unwrap_or(base.ttft_p99)
                .max(ttft)
        });
        LatencyPrior {
            ttft: self.ttft.unwrap_or(base.ttft),
            ttft_p99: self.ttft_p99.or(scaled_p99).unwrap_or(base.ttft_p99),
            gap_p99: self.gap_p99.unwrap_or(base.gap_p99),
            tokens_per_second: self.tokens_per_second.unwrap_or(base.tokens_per_second),
        }
    }
}

/// A model's own latency priors (its `latency` table), by tier, and for its OpenAI-compatible
/// APIs (bedrock-runtime's `/openai/v1` and bedrock-mantle) where they differ:
///
/// ```toml
/// [models."amazon.nova-micro-v1:0".latency.tiers]
/// standard = { ttft = 300, tokens_per_second = 200 }
/// [models."openai.gpt-oss-120b-1:0".latency.openai]
/// standard = { ttft = 300 }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelLatency {
    /// By the tier an attempt is sent at (`standard` for a target without tiers).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<ServiceTier, PartialPrior>,
    /// By the OpenAI-compatible APIs, by tier: over `tiers`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub openai: BTreeMap<ServiceTier, PartialPrior>,
}

impl ModelLatency {
    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty() && self.openai.is_empty()
    }
}

/// The priors of each tier (`[routing.priors]`, a table per tier), and how much they count
/// against a target's own observations.
///
/// A target that has not answered yet is given limits from its model's prior (its `latency`
/// table, else its tier's here): a first-token limit of `routing.timeouts.learned.factor`
/// times `ttft_p99` (plus its input and reasoning allowances), an idle limit of `factor` times
/// `gap_p99`, and for a standard or interactive call a hedge after `ttft_p99`. As it answers,
/// its own quantiles take over: with `n` observations, each figure is
/// `(weight × prior + n × observed) / (weight + n)`, and its own alone once
/// `routing.timeouts.learned.min_samples` are in. An attempt cut by such a limit shows the
/// prior was too short for the target: its observations alone count from then on (each cut
/// gives the next attempt `factor` times longer), so a target ten times slower than its prior
/// is still served. The figures are AWS's and other published medians where they exist
/// (the catalog cites them), else these documented defaults; set your own from what you
/// measure (`laneway bench`).
///
/// ```
/// let c = laneway::Config::default();
/// assert_eq!(c.routing.priors.weight, 4);
/// use laneway::types::ServiceTier;
/// let p = c.routing.priors;
/// assert!(p.for_tier(Some(ServiceTier::FLEX)).ttft_p99 > p.for_tier(Some(ServiceTier::PRIORITY)).ttft_p99);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PriorsConfig {
    /// How many observations a prior counts as (0: none; the class's limits until
    /// `min_samples`, as without priors). Figures another process knew of a target (the
    /// fleet's, or the local state file's) are not priors: they count as the observations
    /// they are of, up to `min_samples`.
    pub weight: u32,
    /// Each tier's prior (`[routing.priors.<tier>]`); validation requires one for every tier
    /// the configuration declares.
    tiers: BTreeMap<ServiceTier, LatencyPrior>,
}

impl PriorsConfig {
    /// The prior of a tier (`None`: a target without tiers, as standard; a tier without a
    /// prior of its own, which validation refuses, as standard too).
    pub fn for_tier(&self, tier: Option<ServiceTier>) -> LatencyPrior {
        tier.and_then(|t| self.tiers.get(&t))
            .or_else(|| self.tiers.get(&ServiceTier::STANDARD))
            .copied()
            .unwrap_or(LatencyPrior::UNKNOWN)
    }

    /// Sets a tier's prior.
    pub fn set(&mut self, tier: ServiceTier, prior: LatencyPrior) {
        self.tiers.insert(tier, prior);
    }

    /// Whether `tier` has a prior of its own.
    pub fn has(&self, tier: ServiceTier) -> bool {
        self.tiers.contains_key(&tier)
    }

    /// The tiers with a prior, and their priors.
    pub fn tiers(&self) -> impl Iterator<Item = (ServiceTier, &LatencyPrior)> {
        self.tiers.iter().map(|(t, p)| (*t, p))
    }
}

impl Serialize for PriorsConfig {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = ser.serialize_map(Some(1 + self.tiers.len()))?;
        map.serialize_entry("weight", &self.weight)?;
        for (tier, prior) in &self.tiers {
            map.serialize_entry(tier.as_str(), prior)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for PriorsConfig {
    /// `weight`, and a table per declared tier (validation checks that each declared tier has
    /// one: `defaults.toml` has the built-in ones').
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut table = toml::Table::deserialize(d)?;
        let weight = match table.remove("weight") {
            Some(v) => u32::deserialize(v).map_err(D::Error::custom)?,
            None => return Err(D::Error::missing_field("weight")),
        };
        let mut tiers = BTreeMap::new();
        for (key, value) in table {
            let tier: ServiceTier = key.parse().map_err(|e| {
                D::Error::custom(format!(
                    "`{key}` is neither `weight` nor a service tier: {e}"
                ))
            })?;
            let prior = LatencyPrior::deserialize(value)
                .map_err(|e| D::Error::custom(format!("{key}: {}", e.message())))?;
            tiers.insert(tier, prior);
        }
        Ok(Self { weight, tiers })
    }
}

impl PriorsConfig {
    /// The prior of `model` called by `api` at `tier`: its own figures over its tier's.
    pub fn of(
        &self,
        model: &super::ModelConfig,
        tier: Option<ServiceTier>,
        api: Api,
    ) -> LatencyPrior {
        resolve(self, Some(model.latency()), tier, api)
    }
}

/// The prior of a model called by one API at one tier: its own figures over its tier's.
pub(super) fn resolve(
    priors: &PriorsConfig,
    model: Option<&ModelLatency>,
    tier: Option<ServiceTier>,
    api: Api,
) -> LatencyPrior {
    let base = priors.for_tier(tier);
    let Some(model) = model else {
        return base;
    };
    let key = tier.unwrap_or(ServiceTier::STANDARD);
    let own = match model.tiers.get(&key) {
        Some(p) => p.over(base),
        // A tier the model says nothing of: its standard figures, scaled as the tiers' are.
        None => model
            .tiers
            .get(&ServiceTier::STANDARD)
            .map_or(base, |standard| {
                standard.scaled(priors.for_tier(None), base).over(base)
            }),
    };
    match model.openai.get(&key) {
        Some(p) if api.is_openai_compatible() => p.over(own),
        _ => own,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_figures_override_its_tiers_and_its_openai_apis_their_own() {
        let priors = crate::config::Config::default().routing.priors;
        let model: ModelLatency = toml::from_str(
            "[tiers]\nstandard = { ttft = 300 }\n[openai]\nstandard = { ttft_p99 = 900 }\n",
        )
        .unwrap();
        let converse = resolve(&priors, Some(&model), None, Api::Converse);
        assert_eq!(converse.ttft, Duration::from_millis(300));
        // A median without its tail: the tier's tail, scaled alike.
        let tier = priors.for_tier(None);
        let scaled = tier.ttft_p99.as_secs_f64() * 0.3 / tier.ttft.as_secs_f64();
        assert!((converse.ttft_p99.as_secs_f64() - scaled).abs() < 1e-6);
        let openai = resolve(&priors, Some(&model), None, Api::OpenAiMantle);
        assert_eq!(openai.ttft, Duration::from_millis(300));
        assert_eq!(openai.ttft_p99, Duration::from_millis(900));
        // A tier the model says nothing of: its standard figures, scaled as the tiers' are.
        let flex = resolve(
            &priors,
            Some(&model),
            Some(ServiceTier::FLEX),
            Api::Converse,
        );
        let tier_flex = priors.for_tier(Some(ServiceTier::FLEX));
        let expected = tier_flex.ttft.as_secs_f64() * 0.3 / tier.ttft.as_secs_f64();
        assert!((flex.ttft.as_secs_f64() - expected).abs() < 1e-6);
        assert!(flex.ttft_p99 < tier_flex.ttft_p99);
        assert_eq!(flex.gap_p99, tier_flex.gap_p99);
        // A model without a table of its own: the tier's.
        assert_eq!(
            resolve(&priors, None, Some(ServiceTier::FLEX), Api::Converse),
            tier_flex
        );
    }
}
