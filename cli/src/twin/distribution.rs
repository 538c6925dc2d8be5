//! First-token distributions from recorded calls, some of whose times are known only as lower
//! bounds (a hedge's loser, cancelled when the winner's first token came): the Kaplan–Meier
//! estimate of what the calls met, and a log-normal fitted by maximum likelihood with
//! right-censoring, with its Kolmogorov–Smirnov distance to the estimate.

/// What a target's first tokens look like.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fitted {
    /// The log-normal's median and 99th percentile, milliseconds.
    pub median: f64,
    pub p99: f64,
    /// Its largest distance to the Kaplan–Meier estimate.
    pub ks: f64,
    /// The Kaplan–Meier estimate: each exact time with the share of calls done by it.
    pub estimate: Vec<(f64, f64)>,
}

impl Fitted {
    /// The estimate's quantile `q`: the first time by which that share of calls had their first
    /// token; the last exact time when censoring leaves the estimate short of `q`.
    pub(super) fn quantile(&self, q: f64) -> f64 {
        self.estimate
            .iter()
            .find(|(_, f)| *f >= q - 1e-12)
            .or(self.estimate.last())
            .map_or(0.0, |(t, _)| *t)
    }

    /// Whether the estimate reaches `q` (else its upper quantiles are unknown).
    pub(super) fn reaches(&self, q: f64) -> bool {
        self.estimate.last().is_some_and(|(_, f)| *f >= q - 1e-12)
    }
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
pub(super) fn normal_cdf(z: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs() / std::f64::consts::SQRT_2);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-(z * z) / 2.0).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

fn normal_pdf(z: f64) -> f64 {
    (-(z * z) / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The Kaplan–Meier estimate of the share of calls with their first token by each exact time.
fn kaplan_meier(exact: &[f64], censored: &[f64]) -> Vec<(f64, f64)> {
    // At equal times an exact one comes first: a bound at t says "later than t".
    let mut events: Vec<(f64, bool)> = exact
        .iter()
        .map(|t| (*t, true))
        .chain(censored.iter().map(|t| (*t, false)))
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut at_risk = events.len() as f64;
    let mut surviving = 1.0;
    let mut out = Vec::with_capacity(exact.len());
    for (t, is_exact) in events {
        if is_exact {
            surviving *= 1.0 - 1.0 / at_risk;
            out.push((t, 1.0 - surviving));
        }
        at_risk -= 1.0;
    }
    out
}

/// Fits a log-normal to exact first tokens and lower bounds (`None` without exact ones): the
/// EM iteration for a censored normal over the logarithms.
pub(super) fn fit(exact: &[f64], censored: &[f64]) -> Option<Fitted> {
    if exact.is_empty() {
        return None;
    }
    let logs: Vec<f64> = exact.iter().map(|v| v.max(1e-3).ln()).collect();
    let bounds: Vec<f64> = censored.iter().map(|v| v.max(1e-3).ln()).collect();
    let n = (logs.len() + bounds.len()) as f64;
    let k = logs.len() as f64;
    let mut mu = logs.iter().sum::<f64>() / k;
    let mut sigma = (logs.iter().map(|l| (l - mu).powi(2)).sum::<f64>() / (k - 1.0).max(1.0))
        .sqrt()
        .max(1e-6);
    let rounds = if bounds.is_empty() { 0 } else { 500 };
    for _ in 0..rounds {
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for l in &logs {
            sum += l;
            sum_sq += l * l;
        }
        for c in &bounds {
            // E[x | x > c] and E[x^2 | x > c] under the current normal.
            let z = (c - mu) / sigma;
            let mills = normal_pdf(z) / (1.0 - normal_cdf(z)).max(1e-12);
            sum += mu + sigma * mills;
            sum_sq += mu * mu + sigma * sigma + sigma * (c + mu) * mills;
        }
        let next_mu = sum / n;
        let next_sigma = (sum_sq / n - next_mu * next_mu).max(1e-12).sqrt();
        let settled = (next_mu - mu).abs() < 1e-10 && (next_sigma - sigma).abs() < 1e-10;
        (mu, sigma) = (next_mu, next_sigma.max(1e-6));
        if settled {
            break;
        }
    }
    let estimate = kaplan_meier(exact, censored);
    let mut before = 0.0;
    let mut ks: f64 = 0.0;
    for (t, f) in &estimate {
        let model = normal_cdf((t.max(1e-3).ln() - mu) / sigma);
        ks = ks.max((model - f).abs()).max((model - before).abs());
        before = *f;
    }
    Some(Fitted {
        median: mu.exp(),
        p99: (mu + 2.326 * sigma).exp(),
        ks,
        estimate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, LogNormal};

    fn draws(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // Median 500 ms, p99 1,500 ms.
        let sigma = 3f64.ln() / 2.326;
        let d = LogNormal::new(500f64.ln(), sigma).unwrap();
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    #[test]
    fn an_uncensored_sample_fits_its_source() {
        let f = fit(&draws(2000, 1), &[]).unwrap();
        assert!((f.median / 500.0 - 1.0).abs() < 0.05, "{}", f.median);
        assert!((f.p99 / 1500.0 - 1.0).abs() < 0.08, "{}", f.p99);
        assert!(f.ks < 0.04, "{}", f.ks);
        assert!((f.quantile(0.5) / 500.0 - 1.0).abs() < 0.06);
    }

    #[test]
    fn the_tail_that_hedges_cut_is_recovered_from_the_bounds() {
        // A call with no first token at 600 ms is hedged to a target twice as fast; the hedge's
        // first token comes 600 ms plus its own draw after the start, and whichever is later
        // is cancelled then: what it would have met is known only to be later.
        let (first, second) = (draws(2000, 2), draws(2000, 3));
        let (mut exact, mut bounds) = (Vec::new(), Vec::new());
        for (t, h) in first.iter().zip(&second) {
            let hedge = 600.0 + h / 2.0;
            if *t <= 600.0 || *t <= hedge {
                exact.push(*t);
            } else {
                bounds.push(hedge);
            }
        }
        let naive = fit(&exact, &[]).unwrap();
        let f = fit(&exact, &bounds).unwrap();
        assert!(
            naive.p99 < 0.85 * 1500.0,
            "dropping them loses the tail: {}",
            naive.p99
        );
        assert!((f.median / 500.0 - 1.0).abs() < 0.06, "{}", f.median);
        assert!((f.p99 / 1500.0 - 1.0).abs() < 0.10, "{}", f.p99);
        assert!(
            (f.quantile(0.5) / 500.0 - 1.0).abs() < 0.06,
            "{}",
            f.quantile(0.5)
        );
    }

    #[test]
    fn a_sample_that_is_not_log_normal_is_far_from_the_fit() {
        // Two modes: fast cache hits and slow cold starts.
        let mut v: Vec<f64> = (0..500).map(|i| 100.0 + f64::from(i % 50)).collect();
        v.extend((0..500).map(|i| 3000.0 + f64::from(i % 50) * 10.0));
        let f = fit(&v, &[]).unwrap();
        assert!(f.ks > 0.1, "{}", f.ks);
        assert!(fit(&[], &[1.0]).is_none());
    }
}
