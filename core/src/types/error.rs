//! One error type for everything Laneway does, with a machine-readable [`ErrorKind`] and the
//! failover verdict that the router reads (never a message string).

use std::fmt;

/// What kind of failure an [`Error`] is. Stable: bindings map it to exception classes and codes.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The service is over capacity for this target (ThrottlingException, 429).
    Throttled,
    /// The service or region is down (ServiceUnavailableException, 503).
    Unavailable,
    /// The model or endpoint is loading or cold (ModelNotReadyException).
    ModelNotReady,
    /// The model or the connection took too long (ModelTimeoutException, client timeouts).
    Timeout,
    /// A transient failure inside the service (InternalServerException, InternalFailure, ...).
    Internal,
    /// The connection failed before an answer (refused, reset, DNS).
    Transport,
    /// The model failed on this input (ModelErrorException, SageMaker ModelError).
    ModelError,
    /// The service refused the request as invalid (ValidationException, 400).
    Validation,
    /// Permission was refused for this target (AccessDeniedException: say, a model not
    /// enabled in that region). Fails over: another region or profile may serve it.
    AccessDenied,
    /// The caller's credentials were refused or could not be had (ExpiredTokenException,
    /// UnrecognizedClientException, a bad or missing signature, a refused Bedrock API key, a
    /// credential chain that gave nothing). Fails the call at once: no other target would
    /// take them either. The exception is a refusal one target can make of credentials that
    /// others take ([`Error::may_be_the_targets_refusal`]): once the provider has answered
    /// the router, it fails over and keeps that region away, as `AccessDenied` does.
    Authentication,
    /// The model, profile or endpoint does not exist (ResourceNotFoundException).
    NotFound,
    /// An account quota was exceeded (ServiceQuotaExceededException).
    QuotaExceeded,
    /// A stream failed after part of the answer had been delivered.
    StreamInterrupted,
    /// Every planned target was tried and failed.
    AllTargetsFailed,
    /// Every target the call may use was at its concurrency, and no slot could come within its
    /// deadline (the client-side queue, `[routing.concurrency]`): nothing more was sent.
    Overloaded,
    /// The configuration is malformed or contradictory.
    Config,
    /// The request is malformed; Laneway refused it before sending anything.
    InvalidRequest,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 17] = [
        ErrorKind::Throttled,
        ErrorKind::Unavailable,
        ErrorKind::ModelNotReady,
        ErrorKind::Timeout,
        ErrorKind::Internal,
        ErrorKind::Transport,
        ErrorKind::ModelError,
        ErrorKind::Validation,
        ErrorKind::AccessDenied,
        ErrorKind::Authentication,
        ErrorKind::NotFound,
        ErrorKind::QuotaExceeded,
        ErrorKind::StreamInterrupted,
        ErrorKind::AllTargetsFailed,
        ErrorKind::Overloaded,
        ErrorKind::Config,
        ErrorKind::InvalidRequest,
    ];

    /// Whether another target may succeed where this one failed: capacity, outages and
    /// transient faults fail over; the caller's own mistakes never do.
    pub fn fails_over(self) -> bool {
        matches!(
            self,
            ErrorKind::Throttled
                | ErrorKind::Unavailable
                | ErrorKind::ModelNotReady
                | ErrorKind::Timeout
                | ErrorKind::Internal
                | ErrorKind::Transport
                | ErrorKind::AccessDenied
        )
    }

    /// The stable snake_case name, as used in metrics labels and binding error codes.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Throttled => "throttled",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::ModelNotReady => "model_not_ready",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Internal => "internal",
            ErrorKind::Transport => "transport",
            ErrorKind::ModelError => "model_error",
            ErrorKind::Validation => "validation",
            ErrorKind::AccessDenied => "access_denied",
            ErrorKind::Authentication => "authentication",
            ErrorKind::NotFound => "not_found",
            ErrorKind::QuotaExceeded => "quota_exceeded",
            ErrorKind::StreamInterrupted => "stream_interrupted",
            ErrorKind::AllTargetsFailed => "all_targets_failed",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Config => "config",
            ErrorKind::InvalidRequest => "invalid_request",
        }
    }

    /// The kind of an AWS error code from Bedrock Runtime or SageMaker Runtime.
    #[deprecated(
        since = "0.9.0",
        note = "a backend reads its service's error codes; this goes in the next release"
    )]
    #[doc(hidden)]
    pub fn from_aws_code(code: &str, http_status: u16) -> ErrorKind {
        match code.to_ascii_lowercase().as_str() {
            "throttlingexception" | "toomanyrequestsexception" => ErrorKind::Throttled,
            "serviceunavailableexception" | "serviceunavailable" => ErrorKind::Unavailable,
            "modelnotreadyexception" => ErrorKind::ModelNotReady,
            "modeltimeoutexception" | "requesttimeout" | "requesttimeoutexception" => {
                ErrorKind::Timeout
            }
            "internalserverexception"
            | "internalfailure"
            | "internaldependencyexception"
            | "internalstreamfailure"
            | "modelstreamerrorexception"
            | "modelstreamerror" => ErrorKind::Internal,
            "modelerrorexception" | "modelerror" => ErrorKind::ModelError,
            "validationexception" | "validationerror" => ErrorKind::Validation,
            "accessdeniedexception" => ErrorKind::AccessDenied,
            "unrecognizedclientexception"
            | "invalidsignatureexception"
            | "missingauthenticationtokenexception"
            | "incompletesignatureexception"
            | "expiredtokenexception"
            | "expiredtoken"
            | "invalidclienttokenid"
            | "signaturedoesnotmatch" => ErrorKind::Authentication,
            "resourcenotfoundexception" => ErrorKind::NotFound,
            "servicequotaexceededexception" => ErrorKind::QuotaExceeded,
            _ => match http_status {
                429 => ErrorKind::Throttled,
                503 => ErrorKind::Unavailable,
                408 | 504 => ErrorKind::Timeout,
                401 => ErrorKind::Authentication,
                403 => ErrorKind::AccessDenied,
                404 => ErrorKind::NotFound,
                424 => ErrorKind::ModelError,
                400..=499 => ErrorKind::Validation,
                _ => ErrorKind::Internal,
            },
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure reported by a provider (or the connection to it) for one target.
///
/// Its [`source`](std::error::Error::source) is the underlying error (the AWS SDK's, with its
/// own chain) when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// What kind of failure it is, which says whether the call may fail over.
    pub kind: ErrorKind,
    /// The AWS error code, e.g. `ThrottlingException`; empty for transport failures.
    pub code: String,
    /// What went wrong, as the service (or the failed connection) said it.
    pub message: String,
    /// The model, profile or endpoint the request was sent to.
    pub target: String,
    /// The region the request was sent to.
    pub region: String,
    /// The HTTP status, when an HTTP answer came.
    pub http_status: Option<u16>,
    /// The `x-amzn-RequestId` of the answer, for AWS support.
    pub request_id: Option<String>,
    /// How long the service asked to wait (`Retry-After`), if it did.
    pub retry_after: Option<std::time::Duration>,
    /// What the failure says beyond its kind, as the backend that read it found.
    pub fact: Option<FailureFact>,
    /// The underlying error, if any.
    pub source: Option<Cause>,
}

/// What a failure says beyond its [`ErrorKind`], found by the backend that read its service's
/// answer (as smithy-rs classifies an error for retries): the execution decides what follows
/// from it, in one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureFact {
    /// The target's region refused credentials that other regions may take: a region not
    /// enabled for the account, or an endpoint that does not serve the region a request was
    /// signed for.
    RegionRefusedCredentials,
    /// The target does not serve the streaming operation (a container or server without
    /// response streaming): it is sent whole from then on.
    StreamingRefused,
    /// One of the call's time limits ended the attempt.
    TimeLimitHit(TimeLimit),
}

