//! One `openai`-shaped call, whichever of the two APIs it is: the body read into a core request
//! ([`Call::read`]), the whole answer written back ([`Reply::whole`]) and a stream's events
//! written as the API's own ([`Reply::encoder`]). The bindings' `openai` clients pass bodies and
//! events through this and nothing else, so both speak the SDKs' shapes alike.
//!
//! ```
//! use laneway::surface::openai::{Api, Call};
//! let call = Call::read(Api::Chat, serde_json::json!({
//!     "model": "amazon.nova-lite-v1:0",
//!     "messages": [{ "role": "user", "content": "Hello" }],
//!     "seed": 7,
//!     "stream": true,
//!     "laneway": { "slo": "interactive" },
//! })).unwrap();
//! assert!(call.reply.stream());
//! assert_eq!(call.reply.unhonoured()[0].0, "seed");
//! assert_eq!(call.request.slo.class, laneway::SloClass::Interactive);
//! assert_eq!("responses".parse::<Api>().unwrap(), Api::Responses);
//! ```

use std::str::FromStr;

use serde_json::Value;

use super::{Unhonoured, chat, note_unhonoured, responses};
use crate::types::{Error, GenerateRequest, GenerateResponse, Result, StreamEvent};

/// Which of the `openai` SDKs' APIs a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `chat.completions.create(...)`.
    Chat,
    /// `responses.create(...)`.
    Responses,
}

impl FromStr for Api {
    type Err = Error;

    /// `"chat"` or `"responses"`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "chat" => Ok(Api::Chat),
            "responses" => Ok(Api::Responses),
            other => Err(Error::invalid(
                "api",
                format!("{other:?}: \"chat\" or \"responses\""),
            )),
        }
    }
}

/// An `openai`-shaped body read for Laneway: the core request to send, and how to write its
/// answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The core request.
    pub request: GenerateRequest,
    /// How its answer is written back.
    pub reply: Reply,
}

impl Call {
    /// Reads a body of `api` (Laneway's options under `laneway`). A field Laneway refuses, or
    /// does not know, is an [`Error::InvalidRequest`] naming it.
    pub fn read(api: Api, body: Value) -> Result<Self> {
        Ok(match api {
            Api::Chat => {
                let c = chat::request(body)?;
                Self {
                    request: c.request,
                    reply: Reply {
                        api,
                        model: c.model,
                        stream: c.stream,
                        include_usage: c.include_usage,
                        unhonoured: c.unhonoured,
                    },
                }
            }
            Api::Responses => {
                let c = responses::request(body)?;
                Self {
                    request: c.request,
                    reply: Reply {
                        api,
                        model: c.model,
                        stream: c.stream,
                        include_usage: false,
                        unhonoured: c.unhonoured,
                    },
                }
            }
        })
    }
}

/// How a call's answer is written in its API's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    api: Api,
    model: String,
    stream: bool,
    include_usage: bool,
    unhonoured: Unhonoured,
}

impl Reply {
    /// The API the body was for.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Whether the body asked for a stream (`stream: true`).
    pub fn stream(&self) -> bool {
        self.stream
    }

    /// Refuses, naming `stream`, a body whose `stream` is not `streamed`: for a binding's
    /// entry point that answers only whole, or only streamed.
    pub fn expect_stream(&self, streamed: bool) -> Result<()> {
        if self.stream == streamed {
            return Ok(());
        }
        Err(Error::invalid(
            "stream",
            if streamed {
                "this entry point streams: give `stream: true`"
            } else {
                "this entry point answers whole: open a stream for `stream: true`"
            },
        ))
    }

    /// The `model` the body named, echoed in the answer.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Fields the call goes without, each with why (said in the answer's decision).
    pub fn unhonoured(&self) -> &Unhonoured {
        &self.unhonoured
    }

