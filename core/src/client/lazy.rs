//! A stream for the bindings: it opens on its first read, is read from any thread through a
//! shared reference, and is read ahead by a task of its own.
//!
//! The task (the pump) runs beside the HTTP connection's task on the runtime's workers, so the
//! body's chunks pass between tasks on one thread rather than between threads; the reader, on
//! Python's or JavaScript's thread, wakes once per burst and takes every event queued by then.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::Router;
use crate::types::GenerateRequest;
use crate::types::Result;
use crate::types::StreamEvent;

/// Events read ahead at most: the stream's back-pressure when the reader falls behind.
const READ_AHEAD: usize = 512;

/// What the pump forwards: an event, the stream's error, or its own panic (re-raised on the
/// reader's thread, where the bindings turn panics into errors, rather than lost as an end).
enum Item {
    Next(Result<StreamEvent>),
    Panicked(Box<dyn Any + Send>),
}

enum State {
    /// Not opened yet.
    Pending(Box<(Router, GenerateRequest)>),
    Open {
        events: mpsc::Receiver<Item>,
        pump: AbortHandle,
    },
    /// Ended by an error (or a panic) that a batch held back, for the next read.
    HeldBack(Item),
    Done,
}

/// A call's stream, opened by the first read; see
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
    /// The pump's handle, outside the state's lock: a close stops the request at once even
    /// while a read holds the lock waiting on a stalled stream.
    pump: std::sync::OnceLock<AbortHandle>,
    /// Set by a close before it looks for the pump: a pump started after that is stopped by
    /// its opener (one of the two always sees the other).
    closed: std::sync::atomic::AtomicBool,
}

