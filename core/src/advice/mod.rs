//! Advice from recorded traffic: concrete changes to a configuration, ranked by their projected
//! monthly saving, each with its risk and the evidence behind it (`laneway advise`,
//! `Router::advice`).
//!
//! A trace (or the live router's recent calls) is folded into a [`TraceSummary`] as a stream;
//! [`advise`] then prices the recorded usage as each change would have served it, with the
//! configuration's own prices ([`crate::cost`]), and projects the difference over a month of
//! all calls (the sample's share undone). Each change is judged alone: two changes to one
//! class do not add up exactly. What the trace cannot show (a reservation without a reserved
//! price, a family's quality at another threshold, another SageMaker instance) is listed as
//! not assessed, never guessed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::telemetry::trace_summary::{
    CacheOpportunity, ClassSummary, LoadCount, LoadKey, ServedKey, TraceSummary, UsageTotals,
    met_objective,
};

use crate::config::Config;
use crate::cost::Served;
use crate::types::{Api, ProfileScope, ServiceTier, Usage};

/// What a change touches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChangeKind {
    /// Send a class at another tier (`[slo_tiers]`).
    Tier {
        /// The SLO class.
        class: String,
        /// The tier its calls were served at (the most used).
        from: String,
        /// The tier proposed.
        to: String,
    },
    /// Place prompt-cache checkpoints at a model's recorded shared prefixes.
    CacheCheckpoints {
        /// The SLO class whose calls sent them.
        class: String,
        /// The model.
        model: String,
    },
    /// Let a class's calls without residency use the global profile.
    GlobalProfile {
        /// The SLO class.
        class: String,
    },
    /// Spread a bursty class over more regions (or a cross-region profile).
    SpreadRegions {
        /// The SLO class.
        class: String,
        /// The one region it was served in.
        region: String,
    },
}

/// How likely a change is to cost the class its objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// The new lane's expected latency is within the class's objective.
    Low,
    /// Its median is within the objective, its tail is not.
    Medium,
    /// Its median misses the objective.
    High,
}

/// One proposed change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// What changes.
    pub change: ChangeKind,
    /// The change in configuration terms.
    pub action: String,
    /// The change as a table merged over the configuration (TOML's shape, as JSON), where one
    /// expresses it: what `laneway advise --verify` replays.
    pub patch: Option<serde_json::Value>,
    /// Projected saving over a month of all calls, USD (negative: it costs more).
    pub monthly_saving_usd: f64,
    /// The saving over the recorded calls themselves, USD.
    pub recorded_saving_usd: f64,
    /// Its risk to the class's objective.
    pub risk: Risk,
    /// Why the risk is what it is.
    pub risk_reason: String,
    /// Figures behind it, each a line a reader can check.
    pub evidence: Vec<String>,
}

/// What the trace says, ranked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// Calls the advice rests on, and the share of all calls they were.
    pub calls: u64,
    /// The sampled share (1: every call).
    pub sample: f64,
    /// The recorded period, milliseconds.
    pub period_ms: u64,
    /// The recorded calls' cost projected over a month of all calls, USD.
    pub monthly_cost_usd: f64,
    /// Per class: calls, attainment, cost.
    pub classes: BTreeMap<String, ClassFigures>,
    /// The changes, the largest saving first, those that cost more (to meet an objective)
    /// after.
    pub changes: Vec<Change>,
    /// What was not assessed, and why.
    pub not_assessed: Vec<String>,
}

/// One class's figures in the advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    /// Calls recorded.
    pub calls: u64,
    /// Share that met its objective.
    pub attainment: Option<f64>,
    /// Cost of the recorded calls, USD.
    pub cost_usd: f64,
    /// First-token time p50 and p99, milliseconds.
    pub ttft_p50_ms: Option<f64>,
    /// First-token time p99, milliseconds.
    pub ttft_p99_ms: Option<f64>,
    /// Busiest minute against the mean.
    pub peak_to_mean: f64,
}

/// Prefixes shorter than this are not worth a checkpoint on any Bedrock model.
const MIN_CACHE_TOKENS: u64 = 1024;

