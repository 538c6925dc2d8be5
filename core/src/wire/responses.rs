//! The Responses API (`POST …/responses`), read and written in one shape by the OpenAI
//! backend and the `openai` drop-in: a conversation's input items, an answer's output items
//! (the same items: an answer's output goes back as the next turn's input), function tools
//! and the tool choice, the `response` object, its usage and status, and the stream's typed
//! events.
//!
//! Items parse without a JSON tree: texts are borrowed from the body where they have no
//! escapes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::chat::{self, Senders};
use crate::types::{
    ContentBlock, Error, GenerateResponse, Message, OutputBlock, ReasoningBlock, ReasoningDelta,
    ReasoningText, Result, Role, StopReason, StreamEvent, SystemBlock, Tool, ToolChoice,
    ToolResult, ToolResultContent, ToolSpec, ToolUse, Usage,
};

/// An item of a conversation or of an answer. Read through [`FlatItem`], leniently and in
/// one pass: a `null` reads as nothing, an item without a `type` but with a `role` is a
/// message (as an input message may be written), and any other is [`Item::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", from = "FlatItem<'a>")]
pub(crate) enum Item<'a> {
    /// A message: a turn's text (and, from a user, images).
    #[serde(borrow)]
    Message(MessageItem<'a>),
    /// A function call the model made.
    #[serde(borrow)]
    FunctionCall(CallItem<'a>),
    /// A function call's output, sent back.
    #[serde(borrow)]
    FunctionCallOutput(CallOutputItem<'a>),
    /// The model's reasoning: its summary (or, from open-weight models, its text) and its
    /// encrypted content, which a later turn sends back.
    #[serde(borrow)]
    Reasoning(ReasoningItem<'a>),
    /// An item Laneway does not route (a web search call, ...).
    #[serde(other)]
    Other,
}

/// A message item (`type` may be left out of an input message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MessageItem<'a> {
    /// Written on output items; not read.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) id: Option<Cow<'a, str>>,
    /// Written on output items; not read.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
    /// `user`, `assistant`, `system` or `developer`.
    #[serde(default, borrow)]
    pub(crate) role: Cow<'a, str>,
    /// A string, or parts.
    #[serde(default, borrow)]
    pub(crate) content: Option<Content<'a>>,
}

/// A message's content: text, or parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Content<'a> {
    /// Text alone.
    Text(Cow<'a, str>),
    /// Parts.
    Parts(Vec<Part<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of parts")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Content<'a>, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// A part of a message's content, or of a reasoning item's summary or text. Read through
/// [`FlatPart`]: a part without a known `type` is [`Part::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", from = "FlatPart<'a>")]
pub(crate) enum Part<'a> {
    /// A user's text.
    InputText {
        #[serde(default, borrow)]
        text: Cow<'a, str>,
        /// The prompt up to the end of this part is cached (GPT-5.6 and later).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_cache_breakpoint: Option<Breakpoint>,
    },
    /// The model's text (with the SDKs' `annotations` and `logprobs` lists, written empty).
    OutputText {
        #[serde(default, borrow)]
        text: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Unread>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logprobs: Option<Unread>,
    },
    /// Text, as some clients spell either.
    Text {
        #[serde(default, borrow)]
        text: Cow<'a, str>,
    },
    /// The model's refusal, as text.
    Refusal {
        #[serde(default, borrow)]
        refusal: Cow<'a, str>,
    },
    /// A user's image, by URL (a data URL for Bedrock's models).
    InputImage {
        #[serde(default, borrow)]
        image_url: Option<Cow<'a, str>>,
        /// The prompt up to the end of this part is cached (GPT-5.6 and later).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_cache_breakpoint: Option<Breakpoint>,
    },
    /// A paragraph of a reasoning summary.
    SummaryText {
        #[serde(default, borrow)]
        text: Cow<'a, str>,
    },
    /// Reasoning text (open-weight models on mantle send it whole).
    ReasoningText {
        #[serde(default, borrow)]
        text: Cow<'a, str>,
    },
    /// A part Laneway does not route (a file, audio, ...).
    #[serde(other)]
    Other,
}

/// Any item, as read: every field of every kind, each optional, so that an item parses in one
/// pass (an internally tagged enum would buffer it whole) and a `null` or a missing field is
/// nothing rather than a failure.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FlatItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default, borrow)]
    summary: Option<Vec<Part<'a>>>,
    #[serde(default, borrow)]
    encrypted_content: Option<Cow<'a, str>>,
}

impl<'a> From<FlatItem<'a>> for Item<'a> {
    fn from(f: FlatItem<'a>) -> Self {
        let text = |v: Option<Cow<'a, str>>| v.unwrap_or_default();
        match f.kind.as_deref() {
            Some("message") => {}
            None if f.role.is_some() => {}
            Some("function_call") => {
                return Item::FunctionCall(CallItem {
                    id: f.id,
                    call_id: text(f.call_id),
                    name: text(f.name),
                    arguments: text(f.arguments),
                    status: f.status,
                });
            }
            Some("function_call_output") => {
                return Item::FunctionCallOutput(CallOutputItem {
                    call_id: text(f.call_id),
                    output: f.output.unwrap_or(Value::Null),
                });
            }
            Some("reasoning") => {
                // Open-weight models send their reasoning whole as `content` parts.
                let content = match f.content {
                    Some(Content::Parts(parts)) => Some(parts),
                    Some(Content::Text(t)) => Some(vec![Part::ReasoningText { text: t }]),
                    None => None,
                };
                return Item::Reasoning(ReasoningItem {
                    id: f.id,
                    summary: f.summary.unwrap_or_default(),
                    content,
                    encrypted_content: f.encrypted_content,
                });
            }
            _ => return Item::Other,
        }
        Item::Message(MessageItem {
            id: f.id,
            status: f.status,
            role: text(f.role),
            content: f.content,
        })
    }
}

/// An explicit prompt-cache breakpoint on an input part (`{"mode": "explicit"}`, the only
/// mode): the prefix up to the part's end is written with the request's
/// `prompt_cache_options.ttl` (30 minutes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Breakpoint {
    mode: BreakpointMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum BreakpointMode {
    Explicit,
}

impl Breakpoint {
    /// The one kind of breakpoint there is.
    pub(crate) const EXPLICIT: Breakpoint = Breakpoint {
        mode: BreakpointMode::Explicit,
    };
}

/// Any part, as read (see [`FlatItem`]).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FlatPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    image_url: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_cache_breakpoint: Option<Breakpoint>,
}