impl ServiceError {
    /// An error of `kind` from `target` in `region`, with no code, status or source yet.
    ///
    /// ```
    /// use laneway::{ErrorKind, ServiceError};
    /// let e = ServiceError::new(ErrorKind::Throttled, "slow down", "my-model", "eu-west-1");
    /// assert!(laneway::Error::from(e).fails_over());
    /// ```
    pub fn new(
        kind: ErrorKind,
        message: impl Into<String>,
        target: impl Into<String>,
        region: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            code: String::new(),
            message: message.into(),
            target: target.into(),
            region: region.into(),
            http_status: None,
            request_id: None,
            retry_after: None,
            fact: None,
            source: None,
        }
    }

    /// The same error with this service error code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = code.into();
        self
    }

    /// The same error, saying `fact` beyond its kind.
    pub fn with_fact(mut self, fact: FailureFact) -> Self {
        self.fact = Some(fact);
        self
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} from {} in {}: ", self.kind, self.target, self.region)?;
        if !self.code.is_empty() {
            write!(f, "{}: ", self.code)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|c| c.0.as_ref() as _)
    }
}

/// The underlying error of a [`ServiceError`], shared so that errors stay `Clone`.
///
/// Two causes compare equal: the chain is not part of an error's identity.
#[derive(Clone)]
pub struct Cause(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps an error.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(e))
    }

    /// The error itself.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.0.as_ref()
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl PartialEq for Cause {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Cause {}

/// Which of a call's time limits fired (see `[routing.timeouts]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeLimit {
    /// No first token (for a non-streamed answer, no answer began) within the attempt's
    /// first-token limit.
    FirstToken,
    /// A stream sent nothing for longer than the idle limit.
    Idle,
    /// A non-streamed answer took longer than its first-token limit plus its generation time
    /// at the slowest rate allowed.
    Answer,
    /// The call's overall deadline: the request's `slo.deadline`, else its class's.
    Deadline,
}

