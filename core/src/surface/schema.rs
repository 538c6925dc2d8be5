//! The names of the binding surface, as data: the flat request's options in each casing, the
//! error kinds, and the keys of the response's typed parts. Each binding's tests check its
//! typed views (`Request`, `Usage`, `Timings`, `Decision`, the `.pyi` and `.d.ts` files) and
//! its error classes against this, so that a field added to the core and not to a binding (or
//! the other way round) fails a test.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::ErrorDetails;
use super::flat::Casing;
use crate::types::{
    HedgeReport, InterTokenSummary, Provider, RouteDecision, ServiceTier, Timings, Usage,
};

/// The surface's names: `request_options` (`snake`, `camel`), `error_kinds`, the keys of
/// `usage`, `timings` and `decision` (a nested object's keys joined to its own with `_`:
/// `inter_token_p50_ms`), snake_case as the schema sends them, and the `service_tiers` (with
/// their `service_tier_wire_names`, Converse's).
///
/// ```
/// let s = laneway::surface::schema::names();
/// assert!(s["request_options"]["camel"].as_array().unwrap().contains(&"maxTokens".into()));
/// assert!(s["timings"].as_array().unwrap().contains(&"inter_token_p50_ms".into()));
/// assert!(s["error_kinds"].as_array().unwrap().contains(&"throttled".into()));
/// ```
pub fn names() -> Value {
    let options = |c: Casing| c.known_keys();
    json!({
        "request_options": { "snake": options(Casing::Snake), "camel": options(Casing::Camel) },
        "error_kinds": ErrorDetails::kinds(),
        "usage": keys(&sample_usage()),
        "timings": keys(&sample_timings()),
        "decision": keys(&sample_decision()),
        "service_tiers": ServiceTier::ALL.map(ServiceTier::as_str),
        "service_tier_wire_names": ServiceTier::ALL.map(ServiceTier::wire_name),
    })
}

/// The keys of a value's serde form, nested objects' joined with `_`.
fn keys(value: &impl Serialize) -> Vec<String> {
    let Ok(Value::Object(map)) = serde_json::to_value(value) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    flatten("", &map, &mut out);
    out
}

fn flatten(prefix: &str, map: &Map<String, Value>, out: &mut Vec<String>) {
    for (k, v) in map {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}_{k}")
        };
        match v {
            // Lists (reasons, failed attempts) are carried whole, not as typed fields.
            Value::Object(inner) => flatten(&name, inner, out),
            _ => out.push(name),
        }
    }
}

// Every field set, written without `..Default::default()`: a field added to these types does
// not compile here until it is listed, and then shows in `names()`.

fn sample_usage() -> Usage {
    Usage {
        input_tokens: 1,
        output_tokens: 1,
        cache_read_tokens: 1,
        cache_write_tokens: 1,
        cache_write_1h_tokens: 1,
        reasoning_tokens: 1,
        input_estimated: true,
    }
}

fn sample_timings() -> Timings {
    let ms = Duration::from_millis(1);
    Timings {
        ttft: Some(ms),
        ttft_reasoning: Some(ms),
        ttft_answer: Some(ms),
        inter_token: Some(InterTokenSummary {
            mean: ms,
            p50: ms,
            p90: ms,
            max: ms,
        }),
        total: ms,
        output_tokens_per_second: Some(1.0),
    }
}

fn sample_decision() -> RouteDecision {
    RouteDecision {
        call_id: "c".into(),
        provider: Provider::Bedrock,
        model: "m".into(),
        family: Some("f".into()),
        target: "t".into(),
        region: "r".into(),
        endpoint: Some("e".into()),
        tier: Some(ServiceTier::Standard),
        served_tier: Some(ServiceTier::Standard),
        invoked_model: Some("i".into()),
        reasons: Vec::new(),
        failed_attempts: Vec::new(),
        attempts_sent: 1,
        // A hedge report is carried whole (a dict / an object), like the reasons.
        hedge: None::<HedgeReport>,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_part_has_its_keys() {
        let s = super::names();
        let timings: Vec<&str> = s["timings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(timings.contains(&"ttft_reasoning_ms") && timings.contains(&"inter_token_max_ms"));
        let decision = s["decision"].as_array().unwrap();
        assert!(decision.contains(&"served_tier".into()) && decision.contains(&"reasons".into()));
        assert_eq!(
            s["request_options"]["snake"].as_array().unwrap().len(),
            s["request_options"]["camel"].as_array().unwrap().len()
        );
    }
}
