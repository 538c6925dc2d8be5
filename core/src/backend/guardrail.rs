//! Bedrock guardrails on the wire: the request's `guardrailConfig` and `guardContent` blocks, and
//! the response's `trace.guardrail` as JSON in Converse's own shape (member names as the
//! service model spells them), so that the Converse drop-ins give it back unchanged. The
//! automated-reasoning findings and `appliedGuardrailDetails` are not carried yet.

use aws_sdk_bedrockruntime::types as wire;
use serde_json::{Map, Value, json};

use crate::types::{GuardContent, Guardrail, GuardrailStreamMode, ImageFormat};

/// `guardrailConfig` of a Converse request.
pub(super) fn config(g: &Guardrail) -> wire::GuardrailConfiguration {
    wire::GuardrailConfiguration::builder()
        .guardrail_identifier(&g.identifier)
        .guardrail_version(&g.version)
        .trace(wire::GuardrailTrace::from(g.trace.as_str()))
        .build()
}

/// `guardrailConfig` of a ConverseStream request.
pub(super) fn stream_config(g: &Guardrail) -> wire::GuardrailStreamConfiguration {
    wire::GuardrailStreamConfiguration::builder()
        .guardrail_identifier(&g.identifier)
        .guardrail_version(&g.version)
        .trace(wire::GuardrailTrace::from(g.trace.as_str()))
        .stream_processing_mode(match g.stream_mode {
            GuardrailStreamMode::Sync => wire::GuardrailStreamProcessingMode::Sync,
            GuardrailStreamMode::Async => wire::GuardrailStreamProcessingMode::Async,
        })
        .build()
}

