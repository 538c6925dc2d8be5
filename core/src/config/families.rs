//! `[families.NAME]`: a family's variants, cheapest first, and its variant router.

use super::{Deserialize, Serialize};

/// An ordered list of variants of one model family, cheapest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyConfig {
    /// The variants' model keys, cheapest and weakest first (the last is the strongest).
    pub variants: Vec<String>,
    /// The variant used when nothing else decides; the strongest when unset.
    #[serde(default)]
    pub default_variant: Option<String>,
    /// Picks the variant per request with the complexity classifier; without it, requests
    /// get `default_variant`.
    #[serde(default)]
    pub router: Option<VariantRouterConfig>,
    /// Sends the family's requests to this Bedrock prompt router (Intelligent Prompt Routing,
    /// `arn:aws:bedrock:{region}:{account}:default-prompt-router/{name}`), which picks the
    /// model itself; the response reports which. If the router fails, the default variant's own
    /// targets follow. Exclusive with `router`.
    #[serde(default)]
    pub prompt_router: Option<String>,
}

/// How a family's variant is picked per request: the classifier's expected quality loss of
/// each cheaper variant against the strongest, and the thresholds it must stay within.
///
/// At most one of `threshold`, `thresholds` and `max_strong_share` is given. With none, the
/// thresholds are the model's own, chosen on held-out data so that the quality it measured
/// lost there is within `quality_loss_budget`
/// ([`Classifier::share_for_quality_loss`](crate::classifier::Classifier::share_for_quality_loss)):
///
/// ```toml
/// [families.nova]
/// variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
/// router = { model = "builtin" }                         # within quality_loss_budget (0.05)
/// # router = { model = "builtin", max_strong_share = 0.3 }  # or: a share to the strongest
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantRouterConfig {
    /// `builtin` (trained on RouteLLM's MMLU and GSM8K data) or a model file from
    /// `laneway router train` (relative to the configuration file).
    pub model: String,
    /// One loss threshold for every cheaper variant.
    #[serde(default)]
    pub threshold: Option<f32>,
    /// A threshold per cheaper variant, cheapest first (`variants.len() - 1` of them).
    #[serde(default)]
    pub thresholds: Option<Vec<f32>>,
    /// Thresholds set so that about this share (0..=1) of the model's training prompts would go
    /// to the strongest variant, and the rest split evenly between the cheaper ones.
    #[serde(default)]
    pub max_strong_share: Option<f64>,
    /// What decides when the family's traffic is unlike the model's training data: `length`
    /// (the prompt-length rule on the same thresholds; the default), `default_variant`, or
    /// `none` (the model's scores regardless).
    pub fallback: crate::types::VariantFallback,
    /// The mean novelty (0..=1) above which the fallback decides; by default the model's
    /// own, chosen on held-out sources
    /// ([`ModelInfo::novelty_threshold`](crate::classifier::ModelInfo::novelty_threshold)),
    /// else 0.5.
    #[serde(default)]
    pub novelty_threshold: Option<f32>,
    /// How many recent prompts the mean novelty spans (an exponential moving average; 1
    /// decides per prompt).
    pub novelty_window: u32,
    /// How much lower (0..=1) the share of good answers may be than always the strongest
    /// variant's: with no threshold given, the model's held-out measurements set the
    /// thresholds within it; in a difficulty band, feedback moves the band's prompts up when a
    /// cheaper variant's success rate falls further below the strongest's, and a cheaper
    /// variant this close to the strongest takes the band's prompts even above its threshold.
    pub quality_loss_budget: f32,
    /// The share of a band's calls (0..=0.5) that try another variant once feedback has
    /// arrived, so that the estimates keep up; 0 turns exploration off.
    pub explore_share: f32,
    /// After how many outcomes in a band an old outcome weighs half (at least 1): the
    /// estimates follow a variant that changes.
    pub feedback_half_life: u32,
    /// Shadow mode: serve the family's default variant, and record per cell what routing
    /// would have chosen, the cost it would have saved and the feedback that arrives
    /// (`Router::shadow_report`, `laneway router report`), to see routing's saving and risk
    /// on your own traffic before turning it on.
    #[serde(default)]
    pub shadow: bool,
}

impl Default for VariantRouterConfig {
    /// `[templates.family_router]` of `defaults.toml`: the built-in model, its own thresholds.
    ///
    /// ```
    /// let router = laneway::config::VariantRouterConfig::default();
    /// assert_eq!(router.model, "builtin");
    /// assert_eq!(router.threshold, None);
    /// ```
    fn default() -> Self {
        super::load::template("family_router")
    }
}

impl FamilyConfig {
    /// The variant used when nothing else decides.
    pub fn default_variant(&self) -> &str {
        self.default_variant
            .as_deref()
            .or(self.variants.last().map(String::as_str))
            .unwrap_or_default()
    }
}
