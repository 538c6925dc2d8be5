//! `openai`-shaped calls: a body (a dict) read by the core (`laneway::surface::openai::Call`),
//! the whole answer as a dict of the SDK's shape, or a stream of the API's events as dicts,
//! encoded on the runtime's threads.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use laneway::surface::openai::{Api, Call, Encoder};
use laneway::surface::AnyValue;
use pyo3::prelude::*;
use pythonize::depythonize;
use serde_json::Value;

use crate::bridge;
use crate::errors::{self, to_py_err};
use crate::events::BATCH;

/// A body of `api` ("chat" or "responses") as the core reads it.
pub fn call_of(api: &str, body: &Bound<'_, PyAny>) -> PyResult<Call> {
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
    stream: Arc<laneway::LazyStream>,
    encoder: Arc<Mutex<Encoder>>,
    ahead: Mutex<VecDeque<Value>>,
}

impl NativeOpenAiStream {
    pub fn new(stream: laneway::LazyStream, encoder: Encoder) -> Self {
        Self {
            stream: Arc::new(stream),
            encoder: Arc::new(Mutex::new(encoder)),
            ahead: Mutex::new(VecDeque::new()),
        }
    }
}

#[pymethods]
impl NativeOpenAiStream {
    /// A future (of `dispatcher`'s event loop) of the next events in the API's shape: every
    /// one the next burst of the core's makes (a burst that makes none, such as a signature,
    /// is read past), as a list; empty after the last.
    fn next_batch<'py>(
        &self,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let stream = Arc::clone(&self.stream);
            let encoder = Arc::clone(&self.encoder);
            bridge::Dispatcher::submit(
                dispatcher,
                async move {
                    loop {
                        let burst = stream.next_batch(BATCH).await?;
                        if burst.is_empty() {
                            return Ok(Vec::new());
                        }
                        let out = lock(&encoder).on_all(&burst);
                        if !out.is_empty() {
                            return Ok(out);
                        }
                    }
                },
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
            let mut ahead = lock(&self.ahead);
            while ahead.is_empty() {
                let stream = &self.stream;
                let burst =
                    bridge::blocking(py, |runtime| stream.next_batch_blocking(runtime, BATCH))?
                        .map_err(to_py_err)?;
                if burst.is_empty() {
                    return Ok(None);
                }
                ahead.extend(lock(&self.encoder).on_all(&burst));
            }
            match ahead.pop_front() {
                Some(event) => crate::to_py(py, &event).map(Some),
                None => Ok(None),
            }
        })
    }

    /// Ends the stream now, cancelling its request.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        errors::guard(|| {
            lock(&self.ahead).clear();
            bridge::blocking(py, |_| self.stream.close_blocking())
        })
    }
}
