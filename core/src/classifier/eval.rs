//! Evaluation: the quality-versus-cost curve of routing between the weakest and the strongest
//! variant, and the published summaries of it, for the classifier beside a random router, the
//! prompt-length rule and the oracle, on the same rows.
//!
//! Routing the `k` highest-scoring of `n` prompts to the strong variant gives quality
//! `q(k)` (the share of good answers). PGR is `(q(k) - q_weak) / (q_strong - q_weak)`: the
//! share of the gap recovered. APGR is the mean PGR over k = 0..=n; CPT(x) is the smallest
//! share of strong calls whose PGR reaches x. A random router scores APGR 0.5 and CPT(x) = x.

use serde::{Deserialize, Serialize};

pub use super::figures::{
    BlendChoice, DEFAULT_COST_RATIO, DEFAULT_QUALITY_LOSS_BUDGET, NOVELTY_THRESHOLD,
    OperatingPoint, ROUTERS, RouterFigures, Section, Summary, quality_at,
};

use super::data::Dataset;
use super::{Classifier, ClassifierError};

/// How to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Drives the random router (the mean of ten random orders).
    pub seed: u64,
    /// The router's default threshold, as a share of the model's training prompts to send to
    /// the strong variant; `None` reports no operating point.
    pub default_share: Option<f64>,
    /// A call to the weak variant costs this share (0..=1) of a call to the strong one.
    pub cost_ratio: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seed: 0,
            default_share: None,
            cost_ratio: DEFAULT_COST_RATIO,
        }
    }
}

/// Evaluates `model` on `data`, routing between the data's first (weakest) and last variant.
/// Rows missing either outcome are left out. `seed` drives the random router (the mean of ten
/// random orders). When the data's variants are not among the model's (outcomes of another
/// model pair), its weakest and strongest are scored by the model's first and last heads:
/// heads map to variants by capability order.
pub fn evaluate(data: &Dataset, model: &Classifier, seed: u64) -> Result<Summary, ClassifierError> {
    evaluate_with(
        data,
        model,
        &Options {
            seed,
            ..Options::default()
        },
    )
}

/// [`evaluate`] with every option: also the router at its default threshold.
pub fn evaluate_with(
    data: &Dataset,
    model: &Classifier,
    opts: &Options,
) -> Result<Summary, ClassifierError> {
    let seed = opts.seed;
    let (weak, strong) = (&data.variants[0], &data.variants[data.variants.len() - 1]);
    let (wh, sh, by_order) = pair_heads(data, model)?;
    let rows = paired_rows(data)?;
    let scored: Vec<super::Scored> = rows.iter().map(|(p, ..)| model.score(p)).collect();
    let scores: Vec<f64> = scored.iter().map(|s| f64::from(s.loss(wh, sh))).collect();
    // The router's score: the model blended with length, as the variant policy routes.
    let blended: Vec<f64> = rows
        .iter()
        .zip(&scores)
        .zip(&scored)
        .map(|(((p, ..), l), s)| f64::from(model.blended_loss(*l as f32, s.kind, p)))
        .collect();
    // The prompt-length rule on the model's loss scale, as the router's fallback routes.
    let length_losses: Vec<f64> = rows
        .iter()
        .map(|(p, ..)| model.loss_by_length(p).map_or(f64::NAN, f64::from))
        .collect();
    let mut names = vec!["all".to_string()];
    names.extend(data.sources());
    let mut sections = Vec::new();
    for name in names {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| name == "all" || rows[i].1 == name)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let w: Vec<bool> = idx.iter().map(|&i| rows[i].2).collect();
        let s: Vec<bool> = idx.iter().map(|&i| rows[i].3).collect();
        let by_model: Vec<f64> = idx.iter().map(|&i| scores[i]).collect();
        let length: Vec<f64> = idx
            .iter()
            .map(|&i| rows[i].0.chars().count() as f64)
            .collect();
        let novelties: Option<Vec<f64>> = idx
            .iter()
            .map(|&i| scored[i].novelty.map(f64::from))
            .collect();
        let novelty = novelties.map(|v| v.iter().sum::<f64>() / v.len() as f64);
        // The rows are taken as one stream of traffic, as a router with a long novelty window
        // sees it: novel on the whole, it routes them all by length.
        let fell_back = novelty.is_some_and(|n| n > novelty_threshold(model));
        let ours = if fell_back {
            length.clone()
        } else {
            idx.iter().map(|&i| blended[i]).collect()
        };
        let oracle: Vec<f64> = idx
            .iter()
            .map(|&i| f64::from(u8::from(rows[i].3)) - f64::from(u8::from(rows[i].2)))
            .collect();
        let random = random_router(&w, &s, seed);
        let n = idx.len() as f64;
        let at_default = opts.default_share.map(|share| {
            let threshold = f64::from(model.threshold_for_strong_share(share));
            let losses: Vec<f64> = idx
                .iter()
                .map(|&i| {
                    if fell_back && length_losses[i].is_finite() {
                        length_losses[i]
                    } else {
                        blended[i]
                    }
                })
                .collect();
            operating_point(share, threshold, &losses, &length, &w, &s, opts.cost_ratio)
        });
        sections.push(Section {
            name,
            rows: idx.len(),
            weak_quality: w.iter().filter(|x| **x).count() as f64 / n,
            strong_quality: s.iter().filter(|x| **x).count() as f64 / n,
            novelty,
            fell_back,
            routers: vec![
                figures("laneway", &pgr_curve(&ours, &w, &s)),
                figures("model", &pgr_curve(&by_model, &w, &s)),
                random,
                figures("prompt-length", &pgr_curve(&length, &w, &s)),
                figures("oracle", &pgr_curve(&oracle, &w, &s)),
            ],
            at_default,
            blend: None,
        });
    }
    Ok(Summary {
        weak: weak.clone(),
        strong: strong.clone(),
        heads_by_capability_order: by_order,
        sections,
    })
}

