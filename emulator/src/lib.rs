//! A loopback emulator of the Amazon Bedrock Runtime and SageMaker Runtime APIs.
//!
//! It is a real HTTP server that the official AWS SDKs talk to unchanged: it checks SigV4
//! signatures, learns the region from the credential scope, answers Converse, ConverseStream,
//! InvokeModel(WithResponseStream), InvokeEndpoint and InvokeEndpointWithResponseStream with
//! true event-stream frames, and simulates per (region, model, tier) latency, token rates,
//! capacity and faults from a [`Scenario`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use laneway_emulator::{Emulator, Fault, FaultKind, Scenario};
//! let emulator = Emulator::start(Scenario::builtin("startup")?).await?;
//! emulator.add_fault(Fault::new(FaultKind::Outage).for_region("us-east-1"));
//! // point an SDK client at emulator.url() with LANEWAY_TEST credentials ...
//! # Ok(()) }
//! ```

mod bill;
mod cache;
mod control;
mod converse_ext;
mod engine;
mod faults;
mod guardrail;
mod quota;
mod scenario;
mod server;
mod sigv4;
mod text;
mod wire;

pub use bill::{LongContextSpec, PriceSpec};
pub use engine::{Counter, CounterRow, Service};
pub use faults::{Fault, FaultKind};
pub use guardrail::{GuardrailSpec, PiiAction, PiiKind, PiiRule};
pub use scenario::{
    ApplicationProfileSpec, Credential, EndpointSpec, LatencyOptimized, ModelSpec, PayloadFormat,
    Performance, PerformanceOverride, ReasoningStyle, RegionSpec, ReservationSpec, Scenario,
    ScenarioError, builtin_text,
};
pub use server::Emulator;

/// The access key id the built-in scenarios accept.
pub const TEST_ACCESS_KEY_ID: &str = "LANEWAYTESTKEY";
/// The secret access key the built-in scenarios accept.
pub const TEST_SECRET_ACCESS_KEY: &str = "LANEWAYTESTSECRET";
