//! `[tiers]`: the service tiers a configuration declares, each with its spelling per API. A
//! tier is declared for the whole process before the rest of the configuration is read, so
//! that `[slo_tiers]`, `[pricing.tiers]`, `[routing.priors]` and a model's `tiers` may name it.

use super::{BTreeMap, Config, Deserialize, Error, Result, Serialize, ServiceTier};

/// One declared tier's wire spellings (`[tiers.ultrafast] converse = "ultrafast"`).
///
/// ```
/// use laneway::{Config, ServiceTier};
/// let c = Config::from_toml_str(r#"
///     [tiers.doc_turbo]
///     converse = "doc_turbo"
///     openai = "doc_turbo"
///     [pricing.tiers]
///     doc_turbo = 4.0
///     [routing.priors.doc_turbo]
///     ttft = 200
///     ttft_p99 = 800
///     gap_p99 = 400
///     tokens_per_second = 200.0
/// "#).unwrap();
/// let turbo = ServiceTier::named("doc_turbo").unwrap();
/// assert_eq!(c.tiers[&turbo].openai.as_deref(), Some("doc_turbo"));
/// assert_eq!(c.pricing.tier_multiplier(turbo), 4.0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Its `serviceTier.type` on Converse and InvokeModel; unset, Converse does not carry it
    /// and a call at it is sent without a tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converse: Option<String>,
    /// Its `service_tier` on the OpenAI-compatible APIs; unset, they are sent none (their
    /// default): standard's and reserved's case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai: Option<String>,
}

/// Declares every tier of the whole table's `[tiers]` for the process, so that what follows
/// may name them.
pub(super) fn declare(table: &toml::Table) -> Result<()> {
    let Some(tiers) = table.get("tiers") else {
        return Ok(());
    };
    let tiers = BTreeMap::<String, TierConfig>::deserialize(tiers.clone())
        .map_err(|e| Error::config("tiers", e.message().to_string()))?;
    for (name, tier) in &tiers {
        ServiceTier::declare(name, tier.converse.as_deref(), tier.openai.as_deref())
            .map_err(|e| Error::config(format!("tiers.{name}"), e.to_string()))?;
    }
    Ok(())
}

/// The tiers the built-in configuration declares (`defaults.toml`'s `[tiers]`).
pub fn builtin_tiers() -> Vec<ServiceTier> {
    Config::builtin().tiers.keys().copied().collect()
}
