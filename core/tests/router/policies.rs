//! Routing policies of one's own: added after the built-in ones, or replacing one by name.

use std::sync::Arc;

use laneway::backend::{Completion, MemoryBackend};
use laneway::plan::{Draft, Policy};
use laneway::{Attempt, Error, GenerateRequest, Provider, Router, Target};

/// A router whose Bedrock backend answers in memory with the region it was sent to.
fn builder() -> laneway::RouterBuilder {
    Router::builder().backend(
        Provider::Bedrock,
        Arc::new(MemoryBackend::new(|call| {
            Ok(Completion::text(call.attempt.target.region().to_string()))
        })),
    )
}

struct LastRegion(&'static str);

impl Policy for LastRegion {
    fn name(&self) -> &str {
        "last-region"
    }
    fn apply(&self, d: &mut Draft<'_>) -> laneway::Result<()> {
        d.attempts.sort_by_key(|a| a.target.region() == self.0);
        Ok(())
    }
}

/// Replaces the built-in target policy: one target, in-region, where the request's tenant lives.
struct TenantRegion;

impl Policy for TenantRegion {
    fn name(&self) -> &str {
        "targets"
    }
    fn apply(&self, d: &mut Draft<'_>) -> laneway::Result<()> {
        let (chosen, _) = d.model(self.name())?;
        let region = match d.request.task_id.as_deref() {
            Some(t) if t.starts_with("eu-") => "eu-west-1",
            _ => "us-west-2",
        };
        d.attempts = vec![Attempt {
            model: chosen.model.clone(),
            target: Target::bedrock(region, chosen.model.clone(), None),
            tier: d.tier,
            latency_optimized: false,
            shape: Default::default(),
        }];
        Ok(())
    }
}

fn lite() -> GenerateRequest {
    GenerateRequest::user("hello").model("amazon.nova-lite-v1:0")
}

#[tokio::test]
async fn an_added_policy_sees_every_plan_after_the_built_in_ones() {
    let plain = builder().build().await.unwrap();
    assert_eq!(
        plain.plan(&lite()).unwrap().attempts[0].target.region(),
        "us-east-1"
    );
    let router = builder()
        .policy(Arc::new(LastRegion("us-east-1")))
        .build()
        .await
        .unwrap();
    let plan = router.plan(&lite()).unwrap();
    assert_eq!(
        plan.attempts.last().unwrap().target.region(),
        "us-east-1",
        "{plan:?}"
    );
    let answer = router.generate(lite()).await.unwrap();
    assert_eq!(answer.text(), plan.attempts[0].target.region());
}

#[tokio::test]
async fn a_built_in_policy_can_be_replaced_by_name() {
    let router = builder()
        .replace_policy("targets", Arc::new(TenantRegion))
        .build()
        .await
        .unwrap();
    let eu = router.generate(lite().task("eu-tenant-7")).await.unwrap();
    assert_eq!(eu.text(), "eu-west-1");
    let plan = router.plan(&lite().task("us-tenant-1")).unwrap();
    assert_eq!(plan.attempts.len(), 1);
    assert_eq!(plan.attempts[0].target.region(), "us-west-2");
    // The tier policy still ran before it.
    assert!(plan.attempts[0].tier.is_some());
}

#[tokio::test]
async fn replacing_a_policy_that_does_not_exist_is_a_configuration_error() {
    let e = builder()
        .replace_policy("no-such-policy", Arc::new(TenantRegion))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config { reason, .. } if reason.contains("no-such-policy")),
        "{e}"
    );
}

#[tokio::test]
async fn a_policy_that_leaves_no_target_is_an_error_not_a_panic() {
    struct Nothing;
    impl Policy for Nothing {
        fn name(&self) -> &str {
            "nothing"
        }
        fn apply(&self, d: &mut Draft<'_>) -> laneway::Result<()> {
            d.attempts.clear();
            Ok(())
        }
    }
    let router = builder().policy(Arc::new(Nothing)).build().await.unwrap();
    let e = router.generate(lite()).await.unwrap_err();
    assert_eq!(e.kind(), laneway::ErrorKind::InvalidRequest, "{e}");
}