/// What [`leave_one_source_out`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutBySource {
    /// Each held-out source, then `in-distribution`.
    pub sections: Vec<Section>,
    /// Per held-out source, the quality lost at each share 0%, 1%, ..., 100% of the training
    /// prompts sent to the strong variant ([`quality_lost_by_share`]).
    pub curves: Vec<(String, Vec<f64>)>,
    /// The smallest share whose mean quality lost over the held-out sources is within the
    /// budget ([`share_within_budget`]).
    pub default_share: f64,
    /// The quality loss (0..1, against always the strong variant) `default_share` was chosen
    /// within.
    pub budget: f64,
    /// The blend chosen over all held-out sources.
    pub blend: BlendChoice,
}

impl HeldOutBySource {
    /// The mean of the sources' curves: the quality lost at each share, each source alike.
    pub fn mean_curve(&self) -> Vec<f64> {
        let n = self.curves.len().max(1) as f64;
        (0..=100)
            .map(|p| self.curves.iter().map(|(_, c)| c[p]).sum::<f64>() / n)
            .collect()
    }
}

/// The honest protocol: for each source, a model trained on every other source (all their
/// rows, `opts`) evaluated on that source; then, in distribution, a model trained on the 80%
/// training split of every source evaluated on the 20% held out. The data is first put in
/// capability order ([`Dataset::by_capability_order`]), so sources of different model pairs
/// mix. Each section is named after its held-out source, the last `in-distribution`.
///
/// The default threshold is chosen on held-out data only: each source's section reports the
/// router at the share chosen from the *other* sources' curves for `budget`, and the
/// in-distribution section at the share chosen from all of them.
pub fn leave_one_source_out(
    data: &Dataset,
    opts: &crate::classifier::train::TrainOptions,
    eval: &Options,
    budget: f64,
) -> Result<HeldOutBySource, ClassifierError> {
    let data = data.by_capability_order();
    let sources = data.sources();
    if sources.len() < 2 {
        return Err(ClassifierError::Data(format!(
            "leave-one-source-out needs at least two sources with two variants each, got {}",
            sources.len()
        )));
    }
    let mut folds = Vec::new();
    for source in &sources {
        let (train_on, held_out) = data.without_source(source);
        let model = crate::classifier::train::train(&train_on, opts)?;
        let ranks = fold_ranks(&held_out, &model)?;
        folds.push((source.clone(), held_out, model, ranks));
    }
    // Each source's figures come from a blend and novelty threshold chosen on the others.
    let mut curves = Vec::new();
    let mut tuned = Vec::new();
    for k in 0..folds.len() {
        let others: Vec<&FoldRanks> = folds
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, f)| &f.3)
            .collect();
        let choice = choose_blend(&others);
        let (source, held_out, model, _) = &mut folds[k];
        set_blend(model, &choice);
        curves.push((source.clone(), quality_lost_by_share(held_out, model)?));
        tuned.push(choice);
    }
    let mut sections = Vec::new();
    for (k, (source, held_out, model, _)) in folds.iter().enumerate() {
        let others: Vec<&[f64]> = curves
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, c)| c.1.as_slice())
            .collect();
        let share = share_within_budget(&others, budget);
        let options = Options {
            default_share: Some(share),
            ..eval.clone()
        };
        let mut s = evaluate_with(held_out, model, &options)?
            .section("all")
            .cloned()
            .expect("an evaluation has an all section");
        s.name = source.clone();
        s.blend = Some(tuned[k]);
        sections.push(s);
    }
    let all: Vec<&[f64]> = curves.iter().map(|c| c.1.as_slice()).collect();
    let default_share = share_within_budget(&all, budget);
    let all_ranks: Vec<&FoldRanks> = folds.iter().map(|f| &f.3).collect();
    let blend = choose_blend(&all_ranks);
    let mut model = crate::classifier::train::train(&data.split(super::data::Split::Train), opts)?;
    set_blend(&mut model, &blend);
    let options = Options {
        default_share: Some(default_share),
        ..eval.clone()
    };
    let mut s = evaluate_with(&data.split(super::data::Split::HeldOut), &model, &options)?
        .section("all")
        .cloned()
        .expect("an evaluation has an all section");
    s.name = "in-distribution".into();
    s.blend = Some(blend);
    sections.push(s);
    Ok(HeldOutBySource {
        sections,
        curves,
        default_share,
        budget,
        blend,
    })
}

