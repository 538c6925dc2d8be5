//! Chat Completions as the `openai` SDKs call it: `chat.completions.create(**body)`.
//!
//! ```
//! use laneway::surface::openai::chat;
//! let call = chat::request(serde_json::json!({
//!     "model": "amazon.nova-lite-v1:0",
//!     "messages": [
//!         { "role": "system", "content": "Be brief." },
//!         { "role": "user", "content": "Hello" },
//!     ],
//!     "max_completion_tokens": 64,
//!     "stream": true,
//!     "laneway": { "slo": "interactive" },
//! })).unwrap();
//! assert_eq!(call.request.inference.max_tokens, Some(64));
//! assert!(call.stream && call.unhonoured.is_empty());
//! ```

use serde_json::{Map, Value, json};

use super::{
    Fields, Started, Unhonoured, effort_option, finish, format_option, fresh_id, laneway_extras,
    now_unix, start,
};
use crate::types::{
    ContentBlock, Error, GenerateRequest, GenerateResponse, Message, OutputBlock, ReasoningDelta,
    Result, Role, ServiceTier, StreamEvent, SystemBlock, ToolResult, ToolResultContent, ToolUse,
};
use crate::wire::chat::{self, ChatUsage};

/// A Chat Completions body read for Laneway.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCall {
    /// The body as Laneway's request, its `laneway` extras (SLO, ...) applied.
    pub request: GenerateRequest,
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// The `model` asked for, echoed in the answer.
    pub model: String,
    /// Fields the call goes without, and why (said in its decision).
    pub unhonoured: Unhonoured,
}

/// Fields carried on without effect, and why.
const NOT_HONOURED: &[(&str, &str)] = &[
    (
        "frequency_penalty",
        "Bedrock's models take no frequency penalty",
    ),
    (
        "presence_penalty",
        "Bedrock's models take no presence penalty",
    ),
    ("logit_bias", "Bedrock's models take no logit bias"),
    ("logprobs", "Laneway's backends return no log probabilities"),
    (
        "top_logprobs",
        "Laneway's backends return no log probabilities",
    ),
    ("seed", "sampling is not seeded on Bedrock"),
    (
        "user",
        "no end-user id is sent (use `laneway.task_id` or `metadata`)",
    ),
    ("store", "nothing is stored on the service"),
    (
        "parallel_tool_calls",
        "the model decides how many tools it calls",
    ),
    ("prediction", "predicted outputs are not sent"),
    (
        "prompt_cache_key",
        "Laneway places prompt-cache checkpoints itself",
    ),
    ("safety_identifier", "no end-user id is sent"),
    ("verbosity", "not sent to Bedrock's models"),
];

/// Fields Laneway refuses, and why.
const REFUSED: &[(&str, &str)] = &[
    ("audio", "audio output is not routed by Laneway"),
    ("modalities", "only text output is routed by Laneway"),
    (
        "web_search_options",
        "server-side web search is not routed by Laneway",
    ),
    (
        "functions",
        "the deprecated `functions` field: give `tools`",
    ),
    (
        "function_call",
        "the deprecated `function_call` field: give `tool_choice`",
    ),
];

/// The fields read into the core request.
const READ: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "tools",
    "tool_choice",
    "response_format",
    "reasoning_effort",
    "service_tier",
    "metadata",
    "stream",
    "stream_options",
    "n",
    "laneway",
];

const FIELDS: Fields = Fields {
    api: "Chat Completions",
    read: READ,
    not_honoured: NOT_HONOURED,
    refused: REFUSED,
};

