//! The complexity classifier: how likely each variant of a family is to answer a prompt well
//! enough, from the prompt alone, in microseconds.
//!
//! A [`Classifier`] holds one logistic head per variant it was trained on (cheapest first) over
//! the same [`Features`]: the prompt's sentence vector from a static token table distilled from
//! a pretrained sentence model ([`StaticTable`]), a few dense shape features and prompt length.
//! The expected quality lost by sending a prompt to a cheaper variant instead of the strongest
//! is the difference of their heads' probabilities, blended with the prompt's rank by length;
//! the variant policy (`plan::variant`) sends the prompt to the cheapest variant whose loss
//! stays within its threshold.
//!
//! Models are stored in a small versioned file ([`Classifier::to_bytes`],
//! [`Classifier::from_bytes`]), and one trained on six public outcome sources ships inside the
//! crate ([`Classifier::builtin`]). Training, evaluation and data loading (`train`, `eval`,
//! `data`) are behind the `training` feature, which `laneway router train` and
//! `laneway router eval` use; what an evaluation found reads without it ([`figures`]).
//!
//! ```
//! use laneway::classifier::Classifier;
//! let c = Classifier::builtin();
//! let hard = c.expected_loss("Prove that there are infinitely many primes p with p ≡ 3 (mod 4).", 0);
//! let easy = c.expected_loss("What is the capital of France?\nA. Paris\nB. Rome\nC. Madrid\nD. Lyon\nAnswer:", 0);
//! assert!((-1.0..=1.0).contains(&hard) && (-1.0..=1.0).contains(&easy));
//! ```

#[cfg(feature = "training")]
pub mod data;
#[cfg(feature = "training")]
pub mod eval;
mod features;
pub mod figures;
mod file;
mod novelty;
mod static_table;
#[cfg(feature = "training")]
pub mod train;
mod wordpiece;

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

pub use features::{
    DENSE, DENSE_NAMES, FEATURES_VERSION, Features, MATH_KIND, TASK_KINDS, task_kind,
};
pub use novelty::{Novelty, Raw as NoveltyMeasures};
pub use static_table::StaticTable;
pub use wordpiece::{VocabError, WordPiece};

/// What can go wrong loading, training or evaluating a classifier.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifierError {
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong, in words.
        reason: String,
    },
    /// A model file's error, with the file it came from.
    #[error("{path}: {cause}")]
    InFile {
        /// The model file.
        path: String,
        /// What was wrong with it.
        cause: Box<ClassifierError>,
    },
    /// The bytes are not a model file, or were damaged.
    #[error("not a valid Laneway classifier model: {0}")]
    Corrupt(String),
    /// A model file of a format version this build does not read.
    #[error("classifier model format version {found}; this build reads version {supported}")]
    Version {
        /// The version the file declares.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// A model trained with another feature extractor: its weights mean nothing here.
    #[error(
        "the model was trained with feature extractor version {found}; this build extracts version {supported}: retrain it with `laneway router train`"
    )]
    Features {
        /// The [`FEATURES_VERSION`] the model was trained with.
        found: u32,
        /// This build's [`FEATURES_VERSION`].
        supported: u32,
    },
    /// A model trained on another static token table: its embedding weights mean nothing here.
    #[error(
        "the model was trained with static token table {found}; this build ships {shipped}: retrain it with `laneway router train`"
    )]
    Table {
        /// The id of the table the model was trained on, in hexadecimal.
        found: String,
        /// The id of the table this build ships, in hexadecimal.
        shipped: String,
    },
    /// A row of training or evaluation data is malformed (`line` counts from 1).
    #[error("{file}, row {line}: {reason}")]
    Row {
        /// The data file, as named.
        file: String,
        /// The row's line in the file (a CSV's header is line 1).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The data as a whole cannot be used (no rows, a single variant, a variant missing).
    #[error("{0}")]
    Data(String),
}

/// The default model's bytes: trained on the six outcome sources under `data/` (README, "Variant routing").
const BUILTIN: &[u8] = include_bytes!("../../models/router.lwc");

/// One variant's logistic head.
#[derive(Clone, PartialEq)]
pub struct Head {
    /// The variant (as named in the training data) this head predicts success for.
    pub variant: String,
    /// The intercept of the head's logistic regression.
    pub bias: f32,
    /// `2^bits` word-bucket weights, then [`DENSE`] dense weights, then one weight per
    /// embedding dimension ([`ModelInfo::embedding`]).
    pub weights: Vec<f32>,
}

