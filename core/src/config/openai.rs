//! Where a Bedrock model is served beyond Converse: the `openai` table of a model, naming the
//! OpenAI-compatible APIs bedrock-runtime's `/openai/v1` and the bedrock-mantle endpoint serve
//! it by, its id and path prefix on mantle, and mantle's own quota pool.
//!
//! Sources: docs.aws.amazon.com/bedrock/latest/userguide/bedrock-mantle.html,
//! inference-chat-completions.html, quotas-mantle.html (docs/research/openai-endpoints.md).

use serde::{Deserialize, Serialize};

use crate::types::{Api, GenerateRequest};

/// One of the OpenAI-compatible APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenAiApi {
    /// `POST …/responses`.
    Responses,
    /// `POST …/chat/completions`.
    ChatCompletions,
}

impl OpenAiApi {
    /// Its path below the API's base (`/openai/v1` or `/v1`).
    pub fn path(self) -> &'static str {
        match self {
            OpenAiApi::Responses => "/responses",
            OpenAiApi::ChatCompletions => "/chat/completions",
        }
    }

    /// Its name in configuration and decisions.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenAiApi::Responses => "responses",
            OpenAiApi::ChatCompletions => "chat_completions",
        }
    }
}

/// The path prefix bedrock-mantle serves a model under, by its model line rather than its
/// vendor: OpenAI's GPT-5.x and GPT-6 under `/openai/v1`, gpt-oss and the other open-weight
/// models under `/v1`; the wrong one is refused ("isn't supported on this route"). A model
/// whose `openai.mantle` table names no `prefix` gets its line's ([`MantlePrefix::of_model`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MantlePrefix {
    /// `/v1`: most open-weight models (the default).
    #[default]
    #[serde(rename = "/v1")]
    V1,
    /// `/openai/v1`: OpenAI's GPT-5.x.
    #[serde(rename = "/openai/v1")]
    OpenAiV1,
}

impl MantlePrefix {
    /// The prefix of a model's line, from its id on mantle (or its key): `openai.gpt-` and a
    /// version number (`openai.gpt-5.4`, `openai.gpt-6-sol`) under `/openai/v1`; every other
    /// (`openai.gpt-oss-120b`, `qwen.qwen3-32b`) under `/v1`.
    ///
    /// ```
    /// use laneway::config::MantlePrefix;
    /// assert_eq!(MantlePrefix::of_model("openai.gpt-6-astra"), MantlePrefix::OpenAiV1);
    /// assert_eq!(MantlePrefix::of_model("openai.gpt-5.6-terra"), MantlePrefix::OpenAiV1);
    /// assert_eq!(MantlePrefix::of_model("openai.gpt-oss-120b"), MantlePrefix::V1);
    /// ```
    pub fn of_model(id: &str) -> Self {
        let bare = id.split_once('.').map_or(id, |(_, rest)| rest);
        let numbered_gpt = bare
            .strip_prefix("gpt-")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if numbered_gpt {
            MantlePrefix::OpenAiV1
        } else {
            MantlePrefix::V1
        }
    }

    /// The prefix as a path.
    pub fn as_str(self) -> &'static str {
        match self {
            MantlePrefix::V1 => "/v1",
            MantlePrefix::OpenAiV1 => "/openai/v1",
        }
    }
}

/// A Bedrock model's OpenAI-compatible APIs (in configuration, its `openai` table).
///
/// ```
/// use laneway::config::{MantlePrefix, OpenAiApi};
/// let c = laneway::Config::from_toml_str(r#"
///     [models."openai.gpt-5.4"]
///     provider = "bedrock"
///     converse = false
///     regions = ["us-east-1"]
///     price = { input_per_1k = 0.00275, output_per_1k = 0.0165 }
///     openai.mantle = { apis = ["responses"], prefix = "/openai/v1" }
/// "#).unwrap();
/// let openai = c.models["openai.gpt-5.4"].openai().unwrap();
/// let mantle = openai.mantle.as_ref().unwrap();
/// assert_eq!((mantle.apis[0], mantle.prefix), (OpenAiApi::Responses, MantlePrefix::OpenAiV1));
/// assert!(openai.runtime.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// The APIs bedrock-runtime's `/openai/v1` serves it by, preferred first; its ids there are
    /// its Converse ids (in-Region where `in_region` allows, its profiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<OpenAiApi>,
    /// How bedrock-mantle serves it, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mantle: Option<MantleConfig>,
    /// Whether its OpenAI-compatible targets are tried before its Converse ones, among targets
    /// equally healthy and equally good for the objective (default: yes).
    pub first: bool,
}

