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
