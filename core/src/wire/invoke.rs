//! bedrock-runtime's InvokeModel and InvokeModelWithResponseStream bodies, for the in-process
//! seams (`surface::http`): a model's native request read as a core request, and the answer
//! written back in the same native shape, whole or as the `chunk` events of a response stream.
//!
//! Two bodies are read, those of the models Laneway routes: Anthropic's Messages API
//! (`anthropic_version`, what the `anthropic` SDK's `AnthropicBedrock` sends) and Amazon Nova's
//! `messages-v1`. Both are translated to a Converse request and read by [`super::converse`],
//! so a field means the same through either API; the answer is written from the core's
//! response (and, streamed, from the ConverseStream events [`ConverseEvents`] makes of the
//! core's events), so one writer decides what a stream says.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::converse;
use super::converse_stream::ConverseEvents;
use crate::types::{Error, GenerateRequest, GenerateResponse, OutputBlock, ReasoningBlock, Result};

/// A model's native body, as InvokeModel takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Native {
    /// Anthropic's Messages API (Claude).
    Anthropic,
    /// Amazon Nova's `messages-v1`.
    Nova,
}

impl Native {
    /// The body `value` is, for the model `model` names: by the model's vendor when the id
    /// says it (`anthropic.`, `amazon.nova`, behind any profile prefix or in an ARN), otherwise
    /// by the body's own marks (`anthropic_version`; `schemaVersion` or `inferenceConfig`).
    pub fn of(model: &str, value: &Value) -> Result<Native> {
        if let Some(native) = Native::of_model(model) {
            return Ok(native);
        }
        if value.get("anthropic_version").is_some() {
            Ok(Native::Anthropic)
        } else if value.get("schemaVersion").is_some() || value.get("inferenceConfig").is_some() {
            Ok(Native::Nova)
        } else {
            Err(Error::invalid(
                "body",
                format!(
                    "InvokeModel for {model:?}: Laneway reads Anthropic Messages bodies (with anthropic_version) and Amazon Nova messages-v1 bodies; use Converse for other models"
                ),
            ))
        }
    }
}

impl Native {
    /// The body a model id says it takes, when it says (`anthropic.`, `amazon.nova`, behind
    /// any profile prefix or in an ARN).
    pub fn of_model(model: &str) -> Option<Native> {
        let name = model.rsplit('/').next().unwrap_or(model);
        if name.contains("anthropic.") {
            Some(Native::Anthropic)
        } else if name.contains("amazon.nova") {
            Some(Native::Nova)
        } else {
            None
        }
    }
}

/// InvokeModel's settings that travel in headers rather than the body.
#[derive(Debug, Default, Clone, Copy)]
pub struct InvokeHeaders<'h> {
    /// `X-Amzn-Bedrock-Service-Tier`.
    pub tier: Option<&'h str>,
    /// `X-Amzn-Bedrock-GuardrailIdentifier`.
    pub guardrail: Option<&'h str>,
    /// `X-Amzn-Bedrock-GuardrailVersion`.
    pub guardrail_version: Option<&'h str>,
    /// `X-Amzn-Bedrock-Trace` (`ENABLED`, `DISABLED`, `ENABLED_FULL`).
    pub trace: Option<&'h str>,
    /// `X-Amzn-Bedrock-PerformanceConfig-Latency`.
    pub latency: Option<&'h str>,
}

/// The native request `value` (with its `laneway` options) for `model` as a core request,
/// with the settings InvokeModel takes in headers.
pub fn request(
    native: Native,
    model: &str,
    value: Value,
    headers: InvokeHeaders<'_>,
) -> Result<GenerateRequest> {
    let Value::Object(body) = value else {
        return Err(Error::invalid(
            "body",
            "an InvokeModel body is a JSON object",
        ));
    };
    let mut converse = match native {
        Native::Anthropic => anthropic::to_converse(body)?,
        Native::Nova => nova::to_converse(body)?,
    };
    converse.insert("modelId".into(), Value::String(model.to_owned()));
    if let Some(tier) = headers.tier {
        converse.insert("serviceTier".into(), json!({ "type": tier }));
    }
    if let Some(latency) = headers.latency
        && latency != "standard"
    {
        return Err(Error::invalid(
            "X-Amzn-Bedrock-PerformanceConfig-Latency",
            "Laneway asks for latency-optimized inference from the SLO: set laneway.slo.class to \"interactive\" instead",
        ));
    }
    match (headers.guardrail, headers.guardrail_version) {
        (None, None) => {}
        (Some(id), Some(version)) => {
            let trace = headers.trace.unwrap_or("DISABLED").to_ascii_lowercase();
            converse.insert(
                "guardrailConfig".into(),
                json!({ "guardrailIdentifier": id, "guardrailVersion": version, "trace": trace }),
            );
        }
        _ => {
            return Err(Error::invalid(
                "X-Amzn-Bedrock-GuardrailIdentifier",
                "a guardrail takes both its identifier and its version",
            ));
        }
    }
    converse::request(Value::Object(converse))
}

