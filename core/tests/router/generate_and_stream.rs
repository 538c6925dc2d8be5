//! generate() and stream() through the real SDK clients against the emulator, on both backends.

use crate::common;
/// Reasoning, structured output, model fields and metadata: the Converse of 2026.
mod extended;

use common::{emulator, router};
use futures::StreamExt;
use laneway::{
    GenerateRequest, OutputBlock, Provider, Reason, ServiceTier, SloClass, StopReason, StreamEvent,
    Tool, ToolChoice,
};

#[tokio::test]
async fn generate_on_bedrock_fills_usage_timings_decision_and_cost() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let r = router
        .generate(
            GenerateRequest::user("Summarise the meeting notes")
                .family("nova")
                .max_tokens(16),
        )
        .await
        .unwrap();
    assert_eq!(r.text().split(' ').count(), 16);
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    assert_eq!(r.usage.output_tokens, 16);
    assert!(r.usage.input_tokens > 0);
    assert!(r.timings.total > std::time::Duration::ZERO);
    // Sent as a stream (routing.stream_generate): the first token is timed too.
    assert!(r.timings.ttft.is_some_and(|t| t <= r.timings.total));
    let d = &r.decision;
    assert_eq!(
        (d.provider.clone(), d.region.as_str()),
        (Provider::Bedrock, "us-east-1")
    );
    assert_eq!(d.family.as_deref(), Some("nova"));
    assert!(router.config().families["nova"].variants.contains(&d.model));
    let call = laneway::types::CallRef::parse(&d.call_id).unwrap();
    assert_eq!((call.family, call.model), (Some("nova"), d.model.as_str()));
    assert_eq!(
        (d.tier, d.served_tier),
        (Some(ServiceTier::STANDARD), Some(ServiceTier::STANDARD))
    );
    assert!(
        d.reasons
            .iter()
            .any(|x| matches!(x, Reason::VariantScored { chosen, .. } if *chosen == d.model))
    );
    let price = &router.config().models[&d.model].price();
    let expected = (f64::from(r.usage.input_tokens) * price.input_per_1k
        + 16.0 * price.output_per_1k)
        / 1000.0;
    assert!(
        (r.cost_usd - expected).abs() < 1e-12,
        "{} vs {expected}",
        r.cost_usd
    );
}

#[tokio::test]
async fn stream_on_bedrock_measures_ttft_and_inter_token_latency() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let req = GenerateRequest::user("Draft a reply")
        .family("claude")
        .slo_class(SloClass::Interactive)
        .max_tokens(30);
    let mut s = router.stream(req).await.unwrap();
    let mut text = String::new();
    let mut last = None;
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::TextDelta { text: t, .. } => text.push_str(&t),
            StreamEvent::Completed(done) => last = Some(done),
            other => panic!("unexpected {other:?}"),
        }
    }
    let done = last.expect("a Completed event ends the stream");
    assert_eq!(done.text(), text);
    assert_eq!(done.usage.output_tokens, 30);
    assert!(done.timings.ttft.is_some());
    assert!(done.timings.inter_token.is_some());
    assert!(done.timings.output_tokens_per_second.unwrap() > 0.0);
    assert_eq!(done.decision.tier, Some(ServiceTier::PRIORITY));
    assert!(done.decision.model.starts_with("anthropic.claude-"));
    assert_eq!(done.decision.target, format!("us.{}", done.decision.model));
    let expected_price = &router.config().models[&done.decision.model].price();
    let standard = (f64::from(done.usage.input_tokens) * expected_price.input_per_1k
        + 30.0 * expected_price.output_per_1k)
        / 1000.0;
    assert!(
        (done.cost_usd
            - standard
                * router
                    .config()
                    .pricing
                    .tier_multiplier(laneway::ServiceTier::PRIORITY))
        .abs()
            < 1e-12
    );
}

/// Streams a request that answers text only: its deltas joined, and its response.
async fn text_stream(
    router: &laneway::Router,
    req: GenerateRequest,
) -> (String, Box<laneway::GenerateResponse>) {
    let mut s = router.stream(req).await.unwrap();
    let mut deltas = String::new();
    let mut done = None;
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::TextDelta { text, .. } => deltas.push_str(&text),
            StreamEvent::Completed(d) => done = Some(d),
            other => panic!("unexpected {other:?}"),
        }
    }
    (deltas, done.expect("the stream completed"))
}

#[tokio::test]
async fn sagemaker_tgi_and_openai_chat_generate_and_stream() {
    let emu = emulator().await;
    let router = router(&emu).await;
    for model in ["laneway-demo-llm", "laneway-demo-chat"] {
        let r = router
            .generate(GenerateRequest::user("hello").model(model).max_tokens(7))
            .await
            .unwrap();
        assert_eq!(r.text().split(' ').count(), 7, "{model}");
        assert_eq!(r.stop_reason, StopReason::MaxTokens, "{model}");
        assert_eq!(r.decision.provider, Provider::Sagemaker);
        assert_eq!(r.decision.endpoint.as_deref(), Some(model));
        assert_eq!(r.decision.tier, None);
        assert!(r.cost_usd > 0.0);

        let (deltas, done) = text_stream(
            &router,
            GenerateRequest::user("hello").model(model).max_tokens(9),
        )
        .await;
        assert_eq!(
            done.text(),
            deltas,
            "{model}: split payload parts must be re-assembled"
        );
        assert_eq!(done.usage.output_tokens, 9, "{model}");
        assert!(done.timings.ttft.is_some());
    }
}

