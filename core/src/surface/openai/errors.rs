//! Laneway's errors as the `openai` SDKs' classes, for the bindings' `openai` clients to raise
//! (as well as Laneway's own): the class an `openai` app catches, and the HTTP status it reads.

/// The `openai` SDK's error class for an error, and the HTTP status it carries (none for the
/// connection-level classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdkError {
    /// The class's name in the Python SDK (`openai.RateLimitError`, ...). The JavaScript SDK
    /// names two apart: `APITimeoutError` is its `APIConnectionTimeoutError`, and
    /// `APIStatusError` its `APIError` with a status.
    pub class: &'static str,
    /// The HTTP status the error carries; `None` for `APITimeoutError`, `APIConnectionError`
    /// and the catch-all `APIError`.
    pub status: Option<u16>,
}

/// The SDK's class for an error of Laneway's `kind` whose failed attempts (for
/// `all_targets_failed`) were of `attempt_kinds`: every target refusing for rate is a
/// `RateLimitError`, which `openai` apps back off on, and every one timing out (the call's
/// deadline, its `timeout`) an `APITimeoutError`.
///
/// ```
/// use laneway::surface::openai::sdk_error;
/// assert_eq!(sdk_error("throttled", []).status, Some(429));
/// let all_throttled = sdk_error("all_targets_failed", ["throttled", "quota_exceeded"]);
/// assert_eq!(all_throttled.class, "RateLimitError");
/// assert_eq!(sdk_error("all_targets_failed", ["throttled", "unavailable"]).status, Some(503));
/// // Throttled everywhere, the last try cut short by the call's deadline: still a rate limit.
/// assert_eq!(sdk_error("all_targets_failed", ["throttled", "throttled", "timeout"]).status, Some(429));
/// assert_eq!(sdk_error("all_targets_failed", ["timeout"]).class, "APITimeoutError");
/// ```
pub fn sdk_error<'a>(kind: &str, attempt_kinds: impl IntoIterator<Item = &'a str>) -> SdkError {
    let (class, status) = match kind {
        "invalid_request" | "validation" | "config" => ("BadRequestError", Some(400)),
        "authentication" => ("AuthenticationError", Some(401)),
        "access_denied" => ("PermissionDeniedError", Some(403)),
        "not_found" => ("NotFoundError", Some(404)),
        "throttled" | "quota_exceeded" | "overloaded" => ("RateLimitError", Some(429)),
        "model_error" => ("APIStatusError", Some(424)),
        "internal" | "laneway_internal" => ("InternalServerError", Some(500)),
        "all_targets_failed" => {
            let kinds: Vec<&str> = attempt_kinds.into_iter().collect();
            let every = |f: fn(&str) -> bool| !kinds.is_empty() && kinds.iter().all(|k| f(k));
            // A last try the call's deadline cut short says less than the refusals before it.
            let answered = match kinds.split_last() {
                Some((&"timeout", before)) if !before.is_empty() => before,
                _ => &kinds[..],
            };
            let refused = !answered.is_empty()
                && answered
                    .iter()
                    .all(|k| matches!(*k, "throttled" | "quota_exceeded"));
            if refused {
                ("RateLimitError", Some(429))
            } else if every(|k| k == "timeout") {
                ("APITimeoutError", None)
            } else {
                ("InternalServerError", Some(503))
            }
        }
        "unavailable" | "model_not_ready" => ("InternalServerError", Some(503)),
        "timeout" => ("APITimeoutError", None),
        "transport" => ("APIConnectionError", None),
        _ => ("APIError", None),
    };
    SdkError { class, status }
}

/// Whether an `api_key` given to an `openai` client is a Bedrock API key (a long-term
/// `ABSK...` key, or a short-term `bedrock-api-key-...` one), which Laneway sends as the bearer
/// token; any other (an OpenAI key) means nothing to Bedrock.
///
/// ```
/// assert!(laneway::surface::openai::is_bedrock_api_key("bedrock-api-key-YmVk"));
/// assert!(!laneway::surface::openai::is_bedrock_api_key("sk-proj-abc"));
/// ```
pub fn is_bedrock_api_key(key: &str) -> bool {
    key.starts_with("ABSK") || key.starts_with("bedrock-api-key-")
}
