//! What recording a call's metrics costs: `cargo bench -p laneway --bench telemetry`.
//!
//! A real streamed response (from the emulator) is recorded again and again into telemetry that
//! already holds 24 lanes; the target is at most 1 µs median per call.

// A benchmark times the wall clock, not the router's (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use criterion::{Criterion, black_box};
use futures::StreamExt;
use hdrhistogram::Histogram;
use laneway::telemetry::{CallSlo, Telemetry};
use laneway::{GenerateRequest, Router, SloClass, StreamEvent};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let response = rt.block_on(async {
        let emulator = Emulator::start(Scenario::builtin("fast").unwrap())
            .await
            .unwrap();
        let router = Router::builder()
            .endpoint_url(emulator.url())
            .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
            .build()
            .await
            .unwrap();
        let mut s = router
            .stream(
                GenerateRequest::user("Tell me a story")
                    .family("nova")
                    .max_tokens(32),
            )
            .await
            .unwrap();
        let mut done = None;
        while let Some(ev) = s.next().await {
            if let StreamEvent::Completed(r) = ev.unwrap() {
                done = Some(*r);
            }
        }
        emulator.shutdown().await;
        done.unwrap()
    });
    let telemetry = Telemetry::default();
    // The same, also recording into OpenTelemetry instruments of the SDK (a periodic reader
    // whose next push is a minute away: aggregation only, as between two exports).
    let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_reader(
            opentelemetry_sdk::metrics::PeriodicReader::builder(
                opentelemetry_sdk::metrics::InMemoryMetricExporter::default(),
            )
            .build(),
        )
        .build();
    let mut with_otel = Telemetry::default();
    with_otel.set_meter(&opentelemetry::metrics::MeterProvider::meter(
        &provider, "laneway",
    ));
    // The same, also queueing measurements for a Python or Node meter, drained on a thread of
    // the "host" as the bindings drain them (the host's own recording is its cost, not the
    // core's).
    let with_host = Telemetry::default();
    let host = with_host.host_meter();
    let draining = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let drainer = {
        let draining = std::sync::Arc::clone(&draining);
        std::thread::spawn(move || {
            while draining.load(std::sync::atomic::Ordering::Relaxed) {
                black_box(host.drain(512, Duration::from_millis(50)));
            }
        })
    };
    let classes = [
        SloClass::Interactive,
        SloClass::Standard,
        SloClass::Background,
    ];
    for (i, class) in classes.iter().cycle().take(24).enumerate() {
        let mut other = response.clone();
        other.decision.region = format!("region-{}", i % 8);
        for t in [&telemetry, &with_otel, &with_host] {
            t.record_success(
                CallSlo {
                    class: *class,
                    ttft_target: None,
                    deadline: None,
                    task_id: None,
                },
                &other,
            );
        }
    }
    let slo = CallSlo {
        class: SloClass::Interactive,
        ttft_target: Some(Duration::from_millis(800)),
        deadline: None,
        task_id: None,
    };
    // Alternating rounds, so both see the same machine.
    let mut plain = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap();
    let mut otel = plain.clone();
    let mut hosted = plain.clone();
    for round in 0..11 {
        for (t, hist) in [
            (&telemetry, &mut plain),
            (&with_otel, &mut otel),
            (&with_host, &mut hosted),
        ] {
            for _ in 0..20_000 {
                let start = Instant::now();
                t.record_success(black_box(slo), black_box(&response));
                let ns = start.elapsed().as_nanos() as u64;
                if round > 0 {
                    hist.saturating_record(ns.max(1));
                }
            }
        }
    }
    for (name, hist) in [
        ("", &plain),
        (" with an OpenTelemetry meter", &otel),
        (" with a host meter (Python, Node)", &hosted),
    ] {
        println!(
            "record_success{name}, individually timed (200,000 calls): p50 {:.3} us, p99 {:.3} us",
            hist.value_at_quantile(0.5) as f64 / 1000.0,
            hist.value_at_quantile(0.99) as f64 / 1000.0
        );
    }
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("telemetry/record_success", |b| {
        b.iter(|| telemetry.record_success(black_box(slo), black_box(&response)))
    });
    c.bench_function("telemetry/record_success_with_otel", |b| {
        b.iter(|| with_otel.record_success(black_box(slo), black_box(&response)))
    });
    c.bench_function("telemetry/record_success_with_host_meter", |b| {
        b.iter(|| with_host.record_success(black_box(slo), black_box(&response)))
    });
    c.bench_function("telemetry/snapshot_24_lanes", |b| {
        b.iter(|| black_box(telemetry.snapshot()))
    });
    c.final_summary();
    draining.store(false, std::sync::atomic::Ordering::Relaxed);
    drainer.join().unwrap();
}
