//! Backends: the only code that talks to a provider, one per provider, behind one narrow trait.
//!
//! The router holds one [`Backend`] per [`Provider`] in its [`Backends`]; the built-in ones
//! are [`BedrockBackend`] and [`SagemakerBackend`] (and the batch lane's [`BedrockBatch`]),
//! and [`RouterBuilder::backend`](crate::RouterBuilder::backend) adds or replaces one. Each
//! backend maps its own service's errors to [`Error`](crate::Error)s; [`MemoryBackend`]
//! answers in memory, for tests and as the pattern for a provider of your own.

pub(crate) mod aws;
pub mod bedrock;
pub(crate) mod bedrock_batch;
mod blocks;
mod document;
pub(crate) mod errors;
mod guardrail;
mod memory;
pub mod openai;
pub mod sagemaker;

pub use bedrock_batch::{BatchJobSpec, BedrockBatch, JobState, KeyPage};
pub use memory::MemoryBackend;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::config::ModelConfig;
use crate::types::Attempt;
use crate::types::Checkpoint;
use crate::types::Result;
use crate::types::{Api, Provider, Target};
use crate::types::{GenerateRequest, ServiceTier};
use crate::types::{OutputBlock, StopReason, Usage};

pub use bedrock::BedrockBackend;
pub use openai::OpenAiBackend;
pub use sagemaker::SagemakerBackend;

/// One attempt of one request.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The caller's request.
    pub request: &'a GenerateRequest,
    /// Where and how this attempt goes: model, target, tier and request shape.
    pub attempt: &'a Attempt,
    /// The configuration of the attempt's model (`attempt.model`).
    pub model: &'a ModelConfig,
    /// Prompt-cache checkpoints to send (they replace any in the request).
    pub checkpoints: &'a [Checkpoint],
}

/// A whole answer from a backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The answer's content blocks, in order.
    pub content: Vec<OutputBlock>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The tokens the call used, as the service counts them.
    pub usage: Usage,
    /// The tier the service says served, when it says.
    pub served_tier: Option<ServiceTier>,
    /// For a Bedrock prompt router: the model it invoked (`trace.promptRouter.invokedModelId`).
    pub invoked_model: Option<String>,
    /// The model-specific response fields asked for (`additionalModelResponseFields`).
    pub model_response_fields: Option<serde_json::Value>,
    /// The guardrail's assessment (`trace.guardrail`), in Converse's JSON shape.
    pub guardrail_trace: Option<serde_json::Value>,
}

impl Completion {
    /// The events a stream of this answer would have been, in order: each block whole (a tool
    /// call's input as one delta), then the guardrail's trace, the stop and the usage.
    ///
    /// ```
    /// use laneway::backend::{BackendEvent, Completion};
    /// let done = Completion { content: vec![laneway::OutputBlock::Text("hello".into())], ..Completion::default() };
    /// let events = done.into_events();
    /// assert!(matches!(&events[0], BackendEvent::TextDelta { text, .. } if text == "hello"));
    /// assert!(matches!(events.last(), Some(BackendEvent::Metadata { .. })));
    /// ```
    pub fn into_events(self) -> Vec<BackendEvent> {
        use crate::types::{ReasoningBlock, ReasoningDelta};
        let mut events = Vec::with_capacity(self.content.len() + 3);
        for (i, block) in self.content.into_iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            match block {
                OutputBlock::Text(text) => events.push(BackendEvent::TextDelta { index, text }),
                OutputBlock::ToolUse { id, name, input } => {
                    events.push(BackendEvent::ToolUseStart { index, id, name });
                    events.push(BackendEvent::ToolUseDelta {
                        index,
                        input_json: input.to_string(),
                    });
                }
                OutputBlock::Reasoning(ReasoningBlock::Text(r)) => {
                    events.push(BackendEvent::ReasoningDelta {
                        index,
                        delta: ReasoningDelta::Text(r.text),
                    });
                    if let Some(signature) = r.signature {
                        events.push(BackendEvent::ReasoningDelta {
                            index,
                            delta: ReasoningDelta::Signature(signature),
                        });
                    }
                }
                OutputBlock::Reasoning(ReasoningBlock::Redacted(data)) => {
                    events.push(BackendEvent::ReasoningDelta {
                        index,
                        delta: ReasoningDelta::Redacted(data),
                    });
                }
                OutputBlock::Citations(c) => {
                    for text in c.content {
                        events.push(BackendEvent::TextDelta { index, text });
                    }
                    for citation in c.citations {
                        events.push(BackendEvent::CitationDelta { index, citation });
                    }
                }
            }
        }
        if let Some(trace) = self.guardrail_trace {
            events.push(BackendEvent::GuardrailTrace(trace));
        }
        events.push(match self.model_response_fields {
            Some(fields) => BackendEvent::StopWithFields(self.stop_reason, fields),
            None => BackendEvent::Stop(self.stop_reason),
        });
        events.push(BackendEvent::Metadata {
            usage: self.usage,
            served_tier: self.served_tier,
            invoked_model: self.invoked_model,
        });
        events
    }
}

