//! A model's explicit prices (`price.rows`): the price AWS lists for it in some regions, at
//! some profile scopes and tiers, with its long-context band, where a multiplier over the
//! base price would be a guess. `laneway catalog prices --from OFFER.json` writes them from
//! AWS's price list.

use serde::{Deserialize, Serialize};

use crate::types::{ProfileScope, ServiceTier};

/// The scope of the target a call is served by, as prices name it: the model's in-Region id,
/// a geographic inference profile (`us.`, `eu.`, ...) or the global one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceScope {
    /// The model's in-Region id.
    InRegion,
    /// A geographic inference profile.
    Geographic,
    /// The global inference profile.
    Global,
}

impl PriceScope {
    /// The scope of a target with this profile (`None`: the in-Region id).
    pub fn of(profile: Option<&ProfileScope>) -> Self {
        match profile {
            None => PriceScope::InRegion,
            Some(ProfileScope::Geographic(_)) => PriceScope::Geographic,
            Some(ProfileScope::Global) => PriceScope::Global,
        }
    }
}

/// Prices of a long-context band: a call whose input (new, cached and written to the cache)
/// is above `above_input_tokens` pays these for all of its tokens, as Bedrock bills Claude's
/// long-context requests. A cache price left out scales the band's input price as the
/// row's own cache price scales its input price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContextBand {
    /// Input tokens above which a call is priced in this band.
    pub above_input_tokens: u32,
    /// Input tokens neither read from nor written to the cache, per 1K.
    pub input_per_1k: f64,
    /// Output tokens, per 1K.
    pub output_per_1k: f64,
    /// Reading cached input, per 1K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_1k: Option<f64>,
    /// Writing input to the cache with the 5-minute TTL, per 1K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_1k: Option<f64>,
    /// Writing input to the cache with the 1-hour TTL, per 1K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h_per_1k: Option<f64>,
}

/// One explicit price of a model, in US dollars per 1K tokens: where it applies (regions,
/// profile scopes, tier; each left out applies everywhere) and what it is. The most specific
/// row that matches a call prices it as it is: no tier or scope multiplier is applied over a
/// row that names them; a row without a tier prices the other tiers by their multiplier.
///
/// ```
/// let c = laneway::Config::from_toml_str(r#"
///     [[models."anthropic.claude-sonnet-4-6".price.rows]]
///     regions = ["eu-west-1"]
///     scopes = ["in_region", "geographic"]
///     input_per_1k = 0.0036
///     output_per_1k = 0.018
/// "#).unwrap();
/// let rows = &c.models["anthropic.claude-sonnet-4-6"].price().rows;
/// assert_eq!(rows.len(), 1);
/// assert_eq!(rows[0].regions, ["eu-west-1"]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceRow {
    /// The regions it applies in; empty: every region.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
    /// The scopes of target it applies to; empty: every scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<PriceScope>,
    /// The tier it is the price of; none: the standard price, other tiers by multiplier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<ServiceTier>,
    /// Input tokens neither read from nor written to the cache.
    pub input_per_1k: f64,
    /// Output tokens.
    pub output_per_1k: f64,
    /// Reading cached input; the input price when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_1k: Option<f64>,
    /// Writing input to the cache with the 5-minute TTL; the input price when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_1k: Option<f64>,
    /// Writing input to the cache with the 1-hour TTL; twice the input price when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h_per_1k: Option<f64>,
    /// Its long-context band, when the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContextBand>,
}

impl PriceRow {
    /// How specifically this row matches a call in `region` at `scope` and `tier`: `None`
    /// when it does not apply; else how many of its three conditions it names (the most
    /// specific row wins). A row of another tier never applies; one without a tier applies
    /// to every tier (priced by the tier's multiplier).
    pub fn matches(
        &self,
        region: Option<&str>,
        scope: PriceScope,
        tier: Option<ServiceTier>,
    ) -> Option<u8> {
        let region_ok =
            self.regions.is_empty() || region.is_some_and(|r| self.regions.iter().any(|x| x == r));
        let scope_ok = self.scopes.is_empty() || self.scopes.contains(&scope);
        let tier_ok = match (self.tier, tier) {
            (None, _) => true,
            (Some(own), Some(asked)) => own == asked,
            (Some(own), None) => own == ServiceTier::STANDARD,
        };
        (region_ok && scope_ok && tier_ok).then(|| {
            u8::from(!self.regions.is_empty())
                + u8::from(!self.scopes.is_empty())
                + u8::from(self.tier.is_some())
        })
    }

    /// Every price of the row (its band's too), by its key, for validation.
    pub(crate) fn prices(&self) -> Vec<(&'static str, Option<f64>)> {
        let mut out = vec![
            ("input_per_1k", Some(self.input_per_1k)),
            ("output_per_1k", Some(self.output_per_1k)),
            ("cache_read_per_1k", self.cache_read_per_1k),
            ("cache_write_per_1k", self.cache_write_per_1k),
            ("cache_write_1h_per_1k", self.cache_write_1h_per_1k),
        ];
        if let Some(b) = &self.long_context {
            out.extend([
                ("long_context.input_per_1k", Some(b.input_per_1k)),
                ("long_context.output_per_1k", Some(b.output_per_1k)),
                ("long_context.cache_read_per_1k", b.cache_read_per_1k),
                ("long_context.cache_write_per_1k", b.cache_write_per_1k),
                (
                    "long_context.cache_write_1h_per_1k",
                    b.cache_write_1h_per_1k,
                ),
            ]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(regions: &[&str], scopes: &[PriceScope], tier: Option<ServiceTier>) -> PriceRow {
        PriceRow {
            regions: regions.iter().map(|r| r.to_string()).collect(),
            scopes: scopes.to_vec(),
            tier,
            input_per_1k: 1.0,
            output_per_1k: 1.0,
            cache_read_per_1k: None,
            cache_write_per_1k: None,
            cache_write_1h_per_1k: None,
            long_context: None,
        }
    }

    #[test]
    fn a_row_applies_where_it_says_and_the_more_specific_wins() {
        let any = row(&[], &[], None);
        let eu = row(&["eu-west-1"], &[], None);
        let eu_global_flex = row(
            &["eu-west-1"],
            &[PriceScope::Global],
            Some(ServiceTier::FLEX),
        );
        let at = |r: &PriceRow, region, scope, tier| r.matches(Some(region), scope, tier);
        assert_eq!(at(&any, "us-east-1", PriceScope::InRegion, None), Some(0));
        assert_eq!(at(&eu, "us-east-1", PriceScope::InRegion, None), None);
        assert_eq!(at(&eu, "eu-west-1", PriceScope::Global, None), Some(1));
        assert_eq!(
            at(
                &eu_global_flex,
                "eu-west-1",
                PriceScope::Global,
                Some(ServiceTier::FLEX)
            ),
            Some(3)
        );
        // A flex row is not the standard price, nor the price of a call without tiers.
        assert_eq!(
            at(
                &eu_global_flex,
                "eu-west-1",
                PriceScope::Global,
                Some(ServiceTier::STANDARD)
            ),
            None
        );
        assert_eq!(eu_global_flex.matches(None, PriceScope::Global, None), None);
    }
}
