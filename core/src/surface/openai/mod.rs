//! The `openai` SDKs' request and response shapes, for apps written against them: a
//! `chat.completions.create(...)` body read into a core request, and the answer written back as
//! a `chat.completion` (or its `chat.completion.chunk`s), with Laneway's decision, timings and
//! cost beside it under `laneway`. The bindings' `openai`-shaped clients only pass bodies
//! through these.
//!
//! Laneway's own options go in a `laneway` object of the body (the SDKs' `extra_body`): the
//! flat form's keys ([`flat::KEYS`](super::flat::KEYS): `slo`, `family`, `task_id`,
//! `residency`, ...). A field Laneway does not honour is either refused by name (`n` above 1,
//! audio output) or carried on with the call and said in its decision
//! ([`Reason::FieldNotHonoured`](crate::Reason::FieldNotHonoured)): never dropped silently.

pub mod chat;
pub mod responses;

use serde_json::{json, Value};

use crate::types::{GenerateResponse, Reason};

/// Fields of a body that the call goes without, each with why.
pub type Unhonoured = Vec<(String, String)>;

/// Says in `r`'s decision which fields the call went without.
pub fn note_unhonoured(r: &mut GenerateResponse, unhonoured: &Unhonoured) {
    for (field, why) in unhonoured {
        r.decision.reasons.push(Reason::FieldNotHonoured {
            field: field.clone(),
            why: why.clone(),
        });
    }
}

/// What Laneway adds beside the SDK's shape: the decision, timings, cost and cache savings.
pub fn laneway_extras(r: &GenerateResponse) -> Value {
    json!({
        "decision": r.decision,
        "timings": r.timings,
        "cost_usd": r.cost_usd,
        "cache_savings_usd": r.cache_savings_usd,
    })
}

/// A fresh id for a streamed answer (its call id is known only at its end): `prefix`, the
/// process, the time and a counter.
fn fresh_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}laneway{:x}{:x}{:06x}",
        std::process::id(),
        now_unix(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Seconds since the epoch, as the SDKs' `created` fields count.
fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
