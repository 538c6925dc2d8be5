//! Which model serves the request: a concrete model, a pinned profile, or a family's variant.

use crate::classifier::{Classifier, Scored};
use std::sync::Arc;

use super::catalog::Catalog;
use super::feedback::{BANDS, FamilyFeedback};
use crate::classifier::TASK_KINDS;
use crate::config::{Config, FamilyConfig, VariantRouterConfig};
use crate::types::ProfileScope;
use crate::types::{Error, Result};
use crate::types::{GenerateRequest, ModelRef};
use crate::types::{Reason, VariantFallback};

/// The model chosen, with the family and pinned profile it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenModel {
    /// The chosen model's name in the configuration.
    pub model: Arc<str>,
    /// The family it is a variant of (`None` when the request named a model).
    pub family: Option<Arc<str>>,
    /// The inference profile the request named (`us.<model>`, ...), if it named one.
    pub pinned_profile: Option<ProfileScope>,
    /// The next stronger variant, when the family's router chose a variant below the strongest:
    /// failover may step up to it (never down).
    pub step_up: Option<Arc<str>>,
    /// A Bedrock prompt router ARN to try first.
    pub prompt_router: Option<String>,
}

/// The variant routers of a configuration's families, loaded: each routed family's classifier
/// and its thresholds. Built once per router (model files are read here, relative to
/// [`Config::base_dir`]), so that calls only score.
#[derive(Clone, Default)]
pub(crate) struct VariantRouters {
    by_family: std::collections::HashMap<String, LoadedRouter>,
}

#[derive(Clone)]
struct LoadedRouter {
    classifier: Arc<Classifier>,
    thresholds: Vec<f32>,
    /// The family's recent novelty, shared by the router's clones.
    traffic: Arc<TrafficNovelty>,
    /// Production outcomes per cell (task kind and difficulty band), shared by the router's
    /// clones.
    feedback: Arc<FamilyFeedback>,
    /// The family's variants, cheapest first, as outcomes are indexed.
    variants: Vec<String>,
}

/// An exponential moving average of a family's prompts' novelty over about `window` prompts
/// (a plain running mean until that many have been seen), updated without a lock.
#[derive(Debug)]
pub(crate) struct TrafficNovelty {
    window: u32,
    /// The mean's `f32` bits and the number of prompts seen (saturating at `window`), packed
    /// in one word so that an update is a single compare-and-swap.
    state: std::sync::atomic::AtomicU64,
}

impl TrafficNovelty {
    /// A tracker over about `window` prompts (at least 1).
    pub(crate) fn new(window: u32) -> Self {
        Self {
            window: window.max(1),
            state: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The mean as it would be with one more prompt of this novelty, leaving it unchanged
    /// (planning reads; [`TrafficNovelty::observe`] records calls actually sent).
    pub(crate) fn with(&self, novelty: f32) -> f32 {
        self.next(
            self.state.load(std::sync::atomic::Ordering::Acquire),
            novelty,
        )
        .0
    }

    /// Adds a prompt's novelty to the mean.
    pub(crate) fn observe(&self, novelty: f32) {
        use std::sync::atomic::Ordering;
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |packed| {
                Some(self.next(packed, novelty).1)
            });
    }

    /// The mean after one more prompt, and the packed state holding it.
    fn next(&self, packed: u64, novelty: f32) -> (f32, u64) {
        let (old, seen) = (f32::from_bits(packed as u32), (packed >> 32) as u32);
        let seen = (seen + 1).min(self.window);
        let mean = old + (novelty - old) / seen as f32;
        (mean, u64::from(mean.to_bits()) | (u64::from(seen) << 32))
    }
}

impl std::fmt::Debug for VariantRouters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.by_family.keys()).finish()
    }
}

impl VariantRouters {
    /// Loads every family router's model (`builtin`, or a file) and sets its thresholds; a
    /// missing or corrupt file is a configuration error naming the family.
    pub(crate) fn load(config: &Config) -> Result<Self> {
        let mut by_family = std::collections::HashMap::new();
        for (name, family) in &config.families {
            let Some(router) = &family.router else {
                continue;
            };
            let classifier = if router.model == "builtin" {
                Classifier::builtin()
            } else {
                let path = std::path::Path::new(&router.model);
                let path = match &config.base_dir {
                    Some(base) if path.is_relative() => base.join(path),
                    _ => path.to_path_buf(),
                };
                Arc::new(Classifier::load(&path).map_err(|e| {
                    Error::config(format!("families.{name}.router.model"), e.to_string())
                })?)
            };
            let thresholds = thresholds(router, family, &classifier);
            // Bands of equal share of the training prompts, by expected loss.
            let edges = std::array::from_fn(|k| {
                classifier.threshold_for_strong_share(1.0 - (k + 1) as f64 / BANDS as f64)
            });
            by_family.insert(
                name.clone(),
                LoadedRouter {
                    feedback: Arc::new(FamilyFeedback::new(router, family.variants.len(), edges)),
                    classifier,
                    thresholds,
                    traffic: Arc::new(TrafficNovelty::new(router.novelty_window)),
                    variants: family.variants.clone(),
                },
            );
        }
        Ok(Self { by_family })
    }

