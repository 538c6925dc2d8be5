//! `[record]`: a sampled share of calls written to a trace, one JSON line each, with their
//! decision and what they met, shared prompt prefixes as keyed digests, no text; outcomes
//! reported later; a full queue dropping lines, never holding a call.

use crate::common;

use futures::StreamExt;
use laneway::telemetry::record::{CallRecord, Line};
use laneway::{GenerateRequest, SloClass};
use laneway_emulator::{Fault, FaultKind};

fn trace_config(path: &std::path::Path, extra: &str) -> laneway::Config {
    common::config(&format!("[record]\npath = \"{}\"\n{extra}", path.display()))
}

/// The file's whole lines (the writer may be midway through its last).
fn read(path: &std::path::Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn calls(lines: &[Line]) -> Vec<&CallRecord> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Call(c) => Some(&**c),
            _ => None,
        })
        .collect()
}

fn dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("laneway-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[tokio::test]
async fn calls_are_recorded_with_their_decision_and_keyed_prefixes_never_their_text() {
    let emu = common::emulator().await;
    let dir = dir("calls");
    let path = dir.join("trace.jsonl");
    let router = common::router_with(&emu, trace_config(&path, "")).await;
    let handbook = "Refunds are due within thirty days of delivery. ".repeat(120);
    for i in 0..4 {
        let req = GenerateRequest::user(format!("question {i} about my order"))
            .system(handbook.clone())
            .family("nova")
            .slo_class(SloClass::Interactive)
            .max_tokens(40)
            .task("ticket-1234");
        let mut s = router.stream(req).await.unwrap();
        while let Some(ev) = s.next().await {
            ev.unwrap();
        }
    }
    emu.add_fault(Fault::new(FaultKind::Outage).for_model("amazon.nova-pro-v1:0"));
    let failed = router
        .generate(
            GenerateRequest::user("hi")
                .model("amazon.nova-pro-v1:0")
                .max_tokens(8)
                // The outage outlasts the call: retry rounds end at this deadline.
                .deadline(std::time::Duration::from_millis(300)),
        )
        .await;
    assert!(failed.is_err());
    assert!(router.finish_task("ticket-1234", true));
    // The writer is a thread of its own: its lines come as it writes them.
    common::poll_until("the calls' and the outcomes' lines", || {
        let lines = read(&path);
        let outcomes = lines
            .iter()
            .filter(|l| matches!(l, Line::Outcome(_)))
            .count();
        calls(&lines).len() == 5 && outcomes == 4
    })
    .await;
    let lines = read(&path);
    let Line::Header(header) = &lines[0] else {
        panic!("the first line is the header: {:?}", lines[0])
    };
    assert_eq!(header.schema, laneway::telemetry::record::SCHEMA_VERSION);
    assert_eq!(header.config_digest, router.config().digest());
    let calls = calls(&lines);
    assert_eq!(calls.len(), 5);
    let ok: Vec<_> = calls.iter().filter(|c| c.error.is_none()).collect();
    assert_eq!(ok.len(), 4);
    for c in &ok {
        assert_eq!(c.class, "interactive");
        assert_eq!(c.requested.as_deref(), Some("nova"));
        assert!(c.target.is_some() && c.region.is_some() && c.scope.is_some() && c.tier.is_some());
        assert!(c.input_tokens + c.cache_read_tokens + c.cache_write_tokens > 0);
        assert!(c.output_tokens > 0 && c.cost_usd > 0.0 && c.ttft_ms.is_some());
        assert!(c.inter_token_ms.is_some() && c.total_ms > 0.0);
        assert!(
            c.band.is_some() && !c.scores.is_empty(),
            "the classifier's figures: {c:?}"
        );
        assert!(!c.prefixes.is_empty());
        assert_eq!(c.task.as_ref().map(String::len), Some(32));
    }
    // The same system prompt, the same digest; the task id digested alike.
    assert_eq!(ok[0].prefixes[0], ok[3].prefixes[0]);
    assert_eq!(ok[0].task, ok[3].task);
    let bad = calls.iter().find(|c| c.error.is_some()).unwrap();
    assert!(!bad.attempts.is_empty() && bad.attempts.iter().all(|a| !a.kind.is_empty()));
    let outcomes = lines
        .iter()
        .filter(|l| matches!(l, Line::Outcome(o) if o.success && o.source == "task"))
        .count();
    assert_eq!(outcomes, 4, "one per recorded call of the task");
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["Refunds are due", "question 0", "ticket-1234"] {
        assert!(!text.contains(secret), "{secret} is in the trace");
    }
    let m = router.metrics();
    assert_eq!(m.record.unwrap().dropped, 0);
    assert!(m.prometheus().contains("laneway_record_lines_total"));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_share_is_recorded_and_a_full_queue_drops_lines_not_calls() {
    let emu = common::emulator().await;
    let dir = dir("share");
    let path = dir.join("trace.jsonl");
    let config = trace_config(&path, "sample = 0.5\nqueue = 1\nload_every = 3600000\n");
    let router = common::router_with(&emu, config).await;
    let burst = futures::future::join_all((0..40).map(|i| {
        router.generate(
            GenerateRequest::user(format!("q{i}"))
                .family("nova")
                .max_tokens(4),
        )
    }))
    .await;
    assert!(
        burst.iter().all(Result::is_ok),
        "no call waits on the trace"
    );
    let figures = |r: &laneway::Router| r.metrics().record.unwrap();
    common::poll_until("every sampled line written or dropped", || {
        let f = figures(&router);
        f.written + f.dropped >= 20
    })
    .await;
    let f = figures(&router);
    assert_eq!(f.written + f.dropped, 20, "half of 40 calls: {f:?}");
    common::poll_until("the written lines in the file", || {
        calls(&read(&path)).len() as u64 == f.written
    })
    .await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_trace_file_that_cannot_be_written_is_a_config_error_naming_it() {
    let emu = common::emulator().await;
    let config = trace_config(std::path::Path::new("/proc/no-such-dir/trace.jsonl"), "");
    let err = laneway::Router::builder()
        .config(config)
        .endpoint_url(emu.url())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .build()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("record.path"), "{err}");
}

#[tokio::test]
async fn advice_over_the_live_router_names_background_work_sent_at_priority() {
    let emu = common::emulator().await;
    // No path: the calls are kept in memory, for advice only.
    let config =
        common::config("[record]\nsample = 1.0\n\n[slo_tiers]\nbackground = [\"priority\"]\n");
    let router = common::router_with(&emu, config).await;
    for i in 0..12 {
        router
            .generate(
                GenerateRequest::user(format!("summarise report {i}"))
                    .model("amazon.nova-lite-v1:0")
                    .slo_class(SloClass::Background)
                    .max_tokens(40),
            )
            .await
            .unwrap();
    }
    common::poll_until("the twelve calls folded", || {
        router.advice().is_ok_and(|a| a.calls == 12)
    })
    .await;
    let advice = router.advice().unwrap();
    let first = &advice.changes[0];
    assert_eq!(
        first.change,
        laneway::advice::ChangeKind::Tier {
            class: "background".into(),
            from: "priority".into(),
            to: "flex".into(),
        },
        "{advice:#?}"
    );
    assert!(first.monthly_saving_usd > 0.0 && first.recorded_saving_usd > 0.0);
    assert_eq!(first.risk, laneway::advice::Risk::Low, "no TTFT target");
    assert_eq!(
        first.patch,
        Some(serde_json::json!({ "slo_tiers": { "background": ["flex"] } }))
    );
    // The recorded calls' own cost, repriced at flex, is what the saving says.
    let cost = advice.classes["background"].cost_usd;
    assert!(
        first.recorded_saving_usd < cost,
        "{} of {cost}",
        first.recorded_saving_usd
    );
    assert!(!advice.not_assessed.is_empty());

    let without = common::router(&emu).await;
    let err = without.advice().unwrap_err();
    assert!(err.to_string().contains("record"), "{err}");
}

#[tokio::test]
async fn lines_go_to_the_apps_opentelemetry_logs() {
    use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
    let emu = common::emulator().await;
    let exporter = InMemoryLogExporter::default();
    let provider = SdkLoggerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let router = laneway::Router::builder()
        .config(common::config("[record]\nsample = 1.0\n"))
        .endpoint_url(emu.url())
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .record_logs(&provider)
        .build()
        .await
        .unwrap();
    for i in 0..3 {
        router
            .generate(
                GenerateRequest::user(format!("q{i}"))
                    .family("nova")
                    .max_tokens(8),
            )
            .await
            .unwrap();
    }
    let calls = || {
        exporter
            .get_emitted_logs()
            .unwrap()
            .into_iter()
            .filter(|l| l.record.event_name() == Some("laneway.record.call"))
            .collect::<Vec<_>>()
    };
    common::poll_until("three call records", || calls().len() == 3).await;
    let logs = exporter.get_emitted_logs().unwrap();
    assert_eq!(
        logs[0].record.event_name(),
        Some("laneway.record.header"),
        "the header first"
    );
    for log in calls() {
        let Some(opentelemetry::logs::AnyValue::String(body)) = log.record.body() else {
            panic!("a JSON body: {:?}", log.record.body());
        };
        let line: Line = serde_json::from_str(body.as_str()).unwrap();
        let Line::Call(call) = line else {
            panic!("a call line");
        };
        assert!(call.prompt.is_none() && call.cost_usd > 0.0);
    }
}
