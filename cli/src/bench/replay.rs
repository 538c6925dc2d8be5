//! `laneway bench --trace`: a recorded trace replayed against whole configurations (the one in
//! force as the baseline, then each candidate), each on a fresh emulator of the twin, with per
//! class attainment, latency, throughput and cost, and the report as JSON, Markdown and one
//! HTML file with its charts.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use laneway::{Config, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};
use serde::{Deserialize, Serialize};

use super::Quantiles;
use super::chart;
use super::measure::{histogram, one, quantiles};
use super::trace::{Pace, TraceItem};

/// A configuration to replay the trace against.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub name: String,
    pub config: Config,
}

/// Reads `NAME=FILE` as a candidate configuration.
pub(crate) fn candidate(spec: &str) -> anyhow::Result<Candidate> {
    let (name, path) = spec
        .split_once('=')
        .with_context(|| format!("--candidate-config takes NAME=FILE, got {spec:?}"))?;
    anyhow::ensure!(
        !name.is_empty(),
        "--candidate-config {spec:?}: the name is empty"
    );
    Ok(Candidate {
        name: name.to_string(),
        config: Config::from_file(Path::new(path))
            .with_context(|| format!("--candidate-config {name}: reading {path}"))?,
    })
}

/// One class under one configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassResult {
    pub calls: u64,
    pub ok: u64,
    /// Calls with an objective (TTFT target or deadline).
    pub judged: u64,
    /// Share of those that met it.
    pub attainment: Option<f64>,
    pub ttft_ms: Quantiles,
    pub itl_ms: Quantiles,
    pub latency_ms: Quantiles,
    pub cost_usd: f64,
    pub cost_per_call_usd: f64,
    /// Tokens: input (neither read from nor written to the cache), cache reads, cache writes,
    /// output.
    pub tokens: [u64; 4],
    /// Tasks (a task id's calls; a call without one is its own) that succeeded: every call
    /// answered, and the recorded outcome a success where the same model answered.
    pub successful_tasks: u64,
    pub tasks: u64,
    /// Tasks answered by another model than recorded, whose success is not known.
    pub tasks_unjudged: u64,
    pub cost_per_successful_task_usd: Option<f64>,
}

/// One configuration's replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReplayResult {
    pub name: String,
    pub calls: u64,
    pub ok: u64,
    pub cost_usd: f64,
    pub attainment: Option<f64>,
    pub requests_per_second: f64,
    pub output_tokens_per_second: f64,
    /// Over every class.
    pub ttft_ms: Quantiles,
    pub itl_ms: Quantiles,
    pub latency_ms: Quantiles,
    pub failovers: u64,
    pub hedges: u64,
    pub tokens: [u64; 4],
    pub classes: BTreeMap<String, ClassResult>,
    /// Cost per minute of the recorded period (scenario time).
    pub cost_by_minute: Vec<f64>,
    /// Where calls were served: "model / tier / region" and how many.
    pub served: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    /// How late the calls were sent, against the recorded arrivals: p99, milliseconds of real
    /// time. Late sends mean the client could not keep up with the replay's pace, and every
    /// latency above includes its queueing: slow the replay down.
    pub send_lag_p99_ms: f64,
}

/// A replay whose sends lagged more than this (real time, p99) measured the client, not the
/// configuration.
const LAG_WARNING_MS: f64 = 50.0;

/// The whole replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReplayReport {
    pub traces: Vec<String>,
    pub scenario: String,
    pub calls: usize,
    /// The recorded calls' own cost and attainment, for the baseline to be checked against.
    pub recorded_cost_usd: f64,
    pub speedup: f64,
    pub rate_scale: f64,
    pub time_scale: f64,
    /// The baseline (the configuration in force) first.
    pub results: Vec<ReplayResult>,
    /// Candidates that beat the baseline on cost and on every class's attainment.
    pub dominating: Vec<String>,
}

/// How the replay runs.
pub(crate) struct ReplaySetup<'a> {
    pub traces: &'a [PathBuf],
    pub scenario: &'a str,
    pub time_scale: f64,
    pub pace: Pace,
}

