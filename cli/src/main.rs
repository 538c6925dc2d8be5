//! `laneway`: the command line of the Laneway SDK.

mod advise;
mod bench;
mod catalog_cmd;
mod config_cmd;
mod demo;
mod metrics_serve;
mod progress;
mod quality;
mod recommend;
mod report;
mod router_cmd;
mod twin;

use clap::{Parser, Subcommand};

/// SLO-aware inference routing for Amazon Bedrock and SageMaker.
#[derive(Debug, Parser)]
#[command(name = "laneway", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Starts the emulator in-process and drives a mixed workload through the router.
    Demo(demo::DemoArgs),
    /// The complexity classifier: train it on your data, evaluate it, calibrate its threshold.
    #[command(subcommand)]
    Router(router_cmd::RouterCommand),
    /// Replays a workload against candidate configurations and reports latency, throughput
    /// and cost side by side (JSON, Markdown and a latency-cost chart with --out).
    Bench(bench::BenchArgs),
    /// Names the best configuration that meets every latency constraint, with the runners-up
    /// and why each lost (runs the bench, or reads its results with --from).
    Recommend(recommend::RecommendArgs),
    /// Validates a configuration file and prints each model's tiers, targets, prices and quotas.
    Check(config_cmd::CheckArgs),
    /// Prints the plan for a request (attempts in order and every reason) without sending it.
    Plan(config_cmd::PlanArgs),
    /// The built-in catalog against AWS: `catalog prices --from OFFER.json` writes the models'
    /// prices from AWS's price list.
    #[command(subcommand)]
    Catalog(catalog_cmd::CatalogCommand),
    /// A digital twin of what recorded traffic met: `laneway twin fit --trace FILE --out twin.toml`.
    #[command(subcommand)]
    Twin(twin::TwinCommand),
    /// Changes recorded traffic supports, ranked by projected monthly saving, with their risk
    /// and evidence: `laneway advise --trace FILE [--verify --scenario twin.toml]`.
    Advise(advise::AdviseArgs),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args).await,
        Command::Router(cmd) => router_cmd::run(cmd).map(|()| std::process::ExitCode::SUCCESS),
        Command::Bench(args) => bench::run(args).await,
        Command::Recommend(args) => recommend::run(args).await,
        Command::Check(args) => config_cmd::check(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Plan(args) => config_cmd::plan(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Catalog(cmd) => catalog_cmd::run(cmd).map(|()| std::process::ExitCode::SUCCESS),
        Command::Advise(args) => advise::run(args).await,
        Command::Twin(cmd) => twin::run(cmd).map(|()| std::process::ExitCode::SUCCESS),
    };
    if std::env::var_os("LANEWAY_REPORT_PEAK_RSS").is_some() {
        // For the test that shows a trace is read in flat memory, whatever its length.
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) {
            eprintln!("peak resident memory: {}", line["VmHWM:".len()..].trim());
        }
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("laneway: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
