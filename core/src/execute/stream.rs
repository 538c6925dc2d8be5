//! Streaming execution: fails over while nothing has reached the caller, and after that reports
//! how much was delivered when a stream breaks.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

use std::time::Duration;

use futures::future::Either;

use super::attempt::InFlight;
use super::limits::Bound;
use super::{Executor, Run};
use crate::backend::{BackendEvent, Completion, EventStream};
use crate::plan::Plan;
use crate::types::Attempt;
use crate::types::Checkpoint;
use crate::types::{Delivered, Error, ErrorKind, Result, ServiceError, TimeLimit};
use crate::types::{GenerateRequest, Message};
use crate::types::{HedgeReport, OutputBlock, StopReason, StreamEvent, Usage};
use crate::types::{ReasoningBlock, ReasoningDelta, ReasoningText};

/// The events of one streamed call: deltas, then [`StreamEvent::Completed`]; or an error,
/// after which it ends. Dropping it cancels the call.
pub struct ResponseStream {
    inner: Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>,
    span: tracing::Span,
}

impl ResponseStream {
    /// The stream, polled inside `span`.
    pub(crate) fn instrumented(mut self, span: tracing::Span) -> Self {
        self.span = span;
        self
    }
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseStream")
    }
}

impl Stream for ResponseStream {
    type Item = Result<StreamEvent>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        // No subscriber wants the span: entering it would only cost (tracing's `log` fallback
        // formats nothing but still checks, twice per event).
        if this.span.is_disabled() {
            return this.inner.as_mut().poll_next(cx);
        }
        let _entered = this.span.enter();
        this.inner.as_mut().poll_next(cx)
    }
}

/// Content blocks as they arrive, by index.
#[derive(Default)]
struct Assembly {
    blocks: Blocks,
    stop: Option<StopReason>,
    usage: Option<Usage>,
    served_tier: Option<crate::types::ServiceTier>,
    invoked_model: Option<String>,
    model_response_fields: Option<serde_json::Value>,
    guardrail_trace: Option<serde_json::Value>,
    /// Citations of text blocks, by block index.
    cited: Vec<(u32, crate::types::Citation)>,
    delivered: Delivered,
    /// Events handed to the caller so far; failover is safe only while this is zero.
    yielded: u32,
    /// Where a continuing attempt's blocks go, once a broken stream is continued.
    resumed: Option<Resumed>,
}

/// Where the blocks of an attempt that continues a broken stream go: its text onto the text
/// block it continues, its other blocks after every block delivered. Backends number their
/// blocks their own way (Converse from 0, an OpenAI-compatible server's text at 1), so the
/// continuing attempt's numbers say nothing about the broken one's.
#[derive(Debug, Clone, Copy)]
struct Resumed {
    /// The block the continuing attempt's text goes onto.
    text: u32,
    /// Where its other blocks start.
    after: u32,
    /// The continuing attempt's own number for its text, once seen: its citations of that
    /// block go with the text.
    own_text: Option<u32>,
}

/// An answer's content blocks, kept in index order: a handful, nearly always arriving in that
/// order, each delta for the block the last one went to (a vector with that fast path, not a
/// tree).
#[derive(Default)]
struct Blocks(Vec<(u32, Block)>);

impl Blocks {
    /// Where the block at `index` is (`Ok`), or would go (`Err`).
    fn position(&self, index: u32) -> Result<usize, usize> {
        match self.0.last() {
            Some((last, _)) if *last == index => Ok(self.0.len() - 1),
            Some((last, _)) if *last < index => Err(self.0.len()),
            _ => self.0.binary_search_by_key(&index, |(i, _)| *i),
        }
    }

    fn get_mut(&mut self, index: u32) -> Option<&mut Block> {
        let at = self.position(index).ok()?;
        Some(&mut self.0[at].1)
    }

    /// The block at `index`, a new text block if there is none.
    fn get_or_text(&mut self, index: u32) -> &mut Block {
        let at = self.position(index).unwrap_or_else(|at| {
            self.0.insert(at, (index, Block::Text(String::new())));
            at
        });
        &mut self.0[at].1
    }

