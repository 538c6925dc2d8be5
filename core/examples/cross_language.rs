//! The cross-language scenario (`tests/cross_language/`) through the Rust core: prints one JSON
//! line of outcomes, as the Python and Node runners do.
//!
//! `cargo run -p laneway --example cross_language -- SCENARIO ENDPOINT_URL KEY_ID SECRET`

use laneway::surface::openai::{Api, Call};
use laneway::surface::{ErrorDetails, RouterOptions};
use laneway::{GenerateRequest, StreamEvent};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scenario, url, key, secret] = args.as_slice() else {
        return Err("usage: cross_language SCENARIO ENDPOINT_URL KEY_ID SECRET".into());
    };
    let s: Value = serde_json::from_str(&std::fs::read_to_string(scenario)?)?;
    let mut options = s["options"].clone();
    options["endpoint_url"] = json!(url);
    options["access_key_id"] = json!(key);
    options["secret_access_key"] = json!(secret);
    let router = serde_json::from_value::<RouterOptions>(options)?
        .builder()?
        .build()
        .await?;
    let mut out = Vec::new();
    for case in s["cases"].as_array().ok_or("cases: a list")? {
        out.push(outcome(&router, case).await);
    }
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

async fn outcome(router: &laneway::Router, case: &Value) -> Value {
    if let Some(shaped) = case.get("openai") {
        return openai_outcome(router, shaped).await;
    }
    let request: GenerateRequest = match serde_json::from_value(case["request"].clone()) {
        Ok(r) => r,
        Err(e) => {
            let e = laneway::Error::InvalidRequest {
                field: "request".into(),
                reason: e.to_string(),
            };
            return json!({ "error": ErrorDetails::of(&e) });
        }
    };
    let result = if case["stream"] == json!(true) {
        streamed(router, request).await
    } else {
        router.generate(request).await
    };
    match result {
        Ok(r) => json!({ "response": r }),
        Err(e) => json!({ "error": ErrorDetails::of(&e) }),
    }
}

async fn streamed(
    router: &laneway::Router,
    request: GenerateRequest,
) -> laneway::Result<laneway::GenerateResponse> {
    use futures::StreamExt;
    let mut stream = router.stream(request).await?;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Completed(r) = event? {
            return Ok(*r);
        }
    }
    Err(laneway::Error::InvalidRequest {
        field: "stream".into(),
        reason: "ended without a completed event".into(),
    })
}

/// An `openai`-shaped case: `{ "openai": answer }`, `{ "openai_events": [...] }` or an error.
async fn openai_outcome(router: &laneway::Router, shaped: &Value) -> Value {
    let read = shaped["api"]
        .as_str()
        .unwrap_or_default()
        .parse::<Api>()
        .and_then(|api| Call::read(api, shaped["body"].clone()));
    let Call { request, reply } = match read {
        Ok(call) => call,
        Err(e) => return json!({ "error": ErrorDetails::of(&e) }),
    };
    if !reply.stream() {
        return match router.generate(request).await {
            Ok(r) => json!({ "openai": reply.whole(r) }),
            Err(e) => json!({ "error": ErrorDetails::of(&e) }),
        };
    }
    let stream = router.lazy_stream(request);
    let mut encoder = reply.encoder();
    let mut events = Vec::new();
    loop {
        match stream.next_batch(256).await {
            Ok(burst) if burst.is_empty() => return json!({ "openai_events": events }),
            Ok(burst) => events.extend(encoder.on_all(&burst)),
            Err(e) => return json!({ "error": ErrorDetails::of(&e) }),
        }
    }
}
