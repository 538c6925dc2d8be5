//! Variant routing end to end against the emulator: the classifier's pick, step-up failover,
//! and a Bedrock prompt router as a family's target.

use crate::common;

use laneway::{GenerateRequest, Reason, StreamEvent};
use laneway_emulator::{Fault, FaultKind};

const EASY: &str = "Which of these is a mammal?\nA. Shark\nB. Dolphin\nC. Trout\nD. Eel\nAnswer:";
const HARD: &str = "Janet has 3 times as many marbles as Tom. After giving 12 to Ann, she has 2 more than twice Tom's count. How many marbles did Janet have at first? Show each step.";

// One threshold between the two prompts' losses (about 0.02 and 0.16 with the shipped model).
const ROUTED: &str = r#"
[families.nova]
variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
router = { threshold = 0.08, fallback = "none" }
"#;

#[tokio::test]
async fn the_classifier_picks_per_prompt_and_failover_only_steps_up() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(ROUTED)).await;
    let variants = [
        "amazon.nova-micro-v1:0",
        "amazon.nova-lite-v1:0",
        "amazon.nova-pro-v1:0",
    ];
    let rank = |m: &str| variants.iter().position(|v| *v == m).unwrap();

    let easy = router
        .generate(GenerateRequest::user(EASY).family("nova").max_tokens(20))
        .await
        .unwrap();
    let hard = router
        .generate(GenerateRequest::user(HARD).family("nova").max_tokens(20))
        .await
        .unwrap();
    assert!(
        rank(&easy.decision.model) < rank(&hard.decision.model),
        "{} vs {}",
        easy.decision.model,
        hard.decision.model
    );
    assert_eq!(easy.decision.family.as_deref(), Some("nova"));
    let scored = easy.decision.reasons.iter().find_map(|r| match r {
        Reason::VariantScored { scores, chosen, .. } => Some((scores.clone(), chosen.clone())),
        _ => None,
    });
    let (scores, chosen) = scored.expect("the decision records the scores");
    assert_eq!(chosen, easy.decision.model);
    assert_eq!(scores.len(), 2);
    assert!(easy.cost_usd < hard.cost_usd * 10.0);

    // The chosen variant is down everywhere: the call steps up, never down.
    let chosen_model = easy.decision.model.clone();
    emu.add_fault(Fault::new(FaultKind::Outage).for_model(&chosen_model));
    let stepped = router
        .generate(GenerateRequest::user(EASY).family("nova").max_tokens(20))
        .await
        .unwrap();
    assert_eq!(
        rank(&stepped.decision.model),
        rank(&chosen_model) + 1,
        "{:?}",
        stepped.decision
    );
    assert!(!stepped.decision.failed_attempts.is_empty());
    assert!(
        stepped
            .decision
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::VariantStepUp { .. }))
    );

    // A minimum is honoured end to end.
    let floor = router
        .generate(
            GenerateRequest::user(EASY)
                .family("nova")
                .min_variant("amazon.nova-pro-v1:0")
                .max_tokens(20),
        )
        .await
        .unwrap();
    assert_eq!(floor.decision.model, "amazon.nova-pro-v1:0");
    emu.shutdown().await;
}

const PROMPT_ROUTER: &str = r#"
[families.claude-auto]
variants = ["anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0"]
default_variant = "anthropic.claude-sonnet-4-5-20250929-v1:0"
prompt_router = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1"
"#;
const ARN: &str = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1";

const NOVEL: &str =
    "Write a Python function that merges overlapping intervals and explain its complexity.";

/// Whether a plan of HARD (a prompt like the training data) would fall back.
fn falls_back(router: &laneway::Router) -> bool {
    router
        .plan(&GenerateRequest::user(HARD).family("nova"))
        .unwrap()
        .reasons
        .iter()
        .any(|r| {
            matches!(
                r,
                Reason::VariantScored {
                    fallback: Some(_),
                    ..
                }
            )
        })
}

#[tokio::test]
async fn calls_sent_not_plans_looked_at_move_the_familys_traffic_novelty() {
    let emu = common::emulator().await;
    let config = common::config(
        r#"
[families.nova]
variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
router = { max_strong_share = 0.3, novelty_window = 2, novelty_threshold = 0.5 }
"#,
    );
    let router = common::router_with(&emu, config).await;
    for _ in 0..5 {
        router
            .plan(&GenerateRequest::user(NOVEL).family("nova"))
            .unwrap();
    }
    assert!(!falls_back(&router), "plans alone are not traffic");
    for _ in 0..2 {
        let r = router
            .generate(GenerateRequest::user(NOVEL).family("nova").max_tokens(8))
            .await
            .unwrap();
        assert!(r.decision.reasons.iter().any(|x| matches!(
            x,
            Reason::VariantScored { novelty: Some(n), .. } if *n > 0.5
        )));
    }
    assert!(falls_back(&router), "two novel calls sent fill the window");
}

