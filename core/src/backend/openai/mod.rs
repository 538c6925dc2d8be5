//! Bedrock's OpenAI-compatible endpoints: the Responses and Chat Completions APIs on
//! bedrock-runtime (`/openai/v1`, [`Api::OpenAiRuntime`]) and on bedrock-mantle
//! ([`Api::OpenAiMantle`]), whole and streamed (server-sent events).
//!
//! No AWS SDK covers these APIs: requests are built here, signed with the official `aws-sigv4`
//! crate (credentials from the SDK configuration's chain) or a Bedrock API key, and sent over
//! the SDK's own HTTP stack (`aws-smithy-http-client`: hyper and rustls).
//!
//! [`Api::OpenAiRuntime`]: crate::types::Api::OpenAiRuntime
//! [`Api::OpenAiMantle`]: crate::types::Api::OpenAiMantle

mod auth;
pub(in crate::backend) mod chat;
mod errors;
mod input;
mod responses;
mod sse;

use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_types::body::SdkBody;
use futures::StreamExt;
use futures::future::BoxFuture;
use http_body_util::BodyExt;
use serde_json::Value;

use super::{Backend, BackendEvent, Call, Completion, EventStream};
use crate::config::{OpenAiApi, OpenAiConfig};
use crate::types::{Api, Error, ErrorKind, Partition, Result, ServiceError, Target};
use auth::Auth;
pub use auth::short_term_api_key;

/// Which endpoint a backend sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// bedrock-runtime's `/openai/v1` (quotas shared with Converse; profile ids).
    Runtime,
    /// bedrock-mantle (its own quota pool; bare ids; `/v1` or `/openai/v1` per model).
    Mantle,
}

impl Endpoint {
    /// The Bedrock API whose targets it serves.
    pub fn api(self) -> Api {
        match self {
            Endpoint::Runtime => Api::OpenAiRuntime,
            Endpoint::Mantle => Api::OpenAiMantle,
        }
    }

    /// The SigV4 signing name.
    fn service(self) -> &'static str {
        match self {
            Endpoint::Runtime => "bedrock",
            Endpoint::Mantle => "bedrock-mantle",
        }
    }
}

/// How a backend authenticates and where it sends, beyond the SDK configuration.
#[derive(Debug, Clone, Default)]
pub struct OpenAiSettings {
    /// A Bedrock API key to send as a bearer token instead of signing (else
    /// `AWS_BEARER_TOKEN_BEDROCK`, else SigV4).
    pub api_key: Option<String>,
    /// The URL to send to instead of the AWS endpoint (bedrock-runtime: the SDK configuration's
    /// endpoint URL; mantle: `aws.mantle_endpoint_url`, else the endpoint URL's `/mantle`).
    pub endpoint_url: Option<String>,
    /// How long connecting may take.
    pub connect_timeout: Option<Duration>,
}

