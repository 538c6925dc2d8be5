//! Faults: outages, throttle storms, cold starts, broken streams and slow first tokens, injected
//! from the scenario file or at run time through the control API.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Every matching request is refused with ServiceUnavailableException (503).
    Outage,
    /// Every matching request is refused with ThrottlingException (429).
    Throttle,
    /// ModelNotReadyException (429), as a cold SageMaker endpoint or a loading model answers.
    ModelNotReady,
    /// InternalServerException (500).
    InternalError,
    /// The stream breaks after `after_tokens` tokens with an exception inside the stream.
    BreakStream,
    /// The first token comes `delay_ms` later than it would.
    SlowFirstToken,
    /// The request is accepted and never answered: no status line, no headers, ever.
    Stall,
    /// The status and headers are sent, then nothing more.
    StallAfterHeaders,
    /// A stream (or a body) goes quiet after `after_tokens` tokens and never resumes.
    StallMidStream,
    /// After `after_tokens` tokens (or right after the headers), the rest of the answer
    /// trickles one byte every `delay_ms` (default 2,000 ms of wall-clock time, not
    /// time-scaled): bytes keep coming, whole events do not.
    Trickle,
    /// The connection is closed abruptly: right after the headers, or after `after_tokens`
    /// tokens when set.
    Reset,
    /// A body cut short (shorter than its `Content-Length`), or a stream whose frame after
    /// `after_tokens` tokens is cut in half before the connection ends.
    Truncate,
    /// A 200 whose JSON does not parse (for a stream: the event after `after_tokens` tokens).
    MalformedJson,
    /// An event-stream frame with a wrong CRC after `after_tokens` tokens.
    BadFrame,
    /// A load balancer's `502 Bad Gateway` HTML page instead of the service's JSON.
    HtmlError,
    /// A 429 throttle carrying `Retry-After: <retry_after>`, any value (even a bad one).
    RetryAfter,
    /// SageMaker: the container is overloaded: 424 ModelError wrapping the container's
    /// `status` (429 or 503; default 503).
    ContainerOverloaded,
    /// SageMaker: a container streaming plain JSON lines, without the `data:` prefix.
    PlainJsonLines,
    /// 403 AccessDeniedException, as Bedrock answers for a model not enabled in the region.
    AccessDenied,
    /// 403 ExpiredTokenException: the caller's session credentials have expired.
    ExpiredToken,
    /// 403 UnrecognizedClientException, as a region not enabled for the account (an opt-in
    /// region) answers credentials that every enabled region takes.
    RegionNotEnabled,
}

impl FaultKind {
    /// Whether the fault acts on the wire (the middleware in `wire::misbehave`) after the
    /// handler has built its answer.
    pub fn is_wire(self) -> bool {
        matches!(
            self,
            FaultKind::Stall
                | FaultKind::StallAfterHeaders
                | FaultKind::StallMidStream
                | FaultKind::Trickle
                | FaultKind::Reset
                | FaultKind::Truncate
                | FaultKind::MalformedJson
                | FaultKind::BadFrame
        )
    }
}

