//! Laneway's own per-call CPU, the backend answering in memory (no SDK, no network):
//! `cargo run --release -p laneway --example overhead`. Prints client CPU per call for
//! generate and stream, median of 20 rounds.

// A measurement of wall-clock time, not the router's clock (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use laneway::backend::{Completion, MemoryBackend};
use laneway::{GenerateRequest, Provider, Router};

struct Counting;
static ALLOCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        BYTES.fetch_add(l.size() as u64, std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        BYTES.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut config = laneway::Config::default();
        config.routing.stream_generate = false;
        let router = Router::builder()
            .config(config)
            .backend(Provider::Bedrock, Arc::new(MemoryBackend::new(|_| {
                let mut c = Completion::text("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen");
                c.usage.input_tokens = 12;
                Ok(c)
            })))
            .build()
            .await
            .unwrap();
        {
            let req = GenerateRequest::user("x").model("amazon.nova-lite-v1:0");
            let f = router.generate(req.clone());
            println!("Router::generate future: {} bytes", std::mem::size_of_val(&f));
            drop(f);
            let conf = aws_config::defaults(aws_config::BehaviorVersion::latest()).region(aws_config::Region::new("us-east-1")).load().await;
            let raw = aws_sdk_bedrockruntime::Client::new(&conf);
            let f = raw.converse().model_id("m").send();
            println!("raw converse().send() future: {} bytes", std::mem::size_of_val(&f));
            drop(f);
            let f = raw.converse_stream().model_id("m").send();
            println!("raw converse_stream().send() future: {} bytes", std::mem::size_of_val(&f));
        }
        let n = 20_000;
        for mode in ["generate", "stream"] {
            let mut per = Vec::new();
            let (mut allocs, mut bytes) = (0.0, 0.0);
            for _ in 0..12 {
                let (c0, w0) = (cpu(), Instant::now());
                let (a0, b0) = (ALLOCS.load(std::sync::atomic::Ordering::Relaxed), BYTES.load(std::sync::atomic::Ordering::Relaxed));
                for i in 0..n {
                    let req = GenerateRequest::user(format!("Summarise ticket {i}")).model("amazon.nova-lite-v1:0").max_tokens(16);
                    if mode == "generate" {
                        router.generate(req).await.unwrap();
                    } else {
                        let mut s = router.stream(req).await.unwrap();
                        while let Some(e) = s.next().await { e.unwrap(); }
                    }
                }
                let _ = w0;
                per.push((cpu() - c0) * 1e6 / n as f64);
                allocs = (ALLOCS.load(std::sync::atomic::Ordering::Relaxed) - a0) as f64 / n as f64;
                bytes = (BYTES.load(std::sync::atomic::Ordering::Relaxed) - b0) as f64 / n as f64;
            }
            per.sort_by(f64::total_cmp);
            println!("{mode}: {:.1} us CPU/call (median of {}), {allocs:.1} allocations and {bytes:.0} bytes per call", per[per.len() / 2], per.len());
        }
    });
}
