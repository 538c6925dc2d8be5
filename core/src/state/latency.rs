//! What a target has been like lately: EWMAs of TTFT and tokens/s, recent TTFTs and streams'
//! longest gaps for quantiles (the learnt time limits), and a decaying count of throttles.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Weight of the newest sample in the moving averages.
const ALPHA: f64 = 0.2;
/// TTFTs (and longest gaps) kept for quantiles.
const RECENT: usize = 64;

/// What one successful attempt showed of its target's speed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AttemptSpeed {
    /// Until its first token (of either kind), from the attempt's own start.
    pub ttft: Option<Duration>,
    pub tokens_per_second: Option<f64>,
    /// Its stream's longest wait between two events after the first.
    pub longest_gap: Option<Duration>,
    /// The input it read (a first token's time grows with it).
    pub input_tokens: u32,
}
/// Half-life of the throttle score.
const THROTTLE_HALF_LIFE: Duration = Duration::from_secs(10);

/// Observed speed of one target.
#[derive(Debug, Clone, Default)]
pub struct LatencyTrack {
    ttft_ewma_s: Option<f64>,
    tps_ewma: Option<f64>,
    recent_ttft: VecDeque<Duration>,
    /// The input of each of `recent_ttft`'s attempts.
    recent_inputs: VecDeque<u32>,
    recent_gaps: VecDeque<Duration>,
    throttle_score: f64,
    throttle_at: Option<Instant>,
}

impl LatencyTrack {
    /// Records a first token after `ttft`.
    pub fn record_ttft(&mut self, ttft: Duration) {
        let s = ttft.as_secs_f64();
        self.ttft_ewma_s = Some(self.ttft_ewma_s.map_or(s, |e| e + ALPHA * (s - e)));
        if self.recent_ttft.len() == RECENT {
            self.recent_ttft.pop_front();
        }
        self.recent_ttft.push_back(ttft);
    }

    /// Records a stream's longest gap between events.
    pub fn record_longest_gap(&mut self, gap: Duration) {
        if self.recent_gaps.len() == RECENT {
            self.recent_gaps.pop_front();
        }
        self.recent_gaps.push_back(gap);
    }

    /// Records what a successful attempt showed.
    pub fn record(&mut self, speed: &AttemptSpeed) {
        if let Some(ttft) = speed.ttft {
            self.record_ttft(ttft);
            if self.recent_inputs.len() == RECENT {
                self.recent_inputs.pop_front();
            }
            self.recent_inputs.push_back(speed.input_tokens);
        }
        if let Some(tps) = speed.tokens_per_second {
            self.record_tokens_per_second(tps);
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

    /// The moving average of TTFT.
    pub fn ttft(&self) -> Option<Duration> {
        self.ttft_ewma_s.map(Duration::from_secs_f64)
    }

    /// The moving average of output tokens per second.
    pub fn tokens_per_second(&self) -> Option<f64> {
        self.tps_ewma
    }

    /// A quantile of recent TTFTs (`q` in 0..=1); `None` before any.
    pub fn ttft_quantile(&self, q: f64) -> Option<Duration> {
        quantile(&self.recent_ttft, q)
    }

    /// A quantile of recent streams' longest gaps, and how many there are; `None` before any.
    pub fn gap_quantile(&self, q: f64) -> Option<(Duration, usize)> {
        quantile(&self.recent_gaps, q).map(|d| (d, self.recent_gaps.len()))
    }

    /// The largest input among the attempts whose TTFTs are kept (0 when not recorded).
    pub fn largest_recent_input(&self) -> u32 {
        self.recent_inputs.iter().copied().max().unwrap_or(0)
    }

    /// How many recent TTFTs are kept (at most 64).
    pub fn ttft_samples(&self) -> usize {
        self.recent_ttft.len()
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

fn quantile(samples: &VecDeque<Duration>, q: f64) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut v: Vec<Duration> = samples.iter().copied().collect();
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    Some(v[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewma_moves_toward_new_samples() {
        let mut t = LatencyTrack::default();
        t.record_ttft(Duration::from_millis(100));
        t.record_ttft(Duration::from_millis(200));
        let e = t.ttft().unwrap().as_secs_f64();
        assert!((e - 0.12).abs() < 1e-9, "{e}");
        assert_eq!(t.ttft_quantile(1.0), Some(Duration::from_millis(200)));
        assert_eq!(t.ttft_quantile(0.0), Some(Duration::from_millis(100)));
    }

    #[test]
    fn throttle_score_decays() {
        let mut t = LatencyTrack::default();
        let now = Instant::now();
        t.record_throttle(now);
        t.record_throttle(now);
        assert!((t.throttle_score(now) - 2.0).abs() < 1e-9);
        assert!((t.throttle_score(now + THROTTLE_HALF_LIFE) - 1.0).abs() < 1e-9);
    }
}
