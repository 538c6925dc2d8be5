//! The SLO engine end to end against the emulator: outages, throttle storms and recovery,
//! reserved overflow, SageMaker cold starts, deadline escalation, hedging, continuation, and
//! the retry budget.

use crate::common;

use std::time::Duration;

use common::{config, emulator, requests_seen, router_with};
use futures::StreamExt;
use laneway::plan::OverflowCause;
use laneway::{
    Error, ErrorKind, GenerateRequest, GenerateResponse, Reason, Router, ServiceTier, Slo,
    SloClass, StreamEvent,
};
use laneway_emulator::{Fault, FaultKind};

async fn stream_to_end(
    router: &Router,
    req: GenerateRequest,
) -> (Vec<StreamEvent>, Result<GenerateResponse, Error>) {
    let mut s = router.stream(req).await.unwrap();
    let mut events = Vec::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(StreamEvent::Completed(done)) => return (events, Ok(*done)),
            Ok(other) => events.push(other),
            Err(e) => return (events, Err(e)),
        }
    }
    panic!("the stream ended without Completed or an error");
}

#[tokio::test]
async fn a_region_failing_mid_run_loses_no_request() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    let req = |i: usize| {
        GenerateRequest::user(format!("job {i}"))
            .family("nova")
            .max_tokens(10)
    };
    let mut regions_after = std::collections::BTreeSet::new();
    for i in 0..60 {
        if i == 20 {
            emu.add_fault(Fault::new(FaultKind::Outage).for_region("us-east-1"));
        }
        let r = router
            .generate(req(i))
            .await
            .unwrap_or_else(|e| panic!("request {i} failed: {e}"));
        if i >= 20 {
            regions_after.insert(r.decision.region.clone());
        }
    }
    assert!(!regions_after.contains("us-east-1"), "{regions_after:?}");
}

#[tokio::test]
async fn a_throttle_storm_shifts_traffic_and_recovery_brings_it_back() {
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config(
            "[routing.breaker]\nfailure_threshold = 2\nopen_for = 300.0\nhalf_open_probes = 1\n",
        ),
    )
    .await;
    let req = || {
        GenerateRequest::user("summarise")
            .model("amazon.nova-lite-v1:0")
            .max_tokens(5)
    };
    assert_eq!(
        router.generate(req()).await.unwrap().decision.region,
        "us-east-1"
    );

    let storm = emu.add_fault(Fault::new(FaultKind::Throttle).for_region("us-east-1"));
    let mut shifted_after = None;
    for call in 1..=20 {
        let r = router.generate(req()).await.unwrap();
        if r.decision.region != "us-east-1" && r.decision.attempts_sent == 1 {
            shifted_after.get_or_insert(call);
        }
    }
    let shifted_after =
        shifted_after.expect("traffic moved off the throttled region without trying it first");
    // Two throttles open a breaker, and us-east-1 has two targets (the model and its US
    // profile), each tried first by one call at a time: by the fifth call both are open.
    assert!(shifted_after <= 5, "took {shifted_after} calls");

    emu.remove_fault(storm);
    // The breaker's open period (300 ms) ends: the plan stops demoting us-east-1 as open.
    common::wait_until("us-east-1's breaker left its open period", || {
        !common::breaker_open(&router, &req(), "us-east-1", None)
    })
    .await;
    let mut back = false;
    for _ in 0..5 {
        let r = router.generate(req()).await.unwrap();
        back |= r.decision.region == "us-east-1" && r.decision.attempts_sent == 1;
    }
    assert!(back, "half-open probes returned the traffic to us-east-1");
}

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// The built-in world with a reservation on Claude Sonnet 4.5 of 1,000 output tokens per
/// minute, where a minute lasts 3 s (time scale 0.05), and the router's matching configuration
/// (reserved calls priced at half the standard rate, so that the served tier shows in the cost).
async fn reserved_world() -> (laneway_emulator::Emulator, Router) {
    let mut scenario = laneway_emulator::Scenario::builtin("fast").unwrap();
    scenario.time_scale = 0.05;
    let sonnet = scenario.models.iter_mut().find(|m| m.id == SONNET).unwrap();
    sonnet.reservation = Some(laneway_emulator::ReservationSpec {
        input_tokens_per_minute: 10_000_000,
        output_tokens_per_minute: 1_000,
    });
    sonnet.performance.ttft_median_ms = 20.0;
    sonnet.performance.ttft_p99_ms = 40.0;
    sonnet.performance.tokens_per_second = 2_000.0;
    let emu = laneway_emulator::Emulator::start(scenario).await.unwrap();
    let router = router_with(
        &emu,
        config(&format!(
            "[routing]\nminute = 3000.0\n[pricing.tiers]\nreserved = 0.5\n\
             [models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = 10000000, output_tokens_per_minute = 1000 }}\n"
        )),
    )
    .await;
    (emu, router)
}

