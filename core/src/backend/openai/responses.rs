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
                    // Only the reasoning items this API made go back (the plan leaves other
                    // models' reasoning out), each by its id with its encrypted content.
                    if call.attempt.shape.reasoning_history {
                        if let ReasoningBlock::Text(ReasoningText {
                            text,
                            signature,
                            id: Some(id),
                        }) = r
                        {
                            flush(&mut items, role, &mut parts);
                            let summary: Vec<Value> = if text.is_empty() {
                                Vec::new()
                            } else {
                                vec![json!({ "type": "summary_text", "text": text })]
                            };
                            let mut item =
                                json!({ "type": "reasoning", "id": id, "summary": summary });
                            if let Some(encrypted) = signature {
                                item["encrypted_content"] = json!(encrypted);
                            }
                            items.push(item);
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
        let mut reasoning = json!({ "effort": effort });
        if let Some(summary) = call.model.reasoning().and_then(|r| r.summary.as_deref()) {
            reasoning["summary"] = json!(summary);
        }
        body.insert("reasoning".into(), reasoning);
        // Nothing is stored on the service: the next turn needs the reasoning itself.
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
    if let Some(status @ ("failed" | "cancelled")) = v.get("status").and_then(Value::as_str) {
        let e = json!({ "code": "server_error", "message": format!("the response is {status}") });
        return Err(failed(&e, bad));
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
                            id: item.get("id").and_then(Value::as_str).map(str::to_string),
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

/// A reasoning item's text: its summary's paragraphs, else its full reasoning text
/// (open-weight models on mantle send `content` of `reasoning_text` parts).
fn summary_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<&str> {
        item.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("text").and_then(Value::as_str))
            .collect()
    };
    let summary = texts("summary");
    if summary.is_empty() {
        texts("content").concat()
    } else {
        summary.join("\n\n")
    }
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
    // Bedrock's extension: the prefix written to the cache (priced as a cache write).
    let written = n("/input_tokens_details/cache_write_tokens");
    Usage {
        input_tokens: n("/input_tokens")
            .saturating_sub(cached)
            .saturating_sub(written),
        output_tokens: n("/output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: written,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
        ..Usage::default()
    }
}

/// A failed response's `error` (or an `error` event's body) as an error: by its code, a
/// server error fails over, a refused input does not.
pub(super) fn failed(e: &Value, bad: &Malformed<'_>) -> Error {
    // A flat `error` event's own `type` is "error": only a nested error's type names a kind.
    let code = e
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| {
            e.get("type")
                .and_then(Value::as_str)
                .filter(|t| *t != "error")
        })
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
    /// A function call was seen: the stop is for tool use.
    called: bool,
    /// Output indexes of the function calls whose arguments have come (as deltas or whole).
    argued: Vec<u32>,
    /// The stream reached its terminal event.
    pub(super) done: bool,
}

impl Events {
    /// A piece of a function call's arguments, if it has any.
    fn arguments(&mut self, index: u32, text: &str) -> Option<BackendEvent> {
        if text.is_empty() {
            return None;
        }
        if !self.argued.contains(&index) {
            self.argued.push(index);
        }
        Some(BackendEvent::ToolUseDelta {
            index,
            input_json: text.to_string(),
        })
    }

    /// A call's whole arguments, when no piece of them came before (a server that sends
    /// them only at the end).
    fn unless_argued(&mut self, index: u32, whole: &str) -> Vec<BackendEvent> {
        if self.argued.contains(&index) {
            return Vec::new();
        }
        self.arguments(index, whole).into_iter().collect()
    }

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
            "response.output_item.added" => {
                let item = &v["item"];
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        self.called = true;
                        let at = index()?;
                        let mut out = vec![BackendEvent::ToolUseStart {
                            index: at,
                            id: str_of(item, "call_id").to_string(),
                            name: str_of(item, "name").to_string(),
                        }];
                        // Some servers send the arguments whole with the item.
                        out.extend(self.arguments(at, str_of(item, "arguments")));
                        out
                    }
                    _ => Vec::new(),
                }
            }
            "response.function_call_arguments.delta" => {
                let at = index()?;
                self.arguments(at, str_of(v, "delta")).into_iter().collect()
            }
            "response.function_call_arguments.done" => {
                let at = index()?;
                self.unless_argued(at, str_of(v, "arguments"))
            }
            "response.output_item.done" => {
                let item = &v["item"];
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => {
                        let at = index()?;
                        let mut out = Vec::new();
                        if let Some(id) = item.get("id").and_then(Value::as_str) {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Id(id.to_string()),
                            });
                        }
                        if let Some(e) = item.get("encrypted_content").and_then(Value::as_str) {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Signature(e.to_string()),
                            });
                        }
                        out
                    }
                    Some("function_call") => {
                        let at = index()?;
                        self.unless_argued(at, str_of(item, "arguments"))
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
            "response.failed" | "response.cancelled" => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bad() -> Malformed<'static> {
        Malformed {
            target: "m",
            region: "r",
        }
    }

    fn read(events: &[Value]) -> Result<Vec<BackendEvent>> {
        let mut e = Events::default();
        let mut out = Vec::new();
        for v in events {
            out.extend(e.read(v, &bad())?);
        }
        Ok(out)
    }

    #[test]
    fn whole_arguments_count_once_whether_sent_with_the_item_at_done_or_in_pieces() {
        let item = |args: &str| json!({ "type": "function_call", "call_id": "c1", "name": "f", "arguments": args });
        let added = |args: &str| json!({ "type": "response.output_item.added", "output_index": 1, "item": item(args) });
        let args_done = json!({ "type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{}" });
        let item_done =
            json!({ "type": "response.output_item.done", "output_index": 1, "item": item("{}") });
        let deltas = |evs: &[BackendEvent]| -> String {
            evs.iter()
                .filter_map(|e| match e {
                    BackendEvent::ToolUseDelta { input_json, .. } => Some(input_json.clone()),
                    _ => None,
                })
                .collect()
        };
        // Whole with the item.
        assert_eq!(
            deltas(&read(&[added("{}"), args_done.clone(), item_done.clone()]).unwrap()),
            "{}"
        );
        // Only at the end.
        assert_eq!(
            deltas(&read(&[added(""), args_done.clone(), item_done.clone()]).unwrap()),
            "{}"
        );
        // In pieces, then the whole again at done: counted once.
        let piece = |d: &str| json!({ "type": "response.function_call_arguments.delta", "output_index": 1, "delta": d });
        assert_eq!(
            deltas(&read(&[added(""), piece("{"), piece("}"), args_done, item_done]).unwrap()),
            "{}"
        );
    }

    #[test]
    fn reasoning_items_bring_their_id_and_encrypted_content_and_failures_are_errors() {
        let done = json!({ "type": "response.output_item.done", "output_index": 0,
            "item": { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA" } });
        let evs = read(&[done]).unwrap();
        assert!(evs.contains(&BackendEvent::ReasoningDelta {
            index: 0,
            delta: ReasoningDelta::Id("rs_1".into())
        }));
        assert!(evs.contains(&BackendEvent::ReasoningDelta {
            index: 0,
            delta: ReasoningDelta::Signature("gAAA".into())
        }));
        // A flat error event: its code decides; its own type does not.
        let err = read(&[json!({ "type": "error", "code": null, "message": "boom" })]).unwrap_err();
        assert!(err.fails_over(), "{err}");
        let err =
            read(&[json!({ "type": "error", "code": "invalid_image", "message": "bad image" })])
                .unwrap_err();
        assert!(!err.fails_over(), "{err}");
        let failed = json!({ "type": "response.failed", "response": { "status": "failed", "error": { "code": "server_error", "message": "x" } } });
        assert!(read(&[failed]).unwrap_err().fails_over());
    }

    #[test]
    fn a_whole_response_reads_reasoning_text_calls_usage_and_refuses_failed_ones() {
        let v = json!({ "status": "completed", "service_tier": "default", "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [], "content": [{ "type": "reasoning_text", "text": "think" }] },
            { "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}" },
        ], "usage": { "input_tokens": 100, "output_tokens": 20,
            "input_tokens_details": { "cached_tokens": 30, "cache_write_tokens": 50 },
            "output_tokens_details": { "reasoning_tokens": 5 } } });
        let c = completion(&v, &bad()).unwrap();
        assert_eq!(c.stop_reason, StopReason::ToolUse);
        let OutputBlock::Reasoning(ReasoningBlock::Text(r)) = &c.content[0] else {
            panic!()
        };
        assert_eq!((r.text.as_str(), r.id.as_deref()), ("think", Some("rs_1")));
        assert_eq!(
            (
                c.usage.input_tokens,
                c.usage.cache_read_tokens,
                c.usage.cache_write_tokens,
                c.usage.reasoning_tokens
            ),
            (20, 30, 50, 5)
        );
        let failed = json!({ "status": "failed", "error": null, "output": [] });
        assert!(completion(&failed, &bad()).unwrap_err().fails_over());
    }
}
