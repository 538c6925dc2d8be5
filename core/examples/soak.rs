//! Soak: a long run of calls with this process's resident memory sampled, to show that nothing
//! accumulates with traffic. Generate and stream calls, 64 in flight; a share cancelled
//! mid-call, a share of streams dropped after their first event, and every call tagged with a
//! task id that is never finished (they expire as abandoned after `telemetry.task_idle`).
//!
//! The emulator runs as its own process, so the memory sampled is the client's alone:
//!
//! ```text
//! cargo build --release -p laneway-emulator
//! LANEWAY_SOAK_CALLS=1000000 cargo run --release -p laneway --example soak
//! ```
//!
//! Prints RSS every tenth of the run and exits with status 1 if, after the first tenth (the
//! warm-up), it grows by more than 10%.

// A measurement of wall-clock time, not the router's clock (`laneway::time`).
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use laneway::{Config, GenerateRequest, Router, StreamEvent};

const IN_FLIGHT: usize = 64;

/// Resident set size of this process, in KiB (Linux).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn emulator_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    // target/release/examples/soak -> target/release/laneway-emulator
    exe.parent()
        .and_then(|p| p.parent())
        .expect("target/<profile>")
        .join("laneway-emulator")
}

#[tokio::main]
async fn main() {
    let calls: u64 = std::env::var("LANEWAY_SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let binary = emulator_binary();
    let mut emulator = Command::new(&binary)
        .args(["--scenario", "fast", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({e}): cargo build --release -p laneway-emulator",
                binary.display()
            )
        });
    let mut url = String::new();
    BufReader::new(emulator.stdout.take().expect("piped"))
        .read_line(&mut url)
        .expect("the emulator prints its URL");
    let config = Config::from_toml_str("[telemetry]\ntask_idle = 2000.0\n").expect("valid");
    let router = Router::builder()
        .config(config)
        .endpoint_url(url.trim())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .build()
        .await
        .expect("router");

    let ok = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let started = Instant::now();
    let step = (calls / 10).max(1);
    let mut samples = Vec::new();
    println!("| calls | rss MiB | tasks abandoned | elapsed s |");
    println!("|---|---|---|---|");
    for chunk in 0..10u64 {
        futures::stream::iter(chunk * step..(chunk + 1) * step)
            .for_each_concurrent(IN_FLIGHT, |i| {
                let router = &router;
                let (ok, failed) = (&ok, &failed);
                async move {
                    let req = GenerateRequest::user(format!("soak {i}: a short answer please"))
                        .family("nova")
                        .max_tokens(64)
                        .task(format!("task-{i}"));
                    let done = match i % 10 {
                        // Cancelled: the call is dropped mid-way.
                        0 => !matches!(
                            tokio::time::timeout(Duration::from_millis(2), router.generate(req))
                                .await,
                            Ok(Err(_))
                        ),
                        // Abandoned: a stream dropped after its first event.
                        1 => match router.stream(req).await {
                            Ok(mut s) => matches!(s.next().await, Some(Ok(_))),
                            Err(_) => false,
                        },
                        2..=5 => router.generate(req).await.is_ok(),
                        _ => match router.stream(req).await {
                            Ok(mut s) => {
                                let mut completed = false;
                                while let Some(ev) = s.next().await {
                                    completed |= matches!(ev, Ok(StreamEvent::Completed(_)));
                                }
                                completed
                            }
                            Err(_) => false,
                        },
                    };
                    if done {
                        ok.fetch_add(1, Ordering::Relaxed)
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed)
                    };
                }
            })
            .await;
        let rss = rss_kib();
        samples.push(rss);
        println!(
            "| {} | {:.1} | {} | {:.0} |",
            (chunk + 1) * step,
            rss as f64 / 1024.0,
            router.metrics().tasks.abandoned,
            started.elapsed().as_secs_f64()
        );
    }
    let _ = emulator.kill();
    let _ = emulator.wait();
    let warm = samples[0];
    let peak = *samples[1..].iter().max().unwrap_or(&warm);
    let growth = peak as f64 / warm as f64 - 1.0;
    println!(
        "\n{} calls in {:.0} s: {} ok, {} failed; RSS after warm-up {:.1} MiB, peak after {:.1} MiB ({:+.1}%)",
        10 * step,
        started.elapsed().as_secs_f64(),
        ok.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        warm as f64 / 1024.0,
        peak as f64 / 1024.0,
        growth * 100.0
    );
    if growth > 0.10 {
        eprintln!("resident memory grew by more than 10% after warm-up");
        std::process::exit(1);
    }
}
