//! What an evaluation found, as a model file records it and `laneway router eval` prints it:
//! per section of rows (all, or one source), each router's APGR and CPT, and the router at
//! its default threshold. Computing them is `eval`'s job (the `training`
//! feature); reading them is here, so that a model's recorded figures load without it.

use serde::{Deserialize, Serialize};

/// One router's figures on one set of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterFigures {
    /// The router's name: `laneway`, `model`, `random`, `prompt-length` or `oracle`.
    pub router: String,
    /// APGR: the mean PGR (the share of the gap between the weak and the strong variant's
    /// quality recovered) over every share of strong calls, 0% to 100%.
    pub apgr: f64,
    /// Share of strong calls needed for 50% and 80% PGR.
    pub cpt50: f64,
    /// Share of strong calls needed for 80% PGR (1 when it is never reached).
    pub cpt80: f64,
    /// (share of strong calls, quality, PGR) at 0%, 10%, ..., 100%; empty when stored in a model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<(f64, f64, f64)>,
}

/// Figures for the rows of one source (or all of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// `all`, or the source's name.
    pub name: String,
    /// How many rows the figures are over (those with outcomes of both variants).
    pub rows: usize,
    /// The share of the rows the weak variant answered well enough.
    pub weak_quality: f64,
    /// The share of the rows the strong variant answered well enough.
    pub strong_quality: f64,
    /// The mean novelty (out-of-distribution probability) of the rows, when the model scores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub novelty: Option<f64>,
    /// Whether `laneway` routed these rows by the prompt-length fallback (their mean novelty
    /// above [`NOVELTY_THRESHOLD`]) rather than by the model's scores (`model`).
    #[serde(default)]
    pub fell_back: bool,
    /// Each router's figures: `laneway`, `model`, `random`, `prompt-length`, `oracle`.
    pub routers: Vec<RouterFigures>,
    /// The blend the section was routed with, when chosen on other sources
    /// (`eval::leave_one_source_out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blend: Option<BlendChoice>,
    /// The router at its default threshold, when one was set (`eval::Options::default_share`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_default: Option<OperatingPoint>,
}

/// Where a router's calls went at one threshold, and what that kept and saved, beside the
/// baselines at the same spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatingPoint {
    /// The threshold as a share of the model's training prompts above it (how thresholds are
    /// set: [`Classifier::threshold_for_strong_share`](super::Classifier::threshold_for_strong_share)).
    pub training_share: f64,
    /// The share of these rows sent to the strong variant.
    pub strong_share: f64,
    /// The share of good answers as routed.
    pub quality: f64,
    /// The strong variant's quality minus the routed quality (negative: routing did better).
    pub quality_lost: f64,
    /// The cost saved against always the strong variant, at `eval::Options::cost_ratio`.
    pub cost_saved: f64,
    /// The quality lost by a random router at the same share of strong calls (its expectation).
    pub random_quality_lost: f64,
    /// The quality lost by the prompt-length rule at the same share of strong calls.
    pub length_quality_lost: f64,
}

/// The cost of a call to the weak variant as a share of the strong one's, unless told: Claude
/// Haiku 4.5 against Claude Opus 4.5 on the price book ($1 / $5 against $5 / $25 per million
/// input / output tokens).
pub const DEFAULT_COST_RATIO: f64 = 0.2;

/// The quality budget the built-in families' default thresholds are chosen for (their
/// `quality_loss_budget`): at most 5 points of the share of good answers.
pub const DEFAULT_QUALITY_LOSS_BUDGET: f64 = 0.05;

/// A whole evaluation: all rows first, then each source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The weak variant's name: the data's first (cheapest).
    pub weak: String,
    /// The strong variant's name: the data's last.
    pub strong: String,
    /// The data's variants are not the model's: its weakest and strongest were scored by the
    /// model's first and last heads, by capability order (outcomes of another model pair).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub heads_by_capability_order: bool,
    /// The section of all rows (`all`), then one per source.
    pub sections: Vec<Section>,
}

impl Summary {
    /// The section of all rows, or of one source.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The same figures without curves (as kept in a model file).
    pub fn without_curves(&self) -> Summary {
        let mut s = self.clone();
        for section in &mut s.sections {
            for r in &mut section.routers {
                r.curve.clear();
            }
        }
        s
    }
}

impl Section {
    /// One router's figures.
    pub fn router(&self, name: &str) -> Option<&RouterFigures> {
        self.routers.iter().find(|r| r.router == name)
    }
}

/// Routers compared, in report order: `laneway` as a router routes (the model's scores, or the
/// prompt-length fallback where the rows are novel), `model` the model's scores alone.
pub const ROUTERS: [&str; 5] = ["laneway", "model", "random", "prompt-length", "oracle"];

/// The novelty above which evaluation, like the default variant router, falls back to the
/// prompt-length rule.
pub const NOVELTY_THRESHOLD: f64 = 0.5;

/// A blend of the model with prompt length, as `eval::leave_one_source_out` chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlendChoice {
    /// The model's weight against prompt length (0..=1).
    pub model_weight: f32,
    /// The model's weight for prompts of the `math` kind ([`super::MATH_KIND`]).
    pub math_weight: f32,
    /// The traffic novelty above which prompt length alone routes.
    pub novelty_threshold: f32,
}

/// The quality of the routed answers at a point of the curve, from its PGR.
pub fn quality_at(section: &Section, pgr: f64) -> f64 {
    section.weak_quality + pgr * (section.strong_quality - section.weak_quality)
}
