//! What sharing state through Redis adds to a call: `cargo bench -p laneway --bench shared_state`
//! (starts its own redis-server on loopback; `LANEWAY_REDIS_SERVER` names another binary).
//!
//! Two measures, alternating in rounds so both sides see the same machine:
//! - the reserved-capacity admission alone (the Lua script round trip against the in-process
//!   ledger), individually timed;
//! - whole reserved calls through the router to the emulator, with and without `[shared]`.

#[path = "../tests/common/redis_server.rs"]
mod redis_server;

use std::time::Instant;

use hdrhistogram::Histogram;
use laneway::state::{shared::Shared, State};
use laneway::{Config, GenerateRequest, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn config(redis_url: Option<&str>) -> Config {
    let mut text = format!(
        "[models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = 1000000000000, output_tokens_per_minute = 1000000000000 }}\n"
    );
    if let Some(url) = redis_url {
        text += &format!("[shared]\nredis_url = \"{url}\"\nkey_prefix = \"bench\"\n");
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
        let local = State::new(&config(None));
        let shared_config = config(Some(&redis.url()));
        let mut shared = State::new(&shared_config);
        shared.set_shared(
            std::sync::Arc::new(Shared::new(shared_config.shared.as_ref().unwrap()).unwrap()),
            &shared_config,
        );
        let (mut h_local, mut h_shared) = (hist(), hist());
        for round in 0..11 {
            for (state, h) in [(&local, &mut h_local), (&shared, &mut h_shared)] {
                for _ in 0..2000 {
                    let t = Instant::now();
                    let ticket = state.reserve_call(Instant::now(), SONNET, 500, 200).await;
                    let ns = t.elapsed().as_nanos() as u64;
                    assert!(ticket.is_some());
                    if round > 0 {
                        h.saturating_record(ns.max(1));
                    }
                }
            }
        }
        println!(
            "reserved admission, 20,000 each: local ledger p50 {:.1} us p99 {:.1} us; Redis (Lua script on loopback) p50 {:.1} us p99 {:.1} us",
            us(&h_local, 0.5),
            us(&h_local, 0.99),
            us(&h_shared, 0.5),
            us(&h_shared, 0.99)
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
                    assert_eq!(out.decision.tier, Some(laneway::ServiceTier::Reserved));
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
        assert!(!with_redis.metrics().shared.unwrap().degraded);
        emulator.shutdown().await;
    });
}
