//! Chat Completions: a body as the Converse request it means, and the answer as a
//! `chat.completion` or as `chat.completion.chunk` events ending in `data: [DONE]`.

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
use crate::wire::bedrock::{Request, stop_reason};
use crate::wire::{Step, StreamEnd, timeline, wait_whole};

/// A Chat Completions body as the Converse request it means.
pub(super) fn converse_of(v: &Value) -> Result<(String, Value), ApiError> {
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
            "system" | "developer" => {
                system.extend(texts.into_iter().map(|t| json!({ "text": t })))
            }
            "user" => messages.push(json!({
                "role": "user",
                "content": texts.into_iter().map(|t| json!({ "text": t })).collect::<Vec<_>>(),
            })),
            "assistant" => {
                let mut content: Vec<Value> =
                    texts.into_iter().map(|t| json!({ "text": t })).collect();
                for call in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
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
                )));
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
    if let Some(f) = v.get("response_format")
        && f.get("type").and_then(Value::as_str) == Some("json_schema")
    {
        let schema = f
            .pointer("/json_schema/schema")
            .cloned()
            .unwrap_or_default();
        c["outputConfig"] = json!({ "textFormat": { "type": "json_schema", "structure": { "jsonSchema": {
            "schema": schema.to_string(),
            "name": f.pointer("/json_schema/name").cloned().unwrap_or_else(|| json!("response")),
        }}}});
    }
    if let Some(effort) = v.get("reasoning_effort") {
        c["additionalModelRequestFields"] = json!({ "reasoning_effort": effort });
    }
    Ok((model, c))
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

pub(super) async fn chat_completions(
    surface: Surface,
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OpenAiError> {
    let (region, v) = read_request(&engine, surface, &method, &uri, &headers, &body)?;
    let Admitted {
        model,
        req,
        answer,
        stream,
    } = admit(
        &engine,
        surface,
        Api::ChatCompletions,
        region,
        &v,
        &v,
        &["ChatCompletions", "ChatCompletionsStream"],
    )?;
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
        "id": next_id("chatcmpl-emulated"),
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
    Ok(json_answer(&body, &answer))
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
    let id = next_id("chatcmpl-emulated");
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
    sse_answer(frames, wire_fault.as_ref())
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