/// How bedrock-mantle serves a model: its APIs, id, path prefix, regions and quotas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MantleConfig {
    /// The APIs it is served by, preferred first.
    pub apis: Vec<OpenAiApi>,
    /// Its id on mantle, when not the model's key (`openai.gpt-oss-120b` for
    /// `openai.gpt-oss-120b-1:0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The path prefix mantle serves it under (default: its model line's,
    /// [`MantlePrefix::of_model`]).
    pub prefix: MantlePrefix,
    /// The regions whose mantle endpoint serves it; absent, the model's `regions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<Vec<String>>,
    /// Mantle's input-token quota per minute in each region: a call counts its input and
    /// `max_tokens` at admission, its input less cache reads when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_minute: Option<u64>,
    /// Mantle's output-token quota per minute in each region, counted as generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_minute: Option<u64>,
}

impl Default for OpenAiConfig {
    /// `[templates.model_openai]` of `defaults.toml`: no APIs yet, tried first.
    fn default() -> Self {
        super::load::template("model_openai")
    }
}

impl OpenAiConfig {
    /// Checks the table: an API named at most once per endpoint, a mantle entry with one.
    pub(crate) fn validate(&self, converse: bool) -> Result<(), String> {
        let twice =
            |apis: &[OpenAiApi]| apis.iter().enumerate().any(|(i, a)| apis[..i].contains(a));
        if twice(&self.runtime) {
            return Err("`openai.runtime` names an API twice".into());
        }
        if let Some(m) = &self.mantle {
            if m.apis.is_empty() {
                return Err("`openai.mantle.apis` must name at least one API".into());
            }
            if twice(&m.apis) {
                return Err("`openai.mantle.apis` names an API twice".into());
            }
            if m.id.as_deref() == Some("") {
                return Err("`openai.mantle.id` must not be empty".into());
            }
        }
        if !converse && self.runtime.is_empty() && self.mantle.is_none() {
            return Err(
                "`converse = false` with no `openai.runtime` or `openai.mantle`: nothing serves the model"
                    .into(),
            );
        }
        Ok(())
    }

    /// The mantle quota (input, output tokens per minute), when either is set.
    pub fn mantle_quota(&self) -> Option<(u64, u64)> {
        let m = self.mantle.as_ref()?;
        (m.input_tokens_per_minute.is_some() || m.output_tokens_per_minute.is_some()).then(|| {
            (
                m.input_tokens_per_minute.unwrap_or(u64::MAX),
                m.output_tokens_per_minute.unwrap_or(u64::MAX),
            )
        })
    }
}

impl super::ModelConfig {
    /// What of `request` this model called by `api` cannot carry, and why: Bedrock's
    /// OpenAI-compatible APIs take no documents, audio, video, S3 images or media in tool
    /// results, and no stop sequences where only Responses serves. `None` for every other
    /// API. The plan leaves such targets out (`Exclusion::NotCarried`).
    pub(crate) fn cannot_carry(
        &self,
        request: &GenerateRequest,
        api: Api,
    ) -> Option<(String, String)> {
        let apis = match (api, self.openai()) {
            (Api::OpenAiRuntime, Some(o)) => o.runtime.as_slice(),
            (Api::OpenAiMantle, Some(o)) => o.mantle.as_ref().map_or(&[][..], |m| &m.apis),
            _ => return None,
        };
        uncarried_content(request).or_else(|| {
        (!request.inference.stop_sequences.is_empty()
            && !apis.contains(&OpenAiApi::ChatCompletions))
        .then(|| {
            (
                "inference.stop_sequences".to_string(),
                format!("{api} serves the model only by the Responses API, which has no stop sequences"),
            )
        })
    })
    }
}

/// The first part of the request Bedrock's OpenAI-compatible APIs cannot carry, and why.
fn uncarried_content(request: &GenerateRequest) -> Option<(String, String)> {
    use crate::types::{ContentBlock as B, MediaSource, ToolResultContent as R};
    for (i, m) in request.messages.iter().enumerate() {
        for (j, b) in m.content.iter().enumerate() {
            let what = match b {
                B::Document(_) => Some("a document"),
                B::Audio(_) => Some("audio"),
                B::Video(_) => Some("video"),
                B::SearchResult(_) => Some("a search result"),
                B::GuardContent(_) => Some("guard content"),
                B::ToolAddition(_) | B::ToolRemoval(_) => Some("a tool addition or removal"),
                B::Image(img) if matches!(img.source, MediaSource::S3 { .. }) => {
                    Some("an image in S3")
                }
                B::ToolResult(r) => r
                    .content
                    .iter()
                    .find(|c| !matches!(c, R::Text(_) | R::Json(_)))
                    .map(|_| "media in a tool result"),
                _ => None,
            };
            if let Some(what) = what {
                return Some((
                    format!("messages[{i}].content[{j}]"),
                    format!("{what} cannot be sent to Bedrock's OpenAI-compatible APIs"),
                ));
            }
        }
    }
    None
}
