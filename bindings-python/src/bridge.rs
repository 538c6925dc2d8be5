//! Rust futures as asyncio futures: the work runs on the tokio runtime; its outcome is handed
//! to the event loop with `call_soon_threadsafe`; cancelling the asyncio future aborts the work
//! (and so the request). A panic comes back as a `LanewayError`, never as a crash.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::task::AbortHandle;

use crate::errors::{self, to_py_err};
use crate::runtime;

/// Runs `work` on the runtime and returns an asyncio future of `convert(result)`.
pub fn into_asyncio<'py, F, T, C>(
    py: Python<'py>,
    work: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = laneway::Result<T>> + Send + 'static,
    T: Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    let (loop_ref, future_ref) = (event_loop.unbind(), future.clone().unbind());
    let rt =
        runtime::get().map_err(|e| errors::internal(format!("cannot start the runtime: {e}")))?;
    let task = rt.spawn(async move {
        let out = AssertUnwindSafe(work).catch_unwind().await;
        Python::attach(|py| {
            let (ok, value) = match out {
                Ok(Ok(v)) => match convert(py, v) {
                    Ok(obj) => (true, obj),
                    Err(e) => (false, e.into_value(py).into_any()),
                },
                Ok(Err(e)) => (false, to_py_err(e).into_value(py).into_any()),
                Err(panic) => (
                    false,
                    errors::internal(panic_text(&*panic))
                        .into_value(py)
                        .into_any(),
                ),
            };
            let done = resolver(py).and_then(|resolve| {
                loop_ref.call_method1(py, "call_soon_threadsafe", (resolve, future_ref, ok, value))
            });
            // A closed event loop has nobody left to tell.
            drop(done);
        });
    });
    let canceller = Canceller {
        task: task.abort_handle(),
    };
    future.call_method1("add_done_callback", (Py::new(py, canceller)?,))?;
    Ok(future)
}

/// Runs `work` on the runtime and waits for it; call without the GIL.
pub fn block_on<F, T>(work: F) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt =
        runtime::get().map_err(|e| errors::internal(format!("cannot start the runtime: {e}")))?;
    rt.block_on(rt.spawn(work)).map_err(|e| {
        if e.is_panic() {
            errors::internal(panic_text(&*e.into_panic()))
        } else {
            errors::internal("the call was cancelled".to_string())
        }
    })
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!("internal error in Laneway (please report it): {what}")
}

fn resolver(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    RESOLVE.get_or_try_init(py, || {
        Ok(py.import("laneway._laneway")?.getattr("resolve")?.unbind())
    })
}

/// Sets an asyncio future's outcome unless it is already done (cancelled, say).
#[pyfunction]
pub fn resolve(future: &Bound<'_, PyAny>, ok: bool, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    let method = if ok { "set_result" } else { "set_exception" };
    future.call_method1(method, (value,))?;
    Ok(())
}

/// Aborts the work when its asyncio future is cancelled.
#[pyclass(module = "laneway._laneway", frozen)]
struct Canceller {
    task: AbortHandle,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.task.abort();
        }
        Ok(())
    }
}
