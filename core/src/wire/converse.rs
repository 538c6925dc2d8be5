//! The AWS Converse request and response shapes, as boto3's `converse(**kwargs)` and the
//! JavaScript SDK's `ConverseCommand` take and give them: an app moves to Laneway by changing
//! the call, not its data.
//!
//! A request is Converse's input (`modelId`, `messages`, `system`, `inferenceConfig`,
//! `toolConfig`, `serviceTier`, `performanceConfig`, `outputConfig`,
//! `additionalModelRequestFields`, `additionalModelResponseFieldPaths`, `requestMetadata`,
//! `guardrailConfig`, with `guardContent` and `reasoningContent` blocks) plus
//! an optional `laneway` object with the core request's own keys (`slo`, `task_id`,
//! `residency`, `cache`, `min_variant`, `continue_on_interrupt`, `reasoning`, or `model` to name
//! a family instead of `modelId`).
//!
//! Reasoning written in a model's own spelling (Claude's `thinking` and `output_config.effort`,
//! Nova 2's `reasoningConfig`, `reasoning_effort`, or `outputConfig.effort`) becomes the
//! model-neutral [`Reasoning`](crate::Reasoning), so that a failover to a model that spells it
//! otherwise still reasons; the other `additionalModelRequestFields` go only to the model
//! `modelId` names. `promptVariables`, which Laneway cannot honour (prompt-management prompts
//! are not routed), is refused by name, never dropped.
//!
//! ```
//! use laneway::surface::converse;
//! let request = converse::request(serde_json::json!({
//!     "modelId": "amazon.nova-lite-v1:0",
//!     "messages": [{ "role": "user", "content": [{ "text": "Hello" }] }],
//!     "inferenceConfig": { "maxTokens": 64 },
//!     "laneway": { "slo": { "class": "interactive" } },
//! })).unwrap();
//! assert_eq!(request.inference.max_tokens, Some(64));
//! ```

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

use crate::types::{Error, GenerateRequest, GenerateResponse, OutputBlock, ReasoningBlock, Result};

/// The Converse fields Laneway refuses, and why.
const REFUSED: &[(&str, &str)] = &[(
    "promptVariables",
    "prompt-management prompts are not routed by Laneway",
)];

/// A Converse request (plus its `laneway` options) as a core request.
pub fn request(value: Value) -> Result<GenerateRequest> {
    let Value::Object(mut input) = value else {
        return Err(Error::invalid("request", "a Converse request is an object"));
    };
    for (field, why) in REFUSED {
        if input.contains_key(*field) {
            return Err(Error::invalid(*field, *why));
        }
    }
    let laneway = match input.remove("laneway") {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Error::invalid("laneway", "an object of Laneway's options")),
    };
    let wire: ConverseInput = serde_path_to_error::deserialize(Value::Object(input))
        .map_err(|e| Error::invalid(path_of(&e), e.into_inner().to_string()))?;
    let mut core = Map::new();
    if let Some(id) = &wire.model_id {
        core.insert("model".into(), json!({ "model": id }));
    }
    core.insert(
        "messages".into(),
        wire.messages.iter().map(message).collect::<Result<_>>()?,
    );
    if !wire.system.is_empty() {
        core.insert(
            "system".into(),
            wire.system
                .iter()
                .map(system_block)
                .collect::<Result<_>>()?,
        );
    }
    if let Some(inference) = wire.inference_config {
        core.insert("inference".into(), inference);
    }
    if let Some(tools) = wire.tool_config {
        core.insert(
            "tools".into(),
            tools.tools.iter().map(tool).collect::<Result<_>>()?,
        );
        if let Some(choice) = tools.tool_choice {
            core.insert("tool_choice".into(), tool_choice(&choice)?);
        }
    }
    if let Some(tier) = wire.service_tier {
        core.insert("tier".into(), tier.kind);
    }
    let mut native = wire.additional_model_request_fields.unwrap_or_default();
    let effort = wire.output_config.as_ref().and_then(|o| o.effort.clone());
    if let Some(reasoning) = lift_reasoning(&mut native, effort)? {
        core.insert("reasoning".into(), reasoning);
    }
    if let Some(format) = wire.output_config.and_then(|o| o.text_format) {
        core.insert("output_format".into(), output_format(&format)?);
    }
    if !native.is_empty() || !wire.additional_model_response_field_paths.is_empty() {
        core.insert(
            "model_fields".into(),
            json!({
                "model": wire.model_id,
                "request": native,
                "response_paths": wire.additional_model_response_field_paths,
            }),
        );
    }
    if let Some(metadata) = wire.request_metadata {
        core.insert("metadata".into(), Value::Object(metadata));
    }
    if let Some(g) = wire.guardrail_config {
        core.insert(
            "guardrail".into(),
            json!({
                "identifier": g.guardrail_identifier,
                "version": g.guardrail_version,
                "trace": g.trace.unwrap_or_else(|| "disabled".into()),
                "stream_mode": g.stream_processing_mode.unwrap_or_else(|| "sync".into()),
            }),
        );
    }
    if let Some(p) = wire.performance_config
        && p.latency != "standard"
    {
        return Err(Error::invalid(
            "performanceConfig.latency",
            "Laneway asks for latency-optimized inference from the SLO: set laneway.slo.class to \"interactive\" instead",
        ));
    }
    for (key, value) in laneway {
        if core.contains_key(&key) || key == "messages" || key == "inference" {
            return Err(Error::invalid(
                format!("laneway.{key}"),
                "set in the Converse request already",
            ));
        }
        core.insert(key, value);
    }
    serde_path_to_error::deserialize(Value::Object(core))
        .map_err(|e| Error::invalid(path_of(&e), e.into_inner().to_string()))
}

