//! The price book: what one call costs from its usage, tier and target.

pub use crate::config::Price;
use crate::config::PricingConfig;
use crate::types::ProfileScope;
use crate::types::Usage;
use crate::types::{CacheTtl, ServiceTier};

impl Price {
    /// The cost of `usage` at these prices, before tier and profile multipliers.
    ///
    /// ```
    /// use laneway::{Price, Usage};
    /// let p = Price { input_per_1k: 0.003, output_per_1k: 0.015, cache_read_per_1k: Some(0.0003), ..Price::default() };
    /// let u = Usage { input_tokens: 1000, output_tokens: 1000, ..Usage::default() };
    /// assert!((p.base_cost(&u) - 0.018).abs() < 1e-12);
    /// ```
    pub fn base_cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u32, price: f64| f64::from(tokens) / 1000.0 * price;
        let write_1h = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
        per(usage.input_tokens, self.input_per_1k)
            + per(usage.output_tokens, self.output_per_1k)
            + per(usage.cache_read_tokens, self.read_price())
            + per(
                usage.cache_write_tokens - write_1h,
                self.write_price(CacheTtl::FiveMinutes),
            )
            + per(write_1h, self.write_price(CacheTtl::OneHour))
    }

    /// The price per 1K tokens of a cache read.
    pub fn read_price(&self) -> f64 {
        self.cache_read_per_1k.unwrap_or(self.input_per_1k)
    }

    /// The price per 1K tokens of a cache write with this TTL.
    pub fn write_price(&self, ttl: CacheTtl) -> f64 {
        match ttl {
            CacheTtl::FiveMinutes => self.cache_write_per_1k.unwrap_or(self.input_per_1k),
            CacheTtl::OneHour => self
                .cache_write_1h_per_1k
                .unwrap_or(2.0 * self.input_per_1k),
        }
    }
}

/// The cost of one call in US dollars: the base price times the multipliers of its tier and of
/// the scope of the target that served it (in-Region id, geographic or global profile), the
/// model's own where its price sets them ([`PricingConfig::factor`]).
pub fn call_cost(
    price: &Price,
    pricing: &PricingConfig,
    usage: &Usage,
    tier: Option<ServiceTier>,
    profile: Option<&ProfileScope>,
) -> f64 {
    price.base_cost(usage) * pricing.factor(price, tier, profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier_and_global_multipliers_apply() {
        let price = Price {
            input_per_1k: 1.0,
            output_per_1k: 2.0,
            cache_read_per_1k: Some(0.1),
            cache_write_per_1k: Some(1.25),
            cache_write_1h_per_1k: None,
            ..Price::default()
        };
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 1000,
            cache_read_tokens: 1000,
            cache_write_tokens: 1000,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
            input_estimated: false,
        };
        let pricing = PricingConfig::default();
        let base = call_cost(&price, &pricing, &usage, Some(ServiceTier::Standard), None);
        assert!((base - 4.35).abs() < 1e-9);
        let flex = call_cost(&price, &pricing, &usage, Some(ServiceTier::Flex), None);
        assert!((flex - 4.35 * pricing.tier_multiplier(ServiceTier::Flex)).abs() < 1e-9);
        let global = call_cost(
            &price,
            &pricing,
            &usage,
            Some(ServiceTier::Standard),
            Some(&ProfileScope::Global),
        );
        assert!((global - 4.35 * pricing.scopes.global).abs() < 1e-9);
        let own = Price {
            scopes: Some(crate::config::ScopeMultipliers {
                in_region: 1.1,
                geographic: 1.1,
                global: 1.0,
            }),
            tiers: crate::config::TierMultipliers::default().with(ServiceTier::Flex, 0.6),
            ..price
        };
        let own_flex = call_cost(&own, &pricing, &usage, Some(ServiceTier::Flex), None);
        assert!((own_flex - 4.35 * 0.6 * 1.1).abs() < 1e-9);
        let own_global = call_cost(
            &own,
            &pricing,
            &usage,
            Some(ServiceTier::Priority),
            Some(&ProfileScope::Global),
        );
        assert!((own_global - 4.35 * pricing.tier_multiplier(ServiceTier::Priority)).abs() < 1e-9);
    }
}
