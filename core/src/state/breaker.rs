//! A circuit breaker per target: failures accrue, the breaker opens, and after a while a few
//! half-open probes decide whether it closes again.

use crate::config::BreakerConfig;
use crate::types::BreakerView;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probes: u32 },
}

/// One target's breaker.
#[derive(Debug, Clone, Copy)]
pub struct Breaker {
    phase: Phase,
}

impl Default for Breaker {
    fn default() -> Self {
        Self {
            phase: Phase::Closed { failures: 0 },
        }
    }
}

impl Breaker {
    /// The state at `now`: an open breaker whose time is up reads as half-open.
    pub fn view(&self, now: Instant, config: &BreakerConfig) -> BreakerView {
        match self.phase {
            Phase::Closed { .. } => BreakerView::Closed,
            Phase::Open { until } if now < until => BreakerView::Open,
            Phase::Open { .. } => BreakerView::HalfOpen {
                probe_available: config.half_open_probes > 0,
            },
            Phase::HalfOpen { probes } => BreakerView::HalfOpen {
                probe_available: probes < config.half_open_probes,
            },
        }
    }

    /// Admits a request: always when closed; as a probe when half-open with a free slot.
    /// Returns whether the request is a probe, or `None` when it must not go.
    pub fn admit(&mut self, now: Instant, config: &BreakerConfig) -> Option<bool> {
        match self.phase {
            Phase::Closed { .. } => Some(false),
            Phase::Open { until } if now < until => None,
            Phase::Open { .. } => {
                self.phase = Phase::HalfOpen { probes: 1 };
                Some(true)
            }
            Phase::HalfOpen { probes } if probes < config.half_open_probes => {
                self.phase = Phase::HalfOpen { probes: probes + 1 };
                Some(true)
            }
            Phase::HalfOpen { .. } => None,
        }
    }

    /// A request succeeded: the breaker closes.
    pub fn on_success(&mut self) {
        self.phase = Phase::Closed { failures: 0 };
    }

    /// A request failed in a way that counts against the target.
    pub fn on_failure(&mut self, now: Instant, config: &BreakerConfig) {
        self.phase = match self.phase {
            Phase::Closed { failures } if failures + 1 >= config.failure_threshold => Phase::Open {
                until: now + config.open_for,
            },
            Phase::Closed { failures } => Phase::Closed {
                failures: failures + 1,
            },
            Phase::HalfOpen { .. } | Phase::Open { .. } => Phase::Open {
                until: now + config.open_for,
            },
        };
    }

    /// The target refused in a way that will last (access denied): the breaker opens at once
    /// until `now + length`, whatever it was.
    pub fn open_for(&mut self, now: Instant, length: std::time::Duration) {
        self.phase = Phase::Open {
            until: now + length,
        };
    }

    /// A probe ended without a verdict (cancelled): its slot is freed.
    pub fn release_probe(&mut self) {
        if let Phase::HalfOpen { probes } = self.phase {
            self.phase = Phase::HalfOpen {
                probes: probes.saturating_sub(1),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_refusal_opens_at_once_for_its_own_length_then_probes() {
        let c = BreakerConfig::default();
        let mut b = Breaker::default();
        let now = crate::time::now();
        b.open_for(now, c.access_denied_for);
        assert_eq!(b.view(now + c.open_for * 2, &c), BreakerView::Open);
        assert_eq!(b.admit(now + c.open_for * 2, &c), None);
        let later = now + c.access_denied_for;
        assert_eq!(b.admit(later, &c), Some(true));
    }

    #[test]
    fn opens_after_threshold_probes_then_closes() {
        let c = BreakerConfig {
            failure_threshold: 2,
            open_for: Duration::from_secs(1),
            half_open_probes: 1,
            ..BreakerConfig::default()
        };
        let t0 = crate::time::now();
        let mut b = Breaker::default();
        b.on_failure(t0, &c);
        assert_eq!(b.view(t0, &c), BreakerView::Closed);
        b.on_failure(t0, &c);
        assert_eq!(b.view(t0, &c), BreakerView::Open);
        assert_eq!(b.admit(t0, &c), None);
        let later = t0 + Duration::from_secs(2);
        assert_eq!(
            b.view(later, &c),
            BreakerView::HalfOpen {
                probe_available: true
            }
        );
        assert_eq!(b.admit(later, &c), Some(true));
        assert_eq!(b.admit(later, &c), None, "one probe at a time");
        b.on_success();
        assert_eq!(b.view(later, &c), BreakerView::Closed);
    }

    #[test]
    fn a_failed_probe_reopens() {
        let c = BreakerConfig {
            failure_threshold: 1,
            open_for: Duration::from_secs(1),
            half_open_probes: 1,
            ..BreakerConfig::default()
        };
        let t0 = crate::time::now();
        let mut b = Breaker::default();
        b.on_failure(t0, &c);
        let later = t0 + Duration::from_secs(1);
        assert_eq!(b.admit(later, &c), Some(true));
        b.on_failure(later, &c);
        assert_eq!(b.view(later, &c), BreakerView::Open);
    }

    #[test]
    fn success_resets_the_failure_count() {
        let c = BreakerConfig {
            failure_threshold: 2,
            ..BreakerConfig::default()
        };
        let t0 = crate::time::now();
        let mut b = Breaker::default();
        b.on_failure(t0, &c);
        b.on_success();
        b.on_failure(t0, &c);
        assert_eq!(b.view(t0, &c), BreakerView::Closed);
    }
}
