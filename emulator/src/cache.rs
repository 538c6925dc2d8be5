//! The emulated prompt cache: per region and model, keyed by a digest of the prompt up to each
//! `cachePoint`, with TTLs that reset on a hit and a per-model minimum prefix size.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::text;

/// One checkpoint of a request: what precedes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CachePointAt {
    /// Digest of every block before the checkpoint, in prompt order.
    pub digest: [u8; 32],
    /// Estimated tokens before the checkpoint.
    pub tokens_before: u32,
    /// `5m` or `1h` (Converse), `30m` (the Responses API).
    pub ttl: &'static str,
    /// Where it sits in the body, as a JSON pointer without its `#` (`toolConfig/tools/2`).
    pub path: String,
    /// In the tool list.
    pub in_tools: bool,
    /// In a message that carries a `toolResult` block.
    pub with_tool_result: bool,
    /// Matched when an earlier request wrote it, never written by this one (an earlier
    /// turn's implicit breakpoint on the Responses API).
    pub read_only: bool,
}

/// A model's rules for checkpoints (Bedrock's, per model).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CacheRules<'a> {
    pub tools: bool,
    pub after_tool_result: bool,
    pub ttls: &'a std::collections::BTreeSet<String>,
    pub max_points: usize,
}

/// Whether a request's checkpoints keep the model's rules; the error message Bedrock gives
/// when they do not.
pub(crate) fn check_placement(
    points: &[CachePointAt],
    rules: CacheRules<'_>,
) -> Result<(), String> {
    let extraneous = |p: &CachePointAt| {
        format!(
            "Malformed input request: #/{}: extraneous key [cachePoint] is not permitted, please reformat your input and try again.",
            p.path
        )
    };
    for p in points {
        if (p.in_tools && !rules.tools) || (p.with_tool_result && !rules.after_tool_result) {
            return Err(extraneous(p));
        }
        if !rules.ttls.contains(p.ttl) {
            return Err(format!(
                "The model returned the following errors: cache_control.ttl: the TTL {} is not supported for this model.",
                p.ttl
            ));
        }
    }
    if points.len() > rules.max_points {
        return Err(format!(
            "The model returned the following errors: A maximum of {} blocks with cache_control may be provided. Found {}.",
            rules.max_points,
            points.len()
        ));
    }
    if let Some(w) = points
        .windows(2)
        .find(|w| w[0].ttl == "5m" && w[1].ttl == "1h")
    {
        return Err(format!(
            "The model returned the following errors: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block (at #/{}).",
            w[1].path
        ));
    }
    Ok(())
}

fn ttl_duration(ttl: &str) -> Duration {
    match ttl {
        "1h" => Duration::from_secs(3600),
        "30m" => Duration::from_secs(1800),
        _ => Duration::from_secs(300),
    }
}

/// The checkpoints of a Converse body, walking tools, then system, then messages.
pub(crate) fn cache_points(body: &Value) -> Vec<CachePointAt> {
    let mut hasher = Sha256::new();
    let mut chars = 0usize;
    let mut points = Vec::new();
    let array = |v: Option<&Value>| -> Vec<Value> {
        v.and_then(Value::as_array).cloned().unwrap_or_default()
    };
    // (block, its path, in the tool list, in a message with a tool result)
    let mut blocks: Vec<(Value, String, bool, bool)> = Vec::new();
    for (i, t) in array(body.pointer("/toolConfig/tools"))
        .into_iter()
        .enumerate()
    {
        blocks.push((t, format!("toolConfig/tools/{i}"), true, false));
    }
    for (i, b) in array(body.get("system")).into_iter().enumerate() {
        blocks.push((b, format!("system/{i}"), false, false));
    }
    for (i, m) in array(body.get("messages")).into_iter().enumerate() {
        let content = array(m.get("content"));
        let tool_result = content.iter().any(|b| b.get("toolResult").is_some());
        for (j, b) in content.into_iter().enumerate() {
            blocks.push((b, format!("messages/{i}/content/{j}"), false, tool_result));
        }
    }
    for (block, path, in_tools, with_tool_result) in &blocks {
        match block.get("cachePoint") {
            Some(cp) => {
                let ttl = if cp.get("ttl").and_then(Value::as_str) == Some("1h") {
                    "1h"
                } else {
                    "5m"
                };
                points.push(CachePointAt {
                    digest: hasher.clone().finalize().into(),
                    tokens_before: text::estimate_tokens(chars),
                    ttl,
                    path: path.clone(),
                    in_tools: *in_tools,
                    with_tool_result: *with_tool_result,
                    read_only: false,
                });
            }
            None => {
                hasher.update(block.to_string().as_bytes());
                chars += text::json_text_chars(block);
            }
        }
    }
    points
}

