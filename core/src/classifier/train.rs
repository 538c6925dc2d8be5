//! Training: one L2-regularised logistic regression per variant over the shared features,
//! fitted by full-batch Adam. No step is random, so the same data and options give the same
//! model, bit for bit.

use super::data::Dataset;
use super::features::{DENSE, Features};
use super::{Classifier, ClassifierError, Head, ModelInfo};

/// Training options.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// Word buckets are `2^bits` (8..=24); 15 gives a 256 KiB two-variant model.
    pub bits: u32,
    /// Inverse regularisation strength, as scikit-learn's `C`: the penalty is
    /// `|w|^2 / (2 C n)` per row.
    pub c: f64,
    /// Full-batch optimisation steps.
    pub steps: usize,
    /// Adam's learning rate (step size).
    pub learning_rate: f64,
    /// Recorded in the model and used by evaluation's random router; training has no random step.
    pub seed: u64,
    /// A note on what the model was trained on, kept in the file.
    pub trained_on: String,
    /// Read the prompt's static sentence vector ([`StaticTable`](super::StaticTable)) too.
    pub embedding: bool,
    /// Read the hashed word counts (off, their weights stay zero).
    pub words: bool,
    /// Also fit a gap head: the probability that the strongest variant answers well where the
    /// weakest does not, which then scores the weakest against the strongest.
    pub gap: bool,
    /// Of the dense features, read only the prompt's length (the others' weights stay zero).
    pub length_only: bool,
    /// Weigh every source's rows alike in total, so that a large source does not decide the
    /// model for the small ones (off: every row alike).
    pub balance_sources: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            bits: 15,
            c: 0.01,
            steps: 400,
            learning_rate: 0.05,
            seed: 0,
            trained_on: String::new(),
            embedding: true,
            words: false,
            gap: true,
            length_only: true,
            balance_sources: true,
        }
    }
}

