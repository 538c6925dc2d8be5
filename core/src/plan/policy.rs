//! Routing policies: each one small step of a plan behind one trait, run in order by a
//! [`Planner`] over a [`Draft`]. The built-in ones are the variant, tier, checkpoint and target
//! policies; a policy of your own is added after them or replaces one by name.

use std::cell::Cell;
use std::sync::Arc;

use super::catalog::Catalog;
use super::feedback::FeedbackReport;
use super::observe::Observations;
use super::variant::{ChosenModel, VariantRouters};
use super::{
    Inputs, Plan, attempts_at, attempts_for, prompt_cache, prompt_router_attempt, tier, variant,
};
use crate::config::{Config, ModelConfig};
use crate::types::{
    Attempt, CallRef, Error, Exclusion, GenerateRequest, Reason, Result, ServiceTier,
};

/// A plan under construction: what the policies so far decided, and why.
pub struct Draft<'a> {
    /// The request being planned.
    pub request: &'a GenerateRequest,
    /// The configuration planned with.
    pub config: &'a Config,
    /// The configuration's model names and candidate targets, made when the planner was built.
    pub catalog: &'a Catalog,
    /// The live state, at the instant planning happens.
    pub observations: &'a dyn Observations,
    /// The model chosen (the variant policy sets it; later policies need it).
    pub chosen: Option<ChosenModel>,
    /// The chosen model's service tier (`None` for providers without tiers), and whether to ask
    /// for latency-optimized inference (the tier policy sets them).
    pub tier: Option<ServiceTier>,
    /// Whether to ask for latency-optimized inference (the tier policy sets it).
    pub latency_optimized: bool,
    /// Prompt-cache checkpoints and the request's prefixes (the checkpoint policy sets them).
    pub cache: prompt_cache::CachePlan,
    /// Targets to try, best first (the target policy fills them; later policies may reorder,
    /// remove or add).
    pub attempts: Vec<Attempt>,
    /// Where the call may go when every attempt's target is full, best first (the target
    /// policy fills them: see `[routing.overflow]`); never tried after a failure.
    pub overflow: Vec<Attempt>,
    /// Every decision so far, in order.
    pub reasons: Vec<Reason>,
    /// The model last looked up by [`Draft::model`] and its configuration: every later policy
    /// asks for the same model, and the configuration's map compares strings.
    looked_up: Memo<'a>,
}

type Memo<'a> = Cell<Option<(Arc<str>, &'a ModelConfig)>>;

impl<'a> Draft<'a> {
    /// The chosen model and its configuration, or an error naming the policy that needs it.
    pub fn model(&self, needed_by: &str) -> Result<(&ChosenModel, &'a ModelConfig)> {
        chosen_model(&self.chosen, self.config, &self.looked_up, needed_by)
    }
}

fn chosen_model<'c, 'a>(
    chosen: &'c Option<ChosenModel>,
    config: &'a Config,
    looked_up: &Memo<'a>,
    needed_by: &str,
) -> Result<(&'c ChosenModel, &'a ModelConfig)> {
    let chosen = chosen.as_ref().ok_or_else(|| {
        Error::config(
            "policies",
            format!("policy {needed_by:?} runs before any policy chose a model"),
        )
    })?;
    // The memo holds the name it was made for, so a policy that replaces the choice (a new
    // `Arc`, at another address while the old one lives) misses it.
    let memo = looked_up.take();
    let model = match memo {
        Some((name, model)) if Arc::ptr_eq(&name, &chosen.model) => {
            looked_up.set(Some((name, model)));
            model
        }
        _ => {
            let model = config.models.get(&*chosen.model).ok_or_else(|| {
                Error::invalid("model", format!("{:?} is not configured", chosen.model))
            })?;
            looked_up.set(Some((Arc::clone(&chosen.model), model)));
            model
        }
    };
    Ok((chosen, model))
}

