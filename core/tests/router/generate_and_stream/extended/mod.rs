//! Reasoning, structured output, model fields and request metadata through the router and the
//! emulator (whose Bedrock checks what it gets back: signatures, budgets, schemas).

use futures::StreamExt;
use laneway::{
    ContentBlock, ErrorKind, GenerateRequest, GuardContent, Guardrail, GuardrailTrace, Message,
    ModelFields, OutputBlock, OutputFormat, Reason, Reasoning, ReasoningBlock, ReasoningDelta,
    ReasoningEffort, Role, StopReason, StreamEvent, Tool, ToolResult, ToolResultContent,
};
use serde_json::json;

use crate::common;

mod geography;
mod openai;

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const SONNET_46: &str = "anthropic.claude-sonnet-4-6";
const NOVA_2: &str = "amazon.nova-2-lite-v1:0";

fn weather_tool() -> Tool {
    Tool::new(
        "weather",
        "Weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

#[tokio::test]
async fn a_thinking_answer_carries_signed_reasoning_before_its_text() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("Plan a three-city trip, step by step.")
        .model(SONNET)
        .max_tokens(4_000)
        .reasoning(Reasoning::budget(2_048));
    let r = router.generate(req).await.unwrap();
    let OutputBlock::Reasoning(ReasoningBlock::Text(thinking)) = &r.content[0] else {
        panic!("{:?}", r.content);
    };
    assert!(!thinking.text.is_empty());
    assert!(thinking.signature.is_some());
    assert!(!r.text().is_empty());
    assert!(
        !r.text().contains(&thinking.text),
        "reasoning stays out of the answer's text"
    );
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::ReasoningMapped { sent, .. } if sent.contains("budget_tokens") && sent.contains("2048")
    )));
    // Reasoning is output: counted in the usage and priced as output.
    let words = r.text().split_whitespace().count() + r.reasoning_text().split_whitespace().count();
    assert_eq!(r.usage.output_tokens as usize, words);
}

#[tokio::test]
async fn a_stream_delivers_reasoning_deltas_then_the_answer_with_both_first_token_times() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let req = GenerateRequest::user("Why is the sky blue? Think first.")
        .model(SONNET)
        .max_tokens(4_000)
        .reasoning(Reasoning::effort(ReasoningEffort::Low));
    let mut stream = router.stream(req).await.unwrap();
    let (mut reasoning, mut signature, mut text, mut order) =
        (String::new(), None, String::new(), Vec::new());
    let mut done = None;
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            StreamEvent::ReasoningDelta {
                delta: ReasoningDelta::Text(t),
                index,
            } => {
                assert_eq!(index, 0);
                reasoning.push_str(&t);
                order.push('r');
            }
            StreamEvent::ReasoningDelta {
                delta: ReasoningDelta::Signature(s),
                ..
            } => signature = Some(s),
            StreamEvent::TextDelta { text: t, index } => {
                assert_eq!(index, 1);
                text.push_str(&t);
                order.push('t');
            }
            StreamEvent::Completed(r) => done = Some(r),
            other => panic!("{other:?}"),
        }
    }
    let done = done.unwrap();
    assert!(order.iter().position(|c| *c == 't') > order.iter().rposition(|c| *c == 'r'));
    assert_eq!(done.reasoning_text(), reasoning);
    assert_eq!(done.text(), text);
    let t = done.timings;
    let (first_reasoning, first_answer) = (t.ttft_reasoning.unwrap(), t.ttft_answer.unwrap());
    assert_eq!(t.ttft, Some(first_reasoning));
    assert!(first_answer > first_reasoning);
    // The assembled block keeps the signature for the next turn.
    match &done.content[0] {
        OutputBlock::Reasoning(ReasoningBlock::Text(r)) => assert_eq!(r.signature, signature),
        other => panic!("{other:?}"),
    }
}