    /// Records a plan about to be sent (its `VariantScored` reason): its novelty in the
    /// family's traffic mean, and the call in its band's count.
    pub(crate) fn committed(&self, reasons: &[Reason]) {
        for reason in reasons {
            if let Reason::VariantScored {
                family,
                novelty,
                kind,
                band,
                ..
            } = reason
                && let Some(loaded) = self.by_family.get(family)
            {
                if let Some(n) = novelty {
                    loaded.traffic.observe(*n);
                }
                if let Some(cell) = cell_of(kind, *band) {
                    loaded.feedback.committed(cell);
                }
            }
        }
    }

    /// Records whether `variant` of `family` served a call of task `kind` in difficulty `band`
    /// well; an error names what does not match this configuration (an unrouted family, a
    /// variant not in it, a kind or band out of range).
    pub(crate) fn feedback(
        &self,
        family: &str,
        variant: &str,
        (kind, band): (&str, u8),
        good: bool,
    ) -> Result<()> {
        let loaded = self.by_family.get(family).ok_or_else(|| {
            Error::invalid(
                "call_id",
                format!(
                    "family {family:?} has no variant router here (routed: {})",
                    known(self.by_family.keys())
                ),
            )
        })?;
        let at = loaded
            .variants
            .iter()
            .position(|v| v == variant)
            .ok_or_else(|| {
                Error::invalid(
                    "call_id",
                    format!(
                        "{variant:?} is not a variant of family {family} ({})",
                        loaded.variants.join(", ")
                    ),
                )
            })?;
        let cell = cell_of(kind, band).ok_or_else(|| {
            Error::invalid(
                "call_id",
                format!(
                    "{kind}.{band} is not a task kind ({}) and band (0..{BANDS})",
                    TASK_KINDS.join(", ")
                ),
            )
        })?;
        loaded.feedback.record(cell, at, good);
        Ok(())
    }

    /// Each routed family's feedback per cell (task kind and difficulty band).
    pub(crate) fn feedback_snapshot(&self) -> super::feedback::FeedbackReport {
        self.by_family
            .iter()
            .map(|(name, loaded)| (name.clone(), loaded.feedback.snapshot()))
            .collect()
    }

    /// The loss thresholds of a routed family's cheaper variants, cheapest first.
    #[cfg(test)]
    pub(crate) fn thresholds(&self, family: &str) -> Option<&[f32]> {
        self.by_family.get(family).map(|r| r.thresholds.as_slice())
    }
}

/// The loss threshold of each cheaper variant of a family, cheapest first.
///
/// Given thresholds are used as they are. `max_strong_share` sends about that share of the
/// model's training prompts to the strongest variant and splits the rest evenly between the
/// cheaper ones. With neither, the model's held-out measurements decide
/// ([`measured_thresholds`]).
fn thresholds(
    router: &VariantRouterConfig,
    family: &crate::config::FamilyConfig,
    classifier: &Classifier,
) -> Vec<f32> {
    let cheaper = family.variants.len().saturating_sub(1);
    if let Some(t) = &router.thresholds {
        return t.clone();
    }
    if let Some(t) = router.threshold {
        return vec![t; cheaper];
    }
    let measured = classifier.share_for_quality_loss(router.quality_loss_budget);
    if let (None, Some(kept)) = (router.max_strong_share, measured)
        && let Some(t) = measured_thresholds(family, classifier, kept)
    {
        return t;
    }
    let share = router
        .max_strong_share
        .or(measured)
        .unwrap_or(UNMEASURED_STRONG_SHARE);
    // Variant i (cheapest first) takes its slice of the (1 - share) below the strongest.
    (0..cheaper)
        .map(|i| {
            let above = share + (1.0 - share) * (cheaper - 1 - i) as f64 / cheaper as f64;
            classifier.threshold_for_strong_share(above)
        })
        .collect()
}

/// The default thresholds of a family whose default variant has cheaper variants below it,
/// from `kept`: the share of the model's training prompts that must stay on the default
/// variant for the quality measured lost on held-out data to be within the family's budget.
/// The variants below the default split the other `1 - kept` evenly, the easiest prompts; the
/// default keeps the rest. Variants above the default get none: what they would add is not
/// measured, so a family's default router only saves (they still serve a request's
/// `min_variant`, and failover steps up to them). `None` when the default is the cheapest
/// variant.
fn measured_thresholds(
    family: &crate::config::FamilyConfig,
    classifier: &Classifier,
    kept: f64,
) -> Option<Vec<f32>> {
    let n = family.variants.len();
    let d = family
        .variants
        .iter()
        .position(|v| v == family.default_variant())?;
    if d == 0 {
        return None;
    }
    Some(
        (0..n - 1)
            .map(|i| {
                if i < d {
                    let share_above = kept + (1.0 - kept) * (d - 1 - i) as f64 / d as f64;
                    classifier.threshold_for_strong_share(share_above)
                } else {
                    // Every loss is at most 1: the default takes all the rest.
                    1.0
                }
            })
            .collect(),
    )
}