/// One step of planning. Policies run in order over one [`Draft`]; an error ends planning
/// (for a malformed request, an [`Error::InvalidRequest`] naming the field).
///
/// **When each hook runs.**
/// - [`Policy::apply`] runs for every plan: [`Router::plan`](crate::Router::plan), and at the
///   start of every `generate` and `stream`, on the caller's task, before any I/O. The
///   built-in policies run first in their order (`variant`, `tier`, `checkpoints`,
///   `targets`), then those added with `RouterBuilder::policy`, in the order added; one added
///   with `RouterBuilder::replace_policy` runs in the place of the one it replaces.
/// - [`Policy::committed`] runs once for a plan that is about to be sent: never for one only
///   looked at (`Router::plan`), and once however many attempts the call then makes.
/// - [`Policy::feedback`] runs when a caller gives a verdict (`Router::feedback`,
///   `finish_task`), for every policy in order until one takes it.
/// - [`Policy::feedback_report`] runs when a caller asks for the report.
///
/// **What `apply` sees.** The request, the configuration, the catalog of models and their
/// candidate targets, the live state at one instant (`draft.observations`: breakers, latency,
/// quota and reservation room, prefix memory), and what earlier policies chose (`chosen`,
/// `tier`, `cache`, `attempts`) with their reasons.
///
/// **What it may change.** Anything of the draft that later policies read: the model, the
/// tier, the checkpoints, the attempts and their order. Push a [`Reason`] for each decision,
/// so that the response's decision explains it. A plan with no attempt left fails the call
/// with [`Error::InvalidRequest`] naming what emptied it.
///
/// **Errors.** An error from `apply` ends planning and is the call's error, returned before
/// anything is sent; `feedback`'s errors are the caller's. A panic in a policy becomes a typed
/// error at the bindings' boundary, never an abort, but it is a bug: return an error instead.
///
/// **No side effects in `apply`.** A plan may be made only to be looked at, or made again;
/// learn in `committed` and `feedback`.
///
/// ```
/// use laneway::plan::{Draft, Policy};
/// use laneway::Result;
///
/// /// Sends nothing to us-west-2 while it is under maintenance (the last target stays, so
/// /// that a call pinned there still goes).
/// struct Drain(&'static str);
///
/// impl Policy for Drain {
///     fn name(&self) -> &str {
///         "drain"
///     }
///     fn apply(&self, draft: &mut Draft<'_>) -> Result<()> {
///         let region = self.0;
///         draft.attempts.sort_by_key(|a| a.target.region() == region);
///         Ok(())
///     }
/// }
/// ```
pub trait Policy: Send + Sync {
    /// Its name, unique in a planner: `variant`, `tier`, `checkpoints` and `targets` are the
    /// built-in ones.
    fn name(&self) -> &str;
    /// Takes its decisions, recording each in `draft.reasons`. Planning has no side effects:
    /// a plan may be made only to be looked at, or made again.
    fn apply(&self, draft: &mut Draft<'_>) -> Result<()>;
    /// Learns from a plan that is about to be sent (not one only looked at); by default,
    /// nothing.
    fn committed(&self, _plan: &Plan) {}
    /// Learns whether a call it planned served well: `Ok(true)` if it took the outcome,
    /// `Ok(false)` if the call is none of its business; by default, the latter.
    fn feedback(&self, _call: &CallRef<'_>, _good: bool) -> Result<bool> {
        Ok(false)
    }
    /// What it has learned from feedback, per family and cell (task kind and difficulty
    /// band), if it learns so.
    fn feedback_report(&self) -> Option<FeedbackReport> {
        None
    }
}

/// Which model serves: a configured model, a family's variant by the classifier, a pinned
/// inference profile.
#[derive(Debug, Clone)]
pub struct VariantPolicy {
    routers: VariantRouters,
}

impl VariantPolicy {
    /// The policy, with the configuration's family routers loaded.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(Self {
            routers: VariantRouters::load(config)?,
        })
    }
}

