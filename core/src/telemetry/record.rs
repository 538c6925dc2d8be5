//! Calls recorded for a re-benchmark on your own traffic (`[record]`): a sampled share of the
//! router's calls, one JSON line each, written by a thread of its own to a file rotated by
//! size. A call never waits on it: lines go through a bounded queue, and one that finds it
//! full is dropped and counted. Each file starts with a header line (schema version, the
//! digest of the configuration in force); lines are written whole, a batch of them with one
//! write, so a crash leaves at most a last line cut short, which a reader skips. Besides the sampled calls,
//! the targets' load counters (every call's attempts, answered and failed by kind) are written
//! every `load_every`, so that throttling can be fitted from a sample; and the outcome that
//! `finish_task` or `feedback` reports later is a line of its own, keyed by the call's id.
//!
//! No prompt or answer text is written unless `include_text`; shared prompt prefixes are keyed
//! digests (HMAC-SHA-256 with the deployment's key, over the prefix's digest), so that a trace
//! cannot be dictionary-attacked for the prompts it saw; task ids are digested the same way.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::host_queue::HostQueue;

use serde::{Deserialize, Serialize};

use super::trace_summary::TraceSummary;
use crate::config::RecordConfig;

/// The version of the lines' shape; a reader refuses a file of another.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
pub enum Line {
    /// The first line of each file.
    Header(Header),
    /// One recorded call.
    Call(Box<CallRecord>),
    /// What `finish_task` or `feedback` said of a recorded call, later.
    Outcome(Outcome),
    /// Every target's attempts so far, answered and failed by kind (all calls, unsampled).
    Load(Load),
}

/// The first line of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`SCHEMA_VERSION`].
    pub schema: u32,
    /// A digest of the configuration in force (SHA-256 of its serialised form, hex).
    pub config_digest: String,
    /// The share of calls recorded.
    pub sample: f64,
    /// When the file was started (Unix milliseconds).
    pub started_ms: u64,
}

/// One recorded call: what was asked, what the router decided, what it met.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When the call arrived (Unix milliseconds).
    pub at_ms: u64,
    /// The call's id (`decision.call_id`; none for a call that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Its SLO class.
    pub class: String,
    /// Its time-to-first-token target, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_target_ms: Option<u64>,
    /// Its deadline, milliseconds from arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// The model or family it asked for (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    /// The family routed in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Where the call was allowed to go: `geography:eu`, `regions:us-east-1+us-west-2`, or
    /// `None` for anywhere (a global profile included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residency: Option<String>,
    /// The model (variant) that served, or the first planned one of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The target (model id, profile or endpoint) that served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Its region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Its scope: `in_region`, `global`, or a geography (`us`, `eu`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The tier sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The tier the service said it served at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_tier: Option<String>,
    /// The classifier's difficulty band of the prompt (a routed family's call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<u8>,
    /// The kind of work the prompt asks for, by its cue words (a routed family's call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The classifier's expected loss per variant, cheapest first, with its threshold: what
    /// replaying another threshold needs, since the text is not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<(String, f32, f32)>,
    /// The prompt's novelty (calibrated probability of a kind not trained on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub novelty: Option<f32>,
    /// Input tokens not read from or written to the cache.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u32,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u32,
    /// Output tokens spent reasoning.
    pub reasoning_tokens: u32,
    /// The prompt's prefixes at its cache boundaries (tools, system, checkpoints), as keyed
    /// digests with their estimated tokens: calls that share a prefix share its digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<PrefixDigest>,
    /// Time to the first token, milliseconds (streams), from the call's arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// The answering attempt's own time to its first token, from when it was sent: without
    /// the call's wait for a slot or its earlier attempts (what its target took).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_ttft_ms: Option<f64>,
    /// The gaps between content chunks: mean, p90 and longest, milliseconds (streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter_token_ms: Option<[f64; 3]>,
    /// The whole call, milliseconds.
    pub total_ms: f64,
    /// Every failed attempt, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptRecord>,
    /// The hedge sent after a late first token, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<HedgeRecord>,
    /// The call's cost at the configured prices, USD.
    pub cost_usd: f64,
    /// The task's id, digested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The error kind of a call that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The prompt's text (`include_text` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The answer's text (`include_text` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// A prompt prefix, as a keyed digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefixDigest {
    /// HMAC-SHA-256 of the prefix's digest under the deployment's key, its first 16 bytes
    /// in hex.
    pub digest: String,
    /// The prefix's estimated tokens.
    pub tokens: u32,
    /// Whether a cache checkpoint was placed there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
}

