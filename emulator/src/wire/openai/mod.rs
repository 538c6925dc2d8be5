//! Bedrock's OpenAI-compatible Chat Completions and Responses APIs
//! (docs/research/openai-endpoints.md): on bedrock-runtime at `/openai/v1/chat/completions` and
//! `/openai/v1/responses`, on bedrock-mantle at `/v1/...` and `/openai/v1/...`, signed with
//! SigV4 (service `bedrock` or `bedrock-mantle`) or carrying a Bedrock API key as
//! `Authorization: Bearer`. A body is read into the Converse request it means, so that
//! admission, quotas, faults, the time scale, structured output and forced tool calls behave as
//! they do for Converse; answers and errors come back in OpenAI's shapes, whole or as
//! server-sent events. This module: the routes, which endpoint serves which model, auth and
//! errors; `chat` and `responses`: each API's reading and answers.

mod caching;
mod chat;
mod responses;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::{authenticate, request_id, with_wire_fault};
use crate::engine::{Answer, ApiError, Engine, Service};
use chat::chat_completions;
use responses::responses;

/// The routes of both endpoints. bedrock-runtime's are `/openai/v1/...`; bedrock-mantle's are
/// `/v1/...` and, for models it serves under `/openai/v1`, `/mantle/openai/v1/...` here (on AWS
/// the host tells the two endpoints apart; here one host serves both).
pub(crate) fn routes() -> Router<Arc<Engine>> {
    const RUNTIME: Surface = Surface::Runtime;
    const MANTLE: Surface = Surface::Mantle { prefix: "v1" };
    const MANTLE_OPENAI: Surface = Surface::Mantle {
        prefix: "openai/v1",
    };
    macro_rules! on {
        ($surface:expr, $handler:ident) => {
            post(|state, method, uri, headers, body| {
                $handler($surface, state, method, uri, headers, body)
            })
        };
    }
    Router::new()
        .route(
            "/openai/v1/chat/completions",
            on!(RUNTIME, chat_completions),
        )
        .route("/openai/v1/responses", on!(RUNTIME, responses))
        .route("/v1/chat/completions", on!(MANTLE, chat_completions))
        .route("/v1/responses", on!(MANTLE, responses))
        .route(
            "/mantle/openai/v1/chat/completions",
            on!(MANTLE_OPENAI, chat_completions),
        )
        .route("/mantle/openai/v1/responses", on!(MANTLE_OPENAI, responses))
        // bedrock-mantle's `/v1` behind one endpoint URL with bedrock-runtime (Laneway sends
        // mantle calls to `{endpoint_url}/mantle`); `/v1` alone serves `base_url` users.
        .route("/mantle/v1/chat/completions", on!(MANTLE, chat_completions))
        .route("/mantle/v1/responses", on!(MANTLE, responses))
        .route("/mantle/v1/models", axum::routing::get(models))
        .route("/v1/models", axum::routing::get(models))
}

/// Which endpoint a call came to.
#[derive(Debug, Clone, Copy)]
enum Surface {
    Runtime,
    Mantle { prefix: &'static str },
}

/// The two APIs, by the path segment naming them.
#[derive(Debug, Clone, Copy)]
enum Api {
    ChatCompletions,
    Responses,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::ChatCompletions => "chat_completions",
            Api::Responses => "responses",
        }
    }
    fn path(self) -> &'static str {
        match self {
            Api::ChatCompletions => "chat/completions",
            Api::Responses => "responses",
        }
    }
}

/// The id the engine serves for `requested` on `surface`, or the error Bedrock gives: on
/// runtime the model's own id or one of its profiles, on mantle its mantle id (never a profile)
/// under its own path prefix; either way only for the APIs the scenario serves it by.
fn served_model(
    engine: &Engine,
    surface: Surface,
    api: Api,
    region: &str,
    requested: &str,
) -> Result<String, ApiError> {
    let unsupported = |path: &str| {
        ApiError::new(
            400,
            "invalid_request_error",
            format!(
                "The model '{requested}' does not support the '/{path}/{}' API.",
                api.path()
            ),
        )
    };
    match surface {
        Surface::Runtime => {
            let (_, bare) = engine.scenario.split_profile(requested);
            let Some(model) = engine.scenario.models.iter().find(|m| m.id == bare) else {
                return Err(ApiError::new(
                    400,
                    "validation_error",
                    "The provided model identifier is invalid.",
                ));
            };
            let served = model
                .openai
                .as_ref()
                .is_some_and(|o| o.runtime.iter().any(|a| a == api.name()));
            if !served {
                return Err(unsupported("openai/v1"));
            }
            Ok(requested.to_string())
        }
        Surface::Mantle { prefix } => {
            let not_found = || {
                ApiError::new(
                    404,
                    "model_not_found",
                    format!(
                        "The model `{requested}` does not exist or you do not have access to it."
                    ),
                )
            };
            let model = engine
                .scenario
                .models
                .iter()
                .find(|m| m.openai.as_ref().and_then(|o| o.mantle_id.as_deref()) == Some(requested))
                .ok_or_else(not_found)?;
            let spec = model.openai.as_ref().ok_or_else(not_found)?;
            if !spec.mantle_serves_in(region, &model.regions) {
                return Err(not_found());
            }
            if spec.mantle_prefix != prefix {
                return Err(ApiError::new(
                    400,
                    "invalid_request_error",
                    format!("model `{requested}` isn't supported on this route"),
                ));
            }
            if !spec.mantle.iter().any(|a| a == api.name()) {
                return Err(unsupported(prefix));
            }
            Ok(model.id.clone())
        }
    }
}

