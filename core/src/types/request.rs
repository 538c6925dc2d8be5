//! What a caller asks for: [`GenerateRequest`] and its parts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::content::{CitationsContent, Media, MediaSource, SearchResult, ToolReference};
use super::error::{Error, Result};
use super::fields::{GuardContent, Guardrail, ModelFields, OutputFormat};
use super::geography::Geography;
use super::reasoning::{Reasoning, ReasoningBlock};

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

/// A conversation turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Who speaks it.
    pub role: Role,
    /// Its blocks, in order (at least one).
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user turn with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text(text.into())],
        }
    }
    /// An assistant turn with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text(text.into())],
        }
    }
}

/// Who speaks a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The caller's side: prompts and tool results.
    User,
    /// The model's side: answers and tool calls.
    Assistant,
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text (not empty).
    Text(String),
    /// An image for the model to see.
    Image(Image),
    /// A document (PDF, Word, Excel, HTML, text, ...) for the model to read, in a user turn.
    Document(Document),
    /// A tool call the assistant made (echoed back in later turns).
    ToolUse(ToolUse),
    /// The result of a tool call, sent in a user turn.
    ToolResult(ToolResult),
    /// A prompt-cache checkpoint: everything before it may be cached.
    CachePoint(CachePoint),
    /// The model's reasoning from an earlier turn, sent back unchanged in the assistant
    /// message it came in.
    Reasoning(ReasoningBlock),
    /// Content for the request's guardrail to evaluate (the model reads it too).
    GuardContent(GuardContent),
    /// Audio for the model to hear, in a user turn.
    Audio(Media),
    /// Video for the model to watch, in a user turn.
    Video(Media),
    /// A search result for the model to read (and cite, if enabled).
    SearchResult(SearchResult),
    /// Text with its citations, as the model generated it in an earlier turn.
    Citations(CitationsContent),
    /// A tool of the request's tools made available from this point of the conversation.
    ToolAddition(ToolReference),
    /// A tool withdrawn from this point of the conversation.
    ToolRemoval(ToolReference),
}

/// An image: its bytes, or an object in S3. In the schema, `{ format, bytes }` or
/// `{ format, s3: { uri, bucket_owner } }`.
///
/// ```
/// use laneway::{Image, ImageFormat, MediaSource};
/// let shot: Image = serde_json::from_value(serde_json::json!({ "format": "png", "s3": { "uri": "s3://shots/a.png" } })).unwrap();
/// assert!(matches!(shot.source, MediaSource::S3 { .. }));
/// assert_eq!(Image::inline(ImageFormat::Png, vec![1, 2]).bytes(), Some(&[1u8, 2][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "source_wire::ImageWire", into = "source_wire::ImageWire")]
pub struct Image {
    /// Its encoding.
    pub format: ImageFormat,
    /// Its bytes inline, or an object in S3 (in the schema, `bytes` or `s3`).
    pub source: MediaSource,
}

impl Image {
    /// An image sent inline.
    pub fn inline(format: ImageFormat, bytes: Vec<u8>) -> Self {
        Self {
            format,
            source: MediaSource::Bytes(bytes),
        }
    }

    /// Its bytes, when they are sent inline.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.source.bytes()
    }
}

/// Image encodings Bedrock accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF.
    Gif,
    /// WebP.
    Webp,
}

/// A document, sent inline. Bedrock reads at most [`Document::MAX_PER_REQUEST`] of them a
/// request, each at most [`Document::MAX_BYTES`]; its name may hold letters, digits, single
/// spaces, hyphens, parentheses and square brackets (1 to 200 characters). Sources: the
/// `DocumentBlock` API reference (docs.aws.amazon.com/bedrock/latest/APIReference/
/// API_runtime_DocumentBlock.html) and the Converse request limits in the user guide
/// (conversation-inference-call.html). SageMaker endpoints take no documents: extract the
/// text first.
///
/// ```
/// use laneway::{ContentBlock, Document, DocumentFormat, GenerateRequest, Message, Role};
/// let contract = Document::inline(DocumentFormat::Pdf, "contract (v2)", b"%PDF-1.7".to_vec());
/// let request = GenerateRequest::new(vec![Message {
///     role: Role::User,
///     content: vec![ContentBlock::Document(contract), ContentBlock::Text("Summarise it".into())],
/// }]);
/// assert!(request.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "source_wire::DocumentWire",
    into = "source_wire::DocumentWire"
)]
pub struct Document {
    /// Its file format.
    pub format: DocumentFormat,
    /// A neutral name: the model sees it, so it should not read as an instruction.
    pub name: String,
    /// Its bytes inline, or an object in S3 (in the schema, `bytes` or `s3`).
    pub source: MediaSource,
    /// What the document is, for the model (`context`).
    pub context: Option<String>,
    /// Whether the model may cite it (its answer then carries `OutputBlock::Citations`).
    pub citations: bool,
}