impl<'a> From<FlatPart<'a>> for Part<'a> {
    fn from(f: FlatPart<'a>) -> Self {
        let text = f.text.unwrap_or_default();
        match f.kind.as_deref() {
            Some("input_text") => Part::InputText {
                text,
                prompt_cache_breakpoint: f.prompt_cache_breakpoint,
            },
            Some("output_text") => Part::OutputText {
                text,
                annotations: None,
                logprobs: None,
            },
            Some("text") => Part::Text { text },
            Some("refusal") => Part::Refusal {
                refusal: f.refusal.unwrap_or_default(),
            },
            Some("input_image") => Part::InputImage {
                image_url: f.image_url,
                prompt_cache_breakpoint: f.prompt_cache_breakpoint,
            },
            Some("summary_text") => Part::SummaryText { text },
            Some("reasoning_text") => Part::ReasoningText { text },
            _ => Part::Other,
        }
    }
}

/// A function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallItem<'a> {
    /// The item's id (`fc_…`), written on output items; not read.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) id: Option<Cow<'a, str>>,
    /// The id its output answers to.
    #[serde(default, borrow)]
    pub(crate) call_id: Cow<'a, str>,
    /// The function's name.
    #[serde(default, borrow)]
    pub(crate) name: Cow<'a, str>,
    /// The arguments as JSON text (empty while a streamed call has none yet).
    #[serde(default, borrow)]
    pub(crate) arguments: Cow<'a, str>,
    /// Written on output items; not read.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
}

/// A function call's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallOutputItem<'a> {
    /// The call it answers.
    #[serde(default, borrow)]
    pub(crate) call_id: Cow<'a, str>,
    /// Its text (or parts, read as their JSON text).
    #[serde(default)]
    pub(crate) output: Value,
}

/// A reasoning item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReasoningItem<'a> {
    /// Its id, which a later turn sends back with it.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) id: Option<Cow<'a, str>>,
    /// Its summary's paragraphs (`summary_text` parts; always written, as the API requires).
    #[serde(default, borrow)]
    pub(crate) summary: Vec<Part<'a>>,
    /// Its full text (`reasoning_text` parts), from open-weight models.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) content: Option<Vec<Part<'a>>>,
    /// The reasoning itself, encrypted, for a later turn to send back.
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) encrypted_content: Option<Cow<'a, str>>,
}

impl ReasoningItem<'_> {
    /// Its text: the summary's paragraphs, else its full text.
    pub(crate) fn text(&self) -> String {
        let texts = |parts: &[Part<'_>]| -> Vec<String> {
            parts
                .iter()
                .filter_map(|p| match p {
                    Part::SummaryText { text }
                    | Part::ReasoningText { text }
                    | Part::Text { text }
                    | Part::OutputText { text, .. } => Some(text.to_string()),
                    _ => None,
                })
                .collect()
        };
        let summary = texts(&self.summary);
        if summary.is_empty() {
            texts(self.content.as_deref().unwrap_or_default()).concat()
        } else {
            summary.join("\n\n")
        }
    }
}

/// A message item of the model's, with `content` (one `output_text` part, or none while
/// it is opening).
pub(crate) fn message_item<'a>(
    id: impl Into<Cow<'a, str>>,
    content: Vec<Part<'a>>,
    status: &'a str,
) -> Item<'a> {
    Item::Message(MessageItem {
        id: Some(id.into()),
        status: Some(Cow::Borrowed(status)),
        role: Cow::Borrowed("assistant"),
        content: Some(Content::Parts(content)),
    })
}

/// An `output_text` part as the SDKs read it.
pub(crate) fn output_text<'a>(text: impl Into<Cow<'a, str>>) -> Part<'a> {
    Part::OutputText {
        text: text.into(),
        annotations: Some(Unread),
        logprobs: Some(Unread),
    }
}

/// A function call item (its item id is `fc_` and the call's id).
pub(crate) fn call_item<'a>(
    id: &'a str,
    name: &'a str,
    arguments: &'a str,
    status: &'a str,
) -> Item<'a> {
    Item::FunctionCall(CallItem {
        id: Some(Cow::Owned(format!("fc_{id}"))),
        call_id: Cow::Borrowed(id),
        name: Cow::Borrowed(name),
        arguments: Cow::Borrowed(arguments),
        status: Some(Cow::Borrowed(status)),
    })
}

/// A reasoning item: its text as one summary paragraph, and its encrypted content.
pub(crate) fn reasoning_item<'a>(
    id: &'a str,
    text: &'a str,
    encrypted: Option<&'a str>,
) -> Item<'a> {
    Item::Reasoning(ReasoningItem {
        id: Some(Cow::Borrowed(id)),
        summary: summary(text),
        content: None,
        encrypted_content: encrypted.map(Cow::Borrowed),
    })
}

fn summary(text: &str) -> Vec<Part<'_>> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![Part::SummaryText {
            text: Cow::Borrowed(text),
        }]
    }
}

/// A list Laneway writes empty (the SDKs require it) and does not read (annotations, log
/// probabilities): skipped, whatever it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Unread;

impl Serialize for Unread {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq as _;
        s.serialize_seq(Some(0))?.end()
    }
}

impl<'de> Deserialize<'de> for Unread {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Unread)
    }
}

/// A conversation as input items: each turn's text (and a user's images) as a message, its
/// function calls and their outputs as items of their own, and the reasoning this API made
/// (`reasoning_history`: the plan leaves other models' out) by its id with its encrypted
/// content, for a service that keeps nothing (`store: false`). Checkpoints have no spelling
/// (the service caches prefixes itself); any other block is refused by name, never dropped.
pub(crate) fn input<'a>(
    conversation: &'a [Message],
    senders: &Senders<'_>,
    reasoning_history: bool,
    breakpoints: &[(usize, usize)],
) -> Result<Vec<Item<'a>>> {
    let mut items = Vec::with_capacity(conversation.len());
    for (i, m) in conversation.iter().enumerate() {
        let (role, text): (&str, fn(Cow<'a, str>) -> Part<'a>) = match m.role {
            Role::User => ("user", |text| Part::InputText {
                text,
                prompt_cache_breakpoint: None,
            }),
            Role::Assistant => ("assistant", |text| Part::OutputText {
                text,
                annotations: None,
                logprobs: None,
            }),
        };
        let mut parts: Vec<Part<'a>> = Vec::new();
        let flush = |items: &mut Vec<Item<'a>>, parts: &mut Vec<Part<'a>>| {
            if !parts.is_empty() {
                items.push(Item::Message(MessageItem {
                    id: None,
                    status: None,
                    role: Cow::Borrowed(role),
                    content: Some(Content::Parts(std::mem::take(parts))),
                }));
            }
        };
        for (j, b) in m.content.iter().enumerate() {
            let at = || format!("messages[{i}].content[{j}]");
            let marked = breakpoints.contains(&(i, j));
            match b {
                ContentBlock::Text(t) => parts.push(text(Cow::Borrowed(t))),
                ContentBlock::Citations(c) => parts.push(text(Cow::Owned(c.content.concat()))),
                ContentBlock::Image(image) if m.role == Role::User => {
                    parts.push(Part::InputImage {
                        image_url: Some(Cow::Owned((senders.image)(image, &at())?)),
                        prompt_cache_breakpoint: None,
                    })
                }
                ContentBlock::ToolUse(t) => {
                    flush(&mut items, &mut parts);
                    items.push(Item::FunctionCall(CallItem {
                        id: None,
                        call_id: Cow::Borrowed(&t.id),
                        name: Cow::Borrowed(&t.name),
                        arguments: Cow::Owned(t.input.to_string()),
                        status: None,
                    }));
                }
                ContentBlock::ToolResult(r) => {
                    flush(&mut items, &mut parts);
                    items.push(Item::FunctionCallOutput(CallOutputItem {
                        call_id: Cow::Borrowed(&r.tool_use_id),
                        output: Value::String((senders.tool_result)(&r.content, &at())?),
                    }));
                }
                ContentBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                    text,
                    signature,
                    id: Some(id),
                })) if reasoning_history => {
                    flush(&mut items, &mut parts);
                    items.push(Item::Reasoning(ReasoningItem {
                        id: Some(Cow::Borrowed(id)),
                        summary: summary(text),
                        content: None,
                        encrypted_content: signature.as_deref().map(Cow::Borrowed),
                    }));
                }
                ContentBlock::Reasoning(_) | ContentBlock::CachePoint(_) => {}
                other => return Err((senders.unsupported)(other, &at())),
            }
            if marked {
                mark_last(&mut parts);
            }
        }
        flush(&mut items, &mut parts);
    }
    Ok(items)
}