impl LazyStream {
    pub(crate) fn new(router: Router, request: GenerateRequest) -> Self {
        Self {
            state: tokio::sync::Mutex::new(State::Pending(Box::new((router, request)))),
            pump: std::sync::OnceLock::new(),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The next event, or `None` after the last; planning errors come from the first call.
    /// After an error the stream is over.
    pub async fn next(&self) -> Result<Option<StreamEvent>> {
        Ok(self.next_batch(1).await?.pop())
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
        crate::failpoint::check("stream_event");
        let mut state = self.state.lock().await;
        self.open(&mut state, &tokio::runtime::Handle::current());
        let first = match &mut *state {
            State::Open { events, .. } => events.recv().await,
            _ => None,
        };
        take_burst(&mut state, first, max)
    }

    /// [`next_batch`](Self::next_batch) for a thread outside the runtime (a binding's caller
    /// blocking without its interpreter lock): it parks until the first event, then takes the
    /// rest of the burst. The stream's work runs on `runtime`.
    ///
    /// # Panics
    /// Called on one of a runtime's threads (as any blocking wait in tokio would).
    ///
    /// ```no_run
    /// # fn run(router: laneway::Router, runtime: &tokio::runtime::Runtime) -> laneway::Result<()> {
    /// let stream = router.lazy_stream(laneway::GenerateRequest::user("Tell me a story"));
    /// while !stream.next_batch_blocking(runtime.handle(), 256)?.is_empty() {}
    /// # Ok(()) }
    /// ```
    pub fn next_batch_blocking(
        &self,
        runtime: &tokio::runtime::Handle,
        max: usize,
    ) -> Result<Vec<StreamEvent>> {
        crate::failpoint::check("stream_event");
        let mut state = self.state.blocking_lock();
        self.open(&mut state, runtime);
        let first = match &mut *state {
            State::Open { events, .. } => events.blocking_recv(),
            _ => None,
        };
        take_burst(&mut state, first, max)
    }

    /// The events already read ahead, without waiting: `None` when there are none yet (or the
    /// stream is not open, or another read holds it), so that a binding can skip its
    /// asynchronous hand-over whenever the stream is ahead of the reader. Otherwise as
    /// [`next_batch`](Self::next_batch): an empty batch after the last event, or the error.
    ///
    /// ```no_run
    /// # async fn run(router: laneway::Router) -> laneway::Result<()> {
    /// let stream = router.lazy_stream(laneway::GenerateRequest::user("Tell me a story"));
    /// let mut events = stream.next_batch(256).await?;
    /// while !events.is_empty() {
    ///     events = match stream.ready_batch(256) {
    ///         Some(ready) => ready?,
    ///         None => stream.next_batch(256).await?,
    ///     };
    /// }
    /// # Ok(()) }
    /// ```
    pub fn ready_batch(&self, max: usize) -> Option<Result<Vec<StreamEvent>>> {
        let mut state = self.state.try_lock().ok()?;
        let first = match &mut *state {
            State::Pending(_) => return None,
            State::Open { events, .. } => match events.try_recv() {
                Ok(item) => Some(item),
                Err(mpsc::error::TryRecvError::Empty) => return None,
                Err(mpsc::error::TryRecvError::Disconnected) => None,
            },
            State::HeldBack(_) | State::Done => None,
        };
        Some(take_burst(&mut state, first, max))
    }

    /// Ends the stream now, cancelling its request; a read waiting on it ends too.
    pub async fn close(&self) {
        self.stop_pump();
        end(&mut *self.state.lock().await);
    }

    /// [`close`](Self::close) for a thread outside the runtime.
    pub fn close_blocking(&self) {
        self.stop_pump();
        end(&mut self.state.blocking_lock());
    }

    /// Aborts the pump, whoever holds the state: a waiting read then sees the stream end.
    fn stop_pump(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(pump) = self.pump.get() {
            pump.abort();
        }
    }

    /// Starts the pump on the first read (and stops it at once if a close came meanwhile).
    fn open(&self, state: &mut State, runtime: &tokio::runtime::Handle) {
        if let Some(pump) = open(state, runtime) {
            let _ = self.pump.set(pump.clone());
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                pump.abort();
            }
        }
    }
}

impl Drop for LazyStream {
    fn drop(&mut self) {
        end(self.state.get_mut());
    }
}

fn end(state: &mut State) {
    if let State::Open { pump, .. } = state {
        pump.abort();
    }
    *state = State::Done;
}

/// Starts the pump if the stream is not open yet; its handle.
fn open(state: &mut State, runtime: &tokio::runtime::Handle) -> Option<AbortHandle> {
    if !matches!(state, State::Pending(_)) {
        return None;
    }
    let State::Pending(pending) = std::mem::replace(state, State::Done) else {
        unreachable!("matched above")
    };
    let (router, request) = *pending;
    let (tx, events) = mpsc::channel(READ_AHEAD);
    let pump = runtime
        .spawn(async move {
            let panic = AssertUnwindSafe(pump(router, request, tx.clone()))
                .catch_unwind()
                .await;
            if let Err(payload) = panic {
                let _ = tx.send(Item::Panicked(payload)).await;
            }
        })
        .abort_handle();
    *state = State::Open {
        events,
        pump: pump.clone(),
    };
    Some(pump)
}

/// Opens the stream and forwards its events until the last, an error, or the reader leaving.
async fn pump(router: Router, request: GenerateRequest, tx: mpsc::Sender<Item>) {
    let mut stream = match router.stream(request).await {
        Ok(stream) => stream,
        Err(e) => {
            let _ = tx.send(Item::Next(Err(e))).await;
            return;
        }
    };
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            // A reader that left cancels the request at once, even mid-stall.
            () = tx.closed() => return,
        };
        let Some(item) = item else { return };
        let failed = item.is_err();
        if tx.send(Item::Next(item)).await.is_err() || failed {
            return;
        }
    }
}

/// The batch that starts with `first` (`None`: nothing more from the pump, or the stream ended
/// earlier): every event already queued after it, up to `max`. An error or panic after some
/// events is held back for the next read.
fn take_burst(state: &mut State, first: Option<Item>, max: usize) -> Result<Vec<StreamEvent>> {
    let first = match first {
        Some(item) => item,
        None => match std::mem::replace(state, State::Done) {
            State::HeldBack(item) => item,
            _ => return Ok(Vec::new()),
        },
    };
    let first = match first {
        Item::Next(Ok(event)) => event,
        Item::Next(Err(e)) => {
            *state = State::Done;
            return Err(e);
        }
        Item::Panicked(payload) => {
            *state = State::Done;
            std::panic::resume_unwind(payload)
        }
    };
    let mut events = vec![first];
    while events.len() < max.max(1) {
        let State::Open { events: queue, .. } = state else {
            break;
        };
        match queue.try_recv() {
            Ok(Item::Next(Ok(event))) => events.push(event),
            Ok(end) => *state = State::HeldBack(end),
            Err(mpsc::error::TryRecvError::Empty) => break,
            Err(mpsc::error::TryRecvError::Disconnected) => *state = State::Done,
        }
    }
    Ok(events)
}
