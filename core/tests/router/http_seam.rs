//! The in-process HTTP seam (`surface::http`): requests as the official SDKs write them,
//! answered with the bytes the service would send, read back here as the SDKs read them.

use aws_sdk_bedrockruntime::types::{
    ContentBlock, ContentBlockDelta, ConversationRole, ConverseStreamOutput,
    InferenceConfiguration, Message,
};
use aws_smithy_eventstream::frame::read_message_from;
use laneway::surface::http::{self, Body, Route};
use serde_json::{Value, json};

use crate::common;

const LITE: &str = "amazon.nova-lite-v1:0";

fn header<'m>(m: &'m aws_smithy_types::event_stream::Message, name: &str) -> &'m str {
    m.headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| h.value().as_string().ok())
        .map(|s| s.as_str())
        .unwrap_or_default()
}

async fn body_bytes(body: Body) -> Vec<u8> {
    match body {
        Body::Whole(bytes) => bytes,
        Body::Stream(stream) => {
            let mut out = Vec::new();
            while let Some(chunk) = stream.next_chunk().await {
                out.extend(chunk);
            }
            out
        }
    }
}

/// Event-stream frames as (event type, payload).
fn frames(mut bytes: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let m = read_message_from(&mut bytes).unwrap();
        let kind = match header(&m, ":message-type") {
            "exception" => format!("!{}", header(&m, ":exception-type")),
            _ => header(&m, ":event-type").to_owned(),
        };
        out.push((kind, serde_json::from_slice(m.payload()).unwrap()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converse_stream_is_the_services_frames_with_the_services_text() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let prompt = "Tell me a long story about the sea.";
    let body = json!({
        "messages": [{ "role": "user", "content": [{ "text": prompt }] }],
        "inferenceConfig": { "maxTokens": 2000 },
    });
    let route = Route::of("POST", "/model/amazon.nova-lite-v1%3A0/converse-stream").unwrap();
    let answer = http::answer(&router, &route, &[], body.to_string().as_bytes()).await;
    assert_eq!(answer.status, 200);
    assert!(answer.headers.contains(&(
        "content-type".into(),
        "application/vnd.amazon.eventstream".into()
    )));
    let events = frames(&body_bytes(answer.body).await);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds[0], "messageStart");
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["contentBlockStop", "messageStop", "metadata"]
    );
    let text: String = events
        .iter()
        .filter_map(|(_, v)| v["delta"]["text"].as_str())
        .collect();
    let (_, metadata) = events.last().unwrap();
    assert!(metadata["usage"]["outputTokens"].as_u64().unwrap() > 0);

    // The service's own stream of the same prompt, read by the official SDK.
    let out = common::bedrock_sdk(&emu, "us-east-1")
        .converse_stream()
        .model_id(LITE)
        .messages(
            Message::builder()
                .role(ConversationRole::User)
                .content(ContentBlock::Text(prompt.into()))
                .build()
                .unwrap(),
        )
        .inference_config(InferenceConfiguration::builder().max_tokens(2000).build())
        .send()
        .await
        .unwrap();
    let mut stream = out.stream;
    let mut direct = String::new();
    while let Some(event) = stream.recv().await.unwrap() {
        if let ConverseStreamOutput::ContentBlockDelta(d) = event
            && let Some(ContentBlockDelta::Text(t)) = d.delta
        {
            direct.push_str(&t);
        }
    }
    assert_eq!(text, direct);
    assert!(text.len() > 150, "{text}");
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_streams_are_server_sent_events_and_errors_are_the_services_own() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let chat = json!({
        "model": LITE,
        "messages": [{ "role": "user", "content": "Tell me a story." }],
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    let route = Route::of("POST", "/openai/v1/chat/completions?x=1").unwrap();
    let answer = http::answer(&router, &route, &[], chat.to_string().as_bytes()).await;
    assert_eq!(answer.status, 200);
    let text = String::from_utf8(body_bytes(answer.body).await).unwrap();
    let events: Vec<&str> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap())
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["usage"]["completion_tokens"].as_u64() > Some(0))
    );

    let responses = json!({ "model": LITE, "input": "Hello", "stream": true });
    let route = Route::of("POST", "/v1/responses").unwrap();
    let answer = http::answer(&router, &route, &[], responses.to_string().as_bytes()).await;
    let text = String::from_utf8(body_bytes(answer.body).await).unwrap();
    assert!(
        text.starts_with("event: response.created\ndata: {"),
        "{text}"
    );
    assert!(text.contains("event: response.completed\n"), "{text}");

    // A body Laneway cannot read: the service's 400, naming what is wrong, in each dialect.
    let converse = Route::of("POST", "/model/m/converse").unwrap();
    let bad = http::answer(&router, &converse, &[], b"{not json").await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.headers
            .contains(&("x-amzn-errortype".into(), "ValidationException".into()))
    );
    let message: Value = serde_json::from_slice(&body_bytes(bad.body).await).unwrap();
    assert!(
        message["message"].as_str().unwrap().contains("body"),
        "{message}"
    );
    let options = [("X-Laneway".to_owned(), "[1]".to_owned())];
    let bad = http::answer(&router, &route, &options, responses.to_string().as_bytes()).await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.headers
            .contains(&("x-should-retry".into(), "false".into()))
    );
    let error: Value = serde_json::from_slice(&body_bytes(bad.body).await).unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-laneway")
    );
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_before_the_stream_is_a_status_and_dropping_a_stream_cancels_its_call() {
    use laneway_emulator::{Fault, FaultKind};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let body = json!({
        "messages": [{ "role": "user", "content": [{ "text": "Tell me a long story." }] }],
        "inferenceConfig": { "maxTokens": 2000 },
    });
    let options = [(
        "x-laneway".to_owned(),
        json!({ "slo": { "deadline": 1500 } }).to_string(),
    )];
    let route = Route::of("POST", "/model/amazon.nova-lite-v1%3A0/converse-stream").unwrap();
    let throttle = emu.add_fault(Fault::new(FaultKind::Throttle).for_model(LITE));
    let refused = http::answer(&router, &route, &options, body.to_string().as_bytes()).await;
    assert_eq!(refused.status, 429);
    assert!(
        refused
            .headers
            .contains(&("x-amzn-errortype".into(), "ThrottlingException".into()))
    );
    emu.remove_fault(throttle);

    // The stream goes quiet after a few tokens: still open when the reader lets go.
    let cancelled = || -> u64 { emu.counters().iter().map(|r| r.counter.cancelled).sum() };
    let before = cancelled();
    let quiet = emu.add_fault(
        Fault::new(FaultKind::StallMidStream)
            .for_model(LITE)
            .after(3),
    );
    let answer = http::answer(&router, &route, &[], body.to_string().as_bytes()).await;
    let Body::Stream(stream) = answer.body else {
        panic!("a stream");
    };
    assert!(stream.next_chunk().await.is_some());
    drop(stream);
    common::poll_until("the emulator saw the stream cancelled", || {
        cancelled() > before
    })
    .await;
    emu.remove_fault(quiet);
    emu.shutdown().await;
}
