//! `laneway recommend`: the best measured configuration that meets every constraint, the
//! runners-up and why each lost; when none meets them, which constraint failed by how much.

use std::fmt;
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::bench::{self, BenchArgs, BenchReport, CandidateResult};

/// Options of `laneway recommend`.
#[derive(Debug, clap::Args)]
pub(crate) struct RecommendArgs {
    /// Read results written by `laneway bench --out DIR` (DIR/bench.json) instead of running.
    #[arg(long)]
    from: Option<PathBuf>,
    /// What to optimise among the candidates that meet every constraint.
    #[arg(long, value_enum, default_value = "cost")]
    objective: Objective,
    /// A limit such as `ttft_p99<800ms`, `latency_p99<5s`, `error_rate<1%`, `throughput>20`,
    /// `cost_per_million<500`, `ttft_slo>=95%`. Repeat for several.
    #[arg(long = "constraint", value_parser = Constraint::parse)]
    constraints: Vec<Constraint>,
    /// Evaluation outcomes (the `router train` format: CSV or JSONL of prompts with, per
    /// model id, whether its answer was good enough): adds each candidate's quality, the
    /// share of these prompts its model (or, for a family, the variant it routes each prompt
    /// to) answered well, for a `quality>=0.8` constraint and the ranking.
    #[arg(long)]
    quality: Option<PathBuf>,
    /// Scores at or above this are good enough, when the outcomes are scores.
    #[arg(long)]
    quality_pass_mark: Option<f64>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// What `recommend` optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Objective {
    /// Lowest cost per request.
    Cost,
    /// Lowest end-to-end p99 latency.
    Latency,
    /// Most successful requests per second.
    Throughput,
}

/// A measure a constraint can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Metric {
    TtftP50,
    TtftP90,
    TtftP99,
    ItlP50,
    ItlP90,
    ItlP99,
    LatencyP50,
    LatencyP90,
    LatencyP99,
    ErrorRate,
    Throughput,
    TokensPerSecond,
    CostPerRequest,
    CostPerMillion,
    TtftSlo,
    /// Share of the evaluation prompts answered well (`--quality`).
    Quality,
}

const METRICS: &[(&str, Metric)] = &[
    ("ttft_p50", Metric::TtftP50),
    ("ttft_p90", Metric::TtftP90),
    ("ttft_p99", Metric::TtftP99),
    ("itl_p50", Metric::ItlP50),
    ("itl_p90", Metric::ItlP90),
    ("itl_p99", Metric::ItlP99),
    ("latency_p50", Metric::LatencyP50),
    ("latency_p90", Metric::LatencyP90),
    ("latency_p99", Metric::LatencyP99),
    ("error_rate", Metric::ErrorRate),
    ("throughput", Metric::Throughput),
    ("tokens_per_second", Metric::TokensPerSecond),
    ("cost_per_request", Metric::CostPerRequest),
    ("cost_per_million", Metric::CostPerMillion),
    ("ttft_slo", Metric::TtftSlo),
    ("quality", Metric::Quality),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Millis,
    Share,
    Plain,
    Dollars,
}

impl Metric {
    fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    fn unit(self) -> Unit {
        use Metric::*;
        match self {
            TtftP50 | TtftP90 | TtftP99 | ItlP50 | ItlP90 | ItlP99 | LatencyP50 | LatencyP90
            | LatencyP99 => Unit::Millis,
            ErrorRate | TtftSlo | Quality => Unit::Share,
            Throughput | TokensPerSecond => Unit::Plain,
            CostPerRequest | CostPerMillion => Unit::Dollars,
        }
    }

