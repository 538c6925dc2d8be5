//! Geographies as configuration: every region of the built-in geographies calls what the
//! catalog says it may, residencies of the newer geographies (`jp`, `au`, `ca`, `us-gov`) keep
//! calls in them, and prices follow the scope of the target that served.

use aws_sdk_bedrockruntime::types::{
    ContentBlock as SdkBlock, ConversationRole, Message as SdkMessage,
};
use laneway::config::RegionConfig;
use laneway::plan::Catalog;
use laneway::{Config, GenerateRequest, Geography, Reason, Residency};
use laneway_emulator::{TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

use crate::common;

/// The built-in configuration calling from every region of its geographies.
fn everywhere() -> Config {
    let mut config = Config::default();
    let mut all: Vec<String> = Vec::new();
    for g in config.geographies.values() {
        for r in &g.regions {
            if !all.contains(r) && !config.is_configured_region(r) {
                all.push(r.clone());
            }
        }
    }
    config
        .regions
        .extend(all.into_iter().map(|name| RegionConfig {
            name,
            geography: None,
        }));
    config.validate().unwrap();
    config
}

/// One plain call to an OpenAI-compatible target through Laneway's backend for it.
async fn openai_call(
    emu: &laneway_emulator::Emulator,
    name: &str,
    model: &laneway::config::ModelConfig,
    target: &laneway::Target,
) -> laneway::Result<laneway::backend::Completion> {
    use laneway::backend::openai::{Endpoint, OpenAiBackend, OpenAiSettings};
    use laneway::backend::{Backend, Call};
    let sdk = aws_config::SdkConfig::builder()
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new(
                    TEST_ACCESS_KEY_ID,
                    TEST_SECRET_ACCESS_KEY,
                    None,
                    None,
                    "test",
                ),
            ),
        )
        .build();
    let (endpoint, url) = match target.api {
        laneway::Api::OpenAiMantle => (Endpoint::Mantle, format!("{}/mantle", emu.url())),
        _ => (Endpoint::Runtime, emu.url()),
    };
    let backend = OpenAiBackend::new(
        endpoint,
        &sdk,
        OpenAiSettings {
            endpoint_url: Some(url),
            ..OpenAiSettings::default()
        },
    );
    let request = GenerateRequest::user("Say hi.").max_tokens(16);
    let attempt = laneway::Attempt {
        model: name.into(),
        target: target.clone(),
        tier: Some(laneway::ServiceTier::STANDARD),
        latency_optimized: false,
        shape: Default::default(),
    };
    backend
        .generate(Call {
            request: &request,
            attempt: &attempt,
            model,
            checkpoints: &[],
        })
        .await
}

/// The catalog and the emulator's Bedrock agree, target by target, through the official SDK:
/// each profile the catalog offers from a region is served there, and each bare id is served
/// exactly where the catalog does not require a profile.
#[tokio::test]
async fn every_catalog_target_in_every_region_is_what_the_emulator_serves() {
    let emu = common::emulator().await;
    let config = everywhere();
    let catalog = Catalog::new(&config);
    let mut checked = 0;
    for (name, model) in &config.models {
        if model.provider() != laneway::Provider::Bedrock {
            continue;
        }
        for c in catalog.candidates(name).unwrap() {
            let t = &c.target;
            if t.api.is_openai_compatible() {
                // An OpenAI-compatible API: Laneway's own backend, as the router sends.
                let bare_refused = c.scope.is_none()
                    && t.api == laneway::Api::OpenAiRuntime
                    && model.requires_profile_in(t.region());
                match (openai_call(&emu, name, model, t).await, bare_refused) {
                    (Ok(_), false) => {}
                    (Err(e), true) => assert!(
                        e.to_string()
                            .contains("on-demand throughput isn't supported"),
                        "{name} {t:?}: {e}"
                    ),
                    (Ok(_), true) => {
                        panic!("{name}: the emulator serves {t:?}, which the catalog refuses")
                    }
                    (Err(e), false) => panic!("{name}: {t:?} refused: {e}"),
                }
                checked += 1;
                continue;
            }
            let client = common::bedrock_sdk(&emu, t.region());
            let answer = client
                .converse()
                .model_id(t.id())
                .messages(
                    SdkMessage::builder()
                        .role(ConversationRole::User)
                        .content(SdkBlock::Text("Say hi.".into()))
                        .build()
                        .unwrap(),
                )
                .inference_config(
                    aws_sdk_bedrockruntime::types::InferenceConfiguration::builder()
                        .max_tokens(16)
                        .build(),
                )
                .send()
                .await;
            let bare_refused = c.scope.is_none() && model.requires_profile_in(t.region());
            match (answer, bare_refused) {
                (Ok(_), false) => {}
                (Err(e), true) => {
                    let e = format!("{:?}", e.into_service_error());
                    assert!(
                        e.contains("on-demand throughput isn't supported"),
                        "{name} {t:?}: {e}"
                    );
                }
                (Ok(_), true) => {
                    panic!("{name}: the emulator serves {t:?}, which the catalog refuses")
                }
                (Err(e), false) => panic!("{name}: {t:?} refused: {:?}", e.into_service_error()),
            }
            checked += 1;
        }
    }
    assert!(checked > 400, "{checked} targets");
}

