//! The OpenAI-compatible endpoints' errors as Laneway errors: by the OpenAI error `code` or
//! `type` in the body, else by HTTP status, never by message text (except to name a route the
//! configuration got wrong).

use serde_json::Value;

use crate::types::{Error, ErrorKind, ServiceError};

/// The kind of an OpenAI error code or type (or an AWS code, which some answers carry), else
/// of the status.
pub(super) fn kind_of_code(code: &str, status: u16) -> ErrorKind {
    match code {
        "rate_limit_exceeded" | "rate_limit_error" | "too_many_requests" | "throttled" => {
            ErrorKind::Throttled
        }
        "service_unavailable" | "overloaded" | "overloaded_error" | "capacity_exceeded" => {
            ErrorKind::Unavailable
        }
        "server_error"
        | "internal_error"
        | "api_error"
        | "internal_server_error"
        | "model_stream_error" => ErrorKind::Internal,
        "timeout" | "request_timeout" => ErrorKind::Timeout,
        "invalid_request_error"
        | "validation_error"
        | "context_length_exceeded"
        | "invalid_prompt"
        | "unsupported_parameter"
        | "unsupported_value"
        | "BadRequestError"
        | "invalid_image"
        | "invalid_image_format"
        | "invalid_base64_image"
        | "invalid_image_url"
        | "image_too_large"
        | "image_too_small"
        | "image_parse_error"
        | "image_content_policy_violation"
        | "invalid_image_mode"
        | "image_file_too_large"
        | "unsupported_image_media_type"
        | "empty_image_file"
        | "failed_to_download_image"
        | "image_file_not_found" => ErrorKind::Validation,
        "model_not_found" | "not_found_error" => ErrorKind::NotFound,
        "permission_denied_error" | "access_denied" => ErrorKind::AccessDenied,
        "authentication_error" | "invalid_api_key" | "unauthorized" => ErrorKind::Authentication,
        "insufficient_quota" => ErrorKind::QuotaExceeded,
        other => crate::backend::errors::kind_of_aws_code(other, status),
    }
}

/// An answer with a status other than 2xx.
pub(super) fn from_status(
    status: u16,
    headers: &aws_smithy_runtime_api::http::Headers,
    body: &[u8],
    target: &str,
    region: &str,
) -> Error {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    // `{"error": {...}}`; occasionally `error` is a bare string or the body is AWS-shaped.
    let error = v.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |key: &str| -> Option<String> {
        match error? {
            Value::String(s) if key == "message" => Some(s.clone()),
            e => e.get(key).and_then(Value::as_str).map(str::to_string),
        }
    };
    let code = field("code")
        .or_else(|| field("type"))
        .or_else(|| field("__type"))
        .or_else(|| headers.get("x-amzn-errortype").map(str::to_string))
        .map(|c| c.split(':').next().unwrap_or_default().to_string())
        .unwrap_or_default();
    let message = field("message")
        .or_else(|| field("Message"))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned());
    let retry_after = headers
        .get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(crate::types::units::clamped_secs);
    let request_id = headers
        .get("x-request-id")
        .or_else(|| headers.get("x-amzn-requestid"))
        .map(str::to_string);
    let mut kind = kind_of_code(&code, status);
    // The status says capacity or a server fault, whatever word the body uses.
    if status == 429 {
        kind = ErrorKind::Throttled;
    } else if status >= 500 && !kind.fails_over() {
        kind = crate::backend::errors::kind_of_aws_code("", status);
    }
    let fact = crate::backend::errors::fact_of_aws_code(&code);
    Error::from(ServiceError {
        kind,
        code,
        message,
        target: target.to_string(),
        region: region.to_string(),
        http_status: Some(status),
        request_id,
        retry_after,
        fact,
        source: None,
    })
}

/// A failure to reach the endpoint or to read its answer.
pub(super) fn transport(
    err: impl std::error::Error + Send + Sync + 'static,
    timeout: bool,
    target: &str,
    region: &str,
) -> Error {
    Error::from(ServiceError {
        kind: if timeout {
            ErrorKind::Timeout
        } else {
            ErrorKind::Transport
        },
        code: String::new(),
        message: aws_smithy_types::error::display::DisplayErrorContext(&err).to_string(),
        target: target.to_string(),
        region: region.to_string(),
        http_status: None,
        request_id: None,
        retry_after: None,
        fact: None,
        source: Some(crate::types::Cause::new(err)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> aws_smithy_runtime_api::http::Headers {
        let mut h = aws_smithy_runtime_api::http::Headers::new();
        for (k, v) in pairs {
            h.insert(k.to_string(), v.to_string());
        }
        h
    }

    #[test]
    fn statuses_and_codes_map_to_kinds_that_fail_over_or_not() {
        let e = from_status(
            429,
            &headers(&[("retry-after", "2")]),
            br#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
            "m",
            "us-east-1",
        );
        assert_eq!(e.kind(), ErrorKind::Throttled);
        assert!(e.fails_over());
        let Error::Service(s) = &e else { panic!() };
        assert_eq!(s.retry_after, Some(std::time::Duration::from_secs(2)));
        assert_eq!(s.message, "slow down");
        let bad = from_status(
            400,
            &headers(&[]),
            br#"{"error":{"message":"no","type":"invalid_request_error","param":"input"}}"#,
            "m",
            "r",
        );
        assert_eq!(bad.kind(), ErrorKind::Validation);
        assert!(!bad.fails_over());
        for (status, kind) in [
            (503, ErrorKind::Unavailable),
            (500, ErrorKind::Internal),
            (502, ErrorKind::Internal),
            (504, ErrorKind::Timeout),
            (401, ErrorKind::Authentication),
            (403, ErrorKind::AccessDenied),
            (404, ErrorKind::NotFound),
        ] {
            assert_eq!(
                from_status(status, &headers(&[]), b"<html>", "m", "r").kind(),
                kind
            );
        }
        let bare = from_status(500, &headers(&[]), br#"{"error":"boom"}"#, "m", "r");
        let Error::Service(s) = &bare else { panic!() };
        assert_eq!(s.message, "boom");
        let aws = from_status(
            400,
            &headers(&[]),
            br#"{"__type":"ThrottlingException","message":"Too many"}"#,
            "m",
            "r",
        );
        assert_eq!(aws.kind(), ErrorKind::Throttled);
    }
}