impl TimeLimit {
    /// The error code of an attempt this limit ended, e.g. `FirstTokenTimeout`.
    ///
    /// ```
    /// assert_eq!(laneway::TimeLimit::Idle.code(), "IdleTimeout");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            TimeLimit::FirstToken => "FirstTokenTimeout",
            TimeLimit::Idle => "IdleTimeout",
            TimeLimit::Answer => "AnswerTimeout",
            TimeLimit::Deadline => "DeadlineExceeded",
        }
    }

    /// The snake_case name, as in configuration and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeLimit::FirstToken => "first_token",
            TimeLimit::Idle => "idle",
            TimeLimit::Answer => "answer",
            TimeLimit::Deadline => "deadline",
        }
    }
}

impl fmt::Display for TimeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the length of an attempt's time limit came from (said in
/// [`Reason::TimeLimitHit`](crate::Reason::TimeLimitHit)).
///
/// ```
/// let learned = laneway::LimitSource::Learned { quantile: 0.99, observed_ms: 240, factor: 3.0, samples: 40 };
/// assert_eq!(serde_json::to_value(learned).unwrap()["from"], "learned");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LimitSource {
    /// The SLO class's limit (or the one the request's `ttft_target` gives): the target had
    /// not been observed enough yet, learning is off, or what it learnt reached the ceiling.
    Class,
    /// The target's own latency at its tier: the `quantile` of its last `samples`
    /// observations (first tokens, or a stream's longest gap), `observed_ms`, times `factor`,
    /// within `[routing.timeouts.learned]`'s floor and the class's limit.
    Learned {
        /// The quantile taken, from 0 to 1 (`[routing.timeouts.learned].quantile`).
        quantile: f64,
        /// That quantile of the target's observations, in milliseconds.
        observed_ms: u64,
        /// The multiple of `observed_ms` taken (`[routing.timeouts.learned].factor`).
        factor: f64,
        /// How many recent observations the quantile was taken of.
        samples: u32,
    },
    /// The target had answered too few times for its own latency alone: its model's prior
    /// (`[routing.priors]`, or the model's `latency` table), or the fleet's figures for the
    /// target with `[shared]`, `prior_ms`, blended with `samples` observations of its own
    /// whose quantile is `observed_ms`, times `factor`.
    Prior {
        /// The prior's high quantile, in milliseconds.
        prior_ms: u64,
        /// The quantile of the target's own observations (`None` before any), in
        /// milliseconds.
        observed_ms: Option<u64>,
        /// How many observations of its own were blended in.
        samples: u32,
        /// The multiple of the blend taken (`[routing.timeouts.learned].factor`).
        factor: f64,
    },
    /// The call's deadline, which came before the attempt's own limit.
    Deadline,
}

