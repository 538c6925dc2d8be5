//! Every error kind through the real SDK, failover where it is allowed, and bad input refused
//! before anything is sent.

use crate::common;

use common::{config, emulator, requests_seen, router, router_with};
use futures::StreamExt;
use laneway::{
    Error, ErrorKind, GenerateRequest, Geography, Residency, Router, StreamEvent, TimeLimit,
};
use laneway_emulator::{Fault, FaultKind};

/// A request whose plan has exactly one target: the EU profile pinned, EU residency.
fn single_target() -> GenerateRequest {
    GenerateRequest::user("hello")
        .model("eu.amazon.nova-lite-v1:0")
        .residency(Residency::Geography(Geography::new("eu").unwrap()))
        .max_tokens(8)
}

/// A short call to Nova Lite, planned over its regions and profiles.
fn nova_lite() -> GenerateRequest {
    GenerateRequest::user("hi")
        .model("amazon.nova-lite-v1:0")
        .max_tokens(8)
}

/// A deadline short enough that a persistent fault ends the call soon.
const SHORT: std::time::Duration = std::time::Duration::from_millis(300);

#[tokio::test]
async fn single_target_errors_keep_their_kind() {
    let emu = emulator().await;
    let router = router(&emu).await;
    assert_eq!(router.plan(&single_target()).unwrap().attempts.len(), 1);
    for (fault, kind) in [
        (FaultKind::Throttle, ErrorKind::Throttled),
        (FaultKind::Outage, ErrorKind::Unavailable),
        (FaultKind::ModelNotReady, ErrorKind::ModelNotReady),
        (FaultKind::InternalError, ErrorKind::Internal),
    ] {
        // The one target is retried in rounds until the deadline; every round fails.
        let id = emu.add_fault(Fault::new(fault));
        let err = router
            .generate(single_target().deadline(SHORT))
            .await
            .unwrap_err();
        emu.remove_fault(id);
        assert_eq!(err.kind(), kind, "{err}");
        let Error::Service(e) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            (e.target.as_str(), e.region.as_str()),
            ("eu.amazon.nova-lite-v1:0", "eu-west-1")
        );
        assert!(e.http_status.is_some() && e.request_id.is_some());
    }
    assert!(router.generate(single_target()).await.is_ok());
}

#[tokio::test]
async fn sagemaker_cold_start_is_retried_then_typed() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let req = || {
        GenerateRequest::user("hi")
            .model("laneway-demo-llm")
            .max_tokens(5)
    };
    emu.add_fault(
        Fault::new(FaultKind::ModelNotReady)
            .for_model("laneway-demo-llm")
            .times(1),
    );
    let r = router.generate(req()).await.unwrap();
    assert_eq!(
        r.decision.attempts_sent, 2,
        "the only endpoint is retried after a back-off"
    );
    assert_eq!(r.decision.failed_attempts[0].kind, ErrorKind::ModelNotReady);

    // A longer cold start costs latency, not the call.
    emu.add_fault(
        Fault::new(FaultKind::ModelNotReady)
            .for_model("laneway-demo-llm")
            .times(3),
    );
    let r = router.generate(req()).await.unwrap();
    assert_eq!(r.decision.attempts_sent, 4);

    // One that outlasts the call's deadline ends it with the endpoint's own error.
    let id = emu.add_fault(Fault::new(FaultKind::ModelNotReady).for_model("laneway-demo-llm"));
    let err = router.generate(req().deadline(SHORT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ModelNotReady);
    emu.remove_fault(id);
}

#[tokio::test]
async fn outage_in_one_region_fails_over_and_says_so() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(Fault::new(FaultKind::Outage).for_region("us-east-1"));
    let r = router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap();
    assert_eq!(r.decision.region, "us-west-2");
    let failed: Vec<_> = r
        .decision
        .failed_attempts
        .iter()
        .map(|a| (a.region.as_str(), a.kind))
        .collect();
    // The region was down for one target: its other target went behind the other regions.
    assert_eq!(failed, vec![("us-east-1", ErrorKind::Unavailable)]);
}