    /// The candidate's value (ms for times, a fraction for shares), if it was measured.
    pub(crate) fn of(self, r: &CandidateResult) -> Option<f64> {
        use Metric::*;
        let q = |q: &bench::Quantiles, v: f64| (q.samples > 0).then_some(v);
        match self {
            TtftP50 => q(&r.ttft_ms, r.ttft_ms.p50),
            TtftP90 => q(&r.ttft_ms, r.ttft_ms.p90),
            TtftP99 => q(&r.ttft_ms, r.ttft_ms.p99),
            ItlP50 => q(&r.itl_ms, r.itl_ms.p50),
            ItlP90 => q(&r.itl_ms, r.itl_ms.p90),
            ItlP99 => q(&r.itl_ms, r.itl_ms.p99),
            LatencyP50 => q(&r.latency_ms, r.latency_ms.p50),
            LatencyP90 => q(&r.latency_ms, r.latency_ms.p90),
            LatencyP99 => q(&r.latency_ms, r.latency_ms.p99),
            ErrorRate => Some(r.error_rate()),
            Throughput => Some(r.requests_per_second),
            TokensPerSecond => Some(r.output_tokens_per_second),
            CostPerRequest => (r.ok > 0).then_some(r.cost_per_request_usd),
            CostPerMillion => (r.ok > 0).then_some(r.cost_per_million_usd),
            TtftSlo => r.ttft_slo_met,
            Quality => r.quality,
        }
    }

    fn show(self, v: f64) -> String {
        match self.unit() {
            Unit::Millis if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
            Unit::Millis => format!("{v:.0} ms"),
            Unit::Share => format!("{:.1}%", v * 100.0),
            Unit::Plain => format!("{v:.1}"),
            Unit::Dollars => format!("${v:.6}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
        }
    }
}

/// `metric < value` (or `<=`, `>`, `>=`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Constraint {
    pub metric: Metric,
    pub at_most: bool,
    pub inclusive: bool,
    /// In the metric's unit: ms for times, a fraction for shares.
    pub limit: f64,
}

impl Constraint {
    /// Parses `ttft_p99<800ms`, `latency_p99<=5s`, `error_rate<1%`, `throughput>=20`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let s: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(at) = s.find(['<', '>']) else {
            return Err(format!("{text:?}: expected METRIC<VALUE or METRIC>VALUE"));
        };
        let (name, rest) = s.split_at(at);
        let at_most = rest.starts_with('<');
        let (inclusive, value) = match rest[1..].strip_prefix('=') {
            Some(v) => (true, v),
            None => (false, &rest[1..]),
        };
        let metric = METRICS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
                format!(
                    "{text:?}: unknown measure {name:?}; one of {}",
                    names.join(", ")
                )
            })?;
        let number = |v: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{text:?}: {v:?} is not a number >= 0"))
        };
        let limit = match metric.unit() {
            Unit::Millis => {
                if let Some(v) = value.strip_suffix("ms") {
                    number(v)?
                } else if let Some(v) = value.strip_suffix("us") {
                    number(v)? / 1000.0
                } else if let Some(v) = value.strip_suffix('s') {
                    number(v)? * 1000.0
                } else {
                    return Err(format!("{text:?}: give a unit: ms, s or us"));
                }
            }
            Unit::Share => match value.strip_suffix('%') {
                Some(v) => number(v)? / 100.0,
                None => {
                    let v = number(value)?;
                    if v > 1.0 {
                        return Err(format!("{text:?}: a share is 0..1 or a percentage like 5%"));
                    }
                    v
                }
            },
            Unit::Plain => number(value.trim_end_matches("/s"))?,
            Unit::Dollars => number(value.trim_start_matches('$'))?,
        };
        Ok(Self {
            metric,
            at_most,
            inclusive,
            limit,
        })
    }

    /// How far the candidate misses: `None` when it meets the constraint.
    pub(crate) fn miss(&self, r: &CandidateResult) -> Option<Miss> {
        let Some(v) = self.metric.of(r) else {
            return Some(Miss {
                constraint: *self,
                value: None,
            });
        };
        let ok = match (self.at_most, self.inclusive) {
            (true, true) => v <= self.limit,
            (true, false) => v < self.limit,
            (false, true) => v >= self.limit,
            (false, false) => v > self.limit,
        };
        (!ok).then_some(Miss {
            constraint: *self,
            value: Some(v),
        })
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match (self.at_most, self.inclusive) {
            (true, false) => "<",
            (true, true) => "<=",
            (false, false) => ">",
            (false, true) => ">=",
        };
        write!(
            f,
            "{} {op} {}",
            self.metric.name(),
            self.metric.show(self.limit)
        )
    }
}

