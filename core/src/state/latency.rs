//! What a target has been like lately: EWMAs of TTFT and tokens/s, recent first-token times and
//! streams' longest gaps for quantiles (the learnt time limits and the hedge delay), and a
//! decaying count of throttles.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Weight of the newest sample in the moving averages.
const ALPHA: f64 = 0.2;
/// First-token times (and longest gaps) kept for quantiles.
const RECENT: usize = 64;

/// What one successful attempt showed of its target's speed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AttemptSpeed {
    /// Until its own first event (a token of either kind), from the attempt's own start.
    pub ttft: Option<Duration>,
    /// Output tokens per second from its first token to its last (`None` unless streamed).
    pub tokens_per_second: Option<f64>,
    /// Its own stream's longest wait between two content deltas.
    pub longest_gap: Option<Duration>,
    /// The input it read anew (not from the prompt cache): a first token's time grows with it.
    pub input_tokens: u32,
}
/// Half-life of the throttle score.
const THROTTLE_HALF_LIFE: Duration = Duration::from_secs(10);

/// One recent first token: how long it took, and the input it came after.
#[derive(Debug, Clone, Copy)]
struct FirstToken {
    after: Duration,
    input_tokens: u32,
    /// An attempt cut by its learnt limit: its first token came later than `after` (or never).
    /// It counts toward the limit (so that a target that slowed down is given longer next
    /// time, and measured again), not toward the hedge delay.
    cut: bool,
}

/// One stream's longest gap between deltas, or the idle limit that cut it (its gap was
/// longer).
#[derive(Debug, Clone, Copy)]
struct Gap {
    longest: Duration,
    cut: bool,
}

/// A quantile of a target's recent observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The quantile.
    pub quantile: Duration,
    /// How many observations it is of.
    pub samples: usize,
    /// Whether any of them is an attempt cut by a limit: the target was slower than it was
    /// given, and its own observations alone should set its next limit.
    pub cut: bool,
}

/// A window of the most recent observations, oldest first.
#[derive(Debug, Clone)]
struct Recent<T>(VecDeque<T>);

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self(VecDeque::new())
    }
}

impl<T> Recent<T> {
    fn push(&mut self, v: T) {
        if self.0.len() == RECENT {
            self.0.pop_front();
        }
        self.0.push_back(v);
    }
}

/// Observed speed of one target.
#[derive(Debug, Clone, Default)]
pub struct LatencyTrack {
    ttft_ewma_s: Option<f64>,
    tps_ewma: Option<f64>,
    first_tokens: Recent<FirstToken>,
    /// Streams' longest gaps (and, for cut streams, the idle limit that cut them, marked).
    gaps: Recent<Gap>,
    throttle_score: f64,
    throttle_at: Option<Instant>,
    /// When the newest first token or gap was recorded.
    last_sample_at: Option<Instant>,
}

impl LatencyTrack {
    /// Records a stream's longest gap between content deltas.
    pub fn record_longest_gap(&mut self, gap: Duration) {
        self.gaps.push(Gap {
            longest: gap,
            cut: false,
        });
    }

    /// A stream was cut by its learnt or prior idle limit after `waited`: its gap was longer,
    /// so the idle limit learnt from the window grows.
    pub fn record_gap_cut(&mut self, waited: Duration) {
        self.gaps.push(Gap {
            longest: waited,
            cut: true,
        });
    }

    /// An attempt was cut by its learnt first-token limit after `waited` (the learnt part of
    /// the limit, without its input and reasoning allowances): its first token would have come
    /// later, so the limit learnt from the window grows.
    pub fn record_first_token_cut(&mut self, waited: Duration) {
        self.first_tokens.push(FirstToken {
            after: waited,
            input_tokens: 0,
            cut: true,
        });
    }