impl LimitSource {
    /// Whether the limit is an estimate of the target's own speed (learnt, or from a
    /// prior): when it cuts an attempt, the target was slower than estimated, which the
    /// next estimate takes in; and when it fires while the process itself is behind, the
    /// wait goes on to the class's limit.
    pub fn is_estimate(&self) -> bool {
        matches!(
            self,
            LimitSource::Learned { .. } | LimitSource::Prior { .. }
        )
    }
}

/// How much of a stream reached the caller before it failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Delivered {
    /// Content deltas yielded to the caller.
    pub deltas: u32,
    /// Characters of text yielded.
    pub text_chars: usize,
    /// Output tokens delivered: exact where the service counted them, else estimated from the
    /// deltas (one per delta, which is what Bedrock and TGI stream).
    pub output_tokens: u32,
}

/// One failed attempt of a call, as listed by [`Error::AllTargetsFailed`] and
/// [`RouteDecision::failed_attempts`](crate::RouteDecision).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FailedAttempt {
    /// The model, profile or endpoint id sent to.
    pub target: String,
    /// The region the attempt was sent to.
    pub region: String,
    /// The configured model the attempt was for.
    pub model: String,
    /// Who serves the target: Bedrock, SageMaker or a provider of your own.
    pub provider: super::target::Provider,
    /// Which of the provider's APIs it was called by.
    pub api: super::target::Api,
    /// The service tier asked for (Bedrock), if any.
    pub tier: Option<super::ServiceTier>,
    /// What kind of failure it was.
    pub kind: ErrorKind,
    /// The service's error code, e.g. `ThrottlingException`; empty when none came.
    pub code: String,
    /// What went wrong: the service's message, else the error's own.
    pub message: String,
    /// The HTTP status of the answer, when one came.
    pub http_status: Option<u16>,
    /// The service's request id (`x-amzn-RequestId`), for its support.
    pub request_id: Option<String>,
}