#[tokio::test]
async fn a_bedrock_prompt_router_reports_the_model_it_chose_and_is_priced_as_it() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(PROMPT_ROUTER)).await;
    let mut seen = std::collections::BTreeMap::<String, f64>::new();
    for i in 0..24 {
        let r = router
            .generate(
                GenerateRequest::user(format!("Question {i}: what changed in the last release?"))
                    .family("claude-auto")
                    .max_tokens(16),
            )
            .await
            .unwrap();
        assert_eq!(r.decision.target, ARN);
        let invoked = r
            .decision
            .invoked_model
            .clone()
            .expect("the router's choice is reported");
        assert!(
            invoked.ends_with(&r.decision.model),
            "{invoked} vs {}",
            r.decision.model
        );
        // Cost per output token tells the two models apart (Sonnet costs 3x Haiku).
        seen.insert(
            r.decision.model.clone(),
            r.cost_usd / f64::from(r.usage.input_tokens + r.usage.output_tokens * 5),
        );
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    let haiku = seen["anthropic.claude-haiku-4-5-20251001-v1:0"];
    let sonnet = seen["anthropic.claude-sonnet-4-5-20250929-v1:0"];
    assert!((sonnet / haiku - 3.0).abs() < 0.01, "{sonnet} / {haiku}");

    // Streams report it too.
    let mut s = router
        .stream(
            GenerateRequest::user("Stream a short answer")
                .family("claude-auto")
                .max_tokens(8),
        )
        .await
        .unwrap();
    let mut invoked = None;
    while let Some(ev) = futures::StreamExt::next(&mut s).await {
        if let StreamEvent::Completed(done) = ev.unwrap() {
            invoked = done.decision.invoked_model.clone();
        }
    }
    assert!(invoked.is_some());

    // The router down: the family's default variant serves through its own targets.
    emu.add_fault(Fault::new(FaultKind::Outage).for_model(ARN));
    let r = router
        .generate(
            GenerateRequest::user("Still there?")
                .family("claude-auto")
                .max_tokens(8),
        )
        .await
        .unwrap();
    assert_ne!(r.decision.target, ARN);
    assert_eq!(
        r.decision.model,
        "anthropic.claude-sonnet-4-5-20250929-v1:0"
    );
    assert_eq!(r.decision.invoked_model, None);
    assert_eq!(r.decision.failed_attempts[0].target, ARN);
    emu.shutdown().await;
}

#[test]
fn prompt_router_configuration_is_checked() {
    for (extra, needle) in [
        ("prompt_router = \"not-an-arn\"", "not a prompt router ARN"),
        (
            "prompt_router = \"arn:aws:bedrock:sa-east-1:1:default-prompt-router/anthropic.claude:1\"",
            "not a configured region",
        ),
        (
            "prompt_router = \"arn:aws:bedrock:us-east-1:1:default-prompt-router/anthropic.claude:1\"\nrouter = { threshold = 0.1 }",
            "not both",
        ),
    ] {
        let e = laneway::Config::from_toml_str(&format!(
            "[families.x]\nvariants = [\"anthropic.claude-haiku-4-5-20251001-v1:0\", \"anthropic.claude-sonnet-4-5-20250929-v1:0\"]\n{extra}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("families.x.prompt_router") && e.contains(needle),
            "{e}"
        );
    }
}

/// The default `claude` router on an agent's steps over a 1,600-token system prompt: Haiku 4.5
/// is the quality pick but caches nothing under 4,096 tokens. Once the prefix recurs, Sonnet
/// 4.5 reading it from the cache costs less per call, so the steps move there and read it.
#[tokio::test]
async fn a_recurring_prefix_moves_the_pick_to_a_variant_that_caches_it() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config("")).await;
    let system = "You are a careful operations agent. Follow the runbook exactly. ".repeat(100);
    let mut history = vec![laneway::Message::user(
        "Start: the checkout service is slow.",
    )];
    let mut served = Vec::new();
    for step in 0..8 {
        let req = GenerateRequest::new(history.clone())
            .family("claude")
            .system(system.clone())
            .task("incident")
            .max_tokens(20);
        let r = router.generate(req).await.unwrap();
        let moved = r.decision.reasons.iter().any(
            |x| matches!(x, Reason::VariantForCache { to_usd, from_usd, .. } if to_usd < from_usd),
        );
        served.push((r.decision.model.clone(), moved, r.usage.cache_read_tokens));
        history.push(laneway::Message::assistant(r.text()));
        history.push(laneway::Message::user(format!(
            "Step {step}: the query returned 42 rows."
        )));
    }
    let haiku = "anthropic.claude-haiku-4-5-20251001-v1:0";
    let sonnet = "anthropic.claude-sonnet-4-5-20250929-v1:0";
    // The first step is a one-off as far as anyone knows: Haiku, uncached.
    assert_eq!(
        (served[0].0.as_str(), served[0].1),
        (haiku, false),
        "{served:?}"
    );
    // From then on the prefix recurs: Sonnet, moved for the cache, reading it from the third.
    for (step, (model, moved, read)) in served.iter().enumerate().skip(1) {
        assert_eq!(
            (model.as_str(), *moved),
            (sonnet, true),
            "step {step}: {served:?}"
        );
        if step >= 2 {
            assert!(*read > 1_000, "step {step} reads the prefix: {served:?}");
        }
    }
    emu.shutdown().await;
}
