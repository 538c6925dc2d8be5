//! `laneway demo`: the emulator in-process, a mixed workload through the router, a table; then
//! the same workload and faults through the client a team would write without Laneway, and
//! both side by side.

mod compare;
mod naive;
mod routing;

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, stream};
use laneway::{GenerateRequest, GenerateResponse, Router, Slo, SloClass, StreamEvent};
use laneway_emulator::{
    Emulator, Fault, FaultKind, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY,
};

use crate::report::{LaneStats, metrics_table, table};

/// The router configuration the demo uses: built-in Bedrock models plus the emulator's
/// SageMaker endpoints.
const CONFIG: &str = include_str!("../../../examples/startup.toml");

/// The batch lane's settings for the demo: the emulator's S3 and a role it accepts.
const BATCH: &str = "[batch]\nbucket = \"laneway-demo-batch\"\nrole_arn = \"arn:aws:iam::123456789012:role/laneway-batch\"\npoll_interval = 100.0\n";

/// Options of `laneway demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
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
    /// A TOML file added to the demo's configuration (examples/startup.toml and a [batch]
    /// section), for tables the demo does not set: `[families.claude]` with `router = false`
    /// to compare without variant routing, say.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    metrics: crate::metrics_serve::MetricsServeArgs,
}

/// One lane of the workload.
struct Lane {
    name: &'static str,
    make: fn(usize) -> GenerateRequest,
}

/// A support team's policy handbook, sent as the system prompt of every chat turn (about 6,000
/// tokens: above Claude Haiku 4.5's 4,096-token cache minimum).
fn support_handbook() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| handbook("support", 120))
}

/// A finance team's ticket-triage guide (about 1,600 tokens: above Nova's 1,000 minimum).
fn triage_guide() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| handbook("triage", 32))
}

fn handbook(kind: &str, sections: usize) -> String {
    const RULES: [&str; 8] = [
        "Refunds within thirty days are approved without a manager when the order shipped late.",
        "Duplicate charges are reversed the same day and the customer is told the bank may take five days.",
        "Never promise a delivery date the carrier has not confirmed; quote the tracking page instead.",
        "Escalate any mention of fraud, chargebacks or legal action to the risk queue with the ticket id.",
        "Subscription downgrades take effect at the end of the billing period unless the plan was bought today.",
        "Address changes after dispatch need the carrier's redirect form; offer to file it for the customer.",
        "Accessibility requests are handled first and logged with the accommodation the customer asked for.",
        "Close every answer by stating what happens next and when the customer will hear from us again.",
    ];
    let mut out = format!("You follow the {kind} handbook below. Answer in two sentences.\n");
    for i in 0..sections {
        out += &format!("Section {kind}-{i}: {}\n", RULES[i % RULES.len()]);
    }
    out
}

