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
pub struct CachePointAt {
    /// Digest of every block before the checkpoint, in prompt order.
    pub digest: [u8; 32],
    /// Estimated tokens before the checkpoint.
    pub tokens_before: u32,
    /// `5m` or `1h`.
    pub ttl: &'static str,
}

fn ttl_duration(ttl: &str) -> Duration {
    if ttl == "1h" {
        Duration::from_secs(3600)
    } else {
        Duration::from_secs(300)
    }
}

/// The checkpoints of a Converse body, walking tools, then system, then messages.
pub fn cache_points(body: &Value) -> Vec<CachePointAt> {
    let mut hasher = Sha256::new();
    let mut chars = 0usize;
    let mut points = Vec::new();
    let tools = body
        .pointer("/toolConfig/tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let system = body
        .get("system")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|m| {
            m.get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        });
    for block in tools.chain(system).chain(messages) {
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
pub struct CacheUse {
    pub read: u32,
    pub write: u32,
    /// Tokens written per TTL.
    pub details: Vec<(&'static str, u32)>,
}

type Key = (String, String, [u8; 32]);

/// Cached prefixes with their expiry.
#[derive(Debug, Default)]
pub struct PromptCache {
    entries: Mutex<HashMap<Key, Instant>>,
}

impl PromptCache {
    /// Reads the longest live cached prefix and writes the checkpoints after it. Checkpoints
    /// with fewer than `min_tokens` before them cache nothing. TTLs are scaled by `scale`.
    pub fn apply(
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
        for p in valid.iter().skip(hit.map_or(0, |i| i + 1)) {
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
}
