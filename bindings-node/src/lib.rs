//! The native addon of the `laneway` npm package: JSON of the core's binding-neutral schema
//! (`laneway::surface`) in and out, calls on napi's tokio
//! runtime, cancellation by call id (the JavaScript facade wires `AbortSignal` to it). Every
//! decision stays in the `laneway` crate.

mod batch;
mod host;
mod http;
pub use host::{
    LogSink, log_dropped, metric_instruments, otel_failed, otel_finish, otel_schema_url,
    otel_start, otel_start_http, set_log_level, start_logs,
};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use laneway::surface::flat::{self, Casing};
use laneway::surface::openai::{self as shaped, Api, Call, ShapedStream};
use laneway::surface::{ErrorDetails, RouterOptions, converse};
use laneway::{Error, GenerateRequest, Router};
use napi_derive::napi;

/// An error as the JSON of the core's `ErrorDetails`, which the facade turns into an `Error`
/// subclass.
fn js_error(e: Error) -> napi::Error {
    details_error(&ErrorDetails::of(&e))
}

fn details_error(details: &ErrorDetails) -> napi::Error {
    napi::Error::from_reason(
        serde_json::to_string(details).unwrap_or_else(|_| details.message.clone()),
    )
}

fn invalid_request(message: impl std::fmt::Display) -> napi::Error {
    js_error(Error::InvalidRequest {
        field: "request".into(),
        reason: message.to_string(),
    })
}

