//! OpenAI's models on Bedrock's OpenAI-compatible endpoints: the Responses and Chat Completions
//! APIs on bedrock-runtime's `/openai/v1` and on bedrock-mantle, through the router and the
//! emulator (whose endpoints the official `openai` SDKs also check, in the bindings' tests).

use std::time::Duration;

use futures::StreamExt;
use laneway::config::ModelConfig;
use laneway::{
    Api, ContentBlock, ErrorKind, GenerateRequest, Message, OutputBlock, OutputFormat, Provider,
    Reason, Reasoning, ReasoningBlock, ReasoningDelta, ReasoningEffort, Role, StopReason,
    StreamEvent, Tool, ToolChoice,
};
use laneway_emulator::{Fault, FaultKind, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};
use serde_json::{Value, json};

use crate::common;

const TERRA: &str = "openai.gpt-5.6-terra";
const GPT_55: &str = "openai.gpt-5.5";
const GPT_OSS: &str = "openai.gpt-oss-120b-1:0";

fn weather() -> Tool {
    Tool::new(
        "weather",
        "Weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// The emulator's answered calls of `operation`, whole or streamed (`Responses`,
/// `ChatCompletions`, `Converse`).
fn calls(emu: &laneway_emulator::Emulator, operation: &str) -> u64 {
    emu.counters()
        .iter()
        .filter(|r| r.operation.strip_suffix("Stream").unwrap_or(&r.operation) == operation)
        .map(|r| r.counter.ok)
        .sum()
}

#[tokio::test]
async fn gpt_answers_by_the_responses_api_on_bedrock_runtime_through_a_profile() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let r = router
        .generate(GenerateRequest::user("Name three rivers.").model(TERRA))
        .await
        .unwrap();
    assert_eq!(r.decision.api, Api::OpenAiRuntime);
    assert!(
        r.decision.target.starts_with("us.") || r.decision.target.starts_with("global."),
        "runtime serves GPT-5.6 through profiles only: {}",
        r.decision.target
    );
    assert!(!r.text().is_empty());
    assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    assert!(r.cost_usd > 0.0);
    assert_eq!(calls(&emu, "Responses"), 1);
    assert_eq!(calls(&emu, "Converse"), 0);
}

#[tokio::test]
async fn a_streamed_tool_call_arrives_as_tool_use_events_and_a_whole_tool_use_block() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("What is the weather in Lisbon?")
        .model(TERRA)
        .tool(weather())
        .tool_choice(ToolChoice::Tool("weather".into()));
    let mut s = router.stream(req).await.unwrap();
    let (mut started, mut json_text, mut done) = (None, String::new(), None);
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::ToolUseStart { name, index, .. } => started = Some((name, index)),
            StreamEvent::ToolUseDelta { input_json, .. } => json_text.push_str(&input_json),
            StreamEvent::Completed(r) => done = Some(r),
            _ => {}
        }
    }
    let done = done.expect("the stream completes");
    assert_eq!(started.unwrap().0, "weather");
    let streamed: Value = serde_json::from_str(&json_text).unwrap();
    assert!(streamed.get("city").is_some(), "{json_text}");
    assert_eq!(done.stop_reason, StopReason::ToolUse);
    let OutputBlock::ToolUse { name, input, .. } = &done.content[0] else {
        panic!("{:?}", done.content)
    };
    assert_eq!((name.as_str(), input), ("weather", &streamed));
    assert_eq!(calls(&emu, "Responses"), 1);
}

#[tokio::test]
async fn structured_output_comes_back_as_json_that_conforms_whole_and_streamed() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
        "additionalProperties": false
    });
    let req = GenerateRequest::user("The largest city of Portugal, as JSON.")
        .model(TERRA)
        .output_format(OutputFormat::json_schema(schema));
    let whole = router.generate(req.clone()).await.unwrap();
    let v: Value = serde_json::from_str(&whole.text()).unwrap();
    assert!(v["name"].is_string() && v["population"].is_i64(), "{v}");
    let mut s = router.stream(req).await.unwrap();
    let mut text = String::new();
    while let Some(ev) = s.next().await {
        if let StreamEvent::TextDelta { text: t, .. } = ev.unwrap() {
            text.push_str(&t);
        }
    }
    let streamed: Value = serde_json::from_str(&text).unwrap();
    assert!(streamed["population"].is_i64(), "{streamed}");
}

