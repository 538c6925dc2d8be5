//! Converse's fields beyond the conversation, as Bedrock checks them: reasoning in a model's
//! own spelling (`additionalModelRequestFields`), reasoning blocks sent back with their
//! signatures, structured output (`outputConfig.textFormat`, strict tools), the model's native
//! response fields and request metadata. Error texts are Bedrock's (shared/reference and the
//! errors users report; see the Laneway README).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::scenario::{ModelSpec, ReasoningStyle};

/// What a Converse request carries beyond the conversation, read before its model is known.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    /// `additionalModelRequestFields`.
    fields: Map<String, Value>,
    /// `additionalModelResponseFieldPaths`.
    response_paths: Vec<String>,
    /// `outputConfig.textFormat`'s schema, parsed.
    schema: Option<Value>,
    /// `outputConfig.effort`, which Claude refuses (it takes `output_config.effort` natively).
    effort: Option<String>,
    strict_tools: bool,
    temperature: Option<f64>,
    top_p: Option<f64>,
    forced_tool: bool,
    /// Reasoning blocks of assistant turns: (message, block, text, signature).
    history: Vec<(usize, usize, Option<String>, Option<String>)>,
    /// The last assistant turn holding a tool use: its index and the kind of its first block.
    last_tool_turn: Option<(usize, &'static str)>,
    /// The first citable source (a document or search result with citations on), as the
    /// answer's citation cites it.
    citable: Option<Value>,
    search_results: bool,
}

/// What the model is to do with them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Admitted {
    /// Reasoning tokens at most, when it reasons.
    pub reasoning: Option<u32>,
    /// Reasoning is answered as `[REDACTED]` (Nova 2).
    pub redacted: bool,
    /// Reasoning comes with a signature (Claude's), checked when it comes back.
    pub signed: bool,
    /// The answer's text conforms to this schema.
    pub schema: Option<Value>,
    /// The native response fields asked for.
    pub response_fields: Option<Value>,
    /// The citation the answer carries (Converse's shape).
    pub citation: Option<Value>,
}

fn block_kind(b: &Value) -> &'static str {
    match b
        .as_object()
        .and_then(|o| o.keys().next())
        .map(String::as_str)
    {
        Some("reasoningContent") => "thinking",
        Some("toolUse") => "tool_use",
        Some("text") => "text",
        _ => "other",
    }
}