#[tokio::test]
async fn when_every_target_fails_each_attempt_is_listed() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(Fault::new(FaultKind::Throttle));
    let err = router
        .generate(
            GenerateRequest::user("hi")
                .family("nova")
                .deadline(std::time::Duration::from_millis(400)),
        )
        .await
        .unwrap_err();
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    let routing = &router.config().routing;
    assert!(
        attempts.len() > routing.max_attempts as usize,
        "every target, then more rounds until the deadline: {} attempts",
        attempts.len()
    );
    // Every try the service answered was throttled. The deadline may also cut the last try
    // in flight (on a busy machine a try takes longer): it is listed too, as the deadline.
    let (last, answered) = attempts.split_last().expect("attempts listed");
    let throttled = |a: &laneway::FailedAttempt| {
        a.kind == ErrorKind::Throttled && a.code == "ThrottlingException"
    };
    let cut = last.kind == ErrorKind::Timeout && last.code == TimeLimit::Deadline.code();
    assert!(
        answered.iter().all(throttled) && (throttled(last) || cut),
        "{attempts:#?}"
    );
    // Each answered try is one request the emulator saw; a cut one may not have reached it.
    let seen = requests_seen(&emu);
    let sent = attempts.len() as u64;
    assert!(
        (sent - u64::from(cut)..=sent).contains(&seen),
        "{seen} requests for {} attempts",
        attempts.len()
    );
}

#[tokio::test]
async fn validation_from_the_service_is_never_retried() {
    let emu = emulator().await;
    // The configuration claims a tier the service refuses: Bedrock answers 400.
    let router = router_with(
        &emu,
        config("[models.\"amazon.nova-micro-v1:0\"]\ntiers = [\"priority\", \"standard\"]\n"),
    )
    .await;
    let err = router
        .generate(
            GenerateRequest::user("hi")
                .model("amazon.nova-micro-v1:0")
                .tier(laneway::ServiceTier::PRIORITY),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    assert_eq!(requests_seen(&emu), 1);
}

#[tokio::test]
async fn bad_signature_is_an_authentication_error_and_not_retried() {
    let emu = emulator().await;
    let router = Router::builder()
        .config(config(""))
        .endpoint_url(emu.url())
        .static_credentials("LANEWAYTESTKEY", "not-the-secret")
        .build()
        .await
        .unwrap();
    let err = router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    let Error::Service(e) = &err else { panic!() };
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("InvalidSignatureException", Some(403))
    );
    assert_eq!(
        requests_seen(&emu),
        0,
        "refused before the simulation counts it"
    );
}