/// One fault and what it applies to. Unset filters match everything.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// What goes wrong: a [`FaultKind`], in snake_case (`kind = "outage"`, `"break_stream"`, ...).
    pub kind: FaultKind,
    /// Only requests signed for this region.
    #[serde(default)]
    pub region: Option<String>,
    /// Only this model (bare id; profile ids of the model match too) or SageMaker endpoint.
    #[serde(default)]
    pub model: Option<String>,
    /// Only this service tier (`default`, `priority`, `flex`, `reserved`).
    #[serde(default)]
    pub tier: Option<String>,
    /// Only requests to this surface: `bedrock` (Converse, InvokeModel), `bedrock-openai`
    /// (bedrock-runtime's `/openai/v1`), `bedrock-mantle` or `sagemaker`.
    #[serde(default)]
    pub surface: Option<String>,
    /// For `break_stream`: tokens delivered before the break.
    #[serde(default)]
    pub after_tokens: Option<u32>,
    /// For `break_stream`: the exception sent in the stream (default `modelStreamErrorException`
    /// on Bedrock, `ModelStreamError` on SageMaker).
    #[serde(default)]
    pub exception: Option<String>,
    /// For `slow_first_token`: extra milliseconds before the first token; for `trickle`, between
    /// two bytes (neither time-scaled).
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// For `retry_after`: the header's value, sent as is (`"3"`, `"3600"`, `"1e20"`, a date).
    #[serde(default)]
    pub retry_after: Option<String>,
    /// For `container_overloaded`: the container's status inside the ModelError (429 or 503).
    #[serde(default)]
    pub status: Option<u16>,
    /// How many requests it hits before it clears itself; unset: until removed.
    #[serde(default)]
    pub count: Option<u32>,
    /// The chance that it hits a request it matches (a fault rate, as `laneway twin fit`
    /// writes); unset: every one. Drawn from a sequence fixed by the fault's position, so a
    /// run is reproducible.
    #[serde(default)]
    pub probability: Option<f64>,
    /// Active from this many milliseconds after the emulator started: of scenario time for a
    /// fault in the scenario file (scaled by its `time_scale`), of real time for one added
    /// while it runs.
    #[serde(default)]
    pub start_ms: Option<u64>,
    /// Active until this many milliseconds after the emulator started (the same time as
    /// `start_ms`).
    #[serde(default)]
    pub end_ms: Option<u64>,
}

impl Fault {
    /// A fault of `kind` that matches every request, until narrowed with the `for_*` methods.
    ///
    /// ```
    /// use laneway_emulator::{Fault, FaultKind};
    /// let f = Fault::new(FaultKind::Outage).for_region("us-east-1").times(3);
    /// assert_eq!(f.count, Some(3));
    /// ```
    pub fn new(kind: FaultKind) -> Self {
        Self {
            kind,
            region: None,
            model: None,
            tier: None,
            surface: None,
            after_tokens: None,
            exception: None,
            delay_ms: None,
            retry_after: None,
            status: None,
            count: None,
            probability: None,
            start_ms: None,
            end_ms: None,
        }
    }
    /// Narrows the fault to one region.
    pub fn for_region(mut self, region: &str) -> Self {
        self.region = Some(region.into());
        self
    }
    /// Narrows the fault to one surface (`bedrock`, `bedrock-openai`, `bedrock-mantle`,
    /// `sagemaker`).
    pub fn for_surface(mut self, surface: &str) -> Self {
        self.surface = Some(surface.into());
        self
    }
    /// Narrows the fault to one model or endpoint.
    pub fn for_model(mut self, model: &str) -> Self {
        self.model = Some(model.into());
        self
    }
    /// Narrows the fault to one tier.
    pub fn for_tier(mut self, tier: &str) -> Self {
        self.tier = Some(tier.into());
        self
    }
    /// Clears the fault after it has hit `n` requests.
    pub fn times(mut self, n: u32) -> Self {
        self.count = Some(n);
        self
    }
    /// For the faults that act mid-stream: after `n` tokens.
    pub fn after(mut self, n: u32) -> Self {
        self.after_tokens = Some(n);
        self
    }
    /// A stream break after `n` tokens.
    pub fn break_after(n: u32) -> Self {
        Self {
            after_tokens: Some(n),
            ..Self::new(FaultKind::BreakStream)
        }
    }

    fn matches(&self, at: &Subject<'_>, since_start: Duration) -> bool {
        let ms = since_start.as_millis() as u64;
        let model_ok = self
            .model
            .as_deref()
            .is_none_or(|m| m == at.model || m == at.target);
        self.region.as_deref().is_none_or(|r| r == at.region)
            && model_ok
            && self.tier.as_deref().is_none_or(|t| t == at.tier)
            && self.surface.as_deref().is_none_or(|s| s == at.surface)
            && self.start_ms.is_none_or(|s| ms >= s)
            && self.end_ms.is_none_or(|e| ms < e)
            && self.count != Some(0)
    }
}