/// A held-out source's rows as a blend sees them: their ranks by the fold model's loss and by
/// length among its training prompts, the source's mean novelty, and the outcomes.
struct FoldRanks {
    by_loss: Vec<f64>,
    by_length: Vec<f64>,
    /// Whether each row is of the `math` kind.
    math: Vec<bool>,
    novelty: f64,
    weak: Vec<bool>,
    strong: Vec<bool>,
    length_apgr: f64,
}

fn fold_ranks(data: &Dataset, model: &Classifier) -> Result<FoldRanks, ClassifierError> {
    let (wh, sh, _) = pair_heads(data, model)?;
    let rows = paired_rows(data)?;
    let mut out = FoldRanks {
        by_loss: Vec::with_capacity(rows.len()),
        by_length: Vec::with_capacity(rows.len()),
        math: Vec::with_capacity(rows.len()),
        novelty: 0.0,
        weak: rows.iter().map(|r| r.2).collect(),
        strong: rows.iter().map(|r| r.3).collect(),
        length_apgr: 0.0,
    };
    let mut chars = Vec::with_capacity(rows.len());
    for (p, ..) in &rows {
        let s = model.score(p);
        let loss = s.loss(wh, sh);
        out.math.push(s.kind == super::MATH_KIND);
        out.by_loss.push(f64::from(super::rank_in(
            &model.info.loss_percentiles,
            loss,
        )));
        let length = (p.chars().count() as f32).ln_1p();
        out.by_length.push(f64::from(super::rank_in(
            &model.info.length_percentiles,
            length,
        )));
        out.novelty += f64::from(s.novelty.unwrap_or(0.0));
        chars.push(f64::from(length));
    }
    out.novelty /= rows.len() as f64;
    out.length_apgr = figures("length", &pgr_curve(&chars, &out.weak, &out.strong)).apgr;
    Ok(out)
}

/// How much better than prompt length (in APGR) a fold routes with the model's weight `a`
/// (`m` for prompts of the `math` kind) and novelty threshold `t`.
fn blend_gain(f: &FoldRanks, a: f64, m: f64, t: f64) -> f64 {
    let order: Vec<f64> = if f.novelty > t {
        f.by_length.clone()
    } else {
        f.by_loss
            .iter()
            .zip(&f.by_length)
            .zip(&f.math)
            .map(|((l, n), math)| {
                let a = if *math { m } else { a };
                a * l + (1.0 - a) * n
            })
            .collect()
    };
    figures("blend", &pgr_curve(&order, &f.weak, &f.strong)).apgr - f.length_apgr
}

/// The novelty thresholds [`choose_blend`] tries: only 1 (the hard fallback off), since the
/// blend already weighs length in. Choosing among 0.5, 0.6, ..., 1 as well, nested, routed
/// held-out GSM8K 0.025 worse (the folds disagreed on it).
const NOVELTY_THRESHOLDS: [f32; 1] = [1.0];

