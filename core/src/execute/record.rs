//! A call's line for the trace (`[record]`): built when a sampled call ends, from what its run
//! knew (the request, the plan, the response or the error), and handed to the recorder.

use std::time::Duration;

use crate::plan::Plan;
use crate::plan::prompt_cache::Prefix;
use crate::telemetry::record::{
    AttemptRecord, CallRecord, HedgeRecord, PrefixDigest, Recorder, TargetRef, unix_ms,
};
use crate::types::{
    Boundary, Error, FailedAttempt, GenerateRequest, GenerateResponse, ModelRef, Reason, Residency,
    TimeLimit,
};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What a run hands over when its call ends.
pub(super) struct Ended<'a> {
    pub request: &'a GenerateRequest,
    pub plan: &'a Plan,
    /// How long the call took, from its arrival.
    pub elapsed: Duration,
    /// The scope of the target that served: a profile's prefix (`us`, `global`), else
    /// `in_region`.
    pub scope: Option<&'a str>,
    /// Where the hedged first attempt and its hedge went, when a hedge went.
    pub hedge_targets: Option<&'a [TargetRef; 2]>,
    /// The answering attempt's own first token, from its own start.
    pub served_ttft: Option<Duration>,
    /// The answer, or the error with the attempts that failed before it.
    pub outcome: Result<&'a GenerateResponse, (&'a Error, Vec<FailedAttempt>)>,
}

/// The call's line, when the recorder samples it.
pub(super) fn call(recorder: &Recorder, ended: Ended<'_>) -> Option<CallRecord> {
    if !recorder.sampled() {
        return None;
    }
    let Ended {
        request,
        plan,
        elapsed,
        scope,
        hedge_targets,
        served_ttft,
        outcome,
    } = ended;
    let mut r = CallRecord {
        at_ms: unix_ms().saturating_sub(u64::try_from(elapsed.as_millis()).unwrap_or(0)),
        class: request.slo.class.as_str().to_string(),
        ttft_target_ms: request.slo.ttft_target.map(|d| d.as_millis() as u64),
        deadline_ms: request.slo.deadline.map(|d| d.as_millis() as u64),
        requested: match &request.model {
            ModelRef::Default => None,
            ModelRef::Model(m) | ModelRef::Family(m) => Some(m.clone()),
        },
        family: plan.family.as_deref().map(String::from),
        residency: request.residency.as_ref().map(|r| match r {
            Residency::Geography(g) => format!("geography:{g}"),
            Residency::Regions(regions) => format!("regions:{}", regions.join("+")),
        }),
        total_ms: ms(elapsed),
        task: request
            .task_id
            .as_deref()
            .map(|t| recorder.digest(t.as_bytes())),
        prefixes: prefixes(recorder, plan),
        ..CallRecord::default()
    };
    let reasons = match &outcome {
        Ok(resp) => &resp.decision.reasons,
        Err(_) => &plan.reasons,
    };
    for reason in reasons {
        if let Reason::VariantScored {
            scores,
            band,
            kind,
            novelty,
            ..
        } = reason
        {
            r.band = Some(*band);
            r.kind = Some((*kind).to_string());
            r.scores = scores.clone();
            r.novelty = *novelty;
        }
    }
    let failed = match outcome {
        Ok(resp) => {
            let d = &resp.decision;
            r.call_id = Some(d.call_id.clone());
            r.model = Some(d.model.clone());
            r.target = Some(d.target.clone());
            r.region = Some(d.region.clone());
            r.scope = scope.map(str::to_string);
            r.tier = d.tier.map(|t| t.as_str().to_string());
            r.served_tier = d.served_tier.map(|t| t.as_str().to_string());
            let u = &resp.usage;
            r.input_tokens = u.input_tokens;
            r.output_tokens = u.output_tokens;
            r.cache_read_tokens = u.cache_read_tokens;
            r.cache_write_tokens = u.cache_write_tokens;
            r.reasoning_tokens = u.reasoning_tokens;
            let t = &resp.timings;
            r.ttft_ms = t.ttft.map(ms);
            r.attempt_ttft_ms = served_ttft.filter(|_| t.ttft.is_some()).map(ms);
            r.inter_token_ms = t.inter_token.map(|i| [ms(i.mean), ms(i.p90), ms(i.max)]);
            r.total_ms = ms(t.total);
            r.hedge = d
                .hedge
                .as_ref()
                .zip(hedge_targets)
                .map(|(h, [first, second])| HedgeRecord {
                    delay_ms: ms(h.delay),
                    first: first.clone(),
                    second: second.clone(),
                    won: h.hedge_won,
                });
            r.cost_usd = resp.cost_usd;
            if recorder.include_text() {
                r.answer = Some(resp.text());
            }
            d.failed_attempts.clone()
        }
        Err((e, attempts)) => {
            r.error = Some(e.kind().as_str().to_string());
            r.model = Some(plan.model.to_string());
            attempts
        }
    };
    // The first-token limits that ended attempts, in order, to give each its wait.
    let mut cut: Vec<(&str, &str, u64)> = reasons
        .iter()
        .filter_map(|r| match r {
            Reason::TimeLimitHit {
                limit: TimeLimit::FirstToken,
                target,
                region,
                after_ms,
                ..
            } => Some((&**target, &**region, *after_ms)),
            _ => None,
        })
        .collect();
    r.attempts = failed
        .iter()
        .map(|f| {
            let waited = cut
                .iter()
                .position(|(t, reg, _)| *t == f.target && *reg == f.region)
                .map(|i| cut.remove(i).2 as f64);
            AttemptRecord {
                target: f.target.clone(),
                region: f.region.clone(),
                tier: f.tier.map(|t| t.as_str().to_string()),
                kind: f.kind.as_str().to_string(),
                first_token_after_ms: waited,
            }
        })
        .collect();
    if recorder.include_text() {
        r.prompt = serde_json::to_string(&serde_json::json!({
            "system": request.system,
            "messages": request.messages,
        }))
        .ok();
    }
    Some(r)
}

/// The prompt's prefixes at its tools, its system blocks and its checkpoints, keyed.
fn prefixes(recorder: &Recorder, plan: &Plan) -> Vec<PrefixDigest> {
    let cache = &plan.cache;
    let checkpoint = |p: &Prefix| cache.checkpoints.iter().any(|c| c.at == p.at);
    cache
        .prefixes
        .iter()
        .filter(|p| matches!(p.at, Boundary::Tools | Boundary::System(_)) || checkpoint(p))
        .map(|p| PrefixDigest {
            digest: recorder.digest(&p.digest.0),
            tokens: p.tokens,
            checkpoint: checkpoint(p),
        })
        .collect()
}