/// What a model file says about itself besides its weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The [`FEATURES_VERSION`] the model was trained with.
    pub features: u32,
    /// Word buckets are `2^bits`.
    pub bits: u32,
    /// Mean and standard deviation of each dense feature on the training data.
    pub dense_mean: [f32; DENSE],
    /// Standard deviation of each dense feature on the training data (see `dense_mean`).
    pub dense_std: [f32; DENSE],
    /// How the model was trained: data, rows, seed, options.
    pub trained_on: String,
    /// How many rows the model was trained on.
    pub rows: usize,
    /// The seed given to training (recorded; training has no random step).
    pub seed: u64,
    /// Expected loss (weakest vs strongest head) at each percentile of the training prompts,
    /// 0..=100: used to turn "at most x% to the strongest variant" into a threshold.
    pub loss_percentiles: Vec<f32>,
    /// Held-out figures recorded when the model was made, if any.
    #[serde(default)]
    pub held_out: Option<figures::Summary>,
    /// ln(1 + characters) at each percentile of the training prompts, 0..=100: the
    /// prompt-length fallback maps a length onto the loss scale through it.
    #[serde(default)]
    pub length_percentiles: Vec<f32>,
    /// What scores a prompt's novelty (out-of-distribution probability), if recorded.
    #[serde(default)]
    pub novelty: Option<Novelty>,
    /// The quality lost (the strongest variant's share of good answers minus the routed
    /// share) measured on held-out data when each share 0%, 1%, ..., 100% of the training
    /// prompts is sent to the strongest: what a threshold costs, as
    /// [`Classifier::share_for_quality_loss`] reads it. Empty when not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality_lost_by_share: Vec<f32>,
    /// What [`ModelInfo::quality_lost_by_share`] was measured on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub quality_lost_measured_on: String,
    /// How the router's score blends the model with prompt length, if it does
    /// ([`Classifier::blended_loss`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blend: Option<Blend>,
    /// The traffic novelty above which the prompt-length fallback decides, as chosen on
    /// held-out sources (a family's `novelty_threshold` overrides it; 0.5 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub novelty_threshold: Option<f32>,
    /// The static-embedding block the heads read after the dense features, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbeddingInfo>,
}

/// A model's static-embedding features: which table gave them and how they are standardised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingInfo {
    /// The table's [`StaticTable::id`], in hexadecimal: a model trained on another table is
    /// refused.
    pub table: String,
    /// Mean and standard deviation of each dimension on the training prompts.
    pub mean: Vec<f32>,
    /// Standard deviation of each dimension on the training prompts (see `mean`).
    pub std: Vec<f32>,
}

impl EmbeddingInfo {
    /// The dimension of the block.
    pub fn dims(&self) -> usize {
        self.mean.len()
    }
}

/// The router's score as a blend of ranks: `model_weight` times the prompt's rank by the
/// model's expected loss among the training prompts, plus the rest times its rank by length,
/// put back on the loss scale through the training prompts' own blends (so that a threshold
/// still sends the same share of them to the strongest variant). Prompts of the `math` task
/// kind (arithmetic, word problems) may weigh the model differently: there a prompt's meaning
/// says least about how hard it is.
///
/// ```
/// use laneway::classifier::{Blend, MATH_KIND};
/// let b = Blend::new(0.8, Some(0.2), vec![(0.1, 0.9), (0.5, 0.5)], vec![false, true]);
/// assert_eq!(b.weight_for(0), 0.8);
/// assert_eq!(b.weight_for(MATH_KIND), 0.2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Blend {
    /// The model's weight, 0..=1 (1: the model alone; 0: prompt length alone).
    pub model_weight: f32,
    /// The model's weight for prompts of the `math` kind ([`MATH_KIND`]); `None`:
    /// `model_weight` for every kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub math_weight: Option<f32>,
    /// (rank by loss, rank by length), each 0..=1, of up to 512 training prompts.
    pub ranks: Vec<(f32, f32)>,
    /// Whether each of `ranks` is of the `math` kind (empty in models from before the kind
    /// was recorded: none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub math: Vec<bool>,
    /// Their blends at their kinds' weights, sorted ([`Blend::set_weights`] keeps them).
    #[serde(skip)]
    sorted: Vec<f32>,
}

