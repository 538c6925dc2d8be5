//! Running futures in `tracing` spans at no cost when nobody listens.

use futures::future::Either;
use tracing::instrument::Instrumented;
use tracing::{Instrument, Span};

/// `fut` inside `span`, entered on each poll only when a subscriber wants the span. Entering a
/// disabled span is not free: with tracing's `log` fallback compiled in (axum and tower turn it
/// on), every enter and exit checks the `log` level.
///
/// ```
/// # futures::executor::block_on(async {
/// let answer = laneway::telemetry::span::within(tracing::info_span!("work"), async { 42 }).await;
/// assert_eq!(answer, 42);
/// # });
/// ```
pub fn within<F: std::future::Future>(span: Span, fut: F) -> Either<F, Instrumented<F>> {
    if span.is_disabled() {
        Either::Left(fut)
    } else {
        Either::Right(fut.instrument(span))
    }
}
