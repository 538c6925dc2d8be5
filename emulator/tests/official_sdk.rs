//! The unmodified official Rust SDK against the emulator: signatures, regions, frames, errors.

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_sdk_bedrockruntime as bedrock;
use aws_sdk_sagemakerruntime as sagemaker;
use bedrock::types::{
    ContentBlock, ConversationRole, ConverseStreamOutput, InferenceConfiguration, Message,
    ServiceTier, ServiceTierType,
};
use laneway_emulator::{Emulator, Fault, FaultKind, Scenario};

async fn sdk_config(url: &str, region: &str, secret: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(region.to_string()))
        .endpoint_url(url)
        .credentials_provider(Credentials::new(
            "LANEWAYTESTKEY",
            secret,
            None,
            None,
            "test",
        ))
        .retry_config(RetryConfig::disabled())
        .load()
        .await
}

async fn bedrock_client(emu: &Emulator, region: &str) -> bedrock::Client {
    bedrock::Client::new(&sdk_config(&emu.url(), region, "LANEWAYTESTSECRET").await)
}

fn user(text: &str) -> Message {
    Message::builder()
        .role(ConversationRole::User)
        .content(ContentBlock::Text(text.into()))
        .build()
        .unwrap()
}

async fn start() -> Emulator {
    Emulator::start(Scenario::builtin("fast").unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn converse_answers_with_usage_tier_and_deterministic_text() {
    let emu = start().await;
    let client = bedrock_client(&emu, "us-west-2").await;
    let call = || {
        client
            .converse()
            .model_id("us.amazon.nova-lite-v1:0")
            .messages(user("Summarise the quarterly report"))
            .inference_config(InferenceConfiguration::builder().max_tokens(12).build())
            .service_tier(
                ServiceTier::builder()
                    .r#type(ServiceTierType::Priority)
                    .build()
                    .unwrap(),
            )
            .send()
    };
    let out = call().await.unwrap();
    let text = out.output().unwrap().as_message().unwrap().content()[0]
        .as_text()
        .unwrap()
        .clone();
    assert_eq!(text.split(' ').count(), 12);
    assert_eq!(out.usage().unwrap().output_tokens(), 12);
    assert!(out.usage().unwrap().input_tokens() > 0);
    assert_eq!(
        out.service_tier().unwrap().r#type(),
        &ServiceTierType::Priority
    );
    let again = call().await.unwrap();
    assert_eq!(
        again.output().unwrap().as_message().unwrap().content()[0]
            .as_text()
            .unwrap(),
        &text
    );

    let rows = emu.counters();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].region.as_str(), rows[0].tier.as_str()),
        ("us-west-2", "priority")
    );
    assert_eq!(rows[0].counter.ok, 2);
}

#[tokio::test]
async fn converse_stream_frames_decode_with_the_sdk() {
    let emu = start().await;
    let client = bedrock_client(&emu, "eu-west-1").await;
    let mut out = client
        .converse_stream()
        .model_id("eu.anthropic.claude-haiku-4-5-20251001-v1:0")
        .messages(user("hello"))
        .inference_config(InferenceConfiguration::builder().max_tokens(20).build())
        .send()
        .await
        .unwrap();
    let (mut text, mut usage, mut stop) = (String::new(), None, None);
    while let Some(ev) = out.stream.recv().await.unwrap() {
        match ev {
            ConverseStreamOutput::ContentBlockDelta(d) => {
                text.push_str(d.delta().unwrap().as_text().unwrap())
            }
            ConverseStreamOutput::MessageStop(s) => stop = Some(s.stop_reason().clone()),
            ConverseStreamOutput::Metadata(m) => usage = m.usage().cloned(),
            _ => {}
        }
    }
    assert_eq!(text.split(' ').count(), 20);
    assert_eq!(stop.unwrap().as_str(), "max_tokens");
    assert_eq!(usage.unwrap().output_tokens(), 20);
}

#[tokio::test]
async fn exception_inside_the_stream_reaches_the_sdk_after_the_delivered_text() {
    let emu = start().await;
    emu.add_fault(Fault::break_after(5));
    let client = bedrock_client(&emu, "us-east-1").await;
    let mut out = client
        .converse_stream()
        .model_id("amazon.nova-micro-v1:0")
        .messages(user("hello"))
        .send()
        .await
        .unwrap();
    let mut deltas = 0;
    let err = loop {
        match out.stream.recv().await {
            Ok(Some(ConverseStreamOutput::ContentBlockDelta(_))) => deltas += 1,
            Ok(Some(_)) => {}
            Ok(None) => panic!("stream ended without the injected exception"),
            Err(e) => break e,
        }
    };
    assert_eq!(deltas, 5);
    assert!(matches!(
        err.into_service_error(),
        bedrock::types::error::ConverseStreamOutputError::ModelStreamErrorException(_)
    ));
}