/// The model's weights (0, 0.1, ..., 1; one for prompts of the `math` kind, one for the rest)
/// and the novelty threshold (of [`NOVELTY_THRESHOLDS`]) that route held-out sources best
/// against prompt length: the mean gain in APGR, with every source's shortfall beyond 0.01
/// below length counted three times over, so that a blend that wins on some sources by losing
/// on others is not chosen.
fn choose_blend(folds: &[&FoldRanks]) -> BlendChoice {
    let mut best = (
        f64::NEG_INFINITY,
        BlendChoice {
            model_weight: 1.0,
            math_weight: 1.0,
            novelty_threshold: 1.0,
        },
    );
    let grid = || (0..=10).map(|a| a as f32 / 10.0);
    for t in NOVELTY_THRESHOLDS {
        for a in grid() {
            for m in grid() {
                let gains: Vec<f64> = folds
                    .iter()
                    .map(|f| blend_gain(f, f64::from(a), f64::from(m), f64::from(t)))
                    .collect();
                let n = gains.len().max(1) as f64;
                let objective = gains.iter().sum::<f64>() / n
                    + 3.0 * gains.iter().map(|g| (g + 0.01).min(0.0)).sum::<f64>() / n;
                if objective > best.0 + 1e-9 {
                    best = (
                        objective,
                        BlendChoice {
                            model_weight: a,
                            math_weight: m,
                            novelty_threshold: t,
                        },
                    );
                }
            }
        }
    }
    best.1
}

/// Sets a model's blend weights and novelty threshold.
pub fn set_blend(model: &mut Classifier, choice: &BlendChoice) {
    if let Some(b) = &mut model.info.blend {
        b.set_weights(choice.model_weight, Some(choice.math_weight));
    }
    model.info.novelty_threshold = Some(choice.novelty_threshold);
}

/// The traffic novelty above which the model's router falls back to prompt length.
fn novelty_threshold(model: &Classifier) -> f64 {
    model
        .info
        .novelty_threshold
        .map_or(NOVELTY_THRESHOLD, f64::from)
}

/// The model's heads that score the data's weakest and strongest variant, and whether they were
/// matched by capability order rather than by name.
fn pair_heads(data: &Dataset, model: &Classifier) -> Result<(usize, usize, bool), ClassifierError> {
    let (weak, strong) = (&data.variants[0], &data.variants[data.variants.len() - 1]);
    let missing = |v: &str| {
        ClassifierError::Data(format!(
            "the model has no head for variant {v:?} (its variants: {})",
            model.variants().collect::<Vec<_>>().join(", ")
        ))
    };
    let heads = model.variants().count();
    match (model.head_of(weak), model.head_of(strong)) {
        (Some(w), Some(s)) => Ok((w, s, false)),
        (None, _) | (_, None) if heads >= 2 && data.variants.len() >= 2 => Ok((0, heads - 1, true)),
        (None, _) => Err(missing(weak)),
        (_, None) => Err(missing(strong)),
    }
}

