//! Laneway's full path against the raw aws-sdk-bedrockruntime client, both calling the same
//! emulator, 64 requests in flight: `cargo bench -p laneway --bench throughput`.
//!
//! The emulator's simulated delays are scaled to nearly nothing, so the figures measure client
//! and server overhead, not the simulation. The emulator runs on a runtime of its own, whose
//! threads are left out of the CPU count: CPU time per call is the client's work alone (the
//! client runtime's threads, from /proc/self/task). The contenders alternate within one run,
//! round pairs in alternating order; the report gives medians of the per-pair ratios of
//! requests per second and of client CPU per call, for non-streaming and streaming calls.

use std::time::Instant;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use aws_sdk_bedrockruntime as bedrock;
use bedrock::types::{ContentBlock, ConversationRole, InferenceConfiguration, Message};
use futures::StreamExt;
use laneway::{GenerateRequest, Router, StreamEvent};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

/// Counts allocations, to report allocations per call of each contender.
struct CountingAllocator;
static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
// SAFETY: forwards to the system allocator, only counting.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, size) }
    }
}
#[global_allocator]
static COUNT_ALLOCS: CountingAllocator = CountingAllocator;

const MODEL: &str = "amazon.nova-lite-v1:0";
const IN_FLIGHT: usize = 64;
/// Calls per round and rounds: `LANEWAY_BENCH_PER_ROUND` and `LANEWAY_BENCH_ROUNDS` override.
fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}
const MAX_TOKENS: i32 = 16;

