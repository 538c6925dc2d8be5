//! Container payload formats: Text Generation Inference and OpenAI-compatible chat.

use serde_json::{Map, Value, json};

use crate::backend::BackendEvent;
use crate::backend::openai::Malformed;
use crate::backend::openai::chat as chat_reader;
use crate::config::PayloadFormat;
use crate::types::{ContentBlock, GenerateRequest, Role, SystemBlock, ToolResultContent};
use crate::types::{Error, ErrorKind, Result, ServiceError};
use crate::types::{OutputBlock, StopReason, Usage};
use crate::wire::chat::{self, ChatUsage};

/// The request body for a container.
pub(super) fn request_body(
    format: PayloadFormat,
    req: &GenerateRequest,
    stream: bool,
) -> Result<Vec<u8>> {
    let body = match format {
        PayloadFormat::Tgi => tgi_request(req, stream)?,
        PayloadFormat::OpenaiChat => openai_request(req, stream)?,
    };
    Ok(body.to_string().into_bytes())
}

/// Renders the conversation as one prompt for TGI's `inputs`: the system text, then each turn
/// as `User:` / `Assistant:` paragraphs, ending with `Assistant:` for the model to continue.
/// Models with a chat template should be served with the OpenAI-compatible format instead.
pub fn tgi_prompt(req: &GenerateRequest) -> Result<String> {
    let mut out = String::new();
    let system = system_text(req);
    if !system.is_empty() {
        out.push_str(&system);
        out.push_str("\n\n");
    }
    let prefill = ends_with_prefill(req);
    for (i, m) in req.messages.iter().enumerate() {
        let open_turn = prefill && i + 1 == req.messages.len();
        out.push_str(match m.role {
            Role::User => "User: ",
            // A prefill continues the answer's own text, which brings its leading space.
            Role::Assistant if open_turn => "Assistant:",
            Role::Assistant => "Assistant: ",
        });
        for (j, b) in m.content.iter().enumerate() {
            match b {
                ContentBlock::Text(t) => out.push_str(t),
                ContentBlock::ToolUse(t) => {
                    out.push_str(&json!({ "tool": t.name, "input": t.input }).to_string())
                }
                ContentBlock::ToolResult(r) => out.push_str(&tool_result_text(
                    &r.content,
                    &format!("messages[{i}].content[{j}]"),
                )?),
                // Earlier reasoning is not the model's to read again (the plan says so); guard
                // content needs a guardrail, which the plan never sends to SageMaker.
                ContentBlock::CachePoint(_)
                | ContentBlock::Reasoning(_)
                | ContentBlock::GuardContent(_) => {}
                ContentBlock::Image(_) => {
                    return Err(Error::invalid(
                        format!("messages[{i}].content[{j}]"),
                        "images cannot be sent in the TGI text payload format",
                    ));
                }
                ContentBlock::Document(_) => {
                    return Err(Error::invalid(
                        format!("messages[{i}].content[{j}]"),
                        "documents cannot be sent in the TGI text payload format: extract their text first",
                    ));
                }
                ContentBlock::Citations(c) => out.push_str(&c.content.concat()),
                other => {
                    return Err(unsupported_block(
                        other,
                        &format!("messages[{i}].content[{j}]"),
                    ));
                }
            }
        }
        if open_turn {
            // The prompt ends inside the assistant's turn: the model goes on from its text.
            return Ok(out);
        }
        out.push_str("\n\n");
    }
    out.push_str("Assistant:");
    Ok(out)
}

/// Whether the request ends with an assistant message: a prefill the model continues (a
/// broken stream's delivered text, or the caller's own), never a finished turn.
pub(super) fn ends_with_prefill(req: &GenerateRequest) -> bool {
    req.messages
        .last()
        .is_some_and(|m| m.role == Role::Assistant)
}

