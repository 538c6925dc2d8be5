//! Prompt-cache checkpoints: where in the prompt one goes, and with which TTL.

use serde::Serialize;

use super::CacheTtl;

/// A point in the prompt a checkpoint can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// After the tool list.
    Tools,
    /// After system block `i`.
    System(usize),
    /// After block `block` of message `index`.
    Message {
        /// Position of the message in the request's `messages`, from 0.
        index: usize,
        /// Position of the block in that message's content, from 0.
        block: usize,
    },
}

/// A checkpoint to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// The boundary it follows: the prefix up to there is cached.
    pub at: Boundary,
    /// How long the cached prefix lives.
    pub ttl: CacheTtl,
    /// Estimated tokens before it.
    pub tokens_before: u32,
}