/// What the cache did for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CacheUse {
    pub read: u32,
    pub write: u32,
    /// Tokens written per TTL.
    pub details: Vec<(&'static str, u32)>,
}

type Key = (String, String, [u8; 32]);

/// Cached prefixes with their expiry.
#[derive(Debug, Default)]
pub(crate) struct PromptCache {
    entries: Mutex<HashMap<Key, Instant>>,
}

impl PromptCache {
    /// Reads the longest live cached prefix and writes the checkpoints after it. Checkpoints
    /// with fewer than `min_tokens` before them cache nothing. TTLs are scaled by `scale`.
    pub(crate) fn apply(
        &self,
        region: &str,
        model: &str,
        points: &[CachePointAt],
        min_tokens: u32,
        scale: f64,
    ) -> CacheUse {
        let now = Instant::now();
        let mut entries = self.entries.lock().expect("cache lock");
        let key = |p: &CachePointAt| (region.to_string(), model.to_string(), p.digest);
        let valid: Vec<&CachePointAt> = points
            .iter()
            .filter(|p| p.tokens_before >= min_tokens)
            .collect();
        let hit = valid
            .iter()
            .rposition(|p| entries.get(&key(p)).is_some_and(|exp| *exp > now));
        let mut used = CacheUse::default();
        let mut covered = 0;
        if let Some(i) = hit {
            let p = valid[i];
            used.read = p.tokens_before;
            covered = p.tokens_before;
            entries.insert(key(p), now + ttl_duration(p.ttl).mul_f64(scale));
        }
        for p in valid
            .iter()
            .skip(hit.map_or(0, |i| i + 1))
            .filter(|p| !p.read_only)
        {
            let added = p.tokens_before.saturating_sub(covered);
            if added > 0 {
                used.write += added;
                match used.details.iter_mut().find(|(t, _)| *t == p.ttl) {
                    Some((_, n)) => *n += added,
                    None => used.details.push((p.ttl, added)),
                }
                covered = p.tokens_before;
            }
            entries.insert(key(p), now + ttl_duration(p.ttl).mul_f64(scale));
        }
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nova_rules(ttls: &std::collections::BTreeSet<String>) -> CacheRules<'_> {
        CacheRules {
            tools: false,
            after_tool_result: false,
            ttls,
            max_points: 4,
        }
    }

