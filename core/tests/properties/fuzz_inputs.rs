//! Structured fuzzing of what callers hand Laneway: requests in the bindings' JSON shape and
//! configuration TOML, generated valid by structure (the right keys and nesting) with hostile
//! values (huge, negative, non-finite, empty, non-ASCII), so that the parser and planner are
//! reached, not just a JSON syntax error. Nothing may panic: every input either plans or is
//! refused with a typed error naming a field.
//!
//! `PROPTEST_CASES` sets the cases per property (default here 512); the regression corpus in
//! `tests/fuzz_corpus/` (inputs that once panicked) is replayed every run.

use laneway::{Config, Error, GenerateRequest};
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// Numbers as a hostile caller sends them: ordinary, at the type's edges, or absurd.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..5_000).prop_map(|n| json!(n)),
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(1e300)),
        Just(json!(-1e300)),
        Just(json!(1e-300)),
        Just(json!(4294967295u64)),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z ]{0,40}",
        "\\PC{0,40}",
        Just(String::new()),
        Just("é😀\u{0}\u{202e}".to_string()),
        Just("x".repeat(5_000)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn cache_point() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"cache_point": {}})),
        Just(json!({"cache_point": {"ttl": "5m"}})),
        Just(json!({"cache_point": {"ttl": "1h"}})),
    ]
}

fn content_block() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => text().prop_map(|t| json!({"text": t})),
        1 => (prop_oneof![Just("png"), Just("jpeg"), Just("gif"), Just("webp")], prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(f, b)| {
                use base64::Engine as _;
                json!({"image": {"format": f, "bytes": base64::engine::general_purpose::STANDARD.encode(b)}})
            }),
        1 => (text(), text(), json_value()).prop_map(|(id, name, input)| json!({"tool_use": {"id": id, "name": name, "input": input}})),
        1 => (text(), prop::collection::vec(prop_oneof![text().prop_map(|t| json!({"text": t})), json_value().prop_map(|v| json!({"json": v}))], 0..3), any::<bool>())
            .prop_map(|(id, content, is_error)| json!({"tool_result": {"tool_use_id": id, "content": content, "is_error": is_error}})),
        1 => cache_point(),
    ]
}

fn message() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("user"), Just("assistant")],
        prop::collection::vec(content_block(), 0..4),
    )
        .prop_map(|(role, content)| json!({"role": role, "content": content}))
}

fn duration_ms() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..120_000).prop_map(|n| json!(n)),
        number(),
        Just(json!(31_622_400_000.0f64)), // a year and a day
    ]
}

fn model_ref() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("default")),
        Just(json!({"family": "nova"})),
        Just(json!({"family": "claude"})),
        Just(json!({"family": "no-such-family"})),
        Just(json!({"model": "amazon.nova-lite-v1:0"})),
        Just(json!({"model": "eu.amazon.nova-lite-v1:0"})),
        Just(json!({"model": "global.anthropic.claude-sonnet-4-5-20250929-v1:0"})),
        Just(json!({"model": "laneway-demo-llm"})),
        text().prop_map(|m| json!({"model": m})),
    ]
}

/// A request in the bindings' JSON shape: every field of the right structure, values hostile.
fn request_json() -> impl Strategy<Value = Value> {
    (
        model_ref(),
        prop::collection::vec(message(), 0..5),
        prop::collection::vec(
            prop_oneof![text().prop_map(|t| json!({"text": t})), cache_point()],
            0..3,
        ),
        prop::collection::vec(
            prop_oneof![
                (text(), json_value())
                    .prop_map(|(n, s)| json!({"spec": {"name": n, "input_schema": s}})),
                Just(json!({"spec": {"name": "lookup", "input_schema": {"type": "object"}}})),
                cache_point(),
            ],
            0..3,
        ),
        prop::option::of(prop_oneof![
            Just(json!("auto")),
            Just(json!("any")),
            text().prop_map(|t| json!({"tool": t}))
        ]),
        (
            prop::option::of(number()),
            prop::option::of(number()),
            prop::option::of(number()),
        ),
        (
            prop_oneof![
                Just("interactive"),
                Just("standard"),
                Just("background"),
                Just("batch")
            ],
            prop::option::of(duration_ms()),
            prop::option::of(duration_ms()),
        ),
        (
            prop::option::of(prop_oneof![
                Just("priority"),
                Just("standard"),
                Just("flex"),
                Just("reserved")
            ]),
            prop::option::of(prop_oneof![
                Just(json!({"geography": "eu"})),
                Just(json!({"geography": "us"})),
                Just(json!({"regions": []})),
                Just(json!({"regions": ["eu-west-1", "mars-1"]})),
            ]),
            any::<bool>(),
            prop::option::of(text()),
        ),
    )
        .prop_map(
            |(
                model,
                messages,
                system,
                tools,
                tool_choice,
                (max, temp, top_p),
                (class, ttft, deadline),
                (tier, residency, cont, task),
            )| {
                let mut r =
                    json!({"model": model, "messages": messages, "system": system, "tools": tools});
                if let Some(c) = tool_choice {
                    r["tool_choice"] = c;
                }
                let mut inference = json!({});
                if let Some(m) = max {
                    inference["max_tokens"] = m;
                }
                if let Some(t) = temp {
                    inference["temperature"] = t;
                }
                if let Some(p) = top_p {
                    inference["top_p"] = p;
                }
                r["inference"] = inference;
                let mut slo = json!({"class": class});
                if let Some(t) = ttft {
                    slo["ttft_target"] = t;
                }
                if let Some(d) = deadline {
                    slo["deadline"] = d;
                }
                r["slo"] = slo;
                if let Some(t) = tier {
                    r["tier"] = json!(t);
                }
                if let Some(res) = residency {
                    r["residency"] = res;
                }
                r["continue_on_interrupt"] = json!(cont);
                if let Some(t) = task {
                    r["task_id"] = json!(t);
                }
                r
            },
        )
}