/// A Chat Completions body (with Laneway's options under `laneway`) as a core request.
pub fn request(body: Value) -> Result<ChatCall> {
    let Value::Object(mut body) = body else {
        return Err(Error::invalid(
            "request",
            "a Chat Completions body is an object",
        ));
    };
    if let Some(n) = body.get("n").and_then(Value::as_u64).filter(|n| *n != 1) {
        return Err(Error::invalid(
            "n",
            format!("{n} choices: Laneway routes one answer per call"),
        ));
    }
    let Started {
        model,
        mut options,
        mut unhonoured,
    } = start(&mut body, &FIELDS)?;
    let max = body
        .get("max_completion_tokens")
        .filter(|v| !v.is_null())
        .or_else(|| body.get("max_tokens").filter(|v| !v.is_null()));
    if let Some(m) = max {
        options.insert("max_tokens".into(), m.clone());
    }
    match body.get("stop") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            options.insert("stop_sequences".into(), json!([s]));
        }
        Some(v @ Value::Array(_)) => {
            options.insert("stop_sequences".into(), v.clone());
        }
        Some(_) => return Err(Error::invalid("stop", "a string or a list of strings")),
    }
    if let Some(effort) = body.get("reasoning_effort").and_then(Value::as_str) {
        effort_option(effort, "reasoning_effort", &mut options, &mut unhonoured)?;
    }
    tier_option(body.get("service_tier"), &mut options)?;
    if let Some(format) = body.get("response_format").filter(|v| !v.is_null()) {
        let schema = format.pointer("/json_schema/schema");
        format_option(
            format,
            "response_format",
            schema,
            "response_format.json_schema.schema",
            &mut options,
            &mut unhonoured,
        )?;
    }
    let mut request = finish(options)?;
    let (system, messages) = messages(body.get("messages"))?;
    request.system = system;
    request.messages = messages;
    request.tools = chat::read_tools(body.get("tools"))?;
    request.tool_choice = chat::read_tool_choice(body.get("tool_choice"))?;
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(ChatCall {
        request,
        stream,
        include_usage,
        model,
        unhonoured,
    })
}

/// `service_tier` as a forced tier: `default` is standard; `auto` leaves it to the SLO.
pub(super) fn tier_option(v: Option<&Value>, options: &mut Map<String, Value>) -> Result<()> {
    let name = v.and_then(Value::as_str);
    // Only a tier with an OpenAI name of its own is asked for by it.
    let tier = name
        .and_then(ServiceTier::from_openai)
        .filter(|t| t.openai_name().is_some());
    match (name, tier) {
        (None | Some("auto"), _) => {}
        (Some("default"), _) => {
            options.insert("tier".into(), json!("standard"));
        }
        (Some(_), Some(tier)) => {
            options.insert("tier".into(), json!(tier.as_str()));
        }
        (Some(other), None) => {
            return Err(Error::invalid(
                "service_tier",
                format!(
                    "{other:?}: one of auto, default, {}",
                    ServiceTier::known()
                        .into_iter()
                        .filter_map(ServiceTier::openai_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// An effort word as Laneway's (`minimal` is low, `xhigh` max); `None` for `none`.
pub(super) fn reasoning_effort(word: &str) -> Result<Option<&'static str>> {
    Ok(Some(match word {
        "none" => return Ok(None),
        "minimal" | "low" => "low",
        "medium" => "medium",
        "high" => "high",
        "xhigh" | "max" => "max",
        other => {
            return Err(Error::invalid(
                "reasoning_effort",
                format!("{other:?}: one of none, minimal, low, medium, high, xhigh, max"),
            ));
        }
    }))
}

/// The messages: system and developer turns as system blocks, the rest as turns.
fn messages(list: Option<&Value>) -> Result<(Vec<SystemBlock>, Vec<Message>)> {
    let list = list
        .and_then(Value::as_array)
        .ok_or_else(|| Error::invalid("messages", "a list of messages is required"))?;
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let at = format!("messages[{i}]");
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let blocks = content(m.get("content"), &at)?;
        let (role, blocks) = match role {
            "system" | "developer" => {
                for b in blocks {
                    match b {
                        ContentBlock::Text(t) => system.push(SystemBlock::Text(t)),
                        _ => {
                            return Err(Error::invalid(
                                format!("{at}.content"),
                                "a system message takes text only",
                            ));
                        }
                    }
                }
                continue;
            }
            "user" => (Role::User, blocks),
            "assistant" => {
                let mut blocks = blocks;
                for (k, call) in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let args = call
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    let input = serde_json::from_str(args).map_err(|e| {
                        Error::invalid(
                            format!("{at}.tool_calls[{k}].function.arguments"),
                            format!("not JSON: {e}"),
                        )
                    })?;
                    blocks.push(ContentBlock::ToolUse(ToolUse {
                        id: text_at(call, "/id").to_string(),
                        name: text_at(call, "/function/name").to_string(),
                        input,
                    }));
                }
                if let Some(r) = m.get("refusal").and_then(Value::as_str) {
                    blocks.push(ContentBlock::Text(r.to_string()));
                }
                (Role::Assistant, blocks)
            }
            "tool" => {
                let text: String = blocks
                    .into_iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                let result = ContentBlock::ToolResult(ToolResult {
                    tool_use_id: text_at(m, "/tool_call_id").to_string(),
                    content: vec![ToolResultContent::Text(text)],
                    is_error: false,
                });
                // Consecutive tool results answer one assistant turn: one user turn.
                match out.last_mut() {
                    Some(last)
                        if last.role == Role::User
                            && last
                                .content
                                .iter()
                                .all(|b| matches!(b, ContentBlock::ToolResult(_))) =>
                    {
                        last.content.push(result);
                        continue;
                    }
                    _ => (Role::User, vec![result]),
                }
            }
            other => {
                return Err(Error::invalid(
                    format!("{at}.role"),
                    format!("{other:?}: one of system, developer, user, assistant, tool"),
                ));
            }
        };
        if !blocks.is_empty() {
            out.push(Message {
                role,
                content: blocks,
            });
        }
    }
    Ok((system, out))
}

fn text_at<'v>(v: &'v Value, path: &str) -> &'v str {
    v.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

/// A message's `content`: a string or a list of parts (text, images as data URLs).
fn content(v: Option<&Value>, at: &str) -> Result<Vec<ContentBlock>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![ContentBlock::Text(s.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let at = format!("{at}.content[{j}]");
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => Ok(ContentBlock::Text(text_at(p, "/text").to_string())),
                    Some("image_url") => chat::read_image_url(
                        text_at(p, "/image_url/url"),
                        &format!("{at}.image_url.url"),
                    ),
                    Some(other) => Err(Error::invalid(
                        at,
                        format!("a {other:?} part is not routed by Laneway (text and images are)"),
                    )),
                    None => Err(Error::invalid(at, "a content part needs a type")),
                }
            })
            .collect(),
        Some(_) => Err(Error::invalid(
            format!("{at}.content"),
            "a string or a list of parts",
        )),
    }
}

