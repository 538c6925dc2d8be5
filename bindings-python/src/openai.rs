//! `openai`-shaped calls: a body (a dict) read by the core (`laneway::surface::openai::Call`),
//! the whole answer as a dict of the SDK's shape, or a stream of the API's events as dicts
//! (`laneway::surface::openai::ShapedStream`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use laneway::surface::AnyValue;
use laneway::surface::openai::{self as shaped, Api, Call, ShapedStream};
use pyo3::prelude::*;
use pythonize::depythonize;
use serde_json::Value;

use crate::bridge;
use crate::errors::{self, to_py_err};
use crate::events::BATCH;

/// A body of `api` ("chat" or "responses") as the core reads it.
pub(crate) fn call_of(api: &str, body: &Bound<'_, PyAny>) -> PyResult<Call> {
    let api: Api = api.parse().map_err(to_py_err)?;
    let AnyValue(value) = depythonize(body).map_err(|e| errors::invalid_request(e.to_string()))?;
    Call::read(api, value).map_err(to_py_err)
}

/// The API's events as a list of dicts.
fn values_to_py(py: Python<'_>, values: Vec<Value>) -> PyResult<Py<PyAny>> {
    crate::to_py(py, &values)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call's stream in its API's shape: `await s.next_batch(dispatcher)` gives the next events
/// (dicts) as a list, empty after the last; iterating it blocks without the GIL.
#[pyclass(module = "laneway._laneway", frozen)]
pub struct NativeOpenAiStream {
    stream: Arc<ShapedStream>,
    /// Events of the last burst not yet handed to a blocking iteration. Never held across a
    /// wait: a `close` from another thread (holding the GIL) must not wait for a reader that
    /// needs the GIL back.
    ahead: Mutex<VecDeque<Value>>,
}

impl NativeOpenAiStream {
    pub fn new(stream: ShapedStream) -> Self {
        Self {
            stream: Arc::new(stream),
            ahead: Mutex::new(VecDeque::new()),
        }
    }
}

#[pymethods]
impl NativeOpenAiStream {
    /// A future (of `dispatcher`'s event loop) of the next events in the API's shape, as a
    /// list; empty after the last.
    fn next_batch<'py>(
        &self,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let stream = Arc::clone(&self.stream);
            bridge::Dispatcher::submit(
                dispatcher,
                async move { stream.next_batch(BATCH).await },
                values_to_py,
            )
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next event (a dict), waiting without the GIL only when none is read ahead.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        errors::guard(|| {
            if let Some(event) = lock(&self.ahead).pop_front() {
                return crate::to_py(py, &event).map(Some);
            }
            let stream = &self.stream;
            let burst = bridge::blocking(py, |runtime| stream.next_batch_blocking(runtime, BATCH))?
                .map_err(to_py_err)?;
            let mut burst = VecDeque::from(burst);
            let Some(first) = burst.pop_front() else {
                return Ok(None);
            };
            lock(&self.ahead).extend(burst);
            crate::to_py(py, &first).map(Some)
        })
    }

    /// Ends the stream now, cancelling its request (a read waiting on it ends too).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        errors::guard(|| {
            bridge::blocking(py, |_| self.stream.close_blocking())?;
            lock(&self.ahead).clear();
            Ok(())
        })
    }
}

/// The `openai` SDK's error class (its Python name) and HTTP status for an error of `kind`
/// whose failed attempts were of `attempt_kinds`.
#[pyfunction]
pub(crate) fn _openai_error(kind: &str, attempt_kinds: Vec<String>) -> (&'static str, Option<u16>) {
    let e = shaped::sdk_error(kind, attempt_kinds.iter().map(String::as_str));
    (e.class, e.status)
}

/// The `openai` Python SDK's client options the facade takes and does not use, its per-request
/// options it does not use, and the warning for `given` ones of them.
#[pyfunction]
pub(crate) fn _openai_options(
    given: Vec<String>,
) -> (Vec<&'static str>, Vec<&'static str>, String) {
    let sdk = shaped::OpenAiSdk::Python;
    let given: Vec<&str> = given.iter().map(String::as_str).collect();
    (
        sdk.unused_client_options().to_vec(),
        sdk.unused_request_options().to_vec(),
        shaped::not_used(&given),
    )
}

/// Whether an `api_key` is a Bedrock API key.
#[pyfunction]
pub(crate) fn _is_bedrock_api_key(key: &str) -> bool {
    shaped::is_bedrock_api_key(key)
}
