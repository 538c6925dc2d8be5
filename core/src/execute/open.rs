//! Opening one attempt: streamed until its first event, or sent whole until its answer; and a
//! hedged first attempt, raced against a second target when its first event is late.

use std::time::Duration;

use futures::StreamExt;
use futures::future::Either;

use super::Executor;
use super::attempt::InFlight;
use super::limits::Bound;
use super::run::Run;
use crate::backend::{Backend, BackendEvent, Call, Completion, EventStream};
use crate::types::{Attempt, Checkpoint, Error, FailureFact, GenerateRequest, HedgeReport};
use crate::types::{Result, TimeLimit, WholeWhy};

/// What opening an attempt gave.
pub(super) enum Opened {
    /// A stream, with its first event (`None`: it ended at once).
    Streaming(EventStream, Option<Result<BackendEvent>>),
    /// A whole answer (the attempt was sent whole).
    Answered(Completion),
}

impl Opened {
    /// Its events: a stream's as they come, a whole answer's at once.
    pub(super) fn into_events(self) -> (EventStream, Option<Result<BackendEvent>>) {
        match self {
            Opened::Streaming(events, first) => (events, first),
            Opened::Answered(done) => {
                let mut events = done.into_events().into_iter().map(Ok);
                let first = events.next();
                (futures::stream::iter(events).boxed(), first)
            }
        }
    }
}

/// The bounds of opening one attempt: its first event's, and a whole answer's.
#[derive(Clone, Copy)]
pub(super) struct OpenBounds {
    pub(super) first_token: Bound,
    pub(super) answer: Bound,
}

/// The bounds of opening `inflight` from now.
pub(super) fn open_bounds(run: &Run<'_>, inflight: &mut InFlight<'_>) -> OpenBounds {
    let limits = run.attempt_limits(inflight);
    OpenBounds {
        first_token: run.bound_from(TimeLimit::FirstToken, limits.first_token),
        answer: run.bound_from(TimeLimit::Answer, limits.answer),
    }
}

/// Why `attempt` is sent whole, if it is: an endpoint configured not to stream, or one that
/// refused to.
pub(super) fn sent_whole(exec: &Executor, attempt: &Attempt) -> Option<WholeWhy> {
    let t = &attempt.target;
    let configured = exec
        .config
        .models
        .get(&*attempt.model)
        .and_then(|m| m.streams_at(t.id(), t.region()));
    match configured {
        Some(false) => Some(WholeWhy::Configured),
        Some(true) => None,
        None if exec.state.health().refuses_streaming(t.region(), t.id()) => {
            Some(WholeWhy::Refused)
        }
        None => None,
    }
}

/// Sends one attempt and waits for its first event, until its first-token bound (or the call's
/// deadline when sooner); an endpoint that does not stream (configured so, or refusing the
/// stream now), or any attempt when `send_whole`, is sent the call whole, until its answer
/// bound, and its answer becomes the events.
pub(super) async fn open<'a>(
    exec: &Executor,
    request: &GenerateRequest,
    checkpoints: Vec<Checkpoint>,
    mut inflight: InFlight<'a>,
    bounds: OpenBounds,
    send_whole: bool,
) -> (InFlight<'a>, Result<Opened>) {
    let span = super::attempt::span(&inflight.attempt);
    if !send_whole {
        // Every attempt sent whole needs no reason; one that would have streamed says why not.
        inflight.sent_whole = sent_whole(exec, &inflight.attempt);
        if inflight.sent_whole.is_none() {
            match open_streamed(exec, request, &checkpoints, &mut inflight, bounds, &span).await {
                Err(e) if e.fact() == Some(FailureFact::StreamingRefused) => {
                    let t = &inflight.attempt.target;
                    exec.state
                        .health()
                        .record_refuses_streaming(t.region(), t.id());
                    inflight.sent_whole = Some(WholeWhy::Refused);
                }
                opened => {
                    return (first_event_now(inflight, &opened), opened);
                }
            }
        }
    }
    inflight.answered_whole = true;
    let answer = async {
        let (backend, call) = backend_call(exec, request, &inflight.attempt, &checkpoints)?;
        crate::telemetry::span::within(span, backend.generate(call)).await
    };
    let opened = match bounds.answer.run(answer).await {
        Ok(Ok(done)) => Ok(Opened::Answered(done)),
        Ok(Err(e)) => Err(e),
        Err(fired) => Err(inflight.timed_out(fired)),
    };
    (first_event_now(inflight, &opened), opened)
}