fn usage(r: &GenerateResponse) -> Value {
    serde_json::to_value(ChatUsage::of(&r.usage)).unwrap_or_default()
}

/// The answer as a `chat.completion` with `laneway` (decision, timings, cost) beside it.
pub fn completion(r: &GenerateResponse, model: &str) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for b in &r.content {
        match b {
            OutputBlock::Text(t) => text.push_str(t),
            OutputBlock::Citations(c) => text.push_str(&c.content.concat()),
            OutputBlock::Reasoning(rb) => reasoning.push_str(rb.text()),
            OutputBlock::ToolUse { id, name, input } => {
                calls.push(chat::tool_call(id, name, input))
            }
        }
    }
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
        "refusal": null,
    });
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    json!({
        "id": format!("chatcmpl-{}", r.decision.call_id),
        "object": "chat.completion",
        "created": now_unix(),
        "model": model,
        "choices": [{
            "index": 0, "message": message, "logprobs": null,
            "finish_reason": r.stop_reason.as_chat_finish(),
        }],
        "usage": usage(r),
        "service_tier": chat::served_tier_word(r),

        "laneway": laneway_extras(r),
    })
}

/// Writes a stream's events as `chat.completion.chunk`s: a first chunk with the role, the
/// text, reasoning and tool-call deltas, the finish, and (with `include_usage`) a last chunk
/// with the usage; the last chunk carries `laneway`.
#[derive(Debug)]
pub struct Chunks {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    started: bool,
    /// Block indexes of the tool calls, in order: a call's place is its chunk index.
    calls: Vec<u32>,
}