#[tokio::test]
async fn bedrock_overflows_the_reservation_and_the_served_tier_is_the_truth() {
    let (emu, router) = reserved_world().await;
    let ask = |i: usize| {
        GenerateRequest::user(format!("ticket {i}"))
            .model(SONNET)
            .max_tokens(50)
    };
    // One call at a time: 20 calls of 50 output tokens fill the reservation.
    let mut served = Vec::new();
    for i in 0..30 {
        served.push(router.generate(ask(i)).await.unwrap());
    }
    let (reserved, overflowed): (Vec<_>, Vec<_>) = served
        .iter()
        .partition(|r| r.decision.served_tier == Some(ServiceTier::RESERVED));
    let reserved_tokens: u32 = reserved.iter().map(|r| r.usage.output_tokens).sum();
    assert_eq!(
        reserved_tokens, 1_000,
        "the emulator's reservation held 1,000 tokens"
    );
    for r in &overflowed {
        assert_eq!(
            r.decision.tier,
            Some(ServiceTier::RESERVED),
            "sent as reserved"
        );
        assert_eq!(r.decision.served_tier, Some(ServiceTier::STANDARD));
        assert!(r.decision.reasons.iter().any(|x| matches!(
            x,
            Reason::ReservedOverflow {
                cause: OverflowCause::Served | OverflowCause::Full,
                ..
            }
        )));
    }
    assert!(overflowed.len() >= 10, "{} overflowed", overflowed.len());
    // Priced at the tier that served: same usage, half the price when reserved.
    let per_token = |r: &GenerateResponse| {
        r.cost_usd / f64::from(r.usage.total_input_tokens() + r.usage.output_tokens)
    };
    let (a, b) = (per_token(reserved[0]), per_token(overflowed[0]));
    assert!(b > a * 1.5, "standard {b} vs reserved {a}");
    // Recorded at the tier that served.
    let metrics = router.metrics();
    let lane_tokens = |tier| {
        metrics
            .lanes
            .iter()
            .filter(|(k, _)| k.tier == Some(tier))
            .map(|(_, l)| l.output_tokens)
            .sum::<u64>()
    };
    assert_eq!(lane_tokens(ServiceTier::RESERVED), 1_000);
    assert_eq!(
        lane_tokens(ServiceTier::STANDARD),
        overflowed
            .iter()
            .map(|r| u64::from(r.usage.output_tokens))
            .sum::<u64>()
    );
    let emulator_reserved: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "reserved")
        .map(|c| c.counter.output_tokens)
        .sum();
    assert_eq!(emulator_reserved, 1_000, "the emulator saw the same split");
    // Learned: the next plan expects the reservation to be full.
    let plan = router.plan(&ask(99)).unwrap();
    assert!(
        plan.reasons.iter().any(|x| matches!(
            x,
            Reason::ReservedOverflow {
                cause: OverflowCause::Full,
                ..
            }
        )),
        "{:?}",
        plan.reasons
    );
}

#[tokio::test]
async fn concurrent_reserved_calls_split_at_the_reservation_as_bedrock_splits_them() {
    let (emu, router) = reserved_world().await;
    let results = futures::future::join_all((0..40).map(|i| {
        router.generate(
            GenerateRequest::user(format!("ticket {i}"))
                .model(SONNET)
                .max_tokens(50),
        )
    }))
    .await;
    let mut reserved = 0u32;
    for r in results {
        let r = r.unwrap();
        if r.decision.served_tier == Some(ServiceTier::RESERVED) {
            reserved += r.usage.output_tokens;
        }
    }
    assert!((900..=1_000).contains(&reserved), "reserved {reserved}");
    let emulator_reserved: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "reserved")
        .map(|c| c.counter.output_tokens)
        .sum();
    assert_eq!(emulator_reserved, u64::from(reserved));
}

