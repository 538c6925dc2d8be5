//! Bedrock guardrails as the emulator applies them: a scenario's guardrails block words and
//! block or mask PII (e-mail addresses, phone numbers) in the request's guarded content and in
//! the answer, and report what they found in `trace.guardrail`, in Converse's shape.

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A guardrail of the scenario (`[[guardrails]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardrailSpec {
    /// Its id (the last part of its ARN).
    pub id: String,
    /// Regions where it exists; empty: every region.
    #[serde(default)]
    pub regions: Vec<String>,
    /// Words it blocks, in the request or the answer (case-insensitive, whole words).
    #[serde(default)]
    pub blocked_words: Vec<String>,
    /// PII it finds, and what it does with it.
    #[serde(default)]
    pub pii: Vec<PiiRule>,
    /// The answer given instead of the model's when the input is blocked (default: "Sorry, the
    /// model cannot answer this question.").
    #[serde(default = "default_blocked_input")]
    pub blocked_input_message: String,
    /// The answer given instead of the model's when the answer is blocked (default as
    /// `blocked_input_message`).
    #[serde(default = "default_blocked_output")]
    pub blocked_output_message: String,
}

fn default_blocked_input() -> String {
    "Sorry, the model cannot answer this question.".into()
}

fn default_blocked_output() -> String {
    "Sorry, the model cannot answer this question.".into()
}

/// One kind of PII and its action.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiiRule {
    /// `EMAIL` or `PHONE`.
    #[serde(rename = "type")]
    pub kind: PiiKind,
    /// `BLOCK` or `ANONYMIZE`.
    pub action: PiiAction,
}

/// A kind of PII a guardrail finds (a `pii` rule's `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PiiKind {
    /// `EMAIL`: a word with a user, an `@` and a dotted host.
    #[serde(rename = "EMAIL")]
    Email,
    /// `PHONE`: a word of at least seven digits, with nothing else but `+-().`.
    #[serde(rename = "PHONE")]
    Phone,
}

impl PiiKind {
    fn name(self) -> &'static str {
        match self {
            PiiKind::Email => "EMAIL",
            PiiKind::Phone => "PHONE",
        }
    }
    fn matches(self, word: &str) -> bool {
        match self {
            PiiKind::Email => word.split_once('@').is_some_and(|(user, host)| {
                !user.is_empty()
                    && host.contains('.')
                    && !host.starts_with('.')
                    && !host.ends_with('.')
            }),
            PiiKind::Phone => {
                word.chars().filter(char::is_ascii_digit).count() >= 7
                    && word
                        .chars()
                        .all(|c| c.is_ascii_digit() || "+-().".contains(c))
            }
        }
    }
}

/// What a guardrail does with PII it finds (a `pii` rule's `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PiiAction {
    /// `BLOCK`: the input or the answer is blocked, and its blocked message answered instead.
    #[serde(rename = "BLOCK")]
    Block,
    /// `ANONYMIZE`: masked in the answer as `{EMAIL}` or `{PHONE}`; in the input, only
    /// reported.
    #[serde(rename = "ANONYMIZE")]
    Anonymize,
}

/// What the request asked: the guardrail, its trace, and the text it is to evaluate.
#[derive(Debug, Clone)]
pub(crate) struct GuardAsk {
    pub identifier: String,
    pub version: String,
    pub trace: String,
    pub input: String,
}

/// What a guardrail did to one call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// It intervened: the stop reason is `guardrail_intervened`.
    pub intervened: bool,
    /// The input was blocked: the model was not called (no tokens counted).
    pub input_blocked: bool,
    /// `trace.guardrail`, when the request's trace is on.
    pub trace: Option<Value>,
}

/// Findings in one text: the assessment (Converse's shape), whether to block, and the text
/// with anonymized PII masked.
struct Findings {
    assessment: Value,
    block: bool,
    masked: String,
    found: bool,
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| ",;:!?\"'()[]".contains(c))
                .trim_end_matches('.')
        })
        .filter(|w| !w.is_empty())
}