/// A hedge: the first attempt, late, and the second sent beside it. Whichever lost was
/// cancelled: its first token is known only to be later than the winner's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HedgeRecord {
    /// How long the first attempt had before the hedge went, milliseconds.
    pub delay_ms: f64,
    /// Where the first attempt went.
    pub first: TargetRef,
    /// Where the hedge went.
    pub second: TargetRef,
    /// Whether the hedge produced the first token (the call's `target` is then the hedge's).
    pub won: bool,
}

/// A target an attempt went to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRef {
    /// Its region.
    pub region: String,
    /// Its id (model id, profile or endpoint).
    pub target: String,
    /// The tier sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
}

/// A failed attempt of a recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Where it went.
    pub target: String,
    /// The region.
    pub region: String,
    /// The tier sent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// Its error kind.
    pub kind: String,
    /// For an attempt its first-token limit ended: how long it had waited, milliseconds (its
    /// target's first token would have come later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_after_ms: Option<f64>,
}

/// What was said of a recorded call after it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// When it was said (Unix milliseconds).
    pub at_ms: u64,
    /// The call it is about.
    pub call_id: String,
    /// Whether the task succeeded (`finish_task`) or the answer was good (`feedback`).
    pub success: bool,
    /// `task` or `feedback`.
    pub source: String,
}

/// Every target's attempts so far (cumulative, all calls).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// When they were counted (Unix milliseconds).
    pub at_ms: u64,
    /// Per target.
    pub targets: Vec<TargetLoad>,
}

/// One target's attempts so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetLoad {
    /// The region.
    pub region: String,
    /// The target.
    pub target: String,
    /// The tier, if its breaker is kept per tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// Attempts that answered.
    pub ok: u64,
    /// Failed attempts by error kind (`throttled` among them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, u64>,
    /// Attempts in flight there when the line was written.
    #[serde(default)]
    pub in_flight: u32,
    /// The most the router lets be in flight there then (configured, or learnt from
    /// throttles); none when not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Where the load lines come from: `None` once the router is gone.
pub type LoadSource = Box<dyn Fn() -> Option<Vec<TargetLoad>> + Send>;

/// Somewhere else the lines go, a batch at a time, on the writer's thread (the app's
/// OpenTelemetry logs): each file's header first, then calls, outcomes and load lines.
pub type LineSink = Box<dyn FnMut(&[Line]) + Send>;

/// The recorder of one router: decides which calls are recorded, digests what must not be
/// kept in clear, and hands lines to its writer thread.
pub struct Recorder {
    lines: Arc<HostQueue<Line>>,
    /// Where lines go besides the file, shared with the writer: more may join later.
    sinks: Arc<std::sync::Mutex<Vec<LineSink>>>,
    /// The header each file and each sink starts with.
    header: Header,
    /// The host's queue of lines, once a binding asked for it.
    host_lines: std::sync::OnceLock<Arc<HostLines>>,
    /// Every line written, folded: what `Router::advice` reads.
    summary: Arc<std::sync::Mutex<TraceSummary>>,
    sample: f64,
    include_text: bool,
    key: Vec<u8>,
    seen: AtomicU64,
    written: Arc<AtomicU64>,
    /// Lines handed to the queue (kept or dropped), and those the writer has put out since.
    pushed: AtomicU64,
    progress: Arc<Progress>,
    /// The ids of the calls recorded lately: an outcome is written for them only.
    recorded: std::sync::Mutex<RecentIds>,
}

/// The ids of the calls recorded lately, the oldest forgotten past a bound.
#[derive(Debug, Default)]
struct RecentIds {
    order: std::collections::VecDeque<String>,
    ids: std::collections::HashSet<String>,
}

