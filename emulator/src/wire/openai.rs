//! Bedrock's OpenAI-compatible Chat Completions and Responses APIs
//! (docs/research/openai-endpoints.md): on bedrock-runtime at `/openai/v1/chat/completions` and
//! `/openai/v1/responses`, on bedrock-mantle at `/v1/...` and `/openai/v1/...`, signed with SigV4 (service `bedrock` or `bedrock-mantle`) or carrying a
//! Bedrock API key as `Authorization: Bearer`. A body is read into the Converse request it
//! means, so that admission, quotas, faults, the time scale, structured output and forced tool
//! calls behave as they do for Converse; answers and errors come back in OpenAI's shapes, whole
//! or as server-sent events (Chat Completions' chunks ending in `data: [DONE]`; Responses'
//! typed events, `response.created` to `response.completed`).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use base64::Engine as _;
use futures::StreamExt;
use serde_json::{json, Map, Value};

use super::bedrock::{converse_request, stop_reason, Request};
use super::{authenticate, request_id, timeline, wait_whole, with_wire_fault, Step, StreamEnd};
use crate::engine::{Answer, ApiError, Engine, Service};

/// The routes of both endpoints. bedrock-runtime's are `/openai/v1/...`; bedrock-mantle's are
/// `/v1/...` and, for models it serves under `/openai/v1`, `/mantle/openai/v1/...` here (on AWS
/// the host tells the two endpoints apart; here one host serves both).
pub fn routes() -> Router<Arc<Engine>> {
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
    region_of(&engine, &method, &uri, &headers, &Bytes::new())?;
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
pub struct OpenAiError(ApiError);

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
        return authenticate(engine, "bedrock", method, uri, headers, body)
            .or_else(|_| authenticate(engine, "bedrock-mantle", method, uri, headers, body));
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

/// A Chat Completions body as the Converse request it means.
fn converse_of(v: &Value) -> Result<(String, Value), ApiError> {
    let invalid = |m: String| ApiError::new(400, "invalid_request_error", m);
    let model = v
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("you must provide a model parameter".into()))?
        .to_string();
    let list = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("'messages' is a required property".into()))?;
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let texts = text_parts(m.get("content"));
        match role {
            "system" | "developer" => system.extend(texts.into_iter().map(|t| json!({ "text": t }))),
            "user" => messages.push(json!({
                "role": "user",
                "content": texts.into_iter().map(|t| json!({ "text": t })).collect::<Vec<_>>(),
            })),
            "assistant" => {
                let mut content: Vec<Value> =
                    texts.into_iter().map(|t| json!({ "text": t })).collect();
                for call in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
                    content.push(json!({ "toolUse": {
                        "toolUseId": call.get("id"),
                        "name": call.pointer("/function/name"),
                        "input": arguments
                            .and_then(|a| serde_json::from_str::<Value>(a).ok())
                            .unwrap_or_else(|| json!({})),
                    }}));
                }
                messages.push(json!({ "role": "assistant", "content": content }));
            }
            "tool" => messages.push(json!({ "role": "user", "content": [{ "toolResult": {
                "toolUseId": m.get("tool_call_id"),
                "content": [{ "text": texts.concat() }],
            }}]})),
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'. (messages[{i}].role)"
                )))
            }
        }
    }
    let mut c = json!({ "messages": messages });
    if !system.is_empty() {
        c["system"] = Value::Array(system);
    }
    let max_tokens = v
        .get("max_completion_tokens")
        .or_else(|| v.get("max_tokens"))
        .filter(|m| !m.is_null());
    if let Some(m) = max_tokens {
        c["inferenceConfig"] = json!({ "maxTokens": m });
    }
    match v.get("service_tier").and_then(Value::as_str) {
        None | Some("auto" | "default") => {}
        Some(tier) => c["serviceTier"] = json!({ "type": tier }),
    }
    if let Some(tools) = v.get("tools").and_then(Value::as_array) {
        let specs: Vec<Value> = tools
            .iter()
            .map(|t| {
                let f = t.get("function").cloned().unwrap_or_default();
                let mut spec = json!({
                    "name": f.get("name"),
                    "inputSchema": { "json": f.get("parameters").cloned().unwrap_or_else(|| json!({ "type": "object" })) },
                });
                if let Some(d) = f.get("description") {
                    spec["description"] = d.clone();
                }
                if f.get("strict") == Some(&Value::Bool(true)) {
                    spec["strict"] = Value::Bool(true);
                }
                json!({ "toolSpec": spec })
            })
            .collect();
        let choice = match v.get("tool_choice") {
            Some(Value::String(s)) if s == "required" => Some(json!({ "any": {} })),
            Some(Value::Object(o)) => o
                .get("function")
                .and_then(|f| f.get("name"))
                .map(|n| json!({ "tool": { "name": n } })),
            _ => None,
        };
        let mut config = json!({ "tools": specs });
        if let Some(choice) = choice {
            config["toolChoice"] = choice;
        }
        c["toolConfig"] = config;
    }
    if let Some(f) = v.get("response_format") {
        if f.get("type").and_then(Value::as_str) == Some("json_schema") {
            let schema = f
                .pointer("/json_schema/schema")
                .cloned()
                .unwrap_or_default();
            c["outputConfig"] = json!({ "textFormat": { "type": "json_schema", "structure": { "jsonSchema": {
                "schema": schema.to_string(),
                "name": f.pointer("/json_schema/name").cloned().unwrap_or_else(|| json!("response")),
            }}}});
        }
    }
    if let Some(effort) = v.get("reasoning_effort") {
        c["additionalModelRequestFields"] = json!({ "reasoning_effort": effort });
    }
    Ok((model, c))
}

