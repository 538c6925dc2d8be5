//! `laneway.LanewayError` and one subclass per `laneway::ErrorKind`, with the error's details
//! as attributes: `kind`, and where they apply `code`, `target`, `region`, `http_status`,
//! `retry_after_s`, `attempts`, `budget_exhausted`, `delivered`.

use laneway::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
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
    "Credentials or permissions were refused."
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

fn new_err(kind: ErrorKind, message: String) -> PyErr {
    match kind {
        ErrorKind::Throttled => ThrottledError::new_err(message),
        ErrorKind::Unavailable => UnavailableError::new_err(message),
        ErrorKind::ModelNotReady => ModelNotReadyError::new_err(message),
        ErrorKind::Timeout => TargetTimeoutError::new_err(message),
        ErrorKind::Internal => ServiceInternalError::new_err(message),
        ErrorKind::Transport => TransportError::new_err(message),
        ErrorKind::ModelError => ModelError::new_err(message),
        ErrorKind::Validation => ValidationError::new_err(message),
        ErrorKind::AccessDenied => AccessDeniedError::new_err(message),
        ErrorKind::NotFound => NotFoundError::new_err(message),
        ErrorKind::QuotaExceeded => QuotaExceededError::new_err(message),
        ErrorKind::StreamInterrupted => StreamInterruptedError::new_err(message),
        ErrorKind::AllTargetsFailed => AllTargetsFailedError::new_err(message),
        ErrorKind::Config => ConfigError::new_err(message),
        ErrorKind::InvalidRequest => InvalidRequestError::new_err(message),
    }
}

/// The Python exception for a core error, with its details as attributes.
pub fn to_py_err(e: Error) -> PyErr {
    let kind = e.kind();
    let err = new_err(kind, e.to_string());
    Python::attach(|py| {
        let value = err.value(py);
        let set = |name: &str, v: Bound<'_, PyAny>| {
            let _ = value.setattr(name, v);
        };
        set(
            "kind",
            kind.as_str().into_pyobject(py).expect("str").into_any(),
        );
        match &e {
            Error::Service(s) => {
                set(
                    "code",
                    s.code.as_str().into_pyobject(py).expect("str").into_any(),
                );
                set(
                    "target",
                    s.target.as_str().into_pyobject(py).expect("str").into_any(),
                );
                set(
                    "region",
                    s.region.as_str().into_pyobject(py).expect("str").into_any(),
                );
                set(
                    "http_status",
                    s.http_status.into_pyobject(py).expect("int").into_any(),
                );
                set(
                    "retry_after_s",
                    s.retry_after
                        .map(|d| d.as_secs_f64())
                        .into_pyobject(py)
                        .expect("float")
                        .into_any(),
                );
            }
            Error::AllTargetsFailed {
                attempts,
                budget_exhausted,
            } => {
                if let Ok(a) = pythonize(py, attempts) {
                    set("attempts", a);
                }
                set(
                    "budget_exhausted",
                    budget_exhausted
                        .into_pyobject(py)
                        .expect("bool")
                        .to_owned()
                        .into_any(),
                );
            }
            Error::StreamInterrupted { delivered, cause } => {
                if let Ok(d) = pythonize(py, delivered) {
                    set("delivered", d);
                }
                set(
                    "cause_kind",
                    cause
                        .kind()
                        .as_str()
                        .into_pyobject(py)
                        .expect("str")
                        .into_any(),
                );
            }
            _ => {}
        }
    });
    err
}

pub fn invalid_request(message: String) -> PyErr {
    let err = InvalidRequestError::new_err(format!("invalid request: {message}"));
    Python::attach(|py| {
        let _ = err.value(py).setattr("kind", "invalid_request");
    });
    err
}

pub fn config(message: &str) -> PyErr {
    let err = ConfigError::new_err(format!("invalid configuration: {message}"));
    Python::attach(|py| {
        let _ = err.value(py).setattr("kind", "config");
    });
    err
}

pub fn internal(message: String) -> PyErr {
    let err = LanewayInternalError::new_err(message);
    Python::attach(|py| {
        let _ = err.value(py).setattr("kind", "internal_error");
    });
    err
}

/// The text of a caught panic, as the message of a [`LanewayInternalError`].
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!("internal error in Laneway (please report it): {what}")
}

/// Runs a synchronous entry point; a panic inside becomes a [`LanewayInternalError`] instead
/// of pyo3's `PanicException` (which `except Exception` does not catch).
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(internal(panic_text(&*panic))))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
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
