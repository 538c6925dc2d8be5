//! Weighted, L2-regularised logistic regression fitted by full-batch Adam: the numeric kernel
//! of `laneway::classifier::train` (the `training` feature).
//!
//! It is a crate of its own so that debug builds, which the test suites run, compile it
//! optimised (`[profile.dev.package.laneway-logistic]` in the workspace's Cargo.toml): the
//! rest of the core stays quick to rebuild, and retraining the shipped model takes seconds
//! rather than minutes. Optimisation does not change the result: Rust neither reorders
//! floating-point operations nor fuses them, so a model fitted in a debug build is the one a
//! release build fits, bit for bit.
//!
//! ```
//! use laneway_logistic::{Adam, Example, fit};
//! // One dense feature that separates the labels.
//! let rows: Vec<Example> = (0..40)
//!     .map(|i| Example {
//!         sparse: &[],
//!         dense: if i % 2 == 0 { &[1.0] } else { &[-1.0] },
//!         label: (i % 2 == 0) as u8 as f32,
//!         weight: 1.0,
//!     })
//!     .collect();
//! let adam = Adam { steps: 200, learning_rate: 0.1, c: 1.0 };
//! let (bias, weights) = fit(&rows, 0, 1, &adam);
//! assert_eq!(weights.len(), 1);
//! assert!(weights[0] > 1.0 && bias.abs() < 0.1);
//! ```

/// One training example.
#[derive(Debug, Clone, Copy)]
pub struct Example<'a> {
    /// Sparse features: (index below `sparse_dim`, value), each index at most once.
    pub sparse: &'a [(u32, f32)],
    /// Dense features, `dense_dim` of them (already standardised).
    pub dense: &'a [f32],
    /// The label: 1 for the positive class, 0 for the negative (values between weigh both).
    pub label: f32,
    /// The example's weight in the loss.
    pub weight: f32,
}

/// The optimiser's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adam {
    /// Full-batch steps.
    pub steps: usize,
    /// Adam's learning rate (step size).
    pub learning_rate: f64,
    /// Inverse regularisation strength, as scikit-learn's `C`: the penalty is
    /// `|w|^2 / (2 C n)` per example.
    pub c: f64,
}

/// The logistic function, in `f32` as the classifier scores.
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Fits the bias and the `sparse_dim + dense_dim` weights (sparse first) that minimise the
/// weighted log loss plus the L2 penalty, starting from zero weights and the bias at the
/// weighted base rate's log-odds. Deterministic: the same examples in the same order give the
/// same bits.
pub fn fit(
    examples: &[Example<'_>],
    sparse_dim: usize,
    dense_dim: usize,
    adam: &Adam,
) -> (f32, Vec<f32>) {
    let words = sparse_dim;
    let dim = words + dense_dim;
    let n = examples.len() as f64;
    let l2 = 1.0 / (adam.c * n);
    // The bias starts at the (weighted) base rate's log-odds.
    let total: f64 = examples.iter().map(|e| f64::from(e.weight)).sum();
    let rate = examples
        .iter()
        .map(|e| f64::from(e.label) * f64::from(e.weight))
        .sum::<f64>()
        / total;
    let rate = rate.clamp(1e-3, 1.0 - 1e-3);
    let mut bias = (rate / (1.0 - rate)).ln();
    let mut w = vec![0f64; dim];
    let (mut m, mut v) = (vec![0f64; dim + 1], vec![0f64; dim + 1]);
    let (beta1, beta2, eps) = (0.9f64, 0.999f64, 1e-8f64);
    let mut grad = vec![0f64; dim + 1];
    for step in 1..=adam.steps {
        grad.iter_mut().for_each(|g| *g = 0.0);
        for e in examples {
            let mut z = bias;
            for &(b, x) in e.sparse {
                z += w[b as usize] * f64::from(x);
            }
            for (j, x) in e.dense.iter().enumerate() {
                z += w[words + j] * f64::from(*x);
            }
            let err =
                (f64::from(sigmoid(z as f32)) - f64::from(e.label)) * f64::from(e.weight) / total;
            for &(b, x) in e.sparse {
                grad[b as usize] += err * f64::from(x);
            }
            for (j, x) in e.dense.iter().enumerate() {
                grad[words + j] += err * f64::from(*x);
            }
            grad[dim] += err;
        }
        for (g, wi) in grad.iter_mut().zip(&w) {
            *g += l2 * wi;
        }
        let lr = adam.learning_rate * (1.0 - beta2.powi(step as i32)).sqrt()
            / (1.0 - beta1.powi(step as i32));
        for k in 0..=dim {
            m[k] = beta1 * m[k] + (1.0 - beta1) * grad[k];
            v[k] = beta2 * v[k] + (1.0 - beta2) * grad[k] * grad[k];
            let delta = lr * m[k] / (v[k].sqrt() + eps);
            if k == dim {
                bias -= delta;
            } else {
                w[k] -= delta;
            }
        }
    }
    (bias as f32, w.into_iter().map(|x| x as f32).collect())
}
