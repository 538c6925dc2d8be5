//! Prompt-cache checkpoints: where a `cachePoint` pays for its write, within the model's rules.
//!
//! The request is cut at its stable boundaries in prompt order (the tool list, each system
//! block, each message), and each prefix gets a SHA-256 digest and a token count. A checkpoint
//! goes where the reuse expected within its TTL pays for the write: a read saves
//! `input - read` per token, a write costs `write - input` more. Reuse is expected from how
//! often and how far apart the same prefix arrived before (from the live state), or, for a
//! prefix not seen yet, from the call's `task_id` (a multi-step task will send it again). The
//! rules come from configuration: caching at all, minimum tokens (with a safety margin for the
//! estimate), at most four checkpoints, TTLs the model offers and non-increasing in prompt
//! order, tool checkpoints only where the model caches tools, and the largest cacheable prefix.
//!
//! A request may opt out (`CacheMode::Off`) or pin its own checkpoints: those are kept where
//! they are and only changed where a rule demands, each change reported.

pub use crate::config::CachePolicy;
pub use crate::types::{Boundary, Checkpoint};
use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::config::{Config, ModelConfig, PromptCacheConfig};
use crate::plan::observe::Observations;
use crate::types::{CacheChange, Reason};
use crate::types::{
    CacheMode, CacheTtl, ContentBlock, GenerateRequest, SystemBlock, Tool, ToolResultContent,
};

/// Bedrock accepts at most this many checkpoints in one request.
pub const MAX_CHECKPOINTS: usize = 4;

/// Counts the tokens of a text. The default is [`CharEstimate`]; plug in an exact tokenizer
/// with [`RouterBuilder::token_counter`](crate::RouterBuilder::token_counter).
pub trait TokenCounter: Send + Sync + fmt::Debug {
    /// The tokens `text` counts as.
    fn count(&self, text: &str) -> u32;
}

/// A quarter of the characters, rounded up. On English prose and code this lands within about
/// 25% of the Claude and Nova tokenizers' counts (more text per token for English, less for
/// code and non-Latin scripts); placement therefore asks for `margin` (25% by default) above a
/// model's minimum before it trusts a prefix to be cacheable.
#[derive(Debug, Default, Clone, Copy)]
pub struct CharEstimate;

impl TokenCounter for CharEstimate {
    fn count(&self, text: &str) -> u32 {
        u32::try_from(text.chars().count().div_ceil(4)).unwrap_or(u32::MAX)
    }
}

/// The SHA-256 digest of a prompt prefix.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrefixDigest(pub [u8; 32]);

impl fmt::Debug for PrefixDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Short and free of prompt text.
        write!(
            f,
            "{:02x}{:02x}{:02x}{:02x}",
            self.0[0], self.0[1], self.0[2], self.0[3]
        )
    }
}

impl Serialize for PrefixDigest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{self:?}"))
    }
}

/// A prefix of the prompt: where it ends, its digest, its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Prefix {
    /// The boundary the prefix ends at.
    pub at: Boundary,
    /// The SHA-256 digest of the prompt up to the boundary.
    pub digest: PrefixDigest,
    /// The prefix's tokens, from the start of the prompt, by the [`TokenCounter`].
    pub tokens: u32,
}

/// What was seen of a prefix before.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefixStats {
    /// How many times it arrived before.
    pub seen: u32,
    /// Time since it was last seen.
    pub since_last: std::time::Duration,
    /// Moving average of the time between arrivals.
    pub mean_gap: Option<std::time::Duration>,
    /// Where it was last written to a cache, if that cache is still alive: (region, target id).
    pub cached_in: Option<(String, String)>,
}

/// A piece of a segment's content, as hashed and counted.
enum Part<'a> {
    /// A separator naming what follows; hashed, not counted.
    Tag(&'static [u8]),
    Text(std::borrow::Cow<'a, str>),
    /// Binary content (an image): hashed, counted as a fixed number of tokens.
    Bytes(&'a [u8], u32),
}

/// Media as a part: inline bytes hashed and counted as `tokens`; an S3 object by its URI (the
/// same object is the same prefix).
fn source_part(source: &crate::types::MediaSource, tokens: u32) -> Part<'_> {
    match source {
        crate::types::MediaSource::Bytes(b) => Part::Bytes(b, tokens),
        crate::types::MediaSource::S3 { uri, .. } => Part::Text(uri.as_str().into()),
    }
}

/// The content between two boundaries.
struct Segment<'a> {
    at: Boundary,
    parts: Vec<Part<'a>>,
}

