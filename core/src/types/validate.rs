//! The checks of a request that need no model's capabilities ([`GenerateRequest::validate`]).

use super::{
    ContentBlock, Document, Error, GenerateRequest, Media, Message, Residency, Result, Role,
    SystemBlock, Tool, ToolChoice,
};

impl GenerateRequest {
    /// Checks what can be checked without a model's capabilities: a non-empty conversation that
    /// starts with a user turn, no empty turns, sane parameters and SLO.
    pub fn validate(&self) -> Result<()> {
        self.validate_conversation()?;
        self.validate_inference()?;
        self.validate_tools()?;
        self.validate_extensions()?;
        self.validate_slo()
    }

    /// A conversation that starts with a user turn, each turn's blocks where they belong.
    fn validate_conversation(&self) -> Result<()> {
        if self.messages.is_empty() {
            return Err(Error::invalid("messages", "must hold at least one message"));
        }
        if self.messages[0].role != Role::User {
            return Err(Error::invalid(
                "messages[0].role",
                "the conversation must start with a user message",
            ));
        }
        let mut documents = 0;
        for (i, m) in self.messages.iter().enumerate() {
            if m.content.is_empty() {
                return Err(Error::invalid(
                    format!("messages[{i}].content"),
                    "must hold at least one block",
                ));
            }
            for (j, b) in m.content.iter().enumerate() {
                validate_block(i, j, m, b, &mut documents)?;
            }
        }
        Ok(())
    }

    /// Sampling parameters in range.
    fn validate_inference(&self) -> Result<()> {
        let p = &self.inference;
        if let Some(n) = p.max_tokens
            && (n < 1 || n > i64::from(i32::MAX))
        {
            return Err(Error::invalid(
                "inference.max_tokens",
                format!("must be between 1 and {}, got {n}", i32::MAX),
            ));
        }
        if let Some(t) = p.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::invalid(
                "inference.temperature",
                format!("must be a finite number >= 0, got {t}"),
            ));
        }
        if let Some(t) = p.top_p
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(Error::invalid(
                "inference.top_p",
                format!("must be in (0, 1], got {t}"),
            ));
        }
        Ok(())
    }

    /// Named tools with object schemas, and a tool choice among them.
    fn validate_tools(&self) -> Result<()> {
        for (i, t) in self.tools.iter().enumerate() {
            if let Tool::Spec(s) = t {
                if s.name.is_empty() {
                    return Err(Error::invalid(
                        format!("tools[{i}].name"),
                        "must not be empty",
                    ));
                }
                if !s.input_schema.is_object() {
                    return Err(Error::invalid(
                        format!("tools[{i}].input_schema"),
                        "must be a JSON object (a JSON schema)",
                    ));
                }
            }
        }
        if let Some(ToolChoice::Tool(name)) = &self.tool_choice {
            let known = self
                .tools
                .iter()
                .any(|t| matches!(t, Tool::Spec(s) if &s.name == name));
            if !known {
                return Err(Error::invalid(
                    "tool_choice",
                    format!("names tool {name:?}, which is not among the request's tools"),
                ));
            }
        }
        if self.tool_choice.is_some() && !self.tools.iter().any(|t| matches!(t, Tool::Spec(_))) {
            return Err(Error::invalid(
                "tool_choice",
                "is set but the request has no tools",
            ));
        }
        Ok(())
    }

    /// SLO durations within a year, a TTFT target before the deadline, a residency with regions.
    fn validate_slo(&self) -> Result<()> {
        for (field, value) in [
            ("slo.ttft_target", self.slo.ttft_target),
            ("slo.deadline", self.slo.deadline),
        ] {
            if value.is_some_and(|d| d > super::units::MAX_DURATION) {
                return Err(Error::invalid(
                    field,
                    format!(
                        "must be at most {} ms (a year), got {:?}",
                        super::units::MAX_DURATION.as_millis(),
                        value.unwrap_or_default()
                    ),
                ));
            }
        }
        if self.slo.deadline.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid("slo.deadline", "must be longer than 0 ms"));
        }
        if let (Some(ttft), Some(deadline)) = (self.slo.ttft_target, self.slo.deadline)
            && ttft > deadline
        {
            return Err(Error::invalid(
                "slo",
                format!("ttft_target {ttft:?} is later than the deadline {deadline:?}"),
            ));
        }
        if let Some(Residency::Regions(r)) = &self.residency
            && r.is_empty()
        {
            return Err(Error::invalid(
                "residency.regions",
                "must name at least one region",
            ));
        }
        Ok(())
    }

    /// Reasoning, structured output, model fields and metadata, as far as they can be checked
    /// without a model: a positive budget, an object schema, JSON pointers, Bedrock's metadata
    /// limits.
    fn validate_extensions(&self) -> Result<()> {
        if let Some(r) = &self.reasoning
            && r.budget_tokens == Some(0)
        {
            return Err(Error::invalid(
                "reasoning.budget_tokens",
                "must be at least 1",
            ));
        }
        if let Some(format) = &self.output_format {
            let schema = format.schema();
            if schema.get("type").and_then(serde_json::Value::as_str) != Some("object") {
                return Err(Error::invalid(
                    "output_format.json_schema.schema",
                    "must be a JSON schema of \"type\": \"object\"",
                ));
            }
        }
        if let Some(fields) = &self.model_fields {
            for (i, p) in fields.response_paths.iter().enumerate() {
                if !p.starts_with('/') || p.len() > 256 {
                    return Err(Error::invalid(
                        format!("model_fields.response_paths[{i}]"),
                        format!("{p:?} is not a JSON pointer (\"/field\", at most 256 characters)"),
                    ));
                }
            }
        }
        if let Some(g) = &self.guardrail {
            g.validate()?;
        }
        let guarded = self
            .system
            .iter()
            .any(|b| matches!(b, SystemBlock::GuardContent(_)))
            || self
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .any(|b| matches!(b, ContentBlock::GuardContent(_)));
        if guarded && self.guardrail.is_none() {
            return Err(Error::invalid(
                "guardrail",
                "the request has guard_content blocks but no guardrail to evaluate them",
            ));
        }
        super::fields::validate_metadata(&self.metadata)
    }
}