/// Reads the fields, refusing what Bedrock refuses before any model sees it.
pub(crate) fn read(v: &Value) -> Result<Extras, String> {
    let mut x = Extras::default();
    if let Some(f) = v.get("additionalModelRequestFields") {
        x.fields = f
            .as_object()
            .cloned()
            .ok_or("additionalModelRequestFields must be a JSON object")?;
    }
    if let Some(paths) = v.get("additionalModelResponseFieldPaths") {
        let paths = paths
            .as_array()
            .ok_or("additionalModelResponseFieldPaths must be a list")?;
        if paths.len() > 10 {
            return Err(format!(
                "1 validation error detected: Value at 'additionalModelResponseFieldPaths' failed to satisfy constraint: Member must have length less than or equal to 10, got {}",
                paths.len()
            ));
        }
        for p in paths {
            match p.as_str() {
                Some(s) if s.starts_with('/') && s.len() <= 256 => x.response_paths.push(s.into()),
                _ => {
                    return Err(format!(
                        "The provided JSON pointer {p} in additionalModelResponseFieldPaths is invalid."
                    ));
                }
            }
        }
    }
    if let Some(m) = v.get("requestMetadata") {
        let m = m.as_object().ok_or("requestMetadata must be a map")?;
        if m.len() > 16 {
            return Err(format!(
                "1 validation error detected: Value at 'requestMetadata' failed to satisfy constraint: Member must have length less than or equal to 16, got {}",
                m.len()
            ));
        }
    }
    if let Some(o) = v.get("outputConfig") {
        x.effort = o.get("effort").and_then(Value::as_str).map(String::from);
        if let Some(f) = o.get("textFormat") {
            let text = f
                .pointer("/structure/jsonSchema/schema")
                .and_then(Value::as_str)
                .ok_or("outputConfig.textFormat.structure.jsonSchema.schema is required")?;
            let schema: Value = serde_json::from_str(text)
                .map_err(|e| format!("The provided JSON schema is invalid: {e}"))?;
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err("The value at outputConfig.textFormat.structure.jsonSchema.schema.type must be one of the following: object.".into());
            }
            x.schema = Some(schema);
        }
    }
    x.strict_tools = v
        .pointer("/toolConfig/tools")
        .and_then(Value::as_array)
        .is_some_and(|t| {
            t.iter()
                .any(|t| t.pointer("/toolSpec/strict") == Some(&Value::Bool(true)))
        });
    x.temperature = v
        .pointer("/inferenceConfig/temperature")
        .and_then(Value::as_f64);
    x.top_p = v.pointer("/inferenceConfig/topP").and_then(Value::as_f64);
    x.forced_tool = v
        .pointer("/toolConfig/toolChoice")
        .and_then(Value::as_object)
        .is_some_and(|c| c.contains_key("any") || c.contains_key("tool"));
    let messages = v.get("messages").and_then(Value::as_array);
    let tool_names: Vec<&str> = v
        .pointer("/toolConfig/tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/toolSpec/name").and_then(Value::as_str))
        .collect();
    for b in messages
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
    {
        for key in ["toolAddition", "toolRemoval"] {
            if let Some(name) = b
                .get(key)
                .and_then(|t| t.pointer("/tool/name"))
                .and_then(Value::as_str)
                && !tool_names.contains(&name)
            {
                return Err(format!(
                    "The {key} block names the tool {name}, which is not in toolConfig.tools."
                ));
            }
        }
    }
    let (mut documents, mut results) = (0u32, 0u32);
    let mut blocks: Vec<&Value> = Vec::new();
    for b in messages
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
    {
        blocks.push(b);
        // A tool's result may carry documents and search results too (RAG tools do).
        let Some(content) = b.pointer("/toolResult/content").and_then(Value::as_array) else {
            continue;
        };
        for c in content {
            let kind = c
                .as_object()
                .and_then(|c| c.keys().next())
                .map(String::as_str);
            match kind {
                Some("text" | "json" | "image" | "document" | "video" | "searchResult") => {}
                other => {
                    return Err(format!(
                        "The toolResult content block {} is not supported: use text, json, image, document, video or searchResult.",
                        other.unwrap_or("(empty)")
                    ));
                }
            }
            blocks.push(c);
        }
    }
    for b in blocks {
        let cited = |c: &Value| c.pointer("/citations/enabled") == Some(&Value::Bool(true));
        if let Some(d) = b.get("document") {
            if cited(d) && x.citable.is_none() {
                x.citable = Some(json!({
                    "title": d.get("name"),
                    "sourceContent": [{ "text": "(document text)" }],
                    "location": { "documentChar": { "documentIndex": documents, "start": 0, "end": 64 } },
                }));
            }
            documents += 1;
        }
        if let Some(r) = b.get("searchResult") {
            x.search_results = true;
            if cited(r) && x.citable.is_none() {
                x.citable = Some(json!({
                    "title": r.get("title"),
                    "source": r.get("source"),
                    "sourceContent": [r.pointer("/content/0").cloned().unwrap_or(json!({ "text": "" }))],
                    "location": { "searchResultLocation": { "searchResultIndex": results, "start": 0, "end": 1 } },
                }));
            }
            results += 1;
        }
    }
    for (i, m) in messages.into_iter().flatten().enumerate() {
        if m.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let blocks = m.get("content").and_then(Value::as_array);
        let blocks = blocks.map(Vec::as_slice).unwrap_or_default();
        for (j, b) in blocks.iter().enumerate() {
            if let Some(r) = b.get("reasoningContent") {
                let t = r.get("reasoningText");
                x.history.push((
                    i,
                    j,
                    t.and_then(|t| t.get("text"))
                        .and_then(Value::as_str)
                        .map(String::from),
                    t.and_then(|t| t.get("signature"))
                        .and_then(Value::as_str)
                        .map(String::from),
                ));
            }
        }
        if blocks.iter().any(|b| b.get("toolUse").is_some()) {
            x.last_tool_turn = Some((i, blocks.first().map_or("other", block_kind)));
        }
    }
    Ok(x)
}

/// The signature the emulator gives a reasoning text (and checks when it comes back).
pub(crate) fn signature(text: &str) -> String {
    let digest =
        Sha256::digest([b"laneway-emulator-thinking\0".as_slice(), text.as_bytes()].concat());
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(&digest[..24])
}

fn model_error(message: impl std::fmt::Display) -> String {
    format!("The model returned the following errors: {message}")
}

/// Reasoning tokens an effort word stands for, at most.
fn effort_tokens(effort: &str) -> Option<u32> {
    Some(match effort {
        "low" => 48,
        "medium" => 160,
        "high" => 480,
        "xhigh" | "max" => 960,
        _ => return None,
    })
}

