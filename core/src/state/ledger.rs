//! The reserved-capacity ledger: input and output tokens admitted against a reservation over a
//! sliding window, estimated before a call and corrected by its actual usage.

use crate::config::ReservationConfig;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A ticket for one admitted call, to correct or release later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

#[derive(Debug, Clone, Copy)]
struct Entry {
    ticket: u64,
    at: Instant,
    input: u64,
    output: u64,
}

/// Tokens admitted against one reservation within the window.
#[derive(Debug)]
pub struct Ledger {
    config: ReservationConfig,
    window: Duration,
    entries: VecDeque<Entry>,
    input: u64,
    output: u64,
    next: u64,
}

impl Ledger {
    /// A ledger for `config` over `window`: a minute, or what stands for one against a
    /// time-scaled emulator (the capacity is per such window).
    pub fn new(config: ReservationConfig, window: Duration) -> Self {
        Self {
            config,
            window,
            entries: VecDeque::new(),
            input: 0,
            output: 0,
            next: 0,
        }
    }

    /// Tokens the window admits: (input, output).
    pub fn capacity(&self) -> (u64, u64) {
        (
            self.config.input_tokens_per_minute,
            self.config.output_tokens_per_minute,
        )
    }

    fn expire(&mut self, now: Instant) {
        while let Some(e) = self.entries.front() {
            if now.saturating_duration_since(e.at) < self.window {
                break;
            }
            self.input -= e.input;
            self.output -= e.output;
            self.entries.pop_front();
        }
    }

    /// Whether a call of this size fits now, without admitting it.
    pub fn has_room(&mut self, now: Instant, input: u64, output: u64) -> bool {
        self.expire(now);
        let (ci, co) = self.capacity();
        self.input + input <= ci && self.output + output <= co
    }

    /// Admits a call of this estimated size if it fits.
    pub fn admit(&mut self, now: Instant, input: u64, output: u64) -> Option<Ticket> {
        self.has_room(now, input, output)
            .then(|| self.record(now, input, output))
    }

    /// Books a call the service served from the reservation although the ledger had no room
    /// for its estimate (another client shares the reservation less than thought).
    pub fn record(&mut self, now: Instant, input: u64, output: u64) -> Ticket {
        self.expire(now);
        self.next += 1;
        self.entries.push_back(Entry {
            ticket: self.next,
            at: now,
            input,
            output,
        });
        self.input += input;
        self.output += output;
        Ticket(self.next)
    }

    /// Replaces a call's estimate with its actual usage (if still in the window).
    pub fn correct(&mut self, ticket: Ticket, input: u64, output: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.ticket == ticket.0) {
            self.input = self.input - e.input + input;
            self.output = self.output - e.output + output;
            e.input = input;
            e.output = output;
        }
    }

    /// Forgets a call that the reservation did not serve (it was throttled or cancelled).
    pub fn release(&mut self, ticket: Ticket) {
        self.correct(ticket, 0, 0);
    }

    /// Tokens admitted in the window now: (input, output).
    pub fn used(&mut self, now: Instant) -> (u64, u64) {
        self.expire(now);
        (self.input, self.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger::new(
            ReservationConfig {
                input_tokens_per_minute: 1000,
                output_tokens_per_minute: 100,
            },
            Duration::from_secs(60),
        )
    }

    #[test]
    fn admits_until_full_then_overflows() {
        let mut l = ledger();
        let now = crate::time::now();
        assert!(l.admit(now, 600, 50).is_some());
        assert!(l.admit(now, 600, 10).is_none(), "input would exceed");
        assert!(l.admit(now, 100, 60).is_none(), "output would exceed");
        assert!(l.admit(now, 400, 50).is_some());
        assert!(
            l.admit(now + Duration::from_secs(61), 1000, 100).is_some(),
            "the window slid"
        );
    }

    #[test]
    fn corrections_and_releases_adjust_the_window() {
        let mut l = ledger();
        let now = crate::time::now();
        let t = l.admit(now, 900, 90).unwrap();
        l.correct(t, 300, 20);
        assert_eq!(l.used(now), (300, 20));
        l.release(t);
        assert_eq!(l.used(now), (0, 0));
    }

    #[test]
    fn a_shorter_minute_holds_the_same_capacity() {
        let mut l = Ledger::new(
            ReservationConfig {
                input_tokens_per_minute: 6000,
                output_tokens_per_minute: 600,
            },
            Duration::from_secs(6),
        );
        let now = crate::time::now();
        assert!(l.admit(now, 6000, 600).is_some());
        assert!(l.admit(now, 1, 0).is_none());
        assert!(l.admit(now + Duration::from_secs(6), 6000, 600).is_some());
    }
}