fn tgi_request(req: &GenerateRequest, stream: bool) -> Result<Value> {
    if !req.tools.is_empty() {
        return Err(Error::invalid(
            "tools",
            "the TGI text payload format has no tools; use the openai_chat format",
        ));
    }
    let mut params = Map::new();
    params.insert("details".into(), json!(true));
    if let Some(n) = req.inference.max_tokens {
        params.insert("max_new_tokens".into(), json!(n));
    }
    if let Some(t) = req.inference.temperature {
        // TGI refuses a temperature of exactly 0; greedy decoding is asked for by its absence.
        if t > 0.0 {
            params.insert("temperature".into(), json!(t));
        }
    }
    if let Some(p) = req.inference.top_p
        && p < 1.0
    {
        params.insert("top_p".into(), json!(p));
    }
    if !req.inference.stop_sequences.is_empty() {
        params.insert("stop".into(), json!(req.inference.stop_sequences));
    }
    Ok(json!({ "inputs": tgi_prompt(req)?, "parameters": params, "stream": stream }))
}

fn openai_request(req: &GenerateRequest, stream: bool) -> Result<Value> {
    let senders = chat::Senders {
        image: &|_, at| {
            Err(Error::invalid(
                at,
                "images are not sent to SageMaker chat containers by this version",
            ))
        },
        tool_result: &tool_result_text,
        unsupported: &unsupported_block,
    };
    let messages = chat::messages(&system_text(req), &req.messages, &senders)?;
    let mut body = json!({ "messages": messages, "stream": stream });
    if ends_with_prefill(req) {
        // vLLM's (and LMI's) chat API: continue the final assistant message, do not close it.
        body["continue_final_message"] = json!(true);
        body["add_generation_prompt"] = json!(false);
    }
    if let Some(n) = req.inference.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(t) = req.inference.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = req.inference.top_p {
        body["top_p"] = json!(p);
    }
    if !req.inference.stop_sequences.is_empty() {
        body["stop"] = json!(req.inference.stop_sequences);
    }
    if stream {
        body["stream_options"] = json!({ "include_usage": true });
    }
    let tools = chat::tools(&req.tools);
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(choice) = &req.tool_choice {
        body["tool_choice"] = chat::tool_choice(choice);
    }
    Ok(body)
}

/// A block no SageMaker payload format has (audio, video, search results, tool additions and
/// removals), refused by name rather than left out.
fn unsupported_block(b: &ContentBlock, at: &str) -> Error {
    let name = match b {
        ContentBlock::Document(_) => {
            return Error::invalid(
                at,
                "documents are not sent to SageMaker containers (they have no document block): extract their text first",
            );
        }
        ContentBlock::Image(_) => "an assistant's images",
        ContentBlock::Audio(_) => "audio",
        ContentBlock::Video(_) => "video",
        ContentBlock::SearchResult(_) => "search results",
        ContentBlock::GuardContent(_) => "guard content (guardrails are Bedrock's)",
        ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_) => {
            "tool additions and removals"
        }
        _ => "this block",
    };
    Error::invalid(at, format!("{name} cannot be sent to SageMaker containers"))
}

