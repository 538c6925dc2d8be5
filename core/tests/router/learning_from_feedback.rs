//! Learning from production, simulated against the emulator: the `nova` family's default router
//! serves a mixed stream of prompts, and a simulated evaluator says whether each answer was
//! good. Partway through, Nova Micro starts failing on one class of prompts (a model update
//! gone wrong, say). The router must notice from feedback alone: the share of that class sent
//! to Micro falls, and the class's quality recovers, within a stated number of calls.
//!
//! The emulator serves every call over HTTP as Bedrock would; the evaluator stands for the
//! caller's own judgement (tests, ratings), which is what feedback carries.

use crate::common;

use laneway::{GenerateRequest, Reason, Router};
use rand::{Rng, SeedableRng};

const MICRO: &str = "amazon.nova-micro-v1:0";
const LITE: &str = "amazon.nova-lite-v1:0";
const PRO: &str = "amazon.nova-pro-v1:0";

/// Calls before Micro breaks, and after.
const BEFORE: usize = 600;
const AFTER: usize = 900;
/// The stated bound: within this many calls after the break (about half of them of the
/// broken class), the class's share on Micro and its quality have recovered.
const RECOVERED_WITHIN: usize = 600;
/// The window the figures are taken over.
const WINDOW: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Extraction and formatting of short texts: the class Micro breaks on.
    Extract,
    /// Everything else: questions, rewrites, explanations.
    Other,
}

fn prompt(rng: &mut rand::rngs::StdRng) -> (Class, String) {
    const PEOPLE: [&str; 6] = [
        "Ana Silva",
        "Wei Zhang",
        "Tom Baker",
        "Priya Nair",
        "Lars Berg",
        "Yuki Sato",
    ];
    const CITIES: [&str; 6] = ["Lisbon", "Osaka", "Denver", "Pune", "Bergen", "Leeds"];
    const TOPICS: [&str; 6] = [
        "photosynthesis",
        "compound interest",
        "TCP handshakes",
        "inflation",
        "vaccines",
        "black holes",
    ];
    let person = PEOPLE[rng.gen_range(0..PEOPLE.len())];
    let city = CITIES[rng.gen_range(0..CITIES.len())];
    let topic = TOPICS[rng.gen_range(0..TOPICS.len())];
    let n = rng.gen_range(2..40);
    if rng.gen_bool(0.5) {
        let text = match rng.gen_range(0..3) {
            0 => format!(
                "Extract the name and city from: \"{person} moved to {city} in {}.\" Reply as JSON.",
                1990 + n
            ),
            1 => format!(
                "List the dates in this note as YYYY-MM-DD: \"Meet {person} on March {n}, then fly to {city}.\""
            ),
            _ => format!(
                "Pull the order number and total out of: \"Order #{n}{n} for {person}, total ${n}.99\""
            ),
        };
        (Class::Extract, text)
    } else {
        let text = match rng.gen_range(0..3) {
            0 => format!("Explain {topic} to a {n}-year-old in three sentences."),
            1 => format!("What is the population of {city}, roughly?"),
            _ => format!(
                "Rewrite this more politely: \"{person}, send the report by day {n} or else.\""
            ),
        };
        (Class::Other, text)
    }
}

/// The simulated evaluator: how often each variant's answer is good, by class, before and
/// after Micro breaks on extraction.
fn success_rate(model: &str, class: Class, broken: bool) -> f64 {
    match (model, class) {
        (MICRO, Class::Extract) if broken => 0.15,
        (MICRO, _) => 0.92,
        (LITE, _) => 0.93,
        (PRO, _) => 0.94,
        (other, _) => panic!("not a nova variant: {other}"),
    }
}

struct Served {
    class: Class,
    model: String,
    good: bool,
}

async fn serve(
    router: &Router,
    rng: &mut rand::rngs::StdRng,
    broken: bool,
    feedback: bool,
) -> Served {
    let (class, text) = prompt(rng);
    let answer = router
        .generate(GenerateRequest::user(text).family("nova").max_tokens(16))
        .await
        .unwrap();
    let model = answer.decision.model.clone();
    let good = rng.gen_bool(success_rate(&model, class, broken));
    if feedback {
        router.feedback(&answer.decision.call_id, good).unwrap();
    }
    Served { class, model, good }
}