/// The agent loop of thinking with tools: the model's turn (reasoning and tool call) goes back
/// whole with the tool's result; Bedrock checks the signature and refuses the turn without it.
#[tokio::test]
async fn a_tool_loop_with_thinking_sends_the_signed_reasoning_back_and_a_tampered_one_is_refused() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let first = GenerateRequest::user("What's the weather in Paris?")
        .model(SONNET)
        .max_tokens(4_000)
        .tool(weather_tool())
        .reasoning(Reasoning::budget(1_024));
    let r = router.generate(first.clone()).await.unwrap();
    // The emulator answers text (auto tool choice); stand in the model's tool call after its
    // own signed reasoning, as Claude answers.
    let OutputBlock::Reasoning(thinking) = r.content[0].clone() else {
        panic!("{:?}", r.content)
    };
    let assistant = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Reasoning(thinking.clone()),
            ContentBlock::ToolUse(laneway::ToolUse {
                id: "t1".into(),
                name: "weather".into(),
                input: json!({"city": "Paris"}),
            }),
        ],
    };
    let result = Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            tool_use_id: "t1".into(),
            content: vec![ToolResultContent::Json(json!({"c": 21}))],
            is_error: false,
        })],
    };
    let mut next = first.clone();
    next.messages.extend([assistant.clone(), result.clone()]);
    let answered = router.generate(next.clone()).await.unwrap();
    assert!(!answered.text().is_empty());

    // Without the reasoning block, Claude refuses the turn.
    let mut bare = first.clone();
    let mut no_thinking = assistant.clone();
    no_thinking.content.remove(0);
    bare.messages.extend([no_thinking, result.clone()]);
    let e = router.generate(bare).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Validation, "{e}");
    assert!(
        e.to_string().contains("must start with a thinking block"),
        "{e}"
    );

    // A tampered text no longer matches its signature.
    let mut tampered = first.clone();
    let mut altered = assistant.clone();
    if let ContentBlock::Reasoning(ReasoningBlock::Text(t)) = &mut altered.content[0] {
        t.text.push_str(" (edited)");
    }
    tampered.messages.extend([altered, result]);
    let e = router.generate(tampered).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("Invalid signature in thinking block"),
        "{e}"
    );
}

#[tokio::test]
async fn what_claude_refuses_with_thinking_is_refused_before_sending_naming_the_field() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let base = GenerateRequest::user("hi")
        .model(SONNET)
        .reasoning(Reasoning::budget(2_048));
    for (req, field) in [
        (base.clone().max_tokens(1_000), "reasoning.budget_tokens"),
        (base.clone().temperature(0.3), "inference.temperature"),
        (
            GenerateRequest::user("hi")
                .model(SONNET)
                .reasoning(Reasoning::budget(100)),
            "reasoning.budget_tokens",
        ),
        (
            GenerateRequest::user("hi")
                .model("amazon.nova-lite-v1:0")
                .reasoning(Reasoning::default()),
            "reasoning",
        ),
    ] {
        let e = router.generate(req).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRequest, "{e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    assert_eq!(common::requests_seen(&emu), 0, "nothing was sent");
}

#[tokio::test]
async fn one_effort_is_spelled_as_each_model_spells_it() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let effort = Reasoning::effort(ReasoningEffort::Max);
    // Claude 4.6: adaptive thinking with its native effort, max included.
    let r = router
        .generate(
            GenerateRequest::user("Prove it.")
                .model(SONNET_46)
                .reasoning(effort),
        )
        .await
        .unwrap();
    assert!(!r.reasoning_text().is_empty());
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::ReasoningMapped { sent, .. } if sent.contains("adaptive") && sent.contains("\"max\"")
    )), "{:?}", r.decision.reasons);
    // Nova 2: reasoningConfig with its highest word; its reasoning is redacted.
    let r = router
        .generate(
            GenerateRequest::user("Prove it.")
                .model(NOVA_2)
                .reasoning(effort),
        )
        .await
        .unwrap();
    assert_eq!(r.reasoning_text(), "[REDACTED]");
    assert!(r.decision.reasons.iter().any(|x| matches!(
        x,
        Reason::ReasoningMapped { sent, .. } if sent.contains("maxReasoningEffort") && sent.contains("high")
    )));
}