/// A Responses body as the Chat Completions body it means (`instructions`, `input` items,
/// flat function tools, `text.format`, `reasoning.effort`, `max_output_tokens`).
fn chat_of_responses(v: &Value) -> Result<Value, ApiError> {
    let invalid = |m: String| ApiError::new(400, "invalid_request_error", m);
    let mut messages = Vec::new();
    if let Some(i) = v.get("instructions").and_then(Value::as_str) {
        messages.push(json!({ "role": "system", "content": i }));
    }
    match v.get("input") {
        Some(Value::String(text)) => messages.push(json!({ "role": "user", "content": text })),
        Some(Value::Array(items)) => {
            for (n, item) in items.iter().enumerate() {
                let kind = item
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("message");
                match kind {
                    "message" => messages.push(json!({
                        "role": item.get("role"),
                        "content": text_parts(item.get("content")).concat(),
                    })),
                    "function_call" => messages.push(json!({
                        "role": "assistant",
                        "tool_calls": [{ "id": item.get("call_id"), "type": "function", "function": {
                            "name": item.get("name"), "arguments": item.get("arguments"),
                        }}],
                    })),
                    "function_call_output" => messages.push(json!({
                        "role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output"),
                    })),
                    // Earlier reasoning is the model's own; it is not read again.
                    "reasoning" => {}
                    other => {
                        return Err(invalid(format!(
                            "Invalid value: '{other}'. Supported input item types are 'message', 'function_call', 'function_call_output' and 'reasoning'. (input[{n}].type)"
                        )))
                    }
                }
            }
        }
        _ => return Err(invalid("Missing required parameter: 'input'.".into())),
    }
    let mut chat = json!({ "model": v.get("model"), "messages": messages });
    for (from, to) in [
        ("max_output_tokens", "max_completion_tokens"),
        ("service_tier", "service_tier"),
    ] {
        if let Some(x) = v.get(from) {
            chat[to] = x.clone();
        }
    }
    if let Some(tools) = v.get("tools").and_then(Value::as_array) {
        chat["tools"] = tools
            .iter()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
            .map(|t| json!({ "type": "function", "function": t }))
            .collect();
    }
    match v.get("tool_choice") {
        Some(Value::Object(o)) if o.get("type").and_then(Value::as_str) == Some("function") => {
            chat["tool_choice"] =
                json!({ "type": "function", "function": { "name": o.get("name") } });
        }
        Some(other) => chat["tool_choice"] = other.clone(),
        None => {}
    }
    if let Some(f) = v.pointer("/text/format") {
        if f.get("type").and_then(Value::as_str) == Some("json_schema") {
            chat["response_format"] = json!({ "type": "json_schema", "json_schema": {
                "name": f.get("name"), "schema": f.get("schema"),
            }});
        }
    }
    if let Some(effort) = v.pointer("/reasoning/effort").filter(|e| !e.is_null()) {
        chat["reasoning_effort"] = effort.clone();
    }
    Ok(chat)
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

