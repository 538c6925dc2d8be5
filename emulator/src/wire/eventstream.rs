//! `application/vnd.amazon.eventstream` frames, written with aws-smithy-eventstream.

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;

/// An `event` frame with a JSON or binary payload.
pub(crate) fn event(
    event_type: &'static str,
    content_type: &'static str,
    payload: impl Into<Bytes>,
) -> Bytes {
    encode(
        Message::new(payload.into())
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".into()),
            ))
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String(event_type.into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String(content_type.into()),
            )),
    )
}

/// A JSON `event` frame.
pub(crate) fn json_event(event_type: &'static str, payload: &serde_json::Value) -> Bytes {
    event(event_type, "application/json", payload.to_string())
}

/// An `exception` frame: an error that arrives inside the stream.
pub(crate) fn exception(exception_type: &str, payload: &serde_json::Value) -> Bytes {
    encode(
        Message::new(Bytes::from(payload.to_string()))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("exception".into()),
            ))
            .add_header(Header::new(
                ":exception-type",
                HeaderValue::String(exception_type.to_string().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            )),
    )
}

fn encode(message: Message) -> Bytes {
    let mut buf = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut buf)
        .expect("writing a frame to a Vec cannot fail");
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::read_message_from;

    #[test]
    fn frames_round_trip_with_crcs() {
        let frame = json_event("messageStart", &serde_json::json!({"role": "assistant"}));
        let msg = read_message_from(frame.clone()).unwrap();
        assert_eq!(msg.payload().as_ref(), br#"{"role":"assistant"}"#);
        let mut corrupt = frame.to_vec();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        assert!(read_message_from(Bytes::from(corrupt)).is_err());
    }
}
