//! Laneway's full path against the raw aws-sdk-bedrockruntime client, both calling the same
//! emulator: `cargo bench -p laneway --bench throughput`.
//!
//! The emulator's simulated delays are scaled to nearly nothing, so the figures measure client
//! and server overhead, not the simulation. The emulator runs on a runtime of its own, whose
//! threads are left out of the CPU count: CPU time per call is the client runtime's threads'
//! alone, read in nanoseconds from /proc/self/task/*/schedstat. The contenders alternate within
//! one run, round pairs in alternating order; the report gives medians of the per-pair ratios.
//!
//! Each call runs in a task of its own, as a service's request handlers do
//! (`LANEWAY_BENCH_ONE_TASK=1`: all in one task). Two loads, each for non-streaming and
//! streaming calls:
//! - *paced*: calls start at a fixed rate (`LANEWAY_BENCH_RATE`, 2,000/s), the same for both
//!   contenders, as a service meets them. Both run at the same load, so the client CPU per call
//!   compares the two clients' work and nothing else.
//! - *saturated*: 64 calls in flight as fast as they go, for requests per second. Its CPU per
//!   call also moves with how the client and the emulator happen to batch each other's wake-ups
//!   at different speeds, so it overstates per-call differences.
//!
//! Then Laneway's backends side by side ([`surfaces`]; alone: `LANEWAY_BENCH_ONLY=surfaces`):
//! Converse against Bedrock's OpenAI-compatible APIs for the same model and answer length.

// A benchmark times the wall clock, not the router's (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

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
/// Calls per round, rounds and the paced rate: `LANEWAY_BENCH_PER_ROUND`, `LANEWAY_BENCH_ROUNDS`
/// and `LANEWAY_BENCH_RATE` override.
fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}
const MAX_TOKENS: i32 = 16;

/// CPU seconds (user and system) used by this process's threads whose name starts with
/// `prefix`, from /proc/self/task/*/schedstat (nanoseconds, where `stat` counts 10 ms ticks).
fn cpu_seconds(prefix: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut total = 0.0;
    for task in tasks.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let on_cpu_ns = schedstat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        total += on_cpu_ns / 1e9;
    }
    total
}

/// The client runtime's thread names (the emulator's are `emulator`).
const CLIENT_THREADS: &str = "client";

/// The client's CPU: its runtime's threads and, with `[record]`, the trace's writer.
fn client_cpu() -> f64 {
    cpu_seconds(CLIENT_THREADS) + cpu_seconds("laneway-record")
}

struct Sample {
    per_second: f64,
    /// Allocations per call, the emulator's included (the same for both contenders).
    allocations_per_call: f64,
    /// CPU of the client's threads per call, user and system.
    cpu_us_per_call: f64,
}

/// Each call runs in a task of its own, as a service's request handlers do; with
/// `LANEWAY_BENCH_ONE_TASK` set, all of a round's calls are polled from one task instead (they
/// then share one task's wake-ups and tokio's cooperative budget).
static ONE_TASK: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("LANEWAY_BENCH_ONE_TASK").is_some());

/// Calls in flight at most: the saturated load's concurrency, the paced load's cap.
const IN_FLIGHT: usize = 64;

/// Runs `per_round` calls, 64 at a time, each spawned (see [`ONE_TASK`]); paced, call `i` starts `i / rate` seconds in (or as
/// soon as one of the 64 is free, should calls fall behind).
async fn measure<F, Fut>(per_round: usize, pace: Option<f64>, call: F) -> Sample
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    measure_settled(per_round, pace, call, || {}).await
}