/// A constraint a candidate failed, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Miss {
    pub constraint: Constraint,
    pub value: Option<f64>,
}

impl Miss {
    /// How far past the limit, relative to it (0.25 = 25% over).
    pub(crate) fn relative(&self) -> f64 {
        match self.value {
            None => f64::INFINITY,
            Some(v) if self.constraint.limit == 0.0 => v.abs(),
            Some(v) => (v - self.constraint.limit).abs() / self.constraint.limit,
        }
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.constraint;
        match self.value {
            None => write!(f, "{} not measured (needed {c})", c.metric.name()),
            Some(v) => write!(
                f,
                "{} {} misses {c} by {} ({:+.0}%)",
                c.metric.name(),
                c.metric.show(v),
                c.metric.show((v - c.limit).abs()),
                if c.at_most { 1.0 } else { -1.0 } * self.relative() * 100.0
            ),
        }
    }
}

/// The outcome of a recommendation.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Recommendation {
    pub objective: Objective,
    pub constraints: Vec<Constraint>,
    /// Index into the results of the best candidate, if one meets every constraint.
    pub best: Option<usize>,
    /// Every candidate, best first, with why it lost (empty for the winner).
    pub ranking: Vec<(usize, Vec<String>)>,
    /// When none qualifies: per constraint, the best value any candidate reached.
    pub closest: Vec<String>,
}

fn objective_value(objective: Objective, r: &CandidateResult) -> f64 {
    match objective {
        Objective::Cost if r.ok == 0 => f64::INFINITY,
        Objective::Cost => r.cost_per_request_usd,
        Objective::Latency if r.latency_ms.samples == 0 => f64::INFINITY,
        Objective::Latency => r.latency_ms.p99,
        Objective::Throughput => -r.requests_per_second,
    }
}

fn describe(objective: Objective, r: &CandidateResult) -> String {
    match objective {
        Objective::Cost => format!("${:.2} per million requests", r.cost_per_million_usd),
        Objective::Latency => format!("latency p99 {}", Metric::LatencyP99.show(r.latency_ms.p99)),
        Objective::Throughput => format!("{:.1} requests/s", r.requests_per_second),
    }
}

