//! How a call to an OpenAI-compatible endpoint proves who sends it: a Bedrock API key as a
//! bearer token, or a SigV4 signature (official `aws-sigv4`) with credentials from the SDK's
//! credential chain, cached until shortly before they expire.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use tokio::sync::Mutex;

use crate::types::{Error, ErrorKind, ServiceError};

/// Credentials this close to expiry are fetched again before a call is signed; if that fails,
/// the held ones sign while they last. (IMDS and ECS offer new credentials about five minutes
/// before the old expire.)
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(120);

/// How a backend proves who sends its calls.
pub(super) struct Auth {
    /// SigV4 under this signing name (`bedrock` on bedrock-runtime, `bedrock-mantle` on mantle).
    service: &'static str,
    /// Sign the body's SHA-256 as `X-Amz-Content-Sha256` (bedrock-mantle wants it).
    content_sha256: bool,
    key: Option<ApiKey>,
    credentials: Option<CachedCredentials>,
}

/// Where a Bedrock API key comes from.
enum ApiKey {
    /// Given to the router.
    Given(KeyScope),
    /// `AWS_BEARER_TOKEN_BEDROCK`, read at each call (a process may rotate it).
    FromEnvironment,
}

/// A Bedrock API key and, for a short-term key, the region and time it is valid for.
struct KeyScope {
    key: String,
    region: Option<String>,
    expires: Option<SystemTime>,
}

impl KeyScope {
    /// Reads a short-term key's presigned URL (its credential scope and expiry); a long-term
    /// key says neither.
    fn of(key: String) -> Self {
        use base64::Engine as _;
        let url = key
            .strip_prefix("bedrock-api-key-")
            .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default();
        let param = |name: &str| {
            url.split(['?', '&'])
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .map(|v| v.replace("%2F", "/").replace("%2f", "/"))
        };
        let region =
            param("X-Amz-Credential").and_then(|c| c.split('/').nth(2).map(str::to_string));
        let expires = (|| {
            let date = param("X-Amz-Date")?;
            let seconds: u64 = param("X-Amz-Expires")?.parse().ok()?;
            Some(signed_at(&date)? + Duration::from_secs(seconds))
        })();
        Self {
            key,
            region,
            expires,
        }
    }

    /// Whether it authenticates a call in `region` now.
    fn serves(&self, region: &str) -> bool {
        self.region.as_deref().is_none_or(|r| r == region)
            && self.expires.is_none_or(|at| at > SystemTime::now())
    }
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn signed_at(date: &str) -> Option<SystemTime> {
    let digits = |r: std::ops::Range<usize>| date.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (h, mi, s) = (digits(9..11)?, digits(11..13)?, digits(13..15)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + mi * 60 + s).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = match &self.key {
            Some(ApiKey::Given(_)) => "given",
            Some(ApiKey::FromEnvironment) => "AWS_BEARER_TOKEN_BEDROCK",
            None => "none",
        };
        f.debug_struct("Auth")
            .field("service", &self.service)
            .field("api_key", &key)
            .field("sigv4", &self.credentials.is_some())
            .finish()
    }
}

impl Auth {
    /// Authentication for `service`: a Bedrock API key (given, else the environment's when set)
    /// for the calls it is valid for, SigV4 with the credentials of `provider` for the others.
    pub(super) fn new(
        service: &'static str,
        api_key: Option<String>,
        provider: Option<SharedCredentialsProvider>,
    ) -> Self {
        let key = match api_key {
            Some(k) => Some(ApiKey::Given(KeyScope::of(k))),
            None if std::env::var_os("AWS_BEARER_TOKEN_BEDROCK").is_some() => {
                Some(ApiKey::FromEnvironment)
            }
            None => None,
        };
        Self {
            service,
            content_sha256: service == "bedrock-mantle",
            key,
            credentials: provider.map(CachedCredentials::new),
        }
    }