#[tokio::test]
async fn wrong_secret_gets_invalid_signature_403() {
    let emu = start().await;
    let client = bedrock::Client::new(&sdk_config(&emu.url(), "us-east-1", "WRONG").await);
    let err = client
        .converse()
        .model_id("amazon.nova-lite-v1:0")
        .messages(user("hi"))
        .send()
        .await
        .unwrap_err();
    let raw = err.raw_response().unwrap();
    assert_eq!(raw.status().as_u16(), 403);
    use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
    assert_eq!(err.code(), Some("InvalidSignatureException"));
}

#[tokio::test]
async fn faults_and_tiers_map_to_the_modelled_errors() {
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let send = |model: &'static str, tier: Option<ServiceTierType>| {
        let mut b = client.converse().model_id(model).messages(user("hi"));
        if let Some(t) = tier {
            b = b.service_tier(ServiceTier::builder().r#type(t).build().unwrap());
        }
        b.send()
    };
    use bedrock::operation::converse::ConverseError as E;
    let e = send("amazon.nova-micro-v1:0", Some(ServiceTierType::Priority))
        .await
        .unwrap_err();
    assert!(matches!(e.into_service_error(), E::ValidationException(_)));

    emu.add_fault(Fault::new(FaultKind::Throttle).times(1));
    let e = send("amazon.nova-lite-v1:0", None).await.unwrap_err();
    assert!(matches!(e.into_service_error(), E::ThrottlingException(_)));

    emu.add_fault(Fault::new(FaultKind::Outage).times(1));
    let e = send("amazon.nova-lite-v1:0", None).await.unwrap_err();
    assert!(matches!(
        e.into_service_error(),
        E::ServiceUnavailableException(_)
    ));

    emu.add_fault(Fault::new(FaultKind::ModelNotReady).times(1));
    let e = send("amazon.nova-lite-v1:0", None).await.unwrap_err();
    assert!(matches!(
        e.into_service_error(),
        E::ModelNotReadyException(_)
    ));

    emu.add_fault(Fault::new(FaultKind::InternalError).times(1));
    let e = send("amazon.nova-lite-v1:0", None).await.unwrap_err();
    assert!(matches!(
        e.into_service_error(),
        E::InternalServerException(_)
    ));

    assert!(send("amazon.nova-lite-v1:0", None).await.is_ok());
}

#[tokio::test]
async fn invoke_model_speaks_native_bodies_and_reports_token_headers() {
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let body = serde_json::json!({
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 8,
        "messages": [{ "role": "user", "content": "hello" }],
    });
    let out = client
        .invoke_model()
        .model_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(out.body().as_ref()).unwrap();
    assert_eq!(v["usage"]["output_tokens"], 8);
    assert_eq!(v["stop_reason"], "max_tokens");
}

async fn sagemaker_client(emu: &Emulator) -> sagemaker::Client {
    sagemaker::Client::new(&sdk_config(&emu.url(), "us-east-1", "LANEWAYTESTSECRET").await)
}

