//! What a call returns: [`GenerateResponse`], [`StreamEvent`], usage, timings and the decision.

use std::time::Duration;

use serde::Serialize;

use super::ServiceTier;
use super::error::FailedAttempt;
use super::reason::Reason;
use super::reasoning::{ReasoningBlock, ReasoningDelta};
use super::target::{Api, Provider};

/// The answer to [`Router::generate`](crate::Router::generate), and the last event of a stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateResponse {
    /// The assistant's content: text and tool calls.
    pub content: Vec<OutputBlock>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The tokens the call used: input, output and the prompt cache's.
    pub usage: Usage,
    /// How long the call took, as the caller saw it.
    pub timings: Timings,
    /// What served the call and why.
    pub decision: RouteDecision,
    /// What the call cost, in US dollars, from the price book.
    pub cost_usd: f64,
    /// What the prompt cache saved against the same call uncached (negative when a cache write
    /// cost more than it has saved so far).
    pub cache_savings_usd: f64,
    /// The model-specific response fields the request's `model_fields.response_paths` asked
    /// for (Converse's `additionalModelResponseFields`), when the model returned any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_response_fields: Option<serde_json::Value>,
    /// What the request's guardrail assessed, in Converse's shape (`trace.guardrail`:
    /// `inputAssessment`, `outputAssessments`, `modelOutput`, `actionReason`), when its trace
    /// is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrail_trace: Option<serde_json::Value>,
}

#[cfg(test)]
impl GenerateResponse {
    /// An answer of `content` from Bedrock's `m` in us-east-1, for tests of its wire shapes.
    pub(crate) fn for_tests(
        content: Vec<OutputBlock>,
        stop_reason: StopReason,
        usage: Usage,
    ) -> Self {
        Self {
            content,
            stop_reason,
            usage,
            timings: Timings::default(),
            decision: RouteDecision {
                call_id: "lw1:x".into(),
                provider: crate::types::Provider::Bedrock,
                api: crate::types::Api::Converse,
                model: "m".into(),
                family: None,
                target: "m".into(),
                region: "us-east-1".into(),
                endpoint: None,
                tier: None,
                served_tier: None,
                invoked_model: None,
                reasons: Vec::new(),
                failed_attempts: Vec::new(),
                attempts_sent: 1,
                hedge: None,
            },
            cost_usd: 0.0,
            cache_savings_usd: 0.0,
            model_response_fields: None,
            guardrail_trace: None,
        }
    }
}

impl GenerateResponse {
    /// All text blocks, concatenated (the answer, without its reasoning).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .flat_map(|b| match b {
                OutputBlock::Text(t) => std::slice::from_ref(t),
                OutputBlock::Citations(c) => c.content.as_slice(),
                _ => &[],
            })
            .map(String::as_str)
            .collect()
    }

    /// The reasoning's readable text, concatenated ("" without reasoning or when redacted).
    pub fn reasoning_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                OutputBlock::Reasoning(r) => Some(r.text()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls the model made.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|b| match b {
            OutputBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }

    /// The answer as the assistant turn of the next request: every block, reasoning with its
    /// signature included, as a conversation with thinking and tools must send it back.
    ///
    /// ```
    /// use laneway::{OutputBlock, ReasoningBlock, ReasoningText, ContentBlock};
    /// let blocks = vec![
    ///     OutputBlock::Reasoning(ReasoningBlock::Text(ReasoningText { text: "think".into(), signature: Some("s".into()), id: None })),
    ///     OutputBlock::Text("Hello".into()),
    /// ];
    /// let turn = laneway::GenerateResponse::assistant_turn_of(&blocks);
    /// assert!(matches!(turn.content[0], ContentBlock::Reasoning(_)));
    /// ```
    pub fn assistant_message(&self) -> super::Message {
        Self::assistant_turn_of(&self.content)
    }

    /// [`GenerateResponse::assistant_message`] of some output blocks.
    pub fn assistant_turn_of(content: &[OutputBlock]) -> super::Message {
        use super::{ContentBlock, Message, Role, ToolUse};
        let content = content
            .iter()
            .filter_map(|b| match b {
                OutputBlock::Text(t) if t.is_empty() => None,
                OutputBlock::Text(t) => Some(ContentBlock::Text(t.clone())),
                OutputBlock::ToolUse { id, name, input } => Some(ContentBlock::ToolUse(ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                })),
                OutputBlock::Reasoning(r) => Some(ContentBlock::Reasoning(r.clone())),
                OutputBlock::Citations(c) => Some(ContentBlock::Citations(c.clone())),
            })
            .collect();
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

/// A piece of the assistant's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputBlock {
    /// Text of the answer.
    Text(String),
    /// A call of one of the request's tools.
    ToolUse {
        /// The call's id, which the tool's result names (`tool_use_id`).
        id: String,
        /// The tool's name.
        name: String,
        /// The tool's input, as the model wrote it.
        input: serde_json::Value,
    },
    /// The model's reasoning before the blocks after it.
    Reasoning(ReasoningBlock),
    /// Text with the sources it cites (from a document or search result with citations on).
    Citations(super::content::CitationsContent),
}