/// Ranks the results: those meeting every constraint first, by the objective; then the rest,
/// fewest and smallest misses first.
pub(crate) fn recommend(
    results: &[CandidateResult],
    objective: Objective,
    constraints: &[Constraint],
) -> Recommendation {
    let misses: Vec<Vec<Miss>> = results
        .iter()
        .map(|r| constraints.iter().filter_map(|c| c.miss(r)).collect())
        .collect();
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            let worst = misses[i].iter().map(Miss::relative).fold(0.0, f64::max);
            (
                misses[i].len(),
                worst,
                objective_value(objective, &results[i]),
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
            .then(a.cmp(&b))
    });
    let best = order.first().copied().filter(|&i| misses[i].is_empty());
    let ranking = order
        .iter()
        .map(|&i| {
            if Some(i) == best {
                return (i, Vec::new());
            }
            let mut why: Vec<String> = misses[i].iter().map(Miss::to_string).collect();
            if why.is_empty()
                && let Some(b) = best
            {
                let (mine, theirs) = (
                    objective_value(objective, &results[i]),
                    objective_value(objective, &results[b]),
                );
                let delta = if theirs != 0.0 {
                    format!(" ({:+.1}%)", (mine - theirs) / theirs.abs() * 100.0)
                } else {
                    String::new()
                };
                why.push(format!(
                    "meets every constraint but {}: {}{delta}",
                    match objective {
                        Objective::Cost => "costs more",
                        Objective::Latency => "is slower",
                        Objective::Throughput => "serves fewer requests",
                    },
                    describe(objective, &results[i])
                ));
            }
            (i, why)
        })
        .collect();
    let closest = if best.is_some() {
        Vec::new()
    } else {
        constraints
            .iter()
            .map(|c| {
                let best_value = results
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| c.metric.of(r).map(|v| (i, v)))
                    .min_by(|a, b| {
                        if c.at_most {
                            a.1.total_cmp(&b.1)
                        } else {
                            b.1.total_cmp(&a.1)
                        }
                    });
                match best_value {
                    None => format!("{c}: no candidate measured {}", c.metric.name()),
                    Some((i, v)) => match c.miss(&results[i]) {
                        None => format!(
                            "{c}: met by {} at best ({})",
                            results[i].candidate.name,
                            c.metric.show(v)
                        ),
                        Some(m) => format!(
                            "{c}: no candidate meets it; the best, {}, {m}",
                            results[i].candidate.name
                        ),
                    },
                }
            })
            .collect()
    };
    Recommendation {
        objective,
        constraints: constraints.to_vec(),
        best,
        ranking,
        closest,
    }
}

impl Recommendation {
    /// The recommendation as text (Markdown-friendly).
    pub(crate) fn render(&self, results: &[CandidateResult]) -> String {
        let mut out = String::new();
        let cons: Vec<String> = self.constraints.iter().map(|c| c.to_string()).collect();
        let objective = match self.objective {
            Objective::Cost => "lowest cost",
            Objective::Latency => "lowest p99 latency",
            Objective::Throughput => "highest throughput",
        };
        out += &format!(
            "Objective: {objective}; constraints: {}\n\n",
            if cons.is_empty() {
                "none".to_string()
            } else {
                cons.join(", ")
            }
        );
        match self.best {
            Some(b) => {
                let r = &results[b];
                out += &format!(
                    "Recommended: {} ({}; TTFT p99 {}, latency p99 {}, {:.1} req/s, {:.1}% errors)\n",
                    r.candidate.name,
                    describe(self.objective, r),
                    Metric::TtftP99
                        .of(r)
                        .map(|v| Metric::TtftP99.show(v))
                        .unwrap_or("n/a".into()),
                    Metric::LatencyP99.show(r.latency_ms.p99),
                    r.requests_per_second,
                    r.error_rate() * 100.0
                );
            }
            None => {
                out += "No candidate meets every constraint.\n";
                for c in &self.closest {
                    out += &format!("- {c}\n");
                }
            }
        }
        out += "\nRanking:\n";
        for (n, (i, why)) in self.ranking.iter().enumerate() {
            let r = &results[*i];
            let quality = r
                .quality
                .map(|q| format!(" [quality {}]", Metric::Quality.show(q)))
                .unwrap_or_default();
            if why.is_empty() {
                out += &format!("{}. {}{quality} (recommended)\n", n + 1, r.candidate.name);
            } else {
                out += &format!(
                    "{}. {}{quality}: {}\n",
                    n + 1,
                    r.candidate.name,
                    why.join("; ")
                );
            }
        }
        out
    }
}