fn segments(request: &GenerateRequest) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut tools = Vec::new();
    for t in &request.tools {
        if let Tool::Spec(s) = t {
            tools.push(Part::Tag(b"\x01tool\x00"));
            tools.push(Part::Text(s.name.as_str().into()));
            tools.push(Part::Tag(b"\x00"));
            tools.push(Part::Text(s.description.as_deref().unwrap_or("").into()));
            tools.push(Part::Text(s.input_schema.to_string().into()));
        }
    }
    if !tools.is_empty() {
        out.push(Segment {
            at: Boundary::Tools,
            parts: tools,
        });
    }
    for (i, b) in request.system.iter().enumerate() {
        if let SystemBlock::Text(t)
        | SystemBlock::GuardContent(crate::types::GuardContent::Text { text: t, .. }) = b
        {
            out.push(Segment {
                at: Boundary::System(i),
                parts: vec![Part::Tag(b"\x02system\x00"), Part::Text(t.as_str().into())],
            });
        }
    }
    for (i, m) in request.messages.iter().enumerate() {
        let mut parts = vec![Part::Tag(if m.role == crate::types::Role::User {
            b"\x03user\x00"
        } else {
            b"\x03asst\x00"
        })];
        let mut last = None;
        for (j, b) in m.content.iter().enumerate() {
            let part = match b {
                ContentBlock::Text(t) => Part::Text(t.as_str().into()),
                ContentBlock::Reasoning(r) => Part::Text(r.text().into()),
                ContentBlock::GuardContent(crate::types::GuardContent::Text { text, .. }) => {
                    Part::Text(text.as_str().into())
                }
                ContentBlock::GuardContent(crate::types::GuardContent::Image(img)) => {
                    source_part(&img.source, 1_600)
                }
                ContentBlock::Audio(m) | ContentBlock::Video(m) => source_part(&m.source, 1_600),
                ContentBlock::SearchResult(r) => {
                    Part::Text(format!("{}{}{}", r.source, r.title, r.content.concat()).into())
                }
                ContentBlock::Citations(c) => Part::Text(c.content.concat().into()),
                ContentBlock::ToolAddition(t) | ContentBlock::ToolRemoval(t) => {
                    Part::Text(format!("{:?}{:?}", t.name, t.server_name).into())
                }
                ContentBlock::Image(img) => source_part(&img.source, 1_600),
                ContentBlock::Document(d) => source_part(
                    &d.source,
                    u32::try_from(d.estimated_chars() / 4).unwrap_or(u32::MAX),
                ),
                ContentBlock::ToolUse(t) => {
                    Part::Text(format!("{}{}{}", t.id, t.name, t.input).into())
                }
                ContentBlock::ToolResult(r) => {
                    // Each piece as its own part: media hashed by their bytes, as blocks are.
                    parts.push(Part::Tag(b"\x04"));
                    for c in &r.content {
                        parts.push(Part::Tag(b"\x05"));
                        parts.push(match c {
                            ToolResultContent::Image(img) => source_part(&img.source, 1_600),
                            ToolResultContent::Document(d) => source_part(
                                &d.source,
                                u32::try_from(d.estimated_chars() / 4).unwrap_or(u32::MAX),
                            ),
                            ToolResultContent::Video(m) => source_part(&m.source, 1_600),
                            other => Part::Text(other.text().unwrap_or_default()),
                        });
                    }
                    last = Some(j);
                    continue;
                }
                ContentBlock::CachePoint(_) => continue,
            };
            parts.push(Part::Tag(b"\x04"));
            parts.push(part);
            last = Some(j);
        }
        if let Some(block) = last {
            out.push(Segment {
                at: Boundary::Message { index: i, block },
                parts,
            });
        }
    }
    out
}

