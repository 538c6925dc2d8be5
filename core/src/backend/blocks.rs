//! Converse's media, search-result, citation and tool-reference blocks, to and from the SDK's
//! types.

use aws_sdk_bedrockruntime::types as wire;
use aws_smithy_types::Blob;

use crate::types::{
    Citation, CitationLocation, CitationsContent, Media, MediaSource, SearchResult, Span,
    ToolReference,
};

pub(super) fn s3(uri: &str, owner: Option<&String>) -> Result<wire::S3Location, String> {
    wire::S3Location::builder()
        .uri(uri)
        .set_bucket_owner(owner.cloned())
        .build()
        .map_err(|e| e.to_string())
}

pub(super) fn audio(m: &Media) -> Result<wire::AudioBlock, String> {
    let source = match &m.source {
        MediaSource::Bytes(b) => wire::AudioSource::Bytes(Blob::new(b.clone())),
        MediaSource::S3 { uri, bucket_owner } => {
            wire::AudioSource::S3Location(s3(uri, bucket_owner.as_ref())?)
        }
    };
    wire::AudioBlock::builder()
        .format(wire::AudioFormat::from(m.format.as_str()))
        .source(source)
        .build()
        .map_err(|e| e.to_string())
}

pub(super) fn video(m: &Media) -> Result<wire::VideoBlock, String> {
    let source = match &m.source {
        MediaSource::Bytes(b) => wire::VideoSource::Bytes(Blob::new(b.clone())),
        MediaSource::S3 { uri, bucket_owner } => {
            wire::VideoSource::S3Location(s3(uri, bucket_owner.as_ref())?)
        }
    };
    wire::VideoBlock::builder()
        .format(wire::VideoFormat::from(m.format.as_str()))
        .source(source)
        .build()
        .map_err(|e| e.to_string())
}

pub(super) fn search_result(r: &SearchResult) -> Result<wire::SearchResultBlock, String> {
    let content = r
        .content
        .iter()
        .map(|t| {
            wire::SearchResultContentBlock::builder()
                .text(t)
                .build()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    wire::SearchResultBlock::builder()
        .source(&r.source)
        .title(&r.title)
        .set_content(Some(content))
        .set_citations(r.citations.then(citations_on).transpose()?)
        .build()
        .map_err(|e| e.to_string())
}

pub(super) fn citations_on() -> Result<wire::CitationsConfig, String> {
    wire::CitationsConfig::builder()
        .enabled(true)
        .build()
        .map_err(|e| e.to_string())
}

pub(super) fn tool_reference(t: &ToolReference) -> wire::ToolReference {
    wire::ToolReference::builder()
        .set_name(t.name.clone())
        .set_type(t.kind.clone())
        .set_server_name(t.server_name.clone())
        .build()
}

fn location(l: &CitationLocation) -> wire::CitationLocation {
    let span = |s: &Span| {
        (
            i32::try_from(s.document_index).unwrap_or(i32::MAX),
            i32::try_from(s.start).unwrap_or(i32::MAX),
            i32::try_from(s.end).unwrap_or(i32::MAX),
        )
    };
    match l {
        CitationLocation::DocumentChar(s) => {
            let (d, a, b) = span(s);
            wire::CitationLocation::DocumentChar(
                wire::DocumentCharLocation::builder()
                    .document_index(d)
                    .start(a)
                    .end(b)
                    .build(),
            )
        }
        CitationLocation::DocumentPage(s) => {
            let (d, a, b) = span(s);
            wire::CitationLocation::DocumentPage(
                wire::DocumentPageLocation::builder()
                    .document_index(d)
                    .start(a)
                    .end(b)
                    .build(),
            )
        }
        CitationLocation::DocumentChunk(s) => {
            let (d, a, b) = span(s);
            wire::CitationLocation::DocumentChunk(
                wire::DocumentChunkLocation::builder()
                    .document_index(d)
                    .start(a)
                    .end(b)
                    .build(),
            )
        }
        CitationLocation::SearchResult(s) => {
            let (d, a, b) = span(s);
            wire::CitationLocation::SearchResultLocation(
                wire::SearchResultLocation::builder()
                    .search_result_index(d)
                    .start(a)
                    .end(b)
                    .build(),
            )
        }
        CitationLocation::Web { url, domain } => wire::CitationLocation::Web(
            wire::WebLocation::builder()
                .set_url(url.clone())
                .set_domain(domain.clone())
                .build(),
        ),
    }
}

/// An earlier turn's cited text, sent back.
pub(super) fn citations_content(c: &CitationsContent) -> wire::CitationsContentBlock {
    wire::CitationsContentBlock::builder()
        .set_content(Some(
            c.content
                .iter()
                .map(|t| wire::CitationGeneratedContent::Text(t.clone()))
                .collect(),
        ))
        .set_citations(Some(
            c.citations
                .iter()
                .map(|x| {
                    wire::Citation::builder()
                        .set_title(x.title.clone())
                        .set_source(x.source.clone())
                        .set_source_content(Some(
                            x.source_content
                                .iter()
                                .map(|t| wire::CitationSourceContent::Text(t.clone()))
                                .collect(),
                        ))
                        .set_location(x.location.as_ref().map(location))
                        .build()
                })
                .collect(),
        ))
        .build()
}

fn location_of(l: &wire::CitationLocation) -> Option<CitationLocation> {
    // The service's optional, signed counts as a span (absent or negative: 0).
    let span = |index: Option<i32>, start: Option<i32>, end: Option<i32>| {
        let n = |v: Option<i32>| u32::try_from(v.unwrap_or(0)).unwrap_or(0);
        Span {
            document_index: n(index),
            start: n(start),
            end: n(end),
        }
    };
    Some(match l {
        wire::CitationLocation::DocumentChar(x) => {
            CitationLocation::DocumentChar(span(x.document_index(), x.start(), x.end()))
        }
        wire::CitationLocation::DocumentPage(x) => {
            CitationLocation::DocumentPage(span(x.document_index(), x.start(), x.end()))
        }
        wire::CitationLocation::DocumentChunk(x) => {
            CitationLocation::DocumentChunk(span(x.document_index(), x.start(), x.end()))
        }
        wire::CitationLocation::SearchResultLocation(x) => {
            CitationLocation::SearchResult(span(x.search_result_index(), x.start(), x.end()))
        }
        wire::CitationLocation::Web(x) => CitationLocation::Web {
            url: x.url().map(String::from),
            domain: x.domain().map(String::from),
        },
        _ => return None,
    })
}

fn texts<'a, T: 'a>(
    items: impl IntoIterator<Item = &'a T>,
    text: impl Fn(&T) -> Option<&String>,
) -> Vec<String> {
    items.into_iter().filter_map(text).cloned().collect()
}

/// A response's cited text.
pub(super) fn citations_of(c: &wire::CitationsContentBlock) -> CitationsContent {
    CitationsContent {
        content: texts(c.content(), |g| g.as_text().ok()),
        citations: c
            .citations()
            .iter()
            .map(|x| Citation {
                title: x.title().map(String::from),
                source: x.source().map(String::from),
                source_content: texts(x.source_content(), |s| s.as_text().ok()),
                location: x.location().and_then(location_of),
            })
            .collect(),
    }
}

/// A stream's citation delta.
pub(super) fn citation_of_delta(d: &wire::CitationsDelta) -> Citation {
    Citation {
        title: d.title().map(String::from),
        source: d.source().map(String::from),
        source_content: d
            .source_content()
            .iter()
            .filter_map(|s| s.text().map(String::from))
            .collect(),
        location: d.location().and_then(location_of),
    }
}
