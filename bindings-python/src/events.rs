//! A stream's events as native Python objects: a text delta (nearly every event) is built
//! without a dict or a Python-level wrapper, and a blocking stream is iterated from Rust.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use crate::bridge;
use crate::errors::{self, to_py_err};

/// Events delivered together at most (a long answer's burst is split, to bound a batch's memory).
pub(crate) const BATCH: usize = 256;

/// One event of a stream. `type` is "text_delta", "tool_use_start", "tool_use_delta",
/// "reasoning_delta", "continued" or "completed"; `text` holds a delta's text ("" for other events); `response`
/// the completed `Response` (else None); `data` the event's fields as a dict.
#[pyclass(module = "laneway._laneway", name = "StreamEvent", frozen)]
pub struct StreamEvent {
    #[pyo3(get, name = "type")]
    kind: Py<PyString>,
    #[pyo3(get)]
    text: Py<PyString>,
    #[pyo3(get)]
    response: Option<Py<PyAny>>,
    /// A text delta's block index; other events keep their fields in `fields`.
    index: u32,
    fields: Option<Py<PyAny>>,
}

#[pymethods]
impl StreamEvent {
    /// The event's fields, as in the core's schema.
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(fields) = &self.fields {
            return Ok(fields.clone_ref(py));
        }
        let d = PyDict::new(py);
        d.set_item("index", self.index)?;
        d.set_item("text", self.text.bind(py))?;
        Ok(d.into_any().unbind())
    }

    /// `{type: data}`, the core's schema.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = PyDict::new(py);
        d.set_item(self.kind.bind(py), self.data(py)?)?;
        Ok(d.into_any().unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("StreamEvent({:?})", self.kind.bind(py).to_string())
    }
}

/// The facade's `Response` class, which wraps a completed event's response.
static RESPONSE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn event_to_py(py: Python<'_>, event: laneway::StreamEvent) -> PyResult<Py<StreamEvent>> {
    let empty = || pyo3::intern!(py, "").clone().unbind();
    let event = match event {
        laneway::StreamEvent::TextDelta { index, text } => StreamEvent {
            kind: pyo3::intern!(py, "text_delta").clone().unbind(),
            text: PyString::new(py, &text).unbind(),
            response: None,
            index,
            fields: None,
        },
        other => {
            let tagged = crate::to_py(py, &other)?;
            let tagged = tagged
                .bind(py)
                .downcast::<PyDict>()
                .map_err(|_| errors::internal("an event did not convert to a dict".to_owned()))?;
            let Some((kind, fields)) = tagged.iter().next() else {
                return Err(errors::internal(
                    "an event converted to an empty dict".to_owned(),
                ));
            };
            let kind = kind.downcast_into::<PyString>().map_err(|_| {
                errors::internal("an event's type did not convert to a string".to_owned())
            })?;
            let response = if kind.to_cow()? == "completed" {
                let class = RESPONSE.get_or_try_init(py, || {
                    py.import("laneway._types")?
                        .getattr("Response")
                        .map(Bound::unbind)
                })?;
                Some(class.call1(py, (fields.clone(),))?)
            } else {
                None
            };
            StreamEvent {
                kind: kind.unbind(),
                text: empty(),
                response,
                index: 0,
                fields: Some(fields.unbind()),
            }
        }
    };
    Py::new(py, event)
}

/// Stream events as a list of [`StreamEvent`]s.
pub(crate) fn events_to_py(
    py: Python<'_>,
    events: Vec<laneway::StreamEvent>,
) -> PyResult<Py<PyAny>> {
    let items = events
        .into_iter()
        .map(|event| event_to_py(py, event))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(pyo3::types::PyList::new(py, items)?.into_any().unbind())
}

/// A call's stream: `await s.next_batch(dispatcher)` gives the next events as a list (empty
/// after the last); iterating it (`for event in s`) blocks without the GIL and yields
/// [`StreamEvent`]s one by one from bursts read ahead.
#[pyclass(module = "laneway._laneway", frozen)]
pub struct NativeStream {
    stream: Arc<laneway::LazyStream>,
    /// Events of the last burst not yet handed to a blocking iteration.
    ahead: Mutex<VecDeque<laneway::StreamEvent>>,
}

impl NativeStream {
    pub fn new(stream: laneway::LazyStream) -> Self {
        Self {
            stream: Arc::new(stream),
            ahead: Mutex::new(VecDeque::new()),
        }
    }
}

#[pymethods]
impl NativeStream {
    /// A future (of `dispatcher`'s event loop) of the next events: the next one and every one
    /// already available after it, as a list (empty after the last).
    fn next_batch<'py>(
        &self,
        dispatcher: &Bound<'py, bridge::Dispatcher>,
    ) -> PyResult<Bound<'py, PyAny>> {
        errors::guard(|| {
            let stream = Arc::clone(&self.stream);
            bridge::Dispatcher::submit(
                dispatcher,
                async move { stream.next_batch(BATCH).await },
                events_to_py,
            )
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next event, waiting without the GIL only when none has been read ahead. The
    /// read-ahead is never locked across the wait: a `close` from another thread (holding the
    /// GIL) must not wait for a reader that needs the GIL back.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<StreamEvent>>> {
        errors::guard(|| {
            let ahead = || self.ahead.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(event) = ahead().pop_front() {
                return event_to_py(py, event).map(Some);
            }
            let stream = &self.stream;
            let burst = bridge::blocking(py, |runtime| stream.next_batch_blocking(runtime, BATCH))?
                .map_err(to_py_err)?;
            let mut burst = VecDeque::from(burst);
            let Some(first) = burst.pop_front() else {
                return Ok(None);
            };
            ahead().extend(burst);
            event_to_py(py, first).map(Some)
        })
    }

    /// Ends the stream now, cancelling its request (a read waiting on it ends too).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        errors::guard(|| {
            bridge::blocking(py, |_| self.stream.close_blocking())?;
            self.ahead.lock().unwrap_or_else(|p| p.into_inner()).clear();
            Ok(())
        })
    }
}
