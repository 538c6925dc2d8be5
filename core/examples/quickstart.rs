//! The README's example, run against the in-process emulator instead of AWS:
//! `cargo run -p laneway --example quickstart`.

use futures::StreamExt;
use laneway::{GenerateRequest, Router, SloClass, StreamEvent};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let emulator = Emulator::start(Scenario::builtin("startup")?).await?;
    // For AWS: `Router::builder().build().await?` (credentials and settings from the environment).
    let router = Router::builder()
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await?;

    let answer = router
        .generate(
            GenerateRequest::user("Summarise this support ticket: the invoice was charged twice.")
                .family("nova")
                .slo_class(SloClass::Background)
                .max_tokens(60),
        )
        .await?;
    println!("{}", answer.text());
    println!(
        "{} in {} at tier {:?}: {} in / {} out tokens, ${:.6}",
        answer.decision.target,
        answer.decision.region,
        answer.decision.tier,
        answer.usage.input_tokens,
        answer.usage.output_tokens,
        answer.cost_usd,
    );
    for reason in &answer.decision.reasons {
        println!("  because {reason}");
    }

    let mut events = router
        .stream(
            GenerateRequest::user("Hi! Where is my order?")
                .family("claude")
                .slo_class(SloClass::Interactive)
                .max_tokens(40),
        )
        .await?;
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::TextDelta { text, .. } => print!("{text}"),
            StreamEvent::Completed(done) => {
                println!("\nTTFT {:?}, ${:.6}", done.timings.ttft, done.cost_usd)
            }
            _ => {}
        }
    }
    emulator.shutdown().await;
    Ok(())
}
