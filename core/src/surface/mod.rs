//! The binding-neutral surface: what the Python and Node packages exchange with the core, as
//! one serde schema, so that both convert values and hold no logic of their own.
//!
//! The schema is the serde form of the core's types ([`GenerateRequest`](crate::GenerateRequest),
//! [`GenerateResponse`](crate::GenerateResponse), [`StreamEvent`](crate::StreamEvent)) plus the
//! types of this module: [`RouterOptions`] (how to build a router, the configuration included),
//! [`ErrorDetails`] (an error as data), the flat request form the bindings take (a prompt and
//! options, [`flat`]), the AWS Converse request and response shapes ([`converse`]), InvokeModel's native bodies ([`invoke`]), and the batch lane's items and progress ([`batch`]). One unit per quantity, named by the key's suffix:
//!
//! | quantity | unit | keys |
//! |---|---|---|
//! | durations | milliseconds, a float | `*_ms`: `ttft_ms`, `total_ms`, `retry_after_ms`, `slo.deadline` (ms) |
//! | money | US dollars, a float | `*_usd` |
//! | tokens, counts | integers | `*_tokens`, `attempts_sent` |
//! | binary content | base64 text (a Python `bytes` is accepted too) | `bytes` |
//!
//! Keys are snake_case; the Converse shapes keep AWS's camelCase, so that an app written for
//! boto3 or the JavaScript SDK passes its request as it is.

pub mod batch;
mod details;
pub mod flat;
pub mod http;
pub mod openai;
mod options;
pub mod otel;
pub mod schema;
mod value;

// The AWS wire shapes the bindings and seams read and write live in `wire`.
pub use crate::wire::{converse, converse_stream, eventstream, invoke};
pub use details::{ErrorDetails, LANEWAY_INTERNAL};
pub use options::{ConfigInput, RouterOptions};
pub use value::AnyValue;
