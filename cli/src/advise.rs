//! `laneway advise --trace FILE`: the changes recorded traffic supports, ranked by projected
//! monthly saving with their risk and evidence (`laneway::advice`), as Markdown, JSON and one
//! HTML file; with `--verify`, each change that a configuration patch expresses is replayed
//! on the twin beside the configuration in force, and its measured saving printed beside the
//! projected one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use laneway::Config;
use laneway::advice::{Advice, TraceSummary, advise};
use serde::Serialize;

use crate::bench::{replay, trace};

/// Options of `laneway advise`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AdviseArgs {
    /// Trace files (`[record]`'s), read in order as one.
    #[arg(long = "trace", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The configuration in force when the trace was recorded (default: the built-in one).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Replays the trace with each change applied, on this emulator scenario (the twin from
    /// `laneway twin fit`), and reports the measured saving beside the projected one.
    #[arg(long)]
    pub verify: bool,
    /// The scenario `--verify` replays on.
    #[arg(long, default_value = "startup")]
    pub scenario: String,
    /// Runs the emulator this much faster than real time in `--verify`.
    #[arg(long, default_value_t = 0.2)]
    pub time_scale: f64,
    /// Arrivals this many times closer together than recorded in `--verify`.
    #[arg(long, default_value_t = 1.0)]
    pub speedup: f64,
    /// The trace was recorded against an emulator at this time scale (1 for AWS): its first
    /// tokens, TTFT targets and (in `--verify`) arrivals and deadlines are taken back to
    /// scenario time.
    #[arg(long, default_value_t = 1.0)]
    pub trace_time_scale: f64,
    /// Changes replayed by `--verify` at most (the top ones).
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Exits with status 3 when a change beats the configuration in force on cost and every
    /// class's attainment (replayed with `--verify`; else: a saving at low risk).
    #[arg(long)]
    pub fail_if_dominated: bool,
    /// Writes advice.json, advice.md and advice.html into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The advice and, with `--verify`, the replay that checked it.
#[derive(Debug, Serialize)]
pub(crate) struct AdviseReport {
    pub advice: Advice,
    /// Bad trace lines skipped.
    pub bad_lines: u64,
    /// Per verified change (by its rank, from 1): the measured saving over the replay, USD.
    pub verified: Vec<Verified>,
    /// The replay behind `verified`: the configuration in force first.
    pub replay: Option<replay::ReplayReport>,
}

/// One change replayed.
#[derive(Debug, Serialize)]
pub(crate) struct Verified {
    pub rank: usize,
    pub action: String,
    pub projected_saving_usd: f64,
    pub measured_saving_usd: f64,
    pub dominates: bool,
}

/// Reads the traces as a stream into a summary; prints where bad lines were.
pub(crate) fn summarise(traces: &[PathBuf]) -> anyhow::Result<(TraceSummary, u64)> {
    let mut summary = TraceSummary::new();
    let bad = crate::progress::read_traces(traces, |line| summary.add(&line))?;
    Ok((summary, bad))
}

fn config_text(path: Option<&Path>) -> anyhow::Result<serde_json::Value> {
    let text = match path {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => crate::bench::DEFAULT_CONFIG.to_string(),
    };
    if path.is_some_and(|p| p.extension().is_some_and(|e| e == "json")) {
        Ok(serde_json::from_str(&text)?)
    } else {
        Ok(serde_json::to_value(toml::from_str::<toml::Table>(&text)?)?)
    }
}