pub(crate) async fn run(args: RecommendArgs) -> anyhow::Result<std::process::ExitCode> {
    if !args.bench.traces.is_empty() {
        return from_trace(&args).await;
    }
    let mut report: BenchReport = match &args.from {
        Some(path) => {
            let file = if path.is_dir() {
                path.join("bench.json")
            } else {
                path.clone()
            };
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not a laneway bench report", file.display()))?
        }
        None => bench::measure(&args.bench).await?,
    };
    if report.results.is_empty() {
        bail!("the bench report has no candidates");
    }
    if let Some(path) = &args.quality {
        let config = bench::router_config(&args.bench)?;
        let outcomes = crate::quality::Outcomes::load(path, args.quality_pass_mark)?;
        for r in &mut report.results {
            r.quality = outcomes.quality_of(&r.candidate, &config)?;
        }
    } else if args.constraints.iter().any(|c| c.metric == Metric::Quality) {
        bail!("a quality constraint needs --quality FILE (evaluation outcomes)");
    }
    let rec = recommend(&report.results, args.objective, &args.constraints);
    if args.from.is_none() {
        bench::print_table(&report);
        println!();
    }
    print!("{}", rec.render(&report.results));
    if let (None, Some(out)) = (&args.from, &args.bench.out) {
        bench::write_outputs(&report, out, Some(&rec))?;
        println!(
            "\nwrote {0}/bench.json, {0}/report.md, {0}/frontier.svg",
            out.display()
        );
    }
    Ok(if rec.best.is_some() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(2)
    })
}