/// A prefix digested before: its digest, its tokens, and the SHA-256 state at its end, so that
/// a longer prompt sharing it only digests what follows.
#[derive(Clone)]
pub struct Digested {
    /// The prefix's SHA-256 digest.
    pub digest: PrefixDigest,
    /// The prefix's tokens, from the start of the prompt.
    pub tokens: u32,
    state: Sha256,
}

/// Equal when they digest the same prefix (the hash state follows from it).
impl PartialEq for Digested {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest && self.tokens == other.tokens
    }
}

impl fmt::Debug for Digested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Digested")
            .field("digest", &self.digest)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

/// Where digests of earlier prompts are kept; keyed by a fast 128-bit hash (XXH3) of the prefix.
pub trait DigestMemo {
    /// The digest remembered for the prefix hashed to `key`, if any.
    fn digested(&self, key: u128) -> Option<Digested>;
}

/// A memo that remembers nothing.
pub struct NoMemo;

impl DigestMemo for NoMemo {
    fn digested(&self, _: u128) -> Option<Digested> {
        None
    }
}

/// Every prefix of the request at a boundary, in prompt order, with the new digests to
/// remember. Cache points the request holds are not content and do not change the digests.
///
/// Leading segments digested before (the same system prompt and tools on every step of an
/// agent) are taken from `memo`: they cost one XXH3 pass instead of SHA-256 and a token count.
pub fn prefixes(
    request: &GenerateRequest,
    counter: &dyn TokenCounter,
    memo: &dyn DigestMemo,
) -> (Vec<Prefix>, Vec<(u128, Digested)>) {
    use xxhash_rust::xxh3::Xxh3;
    let mut chain = Xxh3::new();
    let mut hasher = Sha256::new();
    let mut tokens = 0u32;
    let mut from_memo = true;
    let mut out = Vec::new();
    let mut learned = Vec::new();
    for seg in segments(request) {
        for part in &seg.parts {
            match part {
                Part::Tag(t) => chain.update(t),
                Part::Text(t) => chain.update(t.as_bytes()),
                Part::Bytes(b, _) => chain.update(b),
            }
        }
        let key = chain.digest128();
        let remembered = if from_memo { memo.digested(key) } else { None };
        match remembered {
            Some(d) => {
                hasher = d.state;
                tokens = d.tokens;
            }
            None => {
                from_memo = false;
                for part in &seg.parts {
                    match part {
                        Part::Tag(t) => hasher.update(t),
                        Part::Text(t) => {
                            hasher.update(t.as_bytes());
                            tokens = tokens.saturating_add(counter.count(t));
                        }
                        Part::Bytes(b, n) => {
                            hasher.update(b);
                            tokens = tokens.saturating_add(*n);
                        }
                    }
                }
            }
        }
        let digest = PrefixDigest(hasher.clone().finalize().into());
        if !from_memo {
            learned.push((
                key,
                Digested {
                    digest,
                    tokens,
                    state: hasher.clone(),
                },
            ));
        }
        out.push(Prefix {
            at: seg.at,
            digest,
            tokens,
        });
    }
    (out, learned)
}

/// The checkpoints the request carries, at the boundary before each, with the TTL each asks
/// for (unset: the model's shortest).
fn pinned(request: &GenerateRequest) -> Vec<(Boundary, Option<CacheTtl>)> {
    let ttl = |c: &crate::types::CachePoint| c.ttl;
    let mut out = Vec::new();
    for t in &request.tools {
        if let Tool::CachePoint(c) = t {
            out.push((Boundary::Tools, ttl(c)));
        }
    }
    let mut last_system = None;
    for (i, b) in request.system.iter().enumerate() {
        match b {
            SystemBlock::Text(_) | SystemBlock::GuardContent(_) => last_system = Some(i),
            SystemBlock::CachePoint(c) => {
                if let Some(s) = last_system {
                    out.push((Boundary::System(s), ttl(c)));
                }
            }
        }
    }
    for (i, m) in request.messages.iter().enumerate() {
        let mut last = None;
        for (j, b) in m.content.iter().enumerate() {
            match b {
                ContentBlock::CachePoint(c) => {
                    if let Some(block) = last {
                        out.push((Boundary::Message { index: i, block }, ttl(c)));
                    }
                }
                _ => last = Some(j),
            }
        }
    }
    out
}

