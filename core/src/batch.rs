//! The batch lane: bulk offline requests as Bedrock batch inference jobs, at the batch price.
//!
//! [`Router::submit_batch`](crate::Router::submit_batch) turns requests into job records
//! (`recordId` plus the model's native request body), uploads them to S3, and creates one
//! model invocation job per model and per `max_records_per_job` records. The returned
//! [`BatchHandle`] serialises (job ARNs and S3 locations) so another process can resume it;
//! `batch_status`, `wait_batch` and `batch_results` poll the jobs and read the outputs back,
//! one [`BatchItem`] per request in submission order. Too few requests for a job, or a deadline
//! sooner than the batch turnaround, go to the flex tier at once instead; the item says why.

pub use crate::config::BatchConfig;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::types::Usage;
use crate::types::{ContentBlock, GenerateRequest, Role, ServiceTier, SystemBlock};
use crate::types::{Error, Result};

/// Which lane served an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchLane {
    /// Answered by a batch inference job, at the batch price.
    Batch,
    /// Sent on the flex tier at submission instead (see the item's `diverted` reason).
    Flex,
}

/// One answered request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchOutput {
    /// The answer's text.
    pub text: String,
    /// The tokens the request used.
    pub usage: Usage,
    /// What the request cost, in USD, at its lane's price.
    pub cost_usd: f64,
    /// The configured model that answered.
    pub model: String,
    /// The lane that served the request.
    pub lane: BatchLane,
    /// Why the request did not go to a batch job, when it did not.
    pub diverted: Option<String>,
}

/// Why a request of a batch has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BatchErrorKind {
    /// The job failed its record (the record's `errorCode` is in `code`).
    RecordFailed,
    /// Diverted to flex, the call failed (its [`ErrorKind`](crate::ErrorKind) is in
    /// `error_kind`, the service's code in `code`).
    CallFailed,
    /// Its record is not in the job's output.
    Missing,
    /// Its record is not in the job's output, where some lines could not be read.
    UnreadableOutput,
    /// Its output line has neither `modelOutput` nor `error`.
    Malformed,
    /// Its job could not be created (`error_kind` says why).
    NotSubmitted,
    /// Diverted to flex by the router that submitted the batch, which holds the answer.
    DivertedElsewhere,
}

impl BatchErrorKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchErrorKind::RecordFailed => "record_failed",
            BatchErrorKind::CallFailed => "call_failed",
            BatchErrorKind::Missing => "missing",
            BatchErrorKind::UnreadableOutput => "unreadable_output",
            BatchErrorKind::Malformed => "malformed",
            BatchErrorKind::NotSubmitted => "not_submitted",
            BatchErrorKind::DivertedElsewhere => "diverted_elsewhere",
        }
    }
}

/// A request of a batch that has no answer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{}{}: {message}", kind.as_str(), code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
pub struct BatchRecordError {
    /// Why the request has no answer.
    pub kind: BatchErrorKind,
    /// For a call or job that failed: the [`ErrorKind`](crate::ErrorKind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::types::ErrorKind>,
    /// The service's own code: a record's `errorCode` (an HTTP status, as Bedrock writes it),
    /// or a failed call's AWS error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What went wrong, in words.
    pub message: String,
}

impl BatchRecordError {
    /// The error of a diverted call that failed.
    pub(crate) fn of_call(e: &crate::types::Error) -> Self {
        let code = match e {
            crate::types::Error::Service(s) if !s.code.is_empty() => Some(s.code.clone()),
            _ => None,
        };
        Self {
            kind: BatchErrorKind::CallFailed,
            error_kind: Some(e.kind()),
            code,
            message: e.to_string(),
        }
    }
}

/// One request's outcome.
pub type BatchItem = std::result::Result<BatchOutput, BatchRecordError>;

/// One job of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchJob {
    /// The job's ARN.
    pub arn: String,
    /// The configured model the job's records are for.
    pub model: String,
    /// `s3://bucket/key` of the job's JSONL records.
    pub input_uri: String,
    /// `s3://bucket/prefix/` the job writes its outputs under.
    pub output_uri: String,
    /// Submission indices of its records, in record order.
    pub indices: Vec<usize>,
}

