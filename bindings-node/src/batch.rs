//! The batch lane for JavaScript: sessions, handles, status, waiting with progress, results and
//! cancelling. Values cross as JSON of the core's schema (`laneway::surface::batch`); a handle
//! stays a native object, so that the answers of requests diverted to flex, held by this
//! process, are not lost to a JSON round trip.

use std::sync::{Arc, Mutex};

use laneway::batch::BatchHandle;
use laneway::surface::batch;
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use crate::{guard, invalid_request, js_error, lock, request_of, to_json};

/// A submitted batch. `toJson()` writes it down; `NativeBatchHandle.fromJson(text)` resumes it
/// in another process.
#[napi]
pub struct NativeBatchHandle {
    pub(crate) handle: Arc<BatchHandle>,
}

#[napi]
impl NativeBatchHandle {
    /// The handle as JSON text.
    #[napi]
    pub fn to_json(&self) -> String {
        self.handle.to_json()
    }

    /// A handle written by `toJson` (a `ConfigError` names what is wrong with the text).
    #[napi(factory)]
    pub fn from_json(text: String) -> napi::Result<Self> {
        guard(|| {
            let handle = BatchHandle::from_json(&text).map_err(js_error)?;
            Ok(Self {
                handle: Arc::new(handle),
            })
        })
    }

    /// The ARNs of the batch's jobs.
    #[napi(getter)]
    pub fn job_arns(&self) -> Vec<String> {
        self.handle.jobs.iter().map(|j| j.arn.clone()).collect()
    }
}

impl NativeBatchHandle {
    fn of(handle: BatchHandle) -> Self {
        Self {
            handle: Arc::new(handle),
        }
    }
}

/// Collects requests of SLO class `batch` for one submission.
#[napi]
pub struct NativeBatchSession {
    /// `None` once submitted.
    session: Mutex<Option<laneway::BatchSession>>,
}

impl NativeBatchSession {
    pub(crate) fn new(session: laneway::BatchSession) -> Self {
        Self {
            session: Mutex::new(Some(session)),
        }
    }
}

#[napi]
impl NativeBatchSession {
    /// Adds a request (JSON); its index is its place in the results.
    #[napi]
    pub fn push(&self, request_json: String) -> napi::Result<u32> {
        guard(|| {
            let request = request_of(&request_json)?;
            let mut session = lock(&self.session);
            let session = session
                .as_mut()
                .ok_or_else(|| invalid_request("this batch session was submitted"))?;
            let index = session.push(request).map_err(js_error)?;
            Ok(u32::try_from(index).unwrap_or(u32::MAX))
        })
    }

    /// Requests collected so far.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        lock(&self.session)
            .as_ref()
            .map_or(0, |s| u32::try_from(s.len()).unwrap_or(u32::MAX))
    }

    /// Submits everything collected; resolves to the handle.
    #[napi]
    pub fn submit<'env>(
        &self,
        env: &'env Env,
    ) -> napi::Result<PromiseRaw<'env, NativeBatchHandle>> {
        let session = lock(&self.session)
            .take()
            .ok_or_else(|| invalid_request("this batch session was submitted"))?;
        env.spawn_future(async move {
            session
                .submit()
                .await
                .map(NativeBatchHandle::of)
                .map_err(js_error)
        })
    }
}

/// What a progress callback receives: the status JSON.
pub(crate) type Progress = ThreadsafeFunction<String, (), String, napi::Status, false>;

/// Submits requests (a JSON array) to the batch lane.
pub(crate) fn submit<'env>(
    env: &'env Env,
    router: laneway::Router,
    requests_json: &str,
) -> napi::Result<PromiseRaw<'env, NativeBatchHandle>> {
    let requests: Vec<serde_json::Value> =
        serde_json::from_str(requests_json).map_err(invalid_request)?;
    let requests = requests
        .into_iter()
        .map(|r| laneway::surface::flat::request(r, laneway::surface::flat::Casing::Camel))
        .collect::<laneway::Result<Vec<_>>>()
        .map_err(js_error)?;
    env.spawn_future(async move {
        router
            .submit_batch(requests)
            .await
            .map(NativeBatchHandle::of)
            .map_err(js_error)
    })
}

/// Every job's status: JSON of `{jobs, done, total, finished}`.
pub(crate) fn status<'env>(
    env: &'env Env,
    router: laneway::Router,
    handle: Arc<BatchHandle>,
) -> napi::Result<PromiseRaw<'env, String>> {
    env.spawn_future(async move {
        let status = router.batch_status(&handle).await.map_err(js_error)?;
        to_json(&batch::progress(&status))
    })
}

/// Polls until every job has ended, passing each status (JSON) to `progress`; resolves to the
/// last status. Abortable through `abort`.
pub(crate) fn wait<'env>(
    env: &'env Env,
    router: laneway::Router,
    handle: Arc<BatchHandle>,
    progress: Option<Progress>,
    (abort, forget): (
        futures::future::AbortRegistration,
        impl FnOnce() + Send + 'static,
    ),
) -> napi::Result<PromiseRaw<'env, String>> {
    env.spawn_future(async move {
        let report = |status: &laneway::batch::BatchStatus| {
            if let (Some(progress), Ok(json)) = (&progress, to_json(&batch::progress(status))) {
                progress.call(json, ThreadsafeFunctionCallMode::NonBlocking);
            }
        };
        let waited =
            futures::future::Abortable::new(router.wait_batch(&handle, report), abort).await;
        forget();
        match waited {
            Ok(status) => to_json(&batch::progress(&status.map_err(js_error)?)),
            Err(futures::future::Aborted) => Err(crate::aborted()),
        }
    })
}

/// One item per request, in submission order: JSON of `[{output} | {error}]`.
pub(crate) fn results<'env>(
    env: &'env Env,
    router: laneway::Router,
    handle: Arc<BatchHandle>,
) -> napi::Result<PromiseRaw<'env, String>> {
    env.spawn_future(async move {
        let items = router.batch_results(&handle).await.map_err(js_error)?;
        to_json(&batch::items(&items))
    })
}

/// Stops the jobs that have not ended; resolves to how many were stopped.
pub(crate) fn cancel<'env>(
    env: &'env Env,
    router: laneway::Router,
    handle: Arc<BatchHandle>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    env.spawn_future(async move {
        let stopped = router.cancel_batch(&handle).await.map_err(js_error)?;
        Ok(u32::try_from(stopped).unwrap_or(u32::MAX))
    })
}