#[tokio::test]
async fn tool_use_comes_back_whole_and_as_deltas() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let req = || {
        GenerateRequest::user("What's the weather in Lyon?")
            .family("claude")
            .tool(Tool::new(
                "get_weather",
                "Weather for a city",
                serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}),
            ))
            .tool_choice(ToolChoice::Tool("get_weather".into()))
    };
    let r = router.generate(req()).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    let (_, name, input) = r.tool_uses().next().unwrap();
    assert_eq!(name, "get_weather");
    assert_eq!(input, &serde_json::json!({"city": "example", "days": 1}));

    let mut s = router.stream(req()).await.unwrap();
    let mut saw_start = false;
    let mut done = None;
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::ToolUseStart { name, .. } => saw_start = name == "get_weather",
            StreamEvent::Completed(d) => done = Some(d),
            _ => {}
        }
    }
    assert!(saw_start);
    let done = done.unwrap();
    assert!(
        matches!(&done.content[0], OutputBlock::ToolUse { input, .. } if input["city"] == "example")
    );
}

/// A user turn with a document (and a question about it) for `model`.
fn with_document(model: &str, bytes: Vec<u8>) -> GenerateRequest {
    let document = laneway::Document {
        context: None,
        citations: false,
        format: laneway::DocumentFormat::Md,
        name: "release notes (v2)".into(),
        source: laneway::MediaSource::Bytes(bytes),
    };
    let mut request = GenerateRequest::new(vec![laneway::Message {
        role: laneway::Role::User,
        content: vec![
            laneway::ContentBlock::Document(document),
            laneway::ContentBlock::Text("What changed?".into()),
        ],
    }])
    .model(model)
    .max_tokens(8);
    request.inference.temperature = Some(0.0);
    request
}

#[tokio::test]
async fn documents_reach_bedrock_and_count_as_input_and_sagemaker_refuses_them() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let short = router
        .generate(with_document(
            "amazon.nova-lite-v1:0",
            b"# v2\nfaster".to_vec(),
        ))
        .await
        .unwrap();
    assert!(!short.text().is_empty());
    // The document travelled: a longer one is more input.
    let long = router
        .generate(with_document(
            "amazon.nova-lite-v1:0",
            "- a change worth noting\n".repeat(200).into_bytes(),
        ))
        .await
        .unwrap();
    assert!(
        long.usage.input_tokens > short.usage.input_tokens + 100,
        "{} vs {}",
        long.usage.input_tokens,
        short.usage.input_tokens
    );
    let mut s = router
        .stream(with_document("amazon.nova-lite-v1:0", b"# v2".to_vec()))
        .await
        .unwrap();
    let mut completed = false;
    while let Some(ev) = s.next().await {
        completed |= matches!(ev.unwrap(), StreamEvent::Completed(_));
    }
    assert!(completed);

    for model in ["laneway-demo-llm", "laneway-demo-chat"] {
        let e = router
            .generate(with_document(model, b"# v2".to_vec()))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), laneway::ErrorKind::InvalidRequest, "{model}: {e}");
        assert!(e.to_string().contains("documents"), "{model}: {e}");
    }
}

#[test]
fn documents_are_checked_against_bedrocks_limits() {
    let problem = |request: GenerateRequest| request.validate().unwrap_err().to_string();
    let mut named = with_document("m", b"x".to_vec());
    if let laneway::ContentBlock::Document(d) = &mut named.messages[0].content[0] {
        d.name = "notes.md".into();
    }
    assert!(problem(named).contains("document.name"));
    let big = with_document("m", vec![b'x'; laneway::Document::MAX_BYTES + 1]);
    assert!(problem(big).contains("document.bytes"));
    let mut many = with_document("m", b"x".to_vec());
    let doc = many.messages[0].content[0].clone();
    many.messages[0].content = vec![doc; laneway::Document::MAX_PER_REQUEST + 1];
    assert!(problem(many).contains("at most 5 documents"));
    let mut from_assistant = with_document("m", b"x".to_vec());
    from_assistant
        .messages
        .insert(0, laneway::Message::user("hi"));
    from_assistant.messages[1].role = laneway::Role::Assistant;
    assert!(problem(from_assistant).contains("user message"));
}