#[tokio::test]
async fn reasoning_comes_back_as_a_summary_with_its_encrypted_content_and_goes_back_next_turn() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("Plan a three-city trip, step by step.")
        .model(TERRA)
        .reasoning(Reasoning::effort(ReasoningEffort::High));
    let r = router.generate(req.clone()).await.unwrap();
    let OutputBlock::Reasoning(ReasoningBlock::Text(thinking)) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert!(!thinking.text.is_empty());
    assert!(
        thinking.signature.is_some(),
        "the encrypted content rides along"
    );
    assert!(r.usage.reasoning_tokens > 0);
    assert!(r.usage.reasoning_tokens <= r.usage.output_tokens);
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::ReasoningMapped { sent, .. } if sent.contains("\"effort\":\"high\"")
    )));

    // Streamed: summary text, then the encrypted content, then the answer.
    let mut s = router.stream(req.clone()).await.unwrap();
    let (mut summary, mut encrypted, mut text) = (String::new(), None, String::new());
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::ReasoningDelta {
                delta: ReasoningDelta::Text(t),
                ..
            } => {
                assert!(text.is_empty(), "reasoning comes first");
                summary.push_str(&t);
            }
            StreamEvent::ReasoningDelta {
                delta: ReasoningDelta::Signature(e),
                ..
            } => encrypted = Some(e),
            StreamEvent::TextDelta { text: t, .. } => text.push_str(&t),
            _ => {}
        }
    }
    assert!(!summary.is_empty() && encrypted.is_some() && !text.is_empty());

    // The next turn carries the reasoning back (as the model's encrypted reasoning item).
    let mut next = req;
    next.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Reasoning(ReasoningBlock::Text(thinking.clone())),
            ContentBlock::Text(r.text()),
        ],
    });
    next.messages
        .push(Message::user("Now make it four cities."));
    let again = router.generate(next).await.unwrap();
    assert!(!again.text().is_empty());
}

#[tokio::test]
async fn an_outage_of_the_runtime_surface_fails_over_to_bedrock_mantle() {
    let emu = common::emulator().await;
    emu.add_fault(Fault::new(FaultKind::Outage).for_surface("bedrock-openai"));
    let router = common::router(&emu).await;
    let r = router
        .generate(GenerateRequest::user("Hello").model(TERRA))
        .await
        .unwrap();
    assert_eq!(r.decision.api, Api::OpenAiMantle);
    assert_eq!(r.decision.target, TERRA, "mantle takes the bare id");
    assert!(!r.decision.failed_attempts.is_empty());
    assert!(
        r.decision
            .failed_attempts
            .iter()
            .all(|f| f.kind == ErrorKind::Unavailable)
    );
}

#[tokio::test]
async fn a_model_served_only_by_mantle_never_goes_to_converse() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("Hello").model(GPT_55);
    let plan = router.plan(&req).unwrap();
    assert!(
        plan.attempts
            .iter()
            .all(|a| a.target.api == Api::OpenAiMantle)
    );
    let r = router.generate(req).await.unwrap();
    assert_eq!(
        (r.decision.api, r.decision.region.as_str()),
        (Api::OpenAiMantle, "us-east-1")
    );
    // Its only API is Responses, which has no stop sequences: refused by name, not dropped.
    let err = router
        .generate(
            GenerateRequest::user("Count")
                .model(GPT_55)
                .stop_sequences(["5"]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    assert!(err.to_string().contains("stop_sequences"), "{err}");
}

#[tokio::test]
async fn stop_sequences_go_by_chat_completions_where_the_model_has_both_apis() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let r = router
        .generate(
            GenerateRequest::user("Count to ten.")
                .model(TERRA)
                .stop_sequences(["5"]),
        )
        .await
        .unwrap();
    assert_eq!(r.decision.api, Api::OpenAiRuntime);
    assert_eq!(calls(&emu, "ChatCompletions"), 1);
    assert_eq!(calls(&emu, "Responses"), 0);
}

/// Converse and bedrock-runtime's `/openai/v1` are one endpoint with one quota pool: a target's
/// health is learnt for both (they share its id), so an outage there moves the call to mantle.
#[tokio::test]
async fn gpt_oss_fails_over_from_converse_to_bedrock_mantle() {
    let emu = common::emulator().await;
    emu.add_fault(
        Fault::new(FaultKind::Outage)
            .for_surface("bedrock")
            .for_model(GPT_OSS),
    );
    let router = common::router(&emu).await;
    let r = router
        .generate(GenerateRequest::user("Hello").model(GPT_OSS))
        .await
        .unwrap();
    assert_eq!(r.decision.api, Api::OpenAiMantle);
    assert_eq!(
        r.decision.target, "openai.gpt-oss-120b",
        "mantle's id for it"
    );
    assert_eq!(calls(&emu, "Converse"), 0);
    assert_eq!(calls(&emu, "Responses"), 1, "mantle's first API for it");
}

