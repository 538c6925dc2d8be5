//! The shipped classifier against the data it was trained on (vendored under `data/routellm`).

use std::path::PathBuf;

use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::classifier::eval::evaluate;
use laneway::classifier::train::{train, TrainOptions};
use laneway::classifier::Classifier;

fn routellm() -> Dataset {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/routellm");
    Dataset::load(
        &[d.join("mmlu"), d.join("gsm8k")],
        &LoadOptions {
            variants: Some(vec![
                "mistralai/Mixtral-8x7B-Instruct-v0.1".into(),
                "gpt-4-1106-preview".into(),
            ]),
            exclude: vec![
                d.join("mmlu/contaminated_prompts.jsonl"),
                d.join("gsm8k/contaminated_prompts.jsonl"),
            ],
            ..Default::default()
        },
    )
    .expect("the vendored RouteLLM data loads")
}

#[test]
fn shipped_model_reproduces_its_recorded_held_out_figures_and_meets_the_targets() {
    let model = Classifier::builtin();
    let recorded = model
        .info
        .held_out
        .clone()
        .expect("the shipped model records its figures");
    let data = routellm();
    assert_eq!(
        data.excluded, 17,
        "5 MMLU and 12 GSM8K contaminated prompts"
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
    assert!(ours.apgr >= 0.65, "APGR {}", ours.apgr);
    assert!(ours.cpt50 <= 0.30, "CPT(50%) {}", ours.cpt50);
    assert!(ours.apgr > all.router("prompt-length").unwrap().apgr);
    assert!(ours.apgr > all.router("random").unwrap().apgr);
}

#[test]
fn retraining_on_the_train_split_rebuilds_the_shipped_weights() {
    let data = routellm().split(Split::Train);
    let shipped = Classifier::builtin();
    assert_eq!(data.rows.len(), shipped.info.rows);
    let again = train(&data, &TrainOptions::default()).unwrap();
    assert_eq!(again.heads, shipped.heads);
    assert_eq!(again.info.loss_percentiles, shipped.info.loss_percentiles);
}