/// Resolves the request's model reference against the configuration.
pub(crate) fn choose(
    request: &GenerateRequest,
    config: &Config,
    catalog: &Catalog,
    routers: &VariantRouters,
    reasons: &mut Vec<Reason>,
) -> Result<ChosenModel> {
    let name = requested_name(request, config, reasons)?;
    if let Some(family) = config.families.get(name) {
        let min = min_variant_index(request, name, family)?;
        return match &family.router {
            None => Ok(family_default(name, family, min, catalog, reasons)),
            Some(router) => {
                let loaded = routers.by_family.get(name).ok_or_else(|| {
                    Error::config(
                        format!("families.{name}.router"),
                        "the family's router was not loaded: build a Planner (or a Router) from this configuration",
                    )
                })?;
                let family = RoutedFamily {
                    name,
                    config: family,
                    router,
                    loaded,
                    min,
                };
                Ok(family.choose(request, catalog, reasons))
            }
        };
    }
    if config.models.contains_key(name) {
        let model = catalog.model_name(name);
        reasons.push(Reason::ModelRequested {
            model: Arc::clone(&model),
        });
        return Ok(ChosenModel {
            model,
            family: None,
            pinned_profile: None,
            step_up: None,
            prompt_router: None,
        });
    }
    if let Some(chosen) = pinned_profile(name, config, catalog, reasons)? {
        return Ok(chosen);
    }
    Err(Error::invalid(
        "model",
        format!(
            "unknown model {name:?}: not a configured model, inference profile, family or alias (families: {}; models: {}; aliases: {})",
            known(config.families.keys()),
            known(config.models.keys()),
            known(config.aliases.keys())
        ),
    ))
}

/// The name the request asks for: the configuration's default model, a family (which must be
/// configured), or a model or profile id, an alias read as what it names.
fn requested_name<'r>(
    request: &'r GenerateRequest,
    config: &'r Config,
    reasons: &mut Vec<Reason>,
) -> Result<&'r str> {
    match &request.model {
        ModelRef::Default => {
            let name = config.default_model.as_deref().ok_or_else(|| {
                Error::invalid(
                    "model",
                    "the request names no model and the configuration has no default_model",
                )
            })?;
            reasons.push(Reason::DefaultModel {
                name: name.to_string(),
            });
            Ok(name)
        }
        ModelRef::Family(f) => {
            if !config.families.contains_key(f) {
                return Err(Error::invalid(
                    "model",
                    format!(
                        "unknown family {f:?} (configured: {})",
                        known(config.families.keys())
                    ),
                ));
            }
            Ok(f.as_str())
        }
        ModelRef::Model(m) => match config.aliases.get(m) {
            Some(alias) => {
                reasons.push(Reason::Aliased {
                    alias: m.clone(),
                    to: alias.target().to_string(),
                });
                Ok(alias.target())
            }
            None => Ok(m.as_str()),
        },
    }
}

/// The index of the request's `min_variant` in the family (0 when it sets none).
fn min_variant_index(
    request: &GenerateRequest,
    name: &str,
    family: &FamilyConfig,
) -> Result<usize> {
    match &request.min_variant {
        None => Ok(0),
        Some(m) => family.variants.iter().position(|v| v == m).ok_or_else(|| {
            Error::invalid(
                "min_variant",
                format!(
                    "{m:?} is not a variant of family {name} ({})",
                    family.variants.join(", ")
                ),
            )
        }),
    }
}

/// A family without a router: its default variant (not below the minimum), through its
/// Bedrock prompt router when it has one and no minimum rules it out.
fn family_default(
    name: &str,
    family: &FamilyConfig,
    min: usize,
    catalog: &Catalog,
    reasons: &mut Vec<Reason>,
) -> ChosenModel {
    let default = family.default_variant();
    let at = family
        .variants
        .iter()
        .position(|v| v == default)
        .unwrap_or(0);
    let variant = family.variants[at.max(min)].clone();
    reasons.push(Reason::FamilyDefaultVariant {
        family: name.to_string(),
        variant: variant.clone(),
    });
    // A minimum rules out a prompt router, which may pick any of the family's models.
    let prompt_router = family.prompt_router.clone().filter(|_| min == 0);
    if let Some(arn) = &prompt_router {
        reasons.push(Reason::PromptRouter { arn: arn.clone() });
    }
    ChosenModel {
        model: catalog.model_name(&variant),
        family: Some(catalog.family_name(name)),
        pinned_profile: None,
        step_up: None,
        prompt_router,
    }
}