/// SageMaker endpoints whose containers do not stream (the emulator answers their
/// InvokeEndpointWithResponseStream with a 404 page, as a server without the operation does):
/// the first call learns it and is answered whole, later calls go whole at once, and an
/// endpoint configured `streams = false` is never asked to stream. Streams of them deliver the
/// whole answer.
#[tokio::test]
async fn sagemaker_endpoints_that_do_not_stream_are_sent_whole() {
    let mut scenario = laneway_emulator::Scenario::builtin("fast").unwrap();
    for e in &mut scenario.endpoints {
        e.streams = false;
    }
    let emu = laneway_emulator::Emulator::start(scenario).await.unwrap();
    let configured = r#"
[models."chat-whole"]
provider = "sagemaker"
endpoints = [{ name = "laneway-demo-chat", region = "us-east-1", format = "openai_chat", inference_component = "llama-3-8b-ic", streams = false }]
price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }
"#;
    let router = common::router_with(&emu, common::config(configured)).await;
    let whole = |r: &laneway::GenerateResponse| {
        r.decision.reasons.iter().find_map(|x| match x {
            Reason::SentWhole { why, .. } => Some(*why),
            _ => None,
        })
    };
    for (model, first_why) in [
        ("laneway-demo-llm", laneway::WholeWhy::Refused),
        ("chat-whole", laneway::WholeWhy::Configured),
    ] {
        for call in 0..5 {
            let r = router
                .generate(GenerateRequest::user("hello").model(model).max_tokens(7))
                .await
                .unwrap();
            assert_eq!(r.text().split(' ').count(), 7, "{model}");
            assert!(r.decision.failed_attempts.is_empty(), "{:?}", r.decision);
            assert_eq!(whole(&r), Some(first_why), "{model}, call {call}");
            assert_eq!(r.decision.attempts_sent, 1);
        }
    }
    let (deltas, done) = text_stream(
        &router,
        GenerateRequest::user("hello")
            .model("laneway-demo-llm")
            .max_tokens(9),
    )
    .await;
    assert_eq!(done.text(), deltas);
    emu.shutdown().await;
}

/// `build_deferred` waits on nothing (it is not async, and runs off the runtime's threads):
/// planning works at once, and the AWS settings load at the first call, which is answered
/// (Bedrock, the OpenAI-compatible surface and SageMaker alike). Redis, configured but not
/// listening, is not connected to at build.
#[test]
fn a_router_built_without_waiting_plans_at_once_and_loads_its_aws_settings_at_the_first_call() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let emu = rt.block_on(emulator());
    let config = common::config(
        "[shared]\nredis_url = \"redis://127.0.0.1:9\"\nkey_prefix = \"deferred\"\n\
         [models.\"openai.gpt-5.6-luna\"]\nconverse = false\n",
    );
    // In the runtime's context (the Redis client is made there) but not on it: nothing is
    // awaited.
    let entered = rt.enter();
    let router = laneway::Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .build_deferred()
        .unwrap();
    drop(entered);
    let nova = GenerateRequest::user("Say hi.").model("amazon.nova-lite-v1:0");
    assert!(!router.plan(&nova).unwrap().attempts.is_empty());
    rt.block_on(async {
        for req in [
            nova,
            GenerateRequest::user("Say hi.").model("openai.gpt-5.6-luna"),
            GenerateRequest::user("Say hi.").model("laneway-demo-llm"),
        ] {
            let model = req.model.clone();
            let answer = router.generate(req.max_tokens(16)).await;
            let answer = answer.unwrap_or_else(|e| panic!("{model:?}: {e}"));
            assert!(!answer.text().is_empty(), "{model:?}");
        }
    });
}

#[tokio::test]
async fn a_call_is_priced_at_its_regions_listed_price_and_its_long_context_band() {
    // Rows as `laneway catalog prices` writes them: Nova Lite costs more in us-east-1 than
    // its base price (as it does in the EU), with a long-context band; and a discount.
    let config = common::config(
        r#"
        [pricing]
        discount = 0.25
        [[models."amazon.nova-lite-v1:0".price.rows]]
        regions = ["us-east-1"]
        scopes = ["in_region", "geographic"]
        input_per_1k = 0.0006
        output_per_1k = 0.0024
        long_context = { above_input_tokens = 40, input_per_1k = 0.0012, output_per_1k = 0.0048 }
        "#,
    );
    let emu = emulator().await;
    let router = common::router_with(&emu, config).await;
    let short = router
        .generate(
            GenerateRequest::user("Say hi")
                .model("amazon.nova-lite-v1:0")
                .max_tokens(16),
        )
        .await
        .unwrap();
    assert_eq!(short.decision.region, "us-east-1");
    let at = |input: f64, output: f64, r: &laneway::GenerateResponse| {
        (f64::from(r.usage.input_tokens) * input + f64::from(r.usage.output_tokens) * output)
            / 1000.0
            * 0.75
    };
    let expected = at(0.0006, 0.0024, &short);
    assert!(
        (short.cost_usd - expected).abs() < 1e-12,
        "{} vs {expected}",
        short.cost_usd
    );
    // Above the band's input, every token of the call is at the band's prices.
    let long = router
        .generate(
            GenerateRequest::user("word ".repeat(200))
                .model("amazon.nova-lite-v1:0")
                .max_tokens(16),
        )
        .await
        .unwrap();
    assert!(long.usage.total_input_tokens() > 40);
    let expected = at(0.0012, 0.0048, &long);
    assert!(
        (long.cost_usd - expected).abs() < 1e-12,
        "{} vs {expected}",
        long.cost_usd
    );
}