impl Blend {
    /// A blend at `model_weight` (and `math_weight` for the `math` kind) over training
    /// prompts' ranks and whether each is of the `math` kind.
    pub fn new(
        model_weight: f32,
        math_weight: Option<f32>,
        ranks: Vec<(f32, f32)>,
        math: Vec<bool>,
    ) -> Blend {
        let mut b = Blend {
            model_weight,
            math_weight,
            ranks,
            math,
            sorted: Vec::new(),
        };
        b.set_weights(model_weight, math_weight);
        b
    }

    /// Sets the model's weights (each 0..=1).
    pub fn set_weights(&mut self, model_weight: f32, math_weight: Option<f32>) {
        self.model_weight = model_weight.clamp(0.0, 1.0);
        self.math_weight = math_weight.map(|w| w.clamp(0.0, 1.0));
        let mut sorted: Vec<f32> = self
            .ranks
            .iter()
            .enumerate()
            .map(|(i, (l, n))| {
                let math = self.math.get(i).copied().unwrap_or(false);
                let a = self.weight_for(if math { MATH_KIND } else { 0 });
                a * l + (1.0 - a) * n
            })
            .collect();
        sorted.sort_by(f32::total_cmp);
        self.sorted = sorted;
    }

    /// The model's weight for a prompt of task kind `kind` (an index into [`TASK_KINDS`]).
    pub fn weight_for(&self, kind: usize) -> f32 {
        match self.math_weight {
            Some(w) if kind == MATH_KIND => w,
            _ => self.model_weight,
        }
    }
}

/// Where `x` falls among sorted values (0..=1, interpolated).
pub(crate) fn rank_in(sorted: &[f32], x: f32) -> f32 {
    let n = sorted.len();
    if n < 2 {
        return 0.5;
    }
    let at = sorted.partition_point(|v| *v < x);
    if at == 0 {
        return 0.0;
    }
    if at == n {
        return 1.0;
    }
    let (lo, hi) = (sorted[at - 1], sorted[at]);
    let within = if hi > lo { (x - lo) / (hi - lo) } else { 0.5 };
    ((at - 1) as f32 + within) / (n - 1) as f32
}

/// The value at rank `q` (0..=1) of sorted values, interpolated.
pub(crate) fn value_at(sorted: &[f32], q: f32) -> f32 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let x = q.clamp(0.0, 1.0) * (n - 1) as f32;
    let lo = x.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo as f32)
}

/// Most dimensions a model's embedding block may have (the shipped table has 128).
pub(crate) const MAX_EMBEDDING_DIMS: usize = 1024;

/// What the classifier makes of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The probability that each head's variant answers well enough, cheapest first.
    pub probabilities: Vec<f32>,
    /// The calibrated probability that the prompt is of a kind the model was not trained on
    /// (`None` when the model records no calibration).
    pub novelty: Option<f32>,
    /// The kind of work it asks for, an index into [`TASK_KINDS`].
    pub kind: usize,
    /// The gap head's probability, if the model has one.
    pub gap: Option<f32>,
}

impl Scored {
    /// The expected quality lost by sending the prompt to head `cheaper` instead of head
    /// `stronger`: the gap head's probability for the weakest against the strongest, when the
    /// model has one, else the difference of the two heads' probabilities.
    pub fn loss(&self, cheaper: usize, stronger: usize) -> f32 {
        match self.gap {
            Some(g) if cheaper == 0 && stronger + 1 == self.probabilities.len() => g,
            _ => self.probabilities[stronger] - self.probabilities[cheaper],
        }
    }
}

impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("variant", &self.variant)
            .field("bias", &self.bias)
            .field("weights", &format_args!("[{} values]", self.weights.len()))
            .finish()
    }
}

/// A trained complexity classifier.
#[derive(Clone, PartialEq)]
pub struct Classifier {
    /// What the model file says about itself: how it was trained, its percentiles, its figures.
    pub info: ModelInfo,
    /// One head per variant, cheapest first.
    pub heads: Vec<Head>,
    /// A head for the gap itself, if trained (`TrainOptions::gap`): the probability that the
    /// strongest variant answers well where the weakest does not. It is then the loss of the
    /// weakest variant against the strongest ([`Scored::loss`]).
    pub gap: Option<Head>,
    /// Whether any head reads word counts, found at the first score.
    reads_words: OnceLock<bool>,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier")
            .field("variants", &self.variants().collect::<Vec<_>>())
            .field("bits", &self.info.bits)
            .field("trained_on", &self.info.trained_on)
            .finish_non_exhaustive()
    }
}

