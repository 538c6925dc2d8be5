//! `laneway demo`: the emulator in-process, a mixed workload through the router, a table.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{stream, StreamExt};
use laneway::{GenerateRequest, GenerateResponse, Router, Slo, SloClass, StreamEvent};
use laneway_emulator::{
    Emulator, Fault, FaultKind, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY,
};

use crate::report::{metrics_table, table, LaneStats};

/// The router configuration the demo uses: built-in Bedrock models plus the emulator's
/// SageMaker endpoints.
const CONFIG: &str = include_str!("../../examples/startup.toml");

/// The batch lane's settings for the demo: the emulator's S3 and a role it accepts.
const BATCH: &str = "[batch]\nbucket = \"laneway-demo-batch\"\nrole_arn = \"arn:aws:iam::123456789012:role/laneway-batch\"\npoll_interval = 100.0\n";

/// Options of `laneway demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// A built-in emulator scenario or a scenario TOML file.
    #[arg(long, default_value = "startup")]
    scenario: String,
    /// Overrides the scenario's time scale (1.0 real time; smaller is faster).
    #[arg(long)]
    time_scale: Option<f64>,
    /// Requests per lane.
    #[arg(long, default_value_t = 24)]
    requests: usize,
    /// Requests in flight per lane.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

/// One lane of the workload.
struct Lane {
    name: &'static str,
    make: fn(usize) -> GenerateRequest,
}

const LANES: &[Lane] = &[
    Lane {
        name: "interactive chat (claude)",
        make: |i| {
            GenerateRequest::user(format!("Customer #{i} asks: where is my order?"))
                .system("You are a friendly support agent. Answer in two sentences.")
                .family("claude")
                .slo(Slo {
                    class: SloClass::Interactive,
                    ttft_target: Some(Duration::from_millis(800)),
                    deadline: None,
                })
                .max_tokens(60)
        },
    },
    Lane {
        name: "standard summaries (nova)",
        make: |i| {
            GenerateRequest::user(format!("Summarise ticket {i}: the customer reports a failed payment and a duplicate charge."))
                .family("nova")
                .slo_class(SloClass::Standard)
                .max_tokens(120)
        },
    },
    Lane {
        name: "background jobs (nova)",
        make: |i| {
            GenerateRequest::user(format!("Tag document {i} with up to five topics."))
                .family("nova")
                .slo_class(SloClass::Background)
                .max_tokens(150)
        },
    },
    Lane {
        name: "self-hosted (sagemaker tgi)",
        make: |i| {
            GenerateRequest::user(format!("Classify intent of message {i}: 'cancel my plan'"))
                .model("laneway-demo-llm")
                .slo_class(SloClass::Standard)
                .max_tokens(40)
        },
    },
];

pub async fn run(args: DemoArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(scale) = args.time_scale {
        anyhow::ensure!(
            scale > 0.0 && scale.is_finite(),
            "--time-scale must be > 0, got {scale}"
        );
        scenario.time_scale = scale;
    }
    let emulator = Emulator::start(scenario)
        .await
        .context("starting the emulator on 127.0.0.1")?;
    let config = laneway::Config::from_toml_str(&format!("{CONFIG}\n{BATCH}"))?;
    let router = Router::builder()
        .config(config)
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await?;

    // A throttle storm on the interactive lane and a whole-region outage mid-run show
    // failover at work; times are scaled with the scenario.
    let scale = emulator.scenario().time_scale;
    let ms = |real: f64| (real * scale) as u64;
    emulator.add_fault(
        Fault::new(FaultKind::Throttle)
            .for_region("us-east-1")
            .for_model("anthropic.claude-sonnet-4-5-20250929-v1:0")
            .times(4),
    );
    let mut outage = Fault::new(FaultKind::Outage).for_region("us-east-1");
    outage.start_ms = Some(ms(1500.0));
    outage.end_ms = Some(ms(3000.0));
    emulator.add_fault(outage);

    println!(
        "laneway demo: emulator at {} (scenario {}, no AWS account needed)",
        emulator.url(),
        args.scenario
    );
    println!(
        "{} lanes x {} requests, {} in flight per lane, streamed\ninjected: 4 throttled Claude calls in us-east-1; all of us-east-1 down from {:.1} s to {:.1} s\n",
        LANES.len(),
        args.requests,
        args.concurrency,
        1.5 * scale,
        3.0 * scale
    );
    let started = Instant::now();
    let lanes = futures::future::join_all(
        LANES
            .iter()
            .map(|lane| drive(&router, lane, args.requests, args.concurrency)),
    )
    .await;
    let elapsed = started.elapsed();

    print!("{}", table(&lanes));
    let total: f64 = lanes.iter().map(|l| l.cost_usd).sum();
    println!(
        "\n{} requests in {:.1} s, total cost ${total:.4}",
        lanes.iter().map(|l| l.requests).sum::<u64>(),
        elapsed.as_secs_f64()
    );
    let batch_ok = batch_lane(&router).await?;

    println!("\nThe router's own metrics (router.metrics()):\n");
    print!("{}", metrics_table(&router.metrics()));
    let mut failures: Vec<&String> = lanes.iter().flat_map(|l| &l.errors).collect();
    let batch_failed = format!("the batch lane answered {batch_ok} of {BATCH_REQUESTS}");
    if batch_ok < BATCH_REQUESTS {
        failures.push(&batch_failed);
    }
    emulator.shutdown().await;
    if failures.is_empty() {
        Ok(std::process::ExitCode::SUCCESS)
    } else {
        for f in failures.iter().take(5) {
            eprintln!("failed: {f}");
        }
        eprintln!("{} request(s) failed", failures.len());
        Ok(std::process::ExitCode::from(1))
    }
}