fn path_of<E>(e: &serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    if path == "." { "request".into() } else { path }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConverseInput {
    #[serde(default)]
    model_id: Option<String>,
    messages: Vec<WireMessage>,
    #[serde(default)]
    system: Vec<Map<String, Value>>,
    #[serde(default, deserialize_with = "inference_config")]
    inference_config: Option<Value>,
    #[serde(default)]
    tool_config: Option<ToolConfig>,
    #[serde(default)]
    service_tier: Option<ServiceTierWire>,
    #[serde(default)]
    performance_config: Option<PerformanceConfig>,
    #[serde(default)]
    output_config: Option<OutputConfigWire>,
    #[serde(default)]
    additional_model_request_fields: Option<Map<String, Value>>,
    #[serde(default)]
    additional_model_response_field_paths: Vec<String>,
    #[serde(default)]
    request_metadata: Option<Map<String, Value>>,
    #[serde(default)]
    guardrail_config: Option<GuardrailConfigWire>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GuardrailConfigWire {
    guardrail_identifier: String,
    guardrail_version: String,
    #[serde(default)]
    trace: Option<String>,
    #[serde(default)]
    stream_processing_mode: Option<String>,
}

/// A `guardContent` block: `{text: {text, qualifiers}}` or `{image: {format, source}}`.
fn guard_content(v: &Value, at: &str) -> Result<Value> {
    let at = format!("{at}.guardContent");
    let block = v
        .as_object()
        .ok_or_else(|| Error::invalid(&at, "an object"))?;
    match only_key(block, &at)? {
        ("text", t) => Ok(json!({ "text": {
            "text": t.get("text").ok_or_else(|| Error::invalid(format!("{at}.text.text"), "missing"))?,
            "qualifiers": t.get("qualifiers").cloned().unwrap_or(json!([])),
        }})),
        ("image", i) => Ok(json!({ "image": {
            "format": i.get("format").ok_or_else(|| Error::invalid(format!("{at}.image.format"), "missing"))?,
            "bytes": bytes(i.get("source").unwrap_or(&Value::Null), &format!("{at}.image.source"))?,
        }})),
        (other, _) => Err(Error::invalid(format!("{at}.{other}"), "text or image")),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutputConfigWire {
    #[serde(default)]
    text_format: Option<TextFormatWire>,
    #[serde(default)]
    effort: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextFormatWire {
    #[serde(rename = "type")]
    kind: String,
    structure: Map<String, Value>,
}

/// `outputConfig.textFormat` as the core's `output_format`: the schema arrives as JSON text.
fn output_format(f: &TextFormatWire) -> Result<Value> {
    let at = "outputConfig.textFormat";
    if f.kind != "json_schema" {
        return Err(Error::invalid(
            format!("{at}.type"),
            format!("{:?}: the only type is \"json_schema\"", f.kind),
        ));
    }
    let Ok(("jsonSchema", def)) = only_key(&f.structure, &format!("{at}.structure")) else {
        return Err(Error::invalid(
            format!("{at}.structure"),
            "a structure is {\"jsonSchema\": {...}}",
        ));
    };
    let text = def.get("schema").and_then(Value::as_str).ok_or_else(|| {
        Error::invalid(
            format!("{at}.structure.jsonSchema.schema"),
            "a JSON schema as text",
        )
    })?;
    let schema: Value = serde_json::from_str(text).map_err(|e| {
        Error::invalid(
            format!("{at}.structure.jsonSchema.schema"),
            format!("is not JSON: {e}"),
        )
    })?;
    Ok(json!({ "json_schema": {
        "schema": schema,
        "name": def.get("name"),
        "description": def.get("description"),
    }}))
}

/// Takes reasoning written in a model's own spelling out of `native` (Claude's `thinking` and
/// `output_config.effort`, Nova 2's `reasoningConfig`, `reasoning_effort`), with Converse's
/// `outputConfig.effort`, as the core's model-neutral `reasoning`. Disabled thinking is none.
fn lift_reasoning(
    native: &mut Map<String, Value>,
    effort: Option<String>,
) -> Result<Option<Value>> {
    let mut effort = effort.map(Value::String);
    let mut budget = None;
    let mut on = effort.is_some();
    if let Some(thinking) = native.remove("thinking") {
        match thinking.get("type").and_then(Value::as_str) {
            Some("enabled") => {
                on = true;
                budget = Some(thinking.get("budget_tokens").cloned().ok_or_else(|| {
                    Error::invalid(
                        "additionalModelRequestFields.thinking.budget_tokens",
                        "Field required (thinking of type \"enabled\" takes a budget)",
                    )
                })?);
            }
            Some("adaptive") => on = true,
            Some("disabled") => {}
            _ => {
                return Err(Error::invalid(
                    "additionalModelRequestFields.thinking.type",
                    "enabled, adaptive or disabled",
                ));
            }
        }
    }
    let effort_only = native
        .get("output_config")
        .and_then(Value::as_object)
        .is_some_and(|o| o.len() == 1 && o.contains_key("effort"));
    if effort_only {
        effort = native
            .remove("output_config")
            .and_then(|o| o.get("effort").cloned());
        on = true;
    }
    if let Some(config) = native.remove("reasoningConfig") {
        match config.get("type").and_then(Value::as_str) {
            Some("enabled") => {
                on = true;
                effort = config.get("maxReasoningEffort").cloned().or(effort);
            }
            Some("disabled") | None => {}
            Some(other) => {
                return Err(Error::invalid(
                    "additionalModelRequestFields.reasoningConfig.type",
                    format!("{other:?}: enabled or disabled"),
                ));
            }
        }
    }
    if let Some(e) = native.remove("reasoning_effort") {
        on = true;
        effort = Some(e);
    }
    Ok(on.then(|| json!({ "effort": effort, "budget_tokens": budget })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireMessage {
    role: String,
    content: Vec<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolConfig {
    tools: Vec<Map<String, Value>>,
    #[serde(default)]
    tool_choice: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceTierWire {
    #[serde(rename = "type")]
    kind: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PerformanceConfig {
    latency: String,
}

/// `inferenceConfig` with the core's key names.
fn inference_config<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Value>, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Wire {
        #[serde(default)]
        max_tokens: Option<i64>,
        #[serde(default)]
        temperature: Option<f32>,
        #[serde(default)]
        top_p: Option<f32>,
        #[serde(default)]
        stop_sequences: Vec<String>,
    }
    let w = Option::<Wire>::deserialize(d)?;
    Ok(w.map(|w| {
        json!({
            "max_tokens": w.max_tokens,
            "temperature": w.temperature,
            "top_p": w.top_p,
            "stop_sequences": w.stop_sequences,
        })
    }))
}

/// The one key of a Converse union (`{"text": ...}`), or an error naming `at`.
fn only_key<'m>(block: &'m Map<String, Value>, at: &str) -> Result<(&'m str, &'m Value)> {
    let mut keys = block.iter();
    match (keys.next(), keys.next()) {
        (Some((k, v)), None) => Ok((k.as_str(), v)),
        _ => Err(Error::invalid(
            at,
            format!(
                "a block has exactly one key (text, image, toolUse, ...); this one has {}",
                block.len()
            ),
        )),
    }
}

fn message(m: &WireMessage) -> Result<Value> {
    let content = m
        .content
        .iter()
        .map(|b| content_block(b, "messages.content"))
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({ "role": m.role, "content": content }))
}

fn content_block(block: &Map<String, Value>, at: &str) -> Result<Value> {
    let (key, v) = only_key(block, at)?;
    let field = |name: &str| {
        v.get(name)
            .cloned()
            .ok_or_else(|| Error::invalid(format!("{at}.{key}.{name}"), "missing"))
    };
    Ok(match key {
        "text" => json!({ "text": v }),
        "cachePoint" => json!({ "cache_point": cache_point(v, at)? }),
        "image" => {
            let mut image = Map::from_iter([("format".to_string(), field("format")?)]);
            image.extend(image_source(
                &field("source")?,
                &format!("{at}.image.source"),
            )?);
            json!({ "image": image })
        }
        "document" => {
            let mut document = Map::from_iter([
                ("format".to_string(), field("format")?),
                ("name".to_string(), field("name")?),
                (
                    "context".to_string(),
                    v.get("context").cloned().unwrap_or(Value::Null),
                ),
                (
                    "citations".to_string(),
                    Value::Bool(
                        v.pointer("/citations/enabled")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    ),
                ),
            ]);
            document.extend(image_source(
                &field("source")?,
                &format!("{at}.document.source"),
            )?);
            json!({ "document": document })
        }
        "audio" | "video" => json!({ key: {
            "format": field("format")?,
            "source": media_source(&field("source")?, &format!("{at}.{key}.source"))?,
        }}),
        "searchResult" => json!({ "search_result": {
            "source": field("source")?,
            "title": field("title")?,
            "content": field("content")?
                .as_array()
                .ok_or_else(|| Error::invalid(format!("{at}.searchResult.content"), "a list"))?
                .iter()
                .map(|c| c.get("text").cloned().ok_or_else(|| Error::invalid(format!("{at}.searchResult.content"), "blocks of text")))
                .collect::<Result<Vec<_>>>()?,
            "citations": v.pointer("/citations/enabled").and_then(Value::as_bool).unwrap_or(false),
        }}),
        "citationsContent" => json!({ "citations": citations_in(v, at)? }),
        "toolAddition" | "toolRemoval" => {
            let tool = field("tool")?;
            let core_key = if key == "toolAddition" {
                "tool_addition"
            } else {
                "tool_removal"
            };
            json!({ core_key: {
                "name": tool.get("name"),
                "kind": tool.get("type"),
                "server_name": tool.get("serverName"),
            }})
        }
        "reasoningContent" => json!({ "reasoning": reasoning_block(v, at)? }),
        "guardContent" => json!({ "guard_content": guard_content(v, at)? }),
        "toolUse" => json!({ "tool_use": {
            "id": field("toolUseId")?,
            "name": field("name")?,
            "input": field("input")?,
        }}),
        "toolResult" => {
            let content = field("content")?;
            let parts = content
                .as_array()
                .ok_or_else(|| Error::invalid(format!("{at}.toolResult.content"), "a list"))?
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let at = format!("{at}.toolResult.content[{k}]");
                    let p = p
                        .as_object()
                        .ok_or_else(|| Error::invalid(&*at, "a tool result content block"))?;
                    match only_key(p, &at)? {
                        ("json", j) => Ok(json!({ "json": j })),
                        // The same shapes as a message's blocks.
                        ("text" | "image" | "document" | "video" | "searchResult", _) => {
                            content_block(p, &at)
                        }
                        (other, _) => Err(Error::invalid(
                            format!("{at}.{other}"),
                            "a tool result's content is text, json, image, document, video or searchResult",
                        )),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let status = v.get("status").and_then(Value::as_str);
            json!({ "tool_result": {
                "tool_use_id": field("toolUseId")?,
                "content": parts,
                "is_error": status == Some("error"),
            }})
        }
        other => {
            return Err(Error::invalid(
                format!("{at}.{other}"),
                "a content block is text, image, document, audio, video, toolUse, toolResult, reasoningContent, guardContent, searchResult, citationsContent, toolAddition, toolRemoval or cachePoint",
            ));
        }
    })
}

/// An image's or document's source as the core's keys: `bytes`, or `s3` for an
/// `s3Location` (a document's `text` and `content` sources are refused by name).
fn image_source(source: &Value, at: &str) -> Result<Map<String, Value>> {
    for other in ["text", "content"] {
        if source.get(other).is_some() {
            return Err(Error::invalid(
                format!("{at}.{other}"),
                "Laneway sends a document's bytes or its s3Location: encode the text as a txt or md document's bytes",
            ));
        }
    }
    let (key, value) = match source.get("s3Location") {
        Some(_) => ("s3", media_source(source, at)?["s3"].take()),
        None => ("bytes", bytes(source, at)?),
    };
    Ok(Map::from_iter([(key.to_string(), value)]))
}

/// An audio or video source: inline bytes, or `s3Location`.
fn media_source(source: &Value, at: &str) -> Result<Value> {
    if let Some(s3) = source.get("s3Location") {
        return Ok(json!({ "s3": {
            "uri": s3.get("uri").ok_or_else(|| Error::invalid(format!("{at}.s3Location.uri"), "missing"))?,
            "bucket_owner": s3.get("bucketOwner"),
        }}));
    }
    Ok(json!({ "bytes": bytes(source, at)? }))
}

/// A `citationsContent` block of an earlier turn.
fn citations_in(v: &Value, at: &str) -> Result<Value> {
    let texts = |list: Option<&Value>| -> Vec<Value> {
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("text").cloned())
            .collect()
    };
    let citations = v
        .get("citations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let location = match c
                .get("location")
                .and_then(Value::as_object)
                .map(|l| only_key(l, at))
            {
                None => Value::Null,
                Some(Ok(("documentChar", s))) => json!({ "document_char": span(s) }),
                Some(Ok(("documentPage", s))) => json!({ "document_page": span(s) }),
                Some(Ok(("documentChunk", s))) => json!({ "document_chunk": span(s) }),
                Some(Ok(("searchResultLocation", s))) => json!({ "search_result": {
                    "document_index": s.get("searchResultIndex").cloned().unwrap_or(json!(0)),
                    "start": s.get("start").cloned().unwrap_or(json!(0)),
                    "end": s.get("end").cloned().unwrap_or(json!(0)),
                }}),
                Some(Ok(("web", w))) => {
                    json!({ "web": { "url": w.get("url"), "domain": w.get("domain") } })
                }
                Some(Ok((other, _))) => {
                    return Err(Error::invalid(
                        format!("{at}.citationsContent.citations.location.{other}"),
                        "an unknown citation location",
                    ));
                }
                Some(Err(e)) => return Err(e),
            };
            Ok(json!({
                "title": c.get("title"),
                "source": c.get("source"),
                "source_content": texts(c.get("sourceContent")),
                "location": location,
            }))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({ "content": texts(v.get("content")), "citations": citations }))
}

fn span(s: &Value) -> Value {
    json!({
        "document_index": s.get("documentIndex").cloned().unwrap_or(json!(0)),
        "start": s.get("start").cloned().unwrap_or(json!(0)),
        "end": s.get("end").cloned().unwrap_or(json!(0)),
    })
}

/// A core citation in Converse's shape.
pub(super) fn citation_value(c: &crate::types::Citation) -> Value {
    use crate::types::CitationLocation as L;
    let span = |s: &crate::types::Span| json!({ "documentIndex": s.document_index, "start": s.start, "end": s.end });
    let location = c.location.as_ref().map(|l| match l {
        L::DocumentChar(s) => json!({ "documentChar": span(s) }),
        L::DocumentPage(s) => json!({ "documentPage": span(s) }),
        L::DocumentChunk(s) => json!({ "documentChunk": span(s) }),
        L::SearchResult(s) => json!({ "searchResultLocation": { "searchResultIndex": s.document_index, "start": s.start, "end": s.end } }),
        L::Web { url, domain } => json!({ "web": { "url": url, "domain": domain } }),
    });
    let mut out = json!({
        "sourceContent": c.source_content.iter().map(|t| json!({ "text": t })).collect::<Vec<_>>(),
    });
    for (k, v) in [("title", c.title.as_ref()), ("source", c.source.as_ref())] {
        if let Some(v) = v {
            out[k] = json!(v);
        }
    }
    if let Some(l) = location {
        out["location"] = l;
    }
    out
}

/// A `reasoningContent` block: `{reasoningText: {text, signature}}` or `{redactedContent}`.
fn reasoning_block(v: &Value, at: &str) -> Result<Value> {
    let at = format!("{at}.reasoningContent");
    let block = v
        .as_object()
        .ok_or_else(|| Error::invalid(&at, "an object"))?;
    match only_key(block, &at)? {
        ("reasoningText", t) => Ok(json!({ "text": {
            "text": t.get("text").ok_or_else(|| Error::invalid(format!("{at}.reasoningText.text"), "missing"))?,
            "signature": t.get("signature"),
        }})),
        ("redactedContent", b) => Ok(json!({
            "redacted": bytes(&json!({ "bytes": b }), &format!("{at}.redactedContent"))?,
        })),
        (other, _) => Err(Error::invalid(
            format!("{at}.{other}"),
            "reasoningText or redactedContent",
        )),
    }
}

fn cache_point(v: &Value, at: &str) -> Result<Value> {
    match v.get("type").and_then(Value::as_str) {
        Some("default") | None => Ok(json!({ "ttl": v.get("ttl") })),
        Some(other) => Err(Error::invalid(
            format!("{at}.cachePoint.type"),
            format!("{other:?}: the only type is \"default\""),
        )),
    }
}

/// An image or document source: `{"bytes": ...}` with base64 text, a list of byte values or
/// raw bytes (what Python's `bytes` becomes), as base64 text for the core.
fn bytes(source: &Value, at: &str) -> Result<Value> {
    let raw = source.get("bytes").ok_or_else(|| {
        Error::invalid(
            at,
            "a source holds `bytes` (or, for media, images and documents, `s3Location`)",
        )
    })?;
    match raw {
        Value::String(_) => Ok(raw.clone()),
        Value::Array(items) => {
            let bytes = items
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| Error::invalid(format!("{at}.bytes"), "bytes are 0 to 255"))?;
            Ok(Value::String(
                base64::engine::general_purpose::STANDARD.encode(bytes),
            ))
        }
        _ => Err(Error::invalid(
            format!("{at}.bytes"),
            "base64 text or a list of bytes",
        )),
    }
}

fn system_block(block: &Map<String, Value>) -> Result<Value> {
    match only_key(block, "system")? {
        ("text", t) => Ok(json!({ "text": t })),
        ("cachePoint", c) => Ok(json!({ "cache_point": cache_point(c, "system")? })),
        ("guardContent", g) => Ok(json!({ "guard_content": guard_content(g, "system")? })),
        (other, _) => Err(Error::invalid(
            format!("system.{other}"),
            "Laneway sends text, guardContent and cachePoint system blocks",
        )),
    }
}

fn tool(block: &Map<String, Value>) -> Result<Value> {
    match only_key(block, "toolConfig.tools")? {
        ("toolSpec", spec) => {
            let schema = spec
                .get("inputSchema")
                .and_then(|s| s.get("json"))
                .ok_or_else(|| {
                    Error::invalid("toolConfig.tools.toolSpec.inputSchema.json", "missing")
                })?;
            Ok(json!({ "spec": {
                "name": spec.get("name"),
                "description": spec.get("description"),
                "input_schema": schema,
                "strict": spec.get("strict").and_then(Value::as_bool).unwrap_or(false),
            }}))
        }
        ("cachePoint", c) => Ok(json!({ "cache_point": cache_point(c, "toolConfig.tools")? })),
        (other, _) => Err(Error::invalid(
            format!("toolConfig.tools.{other}"),
            "a tool is a toolSpec or a cachePoint",
        )),
    }
}

fn tool_choice(choice: &Map<String, Value>) -> Result<Value> {
    match only_key(choice, "toolConfig.toolChoice")? {
        ("auto", _) => Ok(json!("auto")),
        ("any", _) => Ok(json!("any")),
        ("tool", t) => Ok(json!({ "tool": t.get("name") })),
        (other, _) => Err(Error::invalid(
            format!("toolConfig.toolChoice.{other}"),
            "auto, any or tool",
        )),
    }
}

/// A response in Converse's output shape, with Laneway's decision, cost and timings beside it
/// under `laneway` (the core's snake_case schema).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConverseOutput {
    /// `output.message`: the assistant's message, its content blocks in Converse's shape.
    pub output: Value,
    /// `stopReason`, as Converse names it (`end_turn`, `tool_use`, `max_tokens`, ...).
    pub stop_reason: String,
    /// `usage`: input, output and total tokens, and cache reads and writes.
    pub usage: Value,
    /// `metrics.latencyMs`: the call's total time, in milliseconds.
    pub metrics: Value,
    /// `serviceTier.type`: the tier that served, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<Value>,
    /// `additionalModelResponseFields`: the model-specific fields the request asked for, when
    /// the model returned any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_model_response_fields: Option<Value>,
    /// `trace.guardrail` (and `trace.promptRouter`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Value>,
    /// Laneway's `decision`, `timings`, `cost_usd` and `cache_savings_usd` (in USD), in the
    /// core's schema.
    pub laneway: Value,
}

/// Converse's `trace`: the guardrail's assessment and the prompt router's choice.
fn converse_trace(r: &GenerateResponse) -> Option<Value> {
    let mut trace = Map::new();
    if let Some(g) = &r.guardrail_trace {
        trace.insert("guardrail".into(), g.clone());
    }
    if let Some(m) = &r.decision.invoked_model {
        trace.insert("promptRouter".into(), json!({ "invokedModelId": m }));
    }
    (!trace.is_empty()).then_some(Value::Object(trace))
}

/// A core response as Converse's output.
pub fn response(r: &GenerateResponse) -> ConverseOutput {
    let content: Vec<Value> = r
        .content
        .iter()
        .map(|b| match b {
            OutputBlock::Text(t) => json!({ "text": t }),
            OutputBlock::ToolUse { id, name, input } => {
                json!({ "toolUse": { "toolUseId": id, "name": name, "input": input } })
            }
            OutputBlock::Reasoning(ReasoningBlock::Text(r)) => {
                json!({ "reasoningContent": { "reasoningText": r } })
            }
            OutputBlock::Citations(c) => json!({ "citationsContent": {
                "content": c.content.iter().map(|t| json!({ "text": t })).collect::<Vec<_>>(),
                "citations": c.citations.iter().map(citation_value).collect::<Vec<_>>(),
            }}),
            OutputBlock::Reasoning(ReasoningBlock::Redacted(data)) => json!({
                "reasoningContent": {
                    "redactedContent": base64::engine::general_purpose::STANDARD.encode(data),
                },
            }),
        })
        .collect();
    let u = &r.usage;
    ConverseOutput {
        output: json!({ "message": { "role": "assistant", "content": content } }),
        stop_reason: r.stop_reason.as_wire().to_string(),
        usage: json!({
            "inputTokens": u.input_tokens,
            "outputTokens": u.output_tokens,
            "totalTokens": u.total_input_tokens().saturating_add(u.output_tokens),
            "cacheReadInputTokens": u.cache_read_tokens,
            "cacheWriteInputTokens": u.cache_write_tokens,
        }),
        metrics: json!({ "latencyMs": r.timings.total.as_millis() as u64 }),
        service_tier: r
            .decision
            .served_tier
            .map(|t| json!({ "type": t.converse_name().unwrap_or(t.as_str()) })),
        additional_model_response_fields: r.model_response_fields.clone(),
        trace: converse_trace(r),
        laneway: json!({
            "decision": r.decision,
            "timings": r.timings,
            "cost_usd": r.cost_usd,
            "cache_savings_usd": r.cache_savings_usd,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentBlock, ModelRef, SloClass, SystemBlock, Tool, ToolChoice};

    fn agent_turn() -> Value {
        json!({
            "modelId": "anthropic.claude-haiku-4-5-20251001-v1:0",
            "system": [{ "text": "You book trips." }, { "cachePoint": { "type": "default" } }],
            "messages": [
                { "role": "user", "content": [
                    { "text": "Weather in Paris?" },
                    { "image": { "format": "png", "source": { "bytes": [137, 80, 78, 71] } } },
                ]},
                { "role": "assistant", "content": [
                    { "toolUse": { "toolUseId": "t1", "name": "weather", "input": { "city": "Paris" } } },
                ]},
                { "role": "user", "content": [
                    { "toolResult": { "toolUseId": "t1", "content": [{ "json": { "c": 21 } }], "status": "success" } },
                ]},
            ],
            "inferenceConfig": { "maxTokens": 256, "temperature": 0.2, "stopSequences": ["END"] },
            "toolConfig": {
                "tools": [
                    { "toolSpec": { "name": "weather", "description": "Weather",
                        "inputSchema": { "json": { "type": "object", "properties": { "city": { "type": "string" } } } } } },
                    { "cachePoint": { "type": "default" } },
                ],
                "toolChoice": { "tool": { "name": "weather" } },
            },
            "serviceTier": { "type": "flex" },
            "laneway": { "slo": { "class": "background" }, "task_id": "trip-7" },
        })
    }

    #[test]
    fn a_whole_agent_turn_converts() {
        let r = request(agent_turn()).unwrap();
        assert_eq!(
            r.model,
            ModelRef::Model("anthropic.claude-haiku-4-5-20251001-v1:0".into())
        );
        assert_eq!(r.system.len(), 2);
        assert!(matches!(r.system[1], SystemBlock::CachePoint(_)));
        match &r.messages[0].content[1] {
            ContentBlock::Image(i) => assert_eq!(i.bytes(), Some(&[137u8, 80, 78, 71][..])),
            other => panic!("{other:?}"),
        }
        match &r.messages[1].content[0] {
            ContentBlock::ToolUse(t) => assert_eq!(t.input["city"], "Paris"),
            other => panic!("{other:?}"),
        }
        match &r.messages[2].content[0] {
            ContentBlock::ToolResult(t) => assert!(!t.is_error),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.inference.max_tokens, Some(256));
        assert_eq!(r.inference.stop_sequences, ["END"]);
        assert!(matches!(r.tools[0], Tool::Spec(_)) && matches!(r.tools[1], Tool::CachePoint(_)));
        assert_eq!(r.tool_choice, Some(ToolChoice::Tool("weather".into())));
        assert_eq!(r.tier, Some(crate::types::ServiceTier::FLEX));
        assert_eq!(r.slo.class, SloClass::Background);
        assert_eq!(r.task_id.as_deref(), Some("trip-7"));
    }

    #[test]
    fn a_document_block_is_read_with_its_format_name_and_bytes() {
        let r = request(json!({
            "modelId": "amazon.nova-lite-v1:0",
            "messages": [{ "role": "user", "content": [
                { "document": { "format": "pdf", "name": "Q3 report", "source": { "bytes": [37, 80, 68, 70] } } },
                { "text": "What changed?" },
            ]}],
        }))
        .unwrap();
        match &r.messages[0].content[0] {
            ContentBlock::Document(d) => {
                assert_eq!(d.bytes(), Some(&b"%PDF"[..]));
                assert_eq!(d.name, "Q3 report");
                assert_eq!(d.format, crate::types::DocumentFormat::Pdf);
            }
            other => panic!("{other:?}"),
        }
        let cited = request(json!({
            "messages": [{ "role": "user", "content": [
                { "document": { "format": "txt", "name": "a", "source": { "bytes": "YQ==" }, "citations": { "enabled": true }, "context": "notes" } },
            ]}],
        }))
        .unwrap();
        match &cited.messages[0].content[0] {
            ContentBlock::Document(d) => {
                assert!(d.citations && d.context.as_deref() == Some("notes"))
            }
            other => panic!("{other:?}"),
        }
        let badly_named = request(json!({
            "messages": [{ "role": "user", "content": [
                { "document": { "format": "txt", "name": "notes.txt", "source": { "bytes": "YQ==" } } },
            ]}],
        }))
        .unwrap()
        .validate()
        .unwrap_err();
        assert!(
            badly_named.to_string().contains("document.name"),
            "{badly_named}"
        );
    }

    #[test]
    fn base64_bytes_and_a_family_instead_of_a_model_id() {
        let r = request(json!({
            "messages": [{ "role": "user", "content": [
                { "image": { "format": "jpeg", "source": { "bytes": "iVBORw==" } } },
            ]}],
            "laneway": { "model": { "family": "nova" } },
        }))
        .unwrap();
        assert_eq!(r.model, ModelRef::Family("nova".into()));
    }

    #[test]
    fn thinking_in_claudes_spelling_becomes_model_neutral_reasoning() {
        let r = request(json!({
            "modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "messages": [
                { "role": "user", "content": [{ "text": "Weather?" }] },
                { "role": "assistant", "content": [
                    { "reasoningContent": { "reasoningText": { "text": "call it", "signature": "sig" } } },
                    { "toolUse": { "toolUseId": "t1", "name": "weather", "input": {} } },
                ]},
                { "role": "user", "content": [
                    { "toolResult": { "toolUseId": "t1", "content": [{ "text": "21C" }] } },
                ]},
            ],
            "inferenceConfig": { "maxTokens": 8000 },
            "additionalModelRequestFields": { "thinking": { "type": "enabled", "budget_tokens": 4096 }, "top_k": 40 },
            "additionalModelResponseFieldPaths": ["/stop_sequence"],
            "requestMetadata": { "team": "travel" },
            "toolConfig": { "tools": [{ "toolSpec": { "name": "weather", "strict": true,
                "inputSchema": { "json": { "type": "object" } } } }] },
            "outputConfig": { "textFormat": { "type": "json_schema", "structure": { "jsonSchema": {
                "schema": "{\"type\": \"object\"}", "name": "answer" } } } },
        }))
        .unwrap();
        assert_eq!(r.reasoning, Some(crate::types::Reasoning::budget(4096)));
        let fields = r.model_fields.as_ref().unwrap();
        assert_eq!(
            fields.request,
            Map::from_iter([("top_k".into(), json!(40))])
        );
        assert_eq!(
            fields.model.as_deref(),
            Some("anthropic.claude-sonnet-4-5-20250929-v1:0")
        );
        assert_eq!(fields.response_paths, ["/stop_sequence"]);
        assert_eq!(r.metadata["team"], "travel");
        assert!(matches!(&r.tools[0], Tool::Spec(s) if s.strict));
        assert_eq!(
            r.output_format.as_ref().unwrap().schema(),
            &json!({"type": "object"})
        );
        match &r.messages[1].content[0] {
            ContentBlock::Reasoning(crate::types::ReasoningBlock::Text(t)) => {
                assert_eq!(t.signature.as_deref(), Some("sig"))
            }
            other => panic!("{other:?}"),
        }
        assert!(r.validate().is_ok());
        // Nova 2's and adaptive spellings, and a disabled one.
        let nova = request(json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }],
            "additionalModelRequestFields": { "reasoningConfig": { "type": "enabled", "maxReasoningEffort": "high" } },
        }))
        .unwrap();
        assert_eq!(
            nova.reasoning,
            Some(crate::types::Reasoning::effort(
                crate::types::ReasoningEffort::High
            ))
        );
        assert!(nova.model_fields.is_none());
        let adaptive = request(json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }],
            "additionalModelRequestFields": { "thinking": { "type": "adaptive" }, "output_config": { "effort": "max" } },
        }))
        .unwrap();
        assert_eq!(
            adaptive.reasoning,
            Some(crate::types::Reasoning::effort(
                crate::types::ReasoningEffort::Max
            ))
        );
        let off = request(json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }],
            "additionalModelRequestFields": { "thinking": { "type": "disabled" } },
        }))
        .unwrap();
        assert_eq!(off.reasoning, None);
        let typo = request(json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }],
            "additionalModelRequestFields": { "thinking": { "type": "enabled" } },
        }))
        .unwrap_err();
        assert!(typo.to_string().contains("budget_tokens"), "{typo}");
    }

    #[test]
    fn reasoning_and_model_fields_come_back_in_conveses_shape() {
        let mut r = GenerateResponse::for_tests(
            Vec::new(),
            crate::types::StopReason::EndTurn,
            crate::types::Usage::default(),
        );
        r.content = vec![
            OutputBlock::Reasoning(ReasoningBlock::Text(crate::types::ReasoningText {
                text: "think".into(),
                signature: Some("sig".into()),
                id: None,
            })),
            OutputBlock::Reasoning(ReasoningBlock::Redacted(vec![1, 2])),
            OutputBlock::Text("hi".into()),
        ];
        r.model_response_fields = Some(json!({ "stop_sequence": null }));
        let out = serde_json::to_value(response(&r)).unwrap();
        let content = &out["output"]["message"]["content"];
        assert_eq!(
            content[0],
            json!({ "reasoningContent": { "reasoningText": { "text": "think", "signature": "sig" } } })
        );
        assert_eq!(
            content[1],
            json!({ "reasoningContent": { "redactedContent": "AQI=" } })
        );
        assert_eq!(
            out["additionalModelResponseFields"],
            json!({ "stop_sequence": null })
        );
    }

    #[test]
    fn a_tool_result_s_images_documents_videos_and_search_results_convert() {
        let r = request(json!({
            "modelId": "anthropic.claude-sonnet-4-6",
            "messages": [
                { "role": "user", "content": [{ "text": "Look" }] },
                { "role": "assistant", "content": [{ "toolUse": { "toolUseId": "t1", "name": "shot", "input": {} } }] },
                { "role": "user", "content": [{ "toolResult": { "toolUseId": "t1", "content": [
                    { "text": "done" },
                    { "image": { "format": "png", "source": { "bytes": "iVBORw==" } } },
                    { "document": { "format": "txt", "name": "log", "source": { "bytes": "aGk=" } } },
                    { "video": { "format": "mp4", "source": { "s3Location": { "uri": "s3://b/v.mp4" } } } },
                    { "searchResult": { "source": "kb", "title": "T", "content": [{ "text": "p" }] } },
                ] } }] },
            ],
        }))
        .unwrap();
        let ContentBlock::ToolResult(t) = &r.messages[2].content[0] else {
            panic!("{:?}", r.messages[2])
        };
        let kinds: Vec<&str> = t.content.iter().map(|c| c.kind()).collect();
        assert_eq!(
            kinds,
            ["text", "image", "document", "video", "search_result"]
        );
        // An image and a document in S3, as boto3 writes them.
        let r = request(json!({
            "modelId": "anthropic.claude-sonnet-4-6",
            "messages": [{ "role": "user", "content": [
                { "image": { "format": "png", "source": { "s3Location": { "uri": "s3://b/i.png", "bucketOwner": "123456789012" } } } },
                { "document": { "format": "pdf", "name": "report", "source": { "s3Location": { "uri": "s3://b/r.pdf" } } } },
                { "text": "Compare" },
            ] }],
        }))
        .unwrap();
        let ContentBlock::Image(i) = &r.messages[0].content[0] else {
            panic!()
        };
        assert_eq!(
            i.source,
            crate::types::MediaSource::S3 {
                uri: "s3://b/i.png".into(),
                bucket_owner: Some("123456789012".into())
            }
        );
        let ContentBlock::Document(d) = &r.messages[0].content[1] else {
            panic!()
        };
        assert!(d.bytes().is_none());
        let e = request(json!({
            "modelId": "anthropic.claude-sonnet-4-6",
            "messages": [{ "role": "user", "content": [{ "document": { "format": "txt", "name": "n", "source": { "text": "hi" } } }] }],
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("document.source.text"), "{e}");
        let e = request(json!({
            "modelId": "amazon.nova-lite-v1:0",
            "messages": [{ "role": "user", "content": [{ "toolResult": { "toolUseId": "t1", "content": [{ "audio": {} }] } }] }],
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("toolResult.content[0].audio"), "{e}");
    }

    #[test]
    fn what_laneway_cannot_honour_is_refused_by_name() {
        let refuse = |v: Value, field: &str| {
            let e = request(v).unwrap_err();
            assert_eq!(e.kind(), crate::types::ErrorKind::InvalidRequest);
            assert!(e.to_string().contains(field), "{field}: {e}");
        };
        let mut typo = agent_turn();
        typo["inferenceConfig"]["maxTokenz"] = json!(3);
        refuse(typo, "maxTokenz");
        let mut doc = agent_turn();
        doc["messages"][0]["content"][0] = json!({ "hologram": {} });
        refuse(doc, "hologram");
        let mut video = agent_turn();
        video["messages"][0]["content"][0] = json!({ "video": { "format": "mp4" } });
        refuse(video, "video.source");
        let mut twice = agent_turn();
        twice["laneway"]["tier"] = json!("priority");
        refuse(twice, "laneway.tier");
        let mut byte = agent_turn();
        byte["messages"][0]["content"][1]["image"]["source"]["bytes"] = json!([300]);
        refuse(byte, "bytes");
        let mut optimized = agent_turn();
        optimized["performanceConfig"] = json!({ "latency": "optimized" });
        refuse(optimized, "performanceConfig.latency");
        refuse(
            json!({ "messages": [{ "role": "robot", "content": [{ "text": "x" }] }] }),
            "role",
        );
    }
}