const LANES: &[Lane] = &[
    Lane {
        name: "interactive chat (claude)",
        make: |i| {
            GenerateRequest::user(format!("Customer #{i} asks: where is my order?"))
                .system(support_handbook())
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
                .system(triage_guide())
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

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<std::process::ExitCode> {
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
    let scale = scenario.time_scale;
    let emulator = start_with_faults(scenario.clone()).await?;
    let extra = match &args.config {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--config {}: {e}", path.display()))?,
        None => String::new(),
    };
    let config = laneway::Config::from_toml_str(&format!("{CONFIG}\n{BATCH}\n{extra}"))?;
    let router = Router::builder()
        .config(config.clone())
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await?;

    println!(
        "laneway demo: emulator at {} (scenario {}, no AWS account needed)",
        emulator.url(),
        args.scenario
    );
    let metrics = args.metrics.start().await?;
    if let Some(m) = &metrics {
        m.serve(&router, Vec::new());
    }
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
    let stats: Vec<&LaneStats> = lanes.iter().map(|(s, _)| s).collect();

    print!("{}", table(&stats));
    let total: f64 = stats.iter().map(|l| l.cost_usd).sum();
    println!(
        "\n{} requests in {:.1} s, total cost ${total:.4}",
        stats.iter().map(|l| l.requests).sum::<u64>(),
        elapsed.as_secs_f64()
    );
    let batch_ok = batch_lane(&router).await?;
    let routing_errors = routing::run(&router, &config).await;

    println!("\nThe router's own metrics (router.metrics()):\n");
    print!("{}", metrics_table(&router.metrics()));
    let mut failures: Vec<String> = stats.iter().flat_map(|l| l.errors.clone()).collect();
    failures.extend(routing_errors);
    if batch_ok < BATCH_REQUESTS {
        failures.push(format!(
            "the batch lane answered {batch_ok} of {BATCH_REQUESTS}"
        ));
    }
    drop(stats);
    if let Some(server) = metrics {
        server.finish().await;
    }
    emulator.shutdown().await;

    // The same workload and the same faults, on a fresh emulator, through the client a team
    // writes without Laneway.
    let emulator = start_with_faults(scenario).await?;
    let naive = naive::NaiveClient::new(&emulator.url(), config).await;
    let naive_calls: Vec<compare::Call> = futures::future::join_all(
        LANES
            .iter()
            .map(|lane| drive_naive(&naive, lane, args.requests, args.concurrency)),
    )
    .await
    .into_iter()
    .flatten()
    .collect();
    emulator.shutdown().await;
    let laneway_calls: Vec<compare::Call> = lanes.into_iter().flat_map(|(_, c)| c).collect();
    let naive = compare::Side::new("naive client", naive_calls, scale);
    let laneway = compare::Side::new("Laneway", laneway_calls, scale);
    println!(
        "\nThe same workload and faults without Laneway: the official SDKs with their default retries, \
         each family's strongest variant at the standard tier, one region ({}), no cache checkpoints \
         (times in scenario time):\n",
        naive::REGION
    );
    print!("{}", compare::table(&naive, &laneway));
    if let (Some(a), Some(b)) = (
        naive.cost_per_successful_task(),
        laneway.cost_per_successful_task(),
    ) {
        let met = |s: &compare::Side| {
            s.ttft_met(SloClass::Interactive)
                .map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0))
        };
        println!(
            "\nsaving: {:.0}% per successful task; calls lost: naive {}, Laneway {}; interactive TTFT target met: naive {}, Laneway {}",
            (1.0 - b / a) * 100.0,
            naive.lost(),
            laneway.lost(),
            met(&naive),
            met(&laneway)
        );
    }
    for e in naive.errors() {
        println!("  naive client error: {e}");
    }

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

/// An emulator for `scenario` with the demo's faults: a throttle storm on Claude Sonnet in
/// us-east-1 and a whole-region outage of us-east-1 from 1.5 s to 3 s (scenario time).
async fn start_with_faults(scenario: Scenario) -> anyhow::Result<Emulator> {
    let emulator = Emulator::start(scenario)
        .await
        .context("starting the emulator on 127.0.0.1")?;
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
    Ok(emulator)
}

/// The naive client's run of one lane.
async fn drive_naive(
    client: &naive::NaiveClient,
    lane: &Lane,
    requests: usize,
    concurrency: usize,
) -> Vec<compare::Call> {
    let task = |i: usize| format!("{}#{}", lane.name, i / CALLS_PER_TASK);
    stream::iter(0..requests)
        .map(|i| async move { client.call(&(lane.make)(i).task(task(i))).await })
        .buffer_unordered(concurrency)
        .collect()
        .await
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

async fn drive(
    router: &Router,
    lane: &Lane,
    requests: usize,
    concurrency: usize,
) -> (LaneStats, Vec<compare::Call>) {
    let mut stats = LaneStats::new(lane.name);
    let mut calls = Vec::with_capacity(requests);
    let task = |i: usize| format!("{}#{}", lane.name, i / CALLS_PER_TASK);
    let mut outcomes = stream::iter(0..requests)
        .map(|i| async move {
            let request = (lane.make)(i).task(task(i));
            let outcome = one(router, request.clone()).await;
            (i, request, outcome)
        })
        .buffer_unordered(concurrency);
    let mut failed_tasks = std::collections::BTreeSet::new();
    while let Some((i, request, outcome)) = outcomes.next().await {
        if outcome.is_err() {
            failed_tasks.insert(i / CALLS_PER_TASK);
        }
        calls.push(compare::Call::of_laneway(&request, &outcome));
        stats.record(outcome);
    }
    for t in 0..requests.div_ceil(CALLS_PER_TASK) {
        router.finish_task(&task(t * CALLS_PER_TASK), !failed_tasks.contains(&t));
    }
    (stats, calls)
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