/// Of a window's calls of `class`: the share served by Micro, and the share answered well.
fn figures(window: &[Served], class: Class) -> (f64, f64) {
    let of_class: Vec<&Served> = window.iter().filter(|s| s.class == class).collect();
    let n = of_class.len() as f64;
    let micro = of_class.iter().filter(|s| s.model == MICRO).count() as f64;
    let good = of_class.iter().filter(|s| s.good).count() as f64;
    (micro / n, good / n)
}

/// The whole run: `BEFORE` calls, then `AFTER` with Micro broken on extraction; with or
/// without feedback to the router. The same seed gives the same prompts either way.
async fn simulate(seed: u64, feedback: bool) -> (Vec<Served>, Router) {
    let emu = common::emulator().await;
    // The built-in family router, with its default budget, exploration and half-life.
    let router = common::router_with(&emu, common::config("")).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut served = Vec::new();
    for call in 0..BEFORE + AFTER {
        served.push(serve(&router, &mut rng, call >= BEFORE, feedback).await);
    }
    emu.shutdown().await;
    (served, router)
}

#[tokio::test]
async fn a_variant_failing_on_a_class_loses_it_and_quality_recovers() {
    // Another seed: LANEWAY_SIMULATION_SEED (BENCHMARKS.md gives figures over ten).
    let seed = std::env::var("LANEWAY_SIMULATION_SEED").map_or(18, |s| s.parse().unwrap());
    let (served, router) = simulate(seed, true).await;
    let (unheard, _) = simulate(seed, false).await;

    let before = &served[BEFORE - WINDOW..BEFORE];
    let just_after = &served[BEFORE..BEFORE + WINDOW];
    let recovered = &served[BEFORE + RECOVERED_WITHIN - WINDOW..BEFORE + RECOVERED_WITHIN];
    let end = &served[served.len() - WINDOW..];
    let report = |name: &str, w: &[Served]| {
        let (micro, good) = figures(w, Class::Extract);
        let (other_micro, other_good) = figures(w, Class::Other);
        eprintln!(
            "{name:>12}: extraction on Micro {micro:.2}, good {good:.2}; others on Micro {other_micro:.2}, good {other_good:.2}"
        );
        (micro, good, other_micro)
    };
    let (micro_before, good_before, other_before) = report("before", before);
    let (_, good_just_after, _) = report("just after", just_after);
    let (micro_recovered, good_recovered, _) = report("recovered", recovered);
    let (micro_end, good_end, other_end) = report("end", end);
    let (micro_unheard, good_unheard, _) = report(
        "no feedback",
        &unheard[BEFORE + RECOVERED_WITHIN - WINDOW..BEFORE + RECOVERED_WITHIN],
    );
    eprintln!("{:#?}", router.feedback_report()["nova"]);
    // The first call after the break from which the class's last 50 calls on Micro stay
    // under a third of its share before.
    let extraction: Vec<&Served> = served[BEFORE..]
        .iter()
        .filter(|s| s.class == Class::Extract)
        .collect();
    let shares: Vec<f64> = extraction
        .windows(50)
        .map(|w| w.iter().filter(|s| s.model == MICRO).count() as f64 / 50.0)
        .collect();
    let settled = shares
        .iter()
        .rposition(|s| *s >= micro_before / 3.0)
        .map_or(0, |i| i + 50);
    eprintln!("extraction settled off Micro after {settled} of its calls");

    assert!(
        micro_before > 0.3,
        "Micro served extraction before the break"
    );
    let broken: Vec<&Served> = just_after
        .iter()
        .filter(|s| s.class == Class::Extract && s.model == MICRO)
        .collect();
    let broken_good = broken.iter().filter(|s| s.good).count() as f64 / broken.len() as f64;
    assert!(
        broken_good < 0.4,
        "Micro's extraction broke ({broken_good:.2} good)"
    );
    assert!(good_just_after < good_before, "the break shows in quality");
    assert!(
        micro_recovered < micro_before / 3.0 && micro_end < micro_before / 3.0,
        "extraction moved off Micro within {RECOVERED_WITHIN} calls"
    );
    // Served by Lite or Pro, extraction is good 92-95% of the time; a share on Micro or a
    // window's sampling (about 100 calls) may cost a few points.
    assert!(
        good_recovered > 0.82 && good_end > 0.82,
        "extraction's quality recovered within {RECOVERED_WITHIN} calls"
    );
    assert!(
        micro_unheard > micro_before * 0.8 && good_unheard < good_recovered - 0.3,
        "without feedback the router keeps sending extraction to the broken Micro"
    );
    assert!(
        other_end > other_before * 0.5,
        "other prompts kept Micro ({other_before:.2} -> {other_end:.2})"
    );
}