/// A submitted batch: serialise it with `serde_json` to resume it elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchHandle {
    /// The batch's id (`batch-` and a hexadecimal timestamp), which its job names and S3
    /// keys start with.
    pub id: String,
    /// Requests submitted; the results have one item per request.
    pub total: usize,
    /// Every job that was created, even when a later one could not be.
    pub jobs: Vec<BatchJob>,
    /// Answers already known at submission, by index (handles written before diverted
    /// requests ran in the background carry them here).
    pub immediate: BTreeMap<usize, BatchItem>,
    /// Requests diverted to flex (too few for a job, a deadline sooner than the turnaround),
    /// answered in the background by the submitting router; `batch_results` collects them.
    #[serde(default)]
    pub pending_flex: Vec<usize>,
    /// Requests that could not be submitted (their upload or job creation failed after its
    /// retries), and why; `batch_results` reports them as `not_submitted` errors.
    #[serde(default)]
    pub not_submitted: Vec<NotSubmitted>,
}

/// The answers of diverted requests, by batch id, as the submitting router produces them in
/// the background. The most recent batches are kept (their answers are small), so that results
/// can be read more than once without the map growing with every batch ever submitted.
#[derive(Default)]
pub(crate) struct DivertedAnswers {
    inner: std::sync::Mutex<(
        std::collections::HashMap<String, DivertedFuture>,
        std::collections::VecDeque<String>,
    )>,
}

pub(crate) type DivertedFuture = futures::future::Shared<
    futures::future::BoxFuture<'static, std::sync::Arc<BTreeMap<usize, BatchItem>>>,
>;

/// Batches whose diverted answers a router keeps.
const DIVERTED_KEPT: usize = 256;

impl DivertedAnswers {
    pub(crate) fn insert(&self, batch: String, answers: DivertedFuture) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *g;
        if map.insert(batch.clone(), answers).is_none() {
            order.push_back(batch);
        }
        while order.len() > DIVERTED_KEPT {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    pub(crate) fn get(&self, batch: &str) -> Option<DivertedFuture> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(batch).cloned()
    }
}

/// Requests of one would-be job that were never submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotSubmitted {
    /// The configured model the job was for.
    pub model: String,
    /// Their indices in the submission.
    pub indices: Vec<usize>,
    /// The error kind (`throttled`, `validation`, ...) and the message.
    pub kind: crate::types::ErrorKind,
    /// The error's message.
    pub message: String,
}

impl BatchHandle {
    /// The handle as JSON (job ARNs, S3 locations, diverted answers).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a handle serialises")
    }

    /// A handle written by [`to_json`](Self::to_json).
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::config("batch handle", e.to_string()))
    }
}

/// A job's state as Bedrock reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobStatus {
    /// The job's ARN.
    pub arn: String,
    /// The job's status as Bedrock names it (`Submitted`, `InProgress`, `Completed`, ...).
    pub status: String,
    /// What Bedrock says of the status (why the job failed, say); `None` when it says nothing.
    pub message: Option<String>,
}

impl JobStatus {
    /// Whether the job has ended: completed (wholly or partly), failed, stopped or expired.
    pub fn finished(&self) -> bool {
        matches!(
            self.status.as_str(),
            "Completed" | "PartiallyCompleted" | "Failed" | "Stopped" | "Expired"
        )
    }
}

/// Every job's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchStatus {
    /// Each job's state, in the handle's order.
    pub jobs: Vec<JobStatus>,
}

impl BatchStatus {
    /// Whether every job has ended.
    pub fn finished(&self) -> bool {
        self.jobs.iter().all(JobStatus::finished)
    }
    /// Jobs finished, of all.
    pub fn progress(&self) -> (usize, usize) {
        (
            self.jobs.iter().filter(|j| j.finished()).count(),
            self.jobs.len(),
        )
    }
}

/// What the answered items cost in the batch lane against the same tokens on standard and flex.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BatchCostComparison {
    /// What the items cost as served, in USD (those diverted to flex at the flex price).
    pub batch_usd: f64,
    /// What the same tokens would cost on the standard tier, in USD.
    pub standard_usd: f64,
    /// What the same tokens would cost on the flex tier, in USD.
    pub flex_usd: f64,
}

/// The record id of a submission index.
pub(crate) fn record_id(index: usize) -> String {
    format!("{index:08}")
}

