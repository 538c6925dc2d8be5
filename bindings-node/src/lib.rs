//! The native addon of the `laneway` npm package: JSON in, JSON out, calls on napi's tokio
//! runtime, cancellation by call id (the JavaScript facade wires `AbortSignal` to it). Every
//! decision stays in the `laneway` crate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use laneway::{Config, Error, GenerateRequest, Router};
use napi::bindgen_prelude::block_on;
use napi_derive::napi;
use serde::Deserialize;

/// How to build a router (the facade's options, as JSON).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Options {
    config_toml: Option<String>,
    config_path: Option<String>,
    endpoint_url: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
}

/// A core error as the JSON the facade turns into an `Error` subclass with a stable `code`.
fn js_error(e: Error) -> napi::Error {
    let mut details = serde_json::json!({ "kind": e.kind().as_str(), "message": e.to_string() });
    match &e {
        Error::Service(s) => {
            details["awsCode"] = s.code.clone().into();
            details["target"] = s.target.clone().into();
            details["region"] = s.region.clone().into();
            details["httpStatus"] = s.http_status.into();
            details["retryAfterMs"] = s.retry_after.map(|d| d.as_millis() as u64).into();
        }
        Error::AllTargetsFailed {
            attempts,
            budget_exhausted,
        } => {
            details["attempts"] = serde_json::to_value(attempts).unwrap_or_default();
            details["budgetExhausted"] = (*budget_exhausted).into();
        }
        Error::StreamInterrupted { delivered, cause } => {
            details["delivered"] = serde_json::to_value(delivered).unwrap_or_default();
            details["cause"] = cause.to_string().into();
        }
        _ => {}
    }
    napi::Error::from_reason(details.to_string())
}

fn plain_error(kind: &str, message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(
        serde_json::json!({ "kind": kind, "message": message.to_string() }).to_string(),
    )
}

/// The text of a caught panic, for an `internal_error` (`LanewayInternalError` in JavaScript).
fn panic_error(panic: &(dyn std::any::Any + Send)) -> napi::Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    plain_error(
        "internal_error",
        format!("internal error in Laneway (please report it): {what}"),
    )
}

/// Runs a synchronous entry point; a panic becomes a thrown `LanewayInternalError` instead of
/// aborting the Node process.
fn guard<T>(f: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(panic_error(&*panic)))
}

/// Runs an asynchronous entry point; a panic rejects its promise with `LanewayInternalError`.
async fn guard_async<T>(f: impl std::future::Future<Output = napi::Result<T>>) -> napi::Result<T> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(f)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(panic_error(&*panic)))
}

fn request_of(json: &str) -> napi::Result<GenerateRequest> {
    serde_json::from_str(json)
        .map_err(|e| plain_error("invalid_request", format!("invalid request: {e}")))
}

fn to_json(value: &impl serde::Serialize) -> napi::Result<String> {
    serde_json::to_string(value)
        .map_err(|e| plain_error("internal_error", format!("converting the result: {e}")))
}

type SharedStream = Arc<laneway::LazyStream>;

/// A router of the Rust core.
#[napi]
pub struct NativeRouter {
    router: Router,
    calls: Arc<Mutex<HashMap<u32, futures::future::AbortHandle>>>,
    streams: Arc<Mutex<HashMap<u32, SharedStream>>>,
    /// The pending `nextEvent` of each stream, to abort on `closeStream`.
    waiting: Mutex<HashMap<u32, futures::future::AbortHandle>>,
    next_stream: Mutex<u32>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[napi]
impl NativeRouter {
    /// Builds a router from options JSON: `configToml` or `configPath`, `endpointUrl`,
    /// `accessKeyId` and `secretAccessKey`.
    #[napi(constructor)]
    pub fn new(options_json: String) -> napi::Result<Self> {
        guard(|| {
            let o: Options = serde_json::from_str(&options_json).map_err(|e| {
                plain_error("config", format!("invalid configuration: options: {e}"))
            })?;
            let config =
                match (o.config_toml, o.config_path) {
                    (Some(_), Some(_)) => return Err(plain_error(
                        "config",
                        "invalid configuration: give a configuration or a path to one, not both",
                    )),
                    (Some(text), None) => Config::from_toml_str(&text),
                    (None, Some(path)) => Config::from_file(path),
                    (None, None) => Ok(Config::default()),
                }
                .map_err(js_error)?;
            let mut b = Router::builder().config(config);
            if let Some(url) = o.endpoint_url {
                b = b.endpoint_url(url);
            }
            match (o.access_key_id, o.secret_access_key) {
                (Some(id), Some(secret)) => b = b.static_credentials(id, secret),
                (None, None) => {}
                _ => {
                    return Err(plain_error(
                        "config",
                        "invalid configuration: accessKeyId and secretAccessKey go together",
                    ))
                }
            }
            let router = block_on(b.build()).map_err(js_error)?;
            Ok(Self {
                router,
                calls: Arc::default(),
                streams: Arc::default(),
                waiting: Mutex::default(),
                next_stream: Mutex::new(0),
            })
        })
    }

