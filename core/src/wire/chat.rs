//! Chat Completions (`POST …/chat/completions`) pieces shared by the OpenAI backend, the
//! SageMaker OpenAI-compatible payload and the `openai` drop-in: a conversation's messages,
//! function tools, the tool choice, an assistant message's tool calls, and usage.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::types::{
    ContentBlock, Error, GenerateResponse, Image, ImageFormat, Message, Result, Role, ServiceTier,
    Tool, ToolChoice, ToolResultContent, ToolSpec, Usage,
};

/// What a sender of Chat Completions does with the blocks the protocol carries only in part:
/// each endpoint refuses what it cannot send in its own words.
pub(crate) struct Senders<'a> {
    /// A user's image as an `image_url` URL (a data URL), or its refusal; `at` is its path.
    pub(crate) image: &'a dyn Fn(&Image, &str) -> Result<String>,
    /// A tool result's content as the `tool` message's text, or its refusal.
    pub(crate) tool_result: &'a dyn Fn(&[ToolResultContent], &str) -> Result<String>,
    /// A block the protocol has no place for, refused by name.
    pub(crate) unsupported: &'a dyn Fn(&ContentBlock, &str) -> Error,
}

/// A conversation as Chat Completions messages: the system text first, each turn's text (a
/// string, or parts when it holds images), its tool calls, and each tool result as a `tool`
/// message. Reasoning does not go back (the protocol takes none) and checkpoints have no
/// place (the service caches prefixes itself); any other block is refused, never dropped.
pub(crate) fn messages(
    system: &str,
    conversation: &[Message],
    senders: &Senders<'_>,
) -> Result<Vec<Value>> {
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for (i, m) in conversation.iter().enumerate() {
        let mut parts: Vec<Value> = Vec::new();
        let mut text_only = true;
        let mut tool_calls = Vec::new();
        for (j, b) in m.content.iter().enumerate() {
            let at = || format!("messages[{i}].content[{j}]");
            match b {
                ContentBlock::Text(t) => parts.push(json!({ "type": "text", "text": t })),
                ContentBlock::Citations(c) => {
                    parts.push(json!({ "type": "text", "text": c.content.concat() }))
                }
                ContentBlock::Image(image) if m.role == Role::User => {
                    text_only = false;
                    parts.push(json!({
                        "type": "image_url",
                        "image_url": { "url": (senders.image)(image, &at())? },
                    }));
                }
                ContentBlock::ToolUse(t) => tool_calls.push(tool_call(&t.id, &t.name, &t.input)),
                ContentBlock::ToolResult(r) => messages.push(json!({
                    "role": "tool", "tool_call_id": r.tool_use_id,
                    "content": (senders.tool_result)(&r.content, &at())?,
                })),
                ContentBlock::Reasoning(_) | ContentBlock::CachePoint(_) => {}
                other => return Err((senders.unsupported)(other, &at())),
            }
        }
        if parts.is_empty() && tool_calls.is_empty() {
            continue;
        }
        let content = if text_only {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            json!(texts.concat())
        } else {
            Value::Array(parts)
        };
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut message = json!({ "role": role, "content": content });
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        messages.push(message);
    }
    Ok(messages)
}

/// The function tools of a request, as Chat Completions lists them (checkpoints have no
/// place there and are left out).
pub(crate) fn tools(tools: &[Tool]) -> Vec<Value> {
    tools
        .iter()
        .filter_map(|t| match t {
            Tool::Spec(s) => Some(json!({ "type": "function", "function": FunctionDef::of(s) })),
            Tool::CachePoint(_) => None,
        })
        .collect()
}

/// A request's `tools` read back as the core's tools; anything but a named function tool is
/// refused by its path.
pub(crate) fn read_tools(v: Option<&Value>) -> Result<Vec<Tool>> {
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
            // Read leniently, as the API does: a description that is not text, or a
            // `strict` that is not a boolean, means none.
            let f = t.get("function").unwrap_or(&Value::Null);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| Error::invalid(format!("tools[{i}].function.name"), "required"))?;
            let def = FunctionDef {
                name: name.to_string(),
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                parameters: f.get("parameters").cloned(),
                strict: f.get("strict").and_then(Value::as_bool).unwrap_or(false),
            };
            Ok(Tool::Spec(def.into_spec()))
        })
        .collect()
}