/// Why the model stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    #[default]
    EndTurn,
    /// The model called a tool and waits for its result.
    ToolUse,
    /// The answer reached the most output tokens allowed (`max_tokens`).
    MaxTokens,
    /// The model wrote one of the request's stop sequences.
    StopSequence,
    /// The request's guardrail intervened.
    GuardrailIntervened,
    /// The service's content filter withheld the answer or part of it.
    ContentFiltered,
    /// The conversation filled the model's context window.
    ModelContextWindowExceeded,
    /// A reason this version does not know, as the service named it.
    Other(String),
}

impl StopReason {
    /// The stop reason of a Bedrock wire name (also accepts TGI and OpenAI finish reasons):
    /// every protocol's stop words are read here and written by the `as_*` methods below, so
    /// a backend and a drop-in of one protocol agree.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "end_turn" | "eos_token" | "stop" => StopReason::EndTurn,
            "tool_use" | "tool_calls" => StopReason::ToolUse,
            "max_tokens" | "length" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "guardrail_intervened" => StopReason::GuardrailIntervened,
            "content_filtered" | "content_filter" => StopReason::ContentFiltered,
            "model_context_window_exceeded" => StopReason::ModelContextWindowExceeded,
            other => StopReason::Other(other.to_string()),
        }
    }

    /// Its Chat Completions `finish_reason` (`stop`, `tool_calls`, `length`,
    /// `content_filter`): the words [`from_wire`](Self::from_wire) reads back.
    ///
    /// ```
    /// use laneway::StopReason;
    /// for r in [StopReason::EndTurn, StopReason::ToolUse, StopReason::MaxTokens, StopReason::ContentFiltered] {
    ///     assert_eq!(StopReason::from_wire(r.as_chat_finish()), r);
    /// }
    /// ```
    pub fn as_chat_finish(&self) -> &'static str {
        match self {
            StopReason::ToolUse => "tool_calls",
            StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => "length",
            StopReason::ContentFiltered | StopReason::GuardrailIntervened => "content_filter",
            _ => "stop",
        }
    }

    /// The Responses API's `incomplete_details.reason` for a response that stopped short, or
    /// `None` for one that completed.
    pub fn as_responses_incomplete(&self) -> Option<&'static str> {
        match self {
            StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => {
                Some("max_output_tokens")
            }
            StopReason::ContentFiltered | StopReason::GuardrailIntervened => Some("content_filter"),
            _ => None,
        }
    }

    /// The stop reason of a Responses API answer that stopped short: its
    /// `incomplete_details.reason` (unsaid: it ran out of output tokens), read back from what
    /// [`as_responses_incomplete`](Self::as_responses_incomplete) writes.
    ///
    /// ```
    /// use laneway::StopReason;
    /// for r in [StopReason::MaxTokens, StopReason::ContentFiltered] {
    ///     assert_eq!(StopReason::from_responses_incomplete(r.as_responses_incomplete()), r);
    /// }
    /// ```
    pub fn from_responses_incomplete(reason: Option<&str>) -> Self {
        match reason {
            Some("max_output_tokens") | None => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFiltered,
            Some(other) => StopReason::Other(other.to_string()),
        }
    }

    /// Its Bedrock wire name (a reason this version does not know, as the service named it).
    ///
    /// ```
    /// use laneway::StopReason;
    /// assert_eq!(StopReason::from_wire("length").as_wire(), "max_tokens");
    /// assert_eq!(StopReason::from_wire("weird").as_wire(), "weird");
    /// ```
    pub fn as_wire(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::GuardrailIntervened => "guardrail_intervened",
            StopReason::ContentFiltered => "content_filtered",
            StopReason::ModelContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(name) => name,
        }
    }
}

