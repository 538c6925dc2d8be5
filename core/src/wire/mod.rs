//! The wire protocols Laneway speaks on both sides: the backends write requests and read
//! answers in them, and the drop-ins (`surface`) read requests and write answers in them. A
//! protocol's pieces are written once here, with their conversions in both directions, so
//! that a backend and a drop-in of one protocol cannot drift apart; round-trip tests hold
//! each to it.
//!
//! - Converse JSON ([`converse`]: a request read into the core's, a response written) and
//!   ConverseStream's events ([`converse_stream`]), in AWS event-stream frames
//!   ([`eventstream`]); the backends write and read Converse through the official AWS SDK's
//!   types.
//! - InvokeModel's native bodies, Claude's Messages and Nova's ([`invoke`]), read as the
//!   Converse request they mean and answered in their own shape.
//! - Chat Completions' messages, tools, tool choice, tool calls, images and usage ([`chat`]),
//!   which the OpenAI backend and SageMaker's OpenAI-compatible containers send alike (and
//!   whose answers and chunks one reader in `backend::openai::chat` reads for both).
//! - The Responses API's items (a conversation's input and an answer's output are the same
//!   items), tools, `response` object, usage and stream events, with the drop-in's stream
//!   writer ([`responses`]).
//! - Each protocol's stop words: [`StopReason`](crate::StopReason)'s.
//!
//! The drop-ins' Converse and InvokeModel modules are public as `laneway::surface::converse`,
//! `converse_stream`, `eventstream` and `invoke`.

pub(crate) mod chat;
pub mod converse;
pub mod converse_stream;
pub mod eventstream;
pub mod invoke;
pub(crate) mod responses;
