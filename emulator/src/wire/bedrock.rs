//! Bedrock Runtime: Converse, ConverseStream, InvokeModel and InvokeModelWithResponseStream.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{
    Step, StreamEnd, authenticate, eventstream, parse_json, request_id, timeline, wait_whole,
    with_wire_fault,
};
use crate::engine::{Answer, ApiError, Ask, Engine, Service};
use crate::text;

/// The Bedrock Runtime routes.
pub(crate) fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route("/model/{model_id}/converse", post(converse))
        .route("/model/{model_id}/converse-stream", post(converse_stream))
        .route("/model/{model_id}/invoke", post(invoke))
        .route(
            "/model/{model_id}/invoke-with-response-stream",
            post(invoke_stream),
        )
}

/// A forced tool call, when the request's `toolChoice` demands one.
pub(super) struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

pub(super) struct Request {
    pub ask: Ask,
    pub tool_call: Option<ToolCall>,
}

async fn converse(
    State(engine): State<Arc<Engine>>,
    Path(model_id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let req = read_converse(
        &engine, "Converse", model_id, &method, &uri, &headers, &body,
    )?;
    let answer = engine.admit(&req.ask)?;
    wait_whole(&answer).await;
    let mut content = Vec::new();
    if let Some((text, signature)) = answer.reasoning() {
        content.push(
            json!({ "reasoningContent": { "reasoningText": match signature {
                Some(s) => json!({ "text": text, "signature": s }),
                None => json!({ "text": text }),
            }}}),
        );
    }
    let reasoning = answer.reasoning_tokens as u32;
    let (stop_reason, output_tokens) = match &req.tool_call {
        Some(t) => {
            content.push(
                json!({ "toolUse": { "toolUseId": t.id, "name": t.name, "input": t.input } }),
            );
            (
                "tool_use",
                reasoning + text::estimate_tokens(t.input.to_string().len()),
            )
        }
        None => {
            content.push(match &answer.citation {
                Some(c) => json!({ "citationsContent": {
                    "content": [{ "text": answer.text() }],
                    "citations": [c],
                }}),
                None => json!({ "text": answer.text() }),
            });
            (stop_reason(&answer), answer.output_tokens())
        }
    };
    let mut body = json!({
        "output": { "message": { "role": "assistant", "content": content } },
        "stopReason": stop_reason,
        "usage": usage_with_cache(&answer, output_tokens),
        "metrics": { "latencyMs": started.elapsed().as_millis() as u64 },
        "serviceTier": { "type": answer.served_tier },
    });
    if req.ask.latency_optimized {
        body["performanceConfig"] = json!({ "latency": "optimized" });
    }
    if let Some(trace) = trace_of(&answer) {
        body["trace"] = trace;
    }
    if let Some(fields) = &answer.response_fields {
        body["additionalModelResponseFields"] = fields.clone();
    }
    Ok(with_wire_fault(
        json_response(body),
        answer.wire_fault.as_ref(),
        Service::Bedrock,
        None,
    ))
}

async fn converse_stream(
    State(engine): State<Arc<Engine>>,
    Path(model_id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let req = read_converse(
        &engine,
        "ConverseStream",
        model_id,
        &method,
        &uri,
        &headers,
        &body,
    )?;
    let answer = engine.admit(&req.ask)?;
    let wire_fault = answer.wire_fault.clone();
    let steps = timeline(&answer);
    let tier = answer.served_tier.clone();
    let frames = async_stream::stream! {
        let answer = answer; // holds the capacity slot for the stream's life
        let mut end = StreamEnd::new(Arc::clone(&engine), req.ask.clone(), tier.clone());
        let mut steps = std::pin::pin!(steps);
        let mut output_tokens = answer.output_tokens();
        let mut stop = stop_reason(&answer);
        let reasoning = answer.reasoning_tokens;
        let reasoning_shown = answer.reasoning();
        // The answer's block follows the reasoning's.
        let block = u32::from(reasoning > 0);
        let mut answered = false;
        while let Some(step) = steps.next().await {
            let (i, t) = match step {
                Step::Token(i, t) => (i, t),
                Step::Break => {
                    engine.record_broken_stream(&req.ask, &tier);
                    end.finish();
                    let kind = answer.break_after.as_ref().and_then(|(_, e)| e.clone())
                        .unwrap_or_else(|| "modelStreamErrorException".into());
                    yield eventstream::exception(&kind, &json!({
                        "message": "The model stream was interrupted.",
                        "originalStatusCode": 500,
                    }));
                    return;
                }
                Step::Done => break,
            };
            if i == 0 {
                yield eventstream::json_event("messageStart", &json!({ "role": "assistant" }));
            }
            if i < reasoning {
                // Reasoning streams token by token, or (redacted) as one piece when it ends;
                // its signature closes the block.
                if !answer.reasoning_redacted {
                    yield reasoning_delta(json!({ "text": t }));
                }
                if i + 1 == reasoning {
                    if let Some((shown, signature)) = &reasoning_shown {
                        if answer.reasoning_redacted {
                            yield reasoning_delta(json!({ "text": shown }));
                        }
                        if let Some(s) = signature {
                            yield reasoning_delta(json!({ "signature": s }));
                        }
                    }
                    yield eventstream::json_event("contentBlockStop", &json!({ "contentBlockIndex": 0 }));
                }
                continue;
            }
            if i == reasoning
                && let Some(call) = &req.tool_call {
                    // A forced tool call replaces the text answer.
                    yield eventstream::json_event("contentBlockStart", &json!({
                        "contentBlockIndex": block,
                        "start": { "toolUse": { "toolUseId": call.id, "name": call.name } },
                    }));
                    let input = call.input.to_string();
                    let (a, b) = input.split_at(input.floor_char_boundary(input.len() / 2));
                    for part in [a, b] {
                        yield eventstream::json_event("contentBlockDelta", &json!({
                            "contentBlockIndex": block, "delta": { "toolUse": { "input": part } },
                        }));
                    }
                    output_tokens = reasoning as u32 + text::estimate_tokens(input.len());
                    stop = "tool_use";
                    break;
                }
            answered = true;
            yield delta(block, &t);
        }
        if let (true, Some(c)) = (answered, &answer.citation) {
            yield eventstream::json_event("contentBlockDelta", &json!({
                "contentBlockIndex": block, "delta": { "citation": c },
            }));
        }
        if answered || req.tool_call.is_some() {
            yield eventstream::json_event("contentBlockStop", &json!({ "contentBlockIndex": block }));
        }
        let mut message_stop = json!({ "stopReason": stop });
        if let Some(fields) = &answer.response_fields {
            message_stop["additionalModelResponseFields"] = fields.clone();
        }
        yield eventstream::json_event("messageStop", &message_stop);
        end.finish();
        let mut metadata = json!({
            "usage": usage_with_cache(&answer, output_tokens),
            "metrics": { "latencyMs": started.elapsed().as_millis() as u64 },
            "serviceTier": { "type": tier },
        });
        if req.ask.latency_optimized {
            metadata["performanceConfig"] = json!({ "latency": "optimized" });
        }
        if let Some(trace) = trace_of(&answer) {
            metadata["trace"] = trace;
        }
        yield eventstream::json_event("metadata", &metadata);
    };
    // Frames: messageStart, then one contentBlockDelta per token.
    Ok(with_wire_fault(
        event_stream_response(frames),
        wire_fault.as_ref(),
        Service::Bedrock,
        Some(|tokens| tokens as usize + 1),
    ))
}

/// A response's `trace`: the prompt router's choice and the guardrail's assessment.
fn trace_of(answer: &Answer) -> Option<Value> {
    let mut trace = serde_json::Map::new();
    if let Some(id) = &answer.invoked_model {
        trace.insert("promptRouter".into(), json!({ "invokedModelId": id }));
    }
    if let Some(g) = &answer.guardrail.trace {
        trace.insert("guardrail".into(), g.clone());
    }
    (!trace.is_empty()).then_some(Value::Object(trace))
}

fn delta(block: u32, token: &str) -> Bytes {
    eventstream::json_event(
        "contentBlockDelta",
        &json!({ "contentBlockIndex": block, "delta": { "text": token } }),
    )
}

/// A piece of the reasoning block (always the first, index 0).
fn reasoning_delta(piece: Value) -> Bytes {
    eventstream::json_event(
        "contentBlockDelta",
        &json!({ "contentBlockIndex": 0, "delta": { "reasoningContent": piece } }),
    )
}

fn read_converse(
    engine: &Arc<Engine>,
    operation: &'static str,
    model_id: String,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Request, ApiError> {
    let region = authenticate(engine, "bedrock", method, uri, headers, body)?;
    let v = parse_json(Service::Bedrock, body)?;
    let (_, bare) = engine.scenario.split_profile(&model_id);
    if engine
        .scenario
        .models
        .iter()
        .any(|m| m.id == bare && !m.converse)
    {
        // Served only by bedrock-mantle's OpenAI-compatible APIs (GPT-5.4, GPT-5.5).
        return Err(ApiError::new(
            400,
            "ValidationException",
            "The provided model identifier is invalid.",
        ));
    }
    converse_request(operation, region, model_id, &v)
}

/// A Converse request body (already authenticated, in `region`) as the engine's ask; the
/// OpenAI-compatible endpoints translate their bodies into it too.
pub(super) fn converse_request(
    operation: &'static str,
    region: String,
    model_id: String,
    v: &Value,
) -> Result<Request, ApiError> {
    let invalid = |m: &str| ApiError::validation(Service::Bedrock, m);
    let messages = v.get("messages").and_then(Value::as_array).ok_or_else(|| {
        invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
    })?;
    if messages
        .first()
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str)
        != Some("user")
    {
        return Err(invalid(
            "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
        ));
    }
    let max_tokens = match v.pointer("/inferenceConfig/maxTokens") {
        None => None,
        Some(m) => match m.as_i64() {
            Some(n) if n >= 1 => Some(n as u32),
            _ => {
                return Err(invalid(&format!(
                    "1 validation error detected: Value '{m}' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1"
                )));
            }
        },
    };
    let tier = v
        .pointer("/serviceTier/type")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    let latency_optimized = match v.pointer("/performanceConfig/latency") {
        None => false,
        Some(l) => match l.as_str() {
            Some("optimized") => true,
            Some("standard") => false,
            _ => {
                return Err(invalid(&format!(
                    "1 validation error detected: Value '{l}' at 'performanceConfig.latency' failed to satisfy constraint: Member must satisfy enum value set: [standard, optimized]"
                )));
            }
        },
    };
    let prompt = json!([v.get("system"), v.get("messages"), v.get("toolConfig")]);
    let cache_points = crate::cache::cache_points(v);
    // A final assistant message is a prefill: the answer is that of the prompt before it.
    let (prompt_messages, prefill) = split_prefill(messages);
    let digest = text::digest64(&[Value::Array(prompt_messages.to_vec())
        .to_string()
        .as_bytes()]);
    Ok(Request {
        ask: Ask {
            service: Service::Bedrock,
            operation,
            region,
            target: model_id,
            tier,
            input_tokens: text::estimate_tokens(text::json_text_chars(&prompt)).max(1),
            max_tokens,
            prompt_digest: digest,
            cache_points,
            cache_checked: false,
            prefill,
            extras: Some(Arc::new(
                crate::converse_ext::read(v).map_err(|m| invalid(&m))?,
            )),
            guard: guard_ask(v).map(Arc::new),
            echo: echo(messages),
            latency_optimized,
            mantle_quota: None,
        },
        tool_call: forced_tool_call(v, digest),
    })
}

/// The request's guardrail and what it evaluates: the `guardContent` blocks (of the messages and
/// the system prompt), or every text of the messages when there are none. Tool results are
/// never evaluated.
fn guard_ask(v: &Value) -> Option<crate::guardrail::GuardAsk> {
    let config = v.get("guardrailConfig")?;
    let field = |k: &str| {
        config
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let blocks = || {
        let system = v
            .get("system")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let messages = v
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten();
        system.chain(messages)
    };
    let guarded: Vec<&str> = blocks()
        .filter_map(|b| b.pointer("/guardContent/text/text").and_then(Value::as_str))
        .collect();
    let input = if guarded.is_empty() {
        let messages = v
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        messages
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        guarded.join("\n")
    };
    Some(crate::guardrail::GuardAsk {
        identifier: field("guardrailIdentifier"),
        version: field("guardrailVersion"),
        trace: config
            .get("trace")
            .and_then(Value::as_str)
            .unwrap_or("disabled")
            .to_string(),
        input,
    })
}

/// The words after `Echo: ` in the last user message, which the emulated model answers
/// verbatim.
fn echo(messages: &[Value]) -> Option<String> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    last.get("content")?
        .as_array()?
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .find_map(|t| t.strip_prefix("Echo: "))
        .map(String::from)
}

/// Splits a Converse conversation that ends with an assistant message into the messages
/// before it and the text of that prefill.
fn split_prefill(messages: &[Value]) -> (&[Value], Option<String>) {
    match messages.split_last() {
        Some((last, before)) if last.get("role").and_then(Value::as_str) == Some("assistant") => {
            let text = last
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (before, Some(text))
        }
        _ => (messages, None),
    }
}

/// `toolChoice: {any: {}}` or `{tool: {name}}` forces a call; `auto` gets a text answer.
fn forced_tool_call(v: &Value, digest: u64) -> Option<ToolCall> {
    let choice = v.pointer("/toolConfig/toolChoice")?;
    let tools = v.pointer("/toolConfig/tools")?.as_array()?;
    let specs = tools.iter().filter_map(|t| t.get("toolSpec"));
    let spec = if let Some(name) = choice.pointer("/tool/name").and_then(Value::as_str) {
        specs
            .clone()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
    } else if choice.get("any").is_some() {
        specs.clone().next()
    } else {
        None
    }?;
    let mut input = serde_json::Map::new();
    if let Some(props) = spec
        .pointer("/inputSchema/json/properties")
        .and_then(Value::as_object)
    {
        for (k, p) in props {
            let value = match p.get("type").and_then(Value::as_str) {
                Some("string") => json!("example"),
                Some("integer") | Some("number") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => Value::Null,
            };
            input.insert(k.clone(), value);
        }
    }
    Some(ToolCall {
        id: format!("tooluse_{digest:016x}"),
        name: spec.get("name")?.as_str()?.to_string(),
        input: Value::Object(input),
    })
}

async fn invoke(
    State(engine): State<Arc<Engine>>,
    Path(model_id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (ask, native) = read_invoke(
        &engine,
        "InvokeModel",
        model_id,
        &method,
        &uri,
        &headers,
        &body,
    )?;
    let answer = engine.admit(&ask)?;
    wait_whole(&answer).await;
    let out = native.whole(&answer);
    let mut resp = json_response(out);
    let h = resp.headers_mut();
    h.insert(
        "x-amzn-bedrock-input-token-count",
        answer.input_tokens.into(),
    );
    h.insert(
        "x-amzn-bedrock-output-token-count",
        answer.output_tokens().into(),
    );
    served_headers(h, &answer, &ask);
    Ok(with_wire_fault(
        resp,
        answer.wire_fault.as_ref(),
        Service::Bedrock,
        None,
    ))
}

async fn invoke_stream(
    State(engine): State<Arc<Engine>>,
    Path(model_id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (ask, native) = read_invoke(
        &engine,
        "InvokeModelWithResponseStream",
        model_id,
        &method,
        &uri,
        &headers,
        &body,
    )?;
    let answer = engine.admit(&ask)?;
    let wire_fault = answer.wire_fault.clone();
    let steps = timeline(&answer);
    let mut served = HeaderMap::new();
    served_headers(&mut served, &answer, &ask);
    let tier = answer.served_tier.clone();
    let frames = async_stream::stream! {
        let answer = answer;
        let mut end = StreamEnd::new(Arc::clone(&engine), ask.clone(), tier.clone());
        let mut steps = std::pin::pin!(steps);
        while let Some(step) = steps.next().await {
            match step {
                Step::Token(_, t) => yield chunk(&native.delta(&t)),
                Step::Break => {
                    engine.record_broken_stream(&ask, &tier);
                    end.finish();
                    yield eventstream::exception("modelStreamErrorException", &json!({
                        "message": "The model stream was interrupted.", "originalStatusCode": 500,
                    }));
                    return;
                }
                Step::Done => break,
            }
        }
        end.finish();
        yield chunk(&native.last(&answer));
    };
    // Frames: one chunk per token.
    let mut resp = event_stream_response(frames);
    resp.headers_mut().extend(served);
    Ok(with_wire_fault(
        resp,
        wire_fault.as_ref(),
        Service::Bedrock,
        Some(|tokens| tokens as usize),
    ))
}

/// InvokeModel's headers for the tier that served and latency-optimized inference.
fn served_headers(h: &mut HeaderMap, answer: &Answer, ask: &Ask) {
    if let Ok(v) = HeaderValue::from_str(&answer.served_tier) {
        h.insert("x-amzn-bedrock-service-tier", v);
    }
    if ask.latency_optimized {
        h.insert(
            "x-amzn-bedrock-performanceconfig-latency",
            HeaderValue::from_static("optimized"),
        );
    }
}

fn chunk(payload: &Value) -> Bytes {
    let b64 = base64::engine::general_purpose::STANDARD.encode(payload.to_string());
    eventstream::json_event("chunk", &json!({ "bytes": b64 }))
}

/// The model's native body format for InvokeModel.
/// The native body formats InvokeModel speaks.
pub(crate) enum Native {
    Anthropic,
    Nova,
}

impl Native {
    /// The whole answer in the model's native response format.
    pub(crate) fn whole(&self, a: &Answer) -> Value {
        match self {
            Native::Anthropic => json!({
                "id": "msg_emulated", "type": "message", "role": "assistant", "model": a.model,
                "content": [{ "type": "text", "text": a.text() }],
                "stop_reason": if a.truncated { "max_tokens" } else { "end_turn" },
                "usage": { "input_tokens": a.input_tokens, "output_tokens": a.output_tokens() },
            }),
            Native::Nova => json!({
                "output": { "message": { "role": "assistant", "content": [{ "text": a.text() }] } },
                "stopReason": stop_reason(a),
                "usage": usage(a.input_tokens, a.output_tokens()),
            }),
        }
    }
    fn delta(&self, token: &str) -> Value {
        match self {
            Native::Anthropic => json!({
                "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": token },
            }),
            Native::Nova => {
                json!({ "contentBlockDelta": { "delta": { "text": token }, "contentBlockIndex": 0 } })
            }
        }
    }
    fn last(&self, a: &Answer) -> Value {
        match self {
            Native::Anthropic => json!({
                "type": "message_stop",
                "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": a.input_tokens, "outputTokenCount": a.output_tokens(),
                },
            }),
            Native::Nova => json!({
                "messageStop": { "stopReason": stop_reason(a) },
                "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": a.input_tokens, "outputTokenCount": a.output_tokens(),
                },
            }),
        }
    }
}

fn read_invoke(
    engine: &Arc<Engine>,
    operation: &'static str,
    model_id: String,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Ask, Native), ApiError> {
    let region = authenticate(engine, "bedrock", method, uri, headers, body)?;
    let v = parse_json(Service::Bedrock, body)?;
    let tier = headers
        .get("x-amzn-bedrock-service-tier")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("default")
        .to_string();
    let (mut ask, native) = native_ask(operation, region, model_id, tier, &v);
    ask.latency_optimized = headers
        .get("x-amzn-bedrock-performanceconfig-latency")
        .is_some_and(|h| h.as_bytes() == b"optimized");
    Ok((ask, native))
}

/// A model's native request body (InvokeModel, or a batch record's `modelInput`) as an ask.
pub(crate) fn native_ask(
    operation: &'static str,
    region: String,
    model_id: String,
    tier: String,
    v: &Value,
) -> (Ask, Native) {
    let native = if model_id.contains("anthropic.") {
        Native::Anthropic
    } else {
        Native::Nova
    };
    let max_tokens = match native {
        Native::Anthropic => v.get("max_tokens"),
        Native::Nova => v.pointer("/inferenceConfig/maxTokens"),
    }
    .and_then(Value::as_u64)
    .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let prompt = json!([v.get("system"), v.get("messages")]);
    (
        Ask {
            service: Service::Bedrock,
            operation,
            region,
            target: model_id,
            tier,
            input_tokens: text::estimate_tokens(text::json_text_chars(&prompt)).max(1),
            max_tokens,
            prompt_digest: text::digest64(&[prompt.to_string().as_bytes()]),
            cache_points: Vec::new(),
            cache_checked: false,
            prefill: None,
            extras: None,
            guard: None,
            echo: None,
            latency_optimized: false,
            mantle_quota: None,
        },
        native,
    )
}

pub(super) fn stop_reason(a: &Answer) -> &'static str {
    if a.guardrail.intervened {
        "guardrail_intervened"
    } else if a.truncated {
        "max_tokens"
    } else {
        "end_turn"
    }
}