/// Sets a breakpoint on the last part, when it is one that takes it (the caller's text or
/// image; the plan places checkpoints nowhere else on this API).
pub(crate) fn mark_last(parts: &mut [Part<'_>]) {
    if let Some(
        Part::InputText {
            prompt_cache_breakpoint,
            ..
        }
        | Part::InputImage {
            prompt_cache_breakpoint,
            ..
        },
    ) = parts.last_mut()
    {
        *prompt_cache_breakpoint = Some(Breakpoint::EXPLICIT);
    }
}

/// `input` read back: a string (one user turn), or items; system and developer messages
/// become system text, and the items of one turn (reasoning, text, calls) one message.
/// Anything Laneway cannot route is refused by its path.
pub(crate) fn read_input(v: Option<&Value>) -> Result<(Vec<SystemBlock>, Vec<Message>)> {
    let items = match v {
        Some(Value::String(s)) => return Ok((Vec::new(), vec![Message::user(s.clone())])),
        Some(Value::Array(items)) => items,
        _ => {
            return Err(Error::invalid(
                "input",
                "a string or a list of items is required",
            ));
        }
    };
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    let push = |out: &mut Vec<Message>, role: Role, block: ContentBlock| match out.last_mut() {
        Some(last) if last.role == role => last.content.push(block),
        _ => out.push(Message {
            role,
            content: vec![block],
        }),
    };
    for (n, value) in items.iter().enumerate() {
        let at = format!("input[{n}]");
        let bad = |e: serde_json::Error| Error::invalid(at.as_str(), e.to_string());
        let item = Item::deserialize(value).map_err(bad)?;
        match item {
            Item::Message(m) => {
                let blocks = read_parts(m.content, value.get("content"), &at)?;
                match &*m.role {
                    "system" | "developer" => {
                        for b in blocks {
                            system.push(match b {
                                ContentBlock::Text(t) => SystemBlock::Text(t),
                                ContentBlock::CachePoint(c) => SystemBlock::CachePoint(c),
                                _ => {
                                    return Err(Error::invalid(
                                        format!("{at}.content"),
                                        "a system message takes text only",
                                    ));
                                }
                            });
                        }
                    }
                    "user" | "assistant" => {
                        let role = if m.role == "user" {
                            Role::User
                        } else {
                            Role::Assistant
                        };
                        for b in blocks {
                            push(&mut out, role, b);
                        }
                    }
                    other => {
                        return Err(Error::invalid(
                            format!("{at}.role"),
                            format!("{other:?}: one of system, developer, user, assistant"),
                        ));
                    }
                }
            }
            Item::FunctionCall(c) => {
                let arguments = if c.arguments.is_empty() {
                    "{}"
                } else {
                    &c.arguments
                };
                let input = serde_json::from_str(arguments).map_err(|e| {
                    Error::invalid(format!("{at}.arguments"), format!("not JSON: {e}"))
                })?;
                push(
                    &mut out,
                    Role::Assistant,
                    ContentBlock::ToolUse(ToolUse {
                        id: c.call_id.into_owned(),
                        name: c.name.into_owned(),
                        input,
                    }),
                );
            }
            Item::FunctionCallOutput(o) => {
                let output = match o.output {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                push(
                    &mut out,
                    Role::User,
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: o.call_id.into_owned(),
                        content: vec![ToolResultContent::Text(output)],
                        is_error: false,
                    }),
                );
            }
            Item::Reasoning(r) => push(
                &mut out,
                Role::Assistant,
                ContentBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                    text: r.text(),
                    signature: r.encrypted_content.map(Cow::into_owned),
                    id: r.id.map(Cow::into_owned),
                })),
            ),
            Item::Other => {
                let kind = value
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err(Error::invalid(
                    format!("{at}.type"),
                    format!(
                        "a {kind:?} item is not routed by Laneway (messages, function calls and their outputs, reasoning are)"
                    ),
                ));
            }
        }
    }
    Ok((system, out))
}

/// A message item's content as blocks: text and images; other parts refused by path and
/// type (read from `raw`, the content as sent).
fn read_parts(
    content: Option<Content<'_>>,
    raw: Option<&Value>,
    at: &str,
) -> Result<Vec<ContentBlock>> {
    let parts = match content {
        Some(Content::Text(t)) => return Ok(vec![ContentBlock::Text(t.into_owned())]),
        Some(Content::Parts(parts)) => parts,
        None => {
            return Err(Error::invalid(
                format!("{at}.content"),
                "a string or a list of parts",
            ));
        }
    };
    let mut blocks = Vec::with_capacity(parts.len());
    for (j, p) in parts.into_iter().enumerate() {
        let at = format!("{at}.content[{j}]");
        // A breakpoint is a checkpoint after its part, with the API's one lifetime.
        let breakpoint = match &p {
            Part::InputText {
                prompt_cache_breakpoint,
                ..
            }
            | Part::InputImage {
                prompt_cache_breakpoint,
                ..
            } => prompt_cache_breakpoint.is_some(),
            _ => false,
        };
        blocks.push(read_part(p, j, raw, at)?);
        if breakpoint {
            blocks.push(ContentBlock::CachePoint(crate::types::CachePoint {
                ttl: Some(crate::types::CacheTtl::ThirtyMinutes),
            }));
        }
    }
    Ok(blocks)
}

