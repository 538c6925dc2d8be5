//! Rust futures as asyncio futures, without taking the GIL on tokio's threads.
//!
//! A [`Dispatcher`] belongs to one event loop. Work runs on the tokio runtime; its outcome is
//! queued as a Rust value and a byte is written to a socket the loop watches
//! (`loop.add_reader`). The loop's thread, which holds the GIL anyway, then converts every
//! queued outcome and resolves its future in one `drain`. Taking the GIL from tokio's threads
//! instead would make each completion wait for the busy loop to let go of it.
//!
//! Cancelling an asyncio future aborts its work (and so the request). A panic comes back as a
//! `LanewayError`, never as a crash.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use pyo3::prelude::*;
use tokio::task::AbortHandle;

use crate::errors::{self, to_py_err};
use crate::runtime;

/// Turns a result into a Python object, on the loop's thread.
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

enum Outcome {
    Done(Convert),
    Failed(laneway::Error),
    Panicked(String),
}

/// What tokio's threads share with the loop: finished work and the wake-up socket.
struct Shared {
    ready: Mutex<Vec<(u64, Outcome)>>,
    wake: UnixStream,
    signalled: AtomicBool,
}

impl Shared {
    fn push(&self, id: u64, outcome: Outcome) {
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, outcome));
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // Non-blocking: a full socket already holds a wake-up.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The bridge of one asyncio event loop (see the module's documentation).
#[pyclass(module = "laneway._laneway", frozen)]
pub struct Dispatcher {
    shared: Arc<Shared>,
    watched: UnixStream,
    event_loop: Py<PyAny>,
    pending: Mutex<HashMap<u64, Py<PyAny>>>,
    next_id: AtomicU64,
    /// The process that made it: a forked child needs its own.
    #[pyo3(get)]
    pid: u32,
}

#[pymethods]
impl Dispatcher {
    /// A dispatcher for `event_loop`; register `drain` with `loop.add_reader(fileno(), drain)`.
    #[new]
    fn new(event_loop: Py<PyAny>) -> PyResult<Self> {
        let io =
            |e: std::io::Error| errors::internal(format!("cannot create the wake-up socket: {e}"));
        let (wake, watched) = UnixStream::pair().map_err(io)?;
        wake.set_nonblocking(true).map_err(io)?;
        watched.set_nonblocking(true).map_err(io)?;
        Ok(Self {
            shared: Arc::new(Shared {
                ready: Mutex::new(Vec::new()),
                wake,
                signalled: AtomicBool::new(false),
            }),
            watched,
            event_loop,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            pid: std::process::id(),
        })
    }

    /// The socket the loop watches.
    fn fileno(&self) -> i32 {
        self.watched.as_raw_fd()
    }

    /// Resolves the futures of all finished work (the loop calls it when the socket is ready).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        // Order matters: consume the wake-ups first, then re-arm, then take the work. Re-arming
        // before reading could swallow the byte of a push made in between and leave the flag
        // set with no byte pending: every later push would then skip its wake-up.
        let mut buf = [0u8; 256];
        // One read empties it (a byte per re-arm); loop only if the buffer came back full.
        while matches!((&self.watched).read(&mut buf), Ok(n) if n == buf.len()) {}
        self.shared.signalled.store(false, Ordering::Release);
        let ready = std::mem::take(&mut *lock(&self.shared.ready));
        for (id, outcome) in ready {
            let Some(future) = lock(&self.pending).remove(&id) else {
                continue; // cancelled
            };
            let future = future.bind(py);
            if future.call_method0("done")?.is_truthy()? {
                continue;
            }
            let (method, value) = match outcome {
                Outcome::Done(convert) => match convert(py) {
                    Ok(v) => ("set_result", v),
                    Err(e) => ("set_exception", e.into_value(py).into_any()),
                },
                Outcome::Failed(e) => ("set_exception", to_py_err(e).into_value(py).into_any()),
                Outcome::Panicked(why) => (
                    "set_exception",
                    errors::internal(why).into_value(py).into_any(),
                ),
            };
            future.call_method1(method, (value,))?;
        }
        Ok(())
    }
}

