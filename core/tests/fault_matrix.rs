//! The fault matrix: every fault the emulator knows, on one of three regions, through the
//! router and the official SDKs, 32 calls in flight, the emulator on its accelerated clock.
//! Each row reports calls, successes, failures by kind, attempts per call, latency against the
//! fault-free row, and text duplicated in streams; the table is printed (`--nocapture`) and
//! recorded in RELIABILITY.md.
//!
//! Sizes: `LANEWAY_FAULT_MATRIX_CALLS` calls per row (default 96) and
//! `LANEWAY_FAULT_MATRIX_STALL_CALLS` for the long stall row (default 320; RELIABILITY.md's run
//! uses 10,000).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

// The router's clock (tokio's): latencies are measured on the clock its limits and budget read.
use tokio::time::Instant;

use futures::StreamExt;
use laneway::{Error, GenerateRequest, Router, StreamEvent};
use laneway_emulator::{Emulator, Fault, FaultKind, Scenario};

const IN_FLIGHT: usize = 32;

/// First-token and idle limits of the matrix's routers: the emulator's answers start within
/// about 10 ms on its accelerated clock, so a stall costs this much before failover.
const FIRST_TOKEN_MS: u64 = 1000;

fn calls_per_row() -> usize {
    env_usize("LANEWAY_FAULT_MATRIX_CALLS", 96)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `fast` scenario, with the TGI and OpenAI-chat endpoints served in all three regions.
async fn emulator() -> Emulator {
    let mut scenario = Scenario::builtin("fast").unwrap();
    for e in &mut scenario.endpoints {
        // Room for the matrix's 32 calls in flight: the rows measure faults, not capacity.
        e.performance.max_concurrency = e.performance.max_concurrency.max(IN_FLIGHT as u32);
    }
    let extra: Vec<_> = scenario
        .endpoints
        .iter()
        .filter(|e| e.name == "laneway-demo-llm-large" || e.name == "laneway-demo-chat")
        .flat_map(|e| {
            ["us-west-2", "eu-west-1"].map(|region| {
                let mut e = e.clone();
                e.region = region.into();
                e
            })
        })
        .collect();
    scenario.endpoints.extend(extra);
    Emulator::start(scenario).await.unwrap()
}

/// The startup configuration with time limits scaled to the emulator's clock and two
/// self-hosted models served in three regions.
fn config(extra: &str) -> laneway::Config {
    common::config(&format!(
        r#"
[routing.timeouts]
connect = 1000.0
[routing.timeouts.standard]
first_token = {FIRST_TOKEN_MS}.0
idle = {FIRST_TOKEN_MS}.0
deadline = 20000.0

[models."matrix-tgi"]
provider = "sagemaker"
endpoints = [
  {{ name = "laneway-demo-llm-large", region = "us-east-1", format = "tgi" }},
  {{ name = "laneway-demo-llm-large", region = "us-west-2", format = "tgi" }},
  {{ name = "laneway-demo-llm-large", region = "eu-west-1", format = "tgi" }},
]
price = {{ input_per_1k = 0.0002, output_per_1k = 0.0006 }}

[models."matrix-chat"]
provider = "sagemaker"
endpoints = [
  {{ name = "laneway-demo-chat", region = "us-east-1", format = "openai_chat", inference_component = "llama-3-8b-ic" }},
  {{ name = "laneway-demo-chat", region = "us-west-2", format = "openai_chat", inference_component = "llama-3-8b-ic" }},
  {{ name = "laneway-demo-chat", region = "eu-west-1", format = "openai_chat", inference_component = "llama-3-8b-ic" }},
]
price = {{ input_per_1k = 0.0002, output_per_1k = 0.0006 }}

# GPT-5.6 Luna on the OpenAI-compatible surfaces only (bedrock-runtime's `/openai/v1` through
# its `us.` and `global.` profiles, bedrock-mantle in us-east-1 and us-west-2).
[models."openai.gpt-5.6-luna"]
converse = false
{extra}
"#
    ))
}

/// Which lane a row's calls take.
#[derive(Debug, Clone, Copy)]
enum Lane {
    Bedrock,
    Tgi,
    Chat,
    /// OpenAI's GPT on Bedrock's OpenAI-compatible endpoints (Responses, server-sent events).
    Gpt,
}

impl Lane {
    /// The lane's name in the matrix's rows.
    fn label(self) -> &'static str {
        match self {
            Lane::Bedrock => "bedrock",
            Lane::Tgi => "tgi",
            Lane::Chat => "chat",
            Lane::Gpt => "gpt",
        }
    }
}

const GPT: &str = "openai.gpt-5.6-luna";

fn request(lane: Lane, i: usize) -> GenerateRequest {
    let model = match lane {
        Lane::Bedrock => "amazon.nova-lite-v1:0",
        Lane::Tgi => "matrix-tgi",
        Lane::Chat => "matrix-chat",
        Lane::Gpt => GPT,
    };
    // Answers of 40 to 300 tokens: streams of hundreds of events, not a handful.
    GenerateRequest::user(format!(
        "Request {i}: write a short paragraph about reliable systems."
    ))
    .model(model)
    .max_tokens(300)
    // A stream broken after delivering text goes on from that text.
    .continue_on_interrupt(true)
}