    /// Sets the block at `index`, replacing one there.
    fn set(&mut self, index: u32, block: Block) {
        match self.position(index) {
            Ok(at) => self.0[at].1 = block,
            Err(at) => self.0.insert(at, (index, block)),
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Block> {
        self.0.iter().map(|(_, b)| b)
    }

    fn into_indexed(self) -> impl Iterator<Item = (u32, Block)> {
        self.0.into_iter()
    }
}

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Reasoning {
        text: String,
        signature: Option<String>,
        redacted: Option<Vec<u8>>,
        id: Option<String>,
    },
}

impl Assembly {
    /// Takes in a backend event; returns what the caller sees of it.
    fn take(&mut self, ev: BackendEvent) -> Option<StreamEvent> {
        let out = self.apply(ev);
        self.yielded += u32::from(out.is_some());
        out
    }

    /// The next attempt continues what was delivered, from its text: blocks the broken
    /// attempt began after its last text (a tool call cut short) are dropped, since the
    /// continuing model makes them again.
    fn resume(&mut self) {
        // Numbers past every block delivered, dropped ones too: the caller saw those.
        let after = self.blocks.0.last().map_or(0, |(i, _)| i.saturating_add(1));
        let last_text = self
            .blocks
            .0
            .iter()
            .rposition(|(_, b)| matches!(b, Block::Text(_)));
        self.blocks.0.truncate(last_text.map_or(0, |at| at + 1));
        self.resumed = Some(match last_text {
            Some(at) => Resumed {
                text: self.blocks.0[at].0,
                after,
                own_text: None,
            },
            // Nothing delivered was text: the continuation's text is a block of its own.
            None => Resumed {
                text: after,
                after: after.saturating_add(1),
                own_text: None,
            },
        });
    }

    fn apply(&mut self, mut ev: BackendEvent) -> Option<StreamEvent> {
        if let Some(r) = &mut self.resumed {
            match &mut ev {
                BackendEvent::TextDelta { index, .. } => {
                    r.own_text.get_or_insert(*index);
                    *index = r.text;
                }
                BackendEvent::CitationDelta { index, .. } if r.own_text == Some(*index) => {
                    *index = r.text
                }
                BackendEvent::ToolUseStart { index, .. }
                | BackendEvent::ToolUseDelta { index, .. }
                | BackendEvent::CitationDelta { index, .. }
                | BackendEvent::ReasoningDelta { index, .. } => {
                    *index = index.saturating_add(r.after)
                }
                _ => {}
            }
        }
        match ev {
            BackendEvent::TextDelta { index, text } => {
                match self.blocks.get_or_text(index) {
                    Block::Text(t) => t.push_str(&text),
                    Block::Tool { json, .. } => json.push_str(&text),
                    // Answer text in a reasoning block's slot: a service bug; keep the text.
                    Block::Reasoning { text: r, .. } => r.push_str(&text),
                }
                self.delivered.deltas += 1;
                self.delivered.text_chars += text.chars().count();
                Some(StreamEvent::TextDelta { index, text })
            }
            BackendEvent::ToolUseStart { index, id, name } => {
                self.blocks.set(
                    index,
                    Block::Tool {
                        id: id.clone(),
                        name: name.clone(),
                        json: String::new(),
                    },
                );
                Some(StreamEvent::ToolUseStart { index, id, name })
            }
            BackendEvent::ToolUseDelta { index, input_json } => {
                if let Some(Block::Tool { json, .. }) = self.blocks.get_mut(index) {
                    json.push_str(&input_json);
                }
                self.delivered.deltas += 1;
                Some(StreamEvent::ToolUseDelta { index, input_json })
            }
            BackendEvent::CitationDelta { index, citation } => {
                self.cited.push((index, citation.clone()));
                Some(StreamEvent::CitationDelta { index, citation })
            }
            BackendEvent::ReasoningDelta { index, delta } => {
                let block = match self.blocks.get_mut(index) {
                    Some(b @ Block::Reasoning { .. }) => b,
                    // A reasoning delta in another kind of block's slot: a service bug; the
                    // block keeps what it has, the caller still sees the delta.
                    Some(_) => {
                        self.delivered.deltas += 1;
                        return Some(StreamEvent::ReasoningDelta { index, delta });
                    }
                    None => {
                        self.blocks.set(
                            index,
                            Block::Reasoning {
                                text: String::new(),
                                signature: None,
                                redacted: None,
                                id: None,
                            },
                        );
                        self.blocks.get_mut(index).expect("just set")
                    }
                };
                if let Block::Reasoning {
                    text,
                    signature,
                    redacted,
                    id,
                } = block
                {
                    match &delta {
                        ReasoningDelta::Text(t) => text.push_str(t),
                        ReasoningDelta::Signature(s) => {
                            signature.get_or_insert_with(String::new).push_str(s)
                        }
                        ReasoningDelta::Redacted(b) => {
                            redacted.get_or_insert_with(Vec::new).extend_from_slice(b)
                        }
                        ReasoningDelta::Id(i) => *id = Some(i.clone()),
                    }
                }
                self.delivered.deltas += 1;
                Some(StreamEvent::ReasoningDelta { index, delta })
            }
            BackendEvent::Stop(reason) => {
                self.stop = Some(reason);
                None
            }
            BackendEvent::GuardrailTrace(trace) => {
                self.guardrail_trace = Some(trace);
                None
            }
            BackendEvent::StopWithFields(reason, fields) => {
                self.stop = Some(reason);
                self.model_response_fields = Some(fields);
                None
            }
            BackendEvent::Metadata {
                usage,
                served_tier,
                invoked_model,
            } => {
                self.usage = Some(usage);
                self.served_tier = served_tier;
                self.invoked_model = invoked_model;
                None
            }
        }
    }

