//! The prompt cache in the variant choice: a stronger variant than the quality pick may cost
//! less for a request whose long prefix recurs, when the pick cannot cache a prefix that long
//! (Claude Haiku 4.5 caches from 4,096 tokens, Sonnet 4.5 from 1,024) and the stronger one
//! reads it from the cache at a tenth of its input price. Every variant at or above the pick
//! is good enough; among them, the one that costs least for this request is sent.

use super::observe::Observations;
use super::prompt_cache::{self, Prefix};
use crate::config::{Config, ModelConfig};
use crate::types::{CacheMode, CacheTtl, GenerateRequest};

/// Output tokens assumed for a request without `max_tokens`.
const OUTPUT_WITHOUT_LIMIT: f64 = 500.0;

/// The variant (an index into `variants`, at or above `pick`) that costs least for this
/// request with its recurring prefix read from the cache, with the estimated cost of the pick
/// and of it in US dollars; `None` when the pick is cheapest or no prefix recurs.
pub(crate) fn cheapest_sufficient(
    request: &GenerateRequest,
    variants: &[String],
    pick: usize,
    config: &Config,
    obs: &(impl Observations + ?Sized),
) -> Option<(usize, f64, f64)> {
    let models: Vec<&ModelConfig> = variants
        .iter()
        .map(|v| config.models.get(v))
        .collect::<Option<_>>()?;
    let min_tokens = |m: &ModelConfig| m.prompt_cache().map_or(u32::MAX, |r| r.min_tokens);
    // Only a stronger variant that caches shorter prefixes than the pick can win: the pick's own
    // prices are the lowest.
    let pick_min = min_tokens(models[pick]);
    if !models[pick + 1..].iter().any(|m| min_tokens(m) < pick_min) {
        return None;
    }
    let pinned = !request.pinned_cache_points().is_empty();
    if request.cache == CacheMode::Off && !pinned {
        return None;
    }
    let (prefixes, _) = prompt_cache::prefixes(request, obs.token_counter(), obs.digest_memo());
    let total = prefixes.iter().map(|p| p.tokens).max()?;
    // Each prefix with the reads expected of it within the default TTL, as checkpoint
    // placement reckons them (its history, else the task's prior; a pinned cache point counts
    // as a task's).
    let policy = &config.prompt_cache;
    let recurring: Vec<(&Prefix, f64)> = prefixes
        .iter()
        .map(|p| {
            let stats = obs.prefix(&p.digest);
            let reads = prompt_cache::expected_reads(
                stats.as_ref(),
                CacheTtl::FiveMinutes,
                request,
                policy,
            );
            let reads = if pinned && stats.is_none() {
                reads.max(policy.task_reuse_prior)
            } else {
                reads
            };
            (p, reads)
        })
        .filter(|(_, reads)| *reads > 0.0)
        .collect();
    if recurring.is_empty() {
        return None;
    }
    let output = request
        .inference
        .max_tokens
        .map_or(OUTPUT_WITHOUT_LIMIT, |t| t.max(0) as f64);
    let margin = 1.0 + config.prompt_cache.margin;
    // Per call, a cached prefix costs its write once and its reads after: amortized over the
    // expected reads.
    let cost = |m: &ModelConfig| {
        let price = m.price();
        let read = price.cache_read_per_1k.unwrap_or(price.input_per_1k);
        let write = price.cache_write_per_1k.unwrap_or(price.input_per_1k);
        let uncached = f64::from(total) * price.input_per_1k;
        let input = m.prompt_cache().map_or(uncached, |rules| {
            recurring
                .iter()
                .filter(|(p, _)| f64::from(p.tokens) >= f64::from(rules.min_tokens) * margin)
                .filter(|(p, _)| rules.max_tokens.is_none_or(|max| p.tokens <= max))
                .map(|(p, reads)| {
                    let cached = f64::from(p.tokens);
                    cached * (write + reads * read) / (1.0 + reads)
                        + (f64::from(total) - cached) * price.input_per_1k
                })
                .fold(uncached, f64::min)
        });
        (input + output * price.output_per_1k) / 1000.0
    };
    let costs: Vec<f64> = models[pick..].iter().map(|m| cost(m)).collect();
    let (best, best_cost) =
        costs.iter().enumerate().fold(
            (0, costs[0]),
            |(b, c), (i, x)| if *x < c { (i, *x) } else { (b, c) },
        );
    (best > 0).then_some((pick + best, costs[0], best_cost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::observe::{Fresh, TargetView};
    use crate::plan::prompt_cache::{PrefixDigest, PrefixStats};
    use crate::types::{CachePoint, ServiceTier, SystemBlock};
    use std::time::{Duration, Instant};

    const CLAUDE: [&str; 3] = [
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-opus-4-5-20251101-v1:0",
    ];

    /// A state that has seen every prefix arrive every five seconds.
    struct Busy(Instant);

    impl Observations for Busy {
        fn now(&self) -> Instant {
            self.0
        }
        fn target(&self, _: &str, _: &str, _: Option<ServiceTier>) -> TargetView {
            TargetView::UNKNOWN
        }
        fn reserved_room(&self, _: &str, _: u64, _: u64) -> Option<bool> {
            None
        }
        fn prefix(&self, _: &PrefixDigest) -> Option<PrefixStats> {
            Some(PrefixStats {
                seen: 20,
                since_last: Duration::from_secs(5),
                mean_gap: Some(Duration::from_secs(5)),
                cached_in: None,
            })
        }
    }

    fn variants() -> Vec<String> {
        CLAUDE.iter().map(|v| v.to_string()).collect()
    }

    fn with_system(tokens: usize, pinned: bool) -> GenerateRequest {
        let mut req = GenerateRequest::user("Where is my order?").max_tokens(60);
        req.system = vec![SystemBlock::Text(
            "Refunds need a receipt. ".repeat(tokens / 6),
        )];
        if pinned {
            req.system
                .push(SystemBlock::CachePoint(CachePoint::default()));
        }
        req
    }

    #[test]
    fn a_busy_prefix_too_short_for_the_pick_goes_to_a_variant_that_caches_it() {
        let config = Config::default();
        let busy = Busy(crate::time::now());
        // About 2,000 tokens: Sonnet caches it, Haiku (4,096 minimum) cannot.
        let req = with_system(2_000, false);
        let (to, from_usd, to_usd) =
            cheapest_sufficient(&req, &variants(), 0, &config, &busy).expect("Sonnet is cheaper");
        assert_eq!(to, 1);
        assert!(to_usd < from_usd, "{to_usd} vs {from_usd}");
        // Long enough for Haiku to cache: Haiku is cheapest.
        assert_eq!(
            cheapest_sufficient(&with_system(8_000, false), &variants(), 0, &config, &busy),
            None
        );
        // Already on the strongest, or caching off: nothing to do.
        assert_eq!(
            cheapest_sufficient(&req, &variants(), 2, &config, &busy),
            None
        );
        let mut off = req.clone();
        off.cache = CacheMode::Off;
        assert_eq!(
            cheapest_sufficient(&off, &variants(), 0, &config, &busy),
            None
        );
        // A long answer costs more on Sonnet than the cache saves.
        let long = req.max_tokens(20_000);
        assert_eq!(
            cheapest_sufficient(&long, &variants(), 0, &config, &busy),
            None
        );
    }

    #[test]
    fn a_prefix_not_seen_yet_needs_more_reads_than_a_task_promises() {
        let config = Config::default();
        let fresh = Fresh(crate::time::now());
        // Unseen: no reads expected, or a task's two, which do not pay for Sonnet's write and
        // dearer tokens over Haiku's plain input.
        assert_eq!(
            cheapest_sufficient(&with_system(2_000, false), &variants(), 0, &config, &fresh),
            None
        );
        assert_eq!(
            cheapest_sufficient(&with_system(2_000, true), &variants(), 0, &config, &fresh),
            None
        );
        assert_eq!(
            cheapest_sufficient(
                &with_system(2_000, false).task("t"),
                &variants(),
                0,
                &config,
                &fresh
            ),
            None
        );
    }
}
