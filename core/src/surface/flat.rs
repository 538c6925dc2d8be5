//! The flat request form the bindings take: a prompt and options (Python keyword arguments,
//! a JavaScript options object), read here once so that both bindings only pass the caller's
//! object through.
//!
//! Keys are snake_case for Python ([`Casing::Snake`]) and camelCase for JavaScript
//! ([`Casing::Camel`]); [`KEYS`] lists them. Shorthands, each also accepted in the core's own
//! shape:
//!
//! | key | shorthand | core shape |
//! |---|---|---|
//! | `prompt` | a user message's text, after `messages` | — |
//! | `messages` | `{ role, text }` | `{ role, content: [blocks] }` |
//! | `model` / `family` | a name | `model: { model }` / `{ family }` |
//! | `system` | a string | a list of blocks |
//! | `tools` | `{ name, description, input_schema, strict }` | `{ spec }` / `{ cache_point }` |
//! | `tool_choice` | `"auto"`, `"any"` or a tool's name | `{ tool: name }` |
//! | `max_tokens`, `temperature`, `top_p`, `stop_sequences` | — | `inference: {...}` |
//! | `slo`, `ttft_target_ms`, `deadline_ms` | a class name | `slo: { class, ttft_target, deadline }` |
//! | `residency` | a geography's name, or a list of regions | `{ geography }` / `{ regions }` |
//! | `reasoning` | an effort word | `{ effort, budget_tokens }` |
//! | `output_schema` | a JSON schema | `output_format: { json_schema: { schema } }` |
//!
//! A request whose `model` is an object, or that has an `inference` object, is taken whole in
//! the core's shape (the serde form of [`GenerateRequest`]). An unknown key, or a key of the other casing, is an
//! [`Error::InvalidRequest`] naming it and the known ones.
//!
//! ```
//! use laneway::surface::flat::{self, Casing};
//! let python = serde_json::json!({ "prompt": "Hi", "family": "nova", "max_tokens": 64, "slo": "interactive" });
//! let node = serde_json::json!({ "prompt": "Hi", "family": "nova", "maxTokens": 64, "slo": "interactive" });
//! let a = flat::request(python, Casing::Snake).unwrap();
//! assert_eq!(a, flat::request(node, Casing::Camel).unwrap());
//! assert_eq!(a.inference.max_tokens, Some(64));
//! let e = flat::request(serde_json::json!({ "prompt": "Hi", "maxTokens": 64 }), Casing::Snake).unwrap_err();
//! assert!(e.to_string().contains("maxTokens: not a request option"));
//! ```

use serde_json::{Map, Value, json};

use crate::types::{Error, GenerateRequest, Result};

/// How a binding spells the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Casing {
    /// Python: `max_tokens`.
    Snake,
    /// JavaScript: `maxTokens`.
    Camel,
}

/// Every key of the flat form, as (snake_case, camelCase).
pub const KEYS: &[(&str, &str)] = &[
    ("prompt", "prompt"),
    ("messages", "messages"),
    ("model", "model"),
    ("family", "family"),
    ("system", "system"),
    ("tools", "tools"),
    ("tool_choice", "toolChoice"),
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("stop_sequences", "stopSequences"),
    ("slo", "slo"),
    ("ttft_target_ms", "ttftTargetMs"),
    ("deadline_ms", "deadlineMs"),
    ("task_id", "taskId"),
    ("tier", "tier"),
    ("residency", "residency"),
    ("min_variant", "minVariant"),
    ("cache", "cache"),
    ("continue_on_interrupt", "continueOnInterrupt"),
    ("reasoning", "reasoning"),
    ("output_schema", "outputSchema"),
    ("metadata", "metadata"),
    ("guardrail", "guardrail"),
    ("model_fields", "modelFields"),
];

/// Keys of nested options, as (snake_case, camelCase).
const NESTED: &[(&str, &str)] = &[
    ("budget_tokens", "budgetTokens"),
    ("stream_mode", "streamMode"),
    ("input_schema", "inputSchema"),
    ("response_paths", "responsePaths"),
];

impl Casing {
    fn name(self, (snake, camel): (&'static str, &'static str)) -> &'static str {
        match self {
            Casing::Snake => snake,
            Casing::Camel => camel,
        }
    }

    /// The snake_case name of a key spelt in this casing, if it is one of `table`'s.
    fn canonical(self, key: &str, table: &[(&'static str, &'static str)]) -> Option<&'static str> {
        table
            .iter()
            .find(|&&pair| self.name(pair) == key)
            .map(|(snake, _)| *snake)
    }

    /// The known keys in this casing, for an error message.
    pub fn known_keys(self) -> Vec<&'static str> {
        KEYS.iter().map(|&pair| self.name(pair)).collect()
    }
}

