//! The price book: what one call costs from its usage, tier and target; and the prices of
//! AWS's own price list, read into price rows (`offer`).

pub mod offer;

pub use crate::config::Price;
use crate::config::{LongContextBand, PriceRow, PriceScope, PricingConfig};
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

    /// The price per 1K tokens of a cache write with this TTL: `cache_write_per_1k` is the
    /// model's shorter lifetime's (5 minutes on Converse, 30 minutes on the Responses API,
    /// which has only that one), `cache_write_1h_per_1k` the hour's.
    pub fn write_price(&self, ttl: CacheTtl) -> f64 {
        match ttl {
            CacheTtl::FiveMinutes | CacheTtl::ThirtyMinutes => {
                self.cache_write_per_1k.unwrap_or(self.input_per_1k)
            }
            CacheTtl::OneHour => self
                .cache_write_1h_per_1k
                .unwrap_or(2.0 * self.input_per_1k),
        }
    }
}

/// Where and how a call was served, as its price depends on it: the region it was sent to
/// (`None`: any, when unknown), its tier (`None`: a target without tiers) and the profile of
/// its target (`None`: the model's in-Region id).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Served<'a> {
    /// The region it was sent to.
    pub region: Option<&'a str>,
    /// The tier that served it.
    pub tier: Option<ServiceTier>,
    /// The inference profile of its target.
    pub profile: Option<&'a ProfileScope>,
}

/// What one call pays per 1K tokens of each kind, in US dollars, where it was served.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Input tokens neither read from nor written to the cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes with the 5-minute TTL.
    pub cache_write: f64,
    /// Cache writes with the 1-hour TTL.
    pub cache_write_1h: f64,
}

impl Rates {
    /// The cost of `usage` at these rates.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u32, price: f64| f64::from(tokens) / 1000.0 * price;
        let write_1h = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
        per(usage.input_tokens, self.input)
            + per(usage.output_tokens, self.output)
            + per(usage.cache_read_tokens, self.cache_read)
            + per(usage.cache_write_tokens - write_1h, self.cache_write)
            + per(write_1h, self.cache_write_1h)
    }

    fn scaled(self, by: f64) -> Self {
        Self {
            input: self.input * by,
            output: self.output * by,
            cache_read: self.cache_read * by,
            cache_write: self.cache_write * by,
            cache_write_1h: self.cache_write_1h * by,
        }
    }

    /// The rates of `band`, its cache prices where it leaves them out scaled from these as
    /// its input price is.
    fn in_band(self, band: &LongContextBand) -> Self {
        let ratio = if self.input > 0.0 {
            band.input_per_1k / self.input
        } else {
            1.0
        };
        Self {
            input: band.input_per_1k,
            output: band.output_per_1k,
            cache_read: band.cache_read_per_1k.unwrap_or(self.cache_read * ratio),
            cache_write: band.cache_write_per_1k.unwrap_or(self.cache_write * ratio),
            cache_write_1h: band
                .cache_write_1h_per_1k
                .unwrap_or(self.cache_write_1h * ratio),
        }
    }
}

impl Price {
    /// The rates a call with `usage` pays where it was `served`: the most specific of the
    /// model's `rows` that matches (by region, scope and tier; a row without a tier takes the
    /// tier's multiplier), else the base price times its tier's and scope's multipliers; the
    /// long-context band's rates when the call's input is above it; less the discount.
    ///
    /// ```
    /// use laneway::{Config, ServiceTier, Usage};
    /// use laneway::cost::Served;
    /// let c = Config::from_toml_str(r#"
    ///     [[models."anthropic.claude-sonnet-4-6".price.rows]]
    ///     regions = ["eu-west-1"]
    ///     input_per_1k = 0.0036
    ///     output_per_1k = 0.018
    ///     long_context = { above_input_tokens = 200000, input_per_1k = 0.0072, output_per_1k = 0.027 }
    /// "#).unwrap();
    /// let price = c.models["anthropic.claude-sonnet-4-6"].price();
    /// let eu = Served { region: Some("eu-west-1"), tier: Some(ServiceTier::STANDARD), profile: None };
    /// let short = Usage { input_tokens: 1_000, output_tokens: 100, ..Usage::default() };
    /// assert_eq!(price.rates(&c.pricing, &short, eu).input, 0.0036);
    /// let long = Usage { input_tokens: 250_000, ..short };
    /// assert_eq!(price.rates(&c.pricing, &long, eu).output, 0.027);
    /// let us = Served { region: Some("us-east-1"), ..eu };
    /// assert_eq!(price.rates(&c.pricing, &short, us).input, price.input_per_1k);
    /// ```
    pub fn rates(&self, pricing: &PricingConfig, usage: &Usage, served: Served<'_>) -> Rates {
        let scope = PriceScope::of(served.profile);
        let mut best: Option<(u8, &PriceRow)> = None;
        for row in &self.rows {
            if let Some(score) = row.matches(served.region, scope, served.tier)
                && best.is_none_or(|(b, _)| score > b)
            {
                best = Some((score, row));
            }
        }
        // The listed rates (a row's, or the base price's) and their band, and the multiplier
        // that takes both to this call's tier and scope.
        let (listed, band, factor) = match best {
            Some((_, row)) => {
                let listed = Rates {
                    input: row.input_per_1k,
                    output: row.output_per_1k,
                    cache_read: row.cache_read_per_1k.unwrap_or(row.input_per_1k),
                    cache_write: row.cache_write_per_1k.unwrap_or(row.input_per_1k),
                    cache_write_1h: row.cache_write_1h_per_1k.unwrap_or(2.0 * row.input_per_1k),
                };
                let by_tier = match (row.tier, served.tier) {
                    (None, Some(tier)) => self
                        .tiers
                        .get(tier)
                        .unwrap_or_else(|| pricing.tier_multiplier(tier)),
                    _ => 1.0,
                };
                (listed, row.long_context, by_tier)
            }
            None => {
                let base = Rates {
                    input: self.input_per_1k,
                    output: self.output_per_1k,
                    cache_read: self.read_price(),
                    cache_write: self.write_price(CacheTtl::FiveMinutes),
                    cache_write_1h: self.write_price(CacheTtl::OneHour),
                };
                let factor = pricing.factor(self, served.tier, served.profile);
                (base, self.long_context, factor)
            }
        };
        let rates = match band {
            Some(b) if usage.total_input_tokens() > b.above_input_tokens => listed.in_band(&b),
            _ => listed,
        };
        rates.scaled(factor * (1.0 - self.discount.unwrap_or(pricing.discount)))
    }
}

