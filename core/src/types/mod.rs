//! The types every layer shares, and nothing else: requests, responses, errors, targets,
//! attempts, checkpoints, the reasons of a plan, service tiers and providers. A leaf: this
//! module imports nothing else of the crate, so every other module may use it.

mod arn;
mod base64_bytes;
mod call_id;
mod checkpoint;
mod content;
mod error;
mod fields;
mod geography;
mod message;
mod partition;
mod reason;
mod reasoning;
mod request;
mod response;
mod slo;
mod target;
mod tier;
pub mod units;
mod validate;

pub use arn::Arn;
pub use call_id::CallRef;
pub use checkpoint::{Boundary, Checkpoint};
pub use content::{
    Citation, CitationLocation, CitationsContent, Media, MediaSource, SearchResult, Span,
    ToolReference,
};
pub use error::*;
pub use fields::{
    GuardContent, GuardQualifier, Guardrail, GuardrailStreamMode, GuardrailTrace, JsonSchemaFormat,
    ModelFields, OutputFormat,
};
pub use geography::{Geography, GeographyNameError, ProfileScope};
pub use message::*;
pub use partition::Partition;
pub use reason::*;
pub use reasoning::{
    Reasoning, ReasoningBlock, ReasoningDelta, ReasoningEffort, ReasoningText, ReasoningWire,
};
pub use request::*;
pub use response::*;
pub use slo::*;
pub use target::*;
pub use tier::{MAX_DECLARED_TIERS, ServiceTier, TierError};
pub use units::MAX_DURATION;
