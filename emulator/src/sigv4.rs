//! SigV4 verification: the region a request was signed for, and whether the signature is right.
//!
//! The canonical request is rebuilt from what the client says it signed (`SignedHeaders`), so any
//! SDK's choice of signed headers verifies; the key derivation and HMAC come from `aws-sigv4`.

use std::time::SystemTime;

use axum::http::{HeaderMap, Method, Uri};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use sha2::{Digest, Sha256};

use crate::scenario::Credential;

/// Everything but the unreserved characters of RFC 3986.
const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// The same, keeping `/` for paths.
const PATH: &AsciiSet = &STRICT.remove(b'/');

/// Who signed a request, and for which region and service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedScope {
    pub access_key_id: String,
    pub region: String,
    pub service: String,
}

/// Why a signature was refused: the AWS error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthError {
    pub code: &'static str,
    pub message: String,
}

fn refuse(code: &'static str, message: impl Into<String>) -> AuthError {
    AuthError {
        code,
        message: message.into(),
    }
}

const MISMATCH: &str = "The request signature we calculated does not match the signature you \
provided. Check your AWS Secret Access Key and signing method. Consult the service documentation \
for details.";

/// Verifies a SigV4-signed request against the accepted credentials.
pub(crate) fn verify(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    credentials: &[Credential],
) -> Result<SignedScope, AuthError> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            refuse(
                "MissingAuthenticationTokenException",
                "Missing Authentication Token",
            )
        })?;
    let parsed = parse_authorization(auth)?;
    let secret = credentials
        .iter()
        .find(|c| c.access_key_id == parsed.access_key_id)
        .map(|c| c.secret_access_key.as_str())
        .ok_or_else(|| {
            refuse(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        })?;
    let amz_date = header_str(headers, "x-amz-date")
        .ok_or_else(|| refuse("IncompleteSignatureException", "Missing X-Amz-Date header"))?;
    let time = parse_amz_date(amz_date).ok_or_else(|| {
        refuse(
            "IncompleteSignatureException",
            "Malformed X-Amz-Date header",
        )
    })?;
    if !amz_date.starts_with(&parsed.date) {
        return Err(refuse(
            "InvalidSignatureException",
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP",
        ));
    }

    let canonical = canonical_request(
        method,
        uri,
        headers,
        body,
        &parsed.signed_headers,
        parsed.service == "s3",
    )?;
    let scope = format!(
        "{}/{}/{}/aws4_request",
        parsed.date, parsed.region, parsed.service
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let key =
        aws_sigv4::sign::v4::generate_signing_key(secret, time, &parsed.region, &parsed.service);
    let expected = aws_sigv4::sign::v4::calculate_signature(key, string_to_sign.as_bytes());
    if !constant_time_eq(expected.as_bytes(), parsed.signature.as_bytes()) {
        return Err(refuse("InvalidSignatureException", MISMATCH));
    }
    Ok(SignedScope {
        access_key_id: parsed.access_key_id,
        region: parsed.region,
        service: parsed.service,
    })
}

struct ParsedAuthorization {
    access_key_id: String,
    date: String,
    region: String,
    service: String,
    signed_headers: Vec<String>,
    signature: String,
}

fn parse_authorization(value: &str) -> Result<ParsedAuthorization, AuthError> {
    let malformed = || {
        refuse(
            "IncompleteSignatureException",
            format!(
                "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization={value}"
            ),
        )
    };
    let rest = value
        .strip_prefix("AWS4-HMAC-SHA256")
        .ok_or_else(malformed)?
        .trim();
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or_else(malformed)?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => {}
        }
    }
    let (credential, signed, signature) = (
        credential.ok_or_else(malformed)?,
        signed.ok_or_else(malformed)?,
        signature.ok_or_else(malformed)?,
    );
    let fields: Vec<&str> = credential.split('/').collect();
    let [key, date, region, service, terminator] = fields[..] else {
        return Err(malformed());
    };
    if terminator != "aws4_request" {
        return Err(malformed());
    }
    Ok(ParsedAuthorization {
        access_key_id: key.into(),
        date: date.into(),
        region: region.into(),
        service: service.into(),
        signed_headers: signed.split(';').map(str::to_string).collect(),
        signature: signature.into(),
    })
}

