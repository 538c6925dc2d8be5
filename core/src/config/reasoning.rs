//! How a model reasons and how its wire spells it: the `reasoning` table of a model, and the
//! mapping of a request's model-neutral [`Reasoning`] to that model's fields.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::types::{
    GenerateRequest, Reasoning, ReasoningEffort, ReasoningWire, SamplingParameter, ToolChoice,
};

/// How a model's request asks for reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningFormat {
    /// Claude: `thinking = { type = "enabled", budget_tokens }`, or with `adaptive`
    /// `thinking = { type = "adaptive" }` and `output_config.effort`, in the model's native
    /// fields. Source: docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
    /// and claude-messages-adaptive-thinking.html.
    Anthropic,
    /// Nova 2: `reasoningConfig = { type = "enabled", maxReasoningEffort }` (low, medium, high).
    /// Source: docs.aws.amazon.com/nova/latest/nova2-userguide/extended-thinking.html.
    Nova,
    /// The effort word in one native field (`field`), as gpt-oss takes `reasoning_effort`.
    Field,
    /// OpenAI's GPT-5.x: `reasoning = { effort }` (Responses' `reasoning.effort`, Chat
    /// Completions' `reasoning_effort`, Converse's `additionalModelRequestFields.reasoning`);
    /// the OpenAI-compatible APIs also answer with a summary of the reasoning.
    #[serde(rename = "openai")]
    OpenAi,
    /// The model always reasons; nothing is sent (DeepSeek-R1).
    Always,
}

/// A model's reasoning (in its configuration, `reasoning = { format = "anthropic", ... }`).
///
/// ```
/// use laneway::{Config, GenerateRequest, Reasoning, ReasoningEffort};
/// let config = Config::default();
/// let sonnet = &config.models["anthropic.claude-sonnet-4-5-20250929-v1:0"];
/// let r = sonnet.reasoning().unwrap();
/// let request = GenerateRequest::user("Plan it").max_tokens(8_000);
/// let wire = r.wire(&request, &Reasoning::effort(ReasoningEffort::Low), 1_000).unwrap();
/// assert_eq!(wire.fields["thinking"]["type"], "enabled");
/// assert!(r.wire(&request, &Reasoning::budget(100), 1_000).unwrap_err().1.contains("1024"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningConfig {
    /// How its request asks for reasoning.
    pub format: ReasoningFormat,
    /// The efforts it takes; an effort above them is sent as the highest (said in the
    /// decision).
    pub efforts: BTreeSet<ReasoningEffort>,
    /// Anthropic: the smallest budget (Bedrock: 1,024).
    pub min_budget_tokens: u32,
    /// The budget each effort stands for: sent as the budget to a model that takes only a
    /// budget, and used to turn a budget into an effort for a model that takes only a word.
    pub effort_budgets: BTreeMap<ReasoningEffort, u32>,
    /// Anthropic: an effort without a budget is sent as adaptive thinking with
    /// `output_config.effort` (Claude Sonnet 4.6, Opus 4.6 and later).
    #[serde(default)]
    pub adaptive: bool,
    /// Anthropic: the model refuses a budget (adaptive only, as Claude Opus 4.7): a budget is
    /// sent as the effort it stands for.
    #[serde(default)]
    pub adaptive_only: bool,
    /// Field: the native field that takes the effort word.
    #[serde(default)]
    pub field: Option<String>,
    /// OpenAI: the reasoning summary to ask the Responses API for (`auto`, `concise`,
    /// `detailed`), which comes back as the reasoning block's text; unset, none is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A field of the request that the model refuses, and why.