/// The backend for an attempt, and the call to send it.
fn backend_call<'a>(
    exec: &'a Executor,
    request: &'a GenerateRequest,
    attempt: &'a Attempt,
    checkpoints: &'a [Checkpoint],
) -> Result<(&'a dyn Backend, Call<'a>)> {
    let target = &attempt.target;
    let backend = exec.backends.for_target(target).ok_or_else(|| {
        Error::config(
            "backends",
            format!(
                "no backend is registered for provider {:?} by {}",
                target.provider.as_str(),
                target.api
            ),
        )
    })?;
    let model = exec.config.models.get(&*attempt.model).ok_or_else(|| {
        Error::config(
            "models",
            format!("{:?} is not a configured model", attempt.model),
        )
    })?;
    Ok((
        backend,
        Call {
            request,
            attempt,
            model,
            checkpoints,
        },
    ))
}

/// Opens the first attempt of a hedged call: when it has no first token after `delay` (its
/// target's usual worst), the region is suspected, the next candidate (elsewhere first) is
/// sent too, and whichever produces a token first is kept; the other is dropped, which
/// cancels its request. A hedge that fails is booked and the primary awaited, and the other
/// way round. When no candidate has room at that moment (every one full, or a fresh replica's
/// lease of them on its way), the hedge is asked for again each `delay` while the primary is
/// silent: it goes as soon as a target has room, never into a queue.
pub(super) async fn open_hedged<'a>(
    exec: &'a Executor,
    run: &mut Run<'a>,
    req: &GenerateRequest,
    mut first: InFlight<'a>,
    delay: Duration,
    send_whole: bool,
) -> (InFlight<'a>, Result<Opened>) {
    let primary_region = first.attempt.target.region().to_string();
    let primary = target_ref(&first.attempt);
    let cps = run.checkpoints_for(&first.attempt);
    let bounds = open_bounds(run, &mut first);
    let primary_target = primary;
    let primary = open(exec, req, cps, first, bounds, send_whole);
    futures::pin_mut!(primary);
    let mut suspected = false;
    let mut second = loop {
        let wait = Box::pin(tokio::time::sleep(delay));
        if let Either::Left((done, _)) = futures::future::select(primary.as_mut(), wait).await {
            return done;
        }
        if !suspected {
            // A late first token may be the region's fault: hedge elsewhere first.
            suspected = true;
            run.first_token_late(&primary_region);
            run.defer_region(&primary_region);
        }
        match run.next_attempt_now().await {
            Some(second) => break second,
            None if run.may_hedge_later() => {}
            None => return primary.await,
        }
    };
    let hedge_target = second.attempt.target.id().to_string();
    let second_target = target_ref(&second.attempt);
    let cps = run.checkpoints_for(&second.attempt);
    let bounds = open_bounds(run, &mut second);
    let hedge = open(exec, req, cps, second, bounds, send_whole);
    futures::pin_mut!(hedge);
    let (done, hedge_won) = match futures::future::select(primary, hedge).await {
        Either::Left((a, _loser)) if produced_a_token(&a.1) => (a, false),
        Either::Left((a, hedge)) => {
            if let Err(e) = settled(a.1) {
                run.record_failed(a.0, e);
            }
            (hedge.await, true)
        }
        Either::Right((b, _loser)) if produced_a_token(&b.1) => {
            run.hedge_answered_first(&primary_region);
            (b, true)
        }
        Either::Right((b, primary)) => {
            if let Err(e) = settled(b.1) {
                run.record_failed(b.0, e);
            }
            (primary.await, false)
        }
    };
    // The loser, if still running, was dropped above: its request is cancelled.
    run.hedge = Some(HedgeReport {
        delay,
        hedge_target,
        hedge_won,
    });
    run.hedge_targets = Some([primary_target, second_target]);
    done
}