    /// The model said it stopped (usage may be missing where a container sends none).
    fn is_complete(&self) -> bool {
        self.stop.is_some()
    }

    /// The text of every text block so far.
    fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    fn delivered(&self) -> Delivered {
        Delivered {
            output_tokens: self.delivered.deltas,
            ..self.delivered
        }
    }

    fn into_completion(self) -> Completion {
        let mut cited = self.cited;
        let content = self
            .blocks
            .into_indexed()
            .map(|(index, b)| match b {
                Block::Text(t) if cited.iter().any(|(i, _)| *i == index) => {
                    let (of_block, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut cited)
                        .into_iter()
                        .partition(|(i, _)| *i == index);
                    cited = rest;
                    OutputBlock::Citations(crate::types::CitationsContent {
                        content: vec![t],
                        citations: of_block.into_iter().map(|(_, c)| c).collect(),
                    })
                }
                Block::Text(t) => OutputBlock::Text(t),
                Block::Tool { id, name, json } => OutputBlock::ToolUse {
                    id,
                    name,
                    input: if json.is_empty() {
                        serde_json::json!({})
                    } else {
                        serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json))
                    },
                },
                Block::Reasoning {
                    redacted: Some(data),
                    ..
                } => OutputBlock::Reasoning(ReasoningBlock::Redacted(data)),
                Block::Reasoning {
                    text,
                    signature,
                    id,
                    ..
                } => OutputBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                    text,
                    signature,
                    id,
                })),
            })
            .collect();
        Completion {
            content,
            stop_reason: self.stop.unwrap_or(StopReason::EndTurn),
            usage: self.usage.unwrap_or(Usage {
                output_tokens: self.delivered.deltas,
                input_estimated: true,
                ..Usage::default()
            }),
            served_tier: self.served_tier,
            invoked_model: self.invoked_model,
            model_response_fields: self.model_response_fields,
            guardrail_trace: self.guardrail_trace,
        }
    }

    /// Whether any reasoning was delivered (a continuation cannot prefill after it).
    fn reasoned(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::Reasoning { .. }))
    }
}

type Opened = Result<(EventStream, Option<Result<BackendEvent>>)>;

/// The bounds of opening one attempt: its first event's, and a whole answer's (for an
/// endpoint that does not stream).
#[derive(Clone, Copy)]
struct OpenBounds {
    first_token: Bound,
    answer: Bound,
}

impl Run<'_> {
    /// The bounds of opening `inflight` from now.
    fn open_bounds(&self, inflight: &mut InFlight<'_>) -> OpenBounds {
        let limits = self.attempt_limits(inflight);
        OpenBounds {
            first_token: self.bound_from(TimeLimit::FirstToken, limits.first_token),
            answer: self.bound_from(TimeLimit::Answer, limits.answer),
        }
    }
}

/// Why `attempt` is sent whole, if it is: a SageMaker endpoint configured not to stream, or
/// one that refused to.
fn sent_whole(exec: &Executor, attempt: &Attempt) -> Option<crate::types::WholeWhy> {
    let t = &attempt.target;
    if t.provider != crate::types::Provider::Sagemaker {
        return None;
    }
    let configured = exec
        .config
        .models
        .get(&*attempt.model)
        .and_then(|m| {
            m.endpoints()
                .iter()
                .find(|e| e.name == t.id() && e.region == t.region())
        })
        .and_then(|e| e.streams);
    match configured {
        Some(false) => Some(crate::types::WholeWhy::Configured),
        Some(true) => None,
        None if exec.state.refuses_streaming(t.region(), t.id()) => {
            Some(crate::types::WholeWhy::Refused)
        }
        None => None,
    }
}