/// Nova 2 reasons silently and answers `[REDACTED]` when it is done: the first token of either
/// kind comes late, and the first-token limit allows for the reasoning asked for.
#[tokio::test]
async fn silent_reasoning_is_waited_for_within_the_reasoning_allowance() {
    let mut scenario = laneway_emulator::Scenario::builtin("fast").unwrap();
    scenario.time_scale = 1.0;
    let nova = scenario.models.iter_mut().find(|m| m.id == NOVA_2).unwrap();
    nova.performance.ttft_median_ms = 1.0;
    nova.performance.ttft_p99_ms = 2.0;
    // 120 to 480 high-effort tokens at 10 tokens/s: 12 to 48 s of silence, above the
    // interactive class's 10 s first-token limit.
    nova.performance.tokens_per_second = 10.0;
    let emu = laneway_emulator::Emulator::start(scenario).await.unwrap();
    let router = common::router(&emu).await;
    // Without the allowance (reasoning taken as instant), every attempt hits the limit.
    let no_allowance = common::router_with(
        &emu,
        common::config("[routing.timeouts]\nreasoning_tokens_per_second = 1e12\n"),
    )
    .await;
    tokio::time::pause();
    let req = GenerateRequest::user("Think hard.")
        .model(NOVA_2)
        .slo_class(laneway::SloClass::Interactive)
        .reasoning(Reasoning::effort(ReasoningEffort::High));
    let e = no_allowance.generate(req.clone()).await.unwrap_err();
    assert!(e.to_string().contains("FirstTokenTimeout"), "{e}");
    let mut stream = router.stream(req).await.unwrap();
    let mut first = None;
    while let Some(ev) = stream.next().await {
        let ev = ev.unwrap();
        if first.is_none() && ev.is_delta() {
            first = Some(ev.is_reasoning());
        }
        if let StreamEvent::Completed(r) = ev {
            assert!(
                r.decision.failed_attempts.is_empty(),
                "{:?}",
                r.decision.failed_attempts
            );
            assert!(r.timings.ttft_reasoning.unwrap() <= r.timings.ttft_answer.unwrap());
        }
    }
    assert_eq!(first, Some(true));
}

#[tokio::test]
async fn structured_output_conforms_to_the_schema_and_a_model_without_it_is_refused() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "ok": {"type": "boolean"}},
        "required": ["city", "days", "ok"],
        "additionalProperties": false,
    });
    let req = GenerateRequest::user("Trip summary as JSON")
        .model(SONNET)
        .output_format(OutputFormat::json_schema(schema.clone()));
    let r = router.generate(req.clone()).await.unwrap();
    let v: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert!(
        v["city"].is_string() && v["days"].is_u64() && v["ok"].is_boolean(),
        "{v}"
    );
    // Streamed, the same text arrives in pieces.
    let mut s = router.stream(req.clone()).await.unwrap();
    let mut text = String::new();
    while let Some(ev) = s.next().await {
        if let StreamEvent::TextDelta { text: t, .. } = ev.unwrap() {
            text.push_str(&t);
        }
    }
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    // Nova Lite takes no structured output: refused before sending, naming it.
    let mut nova = req.clone();
    nova.model = laneway::ModelRef::Model("amazon.nova-lite-v1:0".into());
    let e = router.generate(nova).await.unwrap_err();
    assert!(e.to_string().contains("output_format"), "{e}");
    let e = GenerateRequest::user("x")
        .output_format(OutputFormat::json_schema(json!({"type": "array"})))
        .validate()
        .unwrap_err();
    assert!(e.to_string().contains("object"), "{e}");
}

