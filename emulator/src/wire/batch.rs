//! Bedrock batch inference, the control-plane subset: CreateModelInvocationJob,
//! GetModelInvocationJob and StopModelInvocationJob. A job reads its JSONL records
//! (`recordId`, `modelInput`) from the emulated S3, answers each through the scenario's model
//! (tier `batch`; a fault matching the record fails it), and writes `<input>.jsonl.out` and
//! `manifest.json.out` under `<output>/<job id>/`, as Bedrock does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::bedrock::native_ask;
use super::s3::parse_s3_uri;
use super::{authenticate, parse_json};
use crate::engine::{ApiError, Engine, Service};

/// Fewest records Bedrock accepts in a job.
pub(crate) const MIN_RECORDS: usize = 100;

#[derive(Debug, Clone)]
struct Job {
    arn: String,
    name: String,
    model_id: String,
    role_arn: String,
    region: String,
    input_uri: String,
    output_uri: String,
    status: &'static str,
    message: Option<String>,
    submitted: String,
    modified: String,
    ended: Option<String>,
}

/// Jobs by id.
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    jobs: Mutex<HashMap<String, Job>>,
}

impl Jobs {
    fn update(&self, id: &str, f: impl FnOnce(&mut Job)) {
        if let Some(j) = self.jobs.lock().expect("jobs lock").get_mut(id) {
            f(j);
            j.modified = now();
        }
    }

    fn get(&self, id: &str) -> Option<Job> {
        self.jobs.lock().expect("jobs lock").get(id).cloned()
    }

    /// Moves a job on to `status`, unless it was asked to stop: then it stops (`false`).
    fn advance(&self, id: &str, status: &'static str) -> bool {
        let mut jobs = self.jobs.lock().expect("jobs lock");
        let Some(j) = jobs.get_mut(id) else {
            return false;
        };
        j.modified = now();
        if j.status == "Stopping" {
            j.status = "Stopped";
            j.ended = Some(now());
            return false;
        }
        j.status = status;
        true
    }

    fn status(&self, id: &str) -> Option<&'static str> {
        self.jobs
            .lock()
            .expect("jobs lock")
            .get(id)
            .map(|j| j.status)
    }
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(crate) fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route("/model-invocation-job", post(create))
        .route("/model-invocation-job/{job}", get(describe))
        .route("/model-invocation-job/{job}/stop", post(stop))
}

fn invalid(m: impl Into<String>) -> ApiError {
    ApiError::validation(Service::Bedrock, m)
}

/// The job id of an ARN or an id.
fn job_id(identifier: &str) -> String {
    let decoded = percent_encoding::percent_decode_str(identifier).decode_utf8_lossy();
    decoded.rsplit('/').next().unwrap_or(&decoded).to_string()
}

