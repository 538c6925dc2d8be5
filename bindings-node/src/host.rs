//! Laneway's logs into a Node logger, and its calls into OpenTelemetry spans: a thread drains
//! the core's host log and hands each batch (JSON) to an unreferenced thread-safe function, so
//! that logging never keeps the process alive and the runtime's threads never wait on
//! JavaScript; the span mapping is the core's (`laneway::surface::otel`). Conversion only;
//! `index.js` picks the logger and opens the spans.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use laneway::telemetry::host_log::{HostLog, LogLevel};

/// What receives each batch of records: a JSON array of `{level, logger, message, fields,
/// repeated}`. Weak: it does not keep the event loop alive.
pub type LogSink = ThreadsafeFunction<String, (), String, napi::Status, false, true>;

static STARTED: AtomicBool = AtomicBool::new(false);

/// Starts the thread that hands the core's records to `sink`, once per process; false when
/// Laneway's logs go to another `tracing` subscriber of the process (or it already started).
#[napi]
pub fn start_logs(sink: LogSink) -> bool {
    let Some(log) = HostLog::install() else {
        return false;
    };
    if STARTED.swap(true, Ordering::SeqCst) {
        return false;
    }
    std::thread::Builder::new()
        .name("laneway-logs".into())
        .spawn(move || {
            loop {
                let records = log.drain(256, Duration::from_millis(500));
                if records.is_empty() {
                    continue;
                }
                if let Ok(json) = serde_json::to_string(&records) {
                    sink.call(json, ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        })
        .is_ok()
}

/// Keeps the core's records at `level` (`error`, `warn`, `info`, `debug`, `trace`) and above;
/// `off` (or an unknown word) keeps none.
#[napi]
pub fn set_log_level(level: String) {
    if let Some(log) = HostLog::install() {
        log.set_level(LogLevel::named(&level));
    }
}

/// Records the core dropped because they were not drained in time.
#[napi]
pub fn log_dropped() -> i64 {
    HostLog::install().map_or(0, |log| i64::try_from(log.dropped()).unwrap_or(i64::MAX))
}

/// A call's span as it starts (JSON `{name, attributes}`), from its request JSON.
#[napi]
pub fn otel_start(request_json: String, stream: bool) -> napi::Result<String> {
    let request = crate::request_of(&request_json)?;
    crate::to_json(&laneway::surface::otel::start(&request, stream))
}

/// What a call's span gets at its end (JSON `{attributes, events}`), from its response JSON.
#[napi]
pub fn otel_finish(response_json: String) -> napi::Result<String> {
    let response: serde_json::Value =
        serde_json::from_str(&response_json).map_err(crate::invalid_request)?;
    crate::to_json(&laneway::surface::otel::finish(&response))
}

/// What a failed call's span gets at its end, from the error's details JSON.
#[napi]
pub fn otel_failed(details_json: String) -> napi::Result<String> {
    let details: serde_json::Value =
        serde_json::from_str(&details_json).map_err(crate::invalid_request)?;
    crate::to_json(&laneway::surface::otel::failed(&details))
}

/// The schema URL the span attributes follow.
#[napi]
pub fn otel_schema_url() -> String {
    laneway::surface::otel::SCHEMA_URL.to_string()
}

/// Every instrument the app's meter makes (JSON `[{name, prometheus_name, kind, unit,
/// description, buckets}]`), from the core's catalog.
#[napi]
pub fn metric_instruments() -> napi::Result<String> {
    crate::to_json(&laneway::telemetry::host_meter::instruments())
}

/// Measurements as JSON `[[name, value, {attribute: text}]]`.
pub(crate) fn measurements_json(
    batch: &[laneway::telemetry::host_meter::Measurement],
) -> napi::Result<String> {
    let rows: Vec<_> = batch
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<_, _> = m
                .attribute_pairs()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
                .collect();
            serde_json::json!([m.metric, m.value, attributes])
        })
        .collect();
    crate::to_json(&rows)
}

/// A seam call's span as it starts (JSON `{name, attributes}`), from the HTTP request it
/// answers; `null` when the request is no call Laneway would make.
#[napi]
pub fn otel_start_http(
    method: String,
    path: String,
    headers: Vec<Vec<String>>,
    body: napi::bindgen_prelude::Buffer,
) -> Option<String> {
    let route = laneway::surface::http::Route::of(&method, &path)?;
    let headers = crate::http::pairs(headers);
    laneway::surface::http::span_start(&route, &headers, &body).map(|start| start.to_string())
}
