//! `laneway-emulator --scenario startup --port 0`: serves until interrupted.

use clap::Parser;
use laneway_emulator::{Emulator, Scenario};

/// A loopback emulator of the Bedrock Runtime and SageMaker Runtime APIs.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// A built-in scenario (`startup`, `fast`) or the path of a scenario TOML file.
    #[arg(long, default_value = "startup")]
    scenario: String,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Overrides the scenario's time scale (1.0 real time; 0.01 a hundred times faster).
    #[arg(long)]
    time_scale: Option<f64>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut scenario = match Scenario::load(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("laneway-emulator: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(scale) = args.time_scale {
        if !(scale > 0.0 && scale.is_finite()) {
            eprintln!("laneway-emulator: --time-scale must be > 0, got {scale}");
            return std::process::ExitCode::from(2);
        }
        scenario.time_scale = scale;
    }
    let emulator = match Emulator::start_on(scenario, args.port).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!(
                "laneway-emulator: cannot listen on 127.0.0.1:{}: {e}",
                args.port
            );
            return std::process::ExitCode::from(1);
        }
    };
    // The first line of stdout is the URL, for scripts and test helpers to read.
    println!("{}", emulator.url());
    let _ = tokio::signal::ctrl_c().await;
    emulator.shutdown().await;
    std::process::ExitCode::SUCCESS
}