/// Parses and plans a request JSON; a refusal must be typed and name what is wrong.
fn parse_and_plan(config: &Config, value: &Value) {
    let Ok(req) = serde_json::from_value::<GenerateRequest>(value.clone()) else {
        return; // a typed serde refusal: the bindings report it as invalid_request
    };
    match laneway::plan(&req, config, &laneway::plan::Fresh(laneway::time::now())) {
        Ok(plan) => assert!(!plan.attempts.is_empty(), "a plan with no attempt: {value}"),
        Err(Error::InvalidRequest { field, .. } | Error::Config { field, .. }) => {
            assert!(!field.is_empty(), "a refusal names its field: {value}")
        }
        Err(other) => panic!("planning gave {other:?} for {value}"),
    }
}

/// A configuration in the TOML layout with hostile values in known places.
fn config_toml() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        (0u32..100_000).prop_map(|n| n.to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e300".to_string()),
        Just("-1e300".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("9223372036854775807".to_string()),
        Just("0.000001".to_string()),
    ];
    let key = prop_oneof![
        Just("routing.max_attempts"),
        Just("routing.priors.standard.ttft"),
        Just("routing.priors.flex.ttft_p99"),
        Just("routing.priors.priority.gap_p99"),
        Just("routing.priors.standard.tokens_per_second"),
        Just("routing.priors.weight"),
        Just("routing.default_output_tokens"),
        Just("routing.minute"),
        Just("routing.retry.backoff"),
        Just("routing.retry.max_backoff"),
        Just("routing.retry.max_retry_after"),
        Just("routing.breaker.open_for"),
        Just("routing.breaker.failure_threshold"),
        Just("routing.budget.ratio"),
        Just("routing.budget.window"),
        Just("routing.hedge.quantile"),
        Just("routing.hedge.min_delay"),
        Just("routing.timeouts.connect"),
        Just("routing.timeouts.ttft_target_multiple"),
        Just("routing.timeouts.min_tokens_per_second"),
        Just("routing.timeouts.interactive.deadline"),
        Just("routing.timeouts.standard.first_token"),
        Just("routing.timeouts.background.idle"),
        Just("telemetry.task_idle"),
        Just("prompt_cache.margin"),
        Just("pricing.tiers.flex"),
    ];
    prop::collection::vec((key, num), 1..6).prop_map(|pairs| {
        // One table per key (dotted keys in TOML), so that any combination parses as TOML.
        pairs
            .into_iter()
            .map(|(k, v)| {
                let (table, leaf) = k.rsplit_once('.').expect("dotted");
                format!("[{table}]\n{leaf} = {v}\n")
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn requests_in_the_bindings_shape_plan_or_are_refused_by_field(value in request_json()) {
        let config = Config::default();
        parse_and_plan(&config, &value);
    }

    #[test]
    fn configurations_with_hostile_values_load_or_are_refused_by_field(text in config_toml()) {
        match Config::from_toml_str(&text) {
            Ok(config) => {
                // What loads must be usable: planning a plain request never panics.
                let _ = laneway::plan(
                    &GenerateRequest::user("hi").family("nova"),
                    &config,
                    &laneway::plan::Fresh(laneway::time::now()),
                );
            }
            Err(Error::Config { field, .. }) => prop_assert!(!field.is_empty()),
            Err(other) => prop_assert!(false, "{other:?}"),
        }
    }
}

/// Inputs that once panicked or were mishandled, kept as a regression corpus: each file is a
/// request JSON (`*.request.json`) or a configuration (`*.toml`).
#[test]
fn the_regression_corpus_replays_without_a_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fuzz_corpus") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".request.json") {
            let value: Value = serde_json::from_str(&text).unwrap();
            parse_and_plan(&Config::default(), &value);
            replayed += 1;
        } else if name.ends_with(".toml") {
            let _ = Config::from_toml_str(&text);
            replayed += 1;
        }
    }
    assert!(replayed >= 5, "the corpus is there: {replayed} inputs");
}
