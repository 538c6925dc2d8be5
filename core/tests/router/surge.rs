//! Surges beyond a target's capacity, with the defaults a user gets: spread by headroom,
//! learn each target's concurrency from its throttles, overflow, queue within deadlines and
//! shed by class (`[routing.concurrency]`, `[routing.overflow]`).
//!
//! The emulator's world has small, named capacity: Nova Micro takes 4 requests at once per
//! target (its in-region id in us-east-1 and its `us.` and `eu.` profiles from the built-in
//! configuration's three regions: four targets, 16 slots), and answers in about 300 ms of
//! scenario time, which runs at a quarter of real time here, so that what is asserted is the
//! router's doing and not the machine's.

use std::time::Duration;

use tokio::time::Instant;

use futures::future::join_all;
use laneway::{
    Error, ErrorKind, GenerateRequest, GenerateResponse, Reason, Router, SloClass, TimeLimit,
};
use laneway_emulator::Emulator;

use crate::common;

const MICRO: &str = "amazon.nova-micro-v1:0";
const LITE: &str = "amazon.nova-lite-v1:0";
/// Requests each target takes at once.
const CAPACITY: u32 = 4;
/// Nova Micro's targets under the built-in configuration.
const MICRO_TARGETS: u32 = 4;

/// The world: Nova Micro and Lite with `CAPACITY` per target, 300 ms to the first token (no
/// spread) and a short answer at once after it.
async fn small_world() -> Emulator {
    common::small_capacity_world(&[MICRO, LITE], CAPACITY).await
}

/// A router with the defaults a user gets, pointed at the emulator.
async fn router(emu: &Emulator) -> Router {
    common::router_with(emu, laneway::Config::default()).await
}

fn call(i: usize, class: SloClass) -> GenerateRequest {
    GenerateRequest::user(format!("Call {i}: name one colour."))
        .model(MICRO)
        .slo_class(class)
        .max_tokens(64)
}

/// How long the call waited in the client-side queue, from its decision.
fn queued(r: &GenerateResponse) -> Duration {
    let ms = r
        .decision
        .reasons
        .iter()
        .filter_map(|r| match r {
            Reason::Queued { waited_ms, .. } => Some(*waited_ms),
            _ => None,
        })
        .sum();
    Duration::from_millis(ms)
}

