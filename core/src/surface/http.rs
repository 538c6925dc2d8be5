//! Laneway answering HTTP in process, below the official clients: the one place where the
//! bindings' seams (botocore's `before-send` event, an httpx transport, a `fetch` function, an
//! AWS SDK request handler) hand over a request as the SDK wrote it and get back the bytes the
//! service would have sent. Everything above the seam (the SDK's parsing, its types and
//! exception classes, the framework) then runs unchanged.
//!
//! Answered: bedrock-runtime's Converse and ConverseStream (`/model/{modelId}/converse`,
//! `/converse-stream`, the stream as event-stream frames), InvokeModel and
//! InvokeModelWithResponseStream with Anthropic Messages or Nova bodies (`/invoke`,
//! `/invoke-with-response-stream`, [`invoke`]) and the OpenAI-compatible Chat
//! Completions and Responses (`.../chat/completions`, `.../responses`, streamed as server-sent
//! events). [`Route::of`] says `None` for anything else, which the seam sends where it was
//! going. Laneway's own options come in the body's `laneway` object or, for a framework that
//! lets you set neither, in an `x-laneway` header holding the same JSON object.
//!
//! ```
//! use laneway::surface::http::Route;
//! assert!(matches!(
//!     Route::of("POST", "/model/us.amazon.nova-lite-v1%3A0/converse-stream"),
//!     Some(Route::Converse { stream: true, .. })
//! ));
//! assert!(Route::of("POST", "/openai/v1/chat/completions").is_some());
//! assert!(Route::of("POST", "/model/m/count-tokens").is_none());
//! ```

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::converse;
use super::converse_stream::ConverseEvents;
use super::eventstream;
use super::invoke::{self, InvokeEvents, Native};
use super::openai::{Api, Call, Encoder, sdk_error};
use crate::client::{LazyStream, Router};
use crate::types::{Error, ErrorKind, StreamEvent};

/// The header on an OpenAI-shaped answer to a call that timed out: the seam raises the HTTP
/// client's timeout error on it, which the `openai` SDKs turn into their `APITimeoutError`.
pub const TIMED_OUT: &str = "x-laneway-timed-out";

/// What Laneway answers of a request, by its method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// bedrock-runtime's Converse (`stream`: ConverseStream) for `model` (the path's model id,
    /// decoded).
    Converse {
        /// The model id, profile or ARN the path names.
        model: String,
        /// ConverseStream rather than Converse.
        stream: bool,
    },
    /// bedrock-runtime's InvokeModel (`stream`: InvokeModelWithResponseStream) for `model`,
    /// with the model's native body.
    Invoke {
        /// The model id, profile or ARN the path names.
        model: String,
        /// InvokeModelWithResponseStream rather than InvokeModel.
        stream: bool,
    },
    /// An OpenAI-compatible API (on bedrock-runtime, bedrock-mantle or any base URL).
    OpenAi(Api),
}

impl Route {
    /// The route of a request, or `None` when Laneway does not answer it (the seam then sends
    /// it as it would have been sent). `path` may carry a query, which is ignored.
    pub fn of(method: &str, path: &str) -> Option<Route> {
        if !method.eq_ignore_ascii_case("POST") {
            return None;
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        // A base URL may carry a path of its own (a gateway's): the model path is the last.
        if let Some(rest) = path
            .rfind("/model/")
            .map(|at| &path[at + "/model/".len()..])
        {
            let (model, op) = rest.rsplit_once('/')?;
            let model = percent_encoding::percent_decode_str(model)
                .decode_utf8()
                .ok()?
                .into_owned();
            if model.is_empty() {
                return None;
            }
            return match op {
                "converse" => Some(Route::Converse {
                    model,
                    stream: false,
                }),
                "converse-stream" => Some(Route::Converse {
                    model,
                    stream: true,
                }),
                "invoke" => Some(Route::Invoke {
                    model,
                    stream: false,
                }),
                "invoke-with-response-stream" => Some(Route::Invoke {
                    model,
                    stream: true,
                }),
                _ => None,
            };
        }
        if path.ends_with("/chat/completions") {
            Some(Route::OpenAi(Api::Chat))
        } else if path.ends_with("/responses") {
            Some(Route::OpenAi(Api::Responses))
        } else {
            None
        }
    }

    fn is_aws(&self) -> bool {
        matches!(self, Route::Converse { .. } | Route::Invoke { .. })
    }
}

/// Whether `router` answers a request of `method` to `path`: a route Laneway answers, for a
/// model its configuration routes (a Converse or InvokeModel path names it, and InvokeModel's
/// body must be one Laneway reads, `reads_invoke_body`; an OpenAI path's model is in the body,
/// and is answered whatever it is). The seams send the rest where it
/// was going.
pub fn answers(router: &Router, method: &str, path: &str) -> bool {
    match Route::of(method, path) {
        Some(Route::Converse { model, .. }) => router.config().routes(&model),
        Some(Route::Invoke { model, .. }) => {
            router.config().routes(&model) && reads_invoke_body(&model, router.config())
        }
        Some(Route::OpenAi(_)) => true,
        None => false,
    }
}

/// Whether Laneway reads InvokeModel bodies for `model`: a Claude or Nova model, or a family
/// or alias (whose body says which it is). Other models' bodies (Llama's prompt, ...) are not
/// read: their calls go where they were going.
fn reads_invoke_body(model: &str, config: &crate::config::Config) -> bool {
    Native::of_model(model).is_some()
        || config.families.contains_key(model)
        || config.aliases.contains_key(model)
}

/// An answer: its status, headers and body.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
    /// How the call ended, for its span (a whole answer's; a stream's is its body's).
    ended: Option<Ended>,
}

