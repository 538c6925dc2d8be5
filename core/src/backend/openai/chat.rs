//! Chat Completions (`POST …/chat/completions`): a request as its body, a `chat.completion` as
//! a [`Completion`], and `chat.completion.chunk` events as [`BackendEvent`]s.
//!
//! Blocks of a streamed answer are numbered reasoning 0, text 1, tool call `n` at `n + 2`: a
//! chunk says which tool call it continues, not which block.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::Malformed;
use super::input;
use crate::backend::{BackendEvent, Call, Completion};
use crate::types::{
    OutputBlock, ReasoningBlock, ReasoningDelta, ReasoningText, Result, StopReason, Usage,
};
use crate::wire::chat::{self, ChatUsage};

const REASONING: u32 = 0;
const TEXT: u32 = 1;
const FIRST_TOOL: u32 = 2;

/// The request as a Chat Completions body.
pub(super) fn body(call: Call<'_>, model: &str, stream: bool) -> Result<Value> {
    let request = call.request;
    let senders = chat::Senders {
        image: &input::image_url,
        tool_result: &input::tool_result_text,
        unsupported: &input::unsupported,
    };
    let messages = chat::messages(&input::system_text(call), &request.messages, &senders)?;
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(n) = input::max_tokens(call) {
        body.insert("max_completion_tokens".into(), json!(n));
    }
    let shape = &call.attempt.shape;
    if let Some(t) = shape.temperature(request) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = shape.top_p(request) {
        body.insert("top_p".into(), json!(p));
    }
    if !request.inference.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(request.inference.stop_sequences));
    }
    let tools = chat::tools(&request.tools);
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        body.insert("tool_choice".into(), chat::tool_choice(choice));
    }
    if let Some(format) = &request.output_format {
        body.insert(
            "response_format".into(),
            json!({ "type": "json_schema", "json_schema": {
                "name": format.name().unwrap_or("output"),
                "schema": format.schema(),
                "strict": true,
            }}),
        );
    }
    if let Some(effort) = input::effort(call) {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(tier) = input::service_tier(call) {
        body.insert("service_tier".into(), json!(tier));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    Ok(Value::Object(body))
}

/// A whole `chat.completion` as a completion.
pub(in crate::backend) fn completion(v: &Value, bad: &Malformed<'_>) -> Result<Completion> {
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| bad.error("the answer has no choices"))?;
    let message = choice.get("message");
    let mut content = Vec::new();
    if let Some(r) = message.and_then(reasoning_of) {
        content.push(OutputBlock::Reasoning(ReasoningBlock::Text(
            ReasoningText {
                text: r.to_string(),
                signature: None,
                id: None,
            },
        )));
    }
    for key in ["content", "refusal"] {
        if let Some(t) = message
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            content.push(OutputBlock::Text(t.to_string()));
        }
    }
    for call in message
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let args = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        content.push(OutputBlock::ToolUse {
            id: text(call, "/id"),
            name: text(call, "/function/name"),
            input: serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.into())),
        });
    }
    let called = content
        .iter()
        .any(|b| matches!(b, OutputBlock::ToolUse { .. }));
    let stop_reason = match finish(choice).unwrap_or_default() {
        // A named tool choice may finish `stop` after its call (vLLM does).
        StopReason::EndTurn if called => StopReason::ToolUse,
        other => other,
    };
    Ok(Completion {
        content,
        stop_reason,
        usage: usage(v.get("usage")),
        served_tier: input::served_tier(v.get("service_tier").and_then(Value::as_str)),
        ..Completion::default()
    })
}

