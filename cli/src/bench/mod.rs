//! `laneway bench`: replays a workload against candidate configurations (the emulator by
//! default, AWS with `--aws`) and reports latency, throughput, errors and cost side by side,
//! as a table, JSON, Markdown and a latency-cost chart.

mod candidates;
mod chart;
mod measure;
pub(crate) mod replay;
pub(crate) mod trace;
mod workload;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use laneway::{Config, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};
use serde::{Deserialize, Serialize};

pub(crate) use candidates::{Candidate, Preset};
pub(crate) use measure::{CandidateResult, Quantiles};
pub(crate) use workload::WorkloadKind;

use crate::recommend::Recommendation;

/// `request` with its SLO's durations in the emulator's time: a scenario's 30-second deadline
/// is 6 seconds of the router's clock at a time scale of 0.2, as every delay the emulator
/// draws is. Results are converted back to scenario time and judged against the SLO as asked.
pub(crate) fn in_emulator_time(
    mut request: laneway::GenerateRequest,
    time_scale: f64,
) -> laneway::GenerateRequest {
    let scaled = |d: Option<std::time::Duration>| d.map(|d| d.mul_f64(time_scale));
    request.slo.ttft_target = scaled(request.slo.ttft_target);
    request.slo.deadline = scaled(request.slo.deadline);
    request
}

/// The router configuration used unless `--config` names another: the built-in Bedrock models
/// and the emulator's self-hosted endpoints.
pub(crate) const DEFAULT_CONFIG: &str = include_str!("../../../examples/startup.toml");

/// Options of `laneway bench` (and of `laneway recommend` when it runs the bench itself).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchArgs {
    /// Candidates and workload of a product shape: chat, enterprise-api or self-hosted.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// interact, generate, summarize, or a JSONL file of requests (default: the preset's, or
    /// interact).
    #[arg(long)]
    pub workload: Option<WorkloadKind>,
    /// Requests per candidate (a JSONL workload is cut to this many).
    #[arg(long, default_value_t = 100)]
    pub requests: usize,
    /// Open-loop arrivals at this many requests per second (Poisson); default closed-loop.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Grid: a model id, family or self-hosted model (repeat for several).
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// Grid: auto (the SLO picks), priority, standard, flex or reserved (repeat).
    #[arg(long = "tier")]
    pub tiers: Vec<String>,
    /// Grid: allowed regions, `+`-joined (`us-east-1+us-west-2`), or `any` (repeat).
    #[arg(long = "region")]
    pub regions: Vec<String>,
    /// Grid: requests in flight (repeat; default 16).
    #[arg(long = "concurrency")]
    pub concurrency: Vec<usize>,
    /// Candidates from a TOML file (`[[candidates]]` with name, model, tier, regions,
    /// concurrency).
    #[arg(long)]
    pub candidates: Option<PathBuf>,
    /// Router configuration (default: built-in models plus the emulator's endpoints).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Emulator scenario: built-in name or TOML file.
    #[arg(long, default_value = "startup")]
    pub scenario: String,
    /// Runs the emulator this much faster than real time (0.2 = five times faster); reported
    /// times are converted back to scenario time.
    #[arg(long, default_value_t = 0.2)]
    pub time_scale: f64,
    /// Calls AWS with the default credentials instead of the emulator (real cost!).
    #[arg(long)]
    pub aws: bool,
    /// Writes bench.json, report.md and frontier.svg into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub metrics: crate::metrics_serve::MetricsServeArgs,
    /// Replays recorded traffic (`[record]`'s trace files) instead of a workload: the
    /// configuration in force (`--config`) is the baseline, each `--candidate-config` a row.
    #[arg(long = "trace", num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// With --trace: a configuration to compare, as NAME=FILE (repeat).
    #[arg(long = "candidate-config", requires = "traces")]
    pub candidate_configs: Vec<String>,
    /// With --trace: arrivals this many times closer together than recorded.
    #[arg(long, default_value_t = 1.0, requires = "traces")]
    pub speedup: f64,
    /// With --trace: replays each call this many times on average (2: twice the rate).
    #[arg(long, default_value_t = 1.0, requires = "traces")]
    pub rate_scale: f64,
    /// With --trace: the trace was recorded against an emulator at this time scale (1 for
    /// AWS): its arrivals and SLO durations are taken back to scenario time.
    #[arg(long, default_value_t = 1.0, requires = "traces")]
    pub trace_time_scale: f64,
    /// Exits with status 3 when a candidate beats the baseline on cost and on every class's
    /// attainment: for a weekly job that says "re-benchmark says change".
    #[arg(long)]
    pub fail_if_dominated: bool,
}

/// What was run, and every candidate's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BenchReport {
    pub workload: String,
    pub requests: usize,
    pub rate: Option<f64>,
    pub seed: u64,
    /// "emulator:<scenario>" or "aws".
    pub target: String,
    pub time_scale: f64,
    pub results: Vec<CandidateResult>,
}