/// Tokens of one call.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    /// Input tokens processed anew (neither read from nor written to the cache).
    pub input_tokens: u32,
    /// Tokens the model generated, reasoning included.
    pub output_tokens: u32,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u32,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u32,
    /// Of `cache_write_tokens`, those written with the 1-hour TTL.
    pub cache_write_1h_tokens: u32,
    /// Of `output_tokens`, those the model spent reasoning, when the service says (the
    /// OpenAI-compatible APIs' `reasoning_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u32,
    /// True when the service did not count the input and Laneway estimated it (some SageMaker
    /// containers report no input count).
    pub input_estimated: bool,
}

impl Usage {
    /// All input tokens: new, cache-read and cache-written.
    pub fn total_input_tokens(&self) -> u32 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

/// How long the call took, as the caller saw it. Serialized in milliseconds (`ttft_ms`,
/// `total_ms`, ...), as every duration of the bindings' schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Timings {
    /// Time to first token of any kind (reasoning or answer); measured on streams only (a
    /// whole answer arrives at once).
    #[serde(rename = "ttft_ms", with = "super::units::serde_opt_millis")]
    #[schemars(with = "Option<f64>")]
    pub ttft: Option<Duration>,
    /// Time to the first reasoning token, for a call that reasoned (streams only).
    #[serde(rename = "ttft_reasoning_ms", with = "super::units::serde_opt_millis")]
    #[schemars(with = "Option<f64>")]
    pub ttft_reasoning: Option<Duration>,
    /// Time to the first token of the answer itself (text or a tool call), after any
    /// reasoning (streams only).
    #[serde(rename = "ttft_answer_ms", with = "super::units::serde_opt_millis")]
    #[schemars(with = "Option<f64>")]
    pub ttft_answer: Option<Duration>,
    /// Gaps between content deltas; measured on streams with two or more deltas.
    pub inter_token: Option<InterTokenSummary>,
    /// From the call to the last byte, failovers included.
    #[serde(rename = "total_ms", with = "super::units::serde_millis")]
    #[schemars(with = "f64")]
    pub total: Duration,
    /// Output tokens per second from the first token to the last (streams only).
    pub output_tokens_per_second: Option<f64>,
}

/// Inter-token latency of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct InterTokenSummary {
    /// The mean gap between content deltas (`mean_ms`).
    #[serde(rename = "mean_ms", with = "super::units::serde_millis")]
    #[schemars(with = "f64")]
    pub mean: Duration,
    /// The median gap (`p50_ms`).
    #[serde(rename = "p50_ms", with = "super::units::serde_millis")]
    #[schemars(with = "f64")]
    pub p50: Duration,
    /// The 90th-percentile gap (`p90_ms`).
    #[serde(rename = "p90_ms", with = "super::units::serde_millis")]
    #[schemars(with = "f64")]
    pub p90: Duration,
    /// The longest gap (`max_ms`).
    #[serde(rename = "max_ms", with = "super::units::serde_millis")]
    #[schemars(with = "f64")]
    pub max: Duration,
}

impl InterTokenSummary {
    /// Summarises gaps; `None` when there are none.
    pub fn from_gaps(gaps: &mut [Duration]) -> Option<Self> {
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_unstable();
        let at = |q: f64| gaps[((gaps.len() - 1) as f64 * q).round() as usize];
        let sum: Duration = gaps.iter().sum();
        Some(Self {
            mean: sum / gaps.len() as u32,
            p50: at(0.5),
            p90: at(0.9),
            max: gaps[gaps.len() - 1],
        })
    }
}

