//! The `openai` SDKs' request and response shapes, for apps written against them: a
//! `chat.completions.create(...)` or `responses.create(...)` body read into a core request, and
//! the answer written back as a `chat.completion` (or its `chat.completion.chunk`s) or a
//! `response` (or its typed events), with Laneway's decision, timings and cost beside it under
//! `laneway`. The bindings' `openai`-shaped clients only pass bodies and events through
//! [`Call`].
//!
//! Laneway's own options go in a `laneway` object of the body (the SDKs' `extra_body`): the
//! flat form's keys ([`super::flat::KEYS`]: `slo`, `family`, `task_id`,
//! `residency`, ...). A field Laneway does not honour is either refused by name (`n` above 1,
//! audio output) or carried on with the call and said in its decision
//! ([`crate::Reason::FieldNotHonoured`]): never dropped silently.

mod call;
pub mod chat;
mod client_options;
mod errors;
pub mod responses;
mod stream;

pub use call::{Api, Call, Encoder, Reply};
pub use client_options::{OpenAiSdk, TIMEOUT_KEY, not_used};
pub use errors::{SdkError, is_bedrock_api_key, sdk_error};
pub use stream::ShapedStream;

use serde_json::{Map, Value, json};

use crate::surface::flat::{self, Casing};
use crate::types::{Error, GenerateRequest, GenerateResponse, Reason, Result};

/// Fields of a body that the call goes without, each with why.
pub type Unhonoured = Vec<(String, String)>;

/// Says in `r`'s decision which fields the call went without.
pub fn note_unhonoured(r: &mut GenerateResponse, unhonoured: &Unhonoured) {
    for (field, why) in unhonoured {
        r.decision.reasons.push(Reason::FieldNotHonoured {
            field: field.clone(),
            why: why.clone(),
        });
    }
}

/// What Laneway adds beside the SDK's shape: the decision, timings, cost and cache savings.
pub fn laneway_extras(r: &GenerateResponse) -> Value {
    json!({
        "decision": r.decision,
        "timings": r.timings,
        "cost_usd": r.cost_usd,
        "cache_savings_usd": r.cache_savings_usd,
    })
}

/// What one API's body takes: the fields read, those carried without effect (and why), those
/// refused (and why).
pub(crate) struct Fields {
    /// The API's name, for errors.
    pub api: &'static str,
    pub read: &'static [&'static str],
    pub not_honoured: &'static [(&'static str, &'static str)],
    pub refused: &'static [(&'static str, &'static str)],
}

/// The `openai` clients' per-request options that a facade passes in the body under their own
/// names, since Laneway does not send them: each is said, not dropped.
const CLIENT_OPTIONS: &[(&str, &str)] = &[
    (
        "extra_headers",
        "Laneway signs its own requests and sends no caller headers",
    ),
    ("extra_query", "Laneway sends no caller query parameters"),
];

/// What both APIs read alike from a body: the model asked for, Laneway's options in the flat
/// form's keys (with the model, `temperature`, `top_p`, `metadata`), and the fields the call
/// goes without.
pub(crate) struct Started {
    pub model: String,
    pub options: Map<String, Value>,
    pub unhonoured: Unhonoured,
}