fn finish_reason(answer: &Answer, tool_call: bool) -> &'static str {
    if tool_call {
        return "tool_calls";
    }
    match stop_reason(answer) {
        "max_tokens" => "length",
        "guardrail_intervened" => "content_filter",
        _ => "stop",
    }
}

fn usage(answer: &Answer, output: u32) -> Value {
    let input = answer.reported_input_tokens() + answer.cache.read + answer.cache.write;
    json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": { "cached_tokens": answer.cache.read },
        "completion_tokens_details": { "reasoning_tokens": answer.reasoning_tokens },
    })
}

fn completion_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "chatcmpl-emulated{:08x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn chat_completions(
    surface: Surface,
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OpenAiError> {
    let region = region_of(&engine, &method, &uri, &headers, &body)?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("We could not parse the JSON body of your request: {e}"),
        )
    })?;
    let (model, converse) = converse_of(&v)?;
    let served = served_model(&engine, surface, Api::ChatCompletions, &model)?;
    let stream = v.get("stream") == Some(&Value::Bool(true));
    let operation = if stream {
        "ChatCompletionsStream"
    } else {
        "ChatCompletions"
    };
    let req = converse_request(operation, region, served, &converse)?;
    let answer = engine.admit(&req.ask)?;
    if stream {
        let include_usage = v.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
        return Ok(stream_response(engine, req, answer, model, include_usage));
    }
    wait_whole(&answer).await;
    let (content, tool_calls, output) = match &req.tool_call {
        Some(t) => (
            Value::Null,
            json!([{ "id": t.id, "type": "function", "function": { "name": t.name, "arguments": t.input.to_string() } }]),
            answer.reasoning_tokens as u32
                + crate::text::estimate_tokens(t.input.to_string().len()),
        ),
        None => (
            Value::String(answer.text()),
            Value::Null,
            answer.output_tokens(),
        ),
    };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": null });
    if !tool_calls.is_null() {
        message["tool_calls"] = tool_calls;
    }
    let body = json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": now_unix(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason(&answer, req.tool_call.is_some()),
            "logprobs": null,
        }],
        "usage": usage(&answer, output),
        "service_tier": answer.served_tier,
    });
    let mut resp = body.to_string().into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    Ok(with_wire_fault(
        resp,
        answer.wire_fault.as_ref(),
        Service::Bedrock,
        None,
    ))
}

