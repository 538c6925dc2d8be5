//! Laneway's logs into Python's `logging` and its calls into OpenTelemetry spans: the core's host log
//! drained by a Python thread (`laneway/_logs.py`) with the GIL released while it waits, and the
//! core's span mapping (`laneway/_otel.py`). Conversion only.

use std::time::Duration;

use pyo3::prelude::*;

use laneway::telemetry::host_log::{HostLog, LogLevel};
use laneway::telemetry::host_meter::Measurement;

/// Up to `max` records (dicts: `levelno`, `logger`, `message`, `fields`, `repeated`), waiting
/// at most `wait` seconds for the first; an empty list when Laneway's logs go to another
/// `tracing` subscriber of the process.
#[pyfunction]
pub(crate) fn _drain_logs(py: Python<'_>, max: usize, wait: f64) -> PyResult<Py<PyAny>> {
    let Some(log) = HostLog::install() else {
        return crate::to_py(py, &Vec::<()>::new());
    };
    let wait = Duration::try_from_secs_f64(wait.clamp(0.0, 60.0)).unwrap_or_default();
    let records = py.detach(|| log.drain(max, wait));
    let rows: Vec<_> = records
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "levelno": r.level.python_levelno(),
                "logger": r.logger,
                "message": r.message,
                "fields": r.fields.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect::<serde_json::Map<_, _>>(),
                "repeated": r.repeated,
            })
        })
        .collect();
    crate::to_py(py, &rows)
}

/// Waits at most `wait` seconds for a record, taking none (the GIL released); whether one is
/// there.
#[pyfunction]
pub(crate) fn _wait_logs(py: Python<'_>, wait: f64) -> bool {
    let Some(log) = HostLog::install() else {
        return false;
    };
    let wait = Duration::try_from_secs_f64(wait.clamp(0.0, 60.0)).unwrap_or_default();
    py.detach(|| log.wait(wait))
}

/// Keeps records at Python's `levelno` and above from now on (above `CRITICAL`: none).
#[pyfunction]
pub(crate) fn _set_log_level(levelno: i64) {
    if let Some(log) = HostLog::install() {
        log.set_level(LogLevel::of_python(levelno));
    }
}

/// Records dropped because they were not drained in time.
#[pyfunction]
pub(crate) fn _log_dropped() -> u64 {
    HostLog::install().map_or(0, |log| log.dropped())
}

/// A call's span as it starts (`name`, `attributes`), from its request; conversion only
/// (`laneway::surface::otel`).
#[pyfunction]
pub(crate) fn _otel_start(
    py: Python<'_>,
    request: &Bound<'_, PyAny>,
    stream: bool,
) -> PyResult<Py<PyAny>> {
    let request = crate::request_of(request)?;
    crate::to_py(py, &laneway::surface::otel::start(&request, stream))
}

/// What a call's span gets at its end (`attributes`, `events`), from its response dict.
#[pyfunction]
pub(crate) fn _otel_finish(py: Python<'_>, response: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let laneway::surface::AnyValue(value) = pythonize::depythonize(response)
        .map_err(|e| crate::errors::invalid_request(e.to_string()))?;
    crate::to_py(py, &laneway::surface::otel::finish(&value))
}

/// What a failed call's span gets at its end, from the error's `details` dict.
#[pyfunction]
pub(crate) fn _otel_failed(py: Python<'_>, details: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let laneway::surface::AnyValue(value) = pythonize::depythonize(details)
        .map_err(|e| crate::errors::invalid_request(e.to_string()))?;
    crate::to_py(py, &laneway::surface::otel::failed(&value))
}

/// The schema URL the span attributes follow.
#[pyfunction]
pub(crate) fn _otel_schema_url() -> &'static str {
    laneway::surface::otel::SCHEMA_URL
}

/// Every instrument the host's meter makes (dicts: `name`, `kind`, `unit`, `description`,
/// `buckets`), from the core's catalog (`laneway::telemetry::host_meter::instruments`).
#[pyfunction]
pub(crate) fn _metric_instruments(py: Python<'_>) -> PyResult<Py<PyAny>> {
    crate::to_py(py, &laneway::telemetry::host_meter::instruments())
}

/// Measurements as a list of `(name, value, {attribute: text})` tuples.
pub(crate) fn measurements_to_py(py: Python<'_>, batch: Vec<Measurement>) -> PyResult<Py<PyAny>> {
    let list = pyo3::types::PyList::empty(py);
    for m in &batch {
        let attributes = pyo3::types::PyDict::new(py);
        for (k, v) in m.attribute_pairs() {
            attributes.set_item(k, v)?;
        }
        list.append((m.metric, m.value, attributes))?;
    }
    Ok(list.into_any().unbind())
}

/// A seam call's span as it starts (`name`, `attributes`), from the HTTP request it answers;
/// `None` when the request is no call Laneway would make.
#[pyfunction]
pub(crate) fn _otel_start_http(
    py: Python<'_>,
    method: &str,
    path: &str,
    headers: Vec<(String, String)>,
    body: &[u8],
) -> PyResult<Py<PyAny>> {
    let Some(route) = laneway::surface::http::Route::of(method, path) else {
        return Ok(py.None());
    };
    match laneway::surface::http::span_start(&route, &headers, body) {
        Some(start) => crate::to_py(py, &start),
        None => Ok(py.None()),
    }
}
