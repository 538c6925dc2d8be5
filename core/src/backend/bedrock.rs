//! Bedrock Runtime through Converse and ConverseStream.

use foldhash::HashMap;

use aws_sdk_bedrockruntime as sdk;
use futures::StreamExt;
use futures::future::BoxFuture;
use sdk::types as wire;

use super::document::{to_document, to_json};
use super::{Backend, BackendEvent, Call, Completion, EventStream, blocks, errors, guardrail};
use crate::types::Boundary;
use crate::types::Provider;
use crate::types::Target;
use crate::types::{
    CachePoint, CacheTtl, ContentBlock, DocumentFormat, GenerateRequest, ImageFormat, MediaSource,
    Role, ServiceTier, SystemBlock, Tool, ToolChoice, ToolResultContent,
};
use crate::types::{Error, Result};
use crate::types::{OutputBlock, StopReason, Usage};
use crate::types::{OutputFormat, ReasoningBlock, ReasoningDelta, ReasoningText};

/// Sends Converse and ConverseStream requests, with one SDK client per region.
#[derive(Debug, Clone)]
pub struct BedrockBackend {
    clients: HashMap<String, sdk::Client>,
}

impl BedrockBackend {
    /// Clients for `regions`, from a shared SDK configuration (credentials, endpoint, retries).
    pub fn new<'a>(
        base: &aws_config::SdkConfig,
        regions: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let clients = super::per_region(regions, |region| {
            sdk::Client::from_conf(sdk::config::Builder::from(base).region(region).build())
        });
        Self { clients }
    }

    fn client(&self, target: &Target) -> Result<&sdk::Client> {
        self.clients.get(target.region()).ok_or_else(|| {
            Error::config(
                "regions",
                format!("no Bedrock client for region {:?}", target.region()),
            )
        })
    }
}

/// Sets a request's [`Parts`] on a Converse or ConverseStream builder: the SDK gives the two
/// builders the same setters but no common trait. The client's fluent builders, not the input
/// builders' `send_with`: that one moves a whole sending future more per call (measured: 6,000
/// more instructions in `memcpy`).
macro_rules! with_parts {
    ($builder:expr, $parts:expr) => {{
        let p: Parts = $parts;
        $builder
            .set_messages(Some(p.messages))
            .set_system(Some(p.system).filter(|s| !s.is_empty()))
            .set_tool_config(p.tool_config)
            .inference_config(p.inference)
            .set_service_tier(p.service_tier)
            .set_performance_config(p.performance)
            .set_additional_model_request_fields(p.model_fields)
            .set_additional_model_response_field_paths(p.response_paths)
            .set_request_metadata(p.metadata)
            .set_output_config(p.output)
    }};
}

/// The model or profile id of a Bedrock target.
fn model_id(target: &Target) -> Result<&str> {
    match target.provider {
        Provider::Bedrock => Ok(&target.id),
        _ => Err(Error::config(
            "models",
            format!(
                "a {} target was sent to the Bedrock backend",
                target.provider
            ),
        )),
    }
}

/// The parts of a Converse request, shared by both operations.
struct Parts {
    messages: Vec<wire::Message>,
    system: Vec<wire::SystemContentBlock>,
    tool_config: Option<wire::ToolConfiguration>,
    inference: wire::InferenceConfiguration,
    service_tier: Option<wire::ServiceTier>,
    performance: Option<wire::PerformanceConfiguration>,
    /// `additionalModelRequestFields`: reasoning as the model spells it, and the request's
    /// model fields when the attempt is on their model.
    model_fields: Option<aws_smithy_types::Document>,
    response_paths: Option<Vec<String>>,
    metadata: Option<std::collections::HashMap<String, String>>,
    output: Option<wire::OutputConfig>,
}

