//! Cache accounting through the router: an agent task resending one long system prompt with the
//! caller's own checkpoint gets a cache write on its first step, reads after, and the usage
//! split, cost and savings that follow from the price book.

use crate::common;

use common::{config, emulator, router_with};
use laneway::{CachePoint, GenerateRequest, Message, SystemBlock};

/// Prompt caching on a fixed variant (each family's default): which variant a router picks for
/// a cached prefix is `core/tests/variant_routing.rs`'s subject.
const ONE_VARIANT: &str = "[families.claude]\nrouter = false\n[families.nova]\nrouter = false\n";

#[tokio::test]
async fn a_twelve_step_agent_writes_once_then_reads() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    let system = "You are a careful operations agent. Follow the runbook exactly. ".repeat(100);
    let mut history = vec![Message::user("Start: the checkout service is slow.")];
    let mut written = 0;
    for step in 0..12 {
        let mut req = GenerateRequest::new(history.clone())
            .family("claude")
            .max_tokens(20);
        req.system = vec![
            SystemBlock::Text(system.clone()),
            SystemBlock::CachePoint(CachePoint::default()),
        ];
        let r = router.generate(req).await.unwrap();
        let u = r.usage;
        let price = router.config().models[&r.decision.model].price();
        if step == 0 {
            assert!(
                u.cache_write_tokens >= 1024,
                "step 1 writes the prefix: {u:?}"
            );
            assert_eq!(u.cache_read_tokens, 0);
            written = u.cache_write_tokens;
            assert!(
                r.cache_savings_usd < 0.0,
                "a write costs more than plain input"
            );
        } else {
            assert_eq!(
                u.cache_read_tokens,
                written,
                "step {} reads the cached prefix",
                step + 1
            );
            assert_eq!(u.cache_write_tokens, 0);
            assert!(r.cache_savings_usd > 0.0);
        }
        let expected = (f64::from(u.input_tokens) * price.input_per_1k
            + f64::from(u.cache_read_tokens) * price.cache_read_per_1k.unwrap()
            + f64::from(u.cache_write_tokens) * price.cache_write_per_1k.unwrap()
            + f64::from(u.output_tokens) * price.output_per_1k)
            / 1000.0;
        let config = router.config();
        let prefix = r.decision.target.split_once('.').map(|(p, _)| p);
        let scope = prefix.and_then(|p| config.profile_scope(p));
        let profile = config.pricing.scopes.of(scope.as_ref());
        assert!(
            (r.cost_usd - expected * profile).abs() < 1e-12,
            "step {}: {} vs {}",
            step + 1,
            r.cost_usd,
            expected * profile
        );
        history.push(Message::assistant(r.text()));
        history.push(Message::user(format!(
            "Observation {step}: latency is still high."
        )));
    }
}

#[tokio::test]
async fn automatic_placement_reads_from_the_second_step_of_a_task() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    let system = "You are a careful operations agent. Follow the runbook exactly. ".repeat(100);
    let tool = laneway::Tool::new(
        "run_query",
        "Runs a read-only query against the metrics store.",
        serde_json::json!({"type": "object", "properties": {"query": {"type": "string"}}}),
    );
    let mut history = vec![Message::user("Start: the checkout service is slow.")];
    let (mut saved, mut last_read) = (0.0, 0);
    for step in 0..12 {
        let req = GenerateRequest::new(history.clone())
            .family("claude")
            .system(system.clone())
            .tool(tool.clone())
            .task("incident-42")
            .max_tokens(20);
        let r = router.generate(req).await.unwrap();
        assert!(
            r.decision
                .reasons
                .iter()
                .any(|x| matches!(x, laneway::Reason::CachePointsPlaced { .. })),
            "step {}",
            step + 1
        );
        let u = r.usage;
        if step == 0 {
            assert!(
                u.cache_write_tokens > 1024 && u.cache_read_tokens == 0,
                "{u:?}"
            );
        } else {
            assert!(
                u.cache_read_tokens > last_read,
                "step {} reads a longer prefix: {u:?}",
                step + 1
            );
            last_read = u.cache_read_tokens;
        }
        saved += r.cache_savings_usd;
        history.push(Message::assistant(r.text()));
        history.push(Message::user(format!(
            "Observation {step}: latency is still high."
        )));
    }
    assert!(saved > 0.0);
}