/// Whether a checkpoint at `at` would follow a block of the model's own turn.
fn in_model_turn(request: &GenerateRequest, at: Boundary) -> bool {
    match at {
        Boundary::Message { index, .. } => request
            .messages
            .get(index)
            .is_some_and(|m| m.role == crate::types::Role::Assistant),
        _ => false,
    }
}

/// Whether a checkpoint at `at` would sit in a message that carries a tool result.
fn with_tool_result(request: &GenerateRequest, at: Boundary) -> bool {
    match at {
        Boundary::Message { index, .. } => request.messages.get(index).is_some_and(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(_)))
        }),
        _ => false,
    }
}

/// Reads expected of a prefix within `ttl`, from what was seen of it.
pub(crate) fn expected_reads(
    stats: Option<&PrefixStats>,
    ttl: CacheTtl,
    request: &GenerateRequest,
    policy: &CachePolicy,
) -> f64 {
    match stats {
        Some(s) => {
            let gap = s.mean_gap.unwrap_or(s.since_last).as_secs_f64().max(1e-3);
            // Arrivals within the TTL keep the entry alive: a geometric run of hits.
            let p = 1.0 - (-ttl.duration().as_secs_f64() / gap).exp();
            (p / (1.0 - p).max(1e-6)).min(50.0)
        }
        None if request.task_id.is_some() => policy.task_reuse_prior,
        None => 0.0,
    }
}

/// The checkpoints for one request on one model, the prefixes seen, and the reasons.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CachePlan {
    /// The checkpoints to send, in prompt order.
    pub checkpoints: Vec<Checkpoint>,
    /// Every prefix of the request, for the state to learn recurrence from.
    pub prefixes: Vec<Prefix>,
    /// A target that holds the longest cached prefix: (region, target id).
    pub affinity: Option<(String, String)>,
    /// Digests computed for this request, for the state to remember.
    #[serde(skip)]
    pub learned: Vec<(u128, Digested)>,
}

/// Digests and sizes of the request's prefixes, and where the longest cached one lives.
///
/// `track` are the cache rules prefixes are tracked by when they are not the model's own: a
/// routed family's most permissive variant's, so that a prefix too short for the variant
/// chosen this time still has its recurrence counted for one that could cache it.
pub fn survey(
    request: &GenerateRequest,
    model: &ModelConfig,
    track: Option<&PromptCacheConfig>,
    counter: &dyn TokenCounter,
    obs: &(impl Observations + ?Sized),
) -> CachePlan {
    let has_pins = !pinned(request).is_empty();
    let Some(rules) = track.or(model.prompt_cache()) else {
        return CachePlan::default();
    };
    if !has_pins && (request.cache == CacheMode::Off || too_short(request, rules, counter)) {
        return CachePlan::default();
    }
    let (prefixes, learned) = prefixes(request, counter, obs.digest_memo());
    let affinity = prefixes
        .iter()
        .rev()
        .find_map(|p| obs.prefix(&p.digest).and_then(|s| s.cached_in));
    CachePlan {
        checkpoints: Vec::new(),
        prefixes,
        affinity,
        learned,
    }
}

/// Whether the whole prompt is shorter than the model's minimum: then no prefix can be cached,
/// and neither digesting nor tracking it is worth its cost. Counting is one cheap pass.
fn too_short(
    request: &GenerateRequest,
    rules: &PromptCacheConfig,
    counter: &dyn TokenCounter,
) -> bool {
    let mut total = 0u32;
    let texts = request
        .system
        .iter()
        .filter_map(|b| match b {
            SystemBlock::Text(t)
            | SystemBlock::GuardContent(crate::types::GuardContent::Text { text: t, .. }) => {
                Some(t.as_str())
            }
            _ => None,
        })
        .chain(
            request
                .messages
                .iter()
                .flat_map(|m| m.content.iter())
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.as_str()),
                    _ => None,
                }),
        );
    for t in texts {
        total = total.saturating_add(counter.count(t));
    }
    // Tools, images and tool results only add to the prompt: leave those to the full survey.
    let other = !request.tools.is_empty()
        || request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|b| !matches!(b, ContentBlock::Text(_) | ContentBlock::CachePoint(_)));
    !other && total < rules.min_tokens
}