    /// The bearer key for a call in `region`, if one serves it.
    fn key_for(&self, region: &str) -> Option<String> {
        match self.key.as_ref()? {
            ApiKey::Given(k) => k.serves(region).then(|| k.key.clone()),
            ApiKey::FromEnvironment => {
                let k = KeyScope::of(std::env::var("AWS_BEARER_TOKEN_BEDROCK").ok()?);
                (!k.key.is_empty() && k.serves(region)).then_some(k.key)
            }
        }
    }

    /// Adds the authorization to `request` for a call to `target` in `region`: the API key
    /// where it is valid, else a SigV4 signature.
    pub(super) async fn apply(
        &self,
        request: &mut http::Request<Vec<u8>>,
        region: &str,
        target: &str,
    ) -> Result<(), Error> {
        if let Some(key) = self.key_for(region) {
            let value = http::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                Error::config(
                    "bedrock_api_key",
                    "the Bedrock API key has characters a header cannot carry",
                )
            })?;
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, value);
            return Ok(());
        }
        let Some(credentials) = &self.credentials else {
            let why = match &self.key {
                Some(_) => {
                    "the Bedrock API key is not valid for this region (or has expired), and there are no AWS credentials to sign with"
                }
                None => "no Bedrock API key and no AWS credentials provider to sign with",
            };
            return Err(Error::from(
                ServiceError::new(ErrorKind::Authentication, why, target, region)
                    .with_code("CredentialsNotLoaded"),
            ));
        };
        let creds = credentials.get(region, target).await?;
        sign_v4(request, &creds, self.service, region, self.content_sha256).map_err(|e| {
            Error::invalid(
                "request",
                format!("the request could not be signed with SigV4: {e}"),
            )
        })
    }
}

fn sign_v4(
    request: &mut http::Request<Vec<u8>>,
    creds: &Credentials,
    service: &str,
    region: &str,
    content_sha256: bool,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let identity = creds.clone().into();
    let mut settings = SigningSettings::default();
    if content_sha256 {
        settings.payload_checksum_kind = aws_sigv4::http_request::PayloadChecksumKind::XAmzSha256;
    }
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(settings)
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
        let left = |c: &Credentials| {
            c.expiry().map(|at| {
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO)
            })
        };
        if let Some(c) = held.as_ref()
            && left(c).is_none_or(|l| l > REFRESH_BEFORE_EXPIRY)
        {
            return Ok(c.clone());
        }
        match self.provider.provide_credentials().await {
            Ok(got) => {
                *held = Some(got.clone());
                Ok(got)
            }
            // The held ones still sign until they expire.
            Err(_)
                if held
                    .as_ref()
                    .is_some_and(|c| left(c).is_some_and(|l| l > Duration::ZERO)) =>
            {
                Ok(held.clone().expect("checked"))
            }
            Err(e) => Err(Error::from(
                ServiceError::new(
                    ErrorKind::Authentication,
                    format!("no AWS credentials to sign with: {e}"),
                    target,
                    region,
                )
                .with_code("CredentialsNotLoaded"),
            )),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_term_key_serves_its_own_region_until_it_expires() {
        let creds = Credentials::new("AKID", "secret", None, None, "test");
        let key = short_term_api_key(&creds, "eu-west-1", Duration::from_secs(600)).unwrap();
        let scope = KeyScope::of(key);
        assert_eq!(scope.region.as_deref(), Some("eu-west-1"));
        let left = scope
            .expires
            .unwrap()
            .duration_since(SystemTime::now())
            .unwrap();
        assert!(
            left > Duration::from_secs(590) && left <= Duration::from_secs(600),
            "{left:?}"
        );
        assert!(scope.serves("eu-west-1") && !scope.serves("us-east-1"));
        // A long-term key says neither: it is sent everywhere.
        let long = KeyScope::of("ABSKexamplelongtermkey".into());
        assert!(long.serves("us-east-1") && long.serves("eu-west-1"));
        assert_eq!(
            signed_at("19700102T000001Z"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(86_401))
        );
    }
}
