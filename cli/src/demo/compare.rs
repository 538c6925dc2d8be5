//! The same workload through two clients, side by side: successes, TTFT per SLO class, SLO
//! attainment, cost per successful task, the share of input read from cache, and the saving.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hdrhistogram::Histogram;
use laneway::{GenerateRequest, GenerateResponse, SloClass, Usage};

/// What one call did, whoever sent it.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub class: SloClass,
    pub task: Option<String>,
    pub ttft_target: Option<Duration>,
    pub ok: bool,
    pub ttft: Option<Duration>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub error: Option<String>,
}

impl Call {
    /// A call not made yet, with what the request asks of it.
    pub(super) fn of_request(request: &GenerateRequest) -> Self {
        Self {
            class: request.slo.class,
            task: request.task_id.clone(),
            ttft_target: request.slo.ttft_target,
            ok: false,
            ttft: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
        }
    }

    /// What Laneway's call did.
    pub(super) fn of_laneway(
        request: &GenerateRequest,
        outcome: &Result<GenerateResponse, String>,
    ) -> Self {
        let mut c = Self::of_request(request);
        match outcome {
            Ok(r) => {
                c.ok = true;
                c.ttft = r.timings.ttft;
                c.usage = r.usage;
                c.cost_usd = r.cost_usd;
            }
            Err(e) => c.error = Some(e.clone()),
        }
        c
    }
}

/// One client's totals.
pub(super) struct Side {
    pub name: &'static str,
    calls: Vec<Call>,
    /// Scenario time per wall time (TTFTs are shown in scenario time).
    scale: f64,
}

struct ClassFigures {
    calls: usize,
    ok: usize,
    ttft_p50_ms: Option<f64>,
    ttft_p99_ms: Option<f64>,
    ttft_met: Option<f64>,
}

impl Side {
    pub(super) fn new(name: &'static str, calls: Vec<Call>, time_scale: f64) -> Self {
        Self {
            name,
            calls,
            scale: time_scale,
        }
    }

    pub(super) fn ok(&self) -> usize {
        self.calls.iter().filter(|c| c.ok).count()
    }

    pub(super) fn lost(&self) -> usize {
        self.calls.len() - self.ok()
    }

    fn class(&self, class: SloClass) -> Option<ClassFigures> {
        let calls: Vec<&Call> = self.calls.iter().filter(|c| c.class == class).collect();
        if calls.is_empty() {
            return None;
        }
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for c in &calls {
            if let Some(t) = c.ttft {
                h.saturating_record((t.as_secs_f64() / self.scale * 1e6) as u64);
            }
        }
        let q = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0);
        let targeted: Vec<&&Call> = calls.iter().filter(|c| c.ttft_target.is_some()).collect();
        let met = targeted
            .iter()
            .filter(|c| {
                c.ok && c
                    .ttft
                    .zip(c.ttft_target)
                    .is_some_and(|(t, target)| t.as_secs_f64() / self.scale <= target.as_secs_f64())
            })
            .count();
        Some(ClassFigures {
            calls: calls.len(),
            ok: calls.iter().filter(|c| c.ok).count(),
            ttft_p50_ms: q(0.5),
            ttft_p99_ms: q(0.99),
            ttft_met: (!targeted.is_empty()).then(|| met as f64 / targeted.len() as f64),
        })
    }

    pub(super) fn cost(&self) -> f64 {
        self.calls.iter().map(|c| c.cost_usd).sum()
    }

    /// Cost of every call over tasks whose calls all succeeded (a call without a task is a
    /// task of its own).
    pub(super) fn cost_per_successful_task(&self) -> Option<f64> {
        let mut tasks: BTreeMap<String, bool> = BTreeMap::new();
        for (i, c) in self.calls.iter().enumerate() {
            let key = c.task.clone().unwrap_or_else(|| format!("#{i}"));
            *tasks.entry(key).or_insert(true) &= c.ok;
        }
        let successful = tasks.values().filter(|ok| **ok).count();
        (successful > 0).then(|| self.cost() / successful as f64)
    }

    /// Share of input tokens read from the prompt cache.
    pub(super) fn cache_share(&self) -> f64 {
        let read: u64 = self
            .calls
            .iter()
            .map(|c| u64::from(c.usage.cache_read_tokens))
            .sum();
        let all: u64 = self
            .calls
            .iter()
            .map(|c| u64::from(c.usage.total_input_tokens()))
            .sum();
        if all == 0 {
            0.0
        } else {
            read as f64 / all as f64
        }
    }

    /// Share of calls with a TTFT target that met it, in one class.
    pub(super) fn ttft_met(&self, class: SloClass) -> Option<f64> {
        self.class(class).and_then(|f| f.ttft_met)
    }

    /// A few of the errors, for the reader.
    pub(super) fn errors(&self) -> BTreeSet<String> {
        self.calls
            .iter()
            .filter_map(|c| c.error.as_ref())
            .map(|e| e.chars().take(140).collect())
            .take(3)
            .collect()
    }
}

/// The two sides as a table: a row per figure, a column per client, and the change.
pub(super) fn table(naive: &Side, laneway: &Side) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} ms"));
    let usd = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("${v:.6}"));
    let change = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => format!("{:+.0}%", (b - a) / a * 100.0),
        _ => String::new(),
    };
    let mut rows: Vec<[String; 4]> = vec![[
        "".into(),
        naive.name.into(),
        laneway.name.into(),
        "change".into(),
    ]];
    rows.push([
        "calls answered".into(),
        format!("{}/{}", naive.ok(), naive.calls.len()),
        format!("{}/{}", laneway.ok(), laneway.calls.len()),
        String::new(),
    ]);
    for class in [
        SloClass::Interactive,
        SloClass::Standard,
        SloClass::Background,
        SloClass::Batch,
    ] {
        let (Some(a), Some(b)) = (naive.class(class), laneway.class(class)) else {
            continue;
        };
        rows.push([
            format!("{class}: answered"),
            format!("{}/{}", a.ok, a.calls),
            format!("{}/{}", b.ok, b.calls),
            String::new(),
        ]);
        rows.push([
            format!("{class}: TTFT p50 / p99"),
            format!("{} / {}", ms(a.ttft_p50_ms), ms(a.ttft_p99_ms)),
            format!("{} / {}", ms(b.ttft_p50_ms), ms(b.ttft_p99_ms)),
            change(a.ttft_p99_ms, b.ttft_p99_ms),
        ]);
        if a.ttft_met.is_some() || b.ttft_met.is_some() {
            rows.push([
                format!("{class}: TTFT target met"),
                pct(a.ttft_met),
                pct(b.ttft_met),
                String::new(),
            ]);
        }
    }
    rows.push([
        "cost".into(),
        usd(Some(naive.cost())),
        usd(Some(laneway.cost())),
        change(Some(naive.cost()), Some(laneway.cost())),
    ]);
    rows.push([
        "cost per successful task".into(),
        usd(naive.cost_per_successful_task()),
        usd(laneway.cost_per_successful_task()),
        change(
            naive.cost_per_successful_task(),
            laneway.cost_per_successful_task(),
        ),
    ]);
    rows.push([
        "input read from cache".into(),
        pct(Some(naive.cache_share())),
        pct(Some(laneway.cache_share())),
        String::new(),
    ]);
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let line = format!(
            "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 6));
            out.push('\n');
        }
    }
    out
}