fn canonical_request(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    signed_headers: &[String],
    s3: bool,
) -> Result<String, AuthError> {
    // Every service but S3 encodes the already-encoded path once more.
    let path = if s3 {
        uri.path().to_string()
    } else {
        utf8_percent_encode(uri.path(), PATH).to_string()
    };
    let mut query: Vec<(String, String)> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (reencode(k), reencode(v))
        })
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut canonical_headers = String::new();
    for name in signed_headers {
        let values: Vec<String> = headers
            .get_all(name.as_str())
            .iter()
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        // Over HTTP/2 the host is the `:authority` pseudo-header, which hyper keeps in the URI
        // (the JavaScript SDK speaks HTTP/2 to Bedrock Runtime and signs it by that name).
        let values = match (values.is_empty(), uri.authority()) {
            (true, Some(authority)) if name == ":authority" || name == "host" => {
                vec![authority.as_str().to_string()]
            }
            _ => values,
        };
        if values.is_empty() {
            return Err(refuse(
                "InvalidSignatureException",
                format!("Header {name} is listed in SignedHeaders but missing from the request"),
            ));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let payload_hash = match header_str(headers, "x-amz-content-sha256") {
        Some(h) => h.to_string(),
        None => hex::encode(Sha256::digest(body)),
    };
    Ok(format!(
        "{method}\n{path}\n{query}\n{canonical_headers}\n{}\n{payload_hash}",
        signed_headers.join(";")
    ))
}

fn reencode(s: &str) -> String {
    let decoded = percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned();
    utf8_percent_encode(&decoded, STRICT).to_string()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let t = time::PrimitiveDateTime::parse(s, format).ok()?.assume_utc();
    Some(t.into())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    // The "get-vanilla" case of the AWS SigV4 test suite (service "service", region us-east-1).
    #[test]
    fn aws_test_suite_get_vanilla() {
        let creds = vec![Credential {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        }];
        let mut headers = HeaderMap::new();
        headers.insert("host", "example.amazonaws.com".parse().unwrap());
        headers.insert("x-amz-date", "20150830T123600Z".parse().unwrap());
        headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
                .parse()
                .unwrap(),
        );
        let uri: Uri = "/".parse().unwrap();
        let scope = verify(&Method::GET, &uri, &headers, b"", &creds).unwrap();
        assert_eq!(scope.region, "us-east-1");
        assert_eq!(scope.service, "service");

        headers.insert("x-amz-date", "20150830T123601Z".parse().unwrap());
        let err = verify(&Method::GET, &uri, &headers, b"", &creds).unwrap_err();
        assert_eq!(err.code, "InvalidSignatureException");
    }

    #[test]
    fn missing_and_unknown_keys_are_refused_with_aws_codes() {
        let headers = HeaderMap::new();
        let uri: Uri = "/".parse().unwrap();
        let err = verify(&Method::GET, &uri, &headers, b"", &[]).unwrap_err();
        assert_eq!(err.code, "MissingAuthenticationTokenException");

        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=NOPE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00"
                .parse()
                .unwrap(),
        );
        let err = verify(&Method::GET, &uri, &headers, b"", &[]).unwrap_err();
        assert_eq!(err.code, "UnrecognizedClientException");
    }

    #[test]
    fn paths_are_encoded_twice() {
        let uri: Uri = "/model/amazon.nova-lite-v1%3A0/converse".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("host", "h".parse().unwrap());
        let c =
            canonical_request(&Method::POST, &uri, &headers, b"", &["host".into()], false).unwrap();
        assert!(
            c.contains("/model/amazon.nova-lite-v1%253A0/converse"),
            "{c}"
        );
    }
}