impl Policy for VariantPolicy {
    fn name(&self) -> &str {
        "variant"
    }
    fn apply(&self, d: &mut Draft<'_>) -> Result<()> {
        let mut chosen = variant::choose(
            d.request,
            d.config,
            d.catalog,
            &self.routers,
            &mut d.reasons,
        )?;
        variant::prefer_cached(
            &mut chosen,
            d.request,
            d.config,
            d.catalog,
            d.observations,
            &mut d.reasons,
        );
        d.chosen = Some(chosen);
        Ok(())
    }
    fn committed(&self, plan: &Plan) {
        self.routers.committed(&plan.reasons);
    }
    fn feedback(&self, call: &CallRef<'_>, good: bool) -> Result<bool> {
        match (call.family, call.cell) {
            (Some(family), Some(cell)) => {
                self.routers.feedback(family, call.model, cell, good)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
    fn feedback_report(&self) -> Option<FeedbackReport> {
        Some(self.routers.feedback_snapshot())
    }
}

/// Which service tier: the SLO class's, a forced one, the reservation's while it has room.
#[derive(Debug, Clone, Copy, Default)]
pub struct TierPolicy;

impl Policy for TierPolicy {
    fn name(&self) -> &str {
        "tier"
    }
    fn apply(&self, d: &mut Draft<'_>) -> Result<()> {
        let (chosen, model) = chosen_model(&d.chosen, d.config, &d.looked_up, self.name())?;
        let reasons = &mut d.reasons;
        d.tier = tier::choose(
            d.request,
            &chosen.model,
            model,
            d.config,
            d.observations,
            reasons,
        )?;
        d.latency_optimized = tier::latency_optimized(d.request, model, reasons);
        Ok(())
    }
}

/// Which prompt-cache checkpoints: the request's own, fitted to the model's rules, or placed
/// where expected reuse pays; and which target holds the longest cached prefix.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckpointPolicy;

impl Policy for CheckpointPolicy {
    fn name(&self) -> &str {
        "checkpoints"
    }
    fn apply(&self, d: &mut Draft<'_>) -> Result<()> {
        let (_, model) = chosen_model(&d.chosen, d.config, &d.looked_up, self.name())?;
        let obs = d.observations;
        let track = d
            .chosen
            .as_ref()
            .and_then(|c| variant::tracking_rules(c, d.config));
        let survey = prompt_cache::survey(d.request, model, track, obs.token_counter(), obs);
        d.cache = prompt_cache::place(d.request, model, d.config, obs, survey, &mut d.reasons);
        Ok(())
    }
}

/// Which targets, in which order: healthy before unhealthy, by the class's objective, the cached
/// prefix's target first while it is healthy and fast enough; the prompt router first; a
/// deadline escalation; a stronger variant and a fallback family after; at most
/// `routing.max_attempts`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TargetPolicy;

impl Policy for TargetPolicy {
    fn name(&self) -> &str {
        "targets"
    }
    fn apply(&self, d: &mut Draft<'_>) -> Result<()> {
        let (chosen, model) = chosen_model(&d.chosen, d.config, &d.looked_up, self.name())?;
        let inputs = Inputs {
            request: d.request,
            config: d.config,
            catalog: d.catalog,
            obs: d.observations,
        };
        let (request, config, obs) = (d.request, d.config, d.observations);
        let reasons = &mut d.reasons;
        let mut attempts = attempts_at(
            inputs,
            chosen,
            model,
            (d.tier, d.latency_optimized),
            d.cache.affinity.as_ref(),
            reasons,
        );
        if let Some(first) = attempts.first()
            && let Some(tier) =
                tier::escalate_for_deadline(request, model, first, config, obs, reasons)
        {
            for a in &mut attempts {
                a.tier = Some(tier);
            }
        }
        if let Some(arn) = &chosen.prompt_router
            && let Some(router) =
                prompt_router_attempt(arn, request, &chosen.model, config, &attempts, reasons)
        {
            attempts.insert(0, router);
        }
        let step_up = step_up_attempts(chosen, inputs, reasons);
        let fallback = fallback_attempts(model, inputs, reasons);
        let limit = config.routing.max_attempts as usize;
        // Keep room for one step-up attempt and one fallback attempt within the limit.
        let kept = usize::from(!step_up.is_empty()) + usize::from(!fallback.is_empty());
        let primary_limit = limit.saturating_sub(kept).max(1);
        for a in attempts.iter().skip(primary_limit) {
            reasons.push(Reason::TargetExcluded {
                target: a.target.id.clone(),
                region: a.target.region.clone(),
                why: Exclusion::AttemptLimit,
            });
        }
        let cut = attempts.split_off(primary_limit.min(attempts.len()));
        let room = limit.saturating_sub(attempts.len());
        let step_up_room = if fallback.is_empty() {
            room
        } else {
            room.saturating_sub(1).max(1)
        };
        attempts.extend(step_up.into_iter().take(step_up_room));
        let room = limit.saturating_sub(attempts.len());
        attempts.extend(fallback.into_iter().take(room));
        if attempts.is_empty() {
            return Err(no_target(&chosen.model, request, d.config));
        }
        reasons.push(Reason::TargetsOrdered {
            first: attempts[0].target.id.clone(),
            region: attempts[0].target.region.clone(),
            fallbacks: attempts.len() - 1,
        });
        d.overflow = super::overflow::candidates(inputs, chosen, &attempts, cut);
        d.attempts = attempts;
        Ok(())
    }
}

/// A stronger variant of the family, if the chosen one cannot serve: never a weaker one.
fn step_up_attempts(
    chosen: &ChosenModel,
    inputs: Inputs<'_>,
    reasons: &mut Vec<Reason>,
) -> Vec<Attempt> {
    let Some(stronger) = &chosen.step_up else {
        return Vec::new();
    };
    let stronger_model = ChosenModel {
        model: stronger.clone(),
        family: chosen.family.clone(),
        pinned_profile: None,
        step_up: None,
        prompt_router: None,
    };
    let mut no_reasons = Vec::new();
    let attempts = attempts_for(
        inputs,
        &stronger_model,
        &inputs.config.models[&**stronger],
        None,
        &mut no_reasons,
    )
    .unwrap_or_default();
    if !attempts.is_empty() {
        reasons.push(Reason::VariantStepUp {
            from: chosen.model.to_string(),
            to: stronger.to_string(),
        });
    }
    attempts
}

/// A SageMaker model's Bedrock fallback family, at its default variant.
fn fallback_attempts(
    model: &ModelConfig,
    inputs: Inputs<'_>,
    reasons: &mut Vec<Reason>,
) -> Vec<Attempt> {
    let Inputs {
        config, catalog, ..
    } = inputs;
    let Some(family) = &model.fallback_family() else {
        return Vec::new();
    };
    let variant = config.families[family.as_str()]
        .default_variant()
        .to_string();
    reasons.push(Reason::FallbackFamily {
        family: family.to_string(),
        variant: variant.clone(),
    });
    let fallback_model = ChosenModel {
        model: catalog.model_name(&variant),
        family: Some(catalog.family_name(family)),
        pinned_profile: None,
        step_up: None,
        prompt_router: None,
    };
    let fb = &config.models[&*fallback_model.model];
    // A fallback whose own tier is impossible (a forced SageMaker-only tier) is skipped.
    let mut no_reasons = Vec::new();
    attempts_for(inputs, &fallback_model, fb, None, &mut no_reasons).unwrap_or_default()
}

/// Runs policies in order over a draft: the built-in ones, and yours.
///
/// ```
/// use std::sync::Arc;
/// use laneway::plan::{Draft, Planner, Policy};
/// use laneway::{state::Fresh, Config, GenerateRequest};
///
/// struct LastRegion(&'static str);
/// impl Policy for LastRegion {
///     fn name(&self) -> &str { "last-region" }
///     fn apply(&self, d: &mut Draft<'_>) -> laneway::Result<()> {
///         d.attempts.sort_by_key(|a| a.target.region() == self.0);
///         Ok(())
///     }
/// }
///
/// let config = Config::default();
/// let planner = Planner::new(&config).unwrap().with_policy(Arc::new(LastRegion("us-east-1")));
/// let now = laneway::time::now();
/// let p = planner.plan(&GenerateRequest::user("hi").model("amazon.nova-lite-v1:0"), &config, &Fresh(now)).unwrap();
/// assert_ne!(p.attempts[0].target.region(), "us-east-1");
/// ```
#[derive(Clone)]
pub struct Planner {
    policies: Vec<Arc<dyn Policy>>,
    catalog: Arc<Catalog>,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.policies.iter().map(|p| p.name()))
            .finish()
    }
}

impl Planner {
    /// The built-in policies, in order: variant, tier, checkpoints, targets. Loads the family
    /// routers' model files (relative to [`Config::base_dir`]) and makes the configuration's
    /// [`Catalog`]: plan with this configuration.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(Self {
            catalog: Arc::new(Catalog::new(config)),
            policies: vec![
                Arc::new(VariantPolicy::new(config)?),
                Arc::new(TierPolicy),
                Arc::new(CheckpointPolicy),
                Arc::new(TargetPolicy),
            ],
        })
    }

    /// The catalog of the configuration's models and their candidate targets.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Adds `policy` after the others: it runs last, on the draft they left.
    pub fn with_policy(mut self, policy: Arc<dyn Policy>) -> Self {
        self.policies.push(policy);
        self
    }

    /// Replaces the policy of this name (`variant`, `tier`, `checkpoints`, `targets`, or one of
    /// yours); an error when there is none.
    pub fn replace_policy(mut self, name: &str, policy: Arc<dyn Policy>) -> Result<Self> {
        let slot = self
            .policies
            .iter_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                Error::config("policies", format!("no policy named {name:?} to replace"))
            })?;
        *slot = policy;
        Ok(self)
    }

    /// Gives a call's outcome to the policies ([`Policy::feedback`]); an error if none
    /// learns from it (a model asked for by name, a family without a router) or the call does
    /// not fit this configuration.
    pub fn feedback(&self, call: &CallRef<'_>, good: bool) -> Result<()> {
        let mut taken = false;
        for policy in &self.policies {
            taken |= policy.feedback(call, good)?;
        }
        if taken {
            return Ok(());
        }
        Err(Error::invalid(
            "call_id",
            format!(
                "no policy learns from this call ({}{}, not chosen by a family's variant router)",
                call.family
                    .map(|f| format!("family {f}, "))
                    .unwrap_or_default(),
                call.model
            ),
        ))
    }

    /// Each routed family's production feedback per cell (task kind and difficulty band).
    pub fn feedback_report(&self) -> FeedbackReport {
        let mut report = FeedbackReport::new();
        for policy in &self.policies {
            report.extend(policy.feedback_report().unwrap_or_default());
        }
        report
    }

    /// The policies' names, in order.
    pub fn policy_names(&self) -> impl Iterator<Item = &str> {
        self.policies.iter().map(|p| p.name())
    }

    /// Tells every policy that `plan` is about to be sent ([`Policy::committed`]).
    pub fn committed(&self, plan: &Plan) {
        for policy in &self.policies {
            policy.committed(plan);
        }
    }

    /// Plans one call from the request, the configuration and the live state at one instant.
    pub fn plan(
        &self,
        request: &GenerateRequest,
        config: &Config,
        observations: &dyn Observations,
    ) -> Result<Plan> {
        request.validate()?;
        if let Some(crate::types::Residency::Geography(g)) = &request.residency
            && !config.is_known_geography(g)
        {
            return Err(Error::invalid(
                "residency",
                format!(
                    "{g:?} is not a configured geography (configured: {}; add it under [geographies])",
                    config.known_geographies()
                ),
            ));
        }
        let mut draft = Draft {
            request,
            config,
            catalog: &self.catalog,
            observations,
            chosen: None,
            tier: None,
            latency_optimized: false,
            cache: prompt_cache::CachePlan::default(),
            attempts: Vec::new(),
            overflow: Vec::new(),
            // A plan gives about this many reasons: one allocation instead of growing.
            reasons: Vec::with_capacity(8),
            looked_up: Cell::new(None),
        };
        for policy in &self.policies {
            policy.apply(&mut draft)?;
        }
        let primary = draft.model("the planner")?.0.model.clone();
        super::shape::shape_attempts(
            request,
            config,
            &primary,
            &mut draft.attempts,
            &mut draft.reasons,
        )?;
        if !draft.overflow.is_empty() {
            // Shaped as the attempts are; reasons of their own would only repeat the attempts'.
            let mut scratch = Vec::new();
            if super::shape::shape_attempts(
                request,
                config,
                &primary,
                &mut draft.overflow,
                &mut scratch,
            )
            .is_err()
            {
                draft.overflow.clear();
            }
        }
        let (chosen, model) = draft.model("the planner")?;
        if draft.attempts.is_empty() {
            return Err(Error::invalid(
                "model",
                format!("the policies left no target for {}", chosen.model),
            ));
        }
        Ok(Plan {
            provider: model.provider().clone(),
            model: chosen.model.clone(),
            family: chosen.family.clone(),
            attempts: draft.attempts,
            overflow: draft.overflow,
            reasons: draft.reasons,
            cache: draft.cache,
        })
    }
}