fn text(v: &Value, path: &str) -> String {
    v.pointer(path)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The reasoning text of a message or delta, as open-weight servers name it.
fn reasoning_of(m: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .into_iter()
        .find_map(|k| m.get(k).and_then(Value::as_str).filter(|r| !r.is_empty()))
}

fn finish(choice: &Value) -> Option<StopReason> {
    choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(StopReason::from_wire)
}

fn usage(u: Option<&Value>) -> Usage {
    ChatUsage::read(u).unwrap_or_default().into_usage()
}

/// A server's usage, its input the estimate (said as one) where it counts none.
pub(in crate::backend) fn with_estimate(u: ChatUsage, estimate: Option<u32>) -> Usage {
    let counted = u.prompt_tokens.is_some();
    let mut usage = u.into_usage();
    if let Some(tokens) = estimate.filter(|_| !counted) {
        usage.input_tokens = tokens;
        usage.input_estimated = true;
    }
    usage
}

/// One `chat.completion.chunk`, borrowing from its text: the fields Laneway reads.
#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChoiceDelta<'a>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default, borrow)]
    service_tier: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct ChoiceDelta<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// A streamed tool call as its chunks arrive: a server may send its id and name once or on
/// every chunk, and its arguments before its name.
#[derive(Debug, Default)]
struct PendingCall {
    id: Option<String>,
    name: Option<String>,
    /// Arguments received before the call could start.
    held: String,
    started: bool,
}

/// Turns `chat.completion.chunk`s into backend events (the OpenAI backend's, and SageMaker
/// containers' that speak Chat Completions).
#[derive(Debug, Default)]
pub(in crate::backend) struct Events {
    /// The stream said `data: [DONE]`.
    pub(super) done: bool,
    /// A finish reason came (usage may follow in a chunk of its own).
    stopped: bool,
    /// Tool calls by their index in the chunks.
    calls: Vec<(u64, PendingCall)>,
    /// The tier a chunk said served (the usage chunk may not repeat it).
    served: Option<crate::types::ServiceTier>,
    /// The input's estimate, for servers whose usage leaves `prompt_tokens` out.
    input_estimate: Option<u32>,
}

impl Events {
    /// Events whose usage, when a server leaves `prompt_tokens` out, counts `tokens` of input,
    /// said to be an estimate (some SageMaker containers count only the output).
    pub(in crate::backend) fn estimating_input(tokens: u32) -> Self {
        Self {
            input_estimate: Some(tokens),
            ..Self::default()
        }
    }

    /// The stream is over: `[DONE]`, or a finish reason (a server may close without `[DONE]`).
    pub(super) fn finished(&self) -> bool {
        self.done || self.stopped
    }

    /// The backend events of one chunk (the text of its `data`).
    pub(in crate::backend) fn read(
        &mut self,
        data: &str,
        bad: &Malformed<'_>,
    ) -> Result<Vec<BackendEvent>> {
        let v: Chunk<'_> = serde_json::from_str(data)
            .map_err(|e| bad.error(&format!("a stream chunk is not one: {e}")))?;
        if let Some(raw) = v.error {
            let e: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            if !e.is_null() {
                let e = if e.is_object() {
                    e
                } else {
                    json!({ "message": e })
                };
                return Err(super::responses::failed(&e, bad));
            }
        }
        if let Some(t) = input::served_tier(v.service_tier.as_deref()) {
            self.served = Some(t);
        }
        let mut out = Vec::new();
        if let Some(choice) = v.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                let reasoning = delta
                    .reasoning_content
                    .filter(|r| !r.is_empty())
                    .or(delta.reasoning.filter(|r| !r.is_empty()));
                if let Some(r) = reasoning {
                    out.push(BackendEvent::ReasoningDelta {
                        index: REASONING,
                        delta: ReasoningDelta::Text(r.into_owned()),
                    });
                }
                for t in [delta.content, delta.refusal].into_iter().flatten() {
                    if !t.is_empty() {
                        out.push(BackendEvent::TextDelta {
                            index: TEXT,
                            text: t.into_owned(),
                        });
                    }
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.tool_call(call, bad, &mut out)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.stopped = true;
                self.start_unnamed_ids(bad, &mut out)?;
                if self.unstarted_call() {
                    return Err(bad.error("a tool call came without its id or name"));
                }
                let stop = match StopReason::from_wire(&reason) {
                    // A named tool choice may finish `stop` after its call (vLLM does).
                    StopReason::EndTurn if !self.calls.is_empty() => StopReason::ToolUse,
                    other => other,
                };
                out.push(BackendEvent::Stop(stop));
            }
        }
        if let Some(u) = v.usage {
            out.push(BackendEvent::Metadata {
                usage: with_estimate(u, self.input_estimate),
                served_tier: self.served,
                invoked_model: None,
            });
        }
        Ok(out)
    }

    /// One tool call's piece: it starts once its id and name are known, with the arguments
    /// held until then.
    fn tool_call(
        &mut self,
        call: CallDelta<'_>,
        bad: &Malformed<'_>,
        out: &mut Vec<BackendEvent>,
    ) -> Result<()> {
        let key = call.index.unwrap_or(0);
        let index = u32::try_from(key)
            .ok()
            .and_then(|i| i.checked_add(FIRST_TOOL))
            .ok_or_else(|| bad.error("a tool call's index is out of range"))?;
        let at = match self.calls.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                self.calls.push((key, PendingCall::default()));
                self.calls.len() - 1
            }
        };
        let pending = &mut self.calls[at].1;
        if let Some(id) = call.id.filter(|s| !s.is_empty()) {
            pending.id.get_or_insert_with(|| id.into_owned());
        }
        let (name, args) = match call.function {
            Some(f) => (f.name, f.arguments),
            None => (None, None),
        };
        if let Some(name) = name.filter(|s| !s.is_empty()) {
            pending.name.get_or_insert_with(|| name.into_owned());
        }
        let args = args.unwrap_or_default();
        if pending.started {
            if !args.is_empty() {
                out.push(BackendEvent::ToolUseDelta {
                    index,
                    input_json: args.into_owned(),
                });
            }
            return Ok(());
        }
        pending.held.push_str(&args);
        if let (Some(id), Some(name)) = (&pending.id, &pending.name) {
            pending.started = true;
            out.push(BackendEvent::ToolUseStart {
                index,
                id: id.clone(),
                name: name.clone(),
            });
            if !pending.held.is_empty() {
                out.push(BackendEvent::ToolUseDelta {
                    index,
                    input_json: std::mem::take(&mut pending.held),
                });
            }
        }
        Ok(())
    }

    /// Calls that got a name but never an id (older TGI sends `""`) start at the finish,
    /// with an id made from their index, so that their result can answer them.
    fn start_unnamed_ids(
        &mut self,
        bad: &Malformed<'_>,
        out: &mut Vec<BackendEvent>,
    ) -> Result<()> {
        for (key, pending) in &mut self.calls {
            if pending.started || pending.id.is_some() || pending.name.is_none() {
                continue;
            }
            let index = u32::try_from(*key)
                .ok()
                .and_then(|i| i.checked_add(FIRST_TOOL))
                .ok_or_else(|| bad.error("a tool call's index is out of range"))?;
            pending.started = true;
            out.push(BackendEvent::ToolUseStart {
                index,
                id: format!("call_{key}"),
                name: pending.name.clone().unwrap_or_default(),
            });
            if !pending.held.is_empty() {
                out.push(BackendEvent::ToolUseDelta {
                    index,
                    input_json: std::mem::take(&mut pending.held),
                });
            }
        }
        Ok(())
    }

    /// A tool call that never got its id and name: the answer cannot be read.
    pub(super) fn unstarted_call(&self) -> bool {
        self.calls.iter().any(|(_, c)| !c.started)
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

    fn read(events: &mut Events, chunks: &[Value]) -> Vec<BackendEvent> {
        chunks
            .iter()
            .flat_map(|c| events.read(&c.to_string(), &bad()).unwrap())
            .collect()
    }

    #[test]
    fn a_tool_call_starts_once_with_the_arguments_sent_before_its_name() {
        let chunk =
            |call: Value| json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] });
        let mut e = Events::default();
        let got = read(
            &mut e,
            &[
                chunk(json!({ "index": 0, "id": "call_1", "function": { "arguments": "{\"ci" } })),
                chunk(
                    json!({ "index": 0, "id": "call_1", "function": { "name": "weather", "arguments": "ty\":" } }),
                ),
                chunk(
                    json!({ "index": 0, "id": "call_1", "function": { "name": "weather", "arguments": "\"Oslo\"}" } }),
                ),
                json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }], "service_tier": "default" }),
                json!({ "choices": [], "usage": { "prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": { "cached_tokens": 4 } } }),
            ],
        );
        let starts = got
            .iter()
            .filter(|e| matches!(e, BackendEvent::ToolUseStart { .. }))
            .count();
        assert_eq!(starts, 1, "{got:?}");
        let args: String = got
            .iter()
            .filter_map(|e| match e {
                BackendEvent::ToolUseDelta { input_json, .. } => Some(input_json.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, r#"{"city":"Oslo"}"#);
        assert!(got.contains(&BackendEvent::Stop(StopReason::ToolUse)));
        assert!(got.iter().any(|e| matches!(e,
            BackendEvent::Metadata { usage, served_tier: Some(crate::types::ServiceTier::STANDARD), .. }
                if usage.input_tokens == 6 && usage.cache_read_tokens == 4)));
        assert!(!e.unstarted_call() && e.finished());
    }

    #[test]
    fn a_whole_answer_with_a_refusal_or_tool_calls_reads_as_blocks() {
        let v = json!({ "choices": [{ "message": { "role": "assistant", "content": null, "refusal": "I can't help with that." }, "finish_reason": "stop" }] });
        let c = completion(&v, &bad()).unwrap();
        assert_eq!(
            c.content,
            vec![OutputBlock::Text("I can't help with that.".into())]
        );
        let v = json!({ "choices": [{ "message": { "role": "assistant", "reasoning_content": null, "reasoning": "think",
            "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "f", "arguments": "{\"a\":1}" } }] }, "finish_reason": "stop" }] });
        let c = completion(&v, &bad()).unwrap();
        assert_eq!(c.stop_reason, StopReason::ToolUse);
        assert!(matches!(&c.content[0], OutputBlock::Reasoning(_)));
        assert!(matches!(&c.content[1], OutputBlock::ToolUse { input, .. } if input["a"] == 1));
    }
}
