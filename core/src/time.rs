//! The one clock the router reads.
//!
//! Breakers, budgets, quotas, reservations, latency records, prefix memory and telemetry all
//! take their `now` from [`now`], and a call's time limits are tokio timers: both are tokio's
//! clock. In production that is the monotonic system clock; in a test on a paused runtime
//! (`#[tokio::test(start_paused = true)]`, or `tokio::time::pause()`) it moves only when the
//! test advances it, so a breaker's open period or a budget's window passes at once instead of
//! being waited out.
//!
//! Records shared with other processes (through Redis) carry wall-clock times instead: another
//! process cannot read this one's monotonic clock.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let before = laneway::time::now();
//! tokio::time::sleep(std::time::Duration::from_millis(1)).await;
//! assert!(laneway::time::now() > before);
//! # }
//! ```

use std::time::Instant;

/// Now, on tokio's clock (paused and advanced in tests), as a [`std::time::Instant`].
///
/// Outside a tokio runtime this is [`Instant::now`].
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