/// What one row measured.
#[derive(Debug, Default)]
struct Row {
    /// From the first call's start to the last call's end, on the router's clock.
    elapsed: Duration,
    /// The most attempts of one successful call cut by a time limit in one region: what the
    /// faulted region cost it. (A healthy region's answer late enough to meet a limit too is
    /// the machine's load, and is bounded by `paid`'s latency bound, not by this.)
    most_limits_paid: usize,
    /// Each successful call's latency and the attempts of it a time limit cut.
    paid: Vec<(Duration, usize)>,
    /// The slowest successful call that no time limit cut.
    unpaid_slowest: Duration,
    name: String,
    calls: usize,
    succeeded: usize,
    failed: BTreeMap<String, usize>,
    attempts: u64,
    latencies: Vec<Duration>,
    duplicated_chars: usize,
    requests_seen: u64,
    /// Continuations the emulator served, and those whose prefill was not the delivered
    /// start of its answer.
    continued: u64,
    continuation_mismatches: u64,
}

impl Row {
    fn quantile(&self, q: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort_unstable();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l[((l.len() as f64 * q).ceil() as usize).clamp(1, l.len()) - 1]
    }

    fn failed_total(&self) -> usize {
        self.failed.values().sum()
    }

    fn markdown(&self, base: Option<&Row>) -> String {
        let ms = |d: Duration| format!("{:.0}", d.as_secs_f64() * 1000.0);
        let vs = |q: f64| match base {
            Some(b) => format!("{} ({})", ms(self.quantile(q)), ms(b.quantile(q))),
            None => ms(self.quantile(q)),
        };
        let failed = if self.failed.is_empty() {
            "0".to_string()
        } else {
            self.failed
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} ({}) | {} |",
            self.name,
            self.calls,
            self.succeeded,
            failed,
            self.attempts as f64 / self.calls.max(1) as f64,
            vs(0.5),
            vs(0.99),
            self.continued,
            self.continuation_mismatches,
            self.duplicated_chars
        )
    }
}

/// What a call that succeeded sent: attempts, of them those cut by a time limit, and the most
/// of those in any one region.
#[derive(Debug, Clone, Copy)]
struct Sent {
    attempts: u32,
    timed_out: usize,
    timed_out_in_one_region: usize,
}

impl Sent {
    fn of(decision: &laneway::RouteDecision) -> Self {
        let cut: Vec<&str> = decision
            .failed_attempts
            .iter()
            .filter(|a| a.kind == laneway::ErrorKind::Timeout)
            .map(|a| a.region.as_str())
            .collect();
        let in_one_region = cut
            .iter()
            .map(|r| cut.iter().filter(|x| *x == r).count())
            .max()
            .unwrap_or(0);
        Sent {
            attempts: decision.attempts_sent,
            timed_out: cut.len(),
            timed_out_in_one_region: in_one_region,
        }
    }
}

/// One call: streamed (odd `i`) or not; its latency, attempts and duplicated characters.
async fn one_call(
    router: &Router,
    req: GenerateRequest,
    streamed: bool,
) -> (Result<Sent, Error>, Duration, usize) {
    let started = Instant::now();
    if !streamed {
        let r = router.generate(req).await;
        return (r.map(|r| Sent::of(&r.decision)), started.elapsed(), 0);
    }
    let mut s = match router.stream(req).await {
        Ok(s) => s,
        Err(e) => return (Err(e), started.elapsed(), 0),
    };
    let mut delivered = String::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(StreamEvent::TextDelta { text, .. }) => delivered.push_str(&text),
            Ok(StreamEvent::Completed(done)) => {
                let text = done.text();
                // Whatever the caller saw beyond the final answer was delivered twice.
                let duplicated = delivered.len().saturating_sub(text.len())
                    + usize::from(!text.starts_with(&delivered)) * delivered.len();
                return (Ok(Sent::of(&done.decision)), started.elapsed(), duplicated);
            }
            Ok(_) => {}
            Err(e) => return (Err(e), started.elapsed(), 0),
        }
    }
    panic!("a stream ended without Completed or an error")
}

fn attempts_of(e: &Error) -> u32 {
    match e {
        Error::AllTargetsFailed { attempts, .. } => attempts.len() as u32,
        _ => 1,
    }
}

async fn run_row(name: &str, router: &Router, emu: &Emulator, lane: Lane, calls: usize) -> Row {
    run_requests(name, router, emu, calls, move |i| {
        (request(lane, i), i % 2 == 1)
    })
    .await
}

