//! Open backends: providers of one's own, replaced built-in backends, and errors that keep
//! what the service said (request id, status, tier, model, the SDK's error chain).

use crate::common;

use std::sync::Arc;

use futures::StreamExt;
use laneway::backend::{Completion, MemoryBackend};
use laneway::{
    Config, Error, ErrorKind, GenerateRequest, Provider, Router, ServiceError, StreamEvent,
};
use laneway_emulator::{Fault, FaultKind};

const HOUSE: &str = r#"
builtin_models = false
default_model = "house-small"

[models.house-small]
provider = "house"
model_id = "small-v3"
regions = ["a", "b"]
price = { input_per_1k = 0.001, output_per_1k = 0.002 }
"#;

/// A backend whose region `a` is throttled.
fn house() -> MemoryBackend {
    MemoryBackend::new(|call| {
        let t = &call.attempt.target;
        assert_eq!(t.id(), "small-v3", "the model_id is what is sent");
        if t.region() == "a" {
            let mut e = ServiceError::new(ErrorKind::Throttled, "busy", t.id(), t.region())
                .with_code("Busy");
            e.http_status = Some(429);
            e.request_id = Some("req-a-1".into());
            return Err(e.into());
        }
        Ok(Completion::text("fine thanks"))
    })
}

async fn house_router(backend: MemoryBackend) -> Router {
    Router::builder()
        .config(Config::from_toml_str(HOUSE).unwrap())
        .backend(Provider::named("house"), Arc::new(backend))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_provider_of_ones_own_generates_streams_and_fails_over() {
    let router = house_router(house()).await;
    let answer = router
        .generate(GenerateRequest::user("how are you"))
        .await
        .unwrap();
    assert_eq!(answer.text(), "fine thanks");
    let d = &answer.decision;
    assert_eq!(d.provider, Provider::named("house"));
    assert_eq!((d.target.as_str(), d.region.as_str()), ("small-v3", "b"));
    let failed = &d.failed_attempts[0];
    assert_eq!(failed.provider, Provider::named("house"));
    assert_eq!(
        (
            failed.region.as_str(),
            failed.model.as_str(),
            failed.code.as_str(),
            failed.http_status,
            failed.request_id.as_deref(),
            failed.tier
        ),
        ("a", "house-small", "Busy", Some(429), Some("req-a-1"), None)
    );
    assert!(answer.cost_usd > 0.0);

    let mut text = String::new();
    let mut events = router
        .stream(GenerateRequest::user("and streamed"))
        .await
        .unwrap();
    while let Some(e) = events.next().await {
        match e.unwrap() {
            StreamEvent::TextDelta { text: t, .. } => text.push_str(&t),
            StreamEvent::Completed(done) => assert_eq!(done.usage.output_tokens, 2),
            _ => {}
        }
    }
    assert_eq!(text, "fine thanks");
}

#[tokio::test]
async fn a_model_whose_provider_has_no_backend_is_refused_at_build() {
    let e = Router::builder()
        .config(Config::from_toml_str(HOUSE).unwrap())
        .build()
        .await
        .unwrap_err();
    match &e {
        Error::Config { field, reason } => {
            assert_eq!(field, "models.\"house-small\".provider");
            assert!(reason.contains("\"house\""), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bedrock_settings_on_a_provider_of_ones_own_are_refused() {
    let e = Config::from_toml_str(&format!("{HOUSE}tiers = [\"flex\"]\n")).unwrap_err();
    assert!(
        e.to_string().contains("models.house-small") && e.to_string().contains("`tiers`"),
        "{e}"
    );
    let no_regions = HOUSE.replace("regions = [\"a\", \"b\"]\n", "");
    let e = Config::from_toml_str(&no_regions).unwrap_err();
    assert!(e.to_string().contains("needs at least one region"), "{e}");
}

#[tokio::test]
async fn the_bedrock_backend_can_be_replaced() {
    let memory = Arc::new(MemoryBackend::new(|call| {
        Ok(Completion::text(format!(
            "{} via {:?}",
            call.attempt.target.id, call.attempt.tier
        )))
    }));
    let router = Router::builder()
        .backend(Provider::Bedrock, memory.clone())
        .build()
        .await
        .unwrap();
    let answer = router
        .generate(GenerateRequest::user("hi").model("amazon.nova-micro-v1:0"))
        .await
        .unwrap();
    assert_eq!(memory.calls(), 1);
    assert!(
        answer
            .text()
            .starts_with("amazon.nova-micro-v1:0 via Some(")
    );
}

#[tokio::test]
async fn one_api_of_bedrock_can_be_replaced_on_its_own() {
    // GPT-5.4 is served only by bedrock-mantle's OpenAI-compatible APIs: a backend registered
    // for that API answers it, and Converse's stays the built-in one.
    let memory = Arc::new(MemoryBackend::echo());
    let router = Router::builder()
        .api_backend(
            Provider::Bedrock,
            laneway::Api::OpenAiMantle,
            memory.clone(),
        )
        .build()
        .await
        .unwrap();
    let answer = router
        .generate(GenerateRequest::user("hello mantle").model("openai.gpt-5.4"))
        .await
        .unwrap();
    assert_eq!(memory.calls(), 1);
    assert_eq!(answer.text(), "hello mantle");
    assert_eq!(
        (answer.decision.provider.clone(), answer.decision.api),
        (Provider::Bedrock, laneway::Api::OpenAiMantle)
    );
    // The deprecated name of that API registers for it, for one more release.
    let old = Arc::new(MemoryBackend::echo());
    let router = Router::builder()
        .backend(Provider::named("bedrock-mantle"), old.clone())
        .build()
        .await
        .unwrap();
    router
        .generate(GenerateRequest::user("hi").model("openai.gpt-5.4"))
        .await
        .unwrap();
    assert_eq!(old.calls(), 1);
}

/// Per failed attempt: the service's request id, HTTP status, model and tier; the error of a
/// call keeps the SDK's error as its source.
#[tokio::test]
async fn failed_attempts_carry_what_the_service_said() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    emu.add_fault(
        Fault::new(FaultKind::Throttle)
            .for_model("amazon.nova-lite-v1:0")
            .for_region("us-east-1"),
    );
    let answer = router
        .generate(
            GenerateRequest::user("hello")
                .model("amazon.nova-lite-v1:0")
                .max_tokens(8),
        )
        .await
        .unwrap();
    let failed = answer
        .decision
        .failed_attempts
        .first()
        .expect("us-east-1 was tried first and throttled");
    assert_eq!(failed.kind, ErrorKind::Throttled);
    assert_eq!(failed.http_status, Some(429));
    assert!(failed.request_id.as_deref().is_some_and(|r| !r.is_empty()));
    assert_eq!(failed.model, "amazon.nova-lite-v1:0");
    assert_eq!(failed.provider, Provider::Bedrock);
    assert!(failed.tier.is_some());
    assert_ne!(answer.decision.region, "us-east-1");

    // A connection refused: the SDK's dispatch failure stays reachable through source().
    let closed = Router::builder()
        .endpoint_url("http://127.0.0.1:9")
        .static_credentials("a", "b")
        .build()
        .await
        .unwrap();
    let e = closed
        .generate(
            GenerateRequest::user("x")
                .model("eu.amazon.nova-lite-v1:0")
                .residency(laneway::Residency::Geography(
                    laneway::Geography::new("eu").unwrap(),
                ))
                .deadline(std::time::Duration::from_secs(2)),
        )
        .await
        .unwrap_err();
    let Error::Service(s) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(s.kind, ErrorKind::Transport);
    let source = std::error::Error::source(&e).expect("the SDK error is kept");
    assert!(
        !source.to_string().is_empty(),
        "a source with a message: {source:?}"
    );
    emu.shutdown().await;
}

/// A whole answer (`stream_generate = false`, hedged by elapsed time) reaches the caller as
/// the backend gave it: its citation pieces apart and its reasoning block's id kept, not read
/// back through stream events.
#[tokio::test]
async fn a_whole_answer_reaches_the_caller_as_its_backend_gave_it() {
    use laneway::{CitationsContent, OutputBlock, ReasoningBlock, ReasoningText};
    let content = vec![
        OutputBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
            text: "the ticket asks for a refund".into(),
            signature: Some("sig".into()),
            id: Some("rs_1".into()),
        })),
        OutputBlock::Citations(CitationsContent {
            content: vec!["Refunds take ".into(), "five days.".into()],
            citations: vec![laneway::Citation {
                title: Some("policy".into()),
                source: None,
                source_content: vec!["five business days".into()],
                location: None,
            }],
        }),
    ];
    let given = content.clone();
    let backend = MemoryBackend::new(move |_| {
        let mut done = Completion::text("");
        done.content = given.clone();
        Ok(done)
    });
    let config =
        Config::from_toml_str(&format!("{HOUSE}\n[routing]\nstream_generate = false\n")).unwrap();
    let router = Router::builder()
        .config(config)
        .backend(Provider::named("house"), Arc::new(backend))
        .build()
        .await
        .unwrap();
    for fresh in [true, false] {
        let answer = router
            .generate(GenerateRequest::user("refund?"))
            .await
            .unwrap();
        assert_eq!(answer.content, content, "fresh router: {fresh}");
    }
}