fn response_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("resp_emulated{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What a Responses answer is made of, for its whole form and its events alike.
struct ResponseShape {
    id: String,
    created_at: u64,
    model: String,
    tools: Value,
    tool_choice: Value,
    service_tier: String,
}

impl ResponseShape {
    /// The `response` object with these items and usage, in this status.
    fn object(&self, status: &str, output: Vec<Value>, usage: Value, incomplete: bool) -> Value {
        json!({
            "id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "model": self.model, "output": output, "usage": usage,
            "parallel_tool_calls": true, "tool_choice": self.tool_choice, "tools": self.tools,
            "error": null,
            "incomplete_details": if incomplete { json!({ "reason": "max_output_tokens" }) } else { Value::Null },
            "instructions": null, "metadata": {}, "text": { "format": { "type": "text" } },
            "truncation": "disabled", "service_tier": self.service_tier, "store": false,
        })
    }
}

fn responses_usage(answer: &Answer, output: u32) -> Value {
    let input = answer.reported_input_tokens() + answer.cache.read + answer.cache.write;
    json!({
        "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
        "input_tokens_details": { "cached_tokens": answer.cache.read, "cache_write_tokens": answer.cache.write },
        "output_tokens_details": { "reasoning_tokens": answer.reasoning_tokens },
    })
}

fn text_item(id: &str, text: &str, status: &str) -> Value {
    json!({ "type": "message", "id": id, "status": status, "role": "assistant", "content": [
        { "type": "output_text", "text": text, "annotations": [], "logprobs": [] },
    ]})
}

fn call_item(call: &super::bedrock::ToolCall, arguments: &str, status: &str) -> Value {
    json!({ "type": "function_call", "id": format!("fc_{}", call.id), "call_id": call.id,
        "name": call.name, "arguments": arguments, "status": status })
}

async fn responses(
    surface: Surface,
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OpenAiError> {
    let region = region_of(&engine, &method, &uri, &headers, &body)?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("We could not parse the JSON body of your request: {e}"),
        )
    })?;
    if v.get("background") == Some(&Value::Bool(true)) {
        return Err(ApiError::new(
            400,
            "invalid_request_error",
            "background mode is not supported for this request.",
        )
        .into());
    }
    let (model, converse) = converse_of(&chat_of_responses(&v)?)?;
    let served = served_model(&engine, surface, Api::Responses, &model)?;
    let stream = v.get("stream") == Some(&Value::Bool(true));
    let operation = if stream {
        "ResponsesStream"
    } else {
        "Responses"
    };
    let req = converse_request(operation, region, served, &converse)?;
    let answer = engine.admit(&req.ask)?;
    let shape = ResponseShape {
        id: response_id(),
        created_at: now_unix(),
        model,
        tools: v.get("tools").cloned().unwrap_or_else(|| json!([])),
        tool_choice: v
            .get("tool_choice")
            .cloned()
            .unwrap_or_else(|| json!("auto")),
        service_tier: answer.served_tier.clone(),
    };
    if stream {
        return Ok(responses_stream(engine, req, answer, shape));
    }
    wait_whole(&answer).await;
    let mut output = Vec::new();
    let reasoning = answer.reasoning_tokens as u32;
    if reasoning > 0 {
        output
            .push(json!({ "type": "reasoning", "id": format!("rs_{}", shape.id), "summary": [] }));
    }
    let produced = match &req.tool_call {
        Some(t) => {
            output.push(call_item(t, &t.input.to_string(), "completed"));
            reasoning + crate::text::estimate_tokens(t.input.to_string().len())
        }
        None => {
            output.push(text_item(
                &format!("msg_{}", shape.id),
                &answer.text(),
                "completed",
            ));
            answer.output_tokens()
        }
    };
    let incomplete = req.tool_call.is_none() && answer.truncated;
    let status = if incomplete {
        "incomplete"
    } else {
        "completed"
    };
    let body = shape.object(
        status,
        output,
        responses_usage(&answer, produced),
        incomplete,
    );
    let mut resp = body.to_string().into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    Ok(with_wire_fault(
        resp,
        answer.wire_fault.as_ref(),
        Service::Bedrock,
        None,
    ))
}