/// Merges `patch` over `base`, table by table.
fn merge(base: &mut serde_json::Value, patch: &serde_json::Value) {
    match (base, patch) {
        (serde_json::Value::Object(b), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Runs `laneway advise`.
pub(crate) async fn run(args: AdviseArgs) -> anyhow::Result<std::process::ExitCode> {
    let config = match &args.config {
        Some(p) => Config::from_file(p)?,
        None => Config::from_toml_str(crate::bench::DEFAULT_CONFIG)?,
    };
    let (mut summary, bad_lines) = summarise(&args.traces)?;
    summary.to_scenario_time(args.trace_time_scale);
    anyhow::ensure!(summary.calls > 0, "the traces hold no recorded calls");
    let advice = advise(&summary, &config);
    let mut report = AdviseReport {
        advice,
        bad_lines,
        verified: Vec::new(),
        replay: None,
    };
    if args.verify {
        verify(&args, &config, &mut report).await?;
    }
    let md = markdown(&report);
    print!("{md}");
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        std::fs::write(
            out.join("advice.json"),
            serde_json::to_string_pretty(&report)? + "\n",
        )?;
        std::fs::write(out.join("advice.md"), &md)?;
        let charts = report
            .replay
            .as_ref()
            .map(replay::charts)
            .unwrap_or_default();
        std::fs::write(
            out.join("advice.html"),
            replay::html("laneway advise", &md, &charts),
        )?;
        println!(
            "\nwrote {0}/advice.json, {0}/advice.md, {0}/advice.html",
            out.display()
        );
    }
    let dominated = if args.verify {
        report.verified.iter().any(|v| v.dominates)
    } else {
        report
            .advice
            .changes
            .iter()
            .any(|c| c.monthly_saving_usd > 0.0 && c.risk == laneway::advice::Risk::Low)
    };
    if args.fail_if_dominated && dominated {
        eprintln!("re-benchmark says change: see the changes above");
        return Ok(std::process::ExitCode::from(3));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Replays the trace under the configuration in force and under each of the top changes that
/// a patch expresses.
async fn verify(
    args: &AdviseArgs,
    config: &Config,
    report: &mut AdviseReport,
) -> anyhow::Result<()> {
    let base_value = config_text(args.config.as_deref())?;
    let mut candidates = vec![replay::Candidate {
        name: "baseline".into(),
        config: config.clone(),
    }];
    let mut ranks = Vec::new();
    for (i, change) in report.advice.changes.iter().enumerate().take(args.top) {
        let Some(patch) = &change.patch else {
            continue;
        };
        let mut value = base_value.clone();
        merge(&mut value, patch);
        let table = value
            .as_object()
            .context("the configuration is not a table")?;
        let patched = Config::from_json(table)
            .with_context(|| format!("applying change {}: {}", i + 1, change.action))?;
        candidates.push(replay::Candidate {
            name: format!("change {}", i + 1),
            config: patched,
        });
        ranks.push(i);
    }
    let pace = trace::Pace {
        speedup: args.speedup,
        rate_scale: 1.0,
        recorded_scale: args.trace_time_scale,
    };
    let items = trace::read(config, &args.traces, pace, 1)?;
    let setup = replay::ReplaySetup {
        traces: &args.traces,
        scenario: &args.scenario,
        time_scale: args.time_scale,
        pace,
    };
    let replayed = replay::replay(&setup, &items, &candidates).await?;
    let base_cost = replayed.results[0].cost_usd;
    for (k, &i) in ranks.iter().enumerate() {
        let r = &replayed.results[k + 1];
        let c = &report.advice.changes[i];
        report.verified.push(Verified {
            rank: i + 1,
            action: c.action.clone(),
            projected_saving_usd: c.recorded_saving_usd,
            measured_saving_usd: base_cost - r.cost_usd,
            dominates: replayed.dominating.contains(&r.name),
        });
    }
    report.replay = Some(replayed);
    Ok(())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// The report as Markdown.
pub(crate) fn markdown(r: &AdviseReport) -> String {
    let a = &r.advice;
    let mut md = format!(
        "# laneway advise\n\n{} recorded calls over {:.1} hours, {:.0}% sampled{}; projected over a month of all calls: ${:.2}.\n\n",
        a.calls,
        a.period_ms as f64 / 3_600_000.0,
        a.sample * 100.0,
        if r.bad_lines > 0 {
            format!(", {} bad lines skipped", r.bad_lines)
        } else {
            String::new()
        },
        a.monthly_cost_usd
    );
    md += "| class | calls | attainment | TTFT p50 ms | TTFT p99 ms | busiest second / mean | recorded cost USD |\n|---|---|---|---|---|---|---|\n";
    for (name, c) in &a.classes {
        md += &format!(
            "| {name} | {} | {} | {} | {} | {:.1} | {:.4} |\n",
            c.calls,
            pct(c.attainment),
            c.ttft_p50_ms.map_or("-".into(), |v| format!("{v:.0}")),
            c.ttft_p99_ms.map_or("-".into(), |v| format!("{v:.0}")),
            c.peak_to_mean,
            c.cost_usd
        );
    }
    md += "\n## Changes, ranked\n\n";
    if a.changes.is_empty() {
        md += "None: the recorded traffic supports no change.\n";
    }
    for (i, c) in a.changes.iter().enumerate() {
        md += &format!(
            "{}. **{}**: saves ${:.2} a month (${:.4} over the recorded calls); risk {:?}: {}.\n",
            i + 1,
            c.action,
            c.monthly_saving_usd,
            c.recorded_saving_usd,
            c.risk,
            c.risk_reason
        );
        for e in &c.evidence {
            md += &format!("   - {e}\n");
        }
    }
    if !r.verified.is_empty() {
        md += "\n## Verified by replay\n\n| rank | change | projected USD | measured USD | beats the configuration in force |\n|---|---|---|---|---|\n";
        for v in &r.verified {
            md += &format!(
                "| {} | {} | {:.4} | {:.4} | {} |\n",
                v.rank,
                v.action,
                v.projected_saving_usd,
                v.measured_saving_usd,
                if v.dominates { "yes" } else { "no" }
            );
        }
    }
    if let Some(replayed) = &r.replay {
        md += "\n";
        md += &replay::markdown(replayed);
    }
    md += "\n## Not assessed\n\n";
    for n in &a.not_assessed {
        md += &format!("- {n}\n");
    }
    md
}