#[tokio::test]
async fn feedback_errors_name_what_is_wrong_and_tasks_give_feedback() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config("")).await;

    let e = router.feedback("not-an-id", true).unwrap_err().to_string();
    assert!(e.contains("call_id"), "{e}");

    // A model asked for by name: no router chose it, so no router learns from it.
    let named = router
        .generate(GenerateRequest::user("Hi").model(PRO).max_tokens(8))
        .await
        .unwrap();
    let e = router
        .feedback(&named.decision.call_id, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no policy learns"), "{e}");

    // A task's outcome reaches the router for each of its routed calls.
    let mut cells = Vec::new();
    for text in [
        "Extract the city from: \"Ana lives in Lisbon.\"",
        "Explain tides briefly.",
    ] {
        let answer = router
            .generate(
                GenerateRequest::user(text)
                    .family("nova")
                    .task("t-1")
                    .max_tokens(8),
            )
            .await
            .unwrap();
        let cell = answer.decision.reasons.iter().find_map(|r| match r {
            Reason::VariantScored { kind, band, .. } => Some((*kind, *band)),
            _ => None,
        });
        cells.push((
            cell.expect("a routed call has a cell"),
            answer.decision.model,
        ));
    }
    assert!(router.finish_task("t-1", false));
    let report = router.feedback_report();
    for ((kind, band), model) in cells {
        let at = router.config().families["nova"]
            .variants
            .iter()
            .position(|v| *v == model)
            .unwrap();
        let outcomes = &report["nova"]
            .iter()
            .find(|c| c.kind == kind && c.band == band)
            .expect("the cell has outcomes")
            .outcomes;
        assert!(
            outcomes.total[at] > 0.0 && outcomes.good[at] == 0.0,
            "{outcomes:?}"
        );
    }
}

/// Shadow mode: the family serves its default variant whatever the router would choose, and
/// the router records per cell what it would have chosen, what that would have cost, and the
/// feedback on the served calls.
#[tokio::test]
async fn shadow_mode_serves_the_default_and_records_what_routing_would_have_done() {
    let emu = common::emulator().await;
    let router = common::router_with(
        &emu,
        common::config("[families.nova]\nrouter = { model = \"builtin\", shadow = true }\n"),
    )
    .await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut would = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..60 {
        let (_, text) = prompt(&mut rng);
        let r = router
            .generate(GenerateRequest::user(text).family("nova").max_tokens(32))
            .await
            .unwrap();
        assert_eq!(
            r.decision.model, LITE,
            "the default variant serves in shadow mode"
        );
        let shadowed = r.decision.reasons.iter().find_map(|reason| match reason {
            Reason::VariantShadow { would_choose, .. } => Some(would_choose.clone()),
            _ => None,
        });
        *would
            .entry(shadowed.expect("a shadow decision"))
            .or_default() += 1;
        router.feedback(&r.decision.call_id, i % 4 != 0).unwrap();
    }
    let report = router.shadow_report();
    let nova = &report.families["nova"];
    assert_eq!(nova.calls, 60);
    assert_eq!(nova.served, [(LITE.to_string(), 60)].into_iter().collect());
    assert_eq!(
        nova.would_choose, would,
        "every call's would-be variant is counted"
    );
    assert!(
        would.contains_key(MICRO),
        "some of these short prompts would go to Micro: {would:?}"
    );
    let cells: u64 = nova.cells.values().map(|c| c.calls).sum();
    let feedback: u64 = nova.cells.values().map(|c| c.good + c.bad).sum();
    assert_eq!((cells, feedback), (60, 60));
    assert_eq!(nova.cells.values().map(|c| c.bad).sum::<u64>(), 15);
    // Micro is cheaper than Lite: with no call that would go to Pro, routing would save.
    assert!(nova.would_usd > 0.0 && nova.served_usd > 0.0);
    if !would.contains_key(PRO) {
        assert!(nova.would_usd < nova.served_usd, "{nova:?}");
    }
    // The same figures are in the router's metrics.
    assert_eq!(router.metrics().shadow, report);
}
