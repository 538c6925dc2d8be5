//! An [`Error`] as data: what both bindings turn into their exception classes.

use serde::Serialize;

use crate::types::{Delivered, Error, ErrorKind, FailedAttempt};

/// An error's kind, message and the details that apply to it, as the bindings expose them:
/// `kind` is the stable error kind (`throttled`, `invalid_request`, ...; see
/// [`ErrorKind::as_str`]) or `laneway_internal` for a defect caught at the binding's edge, and
/// `code` is the service's own error code (`ThrottlingException`) where one came.
///
/// ```
/// use laneway::surface::ErrorDetails;
/// let e = laneway::Error::InvalidRequest {
///     field: "messages".into(),
///     reason: "the conversation is empty".into(),
/// };
/// let d = ErrorDetails::of(&e);
/// assert_eq!(d.kind, "invalid_request");
/// assert_eq!(d.field.as_deref(), Some("messages"));
/// assert!(d.code.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorDetails {
    /// The stable error kind ([`ErrorKind::as_str`]), or `laneway_internal` for a defect caught
    /// at a binding's edge.
    pub kind: &'static str,
    /// The whole message, as `Display` gives it.
    pub message: String,
    /// The part of the request or configuration that is wrong (invalid requests and
    /// configurations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The service's error code, e.g. `ThrottlingException`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The model, profile or endpoint id the failing request was sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The region the failing request was sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The HTTP status the service answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The service's request id (`x-amzn-RequestId`), for its support.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How long the service asked to wait, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<f64>,
    /// Every failed attempt (`all_targets_failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<FailedAttempt>>,
    /// Whether the retry budget allowed no further attempt (`all_targets_failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_exhausted: Option<bool>,
    /// The wait for a slot an overloaded call would have needed, in milliseconds
    /// (`overloaded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_needed_ms: Option<f64>,
    /// What the call's deadline allowed when it asked for a slot, in milliseconds
    /// (`overloaded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_allowed_ms: Option<f64>,
    /// How long the call waited in line, in milliseconds (`overloaded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<f64>,
    /// What had been delivered when a stream broke (`stream_interrupted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered: Option<Delivered>,
    /// The error that ended the stream (`stream_interrupted`), itself as details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Box<ErrorDetails>>,
}

/// The kind of a defect caught at a binding's edge (a panic, a result that did not convert):
/// never produced by the router itself.
pub const LANEWAY_INTERNAL: &str = "laneway_internal";

impl ErrorDetails {
    /// The details of `error`.
    pub fn of(error: &Error) -> Self {
        let mut d = Self::bare(error.kind().as_str(), error.to_string());
        match error {
            Error::InvalidRequest { field, .. } | Error::Config { field, .. } => {
                d.field = Some(field.clone());
            }
            Error::Service(s) => {
                d.code = Some(s.code.clone()).filter(|c| !c.is_empty());
                d.target = Some(s.target.clone()).filter(|t| !t.is_empty());
                d.region = Some(s.region.clone()).filter(|r| !r.is_empty());
                d.http_status = s.http_status;
                d.request_id = s.request_id.clone();
                d.retry_after_ms = s.retry_after.map(|r| r.as_secs_f64() * 1e3);
            }
            Error::AllTargetsFailed {
                attempts,
                budget_exhausted,
            } => {
                d.attempts = Some(attempts.clone());
                d.budget_exhausted = Some(*budget_exhausted);
            }
            Error::Overloaded {
                needed_ms,
                allowed_ms,
                waited_ms,
                attempts,
                ..
            } => {
                d.wait_needed_ms = Some(*needed_ms as f64);
                d.wait_allowed_ms = Some(*allowed_ms as f64);
                d.waited_ms = Some(*waited_ms as f64);
                d.attempts = Some(attempts.clone());
            }
            Error::StreamInterrupted { delivered, cause } => {
                d.delivered = Some(*delivered);
                d.cause = Some(Box::new(Self::of(cause)));
            }
        }
        d
    }

