//! The router end to end, one test binary (the AWS SDKs linked once): against the emulator over
//! the official SDKs, and against in-memory backends on tokio's paused clock.
//!
//! Run one module's tests with a filter: `cargo test -p laneway --test router slo_engine::`.

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod batch_lane;
mod errors_and_failover;
mod generate_and_stream;
mod http_seam;
mod learning_from_feedback;
#[cfg(feature = "metrics-http")]
mod metrics_http;
mod policies;
mod prompt_cache_accounting;
mod recording;
mod slo_engine;
mod surface;
mod surge;
mod telemetry;
mod time_limits;
mod variant_routing;
