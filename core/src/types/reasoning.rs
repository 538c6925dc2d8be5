//! Reasoning (extended thinking): the model-neutral option a request sets, and the reasoning
//! blocks a model returns and a conversation sends back.

use serde::{Deserialize, Serialize};

/// How hard a model reasons before it answers, in words every reasoning model's configuration
/// maps to its own wire field (Claude's `thinking` and `outputConfig.effort`, Nova 2's
/// `reasoningConfig.maxReasoningEffort`, a configured field for others).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Brief reasoning (a model that takes a budget gets 1,024 tokens unless configured).
    Low,
    /// Moderate reasoning, the default (4,096 tokens unless configured).
    #[default]
    Medium,
    /// Thorough reasoning (16,384 tokens unless configured).
    High,
    /// The most a model offers (Claude Opus 4.6 and later); a model without it reasons at
    /// `high`, said in the decision.
    Max,
}

impl ReasoningEffort {
    /// Every effort, least first.
    pub const ALL: [ReasoningEffort; 4] = [Self::Low, Self::Medium, Self::High, Self::Max];

    /// The snake_case name, as on the wire of every model that takes a word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Max => "max",
        }
    }
}

impl std::fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reasoning asked of a model: an effort, a budget of reasoning tokens, or both (a model that
/// takes a budget uses the budget, one that takes a word uses the effort). Reasoning tokens are
/// output tokens: priced as output, counted against `max_tokens` and the token quota.
///
/// ```
/// use laneway::{GenerateRequest, Reasoning, ReasoningEffort};
/// let req = GenerateRequest::user("Plan the migration step by step.")
///     .model("anthropic.claude-sonnet-4-5-20250929-v1:0")
///     .max_tokens(8_000)
///     .reasoning(Reasoning::budget(4_096));
/// assert_eq!(req.reasoning.unwrap().budget_tokens, Some(4_096));
/// assert_eq!(Reasoning::effort(ReasoningEffort::High).effort, Some(ReasoningEffort::High));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    /// How hard to reason; `None` takes the word from the budget (medium when neither is set).
    #[serde(default)]
    pub effort: Option<ReasoningEffort>,
    /// Most reasoning tokens (Claude's `budget_tokens`: at least 1,024 and below `max_tokens`).
    #[serde(default)]
    pub budget_tokens: Option<u32>,
}

impl Reasoning {
    /// Reasoning at this effort.
    pub fn effort(effort: ReasoningEffort) -> Self {
        Self {
            effort: Some(effort),
            budget_tokens: None,
        }
    }
    /// Reasoning within this many tokens.
    pub fn budget(tokens: u32) -> Self {
        Self {
            effort: None,
            budget_tokens: Some(tokens),
        }
    }

    /// The reasoning tokens to allow for: the budget, else what the effort usually stands for
    /// (1,024 / 4,096 / 16,384 / 32,000 from low to max; medium when neither is set).
    pub fn expected_tokens(&self) -> u32 {
        self.budget_tokens
            .unwrap_or(match self.effort.unwrap_or_default() {
                ReasoningEffort::Low => 1_024,
                ReasoningEffort::Medium => 4_096,
                ReasoningEffort::High => 16_384,
                ReasoningEffort::Max => 32_000,
            })
    }
}

/// A block of the model's reasoning, as Converse returns it (`reasoningContent`) and as the
/// next turn of a conversation must send it back, unchanged, in the assistant message it came
/// in: Claude refuses a tool-use turn with thinking on whose reasoning is missing or altered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningBlock {
    /// Reasoning the model shows, with the signature that vouches for it.
    Text(ReasoningText),
    /// Reasoning the service encrypted (Claude's redacted thinking), passed back as it came.
    Redacted(#[serde(with = "super::base64_bytes")] Vec<u8>),
}

impl ReasoningBlock {
    /// The reasoning text ("" for a redacted block).
    pub fn text(&self) -> &str {
        match self {
            Self::Text(t) => &t.text,
            Self::Redacted(_) => "",
        }
    }
}

/// Readable reasoning and its signature.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningText {
    /// The reasoning, as the model wrote it.
    pub text: String,
    /// The service's signature over the text; required when the block goes back to Claude.
    /// From Bedrock's OpenAI-compatible APIs: the model's encrypted reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The block's id at the service, when it has one (a Responses API reasoning item,
    /// `rs_...`): sent back with it on the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A piece of a reasoning block, as a stream delivers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningDelta {
    /// More reasoning text.
    Text(String),
    /// The block's signature (after its text).
    Signature(String),
    /// Encrypted reasoning.
    Redacted(#[serde(with = "super::base64_bytes")] Vec<u8>),
    /// The block's id at the service (a Responses API reasoning item).
    Id(String),
}

/// Reasoning as one attempt's model spells it, decided when the call is planned.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReasoningWire {
    /// Merged into the model's native request (`additionalModelRequestFields`).
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// `maxTokens` to send when the request sets none: a budget needs room for the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whether a conversation's earlier reasoning blocks go with it (models that spell reasoning
    /// as the request's own model does).
    pub history: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_through_json_in_convereses_nesting() {
        let text = ReasoningBlock::Text(ReasoningText {
            text: "Two cities, so two calls.".into(),
            signature: Some("sig".into()),
            id: None,
        });
        let json = serde_json::to_value(&text).unwrap();
        assert_eq!(json["text"]["signature"], "sig");
        assert_eq!(
            serde_json::from_value::<ReasoningBlock>(json).unwrap(),
            text
        );
        let redacted = ReasoningBlock::Redacted(vec![1, 2, 3]);
        let json = serde_json::to_value(&redacted).unwrap();
        assert_eq!(json, serde_json::json!({ "redacted": "AQID" }));
        assert_eq!(
            serde_json::from_value::<ReasoningBlock>(json).unwrap(),
            redacted
        );
    }

    #[test]
    fn an_unknown_effort_is_named() {
        let e = serde_json::from_str::<Reasoning>(r#"{"effort": "extreme"}"#).unwrap_err();
        assert!(e.to_string().contains("extreme"), "{e}");
    }
}
