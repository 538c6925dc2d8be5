//! SageMaker Runtime: InvokeEndpoint and InvokeEndpointWithResponseStream, with TGI and
//! OpenAI-compatible chat containers behind the endpoints.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};

use super::bedrock::event_stream_response;
use super::{
    Step, StreamEnd, authenticate, eventstream, parse_json, request_id, timeline, wait_whole,
    with_wire_fault,
};
use crate::engine::{Answer, ApiError, Ask, Engine, Service};
use crate::scenario::PayloadFormat;
use crate::text;

/// The SageMaker Runtime routes.
pub(crate) fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route("/endpoints/{name}/invocations", post(invoke))
        .route(
            "/endpoints/{name}/invocations-response-stream",
            post(invoke_stream),
        )
}

async fn invoke(
    State(engine): State<Arc<Engine>>,
    Path(name): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (ask, format) = read(
        &engine,
        "InvokeEndpoint",
        name,
        &method,
        &uri,
        &headers,
        &body,
    )?;
    let wants_details = parse_json(Service::Sagemaker, &body)?
        .pointer("/parameters/details")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let answer = engine.admit(&ask)?;
    wait_whole(&answer).await;
    let out = match format {
        // TGI reports details only when asked for them.
        PayloadFormat::Tgi if wants_details => json!([{
            "generated_text": answer.text(),
            "details": {
                "finish_reason": if answer.truncated { "length" } else { "eos_token" },
                "generated_tokens": answer.output_tokens(),
            },
        }]),
        PayloadFormat::Tgi => json!([{ "generated_text": answer.text() }]),
        PayloadFormat::OpenaiChat => json!({
            "id": "chatcmpl-emulated", "object": "chat.completion", "model": answer.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": answer.text() },
                "finish_reason": if answer.truncated { "length" } else { "stop" },
            }],
            "usage": {
                "prompt_tokens": answer.input_tokens,
                "completion_tokens": answer.output_tokens(),
                "total_tokens": answer.input_tokens + answer.output_tokens(),
            },
        }),
    };
    let mut resp = out.to_string().into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("x-amzn-requestid", request_id());
    resp.headers_mut().insert(
        "x-amzn-invoked-production-variant",
        HeaderValue::from_static("AllTraffic"),
    );
    Ok(with_wire_fault(
        resp,
        answer.wire_fault.as_ref(),
        Service::Sagemaker,
        None,
    ))
}

async fn invoke_stream(
    State(engine): State<Arc<Engine>>,
    Path(name): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (ask, format) = read(
        &engine,
        "InvokeEndpointWithResponseStream",
        name,
        &method,
        &uri,
        &headers,
        &body,
    )?;
    let streams = engine
        .scenario
        .endpoints
        .iter()
        .find(|e| e.name == ask.target && e.region == ask.region)
        .is_none_or(|e| e.streams);
    if !streams {
        return Ok(not_served());
    }
    let answer = engine.admit(&ask)?;
    let wire_fault = answer.wire_fault.clone();
    let steps = timeline(&answer);
    let frames = async_stream::stream! {
        let answer = answer;
        let mut end = StreamEnd::new(Arc::clone(&engine), ask.clone(), "default".into());
        let mut steps = std::pin::pin!(steps);
        let last = answer.tokens.len().saturating_sub(1);
        while let Some(step) = steps.next().await {
            match step {
                Step::Token(i, t) => {
                    let line = stream_line(format, &answer, i, &t, i == last);
                    // Odd tokens straddle two payload parts, as real containers' lines do.
                    // Split by bytes, as a container's buffer is: a character may straddle the parts.
                    if i % 2 == 1 {
                        let (a, b) = line.as_bytes().split_at(line.len() / 2);
                        yield part(a);
                        yield part(b);
                    } else {
                        yield part(line.as_bytes());
                    }
                }
                Step::Break => {
                    engine.record_broken_stream(&ask, "default");
                    end.finish();
                    let kind = answer.break_after.as_ref().and_then(|(_, e)| e.clone())
                        .unwrap_or_else(|| "ModelStreamError".into());
                    yield eventstream::exception(&kind, &json!({
                        "Message": "The model stream was interrupted.", "ErrorCode": "StreamBroken",
                    }));
                    return;
                }
                Step::Done => break,
            }
        }
        end.finish();
        if format == PayloadFormat::OpenaiChat && !answer.plain_json_lines {
            yield part(b"data: [DONE]\n\n");
        }
    };
    // Payload parts: one per even token, two per odd one (it straddles them).
    Ok(with_wire_fault(
        event_stream_response(frames),
        wire_fault.as_ref(),
        Service::Sagemaker,
        Some(|tokens| tokens as usize + tokens as usize / 2),
    ))
}

fn part(bytes: &[u8]) -> Bytes {
    eventstream::event(
        "PayloadPart",
        "application/octet-stream",
        Bytes::copy_from_slice(bytes),
    )
}

