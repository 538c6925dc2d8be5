//! The batch lane's values in the binding-neutral schema: a result item as `{"output": ...}` or
//! `{"error": ...}`, and a status with its progress counted.

use serde::Serialize;

use crate::batch::{BatchItem, BatchOutput, BatchRecordError, BatchStatus, JobStatus};

/// One request's outcome: `{"output": BatchOutput}` or `{"error": BatchRecordError}`.
///
/// ```
/// use laneway::batch::{BatchErrorKind, BatchRecordError};
/// let failed: laneway::batch::BatchItem = Err(BatchRecordError {
///     kind: BatchErrorKind::Missing,
///     error_kind: None,
///     code: None,
///     message: "not in the output".into(),
/// });
/// let json = serde_json::to_value(laneway::surface::batch::item(&failed)).unwrap();
/// assert_eq!(json["error"]["kind"], "missing");
/// ```
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Item<'a> {
    /// An answer: `{"output": BatchOutput}`.
    Output(&'a BatchOutput),
    /// No answer, and why: `{"error": BatchRecordError}`.
    Error(&'a BatchRecordError),
}

/// An item in the schema.
pub fn item(item: &BatchItem) -> Item<'_> {
    match item {
        Ok(output) => Item::Output(output),
        Err(error) => Item::Error(error),
    }
}

/// Every item in the schema, in submission order.
pub fn items(items: &[BatchItem]) -> Vec<Item<'_>> {
    items.iter().map(item).collect()
}

/// A batch's status: every job's state, how many jobs have ended (`done` of `total`) and
/// whether all have (`finished`), as a progress callback receives it.
#[derive(Debug, Serialize)]
pub struct Progress<'a> {
    /// Every job's state, as Bedrock reports it.
    pub jobs: &'a [JobStatus],
    /// How many jobs have ended (completed, failed, stopped or expired).
    pub done: usize,
    /// How many jobs the batch has.
    pub total: usize,
    /// Whether every job has ended.
    pub finished: bool,
}

/// The status in the schema.
///
/// ```
/// let status = laneway::batch::BatchStatus { jobs: Vec::new() };
/// let json = serde_json::to_value(laneway::surface::batch::progress(&status)).unwrap();
/// assert_eq!(json["finished"], true);
/// ```
pub fn progress(status: &BatchStatus) -> Progress<'_> {
    let (done, total) = status.progress();
    Progress {
        jobs: &status.jobs,
        done,
        total,
        finished: status.finished(),
    }
}
