//! What sharing state through Redis adds to a call: `cargo bench -p laneway --bench shared_state`
//! (starts its own redis-server on loopback; `LANEWAY_REDIS_SERVER` names another binary).
//!
//! Measures, alternating in rounds so all sides see the same machine:
//! - the reserved-capacity admission alone, individually timed: the in-process ledger; the
//!   shared ledger from this replica's lease (the usual case); the shared ledger when the lease
//!   is short and the call waits for the Lua script's round trip (forced: a new model each time);
//! - whole reserved calls through the router to the emulator, with and without `[shared]`, and
//!   how many of the shared ones waited for Redis.

// A benchmark times the wall clock, not the router's (`laneway::time`).
#![allow(clippy::disallowed_methods)]

#[path = "../tests/common/redis_server.rs"]
mod redis_server;

use std::time::Instant;

use hdrhistogram::Histogram;
use laneway::state::{State, shared::Shared};
use laneway::{Config, GenerateRequest, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// A reservation of 20M input and 2M output tokens a minute: room for every call of the run,
/// lease chunks of 2% (400K / 40K tokens), so replicas lease now and then, mostly in the
/// background.
fn config(redis_url: Option<&str>) -> Config {
    config_with(redis_url, 20_000_000, 2_000_000)
}

/// The admission loop admits 20,000 calls of 700 tokens a round without settling them: it needs
/// a reservation that never fills.
fn roomy(redis_url: Option<&str>) -> Config {
    config_with(redis_url, 1_000_000_000_000, 1_000_000_000_000)
}

fn config_with(redis_url: Option<&str>, input_tpm: u64, output_tpm: u64) -> Config {
    let mut text = format!(
        "[models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = {input_tpm}, output_tokens_per_minute = {output_tpm} }}\n"
    );
    if let Some(url) = redis_url {
        // Each reservation size its own keys: the two loops must not share a ledger.
        text += &format!("[shared]\nredis_url = \"{url}\"\nkey_prefix = \"bench-{output_tpm}\"\n");
    }
    Config::from_toml_str(&text).unwrap()
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap()
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn main() {
    let redis = redis_server::RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Admission alone.
        let local = State::new(&roomy(None));
        let shared_config = roomy(Some(&redis.url()));
        let mut shared = State::new(&shared_config);
        shared.set_shared(
            std::sync::Arc::new(Shared::new(shared_config.shared.as_ref().unwrap()).unwrap()),
            &shared_config,
        );
        let miss = std::sync::Arc::new(Shared::new(shared_config.shared.as_ref().unwrap()).unwrap());
        let (mut h_local, mut h_shared, mut h_miss) = (hist(), hist(), hist());
        let mut n = 0u64;
        for round in 0..11 {
            for (state, h) in [(&local, &mut h_local), (&shared, &mut h_shared)] {
                for _ in 0..2000 {
                    let t = Instant::now();
                    let ticket = state.capacity().reserve_call(Instant::now(), SONNET, 500, 200).await;
                    let ns = t.elapsed().as_nanos() as u64;
                    assert!(ticket.is_some());
                    if round > 0 {
                        h.saturating_record(ns.max(1));
                    }
                }
            }
            for _ in 0..2000 {
                n += 1;
                let t = Instant::now();
                let ticket = miss
                    .reserve(&format!("model-{n}"), std::time::Duration::from_secs(60), (1_000_000, 1_000_000), 500, 200)
                    .await;
                let ns = t.elapsed().as_nanos() as u64;
                assert!(matches!(ticket, Some(Some(_))));
                if round > 0 {
                    h_miss.saturating_record(ns.max(1));
                }
            }
        }
        println!(
            "reserved admission, 20,000 each: local ledger p50 {:.2} us p99 {:.2} us; shared, from the lease p50 {:.2} us p99 {:.2} us; shared, waiting for Redis (Lua script on loopback) p50 {:.1} us p99 {:.1} us",
            us(&h_local, 0.5),
            us(&h_local, 0.99),
            us(&h_shared, 0.5),
            us(&h_shared, 0.99),
            us(&h_miss, 0.5),
            us(&h_miss, 0.99)
        );

        // Whole calls.
        let emulator = Emulator::start(Scenario::builtin("fast").unwrap())
            .await
            .unwrap();
        let router = |c: Config| {
            Router::builder()
                .config(c)
                .endpoint_url(emulator.url())
                .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
                .build()
        };
        let plain = router(config(None)).await.unwrap();
        let with_redis = router(config(Some(&redis.url()))).await.unwrap();
        let (mut h_plain, mut h_redis) = (hist(), hist());
        for round in 0..11 {
            for (r, h) in [(&plain, &mut h_plain), (&with_redis, &mut h_redis)] {
                for i in 0..300 {
                    let req = GenerateRequest::user(format!("call {i}"))
                        .model(SONNET)
                        .max_tokens(8);
                    let t = Instant::now();
                    let out = r.generate(req).await.unwrap();
                    let ns = t.elapsed().as_nanos() as u64;
                    assert_eq!(out.decision.tier, Some(laneway::ServiceTier::RESERVED));
                    if round > 0 {
                        h.saturating_record(ns.max(1));
                    }
                }
            }
        }
        println!(
            "reserved calls to the emulator, 3,000 each: in-process state p50 {:.1} us p99 {:.1} us; shared through Redis p50 {:.1} us p99 {:.1} us; added p50 {:.1} us, p99 {:.1} us",
            us(&h_plain, 0.5),
            us(&h_plain, 0.99),
            us(&h_redis, 0.5),
            us(&h_redis, 0.99),
            us(&h_redis, 0.5) - us(&h_plain, 0.5),
            us(&h_redis, 0.99) - us(&h_plain, 0.99)
        );
        let status = with_redis.metrics().shared.unwrap();
        assert!(!status.degraded);
        println!(
            "shared calls that waited for Redis: {} of {}",
            status.waited_admissions, status.admissions
        );
        emulator.shutdown().await;
    });
}