/// Usage as Bedrock reports it, with the prompt cache's part.
fn usage_with_cache(a: &Answer, output: u32) -> Value {
    let output = if a.guardrail.input_blocked { 0 } else { output };
    let mut u = usage(a.reported_input_tokens(), output);
    if a.cache.read > 0 || a.cache.write > 0 {
        u["cacheReadInputTokens"] = json!(a.cache.read);
        u["cacheWriteInputTokens"] = json!(a.cache.write);
        u["totalTokens"] = json!(a.input_tokens + a.cache.read + a.cache.write + output);
        if !a.cache.details.is_empty() {
            u["cacheDetails"] = a
                .cache
                .details
                .iter()
                .map(|(ttl, n)| json!({ "ttl": ttl, "inputTokens": n }))
                .collect();
        }
    }
    u
}

fn usage(input: u32, output: u32) -> Value {
    json!({ "inputTokens": input, "outputTokens": output, "totalTokens": input + output })
}

fn json_response(body: Value) -> Response {
    let mut resp = body.to_string().into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    resp
}

/// A streaming `application/vnd.amazon.eventstream` response.
pub(crate) fn event_stream_response(
    frames: impl futures::Stream<Item = Bytes> + Send + 'static,
) -> Response {
    let body = Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>));
    let mut resp = body.into_response();
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/vnd.amazon.eventstream"),
    );
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    resp
}
