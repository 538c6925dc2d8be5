//! The last step of planning, after every policy: what of the request each attempt's model
//! gets. Reasoning as that model spells it (or none, said in the decision), the conversation's
//! earlier reasoning blocks where the model would take them, the model-specific fields where
//! the attempt is on the model they were written for; attempts on models that cannot give the
//! structured output asked for are left out.

use std::sync::Arc;

use crate::config::{Config, ModelConfig, ReasoningConfig};
use crate::types::{
    Attempt, AttemptShape, Error, Exclusion, GenerateRequest, Reason, Reasoning, Result,
    SamplingParameter, Tool,
};

/// Shapes every attempt of a plan whose model is `primary`. An error when the request asks
/// the primary model for what it cannot do (reasoning it does not have or refuses, structured
/// output it does not take).
pub(crate) fn shape_attempts(
    request: &GenerateRequest,
    config: &Config,
    primary: &Arc<str>,
    attempts: &mut Vec<Attempt>,
    reasons: &mut Vec<Reason>,
) -> Result<()> {
    let explicit = request.reasoning;
    let asked = explicit.or_else(|| config.slo_reasoning.get(&request.slo.class).copied());
    let wants_structure = request.output_format.is_some()
        || request
            .tools
            .iter()
            .any(|t| matches!(t, Tool::Spec(s) if s.strict));
    if let Some(g) = &request.guardrail {
        keep_guarded(g, primary, attempts, reasons)?;
    }
    keep_carried(request, config, primary, attempts, reasons)?;
    note_what_apis_lack(request, config, attempts, reasons);
    shape_by_model(
        request,
        config,
        primary,
        asked,
        wants_structure,
        attempts,
        reasons,
    )?;
    leave_out_refused_sampling(request, config, attempts, reasons);
    Ok(())
}

/// The attempts' reasoning, model fields and earlier reasoning, each as its model takes them;
/// attempts on models that cannot give the structured output asked for left out.
fn shape_by_model(
    request: &GenerateRequest,
    config: &Config,
    primary: &Arc<str>,
    asked: Option<Reasoning>,
    wants_structure: bool,
    attempts: &mut Vec<Attempt>,
    reasons: &mut Vec<Reason>,
) -> Result<()> {
    let explicit = request.reasoning;
    let carries_reasoning = request.carries_reasoning();
    if asked.is_none() && !wants_structure && !carries_reasoning && request.model_fields.is_none() {
        return Ok(());
    }
    let primary_format = config
        .models
        .get(&**primary)
        .and_then(ModelConfig::reasoning)
        .map(|r| r.format);
    let mut seen: Vec<(Arc<str>, Option<AttemptShape>)> = Vec::with_capacity(2);
    let mut kept = Vec::with_capacity(attempts.len());
    for mut attempt in attempts.drain(..) {
        // Every attempt on one model has the same shape: decide it once.
        let shape = match seen.iter().find(|(m, _)| *m == attempt.model) {
            Some((_, shape)) => shape.clone(),
            None => {
                let model = config.models.get(&*attempt.model).ok_or_else(|| {
                    Error::invalid("model", format!("{:?} is not configured", attempt.model))
                })?;
                let is_primary = attempt.model == *primary;
                let shape = if wants_structure && !model.structured_output() {
                    if is_primary {
                        return Err(Error::invalid(
                            if request.output_format.is_some() {
                                "output_format"
                            } else {
                                "tools.strict"
                            },
                            format!(
                                "{} takes no structured output (Bedrock: \"output_config.format: Extra inputs are not permitted\")",
                                attempt.model
                            ),
                        ));
                    }
                    None
                } else {
                    let history = carries_reasoning
                        && history_goes(model, primary_format, &attempt.model, reasons);
                    let mut reasoning = reasoning_for(
                        request,
                        config,
                        &attempt.model,
                        model,
                        asked,
                        explicit.is_some() && is_primary,
                        reasons,
                    )?;
                    // Thinking on without the conversation's earlier reasoning breaks a tool
                    // loop (Claude wants the last tool-use turn to start with its reasoning):
                    // such a model answers without reasoning instead.
                    if carries_reasoning && !history && reasoning.is_some() && !is_primary {
                        reasoning = None;
                        reasons.push(Reason::ReasoningDropped {
                            model: Arc::clone(&attempt.model),
                            why: "the conversation's reasoning blocks are another model's".into(),
                        });
                    }
                    Some(AttemptShape {
                        reasoning,
                        model_fields: false,
                        reasoning_history: history,
                        unsent_sampling: Vec::new(),
                    })
                };
                seen.push((Arc::clone(&attempt.model), shape.clone()));
                shape
            }
        };
        match shape {
            Some(mut shape) => {
                // Per attempt, not per model: the fields may name one profile of the model.
                shape.model_fields =
                    model_fields_go(request, &attempt, attempt.model == *primary, reasons);
                // Reasoning goes back only to the API that made it: a Responses reasoning
                // item (it has an id) to Bedrock's OpenAI-compatible APIs, Converse's
                // blocks to Converse.
                if shape.reasoning_history && !history_fits_api(request, &attempt) {
                    shape.reasoning_history = false;
                    let said = reasons.iter().any(|r| {
                        matches!(r, Reason::ReasoningHistoryDropped { model } if *model == attempt.model)
                    });
                    if !said {
                        reasons.push(Reason::ReasoningHistoryDropped {
                            model: Arc::clone(&attempt.model),
                        });
                    }
                }
                attempt.shape = shape;
                kept.push(attempt);
            }
            None => reasons.push(Reason::TargetExcluded {
                target: attempt.target.id.clone(),
                region: attempt.target.region.clone(),
                why: Exclusion::NoStructuredOutput,
            }),
        }
    }
    *attempts = kept;
    Ok(())
}