#[tokio::test]
async fn model_fields_go_to_their_model_only_and_return_its_response_fields() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let fields = ModelFields {
        model: None,
        request: serde_json::Map::from_iter([("top_k".to_string(), json!(40))]),
        response_paths: vec!["/stop_sequence".into()],
    };
    let req = GenerateRequest::user("hi")
        .model(SONNET)
        .model_fields(fields.clone())
        .metadata("team", "search")
        .metadata("ticket", "T-17");
    let r = router.generate(req).await.unwrap();
    assert_eq!(
        r.model_response_fields,
        Some(json!({"stop_sequence": null}))
    );
    // Written for Sonnet, they would be refused by Nova: a family variant other than theirs
    // goes without them, said in the decision.
    let mut for_sonnet = fields.clone();
    for_sonnet.model = Some(SONNET.into());
    let r = router
        .generate(
            GenerateRequest::user("hi")
                .model("amazon.nova-lite-v1:0")
                .model_fields(for_sonnet),
        )
        .await
        .unwrap();
    assert!(r.model_response_fields.is_none());
    assert!(
        r.decision
            .reasons
            .iter()
            .any(|x| matches!(x, Reason::ModelFieldsDropped { .. }))
    );
    // Sent to the model they name, a field it does not know is Bedrock's 400.
    let wrong = ModelFields {
        model: None,
        request: serde_json::Map::from_iter([("nonsense".to_string(), json!(1))]),
        response_paths: vec![],
    };
    let e = router
        .generate(
            GenerateRequest::user("hi")
                .model(SONNET)
                .model_fields(wrong),
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("nonsense: Extra inputs are not permitted"),
        "{e}"
    );
    let e = GenerateRequest::user("hi")
        .metadata("bad;key", "v")
        .validate()
        .unwrap_err();
    assert!(e.to_string().contains("metadata"), "{e}");
}

#[tokio::test]
async fn a_failover_to_a_model_that_cannot_reason_drops_it_and_earlier_reasoning_with_reasons() {
    // A SageMaker model whose fallback family is claude: a plan with models of two kinds.
    let config = common::config("[slo_reasoning]\nbackground = { effort = \"low\" }\n");
    let now = laneway::time::now();
    let req = GenerateRequest::user("hi")
        .model("laneway-demo-llm")
        .slo_class(laneway::SloClass::Background);
    let plan = laneway::plan(&req, &config, &laneway::plan::Fresh(now)).unwrap();
    let sagemaker = plan
        .attempts
        .iter()
        .find(|a| &*a.model == "laneway-demo-llm")
        .unwrap();
    assert!(sagemaker.shape.reasoning.is_none());
    assert!(plan.reasons.iter().any(
        |r| matches!(r, Reason::ReasoningDropped { model, .. } if &**model == "laneway-demo-llm")
    ));
    if let Some(claude) = plan
        .attempts
        .iter()
        .find(|a| a.model.starts_with("anthropic."))
    {
        assert!(
            claude.shape.reasoning.is_some(),
            "the class default reasons where it can"
        );
    }
    // A conversation with Claude's reasoning, moved to Nova: the blocks stay out.
    let mut convo = GenerateRequest::new(vec![
        Message::user("hi"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Reasoning(ReasoningBlock::Text(laneway::ReasoningText {
                    text: "t".into(),
                    signature: Some("s".into()),
                    id: None,
                })),
                ContentBlock::Text("hello".into()),
            ],
        },
        Message::user("and?"),
    ]);
    convo.model = laneway::ModelRef::Model("amazon.nova-lite-v1:0".into());
    let plan = laneway::plan(&convo, &config, &laneway::plan::Fresh(now)).unwrap();
    assert!(!plan.attempts[0].shape.reasoning_history);
    assert!(
        plan.reasons
            .iter()
            .any(|r| matches!(r, Reason::ReasoningHistoryDropped { .. }))
    );
    // With the conversation's reasoning made by another model, a fallback that would think
    // without it (and so break a tool loop) answers without reasoning; model fields never go
    // to SageMaker.
    let config = common::config(
        "[slo_reasoning]\nbackground = { effort = \"low\" }\n\
         [models.house-llm]\nprovider = \"sagemaker\"\nfallback_family = \"claude\"\n\
         endpoints = [{ name = \"laneway-demo-llm\", region = \"us-east-1\", format = \"tgi\" }]\n\
         price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }\n",
    );
    let mut moved = convo.clone();
    moved.model = laneway::ModelRef::Model("house-llm".into());
    moved.slo.class = laneway::SloClass::Background;
    moved.model_fields = Some(ModelFields {
        model: None,
        request: serde_json::Map::new(),
        response_paths: vec!["/x".into()],
    });
    let plan = laneway::plan(&moved, &config, &laneway::plan::Fresh(now)).unwrap();
    assert!(
        plan.attempts
            .iter()
            .any(|a| a.model.starts_with("anthropic.")),
        "{:?}",
        plan.attempts
    );
    assert!(
        plan.attempts
            .iter()
            .all(|a| a.shape.reasoning.is_none() && !a.shape.model_fields),
        "{:?}",
        plan.attempts
    );
    assert!(plan.reasons.iter().any(
        |r| matches!(r, Reason::ReasoningDropped { why, .. } if why.contains("another model's"))
    ));
    assert!(
        plan.reasons.iter().any(
            |r| matches!(r, Reason::ModelFieldsDropped { model, .. } if &**model == "house-llm")
        )
    );
}

