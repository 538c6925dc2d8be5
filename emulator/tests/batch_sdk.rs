//! Batch inference through the unmodified official Rust SDKs (aws-sdk-s3, aws-sdk-bedrock):
//! inputs uploaded, a job created and polled, outputs and manifest read back.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_sdk_bedrock as control;
use aws_sdk_s3 as s3;
use control::types::{
    ModelInvocationJobInputDataConfig, ModelInvocationJobOutputDataConfig,
    ModelInvocationJobS3InputDataConfig, ModelInvocationJobS3OutputDataConfig,
    ModelInvocationJobStatus,
};
use laneway_emulator::{Emulator, Fault, FaultKind, Scenario};
use serde_json::{Value, json};

const ROLE: &str = "arn:aws:iam::123456789012:role/laneway-batch";
const NOVA: &str = "amazon.nova-lite-v1:0";

async fn config(url: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(url)
        .credentials_provider(Credentials::new(
            "LANEWAYTESTKEY",
            "LANEWAYTESTSECRET",
            None,
            None,
            "test",
        ))
        .retry_config(RetryConfig::disabled())
        .load()
        .await
}

async fn clients(emu: &Emulator) -> (s3::Client, control::Client) {
    let c = config(&emu.url()).await;
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&c).force_path_style(true).build());
    (s3, control::Client::new(&c))
}

fn records(n: usize) -> String {
    (0..n)
        .map(|i| {
            json!({
                "recordId": format!("r{i:04}"),
                "modelInput": {
                    "schemaVersion": "messages-v1",
                    "messages": [{ "role": "user", "content": [{ "text": format!("summarise note {i}") }] }],
                    "inferenceConfig": { "maxTokens": 20 },
                },
            })
            .to_string()
                + "\n"
        })
        .collect()
}

async fn run_job(
    s3: &s3::Client,
    bedrock: &control::Client,
    name: &str,
    n: usize,
) -> (String, ModelInvocationJobStatus) {
    s3.put_object()
        .bucket("batch")
        .key(format!("in/{name}.jsonl"))
        .body(records(n).into_bytes().into())
        .send()
        .await
        .unwrap();
    let arn = bedrock
        .create_model_invocation_job()
        .job_name(name)
        .role_arn(ROLE)
        .model_id(NOVA)
        .input_data_config(ModelInvocationJobInputDataConfig::S3InputDataConfig(
            ModelInvocationJobS3InputDataConfig::builder()
                .s3_uri(format!("s3://batch/in/{name}.jsonl"))
                .build()
                .unwrap(),
        ))
        .output_data_config(ModelInvocationJobOutputDataConfig::S3OutputDataConfig(
            ModelInvocationJobS3OutputDataConfig::builder()
                .s3_uri("s3://batch/out/")
                .build()
                .unwrap(),
        ))
        .send()
        .await
        .unwrap()
        .job_arn;
    for _ in 0..200 {
        let job = bedrock
            .get_model_invocation_job()
            .job_identifier(&arn)
            .send()
            .await
            .unwrap();
        let status = job.status.clone().unwrap();
        if matches!(
            status,
            ModelInvocationJobStatus::Completed
                | ModelInvocationJobStatus::PartiallyCompleted
                | ModelInvocationJobStatus::Failed
                | ModelInvocationJobStatus::Stopped
        ) {
            return (arn, status);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {arn} did not finish");
}

async fn read(s3: &s3::Client, key: &str) -> String {
    let o = s3
        .get_object()
        .bucket("batch")
        .key(key)
        .send()
        .await
        .unwrap();
    String::from_utf8(o.body.collect().await.unwrap().into_bytes().to_vec()).unwrap()
}

#[tokio::test]
async fn a_job_reads_s3_answers_every_record_and_writes_outputs_and_manifest() {
    let emu = Emulator::start(Scenario::builtin("fast").unwrap())
        .await
        .unwrap();
    let (s3, bedrock) = clients(&emu).await;
    // Three records fail, as the scenario's fault says.
    emu.add_fault(
        Fault::new(FaultKind::InternalError)
            .for_tier("batch")
            .times(3),
    );
    let (arn, status) = run_job(&s3, &bedrock, "nightly", 150).await;
    assert_eq!(status, ModelInvocationJobStatus::PartiallyCompleted);
    let id = arn.rsplit('/').next().unwrap();

    let listed = s3
        .list_objects_v2()
        .bucket("batch")
        .prefix(format!("out/{id}/"))
        .send()
        .await
        .unwrap();
    let mut keys: Vec<String> = listed
        .contents()
        .iter()
        .filter_map(|o| o.key.clone())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            format!("out/{id}/manifest.json.out"),
            format!("out/{id}/nightly.jsonl.out")
        ]
    );

    let lines: Vec<Value> = read(&s3, &keys[1])
        .await
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 150);
    let failed: Vec<&Value> = lines.iter().filter(|l| l.get("error").is_some()).collect();
    assert_eq!(failed.len(), 3);
    assert_eq!(failed[0]["error"]["errorCode"], 500);
    let ok = lines
        .iter()
        .find(|l| l.get("modelOutput").is_some())
        .unwrap();
    assert!(ok["recordId"].as_str().unwrap().starts_with('r'));
    assert!(
        !ok["modelOutput"]["output"]["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    assert!(ok["modelOutput"]["usage"]["outputTokens"].as_u64().unwrap() <= 20);

    let manifest: Value = serde_json::from_str(&read(&s3, &keys[0]).await).unwrap();
    assert_eq!(
        (
            manifest["successRecordCount"].as_u64(),
            manifest["errorRecordCount"].as_u64()
        ),
        (Some(147), Some(3))
    );
    let counters = emu.counters();
    assert_eq!(
        counters
            .iter()
            .filter(|c| c.tier == "batch")
            .map(|c| c.counter.requests)
            .sum::<u64>(),
        150
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn too_few_records_fail_the_job_and_unknown_jobs_are_not_found() {
    let emu = Emulator::start(Scenario::builtin("fast").unwrap())
        .await
        .unwrap();
    let (s3, bedrock) = clients(&emu).await;
    let (arn, status) = run_job(&s3, &bedrock, "tiny", 10).await;
    assert_eq!(status, ModelInvocationJobStatus::Failed);
    let job = bedrock
        .get_model_invocation_job()
        .job_identifier(&arn)
        .send()
        .await
        .unwrap();
    assert!(job.message.unwrap().contains("at least 100"));
    let missing = bedrock
        .get_model_invocation_job()
        .job_identifier("arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/nope")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        missing.into_service_error().meta().code(),
        Some("ResourceNotFoundException")
    );
    let stop = bedrock
        .stop_model_invocation_job()
        .job_identifier(&arn)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        stop.into_service_error().meta().code(),
        Some("ValidationException")
    );
    let no_key = s3
        .get_object()
        .bucket("batch")
        .key("nothing")
        .send()
        .await
        .unwrap_err();
    assert!(no_key.into_service_error().is_no_such_key());
    emu.shutdown().await;
}
