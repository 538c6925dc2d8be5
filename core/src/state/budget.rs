//! The retry budget: retries, failovers and hedges together may add at most a configured share
//! of recent traffic (never less than a small floor), so a retry storm cannot happen.

use crate::config::BudgetConfig;
use std::time::Instant;

/// Counts calls and extra attempts in a sliding window of one-tenth-window buckets.
#[derive(Debug)]
pub struct RetryBudget {
    config: BudgetConfig,
    start: Instant,
    /// (bucket number, calls, extras), one slot per bucket of the window.
    buckets: [(u64, u64, u64); BUCKETS],
}

const BUCKETS: usize = 10;

impl RetryBudget {
    /// An empty budget (no calls or extra attempts counted yet) with these settings.
    pub fn new(config: BudgetConfig) -> Self {
        Self {
            config,
            start: crate::time::now(),
            buckets: [(u64::MAX, 0, 0); BUCKETS],
        }
    }

    fn bucket_of(&self, now: Instant) -> u64 {
        let width = (self.config.window.as_nanos() / BUCKETS as u128).max(1);
        (now.saturating_duration_since(self.start).as_nanos() / width) as u64
    }

    /// The slot for `now`, emptied if it held an older bucket.
    fn slot(&mut self, now: Instant) -> &mut (u64, u64, u64) {
        let b = self.bucket_of(now);
        let slot = &mut self.buckets[(b % BUCKETS as u64) as usize];
        if slot.0 != b {
            *slot = (b, 0, 0);
        }
        slot
    }

    /// Calls and extra attempts within the window ending now.
    fn totals(&self, now: Instant) -> (u64, u64) {
        let current = self.bucket_of(now);
        self.buckets
            .iter()
            .filter(|(b, _, _)| *b != u64::MAX && current - b < BUCKETS as u64)
            .fold((0, 0), |(c, e), (_, calls, extras)| (c + calls, e + extras))
    }

    /// A call started.
    pub fn record_call(&mut self, now: Instant) {
        self.slot(now).1 += 1;
    }

    /// Takes one extra attempt from the budget if it has one.
    pub fn try_spend(&mut self, now: Instant) -> bool {
        let (calls, extras) = self.totals(now);
        // The floor is a minimum, not an addition (as Envoy's retry budgets): at steady
        // traffic extra load stays within `ratio`.
        let allowed = (self.config.ratio * calls as f64)
            .max(self.config.min_per_second * self.config.window.as_secs_f64());
        if (extras as f64) < allowed {
            self.slot(now).2 += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    proptest! {
        #[test]
        fn extra_attempts_never_exceed_the_budget(calls in 0usize..2000, wants in 0usize..5000, ratio in 0.0f64..1.0, floor in 0.0f64..5.0) {
            let config = BudgetConfig { ratio, min_per_second: floor, window: Duration::from_secs(10) };
            let mut b = RetryBudget::new(config);
            let now = crate::time::now();
            for _ in 0..calls {
                b.record_call(now);
            }
            let granted = (0..wants).filter(|_| b.try_spend(now)).count();
            let bound = (ratio * calls as f64).max(floor * 10.0).ceil() as usize;
            prop_assert!(granted <= bound, "{granted} > {bound}");
            prop_assert!(granted == wants.min(bound), "the budget grants what it has: {granted} of {wants}, bound {bound}");
        }
    }

    #[test]
    fn the_window_slides() {
        let mut b = RetryBudget::new(BudgetConfig {
            ratio: 0.0,
            min_per_second: 0.1,
            window: Duration::from_secs(10),
        });
        let now = crate::time::now();
        assert!(b.try_spend(now));
        assert!(!b.try_spend(now));
        assert!(b.try_spend(now + Duration::from_secs(11)));
    }
}
