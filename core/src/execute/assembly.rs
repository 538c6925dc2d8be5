//! The answer as its events arrive: content blocks by index, the stop reason and usage, what
//! reached the caller, and where a continuing attempt's blocks go.

use crate::backend::{BackendEvent, Completion};
use crate::types::{Delivered, OutputBlock, StopReason, StreamEvent, Usage};
use crate::types::{ReasoningBlock, ReasoningDelta, ReasoningText};

/// Content blocks as they arrive, by index.
#[derive(Default)]
pub(super) struct Assembly {
    blocks: Blocks,
    stop: Option<StopReason>,
    usage: Option<Usage>,
    served_tier: Option<crate::types::ServiceTier>,
    invoked_model: Option<String>,
    model_response_fields: Option<serde_json::Value>,
    guardrail_trace: Option<serde_json::Value>,
    /// Citations of text blocks, by block index.
    cited: Vec<(u32, crate::types::Citation)>,
    delivered: Delivered,
    /// Events handed to the caller so far; failover is safe only while this is zero.
    yielded: u32,
    /// Where a continuing attempt's blocks go, once a broken stream is continued.
    resumed: Option<Resumed>,
}

/// Where the blocks of an attempt that continues a broken stream go: its text onto the text
/// block it continues, its other blocks after every block delivered. Backends number their
/// blocks their own way (Converse from 0, an OpenAI-compatible server's text at 1), so the
/// continuing attempt's numbers say nothing about the broken one's.
#[derive(Debug, Clone, Copy)]
struct Resumed {
    /// The block the continuing attempt's text goes onto.
    text: u32,
    /// Where its other blocks start.
    after: u32,
    /// The continuing attempt's own number for its text, once seen: its citations of that
    /// block go with the text.
    own_text: Option<u32>,
}

/// An answer's content blocks, kept in index order: a handful, nearly always arriving in that
/// order, each delta for the block the last one went to (a vector with that fast path, not a
/// tree).
#[derive(Default)]
struct Blocks(Vec<(u32, Block)>);

impl Blocks {
    /// Where the block at `index` is (`Ok`), or would go (`Err`).
    fn position(&self, index: u32) -> Result<usize, usize> {
        match self.0.last() {
            Some((last, _)) if *last == index => Ok(self.0.len() - 1),
            Some((last, _)) if *last < index => Err(self.0.len()),
            _ => self.0.binary_search_by_key(&index, |(i, _)| *i),
        }
    }

    fn get_mut(&mut self, index: u32) -> Option<&mut Block> {
        let at = self.position(index).ok()?;
        Some(&mut self.0[at].1)
    }

    /// The block at `index`, a new text block if there is none.
    fn get_or_text(&mut self, index: u32) -> &mut Block {
        let at = self.position(index).unwrap_or_else(|at| {
            self.0.insert(at, (index, Block::Text(String::new())));
            at
        });
        &mut self.0[at].1
    }

    /// Sets the block at `index`, replacing one there.
    fn set(&mut self, index: u32, block: Block) {
        match self.position(index) {
            Ok(at) => self.0[at].1 = block,
            Err(at) => self.0.insert(at, (index, block)),
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Block> {
        self.0.iter().map(|(_, b)| b)
    }

    fn into_indexed(self) -> impl Iterator<Item = (u32, Block)> {
        self.0.into_iter()
    }
}

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Reasoning {
        text: String,
        signature: Option<String>,
        redacted: Option<Vec<u8>>,
        id: Option<String>,
    },
}

impl Assembly {
    /// Takes in a backend event; returns what the caller sees of it.
    pub(super) fn take(&mut self, ev: BackendEvent) -> Option<StreamEvent> {
        let out = self.apply(ev);
        self.yielded += u32::from(out.is_some());
        out
    }

    /// The next attempt continues what was delivered, from its text: blocks the broken
    /// attempt began after its last text (a tool call cut short) are dropped, since the
    /// continuing model makes them again.
    pub(super) fn resume(&mut self) {
        // Numbers past every block delivered, dropped ones too: the caller saw those.
        let after = self.blocks.0.last().map_or(0, |(i, _)| i.saturating_add(1));
        let last_text = self
            .blocks
            .0
            .iter()
            .rposition(|(_, b)| matches!(b, Block::Text(_)));
        self.blocks.0.truncate(last_text.map_or(0, |at| at + 1));
        self.resumed = Some(match last_text {
            Some(at) => Resumed {
                text: self.blocks.0[at].0,
                after,
                own_text: None,
            },
            // Nothing delivered was text: the continuation's text is a block of its own.
            None => Resumed {
                text: after,
                after: after.saturating_add(1),
                own_text: None,
            },
        });
    }