    /// Records the moving averages of a successful attempt (its served tier's).
    pub fn record_averages(&mut self, speed: &AttemptSpeed) {
        if let Some(ttft) = speed.ttft {
            let s = ttft.as_secs_f64();
            self.ttft_ewma_s = Some(self.ttft_ewma_s.map_or(s, |e| e + ALPHA * (s - e)));
        }
        if let Some(tps) = speed.tokens_per_second {
            self.record_tokens_per_second(tps);
        }
    }

    /// Records the samples of a successful attempt that its time limits and hedge delay are
    /// learnt from (its sent tier's: the limits of the next attempt sent so).
    pub fn record_samples(&mut self, speed: &AttemptSpeed) {
        if speed.ttft.is_some() || speed.longest_gap.is_some() {
            self.last_sample_at = Some(crate::time::now());
        }
        if let Some(ttft) = speed.ttft {
            self.first_tokens.push(FirstToken {
                after: ttft,
                input_tokens: speed.input_tokens,
                cut: false,
            });
        }
        if let Some(gap) = speed.longest_gap {
            self.record_longest_gap(gap);
        }
    }

    /// A success shows capacity is back: the throttle score starts again from zero.
    pub fn clear_throttles(&mut self) {
        self.throttle_score = 0.0;
        self.throttle_at = None;
    }

    /// Records a generation speed.
    pub fn record_tokens_per_second(&mut self, tps: f64) {
        if tps.is_finite() && tps > 0.0 {
            self.tps_ewma = Some(self.tps_ewma.map_or(tps, |e| e + ALPHA * (tps - e)));
        }
    }

    /// Records a throttle at `now`.
    pub fn record_throttle(&mut self, now: Instant) {
        self.throttle_score = self.throttle_score(now) + 1.0;
        self.throttle_at = Some(now);
    }

    /// When the newest first token or gap of a success was recorded.
    pub fn last_sample_at(&self) -> Option<Instant> {
        self.last_sample_at
    }

    /// The moving average of TTFT.
    pub fn ttft(&self) -> Option<Duration> {
        self.ttft_ewma_s.map(Duration::from_secs_f64)
    }

    /// The moving average of output tokens per second.
    pub fn tokens_per_second(&self) -> Option<f64> {
        self.tps_ewma
    }

    /// A quantile of recent first-token times (`q` in 0..=1), attempts cut by a limit left
    /// out, and how many it is of; `None` before any.
    pub fn ttft_quantile(&self, q: f64) -> Option<(Duration, usize)> {
        quantile(
            self.first_tokens
                .0
                .iter()
                .filter(|f| !f.cut)
                .map(|f| f.after),
            q,
        )
    }

    /// A quantile of recent first-token times less the time their input took at
    /// `prefill_tokens_per_second` (what is left is the target's queueing and start-up), cut
    /// attempts included at what they waited, and how many it is of; `None` before any.
    pub fn first_token_quantile(&self, q: f64, prefill_tokens_per_second: f64) -> Option<Observed> {
        let prefill = |tokens: u32| prefill_time(u64::from(tokens), prefill_tokens_per_second);
        let (quantile, samples) = quantile(
            self.first_tokens
                .0
                .iter()
                .map(|f| f.after.saturating_sub(prefill(f.input_tokens))),
            q,
        )?;
        Some(Observed {
            quantile,
            samples,
            cut: self.first_tokens.0.iter().any(|f| f.cut),
        })
    }

    /// A quantile of recent streams' longest gaps (cut streams included at what they waited);
    /// `None` before any.
    pub fn gap_quantile(&self, q: f64) -> Option<Observed> {
        let (quantile, samples) = quantile(self.gaps.0.iter().map(|g| g.longest), q)?;
        Some(Observed {
            quantile,
            samples,
            cut: self.gaps.0.iter().any(|g| g.cut),
        })
    }

    /// Throttles lately, decayed with a ten-second half-life.
    pub fn throttle_score(&self, now: Instant) -> f64 {
        match self.throttle_at {
            None => 0.0,
            Some(at) => {
                let age = now.saturating_duration_since(at).as_secs_f64();
                self.throttle_score * 0.5f64.powf(age / THROTTLE_HALF_LIFE.as_secs_f64())
            }
        }
    }
}

