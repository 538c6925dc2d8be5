//! The Responses API (`POST …/responses`) pieces shared by the OpenAI backend and the `openai`
//! drop-in: usage, read and written in one shape.

use serde::{Deserialize, Serialize};

use crate::types::Usage;

/// The Responses API's usage: `input_tokens` counts cached ones too (and, on Bedrock, those
/// written to the cache), `output_tokens` counts reasoning.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ResponsesUsage {
    /// Every input token, cached or written to the cache or not.
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    /// Every output token, reasoning included.
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    /// Their sum (written; not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_tokens: Option<u64>,
    /// The cache's share of the input.
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
    /// Reasoning's share of the output.
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InputDetails {
    /// Input read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
    /// Bedrock's extension: the prefix written to the cache.
    #[serde(default)]
    pub(crate) cache_write_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutputDetails {
    /// Output spent reasoning.
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl ResponsesUsage {
    /// The core's usage as the Responses API counts it.
    pub(crate) fn of(u: &Usage) -> Self {
        let input = u64::from(u.total_input_tokens());
        let output = u64::from(u.output_tokens);
        Self {
            input_tokens: Some(input),
            output_tokens: Some(output),
            total_tokens: Some(input + output),
            input_tokens_details: Some(InputDetails {
                cached_tokens: Some(u64::from(u.cache_read_tokens)),
                cache_write_tokens: Some(u64::from(u.cache_write_tokens)),
            }),
            output_tokens_details: Some(OutputDetails {
                reasoning_tokens: Some(u64::from(u.reasoning_tokens)),
            }),
        }
    }

    /// The usage an answer reports, as the core's (missing counts are 0).
    pub(crate) fn into_usage(self) -> Usage {
        let n = |v: Option<u64>| v.map_or(0, crate::types::units::token_count);
        let input = self.input_tokens_details.as_ref();
        let cached = n(input.and_then(|d| d.cached_tokens));
        let written = n(input.and_then(|d| d.cache_write_tokens));
        Usage {
            input_tokens: n(self.input_tokens)
                .saturating_sub(cached)
                .saturating_sub(written),
            output_tokens: n(self.output_tokens),
            cache_read_tokens: cached,
            cache_write_tokens: written,
            reasoning_tokens: n(self.output_tokens_details.and_then(|d| d.reasoning_tokens)),
            ..Usage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Usage written by the drop-in reads back in the backend as the same counts.
        #[test]
        fn usage_reads_back_as_written(input in 0u32..1_000_000, read in 0u32..1_000_000, written in 0u32..1_000_000, output in 0u32..1_000_000, reasoning in 0u32..1_000) {
            let u = Usage { input_tokens: input, cache_read_tokens: read, cache_write_tokens: written, output_tokens: output, reasoning_tokens: reasoning.min(output), ..Usage::default() };
            let wire = serde_json::to_value(ResponsesUsage::of(&u)).unwrap();
            let back: ResponsesUsage = serde_json::from_value(wire).unwrap();
            prop_assert_eq!(back.into_usage(), u);
        }
    }
}