#[tokio::test]
async fn sagemaker_tgi_and_openai_chat_streams_reassemble_split_lines() {
    let emu = start().await;
    let client = sagemaker_client(&emu).await;

    let tgi = serde_json::json!({ "inputs": "hello", "parameters": { "max_new_tokens": 9 }, "stream": true });
    let mut out = client
        .invoke_endpoint_with_response_stream()
        .endpoint_name("laneway-demo-llm")
        .content_type("application/json")
        .body(tgi.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    let mut raw = Vec::new();
    let mut parts = 0;
    while let Some(ev) = out.body.recv().await.unwrap() {
        if let sagemaker::types::ResponseStream::PayloadPart(p) = ev {
            raw.extend_from_slice(p.bytes().unwrap().as_ref());
            parts += 1;
        }
    }
    let text = String::from_utf8(raw).unwrap();
    let lines: Vec<&str> = text.split("\n\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 9);
    assert!(
        parts > lines.len(),
        "some lines must straddle payload parts"
    );
    let last: serde_json::Value =
        serde_json::from_str(lines[8].strip_prefix("data:").unwrap()).unwrap();
    assert_eq!(last["details"]["generated_tokens"], 9);

    let chat = serde_json::json!({ "messages": [{ "role": "user", "content": "hi" }], "max_tokens": 4, "stream": true });
    let mut out = client
        .invoke_endpoint_with_response_stream()
        .endpoint_name("laneway-demo-chat")
        .inference_component_name("llama-3-8b-ic")
        .body(chat.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    let mut raw = Vec::new();
    while let Some(ev) = out.body.recv().await.unwrap() {
        if let sagemaker::types::ResponseStream::PayloadPart(p) = ev {
            raw.extend_from_slice(p.bytes().unwrap().as_ref());
        }
    }
    assert!(
        String::from_utf8(raw)
            .unwrap()
            .ends_with("data: [DONE]\n\n")
    );
}

#[tokio::test]
async fn sagemaker_errors_and_inference_component_header() {
    let emu = start().await;
    let client = sagemaker_client(&emu).await;
    let body = serde_json::json!({ "messages": [{ "role": "user", "content": "hi" }] });
    use sagemaker::operation::invoke_endpoint::InvokeEndpointError as E;
    let e = client
        .invoke_endpoint()
        .endpoint_name("laneway-demo-chat")
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .unwrap_err();
    assert!(matches!(e.into_service_error(), E::ValidationError(_)));

    emu.add_fault(
        Fault::new(FaultKind::ModelNotReady)
            .for_model("laneway-demo-llm")
            .times(1),
    );
    let tgi = serde_json::json!({ "inputs": "hello" });
    let e = client
        .invoke_endpoint()
        .endpoint_name("laneway-demo-llm")
        .body(tgi.to_string().into_bytes().into())
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        e.into_service_error(),
        E::ModelNotReadyException(_)
    ));

    let ok = client
        .invoke_endpoint()
        .endpoint_name("laneway-demo-llm")
        .body(tgi.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(ok.body().unwrap().as_ref()).unwrap();
    assert!(v[0]["generated_text"].as_str().unwrap().len() > 3);
}

#[tokio::test]
async fn prompt_cache_writes_then_reads_per_region_and_reports_details() {
    use bedrock::types::{CachePointBlock, CachePointType, SystemContentBlock};
    let emu = start().await;
    let send = |region: &'static str, question: &'static str| {
        let emu_url = emu.url();
        async move {
            let client =
                bedrock::Client::new(&sdk_config(&emu_url, region, "LANEWAYTESTSECRET").await);
            client
                .converse()
                .model_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
                .system(SystemContentBlock::Text(
                    "Policy: refunds within 30 days. ".repeat(200),
                ))
                .system(SystemContentBlock::CachePoint(
                    CachePointBlock::builder()
                        .r#type(CachePointType::Default)
                        .build()
                        .unwrap(),
                ))
                .messages(user(question))
                .send()
                .await
                .unwrap()
        }
    };
    let first = send("us-east-1", "first question").await;
    let u = first.usage().unwrap();
    let written = u.cache_write_input_tokens().unwrap();
    assert!(written >= 1024, "{u:?}");
    assert_eq!(u.cache_read_input_tokens(), Some(0));
    assert_eq!(u.cache_details()[0].input_tokens(), written);

    let second = send("us-east-1", "another question").await;
    let u2 = second.usage().unwrap();
    assert_eq!(u2.cache_read_input_tokens(), Some(written));
    assert_eq!(u2.cache_write_input_tokens(), Some(0));
    assert!(
        u2.input_tokens() < u.input_tokens() + written,
        "new tokens exclude the cached prefix"
    );

    let other = send("us-west-2", "first question").await;
    assert_eq!(
        other.usage().unwrap().cache_read_input_tokens(),
        Some(0),
        "caches are per region"
    );
}

#[tokio::test]
async fn prompt_router_arns_pick_a_model_and_report_it_in_the_trace() {
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let arn = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1";
    let mut invoked = std::collections::BTreeSet::new();
    for i in 0..40 {
        let out = client
            .converse()
            .model_id(arn)
            .messages(user(&format!("Question number {i}: explain the result")))
            .inference_config(InferenceConfiguration::builder().max_tokens(8).build())
            .send()
            .await
            .unwrap();
        let id = out
            .trace()
            .and_then(|t| t.prompt_router())
            .and_then(|p| p.invoked_model_id())
            .expect("a prompt router reports the model it chose")
            .to_string();
        assert!(
            id.starts_with(
                "arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.anthropic.claude-"
            ),
            "{id}"
        );
        invoked.insert(id);
    }
    assert_eq!(invoked.len(), 2, "both models are used: {invoked:?}");

    // Streams carry the trace in their metadata event.
    let mut out = client
        .converse_stream()
        .model_id(arn)
        .messages(user("Stream it"))
        .send()
        .await
        .unwrap();
    let mut traced = false;
    while let Some(ev) = out.stream.recv().await.unwrap() {
        if let ConverseStreamOutput::Metadata(m) = ev {
            traced = m.trace().and_then(|t| t.prompt_router()).is_some();
        }
    }
    assert!(traced);

    // A router ARN of another region, or an unknown router, is a validation error.
    for bad in [
        "arn:aws:bedrock:eu-west-1:123456789012:default-prompt-router/anthropic.claude:1",
        "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/meta.llama:1",
    ] {
        let e = client
            .converse()
            .model_id(bad)
            .messages(user("x"))
            .send()
            .await
            .unwrap_err();
        let e = e.into_service_error();
        assert!(e.is_validation_exception(), "{bad}: {e:?}");
    }
}

const SONNET: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// The built-in world, a minute lasting a minute, with a reservation of 100 output tokens a
/// minute on Claude Sonnet 4.5.
async fn reserved_world() -> Emulator {
    let mut scenario = Scenario::builtin("fast").unwrap();
    scenario.time_scale = 1.0;
    let sonnet = scenario
        .models
        .iter_mut()
        .find(|m| SONNET.ends_with(&m.id))
        .unwrap();
    sonnet.reservation = Some(laneway_emulator::ReservationSpec {
        input_tokens_per_minute: 1_000_000,
        output_tokens_per_minute: 100,
    });
    sonnet.overrides.clear();
    sonnet.performance.ttft_median_ms = 2.0;
    sonnet.performance.ttft_p99_ms = 4.0;
    sonnet.performance.tokens_per_second = 10_000.0;
    Emulator::start(scenario).await.unwrap()
}

fn reserved() -> ServiceTier {
    ServiceTier::builder()
        .r#type(ServiceTierType::Reserved)
        .build()
        .unwrap()
}

#[tokio::test]
async fn reserved_requests_above_the_reservation_are_served_at_standard_and_say_so() {
    let emu = reserved_world().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let converse = || {
        client
            .converse()
            .model_id(SONNET)
            .messages(user("Draft the release notes"))
            .inference_config(InferenceConfiguration::builder().max_tokens(60).build())
            .service_tier(reserved())
            .send()
    };
    let first = converse().await.unwrap();
    assert_eq!(
        first.service_tier().map(|t| t.r#type()),
        Some(&ServiceTierType::Reserved)
    );
    // 60 of 100 reserved output tokens used: 60 more do not fit, so Bedrock serves it at
    // standard, as it reports.
    let second = converse().await.unwrap();
    assert_eq!(
        second.service_tier().map(|t| t.r#type()),
        Some(&ServiceTierType::Default)
    );

    let mut stream = client
        .converse_stream()
        .model_id(SONNET)
        .messages(user("Draft the release notes"))
        .inference_config(InferenceConfiguration::builder().max_tokens(60).build())
        .service_tier(reserved())
        .send()
        .await
        .unwrap();
    let mut served = None;
    while let Some(ev) = stream.stream.recv().await.unwrap() {
        if let ConverseStreamOutput::Metadata(m) = ev {
            served = m.service_tier().map(|t| t.r#type().clone());
        }
    }
    assert_eq!(served, Some(ServiceTierType::Default));

    let body = serde_json::json!({
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 60,
        "messages": [{ "role": "user", "content": "hello" }],
    });
    let invoked = client
        .invoke_model()
        .model_id(SONNET)
        .service_tier(ServiceTierType::Reserved)
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    assert_eq!(invoked.service_tier(), Some(&ServiceTierType::Default));
    let streamed = client
        .invoke_model_with_response_stream()
        .model_id(SONNET)
        .service_tier(ServiceTierType::Reserved)
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.service_tier(), Some(&ServiceTierType::Default));

    let reserved_rows: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "reserved")
        .map(|c| c.counter.requests)
        .sum();
    assert_eq!(reserved_rows, 1, "one request served from the reservation");
}

#[tokio::test]
async fn latency_optimized_is_echoed_where_offered_and_a_400_elsewhere() {
    use bedrock::types::{PerformanceConfigLatency, PerformanceConfiguration};
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let optimized = PerformanceConfiguration::builder()
        .latency(PerformanceConfigLatency::Optimized)
        .build();
    let out = client
        .converse()
        .model_id("amazon.nova-pro-v1:0")
        .messages(user("hi"))
        .inference_config(InferenceConfiguration::builder().max_tokens(4).build())
        .performance_config(optimized.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.performance_config().map(|p| p.latency()),
        Some(&PerformanceConfigLatency::Optimized)
    );
    let err = client
        .converse()
        .model_id("amazon.nova-micro-v1:0")
        .messages(user("hi"))
        .performance_config(optimized)
        .send()
        .await
        .unwrap_err();
    let service = err.into_service_error();
    assert!(service.is_validation_exception(), "{service:?}");
    assert!(
        service
            .to_string()
            .contains("Latency-optimized inference is not supported"),
        "{service}"
    );
}

#[tokio::test]
async fn admission_counts_max_tokens_at_the_models_burndown_rate() {
    // Claude Sonnet 4.5 burns 5 quota tokens per output token: with 10,000 tokens a minute, a
    // request asking for 1,500 output tokens holds 7,500 while it runs, leaving no room for
    // another such request; when it ends the count settles on what it produced.
    let mut scenario = Scenario::builtin("fast").unwrap();
    scenario.time_scale = 1.0;
    let sonnet = scenario
        .models
        .iter_mut()
        .find(|m| SONNET.ends_with(&m.id))
        .unwrap();
    sonnet.performance.tokens_per_minute = 10_000;
    // A first token long in coming: the stream below holds its admission meanwhile.
    sonnet.performance.ttft_median_ms = 30_000.0;
    sonnet.performance.ttft_p99_ms = 40_000.0;
    sonnet.overrides.clear();
    let emu = Emulator::start(scenario).await.unwrap();
    let client = bedrock_client(&emu, "us-east-1").await;
    let running = client
        .converse_stream()
        .model_id(SONNET)
        .messages(user("Write the whole report"))
        .inference_config(InferenceConfiguration::builder().max_tokens(1500).build())
        .send()
        .await
        .unwrap();
    let err = client
        .converse()
        .model_id(SONNET)
        .messages(user("Write another report"))
        .inference_config(InferenceConfiguration::builder().max_tokens(1500).build())
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(err.is_throttling_exception(), "{err:?}");
    assert!(err.to_string().contains("Too many tokens"), "{err}");
    // Asking for less fits: 1,000 x 5 = 5,000 of the 2,500 left is too much, 400 x 5 is not.
    let small = client
        .converse_stream()
        .model_id(SONNET)
        .messages(user("A short note"))
        .inference_config(InferenceConfiguration::builder().max_tokens(400).build())
        .send()
        .await;
    assert!(small.is_ok(), "{small:?}");
    drop(running);
}

/// Claude's thinking through `additionalModelRequestFields`, as the SDK sends it: a signed
/// reasoning block before the text, reasoning deltas in the stream (decoded by the SDK), the
/// signature checked when the block comes back, Bedrock's 400 for a budget below 1,024.
#[tokio::test]
async fn thinking_answers_signed_reasoning_and_checks_it_on_the_way_back() {
    use aws_smithy_types::Document;
    use bedrock::types::{ContentBlockDelta, ReasoningContentBlock, ReasoningContentBlockDelta};
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let thinking = |budget: u64| {
        Document::Object(
            [(
                "thinking".to_string(),
                Document::Object(
                    [
                        ("type".to_string(), Document::String("enabled".into())),
                        (
                            "budget_tokens".to_string(),
                            Document::Number(aws_smithy_types::Number::PosInt(budget)),
                        ),
                    ]
                    .into(),
                ),
            )]
            .into(),
        )
    };
    let model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
    let out = client
        .converse()
        .model_id(model)
        .messages(user("Plan a trip"))
        .inference_config(InferenceConfiguration::builder().max_tokens(4000).build())
        .additional_model_request_fields(thinking(2048))
        .send()
        .await
        .unwrap();
    let content = out
        .output()
        .unwrap()
        .as_message()
        .unwrap()
        .content()
        .to_vec();
    let Some(ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(r))) =
        content.first()
    else {
        panic!("{content:?}")
    };
    assert!(r.signature().is_some() && !r.text().is_empty());
    assert!(content[1].as_text().is_ok());

    // Sent back unchanged the turn is accepted; altered, it is Bedrock's 400.
    let back = |block: ContentBlock| {
        client
            .converse()
            .model_id(model)
            .messages(user("Plan a trip"))
            .messages(
                Message::builder()
                    .role(ConversationRole::Assistant)
                    .content(block)
                    .content(ContentBlock::Text("Here".into()))
                    .build()
                    .unwrap(),
            )
            .messages(user("Go on"))
            .inference_config(InferenceConfiguration::builder().max_tokens(4000).build())
            .additional_model_request_fields(thinking(2048))
            .send()
    };
    back(content[0].clone()).await.unwrap();
    let tampered = ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(
        bedrock::types::ReasoningTextBlock::builder()
            .text(format!("{} and more", r.text()))
            .signature(r.signature().unwrap())
            .build()
            .unwrap(),
    ));
    let e = back(tampered).await.unwrap_err().into_service_error();
    assert!(e.is_validation_exception(), "{e:?}");
    assert!(
        format!("{e:?}").contains("Invalid signature in thinking block"),
        "{e:?}"
    );

    let e = client
        .converse()
        .model_id(model)
        .messages(user("x"))
        .additional_model_request_fields(thinking(512))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        format!("{e:?}").contains("greater than or equal to 1024"),
        "{e:?}"
    );

    let mut stream = client
        .converse_stream()
        .model_id(model)
        .messages(user("Plan a trip"))
        .inference_config(InferenceConfiguration::builder().max_tokens(4000).build())
        .additional_model_request_fields(thinking(2048))
        .send()
        .await
        .unwrap()
        .stream;
    let (mut reasoning, mut signature, mut text) = (String::new(), None, String::new());
    while let Some(ev) = stream.recv().await.unwrap() {
        if let ConverseStreamOutput::ContentBlockDelta(d) = ev {
            match d.delta().unwrap() {
                ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text(t)) => {
                    assert_eq!(d.content_block_index(), 0);
                    reasoning.push_str(t)
                }
                ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Signature(s)) => {
                    signature = Some(s.clone())
                }
                ContentBlockDelta::Text(t) => {
                    assert_eq!(d.content_block_index(), 1);
                    text.push_str(t)
                }
                other => panic!("{other:?}"),
            }
        }
    }
    assert!(!reasoning.is_empty() && !text.is_empty());
    // The streamed pieces make a block the emulator accepts back.
    let streamed = ContentBlock::ReasoningContent(ReasoningContentBlock::ReasoningText(
        bedrock::types::ReasoningTextBlock::builder()
            .text(reasoning)
            .signature(signature.unwrap())
            .build()
            .unwrap(),
    ));
    back(streamed).await.unwrap();
}

