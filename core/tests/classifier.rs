//! The shipped classifier against the data it was trained on (vendored under `data/`: RouteLLM's
//! MMLU and GSM8K, RouterArena, MT-Bench, ZeroEval, MMLU-Pro), mixed by capability order.

use std::path::PathBuf;

use laneway::classifier::Classifier;
use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::classifier::eval::{Options, evaluate, evaluate_with};
use laneway::classifier::train::{TrainOptions, train};

fn training_data() -> Dataset {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data");
    Dataset::load(
        &[
            d.join("routellm/mmlu"),
            d.join("routellm/gsm8k"),
            d.join("routerarena/routerarena.jsonl"),
            d.join("mtbench/mtbench.jsonl"),
            d.join("zeroeval/zeroeval.jsonl"),
            d.join("mmlupro/mmlupro.jsonl.gz"),
        ],
        &LoadOptions {
            exclude: vec![
                d.join("routellm/mmlu/contaminated_prompts.jsonl"),
                d.join("routellm/gsm8k/contaminated_prompts.jsonl"),
                d.join("mtbench/contaminated_prompts.jsonl"),
            ],
            ..Default::default()
        },
    )
    .expect("the vendored data loads")
    .by_capability_order()
}

#[test]
fn shipped_model_reproduces_its_recorded_held_out_figures_and_meets_the_targets() {
    let model = Classifier::builtin();
    let recorded = model
        .info
        .held_out
        .clone()
        .expect("the shipped model records its figures");
    let data = training_data();
    assert_eq!(
        data.excluded, 37,
        "5 MMLU, 12 GSM8K and 8 MT-Bench contaminated prompts, and ZeroEval's copies of the 12 GSM8K ones"
    );
    let now = evaluate(&data.split(Split::HeldOut), &model, model.info.seed).unwrap();
    // The file keeps figures as JSON numbers, read back to within an ulp or so.
    let now_figures = now.without_curves();
    assert_eq!(now_figures.sections.len(), recorded.sections.len());
    for (a, b) in now_figures.sections.iter().zip(&recorded.sections) {
        assert_eq!((&a.name, a.rows), (&b.name, b.rows));
        for (x, y) in a.routers.iter().zip(&b.routers) {
            assert_eq!(x.router, y.router);
            for (u, v) in [(x.apgr, y.apgr), (x.cpt50, y.cpt50), (x.cpt80, y.cpt80)] {
                assert!(
                    (u - v).abs() < 1e-12,
                    "{} {}: {u} vs recorded {v}",
                    a.name,
                    x.router
                );
            }
        }
    }
    let all = now.section("all").unwrap();
    let ours = all.router("laneway").unwrap();
    assert!(ours.apgr > all.router("prompt-length").unwrap().apgr);
    assert!(ours.apgr > all.router("random").unwrap().apgr);
    // The default threshold: the held-out loss it was chosen by is within the budget, and so
    // is the in-distribution loss at it.
    let share = model
        .share_for_quality_loss(0.05)
        .expect("the model measured its losses");
    let at = (share * 100.0).round() as usize;
    assert!(model.info.quality_lost_by_share[at] <= 0.05 + 1e-6);
    assert!(
        model
            .info
            .quality_lost_measured_on
            .contains("leave-one-source-out")
    );
    let options = Options {
        seed: model.info.seed,
        default_share: Some(share),
        ..Options::default()
    };
    let at_default = evaluate_with(&data.split(Split::HeldOut), &model, &options).unwrap();
    let point = at_default
        .section("all")
        .unwrap()
        .at_default
        .clone()
        .unwrap();
    let recorded_point = recorded.section("all").unwrap().at_default.clone();
    assert_eq!(
        recorded_point.map(|p| (p.strong_share, p.quality)),
        Some((point.strong_share, point.quality)),
        "the recorded figures hold the default threshold's"
    );
    assert!(point.quality_lost <= 0.05, "{point:?}");
    assert!(point.cost_saved > 0.0, "{point:?}");
}

#[test]
fn retraining_on_the_train_split_rebuilds_the_shipped_weights() {
    let data = training_data().split(Split::Train);
    let shipped = Classifier::builtin();
    assert_eq!(data.rows.len(), shipped.info.rows);
    let again = train(&data, &TrainOptions::default()).unwrap();
    assert_eq!(again.heads, shipped.heads);
    assert_eq!(again.gap, shipped.gap);
    assert_eq!(again.info.embedding, shipped.info.embedding);
    assert_eq!(again.info.loss_percentiles, shipped.info.loss_percentiles);
    assert_eq!(again.info.novelty, shipped.info.novelty);
    assert_eq!(
        again.info.length_percentiles,
        shipped.info.length_percentiles
    );
    // The blend's training prompts and their kinds (its weights come from the
    // leave-one-source-out run of `router train`).
    let ranks = |m: &Classifier| {
        m.info
            .blend
            .as_ref()
            .map(|b| (b.ranks.clone(), b.math.clone()))
    };
    assert_eq!(ranks(&again), ranks(&shipped));
    assert!(
        shipped
            .info
            .blend
            .as_ref()
            .is_some_and(|b| b.math.contains(&true))
    );
}
