//! The exceptions of the core's errors: the class of each `ErrorDetails` kind, defined in
//! Python (`laneway/errors.py`) and looked up by kind here, with the details as attributes.

use laneway::Error;
use laneway::surface::ErrorDetails;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use pythonize::pythonize;

/// Each error kind's class, from `laneway.errors` (where the classes are defined, once),
/// read at the first error.
static BY_KIND: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The class an error of `kind` raises (a kind without one: `LanewayInternalError`).
fn class_of<'py>(py: Python<'py>, kind: &str) -> PyResult<Bound<'py, PyType>> {
    let by_kind = BY_KIND
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let classes = py.import("laneway.errors")?.getattr("_BY_KIND")?;
            Ok(classes.cast_into::<PyDict>()?.unbind())
        })?
        .bind(py);
    let class = match by_kind.get_item(kind)? {
        Some(class) => class,
        None => by_kind
            .get_item(laneway::surface::LANEWAY_INTERNAL)?
            .ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("laneway.errors has no internal error")
            })?,
    };
    Ok(class.cast_into::<PyType>()?)
}

fn new_err(kind: &str, message: String) -> PyErr {
    Python::attach(|py| match class_of(py, kind) {
        Ok(class) => PyErr::from_type(class, message),
        // `laneway.errors` could not be read: that error says why.
        Err(e) => e,
    })
}

/// The Python exception for error details: the class of its kind, every detail an attribute
/// (`kind`, `code`, `field`, `http_status`, `retry_after_ms`, `attempts`, `delivered`, `cause`,
/// ...; absent ones are `None`), and all of them as the dict `details`.
pub(crate) fn raise(details: &ErrorDetails) -> PyErr {
    let err = new_err(details.kind, details.message.clone());
    Python::attach(|py| {
        let value = err.value(py);
        for name in ATTRIBUTES {
            let _ = value.setattr(*name, py.None());
        }
        if let Ok(dict) = pythonize(py, details)
            && let Ok(dict) = dict.cast_into::<PyDict>()
        {
            for (k, v) in dict.iter() {
                if let Ok(k) = k.extract::<String>() {
                    let _ = value.setattr(k.as_str(), v);
                }
            }
            let _ = value.setattr("details", dict);
        }
    });
    err
}

/// Every attribute an error may carry (those its kind lacks are `None`).
const ATTRIBUTES: &[&str] = &[
    "field",
    "code",
    "target",
    "region",
    "http_status",
    "request_id",
    "retry_after_ms",
    "attempts",
    "budget_exhausted",
    "wait_needed_ms",
    "wait_allowed_ms",
    "waited_ms",
    "delivered",
    "cause",
];

/// The Python exception for a core error.
pub(crate) fn to_py_err(e: Error) -> PyErr {
    raise(&ErrorDetails::of(&e))
}

pub(crate) fn invalid_request(message: String) -> PyErr {
    to_py_err(Error::InvalidRequest {
        field: "request".into(),
        reason: message,
    })
}

pub(crate) fn internal(message: String) -> PyErr {
    raise(&ErrorDetails::internal(message))
}

/// The text of a caught panic, as the message of a `LanewayInternalError`.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!("internal error in Laneway (please report it): {what}")
}

/// Runs a synchronous entry point; a panic inside becomes a `LanewayInternalError` instead
/// of pyo3's `PanicException` (which `except Exception` does not catch).
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(internal(panic_text(&*panic))))
}