/// The time `tokens` of input take at `tokens_per_second`, in whole milliseconds (rounded
/// down: a few tokens take none).
pub fn prefill_time(tokens: u64, tokens_per_second: f64) -> Duration {
    let ms = (tokens as f64 / tokens_per_second * 1000.0).floor();
    if ms.is_finite() && ms < 1e15 {
        Duration::from_millis(ms.max(0.0) as u64)
    } else {
        crate::types::MAX_DURATION
    }
}

/// The `q` quantile of `samples` (nearest rank) and their number. At most [`RECENT`] of them:
/// copied to the stack and selected, not sorted.
fn quantile(samples: impl Iterator<Item = Duration>, q: f64) -> Option<(Duration, usize)> {
    let mut v = [Duration::ZERO; RECENT];
    let mut n = 0;
    for (slot, d) in v.iter_mut().zip(samples) {
        *slot = d;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let i = ((n - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    let (_, at, _) = v[..n].select_nth_unstable(i);
    Some((*at, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl LatencyTrack {
        /// A successful first token after `ttft`, following `input_tokens` of new input.
        fn record_ttft(&mut self, ttft: Duration, input_tokens: u32) {
            let speed = AttemptSpeed {
                ttft: Some(ttft),
                input_tokens,
                ..AttemptSpeed::default()
            };
            self.record_averages(&speed);
            self.record_samples(&speed);
        }
    }

    #[test]
    fn ewma_moves_toward_new_samples() {
        let mut t = LatencyTrack::default();
        t.record_ttft(Duration::from_millis(100), 0);
        t.record_ttft(Duration::from_millis(200), 0);
        let e = t.ttft().unwrap().as_secs_f64();
        assert!((e - 0.12).abs() < 1e-9, "{e}");
        assert_eq!(t.ttft_quantile(1.0), Some((Duration::from_millis(200), 2)));
        assert_eq!(t.ttft_quantile(0.0), Some((Duration::from_millis(100), 2)));
    }

    #[test]
    fn first_token_limits_learn_from_cuts_and_net_of_input() {
        let mut t = LatencyTrack::default();
        for _ in 0..20 {
            // 400 ms, of which 1,000 tokens at 5,000 tokens/s took 200 ms: 200 ms is the target's.
            t.record_ttft(Duration::from_millis(400), 1_000);
        }
        let seen = t.first_token_quantile(0.99, 5_000.0).unwrap();
        assert_eq!(
            (seen.quantile, seen.samples, seen.cut),
            (Duration::from_millis(200), 20, false)
        );
        // Cut twice at 1 s: the limit's quantile grows, the hedge delay's does not.
        t.record_first_token_cut(Duration::from_secs(1));
        t.record_first_token_cut(Duration::from_secs(1));
        let seen = t.first_token_quantile(1.0, 5_000.0).unwrap();
        assert_eq!(
            (seen.quantile, seen.samples, seen.cut),
            (Duration::from_secs(1), 22, true)
        );
        assert_eq!(t.ttft_quantile(1.0), Some((Duration::from_millis(400), 20)));
        for _ in 0..100 {
            t.record_ttft(Duration::from_millis(400), 1_000);
        }
        // The window keeps the latest 64: the cuts have left it.
        let seen = t.first_token_quantile(1.0, 5_000.0).unwrap();
        assert_eq!(
            (seen.quantile, seen.samples, seen.cut),
            (Duration::from_millis(200), 64, false)
        );
    }

    #[test]
    fn throttle_score_decays() {
        let mut t = LatencyTrack::default();
        let now = crate::time::now();
        t.record_throttle(now);
        t.record_throttle(now);
        assert!((t.throttle_score(now) - 2.0).abs() < 1e-9);
        assert!((t.throttle_score(now + THROTTLE_HALF_LIFE) - 1.0).abs() < 1e-9);
    }
}