impl Document {
    /// A document sent inline, without context or citations.
    pub fn inline(format: DocumentFormat, name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            format,
            name: name.into(),
            source: MediaSource::Bytes(bytes),
            context: None,
            citations: false,
        }
    }

    /// Its bytes, when they are sent inline.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.source.bytes()
    }

    /// Bedrock's limit on one document's size: 4.5 MB.
    pub const MAX_BYTES: usize = 4_500_000;
    /// Bedrock's limit on documents in one request.
    pub const MAX_PER_REQUEST: usize = 5;

    /// Why the name is refused, if it is.
    fn name_problem(&self) -> Option<&'static str> {
        let n = self.name.chars().count();
        if n == 0 || n > 200 {
            return Some("a document's name must be 1 to 200 characters");
        }
        let allowed = |c: char| c.is_alphanumeric() || c.is_whitespace() || "-()[]".contains(c);
        if !self.name.chars().all(allowed) {
            return Some("a document's name may hold only letters, digits, spaces, hyphens, parentheses and square brackets");
        }
        let mut previous_space = false;
        for c in self.name.chars() {
            if c.is_whitespace() && previous_space {
                return Some("a document's name must not hold two whitespace characters in a row");
            }
            previous_space = c.is_whitespace();
        }
        None
    }

    /// Characters of text the model will likely read from it (for estimates only): the
    /// bytes of a text format, a quarter of a binary one's; for one in S3, whose size Laneway
    /// does not read, the size limit's share.
    pub(crate) fn estimated_chars(&self) -> usize {
        let len = self.bytes().map_or(Self::MAX_BYTES / 16, <[u8]>::len);
        match self.format {
            DocumentFormat::Csv
            | DocumentFormat::Html
            | DocumentFormat::Txt
            | DocumentFormat::Md => len,
            _ => len / 4,
        }
    }
}

/// Document formats Bedrock accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentFormat {
    /// PDF.
    Pdf,
    /// Comma-separated values.
    Csv,
    /// Word, the older binary format (`.doc`).
    Doc,
    /// Word (`.docx`).
    Docx,
    /// Excel, the older binary format (`.xls`).
    Xls,
    /// Excel (`.xlsx`).
    Xlsx,
    /// HTML.
    Html,
    /// Plain text.
    Txt,
    /// Markdown.
    Md,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolUse {
    /// The call's id, which the [`ToolResult`] answering it names in `tool_use_id`.
    pub id: String,
    /// The name of the tool called, as in the request's tools.
    pub name: String,
    /// The input the model gave the tool, as JSON.
    pub input: serde_json::Value,
}

/// The outcome of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    /// The id of the [`ToolUse`] this answers.
    pub tool_use_id: String,
    /// What the tool returned, in pieces.
    pub content: Vec<ToolResultContent>,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
}

/// A piece of a tool result: text, JSON, or what a tool may hand back beside them (an image
/// such as a screenshot, a document, a video, search results the model may cite). Bedrock
/// takes every kind; SageMaker containers take text and JSON, and refuse the others by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultContent {
    /// Text.
    Text(String),
    /// A JSON value.
    Json(serde_json::Value),
    /// An image, such as a screenshot.
    Image(Image),
    /// A document.
    Document(Document),
    /// A video.
    Video(Media),
    /// A search result the model may read and cite.
    SearchResult(SearchResult),
}

impl ToolResultContent {
    /// Its text, where it has one (text, JSON, a search result's passages); `None` for media.
    pub fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            ToolResultContent::Text(t) => Some(t.as_str().into()),
            ToolResultContent::Json(v) => Some(v.to_string().into()),
            ToolResultContent::SearchResult(r) => Some(r.content.concat().into()),
            ToolResultContent::Image(_)
            | ToolResultContent::Document(_)
            | ToolResultContent::Video(_) => None,
        }
    }

    /// The kind's name, as the schema spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolResultContent::Text(_) => "text",
            ToolResultContent::Json(_) => "json",
            ToolResultContent::Image(_) => "image",
            ToolResultContent::Document(_) => "document",
            ToolResultContent::Video(_) => "video",
            ToolResultContent::SearchResult(_) => "search_result",
        }
    }
}