/// One part as a block; a part Laneway does not route refused by its path and type.
fn read_part(p: Part<'_>, j: usize, raw: Option<&Value>, at: String) -> Result<ContentBlock> {
    match p {
        Part::InputText { text, .. } | Part::OutputText { text, .. } | Part::Text { text } => {
            Ok(ContentBlock::Text(text.into_owned()))
        }
        Part::Refusal { refusal } => Ok(ContentBlock::Text(refusal.into_owned())),
        Part::InputImage { image_url, .. } => chat::read_image_url(
            image_url.as_deref().unwrap_or_default(),
            &format!("{at}.image_url"),
        ),
        Part::SummaryText { .. } | Part::ReasoningText { .. } | Part::Other => {
            let kind = raw
                .and_then(|c| c.get(j))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str);
            Err(Error::invalid(
                at,
                match kind {
                    Some(kind) => {
                        format!("a {kind:?} part is not routed by Laneway (text and images are)")
                    }
                    None => "a content part needs a type".to_string(),
                },
            ))
        }
    }
}

/// An answer's blocks as output items, in order: reasoning and function calls as their own
/// items, the text as one message item at the end.
pub(crate) fn output<'a>(content: &'a [OutputBlock], response_id: &str) -> Vec<Item<'a>> {
    let mut items = Vec::new();
    let mut text = String::new();
    for (i, b) in content.iter().enumerate() {
        match b {
            OutputBlock::Text(t) => text.push_str(t),
            OutputBlock::Citations(c) => text.push_str(&c.content.concat()),
            OutputBlock::Reasoning(ReasoningBlock::Text(t)) => {
                items.push(Item::Reasoning(ReasoningItem {
                    id: Some(t.id.as_deref().map_or_else(
                        || Cow::Owned(format!("rs_{response_id}_{i}")),
                        Cow::Borrowed,
                    )),
                    summary: summary(&t.text),
                    content: None,
                    encrypted_content: t.signature.as_deref().map(Cow::Borrowed),
                }))
            }
            OutputBlock::Reasoning(ReasoningBlock::Redacted(_)) => {}
            OutputBlock::ToolUse { id, name, input } => items.push(Item::FunctionCall(CallItem {
                id: Some(Cow::Owned(format!("fc_{id}"))),
                call_id: Cow::Borrowed(id),
                name: Cow::Borrowed(name),
                arguments: Cow::Owned(input.to_string()),
                status: Some(Cow::Borrowed("completed")),
            })),
        }
    }
    if !text.is_empty() {
        let id = format!("msg_{response_id}");
        items.push(message_item(id, vec![output_text(text)], "completed"));
    }
    items
}

/// An answer's output items read back as blocks, and whether the model called a function.
/// Items and parts Laneway does not read are skipped; reasoning with neither text nor
/// encrypted content is nothing.
pub(crate) fn read_output(items: Vec<Item<'_>>) -> (Vec<OutputBlock>, bool) {
    let mut content = Vec::new();
    let mut called = false;
    for item in items {
        match item {
            Item::Message(m) => match m.content {
                Some(Content::Text(t)) => content.push(OutputBlock::Text(t.into_owned())),
                Some(Content::Parts(parts)) => {
                    for p in parts {
                        match p {
                            Part::OutputText { text, .. } | Part::Text { text } => {
                                content.push(OutputBlock::Text(text.into_owned()))
                            }
                            Part::Refusal { refusal } => {
                                content.push(OutputBlock::Text(refusal.into_owned()))
                            }
                            _ => {}
                        }
                    }
                }
                None => {}
            },
            Item::FunctionCall(c) => {
                called = true;
                content.push(OutputBlock::ToolUse {
                    input: arguments(&c.arguments),
                    id: c.call_id.into_owned(),
                    name: c.name.into_owned(),
                });
            }
            Item::Reasoning(r) => {
                let text = r.text();
                if !text.is_empty() || r.encrypted_content.is_some() {
                    content.push(OutputBlock::Reasoning(ReasoningBlock::Text(
                        ReasoningText {
                            text,
                            signature: r.encrypted_content.map(Cow::into_owned),
                            id: r.id.map(Cow::into_owned),
                        },
                    )));
                }
            }
            Item::FunctionCallOutput(_) | Item::Other => {}
        }
    }
    (content, called)
}

/// A function call's arguments as JSON (the text itself when it does not parse).
pub(crate) fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// A function tool as the Responses API lists it (flat, unlike Chat Completions').
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    strict: bool,
}

/// The function tools of a request (checkpoints have no place there and are left out).
pub(crate) fn tools(tools: &[Tool]) -> Vec<FunctionTool<'_>> {
    tools
        .iter()
        .filter_map(|t| match t {
            Tool::Spec(s) => Some(FunctionTool {
                kind: "function",
                name: &s.name,
                description: s.description.as_deref(),
                parameters: &s.input_schema,
                strict: s.strict,
            }),
            Tool::CachePoint(_) => None,
        })
        .collect()
}

/// A request's `tools` read back; anything but a named function tool is refused by its path.
pub(crate) fn read_tools(v: Option<&Value>) -> Result<Vec<Tool>> {
    let Some(list) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| Error::invalid("tools", "a list of tools"))?;
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(Error::invalid(
                    format!("tools[{i}].type"),
                    "only function tools are routed by Laneway",
                ));
            }
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| Error::invalid(format!("tools[{i}].name"), "required"))?;
            // Read leniently, as the API does: a description that is not text, or a
            // `strict` that is not a boolean, means none.
            Ok(Tool::Spec(ToolSpec {
                name: name.to_string(),
                description: t
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                input_schema: t
                    .get("parameters")
                    .filter(|p| !p.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
                strict: t.get("strict").and_then(Value::as_bool).unwrap_or(false),
            }))
        })
        .collect()
}

/// The tool choice in the Responses API's words (a function named flat).
pub(crate) fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Any => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
    }
}

/// A request's `tool_choice` read back; `none` is no choice.
pub(crate) fn read_tool_choice(v: Option<&Value>) -> Result<Option<ToolChoice>> {
    chat::read_tool_choice_at(v, "/name", "{ type: \"function\", name }")
}

/// `incomplete_details`: why a response stopped short.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Incomplete {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// A response's `status` and `incomplete_details` for why it stopped.
pub(crate) fn status(stop: &StopReason) -> (&'static str, Option<Incomplete>) {
    match stop.as_responses_incomplete() {
        Some(reason) => (
            "incomplete",
            Some(Incomplete {
                reason: Some(reason.to_string()),
            }),
        ),
        None => ("completed", None),
    }
}