/// A `guardContent` block.
pub(super) fn content(c: &GuardContent) -> Result<wire::GuardrailConverseContentBlock, String> {
    Ok(match c {
        GuardContent::Text { text, qualifiers } => wire::GuardrailConverseContentBlock::Text(
            wire::GuardrailConverseTextBlock::builder()
                .text(text)
                .set_qualifiers(Some(
                    qualifiers
                        .iter()
                        .map(|q| wire::GuardrailConverseContentQualifier::from(q.as_str()))
                        .collect(),
                ))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        GuardContent::Image(img) => wire::GuardrailConverseContentBlock::Image(
            wire::GuardrailConverseImageBlock::builder()
                .format(match img.format {
                    ImageFormat::Png => wire::GuardrailConverseImageFormat::Png,
                    ImageFormat::Jpeg => wire::GuardrailConverseImageFormat::Jpeg,
                    other => {
                        return Err(format!(
                            "a guarded image is png or jpeg, not {}",
                            serde_json::to_value(other).unwrap_or_default()
                        ))
                    }
                })
                .source(wire::GuardrailConverseImageSource::Bytes(
                    aws_smithy_types::Blob::new(
                        img.bytes()
                            .ok_or("a guarded image is sent inline (Converse takes no s3Location for guardContent)")?
                            .to_vec(),
                    ),
                ))
                .build()
                .map_err(|e| e.to_string())?,
        ),
    })
}

/// `trace.guardrail` as Converse's JSON.
pub(super) fn trace(t: &wire::GuardrailTraceAssessment) -> Value {
    let mut out = Map::new();
    if !t.model_output().is_empty() {
        out.insert("modelOutput".into(), json!(t.model_output()));
    }
    if let Some(input) = t.input_assessment() {
        let by_id: Map<String, Value> = input
            .iter()
            .map(|(id, a)| (id.clone(), assessment(a)))
            .collect();
        out.insert("inputAssessment".into(), Value::Object(by_id));
    }
    if let Some(outputs) = t.output_assessments() {
        let by_id: Map<String, Value> = outputs
            .iter()
            .map(|(id, list)| (id.clone(), list.iter().map(assessment).collect()))
            .collect();
        out.insert("outputAssessments".into(), Value::Object(by_id));
    }
    if let Some(reason) = t.action_reason() {
        out.insert("actionReason".into(), json!(reason));
    }
    Value::Object(out)
}

/// `detected` when the service says it.
fn with_detected(mut v: Value, detected: Option<bool>) -> Value {
    if let Some(d) = detected {
        v["detected"] = json!(d);
    }
    v
}

fn assessment(a: &wire::GuardrailAssessment) -> Value {
    let mut out = Map::new();
    if let Some(p) = a.topic_policy() {
        let topics: Vec<Value> = p
            .topics()
            .iter()
            .map(|t| {
                with_detected(
                    json!({ "name": t.name(), "type": t.r#type().as_str(), "action": t.action().as_str() }),
                    t.detected(),
                )
            })
            .collect();
        out.insert("topicPolicy".into(), json!({ "topics": topics }));
    }
    if let Some(p) = a.content_policy() {
        let filters: Vec<Value> = p
            .filters()
            .iter()
            .map(|f| {
                let mut v = json!({
                    "type": f.r#type().as_str(),
                    "confidence": f.confidence().as_str(),
                    "action": f.action().as_str(),
                });
                if let Some(s) = f.filter_strength() {
                    v["filterStrength"] = json!(s.as_str());
                }
                with_detected(v, f.detected())
            })
            .collect();
        out.insert("contentPolicy".into(), json!({ "filters": filters }));
    }
    if let Some(p) = a.word_policy() {
        let custom: Vec<Value> = p
            .custom_words()
            .iter()
            .map(|w| {
                with_detected(
                    json!({ "match": w.r#match(), "action": w.action().as_str() }),
                    w.detected(),
                )
            })
            .collect();
        let managed: Vec<Value> = p
            .managed_word_lists()
            .iter()
            .map(|w| {
                with_detected(
                    json!({ "match": w.r#match(), "type": w.r#type().as_str(), "action": w.action().as_str() }),
                    w.detected(),
                )
            })
            .collect();
        out.insert(
            "wordPolicy".into(),
            json!({ "customWords": custom, "managedWordLists": managed }),
        );
    }
    if let Some(p) = a.sensitive_information_policy() {
        let pii: Vec<Value> = p
            .pii_entities()
            .iter()
            .map(|e| {
                with_detected(
                    json!({ "match": e.r#match(), "type": e.r#type().as_str(), "action": e.action().as_str() }),
                    e.detected(),
                )
            })
            .collect();
        let regexes: Vec<Value> = p
            .regexes()
            .iter()
            .map(|r| {
                with_detected(
                    json!({ "name": r.name(), "match": r.r#match(), "regex": r.regex(), "action": r.action().as_str() }),
                    r.detected(),
                )
            })
            .collect();
        out.insert(
            "sensitiveInformationPolicy".into(),
            json!({ "piiEntities": pii, "regexes": regexes }),
        );
    }
    if let Some(p) = a.contextual_grounding_policy() {
        let filters: Vec<Value> = p
            .filters()
            .iter()
            .map(|f| {
                with_detected(
                    json!({
                        "type": f.r#type().as_str(),
                        "threshold": f.threshold(),
                        "score": f.score(),
                        "action": f.action().as_str(),
                    }),
                    f.detected(),
                )
            })
            .collect();
        out.insert(
            "contextualGroundingPolicy".into(),
            json!({ "filters": filters }),
        );
    }
    if let Some(m) = a.invocation_metrics() {
        let mut metrics = Map::new();
        if let Some(ms) = m.guardrail_processing_latency() {
            metrics.insert("guardrailProcessingLatency".into(), json!(ms));
        }
        if let Some(u) = m.usage() {
            metrics.insert(
                "usage".into(),
                json!({
                    "topicPolicyUnits": u.topic_policy_units(),
                    "contentPolicyUnits": u.content_policy_units(),
                    "wordPolicyUnits": u.word_policy_units(),
                    "sensitiveInformationPolicyUnits": u.sensitive_information_policy_units(),
                    "sensitiveInformationPolicyFreeUnits": u.sensitive_information_policy_free_units(),
                    "contextualGroundingPolicyUnits": u.contextual_grounding_policy_units(),
                }),
            );
        }
        if let Some(c) = m.guardrail_coverage().and_then(|c| c.text_characters()) {
            metrics.insert(
                "guardrailCoverage".into(),
                json!({ "textCharacters": { "guarded": c.guarded(), "total": c.total() } }),
            );
        }
        out.insert("invocationMetrics".into(), Value::Object(metrics));
    }
    Value::Object(out)
}
