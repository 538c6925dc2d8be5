//! Workloads to replay: the built-in shapes (`interact`, `generate`, `summarize`) generated from
//! a seed, or a JSONL file of requests with optional arrival times.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use laneway::{GenerateRequest, Slo, SloClass};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

/// Which workload to replay.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WorkloadKind {
    /// Chat turns: short prompts and answers, an 800 ms TTFT target (TTFT-bound).
    Interact,
    /// Long answers to short prompts (throughput-bound).
    Generate,
    /// Long shared documents, short answers, several questions per document (cache-heavy).
    Summarize,
    /// Requests from a JSONL file.
    Custom(PathBuf),
}

impl std::str::FromStr for WorkloadKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "interact" => Self::Interact,
            "generate" => Self::Generate,
            "summarize" => Self::Summarize,
            path if Path::new(path).is_file() => Self::Custom(path.into()),
            other => {
                return Err(format!(
                    "{other:?} is neither a built-in workload (interact, generate, summarize) nor a JSONL file"
                ));
            }
        })
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interact => f.write_str("interact"),
            Self::Generate => f.write_str("generate"),
            Self::Summarize => f.write_str("summarize"),
            Self::Custom(p) => write!(f, "{}", p.display()),
        }
    }
}

/// One request of a workload and when it arrives (scenario time from the start), if the
/// workload is open-loop.
#[derive(Debug, Clone)]
pub(crate) struct WorkItem {
    pub at: Option<Duration>,
    pub request: GenerateRequest,
}

const WORDS: &[&str] = &[
    "invoice",
    "customer",
    "refund",
    "latency",
    "region",
    "order",
    "shipment",
    "account",
    "policy",
    "report",
    "quarter",
    "revenue",
    "contract",
    "support",
    "ticket",
    "release",
    "feature",
    "migration",
    "database",
    "schedule",
    "budget",
    "forecast",
    "risk",
    "audit",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "for",
    "with",
    "on",
    "was",
    "is",
    "by",
];

/// Between `lengths.start` and `lengths.end` (exclusive) words of filler text.
fn words(rng: &mut ChaCha8Rng, lengths: std::ops::Range<usize>) -> String {
    let n = rng.gen_range(lengths);
    let mut s = String::with_capacity(n * 7);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
    }
    s
}

/// Builds `n` requests of a built-in kind, or reads a file (then `n` caps how many are used).
/// With `rate` (requests per second of scenario time), arrivals follow a Poisson process.
pub(super) fn build(
    kind: &WorkloadKind,
    n: usize,
    rate: Option<f64>,
    seed: u64,
) -> anyhow::Result<Vec<WorkItem>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut items: Vec<WorkItem> = match kind {
        WorkloadKind::Custom(path) => read_jsonl(path)?.into_iter().take(n).collect(),
        WorkloadKind::Interact => (0..n)
            .map(|i| {
                let turn = words(&mut rng, 20..200);
                let request = GenerateRequest::user(format!("Turn {i}: {turn}?"))
                    .system("You are a concise in-app assistant. Answer in a few sentences.")
                    .max_tokens(rng.gen_range(64..=256))
                    .slo(Slo {
                        class: SloClass::Interactive,
                        ttft_target: Some(Duration::from_millis(800)),
                        deadline: None,
                    });
                WorkItem { at: None, request }
            })
            .collect(),
        WorkloadKind::Generate => (0..n)
            .map(|i| {
                let brief = words(&mut rng, 60..300);
                let request = GenerateRequest::user(format!("Draft document {i} from: {brief}"))
                    .max_tokens(rng.gen_range(600..=1500))
                    .slo_class(SloClass::Standard);
                WorkItem { at: None, request }
            })
            .collect(),
        WorkloadKind::Summarize => {
            let documents: Vec<String> = (0..8)
                .map(|d| format!("Document {d}. {}", words(&mut rng, 2500..5000)))
                .collect();
            (0..n)
                .map(|i| {
                    let d = i % documents.len();
                    let request = GenerateRequest::user(format!(
                        "Summarise section {} of the document in three bullet points.",
                        i / documents.len() + 1
                    ))
                    .system(documents[d].clone())
                    .task(format!("document-{d}"))
                    .max_tokens(rng.gen_range(100..=250))
                    .slo_class(SloClass::Standard);
                    WorkItem { at: None, request }
                })
                .collect()
        }
    };
    if let Some(rate) = rate {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--rate must be a positive number of requests per second, got {rate}");
        }
        let gaps = Exp::new(rate).context("arrival rate")?;
        let mut t = 0.0;
        for item in &mut items {
            item.at = Some(Duration::from_secs_f64(t));
            t += gaps.sample(&mut rng);
        }
    }
    if items.is_empty() {
        bail!("the workload has no requests");
    }
    Ok(items)
}

