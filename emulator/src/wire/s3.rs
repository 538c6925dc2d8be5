//! The S3 subset batch inference needs: PutObject, GetObject and ListObjectsV2, path-style
//! (`/{bucket}/{key}`), objects in memory. Requests are SigV4-verified for service `s3`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{authenticate, request_id};
use crate::engine::{ApiError, Engine};

/// Objects by bucket and key.
#[derive(Debug, Default)]
pub(crate) struct Objects {
    buckets: Mutex<BTreeMap<String, BTreeMap<String, Bytes>>>,
}

impl Objects {
    pub(crate) fn put(&self, bucket: &str, key: &str, body: Bytes) {
        self.buckets
            .lock()
            .expect("objects lock")
            .entry(bucket.to_string())
            .or_default()
            .insert(key.to_string(), body);
    }

    pub(crate) fn get(&self, bucket: &str, key: &str) -> Option<Bytes> {
        self.buckets
            .lock()
            .expect("objects lock")
            .get(bucket)?
            .get(key)
            .cloned()
    }

    /// Keys under `prefix`, in order.
    pub(crate) fn list(&self, bucket: &str, prefix: &str) -> Vec<(String, usize)> {
        self.buckets
            .lock()
            .expect("objects lock")
            .get(bucket)
            .map(|b| {
                b.range(prefix.to_string()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(k, v)| (k.clone(), v.len()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Splits `s3://bucket/key` into its parts.
pub(crate) fn parse_s3_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_string(), key.to_string()))
}

pub(crate) fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route("/{bucket}", get(list_objects))
        .route("/{bucket}/", get(list_objects))
        .route("/{bucket}/{*key}", get(get_object).put(put_object))
}

fn s3_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message></Error>",
        xml_escape(message)
    );
    let mut r = (status, body).into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/xml"));
    r.headers_mut().insert("x-amz-request-id", request_id());
    r
}

fn api_error(e: ApiError) -> Response {
    s3_error(
        StatusCode::from_u16(e.status).unwrap_or(StatusCode::FORBIDDEN),
        if e.status == 403 {
            "SignatureDoesNotMatch"
        } else {
            &e.code
        },
        &e.message,
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn decoded_key(key: &str) -> String {
    percent_encoding::percent_decode_str(key)
        .decode_utf8_lossy()
        .into_owned()
}

/// The payload of an `aws-chunked` body: `<hex size>[;ext]\r\n<data>\r\n` ... `0\r\n<trailers>`.
fn decode_aws_chunked(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let header = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(header.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

async fn put_object(
    State(engine): State<Arc<Engine>>,
    Path((bucket, key)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(e) = authenticate(&engine, "s3", &method, &uri, &headers, &body) {
        return api_error(e);
    }
    let chunked = headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("aws-chunked"));
    let data = if chunked {
        match decode_aws_chunked(&body) {
            Some(d) => Bytes::from(d),
            None => {
                return s3_error(
                    StatusCode::BAD_REQUEST,
                    "IncompleteBody",
                    "malformed aws-chunked body",
                );
            }
        }
    } else {
        body
    };
    let etag = format!("\"{:016x}\"", crate::text::digest64(&[&data]));
    engine.objects.put(&bucket, &decoded_key(&key), data);
    let mut r = StatusCode::OK.into_response();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        r.headers_mut().insert("etag", v);
    }
    r.headers_mut().insert("x-amz-request-id", request_id());
    r
}

async fn get_object(
    State(engine): State<Arc<Engine>>,
    Path((bucket, key)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = authenticate(&engine, "s3", &method, &uri, &headers, &Bytes::new()) {
        return api_error(e);
    }
    match engine.objects.get(&bucket, &decoded_key(&key)) {
        Some(data) => {
            let mut r = (StatusCode::OK, data).into_response();
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("application/octet-stream"),
            );
            r.headers_mut().insert("x-amz-request-id", request_id());
            r
        }
        None => s3_error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "The specified key does not exist.",
        ),
    }
}

async fn list_objects(
    State(engine): State<Arc<Engine>>,
    Path(bucket): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = authenticate(&engine, "s3", &method, &uri, &headers, &Bytes::new()) {
        return api_error(e);
    }
    if query.get("list-type").map(String::as_str) != Some("2") {
        return s3_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "only ListObjectsV2 (list-type=2) is emulated",
        );
    }
    let prefix = query.get("prefix").cloned().unwrap_or_default();
    let max_keys: usize = query
        .get("max-keys")
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000);
    let after = query
        .get("continuation-token")
        .or(query.get("start-after"))
        .cloned();
    let all: Vec<(String, usize)> = engine
        .objects
        .list(&bucket, &prefix)
        .into_iter()
        .filter(|(k, _)| after.as_ref().is_none_or(|a| k > a))
        .collect();
    let page = &all[..all.len().min(max_keys)];
    let truncated = all.len() > page.len();
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    xml += &format!(
        "<Name>{}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount><MaxKeys>{max_keys}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        xml_escape(&bucket),
        xml_escape(&prefix),
        page.len()
    );
    for (k, size) in page {
        xml += &format!(
            "<Contents><Key>{}</Key><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            xml_escape(k)
        );
    }
    if truncated && let Some((last, _)) = page.last() {
        xml += &format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            xml_escape(last)
        );
    }
    xml += "</ListBucketResult>";
    let mut r = (StatusCode::OK, xml).into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/xml"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_chunked_bodies_are_decoded() {
        let body = b"5;chunk-signature=abc\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n";
        assert_eq!(decode_aws_chunked(body).unwrap(), b"hello world");
        assert!(decode_aws_chunked(b"zz\r\nhello").is_none());
    }

    #[test]
    fn s3_uris_split_into_bucket_and_key() {
        assert_eq!(
            parse_s3_uri("s3://b/in/x.jsonl"),
            Some(("b".into(), "in/x.jsonl".into()))
        );
        assert_eq!(parse_s3_uri("s3://b"), Some(("b".into(), String::new())));
        assert_eq!(parse_s3_uri("http://b/x"), None);
    }
}