async fn create(
    State(engine): State<Arc<Engine>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let region = authenticate(&engine, "bedrock", &method, &uri, &headers, &body)?;
    let v = parse_json(Service::Bedrock, &body)?;
    let field = |path: &str| v.pointer(path).and_then(Value::as_str).map(str::to_string);
    let name = field("/jobName").ok_or_else(|| invalid("jobName is required"))?;
    let role_arn = field("/roleArn").ok_or_else(|| invalid("roleArn is required"))?;
    if !role_arn.starts_with("arn:aws:iam::") || !role_arn.contains(":role/") {
        return Err(invalid(format!(
            "roleArn {role_arn} is not an IAM role ARN"
        )));
    }
    let model_id = field("/modelId").ok_or_else(|| invalid("modelId is required"))?;
    if let Some(refused) = engine.control_refusal(&region, "CreateModelInvocationJob", &model_id) {
        return Err(refused);
    }
    if !engine.scenario.models.iter().any(|m| m.id == model_id) {
        return Err(invalid(format!(
            "The provided model identifier is invalid: {model_id}"
        )));
    }
    let input_uri = field("/inputDataConfig/s3InputDataConfig/s3Uri")
        .filter(|u| parse_s3_uri(u).is_some())
        .ok_or_else(|| invalid("inputDataConfig.s3InputDataConfig.s3Uri must be an s3:// URI"))?;
    let output_uri = field("/outputDataConfig/s3OutputDataConfig/s3Uri")
        .filter(|u| parse_s3_uri(u).is_some())
        .ok_or_else(|| invalid("outputDataConfig.s3OutputDataConfig.s3Uri must be an s3:// URI"))?;
    let id = format!(
        "{:012x}",
        crate::text::digest64(&[name.as_bytes(), now().as_bytes(), input_uri.as_bytes()]) >> 16
    );
    let arn = format!("arn:aws:bedrock:{region}:123456789012:model-invocation-job/{id}");
    let job = Job {
        arn: arn.clone(),
        name,
        model_id,
        role_arn,
        region,
        input_uri,
        output_uri,
        status: "Submitted",
        message: None,
        submitted: now(),
        modified: now(),
        ended: None,
    };
    engine
        .jobs
        .jobs
        .lock()
        .expect("jobs lock")
        .insert(id.clone(), job);
    tokio::spawn(run(Arc::clone(&engine), id));
    Ok(Json(json!({ "jobArn": arn })).into_response())
}

async fn describe(
    State(engine): State<Arc<Engine>>,
    Path(job): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let region = authenticate(&engine, "bedrock", &method, &uri, &headers, &Bytes::new())?;
    if let Some(refused) = engine.control_refusal(&region, "GetModelInvocationJob", "") {
        return Err(refused);
    }
    let j = engine.jobs.get(&job_id(&job)).ok_or_else(|| {
        ApiError::new(
            404,
            "ResourceNotFoundException",
            format!("Job {job} not found"),
        )
    })?;
    let mut out = json!({
        "jobArn": j.arn,
        "jobName": j.name,
        "modelId": j.model_id,
        "roleArn": j.role_arn,
        "status": j.status,
        "submitTime": j.submitted,
        "lastModifiedTime": j.modified,
        "inputDataConfig": { "s3InputDataConfig": { "s3Uri": j.input_uri, "s3InputFormat": "JSONL" } },
        "outputDataConfig": { "s3OutputDataConfig": { "s3Uri": j.output_uri } },
    });
    if let Some(m) = &j.message {
        out["message"] = json!(m);
    }
    if let Some(e) = &j.ended {
        out["endTime"] = json!(e);
    }
    Ok(Json(out).into_response())
}

async fn stop(
    State(engine): State<Arc<Engine>>,
    Path(job): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    authenticate(&engine, "bedrock", &method, &uri, &headers, &body)?;
    let id = job_id(&job);
    match engine.jobs.status(&id) {
        None => Err(ApiError::new(
            404,
            "ResourceNotFoundException",
            format!("Job {job} not found"),
        )),
        Some("Completed" | "Failed" | "Stopped" | "PartiallyCompleted") => Err(ApiError::new(
            400,
            "ValidationException",
            "The job has already ended and cannot be stopped.",
        )),
        Some(_) => {
            engine.jobs.update(&id, |j| j.status = "Stopping");
            Ok(Json(json!({})).into_response())
        }
    }
}

