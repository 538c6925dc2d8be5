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
    let err = LanewayError::new_err(message);
    Python::attach(|py| {
        let _ = err.value(py).setattr("kind", "internal_error");
    });
    err
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
    ] {
        m.add(name, class)?;
    }
    Ok(())
}