/// A flat request (or one in the core's shape) as a core request.
pub fn request(value: Value, casing: Casing) -> Result<GenerateRequest> {
    let Value::Object(flat) = value else {
        return Err(Error::invalid(
            "request",
            "a request is an object of options (or a prompt with options)",
        ));
    };
    if flat.get("model").is_some_and(Value::is_object) || flat.contains_key("inference") {
        return core(Value::Object(flat));
    }
    let mut options = Map::new();
    for (key, value) in flat {
        let Some(name) = casing.canonical(&key, KEYS) else {
            return Err(Error::invalid(
                key.as_str(),
                format!(
                    "not a request option (known: {})",
                    casing.known_keys().join(", ")
                ),
            ));
        };
        // A missing option and one given as null/None are the same.
        if !value.is_null() {
            options.insert(name.to_string(), value);
        }
    }
    core(Value::Object(shape(options, casing)?))
}

fn core(value: Value) -> Result<GenerateRequest> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        Error::invalid(
            if path == "." { "request".into() } else { path },
            e.into_inner().to_string(),
        )
    })
}

/// The options (keys already snake_case) in the core's shape.
fn shape(mut o: Map<String, Value>, casing: Casing) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    let mut messages = match o.remove("messages") {
        None => Vec::new(),
        Some(Value::Array(list)) => list.into_iter().map(message).collect(),
        Some(_) => return Err(Error::invalid("messages", "a list of messages")),
    };
    if let Some(prompt) = o.remove("prompt") {
        messages.push(json!({ "role": "user", "content": [{ "text": prompt }] }));
    }
    out.insert("messages".into(), Value::Array(messages));
    match (o.remove("model"), o.remove("family")) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "model",
                "give a model or a family, not both",
            ));
        }
        (Some(m), None) => {
            out.insert("model".into(), json!({ "model": m }));
        }
        (None, Some(f)) => {
            out.insert("model".into(), json!({ "family": f }));
        }
        (None, None) => {}
    }
    if let Some(system) = o.remove("system") {
        let blocks = match system {
            Value::String(text) => json!([{ "text": text }]),
            other => other,
        };
        out.insert("system".into(), blocks);
    }
    if let Some(tools) = o.remove("tools") {
        let Value::Array(tools) = tools else {
            return Err(Error::invalid("tools", "a list of tools"));
        };
        let tools = tools
            .into_iter()
            .map(|t| tool(t, casing))
            .collect::<Vec<_>>();
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = o.remove("tool_choice") {
        let choice = match choice {
            Value::String(s) if s == "auto" || s == "any" => Value::String(s),
            Value::String(name) => json!({ "tool": name }),
            other => other,
        };
        out.insert("tool_choice".into(), choice);
    }
    let mut inference = Map::new();
    for key in ["max_tokens", "temperature", "top_p", "stop_sequences"] {
        if let Some(v) = o.remove(key) {
            inference.insert(key.into(), v);
        }
    }
    if !inference.is_empty() {
        out.insert("inference".into(), Value::Object(inference));
    }
    let mut slo = match o.remove("slo") {
        None => Map::new(),
        Some(Value::String(class)) => Map::from_iter([("class".to_string(), Value::String(class))]),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(Error::invalid(
                "slo",
                "a class name (interactive, standard, background, batch) or an object",
            ));
        }
    };
    for (flat, core) in [
        ("ttft_target_ms", "ttft_target"),
        ("deadline_ms", "deadline"),
    ] {
        if let Some(v) = o.remove(flat) {
            slo.insert(core.into(), v);
        }
    }
    if !slo.is_empty() {
        out.insert("slo".into(), Value::Object(slo));
    }
    if let Some(residency) = o.remove("residency") {
        let residency = match residency {
            Value::String(geography) => json!({ "geography": geography }),
            Value::Array(regions) => json!({ "regions": regions }),
            other => other,
        };
        out.insert("residency".into(), residency);
    }
    if let Some(reasoning) = o.remove("reasoning") {
        let reasoning = match reasoning {
            Value::String(effort) => json!({ "effort": effort }),
            other => nested(other, casing),
        };
        out.insert("reasoning".into(), reasoning);
    }
    if let Some(schema) = o.remove("output_schema") {
        out.insert(
            "output_format".into(),
            json!({ "json_schema": { "schema": schema } }),
        );
    }
    for key in ["guardrail", "model_fields"] {
        if let Some(v) = o.remove(key) {
            out.insert(key.into(), nested(v, casing));
        }
    }
    // The rest have the core's names and shapes already.
    out.extend(o);
    Ok(out)
}

/// A message as `{ role, text }` in the core's shape; any other form as it is.
fn message(m: Value) -> Value {
    match m {
        Value::Object(mut m) if !m.contains_key("content") && m.contains_key("text") => {
            let text = m.remove("text").unwrap_or_default();
            m.insert("content".into(), json!([{ "text": text }]));
            Value::Object(m)
        }
        other => other,
    }
}

/// A tool as `{ name, description, input_schema, strict }` in the core's shape (`{ spec }`);
/// the core's own forms as they are.
fn tool(t: Value, casing: Casing) -> Value {
    match t {
        Value::Object(m) if !m.contains_key("spec") && !m.contains_key("cache_point") => {
            json!({ "spec": nested(Value::Object(m), casing) })
        }
        other => other,
    }
}