/// One typed event, with its sequence number.
fn event(kind: &str, seq: &mut u64, mut data: Value) -> Bytes {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(*seq);
    *seq += 1;
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

fn responses_stream(
    engine: Arc<Engine>,
    req: Request,
    answer: Answer,
    shape: ResponseShape,
) -> Response {
    let wire_fault = answer.wire_fault.clone();
    let steps = timeline(&answer);
    let tier = answer.served_tier.clone();
    let frames = async_stream::stream! {
        let answer = answer; // holds the capacity slot for the stream's life
        let mut end = StreamEnd::new(Arc::clone(&engine), req.ask.clone(), tier.clone());
        let mut seq = 0u64;
        let started = shape.object("in_progress", Vec::new(), Value::Null, false);
        yield event("response.created", &mut seq, json!({ "response": started }));
        yield event("response.in_progress", &mut seq, json!({ "response": started }));
        let reasoning = answer.reasoning_tokens;
        let mut output: Vec<Value> = Vec::new();
        let mut steps = std::pin::pin!(steps);
        let mut text = String::new();
        let msg_id = format!("msg_{}", shape.id);
        let mut opened = false;
        let mut produced = answer.output_tokens();
        while let Some(step) = steps.next().await {
            let (i, t) = match step {
                Step::Token(i, t) => (i, t),
                Step::Break => {
                    engine.record_broken_stream(&req.ask, &tier);
                    end.finish();
                    let error = json!({ "type": "server_error", "code": "server_error", "message": "The model stream was interrupted.", "param": null });
                    yield event("error", &mut seq, json!({
                        "code": "server_error", "message": "The model stream was interrupted.", "param": null, "error": error,
                    }));
                    return;
                }
                Step::Done => break,
            };
            if i + 1 == reasoning {
                // Reasoning shows as an item without a summary (Bedrock's summaries are not emulated).
                let item = json!({ "type": "reasoning", "id": format!("rs_{}", shape.id), "summary": [] });
                yield event("response.output_item.added", &mut seq, json!({ "output_index": output.len(), "item": item }));
                yield event("response.output_item.done", &mut seq, json!({ "output_index": output.len(), "item": item }));
                output.push(item);
            }
            if i < reasoning {
                continue;
            }
            if let Some(call) = &req.tool_call {
                let index = output.len();
                let item_id = format!("fc_{}", call.id);
                yield event("response.output_item.added", &mut seq, json!({ "output_index": index, "item": call_item(call, "", "in_progress") }));
                let arguments = call.input.to_string();
                let (a, b) = arguments.split_at(arguments.floor_char_boundary(arguments.len() / 2));
                for part in [a, b] {
                    yield event("response.function_call_arguments.delta", &mut seq, json!({ "item_id": item_id, "output_index": index, "delta": part }));
                }
                yield event("response.function_call_arguments.done", &mut seq, json!({ "item_id": item_id, "output_index": index, "name": call.name, "arguments": arguments }));
                let done = call_item(call, &arguments, "completed");
                yield event("response.output_item.done", &mut seq, json!({ "output_index": index, "item": done }));
                output.push(done);
                produced = reasoning as u32 + crate::text::estimate_tokens(arguments.len());
                break;
            }
            if !opened {
                opened = true;
                yield event("response.output_item.added", &mut seq, json!({ "output_index": output.len(), "item": {
                    "type": "message", "id": msg_id, "status": "in_progress", "role": "assistant", "content": [],
                }}));
                yield event("response.content_part.added", &mut seq, json!({ "item_id": msg_id, "output_index": output.len(), "content_index": 0,
                    "part": { "type": "output_text", "text": "", "annotations": [], "logprobs": [] } }));
            }
            text.push_str(&t);
            yield event("response.output_text.delta", &mut seq, json!({ "item_id": msg_id, "output_index": output.len(), "content_index": 0, "delta": t, "logprobs": [] }));
        }
        if opened {
            let index = output.len();
            yield event("response.output_text.done", &mut seq, json!({ "item_id": msg_id, "output_index": index, "content_index": 0, "text": text, "logprobs": [] }));
            yield event("response.content_part.done", &mut seq, json!({ "item_id": msg_id, "output_index": index, "content_index": 0,
                "part": { "type": "output_text", "text": text, "annotations": [], "logprobs": [] } }));
            let item = text_item(&msg_id, &text, "completed");
            yield event("response.output_item.done", &mut seq, json!({ "output_index": index, "item": item }));
            output.push(item);
        }
        end.finish();
        let incomplete = req.tool_call.is_none() && answer.truncated;
        let (kind, status) = if incomplete { ("response.incomplete", "incomplete") } else { ("response.completed", "completed") };
        let done = shape.object(status, output, responses_usage(&answer, produced), incomplete);
        yield event(kind, &mut seq, json!({ "response": done }));
    };
    let mut resp = Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>)).into_response();
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    with_wire_fault(
        resp,
        wire_fault.as_ref(),
        Service::Bedrock,
        Some(|tokens| tokens as usize + 1),
    )
}

