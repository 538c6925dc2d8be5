//! The time limits of one call: its overall deadline, and each attempt's first-token, idle and
//! whole-answer limits, from `[routing.timeouts]`, the request's SLO class and its SLO.
//!
//! Instants are tokio's, so that tests drive them with a paused clock.

use std::time::Duration;

use std::future::Future;
use std::pin::Pin;
use std::task::{Poll, Waker};

use tokio::time::{Instant, Sleep};

use crate::config::{LearnedLimits, RoutingConfig};
use crate::state::{LearnedLatency, Observed};
use crate::types::GenerateRequest;
use crate::types::{LimitSource, TimeLimit};

/// The limits of one call, fixed when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    started: Instant,
    deadline: Instant,
    /// Until an attempt's first token (or, not streamed, until its answer begins).
    pub first_token: Duration,
    /// The longest quiet gap in a stream.
    pub idle: Duration,
    /// A whole non-streamed answer.
    pub answer: Duration,
    /// What a reasoning call's first-token limit grew by (zero without reasoning).
    reasoning_allowance: Duration,
}

/// What a target is expected to take before its own observations suffice: the high quantiles
/// of its model's prior (`[routing.priors]`, the model's `latency` table), or the fleet's
/// figures for the target, and how many observations they count as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    /// A high quantile of the time to the first token, net of reading the input.
    pub ttft: Duration,
    /// A high quantile of a stream's longest gap.
    pub gap: Duration,
    /// How many observations of the target's own it counts as.
    pub weight: u32,
}

impl Expected {
    /// `prior`, counting as `weight` observations, blended with what the target has shown:
    /// `(weight × prior + n × observed) / (weight + n)`.
    pub fn blend(prior: Duration, weight: u32, seen: Option<Observed>) -> Duration {
        let Some(seen) = seen.filter(|o| o.samples > 0) else {
            return prior;
        };
        let (w, n) = (f64::from(weight), seen.samples as f64);
        saturating_secs((w * prior.as_secs_f64() + n * seen.quantile.as_secs_f64()) / (w + n))
    }
}

/// An attempt's own first-token and idle limits (learnt from its target, or its class's), each
/// with where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptLimits {
    /// Until the attempt's first token (or, not streamed, until its answer begins), its input and
    /// reasoning allowances included.
    pub first_token: (Duration, LimitSource),
    /// The learnt part of `first_token` (without its input and reasoning allowances): what an
    /// attempt it cuts is recorded as having waited. Zero for the class's limit.
    pub first_token_learnt: Duration,
    /// Between a stream's text and reasoning deltas.
    pub idle: (Duration, LimitSource),
    /// While a tool-use block is open (tool input streams at the model's own pace).
    pub class_idle: Duration,
    /// A whole non-streamed answer: the class's, less what the learnt first-token limit saves.
    pub answer: (Duration, LimitSource),
}

/// Seconds as a duration, saturating at [`crate::MAX_DURATION`].
fn saturating_secs(secs: f64) -> Duration {
    crate::types::units::clamped_secs(secs).unwrap_or(crate::types::MAX_DURATION)
}

impl Limits {
    /// The limits of `request` starting at `started`.
    ///
    /// With a `ttft_target`, the first-token limit is `ttft_target_multiple` times it (at least
    /// `min_first_token`); without, its class's. A non-streamed answer may take the first-token
    /// limit plus its output tokens at `min_tokens_per_second`. The deadline is the request's
    /// `slo.deadline`, else its class's.
    pub fn for_call(routing: &RoutingConfig, request: &GenerateRequest, started: Instant) -> Self {
        let t = &routing.timeouts;
        let class = t.for_class(request.slo.class);
        let first_token = match request.slo.ttft_target {
            Some(target) => saturating_secs(target.as_secs_f64() * t.ttft_target_multiple)
                .max(t.min_first_token),
            None => class.first_token,
        };
        let output = request
            .inference
            .max_tokens
            .map_or(routing.default_output_tokens, |n| {
                u32::try_from(n.max(0)).unwrap_or(u32::MAX)
            });
        let generation = saturating_secs(f64::from(output) / t.min_tokens_per_second);
        let length = request
            .slo
            .deadline
            .unwrap_or(class.deadline)
            .min(crate::types::MAX_DURATION);
        Self {
            started,
            deadline: started + length,
            first_token,
            idle: class.idle,
            answer: first_token
                .saturating_add(generation)
                .min(crate::types::MAX_DURATION),
            reasoning_allowance: Duration::ZERO,
        }
    }

