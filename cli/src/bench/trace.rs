//! A recorded trace as a workload: each recorded call again, at its recorded arrival (optionally
//! compressed in time or scaled in rate), with its class, SLO, residency, task and sizes, and
//! synthetic text in the shape of its prompt: the same shared prefixes (one text per prefix
//! digest, of its recorded tokens) before a text of its own, so that a cache sees the reuse the
//! recorded traffic had without any of its words.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use laneway::telemetry::record::{CallRecord, Line};
use laneway::{Config, GenerateRequest, Geography, Residency, Slo, SloClass};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::workload::WorkItem;

/// One recorded call to replay, with what was recorded of its outcome.
#[derive(Debug, Clone)]
pub(crate) struct TraceItem {
    pub item: WorkItem,
    /// Its SLO class's name.
    pub class: String,
    /// The model that answered it when recorded.
    pub recorded_model: Option<String>,
    /// What `finish_task` / `feedback` said of it, if anything.
    pub recorded_success: Option<bool>,
    /// Its recorded cost, USD.
    pub recorded_cost_usd: f64,
}

/// How a trace is replayed in time and rate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// Arrivals this many times closer together (2: twice as fast).
    pub speedup: f64,
    /// Each call replayed this many times on average (1.5: every call once, half of them twice).
    pub rate_scale: f64,
    /// The trace's times were measured against an emulator running at this scale (1: real
    /// time, AWS): its arrivals and its calls' SLO durations are divided by it.
    pub recorded_scale: f64,
}

/// Words of synthetic text: no recorded words are ever used.
const WORDS: &[&str] = &[
    "alpha", "delta", "orbit", "cable", "ledger", "signal", "harbor", "copper", "meadow", "vector",
    "garnet", "summit", "lumen", "quartz", "tundra", "bistro",
];

/// About `tokens` tokens (four characters each) of text drawn from `seed`.
fn text_of(seed: u64, tokens: u32) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let want = tokens as usize * 4;
    let mut s = String::with_capacity(want + 8);
    while s.len() < want {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
    }
    s.truncate(want.max(1));
    s
}

fn seed_of(text: &str) -> u64 {
    // FNV-1a: stable across runs and platforms.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn residency(r: &str) -> Option<Residency> {
    if let Some(g) = r.strip_prefix("geography:") {
        return Geography::new(g).ok().map(Residency::Geography);
    }
    r.strip_prefix("regions:")
        .map(|list| Residency::Regions(list.split('+').map(String::from).collect()))
}

fn class_of(name: &str) -> SloClass {
    SloClass::ALL
        .into_iter()
        .find(|c| c.as_str() == name)
        .unwrap_or_default()
}

/// The request a recorded call replays as, with `index` seeding its own text; its SLO's
/// durations divided by `recorded_scale`.
pub(crate) fn request_of(
    config: &Config,
    c: &CallRecord,
    index: u64,
    recorded_scale: f64,
) -> GenerateRequest {
    let mut prefixes = c.prefixes.clone();
    prefixes.sort_by_key(|p| p.tokens);
    let total = c.input_tokens + c.cache_read_tokens + c.cache_write_tokens;
    let mut covered = 0;
    let mut request = GenerateRequest::user(String::new());
    for p in &prefixes {
        if p.tokens > covered {
            request = request.system(text_of(seed_of(&p.digest), p.tokens - covered));
            covered = p.tokens;
        }
    }
    let own = total.saturating_sub(covered).max(1);
    request = GenerateRequest {
        messages: GenerateRequest::user(text_of(index ^ 0x5eed, own)).messages,
        ..request
    };
    request = request.max_tokens(i64::from(c.output_tokens.max(1)));
    request = request.slo(Slo {
        class: class_of(&c.class),
        ttft_target: c
            .ttft_target_ms
            .map(|ms| Duration::from_millis(ms).div_f64(recorded_scale)),
        deadline: c
            .deadline_ms
            .map(|ms| Duration::from_millis(ms).div_f64(recorded_scale)),
    });
    if let Some(r) = c.residency.as_deref().and_then(residency) {
        request = request.residency(r);
    }
    if let Some(t) = &c.task {
        request = request.task(t.clone());
    }
    match c.requested.as_deref().or(c.family.as_deref()) {
        Some(f) if config.families.contains_key(f) => request.family(f.to_string()),
        Some(m) if config.models.contains_key(m) => request.model(m.to_string()),
        _ => request,
    }
}

/// Reads `paths` as one trace, in arrival order, paced as `pace` says.
pub(crate) fn read(
    config: &Config,
    paths: &[PathBuf],
    pace: Pace,
    seed: u64,
) -> anyhow::Result<Vec<TraceItem>> {
    anyhow::ensure!(
        pace.speedup > 0.0 && pace.speedup.is_finite(),
        "--speedup must be > 0"
    );
    anyhow::ensure!(
        pace.rate_scale > 0.0 && pace.rate_scale.is_finite() && pace.rate_scale <= 100.0,
        "--rate-scale must be in (0, 100]"
    );
    anyhow::ensure!(
        pace.recorded_scale > 0.0 && pace.recorded_scale <= 1.0,
        "--trace-time-scale must be in (0, 1]"
    );
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut outcomes: HashMap<String, bool> = HashMap::new();
    crate::progress::read_traces(paths, |line| match line {
        Line::Call(c) => calls.push(*c),
        Line::Outcome(o) => {
            outcomes.insert(o.call_id, o.success);
        }
        Line::Header(_) | Line::Load(_) => {}
    })?;
    anyhow::ensure!(!calls.is_empty(), "the traces hold no recorded calls");
    calls.sort_by_key(|c| c.at_ms);
    let first = calls[0].at_ms;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut items = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        let copies = pace.rate_scale.floor() as u32
            + u32::from(rng.r#gen::<f64>() < pace.rate_scale.fract());
        let at_ms = (c.at_ms - first) as f64 / pace.recorded_scale / pace.speedup;
        for copy in 0..copies {
            // Copies arrive within the second around the original.
            let jitter = if copy == 0 {
                0.0
            } else {
                rng.gen_range(-500.0..500.0)
            };
            let at = Duration::from_secs_f64((at_ms + jitter).max(0.0) / 1000.0);
            let index = (i as u64) << 8 | u64::from(copy);
            items.push(TraceItem {
                item: WorkItem {
                    at: Some(at),
                    request: request_of(config, c, index, pace.recorded_scale),
                },
                class: c.class.clone(),
                recorded_model: c.model.clone(),
                recorded_success: c.call_id.as_ref().and_then(|id| outcomes.get(id).copied()),
                recorded_cost_usd: c.cost_usd,
            });
        }
    }
    items.sort_by_key(|t| t.item.at);
    Ok(items)
}