/// Sends each attempt without the sampling parameters its model refuses, saying so once per
/// model and parameter.
fn leave_out_refused_sampling(
    request: &GenerateRequest,
    config: &Config,
    attempts: &mut [Attempt],
    reasons: &mut Vec<Reason>,
) {
    let set = [
        (
            SamplingParameter::Temperature,
            request.inference.temperature.is_some(),
        ),
        (SamplingParameter::TopP, request.inference.top_p.is_some()),
    ];
    if set.iter().all(|(_, set)| !set) {
        return;
    }
    for attempt in attempts {
        let Some(model) = config.models.get(&*attempt.model) else {
            continue;
        };
        for (parameter, is_set) in set {
            if !is_set || !model.refused_sampling().contains(&parameter) {
                continue;
            }
            attempt.shape.unsent_sampling.push(parameter);
            let why = format!(
                "{} takes no {}: sent without it",
                attempt.model,
                parameter.field()
            );
            let said = reasons.iter().any(|r| {
                matches!(r, Reason::FieldNotHonoured { field, why: w } if field == parameter.field() && *w == why)
            });
            if !said {
                reasons.push(Reason::FieldNotHonoured {
                    field: parameter.field().to_string(),
                    why,
                });
            }
        }
    }
}

/// Leaves out the attempts where the guardrail cannot be applied: APIs other than Converse,
/// and regions other than the one its ARN names (a guardrail is regional). An error
/// when none is left.
fn keep_guarded(
    g: &crate::types::Guardrail,
    primary: &Arc<str>,
    attempts: &mut Vec<Attempt>,
    reasons: &mut Vec<Reason>,
) -> Result<()> {
    let before = attempts.len();
    attempts.retain(|a| {
        let ok =
            a.target.api.applies_guardrails() && g.region().is_none_or(|r| r == a.target.region());
        if !ok {
            reasons.push(Reason::TargetExcluded {
                target: a.target.id.clone(),
                region: a.target.region.clone(),
                why: Exclusion::NoGuardrail,
            });
        }
        ok
    });
    if attempts.is_empty() && before > 0 {
        return Err(Error::invalid(
            "guardrail",
            format!(
                "no target of {primary} can apply guardrail {:?} (a Bedrock guardrail, in its own region)",
                g.identifier
            ),
        ));
    }
    Ok(())
}

/// Leaves out the attempts (a policy's own included) by APIs that cannot carry the
/// request; an error naming the part when none is left.
fn keep_carried(
    request: &GenerateRequest,
    config: &Config,
    primary: &Arc<str>,
    attempts: &mut Vec<Attempt>,
    reasons: &mut Vec<Reason>,
) -> Result<()> {
    let mut refused: Option<(String, String)> = None;
    let before = attempts.len();
    attempts.retain(|a| {
        let why = config
            .models
            .get(&*a.model)
            .and_then(|m| m.cannot_carry(request, a.target.api));
        match why {
            Some(why) => {
                reasons.push(Reason::TargetExcluded {
                    target: a.target.id.clone(),
                    region: a.target.region.clone(),
                    why: Exclusion::NotCarried,
                });
                refused.get_or_insert(why);
                false
            }
            None => true,
        }
    });
    match refused {
        Some((field, why)) if attempts.is_empty() && before > 0 => Err(Error::invalid(
            field,
            format!("no target of {primary} can carry it: {why}"),
        )),
        _ => Ok(()),
    }
}