/// How a call ended: what its span's end is made from.
#[derive(Debug, Clone)]
enum Ended {
    Answered(Box<crate::types::GenerateResponse>),
    Failed(Box<super::ErrorDetails>),
}

impl Ended {
    fn span_end(&self) -> Value {
        match self {
            Ended::Answered(r) => super::otel::finish(&serde_json::to_value(r).unwrap_or_default()),
            Ended::Failed(d) => super::otel::failed(&serde_json::to_value(d).unwrap_or_default()),
        }
    }
}

impl Answer {
    /// What the call's span gets at its end ([`otel::finish`](super::otel::finish) or
    /// [`otel::failed`](super::otel::failed)), for a whole answer; `None` for a stream (its
    /// body says it once read to the end: [`BodyStream::span_end`]) and for a request that
    /// never became a call.
    pub fn span_end(&self) -> Option<Value> {
        self.ended.as_ref().map(Ended::span_end)
    }
}

/// What a call's span starts with ([`otel::start`](super::otel::start)), from the request as
/// the seam received it; `None` when it is no call Laneway would make (the answer says why).
pub fn span_start(route: &Route, headers: &[(String, String)], body: &[u8]) -> Option<Value> {
    Some(match read(route, headers, body).ok()? {
        Read::Converse { request, stream }
        | Read::Invoke {
            request, stream, ..
        } => super::otel::start(&request, stream),
        Read::OpenAi(call) => super::otel::start(&call.request, call.reply.stream()),
    })
}

/// An answer's body.
#[derive(Debug)]
pub enum Body {
    /// All of it.
    Whole(Vec<u8>),
    /// A stream, read chunk by chunk (event-stream frames, or server-sent events).
    Stream(Box<BodyStream>),
}

/// Answers `route` for a request with `body` and `headers` (names in any case), as the
/// service would: a call Laneway refuses or fails is the service's own error status and body
/// (AWS's JSON error with `x-amzn-errortype`, or OpenAI's error object), never a panic.
pub async fn answer(
    router: &Router,
    route: &Route,
    headers: &[(String, String)],
    body: &[u8],
) -> Answer {
    answer_traced(router, route, headers, body, false).await
}

