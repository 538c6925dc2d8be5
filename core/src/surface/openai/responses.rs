//! The Responses API as the `openai` SDKs call it: `responses.create(**body)`. Laneway keeps
//! no state on the service: a conversation goes whole in `input` (`previous_response_id` and
//! `conversation` are refused by name), the model's reasoning back as its items.
//!
//! ```
//! use laneway::surface::openai::responses;
//! let call = responses::request(serde_json::json!({
//!     "model": "openai.gpt-5.6-terra",
//!     "instructions": "Be brief.",
//!     "input": "Hello",
//!     "max_output_tokens": 200,
//! })).unwrap();
//! assert_eq!(call.request.inference.max_tokens, Some(200));
//! ```

use serde_json::{Value, json};

use crate::wire::chat;
use crate::wire::responses::ResponsesUsage;

use super::{
    Fields, Started, Unhonoured, effort_option, finish, format_option, fresh_id, laneway_extras,
    now_unix, start,
};
use crate::types::{
    ContentBlock, Error, GenerateRequest, GenerateResponse, Message, OutputBlock, ReasoningBlock,
    ReasoningDelta, ReasoningText, Result, Role, StopReason, StreamEvent, SystemBlock, Tool,
    ToolChoice, ToolResult, ToolResultContent, ToolSpec, ToolUse,
};

/// A Responses body read for Laneway.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesCall {
    /// The body as Laneway's request, its `laneway` extras (SLO, ...) applied.
    pub request: GenerateRequest,
    /// `stream: true`.
    pub stream: bool,
    /// The `model` asked for, echoed in the answer.
    pub model: String,
    /// Fields the call goes without, and why (said in its decision).
    pub unhonoured: Unhonoured,
}

const NOT_HONOURED: &[(&str, &str)] = &[
    (
        "store",
        "nothing is stored on the service: send the conversation in `input`",
    ),
    (
        "include",
        "reasoning comes back with its encrypted content; nothing else is included",
    ),
    ("truncation", "the conversation is sent whole"),
    (
        "parallel_tool_calls",
        "the model decides how many tools it calls",
    ),
    (
        "user",
        "no end-user id is sent (use `laneway.task_id` or `metadata`)",
    ),
    ("safety_identifier", "no end-user id is sent"),
    (
        "prompt_cache_key",
        "Laneway places prompt-cache checkpoints itself",
    ),
    (
        "top_logprobs",
        "Laneway's backends return no log probabilities",
    ),
    (
        "max_tool_calls",
        "the model decides how many tools it calls",
    ),
];

const REFUSED: &[(&str, &str)] = &[
    (
        "previous_response_id",
        "Laneway keeps no state on the service: send the conversation in `input`",
    ),
    (
        "conversation",
        "Laneway keeps no state on the service: send the conversation in `input`",
    ),
    (
        "background",
        "background responses are not routed by Laneway",
    ),
    ("prompt", "prompt templates are not routed by Laneway"),
];

const READ: &[&str] = &[
    "model",
    "input",
    "instructions",
    "max_output_tokens",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "text",
    "reasoning",
    "service_tier",
    "metadata",
    "stream",
    "laneway",
];

const FIELDS: Fields = Fields {
    api: "Responses",
    read: READ,
    not_honoured: NOT_HONOURED,
    refused: REFUSED,
};

/// A Responses body (with Laneway's options under `laneway`) as a core request.
pub fn request(body: Value) -> Result<ResponsesCall> {
    let Value::Object(mut body) = body else {
        return Err(Error::invalid("request", "a Responses body is an object"));
    };
    let Started {
        model,
        mut options,
        mut unhonoured,
    } = start(&mut body, &FIELDS)?;
    if let Some(m) = body.get("max_output_tokens").filter(|v| !v.is_null()) {
        options.insert("max_tokens".into(), m.clone());
    }
    let reasoning = body.get("reasoning");
    if let Some(effort) = reasoning
        .and_then(|r| r.get("effort"))
        .and_then(Value::as_str)
    {
        effort_option(effort, "reasoning.effort", &mut options, &mut unhonoured)?;
    }
    if reasoning
        .and_then(|r| r.get("summary"))
        .is_some_and(|s| !s.is_null())
    {
        unhonoured.push((
            "reasoning.summary".into(),
            "each model's configuration says which summary it is asked for (`reasoning.summary`)"
                .into(),
        ));
    }
    super::chat::tier_option(body.get("service_tier"), &mut options)?;
    if let Some(format) = body
        .get("text")
        .and_then(|t| t.get("format"))
        .filter(|v| !v.is_null())
    {
        let schema = format.get("schema");
        format_option(
            format,
            "text.format",
            schema,
            "text.format.schema",
            &mut options,
            &mut unhonoured,
        )?;
    }
    let mut request = finish(options)?;
    if let Some(i) = body.get("instructions").and_then(Value::as_str) {
        request.system.push(SystemBlock::Text(i.to_string()));
    }
    let (system, messages) = input(body.get("input"))?;
    request.system.extend(system);
    request.messages = messages;
    request.tools = tools(body.get("tools"))?;
    request.tool_choice = tool_choice(body.get("tool_choice"))?;
    Ok(ResponsesCall {
        request,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model,
        unhonoured,
    })
}

