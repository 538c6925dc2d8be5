//! Which targets, in which order: in-region model ids, geographic and global inference profiles,
//! or SageMaker endpoints, restricted by residency and capped by `routing.max_attempts`.

use crate::config::{Config, ModelConfig};
use crate::plan::Inputs;
use crate::plan::catalog;
use crate::plan::observe::{Observations, TargetView};
use crate::plan::variant::ChosenModel;
pub(crate) use crate::types::Objective;
use crate::types::{AffinityOutcome, BreakerView, Exclusion, ProfileScope, Reason, Target};
use crate::types::{GenerateRequest, ServiceTier};

/// The candidate targets of one model, allowed by the residency, best first.
///
/// Candidates: for each configured region, the in-region id and the region's geographic
/// profile, then global profiles; or the model's SageMaker endpoints in configured order.
/// Order: healthy targets (closed breaker, or half-open with a probe slot free) before recently
/// throttled ones, before those waiting on a probe, before open ones; then by the objective;
/// then by configured order.
pub(crate) fn enumerate(
    inputs: Inputs<'_>,
    chosen: &ChosenModel,
    model: &ModelConfig,
    tier: Option<ServiceTier>,
    reasons: &mut Vec<Reason>,
) -> Vec<Target> {
    let Inputs {
        request,
        config,
        catalog,
        obs,
    } = inputs;
    // A planner plans with the configuration it was built from; a model it does not know (a
    // configuration changed since) gets its candidates made here.
    let made;
    let all = match catalog.candidates(&chosen.model) {
        Some(c) => c,
        None => {
            made = catalog::candidates(&chosen.model, model, config);
            &made
        }
    };
    // Profiles are a managed model's: other candidates pass this rule.
    let profiles_ruled = model.is_managed().then_some(chosen.pinned_profile.as_ref());
    let objective = Objective::of(request);
    let quota_input = quota_input(request, chosen, model, tier, config, obs);
    let mut ranked: Vec<Ranked> = Vec::with_capacity(all.len());
    for (index, c) in all.iter().enumerate() {
        let t = &c.target;
        let excluded = profiles_ruled
            .and_then(|pinned| {
                profile_rule(
                    c.scope.as_ref(),
                    pinned,
                    // Mantle serves bare ids only, and needs none.
                    t.api.serves_profiles() && model.requires_profile_in(t.region()),
                )
            })
            .or_else(|| {
                request
                    .residency
                    .as_ref()
                    .filter(|r| !config.keeps_within(t, r))
                    .map(|_| Exclusion::Residency)
            })
            .or_else(|| {
                model
                    .cannot_carry(request, t.api)
                    .map(|_| Exclusion::NotCarried)
            });
        if let Some(why) = excluded {
            exclude(reasons, t, why);
            continue;
        }
        let view = obs.target(t.region(), t.id(), tier);
        let mut health = health_rank(&view);
        let full = quota_input.and_then(|input| {
            let terms = model.quota_terms(t)?;
            let ask = terms.at_admission(
                input,
                request.inference.max_tokens.map(|n| n.max(0) as u64),
                u64::from(config.routing.default_output_tokens),
            );
            (!obs.quota_room(t.region(), t.id(), terms.limits, ask)).then(|| terms.tokens(ask))
        });
        let load = obs.load(t.region(), t.id(), tier, request.slo.class);
        let probing = view.breaker
            == BreakerView::HalfOpen {
                probe_available: true,
            };
        if load.refusing && view.throttle_score >= 1.0 && !probing {
            // Throttling as such: after the targets that serve, full ones included (a call
            // would rather wait for those), for as long as it counts as recently throttled,
            // or until its breaker asks for a probe.
            health = health.max(2);
        }
        if load.is_full() {
            // Full now: the call would wait for it; targets with room come first.
            health = health.max(1);
            reasons.push(Reason::TargetFull {
                target: t.id.clone(),
                region: t.region.clone(),
                in_flight: load.in_flight,
                limit: load.limit.unwrap_or(load.in_flight),
            });
        }
        let quota_full = full.is_some() || load.is_full();
        if let Some(tokens) = full {
            // As good as a recently throttled target: one that will be throttled.
            health = health.max(1);
            reasons.push(Reason::QuotaFull {
                target: t.id.clone(),
                region: t.region.clone(),
                tokens,
            });
        }
        let metric = match objective {
            Objective::Latency => view
                .ttft
                .unwrap_or_else(|| config.routing.priors.of(model, tier, t.api).ttft)
                .as_secs_f64(),
            // The tier is the same for every target of the model: only the scope's share of the
            // price tells them apart.
            Objective::Cost => config.pricing.factor(model.price(), None, t.profile()),
        };
        if health > 0 && !quota_full {
            reasons.push(Reason::TargetDemoted {
                target: t.id.clone(),
                region: t.region.clone(),
                health: view.breaker,
                throttle_score: (view.throttle_score * 100.0).round() / 100.0,
            });
        }
        ranked.push(Ranked {
            health,
            band: band(metric),
            busy: Some(load.utilisation())
                .filter(|u| *u >= config.routing.concurrency.spread_above)
                .unwrap_or(0.0),
            metric,
            index,
            spread: 0,
            target: t.clone(),
        });
    }
    // Among targets of equal health and a like measure, the least loaded busy one first
    // (least-request balancing): a burst spreads over every target it may use, not the first.
    ranked.sort_by(|a, b| {
        (a.health.cmp(&b.health))
            .then(a.band.cmp(&b.band))
            .then(a.busy.total_cmp(&b.busy))
            .then(a.metric.total_cmp(&b.metric))
            .then(a.index.cmp(&b.index))
    });
    if !ranked.is_empty() {
        reasons.push(Reason::TargetsOrderedBy { objective });
    }
    spread_across_regions(&mut ranked);
    ranked.into_iter().map(|r| r.target).collect()
}

