//! Where an attempt goes ([`Target`]) and how ([`Attempt`]), who serves it ([`Provider`]),
//! by which of its APIs ([`Api`]) and profiles ([`ProfileScope`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ServiceTier;
use super::geography::ProfileScope;

/// Who serves a model: Bedrock, SageMaker, or a provider of your own whose
/// [`Backend`](crate::backend::Backend) you register with
/// [`RouterBuilder::backend`](crate::RouterBuilder::backend).
///
/// In configuration it is the provider's name: `provider = "bedrock"`, `"sagemaker"`, or any
/// other name for your own. A provider serves its models by one or more [`Api`]s: Bedrock by
/// Converse and by the OpenAI-compatible APIs of bedrock-runtime and bedrock-mantle; a
/// target names both ([`Target::provider`], [`Target::api`]).
///
/// ```
/// use laneway::Provider;
/// assert_eq!(Provider::named("bedrock"), Provider::Bedrock);
/// assert_eq!(Provider::named("echo").as_str(), "echo");
/// assert_eq!(Provider::Sagemaker.system(), "aws.sagemaker");
/// assert_eq!(Provider::Bedrock.system(), "aws.bedrock");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Provider {
    /// Amazon Bedrock (bedrock-runtime and bedrock-mantle).
    Bedrock,
    /// Bedrock Runtime's OpenAI-compatible APIs: now [`Provider::Bedrock`] with
    /// [`Api::OpenAiRuntime`]. Laneway no longer makes this value; registering a backend for
    /// it registers one for that API.
    #[deprecated(
        since = "0.9.0",
        note = "a provider and its APIs are named apart: Provider::Bedrock with Api::OpenAiRuntime"
    )]
    BedrockOpenAi,
    /// The bedrock-mantle endpoint: now [`Provider::Bedrock`] with [`Api::OpenAiMantle`].
    /// Laneway no longer makes this value; registering a backend for it registers one for that
    /// API.
    #[deprecated(
        since = "0.9.0",
        note = "a provider and its APIs are named apart: Provider::Bedrock with Api::OpenAiMantle"
    )]
    BedrockMantle,
    /// Amazon SageMaker real-time endpoints.
    Sagemaker,
    /// A provider of your own, by name.
    Other(Arc<str>),
}

impl Provider {
    /// The provider of this name (`"bedrock"` and `"sagemaker"` are the built-in ones; the
    /// deprecated `"bedrock-openai"` and `"bedrock-mantle"` still name the values that stand
    /// for Bedrock's OpenAI-compatible APIs, so that a backend registered under them replaces
    /// those APIs' backends for one more release).
    pub fn named(name: &str) -> Self {
        #[allow(deprecated)]
        match name {
            "bedrock" => Provider::Bedrock,
            "bedrock-openai" => Provider::BedrockOpenAi,
            "bedrock-mantle" => Provider::BedrockMantle,
            "sagemaker" => Provider::Sagemaker,
            other => Provider::Other(other.into()),
        }
    }

    /// Its name, as in configuration.
    pub fn as_str(&self) -> &str {
        #[allow(deprecated)]
        match self {
            Provider::Bedrock => "bedrock",
            Provider::BedrockOpenAi => "bedrock-openai",
            Provider::BedrockMantle => "bedrock-mantle",
            Provider::Sagemaker => "sagemaker",
            Provider::Other(name) => name,
        }
    }

    /// Whether it is Bedrock.
    #[deprecated(since = "0.9.0", note = "compare with Provider::Bedrock")]
    pub fn is_bedrock(&self) -> bool {
        self.registered_as().0 == Provider::Bedrock
    }