/// Checks the fields against the model that serves, as it would (`max_tokens` from
/// `inferenceConfig`).
pub(crate) fn check(
    x: &Extras,
    model: &ModelSpec,
    max_tokens: Option<u32>,
) -> Result<Admitted, String> {
    let mut out = Admitted::default();
    let mut fields = x.fields.clone();
    let style = model.reasoning;
    let anthropic = matches!(
        style,
        Some(ReasoningStyle::Anthropic | ReasoningStyle::AnthropicAdaptive)
    );
    // A model that takes only its own sampling (Claude Opus 4.7) refuses the parameters
    // outright. (The wording is the emulator's: AWS's is not published.)
    if model.refuses_sampling && (x.temperature.is_some() || x.top_p.is_some()) {
        return Err(model_error(
            "temperature and top_p are not supported for this model: remove them",
        ));
    }
    // Claude takes its effort in its native `output_config`, not Converse's typed field.
    if x.effort.is_some() {
        return Err(
            "This model doesn't support the effort field. Remove effort and try again.".into(),
        );
    }
    if anthropic {
        if let Some(t) = fields.remove("thinking") {
            match t.get("type").and_then(Value::as_str) {
                Some("enabled") => {
                    let budget =
                        t.get("budget_tokens")
                            .and_then(Value::as_u64)
                            .ok_or_else(|| {
                                model_error("thinking.enabled.budget_tokens: Field required")
                            })?;
                    if budget < 1024 {
                        return Err(model_error(
                            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                        ));
                    }
                    if max_tokens.is_some_and(|m| u64::from(m) <= budget) {
                        return Err(model_error(
                            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
                        ));
                    }
                    out.reasoning = Some(
                        u32::try_from(budget / 16)
                            .unwrap_or(u32::MAX)
                            .clamp(16, 960),
                    );
                }
                Some("adaptive") if style == Some(ReasoningStyle::AnthropicAdaptive) => {
                    let effort = fields
                        .remove("output_config")
                        .and_then(|o| o.get("effort").and_then(Value::as_str).map(String::from))
                        .unwrap_or_else(|| "high".into());
                    out.reasoning = Some(effort_tokens(&effort).ok_or_else(|| {
                        model_error(format!("output_config.effort: Input should be 'low', 'medium', 'high' or 'max', got '{effort}'"))
                    })?);
                }
                Some("adaptive") => {
                    return Err(model_error(
                        "thinking.type: adaptive thinking is not supported on this model. Use thinking.type \"enabled\" with budget_tokens.",
                    ));
                }
                Some("disabled") => {}
                _ => {
                    return Err(model_error(
                        "thinking.type: Input tag does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'",
                    ));
                }
            }
        }
        if let Some(o) = fields.remove("output_config")
            && (style != Some(ReasoningStyle::AnthropicAdaptive) || o.get("effort").is_none())
        {
            return Err(model_error("output_config: Extra inputs are not permitted"));
        }
        if out.reasoning.is_some() {
            if x.temperature.is_some_and(|t| t != 1.0) {
                return Err(model_error(
                    "temperature may only be set to 1 when thinking is enabled.",
                ));
            }
            if x.top_p.is_some_and(|p| p < 0.95) {
                return Err(model_error(
                    "top_p must be greater than or equal to 0.95 or unset when thinking is enabled.",
                ));
            }
            if x.forced_tool {
                return Err(model_error(
                    "Thinking may not be enabled when tool_choice forces tool use.",
                ));
            }
            if let Some((i, first)) = x.last_tool_turn
                && first != "thinking"
            {
                return Err(model_error(format!(
                    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                )));
            }
        }
        for (i, j, text, sig) in &x.history {
            let Some(text) = text else { continue };
            match sig {
                None => {
                    return Err(model_error(format!(
                        "messages.{i}.content.{j}.thinking.signature: Field required"
                    )));
                }
                Some(s) if *s != signature(text) => {
                    return Err(model_error(format!(
                        "messages.{i}.content.{j}: Invalid signature in thinking block"
                    )));
                }
                Some(_) => {}
            }
        }
        for key in ["anthropic_beta", "top_k"] {
            fields.remove(key);
        }
    } else if style == Some(ReasoningStyle::Nova) {
        if let Some(c) = fields.remove("reasoningConfig") {
            match c.get("type").and_then(Value::as_str) {
                Some("enabled") => {
                    let effort = c.get("maxReasoningEffort").and_then(Value::as_str).unwrap_or("low");
                    if !["low", "medium", "high"].contains(&effort) {
                        return Err("Malformed input request: the provided reasoning config value is invalid, please reformat your input and try again.".into());
                    }
                    out.reasoning = effort_tokens(effort);
                    out.redacted = true;
                }
                Some("disabled") | None => {}
                _ => return Err("Malformed input request: the provided reasoning config value is invalid, please reformat your input and try again.".into()),
            }
        }
        fields.remove("inferenceConfig");
    } else if style == Some(ReasoningStyle::Field) {
        let effort = match fields.remove("reasoning_effort") {
            None => "medium".to_string(),
            Some(Value::String(e)) if ["low", "medium", "high"].contains(&e.as_str()) => e,
            Some(other) => {
                return Err(format!(
                    "Malformed input request: reasoning_effort: {other} is not one of low, medium, high, please reformat your input and try again."
                ));
            }
        };
        out.reasoning = effort_tokens(&effort);
    } else if style == Some(ReasoningStyle::Always) {
        out.reasoning = effort_tokens("medium");
    } else if style == Some(ReasoningStyle::OpenAi)
        && let Some(r) = fields.remove("reasoning")
    {
        match r.get("effort").and_then(Value::as_str) {
            Some("none") => {}
            Some(e) if ["minimal", "low", "medium", "high", "xhigh", "max"].contains(&e) => {
                out.reasoning = effort_tokens(if e == "minimal" { "low" } else { e });
            }
            _ => {
                return Err(format!(
                    "Malformed input request: reasoning.effort: {} is not one of none, minimal, low, medium, high, xhigh, max, please reformat your input and try again.",
                    r.get("effort").unwrap_or(&Value::Null)
                ));
            }
        }
    }
    if style != Some(ReasoningStyle::Nova) && fields.contains_key("reasoningConfig") {
        return Err("Malformed input request: the provided reasoning config value is invalid, please reformat your input and try again.".into());
    }
    out.signed = anthropic && out.reasoning.is_some();
    if let Some((key, _)) = fields.iter().next() {
        return Err(if anthropic {
            model_error(format!("{key}: Extra inputs are not permitted"))
        } else {
            format!(
                "Malformed input request: extraneous key [{key}] is not permitted, please reformat your input and try again."
            )
        });
    }
    if (x.search_results || x.citable.is_some()) && !anthropic {
        let key = if x.search_results {
            "searchResult"
        } else {
            "citations"
        };
        return Err(format!(
            "Malformed input request: extraneous key [{key}] is not permitted, please reformat your input and try again."
        ));
    }
    out.citation = x.citable.clone();
    if (x.schema.is_some() || x.strict_tools) && !model.structured_output {
        return Err(model_error(
            "output_config.format: Extra inputs are not permitted",
        ));
    }
    out.schema = x.schema.clone();
    if !x.response_paths.is_empty() {
        let native = json!({ "stop_sequence": null, "id": "msg_emulated", "model": model.id });
        let mut found = Map::new();
        for p in &x.response_paths {
            if let Some(v) = native.pointer(p) {
                found.insert(p.trim_start_matches('/').replace('/', "."), v.clone());
            }
        }
        out.response_fields = Some(Value::Object(found));
    }
    Ok(out)
}