#[tokio::test]
async fn a_throttled_reserved_call_fails_over_like_any_throttle() {
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config(&format!("[models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = 1000000, output_tokens_per_minute = 100000 }}\n")),
    )
    .await;
    // Bedrock throttles a reserved call only when the on-demand tier it overflows to is full
    // too: retrying the same target at standard would meet the same quota.
    emu.add_fault(
        Fault::new(FaultKind::Throttle)
            .for_tier("reserved")
            .times(1),
    );
    let r = router
        .generate(GenerateRequest::user("hi").model(SONNET).max_tokens(5))
        .await
        .unwrap();
    let failed = &r.decision.failed_attempts[0];
    assert_ne!(
        (r.decision.target.as_str(), r.decision.region.as_str()),
        (failed.target.as_str(), failed.region.as_str()),
        "the next target, not the same one at standard"
    );
    assert!(
        !r.decision
            .reasons
            .iter()
            .any(|x| matches!(x, Reason::ReservedOverflow { .. }))
    );
}

#[tokio::test]
async fn a_cold_sagemaker_primary_falls_back_and_traffic_returns_when_ready() {
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config(
            "[routing.breaker]\nfailure_threshold = 2\nopen_for = 200.0\nhalf_open_probes = 1\n\
             [models.\"ha-llm\"]\nprovider = \"sagemaker\"\nprice = { input_per_1k = 0.0002, output_per_1k = 0.0006 }\n\
             endpoints = [{ name = \"laneway-demo-llm\", region = \"us-east-1\", format = \"tgi\" }, \
             { name = \"laneway-demo-chat\", region = \"us-east-1\", format = \"openai_chat\", inference_component = \"llama-3-8b-ic\" }]\n",
        ),
    )
    .await;
    let req = || {
        GenerateRequest::user("classify")
            .model("ha-llm")
            .max_tokens(5)
    };
    let cold = emu.add_fault(Fault::new(FaultKind::ModelNotReady).for_model("laneway-demo-llm"));
    for _ in 0..6 {
        let r = router.generate(req()).await.unwrap();
        assert_eq!(r.decision.endpoint.as_deref(), Some("laneway-demo-chat"));
    }
    let primary_tries: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.target == "laneway-demo-llm")
        .map(|c| c.counter.requests)
        .sum();
    assert!(
        primary_tries <= 3,
        "the open breaker kept traffic off the cold endpoint ({primary_tries} tries)"
    );

    emu.remove_fault(cold);
    common::wait_until("the primary's breaker left its open period", || {
        !common::breaker_open(&router, &req(), "us-east-1", Some("laneway-demo-llm"))
    })
    .await;
    let r = router.generate(req()).await.unwrap();
    assert_eq!(
        r.decision.endpoint.as_deref(),
        Some("laneway-demo-llm"),
        "back on the primary once it is ready"
    );
}

#[tokio::test]
async fn sagemaker_falls_back_to_a_bedrock_family() {
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config(
            "[models.\"llm-with-fallback\"]\nprovider = \"sagemaker\"\nfallback_family = \"nova\"\n\
             endpoints = [{ name = \"laneway-demo-llm\", region = \"us-east-1\", format = \"tgi\" }]\n\
             price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }\n",
        ),
    )
    .await;
    emu.add_fault(Fault::new(FaultKind::Outage).for_model("laneway-demo-llm"));
    let r = router
        .generate(
            GenerateRequest::user("hi")
                .model("llm-with-fallback")
                .max_tokens(5),
        )
        .await
        .unwrap();
    assert_eq!(r.decision.model, "amazon.nova-lite-v1:0");
    assert_eq!(r.decision.family.as_deref(), Some("nova"));
}

#[tokio::test]
async fn a_flex_call_near_its_deadline_escalates_to_standard() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    let background = |deadline: Option<Duration>| {
        GenerateRequest::user("tag this")
            .family("nova")
            .max_tokens(20)
            .slo(Slo {
                class: SloClass::Background,
                ttft_target: None,
                deadline,
            })
    };
    // Learn flex's speed first.
    for _ in 0..3 {
        assert_eq!(
            router
                .generate(background(None))
                .await
                .unwrap()
                .decision
                .tier,
            Some(ServiceTier::FLEX)
        );
    }
    let roomy = router
        .generate(background(Some(Duration::from_secs(30))))
        .await
        .unwrap();
    assert_eq!(roomy.decision.tier, Some(ServiceTier::FLEX));
    let tight = router
        .plan(&background(Some(Duration::from_micros(100))))
        .unwrap();
    assert_eq!(tight.attempts[0].tier, Some(ServiceTier::STANDARD));
    assert!(
        tight
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::DeadlineEscalation { .. }))
    );
    // Sent, no tier meets a 100 us deadline: the call ends by it, saying so.
    let err = router
        .generate(background(Some(Duration::from_micros(100))))
        .await
        .unwrap_err();
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(attempts.last().unwrap().code, "DeadlineExceeded", "{err}");
}