#[tokio::test]
async fn one_off_prompts_get_no_checkpoints_and_cost_no_more() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    for i in 0..5 {
        let req = GenerateRequest::user("Answer briefly.")
            .family("claude")
            .system(format!("Document {i}: ") + &"Unique reference material. ".repeat(300))
            .max_tokens(10);
        let r = router.generate(req).await.unwrap();
        assert_eq!(
            (r.usage.cache_write_tokens, r.usage.cache_read_tokens),
            (0, 0)
        );
        assert_eq!(r.cache_savings_usd, 0.0);
    }
}

#[tokio::test]
async fn opting_out_sends_no_checkpoint() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    let system = "Reference. ".repeat(1000);
    for _ in 0..3 {
        let req = GenerateRequest::user("q")
            .family("claude")
            .system(system.clone())
            .task("t")
            .cache(laneway::CacheMode::Off);
        let r = router.generate(req).await.unwrap();
        assert_eq!(r.usage.cache_write_tokens + r.usage.cache_read_tokens, 0);
    }
}

#[tokio::test]
async fn the_region_holding_the_cached_prefix_is_preferred() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    let system = "Shared knowledge base article. ".repeat(300);
    let req = |q: &str| {
        GenerateRequest::user(q)
            .family("claude")
            .system(system.clone())
            .task("kb")
            .max_tokens(5)
    };
    let first_choice = router.plan(&req("a")).unwrap().attempts[0].target.clone();
    emu.add_fault(
        laneway_emulator::Fault::new(laneway_emulator::FaultKind::Outage)
            .for_region(first_choice.region())
            .times(1),
    );
    let first = router.generate(req("a")).await.unwrap();
    assert_ne!(
        first.decision.region,
        first_choice.region(),
        "failed over and wrote the cache elsewhere"
    );

    let second = router.generate(req("b")).await.unwrap();
    assert_eq!(
        (
            second.decision.region.as_str(),
            second.decision.target.as_str()
        ),
        (
            first.decision.region.as_str(),
            first.decision.target.as_str()
        )
    );
    assert!(
        second
            .decision
            .reasons
            .iter()
            .any(|r| matches!(r, laneway::Reason::CacheAffinity { won: true, .. }))
    );
    assert!(second.usage.cache_read_tokens > 0);
}

/// A counter that sees no tokens anywhere: nothing is ever long enough to cache.
#[derive(Debug)]
struct Nothing;

impl laneway::TokenCounter for Nothing {
    fn count(&self, _: &str) -> u32 {
        0
    }
}

#[tokio::test]
async fn a_plugged_in_token_counter_drives_placement() {
    let emu = emulator().await;
    let router = laneway::Router::builder()
        .config(config(ONE_VARIANT))
        .endpoint_url(emu.url())
        .static_credentials("LANEWAYTESTKEY", "LANEWAYTESTSECRET")
        .token_counter(std::sync::Arc::new(Nothing))
        .build()
        .await
        .unwrap();
    let req = GenerateRequest::user("q")
        .family("claude")
        .system("Reference. ".repeat(1000))
        .task("t");
    assert!(router.plan(&req).unwrap().cache.checkpoints.is_empty());
    let debug = format!(
        "{:?}",
        laneway::Router::builder().static_credentials("AKID", "SUPERSECRET")
    );
    assert!(!debug.contains("SUPERSECRET"), "{debug}");
}

#[tokio::test]
async fn cache_totals_answer_how_many_input_tokens_are_new() {
    let emu = emulator().await;
    let router = router_with(&emu, config(ONE_VARIANT)).await;
    let system = "Shared instructions for every step of the task. ".repeat(200);
    let mut history = vec![Message::user("begin")];
    for step in 0..4 {
        let req = GenerateRequest::new(history.clone())
            .family("claude")
            .system(system.clone())
            .task("t")
            .max_tokens(5);
        let r = router.generate(req).await.unwrap();
        history.push(Message::assistant(r.text()));
        history.push(Message::user(format!("next {step}")));
    }
    router
        .generate(
            GenerateRequest::user("unrelated")
                .family("nova")
                .max_tokens(5),
        )
        .await
        .unwrap();
    let totals = router.cache_totals();
    let claude = totals["claude"];
    assert_eq!(claude.calls, 4);
    assert!(claude.cache_read_tokens > claude.new_tokens, "{claude:?}");
    assert!(claude.new_share() < 0.2, "{}", claude.new_share());
    assert!(claude.savings_usd > 0.0);
    assert_eq!(totals["nova"].calls, 1);
    assert_eq!(totals["nova"].new_share(), 1.0);
}

