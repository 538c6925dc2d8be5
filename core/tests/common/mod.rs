//! Shared setup: the `fast` emulator scenario and a router pointed at it.

#![allow(dead_code)]

pub mod redis_server;

use laneway::{Config, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

pub const STARTUP_CONFIG: &str = include_str!("../../../examples/startup.toml");

pub async fn emulator() -> Emulator {
    Emulator::start(Scenario::builtin("fast").unwrap())
        .await
        .unwrap()
}

pub fn config(extra: &str) -> Config {
    Config::from_toml_str(&format!("{STARTUP_CONFIG}\n{extra}")).unwrap()
}

pub async fn router_with(emu: &Emulator, config: Config) -> Router {
    Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await
        .unwrap()
}

pub async fn router(emu: &Emulator) -> Router {
    router_with(emu, config("")).await
}

/// Requests the emulator received, over all counters.
pub fn requests_seen(emu: &Emulator) -> u64 {
    emu.counters().iter().map(|r| r.counter.requests).sum()
}

/// Waits until `condition` holds, checking every few milliseconds; panics naming `what` if it
/// has not held after 3,000 checks. Tests wait on events this way, never for a fixed time: the
/// bound only stops a broken test from hanging.
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if condition() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{what}: never happened");
}

/// Whether the router's plan for `request` demotes a target in `region` (this one, if named)
/// as open: its breaker's open period has not ended.
pub fn breaker_open(
    router: &Router,
    request: &laneway::GenerateRequest,
    region: &str,
    target: Option<&str>,
) -> bool {
    router.plan(request).unwrap().reasons.iter().any(|r| {
        matches!(r, laneway::Reason::TargetDemoted { region: reg, target: t, health: laneway::state::BreakerView::Open, .. }
            if reg == region && target.is_none_or(|want| want == t))
    })
}