/// How many recorded calls' ids are kept for their outcomes.
const RECENT_IDS: usize = 100_000;

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("sample", &self.sample)
            .field("dropped", &self.dropped())
            .field("written", &self.written())
            .finish_non_exhaustive()
    }
}

/// Now, in Unix milliseconds.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Recorder {
    /// Opens (or continues) the file, if the configuration names one, and starts the
    /// writer; `config_digest` goes in each file's header, `load` gives the load lines, and
    /// `sinks` take every line too.
    pub fn start(
        config: &RecordConfig,
        config_digest: String,
        load: LoadSource,
        sinks: Vec<LineSink>,
    ) -> std::io::Result<Recorder> {
        if let Some(dir) = config
            .path
            .as_ref()
            .and_then(|p| p.parent())
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)?;
        }
        let key = match std::env::var(&config.key_env) {
            Ok(k) if !k.is_empty() => k.into_bytes(),
            _ => rand::random::<[u8; 32]>().to_vec(),
        };
        let header = Header {
            schema: SCHEMA_VERSION,
            config_digest,
            sample: config.sample,
            started_ms: 0,
        };
        let header = Header {
            started_ms: unix_ms(),
            ..header
        };
        let mut out = Outputs {
            file: config
                .path
                .as_ref()
                .map(|p| TraceFile::open(p, config.max_bytes, config.keep, header.clone()))
                .transpose()?,
            sinks: Arc::new(std::sync::Mutex::new(sinks)),
            summary: Arc::default(),
        };
        out.send_to_sinks(&[Line::Header(header.clone())]);
        let shared_sinks = Arc::clone(&out.sinks);
        let lines = Arc::new(HostQueue::new(config.queue));
        let written = Arc::new(AtomicU64::new(0));
        let progress = Arc::new(Progress::default());
        let summary = Arc::clone(&out.summary);
        let (queue, count, done) = (
            Arc::clone(&lines),
            Arc::clone(&written),
            Arc::clone(&progress),
        );
        let every = config.load_every;
        std::thread::Builder::new()
            .name("laneway-record".into())
            .spawn(move || write_loop(&queue, out, load, every, &count, &done))?;
        Ok(Recorder {
            lines,
            sinks: shared_sinks,
            header,
            host_lines: std::sync::OnceLock::new(),
            summary,
            sample: config.sample,
            include_text: config.include_text,
            key,
            seen: AtomicU64::new(0),
            written,
            pushed: AtomicU64::new(0),
            progress,
            recorded: std::sync::Mutex::default(),
        })
    }

    /// Whether the next call is recorded: exactly `sample` of the calls, evenly spread.
    pub fn sampled(&self) -> bool {
        let n = self.seen.fetch_add(1, Ordering::Relaxed) as f64;
        ((n + 1.0) * self.sample).floor() > (n * self.sample).floor()
    }

    /// Whether prompts and answers are recorded in clear.
    pub fn include_text(&self) -> bool {
        self.include_text
    }

    /// The keyed digest of `bytes`: HMAC-SHA-256 under the deployment's key, its first 16
    /// bytes in hex.
    pub fn digest(&self, bytes: &[u8]) -> String {
        use hmac::{KeyInit as _, Mac as _};
        let mut mac = hmac::Hmac::<sha2_hmac::Sha256>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(bytes);
        let out = mac.finalize().into_bytes();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(32);
        for b in &out[..16] {
            hex.push(char::from(HEX[usize::from(b >> 4)]));
            hex.push(char::from(HEX[usize::from(b & 15)]));
        }
        hex
    }

    /// Hands `line` to the writer, or drops and counts it when the queue is full.
    pub fn push(&self, line: Line) {
        self.pushed.fetch_add(1, Ordering::Relaxed);
        self.lines.push(line);
    }

    /// Waits, at most `timeout`, until every line handed over before this call is written
    /// (or was dropped); whether they all were. For a process about to exit, and for tests.
    // A caller's thread waits on the writer's thread: real time, not the router's clock.
    #[allow(clippy::disallowed_methods)]
    pub fn flush(&self, timeout: Duration) -> bool {
        let target = self.pushed.load(Ordering::Relaxed) - self.lines.dropped();
        let deadline = std::time::Instant::now() + timeout;
        let mut put = self.progress.put.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if *put >= target {
                return true;
            }
            self.lines.hurry();
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            // Woken after each batch; the short wait covers a batch put just before waiting.
            put = self
                .progress
                .batch_put
                .wait_timeout(put, left.min(Duration::from_millis(20)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Hands a recorded call's line to the writer, keeping its id for its outcome.
    pub fn push_call(&self, call: CallRecord) {
        if let Some(id) = &call.call_id {
            let mut recent = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
            if recent.ids.insert(id.clone()) {
                recent.order.push_back(id.clone());
                if recent.order.len() > RECENT_IDS
                    && let Some(old) = recent.order.pop_front()
                {
                    recent.ids.remove(&old);
                }
            }
        }
        self.push(Line::Call(Box::new(call)));
    }

    /// Writes what was said of call `call_id` later (`source`: `task` or `feedback`), if it
    /// was recorded.
    pub fn outcome(&self, call_id: &str, success: bool, source: &str) {
        let recorded = self
            .recorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ids
            .contains(call_id);
        if recorded {
            self.push(Line::Outcome(Outcome {
                at_ms: unix_ms(),
                call_id: call_id.to_string(),
                success,
                source: source.to_string(),
            }));
        }
    }

    /// Lines dropped because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.lines.dropped()
    }

    /// Lines written so far (headers excepted).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Sends every line from now on to `sink` as well, this router's header first.
    pub fn add_sink(&self, mut sink: LineSink) {
        sink(&[Line::Header(self.header.clone())]);
        self.sinks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sink);
    }

    /// The lines as JSON for a host that is not Rust (the Python and Node bindings, which
    /// emit them as the app's OpenTelemetry log records): one queue per recorder, made and
    /// joined to the writer on the first call.
    pub fn host_lines(&self) -> Arc<HostLines> {
        Arc::clone(self.host_lines.get_or_init(|| {
            let lines = Arc::new(HostLines {
                queue: HostQueue::new(HOST_LINES),
            });
            let queue = Arc::clone(&lines);
            self.add_sink(Box::new(move |batch: &[Line]| {
                queue.queue.push_all(
                    batch
                        .iter()
                        .filter_map(|l| Some((l.kind(), serde_json::to_string(l).ok()?))),
                );
            }));
            lines
        }))
    }

    /// `f` of every line written so far, folded (bounded in memory whatever their number).
    pub fn with_summary<T>(&self, f: impl FnOnce(&TraceSummary) -> T) -> T {
        f(&self.summary.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Lines a host has not drained at most; past it, dropped and counted.
const HOST_LINES: usize = 10_000;

/// The trace's lines for a host that is not Rust, each its kind (`call`, ...) and its JSON, in
/// a bounded queue the binding drains; a line that finds it full is dropped and counted.
pub struct HostLines {
    queue: HostQueue<(&'static str, String)>,
}

impl HostLines {
    /// Up to `max` lines, oldest first, waiting at most `wait` for the first.
    pub fn drain(&self, max: usize, wait: Duration) -> Vec<(&'static str, String)> {
        self.queue.drain(max, wait)
    }

    /// Waits at most `wait` for a line, taking none; whether one is there.
    pub fn wait(&self, wait: Duration) -> bool {
        self.queue.wait(wait)
    }

    /// Lines dropped because the host did not drain them in time.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }
}

impl Line {
    /// The line's kind, as its `line` field spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Line::Header(_) => "header",
            Line::Call(_) => "call",
            Line::Outcome(_) => "outcome",
            Line::Load(_) => "load",
        }
    }
}

/// How far the writer has got: lines taken from the queue and put out, signalled per batch.
#[derive(Default)]
struct Progress {
    put: std::sync::Mutex<u64>,
    batch_put: std::sync::Condvar,
}

/// Where the writer puts each batch.
struct Outputs {
    file: Option<TraceFile>,
    sinks: Arc<std::sync::Mutex<Vec<LineSink>>>,
    summary: Arc<std::sync::Mutex<TraceSummary>>,
}

impl Outputs {
    fn send_to_sinks(&mut self, lines: &[Line]) {
        let mut sinks = self.sinks.lock().unwrap_or_else(|p| p.into_inner());
        for sink in sinks.iter_mut() {
            sink(lines);
        }
    }

    /// Puts `lines` everywhere; how many went (into the file, when there is one).
    fn put(&mut self, lines: &[Line]) -> u64 {
        if lines.is_empty() {
            return 0;
        }
        {
            let mut summary = self.summary.lock().unwrap_or_else(|p| p.into_inner());
            for line in lines {
                summary.add(line);
            }
        }
        self.send_to_sinks(lines);
        match &mut self.file {
            Some(file) => file.write_all_lines(lines).unwrap_or(0),
            None => lines.len() as u64,
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // The writer writes what is queued, then ends.
        self.lines.close();
    }
}

/// Lines taken from the queue at most per write.
const BATCH: usize = 1024;

/// How long the writer lets lines gather after a write that did not fill a batch: one
/// wake-up and one write per this, not per call. A crash loses at most this much of the trace.
const LINGER: Duration = Duration::from_millis(250);

fn write_loop(
    queue: &HostQueue<Line>,
    mut out: Outputs,
    load: LoadSource,
    every: Duration,
    written: &AtomicU64,
    progress: &Progress,
) {
    let mut next_load = crate::time::now() + every;
    loop {
        let wait = next_load.saturating_duration_since(crate::time::now());
        let batch = queue.drain(BATCH, wait);
        if batch.is_empty() && queue.is_closed() {
            return;
        }
        written.fetch_add(out.put(&batch), Ordering::Relaxed);
        if !batch.is_empty() {
            *progress.put.lock().unwrap_or_else(|p| p.into_inner()) += batch.len() as u64;
            progress.batch_put.notify_all();
        }
        if batch.len() < BATCH && !queue.is_closed() {
            queue.linger(LINGER.min(next_load.saturating_duration_since(crate::time::now())));
        }
        if crate::time::now() >= next_load {
            next_load += every;
            let Some(targets) = load() else {
                return;
            };
            let line = Line::Load(Load {
                at_ms: unix_ms(),
                targets,
            });
            written.fetch_add(out.put(std::slice::from_ref(&line)), Ordering::Relaxed);
        }
    }
}

/// The file being written, rotated by size.
struct TraceFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    header: Header,
    file: std::fs::File,
    size: u64,
}

impl TraceFile {
    fn open(path: &Path, max_bytes: u64, keep: u32, header: Header) -> std::io::Result<Self> {
        let mut f = TraceFile {
            path: path.to_path_buf(),
            max_bytes,
            keep,
            header,
            file: Self::append(path)?,
            size: 0,
        };
        f.size = f.file.metadata()?.len();
        if f.size == 0 {
            f.write_header()?;
        }
        Ok(f)
    }

    fn append(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    }

    fn write_header(&mut self) -> std::io::Result<()> {
        self.header.started_ms = unix_ms();
        let header = Line::Header(self.header.clone());
        self.put(&header)
    }

    /// Writes `lines` whole, as few writes as the file's size allows; how many were written.
    fn write_all_lines(&mut self, lines: &[Line]) -> std::io::Result<u64> {
        let mut text = String::new();
        let mut n = 0;
        for line in lines {
            let one = to_text(line);
            if self.size + (text.len() + one.len()) as u64 > self.max_bytes
                && self.size + text.len() as u64 > 0
            {
                self.file.write_all(text.as_bytes())?;
                self.size += text.len() as u64;
                text.clear();
                self.rotate()?;
            }
            text.push_str(&one);
            n += 1;
        }
        self.file.write_all(text.as_bytes())?;
        self.size += text.len() as u64;
        Ok(n)
    }

    fn put(&mut self, line: &Line) -> std::io::Result<()> {
        let text = to_text(line);
        self.file.write_all(text.as_bytes())?;
        self.size += text.len() as u64;
        Ok(())
    }

    /// `path` becomes `path.1`, `path.1` becomes `path.2`, ..., the oldest past `keep` goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |n: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            let _ = std::fs::remove_file(numbered(self.keep));
            for n in (1..self.keep).rev() {
                let _ = std::fs::rename(numbered(n), numbered(n + 1));
            }
            std::fs::rename(&self.path, numbered(1))?;
        }
        self.file = Self::append(&self.path)?;
        self.size = 0;
        self.write_header()
    }
}