/// A system block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemBlock {
    /// System instructions.
    Text(String),
    /// A prompt-cache checkpoint: everything before it may be cached.
    CachePoint(CachePoint),
    /// System text for the request's guardrail to evaluate.
    GuardContent(GuardContent),
}

/// A tool definition, or a cache checkpoint after the tools before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// A tool the model may call.
    Spec(ToolSpec),
    /// A prompt-cache checkpoint: the tools before it may be cached.
    CachePoint(CachePoint),
}

impl Tool {
    /// A tool with a JSON-schema input.
    ///
    /// ```
    /// let t = laneway::Tool::new("get_weather", "Weather for a city",
    ///     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}));
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: serde_json::Value,
    ) -> Self {
        Tool::Spec(ToolSpec {
            name: name.into(),
            description: Some(description.into()),
            input_schema,
            strict: false,
        })
    }
}

/// A tool's name, description and JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name the model calls the tool by (not empty).
    pub name: String,
    /// What the tool does, for the model to decide when to call it.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON schema (an object) the tool's input conforms to.
    pub input_schema: serde_json::Value,
    /// The model's input to this tool must conform to the schema exactly (strict tool use).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

/// How the model must use tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must call this tool.
    Tool(String),
}

/// A prompt-cache checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePoint {
    /// How long the cached prefix lives; unset is the service default (5 minutes).
    #[serde(default)]
    pub ttl: Option<CacheTtl>,
}

/// Cache lifetimes Bedrock offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes (`5m`), the service's default.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour (`1h`), on models whose `prompt_cache.ttls` list it.
    #[serde(rename = "1h")]
    OneHour,
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

/// The service level a call must meet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// The call's class: its service tier, time limits and default reasoning follow from it.
    #[serde(default)]
    pub class: SloClass,
    /// Time to first token the caller wants.
    #[serde(default, with = "super::units::serde_opt_millis")]
    pub ttft_target: Option<Duration>,
    /// When the whole answer must be complete, from the call's start.
    #[serde(default, with = "super::units::serde_opt_millis")]
    pub deadline: Option<Duration>,
}

/// Service-level classes, from most to least urgent.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SloClass {
    /// A person is waiting at the screen.
    Interactive,
    /// Ordinary work.
    #[default]
    Standard,
    /// Work that can wait.
    Background,
    /// Bulk offline work.
    Batch,
}

impl SloClass {
    /// All classes, most urgent first.
    pub const ALL: [SloClass; 4] = [
        SloClass::Interactive,
        SloClass::Standard,
        SloClass::Background,
        SloClass::Batch,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SloClass::Interactive => "interactive",
            SloClass::Standard => "standard",
            SloClass::Background => "background",
            SloClass::Batch => "batch",
        }
    }
}

impl std::fmt::Display for SloClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bedrock service tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceTier {
    /// Served first, at a premium.
    Priority,
    /// On-demand (`default` on the wire).
    #[serde(alias = "default")]
    Standard,
    /// Lower priority under load, discounted.
    Flex,
    /// Provisioned tokens per minute.
    Reserved,
}

impl ServiceTier {
    /// Every tier, fastest first.
    pub const ALL: [ServiceTier; 4] = [
        ServiceTier::Priority,
        ServiceTier::Standard,
        ServiceTier::Flex,
        ServiceTier::Reserved,
    ];

    /// The value of `serviceTier.type` on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            ServiceTier::Priority => "priority",
            ServiceTier::Standard => "default",
            ServiceTier::Flex => "flex",
            ServiceTier::Reserved => "reserved",
        }
    }
    /// The tier of a wire name.
    pub fn from_wire(name: &str) -> Option<Self> {
        match name {
            "priority" => Some(ServiceTier::Priority),
            "default" | "standard" => Some(ServiceTier::Standard),
            "flex" => Some(ServiceTier::Flex),
            "reserved" => Some(ServiceTier::Reserved),
            _ => None,
        }
    }
}

impl ServiceTier {
    /// The snake_case name, as in configuration and metrics (`standard`, not the wire's
    /// `default`).
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceTier::Standard => "standard",
            other => other.wire_name(),
        }
    }
}

impl std::fmt::Display for ServiceTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a request may be processed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Residency {
    /// Only regions of this geography, and its geographic profile; never a global profile.
    Geography(Geography),
    /// Only these regions, and no cross-region profile.
    Regions(Vec<String>),
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