/// A value conforming to `schema`, built from its types (strings from `seed`'s words); past
/// 32 levels of nesting, `null` (the request's schema is untrusted: its depth and `minItems`
/// are bounded here).
pub(crate) fn conforming(schema: &Value, seed: u64) -> Value {
    conforming_at(schema, seed, 0)
}

fn conforming_at(schema: &Value, seed: u64, depth: u32) -> Value {
    if depth > 32 {
        return Value::Null;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options.first().cloned().unwrap_or(Value::Null);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find_map(Value::as_str).unwrap_or("null"),
        Some(Value::String(k)) => k.as_str(),
        _ => "object",
    };
    match kind {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for (k, p) in props.into_iter().flatten() {
                out.insert(
                    k.clone(),
                    conforming_at(p, seed.rotate_left(7) ^ k.len() as u64, depth + 1),
                );
            }
            Value::Object(out)
        }
        "array" => {
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            let n = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            (0..n.min(16))
                .map(|i| conforming_at(&item, seed ^ i, depth + 1))
                .collect()
        }
        "string" => Value::String(crate::text::tokens(seed, 2).concat()),
        "integer" => json!(seed % 100),
        "number" => json!((seed % 1000) as f64 / 10.0),
        "boolean" => json!(seed.is_multiple_of(2)),
        _ => Value::Null,
    }
}