/// The system blocks' text, one block a line.
fn system_text(req: &GenerateRequest) -> String {
    req.system
        .iter()
        .filter_map(|b| match b {
            SystemBlock::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool result as text; an image, document or video in it is refused by name (a SageMaker
/// container's payload carries text only).
fn tool_result_text(content: &[ToolResultContent], at: &str) -> Result<String> {
    let parts = content
        .iter()
        .enumerate()
        .map(|(k, c)| {
            c.text().map(std::borrow::Cow::into_owned).ok_or_else(|| {
                Error::invalid(
                    format!("{at}.tool_result.content[{k}]"),
                    format!(
                        "a tool result's {} is not sent to SageMaker containers (their payload carries text): send its text or route to Bedrock",
                        c.kind()
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(parts.join("\n"))
}

/// Estimated tokens of a text: a quarter of its characters, rounded up.
pub(super) fn estimate_tokens(text: &str) -> u32 {
    u32::try_from(text.chars().count().div_ceil(4)).unwrap_or(u32::MAX)
}

/// A whole (non-streaming) answer.
pub(super) struct Parsed {
    pub content: Vec<OutputBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

/// Parses a whole answer. `prompt_tokens_estimate` fills the input count where the container
/// reports none.
pub(super) fn parse_response(
    format: PayloadFormat,
    body: &[u8],
    prompt_tokens_estimate: u32,
    endpoint: &str,
    region: &str,
) -> Result<Parsed> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| malformed(endpoint, region, &e.to_string()))?;
    match format {
        PayloadFormat::Tgi => {
            let item = v.as_array().and_then(|a| a.first()).unwrap_or(&v);
            let text = item
                .get("generated_text")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(endpoint, region, "no generated_text in the answer"))?;
            let details = item.get("details");
            let output = details
                .and_then(|d| d.get("generated_tokens"))
                .and_then(Value::as_u64)
                .map_or_else(|| estimate_tokens(text), crate::types::units::token_count);
            let stop = details
                .and_then(|d| d.get("finish_reason"))
                .and_then(Value::as_str)
                .map_or(StopReason::EndTurn, StopReason::from_wire);
            Ok(Parsed {
                content: vec![OutputBlock::Text(text.to_string())],
                stop_reason: stop,
                usage: Usage {
                    input_tokens: prompt_tokens_estimate,
                    output_tokens: output,
                    input_estimated: true,
                    ..Usage::default()
                },
            })
        }
        PayloadFormat::OpenaiChat => {
            let bad = Malformed {
                target: endpoint,
                region,
            };
            let c = chat_reader::completion(&v, &bad)?;
            let usage = ChatUsage::read(v.get("usage")).unwrap_or_default();
            Ok(Parsed {
                content: c.content,
                stop_reason: c.stop_reason,
                usage: chat_reader::with_estimate(usage, Some(prompt_tokens_estimate)),
            })
        }
    }
}

/// What one stream line means.
#[derive(Debug, Default)]
pub(super) struct LineEvents {
    pub events: Vec<BackendEvent>,
    /// The container said the stream is over (`[DONE]`, or TGI's final details).
    pub done: bool,
}

/// Reads a container's stream a line at a time: TGI's token lines, or Chat Completions
/// chunks (read as the OpenAI backend reads them), as server-sent events or plain JSON lines.
#[derive(Debug)]
pub(super) struct LineReader {
    format: PayloadFormat,
    chat: chat_reader::Events,
    prompt_tokens_estimate: u32,
    endpoint: String,
    region: String,
}

impl LineReader {
    /// A reader of `endpoint`'s stream; `prompt_tokens_estimate` fills the input count where
    /// the container reports none.
    pub(super) fn new(
        format: PayloadFormat,
        prompt_tokens_estimate: u32,
        endpoint: &str,
        region: &str,
    ) -> Self {
        Self {
            format,
            chat: chat_reader::Events::estimating_input(prompt_tokens_estimate),
            prompt_tokens_estimate,
            endpoint: endpoint.to_string(),
            region: region.to_string(),
        }
    }

    /// What one complete line means.
    pub(super) fn read(&mut self, line: &str) -> Result<LineEvents> {
        let (endpoint, region) = (self.endpoint.as_str(), self.region.as_str());
        let data = match line.strip_prefix("data:") {
            Some(data) => data.trim(),
            // A container streaming plain JSON lines (no server-sent events) sends the object
            // alone.
            None if line.trim_start().starts_with('{') => line.trim(),
            // Server-sent-event comments and fields other than data carry nothing.
            None => return Ok(LineEvents::default()),
        };
        if data == "[DONE]" {
            return Ok(LineEvents {
                events: Vec::new(),
                done: true,
            });
        }
        // TGI reports a failure inside its stream as `error` text with an `error_type`, in
        // either format; only lines naming an error are read twice.
        let tgi_error = self.format == PayloadFormat::Tgi || data.contains("\"error\"");
        let v: Option<Value> = if tgi_error {
            Some(serde_json::from_str(data).map_err(|e| {
                malformed(endpoint, region, &format!("stream line is not JSON: {e}"))
            })?)
        } else {
            None
        };
        if let Some(err) = v
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
        {
            let error_type = v
                .as_ref()
                .and_then(|v| v.get("error_type"))
                .and_then(Value::as_str);
            return Err(Error::from(
                ServiceError::new(in_stream_error_kind(error_type), err, endpoint, region)
                    .with_code(error_type.unwrap_or("ModelError")),
            ));
        }
        match (self.format, v) {
            (PayloadFormat::Tgi, Some(v)) => Ok(tgi_line(&v, self.prompt_tokens_estimate)),
            _ => {
                let bad = Malformed {
                    target: endpoint,
                    region,
                };
                let events = self.chat.read(data, &bad)?;
                Ok(LineEvents {
                    events,
                    done: false,
                })
            }
        }
    }
}

/// A TGI token line: its text, and at the end its details (why it stopped, tokens made).
fn tgi_line(v: &Value, prompt_tokens_estimate: u32) -> LineEvents {
    let mut out = LineEvents::default();
    let special = v
        .pointer("/token/special")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(t) = v.pointer("/token/text").and_then(Value::as_str)
        && !special
        && !t.is_empty()
    {
        out.events.push(BackendEvent::TextDelta {
            index: 0,
            text: t.to_string(),
        });
    }
    if let Some(details) = v.get("details").filter(|d| !d.is_null()) {
        let stop = details
            .get("finish_reason")
            .and_then(Value::as_str)
            .map_or(StopReason::EndTurn, StopReason::from_wire);
        let output = details
            .get("generated_tokens")
            .and_then(Value::as_u64)
            .map_or(0, crate::types::units::token_count);
        out.events.push(BackendEvent::Stop(stop));
        out.events.push(BackendEvent::Metadata {
            usage: Usage {
                input_tokens: prompt_tokens_estimate,
                output_tokens: output,
                input_estimated: true,
                ..Usage::default()
            },
            served_tier: None,
            invoked_model: None,
        });
        out.done = true;
    }
    out
}

/// The kind of an error a container reports inside its stream, by TGI's `error_type`: an
/// overloaded container fails over, a refused input does not.
fn in_stream_error_kind(error_type: Option<&str>) -> ErrorKind {
    match error_type {
        Some("overloaded") => ErrorKind::Throttled,
        Some("validation") => ErrorKind::Validation,
        Some("incomplete_generation") => ErrorKind::Internal,
        _ => ErrorKind::ModelError,
    }
}

/// An answer that cannot be read: garbage from the container or on the way, not the caller's
/// input, so it fails over.
pub(crate) fn malformed(endpoint: &str, region: &str, what: &str) -> Error {
    Error::from(
        ServiceError::new(
            ErrorKind::Internal,
            format!("the container's answer could not be read: {what}"),
            endpoint,
            region,
        )
        .with_code("MalformedContainerResponse"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Tool, ToolChoice};
    use proptest::prelude::*;

    /// JSON in the shapes containers send (TGI token lines, OpenAI chunks, whole answers),
    /// with hostile values where the parser reads numbers, strings and arrays.
    fn container_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            Just(json!(u64::MAX)),
            Just(json!(1e300)),
            Just(json!(-1.5)),
            "\\PC{0,12}".prop_map(Value::String),
        ];
        let value = leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        (value.clone(), value.clone(), value.clone(), value).prop_map(|(a, b, c, d)| {
            json!({
                "token": {"id": a, "text": b, "special": c},
                "generated_text": d,
                "details": {"finish_reason": b, "generated_tokens": a},
                "choices": [{"index": a, "delta": {"content": b, "tool_calls": [{"index": a, "id": b, "function": {"name": c, "arguments": d}}]}, "finish_reason": c}],
                "usage": {"prompt_tokens": a, "completion_tokens": d},
                "error": c, "error_type": b,
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn stream_lines_parse_or_fail_typed_never_panic(v in container_json(), prefix in prop_oneof![Just("data:"), Just("data: "), Just(""), Just("event: ")], cut in 0usize..400) {
            let line = format!("{prefix}{v}");
            let cut = line.floor_char_boundary(cut.min(line.len()));
            for format in [PayloadFormat::Tgi, PayloadFormat::OpenaiChat] {
                for l in [line.as_str(), &line[..cut]] {
                    if let Err(e) = LineReader::new(format, 7, "e", "r").read(l) {
                        prop_assert!(!e.to_string().is_empty());
                    }
                }
            }
        }

        #[test]
        fn whole_answers_parse_or_fail_typed_never_panic(v in container_json(), wrap in any::<bool>(), cut in 0usize..400) {
            let body = if wrap { json!([v]).to_string() } else { v.to_string() };
            for format in [PayloadFormat::Tgi, PayloadFormat::OpenaiChat] {
                for b in [body.as_bytes(), &body.as_bytes()[..cut.min(body.len())]] {
                    let _ = parse_response(format, b, 7, "e", "r");
                }
            }
        }
    }

    #[test]
    fn tgi_prompt_renders_turns() {
        let req = GenerateRequest::new(vec![
            crate::types::Message::user("hi"),
            crate::types::Message::assistant("hello"),
            crate::types::Message::user("bye"),
        ])
        .system("Be brief.");
        assert_eq!(
            tgi_prompt(&req).unwrap(),
            "Be brief.\n\nUser: hi\n\nAssistant: hello\n\nUser: bye\n\nAssistant:"
        );
    }

    #[test]
    fn tgi_lines() {
        let l = LineReader::new(PayloadFormat::Tgi, 3, "e", "r").read(r#"data:{"token":{"id":1,"text":" a","logprob":0,"special":false},"generated_text":null,"details":null}"#).unwrap();
        assert_eq!(
            l.events,
            vec![BackendEvent::TextDelta {
                index: 0,
                text: " a".into()
            }]
        );
        let l = LineReader::new(PayloadFormat::Tgi, 3, "e", "r").read(r#"data:{"token":{"id":2,"text":"</s>","special":true},"generated_text":"a","details":{"finish_reason":"length","generated_tokens":2}}"#).unwrap();
        assert!(l.done);
        assert_eq!(l.events[0], BackendEvent::Stop(StopReason::MaxTokens));
    }

    #[test]
    fn openai_lines_with_tool_calls_and_done() {
        let l = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r").read(r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#).unwrap();
        assert_eq!(l.events.len(), 2);
        assert!(
            LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r")
                .read("data: [DONE]")
                .unwrap()
                .done
        );
        // Garbage is not the model failing on the input: it fails over.
        let err = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r")
            .read("data: {nope")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
    }

    #[test]
    fn plain_json_lines_are_read_like_data_lines() {
        for format in [PayloadFormat::Tgi, PayloadFormat::OpenaiChat] {
            let line = match format {
                PayloadFormat::Tgi => r#"{"token":{"id":1,"text":" a","special":false}}"#,
                PayloadFormat::OpenaiChat => {
                    r#"{"choices":[{"index":0,"delta":{"content":" a"}}]}"#
                }
            };
            let plain = LineReader::new(format, 0, "e", "r").read(line).unwrap();
            let sse = LineReader::new(format, 0, "e", "r")
                .read(&format!("data: {line}"))
                .unwrap();
            assert_eq!(plain.events, sse.events);
            assert_eq!(plain.events.len(), 1);
        }
        // Other server-sent-event fields still carry nothing.
        assert!(
            LineReader::new(PayloadFormat::Tgi, 0, "e", "r")
                .read("event: ping")
                .unwrap()
                .events
                .is_empty()
        );
    }

    #[test]
    fn in_stream_errors_are_typed_by_error_type() {
        for format in [PayloadFormat::Tgi, PayloadFormat::OpenaiChat] {
            let kind = |t: &str| {
                LineReader::new(format, 0, "e", "r")
                    .read(&format!(r#"data:{{"error":"x","error_type":"{t}"}}"#))
                    .unwrap_err()
                    .kind()
            };
            assert_eq!(kind("overloaded"), ErrorKind::Throttled);
            assert_eq!(kind("validation"), ErrorKind::Validation);
            assert_eq!(kind("incomplete_generation"), ErrorKind::Internal);
            assert_eq!(kind("generation"), ErrorKind::ModelError);
        }
        // An OpenAI-compatible server's error object: by its code, a server error fails over.
        let e = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r")
            .read(r#"data: {"error":{"message":"boom","type":"server_error","code":null}}"#)
            .unwrap_err();
        assert!(e.fails_over(), "{e}");
    }

    #[test]
    fn a_call_sent_with_an_empty_id_starts_at_the_finish_with_one_made_for_it() {
        let mut r = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r");
        let mut events = Vec::new();
        for line in [
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ] {
            events.extend(r.read(line).unwrap().events);
        }
        assert!(
            events.contains(&BackendEvent::ToolUseStart {
                index: 2,
                id: "call_0".into(),
                name: "f".into()
            }),
            "{events:?}"
        );
        assert!(
            events.contains(&BackendEvent::ToolUseDelta {
                index: 2,
                input_json: "{\"a\":1}".into()
            }),
            "{events:?}"
        );
    }

    #[test]
    fn a_call_whose_id_and_name_repeat_on_every_chunk_starts_once() {
        let mut r = LineReader::new(PayloadFormat::OpenaiChat, 9, "e", "r");
        let mut events = Vec::new();
        for args in [r#"{\"a\""#, ":1}"] {
            let line = format!(
                r#"data: {{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c1","function":{{"name":"f","arguments":"{args}"}}}}]}}}}]}}"#
            );
            events.extend(r.read(&line).unwrap().events);
        }
        events.extend(
            r.read(r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":4}}"#)
                .unwrap()
                .events,
        );
        let starts = events
            .iter()
            .filter(|e| matches!(e, BackendEvent::ToolUseStart { .. }))
            .count();
        assert_eq!(starts, 1, "{events:?}");
        // No prompt count from the container: the estimate, said as one.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, BackendEvent::Metadata { usage, .. }
            if usage.input_tokens == 9 && usage.input_estimated && usage.output_tokens == 4))
        );
    }

    #[test]
    fn a_tool_index_out_of_range_is_refused_not_wrapped() {
        let line = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":4294967295,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#;
        let err = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r")
            .read(line)
            .unwrap_err();
        assert!(err.to_string().contains("index is out of range"), "{err}");
        let line = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":4294967293,"id":"c","function":{"name":"f"}}]}}]}"#;
        let ok = LineReader::new(PayloadFormat::OpenaiChat, 0, "e", "r")
            .read(line)
            .unwrap();
        assert!(matches!(
            ok.events[0],
            BackendEvent::ToolUseStart {
                index: u32::MAX,
                ..
            }
        ));
    }

    #[test]
    fn openai_request_maps_tools_and_system() {
        let req = GenerateRequest::user("hi")
            .system("sys")
            .tool(Tool::new("f", "F", json!({"type": "object"})))
            .tool_choice(ToolChoice::Any)
            .max_tokens(5);
        let v: Value =
            serde_json::from_slice(&request_body(PayloadFormat::OpenaiChat, &req, true).unwrap())
                .unwrap();
        assert_eq!(v["messages"][0]["role"], "system");
        assert_eq!(v["tools"][0]["function"]["name"], "f");
        assert_eq!(v["tool_choice"], "required");
        assert_eq!(v["max_tokens"], 5);
    }
}