/// The rows with outcomes of both the weakest and the strongest variant: (prompt, source,
/// weak good, strong good).
fn paired_rows(data: &Dataset) -> Result<Vec<(&str, &str, bool, bool)>, ClassifierError> {
    let last = data.variants.len() - 1;
    let rows: Vec<(&str, &str, bool, bool)> = data
        .rows
        .iter()
        .filter_map(|r| match (r.outcomes[0], r.outcomes[last]) {
            (Some(w), Some(s)) => Some((r.prompt.as_str(), r.source.as_str(), w, s)),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return Err(ClassifierError::Data(
            "no row has outcomes for both the weakest and strongest variant".into(),
        ));
    }
    Ok(rows)
}

/// The quality lost on all of `data`'s rows at each share 0%, 1%, ..., 100% of the model's
/// training prompts sent to the strong variant, routed as [`evaluate`]'s `laneway` routes
/// (the model, or the prompt-length fallback when the rows' mean novelty is above
/// [`NOVELTY_THRESHOLD`]).
pub fn quality_lost_by_share(
    data: &Dataset,
    model: &Classifier,
) -> Result<Vec<f64>, ClassifierError> {
    let (wh, sh, _) = pair_heads(data, model)?;
    let rows = paired_rows(data)?;
    let scored: Vec<super::Scored> = rows.iter().map(|(p, ..)| model.score(p)).collect();
    let novelty: Option<Vec<f64>> = scored.iter().map(|s| s.novelty.map(f64::from)).collect();
    let fell_back =
        novelty.is_some_and(|v| v.iter().sum::<f64>() / v.len() as f64 > novelty_threshold(model));
    let losses: Vec<f64> = rows
        .iter()
        .zip(&scored)
        .map(|((p, ..), s)| match model.loss_by_length(p) {
            Some(l) if fell_back => f64::from(l),
            _ => f64::from(model.blended_loss(s.loss(wh, sh), s.kind, p)),
        })
        .collect();
    let length: Vec<f64> = rows
        .iter()
        .map(|(p, ..)| p.chars().count() as f64)
        .collect();
    let w: Vec<bool> = rows.iter().map(|r| r.2).collect();
    let s: Vec<bool> = rows.iter().map(|r| r.3).collect();
    Ok((0..=100)
        .map(|p| {
            let share = p as f64 / 100.0;
            let t = f64::from(model.threshold_for_strong_share(share));
            operating_point(share, t, &losses, &length, &w, &s, DEFAULT_COST_RATIO).quality_lost
        })
        .collect())
}

/// The router at `threshold`: rows whose loss is above it go to the strong variant (as the
/// variant policy sends them), with the random and length baselines at the same share.
fn operating_point(
    training_share: f64,
    threshold: f64,
    losses: &[f64],
    length: &[f64],
    weak: &[bool],
    strong: &[bool],
    cost_ratio: f64,
) -> OperatingPoint {
    let n = losses.len() as f64;
    let good = |v: &[bool]| v.iter().filter(|x| **x).count() as f64 / n;
    let (qw, qs) = (good(weak), good(strong));
    let to_strong: Vec<bool> = losses.iter().map(|l| *l > threshold).collect();
    let k = to_strong.iter().filter(|x| **x).count();
    let quality = (0..losses.len())
        .filter(|&i| if to_strong[i] { strong[i] } else { weak[i] })
        .count() as f64
        / n;
    let strong_share = k as f64 / n;
    let by_length = pgr_curve(length, weak, strong)[k];
    OperatingPoint {
        training_share,
        strong_share,
        quality,
        quality_lost: qs - quality,
        cost_saved: (1.0 - strong_share) * (1.0 - cost_ratio),
        random_quality_lost: (1.0 - strong_share) * (qs - qw),
        length_quality_lost: (1.0 - by_length) * (qs - qw),
    }
}

/// The smallest share (of 0%, 1%, ..., 100%) at which the mean of `curves` (quality lost by
/// share, one per held-out source) is within `budget`; all to the strong variant if none is.
pub fn share_within_budget(curves: &[&[f64]], budget: f64) -> f64 {
    (0..=100)
        .find(|&p| {
            let mean = curves.iter().map(|c| c[p]).sum::<f64>() / curves.len().max(1) as f64;
            mean <= budget + 1e-12
        })
        .map_or(1.0, |p| p as f64 / 100.0)
}

/// PGR after routing the k highest scores to strong, for k = 0..=n (ties in row order).
fn pgr_curve(score: &[f64], weak: &[bool], strong: &[bool]) -> Vec<f64> {
    let n = score.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    let good = |v: &[bool]| v.iter().filter(|x| **x).count() as f64 / n as f64;
    let (qw, qs) = (good(weak), good(strong));
    let gap = qs - qw;
    let mut q = qw;
    let mut curve = Vec::with_capacity(n + 1);
    let pgr = |q: f64| {
        if gap.abs() < 1e-12 {
            0.0
        } else {
            (q - qw) / gap
        }
    };
    curve.push(pgr(q));
    for i in order {
        q += (f64::from(u8::from(strong[i])) - f64::from(u8::from(weak[i]))) / n as f64;
        curve.push(pgr(q));
    }
    curve
}

fn figures(name: &str, pgr: &[f64]) -> RouterFigures {
    let n = pgr.len() - 1;
    let apgr = pgr.iter().sum::<f64>() / pgr.len() as f64;
    let cpt = |x: f64| {
        pgr.iter()
            .position(|p| *p >= x - 1e-12)
            .map_or(1.0, |k| k as f64 / n as f64)
    };
    // Quality is not kept per point: PGR says it relative to the two variants.
    let curve = (0..=10)
        .map(|d| {
            let k = (d * n + 5) / 10;
            (k as f64 / n as f64, f64::NAN, pgr[k])
        })
        .collect();
    RouterFigures {
        router: name.into(),
        apgr,
        cpt50: cpt(0.5),
        cpt80: cpt(0.8),
        curve,
    }
}

/// The mean curve of ten random orders, from a SplitMix64 stream seeded with `seed`.
fn random_router(weak: &[bool], strong: &[bool], seed: u64) -> RouterFigures {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    const ORDERS: usize = 10;
    let mut mean = vec![0.0; weak.len() + 1];
    for _ in 0..ORDERS {
        let score: Vec<f64> = (0..weak.len()).map(|_| next() as f64).collect();
        for (m, p) in mean.iter_mut().zip(pgr_curve(&score, weak, strong)) {
            *m += p / ORDERS as f64;
        }
    }
    figures("random", &mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn novel_rows_are_routed_by_length_and_familiar_ones_by_the_model() {
        use crate::classifier::data::Row;
        let rows = (0..60)
            .map(|i| Row {
                prompt: format!("Question {i}: {}", "why ".repeat(i % 7)),
                outcomes: vec![Some(i % 4 != 0), Some(i % 5 != 0)],
                source: "s".into(),
            })
            .collect();
        let data = Dataset {
            variants: vec!["weak".into(), "strong".into()],
            rows,
            excluded: 0,
        };
        let with_bias = |bias: f32| {
            let mut m = (*crate::classifier::Classifier::builtin()).clone();
            m.info.novelty.as_mut().unwrap().calibration = Some([bias, 0.0, 0.0]);
            // The model alone, and the hard fallback at the default novelty.
            let alone = BlendChoice {
                model_weight: 1.0,
                math_weight: 1.0,
                novelty_threshold: NOVELTY_THRESHOLD as f32,
            };
            set_blend(&mut m, &alone);
            evaluate(&data, &m, 0).unwrap()
        };
        for (bias, falls_back, follows) in [(10.0, true, "prompt-length"), (-10.0, false, "model")]
        {
            let s = with_bias(bias);
            let all = s.section("all").unwrap();
            assert_eq!(all.fell_back, falls_back);
            assert!(
                (all.novelty.unwrap() - f64::from(crate::classifier::sigmoid(bias))).abs() < 1e-6
            );
            assert_eq!(
                all.router("laneway").unwrap().apgr,
                all.router(follows).unwrap().apgr
            );
        }
        assert_ne!(
            with_bias(10.0).section("all").unwrap().router("laneway"),
            with_bias(-10.0).section("all").unwrap().router("laneway"),
            "the two rules rank these rows differently"
        );
    }

    #[test]
    fn another_model_pairs_outcomes_are_scored_by_capability_order() {
        use crate::classifier::data::Row;
        let model = crate::classifier::Classifier::builtin();
        let rows = (0..40)
            .map(|i| Row {
                prompt: format!("Prove that {i} squared plus one is never divisible by three"),
                outcomes: vec![Some(i % 3 == 0), Some(true)],
                source: "elsewhere".into(),
            })
            .collect();
        let data = Dataset {
            variants: vec!["small-model".into(), "large-model".into()],
            rows,
            excluded: 0,
        };
        let s = evaluate(&data, &model, 0).unwrap();
        assert!(s.heads_by_capability_order);
        assert_eq!(
            (s.weak.as_str(), s.strong.as_str()),
            ("small-model", "large-model")
        );
        assert_eq!(s.section("all").unwrap().rows, 40);
    }

    #[test]
    fn each_source_is_held_out_in_turn_across_model_pairs() {
        use crate::classifier::data::Row;
        // Two sources, two model pairs: (a-small, a-large) and (b-small, b-large); in both the
        // small model fails arithmetic.
        let mut rows = Vec::new();
        for (source, pair) in [("first", 0usize), ("second", 2)] {
            for i in 0..120 {
                let hard = i % 3 == 0;
                let prompt = if hard {
                    format!("Compute {i} * 37 + 12 and show the working ({source})")
                } else {
                    format!("Name the capital of country {i} ({source})")
                };
                let mut outcomes = vec![None; 4];
                outcomes[pair] = Some(!hard);
                outcomes[pair + 1] = Some(true);
                rows.push(Row {
                    prompt,
                    outcomes,
                    source: source.into(),
                });
            }
        }
        let data = Dataset {
            variants: vec![
                "a-small".into(),
                "a-large".into(),
                "b-small".into(),
                "b-large".into(),
            ],
            rows,
            excluded: 0,
        };
        let opts = crate::classifier::train::TrainOptions {
            bits: 10,
            steps: 60,
            ..Default::default()
        };
        let found = leave_one_source_out(&data, &opts, &Options::default(), 0.05).unwrap();
        let sections = &found.sections;
        let names: Vec<&str> = sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["first", "second", "in-distribution"]);
        assert_eq!(sections[0].rows, 120);
        assert!(sections[0].strong_quality > sections[0].weak_quality);
        for s in sections {
            for router in ["laneway", "random", "prompt-length"] {
                assert!(s.router(router).is_some(), "{} lacks {router}", s.name);
            }
        }
        let one = Dataset {
            rows: data
                .rows
                .iter()
                .filter(|r| r.source == "first")
                .cloned()
                .collect(),
            ..data.clone()
        };
        assert!(
            leave_one_source_out(&one, &opts, &Options::default(), 0.05).is_err(),
            "one source cannot be held out"
        );
    }

    #[test]
    fn the_blend_weighs_the_model_by_kind_where_it_helps() {
        // Two held-out folds where the model knows which non-math prompts need the strong
        // variant and length knows which math ones do: the blend leans on each where it helps.
        let fold = |seed: u64| {
            let mut f = FoldRanks {
                by_loss: Vec::new(),
                by_length: Vec::new(),
                math: Vec::new(),
                novelty: 0.2,
                weak: Vec::new(),
                strong: Vec::new(),
                length_apgr: 0.0,
            };
            let mut x = seed;
            let mut next = || {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            };
            for i in 0..600 {
                let math = i % 2 == 0;
                let (hard, noise, blind) = (next(), next(), next());
                let informed = hard * 0.8 + noise * 0.2;
                let (by_loss, by_length) = if math {
                    (blind, informed)
                } else {
                    (informed, blind)
                };
                f.by_loss.push(by_loss);
                f.by_length.push(by_length);
                f.math.push(math);
                f.weak.push(hard < 0.6);
                f.strong.push(true);
            }
            f.length_apgr = figures("length", &pgr_curve(&f.by_length, &f.weak, &f.strong)).apgr;
            f
        };
        let (a, b) = (fold(1), fold(2));
        let choice = choose_blend(&[&a, &b]);
        assert!(choice.model_weight >= 0.7, "{choice:?}");
        assert!(choice.math_weight <= 0.3, "{choice:?}");
        let gain = |f: &FoldRanks, c: &BlendChoice| {
            blend_gain(f, f64::from(c.model_weight), f64::from(c.math_weight), 1.0)
        };
        let one_weight = BlendChoice {
            math_weight: choice.model_weight,
            ..choice
        };
        assert!(gain(&a, &choice) > gain(&a, &one_weight) + 0.05);
    }

    #[test]
    fn oracle_random_and_reverse_orders_score_as_expected() {
        // 4 prompts: only-strong-right, both right, only-weak-right, both wrong.
        let weak = [false, true, true, false];
        let strong = [true, true, false, false];
        let oracle = figures("oracle", &pgr_curve(&[1.0, 0.0, -1.0, 0.0], &weak, &strong));
        // q_weak = q_strong = 0.5: no gap, PGR defined as 0 everywhere.
        assert_eq!(oracle.apgr, 0.0);

        let weak = [false, false, true, true];
        let strong = [true, true, true, true];
        let best = figures("best", &pgr_curve(&[2.0, 1.0, 0.0, 0.0], &weak, &strong));
        assert_eq!(best.cpt50, 0.25);
        assert_eq!(best.cpt80, 0.5);
        assert!((best.apgr - (0.0 + 0.5 + 1.0 + 1.0 + 1.0) / 5.0).abs() < 1e-12);
        let worst = figures("worst", &pgr_curve(&[0.0, 0.0, 2.0, 1.0], &weak, &strong));
        assert_eq!(worst.cpt50, 0.75);

        let many_w: Vec<bool> = (0..2000).map(|i| i % 3 != 0).collect();
        let many_s: Vec<bool> = (0..2000).map(|i| i % 7 != 0).collect();
        let r = random_router(&many_w, &many_s, 1);
        assert!((r.apgr - 0.5).abs() < 0.03, "{}", r.apgr);
        assert!((r.cpt50 - 0.5).abs() < 0.1, "{}", r.cpt50);
    }
}
