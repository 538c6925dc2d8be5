//! The batch lane's orchestration: requests grouped into jobs, diverted to flex when they
//! cannot wait, retried control calls, and outputs matched back to requests. Every call to AWS
//! goes through [`BedrockBatch`](crate::backend::BedrockBatch).

use crate::config::BatchConfig;
use std::collections::BTreeMap;

use futures::{FutureExt, StreamExt};

use super::Router;
use crate::backend::{BatchJobSpec, BedrockBatch};
use crate::batch::{
    BatchCostComparison, BatchErrorKind, BatchHandle, BatchItem, BatchJob, BatchLane, BatchOutput,
    BatchRecordError, BatchStatus, DIVERTED_TIER, JobStatus, NotSubmitted, divert_reason,
    native_body, parse_output, record_id,
};
use crate::types::{Error, Result};
use crate::types::{GenerateRequest, ServiceTier};

/// Requests on flex at once, when a batch is diverted.
const DIVERTED_CONCURRENCY: usize = 16;

/// Most tries of one S3 or control-plane call (each retry also needs the retry budget).
const CONTROL_TRIES: u32 = 5;

fn s3_parts(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix("s3://")?;
    Some(rest.split_once('/').unwrap_or((rest, "")))
}

/// Collects requests of SLO class `batch` for one submission: `router.batch_session()`.
///
/// ```no_run
/// # async fn f(router: laneway::Router) -> laneway::Result<()> {
/// use laneway::{GenerateRequest, SloClass};
/// let mut session = router.batch_session();
/// for doc in ["a", "b"] {
///     session.push(GenerateRequest::user(format!("Summarise {doc}")).slo_class(SloClass::Batch))?;
/// }
/// let handle = session.submit().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BatchSession {
    router: Router,
    requests: Vec<GenerateRequest>,
}

impl BatchSession {
    /// Adds a request; its index is its place in the results. Only SLO class `batch` is taken.
    pub fn push(&mut self, request: GenerateRequest) -> Result<usize> {
        if request.slo.class != crate::types::SloClass::Batch {
            return Err(Error::invalid(
                "slo.class",
                format!(
                    "a batch session takes requests of SLO class batch; this one is {}",
                    request.slo.class
                ),
            ));
        }
        request.validate()?;
        self.requests.push(request);
        Ok(self.requests.len() - 1)
    }

    /// Requests collected so far.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request has been pushed since the last submit.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Submits everything collected, as [`Router::submit_batch`] does.
    pub async fn submit(self) -> Result<BatchHandle> {
        self.router.submit_batch(self.requests).await
    }
}

impl Router {
    /// A session collecting requests of SLO class `batch` for one submission.
    pub fn batch_session(&self) -> BatchSession {
        BatchSession {
            router: self.clone(),
            requests: Vec::new(),
        }
    }

    fn batch_config(&self) -> Result<&BatchConfig> {
        self.executor().config.batch.as_ref().ok_or_else(|| {
            Error::config(
                "batch",
                "the batch lane needs a [batch] section (bucket, role_arn)",
            )
        })
    }

    fn aws_batch(&self) -> Result<&BedrockBatch> {
        self.executor().batch.as_ref().ok_or_else(|| {
            Error::config(
                "batch",
                "the batch lane needs AWS settings: this router was built without them",
            )
        })
    }