/// `input`: a string, or items (messages, function calls and their outputs, reasoning).
fn input(v: Option<&Value>) -> Result<(Vec<SystemBlock>, Vec<Message>)> {
    let items = match v {
        Some(Value::String(s)) => return Ok((Vec::new(), vec![Message::user(s.clone())])),
        Some(Value::Array(items)) => items,
        _ => {
            return Err(Error::invalid(
                "input",
                "a string or a list of items is required",
            ));
        }
    };
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    let push = |out: &mut Vec<Message>, role: Role, block: ContentBlock| match out.last_mut() {
        // Items of one turn (a reasoning item, text, calls) make one message.
        Some(last) if last.role == role => last.content.push(block),
        _ => out.push(Message {
            role,
            content: vec![block],
        }),
    };
    for (n, item) in items.iter().enumerate() {
        let at = format!("input[{n}]");
        match item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
        {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or_default();
                let blocks = parts(item.get("content"), &at)?;
                match role {
                    "system" | "developer" => {
                        for b in blocks {
                            if let ContentBlock::Text(t) = b {
                                system.push(SystemBlock::Text(t));
                            } else {
                                return Err(Error::invalid(
                                    format!("{at}.content"),
                                    "a system message takes text only",
                                ));
                            }
                        }
                    }
                    "user" | "assistant" => {
                        let role = if role == "user" {
                            Role::User
                        } else {
                            Role::Assistant
                        };
                        for b in blocks {
                            push(&mut out, role, b);
                        }
                    }
                    other => {
                        return Err(Error::invalid(
                            format!("{at}.role"),
                            format!("{other:?}: one of system, developer, user, assistant"),
                        ));
                    }
                }
            }
            "function_call" => {
                let args = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("{}");
                let input = serde_json::from_str(args).map_err(|e| {
                    Error::invalid(format!("{at}.arguments"), format!("not JSON: {e}"))
                })?;
                push(
                    &mut out,
                    Role::Assistant,
                    ContentBlock::ToolUse(ToolUse {
                        id: text(item, "call_id").to_string(),
                        name: text(item, "name").to_string(),
                        input,
                    }),
                );
            }
            "function_call_output" => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                push(
                    &mut out,
                    Role::User,
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: text(item, "call_id").to_string(),
                        content: vec![ToolResultContent::Text(output)],
                        is_error: false,
                    }),
                );
            }
            "reasoning" => {
                let summary: Vec<&str> = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.get("text").and_then(Value::as_str))
                    .collect();
                push(
                    &mut out,
                    Role::Assistant,
                    ContentBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                        text: summary.join("\n\n"),
                        signature: item
                            .get("encrypted_content")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        id: item.get("id").and_then(Value::as_str).map(str::to_string),
                    })),
                );
            }
            other => {
                return Err(Error::invalid(
                    format!("{at}.type"),
                    format!(
                        "a {other:?} item is not routed by Laneway (messages, function calls and their outputs, reasoning are)"
                    ),
                ));
            }
        }
    }
    Ok((system, out))
}

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A message item's content: a string or parts (`input_text`, `output_text`, `input_image`).
fn parts(v: Option<&Value>, at: &str) -> Result<Vec<ContentBlock>> {
    match v {
        Some(Value::String(s)) => Ok(vec![ContentBlock::Text(s.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let at = format!("{at}.content[{j}]");
                match p.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => {
                        Ok(ContentBlock::Text(text(p, "text").to_string()))
                    }
                    Some("refusal") => Ok(ContentBlock::Text(text(p, "refusal").to_string())),
                    Some("input_image") => super::chat::image(text(p, "image_url"), &at),
                    Some(other) => Err(Error::invalid(
                        at,
                        format!("a {other:?} part is not routed by Laneway (text and images are)"),
                    )),
                    None => Err(Error::invalid(at, "a content part needs a type")),
                }
            })
            .collect(),
        _ => Err(Error::invalid(
            format!("{at}.content"),
            "a string or a list of parts",
        )),
    }
}