    /// Checks what can be checked without a model's capabilities: a non-empty conversation that
    /// starts with a user turn, no empty turns, sane parameters and SLO.
    pub fn validate(&self) -> Result<()> {
        if self.messages.is_empty() {
            return Err(Error::invalid("messages", "must hold at least one message"));
        }
        if self.messages[0].role != Role::User {
            return Err(Error::invalid(
                "messages[0].role",
                "the conversation must start with a user message",
            ));
        }
        let mut documents = 0;
        for (i, m) in self.messages.iter().enumerate() {
            if m.content.is_empty() {
                return Err(Error::invalid(
                    format!("messages[{i}].content"),
                    "must hold at least one block",
                ));
            }
            for (j, b) in m.content.iter().enumerate() {
                match b {
                    ContentBlock::Text(t) if t.is_empty() => {
                        return Err(Error::invalid(
                            format!("messages[{i}].content[{j}]"),
                            "text must not be empty",
                        ))
                    }
                    ContentBlock::ToolUse(_) if m.role != Role::Assistant => {
                        return Err(Error::invalid(
                            format!("messages[{i}].content[{j}]"),
                            "tool_use belongs in an assistant message",
                        ))
                    }
                    ContentBlock::Audio(media) | ContentBlock::Video(media) => {
                        let (kind, formats) = match b {
                            ContentBlock::Audio(_) => ("audio", Media::AUDIO_FORMATS),
                            _ => ("video", Media::VIDEO_FORMATS),
                        };
                        let field = || format!("messages[{i}].content[{j}].{kind}");
                        if m.role != Role::User {
                            return Err(Error::invalid(
                                field(),
                                format!("{kind} belongs in a user message"),
                            ));
                        }
                        if !formats.contains(&media.format.as_str()) {
                            return Err(Error::invalid(
                                format!("{}.format", field()),
                                format!("{:?}: one of {}", media.format, formats.join(", ")),
                            ));
                        }
                        if let super::content::MediaSource::S3 { uri, .. } = &media.source {
                            if !uri.starts_with("s3://") || uri.len() > 1024 {
                                return Err(Error::invalid(
                                    format!("{}.source.uri", field()),
                                    "an s3:// URI of at most 1,024 characters",
                                ));
                            }
                        }
                    }
                    ContentBlock::Reasoning(_) if m.role != Role::Assistant => {
                        return Err(Error::invalid(
                            format!("messages[{i}].content[{j}]"),
                            "reasoning belongs in the assistant message it came in",
                        ))
                    }
                    ContentBlock::ToolResult(_) if m.role != Role::User => {
                        return Err(Error::invalid(
                            format!("messages[{i}].content[{j}]"),
                            "tool_result belongs in a user message",
                        ))
                    }
                    ContentBlock::Document(d) => {
                        let field = || format!("messages[{i}].content[{j}].document");
                        if m.role != Role::User {
                            return Err(Error::invalid(
                                field(),
                                "a document belongs in a user message",
                            ));
                        }
                        if let Some(problem) = d.name_problem() {
                            return Err(Error::invalid(format!("{}.name", field()), problem));
                        }
                        if let Some(b) = d.bytes() {
                            if b.is_empty() || b.len() > Document::MAX_BYTES {
                                return Err(Error::invalid(
                                    format!("{}.bytes", field()),
                                    format!(
                                        "{} bytes: a document must hold 1 to {} bytes",
                                        b.len(),
                                        Document::MAX_BYTES
                                    ),
                                ));
                            }
                        }
                        documents += 1;
                        if documents > Document::MAX_PER_REQUEST {
                            return Err(Error::invalid(
                                field(),
                                format!(
                                    "at most {} documents in one request",
                                    Document::MAX_PER_REQUEST
                                ),
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
        let p = &self.inference;
        if let Some(n) = p.max_tokens {
            if n < 1 || n > i64::from(i32::MAX) {
                return Err(Error::invalid(
                    "inference.max_tokens",
                    format!("must be between 1 and {}, got {n}", i32::MAX),
                ));
            }
        }
        if let Some(t) = p.temperature {
            if !(t.is_finite() && t >= 0.0) {
                return Err(Error::invalid(
                    "inference.temperature",
                    format!("must be a finite number >= 0, got {t}"),
                ));
            }
        }
        if let Some(t) = p.top_p {
            if !(t > 0.0 && t <= 1.0) {
                return Err(Error::invalid(
                    "inference.top_p",
                    format!("must be in (0, 1], got {t}"),
                ));
            }
        }
        for (i, t) in self.tools.iter().enumerate() {
            if let Tool::Spec(s) = t {
                if s.name.is_empty() {
                    return Err(Error::invalid(
                        format!("tools[{i}].name"),
                        "must not be empty",
                    ));
                }
                if !s.input_schema.is_object() {
                    return Err(Error::invalid(
                        format!("tools[{i}].input_schema"),
                        "must be a JSON object (a JSON schema)",
                    ));
                }
            }
        }
        self.validate_extensions()?;
        if let Some(ToolChoice::Tool(name)) = &self.tool_choice {
            let known = self
                .tools
                .iter()
                .any(|t| matches!(t, Tool::Spec(s) if &s.name == name));
            if !known {
                return Err(Error::invalid(
                    "tool_choice",
                    format!("names tool {name:?}, which is not among the request's tools"),
                ));
            }
        }
        if self.tool_choice.is_some() && !self.tools.iter().any(|t| matches!(t, Tool::Spec(_))) {
            return Err(Error::invalid(
                "tool_choice",
                "is set but the request has no tools",
            ));
        }
        for (field, value) in [
            ("slo.ttft_target", self.slo.ttft_target),
            ("slo.deadline", self.slo.deadline),
        ] {
            if value.is_some_and(|d| d > super::units::MAX_DURATION) {
                return Err(Error::invalid(
                    field,
                    format!(
                        "must be at most {} ms (a year), got {:?}",
                        super::units::MAX_DURATION.as_millis(),
                        value.unwrap_or_default()
                    ),
                ));
            }
        }
        if self.slo.deadline.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid("slo.deadline", "must be longer than 0 ms"));
        }
        if let (Some(ttft), Some(deadline)) = (self.slo.ttft_target, self.slo.deadline) {
            if ttft > deadline {
                return Err(Error::invalid(
                    "slo",
                    format!("ttft_target {ttft:?} is later than the deadline {deadline:?}"),
                ));
            }
        }
        if let Some(Residency::Regions(r)) = &self.residency {
            if r.is_empty() {
                return Err(Error::invalid(
                    "residency.regions",
                    "must name at least one region",
                ));
            }
        }
        Ok(())
    }

    /// Reasoning, structured output, model fields and metadata, as far as they can be checked
    /// without a model: a positive budget, an object schema, JSON pointers, Bedrock's metadata
    /// limits.
    fn validate_extensions(&self) -> Result<()> {
        if let Some(r) = &self.reasoning {
            if r.budget_tokens == Some(0) {
                return Err(Error::invalid(
                    "reasoning.budget_tokens",
                    "must be at least 1",
                ));
            }
        }
        if let Some(format) = &self.output_format {
            let schema = format.schema();
            if schema.get("type").and_then(serde_json::Value::as_str) != Some("object") {
                return Err(Error::invalid(
                    "output_format.json_schema.schema",
                    "must be a JSON schema of \"type\": \"object\"",
                ));
            }
        }
        if let Some(fields) = &self.model_fields {
            for (i, p) in fields.response_paths.iter().enumerate() {
                if !p.starts_with('/') || p.len() > 256 {
                    return Err(Error::invalid(
                        format!("model_fields.response_paths[{i}]"),
                        format!("{p:?} is not a JSON pointer (\"/field\", at most 256 characters)"),
                    ));
                }
            }
        }
        if let Some(g) = &self.guardrail {
            g.validate()?;
        }
        let guarded = self
            .system
            .iter()
            .any(|b| matches!(b, SystemBlock::GuardContent(_)))
            || self
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .any(|b| matches!(b, ContentBlock::GuardContent(_)));
        if guarded && self.guardrail.is_none() {
            return Err(Error::invalid(
                "guardrail",
                "the request has guard_content blocks but no guardrail to evaluate them",
            ));
        }
        super::fields::validate_metadata(&self.metadata)
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

/// The schema's form of an image's or document's source: `bytes` or `s3`, exactly one.
mod source_wire {
    use serde::{Deserialize, Serialize};

    use super::{Document, DocumentFormat, Image, ImageFormat};
    use crate::types::MediaSource;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct S3 {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bucket_owner: Option<String>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ImageWire {
        format: ImageFormat,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "super::base64_bytes::option"
        )]
        bytes: Option<Vec<u8>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        s3: Option<S3>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DocumentWire {
        format: DocumentFormat,
        name: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "super::base64_bytes::option"
        )]
        bytes: Option<Vec<u8>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        s3: Option<S3>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        citations: bool,
    }

    fn source(bytes: Option<Vec<u8>>, s3: Option<S3>) -> Result<MediaSource, &'static str> {
        match (bytes, s3) {
            (Some(b), None) => Ok(MediaSource::Bytes(b)),
            (None, Some(S3 { uri, bucket_owner })) => Ok(MediaSource::S3 { uri, bucket_owner }),
            (Some(_), Some(_)) => Err("give `bytes` or `s3`, not both"),
            (None, None) => Err("missing its source: `bytes` (base64 text) or `s3` ({ uri })"),
        }
    }

    fn wire(source: MediaSource) -> (Option<Vec<u8>>, Option<S3>) {
        match source {
            MediaSource::Bytes(b) => (Some(b), None),
            MediaSource::S3 { uri, bucket_owner } => (None, Some(S3 { uri, bucket_owner })),
        }
    }

    impl TryFrom<ImageWire> for Image {
        type Error = &'static str;
        fn try_from(w: ImageWire) -> Result<Self, Self::Error> {
            Ok(Image {
                format: w.format,
                source: source(w.bytes, w.s3)?,
            })
        }
    }

    impl From<Image> for ImageWire {
        fn from(i: Image) -> Self {
            let (bytes, s3) = wire(i.source);
            ImageWire {
                format: i.format,
                bytes,
                s3,
            }
        }
    }

    impl TryFrom<DocumentWire> for Document {
        type Error = &'static str;
        fn try_from(w: DocumentWire) -> Result<Self, Self::Error> {
            Ok(Document {
                format: w.format,
                name: w.name,
                source: source(w.bytes, w.s3)?,
                context: w.context,
                citations: w.citations,
            })
        }
    }

    impl From<Document> for DocumentWire {
        fn from(d: Document) -> Self {
            let (bytes, s3) = wire(d.source);
            DocumentWire {
                format: d.format,
                name: d.name,
                bytes,
                s3,
                context: d.context,
                citations: d.citations,
            }
        }
    }
}

pub(super) mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
    }

    /// Base64 text, or raw bytes where the format has them (a Python `bytes` through
    /// pythonize, a byte string in CBOR or MessagePack).
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_any(Bytes)
    }

    struct Bytes;

    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("base64 text or bytes")
        }

        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Vec<u8>, E> {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(E::custom)
        }

        fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Vec<u8>, E> {
            Ok(b.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(b)
        }
    }

    /// The same for an optional field (`None` when absent).
    pub(crate) mod option {
        use serde::{Deserializer, Serializer};

        pub(crate) fn serialize<S: Serializer>(
            b: &Option<Vec<u8>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match b {
                Some(b) => super::serialize(b, s),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Vec<u8>>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }

    #[cfg(test)]
    mod tests {
        #[derive(serde::Deserialize)]
        struct Blob {
            #[serde(with = "super")]
            bytes: Vec<u8>,
        }

        #[test]
        fn base64_text_is_decoded_and_anything_else_is_named() {
            let blob: Blob = serde_json::from_str(r#"{"bytes": "JVBERg=="}"#).unwrap();
            assert_eq!(blob.bytes, b"%PDF");
            let e = serde_json::from_str::<Blob>(r#"{"bytes": 7}"#)
                .err()
                .unwrap();
            assert!(e.to_string().contains("base64 text or bytes"), "{e}");
            let e = serde_json::from_str::<Blob>(r#"{"bytes": "not base64!"}"#)
                .err()
                .unwrap();
            assert!(e.to_string().contains("Invalid"), "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_conversation_is_named() {
        let err = GenerateRequest::new(vec![]).validate().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidRequest);
        assert!(err.to_string().contains("messages"), "{err}");
    }

    #[test]
    fn negative_max_tokens_is_named() {
        let err = GenerateRequest::user("hi")
            .max_tokens(-3)
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("inference.max_tokens"), "{err}");
        assert!(err.to_string().contains("-3"), "{err}");
    }

    #[test]
    fn conversation_must_start_with_user() {
        let err = GenerateRequest::new(vec![Message::assistant("hi")])
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("messages[0].role"), "{err}");
    }

    #[test]
    fn tool_choice_must_name_a_known_tool() {
        let req = GenerateRequest::user("hi")
            .tool(Tool::new("a", "A", serde_json::json!({"type": "object"})))
            .tool_choice(ToolChoice::Tool("b".into()));
        assert!(req.validate().unwrap_err().to_string().contains("\"b\""));
    }

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