/// Whether a SageMaker endpoint's failure to open a stream says the operation is not served
/// there (a container or server without response streaming), not that the call failed: a 404
/// without an AWS error code, or an unknown operation.
fn refuses_streaming(attempt: &Attempt, e: &Error) -> bool {
    if attempt.target.provider != crate::types::Provider::Sagemaker {
        return false;
    }
    match e {
        Error::Service(s) => {
            s.http_status == Some(404) && s.code.is_empty()
                || matches!(
                    s.code.as_str(),
                    "UnknownOperationException" | "UnknownOperation"
                )
        }
        _ => false,
    }
}

/// Sends one attempt and waits for its first event, until its first-token bound (or the call's
/// deadline when sooner); an endpoint that does not stream (configured so, or refusing the
/// stream now), or any attempt when `send_whole`, is sent the call whole, until its answer
/// bound, and its answer becomes the events.
async fn open<'a>(
    exec: &Executor,
    request: &GenerateRequest,
    checkpoints: Vec<Checkpoint>,
    mut inflight: InFlight<'a>,
    bounds: OpenBounds,
    send_whole: bool,
) -> (InFlight<'a>, Opened) {
    let span = super::attempt::span(&inflight.attempt);
    let whole = match sent_whole(exec, &inflight.attempt) {
        Some(why) => Some(why),
        None if send_whole => None,
        None => {
            match open_streamed(exec, request, &checkpoints, &mut inflight, bounds, &span).await {
                Err(e) if refuses_streaming(&inflight.attempt, &e) => {
                    let t = &inflight.attempt.target;
                    exec.state.record_refuses_streaming(t.region(), t.id());
                    Some(crate::types::WholeWhy::Refused)
                }
                opened => {
                    return (first_event_now(inflight, &opened), opened);
                }
            }
        }
    };
    inflight.sent_whole = whole;
    inflight.answered_whole = true;
    let answer = async {
        let (backend, call) = exec.call(request, &inflight.attempt, &checkpoints)?;
        crate::telemetry::span::within(span, backend.generate(call)).await
    };
    let opened = match bounds.answer.run(answer).await {
        Ok(Ok(done)) => {
            let mut events = done.into_events().into_iter().map(Ok);
            let first = events.next();
            Ok((futures::stream::iter(events).boxed(), first))
        }
        Ok(Err(e)) => Err(e),
        Err(fired) => Err(inflight.timed_out(fired)),
    };
    (first_event_now(inflight, &opened), opened)
}