/// Replays `items` against each configuration, the first being the baseline.
pub(crate) async fn replay(
    setup: &ReplaySetup<'_>,
    items: &[TraceItem],
    candidates: &[Candidate],
) -> anyhow::Result<ReplayReport> {
    let progress = crate::progress::calls((items.len() * candidates.len()) as u64);
    let mut results = Vec::new();
    for c in candidates {
        progress.set_message(c.name.clone());
        let mut scenario = Scenario::load(setup.scenario)?;
        scenario.time_scale = setup.time_scale;
        let emulator = Emulator::start(scenario)
            .await
            .context("starting the emulator on 127.0.0.1")?;
        let mut config = c.config.clone();
        // A replay is not production traffic: it is never recorded.
        config.record = None;
        let router = Router::builder()
            .config(config.clone())
            .endpoint_url(emulator.url())
            .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
            .build()
            .await?;
        results.push(run(&router, &c.name, items, setup.time_scale, &progress).await);
        emulator.shutdown().await;
    }
    progress.finish_and_clear();
    let dominating = dominating(&results);
    Ok(ReplayReport {
        traces: setup
            .traces
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        scenario: setup.scenario.to_string(),
        calls: items.len(),
        recorded_cost_usd: items.iter().map(|i| i.recorded_cost_usd).sum(),
        speedup: setup.pace.speedup,
        rate_scale: setup.pace.rate_scale,
        time_scale: setup.time_scale,
        results,
        dominating,
    })
}

impl ReplayResult {
    /// The configuration's figures over every class, as `recommend` weighs a candidate.
    pub(crate) fn as_candidate(&self) -> super::CandidateResult {
        let cost_per_request = if self.ok > 0 {
            self.cost_usd / self.ok as f64
        } else {
            0.0
        };
        super::CandidateResult {
            candidate: super::Candidate {
                name: self.name.clone(),
                model: "(its configuration)".into(),
                tier: None,
                regions: None,
                concurrency: 0,
            },
            requests: self.calls,
            ok: self.ok,
            errors: self.errors.clone(),
            failovers: self.failovers,
            hedges: self.hedges,
            ttft_ms: self.ttft_ms,
            itl_ms: self.itl_ms,
            latency_ms: self.latency_ms,
            requests_per_second: self.requests_per_second,
            output_tokens_per_second: self.output_tokens_per_second,
            input_tokens: self.tokens[0],
            cache_read_tokens: self.tokens[1],
            output_tokens: self.tokens[3],
            token_cost_usd: self.cost_usd,
            instance_hourly_usd: None,
            cost_per_request_usd: cost_per_request,
            cost_per_million_usd: cost_per_request * 1e6,
            cost_basis: "tokens".into(),
            ttft_slo_met: self.attainment,
            served: self.served.clone(),
            duration_s: 0.0,
            quality: None,
        }
    }
}

/// The candidates that cost less than the baseline and meet every class's objective at least
/// as often (within a call's worth of its class).
pub(crate) fn dominating(results: &[ReplayResult]) -> Vec<String> {
    let Some((base, rest)) = results.split_first() else {
        return Vec::new();
    };
    rest.iter()
        .filter(|r| {
            r.cost_usd < base.cost_usd
                && r.ok >= base.ok
                && base.classes.iter().all(|(name, b)| {
                    let slack = 1.0 / b.judged.max(1) as f64;
                    match (b.attainment, r.classes.get(name).and_then(|c| c.attainment)) {
                        (Some(b), Some(c)) => c + slack >= b,
                        (Some(_), None) => false,
                        (None, _) => true,
                    }
                })
        })
        .map(|r| r.name.clone())
        .collect()
}

struct Outcome {
    class: String,
    at: Duration,
    /// How late the call was sent, real time.
    late: Duration,
    judged: bool,
    met: bool,
    task: Option<String>,
    recorded_model: Option<String>,
    recorded_success: Option<bool>,
    result: Result<laneway::GenerateResponse, String>,
}