/// The call's estimated input, which its targets' on-demand quotas count at admission, when
/// its model has quotas; `None` also for a reserved call the reservation is expected to serve.
fn quota_input(
    request: &GenerateRequest,
    chosen: &ChosenModel,
    model: &ModelConfig,
    tier: Option<ServiceTier>,
    config: &Config,
    obs: &(impl Observations + ?Sized),
) -> Option<u64> {
    if !model.has_quotas() {
        return None;
    }
    let (input, output) = crate::plan::tier::estimated_tokens(request, config);
    if tier == Some(ServiceTier::RESERVED)
        && obs.reserved_room(&chosen.model, input, output) == Some(true)
    {
        return None;
    }
    Some(input)
}

/// Measures within a quarter of each other (on a geometric scale) rank alike, so that load
/// decides between them: a target 5% faster or cheaper does not take a whole burst.
fn band(metric: f64) -> i64 {
    (metric.max(1e-9).ln() / 1.25f64.ln()).floor() as i64
}

/// A candidate with what orders it.
struct Ranked {
    /// From [`health_rank`].
    health: u8,
    /// [`band`] of `metric`.
    band: i64,
    /// The share of its concurrency in use, when past `routing.concurrency.spread_above`
    /// (else 0: not busy).
    busy: f64,
    /// The objective's measure: lower is better.
    metric: f64,
    /// Its place in the catalog: the configured order breaks ties.
    index: usize,
    /// How many targets of its region and health come before it.
    spread: usize,
    target: Target,
}

/// Within each health rank, a region's second target comes after every region's first: the
/// attempts that `routing.max_attempts` keeps then reach as many regions (separate capacity,
/// separate failures) as they can, instead of spending two on one region that is down.
fn spread_across_regions(ranked: &mut [Ranked]) {
    for i in 1..ranked.len() {
        let (before, rest) = ranked.split_at_mut(i);
        let r = &mut rest[0];
        r.spread = before
            .iter()
            .filter(|b| b.health == r.health && b.target.region == r.target.region)
            .count();
    }
    // Stable: the objective's order holds among targets of equal health and spread.
    ranked.sort_by_key(|r| (r.health, r.spread));
}

/// Why a Bedrock candidate is left out under the request's pinned profile or the model's need
/// for one: the bare id unless neither applies, a profile other than the pinned one.
fn profile_rule(
    scope: Option<&ProfileScope>,
    pinned: Option<&ProfileScope>,
    requires_profile: bool,
) -> Option<Exclusion> {
    match (scope, pinned) {
        (None, Some(_)) => Some(Exclusion::OtherProfilePinned),
        (None, None) if requires_profile => Some(Exclusion::ProfileRequired),
        (Some(scope), Some(p)) if scope != p => Some(Exclusion::OtherProfilePinned),
        _ => None,
    }
}