/// bedrock-mantle's model listing (every model it serves, whichever prefix and API).
async fn models(
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, OpenAiError> {
    region_of(
        &engine,
        Surface::Mantle { prefix: "v1" },
        &method,
        &uri,
        &headers,
        &Bytes::new(),
    )?;
    let data: Vec<Value> = engine
        .scenario
        .models
        .iter()
        .filter_map(|m| m.openai.as_ref()?.mantle_id.as_deref())
        .map(|id| json!({ "id": id, "object": "model", "created": 0, "owned_by": "system" }))
        .collect();
    let mut resp = json!({ "object": "list", "data": data })
        .to_string()
        .into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    Ok(resp)
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "code", "param"}}`.
pub(crate) struct OpenAiError(ApiError);

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if e.html {
            // A load balancer's page is the same whatever the API behind it.
            return e.into_response();
        }
        let kind = match e.status {
            400 | 422 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_denied_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            503 => "service_unavailable",
            _ => "server_error",
        };
        let body = json!({ "error": {
            "message": e.message,
            "type": kind,
            "code": e.code,
            "param": null,
        }});
        let mut resp = (status, body.to_string()).into_response();
        let headers = resp.headers_mut();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Some(v) = e
            .retry_after
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.insert("retry-after", v);
        }
        headers.insert("x-amzn-requestid", request_id());
        resp
    }
}

/// The region a call is made in: from its SigV4 scope (service `bedrock` or `bedrock-mantle`),
/// or from the credential inside a short-term Bedrock API key (a presigned
/// `CallWithBearerToken` URL, base64, after `bedrock-api-key-`), which must name one of the
/// scenario's access keys and not have expired.
fn region_of(
    engine: &Arc<Engine>,
    surface: Surface,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<String, ApiError> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(token) = bearer else {
        // bedrock-runtime signs as `bedrock`; mantle as `bedrock-mantle` (OpenAI's SDKs), and
        // some clients say `bedrock` works there too (unresolved: docs/research/openai-endpoints.md).
        return match surface {
            Surface::Runtime => authenticate(engine, "bedrock", method, uri, headers, body),
            Surface::Mantle { .. } => {
                authenticate(engine, "bedrock-mantle", method, uri, headers, body)
                    .or_else(|_| authenticate(engine, "bedrock", method, uri, headers, body))
            }
        };
    };
    let denied = |m: &str| ApiError::new(401, "invalid_api_key", m);
    let url = token
        .strip_prefix("bedrock-api-key-")
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| denied("Invalid API key."))?;
    let query: Map<String, Value> = url
        .split_once('?')
        .map(|(_, q)| q)
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let v = percent_encoding::percent_decode_str(v).decode_utf8_lossy();
            (k.to_string(), Value::String(v.into_owned()))
        })
        .collect();
    let field = |k: &str| query.get(k).and_then(Value::as_str).unwrap_or_default();
    if field("Action") != "CallWithBearerToken" {
        return Err(denied("Invalid API key."));
    }
    let mut scope = field("X-Amz-Credential").split('/');
    let (key_id, _date, region) = (scope.next(), scope.next(), scope.next());
    let known = key_id.is_some_and(|k| {
        engine
            .scenario
            .credentials
            .iter()
            .any(|c| c.access_key_id == k)
    });
    if !known {
        return Err(denied("The API key's credential is not valid."));
    }
    let region = region.unwrap_or_default().to_string();
    if engine.scenario.region(&region).is_none() {
        return Err(denied(
            "The API key was not made for a region this endpoint serves.",
        ));
    }
    let signed = time::PrimitiveDateTime::parse(
        field("X-Amz-Date"),
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
    .map(|t| t.assume_utc().unix_timestamp());
    let expires: i64 = field("X-Amz-Expires").parse().unwrap_or(0);
    let now = now_unix() as i64;
    match signed {
        Ok(t) if now <= t + expires => Ok(region),
        _ => Err(denied("The API key has expired.")),
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The texts of a message's `content`: a string, or a list of parts (`{"type": "text"}`).
fn text_parts(content: Option<&Value>) -> Vec<String> {
    match content {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// The region of an authenticated call and its JSON body.
fn read_request(
    engine: &Arc<Engine>,
    surface: Surface,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(String, Value), ApiError> {
    let region = region_of(engine, surface, method, uri, headers, body)?;
    let v = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("We could not parse the JSON body of your request: {e}"),
        )
    })?;
    Ok((region, v))
}

/// A fresh id for an answer: `prefix` and a process-wide counter (`chatcmpl-emulated...`).
fn next_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A call admitted: the model id as asked, the engine's request and answer, whether it streams.
struct Admitted {
    model: String,
    req: crate::wire::bedrock::Request,
    answer: Answer,
    stream: bool,
}

/// Admits a call whose body means the Chat Completions body `chat` (its own `v` says whether it
/// streams): the model served on this surface by this API, then the Converse request and the
/// engine's admission. `operation` names it in counters (`Stream` is appended for a stream).
fn admit(
    engine: &Engine,
    surface: Surface,
    api: Api,
    region: String,
    chat: &Value,
    v: &Value,
    operation: &'static [&'static str; 2],
) -> Result<Admitted, ApiError> {
    let (model, mut converse) = chat::converse_of(chat)?;
    let served = served_model(engine, surface, api, &region, &model)?;
    let (_, bare) = engine.scenario.split_profile(&served);
    let spec = engine.scenario.models.iter().find(|m| m.id == bare);
    if spec.and_then(|m| m.reasoning) == Some(crate::scenario::ReasoningStyle::OpenAi) {
        // GPT-5.x spell the effort `reasoning.effort` in Converse's native fields.
        if let Some(effort) = converse
            .pointer_mut("/additionalModelRequestFields")
            .and_then(|f| f.as_object_mut())
            .and_then(|f| f.remove("reasoning_effort"))
        {
            converse["additionalModelRequestFields"]["reasoning"] = json!({ "effort": effort });
        }
    }
    let stream = v.get("stream") == Some(&Value::Bool(true));
    let mut req = crate::wire::bedrock::converse_request(
        operation[usize::from(stream)],
        region,
        served,
        &converse,
    )?;
    if let (Surface::Mantle { .. }, Some(m)) = (surface, spec) {
        let tpm = m.performance.tokens_per_minute;
        req.ask.mantle_quota = Some(
            m.openai
                .as_ref()
                .and_then(|o| o.mantle_quota.as_ref())
                .map_or([tpm, tpm], |q| {
                    [q.input_tokens_per_minute, q.output_tokens_per_minute]
                }),
        );
    }
    if let Api::Responses = api {
        let endpoint = match surface {
            Surface::Runtime => "runtime",
            Surface::Mantle { .. } => "mantle",
        };
        let caches = spec
            .and_then(|m| m.openai.as_ref())
            .is_some_and(|o| o.prompt_cache.iter().any(|e| e == endpoint));
        if caches {
            req.ask.cache_points = caching::breakpoints(v)?;
            req.ask.cache_checked = true;
        } else if caching::asks(v) {
            return Err(ApiError::new(
                400,
                "invalid_request_error",
                format!("Prompt caching is not supported for model {model} on this endpoint."),
            ));
        }
    }
    let answer = engine.admit(&req.ask)?;
    Ok(Admitted {
        model,
        req,
        answer,
        stream,
    })
}

/// A whole answer's JSON, with the answer's wire fault, if any.
fn json_answer(body: &Value, answer: &Answer) -> Response {
    let mut resp = body.to_string().into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    with_wire_fault(resp, answer.wire_fault.as_ref(), Service::Bedrock, None)
}

/// A stream of server-sent events, with the answer's wire fault, if any (counted in events:
/// about one per token).
fn sse_answer(
    frames: impl futures::Stream<Item = Bytes> + Send + 'static,
    fault: Option<&crate::faults::Fault>,
) -> Response {
    let mut resp = Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>)).into_response();
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    with_wire_fault(
        resp,
        fault,
        crate::wire::misbehave::Framing::Sse,
        Some(|tokens| tokens as usize + 1),
    )
}
