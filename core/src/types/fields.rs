//! Request fields beyond the conversation: structured output, the model-specific fields a
//! request was written for, and request metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};

/// The shape the answer's text must take (Converse's `outputConfig.textFormat`): JSON that
/// conforms to a schema. Bedrock refuses it for models without structured output; Laneway
/// refuses it first, naming the model.
///
/// ```
/// use laneway::{GenerateRequest, OutputFormat};
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": { "city": { "type": "string" } },
///     "required": ["city"],
///     "additionalProperties": false,
/// });
/// let req = GenerateRequest::user("Where is the Louvre?").output_format(OutputFormat::json_schema(schema));
/// assert!(req.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// Text that parses as JSON and conforms to `schema`.
    JsonSchema(JsonSchemaFormat),
}

impl OutputFormat {
    /// JSON conforming to `schema` (an object schema).
    pub fn json_schema(schema: serde_json::Value) -> Self {
        Self::JsonSchema(JsonSchemaFormat {
            schema,
            name: None,
            description: None,
        })
    }

    /// The schema the answer conforms to.
    pub fn schema(&self) -> &serde_json::Value {
        match self {
            Self::JsonSchema(f) => &f.schema,
        }
    }

    /// The schema's name, when given.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::JsonSchema(f) => f.name.as_deref(),
        }
    }
}

/// A JSON schema for the answer, with the name and description the model sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaFormat {
    /// The JSON schema, of `"type": "object"`.
    pub schema: serde_json::Value,
    /// The schema's name, which the model sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the schema is for, which the model sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Fields a request was written for one model (Converse's `additionalModelRequestFields` and
/// `additionalModelResponseFieldPaths`): sent only while the call stays on that model. An
/// attempt on another model (a failover, a variant choice) goes without them, and the decision
/// says so (`Reason::ModelFieldsDropped`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFields {
    /// The configured model (or its id or profile id) they were written for; unset, the model
    /// the request names.
    #[serde(default)]
    pub model: Option<String>,
    /// Merged into the model's native request body.
    #[serde(default)]
    pub request: serde_json::Map<String, serde_json::Value>,
    /// JSON pointers into the model's native response to return (`/stop_sequence`).
    #[serde(default)]
    pub response_paths: Vec<String>,
}

/// A Bedrock guardrail to apply to the call (Converse's `guardrailConfig`): it evaluates the
/// request's `GuardContent` blocks (all of its messages when there are none) and the answer;
/// when it intervenes, the answer is its blocked message or the masked text, the stop reason
/// `guardrail_intervened`, and `response.guardrail_trace` says why (with `trace` on).
///
/// ```
/// use laneway::{GenerateRequest, Guardrail, GuardrailTrace};
/// let req = GenerateRequest::user("hi").guardrail(Guardrail::new("gr1abc2def3g", "1").trace(GuardrailTrace::Enabled));
/// assert!(req.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guardrail {
    /// The guardrail's id, or its ARN (which names its region: attempts elsewhere are left
    /// out, since a guardrail is regional).
    pub identifier: String,
    /// A version number, or `DRAFT`.
    pub version: String,
    /// What the guardrail reports in the response's `guardrail_trace` (default: nothing).
    #[serde(default)]
    pub trace: GuardrailTrace,
    /// Streams: whether chunks are held until the guardrail has checked them (`sync`, which
    /// masking needs) or sent at once (`async`).
    #[serde(default)]
    pub stream_mode: GuardrailStreamMode,
}

impl Guardrail {
    /// A guardrail by id (or ARN) and version, its trace off.
    pub fn new(identifier: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            identifier: identifier.into(),
            version: version.into(),
            trace: GuardrailTrace::Disabled,
            stream_mode: GuardrailStreamMode::Sync,
        }
    }
    /// Sets what the guardrail reports.
    pub fn trace(mut self, trace: GuardrailTrace) -> Self {
        self.trace = trace;
        self
    }

    /// The region an ARN identifier names (`arn:aws:bedrock:{region}:{account}:guardrail/{id}`).
    pub fn region(&self) -> Option<&str> {
        super::Arn::parse_bedrock(&self.identifier).map(|arn| arn.region)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let id_ok = !self.identifier.is_empty()
            && self.identifier.len() <= 2048
            && (self.region().is_some()
                || self
                    .identifier
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
        if !id_ok {
            return Err(Error::invalid(
                "guardrail.identifier",
                format!(
                    "{:?} is not a guardrail id (lower-case letters and digits) or ARN",
                    self.identifier
                ),
            ));
        }
        let v = &self.version;
        let version_ok = v == "DRAFT"
            || (!v.is_empty()
                && v.len() <= 8
                && !v.starts_with('0')
                && v.chars().all(|c| c.is_ascii_digit()));
        if !version_ok {
            return Err(Error::invalid(
                "guardrail.version",
                format!("{v:?}: a version number (1 to 99999999) or DRAFT"),
            ));
        }
        Ok(())
    }
}