/// Moves the target holding the request's longest cached prefix to the front while it is
/// healthy and, for a call with a TTFT target, expected to meet it. Caches are per region, so
/// elsewhere the prefix would be written again.
pub(crate) fn prefer_cached(
    ordered: &mut Vec<Target>,
    cached_at: &(String, String),
    inputs: Inputs<'_>,
    model: &ModelConfig,
    tier: Option<ServiceTier>,
    reasons: &mut Vec<Reason>,
) {
    let Inputs {
        request,
        config,
        obs,
        ..
    } = inputs;
    let (region, id) = cached_at;
    let Some(pos) = ordered
        .iter()
        .position(|t| t.region() == region && t.id() == id)
    else {
        return;
    };
    let view = obs.target(region, id, tier);
    let prior = config.routing.priors.of(model, tier, ordered[pos].api).ttft;
    let too_slow = Objective::of(request) == Objective::Latency
        && request
            .slo
            .ttft_target
            .is_some_and(|target| view.ttft.unwrap_or(prior) > target);
    let (won, why) = match (health_rank(&view), too_slow) {
        (0, false) => (true, AffinityOutcome::Preferred),
        (0, true) => (false, AffinityOutcome::TooSlow),
        _ => (false, AffinityOutcome::Unhealthy),
    };
    let holder = if won {
        let t = ordered.remove(pos);
        ordered.insert(0, t);
        &ordered[0]
    } else {
        &ordered[pos]
    };
    reasons.push(Reason::CacheAffinity {
        target: holder.id.clone(),
        region: holder.region.clone(),
        won,
        why,
    });
}

/// 0 healthy or probing, 1 recently throttled, 2 half-open without a free probe, 3 open.
fn health_rank(view: &TargetView) -> u8 {
    match view.breaker {
        BreakerView::Open | BreakerView::RegionEjected => 3,
        BreakerView::HalfOpen {
            probe_available: false,
        } => 2,
        // A free probe goes first: it is how a recovered target gets its traffic back.
        BreakerView::HalfOpen {
            probe_available: true,
        } => 0,
        _ if view.throttle_score >= 1.0 => 1,
        _ => 0,
    }
}