/// The whole answer, in the request's native shape.
pub fn response(native: Native, r: &GenerateResponse) -> Value {
    match native {
        Native::Anthropic => anthropic::message(r),
        Native::Nova => {
            let whole = converse::response(r);
            json!({
                "output": whole.output,
                "stopReason": whole.stop_reason,
                "usage": nova::usage(&whole.usage),
            })
        }
    }
}

/// The token counts and latency bedrock-runtime puts on an InvokeModel answer's headers.
pub fn headers(r: &GenerateResponse) -> Vec<(String, String)> {
    vec![
        (
            "x-amzn-bedrock-input-token-count".into(),
            r.usage.total_input_tokens().to_string(),
        ),
        (
            "x-amzn-bedrock-output-token-count".into(),
            r.usage.output_tokens.to_string(),
        ),
        (
            "x-amzn-bedrock-invocation-latency".into(),
            r.timings.total.as_millis().to_string(),
        ),
    ]
}

/// Writes a call's stream events as InvokeModelWithResponseStream's `chunk` payloads
/// (`{"bytes": base64 of one native event}`), in the request's native shape.
#[derive(Debug)]
pub struct InvokeEvents {
    native: Native,
    converse: ConverseEvents,
    anthropic: anthropic::Blocks,
}

impl InvokeEvents {
    /// A writer for a new stream of `native` events, for the model the request named.
    pub fn new(native: Native, model: &str) -> Self {
        Self {
            native,
            converse: ConverseEvents::new(),
            anthropic: anthropic::Blocks::new(model),
        }
    }

    /// The chunk payloads `event` makes.
    pub fn on(&mut self, event: &crate::types::StreamEvent) -> Vec<Value> {
        let completed = match event {
            crate::types::StreamEvent::Completed(r) => Some(&**r),
            _ => None,
        };
        let mut out = Vec::new();
        for (kind, payload) in self.converse.on(event) {
            let natives = match self.native {
                Native::Anthropic => self.anthropic.on(kind, &payload, completed),
                Native::Nova => vec![nova::event(kind, payload, completed)],
            };
            out.extend(natives.into_iter().map(|native| {
                json!({ "bytes": base64::engine::general_purpose::STANDARD.encode(native.to_string()) })
            }));
        }
        out
    }
}

/// bedrock-runtime's count of a streamed call, on its last event.
fn invocation_metrics(r: &GenerateResponse) -> Value {
    let u = &r.usage;
    json!({
        "inputTokenCount": u.total_input_tokens(),
        "outputTokenCount": u.output_tokens,
        "invocationLatency": r.timings.total.as_millis() as u64,
        "firstByteLatency": r.timings.ttft.map_or(0, |t| t.as_millis() as u64),
        "cacheReadInputTokenCount": u.cache_read_tokens,
        "cacheWriteInputTokenCount": u.cache_write_tokens,
    })
}

mod nova {
    use super::{Error, GenerateResponse, Map, Result, Value, invocation_metrics, json};

    /// `messages-v1` as Converse: the same messages, system and tool config; inference
    /// settings spelled either way (`maxTokens` or `max_new_tokens`), `topK` as the model's
    /// own field.
    pub(super) fn to_converse(mut body: Map<String, Value>) -> Result<Map<String, Value>> {
        if let Some(v) = body.remove("schemaVersion")
            && v != "messages-v1"
        {
            return Err(Error::invalid(
                "schemaVersion",
                format!("{v}: Laneway reads messages-v1"),
            ));
        }
        let Some(config) = body.remove("inferenceConfig") else {
            return Ok(body);
        };
        let Value::Object(mut config) = config else {
            return Err(Error::invalid("inferenceConfig", "an object"));
        };
        for (alias, name) in [
            ("max_new_tokens", "maxTokens"),
            ("top_p", "topP"),
            ("top_k", "topK"),
            ("stop_sequences", "stopSequences"),
        ] {
            if let Some(v) = config.remove(alias) {
                if config.contains_key(name) {
                    return Err(Error::invalid(
                        format!("inferenceConfig.{alias}"),
                        format!("given beside {name}, which it spells too"),
                    ));
                }
                config.insert(name.into(), v);
            }
        }
        if let Some(top_k) = config.remove("topK") {
            // Converse takes no topK: it goes in the model's own fields, as Nova reads it.
            let fields = body
                .entry("additionalModelRequestFields")
                .or_insert_with(|| json!({}));
            let Some(fields) = fields.as_object_mut() else {
                return Err(Error::invalid("additionalModelRequestFields", "an object"));
            };
            let nested = fields.entry("inferenceConfig").or_insert_with(|| json!({}));
            let Some(nested) = nested.as_object_mut() else {
                return Err(Error::invalid(
                    "additionalModelRequestFields.inferenceConfig",
                    "an object",
                ));
            };
            nested.insert("topK".into(), top_k);
        }
        body.insert("inferenceConfig".into(), Value::Object(config));
        Ok(body)
    }