    /// The limits of an attempt reading `input_tokens` on a target that has shown `observed`,
    /// and was `expected` to take what its prior says (or the fleet's figures for it): each
    /// limit is `learned.factor` times an estimate of the target's high quantile, at least
    /// `learned.floor`; the first token's also takes the attempt's input at
    /// `learned.prefill_tokens_per_second` and the reasoning allowance. The estimate is the
    /// target's own quantile once it has `learned.min_samples` observations, or once an
    /// attempt there was cut (the prior was too short for it); before, the prior blended with
    /// what it has shown ([`Expected::blend`]). The class's limit when that is shorter, or
    /// with neither enough observations nor a prior.
    pub fn for_attempt(
        &self,
        learned: &LearnedLimits,
        observed: LearnedLatency,
        expected: Option<Expected>,
        input_tokens: u64,
    ) -> AttemptLimits {
        let derive = |ceiling: Duration,
                      seen: Option<Observed>,
                      prior: Option<Duration>,
                      extra: Duration| {
            let class = ((ceiling, LimitSource::Class), Duration::ZERO);
            if !learned.enabled {
                return class;
            }
            let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
            let own_alone = seen.filter(|o| o.samples >= learned.min_samples as usize || o.cut);
            let (estimate, source) = match (own_alone, expected.zip(prior)) {
                (Some(o), _) => (
                    o.quantile,
                    LimitSource::Learned {
                        quantile: learned.quantile,
                        observed_ms: millis(o.quantile),
                        factor: learned.factor,
                        samples: u32::try_from(o.samples).unwrap_or(u32::MAX),
                    },
                ),
                (None, Some((e, prior))) if e.weight > 0 => (
                    Expected::blend(prior, e.weight, seen),
                    LimitSource::Prior {
                        prior_ms: millis(prior),
                        observed_ms: seen.map(|o| millis(o.quantile)),
                        samples: seen.map_or(0, |o| u32::try_from(o.samples).unwrap_or(u32::MAX)),
                        factor: learned.factor,
                    },
                ),
                _ => return class,
            };
            let own = saturating_secs(estimate.as_secs_f64() * learned.factor).max(learned.floor);
            let whole = own.saturating_add(extra);
            if whole >= ceiling {
                return class;
            }
            ((whole, source), own)
        };
        let prefill =
            crate::state::latency::prefill_time(input_tokens, learned.prefill_tokens_per_second);
        let (first_token, first_token_learnt) = derive(
            self.first_token,
            observed.ttft,
            expected.map(|e| e.ttft),
            self.reasoning_allowance.saturating_add(prefill),
        );
        let (idle, _) = derive(
            self.idle,
            observed.gap,
            expected.map(|e| e.gap),
            Duration::ZERO,
        );
        let saved = self.first_token.saturating_sub(first_token.0);
        AttemptLimits {
            first_token,
            first_token_learnt,
            idle,
            class_idle: self.idle,
            answer: (self.answer.saturating_sub(saved), first_token.1),
        }
    }

    /// What a reasoning call's first token may take beyond the model's usual: the time its
    /// reasoning budget takes (zero without reasoning).
    pub fn reasoning_allowance(&self) -> Duration {
        self.reasoning_allowance
    }

    /// The limits of a call that reasons first, within `reasoning_tokens`: its first-token
    /// limit and whole-answer limit grow by the time those tokens take at
    /// `routing.timeouts.reasoning_tokens_per_second` (reasoning may be silent until it ends),
    /// and so does its deadline unless the request set one.
    pub fn with_reasoning(
        mut self,
        routing: &RoutingConfig,
        request: &GenerateRequest,
        reasoning_tokens: u32,
    ) -> Self {
        let allowance = saturating_secs(
            f64::from(reasoning_tokens) / routing.timeouts.reasoning_tokens_per_second,
        );
        self.first_token = self
            .first_token
            .saturating_add(allowance)
            .min(crate::types::MAX_DURATION);
        self.reasoning_allowance = allowance;
        self.answer = self
            .answer
            .saturating_add(allowance)
            .min(crate::types::MAX_DURATION);
        if request.slo.deadline.is_none() {
            let length = (self.deadline - self.started)
                .saturating_add(allowance)
                .min(crate::types::MAX_DURATION);
            self.deadline = self.started + length;
        }
        self
    }