/// Why a model has no target: the residency (or the configured regions) and where the model is
/// served, in words a caller can act on.
fn no_target(model: &str, request: &GenerateRequest, config: &Config) -> Error {
    // Every API that serves it refuses part of the request: name that part.
    if let Some(m) = config.models.get(model) {
        let candidates = crate::plan::catalog::candidates(model, m, config);
        let refusals: Vec<_> = candidates
            .iter()
            .map(|c| m.cannot_carry(request, c.target.api))
            .collect();
        if !refusals.is_empty()
            && refusals.iter().all(Option::is_some)
            && let Some(Some((field, why))) = refusals.into_iter().next()
        {
            return Error::invalid(field, format!("no target of {model} can carry it: {why}"));
        }
    }
    let served = config.models.get(model).map_or_else(String::new, |m| {
        let bare: Vec<&str> = m
            .regions()
            .iter()
            .filter(|r| !m.requires_profile_in(r))
            .map(String::as_str)
            .collect();
        let profiles: Vec<&str> = m.profiles().iter().map(|p| p.prefix()).collect();
        format!(
            "; its bare id is served in [{}] and its profiles are [{}]",
            bare.join(", "),
            profiles.join(", ")
        )
    });
    match &request.residency {
        Some(crate::types::Residency::Regions(regions)) => Error::invalid(
            "residency",
            format!(
                "no target of {model} is in the regions [{}] (a list of regions allows no cross-region profile){served}",
                regions.join(", ")
            ),
        ),
        Some(crate::types::Residency::Geography(g)) => Error::invalid(
            "residency",
            format!("no target of {model} keeps the request in the geography {g}{served}"),
        ),
        None => Error::invalid(
            "model",
            format!("no target of {model} starts in a configured region{served}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::observe::Fresh;
    use crate::types::Provider;

    /// Replaces the chosen model with `to`, under a name of its own (a new `Arc`).
    struct Swap(&'static str);

    impl Policy for Swap {
        fn name(&self) -> &str {
            "checkpoints"
        }
        fn apply(&self, d: &mut Draft<'_>) -> Result<()> {
            let chosen = d.chosen.as_mut().expect("the variant policy ran");
            chosen.model = Arc::from(self.0);
            Ok(())
        }
    }

    #[test]
    fn a_policy_that_replaces_the_model_gets_the_new_models_configuration() {
        let config = Config::from_toml_str(
            "[models.small]\nprovider = \"house\"\nmodel_id = \"small-v3\"\nregions = [\"a\"]\n\
             price = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        )
        .unwrap();
        // The tier policy looks up nova-lite before the swap; the target policy and the
        // planner look up the replacement after it.
        let planner = Planner::new(&config)
            .unwrap()
            .replace_policy("checkpoints", Arc::new(Swap("small")))
            .unwrap();
        let plan = planner
            .plan(
                &GenerateRequest::user("x").model("amazon.nova-lite-v1:0"),
                &config,
                &Fresh(crate::time::now()),
            )
            .unwrap();
        assert_eq!(plan.provider, Provider::Other("house".into()));
        assert_eq!(&*plan.model, "small");
        assert_eq!(plan.attempts[0].target.id(), "small-v3");

        let unknown = Planner::new(&config)
            .unwrap()
            .replace_policy("checkpoints", Arc::new(Swap("gpt-17")))
            .unwrap()
            .plan(
                &GenerateRequest::user("x").model("amazon.nova-lite-v1:0"),
                &config,
                &Fresh(crate::time::now()),
            )
            .unwrap_err();
        assert!(unknown.to_string().contains("gpt-17"), "{unknown}");
    }
}