/// What a guardrail reports in the response's trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailTrace {
    /// Nothing (the default).
    #[default]
    Disabled,
    /// The assessments of the policies that intervened.
    Enabled,
    /// Every policy's assessment, not only those that intervened.
    EnabledFull,
}

impl GuardrailTrace {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Enabled => "enabled",
            Self::EnabledFull => "enabled_full",
        }
    }
}

/// How a guardrail checks a stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailStreamMode {
    /// Chunks are held until the guardrail has checked them (the default; masking needs it).
    #[default]
    Sync,
    /// Chunks are sent at once while the guardrail checks them, so text it would block may
    /// reach the caller before it intervenes.
    Async,
}

/// Content for the guardrail to evaluate (Converse's `guardContent`), in a message or the
/// system prompt: with any in the request, the guardrail evaluates only these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardContent {
    /// Text for the guardrail to evaluate, with its roles in the contextual grounding check.
    Text {
        /// The text.
        text: String,
        /// `grounding_source`, `query` or `guard_content` (the contextual grounding check's
        /// roles).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        qualifiers: Vec<GuardQualifier>,
    },
    /// A PNG or JPEG image.
    Image(super::Image),
}

/// The role of a guarded text in the contextual grounding check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardQualifier {
    /// The source the answer must be grounded in.
    GroundingSource,
    /// The question the answer must be relevant to.
    Query,
    /// The text to check against the grounding source and the query.
    GuardContent,
}

impl GuardQualifier {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GroundingSource => "grounding_source",
            Self::Query => "query",
            Self::GuardContent => "guard_content",
        }
    }
}

/// Bedrock's limits on `requestMetadata`: at most 16 pairs, keys of 1 to 256 characters and
/// values of at most 256, of letters, digits, white space and `:_@$#=/+,-.`. Source: the Converse API
/// reference (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).
pub(crate) fn validate_metadata(metadata: &BTreeMap<String, String>) -> Result<()> {
    const MAX_PAIRS: usize = 16;
    if metadata.len() > MAX_PAIRS {
        return Err(Error::invalid(
            "metadata",
            format!("at most {MAX_PAIRS} pairs, got {}", metadata.len()),
        ));
    }
    let allowed = |s: &str| {
        s.chars()
            .all(|c| c.is_alphanumeric() || c.is_whitespace() || ":_@$#=/+,-.".contains(c))
    };
    for (k, v) in metadata {
        let chars = k.chars().count();
        if chars == 0 || chars > 256 || !allowed(k) {
            return Err(Error::invalid(
                format!("metadata.{k}"),
                "a key is 1 to 256 letters, digits, spaces or :_@$#=/+,-.",
            ));
        }
        if v.chars().count() > 256 || !allowed(v) {
            return Err(Error::invalid(
                format!("metadata.{k}"),
                "a value is at most 256 letters, digits, spaces or :_@$#=/+,-.",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_beyond_bedrocks_limits_is_named() {
        let mut m: BTreeMap<String, String> =
            (0..16).map(|i| (format!("k{i}"), "v".into())).collect();
        assert!(validate_metadata(&m).is_ok());
        m.insert("k16".into(), "v".into());
        assert!(
            validate_metadata(&m)
                .unwrap_err()
                .to_string()
                .contains("16")
        );
        let bad: BTreeMap<String, String> = [("team".into(), "a;b".into())].into();
        assert!(
            validate_metadata(&bad)
                .unwrap_err()
                .to_string()
                .contains("metadata.team")
        );
    }
}
