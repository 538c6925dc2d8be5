//! How unlike the training data a prompt is: a calibrated probability that it comes from a
//! kind of prompt the model was not trained on, so that the router can fall back to a simple
//! rule where the model's scores mean little.
//!
//! Two raw measures, both cheap at scoring time: the share of the prompt's word mass (L2, as
//! the word features) in buckets that no two training prompts shared, and the distance of its
//! dense features from the training data's (root mean squared z-score, each capped at 5). They
//! are turned into a probability by a logistic fitted on leave-one-source-out folds of the
//! training data: prompts of the held-out source are the positives, held-out prompts of the
//! sources trained on the negatives, the two classes weighted equally.

use serde::{Deserialize, Serialize};

use super::features::DENSE;
use super::sigmoid;

/// What a model keeps to score novelty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Novelty {
    /// Word buckets that at least two training prompts contain, as a bitset of `2^bits` bits.
    pub seen: Vec<u64>,
    /// `[bias, unseen_share weight, distance weight]` of the calibration; `None` when the
    /// training data had a single source (nothing to calibrate against): no score then.
    pub calibration: Option<[f32; 3]>,
}

/// The raw measures of one prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Raw {
    /// Share of the word mass (sum of squared counts) in buckets not seen in training, 0..=1.
    pub unseen_share: f32,
    /// Root mean squared standardised distance of the dense features, each z capped at 5.
    pub distance: f32,
}

impl Novelty {
    /// Whether a bucket was seen in training.
    pub fn is_seen(&self, bucket: u32) -> bool {
        self.seen
            .get(bucket as usize / 64)
            .is_some_and(|w| w >> (bucket % 64) & 1 == 1)
    }

    /// The calibrated probability that a prompt with these measures is of a kind not trained on.
    pub fn probability(&self, raw: Raw) -> Option<f32> {
        let [b, u, d] = self.calibration?;
        Some(sigmoid(b + u * raw.unseen_share + d * raw.distance))
    }

    /// The raw measures from a prompt's bucket counts and standardised dense features.
    pub fn raw(&self, counts: &[u16], touched: &[u32], standardised: &[f32; DENSE]) -> Raw {
        Raw {
            unseen_share: self.unseen_share(
                touched
                    .iter()
                    .map(|&b| (b, f32::from(counts[b as usize]).powi(2))),
            ),
            distance: distance(standardised),
        }
    }

    /// The share of the mass in buckets not seen in training, from (bucket, mass) pairs.
    fn unseen_share(&self, masses: impl Iterator<Item = (u32, f32)>) -> f32 {
        let (mut all, mut unseen) = (0f32, 0f32);
        for (b, m) in masses {
            all += m;
            if !self.is_seen(b) {
                unseen += m;
            }
        }
        if all > 0.0 { unseen / all } else { 0.0 }
    }
}

/// Root mean squared z-score, each capped at 5 (one wild feature does not dominate).
pub(crate) fn distance(standardised: &[f32; DENSE]) -> f32 {
    (standardised
        .iter()
        .map(|z| z.clamp(-5.0, 5.0).powi(2))
        .sum::<f32>()
        / DENSE as f32)
        .sqrt()
}

#[cfg(feature = "training")]
pub(crate) use fit::{calibrate, moments, seen_buckets};

/// Fitting the novelty score to training data (the `training` feature).
#[cfg(feature = "training")]
mod fit {
    use super::{DENSE, Novelty, Raw, distance};
    use crate::classifier::features::Features;

    /// The bitset of buckets that at least two of `rows` contain.
    pub(crate) fn seen_buckets(rows: &[&Features], bits: u32) -> Vec<u64> {
        let mut once = vec![0u64; (1usize << bits).div_ceil(64)];
        let mut twice = once.clone();
        for f in rows {
            for &(b, _) in &f.words {
                let (w, m) = (b as usize / 64, 1u64 << (b % 64));
                twice[w] |= once[w] & m;
                once[w] |= m;
            }
        }
        twice
    }

    /// Mean and standard deviation of each dense feature.
    pub(crate) fn moments(rows: &[&Features]) -> ([f32; DENSE], [f32; DENSE]) {
        let n = rows.len().max(1) as f64;
        let mut mean = [0f64; DENSE];
        for f in rows {
            for (m, v) in mean.iter_mut().zip(f.dense) {
                *m += f64::from(v) / n;
            }
        }
        let mut var = [0f64; DENSE];
        for f in rows {
            for ((s, v), m) in var.iter_mut().zip(f.dense).zip(mean) {
                *s += (f64::from(v) - m).powi(2) / n;
            }
        }
        (
            mean.map(|m| m as f32),
            var.map(|v| (v.sqrt() as f32).max(1e-6)),
        )
    }

    /// The raw measures of `f` against a reference set's seen buckets and dense moments.
    pub(super) fn raw_against(
        f: &Features,
        seen: &Novelty,
        (mean, std): &([f32; DENSE], [f32; DENSE]),
    ) -> Raw {
        let z: [f32; DENSE] = std::array::from_fn(|i| (f.dense[i] - mean[i]) / std[i].max(1e-6));
        Raw {
            // The word weights are counts over their L2 norm: squared, the same shares as counts.
            unseen_share: seen.unseen_share(f.words.iter().map(|&(b, x)| (b, x * x))),
            distance: distance(&z),
        }
    }