impl Dispatcher {
    /// Runs `work` on the runtime and returns an asyncio future of `convert(result)`.
    pub fn submit<'py, F, T, C>(
        slf: &Bound<'py, Self>,
        work: F,
        convert: C,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = laneway::Result<T>> + Send + 'static,
        T: Send + 'static,
        C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
    {
        let py = slf.py();
        let this = slf.get();
        let future = this.event_loop.bind(py).call_method0("create_future")?;
        let id = this.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&this.pending).insert(id, future.clone().unbind());
        let shared = Arc::clone(&this.shared);
        let rt = runtime::get()
            .map_err(|e| errors::internal(format!("cannot start the runtime: {e}")))?;
        let task = rt.spawn(async move {
            let outcome = match AssertUnwindSafe(work).catch_unwind().await {
                Ok(Ok(v)) => Outcome::Done(Box::new(move |py| convert(py, v))),
                Ok(Err(e)) => Outcome::Failed(e),
                Err(panic) => Outcome::Panicked(errors::panic_text(&*panic)),
            };
            shared.push(id, outcome);
        });
        let canceller = Canceller {
            task: task.abort_handle(),
            dispatcher: slf.clone().unbind(),
            id,
        };
        future.call_method1("add_done_callback", (Py::new(py, canceller)?,))?;
        Ok(future)
    }
}

/// Runs `work` for Python: with a dispatcher, an asyncio future of `convert(result)`; without
/// one, blocks (without the GIL) and returns `convert(result)`.
pub(crate) fn run<F, T, C>(
    py: Python<'_>,
    dispatcher: Option<&Bound<'_, Dispatcher>>,
    work: F,
    convert: C,
) -> PyResult<Py<PyAny>>
where
    F: Future<Output = laneway::Result<T>> + Send + 'static,
    T: Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    match dispatcher {
        Some(dispatcher) => Ok(Dispatcher::submit(dispatcher, work, convert)?.unbind()),
        None => {
            let value = py.detach(|| block_on(work))?.map_err(errors::to_py_err)?;
            convert(py, value)
        }
    }
}

/// Runs `work` on the runtime and waits for it; call without the GIL.
pub(crate) fn block_on<F, T>(work: F) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt =
        runtime::get().map_err(|e| errors::internal(format!("cannot start the runtime: {e}")))?;
    // Run on a worker, beside the HTTP connection's task, and waited for once: driven here, the
    // call would pass every read of the response between this thread and a worker.
    let (tx, rx) = tokio::sync::oneshot::channel();
    rt.spawn(async move {
        let _ = tx.send(AssertUnwindSafe(work).catch_unwind().await);
    });
    match rx.blocking_recv() {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => Err(errors::internal(errors::panic_text(&*panic))),
        Err(_) => Err(errors::internal("the runtime dropped a call".to_owned())),
    }
}

/// Runs blocking work (a wait that parks this thread) without the GIL, with the runtime's handle
/// for anything it starts there. A panic becomes a `LanewayError`.
pub(crate) fn blocking<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&tokio::runtime::Handle) -> T + Send,
) -> PyResult<T> {
    let rt =
        runtime::get().map_err(|e| errors::internal(format!("cannot start the runtime: {e}")))?;
    py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(|| work(rt.handle()))))
        .map_err(|panic| errors::internal(errors::panic_text(&*panic)))
}

/// Aborts the work when its asyncio future is cancelled.
#[pyclass(module = "laneway._laneway", frozen)]
struct Canceller {
    task: AbortHandle,
    dispatcher: Py<Dispatcher>,
    id: u64,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.task.abort();
            lock(&self.dispatcher.get().pending).remove(&self.id);
        }
        Ok(())
    }
}