    /// The plan for a request (JSON), without sending it.
    #[napi]
    pub fn plan(&self, request_json: String) -> napi::Result<String> {
        guard(|| {
            let req = request_of(&request_json)?;
            to_json(&self.router.plan(&req).map_err(js_error)?)
        })
    }

    /// Sends a request; resolves to the response JSON. `cancel(callId)` aborts it.
    #[napi]
    pub async fn generate(&self, request_json: String, call_id: u32) -> napi::Result<String> {
        guard_async(async move {
            let req = request_of(&request_json)?;
            // Already on napi's tokio runtime: abortable in place, no second task to hand off to.
            let (handle, registration) = futures::future::AbortHandle::new_pair();
            lock(&self.calls).insert(call_id, handle);
            let out =
                futures::future::Abortable::new(self.router.generate(req), registration).await;
            lock(&self.calls).remove(&call_id);
            match out {
                Ok(Ok(r)) => to_json(&r),
                Ok(Err(e)) => Err(js_error(e)),
                Err(futures::future::Aborted) => {
                    Err(plain_error("aborted", "the call was aborted"))
                }
            }
        })
        .await
    }

    /// Aborts a call started with `generate`, if it is still running.
    #[napi]
    pub fn cancel(&self, call_id: u32) {
        if let Some(h) = lock(&self.calls).remove(&call_id) {
            h.abort();
        }
    }

    /// Opens a stream; nothing is sent until the first `nextEvent`.
    #[napi]
    pub fn open_stream(&self, request_json: String) -> napi::Result<u32> {
        guard(|| {
            let req = request_of(&request_json)?;
            let mut next = lock(&self.next_stream);
            *next = next.wrapping_add(1);
            let state = Arc::new(self.router.lazy_stream(req));
            lock(&self.streams).insert(*next, state);
            Ok(*next)
        })
    }

    /// The next event JSON of a stream, or null after the last.
    #[napi]
    pub async fn next_event(&self, stream_id: u32) -> napi::Result<Option<String>> {
        guard_async(async move {
            let Some(state) = lock(&self.streams).get(&stream_id).cloned() else {
                return Ok(None);
            };
            // `closeStream` aborts a pending event too, dropping the stream (and its request) now.
            let (handle, registration) = futures::future::AbortHandle::new_pair();
            lock(&self.waiting).insert(stream_id, handle);
            let out =
                futures::future::Abortable::new(async move { state.next().await }, registration)
                    .await;
            lock(&self.waiting).remove(&stream_id);
            let Ok(out) = out else {
                return Ok(None);
            };
            match out {
                Ok(Some(ev)) => Ok(Some(to_json(&ev)?)),
                Ok(None) => {
                    lock(&self.streams).remove(&stream_id);
                    Ok(None)
                }
                Err(e) => {
                    lock(&self.streams).remove(&stream_id);
                    Err(js_error(e))
                }
            }
        })
        .await
    }

    /// Ends a stream now, cancelling its request.
    #[napi]
    pub fn close_stream(&self, stream_id: u32) -> napi::Result<()> {
        guard(|| {
            // Dropping the stream cancels its request and releases what it holds.
            lock(&self.streams).remove(&stream_id);
            if let Some(h) = lock(&self.waiting).remove(&stream_id) {
                h.abort();
            }
            Ok(())
        })
    }

    /// Everything measured so far, as JSON.
    #[napi]
    pub fn metrics(&self) -> napi::Result<String> {
        guard(|| to_json(&self.router.metrics()))
    }

    /// The metrics as Prometheus text.
    #[napi]
    pub fn prometheus(&self) -> napi::Result<String> {
        guard(|| Ok(self.router.metrics().prometheus()))
    }

    /// Closes a task: its calls' cost joins the per-task figures.
    #[napi]
    pub fn finish_task(&self, task_id: String, success: bool) -> napi::Result<bool> {
        guard(|| Ok(self.router.finish_task(&task_id, success)))
    }

    /// Prompt-cache totals per family, as JSON.
    #[napi]
    pub fn cache_totals(&self) -> napi::Result<String> {
        guard(|| to_json(&self.router.cache_totals()))
    }
}

/// Arms a core failpoint (`plan`, `generate`, `stream_event`), or disarms with null: a forced
/// panic, for the tests that show it arrives as `LanewayInternalError`.
#[napi]
pub fn arm_failpoint(name: Option<String>) {
    laneway::failpoint::arm(name.as_deref());
}

/// The version of the addon.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