/// A `PREFIX.model` id pinning an inference profile of a configured model, if `name` is one;
/// an error if the configuration lists no such profile for it.
fn pinned_profile(
    name: &str,
    config: &Config,
    catalog: &Catalog,
    reasons: &mut Vec<Reason>,
) -> Result<Option<ChosenModel>> {
    let Some((prefix, bare)) = name.split_once('.') else {
        return Ok(None);
    };
    let (Some(profile), Some(model)) = (config.profile_scope(prefix), config.models.get(bare))
    else {
        return Ok(None);
    };
    if !model.profiles().contains(&profile) {
        return Err(Error::invalid(
            "model",
            format!("{name:?}: the configuration lists no {prefix} inference profile for {bare}"),
        ));
    }
    let model = catalog.model_name(bare);
    reasons.push(Reason::ModelRequested {
        model: Arc::clone(&model),
    });
    reasons.push(Reason::ProfilePinned {
        profile: profile.clone(),
    });
    Ok(Some(ChosenModel {
        model,
        family: None,
        pinned_profile: Some(profile),
        step_up: None,
        prompt_router: None,
    }))
}

/// A family with a router, as one request sees it: the configuration, the loaded router and
/// the request's minimum variant.
struct RoutedFamily<'a> {
    name: &'a str,
    config: &'a FamilyConfig,
    router: &'a VariantRouterConfig,
    loaded: &'a LoadedRouter,
    min: usize,
}

impl RoutedFamily<'_> {
    /// Scores the prompt, picks the cheapest variant within its threshold (or the fallback's,
    /// when the traffic is novel), lets feedback move the pick, and records why; in shadow mode
    /// the default variant serves and the pick is only recorded.
    fn choose(
        &self,
        request: &GenerateRequest,
        catalog: &Catalog,
        reasons: &mut Vec<Reason>,
    ) -> ChosenModel {
        let (family, loaded, min) = (self.config, self.loaded, self.min);
        let text = request.classification_text();
        let scored = loaded.classifier.score(&text);
        let fallback = scored
            .novelty
            .map(|n| loaded.traffic.with(n))
            .filter(|mean| *mean > novelty_threshold(self.router, &loaded.classifier))
            .map(|_| self.router.fallback)
            .filter(|f| *f != VariantFallback::None);
        let scores = self.scores(&text, &scored, fallback);
        let thresholds = &loaded.thresholds;
        let strongest = family.variants.len() - 1;
        // The family's default variant, not below the request's minimum.
        let default_at = family
            .variants
            .iter()
            .position(|v| v == family.default_variant())
            .unwrap_or(strongest)
            .max(min);
        let by_rule = if fallback == Some(VariantFallback::DefaultVariant) {
            default_at
        } else {
            (min..strongest)
                .find(|&i| scores[i] <= thresholds[i])
                .unwrap_or(strongest)
        };
        let band = loaded.feedback.band_of(scores[0]);
        let cell = FamilyFeedback::cell(scored.kind, band).expect("a scored kind and band");
        let (routed, adapted) = loaded.feedback.adjust(cell, by_rule, min);
        let at = if self.router.shadow {
            default_at
        } else {
            routed
        };
        let variant = family.variants[at].clone();
        reasons.push(Reason::VariantScored {
            family: self.name.to_string(),
            scores: (0..strongest)
                .map(|i| (family.variants[i].clone(), scores[i], thresholds[i]))
                .collect(),
            chosen: variant.clone(),
            min_variant: request.min_variant.clone(),
            novelty: scored.novelty,
            fallback,
            kind: TASK_KINDS[scored.kind],
            band,
            adapted: adapted.map(|a| a.named(&family.variants)),
        });
        if self.router.shadow {
            reasons.push(Reason::VariantShadow {
                family: self.name.to_string(),
                served: variant.clone(),
                would_choose: family.variants[routed].clone(),
            });
        }
        ChosenModel {
            model: catalog.model_name(&variant),
            family: Some(catalog.family_name(self.name)),
            pinned_profile: None,
            step_up: family.variants.get(at + 1).map(|v| catalog.model_name(v)),
            prompt_router: None,
        }
    }

    /// Each cheaper variant's expected loss against the strongest, blended with the prompt's
    /// length, or the length rule's alone under the `length` fallback.
    fn scores(&self, text: &str, scored: &Scored, fallback: Option<VariantFallback>) -> Vec<f32> {
        let classifier = &self.loaded.classifier;
        let mut scores = score_variants(&self.config.variants, scored, classifier);
        scores
            .iter_mut()
            .for_each(|s| *s = classifier.blended_loss(*s, scored.kind, text));
        if fallback == Some(VariantFallback::Length)
            && let Some(loss) = classifier.loss_by_length(text)
        {
            scores.iter_mut().for_each(|s| *s = loss);
        }
        scores
    }
}