/// The router configuration the bench runs with (`--config`, else the default).
pub(crate) fn router_config(args: &BenchArgs) -> anyhow::Result<Config> {
    load_config(args)
}

fn load_config(args: &BenchArgs) -> anyhow::Result<Config> {
    Ok(match &args.config {
        Some(path) => Config::from_file(path)?,
        None => Config::from_toml_str(DEFAULT_CONFIG)?,
    })
}

fn choose_candidates(args: &BenchArgs) -> anyhow::Result<Vec<Candidate>> {
    let mut out = Vec::new();
    if let Some(p) = args.preset {
        out.extend(p.candidates());
    }
    if let Some(path) = &args.candidates {
        out.extend(candidates::read(path)?);
    }
    if !args.models.is_empty() {
        out.extend(candidates::grid(
            &args.models,
            &args.tiers,
            &args.regions,
            &args.concurrency,
        )?);
    } else if !(args.tiers.is_empty() && args.regions.is_empty() && args.concurrency.is_empty()) {
        bail!(
            "--tier, --region and --concurrency shape a grid of --model values: name at least one --model"
        );
    }
    if out.is_empty() {
        bail!(
            "no candidates: give --preset, --candidates FILE or --model (see `laneway bench --help`)"
        );
    }
    Ok(out)
}

/// Runs every candidate and returns the report (nothing written).
pub(crate) async fn measure(args: &BenchArgs) -> anyhow::Result<BenchReport> {
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    anyhow::ensure!(
        args.time_scale > 0.0 && args.time_scale.is_finite() && args.time_scale <= 1.0,
        "--time-scale must be in (0, 1], got {}",
        args.time_scale
    );
    let config = load_config(args)?;
    let candidates = choose_candidates(args)?;
    for c in &candidates {
        c.check(&config)?;
    }
    let kind = args
        .workload
        .clone()
        .or(args.preset.map(Preset::workload))
        .unwrap_or(WorkloadKind::Interact);
    let items = workload::build(&kind, args.requests, args.rate, args.seed)?;
    let time_scale = if args.aws { 1.0 } else { args.time_scale };

    let progress = indicatif::ProgressBar::new((items.len() * candidates.len()) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg:32!} [{bar:30}] {pos}/{len} ({elapsed})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    // Each candidate's router in turn, its series labelled with the candidate's name.
    let metrics = args.metrics.start().await?;
    let mut results = Vec::with_capacity(candidates.len());
    for c in &candidates {
        progress.set_message(c.name.clone());
        // A fresh emulator and router per candidate: no cache, capacity or health carried over.
        let emulator = if args.aws {
            None
        } else {
            let mut scenario = Scenario::load(&args.scenario)?;
            scenario.time_scale = time_scale;
            Some(
                Emulator::start(scenario)
                    .await
                    .context("starting the emulator on 127.0.0.1")?,
            )
        };
        let mut builder = Router::builder().config(config.clone());
        if let Some(e) = &emulator {
            builder = builder
                .endpoint_url(e.url())
                .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY);
        }
        let router = builder.build().await?;
        if let Some(m) = &metrics {
            m.serve(&router, vec![("laneway.bench.candidate", c.name.clone())]);
        }
        results.push(measure::run(&router, &config, c, &items, time_scale, &progress).await);
        let last = std::ptr::eq(c, candidates.last().expect("at least this one"));
        if let Some(m) = &metrics
            && !last
        {
            // Done, its emulator about to go: nothing is served until the next one starts.
            m.clear();
        }
        if let Some(e) = emulator {
            e.shutdown().await;
        }
    }
    progress.finish_and_clear();
    if let Some(m) = metrics {
        eprintln!("metrics: every candidate measured; the last one's still served for the linger");
        m.finish().await;
    }
    Ok(BenchReport {
        workload: kind.to_string(),
        requests: items.len(),
        rate: args.rate,
        seed: args.seed,
        target: if args.aws {
            "aws".into()
        } else {
            format!("emulator:{}", args.scenario)
        },
        time_scale,
        results,
    })
}

fn ms(q: &Quantiles, v: f64) -> String {
    if q.samples == 0 {
        "-".into()
    } else {
        format!("{v:.0}")
    }
}