/// Places the checkpoints of a surveyed request.
pub fn place(
    request: &GenerateRequest,
    model: &ModelConfig,
    config: &Config,
    obs: &(impl Observations + ?Sized),
    mut plan: CachePlan,
    reasons: &mut Vec<Reason>,
) -> CachePlan {
    let pins = pinned(request);
    let Some(rules) = &model.prompt_cache() else {
        if !pins.is_empty() {
            reasons.push(Reason::CachePointsChanged {
                removed: pins.len(),
                why: CacheChange::NoCache,
            });
        }
        return plan;
    };
    if request.cache == CacheMode::Off && pins.is_empty() {
        reasons.push(Reason::CacheOptOut);
        return plan;
    }
    let tokens_at = |b: Boundary| {
        plan.prefixes
            .iter()
            .find(|p| p.at == b)
            .map_or(0, |p| p.tokens)
    };
    let mut chosen: Vec<Checkpoint> = if !pins.is_empty() {
        let mut kept = Vec::new();
        // Validation keeps `ttls` non-empty.
        let shortest = rules.ttls.first().copied().unwrap_or(CacheTtl::FiveMinutes);
        for (at, ttl) in pins {
            let ttl = match ttl {
                None => shortest,
                Some(ttl) if rules.ttls.contains(&ttl) => ttl,
                Some(ttl) => {
                    reasons.push(Reason::CachePointsChanged {
                        removed: 0,
                        why: CacheChange::TtlUnsupported { ttl },
                    });
                    shortest
                }
            };
            if at == Boundary::Tools && !rules.tools {
                reasons.push(Reason::CachePointsChanged {
                    removed: 1,
                    why: CacheChange::NoToolCache,
                });
                continue;
            }
            if !rules.after_tool_result && with_tool_result(request, at) {
                reasons.push(Reason::CachePointsChanged {
                    removed: 1,
                    why: CacheChange::AfterToolResult,
                });
                continue;
            }
            if !rules.after_model_turn && in_model_turn(request, at) {
                reasons.push(Reason::CachePointsChanged {
                    removed: 1,
                    why: CacheChange::AfterModelTurn,
                });
                continue;
            }
            let tokens_before = tokens_at(at);
            if rules.max_tokens.is_some_and(|max| tokens_before > max) {
                reasons.push(Reason::CachePointsChanged {
                    removed: 1,
                    why: CacheChange::PrefixTooLong {
                        tokens: tokens_before,
                        max_tokens: rules.max_tokens.unwrap_or(0),
                    },
                });
                continue;
            }
            kept.push(Checkpoint {
                at,
                ttl,
                tokens_before,
            });
        }
        let before = kept.len();
        kept.dedup_by_key(|c| c.at);
        if kept.len() < before {
            reasons.push(Reason::CachePointsChanged {
                removed: before - kept.len(),
                why: CacheChange::Duplicate,
            });
        }
        reasons.push(Reason::CachePointsPinned { count: kept.len() });
        kept
    } else if config.prompt_cache.enabled {
        auto_place(
            request,
            model,
            rules,
            &config.prompt_cache,
            obs,
            &plan.prefixes,
        )
    } else {
        Vec::new()
    };
    let max = rules.max_checkpoints.min(MAX_CHECKPOINTS);
    if chosen.len() > max {
        let extra = chosen.len() - max;
        // Keep the longest prefixes: they save the most.
        chosen.drain(..extra);
        reasons.push(Reason::CachePointsChanged {
            removed: extra,
            why: CacheChange::TooMany { max },
        });
    }
    // TTLs must not increase in prompt order: a longer TTL after a shorter one is shortened.
    let mut floor = CacheTtl::OneHour;
    for c in &mut chosen {
        if c.ttl > floor {
            c.ttl = floor;
        }
        floor = c.ttl;
    }
    if !chosen.is_empty() && pinned(request).is_empty() {
        reasons.push(Reason::CachePointsPlaced {
            count: chosen.len(),
            tokens: chosen.last().map_or(0, |c| c.tokens_before),
        });
    }
    plan.checkpoints = chosen;
    plan
}