fn guarded(text: &str) -> GenerateRequest {
    GenerateRequest::user(text)
        .model("amazon.nova-lite-v1:0")
        .guardrail(Guardrail::new("lanewaydemo1", "1").trace(GuardrailTrace::Enabled))
}

#[tokio::test]
async fn a_guardrail_blocks_input_masks_output_and_says_why_in_its_trace() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    // A blocked word: the model is not called, the answer is the guardrail's message.
    let r = router
        .generate(guarded("Tell me about the cactus."))
        .await
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::GuardrailIntervened);
    assert_eq!(r.text(), "Sorry, I cannot talk about that.");
    assert_eq!(r.usage.output_tokens, 0);
    let trace = r.guardrail_trace.as_ref().unwrap();
    assert_eq!(
        trace["inputAssessment"]["lanewaydemo1"]["wordPolicy"]["customWords"][0]["match"],
        "cactus"
    );
    // An e-mail address in the answer is masked, the raw text kept in the trace.
    let mut s = router
        .stream(guarded("Echo: write to jane@example.com today"))
        .await
        .unwrap();
    let mut text = String::new();
    let mut done = None;
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::TextDelta { text: t, .. } => text.push_str(&t),
            StreamEvent::Completed(r) => done = Some(r),
            _ => {}
        }
    }
    let done = done.unwrap();
    assert_eq!(text, "write to {EMAIL} today");
    assert_eq!(done.stop_reason, StopReason::GuardrailIntervened);
    let trace = done.guardrail_trace.unwrap();
    assert_eq!(trace["modelOutput"][0], "write to jane@example.com today");
    assert_eq!(
        trace["outputAssessments"]["lanewaydemo1"][0]["sensitiveInformationPolicy"]["piiEntities"]
            [0]["action"],
        "ANONYMIZED"
    );
    // With guard content, only it is evaluated: the blocked word elsewhere passes.
    let mut only = guarded("The cactus question is not guarded.");
    only.messages[0]
        .content
        .push(ContentBlock::GuardContent(GuardContent::Text {
            text: "What is a plant?".into(),
            qualifiers: vec![],
        }));
    let r = router.generate(only).await.unwrap();
    assert_ne!(r.stop_reason, StopReason::GuardrailIntervened);
    // An unknown guardrail is Bedrock's 400.
    let e = router
        .generate(
            GenerateRequest::user("hi")
                .model("amazon.nova-lite-v1:0")
                .guardrail(Guardrail::new("nosuch", "1")),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[test]
fn a_guardrail_keeps_the_call_on_bedrock_and_in_its_arns_region() {
    let config = common::config("");
    let now = laneway::time::now();
    let arn = "arn:aws:bedrock:us-west-2:123456789012:guardrail/lanewaydemo1";
    let plan = laneway::plan(
        &GenerateRequest::user("hi")
            .model("amazon.nova-lite-v1:0")
            .guardrail(Guardrail::new(arn, "1")),
        &config,
        &laneway::plan::Fresh(now),
    )
    .unwrap();
    assert!(
        plan.attempts
            .iter()
            .all(|a| a.target.region() == "us-west-2"),
        "{:?}",
        plan.attempts
    );
    assert!(plan.reasons.iter().any(|r| matches!(
        r,
        Reason::TargetExcluded {
            why: laneway::plan::Exclusion::NoGuardrail,
            ..
        }
    )));
    // A SageMaker model cannot apply it: refused, naming the guardrail.
    let e = laneway::plan(
        &GenerateRequest::user("hi")
            .model("laneway-demo-llm")
            .guardrail(Guardrail::new("lanewaydemo1", "1")),
        &config,
        &laneway::plan::Fresh(now),
    );
    match e {
        Err(e) => assert!(e.to_string().contains("guardrail"), "{e}"),
        // With a Bedrock fallback family, only its attempts remain.
        Ok(p) => assert!(
            p.attempts
                .iter()
                .all(|a| a.target.provider() == &laneway::Provider::Bedrock)
        ),
    }
    let e = GenerateRequest::user("hi")
        .guardrail(Guardrail::new("Bad Id", "1"))
        .validate()
        .unwrap_err();
    assert!(e.to_string().contains("guardrail.identifier"), "{e}");
    let mut unguarded = GenerateRequest::user("hi");
    unguarded.messages[0]
        .content
        .push(ContentBlock::GuardContent(GuardContent::Text {
            text: "x".into(),
            qualifiers: vec![],
        }));
    assert!(
        unguarded
            .validate()
            .unwrap_err()
            .to_string()
            .contains("guardrail")
    );
}

#[tokio::test]
async fn a_cited_document_answers_with_citations_whole_and_streamed() {
    use laneway::{CitationLocation, Document, DocumentFormat, SearchResult};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let doc = Document {
        format: DocumentFormat::Txt,
        name: "Refund policy".into(),
        source: laneway::MediaSource::Bytes(b"Refunds within 30 days.".to_vec()),
        context: Some("The shop's policy".into()),
        citations: true,
    };
    let req = GenerateRequest::new(vec![Message {
        role: Role::User,
        content: vec![
            ContentBlock::Document(doc),
            ContentBlock::Text("Can I return it?".into()),
        ],
    }])
    .model(SONNET);
    let r = router.generate(req.clone()).await.unwrap();
    let OutputBlock::Citations(c) = &r.content[0] else {
        panic!("{:?}", r.content)
    };
    assert_eq!(c.citations[0].title.as_deref(), Some("Refund policy"));
    assert!(
        matches!(c.citations[0].location, Some(CitationLocation::DocumentChar(s)) if s.document_index == 0)
    );
    assert!(!r.text().is_empty(), "cited text is the answer's text");
    let mut s = router.stream(req).await.unwrap();
    let mut cited = 0;
    let mut done = None;
    while let Some(ev) = s.next().await {
        match ev.unwrap() {
            StreamEvent::CitationDelta { .. } => cited += 1,
            StreamEvent::Completed(r) => done = Some(r),
            _ => {}
        }
    }
    assert_eq!(cited, 1);
    assert!(
        matches!(&done.unwrap().content[0], OutputBlock::Citations(c) if c.citations.len() == 1)
    );

    // A search result: Claude cites it; Nova refuses the block, as Bedrock does.
    let search = GenerateRequest::new(vec![Message {
        role: Role::User,
        content: vec![
            ContentBlock::SearchResult(SearchResult {
                source: "https://kb.example/42".into(),
                title: "Returns".into(),
                content: vec!["Refunds within 30 days.".into()],
                citations: true,
            }),
            ContentBlock::Text("Can I return it?".into()),
        ],
    }]);
    let r = router.generate(search.clone().model(SONNET)).await.unwrap();
    assert!(matches!(&r.content[0], OutputBlock::Citations(c)
        if matches!(c.citations[0].location, Some(CitationLocation::SearchResult(_)))));
    let e = router
        .generate(search.model("amazon.nova-lite-v1:0"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("searchResult"), "{e}");
}

#[tokio::test]
async fn media_and_tool_references_are_carried_and_checked() {
    use laneway::{Media, MediaSource, ToolReference};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let video = Media {
        format: "mp4".into(),
        source: MediaSource::S3 {
            uri: "s3://clips/a.mp4".into(),
            bucket_owner: None,
        },
    };
    let audio = Media {
        format: "wav".into(),
        source: MediaSource::Bytes(vec![82, 73, 70, 70]),
    };
    let req = GenerateRequest::new(vec![Message {
        role: Role::User,
        content: vec![
            ContentBlock::Video(video),
            ContentBlock::Audio(audio.clone()),
            ContentBlock::Text("Describe".into()),
        ],
    }])
    .model("amazon.nova-lite-v1:0");
    assert!(!router.generate(req).await.unwrap().text().is_empty());
    let bad = GenerateRequest::new(vec![Message {
        role: Role::User,
        content: vec![ContentBlock::Audio(Media {
            format: "midi".into(),
            ..audio
        })],
    }]);
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("audio.format")
    );
    // Tools added and removed mid-conversation by reference; the emulator checks they name a
    // tool of the request, as Bedrock does.
    let turn = |name: &str| {
        GenerateRequest::new(vec![
            Message::user("hi"),
            Message::assistant("hello"),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolAddition(ToolReference {
                        name: Some(name.into()),
                        kind: None,
                        server_name: None,
                    }),
                    ContentBlock::Text("now with the tool".into()),
                ],
            },
        ])
        .model(SONNET)
        .tool(weather_tool())
    };
    router.generate(turn("weather")).await.unwrap();
    let e = router.generate(turn("calendar")).await.unwrap_err();
    assert!(e.to_string().contains("calendar"), "{e}");
}

