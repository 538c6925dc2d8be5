//! The Responses API (`POST …/responses`): a request as its body, its `response` object as a
//! [`Completion`], and its typed stream events (`response.output_text.delta`, ...,
//! `response.completed`) as [`BackendEvent`]s.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::Malformed;
use super::input;
use crate::backend::{BackendEvent, Call, Completion};
use crate::types::{
    ContentBlock, Error, OutputBlock, ReasoningBlock, ReasoningDelta, ReasoningText, Result, Role,
    ServiceError, StopReason, Tool, ToolChoice, Usage,
};
use crate::wire::responses::ResponsesUsage;

/// A Responses request body, serialized straight from the core request (no JSON tree is
/// built; schemas and texts are borrowed).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: Vec<InputItem<'a>>,
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
    tool_choice: Option<Choice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'static str>,
    store: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<InputPart<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: String,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryPart<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputPart<'a> {
    InputText { text: Cow<'a, str> },
    OutputText { text: Cow<'a, str> },
    InputImage { image_url: String },
}

#[derive(Serialize)]
struct SummaryPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Choice<'a> {
    Word(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
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
    let mut input: Vec<InputItem<'_>> = Vec::with_capacity(request.messages.len());
    for (i, m) in request.messages.iter().enumerate() {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let text = |t: Cow<'static, str>| -> InputPart<'static> {
            match m.role {
                Role::User => InputPart::InputText { text: t },
                Role::Assistant => InputPart::OutputText { text: t },
            }
        };
        let mut parts: Vec<InputPart<'_>> = Vec::new();
        for (j, b) in m.content.iter().enumerate() {
            let at = || format!("messages[{i}].content[{j}]");
            match b {
                ContentBlock::Text(t) => parts.push(match m.role {
                    Role::User => InputPart::InputText {
                        text: Cow::Borrowed(t),
                    },
                    Role::Assistant => InputPart::OutputText {
                        text: Cow::Borrowed(t),
                    },
                }),
                ContentBlock::Citations(c) => parts.push(text(Cow::Owned(c.content.concat()))),
                ContentBlock::Image(image) if m.role == Role::User => {
                    parts.push(InputPart::InputImage {
                        image_url: input::image_url(image, &at())?,
                    })
                }
                ContentBlock::ToolUse(t) => {
                    flush(&mut input, role, &mut parts);
                    input.push(InputItem::FunctionCall {
                        call_id: &t.id,
                        name: &t.name,
                        arguments: t.input.to_string(),
                    });
                }
                ContentBlock::ToolResult(r) => {
                    flush(&mut input, role, &mut parts);
                    input.push(InputItem::FunctionCallOutput {
                        call_id: &r.tool_use_id,
                        output: input::tool_result_text(&r.content, &at())?,
                    });
                }
                ContentBlock::Reasoning(r) => {
                    // Only the reasoning items this API made go back (the plan leaves other
                    // models' reasoning out), each by its id with its encrypted content.
                    if call.attempt.shape.reasoning_history
                        && let ReasoningBlock::Text(ReasoningText {
                            text,
                            signature,
                            id: Some(id),
                        }) = r
                    {
                        flush(&mut input, role, &mut parts);
                        let summary = if text.is_empty() {
                            Vec::new()
                        } else {
                            vec![SummaryPart {
                                kind: "summary_text",
                                text,
                            }]
                        };
                        input.push(InputItem::Reasoning {
                            id,
                            summary,
                            encrypted_content: signature.as_deref(),
                        });
                    }
                }
                // The service caches prefixes by itself; checkpoints have no spelling here.
                ContentBlock::CachePoint(_) => {}
                other => return Err(input::unsupported(other, &at())),
            }
        }
        flush(&mut input, role, &mut parts);
    }
    let system = input::system_text(call);
    let tools = request
        .tools
        .iter()
        .filter_map(|t| match t {
            Tool::Spec(s) => Some(FunctionTool {
                kind: "function",
                name: &s.name,
                description: s.description.as_deref(),
                parameters: &s.input_schema,
                strict: s.strict,
            }),
            Tool::CachePoint(_) => None,
        })
        .collect();
    let effort = input::effort(call);
    let body = Body {
        model,
        input,
        instructions: (!system.is_empty()).then_some(system),
        max_output_tokens: input::max_tokens(call),
        temperature: request.inference.temperature,
        top_p: request.inference.top_p,
        tools,
        tool_choice: request.tool_choice.as_ref().map(|c| match c {
            ToolChoice::Auto => Choice::Word("auto"),
            ToolChoice::Any => Choice::Word("required"),
            ToolChoice::Tool(name) => Choice::Function {
                kind: "function",
                name,
            },
        }),
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
        store: false,
        stream,
    };
    serde_json::to_vec(&body)
        .map_err(|e| Error::invalid("request", format!("the body does not serialize: {e}")))
}

/// Closes the message being gathered, if it has parts.
fn flush<'a>(items: &mut Vec<InputItem<'a>>, role: &'static str, parts: &mut Vec<InputPart<'a>>) {
    if !parts.is_empty() {
        items.push(InputItem::Message {
            role,
            content: std::mem::take(parts),
        });
    }
}