/// Structured output through `outputConfig.textFormat`: the answer parses and conforms; a model
/// without it is Bedrock's 400.
#[tokio::test]
async fn structured_output_answers_conforming_json() {
    use bedrock::types::{
        JsonSchemaDefinition, OutputConfig, OutputFormat, OutputFormatStructure, OutputFormatType,
    };
    let emu = start().await;
    let client = bedrock_client(&emu, "us-east-1").await;
    let config = OutputConfig::builder()
        .text_format(
            OutputFormat::builder()
                .r#type(OutputFormatType::JsonSchema)
                .structure(OutputFormatStructure::JsonSchema(
                    JsonSchemaDefinition::builder()
                        .schema(r#"{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","tags"],"additionalProperties":false}"#)
                        .build()
                        .unwrap(),
                ))
                .build()
                .unwrap(),
        )
        .build();
    let out = client
        .converse()
        .model_id("us.anthropic.claude-haiku-4-5-20251001-v1:0")
        .messages(user("Name and tags"))
        .output_config(config.clone())
        .send()
        .await
        .unwrap();
    let text = out.output().unwrap().as_message().unwrap().content()[0]
        .as_text()
        .unwrap()
        .clone();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["name"].is_string() && v["tags"].is_array(), "{v}");
    let e = client
        .converse()
        .model_id("us.amazon.nova-lite-v1:0")
        .messages(user("Name and tags"))
        .output_config(config)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        format!("{e:?}").contains("output_config.format: Extra inputs are not permitted"),
        "{e:?}"
    );
}
