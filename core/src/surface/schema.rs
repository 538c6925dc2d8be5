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
use crate::config::builtin_tiers;
use crate::types::{
    Api, HedgeReport, InterTokenSummary, Provider, RouteDecision, ServiceTier, Timings, Usage,
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
        "error_classes": ErrorDetails::kinds()
            .into_iter()
            .map(|kind| (kind.to_string(), Value::from(ErrorDetails::class_name(kind))))
            .collect::<Map<_, _>>(),
        "usage": keys(&sample_usage()),
        "timings": keys(&sample_timings()),
        "decision": keys(&sample_decision()),
        "service_tiers": builtin_tiers().into_iter().map(ServiceTier::as_str).collect::<Vec<_>>(),
        "service_tier_wire_names": builtin_tiers().into_iter().filter_map(ServiceTier::converse_name).collect::<Vec<_>>(),
    })
}

// A tier is a name the configuration declares, so its schema is an open string: the
// declaring lives in `config`, below which `types` sits.
impl schemars::JsonSchema for ServiceTier {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ServiceTier".into()
    }

    /// A string: the built-in tiers and those `defaults.toml` declares are its examples, and a
    /// configuration may declare more (`x-open`).
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let examples: Vec<&str> = builtin_tiers()
            .into_iter()
            .map(ServiceTier::as_str)
            .collect();
        schemars::json_schema!({
            "description": "A service tier's name: a built-in one or one the configuration declares under `[tiers]`.",
            "type": "string",
            "examples": examples,
            "x-open": true,
        })
    }
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

/// The bindings' data types as data, derived from the core's types' JSON schemas (their
/// `///` docs included): for `usage`, `timings` and `decision`, the type's doc and its fields,
/// a nested object's flattened as in [`names`] (`inter_token_p50_ms` at path
/// `["inter_token", "p50_ms"]`), each with its JSON type (`integer`, `number`, `boolean`,
/// `string`, `object`, `objects`, or an enum's name), whether it may be null, whether it is
/// always present, and its doc; `enums`, each enum's values, and `open_enums`, those a
/// configuration may add to (a service tier: the values are the built-in configuration's);
/// `error_classes`, each error kind
/// with its class name and doc. `laneway-codegen` writes the Python dataclasses and the
/// TypeScript declarations from this, and checks them in the test command.
///
/// ```
/// let v = laneway::surface::schema::views();
/// let timings = v["timings"]["fields"].as_array().unwrap();
/// let p50 = timings.iter().find(|f| f["name"] == "inter_token_p50_ms").unwrap();
/// assert_eq!(p50["path"], serde_json::json!(["inter_token", "p50_ms"]));
/// assert_eq!(p50["type"], "number");
/// assert_eq!(p50["nullable"], true);
/// assert!(v["enums"]["ServiceTier"].as_array().unwrap().contains(&"flex".into()));
/// assert!(v["open_enums"].as_array().unwrap().contains(&"ServiceTier".into()));
/// ```
pub fn views() -> Value {
    let mut enums = Map::new();
    let mut open = std::collections::BTreeSet::new();
    let mut view = |schema: schemars::Schema| {
        let root = schema.to_value();
        let mut fields = Vec::new();
        view_fields(
            &root,
            &root,
            &[],
            false,
            &mut fields,
            (&mut enums, &mut open),
        );
        json!({ "doc": root.get("description").cloned().unwrap_or(Value::Null), "fields": fields })
    };
    let usage = view(schemars::schema_for!(Usage));
    let timings = view(schemars::schema_for!(Timings));
    let decision = view(schemars::schema_for!(RouteDecision));
    json!({
        "usage": usage,
        "timings": timings,
        "decision": decision,
        "enums": enums,
        "open_enums": open,
        "error_classes": ErrorDetails::kinds()
            .into_iter()
            .map(|kind| json!({ "kind": kind, "class": ErrorDetails::class_name(kind), "doc": ErrorDetails::kind_doc(kind) }))
            .collect::<Vec<_>>(),
    })
}

/// The fields of the object schema `node` (under `root`'s `$defs`) at `path`, nested objects'
/// flattened into their parent's.
fn view_fields(
    root: &Value,
    node: &Value,
    path: &[&str],
    nullable: bool,
    out: &mut Vec<Value>,
    (enums, open): (
        &mut Map<String, Value>,
        &mut std::collections::BTreeSet<String>,
    ),
) {
    let required: Vec<&str> = node["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = node["properties"].as_object() else {
        return;
    };
    for (key, prop) in properties {
        let mut at = path.to_vec();
        at.push(key);
        let (target, defined_as, null) = unwrap_nullable(root, prop);
        let nullable = nullable || null;
        if target["type"] == "object" && target.get("properties").is_some() {
            view_fields(root, &target, &at, nullable, out, (&mut *enums, &mut *open));
            continue;
        }
        let kind = match (&target["type"], defined_as) {
            (_, Some(name)) if enum_values(&target).is_some() => {
                if target["x-open"] == true {
                    open.insert(name.clone());
                }
                enums.insert(
                    name.clone(),
                    enum_values(&target).unwrap_or_default().into(),
                );
                name
            }
            (Value::String(t), _) if t == "array" => "objects".to_string(),
            (Value::String(t), _) => t.clone(),
            _ => "object".to_string(),
        };
        out.push(json!({
            "name": at.join("_"),
            "path": at,
            "type": kind,
            "nullable": nullable,
            "required": path.is_empty() && required.contains(&key.as_str()) && !nullable,
            "doc": prop.get("description").or(target.get("description")).cloned().unwrap_or(Value::Null),
        }));
    }
}

/// The schema a property stands for (its `$ref` resolved, `null` taken out of its type), the
/// name of the definition it refers to, and whether it may be null.
fn unwrap_nullable(root: &Value, prop: &Value) -> (Value, Option<String>, bool) {
    let resolve = |v: &Value| -> (Value, Option<String>) {
        match v["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(name) => (root["$defs"][name].clone(), Some(name.to_string())),
            None => (v.clone(), None),
        }
    };
    if let Some(options) = prop["anyOf"].as_array() {
        let null = options.iter().any(|o| o["type"] == "null");
        if let Some(one) = options.iter().find(|o| o["type"] != "null") {
            let (schema, name) = resolve(one);
            return (schema, name, null);
        }
    }
    if let Some(types) = prop["type"].as_array() {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = kept.as_slice() {
            let mut one = prop.clone();
            one["type"] = (*only).clone();
            return (one, None, kept.len() < types.len());
        }
    }
    let (schema, name) = resolve(prop);
    (schema, name, false)
}

/// The values of a string enum's schema (`enum`, or `oneOf` of `const`s).
fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    if schema["x-open"] == true {
        return schema["examples"].as_array().cloned();
    }
    if let Some(values) = schema["enum"].as_array() {
        return Some(values.clone());
    }
    let options = schema["oneOf"].as_array()?;
    options.iter().map(|o| o.get("const").cloned()).collect()
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
        api: Api::Converse,
        model: "m".into(),
        family: Some("f".into()),
        target: "t".into(),
        region: "r".into(),
        endpoint: Some("e".into()),
        tier: Some(ServiceTier::STANDARD),
        served_tier: Some(ServiceTier::STANDARD),
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