    /// Fits the calibration on leave-one-source-out folds: for each source, the reference is the
    /// other sources' rows outside `held_out`; that source's rows are positives and the other
    /// sources' `held_out` rows negatives. `None` with fewer than two sources.
    pub(crate) fn calibrate(
        features: &[Features],
        sources: &[&str],
        held_out: &[bool],
        bits: u32,
    ) -> Option<[f32; 3]> {
        let mut names: Vec<&str> = sources.to_vec();
        names.sort_unstable();
        names.dedup();
        if names.len() < 2 {
            return None;
        }
        let mut samples: Vec<(Raw, bool)> = Vec::new();
        for &h in &names {
            let reference: Vec<&Features> = (0..features.len())
                .filter(|&i| sources[i] != h && !held_out[i])
                .map(|i| &features[i])
                .collect();
            if reference.is_empty() {
                continue;
            }
            let seen = Novelty {
                seen: seen_buckets(&reference, bits),
                calibration: None,
            };
            let m = moments(&reference);
            for i in 0..features.len() {
                if sources[i] == h {
                    samples.push((raw_against(&features[i], &seen, &m), true));
                } else if held_out[i] {
                    samples.push((raw_against(&features[i], &seen, &m), false));
                }
            }
        }
        let positives = samples.iter().filter(|s| s.1).count();
        if positives == 0 || positives == samples.len() {
            return None;
        }
        Some(fit_logistic(&samples, positives))
    }

    /// A three-parameter logistic regression by Newton's method, the classes weighted equally,
    /// with a small ridge so that separable data still converges.
    fn fit_logistic(samples: &[(Raw, bool)], positives: usize) -> [f32; 3] {
        let negatives = samples.len() - positives;
        let (wp, wn) = (0.5 / positives as f64, 0.5 / negatives as f64);
        let mut beta = [0f64; 3];
        for _ in 0..50 {
            let mut g = [0f64; 3];
            let mut h = [[0f64; 3]; 3];
            for (raw, y) in samples {
                let x = [1.0, f64::from(raw.unseen_share), f64::from(raw.distance)];
                let z: f64 = (0..3).map(|k| beta[k] * x[k]).sum();
                let p = 1.0 / (1.0 + (-z).exp());
                let w = if *y { wp } else { wn };
                let err = p - if *y { 1.0 } else { 0.0 };
                for a in 0..3 {
                    g[a] += w * err * x[a];
                    for b in 0..3 {
                        h[a][b] += w * p * (1.0 - p) * x[a] * x[b];
                    }
                }
            }
            const RIDGE: f64 = 1e-4;
            for a in 1..3 {
                g[a] += RIDGE * beta[a];
                h[a][a] += RIDGE;
            }
            let Some(step) = solve3(h, g) else { break };
            let mut largest = 0f64;
            for k in 0..3 {
                beta[k] -= step[k];
                largest = largest.max(step[k].abs());
            }
            if largest < 1e-9 {
                break;
            }
        }
        beta.map(|b| b as f32)
    }

    /// Solves a 3x3 system by Gaussian elimination with partial pivoting.
    pub(super) fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
        for col in 0..3 {
            let pivot = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
            if a[pivot][col].abs() < 1e-15 {
                return None;
            }
            a.swap(col, pivot);
            b.swap(col, pivot);
            for row in col + 1..3 {
                let f = a[row][col] / a[col][col];
                let pivot_row = a[col];
                for (x, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
                b[row] -= f * b[col];
            }
        }
        let mut x = [0f64; 3];
        for row in (0..3).rev() {
            let s: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
            x[row] = (b[row] - s) / a[row][row];
        }
        Some(x)
    }
}

#[cfg(all(test, feature = "training"))]
mod tests {
    use super::fit::*;
    use super::*;
    use crate::classifier::features::Features;

    fn feats(prompts: &[String]) -> Vec<Features> {
        prompts.iter().map(|p| Features::extract(p, 12)).collect()
    }

    #[test]
    fn a_source_unlike_the_others_scores_high_and_familiar_prompts_low() {
        let mut prompts = Vec::new();
        let mut sources = Vec::new();
        for i in 0..60 {
            prompts.push(format!(
                "What is the capital of country number {i}? A. one B. two"
            ));
            sources.push("quiz");
            prompts.push(format!(
                "Which river flows through city {i}? A. this B. that"
            ));
            sources.push("quiz2");
            prompts.push(format!(
                "Schreibe ein Gedicht über Katzen und Hunde im Garten, Strophe {i}, mit Reimen und vielen langen zusammengesetzten Wörtern wie Donaudampfschifffahrt"
            ));
            sources.push("poems");
        }
        let f = feats(&prompts);
        let held: Vec<bool> = (0..f.len()).map(|i| i % 5 == 0).collect();
        let cal = calibrate(&f, &sources, &held, 12).expect("three sources calibrate");
        let novelty = Novelty {
            seen: seen_buckets(&f.iter().collect::<Vec<_>>(), 12),
            calibration: Some(cal),
        };
        let m = moments(&f.iter().collect::<Vec<_>>());
        let familiar = novelty
            .probability(raw_against(&f[0], &novelty, &m))
            .unwrap();
        let foreign = Features::extract(
            "Implement a lock-free ring buffer in Rust with const generics; explain the memory orderings",
            12,
        );
        let unfamiliar = novelty
            .probability(raw_against(&foreign, &novelty, &m))
            .unwrap();
        assert!(
            familiar < 0.5 && unfamiliar > 0.5,
            "{familiar} {unfamiliar}"
        );
    }

    #[test]
    fn one_source_has_nothing_to_calibrate_against() {
        let f = feats(&["a prompt".into(), "another prompt".into()]);
        assert_eq!(calibrate(&f, &["x", "x"], &[false, true], 12), None);
    }

    #[test]
    fn the_solver_solves() {
        let x = solve3(
            [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
            [3.0, 5.0, 5.0],
        )
        .unwrap();
        for (a, b) in x.iter().zip([1.0, 1.0, 1.0]) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}
