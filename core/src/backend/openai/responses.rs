//! The Responses API (`POST …/responses`): a request as its body, its `response` object as a
//! [`Completion`], and its typed stream events (`response.output_text.delta`, ...,
//! `response.completed`) as [`BackendEvent`]s.

use serde_json::{json, Map, Value};

use super::input;
use super::Malformed;
use crate::backend::{BackendEvent, Call, Completion};
use crate::types::{
    ContentBlock, Error, OutputBlock, ReasoningBlock, ReasoningDelta, ReasoningText, Result, Role,
    ServiceError, StopReason, Tool, ToolChoice, Usage,
};

/// The request as a Responses body. Laneway keeps no state on the service (`store: false`):
/// earlier turns go whole, the model's reasoning as its encrypted content.
pub(super) fn body(call: Call<'_>, model: &str, stream: bool) -> Result<Value> {
    let request = call.request;
    let mut items = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        let mut parts = Vec::new();
        let text_type = match m.role {
            Role::User => "input_text",
            Role::Assistant => "output_text",
        };
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for (j, b) in m.content.iter().enumerate() {
            let at = || format!("messages[{i}].content[{j}]");
            match b {
                ContentBlock::Text(t) => parts.push(json!({ "type": text_type, "text": t })),
                ContentBlock::Citations(c) => {
                    parts.push(json!({ "type": text_type, "text": c.content.concat() }))
                }
                ContentBlock::Image(image) if m.role == Role::User => parts.push(json!({
                    "type": "input_image", "image_url": input::image_url(image, &at())?,
                })),
                ContentBlock::ToolUse(t) => {
                    flush(&mut items, role, &mut parts);
                    items.push(json!({
                        "type": "function_call", "call_id": t.id, "name": t.name,
                        "arguments": t.input.to_string(),
                    }));
                }
                ContentBlock::ToolResult(r) => {
                    flush(&mut items, role, &mut parts);
                    items.push(json!({
                        "type": "function_call_output", "call_id": r.tool_use_id,
                        "output": input::tool_result_text(&r.content, &at())?,
                    }));
                }
                ContentBlock::Reasoning(r) => {
                    if call.attempt.shape.reasoning_history {
                        if let ReasoningBlock::Text(ReasoningText {
                            text,
                            signature: Some(encrypted),
                        }) = r
                        {
                            flush(&mut items, role, &mut parts);
                            items.push(json!({
                                "type": "reasoning",
                                "summary": [{ "type": "summary_text", "text": text }],
                                "encrypted_content": encrypted,
                            }));
                        }
                    }
                }
                // The service caches prefixes by itself; checkpoints have no spelling here.
                ContentBlock::CachePoint(_) => {}
                other => return Err(input::unsupported(other, &at())),
            }
        }
        flush(&mut items, role, &mut parts);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("input".into(), Value::Array(items));
    let system = input::system_text(call);
    if !system.is_empty() {
        body.insert("instructions".into(), json!(system));
    }
    if let Some(n) = input::max_tokens(call) {
        body.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(t) = request.inference.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = request.inference.top_p {
        body.insert("top_p".into(), json!(p));
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .filter_map(|t| match t {
            Tool::Spec(s) => Some(json!({
                "type": "function", "name": s.name, "description": s.description,
                "parameters": s.input_schema, "strict": s.strict,
            })),
            Tool::CachePoint(_) => None,
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    match &request.tool_choice {
        None => {}
        Some(ToolChoice::Auto) => {
            body.insert("tool_choice".into(), json!("auto"));
        }
        Some(ToolChoice::Any) => {
            body.insert("tool_choice".into(), json!("required"));
        }
        Some(ToolChoice::Tool(name)) => {
            body.insert(
                "tool_choice".into(),
                json!({ "type": "function", "name": name }),
            );
        }
    }
    if let Some(format) = &request.output_format {
        body.insert(
            "text".into(),
            json!({ "format": {
                "type": "json_schema",
                "name": format.name().unwrap_or("output"),
                "schema": format.schema(),
                "strict": true,
            }}),
        );
    }
    if let Some(effort) = input::effort(call) {
        body.insert(
            "reasoning".into(),
            json!({ "effort": effort, "summary": "auto" }),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(tier) = input::service_tier(call) {
        body.insert("service_tier".into(), json!(tier));
    }
    body.insert("store".into(), json!(false));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

/// Closes the message being gathered, if it has parts.
fn flush(items: &mut Vec<Value>, role: &str, parts: &mut Vec<Value>) {
    if !parts.is_empty() {
        items.push(json!({ "type": "message", "role": role, "content": std::mem::take(parts) }));
    }
}

/// A whole `response` object as a completion.
pub(super) fn completion(v: &Value, bad: &Malformed<'_>) -> Result<Completion> {
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Err(failed(e, bad));
    }
    let output = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| bad.error("the response has no output"))?;
    let mut content = Vec::new();
    let mut called = false;
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            content.push(OutputBlock::Text(str_of(part, "text").to_string()))
                        }
                        Some("refusal") => {
                            content.push(OutputBlock::Text(str_of(part, "refusal").to_string()))
                        }
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                called = true;
                content.push(OutputBlock::ToolUse {
                    id: str_of(item, "call_id").to_string(),
                    name: str_of(item, "name").to_string(),
                    input: arguments(str_of(item, "arguments")),
                });
            }
            Some("reasoning") => {
                let text = summary_text(item);
                let encrypted = item
                    .get("encrypted_content")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if !text.is_empty() || encrypted.is_some() {
                    content.push(OutputBlock::Reasoning(ReasoningBlock::Text(
                        ReasoningText {
                            text,
                            signature: encrypted,
                        },
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(Completion {
        content,
        stop_reason: stop_reason(v, called),
        usage: usage(v.get("usage")),
        served_tier: input::served_tier(v.get("service_tier").and_then(Value::as_str)),
        ..Completion::default()
    })
}

fn str_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A function call's arguments as JSON (the text itself when it does not parse).
fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn summary_text(item: &Value) -> String {
    let parts: Vec<&str> = item
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("text").and_then(Value::as_str))
        .collect();
    parts.join("\n\n")
}

/// Why a response ended: its status and `incomplete_details.reason`.
fn stop_reason(v: &Value, called: bool) -> StopReason {
    match v.get("status").and_then(Value::as_str) {
        Some("incomplete") => match v
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFiltered,
            Some(other) => StopReason::Other(other.to_string()),
            None => StopReason::MaxTokens,
        },
        _ if called => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// Responses' usage: `input_tokens` counts cached ones too; `output_tokens` counts reasoning.
pub(super) fn usage(u: Option<&Value>) -> Usage {
    let n = |path: &str| {
        u.and_then(|u| u.pointer(path))
            .and_then(Value::as_u64)
            .map_or(0, crate::types::units::token_count)
    };
    let cached = n("/input_tokens_details/cached_tokens");
    Usage {
        input_tokens: n("/input_tokens").saturating_sub(cached),
        output_tokens: n("/output_tokens"),
        cache_read_tokens: cached,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
        ..Usage::default()
    }
}

/// A failed response's `error` (or an `error` event's body) as an error: by its code, a
/// server error fails over, a refused input does not.
pub(super) fn failed(e: &Value, bad: &Malformed<'_>) -> Error {
    let code = e
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| e.get("type").and_then(Value::as_str))
        .unwrap_or("server_error");
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the response failed");
    Error::from(
        ServiceError::new(
            super::errors::kind_of_code(code, 500),
            message,
            bad.target,
            bad.region,
        )
        .with_code(code),
    )
}

/// Turns Responses stream events into backend events. Blocks are numbered by the event's
/// `output_index`: each output item is one block.
#[derive(Debug, Default)]
pub(super) struct Events {
    /// The function calls seen, by output index, to tell a stop for tool use.
    called: bool,
    /// The stream reached its terminal event.
    pub(super) done: bool,
}

impl Events {
    /// The backend events of one stream event (its JSON `data`).
    pub(super) fn read(&mut self, v: &Value, bad: &Malformed<'_>) -> Result<Vec<BackendEvent>> {
        let index = || {
            v.get("output_index")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad.error("a stream event has no output_index"))
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad.error("a stream event has no type"))?;
        Ok(match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                vec![BackendEvent::TextDelta {
                    index: index()?,
                    text: str_of(v, "delta").to_string(),
                }]
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                vec![BackendEvent::ReasoningDelta {
                    index: index()?,
                    delta: ReasoningDelta::Text(str_of(v, "delta").to_string()),
                }]
            }
            "response.reasoning_summary_part.added" => {
                // Summary parts of one item are paragraphs of one block.
                let part = v.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
                if part > 0 {
                    vec![BackendEvent::ReasoningDelta {
                        index: index()?,
                        delta: ReasoningDelta::Text("\n\n".into()),
                    }]
                } else {
                    Vec::new()
                }
            }
            "response.output_item.added" => match v.pointer("/item/type").and_then(Value::as_str) {
                Some("function_call") => {
                    self.called = true;
                    let item = &v["item"];
                    vec![BackendEvent::ToolUseStart {
                        index: index()?,
                        id: str_of(item, "call_id").to_string(),
                        name: str_of(item, "name").to_string(),
                    }]
                }
                _ => Vec::new(),
            },
            "response.function_call_arguments.delta" => {
                let delta = str_of(v, "delta");
                if delta.is_empty() {
                    Vec::new()
                } else {
                    vec![BackendEvent::ToolUseDelta {
                        index: index()?,
                        input_json: delta.to_string(),
                    }]
                }
            }
            "response.output_item.done" => {
                let item = &v["item"];
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => {
                        match item.get("encrypted_content").and_then(Value::as_str) {
                            Some(encrypted) => vec![BackendEvent::ReasoningDelta {
                                index: index()?,
                                delta: ReasoningDelta::Signature(encrypted.to_string()),
                            }],
                            None => Vec::new(),
                        }
                    }
                    _ => Vec::new(),
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = true;
                let response = v
                    .get("response")
                    .ok_or_else(|| bad.error("a terminal event has no response"))?;
                vec![
                    BackendEvent::Stop(stop_reason(response, self.called)),
                    BackendEvent::Metadata {
                        usage: usage(response.get("usage")),
                        served_tier: input::served_tier(
                            response.get("service_tier").and_then(Value::as_str),
                        ),
                        invoked_model: None,
                    },
                ]
            }
            "response.failed" => {
                let e = v
                    .pointer("/response/error")
                    .filter(|e| !e.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!({ "code": "server_error" }));
                return Err(failed(&e, bad));
            }
            "error" => {
                let e = v.get("error").unwrap_or(v);
                return Err(failed(e, bad));
            }
            _ => Vec::new(),
        })
    }
}