impl Classifier {
    /// The model shipped inside the crate (two heads: `weak` and `strong`).
    pub fn builtin() -> Arc<Classifier> {
        static MODEL: OnceLock<Arc<Classifier>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                Arc::new(Classifier::from_bytes(BUILTIN).expect("the built-in model is valid"))
            })
            .clone()
    }

    /// Loads a model file written by [`Classifier::save`] or `laneway router train`.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Classifier, ClassifierError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| ClassifierError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Classifier::from_bytes(&bytes).map_err(|e| ClassifierError::InFile {
            path: path.display().to_string(),
            cause: Box::new(e),
        })
    }

    /// Writes the model file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), ClassifierError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bytes()).map_err(|e| ClassifierError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// The variants, cheapest first.
    pub fn variants(&self) -> impl Iterator<Item = &str> {
        self.heads.iter().map(|h| h.variant.as_str())
    }

    /// The index of a variant's head.
    pub fn head_of(&self, variant: &str) -> Option<usize> {
        self.heads.iter().position(|h| h.variant == variant)
    }

    /// The probability that each head's variant answers `prompt` well enough, cheapest first.
    pub fn probabilities(&self, prompt: &str) -> Vec<f32> {
        self.score(prompt).probabilities
    }

    /// Each head's probability and the prompt's novelty, from one pass over the prompt.
    ///
    /// ```
    /// let c = laneway::classifier::Classifier::builtin();
    /// let s = c.score("Write a haiku about the sea.");
    /// assert_eq!(s.probabilities.len(), c.heads.len());
    /// assert!(s.novelty.is_some_and(|p| (0.0..=1.0).contains(&p)));
    /// ```
    pub fn score(&self, prompt: &str) -> Scored {
        let bits = self.info.bits;
        let mut embedded = [0f32; MAX_EMBEDDING_DIMS];
        let embedded = match &self.info.embedding {
            Some(e) => {
                let v = &mut embedded[..e.dims()];
                StaticTable::builtin().embed_into(prompt, v);
                for ((x, m), s) in v.iter_mut().zip(&e.mean).zip(&e.std) {
                    *x = (*x - m) / s.max(1e-6);
                }
                &embedded[..e.dims()]
            }
            None => &embedded[..0],
        };
        Features::with_counts(prompt, bits, |counts, touched, dense| {
            let norm = features::l2_norm(counts, touched);
            let kind = task_kind(&dense);
            let dense = self.standardise(dense);
            let words = 1usize << bits;
            let novelty = self
                .info
                .novelty
                .as_ref()
                .and_then(|n| n.probability(n.raw(counts, touched, &dense)));
            // A model trained without word counts has zero word weights: skip them.
            let reads_words = self.info.bits > 0 && !self.heads.is_empty() && self.reads_words();
            let logit = |h: &Head| {
                let w: f32 = if reads_words {
                    touched
                        .iter()
                        .map(|&b| h.weights[b as usize] * f32::from(counts[b as usize]))
                        .sum::<f32>()
                        / norm
                } else {
                    0.0
                };
                let d: f32 = dense
                    .iter()
                    .chain(embedded)
                    .zip(&h.weights[words..])
                    .map(|(x, w)| x * w)
                    .sum();
                h.bias + w + d
            };
            let probabilities = self.heads.iter().map(|h| sigmoid(logit(h))).collect();
            let gap = self.gap.as_ref().map(|h| sigmoid(logit(h)));
            Scored {
                probabilities,
                novelty,
                kind,
                gap,
            }
        })
    }

    /// The prompt-length rule on the model's loss scale: the loss at the percentile of the
    /// training prompts that `prompt`'s length reaches, so that the family's thresholds send
    /// about the same share of prompts to each variant as the model would. `None` for a model
    /// that records no length percentiles.
    ///
    /// ```
    /// let c = laneway::classifier::Classifier::builtin();
    /// let short = c.loss_by_length("Hi").unwrap();
    /// let long = c.loss_by_length(&"a long question ".repeat(200)).unwrap();
    /// assert!(short < long);
    /// ```
    pub fn loss_by_length(&self, prompt: &str) -> Option<f32> {
        let lengths = &self.info.length_percentiles;
        let losses = &self.info.loss_percentiles;
        if lengths.len() < 2 || losses.len() != lengths.len() {
            return None;
        }
        let x = (prompt.chars().count() as f32).ln_1p();
        let at = lengths.partition_point(|l| *l < x).min(lengths.len() - 1);
        Some(losses[at])
    }

    /// The router's score of a prompt whose model loss is `loss` and whose task kind is
    /// `kind` ([`Scored::kind`]): the model's loss, or with a [`Blend`] the blend of its rank
    /// by that loss and its rank by length, on the loss scale.
    ///
    /// ```
    /// let c = laneway::classifier::Classifier::builtin();
    /// let p = "Prove that the square root of two is irrational.";
    /// let s = c.score(p);
    /// let loss = s.loss(0, s.probabilities.len() - 1);
    /// assert!((-1.0..=1.0).contains(&c.blended_loss(loss, s.kind, p)));
    /// ```
    pub fn blended_loss(&self, loss: f32, kind: usize, prompt: &str) -> f32 {
        let (Some(blend), losses, lengths) = (
            &self.info.blend,
            &self.info.loss_percentiles,
            &self.info.length_percentiles,
        ) else {
            return loss;
        };
        if blend.sorted.len() < 2 || losses.len() < 2 || lengths.len() < 2 {
            return loss;
        }
        let a = blend.weight_for(kind);
        let by_loss = rank_in(losses, loss);
        let by_length = rank_in(lengths, (prompt.chars().count() as f32).ln_1p());
        value_at(
            losses,
            rank_in(&blend.sorted, a * by_loss + (1.0 - a) * by_length),
        )
    }

    /// The quality expected to be lost by sending `prompt` to head `cheaper` instead of the
    /// strongest head: P(strongest good) − P(cheaper good), in −1..=1 (with a gap head, for the
    /// weakest: the probability that only the strongest answers well).
    pub fn expected_loss(&self, prompt: &str, cheaper: usize) -> f32 {
        let s = self.score(prompt);
        let last = s.probabilities.len() - 1;
        if cheaper > last {
            return 0.0;
        }
        s.loss(cheaper, last)
    }

    /// The loss threshold that sends about `share` (0..=1) of the training prompts to the
    /// strongest variant: the loss at the (1 − share) percentile.
    pub fn threshold_for_strong_share(&self, share: f64) -> f32 {
        let p = &self.info.loss_percentiles;
        if p.is_empty() {
            return 0.0;
        }
        let at = ((1.0 - share.clamp(0.0, 1.0)) * (p.len() - 1) as f64).round() as usize;
        p[at.min(p.len() - 1)]
    }

    /// The smallest share of the training prompts to send to the strongest variant whose
    /// measured held-out quality loss is within `budget` (`None` for a model with no such
    /// measurements); all of them when no share is.
    ///
    /// ```
    /// let c = laneway::classifier::Classifier::builtin();
    /// let strict = c.share_for_quality_loss(0.01).unwrap();
    /// let loose = c.share_for_quality_loss(0.10).unwrap();
    /// assert!(loose <= strict && strict <= 1.0);
    /// ```
    pub fn share_for_quality_loss(&self, budget: f32) -> Option<f64> {
        let lost = &self.info.quality_lost_by_share;
        if lost.len() < 2 {
            return None;
        }
        let at = lost.iter().position(|l| *l <= budget + 1e-6);
        Some(at.map_or(1.0, |p| p as f64 / (lost.len() - 1) as f64))
    }

    /// Whether any head has a nonzero word weight (checked once per model).
    fn reads_words(&self) -> bool {
        *self.reads_words.get_or_init(|| {
            let words = 1usize << self.info.bits;
            self.heads
                .iter()
                .chain(&self.gap)
                .any(|h| h.weights[..words].iter().any(|w| *w != 0.0))
        })
    }

    pub(crate) fn standardise(&self, dense: [f32; DENSE]) -> [f32; DENSE] {
        let mut out = dense;
        for (i, v) in out.iter_mut().enumerate() {
            *v = (*v - self.info.dense_mean[i]) / self.info.dense_std[i].max(1e-6);
        }
        out
    }
}

pub(crate) fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}