/// The cost of `totals` served at `key`, with the tier and scope replaced as given (the mean
/// call's usage priced, times the calls).
fn priced(
    config: &Config,
    key: &ServedKey,
    totals: &UsageTotals,
    tier: Option<ServiceTier>,
    scope: Option<&ProfileScope>,
) -> Option<f64> {
    let model = config.models.get(&key.model)?;
    let usage = totals.mean_usage();
    let served = Served {
        region: Some(&key.region),
        tier,
        profile: scope,
    };
    Some(
        crate::cost::cost_of_call(model.price(), &config.pricing, &usage, served)
            * totals.calls as f64,
    )
}

fn tier_of(key: &ServedKey) -> Option<ServiceTier> {
    key.tier.as_deref().and_then(ServiceTier::named)
}

fn scope_of(config: &Config, key: &ServedKey) -> Option<ProfileScope> {
    key.scope.as_deref().and_then(|s| config.profile_scope(s))
}

/// The risk of serving a class's calls at `tier` of `model`, from the tier's latency prior
/// against the class's TTFT target.
fn latency_risk(
    config: &Config,
    model: &str,
    tier: ServiceTier,
    target_ms: Option<u64>,
) -> (Risk, String) {
    let api = config
        .models
        .get(model)
        .map_or(Api::Converse, |m| m.default_api());
    let prior = config.latency_prior(model, Some(tier), api);
    let (p50, p99) = (
        prior.ttft.as_millis() as u64,
        prior.ttft_p99.as_millis() as u64,
    );
    match target_ms {
        None => (
            Risk::Low,
            format!("no TTFT target; {tier} first token p50 {p50} ms, p99 {p99} ms"),
        ),
        Some(t) if p99 <= t => (
            Risk::Low,
            format!("{tier} first token p99 {p99} ms is within the {t} ms target"),
        ),
        Some(t) if p50 <= t => (
            Risk::Medium,
            format!(
                "{tier} first token p50 {p50} ms meets the {t} ms target, p99 {p99} ms does not"
            ),
        ),
        Some(t) => (
            Risk::High,
            format!("{tier} first token p50 {p50} ms misses the {t} ms target"),
        ),
    }
}

/// Ranks the changes a summary of recorded calls supports under `config`.
pub fn advise(summary: &TraceSummary, config: &Config) -> Advice {
    let mut changes = Vec::new();
    let mut classes = BTreeMap::new();
    let mut recorded_cost = 0.0;
    for (name, class) in &summary.classes {
        recorded_cost += class.cost_usd();
        classes.insert(
            name.clone(),
            ClassFigures {
                calls: class.calls,
                attainment: class.attainment(),
                cost_usd: class.cost_usd(),
                ttft_p50_ms: class.ttft_quantile(0.5),
                ttft_p99_ms: class.ttft_quantile(0.99),
                peak_to_mean: class.peak_to_mean(),
            },
        );
        changes.extend(tier_change(summary, config, name, class));
        changes.extend(global_profile(summary, config, name, class));
        changes.extend(spread_regions(config, name, class));
    }
    for ((model, class), op) in &summary.cache {
        if let Some(c) = summary
            .classes
            .get(class)
            .and_then(|cs| cache_change(summary, config, class, cs, model, op))
        {
            changes.push(c);
        }
    }
    changes.sort_by(|a, b| {
        let gain = |c: &Change| c.monthly_saving_usd > 0.0;
        gain(b).cmp(&gain(a)).then(
            a.risk
                .cmp(&b.risk)
                .then_with(|| b.monthly_saving_usd.total_cmp(&a.monthly_saving_usd)),
        )
    });
    Advice {
        calls: summary.calls,
        sample: summary.sample.unwrap_or(1.0),
        period_ms: summary.period_ms(),
        monthly_cost_usd: summary.monthly(recorded_cost),
        classes,
        changes,
        not_assessed: vec![
            "reservations: the configuration has no reserved (per TPM-month) price to weigh a reservation's break-even utilisation against".into(),
            "a family's routing threshold: the trace keeps each call's scores, but no quality judgement of another variant's answer (use shadow mode's figures)".into(),
            "SageMaker instance types: the trace has no instance-hour prices or per-instance load".into(),
        ],
    }
}