async fn run(
    router: &Router,
    name: &str,
    items: &[TraceItem],
    time_scale: f64,
    progress: &indicatif::ProgressBar,
) -> ReplayResult {
    let per_us = 1.0 / time_scale;
    let started = Instant::now();
    let outcomes = futures::stream::iter(items.iter().cloned())
        .map(|t| {
            let at = t.item.at.unwrap_or_default();
            let target = started + at.mul_f64(time_scale);
            async move {
                tokio::time::sleep_until(target.into()).await;
                let late = target.elapsed();
                let request = t.item.request;
                let (ttft_target, deadline) = (request.slo.ttft_target, request.slo.deadline);
                let task = request.task_id.clone();
                let result = one(router, super::in_emulator_time(request, time_scale)).await;
                let (judged, met) = match (&result, ttft_target.is_some() || deadline.is_some()) {
                    (_, false) => (false, false),
                    (Err(_), true) => (true, false),
                    (Ok(r), true) => {
                        let ttft_ok = match (ttft_target, r.timings.ttft) {
                            (Some(target), Some(t)) => t.mul_f64(per_us) <= target,
                            _ => true,
                        };
                        let deadline_ok =
                            deadline.is_none_or(|d| r.timings.total.mul_f64(per_us) <= d);
                        (true, ttft_ok && deadline_ok)
                    }
                };
                Outcome {
                    class: t.class,
                    at,
                    late,
                    judged,
                    met,
                    task,
                    recorded_model: t.recorded_model,
                    recorded_success: t.recorded_success,
                    result,
                }
            }
        })
        .buffer_unordered(items.len().max(1));
    futures::pin_mut!(outcomes);
    let mut out = ReplayResult {
        name: name.to_string(),
        calls: 0,
        ok: 0,
        cost_usd: 0.0,
        attainment: None,
        requests_per_second: 0.0,
        output_tokens_per_second: 0.0,
        ttft_ms: Quantiles::default(),
        itl_ms: Quantiles::default(),
        latency_ms: Quantiles::default(),
        failovers: 0,
        hedges: 0,
        tokens: [0; 4],
        classes: BTreeMap::new(),
        cost_by_minute: Vec::new(),
        served: BTreeMap::new(),
        errors: BTreeMap::new(),
        send_lag_p99_ms: 0.0,
    };
    let mut lags = histogram();
    let mut hists: HashMap<String, [hdrhistogram::Histogram<u64>; 3]> = HashMap::new();
    let mut overall = [histogram(), histogram(), histogram()];
    // Per (class, task): answered all, judged success, unjudged.
    let mut tasks: HashMap<(String, String), (bool, bool, bool)> = HashMap::new();
    let (mut judged, mut met, mut output_tokens) = (0u64, 0u64, 0u64);
    let us = |d: Duration| (d.as_micros() as u64).max(1);
    let mut solo = 0u64;
    while let Some(o) = outcomes.next().await {
        progress.inc(1);
        out.calls += 1;
        lags.saturating_record(us(o.late));
        let class = out.classes.entry(o.class.clone()).or_default();
        class.calls += 1;
        judged += u64::from(o.judged);
        met += u64::from(o.met);
        class.judged += u64::from(o.judged);
        if o.met {
            *class.attainment.get_or_insert(0.0) += 1.0;
        }
        let task_key = (
            o.class.clone(),
            o.task.clone().unwrap_or_else(|| {
                solo += 1;
                format!("call-{solo}")
            }),
        );
        let task = tasks.entry(task_key).or_insert((true, true, false));
        let resp = match o.result {
            Ok(r) => r,
            Err(kind) => {
                *out.errors.entry(kind).or_default() += 1;
                task.0 = false;
                continue;
            }
        };
        out.ok += 1;
        class.ok += 1;
        class.cost_usd += resp.cost_usd;
        let u = &resp.usage;
        let counts = [
            u.input_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.output_tokens,
        ];
        for (i, n) in counts.into_iter().enumerate() {
            class.tokens[i] += u64::from(n);
            out.tokens[i] += u64::from(n);
        }
        out.cost_usd += resp.cost_usd;
        output_tokens += u64::from(resp.usage.output_tokens);
        let minute = (o.at.as_secs() / 60) as usize;
        if out.cost_by_minute.len() <= minute {
            out.cost_by_minute.resize(minute + 1, 0.0);
        }
        out.cost_by_minute[minute] += resp.cost_usd;
        let d = &resp.decision;
        out.failovers += d.failed_attempts.len() as u64;
        out.hedges += u64::from(d.hedge.is_some());
        if o.recorded_model.as_deref() == Some(d.model.as_str()) {
            task.1 &= o.recorded_success.unwrap_or(true);
        } else {
            task.2 = true;
        }
        let tier = d
            .served_tier
            .or(d.tier)
            .map(|t| t.to_string())
            .unwrap_or_else(|| "endpoint".into());
        *out.served
            .entry(format!("{} / {tier} / {}", d.model, d.region))
            .or_default() += 1;
        let h = hists
            .entry(o.class)
            .or_insert_with(|| [histogram(), histogram(), histogram()]);
        for h in [h, &mut overall] {
            if let Some(t) = resp.timings.ttft {
                h[0].saturating_record(us(t));
            }
            if let Some(i) = resp.timings.inter_token {
                h[1].saturating_record(us(i.mean));
            }
            h[2].saturating_record(us(resp.timings.total));
        }
    }
    let elapsed = started.elapsed().as_secs_f64() * per_us;
    for ((class, _), (answered, success, unjudged)) in tasks {
        let c = out.classes.entry(class).or_default();
        c.tasks += 1;
        if unjudged {
            c.tasks_unjudged += 1;
        } else if answered && success {
            c.successful_tasks += 1;
        }
    }
    for (name, c) in &mut out.classes {
        c.attainment = (c.judged > 0).then(|| c.attainment.unwrap_or(0.0) / c.judged as f64);
        if let Some(h) = hists.get(name) {
            c.ttft_ms = quantiles(&h[0], per_us);
            c.itl_ms = quantiles(&h[1], per_us);
            c.latency_ms = quantiles(&h[2], per_us);
        }
        if c.ok > 0 {
            c.cost_per_call_usd = c.cost_usd / c.ok as f64;
        }
        c.cost_per_successful_task_usd =
            (c.successful_tasks > 0).then(|| c.cost_usd / c.successful_tasks as f64);
    }
    out.attainment = (judged > 0).then(|| met as f64 / judged as f64);
    out.send_lag_p99_ms = quantiles(&lags, 1.0).p99;
    out.ttft_ms = quantiles(&overall[0], per_us);
    out.itl_ms = quantiles(&overall[1], per_us);
    out.latency_ms = quantiles(&overall[2], per_us);
    if elapsed > 0.0 {
        out.requests_per_second = out.ok as f64 / elapsed;
        out.output_tokens_per_second = output_tokens as f64 / elapsed;
    }
    out
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// The report as Markdown.
pub(crate) fn markdown(r: &ReplayReport) -> String {
    let mut md = format!(
        "# laneway bench --trace\n\n{} recorded calls from {} replayed against {} ({}x faster in time, {}x the rate, the emulator at {}x speed; times in scenario time). Recorded cost ${:.4}.\n\n",
        r.calls,
        r.traces.join(", "),
        r.scenario,
        r.speedup,
        r.rate_scale,
        1.0 / r.time_scale,
        r.recorded_cost_usd
    );
    md += "| configuration | ok | cost USD | vs baseline | attainment | req/s | tok/s |\n|---|---|---|---|---|---|---|\n";
    let base = r.results.first().map_or(0.0, |b| b.cost_usd);
    for x in &r.results {
        md += &format!(
            "| {} | {}/{} | {:.4} | {:+.1}% | {} | {:.1} | {:.0} |\n",
            x.name,
            x.ok,
            x.calls,
            x.cost_usd,
            if base > 0.0 {
                (x.cost_usd - base) / base * 100.0
            } else {
                0.0
            },
            pct(x.attainment),
            x.requests_per_second,
            x.output_tokens_per_second
        );
    }
    md += "\n| configuration | class | calls | attainment | TTFT p50/p90/p99 ms | ITL p50 ms | latency p50/p90/p99 ms | $/call | $/successful task | tasks judged |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for x in &r.results {
        for (name, c) in &x.classes {
            md += &format!(
                "| {} | {} | {} | {} | {:.0}/{:.0}/{:.0} | {:.0} | {:.0}/{:.0}/{:.0} | {:.6} | {} | {}/{} |\n",
                x.name,
                name,
                c.calls,
                pct(c.attainment),
                c.ttft_ms.p50,
                c.ttft_ms.p90,
                c.ttft_ms.p99,
                c.itl_ms.p50,
                c.latency_ms.p50,
                c.latency_ms.p90,
                c.latency_ms.p99,
                c.cost_per_call_usd,
                c.cost_per_successful_task_usd
                    .map_or("-".into(), |v| format!("{v:.6}")),
                c.tasks - c.tasks_unjudged,
                c.tasks
            );
        }
    }
    for x in r
        .results
        .iter()
        .filter(|x| x.send_lag_p99_ms > LAG_WARNING_MS)
    {
        md += &format!(
            "\n**Warning**: {}'s calls were sent up to {:.0} ms late (p99, real time): the client could not keep up with the replay's pace, so its latencies include its own queueing. Replay slower (`--time-scale` nearer 1, or `--speedup` below 1).\n",
            x.name, x.send_lag_p99_ms
        );
    }
    if !r.dominating.is_empty() {
        md += &format!(
            "\nBeats the baseline on cost and every class's attainment: {}.\n",
            r.dominating.join(", ")
        );
    }
    md
}