/// The error of every Laneway operation.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request is malformed: `field` names the part that is wrong.
    #[error("invalid request: {field}: {reason}")]
    InvalidRequest {
        /// The part of the request that is wrong, as a path, e.g. `messages[0].content[1]`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The configuration is malformed or contradictory: `field` is its path, e.g.
    /// `models."amazon.nova-lite-v1:0".price.input_per_1k`.
    #[error("invalid configuration: {field}: {reason}")]
    Config {
        /// The path of the setting at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The service or the connection failed for one target.
    #[error(transparent)]
    Service(Box<ServiceError>),
    /// A stream failed after part of the answer was delivered; `delivered` says how much.
    #[error("stream interrupted after {} delivered output tokens ({} characters): {cause}", .delivered.output_tokens, .delivered.text_chars)]
    StreamInterrupted {
        /// What had reached the caller when the stream broke.
        delivered: Delivered,
        /// The error that broke the stream (or ended the attempts to continue it).
        #[source]
        cause: Box<Error>,
    },
    /// Every planned target failed with an error that allowed failover, or the retry budget
    /// allowed no further attempt.
    #[error("all {} attempts failed{}: {}", .attempts.len(), if *.budget_exhausted { " (retry budget exhausted)" } else { "" }, summarise(.attempts))]
    AllTargetsFailed {
        /// Every attempt that failed, in the order they failed.
        attempts: Vec<FailedAttempt>,
        /// Whether the retry budget refused a further attempt (else every target had failed).
        budget_exhausted: bool,
    },
    /// Every target the call may use was at its concurrency, and the client-side queue could
    /// not give it a slot within its deadline: refused at once when the line ahead plainly
    /// needed longer than the deadline left, or after waiting until then.
    #[error("overloaded: every target a {class} call may use is at its concurrency; it would have needed to wait about {needed_ms} ms for a slot ({ahead} calls ahead), and its deadline allowed {allowed_ms} ms (waited {waited_ms} ms){}", summarise_earlier(.attempts))]
    Overloaded {
        /// The call's SLO class.
        class: super::SloClass,
        /// The wait it would have needed: the line ahead of it, at its targets' usual hold, over
        /// their slots (for a call that waited until its deadline, at least that wait).
        needed_ms: u64,
        /// What its deadline left when it asked for a slot.
        allowed_ms: u64,
        /// How long it waited in line.
        waited_ms: u64,
        /// Calls ahead of it in line for the same targets.
        ahead: u32,
        /// Attempts that failed before it waited (throttled, say), if any.
        attempts: Vec<FailedAttempt>,
    },
}

fn summarise_earlier(attempts: &[FailedAttempt]) -> String {
    if attempts.is_empty() {
        String::new()
    } else {
        format!("; before it: {}", summarise(attempts))
    }
}

fn summarise(attempts: &[FailedAttempt]) -> String {
    attempts
        .iter()
        .map(|a| format!("{} in {}: {} ({})", a.target, a.region, a.kind, a.code))
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// The machine-readable kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidRequest { .. } => ErrorKind::InvalidRequest,
            Error::Config { .. } => ErrorKind::Config,
            Error::Service(e) => e.kind,
            Error::StreamInterrupted { .. } => ErrorKind::StreamInterrupted,
            Error::AllTargetsFailed { .. } => ErrorKind::AllTargetsFailed,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
        }
    }

    /// Whether the router may try the next target after this error.
    pub fn fails_over(&self) -> bool {
        self.kind().fails_over()
    }

    /// Whether this refusal of the credentials may be one target's region's rather than the
    /// credentials' ([`FailureFact::RegionRefusedCredentials`]): every other region may take
    /// them. Expired or missing credentials and a malformed signature are the caller's
    /// everywhere.
    ///
    /// ```
    /// use laneway::{Error, ErrorKind, FailureFact, ServiceError};
    /// let refused = ServiceError::new(ErrorKind::Authentication, "refused", "m", "ap-east-2");
    /// let here = Error::from(refused.clone().with_fact(FailureFact::RegionRefusedCredentials));
    /// assert!(here.may_be_the_targets_refusal());
    /// assert!(!Error::from(refused).may_be_the_targets_refusal());
    /// ```
    pub fn may_be_the_targets_refusal(&self) -> bool {
        self.fact() == Some(FailureFact::RegionRefusedCredentials)
    }

    /// What the failure says beyond its kind, if a backend found anything.
    pub fn fact(&self) -> Option<FailureFact> {
        match self {
            Error::Service(e) => e.fact,
            _ => None,
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidRequest {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Config {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The error of an attempt that `limit` ended after `after` (kind [`ErrorKind::Timeout`],
    /// which fails over).
    pub(crate) fn timed_out(
        limit: TimeLimit,
        after: std::time::Duration,
        target: &str,
        region: &str,
    ) -> Self {
        let message = match limit {
            TimeLimit::FirstToken => format!("no first token within {after:?} (first_token limit)"),
            TimeLimit::Idle => format!("the stream sent nothing for {after:?} (idle limit)"),
            TimeLimit::Answer => {
                format!("the answer was not complete within {after:?} (answer limit)")
            }
            TimeLimit::Deadline => format!("the call's deadline of {after:?} passed"),
        };
        Error::from(
            ServiceError::new(ErrorKind::Timeout, message, target, region)
                .with_code(limit.code())
                .with_fact(FailureFact::TimeLimitHit(limit)),
        )
    }

    pub(crate) fn as_failed_attempt(&self, attempt: &super::target::Attempt) -> FailedAttempt {
        let (code, message, http_status, request_id) = match self {
            Error::Service(e) => (
                e.code.clone(),
                e.message.clone(),
                e.http_status,
                e.request_id.clone(),
            ),
            other => (String::new(), other.to_string(), None, None),
        };
        FailedAttempt {
            target: attempt.target.id().into(),
            region: attempt.target.region().into(),
            model: attempt.model.to_string(),
            provider: attempt.target.provider.clone(),
            api: attempt.target.api,
            tier: attempt.tier,
            kind: self.kind(),
            code,
            message,
            http_status,
            request_id,
        }
    }
}

impl From<ServiceError> for Error {
    fn from(e: ServiceError) -> Self {
        Error::Service(Box::new(e))
    }
}

/// `Result` with Laneway's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = Error::invalid("inference.max_tokens", "must be at least 1, got -5");
        assert_eq!(
            e.to_string(),
            "invalid request: inference.max_tokens: must be at least 1, got -5"
        );
        assert_eq!(e.kind(), ErrorKind::InvalidRequest);
        assert!(!e.fails_over());
    }
}