    pub(super) fn apply(&mut self, mut ev: BackendEvent) -> Option<StreamEvent> {
        if let Some(r) = &mut self.resumed {
            match &mut ev {
                BackendEvent::TextDelta { index, .. } => {
                    r.own_text.get_or_insert(*index);
                    *index = r.text;
                }
                BackendEvent::CitationDelta { index, .. } if r.own_text == Some(*index) => {
                    *index = r.text
                }
                BackendEvent::ToolUseStart { index, .. }
                | BackendEvent::ToolUseDelta { index, .. }
                | BackendEvent::CitationDelta { index, .. }
                | BackendEvent::ReasoningDelta { index, .. } => {
                    *index = index.saturating_add(r.after)
                }
                _ => {}
            }
        }
        match ev {
            BackendEvent::TextDelta { index, text } => {
                match self.blocks.get_or_text(index) {
                    Block::Text(t) => t.push_str(&text),
                    Block::Tool { json, .. } => json.push_str(&text),
                    // Answer text in a reasoning block's slot: a service bug; keep the text.
                    Block::Reasoning { text: r, .. } => r.push_str(&text),
                }
                self.delivered.deltas += 1;
                self.delivered.text_chars += text.chars().count();
                Some(StreamEvent::TextDelta { index, text })
            }
            BackendEvent::ToolUseStart { index, id, name } => {
                self.blocks.set(
                    index,
                    Block::Tool {
                        id: id.clone(),
                        name: name.clone(),
                        json: String::new(),
                    },
                );
                Some(StreamEvent::ToolUseStart { index, id, name })
            }
            BackendEvent::ToolUseDelta { index, input_json } => {
                if let Some(Block::Tool { json, .. }) = self.blocks.get_mut(index) {
                    json.push_str(&input_json);
                }
                self.delivered.deltas += 1;
                Some(StreamEvent::ToolUseDelta { index, input_json })
            }
            BackendEvent::CitationDelta { index, citation } => {
                self.cited.push((index, citation.clone()));
                Some(StreamEvent::CitationDelta { index, citation })
            }
            BackendEvent::ReasoningDelta { index, delta } => {
                let block = match self.blocks.get_mut(index) {
                    Some(b @ Block::Reasoning { .. }) => b,
                    // A reasoning delta in another kind of block's slot: a service bug; the
                    // block keeps what it has, the caller still sees the delta.
                    Some(_) => {
                        self.delivered.deltas += 1;
                        return Some(StreamEvent::ReasoningDelta { index, delta });
                    }
                    None => {
                        self.blocks.set(
                            index,
                            Block::Reasoning {
                                text: String::new(),
                                signature: None,
                                redacted: None,
                                id: None,
                            },
                        );
                        self.blocks.get_mut(index).expect("just set")
                    }
                };
                if let Block::Reasoning {
                    text,
                    signature,
                    redacted,
                    id,
                } = block
                {
                    match &delta {
                        ReasoningDelta::Text(t) => text.push_str(t),
                        ReasoningDelta::Signature(s) => {
                            signature.get_or_insert_with(String::new).push_str(s)
                        }
                        ReasoningDelta::Redacted(b) => {
                            redacted.get_or_insert_with(Vec::new).extend_from_slice(b)
                        }
                        ReasoningDelta::Id(i) => *id = Some(i.clone()),
                    }
                }
                self.delivered.deltas += 1;
                Some(StreamEvent::ReasoningDelta { index, delta })
            }
            BackendEvent::Stop(reason) => {
                self.stop = Some(reason);
                None
            }
            BackendEvent::GuardrailTrace(trace) => {
                self.guardrail_trace = Some(trace);
                None
            }
            BackendEvent::StopWithFields(reason, fields) => {
                self.stop = Some(reason);
                self.model_response_fields = Some(fields);
                None
            }
            BackendEvent::Metadata {
                usage,
                served_tier,
                invoked_model,
            } => {
                self.usage = Some(usage);
                self.served_tier = served_tier;
                self.invoked_model = invoked_model;
                None
            }
        }
    }

    /// How many events reached the caller: failing over is safe only while none has.
    pub(super) fn yielded(&self) -> u32 {
        self.yielded
    }

    /// The model said it stopped (usage may be missing where a container sends none).
    pub(super) fn is_complete(&self) -> bool {
        self.stop.is_some()
    }

    /// The text of every text block so far.
    pub(super) fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn delivered(&self) -> Delivered {
        Delivered {
            output_tokens: self.delivered.deltas,
            ..self.delivered
        }
    }