/// [`answer`], keeping how the call ended for its span when `traced`
/// ([`Answer::span_end`], [`BodyStream::span_end`]).
pub async fn answer_traced(
    router: &Router,
    route: &Route,
    headers: &[(String, String)],
    body: &[u8],
    traced: bool,
) -> Answer {
    let answered =
        |r: &crate::types::GenerateResponse| traced.then(|| Ended::Answered(Box::new(r.clone())));
    match read(route, headers, body).map(|r| r.for_config(router.config())) {
        Ok(Read::Converse {
            request,
            stream: false,
        }) => match router.generate(*request).await {
            Ok(r) => with_decision(json_answer(200, &converse::response(&r)), &r, answered(&r)),
            Err(e) => failed(route, &e),
        },
        Ok(Read::Converse {
            request,
            stream: true,
        }) => {
            streamed(
                route,
                router.lazy_stream(*request),
                Writer::Converse(ConverseEvents::new()),
                traced,
            )
            .await
        }
        Ok(Read::Invoke {
            request,
            native,
            stream: false,
            ..
        }) => match router.generate(*request).await {
            Ok(r) => {
                let mut a = json_answer(200, &invoke::response(native, &r));
                a.headers.extend(invoke::headers(&r));
                with_decision(a, &r, answered(&r))
            }
            Err(e) => failed(route, &e),
        },
        Ok(Read::Invoke {
            request,
            native,
            model,
            stream: true,
        }) => {
            streamed(
                route,
                router.lazy_stream(*request),
                Writer::Invoke(InvokeEvents::new(native, &model)),
                traced,
            )
            .await
        }
        Ok(Read::OpenAi(call)) if call.reply.stream() => {
            let writer = Writer::OpenAi {
                api: call.reply.api(),
                encoder: call.reply.encoder(),
            };
            streamed(route, router.lazy_stream(call.request), writer, traced).await
        }
        Ok(Read::OpenAi(call)) => match router.generate(call.request).await {
            Ok(r) => {
                let headers = decision_headers(&r);
                let ended = answered(&r);
                let mut a = json_answer(200, &call.reply.whole(r));
                a.headers.extend(headers);
                a.ended = ended;
                a
            }
            Err(e) => failed(route, &e),
        },
        Err(e) => error_answer(route, &e),
    }
}

enum Read {
    Converse {
        request: Box<crate::types::GenerateRequest>,
        stream: bool,
    },
    Invoke {
        request: Box<crate::types::GenerateRequest>,
        native: Native,
        model: String,
        stream: bool,
    },
    OpenAi(Box<Call>),
}

impl Read {
    /// Model fields written for a path that names a family or an alias are written for the
    /// model the plan picks, as fields that name no model are.
    fn for_config(mut self, config: &crate::config::Config) -> Read {
        if let Read::Converse { request, .. } | Read::Invoke { request, .. } = &mut self
            && let Some(fields) = &mut request.model_fields
            && fields
                .model
                .as_deref()
                .is_some_and(|m| config.families.contains_key(m) || config.aliases.contains_key(m))
        {
            fields.model = None;
        }
        self
    }
}

fn read(route: &Route, headers: &[(String, String)], body: &[u8]) -> crate::types::Result<Read> {
    let mut value: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body)
            .map_err(|e| Error::invalid("body", format!("not JSON: {e}")))?
    };
    let Some(object) = value.as_object_mut() else {
        return Err(Error::invalid("body", "not a JSON object"));
    };
    if let Some(options) = header(headers, "x-laneway") {
        let options: Value = serde_json::from_str(options)
            .map_err(|e| Error::invalid("x-laneway", format!("the header is not JSON: {e}")))?;
        if !options.is_object() {
            return Err(Error::invalid(
                "x-laneway",
                "the header is not a JSON object",
            ));
        }
        object.entry("laneway").or_insert(options);
    }
    match route {
        Route::Converse { model, stream } => {
            object.insert("modelId".into(), Value::String(model.clone()));
            Ok(Read::Converse {
                request: Box::new(converse::request(value)?),
                stream: *stream,
            })
        }
        Route::Invoke { model, stream } => {
            let native = Native::of(model, &value)?;
            let settings = invoke::InvokeHeaders {
                tier: header(headers, "x-amzn-bedrock-service-tier"),
                guardrail: header(headers, "x-amzn-bedrock-guardrailidentifier"),
                guardrail_version: header(headers, "x-amzn-bedrock-guardrailversion"),
                trace: header(headers, "x-amzn-bedrock-trace"),
                latency: header(headers, "x-amzn-bedrock-performanceconfig-latency"),
            };
            Ok(Read::Invoke {
                request: Box::new(invoke::request(native, model, value, settings)?),
                model: model.clone(),
                native,
                stream: *stream,
            })
        }
        Route::OpenAi(api) => Ok(Read::OpenAi(Box::new(Call::read(*api, value)?))),
    }
}

