//! A call as an OpenTelemetry span in the host's own traces (Python's `opentelemetry-api`,
//! Node's `@opentelemetry/api`): its name and the attributes known at its start from the
//! request, and what its end adds from the response or the error, in the GenAI semantic
//! conventions of [`SEMCONV_VERSION`] (`gen_ai.*`) and Laneway's own (`laneway.*`). The
//! bindings open the span in the caller's context, set these and end it; the mapping is here,
//! once. Nothing of a prompt, an answer or a credential is an attribute.

use serde_json::{Map, Value, json};

use crate::types::{GenerateRequest, ModelRef};

/// The semantic conventions the attributes follow: the last release that defines the GenAI
/// client span (later ones moved it to a repository of its own, not released yet).
pub const SEMCONV_VERSION: &str = "1.41.1";

/// The schema URL of [`SEMCONV_VERSION`], for the tracer.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.1";

/// The span of a call about to start: `{"name", "attributes"}`. Its name is
/// `chat {requested model}`; its attributes those a sampler may read (operation, provider,
/// requested model, whether it streams) and the request's SLO class and output limit.
///
/// ```
/// let req = laneway::GenerateRequest::user("hi").family("nova").max_tokens(20);
/// let start = laneway::surface::otel::start(&req, true);
/// assert_eq!(start["name"], "chat nova");
/// assert_eq!(start["attributes"]["gen_ai.provider.name"], "aws.bedrock");
/// assert_eq!(start["attributes"]["gen_ai.request.stream"], true);
/// assert_eq!(start["attributes"]["laneway.slo"], "standard");
/// ```
pub fn start(request: &GenerateRequest, stream: bool) -> Value {
    let requested = match &request.model {
        ModelRef::Default => None,
        ModelRef::Model(m) | ModelRef::Family(m) => Some(m.as_str()),
    };
    let mut attributes = Map::new();
    attributes.insert("gen_ai.operation.name".into(), json!("chat"));
    // Laneway routes Bedrock's and SageMaker's models; the provider that served is said at the
    // end (a SageMaker endpoint's span says `aws.sagemaker` then).
    attributes.insert("gen_ai.provider.name".into(), json!("aws.bedrock"));
    if let Some(m) = requested {
        attributes.insert("gen_ai.request.model".into(), json!(m));
    }
    if stream {
        attributes.insert("gen_ai.request.stream".into(), json!(true));
    }
    if let Some(n) = request.inference.max_tokens {
        attributes.insert("gen_ai.request.max_tokens".into(), json!(n));
    }
    attributes.insert("laneway.slo".into(), json!(request.slo.class.as_str()));
    if let Some(t) = request.tier {
        attributes.insert("laneway.tier.requested".into(), json!(t.as_str()));
    }
    json!({
        "name": format!("chat {}", requested.unwrap_or("default")),
        "attributes": attributes,
    })
}