/// Delays the first token of the next call to the request's first planned target by 5 s.
fn stall_first_target(
    emu: &laneway_emulator::Emulator,
    router: &Router,
    req: &GenerateRequest,
) -> laneway::Target {
    let first = router.plan(req).unwrap().attempts[0].target.clone();
    emu.add_fault(Fault {
        delay_ms: Some(5_000),
        ..Fault::new(FaultKind::SlowFirstToken)
            .for_region(first.region())
            .times(1)
    });
    first
}

#[tokio::test]
async fn a_hedge_beats_a_stalled_first_token_and_the_loser_is_cancelled() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    let req = GenerateRequest::user("quick answer please")
        .model("amazon.nova-lite-v1:0")
        .max_tokens(10)
        .slo(Slo {
            class: SloClass::Interactive,
            ttft_target: Some(Duration::from_millis(150)),
            deadline: None,
        });
    let first = stall_first_target(&emu, &router, &req);
    let (_, done) = stream_to_end(&router, req).await;
    let done = done.unwrap();
    let hedge = done.decision.hedge.clone().expect("a hedge fired");
    assert!(hedge.hedge_won, "{hedge:?}");
    // The hedge went to another region: a late first token may be the region's fault.
    assert_ne!(done.decision.region, first.region());
    // The stalled attempt was not waited for: it was cancelled on the wire.
    let cancelled = || -> u64 {
        emu.counters()
            .iter()
            .filter(|c| c.target == first.id() && c.region == first.region())
            .map(|c| c.counter.cancelled)
            .sum()
    };
    common::wait_until("the emulator saw the loser cancelled", || cancelled() >= 1).await;
    assert_eq!(cancelled(), 1, "{:?}", emu.counters());
}

#[tokio::test]
async fn generate_hedges_too() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    let req = GenerateRequest::user("hi")
        .family("nova")
        .max_tokens(5)
        .slo(Slo {
            class: SloClass::Interactive,
            ttft_target: Some(Duration::from_millis(100)),
            deadline: None,
        });
    stall_first_target(&emu, &router, &req);
    let r = router.generate(req).await.unwrap();
    assert!(r.decision.hedge.unwrap().hedge_won);
    assert!(r.timings.ttft.is_some());
}