/// The charts: cost against p99 TTFT per class (with the frontier), attainment per class, and
/// cost over the recorded period.
pub(crate) fn charts(r: &ReplayReport) -> Vec<(String, String)> {
    let names: Vec<String> = r.results.iter().map(|x| x.name.clone()).collect();
    let classes: Vec<String> = r
        .results
        .first()
        .map(|b| b.classes.keys().cloned().collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for class in &classes {
        let points: Vec<(usize, f64, f64)> = r
            .results
            .iter()
            .enumerate()
            .filter_map(|(i, x)| {
                let c = x.classes.get(class)?;
                let y = if c.ttft_ms.samples > 0 {
                    c.ttft_ms.p99
                } else {
                    c.latency_ms.p99
                };
                (c.ok > 0).then_some((i, c.cost_per_call_usd * 1e6, y))
            })
            .collect();
        out.push((
            format!("cost-p99-{class}.svg"),
            chart::scatter_svg(
                &chart::Scatter {
                    title: &format!("Class {class}: p99 against cost per configuration"),
                    x_name: "cost per million calls (USD",
                    y_name: "TTFT p99 (ms)",
                    names: &names,
                    points: &points,
                },
                None,
            ),
        ));
    }
    let series: Vec<(String, Vec<f64>)> = r
        .results
        .iter()
        .map(|x| {
            (
                x.name.clone(),
                classes
                    .iter()
                    .map(|c| x.classes.get(c).and_then(|c| c.attainment).unwrap_or(0.0))
                    .collect(),
            )
        })
        .collect();
    out.push((
        "attainment.svg".into(),
        chart::bars_svg("SLO attainment per class", &classes, &series),
    ));
    let costs: Vec<(String, Vec<f64>)> = r
        .results
        .iter()
        .map(|x| (x.name.clone(), x.cost_by_minute.clone()))
        .collect();
    out.push((
        "cost-over-time.svg".into(),
        chart::lines_svg(
            "Cost over the recorded period",
            "minute of the trace",
            "USD per minute",
            &costs,
        ),
    ));
    out
}

/// One HTML file: the Markdown's tables as preformatted text and every chart inline.
pub(crate) fn html(title: &str, markdown: &str, charts: &[(String, String)]) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut h = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title><style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}pre{{white-space:pre-wrap;font-size:12px}}</style></head><body>\n<h1>{0}</h1>\n<pre>{1}</pre>\n",
        escape(title),
        escape(markdown)
    );
    for (name, svg) in charts {
        h += &format!("<h2>{}</h2>\n{svg}\n", escape(name));
    }
    h += "</body></html>\n";
    h
}

/// Writes replay.json, replay.md, replay.html and the charts into `dir`.
pub(crate) fn write(r: &ReplayReport, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let md = markdown(r);
    let charts = charts(r);
    std::fs::write(
        dir.join("replay.json"),
        serde_json::to_string_pretty(r)? + "\n",
    )?;
    std::fs::write(dir.join("replay.md"), &md)?;
    std::fs::write(
        dir.join("replay.html"),
        html("laneway bench --trace", &md, &charts),
    )?;
    for (name, svg) in &charts {
        std::fs::write(dir.join(name), svg)?;
    }
    Ok(())
}