pub type Refusal = (&'static str, String);

impl ReasoningConfig {
    /// Checks the table itself (a field name for `field`, a budget per effort).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.efforts.is_empty() {
            return Err("`reasoning.efforts` must name at least one effort".into());
        }
        if let Some(e) = ReasoningEffort::ALL
            .into_iter()
            .find(|e| !self.effort_budgets.contains_key(e))
        {
            return Err(format!(
                "`reasoning.effort_budgets` needs a budget for every effort; {} has none",
                e.as_str()
            ));
        }
        if self.format == ReasoningFormat::Field && self.field.as_deref().is_none_or(str::is_empty)
        {
            return Err("`reasoning.format = \"field\"` needs `reasoning.field`".into());
        }
        if self.format != ReasoningFormat::Field && self.field.is_some() {
            return Err("`reasoning.field` is only for `format = \"field\"`".into());
        }
        match (&self.summary, self.format) {
            (Some(s), ReasoningFormat::OpenAi)
                if !["auto", "concise", "detailed"].contains(&s.as_str()) =>
            {
                return Err(format!(
                    "`reasoning.summary` is one of auto, concise, detailed; got {s:?}"
                ));
            }
            (Some(_), f) if f != ReasoningFormat::OpenAi => {
                return Err("`reasoning.summary` is only for `format = \"openai\"`".into());
            }
            _ => {}
        }
        Ok(())
    }

    /// The highest effort it takes at or below `effort`, or its lowest.
    fn effort_within(&self, effort: ReasoningEffort) -> ReasoningEffort {
        self.efforts
            .range(..=effort)
            .next_back()
            .or_else(|| self.efforts.first())
            .copied()
            .unwrap_or(effort)
    }

    /// The least effort whose budget covers `budget` (the highest if none does).
    fn effort_for_budget(&self, budget: u32) -> ReasoningEffort {
        self.efforts
            .iter()
            .find(|e| self.budget_of(**e) >= budget)
            .or_else(|| self.efforts.last())
            .copied()
            .unwrap_or_default()
    }

    fn budget_of(&self, effort: ReasoningEffort) -> u32 {
        self.effort_budgets
            .get(&effort)
            .copied()
            // Validation gives every effort a budget.
            .unwrap_or_default()
    }

    /// What the model's request carries for `asked` in `request`: its native fields, the
    /// `maxTokens` a budget needs when the request sets none (`default_output` tokens for the
    /// answer beyond the budget), or the request field the model refuses and why (in Bedrock's
    /// words where Bedrock has them).
    pub fn wire(
        &self,
        request: &GenerateRequest,
        asked: &Reasoning,
        default_output: u32,
    ) -> Result<ReasoningWire, Refusal> {
        self.wire_without(request, asked, default_output, &BTreeSet::new())
    }

    /// [`wire`](Self::wire) for a model that is sent the request without the sampling
    /// parameters in `unsent` (those it refuses): they constrain nothing.
    pub fn wire_without(
        &self,
        request: &GenerateRequest,
        asked: &Reasoning,
        default_output: u32,
        unsent: &BTreeSet<SamplingParameter>,
    ) -> Result<ReasoningWire, Refusal> {
        let mut fields = Map::new();
        let mut max_tokens = None;
        match self.format {
            ReasoningFormat::Anthropic => {
                anthropic_constraints(request, unsent)?;
                let budget = match (asked.budget_tokens, asked.effort) {
                    (Some(b), _) if !self.adaptive_only => Some(b),
                    (None, Some(_)) if self.adaptive => None,
                    (None, Some(e)) if !self.adaptive_only => {
                        Some(self.budget_of(self.effort_within(e)))
                    }
                    (None, None) if !self.adaptive => {
                        Some(self.budget_of(ReasoningEffort::default()))
                    }
                    _ => None,
                };
                match budget {
                    Some(budget) => {
                        let budget = self.checked_budget(request, budget)?;
                        fields.insert(
                            "thinking".into(),
                            json!({ "type": "enabled", "budget_tokens": budget }),
                        );
                        if request.inference.max_tokens.is_none() {
                            max_tokens = Some(budget.saturating_add(default_output));
                        }
                    }
                    None => {
                        fields.insert("thinking".into(), json!({ "type": "adaptive" }));
                        let effort = asked
                            .effort
                            .or_else(|| asked.budget_tokens.map(|b| self.effort_for_budget(b)));
                        if let Some(e) = effort {
                            fields.insert(
                                "output_config".into(),
                                json!({ "effort": self.effort_within(e).as_str() }),
                            );
                        }
                    }
                }
            }
            ReasoningFormat::Nova => {
                fields.insert(
                    "reasoningConfig".into(),
                    json!({ "type": "enabled", "maxReasoningEffort": self.effort_word(asked) }),
                );
            }
            ReasoningFormat::Field => {
                let field = self.field.clone().unwrap_or_default();
                fields.insert(field, Value::from(self.effort_word(asked)));
            }
            ReasoningFormat::OpenAi => {
                fields.insert(
                    "reasoning".into(),
                    json!({ "effort": self.effort_word(asked) }),
                );
            }
            ReasoningFormat::Always => {}
        }
        Ok(ReasoningWire {
            fields,
            max_tokens,
            history: false,
        })
    }

    fn effort_word(&self, asked: &Reasoning) -> &'static str {
        let effort = match (asked.effort, asked.budget_tokens) {
            (Some(e), _) => e,
            (None, Some(b)) => self.effort_for_budget(b),
            (None, None) => ReasoningEffort::default(),
        };
        self.effort_within(effort).as_str()
    }

    fn checked_budget(&self, request: &GenerateRequest, budget: u32) -> Result<u32, Refusal> {
        if budget < self.min_budget_tokens {
            return Err((
                "reasoning.budget_tokens",
                format!(
                    "{budget}: thinking.enabled.budget_tokens: Input should be greater than or equal to {}",
                    self.min_budget_tokens
                ),
            ));
        }
        match request.inference.max_tokens {
            Some(max) if i64::from(budget) >= max => Err((
                "reasoning.budget_tokens",
                format!(
                    "{budget}: `max_tokens` ({max}) must be greater than `thinking.budget_tokens`"
                ),
            )),
            _ => Ok(budget),
        }
    }

    /// How `asked` is sent to this model, in words (for the decision).
    pub fn describe(wire: &ReasoningWire) -> String {
        if wire.fields.is_empty() {
            return "always reasons (nothing sent)".into();
        }
        Value::Object(wire.fields.clone()).to_string()
    }
}