fn exclude(reasons: &mut Vec<Reason>, t: &Target, why: Exclusion) {
    reasons.push(Reason::TargetExcluded {
        target: t.id.clone(),
        region: t.region.clone(),
        why,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::types::{Geography, Residency, SloClass};

    fn ids(req: GenerateRequest, config: &Config) -> Vec<(String, String)> {
        plan(
            &req,
            config,
            &crate::plan::observe::Fresh(crate::time::now()),
        )
        .unwrap()
        .attempts
        .iter()
        .map(|a| (a.target.id().to_string(), a.target.region().to_string()))
        .collect()
    }

    #[test]
    fn for_latency_in_region_first_then_profiles_then_global() {
        let mut c = Config::default();
        c.routing.max_attempts = 10;
        let t = ids(
            GenerateRequest::user("x")
                .model("anthropic.claude-haiku-4-5-20251001-v1:0")
                .slo_class(SloClass::Interactive),
            &c,
        );
        assert_eq!(
            t[0],
            (
                "us.anthropic.claude-haiku-4-5-20251001-v1:0".into(),
                "us-east-1".into()
            )
        );
        assert!(t.last().unwrap().0.starts_with("global."));
        assert!(
            t.iter()
                .all(|(id, _)| id != "anthropic.claude-haiku-4-5-20251001-v1:0")
        );
        let n = ids(
            GenerateRequest::user("x")
                .model("amazon.nova-lite-v1:0")
                .slo_class(SloClass::Interactive),
            &c,
        );
        assert_eq!(n[0], ("amazon.nova-lite-v1:0".into(), "us-east-1".into()));
        // Every region's in-region id before any profile, one region after another.
        let first_profile = n.iter().position(|(id, _)| id.contains(".amazon")).unwrap();
        assert!(
            n[..first_profile]
                .iter()
                .all(|(id, _)| id == "amazon.nova-lite-v1:0")
        );
        assert!(
            n[first_profile..]
                .iter()
                .all(|(id, _)| id != "amazon.nova-lite-v1:0")
        );
        assert_eq!(n[1], ("amazon.nova-lite-v1:0".into(), "us-west-2".into()));
    }

    #[test]
    fn the_attempts_kept_reach_as_many_regions_as_they_can() {
        let c = Config::default(); // max_attempts = 3
        let plan = crate::plan(
            &GenerateRequest::user("x").model("amazon.nova-lite-v1:0"),
            &c,
            &crate::plan::observe::Fresh(crate::time::now()),
        )
        .unwrap();
        let regions: std::collections::BTreeSet<_> =
            plan.attempts.iter().map(|a| a.target.region()).collect();
        assert_eq!(regions.len(), 3, "{:?}", plan.attempts);
    }

    #[test]
    fn for_cost_global_profiles_come_first() {
        let mut c = Config::default();
        c.routing.max_attempts = 10;
        let t = ids(GenerateRequest::user("x").family("claude"), &c);
        assert!(t[0].0.starts_with("global."), "{t:?}");
    }

    /// Observations with chosen views per (region, id).
    struct Seen(Vec<(&'static str, &'static str, TargetView)>);

    impl Observations for Seen {
        fn now(&self) -> std::time::Instant {
            crate::time::now()
        }
        fn target(&self, region: &str, id: &str, _: Option<ServiceTier>) -> TargetView {
            self.0
                .iter()
                .find(|(r, i, _)| *r == region && *i == id)
                .map_or(TargetView::UNKNOWN, |(_, _, v)| *v)
        }
        fn reserved_room(&self, _: &str, _: u64, _: u64) -> Option<bool> {
            None
        }
    }

    #[test]
    fn open_breakers_and_throttling_demote_and_latency_orders() {
        let c = Config::default();
        let req = GenerateRequest::user("x")
            .model("amazon.nova-lite-v1:0")
            .slo_class(SloClass::Interactive);
        let fast = TargetView {
            ttft: Some(std::time::Duration::from_millis(100)),
            ..TargetView::UNKNOWN
        };
        let seen = Seen(vec![
            (
                "us-east-1",
                "amazon.nova-lite-v1:0",
                TargetView {
                    breaker: BreakerView::Open,
                    ..TargetView::UNKNOWN
                },
            ),
            (
                "us-east-1",
                "us.amazon.nova-lite-v1:0",
                TargetView {
                    throttle_score: 3.0,
                    ..TargetView::UNKNOWN
                },
            ),
            ("us-west-2", "us.amazon.nova-lite-v1:0", fast),
        ]);
        let p = plan(&req, &c, &seen).unwrap();
        let order: Vec<_> = p
            .attempts
            .iter()
            .map(|a| (a.target.id(), a.target.region()))
            .collect();
        assert_eq!(
            order[0],
            ("us.amazon.nova-lite-v1:0", "us-west-2"),
            "fastest healthy first: {order:?}"
        );
        assert!(p.reasons.iter().any(|r| matches!(
            r,
            Reason::TargetDemoted {
                health: BreakerView::Open,
                ..
            }
        )));
    }

    #[test]
    fn eu_residency_keeps_eu_and_drops_global() {
        // The default variant (Sonnet), not one the classifier picks.
        let c = Config::from_toml_str("[families.claude]\nrouter = false\n").unwrap();
        let t = ids(
            GenerateRequest::user("x")
                .family("claude")
                .residency(Residency::Geography(Geography::new("eu").unwrap())),
            &c,
        );
        assert_eq!(
            t,
            vec![(
                "eu.anthropic.claude-sonnet-4-5-20250929-v1:0".to_string(),
                "eu-west-1".to_string()
            )]
        );
    }

    #[test]
    fn the_sovereign_cloud_is_a_geography_of_its_own() {
        // A model served in eu-central-1 and in the European Sovereign Cloud: `eusc` keeps a
        // call in the sovereign region, `eu` out of it.
        let c = Config::from_toml_str(
            r#"
            regions = [{ name = "eu-central-1" }, { name = "eusc-de-east-1" }]
            [models."amazon.nova-lite-v1:0"]
            regions = ["eu-central-1", "eusc-de-east-1"]
            in_region = ["eu-central-1", "eusc-de-east-1"]
            profiles = []
            "#,
        )
        .unwrap();
        let in_geography = |name: &str| {
            ids(
                GenerateRequest::user("x")
                    .model("amazon.nova-lite-v1:0")
                    .residency(Residency::Geography(Geography::new(name).unwrap())),
                &c,
            )
        };
        assert_eq!(
            in_geography("eusc"),
            [(
                "amazon.nova-lite-v1:0".to_string(),
                "eusc-de-east-1".to_string()
            )]
        );
        assert_eq!(
            in_geography("eu"),
            [(
                "amazon.nova-lite-v1:0".to_string(),
                "eu-central-1".to_string()
            )]
        );
    }

    #[test]
    fn region_list_residency_forbids_profiles() {
        let c = Config::default();
        let e = plan(
            &GenerateRequest::user("x")
                .family("claude")
                .residency(Residency::Regions(vec!["eu-west-1".into()])),
            &c,
            &crate::plan::observe::Fresh(crate::time::now()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("residency"), "{e}");
    }

    #[test]
    fn attempts_are_capped() {
        let c = Config::default();
        assert_eq!(
            ids(GenerateRequest::user("x"), &c).len(),
            c.routing.max_attempts as usize
        );
    }
}