#[tokio::test]
async fn residency_in_japan_australia_and_canada_keeps_calls_there() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, everywhere()).await;
    let cases = [
        (
            "jp",
            "anthropic.claude-sonnet-4-6",
            "jp.anthropic.claude-sonnet-4-6",
        ),
        (
            "au",
            "anthropic.claude-sonnet-4-6",
            "au.anthropic.claude-sonnet-4-6",
        ),
        ("ca", "amazon.nova-lite-v1:0", "ca.amazon.nova-lite-v1:0"),
        (
            "us-gov",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
    ];
    for (geo, model, profile) in cases {
        let g = Geography::new(geo).unwrap();
        let r = router
            .generate(
                GenerateRequest::user("Say hello.")
                    .model(model)
                    .residency(Residency::Geography(g.clone())),
            )
            .await
            .unwrap_or_else(|e| panic!("{geo}: {e}"));
        let served = &r.decision.target;
        assert_eq!(served, profile, "{geo}");
        assert!(
            router.config().in_geography(&r.decision.region, &g),
            "{geo}: served in {}",
            r.decision.region
        );
        for a in &r.decision.failed_attempts {
            assert!(
                router.config().in_geography(&a.region, &g) && !a.target.starts_with("global."),
                "{geo}: tried {a:?}"
            );
        }
        let excluded_global = r.decision.reasons.iter().any(|r| {
            matches!(r, Reason::TargetExcluded { target, why: laneway::plan::Exclusion::Residency, .. } if target.starts_with("global."))
        });
        let has_global = router.config().models[model]
            .profiles()
            .iter()
            .any(|p| p.is_global());
        assert_eq!(
            excluded_global, has_global,
            "{geo}: {:?}",
            r.decision.reasons
        );
    }
}

#[tokio::test]
async fn a_profile_of_a_narrower_geography_keeps_a_request_in_the_wider_one() {
    let config = everywhere();
    let apac = Residency::Geography(Geography::new("apac").unwrap());
    let p = laneway::plan(
        &GenerateRequest::user("x")
            .model("anthropic.claude-sonnet-4-6")
            .residency(apac),
        &config,
        &laneway::plan::Fresh(laneway::time::now()),
    )
    .unwrap();
    // Sonnet 4.6 has no `apac.` profile: from Tokyo and Sydney it goes through `jp.` and `au.`,
    // which stay within APAC.
    let ids: Vec<&str> = p.attempts.iter().map(|a| a.target.id()).collect();
    assert!(!ids.is_empty());
    assert!(
        ids.iter()
            .all(|id| id.starts_with("jp.") || id.starts_with("au.")),
        "{ids:?}"
    );
    // A residency in `jp` is not kept by the wider `apac.` profile.
    let jp = Residency::Geography(Geography::new("jp").unwrap());
    let p = laneway::plan(
        &GenerateRequest::user("x")
            .model("amazon.nova-pro-v1:0")
            .residency(jp),
        &config,
        &laneway::plan::Fresh(laneway::time::now()),
    );
    match p {
        Ok(p) => assert!(
            p.attempts
                .iter()
                .all(|a| !a.target.id().starts_with("apac.")),
            "{:?}",
            p.attempts
        ),
        Err(e) => assert!(
            e.to_string().contains("residency") || e.to_string().contains("target"),
            "{e}"
        ),
    }
}

#[test]
fn an_unknown_geography_is_refused_naming_the_configured_ones() {
    let e = Config::from_toml_str(
        "[models.\"amazon.nova-lite-v1:0\"]\nprofiles = [\"us\", \"mars\"]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("profiles[1]") && e.contains("\"mars\"") && e.contains("jp"),
        "{e}"
    );
    // A geography of one's own: a name and its regions.
    let c = Config::from_toml_str(
        "[geographies.nordics]\nregions = [\"eu-north-1\"]\n\
         [models.\"amazon.nova-lite-v1:0\"]\nprofiles = [\"us\", \"eu\", \"nordics\"]\n",
    )
    .unwrap();
    assert_eq!(c.profile_scope("nordics").unwrap().prefix(), "nordics");
}

#[tokio::test]
async fn an_unknown_residency_geography_is_a_typed_error() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let e = router
        .generate(
            GenerateRequest::user("x")
                .residency(Residency::Geography(Geography::new("mars").unwrap())),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), laneway::ErrorKind::InvalidRequest, "{e}");
    assert!(
        e.to_string().contains("mars") && e.to_string().contains("residency"),
        "{e}"
    );
}

#[tokio::test]
async fn the_global_profile_costs_its_scope_s_share_of_the_geographic_price() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let model = "anthropic.claude-sonnet-4-6";
    let ask = |id: &str| {
        GenerateRequest::user("Echo: one two three four five six")
            .model(id)
            .max_tokens(64)
    };
    let geo = router.generate(ask(&format!("us.{model}"))).await.unwrap();
    let global = router
        .generate(ask(&format!("global.{model}")))
        .await
        .unwrap();
    assert!(
        geo.decision.target.starts_with("us.") && global.decision.target.starts_with("global.")
    );
    assert_eq!(geo.usage, global.usage);
    let ratio = geo.cost_usd / global.cost_usd;
    assert!((ratio - 1.1).abs() < 1e-3, "geographic / global = {ratio}");
    assert!(
        global
            .decision
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::ProfilePinned { .. }))
    );
}