/// Sends Responses and Chat Completions calls to one of Bedrock's OpenAI-compatible endpoints.
///
/// ```no_run
/// # async fn f() {
/// use laneway::backend::openai::{Endpoint, OpenAiBackend, OpenAiSettings};
/// let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
/// let mantle = OpenAiBackend::new(Endpoint::Mantle, &sdk, OpenAiSettings::default());
/// # }
/// ```
pub struct OpenAiBackend {
    endpoint: Endpoint,
    base_url: Option<String>,
    http: SharedHttpConnector,
    auth: Auth,
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("endpoint", &self.endpoint)
            .field("base_url", &self.base_url)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl OpenAiBackend {
    /// A backend for `endpoint`, with the SDK configuration's credentials.
    pub fn new(endpoint: Endpoint, sdk: &aws_config::SdkConfig, settings: OpenAiSettings) -> Self {
        let auth = Auth::new(
            endpoint.service(),
            settings.api_key,
            sdk.credentials_provider(),
        );
        let mut connector = HttpConnectorSettings::builder();
        if let Some(t) = settings.connect_timeout {
            connector = connector.connect_timeout(t);
        }
        let http = aws_smithy_http_client::default_connector(
            &connector.build(),
            aws_smithy_async::rt::sleep::default_async_sleep(),
        )
        .expect("the rustls-aws-lc feature gives a default connector");
        Self {
            endpoint,
            base_url: settings
                .endpoint_url
                .map(|u| u.trim_end_matches('/').to_string()),
            http,
            auth,
        }
    }

    /// The URL of `api` for `target` of a model served as `openai` says.
    fn url(&self, target: &Target, openai: &OpenAiConfig, api: OpenAiApi) -> String {
        let region = target.region();
        match self.endpoint {
            Endpoint::Runtime => {
                let base = self.base_url.clone().unwrap_or_else(|| {
                    let suffix = Partition::of(region).dns_suffix;
                    format!("https://bedrock-runtime.{region}.{suffix}")
                });
                format!("{base}/openai/v1{}", api.path())
            }
            Endpoint::Mantle => {
                let base = self.base_url.clone().unwrap_or_else(|| {
                    // Mantle's host is on the partition's dual-stack domain (`api.aws`).
                    let suffix = Partition::of(region).dual_stack_suffix;
                    format!("https://bedrock-mantle.{region}.{suffix}")
                });
                let prefix = openai.mantle.as_ref().map_or("/v1", |m| m.prefix.as_str());
                format!("{base}{prefix}{}", api.path())
            }
        }
    }

    /// The model's APIs on this endpoint, preferred first.
    fn apis<'c>(&self, openai: &'c OpenAiConfig) -> &'c [OpenAiApi] {
        match self.endpoint {
            Endpoint::Runtime => &openai.runtime,
            Endpoint::Mantle => openai.mantle.as_ref().map_or(&[], |m| &m.apis),
        }
    }

    /// The API a call goes by: the model's first on this endpoint, unless the request needs
    /// what only Chat Completions has (stop sequences).
    fn api(&self, call: Call<'_>) -> Result<(OpenAiApi, &'static str)> {
        let target = &call.attempt.target;
        if target.api != self.endpoint.api() {
            return Err(Error::config(
                "models",
                format!(
                    "a {} target was sent to the {} backend",
                    target.api,
                    self.endpoint.api()
                ),
            ));
        }
        let openai = call.model.openai().ok_or_else(|| {
            Error::config(
                format!("models.\"{}\".openai", call.attempt.model),
                "the model has no OpenAI-compatible API configured",
            )
        })?;
        let apis = self.apis(openai);
        let wants_stop = !call.request.inference.stop_sequences.is_empty();
        let api = match apis.first() {
            None => {
                return Err(Error::config(
                    format!("models.\"{}\".openai", call.attempt.model),
                    format!("no API is configured for {}", self.endpoint.api()),
                ));
            }
            Some(OpenAiApi::Responses) if wants_stop => {
                if apis.contains(&OpenAiApi::ChatCompletions) {
                    OpenAiApi::ChatCompletions
                } else {
                    return Err(Error::invalid(
                        "inference.stop_sequences",
                        format!(
                            "{} is served only by the Responses API here, which has no stop sequences",
                            call.attempt.model
                        ),
                    ));
                }
            }
            Some(api) => *api,
        };
        Ok((api, api.as_str()))
    }

    /// Builds, signs and sends a call; the answer's status and body.
    async fn send(
        &self,
        call: Call<'_>,
        stream: bool,
    ) -> Result<(OpenAiApi, aws_smithy_runtime_api::http::Response<SdkBody>)> {
        let (api, _) = self.api(call)?;
        let target = &call.attempt.target;
        let openai = call.model.openai().expect("checked by api()");
        let body = match api {
            OpenAiApi::Responses => responses::body(call, target.id(), stream)?,
            OpenAiApi::ChatCompletions => {
                serde_json::to_vec(&chat::body(call, target.id(), stream)?).map_err(|e| {
                    Error::invalid("request", format!("the body does not serialize: {e}"))
                })?
            }
        };
        let mut request = http::Request::builder()
            .method("POST")
            .uri(self.url(target, openai, api))
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(
                http::header::ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body)
            .map_err(|e| Error::config("aws.endpoint_url", format!("not a usable URL: {e}")))?;
        if request.uri().host().is_none_or(str::is_empty) {
            return Err(Error::config(
                "aws.endpoint_url",
                format!("{} has no host", request.uri()),
            ));
        }
        self.auth
            .apply(&mut request, target.region(), target.id())
            .await?;
        let request =
            aws_smithy_runtime_api::http::Request::try_from(request.map(SdkBody::from))
                .map_err(|e| Error::invalid("request", format!("not a sendable request: {e}")))?;
        let response = self.http.call(request).await.map_err(|e| {
            let timeout = e.is_timeout();
            errors::transport(e, timeout, target.id(), target.region())
        })?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let (headers, body) = (response.headers().clone(), response.into_body());
            let bytes = collect(body, target).await?;
            return Err(errors::from_status(
                status,
                &headers,
                &bytes,
                target.id(),
                target.region(),
            ));
        }
        Ok((api, response))
    }
}

/// An answer that cannot be read, from a target: garbage from the service or on the way, not
/// the caller's input, so it fails over.
pub(in crate::backend) struct Malformed<'a> {
    pub(in crate::backend) target: &'a str,
    pub(in crate::backend) region: &'a str,
}

impl Malformed<'_> {
    fn error(&self, what: &str) -> Error {
        Error::from(
            ServiceError::new(
                ErrorKind::Internal,
                format!("the answer could not be read: {what}"),
                self.target,
                self.region,
            )
            .with_code("MalformedResponse"),
        )
    }
}

