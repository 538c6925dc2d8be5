//! The wire protocols Laneway speaks on both sides: the backends write requests and read
//! answers in them, and the drop-ins (`surface`) read requests and write answers in them. A
//! protocol's pieces are written once here, with their conversions in both directions, so
//! that a backend and a drop-in of one protocol cannot drift apart; round-trip tests hold
//! each to it.
//!
//! So far: Chat Completions' tools, tool choice, tool calls and usage ([`chat`]); each
//! protocol's stop words are [`StopReason`](crate::StopReason)'s.

pub(crate) mod chat;
