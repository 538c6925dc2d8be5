//! # Laneway
//!
//! In-process, SLO-aware routing of LLM calls across Amazon Bedrock and Amazon SageMaker.
//!
//! Each [`GenerateRequest`] carries an [`Slo`]. [`Router::generate`] and [`Router::stream`] plan
//! the call with a pure function ([`plan()`]: model variant, service tier, region / inference
//! profile / endpoint, prompt-cache checkpoints), send it with the official AWS SDK, fail over
//! when a target is throttled or down, and return the answer with its [`Usage`], [`Timings`],
//! cost in USD and the [`RouteDecision`] that explains it.
//!
//! ```no_run
//! # async fn run() -> laneway::Result<()> {
//! use laneway::{GenerateRequest, Router, SloClass};
//! let router = Router::builder()
//!     .endpoint_url("http://127.0.0.1:4010") // the emulator; omit for AWS
//!     .static_credentials("LANEWAYTESTKEY", "LANEWAYTESTSECRET")
//!     .build()
//!     .await?;
//! let answer = router
//!     .generate(GenerateRequest::user("Summarise our refund policy").family("nova").slo_class(SloClass::Background))
//!     .await?;
//! assert!(answer.cost_usd > 0.0);
//! # Ok(()) }
//! ```

pub mod advice;
pub mod backend;
pub mod batch;
#[cfg(doctest)]
mod book;
pub mod classifier;
mod client;
pub mod config;
pub mod cost;
pub mod execute;
#[doc(hidden)]
pub mod failpoint;
pub mod plan;
pub mod surface;
pub mod telemetry;
pub mod time;
pub mod types;
mod wire;

pub use client::{BatchSession, LazyStream, Router, RouterBuilder};
#[cfg(feature = "metrics-http")]
pub use client::{Scrape, serve_prometheus, serve_scrapes};
pub use config::Config;
pub use cost::Price;
pub use execute::ResponseStream;
pub use plan::prompt_cache::{CharEstimate, TokenCounter};
pub use plan::{Plan, plan};
// The router's live state is the crate's own, not public API (hidden from the docs; the
// crate's benches and tests reach into it). What the planner reads of it is public in `plan`:
// `Observations`, `TargetView`, `Fresh`.
#[doc(hidden)]
pub mod state;
pub use types::{
    Api, Attempt, AttemptShape, BreakerView, CacheMode, CachePoint, CacheTtl, Cause, Citation,
    CitationLocation, CitationsContent, ContentBlock, Delivered, Document, DocumentFormat, Error,
    ErrorKind, FailedAttempt, FailureFact, GenerateRequest, GenerateResponse, Geography,
    GuardContent, GuardQualifier, Guardrail, GuardrailStreamMode, GuardrailTrace, Image,
    ImageFormat, InferenceParams, InterTokenSummary, JsonSchemaFormat, LimitSource, MAX_DURATION,
    Media, MediaSource, Message, ModelFields, ModelRef, OutputBlock, OutputFormat, ProfileScope,
    Provider, Reason, Reasoning, ReasoningBlock, ReasoningDelta, ReasoningEffort, ReasoningText,
    Residency, Result, Role, RouteDecision, SearchResult, ServiceError, ServiceTier, Slo, SloClass,
    Span, StopReason, StreamEvent, SystemBlock, Target, TimeLimit, Timings, Tool, ToolChoice,
    ToolReference, ToolResult, ToolResultContent, ToolSpec, ToolUse, Usage, WholeWhy,
};