/// Requests of the demo's nightly backfill.
const BATCH_REQUESTS: usize = 120;

/// A nightly backfill through the batch lane: one job, read back in order; returns how many
/// requests were answered.
async fn batch_lane(router: &Router) -> anyhow::Result<usize> {
    let requests: Vec<GenerateRequest> = (0..BATCH_REQUESTS)
        .map(|i| {
            GenerateRequest::user(format!("Summarise archived ticket {i} in one line."))
                .model("amazon.nova-lite-v1:0")
                .max_tokens(40)
                .slo_class(SloClass::Batch)
        })
        .collect();
    let started = Instant::now();
    let handle = router.submit_batch(requests).await?;
    router.wait_batch(&handle, |_| {}).await?;
    let items = router.batch_results(&handle).await?;
    let ok = items.iter().filter(|i| i.is_ok()).count();
    let c = router.batch_cost_comparison(&items);
    println!(
        "\nbatch lane: {ok}/{} answered by {} job(s) in {:.1} s; ${:.5} at the batch price (the same tokens on standard ${:.5}, on flex ${:.5})",
        items.len(),
        handle.jobs.len(),
        started.elapsed().as_secs_f64(),
        c.batch_usd,
        c.standard_usd,
        c.flex_usd
    );
    Ok(ok)
}

/// Calls per task: a task (a conversation, a document) succeeds when all its calls do.
const CALLS_PER_TASK: usize = 3;

async fn drive(router: &Router, lane: &Lane, requests: usize, concurrency: usize) -> LaneStats {
    let mut stats = LaneStats::new(lane.name);
    let task = |i: usize| format!("{}#{}", lane.name, i / CALLS_PER_TASK);
    let mut outcomes = stream::iter(0..requests)
        .map(|i| async move { (i, one(router, (lane.make)(i).task(task(i))).await) })
        .buffer_unordered(concurrency);
    let mut failed_tasks = std::collections::BTreeSet::new();
    while let Some((i, outcome)) = outcomes.next().await {
        if outcome.is_err() {
            failed_tasks.insert(i / CALLS_PER_TASK);
        }
        stats.record(outcome);
    }
    for t in 0..requests.div_ceil(CALLS_PER_TASK) {
        router.finish_task(&task(t * CALLS_PER_TASK), !failed_tasks.contains(&t));
    }
    stats
}

/// Streams one request to its end and returns the completed response.
async fn one(router: &Router, request: GenerateRequest) -> Result<GenerateResponse, String> {
    let mut events = router.stream(request).await.map_err(|e| e.to_string())?;
    while let Some(event) = events.next().await {
        if let StreamEvent::Completed(done) = event.map_err(|e| e.to_string())? {
            return Ok(*done);
        }
    }
    Err("the stream ended without a completed response".into())
}