/// The cost of one call in US dollars where it was served (`Price::rates`): the model's
/// listed price for that region, scope and tier where it has one, else its base price times
/// the multipliers of its tier and of its target's scope; the long-context band where the
/// call's input is above it; less your discount.
pub fn cost_of_call(
    price: &Price,
    pricing: &PricingConfig,
    usage: &Usage,
    served: Served<'_>,
) -> f64 {
    price.rates(pricing, usage, served).cost(usage)
}

/// The cost of one call in US dollars in no particular region: [`cost_of_call`] with the
/// region unknown (only rows that name no region apply).
pub fn call_cost(
    price: &Price,
    pricing: &PricingConfig,
    usage: &Usage,
    tier: Option<ServiceTier>,
    profile: Option<&ProfileScope>,
) -> f64 {
    cost_of_call(
        price,
        pricing,
        usage,
        Served {
            region: None,
            tier,
            profile,
        },
    )
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
        let base = call_cost(&price, &pricing, &usage, Some(ServiceTier::STANDARD), None);
        assert!((base - 4.35).abs() < 1e-9);
        let flex = call_cost(&price, &pricing, &usage, Some(ServiceTier::FLEX), None);
        assert!((flex - 4.35 * pricing.tier_multiplier(ServiceTier::FLEX)).abs() < 1e-9);
        let global = call_cost(
            &price,
            &pricing,
            &usage,
            Some(ServiceTier::STANDARD),
            Some(&ProfileScope::Global),
        );
        assert!((global - 4.35 * pricing.scopes.global).abs() < 1e-9);
        let own = Price {
            scopes: Some(crate::config::ScopeMultipliers {
                in_region: 1.1,
                geographic: 1.1,
                global: 1.0,
            }),
            tiers: crate::config::TierMultipliers::default().with(ServiceTier::FLEX, 0.6),
            ..price
        };
        let own_flex = call_cost(&own, &pricing, &usage, Some(ServiceTier::FLEX), None);
        assert!((own_flex - 4.35 * 0.6 * 1.1).abs() < 1e-9);
        let own_global = call_cost(
            &own,
            &pricing,
            &usage,
            Some(ServiceTier::PRIORITY),
            Some(&ProfileScope::Global),
        );
        assert!((own_global - 4.35 * pricing.tier_multiplier(ServiceTier::PRIORITY)).abs() < 1e-9);
    }

    #[test]
    fn a_row_without_a_tier_takes_the_tiers_multiplier_and_a_discount_takes_its_share() {
        let config = crate::config::Config::from_toml_str(
            r#"
            [pricing]
            discount = 0.1
            [[models."amazon.nova-lite-v1:0".price.rows]]
            regions = ["eu-west-1"]
            input_per_1k = 1.0
            output_per_1k = 2.0
            [[models."amazon.nova-lite-v1:0".price.rows]]
            regions = ["eu-west-1"]
            tier = "priority"
            input_per_1k = 3.0
            output_per_1k = 6.0
            "#,
        )
        .unwrap();
        let price = config.models["amazon.nova-lite-v1:0"].price();
        let usage = Usage {
            input_tokens: 1000,
            ..Usage::default()
        };
        let at = |tier| Served {
            region: Some("eu-west-1"),
            tier: Some(tier),
            profile: None,
        };
        let flex = config.pricing.tier_multiplier(ServiceTier::FLEX);
        let cost = |tier| cost_of_call(price, &config.pricing, &usage, at(tier));
        assert!((cost(ServiceTier::FLEX) - 1.0 * flex * 0.9).abs() < 1e-12);
        // A row of the tier is its price as it is.
        assert!((cost(ServiceTier::PRIORITY) - 3.0 * 0.9).abs() < 1e-12);
        // A model's own discount replaces the configuration's.
        let own = Price {
            discount: Some(0.5),
            ..price.clone()
        };
        let half = cost_of_call(&own, &config.pricing, &usage, at(ServiceTier::STANDARD));
        assert!((half - 0.5).abs() < 1e-12);
    }

    #[test]
    fn rows_and_discounts_out_of_range_are_refused_by_name() {
        let refused = |extra: &str| {
            crate::config::Config::from_toml_str(extra)
                .unwrap_err()
                .to_string()
        };
        let e = refused(
            "[[models.\"amazon.nova-lite-v1:0\".price.rows]]\nregions = [\"mars-1\"]\ninput_per_1k = 1.0\noutput_per_1k = 1.0\n",
        );
        assert!(
            e.contains("price.rows[0].regions") && e.contains("mars-1"),
            "{e}"
        );
        let e = refused(
            "[[models.\"amazon.nova-lite-v1:0\".price.rows]]\ninput_per_1k = -1.0\noutput_per_1k = 1.0\n",
        );
        assert!(e.contains("price.rows[0].input_per_1k"), "{e}");
        let e = refused("[pricing]\ndiscount = 1.5\n");
        assert!(e.contains("pricing.discount"), "{e}");
    }
}