#[tokio::test]
async fn gpt_oss_takes_chat_completions_on_bedrock_runtime_when_its_surfaces_come_first() {
    let emu = common::emulator().await;
    let mut config = common::config("");
    if let Some(ModelConfig::Bedrock(b)) = config.models.get_mut(GPT_OSS) {
        b.openai.as_mut().unwrap().first = true;
    }
    let router = common::router_with(&emu, config).await;
    let r = router
        .generate(
            GenerateRequest::user("What is the weather in Oslo?")
                .model(GPT_OSS)
                .tool(weather())
                .tool_choice(ToolChoice::Any)
                .reasoning(Reasoning::effort(ReasoningEffort::Low)),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.decision.api, r.decision.target.as_str()),
        (Api::OpenAiRuntime, GPT_OSS)
    );
    assert_eq!(calls(&emu, "ChatCompletions"), 1);
    assert!(
        r.content
            .iter()
            .any(|b| matches!(b, OutputBlock::ToolUse { name, .. } if name == "weather"))
    );
}

#[tokio::test]
async fn mantle_counts_its_own_input_and_output_quotas_apart_from_the_runtime() {
    let emu = common::real_minute_emulator("openai.gpt-5.5", |m| {
        m.openai.as_mut().unwrap().mantle_quota = Some(laneway_emulator::ReservationSpec {
            input_tokens_per_minute: 3_000,
            output_tokens_per_minute: 100_000,
        });
    })
    .await;
    let mut config = common::config("");
    if let Some(ModelConfig::Bedrock(b)) = config.models.get_mut(GPT_55) {
        let mantle = b.openai.as_mut().unwrap().mantle.as_mut().unwrap();
        mantle.input_tokens_per_minute = Some(3_000);
    }
    let router = common::router_with(&emu, config).await;
    // About 2,000 input tokens and 500 of max_tokens: 2,500 of 3,000 at admission, the input
    // kept when it settles.
    let prompt = "word ".repeat(1_600);
    let req = GenerateRequest::user(prompt).model(GPT_55).max_tokens(500);
    router.generate(req.clone()).await.unwrap();
    // The router knows the next one does not fit ...
    let plan = router.plan(&req).unwrap();
    assert!(
        plan.reasons
            .iter()
            .any(|r| matches!(r, Reason::QuotaFull { target, .. } if &**target == GPT_55)),
        "{:?}",
        plan.reasons
    );
    // ... and mantle refuses it (a short deadline ends the retries: the window slides only
    // after a real minute).
    let err = router
        .generate(req.deadline(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert!(
        err.fails_over() || err.kind() == ErrorKind::AllTargetsFailed,
        "{err}"
    );
    let refused: u64 = emu
        .counters()
        .iter()
        .filter_map(|r| r.counter.errors.get("rate_limit_exceeded"))
        .sum();
    assert!(refused >= 1, "{:?}", emu.counters());
}

#[tokio::test]
async fn a_bedrock_api_key_authenticates_both_endpoints_and_a_bad_one_is_refused() {
    let emu = common::emulator().await;
    let creds = aws_credential_types::Credentials::new(
        TEST_ACCESS_KEY_ID,
        TEST_SECRET_ACCESS_KEY,
        None,
        None,
        "test",
    );
    let key = laneway::backend::openai::short_term_api_key(
        &creds,
        "us-east-1",
        Duration::from_secs(3600),
    )
    .unwrap();
    let build = |key: String| {
        laneway::Router::builder()
            .config(common::config(""))
            .endpoint_url(emu.url())
            .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
            .bedrock_api_key(key)
            .build()
    };
    let router = build(key).await.unwrap();
    for model in [GPT_55, TERRA] {
        let mut req = GenerateRequest::user("Hello").model(model);
        req.residency = Some(laneway::Residency::Regions(vec!["us-east-1".into()]));
        let r = router.generate(req).await.unwrap();
        assert_eq!(r.decision.region, "us-east-1");
    }
    let router = build("bedrock-api-key-bm90IGEga2V5".into()).await.unwrap();
    let err = router
        .generate(GenerateRequest::user("Hello").model(GPT_55))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
}

#[tokio::test]
async fn a_broken_gpt_stream_ends_interrupted_and_the_decision_says_it_is_not_continued() {
    let emu = common::emulator().await;
    emu.add_fault(
        Fault::new(FaultKind::BreakStream)
            .for_surface("bedrock-openai")
            .after(3),
    );
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("Tell me a long story.")
        .model(TERRA)
        .continue_on_interrupt(true);
    let plan = router.plan(&req).unwrap();
    assert!(
        plan.reasons
            .iter()
            .any(|r| matches!(r, Reason::ContinuationRefused { model } if &**model == TERRA))
    );
    let mut s = router.stream(req).await.unwrap();
    let mut last = None;
    let mut text = String::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(StreamEvent::TextDelta { text: t, .. }) => text.push_str(&t),
            Ok(StreamEvent::Continued { .. }) => panic!("a GPT stream takes no prefill"),
            Ok(_) => {}
            Err(e) => last = Some(e),
        }
    }
    assert!(!text.is_empty());
    assert_eq!(last.unwrap().kind(), ErrorKind::StreamInterrupted);
}

