//! OpenTelemetry metrics: each call recorded into instruments named after the GenAI semantic
//! conventions (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
//! `gen_ai.server.time_to_first_token`, `gen_ai.server.time_per_output_token`), plus
//! `laneway.*` instruments for what the conventions do not name (cost, failovers, hedges,
//! cache tokens, SLO attainment, requests in flight).
//!
//! Laneway depends on the OpenTelemetry API only; the application installs the SDK and its
//! exporter (OTLP, Prometheus, stdout) and hands Laneway a [`Meter`] with
//! [`RouterBuilder::opentelemetry_meter`](crate::RouterBuilder::opentelemetry_meter).

use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};
use opentelemetry::KeyValue;

use super::{CallSlo, LaneKey};
use crate::config::Provider;
use crate::error::ErrorKind;
use crate::response::GenerateResponse;

/// Bucket boundaries of the GenAI conventions for durations, in seconds.
const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Bucket boundaries of the GenAI conventions for time per output token, in seconds.
const PER_TOKEN_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Bucket boundaries of the GenAI conventions for token counts.
const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The instruments one router records into.
pub(crate) struct OtelInstruments {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    ttft: Histogram<f64>,
    per_token: Histogram<f64>,
    cost: Counter<f64>,
    failovers: Counter<u64>,
    hedges: Counter<u64>,
    cache_tokens: Counter<u64>,
    slo: Counter<u64>,
    in_flight: UpDownCounter<i64>,
}

fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::Bedrock => "aws.bedrock",
        Provider::Sagemaker => "aws.sagemaker",
    }
}

fn lane_attributes(provider: &'static str, lane: &LaneKey) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider),
        KeyValue::new("gen_ai.request.model", lane.model.clone()),
        KeyValue::new("cloud.region", lane.region.clone()),
        KeyValue::new("laneway.target", lane.target.clone()),
        KeyValue::new("laneway.slo_class", lane.slo_class.as_str()),
    ];
    if let Some(f) = &lane.family {
        a.push(KeyValue::new("laneway.family", f.clone()));
    }
    if let Some(t) = lane.tier {
        a.push(KeyValue::new("laneway.tier", t.to_string()));
    }
    a
}

fn with(base: &[KeyValue], extra: KeyValue) -> Vec<KeyValue> {
    let mut v = Vec::with_capacity(base.len() + 1);
    v.extend_from_slice(base);
    v.push(extra);
    v
}

impl OtelInstruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration, failovers included.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Input and output tokens used per call.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            ttft: meter
                .f64_histogram("gen_ai.server.time_to_first_token")
                .with_unit("s")
                .with_description("Time to the first output token of streamed calls.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            per_token: meter
                .f64_histogram("gen_ai.server.time_per_output_token")
                .with_unit("s")
                .with_description("Mean time between output tokens after the first.")
                .with_boundaries(PER_TOKEN_BUCKETS.to_vec())
                .build(),
            cost: meter
                .f64_counter("laneway.cost")
                .with_unit("USD")
                .with_description("Cost of successful calls at the configured prices.")
                .build(),
            failovers: meter
                .u64_counter("laneway.failovers")
                .with_description("Failed attempts before a call succeeded.")
                .build(),
            hedges: meter
                .u64_counter("laneway.hedges")
                .with_description("Calls that sent a hedge.")
                .build(),
            cache_tokens: meter
                .u64_counter("laneway.cache.tokens")
                .with_unit("{token}")
                .with_description("Prompt-cache tokens read and written.")
                .build(),
            slo: meter
                .u64_counter("laneway.slo.calls")
                .with_description("Calls with a TTFT target or deadline, by whether they met it.")
                .build(),
            in_flight: meter
                .i64_up_down_counter("laneway.requests.in_flight")
                .with_description("Calls running now (the client-side queue).")
                .build(),
        }
    }

    pub(crate) fn call_started(&self) {
        self.in_flight.add(1, &[]);
    }

    pub(crate) fn call_ended(&self) {
        self.in_flight.add(-1, &[]);
    }

    pub(crate) fn success(&self, lane: &LaneKey, r: &GenerateResponse) {
        let attrs = lane_attributes(provider_name(r.decision.provider), lane);
        let t = &r.timings;
        self.duration.record(t.total.as_secs_f64(), &attrs);
        if let Some(ttft) = t.ttft {
            self.ttft.record(ttft.as_secs_f64(), &attrs);
        }
        if let Some(itl) = t.inter_token {
            self.per_token.record(itl.mean.as_secs_f64(), &attrs);
        }
        let input = u64::from(r.usage.input_tokens)
            + u64::from(r.usage.cache_read_tokens)
            + u64::from(r.usage.cache_write_tokens);
        self.tokens.record(
            input,
            &with(&attrs, KeyValue::new("gen_ai.token.type", "input")),
        );
        self.tokens.record(
            u64::from(r.usage.output_tokens),
            &with(&attrs, KeyValue::new("gen_ai.token.type", "output")),
        );
        for (kind, n) in [
            ("read", r.usage.cache_read_tokens),
            ("write", r.usage.cache_write_tokens),
        ] {
            if n > 0 {
                self.cache_tokens.add(
                    u64::from(n),
                    &with(&attrs, KeyValue::new("laneway.cache.operation", kind)),
                );
            }
        }
        self.cost.add(r.cost_usd, &attrs);
        let failed = r.decision.failed_attempts.len() as u64;
        if failed > 0 {
            self.failovers.add(failed, &attrs);
        }
        if r.decision.hedge.is_some() {
            self.hedges.add(1, &attrs);
        }
    }

    pub(crate) fn failure(
        &self,
        provider: Provider,
        lane: &LaneKey,
        kind: ErrorKind,
        elapsed: std::time::Duration,
    ) {
        // The conventions record failed operations in the same histogram, with `error.type`.
        let attrs = with(
            &lane_attributes(provider_name(provider), lane),
            KeyValue::new("error.type", kind.as_str()),
        );
        self.duration.record(elapsed.as_secs_f64(), &attrs);
    }

    pub(crate) fn slo(&self, slo: CallSlo<'_>, ttft_met: Option<bool>, deadline_met: Option<bool>) {
        for (target, met) in [("ttft", ttft_met), ("deadline", deadline_met)] {
            if let Some(met) = met {
                self.slo.add(
                    1,
                    &[
                        KeyValue::new("laneway.slo_class", slo.class.as_str()),
                        KeyValue::new("laneway.slo.target", target),
                        KeyValue::new("laneway.slo.met", met),
                    ],
                );
            }
        }
    }
}