/// Why a response ended, read back from its status (`called`: it made a function call).
pub(crate) fn stop_reason(
    status: Option<&str>,
    incomplete: Option<&Incomplete>,
    called: bool,
) -> StopReason {
    match status {
        Some("incomplete") => {
            StopReason::from_responses_incomplete(incomplete.and_then(|i| i.reason.as_deref()))
        }
        _ if called => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// A `response` object: what the backend reads of an answer, and what the drop-in writes
/// (with the request-echo fields the SDKs' types require; Laneway echoes defaults, and a
/// reader skips them: a service echoes the whole tool list and instructions).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Response<'a> {
    #[serde(skip_deserializing)]
    pub(crate) id: Cow<'a, str>,
    #[serde(skip_deserializing)]
    pub(crate) object: Cow<'a, str>,
    #[serde(skip_deserializing)]
    pub(crate) created_at: u64,
    #[serde(default, borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
    #[serde(skip_deserializing)]
    pub(crate) model: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) output: Option<Vec<Item<'a>>>,
    #[serde(default)]
    pub(crate) usage: Option<ResponsesUsage>,
    #[serde(default)]
    pub(crate) incomplete_details: Option<Incomplete>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
    #[serde(default, borrow)]
    pub(crate) service_tier: Option<Cow<'a, str>>,
    #[serde(skip_deserializing)]
    pub(crate) instructions: Option<Value>,
    #[serde(skip_deserializing)]
    pub(crate) metadata: Option<Value>,
    #[serde(skip_deserializing)]
    pub(crate) parallel_tool_calls: Option<bool>,
    #[serde(skip_deserializing)]
    pub(crate) temperature: Option<f64>,
    #[serde(skip_deserializing)]
    pub(crate) top_p: Option<f64>,
    #[serde(skip_deserializing)]
    pub(crate) tool_choice: Option<Value>,
    #[serde(skip_deserializing)]
    pub(crate) tools: Option<Vec<Value>>,
    /// The SDKs' convenience: the answer's text (written on a stream's last event).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) output_text: Option<Cow<'a, str>>,
}

impl<'a> Response<'a> {
    /// A response as the drop-in writes it, in `status`, with no output yet.
    pub(crate) fn written(id: &'a str, created_at: u64, status: &'a str, model: &'a str) -> Self {
        Self {
            id: Cow::Borrowed(id),
            object: Cow::Borrowed("response"),
            created_at,
            status: Some(Cow::Borrowed(status)),
            model: Cow::Borrowed(model),
            output: Some(Vec::new()),
            metadata: Some(json!({})),
            parallel_tool_calls: Some(true),
            tool_choice: Some(json!("auto")),
            tools: Some(Vec::new()),
            ..Self::default()
        }
    }

    /// An answer as response `id`: its usage and status filled in, its output items left for
    /// the writer (whole, from its blocks; streamed, as the events named them).
    pub(crate) fn of(
        r: &'a GenerateResponse,
        id: &'a str,
        created_at: u64,
        model: &'a str,
    ) -> Self {
        let (status, incomplete) = status(&r.stop_reason);
        Self {
            usage: Some(ResponsesUsage::of(&r.usage)),
            incomplete_details: incomplete,
            service_tier: Some(Cow::Borrowed(chat::served_tier_word(r))),
            ..Self::written(id, created_at, status, model)
        }
    }
}

/// One stream event (`response.output_text.delta`, ..., `response.completed`), numbered by
/// `sequence_number`; `R` is its `response`, read as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event<'a, R> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sequence_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) item_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary_index: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) item: Option<Item<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) part: Option<Part<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) delta: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    pub(crate) arguments: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) logprobs: Option<Unread>,
    /// An `error` event's error, nested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<Value>,
    /// An `error` event's code and message, flat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

impl<'a, R> Event<'a, R> {
    /// An event of `kind`, numbered `sequence_number`, with nothing else yet.
    pub(crate) fn new(kind: &'a str, sequence_number: u64) -> Self {
        Self {
            kind: Cow::Borrowed(kind),
            sequence_number: Some(sequence_number),
            response: None,
            item_id: None,
            output_index: None,
            content_index: None,
            summary_index: None,
            item: None,
            part: None,
            delta: None,
            text: None,
            name: None,
            arguments: None,
            logprobs: None,
            error: None,
            code: None,
            message: None,
        }
    }
}

/// An output item being streamed.
#[derive(Debug)]
enum Open {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
        encrypted: Option<String>,
    },
    Call {
        id: String,
        name: String,
        arguments: String,
    },
}

impl Open {
    /// The item as it is so far, in `status`.
    fn item<'a>(&'a self, status: &'a str) -> Item<'a> {
        match self {
            Open::Message { id, text } => {
                let content = if status == "in_progress" {
                    Vec::new()
                } else {
                    vec![output_text(text.as_str())]
                };
                message_item(id.as_str(), content, status)
            }
            Open::Reasoning {
                id,
                text,
                encrypted,
            } => reasoning_item(id, text, encrypted.as_deref()),
            Open::Call {
                id,
                name,
                arguments,
            } => call_item(id, name, arguments, status),
        }
    }
}

type Written<'a> = Event<'a, Response<'a>>;

/// Writes a stream's events as the Responses API's typed events, numbered: `response.created`
/// and `response.in_progress`, each output item added, its deltas and done events, and
/// `response.completed` (or `response.incomplete`) with the whole response.
#[derive(Debug)]
pub(crate) struct StreamWriter {
    id: String,
    created_at: u64,
    model: String,
    sequence: u64,
    started: bool,
    /// Output items so far: the core's block index of each, and its state.
    items: Vec<(u32, Open)>,
}

impl StreamWriter {
    /// Events of response `id`, created at `created_at` (unix seconds), for a call to `model`.
    pub(crate) fn new(id: String, created_at: u64, model: &str) -> Self {
        Self {
            id,
            created_at,
            model: model.to_string(),
            sequence: 0,
            started: false,
            items: Vec::new(),
        }
    }