/// Opens the first attempt of a hedged call: when it has no first token after `delay` (its
/// target's usual worst), the region is suspected, the next candidate (elsewhere first) is
/// sent too, and whichever produces a token first is kept; the other is dropped, which
/// cancels its request. A hedge that fails is booked and the primary awaited, and the other
/// way round. When no candidate has room at that moment (every one full, or a fresh replica's
/// lease of them on its way), the hedge is asked for again each `delay` while the primary is
/// silent: it goes as soon as a target has room, never into a queue.
async fn open_hedged<'a>(
    exec: &'a Executor,
    run: &mut Run<'a>,
    req: &GenerateRequest,
    mut first: InFlight<'a>,
    delay: Duration,
    send_whole: bool,
) -> (InFlight<'a>, Opened) {
    let primary_region = first.attempt.target.region().to_string();
    let cps = run.checkpoints_for(&first.attempt);
    let bounds = run.open_bounds(&mut first);
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
    let cps = run.checkpoints_for(&second.attempt);
    let bounds = run.open_bounds(&mut second);
    let hedge = open(exec, req, cps, second, bounds, send_whole);
    futures::pin_mut!(hedge);
    let (done, hedge_won) = match futures::future::select(primary, hedge).await {
        Either::Left((a, _loser)) if produced_a_token(&a.1) => (a, false),
        Either::Left((a, hedge)) => {
            if let Err(e) = into_parts(a.1) {
                run.record_failed(a.0, e);
            }
            (hedge.await, true)
        }
        Either::Right((b, _loser)) if produced_a_token(&b.1) => {
            run.hedge_answered_first(&primary_region);
            (b, true)
        }
        Either::Right((b, primary)) => {
            if let Err(e) = into_parts(b.1) {
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
    done
}

/// Opens the attempt's stream and waits for its first event, until its first-token bound.
async fn open_streamed(
    exec: &Executor,
    request: &GenerateRequest,
    checkpoints: &[Checkpoint],
    inflight: &mut InFlight<'_>,
    bounds: OpenBounds,
    span: &tracing::Span,
) -> Opened {
    let first = async {
        let (backend, call) = exec.call(request, &inflight.attempt, checkpoints)?;
        let mut events = crate::telemetry::span::within(span.clone(), backend.stream(call)).await?;
        let first = events.next().await;
        Ok((events, first))
    };
    match bounds.first_token.run(first).await {
        Ok(opened) => opened,
        Err(fired) => Err(inflight.timed_out(fired)),
    }
}

/// Notes when the attempt's own first event arrived (its TTFT), if it opened with one.
fn first_event_now<'a>(mut inflight: InFlight<'a>, opened: &Opened) -> InFlight<'a> {
    if matches!(opened, Ok((_, Some(Ok(_))))) {
        inflight.first_event = Some(tokio::time::Instant::now());
    }
    inflight
}

fn produced_a_token(opened: &Opened) -> bool {
    matches!(opened, Ok((_, Some(Ok(_)))))
}

/// Splits an opened attempt into its stream and first event, or its error.
fn into_parts(opened: Opened) -> Result<(EventStream, Option<Result<BackendEvent>>)> {
    match opened {
        Ok((_, Some(Err(e)))) => Err(e),
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
fn hedge_delay(
    exec: &Executor,
    run: &Run<'_>,
    request: &GenerateRequest,
    attempt: &Attempt,
    whole: bool,
) -> Option<Duration> {
    let routing = &exec.config.routing;
    let hedge = routing.hedge;
    let observed = |q| {
        exec.state.ttft_quantile(
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

/// How the events reach the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Every event as it comes ([`Router::stream`](crate::Router::stream)).
    Events,
    /// Only the completed answer ([`Router::generate`](crate::Router::generate) sent as a
    /// stream): a broken attempt fails over invisibly, since the caller has seen nothing.
    Whole,
    /// Only the completed answer, every attempt sent whole (Converse, InvokeEndpoint:
    /// `routing.stream_generate = false`) so that a hedge can go when the first attempt's
    /// answer is later than expected.
    Answer,
}

pub(super) fn run(
    exec: Arc<Executor>,
    request: GenerateRequest,
    plan: Plan,
    delivery: Delivery,
) -> ResponseStream {
    let events = async_stream::stream! {
        let exec = &*exec;
        let hedges = exec.hedges(&request, &plan);
        let send_whole = delivery == Delivery::Answer;
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
                let bounds = run.open_bounds(&mut first);
                open(exec, req, cps, first, bounds, send_whole).await
            };
            if let Some(why) = inflight.sent_whole {
                let t = &inflight.attempt.target;
                run.reasons.push(crate::types::Reason::SentWhole { target: t.id.clone(), region: t.region.clone(), why });
            }
            let (mut events, mut pending) = match into_parts(opened) {
                Ok(parts) => parts,
                Err(e) => {
                    if let Err(stop) = Box::pin(run.after_failure(inflight, e)).await {
                        // A continuation that cannot open still broke a delivered stream.
                        let stop = if assembly.yielded > 0 {
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
                        let mut done = std::mem::take(&mut assembly).into_completion();
                        done.usage.output_tokens = done.usage.output_tokens.saturating_add(carried.output_tokens);
                        done.usage.input_tokens = done.usage.input_tokens.saturating_add(carried.input_tokens);
                        let longest_gap = run.clock.attempt_longest_gap();
                        let timings = run.clock.finish(done.usage.output_tokens);
                        let response = run.respond(&inflight.attempt, done, timings);
                        let served = response.decision.served_tier.or(response.decision.tier);
                        inflight.succeed(&response.usage, &response.timings, served, longest_gap);
                        yield Ok(StreamEvent::Completed(Box::new(response)));
                        return;
                    }
                };
                if assembly.yielded == 0 {
                    // Nothing reached the caller: another target may still serve it whole.
                    assembly = Assembly::default();
                    run.clock.restart_attempt();
                    if let Err(stop) = Box::pin(run.after_failure(inflight, failure)).await {
                        yield Err(run.failed_with(stop));
                        return;
                    }
                } else if request.continue_on_interrupt
                    && failure.fails_over()
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
    ResponseStream {
        inner: Box::pin(events),
        span: tracing::Span::none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(index: u32, t: &str) -> BackendEvent {
        BackendEvent::TextDelta {
            index,
            text: t.into(),
        }
    }

    #[test]
    fn a_continuation_numbered_its_own_way_continues_the_delivered_text() {
        // An OpenAI-compatible server's text is block 1; the Converse target that continues
        // it numbers its text 0 and its call 1.
        let mut a = Assembly::default();
        a.take(text(1, "The answer is"));
        a.resume();
        let out = a.take(text(0, " 42.")).unwrap();
        assert!(
            matches!(out, StreamEvent::TextDelta { index: 1, .. }),
            "{out:?}"
        );
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "t1".into(),
            name: "check".into(),
        });
        a.take(BackendEvent::Stop(StopReason::ToolUse));
        let done = a.into_completion();
        assert_eq!(
            done.content[0],
            OutputBlock::Text("The answer is 42.".into())
        );
        assert!(matches!(&done.content[1], OutputBlock::ToolUse { id, .. } if id == "t1"));
    }

    #[test]
    fn a_continuation_drops_a_call_cut_short_and_keeps_its_citations_on_the_text() {
        let mut a = Assembly::default();
        a.take(text(0, "See the report"));
        // The broken attempt had begun a call after its text.
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "cut".into(),
            name: "fetch".into(),
        });
        a.take(BackendEvent::ToolUseDelta {
            index: 1,
            input_json: "{\"u".into(),
        });
        a.resume();
        a.take(text(0, ", page 2."));
        a.take(BackendEvent::CitationDelta {
            index: 0,
            citation: crate::types::Citation {
                title: Some("report".into()),
                source: None,
                source_content: vec!["page 2".into()],
                location: None,
            },
        });
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "t1".into(),
            name: "fetch".into(),
        });
        a.take(BackendEvent::Stop(StopReason::ToolUse));
        let done = a.into_completion();
        assert_eq!(done.content.len(), 2, "{:?}", done.content);
        assert!(
            matches!(&done.content[0], OutputBlock::Citations(c) if c.content.concat() == "See the report, page 2." && c.citations.len() == 1)
        );
        assert!(matches!(&done.content[1], OutputBlock::ToolUse { id, .. } if id == "t1"));

        // Nothing delivered was text: the continuation's text is a block of its own, after.
        let mut a = Assembly::default();
        a.take(BackendEvent::ReasoningDelta {
            index: 0,
            delta: crate::types::ReasoningDelta::Text("hm".into()),
        });
        a.resume();
        let out = a.take(text(0, "Hi")).unwrap();
        assert!(
            matches!(out, StreamEvent::TextDelta { index: 1, .. }),
            "{out:?}"
        );
    }

    #[test]
    fn blocks_interleaved_and_out_of_order_assemble_by_index() {
        let mut a = Assembly::default();
        for ev in [
            text(2, "late "),
            text(0, "Hello"),
            BackendEvent::ToolUseStart {
                index: 1,
                id: "t1".into(),
                name: "lookup".into(),
            },
            BackendEvent::ToolUseDelta {
                index: 1,
                input_json: "{\"q\":".into(),
            },
            text(0, ", world"),
            BackendEvent::ToolUseDelta {
                index: 1,
                input_json: "1}".into(),
            },
            text(2, "text"),
            BackendEvent::Stop(StopReason::ToolUse),
        ] {
            a.take(ev);
        }
        assert_eq!(a.text(), "Hello, worldlate text");
        let d = a.delivered();
        assert_eq!((d.deltas, d.text_chars), (6, 21));
        assert!(a.is_complete());
        let done = a.into_completion();
        assert_eq!(
            done.content,
            [
                OutputBlock::Text("Hello, world".into()),
                OutputBlock::ToolUse {
                    id: "t1".into(),
                    name: "lookup".into(),
                    input: serde_json::json!({"q": 1}),
                },
                OutputBlock::Text("late text".into()),
            ]
        );
        assert_eq!(done.stop_reason, StopReason::ToolUse);
    }
}