/// The whole body.
async fn collect(body: SdkBody, target: &Target) -> Result<bytes::Bytes> {
    body.collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| errors::transport(BodyError(e), false, target.id(), target.region()))
}

/// A body read error (the SDK's boxed error, made a `std::error::Error` to chain).
#[derive(Debug)]
struct BodyError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "reading the answer failed: {}", self.0)
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Reads either API's stream events.
enum Events {
    Responses(responses::Events),
    Chat(chat::Events),
}

impl Events {
    fn of(api: OpenAiApi) -> Self {
        match api {
            OpenAiApi::Responses => Events::Responses(responses::Events::default()),
            OpenAiApi::ChatCompletions => Events::Chat(chat::Events::default()),
        }
    }

    fn read(&mut self, data: &str, bad: &Malformed<'_>) -> Result<Vec<BackendEvent>> {
        if data.trim() == "[DONE]" {
            if let Events::Chat(c) = self {
                c.done = true;
            }
            return Ok(Vec::new());
        }
        match self {
            Events::Responses(r) => r.read(data, bad),
            Events::Chat(c) => c.read(data, bad),
        }
    }

    /// The terminal event came: nothing after it matters.
    fn over(&self) -> bool {
        match self {
            Events::Responses(r) => r.done,
            Events::Chat(c) => c.done,
        }
    }

    /// The stream may end here without being cut short.
    fn complete(&self) -> bool {
        match self {
            Events::Responses(r) => r.done,
            Events::Chat(c) => c.finished(),
        }
    }
}

impl Backend for OpenAiBackend {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Completion>> {
        Box::pin(async move {
            let target = &call.attempt.target;
            let (api, response) = self.send(call, false).await?;
            let bytes = collect(response.into_body(), target).await?;
            let bad = Malformed {
                target: target.id(),
                region: target.region(),
            };
            match api {
                OpenAiApi::Responses => responses::completion(&bytes, &bad),
                OpenAiApi::ChatCompletions => {
                    let v: Value = serde_json::from_slice(&bytes)
                        .map_err(|e| bad.error(&format!("the body is not JSON: {e}")))?;
                    chat::completion(&v, &bad)
                }
            }
        })
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>> {
        Box::pin(async move {
            let target = call.attempt.target.clone();
            let (api, response) = self.send(call, true).await?;
            let mut body = response.into_body();
            let events = async_stream::stream! {
                let bad = Malformed { target: target.id(), region: target.region() };
                let mut decoder = sse::SseDecoder::default();
                let mut events = Events::of(api);
                loop {
                    let chunk = match body.frame().await {
                        Some(Ok(frame)) => match frame.into_data() {
                            Ok(data) => data,
                            Err(_) => continue,
                        },
                        Some(Err(e)) => {
                            yield Err(errors::transport(BodyError(e), false, target.id(), target.region()));
                            return;
                        }
                        None => break,
                    };
                    for data in decoder.push(&chunk) {
                        match events.read(&data, &bad) {
                            Ok(evs) => for ev in evs { yield Ok::<BackendEvent, Error>(ev) },
                            Err(e) => { yield Err(e); return; }
                        }
                    }
                    if events.over() {
                        return;
                    }
                }
                if let Some(data) = decoder.finish() {
                    match events.read(&data, &bad) {
                        Ok(evs) => for ev in evs { yield Ok(ev) },
                        Err(e) => { yield Err(e); return; }
                    }
                }
                if !events.complete() {
                    yield Err(bad.error("the stream ended before its last event"));
                }
            };
            Ok(events.boxed())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_endpoints_host_is_its_regions_partitions() {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let openai: OpenAiConfig = toml::from_str(
            "runtime = [\"responses\"]\nfirst = true\nmantle = { apis = [\"responses\"], prefix = \"/openai/v1\" }\n",
        )
        .unwrap();
        let url = |endpoint, region: &str| {
            let backend = OpenAiBackend::new(endpoint, &sdk, OpenAiSettings::default());
            let target = match endpoint {
                Endpoint::Runtime => Target::bedrock_openai(region, "us.openai.gpt-6-sol", None),
                Endpoint::Mantle => Target::mantle(region, "openai.gpt-6-sol"),
            };
            backend.url(&target, &openai, OpenAiApi::Responses)
        };
        assert_eq!(
            url(Endpoint::Runtime, "us-east-1"),
            "https://bedrock-runtime.us-east-1.amazonaws.com/openai/v1/responses"
        );
        assert_eq!(
            url(Endpoint::Mantle, "us-east-1"),
            "https://bedrock-mantle.us-east-1.api.aws/openai/v1/responses"
        );
        assert_eq!(
            url(Endpoint::Runtime, "eusc-de-east-1"),
            "https://bedrock-runtime.eusc-de-east-1.amazonaws.eu/openai/v1/responses"
        );
        assert_eq!(
            url(Endpoint::Runtime, "cn-north-1"),
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn/openai/v1/responses"
        );
    }
}
