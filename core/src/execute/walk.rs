//! The one attempt loop: walks a plan's attempts until one answers, for a streamed call and a
//! whole answer alike; fails over while nothing has reached the caller, continues a broken
//! stream from its delivered text when asked to, and reports how much was delivered when it
//! cannot.

use std::sync::Arc;

use futures::StreamExt;

use super::assembly::Assembly;
use super::attempt::InFlight;
use super::open::{Opened, hedge_delay, open, open_bounds, open_hedged, sent_whole, settled};
use super::run::Run;
use super::{Executor, ResponseStream};
use crate::backend::{BackendEvent, Completion};
use crate::plan::Plan;
use crate::types::{Error, ErrorKind, ServiceError, TimeLimit};
use crate::types::{GenerateRequest, GenerateResponse, Message, StreamEvent, Usage};

/// The request sent to continue a broken stream: the delivered text as the assistant's prefill.
fn continuation(request: &GenerateRequest, delivered: &str) -> GenerateRequest {
    let mut next = request.clone();
    // Bedrock refuses a prefill that ends in white space; the model resumes after it.
    let prefill = delivered.trim_end();
    if !prefill.is_empty() {
        next.messages.push(Message::assistant(prefill));
    }
    next
}

/// How the answer reaches the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Every event as it comes ([`Router::stream`](crate::Router::stream)).
    Events,
    /// Only the completed answer ([`Router::generate`](crate::Router::generate)): a broken
    /// attempt fails over invisibly, since the caller has seen nothing, and an attempt sent
    /// whole hands its answer on as it came.
    Answer,
}

/// The completed answer of `inflight`, with the output of attempts it continues (`carried`):
/// priced, timed and credited to its target.
fn complete<'a>(
    run: &mut Run<'a>,
    inflight: InFlight<'a>,
    mut done: Completion,
    carried: &Usage,
) -> GenerateResponse {
    done.usage.output_tokens = done
        .usage
        .output_tokens
        .saturating_add(carried.output_tokens);
    done.usage.input_tokens = done.usage.input_tokens.saturating_add(carried.input_tokens);
    let longest_gap = run.clock.attempt_longest_gap();
    let timings = run.clock.finish(done.usage.output_tokens);
    run.served_ttft = inflight.own_ttft();
    let response = run.respond(&inflight.attempt, done, timings);
    let served = response.decision.served_tier.or(response.decision.tier);
    inflight.succeed(&response.usage, &response.timings, served, longest_gap);
    response
}