impl GuardrailSpec {
    fn assess(&self, text: &str) -> Findings {
        let mut custom = Vec::new();
        for w in &self.blocked_words {
            if words(text).any(|x| x.eq_ignore_ascii_case(w)) {
                custom.push(json!({ "match": w, "action": "BLOCKED", "detected": true }));
            }
        }
        let mut pii = Vec::new();
        let mut block = !custom.is_empty();
        let mut masked = text.to_string();
        for rule in &self.pii {
            for w in words(text).filter(|w| rule.kind.matches(w)) {
                let action = match rule.action {
                    PiiAction::Block => {
                        block = true;
                        "BLOCKED"
                    }
                    PiiAction::Anonymize => {
                        masked = masked.replace(w, &format!("{{{}}}", rule.kind.name()));
                        "ANONYMIZED"
                    }
                };
                pii.push(json!({ "match": w, "type": rule.kind.name(), "action": action, "detected": true }));
            }
        }
        let mut assessment = Map::new();
        if !custom.is_empty() {
            assessment.insert("wordPolicy".into(), json!({ "customWords": custom }));
        }
        if !pii.is_empty() {
            assessment.insert(
                "sensitiveInformationPolicy".into(),
                json!({ "piiEntities": pii }),
            );
        }
        let found = !assessment.is_empty();
        let chars = text.chars().count();
        assessment.insert(
            "invocationMetrics".into(),
            json!({
                "guardrailProcessingLatency": 1,
                "usage": {
                    "topicPolicyUnits": 0, "contentPolicyUnits": 0,
                    "wordPolicyUnits": u32::from(!self.blocked_words.is_empty()),
                    "sensitiveInformationPolicyUnits": u32::from(!self.pii.is_empty()),
                    "sensitiveInformationPolicyFreeUnits": 0, "contextualGroundingPolicyUnits": 0,
                },
                "guardrailCoverage": { "textCharacters": { "guarded": chars, "total": chars } },
            }),
        );
        Findings {
            assessment: Value::Object(assessment),
            block,
            masked,
            found,
        }
    }
}

/// The guardrail an identifier (an id or an ARN) names in `region`, or Bedrock's 400 text.
pub(crate) fn find<'s>(
    guardrails: &'s [GuardrailSpec],
    ask: &GuardAsk,
    region: &str,
) -> Result<&'s GuardrailSpec, String> {
    let id = ask
        .identifier
        .rsplit_once(":guardrail/")
        .map_or(ask.identifier.as_str(), |(_, id)| id);
    let arn_region = ask
        .identifier
        .strip_prefix("arn:")
        .and_then(|rest| rest.split(':').nth(2));
    let version_ok = ask.version == "DRAFT"
        || (!ask.version.starts_with('0')
            && !ask.version.is_empty()
            && ask.version.chars().all(|c| c.is_ascii_digit()));
    guardrails
        .iter()
        .find(|g| {
            g.id == id
                && version_ok
                && arn_region.is_none_or(|r| r == region)
                && (g.regions.is_empty() || g.regions.iter().any(|r| r == region))
        })
        .ok_or_else(|| {
            "The guardrail identifier or version provided in the request does not exist.".into()
        })
}

/// Applies `g` to the request's guarded input: `Some(outcome)` when it blocks the input (the
/// answer is then its blocked message).
pub(crate) fn check_input(g: &GuardrailSpec, ask: &GuardAsk) -> (Option<Outcome>, Option<Value>) {
    let f = g.assess(&ask.input);
    let assessment = f.found.then(|| json!({ &g.id: f.assessment }));
    if !f.block {
        return (None, assessment);
    }
    let trace = (ask.trace != "disabled").then(|| {
        json!({ "inputAssessment": assessment.clone().unwrap_or_default(), "actionReason": "Guardrail blocked." })
    });
    (
        Some(Outcome {
            intervened: true,
            input_blocked: true,
            trace,
        }),
        None,
    )
}

/// Applies `g` to the answer: the text to give instead (its blocked message, or the masked
/// text), and the outcome. `input` is what the input check found without blocking.
pub(crate) fn check_output(
    g: &GuardrailSpec,
    ask: &GuardAsk,
    answer: &str,
    input: Option<Value>,
) -> (Option<String>, Outcome) {
    let f = g.assess(answer);
    let intervened = f.found || input.is_some();
    let replaced = if f.block {
        Some(g.blocked_output_message.clone())
    } else if f.masked != answer {
        Some(f.masked.clone())
    } else {
        None
    };
    let trace = (ask.trace != "disabled" && intervened).then(|| {
        let mut t = Map::new();
        if replaced.is_some() {
            t.insert("modelOutput".into(), json!([answer]));
        }
        if let Some(i) = input {
            t.insert("inputAssessment".into(), i);
        }
        if f.found {
            t.insert("outputAssessments".into(), json!({ &g.id: [f.assessment] }));
        }
        t.insert(
            "actionReason".into(),
            json!(if f.block {
                "Guardrail blocked."
            } else {
                "Guardrail masked."
            }),
        );
        Value::Object(t)
    });
    (
        replaced,
        Outcome {
            intervened,
            input_blocked: false,
            trace,
        },
    )
}
