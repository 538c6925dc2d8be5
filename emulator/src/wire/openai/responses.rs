//! The Responses API: a body (instructions, input items, flat function tools, `text.format`)
//! as the Chat Completions body it means, and the answer as a `response` object or as its typed
//! events, `response.created` to `response.completed` (or `response.incomplete`), in the order
//! the SDKs' accumulators check.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{
    Admitted, Api, OpenAiError, Surface, admit, json_answer, next_id, now_unix, read_request,
    sse_answer, text_parts,
};
use crate::engine::{Answer, ApiError, Engine};
use crate::wire::bedrock::{Request, ToolCall};
use crate::wire::{Step, StreamEnd, timeline, wait_whole};

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
    if let Some(f) = v.pointer("/text/format")
        && f.get("type").and_then(Value::as_str) == Some("json_schema")
    {
        chat["response_format"] = json!({ "type": "json_schema", "json_schema": {
            "name": f.get("name"), "schema": f.get("schema"),
        }});
    }
    if let Some(effort) = v.pointer("/reasoning/effort").filter(|e| !e.is_null()) {
        chat["reasoning_effort"] = effort.clone();
    }
    Ok(chat)
}

/// What a Responses answer is made of, for its whole form and its events alike.
struct ResponseShape {
    id: String,
    created_at: u64,
    model: String,
    tools: Value,
    tool_choice: Value,
    service_tier: String,
    /// `reasoning.summary` was asked for: reasoning items carry the reasoning as a summary.
    summary: bool,
    /// `include` names `reasoning.encrypted_content`: reasoning items carry it.
    encrypted: bool,
}

impl ResponseShape {
    /// The reasoning item of an answer that reasoned, as far as `text` has come.
    fn reasoning_item(&self, text: &str, done: bool) -> Value {
        let mut item =
            json!({ "type": "reasoning", "id": format!("rs_{}", self.id), "summary": [] });
        if self.summary && done {
            item["summary"] = json!([{ "type": "summary_text", "text": text }]);
        }
        if self.encrypted && done {
            item["encrypted_content"] = json!(crate::converse_ext::signature(text));
        }
        item
    }
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

fn call_item(call: &ToolCall, arguments: &str, status: &str) -> Value {
    json!({ "type": "function_call", "id": format!("fc_{}", call.id), "call_id": call.id,
        "name": call.name, "arguments": arguments, "status": status })
}

pub(super) async fn responses(
    surface: Surface,
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OpenAiError> {
    let (region, v) = read_request(&engine, surface, &method, &uri, &headers, &body)?;
    if v.get("background") == Some(&Value::Bool(true)) {
        return Err(ApiError::new(
            400,
            "invalid_request_error",
            "background mode is not supported for this request.",
        )
        .into());
    }
    let Admitted {
        model,
        req,
        answer,
        stream,
    } = admit(
        &engine,
        surface,
        Api::Responses,
        region,
        &chat_of_responses(&v)?,
        &v,
        &["Responses", "ResponsesStream"],
    )?;
    let shape = ResponseShape {
        id: next_id("resp_emulated"),
        created_at: now_unix(),
        model,
        tools: v.get("tools").cloned().unwrap_or_else(|| json!([])),
        tool_choice: v
            .get("tool_choice")
            .cloned()
            .unwrap_or_else(|| json!("auto")),
        service_tier: answer.served_tier.clone(),
        summary: v
            .pointer("/reasoning/summary")
            .and_then(Value::as_str)
            .is_some_and(|s| s != "none"),
        encrypted: v
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|x| x == "reasoning.encrypted_content")),
    };
    if stream {
        return Ok(responses_stream(engine, req, answer, shape));
    }
    wait_whole(&answer).await;
    let mut output = Vec::new();
    let reasoning = answer.reasoning_tokens as u32;
    if let Some((text, _)) = answer.reasoning() {
        output.push(shape.reasoning_item(&text, true));
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
    Ok(json_answer(&body, &answer))
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
        let mut reasoned = String::new();
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
            if i < reasoning {
                let index = output.len();
                let item_id = format!("rs_{}", shape.id);
                if i == 0 {
                    yield event("response.output_item.added", &mut seq, json!({ "output_index": index, "item": shape.reasoning_item("", false) }));
                    if shape.summary {
                        yield event("response.reasoning_summary_part.added", &mut seq, json!({ "item_id": item_id, "output_index": index, "summary_index": 0,
                            "part": { "type": "summary_text", "text": "" } }));
                    }
                }
                reasoned.push_str(&t);
                if shape.summary {
                    yield event("response.reasoning_summary_text.delta", &mut seq, json!({ "item_id": item_id, "output_index": index, "summary_index": 0, "delta": t }));
                }
                if i + 1 == reasoning {
                    if shape.summary {
                        yield event("response.reasoning_summary_text.done", &mut seq, json!({ "item_id": item_id, "output_index": index, "summary_index": 0, "text": reasoned }));
                        yield event("response.reasoning_summary_part.done", &mut seq, json!({ "item_id": item_id, "output_index": index, "summary_index": 0,
                            "part": { "type": "summary_text", "text": reasoned } }));
                    }
                    let item = shape.reasoning_item(&reasoned, true);
                    yield event("response.output_item.done", &mut seq, json!({ "output_index": index, "item": item }));
                    output.push(item);
                }
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
    sse_answer(frames, wire_fault.as_ref())
}
