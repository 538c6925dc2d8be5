//! Shared setup: the `fast` emulator scenario and a router pointed at it.

#![allow(dead_code)]

pub(crate) mod redis_server;

use laneway::{Config, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

pub(crate) const STARTUP_CONFIG: &str = include_str!("../../../examples/startup.toml");

pub(crate) async fn emulator() -> Emulator {
    Emulator::start(Scenario::builtin("fast").unwrap())
        .await
        .unwrap()
}

/// The built-in world where a minute lasts a minute (so per-minute quotas and reservations
/// hold for the whole test) and `model` answers at once; `tune` changes the model further.
pub(crate) async fn real_minute_emulator(
    model: &str,
    tune: impl FnOnce(&mut laneway_emulator::ModelSpec),
) -> Emulator {
    let mut scenario = Scenario::builtin("fast").unwrap();
    scenario.time_scale = 1.0;
    let m = scenario.models.iter_mut().find(|m| m.id == model).unwrap();
    m.overrides.clear();
    m.performance.ttft_median_ms = 2.0;
    m.performance.ttft_p99_ms = 4.0;
    m.performance.tokens_per_second = 20_000.0;
    tune(m);
    Emulator::start(scenario).await.unwrap()
}

/// The built-in `startup` world at a quarter of real time, where `models` take `capacity`
/// requests at once per target and answer 20 tokens 300 ms (of scenario time) after a request,
/// with no spread: small, named capacity, so that what a surge test asserts is the router's
/// doing and not the machine's.
pub(crate) async fn small_capacity_world(models: &[&str], capacity: u32) -> Emulator {
    small_capacity_world_at(models, capacity, 0.25).await
}

/// [`small_capacity_world`] at `time_scale`: at 1.0 a call lasts 300 ms, long beside the
/// scheduling delays of a loaded 2-core machine, for tests that compare how calls overlap.
pub(crate) async fn small_capacity_world_at(
    models: &[&str],
    capacity: u32,
    time_scale: f64,
) -> Emulator {
    let mut scenario = Scenario::builtin("startup").unwrap();
    scenario.time_scale = time_scale;
    for m in scenario
        .models
        .iter_mut()
        .filter(|m| models.contains(&m.id.as_str()))
    {
        m.overrides.clear();
        m.answer_tokens = [20, 20];
        m.performance.ttft_median_ms = 300.0;
        m.performance.ttft_p99_ms = 300.0;
        m.performance.tokens_per_second = 4_000.0;
        m.performance.max_concurrency = capacity;
    }
    Emulator::start(scenario).await.unwrap()
}

pub(crate) fn config(extra: &str) -> Config {
    Config::from_toml_str(&format!("{STARTUP_CONFIG}\n{extra}")).unwrap()
}

pub(crate) async fn router_with(emu: &Emulator, config: Config) -> Router {
    Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await
        .unwrap()
}

/// The official AWS SDK's bedrock-runtime client, signed for `region`, pointed at the emulator.
#[allow(
    dead_code,
    reason = "not every test binary that includes common calls the SDK itself"
)]
pub(crate) fn bedrock_sdk(emu: &Emulator, region: &str) -> aws_sdk_bedrockruntime::Client {
    let creds = aws_sdk_bedrockruntime::config::Credentials::new(
        TEST_ACCESS_KEY_ID,
        TEST_SECRET_ACCESS_KEY,
        None,
        None,
        "test",
    );
    let conf = aws_sdk_bedrockruntime::Config::builder()
        .behavior_version(aws_sdk_bedrockruntime::config::BehaviorVersion::latest())
        .region(aws_sdk_bedrockruntime::config::Region::new(
            region.to_string(),
        ))
        .credentials_provider(creds)
        .endpoint_url(emu.url())
        .build();
    aws_sdk_bedrockruntime::Client::from_conf(conf)
}

pub(crate) async fn router(emu: &Emulator) -> Router {
    router_with(emu, config("")).await
}

/// Throttles (ThrottlingException) the emulator answered, over every target.
pub(crate) fn throttles_seen(emu: &Emulator) -> u64 {
    emu.counters()
        .iter()
        .map(|r| {
            r.counter
                .errors
                .get("ThrottlingException")
                .copied()
                .unwrap_or(0)
        })
        .sum()
}

/// Requests the emulator received, over all counters.
pub(crate) fn requests_seen(emu: &Emulator) -> u64 {
    emu.counters().iter().map(|r| r.counter.requests).sum()
}

/// Waits until `condition` holds on the router's clock: tokio's clock is paused and moved on
/// 10 ms at a time (timers due in between fire, the emulator's included) until it does, then
/// runs again. So a breaker's open period or a budget's window passes at once, whatever the
/// machine's load; panics naming `what` if it has not held within ten minutes of that clock.
/// Needs the current-thread runtime (`#[tokio::test]`), whose clock a test may pause.
pub(crate) async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    tokio::time::pause();
    let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "{what}: never happened"
        );
        tokio::time::advance(std::time::Duration::from_millis(10)).await;
    }
    tokio::time::resume();
}

/// Waits until `condition` holds for what another thread or process does (a replica over
/// Redis, the emulator's connection handling), asking it again after every yield to the
/// runtime; panics naming `what` if it has not held within a minute. No timer: the wait ends
/// at the event, and the minute only stops a broken test from hanging.
#[allow(clippy::disallowed_methods)] // Another thread's or process's progress: the wall clock.
pub(crate) async fn poll_until(what: &str, mut condition: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !condition() {
        assert!(
            std::time::Instant::now() < give_up,
            "{what}: never happened"
        );
        tokio::task::yield_now().await;
    }
}

/// Whether the router's plan for `request` demotes a target in `region` (this one, if named)
/// as open: its breaker's open period has not ended.
pub(crate) fn breaker_open(
    router: &Router,
    request: &laneway::GenerateRequest,
    region: &str,
    target: Option<&str>,
) -> bool {
    router.plan(request).unwrap().reasons.iter().any(|r| {
        matches!(r, laneway::Reason::TargetDemoted { region: reg, target: t, health: laneway::BreakerView::Open, .. }
            if **reg == *region && target.is_none_or(|want| *want == **t))
    })
}
