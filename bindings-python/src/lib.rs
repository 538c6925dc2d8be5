//! The native module of the `laneway` Python package: converts Python values to the core's
//! types and back, runs calls on a tokio runtime without the GIL, and bridges their futures to
//! asyncio. Every decision stays in the `laneway` crate.

mod batch;
mod bridge;
mod errors;
mod events;
mod host;
mod http;
mod openai;
mod runtime;

use std::sync::{Arc, Mutex};

use laneway::surface::flat::{self, Casing};
use laneway::surface::openai::Call;
use laneway::surface::{AnyValue, RouterOptions, converse};
use laneway::{GenerateRequest, Router};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::{depythonize, pythonize};

use errors::to_py_err;
use events::NativeStream;

/// How to build a router (the core's binding-neutral options); kept so that a forked child can
/// build its own.
#[derive(Clone)]
struct Params(RouterOptions);

impl Params {
    fn build(&self) -> PyResult<Router> {
        let builder = self.0.builder().map_err(to_py_err)?;
        bridge::block_on(builder.build())?.map_err(to_py_err)
    }
}

/// A router: the Rust core's `laneway::Router`, rebuilt in a child after `fork`.
#[pyclass(module = "laneway._laneway", frozen)]
struct NativeRouter {
    params: Params,
    /// The process it was built in, and the router.
    inner: Mutex<(u32, Router)>,
}

/// A request as the caller gave it (keyword arguments as a dict, or a dict in the core's
/// shape): the core reads it (`laneway::surface::flat`).
pub(crate) fn request_of(obj: &Bound<'_, PyAny>) -> PyResult<GenerateRequest> {
    let AnyValue(value) = depythonize(obj).map_err(|e| errors::invalid_request(e.to_string()))?;
    flat::request(value, Casing::Snake).map_err(to_py_err)
}

/// An `openai` SDK body of `api` for a whole answer.
fn whole_openai_call(api: &str, body: &Bound<'_, PyAny>) -> PyResult<Call> {
    let call = openai::call_of(api, body)?;
    call.reply.expect_stream(false).map_err(to_py_err)?;
    Ok(call)
}

fn converse_request_of(obj: &Bound<'_, PyAny>) -> PyResult<GenerateRequest> {
    let AnyValue(value) = depythonize(obj).map_err(|e| errors::invalid_request(e.to_string()))?;
    converse::request(value).map_err(to_py_err)
}

pub(crate) fn to_py(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    Ok(pythonize(py, value)
        .map_err(|e| errors::internal(format!("converting the result: {e}")))?
        .unbind())
}

impl NativeRouter {
    /// The router of this process.
    fn router(&self, py: Python<'_>) -> PyResult<Router> {
        let pid = std::process::id();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.0 != pid {
            // Forked: the parent's connections and runtime threads are not ours.
            let params = self.params.clone();
            let router = py.detach(|| params.build())?;
            *inner = (pid, router);
        }
        Ok(inner.1.clone())
    }

    /// Sends a request on the runtime; an asyncio future of `convert(response)`.
    fn send<'py>(
        &self,
        py: Python<'py>,
        req: GenerateRequest,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
        convert: impl FnOnce(Python<'_>, laneway::GenerateResponse) -> PyResult<Py<PyAny>>
        + Send
        + 'static,
    ) -> PyResult<Bound<'py, PyAny>> {
        let router = self.router(py)?;
        bridge::Dispatcher::submit(
            dispatcher,
            async move { router.generate(req).await },
            convert,
        )
    }

    /// Sends a request, blocking without the GIL.
    fn send_blocking(
        &self,
        py: Python<'_>,
        req: GenerateRequest,
    ) -> PyResult<laneway::GenerateResponse> {
        let router = self.router(py)?;
        py.detach(|| bridge::block_on(async move { router.generate(req).await }))?
            .map_err(to_py_err)
    }
}