/// A function tool's definition.
#[derive(Debug, Default, Serialize)]
struct FunctionDef {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

impl FunctionDef {
    fn of(s: &ToolSpec) -> Self {
        Self {
            name: s.name.clone(),
            description: s.description.clone(),
            parameters: Some(s.input_schema.clone()),
            strict: s.strict,
        }
    }

    fn into_spec(self) -> ToolSpec {
        ToolSpec {
            name: self.name,
            description: self.description,
            input_schema: self
                .parameters
                .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
            strict: self.strict,
        }
    }
}

/// The tool choice as Chat Completions spells it (`auto`, `required`, or a named function).
pub(crate) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Any => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

/// A request's `tool_choice` read back; `none` is no choice (the call goes without tools'
/// use being asked for).
pub(crate) fn read_tool_choice(v: Option<&Value>) -> Result<Option<ToolChoice>> {
    read_tool_choice_at(
        v,
        "/function/name",
        "{ type: \"function\", function: { name } }",
    )
}

/// A `tool_choice` in the OpenAI APIs' words (`auto`, `required`, `none`), or a function
/// whose name is at `name_at` (Chat Completions nests it, Responses does not); `shape` is
/// the object's, said when it is not one.
pub(crate) fn read_tool_choice_at(
    v: Option<&Value>,
    name_at: &str,
    shape: &str,
) -> Result<Option<ToolChoice>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => Ok(Some(ToolChoice::Auto)),
            "required" => Ok(Some(ToolChoice::Any)),
            "none" => Ok(None),
            other => Err(Error::invalid(
                "tool_choice",
                format!("{other:?}: one of auto, required, none, or a function"),
            )),
        },
        Some(o) => match o.pointer(name_at).and_then(Value::as_str) {
            Some(name) => Ok(Some(ToolChoice::Tool(name.to_string()))),
            None => Err(Error::invalid("tool_choice", shape)),
        },
    }
}

/// One of an assistant message's `tool_calls`: the input as JSON text, as the API carries it.
pub(crate) fn tool_call(id: &str, name: &str, input: &Value) -> Value {
    json!({
        "id": id, "type": "function",
        "function": { "name": name, "arguments": input.to_string() },
    })
}

/// An image part's URL read as the image: a `data:` URL (Bedrock takes bytes, not links);
/// `at` is the URL's path, named when it is refused.
pub(crate) fn read_image_url(url: &str, at: &str) -> Result<ContentBlock> {
    let refuse = |why: &str| Error::invalid(at, why.to_string());
    let rest = url.strip_prefix("data:").ok_or_else(|| {
        refuse("a data: URL (Bedrock's models take the image's bytes, not a link)")
    })?;
    let (mime, data) = rest
        .split_once(";base64,")
        .ok_or_else(|| refuse("a base64 data: URL"))?;
    let format = match mime {
        "image/png" => ImageFormat::Png,
        "image/jpeg" | "image/jpg" => ImageFormat::Jpeg,
        "image/gif" => ImageFormat::Gif,
        "image/webp" => ImageFormat::Webp,
        _ => return Err(refuse("png, jpeg, gif or webp")),
    };
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
        .map_err(|e| refuse(&format!("not base64: {e}")))?;
    Ok(ContentBlock::Image(Image::inline(format, bytes)))
}

/// The OpenAI word for the tier an answer was served on (asked for, when the service did not
/// say), `default` for standard.
pub(crate) fn served_tier_word(r: &GenerateResponse) -> &'static str {
    r.decision
        .served_tier
        .or(r.decision.tier)
        .and_then(ServiceTier::openai_name)
        .unwrap_or("default")
}