    /// When the call started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The call's deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the deadline.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }

    /// When a wait that `limit` bounds to `length` from `now` must end, and which limit that
    /// is: `limit` itself, or the deadline when it comes first.
    pub fn bound(&self, now: Instant, limit: TimeLimit, length: Duration) -> Bound {
        self.bound_from(now, limit, (length, LimitSource::Class))
    }

    /// [`bound`](Self::bound) for a limit whose length has a source (an [`AttemptLimits`]'s).
    pub fn bound_from(
        &self,
        now: Instant,
        limit: TimeLimit,
        (length, source): (Duration, LimitSource),
    ) -> Bound {
        // A learnt limit may wait on to its class's while this process is behind (see
        // `Bound::grace`); never past the deadline.
        let class = match limit {
            TimeLimit::FirstToken => self.first_token,
            TimeLimit::Idle => self.idle,
            _ => Duration::ZERO,
        };
        let ceiling = match source {
            s if s.is_estimate() => now
                .checked_add(class)
                .map_or(self.deadline, |c| c.min(self.deadline)),
            _ => now,
        };
        match now.checked_add(length) {
            Some(at) if at < self.deadline => Bound {
                at,
                limit,
                length,
                source,
                ceiling: ceiling.max(at),
            },
            _ => Bound {
                at: self.deadline,
                limit: TimeLimit::Deadline,
                length: self.deadline - self.started,
                source: LimitSource::Deadline,
                ceiling: self.deadline,
            },
        }
    }
}

/// How long a task of this runtime waits to be polled again once it yields: near zero when
/// the runtime keeps up, the time its queue of ready tasks takes to run when it is behind.
/// Read on the call's clock, so a paused clock reads zero.
async fn scheduling_delay() -> Duration {
    let asked = Instant::now();
    tokio::task::yield_now().await;
    Instant::now().saturating_duration_since(asked)
}

/// The share of a learnt limit that the process's own delay must reach for the limit to be
/// put down to the process rather than the target: 1/20 of it, and at least this much.
const BEHIND_FLOOR: Duration = Duration::from_millis(20);

/// The end of one bounded wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// When it fires.
    pub at: Instant,
    /// Which limit it is.
    pub limit: TimeLimit,
    /// That limit's length (for the error message).
    pub length: Duration,
    /// Where the length came from (for the decision).
    pub source: LimitSource,
    /// How far the wait may go on past `at` while the process itself is behind (a learnt
    /// limit's class limit, within the deadline); `at` for any other limit.
    ceiling: Instant,
}

impl Bound {
    /// Runs `fut` until this bound; `Err(self)` if the bound fired first (`fut` is dropped,
    /// which cancels its request on the wire). A learnt limit that fires while this process
    /// is behind waits on ([`Bound::grace`]). For a stream's successive waits, see
    /// [`IdleTimer`].
    pub async fn run<F: std::future::Future>(self, fut: F) -> Result<F::Output, Bound> {
        let mut fut = std::pin::pin!(fut);
        let mut bound = self;
        loop {
            match tokio::time::timeout_at(bound.at, fut.as_mut()).await {
                Ok(out) => return Ok(out),
                Err(_) => match bound.grace().await {
                    Some(later) => bound = later,
                    None => return Err(bound),
                },
            }
        }
    }

    /// This bound has fired. A learnt limit is a claim that the target is slower than it
    /// has been; when this process is itself behind (its tasks wait to be polled, as with a
    /// burst of calls larger than its CPU, or a binding's caller holding the thread), the
    /// answer may be waiting unread, and cutting the attempt would blame a healthy target and
    /// add a failover to the backlog. So while the process's scheduling delay is at least
    /// 1/20 of the limit, the wait goes on for another length of the limit, up to its class's
    /// limit (within the deadline): `Some` with the later bound. `None`: cut it.
    pub async fn grace(&self) -> Option<Bound> {
        if self.ceiling <= self.at {
            return None;
        }
        let now = Instant::now();
        let late = now.saturating_duration_since(self.at);
        let behind = late.max(scheduling_delay().await);
        if behind < (self.length / 20).max(BEHIND_FLOOR) {
            return None;
        }
        tracing::debug!(
            limit = ?self.limit,
            behind_ms = behind.as_millis() as u64,
            "a learnt limit fired while the process was behind: waiting on"
        );
        let at = Instant::now()
            .checked_add(self.length)
            .map_or(self.ceiling, |at| at.min(self.ceiling));
        Some(Bound { at, ..*self })
    }
}

