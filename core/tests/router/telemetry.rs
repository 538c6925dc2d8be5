//! The router's measurements after real calls to the emulator.

use crate::common;

use std::time::Duration;

use futures::StreamExt;
use laneway::{GenerateRequest, Slo, SloClass};
use laneway_emulator::{Fault, FaultKind};

#[tokio::test]
async fn lanes_slo_attainment_tasks_and_prometheus_text() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let secret = "the prompt text must never appear in labels";
    for i in 0..6 {
        let req = GenerateRequest::user(format!("{secret} {i}"))
            .family("nova")
            .max_tokens(12)
            .task(format!("task-{}", i % 2))
            .slo(Slo {
                class: SloClass::Interactive,
                ttft_target: Some(Duration::from_secs(5)),
                deadline: Some(Duration::from_secs(10)),
            });
        let mut s = router.stream(req).await.unwrap();
        while let Some(ev) = s.next().await {
            ev.unwrap();
        }
    }
    router
        .generate(
            GenerateRequest::user("background work")
                .family("nova")
                .slo_class(SloClass::Background)
                .max_tokens(8),
        )
        .await
        .unwrap();
    emu.add_fault(Fault::new(FaultKind::Outage).for_model("amazon.nova-pro-v1:0"));
    let failed = router
        .generate(
            GenerateRequest::user("x")
                .model("amazon.nova-pro-v1:0")
                .max_tokens(4)
                // The outage outlasts the call: retry rounds end at this deadline.
                .deadline(Duration::from_millis(300)),
        )
        .await;
    assert!(failed.is_err());

    assert!(router.finish_task("task-0", true));
    assert!(router.finish_task("task-1", false));
    assert!(!router.finish_task("never-seen", true));

    let m = router.metrics();
    assert_eq!(m.in_flight, 0);
    let interactive: Vec<_> = m
        .lanes
        .iter()
        .filter(|(k, _)| {
            k.slo_class == SloClass::Interactive && k.family.as_deref() == Some("nova")
        })
        .collect();
    assert_eq!(interactive.iter().map(|(_, s)| s.requests).sum::<u64>(), 6);
    let (_, lane) = interactive.iter().max_by_key(|(_, s)| s.requests).unwrap();
    assert!(lane.ttft_s.count > 0 && lane.ttft_s.p50 > 0.0 && lane.ttft_s.p99 >= lane.ttft_s.p50);
    assert!(lane.inter_token_s.count > 0 && lane.latency_s.p90 >= lane.latency_s.p50);
    assert!(lane.output_tokens > 0 && lane.cost_usd > 0.0);
    let slo = m.slo[&SloClass::Interactive];
    assert_eq!(
        (slo.calls, slo.ttft_targeted, slo.ttft_met, slo.deadline_met),
        (6, 6, 6, 6)
    );
    assert_eq!(
        m.slo[&SloClass::Standard].calls,
        1,
        "the failed call counts"
    );
    let errors: u64 = m
        .lanes
        .iter()
        .map(|(_, s)| s.errors.values().sum::<u64>())
        .sum();
    assert_eq!(errors, 1);
    assert_eq!((m.tasks.tasks, m.tasks.successful), (2, 1));
    let per_successful = m.tasks.per_successful_task().unwrap();
    assert!((per_successful - 2.0 * m.tasks.per_task().unwrap()).abs() < 1e-12);
    assert_eq!(m.tasks_by_class[&SloClass::Interactive].tasks, 2);

    let text = m.prometheus();
    for name in [
        "gen_ai_client_operation_duration_seconds",
        "gen_ai_client_operation_time_to_first_chunk_seconds",
        "laneway_region_ejected{cloud_region=",
        "laneway_breaker_state{cloud_region=",
        "gen_ai_client_token_usage_sum",
        "laneway_cost_usd_total",
        "laneway_errors_total",
        "laneway_slo_calls_total",
        "laneway_tasks_total",
        "laneway_requests_in_flight 0",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(
        text.contains("error_type=\"all_targets_failed\"")
            || text.contains("error_type=\"unavailable\""),
        "{text}"
    );
    assert!(!text.contains(secret) && !format!("{m:?}").contains(secret));
    emu.shutdown().await;
}