fn text_of(blocks: &[ContentBlock]) -> Option<String> {
    let mut out = String::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => out.push_str(t),
            ContentBlock::CachePoint(_) => {}
            _ => return None,
        }
    }
    Some(out)
}

/// The model's native request body for a text request (Anthropic messages or Nova).
pub(crate) fn native_body(
    model: &str,
    request: &GenerateRequest,
    max_tokens: u64,
) -> Result<Value> {
    let unsupported = || {
        Error::invalid(
            "messages",
            "the batch lane takes text messages only (no tools, images or tool results)",
        )
    };
    if !request.tools.is_empty() {
        return Err(unsupported());
    }
    let unsent = [
        ("reasoning", request.reasoning.is_some()),
        ("output_format", request.output_format.is_some()),
        ("model_fields", request.model_fields.is_some()),
        ("metadata", !request.metadata.is_empty()),
    ];
    if let Some((field, _)) = unsent.iter().find(|(_, set)| *set) {
        return Err(Error::invalid(
            *field,
            "the batch lane sends text, system prompt and max_tokens only: send the call on line (another SLO class)",
        ));
    }
    if request.guardrail.is_some()
        || request
            .system
            .iter()
            .any(|s| matches!(s, SystemBlock::GuardContent(_)))
    {
        return Err(Error::invalid(
            "guardrail",
            "batch inference applies no guardrail: send the call on line (another SLO class)",
        ));
    }
    let system: Vec<String> = request
        .system
        .iter()
        .filter_map(|s| match s {
            SystemBlock::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let mut messages = Vec::new();
    for m in &request.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push((role, text_of(&m.content).ok_or_else(unsupported)?));
    }
    Ok(if model.contains("anthropic.") {
        let mut body = json!({
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": max_tokens,
            "messages": messages.iter().map(|(r, t)| json!({ "role": r, "content": [{ "type": "text", "text": t }] })).collect::<Vec<_>>(),
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n"));
        }
        body
    } else {
        let mut body = json!({
            "schemaVersion": "messages-v1",
            "messages": messages.iter().map(|(r, t)| json!({ "role": r, "content": [{ "text": t }] })).collect::<Vec<_>>(),
            "inferenceConfig": { "maxTokens": max_tokens },
        });
        if !system.is_empty() {
            body["system"] = json!(
                system
                    .iter()
                    .map(|t| json!({ "text": t }))
                    .collect::<Vec<_>>()
            );
        }
        body
    })
}

/// Text and usage of a native response body.
pub(crate) fn parse_output(output: &Value) -> Option<(String, Usage)> {
    let n = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .map(crate::types::units::token_count)
    };
    if let Some(content) = output.get("content").and_then(Value::as_array) {
        let text = content
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        let usage = output.get("usage")?;
        return Some((
            text,
            Usage {
                input_tokens: n(usage.get("input_tokens"))?,
                output_tokens: n(usage.get("output_tokens"))?,
                ..Usage::default()
            },
        ));
    }
    let content = output.pointer("/output/message/content")?.as_array()?;
    let text = content
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let usage = output.get("usage")?;
    Some((
        text,
        Usage {
            input_tokens: n(usage.get("inputTokens"))?,
            output_tokens: n(usage.get("outputTokens"))?,
            ..Usage::default()
        },
    ))
}

/// Whether a request must skip the batch lane, and why.
pub(crate) fn divert_reason(request: &GenerateRequest, config: &BatchConfig) -> Option<String> {
    match request.slo.deadline {
        Some(d) if d < config.turnaround => Some(format!(
            "its deadline ({:.0} s) is sooner than the batch turnaround ({:.0} s)",
            d.as_secs_f64(),
            config.turnaround.as_secs_f64()
        )),
        _ => None,
    }
}

/// The tier diverted requests take.
pub(crate) const DIVERTED_TIER: ServiceTier = ServiceTier::FLEX;

#[cfg(test)]
mod tests {
    #[test]
    fn what_the_batch_lane_cannot_send_is_refused_by_name() {
        let base = GenerateRequest::user("x");
        for (req, field) in [
            (
                base.clone().reasoning(crate::types::Reasoning::default()),
                "reasoning",
            ),
            (base.clone().metadata("team", "a"), "metadata"),
            (
                base.clone()
                    .guardrail(crate::types::Guardrail::new("g1", "1")),
                "guardrail",
            ),
        ] {
            let e = native_body("anthropic.claude-haiku-4-5-20251001-v1:0", &req, 100).unwrap_err();
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
    }

    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Batch output records as Bedrock writes them (Anthropic and Nova bodies), with
        /// hostile values: parsed or rejected, never a panic.
        #[test]
        fn batch_output_lines_parse_or_are_rejected(
            text in prop_oneof![Just(json!("ok")), Just(json!(null)), Just(json!(7)), Just(json!(["x"]))],
            tokens in prop_oneof![Just(json!(5)), Just(json!(-1)), Just(json!(u64::MAX)), Just(json!(1e300)), Just(json!("many"))],
            anthropic in any::<bool>(),
        ) {
            let output = if anthropic {
                json!({"content": [{"type": "text", "text": text}], "usage": {"input_tokens": tokens, "output_tokens": tokens}})
            } else {
                json!({"output": {"message": {"content": [{"text": text}]}}, "usage": {"inputTokens": tokens, "outputTokens": tokens}})
            };
            let parsed = parse_output(&output);
            // Counts that are not whole numbers are refused; huge ones saturate, never wrap.
            let expected = tokens.as_u64().map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            match (parsed, expected) {
                (Some((got, usage)), Some(n)) => {
                    prop_assert_eq!(usage.output_tokens, n);
                    prop_assert_eq!(usage.input_tokens, n);
                    prop_assert_eq!(got.as_str(), text.as_str().unwrap_or(""));
                }
                (None, None) => {}
                (parsed, expected) => prop_assert!(false, "{parsed:?} for {tokens} (expected {expected:?})"),
            }
        }
    }

    #[test]
    fn native_bodies_follow_each_model_family() {
        let req = GenerateRequest::user("hello").system("be brief");
        let a = native_body("anthropic.claude-haiku-4-5-20251001-v1:0", &req, 50).unwrap();
        assert_eq!(a["anthropic_version"], "bedrock-2023-05-31");
        assert_eq!(a["messages"][0]["content"][0]["text"], "hello");
        assert_eq!(a["system"], "be brief");
        let n = native_body("amazon.nova-lite-v1:0", &req, 50).unwrap();
        assert_eq!(n["schemaVersion"], "messages-v1");
        assert_eq!(n["inferenceConfig"]["maxTokens"], 50);
        assert_eq!(n["system"][0]["text"], "be brief");
    }

    #[test]
    fn outputs_parse_in_both_formats() {
        let a = json!({"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 3, "output_tokens": 1}});
        assert_eq!(parse_output(&a).unwrap().1.output_tokens, 1);
        let n = json!({"output": {"message": {"content": [{"text": "yo"}]}}, "usage": {"inputTokens": 4, "outputTokens": 2}});
        let (text, usage) = parse_output(&n).unwrap();
        assert_eq!((text.as_str(), usage.input_tokens), ("yo", 4));
        assert!(parse_output(&json!({"nothing": 1})).is_none());
    }

    #[test]
    fn a_handle_survives_serialisation() {
        let h = BatchHandle {
            id: "b1".into(),
            total: 2,
            jobs: vec![BatchJob {
                arn: "arn:aws:bedrock:us-east-1:1:model-invocation-job/x".into(),
                model: "m".into(),
                input_uri: "s3://b/in.jsonl".into(),
                output_uri: "s3://b/out/".into(),
                indices: vec![1],
            }],
            immediate: BTreeMap::from([(
                0,
                Err(BatchRecordError {
                    kind: BatchErrorKind::CallFailed,
                    error_kind: Some(crate::types::ErrorKind::Throttled),
                    code: Some("ThrottlingException".into()),
                    message: "x".into(),
                }),
            )]),
            pending_flex: vec![3],
            not_submitted: vec![NotSubmitted {
                model: "m".into(),
                indices: vec![2],
                kind: crate::types::ErrorKind::Throttled,
                message: "throttled".into(),
            }],
        };
        assert_eq!(BatchHandle::from_json(&h.to_json()).unwrap(), h);
        // A handle written before `not_submitted` existed still reads.
        let old = r#"{"id":"b0","total":0,"jobs":[],"immediate":{}}"#;
        assert!(
            BatchHandle::from_json(old)
                .unwrap()
                .not_submitted
                .is_empty()
        );
        assert!(BatchHandle::from_json("{").is_err());
    }
}
