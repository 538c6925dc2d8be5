//! Invariants of the planner over random requests and capability tables: residency is never
//! violated, no tier a model lacks is ever planned, never more than four cache checkpoints.

use std::collections::BTreeSet;
use std::time::Instant;

use laneway::BreakerView;
use laneway::config::{ModelConfig, TierPreference};
use laneway::plan::{Fresh, Observations, TargetView};
use laneway::{
    Api, CachePoint, CacheTtl, Config, ContentBlock, GenerateRequest, Geography, ModelRef,
    Provider, Residency, ServiceTier, SloClass, SystemBlock, Tool, plan,
};
use proptest::prelude::*;

const STARTUP: &str = include_str!("../../../examples/startup.toml");

/// The example configuration, calling from Asia-Pacific and Canada too, so that every
/// geography's profiles have a region to start in.
fn base() -> Config {
    let mut c = Config::from_toml_str(STARTUP).unwrap();
    for r in [
        "ap-northeast-1",
        "ap-southeast-2",
        "ap-south-1",
        "ca-central-1",
    ] {
        c.regions.push(laneway::config::RegionConfig {
            name: r.into(),
            geography: None,
        });
    }
    c.validate().unwrap();
    c
}

fn model_names() -> Vec<String> {
    let c = base();
    let mut names: Vec<String> = c.families.keys().cloned().collect();
    for (id, m) in &c.models {
        names.push(id.clone());
        for p in m.profiles() {
            names.push(format!("{}.{id}", p.prefix()));
        }
    }
    names
}

fn tier() -> impl Strategy<Value = ServiceTier> {
    prop_oneof![
        Just(ServiceTier::PRIORITY),
        Just(ServiceTier::STANDARD),
        Just(ServiceTier::FLEX),
        Just(ServiceTier::RESERVED)
    ]
}

fn residency() -> impl Strategy<Value = Option<Residency>> {
    let regions = prop::sample::subsequence(
        vec![
            "us-east-1",
            "us-west-2",
            "eu-west-1",
            "ap-south-1",
            "ap-northeast-1",
        ],
        1..=3,
    )
    .prop_map(|r| Residency::Regions(r.into_iter().map(String::from).collect()));
    let geographies: Vec<Geography> = base().geographies.keys().cloned().collect();
    let geo = prop::sample::select(geographies).prop_map(Residency::Geography);
    prop_oneof![Just(None), geo.prop_map(Some), regions.prop_map(Some)]
}

fn slo_class() -> impl Strategy<Value = SloClass> {
    prop::sample::select(SloClass::ALL.to_vec())
}

/// A configuration whose Bedrock models offer random non-empty tier sets and random SLO maps
/// (each class a preference of one to three tiers).
fn config() -> impl Strategy<Value = Config> {
    let n = base().models.len();
    (
        prop::collection::vec(prop::collection::btree_set(tier(), 1..=4), n),
        [0; 4].map(|_| prop::collection::vec(tier(), 1..=3)),
        1u32..8,
    )
        .prop_map(|(tier_sets, slo, max_attempts)| {
            let mut c = base();
            for ((_, m), tiers) in c.models.iter_mut().zip(tier_sets) {
                if let ModelConfig::Bedrock(b) = m {
                    b.tiers = tiers;
                }
            }
            c.slo_tiers.interactive = TierPreference::new(slo[0].clone());
            c.slo_tiers.standard = TierPreference::new(slo[1].clone());
            c.slo_tiers.background = TierPreference::new(slo[2].clone());
            c.slo_tiers.batch = TierPreference::new(slo[3].clone());
            c.routing.max_attempts = max_attempts;
            c.validate().unwrap();
            c
        })
}

