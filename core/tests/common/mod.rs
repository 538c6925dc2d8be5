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
