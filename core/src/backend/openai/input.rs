//! What both OpenAI-compatible APIs need of a request alike: the model's id, the effort word
//! of its reasoning, its tier, images as data URLs, tool results as text, and the blocks they
//! cannot carry refused by name.

use base64::Engine as _;

use crate::backend::Call;
use crate::types::{
    ContentBlock, Error, Image, ImageFormat, MediaSource, Result, ServiceTier, SystemBlock,
    ToolResultContent,
};

/// The request's system blocks' text, one block a line.
pub(super) fn system_text(call: Call<'_>) -> String {
    let mut out = String::new();
    for b in &call.request.system {
        if let SystemBlock::Text(t) = b {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
    }
    out
}

/// The reasoning effort word the attempt's shape carries (`reasoning.effort`, or a flat
/// `reasoning_effort` as gpt-oss spells it), if any.
pub(super) fn effort(call: Call<'_>) -> Option<&str> {
    let fields = &call.attempt.shape.reasoning.as_ref()?.fields;
    fields
        .get("reasoning")
        .and_then(|r| r.get("effort"))
        .or_else(|| fields.get("reasoning_effort"))
        .and_then(serde_json::Value::as_str)
}

/// `max_tokens` to send: the request's, or the one its reasoning needs.
pub(super) fn max_tokens(call: Call<'_>) -> Option<i64> {
    call.request.inference.max_tokens.or_else(|| {
        call.attempt
            .shape
            .reasoning
            .as_ref()
            .and_then(|r| r.max_tokens)
            .map(i64::from)
    })
}

/// The `service_tier` field for the attempt's tier: the OpenAI words, nothing for standard
/// (the default) or a reservation (which these APIs do not have).
pub(super) fn service_tier(call: Call<'_>) -> Option<&'static str> {
    call.attempt.tier?.openai_name()
}

/// The tier a `service_tier` answer names.
pub(super) fn served_tier(word: Option<&str>) -> Option<ServiceTier> {
    ServiceTier::from_openai(word?)
}

/// An image as a data URL (`data:image/png;base64,...`); an S3 image is refused by name.
pub(super) fn image_url(image: &Image, at: &str) -> Result<String> {
    let bytes = match &image.source {
        MediaSource::Bytes(b) => b,
        MediaSource::S3 { .. } => {
            return Err(Error::invalid(
                at,
                "an image in S3 cannot be sent to the OpenAI-compatible APIs (they take bytes or URLs): send its bytes",
            ));
        }
    };
    let mime = match image.format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::Webp => "image/webp",
    };
    Ok(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// A tool result as text; media in it is refused by name.
pub(super) fn tool_result_text(content: &[ToolResultContent], at: &str) -> Result<String> {
    let mut out = String::new();
    for (k, c) in content.iter().enumerate() {
        let text = c.text().ok_or_else(|| {
            Error::invalid(
                format!("{at}.tool_result.content[{k}]"),
                format!(
                    "a tool result's {} cannot be sent to the OpenAI-compatible APIs (their tool output is text): send its text, or route to Converse",
                    c.kind()
                ),
            )
        })?;
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&text);
    }
    Ok(out)
}

/// A block neither OpenAI-compatible API carries, refused by name.
pub(super) fn unsupported(block: &ContentBlock, at: &str) -> Error {
    let name = match block {
        ContentBlock::Document(_) => "a document",
        ContentBlock::Audio(_) => "audio",
        ContentBlock::Video(_) => "video",
        ContentBlock::SearchResult(_) => "a search result",
        ContentBlock::GuardContent(_) => "guard content (guardrails are Converse's)",
        ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_) => {
            "a tool addition or removal"
        }
        _ => "this block",
    };
    Error::invalid(
        at,
        format!(
            "{name} cannot be sent to the OpenAI-compatible APIs: route the request to Converse"
        ),
    )
}
