//! The bindings' surface end to end: options build a router, a Converse request goes through it,
//! and the answer comes back in Converse's shape with Laneway's decision beside it.

use std::sync::Arc;

use laneway::backend::{Completion, MemoryBackend};
use laneway::surface::{ErrorDetails, RouterOptions, converse};
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

#[tokio::test]
async fn ready_events_are_taken_without_waiting() {
    let router = burst_router(false).await;
    let stream =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    // Not opened yet: nothing ready, and asking does not open it.
    assert!(stream.ready_batch(256).is_none());
    let first = stream.next_batch(1).await.unwrap();
    assert_eq!(first.len(), 1);
    // The pump has read the rest ahead by the time it is asked for (one task at a time here).
    tokio::task::yield_now().await;
    let rest = stream.ready_batch(256).expect("read ahead").unwrap();
    assert_eq!(rest.len(), 3, "{rest:?}");
    assert!(
        stream
            .ready_batch(256)
            .expect("the end")
            .unwrap()
            .is_empty()
    );
    assert!(stream.next_batch(256).await.unwrap().is_empty());
}

#[test]
fn a_blocking_reader_gets_the_events_and_then_the_end() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let router = runtime.block_on(burst_router(false));
    let stream =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    let mut events = Vec::new();
    loop {
        let batch = stream.next_batch_blocking(runtime.handle(), 256).unwrap();
        if batch.is_empty() {
            break;
        }
        events.extend(batch);
    }
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(matches!(events[3], laneway::StreamEvent::Completed(_)));
}

#[tokio::test]
async fn closing_a_stream_ends_it_for_every_reader() {
    let router = burst_router(false).await;
    let stream =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    assert_eq!(stream.next_batch(1).await.unwrap().len(), 1);
    stream.close().await;
    assert!(stream.next_batch(256).await.unwrap().is_empty());
    assert!(stream.ready_batch(256).expect("closed").unwrap().is_empty());
}

/// A backend whose streams deliver one delta and then stall, telling `dropped` when the
/// stream is dropped (the request cancelled).
struct Stall {
    dropped: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

struct DropSignal(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

impl laneway::backend::Backend for Stall {
    fn generate<'a>(
        &'a self,
        _call: laneway::backend::Call<'a>,
    ) -> futures::future::BoxFuture<'a, laneway::Result<Completion>> {
        Box::pin(async { Ok(Completion::text("unused")) })
    }
    fn stream<'a>(
        &'a self,
        _call: laneway::backend::Call<'a>,
    ) -> futures::future::BoxFuture<'a, laneway::Result<laneway::backend::EventStream>> {
        use futures::StreamExt;
        use laneway::backend::BackendEvent;
        let signal = DropSignal(self.dropped.lock().unwrap().take());
        Box::pin(async move {
            let first = futures::stream::iter([Ok(BackendEvent::TextDelta {
                index: 0,
                text: "one".into(),
            })]);
            let stall = futures::stream::pending().map(move |e| {
                let _held = &signal;
                e
            });
            let stream: laneway::backend::EventStream = Box::pin(first.chain(stall));
            Ok(stream)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_a_stream_mid_stall_cancels_its_request() {
    let (tx, dropped) = tokio::sync::oneshot::channel();
    let router = laneway::Router::builder()
        .backend(
            Provider::Bedrock,
            Arc::new(Stall {
                dropped: std::sync::Mutex::new(Some(tx)),
            }),
        )
        .build()
        .await
        .unwrap();
    let stream =
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0"));
    assert_eq!(stream.next_batch(256).await.unwrap().len(), 1);
    drop(stream);
    // Well before any idle limit of the call: the pump let go of the request at once.
    tokio::time::timeout(std::time::Duration::from_millis(10), dropped)
        .await
        .expect("the request was not cancelled")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn closing_a_stream_mid_stall_ends_the_waiting_read() {
    let (tx, dropped) = tokio::sync::oneshot::channel();
    let router = laneway::Router::builder()
        .backend(
            Provider::Bedrock,
            Arc::new(Stall {
                dropped: std::sync::Mutex::new(Some(tx)),
            }),
        )
        .build()
        .await
        .unwrap();
    let stream = Arc::new(
        router.lazy_stream(laneway::GenerateRequest::user("go").model("amazon.nova-lite-v1:0")),
    );
    assert_eq!(stream.next_batch(256).await.unwrap().len(), 1);
    // A second read waits on the stall, holding the stream; a close from elsewhere ends it.
    let reader = tokio::spawn({
        let stream = Arc::clone(&stream);
        async move { stream.next_batch(256).await }
    });
    tokio::task::yield_now().await;
    tokio::time::timeout(std::time::Duration::from_millis(10), stream.close())
        .await
        .expect("close waited for the stalled read");
    let read = tokio::time::timeout(std::time::Duration::from_millis(10), reader)
        .await
        .expect("the waiting read did not end")
        .unwrap();
    assert!(read.unwrap().is_empty());
    tokio::time::timeout(std::time::Duration::from_millis(10), dropped)
        .await
        .expect("the request was not cancelled")
        .unwrap();
}

#[tokio::test]
async fn an_openai_shaped_stream_is_the_apis_events_with_the_decision_last() {
    use laneway::surface::openai::{Api, Call};
    let router = burst_router(false).await;
    for (api, body) in [
        (
            Api::Chat,
            json!({ "model": "amazon.nova-lite-v1:0", "stream": true, "seed": 1,
                "messages": [{ "role": "user", "content": "go" }] }),
        ),
        (
            Api::Responses,
            json!({ "model": "amazon.nova-lite-v1:0", "stream": true, "input": "go", "store": false }),
        ),
    ] {
        let Call { request, reply } = Call::read(api, body).unwrap();
        assert!(reply.stream());
        let stream = router.lazy_stream(request);
        let mut encoder = reply.encoder();
        let mut out = Vec::new();
        loop {
            let burst = stream.next_batch(256).await.unwrap();
            if burst.is_empty() {
                break;
            }
            out.extend(encoder.on_all(&burst));
        }
        let text: String = out
            .iter()
            .filter_map(|e| {
                e["choices"][0]["delta"]["content"].as_str().or_else(|| {
                    (e["type"] == "response.output_text.delta")
                        .then(|| e["delta"].as_str())
                        .flatten()
                })
            })
            .collect();
        assert_eq!(text, "one two three", "{api:?}");
        let last = out.last().unwrap();
        // A chunk carries Laneway's extras itself; a Responses event in its response.
        let extras = if api == Api::Chat {
            &last["laneway"]
        } else {
            &last["response"]["laneway"]
        };
        let reasons = &extras["decision"]["reasons"];
        let field = if api == Api::Chat { "seed" } else { "store" };
        assert!(
            reasons
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["field"] == field),
            "{api:?}: {reasons}"
        );
        if api == Api::Responses {
            assert_eq!(last["type"], "response.completed");
            let numbers: Vec<u64> = out
                .iter()
                .map(|e| e["sequence_number"].as_u64().unwrap())
                .collect();
            assert_eq!(numbers, (0..out.len() as u64).collect::<Vec<_>>());
        }
    }
}
