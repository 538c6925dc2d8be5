//! Prompt caching on an agent workload: `cargo bench -p laneway --bench prompt_cache`.
//!
//! Five agent tasks of twelve steps share one long system prompt and tool schema, streamed,
//! against the emulator's prompt cache at a tenth of real time, on two models: Claude Sonnet
//! 4.5 by Converse (`cachePoint`s) and GPT-6 Astra on bedrock-mantle's
//! Responses API (breakpoints in explicit mode). Strategies, each against a fresh emulator and
//! router: no caching; for GPT, the service's own implicit caching (Laneway sends nothing: a
//! breakpoint at the newest message, written every turn); Laneway's placement; and a
//! checkpoint after every segment (the caller pins one after the tools, the system prompt and
//! every message; Laneway keeps the four longest the model takes). Reported: input cost (new,
//! cache-write and cache-read tokens at the price book's rates) and mean TTFT. A second workload
//! of one-off prompts (no reuse) checks that placement never costs more than no caching.

use std::time::Duration;

use futures::StreamExt;
use laneway::{
    CacheMode, CachePoint, Config, ContentBlock, GenerateRequest, GenerateResponse, Message,
    Router, StreamEvent, SystemBlock, Tool,
};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

const TASKS: usize = 5;
const STEPS: usize = 12;

#[derive(Clone, Copy, PartialEq)]
enum Strategy {
    NoCaching,
    ServiceImplicit,
    Laneway,
    EverySegment,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Strategy::NoCaching => "no caching",
            Strategy::ServiceImplicit => "the service's implicit caching",
            Strategy::Laneway => "Laneway placement",
            Strategy::EverySegment => "checkpoint after every segment",
        }
    }
}

const ASTRA: &str = "openai.gpt-6-astra";
const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// The model a run calls.
#[derive(Clone, Copy, PartialEq)]
enum Subject {
    /// Claude Sonnet 4.5, by Converse.
    Claude,
    /// GPT-6 Astra on bedrock-mantle's Responses API, where it caches.
    Gpt,
}

impl Subject {
    fn name(self) -> &'static str {
        match self {
            Subject::Claude => "Claude Sonnet 4.5 (Converse)",
            Subject::Gpt => "GPT-6 Astra (mantle Responses)",
        }
    }

    fn strategies(self) -> &'static [Strategy] {
        match self {
            Subject::Claude => &[
                Strategy::NoCaching,
                Strategy::Laneway,
                Strategy::EverySegment,
            ],
            Subject::Gpt => &[
                Strategy::NoCaching,
                Strategy::ServiceImplicit,
                Strategy::Laneway,
                Strategy::EverySegment,
            ],
        }
    }

    fn config(self, strategy: Strategy) -> Config {
        let text = match (self, strategy) {
            (Subject::Claude, _) => String::new(),
            (Subject::Gpt, s) => format!(
                "[models.\"{ASTRA}\"]\nconverse = false\nopenai = {{ runtime = [] }}\n{}",
                // Without caching rules for the model Laneway sends nothing of caching, and
                // the service caches implicitly.
                if s == Strategy::ServiceImplicit {
                    "prompt_cache = { apis = [] }\n"
                } else {
                    ""
                }
            ),
        };
        Config::from_toml_str(&text).unwrap()
    }

    fn aim(self, req: GenerateRequest) -> GenerateRequest {
        match self {
            Subject::Claude => req.model(SONNET),
            Subject::Gpt => req.model(ASTRA),
        }
    }
}

struct Totals {
    input_cost: f64,
    ttft: Vec<Duration>,
}

async fn fresh(subject: Subject, strategy: Strategy) -> (Emulator, Router) {
    let mut scenario = Scenario::builtin("startup").unwrap();
    scenario.time_scale = 0.1;
    let emulator = Emulator::start(scenario).await.unwrap();
    let router = Router::builder()
        .config(subject.config(strategy))
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await
        .unwrap();
    (emulator, router)
}

async fn streamed(router: &Router, req: GenerateRequest) -> GenerateResponse {
    let mut s = router.stream(req).await.unwrap();
    while let Some(ev) = s.next().await {
        if let StreamEvent::Completed(done) = ev.unwrap() {
            return *done;
        }
    }
    panic!("the stream ended without a response");
}

fn input_cost(router: &Router, r: &GenerateResponse) -> f64 {
    let price = router.config().models[&r.decision.model].price();
    let input_only = laneway::Usage {
        output_tokens: 0,
        ..r.usage
    };
    price.base_cost(&input_only)
}

