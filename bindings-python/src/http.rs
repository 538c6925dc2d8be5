//! In-process HTTP answers for the Python seams (`laneway.boto3`'s botocore handler,
//! `laneway.httpx`'s transports): a request's method, path, headers and body in; the answer's
//! status, headers and body (bytes, or a `NativeBody` read chunk by chunk) out. What is
//! answered, and how, is the core's (`laneway::surface::http`).

use std::sync::Arc;

use laneway::surface::http::{self, Answer, Body, BodyStream, Route};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::bridge;
use crate::errors::{self, to_py_err};

/// The route of a request Laneway answers, or a typed error naming it.
pub(crate) fn route_of(method: &str, path: &str) -> PyResult<Route> {
    Route::of(method, path).ok_or_else(|| {
        to_py_err(laneway::Error::InvalidRequest {
            field: "path".into(),
            reason: format!("Laneway does not answer {method} {path}"),
        })
    })
}

/// `(status, headers, body, span_end)`: the body as `bytes`, or a `NativeBody` when streamed;
/// `span_end` a whole answer's span end when `traced`, else `None`.
pub(crate) fn answer_to_py(py: Python<'_>, answer: Answer, traced: bool) -> PyResult<Py<PyAny>> {
    let span_end = match answer.span_end().filter(|_| traced) {
        Some(end) => crate::to_py(py, &end)?,
        None => py.None(),
    };
    let body: Py<PyAny> = match answer.body {
        Body::Whole(bytes) => PyBytes::new(py, &bytes).into_any().unbind(),
        Body::Stream(stream) => Py::new(
            py,
            NativeBody {
                body: Arc::from(stream),
            },
        )?
        .into_any(),
    };
    Ok(PyTuple::new(
        py,
        [
            answer.status.into_pyobject(py)?.into_any().unbind(),
            answer.headers.into_pyobject(py)?.into_any().unbind(),
            body,
            span_end,
        ],
    )?
    .into_any()
    .unbind())
}

/// A streamed answer's body: `await b.next_chunk(dispatcher)` gives the next `bytes`, `None`
/// after the last; iterating it blocks without the GIL; `close()` cancels the call.
#[pyclass(module = "laneway._laneway", frozen)]
pub struct NativeBody {
    body: Arc<BodyStream>,
}

#[pymethods]
impl NativeBody {
    /// A future (of `dispatcher`'s event loop) of the next chunk, `None` after the last.
    fn next_chunk<'py>(
        &self,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let body = Arc::clone(&self.body);
            bridge::Dispatcher::submit(
                dispatcher,
                async move { Ok(body.next_chunk().await) },
                |py, chunk: Option<Vec<u8>>| {
                    Ok(match chunk {
                        Some(bytes) => PyBytes::new(py, &bytes).into_any().unbind(),
                        None => py.None(),
                    })
                },
            )
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk, waiting without the GIL.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyBytes>>> {
        errors::guard(|| {
            let body = &self.body;
            let chunk = bridge::blocking(py, |runtime| body.next_chunk_blocking(runtime))?;
            Ok(chunk.map(|bytes| PyBytes::new(py, &bytes).unbind()))
        })
    }

    /// Laneway's decision as `x-laneway-*` header pairs, once the stream has ended (empty
    /// before, and for a call that failed).
    fn decision_headers(&self) -> Vec<(String, String)> {
        self.body.decision_headers()
    }

    /// What the call's span ends with, once the body has ended (`None` before, and when it was
    /// closed early).
    fn span_end(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.body.span_end() {
            Some(end) => crate::to_py(py, &end),
            None => Ok(py.None()),
        }
    }

    /// Ends the body now, cancelling its call (a read waiting on it ends too).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        errors::guard(|| bridge::blocking(py, |_| self.body.close_blocking()))
    }
}

/// Answers a request Laneway routes, on the runtime.
pub(crate) async fn answer(
    router: laneway::Router,
    route: Route,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    traced: bool,
) -> laneway::Result<Answer> {
    Ok(http::answer_traced(&router, &route, &headers, &body, traced).await)
}