/// Streams `n` Nova calls (one task) and fails one call on a model that is down.
async fn traffic(router: &laneway::Router, emu: &laneway_emulator::Emulator, n: usize) {
    for i in 0..n {
        let req = GenerateRequest::user(format!("question {i}"))
            .family("nova")
            .max_tokens(10)
            .task("t")
            .slo(Slo {
                class: SloClass::Interactive,
                ttft_target: Some(Duration::from_secs(5)),
                deadline: None,
            });
        let mut s = router.stream(req).await.unwrap();
        while let Some(ev) = s.next().await {
            ev.unwrap();
        }
    }
    emu.add_fault(Fault::new(FaultKind::Outage).for_model("amazon.nova-pro-v1:0"));
    let failed = router
        .generate(
            GenerateRequest::user("x")
                .model("amazon.nova-pro-v1:0")
                .max_tokens(4)
                // The outage outlasts the call: retry rounds end at this deadline.
                .deadline(Duration::from_millis(300)),
        )
        .await;
    assert!(failed.is_err());
}

#[tokio::test]
async fn prometheus_text_parses_with_a_real_parser() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    traffic(&router, &emu, 5).await;
    assert!(router.finish_task("t", true));
    let m = router.metrics();
    let text = m.prometheus();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let samples = |name: &str| -> Vec<&prometheus_parse::Sample> {
        scrape.samples.iter().filter(|s| s.metric == name).collect()
    };

    let durations = samples("gen_ai_client_operation_duration_seconds");
    assert!(!durations.is_empty(), "{text}");
    for s in &durations {
        let prometheus_parse::Value::Summary(q) = &s.value else {
            panic!("{s:?} is not a summary")
        };
        let quantiles: Vec<f64> = q.iter().map(|c| c.quantile).collect();
        assert_eq!(quantiles, [0.5, 0.9, 0.99]);
        assert!(q.windows(2).all(|w| w[0].count <= w[1].count), "{q:?}");
        assert!(s.labels.get("gen_ai_request_model").is_some());
    }
    let counted: f64 = samples("gen_ai_client_operation_duration_seconds_count")
        .iter()
        .map(|s| match s.value {
            prometheus_parse::Value::Untyped(v) | prometheus_parse::Value::Counter(v) => v,
            ref v => panic!("{v:?}"),
        })
        .sum();
    assert_eq!(counted, 5.0);
    let cost: f64 = samples("laneway_cost_usd_total")
        .iter()
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => v,
            ref v => panic!("{v:?}"),
        })
        .sum();
    let want: f64 = m.lanes.iter().map(|(_, l)| l.cost_usd).sum();
    assert!(
        want > 0.0 && (cost - want).abs() < 1e-12,
        "{cost} vs {want}"
    );
    let in_flight = samples("laneway_requests_in_flight");
    assert!(matches!(in_flight[0].value, prometheus_parse::Value::Gauge(v) if v == 0.0));
    emu.shutdown().await;
}

