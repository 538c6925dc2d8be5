//! Runs one candidate on a workload and summarises what happened.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hdrhistogram::Histogram;
use laneway::{Config, GenerateRequest, GenerateResponse, Router, StreamEvent};
use serde::{Deserialize, Serialize};

use super::candidates::Candidate;
use super::workload::WorkItem;

/// p50 / p90 / p99 and mean of one measure, in milliseconds of scenario time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Quantiles {
    pub samples: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
}

/// What one candidate did on the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CandidateResult {
    pub candidate: Candidate,
    pub requests: u64,
    pub ok: u64,
    /// Failed calls by error kind.
    pub errors: BTreeMap<String, u64>,
    pub failovers: u64,
    pub hedges: u64,
    pub ttft_ms: Quantiles,
    pub itl_ms: Quantiles,
    pub latency_ms: Quantiles,
    /// Successful requests per second of scenario time.
    pub requests_per_second: f64,
    pub output_tokens_per_second: f64,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
    /// Cost of the run at token prices (what `cost_usd` of each response said).
    pub token_cost_usd: f64,
    /// Hourly price of the self-hosted instances used, when every call went to priced
    /// endpoints: then cost per request is instance time at the measured throughput.
    pub instance_hourly_usd: Option<f64>,
    pub cost_per_request_usd: f64,
    pub cost_per_million_usd: f64,
    /// "tokens" or "instance hours".
    pub cost_basis: String,
    /// Share of requests with a TTFT target that met it.
    pub ttft_slo_met: Option<f64>,
    /// Where calls were served: "model / tier / region" and how many.
    pub served: BTreeMap<String, u64>,
    /// Scenario seconds the run took.
    pub duration_s: f64,
    /// Share of the evaluation prompts answered well, when `recommend --quality` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
}

impl CandidateResult {
    pub(crate) fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        (self.requests - self.ok) as f64 / self.requests as f64
    }
}

pub(super) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

pub(super) fn quantiles(h: &Histogram<u64>, per_us: f64) -> Quantiles {
    if h.is_empty() {
        return Quantiles::default();
    }
    let ms = |v: u64| v as f64 / 1000.0 * per_us;
    Quantiles {
        samples: h.len(),
        p50: ms(h.value_at_quantile(0.5)),
        p90: ms(h.value_at_quantile(0.9)),
        p99: ms(h.value_at_quantile(0.99)),
        mean: h.mean() / 1000.0 * per_us,
    }
}

/// Streams one request to the end.
pub(super) async fn one(
    router: &Router,
    request: GenerateRequest,
) -> Result<GenerateResponse, String> {
    let mut events = router
        .stream(request)
        .await
        .map_err(|e| e.kind().to_string())?;
    while let Some(event) = events.next().await {
        match event {
            Ok(StreamEvent::Completed(done)) => return Ok(*done),
            Ok(_) => {}
            Err(e) => return Err(e.kind().to_string()),
        }
    }
    Err("incomplete".into())
}