/// Every model of the built-in catalog is served by the emulator's built-in world (ids,
/// profiles, tiers), plainly and, where it reasons, with reasoning: the catalog and the
/// emulator cannot drift apart.
#[tokio::test]
async fn every_built_in_model_answers_through_the_emulator() {
    let emu = common::emulator().await;
    let config = laneway::Config::default();
    let router = common::router_with(&emu, config.clone()).await;
    let mut checked = 0;
    for (name, model) in &config.models {
        if model.provider() != laneway::Provider::Bedrock {
            continue;
        }
        let plain = GenerateRequest::user("Say hello.")
            .model(name.as_str())
            .max_tokens(2_000);
        let r = router
            .generate(plain.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!r.text().is_empty(), "{name}");
        if model.reasoning().is_some() {
            let r = router
                .generate(plain.reasoning(Reasoning::effort(ReasoningEffort::Low)))
                .await
                .unwrap_or_else(|e| panic!("{name} reasoning: {e}"));
            assert!(
                r.content
                    .iter()
                    .any(|b| matches!(b, OutputBlock::Reasoning(_))),
                "{name}: {:?}",
                r.content
            );
        }
        checked += 1;
    }
    assert!(checked >= 18, "{checked} models");
}

#[tokio::test]
async fn a_tool_result_carries_images_documents_and_search_results() {
    use laneway::{Document, DocumentFormat, Image, ImageFormat, SearchResult, ToolUse};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let result = ToolResult {
        tool_use_id: "t1".into(),
        content: vec![
            ToolResultContent::Text("Found these.".into()),
            ToolResultContent::Image(Image::inline(ImageFormat::Png, vec![137, 80, 78, 71])),
            ToolResultContent::Document(Document::inline(
                DocumentFormat::Md,
                "policy",
                b"# Refunds within 30 days".to_vec(),
            )),
            ToolResultContent::Image(Image {
                format: ImageFormat::Jpeg,
                source: laneway::MediaSource::S3 {
                    uri: "s3://shots/page.jpg".into(),
                    bucket_owner: None,
                },
            }),
            ToolResultContent::SearchResult(SearchResult {
                source: "https://kb.example/42".into(),
                title: "Returns".into(),
                content: vec!["Refunds within 30 days.".into()],
                citations: true,
            }),
        ],
        is_error: false,
    };
    let turns = vec![
        Message::user("Can I return it?"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: "t1".into(),
                name: "search".into(),
                input: json!({ "q": "returns" }),
            })],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(result)],
        },
    ];
    let tool = Tool::new(
        "search",
        "Searches the knowledge base",
        json!({"type": "object"}),
    );
    let req = GenerateRequest::new(turns.clone())
        .tool(tool)
        .max_tokens(200);
    // Claude reads all of it and cites the tool's search result.
    let r = router.generate(req.clone().model(SONNET)).await.unwrap();
    assert!(
        r.content
            .iter()
            .any(|b| matches!(b, OutputBlock::Citations(c) if matches!(c.citations[0].location, Some(laneway::CitationLocation::SearchResult(_))))),
        "{:?}",
        r.content
    );
    // A SageMaker container's payload is text: the image is refused by name, not dropped.
    // (The demo's container speaks TGI's text format, which has no tool definitions.)
    let e = router
        .generate(
            GenerateRequest::new(turns)
                .max_tokens(200)
                .model("laneway-demo-llm"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidRequest, "{e}");
    assert!(
        e.to_string().contains("tool_result.content[1]") && e.to_string().contains("image"),
        "{e}"
    );
}