#[tokio::test]
async fn opentelemetry_export_is_received_by_an_in_memory_exporter() {
    use opentelemetry::metrics::MeterProvider;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let emu = common::emulator().await;
    let router = laneway::Router::builder()
        .config(common::config(""))
        .endpoint_url(emu.url())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .opentelemetry_meter(provider.meter("laneway"))
        .build()
        .await
        .unwrap();
    traffic(&router, &emu, 4).await;
    provider.force_flush().unwrap();
    let exported = exporter.get_finished_metrics().unwrap();
    let last = exported.last().expect("an export");
    let metrics: Vec<_> = last
        .scope_metrics()
        .flat_map(|s| s.metrics())
        .map(|m| (m.name().to_string(), m.data()))
        .collect();
    let find = |name: &str| {
        metrics
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| {
                panic!(
                    "{name} not exported: {:?}",
                    metrics.iter().map(|m| &m.0).collect::<Vec<_>>()
                )
            })
            .1
    };
    let attr = |attrs: Vec<&opentelemetry::KeyValue>, key: &str| {
        attrs
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };

    let AggregatedMetrics::F64(MetricData::Histogram(duration)) =
        find("gen_ai.client.operation.duration")
    else {
        panic!("duration is not an f64 histogram")
    };
    let mut ok = 0;
    for p in duration.data_points() {
        let attrs: Vec<_> = p.attributes().collect();
        assert_eq!(
            attr(attrs.clone(), "gen_ai.provider.name").as_deref(),
            Some("aws.bedrock")
        );
        assert!(attr(attrs, "gen_ai.request.model").is_some());
        ok += p.count();
    }
    assert_eq!(ok, 4);
    let AggregatedMetrics::F64(MetricData::Sum(errors)) = find("laneway.errors") else {
        panic!("errors is not an f64 sum")
    };
    let mut failed = 0.0;
    for p in errors.data_points() {
        let kind = attr(p.attributes().collect(), "error.type").unwrap();
        assert!(
            kind == "unavailable" || kind == "all_targets_failed",
            "{kind}"
        );
        failed += p.value();
    }
    assert_eq!(failed, 1.0);

    let AggregatedMetrics::F64(MetricData::Histogram(tokens)) = find("gen_ai.client.token.usage")
    else {
        panic!("token usage is not an f64 histogram")
    };
    let mut by_type = std::collections::BTreeMap::new();
    for p in tokens.data_points() {
        let t = attr(p.attributes().collect(), "gen_ai.token.type").unwrap();
        *by_type.entry(t).or_insert(0u64) += p.sum() as u64;
    }
    let m = router.metrics();
    let output: u64 = m.lanes.iter().map(|(_, l)| l.output_tokens).sum();
    assert_eq!(by_type.get("output"), Some(&output));
    assert!(by_type.get("input").copied().unwrap_or(0) > 0);

    let AggregatedMetrics::F64(MetricData::Histogram(ttft)) =
        find("gen_ai.client.operation.time_to_first_chunk")
    else {
        panic!("ttft is not an f64 histogram")
    };
    assert_eq!(ttft.data_points().map(|p| p.count()).sum::<u64>(), 4);

    let AggregatedMetrics::F64(MetricData::Sum(cost)) = find("laneway.cost") else {
        panic!("cost is not an f64 sum")
    };
    let exported_cost: f64 = cost.data_points().map(|p| p.value()).sum();
    let want: f64 = m.lanes.iter().map(|(_, l)| l.cost_usd).sum();
    assert!(
        (exported_cost - want).abs() < 1e-12,
        "{exported_cost} vs {want}"
    );

    let AggregatedMetrics::F64(MetricData::Sum(in_flight)) = find("laneway.requests.in_flight")
    else {
        panic!("in flight is not an f64 sum")
    };
    assert_eq!(in_flight.data_points().map(|p| p.value()).sum::<f64>(), 0.0);
    assert!(!in_flight.is_monotonic(), "calls in flight go up and down");

    // The outage's failed attempts, by target and kind, as the snapshot counts them.
    let AggregatedMetrics::F64(MetricData::Sum(attempts)) = find("laneway.attempt.errors") else {
        panic!("attempt errors is not an f64 sum")
    };
    let exported: f64 = attempts.data_points().map(|p| p.value()).sum();
    let counted: u64 = m
        .health
        .targets
        .iter()
        .flat_map(|t| t.attempt_errors.values())
        .sum();
    assert!(
        counted > 0 && exported == counted as f64,
        "{exported} vs {counted}"
    );
    let AggregatedMetrics::F64(MetricData::Gauge(breakers)) = find("laneway.breaker.state") else {
        panic!("breaker state is not an f64 gauge")
    };
    assert_eq!(breakers.data_points().count(), m.health.targets.len());

    let AggregatedMetrics::F64(MetricData::Sum(slo)) = find("laneway.slo.calls") else {
        panic!("slo calls is not an f64 sum")
    };
    // Four calls with a TTFT target, and the failed call with its deadline.
    assert_eq!(slo.data_points().map(|p| p.value()).sum::<f64>(), 5.0);
    provider.shutdown().unwrap();
    emu.shutdown().await;
}

/// Every series of one export: (Prometheus metric name, sorted Prometheus `key=value` labels).
type Series = std::collections::BTreeSet<(String, Vec<String>)>;

/// What the OpenTelemetry export holds, named as Prometheus would name it (from the catalog).
fn otel_series(exported: &[opentelemetry_sdk::metrics::data::ResourceMetrics]) -> Series {
    use laneway::telemetry::catalog::{CATALOG, prometheus_label};
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    let last = exported.last().expect("an export");
    let mut out = Series::new();
    for m in last.scope_metrics().flat_map(|s| s.metrics()) {
        let entry = CATALOG
            .iter()
            .find(|c| c.name == m.name())
            .unwrap_or_else(|| panic!("{} is not in the catalog", m.name()));
        let keys = |attrs: Vec<&opentelemetry::KeyValue>| {
            let mut k: Vec<String> = attrs
                .iter()
                .map(|kv| format!("{}={}", prometheus_label(kv.key.as_str()), kv.value))
                .collect();
            k.sort();
            k
        };
        let mut add = |attrs: Vec<&opentelemetry::KeyValue>, nonzero: bool| {
            // A gauge is there whatever its value; so is an observed count.
            if nonzero || entry.is_observed() {
                out.insert((entry.prometheus_name(), keys(attrs)));
            }
        };
        match m.data() {
            AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                for p in h.data_points() {
                    add(p.attributes().collect(), p.count() > 0);
                }
            }
            AggregatedMetrics::F64(MetricData::Sum(s)) => {
                for p in s.data_points() {
                    add(p.attributes().collect(), p.value() != 0.0);
                }
            }
            AggregatedMetrics::F64(MetricData::Gauge(g)) => {
                for p in g.data_points() {
                    add(p.attributes().collect(), true);
                }
            }
            other => panic!("{}: unexpected instrument {other:?}", m.name()),
        }
    }
    out
}