fn tools(v: Option<&Value>) -> Result<Vec<Tool>> {
    let Some(list) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| Error::invalid("tools", "a list of tools"))?;
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(Error::invalid(
                    format!("tools[{i}].type"),
                    "only function tools are routed by Laneway",
                ));
            }
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| Error::invalid(format!("tools[{i}].name"), "required"))?;
            Ok(Tool::Spec(ToolSpec {
                name: name.to_string(),
                description: t
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                input_schema: t
                    .get("parameters")
                    .filter(|p| !p.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
                strict: t.get("strict").and_then(Value::as_bool).unwrap_or(false),
            }))
        })
        .collect()
}

fn tool_choice(v: Option<&Value>) -> Result<Option<ToolChoice>> {
    chat::read_tool_choice_at(v, "/name", "{ type: \"function\", name }")
}

fn status(stop: &StopReason) -> (&'static str, Value) {
    match stop.as_responses_incomplete() {
        Some(reason) => ("incomplete", json!({ "reason": reason })),
        None => ("completed", Value::Null),
    }
}

fn usage(r: &GenerateResponse) -> Value {
    serde_json::to_value(ResponsesUsage::of(&r.usage)).unwrap_or_default()
}

fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({ "type": "message", "id": id, "status": status, "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [], "logprobs": [] }] })
}

fn call_item(id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({ "type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name,
        "arguments": arguments, "status": status })
}

fn reasoning_item(id: &str, text: &str, encrypted: Option<&str>) -> Value {
    let summary: Vec<Value> = if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "type": "summary_text", "text": text })]
    };
    let mut item = json!({ "type": "reasoning", "id": id, "summary": summary });
    if let Some(e) = encrypted {
        item["encrypted_content"] = json!(e);
    }
    item
}

/// The output items of a whole answer, in order.
fn output(r: &GenerateResponse, response_id: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut text = String::new();
    for (i, b) in r.content.iter().enumerate() {
        match b {
            OutputBlock::Text(t) => text.push_str(t),
            OutputBlock::Citations(c) => text.push_str(&c.content.concat()),
            OutputBlock::Reasoning(ReasoningBlock::Text(t)) => {
                let id =
                    t.id.clone()
                        .unwrap_or_else(|| format!("rs_{response_id}_{i}"));
                items.push(reasoning_item(&id, &t.text, t.signature.as_deref()));
            }
            OutputBlock::Reasoning(ReasoningBlock::Redacted(_)) => {}
            OutputBlock::ToolUse { id, name, input } => {
                items.push(call_item(id, name, &input.to_string(), "completed"))
            }
        }
    }
    if !text.is_empty() {
        items.push(message_item(
            &format!("msg_{response_id}"),
            &text,
            "completed",
        ));
    }
    items
}

/// The answer as a `response` object with `laneway` (decision, timings, cost) beside it.
pub fn response(r: &GenerateResponse, model: &str) -> Value {
    let id = r.decision.call_id.replace([':', '/'], "_");
    let (status, incomplete) = status(&r.stop_reason);
    json!({
        "id": format!("resp_{id}"),
        "object": "response",
        "created_at": now_unix(),
        "status": status,
        "model": model,
        "output": output(r, &id),
        "usage": usage(r),
        "incomplete_details": incomplete,
        "error": null,
        "instructions": null,
        "metadata": {},
        "parallel_tool_calls": true,
        "temperature": null,
        "top_p": null,
        "tool_choice": "auto",
        "tools": [],
        "service_tier": super::chat::service_tier(r),
        "laneway": laneway_extras(r),
    })
}

