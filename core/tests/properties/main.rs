//! Properties that need no server, one test binary: the planner's invariants over random
//! requests, structured fuzzing of what callers hand Laneway, and the core's layering.
//!
//! Run one module's tests with a filter: `cargo test -p laneway --test properties layering::`.

mod fuzz_inputs;
mod layering;
mod naming;
mod plan_properties;