/// Trains a classifier on every row of `data` (split it first to hold some out).
pub fn train(data: &Dataset, opts: &TrainOptions) -> Result<Classifier, ClassifierError> {
    if !(8..=24).contains(&opts.bits) {
        return Err(ClassifierError::Data(format!(
            "bits = {} is outside 8..=24",
            opts.bits
        )));
    }
    if !(opts.c > 0.0 && opts.c.is_finite()) || opts.steps == 0 {
        return Err(ClassifierError::Data(
            "C must be positive and steps at least 1".into(),
        ));
    }
    if data.rows.is_empty() {
        return Err(ClassifierError::Data("no rows to train on".into()));
    }
    let features: Vec<Features> = data
        .rows
        .iter()
        .map(|r| Features::extract(&r.prompt, opts.bits))
        .collect();
    let all: Vec<&Features> = features.iter().collect();
    let (dense_mean, dense_std) = super::novelty::moments(&all);
    let sources: Vec<&str> = data.rows.iter().map(|r| r.source.as_str()).collect();
    // The calibration's own in-distribution negatives: every fifth row (the data given is
    // usually the 80% training split already).
    let calibration_held_out: Vec<bool> = (0..features.len()).map(|i| i % 5 == 4).collect();
    let novelty = super::Novelty {
        seen: super::novelty::seen_buckets(&all, opts.bits),
        calibration: super::novelty::calibrate(
            &features,
            &sources,
            &calibration_held_out,
            opts.bits,
        ),
    };
    let table = super::StaticTable::builtin();
    let embedded: Vec<Vec<f32>> = if opts.embedding {
        data.rows.iter().map(|r| table.embed(&r.prompt)).collect()
    } else {
        Vec::new()
    };
    let embedding = opts.embedding.then(|| {
        let (mean, std) = column_moments(&embedded, table.dims());
        super::EmbeddingInfo {
            table: format!("{:016x}", table.id()),
            mean,
            std,
        }
    });
    // Each row's dense block: the standardised dense features, then the standardised
    // embedding.
    let standardised: Vec<Vec<f32>> = features
        .iter()
        .enumerate()
        .map(|(r, f)| {
            let mut d: Vec<f32> = (0..DENSE)
                .map(|i| {
                    if opts.length_only && i != 0 {
                        0.0
                    } else {
                        (f.dense[i] - dense_mean[i]) / dense_std[i].max(1e-6)
                    }
                })
                .collect();
            if let Some(e) = &embedding {
                d.extend(
                    embedded[r]
                        .iter()
                        .zip(&e.mean)
                        .zip(&e.std)
                        .map(|((x, m), s)| (x - m) / s.max(1e-6)),
                );
            }
            d
        })
        .collect();
    let weight_of_source = source_weights(&sources, opts.balance_sources);
    let mut heads = Vec::with_capacity(data.variants.len());
    for (h, variant) in data.variants.iter().enumerate() {
        let labelled: Vec<(usize, f32, f32)> = data
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.outcomes[h].map(|good| (i, if good { 1.0 } else { 0.0 }, weight_of_source[i]))
            })
            .collect();
        if labelled.is_empty() {
            return Err(ClassifierError::Data(format!(
                "no row has an outcome for {variant:?}"
            )));
        }
        let (bias, weights) = fit(&features, &standardised, &labelled, opts);
        heads.push(Head {
            variant: variant.clone(),
            bias,
            weights,
        });
    }
    let gap = if opts.gap {
        let last = data.variants.len() - 1;
        let labelled: Vec<(usize, f32, f32)> = data
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match (r.outcomes[0], r.outcomes[last]) {
                (Some(w), Some(s)) => Some((i, f32::from(u8::from(s && !w)), weight_of_source[i])),
                _ => None,
            })
            .collect();
        if labelled.is_empty() {
            return Err(ClassifierError::Data(
                "no row has outcomes of both the weakest and the strongest variant for a gap head"
                    .into(),
            ));
        }
        let (bias, weights) = fit(&features, &standardised, &labelled, opts);
        Some(Head {
            variant: "gap".into(),
            bias,
            weights,
        })
    } else {
        None
    };
    let mut model = Classifier {
        info: ModelInfo {
            features: super::FEATURES_VERSION,
            bits: opts.bits,
            dense_mean,
            dense_std,
            trained_on: opts.trained_on.clone(),
            rows: data.rows.len(),
            seed: opts.seed,
            loss_percentiles: Vec::new(),
            held_out: None,
            length_percentiles: Vec::new(),
            novelty: Some(novelty),
            quality_lost_by_share: Vec::new(),
            blend: None,
            novelty_threshold: None,
            quality_lost_measured_on: String::new(),
            embedding,
        },
        heads,
        gap,
        reads_words: Default::default(),
    };
    let mut losses: Vec<f32> = data
        .rows
        .iter()
        .map(|r| model.expected_loss(&r.prompt, 0))
        .collect();
    losses.sort_by(f32::total_cmp);
    model.info.loss_percentiles = percentiles(&losses);
    let mut lengths: Vec<f32> = data
        .rows
        .iter()
        .map(|r| (r.prompt.chars().count() as f32).ln_1p())
        .collect();
    lengths.sort_by(f32::total_cmp);
    model.info.length_percentiles = percentiles(&lengths);
    // The (loss, length) ranks of up to 512 evenly spread training prompts, for blends.
    let step = data.rows.len().div_ceil(512).max(1);
    let (ranks, math): (Vec<(f32, f32)>, Vec<bool>) = data
        .rows
        .iter()
        .step_by(step)
        .map(|r| {
            let scored = model.score(&r.prompt);
            let loss = scored.loss(0, scored.probabilities.len() - 1);
            let length = (r.prompt.chars().count() as f32).ln_1p();
            (
                (
                    super::rank_in(&model.info.loss_percentiles, loss),
                    super::rank_in(&model.info.length_percentiles, length),
                ),
                scored.kind == super::MATH_KIND,
            )
        })
        .unzip();
    model.info.blend = Some(super::Blend::new(1.0, None, ranks, math));
    Ok(model)
}

/// The values at percentiles 0, 1, ..., 100 of sorted values.
fn percentiles(sorted: &[f32]) -> Vec<f32> {
    (0..=100)
        .map(|p| sorted[(p * (sorted.len() - 1) + 50) / 100])
        .collect()
}

/// Each row's weight: 1, or with `balance` the rows of each source sharing an equal part of
/// the total (so the weights still sum to the number of rows).
fn source_weights(sources: &[&str], balance: bool) -> Vec<f32> {
    if !balance {
        return vec![1.0; sources.len()];
    }
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for s in sources {
        *counts.entry(s).or_default() += 1;
    }
    let share = sources.len() as f32 / counts.len() as f32;
    sources.iter().map(|s| share / counts[s] as f32).collect()
}