#[tokio::test]
async fn an_opted_in_stream_continues_on_the_next_target_without_duplicating_text() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    emu.add_fault(Fault::break_after(4).times(1));
    let req = GenerateRequest::user("write a paragraph")
        .family("nova")
        .max_tokens(12)
        .continue_on_interrupt(true);
    let (events, done) = stream_to_end(&router, req).await;
    let done = done.unwrap();
    let mut text = String::new();
    let mut seam = None;
    for (i, ev) in events.iter().enumerate() {
        match ev {
            StreamEvent::TextDelta { text: t, .. } => text.push_str(t),
            StreamEvent::Continued {
                delivered, kind, ..
            } => {
                assert_eq!(delivered.output_tokens, 4);
                assert_eq!(*kind, ErrorKind::Internal);
                seam = Some(i);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seam,
        Some(4),
        "the seam comes right after the four delivered deltas"
    );
    assert_eq!(
        done.text(),
        text,
        "the response holds exactly what was streamed, once"
    );
    // The continuation went on from the four delivered tokens (the emulator checks that its
    // prefill is the start of its answer): the whole answer is what one unbroken call gives.
    assert_eq!(done.usage.output_tokens, 12);
    assert_eq!(done.decision.failed_attempts.len(), 1);
    let unbroken = router
        .generate(
            GenerateRequest::user("write a paragraph")
                .model(done.decision.model.as_str())
                .max_tokens(12),
        )
        .await
        .unwrap();
    assert_eq!(unbroken.text(), text);
    let counters = emu.counters();
    assert_eq!(counters.iter().map(|r| r.counter.continued).sum::<u64>(), 1);
    assert_eq!(
        counters
            .iter()
            .map(|r| r.counter.continuation_mismatches)
            .sum::<u64>(),
        0
    );
}

#[tokio::test]
async fn the_retry_budget_bounds_total_attempts_under_a_total_outage() {
    let emu = emulator().await;
    let router = router_with(
        &emu,
        config("[routing.budget]\nratio = 0.1\nmin_per_second = 0.1\nwindow = 60000.0\n[routing.retry]\nbackoff = 5.0\n"),
    )
    .await;
    emu.add_fault(Fault::new(FaultKind::Outage));
    let calls = 100;
    for i in 0..calls {
        let err = router
            .generate(GenerateRequest::user(format!("{i}")).family("nova"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Unavailable | ErrorKind::AllTargetsFailed
            ),
            "{err}"
        );
    }
    let seen = requests_seen(&emu);
    // Within one 60 s window: 10% of the calls plus 0.1/s x 60 s.
    let bound = calls + (0.1 * calls as f64 + 0.1 * 60.0).ceil() as u64;
    assert!(
        seen <= bound,
        "{seen} requests for {calls} calls; budget bound {bound}"
    );
    assert!(seen > calls, "failover still happened within the budget");
}

const LITE: &str = "amazon.nova-lite-v1:0";

/// The built-in world where a minute lasts a minute and Nova Lite answers fast, each of its
/// targets with an on-demand quota of 150 tokens a minute; a router with (`aware`) or without
/// that quota in its configuration.
async fn quota_world(aware: bool) -> (laneway_emulator::Emulator, Router) {
    let emu = common::real_minute_emulator(LITE, |m| m.performance.tokens_per_minute = 150).await;
    let quota = if aware {
        "quota = { tokens_per_minute = 150, profile_tokens_per_minute = 150 }\n"
    } else {
        ""
    };
    let router = router_with(&emu, config(&format!("[models.\"{LITE}\"]\n{quota}"))).await;
    (emu, router)
}

#[tokio::test]
async fn quota_aware_routing_moves_to_another_target_before_the_quota_is_hit() {
    // Each call holds input plus 100 (max_tokens) at admission and settles on its answer of
    // 40 to 100 tokens: after one call, a target's 150 tokens have no room for another.
    let ask = |i: usize| {
        GenerateRequest::user(format!("Summarise ticket {i}"))
            .model(LITE)
            .max_tokens(100)
    };
    let (_emu, reactive) = quota_world(false).await;
    let first = reactive.generate(ask(1)).await.unwrap();
    let second = reactive.generate(ask(2)).await.unwrap();
    assert_eq!(
        second.decision.failed_attempts[0].kind,
        ErrorKind::Throttled,
        "without quotas the router learns from a 429"
    );
    assert_eq!(
        second.decision.failed_attempts[0].region,
        first.decision.region
    );

    let (_emu, aware) = quota_world(true).await;
    let first = aware.generate(ask(1)).await.unwrap();
    let plan = aware.plan(&ask(2)).unwrap();
    assert!(
        plan.reasons.iter().any(|r| matches!(
            r,
            Reason::QuotaFull { region, .. } if **region == *first.decision.region
        )),
        "{:?}",
        plan.reasons
    );
    let second = aware.generate(ask(2)).await.unwrap();
    assert!(
        second.decision.failed_attempts.is_empty(),
        "{:?}",
        second.decision.failed_attempts
    );
    assert_ne!(
        (&second.decision.target, &second.decision.region),
        (&first.decision.target, &first.decision.region)
    );
}

#[tokio::test]
async fn application_inference_profiles_are_targets_priced_and_recorded_as_their_model() {
    let emu = emulator().await;
    let east =
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/support-nova-lite";
    let west = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/support-nova-lite-west";
    let tagged = router_with(
        &emu,
        config(&format!(
            "[models.\"{LITE}\"]\napplication_profiles = [{{ arn = \"{east}\" }}, {{ arn = \"{west}\", wraps = \"us\" }}]\n"
        )),
    )
    .await;
    let plain = router_with(&emu, config("")).await;
    let ask = || {
        GenerateRequest::user("Tag my costs")
            .model(LITE)
            .max_tokens(12)
    };
    let r = tagged.generate(ask()).await.unwrap();
    assert_eq!(r.decision.target, east);
    assert_eq!(r.decision.model, LITE);
    assert_eq!(r.decision.region, "us-east-1");
    let same = plain.generate(ask()).await.unwrap();
    assert_eq!(same.decision.target, LITE);
    assert_eq!(r.usage, same.usage, "served by the model it wraps");
    assert!(
        (r.cost_usd - same.cost_usd).abs() < 1e-12,
        "priced as the model"
    );
    assert!(
        tagged
            .metrics()
            .lanes
            .iter()
            .any(|(k, l)| k.target == east && k.model == LITE && l.requests == 1)
    );
    // When the first is down, the next profile, in its own region.
    emu.add_fault(Fault::new(FaultKind::Outage).for_region("us-east-1"));
    let r = tagged.generate(ask()).await.unwrap();
    assert_eq!(
        (r.decision.target.as_str(), r.decision.region.as_str()),
        (west, "us-west-2")
    );
    // An ARN the account does not have is refused by the service, by name.
    let unknown = router_with(
        &emu,
        config(&format!(
            "[models.\"{LITE}\"]\napplication_profiles = [{{ arn = \"arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/nope\" }}]\n"
        )),
    )
    .await;
    let err = unknown.generate(ask()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    // A malformed ARN is a configuration error.
    let bad = laneway::Config::from_toml_str(&format!(
        "[models.\"{LITE}\"]\napplication_profiles = [{{ arn = \"arn:aws:bedrock:us-east-1:1:inference-profile/x\" }}]\n"
    ))
    .unwrap_err();
    assert!(
        bad.to_string().contains("application_profiles[0].arn"),
        "{bad}"
    );
}

/// A tier is data: declared in the configuration with its wire spelling, price and prior,
/// named by an SLO class's preference, it is sent to the models that take it, read back as
/// served and priced at its multiplier; models that do not take it get the class's next tier.
#[tokio::test]
async fn a_tier_declared_in_configuration_is_routed_to_served_and_priced() {
    const LITE: &str = "amazon.nova-lite-v1:0";
    const PRO: &str = "amazon.nova-pro-v1:0";
    let mut scenario = laneway_emulator::Scenario::builtin("fast").unwrap();
    let lite = scenario.models.iter_mut().find(|m| m.id == LITE).unwrap();
    lite.tiers.insert("turbo_wire".into());
    let emu = laneway_emulator::Emulator::start(scenario).await.unwrap();
    let router = router_with(
        &emu,
        config(&format!(
            "[tiers.turbo]\nconverse = \"turbo_wire\"\n\
             [pricing.tiers]\nturbo = 3.0\n\
             [routing.priors.turbo]\nttft = 200\nttft_p99 = 900\ngap_p99 = 400\ntokens_per_second = 150.0\n\
             [slo_tiers]\ninteractive = [\"turbo\", \"priority\"]\n\
             [models.\"{LITE}\"]\ntiers = [\"priority\", \"standard\", \"flex\", \"turbo\"]\n"
        )),
    )
    .await;
    let turbo = ServiceTier::named("turbo").unwrap();
    let ask = |model: &str, class| {
        GenerateRequest::user("what is a tier?")
            .model(model)
            .max_tokens(20)
            .slo_class(class)
    };

    let fast = router
        .generate(ask(LITE, SloClass::Interactive))
        .await
        .unwrap();
    assert_eq!(fast.decision.tier, Some(turbo));
    assert_eq!(
        fast.decision.served_tier,
        Some(turbo),
        "read back from serviceTier"
    );
    assert!(fast.decision.reasons.iter().any(|r| matches!(
        r,
        Reason::TierFromSlo { class: SloClass::Interactive, tier } if *tier == turbo
    )));
    let sent: Vec<_> = emu
        .counters()
        .into_iter()
        .filter(|c| c.target == LITE && c.counter.ok > 0)
        .map(|c| c.tier)
        .collect();
    assert_eq!(
        sent,
        ["turbo_wire"],
        "the wire spelling is the declared one"
    );
    // Priced at its multiplier: three times what the same tokens cost at standard.
    let config = router.config();
    let price = config.models[LITE].price();
    let at = |tier| {
        laneway::cost::cost_of_call(
            price,
            &config.pricing,
            &fast.usage,
            laneway::cost::Served {
                region: Some(&fast.decision.region),
                tier: Some(tier),
                profile: None,
            },
        )
    };
    assert!(
        (fast.cost_usd - at(turbo)).abs() < 1e-12,
        "{} vs {}",
        fast.cost_usd,
        at(turbo)
    );
    assert!((at(turbo) / at(ServiceTier::STANDARD) - 3.0).abs() < 1e-9);

    // A model that does not take it is never sent it: the class's next tier, said so.
    let pro = router
        .generate(ask(PRO, SloClass::Interactive))
        .await
        .unwrap();
    assert_eq!(pro.decision.tier, Some(ServiceTier::PRIORITY));
    assert!(pro.decision.reasons.iter().any(|r| matches!(
        r,
        Reason::TierUnsupported { wanted, chosen, .. }
            if *wanted == turbo && *chosen == ServiceTier::PRIORITY
    )));
    let forced = router
        .generate(ask(PRO, SloClass::Standard).tier(turbo))
        .await
        .unwrap_err();
    assert!(
        forced.to_string().contains("does not offer tier turbo"),
        "{forced}"
    );
    assert!(
        emu.counters()
            .iter()
            .all(|c| c.target != PRO || c.tier != "turbo_wire")
    );

    // A configuration that names a tier it does not declare is refused by name.
    let err = laneway::Config::from_toml_str("[slo_tiers]\nbackground = \"warp9\"\n").unwrap_err();
    assert!(err.to_string().contains("warp9"), "{err}");
    let err = laneway::Config::from_toml_str(
        "[tiers.undeclared_elsewhere]\nconverse = \"x\"\n[pricing.tiers]\nundeclared_elsewhere = 1.0\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("routing.priors.undeclared_elsewhere"),
        "{err}"
    );
}

/// GPT-6 Astra's Ultrafast, declared in the built-in configuration: an interactive class that
/// prefers it is sent it on Converse and on the OpenAI-compatible API alike, reads it back as
/// served and pays its multiplier; a model without it gets the class's next tier.
#[tokio::test]
async fn ultrafast_reaches_gpt_6_astra_by_converse_and_by_the_openai_api() {
    const ASTRA: &str = "openai.gpt-6-astra";
    let emu = emulator().await;
    let ultrafast = ServiceTier::named("ultrafast").expect("declared by defaults.toml");
    for (extra, api) in [
        ("openai = { first = false }", laneway::Api::Converse),
        ("", laneway::Api::OpenAiRuntime),
    ] {
        let router = router_with(
            &emu,
            config(&format!(
                "[slo_tiers]\ninteractive = [\"ultrafast\", \"priority\"]\n\
                 [models.\"{ASTRA}\"]\n{extra}\n"
            )),
        )
        .await;
        let ask = |model: &str| {
            GenerateRequest::user("Summarise the tier in one line.")
                .model(model)
                .max_tokens(40)
                .slo_class(SloClass::Interactive)
        };
        let r = router.generate(ask(ASTRA)).await.unwrap();
        assert_eq!(
            r.decision.tier,
            Some(ultrafast),
            "{extra:?}: {:?}",
            r.decision
        );
        assert_eq!(r.decision.served_tier, Some(ultrafast), "{extra:?}");
        assert_eq!(r.decision.api, api);
        let standard = laneway::cost::cost_of_call(
            router.config().models[ASTRA].price(),
            &router.config().pricing,
            &r.usage,
            laneway::cost::Served {
                region: Some(&r.decision.region),
                tier: Some(ServiceTier::STANDARD),
                profile: r
                    .decision
                    .target
                    .strip_suffix(ASTRA)
                    .and_then(|p| router.config().profile_scope(p.trim_end_matches('.')))
                    .as_ref(),
            },
        );
        assert!(
            (r.cost_usd / standard - 6.0).abs() < 1e-9,
            "{} / {standard}",
            r.cost_usd
        );
        // Nova Lite has no Ultrafast: priority, the class's next tier.
        let lite = router.generate(ask("amazon.nova-lite-v1:0")).await.unwrap();
        assert_eq!(lite.decision.tier, Some(ServiceTier::PRIORITY));
    }
    let sent: std::collections::BTreeSet<_> = emu
        .counters()
        .into_iter()
        .filter(|c| c.target.contains("gpt-6-astra") && c.counter.ok > 0)
        .map(|c| c.tier)
        .collect();
    assert_eq!(sent, ["ultrafast".to_string()].into());
}