    /// Converse's usage as Nova's (`cacheReadInputTokenCount`, `cacheWriteInputTokenCount`).
    pub(super) fn usage(converse: &Value) -> Value {
        let n = |k: &str| converse.get(k).cloned().unwrap_or(json!(0));
        json!({
            "inputTokens": n("inputTokens"),
            "outputTokens": n("outputTokens"),
            "totalTokens": n("totalTokens"),
            "cacheReadInputTokenCount": n("cacheReadInputTokens"),
            "cacheWriteInputTokenCount": n("cacheWriteInputTokens"),
        })
    }

    /// A ConverseStream event as Nova's streamed chunk: the same event under its name, the
    /// metadata's usage in Nova's names, and the call's count on the last.
    pub(super) fn event(
        kind: &str,
        mut payload: Value,
        completed: Option<&GenerateResponse>,
    ) -> Value {
        if kind == "metadata" {
            if let Some(u) = payload.get("usage") {
                payload["usage"] = usage(u);
            }
            let mut event = json!({ kind: payload });
            if let Some(r) = completed {
                event["amazon-bedrock-invocationMetrics"] = invocation_metrics(r);
            }
            return event;
        }
        json!({ kind: payload })
    }
}

mod anthropic {
    use super::*;

    /// The request fields Laneway reads, and where the Converse request takes each.
    const KNOWN: &[&str] = &[
        "anthropic_version",
        "anthropic_beta",
        "max_tokens",
        "messages",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "metadata",
        "laneway",
    ];

