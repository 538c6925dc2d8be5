//! Starting and stopping the emulator on loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::engine::{CounterRow, Engine};
use crate::faults::Fault;
use crate::scenario::Scenario;
use crate::wire;

/// A running emulator. Dropping it stops the server.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use laneway_emulator::{Emulator, Scenario};
/// let emulator = Emulator::start(Scenario::builtin("fast").unwrap()).await?;
/// println!("Bedrock and SageMaker Runtime at {}", emulator.url());
/// emulator.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Emulator {
    addr: SocketAddr,
    engine: Arc<Engine>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Emulator {
    /// Serves the scenario on an ephemeral loopback port.
    pub async fn start(scenario: Scenario) -> std::io::Result<Self> {
        Self::start_on(scenario, 0).await
    }

    /// Serves the scenario on `127.0.0.1:port` (0 picks a free port).
    pub async fn start_on(scenario: Scenario, port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let engine = Arc::new(Engine::new(scenario));
        let app = app(Arc::clone(&engine));
        let (stop, stopped) = oneshot::channel::<()>();
        // Event-stream frames are small: without TCP_NODELAY, Nagle's algorithm and delayed
        // acknowledgements would hold the second frame of every stream for ~40 ms.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self {
            addr,
            engine,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`, for `endpoint_url` or the
    /// `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` variable.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Injects a fault; returns its id.
    pub fn add_fault(&self, fault: Fault) -> u64 {
        self.engine.faults.add(fault)
    }

    /// Removes one fault.
    pub fn remove_fault(&self, id: u64) -> bool {
        self.engine.faults.remove(id)
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        self.engine.faults.clear();
    }

    /// What it has served so far.
    pub fn counters(&self) -> Vec<CounterRow> {
        self.engine.counters()
    }

    /// What every admitted call so far was billed at its model's card prices, in US dollars
    /// (the sum of the counters' [`Counter::billed_usd`](crate::Counter::billed_usd)).
    pub fn bill(&self) -> f64 {
        self.counters().iter().map(|r| r.counter.billed_usd()).sum()
    }

    /// The scenario it serves.
    pub fn scenario(&self) -> &Scenario {
        &self.engine.scenario
    }

    /// Stops accepting connections and waits for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            // Open streams would hold a graceful shutdown forever; they are cut after a moment.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The whole HTTP application: both services and the control API.
pub(crate) fn app(engine: Arc<Engine>) -> Router {
    Router::new()
        .merge(wire::bedrock::routes())
        .merge(wire::openai::routes())
        .merge(wire::sagemaker::routes())
        .merge(wire::batch::routes())
        .merge(wire::s3::routes())
        .merge(crate::control::routes())
        .layer(axum::middleware::from_fn(wire::misbehave))
        .with_state(engine)
}