/// `recommend --trace`: the trace replayed against the configuration in force and each
/// `--candidate-config`, then weighed as any bench's candidates (`ttft_slo` is the share of
/// calls that met their class's objective).
async fn from_trace(args: &RecommendArgs) -> anyhow::Result<std::process::ExitCode> {
    if args.from.is_some() || args.quality.is_some() {
        bail!(
            "recommend --trace replays the trace itself and judges success by the recorded outcomes: it takes neither --from nor --quality"
        );
    }
    let replayed = bench::replay(&args.bench).await?;
    print!("{}", bench::replay::markdown(&replayed));
    let results: Vec<CandidateResult> = replayed
        .results
        .iter()
        .map(bench::replay::ReplayResult::as_candidate)
        .collect();
    let rec = recommend(&results, args.objective, &args.constraints);
    println!();
    print!("{}", rec.render(&results));
    if let Some(out) = &args.bench.out {
        bench::replay::write(&replayed, out)?;
        std::fs::write(out.join("recommendation.txt"), rec.render(&results))?;
        println!(
            "\nwrote {0}/replay.json, {0}/replay.md, {0}/replay.html, {0}/recommendation.txt",
            out.display()
        );
    }
    Ok(if rec.best.is_some() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Candidate, Quantiles};

    fn result(name: &str, ttft_p99: f64, cost_per_request: f64, rps: f64) -> CandidateResult {
        let q = |p99: f64| Quantiles {
            samples: 10,
            p50: p99 / 2.0,
            p90: p99 * 0.9,
            p99,
            mean: p99 / 2.0,
        };
        CandidateResult {
            candidate: Candidate {
                name: name.into(),
                model: "m".into(),
                tier: None,
                regions: None,
                concurrency: 1,
            },
            requests: 10,
            ok: 10,
            errors: Default::default(),
            failovers: 0,
            hedges: 0,
            ttft_ms: q(ttft_p99),
            itl_ms: q(10.0),
            latency_ms: q(ttft_p99 * 4.0),
            requests_per_second: rps,
            output_tokens_per_second: rps * 100.0,
            input_tokens: 0,
            cache_read_tokens: 0,
            output_tokens: 0,
            token_cost_usd: cost_per_request * 10.0,
            instance_hourly_usd: None,
            cost_per_request_usd: cost_per_request,
            cost_per_million_usd: cost_per_request * 1e6,
            cost_basis: "tokens".into(),
            ttft_slo_met: Some(0.9),
            served: Default::default(),
            duration_s: 1.0,
            quality: None,
        }
    }

    #[test]
    fn a_cheaper_candidate_below_the_quality_floor_loses_and_says_so() {
        let mut cheap = result("micro", 300.0, 0.001, 50.0);
        cheap.quality = Some(0.62);
        let mut good = result("pro", 400.0, 0.004, 50.0);
        good.quality = Some(0.91);
        let results = vec![cheap, good];
        let cons = [Constraint::parse("quality>=0.8").unwrap()];
        let rec = recommend(&results, Objective::Cost, &cons);
        assert_eq!(rec.best, Some(1));
        let text = rec.render(&results);
        assert!(text.contains("Recommended: pro"), "{text}");
        assert!(
            text.contains("micro [quality 62.0%]: quality 62.0% misses quality >= 80.0%"),
            "{text}"
        );
        assert!(text.contains("pro [quality 91.0%] (recommended)"), "{text}");
    }

    #[test]
    fn constraints_parse_with_units_and_reject_nonsense() {
        let c = Constraint::parse("ttft_p99<800ms").unwrap();
        assert_eq!(
            (c.metric, c.at_most, c.inclusive, c.limit),
            (Metric::TtftP99, true, false, 800.0)
        );
        assert_eq!(
            Constraint::parse("latency_p99 <= 5s").unwrap().limit,
            5000.0
        );
        assert_eq!(Constraint::parse("error_rate<1%").unwrap().limit, 0.01);
        assert_eq!(Constraint::parse("ttft_slo>=0.95").unwrap().limit, 0.95);
        let t = Constraint::parse("throughput>20/s").unwrap();
        assert!(!t.at_most && t.limit == 20.0);
        assert_eq!(
            Constraint::parse("cost_per_million<$500").unwrap().limit,
            500.0
        );
        for bad in [
            "ttft_p99=800ms",
            "ttft_p99<800",
            "speed<3",
            "error_rate<7",
            "ttft_p99<-1ms",
        ] {
            assert!(Constraint::parse(bad).is_err(), "{bad}");
        }
        assert!(
            Constraint::parse("speed<3")
                .unwrap_err()
                .contains("ttft_p99")
        );
    }

    #[test]
    fn the_cheapest_candidate_meeting_every_constraint_wins() {
        let results = vec![
            result("fast and dear", 300.0, 0.010, 50.0),
            result("cheap but slow", 1500.0, 0.001, 40.0),
            result("middle", 700.0, 0.004, 45.0),
        ];
        let cons = [Constraint::parse("ttft_p99<800ms").unwrap()];
        let rec = recommend(&results, Objective::Cost, &cons);
        assert_eq!(rec.best, Some(2));
        assert_eq!(rec.ranking[0].0, 2);
        assert!(
            rec.ranking[1].1[0].contains("costs more"),
            "{:?}",
            rec.ranking
        );
        assert_eq!(rec.ranking[2].0, 1);
        assert!(
            rec.ranking[2].1[0].contains("misses ttft_p99 < 800 ms by 700 ms"),
            "{:?}",
            rec.ranking[2]
        );
        let text = rec.render(&results);
        assert!(text.contains("Recommended: middle"), "{text}");

        let by_latency = recommend(&results, Objective::Latency, &cons);
        assert_eq!(by_latency.best, Some(0));
        let by_throughput = recommend(&results, Objective::Throughput, &[]);
        assert_eq!(by_throughput.best, Some(0));
    }

    #[test]
    fn when_nothing_qualifies_it_says_what_failed_by_how_much() {
        let results = vec![
            result("a", 1200.0, 0.01, 5.0),
            result("b", 900.0, 0.02, 5.0),
        ];
        let cons = [
            Constraint::parse("ttft_p99<800ms").unwrap(),
            Constraint::parse("throughput>=1").unwrap(),
        ];
        let rec = recommend(&results, Objective::Cost, &cons);
        assert_eq!(rec.best, None);
        assert_eq!(rec.ranking[0].0, 1, "the smaller miss ranks first");
        assert!(
            rec.closest[0].contains("b") && rec.closest[0].contains("100 ms"),
            "{:?}",
            rec.closest
        );
        assert!(rec.closest[1].contains("met by"), "{:?}", rec.closest);
        assert!(
            rec.render(&results)
                .contains("No candidate meets every constraint")
        );
    }
}