/// The value of the header `name` (any case).
fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Laneway's decision on a whole answer's headers (`x-laneway-call-id`, `-model`, `-target`,
/// `-region`, `-tier`, `-attempts`, `-cost-usd`), for code above an SDK that parses the body
/// into types without Laneway's fields. A stream's comes from
/// [`BodyStream::decision_headers`] once it has ended.
pub fn decision_headers(r: &crate::types::GenerateResponse) -> Vec<(String, String)> {
    let d = &r.decision;
    let mut headers = vec![
        ("x-laneway-call-id".to_owned(), d.call_id.clone()),
        ("x-laneway-model".to_owned(), d.model.clone()),
        ("x-laneway-target".to_owned(), d.target.clone()),
        ("x-laneway-region".to_owned(), d.region.clone()),
        ("x-laneway-attempts".to_owned(), d.attempts_sent.to_string()),
        (
            "x-laneway-cost-usd".to_owned(),
            format!("{:.10}", r.cost_usd),
        ),
    ];
    if let Some(tier) = d.served_tier.or(d.tier)
        && let Ok(Value::String(name)) = serde_json::to_value(tier)
    {
        headers.push(("x-laneway-tier".to_owned(), name));
    }
    // Header values are visible ASCII: ids and regions are; anything else is left out.
    headers.retain(|(_, v)| v.bytes().all(|b| (0x20..0x7f).contains(&b)));
    headers
}

fn with_decision(
    mut answer: Answer,
    r: &crate::types::GenerateResponse,
    ended: Option<Ended>,
) -> Answer {
    answer.ended = ended;
    answer.headers.extend(decision_headers(r));
    answer
}

fn json_answer(status: u16, value: &impl serde::Serialize) -> Answer {
    Answer {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: Body::Whole(serde_json::to_vec(value).unwrap_or_default()),
        ended: None,
    }
}

/// A call that failed: the service's error answer, and the failure for the call's span.
fn failed(route: &Route, e: &Error) -> Answer {
    let mut a = error_answer(route, e);
    a.ended = Some(Ended::Failed(Box::new(super::ErrorDetails::of(e))));
    a
}

/// AWS's error code and HTTP status for an error, as bedrock-runtime answers them.
fn aws_error(e: &Error) -> (u16, &'static str) {
    let attempts: Vec<ErrorKind> = match e {
        Error::AllTargetsFailed { attempts, .. } => attempts.iter().map(|a| a.kind).collect(),
        _ => Vec::new(),
    };
    let every = |f: fn(ErrorKind) -> bool| !attempts.is_empty() && attempts.iter().all(|&k| f(k));
    // A last try the call's deadline cut short says less than the refusals before it.
    let answered = match attempts.split_last() {
        Some((ErrorKind::Timeout, before)) if !before.is_empty() => before,
        _ => &attempts[..],
    };
    let refused = !answered.is_empty()
        && answered
            .iter()
            .all(|k| matches!(k, ErrorKind::Throttled | ErrorKind::QuotaExceeded));
    match e.kind() {
        ErrorKind::Throttled | ErrorKind::Overloaded => (429, "ThrottlingException"),
        ErrorKind::QuotaExceeded => (400, "ServiceQuotaExceededException"),
        ErrorKind::ModelNotReady => (429, "ModelNotReadyException"),
        ErrorKind::Timeout => (408, "ModelTimeoutException"),
        ErrorKind::ModelError => (424, "ModelErrorException"),
        ErrorKind::StreamInterrupted => (424, "ModelStreamErrorException"),
        ErrorKind::Validation | ErrorKind::InvalidRequest | ErrorKind::Config => {
            (400, "ValidationException")
        }
        ErrorKind::AccessDenied => (403, "AccessDeniedException"),
        ErrorKind::Authentication => (403, "UnrecognizedClientException"),
        ErrorKind::NotFound => (404, "ResourceNotFoundException"),
        ErrorKind::AllTargetsFailed if refused => (429, "ThrottlingException"),
        ErrorKind::AllTargetsFailed if every(|k| k == ErrorKind::Timeout) => {
            (408, "ModelTimeoutException")
        }
        ErrorKind::Unavailable | ErrorKind::Transport | ErrorKind::AllTargetsFailed => {
            (503, "ServiceUnavailableException")
        }
        _ => (500, "InternalServerException"),
    }
}

/// The exception ending a ConverseStream for an error: one of the five its event union has
/// (an SDK reads any other as an unknown event, without its code or message).
fn stream_exception(e: &Error) -> &'static str {
    match aws_error(e).1 {
        "ThrottlingException" | "ServiceQuotaExceededException" | "ModelNotReadyException" => {
            "throttlingException"
        }
        "ValidationException" => "validationException",
        "ModelTimeoutException" | "ModelErrorException" | "ModelStreamErrorException" => {
            "modelStreamErrorException"
        }
        "ServiceUnavailableException" => "serviceUnavailableException",
        _ => "internalServerException",
    }
}