/// Block `j` of message `i` (`m`): where it belongs, its format and size; counts documents.
fn validate_block(
    i: usize,
    j: usize,
    m: &Message,
    b: &ContentBlock,
    documents: &mut usize,
) -> Result<()> {
    match b {
        ContentBlock::Text(t) if t.is_empty() => {
            return Err(Error::invalid(
                format!("messages[{i}].content[{j}]"),
                "text must not be empty",
            ));
        }
        ContentBlock::ToolUse(_) if m.role != Role::Assistant => {
            return Err(Error::invalid(
                format!("messages[{i}].content[{j}]"),
                "tool_use belongs in an assistant message",
            ));
        }
        ContentBlock::Audio(media) | ContentBlock::Video(media) => {
            let (kind, formats) = match b {
                ContentBlock::Audio(_) => ("audio", Media::AUDIO_FORMATS),
                _ => ("video", Media::VIDEO_FORMATS),
            };
            let field = || format!("messages[{i}].content[{j}].{kind}");
            if m.role != Role::User {
                return Err(Error::invalid(
                    field(),
                    format!("{kind} belongs in a user message"),
                ));
            }
            if !formats.contains(&media.format.as_str()) {
                return Err(Error::invalid(
                    format!("{}.format", field()),
                    format!("{:?}: one of {}", media.format, formats.join(", ")),
                ));
            }
            if let super::content::MediaSource::S3 { uri, .. } = &media.source
                && (!uri.starts_with("s3://") || uri.len() > 1024)
            {
                return Err(Error::invalid(
                    format!("{}.source.uri", field()),
                    "an s3:// URI of at most 1,024 characters",
                ));
            }
        }
        ContentBlock::Reasoning(_) if m.role != Role::Assistant => {
            return Err(Error::invalid(
                format!("messages[{i}].content[{j}]"),
                "reasoning belongs in the assistant message it came in",
            ));
        }
        ContentBlock::ToolResult(_) if m.role != Role::User => {
            return Err(Error::invalid(
                format!("messages[{i}].content[{j}]"),
                "tool_result belongs in a user message",
            ));
        }
        ContentBlock::Document(d) => {
            let field = || format!("messages[{i}].content[{j}].document");
            if m.role != Role::User {
                return Err(Error::invalid(
                    field(),
                    "a document belongs in a user message",
                ));
            }
            if let Some(problem) = d.name_problem() {
                return Err(Error::invalid(format!("{}.name", field()), problem));
            }
            if let Some(b) = d.bytes()
                && (b.is_empty() || b.len() > Document::MAX_BYTES)
            {
                return Err(Error::invalid(
                    format!("{}.bytes", field()),
                    format!(
                        "{} bytes: a document must hold 1 to {} bytes",
                        b.len(),
                        Document::MAX_BYTES
                    ),
                ));
            }
            *documents += 1;
            if *documents > Document::MAX_PER_REQUEST {
                return Err(Error::invalid(
                    field(),
                    format!(
                        "at most {} documents in one request",
                        Document::MAX_PER_REQUEST
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_conversation_is_named() {
        let err = GenerateRequest::new(vec![]).validate().unwrap_err();
        assert_eq!(err.kind(), crate::types::ErrorKind::InvalidRequest);
        assert!(err.to_string().contains("messages"), "{err}");
    }

    #[test]
    fn negative_max_tokens_is_named() {
        let err = GenerateRequest::user("hi")
            .max_tokens(-3)
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("inference.max_tokens"), "{err}");
        assert!(err.to_string().contains("-3"), "{err}");
    }

    #[test]
    fn conversation_must_start_with_user() {
        let err = GenerateRequest::new(vec![Message::assistant("hi")])
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("messages[0].role"), "{err}");
    }

    #[test]
    fn tool_choice_must_name_a_known_tool() {
        let req = GenerateRequest::user("hi")
            .tool(Tool::new("a", "A", serde_json::json!({"type": "object"})))
            .tool_choice(ToolChoice::Tool("b".into()));
        assert!(req.validate().unwrap_err().to_string().contains("\"b\""));
    }
}