    /// An event of `kind`, numbered next.
    fn next<'a>(sequence: &mut u64, kind: &'a str) -> Written<'a> {
        let e = Event::new(kind, *sequence);
        *sequence += 1;
        e
    }

    /// An event about output item `at`, numbered next.
    fn about<'a>(sequence: &mut u64, kind: &'a str, at: usize, item_id: &'a str) -> Written<'a> {
        Written {
            output_index: u32::try_from(at).ok(),
            item_id: Some(Cow::Borrowed(item_id)),
            ..Self::next(sequence, kind)
        }
    }

    /// The output index of block `index`, opening its item with `open` if it is new.
    fn item(&mut self, index: u32, open: impl FnOnce() -> Open, out: &mut Vec<Value>) -> usize {
        if let Some(at) = self.items.iter().position(|(i, _)| *i == index) {
            return at;
        }
        let at = self.items.len();
        self.items.push((index, open()));
        let state = &self.items[at].1;
        let seq = &mut self.sequence;
        out.push(json_of(&Written {
            output_index: u32::try_from(at).ok(),
            item: Some(state.item("in_progress")),
            ..Self::next(seq, "response.output_item.added")
        }));
        match state {
            Open::Message { id, .. } => out.push(json_of(&Written {
                content_index: Some(0),
                part: Some(output_text("")),
                ..Self::about(seq, "response.content_part.added", at, id)
            })),
            Open::Reasoning { id, .. } => out.push(json_of(&Written {
                summary_index: Some(0),
                part: Some(Part::SummaryText {
                    text: Cow::Borrowed(""),
                }),
                ..Self::about(seq, "response.reasoning_summary_part.added", at, id)
            })),
            Open::Call { .. } => {}
        }
        at
    }

    /// The typed events of one stream event.
    pub(crate) fn on(&mut self, ev: &StreamEvent) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            for kind in ["response.created", "response.in_progress"] {
                let shell =
                    Response::written(&self.id, self.created_at, "in_progress", &self.model);
                out.push(json_of(&Written {
                    response: Some(shell),
                    ..Self::next(&mut self.sequence, kind)
                }));
            }
        }
        let response_id = self.id.clone();
        match ev {
            StreamEvent::TextDelta { index, text } => {
                let at = self.item(
                    *index,
                    || Open::Message {
                        id: format!("msg_{response_id}_{index}"),
                        text: String::new(),
                    },
                    &mut out,
                );
                if let Open::Message { id, text: all } = &mut self.items[at].1 {
                    all.push_str(text);
                    out.push(json_of(&Written {
                        content_index: Some(0),
                        delta: Some(Cow::Borrowed(text)),
                        logprobs: Some(Unread),
                        ..Self::about(&mut self.sequence, "response.output_text.delta", at, id)
                    }));
                }
            }
            StreamEvent::ReasoningDelta { index, delta } => {
                let at = self.item(
                    *index,
                    || Open::Reasoning {
                        id: format!("rs_{response_id}_{index}"),
                        text: String::new(),
                        encrypted: None,
                    },
                    &mut out,
                );
                if let Open::Reasoning {
                    id,
                    text,
                    encrypted,
                } = &mut self.items[at].1
                {
                    match delta {
                        ReasoningDelta::Text(t) => {
                            text.push_str(t);
                            out.push(json_of(&Written {
                                summary_index: Some(0),
                                delta: Some(Cow::Borrowed(t)),
                                ..Self::about(
                                    &mut self.sequence,
                                    "response.reasoning_summary_text.delta",
                                    at,
                                    id,
                                )
                            }));
                        }
                        ReasoningDelta::Signature(s) => {
                            encrypted.get_or_insert_with(String::new).push_str(s)
                        }
                        ReasoningDelta::Id(i) => *id = i.clone(),
                        ReasoningDelta::Redacted(_) => {}
                    }
                }
            }
            StreamEvent::ToolUseStart { index, id, name } => {
                let (id, name) = (id.clone(), name.clone());
                self.item(
                    *index,
                    || Open::Call {
                        id,
                        name,
                        arguments: String::new(),
                    },
                    &mut out,
                );
            }
            StreamEvent::ToolUseDelta { index, input_json } => {
                if let Some(at) = self.items.iter().position(|(i, _)| i == index)
                    && let Open::Call { id, arguments, .. } = &mut self.items[at].1
                {
                    arguments.push_str(input_json);
                    let item_id = format!("fc_{id}");
                    out.push(json_of(&Written {
                        delta: Some(Cow::Borrowed(input_json)),
                        ..Self::about(
                            &mut self.sequence,
                            "response.function_call_arguments.delta",
                            at,
                            &item_id,
                        )
                    }));
                }
            }
            StreamEvent::Completed(r) => self.complete(r, &mut out),
            _ => {}
        }
        out
    }

    /// Each open item's done events, then the terminal event with the whole response.
    fn complete(&mut self, r: &GenerateResponse, out: &mut Vec<Value>) {
        let items = std::mem::take(&mut self.items);
        let seq = &mut self.sequence;
        for (at, (_, open)) in items.iter().enumerate() {
            match open {
                Open::Message { id, text } => {
                    out.push(json_of(&Written {
                        content_index: Some(0),
                        text: Some(Cow::Borrowed(text)),
                        logprobs: Some(Unread),
                        ..Self::about(seq, "response.output_text.done", at, id)
                    }));
                    out.push(json_of(&Written {
                        content_index: Some(0),
                        part: Some(output_text(text.as_str())),
                        ..Self::about(seq, "response.content_part.done", at, id)
                    }));
                }
                Open::Reasoning { id, text, .. } => {
                    out.push(json_of(&Written {
                        summary_index: Some(0),
                        text: Some(Cow::Borrowed(text)),
                        ..Self::about(seq, "response.reasoning_summary_text.done", at, id)
                    }));
                    out.push(json_of(&Written {
                        summary_index: Some(0),
                        part: Some(Part::SummaryText {
                            text: Cow::Borrowed(text),
                        }),
                        ..Self::about(seq, "response.reasoning_summary_part.done", at, id)
                    }));
                }
                Open::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let item_id = format!("fc_{id}");
                    out.push(json_of(&Written {
                        name: Some(Cow::Borrowed(name)),
                        arguments: Some(Cow::Borrowed(arguments)),
                        ..Self::about(seq, "response.function_call_arguments.done", at, &item_id)
                    }));
                }
            }
            out.push(json_of(&Written {
                output_index: u32::try_from(at).ok(),
                item: Some(open.item("completed")),
                ..Self::next(seq, "response.output_item.done")
            }));
        }
        let mut whole = Response::of(r, &self.id, self.created_at, &self.model);
        // The items as streamed, with the ids the events named.
        whole.output = Some(
            items
                .iter()
                .map(|(_, open)| open.item("completed"))
                .collect(),
        );
        let kind = match whole.status.as_deref() {
            Some("completed") => "response.completed",
            _ => "response.incomplete",
        };
        whole.output_text = Some(Cow::Owned(r.text()));
        out.push(json_of(&Written {
            response: Some(whole),
            ..Self::next(seq, kind)
        }));
    }
}

/// An event as JSON (the types serialize infallibly: no map has keys that are not text).
fn json_of(event: &Written<'_>) -> Value {
    serde_json::to_value(event).unwrap_or_default()
}

