//! How a call to an OpenAI-compatible endpoint proves who sends it: a Bedrock API key as a
//! bearer token, or a SigV4 signature (official `aws-sigv4`) with credentials from the SDK's
//! credential chain, cached until shortly before they expire.

use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use tokio::sync::Mutex;

use crate::types::{Error, ErrorKind, ServiceError};

/// Credentials this close to expiry are fetched again before a call is signed.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(300);

/// Signs requests for one endpoint.
pub(super) enum Auth {
    /// `Authorization: Bearer <key>` (a Bedrock API key, short- or long-term).
    Bearer(String),
    /// SigV4 under `service` (`bedrock` on bedrock-runtime, `bedrock-mantle` on mantle).
    SigV4 {
        service: &'static str,
        credentials: CachedCredentials,
    },
    /// No key and no credentials provider: every call fails, saying so.
    Unsigned,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Bearer(_) => f.write_str("Bearer(..)"),
            Auth::SigV4 { service, .. } => write!(f, "SigV4({service})"),
            Auth::Unsigned => f.write_str("Unsigned"),
        }
    }
}

impl Auth {
    /// Adds the authorization to `request`, whose body is `body`, for `region`.
    pub(super) async fn apply(
        &self,
        request: &mut http::Request<Vec<u8>>,
        region: &str,
        target: &str,
    ) -> Result<(), Error> {
        match self {
            Auth::Bearer(key) => {
                let value =
                    http::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                        Error::config(
                            "bedrock_api_key",
                            "the Bedrock API key has characters a header cannot carry",
                        )
                    })?;
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, value);
                Ok(())
            }
            Auth::Unsigned => Err(Error::from(
                ServiceError::new(
                    ErrorKind::AccessDenied,
                    "no Bedrock API key and no AWS credentials provider to sign with",
                    target,
                    region,
                )
                .with_code("CredentialsNotLoaded"),
            )),
            Auth::SigV4 {
                service,
                credentials,
            } => {
                let creds = credentials.get(region, target).await?;
                sign_v4(request, &creds, service, region).map_err(|e| {
                    Error::invalid(
                        "request",
                        format!("the request could not be signed with SigV4: {e}"),
                    )
                })
            }
        }
    }
}

fn sign_v4(
    request: &mut http::Request<Vec<u8>>,
    creds: &Credentials,
    service: &str,
    region: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let identity = creds.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()?
        .into();
    let uri = request.uri().to_string();
    let headers = request
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
    let signable = SignableRequest::new(
        request.method().as_str(),
        &uri,
        headers,
        SignableBody::Bytes(request.body()),
    )?;
    let (instructions, _) = sign(signable, &params)?.into_parts();
    instructions.apply_to_request_http1x(request);
    Ok(())
}

/// Credentials from a provider, kept until shortly before they expire; one refresh at a time.
pub(super) struct CachedCredentials {
    provider: SharedCredentialsProvider,
    held: Mutex<Option<Credentials>>,
}

impl CachedCredentials {
    pub(super) fn new(provider: SharedCredentialsProvider) -> Self {
        Self {
            provider,
            held: Mutex::new(None),
        }
    }

    async fn get(&self, region: &str, target: &str) -> Result<Credentials, Error> {
        let mut held = self.held.lock().await;
        let fresh = |c: &Credentials| {
            c.expiry().is_none_or(|at| {
                at.duration_since(SystemTime::now())
                    .is_ok_and(|left| left > REFRESH_BEFORE_EXPIRY)
            })
        };
        if let Some(c) = held.as_ref().filter(|c| fresh(c)) {
            return Ok(c.clone());
        }
        let got = self.provider.provide_credentials().await.map_err(|e| {
            Error::from(
                ServiceError::new(
                    ErrorKind::AccessDenied,
                    format!("no AWS credentials to sign with: {e}"),
                    target,
                    region,
                )
                .with_code("CredentialsNotLoaded"),
            )
        })?;
        *held = Some(got.clone());
        Ok(got)
    }
}

/// A short-term Bedrock API key made from `credentials`, as AWS's token generators make one:
/// `POST https://bedrock.amazonaws.com/?Action=CallWithBearerToken` presigned with SigV4 in
/// the query (service `bedrock`, `region`, valid for `expires_in`, at most 12 hours), without
/// its scheme, with `&Version=1`, base64-encoded after `bedrock-api-key-`. It is valid in
/// `region` only and carries the credentials' permissions; no call is made to make it.
///
/// ```
/// use std::time::Duration;
/// use aws_credential_types::Credentials;
/// let creds = Credentials::new("AKIDEXAMPLE", "secret", None, None, "example");
/// let key = laneway::backend::openai::short_term_api_key(&creds, "us-east-1", Duration::from_secs(3600)).unwrap();
/// assert!(key.starts_with("bedrock-api-key-"));
/// ```
pub fn short_term_api_key(
    credentials: &Credentials,
    region: &str,
    expires_in: Duration,
) -> Result<String, Error> {
    use base64::Engine as _;
    const MOST: Duration = Duration::from_secs(12 * 3600);
    let fail = |e: &dyn std::fmt::Display| {
        Error::invalid(
            "bedrock_api_key",
            format!("the key could not be presigned: {e}"),
        )
    };
    let identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    settings.signature_location = aws_sigv4::http_request::SignatureLocation::QueryParams;
    settings.expires_in = Some(expires_in.min(MOST));
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("bedrock")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .map_err(|e| fail(&e))?
        .into();
    let url = "https://bedrock.amazonaws.com/?Action=CallWithBearerToken";
    let signable = SignableRequest::new(
        "POST",
        url,
        [("host", "bedrock.amazonaws.com")].into_iter(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| fail(&e))?;
    let (instructions, _) = sign(signable, &params).map_err(|e| fail(&e))?.into_parts();
    let mut request = http::Request::builder()
        .method("POST")
        .uri(url)
        .body(())
        .map_err(|e| fail(&e))?;
    instructions.apply_to_request_http1x(&mut request);
    let presigned = request.uri().to_string();
    let bare = presigned.strip_prefix("https://").unwrap_or(&presigned);
    Ok(format!(
        "bedrock-api-key-{}",
        base64::engine::general_purpose::STANDARD.encode(format!("{bare}&Version=1"))
    ))
}
