//! How long planning takes: `cargo bench -p laneway --bench plan`.
//!
//! `plan()` runs on every call before any I/O, so it must stay in the microseconds. The
//! baseline in the same run is cloning the request, the least work any router must do with it.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use laneway::state::Fresh;
use laneway::{plan, Config, GenerateRequest, Geography, Residency, SloClass, Tool};

fn requests() -> Vec<(&'static str, GenerateRequest)> {
    let long_system = "You are a careful assistant. ".repeat(200);
    vec![
        ("family_interactive", GenerateRequest::user("Where is my order?").family("claude").slo_class(SloClass::Interactive)),
        ("pinned_profile_eu", GenerateRequest::user("Summarise").model("eu.amazon.nova-pro-v1:0").residency(Residency::Geography(Geography::Eu))),
        (
            "agent_step_with_tools",
            GenerateRequest::user("Book the flight")
                .family("nova")
                .system(long_system)
                .tool(Tool::new("search", "Search flights", serde_json::json!({"type": "object", "properties": {"from": {"type": "string"}}})))
                .tool(Tool::new("book", "Book a flight", serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}}))),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let config = Config::default();
    let now = std::time::Instant::now();
    let mut group = c.benchmark_group("plan");
    for (name, req) in requests() {
        group.bench_function(format!("{name}/plan"), |b| {
            b.iter(|| plan(black_box(&req), black_box(&config), black_box(&Fresh(now))).unwrap())
        });
        group.bench_function(format!("{name}/clone_request_baseline"), |b| {
            b.iter(|| black_box(&req).clone())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
