//! `tracing` spans of calls and attempts. Alone in its test binary: `tracing` caches which
//! callsites are enabled process-wide, and tests running beside it without a subscriber would
//! race that cache.

mod common;

use futures::StreamExt;
use laneway::GenerateRequest;

/// Collects what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn calls_and_attempts_are_traced_without_prompt_text() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let secret = "confidential prompt words";
    router
        .generate(GenerateRequest::user(secret).family("nova").max_tokens(8))
        .await
        .unwrap();
    let mut s = router
        .stream(GenerateRequest::user(secret).family("nova").max_tokens(8))
        .await
        .unwrap();
    while let Some(ev) = s.next().await {
        ev.unwrap();
    }
    drop(s);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(text.matches("laneway.call").count() >= 2, "{text}");
    assert!(
        text.contains("laneway.attempt") && text.contains("gen_ai.request.model"),
        "{text}"
    );
    assert!(!text.contains(secret), "{text}");
    emu.shutdown().await;
}

#[tokio::test]
async fn a_router_warns_of_a_model_past_its_end_of_life() {
    let emu = common::emulator().await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let config = common::config(
        "[models.\"amazon.nova-lite-v1:0\"]\nend_of_life = \"2026-09-14\"\n\
         [models.\"amazon.nova-pro-v1:0\"]\nend_of_life = \"9999-12-31\"\n",
    );
    let _router = common::router_with(&emu, config).await;
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("WARN")
            && text.contains("amazon.nova-lite-v1:0")
            && text.contains("2026-09-14"),
        "{text}"
    );
    assert!(!text.contains("amazon.nova-pro-v1:0"), "{text}");
    emu.shutdown().await;
}

/// A regional outage is told to the host's log, through the host log's layer (what the Python
/// and Node bindings drain): each target's breaker opening once, and the region's ejection,
/// with the region and target as fields, never a prompt.
#[tokio::test]
async fn an_outage_is_logged_as_breakers_opening_and_the_region_ejected() {
    use laneway::telemetry::host_log::{HostLog, LogLevel};
    use tracing_subscriber::layer::SubscriberExt as _;
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let (layer, log) = HostLog::layer(LogLevel::Warn);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    emu.add_fault(
        laneway_emulator::Fault::new(laneway_emulator::FaultKind::Outage).for_region("us-east-1"),
    );
    for i in 0..30 {
        router
            .generate(
                GenerateRequest::user(format!("secret words {i}"))
                    .family("nova")
                    .max_tokens(8),
            )
            .await
            .unwrap();
    }
    let records = log.drain(1000, std::time::Duration::ZERO);
    let opened: Vec<_> = records
        .iter()
        .filter(|r| r.message.starts_with("breaker opened"))
        .collect();
    assert!(!opened.is_empty(), "{records:?}");
    assert!(opened.iter().all(|r| {
        r.logger == "laneway.state.health"
            && r.fields
                .contains(&("region".to_string(), "us-east-1".to_string()))
    }));
    assert!(
        records
            .iter()
            .any(|r| r.message.starts_with("region ejected")
                && r.fields
                    .contains(&("region".to_string(), "us-east-1".to_string()))),
        "{records:?}"
    );
    assert!(
        records
            .iter()
            .all(|r| !format!("{r:?}").contains("secret words"))
    );
    emu.shutdown().await;
}