/// The request a fault is checked against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub region: &'a str,
    /// The bare model id or endpoint name.
    pub model: &'a str,
    /// The id as sent (a profile id, say).
    pub target: &'a str,
    pub tier: &'a str,
    /// The surface it came to (`bedrock`, `bedrock-openai`, `bedrock-mantle`, `sagemaker`).
    pub surface: &'a str,
}

/// The faults in force, each with an id for removal.
#[derive(Debug, Default)]
pub(crate) struct FaultRegistry {
    inner: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    faults: Vec<(u64, Fault)>,
    /// Draws made for faults with a probability.
    draws: u64,
}

/// A uniform number in [0, 1) from a fault's id and a draw's number (SplitMix64).
fn unit_draw(id: u64, draw: u64) -> f64 {
    let mut z = id
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(draw.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl FaultRegistry {
    /// Adds a fault and returns its id.
    pub(crate) fn add(&self, fault: Fault) -> u64 {
        let mut r = self.inner.lock().expect("fault registry lock");
        r.next_id += 1;
        let id = r.next_id;
        r.faults.push((id, fault));
        id
    }

    /// Removes one fault; false when there was none with that id.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut r = self.inner.lock().expect("fault registry lock");
        let before = r.faults.len();
        r.faults.retain(|(i, _)| *i != id);
        r.faults.len() != before
    }

    /// Removes every fault.
    pub(crate) fn clear(&self) {
        self.inner
            .lock()
            .expect("fault registry lock")
            .faults
            .clear();
    }

    /// The faults in force with their ids.
    pub(crate) fn list(&self) -> Vec<(u64, Fault)> {
        self.inner
            .lock()
            .expect("fault registry lock")
            .faults
            .clone()
    }

    /// The faults that hit this request, each counted once against its `count`.
    pub(crate) fn take_matching(&self, at: &Subject<'_>, since_start: Duration) -> Vec<Fault> {
        let mut r = self.inner.lock().expect("fault registry lock");
        let mut hits = Vec::new();
        let Registry { faults, draws, .. } = &mut *r;
        for (id, f) in faults.iter_mut() {
            if f.matches(at, since_start) {
                if let Some(p) = f.probability {
                    *draws += 1;
                    if unit_draw(*id, *draws) >= p {
                        continue;
                    }
                }
                if let Some(c) = f.count.as_mut() {
                    *c -= 1;
                }
                hits.push(f.clone());
            }
        }
        r.faults.retain(|(_, f)| f.count != Some(0));
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Subject<'static> = Subject {
        region: "us-east-1",
        model: "amazon.nova-lite-v1:0",
        target: "us.amazon.nova-lite-v1:0",
        tier: "default",
        surface: "bedrock",
    };

    #[test]
    fn filters_narrow_and_counts_expire() {
        let reg = FaultRegistry::default();
        reg.add(Fault::new(FaultKind::Outage).for_region("eu-west-1"));
        reg.add(
            Fault::new(FaultKind::Throttle)
                .for_model("amazon.nova-lite-v1:0")
                .times(2),
        );
        let z = Duration::ZERO;
        assert_eq!(reg.take_matching(&AT, z).len(), 1);
        assert_eq!(reg.take_matching(&AT, z).len(), 1);
        assert!(reg.take_matching(&AT, z).is_empty());
        assert_eq!(reg.list().len(), 1);
    }

    #[test]
    fn schedule_window_is_honoured() {
        let reg = FaultRegistry::default();
        let mut f = Fault::new(FaultKind::Outage);
        f.start_ms = Some(100);
        f.end_ms = Some(200);
        reg.add(f);
        assert!(reg.take_matching(&AT, Duration::from_millis(50)).is_empty());
        assert_eq!(reg.take_matching(&AT, Duration::from_millis(150)).len(), 1);
        assert!(
            reg.take_matching(&AT, Duration::from_millis(250))
                .is_empty()
        );
    }

    #[test]
    fn remove_by_id() {
        let reg = FaultRegistry::default();
        let id = reg.add(Fault::new(FaultKind::Outage));
        assert!(reg.remove(id));
        assert!(!reg.remove(id));
    }
}
