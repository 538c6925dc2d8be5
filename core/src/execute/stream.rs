//! Streaming execution: fails over while nothing has reached the caller, and after that reports
//! how much was delivered when a stream breaks.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

use super::{exhausted, Clock, Executor};
use crate::backend::{BackendEvent, Call, Completion};
use crate::error::{Delivered, Error, ErrorKind, Result, ServiceError};
use crate::plan::Plan;
use crate::request::GenerateRequest;
use crate::response::{OutputBlock, StopReason, StreamEvent, Usage};

/// The events of one streamed call: deltas, then [`StreamEvent::Completed`]; or an error,
/// after which it ends. Dropping it cancels the call.
pub struct ResponseStream {
    inner: Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>,
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseStream")
    }
}

impl Stream for ResponseStream {
    type Item = Result<StreamEvent>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// Content blocks as they arrive, by index.
#[derive(Default)]
struct Assembly {
    blocks: BTreeMap<u32, Block>,
    stop: Option<StopReason>,
    usage: Option<Usage>,
    served_tier: Option<crate::request::ServiceTier>,
    delivered: Delivered,
    /// Events handed to the caller so far; failover is safe only while this is zero.
    yielded: u32,
}

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

impl Assembly {
    /// Takes in a backend event; returns what the caller sees of it.
    fn take(&mut self, ev: BackendEvent) -> Option<StreamEvent> {
        let out = self.apply(ev);
        self.yielded += u32::from(out.is_some());
        out
    }

    fn apply(&mut self, ev: BackendEvent) -> Option<StreamEvent> {
        match ev {
            BackendEvent::TextDelta { index, text } => {
                match self
                    .blocks
                    .entry(index)
                    .or_insert_with(|| Block::Text(String::new()))
                {
                    Block::Text(t) => t.push_str(&text),
                    Block::Tool { json, .. } => json.push_str(&text),
                }
                self.delivered.deltas += 1;
                self.delivered.text_chars += text.chars().count();
                Some(StreamEvent::TextDelta { index, text })
            }
            BackendEvent::ToolUseStart { index, id, name } => {
                self.blocks.insert(
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
                if let Some(Block::Tool { json, .. }) = self.blocks.get_mut(&index) {
                    json.push_str(&input_json);
                }
                self.delivered.deltas += 1;
                Some(StreamEvent::ToolUseDelta { index, input_json })
            }
            BackendEvent::Stop(reason) => {
                self.stop = Some(reason);
                None
            }
            BackendEvent::Metadata { usage, served_tier } => {
                self.usage = Some(usage);
                self.served_tier = served_tier;
                None
            }
        }
    }

    /// The model said it stopped (usage may be missing where a container sends none).
    fn is_complete(&self) -> bool {
        self.stop.is_some()
    }

    fn delivered(&self) -> Delivered {
        Delivered {
            output_tokens: self.delivered.deltas,
            ..self.delivered
        }
    }

    fn into_completion(self) -> Completion {
        let content = self
            .blocks
            .into_values()
            .map(|b| match b {
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
        }
    }
}

pub(super) fn run(exec: Arc<Executor>, request: GenerateRequest, plan: Plan) -> ResponseStream {
    let events = async_stream::stream! {
        let mut clock = Clock::start();
        let mut failed = Vec::new();
        'attempts: for attempt in &plan.attempts {
            let call = Call { request: &request, attempt };
            let mut events = match exec.backend(&attempt.target).stream(call).await {
                Ok(s) => s,
                Err(e) if e.fails_over() => {
                    failed.push((e.as_failed_attempt(attempt.target.id(), attempt.target.region()), e));
                    continue;
                }
                Err(e) => {
                    yield Err(e);
                    return;
                }
            };
            let mut assembly = Assembly::default();
            loop {
                match events.next().await {
                    Some(Ok(ev)) => {
                        if let Some(out) = assembly.take(ev) {
                            if matches!(out, StreamEvent::TextDelta { .. } | StreamEvent::ToolUseDelta { .. }) {
                                clock.delta();
                            }
                            yield Ok(out);
                        }
                    }
                    Some(Err(e)) => {
                        // Nothing reached the caller yet: another target may still serve it whole.
                        if assembly.yielded == 0 && e.fails_over() {
                            failed.push((e.as_failed_attempt(attempt.target.id(), attempt.target.region()), e));
                            clock.restart_attempt();
                            continue 'attempts;
                        }
                        yield Err(Error::StreamInterrupted { delivered: assembly.delivered(), cause: Box::new(e) });
                        return;
                    }
                    None if assembly.is_complete() => {
                        let done = assembly.into_completion();
                        let timings = clock.finish(done.usage.output_tokens);
                        let response = exec.respond(&plan, attempt, done, timings, failed);
                        yield Ok(StreamEvent::Completed(Box::new(response)));
                        return;
                    }
                    None => {
                        let cause = Error::from(ServiceError {
                            kind: ErrorKind::Transport,
                            code: String::new(),
                            message: "the stream ended before the model's stop and usage events".into(),
                            target: attempt.target.id().to_string(),
                            region: attempt.target.region().to_string(),
                            http_status: None,
                            request_id: None,
                        });
                        if assembly.yielded == 0 {
                            failed.push((cause.as_failed_attempt(attempt.target.id(), attempt.target.region()), cause));
                            clock.restart_attempt();
                            continue 'attempts;
                        }
                        yield Err(Error::StreamInterrupted { delivered: assembly.delivered(), cause: Box::new(cause) });
                        return;
                    }
                }
            }
        }
        yield Err(exhausted(failed));
    };
    ResponseStream {
        inner: Box::pin(events),
    }
}
