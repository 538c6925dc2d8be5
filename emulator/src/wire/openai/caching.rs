//! The Responses API's prompt cache (GPT-5.6 and later, on the endpoints a model card names):
//! `prompt_cache_options` (`mode`: `implicit`, the default, or `explicit`; `ttl`: `30m`, the
//! only value) and `prompt_cache_breakpoint: {"mode": "explicit"}` on `input_text`,
//! `input_image` and `input_file` parts. In implicit mode the service adds one breakpoint at
//! the end of the newest message, so an agent loop writes its whole new tail every turn (and
//! reads what the turn before wrote at its own newest message); in explicit mode only the
//! caller's breakpoints are written and matched. A prefix is matched exactly at a breakpoint.
//! `prompt_cache_key` is a routing hint, accepted and not modelled.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::cache::CachePointAt;
use crate::engine::ApiError;
use crate::text;

/// The lifetime every breakpoint is written with.
pub(crate) const TTL: &str = "30m";

/// The parts that take a breakpoint.
const MARKABLE: [&str; 3] = ["input_text", "input_image", "input_file"];

fn invalid(message: String) -> ApiError {
    ApiError::new(400, "invalid_request_error", message)
}

/// Whether the body asks anything of the prompt cache (options or a breakpoint).
pub(super) fn asks(v: &Value) -> bool {
    v.get("prompt_cache_options").is_some()
        || items(v).any(|item| parts(item).any(|p| p.get("prompt_cache_breakpoint").is_some()))
}

fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn parts(item: &Value) -> impl Iterator<Item = &Value> {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The breakpoints of a Responses body, in prompt order, with the implicit one in implicit
/// mode; refused as the service refuses a bad mode, lifetime or placement.
pub(super) fn breakpoints(v: &Value) -> Result<Vec<CachePointAt>, ApiError> {
    let options = v.get("prompt_cache_options");
    let mode = match options.and_then(|o| o.get("mode")) {
        None => "implicit",
        Some(m) => match m.as_str() {
            Some(m @ ("implicit" | "explicit")) => m,
            _ => {
                return Err(invalid(format!(
                    "Invalid value: {m}. Supported values are: 'implicit' and 'explicit'. (prompt_cache_options.mode)"
                )));
            }
        },
    };
    if let Some(ttl) = options.and_then(|o| o.get("ttl"))
        && ttl.as_str() != Some(TTL)
    {
        return Err(invalid(format!(
            "Invalid value: {ttl}. Supported values are: '{TTL}'. (prompt_cache_options.ttl)"
        )));
    }
    let mut hasher = Sha256::new();
    let mut chars = 0usize;
    let mut absorb = |value: &Value, hasher: &mut Sha256| {
        hasher.update(value.to_string().as_bytes());
        chars += text::json_text_chars(value);
        text::estimate_tokens(chars)
    };
    let point = |hasher: &Sha256, tokens: u32, path: String| CachePointAt {
        digest: hasher.clone().finalize().into(),
        tokens_before: tokens,
        ttl: TTL,
        path,
        in_tools: false,
        with_tool_result: false,
        read_only: false,
    };
    if let Some(tools) = v.get("tools") {
        absorb(tools, &mut hasher);
    }
    if let Some(i) = v.get("instructions") {
        absorb(i, &mut hasher);
    }
    let mut points = Vec::new();
    // Where earlier turns' implicit breakpoints were: the end of each message before the newest.
    let mut message_ends = Vec::new();
    let mut newest_message_end = None;
    for (n, item) in items(v).enumerate() {
        let content = item.get("content");
        match content {
            Some(Value::Array(list)) => {
                let mut tokens = 0;
                for (k, p) in list.iter().enumerate() {
                    let mut part = p.clone();
                    let marked = part
                        .as_object_mut()
                        .and_then(|o| o.remove("prompt_cache_breakpoint"));
                    tokens = absorb(&part, &mut hasher);
                    if let Some(b) = marked {
                        let kind = p.get("type").and_then(Value::as_str).unwrap_or_default();
                        if !MARKABLE.contains(&kind) {
                            return Err(invalid(format!(
                                "prompt_cache_breakpoint is not supported on '{kind}' content (input[{n}].content[{k}])"
                            )));
                        }
                        if b.get("mode").and_then(Value::as_str) != Some("explicit") {
                            return Err(invalid(format!(
                                "Invalid value: {b}. Supported values are: {{\"mode\": \"explicit\"}}. (input[{n}].content[{k}].prompt_cache_breakpoint)"
                            )));
                        }
                        points.push(point(&hasher, tokens, format!("input/{n}/content/{k}")));
                    }
                }
                if item.get("type").is_none_or(|t| t == "message") {
                    message_ends.extend(newest_message_end.take());
                    newest_message_end = Some((hasher.clone(), tokens, n));
                }
            }
            _ => {
                let tokens = absorb(item, &mut hasher);
                if item.get("type").is_none_or(|t| t == "message") {
                    message_ends.extend(newest_message_end.take());
                    newest_message_end = Some((hasher.clone(), tokens, n));
                }
            }
        }
    }
    if mode == "implicit"
        && let Some((at, tokens, n)) = newest_message_end
    {
        let implicit = point(&at, tokens, format!("input/{n}"));
        if !points.iter().any(|p| p.digest == implicit.digest) {
            points.push(implicit);
        }
        // Implicit mode writes its own breakpoint and the latest three explicit ones.
        let explicit = points.len() - 1;
        if explicit > 3 {
            points.drain(..explicit - 3);
        }
        // An earlier turn wrote its implicit breakpoint at what is now an earlier message's end.
        for (at, tokens, n) in message_ends {
            let earlier = CachePointAt {
                read_only: true,
                ..point(&at, tokens, format!("input/{n}"))
            };
            if !points.iter().any(|p| p.digest == earlier.digest) {
                points.push(earlier);
            }
        }
        points.sort_by_key(|p| p.tokens_before);
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(mode: Option<&str>, mark_system: bool) -> Value {
        let mut system = json!({ "type": "input_text", "text": "s".repeat(8000) });
        if mark_system {
            system["prompt_cache_breakpoint"] = json!({ "mode": "explicit" });
        }
        let mut v = json!({
            "model": "openai.gpt-6-astra",
            "input": [
                { "role": "developer", "content": [system] },
                { "role": "user", "content": [{ "type": "input_text", "text": "q" }] },
            ],
        });
        if let Some(mode) = mode {
            v["prompt_cache_options"] = json!({ "mode": mode, "ttl": "30m" });
        }
        v
    }

    #[test]
    fn implicit_mode_adds_a_breakpoint_at_the_newest_message_and_explicit_mode_does_not() {
        let implicit = breakpoints(&body(None, true)).unwrap();
        assert_eq!(implicit.len(), 2, "the caller's and the implicit one");
        assert!(implicit[1].tokens_before > implicit[0].tokens_before);
        let explicit = breakpoints(&body(Some("explicit"), true)).unwrap();
        assert_eq!(explicit.len(), 1);
        assert_eq!(explicit[0].digest, implicit[0].digest);
        assert_eq!(explicit[0].ttl, "30m");
        assert!(
            breakpoints(&body(Some("explicit"), false))
                .unwrap()
                .is_empty()
        );
        // The same prefix digests the same with or without its mark; the earlier message's end,
        // where the turn before wrote its implicit breakpoint, is matched and not written.
        let unmarked = breakpoints(&body(None, false)).unwrap();
        assert_eq!(unmarked.len(), 2);
        assert_eq!(unmarked[1].digest, implicit[1].digest);
        assert!(!unmarked[1].read_only);
        assert_eq!(unmarked[0].digest, implicit[0].digest);
        assert!(unmarked[0].read_only);
    }

    #[test]
    fn a_bad_mode_ttl_or_placement_is_refused() {
        let mut v = body(Some("sometimes"), false);
        assert!(
            breakpoints(&v)
                .unwrap_err()
                .message
                .contains("prompt_cache_options.mode")
        );
        v["prompt_cache_options"] = json!({ "mode": "explicit", "ttl": "1h" });
        assert!(breakpoints(&v).unwrap_err().message.contains("'30m'"));
        let on_output = json!({ "input": [{ "role": "assistant", "content": [
            { "type": "output_text", "text": "a", "prompt_cache_breakpoint": { "mode": "explicit" } }
        ]}]});
        assert!(
            breakpoints(&on_output)
                .unwrap_err()
                .message
                .contains("'output_text'")
        );
        assert!(asks(&on_output));
        assert!(!asks(&json!({ "input": "hi" })));
    }
}