/// A `response` object, as far as a completion needs it (parsed in one pass: unread fields
/// are skipped, not built).
#[derive(Debug, Default, Deserialize)]
struct ResponseBody {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: Option<Vec<Item>>,
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    service_tier: Option<String>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
}

#[derive(Debug, Default, Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// An output item: a message, a function call or reasoning (one flat shape for all three,
/// so that it parses without buffering).
#[derive(Debug, Default, Deserialize)]
struct Item {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    content: Option<Vec<Part>>,
    #[serde(default)]
    summary: Option<Vec<Part>>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Part {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// A whole `response` body as a completion.
pub(super) fn completion(body: &[u8], bad: &Malformed<'_>) -> Result<Completion> {
    let v: ResponseBody = serde_json::from_slice(body)
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
    let mut content = Vec::new();
    let mut called = false;
    for item in output {
        match item.kind.as_deref() {
            Some("message") => {
                for part in item.content.unwrap_or_default() {
                    match part.kind.as_deref() {
                        Some("output_text") => {
                            content.push(OutputBlock::Text(part.text.unwrap_or_default()))
                        }
                        Some("refusal") => {
                            content.push(OutputBlock::Text(part.refusal.unwrap_or_default()))
                        }
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                called = true;
                content.push(OutputBlock::ToolUse {
                    id: item.call_id.unwrap_or_default(),
                    name: item.name.unwrap_or_default(),
                    input: arguments(item.arguments.as_deref().unwrap_or_default()),
                });
            }
            Some("reasoning") => {
                let text = reasoning_text(item.summary.as_deref(), item.content.as_deref());
                if !text.is_empty() || item.encrypted_content.is_some() {
                    content.push(OutputBlock::Reasoning(ReasoningBlock::Text(
                        ReasoningText {
                            text,
                            signature: item.encrypted_content,
                            id: item.id,
                        },
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(Completion {
        content,
        stop_reason: stop_reason(v.status.as_deref(), v.incomplete_details.as_ref(), called),
        usage: usage(v.usage.as_ref()),
        served_tier: input::served_tier(v.service_tier.as_deref()),
        ..Completion::default()
    })
}

/// A function call's arguments as JSON (the text itself when it does not parse).
fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// A reasoning item's text: its summary's paragraphs, else its full reasoning text
/// (open-weight models on mantle send `content` of `reasoning_text` parts).
fn reasoning_text(summary: Option<&[Part]>, content: Option<&[Part]>) -> String {
    fn texts(parts: Option<&[Part]>) -> Vec<&str> {
        parts
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect()
    }
    let summary = texts(summary);
    if summary.is_empty() {
        texts(content).concat()
    } else {
        summary.join("\n\n")
    }
}

/// Why a response ended: its status and `incomplete_details.reason`.
fn stop_reason(status: Option<&str>, incomplete: Option<&Incomplete>, called: bool) -> StopReason {
    match status {
        Some("incomplete") => {
            StopReason::from_responses_incomplete(incomplete.and_then(|i| i.reason.as_deref()))
        }
        _ if called => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// Responses' usage: `input_tokens` counts cached ones too (and, on Bedrock, those written to
/// the cache); `output_tokens` counts reasoning.
fn usage(u: Option<&ResponsesUsage>) -> Usage {
    u.cloned().unwrap_or_default().into_usage()
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

/// One stream event, borrowing from its text: the fields the events Laneway reads carry
/// (`item` and `response` are read only where they matter).
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u32>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// An item of an `output_item` event, without its content (the text came as deltas).
#[derive(Debug, Deserialize)]
struct ItemHead<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default)]
    encrypted_content: Option<String>,
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
        let v: Event<'_> = serde_json::from_str(data)
            .map_err(|e| bad.error(&format!("a stream event is not one: {e}")))?;
        let index = || {
            v.output_index
                .ok_or_else(|| bad.error("a stream event has no output_index"))
        };
        let item = || -> Result<ItemHead<'_>> {
            let raw = v
                .item
                .ok_or_else(|| bad.error("an item event has no item"))?;
            serde_json::from_str(raw.get())
                .map_err(|e| bad.error(&format!("an item is not one: {e}")))
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
            "response.output_item.added" => {
                let item = item()?;
                match item.kind.as_deref() {
                    Some("function_call") => {
                        self.called = true;
                        let at = index()?;
                        let mut out = vec![BackendEvent::ToolUseStart {
                            index: at,
                            id: item.call_id.unwrap_or_default(),
                            name: item.name.unwrap_or_default(),
                        }];
                        // Some servers send the arguments whole with the item.
                        out.extend(
                            self.arguments(at, item.arguments.as_deref().unwrap_or_default()),
                        );
                        out
                    }
                    _ => Vec::new(),
                }
            }
            "response.function_call_arguments.delta" => {
                let at = index()?;
                self.arguments(at, delta).into_iter().collect()
            }
            "response.function_call_arguments.done" => {
                let at = index()?;
                self.unless_argued(at, v.arguments.as_deref().unwrap_or_default())
            }
            "response.output_item.done" => {
                let item = item()?;
                let at = index()?;
                match item.kind.as_deref() {
                    Some("reasoning") => {
                        let mut out = Vec::new();
                        if let Some(id) = item.id {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Id(id),
                            });
                        }
                        if let Some(e) = item.encrypted_content {
                            out.push(BackendEvent::ReasoningDelta {
                                index: at,
                                delta: ReasoningDelta::Signature(e),
                            });
                        }
                        out
                    }
                    Some("function_call") => {
                        self.unless_argued(at, item.arguments.as_deref().unwrap_or_default())
                    }
                    _ => Vec::new(),
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = true;
                let raw = v
                    .response
                    .ok_or_else(|| bad.error("a terminal event has no response"))?;
                let r: Terminal = serde_json::from_str(raw.get()).map_err(|e| {
                    bad.error(&format!("a terminal event's response is not one: {e}"))
                })?;
                vec![
                    BackendEvent::Stop(stop_reason(
                        r.status.as_deref(),
                        r.incomplete_details.as_ref(),
                        self.called,
                    )),
                    BackendEvent::Metadata {
                        usage: usage(r.usage.as_ref()),
                        served_tier: input::served_tier(r.service_tier.as_deref()),
                        invoked_model: None,
                    },
                ]
            }
            "response.failed" | "response.cancelled" => {
                let r: Terminal = v
                    .response
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or_default();
                let e = r
                    .error
                    .filter(|e| !e.is_null())
                    .unwrap_or_else(|| json!({ "code": "server_error", "message": format!("the response ended {}", v.kind) }));
                return Err(failed(&e, bad));
            }
            "error" => {
                let e = match v
                    .error
                    .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                {
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
}
