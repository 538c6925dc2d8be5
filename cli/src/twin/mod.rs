//! `laneway twin fit`: an emulator scenario fitted to what recorded calls met, per (region,
//! target, tier): the first token's distribution (a log-normal where it fits, an empirical
//! quantile table where it does not), the output speed, the request quota the throttles imply,
//! and the failure rates over time. Targets the trace never used keep the base scenario's
//! figures and are listed as such.

mod distribution;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use laneway::ServiceTier;
use laneway::telemetry::record::{CallRecord, Line};
use laneway_emulator::Scenario;

/// `laneway twin …`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum TwinCommand {
    /// Fits an emulator scenario to the latency, throttling and failures a trace met.
    Fit(FitArgs),
}

/// Options of `laneway twin fit`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FitArgs {
    /// Trace files (`[record]`'s), read in order as one.
    #[arg(long = "trace", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The scenario to start from: its regions, models and prices; the fitted figures go over
    /// it (a built-in name or a TOML file).
    #[arg(long, default_value = "startup")]
    pub base: String,
    /// Where the fitted scenario is written.
    #[arg(long)]
    pub out: PathBuf,
    /// The trace's times were measured against an emulator running at this scale: they are
    /// divided by it (1 for AWS).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Fewest calls a target needs for a fit of its own.
    #[arg(long, default_value_t = 20)]
    pub min_calls: usize,
}

/// Calls' first tokens kept per target at most (reservoir): memory stays flat over any trace.
const KEEP: usize = 20_000;

/// A log-normal is kept when its CDF is within this of the empirical one everywhere (the
/// Kolmogorov–Smirnov distance) or within the 5% critical value for the sample's size.
const KS_FLOOR: f64 = 0.04;

/// Window of the failure-rate schedule, milliseconds.
const WINDOW_MS: u64 = 60_000;

/// One (region, target, tier) as the calls met it.
#[derive(Debug, Default)]
struct TargetTrace {
    model: String,
    ttft_ms: Vec<f64>,
    /// First tokens of calls that read from the cache, taken back to an uncached prefill by
    /// the emulator's cache model: used when too few calls were uncached.
    cached_ttft_ms: Vec<f64>,
    /// First tokens known only to be later than this (right-censored): the target lost a
    /// hedge's race, and was cancelled when the winner's first token came.
    censored_ms: Vec<f64>,
    tokens_per_second: Vec<f64>,
    seen: u64,
    answered: u64,
    /// Per window of the sampled calls: attempts, failed by kind.
    sampled: BTreeMap<u64, Counts>,
    /// The load lines' cumulative counts (every call), at their time in scenario ms from the
    /// trace's start: answered, failed by kind.
    loads: Vec<(u64, u64, BTreeMap<String, u64>)>,
    output_tokens_max: u32,
}

impl TargetTrace {
    /// An exact first token, of a call that read from the cache or not.
    fn observe(&mut self, ms: f64, cached: bool) {
        if !cached {
            self.keep(ms);
        } else if self.cached_ttft_ms.len() < KEEP {
            self.cached_ttft_ms.push(ms);
        }
    }

    fn keep(&mut self, v: f64) {
        self.seen += 1;
        if self.ttft_ms.len() < KEEP {
            self.ttft_ms.push(v);
        } else {
            // Every k-th value replaces a slot in turn: a reproducible thinning.
            let k = self.seen / KEEP as u64;
            if self.seen.is_multiple_of(k) {
                let slot = (self.seen / k) as usize % KEEP;
                self.ttft_ms[slot] = v;
            }
        }
    }
}

/// Attempts, and those failed by kind.
type Counts = (u64, BTreeMap<String, u64>);

/// Load lines kept per target at most (a year of them at one every 10 s would be 3 million).
const MAX_LOAD_LINES: usize = 200_000;

/// Targets fitted at most: a trace names them, and a hostile one must not grow this map
/// without bound.
const MAX_TARGETS: usize = 4096;

/// `key`'s entry, made if there is room for one more target.
fn slot(targets: &mut BTreeMap<Key, TargetTrace>, key: Key) -> Option<&mut TargetTrace> {
    if targets.len() >= MAX_TARGETS && !targets.contains_key(&key) {
        return None;
    }
    Some(targets.entry(key).or_default())
}