async fn run_requests(
    name: &str,
    router: &Router,
    emu: &Emulator,
    calls: usize,
    make: impl Fn(usize) -> (GenerateRequest, bool),
) -> Row {
    let before = common::requests_seen(emu);
    let (continued_before, mismatched_before) = continuations(emu);
    let started = Instant::now();
    let results: Vec<_> = futures::stream::iter(0..calls)
        .map(|i| {
            let (req, streamed) = make(i);
            one_call(router, req, streamed)
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let mut row = Row {
        name: name.to_string(),
        calls,
        elapsed: started.elapsed(),
        ..Row::default()
    };
    for (result, latency, duplicated) in results {
        row.latencies.push(latency);
        row.duplicated_chars += duplicated;
        match result {
            Ok(sent) => {
                row.succeeded += 1;
                row.attempts += u64::from(sent.attempts);
                row.most_limits_paid = row.most_limits_paid.max(sent.timed_out_in_one_region);
                row.paid.push((latency, sent.timed_out));
                if sent.timed_out == 0 {
                    row.unpaid_slowest = row.unpaid_slowest.max(latency);
                }
            }
            Err(e) => {
                row.attempts += u64::from(attempts_of(&e));
                *row.failed.entry(e.kind().to_string()).or_default() += 1;
            }
        }
    }
    row.requests_seen = common::requests_seen(emu) - before;
    let (continued, mismatched) = continuations(emu);
    row.continued = continued - continued_before;
    row.continuation_mismatches = mismatched - mismatched_before;
    row
}

fn continuations(emu: &Emulator) -> (u64, u64) {
    emu.counters().iter().fold((0, 0), |(c, m), r| {
        (
            c + r.counter.continued,
            m + r.counter.continuation_mismatches,
        )
    })
}

async fn router(emu: &Emulator, extra: &str) -> Router {
    common::router_with(emu, config(extra)).await
}

/// The calls of `row` that took longer than the time limits they paid plus twice the slowest
/// call no limit cut in the same run (same machine, same load): a paid call's failover runs in
/// a burst of as many failovers as calls were in flight, so its second leg may take up to
/// about twice a call's time. Empty when every call kept that bound.
fn over_their_bound(row: &Row) -> Vec<(Duration, usize)> {
    let limit = Duration::from_millis(FIRST_TOKEN_MS);
    row.paid
        .iter()
        .filter(|(latency, cuts)| *latency > limit * *cuts as u32 + row.unpaid_slowest * 2)
        .copied()
        .collect()
}

fn print_table(title: &str, rows: &[(&Row, Option<&Row>)]) {
    println!("\n{title}\n");
    println!(
        "| row | calls | succeeded | failed | attempts/call | p50 ms (fault-free) | p99 ms (fault-free) | continued (prefill mismatched) | chars duplicated |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (row, base) in rows {
        println!("{}", row.markdown(*base));
    }
}

/// Every wire fault and refusal on us-east-1, the first-ranked region, for each lane: one test
/// per backend, so that they run side by side.
mod every_fault_on_one_of_three_regions_loses_no_call {
    use super::*;

    fn retry_after(value: &str) -> Fault {
        let mut f = Fault::new(FaultKind::RetryAfter);
        f.retry_after = Some(value.into());
        f
    }

    /// A fault that strikes after 20 tokens of the answer.
    fn mid(kind: FaultKind) -> Fault {
        Fault::new(kind).after(20)
    }

    /// The faults of a stream's life that every streaming backend meets: stalls before the
    /// answer, after its headers and mid-stream, resets, and a truncated answer.
    fn stream_faults() -> Vec<(&'static str, Fault)> {
        vec![
            ("stall", Fault::new(FaultKind::Stall)),
            (
                "stall_after_headers",
                Fault::new(FaultKind::StallAfterHeaders),
            ),
            (
                "stall_mid_stream (20 tokens)",
                mid(FaultKind::StallMidStream),
            ),
            ("reset (after headers)", Fault::new(FaultKind::Reset)),
            ("reset (20 tokens)", mid(FaultKind::Reset)),
            ("truncate", mid(FaultKind::Truncate)),
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bedrock() {
        let mut faults = stream_faults();
        faults.extend([
            ("malformed_json", mid(FaultKind::MalformedJson)),
            ("bad_frame", mid(FaultKind::BadFrame)),
            ("html_error (502 page)", Fault::new(FaultKind::HtmlError)),
            ("retry_after 3600", retry_after("3600")),
            ("retry_after 1e20", retry_after("1e20")),
            ("retry_after garbage", retry_after("soon")),
            ("internal_error", Fault::new(FaultKind::InternalError)),
            ("outage", Fault::new(FaultKind::Outage)),
        ]);
        let rows = faults
            .into_iter()
            .map(|(name, fault)| (Lane::Bedrock, name, fault.for_region("us-east-1")));
        run_rows(rows.collect()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sagemaker() {
        let mut overloaded_429 = Fault::new(FaultKind::ContainerOverloaded);
        overloaded_429.status = Some(429);
        let mut faults = vec![
            ("container_overloaded 429", Lane::Tgi, overloaded_429),
            (
                "container_overloaded 503",
                Lane::Chat,
                Fault::new(FaultKind::ContainerOverloaded),
            ),
            (
                "plain_json_lines (TGI)",
                Lane::Tgi,
                Fault::new(FaultKind::PlainJsonLines),
            ),
            (
                "plain_json_lines (chat)",
                Lane::Chat,
                Fault::new(FaultKind::PlainJsonLines),
            ),
        ];
        for (name, f) in [
            ("stall", Fault::new(FaultKind::Stall)),
            ("reset (20 tokens)", mid(FaultKind::Reset)),
            ("truncate", mid(FaultKind::Truncate)),
            ("malformed_json", mid(FaultKind::MalformedJson)),
        ] {
            faults.push((name, Lane::Tgi, f.clone()));
            faults.push((name, Lane::Chat, f));
        }
        let rows = faults.into_iter().map(|(name, lane, fault)| {
            let endpoint = match lane {
                Lane::Tgi => "laneway-demo-llm-large",
                _ => "laneway-demo-chat",
            };
            (
                lane,
                name,
                fault.for_region("us-east-1").for_model(endpoint),
            )
        });
        run_rows(rows.collect()).await;
    }

    /// The OpenAI-compatible backend: the same faults on its server-sent events (a malformed
    /// event for `malformed_json`), on every surface of the model in us-east-1.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn openai_compatible() {
        let mut faults = stream_faults();
        faults.extend([
            ("malformed SSE event", mid(FaultKind::MalformedJson)),
            ("html_error (502 page)", Fault::new(FaultKind::HtmlError)),
            ("429 retry_after 3600", retry_after("3600")),
            ("429 retry_after garbage", retry_after("soon")),
            ("internal_error", Fault::new(FaultKind::InternalError)),
            ("outage", Fault::new(FaultKind::Outage)),
        ]);
        let rows = faults.into_iter().map(|(name, fault)| {
            (
                Lane::Gpt,
                name,
                fault.for_region("us-east-1").for_model(GPT),
            )
        });
        run_rows(rows.collect()).await;
    }

    /// Runs the fault-free row of each lane among `rows`, then each row with its fault, on an
    /// emulator of its own; prints the table and checks every row.
    async fn run_rows(rows: Vec<(Lane, &str, Fault)>) {
        let emu = emulator().await;
        let calls = calls_per_row();
        let mut baselines = BTreeMap::new();
        for (lane, _, _) in &rows {
            if !baselines.contains_key(lane.label()) {
                let r = router(&emu, "").await;
                let label = lane.label();
                let row = run_row(&format!("{label}: fault-free"), &r, &emu, *lane, calls).await;
                baselines.insert(label, row);
            }
        }
        let mut measured = Vec::new();
        for (lane, name, fault) in rows {
            let id = emu.add_fault(fault);
            let r = router(&emu, "").await;
            let label = lane.label();
            measured.push((
                lane,
                run_row(&format!("{label}: {name}"), &r, &emu, lane, calls).await,
            ));
            emu.remove_fault(id);
        }
        let mut failures = Vec::new();
        for (lane, row) in &measured {
            // A GPT stream broken after it delivered text ends interrupted: the
            // OpenAI-compatible APIs take no prefill to continue from
            // (`Reason::ContinuationRefused`). Only streamed calls (half the row) may end so;
            // whole calls start again elsewhere and succeed.
            let refused_continuations = matches!(lane, Lane::Gpt)
                && row.failed.keys().all(|k| k == "stream_interrupted")
                && row.failed_total() <= row.calls / 2;
            if (row.failed_total() > 0 && !refused_continuations)
                || row.duplicated_chars > 0
                || row.continuation_mismatches > 0
            {
                failures.push(format!(
                    "{}: {:?}, {} chars duplicated",
                    row.name, row.failed, row.duplicated_chars
                ));
            }
            // The latency bound of each row: a call pays at most one time limit in a region
            // (the fault is in one region of three), and ends within the limits it paid plus
            // twice the row's slowest call that paid none.
            let over = over_their_bound(row);
            if row.most_limits_paid > 1 || !over.is_empty() {
                failures.push(format!(
                    "{}: a call paid {} limits; calls beyond their limits paid + 2 x {:?}: {over:?}",
                    row.name, row.most_limits_paid, row.unpaid_slowest
                ));
            }
        }
        let mut printed: Vec<(&Row, Option<&Row>)> =
            baselines.values().map(|b| (b, None)).collect();
        printed.extend(
            measured
                .iter()
                .map(|(lane, row)| (row, baselines.get(lane.label()))),
        );
        print_table(
            &format!(
                "Fault on us-east-1 of three regions, {calls} calls per row (half streamed), {IN_FLIGHT} in flight"
            ),
            &printed,
        );
        assert!(
            failures.is_empty(),
            "rows with lost calls or beyond their latency bound:\n{}",
            failures.join("\n")
        );
    }
}

/// One region stalling for a long run: every call succeeds, each pays at most one first-token
/// limit, and only the first wave pays one (the region is then kept away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_stalling_for_a_whole_run_loses_nothing() {
    let emu = emulator().await;
    let calls = env_usize("LANEWAY_FAULT_MATRIX_STALL_CALLS", 320);
    let base = run_row(
        "fault-free",
        &router(&emu, "").await,
        &emu,
        Lane::Bedrock,
        calls,
    )
    .await;
    emu.add_fault(Fault::new(FaultKind::Stall).for_region("us-east-1"));
    let row = run_row(
        "us-east-1 stalls",
        &router(&emu, "").await,
        &emu,
        Lane::Bedrock,
        calls,
    )
    .await;
    // A stall costs a call one first-token limit in the stalled region and a failover, and
    // only the first wave pays it: the calls in flight when it began, and those started before the region's failures
    // eject it. Each call ends within the limits it paid plus twice the slowest call no limit
    // cut in the same run (same machine, same load): a paid call's failover runs in a burst of
    // as many failovers as calls were in flight.
    let outlier = config("").routing.outlier;
    let ejects_after = outlier.consecutive_failures as usize;
    let paid: Vec<Duration> = row
        .paid
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(l, _)| *l)
        .collect();
    let over = over_their_bound(&row);
    println!(
        "\nstall run: {} calls paid a first-token limit ({FIRST_TOKEN_MS} ms; bound {IN_FLIGHT} in flight + {ejects_after}), \
         at most {} in a call in one region (bound 1), the slowest in {:?}; each call within its limits + 2 x the slowest call no limit cut \
         ({:?}): {} over; p99 {:?} (fault-free p99 {:?})",
        paid.len(),
        row.most_limits_paid,
        paid.iter().max().copied().unwrap_or_default(),
        row.unpaid_slowest,
        over.len(),
        row.quantile(0.99),
        base.quantile(0.99)
    );
    print_table(
        "One region stalling for the whole run",
        &[(&base, None), (&row, Some(&base))],
    );
    assert_eq!(row.failed_total(), 0, "{:?}", row.failed);
    assert_eq!(row.succeeded, calls);
    assert!(
        row.most_limits_paid <= 1,
        "a call paid {} limits",
        row.most_limits_paid
    );
    assert!(paid.len() < row.paid.len(), "every call paid the stall");
    // A run longer than an ejection also sends the probes that end it to the stalled region.
    if row.elapsed < outlier.base_ejection {
        assert!(
            paid.len() <= IN_FLIGHT + ejects_after,
            "{} calls paid the stall",
            paid.len()
        );
    }
    assert!(
        over.is_empty(),
        "calls beyond their limits paid + 2 x {:?}: {over:?}",
        row.unpaid_slowest
    );
}

/// A throttle storm on two regions of three, a total outage, and every target throttling: the
/// storm costs attempts, not calls; the outage and the everywhere-throttle end every call with
/// a clear error before its deadline, and retries stay within the budget (at most `ratio` more
/// attempts than calls, or the per-second floor over a slow run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttle_storms_and_total_outages_stay_within_the_budget() {
    let emu = emulator().await;
    let calls = calls_per_row().max(96);
    let storm_ids = [
        emu.add_fault(Fault::new(FaultKind::Throttle).for_region("us-east-1")),
        emu.add_fault(Fault::new(FaultKind::Throttle).for_region("us-west-2")),
    ];
    let storm = run_row(
        "throttle storm (2 of 3 regions)",
        &router(&emu, "").await,
        &emu,
        Lane::Bedrock,
        calls,
    )
    .await;
    for id in storm_ids {
        emu.remove_fault(id);
    }
    assert_eq!(storm.failed_total(), 0, "{:?}", storm.failed);

    // The retry budget's contract at the defaults: extra attempts add at most `ratio` of the
    // calls, and never less than `min_per_second` over the run and one window (the floor buys
    // more when the run is slow, as on a loaded machine). Measured on the router's clock.
    let budget = laneway::config::BudgetConfig::default();
    let outage_calls = calls * 10;
    let deadline = Duration::from_secs(5);
    let within_budget = |name: &str, fault: FaultKind| {
        let emu = &emu;
        let name = name.to_string();
        async move {
            let id = emu.add_fault(Fault::new(fault));
            let r = router(emu, "").await;
            let row = run_requests(&name, &r, emu, outage_calls, |i| {
                (request(Lane::Bedrock, i).deadline(deadline), i % 2 == 1)
            })
            .await;
            emu.remove_fault(id);
            let amplification = row.requests_seen as f64 / outage_calls as f64;
            let floor = budget.min_per_second * (row.elapsed + budget.window).as_secs_f64();
            let bound = 1.0 + (budget.ratio * outage_calls as f64).max(floor) / outage_calls as f64;
            println!(
                "\n{name}: {} requests for {outage_calls} calls in {:?}: {amplification:.3}x (bound {bound:.3}x)",
                row.requests_seen, row.elapsed
            );
            assert_eq!(row.succeeded, 0);
            assert!(
                row.latencies.iter().all(|l| *l < deadline),
                "{name}: every call ended before its deadline"
            );
            assert!(
                amplification <= bound + 1e-9,
                "{name}: attempt amplification {amplification}, bound {bound}"
            );
            row
        }
    };
    let outage = within_budget("total outage", FaultKind::Outage).await;
    assert_eq!(
        outage.failed.keys().map(String::as_str).collect::<Vec<_>>(),
        ["all_targets_failed"],
        "a clear AllTargetsFailed for every call"
    );
    // Every target throttling (an account's quota spent everywhere): a throttled call may move
    // to a target with room for free, but not to one refusing as well; waiting for a slot is
    // not a retry either. The same bound holds, and each call ends typed: every target
    // failed, or no slot could come within its deadline.
    let throttled = within_budget("every target throttles", FaultKind::Throttle).await;
    assert!(
        throttled
            .failed
            .keys()
            .all(|k| k == "all_targets_failed" || k == "overloaded"),
        "{:?}",
        throttled.failed
    );
    print_table(
        "Storm and outage",
        &[(&storm, None), (&outage, None), (&throttled, None)],
    );
}

/// Redis hung (SIGSTOP, not killed) in the middle of a run of reserved-tier calls sharing
/// state through it: calls stop waiting for it and lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_hung_mid_run_loses_nothing() {
    let emu = emulator().await;
    let redis = common::redis_server::RedisServer::start();
    let calls = calls_per_row();
    let extra = format!(
        "[shared]\nredis_url = \"{}\"\nkey_prefix = \"matrix\"\n\
         [models.\"anthropic.claude-sonnet-4-5-20250929-v1:0\"]\n\
         reserved = {{ input_tokens_per_minute = 2000000, output_tokens_per_minute = 200000 }}\n",
        redis.url()
    );
    let r = router(&emu, &extra).await;
    let make = |i: usize| {
        let req = GenerateRequest::user(format!("Request {i}: summarise the incident report."))
            .model("anthropic.claude-sonnet-4-5-20250929-v1:0")
            .tier(laneway::ServiceTier::RESERVED)
            .max_tokens(200)
            .continue_on_interrupt(true);
        (req, i % 2 == 1)
    };
    let before = run_requests("Redis answering", &r, &emu, calls, make).await;
    redis.freeze();
    let frozen = run_requests("Redis hung (SIGSTOP)", &r, &emu, calls, make).await;
    let status = r.metrics().shared.expect("shared state configured");
    redis.thaw();
    print_table(
        "Shared state through Redis, then Redis hung mid-run",
        &[(&before, None), (&frozen, Some(&before))],
    );
    assert_eq!(before.failed_total() + frozen.failed_total(), 0);
    assert!(status.degraded, "the router noticed Redis hung: {status:?}");
}

/// What one row of the defaults matrix measured.
#[derive(Debug, Default)]
struct DefaultsRow {
    latencies: Vec<Duration>,
    /// Failures by kind, each with the longest it took.
    failed: BTreeMap<String, (usize, Duration)>,
    /// Calls that paid the fault: an attempt of theirs failed in the faulty region, or a hedge
    /// answered for its attempt there.
    paid: usize,
}

impl DefaultsRow {
    fn quantile(&self, q: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort_unstable();
        l.get(((l.len() as f64 * q).ceil() as usize).clamp(1, l.len().max(1)) - 1)
            .copied()
            .unwrap_or_default()
    }

    fn slowest(&self) -> Duration {
        self.latencies.iter().max().copied().unwrap_or_default()
    }
}

/// One call's answer, streamed (read to its end) or not.
async fn answer(
    router: &Router,
    req: GenerateRequest,
    streamed: bool,
) -> Result<laneway::GenerateResponse, Error> {
    if !streamed {
        return router.generate(req).await;
    }
    let mut s = router.stream(req).await?;
    while let Some(ev) = s.next().await {
        if let StreamEvent::Completed(done) = ev? {
            return Ok(*done);
        }
    }
    panic!("a stream ended without Completed or an error")
}

/// `calls` standard-class calls of `amazon.nova-lite-v1:0` (three regions, us-east-1 first),
/// `in_flight` at once, through `router`.
async fn defaults_row(router: &Router, calls: usize, in_flight: usize) -> DefaultsRow {
    defaults_row_of(router, calls, in_flight, false).await
}

/// [`defaults_row`], the calls streamed or not.
async fn defaults_row_of(
    router: &Router,
    calls: usize,
    in_flight: usize,
    streamed: bool,
) -> DefaultsRow {
    let results: Vec<_> = futures::stream::iter(0..calls)
        .map(|i| async move {
            let started = Instant::now();
            let r = answer(router, request(Lane::Bedrock, i), streamed).await;
            (r, started.elapsed())
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let mut row = DefaultsRow::default();
    for (result, latency) in results {
        match result {
            Ok(done) => {
                row.latencies.push(latency);
                let d = &done.decision;
                let failed_there = d.failed_attempts.iter().any(|a| a.region == "us-east-1");
                // A hedge won away from us-east-1, when the plan still put it first (not a
                // hedge between healthy regions after its ejection).
                let east_ejected = d.reasons.iter().any(|r| {
                    matches!(r, laneway::Reason::TargetDemoted { region, health: laneway::BreakerView::RegionEjected, .. } if &**region == "us-east-1")
                });
                let hedged_away = !east_ejected && d.hedge.as_ref().is_some_and(|h| h.hedge_won);
                row.paid += usize::from(failed_there || hedged_away);
            }
            Err(e) => {
                let slot = row.failed.entry(e.kind().to_string()).or_default();
                slot.0 += 1;
                slot.1 = slot.1.max(latency);
            }
        }
    }
    row
}

/// Prints a defaults table's title, header and fault-free row.
fn print_defaults_table(title: &str, baseline: &DefaultsRow) {
    let ms = |d: Duration| d.as_millis();
    let p99 = baseline.quantile(0.99);
    println!("\n{title}\n");
    println!(
        "| fault in us-east-1 | answered | slowest ms | p99 ms (fault-free) | calls that paid the fault |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| none | {}/{} | {} | {} ({}) | 0 |",
        baseline.latencies.len(),
        baseline.latencies.len() + baseline.failed.values().map(|f| f.0).sum::<usize>(),
        ms(baseline.slowest()),
        ms(p99),
        ms(p99)
    );
}

/// Fault-free calls, so that the router learns its targets' latency.
async fn warm_up_defaults(router: &Router, calls: usize, in_flight: usize) {
    let w = defaults_row(router, calls, in_flight).await;
    assert_eq!(w.latencies.len(), calls, "warm-up failed: {:?}", w.failed);
}

/// The faults a user meets, with the defaults a user gets (no time limit configured): one
/// region of three stalling, silent after headers, silent mid-answer, trickling a byte every
/// two seconds, refusing access; and expired credentials everywhere. Each row: a fresh router
/// warmed up by 40 fault-free calls (its targets' latency learnt), then the fault, then 40
/// standard-class calls, 8 in flight. Every call is answered (expired credentials: every call
/// fails typed within a second), the slowest within 5 s of the fault-free p99, and no more
/// calls pay the fault than were in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_cost_seconds_with_the_defaults_a_user_gets() {
    const CALLS: usize = 40;
    const IN: usize = 8;
    let emu = emulator().await;
    let fresh = || async { common::router_with(&emu, common::config("")).await };
    let baseline = {
        let r = fresh().await;
        warm_up_defaults(&r, CALLS, IN).await;
        defaults_row(&r, CALLS, IN).await
    };
    let p99 = baseline.quantile(0.99);
    let mid = |kind| Fault::new(kind).after(20);
    let mut trickle = Fault::new(FaultKind::Trickle).after(20);
    trickle.delay_ms = Some(2_000);
    let faults: Vec<(&str, Fault)> = vec![
        (
            "stall (accepted, never answered)",
            Fault::new(FaultKind::Stall),
        ),
        (
            "silent after the headers",
            Fault::new(FaultKind::StallAfterHeaders),
        ),
        (
            "silent mid-answer (20 tokens)",
            mid(FaultKind::StallMidStream),
        ),
        ("trickle: 1 byte / 2 s after 20 tokens", trickle),
        (
            "403 AccessDeniedException",
            Fault::new(FaultKind::AccessDenied),
        ),
    ];
    print_defaults_table(
        &format!(
            "Faults with the defaults: {CALLS} standard calls, {IN} in flight, after {CALLS} fault-free ones"
        ),
        &baseline,
    );
    let ms = |d: Duration| d.as_millis();
    for (name, fault) in faults {
        let r = fresh().await;
        warm_up_defaults(&r, CALLS, IN).await;
        let id = emu.add_fault(fault.for_region("us-east-1"));
        let row = defaults_row(&r, CALLS, IN).await;
        emu.remove_fault(id);
        println!(
            "| {name} | {}/{CALLS} | {} | {} ({}) | {} |",
            row.latencies.len(),
            ms(row.slowest()),
            ms(row.quantile(0.99)),
            ms(p99),
            row.paid
        );
        assert!(row.failed.is_empty(), "{name}: {:?}", row.failed);
        assert!(
            row.slowest() <= p99 + Duration::from_secs(5),
            "{name}: the slowest call took {:?}, the fault-free p99 is {p99:?}",
            row.slowest()
        );
        assert!(row.paid <= IN, "{name}: {} calls paid the fault", row.paid);
    }
    // Expired credentials everywhere: each call fails at once, typed, naming the cause.
    let r = fresh().await;
    warm_up_defaults(&r, CALLS, IN).await;
    let id = emu.add_fault(Fault::new(FaultKind::ExpiredToken));
    let row = defaults_row(&r, CALLS, IN).await;
    emu.remove_fault(id);
    let (failed, slowest) = row
        .failed
        .get("authentication")
        .copied()
        .unwrap_or_default();
    println!(
        "| expired credentials (everywhere) | 0/{CALLS}: {failed} failed `authentication`, the slowest in {} ms | | | |",
        ms(slowest)
    );
    assert_eq!(failed, CALLS, "{:?}", row.failed);
    assert!(slowest < Duration::from_secs(1), "{slowest:?}");
}

/// The same faults on a cold router: fresh, the defaults a user gets, no call seen, the fault
/// present from its first call (a process start, a deploy, an instance added in a surge). Its
/// targets' latency is unknown, so its limits and hedges start from the model's prior: every
/// call is answered, the slowest within 5 s of the fault-free p99 plus the prior's hedge delay,
/// none paying the standard class's 30 s ceiling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_cost_seconds_from_a_cold_routers_first_call() {
    const CALLS: usize = 40;
    const IN: usize = 8;
    let emu = emulator().await;
    let fresh = || async { common::router_with(&emu, common::config("")).await };
    let config = common::config("");
    let hedge_delay = config
        .latency_prior(
            "amazon.nova-lite-v1:0",
            Some(laneway::ServiceTier::STANDARD),
            laneway::Api::Converse,
        )
        .ttft_p99;
    let ceiling = config.routing.timeouts.standard.first_token;
    let baseline = defaults_row(&fresh().await, CALLS, IN).await;
    assert!(baseline.failed.is_empty(), "{:?}", baseline.failed);
    let p99 = baseline.quantile(0.99);
    let mut trickle = Fault::new(FaultKind::Trickle).after(20);
    trickle.delay_ms = Some(2_000);
    let faults: Vec<(&str, Fault, bool)> = vec![
        (
            "stall (accepted, never answered)",
            Fault::new(FaultKind::Stall),
            false,
        ),
        (
            "silent after the headers",
            Fault::new(FaultKind::StallAfterHeaders),
            false,
        ),
        (
            "silent mid-answer (20 tokens)",
            Fault::new(FaultKind::StallMidStream).after(20),
            false,
        ),
        (
            "trickle: 1 byte / 2 s after 20 tokens",
            trickle.clone(),
            false,
        ),
        ("stall, streamed", Fault::new(FaultKind::Stall), true),
        (
            "silent mid-answer, streamed",
            Fault::new(FaultKind::StallMidStream).after(20),
            true,
        ),
        ("trickle, streamed", trickle, true),
    ];
    print_defaults_table(
        &format!("Faults on a cold router: {CALLS} standard calls, {IN} in flight, no warm-up"),
        &baseline,
    );
    let ms = |d: Duration| d.as_millis();
    for (name, fault, streamed) in faults {
        let r = fresh().await;
        let id = emu.add_fault(fault.for_region("us-east-1"));
        let row = defaults_row_of(&r, CALLS, IN, streamed).await;
        emu.remove_fault(id);
        println!(
            "| {name} | {}/{CALLS} | {} | {} ({}) | {} |",
            row.latencies.len(),
            ms(row.slowest()),
            ms(row.quantile(0.99)),
            ms(p99),
            row.paid
        );
        assert!(row.failed.is_empty(), "{name}: {:?}", row.failed);
        assert!(
            row.slowest() <= p99 + hedge_delay + Duration::from_secs(5),
            "{name}: the slowest call took {:?}, the fault-free p99 is {p99:?}",
            row.slowest()
        );
        assert!(
            row.slowest() < ceiling,
            "{name}: a call paid the class's ceiling"
        );
    }
}

/// The measurement behind `routing.stream_generate`'s default (BENCHMARKS.md, "A whole
/// answer: sent whole or fetched as a stream"): on a cold router, the same faults with each
/// whole answer fetched as a stream (the default) and sent whole (`stream_generate = false`,
/// hedged by elapsed time). Every call is answered either way; the table says how long the
/// slowest waited. Run: `cargo test -p laneway --test fault_matrix whole_sends -- --ignored
/// --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints the table the default was chosen from"]
async fn whole_sends_against_streamed_answers_under_faults() {
    const CALLS: usize = 40;
    const IN: usize = 8;
    let emu = emulator().await;
    let mut trickle = Fault::new(FaultKind::Trickle).after(20);
    trickle.delay_ms = Some(2_000);
    let faults: Vec<(&str, Option<Fault>)> = vec![
        ("none", None),
        (
            "stall (accepted, never answered)",
            Some(Fault::new(FaultKind::Stall)),
        ),
        (
            "silent mid-answer (20 tokens)",
            Some(Fault::new(FaultKind::StallMidStream).after(20)),
        ),
        ("trickle: 1 byte / 2 s after 20 tokens", Some(trickle)),
    ];
    println!(
        "\nA cold router's whole answers: {CALLS} standard calls, {IN} in flight, fault in us-east-1\n"
    );
    println!("| fault in us-east-1 | sent as | answered | p50 ms | p99 ms | slowest ms |");
    println!("|---|---|---|---|---|---|");
    let ms = |d: Duration| d.as_millis();
    for (name, fault) in faults {
        for (sent, extra) in [
            ("stream (default)", ""),
            ("whole", "[routing]\nstream_generate = false\n"),
        ] {
            let r = common::router_with(&emu, common::config(extra)).await;
            let id = fault
                .clone()
                .map(|f| emu.add_fault(f.for_region("us-east-1")));
            let row = defaults_row(&r, CALLS, IN).await;
            if let Some(id) = id {
                emu.remove_fault(id);
            }
            println!(
                "| {name} | {sent} | {}/{CALLS} | {} | {} | {} |",
                row.latencies.len(),
                ms(row.quantile(0.5)),
                ms(row.quantile(0.99)),
                ms(row.slowest())
            );
            assert!(row.failed.is_empty(), "{name}, {sent}: {:?}", row.failed);
        }
    }
}