/// CPU seconds used by this process's threads whose name starts with `prefix`: (user, user +
/// system), from /proc/self/task/*/stat.
fn cpu_seconds(prefix: &str) -> (f64, f64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    let (mut user, mut total) = (0.0, 0.0);
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some((head, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let name = head.split_once('(').map_or("", |(_, n)| n);
        if !name.starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the command name.
        user += ticks(11) / 100.0;
        total += (ticks(11) + ticks(12)) / 100.0;
    }
    (user, total)
}

/// The client runtime's thread names (the emulator's are `emulator`).
const CLIENT_THREADS: &str = "client";

struct Sample {
    per_second: f64,
    /// Allocations per call, the emulator's included (the same for both contenders).
    allocations_per_call: f64,
    /// User-mode CPU of the client's threads per call: its own work (the SDK's and Laneway's
    /// code), without the kernel's loopback delivery, whose cost depends on whether the
    /// emulator was asleep when a request arrived.
    user_us_per_call: f64,
    /// User and system CPU of the client's threads per call.
    cpu_us_per_call: f64,
}

async fn measure<F, Fut>(per_round: usize, call: F) -> Sample
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (user, cpu) = cpu_seconds(CLIENT_THREADS);
    let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    futures::stream::iter(0..per_round)
        .map(&call)
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    let wall = start.elapsed();
    Sample {
        per_second: per_round as f64 / wall.as_secs_f64(),
        allocations_per_call: (ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - allocations)
            as f64
            / per_round as f64,
        user_us_per_call: (cpu_seconds(CLIENT_THREADS).0 - user) * 1e6 / per_round as f64,
        cpu_us_per_call: (cpu_seconds(CLIENT_THREADS).1 - cpu) * 1e6 / per_round as f64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (per_round, rounds) = (
        setting("LANEWAY_BENCH_PER_ROUND", 2_000),
        setting("LANEWAY_BENCH_ROUNDS", 20),
    );
    // The emulator on a runtime of its own, so that its CPU is not counted as the client's.
    let emulator_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("emulator")
        .enable_all()
        .build()
        .unwrap();
    let emulator = emulator_rt.block_on(async {
        let mut scenario = Scenario::builtin("fast").unwrap();
        scenario.time_scale = 1e-5;
        for m in &mut scenario.models {
            m.performance.max_concurrency = 100_000;
            m.performance.tokens_per_minute = u64::MAX / 4;
            m.overrides.clear();
        }
        Emulator::start(scenario).await.unwrap()
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(CLIENT_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let url = emulator.url();
    // Spawned, so that the client's work runs on the client runtime's named worker.
    rt.block_on(async move { tokio::spawn(async move {
        let conf = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(url.clone())
            .credentials_provider(Credentials::new(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY, None, None, "bench"))
            .retry_config(RetryConfig::disabled())
            .load()
            .await;
        let raw = bedrock::Client::new(&conf);
        // Converse against Converse (and streams against streams below): Laneway's generate
        // sends a stream by default (routing.stream_generate).
        let mut config = laneway::Config::default();
        config.routing.stream_generate = false;
        let router = Router::builder()
            .config(config)
            .endpoint_url(url.clone())
            .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
            .build()
            .await
            .unwrap();
        let message = |i: usize| {
            Message::builder()
                .role(ConversationRole::User)
                .content(ContentBlock::Text(format!("Summarise ticket {i}")))
                .build()
                .unwrap()
        };
        let inference = InferenceConfiguration::builder().max_tokens(MAX_TOKENS).build();
        let request = |i: usize| GenerateRequest::user(format!("Summarise ticket {i}")).model(MODEL).max_tokens(i64::from(MAX_TOKENS));

        let raw_generate = |i: usize| {
            let (raw, msg, inf) = (raw.clone(), message(i), inference.clone());
            async move {
                raw.converse().model_id(MODEL).messages(msg).inference_config(inf).send().await.unwrap();
            }
        };
        let laneway_generate = |i: usize| {
            let (router, req) = (router.clone(), request(i));
            async move {
                router.generate(req).await.unwrap();
            }
        };
        let raw_stream = |i: usize| {
            let (raw, msg, inf) = (raw.clone(), message(i), inference.clone());
            async move {
                let mut out = raw.converse_stream().model_id(MODEL).messages(msg).inference_config(inf).send().await.unwrap();
                while out.stream.recv().await.unwrap().is_some() {}
            }
        };
        let laneway_stream = |i: usize| {
            let (router, req) = (router.clone(), request(i));
            async move {
                let mut s = router.stream(req).await.unwrap();
                while let Some(ev) = s.next().await {
                    if let StreamEvent::Completed(_) = ev.unwrap() {}
                }
            }
        };

        // One contender alone, for profiling: `LANEWAY_BENCH_ONLY=raw|laneway[-stream]`.
        if let Ok(only) = std::env::var("LANEWAY_BENCH_ONLY") {
            for _ in 0..rounds {
                let s = match only.as_str() {
                    "raw" => measure(per_round, raw_generate).await,
                    "raw-stream" => measure(per_round, raw_stream).await,
                    "laneway" => measure(per_round, laneway_generate).await,
                    "laneway-stream" => measure(per_round, laneway_stream).await,
                    other => panic!("LANEWAY_BENCH_ONLY={other}: expected raw, raw-stream, laneway or laneway-stream"),
                };
                println!("  {only:<14} {:>8.0} req/s ({:>5.0} us user CPU/call, {:>5.0} us with system, {:.0} allocations/call with the emulator's)", s.per_second, s.user_us_per_call, s.cpu_us_per_call, s.allocations_per_call);
            }
            return;
        }

        // Warm-up: connections, allocators, the router's state.
        measure(per_round, raw_generate).await;
        measure(per_round, laneway_generate).await;

        println!("{IN_FLIGHT} in flight, {per_round} calls per round, {rounds} round pairs in alternating order, {MAX_TOKENS} output tokens per call; CPU is the client's threads only");
        for mode in ["non-streaming", "streaming"] {
            let (mut raw_rps, mut lw_rps, mut raw_cpu, mut lw_cpu) = (vec![], vec![], vec![], vec![]);
            let (mut raw_user, mut lw_user) = (vec![], vec![]);
            for round in 0..rounds {
                // Who goes first alternates too, so that neither always follows the other.
                let (r, l) = match (mode == "streaming", round % 2 == 0) {
                    (true, true) => (measure(per_round, raw_stream).await, measure(per_round, laneway_stream).await),
                    (true, false) => {
                        let l = measure(per_round, laneway_stream).await;
                        (measure(per_round, raw_stream).await, l)
                    }
                    (false, true) => (measure(per_round, raw_generate).await, measure(per_round, laneway_generate).await),
                    (false, false) => {
                        let l = measure(per_round, laneway_generate).await;
                        (measure(per_round, raw_generate).await, l)
                    }
                };
                raw_rps.push(r.per_second);
                lw_rps.push(l.per_second);
                raw_cpu.push(r.cpu_us_per_call);
                lw_cpu.push(l.cpu_us_per_call);
                raw_user.push(r.user_us_per_call);
                lw_user.push(l.user_us_per_call);
            }
            // Each pair's two contenders ran back to back on the same machine state: the median
            // of the per-pair ratios is steadier than the ratio of medians on a noisy machine.
            let rps_ratio = median(lw_rps.iter().zip(&raw_rps).map(|(l, r)| l / r).collect());
            let cpu_ratio = median(lw_cpu.iter().zip(&raw_cpu).map(|(l, r)| l / r).collect());
            let user_ratio = median(lw_user.iter().zip(&raw_user).map(|(l, r)| l / r).collect());
            println!(
                "  {mode:<14} raw SDK {:>6.0} req/s, {:>5.1} us user CPU/call ({:>5.1} with system) | Laneway {:>6.0} req/s, {:>5.1} us ({:>5.1}) | Laneway/raw: req/s {rps_ratio:.3}, user CPU/call {user_ratio:.3}, with system {cpu_ratio:.3} (medians of {rounds} pair ratios)",
                median(raw_rps),
                median(raw_user),
                median(raw_cpu),
                median(lw_rps),
                median(lw_user),
                median(lw_cpu),
            );
        }
    }).await.unwrap() });
    emulator_rt.block_on(emulator.shutdown());
}
