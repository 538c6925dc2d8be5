//! Faults on the wire: what a stalled, resetting or garbling service does to an answer the
//! handler has already built. A handler marks its response with the answer's fault
//! ([`with_wire_fault`]); the middleware [`misbehave`] acts on the mark, so every operation
//! misbehaves the same way.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

use crate::engine::Service;
use crate::faults::{Fault, FaultKind};

/// How a streamed body is framed, which says what a malformed event looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// AWS event-stream frames of Bedrock's events.
    Bedrock,
    /// AWS event-stream frames of SageMaker's payload parts.
    Sagemaker,
    /// Server-sent events (the OpenAI-compatible APIs).
    Sse,
}

impl From<Service> for Framing {
    fn from(s: Service) -> Self {
        match s {
            Service::Bedrock => Framing::Bedrock,
            Service::Sagemaker => Framing::Sagemaker,
        }
    }
}

/// A response's wire fault, and where in its body it strikes.
#[derive(Debug, Clone)]
struct WireMark {
    kind: FaultKind,
    /// For a trickle: the wait between two bytes.
    byte_every: Duration,
    framing: Framing,
    /// For a streamed body: the parts (event frames) passed through before the fault.
    /// `None`: a whole (non-streamed) body.
    parts_before: Option<usize>,
}

/// Marks `resp` with an answer's wire fault, if it has one. `parts_before` turns the fault's
/// `after_tokens` into the body parts (event frames) sent before it strikes; `None` for a
/// whole, non-streamed body.
pub(crate) fn with_wire_fault(
    mut resp: Response,
    fault: Option<&Fault>,
    framing: impl Into<Framing>,
    parts_before: Option<fn(u32) -> usize>,
) -> Response {
    if let Some(f) = fault {
        resp.extensions_mut().insert(WireMark {
            kind: f.kind,
            byte_every: Duration::from_millis(f.delay_ms.unwrap_or(2_000)),
            framing: framing.into(),
            parts_before: parts_before.map(|p| p(f.after_tokens.unwrap_or(0))),
        });
    }
    resp
}

/// The middleware: passes unmarked responses through; breaks marked ones as their fault says.
pub(crate) async fn misbehave(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let Some(mark) = resp.extensions().get::<WireMark>().cloned() else {
        return resp;
    };
    if mark.kind == FaultKind::Stall {
        // Accepted, never answered: the client's connection stays open and silent until it
        // gives up. The answer (and its capacity) is released now.
        drop(resp);
        return std::future::pending().await;
    }
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove("content-length");
    let body = match mark.parts_before {
        Some(n) => streamed(body, n, &mark),
        None => {
            let whole = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            if mark.kind == FaultKind::Truncate {
                // The full length is declared and half is sent: the connection ends early.
                parts
                    .headers
                    .insert("content-length", HeaderValue::from(whole.len()));
            }
            whole_body(whole, &mark)
        }
    };
    Response::from_parts(parts, body)
}

fn reset() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "emulated connection reset",
    )
}

/// Never yields again: a peer that went quiet without closing.
async fn silence() {
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

/// `rest` one byte every `every`, as a congested link or a wedged proxy delivers it.
fn trickle(
    rest: Bytes,
    every: Duration,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    async_stream::stream! {
        for i in 0..rest.len() {
            tokio::time::sleep(every).await;
            yield Ok(rest.slice(i..i + 1));
        }
    }
}

fn whole_body(whole: Bytes, mark: &WireMark) -> Body {
    let every = mark.byte_every;
    let kind = mark.kind;
    let stream = async_stream::stream! {
        match kind {
            FaultKind::Trickle => {
                let mut bytes = std::pin::pin!(trickle(whole, every));
                while let Some(b) = bytes.next().await {
                    yield b;
                }
            }
            FaultKind::StallAfterHeaders => silence().await,
            FaultKind::StallMidStream => {
                yield Ok(whole.slice(..whole.len() / 2));
                silence().await;
            }
            FaultKind::Reset => yield Err(reset()),
            FaultKind::Truncate => yield Ok(whole.slice(..whole.len() / 2)),
            FaultKind::MalformedJson | FaultKind::BadFrame => {
                // JSON cut inside a string: it does not parse.
                let cut = whole.iter().rposition(|b| *b == b'"').unwrap_or(whole.len() / 2);
                yield Ok::<Bytes, std::io::Error>(whole.slice(..cut + 1));
            }
            _ => yield Ok(whole),
        }
    };
    Body::from_stream(stream)
}

fn streamed(body: Body, parts_before: usize, mark: &WireMark) -> Body {
    let (kind, framing, every) = (mark.kind, mark.framing, mark.byte_every);
    let mut data = body.into_data_stream();
    let stream = async_stream::stream! {
        for _ in 0..parts_before {
            match data.next().await {
                Some(Ok(part)) => yield Ok(part),
                Some(Err(e)) => { yield Err(std::io::Error::other(e)); return; }
                None => return,
            }
        }
        match kind {
            FaultKind::StallAfterHeaders | FaultKind::StallMidStream => {
                // `data` stays alive: the answer keeps its capacity, as a hung server would.
                silence().await;
            }
            FaultKind::Reset => yield Err(reset()),
            FaultKind::Trickle => {
                while let Some(Ok(part)) = data.next().await {
                    let mut bytes = std::pin::pin!(trickle(part, every));
                    while let Some(b) = bytes.next().await {
                        yield b;
                    }
                }
            }
            FaultKind::Truncate => {
                if let Some(Ok(part)) = data.next().await {
                    yield Ok(part.slice(..part.len() / 2));
                }
            }
            // Server-sent events have no checksum: a bad frame is a malformed event.
            FaultKind::BadFrame | FaultKind::MalformedJson if framing == Framing::Sse => {
                yield Ok(malformed_event(framing));
            }
            FaultKind::BadFrame => {
                if let Some(Ok(part)) = data.next().await {
                    let mut frame = part.to_vec();
                    if let Some(crc) = frame.last_mut() {
                        *crc ^= 0xff;
                    }
                    yield Ok(Bytes::from(frame));
                }
            }
            FaultKind::MalformedJson => {
                yield Ok(malformed_event(framing));
            }
            _ => {
                while let Some(part) = data.next().await {
                    yield part.map_err(std::io::Error::other);
                }
            }
        }
    };
    Body::from_stream(stream)
}

/// A well-framed event whose JSON payload does not parse.
fn malformed_event(framing: Framing) -> Bytes {
    match framing {
        Framing::Sse => Bytes::from_static(
            b"event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"delta\": \n\n",
        ),
        Framing::Bedrock => super::eventstream::event(
            "contentBlockDelta",
            "application/json",
            Bytes::from_static(br#"{"contentBlockIndex":0,"delta":{"text":"#),
        ),
        Framing::Sagemaker => super::eventstream::event(
            "PayloadPart",
            "application/octet-stream",
            Bytes::from_static(b"data: {\"token\": {\"text\": \n\n"),
        ),
    }
}