/// One event of a backend's stream, in the order the service sends them.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvent {
    /// A piece of the text of content block `index`.
    TextDelta {
        /// The content block the text belongs to.
        index: u32,
        /// The text, to append to the block's.
        text: String,
    },
    /// A tool call begins in content block `index`.
    ToolUseStart {
        /// The content block of the tool call.
        index: u32,
        /// The tool call's id, which its result refers to.
        id: String,
        /// The name of the tool called.
        name: String,
    },
    /// A piece of the JSON input of the tool call in content block `index`.
    ToolUseDelta {
        /// The content block of the tool call.
        index: u32,
        /// A fragment of the input's JSON text; the fragments, joined, are the whole input.
        input_json: String,
    },
    /// A citation of the text of block `index`.
    CitationDelta {
        /// The content block whose text is cited.
        index: u32,
        /// The source cited and where in it.
        citation: crate::types::Citation,
    },
    /// A piece of the model's reasoning.
    ReasoningDelta {
        /// The content block of the reasoning.
        index: u32,
        /// Reasoning text, its signature, or encrypted (redacted) reasoning.
        delta: crate::types::ReasoningDelta,
    },
    /// The model stopped.
    Stop(StopReason),
    /// The model stopped, with the model-specific response fields asked for
    /// (`additionalModelResponseFields` of Bedrock's `messageStop`).
    StopWithFields(StopReason, serde_json::Value),
    /// The guardrail's assessment (Bedrock sends it in the stream's metadata event).
    GuardrailTrace(serde_json::Value),
    /// Final accounting (Bedrock sends it after `Stop`; other formats with their last line).
    Metadata {
        /// The tokens the call used.
        usage: Usage,
        /// The tier the service says served, when it says.
        served_tier: Option<ServiceTier>,
        /// For a Bedrock prompt router: the model it invoked (`trace.promptRouter.invokedModelId`).
        invoked_model: Option<String>,
    },
}

/// A backend's event stream.
pub type EventStream = BoxStream<'static, Result<BackendEvent>>;

/// A service Laneway can send a request to.
///
/// **When it runs.** Once per attempt: the executor calls `generate` or `stream` for each
/// target of the plan it tries, in order, on the caller's task (a hedge runs beside the
/// attempt it hedges). One backend serves every attempt of its provider, concurrently: keep
/// shared state behind `&self` and make it `Send + Sync`.
///
/// **What it sees.** The [`Call`]: the request, the attempt (model, target and region, tier,
/// the attempt's shape) and the model's configuration. It sends what the call says, to the
/// target it names: routing, retries and failover are the router's.
///
/// **Time.** The router bounds every attempt (first token, idle gaps, the deadline) and drops
/// the future or stream when a limit fires, so a backend needs no timers of its own; it must
/// stop its I/O when dropped, as futures and streams over tokio do.
///
/// **Errors.** Map the service's errors to an [`Error::Service`](crate::Error::Service) of the
/// right [`ErrorKind`](crate::ErrorKind). The kinds
/// [`ErrorKind::fails_over`](crate::ErrorKind::fails_over) names
/// (`Throttled`, `Unavailable`, `ModelNotReady`, `Timeout`, `Internal`, `Transport`,
/// `AccessDenied`) move the call to the next target and count against the target's health
/// (`AccessDenied` also keeps the model's targets in that region away); `Authentication` fails
/// the call at once (unless it is a refusal one target may make of credentials its provider
/// has taken before: see [`Error::may_be_the_targets_refusal`](crate::Error::may_be_the_targets_refusal));
/// the others (`Validation`, `ModelError`, ...) end it. A stream that
/// breaks after its first event yields the error in place: the router continues it elsewhere
/// from the text delivered when the request allows.
///
/// **What it may change.** Nothing of the router: it returns a [`Completion`] or the stream's
/// [`BackendEvent`]s, with usage as the service counted it.
pub trait Backend: Send + Sync {
    /// Sends the request and waits for the whole answer.
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>>;
    /// Sends the request and returns its event stream once the service has accepted it.
    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>>;
}