/// The OpenAI API's error object for an error, its status (connection-level classes, which
/// carry none, as 504 and 502), and whether it is the SDKs' timeout.
fn openai_error(e: &Error) -> (u16, Value, bool) {
    let attempts: Vec<&str> = match e {
        Error::AllTargetsFailed { attempts, .. } => {
            attempts.iter().map(|a| a.kind.as_str()).collect()
        }
        _ => Vec::new(),
    };
    let sdk = sdk_error(e.kind().as_str(), attempts);
    let status = sdk.status.unwrap_or(if sdk.class == "APITimeoutError" {
        504
    } else {
        502
    });
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        _ => "api_error",
    };
    (
        status,
        json!({ "error": { "message": e.to_string(), "type": kind, "code": e.kind().as_str(), "param": param(e) } }),
        sdk.class == "APITimeoutError",
    )
}

/// The request field an error names, as the OpenAI API's `param` (a bad request's path).
fn param(e: &Error) -> Value {
    match e {
        Error::InvalidRequest { field, .. } => Value::String(field.clone()),
        _ => Value::Null,
    }
}

fn error_answer(route: &Route, e: &Error) -> Answer {
    if route.is_aws() {
        let (status, code) = aws_error(e);
        let mut a = json_answer(status, &json!({ "message": e.to_string() }));
        a.headers.push(("x-amzn-errortype".into(), code.into()));
        // Laneway retried already; the anthropic SDK's Bedrock clients honour this.
        a.headers.push(("x-should-retry".into(), "false".into()));
        a
    } else {
        let (status, body, timed_out) = openai_error(e);
        let mut a = json_answer(status, &body);
        // Laneway retried already, within the call's budget and deadline.
        a.headers.push(("x-should-retry".into(), "false".into()));
        if timed_out {
            // The SDKs raise their timeout error for a timeout of the transport's, not for a
            // status: the seam raises one on this header.
            a.headers.push((TIMED_OUT.into(), "1".into()));
        }
        a
    }
}

/// How a stream's events become bytes.
enum Writer {
    Converse(ConverseEvents),
    Invoke(InvokeEvents),
    OpenAi { api: Api, encoder: Encoder },
}

impl Writer {
    fn content_type(&self) -> &'static str {
        match self {
            Writer::Converse(_) | Writer::Invoke(_) => eventstream::CONTENT_TYPE,
            Writer::OpenAi { .. } => "text/event-stream",
        }
    }

    /// The stream's headers: its content type, and for InvokeModelWithResponseStream the
    /// chunks' own (which botocore requires).
    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![("content-type".into(), self.content_type().into())];
        if let Writer::Invoke(_) = self {
            headers.push((
                "x-amzn-bedrock-content-type".into(),
                "application/json".into(),
            ));
        }
        headers
    }

    fn write(&mut self, events: &[StreamEvent]) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Writer::Converse(w) => {
                for e in events {
                    for (event_type, payload) in w.on(e) {
                        out.extend(eventstream::event(event_type, &payload));
                    }
                }
            }
            Writer::Invoke(w) => {
                for e in events {
                    for chunk in w.on(e) {
                        out.extend(eventstream::event("chunk", &chunk));
                    }
                }
            }
            Writer::OpenAi { api, encoder } => {
                for v in encoder.on_all(events) {
                    sse(&mut out, *api, &v);
                }
            }
        }
        out
    }

    /// What ends a stream that completed.
    fn trailer(&self) -> Vec<u8> {
        match self {
            Writer::OpenAi { api: Api::Chat, .. } => b"data: [DONE]\n\n".to_vec(),
            _ => Vec::new(),
        }
    }

    /// What ends a stream that failed.
    fn failure(&self, e: &Error) -> Vec<u8> {
        match self {
            Writer::Converse(_) | Writer::Invoke(_) => {
                eventstream::exception(stream_exception(e), &e.to_string())
            }
            Writer::OpenAi { api, .. } => {
                let (_, body, _) = openai_error(e);
                let mut out = Vec::new();
                let event = match api {
                    Api::Chat => body,
                    Api::Responses => {
                        json!({ "type": "error", "code": e.kind().as_str(), "message": e.to_string(), "param": param(e) })
                    }
                };
                sse(&mut out, *api, &event);
                out
            }
        }
    }
}