/// The results as a Markdown table.
pub(crate) fn markdown_table(report: &BenchReport) -> String {
    let mut out = String::from(
        "| candidate | ok | errors | failovers | TTFT p50/p90/p99 ms | ITL p50 ms | latency p50/p90/p99 ms | req/s | tok/s | TTFT SLO met | $/request | $/1M requests | cost basis |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &report.results {
        out += &format!(
            "| {} | {}/{} | {} | {} | {}/{}/{} | {} | {}/{}/{} | {:.1} | {:.0} | {} | {:.6} | {:.2} | {} |\n",
            r.candidate.name,
            r.ok,
            r.requests,
            r.requests - r.ok,
            r.failovers,
            ms(&r.ttft_ms, r.ttft_ms.p50),
            ms(&r.ttft_ms, r.ttft_ms.p90),
            ms(&r.ttft_ms, r.ttft_ms.p99),
            ms(&r.itl_ms, r.itl_ms.p50),
            ms(&r.latency_ms, r.latency_ms.p50),
            ms(&r.latency_ms, r.latency_ms.p90),
            ms(&r.latency_ms, r.latency_ms.p99),
            r.requests_per_second,
            r.output_tokens_per_second,
            r.ttft_slo_met
                .map(|s| format!("{:.1}%", s * 100.0))
                .unwrap_or("-".into()),
            r.cost_per_request_usd,
            r.cost_per_million_usd,
            r.cost_basis,
        );
    }
    out
}

fn describe_run(report: &BenchReport) -> String {
    format!(
        "workload {}, {} requests per candidate{}, seed {}, against {}{}",
        report.workload,
        report.requests,
        report
            .rate
            .map(|r| format!(" arriving at {r}/s"))
            .unwrap_or_else(|| " closed-loop".into()),
        report.seed,
        report.target,
        if report.time_scale < 1.0 {
            format!(
                " at {}x speed (times shown in scenario time)",
                1.0 / report.time_scale
            )
        } else {
            String::new()
        }
    )
}

/// Prints the results table to stdout.
pub(crate) fn print_table(report: &BenchReport) {
    println!("laneway bench: {}\n", describe_run(report));
    print!("{}", markdown_table(report));
    for r in &report.results {
        if !r.errors.is_empty() {
            println!("{}: errors {:?}", r.candidate.name, r.errors);
        }
    }
}

/// Writes `bench.json`, `report.md` and `frontier.svg` into `dir`.
pub(crate) fn write_outputs(
    report: &BenchReport,
    dir: &Path,
    recommendation: Option<&Recommendation>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("bench.json", serde_json::to_string_pretty(report)? + "\n")?;
    let best = recommendation.and_then(|r| r.best);
    write("frontier.svg", chart::frontier_svg(&report.results, best))?;
    let mut md = format!(
        "# laneway bench report\n\n{}.\n\n{}\n![latency against cost](frontier.svg)\n\nThe chart plots each candidate's cost per million requests against its p99 latency (TTFT where every candidate streamed a first token); the line joins the candidates no other beats on both.\n",
        describe_run(report),
        markdown_table(report)
    );
    if let Some(rec) = recommendation {
        md += &format!(
            "\n## Recommendation\n\n```text\n{}```\n",
            rec.render(&report.results)
        );
    }
    md += "\nServed by (model / tier / region: calls):\n\n";
    for r in &report.results {
        let served: Vec<String> = r.served.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        md += &format!("- {}: {}\n", r.candidate.name, served.join(", "));
    }
    write("report.md", md)?;
    Ok(())
}

/// Replays `--trace` against the baseline and the candidate configurations.
pub(crate) async fn replay(args: &BenchArgs) -> anyhow::Result<replay::ReplayReport> {
    anyhow::ensure!(
        args.time_scale > 0.0 && args.time_scale.is_finite() && args.time_scale <= 1.0,
        "--time-scale must be in (0, 1], got {}",
        args.time_scale
    );
    let baseline = load_config(args)?;
    let pace = trace::Pace {
        speedup: args.speedup,
        rate_scale: args.rate_scale,
        recorded_scale: args.trace_time_scale,
    };
    let items = trace::read(&baseline, &args.traces, pace, args.seed)?;
    let mut candidates = vec![replay::Candidate {
        name: "baseline".into(),
        config: baseline,
    }];
    for spec in &args.candidate_configs {
        candidates.push(replay::candidate(spec)?);
    }
    let setup = replay::ReplaySetup {
        traces: &args.traces,
        scenario: &args.scenario,
        time_scale: args.time_scale,
        pace,
    };
    replay::replay(&setup, &items, &candidates).await
}

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    if !args.traces.is_empty() {
        let report = replay(&args).await?;
        print!("{}", replay::markdown(&report));
        if let Some(out) = &args.out {
            replay::write(&report, out)?;
            println!(
                "\nwrote {0}/replay.json, {0}/replay.md, {0}/replay.html and its charts",
                out.display()
            );
        }
        if args.fail_if_dominated && !report.dominating.is_empty() {
            eprintln!(
                "re-benchmark says change: {} beat the configuration in force",
                report.dominating.join(", ")
            );
            return Ok(std::process::ExitCode::from(3));
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let report = measure(&args).await?;
    print_table(&report);
    if let Some(out) = &args.out {
        write_outputs(&report, out, None)?;
        println!(
            "\nwrote {0}/bench.json, {0}/report.md, {0}/frontier.svg",
            out.display()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}
