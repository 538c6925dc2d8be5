//! A provider of your own: a backend registered for provider `"house"`, serving one model in
//! two "regions". The first region refuses as throttled, so the router fails over to the second,
//! and the decision says so. No AWS account, no emulator: everything runs in memory.
//!
//! ```sh
//! cargo run -p laneway --example custom_backend
//! ```

use std::sync::Arc;

use laneway::backend::{Completion, MemoryBackend};
use laneway::{Config, ErrorKind, GenerateRequest, Provider, Router, ServiceError};

#[tokio::main]
async fn main() -> laneway::Result<()> {
    let config = Config::from_toml_str(
        r#"
        default_model = "house-small"

        [models.house-small]
        provider = "house"
        model_id = "small-2026-10"
        regions = ["dc-east", "dc-west"]
        price = { input_per_1k = 0.0001, output_per_1k = 0.0004 }
        "#,
    )?;
    // Your client would call your service here; this one answers from memory.
    let house = MemoryBackend::new(|call| {
        let target = &call.attempt.target;
        if target.region() == "dc-east" {
            return Err(ServiceError::new(
                ErrorKind::Throttled,
                "dc-east is at capacity",
                target.id(),
                target.region(),
            )
            .into());
        }
        let mut done = Completion::text(format!("{} answered from {}", target.id, target.region));
        done.usage.input_tokens = 12;
        Ok(done)
    });
    let router = Router::builder()
        .config(config)
        .backend(Provider::named("house"), Arc::new(house))
        .build()
        .await?;
    let answer = router
        .generate(GenerateRequest::user("Where are you?"))
        .await?;
    println!("{}", answer.text());
    let d = &answer.decision;
    println!(
        "provider {} model {} target {} in {}; failed first: {:?}; cost ${:.6}",
        d.provider,
        d.model,
        d.target,
        d.region,
        d.failed_attempts
            .iter()
            .map(|f| format!("{} in {}: {}", f.target, f.region, f.kind))
            .collect::<Vec<_>>(),
        answer.cost_usd
    );
    Ok(())
}