/// An object with its nested option keys in snake_case (`budgetTokens` → `budget_tokens`).
fn nested(v: Value, casing: Casing) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| match casing.canonical(&k, NESTED) {
                    Some(snake) => (snake.to_string(), v),
                    None => (k, v),
                })
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ModelRef, Residency, ToolChoice};

    #[test]
    fn both_casings_read_every_option_alike() {
        let schema = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
        let snake = json!({
            "prompt": "Hi", "messages": [{ "role": "user", "text": "before" }, { "role": "assistant", "text": "ok" }],
            "model": "amazon.nova-lite-v1:0", "system": "Be brief.",
            "tools": [{ "name": "weather", "description": "Weather", "input_schema": schema }],
            "tool_choice": "weather", "max_tokens": 64, "temperature": 0.5, "top_p": 0.9,
            "stop_sequences": ["END"], "slo": "interactive", "ttft_target_ms": 800, "deadline_ms": 5000,
            "task_id": "t1", "tier": "priority", "residency": "eu", "cache": "off",
            "continue_on_interrupt": true, "reasoning": { "budget_tokens": 2048 },
            "output_schema": schema, "metadata": { "team": "a" },
            "guardrail": { "identifier": "g1", "version": "1", "stream_mode": "async" },
            "model_fields": { "model": "amazon.nova-lite-v1:0", "request": { "x": 1 }, "response_paths": ["/y"] },
        });
        let camel = json!({
            "prompt": "Hi", "messages": [{ "role": "user", "text": "before" }, { "role": "assistant", "text": "ok" }],
            "model": "amazon.nova-lite-v1:0", "system": "Be brief.",
            "tools": [{ "name": "weather", "description": "Weather", "inputSchema": schema }],
            "toolChoice": "weather", "maxTokens": 64, "temperature": 0.5, "topP": 0.9,
            "stopSequences": ["END"], "slo": "interactive", "ttftTargetMs": 800, "deadlineMs": 5000,
            "taskId": "t1", "tier": "priority", "residency": "eu", "cache": "off",
            "continueOnInterrupt": true, "reasoning": { "budgetTokens": 2048 },
            "outputSchema": schema, "metadata": { "team": "a" },
            "guardrail": { "identifier": "g1", "version": "1", "streamMode": "async" },
            "modelFields": { "model": "amazon.nova-lite-v1:0", "request": { "x": 1 }, "responsePaths": ["/y"] },
        });
        let a = request(snake, Casing::Snake).unwrap();
        assert_eq!(a, request(camel, Casing::Camel).unwrap());
        assert_eq!(a.messages.len(), 3);
        assert_eq!(a.model, ModelRef::Model("amazon.nova-lite-v1:0".into()));
        assert_eq!(a.tool_choice, Some(ToolChoice::Tool("weather".into())));
        assert!(matches!(a.residency, Some(Residency::Geography(ref g)) if g.as_str() == "eu"));
        assert_eq!(a.reasoning.unwrap().budget_tokens, Some(2048));
        assert!(a.output_format.is_some() && a.guardrail.is_some() && a.model_fields.is_some());
        assert_eq!(a.slo.deadline, Some(std::time::Duration::from_secs(5)));
    }

    #[test]
    fn the_core_shape_passes_whole_and_errors_name_the_key() {
        let core_shape = json!({
            "model": { "family": "nova" },
            "messages": [{ "role": "user", "content": [{ "text": "Hi" }] }],
            "inference": { "max_tokens": 10 }, "task_id": "x",
        });
        let r = request(core_shape, Casing::Camel).unwrap();
        assert_eq!(r.inference.max_tokens, Some(10));
        let no_model = json!({
            "messages": [{ "role": "user", "content": [{ "text": "Hi" }] }],
            "inference": { "max_tokens": 10 }, "tool_choice": "auto",
        });
        assert_eq!(
            request(no_model, Casing::Camel).unwrap().model,
            ModelRef::Default
        );
        let e = request(
            json!({ "prompt": "x", "model": "a", "family": "b" }),
            Casing::Snake,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("model: give a model or a family"), "{e}");
        let e = request(json!({ "prompt": "x", "max_tokens": 10 }), Casing::Camel)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("max_tokens: not a request option") && e.contains("maxTokens"),
            "{e}"
        );
        let e = request(json!({ "prompt": "x", "slo": "urgent" }), Casing::Snake)
            .unwrap_err()
            .to_string();
        assert!(e.contains("slo.class") && e.contains("urgent"), "{e}");
        let e = request(json!({ "prompt": "x", "residency": "MARS" }), Casing::Snake)
            .unwrap_err()
            .to_string();
        assert!(e.contains("residency") && e.contains("lowercase"), "{e}");
        let e = request(json!("hi"), Casing::Snake).unwrap_err().to_string();
        assert!(e.contains("request"), "{e}");
        // None is a missing option.
        let r = request(
            json!({ "prompt": "x", "model": null, "max_tokens": null }),
            Casing::Snake,
        )
        .unwrap();
        assert_eq!(r.model, ModelRef::Default);
    }
}
