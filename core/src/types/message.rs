//! A conversation's content: messages and their blocks (text, images, documents, tool use and
//! results, reasoning, cache points), system blocks and tools.

use serde::{Deserialize, Serialize};

use super::{
    CitationsContent, GuardContent, Media, MediaSource, ReasoningBlock, SearchResult, ToolReference,
};

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
    pub(super) fn name_problem(&self) -> Option<&'static str> {
        let n = self.name.chars().count();
        if n == 0 || n > 200 {
            return Some("a document's name must be 1 to 200 characters");
        }
        let allowed = |c: char| c.is_alphanumeric() || c.is_whitespace() || "-()[]".contains(c);
        if !self.name.chars().all(allowed) {
            return Some(
                "a document's name may hold only letters, digits, spaces, hyphens, parentheses and square brackets",
            );
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

/// Cache lifetimes Bedrock offers, shortest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes (`5m`), Converse's default.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Thirty minutes (`30m`): the one lifetime of the OpenAI-compatible Responses API's
    /// breakpoints (GPT-5.6 and later, `prompt_cache_options.ttl`).
    #[serde(rename = "30m")]
    ThirtyMinutes,
    /// One hour (`1h`), on models whose `prompt_cache.ttls` list it.
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// How long an entry written with it lives without a hit.
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_secs(match self {
            CacheTtl::FiveMinutes => 300,
            CacheTtl::ThirtyMinutes => 1800,
            CacheTtl::OneHour => 3600,
        })
    }

    /// Its spelling on the wire (`5m`, `30m`, `1h`).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::ThirtyMinutes => "30m",
            CacheTtl::OneHour => "1h",
        }
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
            with = "crate::types::base64_bytes::option"
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
            with = "crate::types::base64_bytes::option"
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