/// Says which of the request's fields the attempts on Bedrock's OpenAI-compatible APIs go
/// without, and which models' broken streams cannot be continued (nothing is dropped
/// silently).
fn note_what_apis_lack(
    request: &GenerateRequest,
    config: &Config,
    attempts: &[Attempt],
    reasons: &mut Vec<Reason>,
) {
    // Only a plan with an attempt by such an API looks for the request's checkpoints.
    let mut has_checkpoints = None;
    for a in attempts {
        let caches_by_api = |m: &ModelConfig| {
            m.prompt_cache()
                .is_some_and(|rules| rules.apis.contains(&a.target.api))
        };
        let model = config.models.get(&*a.model);
        if a.target.api.is_openai_compatible() || !model.is_some_and(caches_by_api) {
            let has_checkpoints =
                *has_checkpoints.get_or_insert_with(|| !request.pinned_cache_points().is_empty());
            let uncached = model.is_some_and(|m| m.prompt_cache().is_some() && !caches_by_api(m));
            let lacking = [
                (
                    "metadata",
                    a.target.api.is_openai_compatible() && !request.metadata.is_empty(),
                ),
                (
                    "latency_optimized",
                    a.target.api.is_openai_compatible() && a.latency_optimized,
                ),
                ("cache checkpoints", has_checkpoints && uncached),
            ];
            for (field, set) in lacking {
                let said = reasons.iter().any(|r| {
                    matches!(r, Reason::NotSentTo { model, api, field: f }
                        if *model == a.model && *api == a.target.api && *f == field)
                });
                if set && !said {
                    reasons.push(Reason::NotSentTo {
                        model: Arc::clone(&a.model),
                        api: a.target.api,
                        field,
                    });
                }
            }
        }
        if request.continue_on_interrupt
            && !config
                .models
                .get(&*a.model)
                .is_none_or(ModelConfig::continues_a_prefill)
            && !reasons
                .iter()
                .any(|r| matches!(r, Reason::ContinuationRefused { model } if *model == a.model))
        {
            reasons.push(Reason::ContinuationRefused {
                model: Arc::clone(&a.model),
            });
        }
    }
}

/// The reasoning `model` gets, recording how (or why none).
fn reasoning_for(
    request: &GenerateRequest,
    config: &Config,
    name: &Arc<str>,
    model: &ModelConfig,
    asked: Option<Reasoning>,
    required: bool,
    reasons: &mut Vec<Reason>,
) -> Result<Option<crate::types::ReasoningWire>> {
    let Some(asked) = asked else {
        return Ok(None);
    };
    let refused = match model.reasoning() {
        None => ("reasoning", format!("{name} does not reason")),
        Some(r) => match r.wire_without(
            request,
            &asked,
            config.routing.default_output_tokens,
            model.refused_sampling(),
        ) {
            Ok(mut wire) => {
                wire.history = true;
                reasons.push(Reason::ReasoningMapped {
                    model: Arc::clone(name),
                    sent: ReasoningConfig::describe(&wire),
                });
                return Ok(Some(wire));
            }
            Err((field, why)) => (field, format!("{name}: {why}")),
        },
    };
    if required {
        return Err(Error::invalid(refused.0, refused.1));
    }
    reasons.push(Reason::ReasoningDropped {
        model: Arc::clone(name),
        why: refused.1,
    });
    Ok(None)
}

/// Whether the request's model fields go with `attempt`: it is on the model they were written
/// for (the request's own model when they name none).
fn model_fields_go(
    request: &GenerateRequest,
    attempt: &Attempt,
    is_primary: bool,
    reasons: &mut Vec<Reason>,
) -> bool {
    let Some(fields) = &request.model_fields else {
        return false;
    };
    let goes = attempt.target.api.takes_model_fields()
        && match &fields.model {
            None => is_primary,
            Some(written_for) => names_model(written_for, &attempt.model, attempt.target.id()),
        };
    let already = reasons
        .iter()
        .any(|r| matches!(r, Reason::ModelFieldsDropped { model, .. } if *model == attempt.model));
    if !goes && !already {
        reasons.push(Reason::ModelFieldsDropped {
            model: Arc::clone(&attempt.model),
            written_for: fields
                .model
                .clone()
                .unwrap_or_else(|| "the request's model".into()),
        });
    }
    goes
}

/// Whether the conversation's reasoning was made by the API `attempt` goes by: Responses
/// reasoning items carry their id, Converse's blocks none.
fn history_fits_api(request: &GenerateRequest, attempt: &Attempt) -> bool {
    let from_responses = request.messages.iter().flat_map(|m| &m.content).any(|b| {
        matches!(
            b,
            crate::types::ContentBlock::Reasoning(crate::types::ReasoningBlock::Text(t))
                if t.id.is_some()
        )
    });
    from_responses == attempt.target.api.is_openai_compatible()
}

/// Whether `id` (a configured name, a model id or an inference-profile id) names `model`.
fn names_model(id: &str, model: &str, target: &str) -> bool {
    id == model || id == target || id.split_once('.').is_some_and(|(_, bare)| bare == model)
}

/// Whether the conversation's reasoning blocks go to `model`: only to a model that spells
/// reasoning as the request's own model does (a signature is checked by the model family that
/// made it).
fn history_goes(
    model: &ModelConfig,
    primary_format: Option<crate::config::ReasoningFormat>,
    name: &Arc<str>,
    reasons: &mut Vec<Reason>,
) -> bool {
    let format = model.reasoning().map(|r| r.format);
    let goes = format.is_some() && format == primary_format;
    if !goes {
        reasons.push(Reason::ReasoningHistoryDropped {
            model: Arc::clone(name),
        });
    }
    goes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_ids_name_their_model() {
        let m = "anthropic.claude-sonnet-4-5-20250929-v1:0";
        assert!(names_model(m, m, "us.x"));
        assert!(names_model(&format!("us.{m}"), m, "eu.x"));
        assert!(!names_model("amazon.nova-lite-v1:0", m, "us.x"));
    }
}