fn request() -> impl Strategy<Value = GenerateRequest> {
    (
        prop::sample::select(model_names()),
        slo_class(),
        prop::option::weighted(0.2, tier()),
        residency(),
        0usize..6,
        (0usize..3, any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(model, class, tier, residency, cache_points, (system_blocks, tools, task))| {
                let mut req = GenerateRequest::user("hello").slo_class(class);
                for i in 0..system_blocks {
                    req.system.push(SystemBlock::Text(
                        "Follow the policy carefully. ".repeat(200 + 300 * i),
                    ));
                }
                if tools {
                    req.tools.push(Tool::new(
                        "lookup",
                        "Looks things up. ".repeat(300),
                        serde_json::json!({"type": "object"}),
                    ));
                    req.tools.push(Tool::CachePoint(CachePoint {
                        ttl: Some(CacheTtl::OneHour),
                    }));
                }
                if task {
                    req.task_id = Some("task".into());
                }
                req.model = ModelRef::Model(model);
                req.tier = tier;
                req.residency = residency;
                for i in 0..cache_points {
                    if i % 2 == 0 {
                        req.system
                            .push(SystemBlock::CachePoint(CachePoint::default()));
                    } else {
                        req.messages[0]
                            .content
                            .push(ContentBlock::CachePoint(CachePoint::default()));
                    }
                }
                req
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn plans_respect_residency_tiers_and_limits(config in config(), req in request()) {
        let Ok(p) = plan(&req, &config, &Fresh(laneway::time::now())) else { return Ok(()) };
        let model = &config.models[&*p.model];
        prop_assert!(!p.attempts.is_empty());
        prop_assert!(p.attempts.len() <= config.routing.max_attempts as usize);
        for a in &p.attempts {
            if let Some(r) = &req.residency {
                prop_assert!(config.keeps_within(&a.target, r), "{:?} violates {:?}", a.target, r);
            }
            // A step-up attempt is of a stronger variant: each attempt by its own model.
            let model = &config.models[&*a.model];
            if model.provider() == Provider::Bedrock {
                let t = a.tier.expect("Bedrock attempts carry a tier");
                prop_assert!(model.tiers().contains(&t), "{t:?} not offered by {}", a.model);
            } else {
                prop_assert!(a.tier.is_none());
            }
            // bedrock-mantle serves bare ids only; bedrock-runtime needs the profile.
            if model.requires_profile() && a.target.api != Api::OpenAiMantle {
                prop_assert!(a.target.profile().is_some());
            }
        }
        let checkpoints = &p.cache.checkpoints;
        prop_assert!(checkpoints.len() <= 4, "{} checkpoints", checkpoints.len());
        match &model.prompt_cache() {
            None => prop_assert!(checkpoints.is_empty(), "checkpoints for {}, which has no cache", p.model),
            Some(rules) => {
                for c in checkpoints {
                    prop_assert!(rules.ttls.contains(&c.ttl));
                    prop_assert!(rules.tools || c.at != laneway::plan::prompt_cache::Boundary::Tools);
                    prop_assert!(rules.max_tokens.is_none_or(|max| c.tokens_before <= max));
                }
            }
        }
        prop_assert!(checkpoints.windows(2).all(|w| w[0].ttl >= w[1].ttl), "TTLs increase: {checkpoints:?}");
        if let (Some(rules), true) = (&model.prompt_cache(), req.pinned_cache_points().is_empty()) {
            let floor = (f64::from(rules.min_tokens) * (1.0 + config.prompt_cache.margin)).ceil() as u32;
            prop_assert!(checkpoints.iter().all(|c| c.tokens_before >= floor), "automatic checkpoint below the minimum with its margin");
        }
        prop_assert!(checkpoints.windows(2).all(|w| w[0].at < w[1].at), "checkpoints out of prompt order");
        // Converse and bedrock-runtime's `/openai/v1` are two APIs of one id and region.
        let distinct: BTreeSet<_> = p.attempts.iter().map(|a| (a.target.api, a.target.id().to_string(), a.target.region().to_string())).collect();
        prop_assert_eq!(distinct.len(), p.attempts.len(), "no target is planned twice");
    }

    #[test]
    fn planning_never_panics_on_structured_json_requests(
        (req, path, value) in (request(), prop::collection::vec(0usize..16, 1..4), json_value()),
    ) {
        // A valid request's JSON with one value somewhere replaced: the shape a client gets
        // almost right. It either deserialises and plans (or is refused), or names the field.
        let mut json = serde_json::to_value(&req).unwrap();
        replace_at(&mut json, &path, value);
        let text = json.to_string();
        match serde_json::from_str::<GenerateRequest>(&text) {
            Ok(req) => {
                let _ = plan(&req, &base(), &Fresh(laneway::time::now()));
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn plans_hold_their_invariants_in_any_live_state(
        config in config(),
        req in request(),
        state in live_state(),
    ) {
        let Ok(p) = plan(&req, &config, &state) else { return Ok(()) };
        prop_assert!(!p.attempts.is_empty());
        prop_assert!(p.attempts.len() <= config.routing.max_attempts as usize);
        for a in &p.attempts {
            if let Some(r) = &req.residency {
                prop_assert!(config.keeps_within(&a.target, r), "{:?} violates {:?}", a.target, r);
            }
        }
        // Healthy targets come before open ones.
        let ranks: Vec<u8> = p.attempts.iter().map(|a| {
            match state.target(a.target.region(), a.target.id(), a.tier).breaker {
                BreakerView::Open => 2,
                BreakerView::HalfOpen { probe_available: false } => 1,
                _ => 0,
            }
        }).collect();
        // Among the attempts on the plan's model at its first tier (a fallback or an overflow
        // tier starts an order of its own).
        let first = &p.attempts[0];
        let same_lane: Vec<u8> = p.attempts.iter().zip(&ranks)
            .filter(|(a, _)| a.model == first.model && a.tier == first.tier)
            .map(|(_, r)| *r)
            .collect();
        prop_assert!(same_lane.windows(2).all(|w| w[0] <= w[1]), "open targets before healthy ones: {same_lane:?}");
    }
}

/// Any JSON value, nested a little.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "user",
            "assistant",
            "interactive",
            "flex",
            "text",
            "us",
            "nova"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the value reached by following `path` (each step picks a child by index, modulo
/// the number of children) with `value`.
fn replace_at(json: &mut serde_json::Value, path: &[usize], value: serde_json::Value) {
    let child = match json {
        serde_json::Value::Object(m) if !m.is_empty() => {
            let n = path[0] % m.len();
            m.values_mut().nth(n)
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            let n = path[0] % a.len();
            a.get_mut(n)
        }
        _ => None,
    };
    match (child, path.len()) {
        (Some(c), n) if n > 1 => replace_at(c, &path[1..], value),
        (Some(c), _) => *c = value,
        (None, _) => *json = value,
    }
}

/// Live state as the planner may see it: each target's breaker, latency estimate and throttle
/// score drawn at random (by a hash of the target, so a plan sees one state), reservations full
/// or not, prefixes never seen.
#[derive(Debug, Clone)]
struct LiveState {
    seed: u64,
    reserved_room: Option<bool>,
}

fn live_state() -> impl Strategy<Value = LiveState> {
    (any::<u64>(), prop::option::of(any::<bool>())).prop_map(|(seed, reserved_room)| LiveState {
        seed,
        reserved_room,
    })
}

impl Observations for LiveState {
    fn now(&self) -> Instant {
        laneway::time::now()
    }
    fn target(&self, region: &str, id: &str, tier: Option<ServiceTier>) -> TargetView {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.seed, region, id, tier).hash(&mut h);
        let x = h.finish();
        TargetView {
            breaker: match x % 5 {
                0 => BreakerView::Open,
                1 => BreakerView::HalfOpen {
                    probe_available: x & 0x100 == 0,
                },
                _ => BreakerView::Closed,
            },
            ttft: (x & 0x200 == 0).then(|| std::time::Duration::from_millis((x >> 16) % 5000)),
            tokens_per_second: (x & 0x400 == 0).then_some(((x >> 32) % 300) as f64),
            throttle_score: ((x >> 40) % 300) as f64 / 100.0,
        }
    }
    fn reserved_room(&self, _: &str, _: u64, _: u64) -> Option<bool> {
        self.reserved_room
    }
}

/// Guards the properties above against vacuity: most random requests must plan.
#[test]
fn most_random_requests_plan() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut planned, total) = (0, 500);
    for _ in 0..total {
        let c = config().new_tree(&mut runner).unwrap().current();
        let r = request().new_tree(&mut runner).unwrap().current();
        planned += usize::from(plan(&r, &c, &Fresh(laneway::time::now())).is_ok());
    }
    assert!(
        planned * 3 > total,
        "only {planned} of {total} random requests planned"
    );
}

fn routed_family(thresholds: &[f32]) -> Config {
    Config::from_toml_str(&format!(
        "[families.nova]\nvariants = [\"amazon.nova-micro-v1:0\", \"amazon.nova-lite-v1:0\", \"amazon.nova-pro-v1:0\"]\nrouter = {{ thresholds = [{}, {}] }}\n",
        thresholds[0], thresholds[1]
    ))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The classifier's pick never undercuts the request's minimum variant, and failover only
    /// steps up from the pick, never down.
    #[test]
    fn variant_policy_never_picks_a_forbidden_variant(
        text in "[a-zA-Z0-9 ?.+*=\\n]{1,400}",
        thresholds in prop::collection::vec(-1.0f32..=1.0, 2),
        min in prop::option::of(0usize..3),
        residency in residency(),
        class in slo_class(),
    ) {
        let config = routed_family(&thresholds);
        let variants = config.families["nova"].variants.clone();
        let mut req = GenerateRequest::user(text).family("nova").slo_class(class);
        req.min_variant = min.map(|i| variants[i].clone());
        req.residency = residency;
        let Ok(p) = plan(&req, &config, &Fresh(laneway::time::now())) else {
            // Only a residency nothing satisfies may refuse.
            prop_assert!(req.residency.is_some());
            return Ok(());
        };
        let rank = |m: &str| variants.iter().position(|v| v == m).unwrap();
        let chosen = rank(&p.model);
        prop_assert!(chosen >= min.unwrap_or(0));
        let mut last = chosen;
        for a in &p.attempts {
            let r = rank(&a.model);
            prop_assert!(r >= chosen && r >= last, "attempt on {} after {}", a.model, variants[last]);
            last = r;
        }
    }
}
