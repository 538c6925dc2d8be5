//! A stream that opens on its first read and can be read from any task through a shared
//! reference: what the bindings hand to Python and JavaScript, whose iterators ask for one
//! event at a time.

use futures::{FutureExt, StreamExt};

use super::ResponseStream;
use crate::types::GenerateRequest;
use crate::types::Result;
use crate::types::StreamEvent;
use crate::Router;

enum State {
    /// Not opened yet.
    Pending(Box<(Router, GenerateRequest)>),
    Open(ResponseStream),
    /// Ended by an error that a batch held back, to be returned by the next read.
    Failed(crate::types::Error),
    Done,
}

/// A call's stream, opened by the first [`LazyStream::next`]; see
/// [`Router::lazy_stream`](crate::Router::lazy_stream).
///
/// ```no_run
/// # async fn run(router: laneway::Router) -> laneway::Result<()> {
/// let stream = router.lazy_stream(laneway::GenerateRequest::user("Tell me a story"));
/// while let Some(event) = stream.next().await? {
///     println!("{event:?}");
/// }
/// # Ok(()) }
/// ```
pub struct LazyStream {
    state: tokio::sync::Mutex<State>,
}

impl LazyStream {
    pub(crate) fn new(router: Router, request: GenerateRequest) -> Self {
        Self {
            state: tokio::sync::Mutex::new(State::Pending(Box::new((router, request)))),
        }
    }

    /// The next event, or `None` after the last; planning errors come from the first call.
    /// After an error the stream is over.
    pub async fn next(&self) -> Result<Option<StreamEvent>> {
        crate::failpoint::check("stream_event");
        let mut state = self.state.lock().await;
        if matches!(*state, State::Pending(_)) {
            let State::Pending(pending) = std::mem::replace(&mut *state, State::Done) else {
                unreachable!("matched above")
            };
            let (router, request) = *pending;
            *state = State::Open(router.stream(request).await?);
        }
        if let State::Failed(_) = &*state {
            let State::Failed(e) = std::mem::replace(&mut *state, State::Done) else {
                unreachable!("matched above")
            };
            return Err(e);
        }
        let State::Open(s) = &mut *state else {
            return Ok(None);
        };
        match s.next().await {
            Some(Ok(ev)) => Ok(Some(ev)),
            other => {
                *state = State::Done;
                other.transpose()
            }
        }
    }

    /// The next event and every one after it that is already available, up to `max` in all:
    /// one wait and one hand-over for a burst of events (a binding converts and delivers them
    /// together). Empty after the last event. An error after some events comes from the next
    /// call, so that the events before it are delivered first.
    ///
    /// ```no_run
    /// # async fn run(router: laneway::Router) -> laneway::Result<()> {
    /// let stream = router.lazy_stream(laneway::GenerateRequest::user("Tell me a story"));
    /// loop {
    ///     let events = stream.next_batch(256).await?;
    ///     if events.is_empty() {
    ///         break;
    ///     }
    ///     println!("{} events", events.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_batch(&self, max: usize) -> Result<Vec<StreamEvent>> {
        let Some(first) = self.next().await? else {
            return Ok(Vec::new());
        };
        let mut events = vec![first];
        let mut state = self.state.lock().await;
        while events.len() < max.max(1) {
            let State::Open(s) = &mut *state else {
                break;
            };
            // Only what is ready now: a pending read ends the batch.
            match s.next().now_or_never() {
                None => break,
                Some(Some(Ok(ev))) => events.push(ev),
                Some(Some(Err(e))) => *state = State::Failed(e),
                Some(None) => *state = State::Done,
            }
        }
        Ok(events)
    }

    /// Ends the stream now, cancelling its request (waits for a pending `next` to finish).
    pub async fn close(&self) {
        *self.state.lock().await = State::Done;
    }
}