    /// Whether it is called through cross-region inference profiles where its model needs one.
    #[deprecated(
        since = "0.9.0",
        note = "a capability of the API: Api::serves_profiles"
    )]
    pub fn serves_profiles(&self) -> bool {
        self.default_api().serves_profiles()
    }

    /// Its name in telemetry (`gen_ai.provider.name` of the OpenTelemetry GenAI conventions):
    /// `aws.bedrock`, `aws.sagemaker`, else its own name.
    pub fn system(&self) -> &str {
        #[allow(deprecated)]
        match self {
            Provider::Bedrock | Provider::BedrockOpenAi | Provider::BedrockMantle => "aws.bedrock",
            Provider::Sagemaker => "aws.sagemaker",
            Provider::Other(name) => name,
        }
    }

    /// The provider and API a backend registered for this provider serves: Bedrock's is
    /// Converse, SageMaker's InvokeEndpoint, your own provider's its own; the deprecated
    /// names stand for Bedrock's OpenAI-compatible APIs.
    pub(crate) fn registered_as(&self) -> (Provider, Api) {
        #[allow(deprecated)]
        match self {
            Provider::BedrockOpenAi => (Provider::Bedrock, Api::OpenAiRuntime),
            Provider::BedrockMantle => (Provider::Bedrock, Api::OpenAiMantle),
            other => (other.clone(), other.default_api()),
        }
    }

    /// The API its models are called by unless their configuration says another.
    fn default_api(&self) -> Api {
        #[allow(deprecated)]
        match self {
            Provider::Bedrock => Api::Converse,
            Provider::BedrockOpenAi => Api::OpenAiRuntime,
            Provider::BedrockMantle => Api::OpenAiMantle,
            Provider::Sagemaker => Api::InvokeEndpoint,
            Provider::Other(_) => Api::Own,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Provider {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        if name.is_empty() {
            return Err(serde::de::Error::custom(
                "a provider name must not be empty",
            ));
        }
        Ok(Provider::named(&name))
    }
}

/// The API a target is called by: one of its [`Provider`]'s. A backend serves one API of one
/// provider; what an API can carry (profiles, guardrails, stop sequences) is asked of it, or of
/// the model's configuration, never of a provider's name.
///
/// ```
/// use laneway::Api;
/// assert_eq!(Api::OpenAiMantle.as_str(), "openai-mantle");
/// assert!(!Api::OpenAiMantle.serves_profiles());
/// assert!(Api::OpenAiRuntime.is_openai_compatible());
/// assert_eq!(serde_json::to_value(Api::OpenAiRuntime).unwrap(), "openai-runtime");
/// ```
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Api {
    /// Bedrock Runtime's Converse and ConverseStream.
    Converse,
    /// Bedrock Runtime's OpenAI-compatible APIs (`/openai/v1`: Responses, Chat Completions),
    /// which share the runtime's quotas with Converse.
    #[serde(rename = "openai-runtime")]
    OpenAiRuntime,
    /// The bedrock-mantle endpoint's OpenAI-compatible APIs (Responses, Chat Completions),
    /// with a quota pool of its own (input and output tokens per minute apart).
    #[serde(rename = "openai-mantle")]
    OpenAiMantle,
    /// SageMaker's InvokeEndpoint and InvokeEndpointWithResponseStream.
    InvokeEndpoint,
    /// A provider of your own: the one API its backend speaks.
    Own,
}

impl Api {
    /// Its name in a decision and in telemetry: `converse`, `openai-runtime`,
    /// `openai-mantle`, `invoke-endpoint`, `own`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Converse => "converse",
            Api::OpenAiRuntime => "openai-runtime",
            Api::OpenAiMantle => "openai-mantle",
            Api::InvokeEndpoint => "invoke-endpoint",
            Api::Own => "own",
        }
    }

    /// Whether it is one of the OpenAI-compatible APIs (Responses, Chat Completions).
    pub fn is_openai_compatible(self) -> bool {
        matches!(self, Api::OpenAiRuntime | Api::OpenAiMantle)
    }

    /// Whether it is called through cross-region inference profiles where its model needs
    /// one: Converse and the OpenAI-compatible runtime are; mantle serves bare ids only.
    pub fn serves_profiles(self) -> bool {
        matches!(self, Api::Converse | Api::OpenAiRuntime)
    }

    /// Whether it applies a Bedrock guardrail given with the request (Converse does).
    pub fn applies_guardrails(self) -> bool {
        self == Api::Converse
    }

    /// Whether it carries fields written for one model (Converse's
    /// `additionalModelRequestFields`).
    pub fn takes_model_fields(self) -> bool {
        self == Api::Converse
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One target to try, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// The configured model this attempt sends to (a fallback family's variant may differ from
    /// the plan's model).
    pub model: Arc<str>,
    /// Where it goes: the provider, the region and the id sent.
    pub target: Target,
    /// The Bedrock service tier; `None` for SageMaker.
    pub tier: Option<ServiceTier>,
    /// Ask for latency-optimized inference (`performanceConfig.latency = optimized`).
    pub latency_optimized: bool,
    /// What of the request's reasoning, model fields and earlier reasoning this attempt's model
    /// gets (the planner sets it last, for every attempt, after every policy).
    #[serde(skip_serializing_if = "AttemptShape::is_plain")]
    pub shape: AttemptShape,
}

/// How the request is shaped for one attempt's model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AttemptShape {
    /// Reasoning, as this model spells it; `None` sends none.
    pub reasoning: Option<super::reasoning::ReasoningWire>,
    /// Whether the request's `model_fields` go (the attempt is on the model they were written
    /// for).
    pub model_fields: bool,
    /// Whether the conversation's reasoning blocks go (else they are left out of the turns).
    pub reasoning_history: bool,
    /// The request's sampling parameters this model refuses: the attempt goes without them
    /// (said in the decision).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsent_sampling: Vec<SamplingParameter>,
}