/// An output item being streamed.
#[derive(Debug)]
enum Open {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
        encrypted: Option<String>,
    },
    Call {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Writes a stream's events as the Responses API's typed events, numbered: `response.created`
/// and `response.in_progress`, each output item added, its deltas and done events, and
/// `response.completed` (or `response.incomplete`) with the whole response and `laneway`.
#[derive(Debug)]
pub struct Events {
    id: String,
    created_at: u64,
    model: String,
    sequence: u64,
    started: bool,
    /// Output items so far: the core's block index of each, and its state.
    items: Vec<(u32, Open)>,
}

impl Events {
    /// Events for a call to `model`.
    pub fn new(model: &str) -> Self {
        Self {
            id: fresh_id("resp_"),
            created_at: now_unix(),
            model: model.to_string(),
            sequence: 0,
            started: false,
            items: Vec::new(),
        }
    }

    fn event(&mut self, kind: &str, mut data: Value) -> Value {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        data
    }

    fn shell(&self, status: &str) -> Value {
        json!({ "id": self.id, "object": "response", "created_at": self.created_at,
            "status": status, "model": self.model, "output": [], "usage": null, "error": null,
            "incomplete_details": null, "instructions": null, "metadata": {},
            "parallel_tool_calls": true, "temperature": null, "top_p": null,
            "tool_choice": "auto", "tools": [] })
    }

    /// The output index of block `index`, opening its item with `open` if it is new.
    fn item(&mut self, index: u32, open: impl FnOnce() -> Open, out: &mut Vec<Value>) -> usize {
        if let Some(at) = self.items.iter().position(|(i, _)| *i == index) {
            return at;
        }
        let state = open();
        let added = match &state {
            Open::Message { id, .. } => {
                json!({ "type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": [] })
            }
            Open::Reasoning { id, .. } => reasoning_item(id, "", None),
            Open::Call { id, name, .. } => call_item(id, name, "", "in_progress"),
        };
        let at = self.items.len();
        self.items.push((index, state));
        let ev = self.event(
            "response.output_item.added",
            json!({ "output_index": at, "item": added }),
        );
        out.push(ev);
        if let Open::Message { id, .. } = &self.items[at].1 {
            let id = id.clone();
            let ev = self.event(
                "response.content_part.added",
                json!({ "item_id": id, "output_index": at, "content_index": 0,
                "part": { "type": "output_text", "text": "", "annotations": [], "logprobs": [] } }),
            );
            out.push(ev);
        }
        if let Open::Reasoning { id, .. } = &self.items[at].1 {
            let id = id.clone();
            let ev = self.event(
                "response.reasoning_summary_part.added",
                json!({ "item_id": id, "output_index": at, "summary_index": 0,
                "part": { "type": "summary_text", "text": "" } }),
            );
            out.push(ev);
        }
        at
    }

    /// The typed events of one stream event.
    pub fn on(&mut self, ev: &StreamEvent) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            let shell = self.shell("in_progress");
            let created = self.event("response.created", json!({ "response": shell }));
            out.push(created);
            let shell = self.shell("in_progress");
            let progress = self.event("response.in_progress", json!({ "response": shell }));
            out.push(progress);
        }
        let response_id = self.id.clone();
        match ev {
            StreamEvent::TextDelta { index, text } => {
                let at = self.item(
                    *index,
                    || Open::Message {
                        id: format!("msg_{response_id}_{index}"),
                        text: String::new(),
                    },
                    &mut out,
                );
                if let Open::Message { id, text: all } = &mut self.items[at].1 {
                    all.push_str(text);
                    let id = id.clone();
                    let e = self.event("response.output_text.delta", json!({ "item_id": id, "output_index": at, "content_index": 0, "delta": text, "logprobs": [] }));
                    out.push(e);
                }
            }
            StreamEvent::ReasoningDelta { index, delta } => {
                let at = self.item(
                    *index,
                    || Open::Reasoning {
                        id: format!("rs_{response_id}_{index}"),
                        text: String::new(),
                        encrypted: None,
                    },
                    &mut out,
                );
                if let Open::Reasoning {
                    id,
                    text,
                    encrypted,
                } = &mut self.items[at].1
                {
                    match delta {
                        ReasoningDelta::Text(t) => {
                            text.push_str(t);
                            let id = id.clone();
                            let e = self.event("response.reasoning_summary_text.delta", json!({ "item_id": id, "output_index": at, "summary_index": 0, "delta": t }));
                            out.push(e);
                        }
                        ReasoningDelta::Signature(s) => {
                            encrypted.get_or_insert_with(String::new).push_str(s)
                        }
                        ReasoningDelta::Id(i) => *id = i.clone(),
                        ReasoningDelta::Redacted(_) => {}
                    }
                }
            }
            StreamEvent::ToolUseStart { index, id, name } => {
                let (id, name) = (id.clone(), name.clone());
                self.item(
                    *index,
                    || Open::Call {
                        id,
                        name,
                        arguments: String::new(),
                    },
                    &mut out,
                );
            }
            StreamEvent::ToolUseDelta { index, input_json } => {
                if let Some(at) = self.items.iter().position(|(i, _)| i == index)
                    && let Open::Call { id, arguments, .. } = &mut self.items[at].1
                {
                    arguments.push_str(input_json);
                    let item_id = format!("fc_{id}");
                    let e = self.event(
                        "response.function_call_arguments.delta",
                        json!({ "item_id": item_id, "output_index": at, "delta": input_json }),
                    );
                    out.push(e);
                }
            }
            StreamEvent::Completed(r) => {
                let items = std::mem::take(&mut self.items);
                let mut output = Vec::new();
                for (at, (_, open)) in items.into_iter().enumerate() {
                    let item = match open {
                        Open::Message { id, text } => {
                            let e = self.event("response.output_text.done", json!({ "item_id": id, "output_index": at, "content_index": 0, "text": text, "logprobs": [] }));
                            out.push(e);
                            let e = self.event("response.content_part.done", json!({ "item_id": id, "output_index": at, "content_index": 0,
                                "part": { "type": "output_text", "text": text, "annotations": [], "logprobs": [] } }));
                            out.push(e);
                            message_item(&id, &text, "completed")
                        }
                        Open::Reasoning {
                            id,
                            text,
                            encrypted,
                        } => {
                            let e = self.event("response.reasoning_summary_text.done", json!({ "item_id": id, "output_index": at, "summary_index": 0, "text": text }));
                            out.push(e);
                            let e = self.event(
                                "response.reasoning_summary_part.done",
                                json!({ "item_id": id, "output_index": at, "summary_index": 0,
                                "part": { "type": "summary_text", "text": text } }),
                            );
                            out.push(e);
                            reasoning_item(&id, &text, encrypted.as_deref())
                        }
                        Open::Call {
                            id,
                            name,
                            arguments,
                        } => {
                            let e = self.event("response.function_call_arguments.done", json!({ "item_id": format!("fc_{id}"), "output_index": at, "name": name, "arguments": arguments }));
                            out.push(e);
                            call_item(&id, &name, &arguments, "completed")
                        }
                    };
                    let e = self.event(
                        "response.output_item.done",
                        json!({ "output_index": at, "item": item }),
                    );
                    out.push(e);
                    output.push(item);
                }
                let (status, incomplete) = status(&r.stop_reason);
                let mut whole = self.shell(status);
                whole["output"] = Value::Array(output);
                whole["usage"] = usage(r);
                whole["incomplete_details"] = incomplete;
                whole["service_tier"] = json!(super::chat::service_tier(r));
                whole["output_text"] = json!(r.text());
                whole["laneway"] = laneway_extras(r);
                let kind = if status == "completed" {
                    "response.completed"
                } else {
                    "response.incomplete"
                };
                let e = self.event(kind, json!({ "response": whole }));
                out.push(e);
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_of_a_conversation_read_into_turns() {
        let call = request(json!({
            "model": "openai.gpt-5.6-terra",
            "instructions": "Be brief.",
            "input": [
                { "role": "user", "content": "Weather in Oslo?" },
                { "type": "reasoning", "id": "rs_1", "summary": [{ "type": "summary_text", "text": "call it" }], "encrypted_content": "gAAA" },
                { "type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}" },
                { "type": "function_call_output", "call_id": "c1", "output": "Sunny" },
            ],
            "tools": [{ "type": "function", "name": "weather", "parameters": { "type": "object" } }],
            "tool_choice": { "type": "function", "name": "weather" },
            "text": { "format": { "type": "json_schema", "name": "w", "schema": { "type": "object" } } },
            "reasoning": { "effort": "low" },
            "store": false,
        }))
        .unwrap();
        let r = &call.request;
        assert_eq!(r.system, vec![SystemBlock::Text("Be brief.".into())]);
        assert_eq!(r.messages.len(), 3);
        let ContentBlock::Reasoning(ReasoningBlock::Text(t)) = &r.messages[1].content[0] else {
            panic!()
        };
        assert_eq!(
            (t.id.as_deref(), t.signature.as_deref()),
            (Some("rs_1"), Some("gAAA"))
        );
        assert!(
            matches!(&r.messages[1].content[1], ContentBlock::ToolUse(u) if u.name == "weather")
        );
        assert_eq!(r.tool_choice, Some(ToolChoice::Tool("weather".into())));
        assert!(r.output_format.is_some() && r.reasoning.is_some());
        assert_eq!(call.unhonoured[0].0, "store");
        let e = request(json!({ "model": "m", "input": "x", "previous_response_id": "resp_1" }))
            .unwrap_err();
        assert!(e.to_string().contains("previous_response_id"));
    }
}
