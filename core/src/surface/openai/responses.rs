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

use serde_json::Value;

use crate::wire::responses::{self as wire, Response, StreamWriter};

use super::{
    Fields, Started, Unhonoured, effort_option, finish, format_option, fresh_id, laneway_extras,
    now_unix, start,
};
use crate::types::{Error, GenerateRequest, GenerateResponse, Result, StreamEvent, SystemBlock};

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
    let (system, messages) = wire::read_input(body.get("input"))?;
    request.system.extend(system);
    request.messages = messages;
    request.tools = wire::read_tools(body.get("tools"))?;
    request.tool_choice = wire::read_tool_choice(body.get("tool_choice"))?;
    Ok(ResponsesCall {
        request,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model,
        unhonoured,
    })
}

/// A written response as JSON, with `laneway` (decision, timings, cost) beside it.
fn with_extras(response: &Response<'_>, r: &GenerateResponse) -> Value {
    let mut v = serde_json::to_value(response).unwrap_or_default();
    v["laneway"] = laneway_extras(r);
    v
}

/// The answer as a `response` object with `laneway` (decision, timings, cost) beside it.
pub fn response(r: &GenerateResponse, model: &str) -> Value {
    let id = format!("resp_{}", r.decision.call_id.replace([':', '/'], "_"));
    let whole = Response {
        output: Some(wire::output(&r.content, &id)),
        ..Response::of(r, &id, now_unix(), model)
    };
    with_extras(&whole, r)
}

/// Writes a stream's events as the Responses API's typed events, numbered: `response.created`
/// and `response.in_progress`, each output item added, its deltas and done events, and
/// `response.completed` (or `response.incomplete`) with the whole response and `laneway`.
#[derive(Debug)]
pub struct Events(StreamWriter);

impl Events {
    /// Events for a call to `model`.
    pub fn new(model: &str) -> Self {
        Self(StreamWriter::new(fresh_id("resp_"), now_unix(), model))
    }

    /// The typed events of one stream event.
    pub fn on(&mut self, ev: &StreamEvent) -> Vec<Value> {
        let mut out = self.0.on(ev);
        if let StreamEvent::Completed(r) = ev
            && let Some(terminal) = out.last_mut()
        {
            terminal["response"]["laneway"] = laneway_extras(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentBlock, ReasoningBlock, ToolChoice};
    use serde_json::json;

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
