//! Time limits and retry rounds on tokio's paused clock: an in-memory backend stalls, answers
//! slowly or asks to retry later, and the router's limits fire at exactly the configured
//! instants. No test waits on the wall clock.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use laneway::backend::{Backend, BackendEvent, Backends, Call, Completion, EventStream};
use laneway::execute::Executor;
use laneway::{
    Error, ErrorKind, GenerateRequest, Provider, Reason, ServiceError, SloClass, StopReason,
    StreamEvent, TimeLimit, Usage,
};
use tokio::time::Instant;

/// What one region does with every request.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Accepts and never answers.
    Stall,
    /// Answers `tokens` tokens, `gap` apart, after `ttft`.
    Answer {
        ttft: Duration,
        gap: Duration,
        tokens: u32,
    },
    /// Sends `tokens` tokens, then goes quiet forever.
    StallAfter { tokens: u32 },
    /// Refuses with a throttle asking to retry after this long.
    RetryAfter(Duration),
    /// Refuses as unavailable.
    Down,
    /// Refuses as unavailable after this long.
    DownAfter(Duration),
}

#[derive(Default)]
struct Scripted {
    regions: HashMap<&'static str, Behaviour>,
    /// What a region does from now on, instead of `regions`' (a fault that begins mid-run).
    changed: std::sync::Mutex<HashMap<&'static str, Behaviour>>,
    sent: AtomicU32,
}

fn refusal(call: &Call<'_>, kind: ErrorKind, retry_after: Option<Duration>) -> Error {
    let mut e = ServiceError::new(
        kind,
        "scripted refusal",
        call.attempt.target.id(),
        call.attempt.target.region(),
    )
    .with_code("Scripted");
    e.http_status = Some(429);
    e.retry_after = retry_after;
    Error::from(e)
}

impl Scripted {
    fn behaviour(&self, call: &Call<'_>) -> Behaviour {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let region = call.attempt.target.region();
        match self.changed.lock().unwrap().get(region) {
            Some(b) => *b,
            None => self.regions[region],
        }
    }

    /// From now on, `region` does `behaviour`.
    fn change(&self, region: &'static str, behaviour: Behaviour) {
        self.changed.lock().unwrap().insert(region, behaviour);
    }
}

fn events(tokens: u32, ttft: Duration, gap: Duration, stall: bool) -> EventStream {
    Box::pin(async_stream::stream! {
        tokio::time::sleep(ttft).await;
        for i in 0..tokens {
            if i > 0 {
                tokio::time::sleep(gap).await;
            }
            yield Ok(BackendEvent::TextDelta { index: 0, text: format!("t{i} ") });
        }
        if stall {
            std::future::pending::<()>().await;
        }
        yield Ok(BackendEvent::Stop(StopReason::EndTurn));
        yield Ok(BackendEvent::Metadata {
            usage: Usage { input_tokens: 3, output_tokens: tokens, ..Usage::default() },
            served_tier: None,
            invoked_model: None,
        });
    })
}