impl Backend for BedrockBackend {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>> {
        Box::pin(async move {
            let target = &call.attempt.target;
            let builder = self.client(target)?.converse().model_id(model_id(target)?);
            let out = with_parts!(builder, parts(call)?)
                .set_guardrail_config(call.request.guardrail.as_ref().map(guardrail::config))
                .send()
                .await
                .map_err(|e| errors::from_operation(e, target))?;
            let content = match out.output() {
                Some(wire::ConverseOutput::Message(m)) => {
                    m.content().iter().filter_map(output_block).collect()
                }
                _ => Vec::new(),
            };
            let model_response_fields = out.additional_model_response_fields().map(to_json);
            let guardrail_trace = out
                .trace()
                .and_then(|t| t.guardrail())
                .map(guardrail::trace);
            Ok(Completion {
                model_response_fields,
                guardrail_trace,
                content,
                stop_reason: StopReason::from_wire(out.stop_reason().as_str()),
                usage: out.usage().map(usage).unwrap_or_default(),
                served_tier: out.service_tier().and_then(tier_of),
                invoked_model: out
                    .trace()
                    .and_then(|t| t.prompt_router())
                    .and_then(|p| p.invoked_model_id())
                    .map(String::from),
            })
        })
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>> {
        Box::pin(async move {
            let target = call.attempt.target.clone();
            let builder = self
                .client(&target)?
                .converse_stream()
                .model_id(model_id(&target)?);
            let out = with_parts!(builder, parts(call)?)
                .set_guardrail_config(
                    call.request
                        .guardrail
                        .as_ref()
                        .map(guardrail::stream_config),
                )
                .send()
                .await
                .map_err(|e| errors::from_operation(e, &target))?;
            let mut rx = out.stream;
            let events = async_stream::stream! {
                loop {
                    match rx.recv().await {
                        Ok(Some(ev)) => {
                            // The guardrail's assessment rides on the metadata event.
                            if let wire::ConverseStreamOutput::Metadata(m) = &ev
                                && let Some(t) = m.trace().and_then(|t| t.guardrail()) {
                                    yield Ok(BackendEvent::GuardrailTrace(guardrail::trace(t)));
                                }
                            if let Some(mapped) = stream_event(ev) {
                                yield Ok(mapped);
                            }
                        }
                        Ok(None) => return,
                        // After an error the receiver is done: end the stream with it.
                        Err(e) => {
                            yield Err(errors::from_stream(e, &target));
                            return;
                        }
                    }
                }
            };
            Ok(events.boxed())
        })
    }
}

fn parts(call: Call<'_>) -> Result<Parts> {
    let req = call.request;
    let checkpoint_at = |b: Boundary| {
        call.checkpoints
            .iter()
            .find(|c| c.at == b)
            .map(|c| CachePoint { ttl: Some(c.ttl) })
    };
    let shape = &call.attempt.shape;
    let messages = req
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut content = Vec::with_capacity(m.content.len() + 1);
            for (j, b) in m.content.iter().enumerate() {
                // The plan's checkpoints stand for any the request carried; earlier reasoning
                // goes only to a model that reads it (the plan says which).
                match b {
                    ContentBlock::CachePoint(_) => continue,
                    ContentBlock::Reasoning(_) if !shape.reasoning_history => continue,
                    _ => {}
                }
                content.push(
                    content_block(b)
                        .map_err(|e| Error::invalid(format!("messages[{i}].content[{j}]"), e))?,
                );
                if let Some(c) = checkpoint_at(Boundary::Message { index: i, block: j }) {
                    content.push(wire::ContentBlock::CachePoint(cache_point(&c)));
                }
            }
            wire::Message::builder()
                .role(match m.role {
                    Role::User => wire::ConversationRole::User,
                    Role::Assistant => wire::ConversationRole::Assistant,
                })
                .set_content(Some(content))
                .build()
                .map_err(|e| Error::invalid(format!("messages[{i}]"), e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut system = Vec::with_capacity(req.system.len() + 1);
    for (i, b) in req.system.iter().enumerate() {
        let block = match b {
            SystemBlock::Text(t) => wire::SystemContentBlock::Text(t.clone()),
            SystemBlock::GuardContent(g) => wire::SystemContentBlock::GuardContent(
                guardrail::content(g).map_err(|e| Error::invalid(format!("system[{i}]"), e))?,
            ),
            SystemBlock::CachePoint(_) => continue,
        };
        system.push(block);
        if let Some(c) = checkpoint_at(Boundary::System(i)) {
            system.push(wire::SystemContentBlock::CachePoint(cache_point(&c)));
        }
    }
    let mut inference = wire::InferenceConfiguration::builder()
        .set_temperature(shape.temperature(req))
        .set_top_p(shape.top_p(req))
        .set_stop_sequences(Some(req.inference.stop_sequences.clone()).filter(|s| !s.is_empty()));
    let reasoning_max = shape
        .reasoning
        .as_ref()
        .and_then(|r| r.max_tokens)
        .map(i64::from);
    if let Some(n) = req.inference.max_tokens.or(reasoning_max) {
        // validate() keeps it within 1..=i32::MAX.
        inference = inference
            .max_tokens(i32::try_from(n).map_err(|_| {
                Error::invalid("inference.max_tokens", format!("{n} is too large"))
            })?);
    }
    let mut native = serde_json::Map::new();
    if shape.model_fields
        && let Some(f) = &req.model_fields
    {
        native.extend(f.request.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(r) = &shape.reasoning {
        native.extend(r.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let response_paths = req
        .model_fields
        .as_ref()
        .filter(|f| shape.model_fields && !f.response_paths.is_empty())
        .map(|f| f.response_paths.clone());
    Ok(Parts {
        messages,
        system,
        tool_config: tool_config(req, checkpoint_at(Boundary::Tools))?,
        inference: inference.build(),
        // Absent means standard: the request stays byte-for-byte what a plain call sends.
        service_tier: call
            .attempt
            .tier
            .filter(|t| *t != ServiceTier::STANDARD)
            .and_then(service_tier),
        performance: call.attempt.latency_optimized.then(|| {
            wire::PerformanceConfiguration::builder()
                .latency(wire::PerformanceConfigLatency::Optimized)
                .build()
        }),
        model_fields: (!native.is_empty()).then(|| to_document(&serde_json::Value::Object(native))),
        response_paths,
        metadata: (!req.metadata.is_empty()).then(|| {
            req.metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }),
        output: req.output_format.as_ref().map(output_config).transpose()?,
    })
}

/// Structured output as `outputConfig.textFormat`: the schema goes as JSON text.
fn output_config(format: &OutputFormat) -> Result<wire::OutputConfig> {
    let OutputFormat::JsonSchema(f) = format;
    let schema = wire::JsonSchemaDefinition::builder()
        .schema(f.schema.to_string())
        .set_name(f.name.clone())
        .set_description(f.description.clone())
        .build()
        .map_err(|e| Error::invalid("output_format", e.to_string()))?;
    let text_format = wire::OutputFormat::builder()
        .r#type(wire::OutputFormatType::JsonSchema)
        .structure(wire::OutputFormatStructure::JsonSchema(schema))
        .build()
        .map_err(|e| Error::invalid("output_format", e.to_string()))?;
    Ok(wire::OutputConfig::builder()
        .text_format(text_format)
        .build())
}

fn image_block(img: &crate::types::Image) -> std::result::Result<wire::ImageBlock, String> {
    wire::ImageBlock::builder()
        .format(match img.format {
            ImageFormat::Png => wire::ImageFormat::Png,
            ImageFormat::Jpeg => wire::ImageFormat::Jpeg,
            ImageFormat::Gif => wire::ImageFormat::Gif,
            ImageFormat::Webp => wire::ImageFormat::Webp,
        })
        .source(match &img.source {
            MediaSource::Bytes(b) => {
                wire::ImageSource::Bytes(aws_smithy_types::Blob::new(b.clone()))
            }
            MediaSource::S3 { uri, bucket_owner } => {
                wire::ImageSource::S3Location(blocks::s3(uri, bucket_owner.as_ref())?)
            }
        })
        .build()
        .map_err(|e| e.to_string())
}

fn document_block(d: &crate::types::Document) -> std::result::Result<wire::DocumentBlock, String> {
    wire::DocumentBlock::builder()
        .format(match d.format {
            DocumentFormat::Pdf => wire::DocumentFormat::Pdf,
            DocumentFormat::Csv => wire::DocumentFormat::Csv,
            DocumentFormat::Doc => wire::DocumentFormat::Doc,
            DocumentFormat::Docx => wire::DocumentFormat::Docx,
            DocumentFormat::Xls => wire::DocumentFormat::Xls,
            DocumentFormat::Xlsx => wire::DocumentFormat::Xlsx,
            DocumentFormat::Html => wire::DocumentFormat::Html,
            DocumentFormat::Txt => wire::DocumentFormat::Txt,
            DocumentFormat::Md => wire::DocumentFormat::Md,
        })
        .name(&d.name)
        .source(match &d.source {
            MediaSource::Bytes(b) => {
                wire::DocumentSource::Bytes(aws_smithy_types::Blob::new(b.clone()))
            }
            MediaSource::S3 { uri, bucket_owner } => {
                wire::DocumentSource::S3Location(blocks::s3(uri, bucket_owner.as_ref())?)
            }
        })
        .set_context(d.context.clone())
        .set_citations(d.citations.then(blocks::citations_on).transpose()?)
        .build()
        .map_err(|e| e.to_string())
}

fn tool_result_content(
    c: &ToolResultContent,
) -> std::result::Result<wire::ToolResultContentBlock, String> {
    Ok(match c {
        ToolResultContent::Text(t) => wire::ToolResultContentBlock::Text(t.clone()),
        ToolResultContent::Json(v) => wire::ToolResultContentBlock::Json(to_document(v)),
        ToolResultContent::Image(img) => wire::ToolResultContentBlock::Image(image_block(img)?),
        ToolResultContent::Document(d) => {
            wire::ToolResultContentBlock::Document(document_block(d)?)
        }
        ToolResultContent::Video(m) => wire::ToolResultContentBlock::Video(blocks::video(m)?),
        ToolResultContent::SearchResult(r) => {
            wire::ToolResultContentBlock::SearchResult(blocks::search_result(r)?)
        }
    })
}

fn content_block(b: &ContentBlock) -> std::result::Result<wire::ContentBlock, String> {
    Ok(match b {
        ContentBlock::Text(t) => wire::ContentBlock::Text(t.clone()),
        ContentBlock::Image(img) => wire::ContentBlock::Image(image_block(img)?),
        ContentBlock::Document(d) => wire::ContentBlock::Document(document_block(d)?),
        ContentBlock::ToolUse(t) => wire::ContentBlock::ToolUse(
            wire::ToolUseBlock::builder()
                .tool_use_id(&t.id)
                .name(&t.name)
                .input(to_document(&t.input))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        ContentBlock::ToolResult(r) => wire::ContentBlock::ToolResult(
            wire::ToolResultBlock::builder()
                .tool_use_id(&r.tool_use_id)
                .set_content(Some(
                    r.content
                        .iter()
                        .map(tool_result_content)
                        .collect::<std::result::Result<_, _>>()?,
                ))
                .set_status(r.is_error.then_some(wire::ToolResultStatus::Error))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        ContentBlock::CachePoint(c) => wire::ContentBlock::CachePoint(cache_point(c)),
        ContentBlock::Reasoning(ReasoningBlock::Text(r)) => {
            wire::ContentBlock::ReasoningContent(wire::ReasoningContentBlock::ReasoningText(
                wire::ReasoningTextBlock::builder()
                    .text(&r.text)
                    .set_signature(r.signature.clone())
                    .build()
                    .map_err(|e| e.to_string())?,
            ))
        }
        ContentBlock::GuardContent(g) => wire::ContentBlock::GuardContent(guardrail::content(g)?),
        ContentBlock::Audio(m) => wire::ContentBlock::Audio(blocks::audio(m)?),
        ContentBlock::Video(m) => wire::ContentBlock::Video(blocks::video(m)?),
        ContentBlock::SearchResult(r) => {
            wire::ContentBlock::SearchResult(blocks::search_result(r)?)
        }
        ContentBlock::Citations(c) => {
            wire::ContentBlock::CitationsContent(blocks::citations_content(c))
        }
        ContentBlock::ToolAddition(t) => wire::ContentBlock::ToolAddition(
            wire::ToolAdditionBlock::builder()
                .tool(blocks::tool_reference(t))
                .build(),
        ),
        ContentBlock::ToolRemoval(t) => wire::ContentBlock::ToolRemoval(
            wire::ToolRemovalBlock::builder()
                .tool(blocks::tool_reference(t))
                .build(),
        ),
        ContentBlock::Reasoning(ReasoningBlock::Redacted(data)) => {
            wire::ContentBlock::ReasoningContent(wire::ReasoningContentBlock::RedactedContent(
                aws_smithy_types::Blob::new(data.clone()),
            ))
        }
    })
}

fn tool_config(
    req: &GenerateRequest,
    checkpoint: Option<CachePoint>,
) -> Result<Option<wire::ToolConfiguration>> {
    if !req.tools.iter().any(|t| matches!(t, Tool::Spec(_))) {
        return Ok(None);
    }
    let mut tools = req
        .tools
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, Tool::Spec(_)))
        .map(|(i, t)| match t {
            Tool::Spec(s) => wire::ToolSpecification::builder()
                .name(&s.name)
                .set_description(s.description.clone())
                .input_schema(wire::ToolInputSchema::Json(to_document(&s.input_schema)))
                .set_strict(s.strict.then_some(true))
                .build()
                .map(wire::Tool::ToolSpec)
                .map_err(|e| Error::invalid(format!("tools[{i}]"), e.to_string())),
            Tool::CachePoint(c) => Ok(wire::Tool::CachePoint(cache_point(c))),
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(c) = checkpoint {
        tools.push(wire::Tool::CachePoint(cache_point(&c)));
    }
    let choice = match &req.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(wire::ToolChoice::Auto(
            wire::AutoToolChoice::builder().build(),
        )),
        Some(ToolChoice::Any) => Some(wire::ToolChoice::Any(
            wire::AnyToolChoice::builder().build(),
        )),
        Some(ToolChoice::Tool(name)) => Some(wire::ToolChoice::Tool(
            wire::SpecificToolChoice::builder()
                .name(name)
                .build()
                .map_err(|e| Error::invalid("tool_choice", e.to_string()))?,
        )),
    };
    wire::ToolConfiguration::builder()
        .set_tools(Some(tools))
        .set_tool_choice(choice)
        .build()
        .map(Some)
        .map_err(|e| Error::invalid("tools", e.to_string()))
}

fn cache_point(c: &CachePoint) -> wire::CachePointBlock {
    wire::CachePointBlock::builder()
        .r#type(wire::CachePointType::Default)
        .set_ttl(c.ttl.map(|t| match t {
            CacheTtl::FiveMinutes => wire::CacheTtl::FiveMinutes,
            CacheTtl::OneHour => wire::CacheTtl::OneHour,
            // Converse has no such lifetime: the model's rules keep it off Converse, and the
            // service names it if one is sent anyway.
            other => wire::CacheTtl::from(other.as_str()),
        }))
        .build()
        .expect("type is set")
}

/// Converse's `serviceTier` for a tier; none for a tier declared without a Converse spelling,
/// which is sent as the service's default.
fn service_tier(t: ServiceTier) -> Option<wire::ServiceTier> {
    let name = t.converse_name()?;
    wire::ServiceTier::builder()
        .r#type(wire::ServiceTierType::from(name))
        .build()
        .ok()
}

fn tier_of(t: &wire::ServiceTier) -> Option<ServiceTier> {
    ServiceTier::from_wire(t.r#type().as_str())
}

fn usage(u: &wire::TokenUsage) -> Usage {
    let n = |v: i32| u32::try_from(v).unwrap_or(0);
    Usage {
        input_tokens: n(u.input_tokens()),
        output_tokens: n(u.output_tokens()),
        cache_read_tokens: u.cache_read_input_tokens().map_or(0, n),
        cache_write_tokens: u.cache_write_input_tokens().map_or(0, n),
        cache_write_1h_tokens: u
            .cache_details()
            .iter()
            .filter(|d| d.ttl() == &wire::CacheTtl::OneHour)
            .map(|d| n(d.input_tokens()))
            .fold(0, u32::saturating_add),
        // Converse does not say how many output tokens went to reasoning.
        reasoning_tokens: 0,
        input_estimated: false,
    }
}

fn output_block(b: &wire::ContentBlock) -> Option<OutputBlock> {
    match b {
        wire::ContentBlock::CitationsContent(c) => {
            Some(OutputBlock::Citations(blocks::citations_of(c)))
        }
        wire::ContentBlock::ReasoningContent(wire::ReasoningContentBlock::ReasoningText(r)) => {
            Some(OutputBlock::Reasoning(ReasoningBlock::Text(
                ReasoningText {
                    text: r.text().to_string(),
                    signature: r.signature().map(String::from),
                    id: None,
                },
            )))
        }
        wire::ContentBlock::ReasoningContent(wire::ReasoningContentBlock::RedactedContent(b)) => {
            Some(OutputBlock::Reasoning(ReasoningBlock::Redacted(
                b.as_ref().to_vec(),
            )))
        }
        wire::ContentBlock::Text(t) => Some(OutputBlock::Text(t.clone())),
        wire::ContentBlock::ToolUse(t) => Some(OutputBlock::ToolUse {
            id: t.tool_use_id().to_string(),
            name: t.name().to_string(),
            input: to_json(t.input()),
        }),
        _ => None,
    }
}

fn stream_event(ev: wire::ConverseStreamOutput) -> Option<BackendEvent> {
    let index = |i: i32| u32::try_from(i).unwrap_or(0);
    match ev {
        wire::ConverseStreamOutput::ContentBlockStart(s) => match s.start() {
            Some(wire::ContentBlockStart::ToolUse(t)) => Some(BackendEvent::ToolUseStart {
                index: index(s.content_block_index()),
                id: t.tool_use_id().to_string(),
                name: t.name().to_string(),
            }),
            _ => None,
        },
        // Owned: the delta's text moves on without a copy.
        wire::ConverseStreamOutput::ContentBlockDelta(d) => match d.delta {
            Some(wire::ContentBlockDelta::Text(text)) => Some(BackendEvent::TextDelta {
                index: index(d.content_block_index),
                text,
            }),
            Some(wire::ContentBlockDelta::ToolUse(t)) => Some(BackendEvent::ToolUseDelta {
                index: index(d.content_block_index),
                input_json: t.input,
            }),
            Some(wire::ContentBlockDelta::Citation(c)) => Some(BackendEvent::CitationDelta {
                index: index(d.content_block_index),
                citation: blocks::citation_of_delta(&c),
            }),
            Some(wire::ContentBlockDelta::ReasoningContent(r)) => {
                let delta = match r {
                    wire::ReasoningContentBlockDelta::Text(t) => ReasoningDelta::Text(t),
                    wire::ReasoningContentBlockDelta::Signature(s) => ReasoningDelta::Signature(s),
                    wire::ReasoningContentBlockDelta::RedactedContent(b) => {
                        ReasoningDelta::Redacted(b.into_inner())
                    }
                    _ => return None,
                };
                Some(BackendEvent::ReasoningDelta {
                    index: index(d.content_block_index),
                    delta,
                })
            }
            _ => None,
        },
        wire::ConverseStreamOutput::MessageStop(s) => match s.additional_model_response_fields() {
            Some(fields) => Some(BackendEvent::StopWithFields(
                StopReason::from_wire(s.stop_reason().as_str()),
                to_json(fields),
            )),
            None => Some(BackendEvent::Stop(StopReason::from_wire(
                s.stop_reason().as_str(),
            ))),
        },
        wire::ConverseStreamOutput::Metadata(m) => Some(BackendEvent::Metadata {
            usage: m.usage().map(usage).unwrap_or_default(),
            served_tier: m.service_tier().and_then(tier_of),
            invoked_model: m
                .trace()
                .and_then(|t| t.prompt_router())
                .and_then(|p| p.invoked_model_id())
                .map(String::from),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// ConverseStream events as the SDK decodes them from frames, with hostile numbers
        /// (negative indexes and token counts) and arbitrary text: mapped, never a panic; no
        /// count wraps.
        #[test]
        fn stream_events_with_hostile_values_map_without_panicking(
            index in any::<i32>(),
            tokens in any::<i32>(),
            text in "\\PC{0,40}",
            stop in "\\PC{0,12}",
            tool in any::<bool>(),
        ) {
            let delta = if tool {
                wire::ContentBlockDelta::ToolUse(
                    wire::ToolUseBlockDelta::builder().input(text.clone()).build().unwrap(),
                )
            } else {
                wire::ContentBlockDelta::Text(text.clone())
            };
            let ev = wire::ConverseStreamOutput::ContentBlockDelta(
                wire::ContentBlockDeltaEvent::builder()
                    .content_block_index(index)
                    .delta(delta)
                    .build()
                    .unwrap(),
            );
            match stream_event(ev) {
                Some(BackendEvent::TextDelta { index: i, text: t }) => {
                    prop_assert_eq!(i, u32::try_from(index).unwrap_or(0));
                    prop_assert_eq!(t, text.clone());
                }
                Some(BackendEvent::ToolUseDelta { input_json, .. }) => prop_assert_eq!(input_json, text.clone()),
                other => prop_assert!(false, "{other:?}"),
            }
            let usage_ev = wire::ConverseStreamOutput::Metadata(
                wire::ConverseStreamMetadataEvent::builder()
                    .usage(
                        wire::TokenUsage::builder()
                            .input_tokens(tokens)
                            .output_tokens(tokens)
                            .total_tokens(tokens)
                            .build()
                            .unwrap(),
                    )
                    .build(),
            );
            match stream_event(usage_ev) {
                Some(BackendEvent::Metadata { usage, .. }) => {
                    prop_assert_eq!(usage.output_tokens, u32::try_from(tokens).unwrap_or(0));
                }
                other => prop_assert!(false, "{other:?}"),
            }
            let stop_ev = wire::ConverseStreamOutput::MessageStop(
                wire::MessageStopEvent::builder()
                    .stop_reason(wire::StopReason::from(stop.as_str()))
                    .build()
                    .unwrap(),
            );
            prop_assert!(matches!(stream_event(stop_ev), Some(BackendEvent::Stop(_))));
        }
    }
}