/// Sends `n` calls at once; every result, and how long the burst took.
async fn burst(
    router: &Router,
    n: usize,
    class: SloClass,
) -> (Vec<Result<GenerateResponse, Error>>, Duration) {
    let started = Instant::now();
    let results = join_all((0..n).map(|i| router.generate(call(i, class)))).await;
    (results, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_eight_times_capacity_is_answered_in_full_fresh_and_warm() {
    let emu = small_world().await;
    let slots = CAPACITY * MICRO_TARGETS;
    let n = 8 * slots as usize;
    let router = router(&emu).await;

    // Fresh: nothing known of any target's capacity.
    let (fresh, fresh_took) = burst(&router, n, SloClass::Standard).await;
    let failed: Vec<_> = fresh.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {n} failed: {:?}",
        failed.len(),
        failed.first()
    );
    // The first wave teaches each target its limit: at most the initial limit's excess.
    let initial = laneway::Config::default().routing.concurrency.initial_limit;
    let taught = common::throttles_seen(&emu);
    assert!(
        taught <= u64::from(MICRO_TARGETS * (initial - CAPACITY)),
        "{taught} throttles to learn {MICRO_TARGETS} targets' limits"
    );
    let served_by: std::collections::BTreeSet<_> = fresh
        .iter()
        .flatten()
        .map(|r| (r.decision.region.clone(), r.decision.target.clone()))
        .collect();
    assert_eq!(
        served_by.len(),
        MICRO_TARGETS as usize,
        "every target the call may use served: {served_by:?}"
    );

    // Warm: the limits are known; a second burst stays within them.
    let (warm, warm_took) = burst(&router, n, SloClass::Standard).await;
    assert!(warm.iter().all(Result::is_ok));
    let more = common::throttles_seen(&emu) - taught;
    assert!(
        more <= u64::from(MICRO_TARGETS),
        "{more} throttles in a burst after the limits were learnt"
    );
    let waited = warm
        .iter()
        .flatten()
        .filter(|r| queued(r) > Duration::ZERO)
        .count();
    assert!(waited > 0, "beyond capacity, calls waited for slots");

    // What capacity allows: the calls' own service times (each call's time less its wait in
    // line), served `slots` at a time with no slot idle. Measured on the calls themselves, so
    // that a machine made slow by other work slows both sides alike.
    for (what, results, took) in [("fresh", &fresh, fresh_took), ("warm", &warm, warm_took)] {
        let served: Duration = results
            .iter()
            .flatten()
            .map(|r| r.timings.total.saturating_sub(queued(r)))
            .sum();
        let allowed = served / slots;
        println!(
            "{what}: a burst of {n} over {slots} slots took {took:?}; capacity allows {allowed:?}"
        );
        assert!(
            took.as_secs_f64() <= 1.3 * allowed.as_secs_f64(),
            "{what}: the burst took {took:?}, capacity allows {allowed:?}"
        );
    }
    let m = router.metrics();
    let standard = m
        .queue
        .get(&SloClass::Standard)
        .expect("standard calls queued");
    assert!(standard.wait_s.count > 0);
    assert_eq!(standard.depth, 0, "nobody is left waiting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_calls_never_wait_behind_background_ones() {
    let emu = small_world().await;
    let router = router(&emu).await;
    // Teach the limits first (configured limits would do the same).
    let (warm, _) = burst(&router, 64, SloClass::Standard).await;
    assert!(warm.iter().all(Result::is_ok));

    let background = join_all((0..96).map(|i| router.generate(call(i, SloClass::Background))));
    let interactive = async {
        // Once the background burst is queued.
        common::poll_until("background calls queued", || {
            router
                .metrics()
                .queue
                .get(&SloClass::Background)
                .is_some_and(|q| q.depth > 16)
        })
        .await;
        join_all((0..16).map(|i| router.generate(call(1_000 + i, SloClass::Interactive)))).await
    };
    let (background, interactive) = futures::join!(background, interactive);
    let waits = |rs: &[Result<GenerateResponse, Error>]| -> Vec<Duration> {
        rs.iter().map(|r| queued(r.as_ref().unwrap())).collect()
    };
    let (bg, ia) = (waits(&background), waits(&interactive));
    let bg_longest = bg.iter().max().unwrap();
    let ia_longest = ia.iter().max().unwrap();
    println!("background waited up to {bg_longest:?}; interactive up to {ia_longest:?}");
    // Each target keeps a quarter of its slots from work that can wait, and a freed slot goes
    // to the interactive line first: an interactive call waits at most a turn or two.
    assert!(
        ia_longest < bg_longest,
        "interactive waited {ia_longest:?}, background {bg_longest:?}"
    );
    let m = router.metrics();
    assert!(m.queue[&SloClass::Background].wait_s.count > 0);
    let bg_p50 = m.queue[&SloClass::Background].wait_s.p50;
    let ia_p99 = m
        .queue
        .get(&SloClass::Interactive)
        .map_or(0.0, |q| q.wait_s.p99);
    assert!(ia_p99 <= bg_p50.max(ia_longest.as_secs_f64()) + 1e-3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_what_deadlines_hold_background_is_shed_first_fast_and_typed() {
    let emu = small_world().await;
    let router = router(&emu).await;
    let (warm, _) = burst(&router, 64, SloClass::Standard).await;
    assert!(warm.iter().all(Result::is_ok));
    // 16 slots, a turn of about 75 ms: a deadline of 600 ms holds about 8 turns, 128 calls.
    let deadline = Duration::from_millis(600);
    let timed = |i: usize, class| {
        let router = &router;
        async move {
            let started = Instant::now();
            let r = router.generate(call(i, class).deadline(deadline)).await;
            (class, r, started.elapsed())
        }
    };
    let calls = (0..160)
        .map(|i| timed(i, SloClass::Background))
        .chain((0..64).map(|i| timed(1_000 + i, SloClass::Standard)));
    let results = join_all(calls).await;
    let outcome = |class| {
        let of: Vec<_> = results.iter().filter(|(c, ..)| *c == class).collect();
        let shed: Vec<_> = of
            .iter()
            .filter_map(|(_, r, took)| r.as_ref().err().map(|e| (e, *took)))
            .collect();
        (of.len(), shed)
    };
    let (standard, standard_shed) = outcome(SloClass::Standard);
    let (background, background_shed) = outcome(SloClass::Background);
    println!(
        "shed: background {} of {background}, standard {} of {standard}",
        background_shed.len(),
        standard_shed.len()
    );
    assert!(!background_shed.is_empty(), "more than the deadlines hold");
    assert!(
        standard_shed.len() * background < background_shed.len() * standard,
        "background is shed first: {} of {background} against {} of {standard}",
        background_shed.len(),
        standard_shed.len()
    );
    // Each failed call was shed (`overloaded`, naming the wait it needed) or, given a slot
    // in time but served slower than targets usually serve (a machine busy with other work),
    // ended by its deadline: typed either way, never past the deadline by more than the
    // deadline's own timer.
    let mut overloaded = 0;
    for (e, took) in background_shed.iter().chain(&standard_shed) {
        assert!(
            *took <= deadline + Duration::from_millis(50),
            "failed after {took:?}: {e}"
        );
        match e {
            Error::Overloaded { needed_ms, .. } => {
                overloaded += 1;
                assert!(e.to_string().contains(&format!("{needed_ms} ms")), "{e}");
            }
            Error::AllTargetsFailed { attempts, .. } => assert!(
                attempts
                    .iter()
                    .any(|a| a.code == TimeLimit::Deadline.code()),
                "{e}"
            ),
            other => assert_eq!(other.kind(), ErrorKind::Timeout, "{other}"),
        }
    }
    let failed = background_shed.len() + standard_shed.len();
    assert!(
        overloaded * 10 >= failed * 9,
        "{overloaded} of {failed} failed calls shed as overloaded"
    );
    // Those refused at once did not wait out their deadline.
    let fast = background_shed
        .iter()
        .filter(|(_, took)| *took < deadline / 2)
        .count();
    assert!(
        fast > 0,
        "a call that cannot be served in time fails at once"
    );
}