/// Which target served a call, at which tier, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RouteDecision {
    /// This call's id, unique; pass it to `Router::feedback` to say whether the answer was
    /// good. It carries the family, the model that served and the prompt's difficulty band,
    /// so feedback works from another process or after a restart.
    pub call_id: String,
    /// Who served it: `bedrock`, `sagemaker` or your own provider's name.
    #[schemars(with = "String")]
    pub provider: Provider,
    /// Which of the provider's APIs served it: Converse or one of Bedrock's OpenAI-compatible
    /// APIs, SageMaker's InvokeEndpoint, or your own provider's.
    pub api: Api,
    /// The configured model (the variant, for a family).
    pub model: String,
    /// The family, when the request named one.
    pub family: Option<String>,
    /// What was sent: the model id, inference-profile id or SageMaker endpoint name.
    pub target: String,
    /// The region it was sent to (a cross-region profile may have processed it elsewhere).
    pub region: String,
    /// The SageMaker endpoint, for SageMaker targets.
    pub endpoint: Option<String>,
    /// The tier requested (Bedrock only).
    pub tier: Option<ServiceTier>,
    /// The tier the service says served, when it says.
    pub served_tier: Option<ServiceTier>,
    /// When the target was a Bedrock prompt router: the model it invoked, as Bedrock reports it
    /// (`trace.promptRouter.invokedModelId`).
    pub invoked_model: Option<String>,
    /// Each choice and the alternatives rejected, in the order the plan made them.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub reasons: Vec<Reason>,
    /// Attempts that failed before this one succeeded.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub failed_attempts: Vec<FailedAttempt>,
    /// Requests sent for this call: 1, plus retries, failovers and hedges.
    pub attempts_sent: u32,
    /// Whether a hedge was sent, and who won.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub hedge: Option<HedgeReport>,
}

/// A hedge: a second attempt sent when the first token was late.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HedgeReport {
    /// How long the first attempt had before the hedge went.
    #[serde(rename = "delay_ms", with = "super::units::serde_millis")]
    pub delay: Duration,
    /// The target of the hedge.
    pub hedge_target: String,
    /// Whether the hedge produced the first token (else the first attempt did).
    pub hedge_won: bool,
}

/// One event of [`Router::stream`](crate::Router::stream).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEvent {
    /// Text of content block `index`.
    TextDelta {
        /// The content block it belongs to, by index.
        index: u32,
        /// The text, to append to the block's.
        text: String,
    },
    /// A tool call begins in content block `index`.
    ToolUseStart {
        /// The content block it belongs to, by index.
        index: u32,
        /// The call's id, which the tool's result names (`tool_use_id`).
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's JSON input.
    ToolUseDelta {
        /// The tool call's content block, by index.
        index: u32,
        /// The next piece of the input's JSON text (the pieces join into one JSON value).
        input_json: String,
    },
    /// A piece of the model's reasoning in content block `index`: text, its signature, or
    /// encrypted reasoning.
    ReasoningDelta {
        /// The content block it belongs to, by index.
        index: u32,
        /// The piece: text, a signature, encrypted reasoning or the block's id.
        delta: ReasoningDelta,
    },
    /// A citation of the text in content block `index` (its text comes as text deltas).
    CitationDelta {
        /// The content block it belongs to, by index.
        index: u32,
        /// The source cited, and where in it.
        citation: super::content::Citation,
    },
    /// The stream broke after text was delivered and continues on another target, which was
    /// sent the delivered text as the start of its answer. What follows continues that text.
    Continued {
        /// What had been delivered when it broke.
        delivered: super::error::Delivered,
        /// The target that failed, and how.
        failed_target: String,
        /// The kind of the failure that broke it.
        kind: super::error::ErrorKind,
    },
    /// The stream completed: the whole response, with usage, timings, decision and cost.
    Completed(Box<GenerateResponse>),
}

impl StreamEvent {
    /// Whether the event carries content (a text, tool-input or reasoning delta).
    pub fn is_delta(&self) -> bool {
        matches!(
            self,
            StreamEvent::TextDelta { .. }
                | StreamEvent::ToolUseDelta { .. }
                | StreamEvent::ReasoningDelta { .. }
        )
    }

    /// Whether the event is the model's reasoning rather than its answer.
    pub fn is_reasoning(&self) -> bool {
        matches!(self, StreamEvent::ReasoningDelta { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inter_token_summary_orders_gaps() {
        let mut gaps: Vec<Duration> = [5, 1, 3, 2, 4]
            .iter()
            .map(|&m| Duration::from_millis(m))
            .collect();
        let s = InterTokenSummary::from_gaps(&mut gaps).unwrap();
        assert_eq!(s.p50, Duration::from_millis(3));
        assert_eq!(s.max, Duration::from_millis(5));
        assert_eq!(s.mean, Duration::from_millis(3));
        assert!(InterTokenSummary::from_gaps(&mut []).is_none());
    }

    #[test]
    fn stop_reasons_from_every_format() {
        assert_eq!(StopReason::from_wire("length"), StopReason::MaxTokens);
        assert_eq!(StopReason::from_wire("eos_token"), StopReason::EndTurn);
        assert_eq!(
            StopReason::from_wire("weird"),
            StopReason::Other("weird".into())
        );
    }
}