fn stream_line(format: PayloadFormat, a: &Answer, i: usize, token: &str, last: bool) -> String {
    let value = match format {
        PayloadFormat::Tgi => {
            let (generated, details) = if last {
                let reason = if a.truncated { "length" } else { "eos_token" };
                (
                    json!(a.text()),
                    json!({ "finish_reason": reason, "generated_tokens": a.output_tokens() }),
                )
            } else {
                (Value::Null, Value::Null)
            };
            json!({
                "token": { "id": i, "text": token, "logprob": -0.25, "special": false },
                "generated_text": generated,
                "details": details,
            })
        }
        PayloadFormat::OpenaiChat => {
            let mut chunk = json!({
                "id": "chatcmpl-emulated", "object": "chat.completion.chunk", "model": a.model,
                "choices": [{
                    "index": 0,
                    "delta": { "content": token },
                    "finish_reason": if last { json!(if a.truncated { "length" } else { "stop" }) } else { Value::Null },
                }],
            });
            if last {
                chunk["usage"] = json!({
                    "prompt_tokens": a.input_tokens,
                    "completion_tokens": a.output_tokens(),
                    "total_tokens": a.input_tokens + a.output_tokens(),
                });
            }
            chunk
        }
    };
    if a.plain_json_lines {
        // A container that streams JSON lines, one object per line, without `data:`.
        return format!("{value}\n");
    }
    let sep = if format == PayloadFormat::Tgi {
        "data:"
    } else {
        "data: "
    };
    format!("{sep}{value}\n\n")
}

/// Where the TGI prompt Laneway renders hands the turn to the model.
const ASSISTANT_TURN: &str = "\n\nAssistant:";

/// What a server without the operation answers: 404, an HTML page, no AWS error code.
fn not_served() -> Response {
    let mut resp = (
        axum::http::StatusCode::NOT_FOUND,
        "<!doctype html><title>404 Not Found</title><h1>Not Found</h1>",
    )
        .into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("text/html"));
    resp
}

fn read(
    engine: &Arc<Engine>,
    operation: &'static str,
    name: String,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Ask, PayloadFormat), ApiError> {
    let region = authenticate(engine, "sagemaker", method, uri, headers, body)?;
    let endpoint = engine
        .scenario
        .endpoints
        .iter()
        .find(|e| e.name == name && e.region == region)
        .ok_or_else(|| {
            ApiError::validation(
                Service::Sagemaker,
                format!("Endpoint {name} of account 000000000000 not found."),
            )
        })?;
    if !endpoint.inference_components.is_empty() {
        let component = headers
            .get("x-amzn-sagemaker-inference-component")
            .and_then(|h| h.to_str().ok());
        match component {
            Some(c) if endpoint.inference_components.iter().any(|x| x == c) => {}
            Some(c) => {
                return Err(ApiError::validation(
                    Service::Sagemaker,
                    format!("Inference Component {c} not found on endpoint {name}."),
                ));
            }
            None => {
                return Err(ApiError::validation(
                    Service::Sagemaker,
                    format!(
                        "Inference Component Name header is required for endpoint {name}, which hosts inference components."
                    ),
                ));
            }
        }
    }
    let v = parse_json(Service::Sagemaker, body)?;
    let model_error = |m: &str| {
        ApiError::new(
            424,
            "ModelError",
            format!("Received client error (400) from primary with message \"{m}\"."),
        )
    };
    let (prompt_chars, max, digest_source, prefill) = match endpoint.format {
        PayloadFormat::Tgi => {
            let inputs = v
                .get("inputs")
                .and_then(Value::as_str)
                .ok_or_else(|| model_error("missing field `inputs`"))?;
            let max = v.pointer("/parameters/max_new_tokens");
            // A prompt that ends inside the assistant's turn continues its text.
            let (prompt, prefill) = match inputs.rfind(ASSISTANT_TURN) {
                Some(at) if at + ASSISTANT_TURN.len() < inputs.len() => {
                    let end = at + ASSISTANT_TURN.len();
                    (&inputs[..end], Some(inputs[end..].to_string()))
                }
                _ => (inputs, None),
            };
            (inputs.chars().count(), max, prompt.to_string(), prefill)
        }
        PayloadFormat::OpenaiChat => {
            let messages = v
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| model_error("missing field `messages`"))?;
            let continues = v.get("continue_final_message").and_then(Value::as_bool) == Some(true);
            let (prompt, prefill) = match messages.split_last() {
                Some((last, before))
                    if continues
                        && last.get("role").and_then(Value::as_str) == Some("assistant") =>
                {
                    let text = last
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    (before, Some(text.to_string()))
                }
                _ => (messages.as_slice(), None),
            };
            (
                text::json_text_chars(&Value::Array(messages.clone())),
                v.get("max_tokens"),
                Value::Array(prompt.to_vec()).to_string(),
                prefill,
            )
        }
    };
    let max_tokens = match max {
        None | Some(Value::Null) => None,
        Some(m) => match m.as_i64() {
            Some(n) if n >= 1 => Some(n as u32),
            _ => {
                return Err(model_error(&format!(
                    "max tokens must be a positive integer, got {m}"
                )));
            }
        },
    };
    Ok((
        Ask {
            service: Service::Sagemaker,
            operation,
            region,
            target: name,
            tier: "default".into(),
            input_tokens: text::estimate_tokens(prompt_chars).max(1),
            max_tokens,
            prompt_digest: text::digest64(&[digest_source.as_bytes()]),
            cache_points: Vec::new(),
            cache_checked: false,
            prefill,
            extras: None,
            guard: None,
            echo: None,
            latency_optimized: false,
            mantle_quota: None,
        },
        endpoint.format,
    ))
}
