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
    /// Reserve capacity for a model (the reserved tier).
    Reservation {
        /// The model.
        model: String,
        /// Input tokens per minute reserved.
        input_tokens_per_minute: u64,
        /// Output tokens per minute reserved.
        output_tokens_per_minute: u64,
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
    /// The changes, the lowest risk first and, among those alike, the largest saving.
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
    /// Busiest second's arrivals against the mean second's.
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
    for (model, minutes) in &summary.model_minutes {
        changes.extend(reservation_change(summary, config, model, minutes));
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
    // A saving under half a percent of what the recorded calls cost is noise, not advice.
    changes.retain(|c| {
        c.recorded_saving_usd == 0.0 || c.recorded_saving_usd >= MIN_SAVING_SHARE * recorded_cost
    });
    // The safest first, and among equally safe ones the largest saving: a change that fixes
    // an objective at no cost comes before one that saves money at a risk to an objective.
    changes.sort_by(|a, b| {
        a.risk
            .cmp(&b.risk)
            .then_with(|| b.monthly_saving_usd.total_cmp(&a.monthly_saving_usd))
    });
    Advice {
        calls: summary.calls,
        sample: summary.sample.unwrap_or(1.0),
        period_ms: summary.period_ms(),
        monthly_cost_usd: summary.monthly(recorded_cost),
        classes,
        changes,
        not_assessed: unpriced_reservations(summary, config)
            .into_iter()
            .chain([
            "a family's routing threshold: the trace keeps each call's scores, but no quality judgement of another variant's answer (use shadow mode's figures)".into(),
            "SageMaker instance types: the trace has no instance-hour prices or per-instance load".into(),
        ])
        .collect(),
    }
}

/// The least share of the recorded calls' cost a change must save to be proposed.
const MIN_SAVING_SHARE: f64 = 0.005;

/// Reservations are sold with at least this many input and output tokens per minute.
const MIN_RESERVED_TPM: (u64, u64) = (100_000, 10_000);

/// A month, in minutes, as reservations are priced.
const MONTH_MINUTES: f64 = 30.0 * 24.0 * 60.0;

/// The models the trace used that offer the reserved tier but have no reserved price.
fn unpriced_reservations(summary: &TraceSummary, config: &Config) -> Vec<String> {
    let models: Vec<&str> = summary
        .model_minutes
        .keys()
        .filter(|m| {
            config.models.get(*m).is_some_and(|c| {
                c.tiers().contains(&ServiceTier::RESERVED) && c.price().reserved.is_none()
            })
        })
        .map(String::as_str)
        .collect();
    if models.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "reservations for {}: no reserved price (`price.reserved`, per 1,000 TPM a month) to weigh a reservation's break-even utilisation against",
        models.join(", ")
    )]
}

