//! The example scenario in Rust: an interactive chat turn, a background summary, a
//! family-routed request and a stream, against the in-process emulator (no AWS account):
//! `cargo run -p laneway --example scenario`.

use std::time::Duration;

use futures::StreamExt;
use laneway::{
    Config, GenerateRequest, GenerateResponse, Reason, Router, Slo, SloClass, StreamEvent,
};
use laneway_emulator::{Emulator, Scenario, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};

/// The Nova family picks its variant per request with the built-in complexity classifier.
const CONFIG: &str = r#"
[families.nova]
variants = ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"]
router = { max_strong_share = 0.3 }
"#;

fn show(label: &str, r: &GenerateResponse) {
    let d = &r.decision;
    println!(
        "{label:<18} {} in {} at tier {:?}: {} tokens, ${:.6}",
        d.model, d.region, d.tier, r.usage.output_tokens, r.cost_usd
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scenario = Scenario::builtin("startup")?;
    scenario.time_scale = 0.2;
    let emulator = Emulator::start(scenario).await?;
    let router = Router::builder()
        .config(Config::from_toml_str(CONFIG)?)
        .endpoint_url(emulator.url())
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await?;

    let chat = GenerateRequest::user("Where is my order #1234?")
        .family("nova")
        .max_tokens(60)
        .slo(Slo {
            class: SloClass::Interactive,
            ttft_target: Some(Duration::from_millis(800)),
            deadline: None,
        });
    show("interactive chat", &router.generate(chat).await?);

    let summary = GenerateRequest::user("Summarise this week's support tickets.")
        .family("nova")
        .slo_class(SloClass::Background)
        .max_tokens(120);
    show("background summary", &router.generate(summary).await?);

    let hard = router
        .generate(
            GenerateRequest::user("Prove that the square root of 2 is irrational, step by step.")
                .family("nova")
                .max_tokens(120),
        )
        .await?;
    show("family-routed", &hard);
    for reason in &hard.decision.reasons {
        if let Reason::VariantScored { .. } = reason {
            println!("  classifier: {reason}");
        }
    }

    print!("stream:            ");
    let mut events = router
        .stream(
            GenerateRequest::user("Tell me a short story about a lighthouse.")
                .family("nova")
                .max_tokens(40),
        )
        .await?;
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::TextDelta { text, .. } => print!("{text}"),
            StreamEvent::Completed(done) => println!(
                "\n  TTFT {:?}, {} tokens",
                done.timings.ttft.unwrap_or_default(),
                done.usage.output_tokens
            ),
            _ => {}
        }
    }
    emulator.shutdown().await;
    Ok(())
}