    /// A defect caught at a binding's edge: `kind` is `laneway_internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::bare(LANEWAY_INTERNAL, message.into())
    }

    /// Every kind the schema has, in a stable order: the core's [`ErrorKind`]s, then
    /// `laneway_internal` (for bindings to check their exception classes against).
    pub fn kinds() -> Vec<&'static str> {
        ErrorKind::ALL
            .iter()
            .map(|k| k.as_str())
            .chain([LANEWAY_INTERNAL])
            .collect()
    }

    /// The bindings' class for errors of `kind`: the kind in CamelCase, ending in `Error`
    /// (`throttled`: `ThrottledError`, `model_error`: `ModelError`), but for the two whose
    /// bare names would say less: `timeout` is `TargetTimeoutError`, `internal`
    /// `ServiceInternalError`.
    ///
    /// ```
    /// use laneway::surface::ErrorDetails;
    /// assert_eq!(ErrorDetails::class_name("all_targets_failed"), "AllTargetsFailedError");
    /// assert_eq!(ErrorDetails::class_name("timeout"), "TargetTimeoutError");
    /// ```
    pub fn class_name(kind: &str) -> String {
        match kind {
            "timeout" => "TargetTimeoutError".into(),
            "internal" => "ServiceInternalError".into(),
            _ => {
                let camel: String = kind
                    .split('_')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                            .unwrap_or_default()
                    })
                    .collect();
                if camel.ends_with("Error") {
                    camel
                } else {
                    camel + "Error"
                }
            }
        }
    }

    /// What an error of `kind` means: the first sentence of its [`ErrorKind`]'s doc.
    pub fn kind_doc(kind: &str) -> String {
        if kind == LANEWAY_INTERNAL {
            return "A bug inside Laneway (a panic, or a value it could not convert).".into();
        }
        let schema = schemars::schema_for!(ErrorKind).to_value();
        let doc = schema["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["const"] == kind || v["enum"][0] == kind)
            .and_then(|v| v["description"].as_str())
            .unwrap_or_default()
            .replace('\n', " ");
        match doc.find(". ") {
            Some(end) => doc[..=end].to_string(),
            None => doc,
        }
    }

    /// A bare error of `kind` (one of [`kinds`](Self::kinds); another name gives
    /// `laneway_internal`), for a binding's test of its error classes.
    pub fn of_kind(kind: &str) -> Self {
        let kind = Self::kinds()
            .into_iter()
            .find(|k| *k == kind)
            .unwrap_or(LANEWAY_INTERNAL);
        Self::bare(kind, format!("an error of kind {kind}"))
    }

    fn bare(kind: &'static str, message: String) -> Self {
        Self {
            kind,
            message,
            field: None,
            code: None,
            target: None,
            region: None,
            http_status: None,
            request_id: None,
            retry_after_ms: None,
            attempts: None,
            budget_exhausted: None,
            wait_needed_ms: None,
            wait_allowed_ms: None,
            waited_ms: None,
            delivered: None,
            cause: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ServiceError;
    use std::time::Duration;

    fn throttled() -> Error {
        let mut e = ServiceError::new(
            ErrorKind::Throttled,
            "slow down",
            "us.amazon.nova-lite-v1:0",
            "us-east-1",
        );
        e.code = "ThrottlingException".into();
        e.http_status = Some(429);
        e.request_id = Some("req-1".into());
        e.retry_after = Some(Duration::from_millis(1500));
        Error::from(e)
    }

    #[test]
    fn service_errors_keep_the_services_code_beside_the_kind() {
        let d = ErrorDetails::of(&throttled());
        assert_eq!(d.kind, "throttled");
        assert_eq!(d.code.as_deref(), Some("ThrottlingException"));
        assert_eq!(d.http_status, Some(429));
        assert_eq!(d.request_id.as_deref(), Some("req-1"));
        assert_eq!(d.retry_after_ms, Some(1500.0));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["retry_after_ms"], 1500.0);
        assert!(
            json.get("attempts").is_none(),
            "absent details are left out: {json}"
        );
    }

    #[test]
    fn an_interrupted_streams_cause_is_details_too() {
        let e = Error::StreamInterrupted {
            delivered: Delivered {
                deltas: 3,
                text_chars: 12,
                output_tokens: 3,
            },
            cause: Box::new(throttled()),
        };
        let d = ErrorDetails::of(&e);
        assert_eq!(d.kind, "stream_interrupted");
        assert_eq!(d.delivered.unwrap().deltas, 3);
        assert_eq!(
            d.cause.unwrap().code.as_deref(),
            Some("ThrottlingException")
        );
    }

    #[test]
    fn every_kind_is_listed_once() {
        let kinds = ErrorDetails::kinds();
        let unique: std::collections::BTreeSet<_> = kinds.iter().collect();
        assert_eq!(unique.len(), kinds.len());
        assert!(kinds.contains(&"all_targets_failed"));
        assert_eq!(kinds.last(), Some(&LANEWAY_INTERNAL));
    }
}