/// Replays `items` through `router` as `candidate` says. Arrival times (scenario time) are
/// honoured when the workload has them, with at most `concurrency` requests in flight;
/// otherwise requests go closed-loop. `time_scale` converts measured time into scenario time.
pub(super) async fn run(
    router: &Router,
    config: &Config,
    candidate: &Candidate,
    items: &[WorkItem],
    time_scale: f64,
    progress: &indicatif::ProgressBar,
) -> CandidateResult {
    let per_us = 1.0 / time_scale;
    let gate = Arc::new(tokio::sync::Semaphore::new(candidate.concurrency));
    let started = Instant::now();
    let outcomes = futures::stream::iter(items.iter().cloned())
        .map(|item| {
            let gate = gate.clone();
            let request = candidate.apply(config, item.request);
            let target = item.at.map(|at| started + at.mul_f64(time_scale));
            async move {
                if let Some(t) = target {
                    tokio::time::sleep_until(t.into()).await;
                }
                let _permit = gate.acquire_owned().await.expect("never closed");
                let ttft_target = request.slo.ttft_target;
                (
                    ttft_target,
                    one(router, super::in_emulator_time(request, time_scale)).await,
                )
            }
        })
        .buffer_unordered(items.len().max(1));
    futures::pin_mut!(outcomes);

    let (mut ttft, mut itl, mut latency) = (histogram(), histogram(), histogram());
    let mut r = CandidateResult {
        candidate: candidate.clone(),
        requests: 0,
        ok: 0,
        errors: BTreeMap::new(),
        failovers: 0,
        hedges: 0,
        ttft_ms: Quantiles::default(),
        itl_ms: Quantiles::default(),
        latency_ms: Quantiles::default(),
        requests_per_second: 0.0,
        output_tokens_per_second: 0.0,
        input_tokens: 0,
        cache_read_tokens: 0,
        output_tokens: 0,
        token_cost_usd: 0.0,
        instance_hourly_usd: None,
        cost_per_request_usd: 0.0,
        cost_per_million_usd: 0.0,
        cost_basis: "tokens".into(),
        ttft_slo_met: None,
        served: BTreeMap::new(),
        duration_s: 0.0,
        quality: None,
    };
    let (mut targeted, mut met) = (0u64, 0u64);
    let mut endpoints_used = BTreeMap::new();
    let mut all_self_hosted = true;
    let us = |d: Duration| (d.as_micros() as u64).max(1);
    while let Some((ttft_target, outcome)) = outcomes.next().await {
        progress.inc(1);
        r.requests += 1;
        let resp = match outcome {
            Ok(resp) => resp,
            Err(kind) => {
                *r.errors.entry(kind).or_default() += 1;
                if ttft_target.is_some() {
                    targeted += 1;
                }
                continue;
            }
        };
        r.ok += 1;
        let d = &resp.decision;
        r.failovers += d.failed_attempts.len() as u64;
        r.hedges += u64::from(d.hedge.is_some());
        if let Some(t) = resp.timings.ttft {
            ttft.saturating_record(us(t));
            if let Some(target) = ttft_target {
                targeted += 1;
                met += u64::from(t.mul_f64(per_us) <= target);
            }
        }
        if let Some(i) = resp.timings.inter_token {
            itl.saturating_record(us(i.mean));
        }
        latency.saturating_record(us(resp.timings.total));
        r.input_tokens += u64::from(resp.usage.input_tokens);
        r.cache_read_tokens += u64::from(resp.usage.cache_read_tokens);
        r.output_tokens += u64::from(resp.usage.output_tokens);
        r.token_cost_usd += resp.cost_usd;
        let tier = d
            .served_tier
            .or(d.tier)
            .map(|t| t.to_string())
            .unwrap_or_else(|| "endpoint".into());
        *r.served
            .entry(format!("{} / {tier} / {}", d.model, d.region))
            .or_default() += 1;
        match d.endpoint.as_ref().and_then(|e| {
            config
                .models
                .get(&d.model)?
                .endpoints()
                .iter()
                .find(|c| &c.name == e)
        }) {
            Some(e) => match e.hourly_usd(&config.pricing) {
                Some(h) => {
                    endpoints_used.insert(e.name.clone(), h);
                }
                None => all_self_hosted = false,
            },
            None => all_self_hosted = false,
        }
    }
    let elapsed = started.elapsed().as_secs_f64() * per_us;
    r.duration_s = elapsed;
    r.ttft_ms = quantiles(&ttft, per_us);
    r.itl_ms = quantiles(&itl, per_us);
    r.latency_ms = quantiles(&latency, per_us);
    if elapsed > 0.0 {
        r.requests_per_second = r.ok as f64 / elapsed;
        r.output_tokens_per_second = r.output_tokens as f64 / elapsed;
    }
    r.ttft_slo_met = (targeted > 0).then(|| met as f64 / targeted as f64);
    if all_self_hosted && !endpoints_used.is_empty() && r.requests_per_second > 0.0 {
        let hourly: f64 = endpoints_used.values().sum();
        r.instance_hourly_usd = Some(hourly);
        r.cost_basis = "instance hours".into();
        r.cost_per_request_usd = hourly / 3600.0 / r.requests_per_second;
    } else if r.ok > 0 {
        r.cost_per_request_usd = r.token_cost_usd / r.ok as f64;
    }
    r.cost_per_million_usd = r.cost_per_request_usd * 1e6;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_in_scenario_milliseconds() {
        let mut h = histogram();
        for v in 1..=100u64 {
            h.record(v * 1000).unwrap();
        }
        // Measured at a tenth of real time: 50 ms measured is 500 ms of scenario time.
        let q = quantiles(&h, 10.0);
        assert_eq!(q.samples, 100);
        assert!(
            (q.p50 - 500.0).abs() < 1.0 && (q.p99 - 990.0).abs() < 2.0,
            "{q:?}"
        );
        assert_eq!(quantiles(&histogram(), 1.0), Quantiles::default());
    }
}
