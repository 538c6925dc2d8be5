//! Server-sent events: bytes in, the `data` of each complete event out (the WHATWG framing:
//! `data:` lines joined by newlines, an event ended by a blank line, comments and other fields
//! ignored). The event type is read from the JSON, which both OpenAI-compatible APIs carry.

/// Collects bytes and hands out complete events' data.
#[derive(Debug, Default)]
pub(super) struct SseDecoder {
    pending: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// Adds bytes; returns the data of the events they complete.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let line = &self.pending[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_data {
                    events.push(std::mem::take(&mut self.data));
                    self.has_data = false;
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            start = end + 1;
        }
        self.pending.drain(..start);
        events
    }

    /// The last event, when the stream ended without the blank line after it.
    pub(super) fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        if let Some(value) = rest.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push('\n');
            }
            self.data
                .push_str(String::from_utf8_lossy(value).trim_end());
            self.has_data = true;
        }
        self.has_data.then(|| {
            self.has_data = false;
            std::mem::take(&mut self.data)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn events_end_at_blank_lines_and_other_fields_are_ignored() {
        let mut d = SseDecoder::default();
        let got = d.push(b"event: response.created\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]");
        assert_eq!(got, vec!["{\"a\":1}", "x\ny"]);
        assert_eq!(d.finish().as_deref(), Some("[DONE]"));
        assert_eq!(d.finish(), None);
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(
            events in proptest::collection::vec("[a-z{}\":, é]{1,30}", 1..8),
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let text: String = events.iter().map(|e| format!("event: t\ndata: {e}\n\n")).collect();
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut d = SseDecoder::default();
            let mut got = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([bytes.len()]) {
                got.extend(d.push(&bytes[last..p]));
                last = p;
            }
            prop_assert_eq!(got, events);
        }
    }
}
