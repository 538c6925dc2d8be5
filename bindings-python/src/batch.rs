//! The batch lane for Python: sessions, handles, status, waiting with progress, results and
//! cancelling, each as an asyncio future (with a dispatcher) or blocking (without one).

use std::sync::{Arc, Mutex};

use laneway::Router;
use laneway::surface::batch;
use pyo3::prelude::*;

use crate::bridge::{self, Dispatcher};
use crate::errors::{self, to_py_err};
use crate::{request_of, to_py};

/// A submitted batch: its jobs and where their records are. `to_json()` writes it down;
/// `BatchHandle.from_json(text)` resumes it in another process.
#[pyclass(module = "laneway._laneway", name = "BatchHandle", frozen)]
pub struct BatchHandle {
    pub handle: Arc<laneway::batch::BatchHandle>,
}

#[pymethods]
impl BatchHandle {
    /// The handle as JSON text.
    fn to_json(&self) -> String {
        self.handle.to_json()
    }

    /// A handle written by `to_json` (a `ConfigError` names what is wrong with the text).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        let handle = laneway::batch::BatchHandle::from_json(text).map_err(to_py_err)?;
        Ok(Self {
            handle: Arc::new(handle),
        })
    }

    /// The ARNs of the batch's jobs.
    #[getter]
    fn job_arns(&self) -> Vec<String> {
        self.handle.jobs.iter().map(|j| j.arn.clone()).collect()
    }

    fn __repr__(&self) -> String {
        format!("BatchHandle({} jobs)", self.handle.jobs.len())
    }
}

fn handle_to_py(py: Python<'_>, handle: laneway::batch::BatchHandle) -> PyResult<Py<PyAny>> {
    Ok(Py::new(
        py,
        BatchHandle {
            handle: Arc::new(handle),
        },
    )?
    .into_any())
}

/// Collects requests of SLO class `batch` for one submission.
#[pyclass(module = "laneway._laneway", frozen)]
pub struct NativeBatchSession {
    /// `None` once submitted.
    session: Mutex<Option<laneway::BatchSession>>,
}

impl NativeBatchSession {
    pub fn new(session: laneway::BatchSession) -> Self {
        Self {
            session: Mutex::new(Some(session)),
        }
    }

    fn take(&self) -> PyResult<laneway::BatchSession> {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| errors::invalid_request("this batch session was submitted".to_owned()))
    }
}

#[pymethods]
impl NativeBatchSession {
    /// Adds a request (a dict in the core's shape); its index is its place in the results.
    fn push(&self, request: &Bound<'_, PyAny>) -> PyResult<usize> {
        errors::guard(|| {
            let request = request_of(request)?;
            let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
            let session = session.as_mut().ok_or_else(|| {
                errors::invalid_request("this batch session was submitted".to_owned())
            })?;
            session.push(request).map_err(to_py_err)
        })
    }

    fn __len__(&self) -> usize {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or(0, laneway::BatchSession::len)
    }

    /// Submits everything collected: a `BatchHandle` (a future of one with a dispatcher).
    #[pyo3(signature = (dispatcher=None))]
    fn submit(
        &self,
        py: Python<'_>,
        dispatcher: Option<&Bound<'_, Dispatcher>>,
    ) -> PyResult<Py<PyAny>> {
        errors::guard(|| {
            let session = self.take()?;
            bridge::run(py, dispatcher, session.submit(), handle_to_py)
        })
    }
}

/// A progress callback's failure, which ends the wait with the callback's own exception.
#[derive(Default)]
struct CallbackFailure {
    error: Mutex<Option<PyErr>>,
    raised: tokio::sync::Notify,
}

/// Waits for every job to end, calling `progress(status)` (a dict: `jobs`, `done`, `total`,
/// `finished`) after each poll. An exception from `progress` ends the wait and is raised.
pub(crate) fn wait(
    py: Python<'_>,
    router: Router,
    handle: Arc<laneway::batch::BatchHandle>,
    progress: Option<Py<PyAny>>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
) -> PyResult<Py<PyAny>> {
    let failure = Arc::new(CallbackFailure::default());
    let seen = Arc::clone(&failure);
    let work = async move {
        let report = |status: &laneway::batch::BatchStatus| {
            let Some(callback) = &progress else { return };
            // Polls are seconds apart: taking the GIL here costs nothing that matters.
            Python::attach(|py| {
                let outcome = to_py(py, &batch::progress(status))
                    .and_then(|status| callback.call1(py, (status,)));
                if let Err(e) = outcome {
                    let mut error = seen.error.lock().unwrap_or_else(|p| p.into_inner());
                    if error.is_none() {
                        *error = Some(e);
                        seen.raised.notify_one();
                    }
                }
            });
        };
        tokio::select! {
            status = router.wait_batch(&handle, report) => status.map(Ok),
            () = seen.raised.notified() => Ok(Err(())),
        }
    };
    bridge::run(py, dispatcher, work, move |py, outcome| {
        // The callback may fail at the poll that finds every job ended, which ends the wait
        // in the same step: its exception is raised whichever branch won.
        let raised = failure
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match (raised, outcome) {
            (Some(e), _) => Err(e),
            (None, Ok(status)) => to_py(py, &batch::progress(&status)),
            (None, Err(())) => Err(errors::internal("a progress callback failed".to_owned())),
        }
    })
}

/// Submits requests (dicts in the core's shape) to the batch lane.
pub(crate) fn submit(
    py: Python<'_>,
    router: Router,
    requests: &Bound<'_, PyAny>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
) -> PyResult<Py<PyAny>> {
    let requests = requests
        .try_iter()?
        .map(|r| request_of(&r?))
        .collect::<PyResult<Vec<_>>>()?;
    bridge::run(
        py,
        dispatcher,
        async move { router.submit_batch(requests).await },
        handle_to_py,
    )
}

/// Every job's status, as `wait` reports it.
pub(crate) fn status(
    py: Python<'_>,
    router: Router,
    handle: Arc<laneway::batch::BatchHandle>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
) -> PyResult<Py<PyAny>> {
    bridge::run(
        py,
        dispatcher,
        async move { router.batch_status(&handle).await },
        |py, status| to_py(py, &batch::progress(&status)),
    )
}

/// One item per request, in submission order: `{"output": ...}` or `{"error": ...}`.
pub(crate) fn results(
    py: Python<'_>,
    router: Router,
    handle: Arc<laneway::batch::BatchHandle>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
) -> PyResult<Py<PyAny>> {
    bridge::run(
        py,
        dispatcher,
        async move { router.batch_results(&handle).await },
        |py, items| to_py(py, &batch::items(&items)),
    )
}

/// Stops the jobs that have not ended; how many were stopped.
pub(crate) fn cancel(
    py: Python<'_>,
    router: Router,
    handle: Arc<laneway::batch::BatchHandle>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
) -> PyResult<Py<PyAny>> {
    bridge::run(
        py,
        dispatcher,
        async move { router.cancel_batch(&handle).await },
        |py, stopped| to_py(py, &stopped),
    )
}