#[tokio::test]
async fn sampling_a_model_refuses_is_left_out_and_said() {
    // Claude Opus 4.7 samples as it chooses: Bedrock refuses temperature and top_p for it.
    const OPUS_47: &str = "anthropic.claude-opus-4-7";
    let emu = common::emulator().await;
    let direct = common::bedrock_sdk(&emu, "us-east-1")
        .converse()
        .model_id(format!("us.{OPUS_47}"))
        .messages(
            aws_sdk_bedrockruntime::types::Message::builder()
                .role(aws_sdk_bedrockruntime::types::ConversationRole::User)
                .content(aws_sdk_bedrockruntime::types::ContentBlock::Text(
                    "Hi".into(),
                ))
                .build()
                .unwrap(),
        )
        .inference_config(
            aws_sdk_bedrockruntime::types::InferenceConfiguration::builder()
                .temperature(0.2)
                .build(),
        )
        .send()
        .await;
    assert!(direct.is_err(), "the emulator refuses it as Bedrock does");
    let router = common::router(&emu).await;
    let r = router
        .generate(
            GenerateRequest::user("Say hi")
                .model(OPUS_47)
                .temperature(0.2)
                .top_p(0.5)
                .max_tokens(32),
        )
        .await
        .unwrap();
    assert!(!r.text().is_empty());
    for field in ["inference.temperature", "inference.top_p"] {
        assert!(
            r.decision.reasons.iter().any(|x| matches!(
                x,
                Reason::FieldNotHonoured { field: f, .. } if f == field
            )),
            "{field}: {:?}",
            r.decision.reasons
        );
    }
    // A model that takes them is sent them, and nothing is said.
    let nova = router
        .generate(
            GenerateRequest::user("Say hi")
                .model("amazon.nova-lite-v1:0")
                .temperature(0.2)
                .max_tokens(8),
        )
        .await
        .unwrap();
    assert!(
        !nova
            .decision
            .reasons
            .iter()
            .any(|x| matches!(x, Reason::FieldNotHonoured { .. }))
    );
}
