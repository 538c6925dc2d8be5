//! The complexity classifier: how likely each variant of a family is to answer a prompt well
//! enough, from the prompt alone, in microseconds.
//!
//! A [`Classifier`] holds one logistic head per variant it was trained on (cheapest first) over
//! the same [`Features`]: hashed word counts and a few dense shape features. The expected
//! quality lost by sending a prompt to a cheaper variant instead of the strongest is the
//! difference of their heads' probabilities; the variant policy (`plan::variant`) sends the
//! prompt to the cheapest variant whose loss stays within its threshold.
//!
//! Models are trained with [`train::train`] (or `laneway router train`), evaluated with
//! [`eval`] (or `laneway router eval`), stored in a small versioned file ([`Classifier::to_bytes`],
//! [`Classifier::from_bytes`]), and one trained on the RouteLLM evaluation data ships inside the
//! crate ([`Classifier::builtin`]).
//!
//! ```
//! use laneway::classifier::Classifier;
//! let c = Classifier::builtin();
//! let hard = c.expected_loss("Prove that there are infinitely many primes p with p ≡ 3 (mod 4).", 0);
//! let easy = c.expected_loss("What is the capital of France?\nA. Paris\nB. Rome\nC. Madrid\nD. Lyon\nAnswer:", 0);
//! assert!((-1.0..=1.0).contains(&hard) && (-1.0..=1.0).contains(&easy));
//! ```

pub mod data;
pub mod eval;
mod features;
mod file;
mod novelty;
pub mod train;

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

pub use features::{task_kind, Features, DENSE, DENSE_NAMES, FEATURES_VERSION, TASK_KINDS};
pub use novelty::{Novelty, Raw as NoveltyMeasures};

/// What can go wrong loading, training or evaluating a classifier.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifierError {
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    /// A model file's error, with the file it came from.
    #[error("{path}: {cause}")]
    InFile {
        path: String,
        cause: Box<ClassifierError>,
    },
    /// The bytes are not a model file, or were damaged.
    #[error("not a valid Laneway classifier model: {0}")]
    Corrupt(String),
    /// A model file of a format version this build does not read.
    #[error("classifier model format version {found}; this build reads version {supported}")]
    Version { found: u16, supported: u16 },
    /// A model trained with another feature extractor: its weights mean nothing here.
    #[error("the model was trained with feature extractor version {found}; this build extracts version {supported}: retrain it with `laneway router train`")]
    Features { found: u32, supported: u32 },
    /// A row of training or evaluation data is malformed (`line` counts from 1).
    #[error("{file}, row {line}: {reason}")]
    Row {
        file: String,
        line: usize,
        reason: String,
    },
    /// The data as a whole cannot be used (no rows, a single variant, a variant missing).
    #[error("{0}")]
    Data(String),
}

/// The default model's bytes: trained on `shared/datasets/routellm` (README, "Variant routing").
const BUILTIN: &[u8] = include_bytes!("../../models/routellm.lwc");

/// One variant's logistic head.
#[derive(Clone, PartialEq)]
pub struct Head {
    /// The variant (as named in the training data) this head predicts success for.
    pub variant: String,
    pub bias: f32,
    /// `2^bits` word-bucket weights, then [`DENSE`] dense weights.
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
    pub dense_std: [f32; DENSE],
    /// How the model was trained: data, rows, seed, options.
    pub trained_on: String,
    pub rows: usize,
    pub seed: u64,
    /// Expected loss (weakest vs strongest head) at each percentile of the training prompts,
    /// 0..=100: used to turn "at most x% to the strongest variant" into a threshold.
    pub loss_percentiles: Vec<f32>,
    /// Held-out figures recorded when the model was made, if any.
    #[serde(default)]
    pub held_out: Option<eval::Summary>,
    /// ln(1 + characters) at each percentile of the training prompts, 0..=100: the
    /// prompt-length fallback maps a length onto the loss scale through it.
    #[serde(default)]
    pub length_percentiles: Vec<f32>,
    /// What scores a prompt's novelty (out-of-distribution probability), if recorded.
    #[serde(default)]
    pub novelty: Option<Novelty>,
}

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
    pub info: ModelInfo,
    /// One head per variant, cheapest first.
    pub heads: Vec<Head>,
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
            let probabilities = self
                .heads
                .iter()
                .map(|h| {
                    let w: f32 = touched
                        .iter()
                        .map(|&b| h.weights[b as usize] * f32::from(counts[b as usize]))
                        .sum::<f32>()
                        / norm;
                    let d: f32 = dense
                        .iter()
                        .zip(&h.weights[words..])
                        .map(|(x, w)| x * w)
                        .sum();
                    sigmoid(h.bias + w + d)
                })
                .collect();
            Scored {
                probabilities,
                novelty,
                kind,
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

    /// The quality expected to be lost by sending `prompt` to head `cheaper` instead of the
    /// strongest head: P(strongest good) − P(cheaper good), in −1..=1.
    pub fn expected_loss(&self, prompt: &str, cheaper: usize) -> f32 {
        let p = self.probabilities(prompt);
        match (p.get(cheaper), p.last()) {
            (Some(c), Some(s)) => s - c,
            _ => 0.0,
        }
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