#[tokio::test]
async fn a_stream_breaking_midway_reports_what_was_delivered() {
    let emu = emulator().await;
    let router = router(&emu).await;
    for model in ["eu.amazon.nova-lite-v1:0", "laneway-demo-llm"] {
        emu.add_fault(Fault::break_after(5).times(1));
        let mut req = single_target().max_tokens(40);
        req.model = laneway::ModelRef::Model(model.into());
        req.residency = None;
        let mut s = router.stream(req).await.unwrap();
        let mut text = String::new();
        let err = loop {
            match s.next().await.expect("the stream ends with an error") {
                Ok(StreamEvent::TextDelta { text: t, .. }) => text.push_str(&t),
                Ok(other) => panic!("{model}: unexpected {other:?}"),
                Err(e) => break e,
            }
        };
        assert!(s.next().await.is_none(), "nothing follows the error");
        let Error::StreamInterrupted { delivered, cause } = &err else {
            panic!("{model}: {err:?}")
        };
        assert_eq!(delivered.deltas, 5, "{model}");
        assert_eq!(delivered.output_tokens, 5, "{model}");
        assert_eq!(delivered.text_chars, text.chars().count(), "{model}");
        assert_eq!(cause.kind(), ErrorKind::Internal, "{model}");
        assert!(
            err.to_string().contains("5 delivered output tokens"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_stream_breaking_before_its_first_token_fails_over_invisibly() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(Fault::break_after(0).times(1));
    let mut s = router
        .stream(GenerateRequest::user("hi").family("nova").max_tokens(6))
        .await
        .unwrap();
    let mut done = None;
    while let Some(ev) = s.next().await {
        if let StreamEvent::Completed(d) = ev.unwrap() {
            done = Some(d);
        }
    }
    let done = done.unwrap();
    assert_eq!(done.usage.output_tokens, 6);
    assert_eq!(done.decision.failed_attempts.len(), 1);
    assert_eq!(done.decision.failed_attempts[0].kind, ErrorKind::Internal);
}

#[tokio::test]
async fn residency_keeps_traffic_in_the_geography() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let r = router
        .generate(
            GenerateRequest::user("hi")
                .family("claude")
                .residency(Residency::Geography(Geography::new("eu").unwrap())),
        )
        .await
        .unwrap();
    assert_eq!(r.decision.region, "eu-west-1");
    assert!(emu.counters().iter().all(|c| c.region == "eu-west-1"));
}

#[tokio::test]
async fn bad_input_is_refused_before_sending() {
    let emu = emulator().await;
    let router = router(&emu).await;
    let cases = [
        (GenerateRequest::new(vec![]), "messages"),
        (
            GenerateRequest::user("hi").model("gpt-17"),
            "unknown model \"gpt-17\"",
        ),
        (
            GenerateRequest::user("hi").family("llama"),
            "unknown family \"llama\"",
        ),
        (
            GenerateRequest::user("hi").max_tokens(-1),
            "inference.max_tokens",
        ),
        (
            GenerateRequest::user("hi").temperature(f32::NAN),
            "inference.temperature",
        ),
    ];
    for (req, needle) in cases {
        let err = router.generate(req.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
        assert!(
            err.to_string().contains(needle),
            "{err} should name {needle}"
        );
        let err = router.stream(req).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    }
    assert_eq!(requests_seen(&emu), 0);
}

#[tokio::test]
async fn malformed_and_contradictory_config_files_are_named() {
    let dir = std::env::temp_dir().join(format!("laneway-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("[routing\nmax_attempts = 2\n", "bad.toml"),
        (
            "[families.nova]\nvariants = [\"amazon.nova-lite-v1:0\", \"nova-ultra\"]\n",
            "families.nova.variants",
        ),
        ("[pricing.tiers]\nflex = -0.5\n", "pricing.tiers.flex"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = dir.join(if i == 0 {
            "bad.toml".to_string()
        } else {
            format!("c{i}.toml")
        });
        std::fs::write(&path, text).unwrap();
        let err = Router::from_config_file(&path).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        assert!(
            err.to_string().contains(needle),
            "{err} should name {needle}"
        );
    }
    let err = Router::from_config_file(dir.join("missing.toml"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing.toml"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    // A tier without a price is refused by name: a new tier needs its row in [pricing.tiers].
    for tier in laneway::config::builtin_tiers() {
        let mut config = laneway::Config::default();
        config.pricing.tiers.remove(&tier);
        let err = config.validate().unwrap_err();
        assert!(
            err.to_string().contains(&format!("pricing.tiers.{tier}")),
            "{err} should name pricing.tiers.{tier}"
        );
    }
}

#[tokio::test]
async fn credentials_and_the_redis_password_stay_out_of_debug_output() {
    let secret = "s3cret-Pa55";
    let router = Router::builder()
        .config(config(&format!(
            "[shared]\nredis_url = \"redis://app:{secret}@127.0.0.1:1/0\"\n"
        )))
        .endpoint_url("http://127.0.0.1:1")
        .static_credentials("AKIDEXAMPLE", "aws-secret-key-value")
        .build()
        .await
        .unwrap();
    let debug = format!("{router:?} {router:#?}");
    assert!(!debug.contains(secret), "{debug}");
    assert!(!debug.contains("aws-secret-key-value"), "{debug}");
    let builder = Router::builder().static_credentials("AKIDEXAMPLE", "aws-secret-key-value");
    assert!(!format!("{builder:?}").contains("aws-secret-key-value"));
}

#[tokio::test]
async fn a_model_not_enabled_in_one_region_fails_over_and_is_kept_away() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(
        Fault::new(FaultKind::AccessDenied)
            .for_model("amazon.nova-lite-v1:0")
            .for_region("us-east-1"),
    );
    let first = router.generate(nova_lite()).await.unwrap();
    assert_ne!(first.decision.region, "us-east-1");
    let refused = &first.decision.failed_attempts[0];
    assert_eq!(
        (refused.region.as_str(), refused.code.as_str()),
        ("us-east-1", "AccessDeniedException")
    );
    // Kept away for routing.breaker.access_denied_for (10 minutes): not asked again.
    for _ in 0..3 {
        let next = router.generate(nova_lite()).await.unwrap();
        assert_ne!(next.decision.region, "us-east-1");
        assert!(
            next.decision
                .failed_attempts
                .iter()
                .all(|a| a.region != "us-east-1"),
            "{:?}",
            next.decision.failed_attempts
        );
    }
}

/// One pass over the plan, no retry round: no target asked twice.
fn assert_one_pass(attempts: &[laneway::FailedAttempt]) {
    let mut asked: Vec<(&str, &str)> = attempts
        .iter()
        .map(|a| (a.target.as_str(), a.region.as_str()))
        .collect();
    let all = asked.len();
    asked.sort_unstable();
    asked.dedup();
    assert_eq!(asked.len(), all, "{attempts:?}");
}

#[tokio::test]
async fn access_denied_everywhere_ends_after_one_pass_without_retry_rounds() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(Fault::new(FaultKind::AccessDenied).for_model("amazon.nova-lite-v1:0"));
    let err = router.generate(nova_lite()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AllTargetsFailed, "{err}");
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(attempts.iter().all(|a| a.code == "AccessDeniedException"));
    assert_one_pass(attempts);
}

#[tokio::test]
async fn an_expired_token_fails_at_once_without_retries() {
    let emu = emulator().await;
    let router = router(&emu).await;
    emu.add_fault(Fault::new(FaultKind::ExpiredToken));
    let err = router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    let Error::Service(e) = &err else {
        panic!("one attempt, its own error: {err:?}")
    };
    assert_eq!(e.code, "ExpiredTokenException");
}

#[tokio::test]
async fn a_region_not_enabled_fails_over_once_the_provider_has_answered() {
    let emu = emulator().await;
    let router = router(&emu).await;
    // Nothing has answered yet: the refusal may be the credentials', and ends the call.
    let id = emu.add_fault(Fault::new(FaultKind::RegionNotEnabled).for_region("us-east-1"));
    let err = router.generate(nova_lite()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    emu.remove_fault(id);
    // Once Bedrock has taken the router's credentials, one region refusing them is that
    // region's: the call fails over, and the region's breaker counts it.
    let answered = router.generate(nova_lite()).await.unwrap();
    assert_eq!(answered.decision.region, "us-east-1");
    emu.add_fault(Fault::new(FaultKind::RegionNotEnabled).for_region("us-east-1"));
    let moved = router.generate(nova_lite()).await.unwrap();
    assert_ne!(moved.decision.region, "us-east-1");
    let refused = &moved.decision.failed_attempts[0];
    assert_eq!(
        (refused.region.as_str(), refused.code.as_str()),
        ("us-east-1", "UnrecognizedClientException")
    );
    // Each of the region's targets (the bare id, the profile called from there) counts its
    // refusals on its breaker, which opens after `routing.breaker.failure_threshold`: soon no
    // call asks the region, and none fails meanwhile.
    let mut asked = 0;
    loop {
        let next = router.generate(nova_lite()).await.unwrap();
        if next.decision.failed_attempts.is_empty() {
            break;
        }
        asked += 1;
        assert!(asked <= 6, "{:?}", next.decision.failed_attempts);
    }
}

#[tokio::test]
async fn credentials_refused_everywhere_after_answers_end_after_one_pass() {
    let emu = emulator().await;
    let router = router(&emu).await;
    router.generate(nova_lite()).await.unwrap();
    emu.add_fault(Fault::new(FaultKind::RegionNotEnabled));
    let err = router.generate(nova_lite()).await.unwrap_err();
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        attempts
            .iter()
            .all(|a| a.code == "UnrecognizedClientException")
    );
    assert_one_pass(attempts);
}

#[tokio::test]
async fn an_expired_token_ends_the_call_even_after_answers() {
    let emu = emulator().await;
    let router = router(&emu).await;
    router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap();
    emu.add_fault(Fault::new(FaultKind::ExpiredToken));
    let err = router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap_err();
    let Error::Service(e) = &err else {
        panic!("one attempt, its own error: {err:?}")
    };
    assert_eq!(e.code, "ExpiredTokenException");
}

/// A credential provider that never has credentials (an expired SSO session, no profile).
#[derive(Debug)]
struct NoCredentials;

impl aws_credential_types::provider::ProvideCredentials for NoCredentials {
    fn provide_credentials<'a>(
        &'a self,
    ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Err(
            aws_credential_types::provider::error::CredentialsError::not_loaded(
                "the SSO session has expired",
            ),
        ))
    }
}

#[tokio::test]
async fn a_credential_chain_that_gives_nothing_fails_at_once() {
    let emu = emulator().await;
    let sdk = aws_config::SdkConfig::builder()
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(NoCredentials),
        )
        .region(aws_config::Region::new("us-east-1"))
        .behavior_version(aws_config::BehaviorVersion::latest())
        .build();
    let router = Router::builder()
        .config(config(""))
        .endpoint_url(emu.url())
        .sdk_config(sdk)
        .build()
        .await
        .unwrap();
    let err = router
        .generate(GenerateRequest::user("hi").family("nova"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    let Error::Service(e) = &err else {
        panic!("one attempt, its own error: {err:?}")
    };
    assert_eq!(e.code, "CredentialsNotLoaded");
    assert!(e.message.contains("SSO session"), "{}", e.message);
    assert_eq!(requests_seen(&emu), 0);
}