/// A cancelled call: not an error of the core, the facade throws the standard `AbortError`.
pub(crate) fn aborted() -> napi::Error {
    napi::Error::from_reason(r#"{"kind":"aborted","message":"the call was aborted"}"#)
}

/// The text of a caught panic, as `laneway_internal` details (`LanewayInternalError`).
fn panic_error(panic: &(dyn std::any::Any + Send)) -> napi::Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    details_error(&ErrorDetails::internal(format!(
        "internal error in Laneway (please report it): {what}"
    )))
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

/// A request as the caller gave it (a prompt's options, or an object in the core's shape):
/// the core reads it (`laneway::surface::flat`).
fn request_of(json: &str) -> napi::Result<GenerateRequest> {
    let value = serde_json::from_str(json).map_err(invalid_request)?;
    flat::request(value, Casing::Camel).map_err(js_error)
}

fn converse_request_of(json: &str) -> napi::Result<GenerateRequest> {
    let value = serde_json::from_str(json).map_err(invalid_request)?;
    converse::request(value).map_err(js_error)
}

fn to_json(value: &impl serde::Serialize) -> napi::Result<String> {
    serde_json::to_string(value).map_err(|e| {
        details_error(&ErrorDetails::internal(format!(
            "converting the result: {e}"
        )))
    })
}

/// An open stream: the core's events, or an `openai`-shaped call's in its API's shape.
#[derive(Clone)]
enum SharedStream {
    Core(Arc<laneway::LazyStream>),
    Shaped(Arc<ShapedStream>),
}

impl SharedStream {
    /// The events already read ahead as JSON, and whether they were the end (none); `None`
    /// when none are read ahead yet.
    fn ready(&self) -> Option<napi::Result<(bool, String)>> {
        fn json<T: serde::Serialize>(r: laneway::Result<Vec<T>>) -> napi::Result<(bool, String)> {
            let events = r.map_err(js_error)?;
            Ok((events.is_empty(), to_json(&events)?))
        }
        match self {
            SharedStream::Core(s) => s.ready_batch(BATCH).map(json),
            SharedStream::Shaped(s) => s.ready_batch(BATCH).map(json),
        }
    }

    /// The next events as JSON, and whether they were the end (none).
    async fn next(&self) -> napi::Result<(bool, String)> {
        match self {
            SharedStream::Core(s) => {
                let events = s.next_batch(BATCH).await.map_err(js_error)?;
                Ok((events.is_empty(), to_json(&events)?))
            }
            SharedStream::Shaped(s) => {
                let events = s.next_batch(BATCH).await.map_err(js_error)?;
                Ok((events.is_empty(), to_json(&events)?))
            }
        }
    }
}

/// An `openai` SDK body (JSON) of `api` ("chat" or "responses") as the core reads it.
fn openai_call_of(api: &str, json: &str) -> napi::Result<Call> {
    let api: Api = api.parse().map_err(js_error)?;
    let value = serde_json::from_str(json).map_err(invalid_request)?;
    Call::read(api, value).map_err(js_error)
}

/// Events delivered together at most (a long answer's burst is split, to bound a batch).
const BATCH: usize = 256;

/// A router of the Rust core.
#[napi]
pub struct NativeRouter {
    router: Router,
    calls: Arc<Mutex<HashMap<u32, futures::future::AbortHandle>>>,
    streams: Arc<Mutex<HashMap<u32, SharedStream>>>,
    /// The pending `nextEvents` of each stream, to abort on `closeStream`.
    waiting: Mutex<HashMap<u32, futures::future::AbortHandle>>,
    next_stream: Mutex<u32>,
    /// The streamed bodies of in-process HTTP answers (`http`).
    bodies: http::Bodies,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[napi]
impl NativeRouter {
    /// Builds a router from the core's options (JSON): `config` (an object, TOML text or a
    /// path), `config_path`, `endpoint_url`, `access_key_id` and `secret_access_key`.
    #[napi(constructor)]
    pub fn new(options_json: String) -> napi::Result<Self> {
        guard(|| {
            let options: RouterOptions = serde_json::from_str(&options_json).map_err(|e| {
                js_error(Error::Config {
                    field: "options".into(),
                    reason: e.to_string(),
                })
            })?;
            let builder = options.builder().map_err(js_error)?;
            // Nothing waits here, on the event loop: the configuration is checked now, and the
            // AWS settings load at the first call (Redis connects at its first command).
            let router =
                napi::bindgen_prelude::within_runtime_if_available(|| builder.build_deferred())
                    .map_err(js_error)?;
            Ok(Self {
                router,
                calls: Arc::default(),
                streams: Arc::default(),
                waiting: Mutex::default(),
                next_stream: Mutex::new(0),
                bodies: http::Bodies::default(),
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
            let r = self.abortable(call_id, req).await?;
            to_json(&r)
        })
        .await
    }

    /// Sends a request in the AWS Converse shape (the JavaScript SDK's `ConverseCommand` input,
    /// plus `laneway` options); resolves to the response JSON in Converse's output shape, with
    /// Laneway's decision under `laneway`. `cancel(callId)` aborts it.
    #[napi]
    pub async fn converse(&self, request_json: String, call_id: u32) -> napi::Result<String> {
        guard_async(async move {
            let req = converse_request_of(&request_json)?;
            let r = self.abortable(call_id, req).await?;
            to_json(&converse::response(&r))
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

    /// Opens a stream; nothing is sent until the first `nextEvents`.
    #[napi]
    pub fn open_stream(&self, request_json: String) -> napi::Result<u32> {
        guard(|| {
            let req = request_of(&request_json)?;
            let stream = SharedStream::Core(Arc::new(self.router.lazy_stream(req)));
            Ok(self.register_stream(stream))
        })
    }

    /// Sends an `openai` SDK body (`api`: "chat" or "responses", not streamed); resolves to
    /// the answer's JSON in that SDK's shape, Laneway's decision under `laneway`.
    /// `cancel(callId)` aborts it.
    #[napi]
    pub async fn openai(
        &self,
        api: String,
        body_json: String,
        call_id: u32,
    ) -> napi::Result<String> {
        guard_async(async move {
            let Call { request, reply } = openai_call_of(&api, &body_json)?;
            reply.expect_stream(false).map_err(js_error)?;
            let r = self.abortable(call_id, request).await?;
            to_json(&reply.whole(r))
        })
        .await
    }

    /// Opens the stream of an `openai` SDK body with `stream: true`: its events come in the
    /// API's shape (chunks, or typed events), Laneway's decision on the last.
    #[napi]
    pub fn open_openai_stream(&self, api: String, body_json: String) -> napi::Result<u32> {
        guard(|| {
            let Call { request, reply } = openai_call_of(&api, &body_json)?;
            reply.expect_stream(true).map_err(js_error)?;
            let stream = ShapedStream::new(self.router.lazy_stream(request), reply.encoder());
            Ok(self.register_stream(SharedStream::Shaped(Arc::new(stream))))
        })
    }

    /// The events of a stream already read ahead, as one JSON array, without waiting: `null`
    /// when there are none yet (then `nextEvents` waits for them); `[]` after the last.
    #[napi]
    pub fn ready_events(&self, stream_id: u32) -> napi::Result<Option<String>> {
        guard(|| {
            let Some(state) = lock(&self.streams).get(&stream_id).cloned() else {
                return Ok(Some("[]".into()));
            };
            match state.ready() {
                None => Ok(None),
                Some(Ok((ended, json))) => {
                    if ended {
                        lock(&self.streams).remove(&stream_id);
                    }
                    Ok(Some(json))
                }
                Some(Err(e)) => {
                    lock(&self.streams).remove(&stream_id);
                    Err(e)
                }
            }
        })
    }

    /// The next events of a stream, as one JSON array: the next event and every one already
    /// available after it (one hand-over and one parse per burst); `[]` after the last.
    #[napi]
    pub async fn next_events(&self, stream_id: u32) -> napi::Result<String> {
        guard_async(async move {
            let Some(state) = lock(&self.streams).get(&stream_id).cloned() else {
                return Ok("[]".into());
            };
            let (handle, registration) = futures::future::AbortHandle::new_pair();
            lock(&self.waiting).insert(stream_id, handle);
            let out =
                futures::future::Abortable::new(async move { state.next().await }, registration)
                    .await;
            lock(&self.waiting).remove(&stream_id);
            let Ok(out) = out else {
                return Ok("[]".into());
            };
            match out {
                Ok((ended, json)) => {
                    if ended {
                        lock(&self.streams).remove(&stream_id);
                    }
                    Ok(json)
                }
                Err(e) => {
                    lock(&self.streams).remove(&stream_id);
                    Err(e)
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

    /// Whether this router answers a request of `method` to `path` in process
    /// (`laneway.fetch`, `laneway.requestHandler`): a route Laneway answers, for a model its
    /// configuration routes; the rest goes where it was going.
    #[napi]
    pub fn http_answers(&self, method: String, path: String) -> bool {
        laneway::surface::http::answers(&self.router, &method, &path)
    }

    /// Answers an HTTP request in process (`laneway.fetch`, `laneway.requestHandler`):
    /// headers as `[name, value]` pairs; the body whole, or a `bodyId` for `nextChunk`.
    /// `cancel(callId)` aborts it until it answers; `closeBody` after.
    #[napi]
    pub async fn http(
        &self,
        method: String,
        path: String,
        headers: Vec<Vec<String>>,
        body: napi::bindgen_prelude::Buffer,
        call_id: u32,
        traced: Option<bool>,
    ) -> napi::Result<http::HttpAnswer> {
        self.answer_http(
            method,
            path,
            headers,
            body,
            call_id,
            traced.unwrap_or(false),
        )
        .await
    }

    /// The next chunk of a streamed answer's body; `null` after the last.
    #[napi]
    pub async fn next_chunk(
        &self,
        body_id: u32,
    ) -> napi::Result<Option<napi::bindgen_prelude::Buffer>> {
        self.body_chunk(body_id).await
    }

    /// A streamed answer's decision, as `[name, value]` header pairs, once its body has
    /// ended (read to `null`); empty before.
    #[napi]
    pub fn body_decision(&self, body_id: u32) -> Vec<Vec<String>> {
        self.stream_decision(body_id)
    }

    /// What a streamed answer's span ends with (JSON), once its body has ended; `null` before,
    /// and when it was closed early.
    #[napi]
    pub fn body_span_end(&self, body_id: u32) -> Option<String> {
        self.stream_span_end(body_id)
    }

    /// Ends a streamed answer's body now, cancelling its call.
    #[napi]
    pub async fn close_body(&self, body_id: u32) -> napi::Result<()> {
        self.close_http_body(body_id).await
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

    /// Up to `max` measurements for the app's meter, as JSON `[[name, value, {attributes}]]`;
    /// kept from the first call on.
    #[napi]
    pub fn drain_measurements(&self, max: u32) -> napi::Result<String> {
        guard(|| {
            let batch = self
                .router
                .host_meter()
                .drain(max as usize, std::time::Duration::ZERO);
            host::measurements_json(&batch)
        })
    }

    /// The observed metrics' values now, as JSON `[[name, value, {attributes}]]`.
    #[napi]
    pub fn observe(&self) -> napi::Result<String> {
        guard(|| host::measurements_json(&self.router.observe()))
    }

    /// Queues again the zeros each target's attempts start from, for instruments made now.
    #[napi]
    pub fn restart_host_series(&self) {
        self.router.restart_host_series();
    }

    /// Measurements dropped because the app's meter did not drain them in time.
    #[napi]
    pub fn measurements_dropped(&self) -> i64 {
        i64::try_from(self.router.host_meter().dropped()).unwrap_or(i64::MAX)
    }

    /// Says whether a call's answer was good; its family's router learns from it.
    #[napi]
    pub fn feedback(&self, call_id: String, good: bool) -> napi::Result<()> {
        guard(|| self.router.feedback(&call_id, good).map_err(js_error))
    }

    /// Waits at most `timeout_ms` (off the event loop) until the recorded lines of the calls
    /// finished so far are written; resolves whether they all were.
    #[napi]
    pub async fn flush_record(&self, timeout_ms: u32) -> napi::Result<bool> {
        let router = self.router.clone();
        guard_async(async move {
            let timeout = std::time::Duration::from_millis(u64::from(timeout_ms));
            tokio::task::spawn_blocking(move || router.flush_record(timeout))
                .await
                .map_err(|e| napi::Error::from_reason(e.to_string()))
        })
        .await
    }

    /// The changes the recorded calls support, ranked, as JSON (see `laneway::advice::Advice`).
    #[napi]
    pub fn advice(&self) -> napi::Result<String> {
        guard(|| to_json(&self.router.advice().map_err(js_error)?))
    }

    /// Up to `max` of `[record]`'s lines for the app's logs, as JSON `[[kind, line], ...]`.
    #[napi]
    pub fn drain_record_lines(&self, max: u32) -> napi::Result<String> {
        guard(|| {
            let lines = self.router.record_lines().map_err(js_error)?;
            to_json(&lines.drain(max as usize, std::time::Duration::ZERO))
        })
    }

    /// What the family routers have learned from feedback, as JSON.
    #[napi]
    pub fn feedback_report(&self) -> napi::Result<String> {
        guard(|| to_json(&self.router.feedback_report()))
    }

    /// Closes a task: its calls' cost joins the per-task figures.
    #[napi]
    pub fn finish_task(&self, task_id: String, success: bool) -> napi::Result<bool> {
        guard(|| Ok(self.router.finish_task(&task_id, success)))
    }

    /// A session collecting requests of SLO class `batch` for one submission.
    #[napi]
    pub fn batch_session(&self) -> batch::NativeBatchSession {
        batch::NativeBatchSession::new(self.router.batch_session())
    }

    /// Submits requests (a JSON array) to the batch lane; resolves to the handle.
    #[napi]
    pub fn submit_batch<'env>(
        &self,
        env: &'env napi::Env,
        requests_json: String,
    ) -> napi::Result<napi::bindgen_prelude::PromiseRaw<'env, batch::NativeBatchHandle>> {
        guard(|| batch::submit(env, self.router.clone(), &requests_json))
    }

    /// Every job's status; resolves to JSON of `{jobs, done, total, finished}`.
    #[napi]
    pub fn batch_status<'env>(
        &self,
        env: &'env napi::Env,
        handle: &batch::NativeBatchHandle,
    ) -> napi::Result<napi::bindgen_prelude::PromiseRaw<'env, String>> {
        guard(|| batch::status(env, self.router.clone(), Arc::clone(&handle.handle)))
    }

    /// Polls until every job has ended, calling `progress(statusJson)` after each poll;
    /// resolves to the last status (JSON). `cancel(callId)` aborts the wait.
    #[napi]
    pub fn wait_batch<'env>(
        &self,
        env: &'env napi::Env,
        handle: &batch::NativeBatchHandle,
        progress: Option<batch::Progress>,
        call_id: u32,
    ) -> napi::Result<napi::bindgen_prelude::PromiseRaw<'env, String>> {
        guard(|| {
            let (abort, registration) = futures::future::AbortHandle::new_pair();
            lock(&self.calls).insert(call_id, abort);
            let calls = Arc::clone(&self.calls);
            // The id is forgotten when the wait ends; a `cancel` after that finds nothing.
            let forget = move || {
                lock(&calls).remove(&call_id);
            };
            let handle = Arc::clone(&handle.handle);
            batch::wait(
                env,
                self.router.clone(),
                handle,
                progress,
                (registration, forget),
            )
        })
    }

    /// One item per request in submission order; resolves to JSON of `[{output} | {error}]`.
    #[napi]
    pub fn batch_results<'env>(
        &self,
        env: &'env napi::Env,
        handle: &batch::NativeBatchHandle,
    ) -> napi::Result<napi::bindgen_prelude::PromiseRaw<'env, String>> {
        guard(|| batch::results(env, self.router.clone(), Arc::clone(&handle.handle)))
    }

    /// Stops the jobs that have not ended; resolves to how many were stopped.
    #[napi]
    pub fn cancel_batch<'env>(
        &self,
        env: &'env napi::Env,
        handle: &batch::NativeBatchHandle,
    ) -> napi::Result<napi::bindgen_prelude::PromiseRaw<'env, u32>> {
        guard(|| batch::cancel(env, self.router.clone(), Arc::clone(&handle.handle)))
    }

    /// Prompt-cache totals per family, as JSON.
    #[napi]
    pub fn cache_totals(&self) -> napi::Result<String> {
        guard(|| to_json(&self.router.cache_totals()))
    }
}

impl NativeRouter {
    /// Registers a stream; its id.
    fn register_stream(&self, stream: SharedStream) -> u32 {
        let mut next = lock(&self.next_stream);
        *next = next.wrapping_add(1);
        lock(&self.streams).insert(*next, stream);
        *next
    }

    /// Runs a call that `cancel(call_id)` can abort. Already on napi's tokio runtime: abortable
    /// in place, no second task to hand off to.
    async fn abortable(
        &self,
        call_id: u32,
        req: GenerateRequest,
    ) -> napi::Result<laneway::GenerateResponse> {
        self.abortable_with(call_id, self.router.generate(req))
            .await?
            .map_err(js_error)
    }

    /// Runs `work` so that `cancel(call_id)` can abort it.
    async fn abortable_with<T>(
        &self,
        call_id: u32,
        work: impl std::future::Future<Output = T>,
    ) -> napi::Result<T> {
        let (handle, registration) = futures::future::AbortHandle::new_pair();
        lock(&self.calls).insert(call_id, handle);
        let out = futures::future::Abortable::new(work, registration).await;
        lock(&self.calls).remove(&call_id);
        out.map_err(|futures::future::Aborted| aborted())
    }
}

/// Arms a core failpoint (`plan`, `generate`, `stream_event`), or disarms with null: a forced
/// panic, for the tests that show it arrives as `LanewayInternalError`.
#[napi]
pub fn arm_failpoint(name: Option<String>) {
    laneway::failpoint::arm(name.as_deref());
}

/// The core's surface names (`laneway::surface::schema::names`) as JSON, for the tests that
/// check the typed views and `index.d.ts` against them.
#[napi]
pub fn schema() -> String {
    laneway::surface::schema::names().to_string()
}

/// The `openai` SDK's error class (its Python name) and HTTP status for an error of `kind`
/// whose failed attempts were of `attemptKinds`, as JSON `{ class, status }`.
#[napi]
pub fn openai_error(kind: String, attempt_kinds: Vec<String>) -> String {
    let e = shaped::sdk_error(&kind, attempt_kinds.iter().map(String::as_str));
    serde_json::json!({ "class": e.class, "status": e.status }).to_string()
}

/// The `openai` JavaScript SDK's client options the facade takes and does not use, its
/// per-request options it does not use, and the warning for `given` ones, as JSON
/// `{ client, request, warning }`.
#[napi]
pub fn openai_options(given: Vec<String>) -> String {
    let sdk = shaped::OpenAiSdk::JavaScript;
    let given: Vec<&str> = given.iter().map(String::as_str).collect();
    serde_json::json!({
        "client": sdk.unused_client_options(),
        "request": sdk.unused_request_options(),
        "warning": shaped::not_used(&given),
    })
    .to_string()
}

/// Whether an `apiKey` is a Bedrock API key.
#[napi]
pub fn is_bedrock_api_key(key: String) -> bool {
    shaped::is_bedrock_api_key(&key)
}

/// The version of the addon.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