/// The Responses API's usage: `input_tokens` counts cached ones too (and, on Bedrock, those
/// written to the cache), `output_tokens` counts reasoning.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ResponsesUsage {
    /// Every input token, cached or written to the cache or not.
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    /// Every output token, reasoning included.
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    /// Their sum (written; not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_tokens: Option<u64>,
    /// The cache's share of the input.
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
    /// Reasoning's share of the output.
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InputDetails {
    /// Input read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
    /// Bedrock's extension: the prefix written to the cache.
    #[serde(default)]
    pub(crate) cache_write_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutputDetails {
    /// Output spent reasoning.
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl ResponsesUsage {
    /// The core's usage as the Responses API counts it.
    pub(crate) fn of(u: &Usage) -> Self {
        let input = u64::from(u.total_input_tokens());
        let output = u64::from(u.output_tokens);
        Self {
            input_tokens: Some(input),
            output_tokens: Some(output),
            total_tokens: Some(input + output),
            input_tokens_details: Some(InputDetails {
                cached_tokens: Some(u64::from(u.cache_read_tokens)),
                cache_write_tokens: Some(u64::from(u.cache_write_tokens)),
            }),
            output_tokens_details: Some(OutputDetails {
                reasoning_tokens: Some(u64::from(u.reasoning_tokens)),
            }),
        }
    }

    /// The usage an answer reports, as the core's (missing counts are 0).
    pub(crate) fn into_usage(self) -> Usage {
        let n = |v: Option<u64>| v.map_or(0, crate::types::units::token_count);
        let input = self.input_tokens_details.as_ref();
        let cached = n(input.and_then(|d| d.cached_tokens));
        let written = n(input.and_then(|d| d.cache_write_tokens));
        Usage {
            input_tokens: n(self.input_tokens)
                .saturating_sub(cached)
                .saturating_sub(written),
            output_tokens: n(self.output_tokens),
            cache_read_tokens: cached,
            cache_write_tokens: written,
            reasoning_tokens: n(self.output_tokens_details.and_then(|d| d.reasoning_tokens)),
            ..Usage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Text with what JSON escapes (quotes, backslashes, newlines, non-ASCII), so that texts
    /// that cannot be borrowed are read too.
    fn text() -> impl Strategy<Value = String> {
        "[a-z \"\\\\\n\u{e9}\u{1f600}]{1,16}"
    }

    /// A conversation as agents hold it in turns that alternate: a user's text (after the
    /// results of the calls the model made before), the model's reasoning, text and calls.
    fn conversation() -> impl Strategy<Value = Vec<Message>> {
        let call = ("[a-z_]{1,8}", text(), text());
        let turn = (
            text(),
            proptest::option::of((text(), proptest::option::of("[A-Za-z0-9+/]{4,12}"))),
            text(),
            proptest::collection::vec(call, 0..3),
        );
        proptest::collection::vec(turn, 1..4).prop_map(|turns| {
            let mut out = Vec::new();
            let mut results = Vec::new();
            for (t, (asked, reasoning, answer, calls)) in turns.into_iter().enumerate() {
                let mut user = std::mem::take(&mut results);
                user.push(ContentBlock::Text(asked));
                out.push(Message {
                    role: Role::User,
                    content: user,
                });
                let mut content = Vec::new();
                if let Some((text, signature)) = reasoning {
                    content.push(ContentBlock::Reasoning(ReasoningBlock::Text(
                        ReasoningText {
                            text,
                            signature,
                            id: Some(format!("rs_{t}")),
                        },
                    )));
                }
                content.push(ContentBlock::Text(answer));
                for (k, (name, arg, result)) in calls.into_iter().enumerate() {
                    let id = format!("call_{t}_{k}");
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id: id.clone(),
                        name,
                        input: json!({ "q": arg }),
                    }));
                    results.push(ContentBlock::ToolResult(ToolResult {
                        tool_use_id: id,
                        content: vec![ToolResultContent::Text(result)],
                        is_error: false,
                    }));
                }
                out.push(Message {
                    role: Role::Assistant,
                    content,
                });
            }
            out
        })
    }

    fn senders() -> Senders<'static> {
        Senders {
            image: &|_, at| Err(Error::invalid(at, "no images here")),
            tool_result: &|content, _| {
                Ok(content
                    .iter()
                    .filter_map(|c| c.text())
                    .collect::<Vec<_>>()
                    .concat())
            },
            unsupported: &|_, at| Error::invalid(at, "unsupported"),
        }
    }

    /// An answer's blocks in the order output items keep: reasoning, calls, then the text.
    fn answer() -> impl Strategy<Value = Vec<OutputBlock>> {
        (
            proptest::option::of((text(), "[A-Za-z0-9+/]{4,12}")),
            proptest::collection::vec(("[a-z_]{1,8}", text()), 0..3),
            proptest::option::of(text()),
        )
            .prop_map(|(reasoning, calls, said)| {
                let mut blocks = Vec::new();
                if let Some((text, signature)) = reasoning {
                    blocks.push(OutputBlock::Reasoning(ReasoningBlock::Text(
                        ReasoningText {
                            text,
                            signature: Some(signature),
                            id: Some("rs_1".into()),
                        },
                    )));
                }
                for (k, (name, arg)) in calls.into_iter().enumerate() {
                    blocks.push(OutputBlock::ToolUse {
                        id: format!("call_{k}"),
                        name,
                        input: json!({ "q": arg }),
                    });
                }
                blocks.extend(said.map(OutputBlock::Text));
                blocks
            })
    }

    proptest! {
        /// What the backend writes as `input`, the drop-in reads back as it was: texts,
        /// reasoning by its id with its encrypted content, calls and their outputs.
        #[test]
        fn a_conversation_written_as_input_reads_back_as_it_was(turns in conversation()) {
            let written = serde_json::to_value(input(&turns, &senders(), true, &[]).unwrap()).unwrap();
            let (system, read) = read_input(Some(&written)).unwrap();
            prop_assert!(system.is_empty());
            prop_assert_eq!(read, turns);
        }

        /// What the drop-in writes as an answer's `output`, the backend reads back as the
        /// answer's blocks, and knows whether the model called a function.
        #[test]
        fn an_answer_written_as_output_reads_back_as_its_blocks(blocks in answer()) {
            let written = serde_json::to_string(&output(&blocks, "resp_1")).unwrap();
            let items: Vec<Item<'_>> = serde_json::from_str(&written).unwrap();
            let (read, called) = read_output(items);
            prop_assert_eq!(called, blocks.iter().any(|b| matches!(b, OutputBlock::ToolUse { .. })));
            prop_assert_eq!(read, blocks);
        }
    }

    #[test]
    fn reasoning_of_other_apis_stays_home_and_what_has_no_place_is_refused() {
        let turns = vec![
            Message::user("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Reasoning(ReasoningBlock::Text(ReasoningText {
                        text: "hm".into(),
                        signature: Some("sig".into()),
                        id: Some("rs_1".into()),
                    })),
                    ContentBlock::Text("hello".into()),
                ],
            },
        ];
        let items = input(&turns, &senders(), false, &[]).unwrap();
        assert!(!items.iter().any(|i| matches!(i, Item::Reasoning(_))));
        let audio = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::GuardContent(
                crate::types::GuardContent::Text {
                    text: "x".into(),
                    qualifiers: Vec::new(),
                },
            )],
        }];
        let e = input(&audio, &senders(), true, &[]).unwrap_err();
        assert!(e.to_string().contains("messages[0].content[0]"), "{e}");
    }

    #[test]
    fn input_the_sdks_send_reads_and_what_laneway_cannot_route_is_refused_by_path() {
        let (system, turns) = read_input(Some(&json!([
            { "role": "developer", "content": "Be brief." },
            { "role": "user", "content": [{ "type": "input_text", "text": "Hi" }] },
            { "type": "message", "role": "assistant", "content": [
                { "type": "output_text", "text": "Hello", "annotations": [{ "type": "url_citation", "url": "https://x" }] },
            ] },
        ])))
        .unwrap();
        assert_eq!(system, vec![SystemBlock::Text("Be brief.".into())]);
        assert_eq!(turns[1].content, vec![ContentBlock::Text("Hello".into())]);
        for (items, path) in [
            (
                json!([{ "type": "web_search_call", "id": "ws_1" }]),
                "input[0].type",
            ),
            (
                json!([{ "role": "user", "content": [{ "type": "input_file", "file_id": "f" }] }]),
                "input[0].content[0]: a \"input_file\" part",
            ),
            (
                json!([{ "role": "user", "content": [{ "text": "x" }] }]),
                "input[0].content[0]: a content part needs a type",
            ),
            (
                json!([{ "type": "function_call", "call_id": "c", "name": "f", "arguments": "{" }]),
                "input[0].arguments",
            ),
            (json!([{ "role": "tool", "content": "x" }]), "input[0].role"),
            (json!([{ "role": "user" }]), "input[0].content"),
            (
                json!([{ "role": "user", "content": [{ "type": "input_image", "image_url": "https://x/a.png" }] }]),
                "input[0].content[0].image_url",
            ),
            (json!([{ "role": "user", "content": 7 }]), "input[0]"),
        ] {
            let e = read_input(Some(&items)).unwrap_err();
            assert!(e.to_string().contains(path), "{path}: {e}");
        }
    }

    #[test]
    fn output_from_other_servers_reads_leniently_in_one_pass() {
        // Nulls where strings go, an item and a part without a type, echoed fields of any
        // shape: read as nothing, skipped, or ignored, never a failure.
        let body = json!({ "id": null, "created_at": 1.5, "model": null, "status": "completed",
            "tools": [{ "type": "web_search" }], "instructions": [{ "role": "system" }],
            "output": [
                { "id": "x" },
                { "type": "message", "role": "assistant", "content": [{ "text": "lost" }, { "type": "output_text", "text": null }, { "type": "output_text", "text": "Hi" }] },
                { "type": "function_call", "call_id": "c1", "name": "f", "arguments": null },
                { "type": "reasoning", "summary": null, "content": [{ "type": "reasoning_text", "text": "hm" }] },
            ] })
        .to_string();
        let r: Response<'_> = serde_json::from_str(&body).unwrap();
        let (blocks, called) = read_output(r.output.unwrap());
        assert!(called);
        assert_eq!(blocks[0], OutputBlock::Text(String::new()));
        assert_eq!(blocks[1], OutputBlock::Text("Hi".into()));
        assert!(matches!(&blocks[2], OutputBlock::ToolUse { name, .. } if name == "f"));
        assert!(
            matches!(&blocks[3], OutputBlock::Reasoning(ReasoningBlock::Text(t)) if t.text == "hm")
        );
        // Borrowed from the body where nothing is escaped.
        let v = r#"{"type":"message","role":"assistant","content":"plain"}"#;
        let Item::Message(m) = serde_json::from_str::<Item<'_>>(v).unwrap() else {
            panic!()
        };
        assert!(matches!(
            m.content,
            Some(Content::Text(Cow::Borrowed("plain")))
        ));
    }

    #[test]
    fn a_response_reads_its_usage_status_and_items_skipping_those_laneway_does_not_read() {
        let body = json!({ "id": "resp_1", "status": "incomplete",
            "incomplete_details": { "reason": "max_output_tokens" },
            "output": [
                { "type": "web_search_call", "id": "ws_1", "status": "completed" },
                { "type": "message", "role": "assistant", "content": [{ "type": "refusal", "refusal": "No." }] },
            ],
            "usage": { "input_tokens": 10, "output_tokens": 2 } })
        .to_string();
        let r: Response<'_> = serde_json::from_str(&body).unwrap();
        let stop = stop_reason(r.status.as_deref(), r.incomplete_details.as_ref(), false);
        assert_eq!(stop, StopReason::MaxTokens);
        let (blocks, called) = read_output(r.output.unwrap());
        assert_eq!(
            (blocks, called),
            (vec![OutputBlock::Text("No.".into())], false)
        );
        assert_eq!(status(&stop).0, "incomplete");
    }

    proptest! {
        /// Usage written by the drop-in reads back in the backend as the same counts.
        #[test]
        fn usage_reads_back_as_written(input in 0u32..1_000_000, read in 0u32..1_000_000, written in 0u32..1_000_000, output in 0u32..1_000_000, reasoning in 0u32..1_000) {
            let u = Usage { input_tokens: input, cache_read_tokens: read, cache_write_tokens: written, output_tokens: output, reasoning_tokens: reasoning.min(output), ..Usage::default() };
            let wire = serde_json::to_value(ResponsesUsage::of(&u)).unwrap();
            let back: ResponsesUsage = serde_json::from_value(wire).unwrap();
            prop_assert_eq!(back.into_usage(), u);
        }
    }

    /// A caller's breakpoint is not dropped: it is a 30-minute checkpoint after its part, in
    /// the system prompt or the conversation alike.
    #[test]
    fn a_breakpoint_read_is_a_checkpoint_after_its_part() {
        use crate::types::{CachePoint, CacheTtl};
        let mark = json!({ "mode": "explicit" });
        let items = json!([
            { "role": "developer", "content": [{ "type": "input_text", "text": "rules", "prompt_cache_breakpoint": mark }] },
            { "role": "user", "content": [{ "type": "input_text", "text": "q", "prompt_cache_breakpoint": mark }, { "type": "input_text", "text": "tail" }] },
        ]);
        let (system, messages) = read_input(Some(&items)).unwrap();
        let point = CachePoint {
            ttl: Some(CacheTtl::ThirtyMinutes),
        };
        assert_eq!(
            system,
            [
                SystemBlock::Text("rules".into()),
                SystemBlock::CachePoint(point)
            ]
        );
        assert_eq!(
            messages[0].content,
            [
                ContentBlock::Text("q".into()),
                ContentBlock::CachePoint(point),
                ContentBlock::Text("tail".into())
            ]
        );
    }
}
