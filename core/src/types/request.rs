//! What a caller asks for: [`GenerateRequest`], its builder and the estimates made of it.
//! The conversation's content is in `message.rs`, the SLO vocabulary in `slo.rs`, the checks
//! of a request in `validate.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    CachePoint, ContentBlock, GuardContent, Guardrail, Message, ModelFields, OutputFormat,
    Reasoning, Residency, Role, ServiceTier, Slo, SloClass, SystemBlock, Tool, ToolChoice,
    ToolResultContent,
};

/// One model call: the conversation, the model or family, and the SLO it must meet.
///
/// ```
/// use laneway::{GenerateRequest, SloClass};
/// let req = GenerateRequest::user("Summarise this ticket in one line.")
///     .family("nova")
///     .system("You are a concise support assistant.")
///     .max_tokens(200)
///     .slo_class(SloClass::Interactive);
/// assert_eq!(req.messages.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateRequest {
    /// Which model: a concrete id, a family, or the configuration's default.
    #[serde(default)]
    pub model: ModelRef,
    /// The conversation, starting with a user message.
    pub messages: Vec<Message>,
    /// System instructions (and cache checkpoints between them).
    #[serde(default)]
    pub system: Vec<SystemBlock>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// How the model must use the tools; unset lets it decide.
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// Sampling and length parameters.
    #[serde(default)]
    pub inference: InferenceParams,
    /// The service level this call must meet.
    #[serde(default)]
    pub slo: Slo,
    /// Groups calls into one task, for cost per task.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Where the request may be processed.
    #[serde(default)]
    pub residency: Option<Residency>,
    /// Forces a service tier instead of the one the SLO class maps to.
    #[serde(default)]
    pub tier: Option<ServiceTier>,
    /// When a stream breaks after text was delivered, continue on the next target by sending
    /// the delivered text back as the start of the assistant's turn (a `Continued` event marks
    /// the seam). Off: the stream ends with `StreamInterrupted`.
    #[serde(default)]
    pub continue_on_interrupt: bool,
    /// Automatic prompt-cache checkpoints, or none. Checkpoints placed in the request itself are
    /// kept (and checked) either way.
    #[serde(default)]
    pub cache: CacheMode,
    /// For a family: the weakest variant the plan may pick (the classifier may pick a stronger
    /// one, never a weaker one, and failover only steps up).
    #[serde(default)]
    pub min_variant: Option<String>,
    /// Reasoning (extended thinking) asked of the model; unset, the SLO class's default from
    /// `[slo_reasoning]`, if any, for a model that reasons.
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    /// The shape the answer's text must take (structured output).
    #[serde(default)]
    pub output_format: Option<OutputFormat>,
    /// Fields written for one model, sent only to it.
    #[serde(default)]
    pub model_fields: Option<ModelFields>,
    /// Key-value pairs Bedrock records with the call in its invocation logs
    /// (`requestMetadata`).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// A Bedrock guardrail to apply (`guardrailConfig`).
    #[serde(default)]
    pub guardrail: Option<Guardrail>,
}

/// Whether Laneway places prompt-cache checkpoints for a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Where the expected reuse pays for the cache write.
    #[default]
    Auto,
    /// Never (pinned checkpoints in the request still go).
    Off,
}

/// Which model serves a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRef {
    /// The configuration's `default_model`.
    #[default]
    Default,
    /// A configured model: a Bedrock model id (`amazon.nova-lite-v1:0`), an inference-profile id
    /// (`us.amazon.nova-lite-v1:0`, which pins that profile), or a SageMaker model's name.
    Model(String),
    /// A configured family; the plan picks the variant.
    Family(String),
}

/// Sampling and length parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceParams {
    /// Most output tokens; signed so that a negative value from a binding is reported, not
    /// wrapped.
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Sampling temperature (finite, at least 0); unset, the model's default.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Nucleus sampling: the probability mass sampled from, in (0, 1]; unset, the model's
    /// default.
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Sequences that end the answer where the model generates them; empty, none.
    #[serde(default)]
    pub stop_sequences: Vec<String>,
}

