//! Prefix memory: where prompt prefixes were cached (this replica's, and the fleet's index in
//! Redis), the digests of prompts already seen, and what the cache saved per family.

use std::sync::{Arc, Mutex};

use super::{
    CharEstimate, Checkpoint, DigestMemo, Digested, Duration, Instant, Prefix, PrefixDigest,
    Serialize, TokenCounter, shared,
};

/// Prefix memory: where prompt prefixes were cached (this replica's, and with shared state
/// the fleet's index in Redis), the digests of prompts already seen, the token counter cache
/// placement counts with, and what the cache saved per family.
pub struct Prefixes {
    pub(super) records: moka::sync::Cache<PrefixDigest, PrefixRecord>,
    digests: moka::sync::Cache<u128, Digested>,
    pub(super) counter: Arc<dyn TokenCounter>,
    cache_totals: Mutex<std::collections::BTreeMap<String, CacheTotals>>,
    /// Prefixes recently looked up in Redis (found or not): not asked again for a while.
    lookups: moka::sync::Cache<PrefixDigest, ()>,
    pub(super) shared: Option<Arc<shared::Shared>>,
}

impl Default for Prefixes {
    fn default() -> Self {
        Self {
            // An hour idle is the longest cache TTL: older prefixes cannot be read any more.
            records: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            digests: moka::sync::Cache::builder()
                .max_capacity(50_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            counter: Arc::new(CharEstimate),
            cache_totals: Mutex::default(),
            lookups: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(PREFIX_LOOKUP_TTL)
                .build(),
            shared: None,
        }
    }
}

/// What the state keeps of a prompt prefix.
#[derive(Debug, Clone)]
pub(super) struct PrefixRecord {
    pub(super) seen: u32,
    pub(super) last: Instant,
    pub(super) mean_gap_s: Option<f64>,
    /// (region, target id, expiry) of the cache entry it was last written to or read from.
    pub(super) cached: Option<(String, String, Instant)>,
}

/// Input tokens of the calls of one family (or model, outside families), split by what the
/// prompt cache did with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CacheTotals {
    /// Calls counted.
    pub calls: u64,
    /// Input tokens processed anew.
    pub new_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Saved against the same calls uncached, in US dollars.
    pub savings_usd: f64,
}

impl CacheTotals {
    /// The share of input tokens that were new (neither read from nor written to the cache).
    pub fn new_share(&self) -> f64 {
        let all = self.new_tokens + self.cache_write_tokens + self.cache_read_tokens;
        if all == 0 {
            1.0
        } else {
            self.new_tokens as f64 / all as f64
        }
    }
}

/// How long a prefix looked up in the shared index is not looked up again.
pub(super) const PREFIX_LOOKUP_TTL: Duration = Duration::from_secs(2);

impl DigestMemo for Prefixes {
    fn digested(&self, key: u128) -> Option<Digested> {
        self.digests.get(&key)
    }
}

impl Prefixes {
    /// Counts tokens with `counter` for cache placement (the default is [`CharEstimate`]).
    pub fn set_token_counter(&mut self, counter: Arc<dyn TokenCounter>) {
        self.counter = counter;
    }

    /// Learns from the fleet where these prefixes are cached, for those this replica has no
    /// live cache entry for and has not asked about lately. `true` if anything was learned
    /// (the plan should be made again).
    pub async fn import_shared_prefixes(&self, now: Instant, prefixes: &[Prefix]) -> bool {
        let Some(sh) = &self.shared else {
            return false;
        };
        if !sh.usable() {
            return false;
        }
        let unknown: Vec<PrefixDigest> = prefixes
            .iter()
            .map(|p| p.digest)
            .filter(|d| {
                let cached_here = self
                    .records
                    .get(d)
                    .and_then(|r| r.cached)
                    .is_some_and(|(_, _, exp)| exp > now);
                !cached_here && !self.lookups.contains_key(d)
            })
            .collect();
        if unknown.is_empty() {
            return false;
        }
        for d in &unknown {
            self.lookups.insert(*d, ());
        }
        let digests: Vec<[u8; 32]> = unknown.iter().map(|d| d.0).collect();
        // Boxed: a Redis round trip's future is large, and only calls with shared state
        // should carry it.
        let Some(found) = Box::pin(sh.lookup_prefixes(&digests)).await else {
            return false;
        };
        let now_ms = shared::unix_ms();
        let mut learned = false;
        for (digest, at) in unknown.iter().zip(found) {
            let Some((region, target, expires)) = at else {
                continue;
            };
            let left = Duration::from_millis(expires.saturating_sub(now_ms));
            let mut r = self.records.get(digest).unwrap_or(PrefixRecord {
                seen: 0,
                last: now,
                mean_gap_s: None,
                cached: None,
            });
            r.cached = Some((region, target, now + left));
            self.records.insert(*digest, r);
            learned = true;
        }
        learned
    }

    /// A request's prefixes arrived at `now`; those at `checkpoints` are now cached at the target
    /// (written or read) with their TTLs.
    pub fn record_prefixes(
        &self,
        now: Instant,
        prefixes: &[Prefix],
        checkpoints: &[Checkpoint],
        region: &str,
        target: &str,
    ) {
        let mut published = Vec::new();
        for p in prefixes {
            let mut r = self.records.get(&p.digest).unwrap_or(PrefixRecord {
                seen: 0,
                last: now,
                mean_gap_s: None,
                cached: None,
            });
            if r.seen > 0 {
                let gap = now.saturating_duration_since(r.last).as_secs_f64();
                r.mean_gap_s = Some(r.mean_gap_s.map_or(gap, |m| m + 0.3 * (gap - m)));
            }
            r.seen += 1;
            r.last = now;
            if let Some(c) = checkpoints.iter().find(|c| c.at == p.at) {
                let ttl = c.ttl.duration();
                r.cached = Some((region.to_string(), target.to_string(), now + ttl));
                if self.shared.is_some() {
                    let expires = shared::unix_ms() + ttl.as_millis() as u64;
                    published.push((
                        p.digest.0,
                        (region.to_string(), target.to_string(), expires),
                    ));
                }
            }
            self.records.insert(p.digest, r);
        }
        if let Some(sh) = &self.shared {
            sh.publish_prefixes(published);
        }
    }

    /// Adds a completed call to its family's cache totals.
    pub fn record_cache_use(&self, family: &str, usage: &crate::types::Usage, savings_usd: f64) {
        let mut totals = self.cache_totals.lock().unwrap_or_else(|p| p.into_inner());
        if !totals.contains_key(family) {
            totals.insert(family.to_string(), CacheTotals::default());
        }
        let t = totals.get_mut(family).expect("inserted above");
        t.calls += 1;
        t.new_tokens += u64::from(usage.input_tokens);
        t.cache_write_tokens += u64::from(usage.cache_write_tokens);
        t.cache_read_tokens += u64::from(usage.cache_read_tokens);
        t.savings_usd += savings_usd;
    }

    /// Cache totals per family (or model, for calls outside families).
    pub fn cache_totals(&self) -> std::collections::BTreeMap<String, CacheTotals> {
        self.cache_totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Remembers digests computed for a request, so that its prefixes are not digested again.
    pub fn remember_digests(&self, learned: Vec<(u128, Digested)>) {
        for (key, d) in learned {
            self.digests.insert(key, d);
        }
    }
}
