//! Evaluation: the quality-versus-cost curve of routing between the weakest and the strongest
//! variant, and the published summaries of it, for the classifier beside a random router, the
//! prompt-length rule and the oracle, on the same rows.
//!
//! Routing the `k` highest-scoring of `n` prompts to the strong variant gives quality
//! `q(k)` (the share of good answers). PGR is `(q(k) - q_weak) / (q_strong - q_weak)`: the
//! share of the gap recovered. APGR is the mean PGR over k = 0..=n; CPT(x) is the smallest
//! share of strong calls whose PGR reaches x. A random router scores APGR 0.5 and CPT(x) = x.

use serde::{Deserialize, Serialize};

use super::data::Dataset;
use super::{Classifier, ClassifierError};

/// One router's figures on one set of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterFigures {
    pub router: String,
    pub apgr: f64,
    /// Share of strong calls needed for 50% and 80% PGR.
    pub cpt50: f64,
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
    pub rows: usize,
    pub weak_quality: f64,
    pub strong_quality: f64,
    /// The mean novelty (out-of-distribution probability) of the rows, when the model scores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub novelty: Option<f64>,
    /// Whether `laneway` routed these rows by the prompt-length fallback (their mean novelty
    /// above [`NOVELTY_THRESHOLD`]) rather than by the model's scores (`model`).
    #[serde(default)]
    pub fell_back: bool,
    pub routers: Vec<RouterFigures>,
}

/// A whole evaluation: all rows first, then each source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub weak: String,
    pub strong: String,
    /// The data's variants are not the model's: its weakest and strongest were scored by the
    /// model's first and last heads, by capability order (outcomes of another model pair).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub heads_by_capability_order: bool,
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

/// Evaluates `model` on `data`, routing between the data's first (weakest) and last variant.
/// Rows missing either outcome are left out. `seed` drives the random router (the mean of ten
/// random orders). When the data's variants are not among the model's (outcomes of another
/// model pair), its weakest and strongest are scored by the model's first and last heads:
/// heads map to variants by capability order.
pub fn evaluate(data: &Dataset, model: &Classifier, seed: u64) -> Result<Summary, ClassifierError> {
    let (weak, strong) = (&data.variants[0], &data.variants[data.variants.len() - 1]);
    let missing = |v: &str| {
        ClassifierError::Data(format!(
            "the model has no head for variant {v:?} (its variants: {})",
            model.variants().collect::<Vec<_>>().join(", ")
        ))
    };
    let heads = model.variants().count();
    let (wh, sh, by_order) = match (model.head_of(weak), model.head_of(strong)) {
        (Some(w), Some(s)) => (w, s, false),
        (None, _) | (_, None) if heads >= 2 && data.variants.len() >= 2 => (0, heads - 1, true),
        (None, _) => return Err(missing(weak)),
        (_, None) => return Err(missing(strong)),
    };
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
    let scored: Vec<super::Scored> = rows.iter().map(|(p, ..)| model.score(p)).collect();
    let scores: Vec<f64> = scored
        .iter()
        .map(|s| f64::from(s.probabilities[sh] - s.probabilities[wh]))
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
        let fell_back = novelty.is_some_and(|n| n > NOVELTY_THRESHOLD);
        let ours = if fell_back {
            length.clone()
        } else {
            by_model.clone()
        };
        let oracle: Vec<f64> = idx
            .iter()
            .map(|&i| f64::from(u8::from(rows[i].3)) - f64::from(u8::from(rows[i].2)))
            .collect();
        let random = random_router(&w, &s, seed);
        let n = idx.len() as f64;
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
        });
    }
    Ok(Summary {
        weak: weak.clone(),
        strong: strong.clone(),
        heads_by_capability_order: by_order,
        sections,
    })
}

/// The honest protocol: for each source, a model trained on every other source (all their
/// rows, `opts`) evaluated on that source; then, in distribution, a model trained on the 80%
/// training split of every source evaluated on the 20% held out. The data is first put in
/// capability order ([`Dataset::by_capability_order`]), so sources of different model pairs
/// mix. Each section is named after its held-out source, the last `in-distribution`.
pub fn leave_one_source_out(
    data: &Dataset,
    opts: &crate::classifier::train::TrainOptions,
    seed: u64,
) -> Result<Vec<Section>, ClassifierError> {
    let data = data.by_capability_order();
    let sources = data.sources();
    if sources.len() < 2 {
        return Err(ClassifierError::Data(format!(
            "leave-one-source-out needs at least two sources with two variants each, got {}",
            sources.len()
        )));
    }
    let mut sections = Vec::new();
    for source in &sources {
        let (train_on, held_out) = data.without_source(source);
        let model = crate::classifier::train::train(&train_on, opts)?;
        let mut s = evaluate(&held_out, &model, seed)?
            .section("all")
            .cloned()
            .expect("an evaluation has an all section");
        s.name = source.clone();
        sections.push(s);
    }
    let model = crate::classifier::train::train(&data.split(super::data::Split::Train), opts)?;
    let mut s = evaluate(&data.split(super::data::Split::HeldOut), &model, seed)?
        .section("all")
        .cloned()
        .expect("an evaluation has an all section");
    s.name = "in-distribution".into();
    sections.push(s);
    Ok(sections)
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

/// The quality of the routed answers at a point of the curve, from its PGR.
pub fn quality_at(section: &Section, pgr: f64) -> f64 {
    section.weak_quality + pgr * (section.strong_quality - section.weak_quality)
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
        let sections = leave_one_source_out(&data, &opts, 0).unwrap();
        let names: Vec<&str> = sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["first", "second", "in-distribution"]);
        assert_eq!(sections[0].rows, 120);
        assert!(sections[0].strong_quality > sections[0].weak_quality);
        for s in &sections {
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
            leave_one_source_out(&one, &opts, 0).is_err(),
            "one source cannot be held out"
        );
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