impl Chunks {
    /// Chunks for a call to `model`; `id` is the answer's.
    pub fn new(model: &str, include_usage: bool) -> Self {
        Self {
            id: fresh_id("chatcmpl-"),
            created: now_unix(),
            model: model.to_string(),
            include_usage,
            started: false,
            calls: Vec::new(),
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        })
    }

    /// The chunks of one stream event.
    pub fn event(&mut self, ev: &StreamEvent) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(self.chunk(json!({ "role": "assistant", "content": "" }), None));
        }
        match ev {
            StreamEvent::TextDelta { text, .. } => {
                out.push(self.chunk(json!({ "content": text }), None));
            }
            StreamEvent::ReasoningDelta {
                delta: ReasoningDelta::Text(t),
                ..
            } => out.push(self.chunk(json!({ "reasoning_content": t }), None)),
            StreamEvent::ToolUseStart { index, id, name } => {
                let k = self.calls.len();
                self.calls.push(*index);
                out.push(self.chunk(
                    json!({ "tool_calls": [{ "index": k, "id": id, "type": "function",
                        "function": { "name": name, "arguments": "" } }] }),
                    None,
                ));
            }
            StreamEvent::ToolUseDelta { index, input_json } => {
                if let Some(k) = self.calls.iter().position(|i| i == index) {
                    out.push(self.chunk(
                        json!({ "tool_calls": [{ "index": k, "function": { "arguments": input_json } }] }),
                        None,
                    ));
                }
            }
            StreamEvent::Completed(r) => {
                let mut last = self.chunk(json!({}), Some(r.stop_reason.as_chat_finish()));
                last["service_tier"] = json!(chat::served_tier_word(r));
                if self.include_usage {
                    out.push(last);
                    last = json!({
                        "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model, "choices": [],
                        "usage": usage(r), "service_tier": chat::served_tier_word(r),
                    });
                }
                last["laneway"] = laneway_extras(r);
                out.push(last);
            }
            // Signatures, citations and the seam of a continuation have no chunk of their own.
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ImageFormat;
    use crate::types::ToolChoice;
    use base64::Engine as _;
    use proptest::prelude::*;

    /// A conversation as agents hold it: user text, assistant text with tool calls, and the
    /// tool results that answer them, in turn.
    fn conversation() -> impl Strategy<Value = Vec<Message>> {
        let turn = (
            "[a-z ]{1,20}",
            "[a-z ]{1,20}",
            proptest::collection::vec(("[a-z_]{1,8}", "[a-z]{0,6}", "[a-z ]{0,12}"), 0..3),
        );
        proptest::collection::vec(turn, 1..4).prop_map(|turns| {
            let mut out = Vec::new();
            for (t, (asked, answer, calls)) in turns.into_iter().enumerate() {
                out.push(Message::user(asked));
                let mut content = vec![ContentBlock::Text(answer)];
                let mut results = Vec::new();
                for (k, (name, arg, result)) in calls.into_iter().enumerate() {
                    let id = format!("call_{t}_{k}");
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id: id.clone(),
                        name,
                        input: json!({ "q": arg }),
                    }));
                    results.push(ContentBlock::ToolResult(ToolResult {
                        tool_use_id: id,
                        content: vec![ToolResultContent::Text(result)],
                        is_error: false,
                    }));
                }
                out.push(Message {
                    role: Role::Assistant,
                    content,
                });
                if !results.is_empty() {
                    out.push(Message {
                        role: Role::User,
                        content: results,
                    });
                }
            }
            out
        })
    }

    proptest! {
        /// What the backends write (`wire::chat::messages`), the drop-in reads back as it was.
        #[test]
        fn a_conversation_written_by_a_backend_reads_back_as_it_was(turns in conversation(), system in "[a-z ]{1,20}") {
            let senders = chat::Senders {
                image: &|_, at| Err(Error::invalid(at, "no images here")),
                tool_result: &|content, _| Ok(content.iter().filter_map(|c| c.text()).collect::<Vec<_>>().concat()),
                unsupported: &|_, at| Error::invalid(at, "unsupported"),
            };
            let written = chat::messages(&system, &turns, &senders).unwrap();
            let (read_system, read) = messages(Some(&Value::Array(written))).unwrap();
            prop_assert_eq!(read_system, vec![SystemBlock::Text(system)]);
            prop_assert_eq!(read, turns);
        }
    }

    #[test]
    fn the_sdks_timeout_is_the_calls_deadline_unless_laneway_sets_one() {
        let body = |extra: Value| {
            let mut b =
                json!({ "model": "nova", "messages": [{ "role": "user", "content": "hi" }] });
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            request(b)
        };
        let deadline = |extra| body(extra).unwrap().request.slo.deadline;
        assert_eq!(
            deadline(json!({ "timeout_ms": 400.4 })),
            Some(std::time::Duration::from_millis(400))
        );
        assert_eq!(
            deadline(json!({ "timeout_ms": 400, "laneway": { "deadline_ms": 3000 } })),
            Some(std::time::Duration::from_millis(3000))
        );
        assert_eq!(deadline(json!({ "timeout_ms": null })), None);
        let refused = body(json!({ "timeout_ms": -1 })).unwrap_err();
        assert!(refused.to_string().contains("timeout"), "{refused}");
        // Beyond a year is refused as the timeout it is, not later as a deadline.
        let refused = body(json!({ "timeout_ms": 1e20 })).unwrap_err();
        assert!(refused.to_string().contains("timeout"), "{refused}");
    }

    #[test]
    fn a_body_with_every_part_reads_into_the_core_request() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let call = request(json!({
            "model": "openai.gpt-5.6-terra",
            "messages": [
                { "role": "developer", "content": "Be brief." },
                { "role": "user", "content": [
                    { "type": "text", "text": "What is in this picture, and the weather?" },
                    { "type": "image_url", "image_url": { "url": format!("data:image/png;base64,{png}") } },
                ]},
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "c1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Oslo\"}" } },
                ]},
                { "role": "tool", "tool_call_id": "c1", "content": "Sunny" },
            ],
            "tools": [{ "type": "function", "function": { "name": "weather", "parameters": { "type": "object" }, "strict": true } }],
            "tool_choice": "required",
            "stop": "END",
            "reasoning_effort": "xhigh",
            "service_tier": "flex",
            "response_format": { "type": "json_schema", "json_schema": { "name": "a", "schema": { "type": "object" } } },
            "seed": 7,
            "laneway": { "slo": "background", "task_id": "t1" },
        }))
        .unwrap();
        let r = &call.request;
        assert_eq!(r.system, vec![SystemBlock::Text("Be brief.".into())]);
        assert_eq!(r.messages.len(), 3);
        assert!(
            matches!(&r.messages[0].content[1], ContentBlock::Image(i) if i.format == ImageFormat::Png)
        );
        assert!(
            matches!(&r.messages[1].content[0], ContentBlock::ToolUse(t) if t.input["city"] == "Oslo")
        );
        assert!(
            matches!(&r.messages[2].content[0], ContentBlock::ToolResult(t) if t.tool_use_id == "c1")
        );
        assert_eq!(r.tool_choice, Some(ToolChoice::Any));
        assert_eq!(r.inference.stop_sequences, ["END"]);
        assert_eq!(
            r.reasoning.unwrap().effort,
            Some(crate::types::ReasoningEffort::Max)
        );
        assert_eq!(r.tier, Some(crate::types::ServiceTier::FLEX));
        assert!(r.output_format.is_some());
        assert_eq!(r.task_id.as_deref(), Some("t1"));
        assert_eq!(
            call.unhonoured,
            vec![(
                "seed".to_string(),
                "sampling is not seeded on Bedrock".to_string()
            )]
        );
    }

    #[test]
    fn what_laneway_cannot_do_is_refused_by_name() {
        let base = || json!({ "model": "m", "messages": [{ "role": "user", "content": "x" }] });
        for (field, value) in [
            ("n", json!(2)),
            ("audio", json!({ "voice": "alloy" })),
            ("made_up", json!(1)),
        ] {
            let mut body = base();
            body[field] = value;
            let e = request(body).unwrap_err();
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
        let mut body = base();
        body["laneway"] = json!({ "sloo": "interactive" });
        assert!(
            request(body)
                .unwrap_err()
                .to_string()
                .contains("laneway.sloo")
        );
        let mut body = base();
        body["messages"][0]["content"] =
            json!([{ "type": "image_url", "image_url": { "url": "https://example.com/a.png" } }]);
        assert!(request(body).unwrap_err().to_string().contains("data: URL"));
    }
}