/// Moves a routed family's pick up to a stronger variant when that costs less for this
/// request with its recurring prefix read from the cache ([`cache_aware`](super::cache_aware)),
/// recording `Reason::VariantForCache`.
pub(crate) fn prefer_cached(
    chosen: &mut ChosenModel,
    request: &GenerateRequest,
    config: &Config,
    catalog: &Catalog,
    obs: &(impl super::Observations + ?Sized),
    reasons: &mut Vec<Reason>,
) {
    let Some(name) = chosen.family.as_deref() else {
        return;
    };
    // A family in shadow mode serves its default variant, cached or not.
    let Some(family) = config
        .families
        .get(name)
        .filter(|f| f.router.as_ref().is_some_and(|r| !r.shadow))
    else {
        return;
    };
    let Some(pick) = family.variants.iter().position(|v| **v == *chosen.model) else {
        return;
    };
    let Some((to, from_usd, to_usd)) =
        super::cache_aware::cheapest_sufficient(request, &family.variants, pick, config, obs)
    else {
        return;
    };
    reasons.push(Reason::VariantForCache {
        family: name.to_string(),
        from: family.variants[pick].clone(),
        to: family.variants[to].clone(),
        from_usd,
        to_usd,
    });
    chosen.model = catalog.model_name(&family.variants[to]);
    chosen.step_up = family.variants.get(to + 1).map(|v| catalog.model_name(v));
}

/// The cache rules a routed family's prefixes are tracked by: its variant that caches the
/// shortest prefixes (see [`prompt_cache::survey`](super::prompt_cache::survey)).
pub(crate) fn tracking_rules<'c>(
    chosen: &ChosenModel,
    config: &'c Config,
) -> Option<&'c crate::config::PromptCacheConfig> {
    let family = config
        .families
        .get(chosen.family.as_deref()?)
        .filter(|f| f.router.is_some())?;
    family
        .variants
        .iter()
        .filter_map(|v| config.models.get(v)?.prompt_cache())
        .min_by_key(|rules| rules.min_tokens)
}

/// Each cheaper variant's expected quality loss against the strongest. A model trained on the
/// family's own variants has a head for each; otherwise (the built-in model, say) its weakest
/// and strongest heads give one loss for every cheaper variant, which per-variant thresholds
/// then split into bands.
fn score_variants(
    variants: &[String],
    scored: &crate::classifier::Scored,
    classifier: &Classifier,
) -> Vec<f32> {
    let heads: Option<Vec<usize>> = variants.iter().map(|v| classifier.head_of(v)).collect();
    let cheaper = variants.len() - 1;
    match heads {
        Some(h) => (0..cheaper)
            .map(|i| scored.loss(h[i], h[cheaper]))
            .collect(),
        None => vec![scored.loss(0, scored.probabilities.len() - 1); cheaper],
    }
}

/// The share of prompts sent to the strongest variant when neither the configuration
/// (`max_strong_share`) nor the model file (a model trained without held-out measurements of
/// quality lost by share) says: half, the share that assumes nothing of the model. Like
/// [`NOVELTY_THRESHOLD`](crate::classifier::figures::NOVELTY_THRESHOLD), a property of model
/// files that lack a measurement, not a setting: `defaults.toml`'s family router has the
/// budget that measured models are held to.
const UNMEASURED_STRONG_SHARE: f64 = 0.5;

/// The traffic novelty above which a family's fallback decides: its own setting, else its
/// model's (chosen on held-out sources), else [`NOVELTY_THRESHOLD`](crate::classifier::figures::NOVELTY_THRESHOLD).
pub(crate) fn novelty_threshold(router: &VariantRouterConfig, classifier: &Classifier) -> f32 {
    router
        .novelty_threshold
        .or(classifier.info.novelty_threshold)
        .unwrap_or(crate::classifier::figures::NOVELTY_THRESHOLD as f32)
}

/// The feedback cell of a task kind's name and a band.
fn cell_of(kind: &str, band: u8) -> Option<usize> {
    let kind = TASK_KINDS.iter().position(|k| *k == kind)?;
    FamilyFeedback::cell(kind, band)
}

