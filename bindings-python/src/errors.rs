//! `laneway.LanewayError` and one subclass per kind of the core's `ErrorDetails`, with the
//! details as attributes.

use laneway::Error;
use laneway::surface::ErrorDetails;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::pythonize;

create_exception!(
    _laneway,
    LanewayError,
    PyException,
    "Every error Laneway raises."
);
create_exception!(
    _laneway,
    ThrottledError,
    LanewayError,
    "The target is over capacity."
);
create_exception!(
    _laneway,
    UnavailableError,
    LanewayError,
    "The service or region is down."
);
create_exception!(
    _laneway,
    ModelNotReadyError,
    LanewayError,
    "The model or endpoint is loading."
);
create_exception!(
    _laneway,
    TargetTimeoutError,
    LanewayError,
    "The model or connection took too long."
);
create_exception!(
    _laneway,
    ServiceInternalError,
    LanewayError,
    "A transient failure inside the service."
);
create_exception!(
    _laneway,
    TransportError,
    LanewayError,
    "The connection failed before an answer."
);
create_exception!(
    _laneway,
    ModelError,
    LanewayError,
    "The model failed on this input."
);
create_exception!(
    _laneway,
    ValidationError,
    LanewayError,
    "The service refused the request as invalid."
);
create_exception!(
    _laneway,
    AccessDeniedError,
    LanewayError,
    "Permission was refused for a target (a model not enabled in its region, say)."
);
create_exception!(
    _laneway,
    AuthenticationError,
    LanewayError,
    "The credentials were refused or could not be had (an expired token, a bad signature, no credentials): the call fails at once."
);
create_exception!(
    _laneway,
    NotFoundError,
    LanewayError,
    "The model, profile or endpoint does not exist."
);
create_exception!(
    _laneway,
    QuotaExceededError,
    LanewayError,
    "An account quota was exceeded."
);
create_exception!(
    _laneway,
    StreamInterruptedError,
    LanewayError,
    "A stream failed after part of the answer was delivered (see `delivered`)."
);
create_exception!(
    _laneway,
    AllTargetsFailedError,
    LanewayError,
    "Every planned target failed (see `attempts`)."
);
create_exception!(
    _laneway,
    OverloadedError,
    LanewayError,
    "Every target the call may use was at its concurrency, and no slot could come within its deadline (see `wait_needed_ms`, `wait_allowed_ms`, `waited_ms`)."
);
create_exception!(
    _laneway,
    ConfigError,
    LanewayError,
    "The configuration is malformed or contradictory."
);
create_exception!(
    _laneway,
    InvalidRequestError,
    LanewayError,
    "The request is malformed; nothing was sent."
);

create_exception!(
    _laneway,
    LanewayInternalError,
    LanewayError,
    "A bug inside Laneway (a panic, or a value it could not convert); the message says where. Please report it."
);

fn new_err(kind: &str, message: String) -> PyErr {
    match kind {
        "throttled" => ThrottledError::new_err(message),
        "unavailable" => UnavailableError::new_err(message),
        "model_not_ready" => ModelNotReadyError::new_err(message),
        "timeout" => TargetTimeoutError::new_err(message),
        "internal" => ServiceInternalError::new_err(message),
        "transport" => TransportError::new_err(message),
        "model_error" => ModelError::new_err(message),
        "validation" => ValidationError::new_err(message),
        "access_denied" => AccessDeniedError::new_err(message),
        "authentication" => AuthenticationError::new_err(message),
        "not_found" => NotFoundError::new_err(message),
        "quota_exceeded" => QuotaExceededError::new_err(message),
        "stream_interrupted" => StreamInterruptedError::new_err(message),
        "all_targets_failed" => AllTargetsFailedError::new_err(message),
        "overloaded" => OverloadedError::new_err(message),
        "config" => ConfigError::new_err(message),
        "invalid_request" => InvalidRequestError::new_err(message),
        _ => LanewayInternalError::new_err(message),
    }
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

/// The text of a caught panic, as the message of a [`LanewayInternalError`].
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!("internal error in Laneway (please report it): {what}")
}

/// Runs a synchronous entry point; a panic inside becomes a [`LanewayInternalError`] instead
/// of pyo3's `PanicException` (which `except Exception` does not catch).
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(internal(panic_text(&*panic))))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for (name, class) in [
        ("LanewayError", py.get_type::<LanewayError>()),
        ("ThrottledError", py.get_type::<ThrottledError>()),
        ("UnavailableError", py.get_type::<UnavailableError>()),
        ("ModelNotReadyError", py.get_type::<ModelNotReadyError>()),
        ("TargetTimeoutError", py.get_type::<TargetTimeoutError>()),
        (
            "ServiceInternalError",
            py.get_type::<ServiceInternalError>(),
        ),
        ("TransportError", py.get_type::<TransportError>()),
        ("ModelError", py.get_type::<ModelError>()),
        ("ValidationError", py.get_type::<ValidationError>()),
        ("AccessDeniedError", py.get_type::<AccessDeniedError>()),
        ("AuthenticationError", py.get_type::<AuthenticationError>()),
        ("NotFoundError", py.get_type::<NotFoundError>()),
        ("QuotaExceededError", py.get_type::<QuotaExceededError>()),
        (
            "StreamInterruptedError",
            py.get_type::<StreamInterruptedError>(),
        ),
        (
            "AllTargetsFailedError",
            py.get_type::<AllTargetsFailedError>(),
        ),
        ("OverloadedError", py.get_type::<OverloadedError>()),
        ("ConfigError", py.get_type::<ConfigError>()),
        ("InvalidRequestError", py.get_type::<InvalidRequestError>()),
        (
            "LanewayInternalError",
            py.get_type::<LanewayInternalError>(),
        ),
    ] {
        m.add(name, class)?;
    }
    Ok(())
}