/// A sampling parameter of the request a model may refuse (some reasoning models take only
/// their own: Claude Opus 4.7, some of OpenAI's GPT models on Bedrock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingParameter {
    /// `inference.temperature`.
    Temperature,
    /// `inference.top_p`.
    TopP,
}

impl SamplingParameter {
    /// Its path in the request (`inference.temperature`).
    pub fn field(self) -> &'static str {
        match self {
            SamplingParameter::Temperature => "inference.temperature",
            SamplingParameter::TopP => "inference.top_p",
        }
    }
}

impl AttemptShape {
    /// The request's temperature, unless this attempt's model refuses it.
    pub fn temperature(&self, request: &super::GenerateRequest) -> Option<f32> {
        request.inference.temperature.filter(|_| {
            !self
                .unsent_sampling
                .contains(&SamplingParameter::Temperature)
        })
    }

    /// The request's `top_p`, unless this attempt's model refuses it.
    pub fn top_p(&self, request: &super::GenerateRequest) -> Option<f32> {
        request
            .inference
            .top_p
            .filter(|_| !self.unsent_sampling.contains(&SamplingParameter::TopP))
    }

    /// Nothing beyond the plain request.
    pub fn is_plain(&self) -> bool {
        *self == Self::default()
    }
}

/// Where an attempt goes: a provider, a region, and the id sent there.
///
/// ```
/// use laneway::{config::ProfileScope, Provider, Target};
/// let t = Target::bedrock("us-east-1", "us.amazon.nova-lite-v1:0", Some("us".parse::<ProfileScope>().unwrap()));
/// assert_eq!((t.id(), t.region(), t.provider()), ("us.amazon.nova-lite-v1:0", "us-east-1", &Provider::Bedrock));
/// let e = Target::sagemaker("us-west-2", "llama-tgi");
/// assert_eq!(e.profile(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Who serves it.
    pub provider: Provider,
    /// Which of its provider's APIs it is called by.
    pub api: Api,
    /// The region the request is signed for (for your own providers, any name you give).
    pub region: Arc<str>,
    /// The id sent: a Bedrock model or inference-profile id, a SageMaker endpoint name, or your
    /// provider's model id.
    pub id: Arc<str>,
    /// The Bedrock inference profile, when `id` is a profile id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileScope>,
}

impl Target {
    /// A Bedrock model or inference profile in a region.
    pub fn bedrock(
        region: impl Into<Arc<str>>,
        model_id: impl Into<Arc<str>>,
        profile: Option<ProfileScope>,
    ) -> Self {
        Self {
            provider: Provider::Bedrock,
            api: Api::Converse,
            region: region.into(),
            id: model_id.into(),
            profile,
        }
    }

    /// A model or inference profile on bedrock-runtime's OpenAI-compatible APIs (`/openai/v1`).
    pub fn bedrock_openai(
        region: impl Into<Arc<str>>,
        model_id: impl Into<Arc<str>>,
        profile: Option<ProfileScope>,
    ) -> Self {
        Self {
            api: Api::OpenAiRuntime,
            ..Self::bedrock(region, model_id, profile)
        }
    }

    /// A model on the bedrock-mantle endpoint, by its id there (mantle serves no profiles).
    pub fn mantle(region: impl Into<Arc<str>>, model_id: impl Into<Arc<str>>) -> Self {
        Self {
            api: Api::OpenAiMantle,
            ..Self::bedrock(region, model_id, None)
        }
    }

    /// A SageMaker endpoint, by name, in its region.
    pub fn sagemaker(region: impl Into<Arc<str>>, endpoint: impl Into<Arc<str>>) -> Self {
        Self {
            provider: Provider::Sagemaker,
            api: Api::InvokeEndpoint,
            region: region.into(),
            id: endpoint.into(),
            profile: None,
        }
    }

    /// A model of a provider of your own, by the id its backend takes, in one of its regions.
    pub fn own(
        provider: Provider,
        region: impl Into<Arc<str>>,
        model_id: impl Into<Arc<str>>,
    ) -> Self {
        let (provider, api) = provider.registered_as();
        Self {
            provider,
            api,
            region: region.into(),
            id: model_id.into(),
            profile: None,
        }
    }

    /// The id sent: model id, profile id or endpoint name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who serves this target.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// Which of its provider's APIs this target is called by.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The region the request is signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The inference profile, for Bedrock profile targets.
    pub fn profile(&self) -> Option<&ProfileScope> {
        self.profile.as_ref()
    }
}
