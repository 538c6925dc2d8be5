//! Backends: the only code that talks to AWS, one per service, behind one narrow trait.

pub mod bedrock;
mod document;
pub(crate) mod errors;
pub mod sagemaker;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::error::Result;
use crate::plan::prompt_cache::Checkpoint;
use crate::plan::Attempt;
use crate::request::{GenerateRequest, ServiceTier};
use crate::response::{OutputBlock, StopReason, Usage};

pub use bedrock::BedrockBackend;
pub use sagemaker::SagemakerBackend;

/// One attempt of one request.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub request: &'a GenerateRequest,
    pub attempt: &'a Attempt,
    /// Prompt-cache checkpoints to send (they replace any in the request).
    pub checkpoints: &'a [Checkpoint],
}

/// A whole answer from a backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: Vec<OutputBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// The tier the service says served, when it says.
    pub served_tier: Option<ServiceTier>,
    /// For a Bedrock prompt router: the model it invoked (`trace.promptRouter.invokedModelId`).
    pub invoked_model: Option<String>,
}

/// One event of a backend's stream, in the order the service sends them.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvent {
    TextDelta {
        index: u32,
        text: String,
    },
    ToolUseStart {
        index: u32,
        id: String,
        name: String,
    },
    ToolUseDelta {
        index: u32,
        input_json: String,
    },
    /// The model stopped.
    Stop(StopReason),
    /// Final accounting (Bedrock sends it after `Stop`; other formats with their last line).
    Metadata {
        usage: Usage,
        served_tier: Option<ServiceTier>,
        invoked_model: Option<String>,
    },
}

/// A backend's event stream.
pub type EventStream = BoxStream<'static, Result<BackendEvent>>;

/// A service Laneway can send a request to.
pub trait Backend: Send + Sync {
    /// Sends the request and waits for the whole answer.
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>>;
    /// Sends the request and returns its event stream once the service has accepted it.
    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>>;
}

/// One SDK client per region, each made by `make` for its region.
fn per_region<'a, C>(
    regions: impl IntoIterator<Item = &'a str>,
    make: impl Fn(aws_config::Region) -> C,
) -> std::collections::HashMap<String, C> {
    regions
        .into_iter()
        .map(|r| (r.to_string(), make(aws_config::Region::new(r.to_string()))))
        .collect()
}
