//! A routing policy of your own, added after the built-in ones: a region under maintenance
//! gets no traffic while any other target can serve (its targets go to the back, so a call
//! that can only go there still goes). Runs against the emulator started in-process.
//!
//! ```sh
//! cargo run -p laneway --example custom_policy
//! ```

use std::sync::Arc;

use laneway::plan::{Draft, Policy};
use laneway::{GenerateRequest, Router};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

/// Moves every target in `region` behind the others.
struct Maintenance {
    region: &'static str,
}

impl Policy for Maintenance {
    fn name(&self) -> &str {
        "maintenance"
    }

    fn apply(&self, draft: &mut Draft<'_>) -> laneway::Result<()> {
        // A stable sort: the built-in order holds among the other targets.
        draft
            .attempts
            .sort_by_key(|a| a.target.region() == self.region);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let emulator = Emulator::start(Scenario::builtin("fast")?).await?;
    let router = Router::builder()
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .policy(Arc::new(Maintenance {
            region: "us-east-1",
        }))
        .build()
        .await?;
    let request =
        GenerateRequest::user("Summarise our refund policy").model("amazon.nova-lite-v1:0");
    let plan = router.plan(&request)?;
    println!(
        "planned: {}",
        plan.attempts
            .iter()
            .map(|a| format!("{} in {}", a.target.id(), a.target.region()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let answer = router.generate(request).await?;
    println!(
        "served by {} in {}: {}",
        answer.decision.target,
        answer.decision.region,
        answer.text()
    );
    emulator.shutdown().await;
    Ok(())
}