/// A timer that serves one wait after another (a stream's events), each until its own
/// [`Bound`]. Arming a timer per event costs a fast stream more than handling the event does:
/// this one is moved only when it would fire after the current bound or fires before it (about
/// once per idle limit), and it is polled (its waker registered) only when it was moved, fired,
/// or another task polls the stream.
#[derive(Debug)]
pub struct IdleTimer {
    sleep: Pin<Box<Sleep>>,
    /// The waker the timer last registered, while it holds it.
    registered: Option<Waker>,
}

impl IdleTimer {
    /// A timer armed at `at` (the call's deadline: no wait outlasts it).
    pub fn new(at: Instant) -> Self {
        Self {
            sleep: Box::pin(tokio::time::sleep_until(at)),
            registered: None,
        }
    }

    /// Runs `fut` until the bound `bound` gives; `Err` with that bound if it passes first.
    /// `bound` is asked only if `fut` is not ready at once: an event already received costs no
    /// clock read.
    pub async fn wait<F: Future>(
        &mut self,
        bound: impl FnOnce() -> Bound,
        fut: F,
    ) -> Result<F::Output, Bound> {
        let mut fut = std::pin::pin!(fut);
        let mut bound = Some(bound);
        let mut limit: Option<Bound> = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(out));
            }
            let limit = match limit {
                Some(b) => b,
                None => {
                    let b = bound.take().expect("asked once")();
                    if self.sleep.deadline() > b.at {
                        self.move_to(b.at);
                    }
                    *limit.insert(b)
                }
            };
            loop {
                let holds_waker = self
                    .registered
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()));
                if holds_waker && !self.sleep.is_elapsed() {
                    return Poll::Pending;
                }
                match self.sleep.as_mut().poll(cx) {
                    Poll::Pending => {
                        self.registered = Some(cx.waker().clone());
                        return Poll::Pending;
                    }
                    Poll::Ready(()) if self.sleep.deadline() >= limit.at => {
                        self.registered = None;
                        return Poll::Ready(Err(limit));
                    }
                    // Armed for an earlier wait: this one ends later.
                    Poll::Ready(()) => self.move_to(limit.at),
                }
            }
        })
        .await
    }

    fn move_to(&mut self, at: Instant) {
        self.sleep.as_mut().reset(at);
        self.registered = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{GenerateRequest, SloClass};

    fn routing() -> RoutingConfig {
        crate::config::Config::default().routing
    }

    #[test]
    fn a_ttft_target_sets_the_first_token_limit() {
        let now = Instant::now();
        let r = routing();
        let req = GenerateRequest::user("hi")
            .slo_class(SloClass::Interactive)
            .ttft_target(Duration::from_millis(500));
        let l = Limits::for_call(&r, &req, now);
        assert_eq!(l.first_token, Duration::from_secs(2)); // 4 x 500 ms
        let tiny = req.clone().ttft_target(Duration::from_millis(10));
        assert_eq!(
            Limits::for_call(&r, &tiny, now).first_token,
            Duration::from_secs(1)
        );
        let plain = GenerateRequest::user("hi").slo_class(SloClass::Interactive);
        assert_eq!(
            Limits::for_call(&r, &plain, now).first_token,
            r.timeouts.interactive.first_token
        );
    }

    #[test]
    fn the_deadline_bounds_every_wait() {
        let now = Instant::now();
        let req = GenerateRequest::user("hi").deadline(Duration::from_millis(300));
        let l = Limits::for_call(&routing(), &req, now);
        let b = l.bound(now, TimeLimit::FirstToken, Duration::from_secs(30));
        assert_eq!(b.limit, TimeLimit::Deadline);
        assert_eq!(b.at, now + Duration::from_millis(300));
        let b = l.bound(now, TimeLimit::Idle, Duration::from_millis(100));
        assert_eq!(b.limit, TimeLimit::Idle);
        // A limit too long to add to an instant is the deadline, not an overflow.
        let b = l.bound(now, TimeLimit::Idle, Duration::MAX);
        assert_eq!(b.limit, TimeLimit::Deadline);
    }

    #[test]
    fn a_learnt_first_token_limit_keeps_a_reasoning_calls_allowance() {
        let start = Instant::now();
        let allowance = Duration::from_secs(5);
        let limits = Limits {
            started: start,
            deadline: start + Duration::from_secs(120),
            first_token: Duration::from_secs(30) + allowance,
            idle: Duration::from_secs(30),
            answer: Duration::from_secs(60) + allowance,
            reasoning_allowance: allowance,
        };
        let learned = LearnedLimits {
            enabled: true,
            ..LearnedLimits::default()
        };
        let seen = LearnedLatency {
            ttft: Some(observed(100, 30, false)),
            gap: Some(observed(500, 30, false)),
        };
        let a = limits.for_attempt(&learned, seen, None, 1_000);
        // max(3 x 100 ms, the 1 s floor), 1,000 tokens of input at 5,000 tokens/s and the 5 s
        // a silent reasoning may take.
        assert_eq!(a.first_token.0, Duration::from_millis(6_200));
        assert_eq!(a.first_token_learnt, Duration::from_secs(1));
        assert_eq!(a.idle.0, Duration::from_millis(1500));
        // The whole answer's limit saves what the first token's does.
        assert_eq!(a.answer.0, Duration::from_millis(36_200));
        assert!(matches!(
            a.idle.1,
            LimitSource::Learned {
                observed_ms: 500,
                samples: 30,
                ..
            }
        ));
        // A prompt of 50,000 tokens may take 10 s for them.
        let long = limits.for_attempt(&learned, seen, None, 50_000);
        assert_eq!(long.first_token.0, Duration::from_secs(16));
        // Past the class's ceiling: the class's.
        let huge = limits.for_attempt(&learned, seen, None, 500_000);
        assert_eq!(huge.first_token, (limits.first_token, LimitSource::Class));
        assert_eq!(huge.first_token_learnt, Duration::ZERO);
        // Seen too few times, or learning off: the class's.
        let few = LearnedLatency {
            ttft: Some(observed(100, 3, false)),
            gap: None,
        };
        assert_eq!(
            limits.for_attempt(&learned, few, None, 10).first_token,
            (limits.first_token, LimitSource::Class)
        );
        let off = LearnedLimits {
            enabled: false,
            ..learned
        };
        assert_eq!(
            limits.for_attempt(&off, seen, None, 10).idle,
            (limits.idle, LimitSource::Class)
        );
    }

    fn observed(ms: u64, samples: usize, cut: bool) -> Observed {
        Observed {
            quantile: Duration::from_millis(ms),
            samples,
            cut,
        }
    }

    #[test]
    fn a_cold_target_is_limited_by_its_prior_which_its_own_answers_soon_move() {
        let start = Instant::now();
        let limits = Limits::for_call(&routing(), &GenerateRequest::user("hi"), start);
        let learned = LearnedLimits::default();
        // A prior of 2 s to the first token and 1 s between deltas, counting as 4 answers.
        let prior = Expected {
            ttft: Duration::from_secs(2),
            gap: Duration::from_secs(1),
            weight: 4,
        };
        let cold = limits.for_attempt(&learned, LearnedLatency::default(), Some(prior), 0);
        // 3 x the prior, not the class's 30 s.
        assert_eq!(cold.first_token.0, Duration::from_secs(6));
        assert_eq!(cold.idle.0, Duration::from_secs(3));
        assert!(matches!(
            cold.first_token.1,
            LimitSource::Prior {
                prior_ms: 2000,
                observed_ms: None,
                samples: 0,
                ..
            }
        ));
        assert_eq!(cold.first_token_learnt, Duration::from_secs(6));
        // Four answers of 400 ms: halfway to them, (4 x 2 s + 4 x 0.4 s) / 8 = 1.2 s, x 3.
        let four = LearnedLatency {
            ttft: Some(observed(400, 4, false)),
            gap: Some(observed(200, 4, false)),
        };
        let warmer = limits.for_attempt(&learned, four, Some(prior), 0);
        assert_eq!(warmer.first_token.0, Duration::from_millis(3_600));
        assert_eq!(warmer.idle.0, Duration::from_millis(1_800));
        // Enough of its own: the prior no longer counts.
        let enough = LearnedLatency {
            ttft: Some(observed(400, learned.min_samples as usize, false)),
            gap: None,
        };
        let warm = limits.for_attempt(&learned, enough, Some(prior), 0);
        assert_eq!(warm.first_token.0, Duration::from_millis(1_200));
        assert!(matches!(warm.first_token.1, LimitSource::Learned { .. }));
        // Long input and reasoning keep their allowances over a prior too.
        let long = limits.for_attempt(&learned, LearnedLatency::default(), Some(prior), 50_000);
        assert_eq!(long.first_token.0, Duration::from_secs(16));
        // A prior of weight 0 is no prior: the class's until `min_samples`.
        let none = Expected { weight: 0, ..prior };
        let class = limits.for_attempt(&learned, LearnedLatency::default(), Some(none), 0);
        assert_eq!(class.first_token, (limits.first_token, LimitSource::Class));
    }

    #[test]
    fn a_target_slower_than_its_prior_is_given_longer_after_each_cut() {
        let start = Instant::now();
        let limits = Limits::for_call(&routing(), &GenerateRequest::user("hi"), start);
        let learned = LearnedLimits::default();
        let prior = Expected {
            ttft: Duration::from_secs(1),
            gap: Duration::from_secs(1),
            weight: 4,
        };
        // The target takes 10 s, ten times its prior: the first attempt is cut at 3 s...
        let mut track = crate::state::LatencyTrack::default();
        let mut waits = vec![];
        for _ in 0..4 {
            let seen = LearnedLatency {
                ttft: track
                    .first_token_quantile(learned.quantile, learned.prefill_tokens_per_second),
                gap: None,
            };
            let a = limits.for_attempt(&learned, seen, Some(prior), 0);
            waits.push(a.first_token.0);
            if a.first_token.0 >= Duration::from_secs(10) {
                break;
            }
            track.record_first_token_cut(a.first_token_learnt);
        }
        // ...and each cut gives the next `factor` times longer, the prior set aside: 3 s, 9 s,
        // then 27 s, which the target's 10 s fits.
        assert_eq!(
            waits,
            [3, 9, 27].map(Duration::from_secs).to_vec(),
            "{waits:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_timer_serves_a_streams_waits_and_fires_at_the_last_bound() {
        let start = Instant::now();
        let limits = Limits {
            started: start,
            deadline: start + Duration::from_secs(5),
            first_token: Duration::from_secs(1),
            idle: Duration::from_secs(1),
            answer: Duration::from_secs(5),
            reasoning_allowance: Duration::ZERO,
        };
        let mut timer = IdleTimer::new(limits.deadline());
        let gap = Duration::from_millis(600);
        // Events 600 ms apart under a 1 s idle limit: the timer, armed for the first wait,
        // fires early during the second and moves; no wait fails.
        for _ in 0..4 {
            let bound = limits.bound(Instant::now(), TimeLimit::Idle, limits.idle);
            let waited = timer.wait(|| bound, tokio::time::sleep(gap)).await;
            assert!(
                waited.is_ok(),
                "an event inside the idle limit ended the wait"
            );
        }
        // An event already received asks for no bound (no clock read).
        let ready = timer
            .wait(|| unreachable!("asked"), std::future::ready(7))
            .await;
        assert_eq!(ready.ok(), Some(7));
        // Then silence: the wait ends at its own bound, a second after it began.
        let began = Instant::now();
        let bound = limits.bound(began, TimeLimit::Idle, limits.idle);
        let fired = timer
            .wait(|| bound, std::future::pending::<()>())
            .await
            .unwrap_err();
        assert_eq!(fired.limit, TimeLimit::Idle);
        assert_eq!(Instant::now() - began, limits.idle);
        // Past the idle limit's reach, the deadline ends the wait: the timer moves earlier.
        let far = Limits {
            idle: Duration::from_secs(60),
            ..limits
        };
        let bound = far.bound(Instant::now(), TimeLimit::Idle, far.idle);
        timer.move_to(Instant::now() + Duration::from_secs(30));
        let fired = timer
            .wait(|| bound, std::future::pending::<()>())
            .await
            .unwrap_err();
        assert_eq!(fired.limit, TimeLimit::Deadline);
        assert_eq!(Instant::now(), far.deadline());
    }

    fn learned() -> LimitSource {
        LimitSource::Learned {
            quantile: 0.99,
            observed_ms: 300,
            factor: 3.0,
            samples: 40,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_learnt_limit_that_fires_late_waits_on_up_to_its_class_limit() {
        let start = Instant::now();
        let limits = Limits::for_call(&routing(), &GenerateRequest::user("hi"), start);
        let second = Duration::from_secs(1);
        let bound = limits.bound_from(start, TimeLimit::Idle, (second, learned()));
        // Fired on time, the process keeping up (a paused clock reads no scheduling delay):
        // the target's, and cut.
        tokio::time::sleep_until(bound.at).await;
        assert_eq!(bound.grace().await, None);
        // Seen 300 ms late (at least 1/20 of the limit): the process was behind, and the wait
        // goes on for another length of the limit...
        tokio::time::advance(Duration::from_millis(300)).await;
        let later = bound.grace().await.expect("waits on");
        assert_eq!(later.at, Instant::now() + second);
        assert_eq!((later.limit, later.source), (bound.limit, bound.source));
        // ...but never past the class's idle limit.
        tokio::time::sleep_until(start + limits.idle - Duration::from_millis(100)).await;
        let last = bound.grace().await.expect("waits on");
        assert_eq!(last.at, start + limits.idle);
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(last.grace().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_class_limit_is_cut_however_late_it_fires() {
        let start = Instant::now();
        let limits = Limits::for_call(&routing(), &GenerateRequest::user("hi"), start);
        let bound = limits.bound(start, TimeLimit::FirstToken, Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(bound.grace().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_learnt_limit_cuts_at_its_time_while_the_process_keeps_up() {
        let start = Instant::now();
        let limits = Limits::for_call(&routing(), &GenerateRequest::user("hi"), start);
        let bound = limits.bound_from(
            start,
            TimeLimit::FirstToken,
            (Duration::from_secs(1), learned()),
        );
        // Nothing holds the process up: the limit cuts at its time.
        let fired = bound.run(std::future::pending::<()>()).await.unwrap_err();
        assert_eq!(fired.at, start + Duration::from_secs(1));
        assert_eq!(Instant::now(), fired.at);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_polled_from_another_task_still_ends_at_its_bound() {
        let start = Instant::now();
        let bound = Bound {
            at: start + Duration::from_secs(1),
            limit: TimeLimit::Idle,
            length: Duration::from_secs(1),
            source: LimitSource::Class,
            ceiling: start + Duration::from_secs(1),
        };
        let mut timer = IdleTimer::new(start + Duration::from_secs(5));
        let mut wait = Box::pin(timer.wait(|| bound, std::future::pending::<()>()));
        // First polled with a waker that will never run the wait again (another task's)...
        let mut elsewhere = std::task::Context::from_waker(futures::task::noop_waker_ref());
        assert!(wait.as_mut().poll(&mut elsewhere).is_pending());
        // ...then awaited here: the timer must wake this task, not the first.
        let fired = tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .expect("the timer woke the task that polled it first");
        assert_eq!(fired.unwrap_err().limit, TimeLimit::Idle);
        assert_eq!(Instant::now(), bound.at);
    }

    #[test]
    fn extreme_settings_saturate_instead_of_panicking() {
        let mut r = routing();
        r.timeouts.ttft_target_multiple = 1e300;
        r.timeouts.min_tokens_per_second = 1e-300;
        let req = GenerateRequest::user("hi")
            .ttft_target(crate::types::MAX_DURATION)
            .deadline(crate::types::MAX_DURATION)
            .max_tokens(i64::MAX);
        let l = Limits::for_call(&r, &req, Instant::now());
        assert_eq!(l.first_token, crate::types::MAX_DURATION);
        assert_eq!(l.answer, crate::types::MAX_DURATION);
    }
}
