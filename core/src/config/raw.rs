//! The configuration as a file spells it: [`RawConfig`] is what serde reads, every default in
//! place (`defaults.toml` merged under the file, each added table read over its template);
//! [`Config`] is made from it only through validation.

use super::{
    Alias, AwsConfig, BTreeMap, BatchConfig, CachePolicy, Config, Deserialize, Error, FamilyConfig,
    Geography, GeographyConfig, LocalStateConfig, ModelConfig, PricingConfig, RegionConfig, Result,
    RoutingConfig, SharedConfig, SloClass, SloTiers, TelemetryConfig,
};

/// A configuration table as serde reads it, before validation. Its fields are [`Config`]'s
/// (the docs are there); what it reads becomes a [`Config`] only through
/// [`Config::try_from`], which validates it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    builtin_models: bool,
    #[serde(default)]
    default_model: Option<String>,
    regions: Vec<RegionConfig>,
    #[serde(default)]
    geographies: BTreeMap<Geography, GeographyConfig>,
    #[serde(default)]
    tiers: BTreeMap<crate::types::ServiceTier, super::TierConfig>,
    slo_tiers: SloTiers,
    #[serde(default)]
    slo_reasoning: BTreeMap<SloClass, crate::types::Reasoning>,
    pricing: PricingConfig,
    routing: RoutingConfig,
    #[serde(default)]
    families: BTreeMap<String, FamilyConfig>,
    #[serde(default)]
    aliases: BTreeMap<String, Alias>,
    #[serde(default)]
    models: BTreeMap<String, ModelConfig>,
    #[serde(default)]
    aws: AwsConfig,
    prompt_cache: CachePolicy,
    #[serde(default)]
    shared: Option<SharedConfig>,
    #[serde(default)]
    batch: Option<BatchConfig>,
    #[serde(default)]
    local_state: Option<LocalStateConfig>,
    #[serde(default)]
    record: Option<super::RecordConfig>,
    telemetry: TelemetryConfig,
}

impl TryFrom<RawConfig> for Config {
    type Error = Error;

    /// The configuration `raw` describes, if it is valid ([`Config::validate`]).
    fn try_from(raw: RawConfig) -> Result<Self> {
        let config = Config {
            base_dir: None,
            builtin_models: raw.builtin_models,
            default_model: raw.default_model,
            regions: raw.regions,
            geographies: raw.geographies,
            tiers: raw.tiers,
            slo_tiers: raw.slo_tiers,
            slo_reasoning: raw.slo_reasoning,
            pricing: raw.pricing,
            routing: raw.routing,
            families: raw.families,
            aliases: raw.aliases,
            models: raw.models,
            aws: raw.aws,
            prompt_cache: raw.prompt_cache,
            shared: raw.shared,
            batch: raw.batch,
            local_state: raw.local_state,
            record: raw.record,
            telemetry: raw.telemetry,
        };
        config.validate()?;
        Ok(config)
    }
}