/// What the Prometheus text holds, zero-valued counters left out (OpenTelemetry never sees
/// an add of zero).
fn prometheus_series(text: &str) -> Series {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let mut out = Series::new();
    for s in &scrape.samples {
        let (name, nonzero) = match &s.value {
            prometheus_parse::Value::Summary(_) => (s.metric.clone(), true),
            prometheus_parse::Value::Counter(v) => (s.metric.clone(), *v != 0.0),
            prometheus_parse::Value::Gauge(_) => (s.metric.clone(), true),
            // The `_sum` / `_count` lines of a summary without quantiles.
            prometheus_parse::Value::Untyped(_) => match s.metric.strip_suffix("_count") {
                Some(base) => (base.to_string(), true),
                None => continue,
            },
            other => panic!("{}: {other:?}", s.metric),
        };
        if !nonzero || s.metric.ends_with("_count") && name == s.metric {
            continue;
        }
        let mut keys: Vec<String> = s
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != "quantile")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        keys.sort();
        out.insert((name, keys));
    }
    out
}

/// Both exports come from one catalog: for a Bedrock lane (with family and tier), a SageMaker
/// lane and a lane of a provider of one's own, they name the same metrics with the same labels.
#[tokio::test]
async fn prometheus_and_opentelemetry_agree_for_every_lane_kind() {
    use opentelemetry::metrics::MeterProvider;
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let emu = common::emulator().await;
    let config = common::config(
        "[models.echo-1]\nprovider = \"echo\"\nregions = [\"local\"]\nprice = { input_per_1k = 0.001, output_per_1k = 0.002 }\n",
    );
    let router = laneway::Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .backend(
            laneway::Provider::named("echo"),
            std::sync::Arc::new(laneway::backend::MemoryBackend::echo()),
        )
        .opentelemetry_meter(provider.meter("laneway"))
        .build()
        .await
        .unwrap();
    traffic(&router, &emu, 3).await;
    for model in ["laneway-demo-llm", "echo-1"] {
        let req = GenerateRequest::user("a few words to answer")
            .model(model)
            .max_tokens(8)
            .task("t");
        router.generate(req.clone()).await.unwrap();
        let mut s = router.stream(req).await.unwrap();
        while let Some(ev) = s.next().await {
            ev.unwrap();
        }
    }
    assert!(router.finish_task("t", true));
    provider.force_flush().unwrap();
    let otel = otel_series(&exporter.get_finished_metrics().unwrap());
    let prom = prometheus_series(&router.metrics().prometheus());
    let systems: std::collections::BTreeSet<String> = router
        .metrics()
        .lanes
        .iter()
        .map(|(k, _)| k.provider.system().to_string())
        .collect();
    assert_eq!(
        systems.into_iter().collect::<Vec<_>>(),
        ["aws.bedrock", "aws.sagemaker", "echo"]
    );
    let only_otel: Vec<_> = otel.difference(&prom).collect();
    let only_prom: Vec<_> = prom.difference(&otel).collect();
    assert!(
        only_otel.is_empty() && only_prom.is_empty(),
        "only in OpenTelemetry: {only_otel:#?}\nonly in Prometheus: {only_prom:#?}"
    );
    for provider in ["aws.bedrock", "aws.sagemaker", "echo"] {
        let label = format!("gen_ai_provider_name={provider}");
        let metrics: std::collections::BTreeSet<&str> = prom
            .iter()
            .filter(|(_, labels)| labels.contains(&label))
            .map(|(name, _)| name.as_str())
            .collect();
        // Duration, TTFT, inter-token gap, rate, requests, tokens, cost at least.
        assert!(metrics.len() >= 7, "{provider}: {metrics:?}");
    }
    provider.shutdown().unwrap();
    emu.shutdown().await;
}
