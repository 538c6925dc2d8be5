//! SageMaker Runtime through InvokeEndpoint and InvokeEndpointWithResponseStream.

mod lines;
mod payload;

use foldhash::HashMap;

use aws_sdk_sagemakerruntime as sdk;
use aws_smithy_types::Blob;
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{Backend, BackendEvent, Call, Completion, EventStream, errors};
use crate::config::EndpointConfig;
use crate::types::Provider;
use crate::types::Target;
use crate::types::{Error, FailureFact, Result};

pub use lines::LineBuffer;
pub use payload::tgi_prompt;

/// Sends requests to SageMaker endpoints, with one SDK client per region.
#[derive(Debug, Clone)]
pub struct SagemakerBackend {
    clients: HashMap<String, sdk::Client>,
}

impl SagemakerBackend {
    /// Clients for `regions`, from a shared SDK configuration.
    pub fn new<'a>(
        base: &aws_config::SdkConfig,
        regions: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let clients = crate::backend::per_region(regions, |region| {
            sdk::Client::from_conf(sdk::config::Builder::from(base).region(region).build())
        });
        Self { clients }
    }

    fn endpoint<'c>(&self, call: &Call<'c>) -> Result<(&sdk::Client, &'c EndpointConfig)> {
        let Target {
            provider: Provider::Sagemaker,
            region,
            id,
            ..
        } = &call.attempt.target
        else {
            return Err(Error::config(
                "models",
                format!(
                    "a {} target was sent to the SageMaker backend",
                    call.attempt.target.provider
                ),
            ));
        };
        let endpoint = call
            .model
            .endpoints()
            .iter()
            .find(|e| *e.name == **id && *e.region == **region)
            .ok_or_else(|| {
                Error::config(
                    format!("models.\"{}\".endpoints", call.attempt.model),
                    format!("no endpoint {id:?} in {region}"),
                )
            })?;
        let client = self.clients.get(&**region).ok_or_else(|| {
            Error::config(
                "regions",
                format!("no SageMaker client for region {region:?}"),
            )
        })?;
        Ok((client, endpoint))
    }
}

impl Backend for SagemakerBackend {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>> {
        Box::pin(async move {
            let (client, ep) = self.endpoint(&call)?;
            let target = &call.attempt.target;
            let body = payload::request_body(ep.format, call.request, false)?;
            let prompt_estimate = prompt_estimate(call);
            let out = client
                .invoke_endpoint()
                .endpoint_name(&ep.name)
                .content_type("application/json")
                .accept("application/json")
                .set_inference_component_name(ep.inference_component.clone())
                .set_target_model(ep.target_model.clone())
                .set_target_variant(ep.target_variant.clone())
                .body(Blob::new(body))
                .send()
                .await
                .map_err(|e| errors::from_operation(e, target))?;
            let bytes = out.body().map(|b| b.as_ref()).unwrap_or_default();
            let parsed =
                payload::parse_response(ep.format, bytes, prompt_estimate, &ep.name, &ep.region)?;
            Ok(Completion {
                content: parsed.content,
                stop_reason: parsed.stop_reason,
                usage: parsed.usage,
                served_tier: None,
                invoked_model: None,
                model_response_fields: None,
                guardrail_trace: None,
            })
        })
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>> {
        Box::pin(async move {
            let (client, ep) = self.endpoint(&call)?;
            let target = call.attempt.target.clone();
            let body = payload::request_body(ep.format, call.request, true)?;
            let prompt_estimate = prompt_estimate(call);
            let out = client
                .invoke_endpoint_with_response_stream()
                .endpoint_name(&ep.name)
                .content_type("application/json")
                .accept("application/json")
                .set_inference_component_name(ep.inference_component.clone())
                .set_target_variant(ep.target_variant.clone())
                .body(Blob::new(body))
                .send()
                .await
                .map_err(|e| refusing_streaming(errors::from_operation(e, &target)))?;
            let mut reader =
                payload::LineReader::new(ep.format, prompt_estimate, &ep.name, &ep.region);
            let mut rx = out.body;
            let events = async_stream::stream! {
                let mut buffer = LineBuffer::default();
                loop {
                    let lines = match rx.recv().await {
                        Ok(Some(sdk::types::ResponseStream::PayloadPart(part))) => {
                            buffer.push(part.bytes().map(|b| b.as_ref()).unwrap_or_default())
                        }
                        Ok(Some(_)) => continue,
                        Ok(None) => {
                            // An unterminated last line is complete if it parses; a line cut
                            // short is a broken stream, not the model's error.
                            if let Some(line) = buffer.finish() {
                                match reader.read(&line) {
                                    Ok(parsed) => for ev in parsed.events { yield Ok(ev) },
                                    Err(_) => yield Err(truncated(&target, &line)),
                                }
                            }
                            return;
                        }
                        Err(e) => {
                            yield Err(errors::from_stream(e, &target));
                            return;
                        }
                    };
                    for line in lines {
                        match reader.read(&line) {
                            Ok(parsed) => {
                                for ev in parsed.events {
                                    yield Ok::<BackendEvent, Error>(ev);
                                }
                            }
                            Err(e) => {
                                yield Err(e);
                                return;
                            }
                        }
                    }
                }
            };
            Ok(events.boxed())
        })
    }
}

/// The stream ended inside a line.
fn truncated(target: &Target, line: &str) -> Error {
    Error::from(crate::types::ServiceError::new(
        crate::types::ErrorKind::Transport,
        format!(
            "the stream ended inside a line ({} bytes without a line end)",
            line.len()
        ),
        target.id(),
        target.region(),
    ))
}

/// Input tokens estimated from the rendered prompt, for containers that report no input count.
fn prompt_estimate(call: Call<'_>) -> u32 {
    payload::estimate_tokens(&payload::tgi_prompt(call.request).unwrap_or_default())
}

/// A failure to open a response stream, marked [`FailureFact::StreamingRefused`] when it says
/// the endpoint does not serve the operation (a container or server without response
/// streaming) rather than that the call failed: a 404 without an AWS error code, or an
/// unknown operation.
fn refusing_streaming(e: Error) -> Error {
    match e {
        Error::Service(s)
            if s.http_status == Some(404) && s.code.is_empty()
                || matches!(
                    s.code.as_str(),
                    "UnknownOperationException" | "UnknownOperation"
                ) =>
        {
            Error::from((*s).with_fact(FailureFact::StreamingRefused))
        }
        other => other,
    }
}
