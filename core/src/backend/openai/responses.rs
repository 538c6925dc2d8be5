//! The Responses API (`POST …/responses`): a request as its body, its `response` object as a
//! [`Completion`], and its typed stream events (`response.output_text.delta`, ...,
//! `response.completed`) as [`BackendEvent`]s.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Malformed;
use super::input;
use crate::backend::{BackendEvent, Call, Completion};
use std::borrow::Cow;

use crate::types::{
    Boundary, CacheTtl, Error, ReasoningDelta, Result, ServiceError, SystemBlock, Usage,
};
use crate::wire::chat::Senders;
use crate::wire::responses::{
    self, Content, Event, FunctionTool, Incomplete, Item, MessageItem, Part, Response,
    ResponsesUsage,
};

/// A Responses request body, serialized straight from the core request (no JSON tree is
/// built; schemas and texts are borrowed).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_options: Option<CacheOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
    store: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

/// `prompt_cache_options`: explicit mode (no implicit breakpoint at the newest message, whose
/// write an agent loop would pay every turn) with the API's one lifetime.
#[derive(Serialize)]
struct CacheOptions {
    mode: &'static str,
    ttl: &'static str,
}

#[derive(Serialize)]
struct TextParam<'a> {
    format: JsonSchemaParam<'a>,
}

#[derive(Serialize)]
struct JsonSchemaParam<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
struct ReasoningParam<'a> {
    effort: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

/// The request as a Responses body. Laneway keeps no state on the service (`store: false`):
/// earlier turns go whole, the model's reasoning as its encrypted content.
pub(super) fn body(call: Call<'_>, model: &str, stream: bool) -> Result<Vec<u8>> {
    let request = call.request;
    let senders = Senders {
        image: &input::image_url,
        tool_result: &input::tool_result_text,
        unsupported: &input::unsupported,
    };
    // Where the model caches on this API, the plan's checkpoints are breakpoints and the
    // service writes nothing else; elsewhere the service's own default holds.
    let explicit = call
        .model
        .prompt_cache()
        .is_some_and(|rules| rules.apis.contains(&call.attempt.target.api));
    let checkpoints = if explicit { call.checkpoints } else { &[] };
    let in_messages: Vec<(usize, usize)> = checkpoints
        .iter()
        .filter_map(|c| match c.at {
            Boundary::Message { index, block } => Some((index, block)),
            _ => None,
        })
        .collect();
    let on_system: Vec<usize> = checkpoints
        .iter()
        .filter_map(|c| match c.at {
            Boundary::System(i) => Some(i),
            _ => None,
        })
        .collect();
    // Only the reasoning items this API made go back (the plan leaves other models' out).
    let mut items = responses::input(
        &request.messages,
        &senders,
        call.attempt.shape.reasoning_history,
        &in_messages,
    )?;
    // `instructions` takes no breakpoint: where the plan's breakpoints go, the system prompt
    // goes as a developer message, a part per block, at the head of the input, on every turn
    // alike (a prefix is matched as it was written).
    let system = if explicit && !request.system.is_empty() {
        items.insert(0, developer_message(call, &on_system));
        String::new()
    } else {
        input::system_text(call)
    };
    let effort = input::effort(call);
    let body = Body {
        model,
        input: items,
        instructions: (!system.is_empty()).then_some(system),
        max_output_tokens: input::max_tokens(call),
        temperature: call.attempt.shape.temperature(request),
        top_p: call.attempt.shape.top_p(request),
        tools: responses::tools(&request.tools),
        tool_choice: request.tool_choice.as_ref().map(responses::tool_choice),
        text: request.output_format.as_ref().map(|f| TextParam {
            format: JsonSchemaParam {
                kind: "json_schema",
                name: f.name().unwrap_or("output"),
                schema: f.schema(),
                strict: true,
            },
        }),
        reasoning: effort.map(|effort| ReasoningParam {
            effort,
            summary: call.model.reasoning().and_then(|r| r.summary.as_deref()),
        }),
        // Nothing is stored on the service: the next turn needs the reasoning itself.
        include: effort.map(|_| ["reasoning.encrypted_content"]),
        service_tier: input::service_tier(call),
        prompt_cache_options: explicit.then_some(CacheOptions {
            mode: "explicit",
            ttl: CacheTtl::ThirtyMinutes.as_str(),
        }),
        prompt_cache_key: (!checkpoints.is_empty()).then(|| cache_key(call)),
        store: false,
        stream,
    };
    serde_json::to_vec(&body)
        .map_err(|e| Error::invalid("request", format!("the body does not serialize: {e}")))
}

