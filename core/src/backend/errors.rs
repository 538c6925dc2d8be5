//! SDK errors to Laneway errors, by AWS error code and HTTP status, never by message text.

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::types::{Error, ErrorKind, FailureFact, ServiceError};

/// What a call was sent to: a target's id (model, profile, endpoint) or, for the batch lane's
/// calls, the bucket, object or job; and its region.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Site<'a> {
    pub target: &'a str,
    pub region: &'a str,
}

impl<'a> Site<'a> {
    /// The site of a call to `target` in `region`.
    pub(crate) fn new(target: &'a str, region: &'a str) -> Self {
        Self { target, region }
    }
}

impl<'a> From<&'a crate::types::Target> for Site<'a> {
    fn from(t: &'a crate::types::Target) -> Self {
        Site {
            target: t.id(),
            region: t.region(),
        }
    }
}

/// Maps the error of an operation call (an HTTP answer, or none).
pub(crate) fn from_operation<'s, E>(
    err: SdkError<E, HttpResponse>,
    site: impl Into<Site<'s>>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let site = site.into();
    match &err {
        SdkError::ServiceError(ctx) => {
            let status = ctx.raw().status().as_u16();
            let headers = ctx.raw().headers();
            let request_id = headers.get("x-amzn-requestid").map(str::to_string);
            let retry_after = headers
                .get("retry-after")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .and_then(crate::types::units::clamped_secs);
            let mut e = service(ctx.err(), Some(status), request_id, retry_after, site);
            if let Error::Service(s) = &mut e
                && let Some(kind) = overloaded_container(s.http_status, ctx.raw().body().bytes())
            {
                s.kind = kind;
            }
            attach(e, err)
        }
        _ => non_service(err, site),
    }
}

/// Keeps the SDK's error as the source of a service error, so its chain is not lost.
fn attach<E>(e: Error, cause: E) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    match e {
        Error::Service(mut s) => {
            s.source = Some(crate::types::Cause::new(cause));
            Error::Service(s)
        }
        other => other,
    }
}

/// SageMaker's 424 ModelError wraps the container's own status (`OriginalStatusCode` in the
/// body): a container that answered 429 or 503 is overloaded, not failing on the input, so the
/// call fails over. Other ModelErrors keep their kind.
fn overloaded_container(status: Option<u16>, body: Option<&[u8]>) -> Option<ErrorKind> {
    if status != Some(424) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(body?).ok()?;
    match v.get("OriginalStatusCode")?.as_u64()? {
        429 => Some(ErrorKind::Throttled),
        502 | 503 => Some(ErrorKind::Unavailable),
        504 => Some(ErrorKind::Timeout),
        _ => None,
    }
}

/// Maps an error from an event stream: an exception inside it, or a broken connection.
pub(crate) fn from_stream<'s, E, R>(err: SdkError<E, R>, site: impl Into<Site<'s>>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let site = site.into();
    match &err {
        SdkError::ServiceError(ctx) => {
            let e = service(ctx.err(), None, None, None, site);
            attach(e, err)
        }
        _ => non_service(err, site),
    }
}

fn service<E: ProvideErrorMetadata>(
    e: &E,
    status: Option<u16>,
    request_id: Option<String>,
    retry_after: Option<std::time::Duration>,
    site: Site<'_>,
) -> Error {
    let code = e.code().unwrap_or_default().to_string();
    Error::from(ServiceError {
        kind: kind_of_aws_code(&code, status.unwrap_or(0)),
        fact: fact_of_aws_code(&code),
        code,
        message: e.message().unwrap_or_default().to_string(),
        target: site.target.to_string(),
        region: site.region.to_string(),
        http_status: status,
        request_id,
        retry_after,
        source: None,
    })
}