/// The cheapest tier with an acceptable risk for a class, against the tier it was served at.
fn tier_change(
    summary: &TraceSummary,
    config: &Config,
    name: &str,
    class: &ClassSummary,
) -> Option<Change> {
    let (from_key, _) = class.served.iter().max_by_key(|(_, u)| u.calls)?;
    let from = tier_of(from_key)?;
    let mut best: Option<(ServiceTier, f64, f64, Risk, String)> = None;
    for to in [
        ServiceTier::FLEX,
        ServiceTier::STANDARD,
        ServiceTier::PRIORITY,
    ] {
        if to == from {
            continue;
        }
        let (mut now, mut then) = (0.0, 0.0);
        let mut all_take_it = true;
        for (key, totals) in &class.served {
            let offers = config
                .models
                .get(&key.model)
                .is_some_and(|m| m.tiers().contains(&to));
            all_take_it &= offers;
            let scope = scope_of(config, key);
            now += priced(config, key, totals, tier_of(key), scope.as_ref())?;
            then += priced(
                config,
                key,
                totals,
                if offers { Some(to) } else { tier_of(key) },
                scope.as_ref(),
            )?;
        }
        if !all_take_it || then >= now {
            continue;
        }
        let (risk, why) = latency_risk(config, &from_key.model, to, class.ttft_target_ms);
        if risk == Risk::High {
            continue;
        }
        if best.as_ref().is_none_or(|b| now - then > b.1 - b.2) {
            best = Some((to, now, then, risk, why));
        }
    }
    let (to, now, then, risk, risk_reason) = best?;
    let saving = now - then;
    Some(Change {
        change: ChangeKind::Tier {
            class: name.into(),
            from: from.to_string(),
            to: to.to_string(),
        },
        action: format!("[slo_tiers] {name} = [\"{to}\"]"),
        patch: Some(serde_json::json!({ "slo_tiers": { name: [to.as_str()] } })),
        monthly_saving_usd: summary.monthly(saving),
        recorded_saving_usd: saving,
        risk,
        risk_reason,
        evidence: vec![
            format!(
                "{} answered calls of class {name} served at {from}: ${now:.4} at {from}, ${then:.4} at {to}",
                class.ok
            ),
            format!(
                "attainment {} over {} judged calls",
                pct(class.attainment()),
                class.judged
            ),
        ],
    })
}

/// The global profile for a class's calls that had no residency, where it costs less.
fn global_profile(
    summary: &TraceSummary,
    config: &Config,
    name: &str,
    class: &ClassSummary,
) -> Option<Change> {
    if class.anywhere == 0 || class.calls == 0 {
        return None;
    }
    let free_share = class.anywhere as f64 / class.calls as f64;
    let (mut now, mut then) = (0.0, 0.0);
    for (key, totals) in &class.served {
        let scope = scope_of(config, key);
        if scope == Some(ProfileScope::Global) {
            continue;
        }
        let has_global = config
            .models
            .get(&key.model)
            .is_some_and(|m| m.profiles().contains(&ProfileScope::Global));
        if !has_global {
            continue;
        }
        let tier = tier_of(key);
        now += priced(config, key, totals, tier, scope.as_ref())? * free_share;
        then += priced(config, key, totals, tier, Some(&ProfileScope::Global))? * free_share;
    }
    let saving = now - then;
    (saving > 1e-9).then(|| Change {
        change: ChangeKind::GlobalProfile { class: name.into() },
        action: format!("let class {name}'s calls without residency use the global profile"),
        patch: None,
        monthly_saving_usd: summary.monthly(saving),
        recorded_saving_usd: saving,
        risk: Risk::Low,
        risk_reason: "the same model and tier; only where it runs changes".into(),
        evidence: vec![format!(
            "{} of {} calls of class {name} had no residency; their in-Region and geographic cost ${now:.4}, globally ${then:.4}",
            class.anywhere, class.calls
        )],
    })
}