/// The system prompt as a developer message, a text part per block, with a breakpoint after
/// each block `marked` names.
fn developer_message<'a>(call: Call<'a>, marked: &[usize]) -> Item<'a> {
    let mut parts = Vec::new();
    for (i, b) in call.request.system.iter().enumerate() {
        if let SystemBlock::Text(text) = b {
            parts.push(Part::InputText {
                text: Cow::Borrowed(text),
                prompt_cache_breakpoint: None,
            });
        }
        if marked.contains(&i) {
            responses::mark_last(&mut parts);
        }
    }
    Item::Message(MessageItem {
        id: None,
        status: None,
        role: Cow::Borrowed("developer"),
        content: Some(Content::Parts(parts)),
    })
}

/// A `prompt_cache_key` that is the same for every call sharing the model, system prompt and
/// tools (the prefix the service should keep on one cache machine), and says nothing of
/// their text: the first 16 bytes of their SHA-256, in hex.
fn cache_key(call: Call<'_>) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(call.attempt.target.id().as_bytes());
    for b in &call.request.system {
        if let SystemBlock::Text(t) = b {
            hash.update([0]);
            hash.update(t.as_bytes());
        }
    }
    for t in responses::tools(&call.request.tools) {
        hash.update([1]);
        hash.update(serde_json::to_vec(&t).unwrap_or_default());
    }
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A whole `response` body as a completion.
pub(super) fn completion(body: &[u8], bad: &Malformed<'_>) -> Result<Completion> {
    let v: Response<'_> = serde_json::from_slice(body)
        .map_err(|e| bad.error(&format!("the body is not a response: {e}")))?;
    if let Some(e) = v.error.as_ref().filter(|e| !e.is_null()) {
        return Err(failed(e, bad));
    }
    if let Some(status @ ("failed" | "cancelled")) = v.status.as_deref() {
        let e = json!({ "code": "server_error", "message": format!("the response is {status}") });
        return Err(failed(&e, bad));
    }
    let output = v
        .output
        .ok_or_else(|| bad.error("the response has no output"))?;
    let (content, called) = responses::read_output(output);
    Ok(Completion {
        content,
        stop_reason: responses::stop_reason(
            v.status.as_deref(),
            v.incomplete_details.as_ref(),
            called,
        ),
        usage: usage(v.usage),
        served_tier: input::served_tier(v.service_tier.as_deref()),
        ..Completion::default()
    })
}

/// Responses' usage (none said: nothing counted).
fn usage(u: Option<ResponsesUsage>) -> Usage {
    u.unwrap_or_default().into_usage()
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

/// A terminal event's `response`, as far as the end of a stream needs it.
#[derive(Debug, Default, Deserialize)]
struct Terminal {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    service_tier: Option<String>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<Value>,
}

/// A stream event as this reader takes it: its `response` as far as [`Terminal`] reads.
type StreamedEvent<'a> = Event<'a, Terminal>;

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

    /// The backend events of one stream event (the text of its `data`).
    pub(super) fn read(&mut self, data: &str, bad: &Malformed<'_>) -> Result<Vec<BackendEvent>> {
        let v: StreamedEvent<'_> = serde_json::from_str(data)
            .map_err(|e| bad.error(&format!("a stream event is not one: {e}")))?;
        let index = || {
            v.output_index
                .ok_or_else(|| bad.error("a stream event has no output_index"))
        };
        let item = || {
            v.item
                .as_ref()
                .ok_or_else(|| bad.error("an item event has no item"))
        };
        let delta = v.delta.as_deref().unwrap_or_default();
        Ok(match &*v.kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                vec![BackendEvent::TextDelta {
                    index: index()?,
                    text: delta.to_string(),
                }]
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                vec![BackendEvent::ReasoningDelta {
                    index: index()?,
                    delta: ReasoningDelta::Text(delta.to_string()),
                }]
            }
            // Summary parts of one item are paragraphs of one block.
            "response.reasoning_summary_part.added" if v.summary_index.unwrap_or(0) > 0 => {
                vec![BackendEvent::ReasoningDelta {
                    index: index()?,
                    delta: ReasoningDelta::Text("\n\n".into()),
                }]
            }
            "response.output_item.added" => match item()? {
                Item::FunctionCall(call) => {
                    self.called = true;
                    let at = index()?;
                    let mut out = vec![BackendEvent::ToolUseStart {
                        index: at,
                        id: call.call_id.to_string(),
                        name: call.name.to_string(),
                    }];
                    // Some servers send the arguments whole with the item.
                    out.extend(self.arguments(at, &call.arguments));
                    out
                }
                _ => Vec::new(),
            },
            "response.function_call_arguments.delta" => {
                let at = index()?;
                self.arguments(at, delta).into_iter().collect()
            }
            "response.function_call_arguments.done" => {
                let at = index()?;
                self.unless_argued(at, v.arguments.as_deref().unwrap_or_default())
            }
            "response.output_item.done" => {
                let at = index()?;
                match item()? {
                    Item::Reasoning(r) => {
                        let mut out = Vec::new();
                        if let Some(id) = &r.id {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Id(id.to_string()),
                            });
                        }
                        if let Some(e) = &r.encrypted_content {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Signature(e.to_string()),
                            });
                        }
                        out
                    }
                    Item::FunctionCall(call) => self.unless_argued(at, &call.arguments),
                    _ => Vec::new(),
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = true;
                let r = v
                    .response
                    .ok_or_else(|| bad.error("a terminal event has no response"))?;
                vec![
                    BackendEvent::Stop(responses::stop_reason(
                        r.status.as_deref(),
                        r.incomplete_details.as_ref(),
                        self.called,
                    )),
                    BackendEvent::Metadata {
                        usage: usage(r.usage),
                        served_tier: input::served_tier(r.service_tier.as_deref()),
                        invoked_model: None,
                    },
                ]
            }
            "response.failed" | "response.cancelled" => {
                let e = v
                    .response
                    .and_then(|r| r.error)
                    .filter(|e| !e.is_null())
                    .unwrap_or_else(|| json!({ "code": "server_error", "message": format!("the response ended {}", v.kind) }));
                return Err(failed(&e, bad));
            }
            "error" => {
                let e = match v.error {
                    Some(nested) if nested.is_object() => nested,
                    _ => json!({ "code": v.code, "message": v.message }),
                };
                return Err(failed(&e, bad));
            }
            _ => Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{OutputBlock, ReasoningBlock, StopReason};

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
            out.extend(e.read(&v.to_string(), &bad())?);
        }
        Ok(out)
    }

    /// A streamed answer: reasoning pieces and its encrypted content, text pieces, calls with
    /// their arguments in pieces, and how it stopped.
    type Streamed = (
        Option<(Vec<String>, String)>,
        Vec<String>,
        Vec<(String, Vec<String>)>,
        bool,
    );

    fn streamed() -> impl proptest::strategy::Strategy<Value = Streamed> {
        use proptest::prelude::*;
        let piece = "[a-z \"\\\\\n\u{e9}\u{1f600}]{1,8}";
        (
            proptest::option::of((
                proptest::collection::vec(piece, 1..4),
                "[A-Za-z0-9+/]{4,12}",
            )),
            proptest::collection::vec(piece, 0..6),
            proptest::collection::vec(
                (
                    "[a-z_]{1,8}",
                    proptest::collection::vec("[a-z0-9,:{}\"]{1,6}", 1..4),
                ),
                0..3,
            ),
            any::<bool>(),
        )
    }

    proptest::proptest! {
        /// What the drop-in streams, the backend reads back as the same answer: each item's
        /// pieces in order, reasoning with its id and encrypted content, calls with their
        /// arguments, the stop and the usage.
        #[test]
        fn a_stream_written_by_the_drop_in_reads_back_as_its_answer(answer in streamed()) {
            use crate::types::{GenerateResponse, StreamEvent, Usage};
            use crate::wire::responses::StreamWriter;
            let (reasoning, text, calls, cut_short) = answer;
            let mut events = Vec::new();
            let mut blocks = Vec::new();
            if let Some((pieces, signature)) = &reasoning {
                for p in pieces {
                    events.push(StreamEvent::ReasoningDelta { index: 0, delta: ReasoningDelta::Text(p.clone()) });
                }
                events.push(StreamEvent::ReasoningDelta { index: 0, delta: ReasoningDelta::Signature(signature.clone()) });
                events.push(StreamEvent::ReasoningDelta { index: 0, delta: ReasoningDelta::Id("rs_7".into()) });
                blocks.push(OutputBlock::Reasoning(ReasoningBlock::Text(crate::types::ReasoningText {
                    text: pieces.concat(), signature: Some(signature.clone()), id: Some("rs_7".into()),
                })));
            }
            for p in &text {
                events.push(StreamEvent::TextDelta { index: 1, text: p.clone() });
            }
            for (k, (name, args)) in calls.iter().enumerate() {
                let index = 2 + u32::try_from(k).unwrap();
                events.push(StreamEvent::ToolUseStart { index, id: format!("call_{k}"), name: name.clone() });
                for a in args {
                    events.push(StreamEvent::ToolUseDelta { index, input_json: a.clone() });
                }
                blocks.push(OutputBlock::ToolUse { id: format!("call_{k}"), name: name.clone(), input: Value::String(args.concat()) });
            }
            if !text.is_empty() {
                blocks.push(OutputBlock::Text(text.concat()));
            }
            let stop = match (calls.is_empty(), cut_short) {
                (false, _) => StopReason::ToolUse,
                (true, true) => StopReason::MaxTokens,
                (true, false) => StopReason::EndTurn,
            };
            let usage = Usage { input_tokens: 12, output_tokens: 34, cache_read_tokens: 5, reasoning_tokens: 3, ..Usage::default() };
            events.push(StreamEvent::Completed(Box::new(GenerateResponse::for_tests(blocks, stop.clone(), usage))));

            let mut writer = StreamWriter::new("resp_1".into(), 0, "m");
            let mut reader = Events::default();
            let mut read = Vec::new();
            for ev in &events {
                for written in writer.on(ev) {
                    read.extend(reader.read(&written.to_string(), &bad()).unwrap());
                }
            }
            proptest::prop_assert!(reader.done);
            let gathered = |pick: &dyn Fn(&BackendEvent) -> Option<String>| -> String {
                read.iter().filter_map(pick).collect()
            };
            proptest::prop_assert_eq!(gathered(&|e| match e { BackendEvent::TextDelta { text, .. } => Some(text.clone()), _ => None }), text.concat());
            if let Some((pieces, signature)) = &reasoning {
                proptest::prop_assert_eq!(gathered(&|e| match e { BackendEvent::ReasoningDelta { delta: ReasoningDelta::Text(t), .. } => Some(t.clone()), _ => None }), pieces.concat());
                proptest::prop_assert_eq!(&gathered(&|e| match e { BackendEvent::ReasoningDelta { delta: ReasoningDelta::Signature(t), .. } => Some(t.clone()), _ => None }), signature);
                proptest::prop_assert_eq!(gathered(&|e| match e { BackendEvent::ReasoningDelta { delta: ReasoningDelta::Id(t), .. } => Some(t.clone()), _ => None }), "rs_7");
            }
            let starts: Vec<(u32, String, String)> = read.iter().filter_map(|e| match e {
                BackendEvent::ToolUseStart { index, id, name } => Some((*index, id.clone(), name.clone())),
                _ => None,
            }).collect();
            proptest::prop_assert_eq!(starts.len(), calls.len());
            for ((index, id, name), (k, (want, args))) in starts.iter().zip(calls.iter().enumerate()) {
                proptest::prop_assert_eq!(id, &format!("call_{k}"));
                proptest::prop_assert_eq!(name, want);
                let argued: String = read.iter().filter_map(|e| match e {
                    BackendEvent::ToolUseDelta { index: i, input_json } if i == index => Some(input_json.clone()),
                    _ => None,
                }).collect();
                proptest::prop_assert_eq!(argued, args.concat());
            }
            proptest::prop_assert!(read.contains(&BackendEvent::Stop(stop)));
            let read_usage = read.iter().find_map(|e| match e { BackendEvent::Metadata { usage, .. } => Some(*usage), _ => None });
            proptest::prop_assert_eq!(read_usage, Some(usage));
        }
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
        let c = completion(v.to_string().as_bytes(), &bad()).unwrap();
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
        assert!(
            completion(failed.to_string().as_bytes(), &bad())
                .unwrap_err()
                .fails_over()
        );
    }

    /// Where the model caches on the call's API: explicit mode, the system prompt as a
    /// developer message with the plan's breakpoints, and a key that names the stable prefix
    /// (the same for another question, another for another system prompt). Elsewhere: none of
    /// it, `instructions` as usual.
    #[test]
    fn explicit_caching_writes_breakpoints_options_and_a_stable_key() {
        use crate::types::{Attempt, Boundary, CacheTtl, Checkpoint, GenerateRequest, Target};
        let config = crate::config::Config::default();
        let astra = "openai.gpt-6-astra";
        let attempt = |api_target: Target| Attempt {
            model: astra.into(),
            target: api_target,
            tier: None,
            latency_optimized: false,
            shape: Default::default(),
        };
        let checkpoints = [
            Checkpoint {
                at: Boundary::System(0),
                ttl: CacheTtl::ThirtyMinutes,
                tokens_before: 2000,
            },
            Checkpoint {
                at: Boundary::Message { index: 0, block: 0 },
                ttl: CacheTtl::ThirtyMinutes,
                tokens_before: 2010,
            },
        ];
        let body_of = |question: &str, system: &str, target: Target| -> Value {
            let request = GenerateRequest::user(question).system(system);
            let attempt = attempt(target);
            let call = Call {
                request: &request,
                attempt: &attempt,
                model: &config.models[astra],
                checkpoints: &checkpoints,
            };
            serde_json::from_slice(&body(call, astra, false).unwrap()).unwrap()
        };
        let mantle = || Target::mantle("us-east-1", std::sync::Arc::from(astra));
        let v = body_of("first question", "the runbook", mantle());
        assert_eq!(
            v["prompt_cache_options"],
            json!({ "mode": "explicit", "ttl": "30m" })
        );
        assert!(v.get("instructions").is_none(), "{v}");
        assert_eq!(v["input"][0]["role"], "developer");
        let marked = json!({ "mode": "explicit" });
        assert_eq!(
            v["input"][0]["content"][0]["prompt_cache_breakpoint"],
            marked
        );
        assert_eq!(
            v["input"][1]["content"][0]["prompt_cache_breakpoint"],
            marked
        );
        let key = v["prompt_cache_key"].as_str().unwrap();
        assert_eq!(key.len(), 32);
        assert!(!key.contains("runbook"));
        let again = body_of("second question", "the runbook", mantle());
        assert_eq!(again["prompt_cache_key"], key);
        let other = body_of("first question", "another runbook", mantle());
        assert_ne!(other["prompt_cache_key"], key);
        // bedrock-runtime's Responses API does not cache Astra: the service's default holds.
        let mut runtime = mantle();
        runtime.api = crate::types::Api::OpenAiRuntime;
        let v = body_of("first question", "the runbook", runtime);
        assert!(v.get("prompt_cache_options").is_none() && v.get("prompt_cache_key").is_none());
        assert_eq!(v["instructions"], "the runbook");
        assert!(
            v["input"][0]["content"][0]
                .get("prompt_cache_breakpoint")
                .is_none()
        );
    }
}