/// The backends a router sends to, one per API of each provider.
///
/// ```
/// use std::sync::Arc;
/// use laneway::backend::{Backends, MemoryBackend};
/// use laneway::{Api, Provider, Target};
/// let mut backends = Backends::default();
/// backends.insert(Provider::named("echo"), Arc::new(MemoryBackend::echo()));
/// assert!(backends.get(&Provider::named("echo")).is_some());
/// assert!(backends.get(&Provider::Bedrock).is_none());
/// backends.insert_for_api(Provider::Bedrock, Api::OpenAiMantle, Arc::new(MemoryBackend::echo()));
/// assert!(backends.for_target(&Target::mantle("us-east-1", "openai.gpt-5.4")).is_some());
/// assert!(backends.for_target(&Target::bedrock("us-east-1", "amazon.nova-lite-v1:0", None)).is_none());
/// // The deprecated name of bedrock-runtime's OpenAI-compatible API registers for it.
/// backends.insert(Provider::named("bedrock-openai"), Arc::new(MemoryBackend::echo()));
/// assert!(backends.for_target(&Target::bedrock_openai("us-east-1", "us.openai.gpt-6-sol", None)).is_some());
/// ```
#[derive(Clone, Default)]
pub struct Backends {
    // A handful of providers and APIs at most: a scan beats hashing.
    by_api: Vec<((Provider, Api), Arc<dyn Backend>)>,
}

impl Backends {
    /// Registers `backend` for `provider`'s models called by its usual API (Bedrock's
    /// Converse, SageMaker's InvokeEndpoint, your own provider's), returning the one it
    /// replaces.
    pub fn insert(
        &mut self,
        provider: Provider,
        backend: Arc<dyn Backend>,
    ) -> Option<Arc<dyn Backend>> {
        let (provider, api) = provider.registered_as();
        self.insert_for_api(provider, api, backend)
    }

    /// Registers `backend` for `provider`'s models called by `api` (Bedrock's
    /// OpenAI-compatible APIs have backends of their own), returning the one it replaces.
    pub fn insert_for_api(
        &mut self,
        provider: Provider,
        api: Api,
        backend: Arc<dyn Backend>,
    ) -> Option<Arc<dyn Backend>> {
        let key = (provider, api);
        match self.by_api.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => Some(std::mem::replace(slot, backend)),
            None => {
                self.by_api.push((key, backend));
                None
            }
        }
    }

    /// The backend of `provider`'s usual API, if one is registered.
    pub fn get(&self, provider: &Provider) -> Option<&dyn Backend> {
        let (provider, api) = provider.registered_as();
        self.find(&provider, api)
    }

    /// The backend that serves `target` (its provider's, for its API), if one is registered.
    pub fn for_target(&self, target: &Target) -> Option<&dyn Backend> {
        self.find(&target.provider, target.api)
    }

    /// Whether `provider`'s usual API has a backend.
    pub fn contains(&self, provider: &Provider) -> bool {
        self.get(provider).is_some()
    }

    /// Whether `provider`'s `api` has a backend.
    pub fn contains_api(&self, provider: &Provider, api: Api) -> bool {
        self.find(provider, api).is_some()
    }

    /// The providers registered, in registration order, once each.
    pub fn providers(&self) -> impl Iterator<Item = &Provider> {
        self.by_api
            .iter()
            .enumerate()
            .filter(|(i, ((p, _), _))| !self.by_api[..*i].iter().any(|((q, _), _)| q == p))
            .map(|(_, ((p, _), _))| p)
    }

    fn find(&self, provider: &Provider, api: Api) -> Option<&dyn Backend> {
        self.by_api
            .iter()
            .find(|((p, a), _)| p == provider && *a == api)
            .map(|(_, b)| b.as_ref())
    }
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.by_api.iter().map(|((p, a), _)| format!("{p} {a}")))
            .finish()
    }
}

/// One SDK client per region, each made by `make` for its region.
fn per_region<'a, C>(
    regions: impl IntoIterator<Item = &'a str>,
    make: impl Fn(aws_config::Region) -> C,
) -> foldhash::HashMap<String, C> {
    regions
        .into_iter()
        .map(|r| (r.to_string(), make(aws_config::Region::new(r.to_string()))))
        .collect()
}