/// `measure`, with `settle` run after the last call and before the CPU is read: the work a
/// round leaves behind (a trace's writer finishing its lines) counts toward that round.
async fn measure_settled<F, Fut>(
    per_round: usize,
    pace: Option<f64>,
    call: F,
    settle: impl FnOnce(),
) -> Sample
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let cpu = client_cpu();
    let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let starts = tokio::time::Instant::now();
    let calls = futures::stream::iter(0..per_round).then(|i| async move {
        if let Some(rate) = pace {
            tokio::time::sleep_until(starts + Duration::from_secs_f64(i as f64 / rate)).await;
        }
        i
    });
    // Two separate pipelines rather than a branch per call: a wrapper future would move each
    // call's future once more (the raw SDK's is several kilobytes).
    if *ONE_TASK {
        calls
            .map(&call)
            .buffer_unordered(IN_FLIGHT)
            .collect::<Vec<()>>()
            .await;
    } else {
        calls
            .map(|i| tokio::spawn(call(i)))
            .buffer_unordered(IN_FLIGHT)
            .for_each(|done| async move { done.unwrap() })
            .await;
    }
    settle();
    let wall = start.elapsed();
    Sample {
        per_second: per_round as f64 / wall.as_secs_f64(),
        allocations_per_call: (ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - allocations)
            as f64
            / per_round as f64,
        cpu_us_per_call: (client_cpu() - cpu) * 1e6 / per_round as f64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (per_round, rounds, rate) = (
        setting("LANEWAY_BENCH_PER_ROUND", 2_000),
        setting("LANEWAY_BENCH_ROUNDS", 20),
        setting("LANEWAY_BENCH_RATE", 2_000) as f64,
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
        // The raw client as a user who bounds every call in time would configure it (Laneway
        // always does): for profiling only, `LANEWAY_BENCH_ONLY=raw-bounded`.
        let bounded = bedrock::Client::from_conf(
            bedrock::config::Builder::from(&conf)
                .timeout_config(
                    aws_config::timeout::TimeoutConfig::builder()
                        .operation_attempt_timeout(Duration::from_secs(60))
                        .build(),
                )
                .build(),
        );
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
        let raw_bounded = |i: usize| {
            let (raw, msg, inf) = (bounded.clone(), message(i), inference.clone());
            async move {
                raw.converse().model_id(MODEL).messages(msg).inference_config(inf).send().await.unwrap();
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

        // One contender alone, for profiling: `LANEWAY_BENCH_ONLY=raw|laneway[-stream]`
        // (saturated, or paced when `LANEWAY_BENCH_RATE` is set).
        if std::env::var("LANEWAY_BENCH_ONLY").as_deref() == Ok("surfaces") {
            surfaces(&url, per_round, rounds, rate).await;
            return;
        }
        // What recording costs (`[record]`, every call, or `LANEWAY_BENCH_RECORD_SAMPLE` of
        // them): the same router with and without it, paced, the trace's writer thread counted
        // as the client's.
        if std::env::var("LANEWAY_BENCH_ONLY").as_deref() == Ok("record") {
            let dir = std::env::temp_dir().join(format!("laneway-bench-record-{}", std::process::id()));
            let mut config = laneway::Config::default();
            config.routing.stream_generate = false;
            let mut with_record = config.clone();
            let sample: f64 = std::env::var("LANEWAY_BENCH_RECORD_SAMPLE").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
            let table = format!("[record]\npath = \"{}\"\nmax_bytes = 50000000\nsample = {sample}\n", dir.join("trace.jsonl").display());
            with_record.record = laneway::Config::from_toml_str(&table).unwrap().record;
            let recorded = Router::builder()
                .config(with_record)
                .endpoint_url(url.clone())
                .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
                .build()
                .await
                .unwrap();
            let recorded_generate = |i: usize| {
                let (router, req) = (recorded.clone(), request(i));
                async move {
                    router.generate(req).await.unwrap();
                }
            };
            // Each recorded round ends when its lines are written: the writer's work is its own.
            let flushed = || assert!(recorded.flush_record(Duration::from_secs(30)));
            measure(per_round, None, laneway_generate).await;
            measure_settled(per_round, None, recorded_generate, flushed).await;
            let (mut plain, mut rec) = (vec![], vec![]);
            for round in 0..rounds {
                let (p, r) = if round % 2 == 0 {
                    let p = measure(per_round, Some(rate), laneway_generate).await;
                    (p, measure_settled(per_round, Some(rate), recorded_generate, flushed).await)
                } else {
                    let r = measure_settled(per_round, Some(rate), recorded_generate, flushed).await;
                    (measure(per_round, Some(rate), laneway_generate).await, r)
                };
                plain.push(p.cpu_us_per_call);
                rec.push(r.cpu_us_per_call);
            }
            let ratio = median(rec.iter().zip(&plain).map(|(r, p)| r / p).collect());
            let figures = recorded.metrics().record.unwrap();
            println!(
                "[record] sample {sample}, paced at {rate:.0}/s: {:.1} us CPU/call without, {:.1} with | with/without: CPU/call {ratio:.3} (median of {rounds} pair ratios); {} lines written, {} dropped",
                median(plain),
                median(rec),
                figures.written,
                figures.dropped,
            );
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        if let Ok(only) = std::env::var("LANEWAY_BENCH_ONLY") {
            let pace = std::env::var("LANEWAY_BENCH_RATE").is_ok().then_some(rate);
            for _ in 0..rounds {
                let s = match only.as_str() {
                    "raw" => measure(per_round, pace, raw_generate).await,
                    "raw-stream" => measure(per_round, pace, raw_stream).await,
                    "raw-bounded" => measure(per_round, pace, raw_bounded).await,
                    "laneway" => measure(per_round, pace, laneway_generate).await,
                    "laneway-stream" => measure(per_round, pace, laneway_stream).await,
                    other => panic!("LANEWAY_BENCH_ONLY={other}: expected raw, raw-bounded, raw-stream, laneway or laneway-stream"),
                };
                println!("  {only:<14} {:>8.0} req/s ({:>6.1} us CPU/call, {:.0} allocations/call with the emulator's)", s.per_second, s.cpu_us_per_call, s.allocations_per_call);
            }
            return;
        }

        // Warm-up: connections, allocators, the router's state.
        measure(per_round, None, raw_generate).await;
        measure(per_round, None, laneway_generate).await;

        let tasks = if *ONE_TASK { "all calls in one task" } else { "each call in a task of its own" };
        println!("{per_round} calls per round, {rounds} round pairs in alternating order, {MAX_TOKENS} output tokens per call, {tasks}; CPU is the client's threads only (user and system)");
        for (load, pace) in [("paced", Some(rate)), ("saturated", None)] {
            match pace {
                Some(rate) => println!("{load}: calls start at {rate:.0}/s (at most {IN_FLIGHT} in flight)"),
                None => println!("{load}: {IN_FLIGHT} in flight"),
            }
            for streaming in [false, true] {
                let (mut raw_rps, mut lw_rps, mut raw_cpu, mut lw_cpu) = (vec![], vec![], vec![], vec![]);
                for round in 0..rounds {
                    let raw = || async {
                        if streaming {
                            measure(per_round, pace, raw_stream).await
                        } else {
                            measure(per_round, pace, raw_generate).await
                        }
                    };
                    let laneway = || async {
                        if streaming {
                            measure(per_round, pace, laneway_stream).await
                        } else {
                            measure(per_round, pace, laneway_generate).await
                        }
                    };
                    // Who goes first alternates too, so that neither always follows the other.
                    let (r, l) = if round % 2 == 0 {
                        let r = raw().await;
                        (r, laneway().await)
                    } else {
                        let l = laneway().await;
                        (raw().await, l)
                    };
                    raw_rps.push(r.per_second);
                    lw_rps.push(l.per_second);
                    raw_cpu.push(r.cpu_us_per_call);
                    lw_cpu.push(l.cpu_us_per_call);
                }
                // Each pair's two contenders ran back to back on the same machine state: the
                // median of the per-pair ratios is steadier than the ratio of medians on a noisy
                // machine.
                let rps_ratio = median(lw_rps.iter().zip(&raw_rps).map(|(l, r)| l / r).collect());
                let cpu_ratio = median(lw_cpu.iter().zip(&raw_cpu).map(|(l, r)| l / r).collect());
                let mode = if streaming { "streaming" } else { "non-streaming" };
                println!(
                    "  {mode:<14} raw SDK {:>6.0} req/s, {:>6.1} us CPU/call | Laneway {:>6.0} req/s, {:>6.1} us CPU/call | Laneway/raw: req/s {rps_ratio:.3}, CPU/call {cpu_ratio:.3} (medians of {rounds} pair ratios)",
                    median(raw_rps),
                    median(raw_cpu),
                    median(lw_rps),
                    median(lw_cpu),
                );
            }
        }

        surfaces(&url, per_round, rounds, rate).await;
    }).await.unwrap() });
    emulator_rt.block_on(emulator.shutdown());
}

