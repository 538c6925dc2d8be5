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
}

/// A JSON schema for the answer, with the name and description the model sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaFormat {
    pub schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
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
        assert!(validate_metadata(&m)
            .unwrap_err()
            .to_string()
            .contains("16"));
        let bad: BTreeMap<String, String> = [("team".into(), "a;b".into())].into();
        assert!(validate_metadata(&bad)
            .unwrap_err()
            .to_string()
            .contains("metadata.team"));
    }
}
