//! The client a team writes without Laneway: the official SDKs with their default retries,
//! every call to the family's strongest variant at the standard tier in one region, streamed,
//! no cache checkpoints; a self-hosted model called on its one endpoint.

use std::time::{Duration, Instant};

use aws_sdk_bedrockruntime as bedrock;
use aws_sdk_sagemakerruntime as sagemaker;
use bedrock::types::{
    ContentBlock, ConversationRole, ConverseStreamOutput, InferenceConfiguration, Message,
    SystemContentBlock,
};
use laneway::config::ModelConfig;
use laneway::{
    Config, GenerateRequest, ModelRef, Provider, Role, ServiceTier, TokenCounter as _, Usage,
};

use super::compare::Call;

/// The one region the naive client uses.
pub(super) const REGION: &str = "us-east-1";

/// The official SDK clients, as a team would configure them: default retry mode and attempts.
pub(super) struct NaiveClient {
    bedrock: bedrock::Client,
    sagemaker: sagemaker::Client,
    config: Config,
}

impl NaiveClient {
    pub(super) async fn new(endpoint_url: &str, config: Config) -> Self {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(REGION))
            .endpoint_url(endpoint_url)
            .credentials_provider(aws_credential_types::Credentials::new(
                laneway_emulator::TEST_ACCESS_KEY_ID,
                laneway_emulator::TEST_SECRET_ACCESS_KEY,
                None,
                None,
                "demo",
            ))
            .load()
            .await;
        Self {
            bedrock: bedrock::Client::new(&sdk),
            sagemaker: sagemaker::Client::new(&sdk),
            config,
        }
    }

    /// The configured model a request goes to: a family's strongest (last) variant.
    fn model_of(&self, request: &GenerateRequest) -> String {
        match &request.model {
            ModelRef::Family(f) => self
                .config
                .families
                .get(f)
                .and_then(|f| f.variants.last())
                .map(|v| v.to_string())
                .unwrap_or_else(|| f.clone()),
            ModelRef::Model(m) => m.clone(),
            ModelRef::Default => self.config.default_model.clone().unwrap_or_default(),
        }
    }

    /// Sends one request; the call's record (TTFT, usage, cost) or its failure.
    pub(super) async fn call(&self, request: &GenerateRequest) -> Call {
        let model = self.model_of(request);
        let started = Instant::now();
        let result = match self.config.models.get(&model) {
            Some(ModelConfig::Sagemaker(s)) => match s.endpoints.first() {
                Some(e) => self.sagemaker_call(&e.name, request, started).await,
                None => Err("no endpoint".into()),
            },
            Some(m) => self.bedrock_call(&model, m, request, started).await,
            None => Err(format!("{model} is not configured")),
        };
        let mut call = Call::of_request(request);
        match result {
            Ok((ttft, usage)) => {
                let m = &self.config.models[&model];
                let profile = us_profile(m);
                call.ok = true;
                call.ttft = ttft;
                call.cost_usd = laneway::cost::call_cost(
                    m.price(),
                    &self.config.pricing,
                    &usage,
                    // Bedrock's standard tier; SageMaker has no tiers.
                    (m.provider() == Provider::Bedrock).then_some(ServiceTier::STANDARD),
                    profile.as_ref(),
                );
                call.usage = usage;
            }
            Err(e) => call.error = Some(e),
        }
        call
    }

    async fn bedrock_call(
        &self,
        model: &str,
        m: &ModelConfig,
        request: &GenerateRequest,
        started: Instant,
    ) -> Result<(Option<Duration>, Usage), String> {
        // Newer Claude models take only profile ids: the geography's profile.
        let id = match us_profile(m) {
            Some(p) => format!("{p}.{model}"),
            None => model.to_string(),
        };
        let mut call = self.bedrock.converse_stream().model_id(id);
        for s in &request.system {
            if let laneway::SystemBlock::Text(t) = s {
                call = call.system(SystemContentBlock::Text(t.clone()));
            }
        }
        for msg in &request.messages {
            let role = match msg.role {
                Role::User => ConversationRole::User,
                Role::Assistant => ConversationRole::Assistant,
            };
            let mut b = Message::builder().role(role);
            for c in &msg.content {
                if let laneway::ContentBlock::Text(t) = c {
                    b = b.content(ContentBlock::Text(t.clone()));
                }
            }
            call = call.messages(b.build().map_err(|e| e.to_string())?);
        }
        if let Some(n) = request.inference.max_tokens {
            call = call.inference_config(
                InferenceConfiguration::builder()
                    .max_tokens(i32::try_from(n).unwrap_or(i32::MAX))
                    .build(),
            );
        }
        let mut out = call
            .send()
            .await
            .map_err(|e| format!("{}", aws_sdk_bedrockruntime::error::DisplayErrorContext(e)))?;
        let mut ttft = None;
        let mut usage = Usage::default();
        loop {
            match out.stream.recv().await {
                Ok(Some(ConverseStreamOutput::ContentBlockDelta(_))) => {
                    ttft.get_or_insert_with(|| started.elapsed());
                }
                Ok(Some(ConverseStreamOutput::Metadata(meta))) => {
                    if let Some(u) = meta.usage() {
                        usage.input_tokens = u.input_tokens().max(0) as u32;
                        usage.output_tokens = u.output_tokens().max(0) as u32;
                        usage.cache_read_tokens =
                            u.cache_read_input_tokens().unwrap_or(0).max(0) as u32;
                        usage.cache_write_tokens =
                            u.cache_write_input_tokens().unwrap_or(0).max(0) as u32;
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    return Err(format!(
                        "{}",
                        aws_sdk_bedrockruntime::error::DisplayErrorContext(e)
                    ));
                }
            }
        }
        Ok((ttft, usage))
    }

    /// A TGI endpoint, called as its examples do: the whole answer, with `details` for the
    /// token count; its TTFT is the whole call.
    async fn sagemaker_call(
        &self,
        endpoint: &str,
        request: &GenerateRequest,
        started: Instant,
    ) -> Result<(Option<Duration>, Usage), String> {
        let prompt: String = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|c| match c {
                laneway::ContentBlock::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let body = serde_json::json!({
            "inputs": prompt,
            "parameters": { "max_new_tokens": request.inference.max_tokens.unwrap_or(256), "details": true },
        });
        let out = self
            .sagemaker
            .invoke_endpoint()
            .endpoint_name(endpoint)
            .content_type("application/json")
            .body(body.to_string().into_bytes().into())
            .send()
            .await
            .map_err(|e| {
                format!(
                    "{}",
                    aws_sdk_sagemakerruntime::error::DisplayErrorContext(e)
                )
            })?;
        let v: serde_json::Value = out
            .body()
            .map(|b| serde_json::from_slice(b.as_ref()).unwrap_or_default())
            .unwrap_or_default();
        let generated = v
            .pointer("/0/details/generated_tokens")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let usage = Usage {
            // The container reports no input count: estimated as Laneway estimates it.
            input_tokens: laneway::CharEstimate.count(&prompt),
            output_tokens: generated as u32,
            input_estimated: true,
            ..Usage::default()
        };
        Ok((Some(started.elapsed()), usage))
    }
}

/// The `us` profile, for a model whose bare id is not served in [`REGION`].
fn us_profile(m: &ModelConfig) -> Option<laneway::ProfileScope> {
    m.requires_profile_in(REGION)
        .then(|| m.profiles().iter().find(|p| p.prefix() == "us").cloned())
        .flatten()
}