/// Key of a target in the fit.
type Key = (String, String, Option<String>);

/// What the fit found for one target.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct TargetFit {
    pub region: String,
    pub target: String,
    pub tier: Option<String>,
    pub calls: usize,
    pub ttft_p50_ms: f64,
    pub ttft_p99_ms: f64,
    /// The twin's median and p99 (the log-normal's; the table's for an empirical fit).
    pub fitted_p50_ms: f64,
    pub fitted_p99_ms: f64,
    /// Hedged calls, whose first token is known only to be later than recorded.
    pub censored: usize,
    /// `log-normal` or `empirical`.
    pub form: &'static str,
    /// Kolmogorov–Smirnov distance of the log-normal to the calls (their Kaplan–Meier
    /// estimate, lost hedges as lower bounds).
    pub ks: f64,
    /// The fitted distribution's p99 against the calls', relative (0 where the calls' own p99
    /// is not known: lost hedges censor it).
    pub p99_error: f64,
    pub tokens_per_second: Option<f64>,
    pub requests_per_minute: Option<u64>,
    pub failure_rate: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted[i]
}

/// Quantiles written for an empirical fit.
const TABLE: &[f64] = &[
    0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];

/// Reads the traces, fits every target they used, and returns the scenario's TOML with the
/// fits. Prints a line per target.
pub(crate) fn fit(args: &FitArgs) -> anyhow::Result<(String, Vec<TargetFit>)> {
    anyhow::ensure!(
        args.time_scale > 0.0 && args.time_scale.is_finite(),
        "--time-scale must be > 0"
    );
    let base = Scenario::load(&args.base)?;
    let mut targets: BTreeMap<Key, TargetTrace> = BTreeMap::new();
    let mut first_ms: Option<u64> = None;
    let scale = 1.0 / args.time_scale;
    let mut calls = 0u64;
    crate::progress::read_traces(&args.traces, |line| {
        match line {
            Line::Call(c) => {
                calls += 1;
                let start = *first_ms.get_or_insert(c.at_ms);
                add_call(&mut targets, &c, start, scale);
            }
            Line::Load(load) => {
                // Every call's counts, cumulative: where a target has them they replace
                // the sample's (as deltas per window, in `failures`).
                let start = *first_ms.get_or_insert(load.at_ms);
                let at = (load.at_ms.saturating_sub(start) as f64 * scale) as u64;
                for t in load.targets {
                    let key = (t.region, t.target, t.tier);
                    if let Some(entry) = slot(&mut targets, key)
                        && entry.loads.len() < MAX_LOAD_LINES
                    {
                        entry.loads.push((at, t.ok, t.failed));
                    }
                }
            }
            Line::Header(_) | Line::Outcome(_) => {}
        }
    })?;
    anyhow::ensure!(calls > 0, "the traces hold no recorded calls");
    let mut doc: toml::Table = toml::from_str(&base_text(&args.base)?)?;
    let mut fits: Vec<TargetFit> = Vec::new();
    let mut faults = Vec::new();
    // Per (region, target): its tiers' load intervals summed, for the quota they share.
    let mut pools: BTreeMap<(String, String), PoolIntervals> = BTreeMap::new();
    for ((region, target, tier), t) in &mut targets {
        // Every target's throttles and failures count, fitted or not.
        let (intervals, failure_rate, window_faults) = failures(t, region, target, tier, &base);
        let pool = pools.entry((region.clone(), target.clone())).or_default();
        for (at, dt, answered, throttled) in intervals {
            let e = pool.entry(at).or_insert((dt, 0, 0));
            (e.1, e.2) = (e.1 + answered, e.2 + throttled);
        }
        faults.extend(window_faults);
        let cache_adjusted = t.ttft_ms.len() < args.min_calls;
        if cache_adjusted {
            t.ttft_ms.append(&mut t.cached_ttft_ms);
        }
        if t.ttft_ms.len() < args.min_calls {
            continue;
        }
        let Some(d) = distribution::fit(&t.ttft_ms, &t.censored_ms) else {
            continue;
        };
        // The 5% critical value of the KS distance for the sample's size, but never below a
        // floor: on thousands of calls any real latency is "significantly" not log-normal,
        // yet the log-normal reproduces it well enough.
        let critical = (1.36 / (t.ttft_ms.len() as f64).sqrt()).max(KS_FLOOR);
        let lognormal_fits = d.ks <= critical || !d.reaches(0.99);
        let (median, p99) = (d.median, d.p99.max(d.median));
        let measured_p99 = d.quantile(0.99);
        let tps = (!t.tokens_per_second.is_empty()).then(|| {
            t.tokens_per_second.sort_by(f64::total_cmp);
            quantile(&t.tokens_per_second, 0.5)
        });
        let fit = TargetFit {
            region: region.clone(),
            target: target.clone(),
            tier: tier.clone(),
            calls: t.ttft_ms.len() + t.censored_ms.len(),
            ttft_p50_ms: d.quantile(0.5),
            ttft_p99_ms: measured_p99,
            fitted_p50_ms: if lognormal_fits {
                median
            } else {
                d.quantile(0.5)
            },
            fitted_p99_ms: if lognormal_fits { p99 } else { measured_p99 },
            censored: t.censored_ms.len(),
            form: match (lognormal_fits, cache_adjusted) {
                (true, false) => "log-normal",
                (true, true) => "log-normal, cache-adjusted",
                (false, false) => "empirical",
                (false, true) => "empirical, cache-adjusted",
            },
            ks: d.ks,
            p99_error: if lognormal_fits && d.reaches(0.99) {
                (p99 - measured_p99) / measured_p99.max(1e-9)
            } else {
                0.0
            },
            tokens_per_second: tps,
            // The quota is its target's, all tiers': set below.
            requests_per_minute: None,
            failure_rate,
        };
        let mut o = toml::Table::new();
        o.insert("region".into(), region.clone().into());
        o.insert("target".into(), target.clone().into());
        if let Some(tier) = tier.as_deref().and_then(wire_tier) {
            o.insert("tier".into(), tier.into());
        }
        if lognormal_fits {
            o.insert("ttft_median_ms".into(), median.into());
            o.insert("ttft_p99_ms".into(), p99.into());
        } else {
            let table: Vec<toml::Value> = TABLE
                .iter()
                .map(|q| toml::Value::Array(vec![(*q).into(), d.quantile(*q).into()]))
                .collect();
            o.insert("ttft_quantiles".into(), toml::Value::Array(table));
        }
        if let Some(tps) = tps {
            o.insert("tokens_per_second".into(), tps.into());
        }
        if !place_override(&mut doc, &base, target, o, t.output_tokens_max) {
            eprintln!("{region} {target}: not in the base scenario, not fitted");
            continue;
        }
        fits.push(fit);
    }
    for ((region, target), intervals) in &pools {
        let Some(rpm) = implied_quota(intervals) else {
            continue;
        };
        let mut o = toml::Table::new();
        o.insert("region".into(), region.clone().into());
        o.insert("target".into(), target.clone().into());
        o.insert("requests_per_minute".into(), (rpm as i64).into());
        if place_override(&mut doc, &base, target, o, 0) {
            for f in fits
                .iter_mut()
                .filter(|f| &f.region == region && &f.target == target)
            {
                f.requests_per_minute = Some(rpm);
            }
        }
    }
    if !faults.is_empty() {
        let list = doc
            .entry("faults")
            .or_insert_with(|| toml::Value::Array(Vec::new()));
        if let toml::Value::Array(a) = list {
            a.extend(faults.into_iter().map(toml::Value::Table));
        }
    }
    let mut header = format!(
        "# Fitted by `laneway twin fit` from {} recorded calls ({}).\n# Fitted targets (region, target, tier: calls, form):\n",
        calls,
        args.traces
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for f in &fits {
        header += &format!(
            "#   {} {} {}: {} calls, {}\n",
            f.region,
            f.target,
            f.tier.as_deref().unwrap_or("-"),
            f.calls,
            f.form
        );
    }
    let unfitted: Vec<&str> = base
        .models
        .iter()
        .map(|m| m.id.as_str())
        .filter(|id| !fits.iter().any(|f| f.target.ends_with(id)))
        .collect();
    header += &format!(
        "# Not in the trace, kept at the base scenario's ({}) figures: {}\n",
        args.base,
        unfitted.join(", ")
    );
    Ok((header + &toml::to_string(&doc)?, fits))
}

/// The tier as the emulator's overrides spell it (Converse's word).
fn wire_tier(tier: &str) -> Option<String> {
    ServiceTier::named(tier)
        .and_then(ServiceTier::converse_name)
        .map(str::to_string)
}

fn base_text(base: &str) -> anyhow::Result<String> {
    if std::path::Path::new(base).is_file() {
        Ok(std::fs::read_to_string(base)?)
    } else {
        laneway_emulator::builtin_text(base)
            .map(str::to_string)
            .ok_or_else(|| anyhow::anyhow!("no built-in scenario named {base:?}"))
    }
}

fn add_call(targets: &mut BTreeMap<Key, TargetTrace>, c: &CallRecord, start: u64, scale: f64) {
    let w = (c.at_ms.saturating_sub(start) as f64 * scale) as u64 / WINDOW_MS;
    // The sample's failed attempts count toward their window (load lines, when present,
    // replace these with every call's).
    for a in &c.attempts {
        let key = (a.region.clone(), a.target.clone(), a.tier.clone());
        let Some(t) = slot(targets, key) else {
            continue;
        };
        let entry = t.sampled.entry(w).or_default();
        entry.0 += 1;
        *entry.1.entry(a.kind.clone()).or_default() += 1;
        // An attempt its first-token limit ended: its target's first token is later than that.
        if let Some(waited) = a.first_token_after_ms
            && t.censored_ms.len() < KEEP
        {
            t.censored_ms.push(waited * scale);
        }
    }
    let (Some(region), Some(target), Some(model)) = (&c.region, &c.target, &c.model) else {
        return;
    };
    if c.error.is_some() {
        return;
    }
    let Some(t) = slot(targets, (region.clone(), target.clone(), c.tier.clone())) else {
        return;
    };
    t.model.clone_from(model);
    t.answered += 1;
    t.output_tokens_max = t.output_tokens_max.max(c.output_tokens);
    t.sampled.entry(w).or_default().0 += 1;
    // The call's first token is its answering attempt's own only when no attempt failed
    // before it, unless that attempt's own was recorded.
    let Some(ttft) = c
        .ttft_ms
        .filter(|_| c.attempts.is_empty() || c.attempt_ttft_ms.is_some())
    else {
        return;
    };
    let generating = (c.total_ms - ttft) * scale / 1000.0;
    // (The generation speed is the answering attempt's whatever came before it.)
    if c.output_tokens >= 8 && generating > 0.0 && t.tokens_per_second.len() < KEEP {
        t.tokens_per_second
            .push(f64::from(c.output_tokens.saturating_sub(1)) / generating);
    }
    // The emulator skips 85% of the cached share's prefill (engine::first_token): a cached
    // call's first token is taken back to what its target would have taken uncached.
    let total = c.input_tokens + c.cache_read_tokens + c.cache_write_tokens;
    let share = f64::from(c.cache_read_tokens) / f64::from(total.max(1));
    let cached = c.cache_read_tokens > 0;
    let uncached = |ms: f64| ms * scale / (1.0 - 0.85 * share.min(1.0)).max(0.05);
    // What the answering attempt took from its own start: a call's own TTFT counts its wait
    // for a slot too, which the router's queue adds again in a replay. (A trace without it:
    // the call's, from the hedge's start when the hedge answered.)
    let own = c.attempt_ttft_ms;
    let Some(h) = &c.hedge else {
        t.observe(uncached(own.unwrap_or(ttft)), cached);
        return;
    };
    // A hedge: the winner's first token is known, the loser's only to come later than the
    // winner's (it was cancelled then), each from its own start.
    let key = |r: &laneway::telemetry::record::TargetRef| {
        (r.region.clone(), r.target.clone(), r.tier.clone())
    };
    let (winner_ms, loser, loser_ms) = match (h.won, own) {
        (true, Some(own)) => (own, &h.first, own + h.delay_ms),
        (false, Some(own)) => (own, &h.second, own - h.delay_ms),
        (true, None) => (ttft - h.delay_ms, &h.first, ttft),
        (false, None) => (ttft, &h.second, ttft - h.delay_ms),
    };
    t.observe(uncached(winner_ms.max(0.0)), cached);
    if let Some(lost) = slot(targets, key(loser))
        && lost.censored_ms.len() < KEEP
    {
        lost.censored_ms.push(uncached(loser_ms.max(0.0)));
    }
}

/// One interval between load lines: its end and length (scenario ms), attempts answered and
/// throttled in it.
type Interval = (u64, u64, u64, u64);

/// A target's intervals, all tiers summed, by their end: length, answered, throttled.
type PoolIntervals = BTreeMap<u64, (u64, u64, u64)>;

/// The request quota the throttles imply for one target (all its tiers: Bedrock's on-demand
/// quota is one pool): the median, over the load lines at which it had throttled since the one
/// before, of the attempts it answered in the minute of scenario time before them (a quota
/// counts a sliding minute, and lets that many through while it refuses the rest).
fn implied_quota(intervals: &PoolIntervals) -> Option<u64> {
    let ends: Vec<(u64, u64, u64, u64)> = intervals
        .iter()
        .map(|(end, (dt, answered, throttled))| (*end, *dt, *answered, *throttled))
        .collect();
    let mut rates: Vec<u64> = Vec::new();
    for (i, (_, _, _, throttled)) in ends.iter().enumerate() {
        if *throttled == 0 {
            continue;
        }
        // The intervals back to a minute before this one's end.
        let (mut covered, mut answered) = (0u64, 0u64);
        for (_, dt, a, _) in ends[..=i].iter().rev() {
            covered += dt;
            answered += a;
            if covered >= 60_000 {
                break;
            }
        }
        rates.push(if covered > 60_000 {
            answered * 60_000 / covered
        } else {
            answered
        });
    }
    rates.sort_unstable();
    (!rates.is_empty()).then(|| rates[rates.len() / 2].max(1))
}

/// The intervals between one target's load lines (for `implied_quota`), the share of its
/// attempts that failed otherwise than by a throttle, and faults that reproduce those failures
/// minute by minute of scenario time. From every call's counts where load lines gave them,
/// else from the sample's.
fn failures(
    t: &mut TargetTrace,
    region: &str,
    target: &str,
    tier: &Option<String>,
    base: &Scenario,
) -> (Vec<Interval>, f64, Vec<toml::Table>) {
    let is_throttle = |k: &str| k == "throttled" || k == "overloaded";
    let sum = |f: &BTreeMap<String, u64>, throttles: bool| -> u64 {
        f.iter()
            .filter(|(k, _)| is_throttle(k) == throttles)
            .map(|(_, v)| v)
            .sum()
    };
    // Per minute of scenario time: attempts, and those failed otherwise than by a throttle.
    let mut minutes: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut intervals: Vec<Interval> = Vec::new();
    if t.loads.is_empty() {
        for (w, (n, f)) in &t.sampled {
            let entry = minutes.entry(*w).or_default();
            entry.0 += n;
            entry.1 += sum(f, false);
        }
    } else {
        t.loads.sort_by_key(|l| l.0);
        let mut last: (u64, u64, BTreeMap<String, u64>) = (0, 0, BTreeMap::new());
        for (at, ok, failed) in &t.loads {
            let delta = |k: &String, v: &u64| v.saturating_sub(*last.2.get(k).unwrap_or(&0));
            let answered = ok.saturating_sub(last.1);
            let throttled: u64 = failed
                .iter()
                .filter(|(k, _)| is_throttle(k))
                .map(|(k, v)| delta(k, v))
                .sum();
            let other: u64 = failed
                .iter()
                .filter(|(k, _)| !is_throttle(k))
                .map(|(k, v)| delta(k, v))
                .sum();
            intervals.push((*at, at.saturating_sub(last.0), answered, throttled));
            let entry = minutes.entry(at / WINDOW_MS).or_default();
            entry.0 += answered + throttled + other;
            entry.1 += other;
            last = (*at, *ok, failed.clone());
        }
    }
    let (mut attempts, mut failed) = (0u64, 0u64);
    let mut faults = Vec::new();
    let model = base.split_profile(target).1.to_string();
    for (w, (n, other)) in &minutes {
        attempts += n;
        failed += other;
        if *other > 0 && *n > 0 {
            let mut fault = toml::Table::new();
            fault.insert("kind".into(), "internal_error".into());
            fault.insert("region".into(), region.into());
            fault.insert("model".into(), model.clone().into());
            if let Some(tier) = tier.as_deref().and_then(wire_tier) {
                fault.insert("tier".into(), tier.into());
            }
            fault.insert(
                "probability".into(),
                (*other as f64 / *n as f64).min(1.0).into(),
            );
            fault.insert("start_ms".into(), ((w * WINDOW_MS) as i64).into());
            fault.insert("end_ms".into(), (((w + 1) * WINDOW_MS) as i64).into());
            faults.push(fault);
        }
    }
    let rate = if attempts == 0 {
        0.0
    } else {
        failed as f64 / attempts as f64
    };
    (intervals, rate, faults)
}

/// Adds the fit to the base scenario's model (or endpoint) that serves `target`; false when
/// the base has neither.
fn place_override(
    doc: &mut toml::Table,
    base: &Scenario,
    target: &str,
    o: toml::Table,
    output_tokens_max: u32,
) -> bool {
    let bare = base.split_profile(target).1;
    if let Some(toml::Value::Array(models)) = doc.get_mut("models") {
        for m in models.iter_mut().filter_map(toml::Value::as_table_mut) {
            if m.get("id").and_then(toml::Value::as_str) == Some(bare) {
                ensure_answers(m, output_tokens_max);
                let list = m
                    .entry("overrides")
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                if let toml::Value::Array(a) = list {
                    a.push(toml::Value::Table(o));
                }
                return true;
            }
        }
    }
    if let Some(toml::Value::Array(endpoints)) = doc.get_mut("endpoints") {
        for e in endpoints.iter_mut().filter_map(toml::Value::as_table_mut) {
            if e.get("name").and_then(toml::Value::as_str) == Some(target) {
                ensure_answers(e, output_tokens_max);
                let perf = e
                    .entry("performance")
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(p) = perf {
                    for (k, v) in o {
                        if !matches!(k.as_str(), "region" | "target" | "tier") {
                            p.insert(k, v);
                        }
                    }
                }
                return true;
            }
        }
    }
    false
}

/// Natural answers at least as long as the longest recorded one, so that a replay's
/// `maxTokens` (the recorded length) decides each answer's length.
fn ensure_answers(table: &mut toml::Table, longest: u32) {
    let [lo, hi] = table
        .get("answer_tokens")
        .and_then(|v| v.as_array())
        .and_then(|a| Some([a.first()?.as_integer()?, a.get(1)?.as_integer()?]))
        .unwrap_or([40, 400]);
    let need = i64::from(longest);
    if lo < need {
        table.insert(
            "answer_tokens".into(),
            toml::Value::Array(vec![need.into(), hi.max(need).into()]),
        );
    }
}

/// Runs `laneway twin fit`.
pub(crate) fn run(cmd: TwinCommand) -> anyhow::Result<()> {
    match cmd {
        TwinCommand::Fit(args) => {
            let (text, fits) = fit(&args)?;
            // The fitted text must load: a twin that does not is an error here, not later.
            Scenario::from_toml(&text).context("the fitted scenario does not load")?;
            std::fs::write(&args.out, &text)
                .with_context(|| format!("writing {}", args.out.display()))?;
            println!(
                "| region | target | tier | calls | lost hedges | measured TTFT p50/p99 ms | twin TTFT p50/p99 ms | form | KS | p99 error | tok/s | quota rpm | failures |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
            );
            for f in &fits {
                println!(
                    "| {} | {} | {} | {} | {} | {:.0}/{:.0} | {:.0}/{:.0} | {} | {:.3} | {:+.1}% | {} | {} | {:.2}% |",
                    f.region,
                    f.target,
                    f.tier.as_deref().unwrap_or("-"),
                    f.calls,
                    f.censored,
                    f.ttft_p50_ms,
                    f.ttft_p99_ms,
                    f.fitted_p50_ms,
                    f.fitted_p99_ms,
                    f.form,
                    f.ks,
                    f.p99_error * 100.0,
                    f.tokens_per_second
                        .map_or("-".into(), |t| format!("{t:.0}")),
                    f.requests_per_minute.map_or("-".into(), |r| r.to_string()),
                    f.failure_rate * 100.0
                );
            }
            println!("\nwrote {}", args.out.display());
            Ok(())
        }
    }
}
