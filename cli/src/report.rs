//! Per-lane statistics and the table the demo prints.

use std::collections::BTreeSet;
use std::time::Duration;

use hdrhistogram::Histogram;
use laneway::GenerateResponse;

/// What one lane of traffic did.
pub(crate) struct LaneStats {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub failovers: u64,
    pub hedges: u64,
    pub tiers: BTreeSet<String>,
    pub regions: BTreeSet<String>,
    ttft_us: Histogram<u64>,
    itl_us: Histogram<u64>,
    tokens_per_second: Histogram<u64>,
    pub cost_usd: f64,
    pub errors: Vec<String>,
}

impl LaneStats {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        let hist =
            || Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds");
        Self {
            name: name.into(),
            requests: 0,
            ok: 0,
            failovers: 0,
            hedges: 0,
            tiers: BTreeSet::new(),
            regions: BTreeSet::new(),
            ttft_us: hist(),
            itl_us: hist(),
            tokens_per_second: hist(),
            cost_usd: 0.0,
            errors: Vec::new(),
        }
    }

    pub(crate) fn record(&mut self, outcome: Result<GenerateResponse, String>) {
        self.requests += 1;
        let r = match outcome {
            Ok(r) => r,
            Err(e) => {
                self.errors.push(e);
                return;
            }
        };
        self.ok += 1;
        self.failovers += r.decision.failed_attempts.len() as u64;
        self.hedges += u64::from(r.decision.hedge.is_some());
        self.tiers
            .insert(match r.decision.served_tier.or(r.decision.tier) {
                Some(t) => t.as_str().to_string(),
                None => "endpoint".to_string(),
            });
        self.regions.insert(r.decision.region.clone());
        if let Some(t) = r.timings.ttft {
            self.ttft_us.saturating_record(micros(t));
        }
        if let Some(i) = r.timings.inter_token {
            self.itl_us.saturating_record(micros(i.p50));
        }
        if let Some(tps) = r.timings.output_tokens_per_second {
            self.tokens_per_second.saturating_record(tps.round() as u64);
        }
        self.cost_usd += r.cost_usd;
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

fn ms(h: &Histogram<u64>, q: f64) -> String {
    if h.is_empty() {
        "-".into()
    } else {
        format!("{:.0}", h.value_at_quantile(q) as f64 / 1000.0)
    }
}

/// The lanes as an aligned text table.
pub(crate) fn table(lanes: &[&LaneStats]) -> String {
    let header = [
        "lane",
        "ok/req",
        "failovers",
        "hedges",
        "tier",
        "regions",
        "TTFT p50 ms",
        "TTFT p99 ms",
        "ITL p50 ms",
        "tok/s p50",
        "cost $",
        "$/req",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for l in lanes {
        rows.push(vec![
            l.name.clone(),
            format!("{}/{}", l.ok, l.requests),
            l.failovers.to_string(),
            l.hedges.to_string(),
            l.tiers.iter().cloned().collect::<Vec<_>>().join("+"),
            l.regions.iter().cloned().collect::<Vec<_>>().join(","),
            ms(&l.ttft_us, 0.5),
            ms(&l.ttft_us, 0.99),
            if l.itl_us.is_empty() {
                "-".into()
            } else {
                format!("{:.1}", l.itl_us.value_at_quantile(0.5) as f64 / 1000.0)
            },
            if l.tokens_per_second.is_empty() {
                "-".into()
            } else {
                l.tokens_per_second.value_at_quantile(0.5).to_string()
            },
            format!("{:.4}", l.cost_usd),
            if l.ok == 0 {
                "-".into()
            } else {
                format!("{:.6}", l.cost_usd / l.ok as f64)
            },
        ]);
    }
    aligned(&rows)
}

/// Rows as an aligned text table: the first row is the header, the first column left-aligned.
fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

/// The router's own metrics: a row per lane (model, target, region, tier, SLO class), SLO
/// attainment per class, and cost per task and per successful task.
pub(crate) fn metrics_table(m: &laneway::telemetry::MetricsSnapshot) -> String {
    let ms = |p: &laneway::telemetry::Percentiles, v: f64| {
        if p.count == 0 {
            "-".to_string()
        } else {
            format!("{:.0}", v * 1000.0)
        }
    };
    let mut rows = vec![
        [
            "target, region",
            "tier",
            "slo",
            "calls",
            "errors",
            "failovers",
            "TTFT p50/p99 ms",
            "latency p50/p99 ms",
            "tok/s p50",
            "cost $",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for (k, l) in &m.lanes {
        rows.push(vec![
            format!("{}, {}", k.target, k.region),
            k.tier
                .map(|t| t.to_string())
                .unwrap_or_else(|| "endpoint".into()),
            k.slo_class.to_string(),
            l.requests.to_string(),
            l.errors.values().sum::<u64>().to_string(),
            l.failovers.to_string(),
            format!(
                "{}/{}",
                ms(&l.ttft_s, l.ttft_s.p50),
                ms(&l.ttft_s, l.ttft_s.p99)
            ),
            format!(
                "{}/{}",
                ms(&l.latency_s, l.latency_s.p50),
                ms(&l.latency_s, l.latency_s.p99)
            ),
            if l.output_tokens_per_second.count == 0 {
                "-".into()
            } else {
                format!("{:.0}", l.output_tokens_per_second.p50)
            },
            format!("{:.4}", l.cost_usd),
        ]);
    }
    let mut out = aligned(&rows);
    out.push('\n');
    for (class, a) in &m.slo {
        let share = |met: u64, of: u64| {
            if of == 0 {
                "-".to_string()
            } else {
                format!("{:.1}% of {of}", met as f64 * 100.0 / of as f64)
            }
        };
        out += &format!(
            "SLO {class}: {} calls, TTFT target met {}, deadline met {}\n",
            a.calls,
            share(a.ttft_met, a.ttft_targeted),
            share(a.deadline_met, a.deadline_targeted)
        );
    }
    let usd = |v: Option<f64>| v.map(|v| format!("${v:.6}")).unwrap_or_else(|| "-".into());
    out += &format!(
        "tasks: {} finished, {} successful; cost per task {}, per successful task {}\n",
        m.tasks.tasks,
        m.tasks.successful,
        usd(m.tasks.per_task()),
        usd(m.tasks.per_successful_task())
    );
    for (class, t) in &m.tasks_by_class {
        out += &format!(
            "  {class}: {} tasks, {} successful, per successful task {}\n",
            t.tasks,
            t.successful,
            usd(t.per_successful_task())
        );
    }
    out
}

/// The shadow-mode report: per family, what routing would have chosen and saved, and per cell
/// the feedback on the served calls.
pub(crate) fn shadow_table(report: &laneway::telemetry::shadow::ShadowReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if report.families.is_empty() {
        out.push_str("no family in shadow mode has answered a call (set router = { shadow = true } on a family)\n");
        return out;
    }
    for (name, f) in &report.families {
        let served = f
            .served
            .iter()
            .max_by_key(|(_, n)| **n)
            .map_or("", |(v, _)| v.as_str());
        let _ = writeln!(
            out,
            "family {name}: {} calls served by {served}; routed, they would have cost ${:.6} instead of ${:.6} ({:+.1}%)",
            f.calls,
            f.would_usd,
            f.served_usd,
            -f.saving() * 100.0
        );
        for (variant, n) in &f.would_choose {
            let _ = writeln!(
                out,
                "  routing would choose {variant:<46} {n:>7} calls ({:.1}%)",
                *n as f64 / f.calls.max(1) as f64 * 100.0
            );
        }
        let (moved, good, bad) = f.moved(served);
        if good + bad > 0 {
            let _ = writeln!(
                out,
                "  cells routing would move: {moved} calls; feedback there says {served} answered {good} of {} well ({:.1}%)",
                good + bad,
                good as f64 / (good + bad) as f64 * 100.0
            );
        } else {
            let _ = writeln!(
                out,
                "  cells routing would move: {moved} calls; no feedback yet (Router::feedback, finish_task)"
            );
        }
        let _ = writeln!(
            out,
            "  {:<12} {:>7} {:>12} {:>12} {:>8} {:>10}  would choose",
            "cell", "calls", "served $", "routed $", "saving", "feedback"
        );
        for (cell, c) in &f.cells {
            let saving = if c.served_usd > 0.0 {
                format!("{:+.0}%", (c.would_usd / c.served_usd - 1.0) * 100.0)
            } else {
                "-".into()
            };
            let feedback = if c.good + c.bad > 0 {
                format!("{}/{} good", c.good, c.good + c.bad)
            } else {
                "-".into()
            };
            let choices: Vec<String> = c
                .would_choose
                .iter()
                .map(|(v, n)| format!("{v} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "  {cell:<12} {:>7} {:>12.6} {:>12.6} {saving:>8} {feedback:>10}  {}",
                c.calls,
                c.served_usd,
                c.would_usd,
                choices.join(", ")
            );
        }
    }
    out.push_str("routed cost prices each served call's tokens at the would-be variant's prices; quality on the cheaper variants is not measured in shadow mode\n");
    out
}
