//! The router's measurements after real calls to the emulator.

mod common;

use std::time::Duration;

use futures::StreamExt;
use laneway::{GenerateRequest, Slo, SloClass};
use laneway_emulator::{Fault, FaultKind};

#[tokio::test]
async fn lanes_slo_attainment_tasks_and_prometheus_text() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let secret = "the prompt text must never appear in labels";
    for i in 0..6 {
        let req = GenerateRequest::user(format!("{secret} {i}"))
            .family("nova")
            .max_tokens(12)
            .task(format!("task-{}", i % 2))
            .slo(Slo {
                class: SloClass::Interactive,
                ttft_target: Some(Duration::from_secs(5)),
                deadline: Some(Duration::from_secs(10)),
            });
        let mut s = router.stream(req).await.unwrap();
        while let Some(ev) = s.next().await {
            ev.unwrap();
        }
    }
    router
        .generate(
            GenerateRequest::user("background work")
                .family("nova")
                .slo_class(SloClass::Background)
                .max_tokens(8),
        )
        .await
        .unwrap();
    emu.add_fault(Fault::new(FaultKind::Outage).for_model("amazon.nova-pro-v1:0"));
    let failed = router
        .generate(
            GenerateRequest::user("x")
                .model("amazon.nova-pro-v1:0")
                .max_tokens(4),
        )
        .await;
    assert!(failed.is_err());

    assert!(router.finish_task("task-0", true));
    assert!(router.finish_task("task-1", false));
    assert!(!router.finish_task("never-seen", true));

    let m = router.metrics();
    assert_eq!(m.in_flight, 0);
    let interactive: Vec<_> = m
        .lanes
        .iter()
        .filter(|(k, _)| {
            k.slo_class == SloClass::Interactive && k.family.as_deref() == Some("nova")
        })
        .collect();
    assert_eq!(interactive.iter().map(|(_, s)| s.requests).sum::<u64>(), 6);
    let (_, lane) = interactive.iter().max_by_key(|(_, s)| s.requests).unwrap();
    assert!(lane.ttft_s.count > 0 && lane.ttft_s.p50 > 0.0 && lane.ttft_s.p99 >= lane.ttft_s.p50);
    assert!(lane.inter_token_s.count > 0 && lane.latency_s.p90 >= lane.latency_s.p50);
    assert!(lane.output_tokens > 0 && lane.cost_usd > 0.0);
    let slo = m.slo[&SloClass::Interactive];
    assert_eq!(
        (slo.calls, slo.ttft_targeted, slo.ttft_met, slo.deadline_met),
        (6, 6, 6, 6)
    );
    assert_eq!(
        m.slo[&SloClass::Standard].calls,
        1,
        "the failed call counts"
    );
    let errors: u64 = m
        .lanes
        .iter()
        .map(|(_, s)| s.errors.values().sum::<u64>())
        .sum();
    assert_eq!(errors, 1);
    assert_eq!((m.tasks.tasks, m.tasks.successful), (2, 1));
    let per_successful = m.tasks.per_successful_task().unwrap();
    assert!((per_successful - 2.0 * m.tasks.per_task().unwrap()).abs() < 1e-12);
    assert_eq!(m.tasks_by_class[&SloClass::Interactive].tasks, 2);

    let text = m.prometheus();
    for name in [
        "gen_ai_client_operation_duration_seconds",
        "gen_ai_server_time_to_first_token_seconds",
        "gen_ai_client_token_usage_total",
        "laneway_cost_usd_total",
        "laneway_errors_total",
        "laneway_slo_calls_total",
        "laneway_tasks_total",
        "laneway_requests_in_flight 0",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(
        text.contains("error_type=\"all_targets_failed\"")
            || text.contains("error_type=\"unavailable\""),
        "{text}"
    );
    assert!(!text.contains(secret) && !format!("{m:?}").contains(secret));
    emu.shutdown().await;
}