/// Laneway's backends side by side: the same model (gpt-oss-120b), request and answer length
/// through Converse and through Bedrock's OpenAI-compatible APIs (Chat Completions on
/// bedrock-runtime, Responses on bedrock-mantle), whole and streamed, paced, for answers of 16
/// and 300 tokens. Reported: client CPU per call and the OpenAI-compatible/Converse ratio
/// (medians of per-pair ratios, pairs in alternating order).
async fn surfaces(url: &str, per_round: usize, rounds: usize, rate: f64) {
    const GPT_OSS: &str = "openai.gpt-oss-120b-1:0";
    let router_for = |converse: bool, mantle_first: bool| {
        let url = url.to_string();
        async move {
            let mut config = laneway::Config::default();
            config.routing.stream_generate = false;
            if let Some(laneway::config::ModelConfig::Bedrock(b)) = config.models.get_mut(GPT_OSS) {
                b.converse = converse;
                let o = b
                    .openai
                    .as_mut()
                    .expect("gpt-oss has OpenAI-compatible surfaces");
                o.first = true;
                if mantle_first {
                    o.runtime.clear();
                }
            }
            Router::builder()
                .config(config)
                .endpoint_url(url)
                .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
                .build()
                .await
                .unwrap()
        }
    };
    let routers = [
        ("Converse", router_for(true, false).await),
        ("Chat Completions (runtime)", router_for(false, false).await),
        ("Responses (mantle)", router_for(false, true).await),
    ];
    let per_round = per_round / 2;
    println!(
        "Laneway by surface, {GPT_OSS}: {per_round} calls per round, {rounds} round pairs, paced at {rate:.0}/s"
    );
    for tokens in [16i64, 300] {
        for streaming in [false, true] {
            let call = |router: Router| {
                move |i: usize| {
                    let router = router.clone();
                    let req = GenerateRequest::user(format!("Summarise ticket {i}"))
                        .model(GPT_OSS)
                        .max_tokens(tokens);
                    async move {
                        if streaming {
                            let mut s = router.stream(req).await.unwrap();
                            while let Some(ev) = s.next().await {
                                if let StreamEvent::Completed(_) = ev.unwrap() {}
                            }
                        } else {
                            router.generate(req).await.unwrap();
                        }
                    }
                }
            };
            let converse = call(routers[0].1.clone());
            // Warm-up.
            measure(per_round, None, &converse).await;
            for (name, router) in &routers[1..] {
                let other = call(router.clone());
                measure(per_round, None, &other).await;
                let (mut a_cpu, mut b_cpu) = (vec![], vec![]);
                for round in 0..rounds {
                    let (a, b) = if round % 2 == 0 {
                        let a = measure(per_round, Some(rate), &converse).await;
                        (a, measure(per_round, Some(rate), &other).await)
                    } else {
                        let b = measure(per_round, Some(rate), &other).await;
                        (measure(per_round, Some(rate), &converse).await, b)
                    };
                    a_cpu.push(a.cpu_us_per_call);
                    b_cpu.push(b.cpu_us_per_call);
                }
                let ratio = median(b_cpu.iter().zip(&a_cpu).map(|(b, a)| b / a).collect());
                let mode = if streaming {
                    "streaming"
                } else {
                    "non-streaming"
                };
                println!(
                    "  {tokens:>3} tokens {mode:<14} Converse {:>6.1} us CPU/call | {name} {:>6.1} us CPU/call | ratio {ratio:.3}",
                    median(a_cpu),
                    median(b_cpu),
                );
            }
        }
    }
}
