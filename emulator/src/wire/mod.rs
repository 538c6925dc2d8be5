//! The wire protocols: Bedrock Runtime and SageMaker Runtime over restJson1 and event streams.

pub(crate) mod batch;
pub(crate) mod bedrock;
pub(crate) mod eventstream;
mod misbehave;
pub(crate) mod openai;
pub(crate) mod s3;
pub(crate) mod sagemaker;

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::engine::{ApiError, Engine};
use crate::sigv4;
pub(crate) use misbehave::{misbehave, with_wire_fault};

/// A restJson1 error response: status, `x-amzn-ErrorType`, `{"message": ...}` and a request id.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if self.html {
            // A load balancer's page: no AWS headers, no JSON.
            let mut resp = (status, self.message).into_response();
            resp.headers_mut()
                .insert("content-type", HeaderValue::from_static("text/html"));
            return resp;
        }
        let mut body = serde_json::json!({ "message": self.message });
        if let Some((code, message)) = &self.original {
            body["OriginalStatusCode"] = (*code).into();
            body["OriginalMessage"] = message.clone().into();
            body["LogStreamArn"] =
                "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/Endpoints/emulated"
                    .into();
        }
        let mut resp = (status, body.to_string()).into_response();
        let headers = resp.headers_mut();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Ok(v) = HeaderValue::from_str(&self.code) {
            headers.insert("x-amzn-errortype", v);
        }
        if let Some(v) = self
            .retry_after
            .and_then(|v| HeaderValue::from_str(&v).ok())
        {
            headers.insert("retry-after", v);
        }
        headers.insert("x-amzn-requestid", request_id());
        resp
    }
}

/// A fresh request id for the `x-amzn-RequestId` header.
pub(crate) fn request_id() -> HeaderValue {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    HeaderValue::from_str(&format!("00000000-0000-4000-8000-{n:012x}")).expect("ascii header")
}

/// Checks the signature and that it was made for `service`; returns the signed region.
pub(crate) fn authenticate(
    engine: &Arc<Engine>,
    service: &str,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<String, ApiError> {
    let scope = sigv4::verify(method, uri, headers, body, &engine.scenario.credentials)
        .map_err(|e| ApiError::new(403, e.code, e.message))?;
    if scope.service != service {
        return Err(ApiError::new(
            403,
            "InvalidSignatureException",
            format!("Credential should be scoped to correct service: '{service}'."),
        ));
    }
    if engine.scenario.region(&scope.region).is_none() {
        return Err(ApiError::new(
            403,
            "InvalidSignatureException",
            format!(
                "Credential should be scoped to a valid region, not '{}'.",
                scope.region
            ),
        ));
    }
    Ok(scope.region)
}

/// Parses a JSON request body, or answers the service's validation error.
pub(crate) fn parse_json(
    service: crate::engine::Service,
    body: &Bytes,
) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::validation(service, format!("Malformed input request: {e}")))
}

/// One step of an answer's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Token `index` is due now.
    Token(usize, String),
    /// The stream breaks here, after the tokens so far.
    Break,
    /// Every token was delivered.
    Done,
}

/// Plays an answer in time: the first token after the TTFT, each next one a token interval
/// later, a break where a fault says so.
pub(crate) fn timeline(
    answer: &crate::engine::Answer,
) -> impl futures::Stream<Item = Step> + Send + 'static + use<> {
    let tokens = answer.tokens.clone();
    let ttft = answer.ttft;
    let interval = answer.token_interval;
    let break_at = answer.break_after.as_ref().map(|(n, _)| *n as usize);
    async_stream::stream! {
        let start = tokio::time::Instant::now();
        for (i, t) in tokens.into_iter().enumerate() {
            if break_at == Some(i) {
                yield Step::Break;
                return;
            }
            wait_until(start + ttft + interval * i as u32).await;
            yield Step::Token(i, t);
        }
        if break_at.is_some() {
            // A break set beyond the answer's length breaks at its end, before the stop event.
            yield Step::Break;
            return;
        }
        yield Step::Done;
    }
}

/// Waits as long as a non-streaming answer takes.
pub(crate) async fn wait_whole(answer: &crate::engine::Answer) {
    let n = answer.tokens.len().saturating_sub(1) as u32;
    wait_until(tokio::time::Instant::now() + answer.ttft + answer.token_interval * n).await;
}

/// Waits until `deadline`. A wait shorter than the timer's 1 ms resolution is skipped: the
/// timer would round it up to a whole millisecond, which is not the scenario's timing (a stream
/// still keeps its pace, since each token's deadline counts from the start).
async fn wait_until(deadline: tokio::time::Instant) {
    if deadline.saturating_duration_since(tokio::time::Instant::now())
        >= std::time::Duration::from_millis(1)
    {
        tokio::time::sleep_until(deadline).await;
    }
}

/// Counts a stream as cancelled if it is dropped before [`StreamEnd::finish`].
pub(crate) struct StreamEnd {
    engine: Arc<Engine>,
    ask: crate::engine::Ask,
    served_tier: String,
    finished: bool,
}

impl StreamEnd {
    pub(crate) fn new(engine: Arc<Engine>, ask: crate::engine::Ask, served_tier: String) -> Self {
        Self {
            engine,
            ask,
            served_tier,
            finished: false,
        }
    }
    /// The stream reached its end (or its injected break).
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for StreamEnd {
    fn drop(&mut self) {
        if !self.finished {
            self.engine.record_cancelled(&self.ask, &self.served_tier);
        }
    }
}