    pub(super) fn into_completion(self) -> Completion {
        let mut cited = self.cited;
        let content = self
            .blocks
            .into_indexed()
            .map(|(index, b)| match b {
                Block::Text(t) if cited.iter().any(|(i, _)| *i == index) => {
                    let (of_block, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut cited)
                        .into_iter()
                        .partition(|(i, _)| *i == index);
                    cited = rest;
                    OutputBlock::Citations(crate::types::CitationsContent {
                        content: vec![t],
                        citations: of_block.into_iter().map(|(_, c)| c).collect(),
                    })
                }
                Block::Text(t) => OutputBlock::Text(t),
                Block::Tool { id, name, json } => OutputBlock::ToolUse {
                    id,
                    name,
                    input: if json.is_empty() {
                        serde_json::json!({})
                    } else {
                        serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json))
                    },
                },
                Block::Reasoning {
                    redacted: Some(data),
                    ..
                } => OutputBlock::Reasoning(ReasoningBlock::Redacted(data)),
                Block::Reasoning {
                    text,
                    signature,
                    id,
                    ..
                } => OutputBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                    text,
                    signature,
                    id,
                })),
            })
            .collect();
        Completion {
            content,
            stop_reason: self.stop.unwrap_or(StopReason::EndTurn),
            usage: self.usage.unwrap_or(Usage {
                output_tokens: self.delivered.deltas,
                input_estimated: true,
                ..Usage::default()
            }),
            served_tier: self.served_tier,
            invoked_model: self.invoked_model,
            model_response_fields: self.model_response_fields,
            guardrail_trace: self.guardrail_trace,
        }
    }

    /// Whether any reasoning was delivered (a continuation cannot prefill after it).
    pub(super) fn reasoned(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::Reasoning { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(index: u32, t: &str) -> BackendEvent {
        BackendEvent::TextDelta {
            index,
            text: t.into(),
        }
    }

    #[test]
    fn a_continuation_numbered_its_own_way_continues_the_delivered_text() {
        // An OpenAI-compatible server's text is block 1; the Converse target that continues
        // it numbers its text 0 and its call 1.
        let mut a = Assembly::default();
        a.take(text(1, "The answer is"));
        a.resume();
        let out = a.take(text(0, " 42.")).unwrap();
        assert!(
            matches!(out, StreamEvent::TextDelta { index: 1, .. }),
            "{out:?}"
        );
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "t1".into(),
            name: "check".into(),
        });
        a.take(BackendEvent::Stop(StopReason::ToolUse));
        let done = a.into_completion();
        assert_eq!(
            done.content[0],
            OutputBlock::Text("The answer is 42.".into())
        );
        assert!(matches!(&done.content[1], OutputBlock::ToolUse { id, .. } if id == "t1"));
    }

    #[test]
    fn a_continuation_drops_a_call_cut_short_and_keeps_its_citations_on_the_text() {
        let mut a = Assembly::default();
        a.take(text(0, "See the report"));
        // The broken attempt had begun a call after its text.
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "cut".into(),
            name: "fetch".into(),
        });
        a.take(BackendEvent::ToolUseDelta {
            index: 1,
            input_json: "{\"u".into(),
        });
        a.resume();
        a.take(text(0, ", page 2."));
        a.take(BackendEvent::CitationDelta {
            index: 0,
            citation: crate::types::Citation {
                title: Some("report".into()),
                source: None,
                source_content: vec!["page 2".into()],
                location: None,
            },
        });
        a.take(BackendEvent::ToolUseStart {
            index: 1,
            id: "t1".into(),
            name: "fetch".into(),
        });
        a.take(BackendEvent::Stop(StopReason::ToolUse));
        let done = a.into_completion();
        assert_eq!(done.content.len(), 2, "{:?}", done.content);
        assert!(
            matches!(&done.content[0], OutputBlock::Citations(c) if c.content.concat() == "See the report, page 2." && c.citations.len() == 1)
        );
        assert!(matches!(&done.content[1], OutputBlock::ToolUse { id, .. } if id == "t1"));

        // Nothing delivered was text: the continuation's text is a block of its own, after.
        let mut a = Assembly::default();
        a.take(BackendEvent::ReasoningDelta {
            index: 0,
            delta: crate::types::ReasoningDelta::Text("hm".into()),
        });
        a.resume();
        let out = a.take(text(0, "Hi")).unwrap();
        assert!(
            matches!(out, StreamEvent::TextDelta { index: 1, .. }),
            "{out:?}"
        );
    }

    #[test]
    fn blocks_interleaved_and_out_of_order_assemble_by_index() {
        let mut a = Assembly::default();
        for ev in [
            text(2, "late "),
            text(0, "Hello"),
            BackendEvent::ToolUseStart {
                index: 1,
                id: "t1".into(),
                name: "lookup".into(),
            },
            BackendEvent::ToolUseDelta {
                index: 1,
                input_json: "{\"q\":".into(),
            },
            text(0, ", world"),
            BackendEvent::ToolUseDelta {
                index: 1,
                input_json: "1}".into(),
            },
            text(2, "text"),
            BackendEvent::Stop(StopReason::ToolUse),
        ] {
            a.take(ev);
        }
        assert_eq!(a.text(), "Hello, worldlate text");
        let d = a.delivered();
        assert_eq!((d.deltas, d.text_chars), (6, 21));
        assert!(a.is_complete());
        let done = a.into_completion();
        assert_eq!(
            done.content,
            [
                OutputBlock::Text("Hello, world".into()),
                OutputBlock::ToolUse {
                    id: "t1".into(),
                    name: "lookup".into(),
                    input: serde_json::json!({"q": 1}),
                },
                OutputBlock::Text("late text".into()),
            ]
        );
        assert_eq!(done.stop_reason, StopReason::ToolUse);
    }
}