/// An agent step on Nova Lite: a tool list and a tool result, with the caller's checkpoints
/// after the tool list and after the tool result, where Nova rejects them.
fn nova_agent_step() -> laneway::GenerateRequest {
    serde_json::from_value(serde_json::json!({
        "model": { "model": "amazon.nova-lite-v1:0" },
        "system": [{ "text": "You are a support agent. ".repeat(400) }, { "cache_point": {} }],
        "tools": [
            { "spec": { "name": "lookup", "input_schema": { "type": "object", "properties": { "id": { "type": "string" } } } } },
            { "cache_point": {} },
        ],
        "messages": [
            { "role": "user", "content": [{ "text": "Where is order 42?" }] },
            { "role": "assistant", "content": [{ "tool_use": { "id": "t1", "name": "lookup", "input": { "id": "42" } } }] },
            { "role": "user", "content": [
                { "tool_result": { "tool_use_id": "t1", "content": [{ "text": "shipped" }], "is_error": false } },
                { "cache_point": {} },
            ] },
        ],
        "inference": { "max_tokens": 16 },
    }))
    .unwrap()
}

#[tokio::test]
async fn the_planner_keeps_novas_checkpoint_rules_and_the_emulator_enforces_them() {
    use laneway::{Reason, plan::CacheChange};
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let r = router.generate(nova_agent_step()).await.unwrap();
    let removed: Vec<_> = r
        .decision
        .reasons
        .iter()
        .filter_map(|x| match x {
            Reason::CachePointsChanged { why, .. } => Some(*why),
            _ => None,
        })
        .collect();
    assert!(removed.contains(&CacheChange::NoToolCache), "{removed:?}");
    assert!(
        removed.contains(&CacheChange::AfterToolResult),
        "{removed:?}"
    );

    // A configuration that gets Nova's rules wrong sends the checkpoints, and the emulator
    // refuses them as Bedrock does.
    let wrong = common::router_with(
        &emu,
        common::config(
            "[models.\"amazon.nova-lite-v1:0\"]\nprompt_cache = { min_tokens = 1000, ttls = [\"5m\"], tools = true, after_tool_result = true }\n",
        ),
    )
    .await;
    let err = wrong.generate(nova_agent_step()).await.unwrap_err();
    assert_eq!(err.kind(), laneway::ErrorKind::Validation, "{err}");
    assert!(
        err.to_string()
            .contains("extraneous key [cachePoint] is not permitted"),
        "{err}"
    );
}

/// GPT on the Responses API: Laneway drives the prompt cache in explicit mode. An agent task
/// writes its system prompt once at a breakpoint and reads it after; a one-off prompt, which
/// would pay the implicit breakpoint's write at 1.25x, is sent with no breakpoint and writes
/// nothing. Left to the service (no caching rules for the model), every turn writes its tail,
/// and the one-off prompt is written for nothing.
#[tokio::test]
async fn gpt_on_the_responses_api_caches_at_laneways_breakpoints_in_explicit_mode() {
    const ASTRA: &str = "openai.gpt-6-astra";
    // Mantle's Responses API is where Astra caches.
    let mantle_only =
        format!("[models.\"{ASTRA}\"]\nconverse = false\nopenai = {{ runtime = [] }}\n");
    let emu = emulator().await;
    let system = "You are a careful operations agent. Follow the runbook exactly. ".repeat(100);
    let step = |history: &[Message], task: Option<&str>| {
        let mut req = GenerateRequest::new(history.to_vec())
            .model(ASTRA)
            .system(system.clone())
            .max_tokens(20);
        req.task_id = task.map(Into::into);
        req
    };
    let agent = |router: laneway::Router| {
        let step = &step;
        async move {
            let mut history = vec![Message::user("Start: the checkout service is slow.")];
            let mut usages = Vec::new();
            for n in 0..4 {
                let r = router
                    .generate(step(&history, Some("incident-7")))
                    .await
                    .unwrap();
                assert_eq!(r.decision.api, laneway::Api::OpenAiMantle);
                usages.push(r.usage);
                history.push(Message::assistant(r.text()));
                history.push(Message::user(format!("Step {n}: p99 is 2.{n} s.")));
            }
            usages
        }
    };

    let laneway = router_with(&emu, config(&mantle_only)).await;
    let explicit = agent(laneway.clone()).await;
    assert!(explicit[0].cache_write_tokens >= 1024, "{:?}", explicit[0]);
    assert_eq!(explicit[0].cache_read_tokens, 0);
    for u in &explicit[1..] {
        assert!(
            u.cache_read_tokens >= explicit[0].cache_write_tokens,
            "{u:?}"
        );
    }
    // A one-off prompt (no task, never seen): no breakpoint pays, and explicit mode writes none.
    let one_off = || {
        GenerateRequest::user("A question asked once.")
            .model(ASTRA)
            .system("A different, one-off preamble. ".repeat(300))
            .max_tokens(20)
    };
    let once = laneway.generate(one_off()).await.unwrap();
    assert_eq!(
        (once.usage.cache_write_tokens, once.usage.cache_read_tokens),
        (0, 0)
    );

    // The service's own default: an implicit breakpoint at the newest message, written every turn.
    let emu = emulator().await;
    let service = router_with(
        &emu,
        config(&format!("{mantle_only}prompt_cache = {{ apis = [] }}\n")),
    )
    .await;
    let implicit = agent(service.clone()).await;
    assert!(
        implicit.iter().all(|u| u.cache_write_tokens > 0),
        "{implicit:?}"
    );
    let once = service.generate(one_off()).await.unwrap();
    assert!(
        once.usage.cache_write_tokens > 0,
        "the implicit breakpoint writes a one-off prompt"
    );
    // Each later turn reads what the turn before wrote at its newest message.
    assert!(
        implicit[1..].iter().all(|u| u.cache_read_tokens > 0),
        "{implicit:?}"
    );
}