impl GenerateRequest {
    /// A request with one user message, for the configuration's default model.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(vec![Message::user(text)])
    }

    /// A request with a whole conversation.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            model: ModelRef::Default,
            messages,
            system: Vec::new(),
            tools: Vec::new(),
            tool_choice: None,
            inference: InferenceParams::default(),
            slo: Slo::default(),
            task_id: None,
            residency: None,
            tier: None,
            continue_on_interrupt: false,
            cache: CacheMode::Auto,
            min_variant: None,
            reasoning: None,
            output_format: None,
            model_fields: None,
            metadata: BTreeMap::new(),
            guardrail: None,
        }
    }

    /// Stops the answer at any of these sequences.
    ///
    /// ```
    /// let r = laneway::GenerateRequest::user("Count").stop_sequences(["5", "five"]);
    /// assert_eq!(r.inference.stop_sequences, ["5", "five"]);
    /// ```
    pub fn stop_sequences(mut self, stops: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.inference.stop_sequences = stops.into_iter().map(Into::into).collect();
        self
    }

    /// Sends to this model, profile or SageMaker model name.
    pub fn model(mut self, id: impl Into<String>) -> Self {
        self.model = ModelRef::Model(id.into());
        self
    }
    /// Sends to a variant of this family.
    pub fn family(mut self, name: impl Into<String>) -> Self {
        self.model = ModelRef::Family(name.into());
        self
    }
    /// For a family: never picks a variant weaker than this one.
    pub fn min_variant(mut self, variant: impl Into<String>) -> Self {
        self.min_variant = Some(variant.into());
        self
    }
    /// The text the complexity classifier reads: the text of the last user message (the turn
    /// being answered).
    pub fn classification_text(&self) -> String {
        let last_user = self.messages.iter().rev().find(|m| m.role == Role::User);
        let mut out = String::new();
        for b in last_user.map(|m| m.content.as_slice()).unwrap_or_default() {
            if let ContentBlock::Text(t) = b {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
        }
        out
    }
    /// Appends a system text block.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system.push(SystemBlock::Text(text.into()));
        self
    }
    /// Appends a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }
    /// Caps the answer's length.
    pub fn max_tokens(mut self, n: i64) -> Self {
        self.inference.max_tokens = Some(n);
        self
    }
    /// Sets the sampling temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.inference.temperature = Some(t);
        self
    }
    /// Sets nucleus sampling's `top_p`.
    pub fn top_p(mut self, p: f32) -> Self {
        self.inference.top_p = Some(p);
        self
    }
    /// Sets the SLO class.
    pub fn slo_class(mut self, class: SloClass) -> Self {
        self.slo.class = class;
        self
    }
    /// Sets the time to first token the caller wants (also the base of each attempt's
    /// first-token limit).
    pub fn ttft_target(mut self, target: Duration) -> Self {
        self.slo.ttft_target = Some(target);
        self
    }
    /// When the whole answer must be complete, from the call's start; the router stops every
    /// attempt and wait by then.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.slo.deadline = Some(deadline);
        self
    }
    /// Sets the whole SLO.
    pub fn slo(mut self, slo: Slo) -> Self {
        self.slo = slo;
        self
    }
    /// Tags the call with a task, for cost per task.
    pub fn task(mut self, id: impl Into<String>) -> Self {
        self.task_id = Some(id.into());
        self
    }
    /// Restricts where the call may be processed.
    pub fn residency(mut self, residency: Residency) -> Self {
        self.residency = Some(residency);
        self
    }
    /// Sets automatic prompt caching on or off for this call.
    pub fn cache(mut self, mode: CacheMode) -> Self {
        self.cache = mode;
        self
    }
    /// Continues a broken stream on the next target instead of ending it.
    pub fn continue_on_interrupt(mut self, on: bool) -> Self {
        self.continue_on_interrupt = on;
        self
    }
    /// Forces a service tier.
    pub fn tier(mut self, tier: ServiceTier) -> Self {
        self.tier = Some(tier);
        self
    }
    /// Asks the model to reason before it answers.
    pub fn reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning = Some(reasoning);
        self
    }
    /// Asks for an answer in this shape (structured output).
    pub fn output_format(mut self, format: OutputFormat) -> Self {
        self.output_format = Some(format);
        self
    }
    /// Sends these fields to the model they were written for, and only to it.
    pub fn model_fields(mut self, fields: ModelFields) -> Self {
        self.model_fields = Some(fields);
        self
    }
    /// Applies a Bedrock guardrail to the call.
    pub fn guardrail(mut self, guardrail: Guardrail) -> Self {
        self.guardrail = Some(guardrail);
        self
    }
    /// Adds a pair to the request metadata Bedrock logs with the call.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
    /// Whether the conversation carries reasoning blocks from earlier turns.
    pub fn carries_reasoning(&self) -> bool {
        self.messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|b| matches!(b, ContentBlock::Reasoning(_)))
    }

    /// Input tokens estimated before sending: a quarter of the characters of every text, tool
    /// schema and tool input, rounded up, plus a fixed allowance per image. Within about 25%
    /// for English prose on current tokenizers; used for reservations and deadlines, never
    /// billed.
    pub fn estimated_input_tokens(&self) -> u64 {
        const IMAGE_TOKENS: usize = 1_600;
        let mut chars = 0usize;
        for b in &self.system {
            match b {
                SystemBlock::Text(t)
                | SystemBlock::GuardContent(GuardContent::Text { text: t, .. }) => {
                    chars += t.chars().count()
                }
                _ => {}
            }
        }
        for t in &self.tools {
            if let Tool::Spec(s) = t {
                chars += s.name.len()
                    + s.description.as_deref().map_or(0, str::len)
                    + s.input_schema.to_string().len();
            }
        }
        for m in &self.messages {
            for b in &m.content {
                chars += match b {
                    ContentBlock::Text(t) => t.chars().count(),
                    ContentBlock::Image(_) => IMAGE_TOKENS * 4,
                    ContentBlock::Document(d) => d.estimated_chars(),
                    ContentBlock::ToolUse(t) => t.name.len() + t.input.to_string().len(),
                    ContentBlock::ToolResult(r) => r
                        .content
                        .iter()
                        .map(|c| match c {
                            ToolResultContent::Image(_) => IMAGE_TOKENS * 4,
                            ToolResultContent::Document(d) => d.estimated_chars(),
                            other => other.text().map_or(0, |t| t.chars().count()),
                        })
                        .sum(),
                    ContentBlock::CachePoint(_) => 0,
                    ContentBlock::Reasoning(r) => r.text().chars().count(),
                    ContentBlock::GuardContent(GuardContent::Text { text, .. }) => {
                        text.chars().count()
                    }
                    ContentBlock::GuardContent(GuardContent::Image(_)) => IMAGE_TOKENS * 4,
                    // An estimate only: media are priced by the service, per second or frame.
                    ContentBlock::Audio(_) | ContentBlock::Video(_) => IMAGE_TOKENS * 4,
                    ContentBlock::SearchResult(r) => {
                        r.title.len() + r.content.iter().map(String::len).sum::<usize>()
                    }
                    ContentBlock::Citations(c) => c.content.iter().map(String::len).sum(),
                    ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_) => 0,
                };
            }
        }
        chars.div_ceil(4) as u64
    }

    /// The cache checkpoints the caller placed, in prompt order (tools, system, messages).
    pub fn pinned_cache_points(&self) -> Vec<CachePoint> {
        let tools = self.tools.iter().filter_map(|t| match t {
            Tool::CachePoint(c) => Some(*c),
            Tool::Spec(_) => None,
        });
        let system = self.system.iter().filter_map(|b| match b {
            SystemBlock::CachePoint(c) => Some(*c),
            _ => None,
        });
        let messages = self
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::CachePoint(c) => Some(*c),
                _ => None,
            });
        tools.chain(system).chain(messages).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{CacheTtl, Geography};

    #[test]
    fn requests_round_trip_through_json() {
        let req = GenerateRequest::user("hi")
            .family("nova")
            .slo(Slo {
                class: SloClass::Interactive,
                ttft_target: Some(Duration::from_millis(500)),
                deadline: None,
            })
            .residency(Residency::Geography(Geography::new("eu").unwrap()));
        let json = serde_json::to_string(&req).unwrap();
        let back: GenerateRequest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn pinned_cache_points_are_in_prompt_order() {
        let mut req = GenerateRequest::user("hi");
        req.system.push(SystemBlock::CachePoint(CachePoint {
            ttl: Some(CacheTtl::FiveMinutes),
        }));
        req.tools.push(Tool::CachePoint(CachePoint {
            ttl: Some(CacheTtl::OneHour),
        }));
        let pts = req.pinned_cache_points();
        assert_eq!(pts[0].ttl, Some(CacheTtl::OneHour));
        assert_eq!(pts[1].ttl, Some(CacheTtl::FiveMinutes));
    }
}