impl Backend for Scripted {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, laneway::Result<Completion>> {
        Box::pin(async move {
            match self.behaviour(&call) {
                Behaviour::Stall | Behaviour::StallAfter { .. } => {
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                Behaviour::Answer { ttft, gap, tokens } => {
                    tokio::time::sleep(ttft + gap * tokens.saturating_sub(1)).await;
                    Ok(Completion {
                        content: vec![laneway::OutputBlock::Text("answer".into())],
                        stop_reason: StopReason::EndTurn,
                        usage: Usage {
                            input_tokens: 3,
                            output_tokens: tokens,
                            ..Usage::default()
                        },
                        served_tier: None,
                        invoked_model: None,
                        model_response_fields: None,
                        guardrail_trace: None,
                    })
                }
                Behaviour::RetryAfter(d) => Err(refusal(&call, ErrorKind::Throttled, Some(d))),
                Behaviour::Down => Err(refusal(&call, ErrorKind::Unavailable, None)),
                Behaviour::DownAfter(d) => {
                    tokio::time::sleep(d).await;
                    Err(refusal(&call, ErrorKind::Unavailable, None))
                }
            }
        })
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, laneway::Result<EventStream>> {
        Box::pin(async move {
            match self.behaviour(&call) {
                Behaviour::Stall => {
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                Behaviour::Answer { ttft, gap, tokens } => Ok(events(tokens, ttft, gap, false)),
                Behaviour::StallAfter { tokens } => Ok(events(
                    tokens,
                    Duration::from_millis(50),
                    Duration::from_millis(10),
                    true,
                )),
                Behaviour::RetryAfter(d) => Err(refusal(&call, ErrorKind::Throttled, Some(d))),
                Behaviour::Down => Err(refusal(&call, ErrorKind::Unavailable, None)),
                Behaviour::DownAfter(d) => {
                    tokio::time::sleep(d).await;
                    Err(refusal(&call, ErrorKind::Unavailable, None))
                }
            }
        })
    }
}

const FAST: Behaviour = Behaviour::Answer {
    ttft: Duration::from_millis(100),
    gap: Duration::from_millis(10),
    tokens: 20,
};

/// us-east-1 accepts and never answers; the other regions answer fast.
const EAST_STALLS: [(&str, Behaviour); 3] = [
    ("us-east-1", Behaviour::Stall),
    ("us-west-2", FAST),
    ("eu-west-1", FAST),
];

/// One target only: the EU profile under EU residency.
fn eu_only() -> GenerateRequest {
    GenerateRequest::user("hello")
        .model("eu.amazon.nova-lite-v1:0")
        .residency(laneway::Residency::Geography(
            laneway::Geography::new("eu").unwrap(),
        ))
}

/// An executor over the startup configuration whose three nova regions behave as given.
fn executor(
    extra: &str,
    regions: [(&'static str, Behaviour); 3],
) -> (Arc<Executor>, Arc<Scripted>) {
    let backend = Arc::new(Scripted {
        regions: regions.into_iter().collect(),
        ..Scripted::default()
    });
    let config = common::config(extra);
    let mut backends = Backends::default();
    backends.insert(Provider::Bedrock, Arc::clone(&backend) as Arc<dyn Backend>);
    let exec = Executor::new(config, backends).unwrap();
    (Arc::new(exec), backend)
}

fn request() -> GenerateRequest {
    // Pinned to the bare model id: one target per region, us-east-1 first.
    GenerateRequest::user("hello")
        .model("amazon.nova-lite-v1:0")
        .max_tokens(20)
}

async fn generate(
    exec: &Arc<Executor>,
    req: GenerateRequest,
) -> laneway::Result<laneway::GenerateResponse> {
    let plan = exec.plan(&req)?;
    exec.generate(&req, plan).await
}

async fn stream(
    exec: &Arc<Executor>,
    req: GenerateRequest,
) -> (String, laneway::Result<laneway::GenerateResponse>) {
    let plan = exec.plan(&req).unwrap();
    let mut s = Arc::clone(exec).stream(req, plan);
    let mut text = String::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(StreamEvent::TextDelta { text: t, .. }) => text.push_str(&t),
            Ok(StreamEvent::Completed(done)) => return (text, Ok(*done)),
            Ok(_) => {}
            Err(e) => return (text, Err(e)),
        }
    }
    panic!("the stream ended without Completed or an error")
}

/// The limit, its length and its source of every time limit that fired.
fn limit_sources(reasons: &[Reason]) -> Vec<(TimeLimit, u64, laneway::LimitSource)> {
    reasons
        .iter()
        .filter_map(|r| match r {
            Reason::TimeLimitHit {
                limit,
                limit_ms,
                source,
                ..
            } => Some((*limit, *limit_ms, *source)),
            _ => None,
        })
        .collect()
}

const ALL_FAST: [(&str, Behaviour); 3] = [
    ("us-east-1", FAST),
    ("us-west-2", FAST),
    ("eu-west-1", FAST),
];

/// Learnt limits alone (on by default), without the standard class's hedges, which would
/// answer from another region before a limit fired.
const LEARNING: &str = "[routing.hedge]\nstandard = false\n";

/// Calls answered by us-east-1 (the plan's first target), enough for its limits to be learnt.
async fn warm_up(exec: &Arc<Executor>, calls: u32) {
    for _ in 0..calls {
        let done = generate(exec, request()).await.unwrap();
        assert_eq!(done.decision.region, "us-east-1");
    }
}

#[tokio::test(start_paused = true)]
async fn a_region_that_stalls_after_answering_costs_its_learnt_limit_not_the_class_ceiling() {
    let (exec, backend) = executor(LEARNING, ALL_FAST);
    warm_up(&exec, 25).await;
    backend.change("us-east-1", Behaviour::Stall);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    // 3 x its 100 ms first tokens is under the 1 s floor: the stall cost 1 s, not the
    // standard class's 30 s, then the next region's 100 ms first token and 19 x 10 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(1000 + 100 + 190));
    let learned = laneway::LimitSource::Learned {
        quantile: 0.99,
        observed_ms: 100,
        factor: 3.0,
        samples: 25,
    };
    assert_eq!(
        limit_sources(&done.decision.reasons),
        vec![(TimeLimit::FirstToken, 1000, learned)]
    );

    // A slower target's own limit is its quantile times the factor, above the floor.
    let slow = Behaviour::Answer {
        ttft: Duration::from_millis(600),
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    let (exec, backend) = executor(
        LEARNING,
        [
            ("us-east-1", slow),
            ("us-west-2", FAST),
            ("eu-west-1", FAST),
        ],
    );
    warm_up(&exec, 20).await;
    backend.change("us-east-1", Behaviour::Stall);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(1800 + 100 + 190));
    assert_eq!(limit_sources(&done.decision.reasons)[0].1, 1800);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_quiet_after_answering_costs_its_learnt_idle_limit() {
    let (exec, backend) = executor(LEARNING, ALL_FAST);
    warm_up(&exec, 25).await;
    backend.change("us-east-1", Behaviour::StallAfter { tokens: 5 });
    let started = Instant::now();
    // Whole: nothing reached the caller, so the next region answers it.
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    // 50 ms and 4 x 10 ms of tokens, the learnt 1 s of silence (its gaps were 10 ms), then the
    // next region's answer.
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(50 + 40 + 1000 + 100 + 190)
    );
    let hit = limit_sources(&done.decision.reasons);
    assert_eq!(hit.len(), 1);
    assert_eq!((hit[0].0, hit[0].1), (TimeLimit::Idle, 1000));
    assert!(
        matches!(
            hit[0].2,
            laneway::LimitSource::Learned {
                observed_ms: 10,
                samples: 25,
                ..
            }
        ),
        "{hit:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_prompt_longer_than_any_seen_may_take_longer_for_its_first_token() {
    let (exec, backend) = executor(LEARNING, ALL_FAST);
    warm_up(&exec, 25).await;
    // A first token after 3 s, as a long prompt's prefill may take: within the learnt limit
    // grown by its input (about 40,000 tokens at 5,000 a second), so the region answers
    // instead of being cut at 1 s.
    backend.change(
        "us-east-1",
        Behaviour::Answer {
            ttft: Duration::from_secs(3),
            gap: Duration::from_millis(10),
            tokens: 20,
        },
    );
    let long = GenerateRequest::user("lorem ipsum dolor sit amet ".repeat(6_000))
        .model("amazon.nova-lite-v1:0")
        .max_tokens(20);
    let done = generate(&exec, long).await.unwrap();
    assert_eq!(done.decision.region, "us-east-1");
    assert!(limit_sources(&done.decision.reasons).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_target_cut_by_its_learnt_limit_is_given_longer_and_measured_again() {
    let (exec, backend) = executor(LEARNING, ALL_FAST);
    warm_up(&exec, 25).await;
    // us-east-1 slows down for good: its first tokens now take 1.5 s, past its learnt 1 s.
    let slower = Behaviour::Answer {
        ttft: Duration::from_millis(1500),
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    backend.change("us-east-1", slower);
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    assert_eq!(
        limit_sources(&done.decision.reasons)[0].1,
        1000,
        "cut at its learnt limit"
    );
    // The cut counts as a first token at 1 s: the limit grows to 3 x 1 s, and the region is
    // measured at its new speed instead of being cut at 1 s for good.
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-east-1");
    assert!(limit_sources(&done.decision.reasons).is_empty());
    assert_eq!(done.timings.ttft, Some(Duration::from_millis(1500)));
}

#[tokio::test(start_paused = true)]
async fn a_standard_call_hedges_after_its_first_targets_high_quantile() {
    let (exec, backend) = executor("", ALL_FAST);
    warm_up(&exec, 25).await;
    backend.change("us-east-1", Behaviour::Stall);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    let hedge = done.decision.hedge.expect("hedged");
    assert!(hedge.hedge_won);
    // Its first tokens took 100 ms, so did its 95th percentile: the hedge went then, and its
    // answer took 100 ms and 19 x 10 ms. No time limit was waited for.
    assert_eq!(hedge.delay, Duration::from_millis(100));
    assert_eq!(started.elapsed(), Duration::from_millis(100 + 100 + 190));
    assert!(limit_sources(&done.decision.reasons).is_empty());
    // Before its first tokens are known, a standard call hedges after its model's prior (Nova
    // Lite's 99th percentile at standard), not the class's 30 s first-token limit.
    let (exec, _) = executor("", EAST_STALLS);
    let prior = lite_prior(&exec);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    let hedge = done.decision.hedge.expect("a cold call hedges too");
    assert!(hedge.hedge_won);
    assert_eq!(hedge.delay, prior.ttft_p99);
    assert_eq!(
        started.elapsed(),
        prior.ttft_p99 + Duration::from_millis(100 + 190)
    );
    // Without priors (weight 0), as before: no hedge until the target's own are known.
    let (exec, _) = executor("[routing.priors]\nweight = 0\n", EAST_STALLS);
    let done = generate(&exec, request()).await.unwrap();
    assert!(done.decision.hedge.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_cold_hedge_does_not_count_the_time_a_call_waited_in_line() {
    // One slot per target, every region answering inside the model's prior: five calls fill
    // the model's five targets (its bare id and profiles) and a sixth waits in line for a
    // slot. Its attempt, once sent, answers within the prior: it is not hedged, however long
    // it waited first.
    let prior = lite_prior(&executor("", ALL_FAST).0);
    let slow = Behaviour::Answer {
        ttft: prior.ttft_p99 - Duration::from_millis(250),
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    let (exec, _) = executor(
        "[routing.overflow]\nenabled = false\n[models.\"amazon.nova-lite-v1:0\".quota]\nmax_concurrency = 1\n",
        [
            ("us-east-1", slow),
            ("us-west-2", slow),
            ("eu-west-1", slow),
        ],
    );
    let calls: Vec<_> = (0..6).map(|_| generate(&exec, request())).collect();
    let done = futures::future::join_all(calls).await;
    let queued = done
        .iter()
        .map(|d| d.as_ref().unwrap())
        .find(|d| {
            d.decision
                .reasons
                .iter()
                .any(|r| matches!(r, Reason::Queued { .. }))
        })
        .expect("a sixth call waited for a slot");
    assert!(
        queued.timings.total > prior.ttft_p99,
        "{:?}",
        queued.timings
    );
    assert!(
        queued.decision.hedge.is_none(),
        "{:?}",
        queued.decision.hedge
    );
}

#[tokio::test(start_paused = true)]
async fn a_model_ten_times_slower_than_its_prior_is_still_served() {
    // Every region takes 25 s to its first token, over ten times the model's prior: the cold
    // limits (3 x the prior) cut the first attempts, each cut gives the target 3 x longer,
    // and the call is answered within its deadline; the next call waits the class's limit,
    // which fits, and pays nothing.
    let slow = Behaviour::Answer {
        ttft: Duration::from_secs(25),
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    let (exec, _) = executor(
        "",
        [
            ("us-east-1", slow),
            ("us-west-2", slow),
            ("eu-west-1", slow),
        ],
    );
    let first = generate(&exec, request())
        .await
        .expect("served despite its prior");
    let cut: Vec<_> = limit_sources(&first.decision.reasons);
    assert!(!cut.is_empty(), "the prior's limits cut the first attempts");
    assert!(
        cut.iter()
            .any(|(_, _, s)| matches!(s, laneway::LimitSource::Prior { .. })),
        "{cut:?}"
    );
    // The limits grew: each target's second cut (if any) came later than its first.
    let lengths: Vec<u64> = cut.iter().map(|(_, ms, _)| *ms).collect();
    assert!(lengths.iter().max() > lengths.iter().min(), "{lengths:?}");
    let started = Instant::now();
    let second = generate(&exec, request()).await.unwrap();
    assert!(
        second.decision.failed_attempts.is_empty(),
        "{:?}",
        second.decision.failed_attempts
    );
    assert_eq!(started.elapsed(), Duration::from_millis(25_000 + 190));
}

#[tokio::test(start_paused = true)]
async fn a_hedge_with_every_target_full_goes_once_one_has_room() {
    // One slot per target, three targets: the first call stalls in us-east-1, the next two
    // fill the others until 1.5 x the prior's p99 (and their 19 gaps). At the first call's
    // hedge delay (the p99) nothing has room; the hedge is asked for again each delay and goes
    // at twice the p99, before the primary's first-token limit (3 x the p99) would fail it
    // over.
    let p99 = lite_prior(&executor("", ALL_FAST).0).ttft_p99;
    let slow = Behaviour::Answer {
        ttft: p99 * 3 / 2,
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    let (exec, _) = executor(
        "[routing.overflow]\nenabled = false\n[models.\"amazon.nova-lite-v1:0\".quota]\nmax_concurrency = 1\n",
        [
            ("us-east-1", Behaviour::Stall),
            ("us-west-2", slow),
            ("eu-west-1", slow),
        ],
    );
    let started = Instant::now();
    let first = generate(&exec, request());
    let others = async {
        tokio::task::yield_now().await;
        futures::future::join(generate(&exec, request()), generate(&exec, request())).await
    };
    let (first, (b, c)) = futures::future::join(first, others).await;
    assert!(b.is_ok() && c.is_ok());
    let first = first.unwrap();
    assert!(
        first.decision.hedge.is_some(),
        "hedged once a target had room"
    );
    assert_eq!(
        started.elapsed(),
        p99 * 2 + p99 * 3 / 2 + Duration::from_millis(190)
    );
}

#[tokio::test(start_paused = true)]
async fn calls_wait_for_room_rather_than_overflow_into_an_ejected_region() {
    // us-east-1 stalls and is ejected by three hedged calls; then, one slot per target, a
    // burst fills the targets elsewhere. The rest wait in line for them: none overflows to
    // the `us.` profile called from us-east-1.
    let slow = Behaviour::Answer {
        ttft: Duration::from_secs(1),
        gap: Duration::from_millis(10),
        tokens: 20,
    };
    let (exec, _) = executor(
        "[models.\"amazon.nova-lite-v1:0\".quota]\nmax_concurrency = 1\n",
        [
            ("us-east-1", Behaviour::Stall),
            ("us-west-2", slow),
            ("eu-west-1", slow),
        ],
    );
    for _ in 0..3 {
        generate(&exec, request()).await.unwrap();
    }
    let plan = exec.plan(&request()).unwrap();
    assert!(ejected(&plan.reasons, "us-east-1"), "{:?}", plan.reasons);
    let burst = futures::future::join_all((0..6).map(|_| generate(&exec, request()))).await;
    for done in burst {
        let done = done.unwrap();
        assert_ne!(done.decision.region, "us-east-1");
        assert!(
            done.decision.failed_attempts.is_empty(),
            "{:?}",
            done.decision.failed_attempts
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_fresh_process_starts_from_what_its_last_run_kept_in_its_local_state_file() {
    let dir = std::env::temp_dir().join(format!("laneway-local-state-{:x}", rand::random::<u64>()));
    let path = dir.join("state.json");
    let config = format!("[local_state]\npath = {:?}\n", path.display().to_string());
    // The first run: us-east-1 stalls and is ejected; us-west-2 answers in 100 ms.
    let (exec, _) = executor(&config, EAST_STALLS);
    exec.restore_local_state();
    for _ in 0..3 {
        generate(&exec, request()).await.unwrap();
    }
    assert!(ejected(
        &exec.plan(&request()).unwrap().reasons,
        "us-east-1"
    ));
    drop(exec);
    assert!(path.exists(), "written when the router was dropped");

    // The next run, fresh: us-east-1 is still ejected (no call there), and us-west-2, which
    // now stalls, is hedged after its first tokens' 100 ms as the last run saw them, not
    // after the model's prior.
    let (exec, backend) = executor(&config, ALL_FAST);
    exec.restore_local_state();
    backend.change("us-west-2", Behaviour::Stall);
    let plan = exec.plan(&request()).unwrap();
    assert!(ejected(&plan.reasons, "us-east-1"), "{:?}", plan.reasons);
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "eu-west-1");
    assert_eq!(
        done.decision.hedge.map(|h| h.delay),
        Some(Duration::from_millis(100))
    );
    // Without the file, the prior.
    drop(exec);
    std::fs::remove_dir_all(&dir).unwrap();
    let (exec, backend) = executor(&config, ALL_FAST);
    exec.restore_local_state();
    backend.change("us-east-1", Behaviour::Stall);
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(
        done.decision.hedge.map(|h| h.delay),
        Some(lite_prior(&exec).ttft_p99)
    );
    drop(exec);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Nova Lite's prior at the standard tier on Converse, as the router's configuration has it.
fn lite_prior(exec: &Executor) -> laneway::config::LatencyPrior {
    exec.config.latency_prior(
        "amazon.nova-lite-v1:0",
        Some(laneway::ServiceTier::STANDARD),
        laneway::Api::Converse,
    )
}

/// Whether the plan demoted `region`'s targets for the region's ejection.
fn ejected(reasons: &[Reason], region: &str) -> bool {
    reasons.iter().any(|r| {
        matches!(r, Reason::TargetDemoted { region: r, health: laneway::BreakerView::RegionEjected, .. } if &**r == region)
    })
}

#[tokio::test(start_paused = true)]
async fn a_region_that_stalls_is_ejected_for_every_model_and_profile_called_there() {
    let (exec, backend) = executor("", ALL_FAST);
    warm_up(&exec, 25).await;
    backend.change("us-east-1", Behaviour::Stall);
    // Three calls hedge away from the stall: the third ejects the region.
    for call in 1..=3 {
        let done = generate(&exec, request()).await.unwrap();
        assert!(done.decision.hedge.is_some_and(|h| h.hedge_won));
        let ejection = done
            .decision
            .reasons
            .iter()
            .find(|r| matches!(r, Reason::RegionEjected { .. }));
        assert_eq!(
            ejection.is_some(),
            call == 3,
            "call {call}: {:?}",
            done.decision.reasons
        );
    }
    // Now no call waits on it, for this model or another one, its bare id or a profile
    // called from there.
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    assert!(done.decision.hedge.is_none());
    assert_eq!(started.elapsed(), Duration::from_millis(100 + 190));
    assert!(ejected(&done.decision.reasons, "us-east-1"));
    let other = GenerateRequest::user("hello").model("amazon.nova-pro-v1:0");
    let plan = exec.plan(&other).unwrap();
    assert_ne!(plan.attempts[0].target.region(), "us-east-1");
    assert!(ejected(&plan.reasons, "us-east-1"), "{:?}", plan.reasons);
}

#[tokio::test(start_paused = true)]
async fn limits_start_from_the_prior_and_are_the_class_s_with_learning_or_priors_off() {
    let first_token = |exec: &Arc<Executor>| exec.config.routing.timeouts.standard.first_token;
    // A cold router: 3 x the model's prior, not the class's 30 s.
    let (exec, _) = executor(LEARNING, EAST_STALLS);
    let p99 = lite_prior(&exec).ttft_p99;
    let ms = |d: Duration| d.as_millis() as u64;
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(started.elapsed(), p99 * 3 + Duration::from_millis(290));
    let [
        (
            TimeLimit::FirstToken,
            limit_ms,
            laneway::LimitSource::Prior {
                prior_ms,
                observed_ms: None,
                samples: 0,
                ..
            },
        ),
    ] = limit_sources(&done.decision.reasons)[..]
    else {
        panic!("{:?}", done.decision.reasons)
    };
    assert_eq!((limit_ms, prior_ms), (ms(p99 * 3), ms(p99)));
    // A few answers move it: 19 of 100 ms blend with the prior's 4,
    // (4 x prior + 19 x 0.1 s) / 23, x 3 (at least the 1 s floor).
    let (exec, backend) = executor(LEARNING, ALL_FAST);
    warm_up(&exec, 19).await;
    backend.change("us-east-1", Behaviour::Stall);
    let blended = Duration::from_secs_f64((4.0 * p99.as_secs_f64() + 19.0 * 0.1) / 23.0 * 3.0)
        .max(Duration::from_secs(1));
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    // (The paused clock's timers fire on whole milliseconds.)
    let waited = started.elapsed() - Duration::from_millis(290);
    assert!(
        waited >= blended && waited < blended + Duration::from_millis(2),
        "{waited:?}"
    );
    assert!(blended < p99 * 3);
    let [
        (
            TimeLimit::FirstToken,
            _,
            laneway::LimitSource::Prior {
                observed_ms: Some(100),
                samples: 19,
                ..
            },
        ),
    ] = limit_sources(&done.decision.reasons)[..]
    else {
        panic!("{:?}", done.decision.reasons)
    };
    // Priors off (weight 0): the class's limit until `min_samples` answers.
    let (exec, backend) = executor(
        "[routing.hedge]\nstandard = false\n[routing.priors]\nweight = 0\n",
        ALL_FAST,
    );
    warm_up(&exec, 19).await;
    backend.change("us-east-1", Behaviour::Stall);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(
        started.elapsed(),
        first_token(&exec) + Duration::from_millis(290)
    );
    assert_eq!(
        limit_sources(&done.decision.reasons),
        vec![(TimeLimit::FirstToken, 30_000, laneway::LimitSource::Class)]
    );
    // Learning off.
    let (exec, backend) = executor(
        "[routing.timeouts.learned]\nenabled = false\n[routing.hedge]\nstandard = false\n",
        ALL_FAST,
    );
    warm_up(&exec, 25).await;
    backend.change("us-east-1", Behaviour::Stall);
    let started = Instant::now();
    generate(&exec, request()).await.unwrap();
    assert_eq!(
        started.elapsed(),
        first_token(&exec) + Duration::from_millis(290)
    );
}

fn limits_hit(reasons: &[Reason]) -> Vec<(TimeLimit, String)> {
    reasons
        .iter()
        .filter_map(|r| match r {
            Reason::TimeLimitHit { limit, region, .. } => Some((*limit, region.to_string())),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_stalled_region_costs_a_cold_router_its_models_prior_not_the_class_ceiling() {
    // The defaults, no call seen: the first call hedges after the model's prior.
    let (exec, _) = executor("", EAST_STALLS);
    let prior = lite_prior(&exec);
    let started = Instant::now();
    let (_, done) = stream(&exec, request()).await;
    let done = done.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    assert!(done.decision.hedge.is_some_and(|h| h.hedge_won));
    assert_eq!(
        started.elapsed(),
        prior.ttft_p99 + Duration::from_millis(290)
    );

    // Without hedging, the stall costs one first-token limit: 3 x the prior.
    let (exec, _) = executor(LEARNING, EAST_STALLS);
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    assert_eq!(
        limits_hit(&done.decision.reasons),
        vec![(TimeLimit::FirstToken, "us-east-1".to_string())]
    );
    assert_eq!(done.decision.failed_attempts[0].code, "FirstTokenTimeout");
    assert_eq!(
        started.elapsed(),
        prior.ttft_p99 * 3 + Duration::from_millis(290)
    );

    // Sent as Converse (`stream_generate = false`): hedged by elapsed time, after the prior's
    // first token and the answer's 20 tokens at the prior's speed.
    let (exec, _) = executor(
        "[routing]\nmax_attempts = 3\nstream_generate = false\n",
        EAST_STALLS,
    );
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    let whole = prior.ttft_p99 + Duration::from_secs_f64(20.0 / prior.tokens_per_second);
    assert_eq!(done.decision.hedge.map(|h| h.delay), Some(whole));
    assert_eq!(started.elapsed(), whole + Duration::from_millis(290));
    // A whole answer's time is not a first token's: nothing is learnt from it, and the
    // caller is told no first-token time.
    let tier = Some(laneway::ServiceTier::STANDARD);
    let lite = "amazon.nova-lite-v1:0";
    assert_eq!(
        exec.state
            .health()
            .ttft_quantile("us-west-2", lite, tier, 0.5),
        None
    );
    assert_eq!(done.timings.ttft, None);

    // Sent as Converse and not hedged: only the whole-answer limit can fire, the prior's first
    // token and the answer at the slowest speed allowed.
    let (exec, _) = executor(
        "[routing]\nmax_attempts = 3\nstream_generate = false\n[routing.hedge]\nstandard = false\n",
        EAST_STALLS,
    );
    let started = Instant::now();
    let done = generate(&exec, request()).await.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    assert_eq!(
        limits_hit(&done.decision.reasons),
        vec![(TimeLimit::Answer, "us-east-1".to_string())]
    );
    let t = exec.config.routing.timeouts;
    let answer_limit = prior.ttft_p99 * 3 + Duration::from_secs_f64(20.0 / t.min_tokens_per_second);
    assert_eq!(started.elapsed(), answer_limit + Duration::from_millis(290));
}

#[tokio::test(start_paused = true)]
async fn a_ttft_target_derives_the_first_token_limit() {
    let (exec, _) = executor(
        "[routing.hedge]\nenabled = false\nquantile = 0.9\nmin_delay = 50.0\n",
        EAST_STALLS,
    );
    let started = Instant::now();
    let req = request()
        .slo_class(SloClass::Interactive)
        .ttft_target(Duration::from_millis(500));
    let (_, done) = stream(&exec, req).await;
    assert_eq!(done.unwrap().decision.region, "us-west-2");
    // 4 x 500 ms, then the next region's 100 ms first token and 19 x 10 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(2000 + 100 + 190));
}

#[tokio::test(start_paused = true)]
async fn when_every_region_stalls_the_call_ends_at_its_deadline() {
    let (exec, backend) = executor(
        "",
        [
            ("us-east-1", Behaviour::Stall),
            ("us-west-2", Behaviour::Stall),
            ("eu-west-1", Behaviour::Stall),
        ],
    );
    let deadline = Duration::from_secs(45);
    let started = Instant::now();
    let (_, result) = stream(&exec, request().deadline(deadline)).await;
    let err = result.unwrap_err();
    assert_eq!(
        started.elapsed(),
        deadline,
        "nothing waits past the deadline"
    );
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    // A hedge after the prior, first-token limits from the prior that grow with each cut,
    // and the last attempt ends at the deadline; every attempt sent is accounted for.
    let codes: Vec<_> = attempts.iter().map(|a| a.code.as_str()).collect();
    let (last, cut) = codes.split_last().unwrap();
    assert_eq!(*last, "DeadlineExceeded", "{err}");
    assert!(
        !cut.is_empty() && cut.iter().all(|c| *c == "FirstTokenTimeout"),
        "{err}"
    );
    assert_eq!(
        backend.sent.load(Ordering::Relaxed) as usize,
        attempts.len()
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_quiet_ends_at_the_idle_limit_with_what_was_delivered() {
    let (exec, _) = executor(
        "[routing.timeouts.standard]\nfirst_token = 5000.0\nidle = 2000.0\ndeadline = 60000.0\n",
        [
            ("us-east-1", Behaviour::StallAfter { tokens: 5 }),
            ("us-west-2", FAST),
            ("eu-west-1", FAST),
        ],
    );
    let started = Instant::now();
    let (text, result) = stream(&exec, request()).await;
    let err = result.unwrap_err();
    let Error::StreamInterrupted { delivered, cause } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(text, "t0 t1 t2 t3 t4 ");
    assert_eq!(delivered.deltas, 5);
    let Error::Service(cause) = cause.as_ref() else {
        panic!("{cause:?}")
    };
    assert_eq!(cause.code, "IdleTimeout");
    // 50 ms first token, 4 x 10 ms, then 2 s of silence.
    assert_eq!(started.elapsed(), Duration::from_millis(50 + 40 + 2000));
}

#[tokio::test(start_paused = true)]
async fn an_outage_of_every_target_is_retried_in_rounds_until_it_ends() {
    // One target per region, the bare id everywhere, as the rounds below count them.
    let (exec, backend) = executor(
        "[models.\"amazon.nova-lite-v1:0\"]\nin_region = [\"us-east-1\", \"us-west-2\", \"eu-west-1\"]\n",
        [
            ("us-east-1", Behaviour::Down),
            ("us-west-2", Behaviour::Down),
            ("eu-west-1", Behaviour::Down),
        ],
    );
    let deadline = Duration::from_secs(10);
    let started = Instant::now();
    let err = generate(&exec, request().deadline(deadline))
        .await
        .unwrap_err();
    assert!(started.elapsed() <= deadline);
    let Error::AllTargetsFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        attempts.len() > 3,
        "rounds after the first: {}",
        attempts.len()
    );
    assert_eq!(attempts.len() as u32, backend.sent.load(Ordering::Relaxed));
    assert!(
        attempts.last().unwrap().message.contains("deadline"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_up_to_its_cap_and_never_past_the_deadline() {
    // One target only (the EU profile), asking to retry after 3 s: within the 20 s cap.
    let (exec, backend) = executor(
        "",
        [
            ("us-east-1", FAST),
            ("us-west-2", FAST),
            ("eu-west-1", Behaviour::RetryAfter(Duration::from_secs(3))),
        ],
    );
    let eu = eu_only;
    let started = Instant::now();
    let err = generate(&exec, eu().deadline(Duration::from_secs(10)))
        .await
        .unwrap_err();
    // Sent at 0, 3, 6 and 9 s; then another 3 s would pass the deadline: it fails at once.
    assert_eq!(backend.sent.load(Ordering::Relaxed), 4);
    assert!(started.elapsed() >= Duration::from_secs(9));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(err.to_string().contains("deadline"), "{err}");

    // Asking for an hour: not waited for at all.
    let (exec, backend) = executor(
        "",
        [
            ("us-east-1", FAST),
            ("us-west-2", FAST),
            (
                "eu-west-1",
                Behaviour::RetryAfter(Duration::from_secs(3600)),
            ),
        ],
    );
    let started = Instant::now();
    let err = generate(&exec, eu()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(backend.sent.load(Ordering::Relaxed), 1);
    assert!(err.to_string().contains("max_retry_after"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn the_retry_budget_is_checked_before_the_back_off() {
    let (exec, _) = executor(
        "[routing.budget]\nratio = 0.0\nmin_per_second = 0.0\nwindow = 10000.0\n",
        [
            ("us-east-1", Behaviour::Down),
            ("us-west-2", Behaviour::Down),
            ("eu-west-1", Behaviour::Down),
        ],
    );
    let started = Instant::now();
    let err = generate(&exec, eu_only()).await.unwrap_err();
    // No budget: one attempt, and no back-off slept before failing.
    assert_eq!(started.elapsed(), Duration::ZERO);
    let Error::AllTargetsFailed {
        budget_exhausted, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert!(budget_exhausted);
}

#[tokio::test(start_paused = true)]
async fn an_interactive_stream_hedges_away_from_a_stalled_region() {
    let (exec, _) = executor(
        "[routing.hedge]\nenabled = true\nquantile = 0.9\nmin_delay = 50.0\n",
        EAST_STALLS,
    );
    let started = Instant::now();
    let req = request()
        .slo_class(SloClass::Interactive)
        .ttft_target(Duration::from_millis(500));
    let (_, done) = stream(&exec, req).await;
    let done = done.unwrap();
    assert_eq!(done.decision.region, "us-west-2");
    let hedge = done.decision.hedge.expect("a hedge was sent");
    assert!(hedge.hedge_won);
    // The hedge left after half the TTFT target (no TTFT seen yet) and answered in 290 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(250 + 100 + 190));
}

#[tokio::test(start_paused = true)]
async fn a_single_target_cut_by_the_deadline_reports_what_it_answered() {
    // The EU profile only; it is down, and its answers come late enough that the deadline
    // falls during a try.
    let (exec, _) = executor(
        "",
        [
            ("us-east-1", FAST),
            ("us-west-2", FAST),
            ("eu-west-1", Behaviour::Stall),
        ],
    );
    let eu = eu_only();
    // Nothing but stalls: the deadline's own error is all there is.
    let err = generate(&exec, eu.clone().deadline(Duration::from_millis(500)))
        .await
        .unwrap_err();
    let Error::Service(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code, "DeadlineExceeded");

    // Down, answering 503 after 100 ms, with a 250 ms deadline: tries follow one another until
    // the deadline, which falls during a try or leaves no time for another. Either way the
    // error is the target's own 503, and it says the deadline ended the call.
    for _ in 0..20 {
        let (exec, backend) = executor(
            "",
            [
                ("us-east-1", FAST),
                ("us-west-2", FAST),
                (
                    "eu-west-1",
                    Behaviour::DownAfter(Duration::from_millis(100)),
                ),
            ],
        );
        let err = generate(&exec, eu.clone().deadline(Duration::from_millis(250)))
            .await
            .unwrap_err();
        assert!(backend.sent.load(Ordering::Relaxed) >= 2);
        let Error::Service(e) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(e.kind, ErrorKind::Unavailable, "{err}");
        assert!(e.message.contains("deadline"), "{err:?}");
    }
}
