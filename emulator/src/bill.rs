//! What an admitted call is billed, as a model card prices it: input anew, output, cache reads
//! and writes by lifetime, at the served tier's multiplier, the global profile's rate and the
//! long-context band. The emulator keeps the sum per counter row, so a client's own cost
//! accounting can be checked against an independent bill.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cache::CacheUse;

/// A model's prices as its card lists them, US dollars per 1,000 tokens (geographic and
/// in-Region; the global profile's at `global` times them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSpec {
    /// Input processed anew.
    pub input_per_1k: f64,
    /// Output, reasoning included.
    pub output_per_1k: f64,
    /// A cache read (unset: the input price).
    #[serde(default)]
    pub cache_read_per_1k: Option<f64>,
    /// A cache write with the shorter lifetime (5 minutes on Converse, 30 minutes on the
    /// Responses API; unset: the input price).
    #[serde(default)]
    pub cache_write_per_1k: Option<f64>,
    /// A cache write with the 1-hour lifetime (unset: twice the input price).
    #[serde(default)]
    pub cache_write_1h_per_1k: Option<f64>,
    /// The global profile's price as a share of these (Claude: 1/1.1).
    #[serde(default = "one")]
    pub global: f64,
    /// Each tier's price as a multiple of the standard one, by its wire name (`priority`,
    /// `flex`, `ultrafast`, ...); a tier not listed costs the standard price.
    #[serde(default)]
    pub tiers: BTreeMap<String, f64>,
    /// The band a call above `above_input_tokens` of input is priced at, whole.
    #[serde(default)]
    pub long_context: Option<LongContextSpec>,
}

/// A long-context band's prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContextSpec {
    /// Input tokens (anew, read and written together) above which the band applies.
    pub above_input_tokens: u32,
    /// The band's input price.
    pub input_per_1k: f64,
    /// The band's output price.
    pub output_per_1k: f64,
    /// The band's cache-read price (unset: the band's input price).
    #[serde(default)]
    pub cache_read_per_1k: Option<f64>,
    /// The band's shorter-lifetime cache-write price (unset: the band's input price).
    #[serde(default)]
    pub cache_write_per_1k: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl PriceSpec {
    /// Checks the prices: finite and non-negative.
    pub(crate) fn validate(&self, owner: &str) -> Result<(), String> {
        let band = self.long_context.as_ref();
        let all = [
            Some(self.input_per_1k),
            Some(self.output_per_1k),
            self.cache_read_per_1k,
            self.cache_write_per_1k,
            self.cache_write_1h_per_1k,
            Some(self.global),
            band.map(|b| b.input_per_1k),
            band.map(|b| b.output_per_1k),
            band.and_then(|b| b.cache_read_per_1k),
            band.and_then(|b| b.cache_write_per_1k),
        ];
        let bad = all
            .into_iter()
            .flatten()
            .chain(self.tiers.values().copied())
            .any(|v| !(v.is_finite() && v >= 0.0));
        if bad {
            return Err(format!(
                "{owner}: price: every price and multiplier must be a finite number >= 0"
            ));
        }
        Ok(())
    }

    /// What one admitted call costs: `input` tokens anew, `output` tokens, the cache's reads
    /// and writes, served at `tier` through `target` (a `global.` profile at the global rate).
    pub(crate) fn bill(
        &self,
        target: &str,
        tier: &str,
        input: u32,
        output: u32,
        cache: &CacheUse,
    ) -> f64 {
        let written_1h = cache
            .details
            .iter()
            .filter(|(ttl, _)| *ttl == "1h")
            .map(|(_, n)| *n)
            .sum::<u32>();
        let whole_input = input + cache.read + cache.write;
        let band = self
            .long_context
            .as_ref()
            .filter(|b| whole_input > b.above_input_tokens);
        let (input_price, output_price, read, write) = match band {
            Some(b) => (
                b.input_per_1k,
                b.output_per_1k,
                b.cache_read_per_1k.unwrap_or(b.input_per_1k),
                b.cache_write_per_1k.unwrap_or(b.input_per_1k),
            ),
            None => (
                self.input_per_1k,
                self.output_per_1k,
                self.cache_read_per_1k.unwrap_or(self.input_per_1k),
                self.cache_write_per_1k.unwrap_or(self.input_per_1k),
            ),
        };
        let write_1h = self
            .cache_write_1h_per_1k
            .unwrap_or(2.0 * self.input_per_1k);
        let per = |tokens: u32, price: f64| f64::from(tokens) / 1000.0 * price;
        let listed = per(input, input_price)
            + per(output, output_price)
            + per(cache.read, read)
            + per(cache.write - written_1h.min(cache.write), write)
            + per(written_1h.min(cache.write), write_1h);
        let scope = if target.starts_with("global.") {
            self.global
        } else {
            1.0
        };
        listed * scope * self.tiers.get(tier).copied().unwrap_or(1.0)
    }
}

/// A bill in picodollars (10^-12 US dollars), summed without rounding drift across calls.
pub(crate) fn picodollars(usd: f64) -> u64 {
    (usd * 1e12).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonnet() -> PriceSpec {
        toml::from_str(
            "input_per_1k = 0.0033\noutput_per_1k = 0.0165\ncache_read_per_1k = 0.00033\n\
             cache_write_per_1k = 0.004125\ncache_write_1h_per_1k = 0.0066\nglobal = 0.90909\n\
             tiers = { priority = 1.75, flex = 0.5 }\n\
             long_context = { above_input_tokens = 200000, input_per_1k = 0.0066, output_per_1k = 0.02475 }",
        )
        .unwrap()
    }

    #[test]
    fn a_call_is_billed_by_kind_lifetime_tier_scope_and_band() {
        let p = sonnet();
        let cache = CacheUse {
            read: 1000,
            write: 3000,
            details: vec![("5m", 1000), ("1h", 2000)],
        };
        let listed = 0.0033 + 0.0165 + 0.00033 + 0.004125 + 2.0 * 0.0066;
        let bill = p.bill(
            "us.anthropic.claude-sonnet-4-5",
            "default",
            1000,
            1000,
            &cache,
        );
        assert!((bill - listed).abs() < 1e-12, "{bill}");
        let global = p.bill(
            "global.anthropic.claude-sonnet-4-5",
            "priority",
            1000,
            1000,
            &cache,
        );
        assert!((global - listed * 0.90909 * 1.75).abs() < 1e-12);
        let band = p.bill("x", "default", 250_000, 1000, &CacheUse::default());
        assert!((band - (250.0 * 0.0066 + 0.02475)).abs() < 1e-9);
        assert!(p.validate("m").is_ok());
        assert!(
            PriceSpec {
                input_per_1k: -1.0,
                ..p
            }
            .validate("m")
            .unwrap_err()
            .contains("m: price")
        );
        assert_eq!(picodollars(0.5), 500_000_000_000);
    }
}
