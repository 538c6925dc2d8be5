//! Where an attempt goes ([`Target`]) and how ([`Attempt`]), and who serves it
//! ([`Provider`], [`ProfileScope`]).

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
/// other name for your own. A Bedrock model is served on up to three surfaces, each a provider
/// of its targets: Converse on bedrock-runtime ([`Bedrock`](Provider::Bedrock)), the
/// OpenAI-compatible APIs on bedrock-runtime's `/openai/v1`
/// ([`BedrockOpenAi`](Provider::BedrockOpenAi)) and on bedrock-mantle
/// ([`BedrockMantle`](Provider::BedrockMantle)); its configuration says which (`openai`).
///
/// ```
/// use laneway::Provider;
/// assert_eq!(Provider::named("bedrock"), Provider::Bedrock);
/// assert_eq!(Provider::named("echo").as_str(), "echo");
/// assert_eq!(Provider::Sagemaker.system(), "aws.sagemaker");
/// assert!(Provider::BedrockMantle.is_bedrock());
/// assert_eq!(Provider::BedrockMantle.system(), "aws.bedrock");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Provider {
    /// Amazon Bedrock Runtime (Converse, ConverseStream).
    Bedrock,
    /// Bedrock Runtime's OpenAI-compatible APIs (`/openai/v1`: Responses, Chat Completions),
    /// which share the runtime's quotas with Converse.
    BedrockOpenAi,
    /// The bedrock-mantle endpoint's OpenAI-compatible APIs (Responses, Chat Completions),
    /// with a quota pool of its own (input and output tokens per minute apart).
    BedrockMantle,
    /// Amazon SageMaker real-time endpoints (InvokeEndpoint, InvokeEndpointWithResponseStream).
    Sagemaker,
    /// A provider of your own, by name.
    Other(Arc<str>),
}

impl Provider {
    /// The provider of this name (`"bedrock"` and `"sagemaker"` are the built-in ones).
    pub fn named(name: &str) -> Self {
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
        match self {
            Provider::Bedrock => "bedrock",
            Provider::BedrockOpenAi => "bedrock-openai",
            Provider::BedrockMantle => "bedrock-mantle",
            Provider::Sagemaker => "sagemaker",
            Provider::Other(name) => name,
        }
    }

    /// Whether it is one of Bedrock's surfaces (Converse or an OpenAI-compatible one).
    pub fn is_bedrock(&self) -> bool {
        matches!(
            self,
            Provider::Bedrock | Provider::BedrockOpenAi | Provider::BedrockMantle
        )
    }

    /// Whether it is called through cross-region inference profiles where its model needs
    /// one: Bedrock's Converse and OpenAI-compatible runtime are; Mantle serves bare ids only.
    pub fn serves_profiles(&self) -> bool {
        !matches!(self, Provider::BedrockMantle)
    }

    /// Its name in telemetry (`gen_ai.provider.name` of the OpenTelemetry GenAI conventions):
    /// `aws.bedrock`, `aws.sagemaker`, else its own name.
    pub fn system(&self) -> &str {
        match self {
            Provider::Bedrock | Provider::BedrockOpenAi | Provider::BedrockMantle => "aws.bedrock",
            Provider::Sagemaker => "aws.sagemaker",
            Provider::Other(name) => name,
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
}

impl AttemptShape {
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
    /// The service that serves it.
    pub provider: Provider,
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
            provider: Provider::BedrockOpenAi,
            ..Self::bedrock(region, model_id, profile)
        }
    }

    /// A model on the bedrock-mantle endpoint, by its id there (mantle serves no profiles).
    pub fn mantle(region: impl Into<Arc<str>>, model_id: impl Into<Arc<str>>) -> Self {
        Self {
            provider: Provider::BedrockMantle,
            ..Self::bedrock(region, model_id, None)
        }
    }

    /// A SageMaker endpoint, by name, in its region.
    pub fn sagemaker(region: impl Into<Arc<str>>, endpoint: impl Into<Arc<str>>) -> Self {
        Self {
            provider: Provider::Sagemaker,
            region: region.into(),
            id: endpoint.into(),
            profile: None,
        }
    }

    /// The id sent: model id, profile id or endpoint name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The service that serves this target.
    pub fn provider(&self) -> &Provider {
        &self.provider
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
