//! Converse's other content blocks: audio and video, search results, citations, and tools
//! added or removed mid-conversation.

use serde::{Deserialize, Serialize};

/// Audio or video, inline or in S3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Media {
    /// The encoding, as Converse names it (`mp3`, `wav`, ... for audio; `mp4`, `mov`, ... for
    /// video).
    pub format: String,
    /// Its bytes inline, or an object in S3.
    pub source: MediaSource,
}

impl Media {
    /// Audio encodings Converse accepts (`AudioFormat`).
    pub const AUDIO_FORMATS: &'static [&'static str] = &[
        "mp3", "opus", "wav", "aac", "flac", "mp4", "ogg", "mkv", "mka", "x-aac", "m4a", "mpeg",
        "mpga", "pcm", "webm",
    ];
    /// Video encodings Converse accepts (`VideoFormat`).
    pub const VIDEO_FORMATS: &'static [&'static str] = &[
        "mkv", "mov", "mp4", "webm", "flv", "mpeg", "mpg", "wmv", "three_gp",
    ];
}

/// Where media comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaSource {
    /// The bytes, sent inline (base64 text when serialised).
    Bytes(#[serde(with = "super::base64_bytes")] Vec<u8>),
    /// An object in S3 (`s3://bucket/key`), with the bucket's owner when it is another account.
    S3 {
        /// The object's `s3://` URI.
        uri: String,
        /// The account id of the bucket's owner; `None`: the caller's own account.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bucket_owner: Option<String>,
    },
}

impl MediaSource {
    /// The bytes, when they are sent inline.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            MediaSource::Bytes(b) => Some(b),
            MediaSource::S3 { .. } => None,
        }
    }
}

/// A search result for the model to read and cite (`searchResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchResult {
    /// Where it came from (a URL, a document id).
    pub source: String,
    /// Its title, which the model sees.
    pub title: String,
    /// Its passages, each citable by index.
    pub content: Vec<String>,
    /// Whether the model may cite it.
    #[serde(default)]
    pub citations: bool,
}

/// Text the model generated with the sources it cites (`citationsContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitationsContent {
    /// The generated text, in pieces.
    #[serde(default)]
    pub content: Vec<String>,
    /// The sources the text cites.
    #[serde(default)]
    pub citations: Vec<Citation>,
}

/// One citation: the source and where in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Citation {
    /// The cited source's title, when the service gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Where the cited content came from, when the service gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The cited passages.
    #[serde(default)]
    pub source_content: Vec<String>,
    /// Where in the source the cited passages are, when the service says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<CitationLocation>,
}

/// Where a citation points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CitationLocation {
    /// Characters `start..end` of document `document_index`.
    DocumentChar(Span),
    /// Pages `start..end` of a document.
    DocumentPage(Span),
    /// Chunks `start..end` of a document given as chunks.
    DocumentChunk(Span),
    /// Passages `start..end` of search result `document_index`.
    SearchResult(Span),
    /// A web page (Nova's web grounding).
    Web {
        /// The cited page's URL, when the service gives it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// The cited page's domain, when the service gives it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        domain: Option<String>,
    },
}

/// A range in one document or search result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Span {
    /// Which document (or search result) of the request, in order.
    pub document_index: u32,
    /// Where the range starts: a character, page, chunk or passage index, as the location's
    /// kind says.
    pub start: u32,
    /// Where the range ends, in the same unit as `start`.
    pub end: u32,
}

/// A tool by reference (`toolAddition` / `toolRemoval` blocks, which change the tools
/// mid-conversation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolReference {
    /// The tool's name, as in the request's tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kind of tool (for MCP tools, with `server_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The MCP server that provides the tool, for MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}