    /// Submits requests to the batch lane: one Bedrock batch job per model and per
    /// `max_records_per_job` records, at the batch price. Requests that cannot wait (a deadline
    /// sooner than the turnaround), and whole submissions too small for a job, are answered on
    /// the flex tier now instead; their items say why. The handle serialises for resuming.
    ///
    /// ```no_run
    /// # async fn f(router: laneway::Router, requests: Vec<laneway::GenerateRequest>) -> laneway::Result<()> {
    /// let handle = router.submit_batch(requests).await?;
    /// std::fs::write("batch.json", handle.to_json()).unwrap(); // resume with BatchHandle::from_json
    /// router.wait_batch(&handle, |s| eprintln!("{:?} jobs done", s.progress())).await?;
    /// for item in router.batch_results(&handle).await? {
    ///     match item {
    ///         Ok(out) => println!("{} (${:.6})", out.text, out.cost_usd),
    ///         Err(e) => eprintln!("failed: {e}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn submit_batch(&self, requests: Vec<GenerateRequest>) -> Result<BatchHandle> {
        let config = self.batch_config()?.clone();
        let id = format!(
            "batch-{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let Sorted {
            by_model,
            mut divert,
        } = self.sort_for_jobs(&requests, &config)?;
        let chunked = chunk_for_jobs(by_model, &config, &mut divert);
        let Created {
            jobs,
            not_submitted,
            first_error,
        } = self.create_jobs(&config, &id, &chunked).await;
        let pending_flex = self.answer_on_flex(&id, &requests, divert);
        if jobs.is_empty()
            && pending_flex.is_empty()
            && let Some(error) = first_error
        {
            // Nothing was created: no handle to cover, the error itself.
            return Err(error);
        }
        Ok(BatchHandle {
            id,
            total: requests.len(),
            jobs,
            immediate: BTreeMap::new(),
            pending_flex,
            not_submitted,
        })
    }

    /// Each request planned and written as a record of its model's job (in the region its
    /// jobs run in), or set aside for flex with the reason: it cannot wait, or its model has no
    /// batch lane here.
    fn sort_for_jobs(&self, requests: &[GenerateRequest], config: &BatchConfig) -> Result<Sorted> {
        let exec = self.executor();
        let mut sorted = Sorted::default();
        for (i, request) in requests.iter().enumerate() {
            request.validate()?;
            if let Some(why) = divert_reason(request, config) {
                sorted.divert.insert(i, why);
                continue;
            }
            let plan = self.plan(request)?;
            exec.planner.committed(&plan);
            let model = plan.model.clone();
            let Some(m) = exec.config.models.get(&*model) else {
                return Err(Error::invalid(
                    "model",
                    format!("{model} is not configured"),
                ));
            };
            let region = match batch_region(&exec.config, &model, m) {
                Ok(region) => region,
                Err(why) => {
                    sorted.divert.insert(i, why);
                    continue;
                }
            };
            let (_, output) = crate::plan::tier::estimated_tokens(request, &exec.config);
            let line = serde_json::json!({
                "recordId": record_id(i),
                "modelInput": native_body(&model, request, output)?,
            });
            sorted
                .by_model
                .entry(model.to_string())
                .or_insert_with(|| (region, Vec::new()))
                .1
                .push((i, line.to_string()));
        }
        Ok(sorted)
    }

    /// One job per chunk, its records uploaded first; a chunk whose upload or create failed
    /// (after retries) is named in `not_submitted`, and the jobs created so far keep running.
    async fn create_jobs(
        &self,
        config: &BatchConfig,
        id: &str,
        chunked: &BTreeMap<String, (String, Vec<Vec<Record>>)>,
    ) -> Created {
        let mut created = Created::default();
        for (model, (region, chunks)) in chunked {
            let slug: String = model
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            for (n, chunk) in chunks.iter().enumerate() {
                let place = JobPlace {
                    name: format!("{id}-{slug}-{n}"),
                    base: format!("{}/{id}/{slug}-{n}", config.prefix.trim_end_matches('/')),
                };
                let body: String = chunk.iter().map(|(_, l)| format!("{l}\n")).collect();
                let indices = chunk.iter().map(|(i, _)| *i).collect();
                match self.create_job(config, region, model, &place, body).await {
                    Ok((input_uri, output_uri, arn)) => created.jobs.push(BatchJob {
                        arn,
                        model: model.clone(),
                        input_uri,
                        output_uri,
                        indices,
                    }),
                    Err(e) => {
                        created.first_error.get_or_insert_with(|| e.clone());
                        created.not_submitted.push(NotSubmitted {
                            model: model.clone(),
                            indices,
                            kind: e.kind(),
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
        created
    }

    /// Starts the diverted requests on the flex tier in the background (they never delay the
    /// handle; `batch_results` collects them); their indices.
    fn answer_on_flex(
        &self,
        id: &str,
        requests: &[GenerateRequest],
        divert: BTreeMap<usize, String>,
    ) -> Vec<usize> {
        let pending_flex: Vec<usize> = divert.keys().copied().collect();
        if !divert.is_empty() {
            let router = self.clone();
            let diverted: Vec<(usize, GenerateRequest, String)> = divert
                .into_iter()
                .map(|(i, why)| (i, requests[i].clone(), why))
                .collect();
            let task = tokio::spawn(async move { router.run_diverted(diverted).await });
            let answers = async move { std::sync::Arc::new(task.await.unwrap_or_default()) }
                .boxed()
                .shared();
            self.executor().diverted.insert(id.to_string(), answers);
        }
        pending_flex
    }

    /// Uploads one job's records and creates the job, each call retried; the input and output
    /// URIs and the job's ARN.
    async fn create_job(
        &self,
        config: &BatchConfig,
        region: &str,
        model: &str,
        place: &JobPlace,
        body: String,
    ) -> Result<(String, String, String)> {
        let aws = self.aws_batch()?;
        let body = body.into_bytes();
        let input_key = format!("{}/input.jsonl", place.base);
        self.retried(|| aws.put_records(region, &config.bucket, &input_key, body.clone()))
            .await?;
        let input_uri = format!("s3://{}/{input_key}", config.bucket);
        let output_uri = format!("s3://{}/{}/out/", config.bucket, place.base);
        // The same job name on every try: a create that reached Bedrock before its answer was
        // lost is refused as a duplicate rather than run twice.
        let spec = BatchJobSpec {
            job_name: &place.name,
            role_arn: &config.role_arn,
            model_id: model,
            input_uri: &input_uri,
            output_uri: &output_uri,
        };
        let arn = self.retried(|| aws.create_job(region, spec)).await?;
        Ok((input_uri, output_uri, arn))
    }

    /// Runs an S3 or control-plane call, retrying what may succeed later (throttles, outages,
    /// transport failures) with jittered back-off, at most `CONTROL_TRIES` times and only
    /// while the router's retry budget allows, as calls do.
    async fn retried<T, F, Fut>(&self, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let exec = self.executor();
        let retry = exec.config.routing.retry;
        let mut tries = 0;
        loop {
            tries += 1;
            match call().await {
                Ok(v) => return Ok(v),
                // A denied bucket or role stays denied: only transient failures are retried.
                Err(e)
                    if e.fails_over()
                        && e.kind() != crate::types::ErrorKind::AccessDenied
                        && tries < CONTROL_TRIES
                        && exec.state.spend_extra_attempt(crate::time::now()) =>
                {
                    let wait = match &e {
                        Error::Service(s) => s.retry_after,
                        _ => None,
                    }
                    .filter(|d| *d <= retry.max_retry_after)
                    .unwrap_or_else(|| {
                        crate::execute::backoff(retry.backoff, retry.max_backoff, tries - 1)
                    });
                    tokio::time::sleep(wait).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Answers diverted requests on the flex tier now.
    async fn run_diverted(
        &self,
        diverted: Vec<(usize, GenerateRequest, String)>,
    ) -> BTreeMap<usize, BatchItem> {
        futures::stream::iter(diverted)
            .map(|(i, request, why)| {
                let request = request.tier(DIVERTED_TIER);
                async move {
                    let item = match self.generate(request).await {
                        Ok(r) => Ok(BatchOutput {
                            text: r.text(),
                            usage: r.usage,
                            cost_usd: r.cost_usd,
                            model: r.decision.model.clone(),
                            lane: BatchLane::Flex,
                            diverted: Some(why),
                        }),
                        Err(e) => Err(BatchRecordError::of_call(&e)),
                    };
                    (i, item)
                }
            })
            .buffer_unordered(DIVERTED_CONCURRENCY)
            .collect()
            .await
    }

    /// Every job's status.
    pub async fn batch_status(&self, handle: &BatchHandle) -> Result<BatchStatus> {
        let aws = self.aws_batch()?;
        let mut jobs = Vec::with_capacity(handle.jobs.len());
        for j in &handle.jobs {
            let state = self.retried(|| aws.job_state(&j.arn)).await?;
            jobs.push(JobStatus {
                arn: j.arn.clone(),
                status: state.status,
                message: state.message,
            });
        }
        Ok(BatchStatus { jobs })
    }

    /// Stops the batch's jobs that have not ended (StopModelInvocationJob); records already
    /// answered stay in the outputs. Returns how many jobs were stopped (a job that ends on its
    /// own meanwhile is not counted, and is no error).
    pub async fn cancel_batch(&self, handle: &BatchHandle) -> Result<usize> {
        let aws = self.aws_batch()?;
        let status = self.batch_status(handle).await?;
        let mut stopped = 0;
        for j in status.jobs.iter().filter(|j| !j.finished()) {
            match self.retried(|| aws.stop_job(&j.arn)).await {
                Ok(()) => stopped += 1,
                // It ended between the status read and the stop: nothing to stop.
                Err(e) if e.kind() == crate::types::ErrorKind::Validation => {
                    let now = self.batch_status(handle).await?;
                    if !now.jobs.iter().any(|s| s.arn == j.arn && s.finished()) {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(stopped)
    }

    /// Polls every `poll_interval` until all jobs have ended, calling `progress` each time.
    pub async fn wait_batch(
        &self,
        handle: &BatchHandle,
        mut progress: impl FnMut(&BatchStatus),
    ) -> Result<BatchStatus> {
        let every = self.batch_config()?.poll_interval;
        loop {
            let status = self.batch_status(handle).await?;
            progress(&status);
            if status.finished() {
                return Ok(status);
            }
            tokio::time::sleep(every).await;
        }
    }

    /// One item per submitted request, in submission order: its answer with usage and cost at
    /// the batch price, or its error (a record the job failed, one missing or unreadable in the
    /// output, one not submitted). Requests diverted to flex are awaited here: the submitting
    /// router answers them in the background (another router resuming the handle reports them
    /// as `diverted_elsewhere`). Fails if a job has not ended yet.
    pub async fn batch_results(&self, handle: &BatchHandle) -> Result<Vec<BatchItem>> {
        let exec = self.executor();
        let status = self.batch_status(handle).await?;
        if let Some(j) = status.jobs.iter().find(|j| !j.finished()) {
            return Err(Error::invalid(
                "batch",
                format!("job {} is still {}: wait for it first", j.arn, j.status),
            ));
        }
        // A handle from another process may name a model this configuration does not have.
        if let Some(job) = handle
            .jobs
            .iter()
            .find(|j| !exec.config.models.contains_key(&j.model))
        {
            return Err(Error::invalid(
                "batch.jobs.model",
                format!(
                    "job {} is for model {:?}, which this router's configuration does not have",
                    job.arn, job.model
                ),
            ));
        }
        let mut items: BTreeMap<usize, BatchItem> = handle.immediate.clone();
        items.extend(self.flex_items(handle).await);
        items.extend(not_submitted_items(handle));
        for (job, st) in handle.jobs.iter().zip(&status.jobs) {
            let output = self.job_output(job).await?;
            for &i in &job.indices {
                items.insert(i, self.job_item(job, st, &output, i));
            }
        }
        Ok((0..handle.total)
            .map(|i| {
                items.remove(&i).unwrap_or_else(|| {
                    Err(record_error(
                        BatchErrorKind::Missing,
                        format!("request {i} is in no job of this handle"),
                    ))
                })
            })
            .collect())
    }

    /// The answers of the requests diverted to flex: this router's, or, for a handle resumed
    /// by another router, an item saying where they were answered.
    async fn flex_items(&self, handle: &BatchHandle) -> Vec<(usize, BatchItem)> {
        if handle.pending_flex.is_empty() {
            return Vec::new();
        }
        match self.executor().diverted.get(&handle.id) {
            Some(answers) => answers
                .await
                .iter()
                .map(|(i, item)| (*i, item.clone()))
                .collect(),
            None => handle
                .pending_flex
                .iter()
                .map(|&i| {
                    (i, Err(record_error(
                        BatchErrorKind::DivertedElsewhere,
                        format!(
                            "request {i} was answered on flex by the router that submitted batch {}; its answer is not in this handle",
                            handle.id
                        ),
                    )))
                })
                .collect(),
        }
    }

    /// A finished job's output records by record id, read from every `.jsonl.out` object
    /// under its output URI, and how many lines were not records.
    async fn job_output(&self, job: &BatchJob) -> Result<JobOutput> {
        let aws = self.aws_batch()?;
        let region = crate::backend::bedrock_batch::job_region(&job.arn);
        let (bucket, prefix) = s3_parts(&job.output_uri).ok_or_else(|| {
            Error::invalid("batch", format!("{} is not an s3:// URI", job.output_uri))
        })?;
        let mut output = JobOutput::default();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .retried(|| aws.list_keys(region, bucket, prefix, token.clone()))
                .await?;
            for key in page.keys.iter().filter(|k| k.ends_with(".jsonl.out")) {
                let body = self
                    .retried(|| aws.read_object(region, bucket, key))
                    .await?;
                output.read(&body);
            }
            token = page.next;
            if token.is_none() {
                return Ok(output);
            }
        }
    }

    /// Request `i`'s item from its job's output: the answer priced at the batch rate, the
    /// record's own error, or why it is missing.
    fn job_item(&self, job: &BatchJob, st: &JobStatus, output: &JobOutput, i: usize) -> BatchItem {
        let exec = self.executor();
        let id = record_id(i);
        let Some(v) = output.records.get(&id) else {
            // Its line may be among those that could not be read.
            let unreadable = output.unreadable;
            return Err(if unreadable > 0 {
                record_error(
                    BatchErrorKind::UnreadableOutput,
                    format!(
                        "record {id} was not found in the output of job {}, where {unreadable} line(s) could not be read",
                        job.arn
                    ),
                )
            } else {
                record_error(
                    BatchErrorKind::Missing,
                    format!(
                        "record {id} is not in the output of job {} ({})",
                        job.arn,
                        st.message.clone().unwrap_or_else(|| st.status.clone())
                    ),
                )
            });
        };
        match (v.get("modelOutput").and_then(parse_output), v.get("error")) {
            (Some((text, usage)), _) => {
                let m = &exec.config.models[&job.model];
                let pricing = &exec.config.pricing;
                Ok(BatchOutput {
                    cost_usd: crate::cost::call_cost(m.price(), pricing, &usage, None, None)
                        * pricing.batch,
                    text,
                    usage,
                    model: job.model.clone(),
                    lane: BatchLane::Batch,
                    diverted: None,
                })
            }
            (None, Some(err)) => Err(BatchRecordError {
                code: err
                    .get("errorCode")
                    .map(|c| c.to_string().trim_matches('"').to_string()),
                ..record_error(
                    BatchErrorKind::RecordFailed,
                    err.get("errorMessage")
                        .and_then(|m| m.as_str())
                        .unwrap_or("")
                        .to_string(),
                )
            }),
            (None, None) => Err(record_error(
                BatchErrorKind::Malformed,
                format!("record {id} has neither modelOutput nor error"),
            )),
        }
    }

    /// What the answered items cost, against the same tokens on standard and on flex.
    pub fn batch_cost_comparison(&self, items: &[BatchItem]) -> BatchCostComparison {
        let exec = self.executor();
        let pricing = &exec.config.pricing;
        let mut c = BatchCostComparison {
            batch_usd: 0.0,
            standard_usd: 0.0,
            flex_usd: 0.0,
        };
        for out in items.iter().flatten() {
            let Some(m) = exec.config.models.get(&out.model) else {
                continue;
            };
            let on_demand = crate::cost::call_cost(m.price(), pricing, &out.usage, None, None);
            c.batch_usd += out.cost_usd;
            c.standard_usd += on_demand * pricing.tier_multiplier(ServiceTier::STANDARD);
            c.flex_usd += on_demand * pricing.tier_multiplier(ServiceTier::FLEX);
        }
        c
    }
}

/// A request's index in the submission and its job record line.
type Record = (usize, String);

/// Requests sorted for the batch lane: each model's records with the region its jobs run in,
/// and the requests answered on flex instead, with why.
#[derive(Default)]
struct Sorted {
    by_model: BTreeMap<String, (String, Vec<Record>)>,
    divert: BTreeMap<usize, String>,
}

/// What creating the jobs gave: the jobs, the chunks that could not be submitted, and the
/// first error (the call's own, when nothing was created).
#[derive(Default)]
struct Created {
    jobs: Vec<BatchJob>,
    not_submitted: Vec<NotSubmitted>,
    first_error: Option<Error>,
}

/// A finished job's output: its records by record id, and the lines that were not JSON
/// records with a `recordId`.
#[derive(Default)]
struct JobOutput {
    records: BTreeMap<String, serde_json::Value>,
    unreadable: usize,
}

impl JobOutput {
    /// Reads one output object's lines.
    fn read(&mut self, body: &[u8]) {
        for line in String::from_utf8_lossy(body)
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let record = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| Some((v.get("recordId")?.as_str()?.to_string(), v)));
            match record {
                Some((id, v)) => {
                    self.records.insert(id, v);
                }
                None => self.unreadable += 1,
            }
        }
    }
}

/// An item's error of `kind`, with no service code or error kind of its own.
fn record_error(kind: BatchErrorKind, message: String) -> BatchRecordError {
    BatchRecordError {
        kind,
        error_kind: None,
        code: None,
        message,
    }
}

/// The items of the chunks that could not be submitted: their error, as it was.
fn not_submitted_items(handle: &BatchHandle) -> Vec<(usize, BatchItem)> {
    handle
        .not_submitted
        .iter()
        .flat_map(|ns| {
            ns.indices.iter().map(move |&i| {
                (
                    i,
                    Err(BatchRecordError {
                        error_kind: Some(ns.kind),
                        ..record_error(BatchErrorKind::NotSubmitted, ns.message.clone())
                    }),
                )
            })
        })
        .collect()
}

/// A job's name (the same on every try) and the S3 prefix of its input and output.
struct JobPlace {
    name: String,
    base: String,
}

/// The region a Bedrock model's batch jobs run in (the first configured region it is deployed
/// in), or why it has none: it is not Bedrock's, or has no in-region deployment.
fn batch_region(
    config: &crate::config::Config,
    model: &str,
    m: &crate::config::ModelConfig,
) -> std::result::Result<String, String> {
    if !m.is_managed() {
        return Err(format!(
            "{model} is {}, which has no batch lane here",
            m.hosting()
        ));
    }
    config
        .regions
        .iter()
        .find(|r| m.regions().contains(&r.name))
        .map(|r| r.name.clone())
        .ok_or_else(|| format!("{model} has no in-region deployment for batch jobs"))
}

/// Each model's records in chunks of `min_records..=max_records_per_job`; records that cannot
/// make a job go to flex (into `divert`, with why).
fn chunk_for_jobs(
    by_model: BTreeMap<String, (String, Vec<Record>)>,
    config: &BatchConfig,
    divert: &mut BTreeMap<usize, String>,
) -> BTreeMap<String, (String, Vec<Vec<Record>>)> {
    let mut chunked = BTreeMap::new();
    for (model, (region, records)) in by_model {
        let (chunks, left) = job_chunks(records, config.min_records, config.max_records_per_job);
        let n = left.len();
        for (i, _) in left {
            divert.insert(
                i,
                format!(
                    "{n} requests for {model} left over: fewer than the batch minimum of {} records a job",
                    config.min_records
                ),
            );
        }
        if !chunks.is_empty() {
            chunked.insert(model, (region, chunks));
        }
    }
    chunked
}

/// Splits one model's records into jobs of `min..=max` records (the service refuses a job
/// below its minimum), as evenly as the bounds allow; the records that cannot make a job come
/// back second. Order is kept.
fn job_chunks<T>(records: Vec<T>, min: usize, max: usize) -> (Vec<Vec<T>>, Vec<T>) {
    let (min, max) = (min.max(1), max.max(min.max(1)));
    let n = records.len();
    if n < min {
        return (Vec::new(), records);
    }
    let jobs = n.div_ceil(max);
    // Even sizes differ by at most one; the smallest is n / jobs.
    let (sizes, used) = if n / jobs >= min {
        let sizes: Vec<usize> = (0..jobs)
            .map(|j| n / jobs + usize::from(j < n % jobs))
            .collect();
        (sizes, n)
    } else {
        // max < 2 * min: full jobs, and a tail too small for one of its own.
        let full = n / max;
        (vec![max; full], full * max)
    };
    let mut rest = records.into_iter();
    let chunks = sizes
        .into_iter()
        .map(|size| rest.by_ref().take(size).collect())
        .collect();
    debug_assert_eq!(rest.len(), n - used);
    (chunks, rest.collect())
}

#[cfg(test)]
mod tests {
    use super::job_chunks;
    use proptest::prelude::*;

    #[test]
    fn a_tail_below_the_minimum_is_spread_or_left_over() {
        let sizes = |n: usize, min, max| {
            let (chunks, left) = job_chunks((0..n).collect(), min, max);
            (chunks.iter().map(Vec::len).collect::<Vec<_>>(), left.len())
        };
        assert_eq!(sizes(1000, 100, 400), (vec![334, 333, 333], 0));
        assert_eq!(sizes(410, 100, 400), (vec![205, 205], 0));
        assert_eq!(sizes(110, 100, 100), (vec![100], 10));
        assert_eq!(sizes(99, 100, 400), (vec![], 99));
    }

    proptest! {
        #[test]
        fn every_job_is_within_bounds_and_no_record_is_lost(
            n in 0usize..5000, min in 1usize..300, extra in 0usize..1000,
        ) {
            let max = min + extra;
            let (chunks, left) = job_chunks((0..n).collect::<Vec<_>>(), min, max);
            prop_assert!(chunks.iter().all(|c| (min..=max).contains(&c.len())));
            // Nothing left over when the bounds allow a split (max >= 2 min, or n fits in one).
            if n >= min && (max >= 2 * min || n <= max) {
                prop_assert!(left.is_empty());
            }
            prop_assert!(left.len() < min);
            let order: Vec<usize> = chunks.into_iter().flatten().chain(left).collect();
            prop_assert_eq!(order, (0..n).collect::<Vec<_>>());
        }
    }
}
