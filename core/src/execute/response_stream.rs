//! The caller's side of a streamed call.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::types::{Result, StreamEvent};

/// The events of one streamed call: deltas, then [`StreamEvent::Completed`]; or an error,
/// after which it ends. Dropping it cancels the call.
pub struct ResponseStream {
    inner: Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>,
    span: tracing::Span,
}

impl ResponseStream {
    /// The stream of `events`, in no span.
    pub(super) fn new(events: impl Stream<Item = Result<StreamEvent>> + Send + 'static) -> Self {
        Self {
            inner: Box::pin(events),
            span: tracing::Span::none(),
        }
    }

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