fn known<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = names.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_novelty_is_a_running_mean_over_its_window() {
        let t = TrafficNovelty::new(4);
        assert_eq!(t.with(1.0), 1.0);
        t.observe(1.0);
        assert_eq!(t.with(0.0), 0.5); // a running mean until four prompts
        assert_eq!(t.with(0.0), 0.5, "reading leaves it unchanged");
    }

    #[test]
    fn a_router_with_a_strong_share_has_a_threshold_per_cheaper_variant() {
        let config =
            Config::from_toml_str("[families.nova]\nrouter = { max_strong_share = 0.3 }\n")
                .unwrap();
        let routers = VariantRouters::load(&config).unwrap();
        assert_eq!(routers.thresholds("nova").map(<[f32]>::len), Some(2));
    }

    fn choose_for(req: GenerateRequest) -> Result<ChosenModel> {
        let config = Config::default();
        choose(
            &req,
            &config,
            &Catalog::new(&config),
            &routers(&config),
            &mut Vec::new(),
        )
    }

    fn routers(config: &Config) -> VariantRouters {
        VariantRouters::load(config).unwrap()
    }

    #[test]
    fn families_models_profiles_and_default() {
        let default = choose_for(GenerateRequest::user("x")).unwrap();
        assert_eq!(default.family.as_deref(), Some("nova"));
        assert!(
            Config::default().families["nova"]
                .variants
                .iter()
                .any(|v| **v == *default.model)
        );
        assert_eq!(
            choose_for(GenerateRequest::user("x").family("claude"))
                .unwrap()
                .family
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_for(GenerateRequest::user("x").model("nova"))
                .unwrap()
                .family
                .as_deref(),
            Some("nova")
        );
        let pinned =
            choose_for(GenerateRequest::user("x").model("eu.amazon.nova-pro-v1:0")).unwrap();
        assert_eq!(&*pinned.model, "amazon.nova-pro-v1:0");
        assert_eq!(
            pinned.pinned_profile,
            Some("eu".parse::<ProfileScope>().unwrap())
        );
    }

    #[test]
    fn an_alias_is_read_as_the_family_model_or_profile_it_names() {
        let config = Config::from_toml_str(
            r#"
            [aliases]
            "gpt-4o" = { family = "claude" }
            "gpt-4o-mini" = { model = "eu.amazon.nova-lite-v1:0" }
            "#,
        )
        .unwrap();
        let chose = |name: &str| {
            let mut reasons = Vec::new();
            let chosen = choose(
                &GenerateRequest::user("x").model(name),
                &config,
                &Catalog::new(&config),
                &routers(&config),
                &mut reasons,
            )
            .unwrap();
            (chosen, reasons)
        };
        let (family, reasons) = chose("gpt-4o");
        assert_eq!(family.family.as_deref(), Some("claude"));
        assert!(
            matches!(&reasons[0], Reason::Aliased { alias, to } if alias == "gpt-4o" && to == "claude")
        );
        let (pinned, _) = chose("gpt-4o-mini");
        assert_eq!(&*pinned.model, "amazon.nova-lite-v1:0");
        assert_eq!(
            pinned.pinned_profile,
            Some("eu".parse::<ProfileScope>().unwrap())
        );
        let unknown = choose(
            &GenerateRequest::user("x").model("gpt-5"),
            &config,
            &Catalog::new(&config),
            &routers(&config),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            unknown.to_string().contains("aliases: gpt-4o, gpt-4o-mini"),
            "{unknown}"
        );
    }

    #[test]
    fn both_built_in_families_are_routed_unless_turned_off() {
        let config = Config::default();
        let loaded = routers(&config);
        assert_eq!(loaded.thresholds("nova").map(<[f32]>::len), Some(2));
        assert_eq!(loaded.thresholds("claude").map(<[f32]>::len), Some(2));
        let mut reasons = Vec::new();
        choose(
            &GenerateRequest::user("x").family("claude"),
            &config,
            &Catalog::new(&config),
            &loaded,
            &mut reasons,
        )
        .unwrap();
        assert!(
            matches!(&reasons[..], [Reason::VariantScored { family, .. }] if family == "claude")
        );

        let off = Config::from_toml_str("[families.claude]\nrouter = false\n").unwrap();
        assert!(off.families["claude"].router.is_none());
        assert!(off.families["nova"].router.is_some());
        let chosen = choose(
            &GenerateRequest::user("x").family("claude"),
            &off,
            &Catalog::new(&off),
            &routers(&off),
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(&*chosen.model, "anthropic.claude-sonnet-4-5-20250929-v1:0");
    }

    #[test]
    fn a_users_router_or_prompt_router_replaces_the_default_router_whole() {
        let own = Config::from_toml_str("[families.nova]\nrouter = { threshold = 0.2 }\n").unwrap();
        let router = own.families["nova"].router.as_ref().unwrap();
        assert_eq!(
            (router.threshold, router.max_strong_share),
            (Some(0.2), None)
        );

        let arn = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1";
        let prompt =
            Config::from_toml_str(&format!("[families.claude]\nprompt_router = {arn:?}\n"))
                .unwrap();
        assert!(prompt.families["claude"].router.is_none());
        assert_eq!(
            prompt.families["claude"].prompt_router.as_deref(),
            Some(arn)
        );

        let json = serde_json::json!({ "families": { "nova": { "router": false } } });
        let off = Config::from_json(json.as_object().unwrap()).unwrap();
        assert!(off.families["nova"].router.is_none());
    }

    fn routed(router: &str) -> Config {
        Config::from_toml_str(&format!(
            "[families.nova]\nvariants = [\"amazon.nova-micro-v1:0\", \"amazon.nova-lite-v1:0\", \"amazon.nova-pro-v1:0\"]\nrouter = {router}\n"
        ))
        .unwrap()
    }

    const HARD: &str = "Janet has 3 times as many marbles as Tom. After giving 12 to Ann, she has 2 more than twice Tom's count. How many marbles did Janet have at first? Show each step.";
    const EASY: &str =
        "Which of these is a mammal?\nA. Shark\nB. Dolphin\nC. Trout\nD. Eel\nAnswer:";

    #[test]
    fn the_router_picks_the_cheapest_variant_within_its_threshold() {
        // One threshold between the two prompts' losses (about 0.02 and 0.16).
        let config = routed("{ threshold = 0.08 }");
        let pick = |text: &str, min: Option<&str>| {
            let mut req = GenerateRequest::user(text).family("nova");
            req.min_variant = min.map(String::from);
            let mut reasons = Vec::new();
            let c = choose(
                &req,
                &config,
                &Catalog::new(&config),
                &routers(&config),
                &mut reasons,
            )
            .unwrap();
            (c, reasons)
        };
        let (easy, reasons) = pick(EASY, None);
        let (hard, _) = pick(HARD, None);
        let rank = |m: &str| {
            config.families["nova"]
                .variants
                .iter()
                .position(|v| v == m)
                .unwrap()
        };
        assert!(
            rank(&easy.model) < rank(&hard.model),
            "{} vs {}",
            easy.model,
            hard.model
        );
        match &reasons[0] {
            Reason::VariantScored { scores, chosen, .. } => {
                assert_eq!(scores.len(), 2);
                assert_eq!(**chosen, *easy.model);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            easy.step_up.as_deref(),
            config.families["nova"]
                .variants
                .get(rank(&easy.model) + 1)
                .map(String::as_str)
        );
        // A minimum is never undercut.
        let (floor, _) = pick(EASY, Some("amazon.nova-pro-v1:0"));
        assert_eq!(&*floor.model, "amazon.nova-pro-v1:0");
        assert_eq!(floor.step_up, None);
        let e = choose(
            &GenerateRequest::user(EASY)
                .family("nova")
                .min_variant("gpt-5"),
            &config,
            &Catalog::new(&config),
            &routers(&config),
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("min_variant") && e.contains("\"gpt-5\""), "{e}");
    }

    #[test]
    fn explicit_thresholds_decide() {
        let everything_cheap = routed("{ threshold = 1.0 }");
        let nothing_cheap = routed("{ thresholds = [-1.0, -1.0] }");
        for text in [EASY, HARD] {
            let req = GenerateRequest::user(text).family("nova");
            let cheap = choose(
                &req,
                &everything_cheap,
                &Catalog::new(&everything_cheap),
                &routers(&everything_cheap),
                &mut Vec::new(),
            )
            .unwrap();
            assert_eq!(&*cheap.model, "amazon.nova-micro-v1:0");
            let strong = choose(
                &req,
                &nothing_cheap,
                &Catalog::new(&nothing_cheap),
                &routers(&nothing_cheap),
                &mut Vec::new(),
            )
            .unwrap();
            assert_eq!(&*strong.model, "amazon.nova-pro-v1:0");
        }
    }

    fn scored(config: &Config, routers: &VariantRouters, text: &str) -> (ChosenModel, Reason) {
        let mut reasons = Vec::new();
        let c = choose(
            &GenerateRequest::user(text).family("nova"),
            config,
            &Catalog::new(config),
            routers,
            &mut reasons,
        )
        .unwrap();
        (c, reasons.remove(0))
    }

    #[test]
    fn novel_traffic_falls_back_to_the_configured_rule_and_says_so() {
        let classifier = Classifier::builtin();
        let config = routed("{ threshold = 0.1 }");
        assert_eq!(
            novelty_threshold(
                config.families["nova"].router.as_ref().unwrap(),
                &classifier
            ),
            classifier
                .info
                .novelty_threshold
                .unwrap_or(crate::classifier::figures::NOVELTY_THRESHOLD as f32),
            "routers and evaluation fall back at the same novelty by default"
        );
        // Novelty always above 0: the fallback decides every call.
        let by_length = routed("{ max_strong_share = 0.3, novelty_threshold = 0.0 }");
        let (_, reason) = scored(&by_length, &routers(&by_length), HARD);
        let Reason::VariantScored {
            scores,
            novelty,
            fallback,
            ..
        } = reason
        else {
            panic!("{reason:?}")
        };
        assert!(novelty.is_some());
        assert_eq!(fallback, Some(VariantFallback::Length));
        let by_len = classifier.loss_by_length(HARD).unwrap();
        assert!(
            scores.iter().all(|(_, loss, _)| *loss == by_len),
            "{scores:?}"
        );

        let to_default = routed(
            "{ max_strong_share = 0.3, novelty_threshold = 0.0, fallback = \"default_variant\" }",
        );
        let (chosen, reason) = scored(&to_default, &routers(&to_default), EASY);
        assert_eq!(
            &*chosen.model,
            to_default.families["nova"].default_variant(),
            "the family's default"
        );
        assert!(reason.to_string().contains("default variant"), "{reason}");

        // Never novel enough, or no fallback: the model's scores decide.
        for router in [
            "{ max_strong_share = 0.3, novelty_threshold = 1.0 }",
            "{ max_strong_share = 0.3, novelty_threshold = 0.0, fallback = \"none\" }",
        ] {
            let config = routed(router);
            let (_, reason) = scored(&config, &routers(&config), HARD);
            let Reason::VariantScored {
                scores, fallback, ..
            } = reason
            else {
                panic!()
            };
            assert_eq!(fallback, None, "{router}");
            let scored = classifier.score(HARD);
            let loss = scored.loss(0, 1);
            assert_eq!(
                scores[0].1,
                classifier.blended_loss(loss, scored.kind, HARD)
            );
        }
    }

    #[test]
    fn the_fallback_follows_the_familys_recent_traffic_not_one_prompt() {
        let classifier = Classifier::builtin();
        let novelty = |t: &str| classifier.score(t).novelty.unwrap();
        let (familiar, novel) = (
            HARD,
            "Write a Python function that merges overlapping intervals and explain its complexity.",
        );
        let (low, high) = (novelty(familiar), novelty(novel));
        assert!(low + 0.1 < high, "{low} {high}");
        // Halfway: one novel prompt in a window of 8 moves the mean an eighth of the way.
        let config = routed(&format!(
            "{{ max_strong_share = 0.3, novelty_window = 8, novelty_threshold = {} }}",
            (low + high) / 2.0
        ));
        let routers = routers(&config);
        // Planning alone leaves the traffic as it was: only calls sent count.
        for _ in 0..20 {
            scored(&config, &routers, novel);
        }
        let fell_back = |text: &str| {
            let reason = scored(&config, &routers, text).1;
            routers.committed(std::slice::from_ref(&reason));
            matches!(
                reason,
                Reason::VariantScored {
                    fallback: Some(_),
                    ..
                }
            )
        };
        for _ in 0..8 {
            assert!(!fell_back(familiar));
        }
        // One novel prompt in familiar traffic does not flip the rule; a run of them does.
        assert!(!fell_back(novel));
        let flipped = (0..16)
            .position(|_| fell_back(novel))
            .expect("novel traffic falls back");
        assert!(flipped <= 8, "after {flipped} more");
        let back = (0..16)
            .position(|_| !fell_back(familiar))
            .expect("and recovers");
        assert!(back <= 8, "after {back} more");
    }

    #[test]
    fn router_configuration_is_checked() {
        for (router, needle) in [
            (
                "{ threshold = 0.1, novelty_threshold = 2.0 }",
                "novelty_threshold",
            ),
            ("{ threshold = 0.1, novelty_window = 0 }", "novelty_window"),
            ("{ threshold = 0.1, max_strong_share = 0.3 }", "at most one"),
            ("{ thresholds = [0.1, 0.2] }", "2 thresholds for 1"),
            ("{ threshold = 3.0 }", "outside -1..=1"),
            ("{ max_strong_share = 1.5 }", "outside 0..=1"),
        ] {
            let e = Config::from_toml_str(&format!(
                "[families.nova]\nvariants = [\"amazon.nova-micro-v1:0\", \"amazon.nova-pro-v1:0\"]\ndefault_variant = \"amazon.nova-pro-v1:0\"\nrouter = {router}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("families.nova.router") && e.contains(needle),
                "{router}: {e}"
            );
        }
    }

    #[test]
    fn a_missing_model_file_fails_when_the_routers_load_naming_the_family() {
        let config = Config::from_toml_str(
            "[families.nova]\nvariants = [\"amazon.nova-micro-v1:0\", \"amazon.nova-pro-v1:0\"]\ndefault_variant = \"amazon.nova-pro-v1:0\"\nrouter = { model = \"/nonexistent/model.lwc\", threshold = 0.1 }\n",
        )
        .expect("configuration is data: the file is read when a router is built");
        let e = VariantRouters::load(&config).unwrap_err().to_string();
        assert!(
            e.contains("families.nova.router.model") && e.contains("/nonexistent/model.lwc"),
            "{e}"
        );
    }

    #[test]
    fn unknown_names_are_named() {
        let e = choose_for(GenerateRequest::user("x").model("gpt-17"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"gpt-17\"") && e.contains("nova"), "{e}");
        let e = choose_for(GenerateRequest::user("x").family("llama"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown family \"llama\""), "{e}");
        let e = choose_for(GenerateRequest::user("x").model("jp.amazon.nova-pro-v1:0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no jp inference profile"), "{e}");
    }
}