/// What the router says each call cost adds up to what the emulator bills at the model cards'
/// prices: tiers (priority, flex, Ultrafast), profile scopes, 5-minute, 30-minute and 1-hour
/// cache writes and reads. Hedging is off: a lost hedge is billed by the service and counted
/// apart by the router (`laneway_hedges_total`), not in the winner's cost.
#[tokio::test]
async fn the_costs_the_router_reports_add_up_to_the_emulators_bill() {
    use laneway::{CacheTtl, ServiceTier, SloClass};
    const LITE: &str = "amazon.nova-lite-v1:0";
    const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
    const ASTRA: &str = "openai.gpt-6-astra";
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config(&format!(
            "[routing.hedge]\nenabled = false\n\
             [models.\"{ASTRA}\"]\nconverse = false\nopenai = {{ runtime = [] }}\n"
        )),
    )
    .await;
    let mut reported = 0.0;
    let mut calls = 0;
    let mut run = async |req: GenerateRequest| {
        let r = router.generate(req).await.unwrap();
        reported += r.cost_usd;
        calls += 1;
        r
    };
    for tier in [
        ServiceTier::PRIORITY,
        ServiceTier::STANDARD,
        ServiceTier::FLEX,
    ] {
        run(GenerateRequest::user("Price me.")
            .model(LITE)
            .tier(tier)
            .max_tokens(30))
        .await;
    }
    let system = "Runbook: check the dashboards, the logs, then the deploys. ".repeat(120);
    for (step, ttl) in [CacheTtl::FiveMinutes, CacheTtl::OneHour, CacheTtl::OneHour]
        .into_iter()
        .enumerate()
    {
        let mut req = GenerateRequest::user(format!("Step {step}."))
            .model(SONNET)
            .max_tokens(30);
        req.system = vec![
            SystemBlock::Text(system.clone()),
            SystemBlock::CachePoint(CachePoint { ttl: Some(ttl) }),
        ];
        run(req).await;
    }
    let ultrafast = ServiceTier::named("ultrafast").unwrap();
    let mut history = vec![Message::user("Start.")];
    for step in 0..3 {
        let mut req = GenerateRequest::new(history.clone())
            .model(ASTRA)
            .system(system.clone())
            .max_tokens(30)
            .slo_class(SloClass::Interactive)
            .task("bill-check");
        if step == 1 {
            req = req.tier(ultrafast);
        }
        let r = run(req).await;
        history.push(Message::assistant(r.text()));
        history.push(Message::user(format!("Next {step}.")));
    }
    let rows = emu.counters();
    assert!(
        rows.iter()
            .any(|r| r.tier == "ultrafast" && r.counter.cache_read_tokens > 0)
    );
    assert!(
        rows.iter()
            .any(|r| r.target.contains("sonnet") && r.counter.cache_write_tokens > 0)
    );
    let billed = emu.bill();
    assert!(billed > 0.0);
    assert!(
        (reported - billed).abs() <= 1e-9 * calls as f64 + 1e-6 * billed,
        "the router reports ${reported:.9}, the emulator bills ${billed:.9}"
    );
}