/// Checks a body against `fields` (a refused field, or one not known, is an error naming it)
/// and reads what both APIs share.
pub(crate) fn start(body: &mut Map<String, Value>, fields: &Fields) -> Result<Started> {
    let set = |v: &Value| !v.is_null() && v != &Value::Bool(false);
    for (field, why) in fields.refused {
        if body.get(*field).is_some_and(set) {
            return Err(Error::invalid(*field, *why));
        }
    }
    let timeout = body.remove(TIMEOUT_KEY);
    let mut unhonoured = Unhonoured::new();
    for (option, why) in CLIENT_OPTIONS {
        if body.remove(*option).is_some_and(|v| set(&v)) {
            unhonoured.push((option.to_string(), why.to_string()));
        }
    }
    for (key, value) in body.iter() {
        let known =
            fields.read.contains(&key.as_str()) || fields.refused.iter().any(|(f, _)| f == key);
        if value.is_null() || known {
            continue;
        }
        match fields.not_honoured.iter().find(|(f, _)| f == key) {
            Some((f, why)) => unhonoured.push((f.to_string(), why.to_string())),
            None => {
                return Err(Error::invalid(
                    key.as_str(),
                    format!(
                        "not a {} field Laneway knows (Laneway's own options go under `laneway`)",
                        fields.api
                    ),
                ));
            }
        }
    }
    let model = match body.remove("model") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err(Error::invalid(
                "model",
                "a model or family name is required",
            ));
        }
    };
    // Laneway's options, read as the flat form reads them (so they are checked by name).
    let mut options = match body.remove("laneway") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Error::invalid("laneway", "an object of Laneway's options")),
    };
    // The SDK's timeout is the call's deadline, unless Laneway's own options set one.
    match timeout {
        None | Some(Value::Null) => {}
        Some(Value::Number(ms)) => {
            let ms = ms
                .as_f64()
                .ok_or_else(|| "not a number of milliseconds".to_string())
                .and_then(crate::types::units::duration_from_millis)
                .map_err(|why| Error::invalid("timeout", format!("the call's deadline: {why}")))?;
            options
                .entry("deadline_ms")
                .or_insert_with(|| Value::from((ms.as_secs_f64() * 1000.0).round() as u64));
        }
        Some(_) => {
            return Err(Error::invalid(
                "timeout",
                "a duration of at least zero (the call's deadline)",
            ));
        }
    }
    for owned in [
        "messages",
        "prompt",
        "system",
        "tools",
        "tool_choice",
        "model",
    ] {
        if options.contains_key(owned) {
            return Err(Error::invalid(
                format!("laneway.{owned}"),
                format!("give it in the {} body itself", fields.api),
            ));
        }
    }
    if !options.contains_key("family") {
        options.insert("model".into(), Value::String(model.clone()));
    }
    for key in ["temperature", "top_p", "metadata"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            options.insert(key.into(), v.clone());
        }
    }
    Ok(Started {
        model,
        options,
        unhonoured,
    })
}

/// Reads an effort word (`field` names it) into the options; `none` is said, not sent.
pub(crate) fn effort_option(
    word: &str,
    field: &str,
    options: &mut Map<String, Value>,
    unhonoured: &mut Unhonoured,
) -> Result<()> {
    match chat::reasoning_effort(word)? {
        Some(e) => {
            options.insert("reasoning".into(), json!(e));
        }
        None => unhonoured.push((
            field.into(),
            "\"none\": the request asks for no reasoning (a model that always reasons still does)"
                .into(),
        )),
    }
    Ok(())
}

/// Reads an output format (`field` names it; `schema` is its JSON schema, at `schema_at`, if
/// it has one) into the options: a JSON schema is structured output, `json_object` without
/// one is said.
pub(crate) fn format_option(
    format: &Value,
    field: &str,
    schema: Option<&Value>,
    schema_at: &str,
    options: &mut Map<String, Value>,
    unhonoured: &mut Unhonoured,
) -> Result<()> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => {}
        Some("json_schema") => {
            let schema =
                schema.ok_or_else(|| Error::invalid(schema_at, "a JSON schema is required"))?;
            options.insert("output_schema".into(), schema.clone());
        }
        Some("json_object") => unhonoured.push((
            field.into(),
            "json_object without a schema: give a json_schema for structured output".into(),
        )),
        _ => {
            return Err(Error::invalid(
                format!("{field}.type"),
                "one of text, json_schema, json_object",
            ));
        }
    }
    Ok(())
}

/// The core request of the options (an error in them named under `laneway.`).
pub(crate) fn finish(options: Map<String, Value>) -> Result<GenerateRequest> {
    flat::request(Value::Object(options), Casing::Snake).map_err(|e| match e {
        Error::InvalidRequest { field, reason } => Error::InvalidRequest {
            field: format!("laneway.{field}"),
            reason,
        },
        other => other,
    })
}

/// A fresh id for a streamed answer (its call id is known only at its end): `prefix`, the
/// process, the time and a counter.
fn fresh_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}laneway{:x}{:x}{:06x}",
        std::process::id(),
        now_unix(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Seconds since the epoch, as the SDKs' `created` fields count.
fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