/// Walks `plan` for `request` until an attempt answers or nothing more may be tried. Each
/// attempt is streamed, unless `send_whole` says every attempt goes whole (or its endpoint
/// does not stream): a hedge then goes by elapsed time.
pub(super) fn walk(
    exec: Arc<Executor>,
    request: GenerateRequest,
    plan: Plan,
    delivery: Delivery,
    send_whole: bool,
) -> ResponseStream {
    let events = async_stream::stream! {
        let exec = &*exec;
        let hedges = exec.hedges(&request, &plan);
        let mut run = Run::new(exec, &request, plan);
        let mut assembly = Assembly::default();
        // Output already delivered by attempts that broke, when continuing.
        let mut carried = Usage::default();
        let mut resumed: Option<GenerateRequest> = None;
        // The idle limit's one timer, for every wait between events.
        let mut idle_timer = super::limits::IdleTimer::new(run.limits.deadline());
        loop {
            let Some(first) = run.next_attempt().await else {
                let e = run.exhausted();
                yield Err(run.failed_with(e));
                return;
            };
            let req = resumed.as_ref().unwrap_or(&request);
            let mut first = first;
            let hedge_after = if hedges && run.sent() == 1 && resumed.is_none() {
                let whole = send_whole || sent_whole(exec, &first.attempt).is_some();
                hedge_delay(exec, &run, req, &first.attempt, whole)
            } else {
                None
            };
            let (mut inflight, opened) = if let Some(delay) = hedge_after {
                open_hedged(exec, &mut run, req, first, delay, send_whole).await
            } else {
                let cps = run.checkpoints_for(&first.attempt);
                let bounds = open_bounds(&run, &mut first);
                open(exec, req, cps, first, bounds, send_whole).await
            };
            if let Some(why) = inflight.sent_whole {
                let t = &inflight.attempt.target;
                run.reasons.push(crate::types::Reason::SentWhole { target: t.id.clone(), region: t.region.clone(), why });
            }
            let (mut events, mut pending) = match settled(opened) {
                // Nothing to assemble: the answer goes on as it came.
                Ok(Opened::Answered(done)) if delivery == Delivery::Answer => {
                    let response = complete(&mut run, inflight, done, &carried);
                    yield Ok(StreamEvent::Completed(Box::new(response)));
                    return;
                }
                Ok(opened) => opened.into_events(),
                Err(e) => {
                    if let Err(stop) = Box::pin(run.after_failure(inflight, e)).await {
                        // A continuation that cannot open still broke a delivered stream.
                        let stop = if assembly.yielded() > 0 {
                            Error::StreamInterrupted { delivered: assembly.delivered(), cause: Box::new(stop) }
                        } else {
                            stop
                        };
                        yield Err(run.failed_with(stop));
                        return;
                    }
                    continue;
                }
            };
            // Read once per attempt: the idle limit's length for every wait of its stream.
            let limits = run.attempt_limits(&mut inflight);
            let tool_idle = (limits.class_idle, crate::types::LimitSource::Class);
            // Whether a tool-use block is open: tool input streams at its model's own pace.
            let mut in_tool = false;
            loop {
                let next = match pending.take() {
                    Some(ev) => Some(ev),
                    None => {
                        let limit = if in_tool { tool_idle } else { limits.idle };
                        // A learnt limit that fires while this process is behind waits on.
                        let mut extended = None;
                        loop {
                            let idle = || extended.unwrap_or_else(|| run.bound_from(TimeLimit::Idle, limit));
                            let waited = idle_timer.wait(idle, events.next()).await;
                            match waited {
                                Ok(next) => break next,
                                Err(fired) => match fired.grace().await {
                                    Some(later) => extended = Some(later),
                                    None => break Some(Err(inflight.timed_out(fired))),
                                },
                            }
                        }
                    }
                };
                if let Some(Ok(ev)) = &next {
                    match ev {
                        BackendEvent::ToolUseStart { .. } => in_tool = true,
                        BackendEvent::TextDelta { .. } | BackendEvent::ReasoningDelta { .. } => in_tool = false,
                        _ => {}
                    }
                }
                let failure = match next {
                    Some(Ok(ev)) if delivery != Delivery::Events => {
                        if let Some(out) = assembly.apply(ev).filter(StreamEvent::is_delta)
                            && !inflight.answered_whole
                        {
                            run.clock.delta(out.is_reasoning());
                        }
                        continue;
                    }
                    Some(Ok(ev)) => {
                        if let Some(out) = assembly.take(ev) {
                            if out.is_delta() {
                                run.clock.delta(out.is_reasoning());
                            }
                            yield Ok(out);
                        }
                        continue;
                    }
                    Some(Err(e)) if !assembly.is_complete() => e,
                    None if !assembly.is_complete() => Error::from(ServiceError::new(
                        ErrorKind::Transport,
                        "the stream ended before the model's stop event",
                        inflight.attempt.target.id(),
                        inflight.attempt.target.region(),
                    )),
                    // The model's stop event came: the answer is whole, and an error after it
                    // (a connection dropped before the usage event) interrupts nothing.
                    _ => {
                        let done = std::mem::take(&mut assembly).into_completion();
                        let response = complete(&mut run, inflight, done, &carried);
                        yield Ok(StreamEvent::Completed(Box::new(response)));
                        return;
                    }
                };
                if assembly.yielded() == 0 {
                    // Nothing reached the caller: another target may still serve it whole.
                    assembly = Assembly::default();
                    run.clock.restart_attempt();
                    if let Err(stop) = Box::pin(run.after_failure(inflight, failure)).await {
                        yield Err(run.failed_with(stop));
                        return;
                    }
                } else if request.continue_on_interrupt
                    && super::verdict::judge(&exec.state, &inflight.attempt, &failure).fails_over
                    && !assembly.reasoned()
                    && run.continues_a_prefill(&inflight.attempt)
                {
                    // (After reasoning, no model takes the delivered text as a prefill: Claude
                    // refuses a prefill with thinking on. The stream ends interrupted instead.)
                    // Another attempt (the next target, or a new round) continues from the
                    // delivered text, if the deadline and the budget allow one.
                    let delivered = assembly.delivered();
                    let failed_target = inflight.attempt.target.id().to_string();
                    let kind = failure.kind();
                    if let Err(stop) = Box::pin(run.after_failure(inflight, failure)).await {
                        yield Err(run.failed_with(Error::StreamInterrupted { delivered, cause: Box::new(stop) }));
                        return;
                    }
                    carried.output_tokens = delivered.output_tokens;
                    carried.input_tokens = carried.input_tokens.saturating_add(crate::types::units::token_count(request.estimated_input_tokens()));
                    resumed = Some(continuation(&request, &assembly.text()));
                    assembly.resume();
                    run.clock.continue_attempt();
                    yield Ok(StreamEvent::Continued { delivered, failed_target, kind });
                } else {
                    let delivered = assembly.delivered();
                    run.record_failed(inflight, failure.clone());
                    yield Err(run.failed_with(Error::StreamInterrupted { delivered, cause: Box::new(failure) }));
                    return;
                }
                break;
            }
        }
    };
    ResponseStream::new(events)
}
