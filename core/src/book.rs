//! The book's chapters (`docs/src`) and the README as doc comments, so that `cargo test --doc
//! -p laneway` compiles and runs their Rust snippets against this checkout's crate. Only built
//! for doctests.

macro_rules! chapters {
    ($($name:ident = $file:literal),* $(,)?) => {
        $(
            #[doc = include_str!(concat!("../../docs/src/", $file))]
            pub struct $name;
        )*
    };
}

chapters! {
    Rust = "rust.md",
    SloAndRouting = "slo-and-routing.md",
    PromptCaching = "prompt-caching.md",
    Reasoning = "reasoning.md",
    OpenAi = "openai.md",
    VariantRouting = "variant-routing.md",
    Metrics = "metrics.md",
    SharedState = "shared-state.md",
    Batch = "batch.md",
    Extending = "extending.md",
    Errors = "errors.md",
    Python = "python.md",
    Node = "node.md",
    Configuration = "configuration.md",
    AwsAndEmulator = "aws-and-emulator.md",
    Cli = "cli.md",
    Emulator = "emulator.md",
    Examples = "examples.md",
    Introduction = "introduction.md",
}

/// The README's example (compiled, not run: it calls AWS).
#[doc = include_str!("../../README.md")]
pub struct Readme;
