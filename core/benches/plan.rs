//! How long planning takes: `cargo bench -p laneway --bench plan`.
//!
//! `plan()` runs on every call before any I/O, so it must stay in the microseconds. The case
//! the SLO-engine issue names is a request with 3 regions x 3 variants x 2 endpoints: a
//! self-hosted model on two SageMaker endpoints falling back to the three-variant Nova family
//! in three regions, planned against live state that has seen every target. The baseline in the
//! same run is cloning the request, the least work any router must do with it.
//!
//! Besides criterion's estimates, the run prints p50 / p99 over individually timed calls.

// A benchmark times the wall clock, not the router's (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use criterion::{Criterion, black_box};
use hdrhistogram::Histogram;
use laneway::state::State;
use laneway::{Config, GenerateRequest, Slo, SloClass, Tool, plan};

const CONFIG: &str = r#"
[models."self-hosted"]
provider = "sagemaker"
fallback_family = "nova"
price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }
endpoints = [
  { name = "llm-g5", region = "us-east-1", format = "tgi" },
  { name = "llm-g6", region = "us-west-2", format = "openai_chat", inference_component = "ic-1" },
]

[routing]
max_attempts = 8
"#;

fn requests() -> Vec<(&'static str, GenerateRequest)> {
    let long_system = "You are a careful assistant. ".repeat(200);
    vec![
        (
            "3_regions_x_3_variants_x_2_endpoints",
            GenerateRequest::user("Classify this ticket").model("self-hosted").slo(Slo {
                class: SloClass::Interactive,
                ttft_target: Some(Duration::from_millis(400)),
                deadline: None,
            }),
        ),
        ("family_background", GenerateRequest::user("Summarise").family("nova").slo_class(SloClass::Background)),
        (
            "100k_token_request_cache_placement",
            GenerateRequest::user("What does section 7 say?")
                .family("claude")
                .system("A long reference manual, chapter after chapter. ".repeat(8_000))
                .task("manual-qa"),
        ),
        (
            "agent_step_with_tools",
            GenerateRequest::user("Book the flight")
                .family("claude")
                .system(long_system)
                .tool(Tool::new("search", "Search flights", serde_json::json!({"type": "object", "properties": {"from": {"type": "string"}}})))
                .tool(Tool::new("book", "Book a flight", serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}}))),
        ),
    ]
}

/// State that has seen a success on every target the requests can plan.
fn warmed_state(config: &Config) -> State {
    let state = State::new(config);
    for req in requests().iter().map(|(_, r)| r) {
        let p = plan(req, config, &state.at(Instant::now())).unwrap();
        state.prefixes().remember_digests(p.cache.learned.clone());
        for a in &p.attempts {
            state.health().record_success(
                a.target.region(),
                a.target.id(),
                a.tier,
                a.tier,
                &laneway::state::AttemptSpeed {
                    ttft: Some(Duration::from_millis(300)),
                    tokens_per_second: Some(120.0),
                    longest_gap: None,
                    input_tokens: 0,
                },
            );
        }
    }
    state
}

fn percentiles(config: &Config, state: &State) {
    println!(
        "plan() per call, individually timed (100,000 calls after 10,000 warm-up; 1,000 after 100 for the 100K-token request):"
    );
    for (name, req) in requests() {
        let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        let (warm, total) = if name.starts_with("100k") {
            (100, 1_100)
        } else {
            (10_000, 110_000)
        };
        for i in 0..total {
            let t = Instant::now();
            let p = plan(black_box(&req), black_box(config), &state.at(t)).unwrap();
            let ns = t.elapsed().as_nanos() as u64;
            black_box(p);
            if i >= warm {
                hist.saturating_record(ns.max(1));
            }
        }
        println!(
            "  {name:<40} p50 {:>6.2} us   p99 {:>6.2} us   attempts planned: {}",
            hist.value_at_quantile(0.5) as f64 / 1000.0,
            hist.value_at_quantile(0.99) as f64 / 1000.0,
            plan(&req, config, &state.at(Instant::now()))
                .unwrap()
                .attempts
                .len()
        );
    }
}

fn main() {
    let config = Config::from_toml_str(CONFIG).unwrap();
    let state = warmed_state(&config);
    percentiles(&config, &state);
    let (name, req) = requests()
        .into_iter()
        .find(|(n, _)| n.starts_with("100k"))
        .unwrap();
    let fresh = State::new(&config);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
    for i in 0..1_100 {
        let t = Instant::now();
        black_box(plan(black_box(&req), &config, &fresh.at(t)).unwrap());
        if i >= 100 {
            hist.saturating_record(t.elapsed().as_nanos() as u64);
        }
    }
    println!(
        "  {name} at first sight (nothing digested before): p50 {:.2} us   p99 {:.2} us",
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("plan");
    for (name, req) in requests() {
        group.bench_function(format!("{name}/plan"), |b| {
            b.iter(|| {
                plan(
                    black_box(&req),
                    black_box(&config),
                    &state.at(Instant::now()),
                )
                .unwrap()
            })
        });
        group.bench_function(format!("{name}/clone_request_baseline"), |b| {
            b.iter(|| black_box(&req).clone())
        });
    }
    group.finish();
    c.final_summary();
}
