//! Quota-aware routing against reactive failover, same workload, same emulator run.
//!
//! The workload offers twice one region's on-demand token quota for Amazon Nova Lite within a
//! minute (of the emulator's scaled time). "Reactive" is the router without quotas in its
//! configuration: it learns of a full quota from 429s (breakers, throttle scores, failover).
//! "Quota-aware" configures the same quotas the emulator enforces, so the router counts its
//! own admissions and spreads traffic across regions and profiles before a quota is hit.
//!
//! `cargo run --release -p laneway --example quota_routing` (`LANEWAY_QUOTA_CALLS`, default 400).

// A measurement of wall-clock time, not the router's clock (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use laneway::{Config, ErrorKind, GenerateRequest, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

const LITE: &str = "amazon.nova-lite-v1:0";
/// A minute of the emulator's time lasts this long.
const TIME_SCALE: f64 = 0.05;
const MAX_TOKENS: i64 = 100;

/// The outcome of one mode.
#[derive(Debug)]
struct Outcome {
    calls: usize,
    successes: usize,
    throttled_attempts: usize,
    p99_ms: f64,
    cost_usd: f64,
}

/// Runs `calls` calls paced evenly over one scaled minute, `tpm` tokens per minute per target
/// enforced by the emulator; `aware` puts the same quota in the router's configuration.
async fn run(calls: usize, tpm: u64, aware: bool) -> Outcome {
    let mut scenario = Scenario::builtin("fast").unwrap();
    scenario.time_scale = TIME_SCALE;
    let lite = scenario.models.iter_mut().find(|m| m.id == LITE).unwrap();
    lite.performance.tokens_per_minute = tpm;
    for o in &mut lite.overrides {
        o.tokens_per_minute = None;
    }
    let emu = Emulator::start(scenario).await.unwrap();
    let minute_ms = 60_000.0 * TIME_SCALE;
    let quota = if aware {
        format!("quota = {{ tokens_per_minute = {tpm}, profile_tokens_per_minute = {tpm} }}\n")
    } else {
        String::new()
    };
    let config = Config::from_toml_str(&format!(
        "[routing]\nminute = {minute_ms}\nmax_attempts = 6\n[models.\"{LITE}\"]\n{quota}"
    ))
    .unwrap();
    let router = Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await
        .unwrap();
    let gap = Duration::from_secs_f64(minute_ms / 1000.0 / calls as f64);
    let mut handles = Vec::with_capacity(calls);
    let mut tick = tokio::time::interval(gap);
    for i in 0..calls {
        tick.tick().await;
        let router = router.clone();
        handles.push(tokio::spawn(async move {
            let started = Instant::now();
            let r = router
                .generate(
                    GenerateRequest::user(format!("Summarise ticket {i} for the support queue"))
                        .model(LITE)
                        .max_tokens(MAX_TOKENS),
                )
                .await;
            (started.elapsed(), r)
        }));
    }
    let mut latencies = Vec::new();
    let (mut successes, mut throttled, mut cost) = (0, 0, 0.0);
    for h in handles {
        let (elapsed, r) = h.await.unwrap();
        match r {
            Ok(r) => {
                successes += 1;
                cost += r.cost_usd;
                latencies.push(elapsed.as_secs_f64() * 1000.0);
                throttled += r
                    .decision
                    .failed_attempts
                    .iter()
                    .filter(|f| f.kind == ErrorKind::Throttled)
                    .count();
            }
            Err(laneway::Error::AllTargetsFailed { attempts, .. }) => {
                throttled += attempts
                    .iter()
                    .filter(|f| f.kind == ErrorKind::Throttled)
                    .count();
            }
            Err(e) => throttled += usize::from(e.kind() == ErrorKind::Throttled),
        }
    }
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies
        .get(((latencies.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN);
    emu.shutdown().await;
    Outcome {
        calls,
        successes,
        throttled_attempts: throttled,
        p99_ms: p99,
        cost_usd: cost,
    }
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::var("LANEWAY_QUOTA_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    println!(
        "{calls} calls over one minute (scaled x{TIME_SCALE}), Nova Lite, max_tokens {MAX_TOKENS}\n"
    );
    println!(
        "| load | mode | successes | throttled attempts | p99 latency (ms, scaled) | cost (USD) |"
    );
    println!("|---|---|---|---|---|---|");
    // About 110 tokens a call at admission (input plus max_tokens): at load L a target's quota
    // holds 1/L of the minute's calls, so the workload is L times one region's in-region quota.
    for load in [2u64, 4] {
        let tpm = calls as u64 * 110 / load;
        for (name, aware) in [("reactive failover", false), ("quota-aware", true)] {
            let o = run(calls, tpm, aware).await;
            println!(
                "| {load}x | {name} | {}/{} | {} | {:.0} | {:.5} |",
                o.successes, o.calls, o.throttled_attempts, o.p99_ms, o.cost_usd
            );
        }
    }
}