    /// The whole answer in the API's shape (a `chat.completion`, or a `response` with the
    /// SDKs' `output_text`), the fields not honoured said in its decision under `laneway`.
    pub fn whole(&self, mut r: GenerateResponse) -> Value {
        note_unhonoured(&mut r, &self.unhonoured);
        match self.api {
            Api::Chat => chat::completion(&r, &self.model),
            Api::Responses => {
                let mut v = responses::response(&r, &self.model);
                v["output_text"] = Value::String(r.text());
                v
            }
        }
    }

    /// Writes this call's stream events in the API's shape.
    pub fn encoder(&self) -> Encoder {
        let api = match self.api {
            Api::Chat => Encoding::Chat(chat::Chunks::new(&self.model, self.include_usage)),
            Api::Responses => Encoding::Responses(responses::Events::new(&self.model)),
        };
        Encoder {
            api,
            unhonoured: self.unhonoured.clone(),
        }
    }
}

#[derive(Debug)]
enum Encoding {
    Chat(chat::Chunks),
    Responses(responses::Events),
}

/// A stream's events as one API's: `chat.completion.chunk`s, or the Responses API's numbered
/// typed events. The last carries `laneway` (decision, timings, cost), the fields not
/// honoured said in the decision.
#[derive(Debug)]
pub struct Encoder {
    api: Encoding,
    unhonoured: Unhonoured,
}

impl Encoder {
    /// The API's events for one of the core's; none for an event the API has no form of (a
    /// signature, the seam of a continuation).
    pub fn on(&mut self, ev: &StreamEvent) -> Vec<Value> {
        let noted;
        let ev = match ev {
            StreamEvent::Completed(r) if !self.unhonoured.is_empty() => {
                let mut r = r.clone();
                note_unhonoured(&mut r, &self.unhonoured);
                noted = StreamEvent::Completed(r);
                &noted
            }
            other => other,
        };
        match &mut self.api {
            Encoding::Chat(c) => c.event(ev),
            Encoding::Responses(e) => e.on(ev),
        }
    }

    /// The API's events for a burst of the core's, in order.
    pub fn on_all(&mut self, events: &[StreamEvent]) -> Vec<Value> {
        events.iter().flat_map(|ev| self.on(ev)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answered() -> GenerateResponse {
        GenerateResponse::for_tests(
            vec![crate::types::OutputBlock::Text("Hi there".into())],
            crate::types::StopReason::EndTurn,
            crate::types::Usage::default(),
        )
    }

    #[test]
    fn a_whole_answer_says_what_it_went_without_and_carries_output_text() {
        let call = Call::read(
            Api::Responses,
            json!({ "model": "m", "input": "Hello", "truncation": "auto" }),
        )
        .unwrap();
        assert!(!call.reply.stream());
        let v = call.reply.whole(answered());
        assert_eq!(v["object"], "response");
        assert_eq!(v["output_text"], "Hi there");
        let reasons = &v["laneway"]["decision"]["reasons"];
        assert_eq!(reasons[0]["reason"], "field_not_honoured");
        assert_eq!(reasons[0]["field"], "truncation");
    }

    #[test]
    fn a_streamed_answer_says_what_it_went_without_on_its_last_event() {
        let call = Call::read(
            Api::Chat,
            json!({ "model": "m", "messages": [{ "role": "user", "content": "x" }], "seed": 1,
                "stream": true, "stream_options": { "include_usage": true } }),
        )
        .unwrap();
        let mut enc = call.reply.encoder();
        let chunks = enc.on_all(&[
            StreamEvent::TextDelta {
                index: 0,
                text: "Hi".into(),
            },
            StreamEvent::Completed(Box::new(answered())),
        ]);
        // The role, the text, the finish and the usage.
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Hi");
        let last = chunks.last().unwrap();
        assert!(last["usage"].is_object());
        assert_eq!(
            last["laneway"]["decision"]["reasons"][0]["field"],
            json!("seed")
        );
    }

    #[test]
    fn an_unknown_api_is_refused_by_name() {
        let e = "completions".parse::<Api>().unwrap_err();
        assert!(e.to_string().contains("api"), "{e}");
    }
}