/// Where an attempt goes, as the trace names it.
fn target_ref(attempt: &crate::types::Attempt) -> crate::telemetry::record::TargetRef {
    crate::telemetry::record::TargetRef {
        region: attempt.target.region().to_string(),
        target: attempt.target.id().to_string(),
        tier: attempt.tier.map(|t| t.as_str().to_string()),
    }
}

/// Opens the attempt's stream and waits for its first event, until its first-token bound.
async fn open_streamed(
    exec: &Executor,
    request: &GenerateRequest,
    checkpoints: &[Checkpoint],
    inflight: &mut InFlight<'_>,
    bounds: OpenBounds,
    span: &tracing::Span,
) -> Result<Opened> {
    let first = async {
        let (backend, call) = backend_call(exec, request, &inflight.attempt, checkpoints)?;
        let mut events = crate::telemetry::span::within(span.clone(), backend.stream(call)).await?;
        let first = events.next().await;
        Ok(Opened::Streaming(events, first))
    };
    match bounds.first_token.run(first).await {
        Ok(opened) => opened,
        Err(fired) => Err(inflight.timed_out(fired)),
    }
}

/// Notes when the attempt's own first event arrived (its TTFT), if it opened with one.
fn first_event_now<'a>(mut inflight: InFlight<'a>, opened: &Result<Opened>) -> InFlight<'a> {
    if produced_a_token(opened) {
        inflight.first_event = Some(tokio::time::Instant::now());
    }
    inflight
}

/// Whether the attempt opened with something of its answer: a first event, or all of it.
fn produced_a_token(opened: &Result<Opened>) -> bool {
    matches!(
        opened,
        Ok(Opened::Streaming(_, Some(Ok(_))) | Opened::Answered(_))
    )
}

/// An opened attempt, or its error (a stream whose first event is one fails with it).
pub(super) fn settled(opened: Result<Opened>) -> Result<Opened> {
    match opened {
        Ok(Opened::Streaming(_, Some(Err(e)))) => Err(e),
        other => other,
    }
}

/// How long the first attempt has before a hedge goes, if it is hedged at all: with a TTFT
/// target, its target's recent `routing.hedge.quantile` of first-token times (the TTFT target
/// itself before any were seen), within [min_delay, ttft_target]; without, its
/// `standard_quantile` once `routing.timeouts.learned.min_samples` are known, and before, its
/// model's prior (`ttft_p99`, plus the call's input at the prefill rate and a reasoning
/// call's allowance) blended with what the target has shown, so that a cold router hedges a
/// stall after what the model normally takes. An attempt sent whole hedges by elapsed time:
/// its prior part takes the answer's output at the prior's speed too.
pub(super) fn hedge_delay(
    exec: &Executor,
    run: &Run<'_>,
    request: &GenerateRequest,
    attempt: &Attempt,
    whole: bool,
) -> Option<Duration> {
    let routing = &exec.config.routing;
    let hedge = routing.hedge;
    let observed = |q| {
        exec.state.health().ttft_quantile(
            attempt.target.region(),
            attempt.target.id(),
            attempt.tier,
            q,
        )
    };
    if let Some(target) = request.slo.ttft_target {
        return Some(
            observed(hedge.quantile)
                .map_or(target / 2, |(d, _)| d)
                .min(target)
                .max(hedge.min_delay),
        );
    }
    let seen = observed(hedge.standard_quantile);
    if let Some((d, n)) = seen
        && n >= routing.timeouts.learned.min_samples as usize
    {
        // First tokens are learnt from streams: a whole answer also takes its generation.
        return Some(
            d.saturating_add(run.generation(attempt, whole))
                .max(hedge.min_delay),
        );
    }
    let (expected, weight) = run.expected_first_event(attempt, whole);
    if weight == 0 {
        // No prior: a guess would hedge a slow model's every call.
        return None;
    }
    let generation = run.generation(attempt, whole);
    let seen = seen.map(|(quantile, samples)| crate::state::Observed {
        quantile: quantile.saturating_add(generation),
        samples,
        cut: false,
    });
    Some(super::limits::Expected::blend(expected, weight, seen).max(hedge.min_delay))
}