#[pymethods]
impl NativeRouter {
    /// Builds a router from the core's options (a dict: `config` as a dict, TOML text or a
    /// path; `endpoint_url`; `access_key_id` and `secret_access_key`).
    #[new]
    fn new(py: Python<'_>, options: &Bound<'_, PyAny>) -> PyResult<Self> {
        errors::guard(|| {
            let options: RouterOptions = depythonize(options).map_err(|e| {
                to_py_err(laneway::Error::Config {
                    field: "options".into(),
                    reason: e.to_string(),
                })
            })?;
            let params = Params(options);
            let router = py.detach(|| params.build())?;
            Ok(Self {
                params,
                inner: Mutex::new((std::process::id(), router)),
            })
        })
    }

    /// Sends a request in the AWS Converse shape (boto3's `converse` keyword arguments, plus
    /// `laneway` options); a future (of `dispatcher`'s event loop) of the response in
    /// Converse's shape, Laneway's decision under `laneway`.
    fn converse<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            self.send(py, converse_request_of(request)?, dispatcher, |py, r| {
                to_py(py, &converse::response(&r))
            })
        })
    }

    /// `converse`, blocking without the GIL.
    fn converse_blocking(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let r = self.send_blocking(py, converse_request_of(request)?)?;
            to_py(py, &converse::response(&r))
        })
    }

    /// Sends an `openai` SDK body (`api`: "chat" for `chat.completions.create`, "responses"
    /// for `responses.create`; not streamed); a future (of `dispatcher`'s event loop) of the
    /// answer in that SDK's shape, Laneway's decision under `laneway`.
    fn openai<'py>(
        &self,
        py: Python<'py>,
        api: &str,
        body: &Bound<'py, PyAny>,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let Call { request, reply } = whole_openai_call(api, body)?;
            self.send(py, request, dispatcher, move |py, r| {
                to_py(py, &reply.whole(r))
            })
        })
    }

    /// `openai`, blocking without the GIL.
    fn openai_blocking(
        &self,
        py: Python<'_>,
        api: &str,
        body: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let Call { request, reply } = whole_openai_call(api, body)?;
            let r = self.send_blocking(py, request)?;
            to_py(py, &reply.whole(r))
        })
    }

    /// Opens a stream of an `openai` SDK body with `stream: true`: the API's events (chunks,
    /// or typed events) as dicts, Laneway's decision on the last. Nothing is sent until the
    /// first event is asked for.
    fn openai_stream(
        &self,
        py: Python<'_>,
        api: &str,
        body: &Bound<'_, PyAny>,
    ) -> PyResult<openai::NativeOpenAiStream> {
        errors::guard(|| {
            let Call { request, reply } = openai::call_of(api, body)?;
            reply.expect_stream(true).map_err(to_py_err)?;
            let stream = self.router(py)?.lazy_stream(request);
            Ok(openai::NativeOpenAiStream::new(
                laneway::surface::openai::ShapedStream::new(stream, reply.encoder()),
            ))
        })
    }

    /// Whether this router answers a request of `method` to `path` (a route Laneway answers,
    /// for a model its configuration routes); the rest goes where it was going.
    fn http_answers(&self, py: Python<'_>, method: &str, path: &str) -> PyResult<bool> {
        Ok(laneway::surface::http::answers(
            &self.router(py)?,
            method,
            path,
        ))
    }

    /// Answers an HTTP request in process (`laneway.boto3`, `laneway.httpx`): a future (of
    /// `dispatcher`'s event loop) of `(status, headers, body, span_end)`, the body `bytes` or a
    /// `NativeBody` when streamed; `span_end` what a whole answer's span ends with when
    /// `traced` (else `None`; a stream's body says it at its end).
    #[pyo3(signature = (method, path, headers, body, dispatcher, traced = false))]
    #[allow(clippy::too_many_arguments)]
    fn http<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
        traced: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let route = http::route_of(method, path)?;
            let router = self.router(py)?;
            bridge::Dispatcher::submit(
                dispatcher,
                http::answer(router, route, headers, body, traced),
                move |py, answer| http::answer_to_py(py, answer, traced),
            )
        })
    }

    /// `http`, blocking without the GIL.
    #[pyo3(signature = (method, path, headers, body, traced = false))]
    fn http_blocking(
        &self,
        py: Python<'_>,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        traced: bool,
    ) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let route = http::route_of(method, path)?;
            let router = self.router(py)?;
            let answer = py
                .detach(|| bridge::block_on(http::answer(router, route, headers, body, traced)))?
                .map_err(to_py_err)?;
            http::answer_to_py(py, answer, traced)
        })
    }

    /// The plan for a request, as a dict, without sending it.
    fn plan(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let req = request_of(request)?;
            let plan = self.router(py)?.plan(&req).map_err(to_py_err)?;
            to_py(py, &plan)
        })
    }

    /// Sends a request; a future (of `dispatcher`'s event loop) of the response dict.
    fn generate<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| self.send(py, request_of(request)?, dispatcher, |py, r| to_py(py, &r)))
    }

    /// Sends a request and blocks (without the GIL) until the response dict.
    fn generate_blocking(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let r = self.send_blocking(py, request_of(request)?)?;
            to_py(py, &r)
        })
    }

    /// Opens a stream of `StreamEvent`s; nothing is sent until the first event is asked for.
    fn stream(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<NativeStream> {
        errors::guard(|| {
            let req = request_of(request)?;
            Ok(NativeStream::new(self.router(py)?.lazy_stream(req)))
        })
    }

    /// Everything measured so far, as a dict (see `laneway::telemetry::MetricsSnapshot`).
    fn metrics(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let m = self.router(py)?.metrics();
            to_py(py, &m)
        })
    }

    /// The metrics as Prometheus text.
    fn prometheus(&self, py: Python<'_>) -> PyResult<String> {
        errors::guard(|| Ok(self.router(py)?.metrics().prometheus()))
    }

    /// Up to `max` measurements for the host's meter (`(name, value, attributes)`); kept from
    /// the first call on.
    fn _drain_measurements(&self, py: Python<'_>, max: usize) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let batch = self
                .router(py)?
                .host_meter()
                .drain(max, std::time::Duration::ZERO);
            host::measurements_to_py(py, batch)
        })
    }

    /// Waits at most `wait` seconds for a measurement with the GIL released, taking none;
    /// whether one is there.
    fn _wait_measurements(&self, py: Python<'_>, wait: f64) -> PyResult<bool> {
        errors::guard(|| {
            let meter = self.router(py)?.host_meter();
            let wait =
                std::time::Duration::try_from_secs_f64(wait.clamp(0.0, 60.0)).unwrap_or_default();
            Ok(py.detach(|| meter.wait(wait)))
        })
    }

    /// The observed metrics' values now, as `(name, value, attributes)`.
    fn _observe(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::guard(|| host::measurements_to_py(py, self.router(py)?.observe()))
    }

    /// Queues again the zeros each target's attempts start from, for instruments made now.
    fn _restart_host_series(&self, py: Python<'_>) -> PyResult<()> {
        errors::guard(|| {
            self.router(py)?.restart_host_series();
            Ok(())
        })
    }

    /// Measurements dropped because the host's meter did not drain them in time.
    fn _measurements_dropped(&self, py: Python<'_>) -> PyResult<u64> {
        errors::guard(|| Ok(self.router(py)?.host_meter().dropped()))
    }

    /// Says whether a call's answer was good; its family's router learns from it.
    fn feedback(&self, py: Python<'_>, call_id: &str, good: bool) -> PyResult<()> {
        errors::guard(|| {
            self.router(py)?
                .feedback(call_id, good)
                .map_err(errors::to_py_err)
        })
    }

    /// Waits at most `timeout` seconds, with the GIL released, until the recorded lines of the
    /// calls finished so far are written; whether they all were.
    fn flush_record(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        errors::guard(|| {
            let router = self.router(py)?;
            let timeout = std::time::Duration::try_from_secs_f64(timeout.max(0.0))
                .unwrap_or(std::time::Duration::MAX);
            Ok(py.detach(|| router.flush_record(timeout)))
        })
    }

    /// The changes the recorded calls support, ranked (see `laneway::advice::Advice`).
    fn advice(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let advice = self.router(py)?.advice().map_err(to_py_err)?;
            to_py(py, &advice)
        })
    }

    /// Up to `max` of `[record]`'s lines for the app's logs, as `(kind, json)`, waiting at
    /// most `wait_ms` for the first with the GIL released.
    fn _drain_record_lines(
        &self,
        py: Python<'_>,
        max: usize,
        wait_ms: u64,
    ) -> PyResult<Vec<(&'static str, String)>> {
        errors::guard(|| {
            let lines = self.router(py)?.record_lines().map_err(to_py_err)?;
            let wait = std::time::Duration::from_millis(wait_ms);
            Ok(py.detach(|| lines.drain(max, wait)))
        })
    }

    /// Waits at most `wait_ms`, with the GIL released, for a line of `[record]`'s, taking
    /// none; whether one is there.
    fn _wait_record_lines(&self, py: Python<'_>, wait_ms: u64) -> PyResult<bool> {
        errors::guard(|| {
            let lines = self.router(py)?.record_lines().map_err(to_py_err)?;
            let wait = std::time::Duration::from_millis(wait_ms);
            Ok(py.detach(|| lines.wait(wait)))
        })
    }

    /// What the family routers have learned from feedback, per family and cell.
    fn feedback_report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let report = self.router(py)?.feedback_report();
            to_py(py, &report)
        })
    }

    /// Closes a task: its calls' cost joins the per-task figures.
    fn finish_task(&self, py: Python<'_>, task_id: &str, success: bool) -> PyResult<bool> {
        errors::guard(|| Ok(self.router(py)?.finish_task(task_id, success)))
    }

    /// A session collecting requests of SLO class `batch` for one submission.
    fn batch_session(&self, py: Python<'_>) -> PyResult<batch::NativeBatchSession> {
        errors::guard(|| {
            Ok(batch::NativeBatchSession::new(
                self.router(py)?.batch_session(),
            ))
        })
    }

    /// Submits requests (dicts) to the batch lane: a `BatchHandle`, or a future of one.
    #[pyo3(signature = (requests, dispatcher=None))]
    fn submit_batch(
        &self,
        py: Python<'_>,
        requests: &Bound<'_, PyAny>,
        dispatcher: Option<&Bound<'_, bridge::Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        errors::guard(|| batch::submit(py, self.router(py)?, requests, dispatcher))
    }

    /// Every job's status: a dict (`jobs`, `done`, `total`, `finished`), or a future of one.
    #[pyo3(signature = (handle, dispatcher=None))]
    fn batch_status(
        &self,
        py: Python<'_>,
        handle: &batch::BatchHandle,
        dispatcher: Option<&Bound<'_, bridge::Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        let h = Arc::clone(&handle.handle);
        errors::guard(|| batch::status(py, self.router(py)?, h, dispatcher))
    }

    /// Polls until every job has ended, calling `progress(status)` after each poll; the last
    /// status (or a future of it).
    #[pyo3(signature = (handle, progress=None, dispatcher=None))]
    fn wait_batch(
        &self,
        py: Python<'_>,
        handle: &batch::BatchHandle,
        progress: Option<Py<PyAny>>,
        dispatcher: Option<&Bound<'_, bridge::Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        let h = Arc::clone(&handle.handle);
        errors::guard(|| batch::wait(py, self.router(py)?, h, progress, dispatcher))
    }

    /// One item per request in submission order, `{"output": ...}` or `{"error": ...}` (or a
    /// future of the list).
    #[pyo3(signature = (handle, dispatcher=None))]
    fn batch_results(
        &self,
        py: Python<'_>,
        handle: &batch::BatchHandle,
        dispatcher: Option<&Bound<'_, bridge::Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        let h = Arc::clone(&handle.handle);
        errors::guard(|| batch::results(py, self.router(py)?, h, dispatcher))
    }

    /// Stops the jobs that have not ended: how many were stopped (or a future of it).
    #[pyo3(signature = (handle, dispatcher=None))]
    fn cancel_batch(
        &self,
        py: Python<'_>,
        handle: &batch::BatchHandle,
        dispatcher: Option<&Bound<'_, bridge::Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        let h = Arc::clone(&handle.handle);
        errors::guard(|| batch::cancel(py, self.router(py)?, h, dispatcher))
    }

    /// Live prompt-cache totals per family, as a dict.
    fn cache_totals(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let totals = self.router(py)?.cache_totals();
            to_py(py, &totals)
        })
    }
}

