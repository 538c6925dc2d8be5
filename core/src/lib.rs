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

pub mod backend;
pub mod batch;
mod batch_run;
pub use batch_run::BatchSession;
pub mod classifier;
mod client;
pub mod config;
pub mod cost;
mod error;
pub mod execute;
#[doc(hidden)]
pub mod failpoint;
pub mod plan;
mod request;
mod response;
pub mod telemetry;

pub use client::{Router, RouterBuilder};
pub use config::{Config, Provider};
pub use cost::Price;
pub use error::{Delivered, Error, ErrorKind, FailedAttempt, Result, ServiceError, TimeLimit};
pub use execute::{LazyStream, ResponseStream};
pub use plan::prompt_cache::{CharEstimate, TokenCounter};
pub use plan::{plan, Attempt, Plan, Reason, Target};
pub use request::{
    CacheMode, CachePoint, CacheTtl, ContentBlock, GenerateRequest, Geography, Image, ImageFormat,
    InferenceParams, Message, ModelRef, Residency, Role, ServiceTier, Slo, SloClass, SystemBlock,
    Tool, ToolChoice, ToolResult, ToolResultContent, ToolSpec, ToolUse,
};
pub use response::{
    GenerateResponse, InterTokenSummary, OutputBlock, RouteDecision, StopReason, StreamEvent,
    Timings, Usage,
};
pub mod state;

/// The longest duration Laneway accepts anywhere (a deadline, a back-off, a Retry-After): a
/// year. Longer values are refused (or clamped, where a service sent them), so that adding one
/// to an instant can never overflow.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 24 * 3600);

/// Milliseconds as a [`std::time::Duration`], or why not: negative, not finite, or above
/// [`MAX_DURATION`].
pub(crate) fn duration_from_millis(ms: f64) -> std::result::Result<std::time::Duration, String> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!(
            "milliseconds must be a finite number >= 0, got {ms}"
        ));
    }
    if ms > MAX_DURATION.as_secs_f64() * 1000.0 {
        return Err(format!(
            "milliseconds must be at most {} (a year), got {ms}",
            MAX_DURATION.as_millis()
        ));
    }
    Ok(std::time::Duration::from_secs_f64(ms / 1000.0))
}

/// Seconds a service sent (a `Retry-After` header), clamped into `[0, MAX_DURATION]`.
pub(crate) fn clamped_secs(secs: f64) -> Option<std::time::Duration> {
    if secs.is_nan() {
        return None;
    }
    Some(std::time::Duration::from_secs_f64(
        secs.clamp(0.0, MAX_DURATION.as_secs_f64()),
    ))
}

/// A token count a service sent, saturated into `u32` (a count beyond it is nonsense, never a
/// reason to wrap or panic).
pub(crate) fn token_count(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Durations as milliseconds in configuration files.
pub(crate) mod serde_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        crate::duration_from_millis(ms).map_err(serde::de::Error::custom)
    }
}