/// One line's text, with its newline: written with one write, so that it is whole or cut
/// short only at the end of the file.
fn to_text(line: &Line) -> String {
    let mut text = serde_json::to_string(line).unwrap_or_default();
    text.push('\n');
    text
}

/// The longest line a reader takes; a longer one is counted bad and skipped.
pub const MAX_LINE: usize = 1 << 20;

/// A line of a trace that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// Its number in the file, from 1.
    pub number: u64,
    /// Why it was not read.
    pub reason: String,
}

/// A trace read as a stream, line by line, whatever its size: the lines that read, with the
/// bad ones (malformed, cut short, too long, not UTF-8, of another schema) counted and the
/// first of them named by number, never a panic.
pub struct TraceReader<R> {
    input: R,
    number: u64,
    /// How many lines were bad.
    pub bad_count: u64,
    /// The first bad lines (at most 100), by number.
    pub bad: Vec<BadLine>,
}

impl TraceReader<std::io::BufReader<std::fs::File>> {
    /// Reads the trace at `path`.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self::new(std::io::BufReader::new(std::fs::File::open(
            path,
        )?)))
    }
}

impl<R: std::io::BufRead> TraceReader<R> {
    /// Reads a trace from `input`.
    pub fn new(input: R) -> Self {
        TraceReader {
            input,
            number: 0,
            bad_count: 0,
            bad: Vec::new(),
        }
    }