fn auto_place(
    request: &GenerateRequest,
    model: &ModelConfig,
    rules: &PromptCacheConfig,
    policy: &CachePolicy,
    obs: &(impl Observations + ?Sized),
    prefixes: &[Prefix],
) -> Vec<Checkpoint> {
    let price = &model.price();
    let min = (f64::from(rules.min_tokens) * (1.0 + policy.margin)).ceil() as u32;
    let saving_per_read = price.input_per_1k - price.read_price();
    let mut paying: Vec<(Checkpoint, f64)> = Vec::new();
    for p in prefixes {
        if p.tokens < min
            || rules.max_tokens.is_some_and(|max| p.tokens > max)
            || (p.at == Boundary::Tools && !rules.tools)
            || (!rules.after_tool_result && with_tool_result(request, p.at))
            || (!rules.after_model_turn && in_model_turn(request, p.at))
        {
            continue;
        }
        let stats = obs.prefix(&p.digest);
        let best = rules
            .ttls
            .iter()
            .map(|&ttl| {
                let reads = expected_reads(stats.as_ref(), ttl, request, policy);
                let premium = price.write_price(ttl) - price.input_per_1k;
                (ttl, reads * saving_per_read - premium)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((ttl, net)) = best
            && net > 0.0
        {
            paying.push((
                Checkpoint {
                    at: p.at,
                    ttl,
                    tokens_before: p.tokens,
                },
                net * f64::from(p.tokens),
            ));
        }
    }
    let max = rules.max_checkpoints.clamp(1, MAX_CHECKPOINTS);
    if paying.len() > max {
        // The longest paying prefix always stays; the others by the saving they promise.
        let last = paying.pop().expect("more than the maximum");
        paying.sort_by(|a, b| b.1.total_cmp(&a.1));
        paying.truncate(max - 1);
        paying.push(last);
        paying.sort_by_key(|(c, _)| c.at);
    }
    paying.into_iter().map(|(c, _)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::observe::Fresh;
    use crate::types::{CachePoint, Message};

    fn long(n: usize) -> String {
        "word ".repeat(n)
    }

    fn sonnet() -> (&'static str, Config) {
        (
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            Config::default(),
        )
    }

    fn run(req: &GenerateRequest, model: &str, config: &Config) -> (CachePlan, Vec<Reason>) {
        let obs = Fresh(crate::time::now());
        let m = &config.models[model];
        let survey = survey(req, m, None, &CharEstimate, &obs);
        let mut reasons = Vec::new();
        let plan = place(req, m, config, &obs, survey, &mut reasons);
        (plan, reasons)
    }

    #[test]
    fn digests_ignore_cache_points_and_follow_content() {
        let a = GenerateRequest::user("hi").system("sys");
        let mut b = a.clone();
        b.system
            .push(SystemBlock::CachePoint(CachePoint::default()));
        let (pa, pb) = (
            prefixes(&a, &CharEstimate, &NoMemo).0,
            prefixes(&b, &CharEstimate, &NoMemo).0,
        );
        assert_eq!(pa[0].digest, pb[0].digest);
        let c = GenerateRequest::user("hi").system("other");
        assert_ne!(
            prefixes(&c, &CharEstimate, &NoMemo).0[0].digest,
            pa[0].digest
        );
    }

    /// A memo holding everything it is given.
    struct Remember(std::collections::HashMap<u128, Digested>);

    impl DigestMemo for Remember {
        fn digested(&self, key: u128) -> Option<Digested> {
            self.0.get(&key).cloned()
        }
    }

    #[test]
    fn memoised_digests_equal_fresh_ones_and_only_new_segments_are_learned() {
        let first = GenerateRequest::user("one")
            .system(long(500))
            .system(long(20));
        let (fresh, learned) = prefixes(&first, &CharEstimate, &NoMemo);
        assert_eq!(learned.len(), 3);
        let memo = Remember(learned.into_iter().collect());
        let mut second = first.clone();
        second.messages.push(Message::assistant("two"));
        second.messages.push(Message::user("three"));
        let (again, learned) = prefixes(&second, &CharEstimate, &memo);
        assert_eq!(learned.len(), 2, "only the two new messages are digested");
        assert_eq!(&again[..3], &fresh[..]);
        assert_eq!(again, prefixes(&second, &CharEstimate, &NoMemo).0);
    }

    #[test]
    fn a_task_step_places_a_checkpoint_and_a_one_off_does_not() {
        let (model, config) = sonnet();
        let req = GenerateRequest::user("question").system(long(2000));
        assert!(
            run(&req, model, &config).0.checkpoints.is_empty(),
            "no reuse expected, no write premium paid"
        );
        let task = req.clone().task("t-1");
        let (plan, reasons) = run(&task, model, &config);
        assert!(!plan.checkpoints.is_empty());
        assert!(
            reasons
                .iter()
                .any(|r| matches!(r, Reason::CachePointsPlaced { .. }))
        );
    }

    #[test]
    fn small_prefixes_and_non_caching_models_get_nothing() {
        let (model, config) = sonnet();
        let req = GenerateRequest::user("q").system("short").task("t");
        assert!(run(&req, model, &config).0.checkpoints.is_empty());
        let mut c = Config::default();
        if let Some(crate::config::ModelConfig::Bedrock(b)) = c.models.get_mut(model) {
            b.prompt_cache = None;
        }
        let mut pinned = GenerateRequest::user("q").system(long(2000));
        pinned
            .system
            .push(SystemBlock::CachePoint(CachePoint::default()));
        let (plan, reasons) = run(&pinned, model, &c);
        assert!(plan.checkpoints.is_empty());
        assert!(
            reasons
                .iter()
                .any(|r| matches!(r, Reason::CachePointsChanged { removed: 1, .. }))
        );
    }

    #[test]
    fn pinned_checkpoints_are_kept_fixed_and_reported() {
        let (model, config) = sonnet();
        let mut req = GenerateRequest::new(vec![Message::user(long(10))]);
        for i in 0..6 {
            req.system.push(SystemBlock::Text(long(300 + i)));
            req.system.push(SystemBlock::CachePoint(CachePoint {
                ttl: Some(if i == 5 {
                    CacheTtl::OneHour
                } else {
                    CacheTtl::FiveMinutes
                }),
            }));
        }
        let (plan, reasons) = run(&req, model, &config);
        assert_eq!(plan.checkpoints.len(), 4);
        assert!(plan.checkpoints.windows(2).all(|w| w[0].ttl >= w[1].ttl));
        assert!(
            reasons
                .iter()
                .any(|r| matches!(r, Reason::CachePointsChanged { removed: 2, .. }))
        );
    }

    #[test]
    fn a_models_own_checkpoint_maximum_is_kept() {
        let (model, _) = sonnet();
        let config = Config::from_toml_str(&format!(
            "[models.\"{model}\"]\nprompt_cache = {{ min_tokens = 1024, ttls = [\"5m\"], tools = true, max_checkpoints = 2 }}\n"
        ))
        .unwrap();
        let mut req = GenerateRequest::new(vec![Message::user(long(10))]);
        for i in 0..3 {
            req.system.push(SystemBlock::Text(long(300 + i)));
            req.system
                .push(SystemBlock::CachePoint(CachePoint::default()));
        }
        let (plan, reasons) = run(&req, model, &config);
        assert_eq!(plan.checkpoints.len(), 2);
        assert!(reasons.iter().any(|r| matches!(
            r,
            Reason::CachePointsChanged {
                removed: 1,
                why: CacheChange::TooMany { max: 2 }
            }
        )));
    }

    #[test]
    fn opting_out_places_nothing() {
        let (model, config) = sonnet();
        let mut req = GenerateRequest::user("q").system(long(2000)).task("t");
        req.cache = CacheMode::Off;
        let (plan, reasons) = run(&req, model, &config);
        assert!(plan.checkpoints.is_empty());
        assert!(reasons.contains(&Reason::CacheOptOut));
    }
}
