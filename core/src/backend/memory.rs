//! A backend that answers in memory: for tests, and the pattern for a provider of your own.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;

use super::{Backend, BackendEvent, Call, Completion, EventStream};
use crate::types::Result;
use crate::types::{ContentBlock, Role};
use crate::types::{OutputBlock, StopReason, Usage};

type Answer = dyn Fn(&Call<'_>) -> Result<Completion> + Send + Sync;

/// Answers every call with a function of the call, streamed as one text delta per word.
///
/// Register it for a provider of your own with
/// [`RouterBuilder::backend`](crate::RouterBuilder::backend) and name that provider in a
/// model's configuration (`provider = "echo"`); `examples/custom_backend.rs` shows the whole
/// path. The function may fail with any [`Error`](crate::Error), which the router treats like a
/// service's (a [`ServiceError`](crate::ServiceError) of a kind that fails over, fails over).
///
/// ```
/// use laneway::backend::MemoryBackend;
/// let echo = MemoryBackend::echo();
/// assert_eq!(echo.calls(), 0);
/// ```
pub struct MemoryBackend {
    answer: Box<Answer>,
    calls: AtomicU64,
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl MemoryBackend {
    /// A backend whose answers `answer` computes.
    pub fn new(answer: impl Fn(&Call<'_>) -> Result<Completion> + Send + Sync + 'static) -> Self {
        Self {
            answer: Box::new(answer),
            calls: AtomicU64::new(0),
        }
    }

    /// A backend that answers with the text of the last user message, counting one token per
    /// word of the input and of the answer.
    pub fn echo() -> Self {
        Self::new(|call| {
            let input = call
                .request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| {
                    m.content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            Ok(Completion::text(input))
        })
    }

    /// Calls answered or refused so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn answer(&self, call: &Call<'_>) -> Result<Completion> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        (self.answer)(call)
    }
}

impl Completion {
    /// A whole text answer that ended its turn, one token counted per word of `text` (and none
    /// of the input: set `usage` for that).
    ///
    /// ```
    /// let done = laneway::backend::Completion::text("two words");
    /// assert_eq!(done.usage.output_tokens, 2);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        let words = text.split_whitespace().count();
        Self {
            content: vec![OutputBlock::Text(text)],
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                output_tokens: crate::types::units::token_count(words as u64),
                ..Usage::default()
            },
            served_tier: None,
            invoked_model: None,
            model_response_fields: None,
            guardrail_trace: None,
        }
    }
}

/// A whole answer as the events a streaming service would send for it: its text word by word.
fn events_of(done: Completion) -> Vec<BackendEvent> {
    done.into_events()
        .into_iter()
        .flat_map(|ev| match ev {
            BackendEvent::TextDelta { index, text } => text
                .split_inclusive(char::is_whitespace)
                .map(|word| BackendEvent::TextDelta {
                    index,
                    text: word.to_string(),
                })
                .collect(),
            other => vec![other],
        })
        .collect()
}

impl Backend for MemoryBackend {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>> {
        let answer = self.answer(&call);
        Box::pin(std::future::ready(answer))
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>> {
        let events = self.answer(&call).map(|done| {
            Box::pin(futures::stream::iter(events_of(done).into_iter().map(Ok))) as EventStream
        });
        Box::pin(std::future::ready(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_answer_concatenates_to_the_whole_one() {
        let done = Completion::text("one two  three\nfour");
        let text: String = events_of(done)
            .into_iter()
            .filter_map(|e| match e {
                BackendEvent::TextDelta { text, .. } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(text, "one two  three\nfour");
    }

    #[test]
    fn the_stream_ends_with_stop_then_metadata() {
        let events = events_of(Completion::text("a b"));
        assert_eq!(events.len(), 4);
        assert_eq!(events[2], BackendEvent::Stop(StopReason::EndTurn));
        assert!(
            matches!(&events[3], BackendEvent::Metadata { usage, .. } if usage.output_tokens == 2)
        );
    }
}