/// The mean and standard deviation of each column of equal-length rows.
fn column_moments(rows: &[Vec<f32>], dims: usize) -> (Vec<f32>, Vec<f32>) {
    let n = rows.len().max(1) as f64;
    let mut mean = vec![0f64; dims];
    for r in rows {
        mean.iter_mut()
            .zip(r)
            .for_each(|(m, x)| *m += f64::from(*x));
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = vec![0f64; dims];
    for r in rows {
        var.iter_mut()
            .zip(r)
            .zip(&mean)
            .for_each(|((v, x), m)| *v += (f64::from(*x) - m).powi(2));
    }
    (
        mean.iter().map(|m| *m as f32).collect(),
        var.iter().map(|v| (v / n).sqrt() as f32).collect(),
    )
}

/// Fits one head on the `labelled` rows ((row, label, weight)) of `features` and their
/// standardised dense values, with the hashed word counts when `opts.words` is on; the kernel
/// is `laneway_logistic::fit`.
fn fit(
    features: &[Features],
    dense: &[Vec<f32>],
    labelled: &[(usize, f32, f32)],
    opts: &TrainOptions,
) -> (f32, Vec<f32>) {
    let examples: Vec<laneway_logistic::Example<'_>> = labelled
        .iter()
        .map(|&(i, label, weight)| laneway_logistic::Example {
            sparse: if opts.words { &features[i].words } else { &[] },
            dense: &dense[i],
            label,
            weight,
        })
        .collect();
    let adam = laneway_logistic::Adam {
        steps: opts.steps,
        learning_rate: opts.learning_rate,
        c: opts.c,
    };
    let dense_dim = dense.first().map_or(DENSE, Vec::len);
    laneway_logistic::fit(&examples, 1usize << opts.bits, dense_dim, &adam)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classifier::data::Row;

    /// Math prompts defeat the small variant; everything else is easy for both.
    fn toy() -> Dataset {
        let mut rows = Vec::new();
        for i in 0..200 {
            let hard = i % 3 == 0;
            let prompt = if hard {
                format!("Solve the integral of x^{i} times sin x, then compute {i} * 17 + 3 = ?")
            } else {
                format!("Name a fruit that is red, like apple number {i}")
            };
            rows.push(Row {
                prompt,
                outcomes: vec![Some(!hard), Some(true)],
                source: "toy".into(),
            });
        }
        Dataset {
            variants: vec!["small".into(), "large".into()],
            rows,
            excluded: 0,
        }
    }

    #[test]
    fn learns_which_prompts_need_the_large_variant() {
        let m = train(
            &toy(),
            &TrainOptions {
                bits: 10,
                ..Default::default()
            },
        )
        .unwrap();
        let hard = m.expected_loss(
            "Solve the integral of x^5 times sin x, then compute 5 * 17 + 3 = ?",
            0,
        );
        let easy = m.expected_loss("Name a fruit that is red, like apple number 7", 0);
        assert!(hard > 0.5 && easy < 0.1, "hard {hard}, easy {easy}");
        assert_eq!(m.info.loss_percentiles.len(), 101);
        // A third of the prompts are hard: sending 35% to the large variant catches them.
        let t = m.threshold_for_strong_share(0.35);
        assert!(easy <= t && t < hard, "threshold {t}");
    }

    #[test]
    fn training_is_deterministic() {
        let opts = TrainOptions {
            bits: 10,
            steps: 50,
            ..Default::default()
        };
        let a = train(&toy(), &opts).unwrap().to_bytes();
        let b = train(&toy(), &opts).unwrap().to_bytes();
        assert_eq!(a, b);
    }

    #[test]
    fn bad_options_and_empty_data_are_errors() {
        assert!(
            train(
                &toy(),
                &TrainOptions {
                    bits: 30,
                    ..Default::default()
                }
            )
            .is_err()
        );
        let empty = Dataset {
            variants: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert!(
            train(&empty, &TrainOptions::default())
                .unwrap_err()
                .to_string()
                .contains("no rows")
        );
    }
}