/// Chat Completions' usage: `prompt_tokens` counts cached ones too, `completion_tokens`
/// counts reasoning.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChatUsage {
    /// Every input token, cached or not.
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    /// Every output token, reasoning included.
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    /// Their sum (written; not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_tokens: Option<u64>,
    /// `cached_tokens`: input read from the prompt cache.
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
    /// `reasoning_tokens`: output spent reasoning.
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PromptDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompletionDetails {
    /// Output tokens spent reasoning.
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl ChatUsage {
    /// The core's usage as Chat Completions counts it (cache writes are input it has no
    /// word for: they count in `prompt_tokens`).
    pub(crate) fn of(u: &Usage) -> Self {
        let prompt = u64::from(u.total_input_tokens());
        let completion = u64::from(u.output_tokens);
        Self {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: Some(prompt + completion),
            prompt_tokens_details: Some(PromptDetails {
                cached_tokens: Some(u64::from(u.cache_read_tokens)),
            }),
            completion_tokens_details: Some(CompletionDetails {
                reasoning_tokens: Some(u64::from(u.reasoning_tokens)),
            }),
        }
    }

    /// The usage an answer reports, as the core's (missing counts are 0).
    pub(crate) fn into_usage(self) -> Usage {
        let n = |v: Option<u64>| v.map_or(0, crate::types::units::token_count);
        let cached = n(self.prompt_tokens_details.and_then(|d| d.cached_tokens));
        Usage {
            input_tokens: n(self.prompt_tokens).saturating_sub(cached),
            output_tokens: n(self.completion_tokens),
            cache_read_tokens: cached,
            reasoning_tokens: n(self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)),
            ..Usage::default()
        }
    }

    /// An answer's `usage` object, if it is one.
    pub(crate) fn read(v: Option<&Value>) -> Option<Self> {
        v.filter(|u| !u.is_null())
            .and_then(|u| Self::deserialize(u).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec() -> impl Strategy<Value = ToolSpec> {
        (
            "[a-z_]{1,12}",
            proptest::option::of("[ -~]{0,30}"),
            any::<bool>(),
            proptest::collection::btree_map("[a-z]{1,6}", "[a-z]{1,6}", 0..4),
        )
            .prop_map(|(name, description, strict, props)| ToolSpec {
                name,
                description,
                input_schema: json!({ "type": "object", "properties": props.into_iter()
                    .map(|(k, t)| (k, json!({ "type": "string", "description": t })))
                    .collect::<serde_json::Map<_, _>>() }),
                strict,
            })
    }

    fn choice() -> impl Strategy<Value = ToolChoice> {
        prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::Any),
            "[a-z_]{1,12}".prop_map(ToolChoice::Tool),
        ]
    }

    proptest! {
        /// What a backend writes, a drop-in reads back as it was (checkpoints have no place on
        /// this wire, and are not written).
        #[test]
        fn tools_and_the_choice_read_back_as_written(specs in proptest::collection::vec(spec(), 0..5), c in choice()) {
            let core: Vec<Tool> = specs.into_iter().map(Tool::Spec).collect();
            let written = Value::Array(tools(&core));
            prop_assert_eq!(read_tools(Some(&written)).unwrap(), core);
            prop_assert_eq!(read_tool_choice(Some(&tool_choice(&c))).unwrap(), Some(c));
        }

        /// Usage written by a drop-in reads back as the same counts (cache writes, which
        /// Chat Completions has no word for, count as input).
        #[test]
        fn usage_reads_back_as_written(input in 0u32..1_000_000, cached in 0u32..1_000_000, output in 0u32..1_000_000, reasoning in 0u32..1_000) {
            let u = Usage { input_tokens: input, cache_read_tokens: cached, output_tokens: output, reasoning_tokens: reasoning.min(output), ..Usage::default() };
            let wire = serde_json::to_value(ChatUsage::of(&u)).unwrap();
            prop_assert_eq!(ChatUsage::read(Some(&wire)).unwrap().into_usage(), u);
        }
    }

    #[test]
    fn a_tool_that_is_not_a_named_function_is_refused_by_its_path() {
        let e = read_tools(Some(
            &json!([{ "type": "function", "function": { "name": "" } }]),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("tools[0].function.name"), "{e}");
        let e = read_tools(Some(&json!([{ "type": "web_search" }]))).unwrap_err();
        assert!(e.to_string().contains("tools[0].type"), "{e}");
        // Read leniently, as before: a null strict or a description that is not text is none.
        let lenient = json!([{ "type": "function", "function": { "name": "f", "strict": null, "description": 3 } }]);
        assert!(
            matches!(&read_tools(Some(&lenient)).unwrap()[..], [Tool::Spec(s)] if !s.strict && s.description.is_none())
        );
    }
}
