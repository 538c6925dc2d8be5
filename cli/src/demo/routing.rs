//! The demo's variant-routing lane: held-out prompts whose outcomes are known, through the
//! `claude` family's default router and through its default variant alone, side by side.
//!
//! The prompts are ZeroEval's GSM8K, CRUX and MATH-L5 questions in the 20% split no shipped
//! model trained on (`data/zeroeval`), with whether Claude 3 Haiku and Claude 3.5 Sonnet
//! answered each correctly. Quality maps what served to those outcomes: Haiku 4.5 to Claude 3
//! Haiku's, Sonnet 4.5 and Opus 4.5 to Claude 3.5 Sonnet's (Opus is taken to be at least as
//! good as Sonnet). These are figures of another model pair, not of Claude 4.5.

use futures::{StreamExt, stream};
use laneway::classifier::data::is_held_out;
use laneway::{GenerateRequest, Router};

const OUTCOMES: &str = include_str!("../../../data/zeroeval/zeroeval.jsonl");
const HAIKU_OUTCOME: &str = "claude-3-haiku-20240307";
const SONNET_OUTCOME: &str = "claude-3-5-sonnet-20240620";
/// Prompts sent per side: held-out rows spread evenly over the file (GSM8K, CRUX and MATH-L5
/// in turn), about this many.
const PROMPTS: usize = 200;

/// One side's figures.
pub(super) struct Side {
    pub name: &'static str,
    pub calls: usize,
    pub good: usize,
    pub cost_usd: f64,
    pub served: std::collections::BTreeMap<String, usize>,
    pub errors: Vec<String>,
}

/// The held-out prompts and whether the (cheap, strong) models got each right.
fn prompts() -> Vec<(String, bool, bool)> {
    let held: Vec<(String, bool, bool)> = OUTCOMES
        .lines()
        .filter_map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).ok()?;
            let prompt = row["prompt"].as_str()?.to_string();
            let outcomes = &row["outcomes"];
            let cheap = outcomes[HAIKU_OUTCOME].as_bool()?;
            let strong = outcomes[SONNET_OUTCOME].as_bool()?;
            is_held_out(&prompt).then_some((prompt, cheap, strong))
        })
        .collect();
    let step = held.len().div_ceil(PROMPTS).max(1);
    held.into_iter().step_by(step).collect()
}

/// Sends every prompt through the `claude` family (`routed`) or its default variant.
async fn side(router: &Router, name: &'static str, routed: bool, default: &str) -> Side {
    let rows = prompts();
    let answers: Vec<_> = stream::iter(rows.iter())
        .map(|(prompt, cheap, strong)| async move {
            let request = GenerateRequest::user(prompt.clone()).max_tokens(64);
            let request = if routed {
                request.family("claude")
            } else {
                request.model(default)
            };
            let answer = router.generate(request).await;
            (answer, *cheap, *strong)
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut out = Side {
        name,
        calls: rows.len(),
        good: 0,
        cost_usd: 0.0,
        served: Default::default(),
        errors: Vec::new(),
    };
    for (answer, cheap, strong) in answers {
        match answer {
            Ok(r) => {
                let on_haiku = r.decision.model.contains("haiku");
                out.good += usize::from(if on_haiku { cheap } else { strong });
                out.cost_usd += r.cost_usd;
                *out.served.entry(r.decision.model.clone()).or_default() += 1;
            }
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    out
}

/// Runs both sides and prints them; returns the errors.
pub(super) async fn run(router: &Router, config: &laneway::Config) -> Vec<String> {
    let Some(family) = config.families.get("claude") else {
        return vec!["the demo's configuration has no claude family".into()];
    };
    let default = family.default_variant().to_string();
    let routed = side(
        router,
        "routed (the family's default router)",
        true,
        &default,
    )
    .await;
    let plain = side(router, "default variant only", false, &default).await;
    println!(
        "\nVariant routing on {} held-out math and code questions with known outcomes (ZeroEval's \
         GSM8K, CRUX and MATH-L5, the 20% the shipped model did not train on), family claude; \
         quality maps Haiku 4.5 to Claude 3 Haiku's outcome and Sonnet / Opus 4.5 to Claude 3.5 \
         Sonnet's (another model pair's figures):\n",
        routed.calls
    );
    println!(
        "{:<40} {:>14} {:>9}  served",
        "strategy", "cost per call", "quality"
    );
    for s in [&routed, &plain] {
        let served: Vec<String> = s
            .served
            .iter()
            .map(|(m, n)| format!("{} {:.0}%", short(m), *n as f64 / s.calls as f64 * 100.0))
            .collect();
        println!(
            "{:<40} {:>13.6} {:>8.1}%  {}",
            s.name,
            s.cost_usd / s.calls as f64,
            s.good as f64 / s.calls as f64 * 100.0,
            served.join(", ")
        );
    }
    if plain.cost_usd > 0.0 {
        println!(
            "routing: {:+.1}% cost, {:+.1} points of quality against the default variant",
            (routed.cost_usd / plain.cost_usd - 1.0) * 100.0,
            (routed.good as f64 - plain.good as f64) / routed.calls as f64 * 100.0
        );
    }
    routed.errors.into_iter().chain(plain.errors).collect()
}

/// A model id without its vendor prefix and version suffix.
fn short(model: &str) -> &str {
    let bare = model.split_once('.').map_or(model, |(_, rest)| rest);
    bare.split("-2025").next().unwrap_or(bare)
}