    fn reject(&mut self, reason: String) {
        self.bad_count += 1;
        if self.bad.len() < 100 {
            self.bad.push(BadLine {
                number: self.number,
                reason,
            });
        }
    }

    /// The next line's bytes, at most [`MAX_LINE`] (`Err` with the reason when longer: the
    /// rest of it is skipped); `None` at the end.
    fn next_bytes(&mut self) -> Option<Result<Vec<u8>, String>> {
        use std::io::BufRead as _;
        let mut buf = Vec::new();
        let input: &mut R = &mut self.input;
        let read = std::io::Read::take(input, MAX_LINE as u64 + 1).read_until(b'\n', &mut buf);
        match read {
            Err(e) => Some(Err(format!("unreadable: {e}"))),
            Ok(0) => None,
            Ok(_) if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') => {
                // Skip to the end of the line, in bounded pieces.
                loop {
                    let mut rest = Vec::new();
                    let input: &mut R = &mut self.input;
                    match std::io::Read::take(input, MAX_LINE as u64).read_until(b'\n', &mut rest) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if rest.last() == Some(&b'\n') => break,
                        Ok(_) => {}
                    }
                }
                Some(Err(format!("longer than {MAX_LINE} bytes")))
            }
            Ok(_) => Some(Ok(buf)),
        }
    }
}

