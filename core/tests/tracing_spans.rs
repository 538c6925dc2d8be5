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