#[tokio::test]
async fn fields_an_openai_surface_lacks_are_said_in_the_decision() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let mut req = GenerateRequest::user("Hello").model(TERRA);
    req.metadata.insert("team".into(), "search".into());
    let r = router.generate(req).await.unwrap();
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::NotSentTo {
            field: "metadata",
            api: Api::OpenAiRuntime,
            ..
        }
    )));
}

#[tokio::test]
async fn what_an_openai_surface_cannot_carry_goes_by_converse_or_is_refused_by_name() {
    use laneway::{Document, DocumentFormat};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let with_document = |model: &str| {
        let mut req = GenerateRequest::user("Summarise the contract.").model(model);
        req.messages[0]
            .content
            .push(ContentBlock::Document(Document::inline(
                DocumentFormat::Txt,
                "contract",
                b"The parties agree.".to_vec(),
            )));
        req
    };
    // GPT-5.6 is on Converse too: the OpenAI-compatible targets are left out, saying why.
    let r = router.generate(with_document(TERRA)).await.unwrap();
    assert_eq!(r.decision.provider, Provider::Bedrock);
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::TargetExcluded {
            why: laneway::plan::Exclusion::NotCarried,
            ..
        }
    )));
    // GPT-5.5 is not: the call is refused, naming the block.
    let err = router.generate(with_document(GPT_55)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    assert!(err.to_string().contains("messages[0].content[1]"), "{err}");
}

