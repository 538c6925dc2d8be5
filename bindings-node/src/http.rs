//! In-process HTTP answers for the Node seams (`laneway.fetch`, `laneway.requestHandler`): a
//! request's method, path, headers and body in; the answer's status, headers and body (bytes,
//! or a body id read chunk by chunk) out. What is answered, and how, is the core's
//! (`laneway::surface::http`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use laneway::surface::http::{self, Body, BodyStream, Route};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::{guard_async, js_error, lock};

/// An answer: its status and headers, and its body whole or as a body id (`nextChunk`).
#[napi(object)]
pub struct HttpAnswer {
    /// The HTTP status.
    pub status: u32,
    /// The headers, `[name, value]` pairs, names in lower case.
    pub headers: Vec<Vec<String>>,
    /// The whole body, when not streamed.
    pub body: Option<Buffer>,
    /// The streamed body's id, for `nextChunk` and `closeBody`.
    pub body_id: Option<u32>,
    /// What a whole answer's span ends with (JSON), when asked for (`traced`); a stream's is
    /// `bodySpanEnd`'s once it has ended.
    pub span_end: Option<String>,
}

/// `[name, value]` arrays as pairs (an array short of two is left out).
pub(crate) fn pairs(headers: Vec<Vec<String>>) -> Vec<(String, String)> {
    headers
        .into_iter()
        .filter_map(|pair| {
            let mut pair = pair.into_iter();
            Some((pair.next()?, pair.next()?))
        })
        .collect()
}

/// The streamed bodies open on a router, by id.
#[derive(Default)]
pub(crate) struct Bodies {
    open: Mutex<HashMap<u32, Arc<BodyStream>>>,
    next: Mutex<u32>,
}

impl Bodies {
    fn register(&self, body: Box<BodyStream>) -> u32 {
        let mut next = lock(&self.next);
        *next = next.wrapping_add(1);
        lock(&self.open).insert(*next, Arc::from(body));
        *next
    }

    fn get(&self, id: u32) -> Option<Arc<BodyStream>> {
        lock(&self.open).get(&id).cloned()
    }

    /// Forgets a body; dropping the last hold of it cancels its call.
    fn close(&self, id: u32) -> Option<Arc<BodyStream>> {
        lock(&self.open).remove(&id)
    }
}

impl crate::NativeRouter {
    pub(crate) async fn answer_http(
        &self,
        method: String,
        path: String,
        headers: Vec<Vec<String>>,
        body: Buffer,
        call_id: u32,
        traced: bool,
    ) -> napi::Result<HttpAnswer> {
        guard_async(async move {
            let route = Route::of(&method, &path).ok_or_else(|| {
                js_error(laneway::Error::InvalidRequest {
                    field: "path".into(),
                    reason: format!("Laneway does not answer {method} {path}"),
                })
            })?;
            let headers = pairs(headers);
            let router = self.router.clone();
            let answer = self
                .abortable_with(call_id, async move {
                    http::answer_traced(&router, &route, &headers, &body, traced).await
                })
                .await?;
            let span_end = answer.span_end().map(|end| end.to_string());
            let headers = answer
                .headers
                .into_iter()
                .map(|(k, v)| vec![k, v])
                .collect();
            Ok(match answer.body {
                Body::Whole(bytes) => HttpAnswer {
                    status: u32::from(answer.status),
                    headers,
                    body: Some(bytes.into()),
                    body_id: None,
                    span_end,
                },
                Body::Stream(stream) => HttpAnswer {
                    status: u32::from(answer.status),
                    headers,
                    body: None,
                    body_id: Some(self.bodies.register(stream)),
                    span_end: None,
                },
            })
        })
        .await
    }

    pub(crate) async fn body_chunk(&self, body_id: u32) -> napi::Result<Option<Buffer>> {
        guard_async(async move {
            let Some(body) = self.bodies.get(body_id) else {
                return Ok(None);
            };
            // At the end the body stays registered until `closeBody`, which the reader calls
            // after taking its decision.
            Ok(body.next_chunk().await.map(Buffer::from))
        })
        .await
    }

    /// A streamed body's decision headers once it has ended (empty before, or unknown).
    pub(crate) fn stream_decision(&self, body_id: u32) -> Vec<Vec<String>> {
        self.bodies
            .get(body_id)
            .map(|body| body.decision_headers())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| vec![k, v])
            .collect()
    }

    /// What a streamed body's span ends with (JSON), once it has ended.
    pub(crate) fn stream_span_end(&self, body_id: u32) -> Option<String> {
        let end = self.bodies.get(body_id)?.span_end()?;
        Some(end.to_string())
    }

    pub(crate) async fn close_http_body(&self, body_id: u32) -> napi::Result<()> {
        guard_async(async move {
            if let Some(body) = self.bodies.close(body_id) {
                // A read waiting on it ends too.
                body.close().await;
            }
            Ok(())
        })
        .await
    }
}