/// The scenario-free helpers the tests and examples use.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Arms a core failpoint (`plan`, `generate`, `stream_event`) or disarms with None: a forced
/// panic, for the tests that show it arrives as `LanewayInternalError`.
#[pyfunction]
#[pyo3(signature = (name=None))]
fn _arm_failpoint(name: Option<&str>) {
    laneway::failpoint::arm(name);
}

/// The core's surface names (`laneway::surface::schema::names`), for the tests that check the
/// typed views and the stubs against them.
#[pyfunction]
fn _schema(py: Python<'_>) -> PyResult<Py<PyAny>> {
    to_py(py, &laneway::surface::schema::names())
}

/// The exception class an error of `kind` raises, for the test that checks every kind has one.
#[pyfunction]
fn _error_class(py: Python<'_>, kind: &str) -> Py<PyAny> {
    let details = laneway::surface::ErrorDetails::of_kind(kind);
    errors::raise(&details).get_type(py).into_any().unbind()
}

#[pymodule]
fn _laneway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeRouter>()?;
    m.add_class::<NativeStream>()?;
    m.add_class::<openai::NativeOpenAiStream>()?;
    m.add_class::<http::NativeBody>()?;
    m.add_class::<events::StreamEvent>()?;
    m.add_class::<batch::BatchHandle>()?;
    m.add_class::<batch::NativeBatchSession>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(_arm_failpoint, m)?)?;
    m.add_function(wrap_pyfunction!(_schema, m)?)?;
    m.add_function(wrap_pyfunction!(_error_class, m)?)?;
    m.add_function(wrap_pyfunction!(openai::_openai_error, m)?)?;
    m.add_function(wrap_pyfunction!(openai::_is_bedrock_api_key, m)?)?;
    m.add_function(wrap_pyfunction!(openai::_openai_options, m)?)?;
    m.add_class::<bridge::Dispatcher>()?;
    m.add_function(wrap_pyfunction!(host::_drain_logs, m)?)?;
    m.add_function(wrap_pyfunction!(host::_set_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(host::_wait_logs, m)?)?;
    m.add_function(wrap_pyfunction!(host::_log_dropped, m)?)?;
    m.add_function(wrap_pyfunction!(host::_otel_start, m)?)?;
    m.add_function(wrap_pyfunction!(host::_otel_finish, m)?)?;
    m.add_function(wrap_pyfunction!(host::_otel_failed, m)?)?;
    m.add_function(wrap_pyfunction!(host::_otel_schema_url, m)?)?;
    m.add_function(wrap_pyfunction!(host::_metric_instruments, m)?)?;
    m.add_function(wrap_pyfunction!(host::_otel_start_http, m)?)?;
    let _ = PyDict::new(m.py());
    Ok(())
}