/// Reads a JSONL workload: one request per line, in Laneway's request format (`messages`,
/// `system`, `inference`, `slo`, `task_id`, ...) or with `prompt` as a shorthand for one user
/// message; `at_ms` gives the arrival time.
pub(super) fn read_jsonl(path: &Path) -> anyhow::Result<Vec<WorkItem>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |what: &str| format!("{}:{}: {what}", path.display(), i + 1);
        let mut value: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).with_context(|| at("not a JSON object"))?;
        let arrival = match value.remove("at_ms") {
            None => None,
            Some(v) => {
                let ms = v
                    .as_f64()
                    .filter(|ms| *ms >= 0.0 && ms.is_finite())
                    .with_context(|| at("`at_ms` must be a number of milliseconds >= 0"))?;
                Some(Duration::from_secs_f64(ms / 1000.0))
            }
        };
        if let Some(prompt) = value.remove("prompt") {
            let text = prompt
                .as_str()
                .with_context(|| at("`prompt` must be a string"))?;
            if value.contains_key("messages") {
                bail!(at("give `prompt` or `messages`, not both"));
            }
            value.insert(
                "messages".into(),
                serde_json::json!([{ "role": "user", "content": [{ "text": text }] }]),
            );
        }
        let request: GenerateRequest = serde_json::from_value(serde_json::Value::Object(value))
            .map_err(|e| anyhow::anyhow!(at(&e.to_string())))?;
        request
            .validate()
            .map_err(|e| anyhow::anyhow!(at(&e.to_string())))?;
        items.push(WorkItem {
            at: arrival,
            request,
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_workloads_are_deterministic_and_shaped() {
        let a = build(&WorkloadKind::Interact, 20, None, 7).unwrap();
        let b = build(&WorkloadKind::Interact, 20, None, 7).unwrap();
        assert_eq!(a.len(), 20);
        assert_eq!(
            serde_json::to_string(&a[3].request).unwrap(),
            serde_json::to_string(&b[3].request).unwrap()
        );
        assert!(
            a.iter()
                .all(|w| w.request.slo.class == SloClass::Interactive)
        );
        let s = build(&WorkloadKind::Summarize, 16, None, 7).unwrap();
        assert!(s[0].request.estimated_input_tokens() > 2000);
        assert_eq!(s[0].request.task_id, s[8].request.task_id);
    }

    #[test]
    fn poisson_arrivals_have_the_asked_rate() {
        let w = build(&WorkloadKind::Generate, 2000, Some(50.0), 1).unwrap();
        let last = w.last().unwrap().at.unwrap().as_secs_f64();
        let rate = 1999.0 / last;
        assert!((rate - 50.0).abs() < 5.0, "{rate}");
        assert!(w.windows(2).all(|p| p[0].at <= p[1].at));
        assert!(build(&WorkloadKind::Generate, 5, Some(0.0), 1).is_err());
    }

    #[test]
    fn jsonl_lines_name_their_errors() {
        let dir = std::env::temp_dir().join(format!("laneway-wl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.jsonl");
        std::fs::write(
            &good,
            "{\"prompt\": \"hi\", \"at_ms\": 5, \"slo\": {\"class\": \"interactive\"}}\n\n{\"messages\": [{\"role\": \"user\", \"content\": [{\"text\": \"yo\"}]}]}\n",
        )
        .unwrap();
        let items = read_jsonl(&good).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].at, Some(Duration::from_millis(5)));
        assert_eq!(items[0].request.slo.class, SloClass::Interactive);
        let bad = dir.join("bad.jsonl");
        std::fs::write(&bad, "{\"prompt\": \"hi\"}\n{\"prompt\": 3}\n").unwrap();
        let e = read_jsonl(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:2") && e.contains("prompt"), "{e}");
        std::fs::write(&bad, "{\"prompt\": \"hi\", \"at_ms\": -1}\n").unwrap();
        assert!(read_jsonl(&bad).unwrap_err().to_string().contains("at_ms"));
        std::fs::write(&bad, "{\"prompt\": \"hi\", \"colour\": 1}\n").unwrap();
        assert!(read_jsonl(&bad).unwrap_err().to_string().contains("colour"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
