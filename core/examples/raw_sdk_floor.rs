//! The floor under the bindings benchmark: the official Rust SDK (`aws-sdk-bedrockruntime`)
//! calling Converse or ConverseStream directly against a running emulator, one call at a time
//! or `IN_FLIGHT` at once.
//! Laneway's bindings sit on this client, so their CPU per call cannot go below it.
//!
//! `cargo run --release -p laneway --example raw_sdk_floor -- URL generate|stream TOKENS CALLS [IN_FLIGHT]`
//! prints the process's CPU time per call in microseconds (every thread).

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use aws_sdk_bedrockruntime as bedrock;
use bedrock::types::{ContentBlock, ConversationRole, InferenceConfiguration, Message};

const MODEL: &str = "amazon.nova-lite-v1:0";

/// The process's CPU time so far, every thread's (nanoseconds from
/// `/proc/self/task/*/schedstat`: `getrusage`'s ticks are too coarse for short runs).
fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
    let ns: u64 = tasks
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            stat.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum();
    Duration::from_nanos(ns)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, mode, tokens, calls, in_flight) = match args.as_slice() {
        [url, mode, tokens, calls] => (url, mode, tokens, calls, "1"),
        [url, mode, tokens, calls, in_flight] => (url, mode, tokens, calls, in_flight.as_str()),
        _ => {
            eprintln!("usage: raw_sdk_floor URL generate|stream TOKENS CALLS [IN_FLIGHT]");
            std::process::exit(2);
        }
    };
    let in_flight: usize = in_flight.parse().expect("IN_FLIGHT is a number");
    let tokens: i32 = tokens.parse().expect("TOKENS is a number");
    let calls: usize = calls.parse().expect("CALLS is a number");
    let conf = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(url)
        .credentials_provider(Credentials::new(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
            None,
            None,
            "floor",
        ))
        .retry_config(RetryConfig::disabled())
        .load()
        .await;
    let client = bedrock::Client::new(&conf);
    let call = |i: usize| {
        let message = Message::builder()
            .role(ConversationRole::User)
            .content(ContentBlock::Text(format!(
                "Summarise ticket {i}: the invoice was charged twice and the customer wants a refund."
            )))
            .build()
            .expect("a message");
        let inference = InferenceConfiguration::builder().max_tokens(tokens).build();
        let client = client.clone();
        let streaming = mode == "stream";
        async move {
            if streaming {
                let mut out = client
                    .converse_stream()
                    .model_id(MODEL)
                    .messages(message)
                    .inference_config(inference)
                    .send()
                    .await
                    .expect("a stream");
                while out.stream.recv().await.expect("an event").is_some() {}
            } else {
                client
                    .converse()
                    .model_id(MODEL)
                    .messages(message)
                    .inference_config(inference)
                    .send()
                    .await
                    .expect("an answer");
            }
        }
    };
    for i in 0..20 {
        call(i).await;
    }
    let start = cpu_time();
    // Each call in a task of its own, as a service's handlers are.
    let mut running = tokio::task::JoinSet::new();
    for i in 0..calls {
        if running.len() >= in_flight {
            running
                .join_next()
                .await
                .expect("a call")
                .expect("no panic");
        }
        running.spawn(call(i));
    }
    running.join_all().await;
    let per_call = (cpu_time() - start).as_secs_f64() * 1e6 / calls as f64;
    println!("{per_call:.1}");
}
