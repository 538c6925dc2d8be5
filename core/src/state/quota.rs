//! On-demand quotas as the router counts them: per (region, target id), two counts admitted in
//! a sliding minute, as the service counts them (bedrock-runtime: requests, and input plus
//! `max_tokens` times the burndown rate; bedrock-mantle: input and output tokens apart; see
//! [`QuotaTerms`](crate::config::QuotaTerms)), settled on actual usage when the call ends.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::ledger::{Ledger, Ticket};
use crate::config::ReservationConfig;

/// One call's claim on a target's quota, to settle or release when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaTicket(Ticket);

/// Every target's quota ledger, made when a target is first used.
#[derive(Debug)]
pub struct QuotaBook {
    minute: Duration,
    /// Region -> target id -> ledger: looked up by `&str`, so planning allocates nothing.
    ledgers: Mutex<HashMap<String, HashMap<String, Ledger>>>,
}

impl QuotaBook {
    /// Ledgers over `minute` (a minute; shorter against a time-scaled emulator).
    pub fn new(minute: Duration) -> Self {
        Self {
            minute,
            ledgers: Mutex::default(),
        }
    }

    fn with<R>(
        &self,
        region: &str,
        target: &str,
        limits: (u64, u64),
        f: impl FnOnce(&mut Ledger) -> R,
    ) -> R {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(|p| p.into_inner());
        let ledger = ledgers
            .entry(region.to_string())
            .or_default()
            .entry(target.to_string())
            .or_insert_with(|| {
                Ledger::new(
                    ReservationConfig {
                        input_tokens_per_minute: limits.0,
                        output_tokens_per_minute: limits.1,
                    },
                    self.minute,
                )
            });
        f(ledger)
    }

    /// Whether one more call booking `ask` fits the target's two per-minute `limits` now.
    pub fn has_room(
        &self,
        now: Instant,
        region: &str,
        target: &str,
        limits: (u64, u64),
        ask: (u64, u64),
    ) -> bool {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(|p| p.into_inner());
        match ledgers.get_mut(region).and_then(|t| t.get_mut(target)) {
            Some(l) => l.has_room(now, ask.0, ask.1),
            // Nothing admitted there yet: room for anything within the limits.
            None => ask.0 <= limits.0 && ask.1 <= limits.1,
        }
    }

    /// Admits a call booking `ask` if it fits; with `force`, admits it anyway (the last
    /// candidate is sent whatever the ledger thinks, and counts).
    pub fn admit(
        &self,
        now: Instant,
        region: &str,
        target: &str,
        limits: (u64, u64),
        ask: (u64, u64),
        force: bool,
    ) -> Option<QuotaTicket> {
        self.with(region, target, limits, |l| {
            match l.admit(now, ask.0, ask.1) {
                Some(t) => Some(QuotaTicket(t)),
                None if force => Some(QuotaTicket(l.record(now, ask.0, ask.1))),
                None => None,
            }
        })
    }

    /// Replaces a call's admission counts with what it used (nothing: it was refused).
    pub fn settle(&self, region: &str, target: &str, ticket: QuotaTicket, used: (u64, u64)) {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = ledgers.get_mut(region).and_then(|t| t.get_mut(target)) {
            l.correct(ticket.0, used.0, used.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admissions_fill_a_targets_quota_and_settling_frees_it() {
        let book = QuotaBook::new(Duration::from_secs(60));
        let now = crate::time::now();
        let limits = (u64::MAX, 10_000);
        let t = book
            .admit(now, "us-east-1", "m", limits, (1, 6_000), false)
            .unwrap();
        assert!(!book.has_room(now, "us-east-1", "m", limits, (1, 6_000)));
        assert!(
            book.has_room(now, "us-west-2", "m", limits, (1, 6_000)),
            "per region"
        );
        assert!(
            book.admit(now, "us-east-1", "m", limits, (1, 6_000), false)
                .is_none()
        );
        book.settle("us-east-1", "m", t, (1, 1_500));
        assert!(book.has_room(now, "us-east-1", "m", limits, (1, 6_000)));
        assert!(
            book.admit(now, "us-east-1", "m", limits, (1, 9_000), true)
                .is_some(),
            "forced"
        );
    }
}
