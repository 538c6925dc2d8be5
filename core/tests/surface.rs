//! The bindings' surface end to end: options build a router, a Converse request goes through it,
//! and the answer comes back in Converse's shape with Laneway's decision beside it.

use std::sync::Arc;

use laneway::backend::{Completion, MemoryBackend};
use laneway::surface::{converse, ErrorDetails, RouterOptions};
use laneway::{OutputBlock, Provider, StopReason};
use serde_json::json;

#[tokio::test]
async fn a_converse_call_round_trips_with_the_decision_beside_it() {
    let options: RouterOptions =
        serde_json::from_value(json!({ "config": { "routing": { "max_attempts": 2 } } })).unwrap();
    let router = options
        .builder()
        .unwrap()
        .backend(
            Provider::Bedrock,
            Arc::new(MemoryBackend::new(|call| {
                // The tool result and the tool's schema arrived in the core's form.
                assert_eq!(call.request.tools.len(), 1);
                let mut c = Completion::text("Booking it.");
                c.content.push(OutputBlock::ToolUse {
                    id: "t2".into(),
                    name: "book".into(),
                    input: json!({ "city": "Paris" }),
                });
                c.stop_reason = StopReason::ToolUse;
                Ok(c)
            })),
        )
        .build()
        .await
        .unwrap();
    let request = converse::request(json!({
        "modelId": "amazon.nova-lite-v1:0",
        "messages": [{ "role": "user", "content": [{ "text": "Book Paris" }] }],
        "toolConfig": { "tools": [{ "toolSpec": { "name": "book", "inputSchema": { "json": { "type": "object" } } } }] },
        "inferenceConfig": { "maxTokens": 64 },
    }))
    .unwrap();
    let response = router.generate(request).await.unwrap();
    let out = serde_json::to_value(converse::response(&response)).unwrap();
    assert_eq!(out["stopReason"], "tool_use");
    assert_eq!(
        out["output"]["message"]["content"][0]["text"],
        "Booking it."
    );
    assert_eq!(
        out["output"]["message"]["content"][1]["toolUse"]["input"]["city"],
        "Paris"
    );
    let usage = &out["usage"];
    assert_eq!(
        usage["totalTokens"].as_u64().unwrap(),
        usage["inputTokens"].as_u64().unwrap() + usage["outputTokens"].as_u64().unwrap()
    );
    assert_eq!(out["laneway"]["decision"]["model"], "amazon.nova-lite-v1:0");
    assert!(out["laneway"]["timings"]["total_ms"].as_f64().unwrap() >= 0.0);
    assert!(out["laneway"]["cost_usd"].as_f64().unwrap() > 0.0);

    let e = router
        .generate(converse::request(json!({ "modelId": "gpt-17", "messages": [{ "role": "user", "content": [{ "text": "x" }] }] })).unwrap())
        .await
        .unwrap_err();
    let d = serde_json::to_value(ErrorDetails::of(&e)).unwrap();
    assert_eq!(d["kind"], "invalid_request");
    assert_eq!(d["field"], "model");
}

/// A backend whose streams deliver three deltas at once, then (optionally) break.
struct Burst {
    breaks: bool,
}

impl laneway::backend::Backend for Burst {
    fn generate<'a>(
        &'a self,
        _call: laneway::backend::Call<'a>,
    ) -> futures::future::BoxFuture<'a, laneway::Result<Completion>> {
        Box::pin(async { Ok(Completion::text("unused")) })
    }
    fn stream<'a>(
        &'a self,
        call: laneway::backend::Call<'a>,
    ) -> futures::future::BoxFuture<'a, laneway::Result<laneway::backend::EventStream>> {
        use laneway::backend::BackendEvent;
        let target = call.attempt.target.clone();
        let breaks = self.breaks;
        Box::pin(async move {
            let mut events: Vec<laneway::Result<BackendEvent>> = ["one ", "two ", "three"]
                .into_iter()
                .map(|t| {
                    Ok(BackendEvent::TextDelta {
                        index: 0,
                        text: t.into(),
                    })
                })
                .collect();
            if breaks {
                events.push(Err(laneway::ServiceError::new(
                    laneway::ErrorKind::Internal,
                    "broke",
                    target.id(),
                    target.region(),
                )
                .into()));
            } else {
                events.push(Ok(BackendEvent::Stop(StopReason::EndTurn)));
            }
            let stream: laneway::backend::EventStream = Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

async fn burst_router(breaks: bool) -> laneway::Router {
    laneway::Router::builder()
        .backend(Provider::Bedrock, Arc::new(Burst { breaks }))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_batch_takes_every_event_already_there() {
    let router = burst_router(false).await;
    let stream =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    let first = stream.next_batch(256).await.unwrap();
    // The three deltas and the completion were all ready: one batch.
    assert_eq!(first.len(), 4, "{first:?}");
    assert!(matches!(first[3], laneway::StreamEvent::Completed(_)));
    assert!(stream.next_batch(256).await.unwrap().is_empty());

    let capped =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    assert_eq!(capped.next_batch(2).await.unwrap().len(), 2);
    assert_eq!(capped.next_batch(2).await.unwrap().len(), 2);
    assert!(capped.next_batch(2).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_break_after_a_batch_comes_from_the_next_read() {
    let router = burst_router(true).await;
    let mut request = laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0");
    request.inference.max_tokens = Some(16);
    let stream = router.lazy_stream(request);
    let delivered = stream.next_batch(256).await.unwrap();
    assert_eq!(delivered.len(), 3, "{delivered:?}");
    let e = stream.next_batch(256).await.unwrap_err();
    assert_eq!(e.kind(), laneway::ErrorKind::StreamInterrupted, "{e}");
    assert!(stream.next_batch(256).await.unwrap().is_empty());
}
