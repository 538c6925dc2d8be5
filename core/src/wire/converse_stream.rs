//! ConverseStream's events, as bedrock-runtime streams them (`messageStart`,
//! `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata`),
//! written from the core's stream events: the payloads boto3's and the JavaScript SDK's
//! `converse_stream` parse, for the in-process drop-ins (`surface::http`).

use base64::Engine as _;
use serde_json::{Value, json};

use super::converse;
use crate::types::{ReasoningDelta, StreamEvent};

/// Writes one call's stream events as ConverseStream's, in order: the message's start before
/// the first, each content block stopped before the next one starts, the message's stop and
/// its metadata (usage, latency, tier, trace) from the completed response.
#[derive(Debug, Default)]
pub struct ConverseEvents {
    started: bool,
    /// The blocks started and not stopped, in index order.
    open: std::collections::BTreeSet<u32>,
}

impl ConverseEvents {
    /// A writer for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ConverseStream events (type and payload) that `event` makes.
    pub fn on(&mut self, event: &StreamEvent) -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(("messageStart", json!({ "role": "assistant" })));
        }
        let delta = |index: u32, delta: Value| {
            (
                "contentBlockDelta",
                json!({ "delta": delta, "contentBlockIndex": index }),
            )
        };
        match event {
            StreamEvent::TextDelta { index, text } => {
                self.enter(*index, &mut out);
                out.push(delta(*index, json!({ "text": text })));
            }
            StreamEvent::ToolUseStart { index, id, name } => {
                self.stop_before(*index, &mut out);
                self.open.insert(*index);
                out.push((
                    "contentBlockStart",
                    json!({
                        "start": { "toolUse": { "toolUseId": id, "name": name } },
                        "contentBlockIndex": index,
                    }),
                ));
            }
            StreamEvent::ToolUseDelta { index, input_json } => {
                self.enter(*index, &mut out);
                out.push(delta(*index, json!({ "toolUse": { "input": input_json } })));
            }
            StreamEvent::ReasoningDelta { index, delta: d } => {
                let piece = match d {
                    ReasoningDelta::Text(t) => json!({ "text": t }),
                    ReasoningDelta::Signature(s) => json!({ "signature": s }),
                    ReasoningDelta::Redacted(bytes) => json!({
                        "redactedContent": base64::engine::general_purpose::STANDARD.encode(bytes),
                    }),
                    // A Responses API item's id means nothing to Converse.
                    ReasoningDelta::Id(_) => return out,
                };
                self.enter(*index, &mut out);
                out.push(delta(*index, json!({ "reasoningContent": piece })));
            }
            StreamEvent::CitationDelta { index, citation } => {
                self.enter(*index, &mut out);
                out.push(delta(
                    *index,
                    json!({ "citation": converse::citation_value(citation) }),
                ));
            }
            // The text continues on another target as if nothing happened: nothing to say.
            StreamEvent::Continued { .. } => {}
            StreamEvent::Completed(r) => {
                self.stop_before(u32::MAX, &mut out);
                let whole = converse::response(r);
                let mut stop = json!({ "stopReason": whole.stop_reason });
                if let Some(fields) = whole.additional_model_response_fields {
                    stop["additionalModelResponseFields"] = fields;
                }
                out.push(("messageStop", stop));
                let mut metadata = json!({ "usage": whole.usage, "metrics": whole.metrics });
                if let Some(tier) = whole.service_tier {
                    metadata["serviceTier"] = tier;
                }
                if let Some(trace) = whole.trace {
                    metadata["trace"] = trace;
                }
                out.push(("metadata", metadata));
            }
        }
        out
    }

    /// A delta of block `index`: blocks before it are stopped first. A delta of a block
    /// behind one already open (a model interleaving its blocks) stops nothing: a stopped block
    /// never gets more.
    fn enter(&mut self, index: u32, out: &mut Vec<(&'static str, Value)>) {
        self.stop_before(index, out);
        self.open.insert(index);
    }

    /// Stops the open blocks before `index`, in order.
    fn stop_before(&mut self, index: u32, out: &mut Vec<(&'static str, Value)>) {
        while let Some(&first) = self.open.iter().next() {
            if first >= index {
                break;
            }
            self.open.remove(&first);
            out.push(("contentBlockStop", json!({ "contentBlockIndex": first })));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_open_and_stop_in_order_around_a_tool_call() {
        let mut w = ConverseEvents::new();
        let mut names = Vec::new();
        for e in [
            StreamEvent::TextDelta {
                index: 0,
                text: "Let me look.".into(),
            },
            StreamEvent::ToolUseStart {
                index: 1,
                id: "t1".into(),
                name: "lookup".into(),
            },
            StreamEvent::ToolUseDelta {
                index: 1,
                input_json: "{\"q\":".into(),
            },
            StreamEvent::ToolUseDelta {
                index: 1,
                input_json: "1}".into(),
            },
        ] {
            names.extend(w.on(&e).into_iter().map(|(n, _)| n));
        }
        assert_eq!(
            names,
            [
                "messageStart",
                "contentBlockDelta",
                "contentBlockStop",
                "contentBlockStart",
                "contentBlockDelta",
                "contentBlockDelta",
            ]
        );
    }
}