/// The reservation that would have saved the most over the recorded minutes: for sizes at
/// the quartiles and the 90th percentile of the model's tokens per minute (all calls, the
/// sample undone; idle minutes count), the on-demand price of the tokens it would have
/// covered against its fixed fee.
fn reservation_change(
    summary: &TraceSummary,
    config: &Config,
    model: &str,
    minutes: &std::collections::BTreeMap<u64, (u64, u64)>,
) -> Option<Change> {
    let m = config.models.get(model)?;
    let fee = m.price().reserved?;
    if !m.tiers().contains(&ServiceTier::RESERVED) {
        return None;
    }
    let (first, last) = summary.span_ms?;
    let span = (first / 60_000)..=(last / 60_000);
    let n = span.clone().count() as f64;
    let weight = summary.weight();
    let series = |pick: fn(&(u64, u64)) -> u64| -> Vec<f64> {
        span.clone()
            .map(|k| minutes.get(&k).map_or(0.0, |t| pick(t) as f64 * weight))
            .collect()
    };
    let (ins, outs) = (series(|t| t.0), series(|t| t.1));
    // What the covered tokens would have cost on demand: the standard tier, where overflow goes.
    let probe = Usage {
        input_tokens: 1000,
        ..Usage::default()
    };
    let rates = m.price().rates(
        &config.pricing,
        &probe,
        Served {
            region: None,
            tier: Some(ServiceTier::STANDARD),
            profile: None,
        },
    );
    let quantile = |v: &[f64], q: f64| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    let round_up = |v: f64, min: u64| (v.ceil() as u64).div_ceil(1000).max(min / 1000) * 1000;
    let mut best: Option<(u64, u64, f64, f64, f64, f64, f64)> = None;
    for q in [0.25, 0.5, 0.75, 0.9] {
        let r_in = round_up(quantile(&ins, q), MIN_RESERVED_TPM.0);
        let r_out = round_up(quantile(&outs, q), MIN_RESERVED_TPM.1);
        let covered = |v: &[f64], r: u64| v.iter().map(|x| x.min(r as f64)).sum::<f64>();
        let (c_in, c_out) = (covered(&ins, r_in), covered(&outs, r_out));
        let value = c_in / 1000.0 * rates.input + c_out / 1000.0 * rates.output;
        let cost = (r_in as f64 / 1000.0 * fee.input_per_1k_tpm_month
            + r_out as f64 / 1000.0 * fee.output_per_1k_tpm_month)
            * n
            / MONTH_MINUTES;
        let full = (r_in as f64 * rates.input + r_out as f64 * rates.output) / 1000.0 * n;
        let used = value / full.max(1e-12);
        let saving = value - cost;
        if best.as_ref().is_none_or(|b| saving > b.2) {
            best = Some((
                r_in,
                r_out,
                saving,
                cost,
                value,
                used,
                cost / full.max(1e-12),
            ));
        }
    }
    let (r_in, r_out, saving, cost, value, used, break_even) = best?;
    if saving <= 0.0 {
        return None;
    }
    let (risk, risk_reason) = if used < break_even * 1.2 {
        (
            Risk::Medium,
            format!(
                "a 1- or 3-month commitment used {:.0}% against a break-even of {:.0}%: a small drop in traffic loses it",
                used * 100.0,
                break_even * 100.0
            ),
        )
    } else {
        (
            Risk::Low,
            format!(
                "used {:.0}% against a break-even of {:.0}%; above it, calls overflow to standard on their own",
                used * 100.0,
                break_even * 100.0
            ),
        )
    };
    // The recorded saving is over the recorded calls only (the sample undone for sizing).
    let recorded = saving / weight;
    Some(Change {
        change: ChangeKind::Reservation {
            model: model.into(),
            input_tokens_per_minute: r_in,
            output_tokens_per_minute: r_out,
        },
        action: format!(
            "reserve {r_in} input and {r_out} output tokens per minute of {model}: [models.\"{model}\".reserved] input_tokens_per_minute = {r_in}, output_tokens_per_minute = {r_out}"
        ),
        // A replay prices reserved tokens per token; the fee is what this weighs.
        patch: None,
        monthly_saving_usd: summary.monthly(recorded),
        recorded_saving_usd: recorded,
        risk,
        risk_reason,
        evidence: vec![
            format!(
                "{} minutes recorded: input p50 {:.0}, p90 {:.0} tokens a minute; output p50 {:.0}, p90 {:.0}",
                n,
                quantile(&ins, 0.5),
                quantile(&ins, 0.9),
                quantile(&outs, 0.5),
                quantile(&outs, 0.9)
            ),
            format!(
                "the tokens it would have covered cost ${value:.2} on demand; its fee for those minutes ${cost:.2} (${}/1K input TPM and ${}/1K output TPM a month)",
                fee.input_per_1k_tpm_month, fee.output_per_1k_tpm_month
            ),
            format!(
                "break-even utilisation {:.0}%, recorded {:.0}%",
                break_even * 100.0,
                used * 100.0
            ),
        ],
    })
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
    // Every tier the class's models offer (tiers are data: a declared one counts), but the
    // reserved tier, which needs a reservation (`reservation_change` weighs that).
    let offered: std::collections::BTreeSet<ServiceTier> = class
        .served
        .keys()
        .filter_map(|k| config.models.get(&k.model))
        .flat_map(|m| m.tiers().iter().copied())
        .collect();
    for to in offered {
        if to == from || to == ServiceTier::RESERVED {
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
    // Bursty: a second with at least ten calls, twice the class's mean rate or more.
    let (peak, busiest) = (class.peak_to_mean(), class.busiest_second());
    if throttled == 0 || busiest < 10 || peak < 2.0 {
        return None;
    }
    // Where its calls may go: anywhere when one had no residency, else within every residency
    // its calls named (a geography's regions, or the regions listed).
    let allowed = |r: &str| {
        class.anywhere > 0
            || class.residencies.iter().all(|res| {
                if let Some(g) = res.strip_prefix("geography:") {
                    crate::types::Geography::new(g).is_ok_and(|g| config.in_geography(r, &g))
                } else {
                    res.strip_prefix("regions:")
                        .is_some_and(|list| list.split('+').any(|x| x == r))
                }
            })
    };
    let others: Vec<&str> = class
        .served
        .keys()
        .filter_map(|k| config.models.get(&k.model))
        .flat_map(|m| m.regions().iter().map(String::as_str))
        .filter(|r| *r != region && allowed(r))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if others.is_empty() {
        // Nothing its residency allows: spreading is not this advice's to give.
        return None;
    }
    let unconfigured: Vec<&str> = others
        .iter()
        .copied()
        .filter(|r| !config.regions.iter().any(|c| c.name == *r))
        .collect();
    let shortfall = 1.0 - class.attainment().unwrap_or(1.0);
    Some(Change {
        change: ChangeKind::SpreadRegions {
            class: name.into(),
            region: region.clone(),
        },
        action: format!(
            "let class {name} use {} as well as {region}, which its residency allows{}",
            others.join(", "),
            if unconfigured.is_empty() {
                String::new()
            } else {
                format!(" (add {} to [[regions]])", unconfigured.join(", "))
            }
        ),
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
            format!("{busiest} calls arrived in its busiest second, {peak:.1} times its mean rate"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::record::{CallRecord, Header, Line};

    fn call(at_ms: u64, class: &str, tier: &str, input: u32, output: u32) -> Line {
        Line::Call(Box::new(CallRecord {
            at_ms,
            class: class.into(),
            model: Some("amazon.nova-lite-v1:0".into()),
            target: Some("amazon.nova-lite-v1:0".into()),
            region: Some("us-east-1".into()),
            tier: Some(tier.into()),
            served_tier: Some(tier.into()),
            input_tokens: input,
            output_tokens: output,
            ttft_ms: Some(300.0),
            total_ms: 900.0,
            cost_usd: 0.001,
            ..CallRecord::default()
        }))
    }

    fn summary(lines: impl IntoIterator<Item = Line>) -> TraceSummary {
        let mut s = TraceSummary::new();
        s.add(&Line::Header(Header {
            schema: 1,
            config_digest: "c".into(),
            sample: 1.0,
            started_ms: 0,
        }));
        for l in lines {
            s.add(&l);
        }
        s
    }

    #[test]
    fn steady_volume_gets_a_reservation_sized_to_it_and_its_break_even() {
        let config = Config::from_toml_str(
            r#"
            [models."amazon.nova-lite-v1:0"]
            tiers = ["priority", "standard", "flex", "reserved"]
            [models."amazon.nova-lite-v1:0".price.reserved]
            input_per_1k_tpm_month = 1.0
            output_per_1k_tpm_month = 4.0
            "#,
        )
        .unwrap();
        // Two hours, a call a second of 4,000 input and 400 output tokens: 240,000 input and
        // 24,000 output tokens a minute, steadily.
        let s = summary((0..7200u64).map(|i| {
            call(
                1_796_400_000_000 + i * 1000,
                "standard",
                "standard",
                4000,
                400,
            )
        }));
        let advice = advise(&s, &config);
        let r = advice
            .changes
            .iter()
            .find(|c| matches!(c.change, ChangeKind::Reservation { .. }))
            .unwrap_or_else(|| panic!("{advice:#?}"));
        let ChangeKind::Reservation {
            input_tokens_per_minute,
            output_tokens_per_minute,
            ..
        } = r.change
        else {
            unreachable!()
        };
        assert_eq!(
            (input_tokens_per_minute, output_tokens_per_minute),
            (240_000, 24_000)
        );
        assert!(r.monthly_saving_usd > 0.0 && r.risk == Risk::Low, "{r:#?}");
        assert!(r.evidence.iter().any(|e| e.contains("break-even")));
        // Without a reserved price it is not assessed, and says so.
        let unpriced = Config::from_toml_str(
            "[models.\"amazon.nova-lite-v1:0\"]\ntiers = [\"standard\", \"reserved\"]\n",
        )
        .unwrap();
        let unpriced = advise(&s, &unpriced);
        assert!(
            !unpriced
                .changes
                .iter()
                .any(|c| matches!(c.change, ChangeKind::Reservation { .. }))
        );
        assert!(
            unpriced.not_assessed[0].contains("amazon.nova-lite-v1:0"),
            "{:?}",
            unpriced.not_assessed
        );
    }

    #[test]
    fn a_fee_above_what_the_tokens_cost_is_not_proposed() {
        let config = Config::from_toml_str(
            r#"
            [models."amazon.nova-lite-v1:0"]
            tiers = ["standard", "reserved"]
            [models."amazon.nova-lite-v1:0".price.reserved]
            input_per_1k_tpm_month = 1000.0
            output_per_1k_tpm_month = 4000.0
            "#,
        )
        .unwrap();
        let s = summary((0..600u64).map(|i| {
            call(
                1_796_400_000_000 + i * 1000,
                "standard",
                "standard",
                4000,
                400,
            )
        }));
        assert!(
            !advise(&s, &config)
                .changes
                .iter()
                .any(|c| matches!(c.change, ChangeKind::Reservation { .. }))
        );
    }

    #[test]
    fn the_safest_change_comes_first_then_the_largest_saving() {
        let config = Config::default();
        // Background work at priority, and an interactive class at priority with a target.
        let lines = (0..200u64).flat_map(|i| {
            let at = 1_796_400_000_000 + i * 500;
            let mut interactive = call(at, "interactive", "priority", 2000, 200);
            if let Line::Call(c) = &mut interactive {
                c.ttft_target_ms = Some(800);
            }
            [call(at, "background", "priority", 2000, 200), interactive]
        });
        let advice = advise(&summary(lines), &config);
        let risks: Vec<Risk> = advice.changes.iter().map(|c| c.risk).collect();
        assert!(risks.windows(2).all(|w| w[0] <= w[1]), "{risks:?}");
        assert!(
            matches!(&advice.changes[0].change, ChangeKind::Tier { class, to, .. } if class == "background" && to == "flex"),
            "{advice:#?}"
        );
    }
}