/// An app's `chat.completions.create(...)` body through the router: the answer in the SDK's
/// shapes, whole and as chunks, with Laneway's decision beside it and the fields it went
/// without said there.
#[tokio::test]
async fn an_openai_shaped_chat_call_answers_in_the_sdks_shapes_with_the_decision_beside() {
    use laneway::surface::openai::{chat, note_unhonoured};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let body = json!({
        "model": TERRA,
        "messages": [{ "role": "user", "content": "What is the weather in Oslo?" }],
        "tools": [{ "type": "function", "function": { "name": "weather", "parameters": {
            "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } } }],
        "tool_choice": "required",
        "seed": 42,
        "stream": true,
        "stream_options": { "include_usage": true },
        "laneway": { "slo": "interactive" },
    });
    let call = chat::request(body.clone()).unwrap();
    assert!(call.stream && call.include_usage);
    let mut chunks = chat::Chunks::new(&call.model, call.include_usage);
    let mut s = router.stream(call.request.clone()).await.unwrap();
    let mut all = Vec::new();
    while let Some(ev) = s.next().await {
        let mut ev = ev.unwrap();
        if let StreamEvent::Completed(r) = &mut ev {
            note_unhonoured(r, &call.unhonoured);
        }
        all.extend(chunks.event(&ev));
    }
    assert_eq!(all[0]["choices"][0]["delta"]["role"], "assistant");
    let args: String = all
        .iter()
        .filter_map(|c| {
            c.pointer("/choices/0/delta/tool_calls/0/function/arguments")?
                .as_str()
        })
        .collect();
    assert!(
        serde_json::from_str::<Value>(&args).unwrap()["city"].is_string(),
        "{args}"
    );
    let finish = all
        .iter()
        .find_map(|c| c.pointer("/choices/0/finish_reason")?.as_str())
        .unwrap();
    assert_eq!(finish, "tool_calls");
    let last = all.last().unwrap();
    assert!(
        last["choices"].as_array().unwrap().is_empty()
            && last["usage"]["total_tokens"].as_u64() > Some(0)
    );
    let reasons = &last["laneway"]["decision"]["reasons"];
    assert!(reasons.to_string().contains("seed"), "{reasons}");

    // Whole: one `chat.completion`.
    let call = chat::request(
        json!({ "model": TERRA, "messages": [{ "role": "user", "content": "Hello" }] }),
    )
    .unwrap();
    let r = router.generate(call.request).await.unwrap();
    let c = chat::completion(&r, TERRA);
    assert_eq!(c["object"], "chat.completion");
    assert_eq!(c["choices"][0]["message"]["content"], r.text());
    assert_eq!(c["laneway"]["decision"]["provider"], "bedrock");
    assert_eq!(c["laneway"]["decision"]["api"], "openai-runtime");
}

#[tokio::test]
async fn the_gpt_family_routes_by_the_builtin_router_and_answers() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let easy = GenerateRequest::user("Hi!").family("gpt");
    let hard = GenerateRequest::user(
        "Prove that there are infinitely many primes p such that p + 2 is also prime, or explain \
         precisely why the question is open, with the strongest partial results and their proofs.",
    )
    .family("gpt");
    for req in [easy, hard] {
        let plan = router.plan(&req).unwrap();
        assert!(
            [
                "openai.gpt-5.6-luna",
                "openai.gpt-5.6-terra",
                "openai.gpt-5.6-sol"
            ]
            .contains(&&*plan.model),
            "{}",
            plan.model
        );
        assert!(
            plan.reasons
                .iter()
                .any(|r| matches!(r, Reason::VariantScored { .. })),
            "{:?}",
            plan.reasons
        );
        let r = router.generate(req).await.unwrap();
        assert_eq!(r.decision.family.as_deref(), Some("gpt"));
        assert!(r.decision.provider == Provider::Bedrock);
    }
}

/// An app's `responses.create(...)` body through the router, streamed: the typed events in
/// order, numbered, each item added before its deltas and done after, the whole response last.
#[tokio::test]
async fn an_openai_shaped_responses_stream_is_the_sdks_event_sequence() {
    use laneway::surface::openai::{note_unhonoured, responses};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let call = responses::request(json!({
        "model": TERRA,
        "instructions": "Think, then answer.",
        "input": "Plan a trip to Lisbon.",
        "reasoning": { "effort": "medium" },
        "store": false,
        "stream": true,
    }))
    .unwrap();
    let mut events = responses::Events::new(&call.model);
    let mut s = router.stream(call.request.clone()).await.unwrap();
    let mut all = Vec::new();
    while let Some(ev) = s.next().await {
        let mut ev = ev.unwrap();
        if let StreamEvent::Completed(r) = &mut ev {
            note_unhonoured(r, &call.unhonoured);
        }
        all.extend(events.on(&ev));
    }
    let kinds: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[..2], ["response.created", "response.in_progress"]);
    assert_eq!(*kinds.last().unwrap(), "response.completed");
    let numbers: Vec<u64> = all
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    // Reasoning first (its summary), then the message.
    let first_reasoning = kinds
        .iter()
        .position(|k| *k == "response.reasoning_summary_text.delta")
        .unwrap();
    let first_text = kinds
        .iter()
        .position(|k| *k == "response.output_text.delta")
        .unwrap();
    assert!(first_reasoning < first_text);
    let done = &all.last().unwrap()["response"];
    assert_eq!(done["output"][0]["type"], "reasoning");
    assert!(done["output"][0]["encrypted_content"].is_string());
    assert_eq!(done["output"][1]["type"], "message");
    let streamed: String = all
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(done["output"][1]["content"][0]["text"], streamed.as_str());
    assert!(
        done["laneway"]["decision"]["reasons"]
            .to_string()
            .contains("store")
    );

    // Whole: one `response` whose reasoning item goes back on the next turn.
    let mut whole = call.request.clone();
    whole.messages[0] = laneway::Message::user("Plan a trip to Porto.");
    let r = router.generate(whole).await.unwrap();
    let v = responses::response(&r, TERRA);
    assert_eq!(
        (v["object"].as_str(), v["status"].as_str()),
        (Some("response"), Some("completed"))
    );
    let next = responses::request(json!({
        "model": TERRA,
        "input": [
            { "role": "user", "content": "Plan a trip to Porto." },
            v["output"][0].clone(),
            v["output"][1].clone(),
            { "role": "user", "content": "And Madrid?" },
        ],
        "reasoning": { "effort": "medium" },
    }))
    .unwrap();
    assert!(router.generate(next.request).await.is_ok());
}