/// What a call's end adds, from the response as the bindings receive it (the serde form of
/// [`GenerateResponse`](crate::GenerateResponse)): `{"attributes", "events"}`. Token usage in
/// the conventions' sense (input includes the cached), the model that answered, the finish
/// reason, and Laneway's decision: tier sent and served, region, target, API, family, the
/// reasons' names, attempts and cost; an event per failed attempt (`laneway.failover`) and per
/// hedge (`laneway.hedge`).
pub fn finish(response: &Value) -> Value {
    let d = &response["decision"];
    let u = &response["usage"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let mut a = Map::new();
    let provider = match d["provider"].as_str() {
        Some("bedrock") | None => "aws.bedrock".to_string(),
        Some("sagemaker") => "aws.sagemaker".to_string(),
        Some(other) => other.to_string(),
    };
    a.insert("gen_ai.provider.name".into(), json!(provider));
    copy(&mut a, "gen_ai.response.model", &d["model"]);
    let cached = n(&u["cache_read_tokens"]);
    let written = n(&u["cache_write_tokens"]);
    a.insert(
        "gen_ai.usage.input_tokens".into(),
        json!(n(&u["input_tokens"]) + cached + written),
    );
    a.insert(
        "gen_ai.usage.output_tokens".into(),
        json!(n(&u["output_tokens"])),
    );
    a.insert("gen_ai.usage.cache_read.input_tokens".into(), json!(cached));
    a.insert(
        "gen_ai.usage.cache_creation.input_tokens".into(),
        json!(written),
    );
    if let Some(r) = u["reasoning_tokens"].as_u64().filter(|r| *r > 0) {
        a.insert("gen_ai.usage.reasoning.output_tokens".into(), json!(r));
    }
    if let Some(stop) = response["stop_reason"].as_str() {
        a.insert("gen_ai.response.finish_reasons".into(), json!([stop]));
    }
    copy(&mut a, "gen_ai.response.id", &d["call_id"]);
    for (key, field) in [
        ("laneway.tier", "tier"),
        ("laneway.tier.served", "served_tier"),
        ("laneway.region", "region"),
        ("laneway.target", "target"),
        ("laneway.api", "api"),
        ("laneway.family", "family"),
        ("laneway.endpoint", "endpoint"),
    ] {
        copy(&mut a, key, &d[field]);
    }
    a.insert("laneway.attempts".into(), json!(n(&d["attempts_sent"])));
    a.insert(
        "laneway.cost_usd".into(),
        json!(response["cost_usd"].as_f64().unwrap_or(0.0)),
    );
    let reasons: Vec<&str> = d["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    a.insert("laneway.reasons".into(), json!(reasons));
    let mut events = failovers(&d["failed_attempts"]);
    if let Some(h) = d["hedge"].as_object() {
        events.push(json!({ "name": "laneway.hedge", "attributes": {
            "laneway.target": h.get("hedge_target").cloned().unwrap_or(Value::Null),
            "laneway.hedge.won": h.get("hedge_won").cloned().unwrap_or(Value::Null),
            "laneway.hedge.delay_ms": h.get("delay").cloned().unwrap_or(Value::Null),
        }}));
    }
    json!({ "attributes": a, "events": events })
}

/// What a failed call's end adds, from its error details (the bindings' error `details`):
/// `error.type` (the error kind), and an event per attempt that failed.
///
/// ```
/// let end = laneway::surface::otel::failed(&serde_json::json!({"kind": "throttled", "attempts": []}));
/// assert_eq!(end["attributes"]["error.type"], "throttled");
/// ```
pub fn failed(details: &Value) -> Value {
    let kind = details["kind"].as_str().unwrap_or("_OTHER");
    json!({
        "attributes": { "error.type": kind },
        "events": failovers(&details["attempts"]),
    })
}

fn copy(into: &mut Map<String, Value>, key: &str, value: &Value) {
    if !value.is_null() {
        into.insert(key.into(), value.clone());
    }
}

/// A `laneway.failover` event per failed attempt: where it went and why it failed, never the
/// service's message (it may quote the request).
fn failovers(attempts: &Value) -> Vec<Value> {
    attempts
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let mut a = Map::new();
            for (key, field) in [
                ("laneway.target", "target"),
                ("laneway.region", "region"),
                ("laneway.model", "model"),
                ("laneway.api", "api"),
                ("error.type", "kind"),
            ] {
                copy(&mut a, key, &f[field]);
            }
            json!({ "name": "laneway.failover", "attributes": a })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_call_says_usage_decision_and_failovers() {
        let response = json!({
            "stop_reason": "end_turn",
            "cost_usd": 0.0012,
            "usage": { "input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 1000, "cache_write_tokens": 0, "reasoning_tokens": 0 },
            "decision": {
                "call_id": "c1", "provider": "bedrock", "api": "converse", "model": "amazon.nova-lite-v1:0",
                "family": "nova", "target": "us.amazon.nova-lite-v1:0", "region": "us-west-2",
                "tier": "flex", "served_tier": "flex", "attempts_sent": 2,
                "reasons": [{ "reason": "tier_from_slo" }],
                "failed_attempts": [{ "target": "amazon.nova-lite-v1:0", "region": "us-east-1", "kind": "throttled", "message": "the prompt said: secret" }],
            },
        });
        let end = finish(&response);
        let a = &end["attributes"];
        assert_eq!(a["gen_ai.usage.input_tokens"], 1100);
        assert_eq!(a["gen_ai.usage.cache_read.input_tokens"], 1000);
        assert_eq!(a["gen_ai.response.finish_reasons"], json!(["end_turn"]));
        assert_eq!(a["laneway.tier.served"], "flex");
        assert_eq!(a["laneway.reasons"], json!(["tier_from_slo"]));
        let events = end["events"].as_array().unwrap();
        assert_eq!(events[0]["name"], "laneway.failover");
        assert_eq!(events[0]["attributes"]["error.type"], "throttled");
        assert!(!end.to_string().contains("secret"));
    }
}