/// The kind of an AWS error code from Bedrock Runtime or SageMaker Runtime, including the
/// exceptions that arrive inside event streams (their codes start lower-case); else of its
/// HTTP status.
pub(crate) fn kind_of_aws_code(code: &str, http_status: u16) -> ErrorKind {
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

/// What an AWS error code says beyond its kind: a region not enabled for the account answers
/// `UnrecognizedClientException`, and an endpoint that does not serve the region a request
/// was signed for answers `InvalidSignatureException`, while every other region may take the
/// same credentials.
pub(crate) fn fact_of_aws_code(code: &str) -> Option<FailureFact> {
    ["UnrecognizedClientException", "InvalidSignatureException"]
        .iter()
        .any(|c| c.eq_ignore_ascii_case(code))
        .then_some(FailureFact::RegionRefusedCredentials)
}

fn non_service<E, R>(err: SdkError<E, R>, site: Site<'_>) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    if let Some(why) = credentials_failure(&err) {
        // The SDK's credential chain gave nothing (an expired SSO session, no profile): no
        // target would take the call, so it fails at once.
        return Error::from(ServiceError {
            kind: ErrorKind::Authentication,
            code: "CredentialsNotLoaded".into(),
            message: format!("no AWS credentials to sign with: {why}"),
            target: site.target.to_string(),
            region: site.region.to_string(),
            http_status: None,
            request_id: None,
            retry_after: None,
            fact: None,
            source: Some(crate::types::Cause::new(err)),
        });
    }
    let kind = match &err {
        SdkError::TimeoutError(_) => ErrorKind::Timeout,
        SdkError::DispatchFailure(d) if d.is_timeout() => ErrorKind::Timeout,
        SdkError::ConstructionFailure(_) => {
            return Error::invalid(
                "request",
                format!(
                    "the AWS SDK could not build the request: {}",
                    DisplayErrorContext(&err)
                ),
            );
        }
        _ => ErrorKind::Transport,
    };
    Error::from(ServiceError {
        kind,
        code: String::new(),
        message: DisplayErrorContext(&err).to_string(),
        target: site.target.to_string(),
        region: site.region.to_string(),
        http_status: None,
        request_id: None,
        retry_after: None,
        fact: None,
        source: Some(crate::types::Cause::new(err)),
    })
}

/// The credential provider's error in `err`'s chain, if that is why the call failed.
fn credentials_failure(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        use aws_credential_types::provider::error::CredentialsError;
        if let Some(c) = e.downcast_ref::<CredentialsError>() {
            // Lasting: no credentials, or a chain misconfigured. A provider that timed out or
            // failed on the way (IMDS, STS) may answer the next time: a transport failure.
            return matches!(
                c,
                CredentialsError::CredentialsNotLoaded(_)
                    | CredentialsError::InvalidConfiguration(_)
            )
            .then(|| DisplayErrorContext(c).to_string());
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wire_error_of_the_reference_maps_to_its_kind() {
        let table = [
            ("ThrottlingException", 429, ErrorKind::Throttled, true),
            (
                "ModelNotReadyException",
                429,
                ErrorKind::ModelNotReady,
                true,
            ),
            (
                "ServiceUnavailableException",
                503,
                ErrorKind::Unavailable,
                true,
            ),
            ("InternalServerException", 500, ErrorKind::Internal, true),
            ("ModelTimeoutException", 408, ErrorKind::Timeout, true),
            ("ModelErrorException", 424, ErrorKind::ModelError, false),
            ("ValidationException", 400, ErrorKind::Validation, false),
            ("AccessDeniedException", 403, ErrorKind::AccessDenied, true),
            (
                "ExpiredTokenException",
                403,
                ErrorKind::Authentication,
                false,
            ),
            ("ResourceNotFoundException", 404, ErrorKind::NotFound, false),
            (
                "ServiceQuotaExceededException",
                400,
                ErrorKind::QuotaExceeded,
                false,
            ),
            ("ValidationError", 400, ErrorKind::Validation, false),
            ("ModelError", 424, ErrorKind::ModelError, false),
            ("InternalFailure", 500, ErrorKind::Internal, true),
            ("ServiceUnavailable", 503, ErrorKind::Unavailable, true),
            (
                "InternalDependencyException",
                530,
                ErrorKind::Internal,
                true,
            ),
            ("modelStreamErrorException", 0, ErrorKind::Internal, true),
            ("ModelStreamError", 0, ErrorKind::Internal, true),
            ("InternalStreamFailure", 0, ErrorKind::Internal, true),
            (
                "InvalidSignatureException",
                403,
                ErrorKind::Authentication,
                false,
            ),
            (
                "UnrecognizedClientException",
                403,
                ErrorKind::Authentication,
                false,
            ),
        ];
        for (code, status, kind, fails_over) in table {
            assert_eq!(kind_of_aws_code(code, status), kind, "{code}");
            assert_eq!(kind.fails_over(), fails_over, "{code}");
            let region_refusal =
                fact_of_aws_code(code) == Some(FailureFact::RegionRefusedCredentials);
            assert_eq!(
                region_refusal,
                code.ends_with("SignatureException") || code.starts_with("Unrecognized"),
                "{code}"
            );
        }
    }
}
