//! An `openai`-shaped stream for the bindings: a [`LazyStream`] whose events are written in the
//! call's API shape as they are read, so that Python and Node read the same events the same way.

use std::sync::Mutex;

use serde_json::Value;

use super::Encoder;
use crate::client::LazyStream;
use crate::types::Result;

/// A call's stream in its API's shape (chunks, or the Responses API's typed events), read in
/// bursts as [`LazyStream`] is. A burst of the core's that makes no event of the API's (a
/// signature, the seam of a continuation) is read past, so an empty batch is always the end.
pub struct ShapedStream {
    stream: LazyStream,
    encoder: Mutex<Encoder>,
}

impl ShapedStream {
    /// `stream`'s events, written by `encoder`.
    pub fn new(stream: LazyStream, encoder: Encoder) -> Self {
        Self {
            stream,
            encoder: Mutex::new(encoder),
        }
    }

    fn encode(&self, events: &[crate::types::StreamEvent]) -> Vec<Value> {
        self.encoder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .on_all(events)
    }

    /// The API's events of the next burst that makes any; empty after the last.
    pub async fn next_batch(&self, max: usize) -> Result<Vec<Value>> {
        loop {
            let burst = self.stream.next_batch(max).await?;
            if burst.is_empty() {
                return Ok(Vec::new());
            }
            let out = self.encode(&burst);
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }

    /// [`next_batch`](Self::next_batch) for a thread outside the runtime.
    pub fn next_batch_blocking(
        &self,
        runtime: &tokio::runtime::Handle,
        max: usize,
    ) -> Result<Vec<Value>> {
        loop {
            let burst = self.stream.next_batch_blocking(runtime, max)?;
            if burst.is_empty() {
                return Ok(Vec::new());
            }
            let out = self.encode(&burst);
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }

    /// The API's events already read ahead, without waiting: `None` when none are (a burst
    /// read ahead that makes no event of the API's counts as none); otherwise as
    /// [`next_batch`](Self::next_batch).
    pub fn ready_batch(&self, max: usize) -> Option<Result<Vec<Value>>> {
        loop {
            match self.stream.ready_batch(max)? {
                Ok(burst) if burst.is_empty() => return Some(Ok(Vec::new())),
                Ok(burst) => {
                    let out = self.encode(&burst);
                    if !out.is_empty() {
                        return Some(Ok(out));
                    }
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Ends the stream now, cancelling its request; a read waiting on it ends too.
    pub async fn close(&self) {
        self.stream.close().await;
    }

    /// [`close`](Self::close) for a thread outside the runtime.
    pub fn close_blocking(&self) {
        self.stream.close_blocking();
    }
}
