//! `[pricing]`: the multipliers every model's price takes by tier and by the scope of the target that serves it.

use super::{
    BTreeMap, Config, Deserialize, Price, ProfileScope, ScopeMultipliers, Serialize, ServiceTier,
};

/// Price multipliers by tier and for global profiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricingConfig {
    /// Each service tier's price as a multiple of the standard price (`[pricing.tiers]`); every
    /// tier needs one.
    pub tiers: BTreeMap<ServiceTier, f64>,
    /// Multipliers by the scope of the target that serves a call (in-Region id, geographic or
    /// global profile), for models whose price sets none (`[pricing.scopes]`).
    pub scopes: ScopeMultipliers,
    /// US dollars per hour of each SageMaker instance type: what a self-hosted model costs
    /// (`laneway bench` turns it into cost per request at the measured throughput).
    #[serde(default)]
    pub instance_hourly: BTreeMap<String, f64>,
    /// Batch inference costs this fraction of the on-demand (standard) price.
    pub batch: f64,
    /// Your discount on every model's price (private pricing, a committed-use discount), a
    /// fraction: `0.1` pays 90% of the listed price. A model's `price.discount` replaces it.
    pub discount: f64,
}

impl Default for PricingConfig {
    /// `[pricing]` of the built-in `defaults.toml`, the one place its defaults are written.
    fn default() -> Self {
        Config::builtin().pricing.clone()
    }
}

impl PricingConfig {
    /// The multiplier of a tier.
    pub fn tier_multiplier(&self, tier: ServiceTier) -> f64 {
        // Validation guarantees every tier a multiplier.
        self.tiers.get(&tier).copied().unwrap_or(1.0)
    }

    /// What a model's base price is multiplied by at `tier` (`None`: no tier, as SageMaker)
    /// on a target with `profile`: the model's own multipliers where it sets them, else these.
    ///
    /// ```
    /// use laneway::{Config, ProfileScope, ServiceTier};
    /// let config = Config::default();
    /// let opus = config.models["anthropic.claude-opus-4-6-v1"].price();
    /// let global = config.pricing.factor(opus, Some(ServiceTier::STANDARD), Some(&ProfileScope::Global));
    /// let geo = config.pricing.factor(opus, Some(ServiceTier::STANDARD), config.profile_scope("us").as_ref());
    /// assert!((geo / global - 1.1).abs() < 1e-3); // in-Region and geographic: 10% above global
    /// ```
    pub fn factor(
        &self,
        price: &Price,
        tier: Option<ServiceTier>,
        profile: Option<&ProfileScope>,
    ) -> f64 {
        let tier_factor = tier.map_or(1.0, |t| {
            price
                .tiers
                .get(t)
                .unwrap_or_else(|| self.tier_multiplier(t))
        });
        tier_factor * price.scopes.unwrap_or(self.scopes).of(profile)
    }
}