fn sse(out: &mut Vec<u8>, api: Api, event: &Value) {
    if api == Api::Responses
        && let Some(t) = event.get("type").and_then(Value::as_str)
    {
        out.extend_from_slice(format!("event: {t}\n").as_bytes());
    }
    out.extend_from_slice(b"data: ");
    out.extend(serde_json::to_vec(event).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
}

/// How many of the core's events one read takes.
const BURST: usize = 64;

async fn streamed(route: &Route, stream: LazyStream, mut writer: Writer, traced: bool) -> Answer {
    // The service answers an error status when a call fails before its stream starts: the
    // first events are awaited before the status is written.
    let first = match stream.next_batch(BURST).await {
        Ok(events) => events,
        Err(e) => return failed(route, &e),
    };
    let mut ahead = VecDeque::new();
    let done = first.is_empty();
    let decision = completed_decision(&first);
    let ended = completed(&first).filter(|_| traced);
    let bytes = writer.write(&first);
    if !bytes.is_empty() {
        ahead.push_back(bytes);
    }
    let trailer = writer.trailer();
    if done && !trailer.is_empty() {
        ahead.push_back(trailer);
    }
    Answer {
        status: 200,
        headers: writer.headers(),
        body: Body::Stream(Box::new(BodyStream {
            stream,
            state: Mutex::new(StreamState {
                writer,
                ahead,
                done,
                closed: false,
                decision,
                ended,
                traced,
            }),
        })),
        ended: None,
    }
}

/// A streamed answer's body, read chunk by chunk; dropping or closing it cancels the call.
pub struct BodyStream {
    stream: LazyStream,
    state: Mutex<StreamState>,
}

impl std::fmt::Debug for BodyStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyStream").finish_non_exhaustive()
    }
}

struct StreamState {
    writer: Writer,
    ahead: VecDeque<Vec<u8>>,
    done: bool,
    /// Closed by the reader: nothing more is handed out.
    closed: bool,
    /// The completed call's decision headers, once its last event has been read.
    decision: Option<Vec<(String, String)>>,
    /// How the call ended, once it has (its last event read, or its failure), when traced.
    ended: Option<Ended>,
    traced: bool,
}

/// The call a batch of events completes, if it does.
fn completed(events: &[StreamEvent]) -> Option<Ended> {
    events.iter().find_map(|e| match e {
        StreamEvent::Completed(r) => Some(Ended::Answered(r.clone())),
        _ => None,
    })
}

/// The decision headers of the call a batch of events completes, if it does.
fn completed_decision(events: &[StreamEvent]) -> Option<Vec<(String, String)>> {
    events.iter().find_map(|e| match e {
        StreamEvent::Completed(r) => Some(decision_headers(r)),
        _ => None,
    })
}