    #[test]
    fn misplaced_checkpoints_get_bedrocks_errors() {
        let five: std::collections::BTreeSet<String> = ["5m".to_string()].into();
        let in_tools = json!({
            "toolConfig": { "tools": [{ "toolSpec": { "name": "t" } }, { "cachePoint": { "type": "default" } }] },
            "messages": [{ "role": "user", "content": [{ "text": "q" }] }],
        });
        let err = check_placement(&cache_points(&in_tools), nova_rules(&five)).unwrap_err();
        assert!(
            err.contains("#/toolConfig/tools/1: extraneous key [cachePoint] is not permitted"),
            "{err}"
        );
        let after_result = json!({
            "messages": [
                { "role": "user", "content": [{ "text": "q" }] },
                { "role": "assistant", "content": [{ "toolUse": { "toolUseId": "a", "name": "t", "input": {} } }] },
                { "role": "user", "content": [{ "toolResult": { "toolUseId": "a", "content": [{ "text": "r" }] } }, { "cachePoint": { "type": "default" } }] },
            ],
        });
        let err = check_placement(&cache_points(&after_result), nova_rules(&five)).unwrap_err();
        assert!(
            err.contains("#/messages/2/content/1: extraneous key"),
            "{err}"
        );
        let both: std::collections::BTreeSet<String> = ["5m".to_string(), "1h".to_string()].into();
        let claude = CacheRules {
            tools: true,
            after_tool_result: true,
            ttls: &both,
            max_points: 4,
        };
        assert!(check_placement(&cache_points(&in_tools), claude).is_ok());
        assert!(check_placement(&cache_points(&after_result), claude).is_ok());
        let one_hour = json!({ "system": [{ "text": "s" }, { "cachePoint": { "type": "default", "ttl": "1h" } }],
            "messages": [{ "role": "user", "content": [{ "text": "q" }] }] });
        assert!(
            check_placement(&cache_points(&one_hour), nova_rules(&five))
                .unwrap_err()
                .contains("TTL 1h")
        );
        let increasing = json!({ "system": [{ "text": "s" }, { "cachePoint": { "type": "default" } }],
            "messages": [{ "role": "user", "content": [{ "text": "q" }, { "cachePoint": { "type": "default", "ttl": "1h" } }] }] });
        assert!(
            check_placement(&cache_points(&increasing), claude)
                .unwrap_err()
                .contains("must not come after")
        );
        let five_points = json!({ "system": [
            { "text": "a" }, { "cachePoint": { "type": "default" } }, { "text": "b" }, { "cachePoint": { "type": "default" } },
            { "text": "c" }, { "cachePoint": { "type": "default" } }, { "text": "d" }, { "cachePoint": { "type": "default" } },
            { "text": "e" }, { "cachePoint": { "type": "default" } }],
            "messages": [{ "role": "user", "content": [{ "text": "q" }] }] });
        assert!(
            check_placement(&cache_points(&five_points), claude)
                .unwrap_err()
                .contains("A maximum of 4 blocks")
        );
    }

    fn body(system: &str, question: &str) -> Value {
        json!({
            "system": [{ "text": system }, { "cachePoint": { "type": "default" } }],
            "messages": [{ "role": "user", "content": [{ "text": question }] }],
        })
    }

    #[test]
    fn second_request_reads_what_the_first_wrote() {
        let cache = PromptCache::default();
        let long = "x".repeat(8000);
        let first = cache_points(&body(&long, "a"));
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].tokens_before, 2000);
        let w = cache.apply("us-east-1", "m", &first, 1024, 1.0);
        assert_eq!((w.read, w.write), (0, 2000));
        assert_eq!(w.details, vec![("5m", 2000)]);
        let r = cache.apply(
            "us-east-1",
            "m",
            &cache_points(&body(&long, "b")),
            1024,
            1.0,
        );
        assert_eq!((r.read, r.write), (2000, 0));
        let other_region = cache.apply("eu-west-1", "m", &first, 1024, 1.0);
        assert_eq!(other_region.read, 0, "caches are per region");
    }

    #[test]
    fn short_prefixes_and_expired_entries_cache_nothing() {
        let cache = PromptCache::default();
        let short = cache_points(&body("short", "a"));
        assert_eq!(
            cache.apply("r", "m", &short, 1024, 1.0),
            CacheUse::default()
        );
        let long = cache_points(&body(&"y".repeat(8000), "a"));
        cache.apply("r", "m", &long, 1024, 0.0);
        assert_eq!(
            cache.apply("r", "m", &long, 1024, 1.0).read,
            0,
            "a zero TTL expired at once"
        );
    }

    #[test]
    fn a_read_only_point_is_matched_but_never_written() {
        let cache = PromptCache::default();
        let long = cache_points(&body(&"z".repeat(8000), "a"));
        let read_only = |p: &CachePointAt| CachePointAt {
            read_only: true,
            ..p.clone()
        };
        let only = vec![read_only(&long[0])];
        assert_eq!(cache.apply("r", "m", &only, 1024, 1.0), CacheUse::default());
        cache.apply("r", "m", &long, 1024, 1.0);
        let used = cache.apply("r", "m", &only, 1024, 1.0);
        assert_eq!((used.read, used.write), (2000, 0));
    }
}