impl<R: std::io::BufRead> Iterator for TraceReader<R> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        loop {
            let bytes = self.next_bytes()?;
            self.number += 1;
            let text = match bytes.map(String::from_utf8) {
                Ok(Ok(text)) => text,
                Ok(Err(_)) => {
                    self.reject("not UTF-8".into());
                    continue;
                }
                Err(reason) => {
                    self.reject(reason);
                    continue;
                }
            };
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(text) {
                Ok(Line::Header(h)) if h.schema != SCHEMA_VERSION => self.reject(format!(
                    "a header of schema {}, where this reader reads {SCHEMA_VERSION}",
                    h.schema
                )),
                Ok(line) => return Some(line),
                Err(e) => self.reject(format!("not a trace line: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, max_bytes: u64) -> RecordConfig {
        RecordConfig {
            path: Some(dir.join("trace.jsonl")),
            sample: 0.25,
            max_bytes,
            keep: 2,
            key_env: "LANEWAY_RECORD_KEY_OF_NO_TEST".into(),
            include_text: false,
            queue: 64,
            load_every: Duration::from_secs(3600),
        }
    }

    fn lines_of(path: &Path) -> Vec<Line> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_reader_counts_and_names_bad_lines_and_never_panics() {
        let call = to_text(&Line::Call(Box::new(CallRecord {
            class: "standard".into(),
            ..CallRecord::default()
        })));
        let long = "x".repeat(MAX_LINE + 10);
        let mut input = String::new();
        input.push_str(&to_text(&Line::Header(Header {
            schema: SCHEMA_VERSION,
            config_digest: "d".into(),
            sample: 1.0,
            started_ms: 1,
        })));
        input.push_str(&call);
        input.push_str("{\"line\": \"call\", \"class\": 3}\n");
        input.push_str(&long);
        input.push('\n');
        input.push_str("{\"line\":\"header\",\"schema\":99,\"config_digest\":\"d\",\"sample\":1,\"started_ms\":1}\n");
        input.push_str(&call);
        input.push_str(&call[..call.len() / 2]); // cut short by a crash
        let mut bytes = input.into_bytes();
        bytes.extend_from_slice(b"\n\xff\xfe\n");
        let mut reader = TraceReader::new(std::io::Cursor::new(bytes));
        let lines: Vec<Line> = reader.by_ref().collect();
        assert_eq!(lines.len(), 3, "the header and two calls");
        let numbers: Vec<u64> = reader.bad.iter().map(|b| b.number).collect();
        assert_eq!(numbers, [3, 4, 5, 7, 8], "{:?}", reader.bad);
        assert_eq!(reader.bad_count, 5);
        assert!(reader.bad[1].reason.contains("longer than"));
        assert!(reader.bad[2].reason.contains("schema 99"));
    }

    #[test]
    fn a_share_of_calls_is_sampled_evenly_and_digests_are_keyed() {
        let dir = std::env::temp_dir().join(format!("laneway-record-s-{}", std::process::id()));
        let r = Recorder::start(
            &config(&dir, 1 << 20),
            "c".into(),
            Box::new(|| None),
            Vec::new(),
        )
        .unwrap();
        let kept = (0..1000).filter(|_| r.sampled()).count();
        assert_eq!(kept, 250);
        let other = Recorder::start(
            &config(&dir, 1 << 20),
            "c".into(),
            Box::new(|| None),
            Vec::new(),
        )
        .unwrap();
        assert_eq!(r.digest(b"prefix"), r.digest(b"prefix"));
        assert_ne!(
            r.digest(b"prefix"),
            other.digest(b"prefix"),
            "a random key each"
        );
        assert_eq!(r.digest(b"prefix").len(), 32);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn files_rotate_by_size_each_starting_with_its_header_and_lines_are_whole() {
        let dir = std::env::temp_dir().join(format!("laneway-record-r-{}", std::process::id()));
        let header = Header {
            schema: SCHEMA_VERSION,
            config_digest: "d".into(),
            sample: 1.0,
            started_ms: 0,
        };
        let path = dir.join("trace.jsonl");
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = TraceFile::open(&path, 4096, 2, header).unwrap();
        let call = Line::Call(Box::new(CallRecord {
            class: "standard".into(),
            total_ms: 12.5,
            ..CallRecord::default()
        }));
        for _ in 0..200 {
            f.write_all_lines(std::slice::from_ref(&call)).unwrap();
        }
        for p in [
            path.clone(),
            dir.join("trace.jsonl.1"),
            dir.join("trace.jsonl.2"),
        ] {
            let lines = lines_of(&p);
            assert!(matches!(lines[0], Line::Header(_)), "{}", p.display());
            assert!(lines[1..].iter().all(|l| *l == call));
            assert!(std::fs::metadata(&p).unwrap().len() <= 4096);
        }
        assert!(
            !dir.join("trace.jsonl.3").exists(),
            "only `keep` rotated files"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
