//! The batch lane's calls to AWS: records to S3 (aws-sdk-s3) and jobs through the Bedrock
//! control plane (aws-sdk-bedrock). Each call is one try; the batch lane retries.

use aws_config::SdkConfig;
use aws_sdk_bedrock::types::{
    ModelInvocationJobInputDataConfig, ModelInvocationJobOutputDataConfig,
    ModelInvocationJobS3InputDataConfig, ModelInvocationJobS3OutputDataConfig,
};

use super::errors::{Site, from_operation};
use crate::types::{Error, ErrorKind, Result, ServiceError};

/// What to create a batch inference job from.
#[derive(Debug, Clone, Copy)]
pub struct BatchJobSpec<'a> {
    /// A name unique in the account: a retried create with the same name is refused as a
    /// duplicate instead of running twice.
    pub job_name: &'a str,
    /// The IAM service role the job runs under (`[batch] role_arn`).
    pub role_arn: &'a str,
    /// The configured model the job's records are for, sent as the job's `modelId`.
    pub model_id: &'a str,
    /// `s3://bucket/key` of the JSONL records.
    pub input_uri: &'a str,
    /// `s3://bucket/prefix/` for the outputs.
    pub output_uri: &'a str,
}

/// A job's state, as `GetModelInvocationJob` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobState {
    /// `Submitted`, `InProgress`, `Completed`, `Failed`, `Stopped`, ...
    pub status: String,
    /// What the service says of the state (why the job failed, say); `None` when it says nothing.
    pub message: Option<String>,
}

/// One page of object keys under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPage {
    /// The object keys on this page, in the order S3 lists them.
    pub keys: Vec<String>,
    /// The token of the next page, if there is one.
    pub next: Option<String>,
}

/// The Bedrock batch lane's S3 and control-plane client, per region, from the router's AWS
/// settings (the emulator's endpoint included, with path-style S3 addressing there).
#[derive(Debug, Clone)]
pub struct BedrockBatch {
    sdk: std::sync::Arc<super::aws::SdkSource>,
}

/// The region of a job ARN (`arn:aws:bedrock:REGION:ACCOUNT:model-invocation-job/ID`).
pub(crate) fn job_region(arn: &str) -> &str {
    crate::types::Arn::parse(arn).map_or("", |a| a.region)
}

impl BedrockBatch {
    /// A client from the router's AWS settings.
    pub fn new(sdk: &SdkConfig) -> Self {
        Self::from_source(super::aws::SdkSource::ready(sdk.clone()))
    }

    /// A client from settings loaded now or at its first call.
    pub(crate) fn from_source(sdk: std::sync::Arc<super::aws::SdkSource>) -> Self {
        Self { sdk }
    }

    async fn s3(&self, region: &str) -> aws_sdk_s3::Client {
        let sdk = self.sdk.get().await;
        let mut b = aws_sdk_s3::config::Builder::from(sdk)
            .region(aws_config::Region::new(region.to_string()));
        if sdk.endpoint_url().is_some() {
            b = b.force_path_style(true);
        }
        aws_sdk_s3::Client::from_conf(b.build())
    }

    async fn control(&self, region: &str) -> aws_sdk_bedrock::Client {
        let b = aws_sdk_bedrock::config::Builder::from(self.sdk.get().await)
            .region(aws_config::Region::new(region.to_string()));
        aws_sdk_bedrock::Client::from_conf(b.build())
    }

    /// Writes `body` (JSON lines) to `s3://bucket/key`.
    pub async fn put_records(
        &self,
        region: &str,
        bucket: &str,
        key: &str,
        body: Vec<u8>,
    ) -> Result<()> {
        let uri = format!("s3://{bucket}/{key}");
        self.s3(region)
            .await
            .put_object()
            .bucket(bucket)
            .key(key)
            .content_type("application/jsonl")
            .body(body.into())
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(&uri, region)))?;
        Ok(())
    }

    /// Creates a batch inference job; its ARN.
    pub async fn create_job(&self, region: &str, spec: BatchJobSpec<'_>) -> Result<String> {
        let input = ModelInvocationJobS3InputDataConfig::builder()
            .s3_uri(spec.input_uri)
            .build()
            .map_err(|e| Error::config("batch.bucket", e.to_string()))?;
        let output = ModelInvocationJobS3OutputDataConfig::builder()
            .s3_uri(spec.output_uri)
            .build()
            .map_err(|e| Error::config("batch.bucket", e.to_string()))?;
        let out = self
            .control(region)
            .await
            .create_model_invocation_job()
            .job_name(spec.job_name)
            .role_arn(spec.role_arn)
            .model_id(spec.model_id)
            .input_data_config(ModelInvocationJobInputDataConfig::S3InputDataConfig(input))
            .output_data_config(ModelInvocationJobOutputDataConfig::S3OutputDataConfig(
                output,
            ))
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(spec.job_name, region)))?;
        Ok(out.job_arn)
    }

    /// A job's state.
    pub async fn job_state(&self, arn: &str) -> Result<JobState> {
        let region = job_region(arn);
        let out = self
            .control(region)
            .await
            .get_model_invocation_job()
            .job_identifier(arn)
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(arn, region)))?;
        Ok(JobState {
            status: out
                .status
                .map(|s| s.as_str().to_string())
                .unwrap_or_default(),
            message: out.message,
        })
    }

    /// Stops a job that has not ended (a job that has ended answers `Validation`).
    pub async fn stop_job(&self, arn: &str) -> Result<()> {
        let region = job_region(arn);
        self.control(region)
            .await
            .stop_model_invocation_job()
            .job_identifier(arn)
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(arn, region)))?;
        Ok(())
    }

    /// One page of the keys under `s3://bucket/prefix`.
    pub async fn list_keys(
        &self,
        region: &str,
        bucket: &str,
        prefix: &str,
        token: Option<String>,
    ) -> Result<KeyPage> {
        let uri = format!("s3://{bucket}/{prefix}");
        let page = self
            .s3(region)
            .await
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_continuation_token(token)
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(&uri, region)))?;
        Ok(KeyPage {
            keys: page
                .contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_string))
                .collect(),
            next: page.next_continuation_token().map(str::to_string),
        })
    }

    /// The whole body of `s3://bucket/key`. A body cut off on the way is a transport failure
    /// (it fails over, so the batch lane retries it).
    pub async fn read_object(&self, region: &str, bucket: &str, key: &str) -> Result<Vec<u8>> {
        let uri = format!("s3://{bucket}/{key}");
        let out = self
            .s3(region)
            .await
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| from_operation(e, Site::new(&uri, region)))?;
        match out.body.collect().await {
            Ok(b) => Ok(b.into_bytes().to_vec()),
            Err(e) => {
                let mut s = ServiceError::new(
                    ErrorKind::Transport,
                    format!("reading the body: {e}"),
                    &uri,
                    region,
                );
                s.source = Some(crate::types::Cause::new(e));
                Err(Error::from(s))
            }
        }
    }
}