/// What Claude refuses with thinking on, in Bedrock's words. Source: the extended-thinking
/// guide ("Thinking isn't compatible with temperature, top_p, or top_k modifications or forced
/// tool use") and the errors Bedrock returns for each.
fn anthropic_constraints(
    request: &GenerateRequest,
    unsent: &BTreeSet<SamplingParameter>,
) -> Result<(), Refusal> {
    let sent = |p: SamplingParameter| !unsent.contains(&p);
    if sent(SamplingParameter::Temperature)
        && request.inference.temperature.is_some_and(|t| t != 1.0)
    {
        return Err((
            "inference.temperature",
            "temperature may only be set to 1 when thinking is enabled".into(),
        ));
    }
    if sent(SamplingParameter::TopP) && request.inference.top_p.is_some_and(|p| p < 0.95) {
        return Err((
            "inference.top_p",
            "top_p must be at least 0.95 (or unset) when thinking is enabled".into(),
        ));
    }
    if matches!(
        request.tool_choice,
        Some(ToolChoice::Any) | Some(ToolChoice::Tool(_))
    ) {
        return Err((
            "tool_choice",
            "Thinking may not be enabled when tool_choice forces tool use.".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(adaptive: bool) -> ReasoningConfig {
        ReasoningConfig {
            format: ReasoningFormat::Anthropic,
            efforts: [
                ReasoningEffort::Low,
                ReasoningEffort::Medium,
                ReasoningEffort::High,
            ]
            .into(),
            min_budget_tokens: 1024,
            effort_budgets: [
                (ReasoningEffort::Low, 1024),
                (ReasoningEffort::Medium, 4096),
                (ReasoningEffort::High, 16384),
                (ReasoningEffort::Max, 32000),
            ]
            .into(),
            adaptive,
            adaptive_only: false,
            field: None,
            summary: None,
        }
    }

    #[test]
    fn claude_takes_a_budget_or_an_effort_as_one() {
        let req = GenerateRequest::user("x").max_tokens(20_000);
        let w = claude(false)
            .wire(&req, &Reasoning::budget(2048), 1000)
            .unwrap();
        assert_eq!(
            w.fields["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(w.max_tokens, None);
        let w = claude(false)
            .wire(&req, &Reasoning::effort(ReasoningEffort::High), 1000)
            .unwrap();
        assert_eq!(w.fields["thinking"]["budget_tokens"], 16384);
        // Max is above the efforts listed: sent as high.
        let w = claude(false)
            .wire(&req, &Reasoning::effort(ReasoningEffort::Max), 1000)
            .unwrap();
        assert_eq!(w.fields["thinking"]["budget_tokens"], 16384);
        let no_max = GenerateRequest::user("x");
        let w = claude(false)
            .wire(&no_max, &Reasoning::budget(2048), 1000)
            .unwrap();
        assert_eq!(w.max_tokens, Some(3048));
    }

    #[test]
    fn adaptive_claude_takes_the_effort_word() {
        let req = GenerateRequest::user("x");
        let w = claude(true)
            .wire(&req, &Reasoning::effort(ReasoningEffort::Low), 1000)
            .unwrap();
        assert_eq!(w.fields["thinking"], json!({"type": "adaptive"}));
        assert_eq!(w.fields["output_config"], json!({"effort": "low"}));
        let mut only = claude(true);
        only.adaptive_only = true;
        let w = only.wire(&req, &Reasoning::budget(5000), 1000).unwrap();
        assert_eq!(w.fields["output_config"], json!({"effort": "high"}));
    }

    #[test]
    fn what_claude_refuses_with_thinking_is_named() {
        let c = claude(false);
        let r = Reasoning::budget(2048);
        let refuse = |req: GenerateRequest, field: &str| {
            let (f, why) = c.wire(&req, &r, 1000).unwrap_err();
            assert_eq!(f, field, "{why}");
        };
        refuse(
            GenerateRequest::user("x").max_tokens(2048),
            "reasoning.budget_tokens",
        );
        refuse(
            GenerateRequest::user("x").temperature(0.2),
            "inference.temperature",
        );
        let forced = GenerateRequest::user("x")
            .tool(crate::types::Tool::new("t", "T", json!({"type": "object"})))
            .tool_choice(ToolChoice::Any);
        refuse(forced, "tool_choice");
        let small = c
            .wire(&GenerateRequest::user("x"), &Reasoning::budget(512), 1000)
            .unwrap_err();
        assert!(
            small.1.contains("greater than or equal to 1024"),
            "{}",
            small.1
        );
    }

    #[test]
    fn nova_and_fields_take_a_word_and_budgets_become_words() {
        let nova = ReasoningConfig {
            format: ReasoningFormat::Nova,
            ..claude(false)
        };
        let req = GenerateRequest::user("x");
        let w = nova.wire(&req, &Reasoning::budget(3000), 1000).unwrap();
        assert_eq!(
            w.fields["reasoningConfig"],
            json!({"type": "enabled", "maxReasoningEffort": "medium"})
        );
        let w = nova
            .wire(&req, &Reasoning::effort(ReasoningEffort::Max), 1000)
            .unwrap();
        assert_eq!(w.fields["reasoningConfig"]["maxReasoningEffort"], "high");
        let field = ReasoningConfig {
            format: ReasoningFormat::Field,
            field: Some("reasoning_effort".into()),
            ..claude(false)
        };
        let w = field
            .wire(&req, &Reasoning::effort(ReasoningEffort::Low), 1000)
            .unwrap();
        assert_eq!(w.fields["reasoning_effort"], "low");
        assert!(
            ReasoningConfig {
                field: None,
                ..field.clone()
            }
            .validate()
            .is_err()
        );
    }
}
