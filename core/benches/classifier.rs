//! How long the complexity classifier takes: `cargo bench -p laneway --bench classifier`.
//!
//! Scores prompts of about 40, 1,000 and 4,000 tokens (a held-out MMLU question, and held-out
//! questions concatenated) with the shipped model, and plans a family-routed request with it.
//! Besides criterion's estimates, prints p50 / p99 over individually timed calls, with the
//! baseline of the same run: copying the prompt.

// A benchmark times the wall clock, not the router's (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::time::Instant;

use criterion::{Criterion, black_box};
use hdrhistogram::Histogram;
use laneway::classifier::Classifier;
use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::plan::Fresh;
use laneway::{Config, GenerateRequest, plan};

/// Held-out prompts joined until the text reaches `chars` characters (about 4 per token).
fn prompt_of(chars: usize) -> String {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/routellm/mmlu");
    let data = Dataset::load(&[d], &LoadOptions::default()).expect("vendored data");
    let held = data.split(Split::HeldOut);
    let mut out = String::new();
    for r in &held.rows {
        if out.len() >= chars {
            break;
        }
        out.push_str(&r.prompt);
        out.push('\n');
    }
    out.truncate(out.floor_char_boundary(chars));
    out
}

fn percentiles(name: &str, mut f: impl FnMut()) {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap();
    for i in 0..22_000 {
        let t = Instant::now();
        f();
        let ns = t.elapsed().as_nanos() as u64;
        if i >= 2_000 {
            hist.saturating_record(ns.max(1));
        }
    }
    println!(
        "  {name:<44} p50 {:>7.2} us   p99 {:>7.2} us",
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0
    );
}

fn main() {
    let model = Classifier::builtin();
    let prompts = [
        ("40_tokens", prompt_of(160)),
        ("1k_tokens", prompt_of(4_000)),
        ("4k_tokens", prompt_of(16_000)),
    ];
    let config = Config::from_toml_str(
        "[families.nova]\nvariants = [\"amazon.nova-micro-v1:0\", \"amazon.nova-lite-v1:0\", \"amazon.nova-pro-v1:0\"]\nrouter = { max_strong_share = 0.3 }\n",
    )
    .unwrap();
    // A model file to time beside the shipped one in the same run (say, the last release's:
    // `git show <commit>:core/models/routellm.lwc > old.lwc`).
    let baseline = std::env::var("LANEWAY_BASELINE_MODEL")
        .ok()
        .map(|p| Classifier::load(&p).expect("LANEWAY_BASELINE_MODEL is a model file"));
    println!("individually timed, 20,000 calls after 2,000 warm-up:");
    for (name, p) in &prompts {
        percentiles(&format!("score {name} ({} chars)", p.len()), || {
            black_box(model.score(black_box(p)));
        });
        if let Some(b) = &baseline {
            percentiles(&format!("baseline model: score {name}"), || {
                black_box(b.score(black_box(p)));
            });
        }
        percentiles(&format!("baseline: copy the {name} prompt"), || {
            black_box(black_box(p).clone());
        });
    }
    let (_, long) = &prompts[2];
    let routed = GenerateRequest::user(long.clone()).family("nova");
    let plain = GenerateRequest::user(long.clone()).model("amazon.nova-lite-v1:0");
    percentiles("plan() family-routed, 4k tokens", || {
        black_box(plan(black_box(&routed), &config, &Fresh(Instant::now())).unwrap());
    });
    percentiles("plan() same request, model named", || {
        black_box(plan(black_box(&plain), &config, &Fresh(Instant::now())).unwrap());
    });
    // Claude: Haiku's cache minimum is above Sonnet's, so the variant policy also weighs the
    // prompt cache (the prefixes digested once more).
    let cached = GenerateRequest::user("Where is my order?")
        .system(long.clone())
        .family("claude")
        .task("t");
    percentiles(
        "plan() claude family-routed, 4k-token system prompt",
        || {
            black_box(plan(black_box(&cached), &config, &Fresh(Instant::now())).unwrap());
        },
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("classifier");
    for (name, p) in &prompts {
        group.bench_function(format!("score_{name}"), |b| {
            b.iter(|| model.probabilities(black_box(p)))
        });
    }
    group.finish();
    c.final_summary();
}