fn sse(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

fn stream_response(
    engine: Arc<Engine>,
    req: Request,
    answer: Answer,
    model: String,
    include_usage: bool,
) -> Response {
    let wire_fault = answer.wire_fault.clone();
    let steps = timeline(&answer);
    let tier = answer.served_tier.clone();
    let id = completion_id();
    let created = now_unix();
    let frames = async_stream::stream! {
        let answer = answer; // holds the capacity slot for the stream's life
        let mut end = StreamEnd::new(Arc::clone(&engine), req.ask.clone(), tier.clone());
        let chunk = |delta: Value, finish: Value| json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "service_tier": tier,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish, "logprobs": null }],
        });
        let mut steps = std::pin::pin!(steps);
        let reasoning = answer.reasoning_tokens;
        let mut output = answer.output_tokens();
        let mut started = false;
        while let Some(step) = steps.next().await {
            let (i, t) = match step {
                Step::Token(i, t) => (i, t),
                Step::Break => {
                    engine.record_broken_stream(&req.ask, &tier);
                    end.finish();
                    yield sse(&json!({ "error": {
                        "message": "The model stream was interrupted.",
                        "type": "server_error",
                        "code": "model_stream_error",
                        "param": null,
                    }}));
                    return;
                }
                Step::Done => break,
            };
            if !started {
                started = true;
                yield sse(&chunk(json!({ "role": "assistant", "content": "" }), Value::Null));
            }
            if i < reasoning {
                continue;
            }
            if let Some(call) = &req.tool_call {
                let arguments = call.input.to_string();
                yield sse(&chunk(json!({ "tool_calls": [{
                    "index": 0, "id": call.id, "type": "function",
                    "function": { "name": call.name, "arguments": "" },
                }]}), Value::Null));
                let (a, b) = arguments.split_at(arguments.floor_char_boundary(arguments.len() / 2));
                for part in [a, b] {
                    yield sse(&chunk(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": part } }] }), Value::Null));
                }
                output = reasoning as u32 + crate::text::estimate_tokens(arguments.len());
                break;
            }
            yield sse(&chunk(json!({ "content": t }), Value::Null));
        }
        let finish = finish_reason(&answer, req.tool_call.is_some());
        yield sse(&chunk(json!({}), json!(finish)));
        end.finish();
        if include_usage {
            yield sse(&json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage(&answer, output),
            }));
        }
        yield Bytes::from_static(b"data: [DONE]\n\n");
    };
    let mut resp = Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>)).into_response();
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    with_wire_fault(
        resp,
        wire_fault.as_ref(),
        Service::Bedrock,
        Some(|tokens| tokens as usize + 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_body_becomes_the_converse_request_it_means() {
        let (model, c) = converse_of(&json!({
            "model": "openai.gpt-oss-120b-1:0",
            "messages": [
                { "role": "system", "content": "Be brief." },
                { "role": "user", "content": [{ "type": "text", "text": "Weather?" }] },
                { "role": "assistant", "content": null, "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Paris\"}" } }] },
                { "role": "tool", "tool_call_id": "c1", "content": "21C" },
            ],
            "max_completion_tokens": 64,
            "service_tier": "flex",
            "tools": [{ "type": "function", "function": { "name": "weather", "parameters": { "type": "object" }, "strict": true } }],
            "tool_choice": { "type": "function", "function": { "name": "weather" } },
            "response_format": { "type": "json_schema", "json_schema": { "name": "r", "schema": { "type": "object" } } },
            "reasoning_effort": "low",
        }))
        .unwrap();
        assert_eq!(model, "openai.gpt-oss-120b-1:0");
        assert_eq!(c["system"][0]["text"], "Be brief.");
        assert_eq!(
            c["messages"][1]["content"][0]["toolUse"]["input"]["city"],
            "Paris"
        );
        assert_eq!(
            c["messages"][2]["content"][0]["toolResult"]["toolUseId"],
            "c1"
        );
        assert_eq!(c["inferenceConfig"]["maxTokens"], 64);
        assert_eq!(c["serviceTier"]["type"], "flex");
        assert_eq!(c["toolConfig"]["toolChoice"]["tool"]["name"], "weather");
        assert_eq!(c["toolConfig"]["tools"][0]["toolSpec"]["strict"], true);
        assert!(c["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"].is_string());
        assert_eq!(c["additionalModelRequestFields"]["reasoning_effort"], "low");
        let e = converse_of(
            &json!({ "model": "m", "messages": [{ "role": "robot", "content": "x" }] }),
        )
        .err()
        .unwrap();
        assert_eq!(e.status, 400);
    }
}
