//! AWS event-stream frames (`application/vnd.amazon.eventstream`), as bedrock-runtime writes a
//! ConverseStream or InvokeModelWithResponseStream answer: an event per frame, with its type
//! and JSON payload in headers and body, CRCs by `aws-smithy-eventstream`.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

/// The content type of an event-stream answer.
pub const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

fn frame(headers: [(&'static str, String); 3], payload: Vec<u8>) -> Vec<u8> {
    let mut message = Message::new(payload);
    for (name, value) in headers {
        message = message.add_header(Header::new(name, HeaderValue::String(value.into())));
    }
    let mut out = Vec::new();
    // Writing fails only past the format's limits (16 MiB frames, 128 KiB of headers), which
    // one event's text does not reach: said as the service's own failure, never dropped.
    if let Err(e) = write_message_to(&message, &mut out) {
        out.clear();
        let fallback = Message::new(
            serde_json::json!({ "message": format!("an event could not be written: {e}") })
                .to_string()
                .into_bytes(),
        )
        .add_header(Header::new(
            ":exception-type",
            HeaderValue::String("internalServerException".into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("exception".into()),
        ));
        let _ = write_message_to(&fallback, &mut out);
    }
    out
}

/// One event: `event_type` (`contentBlockDelta`, ...) with its JSON payload.
pub fn event(event_type: &str, payload: &serde_json::Value) -> Vec<u8> {
    frame(
        [
            (":event-type", event_type.to_owned()),
            (":content-type", "application/json".to_owned()),
            (":message-type", "event".to_owned()),
        ],
        payload.to_string().into_bytes(),
    )
}

/// An exception ending the stream: `exception_type` as the service names it in a stream
/// (`throttlingException`, `modelStreamErrorException`, ...) and its message.
pub fn exception(exception_type: &str, message: &str) -> Vec<u8> {
    frame(
        [
            (":exception-type", exception_type.to_owned()),
            (":content-type", "application/json".to_owned()),
            (":message-type", "exception".to_owned()),
        ],
        serde_json::json!({ "message": message })
            .to_string()
            .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::read_message_from;

    fn header<'m>(m: &'m Message, name: &str) -> &'m str {
        m.headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| h.value().as_string().ok())
            .map(|s| s.as_str())
            .unwrap_or_default()
    }

    #[test]
    fn frames_read_back_with_their_type_and_payload() {
        let payload = serde_json::json!({ "delta": { "text": "héllo" }, "contentBlockIndex": 0 });
        let bytes = event("contentBlockDelta", &payload);
        let m = read_message_from(bytes.as_slice()).unwrap();
        assert_eq!(header(&m, ":event-type"), "contentBlockDelta");
        assert_eq!(header(&m, ":message-type"), "event");
        let back: serde_json::Value = serde_json::from_slice(m.payload()).unwrap();
        assert_eq!(back, payload);
        let e =
            read_message_from(exception("throttlingException", "slow down").as_slice()).unwrap();
        assert_eq!(header(&e, ":exception-type"), "throttlingException");
        assert_eq!(header(&e, ":message-type"), "exception");
    }
}
