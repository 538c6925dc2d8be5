//! Timing of one call as the caller sees it: TTFT, gaps between deltas, total, tokens/s.
//!
//! Instants are tokio's, as the call's time limits are (`limits.rs`): what a call measured and
//! when its limits fire are read from one clock, which tests pause and advance.

use std::time::Duration;

use tokio::time::Instant;

use crate::types::{InterTokenSummary, Timings};

/// Records when a call started and when each content delta arrived.
#[derive(Debug, Clone)]
pub struct Clock {
    start: Instant,
    first: Option<Instant>,
    first_reasoning: Option<Instant>,
    first_answer: Option<Instant>,
    last: Option<Instant>,
    gaps: Vec<Duration>,
    /// Where the current attempt's own gaps begin in `gaps` (after a continuation, the gap
    /// across the failover is no target's).
    attempt_gaps_from: usize,
}

impl Clock {
    /// A clock started now, with no delta yet.
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
            first: None,
            first_reasoning: None,
            first_answer: None,
            last: None,
            gaps: Vec::new(),
            attempt_gaps_from: 0,
        }
    }

    /// A content delta arrived now: reasoning, or the answer.
    pub fn delta(&mut self, reasoning: bool) {
        let now = Instant::now();
        let first_of_kind = if reasoning {
            &mut self.first_reasoning
        } else {
            &mut self.first_answer
        };
        first_of_kind.get_or_insert(now);
        if let Some(last) = self.last {
            if self.gaps.capacity() == 0 {
                // Past the first few, gaps come by the hundred: skip the smallest growth steps.
                self.gaps.reserve(32);
            }
            self.gaps.push(now - last);
        } else {
            self.first = Some(now);
        }
        self.last = Some(now);
    }

    /// When the call started.
    pub fn started(&self) -> Instant {
        self.start
    }

    /// Time since the call started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Forgets deltas of a failed attempt; the start stays, so TTFT includes the failover.
    pub fn restart_attempt(&mut self) {
        self.first = None;
        self.first_reasoning = None;
        self.first_answer = None;
        self.last = None;
        self.gaps.clear();
        self.attempt_gaps_from = 0;
    }

    /// Another attempt continues a broken stream: the caller's gaps go on, the next gap (across
    /// the failover) and those before it are not the new attempt's.
    pub fn continue_attempt(&mut self) {
        self.attempt_gaps_from = self.gaps.len() + 1;
    }

    /// The longest gap between the current attempt's own deltas (before [`finish`](Self::finish)).
    pub fn attempt_longest_gap(&self) -> Option<Duration> {
        self.gaps
            .get(self.attempt_gaps_from..)?
            .iter()
            .max()
            .copied()
    }

    /// The timings so far; `output_tokens` gives the throughput. (The gaps are sorted for
    /// their quantiles: the clock counts no further deltas after.)
    pub fn finish(&mut self, output_tokens: u32) -> Timings {
        let end = Instant::now();
        let ttft = self.first.map(|f| f - self.start);
        let generation = match (self.first, self.last) {
            (Some(f), Some(l)) if l > f => Some(l - f),
            _ => None,
        };
        Timings {
            ttft,
            ttft_reasoning: self.first_reasoning.map(|f| f - self.start),
            ttft_answer: self.first_answer.map(|f| f - self.start),
            inter_token: InterTokenSummary::from_gaps(&mut self.gaps),
            total: end - self.start,
            // Tokens after the first, over the time they took to arrive.
            output_tokens_per_second: generation
                .filter(|_| output_tokens > 1)
                .map(|g| f64::from(output_tokens - 1) / g.as_secs_f64()),
        }
    }
}