/// Runs a job: validation, then every record through the scenario's model, then the outputs.
async fn run(engine: Arc<Engine>, id: String) {
    let Some(job) = engine.jobs.get(&id) else {
        return;
    };
    let pause = |ms: u64| tokio::time::sleep(engine.scaled(Duration::from_millis(ms)));
    pause(200).await;
    if !engine.jobs.advance(&id, "Validating") {
        return;
    }
    let (in_bucket, in_key) = parse_s3_uri(&job.input_uri).expect("checked at creation");
    let files: Vec<String> = if in_key.ends_with(".jsonl") {
        vec![in_key.clone()]
    } else {
        engine
            .objects
            .list(&in_bucket, &in_key)
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.ends_with(".jsonl"))
            .collect()
    };
    let mut inputs = Vec::new();
    for f in &files {
        let Some(body) = engine.objects.get(&in_bucket, f) else {
            continue;
        };
        let records: Vec<Value> = String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        inputs.push((f.clone(), records));
    }
    let total: usize = inputs.iter().map(|(_, r)| r.len()).sum();
    let fail = |message: String| {
        engine.jobs.update(&id, |j| {
            j.status = "Failed";
            j.message = Some(message);
            j.ended = Some(now());
        })
    };
    if inputs.is_empty() {
        return fail(format!("No .jsonl input found at {}", job.input_uri));
    }
    if total < MIN_RECORDS {
        return fail(format!(
            "The job has {total} records; batch inference needs at least {MIN_RECORDS}."
        ));
    }
    pause(200).await;
    if !engine.jobs.advance(&id, "InProgress") {
        return;
    }
    let (out_bucket, out_key) = parse_s3_uri(&job.output_uri).expect("checked at creation");
    let out_prefix = format!(
        "{}{id}/",
        if out_key.is_empty() || out_key.ends_with('/') {
            out_key.clone()
        } else {
            format!("{out_key}/")
        }
    );
    let (mut ok, mut errors, mut input_tokens, mut output_tokens) = (0u64, 0u64, 0u64, 0u64);
    for (file, records) in inputs {
        let mut lines = String::new();
        for record in records {
            if engine.jobs.status(&id) == Some("Stopping") {
                engine.jobs.update(&id, |j| {
                    j.status = "Stopped";
                    j.ended = Some(now());
                });
                return;
            }
            let record_id = record.get("recordId").cloned().unwrap_or(Value::Null);
            let model_input = record.get("modelInput").cloned().unwrap_or(Value::Null);
            let mut line = json!({ "recordId": record_id, "modelInput": model_input });
            if !model_input.is_object() {
                line["error"] = json!({ "errorCode": 400, "errorMessage": "modelInput is missing or not an object" });
                errors += 1;
            } else {
                let (ask, native) = native_ask(
                    "BatchInference",
                    job.region.clone(),
                    job.model_id.clone(),
                    "batch".into(),
                    &model_input,
                );
                match engine.admit(&ask) {
                    Ok(answer) => {
                        input_tokens += u64::from(answer.input_tokens);
                        output_tokens += u64::from(answer.output_tokens());
                        line["modelOutput"] = native.whole(&answer);
                        ok += 1;
                    }
                    Err(e) => {
                        line["error"] = json!({ "errorCode": e.status, "errorMessage": format!("{}: {}", e.code, e.message) });
                        errors += 1;
                    }
                }
            }
            lines += &line.to_string();
            lines.push('\n');
        }
        let name = file.rsplit('/').next().unwrap_or(&file);
        engine.objects.put(
            &out_bucket,
            &format!("{out_prefix}{name}.out"),
            Bytes::from(lines),
        );
    }
    let manifest = json!({
        "totalRecordCount": ok + errors,
        "processedRecordCount": ok + errors,
        "successRecordCount": ok,
        "errorRecordCount": errors,
        "inputTokenCount": input_tokens,
        "outputTokenCount": output_tokens,
    });
    engine.objects.put(
        &out_bucket,
        &format!("{out_prefix}manifest.json.out"),
        Bytes::from(manifest.to_string()),
    );
    pause(200).await;
    engine.jobs.update(&id, |j| {
        if j.status == "Stopping" {
            j.status = "Stopped";
            j.ended = Some(now());
            return;
        }
        j.status = if errors > 0 && ok > 0 {
            "PartiallyCompleted"
        } else if ok == 0 {
            "Failed"
        } else {
            "Completed"
        };
        if ok == 0 {
            j.message = Some("Every record failed.".into());
        }
        j.ended = Some(now());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_identifiers_may_be_arns_or_ids() {
        assert_eq!(
            job_id("arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Amodel-invocation-job%2Fabc"),
            "abc"
        );
        assert_eq!(job_id("abc"), "abc");
    }
}
