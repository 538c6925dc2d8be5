//! Where a call may overflow when its planned targets are full (`[routing.overflow]`): the
//! model's targets beyond `routing.max_attempts`, those in the first target's geography (its
//! profiles) before farther regions, then a stronger variant of the family priced within
//! `max_price_ratio` of the planned model. Never outside the call's residency (every candidate
//! was enumerated under it) and, without one, no farther than its class's reach.

use super::Inputs;
use super::variant::ChosenModel;
use crate::config::{Config, Reach};
use crate::types::{Attempt, GenerateRequest};

/// The overflow candidates of a plan whose attempts are `planned`, given the model's targets
/// that `routing.max_attempts` cut (`cut`, best first).
pub(crate) fn candidates(
    inputs: Inputs<'_>,
    chosen: &ChosenModel,
    planned: &[Attempt],
    cut: Vec<Attempt>,
) -> Vec<Attempt> {
    let config = inputs.config;
    let Some(first) = planned.first() else {
        return Vec::new();
    };
    if !config.routing.overflow.enabled {
        return Vec::new();
    }
    let mut overflow = cut;
    overflow.extend(stronger_variant(inputs, chosen));
    let home = first.target.region();
    let reach = reach_of(inputs.request, config);
    overflow.retain(|a| {
        !planned
            .iter()
            .any(|p| p.model == a.model && p.target == a.target)
            && (reach == Reach::Anywhere || shares_a_geography(config, home, a.target.region()))
    });
    // Profiles and regions of the first target's geography before farther ones; the
    // planner's order within each.
    overflow.sort_by_key(|a| {
        (
            a.model != chosen.model,
            !shares_a_geography(config, home, a.target.region()),
        )
    });
    overflow
}

/// How far the call may reach: anywhere its residency allows when it has one (its candidates
/// are already within it), else its class's reach.
fn reach_of(request: &GenerateRequest, config: &Config) -> Reach {
    if request.residency.is_some() {
        return Reach::Anywhere;
    }
    config.routing.overflow.reach(request.slo.class)
}

/// Whether `a` and `b` are the same region or in one configured geography.
fn shares_a_geography(config: &Config, a: &str, b: &str) -> bool {
    a == b
        || config
            .geographies
            .keys()
            .any(|g| config.in_geography(a, g) && config.in_geography(b, g))
}

/// The attempts of the next stronger variant of the chosen model's family whose price is
/// within `routing.overflow.max_price_ratio` of the chosen model's, at its own tier.
fn stronger_variant(inputs: Inputs<'_>, chosen: &ChosenModel) -> Vec<Attempt> {
    let config = inputs.config;
    let Some(family) = chosen
        .family
        .as_deref()
        .and_then(|f| config.families.get(f))
    else {
        return Vec::new();
    };
    let price = |id: &str| {
        config
            .models
            .get(id)
            .map(|m| m.price().input_per_1k + m.price().output_per_1k)
    };
    let Some(base) = price(&chosen.model).filter(|p| *p > 0.0) else {
        return Vec::new();
    };
    let Some(at) = family.variants.iter().position(|v| **v == *chosen.model) else {
        return Vec::new();
    };
    let Some(stronger) = family.variants[at + 1..]
        .iter()
        .find(|v| price(v).is_some_and(|p| p / base <= config.routing.overflow.max_price_ratio))
    else {
        return Vec::new();
    };
    let variant = ChosenModel {
        model: inputs.catalog.model_name(stronger),
        family: chosen.family.clone(),
        pinned_profile: None,
        step_up: None,
        prompt_router: None,
    };
    let mut no_reasons = Vec::new();
    // At the variant's own tier (the plan's, unless it lacks that tier).
    super::attempts_for(
        inputs,
        &variant,
        &config.models[stronger.as_str()],
        None,
        &mut no_reasons,
    )
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::plan::observe::Fresh;
    use crate::types::GenerateRequest;
    use crate::types::SloClass;

    const MICRO: &str = "amazon.nova-micro-v1:0";

    /// The (model, region) of each overflow candidate of a Nova request served by Micro.
    fn overflow(class: SloClass) -> Vec<(String, String)> {
        let config = Config::from_toml_str(&format!(
            "[families.nova]\ndefault_variant = \"{MICRO}\"\nrouter = false\n"
        ))
        .unwrap();
        let request = GenerateRequest::user("hi").family("nova").slo_class(class);
        let plan = crate::plan(&request, &config, &Fresh(crate::time::now())).unwrap();
        assert_eq!(&*plan.model, MICRO);
        plan.overflow
            .iter()
            .map(|a| (a.model.to_string(), a.target.region().to_string()))
            .collect()
    }

    #[test]
    fn overflow_takes_the_models_other_targets_then_a_stronger_variant_within_its_price() {
        let standard = overflow(SloClass::Standard);
        assert_eq!(
            standard[0].0, MICRO,
            "the model's own targets first: {standard:?}"
        );
        assert!(
            standard.iter().any(|(m, _)| m == "amazon.nova-lite-v1:0"),
            "{standard:?}"
        );
        // Pro costs about 23 times Micro: beyond max_price_ratio.
        assert!(
            !standard.iter().any(|(m, _)| m == "amazon.nova-pro-v1:0"),
            "{standard:?}"
        );
        let first_lite = standard.iter().position(|(m, _)| m != MICRO).unwrap();
        assert!(standard[first_lite..].iter().all(|(m, _)| m != MICRO));
        assert!(
            standard.iter().any(|(_, r)| r == "eu-west-1"),
            "standard reaches anywhere"
        );
    }

    #[test]
    fn interactive_overflow_stays_in_its_first_targets_geography() {
        let interactive = overflow(SloClass::Interactive);
        assert!(!interactive.is_empty());
        assert!(
            interactive.iter().all(|(_, r)| r.starts_with("us-")),
            "{interactive:?}"
        );
    }
}