fn step_request(
    subject: Subject,
    strategy: Strategy,
    task: usize,
    history: &[Message],
    system: &str,
    tool: &Tool,
) -> GenerateRequest {
    let mut req = subject
        .aim(GenerateRequest::new(history.to_vec()))
        .system(system)
        .tool(tool.clone())
        .max_tokens(40)
        .task(format!("task-{task}"));
    match strategy {
        Strategy::NoCaching => req.cache = CacheMode::Off,
        Strategy::Laneway | Strategy::ServiceImplicit => {}
        Strategy::EverySegment => {
            req.cache = CacheMode::Off;
            req.tools.push(Tool::CachePoint(CachePoint::default()));
            req.system
                .push(SystemBlock::CachePoint(CachePoint::default()));
            for m in &mut req.messages {
                m.content
                    .push(ContentBlock::CachePoint(CachePoint::default()));
            }
        }
    }
    req
}

async fn agent_workload(subject: Subject, strategy: Strategy) -> Totals {
    let (emulator, router) = fresh(subject, strategy).await;
    let system = "You are the on-call assistant. Follow the runbook: check dashboards, then logs, then recent deploys. ".repeat(60);
    let tool = Tool::new(
        "query_metrics",
        "Runs a read-only PromQL query and returns the series.",
        serde_json::json!({"type": "object", "properties": {"query": {"type": "string"}, "range": {"type": "string"}}}),
    );
    let mut totals = Totals {
        input_cost: 0.0,
        ttft: Vec::new(),
    };
    for task in 0..TASKS {
        let mut history = vec![Message::user(format!(
            "Incident {task}: checkout latency is up."
        ))];
        for step in 0..STEPS {
            let r = streamed(
                &router,
                step_request(subject, strategy, task, &history, &system, &tool),
            )
            .await;
            totals.input_cost += input_cost(&router, &r);
            totals.ttft.extend(r.timings.ttft);
            history.push(Message::assistant(r.text()));
            history.push(Message::user(format!(
                "Step {step} result: p99 latency 2.{step} s."
            )));
        }
    }
    emulator.shutdown().await;
    totals
}

async fn one_off_workload(subject: Subject, strategy: Strategy) -> f64 {
    let (emulator, router) = fresh(subject, strategy).await;
    let mut cost = 0.0;
    for i in 0..30 {
        let mut req = subject
            .aim(GenerateRequest::user("Summarise the document in one line."))
            .system(
                format!("Document {i}. ")
                    + &"Unique reference text for this one request. ".repeat(150),
            )
            .max_tokens(20);
        match strategy {
            Strategy::NoCaching => req.cache = CacheMode::Off,
            Strategy::Laneway | Strategy::ServiceImplicit => {}
            Strategy::EverySegment => {
                req.cache = CacheMode::Off;
                req.system
                    .push(SystemBlock::CachePoint(CachePoint::default()));
            }
        }
        let r = streamed(&router, req).await;
        cost += input_cost(&router, &r);
    }
    emulator.shutdown().await;
    cost
}

fn mean(v: &[Duration]) -> Duration {
    v.iter().sum::<Duration>() / v.len().max(1) as u32
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for subject in [Subject::Claude, Subject::Gpt] {
            println!(
                "agent workload: {TASKS} tasks x {STEPS} steps, {}, emulator at 0.1x real time",
                subject.name()
            );
            let base = agent_workload(subject, Strategy::NoCaching).await;
            let base_ttft = mean(&base.ttft);
            for &strategy in subject.strategies() {
                let t = if strategy == Strategy::NoCaching {
                    Totals {
                        input_cost: base.input_cost,
                        ttft: base.ttft.clone(),
                    }
                } else {
                    agent_workload(subject, strategy).await
                };
                let ttft = mean(&t.ttft);
                println!(
                    "  {:<32} input ${:>8.4} ({:>+6.1}% vs none)   mean TTFT {:>6.1} ms ({:>+6.1}% vs none)",
                    strategy.name(),
                    t.input_cost,
                    (t.input_cost / base.input_cost - 1.0) * 100.0,
                    ttft.as_secs_f64() * 1000.0,
                    (ttft.as_secs_f64() / base_ttft.as_secs_f64() - 1.0) * 100.0,
                );
            }
            let none = one_off_workload(subject, Strategy::NoCaching).await;
            print!("  one-off prompts (no reuse), 30 calls: no caching ${none:.4}");
            for &strategy in &subject.strategies()[1..] {
                let cost = one_off_workload(subject, strategy).await;
                print!(", {} ${cost:.4} ({:+.2}%)", strategy.name(), (cost / none - 1.0) * 100.0);
            }
            println!();
        }
    });
}