impl BodyStream {
    fn state(&self) -> std::sync::MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes already at hand, or `None` when the next chunk needs a read (`Some(None)`: the
    /// end).
    fn ready(&self) -> Option<Option<Vec<u8>>> {
        let mut s = self.state();
        if let Some(chunk) = s.ahead.pop_front() {
            return Some(Some(chunk));
        }
        s.done.then_some(None)
    }

    /// Writes what a read brought; `None` when it made no bytes (read again).
    fn take(&self, read: crate::types::Result<Vec<StreamEvent>>) -> Option<Option<Vec<u8>>> {
        let mut s = self.state();
        if s.closed {
            // Closed while this read waited: its end is no completion.
            return Some(None);
        }
        match read {
            Ok(events) if events.is_empty() => {
                s.done = true;
                Some(Some(s.writer.trailer()).filter(|t| !t.is_empty()))
            }
            Ok(events) => {
                if let Some(decision) = completed_decision(&events) {
                    s.decision = Some(decision);
                }
                if s.traced
                    && let Some(ended) = completed(&events)
                {
                    s.ended = Some(ended);
                }
                let bytes = s.writer.write(&events);
                (!bytes.is_empty()).then_some(Some(bytes))
            }
            Err(e) => {
                s.done = true;
                if s.traced {
                    s.ended = Some(Ended::Failed(Box::new(super::ErrorDetails::of(&e))));
                }
                Some(Some(s.writer.failure(&e)))
            }
        }
    }

    /// The next chunk of the body; `None` after the last. A failure mid-stream is written as
    /// the protocol's own (an exception frame, an error event) and ends it.
    pub async fn next_chunk(&self) -> Option<Vec<u8>> {
        loop {
            if let Some(ready) = self.ready() {
                return ready;
            }
            if let Some(chunk) = self.take(self.stream.next_batch(BURST).await) {
                return chunk;
            }
        }
    }

    /// [`next_chunk`](Self::next_chunk) for a thread outside the runtime.
    pub fn next_chunk_blocking(&self, runtime: &tokio::runtime::Handle) -> Option<Vec<u8>> {
        loop {
            if let Some(ready) = self.ready() {
                return ready;
            }
            if let Some(chunk) = self.take(self.stream.next_batch_blocking(runtime, BURST)) {
                return chunk;
            }
        }
    }

    /// What the call's span gets at its end, once the stream has ended (its last event read,
    /// or its failure); `None` before, and for a stream closed early (cancelled).
    pub fn span_end(&self) -> Option<Value> {
        self.state().ended.as_ref().map(Ended::span_end)
    }

    /// Laneway's decision on the call, as the `x-laneway-*` headers a whole answer carries
    /// ([`decision_headers`]), once the stream has delivered its last event; empty before,
    /// and for a call that failed.
    pub fn decision_headers(&self) -> Vec<(String, String)> {
        self.state().decision.clone().unwrap_or_default()
    }

    /// Ends the body now, cancelling the call; a read waiting on it ends too.
    pub async fn close(&self) {
        self.mark_closed();
        self.stream.close().await;
    }

    /// [`close`](Self::close) for a thread outside the runtime.
    pub fn close_blocking(&self) {
        self.mark_closed();
        self.stream.close_blocking();
    }

    fn mark_closed(&self) {
        let mut s = self.state();
        s.done = true;
        s.closed = true;
        s.ahead.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_throttled_everywhere_whose_last_try_ran_out_of_time_is_a_throttle() {
        let attempt = |kind: ErrorKind, code: &str| crate::types::FailedAttempt {
            target: "m".into(),
            region: "us-east-1".into(),
            model: "m".into(),
            provider: crate::types::Provider::Bedrock,
            api: crate::types::Api::Converse,
            tier: None,
            kind,
            code: code.into(),
            message: String::new(),
            http_status: None,
            request_id: None,
        };
        let all = |attempts| Error::AllTargetsFailed {
            attempts,
            budget_exhausted: false,
        };
        let throttled = attempt(ErrorKind::Throttled, "ThrottlingException");
        let cut = attempt(ErrorKind::Timeout, "DeadlineExceeded");
        assert_eq!(
            aws_error(&all(vec![
                throttled.clone(),
                throttled.clone(),
                cut.clone()
            ])),
            (429, "ThrottlingException")
        );
        // Timed out everywhere: a timeout; a mix with an outage: unavailable.
        assert_eq!(
            aws_error(&all(vec![cut.clone()])).1,
            "ModelTimeoutException"
        );
        let down = attempt(ErrorKind::Unavailable, "ServiceUnavailableException");
        assert_eq!(
            aws_error(&all(vec![throttled, down, cut])).1,
            "ServiceUnavailableException"
        );
    }

    fn fields_written_for(path: &str, config: &crate::config::Config) -> Option<String> {
        let body = json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }],
            "inferenceConfig": { "topK": 5 },
        });
        let route = Route::of("POST", path).unwrap();
        match read(&route, &[], body.to_string().as_bytes())
            .unwrap()
            .for_config(config)
        {
            Read::Invoke { request, .. } => request.model_fields.unwrap().model,
            _ => unreachable!("an InvokeModel path"),
        }
    }

    #[test]
    fn model_fields_for_an_alias_or_a_family_go_with_the_model_the_plan_picks() {
        let config = crate::config::Config::from_toml_str(
            "[aliases]\n\"fast\" = { model = \"amazon.nova-lite-v1:0\" }\n",
        )
        .unwrap();
        assert_eq!(fields_written_for("/model/fast/invoke", &config), None);
        assert_eq!(fields_written_for("/model/nova/invoke", &config), None);
        assert_eq!(
            fields_written_for("/model/amazon.nova-lite-v1%3A0/invoke", &config).as_deref(),
            Some("amazon.nova-lite-v1:0")
        );
    }
}
