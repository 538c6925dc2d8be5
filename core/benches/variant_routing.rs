//! The classifier on a workload: `cargo bench -p laneway --bench variant_routing`.
//!
//! 600 held-out RouteLLM prompts (MMLU and GSM8K, every fifth held-out row) go through the
//! router against the emulator three ways: the Nova family with the classifier
//! (`max_strong_share = 0.3`), always the largest variant (Nova Pro), and always the smallest
//! (Nova Micro). Prints cost per request and per million requests at the price book's on-demand
//! prices, the share of requests each variant served, and the expected quality on the data's
//! labels, mapping the cheaper Nova variants to the data's weak model and Nova Pro to its strong
//! one (the data says nothing about Nova's own quality; this is a routing figure, not a quality
//! claim about Nova).

use std::collections::BTreeMap;
use std::path::PathBuf;

use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::{Config, GenerateRequest, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

const FAMILY: &str = r#"
[families.nova]
variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
router = { max_strong_share = 0.3 }
"#;
const LARGEST: &str = "amazon.nova-pro-v1:0";
const SMALLEST: &str = "amazon.nova-micro-v1:0";

fn workload() -> Vec<(String, bool, bool)> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/routellm");
    let data = Dataset::load(
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
    .expect("vendored data");
    data.split(Split::HeldOut)
        .rows
        .into_iter()
        .step_by(5)
        .take(600)
        .map(|r| {
            (
                r.prompt,
                r.outcomes[0] == Some(true),
                r.outcomes[1] == Some(true),
            )
        })
        .collect()
}

struct Outcome {
    cost: f64,
    served: BTreeMap<String, usize>,
    good: usize,
}

async fn run(router: &Router, work: &[(String, bool, bool)], model: Option<&str>) -> Outcome {
    let mut out = Outcome {
        cost: 0.0,
        served: BTreeMap::new(),
        good: 0,
    };
    for (prompt, weak_ok, strong_ok) in work {
        let req = GenerateRequest::user(prompt.clone()).max_tokens(64);
        let req = match model {
            Some(m) => req.model(m),
            None => req.family("nova"),
        };
        let r = router.generate(req).await.expect("the emulator answers");
        out.cost += r.cost_usd;
        let good = if r.decision.model == LARGEST {
            *strong_ok
        } else {
            *weak_ok
        };
        out.good += usize::from(good);
        *out.served.entry(r.decision.model.clone()).or_default() += 1;
    }
    out
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut scenario = Scenario::builtin("fast").unwrap();
        scenario.time_scale = 1e-4;
        for m in &mut scenario.models {
            m.performance.max_concurrency = 10_000;
            m.performance.tokens_per_minute = u64::MAX / 4;
            m.overrides.clear();
        }
        let emulator = Emulator::start(scenario).await.unwrap();
        let router = Router::builder()
            .config(Config::from_toml_str(FAMILY).unwrap())
            .endpoint_url(emulator.url())
            .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
            .build()
            .await
            .unwrap();
        let work = workload();
        let n = work.len() as f64;
        println!("{} held-out prompts, up to 64 output tokens each, emulator answers, price book on-demand prices", work.len());
        println!("{:<24} {:>14} {:>16} {:>9}  variants served", "strategy", "cost/request", "per 1M requests", "quality");
        let mut largest_cost = 0.0;
        for (name, model) in [("always largest (Pro)", Some(LARGEST)), ("classifier", None), ("always smallest (Micro)", Some(SMALLEST))] {
            let o = run(&router, &work, model).await;
            if model == Some(LARGEST) {
                largest_cost = o.cost;
            }
            let shares: Vec<String> = o
                .served
                .iter()
                .map(|(m, c)| format!("{} {:.1}%", m.trim_start_matches("amazon.").trim_end_matches("-v1:0"), *c as f64 / n * 100.0))
                .collect();
            println!(
                "{name:<24} {:>13.7}$ {:>15.2}$ {:>9.3}  {}{}",
                o.cost / n,
                o.cost / n * 1e6,
                o.good as f64 / n,
                shares.join(", "),
                if largest_cost > 0.0 && model != Some(LARGEST) {
                    format!("   (cost {:+.1}% vs always largest)", (o.cost / largest_cost - 1.0) * 100.0)
                } else {
                    String::new()
                }
            );
        }
        emulator.shutdown().await;
    });
}