/// A bursty class served in one region whose attempts were throttled.
fn spread_regions(config: &Config, name: &str, class: &ClassSummary) -> Option<Change> {
    if class.regions.len() != 1 {
        return None;
    }
    let region = class.regions.iter().next()?.clone();
    let throttled = class.failed_attempts.get("throttled").copied().unwrap_or(0)
        + class
            .failed_attempts
            .get("overloaded")
            .copied()
            .unwrap_or(0);
    let peak = class.peak_to_mean();
    if throttled == 0 || peak < 2.0 {
        return None;
    }
    let others: Vec<&str> = class
        .served
        .keys()
        .filter_map(|k| config.models.get(&k.model))
        .flat_map(|m| m.regions().iter().map(String::as_str))
        .filter(|r| *r != region)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let shortfall = 1.0 - class.attainment().unwrap_or(1.0);
    Some(Change {
        change: ChangeKind::SpreadRegions {
            class: name.into(),
            region: region.clone(),
        },
        action: if others.is_empty() {
            format!("let class {name} use a cross-region profile instead of {region} alone")
        } else {
            format!(
                "let class {name} use {} as well as {region} (a residency of the geography, not one region)",
                others.join(", ")
            )
        },
        patch: None,
        monthly_saving_usd: 0.0,
        recorded_saving_usd: 0.0,
        risk: Risk::Low,
        risk_reason: format!(
            "costs the same; {:.1}% of its judged calls missed their objective",
            shortfall * 100.0
        ),
        evidence: vec![
            format!(
                "{throttled} throttled attempts over {} calls, all served in {region}",
                class.calls
            ),
            format!("busiest minute {peak:.1} times the mean minute"),
            format!(
                "attainment {} over {} judged calls",
                pct(class.attainment()),
                class.judged
            ),
        ],
    })
}

/// Checkpoints at a model's recorded prefixes, where the reads would have paid for the writes.
fn cache_change(
    summary: &TraceSummary,
    config: &Config,
    name: &str,
    class: &ClassSummary,
    model: &str,
    op: &CacheOpportunity,
) -> Option<Change> {
    let m = config.models.get(model)?;
    let cache = m.prompt_cache()?;
    if op.reads == 0
        || op.read_tokens / op.reads.max(1) < MIN_CACHE_TOKENS.max(u64::from(cache.min_tokens))
    {
        return None;
    }
    // Priced where the class's calls of this model were served the most.
    let (key, _) = class
        .served
        .iter()
        .filter(|(k, _)| k.model == model)
        .max_by_key(|(_, u)| u.calls)?;
    let scope = scope_of(config, key);
    let probe = Usage {
        input_tokens: 1000,
        ..Usage::default()
    };
    let rates = m.price().rates(
        &config.pricing,
        &probe,
        Served {
            region: Some(&key.region),
            tier: tier_of(key),
            profile: scope.as_ref(),
        },
    );
    let read_saving = op.read_tokens as f64 / 1000.0 * (rates.input - rates.cache_read);
    let write_premium = op.write_tokens as f64 / 1000.0 * (rates.cache_write - rates.input);
    let saving = read_saving - write_premium;
    (saving > 0.0).then(|| Change {
        change: ChangeKind::CacheCheckpoints {
            class: name.into(),
            model: model.into(),
        },
        action: if config.prompt_cache.enabled {
            format!("checkpoint the shared prefixes of class {name} on {model} (its reuse pays: see the evidence)")
        } else {
            "[prompt_cache] enabled = true".into()
        },
        patch: (!config.prompt_cache.enabled)
            .then(|| serde_json::json!({ "prompt_cache": { "enabled": true } })),
        monthly_saving_usd: summary.monthly(saving),
        recorded_saving_usd: saving,
        risk: Risk::Low,
        risk_reason: "cache reads also shorten the first token".into(),
        evidence: vec![
            format!(
                "{} shared prefixes sent without a checkpoint: {} calls would have read {} tokens from the cache, {} would have written {} tokens",
                op.shared_prefixes, op.reads, op.read_tokens, op.writes, op.write_tokens
            ),
            format!(
                "reads save ${read_saving:.4}, writes cost ${write_premium:.4} more, at ${:.6}/1K input, ${:.6}/1K read, ${:.6}/1K written",
                rates.input, rates.cache_read, rates.cache_write
            ),
        ],
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}