    /// A Messages request as a Converse request.
    pub(super) fn to_converse(mut body: Map<String, Value>) -> Result<Map<String, Value>> {
        if let Some(unknown) = body.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(Error::invalid(
                unknown.clone(),
                format!(
                    "not a Messages field Laneway reads (it reads {})",
                    KNOWN.join(", ")
                ),
            ));
        }
        body.remove("anthropic_version");
        let mut out = Map::new();
        let mut native = Map::new();
        if let Some(beta) = body.remove("anthropic_beta") {
            native.insert("anthropic_beta".into(), beta);
        }
        if let Some(thinking) = body.get("thinking")
            && thinking.get("type").and_then(Value::as_str) == Some("enabled")
            && thinking.get("budget_tokens").is_none()
        {
            return Err(Error::invalid(
                "thinking.budget_tokens",
                "Field required (thinking of type \"enabled\" takes a budget)",
            ));
        }
        for key in ["thinking", "output_config"] {
            if let Some(v) = body.remove(key) {
                native.insert(key.into(), v);
            }
        }
        if let Some(k) = body.remove("top_k") {
            native.insert("top_k".into(), k);
        }
        let messages = match body.remove("messages") {
            Some(Value::Array(m)) => m,
            Some(_) => return Err(Error::invalid("messages", "a list of messages")),
            None => return Err(Error::invalid("messages", "Field required")),
        };
        let messages = messages
            .iter()
            .enumerate()
            .map(|(i, m)| request_message(m, i))
            .collect::<Result<Vec<_>>>()?;
        out.insert("messages".into(), Value::Array(messages));
        if let Some(system) = body.remove("system") {
            out.insert("system".into(), Value::Array(system_blocks(&system)?));
        }
        let mut inference = Map::new();
        for (from, to) in [
            ("max_tokens", "maxTokens"),
            ("temperature", "temperature"),
            ("top_p", "topP"),
            ("stop_sequences", "stopSequences"),
        ] {
            if let Some(v) = body.remove(from) {
                inference.insert(to.into(), v);
            }
        }
        if !inference.is_empty() {
            out.insert("inferenceConfig".into(), Value::Object(inference));
        }
        let tools = body.remove("tools");
        let choice = body.remove("tool_choice");
        if let Some(config) = tool_config(tools, choice)? {
            out.insert("toolConfig".into(), config);
        }
        if let Some(metadata) = body.remove("metadata") {
            // The Messages API's one metadata field, kept as the call's request metadata.
            match metadata
                .as_object()
                .map(|m| m.iter().collect::<Vec<_>>())
                .as_deref()
            {
                Some([]) => {}
                Some([(key, Value::String(user))]) if key.as_str() == "user_id" => {
                    out.insert("requestMetadata".into(), json!({ "user_id": user }));
                }
                _ => return Err(Error::invalid("metadata", "{ user_id: text }")),
            }
        }
        if !native.is_empty() {
            out.insert("additionalModelRequestFields".into(), Value::Object(native));
        }
        if let Some(laneway) = body.remove("laneway") {
            out.insert("laneway".into(), laneway);
        }
        Ok(out)
    }

    fn request_message(m: &Value, i: usize) -> Result<Value> {
        let at = format!("messages[{i}]");
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("{at}.role"), "user or assistant"))?;
        let content = match m.get("content") {
            Some(Value::String(text)) => vec![json!({ "text": text })],
            Some(Value::Array(blocks)) => {
                let mut out = Vec::new();
                for (j, b) in blocks.iter().enumerate() {
                    out.extend(block(b, &format!("{at}.content[{j}]"))?);
                }
                out
            }
            _ => {
                return Err(Error::invalid(
                    format!("{at}.content"),
                    "text or a list of content blocks",
                ));
            }
        };
        Ok(json!({ "role": role, "content": content }))
    }

    /// Refuses a key of `b` that is not among `keys`, by its path: Laneway sends on what it
    /// reads, and says what it cannot.
    fn only(b: &Value, keys: &[&str], at: &str) -> Result<()> {
        let Some(map) = b.as_object() else {
            return Err(Error::invalid(at, "an object"));
        };
        match map.keys().find(|k| !keys.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(Error::invalid(
                format!("{at}.{k}"),
                format!(
                    "not a field Laneway sends on here (it reads {})",
                    keys.join(", ")
                ),
            )),
        }
    }

    fn kind<'v>(b: &'v Value, at: &str) -> Result<&'v str> {
        b.get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("{at}.type"), "missing"))
    }

    fn field<'v>(b: &'v Value, name: &str, at: &str) -> Result<&'v Value> {
        b.get(name)
            .ok_or_else(|| Error::invalid(format!("{at}.{name}"), "missing"))
    }

    /// A `cache_control` mark as the checkpoint after its block.
    fn checkpoint(b: &Value, at: &str) -> Result<Option<Value>> {
        let Some(c) = b.get("cache_control") else {
            return Ok(None);
        };
        if c.get("type").and_then(Value::as_str) != Some("ephemeral") {
            return Err(Error::invalid(
                format!("{at}.cache_control.type"),
                "the only type is \"ephemeral\"",
            ));
        }
        let mut point = json!({ "type": "default" });
        if let Some(ttl) = c.get("ttl") {
            point["ttl"] = ttl.clone();
        }
        Ok(Some(json!({ "cachePoint": point })))
    }

    /// One content block as Converse's, followed by its checkpoint.
    fn block(b: &Value, at: &str) -> Result<Vec<Value>> {
        let block_type = kind(b, at)?;
        let keys: &[&str] = match block_type {
            "text" => &["type", "text", "cache_control"],
            "image" => &["type", "source", "cache_control"],
            "document" => &[
                "type",
                "source",
                "title",
                "context",
                "citations",
                "cache_control",
            ],
            "tool_use" => &["type", "id", "name", "input", "cache_control"],
            "tool_result" => &[
                "type",
                "tool_use_id",
                "content",
                "is_error",
                "cache_control",
            ],
            "thinking" => &["type", "thinking", "signature"],
            "redacted_thinking" => &["type", "data"],
            _ => &[],
        };
        if !keys.is_empty() {
            only(b, keys, at)?;
        }
        let converse = match block_type {
            "text" => json!({ "text": field(b, "text", at)? }),
            "image" => {
                let (format, data) = base64_source(b, at, "image/")?;
                json!({ "image": { "format": format, "source": { "bytes": data } } })
            }
            "document" => {
                let (format, data) = base64_source(b, at, "application/")?;
                let name = b.get("title").and_then(Value::as_str).unwrap_or("document");
                let mut document =
                    json!({ "format": format, "name": name, "source": { "bytes": data } });
                if let Some(context) = b.get("context") {
                    document["context"] = context.clone();
                }
                if let Some(citations) = b.get("citations") {
                    document["citations"] = citations.clone();
                }
                json!({ "document": document })
            }
            "tool_use" => json!({ "toolUse": {
                "toolUseId": field(b, "id", at)?,
                "name": field(b, "name", at)?,
                "input": field(b, "input", at)?,
            }}),
            "tool_result" => {
                let content = match b.get("content") {
                    None => Vec::new(),
                    Some(Value::String(text)) => vec![json!({ "text": text })],
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .enumerate()
                        .map(|(k, p)| {
                            let at = format!("{at}.content[{k}]");
                            match kind(p, &at)? {
                                "text" | "image" | "document" => {
                                    if p.get("cache_control").is_some() {
                                        return Err(Error::invalid(
                                            format!("{at}.cache_control"),
                                            "Laneway places a checkpoint after a tool result, not inside it: mark the tool_result block",
                                        ));
                                    }
                                    Ok(block(p, &at)?.swap_remove(0))
                                }
                                other => Err(Error::invalid(
                                    format!("{at}.type"),
                                    format!("{other:?}: a tool result holds text, image or document blocks"),
                                )),
                            }
                        })
                        .collect::<Result<_>>()?,
                    Some(_) => {
                        return Err(Error::invalid(
                            format!("{at}.content"),
                            "text or a list of blocks",
                        ));
                    }
                };
                let error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                json!({ "toolResult": {
                    "toolUseId": field(b, "tool_use_id", at)?,
                    "content": content,
                    "status": if error { "error" } else { "success" },
                }})
            }
            "thinking" => json!({ "reasoningContent": { "reasoningText": {
                "text": field(b, "thinking", at)?,
                "signature": b.get("signature"),
            }}}),
            "redacted_thinking" => json!({ "reasoningContent": {
                "redactedContent": field(b, "data", at)?,
            }}),
            other => {
                return Err(Error::invalid(
                    format!("{at}.type"),
                    format!(
                        "{other:?}: Laneway reads text, image, document, tool_use, tool_result, thinking and redacted_thinking blocks"
                    ),
                ));
            }
        };
        Ok(std::iter::once(converse)
            .chain(checkpoint(b, at)?)
            .collect())
    }

    /// A base64 source's format (its media type's subtype: `png`, `pdf`) and data.
    fn base64_source(b: &Value, at: &str, media: &str) -> Result<(String, Value)> {
        let source = field(b, "source", at)?;
        let at = format!("{at}.source");
        if source.get("type").and_then(Value::as_str) != Some("base64") {
            return Err(Error::invalid(
                format!("{at}.type"),
                "Laneway sends base64 sources (Bedrock fetches no URLs)",
            ));
        }
        let media_type = field(source, "media_type", &at)?
            .as_str()
            .unwrap_or_default();
        let format = media_type
            .strip_prefix(media)
            .filter(|f| !f.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    format!("{at}.media_type"),
                    format!("{media_type:?}: a {media}* type"),
                )
            })?;
        Ok((format.to_owned(), field(source, "data", &at)?.clone()))
    }

    fn system_blocks(system: &Value) -> Result<Vec<Value>> {
        match system {
            Value::String(text) => Ok(vec![json!({ "text": text })]),
            Value::Array(blocks) => {
                let mut out = Vec::new();
                for (i, b) in blocks.iter().enumerate() {
                    let at = format!("system[{i}]");
                    if kind(b, &at)? != "text" {
                        return Err(Error::invalid(
                            format!("{at}.type"),
                            "system blocks are text",
                        ));
                    }
                    only(b, &["type", "text", "cache_control"], &at)?;
                    out.push(json!({ "text": field(b, "text", &at)? }));
                    out.extend(checkpoint(b, &at)?);
                }
                Ok(out)
            }
            _ => Err(Error::invalid("system", "text or a list of text blocks")),
        }
    }

    fn tool_config(tools: Option<Value>, choice: Option<Value>) -> Result<Option<Value>> {
        let Some(tools) = tools else {
            return match choice {
                Some(_) => Err(Error::invalid("tool_choice", "given without tools")),
                None => Ok(None),
            };
        };
        let Value::Array(tools) = tools else {
            return Err(Error::invalid("tools", "a list of tools"));
        };
        let mut specs = Vec::new();
        for (i, t) in tools.iter().enumerate() {
            let at = format!("tools[{i}]");
            if let Some(kind) = t.get("type").and_then(Value::as_str)
                && kind != "custom"
            {
                return Err(Error::invalid(
                    format!("{at}.type"),
                    format!(
                        "{kind:?}: Laneway sends client tools (name, description, input_schema)"
                    ),
                ));
            }
            only(
                t,
                &[
                    "type",
                    "name",
                    "description",
                    "input_schema",
                    "strict",
                    "cache_control",
                ],
                &at,
            )?;
            let mut spec = json!({
                "name": field(t, "name", &at)?,
                "inputSchema": { "json": field(t, "input_schema", &at)? },
            });
            if let Some(d) = t.get("description") {
                spec["description"] = d.clone();
            }
            if let Some(strict) = t.get("strict") {
                spec["strict"] = strict.clone();
            }
            specs.push(json!({ "toolSpec": spec }));
            specs.extend(checkpoint(t, &at)?);
        }
        let mut config = json!({ "tools": specs });
        if let Some(choice) = choice {
            only(
                &choice,
                &["type", "name", "disable_parallel_tool_use"],
                "tool_choice",
            )?;
            if choice.get("disable_parallel_tool_use") == Some(&Value::Bool(true)) {
                return Err(Error::invalid(
                    "tool_choice.disable_parallel_tool_use",
                    "Converse takes no such setting, so Laneway cannot keep it",
                ));
            }
            config["toolChoice"] = match choice.get("type").and_then(Value::as_str) {
                Some("auto") => json!({ "auto": {} }),
                Some("any") => json!({ "any": {} }),
                Some("tool") => {
                    json!({ "tool": { "name": field(&choice, "name", "tool_choice")? } })
                }
                Some("none") => {
                    return Err(Error::invalid(
                        "tool_choice.type",
                        "\"none\": Laneway sends auto, any or tool; leave the tools out for a turn without them",
                    ));
                }
                _ => {
                    return Err(Error::invalid(
                        "tool_choice.type",
                        "auto, any, tool or none",
                    ));
                }
            };
        }
        Ok(Some(config))
    }

    /// Converse's stop reason as the Messages API's.
    fn stop_reason(converse: &str) -> &str {
        match converse {
            "guardrail_intervened" | "content_filtered" => "refusal",
            other => other,
        }
    }

    fn usage(u: &crate::types::Usage) -> Value {
        json!({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_write_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
        })
    }

    fn id(r: &GenerateResponse) -> String {
        format!("msg_bdrk_{}", r.decision.call_id)
    }

    /// The whole answer as a Messages API `message`.
    pub(super) fn message(r: &GenerateResponse) -> Value {
        let content: Vec<Value> = r
            .content
            .iter()
            .map(|b| match b {
                OutputBlock::Text(t) => json!({ "type": "text", "text": t }),
                OutputBlock::Citations(c) => json!({ "type": "text", "text": c.content.concat() }),
                OutputBlock::ToolUse { id, name, input } => {
                    json!({ "type": "tool_use", "id": id, "name": name, "input": input })
                }
                OutputBlock::Reasoning(ReasoningBlock::Text(t)) => json!({
                    "type": "thinking", "thinking": t.text, "signature": t.signature.clone().unwrap_or_default(),
                }),
                OutputBlock::Reasoning(ReasoningBlock::Redacted(data)) => json!({
                    "type": "redacted_thinking",
                    "data": base64::engine::general_purpose::STANDARD.encode(data),
                }),
            })
            .collect();
        json!({
            "id": id(r),
            "type": "message",
            "role": "assistant",
            "model": r.decision.model,
            "content": content,
            "stop_reason": stop_reason(r.stop_reason.as_wire()),
            "stop_sequence": null,
            "usage": usage(&r.usage),
        })
    }

    /// A stream's blocks as the Messages API numbers them: from 0, in the order they start
    /// (the core's indexes may skip).
    #[derive(Debug, Default)]
    pub(super) struct Blocks {
        /// The model the request named.
        pub(super) model: String,
        /// The core's index of each block started, by position.
        started: Vec<u64>,
        /// The stop reason, held for the `message_delta` that carries the usage.
        stop: Option<String>,
    }

    impl Blocks {
        /// The blocks of a stream for the model the request named.
        pub(super) fn new(model: &str) -> Self {
            Self {
                model: model.to_owned(),
                ..Self::default()
            }
        }

        fn position(&self, index: u64) -> Option<usize> {
            self.started.iter().position(|&i| i == index)
        }

        /// The block's position, starting it as `start` when it is new.
        fn enter(&mut self, index: u64, start: Value, out: &mut Vec<Value>) -> usize {
            if let Some(p) = self.position(index) {
                return p;
            }
            self.started.push(index);
            let p = self.started.len() - 1;
            out.push(json!({ "type": "content_block_start", "index": p, "content_block": start }));
            p
        }

        /// The Messages events a ConverseStream event makes.
        pub(super) fn on(
            &mut self,
            kind: &str,
            payload: &Value,
            completed: Option<&GenerateResponse>,
        ) -> Vec<Value> {
            let mut out = Vec::new();
            let index = payload
                .get("contentBlockIndex")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            match kind {
                "messageStart" => {
                    // The call's id and the model that serves are known only at the end: the
                    // message gets an id of its own, and the model the request named.
                    let id = format!("msg_bdrk_{:032x}", rand::random::<u128>());
                    out.push(json!({ "type": "message_start", "message": {
                        "id": id, "type": "message", "role": "assistant",
                        "model": self.model, "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": { "input_tokens": 0, "output_tokens": 0 },
                    }}));
                }
                "contentBlockStart" => {
                    if let Some(t) = payload.pointer("/start/toolUse") {
                        self.enter(
                            index,
                            json!({ "type": "tool_use", "id": t.get("toolUseId"), "name": t.get("name"), "input": {} }),
                            &mut out,
                        );
                    }
                }
                "contentBlockDelta" => {
                    let delta = payload.get("delta").cloned().unwrap_or_default();
                    if let Some(text) = delta.get("text") {
                        let p = self.enter(index, json!({ "type": "text", "text": "" }), &mut out);
                        out.push(json!({ "type": "content_block_delta", "index": p,
                            "delta": { "type": "text_delta", "text": text } }));
                    } else if let Some(input) = delta.pointer("/toolUse/input") {
                        let p = self.enter(
                            index,
                            json!({ "type": "tool_use", "id": "", "name": "", "input": {} }),
                            &mut out,
                        );
                        out.push(json!({ "type": "content_block_delta", "index": p,
                            "delta": { "type": "input_json_delta", "partial_json": input } }));
                    } else if let Some(r) = delta.get("reasoningContent") {
                        if let Some(data) = r.get("redactedContent") {
                            self.enter(
                                index,
                                json!({ "type": "redacted_thinking", "data": data }),
                                &mut out,
                            );
                        } else {
                            let p = self.enter(
                                index,
                                json!({ "type": "thinking", "thinking": "", "signature": "" }),
                                &mut out,
                            );
                            if let Some(text) = r.get("text") {
                                out.push(json!({ "type": "content_block_delta", "index": p,
                                    "delta": { "type": "thinking_delta", "thinking": text } }));
                            }
                            if let Some(s) = r.get("signature") {
                                out.push(json!({ "type": "content_block_delta", "index": p,
                                    "delta": { "type": "signature_delta", "signature": s } }));
                            }
                        }
                    } else if let Some(c) = delta.get("citation") {
                        // Citations' text came as text deltas; the Messages API gives the
                        // citation on its own delta.
                        if let Some(p) = self.position(index) {
                            out.push(json!({ "type": "content_block_delta", "index": p,
                                "delta": { "type": "citations_delta", "citation": c } }));
                        }
                    }
                }
                "contentBlockStop" => {
                    if let Some(p) = self.position(index) {
                        out.push(json!({ "type": "content_block_stop", "index": p }));
                    }
                }
                "messageStop" => {
                    self.stop = payload
                        .get("stopReason")
                        .and_then(Value::as_str)
                        .map(|s| stop_reason(s).to_owned());
                }
                "metadata" => {
                    if let Some(r) = completed {
                        out.push(json!({ "type": "message_delta",
                            "delta": { "stop_reason": self.stop.take(), "stop_sequence": null },
                            "usage": usage(&r.usage) }));
                        out.push(json!({ "type": "message_stop",
                            "amazon-bedrock-invocationMetrics": invocation_metrics(r) }));
                    }
                }
                _ => {}
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentBlock, SystemBlock, ToolChoice};

    #[test]
    fn a_messages_body_reads_as_the_converse_request_it_means() {
        let body = json!({
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 256, "temperature": 0.2, "top_k": 40,
            "system": [{ "type": "text", "text": "You book trips.", "cache_control": { "type": "ephemeral" } }],
            "messages": [
                { "role": "user", "content": "Weather in Paris?" },
                { "role": "assistant", "content": [
                    { "type": "thinking", "thinking": "Look it up.", "signature": "sig" },
                    { "type": "tool_use", "id": "t1", "name": "weather", "input": { "city": "Paris" } },
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "t1", "content": "21C" },
                ]},
            ],
            "tools": [{ "name": "weather", "description": "Weather", "input_schema": { "type": "object" } }],
            "tool_choice": { "type": "tool", "name": "weather" },
            "laneway": { "slo": { "class": "interactive" } },
        });
        let model = "us.anthropic.claude-haiku-4-5-20251001-v1:0";
        let native = Native::of(model, &body).unwrap();
        assert_eq!(native, Native::Anthropic);
        let r = request(
            native,
            model,
            body,
            InvokeHeaders {
                tier: Some("flex"),
                ..InvokeHeaders::default()
            },
        )
        .unwrap();
        assert_eq!(r.inference.max_tokens, Some(256));
        assert!(matches!(
            &r.system[..],
            [SystemBlock::Text(_), SystemBlock::CachePoint(_)]
        ));
        assert_eq!(r.messages.len(), 3);
        assert!(matches!(
            &r.messages[1].content[..],
            [ContentBlock::Reasoning(_), ContentBlock::ToolUse(_)]
        ));
        assert!(matches!(
            &r.messages[2].content[..],
            [ContentBlock::ToolResult(_)]
        ));
        assert_eq!(r.tool_choice, Some(ToolChoice::Tool("weather".into())));
        assert_eq!(r.slo.class, crate::types::SloClass::Interactive);
        assert_eq!(r.tier.map(|t| t.as_str()), Some("flex"));
    }

    #[test]
    fn what_laneway_cannot_read_is_named() {
        let model = "anthropic.claude-haiku-4-5-20251001-v1:0";
        for (body, field) in [
            (
                json!({ "messages": [], "max_tokens": 1, "container": "x" }),
                "container",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": [{ "type": "image", "source": { "type": "url", "url": "u" } }] }] }),
                "messages[0].content[0].source.type",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": [{ "type": "server_tool_use" }] }] }),
                "messages[0].content[0].type",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": "x" }], "tools": [{ "name": "t", "input_schema": {} }], "tool_choice": { "type": "none" } }),
                "tool_choice.type",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": [{ "type": "text", "text": "x", "citations": [] }] }] }),
                "messages[0].content[0].citations",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": "x" }], "tools": [{ "name": "t", "input_schema": {} }], "tool_choice": { "type": "auto", "disable_parallel_tool_use": true } }),
                "tool_choice.disable_parallel_tool_use",
            ),
            (
                json!({ "messages": [{ "role": "user", "content": "x" }], "thinking": { "type": "enabled" } }),
                "thinking.budget_tokens",
            ),
        ] {
            let e = request(Native::Anthropic, model, body, InvokeHeaders::default()).unwrap_err();
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
        let e = Native::of("meta.llama3-70b-instruct-v1:0", &json!({ "prompt": "x" })).unwrap_err();
        assert!(e.to_string().contains("Converse"), "{e}");
    }

    #[test]
    fn a_guardrail_in_headers_is_the_calls_and_optimized_latency_is_refused() {
        let body = || json!({ "messages": [{ "role": "user", "content": "x" }], "max_tokens": 8 });
        let model = "anthropic.claude-haiku-4-5-20251001-v1:0";
        let r = request(
            Native::Anthropic,
            model,
            body(),
            InvokeHeaders {
                guardrail: Some("gr-1"),
                guardrail_version: Some("2"),
                trace: Some("ENABLED"),
                ..InvokeHeaders::default()
            },
        )
        .unwrap();
        assert_eq!(r.guardrail.map(|g| g.identifier), Some("gr-1".to_string()));
        let latency = InvokeHeaders {
            latency: Some("optimized"),
            ..InvokeHeaders::default()
        };
        let e = request(Native::Anthropic, model, body(), latency).unwrap_err();
        assert!(e.to_string().contains("PerformanceConfig-Latency"), "{e}");
        let half = InvokeHeaders {
            guardrail: Some("gr-1"),
            ..InvokeHeaders::default()
        };
        assert!(request(Native::Anthropic, model, body(), half).is_err());
    }

    #[test]
    fn a_nova_body_takes_either_spelling_of_its_settings() {
        let body = json!({
            "schemaVersion": "messages-v1",
            "system": [{ "text": "Be brief." }],
            "messages": [{ "role": "user", "content": [{ "text": "Hi" }] }],
            "inferenceConfig": { "max_new_tokens": 64, "top_p": 0.9, "topK": 20 },
        });
        let model = "us.amazon.nova-lite-v1:0";
        let r = request(
            Native::of(model, &body).unwrap(),
            model,
            body,
            InvokeHeaders::default(),
        )
        .unwrap();
        assert_eq!(r.inference.max_tokens, Some(64));
        assert_eq!(r.inference.top_p, Some(0.9));
        let fields = r.model_fields.unwrap().request;
        assert_eq!(fields["inferenceConfig"]["topK"], 20);
        let both =
            json!({ "messages": [], "inferenceConfig": { "maxTokens": 1, "max_new_tokens": 2 } });
        let e = request(Native::Nova, model, both, InvokeHeaders::default()).unwrap_err();
        assert!(
            e.to_string().contains("inferenceConfig.max_new_tokens"),
            "{e}"
        );
        let odd = json!({ "messages": [], "inferenceConfig": 3 });
        assert!(request(Native::Nova, model, odd, InvokeHeaders::default()).is_err());
    }
}
